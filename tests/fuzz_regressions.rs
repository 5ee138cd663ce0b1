//! Inputs that broke a property of the fuzz entry (`tests/fuzzing`: no panic, errors
//! naming an offset inside the input, peak heap bounded by the input's size, bounded
//! time), run through it: one found by the deterministic campaign (minimized), the others
//! built while auditing the reader's allocations and loops for what small mutants cannot
//! reach (a zstd bomb, hundreds of attrs sharing one ids section). Each input is written
//! out here byte by byte and failed before its fix in `sampler/src/perfdata/reader.rs`.

mod fuzzing;

use std::time::{Duration, Instant};

use hwprof_sampler::perfdata::reader::PerfData;

fn rec(type_: u32, misc: u16, body: &[u8]) -> Vec<u8> {
    let mut r = type_.to_le_bytes().to_vec();
    r.extend_from_slice(&misc.to_le_bytes());
    r.extend_from_slice(&u16::try_from(8 + body.len()).unwrap().to_le_bytes());
    r.extend_from_slice(body);
    r
}

fn words(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A 64-byte `perf_event_attr` (VER0): software cpu-clock with `sample_type`.
fn attr64(sample_type: u64) -> Vec<u8> {
    let mut a = vec![0u8; 64];
    a[0..4].copy_from_slice(&1u32.to_le_bytes()); // PERF_TYPE_SOFTWARE
    a[4..8].copy_from_slice(&64u32.to_le_bytes()); // size
    a[24..32].copy_from_slice(&sample_type.to_le_bytes());
    a
}

/// A pipe-mode stream: header, then `records`.
fn pipe(records: &[Vec<u8>]) -> Vec<u8> {
    let mut b = b"PERFILE2".to_vec();
    b.extend_from_slice(&16u64.to_le_bytes());
    for r in records {
        b.extend_from_slice(r);
    }
    b
}

const HEADER_ATTR: u32 = 64;
const FINISHED_ROUND: u32 = 68;
const COMPRESSED: u32 = 81;
const SAMPLE: u32 = 9;
const IP: u64 = 1;
const CALLCHAIN: u64 = 1 << 5;
const RAW: u64 = 1 << 10;

/// Found by the deterministic campaign of 2026-11-24 (a pipe stream of 11,774 bytes,
/// minimized here): a sample inside a COMPRESSED record was cut short; the error named offset 0x2ed4 of an
/// 0x2dfe-byte input: the compressed record's offset plus the position inside the
/// decompressed record, which is nowhere in the file.
#[test]
fn an_error_inside_compressed_records_names_the_compressed_record() {
    // IP, a callchain of 500 entries, then a raw size of 100 with no raw data after it.
    let mut body = words(&[0x401000, 500]);
    body.extend(vec![0u8; 500 * 8]);
    body.extend_from_slice(&100u32.to_le_bytes());
    let sample = rec(SAMPLE, 2, &body);
    let z = zstd::stream::encode_all(&sample[..], 1).unwrap();
    let input = pipe(&[
        rec(HEADER_ATTR, 0, &attr64(IP | CALLCHAIN | RAW)),
        rec(COMPRESSED, 0, &z),
    ]);
    let o = fuzzing::fuzz_one(&input);
    let e = o.error.expect("the cut sample is an error");
    assert!(
        e.starts_with("malformed compressed record at offset 0x58: record at byte 0 of the decompressed stream: malformed sample at offset 0x"),
        "{e}"
    );
}

/// A zstd frame of `blocks` RLE blocks of 128 KiB of the byte 0x08 each: 4 bytes per
/// block. 0x08 repeated reads as records of type 0x08080808 and size 0x0808.
fn rle_bomb(blocks: usize) -> Vec<u8> {
    let mut z = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38]; // magic; no checksum; 128 KiB window
    for i in 0..blocks {
        let last = u32::from(i + 1 == blocks);
        let h = (128 * 1024) << 3 | 1 << 1 | last; // size, RLE, last block
        z.extend_from_slice(&h.to_le_bytes()[..3]);
        z.push(0x08);
    }
    z
}

/// Found auditing the inflater after the case above: it kept every byte a compressed
/// record decompressed to before visiting any record, so 261 bytes of input held 8 MiB
/// (16 MiB of capacity) at once.
#[test]
fn a_compressed_record_is_visited_as_it_inflates() {
    let input = pipe(&[
        rec(HEADER_ATTR, 0, &attr64(IP)),
        rec(COMPRESSED, 0, &rle_bomb(64)),
    ]);
    let o = fuzzing::fuzz_one(&input);
    // 8 MiB of 2056-byte records: all visited, the partial one at the end is the error.
    assert_eq!(o.records, 2 + (8 << 20) / 0x808, "{o:?}");
    assert!(o.peak_bytes < 2 << 20, "{o:?}");
    let e = o.error.clone().expect("a partial record at the end");
    assert!(e.contains("not a whole record"), "{e}");
}

/// 32 KiB that inflate to 1 GiB: refused after 128 MiB (4096 times the input, plus
/// 16 MiB), instead of holding up to 1 GiB and then failing.
#[test]
fn a_zstd_bomb_is_refused() {
    let input = pipe(&[
        rec(HEADER_ATTR, 0, &attr64(IP)),
        rec(COMPRESSED, 0, &rle_bomb(8192)),
    ]);
    let t = Instant::now();
    let o = fuzzing::fuzz_one(&input);
    let e = o.error.clone().expect("refused");
    assert!(e.contains("more than 4096 times"), "{e}");
    assert!(o.peak_bytes < 2 << 20, "{o:?}");
    eprintln!("zstd bomb refused in {:?}", t.elapsed());
}

/// A file-mode header: attrs at 104 (`attrs` bytes), then `data`, then `tail`.
fn file(attr_size: u64, attrs: &[u8], data: &[u8], features: [u64; 4], tail: &[u8]) -> Vec<u8> {
    let mut b = b"PERFILE2".to_vec();
    let data_off = 104 + attrs.len() as u64;
    b.extend(words(&[104, attr_size, 104, attrs.len() as u64]));
    b.extend(words(&[data_off, data.len() as u64, 0, 0]));
    b.extend(words(&features));
    b.extend_from_slice(attrs);
    b.extend_from_slice(data);
    b.extend_from_slice(tail);
    b
}

/// Every attr's ids section is the whole file: the reader copied it once per attr, 500
/// times for a 40 KiB file (20 MB).
#[test]
fn overlapping_ids_sections_are_an_error() {
    let n = 500u64;
    let len = 104 + n * 80 + 8;
    let mut attrs = Vec::new();
    for _ in 0..n {
        attrs.extend(attr64(IP));
        attrs.extend(words(&[0, len]));
    }
    let input = file(80, &attrs, &rec(FINISHED_ROUND, 0, &[]), [0; 4], &[]);
    assert_eq!(input.len() as u64, len);
    let o = fuzzing::fuzz_one(&input);
    let e = o.error.clone().expect("refused");
    assert!(e.contains("ids sections add up to"), "{e}");
}

/// Every feature bit set, each section the whole file: the reader kept a copy of the
/// file per unknown feature (224 copies).
#[test]
fn overlapping_feature_sections_are_a_warning() {
    let data = rec(FINISHED_ROUND, 0, &[]);
    let len = 104 + 8 + 224 * 16 + 65536;
    let mut table = Vec::new();
    for _ in 32..256 {
        table.extend(words(&[0, len]));
    }
    table.extend(vec![0u8; 65536]);
    // Bits 32..=255: features hwprof keeps raw.
    let bits = [0xffff_ffff_0000_0000, u64::MAX, u64::MAX, u64::MAX];
    let input = file(80, &[], &data, bits, &table);
    assert_eq!(input.len() as u64, len);
    let o = fuzzing::fuzz_one(&input);
    assert!(o.error.is_none(), "{o:?}");
    let pd = PerfData::from_bytes(input, "overlap").unwrap();
    assert_eq!(pd.features().other.len(), 1);
    assert!(
        pd.warnings()
            .iter()
            .any(|w| w.contains("feature sections add up to")),
        "{:?}",
        pd.warnings()
    );
}

/// Naming events compared every attr's ids with every EVENT_DESC entry's: 30,000 of each
/// took seconds (quadratic); a map takes milliseconds.
#[test]
fn naming_many_events_takes_linear_time() {
    let n = 30_000u64;
    let mut attrs = Vec::new();
    let ids_off = 104 + n * 80;
    for i in 0..n {
        attrs.extend(attr64(IP));
        attrs.extend(words(&[ids_off + 8 * i, 8]));
    }
    let ids = words(&(0..n).map(|i| i + 1).collect::<Vec<_>>());
    let mut desc = Vec::new();
    desc.extend_from_slice(&(n as u32).to_le_bytes());
    desc.extend_from_slice(&64u32.to_le_bytes());
    for i in 0..n {
        desc.extend(attr64(IP));
        desc.extend_from_slice(&1u32.to_le_bytes());
        desc.extend_from_slice(&8u32.to_le_bytes());
        desc.extend_from_slice(b"ev\0\0\0\0\0\0");
        desc.extend(words(&[n + 1 + i])); // ids no attr has
    }
    let data = rec(FINISHED_ROUND, 0, &[]);
    let mut all_attrs = attrs;
    all_attrs.extend(ids);
    // Data, then the feature table (one entry: EVENT_DESC, bit 12), then the section.
    let data_off = 104 + all_attrs.len() as u64;
    let table_end = data_off + 8 + 16;
    let mut tail = words(&[table_end, desc.len() as u64]);
    tail.extend(desc);
    let input = file(80, &all_attrs, &data, [1 << 12, 0, 0, 0], &tail);
    let input = {
        // The attrs section is only the attrs, not the ids after them.
        let mut i = input;
        i[32..40].copy_from_slice(&(n * 80).to_le_bytes());
        i
    };
    let t = Instant::now();
    let pd = PerfData::from_bytes(input, "names").unwrap();
    let took = t.elapsed();
    assert_eq!(pd.attrs().len(), n as usize);
    assert_eq!(pd.attrs()[7].name, "ev");
    assert!(
        took < Duration::from_secs(2),
        "naming {n} events took {took:?}"
    );
}
