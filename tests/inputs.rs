//! Inputs that are not what they claim to be never hurt hwprof: `/dev/zero`,
//! `/dev/urandom`, FIFOs nobody writes to and directories given as perf.data (`-i`), as
//! a pipe-mode stream on stdin (`-i -`), as a uprobe binary, a bench baseline or an
//! event file; an MMAP2 record naming a FIFO, a device or a directory; a FIFO where
//! blazesym looks for debug files; out-of-range durations; PID lists with empty items;
//! and an OS error printed once. Each case runs under a memory limit (`ulimit -v`) and a
//! time limit, and must end with one `hwprof: ` line and the right exit code, never a
//! panic, a hang or unbounded memory.
//!
//! The devices are private copies made with `mknod` in a scratch directory (never the
//! real `/dev` nodes), the FIFOs are made with `mkfifo` there.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::Run;
use hwprof_pmu::attr::{Attr, sample};
use hwprof_sampler::perfdata::features::{BuildIdEntry, Features};
use hwprof_sampler::perfdata::writer::{EventEntry, Writer};

/// Address space each run may use: far above what hwprof needs for these inputs, far
/// below what reading `/dev/zero` to the end would take.
const MEMORY_KIB: u64 = 1 << 20;

/// Each run's time limit: a hang fails the test.
const LIMIT: Duration = Duration::from_secs(20);

/// A scratch directory with private device nodes (`zero`, `urandom`), FIFOs (`fifo`,
/// `fifo2`), and nothing writing to them. `None` (after a SKIPPED line) when `mknod` or
/// `mkfifo` is not allowed here.
struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new(tag: &str) -> Option<Scratch> {
        let dir = common::scratch_path(&format!("inputs-{tag}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create scratch dir");
        let ok = |c: &mut Command| c.status().is_ok_and(|s| s.success());
        let made = common::mknod_char(&dir.join("zero"), 1, 5)
            && common::mknod_char(&dir.join("urandom"), 1, 9)
            && ok(Command::new("mkfifo").arg(dir.join("fifo")))
            && ok(Command::new("mkfifo").arg(dir.join("fifo2")));
        if !made {
            report!("SKIPPED: mknod/mkfifo not permitted here (needs root): {tag}");
            let _ = std::fs::remove_dir_all(&dir);
            return None;
        }
        Some(Scratch { dir })
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `hwprof ARGS` under the memory and time limits, stdin from `stdin` (a path
/// given to the shell's `<`) or closed.
fn limited(args: &[String], stdin: Option<&str>) -> Run {
    let redirect = stdin.map_or(String::new(), |p| format!(" < '{p}'"));
    let script = format!("ulimit -v {MEMORY_KIB} || exit 99; exec \"$0\" \"$@\"{redirect}");
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .arg(common::hwprof_bin())
        .args(args)
        .env("LC_ALL", "C");
    common::run_cmd(&mut cmd, LIMIT)
}

fn argv(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// The run exited with `code` and printed one `hwprof: ` line (containing each of
/// `want`) and nothing else, and did not panic. Returns the line.
fn one_line_error(r: &Run, code: i32, want: &[&str]) -> String {
    assert_ne!(r.status.code(), Some(99), "ulimit -v failed: {}", r.dump());
    assert_eq!(
        r.status.code(),
        Some(code),
        "`{}`: expected exit {code}\n{}",
        r.cmdline,
        r.dump()
    );
    assert!(
        !r.stderr.contains("panicked") && !r.stdout.contains("panicked"),
        "`{}` panicked\n{}",
        r.cmdline,
        r.dump()
    );
    let lines: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| !l.starts_with("hwprof: note:"))
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "`{}`: one error line\n{}",
        r.cmdline,
        r.dump()
    );
    let line = lines[0];
    assert!(line.starts_with("hwprof: "), "{}", r.dump());
    for w in want {
        assert!(
            line.contains(w),
            "`{}`: the error should contain {w:?}\n{}",
            r.cmdline,
            r.dump()
        );
    }
    line.to_string()
}

#[test]
fn perf_data_that_is_not_a_regular_file_is_refused() {
    let Some(s) = Scratch::new("pd") else { return };
    let svg = s.path("out.svg");
    for (name, kind) in [
        ("zero", "character device"),
        ("urandom", "character device"),
        ("fifo", "FIFO"),
        (".", "directory"),
    ] {
        let input = s.path(name);
        for cmd in [
            argv(&["script", "-i", &input]),
            argv(&["report", "-i", &input]),
            argv(&["flamegraph", "-i", &input, "-o", &svg]),
        ] {
            let r = limited(&cmd, None);
            one_line_error(&r, 2, &[&input, kind, "not a regular file"]);
        }
    }
    assert!(!Path::new(&svg).exists(), "no output for a refused input");
}

#[test]
fn a_large_file_that_is_not_perf_data_costs_its_header() {
    let Some(s) = Scratch::new("large") else {
        return;
    };
    // 8 GiB of zeros (sparse: no disk space), far past the memory limit.
    let big = s.dir.join("big.data");
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(8 << 30))
        .unwrap();
    let input = big.display().to_string();
    let svg = s.path("out.svg");
    for cmd in [
        argv(&["script", "-i", &input]),
        argv(&["report", "-i", &input]),
        argv(&["flamegraph", "-i", &input, "-o", &svg]),
    ] {
        let r = limited(&cmd, None);
        one_line_error(&r, 1, &[&input, "not a perf.data file"]);
    }
}

#[test]
fn garbage_on_stdin_stops_at_the_header() {
    let Some(s) = Scratch::new("stdin") else {
        return;
    };
    // A valid pipe-mode header followed by endless zeros or random bytes.
    let header = s.dir.join("header");
    let mut h = b"PERFILE2".to_vec();
    h.extend_from_slice(&16u64.to_le_bytes());
    std::fs::write(&header, &h).unwrap();
    let svg = s.path("out.svg");
    for cmd in [
        argv(&["script", "-i", "-"]),
        argv(&["report", "-i", "-"]),
        argv(&["flamegraph", "-i", "-", "-o", &svg]),
    ] {
        for (dev, want) in [("zero", "PERFILE2"), ("urandom", "PERFILE2")] {
            let r = limited(&cmd, Some(&s.path(dev)));
            one_line_error(&r, 1, &["not a perf.data file", want]);
        }
        // `cat header dev | hwprof ...`: the magic is right, the first record is not.
        for dev in ["zero", "urandom"] {
            let script = format!(
                "ulimit -v {MEMORY_KIB} || exit 99; cat '{}' '{}' | \"$0\" \"$@\"",
                header.display(),
                s.path(dev)
            );
            let mut c = Command::new("sh");
            c.arg("-c").arg(script).arg(common::hwprof_bin()).args(&cmd);
            let r = common::run_cmd(&mut c, LIMIT);
            one_line_error(&r, 1, &["malformed record at offset"]);
        }
    }
}

#[test]
fn uprobe_binary_that_is_not_a_regular_file_is_refused() {
    if !common::require_pmu("uprobe", "uprobe on a device or FIFO") {
        return;
    }
    let Some(s) = Scratch::new("uprobe") else {
        return;
    };
    for (name, kind) in [("zero", "character device"), ("fifo", "FIFO")] {
        let spec = format!("uprobe:{}:f", s.path(name));
        for cmd in [
            argv(&["stat", "-e", &spec, "--", "true"]),
            argv(&["probe", &spec, "--", "true"]),
        ] {
            let r = limited(&cmd, None);
            one_line_error(&r, 2, &[&s.path(name), kind, "not a regular file"]);
        }
    }
}

#[test]
fn event_files_that_are_not_regular_or_too_large_are_refused() {
    let Some(s) = Scratch::new("evfile") else {
        return;
    };
    let big = s.dir.join("big.json");
    // Sparse: 65 MiB that take no disk space.
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(65 << 20))
        .unwrap();
    let cases = [
        (s.path("urandom"), "character device"),
        (s.path("zero"), "character device"),
        (s.path("fifo"), "FIFO"),
        (big.display().to_string(), "64 MiB"),
    ];
    for (file, want) in &cases {
        let r = limited(
            &argv(&["encode", "--event-file", file, "-e", "cycles"]),
            None,
        );
        one_line_error(&r, 2, &[file, want]);
    }
}

/// `metrics --metrics-file` reads a regular file of at most 64 MiB: a FIFO nobody
/// writes to (which an open without `O_NONBLOCK` waits on forever), a device (`/dev/zero`
/// would be read until memory runs out), a directory and a larger file are refused
/// before anything is read.
#[test]
fn metrics_files_that_are_not_regular_or_too_large_are_refused() {
    let Some(s) = Scratch::new("metricsfile") else {
        return;
    };
    let counts = s.dir.join("counts.csv");
    std::fs::write(&counts, "21,,page-faults,1000,100.00,,\n").unwrap();
    let big = s.dir.join("big.json");
    // Sparse: 65 MiB that take no disk space.
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(65 << 20))
        .unwrap();
    let cases = [
        (s.path("fifo"), "FIFO"),
        (s.path("zero"), "character device"),
        (s.path("urandom"), "character device"),
        (s.path("."), "directory"),
        (big.display().to_string(), "64 MiB"),
    ];
    for (file, want) in &cases {
        let r = limited(
            &argv(&[
                "metrics",
                "--cpu",
                "skl",
                "--counts",
                &counts.display().to_string(),
                "--metrics-file",
                file,
            ]),
            None,
        );
        one_line_error(&r, 2, &[file, want]);
    }
}

/// A baseline document as `hwprof bench --json` writes it, with one metric.
fn baseline(values: &str) -> String {
    format!(
        r#"{{"schema": "hwprof-bench/1", "hwprof_version": "0.1.0", "created": "2026-11-24T00:00:00Z",
  "name": "t", "command": ["true"],
  "machine": {{"hostname": "h", "cpu": "c", "cpuid": "i", "cpus": 2, "kernel": "k", "pmu": false}},
  "settings": {{"runs": 3, "warmup": 0, "events": ["task-clock"], "threshold_pct": 5.0,
                "confidence": 0.99, "gate": ["task-clock"]}},
  "metrics": [{{"name": "task-clock", "unit": "ns", "supported": true, "scaled": false,
                "values": {values}, "median": 500000.0, "mad": 1.0, "min": 400000.0,
                "max": 600000.0, "ci95": [400000.0, 600000.0]}}]}}"#
    )
}

#[test]
fn baselines_that_are_not_baselines_are_usage_errors() {
    let Some(s) = Scratch::new("baseline") else {
        return;
    };
    let write = |name: &str, bytes: &[u8]| -> String {
        let p = s.dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    };
    let big = s.dir.join("big.json");
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(65 << 20))
        .unwrap();
    let mut binary = vec![0x7fu8, b'E', b'L', b'F', 2, 1, 1, 0];
    binary.extend((0..4096u32).map(|i| (i * 7919 % 251) as u8 | 0x80));
    let cases: Vec<(String, &str)> = vec![
        (s.path("zero"), "character device"),
        (s.path("urandom"), "character device"),
        (s.path("fifo"), "FIFO"),
        (s.dir.display().to_string(), "directory"),
        (big.display().to_string(), "64 MiB"),
        (write("binary.json", &binary), "not UTF-8"),
        (write("empty.json", b""), "empty"),
        (write("text.json", b"main: 123 ns\n"), "not JSON"),
        (
            write(
                "negative.json",
                baseline("[500000.0, -3.0, 600000.0]").as_bytes(),
            ),
            "negative",
        ),
        (
            write("novalues.json", baseline("[]").as_bytes()),
            "no values",
        ),
        (
            write("nan.json", baseline("[500000.0, NaN]").as_bytes()),
            "not JSON",
        ),
        (
            write("null.json", baseline("[500000.0, null]").as_bytes()),
            "task-clock|null",
        ),
    ];
    for (file, want) in &cases {
        let r = limited(
            &argv(&[
                "bench",
                "-r",
                "2",
                "--warmup",
                "0",
                "--baseline",
                file,
                "--",
                "true",
            ]),
            None,
        );
        let line = one_line_error(&r, 2, &[file]);
        assert!(
            want.split('|').any(|w| line.contains(w)),
            "`{}` should say {want:?}: {line}",
            r.cmdline
        );
    }
    // The same document with sane values is a baseline.
    let good = write(
        "good.json",
        baseline("[500000.0, 400000.0, 600000.0]").as_bytes(),
    );
    let r = limited(
        &argv(&[
            "bench",
            "-r",
            "2",
            "--warmup",
            "0",
            "-e",
            "task-clock",
            "--baseline",
            &good,
            "--",
            "true",
        ]),
        None,
    );
    assert!(
        matches!(r.status.code(), Some(0 | 1)),
        "a valid baseline compares\n{}",
        r.dump()
    );
}

#[test]
fn out_of_range_durations_are_usage_errors() {
    let Some(s) = Scratch::new("durations") else {
        return;
    };
    let data = s.path("x.data");
    let svg = s.path("x.svg");
    let spin = common::wl("spin");
    let probe = format!("uprobe:{spin}:main");
    let bad = ["inf", "NaN", "1e20", "18446744073709551616", "-1", "-inf"];
    let mut runs: Vec<Vec<String>> = Vec::new();
    for v in bad {
        let d = format!("--duration={v}");
        runs.push(argv(&[
            "record",
            &d,
            "-e",
            "cpu-clock",
            "-o",
            &data,
            "--",
            "true",
        ]));
        runs.push(argv(&["flamegraph", &d, "-o", &svg, "--", "true"]));
        runs.push(argv(&["offcpu", &d, "-o", &svg, "--", "true"]));
        runs.push(argv(&[
            "offcpu",
            &format!("--min-block={v}"),
            "-o",
            &svg,
            "--",
            "true",
        ]));
        runs.push(argv(&[
            "stat",
            "-e",
            "task-clock",
            &format!("-I{v}"),
            "--",
            "true",
        ]));
        if common::pmu_exists("uprobe") {
            runs.push(argv(&["probe", &probe, &d, "--", &spin, "1"]));
            runs.push(argv(&[
                "probe",
                &probe,
                &format!("--threshold={v}"),
                "--",
                &spin,
                "1",
            ]));
        }
    }
    runs.push(argv(&[
        "stat",
        "-e",
        "task-clock",
        "-I",
        "18446744073709551615",
        "--",
        "true",
    ]));
    for cmd in &runs {
        let r = limited(cmd, None);
        one_line_error(&r, 2, &["invalid value"]);
    }
    assert!(!Path::new(&data).exists() && !Path::new(&svg).exists());
}

#[test]
fn pid_lists_are_parsed_alike_everywhere() {
    // PIDs above the kernel's pid_max (at most 2^22): never running processes.
    let spin = common::wl("spin");
    let probe = format!("uprobe:{spin}:main");
    for list in ["999999998,,999999999", "999999998,", "999999998,x", "0"] {
        let mut lines = Vec::new();
        let mut cmds = vec![
            argv(&["stat", "-e", "task-clock", "-p", list]),
            argv(&["record", "-e", "cpu-clock", "-p", list]),
            argv(&["flamegraph", "-p", list]),
            argv(&["offcpu", "-p", list]),
        ];
        if common::pmu_exists("uprobe") {
            cmds.push(argv(&["probe", &probe, "-p", list]));
        }
        for cmd in &cmds {
            let r = limited(cmd, None);
            lines.push(one_line_error(&r, 2, &[&format!("bad -p list '{list}'")]));
        }
        assert!(
            lines.iter().all(|l| *l == lines[0]),
            "one message for every command: {lines:#?}"
        );
        let mut tlines = Vec::new();
        for cmd in [
            argv(&["stat", "-e", "task-clock", "-t", list]),
            argv(&["record", "-e", "cpu-clock", "-t", list]),
            argv(&["offcpu", "-t", list]),
        ] {
            let r = limited(&cmd, None);
            tlines.push(one_line_error(&r, 2, &[&format!("bad -t list '{list}'")]));
        }
        assert!(tlines.iter().all(|l| *l == tlines[0]), "{tlines:#?}");
    }
}

#[test]
fn os_errors_are_printed_once() {
    let Some(s) = Scratch::new("oserr") else {
        return;
    };
    let missing_dir = s.path("no-such-dir/x.data");
    let missing = s.path("no-such-file");
    let cases = [
        argv(&[
            "record",
            "-e",
            "cpu-clock",
            "-o",
            &missing_dir,
            "--",
            "true",
        ]),
        argv(&["stat", "-e", "task-clock", "-o", &missing_dir, "--", "true"]),
        argv(&["script", "-i", &missing]),
        argv(&["report", "-i", &missing]),
        argv(&["encode", "--event-file", &missing, "-e", "cycles"]),
        argv(&[
            "bench",
            "--baseline",
            &format!("{missing}.json"),
            "--",
            "true",
        ]),
    ];
    for cmd in &cases {
        let r = limited(cmd, None);
        assert!(
            matches!(r.status.code(), Some(1..=3)),
            "`{}` must fail\n{}",
            r.cmdline,
            r.dump()
        );
        let said = r.stderr.matches("No such file or directory").count()
            + r.stderr.matches("does not exist").count();
        assert_eq!(said, 1, "`{}`: the OS error once\n{}", r.cmdline, r.dump());
        assert!(!r.stderr.contains("(os error"), "{}", r.dump());
    }
}

/// A perf.data whose process maps `paths` (one page each, from 0x400000 up, each with a
/// recorded build id) and has 10 samples in each mapping.
fn recording_mapping(out: &Path, paths: &[String]) {
    fn record(kind: u32, misc: u16, mut body: Vec<u8>) -> Vec<u8> {
        body.resize(body.len().next_multiple_of(8), 0);
        let mut r = kind.to_le_bytes().to_vec();
        r.extend_from_slice(&misc.to_le_bytes());
        r.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
        r.extend_from_slice(&body);
        r
    }
    let u32s = |v: &[u32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let u64s = |v: &[u64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let cstr = |s: &str| -> Vec<u8> {
        let mut b = s.as_bytes().to_vec();
        b.push(0);
        b.resize(b.len().next_multiple_of(8), 0);
        b
    };
    let pid = 4242u32;
    let sid = |t: u64| -> Vec<u8> {
        let mut b = u32s(&[pid, pid]);
        b.extend(u64s(&[t]));
        b
    };
    let mut a = Attr::new(1, 0);
    a.sample_period = 1000;
    a.sample_type = sample::IP | sample::TID | sample::TIME | sample::PERIOD;
    a.sample_id_all = true;
    a.mmap = true;
    a.mmap2 = true;
    a.comm = true;
    let mut w = Writer::create(
        out,
        vec![EventEntry {
            attr: a,
            name: "cpu-clock".into(),
            ids: vec![],
        }],
    )
    .unwrap();
    let mut body = u32s(&[pid, pid]);
    body.extend(cstr("victim"));
    body.extend(sid(1));
    w.write_record(&record(3, 1 << 13, body)).unwrap();
    let mut t = 2;
    for (i, p) in paths.iter().enumerate() {
        let addr = 0x40_0000 + 0x1000 * i as u64;
        let mut b = u32s(&[pid, pid]);
        b.extend(u64s(&[addr, 0x1000, 0]));
        b.extend(u32s(&[8, 1]));
        b.extend(u64s(&[1000 + i as u64, 0]));
        b.extend(u32s(&[5, 2]));
        b.extend(cstr(p));
        b.extend(sid(t));
        t += 1;
        w.write_record(&record(10, 2, b)).unwrap();
    }
    for n in 0..10u64 {
        for i in 0..paths.len() as u64 {
            let mut b = u64s(&[0x40_0100 + 0x1000 * i]);
            b.extend(u32s(&[pid, pid]));
            b.extend(u64s(&[t, 1000]));
            t += 1 + n;
            w.write_record(&record(9, 2, b)).unwrap();
        }
    }
    let features = Features {
        build_ids: paths
            .iter()
            .enumerate()
            .map(|(i, p)| BuildIdEntry {
                pid: -1,
                misc: 2,
                build_id: vec![0x42 + i as u8; 20],
                filename: p.clone(),
            })
            .collect(),
        ..Features::default()
    };
    w.finish(&features).unwrap();
}

#[test]
fn mappings_of_fifos_devices_and_directories_resolve_to_unknown() {
    let Some(s) = Scratch::new("mmap2") else {
        return;
    };
    let data = s.dir.join("fifo.data");
    let paths = [s.path("fifo"), s.path("zero"), s.path("subdir")];
    std::fs::create_dir(s.dir.join("subdir")).unwrap();
    recording_mapping(&data, &paths);
    let d = data.display().to_string();
    let r = limited(
        &argv(&["report", "-i", &d, "--stdio", "-s", "dso,sym"]),
        None,
    );
    r.assert_ok();
    for p in ["fifo", "zero", "subdir"] {
        assert!(r.stdout.contains(p), "a row for {p}\n{}", r.dump());
    }
    let svg = s.path("out.svg");
    limited(&argv(&["flamegraph", "-i", &d, "-o", &svg]), None).assert_ok();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("fifo"), "the FIFO's module is a frame");
    report!(
        "report and flamegraph of a recording naming a FIFO: {:?} and done",
        r.elapsed
    );
    if common::perf_available() {
        // perf finishes on the same file too (it may warn about the odd files).
        let p = common::run_cmd(
            Command::new("perf").args(["report", "-i", &d, "--stdio"]),
            LIMIT,
        );
        report!(
            "perf report on the same file: exit {:?} in {:?}",
            p.status.code(),
            p.elapsed
        );
    }
}

#[test]
fn a_fifo_where_blazesym_looks_for_debug_files_is_never_opened() {
    let Some(s) = Scratch::new("dwp") else {
        return;
    };
    // The workload in the scratch dir with a FIFO as its DWARF package (`spin.dwp`),
    // which blazesym would open with a blocking open().
    let bin = s.dir.join("spin");
    std::fs::copy(common::workload("spin"), &bin).unwrap();
    let data = s.dir.join("spin.data");
    let paths = [bin.display().to_string()];
    recording_mapping(&data, &paths);
    // Record the build id the copy really has, so the file is used.
    let bid = hwprof_sampler::buildid::read_build_id(&bin).expect("workloads have a build id");
    let mut bytes = std::fs::read(&data).unwrap();
    let fake = vec![0x42u8; 20];
    let at = bytes
        .windows(20)
        .position(|w| w == fake.as_slice())
        .expect("the build id entry");
    bytes[at..at + bid.len().min(20)].copy_from_slice(&bid[..bid.len().min(20)]);
    std::fs::write(&data, &bytes).unwrap();
    let d = data.display().to_string();
    let before = limited(&argv(&["report", "-i", &d, "--stdio"]), None);
    before.assert_ok();
    std::fs::rename(s.dir.join("fifo"), s.dir.join("spin.dwp")).unwrap();
    let r = limited(&argv(&["report", "-i", &d, "--stdio"]), None);
    r.assert_ok();
    let svg = s.path("out.svg");
    limited(&argv(&["flamegraph", "-i", &d, "-o", &svg]), None).assert_ok();
    report!(
        "report with a FIFO as spin.dwp: {:?} (without it: {:?})",
        r.elapsed,
        before.elapsed
    );
}
