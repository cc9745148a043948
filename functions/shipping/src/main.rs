//! The shipping function's Lambda entry point (the `bootstrap` binary): [`shipping::function`]
//! with its options read from the environment, each unset one off (`IDEMPOTENCY_TABLE`;
//! `RETRY_STREAM`, `MAX_RETRIES`, `DEAD_LETTER_STREAM`).
//!
//! Build it for Lambda with `cargo lambda build --release -p shipping`; run it locally under the
//! emulator with `cargo run -p kinesis-esm -- run --template template.yaml`.

use lambda_kinesis::retry::RetryPlan;
use lambda_kinesis_idempotency::Idempotency;

#[tokio::main]
async fn main() -> Result<(), lambda_kinesis::Error> {
    lambda_kinesis::lambda_runtime::tracing::init_default_subscriber();
    shipping::function()
        .optional_guard(
            Idempotency::from_env()
                .await?
                .map(shipping::once_per_shipment),
        )
        .retry_plan(RetryPlan::from_env()?)
        .run()
        .await
}
