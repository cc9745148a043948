//! The adapter: a handler and its settlement options, as a `tower::Service` over the Lambda event.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use lambda_runtime::{Context, LambdaEvent};

use crate::batch::{KinesisBatch, ReadBatchLayer};
use crate::guard::{DynGuard, RecordGuard};
use crate::handler::{Handler, SharedState, WithState};
use crate::settle::{Deadline, Job, Options};
use crate::settlement::{RecordOutcome, Settlement};
use crate::wire::{AdapterError, BatchResponse};

/// A Kinesis record handler with the rules it is settled by, ready to run on Lambda.
///
/// It is a [`tower::Service`] over `LambdaEvent<KinesisBatch>` whose response is the partial batch
/// response, so tower layers fit around it. [`run`](Self::run) serves it with `lambda_runtime`.
/// [`new`](Self::new) takes a handler alone; [`with_state`](Self::with_state) a handler and the
/// state it borrows on every call.
///
/// ```no_run
/// # use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
/// # async fn ship(_: &serde_json::Value) -> HandlerOutcome { HandlerOutcome::ack() }
/// # async fn example() -> Result<(), lambda_kinesis::Error> {
/// KinesisAdapter::new(ship)
///     .per_key_lanes(16)
///     .hold_undecodable()
///     .deadline_margin(std::time::Duration::from_secs(2))
///     .run()
///     .await
/// # }
/// ```
pub struct KinesisAdapter<T> {
    handler: Arc<dyn Settle<T>>,
    options: Options,
    guard: Option<Arc<dyn DynGuard<T>>>,
}

/// A handler of any shape seen as the adapter runs it: one call per batch, so that the handler's
/// type and shape are not type parameters of [`KinesisAdapter`]. The records are still handled
/// by code made for the handler's own type; only the batch's one call goes through the vtable.
trait Settle<T>: Send + Sync {
    fn settle<'a>(
        &'a self,
        job: Job<'a, T>,
    ) -> Pin<Box<dyn Future<Output = Vec<RecordOutcome>> + Send + 'a>>;

    fn state(&self) -> Option<&(dyn Any + Send + Sync)>;

    fn type_name(&self) -> &'static str;
}

/// A handler with its shape, `K`, which only the compiler reads.
struct Shaped<H, K>(H, PhantomData<fn() -> K>);

impl<H, T, K> Settle<T> for Shaped<H, K>
where
    H: Handler<T, K>,
    T: 'static,
    K: 'static,
{
    fn settle<'a>(
        &'a self,
        job: Job<'a, T>,
    ) -> Pin<Box<dyn Future<Output = Vec<RecordOutcome>> + Send + 'a>> {
        Box::pin(self.0.settle(job))
    }

    fn state(&self) -> Option<&(dyn Any + Send + Sync)> {
        self.0.state()
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<H>()
    }
}

impl<T> Clone for KinesisAdapter<T> {
    fn clone(&self) -> Self {
        Self {
            handler: Arc::clone(&self.handler),
            options: self.options.clone(),
            guard: self.guard.clone(),
        }
    }
}

impl<T> fmt::Debug for KinesisAdapter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KinesisAdapter")
            .field("handler", &self.handler.type_name())
            .field("options", &self.options)
            .field("guard", &self.guard.is_some())
            .finish()
    }
}

impl<T: 'static> KinesisAdapter<T> {
    /// Wraps a handler with the default rules: records in shard order, stopping at the first held
    /// record; undecodable records dropped; no new record started in the last 500 ms.
    ///
    /// The handler is any shape of [`handler`](crate::handler) without state; the record type
    /// `T` is what it reads.
    ///
    /// ```
    /// use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Shipment { carrier: String }
    ///
    /// async fn ship(shipment: &Shipment) -> HandlerOutcome {
    ///     if shipment.carrier.is_empty() { HandlerOutcome::drop() } else { HandlerOutcome::ack() }
    /// }
    ///
    /// let adapter: KinesisAdapter<Shipment> = KinesisAdapter::new(ship);
    /// # let _ = adapter;
    /// ```
    pub fn new<H, K>(handler: H) -> Self
    where
        H: Handler<T, K>,
        K: 'static,
    {
        Self {
            handler: Arc::new(Shaped(handler, PhantomData)),
            options: Options::default(),
            guard: None,
        }
    }

    /// Wraps a handler that borrows `state` on every call, with the default rules.
    ///
    /// The state is made once per execution environment (at cold start, in `main`) and shared
    /// by every invocation: the place for clients, connection pools and configuration. The
    /// handler is any shape of [`handler`](crate::handler) with `&S` as its first argument:
    /// `async fn(&S, &T)`, `async fn(&S, &T, &RecordMeta<'_>)` or `async fn(&S, &[T])`. Build
    /// state that can fail with [`init`](crate::init), so a failure reaches Lambda as an init
    /// error. The adapter's type is the same as without state: every option applies alike.
    ///
    /// ```no_run
    /// use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
    ///
    /// struct Carriers { known: Vec<String> }
    /// #[derive(serde::Deserialize)]
    /// struct Shipment { carrier: String }
    ///
    /// async fn ship(carriers: &Carriers, shipment: &Shipment) -> HandlerOutcome {
    ///     if carriers.known.contains(&shipment.carrier) {
    ///         HandlerOutcome::ack()
    ///     } else {
    ///         HandlerOutcome::hold()
    ///     }
    /// }
    ///
    /// #[tokio::main]
    /// async fn main() -> Result<(), lambda_kinesis::Error> {
    ///     let carriers = Carriers { known: vec!["dhl".into(), "ups".into()] };
    ///     KinesisAdapter::with_state(carriers, ship).run().await
    /// }
    /// ```
    pub fn with_state<S, H, K>(state: S, handler: H) -> Self
    where
        S: SharedState,
        WithState<S, H>: Handler<T, K>,
        K: 'static,
    {
        Self::new(WithState::new(state, handler))
    }

    /// The state the handler borrows, when it has state of type `S` (`None` without state, or
    /// with state of another type).
    ///
    /// ```
    /// use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
    ///
    /// struct Carriers;
    /// async fn ship(_: &Carriers, _: &u64) -> HandlerOutcome { HandlerOutcome::ack() }
    ///
    /// let adapter = KinesisAdapter::with_state(Carriers, ship);
    /// assert!(adapter.state::<Carriers>().is_some());
    /// ```
    pub fn state<S: 'static>(&self) -> Option<&S> {
        self.handler.state()?.downcast_ref()
    }

    /// Runs `guard` around each record: it decides before the handler runs whether it runs, and
    /// hears afterwards what it came to (see [`guard`](crate::guard)). A second guard replaces
    /// the first. `lambda-kinesis-idempotency` is a guard.
    ///
    /// ```
    /// use lambda_kinesis::guard::{Entry, RecordGuard};
    /// use lambda_kinesis::{HandlerOutcome, KinesisAdapter, RecordMeta};
    ///
    /// /// Settles records of the `replayed` partition key without running the handler.
    /// struct SkipReplayed;
    ///
    /// impl RecordGuard<u64> for SkipReplayed {
    ///     type Pass = ();
    ///     async fn enter(&self, _: &u64, meta: &RecordMeta<'_>) -> Entry<()> {
    ///         if meta.partition_key() == "replayed" {
    ///             Entry::Settle(HandlerOutcome::ack())
    ///         } else {
    ///             Entry::Run(())
    ///         }
    ///     }
    ///     async fn leave(&self, _: (), _: Option<HandlerOutcome>) {}
    /// }
    ///
    /// async fn ship(_: &u64) -> HandlerOutcome { HandlerOutcome::ack() }
    ///
    /// let adapter = KinesisAdapter::new(ship).guard(SkipReplayed);
    /// # let _ = adapter;
    /// ```
    pub fn guard<G: RecordGuard<T>>(self, guard: G) -> Self
    where
        T: Sync,
    {
        self.optional_guard(Some(guard))
    }

    /// Runs `guard` around each record when it is `Some`, as [`guard`](Self::guard) does;
    /// `None` leaves the adapter without a guard (and removes one set before), so a guard read
    /// from the environment needs no branch. Without a guard the adapter pays nothing for it.
    ///
    /// ```
    /// # use lambda_kinesis::guard::{Entry, RecordGuard};
    /// # use lambda_kinesis::{HandlerOutcome, KinesisAdapter, RecordMeta};
    /// # struct SkipReplayed;
    /// # impl RecordGuard<u64> for SkipReplayed {
    /// #     type Pass = ();
    /// #     async fn enter(&self, _: &u64, _: &RecordMeta<'_>) -> Entry<()> { Entry::Run(()) }
    /// #     async fn leave(&self, _: (), _: Option<HandlerOutcome>) {}
    /// # }
    /// # async fn ship(_: &u64) -> HandlerOutcome { HandlerOutcome::ack() }
    /// let skipping = std::env::var("SKIP_REPLAYED").is_ok().then_some(SkipReplayed);
    /// let adapter = KinesisAdapter::new(ship).optional_guard(skipping);
    /// # let _ = adapter;
    /// ```
    pub fn optional_guard<G: RecordGuard<T>>(mut self, guard: Option<G>) -> Self
    where
        T: Sync,
    {
        self.guard = guard.map(|guard| Arc::new(guard) as Arc<dyn DynGuard<T>>);
        self
    }

    /// The same adapter with held records routed by `route` (the engine's unit tests).
    #[cfg(test)]
    pub(crate) fn with_retry_route(mut self, route: crate::retry::route::RetryRoute) -> Self {
        self.options.retry = Some(route);
        self
    }

    /// Settles a batch as one invocation with `context` would, without Lambda.
    pub async fn settle(&self, batch: impl Into<KinesisBatch>, context: &Context) -> Settlement {
        let batch = batch.into();
        let settle = self.handler.settle(Job {
            batch: &batch,
            options: &self.options,
            guard: self.guard.as_deref(),
            deadline: Deadline::of(context),
        });
        let outcomes = crate::invocation::scope(context, settle).await;
        Settlement::new(batch, outcomes)
    }

    /// Runs the adapter as a Lambda function, through `lambda_runtime`, until the runtime stops.
    ///
    /// It is what `lambda_runtime::run(adapter)` does (the runtime with its tracing layer), with
    /// [`ReadBatchLayer`] in front of the event's deserialisation, so that an event laid out as
    /// Lambda writes it is read from its bytes in one pass.
    ///
    /// On Lambda Managed Instances, where `AWS_LAMBDA_MAX_CONCURRENCY` is above 1, it serves up
    /// to that many invocations at once (`lambda_runtime`'s `run_concurrent`: one poller of the
    /// Runtime API per slot, each with its own clone of the adapter). The handler and its state
    /// are shared by every batch in flight, which is why state is `Send + Sync`; each batch keeps
    /// its own deadline, settlement and retry publishing. Unset or 1, it serves one invocation
    /// at a time, as on Lambda's default environments.
    pub async fn run(self) -> Result<(), lambda_runtime::Error> {
        crate::panic_report::install();
        lambda_runtime::Runtime::new(self)
            .layer(ReadBatchLayer)
            .layer(lambda_runtime::layers::TracingLayer::new())
            .run_concurrent()
            .await
    }

    /// Keeps going after a held record, handling the records of every partition key that has no
    /// held record ahead of it, with up to `max_concurrent_keys` keys handled at once (a lane per
    /// key, records in shard order within a lane).
    ///
    /// The response still names the first unsettled record in shard order: Lambda delivers it and
    /// everything behind it again, so records finished out of order are handled again too. Choose
    /// this when records of different keys are independent, the handler is idempotent and waits
    /// on I/O, so that one slow or failing key does not hold the others' work back. Keep the
    /// default (stop at the first held record) when records must be handled at most once per
    /// delivery or in strict shard order. Applies to record handlers.
    ///
    /// ```
    /// # use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
    /// # async fn ship(_: &u64) -> HandlerOutcome { HandlerOutcome::ack() }
    /// let adapter = KinesisAdapter::new(ship).per_key_lanes(16);
    /// # let _ = adapter;
    /// ```
    pub fn per_key_lanes(mut self, max_concurrent_keys: usize) -> Self {
        self.options.lanes = Some(max_concurrent_keys.max(1));
        self
    }

    /// Holds records whose data cannot be decoded, instead of dropping them. Choose this when an
    /// undecodable record means a deployment is missing (a newer producer), not bad data.
    ///
    /// ```
    /// # use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
    /// # async fn ship(_: &u64) -> HandlerOutcome { HandlerOutcome::ack() }
    /// let adapter = KinesisAdapter::new(ship).hold_undecodable();
    /// # let _ = adapter;
    /// ```
    pub fn hold_undecodable(mut self) -> Self {
        self.options.hold_undecodable = true;
        self
    }

    /// Starts no new record once the invocation has less than `margin` left: the work done so
    /// far is checkpointed and the rest comes again, instead of the whole batch timing out.
    /// Make it longer than the slowest record takes.
    ///
    /// ```
    /// # use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
    /// # async fn ship(_: &u64) -> HandlerOutcome { HandlerOutcome::ack() }
    /// let adapter = KinesisAdapter::new(ship).deadline_margin(std::time::Duration::from_secs(2));
    /// # let _ = adapter;
    /// ```
    pub fn deadline_margin(mut self, margin: Duration) -> Self {
        self.options.deadline_margin = margin;
        self
    }
}

/// Retry and dead-letter streams (cargo feature `publish`; see [`retry`](crate::retry) and
/// `docs/retry-streams.md`).
#[cfg(feature = "publish")]
impl<T: 'static> KinesisAdapter<T> {
    /// Sets every retry option of `plan` at once: its retry stream and cap, its dead-letter
    /// stream and its delay, as [`retry_stream`](Self::retry_stream),
    /// [`dead_letter_stream`](Self::dead_letter_stream) and [`retry_delay`](Self::retry_delay)
    /// do. A plan that names no stream (as [`RetryPlan::from_env`](crate::retry::RetryPlan::from_env)
    /// gives when the variables are unset) leaves held records held, and costs nothing.
    ///
    /// ```no_run
    /// # use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
    /// # use lambda_kinesis::retry::RetryPlan;
    /// # async fn ship(_: &serde_json::Value) -> HandlerOutcome { HandlerOutcome::ack() }
    /// # async fn example() -> Result<(), lambda_kinesis::Error> {
    /// KinesisAdapter::new(ship)
    ///     .retry_plan(RetryPlan::from_env()?) // RETRY_STREAM, MAX_RETRIES, DEAD_LETTER_STREAM
    ///     .run()
    ///     .await
    /// # }
    /// ```
    pub fn retry_plan(mut self, plan: crate::retry::RetryPlan) -> Self {
        if !plan.routes() {
            self.options.retry = None;
        } else {
            self.retry_route().plan = plan;
        }
        self
    }

    /// Publishes a record the handler holds (or fails or panics on) to `stream` instead, in an
    /// envelope, and settles it, so its shard moves on; at most `max_retries` times, then to the
    /// [`dead_letter_stream`](Self::dead_letter_stream) (without one, it stays held, as
    /// without this option). Map the same function to `stream`: records read from it are
    /// unwrapped, the handler sees the same `T`, and [`RecordMeta::retry`](crate::RecordMeta::retry)
    /// tells the attempt and the origin. The partition key stays the record's own.
    ///
    /// A publish that fails leaves the record held: Lambda delivers it again, nothing is lost.
    /// Records of the same key behind a republished one are handled at once, before its retry:
    /// choose plain holding when a key's records must be handled in order. Applies to record
    /// handlers; a batch handler's records are held as without this option.
    ///
    /// ```no_run
    /// # use lambda_kinesis::{HandlerOutcome, KinesisAdapter};
    /// # async fn ship(_: &serde_json::Value) -> HandlerOutcome { HandlerOutcome::ack() }
    /// # async fn example() -> Result<(), lambda_kinesis::Error> {
    /// KinesisAdapter::new(ship)
    ///     .retry_stream("shipments-retry", 3)
    ///     .dead_letter_stream("shipments-dlq")
    ///     .run()
    ///     .await
    /// # }
    /// ```
    pub fn retry_stream(mut self, stream: impl Into<String>, max_retries: u32) -> Self {
        self.retry_route().plan.retry = Some((stream.into(), max_retries));
        self
    }

    /// Publishes a held record that has no retry left (or every held record, without a
    /// [`retry_stream`](Self::retry_stream)) to `stream`, in an envelope, and settles it.
    /// `kinesis-esm dlq` lists such a stream and `kinesis-esm dlq redrive` sends its records
    /// back to where they came from.
    pub fn dead_letter_stream(mut self, stream: impl Into<String>) -> Self {
        self.retry_route().plan.dead_letter = Some(stream.into());
        self
    }

    /// Handles a record of the retry stream no earlier than `delay` after it was held. A record
    /// not yet due waits in its lane (with [`per_key_lanes`](Self::per_key_lanes), only its own
    /// key waits): with one delay for the stream, the records behind it are due no earlier, so
    /// none waits past its own time. A wait that would pass the deadline margin is not started.
    pub fn retry_delay(mut self, delay: Duration) -> Self {
        self.retry_route().plan.delay = delay;
        self
    }

    /// Publishes to the retry and dead-letter streams through `client`, instead of one
    /// configured the SDK's standard way (`AWS_ENDPOINT_URL_KINESIS`, `AWS_REGION`, ...) on
    /// first use.
    pub fn retry_client(mut self, client: aws_sdk_kinesis::Client) -> Self {
        self.retry_route().sender =
            std::sync::Arc::new(crate::retry::kinesis::KinesisSender::with_client(client));
        self
    }

    fn retry_route(&mut self) -> &mut crate::retry::route::RetryRoute {
        self.options
            .retry
            .get_or_insert_with(|| crate::retry::route::RetryRoute {
                plan: crate::retry::RetryPlan::default(),
                sender: std::sync::Arc::new(crate::retry::kinesis::KinesisSender::from_env()),
            })
    }
}

fn check_one_shard(batch: &KinesisBatch) -> Result<(), AdapterError> {
    match batch.mixed_shards() {
        None => Ok(()),
        Some((first, second)) => Err(AdapterError::MixedShards {
            first: first.to_owned(),
            second: second.to_owned(),
        }),
    }
}

impl<T: 'static> tower::Service<LambdaEvent<KinesisBatch>> for KinesisAdapter<T> {
    type Response = BatchResponse;
    type Error = AdapterError;
    type Future = Pin<Box<dyn Future<Output = Result<BatchResponse, AdapterError>> + Send>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), AdapterError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, event: LambdaEvent<KinesisBatch>) -> Self::Future {
        let adapter = self.clone();
        Box::pin(async move {
            let (batch, context) = event.into_parts();
            check_one_shard(&batch)?;
            Ok(adapter.settle(batch, &context).await.response())
        })
    }
}
