//! What an open live page costs the mapping (`docs/live-page.md`): the in-process mapping on
//! one stream of 8 shards (BatchSize 100), with and without a client subscribed to the page's
//! event stream.
//!
//! The page is served as `run` serves it (`serve_with_page`, on loopback), and the subscriber is
//! an HTTP client reading `GET /page/events` to its end, as a browser's `EventSource` does; it
//! counts the `status` events it got, to show the page was fed. It runs on a thread of its own
//! (with its own single-threaded tokio runtime), standing for the browser, which is another
//! process: its CPU time is not the mapping's.
//!
//! **The figure** is CPU time per record: the nanoseconds every other thread of this process
//! (the mapping, the page's server side, the bench's wait for the checkpoints) ran from the
//! mapping's start until every record was checkpointed, read from each thread's
//! `/proc/self/task/<tid>/schedstat`, divided by the records. Unlike records per second it
//! hardly moves with what else the machine runs. Runs with and without the subscriber come in
//! pairs, the order alternating from pair to pair; the ratio is the median over pairs of
//! `CPU per record without / CPU per record with` (records per CPU second, subscribed against
//! not), and the medians of each side and of the wall-clock throughput are printed beside it.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use kinesis_esm::config::{MappingConfig, StartingPosition};
use kinesis_esm::endpoint::serve_with_page;
use kinesis_esm::invoke::InProcess;
use kinesis_esm::kinesis::EmbeddedKinesis;
use kinesis_esm::mapping::EventSourceMapping;
use kinesis_esm::page::{LivePage, PageActions, Reshard};

use super::{
    CpuSample, FUNCTION, FUNCTION_TIMEOUT, RUN_LIMIT, all_checkpointed, check_delivered_once, fill,
    si,
};

const STREAM: &str = "shipments-page";
const SHARDS: u32 = 8;
const BATCH_SIZE: usize = 100;
/// The most records a run reads: enough for a run of a second or more, so that the page's
/// events (one per 200 ms) meet the mapping at work rather than its start.
const MAX_RECORDS: usize = 500_000;
/// What a subscribed page may cost at most (issue 18): 5% of the throughput.
const TARGET_RATIO: f64 = 0.95;
/// How long the subscriber may take to connect and get its first event.
const SUBSCRIBED_WITHIN: Duration = Duration::from_secs(10);

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

/// One run's figures.
struct Run {
    /// Records per second, wall clock.
    rate: f64,
    /// CPU nanoseconds per record of this process' threads, the subscriber's aside.
    cpu_ns_per_record: f64,
    /// Threads that ended during the run (their time is lost to the figure).
    threads_ended: usize,
}

pub(super) async fn compare(records: usize, runs: usize) {
    let records = records.min(MAX_RECORDS);
    let kinesis = EmbeddedKinesis::new();
    let last = fill(&kinesis, STREAM, SHARDS, records);
    println!(
        "\n{STREAM}: {records} shipments in {SHARDS} shards, in process, BatchSize {BATCH_SIZE}; \
         with a client subscribed to the live page's event stream against without, {runs} pairs \
         of runs"
    );
    let mut figures: HashMap<bool, Vec<Run>> = HashMap::new();
    let mut pair_ratios = Vec::new();
    let mut status_events = Vec::new();
    let load = CpuSample::take();
    for pair in 0..runs {
        let order = if pair % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for subscribed in order {
            let (run, events) = run_once(&kinesis, &last, records, subscribed).await;
            status_events.extend(events);
            figures.entry(subscribed).or_default().push(run);
        }
        let cpu = |subscribed: bool| figures[&subscribed][pair].cpu_ns_per_record;
        pair_ratios.push(cpu(false) / cpu(true));
    }
    let load = load.until_now();
    let median_of = |subscribed: bool, figure: fn(&Run) -> f64| {
        median(figures[&subscribed].iter().map(figure).collect())
    };
    let threads_ended: usize = figures
        .values()
        .flatten()
        .map(|run| run.threads_ended)
        .sum();
    for (subscribed, name) in [(false, "no page:        "), (true, "page subscribed:")] {
        println!(
            "  {name} median {:.0} ns CPU per record, {} records/s",
            median_of(subscribed, |run| run.cpu_ns_per_record),
            si(median_of(subscribed, |run| run.rate)),
        );
    }
    println!("    status events the subscriber got per run: {status_events:?}");
    let wall_ratio = median_of(true, |run| run.rate) / median_of(false, |run| run.rate);
    let mut sorted = pair_ratios.clone();
    sorted.sort_by(f64::total_cmp);
    println!(
        "  records per CPU second, subscribed / none = {:.3}, median of {runs} pairs \
         ({:.3}..{:.3}; target at least {TARGET_RATIO:.2}); wall clock {wall_ratio:.3}",
        median(pair_ratios),
        sorted[0],
        sorted[sorted.len() - 1],
    );
    if threads_ended > 0 {
        println!("    ({threads_ended} threads ended during runs: their CPU time is not counted)");
    }
    println!("    {load}");
}

/// The median of `values`.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// One run from `TRIM_HORIZON` to every shard's `last` record, with a page subscribed or not;
/// returns its figures and, if subscribed, how many status events the subscriber got.
async fn run_once(
    kinesis: &EmbeddedKinesis,
    last: &HashMap<String, kinesis_esm::sequence::SequenceNumber>,
    records: usize,
    subscribed: bool,
) -> (Run, Option<u64>) {
    let page = LivePage::new(Arc::new(kinesis.clone()), Arc::new(NoActions));
    let server = serve_with_page(
        None,
        "127.0.0.1:0".parse().expect("an address"),
        Vec::new(),
        page.router(),
    )
    .await
    .expect("the page is served");
    let subscriber =
        subscribed.then(|| Subscriber::start(format!("{}/page/events", server.endpoint_url())));
    if let Some(subscriber) = &subscriber {
        subscriber.wait_until_fed().await;
    }
    let mut config = MappingConfig::new(FUNCTION, STREAM, StartingPosition::TrimHorizon);
    config.batch_size = BATCH_SIZE;
    config.report_batch_item_failures = true;
    config.function_timeout = FUNCTION_TIMEOUT;
    let cpu = ThreadTimes::take();
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
        mapping.wait_for(|status| all_checkpointed(status, last)),
    )
    .await;
    let elapsed = started.elapsed();
    let (cpu_ns, threads_ended) =
        cpu.until_now(subscriber.as_ref().map(|subscriber| subscriber.thread_id));
    let status = mapping.stop().await;
    assert!(
        checkpointed.is_ok(),
        "subscribed {subscribed}: not every record was checkpointed within {RUN_LIMIT:?}"
    );
    check_delivered_once(&status, records, &format!("subscribed {subscribed}"));
    if let Some(subscriber) = &subscriber {
        // The page sends a status event at most every `COALESCE` (200 ms), and a run can end
        // sooner: the run's last status reaches the page after it. Outside the measured time.
        subscriber.wait_for_events(2).await;
    }
    let events = subscriber.map(|subscriber| {
        let events = subscriber.stop();
        // The first came before the mapping started.
        assert!(
            events > 1,
            "the subscribed page got no status event during the run"
        );
        events
    });
    server.stop().await;
    let run = Run {
        rate: records as f64 / elapsed.as_secs_f64(),
        cpu_ns_per_record: cpu_ns as f64 / records as f64,
        threads_ended,
    };
    (run, events)
}

/// The CPU time of each thread of this process so far, by thread id, from
/// `/proc/self/task/<tid>/schedstat` (its first field: nanoseconds on a CPU).
struct ThreadTimes(HashMap<u32, u64>);

impl ThreadTimes {
    fn take() -> Self {
        let times = std::fs::read_dir("/proc/self/task")
            .expect("/proc/self/task lists this process' threads")
            .flatten()
            .filter_map(|entry| {
                let tid = entry.file_name().to_string_lossy().parse().ok()?;
                Some((tid, thread_cpu_ns(&entry.path().join("schedstat"))?))
            })
            .collect();
        Self(times)
    }

    /// The CPU nanoseconds every thread but `except` ran since `self` was taken (a thread
    /// started since counts whole), and how many threads ended meanwhile.
    fn until_now(self, except: Option<u32>) -> (u64, usize) {
        let now = Self::take();
        let ended = self.0.keys().filter(|tid| !now.0.contains_key(tid)).count();
        let ran = now
            .0
            .iter()
            .filter(|(tid, _)| Some(**tid) != except)
            .map(|(tid, ns)| ns.saturating_sub(self.0.get(tid).copied().unwrap_or(0)))
            .sum();
        (ran, ended)
    }
}

fn thread_cpu_ns(schedstat: &std::path::Path) -> Option<u64> {
    std::fs::read_to_string(schedstat)
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A client of the page's event stream on a thread of its own, as a browser in another process.
struct Subscriber {
    thread_id: u32,
    received: Arc<AtomicU64>,
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Subscriber {
    fn start(url: String) -> Self {
        let received = Arc::new(AtomicU64::new(0));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (tell_id, thread_id) = std::sync::mpsc::channel();
        let counted = Arc::clone(&received);
        let thread = std::thread::spawn(move || {
            let _ = tell_id.send(own_thread_id());
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime");
            runtime.block_on(async move {
                tokio::select! {
                    () = subscribe(url, counted) => {}
                    _ = stopped => {}
                }
            });
        });
        Self {
            thread_id: thread_id.recv().expect("the subscriber's thread starts"),
            received,
            stop,
            thread,
        }
    }

    /// Waits for the first status event: the page is open before the mapping starts.
    async fn wait_until_fed(&self) {
        let deadline = Instant::now() + SUBSCRIBED_WITHIN;
        while self.received.load(Ordering::Relaxed) == 0 {
            assert!(
                Instant::now() < deadline,
                "the subscriber got no status event within {SUBSCRIBED_WITHIN:?}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Waits until it got `count` status events, or a second passes.
    async fn wait_for_events(&self, count: u64) {
        let deadline = Instant::now() + Duration::from_secs(1);
        while self.received.load(Ordering::Relaxed) < count && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Stops it; returns how many status events it got.
    fn stop(self) -> u64 {
        let _ = self.stop.send(());
        self.thread.join().expect("the subscriber's thread ends");
        self.received.load(Ordering::Relaxed)
    }
}

/// The calling thread's id, as `/proc/self/task` names it.
fn own_thread_id() -> u32 {
    std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|path| path.file_name()?.to_str()?.parse().ok())
        .expect("/proc/thread-self names this thread")
}

/// Reads the event stream at `url` until it ends, counting its `status` events.
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
