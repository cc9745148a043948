//! Which source a mapping of `kinesis-esm run` reads: the run's own (`GetRecords`), or, when
//! its event names a stream consumer, a [`FanOutSource`] subscribed through it (Lambda's
//! enhanced fan-out mode, `docs/event-source-mapping.md` §10). A consumer the template
//! declares is registered where it is missing; one named only by its ARN must exist.

use std::sync::Arc;

use anyhow::bail;

use super::streams::Streams;
use esm_engine::aws::SdkSubscriber;
use esm_engine::config::MappingConfig;
use esm_engine::fan_out_source::FanOutSource;
use kinesis_source::ShardSource;

impl Streams {
    /// The source `config`'s readers read: `source` itself, or the consumer its event names
    /// over it.
    pub(super) async fn mapping_source(
        &self,
        config: &MappingConfig,
        source: &Arc<dyn ShardSource>,
    ) -> anyhow::Result<Arc<dyn ShardSource>> {
        let Some(consumer) = &config.consumer else {
            return Ok(Arc::clone(source));
        };
        let stream = &config.stream_name;
        let fan_out = match self {
            Self::Embedded(_, fan_out) => {
                if !consumer.declared {
                    bail!(
                        "consumer {} (named by its ARN) is not registered on the embedded \
                         Kinesis, which starts with none: declare it as an \
                         AWS::Kinesis::StreamConsumer (ConsumerName: {}, StreamARN: the \
                         stream's ARN) and name it with !GetAtt X.ConsumerARN",
                        consumer.name,
                        consumer.name
                    );
                }
                let arn = fan_out.ensure_consumer(stream, &consumer.name).await?;
                FanOutSource::new(Arc::clone(source), Arc::new(fan_out.clone()), arn)
            }
            Self::Sdk(kinesis) => {
                let subscriber = SdkSubscriber::new(Arc::clone(kinesis));
                let arn = subscriber
                    .ensure_consumer(stream, &consumer.name, consumer.declared)
                    .await?;
                FanOutSource::new(Arc::clone(source), Arc::new(subscriber), arn)
            }
        };
        tracing::info!(
            function = %config.function_name,
            %stream,
            consumer = %fan_out.consumer_arn(),
            "reading through the consumer (enhanced fan-out): records are pushed by SubscribeToShard"
        );
        Ok(Arc::new(fan_out))
    }
}
