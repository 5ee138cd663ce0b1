//! `io.bpf.c` on this machine's kernel, through `hwprof_bpf::io`: a workload's writes
//! and reads of a pipe, made in a known function, counted exactly with their bytes and
//! stacks, timed, in a histogram per syscall and fd; a process that is no target is not seen.

mod common;

use common::{blocker, bpf_available};
use hwprof_bpf::{Io, IoOptions};

/// x86-64's read and write.
const READ: u32 = 0;
const WRITE: u32 = 1;

/// 3000 writes and 3000 reads of 512 bytes in io_fn: exactly those counts and
/// 1,536,000 bytes each way under io_fn's stack, their time in the kernel in each
/// syscall's histogram; a second process doing the same, no target, is not counted.
#[test]
fn syscalls_are_paired_per_thread_with_bytes_and_stacks() {
    if !bpf_available() {
        return;
    }
    let Some(b) = blocker() else { return };
    let mut w = b.spawn(&["io", "3000", "512"]);
    let mut other = b.spawn(&["io", "1000", "512"]);
    let pid = w.pid();
    let io = Io::start(&IoOptions {
        tgids: vec![pid],
        only: vec![READ, WRITE],
        ..IoOptions::default()
    })
    .expect("start");
    w.go();
    other.go();
    assert_eq!(w.line(), "done 3072000");
    assert_eq!(other.line(), "done 1024000");
    w.wait();
    other.wait();
    let d = io.finish(Vec::new()).expect("finish");
    let io_fn = b.range("io_fn");
    let mut by_nr = [(0u64, 0u64, 0u64); 2];
    for s in &d.sums {
        assert_eq!(s.tgid, pid, "only the target's calls: {s:?}");
        if s.user
            .first()
            .is_some_and(|&ip| ip >= io_fn.0 && ip < io_fn.1)
        {
            let t = &mut by_nr[s.nr as usize];
            t.0 += s.count;
            t.1 += s.bytes;
            t.2 += s.ns;
            assert_eq!(s.errors, 0);
        }
    }
    assert_eq!(
        (by_nr[0].0, by_nr[0].1),
        (3000, 1_536_000),
        "reads: {:?}",
        d.sums
    );
    assert_eq!(
        (by_nr[1].0, by_nr[1].1),
        (3000, 1_536_000),
        "writes: {:?}",
        d.sums
    );
    assert!(by_nr[0].2 > 0 && by_nr[1].2 > 0, "timed");
    // The histograms count every call of each syscall (the workload's printf writes too).
    for nr in [READ, WRITE] {
        let total: u64 = d.hdr.iter().filter(|h| h.nr == nr).map(|h| h.count).sum();
        let counted: u64 = d.sums.iter().filter(|s| s.nr == nr).map(|s| s.count).sum();
        assert_eq!(total, counted, "syscall {nr}");
    }
    assert_eq!(d.dropped, Default::default());
}
