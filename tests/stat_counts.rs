//! Acceptance tests for `hwprof stat` counts: every event kind counted on real
//! workloads, compared with `perf stat` run side by side on the same workload.
//!
//! Tolerances are 3 to 5 times the largest difference seen in 50 runs of this file
//! (two campaigns of 25) while other test binaries ran beside it (load average 5 to 10
//! on 2 CPUs); each says its figures.

#[macro_use]
mod common;

use common::*;

/// Calls made by `calls` under uprobes. Each uprobe hit costs ~8 µs in the CI
/// VM, so the brief's 900003 (~7 s per probed run) would blow the 5 s per
/// test budget; set HWPROF_UPROBE_CALLS=900003 to run the full size.
fn uprobe_calls() -> u64 {
    std::env::var("HWPROF_UPROBE_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30003)
}

#[test]
fn page_faults_match_perf() {
    let bin = wl("touch_pages");
    let cmd = [bin.as_str(), "20000"];
    let h = stat_hwprof("page-faults", &cmd);
    report!("page-faults of touch_pages 20000: hwprof={h}");
    assert!(h >= 20000.0, "hwprof page-faults {h} < 20000");
    if !require_perf("page-faults comparison") {
        return;
    }
    let p = stat_perf("page-faults", "page-faults", &cmd);
    assert!(p >= 20000.0, "perf page-faults {p} < 20000");
    // At most 4 faults (0.02%) apart in 50 runs: 0.06%, about 12 faults.
    assert_close("page-faults of touch_pages 20000", p, h, p * 0.0006);
}

#[test]
fn context_switches_match_perf() {
    let bin = wl("sleeper");
    let cmd = [bin.as_str(), "50", "2"];
    let h = stat_hwprof("context-switches", &cmd);
    report!("context-switches of sleeper 50 2: hwprof={h}");
    assert!(h >= 50.0, "hwprof context-switches {h} < 50");
    if !require_perf("context-switches comparison") {
        return;
    }
    // One switch per sleep plus the odd preemption when the other tests
    // keep both CPUs busy: up to three attempts within max(2%, 1).
    let mut attempts = Vec::new();
    for _ in 0..3 {
        let (p, h) = stat_both("context-switches", &cmd);
        let tol = (p * 0.02).max(1.0);
        report!("context-switches of sleeper 50 2: perf={p} hwprof={h} (allowed difference {tol})");
        assert!(p >= 50.0, "perf context-switches {p} < 50");
        assert!(h >= 50.0, "hwprof context-switches {h} < 50");
        attempts.push((p, h));
        if (p - h).abs() <= tol {
            return;
        }
    }
    panic!(
        "context-switches differ by more than max(2%, 1) in 3 attempts (perf, hwprof): {attempts:?}"
    );
}

#[test]
fn task_clock_matches_perf() {
    let bin = wl("spin");
    let cmd = [bin.as_str(), "200"];
    // task-clock is printed in msec.
    let h = stat_hwprof("task-clock", &cmd);
    report!("task-clock of spin 200: hwprof={h} msec");
    // spin burns 200 ms of its process's CPU time: -0.14% to +1.6% in 50 runs (two
    // campaigns of 25) under a parallel load; 4 times that allowed.
    assert!(
        (188.0..=212.0).contains(&h),
        "hwprof task-clock {h} msec is not 200 msec ± 6%"
    );
    if !require_perf("task-clock comparison") {
        return;
    }
    let p = stat_perf("task-clock", "task-clock", &cmd);
    // Two runs of the same fixed CPU time: -0.24% to +0.62% apart in 50 runs.
    assert_close("task-clock (msec) of spin 200", p, h, p * 0.025);
}

#[test]
fn sched_switch_tracepoint_equals_perf() {
    if !require_tracefs("sched:sched_switch") {
        return;
    }
    let bin = wl("sleeper");
    let cmd = [bin.as_str(), "30", "2"];
    let ev = "sched:sched_switch";
    if !perf_available() {
        let h = stat_hwprof(ev, &cmd);
        report!("sched:sched_switch of sleeper 30 2: hwprof={h}");
        assert!(h >= 30.0, "hwprof sched:sched_switch {h} < 30");
        require_perf("sched:sched_switch comparison");
        return;
    }
    // A sleeping task switches out exactly once per sleep; a preemption (frequent
    // when other tests keep both CPUs busy) adds one to either run. So: up to three
    // attempts at an exact match, else the last pair may differ by that one switch,
    // the tolerance the context-switches test allows too.
    let mut attempts = Vec::new();
    for _ in 0..3 {
        let (p, h) = stat_both(ev, &cmd);
        report!("sched:sched_switch of sleeper 30 2: perf={p} hwprof={h}");
        assert!(h >= 30.0, "hwprof sched:sched_switch {h} < 30");
        attempts.push((p, h));
        if p == h {
            return;
        }
    }
    assert!(
        attempts.iter().any(|&(p, h)| (p - h).abs() <= 1.0),
        "sched:sched_switch never within one preemption of perf (perf, hwprof): {attempts:?}"
    );
}

#[test]
fn msr_tsc_matches_perf() {
    if !require_pmu("msr", "msr/tsc/") {
        return;
    }
    if !std::path::Path::new("/sys/bus/event_source/devices/msr/events/tsc").exists() {
        // Every x86-64 CPU has a TSC (msr/tsc/ is x86's).
        let why = if cfg!(target_arch = "x86_64") {
            Why::Setup
        } else {
            Why::OtherArch
        };
        skip(why, "the msr PMU has no tsc event");
        return;
    }
    let bin = wl("spin");
    let cmd = [bin.as_str(), "50"];
    let h = stat_hwprof("msr/tsc/", &cmd);
    report!("msr/tsc/ of spin 50: hwprof={h}");
    // 50 ms of CPU time at any TSC rate above 100 MHz.
    assert!(
        h > 5e6,
        "hwprof msr/tsc/ {h} is not a plausible TSC tick count"
    );
    if !require_perf("msr/tsc/ comparison") {
        return;
    }
    let p = stat_perf("msr/tsc/", "msr/tsc/", &cmd);
    // TSC ticks while the task runs, two runs of 50 ms of CPU time: -1.08% to +0.55%
    // apart in 50 runs.
    assert_close("msr/tsc/ of spin 50", p, h, p * 0.045);
}

/// Counts `hwprof_event` (built from the copy's path) with hwprof and
/// `perf_spec` (a `perf probe` spec) with perf on `calls N`; both must equal N.
fn uprobe_case(tag: &str, hwprof_event: impl Fn(&str) -> String, perf_spec: &str) {
    if !require_pmu("uprobe", "uprobe counts") {
        return;
    }
    let n = uprobe_calls();
    // perf probe event names are global to the kernel: make them unique per test process
    // too, so two test runs on one machine cannot collide.
    let tag = format!("{tag}_{}", std::process::id());
    let bin = unique_copy("calls", &tag);
    let path = bin.to_str().expect("utf-8 path").to_string();
    let ns = n.to_string();
    let cmd = [path.as_str(), ns.as_str()];
    let ev = hwprof_event(&path);
    let h = stat_hwprof(&ev, &cmd);
    report!("{ev} on calls {n}: hwprof={h}");
    assert_eq!(h, n as f64, "hwprof {ev} on calls {n}");
    if !require_perf("perf probe comparison") {
        return;
    }
    let probes = ProbeGuard::new(&bin);
    let pev = probes.add(perf_spec);
    let p = stat_perf(&pev, &pev, &cmd);
    report!("{pev} on calls {n}: perf={p}; {ev}: hwprof={h}");
    assert_eq!(p, n as f64, "perf {pev} on calls {n}");
    assert_eq!(h, p, "hwprof {ev} vs perf {pev}");
}

#[test]
fn uprobe_counts_every_call() {
    uprobe_case(
        "uprobe_entry",
        |p| format!("uprobe:{p}:hot_function"),
        "hot_function",
    );
}

#[test]
fn uretprobe_counts_every_return() {
    uprobe_case(
        "uprobe_return",
        |p| format!("uretprobe:{p}:hot_function"),
        "hot_function%return",
    );
}

#[test]
fn uprobe_at_offset_counts_every_call() {
    // The second instruction of hot_function: an instruction boundary by
    // construction (objdump), never the entry.
    let offs = instruction_offsets(&workload("calls"), "hot_function");
    assert!(
        offs.len() >= 2,
        "hot_function has one instruction: {offs:?}"
    );
    let off = offs[1];
    uprobe_case(
        "uprobe_offset",
        |p| format!("uprobe:{p}:hot_function+{off:#x}"),
        &format!("hot_function+{off}"),
    );
}

#[test]
fn write_breakpoint_counts_every_write() {
    if !require_pmu("breakpoint", "mem: breakpoints") {
        return;
    }
    let bin = workload("writer");
    let addr = hwprof_testkit::nm_address(&bin, "watched_var");
    let ev = format!("mem:{addr:#x}:w");
    let path = bin.to_str().expect("utf-8 path");
    let cmd = [path, "1000"];
    let h = stat_hwprof(&ev, &cmd);
    report!("{ev} on writer 1000: hwprof={h}");
    assert_eq!(h, 1000.0, "hwprof {ev} on writer 1000");
    if !require_perf("mem: breakpoint comparison") {
        return;
    }
    let p = stat_perf(&ev, &ev, &cmd);
    report!("{ev} on writer 1000: perf={p} hwprof={h}");
    assert_eq!(p, h, "perf vs hwprof {ev}");
}
