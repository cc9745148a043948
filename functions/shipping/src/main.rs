//! The shipping function's Lambda entry point (the `bootstrap` binary).
//!
//! Build it for Lambda with `cargo lambda build --release -p shipping`; run it locally under the
//! emulator with `cargo run -p kinesis-esm -- run --template template.yaml`.

#[tokio::main]
async fn main() -> Result<(), lambda_kinesis::Error> {
    lambda_kinesis::lambda_runtime::tracing::init_default_subscriber();
    shipping::function().run().await
}
