//! End-to-end tests of `hwprof annotate`: the hot loop line of workload callgraph's
//! `leaf` carries most of its samples, and each marked line's share agrees with the
//! source-line totals of `perf annotate --stdio` on the same file (perf- and
//! hwprof-recorded); every instruction perf counts on a line lies in hwprof's
//! addresses of that line; a missing symbol is one line naming the nearest.

#[macro_use]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;

/// A listed line of `hwprof annotate`: share, samples, address ranges, source text.
struct Line {
    pct: f64,
    ranges: Vec<(u64, u64)>,
    source: String,
}

fn hwprof_annotate(file: &Path, sym: &str) -> Vec<Line> {
    let r = hwprof(&["annotate", "--stdio", "-i", &s(file), sym]);
    r.assert_ok();
    r.stdout
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let l = l.strip_prefix('*').unwrap_or(l);
            let mut w = l.split_whitespace();
            let pct: f64 = w.next().expect("percent").parse().expect("a percent");
            let _samples = w.next();
            let ranges = w
                .next()
                .unwrap_or("")
                .split(',')
                .filter_map(|r| {
                    let (a, b) = r.split_once('-')?;
                    Some((
                        u64::from_str_radix(a, 16).ok()?,
                        u64::from_str_radix(b, 16).ok()?,
                    ))
                })
                .collect();
            let _loc = w.next();
            Line {
                pct,
                ranges,
                source: w.collect::<Vec<_>>().join(" "),
            }
        })
        .collect()
}

/// `perf annotate --stdio SYM`: per source line (its text, spaces collapsed) the
/// summed percentages of the instructions under it, and the addresses of the
/// instructions with samples under it.
fn perf_annotate(file: &Path, sym: &str) -> BTreeMap<String, (f64, Vec<u64>)> {
    let r = perf(&["annotate", "--stdio", "-i", &s(file), sym]);
    r.assert_ok();
    let mut out: BTreeMap<String, (f64, Vec<u64>)> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in r.stdout.lines() {
        let Some((pct, rest)) = line.split_once(" : ") else {
            continue;
        };
        let rest = rest.trim();
        let first = rest.split_whitespace().next().unwrap_or("");
        if let Some(addr) = first.strip_suffix(':') {
            // An instruction: `   85.62 :   4011b6: add ...`.
            let (Ok(addr), Ok(pct)) = (u64::from_str_radix(addr, 16), pct.trim().parse::<f64>())
            else {
                continue;
            };
            if let Some(src) = &current {
                let e = out.entry(src.clone()).or_default();
                e.0 += pct;
                if pct > 0.0 {
                    e.1.push(addr);
                }
            }
        } else if first.parse::<u32>().is_ok() {
            // A source line: `         : 19     for (...`.
            let text: Vec<&str> = rest.split_whitespace().skip(1).collect();
            current = Some(text.join(" "));
        }
    }
    assert!(!out.is_empty(), "nothing parsed\n{}", r.dump());
    out
}

fn record(tool: &str, tag: &str) -> PathBuf {
    let out = scratch_path(tag);
    let o = s(&out);
    let wl = wl("callgraph");
    let mut a = vec!["record", "-e", "cpu-clock", "-F", "999", "-o", &o];
    if tool == "perf" {
        a.insert(1, "-q");
    }
    a.extend(["--", &wl, "400"]);
    if tool == "perf" {
        perf(&a).assert_ok();
    } else {
        hwprof(&a).assert_ok();
    }
    out
}

#[test]
fn hot_line_agrees_with_perf_annotate() {
    if !require_perf("annotate against perf annotate") {
        return;
    }
    for tool in ["perf", "hwprof"] {
        let file = record(tool, &format!("annotate-{tool}.data"));
        let hw = hwprof_annotate(&file, "leaf");
        let pf = perf_annotate(&file, "leaf");
        let hot = |marker: &str| {
            let h = hw
                .iter()
                .find(|l| l.source.contains(marker))
                .unwrap_or_else(|| panic!("no {marker} line in hwprof annotate"));
            let p = pf
                .iter()
                .find(|(src, _)| src.contains(marker))
                .unwrap_or_else(|| panic!("no {marker} line in perf annotate: {pf:#?}"))
                .1;
            (h, p)
        };
        let (h_hot, p_hot) = hot("/* HOT */");
        let (h_warm, p_warm) = hot("/* WARM */");
        assert!(h_hot.pct > 50.0, "{tool}: HOT line {}%", h_hot.pct);
        assert!(h_warm.pct > 3.0, "{tool}: WARM line {}%", h_warm.pct);
        let total: f64 = hw.iter().map(|l| l.pct).sum();
        assert!(
            (total - 100.0).abs() < 0.1,
            "{tool}: lines add up to {total}"
        );
        for (what, h, p) in [("HOT", h_hot, &p_hot), ("WARM", h_warm, &p_warm)] {
            assert!(
                (h.pct - p.0).abs() <= 2.0,
                "{tool}: {what} line: hwprof {}%, perf annotate {}%",
                h.pct,
                p.0
            );
            for a in &p.1 {
                assert!(
                    h.ranges.iter().any(|&(s, e)| (s..e).contains(a)),
                    "{tool}: perf's sampled instruction {a:#x} of the {what} line is outside \
                     hwprof's ranges {:x?}",
                    h.ranges
                );
            }
        }
        report!(
            "{tool} recording: leaf's HOT line hwprof {:.2}% perf {:.2}%, WARM {:.2}% / {:.2}%",
            h_hot.pct,
            p_hot.0,
            h_warm.pct,
            p_warm.0
        );
    }
}

#[test]
fn a_missing_symbol_is_one_line_with_the_nearest_names() {
    let file = record("hwprof", "annotate-missing.data");
    let r = hwprof(&["annotate", "-i", &s(&file), "lef"]);
    assert_eq!(r.code(), 1, "{}", r.dump());
    assert!(r.stdout.is_empty(), "{}", r.dump());
    let err = r.stderr.trim_end();
    assert_eq!(err.lines().count(), 1, "{}", r.dump());
    assert!(
        err.contains("no samples in a function named 'lef'") && err.contains("nearest: leaf"),
        "{}",
        r.dump()
    );
}

/// Without a SYMBOL, the hot functions (1% or more), hottest first: leaf's listing.
#[test]
fn without_a_symbol_the_hot_functions() {
    let file = record("hwprof", "annotate-all.data");
    let r = hwprof(&["annotate", "-i", &s(&file)]);
    r.assert_ok();
    let first = r.stdout.lines().next().unwrap_or("");
    assert!(first.starts_with("# leaf in "), "{}", r.dump());
    assert!(
        r.stdout
            .lines()
            .any(|l| l.starts_with('*') && l.contains("/* HOT */")),
        "{}",
        r.dump()
    );
}
