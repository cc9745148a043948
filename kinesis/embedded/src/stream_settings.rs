//! A stream's settings ([`crate::settings`]) as the embedded Kinesis applies them: each change
//! checked by the settings' rules, kept in the journal, then made, under the settings' lock so
//! that two changes of one stream are kept in the order they are made.

use kinesis_source::SourceError;

use crate::embedded::{EmbeddedKinesis, not_kept};
use crate::journal::{Change, Journal};
use crate::settings::{MetricSet, RecordDistribution, SettingChange, StreamFacts, StreamSettings};
use crate::stream::Stream;

impl EmbeddedKinesis {
    /// The stream's settings: its maximum record size, enhanced monitoring, encryption and
    /// warm throughput (`DescribeStreamSummary`).
    pub fn stream_settings(&self, stream: &str) -> Result<StreamSettings, SourceError> {
        Ok(self.stream(stream)?.settings().clone())
    }

    /// The `EncryptionType` the stream's writes answer: `KMS` once `StartStreamEncryption`
    /// named a key, else `NONE`.
    pub(crate) fn encryption_type(&self, stream: &str) -> Result<&'static str, SourceError> {
        let encrypted = self.stream(stream)?.settings().encryption_key_id.is_some();
        Ok(if encrypted { "KMS" } else { "NONE" })
    }

    /// `UpdateMaxRecordSize`: records of up to `kib` KiB (1024 to 10240), data and partition
    /// key together. The stream shows `UPDATING` for the status delay.
    pub fn update_max_record_size(&self, stream: &str, kib: u32) -> Result<(), SourceError> {
        self.change_setting(
            stream,
            &SettingChange::MaxRecordSize(kib),
            "UpdateMaxRecordSize",
        )
    }

    /// `EnableEnhancedMonitoring` (`enable`) or `DisableEnhancedMonitoring` of `metrics`; the
    /// metrics enabled before and after. Nothing is measured: the metrics are only named.
    pub(crate) fn change_enhanced_monitoring(
        &self,
        stream: &str,
        metrics: MetricSet,
        enable: bool,
    ) -> Result<(StreamSettings, StreamSettings), SourceError> {
        let before = self.stream_settings(stream)?;
        let (change, operation) = if enable {
            (
                SettingChange::EnableMetrics(metrics),
                "EnableEnhancedMonitoring",
            )
        } else {
            (
                SettingChange::DisableMetrics(metrics),
                "DisableEnhancedMonitoring",
            )
        };
        self.change_setting(stream, &change, operation)?;
        Ok((before, self.stream_settings(stream)?))
    }

    /// `StartStreamEncryption` with `key_id` (`Some`) or `StopStreamEncryption`. Records are
    /// not encrypted: the key is only named.
    pub fn set_stream_encryption(
        &self,
        stream: &str,
        key_id: Option<String>,
    ) -> Result<(), SourceError> {
        match key_id {
            Some(key_id) => self.change_setting(
                stream,
                &SettingChange::StartEncryption(key_id),
                "StartStreamEncryption",
            ),
            None => self.change_setting(
                stream,
                &SettingChange::StopEncryption,
                "StopStreamEncryption",
            ),
        }
    }

    /// `UpdateStreamWarmThroughput`: an `ON_DEMAND` stream's warm throughput, in MiB/s. It is
    /// shown, not provided: the stream scales as it does without it.
    pub fn update_stream_warm_throughput(
        &self,
        stream: &str,
        mibps: u32,
    ) -> Result<(), SourceError> {
        self.change_setting(
            stream,
            &SettingChange::WarmThroughput(mibps),
            "UpdateStreamWarmThroughput",
        )
    }

    /// Sets what `CreateStream` asked beside the shards (`MaxRecordSizeInKiB`,
    /// `WarmThroughputMiBps`) on the stream it just created, whatever its status.
    pub(crate) fn set_at_creation(
        &self,
        stream: &str,
        change: &SettingChange,
    ) -> Result<(), SourceError> {
        let found = self.stream(stream)?;
        self.apply_setting(&found, change, &*self.inner.journal, "CreateStream")
    }

    /// `UpdateStreamRecordDistributionStrategy`: how an `ON_DEMAND` stream places records.
    pub fn set_record_distribution(
        &self,
        stream: &str,
        distribution: RecordDistribution,
    ) -> Result<(), SourceError> {
        self.change_setting(
            stream,
            &SettingChange::Distribution(distribution),
            "UpdateStreamRecordDistributionStrategy",
        )
    }

    /// Makes `change` to an `ACTIVE` stream, which then shows `UPDATING` for the status delay.
    fn change_setting(
        &self,
        stream: &str,
        change: &SettingChange,
        operation: &str,
    ) -> Result<(), SourceError> {
        self.update(stream, |found| {
            self.apply_setting(found, change, &*self.inner.journal, operation)
        })
    }

    /// Checks `change` against the stream's settings, keeps the result in `journal`, then makes
    /// it. Used as the stream is created too, before it is `ACTIVE`.
    pub(crate) fn apply_setting(
        &self,
        stream: &Stream,
        change: &SettingChange,
        journal: &dyn Journal,
        operation: &str,
    ) -> Result<(), SourceError> {
        let described = stream.described();
        let facts = StreamFacts {
            described: &described,
            on_demand: self
                .inner
                .throughput
                .is_on_demand(&crate::throughput::key_of(stream)),
        };
        let mut settings = stream.settings();
        let changed = settings.changed(change, facts)?;
        if changed == *settings {
            return Ok(());
        }
        if journal.is_enabled() {
            let kept = Change::Settings {
                stream: stream.name.to_string(),
                generation: stream.generation,
                settings: changed.clone(),
            };
            journal
                .append(&kept.encode())
                .map_err(|error| not_kept(operation, &stream.name, &error))?;
        }
        *settings = changed;
        Ok(())
    }
}
