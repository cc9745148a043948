//! [`DynamoLeaseStore`]: leases in a DynamoDB table, in the KCL's own format.
//!
//! One item per lease, keyed by `leaseKey` (S), with the KCL's attribute names (`docs/lease-table.md` §1):
//! `leaseOwner` S, `leaseCounter` N, `checkpoint` S, `checkpointSubSequenceNumber` N,
//! `ownerSwitchesSinceCheckpoint` N, `parentShardId` SS, `childShardIds` SS, `startingHashKey` S,
//! `endingHashKey` S, plus `shardId` S as KCL multi-stream leases have. Empty sets and absent
//! owners are left out, as DynamoDB has no empty sets. A KCL application can read the table.
//!
//! **Fencing.** Every write but the delete is conditional (`docs/lease-table.md` §3): a create on
//! `attribute_not_exists(leaseKey)`, every other change on `leaseCounter = :expected`, the counter
//! the writer last saw, and each change adds one to the counter. An instance whose lease was taken
//! can therefore never move its checkpoint again (`docs/lease-table.md` §4): its write fails the condition and comes
//! back as [`LeaseError::LeaseLost`]. Each call makes exactly one write; changes return the
//! stored item (`ReturnValues = ALL_NEW`), so no read follows a successful write.
//!
//! **Failures and retries.** Throttling, 5xx answers, timeouts and unreachable servers come back as
//! [`LeaseError::Unavailable`] at once: the SDK does not retry (see [`crate::aws::connection`]);
//! the caller pauses with [`crate::backoff::Backoff`] and calls again with the lease *as it last
//! saw it*. Trying again is safe even when the failed attempt did reach the table (the
//! answer was lost on the way back): the store remembers the change it could not confirm, and
//! when the same change then fails its condition, it reads the item once; if the item holds
//! exactly what the change would have made (same owner, counter one up, same checkpoint), the
//! change is taken as done and that lease returned. This is the KCL's own test for a "spurious"
//! renewal failure, applied to every change, but only after an unconfirmed attempt: a stale
//! write that nothing explains is always [`LeaseError::LeaseLost`]. A create whose answer was
//! lost comes back as "already there" (`false`) when tried again.
//!
//! Sets come back sorted: DynamoDB keeps no order in them.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType, ReturnValue,
    ScalarAttributeType, TableStatus,
};
use tokio::time::Instant;

use crate::aws::connection::{AwsConnection, ConnectionError};
use crate::aws::failure::observe;
use crate::lease::{Checkpoint, Lease, LeaseError, LeaseStore};
use item::{attribute, lease_from_item, lease_to_item, normalized, number, string_set};

mod item;

/// How often a table's status is asked for while waiting for it to become active.
const TABLE_STATUS_POLL: Duration = Duration::from_millis(250);

/// Why the lease table could not be made ready.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TableError {
    /// The SDK could not be configured.
    #[error(transparent)]
    Connection(#[from] ConnectionError),
    /// The table exists with another key than `leaseKey` (S).
    #[error("lease table {table} is keyed by {found}, not by leaseKey alone: is it a lease table?")]
    WrongKeySchema {
        /// The table.
        table: String,
        /// Its key schema, described.
        found: String,
    },
    /// The table did not become `ACTIVE` in time.
    #[error("lease table {table} is still {status} after {waited:?}")]
    NotActive {
        /// The table.
        table: String,
        /// Its last status.
        status: String,
        /// How long was waited.
        waited: Duration,
    },
    /// DynamoDB failed the call.
    #[error("lease table {table}: {message}")]
    Service {
        /// The table.
        table: String,
        /// What went wrong.
        message: String,
    },
}

/// A failed call: a failed condition, or anything else (already in lease terms).
enum Failure {
    ConditionFailed,
    Other(LeaseError),
}

/// Describes an SDK failure at `endpoint`, naming the call (see [`crate::aws::failure`]):
/// the error code, if DynamoDB gave one, and the message.
fn describe_failure<E>(
    call: &dyn fmt::Display,
    endpoint: &str,
    error: &SdkError<E, aws_sdk_dynamodb::config::http::HttpResponse>,
) -> (Option<String>, String)
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let observed = observe(error);
    let message = format!("{call}: {}", observed.describe("DynamoDB", endpoint));
    (observed.code().map(str::to_owned), message)
}

/// A call on one lease, named for error messages.
struct LeaseCall<'a> {
    operation: &'static str,
    table: &'a str,
    endpoint: &'a str,
    lease_key: &'a str,
}

impl fmt::Display for LeaseCall<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} of lease {} in table {}",
            self.operation, self.lease_key, self.table
        )
    }
}

impl LeaseCall<'_> {
    fn failure<E>(
        &self,
        error: SdkError<E, aws_sdk_dynamodb::config::http::HttpResponse>,
    ) -> Failure
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let (code, message) = describe_failure(self, self.endpoint, &error);
        match code.as_deref() {
            Some("ConditionalCheckFailedException") => Failure::ConditionFailed,
            // Throttles, 5xx, a missing table, timeouts, lost connections: all may pass.
            _ => Failure::Other(LeaseError::Unavailable { message }),
        }
    }

    fn error<E>(
        &self,
        error: SdkError<E, aws_sdk_dynamodb::config::http::HttpResponse>,
    ) -> LeaseError
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        match self.failure(error) {
            Failure::ConditionFailed => LeaseError::Unavailable {
                message: format!("{self}: a condition failed where none was set"),
            },
            Failure::Other(error) => error,
        }
    }
}

/// One conditional change to a lease: the update expression and its values, and the lease it
/// should leave behind.
struct Change {
    operation: &'static str,
    /// `SET` clauses besides the counter's, such as `checkpoint = :checkpoint`.
    set: Vec<(&'static str, &'static str, AttributeValue)>,
    /// Attributes to remove.
    remove: Vec<&'static str>,
    /// The lease as it will be stored.
    intended: Lease,
}

impl Change {
    fn new(operation: &'static str, seen: &Lease, apply: impl FnOnce(&mut Lease)) -> Self {
        let mut intended = seen.clone();
        apply(&mut intended);
        intended.lease_counter = seen.lease_counter + 1;
        Self {
            operation,
            set: Vec::new(),
            remove: Vec::new(),
            intended: normalized(intended),
        }
    }

    fn set(mut self, name: &'static str, placeholder: &'static str, value: AttributeValue) -> Self {
        self.set.push((name, placeholder, value));
        self
    }

    fn remove(mut self, name: &'static str) -> Self {
        self.remove.push(name);
        self
    }
}

/// Leases in a DynamoDB table (see the module documentation).
#[derive(Debug)]
pub struct DynamoLeaseStore {
    client: Client,
    table: String,
    /// The endpoint called, for messages.
    endpoint: String,
    writes: AtomicU64,
    reads: AtomicU64,
    table_timeout: Duration,
    /// Changes whose outcome is unknown (the call failed after it may have reached the table),
    /// by lease key: the lease each would have left behind.
    unconfirmed: Mutex<HashMap<String, Lease>>,
}

impl DynamoLeaseStore {
    /// A store on `table` through a client made elsewhere (give it no retries of its own, see
    /// [`crate::aws::connection`]). Makes no call: see [`Self::create_table_if_missing`].
    pub fn from_client(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            endpoint: "DynamoDB's endpoint".to_owned(),
            writes: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            table_timeout: Duration::from_secs(300),
            unconfirmed: Mutex::new(HashMap::new()),
        }
    }

    /// A store on `table` for `connection`, with the table created if missing and active.
    pub async fn connect(
        connection: &AwsConnection,
        table: impl Into<String>,
    ) -> Result<Self, TableError> {
        let config = connection.sdk_config().await?;
        let mut store = Self::from_client(Client::new(&config), table);
        if let Some(endpoint) = config.endpoint_url() {
            endpoint.clone_into(&mut store.endpoint);
        }
        store.create_table_if_missing().await?;
        Ok(store)
    }

    /// A store on `table` at a local server at `endpoint` (placeholder credentials), or on
    /// real AWS with the standard credential chain when `endpoint` is `None`; in `region`
    /// either way. Creates the table if missing.
    pub async fn open(
        endpoint: Option<&str>,
        region: &str,
        table: impl Into<String>,
    ) -> Result<Self, TableError> {
        let connection = match endpoint {
            Some(endpoint) => AwsConnection::local(endpoint),
            None => AwsConnection::from_environment(),
        };
        Self::connect(&connection.with_region(region), table).await
    }

    /// The table's name.
    pub fn table_name(&self) -> &str {
        &self.table
    }

    /// The SDK client, for calls this type does not offer.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// How many item writes (put, update, delete) this store has sent, failed ones included.
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    /// How many item reads (get, scan pages) this store has sent, failed ones included.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    fn table_error<E>(
        &self,
        operation: &str,
        error: SdkError<E, aws_sdk_dynamodb::config::http::HttpResponse>,
    ) -> (Option<String>, TableError)
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        // `TableError::Service` names the table already.
        let call = operation;
        let (code, message) = describe_failure(&call, &self.endpoint, &error);
        (
            code,
            TableError::Service {
                table: self.table.clone(),
                message,
            },
        )
    }

    /// Creates the table (on-demand capacity, keyed by `leaseKey` S) unless it exists, and
    /// waits until it is `ACTIVE`. A table with another key is refused.
    pub async fn create_table_if_missing(&self) -> Result<(), TableError> {
        match self.table_status().await? {
            Some(_) => {}
            None => {
                let created = self
                    .client
                    .create_table()
                    .table_name(&self.table)
                    .billing_mode(BillingMode::PayPerRequest)
                    .attribute_definitions(
                        AttributeDefinition::builder()
                            .attribute_name(attribute::LEASE_KEY)
                            .attribute_type(ScalarAttributeType::S)
                            .build()
                            .expect("the attribute definition is complete"),
                    )
                    .key_schema(
                        KeySchemaElement::builder()
                            .attribute_name(attribute::LEASE_KEY)
                            .key_type(KeyType::Hash)
                            .build()
                            .expect("the key schema element is complete"),
                    )
                    .send()
                    .await;
                if let Err(error) = created {
                    let (code, error) = self.table_error("CreateTable", error);
                    // Someone else created it meanwhile: wait for it like for ours.
                    if code.as_deref() != Some("ResourceInUseException") {
                        return Err(error);
                    }
                }
            }
        }
        let started = Instant::now();
        loop {
            let status = self.table_status().await?;
            if status == Some(TableStatus::Active) {
                return Ok(());
            }
            if started.elapsed() >= self.table_timeout {
                return Err(TableError::NotActive {
                    table: self.table.clone(),
                    status: format!("{status:?}"),
                    waited: started.elapsed(),
                });
            }
            tokio::time::sleep(TABLE_STATUS_POLL).await;
        }
    }

    /// The table's status, `None` if it does not exist; checks its key.
    async fn table_status(&self) -> Result<Option<TableStatus>, TableError> {
        let described = match self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await
        {
            Ok(described) => described,
            Err(error) => {
                let (code, error) = self.table_error("DescribeTable", error);
                return match code.as_deref() {
                    Some("ResourceNotFoundException") => Ok(None),
                    _ => Err(error),
                };
            }
        };
        let Some(table) = described.table() else {
            return Ok(None);
        };
        let key: Vec<(&str, &KeyType)> = table
            .key_schema()
            .iter()
            .map(|element| (element.attribute_name(), element.key_type()))
            .collect();
        if key != [(attribute::LEASE_KEY, &KeyType::Hash)] {
            return Err(TableError::WrongKeySchema {
                table: self.table.clone(),
                found: format!("{key:?}"),
            });
        }
        Ok(Some(
            table
                .table_status()
                .cloned()
                .unwrap_or(TableStatus::Creating),
        ))
    }

    fn key(lease_key: &str) -> HashMap<String, AttributeValue> {
        HashMap::from([(
            attribute::LEASE_KEY.to_owned(),
            AttributeValue::S(lease_key.to_owned()),
        )])
    }

    /// Reads one lease with a strongly consistent read.
    async fn read_lease(&self, call: &LeaseCall<'_>) -> Result<Option<Lease>, LeaseError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(Self::key(call.lease_key)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|error| call.error(error))?;
        output.item().map(lease_from_item).transpose()
    }

    /// Applies `change` to `seen` if the stored counter is still `seen`'s.
    async fn apply(&self, seen: &Lease, change: Change) -> Result<Lease, LeaseError> {
        let call = LeaseCall {
            operation: change.operation,
            table: &self.table,
            endpoint: &self.endpoint,
            lease_key: &seen.lease_key,
        };
        let mut set_clauses = vec![format!("{} = :next", attribute::LEASE_COUNTER)];
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::key(&seen.lease_key)))
            .condition_expression(format!("{} = :expected", attribute::LEASE_COUNTER))
            .expression_attribute_values(":expected", number(seen.lease_counter))
            .expression_attribute_values(":next", number(seen.lease_counter + 1))
            .return_values(ReturnValue::AllNew);
        for (name, placeholder, value) in change.set {
            set_clauses.push(format!("{name} = {placeholder}"));
            request = request.expression_attribute_values(placeholder, value);
        }
        let mut expression = format!("SET {}", set_clauses.join(", "));
        if !change.remove.is_empty() {
            expression.push_str(&format!(" REMOVE {}", change.remove.join(", ")));
        }
        self.writes.fetch_add(1, Ordering::Relaxed);
        let sent = request.update_expression(expression).send().await;
        let unconfirmed = self.take_unconfirmed(&seen.lease_key);
        match sent {
            Ok(output) => {
                let item = output.attributes().ok_or_else(|| LeaseError::Unavailable {
                    message: format!("{call}: DynamoDB answered without the updated item"),
                })?;
                lease_from_item(item)
            }
            Err(error) => match call.failure(error) {
                Failure::Other(error) => {
                    // The write may have landed with its answer lost on the way back.
                    self.unconfirmed
                        .lock()
                        .expect("the unconfirmed map is never poisoned")
                        .insert(seen.lease_key.clone(), change.intended);
                    Err(error)
                }
                Failure::ConditionFailed => {
                    // If an earlier attempt of this very change could not be confirmed, it may
                    // be what moved the counter: then the item holds exactly what it would have
                    // made.
                    if unconfirmed.as_ref() == Some(&change.intended)
                        && let Some(stored) = self.read_lease(&call).await?
                        && stored == change.intended
                    {
                        return Ok(stored);
                    }
                    Err(LeaseError::LeaseLost {
                        lease_key: seen.lease_key.clone(),
                        expected_counter: seen.lease_counter,
                    })
                }
            },
        }
    }

    fn take_unconfirmed(&self, lease_key: &str) -> Option<Lease> {
        self.unconfirmed
            .lock()
            .expect("the unconfirmed map is never poisoned")
            .remove(lease_key)
    }
}

#[async_trait]
impl LeaseStore for DynamoLeaseStore {
    async fn list_leases(&self) -> Result<Vec<Lease>, LeaseError> {
        let call = LeaseCall {
            operation: "Scan",
            table: &self.table,
            endpoint: &self.endpoint,
            lease_key: "*",
        };
        let mut leases = Vec::new();
        let mut start_key = None;
        loop {
            self.reads.fetch_add(1, Ordering::Relaxed);
            let page = self
                .client
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .set_exclusive_start_key(start_key)
                .send()
                .await
                .map_err(|error| call.error(error))?;
            for item in page.items() {
                leases.push(lease_from_item(item)?);
            }
            match page.last_evaluated_key() {
                Some(key) if !key.is_empty() => start_key = Some(key.clone()),
                _ => break,
            }
        }
        leases.sort_by(|a, b| a.lease_key.cmp(&b.lease_key));
        Ok(leases)
    }

    async fn get_lease(&self, lease_key: &str) -> Result<Option<Lease>, LeaseError> {
        self.read_lease(&LeaseCall {
            operation: "GetItem",
            table: &self.table,
            endpoint: &self.endpoint,
            lease_key,
        })
        .await
    }

    async fn create_lease_if_absent(&self, lease: &Lease) -> Result<bool, LeaseError> {
        let call = LeaseCall {
            operation: "PutItem",
            table: &self.table,
            endpoint: &self.endpoint,
            lease_key: &lease.lease_key,
        };
        self.writes.fetch_add(1, Ordering::Relaxed);
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(lease_to_item(lease)))
            .condition_expression(format!("attribute_not_exists({})", attribute::LEASE_KEY))
            .send()
            .await;
        match put {
            Ok(_) => Ok(true),
            Err(error) => match call.failure(error) {
                Failure::ConditionFailed => Ok(false),
                Failure::Other(error) => Err(error),
            },
        }
    }

    async fn take_lease(&self, lease: &Lease, owner: &str) -> Result<Lease, LeaseError> {
        let switches = lease.owner_switches_since_checkpoint
            + u64::from(lease.lease_owner.as_deref() != Some(owner));
        let change = Change::new("UpdateItem (take)", lease, |intended| {
            intended.lease_owner = Some(owner.to_owned());
            intended.owner_switches_since_checkpoint = switches;
        })
        .set(
            attribute::LEASE_OWNER,
            ":owner",
            AttributeValue::S(owner.to_owned()),
        )
        .set(
            attribute::OWNER_SWITCHES_SINCE_CHECKPOINT,
            ":switches",
            number(switches),
        );
        self.apply(lease, change).await
    }

    async fn renew_lease(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        self.apply(lease, Change::new("UpdateItem (renew)", lease, |_| {}))
            .await
    }

    async fn update_checkpoint(
        &self,
        lease: &Lease,
        checkpoint: Checkpoint,
    ) -> Result<Lease, LeaseError> {
        let text = AttributeValue::S(checkpoint.as_str().to_owned());
        let change = Change::new("UpdateItem (checkpoint)", lease, |intended| {
            intended.checkpoint = checkpoint;
            intended.owner_switches_since_checkpoint = 0;
        })
        .set(attribute::CHECKPOINT, ":checkpoint", text)
        .set(
            attribute::CHECKPOINT_SUB_SEQUENCE_NUMBER,
            ":sub",
            number(lease.checkpoint_sub_sequence_number),
        )
        .set(
            attribute::OWNER_SWITCHES_SINCE_CHECKPOINT,
            ":switches",
            number(0),
        );
        self.apply(lease, change).await
    }

    async fn set_child_shard_ids(
        &self,
        lease: &Lease,
        child_shard_ids: &[String],
    ) -> Result<Lease, LeaseError> {
        let change = Change::new("UpdateItem (children)", lease, |intended| {
            intended.child_shard_ids = child_shard_ids.to_vec();
        });
        let change = match string_set(child_shard_ids) {
            Some(children) => change.set(attribute::CHILD_SHARD_IDS, ":children", children),
            None => change.remove(attribute::CHILD_SHARD_IDS),
        };
        self.apply(lease, change).await
    }

    async fn evict_lease(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        let change = Change::new("UpdateItem (evict)", lease, |intended| {
            intended.lease_owner = None;
        })
        .remove(attribute::LEASE_OWNER);
        self.apply(lease, change).await
    }

    async fn delete_lease(&self, lease_key: &str) -> Result<(), LeaseError> {
        let call = LeaseCall {
            operation: "DeleteItem",
            table: &self.table,
            endpoint: &self.endpoint,
            lease_key,
        };
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(Self::key(lease_key)))
            .send()
            .await
            .map_err(|error| call.error(error))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
