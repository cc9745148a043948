//! Stream consumers (enhanced fan-out) and their subscriptions, as pure rules: the caller says
//! what time it is. A consumer is `CREATING` for the status delay after `RegisterStreamConsumer`,
//! then `ACTIVE`; `DELETING` for the delay after `DeregisterStreamConsumer`, then gone. A stream
//! holds at most [`MAX_CONSUMERS_PER_STREAM`]; a name is taken while its consumer exists, in any
//! state. A subscription (one consumer, one shard) refuses a second one within
//! [`RESUBSCRIBE_PAUSE_MS`] of the last; a later one replaces it. The rules and their sources
//! are in `docs/kinesis.md` ("Enhanced fan-out").

use std::collections::{BTreeMap, HashMap};
use std::time::SystemTime;

use super::StreamStatus;
use super::status::Transition;

/// How many consumers one stream may have registered ("You can register up to 20 consumers
/// per data stream", `RegisterStreamConsumer` in the API reference).
pub(crate) const MAX_CONSUMERS_PER_STREAM: usize = 20;

/// How long after a successful `SubscribeToShard` the same consumer and shard are refused
/// with `ResourceInUseException` ("within 5 seconds of a successful call", the API reference).
pub(crate) const RESUBSCRIBE_PAUSE_MS: u64 = 5_000;

/// One registered consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Consumer {
    pub(crate) name: String,
    /// `<stream ARN>/consumer/<name>:<creation time in epoch seconds>`.
    pub(crate) arn: String,
    pub(crate) stream_arn: String,
    pub(crate) created: SystemTime,
    transition: Option<Transition>,
}

impl Consumer {
    /// `CREATING`, `ACTIVE` or `DELETING` at `now_ms`.
    pub(crate) fn status_at(&self, now_ms: u64) -> StreamStatus {
        Transition::status_at(self.transition, now_ms)
    }

    fn is_gone(&self, now_ms: u64) -> bool {
        Transition::is_deleted(self.transition, now_ms)
    }
}

/// Why a registry call was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The stream has a consumer of that name already (`ResourceInUseException`).
    NameTaken,
    /// The stream has [`MAX_CONSUMERS_PER_STREAM`] consumers (`LimitExceededException`).
    TooMany,
    /// No such consumer (`ResourceNotFoundException`).
    NotFound,
    /// The consumer is not `ACTIVE` (`ResourceInUseException`), in the status given.
    NotActive(StreamStatus),
    /// A subscription of this consumer to this shard began less than
    /// [`RESUBSCRIBE_PAUSE_MS`] ago (`ResourceInUseException`).
    SubscribedRecently,
}

/// The consumers of every stream, by the key the stream is known by (its name and creation
/// time, so that a stream created again starts with none), and the subscriptions made.
#[derive(Debug)]
pub(crate) struct Registry<K> {
    streams: HashMap<K, BTreeMap<String, Consumer>>,
    /// Per consumer ARN and shard: when its latest subscription began, and its number.
    subscriptions: HashMap<(String, String), (u64, u64)>,
    subscriptions_made: u64,
}

impl<K> Default for Registry<K> {
    fn default() -> Self {
        Self {
            streams: HashMap::new(),
            subscriptions: HashMap::new(),
            subscriptions_made: 0,
        }
    }
}

impl<K: std::hash::Hash + Eq + Clone> Registry<K> {
    /// Drops the consumers whose deregistration is over.
    fn forget_gone(&mut self, now_ms: u64) {
        for consumers in self.streams.values_mut() {
            consumers.retain(|_, consumer| !consumer.is_gone(now_ms));
        }
    }

    /// `RegisterStreamConsumer`.
    pub(crate) fn register(
        &mut self,
        stream: &K,
        stream_arn: &str,
        name: &str,
        now: SystemTime,
        delay_ms: u64,
    ) -> Result<Consumer, Refused> {
        let now_ms = super::clock::millis_floor(now);
        self.forget_gone(now_ms);
        let consumers = self.streams.entry(stream.clone()).or_default();
        if consumers.contains_key(name) {
            return Err(Refused::NameTaken);
        }
        if consumers.len() >= MAX_CONSUMERS_PER_STREAM {
            return Err(Refused::TooMany);
        }
        let seconds = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let consumer = Consumer {
            name: name.to_owned(),
            arn: format!("{stream_arn}/consumer/{name}:{seconds}"),
            stream_arn: stream_arn.to_owned(),
            created: now,
            transition: Transition::begin(StreamStatus::Creating, now_ms, delay_ms),
        };
        consumers.insert(name.to_owned(), consumer.clone());
        Ok(consumer)
    }

    /// The consumer of `stream` called `name`.
    pub(crate) fn by_name(&mut self, stream: &K, name: &str, now_ms: u64) -> Option<Consumer> {
        self.forget_gone(now_ms);
        self.streams.get(stream)?.get(name).cloned()
    }

    /// The consumer of `stream` with this ARN.
    pub(crate) fn by_arn(&mut self, stream: &K, arn: &str, now_ms: u64) -> Option<Consumer> {
        self.forget_gone(now_ms);
        self.streams
            .get(stream)?
            .values()
            .find(|consumer| consumer.arn == arn)
            .cloned()
    }

    /// Every consumer of `stream`, by name.
    pub(crate) fn list(&mut self, stream: &K, now_ms: u64) -> Vec<Consumer> {
        self.forget_gone(now_ms);
        self.streams
            .get(stream)
            .map(|consumers| consumers.values().cloned().collect())
            .unwrap_or_default()
    }

    /// `DeregisterStreamConsumer`: the consumer shows `DELETING` for the delay, then is gone;
    /// at once without a delay.
    pub(crate) fn deregister(
        &mut self,
        stream: &K,
        name: &str,
        now_ms: u64,
        delay_ms: u64,
    ) -> Result<(), Refused> {
        self.forget_gone(now_ms);
        let consumers = self.streams.get_mut(stream).ok_or(Refused::NotFound)?;
        let consumer = consumers.get_mut(name).ok_or(Refused::NotFound)?;
        match Transition::begin(StreamStatus::Deleting, now_ms, delay_ms) {
            Some(deleting) => consumer.transition = Some(deleting),
            None => {
                consumers.remove(name);
            }
        }
        Ok(())
    }

    /// Begins a subscription of `consumer` to `shard_id` at `now_ms`: its number, which
    /// [`is_current`](Self::is_current) compares to tell a replaced subscription to end.
    pub(crate) fn subscribe(
        &mut self,
        consumer: &Consumer,
        shard_id: &str,
        now_ms: u64,
    ) -> Result<u64, Refused> {
        match consumer.status_at(now_ms) {
            StreamStatus::Active => {}
            status => return Err(Refused::NotActive(status)),
        }
        let key = (consumer.arn.clone(), shard_id.to_owned());
        if let Some(&(began_ms, _)) = self.subscriptions.get(&key)
            && now_ms < began_ms.saturating_add(RESUBSCRIBE_PAUSE_MS)
        {
            return Err(Refused::SubscribedRecently);
        }
        self.subscriptions_made += 1;
        let number = self.subscriptions_made;
        self.subscriptions.insert(key, (now_ms, number));
        Ok(number)
    }

    /// Whether subscription `number` of `consumer_arn` to `shard_id` is still the latest, and
    /// its consumer still registered and not being deleted.
    pub(crate) fn is_current(
        &mut self,
        stream: &K,
        consumer_arn: &str,
        shard_id: &str,
        number: u64,
        now_ms: u64,
    ) -> bool {
        let latest = self
            .subscriptions
            .get(&(consumer_arn.to_owned(), shard_id.to_owned()))
            .is_some_and(|&(_, latest)| latest == number);
        latest
            && self
                .by_arn(stream, consumer_arn, now_ms)
                .is_some_and(|consumer| consumer.status_at(now_ms) == StreamStatus::Active)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const STREAM_ARN: &str = "arn:aws:kinesis:us-east-1:000000000000:stream/orders";

    fn at(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
    }

    #[test]
    fn a_consumer_is_creating_for_the_delay_then_active_and_named_by_its_arn() {
        let mut registry = Registry::<&str>::default();
        let consumer = registry
            .register(&"orders", STREAM_ARN, "fan", at(1_700_000_000_500), 2_000)
            .unwrap();
        assert_eq!(
            consumer.arn,
            format!("{STREAM_ARN}/consumer/fan:1700000000")
        );
        assert_eq!(
            consumer.status_at(1_700_000_000_500),
            StreamStatus::Creating
        );
        assert_eq!(consumer.status_at(1_700_000_002_500), StreamStatus::Active);
        let found = registry
            .by_arn(&"orders", &consumer.arn, 1_700_000_002_500)
            .unwrap();
        assert_eq!(found.name, "fan");
        assert_eq!(registry.by_arn(&"other", &consumer.arn, 0), None);
    }

    #[test]
    fn names_are_unique_per_stream_and_a_stream_holds_twenty() {
        let mut registry = Registry::<&str>::default();
        for number in 0..MAX_CONSUMERS_PER_STREAM {
            registry
                .register(&"orders", STREAM_ARN, &format!("c{number}"), at(0), 0)
                .unwrap();
        }
        assert_eq!(
            registry.register(&"orders", STREAM_ARN, "c3", at(0), 0),
            Err(Refused::NameTaken)
        );
        assert_eq!(
            registry.register(&"orders", STREAM_ARN, "one-more", at(0), 0),
            Err(Refused::TooMany)
        );
        // Another stream has its own twenty.
        assert!(
            registry
                .register(&"other", STREAM_ARN, "c3", at(0), 0)
                .is_ok()
        );
        registry.deregister(&"orders", "c3", 0, 0).unwrap();
        assert!(
            registry
                .register(&"orders", STREAM_ARN, "one-more", at(0), 0)
                .is_ok()
        );
    }

    #[test]
    fn a_deregistered_consumer_is_deleting_for_the_delay_then_gone() {
        let mut registry = Registry::<&str>::default();
        registry
            .register(&"orders", STREAM_ARN, "fan", at(0), 100)
            .unwrap();
        registry.deregister(&"orders", "fan", 1_000, 100).unwrap();
        let deleting = registry.by_name(&"orders", "fan", 1_050).unwrap();
        assert_eq!(deleting.status_at(1_050), StreamStatus::Deleting);
        // Its name stays taken while it is being deleted.
        assert_eq!(
            registry.register(&"orders", STREAM_ARN, "fan", at(1_050), 100),
            Err(Refused::NameTaken)
        );
        assert_eq!(registry.by_name(&"orders", "fan", 1_100), None);
        assert_eq!(
            registry.deregister(&"orders", "fan", 1_100, 100),
            Err(Refused::NotFound)
        );
    }

    #[test]
    fn a_second_subscription_within_five_seconds_is_refused_and_a_later_one_replaces_it() {
        let mut registry = Registry::<&str>::default();
        let consumer = registry
            .register(&"orders", STREAM_ARN, "fan", at(0), 1_000)
            .unwrap();
        assert_eq!(
            registry.subscribe(&consumer, "shardId-000000000000", 500),
            Err(Refused::NotActive(StreamStatus::Creating))
        );
        let first = registry
            .subscribe(&consumer, "shardId-000000000000", 1_000)
            .unwrap();
        assert_eq!(
            registry.subscribe(&consumer, "shardId-000000000000", 5_999),
            Err(Refused::SubscribedRecently)
        );
        // Another shard is another subscription.
        registry
            .subscribe(&consumer, "shardId-000000000001", 2_000)
            .unwrap();
        assert!(registry.is_current(
            &"orders",
            &consumer.arn,
            "shardId-000000000000",
            first,
            5_999
        ));
        let second = registry
            .subscribe(&consumer, "shardId-000000000000", 6_000)
            .unwrap();
        assert!(!registry.is_current(
            &"orders",
            &consumer.arn,
            "shardId-000000000000",
            first,
            6_000
        ));
        assert!(registry.is_current(
            &"orders",
            &consumer.arn,
            "shardId-000000000000",
            second,
            6_000
        ));
        registry.deregister(&"orders", "fan", 7_000, 1_000).unwrap();
        assert!(!registry.is_current(
            &"orders",
            &consumer.arn,
            "shardId-000000000000",
            second,
            7_000
        ));
    }
}
