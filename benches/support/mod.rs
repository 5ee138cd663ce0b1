//! What `benches/counters.rs` and `tests/criterion_baselines.rs` share: the criterion
//! runner of the counting benches (its measurement from `HWPROF_BENCH_EVENT`) and one
//! bench. The test runs this runner with different events, as `cargo bench --bench
//! counters` does, so that what it checks is what the bench does.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use hwprof_pmu::criterion::{CounterMeasurement, CriterionExt};

/// The measurement: `HWPROF_BENCH_EVENT`, instructions by default.
fn measurement() -> CounterMeasurement {
    match std::env::var("HWPROF_BENCH_EVENT") {
        Ok(ev) => CounterMeasurement::new(&ev).unwrap_or_else(|e| {
            eprintln!("HWPROF_BENCH_EVENT: {e}");
            std::process::exit(2)
        }),
        Err(_) => CounterMeasurement::instructions(),
    }
}

/// The runner: the measurement, with its results kept apart per measured event.
pub fn config() -> Criterion<CounterMeasurement> {
    Criterion::default()
        .with_counter(measurement())
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
}

/// Sums 10,000 u64s.
pub fn sum(c: &mut Criterion<CounterMeasurement>) {
    let v: Vec<u64> = (0..10_000).collect();
    let mut g = c.benchmark_group("sum");
    g.throughput(Throughput::Elements(v.len() as u64));
    g.bench_function("10k u64", |b| b.iter(|| black_box(&v).iter().sum::<u64>()));
    g.finish();
}
