//! Criterion benches that count instructions instead of timing: the example to copy.
//!
//! `cargo bench --bench counters` measures retired instructions per iteration with
//! [`CounterMeasurement`]. `HWPROF_BENCH_EVENT=cycles` (or any one event in perf syntax,
//! e.g. `instructions:u`, `branch-misses`) counts another event.
//!
//! Instruction counts barely move between runs on a busy machine, so a regression of a
//! few percent shows where wall time would drown it in noise. Where the machine has no
//! hardware PMU (most cloud VMs and CI runners), the measurement falls back to
//! `task-clock`, the CPU time of the bench thread in ns, and prints once:
//!
//! ```text
//! hwprof: warning: cannot count 'instructions' here: not supported by this kernel or PMU
//! (no hardware PMU is exposed here, e.g. in a VM); criterion measures task-clock (CPU time
//! of the bench thread, ns) instead
//! ```
//!
//! `with_counter` keeps the results of each measured event apart
//! (`target/criterion/counting-instructions/`, `.../counting-task-clock/`...), so a run
//! that measures another event than the saved baseline (a fallback, another
//! `HWPROF_BENCH_EVENT`) starts a baseline of its own instead of comparing across
//! units; it says which on stderr:
//!
//! ```text
//! hwprof: criterion measures task-clock (instead of 'instructions'); baselines of this
//! event in target/criterion/counting-task-clock
//! ```
//!
//! In your own crate: `hwprof-pmu = { version = "0.1", features = ["criterion"] }` under
//! `[dev-dependencies]`, a `[[bench]]` with `harness = false`, and the `criterion_group!`
//! below, with the runner (`config`) and `sum` of `benches/support/mod.rs`, which
//! `tests/criterion_baselines.rs` runs with different events.

mod support;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hwprof_pmu::criterion::CounterMeasurement;
use support::{config, sum};

fn sort(c: &mut Criterion<CounterMeasurement>) {
    // A fixed pseudo-random input (xorshift), copied afresh for every iteration.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let input: Vec<u64> = (0..10_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect();
    let mut g = c.benchmark_group("sort");
    g.throughput(Throughput::Elements(input.len() as u64));
    g.bench_function("10k u64 unstable", |b| {
        b.iter_batched_ref(
            || input.clone(),
            |v| v.sort_unstable(),
            criterion::BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = sum, sort
}
criterion_main!(benches);
