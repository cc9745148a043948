//! Where the invocation record of a discarded batch goes (`DestinationConfig.OnFailure`,
//! `docs/event-source-mapping.md` §5): an SQS queue, an SNS topic or an S3 bucket at a real API
//! ([`sdk`]), or, with no endpoint to send to, a local folder ([`folder`]) holding the same
//! shapes. What each destination receives is built here, as pure functions ([`shape`]).

mod delivery;
pub mod folder;
pub mod sdk;
pub mod shape;
mod target;

pub use delivery::{DeliveryError, Destination, FailedBatch};
pub use target::{DestinationKind, Target};
