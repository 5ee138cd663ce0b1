//! `-o FIFO` for every command that writes one while a target runs (record, stat,
//! probe, offcpu, bench --save, flamegraph):
//! - no reader: hwprof waits for one before anything runs, says so, and SIGINT or
//!   SIGTERM ends it (exit 130 or 143) with nothing started and nothing left behind (no
//!   temporary file or scratch directory, no workload, no uprobe in tracefs). It used to
//!   block in open(2) with both signals ignored;
//! - a reader that comes late gets the whole output;
//! - a reader that stops reading: the stop still ends hwprof, after a grace period or
//!   at once on a second signal.
//!
//! The time limits are hang detectors ([`TIMEOUT`], 30 s), never timing assertions.

#[macro_use]
mod common;

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::os::fd::AsFd;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::*;

/// The note hwprof prints while a FIFO has no reader.
const WAITING: &str = "waiting for a reader of the FIFO";

/// hwprof running in the background (its own process group, killed on drop), its
/// stderr read line by line as it comes.
struct Running {
    bg: Background,
    lines: mpsc::Receiver<String>,
    stderr: String,
}

impl Running {
    /// `hwprof ARGS` with `TMPDIR=dir` (scratch directories go there, to be checked).
    fn spawn(args: &[String], dir: &Path) -> Running {
        let mut cmd = Command::new(hwprof_bin());
        cmd.args(args).env("TMPDIR", dir);
        let mut bg = Background::spawn(&mut cmd);
        let err = bg.child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for l in BufReader::new(err).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Running {
            bg,
            lines,
            stderr: String::new(),
        }
    }

    /// Waits for a stderr line containing `what` (hang detector: [`TIMEOUT`]).
    fn wait_for(&mut self, what: &str) {
        let start = Instant::now();
        loop {
            let left = TIMEOUT.saturating_sub(start.elapsed());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    let found = l.contains(what);
                    self.stderr.push_str(&l);
                    self.stderr.push('\n');
                    if found {
                        return;
                    }
                }
                Err(_) => panic!(
                    "`{}`: no line with {what:?} within {TIMEOUT:?}\n{}",
                    self.bg.cmdline, self.stderr
                ),
            }
        }
    }

    /// Waits for the exit (hang detector: [`TIMEOUT`]); returns the status and stderr.
    fn wait(mut self) -> (ExitStatus, String) {
        let Some((st, _, _)) = self.bg.wait_timeout(TIMEOUT) else {
            panic!(
                "`{}` did not end within {TIMEOUT:?}\n{}",
                self.bg.cmdline, self.stderr
            );
        };
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.stderr.push_str(&l);
            self.stderr.push('\n');
        }
        (st, self.stderr)
    }
}

/// Processes whose command line holds `token` (the workloads of one test).
fn processes_with(token: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(cmd) = fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(token) {
            found.push(format!("{}: {cmd}", e.file_name().to_string_lossy()));
        }
    }
    found
}

/// The uprobe definitions of hwprof process `pid` left in tracefs.
fn uprobes_of(pid: i32) -> Vec<String> {
    let group = format!("hwprof_{pid}/");
    fs::read_to_string("/sys/kernel/tracing/uprobe_events")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&group))
        .map(String::from)
        .collect()
}

/// The commands that write `-o out` while a target runs, each running `target` (a
/// command line).
fn writers(out: &str, target: &[String]) -> Vec<(&'static str, Vec<String>)> {
    let v = |a: &[&str]| {
        a.iter()
            .map(|x| x.to_string())
            .chain(std::iter::once("--".to_string()))
            .chain(target.iter().cloned())
            .collect::<Vec<_>>()
    };
    let probe = format!("uprobe:{}:work", wl("probe_lat"));
    vec![
        ("record", v(&["record", "-e", "cpu-clock", "-o", out])),
        ("stat", v(&["stat", "-e", "task-clock", "-o", out])),
        ("probe", v(&["probe", &probe, "-o", out])),
        ("offcpu", v(&["offcpu", "-o", out])),
        ("flamegraph", v(&["flamegraph", "-o", out])),
        (
            "bench",
            v(&["bench", "-r", "2", "--warmup", "0", "--save", out]),
        ),
    ]
}

/// No reader: each writer waits (saying so) before anything runs, and SIGINT or SIGTERM
/// ends it with 128 + the signal, nothing started and nothing left.
#[test]
fn a_fifo_without_a_reader_ends_on_sigint_and_sigterm_leaving_nothing() {
    let probes = require_tracefs("probe -o FIFO");
    let dir = fresh_dir("fifo_noreader");
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let started = dir.join("started");
    let token = format!("hwprof-fifo-noreader-{}", std::process::id());
    // The workload would say it started; it never must. `token` names its processes.
    let target = vec![
        "sh".to_string(),
        "-c".to_string(),
        format!(
            "touch {}; exec {} 100000 1000 0 0",
            s(&started),
            wl("probe_lat")
        ),
        token.clone(),
    ];
    for (name, args) in writers(&s(&fifo), &target) {
        if name == "probe" && !probes {
            continue;
        }
        for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
            let mut r = Running::spawn(&args, &dir);
            let pid = r.bg.pid();
            r.wait_for(WAITING);
            // Only hwprof gets the signal, as from `kill`; a terminal's Ctrl-C reaches
            // the whole group, which here holds no one else.
            assert!(signal(pid, sig), "kill {pid}");
            let (st, err) = r.wait();
            assert_eq!(st.code(), Some(code), "{name}, signal {sig}: {st:?}\n{err}");
            assert!(
                err.contains("stopped while waiting for a reader"),
                "{name}: {err}"
            );
            assert!(!started.exists(), "{name}: the workload started\n{err}");
            assert_eq!(entries(&dir), ["fifo"], "{name} left files behind\n{err}");
            assert!(
                fs::symlink_metadata(&fifo)
                    .expect("lstat")
                    .file_type()
                    .is_fifo()
            );
            assert_eq!(processes_with(&token), Vec::<String>::new(), "{name}");
            assert_eq!(uprobes_of(pid), Vec::<String>::new(), "{name}");
        }
    }
    report!(
        "record, stat, probe, offcpu, flamegraph, bench --save: -o FIFO without a reader ends on SIGINT (130) and SIGTERM (143), nothing run or left"
    );
}

/// What a reader gets from the FIFO, read to the end in a thread once the writer is
/// waiting for it.
fn read_late(fifo: &Path) -> thread::JoinHandle<Vec<u8>> {
    let fifo = fifo.to_path_buf();
    thread::spawn(move || {
        let mut f = fs::File::open(&fifo).expect("open the FIFO for reading");
        let mut v = Vec::new();
        f.read_to_end(&mut v).expect("read the FIFO");
        v
    })
}

/// A reader that opens the FIFO after hwprof started waiting gets the whole output.
#[test]
fn a_late_reader_gets_the_whole_output() {
    let probes = require_tracefs("probe -o FIFO");
    let dir = fresh_dir("fifo_late");
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let v = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let (two_hot, sleeper, lat) = (wl("two_hot"), wl("sleeper"), wl("probe_lat"));
    let out = s(&fifo);
    let probe = format!("uprobe:{lat}:work");
    let cases = [
        (
            "record",
            v(&[
                "record",
                "-e",
                "cpu-clock",
                "-o",
                &out,
                "--",
                &two_hot,
                "200",
            ]),
        ),
        (
            "stat",
            v(&["stat", "-e", "task-clock", "-o", &out, "--", &two_hot, "20"]),
        ),
        (
            "probe",
            v(&[
                "probe", &probe, "-o", &out, "--", &lat, "20", "100", "0", "0",
            ]),
        ),
        (
            "offcpu",
            v(&["offcpu", "-o", &out, "--", &sleeper, "3", "10"]),
        ),
        (
            "flamegraph",
            v(&["flamegraph", "-o", &out, "--", &two_hot, "200"]),
        ),
        (
            "bench",
            v(&[
                "bench", "-r", "2", "--warmup", "0", "--save", &out, "--", "true",
            ]),
        ),
    ];
    for (name, args) in cases {
        if name == "probe" && !probes {
            continue;
        }
        let mut r = Running::spawn(&args, &dir);
        r.wait_for(WAITING);
        let reader = read_late(&fifo);
        let (st, err) = r.wait();
        assert!(st.success(), "{name}: {st:?}\n{err}");
        let got = reader.join().expect("reader");
        assert_eq!(entries(&dir), ["fifo"], "{name} left files behind\n{err}");
        let text = String::from_utf8_lossy(&got);
        match name {
            "record" => {
                // perf's pipe mode, read back whole.
                assert_eq!(got.get(..8), Some(&b"PERFILE2"[..]), "{err}");
                let data = dir.join("late.data");
                fs::write(&data, &got).expect("write");
                let rep = hwprof(&["report", "-i", &s(&data), "--sort", "sym"]);
                rep.assert_ok();
                assert!(rep.stdout.contains("hot_a"), "{}", rep.dump());
                fs::remove_file(&data).expect("rm");
            }
            "stat" => assert!(text.contains("task-clock"), "{text}"),
            "probe" => assert!(text.contains("work"), "{text}"),
            "offcpu" | "flamegraph" => {
                assert!(text.starts_with("<?xml"), "{name}: {text:.200}");
                assert!(text.trim_end().ends_with("</svg>"), "{name}: cut short");
            }
            _ => {
                let v: serde_json::Value = serde_json::from_slice(&got).expect("whole JSON");
                assert!(v["schema"].is_string(), "{text:.200}");
            }
        }
    }
}

/// A reader that opens the FIFO and never reads: once the pipe is full, `record`
/// blocks in a write. A stop ends it after the grace period (a second stop at once),
/// with 128 + the signal, the workload ended and nothing left.
#[test]
fn a_reader_that_stops_reading_cannot_keep_hwprof_running() {
    let dir = fresh_dir("fifo_stalled");
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let token = format!("hwprof-fifo-stalled-{}", std::process::id());
    // A busy loop that never ends by itself: only hwprof's stop ends it.
    let target = ["sh", "-c", "while :; do :; done", token.as_str()];
    for (signals, code) in [
        (&[libc::SIGTERM][..], 143),
        (&[libc::SIGINT, libc::SIGINT][..], 130),
    ] {
        let mut args = vec!["record", "-e", "cpu-clock", "-F", "4000", "-g", "-o"]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        args.push(s(&fifo));
        args.push("--".into());
        args.extend(target.iter().map(|x| x.to_string()));
        let mut r = Running::spawn(&args, &dir);
        let pid = r.bg.pid();
        // Opened for reading, never read.
        let held = fs::File::open(&fifo).expect("open the FIFO for reading");
        // Wait until the pipe is full (64 KiB by default, in pages that the last writes
        // may leave partly filled): hwprof's writes block now.
        let start = Instant::now();
        while hwprof_pmu::sys::unread_bytes(held.as_fd()).unwrap_or(0) < 60 << 10 {
            assert!(
                r.bg.alive(),
                "record ended before filling the pipe: {}",
                r.stderr
            );
            assert!(start.elapsed() < TIMEOUT, "the pipe never filled");
            thread::sleep(Duration::from_millis(20));
        }
        for (i, &sig) in signals.iter().enumerate() {
            if i > 0 {
                thread::sleep(Duration::from_millis(300));
            }
            assert!(signal(pid, sig), "kill {pid}");
        }
        let (st, err) = r.wait();
        drop(held);
        assert_eq!(
            st.code(),
            Some(code),
            "{signals:?}: {st:?} {:?}\n{err}",
            st.signal()
        );
        assert!(err.contains("the output is incomplete"), "{err}");
        assert_eq!(entries(&dir), ["fifo"], "files left behind\n{err}");
        assert_eq!(
            processes_with(&token),
            Vec::<String>::new(),
            "workload left"
        );
    }
    report!(
        "record -o FIFO with a reader that stopped reading: SIGTERM ends it after the grace period, a second SIGINT at once"
    );
}

/// `flamegraph --all` opens its per-event files after recording: a FIFO at one of
/// those names is waited for under the stop as every other output (it used to block in
/// open(2), deaf to SIGINT and SIGTERM). Without a reader, a signal ends it with 128 +
/// the signal and nothing left (no scratch recording, no temporary file); a reader
/// that comes gets the whole graph. When Ctrl-C ended the recording, the FIFO waits
/// for its reader until a second Ctrl-C.
#[test]
fn flamegraph_all_outputs_opened_after_recording_wait_under_the_stop() {
    let dir = fresh_dir("fifo_fg_all");
    let out = dir.join("g.svg");
    // The first event's file is the FIFO: nothing is written before it.
    let fifo = dir.join("g.cpu-clock.svg");
    mkfifo(&fifo);
    let args = |target: &[String]| {
        let mut v: Vec<String> = ["flamegraph", "--all", "-e", "cpu-clock,task-clock", "-o"]
            .iter()
            .map(|x| x.to_string())
            .collect();
        v.push(s(&out));
        v.push("--".into());
        v.extend(target.iter().cloned());
        v
    };
    let short = vec![wl("two_hot"), "300".to_string()];
    let names = ["g.cpu-clock.svg".to_string()];

    // No reader: SIGINT and SIGTERM end the wait.
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let mut r = Running::spawn(&args(&short), &dir);
        let pid = r.bg.pid();
        r.wait_for(WAITING);
        assert!(signal(pid, sig), "kill {pid}");
        let (st, err) = r.wait();
        assert_eq!(st.code(), Some(code), "signal {sig}: {st:?}\n{err}");
        assert!(err.contains("stopped while waiting for a reader"), "{err}");
        assert_eq!(entries(&dir), names, "files left behind\n{err}");
    }

    // A reader that comes late gets the whole graph; the other event's file is written.
    let mut r = Running::spawn(&args(&short), &dir);
    r.wait_for(WAITING);
    let reader = read_late(&fifo);
    let (st, err) = r.wait();
    assert!(st.success(), "{st:?}\n{err}");
    let got = String::from_utf8_lossy(&reader.join().expect("reader")).into_owned();
    assert!(got.starts_with("<?xml"), "{got:.200}");
    assert!(got.trim_end().ends_with("</svg>"), "cut short");
    assert_eq!(
        entries(&dir),
        ["g.cpu-clock.svg", "g.task-clock.svg"],
        "{err}"
    );
    fs::remove_file(dir.join("g.task-clock.svg")).expect("rm");

    // Ctrl-C ends the recording (the workload never ends by itself); the FIFO is then
    // waited for until a second Ctrl-C.
    let started = dir.join("started");
    let long = vec![
        "sh".to_string(),
        "-c".to_string(),
        format!("touch {}; exec {} 1000000", s(&started), wl("two_hot")),
    ];
    let mut r = Running::spawn(&args(&long), &dir);
    let pid = r.bg.pid();
    let start = Instant::now();
    while !started.exists() {
        assert!(start.elapsed() < TIMEOUT, "the workload never started");
        thread::sleep(Duration::from_millis(20));
    }
    // Some samples first.
    thread::sleep(Duration::from_millis(300));
    assert!(signal(pid, libc::SIGINT), "kill {pid}");
    r.wait_for(WAITING);
    assert!(r.bg.alive(), "gave up at the first stop\n{}", r.stderr);
    assert!(signal(pid, libc::SIGINT), "kill {pid}");
    let (st, err) = r.wait();
    assert_eq!(st.code(), Some(130), "{st:?}\n{err}");
    assert!(err.contains("stopped while waiting for a reader"), "{err}");
    fs::remove_file(&started).expect("rm");
    assert_eq!(entries(&dir), names, "files left behind\n{err}");
    report!(
        "flamegraph --all with a FIFO at a per-event name: SIGINT (130) and SIGTERM (143) end the wait, a late reader gets the graph, after a Ctrl-C that ended the recording a second one ends the wait"
    );
}
