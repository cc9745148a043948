//! A task that ends with its owner.

use tokio::task::JoinHandle;

/// Aborts the task when dropped, so that a task cannot outlive its owner.
pub(super) struct AbortOnDrop(pub(super) JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
