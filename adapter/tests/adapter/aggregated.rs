//! KPL-aggregated records: each user record is handled on its own, and the response, which can
//! only name a Kinesis record, names the aggregate of the first held user record.

use lambda_kinesis::aggregate::{Aggregate, AggregateError};
use lambda_kinesis::settlement::{Cut, DecodeFailure, DropReason, RecordOutcome};
use lambda_kinesis::testing::{TestEvent, settle};
use lambda_kinesis::wire::KinesisBatch;
use lambda_kinesis::{HandlerOutcome, KinesisAdapter, RecordMeta};

use crate::support::{Calls, check_outcomes, response_json};

/// An aggregate of the numbers `from..to` as JSON, each under the key `key-<n>`, the even ones
/// with the explicit hash key `<n>`.
fn numbers(from: u32, to: u32) -> Aggregate {
    let mut aggregate = Aggregate::new();
    for n in from..to {
        let hash_key = (n % 2 == 0).then(|| n.to_string());
        aggregate.add(
            &format!("key-{n}"),
            hash_key.as_deref(),
            n.to_string().as_bytes(),
        );
    }
    aggregate
}

/// What a handler saw of one user record.
type Seen = (u32, String, String, Option<String>, u64, bool);

/// A handler that remembers each record and holds the number `hold`.
fn holding(
    hold: u32,
) -> (
    Calls<Seen>,
    impl Fn(&u32, &RecordMeta<'_>) -> std::future::Ready<HandlerOutcome> + Send + Sync + 'static,
) {
    let seen = Calls::default();
    let handler = {
        let seen = seen.clone();
        move |n: &u32, meta: &RecordMeta<'_>| {
            seen.push((
                *n,
                meta.sequence_number().to_owned(),
                meta.partition_key().to_owned(),
                meta.explicit_hash_key().map(str::to_owned),
                meta.sub_sequence_number(),
                meta.is_aggregated(),
            ));
            std::future::ready(if *n == hold {
                HandlerOutcome::hold()
            } else {
                HandlerOutcome::ack()
            })
        }
    };
    (seen, handler)
}

#[tokio::test]
async fn each_user_record_is_handled_on_its_own_with_its_own_keys() {
    let event = TestEvent::new()
        .json_keyed("plain", &100)
        .aggregate(&numbers(0, 3))
        .json_keyed("plain", &101);
    let (seen, handler) = holding(u32::MAX);
    let settlement = settle(handler, event.clone()).await;
    check_outcomes(&settlement, "ack ack ack ack ack");
    let (plain, aggregate, last) = (
        event.sequence_number(0).to_owned(),
        event.sequence_number(1).to_owned(),
        event.sequence_number(2).to_owned(),
    );
    let key = |n: u32| format!("key-{n}");
    assert_eq!(
        seen.taken(),
        [
            (100, plain, "plain".to_owned(), None, 0, false),
            (0, aggregate.clone(), key(0), Some("0".to_owned()), 0, true),
            (1, aggregate.clone(), key(1), None, 1, true),
            (2, aggregate, key(2), Some("2".to_owned()), 2, true),
            (101, last, "plain".to_owned(), None, 0, false),
        ]
    );
    // Every record settled: the checkpoint moves past the last one.
    assert_eq!(settlement.cut(), None);
    assert_eq!(settlement.redelivered().count(), 0);
    assert_eq!(response_json(&settlement), r#"{"batchItemFailures":[]}"#);
}

#[tokio::test]
async fn a_held_user_record_puts_the_checkpoint_in_front_of_its_aggregate() {
    let event = TestEvent::new()
        .json(&100)
        .aggregate(&numbers(0, 5))
        .json(&101);
    let (seen, handler) = holding(3);
    let settlement = settle(handler, event.clone()).await;
    check_outcomes(&settlement, "ack ack ack ack hold skip skip");
    assert_eq!(seen.taken().len(), 5, "handled up to the held user record");
    // The response can only name the aggregate: Lambda delivers it again whole, so its user
    // records 0 to 2, handled already, come again. The cut is the aggregate's first user record
    // (batch index 1), so the checkpoint stands after the plain record in front of it.
    let cut = settlement.cut().expect("a held user record cuts the batch");
    assert_eq!(
        cut,
        Cut {
            index: 1,
            sequence_number: event.sequence_number(1)
        }
    );
    let (in_front, _) = settlement.records().nth(cut.index - 1).unwrap();
    assert_eq!(in_front.sequence_number(), event.sequence_number(0));
    let again: Vec<u64> = settlement
        .redelivered()
        .map(|record| record.sub_sequence_number())
        .collect();
    assert_eq!(again, [0, 1, 2, 3, 4, 0]);
    assert_eq!(
        response_json(&settlement),
        format!(
            r#"{{"batchItemFailures":[{{"itemIdentifier":"{}"}}]}}"#,
            event.sequence_number(1)
        )
    );
}

#[tokio::test]
async fn a_held_first_user_record_leaves_the_checkpoint_unmoved() {
    let event = TestEvent::new().aggregate(&numbers(0, 3));
    let (_, handler) = holding(0);
    let settlement = settle(handler, &event).await;
    check_outcomes(&settlement, "hold skip skip");
    assert_eq!(settlement.cut(), Some(event.cut_at(0)));
}

#[tokio::test]
async fn an_aggregate_with_dropped_user_records_is_reported_dropped_once() {
    let event = TestEvent::new().aggregate(&numbers(0, 4)).json(&9);
    let handler = |n: &u32| {
        std::future::ready(match n {
            1 | 2 => HandlerOutcome::drop(),
            _ => HandlerOutcome::ack(),
        })
    };
    let settlement = settle(handler, event.clone()).await;
    check_outcomes(&settlement, "ack drop drop ack ack");
    assert_eq!(settlement.response().dropped(), [event.sequence_number(0)]);
}

/// `aggregate`'s bytes with one byte of the message flipped, so the MD5 digest does not match.
fn damaged(aggregate: &Aggregate) -> Vec<u8> {
    let mut bytes = aggregate.to_bytes();
    bytes[8] ^= 0x40;
    bytes
}

#[tokio::test]
async fn a_corrupt_aggregate_is_a_named_undecodable_record_dropped_like_any_other() {
    let event = TestEvent::new()
        .json(&1)
        .bytes(damaged(&numbers(0, 3)))
        .json(&2);
    let (seen, handler) = holding(u32::MAX);
    let settlement = settle(handler, event.clone()).await;
    check_outcomes(&settlement, "ack drop:undecodable ack");
    assert_eq!(seen.taken().len(), 2);
    let RecordOutcome::Dropped(DropReason::Undecodable(undecodable)) = settlement.outcome(1) else {
        panic!("{:?}", settlement.outcome(1));
    };
    assert_eq!(
        undecodable.failure,
        DecodeFailure::CorruptAggregate(AggregateError::DigestMismatch)
    );
    assert_eq!(
        undecodable.to_string(),
        format!(
            "record {} of shardId-000000000000: a KPL aggregate that cannot be read: the MD5 digest does not match the message",
            event.sequence_number(1)
        )
    );
    assert_eq!(settlement.response().dropped(), [event.sequence_number(1)]);
}

#[tokio::test]
async fn a_corrupt_aggregate_is_held_when_undecodable_records_are() {
    let event = TestEvent::new().json(&1).bytes(damaged(&numbers(0, 3)));
    let (_, handler) = holding(u32::MAX);
    let settlement = KinesisAdapter::new(handler)
        .hold_undecodable()
        .settle(KinesisBatch::from(&event), &Default::default())
        .await;
    check_outcomes(&settlement, "ack hold:undecodable");
    assert_eq!(settlement.cut(), Some(event.cut_at(1)));
}

#[tokio::test]
async fn a_user_record_that_is_not_the_handlers_type_names_its_place_in_the_aggregate() {
    let mut aggregate = numbers(0, 2);
    aggregate.add("k", None, b"not a number");
    let event = TestEvent::new().aggregate(&aggregate);
    let (_, handler) = holding(u32::MAX);
    let settlement = settle(handler, event.clone()).await;
    check_outcomes(&settlement, "ack ack drop:undecodable");
    let RecordOutcome::Dropped(DropReason::Undecodable(undecodable)) = settlement.outcome(2) else {
        panic!("{:?}", settlement.outcome(2));
    };
    assert_eq!(undecodable.sub_sequence_number, Some(2));
    assert!(
        undecodable.to_string().starts_with(&format!(
            "user record 2 of record {} of shardId-000000000000: data does not decode as the handler's type",
            event.sequence_number(0)
        )),
        "{undecodable}"
    );
}

#[tokio::test]
async fn a_batch_handler_gets_the_user_records() {
    let event = TestEvent::new().json(&7).aggregate(&numbers(0, 3));
    let seen = Calls::default();
    let handler = {
        let seen = seen.clone();
        move |numbers: &[u32]| {
            seen.push(numbers.to_vec());
            std::future::ready(HandlerOutcome::ack())
        }
    };
    let settlement = settle(handler, event).await;
    check_outcomes(&settlement, "ack ack ack ack");
    assert_eq!(seen.taken(), [vec![7, 0, 1, 2]]);
}

#[tokio::test]
async fn lanes_follow_the_user_records_partition_keys() {
    // Two keys inside one aggregate: the held key's lane stops, the other goes on, and the
    // response still names the aggregate.
    let mut aggregate = Aggregate::new();
    for (key, n) in [("a", 1), ("b", 2), ("a", 3), ("b", 4)] {
        aggregate.add(key, None, n.to_string().as_bytes());
    }
    let event = TestEvent::new().aggregate(&aggregate);
    let (_, handler) = holding(1);
    let settlement = KinesisAdapter::new(handler)
        .per_key_lanes(4)
        .settle(KinesisBatch::from(&event), &Default::default())
        .await;
    check_outcomes(&settlement, "hold ack skip ack");
    assert_eq!(settlement.cut(), Some(event.cut_at(0)));
    assert_eq!(settlement.redelivered().count(), 4);
}
