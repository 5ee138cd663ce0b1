//! Names from outside cannot reach the terminal raw: a program that names itself
//! `a<ESC>[31mb<LF>c;d<TAB><0xff>` (comm), run from a file whose path holds an escape and
//! a line break, is recorded; `report`, `script`, `flamegraph --folded`, `offcpu
//! --folded` and `--report` and an error message quoting such a name print it escaped
//! (`\x1b`, `\n`, `\t`, `\xff`), one record, row or stack per line, and folded stacks
//! keep `;` as the only frame separator. The same program under `stat` (its command
//! line echoed, a uprobe on it named by its path), `probe` (the probe, its slow calls'
//! stacks), `bench` (the command line, metric names, a baseline's name), `encode`, and
//! `list` of an event file, and `mem report` / `c2c report` of a PEBS recording whose
//! binary is mapped from such a path: no raw control byte on stdout or stderr.

#[macro_use]
mod common;
mod memdata;

use std::fs;
use std::path::{Path, PathBuf};

use common::*;

/// What the workload names itself (prctl PR_SET_NAME), as bytes.
const COMM: &[u8] = b"a\x1b[31mb\nc;d\t\xff";
/// The escaped comm as `script` prints it (the raw bytes).
const COMM_SCRIPT: &str = "a\\x1b[31mb\\nc;d\\t\\xff";
/// The escaped comm as the symbolized outputs print it: the profile reads names as
/// UTF-8, so the stray byte is U+FFFD there (printable); folded stacks turn `;` to `:`.
const COMM_REPORT: &str = "a\\x1b[31mb\\nc;d\\t\u{fffd}";
const COMM_FOLDED: &str = "a\\x1b[31mb\\nc:d\\t\u{fffd}";
/// The workload's file name, and how it prints.
const BIN: &str = "ev\x1bil\nbin";
const BIN_SHOWN: &str = "ev\\x1bil\\nbin";

/// Control characters in `text` other than the line breaks between lines and, where
/// `tabs`, the tabs `script` indents callchains with.
fn raw_controls(text: &str, tabs: bool) -> Vec<(usize, char)> {
    text.char_indices()
        .filter(|&(_, c)| (c.is_control() || c == '\u{202e}') && c != '\n' && !(tabs && c == '\t'))
        .collect()
}

/// The workload, copied to a file whose name holds an escape and a line break.
fn evil_bin(dir: &Path) -> PathBuf {
    let bin = dir.join(BIN);
    hwprof_testkit::copy_executable(&workload("evil_comm"), &bin).expect("copy the workload");
    bin
}

#[test]
fn comm_names_and_paths_are_escaped_in_every_text_output() {
    let dir = fresh_dir("escaping");
    let bin = evil_bin(&dir);
    let data = dir.join("evil.data");
    let rec = hwprof(&[
        "record",
        "-e",
        "cpu-clock",
        "-g",
        "-o",
        &s(&data),
        "--",
        &s(&bin),
        "300",
        "10",
    ]);
    rec.assert_ok();
    assert_eq!(raw_controls(&rec.stderr, false), [], "{}", rec.dump());

    // report: the Command and Shared Object cells escaped, one row per line.
    let rep = hwprof(&["report", "-i", &s(&data), "--sort", "comm,dso,sym"]);
    rep.assert_ok();
    assert_eq!(raw_controls(&rep.stdout, false), [], "{}", rep.dump());
    assert_eq!(raw_controls(&rep.stderr, false), [], "{}", rep.dump());
    let row = rep
        .stdout
        .lines()
        .find(|l| l.contains("spin"))
        .unwrap_or_else(|| panic!("no spin row\n{}", rep.dump()));
    assert!(row.contains(COMM_REPORT), "{row}");
    assert!(row.contains(BIN_SHOWN), "{row}");
    // Every row has its percentage: no row was split by a line break.
    for l in rep
        .stdout
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        assert!(
            l.trim_start().starts_with(|c: char| c.is_ascii_digit()),
            "{l:?}"
        );
    }

    // script: COMM records and samples show the bytes escaped, the path too.
    let sc = hwprof(&["script", "-D", "-i", &s(&data)]);
    sc.assert_ok();
    assert_eq!(raw_controls(&sc.stdout, true), [], "{}", sc.dump());
    assert!(
        sc.stdout
            .lines()
            .any(|l| l.contains("PERF_RECORD_COMM") && l.contains(COMM_SCRIPT)),
        "{}",
        sc.dump()
    );
    assert!(
        sc.stdout
            .lines()
            .any(|l| l.contains("PERF_RECORD_MMAP2") && l.ends_with(&format!("/{BIN_SHOWN}"))),
        "{}",
        sc.dump()
    );
    let samples = sc
        .stdout
        .lines()
        .filter(|l| l.contains(" cpu-clock:"))
        .collect::<Vec<_>>();
    assert!(
        samples.iter().any(|l| l.contains(COMM_SCRIPT)),
        "{}",
        sc.dump()
    );
    // Every line is a record or a callchain entry (tab-indented): no forged lines.
    for l in sc.stdout.lines().filter(|l| !l.starts_with('#')) {
        let ok = l.starts_with('\t') || l.contains("PERF_RECORD_") || l.contains(" cpu-clock:");
        assert!(ok, "a line no record made: {l:?}");
    }
    // script's default (perf script's text): the comm escaped on its sample lines (read
    // as the symbolized outputs read it), and
    // every line a sample, a frame or the blank line after one.
    let pt = hwprof(&["script", "-i", &s(&data)]);
    pt.assert_ok();
    assert_eq!(raw_controls(&pt.stdout, true), [], "{}", pt.dump());
    assert!(
        pt.stdout
            .lines()
            .any(|l| l.contains(COMM_REPORT) && l.contains(" cpu-clock:")),
        "{}",
        pt.dump()
    );
    for l in pt.stdout.lines() {
        let ok = l.is_empty() || l.starts_with('\t') || l.contains(" cpu-clock:");
        assert!(ok, "a line no sample made: {l:?}");
    }

    // flamegraph --folded: one stack per line, `;` only between frames.
    let fg = hwprof(&["flamegraph", "-i", &s(&data), "--folded"]);
    fg.assert_ok();
    check_folded(&fg.stdout, "spin");

    // An error quoting such a name (a --comm that matches nothing) holds no raw byte.
    let mut comm = String::from_utf8_lossy(COMM).into_owned();
    comm.push('x');
    let err = hwprof(&["report", "-i", &s(&data), "--comm", &comm]);
    assert_eq!(err.code(), 1, "{}", err.dump());
    assert!(err.stderr.contains("a\\x1b[31mb"), "{}", err.dump());
    assert_eq!(raw_controls(&err.stderr, false), [], "{}", err.dump());
    assert_eq!(err.stderr.lines().count(), 1, "{}", err.dump());
    // A path in an error, the same.
    let missing = dir.join("no\x1bsuch\nfile");
    let err = hwprof(&["report", "-i", &s(&missing)]);
    assert!(err.stderr.contains("no\\x1bsuch"), "{}", err.dump());
    assert_eq!(raw_controls(&err.stderr, false), [], "{}", err.dump());
    assert_eq!(err.stderr.lines().count(), 1, "{}", err.dump());
    report!(
        "comm {COMM_SCRIPT:?} and path {BIN_SHOWN:?}: escaped in report, script, folded stacks and errors"
    );
}

/// Folded stacks of the workload: every line `FRAMES COUNT`, the workload's stack
/// rooted at its escaped comm and reaching `leaf`.
fn check_folded(text: &str, leaf: &str) {
    assert_eq!(raw_controls(text, false), [], "{text}");
    let mut found = false;
    for l in text.lines() {
        let (stack, n) = l.rsplit_once(' ').unwrap_or_else(|| panic!("{l:?}"));
        assert!(n.parse::<u64>().is_ok(), "a line without a count: {l:?}");
        let frames: Vec<&str> = stack.split(';').collect();
        if frames[0] == COMM_FOLDED {
            found |= frames.contains(&leaf);
        } else {
            assert!(
                frames[0] == BIN_SHOWN || !frames[0].contains("\\x1b"),
                "a root frame cut from a name: {l:?}"
            );
        }
    }
    assert!(found, "no stack of {COMM_FOLDED:?} reaching {leaf}\n{text}");
}

#[test]
fn offcpu_folded_stacks_escape_comm_names() {
    if !require_tracefs("offcpu --folded") {
        return;
    }
    let dir = fresh_dir("escaping_offcpu");
    let bin = evil_bin(&dir);
    let r = hwprof(&["offcpu", "--folded", "--", &s(&bin), "20", "200"]);
    r.assert_ok();
    assert_eq!(raw_controls(&r.stderr, false), [], "{}", r.dump());
    check_folded(&r.stdout, "main");
    // --report: the stacks' headers name the comm as folded stacks do (escaped there).
    let r = hwprof(&["offcpu", "--report", "--", &s(&bin), "20", "200"]);
    r.assert_ok();
    no_raw_controls(&r);
    assert!(
        r.stdout
            .lines()
            .any(|l| l.ends_with(&format!("%  [{COMM_FOLDED}]"))),
        "{}",
        r.dump()
    );
}

/// `run`'s stdout and stderr hold no control character but the line breaks between
/// lines.
fn no_raw_controls(run: &Run) {
    assert_eq!(raw_controls(&run.stdout, false), [], "{}", run.dump());
    assert_eq!(raw_controls(&run.stderr, false), [], "{}", run.dump());
}

/// The evil program's path, escaped as printed.
fn bin_shown(bin: &Path) -> String {
    let dir = bin.parent().expect("a directory");
    format!("{}/{BIN_SHOWN}", s(dir))
}

#[test]
fn stat_echoes_the_command_line_and_event_names_escaped() {
    let dir = fresh_dir("escaping_stat");
    let bin = evil_bin(&dir);
    let shown = bin_shown(&bin);
    // A uprobe event is named by the path of its file.
    let uprobe = format!("uprobe:{}:spin", s(&bin));
    let mut events = "task-clock".to_string();
    let uprobes = require_pmu("uprobe", "a uprobe event named by an escaped path");
    if uprobes {
        events = format!("{events},{uprobe}");
    }
    let r = hwprof(&["stat", "-e", &events, "--", &s(&bin), "50", "10"]);
    r.assert_ok();
    no_raw_controls(&r);
    let head = format!(" Performance counter stats for '{shown} 50 10':");
    assert!(r.stderr.lines().any(|l| l == head), "{}", r.dump());
    // Every line is blank, the header, a count line or the footer.
    let counts = r
        .stderr
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("hwprof: ") && *l != head)
        .collect::<Vec<_>>();
    for l in &counts {
        let first = l.split_whitespace().next().unwrap_or("");
        assert!(
            first.starts_with(|c: char| c.is_ascii_digit()),
            "a line no count made: {l:?}\n{}",
            r.dump()
        );
    }
    if uprobes {
        let row = format!("uprobe:{shown}:spin");
        assert!(
            counts
                .iter()
                .any(|l| l.split_whitespace().take(2).eq(["1", row.as_str()])),
            "{}",
            r.dump()
        );
        // CSV: one line per event, the name in its field.
        let r = hwprof(&["stat", "-x", ",", "-e", &events, "--", &s(&bin), "50", "10"]);
        r.assert_ok();
        no_raw_controls(&r);
        let fields: Vec<Vec<&str>> = r.stderr.lines().map(|l| l.split(',').collect()).collect();
        assert_eq!(fields.len(), 2, "{}", r.dump());
        assert_eq!(fields[1][..3], ["1", "", row.as_str()], "{}", r.dump());
    }
    report!("stat: '{shown} 50 10' and its uprobe event escaped, one count per line");
}

#[test]
fn probe_results_and_slow_call_stacks_are_escaped() {
    if !require_pmu("uprobe", "probe on a program with an escaped path") {
        return;
    }
    let dir = fresh_dir("escaping_probe");
    let bin = evil_bin(&dir);
    let shown = bin_shown(&bin);
    let spec = format!("uprobe:{}:spin", s(&bin));
    let r = hwprof(&[
        "probe",
        &spec,
        "--threshold",
        "1ms",
        "--stacks",
        "--hist",
        "--",
        &s(&bin),
        "30",
        "10",
    ]);
    r.assert_ok();
    no_raw_controls(&r);
    let err = &r.stderr;
    let first = format!("{shown}:spin: 1 call (1 return, 1 timed)");
    assert!(err.lines().any(|l| l == first), "{}", r.dump());
    assert!(
        err.lines().any(|l| l == "1 call slower than 1.000 ms:"),
        "{}",
        r.dump()
    );
    // The slow call's stack: the program's frames named with its escaped file name.
    for f in ["spin", "main"] {
        let frame = format!("      {f} ({BIN_SHOWN})");
        assert!(err.lines().any(|l| l == frame), "{frame:?}\n{}", r.dump());
    }
    // No line is a piece of a name cut by a line break.
    for l in err.lines() {
        assert!(!l.starts_with("bin"), "{l:?}\n{}", r.dump());
    }
    report!("probe --threshold --stacks: {first:?}, stack frames escaped");
}

#[test]
fn bench_reports_escape_the_command_and_metric_names() {
    let dir = fresh_dir("escaping_bench");
    let bin = evil_bin(&dir);
    let shown = bin_shown(&bin);
    let mut events = "task-clock".to_string();
    let uprobes = require_pmu(
        "uprobe",
        "bench with a uprobe event named by an escaped path",
    );
    if uprobes {
        events = format!("{events},uprobe:{}:spin", s(&bin));
    }
    // A baseline whose name holds an escape and a line break.
    let name = "b\x1bx\ny";
    let bl = dir.join("baselines");
    let bench = |extra: &[&str]| {
        let mut a = vec!["bench", "-r", "2", "--warmup", "0", "-e", &events];
        a.extend_from_slice(extra);
        a.extend(["--baseline-dir", bl.to_str().expect("utf-8"), "--"]);
        let b = s(&bin);
        let mut a: Vec<String> = a.into_iter().map(String::from).collect();
        a.extend([b, "10".into(), "1".into()]);
        hwprof(&a)
    };
    let title = format!("hwprof bench: '{shown}' 10 1");
    let r = bench(&["--save", name]);
    r.assert_ok();
    no_raw_controls(&r);
    assert!(r.stdout.lines().any(|l| l == title), "{}", r.dump());
    assert!(
        r.stderr.contains("saved baseline 'b\\x1bx\\ny' to "),
        "{}",
        r.dump()
    );
    // Every table row starts with a metric's name.
    let metric = |l: &str| {
        [
            "wall-time",
            "user-time",
            "sys-time",
            "task-clock",
            "max-rss",
        ]
        .iter()
        .any(|m| l.starts_with(m))
            || l.starts_with(&format!("uprobe:{shown}:spin "))
    };
    let rows = r
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("metric"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect::<Vec<_>>();
    assert_eq!(rows.len(), 5 + usize::from(uprobes), "{}", r.dump());
    assert!(rows.iter().all(|l| metric(l)), "{}", r.dump());

    // Against the baseline: its name in the title; Markdown too.
    let r = bench(&["--baseline", name]);
    assert!(matches!(r.code(), 0 | 1), "{}", r.dump());
    no_raw_controls(&r);
    let first = r.stdout.lines().next().unwrap_or("");
    assert!(
        first.starts_with(&format!("{title} vs baseline 'b\\x1bx\\ny' (")),
        "{}",
        r.dump()
    );
    let r = bench(&["--markdown"]);
    r.assert_ok();
    no_raw_controls(&r);
    assert!(
        r.stdout
            .starts_with(&format!("#### hwprof bench: `'{shown}' 10 1`\n")),
        "{}",
        r.dump()
    );
    for l in r.stdout.lines().filter(|l| l.starts_with("| ")) {
        assert!(l.ends_with(" |"), "a table row cut: {l:?}\n{}", r.dump());
    }
    report!("bench: {title:?}, metric names and the baseline's name escaped");
}

#[test]
fn encode_and_list_escape_names_from_event_files_and_paths() {
    let dir = fresh_dir("escaping_list");
    let bin = evil_bin(&dir);
    let r = hwprof(&["encode", "-e", &format!("uprobe:{}:spin", s(&bin))]);
    r.assert_ok();
    no_raw_controls(&r);
    let shown = bin_shown(&bin);
    assert!(
        r.stdout
            .lines()
            .any(|l| l.starts_with(&format!("#0 uprobe:{shown}:spin (pmu "))),
        "{}",
        r.dump()
    );
    assert!(
        r.stdout
            .lines()
            .any(|l| l.split_whitespace().eq(["uprobe_path", shown.as_str()])),
        "{}",
        r.dump()
    );
    // An event file (perfmon JSON) naming and describing an event with controls.
    let file = dir.join("events.json");
    let events = r#"[{"EventCode": "0x3C", "UMask": "0x00", "EventName": "EVIL\u001b[31m.NAME",
        "BriefDescription": "desc\nforged line \u202e", "Counter": "0,1,2,3"}]"#;
    fs::write(&file, events).expect("write the event file");
    let r = hwprof(&["list", "--event-file", &s(&file), "--cpu", "skl", "evil"]);
    r.assert_ok();
    no_raw_controls(&r);
    assert!(
        r.stdout
            .lines()
            .any(|l| l.trim_start().starts_with("EVIL\\x1b[31m.NAME ")),
        "{}",
        r.dump()
    );
    assert!(
        r.stdout
            .lines()
            .any(|l| l.trim() == "desc\\nforged line \\u{202e}"),
        "{}",
        r.dump()
    );
}

/// A PEBS recording of the `memshare` workload mapped from a copy whose path holds an
/// escape and a line break: `mem report` and `c2c report` name its functions, data
/// symbols and module escaped, one row per line.
#[test]
fn mem_and_c2c_reports_escape_module_paths() {
    let dir = fresh_dir("escaping_mem");
    let bin = memdata::bin();
    let evil = dir.join(BIN);
    fs::copy(&bin.path, &evil).expect("copy memshare");
    let data = dir.join("mem.data");
    let mut accesses = memdata::false_sharing(&bin);
    // Loads of data no global symbol names (the dynamic section, named by its module)
    // from code no function holds (the ELF header's segment).
    let dynamic = bin.sym("_DYNAMIC");
    let header = bin.loads.iter().map(|l| l.0).min().expect("a PT_LOAD") + 0x200;
    for i in 0..6 {
        accesses.push(memdata::Access {
            store: false,
            tid: memdata::PID,
            cpu: 0,
            ip: header,
            addr: dynamic + 8 * i,
            data_src: memdata::ds::load(memdata::ds::LVL_L1, memdata::ds::SNOOP_NONE),
            weight: 30,
        });
    }
    memdata::write_as(
        &data,
        &bin,
        &s(&evil),
        &[memdata::PID, memdata::TID2],
        &accesses,
    );
    let r = hwprof(&["mem", "report", "-i", &s(&data), "--rows", "0"]);
    r.assert_ok();
    no_raw_controls(&r);
    // Every row: a key, then the 8 figures (numbers, or `-` for stores' latencies).
    let figure = |t: &str| t == "-" || t.trim_end_matches('%').parse::<f64>().is_ok();
    for l in r.stdout.lines().filter(|l| l.starts_with("  ")) {
        let t: Vec<&str> = l.split_whitespace().collect();
        assert!(
            t.len() >= 9 && t[t.len() - 8..].iter().all(|x| figure(x)),
            "a row cut: {l:?}\n{}",
            r.dump()
        );
    }
    let data_row = r
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{BIN_SHOWN} ")))
        .unwrap_or_else(|| panic!("no data row named by the module\n{}", r.dump()));
    assert_eq!(data_row.split_whitespace().nth(1), Some("5"), "{data_row}");

    let r = hwprof(&["c2c", "report", "-i", &s(&data)]);
    r.assert_ok();
    no_raw_controls(&r);
    // The offsets of the false-sharing line: functions and their module, escaped.
    let offsets: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("0x") && !l.contains("----"))
        .collect();
    assert!(offsets.len() >= 2, "{}", r.dump());
    for l in &offsets {
        let t: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(t.get(t.len() - 2), Some(&BIN_SHOWN), "{l:?}\n{}", r.dump());
    }
    report!(
        "mem report and c2c report of a binary mapped from {BIN_SHOWN:?}: module and rows escaped"
    );
}

/// A metric file naming its metrics, units and events with control characters:
/// `metrics` prints the tree escaped, one metric per line.
#[test]
fn metrics_escape_names_from_metric_files() {
    let dir = fresh_dir("escaping_metrics");
    let file = dir.join("metrics.json");
    let metrics = r#"{"Header": {}, "Metrics": [
      {"MetricName": "Evil\u001b[31m_Bound\nforged 1.00", "Level": 1, "UnitOfMeasure": "per\u001bcent",
       "Events": [{"Name": "page-faults", "Alias": "a"}], "Constants": [], "Formula": "a * 2"},
      {"MetricName": "Missing", "Level": 1, "UnitOfMeasure": "percent",
       "Events": [{"Name": "NO\u001bSUCH.EVENT", "Alias": "a"}], "Constants": [], "Formula": "a"}
    ]}"#;
    fs::write(&file, metrics).expect("write the metric file");
    let counts = dir.join("counts.csv");
    fs::write(&counts, "21,,page-faults,1000,100.00,,\n").expect("write the counts");
    let r = hwprof(&[
        "metrics",
        "--cpu",
        "skl",
        "--metrics-file",
        &s(&file),
        "--counts",
        &s(&counts),
        "--all",
    ]);
    r.assert_ok();
    no_raw_controls(&r);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", r.dump());
    let evil = "Evil\\x1b[31m_Bound\\nforged 1.00";
    assert!(
        lines[1].starts_with(evil) && lines[1].ends_with(" 42.000 per\\x1bcent"),
        "{}",
        r.dump()
    );
    assert!(
        lines[2].starts_with("Missing ") && lines[2].contains("NO\\x1bSUCH.EVENT"),
        "{}",
        r.dump()
    );
}

/// Outputs named with control characters: the lines that name them (`record`'s
/// summary, `flamegraph` and `offcpu`'s "wrote") print the name escaped.
#[test]
fn output_paths_are_escaped_where_they_are_named() {
    let dir = fresh_dir("escaping_outputs");
    let bin = evil_bin(&dir);
    let data = dir.join("out\x1b[2J\n.data");
    let r = hwprof(&[
        "record",
        "-e",
        "cpu-clock",
        "-o",
        &s(&data),
        "--",
        &s(&bin),
        "100",
        "10",
    ]);
    r.assert_ok();
    no_raw_controls(&r);
    assert!(r.stderr.contains("out\\x1b[2J\\n.data ]"), "{}", r.dump());
    let svg = dir.join("g\x1b[2J\n.svg");
    let r = hwprof(&["flamegraph", "-i", &s(&data), "-o", &s(&svg)]);
    r.assert_ok();
    no_raw_controls(&r);
    assert!(r.stderr.contains("wrote "), "{}", r.dump());
    assert!(r.stderr.contains("g\\x1b[2J\\n.svg ("), "{}", r.dump());
    if require_tracefs("offcpu -o PATH") {
        let r = hwprof(&["offcpu", "-o", &s(&svg), "--", &s(&bin), "10", "50"]);
        r.assert_ok();
        no_raw_controls(&r);
        assert!(r.stderr.contains("g\\x1b[2J\\n.svg ("), "{}", r.dump());
    }
}
