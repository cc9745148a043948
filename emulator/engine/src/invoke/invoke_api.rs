//! The Lambda Invoke API: invoking a function that something else runs.
//!
//! The emulator normally runs the function's binary itself ([`super::runtime_api`]). [`InvokeApi`]
//! instead sends each batch to a server that speaks Lambda's Invoke API
//! (`POST /2015-03-31/functions/{name}/invocations`, `X-Amz-Invocation-Type: RequestResponse`):
//!
//! - **`cargo lambda watch`** (`http://127.0.0.1:9000` by default; start it with `-A 127.0.0.1`):
//!   [`InvokeApi::new`]. The function name is the binary's (`bootstrap` for `functions/shipping`).
//!   It builds the function when the first invocation arrives, which can take longer than the
//!   function's timeout: send a first invocation before the mapping starts. It gives the
//!   function the constant deadline 600000 (milliseconds since the epoch, long past), which
//!   `lambda_kinesis` reads as no deadline; the emulator's own timer still applies.
//! - **`sam local start-lambda`** (`http://127.0.0.1:3001`): [`InvokeApi::new`], with the
//!   template's logical id as the function name. It needs Docker.
//! - **Real Lambda**: [`InvokeApi::aws`] signs each request (Signature Version 4) with the
//!   credentials and region of an [`SdkConfig`](aws_types::SdkConfig), such as the one
//!   `aws_config` loads from the environment ([`InvokeApi::aws_from_environment`]).
//!
//! The event's bytes are sent as they are and the function's answer comes back as bytes.
//!
//! How an invocation ends:
//!
//! | the target answers | outcome |
//! |---|---|
//! | 200 | [`InvokeOutcome::Response`](crate::invoke::InvokeOutcome::Response) with the body, byte for byte |
//! | 200 with `X-Amz-Function-Error` (`Handled` / `Unhandled`; Lambda, SAM) | `FunctionError` with the body's `errorType` and `errorMessage` |
//! | 500 whose body is the runtime's error (`errorType` / `errorMessage`; `cargo lambda watch`) | `FunctionError`, as above |
//! | a function error of type `Sandbox.Timedout` (Lambda stopped the function at its timeout) | [`InvokeOutcome::Timeout`](crate::invoke::InvokeOutcome::Timeout) |
//! | a 200 body over 6 MB | `FunctionError` `Function.ResponseSizeTooLarge` |
//! | nothing by the invocation's deadline plus [`InvokeApiOptions::grace`] | [`InvokeOutcome::Timeout`](crate::invoke::InvokeOutcome::Timeout) |
//! | 429 (`TooManyRequestsException`) | [`InvokeError::Throttled`](crate::invoke::InvokeError::Throttled) |
//! | no connection (refused, DNS, TLS, none within [`InvokeApiOptions::connect_timeout`]) | [`InvokeError::Unreachable`](crate::invoke::InvokeError::Unreachable) |
//! | 404 that says the function does not exist (`ResourceNotFoundException`, SAM's `ResourceNotFound`, `cargo lambda watch`'s `Missing function`) | [`InvokeError::NoSuchFunction`](crate::invoke::InvokeError::NoSuchFunction), also told by [`InvokeApi::missing_function`] |
//! | any other 4xx, a 5xx that is not a function error (`ServiceException`, `cargo lambda watch`'s own failures), a connection closed before the answer | [`InvokeError::Unreachable`](crate::invoke::InvokeError::Unreachable) |
//!
//! The invoke errors are Lambda's "errors before the function runs": the event source mapping
//! retries them without charging a retry attempt. A missing function is a configuration error
//! that no retry mends: `kinesis-esm run` watches [`InvokeApi::missing_function`] and stops.
//!
//! `cargo lambda watch` knows a function by its binary's name. Given a
//! [fallback name](InvokeApi::fallback_function_name) (the binary), an invoker whose function
//! `cargo lambda watch` does not know tries the fallback once, says so in a warning, and keeps
//! it when it is known.

mod answer;
mod client;
mod connector;
mod error_chain;
mod setup;
mod signing;

pub use client::InvokeApi;
pub use setup::{InvokeApiOptions, SetupError};
