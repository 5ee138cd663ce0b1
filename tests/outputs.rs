//! Output files of every writer (record, stat, flamegraph, offcpu, bench --save) never
//! clobber what they should not: a device or FIFO given as `-o` is written into, never
//! replaced; symlinks and files planted at temporary names are never followed or
//! consumed; perf.data is 0600 whatever the umask; a directory as `-o` fails before the
//! target starts; failures and Ctrl-C leave no temporary file; `record -o -` writes
//! perf's pipe mode, which perf and hwprof read like the file; temporaries of killed
//! processes are removed by the next run. Everything happens in private scratch
//! directories: device nodes are `mknod` copies, never the system's.

#[macro_use]
mod common;

use std::fs;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use common::*;

fn mode_of(p: &Path) -> u32 {
    fs::metadata(p).expect("metadata").permissions().mode() & 0o777
}

/// A private `/dev/null`: `mknod DIR/null c 1 3` (None, with a SKIPPED line, where this
/// user may not make device nodes).
fn private_null(dir: &Path) -> Option<PathBuf> {
    let p = dir.join("null");
    if !mknod_char(&p, 1, 3) {
        report!("SKIPPED: mknod failed (needs root): device outputs not checked");
        return None;
    }
    Some(p)
}

fn is_char_device(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_char_device())
}

/// The five writers, each writing `out` for a short workload that gives it something
/// to write. `bench --save` takes a path when the name contains a `/`.
fn writers(out: &str) -> Vec<(&'static str, Vec<String>)> {
    let two_hot = wl("two_hot");
    let sleeper = wl("sleeper");
    let v = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        (
            "record",
            v(&["record", "-e", "cpu-clock", "-o", out, "--", &two_hot, "50"]),
        ),
        (
            "stat",
            v(&["stat", "-e", "task-clock", "-o", out, "--", &two_hot, "20"]),
        ),
        (
            "flamegraph",
            v(&["flamegraph", "-o", out, "--", &two_hot, "100"]),
        ),
        (
            "offcpu",
            v(&["offcpu", "-o", out, "--", &sleeper, "3", "10"]),
        ),
        (
            "bench",
            v(&[
                "bench", "-r", "2", "--warmup", "0", "--save", out, "--", "true",
            ]),
        ),
    ]
}

#[test]
fn a_device_as_output_is_written_into_never_replaced() {
    let dir = fresh_dir("out_dev");
    let Some(null) = private_null(&dir) else {
        return;
    };
    for (name, args) in writers(&s(&null)) {
        let r = hwprof(&args);
        r.assert_ok();
        assert!(
            is_char_device(&null),
            "{name} -o NULL replaced the device node with {:?}\n{}",
            fs::symlink_metadata(&null).map(|m| m.file_type()),
            r.dump()
        );
        assert_eq!(entries(&dir), ["null"], "{name} left files behind");
    }
    assert!(is_char_device(Path::new("/dev/null")));
}

/// Runs `args` with `fifo` as its output, reading the FIFO as it goes (non-blocking, so
/// that a writer that never opens it cannot hang the test). Returns what came through.
fn run_into_fifo(args: &[String], fifo: &Path) -> (Vec<u8>, String) {
    let mut reader = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(fifo)
        .expect("open the FIFO for reading");
    let mut bg = Background::spawn(Command::new(hwprof_bin()).args(args));
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut exited = None;
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) if exited.is_some() => break,
            Ok(n) if n > 0 => {
                got.extend_from_slice(&buf[..n]);
                continue;
            }
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => panic!("reading the FIFO: {e}"),
        }
        if exited.is_none() {
            exited = bg.wait_timeout(Duration::from_millis(0));
        }
        assert!(
            start.elapsed() < TIMEOUT,
            "`{}` did not finish",
            args.join(" ")
        );
        thread::sleep(Duration::from_millis(2));
    }
    let (st, _out, err) = exited.expect("exited");
    assert!(st.success(), "`{}` failed: {st:?}\n{err}", args.join(" "));
    (got, err)
}

#[test]
fn a_fifo_as_output_gets_the_output() {
    let dir = fresh_dir("out_fifo");
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    for (name, args) in writers(&s(&fifo)) {
        let (got, err) = run_into_fifo(&args, &fifo);
        let ft = fs::symlink_metadata(&fifo).expect("lstat").file_type();
        assert!(ft.is_fifo(), "{name} replaced the FIFO with {ft:?}\n{err}");
        assert_eq!(entries(&dir), ["fifo"], "{name} left files behind");
        let text = String::from_utf8_lossy(&got);
        match name {
            // A FIFO cannot seek: perf's pipe mode (16-byte header), which hwprof reads.
            "record" => {
                assert_eq!(got.get(..8), Some(&b"PERFILE2"[..]), "{name}: {err}");
                assert_eq!(got.get(8..16), Some(&16u64.to_le_bytes()[..]));
                let data = dir.join("from_fifo.data");
                fs::write(&data, &got).unwrap();
                let rep = hwprof(&["report", "-i", &s(&data), "--sort", "sym"]);
                rep.assert_ok();
                assert!(rep.stdout.contains("hot_a"), "{}", rep.dump());
                fs::remove_file(&data).unwrap();
            }
            "stat" => assert!(text.contains("task-clock"), "{text}"),
            "flamegraph" | "offcpu" => assert!(text.contains("<svg"), "{name}: {text:.200}"),
            _ => assert!(text.contains("\"schema\""), "{name}: {text:.200}"),
        }
    }
}

/// Every temporary name the writers used before (`.NAME.hwprof-PID.tmp`,
/// `.NAME.tmp.PID`, `.hwprof-write-check.PID`, the recordings of flamegraph and offcpu),
/// for outputs named `NAME`, with `$$` for the PID (the shell that execs hwprof).
fn old_temporary_names(name: &str) -> Vec<String> {
    vec![
        format!(".{name}.hwprof-$$.tmp"),
        format!(".{name}.hwprof-$$-1.tmp"),
        format!(".{name}.tmp.$$"),
        ".hwprof-write-check.$$".to_string(),
        ".hwprof-flamegraph.$$.data".to_string(),
        ".hwprof-offcpu.$$.data".to_string(),
    ]
}

#[test]
fn links_and_files_planted_at_temporary_names_are_never_followed() {
    for plant_links in [true, false] {
        let dir = fresh_dir(if plant_links {
            "out_plant_links"
        } else {
            "out_plant_files"
        });
        let victim = dir.join("victim");
        fs::write(&victim, b"precious").unwrap();
        for (name, args) in writers("OUT") {
            let out_name = format!("out.{name}");
            let out = dir.join(&out_name);
            let args: Vec<String> = args
                .into_iter()
                .map(|a| if a == "OUT" { s(&out) } else { a })
                .collect();
            let names = old_temporary_names(&out_name);
            // The shell plants the names for its own PID, then becomes hwprof (same PID).
            let plant = if plant_links {
                format!("ln -s {} \"$n\"", s(&victim))
            } else {
                "printf planted > \"$n\"".to_string()
            };
            let script = format!(
                "cd {} && for n in {}; do {plant}; done; exec \"$@\"",
                s(&dir),
                names
                    .iter()
                    .map(|n| format!("\"{n}\""))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            let mut cmd = Command::new("sh");
            cmd.arg("-c")
                .arg(&script)
                .arg("sh")
                .arg(hwprof_bin())
                .args(&args)
                .env("TMPDIR", &dir);
            let r = run_cmd(&mut cmd, TIMEOUT);
            r.assert_ok();
            assert_eq!(
                fs::read(&victim).unwrap(),
                b"precious",
                "{name} wrote through a planted symlink\n{}",
                r.dump()
            );
            let m = fs::symlink_metadata(&out).expect("the output exists");
            assert!(m.is_file() && m.len() > 0, "{name}: output {m:?}");
            // Every planted name is still there, as planted.
            let pid_names: Vec<String> = entries(&dir)
                .into_iter()
                .filter(|n| n != "victim" && !n.starts_with("out."))
                .collect();
            assert_eq!(
                pid_names.len(),
                names.len(),
                "{name}: planted names changed: {pid_names:?}\n{}",
                r.dump()
            );
            for n in &pid_names {
                let p = dir.join(n);
                let m = fs::symlink_metadata(&p).unwrap();
                if plant_links {
                    assert!(
                        m.file_type().is_symlink(),
                        "{name}: {n} is no longer a link"
                    );
                } else {
                    assert_eq!(fs::read(&p).unwrap(), b"planted", "{name} consumed {n}");
                }
                fs::remove_file(&p).unwrap();
            }
        }
    }
}

/// Runs `hwprof ARGS` under `umask MASK`.
fn hwprof_umask(mask: &str, args: &[&str]) -> Run {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("umask {mask} && exec \"$@\""))
        .arg("sh")
        .arg(hwprof_bin())
        .args(args);
    run_cmd(&mut cmd, TIMEOUT)
}

#[test]
fn perf_data_is_private_and_reports_follow_the_umask() {
    let dir = fresh_dir("out_modes");
    let two_hot = wl("two_hot");
    for (mask, report_mode) in [("000", 0o666), ("022", 0o644)] {
        let data = dir.join(format!("u{mask}.data"));
        let r = hwprof_umask(
            mask,
            &[
                "record",
                "-e",
                "cpu-clock",
                "-o",
                &s(&data),
                "--",
                &two_hot,
                "20",
            ],
        );
        r.assert_ok();
        assert_eq!(mode_of(&data), 0o600, "perf.data at umask {mask}");
        // Replacing an existing, readable perf.data: the new one is private too.
        r.assert_ok();
        let r = hwprof_umask(
            mask,
            &[
                "record",
                "-e",
                "cpu-clock",
                "-o",
                &s(&data),
                "--",
                &two_hot,
                "20",
            ],
        );
        r.assert_ok();
        assert_eq!(mode_of(&data), 0o600);
        let kept = dir.join(format!("u{mask}.data.old"));
        assert!(kept.exists(), "the previous file is kept as .old");

        let txt = dir.join(format!("u{mask}.txt"));
        let r = hwprof_umask(
            mask,
            &["stat", "-e", "task-clock", "-o", &s(&txt), "--", "true"],
        );
        r.assert_ok();
        assert_eq!(mode_of(&txt), report_mode, "stat -o at umask {mask}");
        let svg = dir.join(format!("u{mask}.svg"));
        let r = hwprof_umask(mask, &["flamegraph", "-i", &s(&data), "-o", &s(&svg)]);
        r.assert_ok();
        assert_eq!(mode_of(&svg), report_mode, "flamegraph -o at umask {mask}");
    }
}

#[test]
fn bad_outputs_fail_before_the_target_and_failures_leave_nothing() {
    let dir = fresh_dir("out_early");
    let target_dir = dir.join("a-directory");
    fs::create_dir(&target_dir).unwrap();
    let marker = dir.join("marker");
    let touch = format!("touch {}", s(&marker));
    let mk = |cmd: &str, out: &str| -> Vec<String> {
        let mut v: Vec<String> = match cmd {
            "record" => vec!["record", "-e", "cpu-clock", "-o", out],
            "stat" => vec!["stat", "-e", "task-clock", "-o", out],
            "flamegraph" => vec!["flamegraph", "-o", out],
            "offcpu" => vec!["offcpu", "-o", out],
            _ => vec!["bench", "-r", "2", "--warmup", "0", "--save", out],
        }
        .into_iter()
        .map(String::from)
        .collect();
        v.extend(["--", "sh", "-c", &touch].map(String::from));
        v
    };
    let dir_out = format!("{}/", s(&target_dir));
    let missing = s(&dir.join("missing/out"));
    for cmd in ["record", "stat", "flamegraph", "offcpu", "bench"] {
        for out in [s(&target_dir), dir_out.clone(), missing.clone()] {
            if cmd == "bench" && out == missing {
                continue; // bench creates its baseline directory (.hwprof/baselines)
            }
            let r = hwprof(&mk(cmd, &out));
            assert_eq!(r.code(), 2, "{cmd} -o {out}: usage error\n{}", r.dump());
            assert_eq!(r.stderr.lines().count(), 1, "one line:\n{}", r.dump());
            thread::sleep(Duration::from_millis(50));
            assert!(
                !marker.exists(),
                "{cmd} -o {out} ran the target first\n{}",
                r.dump()
            );
            assert_eq!(entries(&target_dir), Vec::<String>::new());
            assert_eq!(entries(&dir), ["a-directory"], "{cmd} -o {out}");
        }
    }

    // Failures after the output is open leave no temporary file (and no output).
    let out = s(&dir.join("out"));
    let fails: Vec<Vec<&str>> = vec![
        vec![
            "record",
            "-e",
            "cpu-clock",
            "-o",
            &out,
            "--",
            "/nonexistent/cmd",
        ],
        vec![
            "stat",
            "-e",
            "task-clock",
            "-o",
            &out,
            "--",
            "/nonexistent/cmd",
        ],
        vec!["flamegraph", "-o", &out, "--", "/nonexistent/cmd"],
        vec!["offcpu", "-o", &out, "--", "/nonexistent/cmd"],
        vec!["bench", "-r", "2", "--save", &out, "--", "/nonexistent/cmd"],
        // An event that fails to open, after the output exists.
        vec!["record", "-e", "msr/tsc/", "-o", &out, "--", "true"],
        // Nothing to draw: the graph is not written. One sample per 10 s of cpu-clock (or
        // 10^10 cycles): `true` can never have one, however slow a loaded machine (or a
        // VM's stolen time) makes its millisecond; at the default -F 999 it sometimes did,
        // drew a graph and exited 0.
        vec!["flamegraph", "-c", "10000000000", "-o", &out, "--", "true"],
    ];
    for args in fails {
        let r = hwprof(&args);
        assert_ne!(r.code(), 0, "{}", r.dump());
        assert_eq!(
            entries(&dir),
            ["a-directory"],
            "`{}` left files\n{}",
            args.join(" "),
            r.dump()
        );
    }

    // Ctrl-C: the output is complete (or, for bench, not saved) and no temporary is left.
    for args in [
        vec!["record", "-e", "cpu-clock", "-o", &out, "--", "sleep", "10"],
        vec!["stat", "-e", "task-clock", "-o", &out, "--", "sleep", "10"],
        vec!["bench", "-r", "5", "--save", &out, "--", "sleep", "10"],
    ] {
        let mut bg = Background::spawn(Command::new(hwprof_bin()).args(&args));
        thread::sleep(Duration::from_millis(500));
        assert!(signal(bg.pid(), libc::SIGINT));
        let (_st, _o, err) = bg
            .wait_timeout(Duration::from_secs(15))
            .expect("hwprof exits after SIGINT");
        let left: Vec<String> = entries(&dir)
            .into_iter()
            .filter(|n| n != "a-directory" && n != "out")
            .collect();
        assert!(
            left.is_empty(),
            "`{}` + SIGINT left {left:?}\n{err}",
            args.join(" ")
        );
        let _ = fs::remove_file(&out);
    }
}

/// The rows of a `--stdio --sort sym` report with a samples column (hwprof's, or perf's
/// with `-n`): symbol -> overhead %, and the total of the samples column.
fn report_rows(text: &str) -> (std::collections::BTreeMap<String, f64>, u64) {
    let mut rows = std::collections::BTreeMap::new();
    let mut samples = 0;
    for l in text.lines() {
        let l = l.trim();
        if l.starts_with('#') || !l.contains('%') {
            continue;
        }
        let mut it = l.split_whitespace();
        let Some(pct) = it
            .next()
            .and_then(|p| p.trim_end_matches('%').parse::<f64>().ok())
        else {
            continue;
        };
        samples += it.next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
        let sym = it.next_back().unwrap_or("").to_string();
        *rows.entry(sym).or_insert(0.0) += pct;
    }
    (rows, samples)
}

/// `sh -c SCRIPT` with `$0` = hwprof and `$1` = the workload.
fn sh(script: &str, workload: &str) -> Run {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(script).arg(hwprof_bin()).arg(workload);
    run_cmd(&mut cmd, TIMEOUT)
}

#[test]
fn record_to_stdout_is_pipe_mode_that_perf_and_hwprof_read() {
    let dir = fresh_dir("out_pipe");
    let two_hot = wl("two_hot");
    let piped = dir.join("piped.data");
    // Through a real pipe; the workload's own stdout ("rounds ...") must not get in.
    let r = sh(
        &format!(
            "\"$0\" record -e cpu-clock -o - -- \"$1\" 400 | cat > {}",
            s(&piped)
        ),
        &two_hot,
    );
    r.assert_ok();
    assert!(
        r.stderr.contains("rounds"),
        "the workload's stdout goes to stderr\n{}",
        r.dump()
    );
    assert!(!dir.join("-").exists(), "no file named -");
    let bytes = fs::read(&piped).unwrap();
    assert_eq!(bytes.get(..8), Some(&b"PERFILE2"[..]));
    assert_eq!(
        bytes.get(8..16),
        Some(&16u64.to_le_bytes()[..]),
        "pipe header"
    );
    assert!(
        !String::from_utf8_lossy(&bytes).contains("rounds"),
        "workload output in the data"
    );
    let summary: u64 = r
        .stderr
        .lines()
        .find(|l| l.starts_with("[ hwprof record:"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no summary\n{}", r.dump()));
    assert!(summary > 50, "{}", r.dump());

    let ours = sh(
        &format!("exec \"$0\" report -i - --sort sym < {}", s(&piped)),
        "",
    );
    ours.assert_ok();
    let (h_rows, h_samples) = report_rows(&ours.stdout);
    assert_eq!(h_samples, summary, "{}", ours.dump());
    let top = |m: &std::collections::BTreeMap<String, f64>| {
        m.iter()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(k, v)| (k.clone(), *v))
            .unwrap_or_default()
    };
    assert_eq!(top(&h_rows).0, "hot_a", "{}", ours.stdout);

    if require_perf("perf report -i - on hwprof's pipe mode") {
        let theirs = sh(
            &format!(
                "exec perf report -i - --stdio -n --no-children --sort sym < {}",
                s(&piped)
            ),
            "",
        );
        theirs.assert_ok();
        let (p_rows, p_samples) = report_rows(&theirs.stdout);
        assert_eq!(p_samples, summary, "{}", theirs.dump());
        for sym in ["hot_a", "hot_b"] {
            let (a, b) = (h_rows.get(sym), p_rows.get(sym));
            assert!(
                a.zip(b).is_some_and(|(a, b)| (a - b).abs() < 0.015),
                "{sym}: hwprof {a:?}% vs perf {b:?}%"
            );
        }
        // Straight through a pipe into perf, and perf script's samples.
        let direct = sh(
            "\"$0\" record -e cpu-clock -o - -- \"$1\" 200 2>/dev/null | perf report -i - --stdio -n --no-children --sort sym",
            &two_hot,
        );
        direct.assert_ok();
        assert_eq!(
            top(&report_rows(&direct.stdout).0).0,
            "hot_a",
            "{}",
            direct.dump()
        );
        let script = sh(
            &format!("exec perf script -i - -F comm,tid < {}", s(&piped)),
            "",
        );
        script.assert_ok();
        let n = script
            .stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .count() as u64;
        assert_eq!(n, summary, "perf script samples");

        // The file-mode recording of the same workload agrees on what is hot.
        let file = dir.join("file.data");
        hwprof(&[
            "record",
            "-e",
            "cpu-clock",
            "-o",
            &s(&file),
            "--",
            &two_hot,
            "400",
        ])
        .assert_ok();
        let f = perf(&[
            "report",
            "-i",
            &s(&file),
            "--stdio",
            "--no-children",
            "--sort",
            "sym",
        ]);
        f.assert_ok();
        let (f_rows, _) = report_rows(&f.stdout);
        assert_eq!(top(&f_rows).0, "hot_a");
        let (fa, pa) = (f_rows["hot_a"], p_rows["hot_a"]);
        assert!((fa - pa).abs() < 12.0, "hot_a: file {fa}% vs pipe {pa}%");
    }

    // Tracepoints in pipe mode carry their formats (HEADER_TRACING_DATA).
    if require_tracefs("pipe-mode tracepoints") && require_perf("perf script -i -") {
        let tp = sh(
            "\"$0\" record -e sched:sched_switch -o - -- sleep 0.05 2>/dev/null | perf script -i -",
            "",
        );
        tp.assert_ok();
        assert!(
            tp.stdout.contains("sched:sched_switch:") && tp.stdout.contains("prev_comm="),
            "{}",
            tp.dump()
        );
    }

    // A terminal is refused (binary data), before anything runs: not checkable without
    // a terminal here; a usage error keeps stdout clean in any case.
}

/// A PID that existed and is gone (reaped).
fn dead_pid() -> i32 {
    let mut c = Command::new("true").spawn().expect("spawn true");
    let pid = c.id() as i32;
    c.wait().expect("wait");
    pid
}

#[test]
fn temporaries_of_killed_runs_are_removed_by_the_next_run() {
    let dir = fresh_dir("out_stale");
    let out = dir.join("k.data");
    // A run killed with SIGKILL mid-recording leaves its temporary file...
    let bg = Background::spawn(Command::new(hwprof_bin()).args([
        "record",
        "-e",
        "cpu-clock",
        "-o",
        &s(&out),
        "--",
        "sleep",
        "30",
    ]));
    let start = Instant::now();
    let temp = loop {
        if let Some(n) = entries(&dir)
            .into_iter()
            .find(|n| n.starts_with(".k.data.hwprof-"))
        {
            break n;
        }
        assert!(start.elapsed() < TIMEOUT, "no temporary file appeared");
        thread::sleep(Duration::from_millis(10));
    };
    let killed_pid = bg.pid();
    signal(-killed_pid, libc::SIGKILL);
    drop(bg); // reaps
    assert!(dir.join(&temp).exists(), "SIGKILL leaves {temp}");
    assert!(!out.exists());

    // ... and others: a dead PID's (removed), a live PID's (kept), a symlink with a dead
    // PID's name (kept, never followed), another output's (removed: any run writing in
    // the directory sweeps it).
    let dead = dead_pid();
    let mut live = Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("spawn sleep");
    let stale = format!(".k.data.hwprof-{dead}-AbCd1234.tmp");
    let alive = format!(".k.data.hwprof-{}-AbCd1234.tmp", live.id());
    let link = format!(".k.data.hwprof-{dead}-LinkLink.tmp");
    let other = format!(".other.data.hwprof-{dead}-AbCd1234.tmp");
    let victim = dir.join("victim");
    fs::write(&victim, b"precious").unwrap();
    for n in [&stale, &alive, &other] {
        fs::write(dir.join(n), b"x").unwrap();
    }
    symlink(&victim, dir.join(&link)).unwrap();

    let r = hwprof(&["record", "-e", "cpu-clock", "-o", &s(&out), "--", "true"]);
    r.assert_ok();
    let _ = live.kill();
    let _ = live.wait();
    let left = entries(&dir);
    assert!(
        !left.contains(&temp),
        "the killed run's {temp} is still there: {left:?}"
    );
    assert!(!left.contains(&stale), "{left:?}");
    assert!(!left.contains(&other), "{left:?}");
    for n in [&alive, &link] {
        assert!(left.contains(n), "{n} was removed: {left:?}");
    }
    assert_eq!(fs::read(&victim).unwrap(), b"precious");
    assert!(
        fs::symlink_metadata(dir.join(&link))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// stdout on a full device (a private `mknod c 1 7`, as /dev/full): one line naming
/// what failed, exit 1, for the commands that print their text there (`script` as it
/// goes, its record dump, `report`, `completions`).
#[test]
fn a_full_stdout_is_one_line_naming_it() {
    let Some(f) = fixture("perf.data.callgraph-3.8") else {
        return;
    };
    let dir = scratch_path("full-stdout");
    fs::create_dir_all(&dir).expect("scratch dir");
    let full = dir.join("full");
    if !mknod_char(&full, 1, 7) {
        skip(Why::Setup, "mknod c 1 7 (root)");
        return;
    }
    let f = f.display();
    for args in [
        format!("script -i {f}"),
        format!("script -D -i {f}"),
        format!("report -i {f}"),
        "completions bash".to_string(),
    ] {
        let r = run_cmd(
            Command::new("bash").args([
                "-c",
                &format!("exec {} {args} > {}", hwprof_bin(), full.display()),
            ]),
            TIMEOUT,
        );
        assert_eq!(r.code(), 1, "{args}: {}", r.dump());
        assert_eq!(
            r.stderr.trim_end(),
            "hwprof: writing to stdout: No space left on device",
            "{args}"
        );
    }
    let _ = fs::remove_dir_all(&dir);
}
