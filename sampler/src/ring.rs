//! The lock-free mmap ring reader.
//!
//! The kernel writes records into a ring of `2^n` data pages that follows one control
//! page (`struct perf_event_mmap_page`). It publishes how far it has written in
//! `data_head`; we publish how far we have read in `data_tail`. The bytes in
//! `[data_tail, data_head)` are ours to read and the kernel does not touch them until we
//! move `data_tail` past them, so reading needs no lock:
//!
//! 1. load `data_head` with **Acquire** (pairs with the kernel's `smp_store_release`, so
//!    every record byte before `data_head` is visible);
//! 2. read the records in `[tail, head)`;
//! 3. store the new `data_tail` with **Release** (our reads happen before the kernel may
//!    overwrite that space).
//!
//! The pure part, cutting records out of the readable bytes (which may wrap around the
//! end of the data area), is [`walk`]: it works on plain byte slices and is tested without
//! the kernel. [`Ring`] adds the mapping and the two atomics. Records that are contiguous
//! in the ring are handed out in place (no copy); a record that wraps is copied once into
//! a reusable scratch buffer.
//!
//! Overwrite (`write_backward`) rings are not supported.
//!
//! This is the only module of the crate with `unsafe` code.

use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// Offsets of the fields of `struct perf_event_mmap_page` that the reader uses.
pub mod page {
    /// `data_head`: where the kernel has written up to (u64, written by the kernel).
    pub const DATA_HEAD: usize = 1024;
    /// `data_tail`: where user space has read up to (u64, written by us).
    pub const DATA_TAIL: usize = 1032;
    /// `data_offset`: where the data area starts in the mapping (u64, since Linux 4.1).
    pub const DATA_OFFSET: usize = 1040;
    /// `data_size`: the size of the data area in bytes (u64, since Linux 4.1).
    pub const DATA_SIZE: usize = 1048;
}

/// Size of `struct perf_event_header`: u32 type, u16 misc, u16 size.
pub const HEADER_SIZE: usize = 8;

/// A record whose header cannot be right: the ring was resynchronised past it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corrupt {
    /// Position in the ring's byte stream (the running `data_tail` value) of the header.
    pub offset: u64,
    /// The size the header claimed (or the available bytes, for an overrun head).
    pub size: u64,
}

/// What one [`Ring::drain`] (or [`walk`]) consumed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drained {
    /// Whole records handed to the callback.
    pub records: u64,
    /// Bytes consumed (records, plus anything skipped after a corrupt header).
    pub bytes: u64,
    /// Set when a header was invalid: the bytes from there to `data_head` were skipped.
    pub corrupt: Option<Corrupt>,
}

/// Cuts whole records out of the readable bytes `first ++ second` (the part of the ring
/// from the tail to the end of the data area, then the part that wrapped to its start)
/// and calls `f` with each record, header included.
///
/// `base` is the stream position of `first[0]` (only used to report [`Corrupt`]
/// offsets). A header whose size is below 8 or beyond the available bytes stops the
/// walk: everything available is then counted as consumed (the only safe resync point is
/// `data_head`), and [`Drained::corrupt`] says where. An error from `f` stops the walk
/// after that record (it counts as consumed) and is returned with what was consumed.
pub fn walk<F>(
    first: &[u8],
    second: &[u8],
    base: u64,
    scratch: &mut Vec<u8>,
    mut f: F,
) -> (Drained, io::Result<()>)
where
    F: FnMut(&[u8]) -> io::Result<()>,
{
    let total = first.len() + second.len();
    let mut out = Drained::default();
    let mut pos = 0usize;
    while pos < total {
        let remaining = total - pos;
        let mut hdr = [0u8; HEADER_SIZE];
        let size = if remaining < HEADER_SIZE {
            remaining as u64
        } else {
            copy_out(first, second, pos, &mut hdr);
            u64::from(u16::from_le_bytes([hdr[6], hdr[7]]))
        };
        if remaining < HEADER_SIZE || size < HEADER_SIZE as u64 || size > remaining as u64 {
            out.corrupt = Some(Corrupt {
                offset: base.wrapping_add(pos as u64),
                size,
            });
            out.bytes = total as u64;
            return (out, Ok(()));
        }
        let size = size as usize;
        let end = pos + size;
        let res = if end <= first.len() {
            f(&first[pos..end])
        } else if pos >= first.len() {
            f(&second[pos - first.len()..end - first.len()])
        } else {
            scratch.clear();
            scratch.extend_from_slice(&first[pos..]);
            scratch.extend_from_slice(&second[..end - first.len()]);
            f(scratch)
        };
        pos = end;
        out.records += 1;
        out.bytes = pos as u64;
        if let Err(e) = res {
            return (out, Err(e));
        }
    }
    (out, Ok(()))
}

/// Copies `out.len()` bytes at `pos` of `first ++ second` into `out`; the caller
/// guarantees they are available.
fn copy_out(first: &[u8], second: &[u8], pos: usize, out: &mut [u8]) {
    for (i, b) in out.iter_mut().enumerate() {
        let p = pos + i;
        *b = match first.get(p) {
            Some(x) => *x,
            None => second.get(p - first.len()).copied().unwrap_or(0),
        };
    }
}

/// Splits the readable range `[tail, head)` of a data area of `size` bytes into the
/// offsets and lengths of its two parts: `(start, first_len, second_len)`. `None` when
/// `head - tail` exceeds `size` (the head cannot be trusted) or `size` is 0.
pub fn split(tail: u64, head: u64, size: usize) -> Option<(usize, usize, usize)> {
    let avail = head.wrapping_sub(tail);
    if size == 0 || avail > size as u64 {
        return None;
    }
    let avail = avail as usize;
    let start = (tail % size as u64) as usize;
    let first = avail.min(size - start);
    Some((start, first, avail - first))
}

/// One mmap'd perf ring: the control page and `2^n` data pages of one perf event fd.
///
/// Unmapped on drop. The fd must stay open while the ring is used (the mapping holds
/// the kernel's buffer alive either way, but no new data arrives once it is closed).
#[derive(Debug)]
pub struct Ring {
    base: NonNull<u8>,
    map_len: usize,
    data_offset: usize,
    data_size: usize,
    /// Our copy of `data_tail`: we are its only writer.
    tail: u64,
    scratch: Vec<u8>,
}

// SAFETY: `Ring` exclusively owns its mapping (nothing else holds `base`); the memory is
// shared with the kernel only through the two atomics and the `[tail, head)` protocol,
// which does not depend on which thread reads. Moving it to another thread is sound.
unsafe impl Send for Ring {}

impl Ring {
    /// Maps the ring of perf event `fd` with `data_pages` data pages (a power of two,
    /// as the kernel requires) plus the control page, read-write and shared (so that
    /// `data_tail` reaches the kernel and it never overwrites unread records).
    pub fn new(fd: impl AsFd, data_pages: usize) -> io::Result<Ring> {
        let einval = || io::Error::from_raw_os_error(libc::EINVAL);
        if data_pages == 0 || !data_pages.is_power_of_two() {
            return Err(einval());
        }
        let page_size = hwprof_pmu::sys::page_size();
        let map_len = data_pages
            .checked_add(1)
            .and_then(|n| n.checked_mul(page_size))
            .ok_or_else(einval)?;
        let raw = fd.as_fd().as_raw_fd();
        // SAFETY: a fresh mapping chosen by the kernel (addr null) of `map_len` bytes over
        // an fd we borrow for the call; it aliases no Rust object. The result is checked
        // for MAP_FAILED before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                raw,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(ptr.cast::<u8>()).ok_or_else(einval)?;
        let mut ring = Ring {
            base,
            map_len,
            data_offset: 0,
            data_size: 0,
            tail: 0,
            scratch: Vec::new(),
        };
        // From here on, `ring`'s Drop unmaps on every error path.
        let off = ring.load_u64(page::DATA_OFFSET, Ordering::Relaxed);
        let size = ring.load_u64(page::DATA_SIZE, Ordering::Relaxed);
        let (off, size) = if size == 0 {
            // Kernels before 4.1 leave both 0: the data starts right after the control
            // page and fills the rest of the mapping.
            (page_size as u64, (data_pages * page_size) as u64)
        } else {
            (off, size)
        };
        let fits = off
            .checked_add(size)
            .is_some_and(|end| end <= map_len as u64);
        if !fits || off % 8 != 0 || !size.is_power_of_two() || (off as usize) < page::DATA_SIZE + 8
        {
            return Err(einval());
        }
        ring.data_offset = off as usize;
        ring.data_size = size as usize;
        ring.tail = ring.load_u64(page::DATA_TAIL, Ordering::Relaxed);
        Ok(ring)
    }

    /// Loads the u64 control-page field at `offset`.
    fn load_u64(&self, offset: usize, order: Ordering) -> u64 {
        debug_assert!(offset + 8 <= page::DATA_SIZE + 8 && offset % 8 == 0);
        // SAFETY: `offset` is one of the `page::*` constants, all < 1056, inside the first
        // (control) page of a live mapping of at least two pages, and 8-aligned because
        // the mapping is page-aligned. The kernel writes these fields concurrently, so
        // they are only ever accessed atomically here.
        let cell = unsafe { AtomicU64::from_ptr(self.base.as_ptr().add(offset).cast::<u64>()) };
        cell.load(order)
    }

    /// The size of the data area in bytes (from the control page).
    pub fn data_size(&self) -> usize {
        self.data_size
    }

    /// Where the data area starts in the mapping (from the control page).
    pub fn data_offset(&self) -> usize {
        self.data_offset
    }

    /// The current `data_head`.
    pub fn head(&self) -> u64 {
        // ATOMICS: Acquire pairs with the kernel's release store of data_head
        // (perf_output_put_handle): every record byte written before that head is
        // visible to the reads that follow.
        self.load_u64(page::DATA_HEAD, Ordering::Acquire)
    }

    /// Our read position (`data_tail`).
    pub fn tail(&self) -> u64 {
        self.tail
    }

    /// Whether unread records are waiting (one memory load, no syscall).
    pub fn has_data(&self) -> bool {
        self.head() != self.tail
    }

    /// Calls `f` with every whole record (header included) available now, in ring order,
    /// then advances `data_tail` past them. Contiguous records are passed in place;
    /// records that wrap are copied once into a reused buffer.
    ///
    /// A header with an impossible size (or a head more than the ring ahead of the tail)
    /// skips everything up to `data_head` and is reported in [`Drained::corrupt`]; the
    /// ring stays usable. An error from `f` stops the drain after that record and is
    /// returned; the records passed so far are consumed.
    pub fn drain<F>(&mut self, f: F) -> io::Result<Drained>
    where
        F: FnMut(&[u8]) -> io::Result<()>,
    {
        let head = self.head();
        if head == self.tail {
            return Ok(Drained::default());
        }
        let Some((start, first_len, second_len)) = split(self.tail, head, self.data_size) else {
            let skipped = head.wrapping_sub(self.tail);
            let corrupt = Corrupt {
                offset: self.tail,
                size: skipped,
            };
            self.set_tail(head);
            return Ok(Drained {
                records: 0,
                bytes: skipped,
                corrupt: Some(corrupt),
            });
        };
        // SAFETY: `split` guarantees start + first_len <= data_size and
        // second_len <= data_size - first_len, and `new` checked that
        // data_offset + data_size lies inside the mapping, so both ranges are in bounds
        // of the live mapping. They cover exactly `[tail, head)`, which the kernel does
        // not write until we publish a data_tail past them (below, after the last use of
        // the slices), so no write races with these shared borrows.
        let (first, second) = unsafe {
            let data = self.base.as_ptr().add(self.data_offset);
            (
                std::slice::from_raw_parts(data.add(start), first_len),
                std::slice::from_raw_parts(data, second_len),
            )
        };
        let (drained, res) = walk(first, second, self.tail, &mut self.scratch, f);
        self.set_tail(self.tail.wrapping_add(drained.bytes));
        res.map(|()| drained)
    }

    /// Publishes `tail` as `data_tail`.
    fn set_tail(&mut self, tail: u64) {
        self.tail = tail;
        // SAFETY: DATA_TAIL (1032) is inside the control page of the live mapping and
        // 8-aligned; the kernel only reads this field, and we only access it atomically.
        let cell =
            unsafe { AtomicU64::from_ptr(self.base.as_ptr().add(page::DATA_TAIL).cast::<u64>()) };
        // ATOMICS: Release orders all our reads of the consumed records before the store,
        // pairing with the kernel's read of data_tail (smp_load_acquire-equivalent
        // barrier in perf_output_begin) before it reuses that space.
        cell.store(tail, Ordering::Release);
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: `base`/`map_len` are exactly what mmap returned and was given; no slice
        // into the mapping outlives a `&mut self` method, so nothing refers to it now.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.map_len);
        }
    }
}

#[cfg(test)]
mod full_tests;

#[cfg(test)]
mod tests {
    use super::*;

    use super::full_tests::rec;

    /// Writes `stream` into a ring of `size` bytes starting at stream position `tail`, and
    /// returns the two readable slices as the reader would see them.
    fn ring_with(size: usize, tail: u64, stream: &[u8]) -> Vec<u8> {
        let mut ring = vec![0xEEu8; size];
        for (i, b) in stream.iter().enumerate() {
            ring[((tail + i as u64) % size as u64) as usize] = *b;
        }
        ring
    }

    fn drain_sim(size: usize, tail: u64, stream: &[u8]) -> (Drained, Vec<Vec<u8>>) {
        let ring = ring_with(size, tail, stream);
        let head = tail + stream.len() as u64;
        let (start, a, b) = split(tail, head, size).expect("fits");
        let mut got = Vec::new();
        let mut scratch = Vec::new();
        let (d, res) = walk(
            &ring[start..start + a],
            &ring[..b],
            tail,
            &mut scratch,
            |r| {
                got.push(r.to_vec());
                Ok(())
            },
        );
        assert!(res.is_ok());
        (d, got)
    }

    #[test]
    fn split_wraps_at_the_end_of_the_data_area() {
        assert_eq!(split(0, 0, 64), Some((0, 0, 0)));
        assert_eq!(split(8, 40, 64), Some((8, 32, 0)));
        assert_eq!(split(48, 80, 64), Some((48, 16, 16)));
        // Positions keep growing past the size; only their remainder matters.
        assert_eq!(split(64 * 5 + 56, 64 * 6 + 8, 64), Some((56, 8, 8)));
        // A head more than the ring ahead cannot be trusted.
        assert_eq!(split(0, 65, 64), None);
        assert_eq!(split(0, 8, 0), None);
        // u64 wrap-around of the positions themselves.
        assert_eq!(split(u64::MAX - 7, 8, 64), Some((56, 8, 8)));
    }

    #[test]
    fn contiguous_records_come_out_in_order() {
        let mut stream = rec(9, 16, 1);
        stream.extend(rec(3, 24, 2));
        stream.extend(rec(2, 8, 3));
        let (d, got) = drain_sim(128, 0, &stream);
        assert_eq!(d.records, 3);
        assert_eq!(d.bytes, 48);
        assert_eq!(d.corrupt, None);
        assert_eq!(got, vec![rec(9, 16, 1), rec(3, 24, 2), rec(2, 8, 3)]);
    }

    #[test]
    fn a_record_that_wraps_is_reassembled() {
        // Ring of 64: tail at 48, a 32-byte record wraps 16 + 16, then an 8-byte one.
        let mut stream = rec(9, 32, 7);
        stream.extend(rec(5, 8, 0));
        let (d, got) = drain_sim(64, 48, &stream);
        assert_eq!(d.records, 2);
        assert_eq!(d.bytes, 40);
        assert_eq!(got, vec![rec(9, 32, 7), rec(5, 8, 0)]);
    }

    #[test]
    fn a_header_split_across_the_end_is_read() {
        // Not produced by the kernel (records are 8-aligned), but must not misread.
        let stream = rec(9, 12, 4);
        let (d, got) = drain_sim(64, 60, &stream);
        assert_eq!(d.records, 1);
        assert_eq!(got, vec![rec(9, 12, 4)]);
    }

    #[test]
    fn records_after_a_wrap_start_at_the_beginning() {
        let mut stream = rec(9, 16, 1); // 48..64
        stream.extend(rec(9, 16, 2)); // 0..16 (the second slice only)
        let (d, got) = drain_sim(64, 48, &stream);
        assert_eq!(d.records, 2);
        assert_eq!(got[1], rec(9, 16, 2));
    }

    #[test]
    fn corrupt_sizes_stop_and_skip_to_head() {
        for bad in [0u16, 4, 7, 200] {
            let mut stream = rec(9, 16, 1);
            let mut r = rec(9, 16, 2);
            r[6..8].copy_from_slice(&bad.to_le_bytes());
            stream.extend(r);
            stream.extend(rec(9, 16, 3));
            let (d, got) = drain_sim(64, 40, &stream);
            assert_eq!(got, vec![rec(9, 16, 1)], "size {bad}");
            assert_eq!(d.records, 1);
            assert_eq!(d.bytes, 48, "everything up to head is skipped");
            assert_eq!(
                d.corrupt,
                Some(Corrupt {
                    offset: 56,
                    size: u64::from(bad)
                })
            );
        }
    }

    #[test]
    fn a_truncated_header_is_corrupt() {
        let mut stream = rec(9, 16, 1);
        stream.extend([1, 2, 3]);
        let (d, got) = drain_sim(64, 0, &stream);
        assert_eq!(got.len(), 1);
        assert_eq!(d.bytes, 19);
        assert_eq!(d.corrupt.map(|c| c.offset), Some(16));
    }

    #[test]
    fn a_sink_error_stops_after_that_record() {
        let mut stream = rec(9, 16, 1);
        stream.extend(rec(9, 16, 2));
        stream.extend(rec(9, 16, 3));
        let mut scratch = Vec::new();
        let mut n = 0;
        let (d, res) = walk(&stream, &[], 0, &mut scratch, |_| {
            n += 1;
            if n == 2 {
                Err(io::Error::other("full"))
            } else {
                Ok(())
            }
        });
        assert!(res.is_err());
        assert_eq!(d.records, 2);
        assert_eq!(d.bytes, 32);
    }

    #[test]
    fn ring_rejects_page_counts_that_are_not_powers_of_two() {
        let f = std::fs::File::open("/dev/null").expect("/dev/null");
        for n in [0, 3, 6] {
            let e = Ring::new(&f, n).expect_err("not a power of two");
            assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
        }
    }

    #[test]
    fn a_live_ring_reads_its_control_page() {
        let Some(fd) = super::full_tests::comm_watch(1) else {
            return;
        };
        let mut ring = Ring::new(&fd, 2).expect("mmap");
        assert_eq!(ring.data_size(), 2 * hwprof_pmu::sys::page_size());
        assert_eq!(ring.data_offset(), hwprof_pmu::sys::page_size());
        // A COMM record of our own thread: rename it.
        let name = c"hwprof-ringtst";
        // SAFETY: test-only prctl with a valid NUL-terminated string.
        unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
        assert!(ring.has_data());
        let mut types = Vec::new();
        let d = ring
            .drain(|r| {
                types.push(u32::from_le_bytes([r[0], r[1], r[2], r[3]]));
                Ok(())
            })
            .expect("drain");
        assert!(types.contains(&3), "a COMM record: {types:?}");
        assert_eq!(ring.tail(), d.bytes);
        assert_eq!(ring.load_u64(page::DATA_TAIL, Ordering::Relaxed), d.bytes);
        assert!(!ring.has_data());
    }
}
