//! Every bad input gives one clear `hwprof: ` line on stderr and a non-zero exit, never a
//! panic: unknown events and modifiers, bad PMU terms, missing tracepoints and uprobe
//! targets, bad flags, EMFILE, EACCES as an unprivileged user, missing tracefs, and a
//! command that does not exist.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

#[macro_use]
mod common;

use common::{Nobody, Run};
use hwprof_testkit::{Why, skip};

const BIN: &str = env!("CARGO_BIN_EXE_hwprof");

/// Longest any single invocation may take before it counts as hung.
const TIMEOUT: Duration = Duration::from_secs(5);

/// A `hwprof` command with a clean environment for the variables hwprof reads.
fn hwprof(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args).env_remove("HWPROF_TRACEFS").env("LC_ALL", "C");
    c
}

/// Runs `cmd` to completion (stdin closed, its own process group, killed and failed
/// after [`TIMEOUT`]).
fn run(cmd: &mut Command) -> Run {
    common::run_cmd(cmd, TIMEOUT)
}

/// What a bad input must produce.
struct Expect {
    /// Acceptable exit codes.
    codes: &'static [i32],
    /// Substrings stderr must contain (case-insensitive); `a|b` accepts either.
    contains: Vec<String>,
    /// A flag error: clap may add a usage hint after the `hwprof: ` line.
    flag_error: bool,
}

fn is_usage_hint(line: &str) -> bool {
    let l = line.to_ascii_lowercase();
    ["usage", "--help", "possible values", "tip:"]
        .iter()
        .any(|h| l.contains(h))
}

/// Checks `out` against `exp`; returns every problem found.
fn check(out: &Run, exp: &Expect) -> Vec<String> {
    let mut problems = Vec::new();
    match out.status.code() {
        None => problems.push("killed by a signal".to_string()),
        Some(0) => problems.push("exit code 0, expected a failure".to_string()),
        Some(c) if !exp.codes.contains(&c) => {
            problems.push(format!("exit code {c}, expected one of {:?}", exp.codes))
        }
        Some(_) => {}
    }
    for (stream, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        if text.contains("panicked") {
            problems.push(format!("{stream} says 'panicked'"));
        }
    }
    if !out.stdout.trim().is_empty() {
        problems.push("stdout is not empty".to_string());
    }
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    match lines.first() {
        None => problems.push("stderr is empty".to_string()),
        Some(first) if !first.starts_with("hwprof: ") => {
            problems.push("the first stderr line does not start with 'hwprof: '".to_string())
        }
        Some(_) => {}
    }
    let extra = lines.iter().skip(1);
    if exp.flag_error {
        if let Some(l) = extra.clone().find(|l| !is_usage_hint(l)) {
            problems.push(format!("more than one line besides a usage hint: {l:?}"));
        }
    } else if lines.len() > 1 {
        problems.push(format!("{} lines on stderr, expected one", lines.len()));
    }
    let lower = out.stderr.to_ascii_lowercase();
    for want in &exp.contains {
        if !want
            .split('|')
            .any(|w| lower.contains(&w.to_ascii_lowercase()))
        {
            problems.push(format!("stderr does not contain {want:?}"));
        }
    }
    problems
}

fn assert_error(what: &str, out: &Run, exp: &Expect) {
    let problems = check(out, exp);
    assert!(
        problems.is_empty(),
        "{what}: {}\n--- exit {:?}\n--- stdout\n{}--- stderr\n{}",
        problems.join("; "),
        out.status.code(),
        out.stdout,
        out.stderr
    );
}

fn expect(codes: &'static [i32], contains: &[&str]) -> Expect {
    Expect {
        codes,
        contains: contains.iter().map(|s| s.to_string()).collect(),
        flag_error: false,
    }
}

fn flag(codes: &'static [i32], contains: &[&str]) -> Expect {
    Expect {
        flag_error: true,
        ..expect(codes, contains)
    }
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hwprof-errors-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("creating a temp dir");
    d
}

#[test]
fn bad_inputs_give_one_line_and_the_right_exit_code() {
    assert!(
        !Path::new("/proc/999999").exists(),
        "PID 999999 exists on this machine: the test needs a free PID"
    );
    let dir = temp_dir("json");
    let bad_json = dir.join("bad.json");
    std::fs::write(&bad_json, "{\"Events\": [ {\"EventName\": \"X\", ").expect("writing bad.json");
    let bad_json = bad_json.to_str().expect("temp path is UTF-8").to_string();

    let st = |extra: &[&'static str]| -> Vec<String> {
        let mut v = vec!["stat".to_string()];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let cases: Vec<(&str, Vec<String>, Expect)> = vec![
        (
            "unknown event",
            st(&["-e", "cycels", "--", "true"]),
            expect(&[2], &["did you mean 'cycles'"]),
        ),
        (
            "bad modifier",
            st(&["-e", "cycles:z", "--", "true"]),
            expect(&[2], &["modifier", "cycles:z|'z'"]),
        ),
        (
            "too many p",
            st(&["-e", "cycles:pppp", "--", "true"]),
            expect(&[2], &["modifier|precise", "pppp"]),
        ),
        (
            "bad pmu term",
            st(&["-e", "cpu/bogus=1/", "--", "true"]),
            expect(&[2], &["bogus"]),
        ),
        (
            "unknown pmu",
            st(&["-e", "nopmu/x/", "--", "true"]),
            expect(&[2], &["nopmu"]),
        ),
        (
            "unbalanced group",
            st(&["-e", "{cycles", "--", "true"]),
            expect(&[2], &["}|unbalanced|unclosed"]),
        ),
        (
            "unknown tracepoint",
            st(&["-e", "sched:no_such_tp", "--", "true"]),
            expect(&[2], &["no_such_tp"]),
        ),
        (
            "uprobe on a missing symbol",
            st(&["-e", "uprobe:/bin/true:no_such_fn", "--", "true"]),
            expect(&[2], &["no_such_fn"]),
        ),
        (
            "uprobe on a missing file",
            st(&["-e", "uprobe:/nonexistent/bin/prog:main", "--", "true"]),
            expect(&[2], &["/nonexistent/bin/prog"]),
        ),
        (
            "no such process",
            st(&["-e", "task-clock", "-p", "999999"]),
            expect(&[1, 2], &["no such process", "999999"]),
        ),
        (
            "PID not a number",
            st(&["-e", "task-clock", "-p", "notapid"]),
            flag(&[2], &["notapid"]),
        ),
        (
            "no such CPU",
            st(&["-a", "-C", "99", "-e", "task-clock", "--", "true"]),
            expect(&[1, 2], &["99", "cpu"]),
        ),
        (
            "interval below 10 ms",
            st(&["-I", "0", "-e", "task-clock", "--", "true"]),
            flag(&[2], &["interval|-I"]),
        ),
        (
            "zero repeats",
            st(&["-r", "0", "-e", "task-clock", "--", "true"]),
            flag(&[2], &["repeat|-r"]),
        ),
        (
            "empty field separator",
            st(&["-x", "", "-e", "task-clock", "--", "true"]),
            flag(&[2], &["separator|-x"]),
        ),
        (
            "-j with -x",
            st(&["-j", "-x", ",", "-e", "task-clock", "--", "true"]),
            flag(&[2], &["-x|separator|cannot be used|json"]),
        ),
        (
            "no command and no target",
            st(&["-e", "task-clock"]),
            flag(&[2], &["command"]),
        ),
        (
            "unknown flag",
            st(&["--no-such-flag", "-e", "task-clock", "--", "true"]),
            flag(&[2], &["no-such-flag"]),
        ),
        (
            "unknown CPU model",
            ["encode", "--cpu", "pentium", "-e", "cycles"]
                .map(String::from)
                .to_vec(),
            flag(&[2], &["pentium"]),
        ),
        (
            "missing event file",
            [
                "encode",
                "--cpu",
                "skylake",
                "--event-file",
                "/nonexistent.json",
                "-e",
                "cycles",
            ]
            .map(String::from)
            .to_vec(),
            expect(&[2], &["/nonexistent.json"]),
        ),
        (
            "event file with invalid JSON",
            vec![
                "encode".into(),
                "--cpu".into(),
                "skylake".into(),
                "--event-file".into(),
                bad_json.clone(),
                "-e".into(),
                "cycles".into(),
            ],
            expect(&[2], &[&bad_json, "json"]),
        ),
    ];

    let mut failures = Vec::new();
    for (what, args, exp) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&mut hwprof(&args));
        let problems = check(&out, exp);
        if !problems.is_empty() {
            failures.push(format!(
                "{what} (hwprof {}): {}\n  exit {:?}; stderr: {:?}; stdout: {:?}",
                args.join(" "),
                problems.join("; "),
                out.status.code(),
                out.stderr,
                out.stdout
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "{} of {} bad inputs misbehave:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn missing_command_exits_127() {
    let out = run(&mut hwprof(&[
        "stat",
        "-e",
        "task-clock",
        "--",
        "/nonexistent/cmd",
    ]));
    assert_error(
        "stat -- /nonexistent/cmd",
        &out,
        &expect(&[127], &["/nonexistent/cmd"]),
    );
}

#[test]
fn emfile_says_too_many_open_files_and_how_to_fix_it() {
    let events = vec!["task-clock"; 40].join(",");
    // `exec "$0" "$@"`: hwprof replaces the shell, under a limit the shell cannot raise back.
    let out = run(Command::new("sh")
        .args([
            "-c",
            "ulimit -n 16 && exec \"$0\" \"$@\"",
            BIN,
            "stat",
            "-e",
            &events,
            "--",
            "true",
        ])
        .env_remove("HWPROF_TRACEFS")
        .env("LC_ALL", "C"));
    assert_error(
        "40 events under ulimit -n 16",
        &out,
        &expect(&[1], &["too many open files", "ulimit -n"]),
    );
}

fn tracefs_mounts() -> usize {
    // mountinfo: "... - FSTYPE SOURCE OPTIONS"
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter(|l| {
            l.split(" - ")
                .nth(1)
                .is_some_and(|t| t.starts_with("tracefs "))
        })
        .count()
}

#[test]
fn missing_tracefs_is_one_line() {
    let before = tracefs_mounts();
    let out = run(hwprof(&["stat", "-e", "sched:sched_switch", "--", "true"])
        .env("HWPROF_TRACEFS", "/nonexistent"));
    assert_error(
        "HWPROF_TRACEFS=/nonexistent, -e sched:sched_switch",
        &out,
        &expect(&[1, 2], &["tracefs", "/nonexistent|HWPROF_TRACEFS"]),
    );
    assert_eq!(
        tracefs_mounts(),
        before,
        "hwprof mounted a tracefs although HWPROF_TRACEFS named the tracefs to use (stderr: {:?})",
        out.stderr
    );
}

fn paranoid() -> i32 {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .expect("reading /proc/sys/kernel/perf_event_paranoid")
        .trim()
        .parse()
        .expect("perf_event_paranoid is a number")
}

/// Whether `text` states `perf_event_paranoid` with the value `p`
/// (`perf_event_paranoid = 2`, `perf_event_paranoid is 2`, `perf_event_paranoid: 2`...).
fn states_paranoid(text: &str, p: i32) -> bool {
    let value = p.to_string();
    text.match_indices("perf_event_paranoid").any(|(i, m)| {
        let rest = text[i + m.len()..].trim_start_matches([' ', '=', ':', '(']);
        let rest = rest.strip_prefix("is ").unwrap_or(rest).trim_start();
        rest.starts_with(&value) && !rest[value.len()..].starts_with(|c: char| c.is_ascii_digit())
    })
}

#[test]
fn system_wide_as_nobody_explains_perf_event_paranoid() {
    let Some(nobody) = Nobody::new("a") else {
        return;
    };
    let p = paranoid();
    let out = nobody.run(None, &["stat", "-a", "-e", "task-clock", "--", "true"]);
    if p <= 0 {
        eprintln!(
            "perf_event_paranoid = {p}: system-wide counting is allowed to everyone, expecting success"
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "stat -a as nobody with paranoid {p}: {}",
            out.stderr
        );
        return;
    }
    assert_error(
        "stat -a as nobody",
        &out,
        &expect(&[1], &["perf_event_paranoid", "sysctl"]),
    );
    assert!(
        states_paranoid(&out.stderr, p),
        "the message does not state the current value perf_event_paranoid = {p}: {}",
        out.stderr
    );
}

#[test]
fn per_task_as_nobody_counts_user_space_and_says_so() {
    let Some(nobody) = Nobody::new("u") else {
        return;
    };
    let p = paranoid();
    let out = nobody.run(None, &["stat", "-e", "task-clock", "--", "true"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stat -e task-clock -- true as nobody failed: {}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("panicked") && !out.stdout.contains("panicked"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("task-clock"),
        "no task-clock count in: {}",
        out.stderr
    );
    if p >= 2 {
        assert!(
            out.stderr.to_ascii_lowercase().contains("user space"),
            "perf_event_paranoid = {p} forbids counting the kernel, but hwprof does not say it counts user space only: {}",
            out.stderr
        );
    }
}

#[test]
fn record_as_nobody_falls_back_to_user_space_like_perf() {
    if paranoid() < 2 {
        skip(
            Why::KernelSetting,
            "perf_event_paranoid < 2, kernel samples are allowed here",
        );
        return;
    }
    let Some(nobody) = Nobody::new("rec") else {
        return;
    };
    let out = std::env::temp_dir().join(format!("hwprof-nobody-{}.data", std::process::id()));
    let _ = std::fs::remove_file(&out);
    let o = out.to_str().expect("utf-8 path");
    // No modifiers: perf's fallback to user space, said once.
    let r = nobody.run(None, &["record", "-e", "cpu-clock", "-o", o, "--", "true"]);
    assert_eq!(r.status.code(), Some(0), "{}", r.stderr);
    let notes: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains("user space only"))
        .collect();
    assert_eq!(notes.len(), 1, "{}", r.stderr);
    assert!(states_paranoid(notes[0], paranoid()), "{}", notes[0]);
    assert!(notes[0].contains("cpu-clock:u"), "{}", notes[0]);
    assert!(out.exists());
    let _ = std::fs::remove_file(&out);
    // Explicit kernel sampling: no fallback, one line that says why.
    let r = nobody.run(
        None,
        &["record", "-e", "cpu-clock:k", "-o", o, "--", "true"],
    );
    assert_eq!(r.status.code(), Some(1), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(states_paranoid(&r.stderr, paranoid()), "{}", r.stderr);
    assert!(!out.exists(), "no output file after a failed open");
}

/// Another user's process (`-p`, as nobody against root's): the cause is the kernel's
/// ptrace check, which no paranoid level or `:u` lifts; the message said "no permission
/// (kernel.perf_event_paranoid = 2): count user space only with 'task-clock:u'" first.
/// And the other way round (root against nobody's process) counts.
#[test]
fn another_users_process_names_ptrace_first() {
    let Some(nobody) = Nobody::new("ptrace") else {
        return;
    };
    let mut root_proc = common::Background::spawn(Command::new("sleep").arg("30"));
    let pid = root_proc.pid().to_string();
    let out = nobody.dir.join("out/p.data");
    let out = out.to_str().expect("utf-8 path");
    for args in [
        &["stat", "-e", "task-clock", "-p", &pid, "--duration", "0.2"][..],
        &["stat", "-e", "task-clock:u", "-p", &pid, "--", "true"][..],
        &[
            "record",
            "-e",
            "cpu-clock",
            "-o",
            out,
            "-p",
            &pid,
            "--duration",
            "0.2",
        ][..],
    ] {
        let r = nobody.run(None, args);
        assert_eq!(r.status.code(), Some(1), "{}", r.dump());
        let line = r.stderr.trim();
        assert_eq!(line.lines().count(), 1, "{}", r.dump());
        let cause = format!("process {pid} belongs to root (uid 0)");
        assert!(line.contains(&cause), "{}", r.dump());
        assert!(line.contains("CAP_SYS_PTRACE"), "{}", r.dump());
        // The paranoid level is not offered as the way out.
        assert!(
            !line.contains("sysctl") && !line.contains("count user space only"),
            "{}",
            r.dump()
        );
    }
    if common::pmu_exists("uprobe") {
        let bin = common::wl("libc_calls");
        let r = nobody.run(None, &["probe", &format!("uprobe:{bin}:main"), "-p", &pid]);
        assert_eq!(r.status.code(), Some(1), "{}", r.dump());
        let line = r.stderr.trim();
        assert!(line.contains("uprobes need root"), "{}", r.dump());
        assert!(!line.contains("ptrace_scope"), "{}", r.dump());
        assert!(line.contains("belongs to root"), "{}", r.dump());
    }
    assert!(root_proc.alive());
    // Root counts nobody's process.
    let mut nobodys = common::Background::spawn(Command::new("setpriv").args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "sleep",
        "30",
    ]));
    let pid = nobodys.pid().to_string();
    let r = run(&mut hwprof(&[
        "stat",
        "-e",
        "task-clock",
        "-p",
        &pid,
        "--duration",
        "0.2",
    ]));
    assert_eq!(r.status.code(), Some(0), "{}", r.dump());
    assert!(nobodys.alive());
}

/// Every command that starts a program gives a shell's codes when it cannot: 127 not
/// found, 126 not executable (`record -- ./nosuch` exited 1 where `stat` exited 127),
/// with one line that names the program, and writes nothing.
#[test]
fn a_command_that_cannot_run_exits_127_or_126_everywhere() {
    let dir = std::env::temp_dir().join(format!("hwprof-exec-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let noexec = dir.join("noexec");
    std::fs::write(&noexec, "#!/bin/sh\n").expect("write");
    let missing = dir.join("nosuch");
    let out = |name: &str| dir.join(name).display().to_string();
    let (data, svg, folded) = (out("r.data"), out("f.svg"), out("o.svg"));
    for (program, code) in [(&missing, 127), (&noexec, 126)] {
        let p = program.to_str().expect("utf-8 path");
        let cases: Vec<Vec<&str>> = vec![
            vec!["stat", "-e", "task-clock", "--", p],
            vec!["stat", "-a", "-e", "task-clock", "--", p],
            vec!["record", "-e", "cpu-clock", "-o", &data, "--", p],
            vec!["record", "-a", "-e", "cpu-clock", "-o", &data, "--", p],
            vec!["flamegraph", "-e", "cpu-clock", "-o", &svg, "--", p],
            vec!["offcpu", "-o", &folded, "--", p],
            vec!["bench", "-r", "2", "--", p],
        ];
        for args in cases {
            let r = run(&mut hwprof(&args));
            assert_eq!(r.status.code(), Some(code), "{}", r.dump());
            let errors: Vec<&str> = r
                .stderr
                .lines()
                .filter(|l| !l.starts_with("hwprof: note:"))
                .collect();
            assert_eq!(errors.len(), 1, "{}", r.dump());
            assert!(errors[0].contains(p), "{}", r.dump());
        }
        if common::pmu_exists("uprobe") {
            let r = run(&mut hwprof(&["probe", "uprobe:libc:getppid", "--", p]));
            assert_eq!(r.status.code(), Some(code), "{}", r.dump());
        }
    }
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("read dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n != "noexec")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    std::fs::remove_dir_all(&dir).expect("removing the scratch dir");
}
