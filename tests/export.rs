//! `hwprof export` end to end: every format read by its own tool where one runs here.
//!
//! - pprof: `go tool pprof` (Debian golang-go) reads the file; `-top`'s flat percentages
//!   are `hwprof report --no-children`'s on the same recording to 0.5 points (a live
//!   cpu-clock recording of two hot functions made by `export -- CMD`, and the real
//!   3-event group of `../shared/fixtures/perfdata/perf.data.lost_samples-4.4`, each
//!   event its own sample type); `-lines` names hot_a's loop as the hottest line; `-raw`
//!   shows the build id of the workload's mapping, the comm/pid/tid labels, one value
//!   per event on each sample (a group's columns add up per function: IPC is a
//!   division), and the totals of the off-CPU, allocation and I/O recordings that
//!   `hwprof offcpu`, `memory` and `io` make, exactly as those commands count them.
//! - speedscope: valid against the `file-format-schema.json` of the `speedscope` npm
//!   package (`$HWPROF_NPM`, installed by .ci/run), its weights the recording's.
//! - Firefox Profiler: the processed format's shape as the profiler reads it (threads
//!   with samples, stack, frame and func tables, categories User and Kernel), off-CPU
//!   samples on the same thread as the CPU samples.
//! - Bad input: one line, non-zero exit, no output file.

#[macro_use]
mod common;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::*;
use serde_json::Value;

fn have_go() -> bool {
    require_tools(&[("go", "version")])
}

/// `go tool pprof ARGS FILE`'s stdout.
fn pprof(args: &[&str], file: &Path) -> String {
    let out = Command::new("go")
        .args(["tool", "pprof"])
        .args(args)
        .arg(file)
        .output()
        .expect("run go tool pprof");
    assert!(
        out.status.success(),
        "go tool pprof {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The rows of `go tool pprof -top`: name -> flat%.
fn top(file: &Path, sample_index: &str) -> HashMap<String, f64> {
    let si = format!("-sample_index={sample_index}");
    let text = pprof(
        &[
            "-top",
            "-nodecount=100000",
            "-nodefraction=0",
            "-edgefraction=0",
            &si,
        ],
        file,
    );
    let mut rows = HashMap::new();
    let mut body = false;
    for l in text.lines() {
        if l.trim_start().starts_with("flat  flat%") {
            body = true;
            continue;
        }
        if !body {
            continue;
        }
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 6 {
            continue;
        }
        let pct: f64 = f[1].trim_end_matches('%').parse().expect("flat%");
        *rows.entry(f[5..].join(" ")).or_insert(0.0) += pct;
    }
    rows
}

/// `go tool pprof -raw`: the sample types, each column's total, and the text.
struct Raw {
    types: Vec<String>,
    totals: Vec<i128>,
    text: String,
}

fn raw(file: &Path) -> Raw {
    let text = pprof(&["-raw"], file);
    let mut lines = text.lines().skip_while(|l| *l != "Samples:").skip(1);
    let types: Vec<String> = lines
        .next()
        .expect("sample types line")
        .split_whitespace()
        .map(|t| t.trim_end_matches("[dflt]").to_string())
        .collect();
    let mut totals = vec![0i128; types.len()];
    for l in lines.take_while(|l| !l.starts_with("Locations")) {
        let Some((values, _)) = l.split_once(':') else {
            continue;
        };
        let v: Vec<i128> = match values.split_whitespace().map(str::parse).collect() {
            Ok(v) => v,
            Err(_) => continue,
        };
        if v.len() != types.len() {
            continue;
        }
        for (t, x) in totals.iter_mut().zip(v) {
            *t += x;
        }
    }
    Raw {
        types,
        totals,
        text,
    }
}

impl Raw {
    fn total(&self, ty: &str) -> i128 {
        let i = self
            .types
            .iter()
            .position(|t| t.starts_with(&format!("{ty}/")))
            .unwrap_or_else(|| panic!("no sample type {ty} in {:?}", self.types));
        self.totals[i]
    }
}

/// One event of `hwprof report`: samples, period, rows of (pprof's name for the row,
/// overhead %).
type Event = (u64, u64, Vec<(String, f64)>);

/// `hwprof report --no-children --json`, per event.
fn report(data: &Path) -> HashMap<String, Event> {
    let r = hwprof(&["report", "--no-children", "--json", "-i", &s(data)]);
    r.assert_ok();
    let v: Value = serde_json::from_str(&r.stdout).expect("report json");
    let mut out = HashMap::new();
    for ev in v["events"].as_array().expect("events") {
        let rows = ev["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|row| {
                let sym = row["symbol"].as_str().unwrap_or("");
                let sym = sym.get(4..).unwrap_or(sym);
                let dso = row["dso"].as_str().unwrap_or("");
                // An unresolved address: perf's `module+0xOFF`, as export names it.
                let name = match sym.strip_prefix("0x") {
                    Some(hex) => {
                        let off = u64::from_str_radix(hex, 16).expect("hex address");
                        format!("{}+{off:#x}", dso.rsplit('/').next().unwrap_or(dso))
                    }
                    None => sym.to_string(),
                };
                (name, row["overhead"].as_f64().expect("overhead"))
            })
            .collect();
        out.insert(
            ev["name"].as_str().expect("name").to_string(),
            (
                ev["samples"].as_u64().expect("samples"),
                ev["period"].as_u64().expect("period"),
                rows,
            ),
        );
    }
    out
}

/// Every row of `hwprof report` of at least 0.5% is pprof's row of the same function
/// to 0.5 points, and pprof has no row of 1% or more that report lacks.
fn same_percentages(what: &str, rows: &[(String, f64)], got: &HashMap<String, f64>) {
    let mut checked = 0;
    for (name, pct) in rows.iter().filter(|(_, p)| *p >= 0.5) {
        let theirs = got.get(name).copied().unwrap_or(0.0);
        assert!(
            (theirs - pct).abs() <= 0.5,
            "{what}: {name}: report {pct:.2}%, pprof {theirs:.2}%\npprof: {got:?}"
        );
        checked += 1;
    }
    for (name, pct) in got.iter().filter(|(_, p)| **p >= 1.0) {
        assert!(
            rows.iter().any(|(n, _)| n == name),
            "{what}: pprof's {name} ({pct:.2}%) is no row of report"
        );
    }
    report!("export: {what}: {checked} rows of report within 0.5 points of pprof -top");
    assert!(checked > 0, "{what}: no row compared");
}

/// The two_hot recording (cpu-clock, 3:1 between hot_a and hot_b) made by `export --
/// CMD` with `--data-file`, and its pprof export; made once.
fn two_hot() -> &'static (PathBuf, PathBuf) {
    static MADE: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    MADE.get_or_init(|| {
        let dir = fresh_dir("export-two-hot");
        let data = dir.join("two_hot.data");
        let pb = dir.join("two_hot.pb.gz");
        let r = hwprof(&[
            "export",
            "--format",
            "pprof",
            "-o",
            &s(&pb),
            "-e",
            "cpu-clock",
            "--data-file",
            &s(&data),
            "--",
            &wl("two_hot"),
            "600",
            "3",
            "1",
        ]);
        r.assert_ok();
        assert!(r.stderr.contains("hwprof: wrote"), "{}", r.dump());
        (data, pb)
    })
}

#[test]
fn pprof_top_matches_report_on_a_live_recording() {
    if !have_go() {
        return;
    }
    let (data, pb) = two_hot();
    let rep = report(data);
    let (_, period, rows) = rep.get("cpu-clock").expect("cpu-clock in report");
    let got = top(pb, "cpu-clock");
    let a = got.get("hot_a").copied().unwrap_or(0.0);
    assert!(a > 50.0, "hot_a only {a:.1}% in pprof: {got:?}");
    same_percentages("two_hot cpu-clock", rows, &got);
    let r = raw(pb);
    assert_eq!(r.types, ["cpu-clock/nanoseconds"], "{}", r.text);
    assert_eq!(
        r.total("cpu-clock"),
        *period as i128,
        "pprof's total is report's"
    );
    // The workload's mapping, with its build id; labels.
    let id = build_id_hex(&workload("two_hot"));
    assert!(
        r.text
            .lines()
            .any(|l| l.contains(&s(&workload("two_hot"))) && l.contains(&id)),
        "no mapping of two_hot with build id {id}:\n{}",
        r.text
    );
    assert!(r.text.contains("comm:[two_hot]"), "{}", r.text);
    assert!(
        r.text.contains("pid:[") && r.text.contains("tid:["),
        "{}",
        r.text
    );
}

#[test]
fn pprof_lines_name_the_hot_loop() {
    if !have_go() {
        return;
    }
    let (_, pb) = two_hot();
    // hot_a's loop: the `for` line and its body, from the source itself.
    let src =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workloads/two_hot.c"))
            .expect("two_hot.c");
    let start = src
        .lines()
        .position(|l| l.contains("long hot_a("))
        .expect("hot_a in two_hot.c");
    let loop_lines: Vec<usize> = src
        .lines()
        .enumerate()
        .skip(start)
        .take(6)
        .filter(|(_, l)| l.contains("for (") || l.contains("x = x *"))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(loop_lines.len(), 2, "hot_a's loop in two_hot.c");
    let text = pprof(&["-lines", "-top", "-nodecount=3"], pb);
    let first = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat  flat%"))
        .nth(1)
        .expect("a row");
    report!("export: pprof -lines' hottest: {}", first.trim());
    assert!(
        first.contains("hot_a")
            && loop_lines
                .iter()
                .any(|n| first.trim_end().ends_with(&format!("two_hot.c:{n}"))),
        "hottest line is not hot_a's loop ({loop_lines:?}): {first}\n{text}"
    );
    // Line by line, the shares of `hwprof report -s srcline` (the innermost frame's
    // file:line, as pprof's -lines attributes a sample).
    let (data, _) = two_hot();
    let r = hwprof(&[
        "report",
        "--no-children",
        "-s",
        "srcline",
        "--json",
        "-i",
        &s(data),
    ]);
    r.assert_ok();
    let v: Value = serde_json::from_str(&r.stdout).expect("report json");
    let mut by_line: HashMap<String, f64> = HashMap::new();
    for (name, pct) in top_lines(pb) {
        // `hot_a /path/two_hot.c:17` -> `two_hot.c:17`
        let at = name.rsplit('/').next().unwrap_or(&name).to_string();
        *by_line.entry(at).or_insert(0.0) += pct;
    }
    let mut checked = 0;
    for row in v["events"][0]["rows"].as_array().expect("rows") {
        let (Some(line), Some(pct)) = (row["srcline"].as_str(), row["overhead"].as_f64()) else {
            continue;
        };
        if pct < 1.0 || !line.starts_with("two_hot.c:") {
            continue;
        }
        let theirs = by_line.get(line).copied().unwrap_or(0.0);
        assert!(
            (theirs - pct).abs() <= 0.5,
            "{line}: report -s srcline {pct:.2}%, pprof -lines {theirs:.2}%: {by_line:?}"
        );
        checked += 1;
    }
    report!(
        "export: {checked} source lines of report -s srcline within 0.5 points of pprof -lines"
    );
    assert!(checked >= 2, "no hot line compared");
    // And hwprof annotate's shares of hot_a's lines: pprof's lines of hot_a, as a
    // share of hot_a's own time.
    let a = hwprof(&["annotate", "hot_a", "-i", &s(data)]);
    a.assert_ok();
    let mine: Vec<(String, f64)> = top_lines(pb)
        .into_iter()
        .filter(|(n, _)| n.starts_with("hot_a "))
        .map(|(n, p)| (n.rsplit('/').next().unwrap_or(&n).to_string(), p))
        .collect();
    let in_fn: f64 = mine.iter().map(|(_, p)| p).sum();
    let mut marked = 0;
    for l in a.stdout.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = l.split_whitespace().filter(|t| *t != "*").collect();
        let (Some(pct), Some(line)) = (
            f.first().and_then(|p| p.parse::<f64>().ok()),
            f.iter().find(|t| t.starts_with("two_hot.c:")),
        ) else {
            continue;
        };
        if pct < 5.0 {
            continue;
        }
        let theirs = mine
            .iter()
            .find(|(n, _)| n == line)
            .map_or(0.0, |(_, p)| 100.0 * p / in_fn);
        assert!(
            (theirs - pct).abs() <= 0.5,
            "{line}: annotate {pct:.2}% of hot_a, pprof -lines {theirs:.2}%\n{}",
            a.stdout
        );
        marked += 1;
    }
    report!(
        "export: {marked} hot lines of hwprof annotate hot_a within 0.5 points of pprof -lines"
    );
    assert!(marked >= 1, "no hot line in annotate:\n{}", a.stdout);
}

/// `go tool pprof -lines -top`: rows `function file:line` -> flat%.
fn top_lines(file: &Path) -> Vec<(String, f64)> {
    let text = pprof(
        &[
            "-lines",
            "-top",
            "-nodecount=100000",
            "-nodefraction=0",
            "-edgefraction=0",
        ],
        file,
    );
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("flat  flat%"))
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let pct = f.get(1)?.trim_end_matches('%').parse().ok()?;
            Some((f.get(5..)?.join(" "), pct))
        })
        .collect()
}

#[test]
fn pprof_group_is_one_sample_type_per_event() {
    if !have_go() {
        return;
    }
    let Some(fx) = fixture("perf.data.lost_samples-4.4") else {
        return;
    };
    let dir = fresh_dir("export-group");
    let pb = dir.join("group.pb.gz");
    hwprof(&["export", "--format", "pprof", "-i", &s(&fx), "-o", &s(&pb)]).assert_ok();
    let r = raw(&pb);
    let names = ["cycles:pp", "instructions:pp", "branch-instructions:pp"];
    let want: Vec<String> = names.iter().map(|n| format!("{n}/count")).collect();
    assert_eq!(r.types, want, "{}", r.text);
    let rep = report(&fx);
    for n in names {
        let (_, period, rows) = rep.get(n).unwrap_or_else(|| panic!("{n} in report"));
        assert_eq!(
            r.total(n),
            *period as i128,
            "{n}: pprof's total is report's"
        );
        same_percentages(&format!("group {n}"), rows, &top(&pb, n));
    }
    // IPC is the division of two columns: per module (the fixture's addresses are
    // unresolved, `module+0xOFF`), pprof's sums of each column are report -s dso's.
    let per_dso = |n: &str| -> HashMap<String, i128> {
        let mut m = HashMap::new();
        for (name, v) in top_values(&pb, n) {
            let dso = name.split('+').next().unwrap_or(&name).to_string();
            *m.entry(dso).or_insert(0) += v;
        }
        m
    };
    let (cycles, instructions) = (per_dso("cycles:pp"), per_dso("instructions:pp"));
    let r = hwprof(&[
        "report",
        "--no-children",
        "-s",
        "dso",
        "--json",
        "-i",
        &s(&fx),
    ]);
    r.assert_ok();
    let v: Value = serde_json::from_str(&r.stdout).expect("report json");
    let of = |ev: &str, dso: &str| -> Option<i128> {
        v["events"].as_array()?.iter().find(|e| e["name"] == ev)?["rows"]
            .as_array()?
            .iter()
            .find(|row| row["dso"] == dso)?["period"]
            .as_u64()
            .map(i128::from)
    };
    let mut compared = 0;
    for (dso, &c) in &cycles {
        let Some(&i) = instructions.get(dso) else {
            continue;
        };
        assert_eq!(Some(c), of("cycles:pp", dso), "{dso} cycles");
        assert_eq!(Some(i), of("instructions:pp", dso), "{dso} instructions");
        report!(
            "export: group fixture: {dso}: IPC {:.3} from pprof's columns",
            i as f64 / c as f64
        );
        compared += 1;
    }
    assert!(
        compared >= 2,
        "modules with both events: {cycles:?} {instructions:?}"
    );
}

/// `go tool pprof -top` of a count sample type: rows name -> flat value.
fn top_values(file: &Path, sample_index: &str) -> Vec<(String, i128)> {
    let si = format!("-sample_index={sample_index}");
    let text = pprof(
        &[
            "-top",
            "-nodecount=100000",
            "-nodefraction=0",
            "-edgefraction=0",
            &si,
        ],
        file,
    );
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("flat  flat%"))
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((f.get(5..)?.join(" "), f.first()?.parse().ok()?))
        })
        .collect()
}

/// `$HWPROF_NPM/node_modules/speedscope/dist/release/file-format-schema.json`, or `None`
/// after a skip.
fn speedscope_schema() -> Option<Value> {
    let npm = std::env::var_os("HWPROF_NPM").map(PathBuf::from);
    let path = npm.map(|d| d.join("node_modules/speedscope/dist/release/file-format-schema.json"));
    match path.filter(|p| p.is_file()) {
        Some(p) => {
            Some(serde_json::from_slice(&fs::read(p).expect("read schema")).expect("schema json"))
        }
        None => {
            skip(
                Why::Setup,
                "speedscope's file-format-schema.json: set HWPROF_NPM (.ci/run installs speedscope there)",
            );
            None
        }
    }
}

#[test]
fn speedscope_is_valid_against_its_schema() {
    let Some(schema) = speedscope_schema() else {
        return;
    };
    let (data, _) = two_hot();
    let dir = fresh_dir("export-speedscope");
    let out = dir.join("p.speedscope.json");
    hwprof(&[
        "export",
        "--format",
        "speedscope",
        "-i",
        &s(data),
        "-o",
        &s(&out),
    ])
    .assert_ok();
    let doc: Value = serde_json::from_slice(&fs::read(&out).expect("output")).expect("json");
    let v = jsonschema::validator_for(&schema).expect("compile the schema");
    let errors: Vec<String> = v
        .iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "not valid speedscope: {errors:#?}");
    // What the schema cannot say: the weights are the recording's, frames are named.
    let rep = report(data);
    let (_, period, _) = rep.get("cpu-clock").expect("cpu-clock");
    let profiles = doc["profiles"].as_array().expect("profiles");
    let total: u64 = profiles
        .iter()
        .flat_map(|p| p["weights"].as_array().expect("weights").iter())
        .map(|w| w.as_u64().expect("weight"))
        .sum();
    assert_eq!(
        total, *period,
        "speedscope weights add up to the recorded period"
    );
    assert!(profiles.iter().all(|p| p["unit"] == "nanoseconds"));
    assert!(
        profiles[0]["name"]
            .as_str()
            .unwrap_or("")
            .starts_with("two_hot ")
    );
    let frames = doc["shared"]["frames"].as_array().expect("frames");
    let hot_a = frames
        .iter()
        .find(|f| f["name"] == "hot_a")
        .expect("hot_a frame");
    assert!(
        hot_a["file"].as_str().unwrap_or("").ends_with("two_hot.c"),
        "{hot_a}"
    );
    // Even an empty document fails the schema (the check is not vacuous).
    assert!(!v.is_valid(&serde_json::json!({"profiles": 1})));
}

/// The Firefox Profiler's processed profile of `data`.
fn firefox(data: &Path, tag: &str) -> Value {
    let dir = fresh_dir(tag);
    let out = dir.join("p.json");
    hwprof(&[
        "export",
        "--format",
        "firefox",
        "-i",
        &s(data),
        "-o",
        &s(&out),
    ])
    .assert_ok();
    serde_json::from_slice(&fs::read(&out).expect("output")).expect("json")
}

/// The function names of a thread's samples' leaves, with their samples (weights; the
/// processed format's tables: samples.stack -> stackTable.frame -> frameTable.func ->
/// funcTable.name -> stringArray).
fn leaves(t: &Value, strings: &[Value]) -> HashMap<String, usize> {
    let stack_frame = t["stackTable"]["frame"]
        .as_array()
        .expect("stackTable.frame");
    let frame_func = t["frameTable"]["func"].as_array().expect("frameTable.func");
    let func_name = t["funcTable"]["name"].as_array().expect("funcTable.name");
    let weights = t["samples"]["weight"].as_array().expect("samples.weight");
    let mut out = HashMap::new();
    for (st, w) in t["samples"]["stack"]
        .as_array()
        .expect("samples.stack")
        .iter()
        .zip(weights)
    {
        let Some(st) = st.as_u64() else { continue };
        let frame = stack_frame[st as usize].as_u64().expect("frame");
        let func = frame_func[frame as usize].as_u64().expect("func");
        let name = func_name[func as usize].as_u64().expect("name");
        let name = strings[name as usize].as_str().expect("string").to_string();
        *out.entry(name).or_insert(0) += w.as_u64().expect("weight") as usize;
    }
    out
}

#[test]
fn firefox_has_a_thread_track_with_every_sample() {
    let (data, _) = two_hot();
    let p = firefox(data, "export-firefox");
    let names: Vec<&str> = p["meta"]["categories"]
        .as_array()
        .expect("categories")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(
        names.contains(&"User") && names.contains(&"Kernel"),
        "{names:?}"
    );
    let threads = p["threads"].as_array().expect("threads");
    assert_eq!(threads.len(), 1, "one thread");
    let t = &threads[0];
    assert_eq!(t["name"], "two_hot");
    let rep = report(data);
    let (samples, period, _) = rep.get("cpu-clock").expect("cpu-clock");
    // Times as the processed format keeps them: deltas from one sample to the next.
    let deltas = t["samples"]["timeDeltas"]
        .as_array()
        .expect("samples.timeDeltas");
    let numbers = |what: &str| -> Vec<u64> {
        t["samples"][what]
            .as_array()
            .unwrap_or_else(|| panic!("samples.{what}"))
            .iter()
            .map(|x| x.as_u64().expect("a count"))
            .collect()
    };
    // Every recorded sample counted once, its CPU time once (in the µs the format
    // keeps: each entry's rounded down), runs of one stack kept as two entries (the
    // first sample, then the rest at the run's last time), so that a loop's 600 ms
    // are fewer entries than samples.
    let weights = numbers("weight");
    assert_eq!(
        weights.iter().sum::<u64>(),
        *samples,
        "every recorded sample"
    );
    let cpu_us = numbers("threadCPUDelta").iter().sum::<u64>();
    let entries = weights.len() as u64;
    assert!(
        cpu_us <= period / 1000 && cpu_us + entries >= period / 1000,
        "CPU time {cpu_us} µs of {period} ns in {entries} entries"
    );
    assert!(
        entries < *samples && entries > 1,
        "{entries} entries for {samples} samples"
    );
    assert_eq!(deltas.len() as u64, entries);
    let deltas: Vec<f64> = deltas.iter().map(|x| x.as_f64().expect("time")).collect();
    assert!(deltas.iter().all(|&d| d >= 0.0), "samples in time order");
    let span: f64 = deltas.iter().skip(1).sum();
    assert!(span > 300.0, "a 600 ms run spans {span} ms");
    let strings = p["shared"]["stringArray"]
        .as_array()
        .or_else(|| t["stringArray"].as_array())
        .expect("string table");
    let l = leaves(t, strings);
    let a = l.get("hot_a").copied().unwrap_or(0) as f64 / *samples as f64;
    assert!(a > 0.5, "hot_a leaves {a:.2} of the samples: {l:?}");
}

#[test]
fn firefox_off_cpu_is_on_the_threads_timeline() {
    let dir = fresh_dir("export-firefox-off");
    let data = dir.join("sw.data");
    let r = hwprof(&[
        "record",
        "--off-cpu",
        "-g",
        "-o",
        &s(&data),
        "--",
        &wl("offcpu_ab"),
    ]);
    r.assert_ok();
    let p = firefox(&data, "export-firefox-off-out");
    let names: Vec<&str> = p["meta"]["categories"]
        .as_array()
        .expect("categories")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(names.contains(&"Off-CPU"), "{names:?}");
    let interval_ms = p["meta"]["interval"].as_f64().expect("interval");
    let threads = p["threads"].as_array().expect("threads");
    let main = threads
        .iter()
        .find(|t| t["name"] == "offcpu_ab")
        .unwrap_or_else(|| {
            panic!(
                "no offcpu_ab thread: {:?}",
                threads.iter().map(|t| &t["name"]).collect::<Vec<_>>()
            )
        });
    assert!(
        threads
            .iter()
            .all(|t| !t["name"].as_str().unwrap_or("").ends_with(')')),
        "off-CPU time has no track of its own"
    );
    // Its off-CPU samples' weights, in intervals, are the off-CPU time pprof counts.
    let strings = main["stringArray"].as_array().expect("stringArray");
    let stack_frame = main["stackTable"]["frame"]
        .as_array()
        .expect("stackTable.frame");
    let frame_func = main["frameTable"]["func"]
        .as_array()
        .expect("frameTable.func");
    let func_name = main["funcTable"]["name"]
        .as_array()
        .expect("funcTable.name");
    let stacks = main["samples"]["stack"].as_array().expect("samples.stack");
    let weights = main["samples"]["weight"]
        .as_array()
        .expect("samples.weight");
    let mut off_ms = 0.0;
    for (st, w) in stacks.iter().zip(weights) {
        let Some(st) = st.as_u64() else { continue };
        let frame = stack_frame[st as usize].as_u64().expect("frame");
        let func = frame_func[frame as usize].as_u64().expect("func");
        let name = func_name[func as usize].as_u64().expect("name");
        if strings[name as usize] == "[off-CPU]" {
            off_ms += w.as_f64().expect("weight") * interval_ms;
        }
    }
    let pb = dir.join("sw.pb.gz");
    hwprof(&[
        "export",
        "--format",
        "pprof",
        "-i",
        &s(&data),
        "-o",
        &s(&pb),
    ])
    .assert_ok();
    if !have_go() {
        return;
    }
    let raw = raw(&pb);
    let all_ms = raw.total("off-cpu") as f64 / 1e6;
    report!(
        "export: firefox off-CPU of offcpu_ab's main thread {off_ms:.1} ms; pprof off-cpu of every thread {all_ms:.1} ms"
    );
    // The main thread waits about half of the process's off-CPU time (a_sleeps and
    // b_waits, 1 s of 2: the writer thread sleeps the rest).
    assert!(
        off_ms > 0.3 * all_ms && off_ms <= 1.05 * all_ms,
        "{off_ms} of {all_ms}"
    );
}

/// The number before `suffix` in `text` (`(2,003,083 µs)` -> 2003083).
fn number_before(text: &str, suffix: &str) -> u64 {
    let at = text
        .find(suffix)
        .unwrap_or_else(|| panic!("no {suffix:?} in {text}"));
    let digits: String = text[..at]
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number before {suffix:?} in {text}"))
}

/// Records with `hwprof CMD ... --data-file` (its BPF engine), exports to pprof and
/// returns (the command's stderr, pprof -raw), or `None` after a skip when BPF cannot
/// load here.
fn dimension(cmd: &[&str], tag: &str) -> Option<(String, Raw)> {
    let dir = fresh_dir(tag);
    let data = dir.join("d.data");
    let svg = dir.join("d.svg");
    let mut args: Vec<String> = vec![cmd[0].into(), "--engine".into(), "bpf".into()];
    args.extend([
        "--data-file".into(),
        s(&data),
        "-o".into(),
        s(&svg),
        "--".into(),
    ]);
    args.extend(cmd[1..].iter().map(|x| x.to_string()));
    let r = hwprof(&args);
    if r.code() != 0 && r.stderr.contains("BPF") {
        skip(
            Why::Setup,
            format_args!("{}: BPF: {}", cmd[0], r.stderr.trim()),
        );
        return None;
    }
    r.assert_ok();
    let pb = dir.join("d.pb.gz");
    hwprof(&[
        "export",
        "--format",
        "pprof",
        "-i",
        &s(&data),
        "-o",
        &s(&pb),
    ])
    .assert_ok();
    Some((r.stderr.clone(), raw(&pb)))
}

#[test]
fn pprof_exports_off_cpu_allocations_and_io_in_their_units() {
    if !have_go() {
        return;
    }
    // Off-CPU (offcpu-time, summed in the kernel): ns, and blocks.
    if let Some((said, r)) = dimension(&["offcpu", &wl("offcpu_ab")], "export-offcpu") {
        assert!(
            r.types.contains(&"offcpu-time/nanoseconds".to_string()),
            "{:?}",
            r.types
        );
        let us = number_before(&said, " µs)");
        let got_us = r.total("offcpu-time") / 1000;
        let samples = r.text.lines().filter(|l| l.contains("comm:[")).count() as i128;
        assert!(
            (got_us - us as i128).abs() <= samples,
            "offcpu said {us} µs, pprof {got_us} µs"
        );
        assert_eq!(
            r.total("offcpu-blocks"),
            number_before(&said, " blocks") as i128
        );
        report!("export: offcpu-time {got_us} µs in pprof, {us} µs in hwprof offcpu");
    }
    // Allocations: bytes and allocations, exactly as `hwprof memory` counts them.
    if let Some((said, r)) = dimension(&["memory", &wl("alloc_known")], "export-memory") {
        assert!(
            r.types.contains(&"allocated-bytes/bytes".to_string()),
            "{:?}",
            r.types
        );
        assert_eq!(
            r.total("allocated-bytes"),
            number_before(&said, " bytes)") as i128
        );
        assert_eq!(
            r.total("allocations"),
            number_before(&said, " allocations") as i128
        );
    }
    // I/O time: ns, and calls.
    let zero_dir = fresh_dir("export-io-zero");
    let zero = zero_dir.join("zero");
    if !mknod_char(&zero, 1, 5) {
        skip(Why::Setup, "mknod c 1 5 (root)");
        return;
    }
    if let Some((said, r)) = dimension(&["io", &wl("io_reads"), &s(&zero)], "export-io") {
        assert!(
            r.types.contains(&"io-time/nanoseconds".to_string()),
            "{:?}",
            r.types
        );
        let us = number_before(&said, " µs)");
        let got_us = r.total("io-time") / 1000;
        let samples = r.text.lines().filter(|l| l.contains("comm:[")).count() as i128;
        assert!(
            (got_us - us as i128).abs() <= samples,
            "io said {us} µs, pprof {got_us} µs"
        );
        assert_eq!(r.total("io-calls"), number_before(&said, " calls") as i128);
    }
}

#[test]
fn bad_input_is_one_line_and_no_output() {
    let dir = fresh_dir("export-bad");
    let out = dir.join("out.pb.gz");
    let text = dir.join("not.data");
    fs::write(&text, "hello, not a perf.data\n").expect("write");
    for (args, code) in [
        (
            vec![
                "export",
                "--format",
                "pprof",
                "-i",
                &s(&text),
                "-o",
                &s(&out),
            ],
            1,
        ),
        (
            vec!["export", "--format", "svg", "-i", &s(&text), "-o", &s(&out)],
            2,
        ),
        (
            vec![
                "export",
                "--format",
                "pprof",
                "-i",
                &s(&dir.join("absent")),
                "-o",
                &s(&out),
            ],
            1,
        ),
    ] {
        let r = hwprof(&args);
        assert_eq!(r.code(), code, "{args:?}: {}", r.dump());
        assert_eq!(
            r.stderr.trim_end().lines().count(),
            1,
            "one line: {}",
            r.dump()
        );
        assert!(r.stderr.starts_with("hwprof: "), "{}", r.dump());
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
    }
    // A recording without samples.
    let empty = dir.join("empty.data");
    let r = hwprof(&[
        "record",
        "-e",
        "cpu-clock",
        "-c",
        "1000000000000",
        "-o",
        &s(&empty),
        "--",
        "true",
    ]);
    r.assert_ok();
    let r = hwprof(&[
        "export",
        "--format",
        "speedscope",
        "-i",
        &s(&empty),
        "-o",
        &s(&out),
    ]);
    assert_eq!(r.code(), 1, "{}", r.dump());
    assert!(r.stderr.contains("no samples"), "{}", r.dump());
    assert_eq!(r.stderr.trim_end().lines().count(), 1, "{}", r.dump());
    assert!(!out.exists());
}
