//! The `kinesis-esm` command line.

fn main() {}
