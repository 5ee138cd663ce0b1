//! `hwprof metrics --cpu adl`: Alder Lake TopDown levels 1 and 2 of both core types,
//! from the formulas compiled into the installed perf (`PERF_CPUID=GenuineIntel-6-97-0
//! perf list --details`). For pseudo-random count sets (SMT on and off, some count names
//! in another case), hwprof's values agree to 0.01 points with a Python evaluation of
//! perf's own expression text: the script below reads the listing itself, turns perf's
//! syntax into Python (escaped names unescaped, `#SMT_on`, metric names evaluated
//! recursively) and `eval`s it, so the reference is not hwprof's parser. The set of
//! metrics, their levels and parents are compared too.

mod common;
mod metrics_ref;

use std::collections::BTreeMap;
use std::process::Command;

use common::{Why, hwprof, run_cmd, skip};
use metrics_ref::{by_name, compare_tree, python, python3, row};
use serde_json::Value;

const CPUID: &str = "GenuineIntel-6-97-0";

/// Reads the listing (argv[1]), writes count sets and prints, per set, one JSON line:
/// {"counts": FILE, "smt": "on"|"off", "want": {unit: {name: [level, parent, value]}}}.
const REFERENCE_PY: &str = r##"
import json, random, re, sys
listing, outdir, nsets = sys.argv[1], sys.argv[2], int(sys.argv[3])
units = [u if u else None for u in sys.argv[4].split(",")]
text = open(listing).read()
text = text[text.index("Metric Groups:"):]
metrics = {}  # (name, unit) -> {"expr", "groups"}
group = None
cur = None
for line in text.split("\n")[1:]:
    if not line.strip():
        continue
    if not line.startswith(" "):
        group = line.strip().rstrip(":")
        continue
    if not line.startswith("   "):
        cur = {"name": line.strip(), "blocks": [], "group": group}
        entries = metrics.setdefault("_entries", [])
        entries.append(cur)
        continue
    cur["blocks"].append(line.strip())
by = {}
for e in metrics["_entries"]:
    blocks = [b[1:-1] for b in e["blocks"]]
    if not blocks:
        continue
    expr = blocks[-1]
    desc = blocks[0] if len(blocks) > 1 else ""
    m = re.search(r"Unit: (\S+)\s*$", desc)
    unit = m.group(1) if m else None
    d = by.setdefault((e["name"], unit), {"expr": expr, "groups": set()})
    d["groups"].add(e["group"])

TOKEN = re.compile(r"(#\w+|(?:\\.|[A-Za-z_])(?:\\.|[\w.:@?])*)")
def to_python(expr):
    def sub(m):
        t = m.group(1)
        if t in ("if", "else", "min", "max"):
            return t
        if t.lower() == "#smt_on":
            return "SMT"
        if t.lower() == "#core_wide":
            return "0"
        return "V(%r)" % re.sub(r"\\(.)", r"\1", t)
    return TOKEN.sub(sub, expr)

def lookup(unit, name):
    return by.get((name, unit)) or by.get((name, None))

def evaluate(unit, name, counts, smt, depth=0):
    assert depth < 50, "reference cycle at " + name
    d = lookup(unit, name)
    def V(n):
        if lookup(unit, n) is not None:
            return evaluate(unit, n, counts, smt, depth + 1)
        return counts[n]
    return eval(to_python(d["expr"]), {"V": V, "SMT": smt, "min": min, "max": max})

def events(unit, name, out, depth=0):
    d = lookup(unit, name)
    for t in TOKEN.findall(d["expr"]):
        if t in ("if", "else", "min", "max") or t.lower() in ("#smt_on", "#core_wide"):
            continue
        n = re.sub(r"\\(.)", r"\1", t)
        if lookup(unit, n) is not None:
            events(unit, n, out, depth + 1)
        else:
            out.add(n)

def level(d):
    ls = [int(g[8:]) for g in d["groups"] if re.fullmatch(r"TopdownL\d+", g)]
    return min(ls) if ls else None

tree = {}
for unit in units:
    names = {n for (n, u), d in by.items() if u == unit and level(d) in (1, 2)}
    tree[unit] = {}
    for n in names:
        d = by[(n, unit)]
        parents = [g[:-6] for g in d["groups"] if g.endswith("_group")
                   and g[:-6] != n and (g[:-6], unit) in by and level(by[(g[:-6], unit)])]
        tree[unit][n] = (level(d), parents[0] if parents else None)

rng = random.Random(15)
for k in range(nsets):
    smt = k % 2 == 0
    need = set()
    for unit in tree:
        for n in tree[unit]:
            events(unit, n, need)
    counts = {e: float(rng.randint(1000, 10**9)) for e in sorted(need)}
    path = "%s/counts%d.json" % (outdir, k)
    with open(path, "w") as f:
        for e, v in counts.items():
            key = e.lower() if rng.random() < 0.3 else e
            # perf's `cpu@ev,cmask=1@` as perf stat names it: `cpu/ev,cmask=0x1/`.
            m = re.fullmatch(r"(\w+)@(.*)@", e)
            if m and rng.random() < 0.5:
                terms = [re.sub(r"=(\d+)$", lambda d: "=%#x" % int(d.group(1)), t) for t in m.group(2).split(",")]
                key = "%s/%s/" % (m.group(1), ",".join(terms))
            f.write(json.dumps({"event": key, "value": v, "scaled": v, "supported": True}) + "\n")
    want = {}
    for unit in tree:
        want[unit or "none"] = {}
        for n, (lv, parent) in tree[unit].items():
            try:
                v = evaluate(unit, n, counts, 1 if smt else 0)
            except ZeroDivisionError:
                v = None
            want[unit or "none"][n] = [lv, parent, v]
    print(json.dumps({"counts": path, "smt": "on" if smt else "off", "want": want}))
"##;

fn perf_listing() -> Option<String> {
    perf_listing_of(CPUID, "Unit: cpu_atom", "Alder Lake")
}

/// `PERF_CPUID=cpuid perf list --details`, when it has `mark` (else a skip).
fn perf_listing_of(cpuid: &str, mark: &str, what: &str) -> Option<String> {
    if !common::perf_available() {
        skip(
            Why::Setup,
            format!("perf is not installed ({what}'s formulas are read from its tables)"),
        );
        return None;
    }
    let out = Command::new("perf")
        .args(["list", "--details"])
        .env("PERF_CPUID", cpuid)
        .env("PERF_PAGER", "cat")
        .env("COLUMNS", "100000")
        .output()
        .expect("run perf list");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !text.contains(mark) {
        skip(
            Why::Setup,
            format!("the installed perf has no {what} metric tables (perf 6.1 or later has them)"),
        );
        return None;
    }
    Some(text)
}

/// Within 0.01 points (of a fraction as a percentage).
fn within_a_hundredth(reference: f64, hwprof: f64) -> bool {
    (reference - hwprof).abs() * 100.0 <= 0.01
}

#[test]
fn adl_levels_1_and_2_of_both_core_types_match_perfs_expressions_evaluated_by_python() {
    let Some(listing) = perf_listing() else {
        return;
    };
    if !python3() {
        return;
    }
    let dir = common::scratch_path("metrics_adl");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let listing_path = dir.join("listing.txt");
    std::fs::write(&listing_path, &listing).expect("write listing");
    let sets = python(
        REFERENCE_PY,
        &[
            listing_path.as_ref(),
            dir.as_ref(),
            "12".as_ref(),
            "cpu_core,cpu_atom".as_ref(),
        ],
    );
    let mut compared = BTreeMap::<(String, u64), usize>::new();
    for line in sets.lines() {
        let set: Value = serde_json::from_str(line).expect("reference line");
        let counts = set["counts"].as_str().expect("counts");
        let smt = set["smt"].as_str().expect("smt");
        for (core_type, unit) in [("core", "cpu_core"), ("atom", "cpu_atom")] {
            let want = set["want"][unit].as_object().expect("unit");
            assert!(want.len() >= 8, "{unit}: {} level-1/2 metrics", want.len());
            let run = hwprof(&[
                "metrics",
                "--cpu",
                "adl",
                "--core-type",
                core_type,
                "--smt",
                smt,
                "--level",
                "2",
                "--json",
                "--counts",
                counts,
            ]);
            run.assert_ok();
            let got = by_name(&run.stdout, |v| {
                assert_eq!(v["core_type"], core_type, "{v}")
            });
            let case = format!("{unit} (smt {smt}, {counts})");
            for level in compare_tree(&case, want, &got, within_a_hundredth, |_, _| {}) {
                *compared.entry((unit.to_string(), level)).or_default() += 1;
            }
        }
    }
    // Both levels of both core types were compared, on every set.
    for unit in ["cpu_core", "cpu_atom"] {
        for level in [1, 2] {
            let n = compared.get(&(unit.to_string(), level)).copied();
            assert!(n.unwrap_or(0) >= 12 * 4, "{unit} level {level}: {n:?}");
        }
    }
    eprintln!("compared: {compared:?}");
}

#[test]
fn adl_both_core_types_by_default_and_clear_errors() {
    let Some(_) = perf_listing() else {
        return;
    };
    let dir = common::scratch_path("metrics_adl_errors");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let counts = dir.join("counts.json");
    std::fs::write(
        &counts,
        "{\"event\":\"TOPDOWN.SLOTS\",\"scaled\":1000.0}\n\
         {\"event\":\"topdown-retiring\",\"scaled\":250.0}\n\
         {\"event\":\"topdown-fe-bound\",\"scaled\":250.0}\n\
         {\"event\":\"topdown-be-bound\",\"scaled\":400.0}\n\
         {\"event\":\"topdown-bad-spec\",\"scaled\":100.0}\n\
         {\"event\":\"INT_MISC.UOP_DROPPING\",\"scaled\":10.0}\n\
         {\"event\":\"TOPDOWN_RETIRING.ALL\",\"scaled\":600.0}\n\
         {\"event\":\"CPU_CLK_UNHALTED.CORE\",\"scaled\":400.0}\n",
    )
    .expect("write counts");
    let c = counts.to_str().expect("utf-8 path");
    let run = hwprof(&["metrics", "--cpu", "adl", "--level", "1", "--counts", c]);
    run.assert_ok();
    let out = &run.stdout;
    let core = out.find("cpu_core (--core-type core):").expect(out);
    let atom = out.find("cpu_atom (--core-type atom):").expect(out);
    assert!(core < atom, "{out}");
    // perf's formulas: retiring 250/1000 on the core; 600 / (5 * 400) on the atom.
    let line = |from: usize, name: &str| row(&out[from..], name);
    assert!(line(core, "tma_retiring").contains("0.250"), "{out}");
    assert!(line(core, "tma_frontend_bound").contains("0.240"), "{out}");
    assert!(line(atom, "tma_retiring").contains("0.300"), "{out}");
    assert!(line(atom, "tma_frontend_bound").contains("missing events TOPDOWN_FE_BOUND.ALL"));

    // --core-type is for adl only: a usage error.
    let run = hwprof(&[
        "metrics",
        "--cpu",
        "skl",
        "--core-type",
        "core",
        "--counts",
        c,
    ]);
    assert_eq!(run.code(), 2, "{}", run.dump());
    assert!(run.stderr.contains("--core-type is for hybrid models"));

    // No perf on PATH: one line saying so, exit 1.
    let empty = dir.join("nobin");
    std::fs::create_dir_all(&empty).expect("dir");
    let mut cmd = Command::new(common::hwprof_bin());
    cmd.args(["metrics", "--cpu", "adl", "--counts", c])
        .env("PATH", &empty);
    let run = run_cmd(&mut cmd, std::time::Duration::from_secs(30));
    assert_eq!(run.code(), 1, "{}", run.dump());
    assert!(
        run.stderr.contains("perf is not installed"),
        "{}",
        run.dump()
    );
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.dump());

    // A perf without the tables (an old one): one line saying so, exit 1.
    let fake = dir.join("oldperf");
    std::fs::create_dir_all(&fake).expect("dir");
    let script = fake.join("perf");
    std::fs::write(
        &script,
        "#!/bin/sh\necho 'List of pre-defined events (to be used in -e):'\n",
    )
    .expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut cmd = Command::new(common::hwprof_bin());
    cmd.args(["metrics", "--cpu", "adl", "--counts", c])
        .env("PATH", &fake);
    let run = run_cmd(&mut cmd, std::time::Duration::from_secs(30));
    assert_eq!(run.code(), 1, "{}", run.dump());
    assert!(
        run.stderr.contains("has no Alder Lake metric tables"),
        "{}",
        run.dump()
    );
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.dump());
}

/// Skylake, Skylake-X, Ice Lake and Sapphire Rapids from the installed perf's tables:
/// what `hwprof metrics --cpu MODEL` uses when no `--perfmon-dir` is given and perf has
/// them. Levels 1 and 2, checked against perf's expression text evaluated by Python
/// (`#core_wide` is 0: counts of a command), with the `cpu@..@` events given in perf
/// stat's spelling (`cpu/ev,cmask=0x1,edge/`) half the time.
#[test]
fn intel_models_from_perfs_tables_match_perfs_expressions_evaluated_by_python() {
    if !python3() {
        return;
    }
    let dir = common::scratch_path("metrics_perf_intel");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    for (cpu, cpuid) in [
        ("skl", "GenuineIntel-6-5E-3"),
        ("skx", "GenuineIntel-6-55-4"),
        ("icl", "GenuineIntel-6-7E-5"),
        ("spr", "GenuineIntel-6-8F-4"),
    ] {
        let Some(listing) = perf_listing_of(cpuid, "TopdownL2:", cpu) else {
            return;
        };
        let listing_path = dir.join(format!("{cpu}.txt"));
        std::fs::write(&listing_path, &listing).expect("write listing");
        let sets = dir.join(cpu);
        std::fs::create_dir_all(&sets).expect("sets dir");
        let reference = python(
            REFERENCE_PY,
            &[
                listing_path.as_ref(),
                sets.as_ref(),
                "8".as_ref(),
                "".as_ref(),
            ],
        );
        let mut compared = [0usize; 3];
        for line in reference.lines() {
            let set: Value = serde_json::from_str(line).expect("reference line");
            let counts = set["counts"].as_str().expect("counts");
            let smt = set["smt"].as_str().expect("smt");
            let want = set["want"]["none"].as_object().expect("no unit");
            let mut cmd = Command::new(common::hwprof_bin());
            cmd.args([
                "metrics", "--cpu", cpu, "--smt", smt, "--level", "2", "--json", "--counts", counts,
            ])
            .env_remove("HWPROF_PERFMON_DIR");
            let run = run_cmd(&mut cmd, common::TIMEOUT);
            run.assert_ok();
            assert!(
                run.stderr.contains(&format!("PERF_CPUID={cpuid}")),
                "the source is said: {}",
                run.dump()
            );
            let got = by_name(&run.stdout, |v| assert_eq!(v["source"], "perf", "{v}"));
            assert_eq!(want.len(), 12, "{cpu}: 4 + 8 TopDown nodes");
            let case = format!("{cpu} (smt {smt}, {counts})");
            for level in compare_tree(&case, want, &got, within_a_hundredth, |_, _| {}) {
                compared[level as usize] += 1;
            }
        }
        assert!(
            compared[1] >= 8 * 3 && compared[2] >= 8 * 6,
            "{cpu}: {compared:?}"
        );
        common::report_line(&format!(
            "metrics {cpu} from perf's tables: {} level-1 and {} level-2 values agree with Python",
            compared[1], compared[2]
        ));
    }
}
