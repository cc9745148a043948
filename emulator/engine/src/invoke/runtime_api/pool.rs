//! Which execution environment takes the next invocation, and when a new one starts: a pure
//! rule, apart from the processes it is applied to.
//!
//! An environment runs up to `capacity` invocations at once: 1 for the standard execution
//! environment, `PerExecutionEnvironmentMaxConcurrency` on Lambda Managed Instances. A new one
//! starts only when every running one is full.

/// Where the next invocation goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Placement {
    /// To the running environment at this index.
    Existing(usize),
    /// To a new environment: every running one is full.
    Start,
}

/// Places the next invocation, given how many invocations each running environment (in the
/// order they started) has in flight and how many one may run at once.
///
/// The fullest environment with room takes it, the latest started among equals: packing keeps
/// the number of environments low, as Managed Instances' routing does, and keeps busy an
/// environment whose process has already initialised. With `capacity` 1 this is "reuse the latest
/// idle environment", the standard execution environment's rule.
pub(super) fn place(in_flight: &[usize], capacity: usize) -> Placement {
    let capacity = capacity.max(1);
    in_flight
        .iter()
        .enumerate()
        .filter(|&(_, &load)| load < capacity)
        .max_by_key(|&(index, &load)| (load, index))
        .map_or(Placement::Start, |(index, _)| Placement::Existing(index))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(in_flight: &[usize], capacity: usize, expected: Placement) {
        assert_eq!(
            place(in_flight, capacity),
            expected,
            "{in_flight:?} of {capacity}"
        );
    }

    #[test]
    fn with_no_environment_one_starts() {
        check(&[], 1, Placement::Start);
        check(&[], 8, Placement::Start);
    }

    #[test]
    fn one_at_a_time_reuses_the_latest_idle_environment() {
        check(&[0], 1, Placement::Existing(0));
        check(&[1, 0, 1, 0], 1, Placement::Existing(3));
        check(&[1, 1, 1], 1, Placement::Start);
    }

    #[test]
    fn an_environment_with_room_takes_the_invocation_before_a_new_one_starts() {
        check(&[1], 4, Placement::Existing(0));
        check(&[3], 4, Placement::Existing(0));
        check(&[4], 4, Placement::Start);
        check(&[4, 4, 4], 4, Placement::Start);
    }

    #[test]
    fn the_fullest_environment_with_room_takes_it() {
        check(&[2, 3, 1], 4, Placement::Existing(1));
        check(&[4, 1, 3], 4, Placement::Existing(2));
        check(&[0, 0], 4, Placement::Existing(1));
    }

    #[test]
    fn a_capacity_of_zero_reads_as_one() {
        check(&[0], 0, Placement::Existing(0));
        check(&[1], 0, Placement::Start);
    }

    /// Placing invocations one after another, none ending: environments fill in turn, so
    /// `n` invocations need `ceil(n / capacity)` environments.
    #[test]
    fn invocations_that_do_not_end_fill_environments_in_turn() {
        for capacity in [1, 3, 8] {
            let mut in_flight: Vec<usize> = Vec::new();
            for _ in 0..20 {
                match place(&in_flight, capacity) {
                    Placement::Existing(index) => in_flight[index] += 1,
                    Placement::Start => in_flight.push(1),
                }
            }
            assert_eq!(
                in_flight.len(),
                20_usize.div_ceil(capacity),
                "capacity {capacity}"
            );
            assert!(in_flight.iter().all(|&load| load <= capacity));
        }
    }
}
