//! The journal's encoding read back, and restores through it.

use super::*;

#[track_caller]
fn check_round_trip(change: Change) {
    let encoded = change.encode();
    assert_eq!(Change::decode(&encoded), Ok(change.clone()));
    // Any cut of the bytes is refused, never misread.
    for cut in 0..encoded.len() {
        assert!(
            Change::decode(&encoded[..cut]).is_err(),
            "{change:?} cut at {cut}"
        );
    }
}

#[test]
fn every_change_reads_back() {
    let stream = "orders".to_owned();
    check_round_trip(Change::CreateStream {
        name: stream.clone(),
        created: SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789),
        generation: 3,
        shard_count: 4,
        retention: Duration::from_secs(86_400),
        on_demand: false,
    });
    check_round_trip(Change::CreateStream {
        name: stream.clone(),
        created: SystemTime::UNIX_EPOCH,
        generation: 4,
        shard_count: 4,
        retention: Duration::from_secs(86_400),
        on_demand: true,
    });
    check_round_trip(Change::StreamMode {
        stream: stream.clone(),
        generation: 4,
        on_demand: true,
    });
    check_round_trip(Change::DeleteStream {
        name: stream.clone(),
        generation: 3,
    });
    check_round_trip(Change::Put {
        stream: stream.clone(),
        generation: 3,
        now_ms: 1_700_000_000_123,
        records: vec![
            (u128::MAX, PutRecordsEntry::new("k1", "{}")),
            (7, PutRecordsEntry::new("ключ", vec![0_u8, 255, 1])),
        ],
    });
    check_round_trip(Change::Split {
        stream: stream.clone(),
        generation: 3,
        now_ms: 5,
        shard_id: "shardId-000000000001".into(),
        new_starting_hash_key: 1 << 127,
    });
    check_round_trip(Change::Merge {
        stream: stream.clone(),
        generation: 3,
        now_ms: 5,
        shard_id: "shardId-000000000001".into(),
        adjacent_shard_id: "shardId-000000000002".into(),
    });
    check_round_trip(Change::Scale {
        stream: stream.clone(),
        generation: 3,
        now_ms: 5,
        target_shard_count: 8,
    });
    check_round_trip(Change::Retention {
        stream,
        generation: 3,
        hours: 48,
        increase: true,
    });
}

#[test]
fn settings_tags_and_the_account_read_back() {
    let stream = "orders".to_owned();
    check_round_trip(Change::Settings {
        stream: stream.clone(),
        generation: 3,
        settings: StreamSettings::default(),
    });
    let mut settings = StreamSettings {
        max_record_size_kib: 10240,
        encryption_key_id: Some("alias/aws/kinesis".into()),
        warm_throughput_mibps: Some(0),
        record_distribution: RecordDistribution::Auto,
        ..StreamSettings::default()
    };
    settings.enhanced_metrics = MetricSet::of(crate::settings::ShardMetric::EVERY);
    check_round_trip(Change::Settings {
        stream: stream.clone(),
        generation: 3,
        settings,
    });
    check_round_trip(Change::Tags {
        stream: stream.clone(),
        generation: 3,
        tags: [("team", "orders"), ("empty", "")]
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value.to_owned()))
            .collect(),
    });
    for commitment in [
        Commitment::Never,
        Commitment::Enabled { started_ms: 5 },
        Commitment::EndingAtEarliest { started_ms: 6 },
        Commitment::Ended {
            started_ms: 7,
            ended_ms: 8,
        },
    ] {
        check_round_trip(Change::Account { commitment });
    }
}

/// A journal that keeps changes in memory and refuses them once told to.
#[derive(Debug, Default)]
struct Failing {
    kept: std::sync::Mutex<Vec<Vec<u8>>>,
    refuse: std::sync::atomic::AtomicBool,
}

impl Journal for Failing {
    fn is_enabled(&self) -> bool {
        true
    }

    fn append(&self, change: &[u8]) -> Result<(), JournalError> {
        if self.refuse.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(JournalError("disk full".into()));
        }
        self.kept.lock().unwrap().push(change.to_vec());
        Ok(())
    }
}

#[test]
fn a_change_the_journal_refuses_is_not_applied() {
    let journal = std::sync::Arc::new(Failing::default());
    let kinesis = super::super::EmbeddedKinesis::builder()
        .journal(journal.clone())
        .build();
    kinesis.create_stream("orders", 1).unwrap();
    kinesis
        .put_record("orders", PutRecordsEntry::new("k", "kept"))
        .unwrap();
    journal
        .refuse
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let error = kinesis
        .put_record("orders", PutRecordsEntry::new("k", "refused"))
        .unwrap_err();
    assert!(error.to_string().contains("disk full"), "{error}");
    assert!(
        kinesis
            .split_shard("orders", "shardId-000000000000", "5")
            .is_err()
    );
    assert!(kinesis.delete_stream("orders").is_err());
    assert_eq!(kinesis.list_shards("orders").unwrap().len(), 1);

    // What the journal kept replays to what the Kinesis held: one stream, one record.
    let replayed = super::super::EmbeddedKinesis::new();
    let kept = journal.kept.lock().unwrap().clone();
    assert_eq!(replayed.restore(kept.iter().map(Vec::as_slice)), Ok(2));
    let iterator = replayed
        .get_shard_iterator(
            "orders",
            "shardId-000000000000",
            &kinesis_source::IteratorPosition::TrimHorizon,
        )
        .unwrap();
    let read = replayed.get_records(&iterator, 10).unwrap();
    assert_eq!(read.records.len(), 1);
    assert_eq!(read.records[0].data, "kept");
}

/// A `CreateStream` as journals held it before the stream mode was kept, byte for byte:
/// it still reads, as a `PROVISIONED` stream.
#[test]
fn a_creation_journaled_before_the_mode_was_kept_reads_as_provisioned() {
    let mut old = vec![CREATE];
    old.extend_from_slice(&1_u32.to_le_bytes());
    old.push(b's');
    old.extend_from_slice(&1_700_000_000_u64.to_le_bytes());
    old.extend_from_slice(&5_u32.to_le_bytes());
    old.extend_from_slice(&2_u64.to_le_bytes());
    old.extend_from_slice(&3_u32.to_le_bytes());
    old.extend_from_slice(&86_400_u64.to_le_bytes());
    old.extend_from_slice(&0_u32.to_le_bytes());
    assert_eq!(
        Change::decode(&old),
        Ok(Change::CreateStream {
            name: "s".into(),
            created: SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 5),
            generation: 2,
            shard_count: 3,
            retention: Duration::from_secs(86_400),
            on_demand: false,
        })
    );
}

/// A stream's mode, made `ON_DEMAND` at its creation or later and switched back, is kept
/// through a restore; without the journal it was lost, and every stream came back
/// `PROVISIONED`.
#[test]
fn a_restore_keeps_each_stream_mode() {
    let journal = std::sync::Arc::new(Failing::default());
    let kinesis = super::super::EmbeddedKinesis::builder()
        .journal(journal.clone())
        .build();
    kinesis.create_on_demand_stream("born", 4).unwrap();
    kinesis.create_stream("switched", 1).unwrap();
    kinesis.set_on_demand("switched", true).unwrap();
    kinesis.create_stream("back", 1).unwrap();
    kinesis.set_on_demand("back", true).unwrap();
    kinesis.set_on_demand("back", false).unwrap();
    kinesis.create_stream("plain", 1).unwrap();
    // Asking for the mode a stream has already changes nothing and keeps nothing.
    let kept_before = journal.kept.lock().unwrap().len();
    kinesis.set_on_demand("born", true).unwrap();
    assert_eq!(journal.kept.lock().unwrap().len(), kept_before);

    let replayed = super::super::EmbeddedKinesis::new();
    let kept = journal.kept.lock().unwrap().clone();
    replayed.restore(kept.iter().map(Vec::as_slice)).unwrap();
    let modes: Vec<(&str, bool)> = ["born", "switched", "back", "plain"]
        .into_iter()
        .map(|name| (name, replayed.is_on_demand(name).unwrap()))
        .collect();
    assert_eq!(
        modes,
        [
            ("born", true),
            ("switched", true),
            ("back", false),
            ("plain", false)
        ]
    );
    assert_eq!(replayed.list_shards("born").unwrap().len(), 4);
}

#[test]
fn unknown_kinds_and_trailing_bytes_are_refused() {
    assert_eq!(
        Change::decode(&[99]),
        Err("unknown change kind 99".to_owned())
    );
    let mut encoded = Change::DeleteStream {
        name: "s".into(),
        generation: 0,
    }
    .encode();
    encoded.push(0);
    assert_eq!(
        Change::decode(&encoded),
        Err("1 bytes left over after the change".to_owned())
    );
}
