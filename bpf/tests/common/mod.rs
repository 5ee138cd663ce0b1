//! What the live tests of the BPF engine share: the skip when BPF cannot be used, the
//! workload (`workloads/blocker.c`) built into a temporary folder, its functions'
//! address ranges, and running it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use hwprof_bpf::{Engine, Unavailable};
use hwprof_testkit::{Why, skip};

/// True when BPF works here; else a skip that says why (a failure under
/// `HWPROF_STRICT=1` unless no setup can fix it: an old or locked-down kernel).
#[track_caller]
pub fn bpf_available() -> bool {
    if !cfg!(target_arch = "x86_64") {
        skip(Why::OtherArch, "the BPF tests' workload is for x86-64");
        return false;
    }
    match Engine::check() {
        Ok(()) => true,
        Err(u) => {
            let why = match u {
                Unavailable::KernelTooOld { .. }
                | Unavailable::LockedDown(_)
                | Unavailable::NoBtf(_) => Why::KernelSetting,
                Unavailable::Permission(_) | Unavailable::Other(_) => Why::Setup,
            };
            skip(why, format_args!("BPF unavailable: {u}"));
            false
        }
    }
}

/// The workload, built in its own temporary folder (kept while this lives).
pub struct Blocker {
    pub dir: tempfile::TempDir,
    pub exe: PathBuf,
}

/// Builds `workloads/blocker.c` (frame pointers, not position-independent: its
/// addresses are the ones `nm` prints). `None` after a skip when `cc` is missing.
pub fn blocker() -> Option<Blocker> {
    let dir = tempfile::Builder::new()
        .prefix("hwprof-bpf-test")
        .tempdir()
        .expect("temp dir");
    let exe = dir.path().join("blocker");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workloads/blocker.c");
    let flags = ["-O1", "-fno-omit-frame-pointer", "-no-pie"];
    hwprof_testkit::compile_c(&src, &exe, &flags).then_some(Blocker { dir, exe })
}

impl Blocker {
    /// `[start, end)` of function `name` (`nm -S`).
    pub fn range(&self, name: &str) -> (u64, u64) {
        let (addr, size) = hwprof_testkit::nm_symbol(&self.exe, name);
        (addr, addr + size)
    }

    /// Starts the workload with `args`, stdin and stdout piped.
    pub fn spawn(&self, args: &[&str]) -> Running {
        let mut child = Command::new(&self.exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn blocker");
        let out = BufReader::new(child.stdout.take().expect("stdout"));
        Running { child, out }
    }
}

/// A running workload.
pub struct Running {
    pub child: Child,
    pub out: BufReader<ChildStdout>,
}

impl Running {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Lets it go (the line it waits for on stdin).
    pub fn go(&mut self) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        stdin.write_all(b"go\n").expect("write go");
        stdin.flush().expect("flush");
    }

    /// Its next line of output, trimmed.
    pub fn line(&mut self) -> String {
        let mut l = String::new();
        self.out.read_line(&mut l).expect("read line");
        l.trim().to_string()
    }

    /// The number after `word` on its next line (`measured 123`).
    pub fn value(&mut self, word: &str) -> u64 {
        let l = self.line();
        let v = l
            .strip_prefix(word)
            .unwrap_or_else(|| panic!("{word}... expected, got {l:?}"));
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("a number after {word}: {l:?}"))
    }

    /// Waits for it to exit successfully.
    pub fn wait(&mut self) {
        let st = self.child.wait().expect("wait");
        assert!(st.success(), "blocker: {st}");
    }

    /// Waits until its thread `tid` sleeps in nanosleep (its wchan says so).
    pub fn wait_nanosleep(&self, tid: u32) {
        self.wait_wchan(tid, "nanosleep");
    }

    /// Waits until its thread `tid` sleeps in a kernel function whose name holds
    /// `needle` (its wchan says so).
    pub fn wait_wchan(&self, tid: u32, needle: &str) {
        let pid = self.pid();
        let path = format!("/proc/{pid}/task/{tid}/wchan");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let w = std::fs::read_to_string(&path).unwrap_or_default();
            if w.contains(needle) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{path} never said {needle}: {w:?}"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Which of `ids` the kernel has loaded now.
pub fn still_loaded(ids: &[u32]) -> Vec<u32> {
    let loaded: Vec<u32> = aya::programs::loaded_programs()
        .filter_map(|p| p.ok())
        .map(|p| p.id())
        .collect();
    ids.iter().copied().filter(|i| loaded.contains(i)).collect()
}

/// Whether `ids` are all gone from the kernel (polled up to 10 s: the kernel frees a
/// program after an RCU grace period).
pub fn programs_gone(ids: &[u32]) -> Result<(), Vec<u32>> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = still_loaded(ids);
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(left);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The C library process `pid` has mapped (its path in `/proc/PID/maps`).
pub fn libc_of(pid: u32) -> PathBuf {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).expect("maps");
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            Path::new(p)
                .file_name()
                .is_some_and(|f| f.to_string_lossy().starts_with("libc.so"))
        })
        .map(PathBuf::from)
        .expect("libc in the workload's maps")
}
