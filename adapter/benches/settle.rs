//! The settlement benchmark (written in a later commit).

fn main() {}
