//! The shipping function's Lambda entry point (the `bootstrap` binary).
//!
//! Build it for Lambda with `cargo lambda build --release -p shipping`; run it locally under the
//! emulator with `cargo run -p kinesis-esm -- run --template template.yaml`.

use lambda_kinesis_idempotency::DynamoDbStore;

#[tokio::main]
async fn main() -> Result<(), lambda_kinesis::Error> {
    lambda_kinesis::lambda_runtime::tracing::init_default_subscriber();
    let table = std::env::var(shipping::IDEMPOTENCY_TABLE_VARIABLE).ok();
    match shipping::idempotency_table(table.as_deref()) {
        Some(table) => {
            let store = DynamoDbStore::from_env(table).await;
            shipping::idempotent_function(store).run().await
        }
        None => {
            lambda_kinesis::tracing::warn!(
                "{} is not set: a shipment delivered twice is booked twice",
                shipping::IDEMPOTENCY_TABLE_VARIABLE
            );
            shipping::function().run().await
        }
    }
}
