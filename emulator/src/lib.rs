//! kinesis-esm
