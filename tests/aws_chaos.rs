//! The chaos run's short form (`end_to_end::chaos`, `docs/lease-table.md` §8): three
//! `kinesis-esm` processes over one dynalite lease table, a producer numbering records per key,
//! and for about half a minute seeded `kill -9`s, SIGSTOP/SIGCONT zombies, graceful restarts, a
//! split and a merge; once over kinesis-local and once over the embedded Kinesis one instance
//! serves. Nothing may be lost, no key may go out of order (redeliveries from a checkpoint
//! included), and every lease ends at its shard's last record or `SHARD_END`.
//!
//! Each run prints its seed: `CHAOS_SEED=<seed>` replays the same choices. The long form is the
//! `chaos` binary (`cargo run -p end-to-end --bin chaos -- --minutes 10`).

use end_to_end::chaos::{self, ChaosKinesis, ChaosPlan};

async fn chaos_run(kinesis: ChaosKinesis) {
    let plan = ChaosPlan::short(kinesis, chaos::seed_from_env());
    println!("chaos over {kinesis}: seed {}", plan.seed);
    let report = chaos::run(plan).await;
    println!("{report}");
    let faults = report.faults();
    // The faults first and short: the report above has the rest.
    assert!(
        faults.is_empty(),
        "chaos over {kinesis}, seed {}: {}",
        report.plan.seed,
        faults.join("; ")
    );
    // The chaos did what it is there for.
    assert!(
        report
            .actions
            .iter()
            .any(|action| action.contains(" split "))
            && report
                .actions
                .iter()
                .any(|action| action.contains(" merge ")),
        "a split and a merge happened: {report}"
    );
    assert!(report.tally.published > 0 && report.tally.deliveries >= report.tally.published);
}

end_to_end::scenario_tests! {
    chaos_run {
        chaos_over_kinesis_local_loses_nothing_and_keeps_every_key_in_order(ChaosKinesis::LocalServer),
        chaos_over_the_embedded_kinesis_loses_nothing_and_keeps_every_key_in_order(ChaosKinesis::Embedded),
    }
}
