//! `hwprof mem report` on synthetic PEBS load/store recordings (tests/memdata), with
//! `perf mem report` / `perf report --mem-mode` reading the same files as the judge.

mod common;
mod memdata;

use std::collections::BTreeMap;

/// The synthetic recordings are what perf 6.1 reads as `perf mem record` and `perf c2c
/// record` files: the events, levels, functions and data symbols as written.
#[test]
fn perf_reads_the_synthetic_recordings() {
    if !common::require_perf("perf mem report reads the synthetic recording") {
        return;
    }
    let bin = memdata::bin();
    let path = common::scratch_path("mem_mix.data");
    memdata::write(
        &path,
        &bin,
        &[memdata::PID, memdata::TID2],
        &memdata::mix(&bin),
    );
    let p = path.to_str().unwrap();
    let run = common::perf(&["mem", "report", "--stdio", "-i", p]);
    run.assert_ok();
    for want in [
        "# Samples: 84  of event 'cpu/mem-loads,ldlat=30/P'",
        "# Samples: 27  of event 'cpu/mem-stores/P'",
        "Remote Cache (1 hop) hit  [.] writer_a",
        "[.] table+0x2000",
        "[.] quiet+0x8",
    ] {
        assert!(run.stdout.contains(want), "no {want:?}\n{}", run.dump());
    }
    let run = common::perf(&["c2c", "report", "--stdio", "-i", p]);
    run.assert_ok();
    for want in [
        "Load Local HITM                   :          6",
        "Load Remote HITM                  :          3",
        "Store L1D Miss                    :          7",
    ] {
        assert!(run.stdout.contains(want), "no {want:?}\n{}", run.dump());
    }
}

/// `perf report --stdio -n` rows per event: event name -> [(key, overhead %, samples)].
type PerfRows = Vec<(String, Vec<(String, f64, u64)>)>;

fn perf_rows(args: &[&str]) -> PerfRows {
    let run = common::perf(args);
    run.assert_ok();
    let mut out: PerfRows = Vec::new();
    for line in run.stdout.lines() {
        if let Some(rest) = line.strip_prefix("# Samples: ") {
            let name = rest.split('\'').nth(1).unwrap_or("").to_string();
            out.push((name, Vec::new()));
        } else if !line.starts_with('#')
            && let Some((pct, rest)) = line.trim().split_once("%  ")
            && let Some((n, key)) = rest.trim().split_once("  ")
            && let (Ok(p), Ok(n), Some(last)) = (
                pct.trim().parse::<f64>(),
                n.trim().parse::<u64>(),
                out.last_mut(),
            )
        {
            let key = key.trim().trim_start_matches("[.] ").to_string();
            last.1.push((key, p, n));
        }
    }
    out
}

/// `hwprof mem report --json`: one object per event with its tables.
fn hwprof_tables(path: &str, keys: &str) -> serde_json::Value {
    let run = common::hwprof(&[
        "mem", "report", "--json", "--rows", "0", "-s", keys, "-i", path,
    ]);
    run.assert_ok();
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("bad JSON {e}\n{}", run.dump()))
}

/// hwprof's `key` table against `perf report -n --sort PERF_KEY` on the same file: with
/// `mem_mode` (what `perf mem report` runs) the weight shares and sample counts, without
/// it the period shares.
fn check(path: &str, perf_key: &str, key: &str, mem_mode: bool) {
    let mut args = vec!["report", "--stdio", "-n", "--sort", perf_key, "-i", path];
    if mem_mode {
        args.insert(1, "--mem-mode");
    }
    let perf = perf_rows(&args);
    let ours = hwprof_tables(path, key);
    let events = ours.as_array().unwrap();
    assert_eq!(events.len(), perf.len(), "events: {ours:#}\n{perf:?}");
    let field = if mem_mode { "weight_pct" } else { "period_pct" };
    for (name, rows) in &perf {
        let ev = events
            .iter()
            .find(|e| e["event"] == name.as_str())
            .unwrap_or_else(|| panic!("no event {name} in {ours:#}"));
        let table = ev["tables"][key].as_array().unwrap();
        assert_eq!(
            table.len(),
            rows.len(),
            "{name} {key}: {table:#?}\nperf: {rows:?}"
        );
        for (k, p, n) in rows {
            let r = table
                .iter()
                .find(|r| r["key"] == k.as_str())
                .unwrap_or_else(|| panic!("{name} {key}: no row {k:?} in {table:#?}"));
            let ours = r[field].as_f64().unwrap();
            assert!(
                (ours - p).abs() <= 0.5,
                "{name} {key} {k}: hwprof {ours:.2}% perf {p:.2}%"
            );
            assert_eq!(r["samples"].as_u64(), Some(*n), "{name} {key} {k} samples");
        }
        common::report_line(&format!(
            "mem {key} {name} ({field}): {} rows agree with perf report{} --sort {perf_key}",
            rows.len(),
            if mem_mode { " --mem-mode" } else { "" }
        ));
    }
}

/// The shares per level, snoop, TLB and function agree with perf on the same file:
/// weight shares and sample counts with `perf report --mem-mode` (what `perf mem
/// report` runs; perf 6.1 has the `mem`, `snoop` and `tlb` keys only in that mode),
/// period shares with `perf report --sort sym`.
#[test]
fn shares_agree_with_perf_mem_report() {
    if !common::require_perf("perf mem report judges hwprof mem report") {
        return;
    }
    let bin = memdata::bin();
    let path = common::scratch_path("mem_shares.data");
    memdata::write(
        &path,
        &bin,
        &[memdata::PID, memdata::TID2],
        &memdata::mix(&bin),
    );
    let p = path.to_str().unwrap();
    for (perf_key, key) in [
        ("mem", "level"),
        ("snoop", "snoop"),
        ("tlb", "tlb"),
        ("sym", "function"),
    ] {
        check(p, perf_key, key, true);
    }
    check(p, "sym", "function", false);
    // perf's sort keys name the same tables (`perf mem report --sort mem,...`).
    assert_eq!(
        hwprof_tables(p, "mem,locked,sym,symbol_daddr,dso_daddr"),
        hwprof_tables(p, "level,lock,function,data,data-module"),
        "perf's keys and hwprof's give the same tables"
    );
}

/// Latency percentiles per level and function, and data symbols from the binary's
/// symbol table, as the synthetic file was written.
#[test]
fn latency_and_data_symbols() {
    let bin = memdata::bin();
    let path = common::scratch_path("mem_lat.data");
    memdata::write(
        &path,
        &bin,
        &[memdata::PID, memdata::TID2],
        &memdata::mix(&bin),
    );
    let ours = hwprof_tables(path.to_str().unwrap(), "level,function,data");
    let loads = &ours[0];
    assert_eq!(loads["event"], memdata::LOADS);
    assert_eq!(loads["samples"], 84);
    let row = |t: &str, k: &str| -> serde_json::Value {
        loads["tables"][t]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"] == k)
            .unwrap_or_else(|| panic!("no {k} in {t}: {ours:#}"))
            .clone()
    };
    // Local DRAM: 5 loads of 300..304 cycles.
    let ram = &row("level", "Local RAM hit")["latency"];
    assert_eq!(
        (ram["n"].as_u64(), ram["p50"].as_u64(), ram["max"].as_u64()),
        (Some(5), Some(302), Some(304))
    );
    // writer_a: the 3 remote HITM loads of 500..502 cycles.
    let wa = &row("function", "writer_a")["latency"];
    assert_eq!(
        (wa["p50"].as_u64(), wa["p99"].as_u64()),
        (Some(501), Some(502))
    );
    // Data symbols: 65 loads in table, 10 in quiet, 9 in shared.
    for (sym, n) in [("table", 65), ("quiet", 10), ("shared", 9)] {
        assert_eq!(row("data", sym)["samples"], n, "{sym}");
    }
    let run = common::hwprof(&["mem", "report", "-i", path.to_str().unwrap()]);
    run.assert_ok();
    assert!(
        run.stdout
            .contains("# Samples: 84  of event 'cpu/mem-loads,ldlat=30/P'"),
        "{}",
        run.dump()
    );
}

/// A recording without data-source samples is a one-line usage error.
#[test]
fn recording_without_data_source_is_a_usage_error() {
    let path = common::scratch_path("mem_none.data");
    memdata::write_plain(&path);
    let run = common::hwprof(&["mem", "report", "-i", path.to_str().unwrap()]);
    assert_eq!(run.code(), 2, "{}", run.dump());
    assert!(
        run.stderr
            .contains("has no memory samples: no sample carries a data source"),
        "{}",
        run.dump()
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.dump());
}

/// Recordings without memory samples: an ordinary `hwprof record --call-graph dwarf`
/// (its cpu-clock samples carry DATA_SRC, as perf's do with dwarf callchains, every value
/// `PERF_MEM_NA`) and `perf record`s without memory events, with and without dwarf
/// callchains. `mem report`, `c2c report` and `flamegraph --mem` each refuse them in one
/// line (exit 2) that names why, where they printed N/A tables or zeros with exit 0.
#[test]
fn recordings_without_memory_samples_are_usage_errors() {
    let spin = common::wl("spin");
    let mut files: Vec<(String, &str)> = Vec::new();
    let hw = common::scratch_path("mem_dwarf_hwprof.data");
    let h = hw.to_str().unwrap().to_string();
    let rec = common::hwprof(&[
        "record",
        "-q",
        "--call-graph",
        "dwarf",
        "-e",
        "cpu-clock",
        "-o",
        &h,
        "--",
        spin.as_str(),
        "100",
    ]);
    rec.assert_ok();
    // The premise: its samples do carry a data source field.
    let script = common::hwprof(&["script", "--format", "jsonl", "-i", &h]);
    script.assert_ok();
    assert!(
        script.stdout.contains(r#""data_src":"#),
        "no data source in the dwarf recording"
    );
    files.push((h, "every one is N/A"));
    let perf_files = [
        (
            "mem_dwarf_perf.data",
            vec!["--call-graph", "dwarf"],
            "every one is N/A",
        ),
        (
            "mem_plain_perf.data",
            vec![],
            "no sample carries a data source",
        ),
    ];
    if common::require_perf("perf record makes recordings without memory samples") {
        for (name, extra, why) in perf_files {
            let path = common::scratch_path(name);
            let p = path.to_str().unwrap().to_string();
            let mut args = vec!["record", "-q", "-e", "cpu-clock", "-o", &p];
            args.extend(extra);
            args.extend(["--", spin.as_str(), "100"]);
            common::perf(&args).assert_ok();
            files.push((p, why));
        }
    }
    for (f, why) in &files {
        for cmd in [
            vec!["mem", "report", "-i", f],
            vec!["c2c", "report", "-i", f],
            vec!["flamegraph", "--mem", "l1", "--folded", "-i", f],
        ] {
            let run = common::hwprof(&cmd);
            assert_eq!(run.code(), 2, "{cmd:?}\n{}", run.dump());
            assert!(run.stdout.is_empty(), "{cmd:?}\n{}", run.dump());
            assert_eq!(run.stderr.lines().count(), 1, "{cmd:?}\n{}", run.dump());
            assert!(
                run.stderr.contains("has no memory samples") && run.stderr.contains(why),
                "{cmd:?}\n{}",
                run.dump()
            );
        }
        let _ = std::fs::remove_file(f);
    }
}

/// `flamegraph --mem LEVEL` draws only the samples served from LEVEL, by samples or by
/// latency (`--weight weight`): the folded stacks are the written accesses of that
/// level, per function.
/// `flamegraph --mem LEVEL --weight WEIGHT --folded -i PATH` (asserted to succeed), and
/// its folded stacks.
fn mem_folded(path: &str, level: &str, weight: &str) -> (common::Run, Vec<(String, u64)>) {
    let run = common::hwprof(&[
        "flamegraph",
        "--mem",
        level,
        "--weight",
        weight,
        "--folded",
        "-i",
        path,
    ]);
    run.assert_ok();
    let folded = common::parse_folded(&run.stdout);
    (run, folded)
}

#[test]
fn flamegraph_mem_level() {
    let bin = memdata::bin();
    let path = common::scratch_path("mem_flame.data");
    let accesses = memdata::mix(&bin);
    memdata::write(&path, &bin, &[memdata::PID, memdata::TID2], &accesses);
    let p = path.to_str().unwrap();
    // The function of an ip: the nearest of the three below it.
    let funcs: Vec<(u64, &str)> = ["writer_a", "writer_b", "scan"]
        .into_iter()
        .map(|f| (bin.sym(f), f))
        .collect();
    let func = |ip: u64| {
        funcs
            .iter()
            .filter(|f| f.0 <= ip)
            .max_by_key(|f| f.0)
            .unwrap()
            .1
    };
    // (level, data_src bits that select it: mem_lvl LOC_RAM; mem_snoop HITM; mem_lvl L1).
    for (level, select) in [
        ("dram", 0x80u64 << 5),
        ("hitm", 0x10 << 19),
        ("l1", 0x08 << 5),
    ] {
        for weight in ["samples", "weight"] {
            let mut want: BTreeMap<String, u64> = BTreeMap::new();
            for a in accesses
                .iter()
                .filter(|a| !a.store && a.data_src & select != 0)
            {
                let w = if weight == "samples" {
                    1
                } else {
                    u64::from(a.weight)
                };
                *want.entry(format!("memshare;{}", func(a.ip))).or_default() += w;
            }
            let (run, folded) = mem_folded(p, level, weight);
            let got: BTreeMap<String, u64> = folded.into_iter().collect();
            assert_eq!(got, want, "--mem {level} --weight {weight}\n{}", run.dump());
            common::report_line(&format!(
                "flamegraph --mem {level} --weight {weight}: {got:?}"
            ));
        }
    }
    let run = common::hwprof(&["flamegraph", "--mem", "ram", "--folded", "-i", p]);
    assert_eq!(run.code(), 2, "{}", run.dump());
}

/// Functions and data symbols of a binary recorded at a path that is not on this
/// machine are found under `--symfs DIR`.
#[test]
fn symfs_names_functions_and_data() {
    let bin = memdata::bin();
    let dir = common::scratch_path("mem_symfs");
    let recorded = "/hwprof-test-absent/bin/memshare";
    let copy = dir.join(recorded.trim_start_matches('/'));
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(&bin.path, &copy).unwrap();
    let path = common::scratch_path("mem_symfs.data");
    let accesses = memdata::mix(&bin);
    memdata::write_as(
        &path,
        &bin,
        recorded,
        &[memdata::PID, memdata::TID2],
        &accesses,
    );
    let p = path.to_str().unwrap();
    let keys = |v: &serde_json::Value, t: &str| -> Vec<String> {
        let mut k: Vec<String> = v[0]["tables"][t]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["key"].as_str().unwrap().to_string())
            .collect();
        k.sort();
        k
    };
    let run = common::hwprof(&[
        "mem",
        "report",
        "--json",
        "-s",
        "function,data",
        "--symfs",
        dir.to_str().unwrap(),
        "-i",
        p,
    ]);
    run.assert_ok();
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        keys(&v, "function"),
        ["scan", "writer_a", "writer_b"],
        "{}",
        run.dump()
    );
    assert_eq!(
        keys(&v, "data"),
        ["quiet", "shared", "table"],
        "{}",
        run.dump()
    );
    // Without it, nothing is named: the module stands for the data.
    let v = hwprof_tables(p, "data");
    assert_eq!(keys(&v, "data"), ["memshare"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Data sources as newer CPUs write them (tests/memdata/encodings.rs: `mem_lvl_num` L1
/// to L4, any cache, LFB, RAM, PMEM, CXL and N/A, alone or with `mem_lvl`; `mem_remote`
/// with and without hops 1 to 4; snoop forward and peer; remote and hop HITMs; a locked
/// load; stores without a level): the level, snoop, TLB and function tables agree with
/// perf's, row by row, and `flamegraph --mem LEVEL` folds exactly the accesses labelled
/// with that level.
#[test]
fn newer_data_source_encodings_agree_with_perf() {
    use memdata::encodings;
    let bin = memdata::bin();
    let path = common::scratch_path("mem_encodings.data");
    let accesses = encodings::accesses(&bin);
    memdata::write(&path, &bin, &[memdata::PID, memdata::TID2], &accesses);
    let p = path.to_str().unwrap();
    if common::require_perf("perf mem report judges the newer encodings") {
        for (perf_key, key) in [
            ("mem", "level"),
            ("snoop", "snoop"),
            ("tlb", "tlb"),
            ("sym", "function"),
        ] {
            check(p, perf_key, key, true);
        }
    }
    // Every level of `--mem` against the labels, by samples and by latency.
    let kinds = encodings::kinds();
    for level in [
        "l1",
        "lfb",
        "l2",
        "l3",
        "dram",
        "local-dram",
        "remote-dram",
        "remote-cache",
        "hitm",
    ] {
        let (mut want_n, mut want_w) = (0u64, 0u64);
        for a in &accesses {
            let k = kinds
                .iter()
                .find(|k| k.data_src == a.data_src && k.store == a.store)
                .expect("every access is of a kind");
            if k.levels.contains(&level) {
                want_n += 1;
                want_w += u64::from(a.weight);
            }
        }
        assert!(want_n > 0, "no access labelled {level}");
        for (weight, want) in [("samples", want_n), ("weight", want_w)] {
            let (run, folded) = mem_folded(p, level, weight);
            let got: u64 = folded.iter().map(|(_, n)| n).sum();
            assert_eq!(got, want, "--mem {level} --weight {weight}\n{}", run.dump());
        }
        common::report_line(&format!(
            "flamegraph --mem {level}: {want_n} accesses of the newer encodings, as labelled"
        ));
    }
}
