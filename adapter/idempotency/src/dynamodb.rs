//! The DynamoDB store: a table keyed `id` (a string), with `expiration` as its TTL attribute.
//!
//! Creating the table is the deployment's job (the template's), not the function's;
//! [`DynamoDbStore::create_table`] is there for local servers and tests. The item's attributes and
//! the condition are those of Powertools' DynamoDB persistence layer (see `docs/idempotency.md`).

use std::collections::HashMap;
use std::error::Error as StdError;
use std::time::{Duration, SystemTime};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::client::Waiters;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::create_table::CreateTableError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ReturnValuesOnConditionCheckFailure, ScalarAttributeType,
};
use aws_sdk_dynamodb::waiters::table_exists::WaitUntilTableExistsError as WaiterError;

use crate::record::{IdempotencyRecord, Status, StoredOutcome, unix_millis, unix_seconds};
use crate::store::{Store, StoreError, Take};

/// The condition of taking a key: no item, a lapsed item, or an in-progress item whose
/// invocation's deadline passed (`record::may_take` is the same rule).
const TAKE_CONDITION: &str = "attribute_not_exists(#id) OR #expiration < :now \
     OR (#status = :inprogress AND #in_progress_expiration < :now_ms)";

/// Idempotency records in a DynamoDB table.
#[derive(Debug, Clone)]
pub struct DynamoDbStore {
    client: Client,
    table: String,
}

impl DynamoDbStore {
    /// A store in `table`, through `client`.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    /// A store in `table`, with a client configured the usual AWS way (region, credentials, and
    /// `AWS_ENDPOINT_URL_DYNAMODB` for a local server).
    pub async fn from_env(table: impl Into<String>) -> Self {
        let config = aws_config::load_from_env().await;
        Self::new(Client::new(&config), table)
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Creates the table as the template's `IdempotencyTable` declares it (keyed `id`, a string;
    /// on-demand) unless it exists, and waits until it is `ACTIVE`: a new table answers
    /// `ResourceNotFoundException` to writes while it is `CREATING`. For local servers and
    /// tests; on AWS the deployment creates the table.
    pub async fn create_table(&self) -> Result<(), StoreError> {
        let created = self
            .client
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name("id")
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .expect("the attribute definition names its attribute and type"),
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name("id")
                    .key_type(KeyType::Hash)
                    .build()
                    .expect("the key schema names its attribute and type"),
            )
            .send()
            .await;
        match created {
            Ok(_) => {}
            Err(SdkError::ServiceError(service))
                if matches!(service.err(), CreateTableError::ResourceInUseException(_)) => {}
            Err(error) => return Err(self.error("CreateTable", "", error)),
        }
        self.client
            .wait_until_table_exists()
            .table_name(&self.table)
            .wait(TABLE_ACTIVE_WITHIN)
            .await
            .map_err(|error| {
                let message = match error {
                    WaiterError::OperationFailed(failed) => describe(failed.error()),
                    WaiterError::ExceededMaxWait(_) => format!(
                        "the table is still not ACTIVE after {} s",
                        TABLE_ACTIVE_WITHIN.as_secs()
                    ),
                    other => innermost(&other),
                };
                StoreError {
                    operation: format!("waiting for DynamoDB table {} to be ACTIVE", self.table),
                    id: String::new(),
                    message,
                }
            })?;
        Ok(())
    }

    fn error<E, R>(&self, request: &str, id: &str, error: SdkError<E, R>) -> StoreError
    where
        E: ProvideErrorMetadata + StdError + 'static,
        R: std::fmt::Debug + 'static,
    {
        StoreError {
            operation: format!("DynamoDB {request} on table {}", self.table),
            id: id.to_owned(),
            message: describe(&error),
        }
    }

    /// Reads the item of `id` consistently: only when a conditional failure came without the old
    /// item (a server that does not implement `ReturnValuesOnConditionCheckFailure`).
    async fn read(&self, id: &str) -> Result<Option<IdempotencyRecord>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("id", AttributeValue::S(id.to_owned()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|error| self.error("GetItem", id, error))?;
        output
            .item()
            .map(|item| from_item(item).map_err(|message| self.unreadable(id, message)))
            .transpose()
    }

    fn unreadable(&self, id: &str, message: String) -> StoreError {
        StoreError {
            operation: format!("reading the item of table {}", self.table),
            id: id.to_owned(),
            message,
        }
    }
}

impl Store for DynamoDbStore {
    async fn take(&self, record: &IdempotencyRecord, now: SystemTime) -> Result<Take, StoreError> {
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(to_item(record)))
            .condition_expression(TAKE_CONDITION)
            .expression_attribute_names("#id", "id")
            .expression_attribute_names("#expiration", "expiration")
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#in_progress_expiration", "in_progress_expiration")
            .expression_attribute_values(":now", number(unix_seconds(now)))
            .expression_attribute_values(":now_ms", number(unix_millis(now)))
            .expression_attribute_values(
                ":inprogress",
                AttributeValue::S(Status::InProgress.as_str().to_owned()),
            )
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let error = match result {
            Ok(_) => return Ok(Take::Taken),
            Err(error) => error,
        };
        if let SdkError::ServiceError(service) = &error
            && let PutItemError::ConditionalCheckFailedException(failed) = service.err()
        {
            let existing = match failed.item() {
                Some(item) => Some(from_item(item).map_err(|m| self.unreadable(&record.id, m))?),
                None => self.read(&record.id).await?,
            };
            return match existing {
                Some(existing) => Ok(Take::Held(existing)),
                // The item lapsed between the write and the read: the next delivery takes it.
                None => Err(StoreError {
                    operation: format!("DynamoDB PutItem on table {}", self.table),
                    id: record.id.clone(),
                    message: "the condition failed, yet no item holds the key".to_owned(),
                }),
            };
        }
        Err(self.error("PutItem", &record.id, error))
    }

    async fn complete(&self, record: &IdempotencyRecord) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(to_item(record)))
            .send()
            .await
            .map_err(|error| self.error("PutItem", &record.id, error))?;
        Ok(())
    }

    async fn release(&self, id: &str) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .key("id", AttributeValue::S(id.to_owned()))
            .send()
            .await
            .map_err(|error| self.error("DeleteItem", id, error))?;
        Ok(())
    }
}

/// How long a new table may stay `CREATING`: DynamoDB takes seconds, local servers less.
const TABLE_ACTIVE_WITHIN: Duration = Duration::from_secs(60);

/// A failed call in one sentence: the service's code and message, or the innermost reason the
/// call got no answer (the SDK's own `Display` says only "dispatch failure", its `Debug` is a
/// dump no user should read).
fn describe<E, R>(error: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + StdError + 'static,
    R: std::fmt::Debug + 'static,
{
    match error {
        SdkError::ServiceError(service) => {
            let err = service.err();
            match (
                err.code(),
                err.message().filter(|message| !message.is_empty()),
            ) {
                (Some(code), Some(message)) => format!("{code}: {message}"),
                (Some(code), None) => code.to_owned(),
                (None, Some(message)) => format!("an answer without an error code: {message}"),
                (None, None) => "an answer without an error code".to_owned(),
            }
        }
        SdkError::TimeoutError(_) => "no answer in time".to_owned(),
        SdkError::DispatchFailure(_) => {
            format!("DynamoDB could not be reached: {}", innermost(error))
        }
        SdkError::ResponseError(_) => {
            format!("the answer is not DynamoDB's: {}", innermost(error))
        }
        _ => innermost(error),
    }
}

/// The text of the last error in `error`'s chain: the OS's or the parser's reason.
fn innermost(error: &(dyn StdError + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}

fn number(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// The item a record is stored as.
fn to_item(record: &IdempotencyRecord) -> HashMap<String, AttributeValue> {
    let mut item = HashMap::from([
        ("id".to_owned(), AttributeValue::S(record.id.clone())),
        (
            "status".to_owned(),
            AttributeValue::S(record.status.as_str().to_owned()),
        ),
        ("expiration".to_owned(), number(record.expiration)),
        (
            "payload_hash".to_owned(),
            AttributeValue::S(record.payload_hash.clone()),
        ),
    ]);
    if let Some(lapses) = record.in_progress_expiration {
        item.insert("in_progress_expiration".to_owned(), number(lapses));
    }
    if let Some(outcome) = record.outcome {
        item.insert(
            "outcome".to_owned(),
            AttributeValue::S(outcome.as_str().to_owned()),
        );
    }
    item
}

/// Reads a stored item; the error names the attribute that is missing or malformed.
fn from_item(item: &HashMap<String, AttributeValue>) -> Result<IdempotencyRecord, String> {
    let text = |name: &str| match item.get(name) {
        Some(AttributeValue::S(text)) => Ok(Some(text.as_str())),
        None => Ok(None),
        Some(_) => Err(format!("the attribute {name} is not a string")),
    };
    let number = |name: &str| match item.get(name) {
        Some(AttributeValue::N(n)) => n
            .parse::<u64>()
            .map(Some)
            .map_err(|_| format!("the attribute {name} is not a whole number: {n}")),
        None => Ok(None),
        Some(_) => Err(format!("the attribute {name} is not a number")),
    };
    let status = text("status")?.ok_or("no attribute status")?;
    let outcome = text("outcome")?;
    Ok(IdempotencyRecord {
        id: text("id")?.ok_or("no attribute id")?.to_owned(),
        status: Status::parse(status).ok_or(format!("unknown status {status}"))?,
        expiration: number("expiration")?.ok_or("no attribute expiration")?,
        in_progress_expiration: number("in_progress_expiration")?,
        payload_hash: text("payload_hash")?.unwrap_or_default().to_owned(),
        outcome: outcome
            .map(|o| StoredOutcome::parse(o).ok_or(format!("unknown outcome {o}")))
            .transpose()?,
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use aws_sdk_dynamodb::config::http::HttpResponse;
    use aws_sdk_dynamodb::error::ErrorMetadata;

    use super::*;

    fn answered(code: Option<&str>, message: &str) -> SdkError<PutItemError, HttpResponse> {
        let mut meta = ErrorMetadata::builder().message(message);
        if let Some(code) = code {
            meta = meta.code(code);
        }
        SdkError::service_error(
            PutItemError::generic(meta.build()),
            HttpResponse::new(400.try_into().unwrap(), "".into()),
        )
    }

    #[test]
    fn a_service_error_is_its_code_and_message_without_a_dump() {
        let error = answered(
            Some("ResourceNotFoundException"),
            "Requested resource not found",
        );
        assert_eq!(
            describe(&error),
            "ResourceNotFoundException: Requested resource not found"
        );
        assert_eq!(
            describe(&answered(None, "bad")),
            "an answer without an error code: bad"
        );
    }

    #[test]
    fn an_unreachable_server_is_named_by_its_innermost_reason() {
        let refused =
            std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let error: SdkError<PutItemError, HttpResponse> = SdkError::dispatch_failure(
            aws_sdk_dynamodb::error::ConnectorError::io(Box::new(refused)),
        );
        assert_eq!(
            describe(&error),
            "DynamoDB could not be reached: connection refused"
        );
        let timeout: SdkError<PutItemError, HttpResponse> =
            SdkError::timeout_error("attempt timeout");
        assert_eq!(describe(&timeout), "no answer in time");
    }

    #[test]
    fn a_table_request_names_no_key() {
        let error = StoreError {
            operation: "DynamoDB CreateTable on table t".into(),
            id: String::new(),
            message: "no answer in time".into(),
        };
        assert_eq!(
            error.to_string(),
            "DynamoDB CreateTable on table t failed: no answer in time"
        );
    }

    #[test]
    fn a_record_reads_back_as_it_was_stored() {
        let at = UNIX_EPOCH + Duration::from_secs(1_000);
        let taken = IdempotencyRecord::in_progress(
            "f#1".into(),
            "abc".into(),
            at,
            Duration::from_secs(3600),
            Some(at + Duration::from_millis(1500)),
        );
        assert_eq!(from_item(&to_item(&taken)).unwrap(), taken);
        let completed = taken.completed(StoredOutcome::Drop);
        assert_eq!(from_item(&to_item(&completed)).unwrap(), completed);
        assert!(!to_item(&completed).contains_key("in_progress_expiration"));
    }

    #[test]
    fn a_malformed_item_is_named() {
        let mut item = to_item(&IdempotencyRecord::in_progress(
            "f#1".into(),
            "abc".into(),
            UNIX_EPOCH,
            Duration::from_secs(1),
            None,
        ));
        item.insert("status".into(), AttributeValue::S("DONE".into()));
        assert_eq!(from_item(&item).unwrap_err(), "unknown status DONE");
        item.remove("expiration");
        item.insert("status".into(), AttributeValue::S("COMPLETED".into()));
        assert_eq!(from_item(&item).unwrap_err(), "no attribute expiration");
    }
}
