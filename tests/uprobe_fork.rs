//! Uprobes and the target's fork(), threads and exec (issue 11, defect 1), and what hwprof
//! leaves behind.
//!
//! `forker` calls `target()` once in its main thread, twice in a fork()ed child it waits
//! for, once in a pthread, and once in a forked child that exec()s the same binary: 5
//! calls, in 4 tasks of 3 processes. The uprobe PMU's path pointer made every inherited
//! event fail the target's fork with EFAULT ("fork: Bad address"); under every
//! uprobe-attaching command the program must now print its normal output, exit 0, and be
//! counted as perf counts it (`perf probe` + `perf stat`). Then: the `uprobe_events`
//! definitions hwprof writes are gone after a normal exit, SIGINT and SIGKILL (the
//! watchdog), stale ones of dead PIDs are removed by the next run, the target hwprof
//! started dies with it, and where tracefs cannot be written the fallback (no
//! inheritance) still leaves fork() working.
//!
//! Every test probes its own copy of `forker` (`common::unique_copy`), so definitions
//! and perf probe groups never collide with tests running at the same time, and
//! `uprobe_events` lines are matched by that copy's path.

#[macro_use]
mod common;

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

/// Stricter than `common::TIMEOUT`: the old bug could hang a parent waiting on a child
/// that was never created.
const LIMIT: Duration = Duration::from_secs(20);
const UPROBE_EVENTS: &str = "/sys/kernel/tracing/uprobe_events";
/// What `forker` prints when every fork, thread and exec worked.
const OK_LINE: &str = "forker: ok 5 calls";

/// True when uprobes can be defined and inherited here: the uprobe PMU, and a writable
/// `uprobe_events` (root, tracefs mounted read-write).
fn usable(what: &str) -> bool {
    if !require_pmu("uprobe", what) || !require_tracefs(what) {
        return false;
    }
    let writable = fs::OpenOptions::new()
        .append(true)
        .open(UPROBE_EVENTS)
        .is_ok();
    if !writable {
        report!(
            "SKIPPED: {UPROBE_EVENTS} is not writable (not root, or tracefs not mounted rw) ({what})"
        );
    }
    writable
}

fn forker(tag: &str) -> String {
    unique_copy("forker", tag)
        .to_str()
        .expect("utf-8 path")
        .to_string()
}

fn hwprof_limited(args: &[&str]) -> Run {
    let mut cmd = Command::new(hwprof_bin());
    cmd.args(args);
    run_cmd(&mut cmd, LIMIT)
}

/// Lines of `uprobe_events` that define a probe on `bin`.
fn definitions_on(bin: &str) -> Vec<String> {
    let text = fs::read_to_string(UPROBE_EVENTS).unwrap_or_default();
    let needle = format!(" {bin}:");
    text.lines()
        .filter(|l| l.contains(&needle))
        .map(str::to_string)
        .collect()
}

/// Asserts the program ran normally under hwprof: its output, exit 0, no fork error.
fn assert_program_ran(run: &Run) {
    assert!(
        run.stdout.contains(OK_LINE) && !run.stderr.contains("Bad address"),
        "the target did not run normally under hwprof\n{}",
        run.dump()
    );
}

#[test]
fn stat_counts_the_children_threads_and_exec_like_perf() {
    if !usable("stat on a forking target") {
        return;
    }
    let bin = forker("stat");
    let entry = format!("uprobe:{bin}:target");
    let ret = format!("uretprobe:{bin}:target");
    let run = hwprof_limited(&["stat", "-x,", "-e", &format!("{entry},{ret}"), "--", &bin]);
    assert_program_ran(&run);
    assert_eq!(run.code(), 0, "{}", run.dump());
    let calls = value_of(&run, &entry);
    let returns = value_of(&run, &ret);
    report!("hwprof stat on forker: {calls} calls, {returns} returns (1 + 2 + 1 + 1 expected)");
    assert_eq!(calls, 5.0, "{}", run.dump());
    assert_eq!(returns, 5.0, "{}", run.dump());
    assert!(
        definitions_on(&bin).is_empty(),
        "left behind: {:?}",
        definitions_on(&bin)
    );

    // --no-inherit keeps the uprobe PMU: the main thread only, and fork still works.
    let run = hwprof_limited(&["stat", "-x,", "--no-inherit", "-e", &entry, "--", &bin]);
    assert_program_ran(&run);
    assert_eq!(value_of(&run, &entry), 1.0, "{}", run.dump());

    if !require_perf("perf probe + perf stat on forker") {
        return;
    }
    let guard = ProbeGuard::new(Path::new(&bin));
    let ev = guard.add("target");
    let perf_calls = stat_perf(&ev, &ev, &[&bin]);
    report!("perf probe + perf stat on forker: {perf_calls} calls; hwprof: {calls}");
    assert_eq!(calls, perf_calls, "hwprof and perf disagree");
}

#[test]
fn record_completes_with_samples_of_every_task_and_perf_reads_the_file() {
    if !usable("record on a forking target") {
        return;
    }
    let bin = forker("record");
    let data = scratch_path("uprobe_fork_record.data");
    let data_s = data.to_str().expect("utf-8 path");
    let event = format!("uprobe:{bin}:target");
    // No -c: like perf's probe events, a uprobe samples every hit by default.
    let run = hwprof_limited(&["record", "-e", &event, "-o", data_s, "--", &bin]);
    assert_program_ran(&run);
    assert_eq!(run.code(), 0, "{}", run.dump());
    assert!(definitions_on(&bin).is_empty(), "definitions left behind");

    let script = hwprof_limited(&["script", "-i", data_s, "--format", "jsonl"]);
    script.assert_ok();
    let mut pids = BTreeSet::new();
    let mut tids = BTreeSet::new();
    let mut n = 0;
    for line in script.stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        if v["type"] == "sample" && v["event"] == event.as_str() {
            n += 1;
            pids.insert(v["pid"].as_u64().unwrap_or(0));
            tids.insert(v["tid"].as_u64().unwrap_or(0));
        }
    }
    report!(
        "record on forker: {n} samples from {} processes, {} threads",
        pids.len(),
        tids.len()
    );
    assert_eq!(n, 5, "one sample per call\n{}", script.stdout);
    assert_eq!(
        pids.len(),
        3,
        "parent, forked child, exec'd child: {pids:?}"
    );
    assert_eq!(tids.len(), 4, "plus the pthread: {tids:?}");

    if !require_perf("perf script / perf report on hwprof's uprobe recording") {
        let _ = fs::remove_file(&data);
        return;
    }
    let ps = perf(&["script", "-i", data_s]);
    ps.assert_ok();
    let lines = ps.stdout.lines().filter(|l| l.contains(&event)).count();
    assert_eq!(lines, 5, "perf script sees every sample\n{}", ps.dump());
    let pr = perf(&["report", "-i", data_s, "--stdio"]);
    pr.assert_ok();
    assert!(
        pr.stdout.contains("Samples: 5"),
        "perf report reads the samples\n{}",
        pr.dump()
    );
    let _ = fs::remove_file(&data);
}

#[test]
fn record_samples_every_uprobe_hit_by_default_like_perf() {
    if !usable("record --dry-run of a uprobe") {
        return;
    }
    let bin = forker("dry_run");
    let event = format!("uprobe:{bin}:target");
    let run = hwprof_limited(&["record", "--dry-run", "-e", &event, "--", &bin]);
    assert_eq!(run.code(), 0, "{}", run.dump());
    let attrs: serde_json::Value = serde_json::from_str(&run.stdout).expect("dry-run JSON");
    let a = &attrs[0]["attr"];
    // perf's probe events are tracepoints: period 1, no frequency, RAW | CPU | PERIOD.
    assert_eq!(a["sample_period"], 1, "{a}");
    assert_eq!(a["freq"], false, "{a}");
    let st = a["sample_type"].as_u64().expect("sample_type");
    assert_eq!(
        st & 0x580,
        0x580,
        "RAW, CPU and PERIOD in sample_type {st:#x}"
    );
}

/// On both engines: every call of the children, threads and exec'd program counted and
/// timed, the exit code passed on; `execve` of libc, probed beside, called once by the
/// program's child (the exec that does not return). The BPF engine's programs lost the
/// calls made after the first child exited (3 of 5: its inherited events took the
/// program off the uprobe as they went) until they were attached to events of their own.
#[test]
fn probe_counts_the_children_and_passes_the_exit_code_on() {
    if !usable("probe on a forking target") {
        return;
    }
    let bin = forker("probe");
    let spec = format!("uprobe:{bin}:target");
    for engine in ["bpf", "perf"] {
        let run = hwprof_limited(&[
            "probe",
            "--engine",
            engine,
            &spec,
            "uprobe:libc:execve",
            "--json",
            "--",
            &bin,
            "7",
        ]);
        assert_program_ran(&run);
        assert_eq!(run.code(), 7, "the target's exit code\n{}", run.dump());
        // The result goes to stderr, after the program's own stderr lines.
        let at = run
            .stderr
            .find("[\n")
            .expect("JSON after the program's output");
        let v: serde_json::Value = serde_json::from_str(&run.stderr[at..]).expect("JSON");
        let (t, x) = (&v[0], &v[1]);
        report!(
            "probe --engine {engine} on forker: count {} returns {} timed {}; execve: count {} returns {}",
            t["count"],
            t["returns"],
            t["timed"],
            x["count"],
            x["returns"]
        );
        assert_eq!(t["count"], 5, "--engine {engine}\n{}", run.dump());
        assert_eq!(
            t["timed"],
            5,
            "--engine {engine}: every call paired in its own thread\n{}",
            run.dump()
        );
        assert_eq!(
            (x["count"].as_u64(), x["returns"].as_u64()),
            (Some(1), Some(0)),
            "--engine {engine}: the program's one execve (which does not return)\n{}",
            run.dump()
        );
        assert!(definitions_on(&bin).is_empty(), "definitions left behind");
    }

    let ok = hwprof_limited(&["probe", &spec, "--", &bin]);
    assert_eq!(ok.code(), 0, "{}", ok.dump());
}

/// Where the uprobes cannot be defined in tracefs (the BPF engine attaches to those
/// definitions' events), `--engine bpf` says so and names `--engine perf`, and `auto`
/// notes it and samples with perf events; DWARF stacks are perf's only.
#[test]
fn the_bpf_engine_says_when_it_cannot_be_used() {
    if !require_pmu("uprobe", "probe --engine without tracefs") {
        return;
    }
    let bin = forker("engines");
    let spec = format!("uprobe:{bin}:target");
    let fake = scratch_path("fake_tracefs_probe");
    fs::create_dir_all(fake.join("events")).expect("create a fake tracefs");
    let probe = |engine: &str| {
        let mut cmd = Command::new(hwprof_bin());
        cmd.env("HWPROF_TRACEFS", &fake)
            .args(["probe", "--engine", engine, &spec, "--", &bin]);
        run_cmd(&mut cmd, LIMIT)
    };
    let bpf = probe("bpf");
    let auto = probe("auto");
    let _ = fs::remove_dir_all(&fake);
    report!("--engine bpf without tracefs: {}", bpf.stderr.trim());
    assert_eq!(bpf.code(), 1, "{}", bpf.dump());
    assert!(
        bpf.stderr.contains("could not be defined in tracefs")
            && bpf.stderr.contains("--engine perf")
            && !bpf.stdout.contains(OK_LINE),
        "{}",
        bpf.dump()
    );
    assert_program_ran(&auto);
    assert!(
        auto.stderr.contains("BPF engine not used")
            && auto.stderr.contains(": 1 call (1 return, 1 timed)"),
        "the main thread's call, by perf events\n{}",
        auto.dump()
    );
    let dwarf = hwprof_limited(&[
        "probe",
        "--engine",
        "bpf",
        &spec,
        "--threshold",
        "1ms",
        "--stacks",
        "--call-graph",
        "dwarf",
        "--",
        &bin,
    ]);
    assert_eq!(dwarf.code(), 2, "{}", dwarf.dump());
    assert!(
        dwarf.stderr.contains("use --engine perf"),
        "{}",
        dwarf.dump()
    );
}

/// The pids of the processes whose parent is `ppid`, from /proc/*/stat.
fn children_of(ppid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").expect("read /proc").flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`: comm may hold spaces, so split after the last ')'.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let parent = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok());
        if parent == Some(ppid) {
            out.push(pid);
        }
    }
    out
}

/// Whether `pid` is gone or a zombie.
fn dead(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().next())
            .is_none_or(|st| st == "Z" || st == "X"),
    }
}

/// `hwprof stat` on `forker hold` in the background, once the target runs and the
/// definition exists.
fn holding(bin: &str) -> Background {
    let mut bg = Background::spawn(Command::new(hwprof_bin()).args([
        "stat",
        "-e",
        &format!("uprobe:{bin}:target"),
        "--",
        bin,
        "hold",
    ]));
    bg.wait_for_line("ready");
    assert_eq!(
        definitions_on(bin).len(),
        1,
        "hwprof defines the uprobe while it runs"
    );
    bg
}

#[test]
fn definitions_are_removed_on_exit_and_sigint() {
    if !usable("uprobe definitions after exit and SIGINT") {
        return;
    }
    let bin = forker("sigint");
    let run = hwprof_limited(&["stat", "-e", &format!("uprobe:{bin}:target"), "--", &bin]);
    assert_program_ran(&run);
    assert!(definitions_on(&bin).is_empty(), "left after a normal exit");

    let mut bg = holding(&bin);
    assert!(signal(bg.pid(), libc::SIGINT));
    let (status, _, err) = bg.wait_timeout(LIMIT).expect("hwprof ends after SIGINT");
    report!("hwprof stat after SIGINT: {status:?}");
    assert!(
        err.contains("Performance counter stats"),
        "counts printed after SIGINT:\n{err}"
    );
    assert!(
        definitions_on(&bin).is_empty(),
        "left after SIGINT: {:?}",
        definitions_on(&bin)
    );
}

#[test]
fn sigkill_of_hwprof_removes_the_definitions_and_the_target() {
    if !usable("uprobe definitions after SIGKILL") {
        return;
    }
    let bin = forker("sigkill");
    let mut bg = holding(&bin);
    let hwprof_pid = bg.pid();
    let name = Path::new(&bin)
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let target: Vec<i32> = children_of(hwprof_pid)
        .into_iter()
        .filter(|&p| {
            fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| name.starts_with(c.trim()))
        })
        .collect();
    assert_eq!(target.len(), 1, "one target process under hwprof");
    assert!(signal(hwprof_pid, libc::SIGKILL));
    // Not `wait_timeout`: it reads hwprof's stderr to EOF, which a surviving target
    // (it shares that pipe) would hold open forever.
    assert!(eventually(LIMIT, || !bg.alive()), "hwprof survived SIGKILL");
    let start = Instant::now();
    let removed = eventually(Duration::from_secs(15), || definitions_on(&bin).is_empty());
    report!(
        "after SIGKILL of hwprof: definitions removed by the watchdog in {:?}",
        start.elapsed()
    );
    let target_gone = eventually(Duration::from_secs(5), || dead(target[0]));
    // Check before `bg` is dropped: it kills its whole process group, target included.
    assert!(removed, "left after SIGKILL: {:?}", definitions_on(&bin));
    assert!(
        target_gone,
        "the target {} hwprof started still runs after hwprof was killed",
        target[0]
    );
}

/// Deletes a planted definition on drop (also when the test fails).
struct Planted(String);

impl Drop for Planted {
    fn drop(&mut self) {
        if let Ok(mut f) = fs::OpenOptions::new().append(true).open(UPROBE_EVENTS) {
            let _ = f.write_all(format!("-:{}\n", self.0).as_bytes());
        }
    }
}

#[test]
fn a_stale_group_of_a_dead_pid_is_removed_by_the_next_run() {
    if !usable("stale uprobe definitions") {
        return;
    }
    let bin = forker("stale");
    // A pid that existed and is gone.
    let mut child = Command::new("true").spawn().expect("spawn true");
    let dead_pid = child.id();
    child.wait().expect("wait for true");
    let offset = hwprof_testkit::nm_address(Path::new(&bin), "target") - 0x40_0000; // -no-pie: text at 0x400000
    let group_event = format!("hwprof_{dead_pid}/stale_probe");
    let planted = Planted(group_event.clone());
    {
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(UPROBE_EVENTS)
            .expect("open uprobe_events");
        f.write_all(format!("p:{group_event} {bin}:{offset:#x}\n").as_bytes())
            .expect("plant a stale definition");
    }
    assert_eq!(definitions_on(&bin).len(), 1, "planted");
    let run = hwprof_limited(&["stat", "-e", &format!("uprobe:{bin}:target"), "--", &bin]);
    assert_program_ran(&run);
    let left = definitions_on(&bin);
    drop(planted);
    assert!(left.is_empty(), "the stale definition survived: {left:?}");
}

#[test]
fn without_a_writable_tracefs_the_fallback_keeps_fork_working() {
    if !require_pmu("uprobe", "the uprobe PMU fallback") {
        return;
    }
    let bin = forker("fallback");
    // A tracefs without uprobe_events: definitions cannot be written.
    let fake = scratch_path("fake_tracefs");
    fs::create_dir_all(fake.join("events")).expect("create a fake tracefs");
    let entry = format!("uprobe:{bin}:target");
    let mut cmd = Command::new(hwprof_bin());
    cmd.env("HWPROF_TRACEFS", &fake)
        .args(["stat", "-x,", "-o"])
        .arg(fake.join("counts.csv"))
        .args(["-e", &entry, "--", &bin]);
    let run = run_cmd(&mut cmd, LIMIT);
    let counts = fs::read_to_string(fake.join("counts.csv")).unwrap_or_default();
    let _ = fs::remove_dir_all(&fake);
    assert_program_ran(&run);
    assert_eq!(run.code(), 0, "{}", run.dump());
    report!(
        "fallback notice: {}",
        run.stderr.lines().next().unwrap_or("")
    );
    assert!(
        run.stderr.contains("without inheritance"),
        "one notice says children are not counted\n{}",
        run.dump()
    );
    let value: Vec<f64> = parse_csv(&counts)
        .into_iter()
        .filter(|r| r.event == entry)
        .filter_map(|r| r.value)
        .collect();
    assert_eq!(value, [1.0], "the main thread's call only: {counts}");
    assert!(definitions_on(&bin).is_empty());
}

/// `hwprof probe --engine bpf` on a command that calls the function every 10 ms: after
/// SIGTERM it prints its result and leaves nothing (its programs, the uprobe
/// definitions); after SIGKILL the kernel drops its programs with its fds, the watchdog
/// removes the definitions and the target it started dies.
#[test]
fn probe_on_the_bpf_engine_leaves_nothing_after_sigterm_or_sigkill() {
    if !usable("probe --engine bpf after SIGTERM and SIGKILL") {
        return;
    }
    for sig in [libc::SIGTERM, libc::SIGKILL] {
        let bin = forker(if sig == libc::SIGTERM {
            "bpf_term"
        } else {
            "bpf_kill"
        });
        let mut bg = Background::spawn(Command::new(hwprof_bin()).args([
            "probe",
            "--engine",
            "bpf",
            &format!("uprobe:{bin}:target"),
            "--",
            &bin,
            "hold",
        ]));
        bg.wait_for_line("ready");
        let hwprof_pid = bg.pid();
        assert_eq!(
            definitions_on(&bin).len(),
            2,
            "the uprobe and the uretprobe"
        );
        let ids = program_ids_of(hwprof_pid);
        let loaded = hwprof_bpf::loaded_program_ids();
        assert!(
            ids.len() >= 3 && ids.iter().all(|i| loaded.contains(i)),
            "hwprof holds its latency programs: {ids:?}"
        );
        let target: Vec<i32> = children_of(hwprof_pid);
        assert!(signal(hwprof_pid, sig));
        if sig == libc::SIGTERM {
            let (status, _, err) = bg.wait_timeout(LIMIT).expect("hwprof ends after SIGTERM");
            report!(
                "probe --engine bpf after SIGTERM: {status:?}, {}",
                err.lines().last().unwrap_or("")
            );
            assert!(
                err.contains(": ") && err.contains(" calls ("),
                "the result is printed:\n{err}"
            );
        } else {
            assert!(eventually(LIMIT, || !bg.alive()), "hwprof survived SIGKILL");
        }
        let gone = eventually(Duration::from_secs(10), || {
            let loaded = hwprof_bpf::loaded_program_ids();
            ids.iter().all(|i| !loaded.contains(i))
        });
        let removed = eventually(Duration::from_secs(15), || definitions_on(&bin).is_empty());
        let target_gone = eventually(Duration::from_secs(5), || target.iter().all(|&p| dead(p)));
        report!(
            "probe --engine bpf, signal {sig}: programs {ids:?} gone {gone}, definitions removed {removed}, target gone {target_gone}"
        );
        assert!(gone, "programs left after signal {sig}: {ids:?}");
        assert!(
            removed,
            "definitions left after signal {sig}: {:?}",
            definitions_on(&bin)
        );
        assert!(
            target_gone,
            "the target hwprof started outlived signal {sig}"
        );
    }
}
