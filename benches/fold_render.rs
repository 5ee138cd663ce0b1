//! Fold + render in samples/s: the generated profile of [`generated`] (200k samples,
//! 40-deep stacks), folded by [`hwprof_analysis::fold`] and drawn by inferno with the
//! options `hwprof flamegraph` draws with, separately and together.
//!
//! `cargo bench --bench fold_render`

mod generated;

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use generated::{DEPTH, FRAMES, SAMPLES};
use hwprof_analysis::fold::{self, FoldOptions, Folded, Weight};
use inferno::flamegraph::color::{MultiPalette, Palette};
use inferno::flamegraph::{self, Options};

/// The SVG's size: inferno with `hwprof flamegraph`'s options (cli/render/svg.rs).
fn render(f: &Folded) -> usize {
    let mut opt = Options::default();
    opt.colors = Palette::Multi(MultiPalette::Java);
    opt.deterministic = true;
    opt.hash = false;
    opt.title = "cpu-clock".into();
    opt.count_name = "ns".into();
    opt.no_sort = true;
    let mut svg = Vec::with_capacity(1 << 20);
    flamegraph::from_lines(&mut opt, f.lines(), &mut svg).expect("render");
    svg.len()
}

fn bench(c: &mut Criterion) {
    let p = generated::profile();
    let opts = FoldOptions::default();
    let folded = fold::fold(&p, 0, Weight::Period, opts);
    eprintln!(
        "fold_render: {SAMPLES} samples, {DEPTH}-deep stacks, {FRAMES} frames -> {} distinct folded stacks, SVG {} bytes",
        folded.lines().count(),
        render(&folded)
    );
    let mut g = c.benchmark_group("fold_render");
    g.sample_size(10);
    g.throughput(Throughput::Elements(SAMPLES as u64));
    g.bench_function("fold", |b| {
        b.iter(|| black_box(fold::fold(black_box(&p), 0, Weight::Period, opts)).total)
    });
    g.bench_function("render", |b| {
        b.iter(|| black_box(render(black_box(&folded))))
    });
    g.bench_function("fold+render", |b| {
        b.iter(|| {
            let f = fold::fold(black_box(&p), 0, Weight::Period, opts);
            black_box(render(&f))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
