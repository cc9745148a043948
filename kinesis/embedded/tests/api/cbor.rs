//! Kinesis over CBOR 1.1, as the AWS SDKs for Java, the KPL and the KCL speak it by default:
//! requests encoded by the Python suite `emulator/tests/clients/test_cbor.py` with cbor2
//! (pinned, installed into `.local/venv` by `emulator/tests/clients/python-tools`), against
//! the embedded Kinesis served over the Kinesis API.
//!
//! Run with `cargo test -p embedded-kinesis --test api cbor::`.

use embedded_kinesis::EmbeddedKinesis;

use crate::clients::check_python_suite;
use crate::support::serve_loopback;

#[tokio::test]
async fn cbor_requests_get_cbor_answers() {
    let server = serve_loopback(EmbeddedKinesis::new()).await;
    check_python_suite(&server.endpoint_url(), "test_cbor.py", &[], 5).await;
    server.stop().await;
}
