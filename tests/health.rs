//! The health and readiness endpoints `kinesis-esm run` serves for a service manager
//! (`docs/production.md`), over HTTP: `/healthz` while the process serves, `/readyz` 200 only
//! while every mapping runs and its stream and lease store answer, 503 with the reason
//! otherwise.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use end_to_end::{Observed, TestStream, Via, config};
use kinesis_esm::config::StartingPosition;
use kinesis_esm::control::{Control, Phase};
use kinesis_esm::endpoint::serve_with_page;
use kinesis_esm::lease::{Checkpoint, Lease, LeaseError, LeaseStore, MemoryLeaseStore};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// A memory lease store that can be switched off: every call then fails as a store that does
/// not answer.
#[derive(Default)]
struct SwitchableStore {
    inner: MemoryLeaseStore,
    down: AtomicBool,
}

impl SwitchableStore {
    fn check(&self) -> Result<(), LeaseError> {
        if self.down.load(Ordering::Relaxed) {
            return Err(LeaseError::Unavailable {
                message: "connection refused (switched off by the test)".to_owned(),
            });
        }
        Ok(())
    }
}

#[async_trait]
impl LeaseStore for SwitchableStore {
    async fn list_leases(&self) -> Result<Vec<Lease>, LeaseError> {
        self.check()?;
        self.inner.list_leases().await
    }
    async fn get_lease(&self, lease_key: &str) -> Result<Option<Lease>, LeaseError> {
        self.check()?;
        self.inner.get_lease(lease_key).await
    }
    async fn create_lease_if_absent(&self, lease: &Lease) -> Result<bool, LeaseError> {
        self.check()?;
        self.inner.create_lease_if_absent(lease).await
    }
    async fn take_lease(&self, lease: &Lease, owner: &str) -> Result<Lease, LeaseError> {
        self.check()?;
        self.inner.take_lease(lease, owner).await
    }
    async fn renew_lease(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        self.check()?;
        self.inner.renew_lease(lease).await
    }
    async fn update_checkpoint(
        &self,
        lease: &Lease,
        checkpoint: Checkpoint,
    ) -> Result<Lease, LeaseError> {
        self.check()?;
        self.inner.update_checkpoint(lease, checkpoint).await
    }
    async fn set_child_shard_ids(
        &self,
        lease: &Lease,
        child_shard_ids: &[String],
    ) -> Result<Lease, LeaseError> {
        self.check()?;
        self.inner.set_child_shard_ids(lease, child_shard_ids).await
    }
    async fn evict_lease(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        self.check()?;
        self.inner.evict_lease(lease).await
    }
    async fn delete_lease(&self, lease_key: &str) -> Result<(), LeaseError> {
        self.check()?;
        self.inner.delete_lease(lease_key).await
    }
}

/// `GET path` at `addr`: the status code and the body.
async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .unwrap_or_else(|error| panic!("connecting to {addr}: {error}"));
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .expect("the request is sent");
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .await
        .expect("the answer is read");
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {answer}"));
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn readiness_follows_the_run_s_phase_and_its_lease_store() {
    let stream = TestStream::create("health-ready", 1);
    let store = Arc::new(SwitchableStore::default());
    let observed = Observed::start_with_leases(
        config("shipping", &stream.name, StartingPosition::TrimHorizon),
        &stream,
        Via::InProcess.shipping().await,
        Arc::clone(&store) as Arc<dyn LeaseStore>,
    );
    let control = Control::new();
    let server = serve_with_page(
        None,
        "127.0.0.1:0".parse().unwrap(),
        Vec::new(),
        control.router(),
    )
    .await
    .expect("the endpoint listens");
    let addr = server.local_addr();

    assert_eq!(get(addr, "/healthz").await, (200, "ok\n".to_owned()));
    let (status, body) = get(addr, "/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("starting"), "{body}");

    control.add(observed.mapping.control());
    control.set_phase(Phase::Running);
    assert_eq!(get(addr, "/readyz").await, (200, "ready\n".to_owned()));

    store.down.store(true, Ordering::Relaxed);
    let (status, body) = get(addr, "/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("shipping <- health-ready: the lease store does not answer")
            && body.contains("switched off by the test"),
        "{body}"
    );
    assert_eq!(
        get(addr, "/healthz").await.0,
        200,
        "alive all the same: a restart would not bring the store back"
    );

    store.down.store(false, Ordering::Relaxed);
    assert_eq!(get(addr, "/readyz").await.0, 200);
    control.set_phase(Phase::Stopping);
    let (status, body) = get(addr, "/readyz").await;
    assert_eq!(status, 503);
    assert!(body.contains("stopping"), "{body}");
    server.stop().await;
    observed.stop().await;
}
