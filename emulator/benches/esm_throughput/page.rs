//! What an open live page costs the mapping (`docs/live-page.md`): the in-process throughput on
//! one shard of 8 (BatchSize 100), with and without a client subscribed to the page's event
//! stream.
//!
//! The page is served as `run` serves it (`serve_with_page`, on loopback), and the subscriber is
//! an HTTP client reading `GET /page/events` to its end, as a browser's `EventSource` does; it
//! counts the `status` events it got, to show the page was fed. The runs with and without it
//! alternate, so both meet the same machine; the figure is the ratio of the medians.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::invoke::InProcess;
use kinesis_esm::kinesis::EmbeddedKinesis;
use kinesis_esm::kinesis::http::serve_with_page;
use kinesis_esm::mapping::EventSourceMapping;
use kinesis_esm::page::{LivePage, PageActions, Reshard};

use super::{CpuSample, FUNCTION, FUNCTION_TIMEOUT, RUN_LIMIT, all_checkpointed, fill, si};

const STREAM: &str = "shipments-page";
const SHARDS: u32 = 8;
const BATCH_SIZE: usize = 100;
/// What a subscribed page may cost at most (issue 18): 5% of the throughput.
const TARGET_RATIO: f64 = 0.95;

/// The bench takes no action from the page.
struct NoActions;

#[async_trait]
impl PageActions for NoActions {
    async fn put(&self, _: &str, _: &str, _: Vec<u8>) -> anyhow::Result<String> {
        anyhow::bail!("the bench publishes nothing from the page")
    }

    async fn reshard(&self, _: &str, _: Reshard) -> anyhow::Result<()> {
        anyhow::bail!("the bench reshards nothing from the page")
    }
}

pub(super) async fn compare(records: usize, runs: usize) {
    let records = records.min(200_000);
    let kinesis = EmbeddedKinesis::new();
    let last = fill(&kinesis, STREAM, SHARDS, records);
    println!(
        "\n{STREAM}: {records} shipments in {SHARDS} shards, in process, BatchSize {BATCH_SIZE}; \
         with a client subscribed to the live page's event stream against without"
    );
    let mut rates: HashMap<bool, Vec<f64>> = HashMap::new();
    let mut status_events = Vec::new();
    let load = CpuSample::take();
    for _ in 0..runs {
        for subscribed in [false, true] {
            let page = LivePage::new(Arc::new(kinesis.clone()), Arc::new(NoActions));
            let server = serve_with_page(
                None,
                "127.0.0.1:0".parse().expect("an address"),
                Vec::new(),
                page.router(),
            )
            .await
            .expect("the page is served");
            let received = Arc::new(AtomicU64::new(0));
            let subscriber = subscribed.then(|| {
                tokio::spawn(subscribe(
                    format!("{}/page/events", server.endpoint_url()),
                    Arc::clone(&received),
                ))
            });
            let mut config = MappingConfig::new(FUNCTION, STREAM, StartingPosition::TrimHorizon);
            config.batch_size = BATCH_SIZE;
            config.report_batch_item_failures = true;
            config.function_timeout = FUNCTION_TIMEOUT;
            let started = Instant::now();
            let mapping = EventSourceMapping::new(
                config.clone(),
                Arc::new(kinesis.clone()),
                Arc::new(InProcess::service(shipping::function())),
            )
            .start();
            page.show(&config, mapping.status_receiver());
            let checkpointed = tokio::time::timeout(
                RUN_LIMIT,
                mapping.wait_for(|status| all_checkpointed(status, &last)),
            )
            .await;
            let elapsed = started.elapsed();
            let status = mapping.stop().await;
            assert!(
                checkpointed.is_ok(),
                "subscribed {subscribed}: not every record was checkpointed within {RUN_LIMIT:?}"
            );
            let totals = status.totals();
            assert_eq!(
                (totals.acked, totals.delivered, totals.retries),
                (records as u64, records as u64, 0),
                "subscribed {subscribed}: every shipment is delivered once and acked"
            );
            if let Some(subscriber) = subscriber {
                subscriber.abort();
                let events = received.load(Ordering::Relaxed);
                assert!(events > 0, "the subscribed page got no status event");
                status_events.push(events);
            }
            server.stop().await;
            rates
                .entry(subscribed)
                .or_default()
                .push(records as f64 / elapsed.as_secs_f64());
        }
    }
    let load = load.until_now();
    let median = |subscribed| {
        let mut rates = rates[&subscribed].clone();
        rates.sort_by(f64::total_cmp);
        rates[rates.len() / 2]
    };
    println!(
        "  no page:         median {} records/s over {runs} runs",
        si(median(false))
    );
    println!(
        "  page subscribed: median {} records/s over {runs} runs ({:?} status events per run)",
        si(median(true)),
        status_events
    );
    let ratio = median(true) / median(false);
    println!("  subscribed / none = {ratio:.3} (target at least {TARGET_RATIO:.2})\n    {load}");
}

/// Reads the event stream at `url` until aborted, counting its `status` events.
async fn subscribe(url: String, received: Arc<AtomicU64>) {
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let uri: hyper::Uri = url.parse().expect("a URL");
    let response = client.get(uri).await.expect("the event stream answers");
    let mut body = response.into_body();
    while let Some(Ok(frame)) = body.frame().await {
        if let Some(data) = frame.data_ref() {
            let events = data
                .windows(b"event: status".len())
                .filter(|window| *window == b"event: status")
                .count();
            received.fetch_add(events as u64, Ordering::Relaxed);
        }
    }
}
