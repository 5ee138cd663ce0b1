//! `hwprof metrics`: every level-1 and level-2 metric of Intel's SKL, SKX, ICL and SPR
//! metric files, evaluated by hwprof over generated counts, agrees to 0.01 points with
//! the published formula evaluated by Python (`eval` of the `Formula` text with the
//! aliases bound: the formulas are Python expressions, so the reference is not
//! hwprof's parser). Count sets: pseudo-random, some events zero, every event zero
//! (division by zero: no value on both sides), and events left out (no value, and the
//! missing events named). Counts are given as `perf stat -x,` lines or `hwprof stat -j`
//! lines; real outputs of both tools on this machine are read too.

mod common;
mod metrics_ref;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Why, hwprof, skip};
use metrics_ref::{by_name, metrics_of_counts, python, python3, row};
use serde_json::Value;

const MODELS: [(&str, &str); 4] = [
    ("skl", "SKL/metrics/skylake_metrics.json"),
    ("skx", "SKX/metrics/skylakex_metrics.json"),
    ("icl", "ICL/metrics/icelake_metrics.json"),
    ("spr", "SPR/metrics/sapphirerapids_metrics.json"),
];

/// Constants the files' level-1 metrics use beyond SMT, given to both sides.
const CONSTS: [(&str, &str); 6] = [
    ("SYSTEM_TSC_FREQ", "2100000000"),
    ("SOCKET_COUNT", "2"),
    ("CORES_PER_SOCKET", "24"),
    ("CHAS_PER_SOCKET", "24"),
    ("DURATIONTIMEINMILLISECONDS", "1500"),
    ("system.sockets[0].cpus.count * system.socket_count", "96"),
];

/// Writes the counts file (`csv` or `json`) for the level-1 and level-2 metrics of
/// `metrics_json`, and prints one JSON line per metric with the reference value
/// (`null` on a division by zero or a missing name) and the names it found missing.
const REFERENCE_PY: &str = r#"
import json, math, random, sys
path, smt, seed, mode, fmt, out, consts = sys.argv[1], sys.argv[2] == "on", int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6], json.loads(sys.argv[7])
metrics = [m for m in json.load(open(path))["Metrics"] if m["Level"] in (1, 2)]
events = sorted({e["Name"] for m in metrics for e in m["Events"]})
rng = random.Random(seed)
counts = {}
for e in events:
    v = float(rng.randint(1000, 10**9))
    if mode == "zeros" and rng.random() < 0.25: v = 0.0
    if mode == "allzero": v = 0.0
    if mode == "missing" and rng.random() < 0.1: continue
    counts[e] = v
with open(out, "w") as f:
    for e, v in counts.items():
        if fmt == "csv":
            f.write("%d,,%s,1000000,100.00,,\n" % (v, e))
        else:
            f.write(json.dumps({"event": e, "value": int(v) // 2, "scaled": v, "enabled_ns": 2000, "running_ns": 1000, "supported": True}) + "\n")
def const(name):
    if name == "HYPERTHREADING_ON": return 1.0 if smt else 0.0
    if name == "THREADS_PER_CORE": return 2.0 if smt else 1.0
    try: return float(name)
    except ValueError: pass
    return float(consts[name.upper()]) if name.upper() in consts else None
for m in metrics:
    env = {}
    for e in m["Events"]:
        if e["Name"] in counts: env[e["Alias"]] = counts[e["Name"]]
    for c in m["Constants"]:
        v = const(c["Name"])
        if v is not None: env[c["Alias"]] = v
    env["DURATIONTIMEINSECONDS"] = float(consts["DURATIONTIMEINMILLISECONDS"]) / 1000
    res = {"name": m["MetricName"], "value": None, "status": "ok"}
    try:
        res["value"] = float(eval(m["Formula"], {"__builtins__": {}, "min": min, "max": max}, env))
    except ZeroDivisionError:
        res["status"] = "zero"
    except NameError as e:
        res["status"] = "missing"
    print(json.dumps(res))
"#;

fn perfmon_dir() -> Option<PathBuf> {
    let p = hwprof_testkit::fixture_path("perfmon/mapfile.csv")?;
    Some(p.parent()?.to_path_buf())
}

fn const_args() -> Vec<String> {
    CONSTS
        .iter()
        .flat_map(|(k, v)| ["--const".to_string(), format!("{k}={v}")])
        .collect()
}

/// Runs the reference and hwprof on one count set; returns how many metrics had a
/// value on both sides.
fn check(
    dir: &Path,
    model: &str,
    file: &str,
    smt: &str,
    seed: u32,
    mode: &str,
    fmt: &str,
) -> usize {
    let metrics_json = dir.join(file);
    let counts = common::scratch_path(&format!("metrics-{model}-{smt}-{seed}-{mode}.{fmt}"));
    let consts: serde_json::Map<String, Value> = CONSTS
        .iter()
        .map(|(k, v)| (k.to_ascii_uppercase(), Value::String((*v).into())))
        .collect();
    let reference = python(
        REFERENCE_PY,
        &[
            metrics_json.as_ref(),
            smt.as_ref(),
            seed.to_string().as_ref(),
            mode.as_ref(),
            fmt.as_ref(),
            counts.as_ref(),
            Value::Object(consts).to_string().as_ref(),
        ],
    );
    let want = by_name(&reference, |_| {});
    let mut args: Vec<String> = [
        "metrics",
        "--cpu",
        model,
        "--smt",
        smt,
        "--json",
        "--all",
        "--level",
        "2",
        "--perfmon-dir",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(dir.display().to_string());
    args.push("--counts".into());
    args.push(counts.display().to_string());
    args.extend(const_args());
    let run = hwprof(&args);
    let got = by_name(&run.stdout, |_| {});
    let case = format!("{model} smt {smt} seed {seed} {mode} ({fmt})");
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{case}: the same level-1 and level-2 metrics\n{}",
        run.dump()
    );
    let mut both = 0;
    for (name, w) in &want {
        let g = &got[name];
        assert!(
            g["level"] == 1 || g["level"] == 2,
            "{case}: {name} level {}",
            g["level"]
        );
        match w["status"].as_str() {
            Some("ok") => {
                let (wv, gv) = (w["value"].as_f64(), g["value"].as_f64());
                let (Some(wv), Some(gv)) = (wv, gv) else {
                    panic!("{case}: {name}: reference {w}, hwprof {g}");
                };
                let tol = 0.01f64.max(wv.abs() * 1e-12);
                assert!(
                    (wv - gv).abs() <= tol,
                    "{case}: {name}: reference {wv}, hwprof {gv}"
                );
                both += 1;
            }
            Some("zero") => assert_eq!(
                (g["value"].clone(), g["error"].as_str()),
                (Value::Null, Some("division by zero")),
                "{case}: {name}: {g}"
            ),
            _ => {
                assert_eq!(g["value"], Value::Null, "{case}: {name}: {g}");
                let missing = g["missing_events"].as_array().map_or(0, Vec::len)
                    + g["missing_constants"].as_array().map_or(0, Vec::len);
                assert!(missing > 0, "{case}: {name} names what is missing: {g}");
            }
        }
    }
    if run.code() != 0 {
        // Only when no metric had a value (every count zero).
        assert!(got.values().all(|v| v["value"].is_null()), "{}", run.dump());
        assert_eq!(run.code(), 1, "{}", run.dump());
    }
    let _ = std::fs::remove_file(&counts);
    both
}

#[test]
fn every_level_1_and_2_metric_agrees_with_the_published_formula() {
    let Some(dir) = perfmon_dir() else { return };
    if !python3() {
        return;
    }
    for (model, file) in MODELS {
        let mut valued = 0;
        for smt in ["on", "off"] {
            for seed in 1..=3 {
                valued += check(&dir, model, file, smt, seed, "random", "csv");
            }
            valued += check(&dir, model, file, smt, 4, "zeros", "csv");
            valued += check(&dir, model, file, smt, 5, "zeros", "json");
            valued += check(&dir, model, file, smt, 6, "allzero", "csv");
            valued += check(&dir, model, file, smt, 7, "missing", "json");
        }
        common::report_line(&format!(
            "metrics {model}: {valued} metric values agree with Python's evaluation of the formulas"
        ));
        assert!(valued > 500, "{model}: only {valued} values compared");
    }
}

/// The four level-1 nodes and their level-2 children are what `hwprof metrics` shows
/// by default, as a tree.
#[test]
fn default_output_is_the_topdown_tree_to_level_2() {
    let Some(dir) = perfmon_dir() else { return };
    let d = dir.display().to_string();
    let run = metrics_of_counts(
        "metrics-tree.csv",
        "100,,PERF_METRICS.FRONTEND_BOUND,1,100.00,,\n\
         200,,PERF_METRICS.BAD_SPECULATION,1,100.00,,\n\
         300,,PERF_METRICS.RETIRING,1,100.00,,\n\
         400,,PERF_METRICS.BACKEND_BOUND,1,100.00,,\n\
         1000,,TOPDOWN.SLOTS,1,100.00,,\n\
         0,,INT_MISC.UOP_DROPPING,1,100.00,,\n",
        &["--cpu", "icelake", "--perfmon-dir", &d],
    );
    run.assert_ok();
    let rows = run.stdout.lines().count();
    assert_eq!(rows, 13, "a header and 12 metrics\n{}", run.dump());
    assert!(
        row(&run.stdout, "Frontend_Bound").contains("10.00 %"),
        "{}",
        run.stdout
    );
    assert!(
        row(&run.stdout, "Retiring").contains("30.00 %"),
        "{}",
        run.stdout
    );
    assert!(row(&run.stdout, "Backend_Bound").starts_with("Backend_Bound"));
    assert!(
        row(&run.stdout, "Memory_Bound").starts_with("  Memory_Bound"),
        "indented"
    );
    assert!(
        row(&run.stdout, "Fetch_Latency").contains("missing events IDQ_UOPS_NOT_DELIVERED"),
        "{}",
        run.stdout
    );
}

/// Real `perf stat -x,` and `hwprof stat -j` outputs of this machine (software events)
/// are read, through a metrics file of the same shape as Intel's.
#[test]
fn real_perf_stat_and_hwprof_stat_outputs_are_read() {
    if !python3() || !common::require_perf("perf stat -x, output") {
        return;
    }
    let dir = common::scratch_path("metrics-real");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let file = dir.join("sw_metrics.json");
    std::fs::write(
        &file,
        r#"{"Header": {}, "Metrics": [
  {"MetricName": "Faults_Share", "Level": 1, "UnitOfMeasure": "percent",
   "Events": [{"Name": "page-faults", "Alias": "a"}, {"Name": "task-clock", "Alias": "b"}],
   "Constants": [], "Formula": "100 * a / ( a + b )"},
  {"MetricName": "Switch_Rate", "Level": 2, "ParentCategory": "Faults_Share", "UnitOfMeasure": "",
   "Events": [{"Name": "context-switches", "Alias": "a"}, {"Name": "task-clock", "Alias": "b"}],
   "Constants": [], "Formula": "a / b if b > 0 else 0"}
]}"#,
    )
    .expect("write metrics file");
    let events = "task-clock,page-faults,context-switches";
    let perf_out = dir.join("perf.csv");
    let hw_out = dir.join("hwprof.jsonl");
    common::perf(&[
        "stat",
        "-x,",
        "-e",
        events,
        "-o",
        &perf_out.display().to_string(),
        "--",
        "ls",
        "/",
    ])
    .assert_ok();
    hwprof(&[
        "stat",
        "-j",
        "-e",
        events,
        "-o",
        &hw_out.display().to_string(),
        "--",
        "ls",
        "/",
    ])
    .assert_ok();
    for (out, what) in [(&perf_out, "perf stat -x,"), (&hw_out, "hwprof stat -j")] {
        let text = std::fs::read_to_string(out).expect("read counts");
        // The reference: the counts as the tool wrote them, read by Python.
        let py = python(
            r##"
import json, sys
c = {}
for l in open(sys.argv[1]):
    l = l.strip()
    if not l or l.startswith("#"): continue
    if l.startswith("{"):
        o = json.loads(l); c[o["event"]] = o["scaled"]
    else:
        f = l.split(","); c[f[2]] = float(f[0])
a, b, s = c["page-faults"], c["task-clock"], c["context-switches"]
print(json.dumps([100 * a / (a + b), s / b if b > 0 else 0]))
"##,
            &[out.as_ref()],
        );
        let want: Vec<f64> = serde_json::from_str(&py).unwrap_or_else(|e| panic!("{e}: {text}"));
        let run = hwprof(&[
            "metrics",
            "--cpu",
            "skl",
            "--metrics-file",
            &file.display().to_string(),
            "--counts",
            &out.display().to_string(),
            "--json",
        ]);
        run.assert_ok();
        let got = by_name(&run.stdout, |_| {});
        for (name, w) in ["Faults_Share", "Switch_Rate"].iter().zip(want) {
            let g = got[*name]["value"].as_f64().expect("a value");
            assert!((g - w).abs() <= 0.01, "{what}: {name}: {g} vs {w}\n{text}");
        }
        common::report_line(&format!(
            "metrics from {what} output: {}",
            run.stdout.trim().replace('\n', " ")
        ));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn errors_are_one_line() {
    let Some(dir) = perfmon_dir() else { return };
    let d = dir.display().to_string();
    let empty = common::scratch_path("metrics-empty.csv");
    std::fs::write(&empty, "").expect("write");
    let e = empty.display().to_string();
    let cases: [(&[&str], i32, &str); 5] = [
        (
            &["metrics", "--cpu", "zen3", "--counts", &e],
            2,
            "the models are skl, skx, icl, spr, zen4 and zen5",
        ),
        (
            &[
                "metrics",
                "--cpu",
                "skl",
                "--counts",
                &e,
                "--perfmon-dir",
                &d,
            ],
            1,
            "the counts file is empty",
        ),
        (
            &[
                "metrics",
                "--cpu",
                "skl",
                "--counts",
                &e,
                "--perfmon-dir",
                "/nonexistent-perfmon",
            ],
            1,
            "https://github.com/intel/perfmon",
        ),
        (
            &["metrics", "--cpu", "skl", "--counts", &e, "--const", "X"],
            2,
            "expected NAME=VALUE",
        ),
        (
            &["metrics", "--cpu", "skl", "--counts", &e, "--smt", "maybe"],
            2,
            "maybe",
        ),
    ];
    for (args, code, text) in cases {
        let mut cmd = Command::new(common::hwprof_bin());
        cmd.args(args).env_remove("HWPROF_PERFMON_DIR");
        let run = common::run_cmd(&mut cmd, common::TIMEOUT);
        assert_eq!(run.code(), code, "{}", run.dump());
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.dump());
        assert!(run.stderr.contains(text), "{}", run.dump());
    }
    let _ = std::fs::remove_file(&empty);
    // A device is refused before anything is read from it (a private /dev/zero: it
    // would never end), and so is a directory.
    let dev_dir = common::scratch_path("metrics-dev");
    std::fs::create_dir_all(&dev_dir).expect("mkdir");
    let zero = dev_dir.join("zero");
    let made = common::mknod_char(&zero, 1, 5);
    let mut inputs = vec![(dev_dir.clone(), "is a directory")];
    if made {
        inputs.push((zero.clone(), "is a device"));
    } else {
        skip(
            Why::Setup,
            "mknod failed (not root?): the device case is not checked",
        );
    }
    for (input, text) in inputs {
        let i = input.display().to_string();
        let run = hwprof(&[
            "metrics",
            "--cpu",
            "skl",
            "--perfmon-dir",
            &d,
            "--counts",
            &i,
        ]);
        assert_eq!(run.code(), 2, "{}", run.dump());
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.dump());
        assert!(run.stderr.contains(text), "{}", run.dump());
    }
    let _ = std::fs::remove_dir_all(&dev_dir);
}

/// On a machine without a hardware PMU, `stat --topdown` says in one line that TopDown
/// needs one and how to get the metrics anyway, and exits 1 without running anything.
#[test]
fn stat_topdown_without_a_hardware_pmu_is_one_clear_line() {
    if !common::require_no_hardware_pmu("stat --topdown") {
        return;
    }
    let marker = common::scratch_path("topdown-ran");
    let m = marker.display().to_string();
    for level in ["1", "2"] {
        let run = hwprof(&["stat", "--topdown", "--level", level, "--", "touch", &m]);
        assert_eq!(run.code(), 1, "{}", run.dump());
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.dump());
        assert!(
            run.stderr.contains("TopDown needs a hardware PMU")
                && run
                    .stderr
                    .contains("hwprof metrics --cpu MODEL --counts FILE"),
            "{}",
            run.dump()
        );
        assert!(!marker.exists(), "the command was not run");
        assert!(run.stdout.is_empty(), "{}", run.dump());
    }
    // Usage errors stay usage errors (exit 2).
    for args in [
        &["stat", "--topdown", "-e", "cycles", "--", "true"][..],
        &["stat", "--level", "2", "--", "true"],
        &["stat", "--topdown", "--level", "3", "--", "true"],
        &["stat", "--topdown", "-x,", "--", "true"],
        &["stat", "--topdown", "-a", "--", "true"],
    ] {
        let run = hwprof(args);
        assert_eq!(run.code(), 2, "{}", run.dump());
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.dump());
    }
}
