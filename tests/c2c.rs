//! `hwprof c2c report` on synthetic PEBS load/store recordings (tests/memdata) with
//! false sharing, with `perf c2c report --stdio` reading the same files as the judge.

mod common;
mod memdata;

use std::collections::BTreeMap;

/// What `perf c2c report --stdio` prints that the test compares.
#[derive(Debug, Default)]
struct PerfC2c {
    /// "Trace Event Information", and "Global Shared Cache Line Event Information" with
    /// its keys prefixed by "shared: ".
    info: BTreeMap<String, String>,
    /// "Shared Data Cache Line Table": the columns of each row, in order.
    lines: Vec<Vec<String>>,
    /// "Shared Cache Line Distribution Pareto": per line, its rows' columns.
    pareto: Vec<(String, Vec<Vec<String>>)>,
}

fn parse_perf(text: &str) -> PerfC2c {
    let mut p = PerfC2c::default();
    let mut section = "";
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with("====") {
            continue;
        }
        if !line.starts_with(' ') && !line.starts_with('#') && !t.contains(':') {
            continue;
        }
        match t {
            "Trace Event Information" => {
                section = "info";
                continue;
            }
            "Global Shared Cache Line Event Information" => {
                section = "shared";
                continue;
            }
            "c2c details" => {
                section = "";
                continue;
            }
            "Shared Data Cache Line Table" => {
                section = "table";
                continue;
            }
            "Shared Cache Line Distribution Pareto" => {
                section = "pareto";
                continue;
            }
            _ => {}
        }
        if t.starts_with('#') {
            continue;
        }
        let cols: Vec<String> = t.split_whitespace().map(String::from).collect();
        match section {
            "info" | "shared" => {
                if let Some((k, v)) = t.split_once(':') {
                    let k = k.trim();
                    let k = if section == "shared" {
                        format!("shared: {k}")
                    } else {
                        k.to_string()
                    };
                    p.info.insert(k, v.trim().to_string());
                }
            }
            "table" => p.lines.push(cols),
            "pareto" if t.starts_with("---") => {}
            "pareto" if cols.len() == 7 && cols[6].starts_with("0x") => {
                p.pareto.push((cols[6].clone(), Vec::new()));
            }
            "pareto" => {
                if let Some(last) = p.pareto.last_mut() {
                    last.1.push(cols);
                }
            }
            _ => {}
        }
    }
    p
}

/// A mean of cycles as perf prints it.
fn mean(sum: u64, n: u64) -> String {
    if n == 0 {
        "0".into()
    } else {
        format!("{:.0}", sum as f64 / n as f64)
    }
}

fn pct(x: u64, t: u64) -> String {
    if t == 0 {
        "0.00%".into()
    } else {
        format!("{:.2}%", 100.0 * x as f64 / t as f64)
    }
}

/// What perf 6.1 prints as a line's or an offset's "records" and "Loads"
/// (`total_records` and `total_loads` in builtin-c2c.c): not its samples but the sum of
/// its level counters, so that a load counted at two levels (L1 or L3) counts twice and
/// one at none (a level only in `mem_lvl_num`) not at all. hwprof shows the samples;
/// the counters it keeps are checked against perf's through these sums.
fn perf_loads(s: &serde_json::Value) -> u64 {
    [
        "lcl_dram",
        "rmt_dram",
        "rmt_hitm",
        "rmt_hit",
        "ld_fbhit",
        "ld_l1hit",
        "ld_l2hit",
        "ld_llchit",
        "lcl_hitm",
    ]
    .iter()
    .map(|k| s[*k].as_u64().unwrap())
    .sum()
}

fn perf_records(s: &serde_json::Value) -> u64 {
    perf_loads(s)
        + ["st_l1hit", "st_l1miss", "st_na"]
            .iter()
            .map(|k| s[*k].as_u64().unwrap())
            .sum::<u64>()
}

/// hwprof's totals, lines and their offsets are perf c2c's on the recording `p`;
/// hwprof's report as JSON.
fn agree_with_perf(p: &str) -> serde_json::Value {
    let run = common::perf(&["c2c", "report", "--stdio", "-i", p]);
    run.assert_ok();
    let perf = parse_perf(&run.stdout);
    let run = common::hwprof(&["c2c", "report", "--json", "-i", p]);
    run.assert_ok();
    let ours: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();

    // Totals: every counter both print.
    let t = &ours["total"];
    let n = |k: &str| t[k].as_u64().unwrap_or_else(|| panic!("no total {k}"));
    for (perf_key, ours) in [
        ("Total records", n("records")),
        ("Locked Load/Store Operations", n("locks")),
        ("Load Operations", n("loads")),
        ("Loads - uncacheable", n("ld_uncache")),
        ("Loads - IO", n("ld_io")),
        ("Loads - Miss", n("ld_miss")),
        ("Load Fill Buffer Hit", n("ld_fbhit")),
        ("Load L1D hit", n("ld_l1hit")),
        ("Load L2D hit", n("ld_l2hit")),
        // perf's LLC hits are the L3 hits that were not HITM and the local HITMs.
        ("Load LLC hit", n("ld_llchit") + n("lcl_hitm")),
        ("Load Local HITM", n("lcl_hitm")),
        ("Load Remote HITM", n("rmt_hitm")),
        ("Load Remote HIT", n("rmt_hit")),
        ("Load HIT Local Peer", n("lcl_peer")),
        ("Load HIT Remote Peer", n("rmt_peer")),
        ("Load Local DRAM", n("lcl_dram")),
        ("Load Remote DRAM", n("rmt_dram")),
        ("Load MESI State Exclusive", n("ld_excl")),
        ("Load MESI State Shared", n("ld_shared")),
        ("Store Operations", n("stores")),
        ("Store - uncacheable", n("st_uncache")),
        ("Store L1D Hit", n("st_l1hit")),
        ("Store L1D Miss", n("st_l1miss")),
        ("Store No available memory level", n("st_na")),
        ("Unable to parse data source", n("noparse")),
    ] {
        let v = perf
            .info
            .get(perf_key)
            .unwrap_or_else(|| panic!("no {perf_key}: {perf:#?}"));
        assert_eq!(ours.to_string(), *v, "{perf_key}");
    }
    assert_eq!(
        ours["shared_lines"].to_string(),
        perf.info["shared: Total Shared Cache Lines"]
    );
    // Over the shared lines.
    let sh = &ours["shared"];
    let n = |k: &str| sh[k].as_u64().unwrap_or_else(|| panic!("no shared {k}"));
    for (perf_key, ours) in [
        ("Load HITs on shared lines", n("loads")),
        ("Fill Buffer Hits on shared lines", n("ld_fbhit")),
        ("L1D hits on shared lines", n("ld_l1hit")),
        ("L2D hits on shared lines", n("ld_l2hit")),
        ("LLC hits on shared lines", n("ld_llchit") + n("lcl_hitm")),
        (
            "Load hits on peer cache or nodes",
            n("lcl_peer") + n("rmt_peer"),
        ),
        ("Locked Access on shared lines", n("locks")),
        ("Store HITs on shared lines", n("stores")),
        ("Store L1D hits on shared lines", n("st_l1hit")),
        ("Store No available memory level", n("st_na")),
        ("Total Merged records", n("tot_hitm") + n("stores")),
    ] {
        let v = perf
            .info
            .get(&format!("shared: {perf_key}"))
            .unwrap_or_else(|| panic!("no {perf_key}: {perf:#?}"));
        assert_eq!(ours.to_string(), *v, "{perf_key} (shared lines)");
    }

    // The lines table: same lines in the same order with the same counts.
    let lines = ours["lines"].as_array().unwrap();
    assert_eq!(
        lines.len(),
        perf.lines.len(),
        "{:#?}\n{}",
        perf.lines,
        run.stdout
    );
    let tot_hitm = ours["shared"]["tot_hitm"].as_u64().unwrap();
    for (l, row) in lines.iter().zip(&perf.lines) {
        let s = &l["stats"];
        let n = |k: &str| s[k].as_u64().unwrap();
        let want: Vec<String> = vec![
            format!("{:#x}", l["address"].as_u64().unwrap()),
            pct(n("tot_hitm"), tot_hitm),
            n("tot_hitm").to_string(),
            n("lcl_hitm").to_string(),
            n("rmt_hitm").to_string(),
            perf_records(s).to_string(),
            perf_loads(s).to_string(),
            n("stores").to_string(),
            n("st_l1hit").to_string(),
            n("st_l1miss").to_string(),
        ];
        // Index Address Node PA-cnt Hitm% Total LclHitm RmtHitm records Loads Stores L1Hit L1Miss
        let got: Vec<String> = [1, 4, 5, 6, 7, 8, 9, 10, 11, 12]
            .iter()
            .map(|&i| row[i].clone())
            .collect();
        assert_eq!(want, got, "line row {row:?}");
    }

    // The Pareto: per line, the same (offset, code address, symbol, records, shares).
    assert_eq!(perf.pareto.len(), lines.len());
    for (l, (addr, rows)) in lines.iter().zip(&perf.pareto) {
        assert_eq!(format!("{:#x}", l["address"].as_u64().unwrap()), *addr);
        let s = &l["stats"];
        let n = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap();
        let mut want: Vec<Vec<String>> = l["accesses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                let st = &a["stats"];
                vec![
                    pct(n(st, "rmt_hitm"), n(s, "rmt_hitm")),
                    pct(n(st, "lcl_hitm"), n(s, "lcl_hitm")),
                    pct(n(st, "st_l1hit"), n(s, "st_l1hit")),
                    pct(n(st, "st_l1miss"), n(s, "st_l1miss")),
                    format!("{:#x}", n(a, "offset")),
                    format!("{:#x}", n(a, "ip")),
                    perf_records(st).to_string(),
                    mean(n(st, "rmt_hitm_cycles"), n(st, "rmt_hitm")),
                    mean(n(st, "lcl_hitm_cycles"), n(st, "lcl_hitm")),
                    mean(n(st, "load_cycles"), n(st, "other_loads")),
                    a["function"].as_str().unwrap().to_string(),
                ]
            })
            .collect();
        // RmtHitm% LclHitm% L1Hit% L1Miss% N/A% Offset Node PA-cnt Code-address
        // rmt-cyc lcl-cyc load-cyc records cpu-cnt [.] Symbol ...
        let mut got: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                let mut v: Vec<String> = [0, 1, 2, 3, 5, 8, 12, 9, 10, 11]
                    .iter()
                    .map(|&i| r[i].clone())
                    .collect();
                v.push(r[15].clone());
                v
            })
            .collect();
        want.sort();
        got.sort();
        assert_eq!(want, got, "line {addr}");
        common::report_line(&format!(
            "c2c line {addr}: {} offsets/instructions agree with perf c2c report",
            rows.len()
        ));
    }
    ours
}

/// hwprof's top lines, their counts and offsets are perf c2c's on the same file, and
/// false sharing shows.
#[test]
fn top_lines_agree_with_perf_c2c_report() {
    if !common::require_perf("perf c2c report judges hwprof c2c report") {
        return;
    }
    let bin = memdata::bin();
    let path = common::scratch_path("c2c_false_sharing.data");
    let accesses = memdata::false_sharing(&bin);
    memdata::write(&path, &bin, &[memdata::PID, memdata::TID2], &accesses);
    let ours = agree_with_perf(path.to_str().unwrap());
    let lines = ours["lines"].as_array().unwrap();
    assert!(lines.len() >= 2, "two shared lines expected: {ours:#}");
    // False sharing is visible: the top line is `shared`, written by two threads at
    // offsets 0 and 8 from two functions.
    let top = &lines[0];
    assert_eq!(top["data_symbol"], "shared");
    assert_eq!(top["address"].as_u64(), Some(bin.sym("shared")));
    let who: Vec<(u64, String, String)> = top["accesses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["offset"].as_u64().unwrap(),
                a["function"].to_string(),
                a["threads"].to_string(),
            )
        })
        .collect();
    assert_eq!(
        who,
        vec![
            (
                0,
                "\"writer_a\"".into(),
                format!("[[{0},{0}]]", memdata::PID)
            ),
            (
                8,
                "\"writer_b\"".into(),
                format!("[[{},{}]]", memdata::PID, memdata::TID2)
            ),
        ]
    );
}

/// The data sources of newer CPUs (tests/memdata/encodings.rs: levels in `mem_lvl_num`,
/// remote with and without hops, remote HITMs of unknown level and two hops away, a HITM
/// in another core of this node, peer and forward snoops, a locked load, stores without
/// a level) count as perf c2c counts them, in the totals and in every line.
#[test]
fn newer_encodings_agree_with_perf_c2c_report() {
    if !common::require_perf("perf c2c report judges hwprof c2c report") {
        return;
    }
    let bin = memdata::bin();
    let path = common::scratch_path("c2c_encodings.data");
    let accesses = memdata::encodings::accesses(&bin);
    memdata::write(&path, &bin, &[memdata::PID, memdata::TID2], &accesses);
    let ours = agree_with_perf(path.to_str().unwrap());
    // What the file holds: remote HITMs (Skylake's unknown level, two hops away), peer
    // hits and stores without a level, which the older files have none of.
    let t = &ours["total"];
    assert!(t["rmt_hitm"].as_u64() >= Some(6), "{t:#}");
    assert!(t["rmt_peer"].as_u64() >= Some(2), "{t:#}");
    assert!(t["lcl_peer"].as_u64() >= Some(2), "{t:#}");
    assert!(t["st_na"].as_u64() >= Some(2), "{t:#}");
}

/// A recording without data-source samples, and a missing file, are one-line errors.
#[test]
fn recording_without_data_source_is_a_usage_error() {
    let path = common::scratch_path("c2c_none.data");
    memdata::write_plain(&path);
    let run = common::hwprof(&["c2c", "report", "-i", path.to_str().unwrap()]);
    assert_eq!(run.code(), 2, "{}", run.dump());
    assert!(
        run.stderr
            .contains("has no memory samples: no sample carries a data source"),
        "{}",
        run.dump()
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.dump());
    let missing = common::scratch_path("c2c_missing.data");
    let run = common::hwprof(&["c2c", "report", "-i", missing.to_str().unwrap()]);
    assert_ne!(run.code(), 0, "{}", run.dump());
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.dump());
}
