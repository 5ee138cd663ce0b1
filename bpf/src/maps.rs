//! The layouts the BPF programs share with Rust: `#[repr(C)]` mirrors of the C structs
//! of `src/c/*.bpf.c`, and the crate's only `unsafe`: aya's `Pod` for each, which lets
//! aya copy them to and from map memory as bytes.
//!
//! Each struct has explicit padding fields, so that no byte of it is uninitialized
//! padding, and only integer fields (and integer arrays), so that every bit pattern the
//! kernel hands back is a valid value. The tests below pin their sizes to the C ones.

use aya::Pod;

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
    /// Its user stack's id in the program's `stacks` map (negative: the kernel's error).
    pub ustack: i32,
    /// Padding (zero).
    pub pad: u32,
}

// SAFETY: repr(C), integer fields only, explicit `pad` (4 + 4 + 8 + 4 + 4 = 24 bytes,
// checked below); every bit pattern is a valid value.
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
            ustack: u32_at(16)? as i32,
            pad: u32_at(20)?,
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
        assert_eq!(size_of::<LatencyEvent>(), 24);
    }

    #[test]
    fn latency_events_from_bytes() {
        let mut b = Vec::new();
        b.extend_from_slice(&7u32.to_ne_bytes());
        b.extend_from_slice(&8u32.to_ne_bytes());
        b.extend_from_slice(&123_456u64.to_ne_bytes());
        b.extend_from_slice(&(-14i32).to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        let e = LatencyEvent::from_bytes(&b).expect("event");
        assert_eq!((e.tgid, e.tid, e.ns, e.ustack), (7, 8, 123_456, -14));
        assert_eq!(LatencyEvent::from_bytes(&b[..20]), None);
    }
}
