//! The `kinesis-esm` command line: see `kinesis-esm --help`.
//!
//! Run the shipping example with
//! `cargo run -p kinesis-esm -- run --template template.yaml --put functions/shipping/events --until-idle`.

use std::process::ExitCode;

use clap::Parser as _;

#[tokio::main]
async fn main() -> ExitCode {
    kinesis_esm::cli::Cli::parse().run().await.into()
}
