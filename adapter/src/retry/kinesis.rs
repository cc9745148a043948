//! Envelopes sent to Kinesis through a [`Publisher`], its client made on first use the SDK's
//! standard way (or given), so that an adapter's options stay synchronous.

use std::future::Future;
use std::pin::Pin;

use tokio::sync::OnceCell;

use super::envelope::Envelope;
use super::route::SendEnvelope;
use crate::publish::Publisher;

/// Publishes envelopes with the publisher's defaults (5 attempts, backoff to 2 s); the engine
/// leaves a record it cannot publish held, and Lambda delivers it again.
pub(crate) struct KinesisSender {
    client: OnceCell<aws_sdk_kinesis::Client>,
}

impl KinesisSender {
    pub(crate) fn from_env() -> Self {
        Self {
            client: OnceCell::new(),
        }
    }

    pub(crate) fn with_client(client: aws_sdk_kinesis::Client) -> Self {
        Self {
            client: OnceCell::new_with(Some(client)),
        }
    }

    async fn client(&self) -> &aws_sdk_kinesis::Client {
        self.client
            .get_or_init(|| async {
                let config = aws_config::load_from_env().await;
                aws_sdk_kinesis::Client::new(&config)
            })
            .await
    }
}

impl SendEnvelope for KinesisSender {
    fn send<'a>(
        &'a self,
        stream: &'a str,
        partition_key: &'a str,
        envelope: &'a Envelope,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(async move {
            let publisher: Publisher<Envelope> =
                Publisher::with_client(self.client().await.clone(), stream);
            publisher
                .publish_one(partition_key, envelope)
                .await
                .map(|_| ())
                .map_err(|unpublished| unpublished.to_string())
        })
    }
}
