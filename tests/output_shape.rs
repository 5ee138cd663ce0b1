//! Where hwprof's output goes and what shape it has (issue 12): data and reports never
//! mix with a target's own output (stderr or `-o FILE`, as `stat`; when the data goes
//! to stdout, the target's stdout goes to stderr), a closed stdout pipe ends any command
//! quietly with exit 0, `stat` prints its block after the command and each `-I`
//! interval over its own length, Ctrl-C on an attached `stat` exits 130 as perf does,
//! and the wording and JSON fields users read: counts in the singular when they are
//! 1, whole off-CPU stacks, bench's event names, the kernel's pid -1, and flamegraph's
//! `-e/--event` (records) against `--draw-event` (picks one event to draw).

#[macro_use]
mod common;

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::*;

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `chatty N SPIN_MS SLEEP_MS`: prints `chatty I` lines on stdout, nothing on stderr.
fn chatty(n: u32, spin_ms: u32, sleep_ms: u32) -> Vec<String> {
    vec![
        wl("chatty"),
        n.to_string(),
        spin_ms.to_string(),
        sleep_ms.to_string(),
    ]
}

/// The target's own lines (`chatty 0`...) in `text`.
fn chatty_lines(text: &str) -> usize {
    text.lines()
        .filter(|l| {
            l.strip_prefix("chatty ")
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .count()
}

/// `args` followed by `--` and `cmd`.
fn with_cmd(args: &[&str], cmd: &[String]) -> Vec<String> {
    let mut v: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    v.push("--".into());
    v.extend(cmd.iter().cloned());
    v
}

/// Runs `hwprof ARGS` in `dir`.
fn hwprof_in(dir: &Path, args: &[String]) -> Run {
    let mut cmd = Command::new(hwprof_bin());
    cmd.args(args).current_dir(dir);
    run_cmd(&mut cmd, TIMEOUT)
}

/// A recording of `spin 300` with callchains, in `dir`.
fn recording(dir: &Path) -> PathBuf {
    let f = dir.join("spin.data");
    let r = hwprof_in(
        dir,
        &with_cmd(
            &["record", "-g", "-q", "-o", s(&f)],
            &[wl("spin"), "300".into()],
        ),
    );
    r.assert_ok();
    f
}

/// What a command did with a closed stdout.
struct Closed {
    status: ExitStatus,
    stderr: String,
    elapsed: Duration,
}

/// Runs `hwprof ARGS` in `dir` with stdout a pipe whose reader has already exited
/// (a `true` that never reads: every write is EPIPE, with no race on how much the pipe
/// holds), stderr captured, killed after [`TIMEOUT`].
fn with_closed_stdout(dir: &Path, args: &[String]) -> Closed {
    let mut reader = Command::new("true")
        .stdin(Stdio::piped())
        .spawn()
        .expect("spawn true");
    let write_end = reader.stdin.take().expect("pipe");
    reader.wait().expect("wait for true");
    let start = Instant::now();
    let mut child = Command::new(hwprof_bin())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("spawn hwprof");
    let mut err = child.stderr.take().expect("stderr");
    let errs = thread::spawn(move || {
        let mut t = String::new();
        let _ = err.read_to_string(&mut t);
        t
    });
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if start.elapsed() > TIMEOUT {
            signal(-(child.id() as i32), libc::SIGKILL);
            let _ = child.wait();
            panic!("hwprof {args:?} with a closed stdout did not end within {TIMEOUT:?}");
        }
        thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    signal(-(child.id() as i32), libc::SIGKILL);
    Closed {
        status,
        stderr: errs.join().unwrap_or_default(),
        elapsed,
    }
}

/// Every command whose stdout closes early ends quietly with exit 0: no "Broken pipe",
/// no panic. Commands that run a target do it too, and a target still running (stat
/// -I writes while it runs) is stopped as on Ctrl-C rather than waited for.
#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let dir = fresh_dir("shape_closed");
    let data = recording(&dir);
    let d = s(&data).to_string();
    let target = chatty(3, 20, 0);
    let mut cmds: Vec<Vec<String>> = vec![
        vec!["list".into()],
        vec!["list".into(), "--json".into()],
        vec![
            "encode".into(),
            "--json".into(),
            "-e".into(),
            "task-clock".into(),
        ],
        vec!["script".into(), "-i".into(), d.clone()],
        vec![
            "script".into(),
            "-i".into(),
            d.clone(),
            "--format".into(),
            "jsonl".into(),
        ],
        vec!["report".into(), "-i".into(), d.clone()],
        vec!["report".into(), "-i".into(), d.clone(), "--json".into()],
        vec![
            "flamegraph".into(),
            "-i".into(),
            d.clone(),
            "--folded".into(),
        ],
        with_cmd(&["flamegraph", "--folded"], &target),
        with_cmd(&["bench", "--json", "-r", "2", "--warmup", "0"], &target),
        with_cmd(
            &[
                "bench",
                "--markdown",
                "--show-output",
                "-r",
                "2",
                "--warmup",
                "0",
            ],
            &target,
        ),
        with_cmd(&["bench", "-r", "2", "--warmup", "0"], &target),
        with_cmd(&["stat", "-o", "-"], &target),
        with_cmd(&["stat", "-x,", "-o", "-"], &target),
        with_cmd(&["record", "-q", "-o", "-"], &target),
    ];
    if require_tracefs("offcpu with a closed stdout") {
        cmds.push(with_cmd(&["offcpu", "--folded"], &chatty(3, 0, 20)));
        cmds.push(with_cmd(&["offcpu", "--report"], &chatty(3, 0, 20)));
    }
    if require_pmu("uprobe", "probe with a closed stdout") {
        let probe = format!("uprobe:{}:tick", wl("chatty"));
        cmds.push(with_cmd(&["probe", &probe, "--json", "-o", "-"], &target));
    }
    for args in &cmds {
        let c = with_closed_stdout(&dir, args);
        report!(
            "hwprof {} | (closed): {:?} in {:?}",
            args.join(" "),
            c.status,
            c.elapsed
        );
        assert_eq!(
            c.status.code(),
            Some(0),
            "hwprof {args:?} with a closed stdout: {:?}\n{}",
            c.status,
            c.stderr
        );
        assert!(
            !c.stderr.contains("Broken pipe")
                && !c.stderr.contains("panicked")
                && !c.stderr.contains("os error"),
            "hwprof {args:?}: {}",
            c.stderr
        );
    }
    // A target still running when stdout closes is stopped as on Ctrl-C (SIGINT), not
    // waited for: the first interval cannot be written.
    let c = with_closed_stdout(
        &dir,
        &with_cmd(
            &["stat", "-I", "100", "-e", "task-clock", "-o", "-"],
            &["sleep".into(), "10".into()],
        ),
    );
    report!(
        "stat -I 100 -o - -- sleep 10 | (closed): {:?} in {:?}",
        c.status,
        c.elapsed
    );
    assert_eq!(c.status.code(), Some(0), "{}", c.stderr);
    assert!(
        c.elapsed < Duration::from_secs(5),
        "stat -I kept its target running {:?} after stdout closed",
        c.elapsed
    );
    let left: Vec<String> = std::fs::read_dir(&dir)
        .expect("read dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n != "spin.data")
        .collect();
    assert!(left.is_empty(), "files left behind: {left:?}");
}

/// `hwprof list --json | head -c 1` and `hwprof script --format jsonl | head -c 1`
/// through a real pipe whose reader exits after one byte: exit 0, nothing on stderr.
#[test]
fn head_c_1_on_a_real_pipe() {
    let dir = fresh_dir("shape_head");
    let data = recording(&dir);
    for args in [
        vec!["list", "--json"],
        vec!["script", "-i", s(&data), "--format", "jsonl"],
        vec!["report", "-i", s(&data), "--json"],
    ] {
        let mut h = Command::new(hwprof_bin())
            .args(&args)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn hwprof");
        let out = h.stdout.take().expect("stdout");
        let head = Command::new("head")
            .args(["-c", "1"])
            .stdin(Stdio::from(out))
            .output()
            .expect("run head");
        let start = Instant::now();
        let status = loop {
            if let Some(st) = h.try_wait().expect("wait") {
                break st;
            }
            assert!(start.elapsed() < TIMEOUT, "hwprof {args:?} | head hangs");
            thread::sleep(Duration::from_millis(5));
        };
        let mut err = String::new();
        let _ = h.stderr.take().expect("stderr").read_to_string(&mut err);
        report!(
            "hwprof {} | head -c 1: {status:?}, head read {:?}",
            args.join(" "),
            String::from_utf8_lossy(&head.stdout)
        );
        assert_eq!(head.stdout.len(), 1);
        assert_eq!(status.code(), Some(0), "hwprof {args:?} | head: {err}");
        assert!(err.is_empty(), "hwprof {args:?} | head: {err}");
    }
}

/// Commands that run a target and write data to stdout point the target's stdout at
/// stderr: stdout holds the data only (parseable), the target's lines are on stderr.
#[test]
fn data_on_stdout_never_mixes_with_the_target_output() {
    let dir = fresh_dir("shape_mix");
    let busy = chatty(3, 40, 0);
    let mut cases: Vec<(Vec<String>, &str)> = vec![
        (with_cmd(&["flamegraph", "--folded"], &busy), "folded"),
        (
            with_cmd(
                &[
                    "bench",
                    "--json",
                    "--show-output",
                    "-r",
                    "2",
                    "--warmup",
                    "0",
                ],
                &chatty(3, 0, 0),
            ),
            "json",
        ),
        (
            with_cmd(
                &[
                    "bench",
                    "--markdown",
                    "--show-output",
                    "-r",
                    "2",
                    "--warmup",
                    "0",
                ],
                &chatty(3, 0, 0),
            ),
            "markdown",
        ),
        (
            with_cmd(&["stat", "-e", "task-clock", "-o", "-"], &busy),
            "table",
        ),
        (
            with_cmd(&["stat", "-e", "task-clock", "-x,", "-o", "-"], &busy),
            "csv",
        ),
        (
            with_cmd(&["stat", "-e", "task-clock", "-j", "-o", "-"], &busy),
            "jsonl",
        ),
    ];
    if require_tracefs("offcpu output") {
        cases.push((
            with_cmd(&["offcpu", "--folded"], &chatty(3, 0, 20)),
            "folded",
        ));
        cases.push((
            with_cmd(&["offcpu", "--report"], &chatty(3, 0, 20)),
            "report",
        ));
    }
    if require_pmu("uprobe", "probe -o -") {
        let probe = format!("uprobe:{}:tick", wl("chatty"));
        cases.push((
            with_cmd(&["probe", &probe, "--json", "-o", "-"], &chatty(3, 0, 0)),
            "json",
        ));
    }
    for (args, kind) in &cases {
        let r = hwprof_in(&dir, args);
        r.assert_ok();
        assert_eq!(
            chatty_lines(&r.stdout),
            0,
            "the target's output is in the data\n{}",
            r.dump()
        );
        assert_eq!(
            chatty_lines(&r.stderr),
            if args.iter().any(|a| a == "bench") {
                6
            } else {
                3
            },
            "the target's output goes to stderr\n{}",
            r.dump()
        );
        match *kind {
            "folded" => {
                let folded = parse_folded(&r.stdout);
                assert!(!folded.is_empty(), "{}", r.dump());
                assert!(
                    folded.iter().all(|(st, _)| st.contains(';')),
                    "{}",
                    r.dump()
                );
            }
            "json" => {
                serde_json::from_str::<serde_json::Value>(&r.stdout)
                    .unwrap_or_else(|e| panic!("stdout is not JSON ({e})\n{}", r.dump()));
            }
            "jsonl" => {
                for l in r.stdout.lines() {
                    serde_json::from_str::<serde_json::Value>(l)
                        .unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}\n{}", r.dump()));
                }
            }
            "csv" => assert!(
                r.stdout.lines().any(|l| l.contains(",task-clock,")),
                "{}",
                r.dump()
            ),
            "table" => assert!(
                r.stdout.contains("Performance counter stats"),
                "{}",
                r.dump()
            ),
            "markdown" => assert!(r.stdout.contains("#### hwprof bench"), "{}", r.dump()),
            _ => assert!(r.stdout.contains("Longest-waiting stacks"), "{}", r.dump()),
        }
        report!("hwprof {}: stdout is {kind} only", args.join(" "));
    }
    let left: Vec<String> = std::fs::read_dir(&dir)
        .expect("read dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    assert!(left.is_empty(), "files written: {left:?}");
}

/// probe prints where stat does: stderr by default (the program's stdout stays its
/// own), or `-o FILE` (a file `python3 -m json.tool` reads).
#[test]
fn probe_reports_on_stderr_or_into_o_file() {
    if !require_pmu("uprobe", "probe output") {
        return;
    }
    let dir = fresh_dir("shape_probe");
    let bin = wl("chatty");
    let probe = format!("uprobe:{bin}:tick");
    let file = dir.join("calls.json");
    let r = hwprof_in(
        &dir,
        &with_cmd(
            &["probe", &probe, "--json", "-o", s(&file)],
            &chatty(3, 0, 0),
        ),
    );
    r.assert_ok();
    assert_eq!(r.stdout, "chatty 0\nchatty 1\nchatty 2\n", "{}", r.dump());
    let text = std::fs::read_to_string(&file).expect("-o FILE written");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON file");
    assert_eq!(v["count"], 3, "{text}");
    if Command::new("python3").arg("--version").output().is_ok() {
        let ok = Command::new("python3")
            .args(["-m", "json.tool", s(&file)])
            .stdout(Stdio::null())
            .status()
            .expect("python3");
        assert!(ok.success(), "python3 -m json.tool {}", file.display());
    }
    // `2>x.json` alone: the JSON is all of stderr.
    let r = hwprof_in(
        &dir,
        &with_cmd(&["probe", &probe, "--json"], &chatty(3, 0, 0)),
    );
    r.assert_ok();
    assert_eq!(r.stdout, "chatty 0\nchatty 1\nchatty 2\n", "{}", r.dump());
    let v: serde_json::Value = serde_json::from_str(&r.stderr)
        .unwrap_or_else(|e| panic!("stderr is not the JSON ({e})\n{}", r.dump()));
    assert_eq!(v["count"], 3);
    // Text, with counts of 1 in the singular.
    let r = hwprof_in(&dir, &with_cmd(&["probe", &probe], &chatty(1, 0, 0)));
    r.assert_ok();
    assert_eq!(r.stdout, "chatty 0\n", "{}", r.dump());
    assert!(
        r.stderr.contains(":tick: 1 call (1 return, 1 timed)"),
        "{}",
        r.dump()
    );
    report!("probe: {}", r.stderr.trim());
}

/// `stat` prints its whole block once the command has ended (as perf): the command's
/// output, on the same terminal, comes before it, never inside it.
#[test]
fn stat_prints_its_block_after_the_command() {
    let dir = fresh_dir("shape_stat_block");
    let mut cmd = Command::new("sh");
    cmd.current_dir(&dir)
        .arg("-c")
        .arg("exec \"$0\" \"$@\" 2>&1")
        .arg(hwprof_bin())
        .args(with_cmd(&["stat", "-e", "task-clock"], &chatty(3, 0, 20)));
    let r = run_cmd(&mut cmd, TIMEOUT);
    r.assert_ok();
    let lines: Vec<&str> = r.stdout.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.contains("Performance counter stats"))
        .unwrap_or_else(|| panic!("no header\n{}", r.dump()));
    let last = lines
        .iter()
        .rposition(|l| chatty_lines(l) == 1)
        .unwrap_or_else(|| panic!("no program output\n{}", r.dump()));
    assert!(
        last < header,
        "the program's output is inside the table:\n{}",
        r.stdout
    );
    assert!(lines[header..].iter().any(|l| l.contains("task-clock")));
}

/// `stat -I`: each interval's "CPUs utilized" is its task-clock over its own length,
/// the last, partial one included (it was divided by the whole run).
#[test]
fn stat_intervals_use_their_own_length() {
    let r = hwprof(&[
        "stat",
        "-I",
        "100",
        "-j",
        "-e",
        "task-clock",
        "--",
        &wl("spin"),
        "250",
    ]);
    r.assert_ok();
    let rows: Vec<serde_json::Value> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert!(rows.len() >= 3, "{}", r.dump());
    let mut prev = 0.0;
    for row in &rows {
        let ts = row["interval"].as_f64().expect("interval");
        let ns = row["value"].as_f64().expect("value");
        let metric = row["metric"].as_f64().expect("metric");
        let own = ns / ((ts - prev) * 1e9);
        report!(
            "stat -I 100: at {ts:.3} s over {:.1} ms: {metric:.3} CPUs utilized, own length gives {own:.3}",
            (ts - prev) * 1e3
        );
        assert!(
            (metric - own).abs() <= 0.01 + 0.02 * own,
            "interval at {ts}: {metric} CPUs utilized, {own} over its own length\n{}",
            r.dump()
        );
        prev = ts;
    }
}

/// `stat -p`/`-a` ended by Ctrl-C exit 130, as perf, after printing the counts.
#[test]
fn stat_attached_and_interrupted_exits_130() {
    let mut target = Background::spawn(&mut Command::new(workload("wait_forever")));
    target.wait_for_line("ready");
    let pid = target.pid().to_string();
    for args in [
        vec!["stat", "-e", "task-clock", "-p", &pid],
        vec!["stat", "-e", "task-clock", "-a", "-C", "0"],
        vec!["stat", "-e", "task-clock", "-I", "100", "-p", &pid],
    ] {
        let mut h = Background::spawn(Command::new(hwprof_bin()).args(&args));
        thread::sleep(Duration::from_millis(300));
        assert!(signal(h.pid(), libc::SIGINT));
        let (status, _, err) = h
            .wait_timeout(Duration::from_secs(5))
            .unwrap_or_else(|| panic!("{args:?} did not stop on SIGINT"));
        report!("hwprof {} + SIGINT: {status:?}", args.join(" "));
        assert_eq!(status.code(), Some(130), "{args:?}\n{err}");
        assert!(err.contains("task-clock"), "counts printed\n{err}");
    }
    assert!(target.alive(), "the attached process died");
}

/// `offcpu --wall`: the widths are on- and off-CPU time, and the subtitle says so.
#[test]
fn offcpu_wall_says_its_widths_are_on_and_off_cpu_time() {
    if !require_tracefs("offcpu --wall") {
        return;
    }
    let dir = fresh_dir("shape_offcpu_wall");
    let svg = dir.join("wall.svg");
    let r = hwprof_in(
        &dir,
        &with_cmd(&["offcpu", "--wall", "-o", s(&svg)], &chatty(3, 20, 20)),
    );
    r.assert_ok();
    let text = std::fs::read_to_string(&svg).expect("svg");
    assert!(
        !text.contains("width = time off CPU"),
        "the --wall graph says its widths are off-CPU time only"
    );
    assert!(
        text.contains("on CPU ([on]") && text.contains("off CPU ([off]"),
        "the --wall subtitle names both parts"
    );
}

/// Titles count in the singular when the count is 1: "1 block", not "1 blocks".
#[test]
fn offcpu_title_says_1_block() {
    if !require_tracefs("offcpu title") {
        return;
    }
    let dir = fresh_dir("shape_offcpu_one");
    // One block of 300 ms (the short ones left out).
    let one = dir.join("one.folded");
    let r = hwprof_in(
        &dir,
        &with_cmd(
            &["offcpu", "--folded", "--min-block", "100ms", "-o", s(&one)],
            &[wl("sleeper"), "1".into(), "300".into()],
        ),
    );
    r.assert_ok();
    report!("offcpu of one 300 ms sleep: {}", r.stderr.trim());
    assert!(r.stderr.contains(" 1 block)"), "{}", r.dump());
}

/// `offcpu --report` stacks are whole: the user frames show below the kernel ones
/// (they were cut after 8 kernel frames, so a sleep's user frames never showed).
#[test]
fn offcpu_report_stacks_show_the_user_frames() {
    if !require_tracefs("offcpu --report") {
        return;
    }
    let dir = fresh_dir("shape_offcpu_report");
    let r = hwprof_in(&dir, &with_cmd(&["offcpu", "--report"], &chatty(2, 0, 50)));
    r.assert_ok();
    let stacks = r
        .stdout
        .split("# Longest-waiting stacks")
        .nth(1)
        .unwrap_or_else(|| panic!("no stacks\n{}", r.dump()));
    let first: Vec<&str> = stacks
        .lines()
        .skip(2)
        .take_while(|l| !l.contains(" ms "))
        .map(str::trim)
        .collect();
    report!("offcpu --report, first stack: {first:?}");
    assert!(first.iter().any(|f| f.ends_with("_[k]")), "{first:?}");
    assert!(first.contains(&"--"), "{first:?}");
    // The user part: libc's sleep keeps no frame pointer, so its caller's frame may be
    // skipped, but main's (or its caller's, standing for it) is there.
    let user = first.iter().skip_while(|f| **f != "--").skip(1);
    assert!(
        user.clone()
            .any(|f| *f == "main" || *f == "__libc_start_call_main"),
        "no user frames: {first:?}"
    );
}

/// bench's `settings.events` is one name per event (as the metrics are named).
#[test]
fn bench_settings_events_are_names() {
    let dir = fresh_dir("shape_bench");
    for (events, want) in [
        (vec![], None),
        (
            vec!["-e", "task-clock,page-faults", "-e", "context-switches"],
            Some(vec!["task-clock", "page-faults", "context-switches"]),
        ),
    ] {
        let mut args = vec!["bench", "--json", "-r", "2", "--warmup", "0"];
        args.extend(events);
        let r = hwprof_in(&dir, &with_cmd(&args, &["true".to_string()]));
        r.assert_ok();
        let doc: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
        let got: Vec<&str> = doc["settings"]["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| e.as_str().expect("a name"))
            .collect();
        report!("bench settings.events: {got:?}");
        let metrics: Vec<&str> = doc["metrics"]
            .as_array()
            .expect("metrics")
            .iter()
            .filter_map(|m| m["name"].as_str())
            .collect();
        for e in &got {
            assert!(!e.contains(','), "{got:?}");
            assert!(metrics.contains(e), "{e} is no metric: {metrics:?}");
        }
        if let Some(w) = want {
            assert_eq!(got, w);
        } else {
            assert!(got.len() >= 4 && got.contains(&"task-clock"), "{got:?}");
        }
    }
}

/// The kernel's pid (`(u32)-1`) is -1 in JSON, as perf prints it.
#[test]
fn kernel_pid_is_minus_one_in_json() {
    let dir = fresh_dir("shape_pid");
    let data = recording(&dir);
    let r = hwprof_in(
        &dir,
        &["script", "-i", s(&data), "--format", "jsonl"].map(String::from),
    );
    r.assert_ok();
    assert!(!r.stdout.contains("4294967295"), "{}", r.stdout);
    let kernel = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON line"))
        .find(|v| v["type"] == "mmap" && v["pid"] == -1);
    assert!(kernel.is_some(), "no kernel mmap with pid -1");
    let t = hwprof_in(&dir, &["script", "-i", s(&data)].map(String::from));
    t.assert_ok();
    assert!(!t.stdout.contains("4294967295"));
}

/// flamegraph: `-e/--event` records (perf's name), `--draw-event` picks one event of
/// a recording; `--event` on a recording is a usage error that points to it.
#[test]
fn flamegraph_event_records_and_draw_event_picks() {
    let dir = fresh_dir("shape_flame");
    let data = recording(&dir);
    let r = hwprof_in(
        &dir,
        &[
            "flamegraph",
            "-i",
            s(&data),
            "--event",
            "cpu-clock",
            "--folded",
        ]
        .map(String::from),
    );
    assert_eq!(r.code(), 2, "{}", r.dump());
    assert!(r.stderr.contains("--draw-event"), "{}", r.dump());
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.dump());
    let r = hwprof_in(
        &dir,
        &[
            "flamegraph",
            "-i",
            s(&data),
            "--draw-event",
            "cpu-clock",
            "--folded",
        ]
        .map(String::from),
    );
    r.assert_ok();
    assert!(!parse_folded(&r.stdout).is_empty());
    let out = dir.join("tc.folded");
    let r = hwprof_in(
        &dir,
        &with_cmd(
            &[
                "flamegraph",
                "--event",
                "task-clock",
                "--folded",
                "-o",
                s(&out),
            ],
            &[wl("spin"), "200".into()],
        ),
    );
    r.assert_ok();
    assert!(r.stderr.contains("(task-clock: "), "{}", r.dump());
    report!("flamegraph --event task-clock: {}", r.stderr.trim());
}
