//! Fold + render in samples/s: a generated [`Profile`] of 200k samples whose stacks are
//! 40 frames deep over 2,000 distinct frames (20,000 distinct call paths, picked with a
//! skew so that a few paths are hot, as in real profiles), folded by `hwprof flamegraph`'s
//! fold and drawn by its inferno renderer, separately and together.
//!
//! `cargo bench --bench fold_render`

#[allow(dead_code, unused_imports)]
#[path = "../cli/flamegraph/fold.rs"]
mod fold;
#[allow(dead_code, unused_imports)]
#[path = "../cli/flamegraph/svg.rs"]
mod svg;

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hwprof_pmu::attr::Attr;
use hwprof_symbolize::{EventInfo, Frame, FrameKind, Profile, Sample};

const SAMPLES: usize = 200_000;
const DEPTH: usize = 40;
const FRAMES: usize = 2_000;
const PATHS: usize = 20_000;

/// A seeded xorshift: the same profile on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn generated() -> Profile {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let frames: Vec<Frame> = (0..FRAMES)
        .map(|i| Frame {
            function: Some(format!("module_{}::function_number_{i}", i % 37)),
            module: Some("/usr/lib/libbench.so".into()),
            module_offset: i as u64 * 64,
            file: Some(format!("src/file_{}.rs", i % 101)),
            line: Some(i as u32 % 500 + 1),
            inlined: i % 10 == 3,
            kind: if i >= FRAMES - 100 {
                FrameKind::Kernel
            } else {
                FrameKind::User
            },
        })
        .collect();
    // Call paths: a random walk down a tree-like graph (each frame calls a few others).
    let paths: Vec<Vec<u32>> = (0..PATHS)
        .map(|_| {
            let mut f = (rng.next() % 16) as usize;
            let mut root_first = Vec::with_capacity(DEPTH);
            for _ in 0..DEPTH {
                root_first.push(f as u32);
                f = (f * 7 + 1 + (rng.next() % 3) as usize) % FRAMES;
            }
            root_first.reverse(); // stacks are leaf first
            root_first
        })
        .collect();
    let samples = (0..SAMPLES)
        .map(|_| {
            // Skewed: squaring a uniform number makes low-numbered paths hot.
            let u = (rng.next() % 1_000_000) as f64 / 1e6;
            let path = ((u * u) * PATHS as f64) as usize;
            Sample {
                event: 0,
                pid: 1,
                tid: 1,
                comm: 0,
                time: None,
                cpu: None,
                period: 1_000_000 + rng.next() % 1000,
                weight: None,
                count: 1,
                stack: paths[path.min(PATHS - 1)].clone(),
            }
        })
        .collect();
    Profile {
        events: vec![EventInfo {
            name: "cpu-clock".into(),
            attr: Attr::default(),
        }],
        frames,
        comms: vec!["bench".into()],
        samples,
        lost: 0,
    }
}

fn render(f: &fold::Folded) -> usize {
    let r = svg::Render {
        title: "cpu-clock".into(),
        subtitle: None,
        count_name: "ns".into(),
        sources: &f.sources,
    };
    svg::render(f.lines(), &r).expect("render").len()
}

fn bench(c: &mut Criterion) {
    let p = generated();
    let opts = fold::FoldOptions::default();
    let folded = fold::fold(&p, 0, fold::CountBy::Period, opts);
    eprintln!(
        "fold_render: {SAMPLES} samples, {DEPTH}-deep stacks, {FRAMES} frames -> {} distinct folded stacks, SVG {} bytes",
        folded.lines().count(),
        render(&folded)
    );
    let mut g = c.benchmark_group("fold_render");
    g.sample_size(10);
    g.throughput(Throughput::Elements(SAMPLES as u64));
    g.bench_function("fold", |b| {
        b.iter(|| black_box(fold::fold(black_box(&p), 0, fold::CountBy::Period, opts)).total)
    });
    g.bench_function("render", |b| {
        b.iter(|| black_box(render(black_box(&folded))))
    });
    g.bench_function("fold+render", |b| {
        b.iter(|| {
            let f = fold::fold(black_box(&p), 0, fold::CountBy::Period, opts);
            black_box(render(&f))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
