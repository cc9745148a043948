//! Every handler shape the adapter accepts compiles, is called as it should be, and settles.

use std::fmt;
use std::time::{Duration, SystemTime};

use lambda_kinesis::testing::{TestEvent, settle};
use lambda_kinesis::{HandlerOutcome, RawData, RecordMeta};
use serde::{Deserialize, Serialize};

use crate::support::{Calls, check_outcomes, outcome_words};

/// An event of three numbers, 1, 2 and 3: the handlers below hold the record of 2.
fn one_two_three() -> TestEvent {
    TestEvent::new().json(&1).json(&2).json(&3)
}

async fn plain(n: &u32) -> HandlerOutcome {
    if *n == 2 {
        HandlerOutcome::hold()
    } else {
        HandlerOutcome::ack()
    }
}

#[tokio::test]
async fn a_plain_async_fn_of_a_reference() {
    check_outcomes(&settle(plain, one_two_three()).await, "ack hold skip");
}

/// Any `DeserializeOwned` type is a record type, not only numbers.
#[derive(Debug, Serialize, Deserialize)]
struct Order {
    id: u64,
    lines: Vec<String>,
    #[serde(default)]
    gift: Option<bool>,
}

async fn pack(order: &Order) -> HandlerOutcome {
    if order.lines.is_empty() {
        HandlerOutcome::drop()
    } else {
        HandlerOutcome::ack()
    }
}

#[tokio::test]
async fn any_deserializable_type() {
    let order = |id, lines: &[&str]| Order {
        id,
        lines: lines.iter().map(|line| (*line).to_owned()).collect(),
        gift: None,
    };
    let event = TestEvent::new()
        .json(&order(1, &["tea"]))
        .json(&order(2, &[]))
        .json(&order(3, &["cups", "saucers"]));
    check_outcomes(&settle(pack, event).await, "ack drop ack");
}

#[derive(Debug)]
struct OutOfStock(u32);

impl fmt::Display for OutOfStock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "item {} is out of stock", self.0)
    }
}

impl std::error::Error for OutOfStock {}

fn reserve(n: u32) -> Result<u32, OutOfStock> {
    if n == 2 { Err(OutOfStock(n)) } else { Ok(n) }
}

async fn fallible_outcome(n: &u32) -> Result<HandlerOutcome, OutOfStock> {
    let reserved = reserve(*n)?;
    Ok(if reserved == 3 {
        HandlerOutcome::drop()
    } else {
        HandlerOutcome::ack()
    })
}

async fn fallible_unit(n: &u32) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    reserve(*n)?;
    Ok(())
}

#[tokio::test]
async fn results_whose_errors_hold_the_record() {
    let event = TestEvent::new().json(&1).json(&3).json(&2).json(&1);
    check_outcomes(
        &settle(fallible_outcome, &event).await,
        "ack drop error skip",
    );
    check_outcomes(&settle(fallible_unit, &event).await, "ack ack error skip");
}

#[tokio::test]
async fn a_handler_that_reads_the_records_metadata() {
    let seen = Calls::default();
    let handler = {
        let seen = seen.clone();
        move |n: &u32, meta: &RecordMeta<'_>| {
            seen.push((
                *n,
                meta.shard_id().to_owned(),
                meta.sequence_number().to_owned(),
                meta.partition_key().to_owned(),
                meta.event_source_arn().to_owned(),
                meta.approximate_arrival(),
            ));
            async { HandlerOutcome::ack() }
        }
    };
    let arrival = SystemTime::UNIX_EPOCH + Duration::from_millis(1_767_225_600_250);
    let event = TestEvent::new()
        .shard("shardId-000000000007")
        .stream("orders")
        .arrival(arrival)
        .json_keyed("customer-1", &10)
        .json_keyed("customer-2", &20);
    let settlement = settle(handler, &event).await;

    check_outcomes(&settlement, "ack ack");
    let arn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders";
    let shard = "shardId-000000000007";
    assert_eq!(
        seen.taken(),
        [
            (
                10,
                shard.into(),
                event.sequence_number(0).into(),
                "customer-1".into(),
                arn.into(),
                arrival
            ),
            (
                20,
                shard.into(),
                event.sequence_number(1).into(),
                "customer-2".into(),
                arn.into(),
                arrival + Duration::from_millis(1)
            ),
        ]
    );
}

async fn with_meta(n: &u32, meta: &RecordMeta<'_>) -> HandlerOutcome {
    if *n == 2 && meta.partition_key() == "hold-me" {
        HandlerOutcome::hold()
    } else {
        HandlerOutcome::ack()
    }
}

#[tokio::test]
async fn an_async_fn_with_metadata() {
    let event = TestEvent::new()
        .json_keyed("hold-me", &1)
        .json_keyed("let-go", &2)
        .json_keyed("hold-me", &2);
    check_outcomes(&settle(with_meta, event).await, "ack ack hold");
}

async fn batch_all(numbers: &[u32]) -> HandlerOutcome {
    if numbers.contains(&2) {
        HandlerOutcome::hold()
    } else {
        HandlerOutcome::ack()
    }
}

async fn batch_each(numbers: &[u32]) -> Vec<HandlerOutcome> {
    numbers
        .iter()
        .map(|n| match n {
            2 => HandlerOutcome::hold(),
            3 => HandlerOutcome::drop(),
            _ => HandlerOutcome::ack(),
        })
        .collect()
}

async fn batch_result_each(numbers: &[u32]) -> Result<Vec<HandlerOutcome>, OutOfStock> {
    numbers
        .iter()
        .map(|n| reserve(*n).map(|_| HandlerOutcome::ack()))
        .collect()
}

async fn batch_result_all(numbers: &[u32]) -> Result<HandlerOutcome, OutOfStock> {
    for n in numbers {
        reserve(*n)?;
    }
    Ok(HandlerOutcome::drop())
}

async fn batch_result_unit(numbers: &[u32]) -> Result<(), OutOfStock> {
    numbers.iter().try_for_each(|n| reserve(*n).map(drop))
}

#[tokio::test]
async fn batch_handlers_settle_one_outcome_for_all_or_one_per_record() {
    let with_two = one_two_three();
    let without_two = TestEvent::new().json(&1).json(&3).json(&4);

    // One outcome for the whole batch.
    check_outcomes(&settle(batch_all, &with_two).await, "hold hold hold");
    check_outcomes(&settle(batch_all, &without_two).await, "ack ack ack");
    // One outcome per record: the response still names only the first held record.
    let each = settle(batch_each, &with_two).await;
    check_outcomes(&each, "ack hold drop");
    assert_eq!(each.cut().map(|cut| cut.index), Some(1));
    // The same inside a `Result`; an `Err` holds the batch from its first record.
    let results = [
        (
            "Result<Vec<_>, _>",
            settle(batch_result_each, &with_two).await,
            settle(batch_result_each, &without_two).await,
            "ack ack ack",
        ),
        (
            "Result<HandlerOutcome, _>",
            settle(batch_result_all, &with_two).await,
            settle(batch_result_all, &without_two).await,
            "drop drop drop",
        ),
        (
            "Result<(), _>",
            settle(batch_result_unit, &with_two).await,
            settle(batch_result_unit, &without_two).await,
            "ack ack ack",
        ),
    ];
    for (returns, failed, succeeded, expected) in results {
        assert_eq!(
            outcome_words(&failed),
            "error skip skip",
            "a batch handler returning {returns}, with a two"
        );
        assert_eq!(
            outcome_words(&succeeded),
            expected,
            "a batch handler returning {returns}, without a two"
        );
    }
}

#[tokio::test]
async fn a_batch_handler_is_called_once_with_every_record_in_shard_order() {
    let calls = Calls::default();
    let handler = {
        let calls = calls.clone();
        move |numbers: &[u32]| {
            calls.push(numbers.to_vec());
            async { HandlerOutcome::ack() }
        }
    };
    settle(handler, TestEvent::new().json(&5).json(&3).json(&9)).await;
    assert_eq!(calls.taken(), [vec![5, 3, 9]]);
}

async fn raw(data: &RawData) -> HandlerOutcome {
    if data.starts_with(b"GIF") {
        HandlerOutcome::drop()
    } else {
        HandlerOutcome::ack()
    }
}

#[tokio::test]
async fn raw_data_for_records_that_are_not_json() {
    let seen = Calls::default();
    let handler = {
        let seen = seen.clone();
        move |data: &RawData| {
            seen.push(data.0.clone());
            async { HandlerOutcome::ack() }
        }
    };
    let event = TestEvent::new()
        .bytes(&b"GIF89a"[..])
        .bytes(vec![0, 159, 146, 150])
        .json(&"text");
    check_outcomes(&settle(raw, &event).await, "drop ack ack");
    settle(handler, &event).await;
    assert_eq!(
        seen.taken(),
        [
            b"GIF89a".to_vec(),
            vec![0, 159, 146, 150],
            b"\"text\"".to_vec()
        ]
    );
}

#[tokio::test]
async fn closures_that_capture_state() {
    let hold = 3_u32;
    let closure = move |n: &u32| {
        let n = *n;
        async move {
            if n == hold {
                HandlerOutcome::hold()
            } else {
                HandlerOutcome::ack()
            }
        }
    };
    check_outcomes(&settle(closure, one_two_three()).await, "ack ack hold");
}

#[tokio::test]
async fn records_are_handled_in_shard_order_and_no_further_than_the_first_held_one() {
    let calls = Calls::default();
    let handler = {
        let calls = calls.clone();
        move |n: &u32| {
            calls.push(*n);
            let n = *n;
            async move {
                if n == 30 {
                    HandlerOutcome::hold()
                } else {
                    HandlerOutcome::ack()
                }
            }
        }
    };
    let event = TestEvent::new()
        .json_keyed("a", &10)
        .json_keyed("b", &20)
        .json_keyed("c", &30)
        .json_keyed("d", &40)
        .json_keyed("a", &50);
    let settlement = settle(handler, event).await;
    check_outcomes(&settlement, "ack ack hold skip skip");
    assert_eq!(calls.taken(), [10, 20, 30]);
}
