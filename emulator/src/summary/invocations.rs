//! A shard's recent invocations in words, for the `status` tree and the live page.

use esm_engine::mapping::{InvocationVerdict, RecentInvocation};

use super::counted::counted;
use super::sequence_number::short_sequence_number;

/// What an invocation's answer did, in words: "all acked", "all settled, 1 dropped", "held at N
/// (2 settled before it)", "function error Panic", "timed out", "bad response", "not invoked";
/// ", then discarded" when its records were given up after it.
pub fn verdict_text(invocation: &RecentInvocation) -> String {
    let mut text = match &invocation.verdict {
        InvocationVerdict::AllAcked { dropped: 0 } => "all acked".to_owned(),
        InvocationVerdict::AllAcked { dropped } => format!("all settled, {dropped} dropped"),
        InvocationVerdict::HeldAt {
            sequence_number,
            settled,
        } => format!(
            "held at {} ({settled} settled before it)",
            short_sequence_number(sequence_number.as_str())
        ),
        InvocationVerdict::BadResponse => "bad response".to_owned(),
        InvocationVerdict::FunctionError { error_type } => format!("function error {error_type}"),
        InvocationVerdict::Timeout => "timed out".to_owned(),
        InvocationVerdict::NotInvoked => "not invoked".to_owned(),
    };
    if invocation.discarded {
        text.push_str(", then discarded");
    }
    text
}

/// A duration of `micros` microseconds: "850 µs", "12.3 ms", "2.50 s".
pub fn duration_text(micros: u64) -> String {
    match micros {
        0..1_000 => format!("{micros} µs"),
        1_000..1_000_000 => format!("{:.1} ms", micros as f64 / 1e3),
        _ => format!("{:.2} s", micros as f64 / 1e6),
    }
}

/// One invocation as the `status` tree lists it: "4917…10 to 4917…13, 4 records, 1.5 ms: all
/// acked".
pub fn invocation_line(invocation: &RecentInvocation) -> String {
    format!(
        "{} to {}, {}, {}: {}",
        short_sequence_number(invocation.first.as_str()),
        short_sequence_number(invocation.last.as_str()),
        counted(invocation.records, "record", "records"),
        duration_text(invocation.duration_micros),
        verdict_text(invocation)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sequence_number(text: &str) -> kinesis_source::sequence::SequenceNumber {
        text.parse().expect("a sequence number")
    }

    #[test]
    fn verdicts_and_durations_read_as_words() {
        let mut invocation = RecentInvocation {
            first: sequence_number("1"),
            last: sequence_number("2"),
            records: 2,
            at_epoch_millis: 0,
            duration_micros: 0,
            verdict: InvocationVerdict::AllAcked { dropped: 1 },
            discarded: false,
        };
        assert_eq!(verdict_text(&invocation), "all settled, 1 dropped");
        invocation.verdict = InvocationVerdict::Timeout;
        invocation.discarded = true;
        assert_eq!(verdict_text(&invocation), "timed out, then discarded");
        invocation.verdict = InvocationVerdict::NotInvoked;
        invocation.discarded = false;
        assert_eq!(
            invocation_line(&invocation),
            "1 to 2, 2 records, 0 µs: not invoked"
        );
        assert_eq!(duration_text(999), "999 µs");
        assert_eq!(duration_text(1_000), "1.0 ms");
        assert_eq!(duration_text(999_949), "999.9 ms");
        assert_eq!(duration_text(1_000_000), "1.00 s");
    }
}
