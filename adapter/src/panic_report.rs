//! A handler's panic as one log line: its message, its location and the record it held.
//!
//! Rust's default panic hook writes `thread '...' panicked at FILE:LINE:COL:` and the message on
//! the lines after it, then a `note:`. On Lambda each line is a log event of its own, so the
//! message is cut from its location, and neither names the record. The adapter catches a
//! handler's panic and logs it at ERROR in the record's span; with the hook [`install`]s, that
//! line also carries the location, and the default hook's lines are left out for the panics the
//! adapter catches. Every other panic goes to the hook that was there before, and so does every
//! panic while `RUST_BACKTRACE` asks for a backtrace (which only that hook writes).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Once;

use futures_util::FutureExt as _;

thread_local! {
    /// Whether this thread is running code whose panics the adapter catches and reports.
    static CATCHING: Cell<bool> = const { Cell::new(false) };
    /// Where the last panic caught on this thread was raised.
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs the hook, once per process. `KinesisAdapter::run` does: it owns the process, so
/// only then may the adapter change how panics are written.
pub(crate) fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let catching = CATCHING.get();
            if catching {
                LOCATION.set(info.location().map(ToString::to_string));
            }
            // A backtrace is only in the default hook's lines: asked for, they are written too.
            let backtrace_asked = std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0");
            if !catching || backtrace_asked {
                previous(info);
            }
        }));
    });
}

/// Restores the thread's flag when a poll ends, however it ends.
struct Catching(bool);

impl Catching {
    fn enter() -> Self {
        Self(CATCHING.replace(true))
    }
}

impl Drop for Catching {
    fn drop(&mut self) {
        CATCHING.set(self.0);
    }
}

/// Starts a call with `start` and awaits the future it returns, catching a panic of either, as
/// a reported one.
pub(crate) async fn caught_call<F: Future>(
    start: impl FnOnce() -> F,
) -> Result<F::Output, Box<dyn Any + Send>> {
    let started = {
        let _catching = Catching::enter();
        std::panic::catch_unwind(AssertUnwindSafe(start))
    };
    caught(started?).await
}

/// Awaits `future` and catches a panic of any of its polls, as a reported one.
pub(crate) async fn caught<F: Future>(future: F) -> Result<F::Output, Box<dyn Any + Send>> {
    let mut inner = pin!(AssertUnwindSafe(future).catch_unwind());
    std::future::poll_fn(|context| {
        let _catching = Catching::enter();
        inner.as_mut().poll(context)
    })
    .await
}

/// The location of the last panic caught on this thread, taken: `unknown` when no hook wrote
/// it (the testing kit, which leaves the default hook in place) or the panic had none.
pub(crate) fn take_location() -> String {
    LOCATION
        .take()
        .unwrap_or_else(|| "unknown (see the panic's own lines)".to_owned())
}

/// A panic's message: the text given to `panic!`, when it is text.
pub(crate) fn message(panic: &(dyn Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_caught_panic_leaves_its_location_for_the_report() {
        install();
        let panic = caught_call(|| async { panic!("no carrier for {}", 7) })
            .await
            .expect_err("the future panics");
        assert_eq!(message(panic.as_ref()), "no carrier for 7");
        let location = take_location();
        assert!(
            location.starts_with("adapter/src/panic_report.rs:"),
            "{location}"
        );
        assert!(!CATCHING.get(), "the flag is restored after the poll");
        assert_eq!(take_location(), "unknown (see the panic's own lines)");
        let panic = caught_call(|| -> std::future::Ready<()> { panic!("at the start") })
            .await
            .expect_err("the start panics");
        assert_eq!(message(panic.as_ref()), "at the start");
        assert!(take_location().starts_with("adapter/src/panic_report.rs:"));
    }
}
