//! Kinesis over CBOR 1.1, as the AWS SDKs for Java, the KPL and the KCL speak it by default:
//! requests encoded by the Python suite `emulator/tests/clients/test_cbor.py` with cbor2
//! (pinned, installed into `.local/venv` by `emulator/tests/clients/python-tools`), against
//! the embedded Kinesis served over the Kinesis API.
//!
//! Run with `cargo test -p embedded-kinesis --test api cbor::`.

use std::path::Path;

use embedded_kinesis::EmbeddedKinesis;
use embedded_kinesis::http;

use crate::clients::{command, finish, venv};

#[tokio::test]
async fn cbor_requests_get_cbor_answers() {
    venv();
    let server = http::serve(EmbeddedKinesis::new(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/test_cbor.py");
    let output = finish(
        "the CBOR suite",
        command("python", &server.endpoint_url()).arg(&script),
    )
    .await;
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the CBOR suite failed:\n{report}");
    // unittest reports on stderr; a suite that found no tests must not pass for one that ran.
    assert!(
        report.contains("Ran 5 tests") && report.contains("\nOK"),
        "{report}"
    );
    server.stop().await;
}
