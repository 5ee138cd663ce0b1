//! `hwprof encode` against Intel's published event tables: every core event of the
//! perfmon fixtures (SKL, SKX, ICL, SPR), loaded with `--event-file`, must encode to
//! EventCode | UMask | EdgeDetect | AnyThread | Invert | CounterMask in `config` and to
//! MSRValue in `config1` (ldlat, offcore_rsp, frontend). The built-in tables must agree
//! with the same files, and modifiers, groups, hybrid and AMD encodings are checked too.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_hwprof");

/// Fixture directory and `--cpu` model of each perfmon set.
const SETS: [(&str, &str); 4] = [
    ("SKL", "skylake"),
    ("SKX", "skylakex"),
    ("ICL", "icelake"),
    ("SPR", "sapphirerapids"),
];

/// Stay well under the kernel's 128 KiB limit on one argument.
const MAX_ARG: usize = 100_000;

#[track_caller]
fn perfmon_root() -> Option<PathBuf> {
    hwprof_testkit::fixture_path("perfmon")
}

/// The `*_core.json` files of one set.
fn core_files(root: &Path, set: &str) -> Vec<PathBuf> {
    let dir = root.join(set).join("events");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with("_core.json"))
        })
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no *_core.json in {}", dir.display());
    v
}

/// Runs `hwprof encode ARGS --json` and returns the array it prints.
fn encode(args: &[&str]) -> Vec<Value> {
    let out = Command::new(BIN)
        .arg("encode")
        .args(args)
        .arg("--json")
        .env("LC_ALL", "C")
        .output()
        .unwrap_or_else(|e| panic!("cannot run hwprof: {e}"));
    let short: Vec<String> = args
        .iter()
        .map(|a| {
            if a.len() > 200 {
                format!("{}...", &a[..200])
            } else {
                a.to_string()
            }
        })
        .collect();
    assert!(
        out.status.success(),
        "hwprof encode {} failed ({}): {}",
        short.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "hwprof encode {} printed no JSON ({e}): {}",
            short.join(" "),
            String::from_utf8_lossy(&out.stdout)
        )
    });
    match v {
        Value::Array(a) => a,
        other => panic!("hwprof encode --json printed {other}, not an array"),
    }
}

fn attr_u64(ev: &Value, key: &str) -> u64 {
    ev["attr"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("attr.{key} is not an integer in {ev}"))
}

fn attr_bool(ev: &Value, key: &str) -> bool {
    ev["attr"][key]
        .as_bool()
        .unwrap_or_else(|| panic!("attr.{key} is not a bool in {ev}"))
}

/// A perfmon number field: `0x1F`, `31`, or the first of `0xB7, 0xBB`; absent is 0.
fn num(ev: &Value, key: &str) -> u64 {
    let Some(s) = ev.get(key).and_then(Value::as_str) else {
        return 0;
    };
    let first = s.split(',').next().unwrap_or("").trim();
    if first.is_empty() {
        return 0;
    }
    let r = match first
        .strip_prefix("0x")
        .or_else(|| first.strip_prefix("0X"))
    {
        Some(h) => u64::from_str_radix(h, 16),
        None => first.parse(),
    };
    r.unwrap_or_else(|_| panic!("{key} = {s:?} is not a number in {ev}"))
}

/// What an event must encode to, computed from the perfmon fields alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Expected {
    config: u64,
    config1: u64,
}

fn expected(ev: &Value) -> Expected {
    let config = num(ev, "EventCode")
        | num(ev, "UMask") << 8
        | num(ev, "EdgeDetect") << 18
        | num(ev, "AnyThread") << 21
        | num(ev, "Invert") << 23
        | num(ev, "CounterMask") << 24;
    // MSRIndex may list two MSRs ("0x1a6,0x1a7"): the first decides.
    let config1 = match num(ev, "MSRIndex") {
        0x3f6 | 0x1a6 | 0x1a7 | 0x3f7 => num(ev, "MSRValue"),
        _ => 0,
    };
    Expected { config, config1 }
}

/// Events of a perfmon file as (name, expected encoding of the first event of that name).
fn load(path: &Path) -> Vec<(String, Expected)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let events = match &doc {
        Value::Array(a) => a,
        v => v["Events"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: no Events array", path.display())),
    };
    let mut first: HashMap<String, Expected> = HashMap::new();
    let mut out = Vec::new();
    for ev in events {
        let Some(name) = ev.get("EventName").and_then(Value::as_str) else {
            continue;
        };
        let exp = *first
            .entry(name.to_ascii_lowercase())
            .or_insert_with(|| expected(ev));
        out.push((name.to_string(), exp));
    }
    out
}

/// Splits names into comma-joined `-e` arguments of at most [`MAX_ARG`] bytes.
fn batches<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        match out.last_mut() {
            Some(b) if b.len() + 1 + n.len() <= MAX_ARG => {
                b.push(',');
                b.push_str(n);
            }
            _ => out.push(n.to_string()),
        }
    }
    out
}

/// Encodes `events` for `model` (with `file` as `--event-file` when given) and compares
/// every result to its expected encoding; returns how many matched.
fn check_encodings(
    label: &str,
    model: &str,
    file: Option<&Path>,
    events: &[(String, Expected)],
) -> usize {
    let mut results = Vec::new();
    for batch in batches(events.iter().map(|(n, _)| n.as_str())) {
        let mut args = vec!["--cpu", model];
        if let Some(f) = file {
            args.extend(["--event-file", f.to_str().expect("fixture path is UTF-8")]);
        }
        args.extend(["-e", &batch]);
        results.extend(encode(&args));
    }
    assert_eq!(
        results.len(),
        events.len(),
        "{label}: {} events asked, {} encoded",
        events.len(),
        results.len()
    );
    let mut bad = Vec::new();
    for ((name, exp), got) in events.iter().zip(&results) {
        let got_name = got["name"].as_str().unwrap_or("");
        let (ty, config, config1) = (
            attr_u64(got, "type"),
            attr_u64(got, "config"),
            attr_u64(got, "config1"),
        );
        let (config2, config3) = (attr_u64(got, "config2"), attr_u64(got, "config3"));
        let ok = got_name.eq_ignore_ascii_case(name)
            && got["pmu"] == "cpu"
            && ty == 4
            && config == exp.config
            && config1 == exp.config1
            && config2 == 0
            && config3 == 0;
        if !ok {
            bad.push(format!(
                "{name}: expected type 4 config {:#x} config1 {:#x}, got name {got_name:?} pmu {} type {ty} config {config:#x} config1 {config1:#x} config2 {config2:#x} config3 {config3:#x}",
                exp.config, exp.config1, got["pmu"]
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{label}: {} of {} events encode wrongly:\n{}",
        bad.len(),
        events.len(),
        bad[..bad.len().min(25)].join("\n")
    );
    events.len()
}

fn every_core_event_of(set: &str, model: &str) {
    let Some(root) = perfmon_root() else { return };
    for file in core_files(&root, set) {
        let events = load(&file);
        assert!(!events.is_empty(), "{}: no events", file.display());
        let n = check_encodings(set, model, Some(&file), &events);
        eprintln!(
            "{set}: {n} events match ({})",
            file.file_name().and_then(|f| f.to_str()).unwrap_or("?")
        );
    }
}

#[test]
fn every_skl_core_event_encodes_as_perfmon_says() {
    every_core_event_of("SKL", "skylake");
}

#[test]
fn every_skx_core_event_encodes_as_perfmon_says() {
    every_core_event_of("SKX", "skylakex");
}

#[test]
fn every_icl_core_event_encodes_as_perfmon_says() {
    every_core_event_of("ICL", "icelake");
}

#[test]
fn every_spr_core_event_encodes_as_perfmon_says() {
    every_core_event_of("SPR", "sapphirerapids");
}

/// Vendor event names of the built-in table of `model`, from `hwprof list --json`.
fn builtin_vendor_names(model: &str) -> Vec<String> {
    let out = Command::new(BIN)
        .args(["list", "--cpu", model, "--json"])
        .output()
        .expect("running hwprof list");
    assert!(
        out.status.success(),
        "hwprof list --cpu {model} --json failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("hwprof list --cpu {model} --json: not JSON ({e})"));
    let list = v
        .as_array()
        .unwrap_or_else(|| panic!("hwprof list --json printed no array"));
    list.iter()
        .filter(|e| e["kind"] == "vendor")
        .filter_map(|e| e["name"].as_str())
        // Accept `cpu/NAME/` as well as `NAME`.
        .map(|n| {
            n.trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or(n)
                .to_string()
        })
        .collect()
}

#[test]
fn builtin_tables_agree_with_perfmon() {
    let Some(root) = perfmon_root() else { return };
    for (set, model) in SETS {
        let mut file_events: HashMap<String, (String, Expected)> = HashMap::new();
        for f in core_files(&root, set) {
            for (name, exp) in load(&f) {
                file_events
                    .entry(name.to_ascii_lowercase())
                    .or_insert((name, exp));
            }
        }
        let mut common: Vec<(String, Expected)> = builtin_vendor_names(model)
            .iter()
            .filter_map(|n| file_events.get(&n.to_ascii_lowercase()).cloned())
            .collect();
        common.sort_by(|a, b| a.0.cmp(&b.0));
        common.dedup_by(|a, b| a.0 == b.0);
        for must in [
            "MEM_LOAD_RETIRED.L3_MISS",
            "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_64",
            "BR_MISP_RETIRED.ALL_BRANCHES",
            "INST_RETIRED.ANY",
        ] {
            assert!(
                common.iter().any(|(n, _)| n == must),
                "{model}: built-in table lacks {must} (or `hwprof list` does not show it)"
            );
        }
        let n = check_encodings(&format!("built-in {model}"), model, None, &common);
        eprintln!("{set}: {n} built-in {model} events match the perfmon file");
    }
}

fn one(args: &[&str]) -> Value {
    let mut v = encode(args);
    assert_eq!(
        v.len(),
        1,
        "hwprof encode {} gave {} events: {v:?}",
        args.join(" "),
        v.len()
    );
    v.remove(0)
}

#[test]
fn well_known_names_encode_without_fixtures() {
    for model in ["skylake", "skylakex", "icelake", "sapphirerapids"] {
        let ev = one(&["--cpu", model, "-e", "MEM_LOAD_RETIRED.L3_MISS"]);
        assert_eq!(
            (attr_u64(&ev, "type"), attr_u64(&ev, "config")),
            (4, 0x20d1),
            "{model}: {ev}"
        );
        // Names match case-insensitively.
        let lower = one(&["--cpu", model, "-e", "mem_load_retired.l3_miss"]);
        assert_eq!(attr_u64(&lower, "config"), 0x20d1, "{model}: {lower}");
    }
    // The same event written as terms and as a raw code.
    let terms = one(&["--cpu", "skylake", "-e", "cpu/event=0xd1,umask=0x20/"]);
    assert_eq!(
        (attr_u64(&terms, "type"), attr_u64(&terms, "config")),
        (4, 0x20d1),
        "{terms}"
    );
    let raw = one(&["--cpu", "skylake", "-e", "r20d1"]);
    assert_eq!(
        (attr_u64(&raw, "type"), attr_u64(&raw, "config")),
        (4, 0x20d1),
        "{raw}"
    );
    let flags = one(&[
        "--cpu",
        "skylake",
        "-e",
        "cpu/event=0xd1,umask=0x20,cmask=3,inv,edge/",
    ]);
    assert_eq!(
        attr_u64(&flags, "config"),
        0x20d1 | 3 << 24 | 1 << 23 | 1 << 18,
        "{flags}"
    );
}

#[test]
fn load_latency_event_with_pp_on_icelake() {
    let ev = one(&[
        "--cpu",
        "icelake",
        "-e",
        "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_64:pp",
    ]);
    assert_eq!(attr_u64(&ev, "type"), 4, "{ev}");
    assert_eq!(attr_u64(&ev, "config"), 0x1cd, "{ev}");
    assert_eq!(attr_u64(&ev, "config1"), 64, "ldlat goes in config1: {ev}");
    assert_eq!(attr_u64(&ev, "precise_ip"), 2, "{ev}");
}

#[test]
fn amd_event_bits_above_32() {
    // amd core format: event is config:0-7,32-35, umask config:8-15.
    let ev = one(&["--cpu", "zen4", "-e", "cpu/event=0x1c0,umask=0x3/"]);
    assert_eq!(attr_u64(&ev, "type"), 4, "{ev}");
    assert_eq!(attr_u64(&ev, "config"), 0xc0 | 0x3 << 8 | 1 << 32, "{ev}");
}

#[test]
fn hybrid_cycles_expand_to_both_core_pmus() {
    let v = encode(&["--cpu", "alderlake", "-e", "cycles"]);
    assert_eq!(
        v.len(),
        2,
        "cycles on alderlake should be cpu_core and cpu_atom: {v:?}"
    );
    let pmus: Vec<&str> = v.iter().map(|e| e["pmu"].as_str().unwrap_or("")).collect();
    assert_eq!(pmus, ["cpu_core", "cpu_atom"], "{v:?}");
    for (i, (e, pmu_type)) in v.iter().zip([4u64, 7]).enumerate() {
        assert_eq!(attr_u64(e, "type"), 0, "generic hardware type: {e}");
        assert_eq!(
            attr_u64(e, "config"),
            pmu_type << 32,
            "PMU type in config bits 32-63: {e}"
        );
        assert_eq!(e["leader"].as_u64(), Some(i as u64), "not a group: {e}");
    }
}

#[test]
fn modifiers_and_groups() {
    let u = one(&["--cpu", "skylake", "-e", "cycles:u"]);
    assert!(
        attr_bool(&u, "exclude_kernel")
            && attr_bool(&u, "exclude_hv")
            && !attr_bool(&u, "exclude_user"),
        "cycles:u: {u}"
    );
    let k = one(&["--cpu", "skylake", "-e", "cycles:k"]);
    assert!(
        attr_bool(&k, "exclude_user")
            && attr_bool(&k, "exclude_hv")
            && !attr_bool(&k, "exclude_kernel"),
        "cycles:k: {k}"
    );
    let p = one(&["--cpu", "skylake", "-e", "cycles:ppp"]);
    assert_eq!(attr_u64(&p, "precise_ip"), 3, "cycles:ppp: {p}");
    let plain = one(&["--cpu", "skylake", "-e", "cycles"]);
    assert!(
        !attr_bool(&plain, "exclude_user") && !attr_bool(&plain, "exclude_kernel"),
        "cycles: {plain}"
    );
    assert_eq!(attr_u64(&plain, "precise_ip"), 0, "cycles: {plain}");

    let g = encode(&["--cpu", "skylake", "-e", "{cycles,instructions}"]);
    assert_eq!(g.len(), 2, "{g:?}");
    assert_eq!(
        [g[0]["leader"].as_u64(), g[1]["leader"].as_u64()],
        [Some(0), Some(0)],
        "{g:?}"
    );
    assert_eq!(
        [attr_u64(&g[0], "config"), attr_u64(&g[1], "config")],
        [0, 1],
        "{g:?}"
    );
    assert_eq!(
        [attr_bool(&g[0], "disabled"), attr_bool(&g[1], "disabled")],
        [true, false],
        "only the leader starts disabled: {g:?}"
    );
}

#[test]
fn json_has_every_attr_field_of_the_spec() {
    let ints = [
        "type",
        "config",
        "config1",
        "config2",
        "config3",
        "sample_period",
        "sample_type",
        "read_format",
        "precise_ip",
        "bp_type",
        "branch_sample_type",
    ];
    let bools = [
        "freq",
        "disabled",
        "inherit",
        "pinned",
        "exclude_user",
        "exclude_kernel",
        "exclude_hv",
        "exclude_idle",
        "exclude_host",
        "exclude_guest",
        "enable_on_exec",
    ];
    let ev = one(&["--cpu", "skylake", "-e", "MEM_LOAD_RETIRED.L3_MISS"]);
    assert_eq!(ev["name"], "MEM_LOAD_RETIRED.L3_MISS", "{ev}");
    assert_eq!(ev["pmu"], "cpu", "{ev}");
    assert_eq!(ev["leader"].as_u64(), Some(0), "{ev}");
    for k in ints {
        assert!(
            ev["attr"][k].is_u64(),
            "attr.{k} missing or not an integer: {ev}"
        );
    }
    for k in bools {
        assert!(
            ev["attr"][k].is_boolean(),
            "attr.{k} missing or not a bool: {ev}"
        );
    }
}
