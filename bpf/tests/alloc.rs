//! `alloc.bpf.c` on this machine's kernel, through `hwprof_bpf::alloc`: the workload's
//! allocations in a known function counted exactly per stack, the blocks it keeps
//! outstanding exactly, realloc's old block freed, calloc's size, nothing dropped.

mod common;

use common::{Blocker, blocker, bpf_available, libc_of};
use hwprof_bpf::{AllocData, AllocOptions, Allocs, Site};

/// The workload run with `args` under the allocation programs (attached to it, through
/// its libc), read `wait_ms` after it ended, leaving out blocks younger than
/// `min_age_ms`.
fn traced_alloc(b: &Blocker, args: &[&str], wait_ms: u64, min_age_ms: u64) -> AllocData {
    let mut w = b.spawn(args);
    let pid = w.pid();
    let mut a = Allocs::load(&AllocOptions::default()).expect("load");
    a.attach(&libc_of(pid), Some(pid)).expect("attach");
    w.go();
    assert_eq!(w.line(), "done 1");
    w.wait();
    std::thread::sleep(std::time::Duration::from_millis(wait_ms));
    a.finish(hwprof_bpf::now_ns(), min_age_ms * 1_000_000)
        .expect("finish")
}

/// The sites whose stack starts in `range` (the allocating function).
fn in_fn(sites: &[Site], range: (u64, u64)) -> Vec<&Site> {
    sites
        .iter()
        .filter(|s| {
            s.user
                .first()
                .is_some_and(|&ip| ip >= range.0 && ip < range.1)
        })
        .collect()
}

/// 2000 mallocs of 48 bytes in alloc_fn, 1500 freed: 2000 allocations and 96,000 bytes
/// there, 500 blocks and 24,000 bytes outstanding; realloc_fn's malloc(100) grown to
/// 200000 leaves one block of 200000 (the old one freed by realloc); calloc(10, 30)
/// is 300 bytes; aligned_fn's posix_memalign, valloc and reallocarray 7000 bytes in 3.
#[test]
fn allocations_and_outstanding_blocks_per_stack() {
    if !bpf_available() {
        return;
    }
    let Some(b) = blocker() else { return };
    let d = traced_alloc(&b, &["alloc", "2000", "48", "500"], 0, 0);
    let (alloc_fn, realloc_fn, calloc_fn) = (
        b.range("alloc_fn"),
        b.range("realloc_fn"),
        b.range("calloc_fn"),
    );
    let sum = |v: &[&Site]| {
        v.iter()
            .fold((0, 0), |(c, b), s| (c + s.count, b + s.bytes))
    };
    assert_eq!(
        sum(&in_fn(&d.allocated, alloc_fn)),
        (2000, 96_000),
        "{:?}",
        d.allocated
    );
    assert_eq!(
        sum(&in_fn(&d.outstanding, alloc_fn)),
        (500, 24_000),
        "{:?}",
        d.outstanding
    );
    // realloc_fn: malloc(100) then realloc to 200000, two allocations; the first freed.
    assert_eq!(sum(&in_fn(&d.allocated, realloc_fn)), (2, 200_100));
    assert_eq!(sum(&in_fn(&d.outstanding, realloc_fn)), (1, 200_000));
    assert_eq!(sum(&in_fn(&d.outstanding, calloc_fn)), (1, 300));
    // posix_memalign (the pointer it stores), valloc and reallocarray.
    let aligned_fn = b.range("aligned_fn");
    assert_eq!(
        sum(&in_fn(&d.allocated, aligned_fn)),
        (3, 7000),
        "{:?}",
        d.allocated
    );
    assert_eq!(sum(&in_fn(&d.outstanding, aligned_fn)), (3, 7000));
    // The frees: alloc_fn's 1500 and realloc's, at least (libc frees its own too).
    assert!(d.frees >= 1501, "{} frees", d.frees);
    assert!(d.allocs >= 2006 && d.bytes >= 96_000 + 200_100 + 300 + 7000);
    assert!(d.dropped.is_empty(), "{:?}", d.dropped);
    for s in in_fn(&d.allocated, alloc_fn) {
        let main = b.range("main");
        assert!(
            s.user.get(1).is_some_and(|&ip| ip >= main.0 && ip < main.1),
            "alloc_fn called from main: {:x?}",
            s.user
        );
    }
}

/// The outstanding blocks' ages: 300 ms after the workload allocated them, a minimum
/// age of 200 ms keeps all 500 of alloc_fn's, aged at least 300 ms; a minimum of 60 s
/// keeps none.
#[test]
fn outstanding_blocks_are_kept_by_age() {
    if !bpf_available() {
        return;
    }
    let Some(b) = blocker() else { return };
    let alloc_fn = b.range("alloc_fn");
    for (min_age_ms, want) in [(200u64, 500u64), (60_000, 0)] {
        let d = traced_alloc(&b, &["alloc", "1000", "16", "500"], 300, min_age_ms);
        let kept = in_fn(&d.outstanding, alloc_fn);
        let count: u64 = kept.iter().map(|s| s.count).sum();
        assert_eq!(count, want, "minimum age {min_age_ms} ms: {kept:?}");
        for s in kept {
            assert!(s.age_ns >= 300_000_000, "aged {} ns", s.age_ns);
        }
    }
}
