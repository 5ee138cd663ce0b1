//! A recording from another machine (perf 3.8, Sandy Bridge): builds without error, its
//! kernel frames stay `[unknown]` in `[kernel.kallsyms]` (never this machine's kallsyms),
//! user frames are `[unknown]` in their DSO, and the `--no-children` per-module shares
//! match `perf report --sort dso --no-children` within 0.5 points.

mod common;

use std::collections::HashMap;
use std::process::Command;

use common::{Why, report, skip};
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_symbolize::{FrameKind, Options, Profile, kernel_matches};

#[test]
fn callgraph_3_8_from_another_machine() {
    let Some(path) = hwprof_testkit::fixture_path("perfdata/perf.data.callgraph-3.8") else {
        return;
    };
    let pd = PerfData::open(&path).unwrap();
    assert!(!kernel_matches(pd.features()));
    let p = Profile::build(&pd, &Options::default()).unwrap();
    assert_eq!(p.samples.len(), 1768);
    let kernel: Vec<_> = p
        .frames
        .iter()
        .filter(|f| f.kind == FrameKind::Kernel)
        .collect();
    assert!(!kernel.is_empty());
    assert!(kernel.iter().all(|f| f.function.is_none()));
    assert!(
        kernel
            .iter()
            .any(|f| f.module_name() == "[kernel.kallsyms]")
    );
    assert!(
        p.frames
            .iter()
            .any(|f| f.module_name() == "libc-2.15.so" && f.function.is_none())
    );
    assert!(
        p.frames.iter().all(|f| f.function.is_none()),
        "nothing of this machine names that machine's code"
    );

    // --no-children: the leaf's module, weighted by period.
    let mut ours: HashMap<String, u64> = HashMap::new();
    let mut total = 0u64;
    for s in &p.samples {
        let m = s
            .stack
            .first()
            .map_or("[unknown]", |&f| p.frame(f).module_name());
        *ours.entry(m.to_string()).or_default() += s.period;
        total += s.period;
    }
    if !common::have("perf") {
        skip(Why::Setup, "perf not installed (dso shares not compared)");
        return;
    }
    let out = Command::new("perf")
        .args([
            "report",
            "--sort",
            "dso",
            "--no-children",
            "--stdio",
            "-g",
            "none",
            "-i",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let mut compared = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut it = line.split_whitespace();
        let (Some(pct), Some(dso)) = (it.next(), it.next()) else {
            continue;
        };
        let Ok(theirs) = pct.trim_end_matches('%').parse::<f64>() else {
            continue;
        };
        let mine = *ours.get(dso).unwrap_or(&0) as f64 * 100.0 / total as f64;
        report!("dso {dso:<28} perf {theirs:6.2}%  hwprof {mine:6.2}%");
        assert!(
            (mine - theirs).abs() <= 0.5,
            "{dso}: perf {theirs} vs {mine}"
        );
        compared += 1;
    }
    assert!(compared >= 10, "{text}");
}
