//! The connection to an endpoint given on the command line.

/// An endpoint given on the command line: placeholder credentials unless the environment has
/// real ones (local stand-ins accept anything; a real endpoint needs real credentials).
pub(super) fn connection_to(endpoint: &str) -> esm_engine::aws::AwsConnection {
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_some() {
        esm_engine::aws::AwsConnection::from_environment().with_endpoint_url(endpoint)
    } else {
        esm_engine::aws::AwsConnection::local(endpoint)
    }
}
