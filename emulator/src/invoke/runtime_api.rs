//! The Lambda Runtime API, served on loopback to the function's own binary.
