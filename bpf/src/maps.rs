//! The layouts the BPF programs share with Rust: `#[repr(C)]` mirrors of the C structs
//! of `src/c/*.bpf.c`, and the crate's only `unsafe`: aya's `Pod` for each, which lets
//! aya copy them to and from map memory as bytes.
//!
//! Each struct has explicit padding fields, so that no byte of it is uninitialized
//! padding, and only integer fields (and integer arrays), so that every bit pattern the
//! kernel hands back is a valid value. The tests below pin their sizes to the C ones.

use aya::Pod;

/// `struct config` of offcpu.bpf.c.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct OffCpuConfig {
    pub window_start: u64,
    pub open: u32,
    /// Entries left in the `present` map (the programs count them down).
    pub present: u32,
    /// When the window closed, 0 while it is open.
    pub window_end: u64,
}

/// `struct start` of offcpu.bpf.c: a switch-out with no switch-in yet.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct OffCpuStart {
    pub ts: u64,
    pub tgid: u32,
    pub ustack: i32,
    pub kstack: i32,
    pub pad: u32,
    /// The thread's CPU time (`se.sum_exec_runtime`) at the switch-out.
    pub runtime: u64,
}

/// `struct present` of offcpu.bpf.c: a thread present when the window opened.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct OffCpuPresent {
    pub tgid: u32,
    pub pad: u32,
    /// Its CPU time then (`/proc/T/schedstat`), [`NO_RUNTIME`] when it was runnable.
    pub runtime: u64,
}

/// `NO_RUNTIME` of offcpu.bpf.c.
pub(crate) const NO_RUNTIME: u64 = u64::MAX;

/// `struct block_key` of offcpu.bpf.c.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct OffCpuKey {
    pub tgid: u32,
    pub tid: u32,
    pub ustack: i32,
    pub kstack: i32,
    pub kind: u32,
    pub pad: u32,
}

/// `struct block_val` of offcpu.bpf.c.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct OffCpuSum {
    pub ns: u64,
    pub count: u64,
}

/// `struct thread` of offcpu.bpf.c.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Comm {
    pub comm: [u8; 16],
}

/// `struct site_key` of alloc.bpf.c: a process and the user stack of its allocating call.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct AllocSiteKey {
    pub tgid: u32,
    pub stack: i32,
}

/// `struct site` of alloc.bpf.c (and of io.bpf.c's sums: count and a total).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CountBytes {
    pub count: u64,
    pub bytes: u64,
}

/// `struct allocation` of alloc.bpf.c: a block still allocated.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Allocation {
    pub size: u64,
    pub tgid: u32,
    pub stack: i32,
    /// When it was allocated (`CLOCK_MONOTONIC` ns).
    pub ts: u64,
}

/// `struct sum_key` of io.bpf.c.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct IoSumKey {
    pub tgid: u32,
    pub tid: u32,
    pub nr: u32,
    pub stack: i32,
    pub caller: u64,
    pub fd: i32,
    pub generation: u32,
}

/// `struct sum` of io.bpf.c.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct IoSumVal {
    pub count: u64,
    pub ns: u64,
    pub bytes: u64,
    pub errors: u64,
}

/// `struct hdr_key` of io.bpf.c.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct IoHdrKey {
    pub tgid: u32,
    pub fd: i32,
    pub generation: u32,
    pub nr: u32,
    pub index: u32,
    pub pad: u32,
}

/// `struct event` of latency.bpf.c: one call slower than the threshold.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatencyEvent {
    /// The process.
    pub tgid: u32,
    /// The thread.
    pub tid: u32,
    /// The call's latency.
    pub ns: u64,
    /// When it returned (`CLOCK_MONOTONIC` ns).
    pub time: u64,
    /// The function's address in the process, where the call entered it.
    pub ip: u64,
    /// The user stack at its return in the program's `stacks` map (negative: none
    /// asked for, or the kernel's error).
    pub ustack: i32,
    /// Padding (zero).
    pub pad: u32,
}

// SAFETY: repr(C), integer fields only, no implicit padding (8 + 4 + 4 + 8 = 24
// bytes, checked below); every bit pattern is a valid value.
unsafe impl Pod for OffCpuConfig {}
// SAFETY: repr(C), integer fields only, explicit `pad` (8 + 4 * 4 + 8 = 32 bytes,
// checked below); every bit pattern is a valid value.
unsafe impl Pod for OffCpuStart {}
// SAFETY: repr(C), integer fields only, explicit `pad` (4 + 4 + 8 = 16 bytes, checked
// below); every bit pattern is a valid value.
unsafe impl Pod for OffCpuPresent {}
// SAFETY: repr(C), six u32/i32 fields, explicit `pad` (24 bytes, no implicit padding,
// checked below); every bit pattern is a valid value.
unsafe impl Pod for OffCpuKey {}
// SAFETY: repr(C), two u64 (16 bytes, no padding); every bit pattern is valid.
unsafe impl Pod for OffCpuSum {}
// SAFETY: repr(C), one byte array (16 bytes, alignment 1, no padding); every bit
// pattern is valid.
unsafe impl Pod for Comm {}
// SAFETY: repr(C), two 4-byte integers (8 bytes, no padding, checked below); every bit
// pattern is a valid value.
unsafe impl Pod for AllocSiteKey {}
// SAFETY: repr(C), two u64 (16 bytes, no padding); every bit pattern is valid.
unsafe impl Pod for CountBytes {}
// SAFETY: repr(C), a u64, two 4-byte integers, a u64 (24 bytes, no padding, checked
// below); every bit pattern is a valid value.
unsafe impl Pod for Allocation {}
// SAFETY: repr(C), four 4-byte integers, a u64, two 4-byte integers (32 bytes, no
// padding, checked below); every bit pattern is a valid value.
unsafe impl Pod for IoSumKey {}
// SAFETY: repr(C), four u64 (32 bytes, no padding); every bit pattern is valid.
unsafe impl Pod for IoSumVal {}
// SAFETY: repr(C), six 4-byte integers, explicit `pad` (24 bytes, no padding, checked
// below); every bit pattern is a valid value.
unsafe impl Pod for IoHdrKey {}
// SAFETY: repr(C), integer fields only, explicit `pad` (4 + 4 + 3 * 8 + 4 + 4 = 40
// bytes, checked below); every bit pattern is a valid value.
unsafe impl Pod for LatencyEvent {}

impl LatencyEvent {
    /// The event in the bytes of a ring buffer record; `None` when they are too short.
    pub fn from_bytes(b: &[u8]) -> Option<LatencyEvent> {
        let u32_at = |o: usize| Some(u32::from_ne_bytes(b.get(o..o + 4)?.try_into().ok()?));
        let u64_at = |o: usize| Some(u64::from_ne_bytes(b.get(o..o + 8)?.try_into().ok()?));
        Some(LatencyEvent {
            tgid: u32_at(0)?,
            tid: u32_at(4)?,
            ns: u64_at(8)?,
            time: u64_at(16)?,
            ip: u64_at(24)?,
            ustack: u32_at(32)? as i32,
            pad: u32_at(36)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of;

    /// The sizes of the C structs (clang for the BPF target: same rules as x86-64).
    #[test]
    fn sizes_match_the_c_structs() {
        assert_eq!(size_of::<OffCpuConfig>(), 24);
        assert_eq!(size_of::<OffCpuStart>(), 32);
        assert_eq!(size_of::<OffCpuPresent>(), 16);
        assert_eq!(size_of::<OffCpuKey>(), 24);
        assert_eq!(size_of::<OffCpuSum>(), 16);
        assert_eq!(size_of::<Comm>(), 16);
        assert_eq!(size_of::<LatencyEvent>(), 40);
        assert_eq!(size_of::<AllocSiteKey>(), 8);
        assert_eq!(size_of::<CountBytes>(), 16);
        assert_eq!(size_of::<Allocation>(), 24);
        assert_eq!(size_of::<IoSumKey>(), 32);
        assert_eq!(size_of::<IoSumVal>(), 32);
        assert_eq!(size_of::<IoHdrKey>(), 24);
    }

    #[test]
    fn latency_events_from_bytes() {
        let mut b = Vec::new();
        b.extend_from_slice(&7u32.to_ne_bytes());
        b.extend_from_slice(&8u32.to_ne_bytes());
        b.extend_from_slice(&123_456u64.to_ne_bytes());
        b.extend_from_slice(&99u64.to_ne_bytes());
        b.extend_from_slice(&0x40_1000u64.to_ne_bytes());
        b.extend_from_slice(&(-14i32).to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        let e = LatencyEvent::from_bytes(&b).expect("event");
        assert_eq!(
            (e.tgid, e.tid, e.ns, e.time, e.ip, e.ustack),
            (7, 8, 123_456, 99, 0x40_1000, -14)
        );
        assert_eq!(LatencyEvent::from_bytes(&b[..36]), None);
    }
}
