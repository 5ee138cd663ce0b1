//! The off-CPU program on this machine's kernel: blocked time and stacks of a workload
//! that blocks known times in a known function (`workloads/blocker.c`).

mod common;

use common::{blocker, bpf_available, programs_gone, still_loaded};
use hwprof_bpf::{BlockKind, Blocked, OffCpu, OffCpuData, OffCpuOptions, now_ns};

const MS: u64 = 1_000_000;

fn options(tgid: u32) -> OffCpuOptions {
    OffCpuOptions {
        tgids: vec![tgid],
        ..OffCpuOptions::default()
    }
}

/// The blocks of thread `tid` whose user stack's leaf is in `range`.
fn in_fn(d: &OffCpuData, tid: u32, range: (u64, u64)) -> Vec<&Blocked> {
    d.blocks
        .iter()
        .filter(|b| b.tid == tid)
        .filter(|b| {
            b.user
                .first()
                .is_some_and(|&ip| ip >= range.0 && ip < range.1)
        })
        .collect()
}

/// `blocker sleep MS COUNT` traced from before its first sleep.
struct Sleeps {
    pid: u32,
    range: (u64, u64),
    data: OffCpuData,
    /// The time the workload measured inside sleeper_fn.
    measured: u64,
    /// The blocks in sleeper_fn: their time and how many.
    ns: u64,
    count: u64,
}

impl Sleeps {
    fn traced(ms: &str, count: &str) -> Option<Sleeps> {
        if !bpf_available() {
            return None;
        }
        let b = blocker()?;
        let range = b.range("sleeper_fn");
        let mut w = b.spawn(&["sleep", ms, count]);
        let pid = w.pid();
        let mut off = OffCpu::start(&options(pid)).expect("start");
        off.open_window(now_ns()).expect("window");
        w.go();
        let measured = w.value("measured");
        w.wait();
        let data = off.finish(now_ns()).expect("finish");
        let blocks = in_fn(&data, pid, range);
        let ns = blocks.iter().map(|b| b.ns).sum();
        let count = blocks.iter().map(|b| b.count).sum();
        hwprof_testkit::report!(
            "offcpu: sleeper_fn({ms} ms) x {count}: {:.3} ms in {count} blocks, measured {:.3} ms, {} rows",
            ns as f64 / 1e6,
            measured as f64 / 1e6,
            data.blocks.len()
        );
        Some(Sleeps {
            pid,
            range,
            data,
            measured,
            ns,
            count,
        })
    }

    fn blocks(&self) -> Vec<&Blocked> {
        in_fn(&self.data, self.pid, self.range)
    }
}

/// 10 sleeps of 20 ms in sleeper_fn: the blocks whose user stack starts there sum to
/// at least the 200 ms asked for and at most the time the workload measured inside
/// sleeper_fn (blocks are inside those intervals), with the kernel stack and comm.
#[test]
fn blocked_time_and_stack_of_known_sleeps() {
    let Some(s) = Sleeps::traced("20", "10") else {
        return;
    };
    let (pid, d, blocks) = (s.pid, &s.data, s.blocks());
    let all: Vec<&Blocked> = d.blocks.iter().filter(|b| b.tid == pid).collect();
    assert!(
        s.ns >= 200 * MS && s.ns <= s.measured,
        "blocked {} ns, asked 200 ms, measured {} ns: {blocks:#?}\nall the thread's: {all:#?}\ndropped: {:?}",
        s.ns,
        s.measured,
        d.dropped
    );
    assert!(s.count >= 10, "{} blocks: {blocks:#?}", s.count);
    assert!(
        blocks
            .iter()
            .all(|b| b.tgid == pid && b.kind == BlockKind::Ended)
    );
    assert!(
        blocks
            .iter()
            .all(|b| !b.kernel.is_empty() && b.user.len() >= 2),
        "kernel and user stacks: {blocks:#?}"
    );
    assert_eq!(d.comms.get(&pid).map(String::as_str), Some("blocker"));
    assert!(d.dropped.is_empty(), "{:?}", d.dropped);
    // Only the target's threads.
    assert!(d.blocks.iter().all(|b| b.tgid == pid), "{:#?}", d.blocks);
}

/// Every one of 4000 sleeps of 1 ms is a block, and their sum is inside the time the
/// workload measured. On the kernel hwprof is tested on, about one wake-up in a
/// thousand reaches no sched_switch program: without the program's recovery of those
/// (end_wait in offcpu.bpf.c) four runs came out 1 to 9 blocks short.
#[test]
fn every_short_sleep_is_a_block() {
    let Some(s) = Sleeps::traced("1", "4000") else {
        return;
    };
    let all: Vec<&Blocked> = s.data.blocks.iter().filter(|b| b.tid == s.pid).collect();
    assert!(
        s.count >= 4000,
        "{} blocks of 4000 sleeps: all the thread's: {all:#?}\ndropped: {:?}",
        s.count,
        s.data.dropped
    );
    assert!(
        s.ns >= 4000 * MS && s.ns <= s.measured,
        "blocked {} ns, asked 4000 ms, measured {} ns",
        s.ns,
        s.measured
    );
    assert!(s.data.dropped.is_empty(), "{:?}", s.data.dropped);
}

/// With --min-block 100 ms, ten sleeps of 10 ms leave no block and the one of 200 ms
/// stays; no row sums a block shorter than the minimum. Without stacks asked for, none
/// are taken.
#[test]
fn min_block_leaves_out_shorter_blocks_each_on_its_own() {
    if !bpf_available() {
        return;
    }
    let Some(b) = blocker() else { return };
    let range = b.range("sleeper_fn");
    let mut w = b.spawn(&["sleep", "10", "10", "200", "1"]);
    let pid = w.pid();
    let o = OffCpuOptions {
        min_block_ns: 100 * MS,
        kernel_stacks: false,
        ..options(pid)
    };
    let mut off = OffCpu::start(&o).expect("start");
    off.open_window(now_ns()).expect("window");
    w.go();
    let measured = w.value("measured");
    w.wait();
    let d = off.finish(now_ns()).expect("finish");
    let blocks = in_fn(&d, pid, range);
    assert_eq!(blocks.len(), 1, "{:#?}", d.blocks);
    let blk = blocks[0];
    assert_eq!(blk.count, 1, "{blk:?}");
    assert!(
        blk.ns >= 200 * MS && blk.ns <= measured,
        "{blk:?}, measured {measured}"
    );
    assert!(
        blk.kernel.is_empty(),
        "kernel stacks were not asked for: {blk:?}"
    );
    for r in &d.blocks {
        assert!(
            r.ns >= r.count * 100 * MS,
            "a block under the minimum: {r:?}"
        );
    }
}

/// A child process of a target is traced with follow_forks, and only then.
#[test]
fn follow_forks_traces_children_only_when_asked() {
    if !bpf_available() {
        return;
    }
    let Some(b) = blocker() else { return };
    let range = b.range("sleeper_fn");
    for follow in [true, false] {
        let mut w = b.spawn(&["fork", "20", "5"]);
        let pid = w.pid();
        let o = OffCpuOptions {
            follow_forks: follow,
            ..options(pid)
        };
        let mut off = OffCpu::start(&o).expect("start");
        off.open_window(now_ns()).expect("window");
        w.go();
        let child = u32::try_from(w.value("child")).expect("pid");
        let measured = w.value("measured");
        w.wait();
        let d = off.finish(now_ns()).expect("finish");
        let of_child: Vec<&Blocked> = d.blocks.iter().filter(|b| b.tgid == child).collect();
        if follow {
            let ns: u64 = in_fn(&d, child, range).iter().map(|b| b.ns).sum();
            assert!(ns >= 100 * MS && ns <= measured, "{ns} ns: {of_child:#?}");
            assert_eq!(d.comms.get(&child).map(String::as_str), Some("blocker"));
        } else {
            assert!(of_child.is_empty(), "not followed, yet: {of_child:#?}");
        }
        // The parent's wait for the child is traced either way.
        assert!(d.blocks.iter().any(|b| b.tgid == pid && b.tid == pid));
    }
}

/// A thread still asleep when tracing ends counts up to the end, with its stacks.
#[test]
fn a_block_in_progress_at_the_end_counts_up_to_it() {
    if !bpf_available() {
        return;
    }
    let Some(b) = blocker() else { return };
    let range = b.range("sleeper_fn");
    let mut w = b.spawn(&["ready", "600000"]);
    let pid = w.pid();
    let mut off = OffCpu::start(&options(pid)).expect("start");
    let start = now_ns();
    off.open_window(start).expect("window");
    w.go();
    assert_eq!(w.line(), "ready");
    w.wait_nanosleep(pid);
    let asleep = now_ns();
    std::thread::sleep(std::time::Duration::from_millis(50));
    let end = now_ns();
    let d = off.finish(end).expect("finish");
    let blocks = in_fn(&d, pid, range);
    assert_eq!(blocks.len(), 1, "{:#?}", d.blocks);
    let blk = blocks[0];
    assert_eq!(blk.kind, BlockKind::InProgressAtEnd, "{blk:?}");
    assert_eq!(blk.count, 1);
    assert!(
        blk.ns >= end - asleep && blk.ns <= end - start,
        "{} ns, asleep since before {} ns, window {} ns",
        blk.ns,
        end - asleep,
        end - start
    );
    assert!(!blk.kernel.is_empty(), "{blk:?}, dropped: {:?}", d.dropped);
}

/// A block that ends after the window closed counts up to the window's end, however
/// late `finish` comes (the program keeps running until then): a 300 ms sleep, the
/// window closed during it, finish after it ended. Before the window had an end in the
/// kernel, the whole sleep was summed (and no block may begin after the close).
#[test]
fn a_block_that_ends_after_the_window_closed_counts_up_to_its_end() {
    if !bpf_available() {
        return;
    }
    let Some(b) = blocker() else { return };
    let range = b.range("sleeper_fn");
    let mut w = b.spawn(&["sleep", "300", "2"]);
    let pid = w.pid();
    let mut off = OffCpu::start(&options(pid)).expect("start");
    let start = now_ns();
    off.open_window(start).expect("window");
    w.go();
    w.wait_nanosleep(pid);
    let asleep = now_ns();
    std::thread::sleep(std::time::Duration::from_millis(50));
    let closed = now_ns();
    off.close_window(closed).expect("close");
    // Both sleeps end (the second begins after the close: no block).
    w.value("measured");
    w.wait();
    let d = off.finish(closed).expect("finish");
    let blocks = in_fn(&d, pid, range);
    assert_eq!(blocks.len(), 1, "the first sleep only: {:#?}", d.blocks);
    let blk = blocks[0];
    assert_eq!(blk.kind, BlockKind::Ended, "{blk:?}");
    assert!(
        blk.ns >= closed - asleep && blk.ns <= closed - start,
        "{} ns, asleep since before {} ns, window {} ns (the sleeps last 300 ms)",
        blk.ns,
        closed - asleep,
        closed - start
    );
}

/// A thread asleep since before tracing began (no switch-out seen) counts from the
/// window's start to its switch-in, as blocked before the window, without stacks.
#[test]
fn a_wait_in_progress_when_the_window_opens_counts_from_its_start() {
    if !bpf_available() {
        return;
    }
    let Some(b) = blocker() else { return };
    let mut w = b.spawn(&["early"]);
    let pid = w.pid();
    assert_eq!(w.line(), "ready");
    w.wait_wchan(pid, "read");
    let mut off = OffCpu::start(&options(pid)).expect("start");
    let start = now_ns();
    off.open_window(start).expect("window");
    w.go();
    w.wait();
    let exited = now_ns();
    let d = off.finish(now_ns()).expect("finish");
    let early: Vec<&Blocked> = d
        .blocks
        .iter()
        .filter(|b| b.tid == pid && b.kind == BlockKind::BeforeWindow)
        .collect();
    assert_eq!(early.len(), 1, "{:#?}", d.blocks);
    let e = early[0];
    assert!(e.user.is_empty() && e.kernel.is_empty(), "{e:?}");
    assert!(
        e.ns > 0 && e.ns <= exited - start,
        "{e:?}, window to exit {}",
        exited - start
    );
    assert_eq!(e.count, 1);
    assert!(d.silent.is_empty(), "{:?}", d.silent);
}

/// Maps too small for what happens: what did not fit is counted, never silent. One
/// entry of sums for the workload's distinct (stacks, kind) rows; one bucket of stacks
/// for a user and a kernel stack (every switch-out has both: one collides).
#[test]
fn what_does_not_fit_is_counted() {
    if !bpf_available() {
        return;
    }
    let Some(b) = blocker() else { return };
    for (max_blocks, max_stacks) in [(1, 16384), (65536, 1)] {
        let mut w = b.spawn(&["sleep", "5", "4"]);
        let pid = w.pid();
        let o = OffCpuOptions {
            max_blocks,
            max_stacks,
            ..options(pid)
        };
        let mut off = OffCpu::start(&o).expect("start");
        off.open_window(now_ns()).expect("window");
        w.go();
        w.value("measured");
        w.wait();
        let d = off.finish(now_ns()).expect("finish");
        if max_blocks == 1 {
            assert_eq!(d.blocks.len(), 1, "{:#?}", d.blocks);
            assert!(d.dropped.blocks >= 1, "{:?}", d.dropped);
        } else {
            assert!(d.dropped.stacks.collisions >= 1, "{:?}", d.dropped);
        }
        assert!(!d.dropped.is_empty());
    }
}

/// Dropping the program removes it from the kernel.
#[test]
fn programs_are_gone_after_drop() {
    if !bpf_available() {
        return;
    }
    let off = OffCpu::start(&OffCpuOptions {
        tgids: vec![std::process::id()],
        ..OffCpuOptions::default()
    })
    .expect("start");
    let ids = off.program_ids();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert_eq!(still_loaded(&ids), ids, "loaded while held");
    drop(off);
    assert_eq!(programs_gone(&ids), Ok(()));
}

/// The helper of `programs_are_gone_after_sigkill`: run only in the child process it
/// starts (HWPROF_BPF_HOLD=1), it attaches, prints its programs' ids and waits to be
/// killed.
#[test]
fn hold_programs_until_killed() {
    if std::env::var_os("HWPROF_BPF_HOLD").is_none() {
        return;
    }
    let off = OffCpu::start(&OffCpuOptions {
        tgids: vec![std::process::id()],
        ..OffCpuOptions::default()
    })
    .expect("start");
    let ids: Vec<String> = off.program_ids().iter().map(u32::to_string).collect();
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "HOLDING {}", ids.join(" ")).expect("stdout");
    out.flush().expect("flush");
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

/// A process killed with SIGKILL while its programs are attached leaves nothing: the
/// kernel drops them with its file descriptors.
#[test]
fn programs_are_gone_after_sigkill() {
    if !bpf_available() {
        return;
    }
    use std::io::BufRead;
    let exe = std::env::current_exe().expect("test binary");
    let mut child = std::process::Command::new(exe)
        .args([
            "--exact",
            "hold_programs_until_killed",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("HWPROF_BPF_HOLD", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn helper");
    let out = child.stdout.take().expect("stdout");
    let mut ids = Vec::new();
    for line in std::io::BufReader::new(out).lines() {
        let line = line.expect("line");
        // (libtest's "test NAME ... " may start the line.)
        if let Some((_, rest)) = line.split_once("HOLDING ") {
            ids = rest
                .split(' ')
                .map(|s| s.parse::<u32>().expect("id"))
                .collect();
            break;
        }
    }
    assert_eq!(ids.len(), 2, "the helper's programs: {ids:?}");
    assert_eq!(still_loaded(&ids), ids, "loaded while the helper lives");
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    assert_eq!(programs_gone(&ids), Ok(()));
}
