//! Invoking the function: how a batch's event reaches it and its answer comes back.
//!
//! Every invoker takes the event as Lambda's JSON bytes and gives the function's answer back as
//! bytes, so the event and the response always take the path they take on Lambda.

mod error_type;
mod in_process;
pub mod invoke_api;
mod invoker;
pub mod runtime_api;

pub use error_type::{ErrorType, LambdaError};
pub use in_process::{InProcess, InProcessWindow};
pub use invoker::{
    EnvironmentInFlight, Invocation, InvokeError, InvokeOutcome, Invoker, NeverInitialised,
    SharedEnvironments,
};
