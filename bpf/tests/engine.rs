//! The engine on this machine's kernel: `latency.bpf.c` (uprobe + uretprobe on a
//! workload's function) through `hwprof_bpf::latency`, which reads every kind of map
//! the engine offers, and `Engine::check`'s reason when BPF cannot be used.

mod common;

use common::{blocker, bpf_available};
use hwprof_bpf::{Engine, Latency, LatencyEvent, LatencyOptions, Unavailable, UprobeAt};

const MS: u64 = 1_000_000;

/// 1000 fast calls and 3 slow ones (30 ms) of target_fn: exact counts, both
/// histograms, the slow ones only through the ring buffer with their stacks (the
/// function, then main where it returns to), nothing dropped. Attached by symbol to the
/// workload's process, then by file offset to every process.
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
        let mut l = Latency::load(&LatencyOptions {
            threshold_ns: Some(10 * MS),
            user_stacks: true,
            max_threads: 64,
            ..LatencyOptions::default()
        })
        .expect("load");
        // -no-pie: the text segment maps file offset 0 at 0x400000.
        let (at, scope) = if by_offset {
            (UprobeAt::Offset(start - 0x40_0000), None)
        } else {
            (UprobeAt::Symbol("target_fn"), Some(pid))
        };
        l.attach(&b.exe, at, scope).expect("attach");
        let mut ring = l.ring().expect("ring");
        w.go();
        assert_eq!(w.line(), "done 90");
        w.wait();
        let mut events = Vec::new();
        while events.len() < 3 && ring.wait(std::time::Duration::from_secs(10)).expect("poll") {
            ring.drain(|bytes| events.push(LatencyEvent::from_bytes(bytes).expect("event")));
        }
        ring.drain(|bytes| events.push(LatencyEvent::from_bytes(bytes).expect("event")));
        let d = l.finish(events).expect("finish");
        assert_eq!(
            (d.calls, d.returns, d.timed()),
            (1003, 1003, 1003),
            "offset: {by_offset}"
        );
        let slow: u64 = d.log2_us.iter().skip(15).sum(); // 16.384 ms and up
        assert_eq!(slow, 3, "{:?}", d.log2_us);
        assert_eq!(d.histogram().len(), 1003);
        assert!(d.histogram().max() >= 30 * MS, "{}", d.histogram().max());
        assert_eq!(d.slow.len(), 3, "{:?}", d.slow);
        for s in &d.slow {
            assert_eq!((s.tgid, s.tid), (pid, pid));
            assert!(s.ns >= 30 * MS, "{s:?}");
            assert_eq!(
                s.user.first(),
                Some(&start),
                "the function first: {:x?}",
                s.user
            );
            assert!(
                s.user.get(1).is_some_and(|&ip| ip >= main.0 && ip < main.1),
                "then the return into main: {:x?} (main {main:x?})",
                s.user
            );
        }
        assert!(d.dropped.is_empty(), "{:?}", d.dropped);
    }
}

/// Every call sent to user space (threshold 0) gives each duration exactly as the
/// kernel measured it: the kernel's two histograms must be those of these durations,
/// bucket for bucket (the C functions that file them against the Rust ones).
#[test]
fn kernel_histograms_are_those_of_the_durations() {
    if !bpf_available() {
        return;
    }
    let Some(b) = blocker() else { return };
    let mut w = b.spawn(&["calls", "2000", "5", "2"]);
    let mut l = Latency::load(&LatencyOptions {
        threshold_ns: Some(0),
        ..LatencyOptions::default()
    })
    .expect("load");
    l.attach(&b.exe, UprobeAt::Symbol("target_fn"), Some(w.pid()))
        .expect("attach");
    let mut ring = l.ring().expect("ring");
    w.go();
    w.line();
    w.wait();
    let mut events = Vec::new();
    ring.drain(|bytes| events.push(LatencyEvent::from_bytes(bytes).expect("event")));
    let d = l.finish(events).expect("finish");
    assert_eq!(d.slow.len(), 2005, "{:?}", d.dropped);
    assert!(
        d.slow.iter().all(|s| s.user.is_empty()),
        "no stacks asked for"
    );
    let mut log2 = vec![0u64; 65];
    let mut h = hwprof_bpf::latency::latency_histogram();
    for s in &d.slow {
        let us = s.ns / 1000;
        log2[(64 - us.leading_zeros() as usize).max(1)] += 1;
        h.record(s.ns).expect("record");
    }
    assert_eq!(d.log2_us, log2);
    let k = d.histogram();
    let buckets = |h: &hdrhistogram::Histogram<u64>| {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect::<Vec<_>>()
    };
    assert_eq!(buckets(&k), buckets(&h));
    assert_eq!(
        (k.max(), k.value_at_quantile(0.5)),
        (h.max(), h.value_at_quantile(0.5))
    );
    assert!(
        d.slow.windows(2).all(|p| p[0].time <= p[1].time),
        "in return order"
    );
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
