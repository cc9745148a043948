//! The template's resources made where the run is given somewhere to make them, as `sam deploy`
//! would, before any record moves: its tables in the local DynamoDB the functions are given
//! (`AWS_ENDPOINT_URL_DYNAMODB`, the endpoint `Ref` of a table names a table of), its queues,
//! topics and buckets at `--destination-endpoint`. Each is made only if missing and named in one
//! line. What is asked of each service is `plan.rs`' (pure); the queues', topics' and buckets'
//! calls are `queues_topics_buckets.rs`'.

mod plan;
mod queues_topics_buckets;

use std::time::{Duration, Instant};

use anyhow::bail;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::TableStatus;
use esm_engine::aws::failure::{Observed, observe};

use self::plan::{
    Made, code, create_table_input, key_mismatch_note, not_applied_note, start_line, time_to_live,
};
use super::args::RunArgs;
use crate::cli::connection::connection_to;
use crate::template::{TableResource, Template};

/// How long a created table may take to become `ACTIVE`.
const TABLE_ACTIVE_WITHIN: Duration = Duration::from_secs(60);

/// Makes the template's tables at `local_dynamodb` (when the run has one) and its queues, topics
/// and buckets at `--destination-endpoint` (when given), saying one line for each unless
/// `quiet`.
pub(super) async fn make(
    args: &RunArgs,
    template: &Template,
    local_dynamodb: Option<&str>,
    quiet: bool,
) -> anyhow::Result<()> {
    let say = |line: String| {
        if !quiet {
            say!("{line}");
        }
    };
    if let Some(endpoint) = local_dynamodb.filter(|endpoint| !endpoint.is_empty())
        && !template.tables.is_empty()
    {
        let config = connection_to(endpoint)
            .with_region(&args.region)
            .sdk_config()
            .await?;
        let client = Client::new(&config);
        for table in &template.tables {
            say(make_table(&client, table, endpoint).await?);
        }
    }
    if let Some(endpoint) = &args.destination_endpoint {
        queues_topics_buckets::make(template, endpoint, &args.region, &say).await?;
    }
    Ok(())
}

/// Creates `table` unless it exists, waits until it is `ACTIVE` and turns its TTL on; returns
/// its start line.
async fn make_table(
    client: &Client,
    table: &TableResource,
    endpoint: &str,
) -> anyhow::Result<String> {
    let failed = |action: &str, observed: &Observed| {
        anyhow::anyhow!(
            "table {} ({}): {action} it in the local DynamoDB at {endpoint} \
             (AWS_ENDPOINT_URL_DYNAMODB): {}",
            table.logical_id,
            table.name,
            observed.describe("DynamoDB", endpoint)
        )
    };
    let mut notes: Vec<String> = not_applied_note(&table.not_applied).into_iter().collect();
    let line = |made: Made, notes: &[String]| {
        start_line(
            "table",
            &table.logical_id,
            &table.name,
            endpoint,
            &made,
            notes,
        )
    };
    match client.describe_table().table_name(&table.name).send().await {
        Ok(described) => {
            notes.extend(existing_key_note(table, &described));
            return Ok(line(Made::Exists, &notes));
        }
        Err(error) => {
            let observed = observe(&error);
            if code(&observed) != Some("ResourceNotFoundException") {
                return Err(failed("describing", &observed));
            }
        }
    }
    let input = create_table_input(table);
    let created = client
        .create_table()
        .set_table_name(input.table_name)
        .set_key_schema(input.key_schema)
        .set_attribute_definitions(input.attribute_definitions)
        .set_billing_mode(input.billing_mode)
        .set_provisioned_throughput(input.provisioned_throughput)
        .send()
        .await;
    if let Err(error) = created {
        let observed = observe(&error);
        // Made meanwhile by someone else (another run over the same DynamoDB).
        if code(&observed) == Some("ResourceInUseException") {
            return Ok(line(Made::Exists, &notes));
        }
        return Err(failed("creating", &observed));
    }
    wait_until_active(client, table, endpoint).await?;
    notes.extend(turn_on_time_to_live(client, table, endpoint).await);
    Ok(line(Made::Created, &notes))
}

/// The note for a table found with another key than the template's, if it is.
fn existing_key_note(
    table: &TableResource,
    described: &aws_sdk_dynamodb::operation::describe_table::DescribeTableOutput,
) -> Option<String> {
    let found: Vec<(&str, &str)> = described
        .table()
        .map(|found| found.key_schema())
        .unwrap_or_default()
        .iter()
        .map(|element| (element.attribute_name(), element.key_type().as_str()))
        .collect();
    key_mismatch_note(table, &found)
}

/// Turns the TTL of a created table on when its template enables it; a note when the local
/// DynamoDB refuses (dynalite has no TTL: the table is usable without it, which is said).
async fn turn_on_time_to_live(
    client: &Client,
    table: &TableResource,
    endpoint: &str,
) -> Option<String> {
    let spec = time_to_live(table)?;
    let updated = client
        .update_time_to_live()
        .table_name(&table.name)
        .time_to_live_specification(spec)
        .send()
        .await;
    updated.err().map(|error| {
        format!(
            "TimeToLiveSpecification not applied, items do not expire: UpdateTimeToLive \
             answered {}",
            observe(&error).describe("DynamoDB", endpoint)
        )
    })
}

async fn wait_until_active(
    client: &Client,
    table: &TableResource,
    endpoint: &str,
) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        let status = client
            .describe_table()
            .table_name(&table.name)
            .send()
            .await
            .ok()
            .and_then(|described| described.table?.table_status);
        if status == Some(TableStatus::Active) {
            return Ok(());
        }
        if started.elapsed() >= TABLE_ACTIVE_WITHIN {
            bail!(
                "table {} ({}) at {endpoint}: not ACTIVE {} s after it was created (status {})",
                table.logical_id,
                table.name,
                TABLE_ACTIVE_WITHIN.as_secs(),
                status.as_ref().map_or("unknown", TableStatus::as_str)
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
