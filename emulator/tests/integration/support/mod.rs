//! What the `aws_*` tests share: the local servers' endpoints, unique names, a fault-injecting
//! proxy (all from the workspace's `test-support` crate) and the lease store contract.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

pub(crate) mod lease_contract;

use std::time::Duration;

pub(crate) use test_support::fault_proxy;
pub(crate) use test_support::{dynamodb_endpoint, kinesis_endpoint, unique_name};

/// How long any one step of a test may take before the test fails.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// Logs to the test output when `RUST_LOG` is set, and always keeps what the Runtime API
/// invoker logs (the functions' forwarded lines among it) for [`runtime_api_log`].
///
/// One global subscriber: a scoped one (`set_default`) misses events on other threads, and
/// tracing's per-callsite cache can hide events from it altogether.
pub(crate) fn init_logging() {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let to_test_output = std::env::var_os("RUST_LOG").map(|_| {
            tracing_subscriber::fmt::layer()
                .with_test_writer()
                .with_filter(tracing_subscriber::EnvFilter::from_default_env())
        });
        let kept = KeptEvents.with_filter(
            tracing_subscriber::filter::Targets::new()
                .with_target("esm_engine::invoke::runtime_api", tracing::Level::INFO),
        );
        let _ = tracing_subscriber::registry()
            .with(to_test_output)
            .with(kept)
            .try_init();
    });
}

/// An event the Runtime API invoker logged: the function it names, and its message.
#[derive(Debug, Clone)]
pub(crate) struct KeptEvent {
    pub(crate) function: String,
    pub(crate) message: String,
}

static KEPT_EVENTS: std::sync::Mutex<Vec<KeptEvent>> = std::sync::Mutex::new(Vec::new());

/// What the Runtime API invoker logged about `function` since the test binary started.
pub(crate) fn runtime_api_log(function: &str) -> Vec<KeptEvent> {
    KEPT_EVENTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .filter(|event| event.function == function)
        .cloned()
        .collect()
}

struct KeptEvents;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for KeptEvents {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _context: tracing_subscriber::layer::Context<'_, S>,
    ) {
        struct Fields(KeptEvent);
        impl tracing::field::Visit for Fields {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                match field.name() {
                    "message" => self.0.message = format!("{value:?}"),
                    "function" => self.0.function = format!("{value:?}"),
                    _ => {}
                }
            }
        }
        let mut fields = Fields(KeptEvent {
            function: String::new(),
            message: String::new(),
        });
        event.record(&mut fields);
        KEPT_EVENTS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(fields.0);
    }
}

/// Fails the test if `future` takes longer than [`TIMEOUT`].
pub(crate) async fn within_timeout<T>(what: &str, future: impl Future<Output = T>) -> T {
    test_support::within_time(TIMEOUT, what, future).await
}
