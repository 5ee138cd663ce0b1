//! `hwprof list`: generic, hw-cache, tracepoint, sysfs PMU and vendor events, with what
//! this machine supports.

use std::path::Path;
use std::process::Command;

use hwprof_testkit::{Why, skip};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_hwprof");

fn list(args: &[&str]) -> String {
    let out = Command::new(BIN)
        .arg("list")
        .args(args)
        .env_remove("HWPROF_TRACEFS")
        .env("LC_ALL", "C")
        .output()
        .unwrap_or_else(|e| panic!("cannot run hwprof: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "hwprof list {} failed ({}): {stderr}",
        args.join(" "),
        out.status
    );
    assert!(
        !stdout.contains("panicked") && !stderr.contains("panicked"),
        "{stderr}"
    );
    stdout
}

fn list_json(args: &[&str]) -> Vec<Value> {
    let mut a = args.to_vec();
    a.push("--json");
    let text = list(&a);
    let v: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("hwprof list {} is not JSON ({e}): {text}", a.join(" ")));
    match v {
        Value::Array(a) => a,
        other => panic!("hwprof list --json printed {other}, not an array"),
    }
}

/// A tracepoint hwprof should list, if tracefs is mounted where hwprof looks.
fn tracefs_has_sched_switch() -> bool {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .any(|t| Path::new(t).join("events/sched/sched_switch/id").is_file())
}

/// Whether sysfs has `msr/tsc/`; when not, a SKIPPED line for the checks of it.
fn msr_tsc_present() -> bool {
    if Path::new("/sys/bus/event_source/devices/msr/events/tsc").exists() {
        return true;
    }
    // The msr PMU and its tsc event are x86's; every x86-64 CPU has a TSC.
    let why = if cfg!(target_arch = "x86_64") {
        Why::Setup
    } else {
        Why::OtherArch
    };
    skip(why, "no msr/tsc in sysfs, not checking msr/tsc/");
    false
}

/// Whether tracefs has `sched:sched_switch`; when not, a SKIPPED line for the checks
/// of it.
fn sched_switch_present() -> bool {
    if tracefs_has_sched_switch() {
        return true;
    }
    skip(
        Why::Setup,
        "tracefs not mounted, not checking sched:sched_switch",
    );
    false
}

fn has_cpu_pmu() -> bool {
    Path::new("/sys/bus/event_source/devices/cpu").exists()
}

#[test]
fn lists_generic_cache_pmu_and_tracepoint_events() {
    let out = list(&[]);
    for want in ["task-clock", "page-faults", "L1-dcache-load-misses"] {
        assert!(out.contains(want), "hwprof list lacks {want}");
    }
    // perf shows it as `cpu-cycles OR cycles   [Hardware event]`; a description that
    // merely mentions cycles does not count.
    let names_cycles = out.lines().any(|l| {
        l.contains("Hardware event")
            && l.split('[')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .any(|t| t == "cycles")
    });
    assert!(
        names_cycles,
        "hwprof list does not name the hardware event `cycles`"
    );
    if msr_tsc_present() {
        assert!(
            out.contains("msr/tsc/"),
            "hwprof list lacks msr/tsc/ although sysfs has it"
        );
    }
    if sched_switch_present() {
        assert!(
            out.contains("sched:sched_switch"),
            "hwprof list lacks sched:sched_switch although tracefs has it"
        );
    }
}

#[test]
fn pattern_filters_the_model_table() {
    let out = list(&["--cpu", "skylake", "MEM_LOAD"]);
    assert!(
        out.contains("MEM_LOAD_RETIRED.L3_MISS"),
        "hwprof list --cpu skylake MEM_LOAD lacks MEM_LOAD_RETIRED.L3_MISS:\n{out}"
    );
    assert!(
        !out.contains("task-clock"),
        "the pattern MEM_LOAD should filter out task-clock:\n{out}"
    );
}

/// The names an entry answers to: `name` (perf spells aliases `cpu-cycles OR cycles`)
/// and, if present, an `aliases` array.
fn names_of(e: &Value) -> Vec<&str> {
    let mut v: Vec<&str> = e["name"]
        .as_str()
        .map(|n| n.split(" OR ").map(str::trim).collect())
        .unwrap_or_default();
    if let Some(a) = e["aliases"].as_array() {
        v.extend(a.iter().filter_map(Value::as_str));
    }
    v
}

#[test]
fn json_lists_kinds_and_support() {
    let all = list_json(&[]);
    assert!(!all.is_empty());
    let kinds = [
        "hardware",
        "software",
        "hw_cache",
        "tracepoint",
        "pmu",
        "vendor",
    ];
    for e in &all {
        assert!(e["name"].is_string(), "entry without a name: {e}");
        assert!(
            e["kind"].as_str().is_some_and(|k| kinds.contains(&k)),
            "bad kind: {e}"
        );
        assert!(e["supported"].is_boolean(), "entry without supported: {e}");
        assert!(e["desc"].is_string(), "entry without desc: {e}");
    }
    let find = |name: &str| {
        all.iter()
            .find(|e| names_of(e).contains(&name))
            .unwrap_or_else(|| panic!("no {name} in hwprof list --json"))
    };
    let tc = find("task-clock");
    assert_eq!(
        (tc["kind"].as_str(), tc["supported"].as_bool()),
        (Some("software"), Some(true)),
        "{tc}"
    );
    let cache = find("L1-dcache-load-misses");
    assert_eq!(cache["kind"], "hw_cache", "{cache}");
    let cycles = find("cycles");
    assert_eq!(cycles["kind"], "hardware", "{cycles}");
    if !has_cpu_pmu() {
        assert_eq!(
            cycles["supported"], false,
            "no cpu PMU in sysfs, yet cycles is marked supported: {cycles}"
        );
        assert_eq!(
            cache["supported"], false,
            "no cpu PMU in sysfs, yet {cache} is marked supported"
        );
    }
    if msr_tsc_present() {
        let tsc = all
            .iter()
            .find(|e| e["name"].as_str().is_some_and(|n| n.contains("msr/tsc")))
            .unwrap_or_else(|| panic!("no msr/tsc/ in hwprof list --json"));
        assert_eq!(
            (tsc["kind"].as_str(), tsc["supported"].as_bool()),
            (Some("pmu"), Some(true)),
            "{tsc}"
        );
    }
    if sched_switch_present() {
        let tp = find("sched:sched_switch");
        assert_eq!(
            (tp["kind"].as_str(), tp["supported"].as_bool()),
            (Some("tracepoint"), Some(true)),
            "{tp}"
        );
    }
}

#[test]
fn json_vendor_events_of_a_model() {
    let v = list_json(&["--cpu", "skylake", "MEM_LOAD"]);
    let e = v
        .iter()
        .find(|e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.contains("MEM_LOAD_RETIRED.L3_MISS"))
        })
        .unwrap_or_else(|| {
            panic!(
                "no MEM_LOAD_RETIRED.L3_MISS in hwprof list --cpu skylake --json MEM_LOAD: {v:?}"
            )
        });
    assert_eq!(e["kind"], "vendor", "{e}");
    if !has_cpu_pmu() {
        assert_eq!(
            e["supported"], false,
            "no cpu PMU here, yet a skylake event is marked supported: {e}"
        );
    }
}
