//! `hwprof metrics --cpu zen4|zen5`: AMD's pipeline-utilization metrics (levels 1 and 2)
//! from the kernel's `amdzen4/pipeline.json` and `amdzen5/pipeline.json`
//! (`../shared/fixtures/amd/`). For many count sets, hwprof's values agree with a
//! Python evaluation of perf's `MetricExpr` text: the script reads the JSON itself,
//! turns perf's syntax into Python (`d_ratio` as perf defines it, escaped
//! `cpu@event\,cmask\=0x6@` terms, other metrics' names evaluated recursively) and
//! `eval`s it, so the reference is not hwprof's parser. Counts are given as `perf stat
//! -x,` lines (the cmask event as perf stat names it, `cpu/event,cmask=0x6/`), `hwprof
//! stat -j` lines and `perf stat -j` lines.

mod common;
mod metrics_ref;

use std::path::{Path, PathBuf};

use common::hwprof;
use metrics_ref::{by_name, compare_tree, metrics_of_counts, python, python3, row};
use serde_json::Value;

/// argv: pipeline.json, output folder, number of sets. Prints one JSON line per set:
/// {"counts": FILE, "want": {name: [level, parent, value or null]}}.
const REFERENCE_PY: &str = r##"
import json, random, re, sys
path, outdir, nsets = sys.argv[1], sys.argv[2], int(sys.argv[3])
metrics = {m["MetricName"]: m for m in json.load(open(path))}

TOKEN = re.compile(r"((?:\\.|[A-Za-z_])(?:\\.|[\w.:@])*)")
def unescape(t):
    return re.sub(r"\\(.)", r"\1", t)
def to_python(expr):
    def sub(m):
        t = m.group(1)
        if t in ("if", "else", "min", "max", "d_ratio"):
            return t
        return "V(%r)" % unescape(t)
    return TOKEN.sub(sub, expr)

def d_ratio(a, b):
    # tools/perf/util/expr.y: 0 when the denominator is 0.
    return 0.0 if b == 0 else a / b

def evaluate(name, counts, depth=0):
    assert depth < 20, "reference cycle at " + name
    def V(n):
        if n in metrics:
            return evaluate(n, counts, depth + 1)
        return counts[n]
    return eval(to_python(metrics[name]["MetricExpr"]),
                {"V": V, "d_ratio": d_ratio, "min": min, "max": max})

def events(name, out):
    for t in TOKEN.findall(metrics[name]["MetricExpr"]):
        n = unescape(t)
        if n in ("if", "else", "min", "max", "d_ratio"):
            continue
        if n in metrics:
            events(n, out)
        else:
            out.add(n)

def groups(m):
    return [g for g in m.get("MetricGroup", "").split(";") if g]
def level(m):
    ls = [int(g[9:]) for g in groups(m) if re.fullmatch(r"PipelineL\d+", g)]
    return min(ls) if ls else None

tree = {}
for n, m in metrics.items():
    lv = level(m)
    if lv not in (1, 2):
        continue
    parents = [g[:-6] for g in groups(m) if g.endswith("_group") and g[:-6] in metrics]
    tree[n] = (lv, parents[0] if parents else None)

need = set()
for n in tree:
    events(n, need)
rng = random.Random(20)
modes = ["random", "random", "zeros", "allzero", "missing", "tiny"]
fmts = ["csv", "hwprof", "perfjson"]
for k in range(nsets):
    mode, fmt = modes[k % len(modes)], fmts[k % len(fmts)]
    counts = {}
    for e in sorted(need):
        v = float(rng.randint(1000, 10**10))
        if mode == "zeros" and rng.random() < 0.3: v = 0.0
        if mode == "allzero": v = 0.0
        if mode == "tiny": v = float(rng.randint(0, 3))
        if mode == "missing" and rng.random() < 0.15: continue
        counts[e] = v
    path = "%s/counts%d.%s" % (outdir, k, "csv" if fmt == "csv" else "json")
    with open(path, "w") as f:
        for e, v in counts.items():
            # perf stat names `cpu@ev,cmask=0x6@` as `cpu/ev,cmask=0x6/` (or cmask=6).
            m = re.fullmatch(r"(\w+)@(.*)@", e)
            key = e
            if m:
                terms = m.group(2)
                if rng.random() < 0.5:
                    terms = re.sub(r"=0x([0-9a-fA-F]+)", lambda d: "=%d" % int(d.group(1), 16), terms)
                key = "%s/%s/" % (m.group(1), terms)
            if fmt == "csv":
                f.write("%d,,%s,1000000,100.00,,\n" % (v, key))
            elif fmt == "hwprof":
                f.write(json.dumps({"event": key, "value": int(v) // 2, "scaled": v, "supported": True}) + "\n")
            else:
                f.write(json.dumps({"counter-value": "%f" % v, "unit": "", "event": key, "event-runtime": 1000, "pcnt-running": 100.0}) + "\n")
    want = {}
    for n, (lv, parent) in tree.items():
        try:
            v = evaluate(n, counts)
        except KeyError:
            v = None
        want[n] = [lv, parent, v]
    print(json.dumps({"counts": path, "mode": mode, "want": want}))
"##;

fn amd_dir() -> Option<PathBuf> {
    let p = hwprof_testkit::fixture_path("amd/amdzen4/pipeline.json")?;
    Some(p.parent()?.parent()?.to_path_buf())
}

/// Runs the reference and hwprof on `nsets` count sets of `model`; returns how many
/// values of each level were compared.
fn compare(dir: &Path, model: &str, nsets: usize) -> [usize; 3] {
    let scratch = common::scratch_path(&format!("metrics_amd_{model}"));
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    let sets = python(
        REFERENCE_PY,
        &[
            dir.join(format!("amd{model}/pipeline.json")).as_ref(),
            scratch.as_ref(),
            nsets.to_string().as_ref(),
        ],
    );
    let d = dir.display().to_string();
    let mut compared = [0usize; 3];
    for line in sets.lines() {
        let set: Value = serde_json::from_str(line).expect("reference line");
        let counts = set["counts"].as_str().expect("counts");
        let mode = set["mode"].as_str().expect("mode");
        let want = set["want"].as_object().expect("want");
        assert_eq!(want.len(), 13, "{model}: 5 level-1 and 8 level-2 metrics");
        let run = hwprof(&[
            "metrics",
            "--cpu",
            model,
            "--perfmon-dir",
            &d,
            "--level",
            "2",
            "--json",
            "--counts",
            counts,
        ]);
        let case = format!("{model} {mode} {counts}");
        let got = by_name(&run.stdout, |v| {
            assert_eq!(v["source"], "perfmon-dir", "{v}")
        });
        let levels = compare_tree(
            &case,
            want,
            &got,
            |a, b| (a - b).abs() <= 1e-9 * a.abs().max(1.0),
            |name, g| {
                let missing = g["missing_events"].as_array().map_or(0, Vec::len);
                assert!(missing > 0, "{case} {name}: names what is missing: {g}");
            },
        );
        for l in &levels {
            compared[*l as usize] += 1;
        }
        // Exit 0 when a metric has a value, else 1 with the reasons listed.
        assert_eq!(
            run.code(),
            if levels.is_empty() { 1 } else { 0 },
            "{}",
            run.dump()
        );
        assert!(
            run.stderr
                .contains(&format!("amd{model}/pipeline.json (--perfmon-dir)")),
            "the source is said: {}",
            run.dump()
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
    compared
}

#[test]
fn zen4_and_zen5_levels_1_and_2_match_perfs_expressions_evaluated_by_python() {
    let Some(dir) = amd_dir() else { return };
    if !python3() {
        return;
    }
    for model in ["zen4", "zen5"] {
        let compared = compare(&dir, model, 30);
        common::report_line(&format!(
            "metrics {model}: {} level-1 and {} level-2 values agree with Python's evaluation of perf's MetricExpr",
            compared[1], compared[2]
        ));
        // 25 of the 30 sets have every event; each has 5 level-1 and 8 level-2 values.
        assert!(
            compared[1] >= 25 * 5 && compared[2] >= 25 * 8,
            "{model}: {compared:?}"
        );
    }
}

/// The default output: the tree of levels 1 and 2 with perf's names, fractions of the
/// dispatch slots; a value the counts lack names its events.
#[test]
fn zen4_default_output_is_the_pipeline_tree() {
    let Some(dir) = amd_dir() else { return };
    let d = dir.display().to_string();
    let run = metrics_of_counts(
        "metrics-zen4.csv",
        "1000000,,ls_not_halted_cyc,1,100.00,,\n\
         1200000,,de_no_dispatch_per_slot.no_ops_from_frontend,1,100.00,,\n\
         600000,,cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6/,1,100.00,,\n\
         2000000,,de_no_dispatch_per_slot.backend_stalls,1,100.00,,\n\
         300000,,de_no_dispatch_per_slot.smt_contention,1,100.00,,\n\
         2700000,,de_src_op_disp.all,1,100.00,,\n\
         2400000,,ex_ret_ops,1,100.00,,\n",
        &["--cpu", "zen4", "--perfmon-dir", &d],
    );
    run.assert_ok();
    // 6 slots a cycle: 6,000,000 slots.
    assert!(row(&run.stdout, "frontend_bound").starts_with("frontend_bound"));
    assert!(
        row(&run.stdout, "frontend_bound").ends_with("0.200"),
        "{}",
        run.stdout
    );
    assert!(row(&run.stdout, "frontend_bound_latency").starts_with("  frontend_bound_latency"));
    assert!(
        row(&run.stdout, "frontend_bound_latency").ends_with("0.600"),
        "{}",
        run.stdout
    );
    assert!(
        row(&run.stdout, "retiring").ends_with("0.400"),
        "{}",
        run.stdout
    );
    assert!(
        row(&run.stdout, "bad_speculation").ends_with("0.050"),
        "{}",
        run.stdout
    );
    assert!(
        row(&run.stdout, "backend_bound_memory")
            .contains("missing events ex_no_retire.load_not_complete"),
        "{}",
        run.stdout
    );
}
