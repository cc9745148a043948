//! The HTTP side: a loopback server for any service of requests (the Kinesis API alone, or a
//! front's composition of it with routes of its own), its connections and a graceful stop.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioExecutor;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tower::{Service, ServiceExt as _};

/// How long the accept loop waits after the system refused a connection (out of file
/// descriptors, say) before it accepts again, so that it does not spin.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);

/// How long a stop waits for requests in flight before it drops their connections.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Why the endpoint could not start.
#[derive(Debug, thiserror::Error)]
#[error("the endpoint could not listen on {addr}: {source}")]
pub struct ServeError {
    /// The address it was to listen on.
    pub addr: SocketAddr,
    /// Why not.
    #[source]
    pub source: std::io::Error,
}

/// A running endpoint. [`stop`](Self::stop) ends it gracefully; dropping the handle ends it
/// too, without waiting.
pub struct ServerHandle {
    local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle")
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

/// A service [`serve_service`] can serve: a `tower::Service` of HTTP requests that answers
/// every one (its error is `Infallible`), cloned for each connection and run on any task.
/// Every such service is one.
pub trait HttpService:
    Service<Request<Body>, Response = Response<Body>, Error = Infallible, Future: Send>
    + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> HttpService for S
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible, Future: Send>,
    S: Clone + Send + Sync + 'static,
{
}

/// The server's stop signal, handed to the service in each request's extensions: an answer
/// that streams (`SubscribeToShard`) ends when it turns, so that connections drain at a stop.
#[derive(Clone)]
pub(crate) struct Stopping(pub(crate) watch::Receiver<bool>);

/// Serves `service` on `addr` (port 0 picks a free one) in a task of the current tokio
/// runtime, over HTTP/1.1 and HTTP/2 with prior knowledge on one port, as clients speak to an
/// `http://` endpoint (`SubscribeToShard` is an HTTP/2 call on Kinesis). The endpoint answers
/// as soon as this returns.
pub async fn serve_service<S: HttpService>(
    addr: SocketAddr,
    service: S,
) -> Result<ServerHandle, ServeError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError { addr, source })?;
    let local_addr = listener
        .local_addr()
        .map_err(|source| ServeError { addr, source })?;
    let (stop, stopped) = watch::channel(false);
    let task = tokio::spawn(run(listener, service, stopped));
    Ok(ServerHandle {
        local_addr,
        stop,
        task: Some(task),
    })
}

impl ServerHandle {
    /// The address the endpoint listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The endpoint URL to give clients, such as `http://127.0.0.1:4566`.
    pub fn endpoint_url(&self) -> String {
        format!("http://{}", self.local_addr)
    }

    /// Stops accepting connections, lets the requests in flight get their answers (for up to
    /// five seconds), closes every connection, and returns when all that is done.
    pub async fn stop(mut self) {
        self.stop.send_replace(true);
        if let Some(task) = self.task.take() {
            // The task only ends by itself; a panic in it has been reported already.
            let _ = task.await;
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}

/// Serves `service` on `listener` until `stop` turns true (or its sender goes away), then lets
/// the requests in flight finish and closes every connection.
async fn run<S: HttpService>(listener: TcpListener, service: S, mut stop: watch::Receiver<bool>) {
    let mut connections = JoinSet::new();
    let stop_connections = stop.clone();
    loop {
        tokio::select! {
            () = stopped(&mut stop) => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve_connection(
                        stream,
                        service.clone(),
                        stop_connections.clone(),
                    ));
                }
                Err(error) => {
                    tracing::warn!(%error, "the endpoint could not accept a connection");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(STOP_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!("the endpoint stopped with requests still unanswered after {STOP_GRACE:?}");
    }
}

/// Returns once the stop signal is given, or its sender is gone.
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns is dropped here, so that callers' futures stay `Send`.
    let _ = stop.wait_for(|stopped| *stopped).await;
}

async fn serve_connection<S: HttpService>(
    stream: TcpStream,
    service: S,
    mut stop: watch::Receiver<bool>,
) {
    // Answers are written whole: waiting to coalesce small ones only adds latency.
    let _ = stream.set_nodelay(true);
    let stopping = Stopping(stop.clone());
    let hyper_service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let mut request = request.map(Body::new);
        request.extensions_mut().insert(stopping.clone());
        service.clone().oneshot(request)
    });
    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    let connection = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), hyper_service);
    tokio::pin!(connection);
    // A connection that breaks only ends itself: clients reconnect.
    tokio::select! {
        _ = connection.as_mut() => return,
        () = stopped(&mut stop) => {}
    }
    // The request in flight gets its answer; an idle connection closes at once.
    connection.as_mut().graceful_shutdown();
    let _ = connection.await;
}
