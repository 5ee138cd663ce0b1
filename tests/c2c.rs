//! `hwprof c2c report` on synthetic PEBS load/store recordings (tests/memdata) with
//! false sharing, with `perf c2c report --stdio` reading the same files as the judge.

mod common;
mod memdata;

use std::collections::BTreeMap;

/// What `perf c2c report --stdio` prints that the test compares.
#[derive(Debug, Default)]
struct PerfC2c {
    /// "Trace Event Information" and "Global Shared Cache Line Event Information".
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
            "Trace Event Information" | "Global Shared Cache Line Event Information" => {
                section = "info";
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
            "info" => {
                if let Some((k, v)) = t.split_once(':') {
                    p.info.insert(k.trim().to_string(), v.trim().to_string());
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

/// hwprof's top lines, their counts and offsets are perf c2c's on the same file.
#[test]
fn top_lines_agree_with_perf_c2c_report() {
    if !common::require_perf("perf c2c report judges hwprof c2c report") {
        return;
    }
    let bin = memdata::bin();
    let path = common::scratch_path("c2c_false_sharing.data");
    let accesses = memdata::false_sharing(&bin);
    memdata::write(&path, &bin, &[memdata::PID, memdata::TID2], &accesses);
    let p = path.to_str().unwrap();
    let run = common::perf(&["c2c", "report", "--stdio", "-i", p]);
    run.assert_ok();
    let perf = parse_perf(&run.stdout);
    let run = common::hwprof(&["c2c", "report", "--json", "-i", p]);
    run.assert_ok();
    let ours: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();

    // Totals.
    let t = &ours["total"];
    for (perf_key, key) in [
        ("Total records", "records"),
        ("Load Operations", "loads"),
        ("Load Fill Buffer Hit", "ld_fbhit"),
        ("Load L1D hit", "ld_l1hit"),
        ("Load L2D hit", "ld_l2hit"),
        ("Load Local HITM", "lcl_hitm"),
        ("Load Remote HITM", "rmt_hitm"),
        ("Load Local DRAM", "lcl_dram"),
        ("Store Operations", "stores"),
        ("Store L1D Hit", "st_l1hit"),
        ("Store L1D Miss", "st_l1miss"),
    ] {
        let v = perf
            .info
            .get(perf_key)
            .unwrap_or_else(|| panic!("no {perf_key}: {perf:#?}"));
        assert_eq!(t[key].to_string(), *v, "{perf_key}");
    }
    assert_eq!(
        ours["shared_lines"].to_string(),
        perf.info["Total Shared Cache Lines"]
    );

    // The lines table: same lines in the same order with the same counts.
    let lines = ours["lines"].as_array().unwrap();
    assert_eq!(
        lines.len(),
        perf.lines.len(),
        "{:#?}\n{}",
        perf.lines,
        run.stdout
    );
    assert!(
        lines.len() >= 2,
        "two shared lines expected: {:#?}",
        perf.lines
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
            n("records").to_string(),
            n("loads").to_string(),
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
                    n(st, "records").to_string(),
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
