//! The engine on this machine's kernel: `latency.bpf.c` (uprobe + uretprobe on a
//! workload's function) read through every kind of map the engine offers, and
//! `Engine::check`'s reason when BPF cannot be used.

mod common;

use common::{blocker, bpf_available};
use hwprof_bpf::{Engine, LatencyEvent, Loader, Unavailable, UprobeAt, objects};

const MS: u64 = 1_000_000;

/// 1000 fast calls and 3 slow ones (30 ms) of target_fn: exact counts (per-CPU array),
/// a log2 histogram of every call, the slow ones only through the ring buffer with
/// their user stacks (in main, where target_fn returns to), nothing dropped. Attached
/// by symbol to the workload's process, then by file offset to every process.
#[test]
fn uprobe_counts_histogram_and_ring_buffer() {
    if !bpf_available() {
        return;
    }
    let Some(b) = blocker() else { return };
    let (start, _) = b.range("target_fn");
    let main = b.range("main");
    for by_offset in [false, true] {
        let mut w = b.spawn(&["calls", "1000", "3", "30"]);
        let pid = w.pid();
        let mut e = Loader::new(&objects::LATENCY)
            .global("threshold_ns", 10 * MS)
            .max_entries("entry", 64)
            .load()
            .expect("load");
        // -no-pie: the text segment maps file offset 0 at 0x400000.
        let (at, scope) = if by_offset {
            (UprobeAt::Offset(start - 0x40_0000), None)
        } else {
            (UprobeAt::Symbol("target_fn"), Some(pid))
        };
        e.attach_uprobe("latency_entry", &b.exe, at, scope)
            .expect("uprobe");
        e.attach_uprobe("latency_return", &b.exe, at, scope)
            .expect("uretprobe");
        let mut ring = e.ring("events").expect("ring");
        w.go();
        assert_eq!(w.line(), "done 90");
        w.wait();
        let mut events = Vec::new();
        while events.len() < 3 && ring.wait(std::time::Duration::from_secs(10)).expect("poll") {
            ring.drain(|bytes| events.push(LatencyEvent::from_bytes(bytes).expect("event")));
        }
        e.detach().expect("detach");
        ring.drain(|bytes| events.push(LatencyEvent::from_bytes(bytes).expect("event")));
        let counts = e.counters("counts").expect("counts");
        assert_eq!(
            counts,
            [1003, 1003],
            "calls and returns (offset: {by_offset})"
        );
        let hist = e.log2_hist("hist").expect("hist");
        assert_eq!(hist.total(), 1003, "{hist:?}");
        let slow: u64 = hist
            .nonzero()
            .filter(|&(lo, _, _)| lo >= 16 * MS)
            .map(|(_, _, c)| c)
            .sum();
        assert_eq!(slow, 3, "{:?}", hist.nonzero().collect::<Vec<_>>());
        assert_eq!(events.len(), 3, "{events:?}");
        let mut stacks = e.stacks("stacks").expect("stacks");
        for ev in &events {
            assert_eq!((ev.tgid, ev.tid), (pid, pid));
            assert!(ev.ns >= 30 * MS, "{ev:?}");
            let ips = stacks.get(ev.ustack, 1);
            assert!(
                ips.first().is_some_and(|&ip| ip >= main.0 && ip < main.1),
                "the return into main: {ips:x?} (main {main:x?})"
            );
        }
        assert_eq!(stacks.errors(), Default::default());
        assert!(e.dropped().expect("dropped").iter().all(|&n| n == 0));
    }
}

/// Check says yes here or why not, in one line, through the skip policy.
#[test]
fn check_works_here_or_says_why_in_one_line() {
    match Engine::check() {
        Ok(()) => hwprof_testkit::report!("BPF available"),
        Err(u) => {
            let line = u.to_string();
            assert!(!line.contains('\n'), "{line}");
            // Through the skip policy: under HWPROF_STRICT=1 this machine must have BPF.
            assert!(!bpf_available());
        }
    }
}

/// Without privileges (uid 65534, no capabilities), check says so in one line: root
/// or CAP_BPF and CAP_PERFMON.
#[test]
fn check_without_privileges_says_what_is_needed() {
    if !bpf_available() {
        return;
    }
    if std::env::var_os("HWPROF_BPF_CHECK_CHILD").is_some() {
        return;
    }
    if !nix_root() {
        hwprof_testkit::skip(
            hwprof_testkit::Why::Setup,
            "not root: cannot drop to an unprivileged user",
        );
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("hwprof-bpf-priv")
        .tempdir()
        .expect("tmp");
    let exe = dir.path().join("engine-test");
    hwprof_testkit::copy_executable(&std::env::current_exe().expect("exe"), &exe).expect("copy");
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let out = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--",
        ])
        .arg(&exe)
        .args(["--exact", "print_check", "--nocapture", "--test-threads=1"])
        .env("HWPROF_BPF_CHECK_CHILD", "1")
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            hwprof_testkit::skip(
                hwprof_testkit::Why::Setup,
                format_args!("cannot run setpriv ({e})"),
            );
            return;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.split_once("CHECK ").map(|(_, r)| r.to_string()))
        .unwrap_or_else(|| {
            panic!(
                "no CHECK line: {text}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    hwprof_testkit::report!("unprivileged: {line}");
    assert!(
        line.starts_with("Permission: ") && line.contains("root or CAP_BPF and CAP_PERFMON"),
        "{line}"
    );
}

/// The child of `check_without_privileges_says_what_is_needed`: prints what check says.
#[test]
fn print_check() {
    if std::env::var_os("HWPROF_BPF_CHECK_CHILD").is_none() {
        return;
    }
    let kind = match Engine::check() {
        Ok(()) => "Ok: ".to_string(),
        Err(u @ Unavailable::Permission(_)) => format!("Permission: {u}"),
        Err(u) => format!("Other: {u}"),
    };
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "\nCHECK {kind}").expect("stdout");
}

fn nix_root() -> bool {
    rustix::process::geteuid().is_root()
}
