//! Tumbling windows in the reader (`docs/event-source-mapping.md` §8): the I/O around
//! `mapping/window.rs`' rules. A window's batches go through the same retry rules as any batch
//! (`reader/batch.rs`), carrying the open window's state; closing a window is one more
//! invocation with no records.

use std::time::{Duration, SystemTime};

use super::shard_reader::ShardReader;
use crate::mapping::reader_exit::ReaderExit;
use crate::mapping::window::{OpenWindow, ShardView, WindowStep, leading_in_window, next_step};
use kinesis_source::time::millis_since_epoch;

impl ShardReader {
    /// The tumbling windows' length, when the mapping has them.
    pub(super) fn tumbling_window(&self) -> Option<u32> {
        let seconds = self.shared.config.tumbling_window_seconds;
        (seconds > 0).then_some(seconds)
    }

    /// What the window rules see of the shard now.
    fn window_view(&self) -> ShardView {
        ShardView {
            first_buffered: self.buffer.front().map(arrival_millis),
            caught_up: self.caught_up,
            ended: self.iterator.is_none(),
            // The time of the last read, not of the call: a window may close only on what a
            // read made after its end showed.
            now_millis: millis_since_epoch(self.last_read_at),
        }
    }

    /// With nothing buffered, invokes the open window's final invocation if the window is due
    /// to close (its end passed with the reader caught up, or the shard ended). Returns whether
    /// it invoked.
    pub(super) async fn close_due_window(&mut self, length_secs: u32) -> Result<bool, ReaderExit> {
        let step = next_step(self.memory.window.as_ref(), self.window_view(), length_secs);
        match step {
            WindowStep::Final { closing, .. } => {
                self.finish_checkpoint().await?;
                let ctx = std::sync::Arc::clone(&self.ctx);
                ctx.invoke_final(&mut self.memory, closing).await?;
                Ok(true)
            }
            WindowStep::Records { .. } | WindowStep::Wait => Ok(false),
        }
    }

    /// How long to wait for records while caught up: no longer than until the open window's
    /// end, which closes it.
    pub(super) fn window_wait(&self, poll_interval: Duration) -> Duration {
        match &self.memory.window {
            Some(open) => poll_interval.min(crate::mapping::window::until_window_end(
                open,
                millis_since_epoch(SystemTime::now()),
            )),
            None => poll_interval,
        }
    }

    /// Whether the buffer already holds a record of a later window than its first one: the
    /// first window's batch cannot grow, so the batching window need not be waited for.
    pub(super) fn window_batch_is_complete(&self, length_secs: u32) -> bool {
        match (self.buffer.front(), self.buffer.back()) {
            (Some(first), Some(last)) => {
                let window = crate::mapping::window::window_of(arrival_millis(first), length_secs);
                !window.holds(arrival_millis(last))
            }
            _ => false,
        }
    }

    /// Invokes what the window rules say comes next with records buffered: the open window's
    /// final invocation when the first buffered record belongs to a later window, else a batch
    /// of the first record's window (at most `batch_size` records, ending where the next window
    /// begins).
    pub(super) async fn process_window(
        &mut self,
        batch_size: usize,
        length_secs: u32,
    ) -> Result<(), ReaderExit> {
        match next_step(self.memory.window.as_ref(), self.window_view(), length_secs) {
            WindowStep::Final { closing, .. } => {
                self.finish_checkpoint().await?;
                let ctx = std::sync::Arc::clone(&self.ctx);
                ctx.invoke_final(&mut self.memory, closing).await
            }
            WindowStep::Records { span, state } => {
                if self
                    .memory
                    .window
                    .as_ref()
                    .is_none_or(|open| open.span != span)
                {
                    self.memory.window = Some(OpenWindow {
                        span,
                        state,
                        over_limit: false,
                    });
                }
                let in_window = leading_in_window(self.buffer.iter().map(arrival_millis), span);
                let batch = self.take_batch(batch_size.min(in_window));
                self.process(batch).await
            }
            WindowStep::Wait => Ok(()),
        }
    }
}

fn arrival_millis(record: &kinesis_source::Record) -> i64 {
    millis_since_epoch(record.approximate_arrival)
}
