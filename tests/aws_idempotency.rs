//! Idempotency over dynalite: the DynamoDB store takes a key once, returns the item in the way
//! in the same request, lets a dead invocation's key go at its deadline; two concurrent
//! deliveries of one shipment (two instances, two lanes, two emulators on one stream) book it
//! once; and a delivery killed mid-record is booked once after its deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use end_to_end::aws::{
    LocalAws, ScratchDir, dynamodb_endpoint, esm_run, kinesis_endpoint, shipments_held_at, within,
    workspace_dir,
};
use lambda_kinesis::HandlerOutcome;
use lambda_kinesis::lambda_runtime::Context;
use lambda_kinesis::testing::{TestEvent, context_with_deadline};
use lambda_kinesis_idempotency::{
    DynamoDbStore, Idempotency, IdempotencyRecord, Status, Store, StoredOutcome, Take,
};
use shipping::Shipment;

const SHIPMENTS: u64 = 20;
const HELD: u64 = 9;

/// The shipping function as `template.yaml` configures it, with its idempotency table named
/// `table` and reading `stream`.
fn shipping_template(stream: &str, table: &str) -> String {
    format!(
        r#"AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
  Stream:
    Type: AWS::Kinesis::Stream
    Properties:
      Name: {stream}
      ShardCount: 1
  IdempotencyTable:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: {table}
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{{AttributeName: id, AttributeType: S}}]
      KeySchema: [{{AttributeName: id, KeyType: HASH}}]
  ShippingFunction:
    Type: AWS::Serverless::Function
    Metadata:
      BuildMethod: rust-cargolambda
      BuildProperties:
        Binary: bootstrap
    Properties:
      CodeUri: '{code_uri}'
      Handler: bootstrap
      Runtime: provided.al2023
      Timeout: 30
      Environment:
        Variables:
          RUST_LOG: info
          IDEMPOTENCY_TABLE: !Ref IdempotencyTable
      Events:
        Shipments:
          Type: Kinesis
          Properties:
            Stream: !GetAtt Stream.Arn
            StartingPosition: TRIM_HORIZON
            BatchSize: 5
            FunctionResponseTypes:
              - ReportBatchItemFailures
"#,
        code_uri = workspace_dir().join("functions/shipping").display(),
    )
}

/// The ids of the "shipment booked" lines of a run's log.
fn booked_ids(log: &str) -> Vec<u64> {
    log.lines()
        .filter(|line| line.contains("shipment booked"))
        .map(|line| {
            let after = line
                .split("shipment_id=")
                .nth(1)
                .unwrap_or_else(|| panic!("a booked line names its shipment: {line}"));
            let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().expect("a shipment id")
        })
        .collect()
}

/// A stream of [`SHIPMENTS`] shipments, held at [`HELD`], on kinesis-local, and the template of
/// the shipping function reading it with an idempotency table of its own (in a scratch folder,
/// removed when dropped).
async fn shipments_with_a_held_one(name: &str) -> (ScratchDir, String) {
    let aws = LocalAws::connect().await;
    let store = idempotency_table(&aws).await;
    let stream = aws.create_stream(name, 1).await;
    aws.publish_shipments(&stream, &shipments_held_at(SHIPMENTS, HELD))
        .await;
    let scratch = ScratchDir::new(name);
    let template = scratch.join("template.yaml");
    std::fs::write(&template, shipping_template(&stream, store.table())).unwrap();
    let template = template.to_string_lossy().into_owned();
    (scratch, template)
}

#[tokio::test]
async fn over_the_emulator_a_restart_redelivers_yet_each_shipment_is_booked_once() {
    let (_scratch, template) = shipments_with_a_held_one("idempotency").await;
    let mut booked = Vec::new();
    // Each run keeps its checkpoints in memory, so the second starts again at TRIM_HORIZON: every
    // shipment in front of the held one comes again, and the held one with those behind it again
    // and again within each run.
    for run in ["first", "second"] {
        let log = run_shipping(&template, run).await;
        if run == "second" {
            // The duplicate's line as `docs/writing-functions.md` shows it.
            let duplicate = log
                .lines()
                .find(|line| line.contains("duplicate record"))
                .unwrap_or_else(|| panic!("the second run meets duplicates:\n{log}"));
            for part in [
                "INFO ShippingFunction: duplicate record: handled before, settled with the \
                 stored outcome shard_id=\"shardId-000000000000\"",
                "partition_key=\"shipment-1\" key=ShippingFunction#1 outcome=\"ack\"",
            ] {
                assert!(duplicate.contains(part), "{duplicate}");
            }
        }
        booked.extend(booked_ids(&log));
    }
    booked.sort_unstable();
    assert_eq!(
        booked,
        (1..HELD).collect::<Vec<_>>(),
        "each shipment in front of the held one is booked exactly once"
    );
}

#[tokio::test]
async fn two_emulators_on_one_stream_and_one_table_book_each_shipment_once() {
    let (_scratch, template) = shipments_with_a_held_one("idempotency-twice").await;
    // Without a lease table each emulator reads the whole shard from TRIM_HORIZON: both deliver
    // every shipment, at the same time, to functions of their own over the one table.
    let (one, two) = tokio::join!(
        run_shipping(&template, "one"),
        run_shipping(&template, "two")
    );
    let mut booked = booked_ids(&one);
    booked.extend(booked_ids(&two));
    booked.sort_unstable();
    assert_eq!(
        booked,
        (1..HELD).collect::<Vec<_>>(),
        "each shipment in front of the held one is booked exactly once by the two emulators"
    );
    let settled_from_the_table = |log: &str| {
        log.contains("duplicate record") || log.contains("record in progress in another invocation")
    };
    assert!(
        settled_from_the_table(&one) || settled_from_the_table(&two),
        "one emulator met the other's keys:\n{one}\n{two}"
    );
}

/// Runs the shipping function of `template` under `kinesis-esm run --until-idle`, with the local
/// DynamoDB, and returns its log; the run ends held (shipment `HELD` never books).
async fn run_shipping(template: &str, run: &str) -> String {
    let kinesis = kinesis_endpoint();
    let args = [
        "--template",
        template,
        "--kinesis-endpoint",
        kinesis.as_str(),
        "--no-listen",
        "--until-idle",
    ];
    let command = esm_run(&args)
        .env("AWS_ENDPOINT_URL_DYNAMODB", &dynamodb_endpoint())
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("RUST_LOG", "info");
    // Each shipment costs DynamoDB round trips to dynalite, slow when the whole suite runs at
    // once on two cores: a watchdog longer than the usual one.
    let limit = Duration::from_secs(300);
    let output = end_to_end::within_time(
        limit,
        &format!("the {run} run"),
        command.timeout(2 * limit).output(),
    )
    .await;
    let log = output.stderr;
    assert_eq!(output.code, Some(1), "the {run} run ends held:\n{log}");
    log
}

/// A table shaped as the template's `IdempotencyTable`, ready for writes.
async fn idempotency_table(aws: &LocalAws) -> DynamoDbStore {
    let store = DynamoDbStore::new(
        aws.dynamodb().clone(),
        test_support::unique_name("idempotency"),
    );
    store
        .create_table()
        .await
        .unwrap_or_else(|error| panic!("dynalite creates the idempotency table: {error}"));
    store
}

fn taking(id: &str, now: SystemTime, deadline: Option<SystemTime>) -> IdempotencyRecord {
    IdempotencyRecord::in_progress(
        id.to_owned(),
        "hash".to_owned(),
        now,
        Duration::from_secs(3600),
        deadline,
    )
}

#[tokio::test]
async fn the_dynamodb_store_takes_a_key_once_and_names_its_holder() {
    let aws = LocalAws::connect().await;
    let store = idempotency_table(&aws).await;
    let now = SystemTime::now();
    let first = taking("shipping#1", now, Some(now + Duration::from_secs(30)));
    assert_eq!(store.take(&first, now).await.unwrap(), Take::Taken);
    assert_eq!(
        store.take(&first, now).await.unwrap(),
        Take::Held(first.clone())
    );
    let completed = first.completed(StoredOutcome::Ack);
    store.complete(&completed).await.unwrap();
    // Long past the first invocation's deadline, the completed key still holds.
    let later = now + Duration::from_secs(600);
    assert_eq!(
        store
            .take(&taking("shipping#1", later, None), later)
            .await
            .unwrap(),
        Take::Held(completed)
    );
    // An hour on, it has lapsed.
    let next_hour = now + Duration::from_secs(3601);
    let again = taking("shipping#1", next_hour, None);
    assert_eq!(store.take(&again, next_hour).await.unwrap(), Take::Taken);
    store.release("shipping#1").await.unwrap();
    assert_eq!(store.take(&first, now).await.unwrap(), Take::Taken);
}

#[tokio::test]
async fn a_key_whose_invocation_died_is_taken_after_its_deadline() {
    let aws = LocalAws::connect().await;
    let store = idempotency_table(&aws).await;
    let now = SystemTime::now();
    let deadline = now + Duration::from_secs(5);
    let died = taking("shipping#2", now, Some(deadline));
    assert_eq!(store.take(&died, now).await.unwrap(), Take::Taken);
    // Nothing completes or releases it: the invocation was killed mid-record.
    let before = deadline - Duration::from_millis(10);
    let Take::Held(holder) = store
        .take(&taking("shipping#2", before, None), before)
        .await
        .unwrap()
    else {
        panic!("the key is held until the deadline");
    };
    assert_eq!(holder.status, Status::InProgress);
    let after = deadline + Duration::from_millis(10);
    assert_eq!(
        store
            .take(&taking("shipping#2", after, None), after)
            .await
            .unwrap(),
        Take::Taken
    );
}

/// Books a shipment slowly, so that a second delivery arrives while the first is in progress.
async fn book_slowly(booked: &Arc<AtomicUsize>, _shipment: &Shipment) -> HandlerOutcome {
    booked.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(300)).await;
    HandlerOutcome::ack()
}

#[tokio::test]
async fn two_concurrent_deliveries_of_one_shipment_book_it_once() {
    let aws = LocalAws::connect().await;
    let store = Arc::new(idempotency_table(&aws).await);
    let booked = Arc::new(AtomicUsize::new(0));
    let shipment = Shipment {
        id: 7,
        address: "1 Main St".into(),
        carrier: "dhl".into(),
    };
    let event = TestEvent::new().json(&shipment);
    let instance = || {
        Idempotency::new(store.clone())
            .function_name("shipping")
            .wrap_with_state(booked.clone(), book_slowly)
            .key(|shipment: &Shipment| shipment.id)
            .into_adapter()
    };
    let (first, second) = (instance(), instance());
    let context = context_with_deadline(Duration::from_secs(30));
    let (one, two) = within("two deliveries", async {
        tokio::join!(
            first.settle(&event, &context),
            second.settle(&event, &context)
        )
    })
    .await;
    let mut summaries = [one.summary(), two.summary()];
    summaries.sort();
    assert_eq!(summaries, ["ack", "hold"]);
    assert_eq!(booked.load(Ordering::SeqCst), 1);
    // The held delivery comes again and settles from the stored outcome, unbooked.
    let again = instance().settle(&event, &Context::default()).await;
    assert_eq!(again.summary(), "ack");
    assert_eq!(booked.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn two_lanes_of_one_invocation_deliver_one_shipment_twice_and_book_it_once() {
    let aws = LocalAws::connect().await;
    let store = Arc::new(idempotency_table(&aws).await);
    let booked = Arc::new(AtomicUsize::new(0));
    let shipment = Shipment {
        id: 8,
        address: "2 Main St".into(),
        carrier: "dhl".into(),
    };
    // The same shipment under two partition keys (a producer that retried with another key):
    // two lanes run them at once.
    let event = TestEvent::new()
        .json_keyed("first", &shipment)
        .json_keyed("second", &shipment);
    let adapter = Idempotency::new(store.clone())
        .function_name("shipping")
        .wrap_with_state(booked.clone(), book_slowly)
        .key(|shipment: &Shipment| shipment.id)
        .into_adapter()
        .per_key_lanes(2);
    let context = context_with_deadline(Duration::from_secs(30));
    let settlement = within("two lanes", adapter.settle(&event, &context)).await;
    let mut words: Vec<&str> = settlement.outcomes().iter().map(|o| o.word()).collect();
    words.sort_unstable();
    assert_eq!(words, ["ack", "hold"], "{}", settlement.summary());
    assert_eq!(booked.load(Ordering::SeqCst), 1);
    let again = adapter.settle(&event, &Context::default()).await;
    assert_eq!(again.summary(), "ack ack");
    assert_eq!(booked.load(Ordering::SeqCst), 1);
}

/// How many times a booking started and finished.
#[derive(Default)]
struct Bookings {
    started: AtomicUsize,
    finished: AtomicUsize,
}

/// Starts a booking that takes `delay` to finish.
async fn book_taking(state: &(Arc<Bookings>, Duration), _shipment: &Shipment) -> HandlerOutcome {
    let (bookings, delay) = state;
    bookings.started.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(*delay).await;
    bookings.finished.fetch_add(1, Ordering::SeqCst);
    HandlerOutcome::ack()
}

#[tokio::test]
async fn a_delivery_killed_mid_record_is_booked_once_after_its_deadline() {
    let aws = LocalAws::connect().await;
    let store = Arc::new(idempotency_table(&aws).await);
    let bookings = Arc::new(Bookings::default());
    let shipment = Shipment {
        id: 9,
        address: "3 Main St".into(),
        carrier: "dhl".into(),
    };
    let event = TestEvent::new().json(&shipment);
    let function = |delay: Duration| {
        Idempotency::new(store.clone())
            .function_name("shipping")
            .wrap_with_state((bookings.clone(), delay), book_taking)
            .key(|shipment: &Shipment| shipment.id)
            .into_adapter()
    };
    // The first invocation has 3 s; its booking would take a minute, and it is killed mid-record:
    // its settle is dropped while the handler runs, so nothing finishes or releases the key, as
    // when the process dies. The table keeps the in-progress item with the invocation's deadline.
    let timeout = Duration::from_secs(3);
    let deadline = std::time::Instant::now() + timeout;
    let killed = {
        let (function, event) = (function(Duration::from_secs(60)), event.clone());
        tokio::spawn(async move {
            function
                .settle(&event, &context_with_deadline(timeout))
                .await
        })
    };
    within("the first booking to start", async {
        while bookings.started.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    killed.abort();
    assert!(killed.await.unwrap_err().is_cancelled());
    // Before the dead invocation's deadline, a redelivery is held unbooked.
    let quick = function(Duration::ZERO);
    let held = quick.settle(&event, &Context::default()).await;
    assert_eq!(held.summary(), "hold");
    assert!(
        std::time::Instant::now() < deadline,
        "the redelivery came before the deadline"
    );
    assert_eq!(bookings.started.load(Ordering::SeqCst), 1);
    // After it, the next delivery books, once.
    tokio::time::sleep_until((deadline + Duration::from_millis(200)).into()).await;
    assert_eq!(
        quick.settle(&event, &Context::default()).await.summary(),
        "ack"
    );
    assert_eq!(
        quick.settle(&event, &Context::default()).await.summary(),
        "ack"
    );
    assert_eq!(bookings.started.load(Ordering::SeqCst), 2);
    assert_eq!(bookings.finished.load(Ordering::SeqCst), 1);
}
