//! The shipping function under `cargo lambda watch`, through the Lambda Invoke API: the invoker
//! alone, and the emulator driving it with the checkpoints the Runtime API gives.
//!
//! `scripts/cargo-lambda-watch` installs cargo-lambda into `.local/venv` when it is missing; set
//! `RUST_LOG=info` to see its output.

use std::time::Duration;

use end_to_end::cargo_lambda::{FIRST_INVOCATION_TIMEOUT, Watch};
use kinesis_esm::invoke::invoke_api::{InvokeApi, InvokeApiOptions};
use kinesis_esm::invoke::{Invocation, InvokeOutcome, Invoker as _};
use lambda_kinesis::testing::TestEvent;
use serde_json::json;
use shipping::Shipment;

fn options() -> InvokeApiOptions {
    InvokeApiOptions::default()
}

#[tokio::test]
async fn the_shipping_function_under_cargo_lambda_watch() {
    let watch = Watch::start().await;
    let api = InvokeApi::new(&watch.endpoint, "bootstrap", options()).unwrap();
    let held = Shipment {
        id: 2,
        address: "2 Quay Street".to_owned(),
        carrier: "owl-post".to_owned(),
    };
    let event = TestEvent::new()
        .json(&Shipment {
            id: 1,
            address: "1 Dock Road".to_owned(),
            carrier: "dhl".to_owned(),
        })
        .json(&held)
        .json(&Shipment {
            id: 3,
            address: "3 Harbour Lane".to_owned(),
            carrier: "ups".to_owned(),
        });

    // The first invocation waits for the function to be built.
    let outcome = api
        .invoke(Invocation::new(event.to_json(), FIRST_INVOCATION_TIMEOUT))
        .await;

    let Ok(InvokeOutcome::Response(body)) = &outcome else {
        panic!(
            "expected the function's response, got {outcome:?}:\n{}",
            watch.log()
        );
    };
    let response: serde_json::Value = serde_json::from_slice(body).unwrap();
    assert_eq!(
        response,
        json!({"batchItemFailures": [{"itemIdentifier": event.sequence_number(1)}]}),
        "the held shipment is the first unsettled record"
    );

    let outcome = api
        .invoke(Invocation::new(
            &br#"{"Records":"not a list"}"#[..],
            Duration::from_secs(30),
        ))
        .await;

    match &outcome {
        Ok(InvokeOutcome::FunctionError {
            error_type,
            message,
        }) => {
            assert!(
                error_type.as_str().contains("DeserializeError"),
                "{error_type}"
            );
            assert!(message.contains("failed to deserialize"), "{message}");
        }
        other => panic!("expected a function error, got {other:?}:\n{}", watch.log()),
    }

    watch.stop().await;
}
