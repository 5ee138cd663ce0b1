//! `hwprof bench`: statistics against independent computations, figures against `perf
//! stat`, baselines, A/B mode, output formats, bad input, and the measured reliability
//! of the verdict on this machine (2× and 10% slowdowns flagged, A/A comparisons not).
//!
//! The tests run one at a time (a lock): they measure timing, and two benchmarks
//! sharing this machine's CPUs would disturb each other.

#[macro_use]
mod common;

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use common::*;
use serde_json::Value;

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// `work K`: K thousand rounds of fixed CPU work (20 is about 20 ms here).
fn work(k: u32) -> Vec<String> {
    vec![wl("work"), k.to_string()]
}

fn bench(args: &[&str], cmd: &[String]) -> Run {
    let mut v: Vec<String> = vec!["bench".into()];
    v.extend(args.iter().map(|s| s.to_string()));
    v.push("--".into());
    v.extend(cmd.iter().cloned());
    let mut c = std::process::Command::new(hwprof_bin());
    c.args(&v);
    run_cmd(&mut c, std::time::Duration::from_secs(120))
}

fn json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("not JSON ({e})\n{}", run.dump()))
}

fn metric<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["metrics"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["name"] == name))
        .unwrap_or_else(|| panic!("no metric {name} in {doc}"))
}

fn change<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["comparison"]["metrics"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["name"] == name))
        .unwrap_or_else(|| panic!("no compared metric {name} in {}", doc["comparison"]))
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn dir(tag: &str) -> String {
    let d = scratch_path(tag);
    let _ = std::fs::remove_dir_all(&d);
    d.to_string_lossy().into_owned()
}

// ---------------------------------------------------------------------------
// One series: the summary
// ---------------------------------------------------------------------------

#[test]
fn summary_json_has_every_metric_with_consistent_statistics() {
    let _g = serial();
    let r = bench(&["-r", "7", "--json"], &work(5));
    r.assert_ok();
    let doc = json(&r);
    assert_eq!(doc["schema"], "hwprof-bench/1");
    assert_eq!(doc["settings"]["runs"], 7);
    assert_eq!(doc["settings"]["warmup"], 1);
    assert_eq!(doc["command"][1], "5");
    assert_eq!(doc["machine"]["pmu"], hardware_pmu());
    assert!(doc.get("comparison").is_none());
    for name in [
        "wall-time",
        "user-time",
        "sys-time",
        "task-clock",
        "page-faults",
        "context-switches",
        "max-rss",
    ] {
        let m = metric(&doc, name);
        assert_eq!(m["supported"], true, "{name}");
        let v = floats(&m["values"]);
        assert_eq!(v.len(), 7, "{name}: {m}");
        let med = m["median"].as_f64().unwrap();
        assert_eq!(med, median(&v), "{name}");
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        assert_eq!(m["min"].as_f64().unwrap(), min, "{name}");
        let dev: Vec<f64> = v.iter().map(|x| (x - med).abs()).collect();
        assert_eq!(m["mad"].as_f64().unwrap(), median(&dev), "{name}");
        let ci = floats(&m["ci95"]);
        assert!(ci[0] <= med && med <= ci[1], "{name}: {ci:?} vs {med}");
    }
    // task-clock in ns: 5 thousand rounds take milliseconds, and never more than wall.
    let tc = metric(&doc, "task-clock");
    let wall = floats(&metric(&doc, "wall-time")["values"]);
    for (t, w) in floats(&tc["values"]).iter().zip(&wall) {
        assert!(*t > 1e5 && t <= w, "task-clock {t} ns vs wall {w} ns");
    }
    for hw in ["instructions", "cycles", "branch-misses", "cache-misses"] {
        let m = metric(&doc, hw);
        if hardware_pmu() {
            assert_eq!(m["supported"], true, "{hw}");
        } else {
            assert_eq!(m["supported"], false, "{hw}");
            assert!(floats(&m["values"]).is_empty() && m["median"].is_null());
        }
    }
    if !hardware_pmu() {
        assert_eq!(
            r.stderr.matches("<not supported>").count(),
            1,
            "one note for the hardware events\n{}",
            r.dump()
        );
        skip(
            Why::NoHardwarePmu,
            "no hardware PMU: instructions/cycles/branch-misses/cache-misses checked as <not supported> only",
        );
    }
}

#[test]
fn human_output_has_table_and_distribution_plot() {
    let _g = serial();
    let r = bench(&["-r", "5", "--warmup", "0"], &work(3));
    r.assert_ok();
    let out = &r.stdout;
    assert!(out.starts_with("hwprof bench: /"), "{out}");
    assert!(out.contains("5 runs, no warm-up"), "{out}");
    let head = out
        .lines()
        .find(|l| l.starts_with("metric"))
        .expect("header");
    for col in ["median", "MAD", "min", "95% CI of median", "distribution"] {
        assert!(head.contains(col), "{head}");
    }
    let tc = out
        .lines()
        .find(|l| l.starts_with("task-clock "))
        .expect("task-clock line");
    assert!(tc.contains(" ms") && tc.contains('│'), "{tc}");
    let bars: usize = tc.chars().filter(|c| ('▁'..='█').contains(c)).count();
    assert!((1..=5).contains(&bars), "one bar per occupied bin: {tc}");
}

/// hwprof's per-run counts against `perf stat -r` on the same command: the medians of
/// the counts the kernel gave agree.
#[test]
fn figures_agree_with_perf_stat() {
    let _g = serial();
    if !require_perf("bench vs perf stat") {
        return;
    }
    let cmd = work(10);
    let r = bench(&["-r", "9", "--json", "-e", "task-clock,page-faults"], &cmd);
    r.assert_ok();
    let doc = json(&r);
    let mut args = vec![
        "stat",
        "-r",
        "9",
        "-x,",
        "-e",
        "task-clock,page-faults",
        "--",
    ];
    args.extend(cmd.iter().map(String::as_str));
    let p = perf(&args);
    p.assert_ok();
    // `perf stat -r -x,`: value,unit,event,variance,run time,%running,...
    let field = |event: &str| -> f64 {
        p.stderr
            .lines()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .find(|f| f.len() > 3 && f[2] == event)
            .and_then(|f| f[0].parse().ok())
            .unwrap_or_else(|| panic!("no {event} in perf's output\n{}", p.dump()))
    };
    let pf_perf = field("page-faults");
    let tc_perf = field("task-clock") * 1e6; // perf: msec
    let pf = metric(&doc, "page-faults")["median"].as_f64().unwrap();
    let tc = metric(&doc, "task-clock")["median"].as_f64().unwrap();
    // 9 runs each of work 10 (~10 ms, ~54 page faults), a mean against a median, in 49
    // runs under a parallel load: page-faults at most 3 faults (5.6%) apart, task-clock
    // -5.4% to +4.6%; 4 times that.
    assert_close(
        "page-faults (perf mean vs hwprof median)",
        pf_perf,
        pf,
        12.0,
    );
    assert_close(
        "task-clock ns (perf mean vs hwprof median)",
        tc_perf,
        tc,
        tc_perf * 0.22,
    );
}

// ---------------------------------------------------------------------------
// Verdicts: reliability measured on this machine
// ---------------------------------------------------------------------------

#[test]
fn twice_the_work_is_a_regression_against_a_baseline() {
    let _g = serial();
    let d = dir("bench-2x");
    bench(&["--save", "main", "--baseline-dir", &d], &work(10)).assert_ok();
    let saved = Path::new(&d).join("main.json");
    let text = std::fs::read_to_string(&saved).expect("baseline saved");
    let base: Value = serde_json::from_str(&text).expect("baseline is JSON");
    assert_eq!(base["name"], "main");
    assert!(base.get("comparison").is_none());

    let r = bench(
        &["--baseline", "main", "--baseline-dir", &d, "--json"],
        &work(20),
    );
    assert_eq!(r.code(), 1, "regression exits 1\n{}", r.dump());
    let doc = json(&r);
    assert_eq!(doc["comparison"]["verdict"], "regression");
    assert_eq!(doc["comparison"]["mode"], "baseline");
    let tc = change(&doc, "task-clock");
    assert_eq!(tc["verdict"], "regression", "{tc}");
    assert_eq!(tc["gating"], true);
    let pct = tc["change_pct"].as_f64().unwrap();
    let ci = floats(&tc["change_ci"]);
    // +84.4% to +102.0% in 49 runs under a parallel load (work 20 vs 10: +100%); 3
    // times that.
    assert!((50.0..150.0).contains(&pct), "2× work: {pct}%");
    assert!(ci[0] > 5.0 && ci[0] <= pct && pct <= ci[1], "{ci:?}");
    assert!(tc["p_adjusted"].as_f64().unwrap() < 0.01);
    assert_eq!(change(&doc, "page-faults")["verdict"], "no_change");
    // The warning: the baseline measured a different command.
    assert!(r.stderr.contains("different command"), "{}", r.dump());
    report!("2x work vs baseline: task-clock {pct:+.1}% CI {ci:?}");

    // And half the work is an improvement, exit 0.
    let r = bench(&["--baseline", "main", "--baseline-dir", &d], &work(5));
    assert_eq!(r.code(), 0, "{}", r.dump());
    assert!(r.stdout.contains("improvement"), "{}", r.dump());
    assert!(
        r.stdout.contains("no regression; improved: "),
        "{}",
        r.stdout
    );
}

#[test]
fn ab_mode_flags_2x_and_10_percent_slower() {
    let _g = serial();
    let a = work(10).join(" ");
    let r = bench(&["--compare", &a, "--json"], &work(20));
    assert_eq!(r.code(), 1, "{}", r.dump());
    let doc = json(&r);
    assert_eq!(doc["comparison"]["mode"], "ab");
    assert_eq!(doc["baseline"]["name"], "A");
    assert_eq!(doc["name"], "B");
    assert_eq!(change(&doc, "task-clock")["verdict"], "regression");
    // Wall time grows too (by 70% to 100%: each run also starts a process), but 10 runs
    // a side do not always make that significant when other programs take the CPUs
    // between runs (no_change in 34 of 70 runs under a parallel load, load average 4 to
    // 10), so: a regression, or at least its median moved up. +49% to +130% in 26 runs.
    let wall = change(&doc, "wall-time");
    let wall_pct = wall["change_pct"].as_f64().unwrap_or(0.0);
    report!(
        "2x work, A/B 10 runs: wall-time {wall_pct:+.1}% p {} {}",
        wall["p_adjusted"],
        wall["verdict"]
    );
    assert!(
        wall["verdict"] == "regression"
            || (wall["verdict"] == "no_change" && wall_pct >= WALL_2X_MIN_PCT),
        "{wall}"
    );
    // 10% more work, with enough runs (30 per side).
    let a = work(20).join(" ");
    let r = bench(&["--compare", &a, "-r", "30", "--json"], &work(22));
    let doc = json(&r);
    let tc = change(&doc, "task-clock");
    let pct = tc["change_pct"].as_f64().unwrap();
    report!(
        "10% more work, A/B 30 runs: task-clock {pct:+.1}% CI {:?} p {}; wall {}",
        floats(&tc["change_ci"]),
        tc["p_adjusted"],
        change(&doc, "wall-time")["change_pct"]
    );
    assert_eq!(r.code(), 1, "{}", r.dump());
    assert_eq!(tc["verdict"], "regression", "{tc}");
    // task-clock: +9.1% to +10.2% in 21 runs under a parallel load (22 vs 20: +10%); 4
    // times that.
    assert!((6.0..14.0).contains(&pct), "{pct}");
}

/// The smallest median change of wall time accepted for twice the work when the A/B
/// verdict is no_change (+49% to +130% seen; a quarter of +49% is +12).
const WALL_2X_MIN_PCT: f64 = 12.0;

/// 20 A/A comparisons at the default settings in A/B mode: at most one may call a
/// regression (the test is at 99% confidence with Holm's correction, plus the 5%
/// threshold). Interleaving the two commands' runs cancels the machine's load.
///
/// Against a saved baseline the two series are measured at different moments, so an
/// A/A regression there is a timing test of the machine: task-clock medians of one
/// series moved by up to 3.6% between runs a second apart on this shared VM, and by
/// more than the 5% threshold under other load ("baseline: [0, 4]" in 20 runs). What
/// baseline mode adds to A/B mode is checked here without timing instead: the values
/// compared are exactly those saved, the default gate leaves out what load moves (wall
/// time), and the exit code follows the verdict. The false-regression rate of the
/// statistics themselves is checked on synthetic A/A data, where no load enters
/// (`aa_comparisons_rarely_find_a_difference` in analysis/src/stats/verdict.rs).
#[test]
fn aa_comparisons_rarely_call_a_regression() {
    let _g = serial();
    let cmd = work(15);
    let a = cmd.join(" ");
    let d = dir("bench-aa");
    let (mut ab_false, mut base_false) = (Vec::new(), Vec::new());
    for i in 0..20 {
        let r = bench(&["--compare", &a], &cmd);
        match r.code() {
            0 => {}
            1 => ab_false.push(i),
            c => panic!("exit {c}\n{}", r.dump()),
        }
        if i % 4 != 0 {
            continue;
        }
        bench(&["--save", "aa", "--baseline-dir", &d], &cmd).assert_ok();
        let saved: Value = serde_json::from_str(
            &std::fs::read_to_string(Path::new(&d).join("aa.json")).expect("saved baseline"),
        )
        .expect("baseline JSON");
        let r = bench(&["--baseline", "aa", "--baseline-dir", &d, "--json"], &cmd);
        let doc = json(&r);
        let cmp = &doc["comparison"];
        assert_eq!(cmp["mode"], "baseline");
        // The baseline compared is the one saved, value for value.
        for m in saved["metrics"].as_array().expect("metrics") {
            let name = m["name"].as_str().expect("name");
            assert_eq!(
                floats(&metric(&doc["baseline"], name)["values"]),
                floats(&m["values"]),
                "{name}"
            );
        }
        // Gating: what the load moves (wall, user and system time) never decides.
        let gating: Vec<&str> = cmp["metrics"]
            .as_array()
            .expect("changes")
            .iter()
            .filter(|m| m["gating"] == true)
            .filter_map(|m| m["name"].as_str())
            .collect();
        let expected: &[&str] = if hardware_pmu() {
            &["task-clock", "instructions", "cycles"]
        } else {
            &["task-clock"]
        };
        assert_eq!(gating, expected, "{cmp}");
        let regressed = cmp["verdict"] == "regression";
        assert_eq!(r.code(), i32::from(regressed), "{}", r.dump());
        if regressed {
            report!(
                "A/A against a baseline saved a moment before: regression (task-clock {})",
                change(&doc, "task-clock")
            );
            base_false.push(i);
        }
    }
    report!(
        "A/A false regressions: A/B mode {} of 20, baseline mode {} of 5 (not asserted: the machine's drift between two moments)",
        ab_false.len(),
        base_false.len()
    );
    assert!(ab_false.len() <= 1, "A/B: {ab_false:?}");
}

/// The verdict uses the Holm-corrected p-value, not each metric's own. The baseline's
/// wall-time and task-clock runs are made 1..5 ns, below every run of today (ms): each
/// metric alone is as significant as 5 runs against 5 can be, p = 2/C(10,5) = 0.0079 <
/// 0.01, but the two tested together double the smaller p (Holm): 0.0159 ≥ 0.01. So at
/// 99% no verdict may call the (huge) change a regression, exit 0; at 98% both are.
#[test]
fn the_verdict_uses_the_holm_corrected_p_value() {
    let _g = serial();
    let d = dir("bench-holm");
    bench(&["-r", "5", "--save", "h", "--baseline-dir", &d], &work(2)).assert_ok();
    let path = Path::new(&d).join("h.json");
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let keep = ["wall-time", "task-clock"];
    let metrics: Vec<Value> = doc["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .filter(|m| keep.iter().any(|k| m["name"] == *k))
        .map(|m| {
            let mut m = m.clone();
            m["values"] = serde_json::json!([1.0, 2.0, 3.0, 4.0, 5.0]);
            m["median"] = 3.0.into();
            m["mad"] = 1.0.into();
            m["min"] = 1.0.into();
            m["max"] = 5.0.into();
            m["ci95"] = serde_json::json!([2.0, 4.0]);
            m
        })
        .collect();
    assert_eq!(metrics.len(), 2, "{doc}");
    doc["metrics"] = Value::Array(metrics);
    std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();

    let compare = |confidence: &str| {
        bench(
            &[
                "-r",
                "5",
                "--baseline",
                "h",
                "--baseline-dir",
                &d,
                "--gate",
                "wall-time,task-clock",
                "--confidence",
                confidence,
                "--json",
            ],
            &work(2),
        )
    };
    let r = compare("0.99");
    let out = json(&r);
    for m in keep {
        let c = change(&out, m);
        let p = c["p_value"].as_f64().expect("p_value");
        let padj = c["p_adjusted"].as_f64().expect("p_adjusted");
        report!(
            "Holm: {m}: p {p:.4}, adjusted {padj:.4}, verdict {}",
            c["verdict"]
        );
        assert!((p - 2.0 / 252.0).abs() < 1e-9, "{m}: p {p}\n{}", r.dump());
        assert!(
            (padj - 4.0 / 252.0).abs() < 1e-9,
            "{m}: {padj}\n{}",
            r.dump()
        );
        assert_eq!(c["verdict"], "no_change", "{m}: {c}");
    }
    assert_eq!(out["comparison"]["verdict"], "no_change");
    assert_eq!(r.code(), 0, "{}", r.dump());
    // Where 0.0159 is significant, both are regressions.
    let r = compare("0.98");
    let out = json(&r);
    for m in keep {
        assert_eq!(
            change(&out, m)["verdict"],
            "regression",
            "{m}\n{}",
            r.dump()
        );
    }
    assert_eq!(r.code(), 1, "{}", r.dump());
}

// ---------------------------------------------------------------------------
// Baselines across machines, formats
// ---------------------------------------------------------------------------

/// Within `rel` of `want` (the JSON holds the shortest decimal of each f64; serde_json
/// may read it back one unit in the last place off).
fn close_to(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs().max(1e-300)
}

/// The intervals of the JSON are the bootstrap's at the levels asked: each metric's
/// `ci95` at 95%, each change's `change_ci` at `--confidence` (99% by default), computed
/// here from the values in the document with `hwprof_analysis::stats`, whose ranks are
/// tested against a reference bootstrap. A level passed wrong (98% for 99%, 99% for
/// 95%) gives other numbers.
#[test]
fn intervals_are_the_bootstrap_at_the_levels_asked() {
    use hwprof_analysis::stats::{change_ci, median_ci};
    let _g = serial();
    let a = work(2).join(" ");
    for (args, level) in [
        (vec!["--compare", &a, "-r", "8", "--json"], 0.99),
        (
            vec!["--compare", &a, "-r", "8", "--json", "--confidence", "0.98"],
            0.98,
        ),
    ] {
        let r = bench(&args, &work(2));
        let doc = json(&r);
        assert_eq!(doc["settings"]["confidence"], level, "{}", r.dump());
        let base = &doc["baseline"];
        let mut checked = 0;
        for side in [&doc, base] {
            for m in side["metrics"].as_array().expect("metrics") {
                if m["supported"] != true {
                    continue;
                }
                let v = floats(&m["values"]);
                let (lo, hi) = median_ci(&v, 0.95);
                let ci = floats(&m["ci95"]);
                assert!(
                    close_to(ci[0], lo, 1e-12) && close_to(ci[1], hi, 1e-12),
                    "{}: ci95 {ci:?}, the 95% bootstrap is [{lo}, {hi}]",
                    m["name"]
                );
            }
        }
        for c in doc["comparison"]["metrics"].as_array().expect("changes") {
            let name = c["name"].as_str().expect("name");
            let (b, n) = (
                floats(&metric(base, name)["values"]),
                floats(&metric(&doc, name)["values"]),
            );
            let (lo, hi) = change_ci(&b, &n, level);
            let ci = floats(&c["change_ci"]);
            if !(lo.is_finite() && hi.is_finite()) {
                assert!(ci.is_empty(), "{name}: {c}");
                continue;
            }
            assert!(
                close_to(ci[0], lo, 1e-12) && close_to(ci[1], hi, 1e-12),
                "{name}: change_ci {ci:?}, the {level} bootstrap is [{lo}, {hi}]"
            );
            checked += 1;
        }
        assert!(checked >= 3, "{checked} intervals checked\n{}", r.dump());
    }
}

/// A baseline whose counts were multiplexed (estimated from time enabled / running) is
/// said so, in one warning line naming the metric; the same comparison without it is not.
#[test]
fn a_multiplexed_baseline_is_warned() {
    let _g = serial();
    let d = dir("bench-multiplexed");
    bench(&["-r", "5", "--save", "m", "--baseline-dir", &d], &work(2)).assert_ok();
    let compare = || {
        bench(
            &["-r", "5", "--baseline", "m", "--baseline-dir", &d],
            &work(2),
        )
    };
    let warning =
        "hwprof: warning: multiplexed, so estimated (scaled by time enabled/running): page-faults";
    let r = compare();
    assert!(!r.stderr.contains("multiplexed"), "{}", r.dump());
    let path = Path::new(&d).join("m.json");
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for m in doc["metrics"].as_array_mut().expect("metrics") {
        if m["name"] == "page-faults" {
            m["scaled"] = true.into();
        }
    }
    std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
    let r = compare();
    assert_eq!(
        r.stderr
            .lines()
            .filter(|l| l.contains("multiplexed"))
            .collect::<Vec<_>>(),
        [warning],
        "{}",
        r.dump()
    );
}

#[test]
fn baseline_from_another_machine_is_warned_and_compares_what_both_have() {
    let _g = serial();
    let d = dir("bench-machine");
    bench(&["-r", "5", "--save", "x", "--baseline-dir", &d], &work(3)).assert_ok();
    let path = Path::new(&d).join("x.json");
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    doc["machine"]["kernel"] = "9.9.9-elsewhere".into();
    doc["machine"]["pmu"] = (!hardware_pmu()).into();
    doc["machine"]["cpu"] = "Some Other CPU".into();
    // A metric only the other machine counted.
    let mut extra = doc["metrics"][0].clone();
    extra["name"] = "bus-cycles".into();
    doc["metrics"].as_array_mut().unwrap().push(extra);
    std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();

    let r = bench(
        &["-r", "5", "--baseline", "x", "--baseline-dir", &d, "--json"],
        &work(3),
    );
    let out = json(&r);
    let warns = out["comparison"]["warnings"].to_string();
    assert!(warns.contains("different machine"), "{warns}");
    assert!(warns.contains("kernel 9.9.9-elsewhere vs"), "{warns}");
    assert!(warns.contains("Some Other CPU"), "{warns}");
    assert!(
        warns.contains("counted in the baseline only): bus-cycles"),
        "{warns}"
    );
    assert!(
        r.stderr
            .lines()
            .any(|l| l
                .starts_with("hwprof: warning: the baseline was measured on a different machine")),
        "{}",
        r.dump()
    );
    let names: Vec<&str> = out["comparison"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert!(
        names.contains(&"task-clock") && !names.contains(&"bus-cycles"),
        "{names:?}"
    );
}

#[test]
fn markdown_is_a_pull_request_table() {
    let _g = serial();
    let a = work(3).join(" ");
    let r = bench(&["-r", "5", "--compare", &a, "--markdown"], &work(3));
    assert!(r.code() == 0 || r.code() == 1, "{}", r.dump());
    let md = &r.stdout;
    assert!(md.starts_with("#### hwprof bench: A: `/"), "{md}");
    assert!(
        md.contains("| metric | A | B | change | 99% CI | p | verdict |"),
        "{md}"
    );
    assert!(md.contains("|:--|--:|--:|--:|:--|--:|:--|"), "{md}");
    let row = md
        .lines()
        .find(|l| l.starts_with("| task-clock |"))
        .expect("task-clock row");
    assert_eq!(row.matches('|').count(), 8, "{row}");
    // The too-few-runs warning appears with 5 runs over 7 metrics at 99%? No: 5 runs
    // can reach p = 2/252 before correction only; the tool says so.
    assert!(md.contains("> **warning:** too few runs"), "{md}");

    let r = bench(&["-r", "3", "--markdown"], &work(2));
    r.assert_ok();
    assert!(
        r.stdout
            .contains("| metric | median | MAD | min | 95% CI of median |")
    );
}

#[test]
fn command_output_is_discarded_unless_asked() {
    let _g = serial();
    let cmd: Vec<String> = ["sh", "-c", "echo out-marker; echo err-marker >&2"]
        .map(String::from)
        .to_vec();
    let r = bench(&["-r", "2", "--warmup", "0"], &cmd);
    r.assert_ok();
    let line_is = |text: &str, l: &str| text.lines().filter(|x| x.trim() == l).count();
    assert_eq!(line_is(&r.stdout, "out-marker"), 0, "{}", r.dump());
    assert_eq!(line_is(&r.stderr, "err-marker"), 0, "{}", r.dump());
    // Shown on stderr: stdout holds only the report.
    let r = bench(&["-r", "2", "--warmup", "0", "--show-output"], &cmd);
    r.assert_ok();
    assert_eq!(line_is(&r.stdout, "out-marker"), 0, "{}", r.dump());
    assert_eq!(line_is(&r.stderr, "out-marker"), 2, "{}", r.dump());
    assert_eq!(line_is(&r.stderr, "err-marker"), 2, "{}", r.dump());
}

// ---------------------------------------------------------------------------
// Bad input: one line, the right exit code, no file left behind
// ---------------------------------------------------------------------------

fn one_line_error(r: &Run, code: i32, words: &str) {
    assert_eq!(r.code(), code, "{}", r.dump());
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line\n{}", r.dump());
    assert!(lines[0].starts_with("hwprof: "), "{}", lines[0]);
    assert!(lines[0].contains(words), "wanted '{words}': {}", lines[0]);
}

#[test]
fn bad_input_gives_one_line_and_exit_code() {
    let _g = serial();
    let d = dir("bench-bad");
    let w = work(1);
    one_line_error(
        &bench(&["--baseline", "nope", "--baseline-dir", &d], &w),
        2,
        "no baseline 'nope'",
    );
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(Path::new(&d).join("junk.json"), "{\"schema\": 3").unwrap();
    one_line_error(
        &bench(&["--baseline", "junk", "--baseline-dir", &d], &w),
        2,
        "is not a hwprof bench baseline",
    );
    std::fs::write(
        Path::new(&d).join("other.json"),
        "{\"schema\": \"hwprof-bench/2\"}",
    )
    .unwrap();
    one_line_error(
        &bench(&["--baseline", "other", "--baseline-dir", &d], &w),
        2,
        "hwprof-bench/2",
    );
    one_line_error(&bench(&["-r", "1"], &w), 2, "at least 2 runs");
    one_line_error(&bench(&["--confidence", "1.5"], &w), 2, "between 0 and 1");
    one_line_error(&bench(&["--threshold=-3"], &w), 2, "--threshold");
    one_line_error(&bench(&["--compare", "a | b"], &w), 2, "shell syntax");
    one_line_error(
        &bench(&["--gate", "bogus"], &w),
        2,
        "--gate bogus: no such metric",
    );
    one_line_error(&bench(&["-e", "not-an-event"], &w), 2, "not-an-event");
    one_line_error(&bench(&[], &[]), 2, "after `--`");
    one_line_error(
        &bench(&["--save", "a", "--baseline", "b", "--compare", "x"], &w),
        2,
        "cannot be used with",
    );
    // Cannot run: a shell's 127, as every command that starts a program (was 3).
    one_line_error(
        &bench(&[], &["/nonexistent/cmd".to_string()]),
        127,
        "/nonexistent/cmd",
    );
    let fail: Vec<String> = ["sh", "-c", "exit 4"].map(String::from).to_vec();
    one_line_error(&bench(&["-r", "2"], &fail), 3, "exited with code 4");
    // --ignore-failure measures anyway.
    bench(&["-r", "2", "--ignore-failure"], &fail).assert_ok();
    // An unwritable --save fails before any run, and leaves nothing.
    let ro = Path::new(&d).join("file-not-dir");
    std::fs::write(&ro, "x").unwrap();
    let bad = format!("{}/sub/b.json", ro.display());
    let marker = Path::new(&d).join("ran");
    let touch: Vec<String> = ["touch", marker.to_str().unwrap()]
        .map(String::from)
        .to_vec();
    one_line_error(
        &bench(&["--save", &bad], &touch),
        3,
        "cannot create baseline directory",
    );
    assert!(
        !marker.exists(),
        "the command must not run when the baseline cannot be saved"
    );
}

/// Starts `hwprof bench ARGS -- sh -c 'echo >> MARKS; sleep 0.05'` in the background,
/// waits until the command has started `starts` times (lines in MARKS: no timing), then
/// sends hwprof SIGINT; returns its exit status, stdout and stderr.
fn interrupted_bench(tag: &str, args: &[&str], starts: usize) -> (Option<i32>, String, String) {
    let marks = scratch_path(&format!("bench-marks-{tag}"));
    let _ = std::fs::remove_file(&marks);
    let script = format!("echo x >> '{}'; sleep 0.05", marks.display());
    let mut c = std::process::Command::new(hwprof_bin());
    c.arg("bench").args(args).args(["--", "sh", "-c", &script]);
    let mut bg = Background::spawn(&mut c);
    let started = || {
        std::fs::read_to_string(&marks)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while started() < starts {
        assert!(bg.alive(), "bench ended before {starts} runs started");
        assert!(std::time::Instant::now() < deadline, "runs did not start");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(signal(bg.pid(), libc::SIGINT));
    let (st, out, err) = bg
        .wait_timeout(std::time::Duration::from_secs(60))
        .expect("bench ends on SIGINT");
    (st.code(), out, err)
}

/// Ctrl-C ended `bench` with exit 0, as if it had measured what was asked: it reports
/// the runs that finished, says it was interrupted, saves no baseline, and exits 130
/// (as perf and a shell report SIGINT); before 2 runs, it says there is nothing to
/// report, exit 130.
#[test]
fn an_interrupted_bench_says_so_and_exits_130() {
    let _g = serial();
    let d = scratch_path("bench-interrupted");
    let _ = std::fs::remove_dir_all(&d);
    let d = d.to_str().unwrap().to_string();
    let args = ["-r", "1000", "--save", "partial", "--baseline-dir", &d];
    // 1 warm-up run, then at least 3 measured ones have finished.
    let (code, out, err) = interrupted_bench("late", &args, 5);
    assert_eq!(code, Some(130), "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        err.contains("hwprof: bench interrupted: reporting the"),
        "stderr:\n{err}"
    );
    assert!(
        out.contains("task-clock"),
        "the finished runs are reported:\n{out}"
    );
    assert!(
        err.contains("baseline 'partial' not saved"),
        "stderr:\n{err}"
    );
    assert!(
        !Path::new(&d).join("partial.json").exists(),
        "an interrupted bench saves no baseline"
    );
    let (code, _, err) = interrupted_bench("early", &["-r", "1000"], 1);
    assert_eq!(code, Some(130), "stderr:\n{err}");
    let last = err.trim().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("hwprof: bench interrupted after") && last.contains("nothing to report"),
        "stderr:\n{err}"
    );
}
