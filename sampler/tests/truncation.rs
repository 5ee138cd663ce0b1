//! perf.data cut at every byte: what the reader promises for each boundary.
//!
//! File mode: inside the first 16 bytes the input is not perf.data; inside the header
//! the first header field that is cut is named; before the attrs are whole, the attrs
//! section is named (offset 24, where the header describes it); inside the data
//! section the file opens, the records wholly before the cut are visited, then one
//! error names the record that is cut (or, for a cut exactly at a record's end, the end
//! of the file); a cut in the feature sections after the data reads every record and
//! leaves warnings. Pipe mode: a cut at a record's end is a complete stream (pipe mode
//! has no announced end), a cut inside a record is an error naming that record, and the
//! same from a pipe, from a file and from memory. Every error is one line.
//!
//! The expected outcome of each cut is computed from the layout the test wrote, never
//! from the reader, so an off-by-one either way in any of the reader's bounds fails.

use std::path::{Path, PathBuf};

use hwprof_pmu::attr::{Attr, sample};
use hwprof_sampler::Error;
use hwprof_sampler::outfile::Output;
use hwprof_sampler::perfdata::features::Features;
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::perfdata::writer::{EventEntry, Writer};
use hwprof_sampler::record::kind;

/// A fresh scratch directory for one test.
fn scratch(tag: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("truncation-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn header(ty: u32, size: usize) -> Vec<u8> {
    let mut r = ty.to_le_bytes().to_vec();
    r.extend_from_slice(&0u16.to_le_bytes());
    r.extend_from_slice(&u16::try_from(size).expect("size").to_le_bytes());
    r
}

/// The records of both recordings: COMMs, samples (IP | TID | ID) and records of a type
/// the reader does not know (8-aligned, as perf requires), of 8 to 48 bytes.
fn records() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for i in 0..12u64 {
        let r = match i % 4 {
            0 => {
                let mut r = header(kind::COMM, 24);
                r.extend_from_slice(&7u32.to_le_bytes());
                r.extend_from_slice(&7u32.to_le_bytes());
                r.extend_from_slice(b"app\0\0\0\0\0");
                r
            }
            1 => {
                let mut r = header(kind::SAMPLE, 32);
                r.extend_from_slice(&(0x40_1000 + i).to_le_bytes());
                r.extend_from_slice(&7u32.to_le_bytes());
                r.extend_from_slice(&8u32.to_le_bytes());
                r.extend_from_slice(&11u64.to_le_bytes());
                r
            }
            2 => header(200, 8),
            _ => {
                let size = 16 + 8 * (i as usize % 5);
                let mut r = header(201, size);
                r.resize(size, i as u8);
                r
            }
        };
        out.push(r);
    }
    out
}

fn events() -> Vec<EventEntry> {
    let mut attr = Attr::new(1, 0); // cpu-clock
    attr.sample_period = 4000;
    attr.sample_type = sample::IP | sample::TID | sample::ID;
    vec![EventEntry {
        attr,
        name: "cpu-clock".to_string(),
        ids: vec![11, 12],
    }]
}

fn features() -> Features {
    Features {
        hostname: Some("host".into()),
        osrelease: Some("6.1.0".into()),
        ..Features::default()
    }
}

/// `(offset, size)` of each record in a stream whose records start at `first`.
fn layout(first: u64, recs: &[Vec<u8>]) -> Vec<(u64, u64)> {
    let mut off = first;
    recs.iter()
        .map(|r| {
            let at = off;
            off += r.len() as u64;
            (at, r.len() as u64)
        })
        .collect()
}

/// What reading a cut recording gave: the offsets of the records visited, then the
/// error that stopped the open or the visit, and the warnings.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    visited: Vec<u64>,
    error: Option<Failure>,
    warned: bool,
}

/// An error reduced to what the promise is about: its kind and the offset it names.
#[derive(Debug, PartialEq, Eq)]
enum Failure {
    NotPerfData,
    Malformed { what: &'static str, offset: u64 },
}

fn failure(e: &Error) -> Failure {
    let text = e.to_string();
    assert!(!text.contains('\n'), "one line: {text}");
    match e {
        Error::NotPerfData { .. } => Failure::NotPerfData,
        Error::Malformed { what, offset, .. } => Failure::Malformed {
            what,
            offset: *offset,
        },
        other => panic!("unexpected error kind: {other}"),
    }
}

fn read(pd: Result<PerfData, Error>) -> Outcome {
    let pd = match pd {
        Ok(pd) => pd,
        Err(e) => {
            return Outcome {
                visited: Vec::new(),
                error: Some(failure(&e)),
                warned: false,
            };
        }
    };
    for w in pd.warnings() {
        // `feature 2: malformed feature section at offset 0x1f0: section of ...`
        assert!(
            !w.contains('\n') && w.starts_with("feature ") && w.contains(" at offset 0x"),
            "{w}"
        );
    }
    let mut visited = Vec::new();
    let res = pd.for_each_record(|off, _| {
        visited.push(off);
        Ok::<(), Error>(())
    });
    Outcome {
        visited,
        error: res.err().map(|e| failure(&e)),
        warned: !pd.warnings().is_empty(),
    }
}

fn malformed(what: &'static str, offset: u64) -> Option<Failure> {
    Some(Failure::Malformed { what, offset })
}

/// The records of `recs` (laid out by `layout`) before a cut at `cut`, and the error of
/// the first one the cut reaches: `None` when the cut is at a record's end.
fn records_before(recs: &[(u64, u64)], cut: u64) -> (Vec<u64>, Option<Failure>) {
    let whole = recs
        .iter()
        .filter(|(o, s)| o + s <= cut)
        .map(|(o, _)| *o)
        .collect();
    let err = recs
        .iter()
        .find(|(o, s)| *o < cut && cut < o + s)
        .map(|(o, _)| Failure::Malformed {
            what: "record",
            offset: *o,
        });
    (whole, err)
}

/// The header fields the file-mode reader reads, in order: attr_size, the attrs
/// section, the data section, the feature bitmap.
const HEADER_FIELDS: [u64; 9] = [16, 24, 32, 40, 48, 72, 80, 88, 96];

fn write_cut(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).expect("write the cut file");
}

#[test]
fn a_file_cut_at_every_byte_reads_what_is_whole() {
    let dir = scratch("file");
    let path = dir.join("perf.data");
    let recs = records();
    let mut w = Writer::create(&path, events()).expect("create");
    for r in &recs {
        w.write_record(r).expect("record");
    }
    w.finish(&features()).expect("finish");
    let bytes = std::fs::read(&path).expect("read back");
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
    let (attrs_off, attrs_len) = (u64_at(24), u64_at(32));
    let (data_off, data_len) = (u64_at(40), u64_at(48));
    let data_end = data_off + data_len;
    let len = bytes.len() as u64;
    // The writer's layout: header, ids, attrs, data, feature table and sections.
    assert_eq!(attrs_off, 104 + 16, "two ids after the header");
    assert_eq!(attrs_off + attrs_len, data_off);
    assert!(len > data_end + 16, "feature sections after the data");
    let laid = layout(data_off, &recs);
    assert_eq!(laid.last().map(|(o, s)| o + s), Some(data_end));

    let cut = dir.join("cut.data");
    for l in 0..=len {
        write_cut(&cut, &bytes[..l as usize]);
        let got = read(PerfData::open(&cut));
        let want = if l < 8 {
            Outcome {
                visited: vec![],
                error: Some(Failure::NotPerfData),
                warned: false,
            }
        } else if l < 104 {
            // The first field that is not whole; the header size (8) before the rest.
            let field = std::iter::once(8)
                .chain(HEADER_FIELDS)
                .find(|&o| o + 8 > l)
                .expect("a cut field");
            Outcome {
                visited: vec![],
                error: malformed("perf.data header", field),
                warned: false,
            }
        } else if l < attrs_off + attrs_len {
            Outcome {
                visited: vec![],
                error: malformed("attrs section", 24),
                warned: false,
            }
        } else if l < data_end {
            let (visited, cut_rec) = records_before(&laid, l);
            Outcome {
                visited,
                // At a record's end: the data section the header announces is cut there.
                error: cut_rec.or(malformed("data section", l)),
                warned: false,
            }
        } else {
            Outcome {
                visited: laid.iter().map(|(o, _)| *o).collect(),
                error: None,
                warned: l < len,
            }
        };
        assert_eq!(
            got, want,
            "cut at {l} of {len} (data {data_off}..{data_end})"
        );
        // The same bytes in memory read the same.
        let mem = read(PerfData::from_bytes(bytes[..l as usize].to_vec(), "mem"));
        assert_eq!(mem, want, "in memory, cut at {l}");
    }
    std::fs::remove_dir_all(&dir).expect("clean up");
}

/// A file whose header says 0 bytes of data (perf killed before it rewrote the header)
/// is read to its end: a cut at a record's end is then a whole file, a cut inside a
/// record names it.
#[test]
fn a_killed_recording_is_read_to_its_last_whole_record() {
    let dir = scratch("killed");
    let path = dir.join("perf.data");
    let recs = records();
    let mut w = Writer::create(&path, events()).expect("create");
    for r in &recs {
        w.write_record(r).expect("record");
    }
    w.finish(&Features::default()).expect("finish");
    let mut bytes = std::fs::read(&path).expect("read back");
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8"));
    let (data_off, data_len) = (u64_at(&bytes, 40), u64_at(&bytes, 48));
    // What perf leaves: the data size and the feature bits never written, nothing after
    // the records.
    bytes.truncate((data_off + data_len) as usize);
    bytes[48..56].fill(0);
    bytes[72..104].fill(0);
    let laid = layout(data_off, &recs);
    let cut = dir.join("cut.data");
    for l in data_off..=bytes.len() as u64 {
        write_cut(&cut, &bytes[..l as usize]);
        let got = read(PerfData::open(&cut));
        let (visited, error) = records_before(&laid, l);
        let want = Outcome {
            visited,
            error,
            warned: false,
        };
        assert_eq!(got, want, "cut at {l}");
    }
    std::fs::remove_dir_all(&dir).expect("clean up");
}

/// A pipe-mode stream as `record -o -` writes it: header, HEADER_ATTR, HEADER_FEATUREs,
/// then the records.
fn pipe_stream(dir: &Path) -> Vec<u8> {
    let path = dir.join("stream");
    let f = std::fs::File::create(&path).expect("stream file");
    let out = Output::from_stream(f, "-");
    let mut w = Writer::pipe(out, events(), &features()).expect("pipe writer");
    for r in records() {
        w.write_record(&r).expect("record");
    }
    w.finish(&Features::default()).expect("finish");
    std::fs::read(&path).expect("read the stream")
}

/// `(offset, size)` of every record of a pipe-mode stream, from their headers.
fn pipe_layout(stream: &[u8]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut off = 16usize;
    while off < stream.len() {
        let size = u16::from_le_bytes([stream[off + 6], stream[off + 7]]) as usize;
        assert!(size >= 8, "the test's stream is well formed");
        out.push((off as u64, size as u64));
        off += size;
    }
    assert_eq!(off, stream.len());
    out
}

#[test]
fn a_pipe_stream_cut_at_every_byte_is_whole_up_to_a_record_end() {
    let dir = scratch("pipe");
    let stream = pipe_stream(&dir);
    let laid = pipe_layout(&stream);
    assert!(laid.len() > records().len() + 2, "user records first");
    let cut = dir.join("cut.data");
    for l in 0..=stream.len() as u64 {
        let bytes = &stream[..l as usize];
        let want = if l < 8 {
            Outcome {
                visited: vec![],
                error: Some(Failure::NotPerfData),
                warned: false,
            }
        } else if l < 16 {
            Outcome {
                visited: vec![],
                error: malformed("perf.data header", 8),
                warned: false,
            }
        } else {
            match records_before(&laid, l) {
                // Whole up to the cut: every record is visited.
                (visited, None) => Outcome {
                    visited,
                    error: None,
                    warned: false,
                },
                // The stream is checked whole before any record is visited.
                (_, Some(e)) => Outcome {
                    visited: vec![],
                    error: Some(e),
                    warned: false,
                },
            }
        };
        let piped = read(PerfData::from_reader(bytes));
        assert_eq!(piped, want, "from a pipe, cut at {l}");
        write_cut(&cut, bytes);
        assert_eq!(read(PerfData::open(&cut)), want, "from a file, cut at {l}");
        let mem = read(PerfData::from_bytes(bytes.to_vec(), "mem"));
        assert_eq!(mem, want, "in memory, cut at {l}");
    }
    std::fs::remove_dir_all(&dir).expect("clean up");
}
