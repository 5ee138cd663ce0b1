//! `hwprof report -b` (branch analysis from LBR) judged by `perf report -b --stdio` on
//! the same files: a real Skylake LBR capture (`perf record -b -- echo`, recorded on
//! another machine, so both tools show addresses).

mod common;

use std::path::PathBuf;

#[track_caller]
fn fixture() -> Option<PathBuf> {
    hwprof_testkit::fixture_path("perfdata/perf.data.branch-4.14")
}

/// The table rows of a `--stdio` report (the lines after the header, two-space margin).
fn rows(out: &str) -> Vec<&str> {
    out.lines().filter(|l| l.starts_with("  ")).collect()
}

/// The `# Samples:` and `# Event count` lines.
fn counts(out: &str) -> Vec<&str> {
    out.lines()
        .filter(|l| l.starts_with("# Samples:") || l.starts_with("# Event count"))
        .collect()
}

/// Every perf row, its trailing padding trimmed, starts hwprof's row at the same place
/// (hwprof adds its Mispredicted and Avg Cycles columns after perf's).
#[track_caller]
fn assert_perf_prefix(hw: &str, perf: &str) {
    let (h, p) = (rows(hw), rows(perf));
    assert!(!p.is_empty(), "perf printed no rows:\n{perf}");
    assert_eq!(h.len(), p.len(), "row count\nhwprof:\n{hw}\nperf:\n{perf}");
    for (i, (h, p)) in h.iter().zip(&p).enumerate() {
        assert!(
            h.starts_with(p.trim_end()),
            "row {i} differs\nhwprof: {h}\nperf:   {p}"
        );
    }
    assert_eq!(counts(hw), counts(perf), "sample and event counts");
}

#[test]
fn report_b_matches_perf_on_a_skylake_lbr_capture() {
    let Some(f) = fixture() else { return };
    if !common::require_perf("perf report -b is the judge") {
        return;
    }
    let f = f.to_string_lossy().into_owned();
    let hw = common::hwprof(&["report", "-b", "-i", &f]);
    hw.assert_ok();
    let perf = common::perf(&["report", "-b", "--stdio", "-i", &f]);
    perf.assert_ok();
    assert_perf_prefix(&hw.stdout, &perf.stdout);
    // Every branch entry counts once: 13 samples of 32 LBR entries.
    assert!(hw.stdout.contains("# Samples: 416  of event 'cycles:ppp'"));
    // perf's cells: zero without 0x, a 16-bit cycle count printed signed, our columns.
    assert!(
        hw.stdout
            .contains("6.97%  perf     [unknown]             [H] 0000000000000000"),
        "{}",
        hw.stdout
    );
    assert!(hw.stdout.contains("[k] 0xffffffffb420a582  -23395"));
    assert!(hw.stdout.contains("Mispredicted  Avg Cycles"));
}

#[test]
fn report_b_mispredict_key_matches_perf() {
    let Some(f) = fixture() else { return };
    if !common::require_perf("perf report -b is the judge") {
        return;
    }
    let f = f.to_string_lossy().into_owned();
    let hw = common::hwprof(&["report", "-b", "--branch-sort", "mispredict", "-i", &f]);
    hw.assert_ok();
    let perf = common::perf(&["report", "-b", "--stdio", "--sort", "mispredict", "-i", &f]);
    perf.assert_ok();
    assert_perf_prefix(&hw.stdout, &perf.stdout);
    // The mispredicted branches' own column says 100% of them are.
    let y = rows(&hw.stdout)
        .into_iter()
        .find(|r| r.contains("5.05%  Y"))
        .unwrap_or_else(|| panic!("no Y row:\n{}", hw.stdout));
    assert!(y.contains("100.00%"), "{y}");
}

#[test]
fn report_b_json_counts_every_branch() {
    let Some(f) = fixture() else { return };
    let f = f.to_string_lossy().into_owned();
    let hw = common::hwprof(&["report", "-b", "--json", "-i", &f]);
    hw.assert_ok();
    let v: serde_json::Value = serde_json::from_str(&hw.stdout).unwrap();
    let ev = &v["events"][0];
    assert_eq!(ev["event"], "cycles:ppp");
    assert_eq!(ev["branches"], 416);
    assert_eq!(ev["mispredicted"], 21);
    let rows = ev["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 291);
    let n: u64 = rows.iter().map(|r| r["branches"].as_u64().unwrap()).sum();
    assert_eq!(n, 416);
    assert_eq!(rows[0]["overhead"], 6.9712);
    assert_eq!(rows[0]["from"]["level"], "H");
    assert_eq!(rows[0]["from"]["dso"], serde_json::Value::Null);
}

#[test]
fn report_b_without_branch_stacks_says_how_to_record_them() {
    let Some(dir) = hwprof_testkit::fixture_path("perfdata") else {
        return;
    };
    let f = dir.join("perf.data.group_desc-4.14");
    let hw = common::hwprof(&["report", "-b", "-i", &f.to_string_lossy()]);
    assert_eq!(hw.code(), 1, "{}", hw.stderr);
    assert!(hw.stderr.contains("has no branch stacks"), "{}", hw.stderr);
    assert!(hw.stdout.is_empty());
}
