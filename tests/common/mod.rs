//! Helpers shared by the integration tests: compiling the C workloads in
//! `tests/workloads`, running `hwprof` and `perf` with a time limit, parsing `-x,` CSV
//! output, and skipping visibly when the machine lacks something (the policy, and
//! `HWPROF_STRICT=1`, are `hwprof_testkit`'s: [`skip`] with a [`Why`]).

#![allow(dead_code)]

mod files;
mod tools;

#[allow(unused_imports)] // each test file takes what it needs
pub use files::*;
#[allow(unused_imports)]
pub use tools::*;

use std::collections::HashMap;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

/// Time limit for one command; a test that hits it fails instead of hanging.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// The `hwprof` binary under test.
pub fn hwprof_bin() -> &'static str {
    env!("CARGO_BIN_EXE_hwprof")
}

fn tmpdir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
}

/// A scratch file path under the cargo target tmp dir, unique to this process
/// and `tag`.
pub fn scratch_path(tag: &str) -> PathBuf {
    let dir = tmpdir().join("scratch");
    fs::create_dir_all(&dir).expect("create scratch dir");
    dir.join(format!("{tag}.{}", std::process::id()))
}

pub use hwprof_testkit::{Why, skip};

/// Writes one line to the process's real stderr, past libtest's output
/// capture, so that CI logs show the compared figures of passing tests too. A
/// `SKIPPED: ...` line is a skip for [`Why::Setup`] (a failure with
/// `HWPROF_STRICT=1`); prefer [`skip`] or the `require_*` helpers.
#[track_caller]
pub fn report_line(msg: &str) {
    hwprof_testkit::report_line(msg);
}

/// `eprintln!` that is not captured by the test harness (see [`report_line`]).
macro_rules! report {
    ($($arg:tt)*) => {
        $crate::common::report_line(&format!($($arg)*))
    };
}

// `stat -x,` output (CSV): after `report!`, which it uses.
mod stat;
#[allow(unused_imports)]
pub use stat::*;

// ---------------------------------------------------------------------------
// Workloads
// ---------------------------------------------------------------------------

fn modified(p: &Path) -> Option<std::time::SystemTime> {
    fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// Compiles `tests/workloads/NAME.c` (once per test binary; skipped when the
/// binary is newer than the source) and returns the absolute path of the
/// executable.
pub fn workload(name: &str) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let mut built = BUILT
        .get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(p) = built.get(name) {
        return p.clone();
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/workloads")
        .join(format!("{name}.c"));
    assert!(src.exists(), "no workload source {}", src.display());
    let dir = tmpdir().join("workloads");
    fs::create_dir_all(&dir).expect("create workloads dir");
    let out = dir.join(name);
    let fresh = match (modified(&out), modified(&src)) {
        (Some(o), Some(s)) => o > s,
        _ => false,
    };
    if !fresh {
        // Build to a private name and rename, so that test binaries running
        // at the same time never see a half-written executable.
        let tmp = dir.join(format!(".{name}.{}", std::process::id()));
        let flags = [
            "-O1",
            "-g",
            "-fno-omit-frame-pointer",
            "-no-pie",
            "-Wall",
            "-pthread",
        ];
        assert!(
            hwprof_testkit::compile_c(&src, &tmp, &flags),
            "no C compiler: install gcc (.ci/run does)"
        );
        fs::rename(&tmp, &out).expect("rename compiled workload");
    }
    built.insert(name.to_string(), out.clone());
    out
}

/// The workload's path as a `String` (for argument lists).
pub fn wl(name: &str) -> String {
    workload(name).to_str().expect("utf-8 path").to_string()
}

/// A private copy of workload `name` called `NAME_TAG` (so that `perf probe`
/// event groups, `probe_NAME_TAG`, never collide between parallel tests).
/// `tag` must be `[a-z0-9_]`.
pub fn unique_copy(name: &str, tag: &str) -> PathBuf {
    assert!(
        tag.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
        "bad tag {tag}"
    );
    let src = workload(name);
    let dir = tmpdir().join("copies");
    fs::create_dir_all(&dir).expect("create copies dir");
    let dst = dir.join(format!("{name}_{tag}"));
    let tmp = dir.join(format!(".{name}_{tag}.{}", std::process::id()));
    // Written by a child process (ETXTBSY: see copy_executable).
    hwprof_testkit::copy_executable(&src, &tmp).expect("copy workload");
    fs::rename(&tmp, &dst).expect("rename workload copy");
    dst
}

/// Byte offsets (from the function's start) of the instructions of `func`
/// in `bin`, from `objdump -d`.
pub fn instruction_offsets(bin: &Path, func: &str) -> Vec<u64> {
    let out = Command::new("objdump")
        .arg("-d")
        .arg("--no-show-raw-insn")
        .arg(format!("--disassemble={func}"))
        .arg(bin)
        .output()
        .expect("run objdump");
    assert!(out.status.success(), "objdump {} failed", bin.display());
    let text = String::from_utf8_lossy(&out.stdout);
    let mut addrs = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.ends_with(&format!("<{func}>:")) {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        if line.trim().is_empty() {
            break;
        }
        if let Some((addr, _)) = line.trim().split_once(':')
            && let Ok(a) = u64::from_str_radix(addr, 16)
        {
            addrs.push(a);
        }
    }
    assert!(!addrs.is_empty(), "no disassembly of {func}:\n{text}");
    addrs.iter().map(|a| a - addrs[0]).collect()
}

// ---------------------------------------------------------------------------
// Running commands
// ---------------------------------------------------------------------------

/// A finished command.
#[derive(Debug)]
pub struct Run {
    /// The command line, for messages.
    pub cmdline: String,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Run {
    /// The exit code (panics if the process died of a signal).
    pub fn code(&self) -> i32 {
        match self.status.code() {
            Some(c) => c,
            None => panic!(
                "{} died of a signal: {:?}\n{}",
                self.cmdline,
                self.status,
                self.dump()
            ),
        }
    }

    /// Panics unless the command exited 0.
    pub fn assert_ok(&self) -> &Self {
        assert!(
            self.status.success(),
            "`{}` failed with {:?}\n{}",
            self.cmdline,
            self.status,
            self.dump()
        );
        self
    }

    /// Stdout and stderr for assertion messages.
    pub fn dump(&self) -> String {
        format!(
            "--- stdout of `{}` ---\n{}--- stderr ---\n{}---",
            self.cmdline, self.stdout, self.stderr
        )
    }
}

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Sends `sig` to process `pid` (negative: a process group).
pub fn signal(pid: i32, sig: i32) -> bool {
    hwprof_pmu::sys::kill(pid, sig).is_ok()
}

/// Runs `cmd` in its own process group with stdin closed, collecting stdout
/// and stderr. After `timeout` the whole group is killed and the test fails.
/// Whatever is left of the group when the command exits is killed too, so no
/// workload outlives its test.
pub fn run_cmd(cmd: &mut Command, timeout: Duration) -> Run {
    let cmdline = describe(cmd);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("spawn `{cmdline}`: {e}"));
    let pgid = child.id() as i32;
    let out = reader(child.stdout.take().expect("stdout"));
    let err = reader(child.stderr.take().expect("stderr"));
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break Some(st);
        }
        if start.elapsed() > timeout {
            break None;
        }
        thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    signal(-pgid, libc::SIGKILL);
    let status = match status {
        Some(st) => st,
        None => {
            let _ = child.wait();
            let stdout = out.join().unwrap_or_default();
            let stderr = err.join().unwrap_or_default();
            panic!(
                "`{cmdline}` did not finish within {timeout:?}; killed it\n--- stdout ---\n{stdout}--- stderr ---\n{stderr}---"
            );
        }
    };
    Run {
        cmdline,
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        elapsed,
    }
}

fn reader<R: Read + Send + 'static>(mut r: R) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Runs `hwprof ARGS`.
pub fn hwprof<S: AsRef<str>>(args: &[S]) -> Run {
    let mut cmd = Command::new(hwprof_bin());
    cmd.args(args.iter().map(|a| a.as_ref()));
    run_cmd(&mut cmd, TIMEOUT)
}

/// Runs `perf ARGS`.
pub fn perf<S: AsRef<str>>(args: &[S]) -> Run {
    let mut cmd = Command::new("perf");
    cmd.args(args.iter().map(|a| a.as_ref()));
    run_cmd(&mut cmd, TIMEOUT)
}

/// A background process in its own process group, killed (whole group) and
/// reaped on drop.
pub struct Background {
    pub child: Child,
    pub cmdline: String,
    /// The rest of stderr after [`Background::wait_for_stderr`], read on a thread.
    late_err: Option<thread::JoinHandle<String>>,
}

impl Background {
    /// Spawns `cmd` with stdin closed and stdout/stderr piped.
    pub fn spawn(cmd: &mut Command) -> Background {
        let cmdline = describe(cmd);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawn `{cmdline}`: {e}"));
        Background {
            child,
            cmdline,
            late_err: None,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Reads stdout up to and including the first line equal to `line`.
    pub fn wait_for_line(&mut self, line: &str) {
        let out = self.child.stdout.take().expect("stdout piped");
        let mut r = BufReader::new(out);
        let mut buf = String::new();
        loop {
            buf.clear();
            let n = r.read_line(&mut buf).expect("read stdout");
            assert!(
                n > 0,
                "`{}` closed stdout before printing {line:?}",
                self.cmdline
            );
            if buf.trim_end() == line {
                break;
            }
        }
        // Keep draining so the process never blocks on a full pipe.
        thread::spawn(move || {
            let _ = std::io::copy(&mut r, &mut std::io::sink());
        });
    }

    /// Reads stderr up to and including the first line that contains `needle` (what
    /// `hwprof memory` and `hwprof io` say as they begin tracing an attached process),
    /// and returns what it read; the rest is read on a thread, and
    /// [`Background::wait_timeout`] returns it.
    pub fn wait_for_stderr(&mut self, needle: &str) -> String {
        let err = self.child.stderr.take().expect("stderr piped");
        let mut r = BufReader::new(err);
        let mut said = String::new();
        loop {
            let mut line = String::new();
            let n = r.read_line(&mut line).expect("read stderr");
            assert!(
                n > 0,
                "`{}` closed stderr before saying {needle:?}: {said}",
                self.cmdline
            );
            said.push_str(&line);
            if line.contains(needle) {
                break;
            }
        }
        self.late_err = Some(thread::spawn(move || {
            let mut rest = String::new();
            let _ = r.read_to_string(&mut rest);
            rest
        }));
        said
    }

    /// True while the process has not exited (it is not reaped by this).
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits up to `timeout` for exit; returns the status and the rest of
    /// stdout and stderr, or `None` (process left running) on timeout.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<(ExitStatus, String, String)> {
        let start = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().expect("wait") {
                let mut out = String::new();
                let mut err = String::new();
                if let Some(mut o) = self.child.stdout.take() {
                    let _ = o.read_to_string(&mut out);
                }
                if let Some(mut e) = self.child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                if let Some(late) = self.late_err.take() {
                    err = late.join().unwrap_or_default();
                }
                return Some((st, out, err));
            }
            if start.elapsed() > timeout {
                return None;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        signal(-self.pid(), libc::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------
// Skipping
// ---------------------------------------------------------------------------

/// Records `cmd` with `perf record -q -e cpu-clock -F 999 -g` into scratch file `tag`.
pub fn record_perf(tag: &str, cmd: &[&str]) -> PathBuf {
    let out = scratch_path(tag);
    let o = out.to_str().expect("utf-8 path").to_string();
    let mut a = vec![
        "record",
        "-q",
        "-e",
        "cpu-clock",
        "-F",
        "999",
        "-g",
        "-o",
        &o,
        "--",
    ];
    a.extend_from_slice(cmd);
    perf(&a).assert_ok();
    out
}

/// Records `cmd` with `hwprof record -e cpu-clock -F FREQ -g` into scratch file `tag`.
pub fn record_hwprof_at(freq: &str, tag: &str, cmd: &[&str]) -> PathBuf {
    let out = scratch_path(tag);
    let o = out.to_str().expect("utf-8 path").to_string();
    let mut a = vec![
        "record",
        "-e",
        "cpu-clock",
        "-F",
        freq,
        "-g",
        "-o",
        &o,
        "--",
    ];
    a.extend_from_slice(cmd);
    hwprof(&a).assert_ok();
    out
}

/// [`record_hwprof_at`] 999 Hz.
pub fn record_hwprof(tag: &str, cmd: &[&str]) -> PathBuf {
    record_hwprof_at("999", tag, cmd)
}

/// Polls until `cond` holds or `limit` passes; returns whether it held.
pub fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if cond() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` is stopped (its state letter is `T`).
pub fn stopped(pid: i32) -> bool {
    task_state(pid) == Some('T')
}

/// The state letter of task `pid` in `/proc/PID/stat` (`R`, `S`, `T`, `Z`...), `None`
/// when it is gone.
pub fn task_state(pid: i32) -> Option<char> {
    task_stat(pid).map(|t| t.state)
}

/// What `/proc/PID/stat` says of task `pid`.
pub struct TaskStat {
    pub comm: String,
    pub state: char,
    pub ppid: i32,
}

/// `/proc/PID/stat` of task `pid`, `None` when it is gone.
pub fn task_stat(pid: i32) -> Option<TaskStat> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_string();
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some(TaskStat { comm, state, ppid })
}

/// The ids of the BPF programs whose fds process `pid` holds (each once).
pub fn program_ids_of(pid: i32) -> Vec<u32> {
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| fs::read_to_string(e.path()).ok())
        .filter_map(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("prog_id:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .collect::<std::collections::BTreeSet<u32>>()
        .into_iter()
        .collect()
}

/// True when `perf` runs.
pub fn perf_available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        Command::new("perf")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    })
}

/// False (after a SKIPPED line naming `what`) when perf is missing.
#[track_caller]
pub fn require_perf(what: &str) -> bool {
    if perf_available() {
        return true;
    }
    skip(Why::Setup, format_args!("perf not installed ({what})"));
    false
}

/// True when the kernel exposes PMU `name` in sysfs.
pub fn pmu_exists(name: &str) -> bool {
    Path::new("/sys/bus/event_source/devices")
        .join(name)
        .exists()
}

/// False (after a SKIPPED line) when PMU `name` is absent. For software-defined
/// PMUs (uprobe, breakpoint, tracepoint, msr on x86) that every kernel `.ci/run`
/// targets has; use [`require_hardware_pmu`] for the CPU's.
#[track_caller]
pub fn require_pmu(name: &str, what: &str) -> bool {
    if pmu_exists(name) {
        return true;
    }
    let why = if name == "msr" && !cfg!(target_arch = "x86_64") {
        Why::OtherArch
    } else {
        Why::Setup
    };
    skip(
        why,
        format_args!("no `{name}` PMU in /sys/bus/event_source/devices ({what})"),
    );
    false
}

/// False (after a SKIPPED line, allowed in strict mode) when no hardware PMU is
/// exposed (VMs, containers).
#[track_caller]
pub fn require_hardware_pmu(what: &str) -> bool {
    if hardware_pmu() {
        return true;
    }
    skip(Why::NoHardwarePmu, format_args!("no hardware PMU ({what})"));
    false
}

/// False (after a SKIPPED line, allowed in strict mode) when a hardware PMU is
/// exposed, so that the no-PMU fallback under test is not taken.
#[track_caller]
pub fn require_no_hardware_pmu(what: &str) -> bool {
    if !hardware_pmu() {
        return true;
    }
    skip(
        Why::HasHardwarePmu,
        format_args!("this machine has a hardware PMU ({what} is the no-PMU fallback)"),
    );
    false
}

/// False (after a SKIPPED line) when tracepoints cannot be used:
/// no tracepoint PMU, or no tracefs in the kernel.
#[track_caller]
pub fn require_tracefs(what: &str) -> bool {
    let fs_known = fs::read_to_string("/proc/filesystems")
        .map(|s| {
            s.lines()
                .any(|l| l.split_whitespace().last() == Some("tracefs"))
        })
        .unwrap_or(false);
    if pmu_exists("tracepoint") && fs_known {
        return true;
    }
    skip(
        Why::Setup,
        format_args!("tracefs or the tracepoint PMU is not available ({what})"),
    );
    false
}

/// True when a hardware (core) PMU is exposed.
pub fn hardware_pmu() -> bool {
    pmu_exists("cpu") || pmu_exists("cpu_core") || pmu_exists("armv8_pmuv3_0")
}

/// Online CPUs, from /sys/devices/system/cpu/online (e.g. "0-3,6").
pub fn online_cpus() -> Vec<u32> {
    let text = fs::read_to_string("/sys/devices/system/cpu/online").expect("read cpu/online");
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                cpus.extend(a.parse::<u32>().expect("cpu")..=b.parse::<u32>().expect("cpu"))
            }
            None => cpus.push(part.parse().expect("cpu")),
        }
    }
    cpus
}

// ---------------------------------------------------------------------------
// perf probe
// ---------------------------------------------------------------------------

/// `perf probe` events in group `probe_STEM` on one binary, all deleted on
/// drop (also when the test panics).
pub struct ProbeGuard {
    pub bin: PathBuf,
    pub group: String,
}

impl ProbeGuard {
    /// Prepares a group for `bin`, deleting leftovers of an earlier run.
    pub fn new(bin: &Path) -> ProbeGuard {
        let stem = bin.file_name().expect("file name").to_string_lossy();
        let g = ProbeGuard {
            bin: bin.to_path_buf(),
            group: format!("probe_{stem}"),
        };
        g.delete_all();
        g
    }

    /// `perf probe -x BIN 'ev_STEM=SPEC'`; returns the event perf made,
    /// `probe_STEM:ev_STEM[__return]`. The event name is unique per binary because perf
    /// refuses a name that exists in any group, and it is not a short word
    /// like `hp` that perf's parser would take for modifiers.
    pub fn add(&self, spec: &str) -> String {
        let stem = self.group.trim_start_matches("probe_");
        let name = format!("ev_{stem}");
        let mut cmd = Command::new("perf");
        cmd.arg("probe")
            .arg("-x")
            .arg(&self.bin)
            .arg(format!("{name}={spec}"));
        let r = run_cmd(&mut cmd, TIMEOUT);
        r.assert_ok();
        // perf may rename the event (a return probe gets `__return`): take
        // the name it reports after "Added new event:".
        let text = format!("{}\n{}", r.stdout, r.stderr);
        let mut lines = text.lines();
        lines
            .find(|l| l.trim() == "Added new event:")
            .and_then(|_| lines.next())
            .and_then(|l| l.split_whitespace().next())
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no event name in perf probe's output\n{}", r.dump()))
    }

    fn delete_all(&self) {
        let _ = Command::new("perf")
            .args(["probe", "-q", "-d", &format!("{}:*", self.group)])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

impl Drop for ProbeGuard {
    fn drop(&mut self) {
        self.delete_all();
    }
}

// ---------------------------------------------------------------------------
// Folded stacks
// ---------------------------------------------------------------------------

/// Folded lines (`a;b;c 42`) → (stack, count); blank and `# ` comment lines are skipped.
pub fn parse_folded(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with("# "))
        .map(|l| {
            let (stack, n) = l
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("bad folded line {l:?}"));
            let n = n.parse().unwrap_or_else(|_| panic!("bad count in {l:?}"));
            (stack.to_string(), n)
        })
        .collect()
}

/// Sum of the counts of stacks that contain frame `f`.
pub fn through(folded: &[(String, u64)], f: &str) -> u64 {
    folded
        .iter()
        .filter(|(st, _)| st.split(';').any(|x| x == f))
        .map(|(_, n)| n)
        .sum()
}

/// `../shared/fixtures/perfdata/NAME` (real-hardware recordings, outside the repo), or
/// `None` after a SKIPPED line (a failure with `HWPROF_STRICT=1`) when it is absent.
#[track_caller]
pub fn fixture(name: &str) -> Option<PathBuf> {
    hwprof_testkit::fixture_path(&format!("perfdata/{name}"))
}

// ---------------------------------------------------------------------------
// Running hwprof as an unprivileged user
// ---------------------------------------------------------------------------

/// A private directory (0755) that user nobody (65534) can enter, with a copy of the
/// binary nobody can run and an `out/` directory nobody may write; removed on drop.
pub struct Nobody {
    pub dir: PathBuf,
    bin: PathBuf,
}

impl Nobody {
    /// `None` (after a SKIPPED line, a failure with `HWPROF_STRICT=1`) when we are not
    /// root or `setpriv` is missing.
    pub fn new(tag: &str) -> Option<Nobody> {
        use std::os::unix::fs::PermissionsExt;
        if hwprof_pmu::sys::euid() != 0 {
            skip(Why::Setup, "not root, cannot run hwprof as user nobody");
            return None;
        }
        if !["/usr/bin/setpriv", "/bin/setpriv"]
            .iter()
            .any(|p| Path::new(p).exists())
        {
            skip(Why::Setup, "setpriv not found");
            return None;
        }
        let chmod = |p: &Path, mode: u32| {
            fs::set_permissions(p, fs::Permissions::from_mode(mode))
                .unwrap_or_else(|e| panic!("chmod {mode:o} {}: {e}", p.display()))
        };
        let dir = std::env::temp_dir().join(format!("hwprof-nobody-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("creating a temp dir");
        chmod(&dir, 0o755);
        let bin = dir.join("hwprof");
        // Written by a child process (ETXTBSY: see copy_executable).
        hwprof_testkit::copy_executable(Path::new(hwprof_bin()), &bin).expect("copying hwprof");
        let out = dir.join("out");
        fs::create_dir(&out).expect("creating out/");
        std::os::unix::fs::chown(&out, Some(65534), Some(65534)).expect("chown out/ to nobody");
        Some(Nobody { dir, bin })
    }

    /// Runs the copy as nobody in [`Nobody::dir`], with `HWPROF_TRACEFS` set to
    /// `tracefs` when given (unset otherwise) and `LC_ALL=C`.
    pub fn run(&self, tracefs: Option<&Path>, args: &[&str]) -> Run {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&self.bin)
            .args(args)
            .current_dir(&self.dir)
            .env_remove("HWPROF_TRACEFS")
            .env("LC_ALL", "C");
        if let Some(t) = tracefs {
            c.env("HWPROF_TRACEFS", t);
        }
        run_cmd(&mut c, TIMEOUT)
    }
}

impl Drop for Nobody {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}
