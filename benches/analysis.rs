//! The analysis of `hwprof report` and `hwprof offcpu` in samples/s: report aggregation
//! (self and children rows by comm, dso, sym) of the generated profile of [`generated`]
//! (200k samples, 40-deep stacks), and off-CPU pairing of 200k switches of 64 threads.
//!
//! `cargo bench --bench analysis`

mod generated;

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use generated::{Rng, SAMPLES};
use hwprof_analysis::offcpu::{Switch, pair};
use hwprof_analysis::report::{self, Filter, Keys};

const SWITCHES: usize = 200_000;
const THREADS: u64 = 64;

/// Switch-outs of [`THREADS`] threads, every fourth with the thread it hands over to, and
/// an on-CPU sample every tenth, at increasing times (µs apart, with jitter).
fn switches() -> Vec<Switch> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut time = 0;
    (0..SWITCHES)
        .map(|i| {
            time += 1000 + rng.next() % 500;
            let tid = 1 + (rng.next() % THREADS) as u32;
            Switch {
                time,
                tid,
                next_pid: (i % 4 == 0).then(|| 1 + (rng.next() % THREADS) as u32),
                out: i % 10 != 0,
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let p = generated::profile();
    let keys = Keys {
        comm: true,
        dso: true,
        sym: true,
        ..Keys::default()
    };
    let filter = Filter::default();
    let t = report::aggregate(&p, 0, keys, &filter, true);
    let sw = switches();
    eprintln!(
        "analysis: {SAMPLES} samples -> {} report rows; {SWITCHES} switches -> {} blocks",
        t.rows.len(),
        pair(&sw).len()
    );
    let mut g = c.benchmark_group("analysis");
    g.sample_size(10);
    g.throughput(Throughput::Elements(SAMPLES as u64));
    g.bench_function("report_self", |b| {
        b.iter(|| black_box(report::aggregate(black_box(&p), 0, keys, &filter, false)).period)
    });
    g.bench_function("report_children", |b| {
        b.iter(|| black_box(report::aggregate(black_box(&p), 0, keys, &filter, true)).period)
    });
    g.throughput(Throughput::Elements(SWITCHES as u64));
    g.bench_function("offcpu_pair", |b| {
        b.iter(|| black_box(pair(black_box(&sw))).len())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
