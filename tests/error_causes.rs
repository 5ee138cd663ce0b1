//! Errors name the real cause and the way out, once (issue 12): the first line a user
//! sees is the cause, not a consequence of it (a fallback that cannot help, a lookup
//! that hid the errno), and it says what to do.
//!
//! Each test runs the real binary and checks the exit code, that stderr is one
//! `hwprof:` line (or one `hwprof: note:` line and one error line), and the words that
//! name the cause and the way out.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::{Nobody, Run, Why, hwprof, run_cmd, scratch_path, skip};

/// The error lines of a failed run: every stderr line, each checked to be `hwprof: ...`.
/// At most one `hwprof: note:` line may come before the one error line.
#[track_caller]
fn error_line(r: &Run, code: i32) -> String {
    assert_eq!(r.code(), code, "exit code of `{}`\n{}", r.cmdline, r.dump());
    let lines: Vec<&str> = r.stderr.lines().collect();
    let (notes, errors): (Vec<&str>, Vec<&str>) =
        lines.iter().partition(|l| l.starts_with("hwprof: note:"));
    assert!(
        notes.len() <= 1 && errors.len() == 1,
        "`{}` must print one error line (after at most one note), not {} notes and {} other lines\n{}",
        r.cmdline,
        notes.len(),
        errors.len(),
        r.dump()
    );
    let line = errors[0];
    assert!(
        line.starts_with("hwprof: "),
        "`{}`: the error line must start with `hwprof: `\n{}",
        r.cmdline,
        r.dump()
    );
    assert!(
        !line.contains("(os error"),
        "`{}` prints Rust's `(os error N)`\n{}",
        r.cmdline,
        r.dump()
    );
    line.to_string()
}

/// Like [`error_line`], and no note either: the error is all there is.
#[track_caller]
fn only_line(r: &Run, code: i32) -> String {
    let line = error_line(r, code);
    assert_eq!(
        r.stderr.lines().count(),
        1,
        "`{}` must print the error alone\n{}",
        r.cmdline,
        r.dump()
    );
    line
}

#[track_caller]
fn assert_says(r: &Run, line: &str, words: &[&str]) {
    for w in words {
        assert!(
            line.contains(w),
            "`{}`: the error must say {w:?}\n{}",
            r.cmdline,
            r.dump()
        );
    }
}

#[track_caller]
fn assert_not_says(r: &Run, line: &str, words: &[&str]) {
    for w in words {
        assert!(
            !line.contains(w),
            "`{}`: the error must not say {w:?} (a consequence, not the cause)\n{}",
            r.cmdline,
            r.dump()
        );
    }
}

// ---------------------------------------------------------------------------
// 1. Branch stacks (-b, -j, --call-graph lbr)
// ---------------------------------------------------------------------------

/// Without a hardware PMU, every way of asking for branch stacks says, once, that
/// branch-stack sampling needs a PMU that records branches, and what to use instead;
/// not the no-PMU note twice and then "cannot open event 'cpu-clock'" (the fallback's
/// event, which never has branch stacks).
#[test]
fn branch_stacks_without_a_pmu_say_branch_recording_is_missing() {
    if !common::require_no_hardware_pmu("branch stacks refused without a PMU") {
        return;
    }
    let data = scratch_path("branch-nopmu.data");
    let data = data.to_str().expect("utf-8 scratch path");
    let svg = scratch_path("branch-nopmu.svg");
    let svg = svg.to_str().expect("utf-8 scratch path");
    let cases: [(&[&str], &str); 5] = [
        (&["record", "-b", "-o", data, "--", "true"], "-b"),
        (
            &["record", "--call-graph", "lbr", "-o", data, "--", "true"],
            "--call-graph lbr",
        ),
        (
            &["record", "-j", "any,u", "-o", data, "--", "true"],
            "-j any,u",
        ),
        (
            &["record", "-e", "cycles", "-b", "-o", data, "--", "true"],
            "-b",
        ),
        (
            &["flamegraph", "--call-graph", "lbr", "-o", svg, "--", "true"],
            "--call-graph lbr",
        ),
    ];
    for (args, flag) in cases {
        let r = hwprof(args);
        let line = only_line(&r, 1);
        assert_says(
            &r,
            &line,
            &[
                flag,
                "branch-stack sampling",
                "LBR",
                "hardware PMU",
                "-g",
                "--call-graph dwarf",
            ],
        );
        assert_not_says(&r, &line, &["cpu-clock", "not supported by this kernel"]);
        assert!(!Path::new(data).exists() && !Path::new(svg).exists());
    }
}

/// Branch stacks on an event that never has them (software, tracepoint; `--off-cpu`,
/// which records both) is a usage error (2), refused before anything opens, naming the
/// event.
#[test]
fn branch_stacks_on_software_events_are_a_usage_error() {
    let data = scratch_path("branch-sw.data");
    let data = data.to_str().expect("utf-8 scratch path");
    let r = hwprof(&["record", "-e", "cpu-clock", "-b", "-o", data, "--", "true"]);
    let line = only_line(&r, 2);
    assert_says(
        &r,
        &line,
        &[
            "-b",
            "'cpu-clock' is a software event",
            "hardware event",
            "-g",
        ],
    );
    assert_not_says(&r, &line, &["cannot open"]);

    let r = hwprof(&["record", "--off-cpu", "-b", "-o", data, "--", "true"]);
    let line = only_line(&r, 2);
    assert_says(&r, &line, &["--off-cpu", "branch stacks", "leave out -b"]);

    if common::require_tracefs("branch stacks on a tracepoint") {
        let r = hwprof(&[
            "record",
            "-e",
            "sched:sched_switch",
            "--call-graph",
            "lbr",
            "-o",
            data,
            "--",
            "true",
        ]);
        let line = only_line(&r, 2);
        assert_says(
            &r,
            &line,
            &["--call-graph lbr", "'sched:sched_switch' is a tracepoint"],
        );
    }
    assert!(!Path::new(data).exists());
}

// ---------------------------------------------------------------------------
// 2. Vendor event names of another CPU, and event files for another CPU
// ---------------------------------------------------------------------------

/// This machine's vendor as /proc/cpuinfo says (`AuthenticAMD`, `GenuineIntel`).
fn host_vendor() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "vendor_id").then(|| v.trim().to_string())
        })
        .unwrap_or_default()
}

/// An Intel name with `--cpu` an AMD model (and the reverse) says whose event it is and
/// how to encode it for that model, not a bare "unknown event".
#[test]
fn vendor_names_of_another_cpu_say_whose_they_are() {
    let r = hwprof(&["encode", "--cpu", "zen4", "-e", "MEM_LOAD_RETIRED.L3_MISS"]);
    let line = only_line(&r, 2);
    assert_says(
        &r,
        &line,
        &[
            "'MEM_LOAD_RETIRED.L3_MISS' is an Intel event of skylake",
            "not an event of --cpu zen4",
            "--cpu skylake",
            "--event-file",
        ],
    );
    assert_not_says(&r, &line, &["unknown event"]);

    let r = hwprof(&[
        "encode",
        "--cpu",
        "icelake",
        "-e",
        "ls_dmnd_fills_from_sys.dram_io_near",
    ]);
    let line = only_line(&r, 2);
    assert_says(
        &r,
        &line,
        &["is an AMD event of zen4", "--cpu icelake", "--cpu zen4"],
    );

    // On this machine (no --cpu): the message names this CPU as /proc/cpuinfo does.
    let (name, this) = match host_vendor().as_str() {
        "AuthenticAMD" => ("MEM_LOAD_RETIRED.L3_MISS", "this CPU (AMD"),
        "GenuineIntel" => ("ls_dmnd_fills_from_sys.dram_io_near", "this CPU ("),
        other => {
            skip(
                Why::OtherArch,
                format_args!("CPU vendor {other:?}: no built-in table to compare with"),
            );
            return;
        }
    };
    let r = hwprof(&["stat", "-e", name, "--", "true"]);
    let line = only_line(&r, 2);
    assert_says(&r, &line, &[name, this, "hwprof encode --cpu"]);
    assert_not_says(&r, &line, &["unknown event"]);
}

/// An Intel perfmon file used without `--cpu` where it does not fit (AMD here, or
/// `--cpu` an AMD model) says which CPU the file is for (from its name and the
/// mapfile.csv next to it) and to pass `--cpu MODEL`, instead of "PMU 'cpu' has no term
/// 'offcore_rsp'"; with `--cpu` that model it encodes.
#[test]
fn event_files_for_another_cpu_say_which_cpu_they_are_for() {
    let Some(file) = hwprof_testkit::fixture_path("perfmon/SKX/events/skylakex_core.json") else {
        return;
    };
    let file = file.to_str().expect("utf-8 fixture path");
    let event = "OFFCORE_RESPONSE.DEMAND_DATA_RD.ANY_RESPONSE";
    let r = hwprof(&["encode", "--cpu", "zen4", "--event-file", file, "-e", event]);
    let line = only_line(&r, 2);
    assert_says(
        &r,
        &line,
        &[
            event,
            "an event file for Intel skylakex",
            // perfmon's mapfile.csv maps Skylake-X's CPUID to this file.
            "GenuineIntel-6-55",
            "not for --cpu zen4",
            "pass --cpu skylakex",
        ],
    );
    assert_not_says(&r, &line, &["has no term", "offcore_rsp"]);

    let ok = hwprof(&[
        "encode",
        "--json",
        "--cpu",
        "skylakex",
        "--event-file",
        file,
        "-e",
        event,
    ]);
    ok.assert_ok();
    assert!(ok.stdout.contains("\"config1\":65537"), "{}", ok.dump());

    if host_vendor() == "AuthenticAMD" {
        let r = hwprof(&["encode", "--event-file", file, "-e", event]);
        let line = only_line(&r, 2);
        assert_says(
            &r,
            &line,
            &[
                "an event file for Intel skylakex",
                "not for this CPU (AMD",
                "pass --cpu skylakex",
            ],
        );
        assert_not_says(&r, &line, &["has no term"]);
    }
}

// ---------------------------------------------------------------------------
// 3. tracefs that this user may not read, and tracefs's other failures
// ---------------------------------------------------------------------------

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {mode:o} {}: {e}", p.display()));
}

/// A fake tracefs under `root` with `events/sched/sched_switch/id`.
fn fake_tracefs(root: &Path) {
    let tp = root.join("events/sched/sched_switch");
    std::fs::create_dir_all(&tp).expect("creating a fake tracefs");
    std::fs::write(tp.join("id"), "123\n").expect("writing a tracepoint id");
    for d in [root, &root.join("events"), &root.join("events/sched"), &tp] {
        chmod(d, 0o755);
    }
    chmod(&tp.join("id"), 0o444);
}

/// tracefs mounted mode 700 (root's only), used as another user: "permission denied on
/// DIR" and the remount that opens it, as perf says; not "tracefs is not available ...
/// mount it" (it is mounted).
#[test]
fn tracefs_mode_700_says_permission_denied_and_how_to_open_it() {
    let Some(nobody) = Nobody::new("t700") else {
        return;
    };
    let tfs = nobody.dir.join("tracing");
    fake_tracefs(&tfs);
    chmod(&tfs, 0o700);
    let shown = tfs.display().to_string();
    for args in [
        &["stat", "-e", "sched:sched_switch", "--", "true"][..],
        &[
            "record",
            "-e",
            "sched:sched_switch",
            "-o",
            "out/r.data",
            "--",
            "true",
        ][..],
    ] {
        let r = nobody.run(Some(&tfs), args);
        let line = only_line(&r, 1);
        assert_says(
            &r,
            &line,
            &[
                &format!("permission denied on {shown} (mode 700, owner root"),
                "run as root",
                "sudo mount -o remount,mode=755",
                &shown,
            ],
        );
        assert_not_says(&r, &line, &["not available", "no events/", "mount -t"]);
    }
}

/// Each other tracefs failure says its own cause: absent, not a tracefs (no events/),
/// a tracepoint's id file this user may not read, and (as nobody) a uprobe, whose PMU
/// wants root whatever perf_event_paranoid says (not the `:u` advice, which cannot help).
#[test]
fn tracefs_failures_each_say_their_own_cause() {
    let dir = scratch_path("tracefs-causes");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let absent = dir.join("absent");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).expect("empty dir");
    let stat_tp = ["stat", "-e", "sched:sched_switch", "--", "true"];
    let run_with = |tfs: &Path| {
        let mut c = Command::new(common::hwprof_bin());
        c.args(stat_tp)
            .env("HWPROF_TRACEFS", tfs)
            .env("LC_ALL", "C");
        run_cmd(&mut c, common::TIMEOUT)
    };
    let r = run_with(&absent);
    let line = only_line(&r, 1);
    assert_says(&r, &line, &["does not exist", "HWPROF_TRACEFS"]);
    let r = run_with(&empty);
    let line = only_line(&r, 1);
    assert_says(&r, &line, &["has no events/ directory", "HWPROF_TRACEFS"]);
    assert_not_says(&r, &line, &["permission denied", "does not exist"]);
    std::fs::remove_dir_all(&dir).expect("removing the scratch dir");

    let Some(nobody) = Nobody::new("tid") else {
        return;
    };
    let tfs = nobody.dir.join("tracing");
    fake_tracefs(&tfs);
    let id = tfs.join("events/sched/sched_switch/id");
    chmod(&id, 0o400);
    let r = nobody.run(Some(&tfs), &stat_tp);
    let line = only_line(&r, 1);
    assert_says(
        &r,
        &line,
        &[
            &format!("permission denied on {} (mode 400", id.display()),
            "run as root",
        ],
    );

    // uprobe_events is there but not writable by nobody: the uprobe PMU's own rule is
    // the cause that stops it.
    std::fs::write(tfs.join("uprobe_events"), "").expect("uprobe_events");
    chmod(&tfs.join("uprobe_events"), 0o644);
    let target = nobody.dir.join("calls");
    hwprof_testkit::copy_executable(&common::workload("calls"), &target)
        .expect("copying a workload");
    chmod(&target, 0o755);
    let probe = format!("uprobe:{}:hot_function", target.display());
    let t = target.to_str().expect("utf-8 path");
    for args in [
        &["stat", "-e", &probe, "--", t, "1"][..],
        &["record", "-e", &probe, "-o", "out/r.data", "--", t, "1"][..],
    ] {
        let r = nobody.run(Some(&tfs), args);
        let line = only_line(&r, 1);
        assert_says(&r, &line, &["uprobe PMU", "root", "CAP_PERFMON"]);
        assert_not_says(&r, &line, &[":u'", "sysctl"]);
    }
}

// ---------------------------------------------------------------------------
// 4. No "(os error N)" for the common failures
// ---------------------------------------------------------------------------

/// A PID with no process (the highest free one below pid_max).
fn free_pid() -> String {
    let max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(32768);
    (2..max)
        .rev()
        .find(|p| !Path::new(&format!("/proc/{p}")).exists())
        .expect("a free PID")
        .to_string()
}

/// Missing inputs, output folders, baselines, event files, uprobe binaries and PIDs:
/// one line each, that names the thing, without Rust's `(os error N)`.
#[test]
fn common_failures_never_print_os_error_codes() {
    let dir = scratch_path("os-error");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let missing = dir.join("missing");
    let m = missing.to_str().expect("utf-8 scratch path");
    let input = format!("{m}/p.data");
    let out = format!("{m}/out");
    let pid = free_pid();
    let uprobe = format!("uprobe:{m}/bin:main");
    let cases: Vec<Vec<&str>> = vec![
        vec!["report", "-i", &input],
        vec!["script", "-i", &input],
        vec!["flamegraph", "-i", &input, "-o", &out],
        vec!["report", "--diff", &input, &input],
        vec!["record", "-o", &out, "--", "true"],
        vec!["stat", "-o", &out, "--", "true"],
        vec!["flamegraph", "-o", &out, "--", "true"],
        vec!["offcpu", "-o", &out, "--", "true"],
        vec![
            "bench",
            "--baseline",
            "base",
            "--baseline-dir",
            m,
            "-r",
            "2",
            "--",
            "true",
        ],
        vec![
            "stat",
            "--event-file",
            &input,
            "-e",
            "task-clock",
            "--",
            "true",
        ],
        vec!["encode", "--event-file", &input, "-e", "task-clock"],
        vec!["list", "--event-file", &input],
        vec!["stat", "-e", &uprobe, "--", "true"],
        vec!["probe", &uprobe, "--", "true"],
        vec!["stat", "-p", &pid],
        vec!["record", "-p", &pid, "-o", &out],
        vec!["offcpu", "-p", &pid, "-o", &out],
        vec!["probe", "-p", &pid, &uprobe],
    ];
    for args in cases {
        let r = hwprof(&args);
        let code = r.code();
        assert!(code == 1 || code == 2, "exit code {code}\n{}", r.dump());
        let line = only_line(&r, code);
        assert!(
            line.contains(m) || line.contains(&pid),
            "`{}`: the error must name what is missing\n{}",
            r.cmdline,
            r.dump()
        );
    }
    assert!(!missing.exists());
    std::fs::remove_dir_all(&dir).expect("removing the scratch dir");
}

// ---------------------------------------------------------------------------
// Found on the way
// ---------------------------------------------------------------------------

/// `-o DIR/` for a folder that does not exist used to record the whole run and then
/// fail renaming into it ("Not a directory"); it is refused first, as a usage error.
#[test]
fn output_naming_a_missing_folder_is_refused_before_the_run() {
    let dir = scratch_path("trailing-slash");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let out = format!("{}/", dir.join("nodir").display());
    for args in [
        &["record", "-e", "task-clock", "-o", &out, "--", "true"][..],
        &["stat", "-o", &out, "--", "true"][..],
    ] {
        let r = hwprof(args);
        let line = only_line(&r, 2);
        assert_says(&r, &line, &[&out, "names a directory", "name a file"]);
        assert_not_says(&r, &line, &["renaming", "Not a directory"]);
    }
    assert!(!dir.join("nodir").exists());
    std::fs::remove_dir_all(&dir).expect("removing the scratch dir");
}

/// Sampling an event of a PMU that only counts (msr) used to say "invalid for this PMU
/// (a bad config ...): is -F above the kernel's limit?" although no -F was given; it
/// says the PMU refused sampling and to count the event instead.
#[test]
fn sampling_a_counting_only_pmu_says_to_count_it() {
    if !common::require_pmu("msr", "sampling msr/tsc/") {
        return;
    }
    let data = scratch_path("msr.data");
    let data = data.to_str().expect("utf-8 scratch path");
    let r = hwprof(&["record", "-e", "msr/tsc/", "-o", data, "--", "true"]);
    let line = only_line(&r, 1);
    assert_says(
        &r,
        &line,
        &[
            "cannot sample 'msr/tsc/'",
            "'msr' PMU",
            "hwprof stat -e msr/tsc/",
        ],
    );
    assert_not_says(&r, &line, &["-F", "bad config"]);
    assert!(!Path::new(data).exists());
}

/// A hardware PMU this machine does not expose (`amd_l3/` without a PMU, `cpu_core/` on
/// a CPU that is not hybrid) says why it is missing, not only "unknown PMU".
#[test]
fn missing_hardware_pmus_say_why() {
    let r = hwprof(&["encode", "-e", "cpu_core/event=0x3c/"]);
    if common::pmu_exists("cpu_core") {
        r.assert_ok();
    } else {
        let line = only_line(&r, 2);
        assert_says(
            &r,
            &line,
            &["unknown PMU 'cpu_core'", "'cpu'", "hybrid CPUs"],
        );
    }
    if !common::require_no_hardware_pmu("a hardware PMU's name without one") {
        return;
    }
    let r = hwprof(&["stat", "-e", "amd_l3/event=0x4/", "--", "true"]);
    let line = only_line(&r, 2);
    assert_says(
        &r,
        &line,
        &["unknown PMU 'amd_l3'", "no hardware PMUs", "software"],
    );
}

/// A command too short to be sampled: the error names the command and the rate, not the
/// scratch recording the user never chose.
#[test]
fn a_command_too_short_for_a_flame_graph_is_named_not_the_scratch_file() {
    let dir = scratch_path("short_flame");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let out = dir.join("short.svg");
    // One sample per 10 s of CPU: `true` (under 1 ms) is never sampled, even when a
    // loaded machine stretches it past the default 1 ms period.
    let r = hwprof(&[
        "flamegraph",
        "-c",
        "10000000000",
        "-o",
        out.to_str().unwrap(),
        "--",
        "true",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(r.code(), 1, "{}", r.dump());
    // One error line (after, on a machine without a PMU, the one cpu-clock note).
    let errors: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| !l.starts_with("hwprof: note:"))
        .collect();
    assert_eq!(errors.len(), 1, "one line\n{}", r.dump());
    let err = errors[0];
    assert!(
        err.contains("`true` ran too briefly to be sampled")
            && err.contains("every 10000000000 events"),
        "names the command and the rate: {err}"
    );
    assert!(
        !err.contains("scratch") && !err.contains("perf.data"),
        "{err}"
    );
}

/// Running out of file descriptors (a low `ulimit -n`) was diagnosed as "this kernel has
/// no uprobe PMU", "PMU 'uprobe' has no term 'retprobe'" or "unexpected uprobe config":
/// sysfs reads that failed for want of descriptors looked like missing PMUs. At every
/// limit from 4 to 40 open files, stat and probe either work or say that the limit is
/// the cause and how to raise it.
#[test]
fn running_out_of_file_descriptors_is_named_as_such() {
    if !common::require_pmu("uprobe", "uprobes under a low ulimit -n") {
        return;
    }
    let bin = common::wl("libc_calls");
    let uprobe = format!("uprobe:{bin}:main");
    let uretprobe = format!("uretprobe:{bin}:main");
    let events = format!("{uprobe},{uretprobe},task-clock");
    let mut failures = 0;
    for limit in 4..=40 {
        for args in [
            vec!["stat", "-e", events.as_str(), "--", bin.as_str(), "3"],
            vec!["probe", uprobe.as_str(), "--", bin.as_str(), "3"],
        ] {
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(format!("ulimit -n {limit} && exec \"$@\""))
                .arg("sh")
                .arg(common::hwprof_bin())
                .args(&args);
            let r = run_cmd(&mut c, common::TIMEOUT);
            for wrong in ["no uprobe PMU", "has no term", "unexpected uprobe config"] {
                assert!(
                    !r.stderr.contains(wrong),
                    "ulimit -n {limit}: fd exhaustion reported as '{wrong}'\n{}",
                    r.dump()
                );
            }
            if r.code() != 0 {
                failures += 1;
                let line = r.stderr.trim().lines().last().unwrap_or_default();
                assert!(
                    line.contains("ulimit -n") || line.contains("file-max"),
                    "ulimit -n {limit}: the error does not say to raise the limit\n{}",
                    r.dump()
                );
            }
        }
    }
    common::report_line(&format!(
        "{failures} runs of 74 under ulimit -n 4..40 failed, each naming the limit"
    ));
    assert!(
        failures > 0,
        "even ulimit -n 4 worked: the test tests nothing"
    );
}
