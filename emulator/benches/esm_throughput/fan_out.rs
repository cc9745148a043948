//! Put-to-handler latency through an enhanced fan-out consumer against polling, in the same
//! run, with the handler in process (`ESM_BENCH_VIA=fan-out` runs it alone):
//!
//! - on the embedded Kinesis: its polling source (whose reader is woken by a put) against a
//!   `FanOutSource` subscribed in process (`LocalFanOut`);
//! - over its endpoint, as `--kinesis-endpoint` reads: `SdkKinesis` polling with `GetRecords`
//!   (Lambda's once-a-second poll when idle, at most 5 reads a second) against a
//!   `FanOutSource` subscribed through `aws-sdk-kinesis` (`SdkSubscriber`).
//!
//! Each case puts single shipments into a fresh one-shard stream and reports medians and p99
//! of each stage ([`super::report_latency`]), then the ratio of the handler's medians.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use kinesis_esm::aws::{SdkKinesis, SdkSubscriber};
use kinesis_esm::invoke::{InProcess, Invoker};
use kinesis_esm::kinesis::EmbeddedKinesis;
use kinesis_esm::kinesis::http::{self, LocalFanOut};
use kinesis_esm::source::ShardSource;
use kinesis_esm::source::fan_out::FanOutSource;
use lambda_kinesis::HandlerOutcome;
use shipping::Shipment;
use tokio::sync::mpsc;

use super::{CpuSample, create_stream, measure_latency_from, report_latency};

/// Puts measured on the embedded Kinesis, where each takes about a millisecond.
const IN_PROCESS_ROUNDS: usize = 500;
/// Puts measured over the endpoint: polling there waits up to a second for each.
const ENDPOINT_ROUNDS: usize = 40;

static SEEN: OnceLock<mpsc::UnboundedSender<(u64, Instant)>> = OnceLock::new();

async fn ship_and_tell(shipment: &Shipment) -> HandlerOutcome {
    let seen = Instant::now();
    if let Some(tell) = SEEN.get() {
        let _ = tell.send((shipment.id, seen));
    }
    shipping::ship(&shipping::Carriers, shipment).await
}

/// What every case shares: the stream's Kinesis, the handler, and where it tells what it saw.
struct Measurer<'a> {
    kinesis: &'a EmbeddedKinesis,
    invoker: Arc<dyn Invoker>,
    seen: &'a mut mpsc::UnboundedReceiver<(u64, Instant)>,
}

impl Measurer<'_> {
    /// Measures `rounds` puts into `stream` read through `source`, prints their latency and
    /// the load meanwhile, and gives the handler's median.
    async fn measure(
        &mut self,
        name: &str,
        stream: &str,
        source: Arc<dyn ShardSource>,
        rounds: usize,
    ) -> Duration {
        let load = CpuSample::take();
        let latencies = measure_latency_from(
            self.kinesis,
            stream,
            source,
            Arc::clone(&self.invoker),
            self.seen,
            rounds,
        )
        .await;
        let load = load.until_now();
        report_latency(name, "the handler sees it", &latencies);
        println!("    {load}");
        crate::support::median(latencies.handler)
    }
}

pub(crate) async fn compare() {
    let (tell, mut seen) = mpsc::unbounded_channel();
    SEEN.set(tell).expect("the channel is set once");
    let kinesis = EmbeddedKinesis::new();
    let invoker = Arc::new(InProcess::handler(ship_and_tell));
    let fan_out = LocalFanOut::new(kinesis.clone());

    println!("\nLatency from put_record through an enhanced fan-out consumer against polling:");
    let mut measurer = Measurer {
        kinesis: &kinesis,
        invoker,
        seen: &mut seen,
    };
    let mut medians = Vec::new();
    for (name, efo) in [("embedded, polling", false), ("embedded, fan-out", true)] {
        let stream = if efo { "latency-efo" } else { "latency-poll" };
        create_stream(&kinesis, stream);
        let source: Arc<dyn ShardSource> = if efo {
            let arn = fan_out
                .ensure_consumer(stream, "bench")
                .await
                .expect("the consumer registers");
            Arc::new(FanOutSource::new(
                Arc::new(kinesis.clone()),
                Arc::new(fan_out.clone()),
                arn,
            ))
        } else {
            Arc::new(kinesis.clone())
        };
        medians.push(
            measurer
                .measure(name, stream, source, IN_PROCESS_ROUNDS)
                .await,
        );
    }

    let server = http::serve(kinesis.clone(), "127.0.0.1:0".parse().unwrap())
        .await
        .expect("the endpoint starts");
    let sdk = Arc::new(
        SdkKinesis::new(Some(&server.endpoint_url()), "us-east-1")
            .await
            .expect("an SDK client"),
    );
    for (name, efo) in [("endpoint, polling", false), ("endpoint, fan-out", true)] {
        let stream = if efo {
            "latency-sdk-efo"
        } else {
            "latency-sdk-poll"
        };
        create_stream(&kinesis, stream);
        let source: Arc<dyn ShardSource> = if efo {
            let subscriber = SdkSubscriber::new(Arc::clone(&sdk));
            let arn = subscriber
                .ensure_consumer(stream, "bench", true)
                .await
                .expect("the consumer registers");
            Arc::new(FanOutSource::new(
                Arc::clone(&sdk) as Arc<dyn ShardSource>,
                Arc::new(subscriber),
                arn,
            ))
        } else {
            Arc::clone(&sdk) as Arc<dyn ShardSource>
        };
        medians.push(
            measurer
                .measure(name, stream, source, ENDPOINT_ROUNDS)
                .await,
        );
    }
    server.stop().await;
    println!(
        "  ratio of the handler's medians, polling / fan-out: embedded {:.2}x, endpoint {:.1}x",
        medians[0].as_secs_f64() / medians[1].as_secs_f64(),
        medians[2].as_secs_f64() / medians[3].as_secs_f64()
    );
}
