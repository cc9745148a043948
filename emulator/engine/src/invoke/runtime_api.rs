//! The Lambda Runtime API, served on loopback to the function's own binary.
//!
//! On Lambda a Rust function is its `bootstrap` binary: `lambda_runtime` inside it polls the
//! Runtime API for an event, calls the handler and posts the answer back. [`RuntimeApi`] does
//! Lambda's part locally, so the very binary that ships is what runs:
//!
//! - Each **execution environment** is one process of the binary and its own Runtime API
//!   endpoint on `127.0.0.1:<free port>`, named to it by `AWS_LAMBDA_RUNTIME_API` along with the
//!   rest of Lambda's environment (see [`FunctionDefinition`]). Its standard output and error go
//!   to the emulator's log, line by line, with the function's name and the environment's number.
//! - An environment runs **one invocation at a time**. Invocations run concurrently up to
//!   [`RuntimeApi::max_environments`]; an idle environment is reused, a new one is started only
//!   when none is idle. The process is started once, not per invocation.
//! - On **Lambda Managed Instances** ([`RuntimeApi::per_environment_concurrency`]) an environment
//!   runs up to that many invocations at once: its process is told the number by
//!   `AWS_LAMBDA_MAX_CONCURRENCY`, polls `next` concurrently and answers each invocation on its
//!   own request id; a new environment starts only when every running one is full. A process
//!   that ends fails every invocation in flight in it (`docs/managed-instances.md`).
//! - The function's **time** starts when its runtime takes the event: its deadline
//!   (`Lambda-Runtime-Deadline-Ms`) is then plus the time the invocation had left, and at most
//!   the function's `Timeout`. Starting the process (Lambda's init phase) is not counted, as on
//!   Lambda; it has its own limit, [`RuntimeApi::init_timeout`].
//!
//! How an invocation ends:
//!
//! | the function | outcome | its environment |
//! |---|---|---|
//! | posts a response | [`InvokeOutcome::Response`](crate::invoke::InvokeOutcome::Response) with the body, byte for byte | kept |
//! | posts a response over 6 MB | `FunctionError` `Function.ResponseSizeTooLarge` | kept |
//! | posts an error | `FunctionError` with its `errorType` and `errorMessage` | kept |
//! | posts an init error, then exits | `FunctionError` with the init error's type and message | discarded |
//! | exits or is killed before answering | `FunctionError` `Runtime.ExitError`, with the exit status and its last lines of stderr | discarded |
//! | does not answer by its deadline | [`InvokeOutcome::Timeout`](crate::invoke::InvokeOutcome::Timeout); the process is killed | discarded |
//! | cannot be started (no such binary) | `FunctionError` `Runtime.InvalidEntrypoint` | none started |
//!
//! A discarded environment is replaced by a new process at the next invocation: the emulator
//! restarts the function as Lambda does.
//!
//! At shutdown each process is killed as Lambda ends a runtime that has no extensions: the
//! runtime's pending `next` is never answered (an answer without a request id would make
//! `lambda_runtime` panic in its last moment, which would read as the function's crash).

mod abort_on_drop;
mod definition;
mod function_failure;
mod function_log;
mod init_record;
mod log_tap;
mod pool;
mod process;
mod runner;
mod server;

pub use self::definition::FunctionDefinition;
pub use self::log_tap::{TappedLine, function_lines};
pub use self::process::FUNCTION_LOG_TARGET;
pub use self::runner::RuntimeApi;
