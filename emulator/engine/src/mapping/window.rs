//! Tumbling windows' rules as pure functions (`docs/event-source-mapping.md` §8): which window a
//! record belongs to, how much of the buffer one window's invocation takes, what the reader
//! invokes next for an open window, and what a function's answer does to the window's state.
//! The reader does the I/O around them (`reader/windows.rs`); nothing here reads a clock:
//! callers pass the time.

use std::time::Duration;

use serde_json::Value;

/// Lambda's limit on a window's state, per shard: "up to 1 MB".
pub(super) const MAX_STATE_BYTES: usize = 1024 * 1024;

/// The state of a fresh window, as the emulator sends it: an empty object (AWS does not say;
/// an object is what every example reads `state` as).
pub(super) const FRESH_STATE: &str = "{}";

/// The largest state an answer may carry at all: a state that would not fit in the next
/// invocation's payload (Lambda's 6 MB) cannot be handed on, so the answer is a failed one.
pub(super) const MAX_CARRIED_STATE_BYTES: usize = 6 * 1024 * 1024;

/// A window: `[start, end)` in epoch seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct WindowSpan {
    pub(super) start_secs: i64,
    pub(super) end_secs: i64,
}

impl WindowSpan {
    /// The window's start, as the event writes it.
    pub(super) fn start(self) -> std::time::SystemTime {
        epoch_seconds(self.start_secs)
    }

    /// The window's end, as the event writes it.
    pub(super) fn end(self) -> std::time::SystemTime {
        epoch_seconds(self.end_secs)
    }

    /// Whether a record that arrived at `arrival_millis` belongs to this window.
    pub(super) fn holds(self, arrival_millis: i64) -> bool {
        let start = self.start_secs * 1000;
        let end = self.end_secs * 1000;
        (start..end).contains(&arrival_millis)
    }
}

fn epoch_seconds(seconds: i64) -> std::time::SystemTime {
    let since = Duration::from_secs(seconds.unsigned_abs());
    if seconds >= 0 {
        std::time::UNIX_EPOCH + since
    } else {
        std::time::UNIX_EPOCH - since
    }
}

/// The window of a record that arrived at `arrival_millis`: windows of `length_secs` seconds,
/// aligned on multiples of the length since the Unix epoch, as AWS's example (a 120 s window
/// from 07:04:00 to 07:06:00) is. The record's `approximateArrivalTimestamp` decides, not when
/// the reader reads it.
pub(super) fn window_of(arrival_millis: i64, length_secs: u32) -> WindowSpan {
    let length = i64::from(length_secs.max(1));
    let start_secs = arrival_millis.div_euclid(1000).div_euclid(length) * length;
    WindowSpan {
        start_secs,
        end_secs: start_secs + length,
    }
}

/// How many records at the front of the buffer (given by arrival time) belong to `window`: one
/// invocation carries one window (its event names one `window`), so a batch ends where the next
/// window begins, even when it holds fewer than `BatchSize` records.
pub(super) fn leading_in_window(
    arrivals: impl IntoIterator<Item = i64>,
    window: WindowSpan,
) -> usize {
    arrivals
        .into_iter()
        .take_while(|arrival| window.holds(*arrival))
        .count()
}

/// A window the reader has invoked at least once, and what its next invocation carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct OpenWindow {
    pub(super) span: WindowSpan,
    /// The state's JSON text, as the last successful invocation returned it.
    pub(super) state: String,
    /// The last answer's state passed [`MAX_STATE_BYTES`]: the next invocation ends the window
    /// early.
    pub(super) over_limit: bool,
}

/// What the shard looks like to the window rules when the reader decides what to invoke.
#[derive(Debug, Clone, Copy)]
pub(super) struct ShardView {
    /// The arrival time of the first buffered record, if any.
    pub(super) first_buffered: Option<i64>,
    /// The reader has read to the shard's newest record.
    pub(super) caught_up: bool,
    /// The shard was read to its end (`SHARD_END`: closed by a reshard).
    pub(super) ended: bool,
    /// The time now, in epoch milliseconds (the caller's clock).
    pub(super) now_millis: i64,
}

/// Why an open window closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Closing {
    /// Its time is over: a record of a later window came, or its end passed with nothing read.
    OnTime,
    /// The last answer's state passed [`MAX_STATE_BYTES`]: the window ends early, and continues
    /// with a fresh state.
    StateOverLimit,
    /// The shard ended (a reshard) before the window's end: the window ends early, and the
    /// child shards start windows of their own.
    ShardEnded,
}

impl Closing {
    /// `isWindowTerminatedEarly`: the window closed before its end.
    pub(super) fn terminated_early(self) -> bool {
        self != Self::OnTime
    }
}

/// What the reader invokes next for a shard with tumbling windows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum WindowStep {
    /// Invoke `span` with the buffered records that belong to it, and the open window's state
    /// (a fresh one for a new window).
    Records { span: WindowSpan, state: String },
    /// Invoke the open window once more, with no records: its final invocation
    /// (`isFinalInvokeForWindow`), flagged `isWindowTerminatedEarly` unless it closes on time.
    Final {
        span: WindowSpan,
        state: String,
        closing: Closing,
    },
    /// Nothing to invoke yet: wait for records (or for the open window to end).
    Wait,
}

/// Decides the next invocation. An open window closes (its final invocation) when:
/// - its state passed the limit (ended early; the same window then continues fresh);
/// - a buffered record belongs to a later window;
/// - the shard ended (a reshard closes the window, early if its end has not passed; the
///   children start their own windows);
/// - the reader is caught up and the window's end has passed: every record that arrives from
///   then on belongs to a later window, since Kinesis stamps arrival times as records come.
///   (Lambda "waits for up to 2 minutes"; waiting less changes no window's records.)
pub(super) fn next_step(
    open: Option<&OpenWindow>,
    shard: ShardView,
    length_secs: u32,
) -> WindowStep {
    if let Some(open) = open {
        let later_record = shard
            .first_buffered
            .is_some_and(|arrival| !open.span.holds(arrival));
        let over = shard.caught_up
            && shard.first_buffered.is_none()
            && shard.now_millis >= open.span.end_secs * 1000;
        let shard_done = shard.ended && shard.first_buffered.is_none();
        let closing = if open.over_limit {
            Some(Closing::StateOverLimit)
        } else if later_record || over {
            Some(Closing::OnTime)
        } else if shard_done {
            Some(if shard.now_millis < open.span.end_secs * 1000 {
                Closing::ShardEnded
            } else {
                Closing::OnTime
            })
        } else {
            None
        };
        if let Some(closing) = closing {
            return WindowStep::Final {
                span: open.span,
                state: open.state.clone(),
                closing,
            };
        }
    }
    match shard.first_buffered {
        None => WindowStep::Wait,
        Some(arrival) => {
            let span = window_of(arrival, length_secs);
            let state = match open {
                Some(open) if open.span == span => open.state.clone(),
                _ => FRESH_STATE.to_owned(),
            };
            WindowStep::Records { span, state }
        }
    }
}

/// What a function's answer to a window invocation says about the state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum StateAnswer {
    /// The state to carry, within the limit.
    Carried(String),
    /// The state, over the limit: the window ends early.
    OverLimit { state: String, bytes: usize },
}

/// Reads the `state` of a window invocation's answer. "If the response does not contain a state
/// property, Lambda considers this a failed invocation": the error says so, for the shard's
/// status and the retry policy. A `null` state starts the window's next invocation fresh.
pub(super) fn read_state(body: &[u8], shard_id: &str) -> Result<StateAnswer, String> {
    let value: Value = serde_json::from_slice(body).map_err(|_| {
        format!(
            "the answer to shard {shard_id}'s window invocation is not a JSON object with a state"
        )
    })?;
    let Some(state) = value.as_object().and_then(|object| object.get("state")) else {
        return Err(format!(
            "the answer to shard {shard_id}'s window invocation has no state (Lambda counts that as a failed invocation)"
        ));
    };
    let state = match state {
        Value::Null => FRESH_STATE.to_owned(),
        state => state.to_string(),
    };
    let bytes = state.len();
    if bytes > MAX_CARRIED_STATE_BYTES {
        return Err(format!(
            "the answer to shard {shard_id}'s window invocation has a state of {bytes} bytes, \
             more than an invocation's payload can carry (Lambda's limit is 1 MB of state per shard)"
        ));
    }
    Ok(if bytes > MAX_STATE_BYTES {
        StateAnswer::OverLimit { state, bytes }
    } else {
        StateAnswer::Carried(state)
    })
}

/// The window that follows a successful invocation of `span`: the final one (`closing`) closes
/// it (`None`: the next window starts fresh), except after an early end for the state's size,
/// where the same window continues with a fresh state; any other carries the answer's state.
pub(super) fn after_success(
    span: WindowSpan,
    answer: StateAnswer,
    closing: Option<Closing>,
) -> Option<OpenWindow> {
    if let Some(closing) = closing {
        return (closing == Closing::StateOverLimit).then(|| OpenWindow {
            span,
            state: FRESH_STATE.to_owned(),
            over_limit: false,
        });
    }
    Some(match answer {
        StateAnswer::Carried(state) => OpenWindow {
            span,
            state,
            over_limit: false,
        },
        StateAnswer::OverLimit { state, .. } => OpenWindow {
            span,
            state,
            over_limit: true,
        },
    })
}

/// How long the reader may wait for records before the open window's end passes.
pub(super) fn until_window_end(open: &OpenWindow, now_millis: i64) -> Duration {
    let end = open.span.end_secs * 1000;
    Duration::from_millis(u64::try_from(end - now_millis).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2020-12-09T07:04:00Z, the start of AWS's example window.
    const EXAMPLE_START: i64 = 1_607_497_440;

    fn span(start_secs: i64, length: i64) -> WindowSpan {
        WindowSpan {
            start_secs,
            end_secs: start_secs + length,
        }
    }

    #[test]
    fn records_fall_into_windows_aligned_on_the_epoch() {
        let cases = [
            // (arrival in millis, length, window start)
            (EXAMPLE_START * 1000, 120, EXAMPLE_START),
            // AWS's example record arrived at 1607497475.000, inside 07:04:00-07:06:00.
            (1_607_497_475_000, 120, EXAMPLE_START),
            (EXAMPLE_START * 1000 + 119_999, 120, EXAMPLE_START),
            (EXAMPLE_START * 1000 + 120_000, 120, EXAMPLE_START + 120),
            (999, 1, 0),
            (1_000, 1, 1),
            (-1, 60, -60),
            (1_767_225_600_000 + 899_999, 900, 1_767_225_600),
        ];
        for (arrival, length, start) in cases {
            assert_eq!(
                window_of(arrival, length),
                span(start, i64::from(length)),
                "arrival {arrival}, length {length}"
            );
        }
    }

    #[test]
    fn a_batch_ends_where_the_next_window_begins() {
        let window = span(60, 60);
        let cases: [(&[i64], usize); 4] = [
            (&[60_000, 61_000, 119_999], 3),
            (&[60_000, 120_000, 120_001], 1),
            (&[120_000], 0),
            (&[], 0),
        ];
        for (arrivals, expected) in cases {
            assert_eq!(
                leading_in_window(arrivals.iter().copied(), window),
                expected,
                "{arrivals:?}"
            );
        }
    }

    fn open(state: &str, over_limit: bool) -> OpenWindow {
        OpenWindow {
            span: span(60, 60),
            state: state.to_owned(),
            over_limit,
        }
    }

    fn view(first_buffered: Option<i64>, caught_up: bool, ended: bool, now_secs: i64) -> ShardView {
        ShardView {
            first_buffered,
            caught_up,
            ended,
            now_millis: now_secs * 1000,
        }
    }

    fn records(start: i64, state: &str) -> WindowStep {
        WindowStep::Records {
            span: span(start, 60),
            state: state.to_owned(),
        }
    }

    fn last(state: &str, closing: Closing) -> WindowStep {
        WindowStep::Final {
            span: span(60, 60),
            state: state.to_owned(),
            closing,
        }
    }

    #[test]
    fn the_next_invocation_follows_the_window_rules() {
        let counted = open(r#"{"n":2}"#, false);
        let cases = [
            // (what it is, open window, shard, expected)
            (
                "nothing open, nothing read",
                None,
                view(None, true, false, 70),
                WindowStep::Wait,
            ),
            (
                "a first record opens a fresh window",
                None,
                view(Some(61_000), true, false, 70),
                records(60, "{}"),
            ),
            (
                "a record of the open window carries its state",
                Some(&counted),
                view(Some(62_000), false, false, 70),
                records(60, r#"{"n":2}"#),
            ),
            (
                "caught up inside the window: wait",
                Some(&counted),
                view(None, true, false, 100),
                WindowStep::Wait,
            ),
            (
                "behind, nothing buffered: wait for the read",
                Some(&counted),
                view(None, false, false, 200),
                WindowStep::Wait,
            ),
            (
                "a record of a later window closes it",
                Some(&counted),
                view(Some(125_000), false, false, 130),
                last(r#"{"n":2}"#, Closing::OnTime),
            ),
            (
                "caught up after the window's end closes it",
                Some(&counted),
                view(None, true, false, 120),
                last(r#"{"n":2}"#, Closing::OnTime),
            ),
            (
                "the shard's end closes it early",
                Some(&counted),
                view(None, false, true, 90),
                last(r#"{"n":2}"#, Closing::ShardEnded),
            ),
            (
                "the shard's end after the window's end closes it on time",
                Some(&counted),
                view(None, false, true, 130),
                last(r#"{"n":2}"#, Closing::OnTime),
            ),
            (
                "records left before the shard's end go first",
                Some(&counted),
                view(Some(63_000), false, true, 90),
                records(60, r#"{"n":2}"#),
            ),
            (
                "a state over the limit ends it early",
                Some(&open("{}", true)),
                view(Some(63_000), false, false, 90),
                last("{}", Closing::StateOverLimit),
            ),
        ];
        for (what, open, shard, expected) in cases {
            assert_eq!(next_step(open, shard, 60), expected, "{what}");
        }
    }

    #[test]
    fn an_answer_without_state_is_a_failed_invocation() {
        let cases: [(&str, Result<StateAnswer, &str>); 6] = [
            (
                r#"{"state":{"n":1},"batchItemFailures":[]}"#,
                Ok(StateAnswer::Carried(r#"{"n":1}"#.to_owned())),
            ),
            (r#"{"state":7}"#, Ok(StateAnswer::Carried("7".to_owned()))),
            (
                r#"{"state":null}"#,
                Ok(StateAnswer::Carried("{}".to_owned())),
            ),
            (r#"{"batchItemFailures":[]}"#, Err("has no state")),
            ("null", Err("has no state")),
            ("not json", Err("is not a JSON object")),
        ];
        for (body, expected) in cases {
            match (
                read_state(body.as_bytes(), "shardId-000000000001"),
                expected,
            ) {
                (Ok(answer), Ok(expected)) => assert_eq!(answer, expected, "{body}"),
                (Err(error), Err(fragment)) => {
                    assert!(
                        error.contains(fragment) && error.contains("shardId-000000000001"),
                        "{body}: {error}"
                    );
                }
                (got, _) => panic!("{body}: got {got:?}"),
            }
        }
    }

    #[test]
    fn a_state_over_one_megabyte_ends_the_window_early() {
        let big = format!(r#"{{"state":"{}"}}"#, "x".repeat(MAX_STATE_BYTES));
        let answer = read_state(big.as_bytes(), "shardId-0").unwrap();
        assert!(
            matches!(answer, StateAnswer::OverLimit { bytes, .. } if bytes == MAX_STATE_BYTES + 2)
        );
        let window = after_success(span(60, 60), answer, None).unwrap();
        assert!(window.over_limit);
        // The early end's final invocation is followed by the same window, fresh.
        let after = after_success(
            span(60, 60),
            StateAnswer::Carried("{}".into()),
            Some(Closing::StateOverLimit),
        );
        assert_eq!(after, Some(open("{}", false)));
        // A state the next event could not carry is a failed invocation.
        let huge = format!(r#"{{"state":"{}"}}"#, "x".repeat(MAX_CARRIED_STATE_BYTES));
        let error = read_state(huge.as_bytes(), "shardId-0").unwrap_err();
        assert!(
            error.contains("shardId-0") && error.contains("1 MB"),
            "{error}"
        );
    }

    #[test]
    fn a_final_invocation_drops_the_state_and_others_carry_it() {
        let carried = StateAnswer::Carried(r#"{"n":3}"#.to_owned());
        for closing in [Closing::OnTime, Closing::ShardEnded] {
            assert_eq!(
                after_success(span(60, 60), carried.clone(), Some(closing)),
                None,
                "{closing:?}"
            );
        }
        assert_eq!(
            after_success(span(60, 60), carried, None),
            Some(open(r#"{"n":3}"#, false))
        );
        assert_eq!(
            until_window_end(&open("{}", false), 100_000),
            Duration::from_secs(20)
        );
        assert_eq!(
            until_window_end(&open("{}", false), 130_000),
            Duration::ZERO
        );
    }
}
