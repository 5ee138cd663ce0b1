//! [`fuzz_one`]: one input through the reader or the decoder, with its properties checked.
//!
//! Decoder-mode input (made by [`super::model::decoder_input`]):
//!
//! ```text
//! "HWPFZDEC"  u8 nr_attrs (at most 8)
//! per attr:   u16 len, len bytes of perf_event_attr, u16 nr_ids, nr_ids u64 ids
//! records:    perf_event_header + body, one after the other, to the end
//! ```
//!
//! Every record is decoded from its offset with the rest of the input behind it (the
//! decoder must ignore what follows `header.size`); `HEADER_ATTR` records add their attr
//! to the decoder, as the pipe-mode reader does.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::time::{Duration, Instant};

use hwprof_pmu::attr::Attr;
use hwprof_sampler::Error;
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::record::{Body, Decoder, peek_header};

use super::touch;

/// First bytes of a decoder-mode input.
pub const DECODER_MAGIC: &[u8; 8] = b"HWPFZDEC";
/// `PERFILE2`, the magic of a little-endian perf.data file or stream.
pub const PERF_MAGIC: &[u8; 8] = b"PERFILE2";

/// Peak heap allowed per byte of input. The reader holds the input (one copy, two while
/// `from_reader` grows its buffer), the attrs' ids (at most the input's size), the
/// decoder's id map (about 4 bytes per input byte at most) and per record small values.
pub const MEM_PER_INPUT_BYTE: u64 = 16;
/// Peak heap allowed whatever the input (the 256 KiB buffer of the zstd inflater, the
/// pending decompressed bytes of a partial record, strings of features...).
pub const MEM_FIXED: u64 = 1 << 20;

/// Which path an input took.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// perf.data file mode through `PerfData::from_bytes`.
    File,
    /// Pipe mode through `PerfData::from_reader`.
    Pipe,
    /// Records through a `Decoder` with attrs from the input.
    Decoder,
    /// Neither (no perf.data magic, or a decoder-mode preamble that does not parse).
    Other,
}

/// What one input did.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The path it took.
    pub mode: Mode,
    /// Records decoded without error.
    pub records: u64,
    /// The first data error, as the user would see it (decoder mode: every record's
    /// errors count, this is the first).
    pub error: Option<String>,
    /// Wall time of the case.
    pub elapsed: Duration,
    /// Peak heap of the case on this thread.
    pub peak_bytes: u64,
}

/// Time one input may take before it counts as a hang (`HWPROF_FUZZ_CASE_MS`, default
/// 5000: generous for debug builds on a loaded machine; the largest seen is reported).
pub fn time_limit() -> Duration {
    let ms = std::env::var("HWPROF_FUZZ_CASE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000u64);
    Duration::from_millis(ms)
}

/// Runs one input through the reader or the decoder and checks every property; panics
/// (the fuzzer's crash) when one does not hold.
pub fn fuzz_one(data: &[u8]) -> Outcome {
    let start = Instant::now();
    let mut result = None;
    let info = allocation_counter::measure(|| {
        // Caught here so that allocation-counter's measurement is closed on a panic too.
        result = Some(catch_unwind(AssertUnwindSafe(|| run(data))));
    });
    let elapsed = start.elapsed();
    let (mode, records, error) = match result {
        Some(Ok(r)) => r,
        Some(Err(panic)) => resume_unwind(panic),
        None => unreachable!("measure runs its closure"),
    };
    let peak_bytes = info.bytes_max;
    let limit = MEM_PER_INPUT_BYTE * data.len() as u64 + MEM_FIXED;
    assert!(
        peak_bytes <= limit,
        "{mode:?} input of {} bytes: peak heap {peak_bytes} bytes is over the bound {limit}",
        data.len()
    );
    assert!(
        elapsed <= time_limit(),
        "{mode:?} input of {} bytes took {elapsed:?} (limit {:?})",
        data.len(),
        time_limit()
    );
    Outcome {
        mode,
        records,
        error,
        elapsed,
        peak_bytes,
    }
}

type RunResult = (Mode, u64, Option<String>);

fn run(data: &[u8]) -> RunResult {
    if data.starts_with(DECODER_MAGIC) {
        return decoder_mode(data);
    }
    let pipe =
        data.len() >= 16 && data.starts_with(PERF_MAGIC) && data[8..16] == 16u64.to_le_bytes();
    let mode = if pipe { Mode::Pipe } else { Mode::File };
    let opened = if pipe {
        PerfData::from_reader(data)
    } else {
        PerfData::from_bytes(data.to_vec(), "fuzz input")
    };
    let pd = match opened {
        Ok(pd) => pd,
        Err(e) => {
            let msg = check_error(&e, data, 0);
            let mode = if data.starts_with(PERF_MAGIC) && data.len() >= 16 {
                mode
            } else {
                Mode::Other
            };
            return (mode, 0, Some(msg));
        }
    };
    touch::perf_data(&pd);
    for w in pd.warnings() {
        assert!(
            w.contains("offset 0x") && !w.contains('\n'),
            "a warning that names no offset: {w}"
        );
    }
    let mut records = 0u64;
    let res = pd.for_each_record(|off, rec| {
        assert!(
            off < data.len() as u64,
            "record offset {off:#x} outside the input ({} bytes)",
            data.len()
        );
        touch::record(rec, pd.decoder());
        records += 1;
        Ok::<(), Error>(())
    });
    let error = res.err().map(|e| check_error(&e, data, 0));
    (mode, records, error)
}

/// Checks that `e` is a data error naming an offset in `lo..=data.len()`, one line; or,
/// for input that is not little-endian perf.data, that it says so. Returns its text.
fn check_error(e: &Error, data: &[u8], lo: u64) -> String {
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "error of more than one line: {msg:?}");
    match e {
        Error::Malformed { offset, .. } => {
            // Past the end only to say what is missing, naming where the input ends.
            let end = format!("{:#x}", data.len());
            assert!(
                (lo..=data.len() as u64).contains(offset)
                    || (*offset > data.len() as u64 && msg.contains(&end)),
                "error offset {offset:#x} outside {lo:#x}..={end}: {msg}"
            );
            assert!(msg.contains("offset 0x"), "{msg}");
        }
        Error::NotPerfData { .. } | Error::Unsupported(_) => assert!(
            !(data.len() >= 16 && data.starts_with(PERF_MAGIC)),
            "a PERFILE2 input called not perf.data or unsupported: {msg}"
        ),
        other => panic!("unexpected kind of error for bytes in memory: {other:?}"),
    }
    msg
}

/// Attrs with their sample ids, as `Decoder::new` takes them.
pub type Attrs = Vec<(Attr, Vec<u64>)>;

/// Parses the decoder-mode preamble: the attrs with their ids, and where records start.
pub fn parse_decoder_preamble(data: &[u8]) -> Option<(Attrs, usize)> {
    let mut pos = DECODER_MAGIC.len();
    let n = *data.get(pos)?;
    pos += 1;
    if n > 8 {
        return None;
    }
    let mut attrs = Vec::new();
    for _ in 0..n {
        let len = u16::from_le_bytes(data.get(pos..pos + 2)?.try_into().ok()?) as usize;
        pos += 2;
        let (attr, _) = Attr::from_bytes(data.get(pos..pos + len)?).ok()?;
        pos += len;
        let nids = u16::from_le_bytes(data.get(pos..pos + 2)?.try_into().ok()?) as usize;
        pos += 2;
        let ids = data.get(pos..pos + 8 * nids)?;
        pos += 8 * nids;
        let ids = ids
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        attrs.push((attr, ids));
    }
    Some((attrs, pos))
}

fn decoder_mode(data: &[u8]) -> RunResult {
    let Some((attrs, start)) = parse_decoder_preamble(data) else {
        return (Mode::Other, 0, None);
    };
    let mut dec = Decoder::new(&attrs);
    let mut off = start;
    let mut records = 0;
    let mut first_error = None;
    while let Some(rest) = data.get(off..).filter(|r| !r.is_empty()) {
        let size = peek_header(rest).map_or(0, |(_, _, s)| usize::from(s));
        let mut added = None;
        match dec.decode(rest, off as u64) {
            Ok(rec) => {
                touch::record(&rec, &dec);
                if let Body::HeaderAttr { attr, ids } = &rec.body {
                    added = Some(((**attr).clone(), ids.to_vec()));
                }
                records += 1;
            }
            Err(e) => {
                let msg = check_error(&e, data, off as u64);
                first_error.get_or_insert(msg);
            }
        }
        if let Some((attr, ids)) = added {
            dec.add_attr(attr, &ids);
        }
        if size < 8 {
            break;
        }
        off += size;
    }
    (Mode::Decoder, records, first_error)
}
