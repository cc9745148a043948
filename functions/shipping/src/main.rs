//! The shipping function's Lambda entry point (the `bootstrap` binary).
//!
//! Build it for Lambda with `cargo lambda build --release -p shipping`; run it locally under the
//! emulator with `cargo run -p kinesis-esm -- run --template template.yaml`.

use lambda_kinesis_idempotency::DynamoDbStore;

#[tokio::main]
async fn main() -> Result<(), lambda_kinesis::Error> {
    lambda_kinesis::lambda_runtime::tracing::init_default_subscriber();
    let variable = |name| std::env::var(name).ok();
    let retry_streams = shipping::RetryStreams::from_values(
        variable(shipping::RETRY_STREAM_VARIABLE).as_deref(),
        variable(shipping::MAX_RETRIES_VARIABLE).as_deref(),
        variable(shipping::DEAD_LETTER_STREAM_VARIABLE).as_deref(),
    )?;
    let table = variable(shipping::IDEMPOTENCY_TABLE_VARIABLE);
    match (shipping::idempotency_table(table.as_deref()), retry_streams) {
        (Some(table), retry_streams) => {
            let store = DynamoDbStore::from_env(table).await;
            let function = shipping::idempotent_function(store);
            match retry_streams {
                Some(streams) => streams.apply(function).run().await,
                None => function.run().await,
            }
        }
        (None, Some(streams)) => {
            lambda_kinesis::tracing::warn!(
                "{} is not set: a shipment delivered twice is booked twice",
                shipping::IDEMPOTENCY_TABLE_VARIABLE
            );
            streams.apply(shipping::function()).run().await
        }
        (None, None) => {
            lambda_kinesis::tracing::warn!(
                "{} is not set: a shipment delivered twice is booked twice",
                shipping::IDEMPOTENCY_TABLE_VARIABLE
            );
            shipping::function().run().await
        }
    }
}
