//! End-to-end tests.

mod aws_faults;
mod aws_fencing;
mod aws_kill;
mod aws_reads;
mod aws_resharding;
mod aws_restart;
