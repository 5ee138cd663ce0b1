//! The ring at its limits: exactly full (`data_head - data_tail == data_size`), records
//! that end exactly at the end of the data area, records that wrap, a full ring read
//! through [`Ring::drain`] over a mapping of a plain file (no kernel), and a live ring the
//! kernel fills until it loses records, with the `PERF_RECORD_LOST` count checked
//! against what was produced.

use super::*;
use std::os::unix::fs::FileExt;

/// A record of `size` bytes (a multiple of 8, as the kernel writes them) with type `ty`
/// and every payload byte `fill` (ring.rs's tests too).
pub(super) fn rec(ty: u32, size: u16, fill: u8) -> Vec<u8> {
    let mut v = ty.to_le_bytes().to_vec();
    v.extend_from_slice(&0u16.to_le_bytes());
    v.extend_from_slice(&size.to_le_bytes());
    v.resize(usize::from(size), fill);
    v
}

/// `stream` written into a data area of `size` bytes from stream position `tail`.
fn area(size: usize, tail: u64, stream: &[u8]) -> Vec<u8> {
    let mut a = vec![0xEEu8; size];
    for (i, b) in stream.iter().enumerate() {
        a[(tail.wrapping_add(i as u64) % size as u64) as usize] = *b;
    }
    a
}

/// What [`walk`] handed out for the readable part `[tail, tail + stream.len())` of the
/// data area: each record's bytes, and whether it was passed in place (a slice of the
/// area) rather than copied into the scratch buffer.
fn walked(size: usize, tail: u64, stream: &[u8]) -> (Drained, Vec<(Vec<u8>, bool)>) {
    let a = area(size, tail, stream);
    let head = tail.wrapping_add(stream.len() as u64);
    let (start, first, second) = split(tail, head, size).expect("the stream fits");
    let range = a.as_ptr_range();
    let mut got = Vec::new();
    let mut scratch = Vec::new();
    let (d, res) = walk(
        &a[start..start + first],
        &a[..second],
        tail,
        &mut scratch,
        |r| {
            let r_range = r.as_ptr_range();
            let in_place = range.start <= r_range.start && r_range.end <= range.end;
            got.push((r.to_vec(), in_place));
            Ok(())
        },
    );
    assert!(res.is_ok());
    (d, got)
}

#[test]
fn split_accepts_a_ring_exactly_full() {
    // head - tail == size: every byte of the data area is unread, which is valid.
    assert_eq!(split(0, 64, 64), Some((0, 64, 0)));
    assert_eq!(split(8, 72, 64), Some((8, 56, 8)));
    assert_eq!(split(56, 120, 64), Some((56, 8, 56)));
    assert_eq!(split(64 * 9, 64 * 10, 64), Some((0, 64, 0)));
    // Positions that wrap around u64 while the ring is full.
    assert_eq!(split(u64::MAX - 7, 56, 64), Some((56, 8, 56)));
    // One byte more than the ring holds cannot be trusted, at any tail.
    for tail in [0u64, 8, 56, 64 * 9, u64::MAX - 7] {
        assert_eq!(split(tail, tail.wrapping_add(65), 64), None, "tail {tail}");
        let (start, a, b) = split(tail, tail.wrapping_add(64), 64).expect("full");
        assert_eq!((start as u64, a + b), (tail % 64, 64), "tail {tail}");
    }
}

#[test]
fn a_full_ring_of_contiguous_records_is_read_in_place() {
    // Eight 16-byte records fill a 128-byte area; the last ends exactly at its end.
    let stream: Vec<u8> = (0..8).flat_map(|i| rec(9, 16, i)).collect();
    let (d, got) = walked(128, 0, &stream);
    assert_eq!((d.records, d.bytes, d.corrupt), (8, 128, None));
    for (i, (r, in_place)) in got.iter().enumerate() {
        assert_eq!(*r, rec(9, 16, i as u8));
        assert!(in_place, "record {i} was copied, not passed in place");
    }
}

#[test]
fn a_full_ring_split_at_a_record_boundary_is_read_in_place() {
    // Tail at 80: records at 80..128 end exactly at the end of the area, those after
    // start exactly at its beginning. None of them wraps, so none is copied.
    for tail in [80u64, 128 + 80, 1 << 40] {
        let stream: Vec<u8> = (0..8).flat_map(|i| rec(9, 16, i)).collect();
        let (d, got) = walked(128, tail, &stream);
        assert_eq!(
            (d.records, d.bytes, d.corrupt),
            (8, 128, None),
            "tail {tail}"
        );
        let recs: Vec<Vec<u8>> = got.iter().map(|(r, _)| r.clone()).collect();
        assert_eq!(recs, (0..8).map(|i| rec(9, 16, i)).collect::<Vec<_>>());
        assert!(
            got.iter().all(|(_, in_place)| *in_place),
            "tail {tail}: {:?}",
            got.iter().map(|(_, p)| *p).collect::<Vec<_>>()
        );
    }
}

#[test]
fn a_full_ring_with_a_wrapped_record_copies_only_that_one() {
    // Tail at 56 of 128: 24 + 32 bytes, then a 40-byte record over the end (16 + 24),
    // then 32 bytes from 24 to 56: 128 bytes, the ring exactly full.
    let sizes = [24u16, 32, 40, 32];
    let stream: Vec<u8> = sizes
        .iter()
        .enumerate()
        .flat_map(|(i, &s)| rec(3 + i as u32, s, 0x10 + i as u8))
        .collect();
    assert_eq!(stream.len(), 128);
    let (d, got) = walked(128, 56, &stream);
    assert_eq!((d.records, d.bytes, d.corrupt), (4, 128, None));
    for (i, (r, in_place)) in got.iter().enumerate() {
        assert_eq!(
            *r,
            rec(3 + i as u32, sizes[i], 0x10 + i as u8),
            "record {i}"
        );
        assert_eq!(*in_place, i != 2, "only record 2 wraps: record {i}");
    }
}

#[test]
fn one_record_as_large_as_the_ring() {
    for tail in [0u64, 8, 64, 120] {
        let stream = rec(9, 128, 0x5A);
        let (d, got) = walked(128, tail, &stream);
        assert_eq!(
            (d.records, d.bytes, d.corrupt),
            (1, 128, None),
            "tail {tail}"
        );
        assert_eq!(got[0].0, stream);
        assert_eq!(
            got[0].1,
            tail == 0,
            "tail {tail}: copied only when it wraps"
        );
    }
}

#[test]
fn a_last_record_one_byte_too_long_is_corrupt() {
    // The ring is full, but the last header claims 8 bytes more than are left.
    let mut stream: Vec<u8> = (0..7).flat_map(|i| rec(9, 16, i)).collect();
    let mut last = rec(9, 16, 7);
    last[6..8].copy_from_slice(&24u16.to_le_bytes());
    stream.extend(last);
    let (d, got) = walked(128, 40, &stream);
    assert_eq!(got.len(), 7);
    assert_eq!(d.bytes, 128, "everything up to head is skipped");
    assert_eq!(
        d.corrupt,
        Some(Corrupt {
            offset: 40 + 112,
            size: 24
        })
    );
}

/// A ring mapped over a plain file: the control page and `pages` data pages, with
/// `data_tail` = `tail`, `data_head` = `tail + stream.len()` and `stream` in the data
/// area, as the kernel would leave them. `Ring::new` reads data_offset and data_size 0,
/// as from kernels before 4.1: the data area then follows the control page.
fn file_ring(pages: usize, tail: u64, stream: &[u8]) -> (std::fs::File, Ring) {
    let page = hwprof_pmu::sys::page_size();
    let f = tempfile::tempfile().expect("a temporary file");
    f.set_len(((pages + 1) * page) as u64).expect("set_len");
    f.write_all_at(&tail.to_le_bytes(), page::DATA_TAIL as u64)
        .expect("data_tail");
    let head = tail.wrapping_add(stream.len() as u64);
    f.write_all_at(&head.to_le_bytes(), page::DATA_HEAD as u64)
        .expect("data_head");
    f.write_all_at(&area(pages * page, tail, stream), page as u64)
        .expect("data");
    let ring = Ring::new(&f, pages).expect("map the file");
    (f, ring)
}

fn data_tail_of(f: &std::fs::File) -> u64 {
    let mut b = [0u8; 8];
    f.read_exact_at(&mut b, page::DATA_TAIL as u64)
        .expect("data_tail");
    u64::from_le_bytes(b)
}

#[test]
fn drain_reads_a_ring_exactly_full_and_frees_all_of_it() {
    let page = hwprof_pmu::sys::page_size();
    let size = 2 * page;
    // Records of 8 to 64 bytes, the last padded so that they fill the area exactly.
    let mut stream = Vec::new();
    let mut expect = Vec::new();
    let mut i = 0u32;
    while stream.len() < size {
        let left = size - stream.len();
        let s = (8 * (1 + i as usize % 8)).min(left);
        let r = rec(i, s as u16, i as u8);
        stream.extend_from_slice(&r);
        expect.push(r);
        i += 1;
    }
    assert_eq!(stream.len(), size);
    // Tails: at the start, inside a record's worth of the end, and at the last 8 bytes
    // (the header of the first record is the last thing before the wrap).
    for tail in [0u64, 3 * size as u64 + 40, size as u64 - 8, u64::MAX - 7] {
        let (f, mut ring) = file_ring(2, tail, &stream);
        assert_eq!(ring.data_size(), size);
        assert!(ring.has_data());
        let mut got = Vec::new();
        let d = ring
            .drain(|r| {
                got.push(r.to_vec());
                Ok(())
            })
            .expect("drain");
        assert_eq!(d.corrupt, None, "tail {tail}: a full ring is not corrupt");
        assert_eq!((d.records, d.bytes), (expect.len() as u64, size as u64));
        assert_eq!(got, expect, "tail {tail}");
        assert_eq!(ring.tail(), tail.wrapping_add(size as u64));
        assert_eq!(
            data_tail_of(&f),
            tail.wrapping_add(size as u64),
            "published"
        );
        assert!(!ring.has_data());
    }
}

#[test]
fn drain_skips_a_head_more_than_the_ring_ahead() {
    let page = hwprof_pmu::sys::page_size();
    let size = page as u64;
    let stream: Vec<u8> = rec(9, 16, 1).repeat(page / 16);
    let (f, mut ring) = file_ring(1, 16, &stream);
    // One byte more than the ring holds.
    f.write_all_at(&(16 + size + 1).to_le_bytes(), page::DATA_HEAD as u64)
        .expect("data_head");
    let mut n = 0;
    let d = ring
        .drain(|_| {
            n += 1;
            Ok(())
        })
        .expect("drain");
    assert_eq!(n, 0);
    assert_eq!(d.bytes, size + 1);
    assert_eq!(
        d.corrupt,
        Some(Corrupt {
            offset: 16,
            size: size + 1
        })
    );
    assert_eq!(
        data_tail_of(&f),
        16 + size + 1,
        "resynchronised at data_head"
    );
}

/// Renames this thread through `/proc/thread-self/comm`: the kernel writes a COMM
/// record into the rings of this thread's events that ask for them.
fn rename(name: &str) {
    std::fs::write("/proc/thread-self/comm", name).expect("write /proc/thread-self/comm");
}

const COMM: u32 = 3;
const LOST: u32 = 2;

/// A software dummy event of this thread that records its COMM changes (sample period
/// `period`, sample_id TID), enabled; `None` after a [`Why::Setup`] skip when it cannot
/// be opened (ring.rs's tests too).
///
/// [`Why::Setup`]: hwprof_testkit::Why::Setup
pub(super) fn comm_watch(period: u64) -> Option<std::os::fd::OwnedFd> {
    use hwprof_pmu::attr::{Attr, sample, types};
    let mut a = Attr::new(types::SOFTWARE, 9); // PERF_COUNT_SW_DUMMY
    a.sample_period = period;
    a.sample_type = sample::TID;
    a.comm = true;
    a.disabled = false;
    a.sample_id_all = true;
    match hwprof_pmu::sys::perf_event_open(&a, 0, -1, None) {
        Ok(fd) => Some(fd),
        Err(e) => {
            hwprof_testkit::skip(
                hwprof_testkit::Why::Setup,
                format_args!("perf_event_open of a software dummy event: {e}"),
            );
            None
        }
    }
}

/// The kernel fills a one-page ring with COMM records of 32 bytes while nothing reads
/// it: it stops at the last whole record that fits, counts the rest as lost, and writes
/// a `PERF_RECORD_LOST` with that count once there is room again. Records kept plus
/// records lost is what was produced, and the records kept are the first ones, in order.
#[test]
fn a_live_ring_filled_to_the_brim_counts_what_it_lost() {
    let Some(fd) = comm_watch(0) else {
        return;
    };
    let mut ring = Ring::new(&fd, 1).expect("mmap");
    let size = ring.data_size() as u64;
    // header 8 + pid/tid 8 + a name of up to 7 bytes and its NUL 8 + sample_id (TID) 8.
    const REC: u64 = 32;
    let produced = size / REC + 50;
    for i in 0..produced {
        rename(&format!("r{i:05}"));
    }
    let unread = ring.head().wrapping_sub(ring.tail());
    assert!(unread <= size, "{unread} bytes unread in a ring of {size}");
    assert_eq!(unread % REC, 0);
    let mut names = Vec::new();
    let d = ring
        .drain(|r| {
            assert_eq!(u32::from_le_bytes([r[0], r[1], r[2], r[3]]), COMM);
            assert_eq!(r.len() as u64, REC);
            let name = &r[16..24];
            let end = name.iter().position(|&c| c == 0).unwrap_or(8);
            names.push(String::from_utf8_lossy(&name[..end]).into_owned());
            Ok(())
        })
        .expect("drain");
    assert_eq!((d.bytes, d.corrupt), (unread, None));
    let kept = d.records;
    // Linux leaves at least one byte free (CIRC_SPACE), so at most size / REC - 1 fit.
    assert!(
        kept + 1 >= size / REC && kept < produced,
        "{kept} records kept of {produced} in a ring of {size} bytes"
    );
    let first: Vec<String> = (0..kept).map(|i| format!("r{i:05}")).collect();
    assert_eq!(names, first, "the first records are kept, in order");

    // Room again: the next record is preceded by the LOST record of the others.
    rename("after");
    let mut lost = None;
    let mut after = 0;
    ring.drain(|r| {
        match u32::from_le_bytes([r[0], r[1], r[2], r[3]]) {
            // header, id, lost
            LOST => lost = Some(u64::from_le_bytes(r[16..24].try_into().expect("8 bytes"))),
            COMM if &r[16..21] == b"after" => after += 1,
            t => panic!("unexpected record type {t}"),
        }
        Ok(())
    })
    .expect("drain");
    assert_eq!(
        lost,
        Some(produced - kept),
        "{kept} kept of {produced} produced"
    );
    assert_eq!(after, 1);
    hwprof_testkit::report!(
        "ring of {size} bytes: {kept} COMM records of {REC} bytes kept, {} lost ({unread} bytes unread at the end)",
        produced - kept
    );
}
