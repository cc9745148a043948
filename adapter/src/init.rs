//! Building the function's state at cold start, and telling Lambda when that fails.
//!
//! Lambda expects a runtime that cannot start to say so through the Runtime API's init error
//! (`POST /2018-06-01/runtime/init/error`) before it exits: the failure is then reported as an
//! init error with the runtime's own type and message, not as a process that died. `lambda_runtime`
//! 1.x posts it only for its SnapStart hooks, so the adapter posts it itself, the same way.

use std::fmt;
use std::future::Future;

use lambda_runtime::{Diagnostic, Error};

/// The Runtime API's environment variable: the host and port of the Runtime API.
const RUNTIME_API: &str = "AWS_LAMBDA_RUNTIME_API";

/// Awaits the function's state, built once per execution environment; if it fails, reports the
/// failure to Lambda as an init error and returns it, so that `main` can return it and exit.
///
/// The error converts into a [`Diagnostic`] (as a handler error does in `lambda_runtime`):
/// a `String`, a boxed error, or your own type with a `From` impl that names its `error_type`.
/// Outside Lambda (no `AWS_LAMBDA_RUNTIME_API`), nothing is posted and the error is returned.
///
/// ```no_run
/// use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
///
/// struct Config { table: String }
///
/// async fn load() -> Result<Config, String> {
///     let table = std::env::var("TABLE_NAME")
///         .map_err(|_| "the environment variable TABLE_NAME is not set".to_owned())?;
///     Ok(Config { table })
/// }
///
/// async fn handle(config: &Config, line: &String) -> HandlerOutcome {
///     lambda_kinesis::tracing::info!(table = %config.table, %line, "stored");
///     HandlerOutcome::ack()
/// }
///
/// #[tokio::main]
/// async fn main() -> Result<(), lambda_kinesis::Error> {
///     let config = lambda_kinesis::init(load()).await?;
///     KinesisAdapter::with_state(config, handle).run().await
/// }
/// ```
pub async fn init<S, E>(state: impl Future<Output = Result<S, E>>) -> Result<S, Error>
where
    E: Into<Diagnostic>,
{
    init_with(std::env::var(RUNTIME_API).ok().as_deref(), state).await
}

/// [`init`] with the Runtime API's address given, rather than read from the environment.
async fn init_with<S, E>(
    runtime_api: Option<&str>,
    state: impl Future<Output = Result<S, E>>,
) -> Result<S, Error>
where
    E: Into<Diagnostic>,
{
    let mut diagnostic: Diagnostic = match state.await {
        Ok(state) => return Ok(state),
        Err(error) => error.into(),
    };
    diagnostic.error_type = error_type_name(&diagnostic.error_type);
    tracing::error!(
        error_type = %diagnostic.error_type,
        error = %diagnostic.error_message,
        "the function's initialisation failed"
    );
    if let Some(runtime_api) = runtime_api
        && let Err(error) = report(runtime_api, &diagnostic).await
    {
        tracing::error!(
            error = %error,
            "the init error could not be reported to the Runtime API"
        );
    }
    Err(Box::new(InitFailed(diagnostic)))
}

/// Posts `diagnostic` to the Runtime API at `runtime_api` (`host:port`) as the init error.
async fn report(runtime_api: &str, diagnostic: &Diagnostic) -> Result<(), Error> {
    let endpoint = format!("http://{runtime_api}").parse()?;
    let client = lambda_runtime_api_client::PooledClient::builder()
        .with_endpoint(endpoint)
        .build();
    let request = lambda_runtime_api_client::build_request()
        .method("POST")
        .uri("/2018-06-01/runtime/init/error")
        // The header lambda_runtime sends with its own init errors.
        .header("lambda-runtime-function-error-type", "Runtime.InitError")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(diagnostic)?.into())?;
    let response = client.call(request).await?;
    if !response.status().is_success() {
        return Err(format!(
            "the Runtime API answered {} to the init error",
            response.status()
        )
        .into());
    }
    Ok(())
}

/// The error type an init error reports. `lambda_runtime` names a converted error by its Rust type
/// path (`&alloc::string::String`, `my_crate::config::ConfigError`): an error type then reads as
/// its own name (`ConfigError`), and a plain message, which has none, as `Runtime.InitError`, the
/// type the init error's header gives. A name that is no type path stays as it is.
fn error_type_name(reported: &str) -> String {
    let path = reported.trim_start_matches('&');
    if !reported.starts_with('&') && !path.contains("::") {
        return reported.to_owned();
    }
    let without_generics = path.split('<').next().unwrap_or(path);
    let name = without_generics
        .rsplit("::")
        .next()
        .unwrap_or(without_generics);
    match name {
        "String" | "str" | "Box" | "Error" | "" => "Runtime.InitError".to_owned(),
        name => name.to_owned(),
    }
}

/// The error `init` returns: what failed, in words (`main` prints it with `Debug`).
struct InitFailed(Diagnostic);

impl fmt::Display for InitFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the function's initialisation failed ({}): {}",
            self.0.error_type, self.0.error_message
        )
    }
}

impl fmt::Debug for InitFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for InitFailed {}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpListener;

    /// A Runtime API that takes one request, answers `status`, and gives the request's text.
    async fn runtime_api(status: &'static str) -> (String, tokio::task::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let served = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut request = Vec::new();
            let mut buffer = [0_u8; 4096];
            // Read the head, then as many body bytes as `content-length` says.
            loop {
                let read = stream.read(&mut buffer).await.unwrap();
                assert!(read > 0, "the client closed before the request ended");
                request.extend_from_slice(&buffer[..read]);
                let text = String::from_utf8_lossy(&request).into_owned();
                if let Some(head_end) = text.find("\r\n\r\n") {
                    let length = text[..head_end]
                        .lines()
                        .find_map(|line| {
                            let (name, value) = line.split_once(':')?;
                            name.eq_ignore_ascii_case("content-length")
                                .then(|| value.trim().parse::<usize>().unwrap())
                        })
                        .unwrap_or(0);
                    if request.len() >= head_end + 4 + length {
                        break;
                    }
                }
            }
            let answer = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n");
            stream.write_all(answer.as_bytes()).await.unwrap();
            String::from_utf8(request).unwrap()
        });
        (address, served)
    }

    #[test]
    fn rust_type_paths_become_the_errors_own_name() {
        for (reported, named) in [
            ("Shipping.MissingCarrier", "Shipping.MissingCarrier"),
            ("&alloc::string::String", "Runtime.InitError"),
            ("alloc::string::String", "Runtime.InitError"),
            ("&str", "Runtime.InitError"),
            (
                "alloc::boxed::Box<dyn core::error::Error + Send + Sync>",
                "Runtime.InitError",
            ),
            ("shipping::config::ConfigError", "ConfigError"),
            ("lambda_kinesis::env::EnvError", "EnvError"),
        ] {
            assert_eq!(error_type_name(reported), named, "{reported}");
        }
    }

    #[tokio::test]
    async fn a_plain_message_is_posted_as_a_runtime_init_error() {
        let (address, served) = runtime_api("202 Accepted").await;
        let failing = async { Err::<(), _>("CARRIER_URL is not set".to_owned()) };

        let error = init_with(Some(&address), failing).await.unwrap_err();

        assert_eq!(
            format!("{error:?}"),
            "the function's initialisation failed (Runtime.InitError): CARRIER_URL is not set"
        );
        let request = served.await.unwrap();
        assert!(
            request.contains(r#""errorType":"Runtime.InitError""#),
            "{request}"
        );
    }

    #[tokio::test]
    async fn a_failed_initialisation_is_posted_as_the_init_error_and_returned() {
        let (address, served) = runtime_api("202 Accepted").await;
        let failing = async {
            Err::<(), _>(Diagnostic {
                error_type: "Shipping.MissingCarrier".to_owned(),
                error_message: "CARRIER_URL is not set".to_owned(),
            })
        };

        let error = init_with(Some(&address), failing).await.unwrap_err();

        assert_eq!(
            format!("{error:?}"),
            "the function's initialisation failed (Shipping.MissingCarrier): CARRIER_URL is not set"
        );
        let request = served.await.unwrap();
        assert!(
            request.starts_with("POST /2018-06-01/runtime/init/error HTTP/1.1\r\n"),
            "{request}"
        );
        assert!(
            request
                .to_ascii_lowercase()
                .contains("lambda-runtime-function-error-type: runtime.initerror\r\n"),
            "{request}"
        );
        let body = &request[request.find("\r\n\r\n").unwrap() + 4..];
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "errorType": "Shipping.MissingCarrier",
                "errorMessage": "CARRIER_URL is not set"
            })
        );
    }

    #[tokio::test]
    async fn a_state_that_builds_is_returned() {
        let state = init_with(Some("127.0.0.1:9"), async { Ok::<_, String>(7) }).await;
        assert_eq!(state.unwrap(), 7);
    }

    #[tokio::test]
    async fn outside_lambda_the_error_is_returned_without_a_report() {
        let error = init_with(None, async { Err::<(), _>("no config".to_owned()) })
            .await
            .unwrap_err();
        assert!(error.to_string().ends_with(": no config"), "{error}");
    }
}
