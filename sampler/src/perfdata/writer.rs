//! Writing perf.data files, atomically, in file mode or pipe mode.
//!
//! File mode is perf's seekable layout:
//!
//! ```text
//! 0     perf_file_header (104 bytes): magic, size, attr_size,
//!       attrs {offset,size}, data {offset,size}, event_types {0,0}, features bitmap[256]
//! 104   each event's sample ids (u64 each)
//!       perf_file_attr[]: attr bytes + perf_file_section of its ids
//!       data: the records, streamed
//!       feature table: one perf_file_section per set bit of the bitmap
//!       feature sections, in feature id order
//! ```
//!
//! It goes through an [`Output`]: a temporary file next to the output
//! (`.NAME.hwprof-PID-RANDOM.tmp`, mode 0600), or straight into a seekable device;
//! [`Writer::finish`] writes the features and the final header, fsyncs, moves an
//! existing output to `NAME.old` (as perf does) and renames the temporary file into
//! place. A [`Writer`] dropped without `finish` removes its temporary file: there is
//! never a half-written output.
//!
//! Pipe mode ([`Writer::pipe`]) is what perf writes to a pipe or FIFO, where nothing can
//! be rewritten later: a 16-byte `perf_pipe_file_header` (magic, size 16), then, as user
//! records, `PERF_RECORD_HEADER_ATTR` per event (attr + its ids), one
//! `PERF_RECORD_HEADER_FEATURE` per header feature perf synthesizes in pipe mode (every
//! one but TRACING_DATA, BUILD_ID, BRANCH_STACK, AUXTRACE, STAT, CACHE, DIR_FORMAT,
//! HYBRID_TOPOLOGY), the end-of-features mark (feature id [`LAST_FEATURE`]),
//! `PERF_RECORD_HEADER_TRACING_DATA` followed by the tracing data when tracepoints are
//! recorded, then the records (with `PERF_RECORD_FINISHED_INIT` after the synthesized
//! ones, see [`Writer::finished_init`]). This is perf 6.1's `perf_event__synthesize_for_pipe`
//! (tools/perf/util/synthetic-events.c) byte for byte in layout.
//!
//! Attrs are written with the smallest `perf_event_attr` ABI size that holds their
//! fields (see [`file_attr_size`]), because perf refuses attrs larger than the struct
//! it was built with (perf 6.1 knows 128 bytes, hwprof 136). In pipe mode they are at
//! least 128 bytes: perf up to 6.3 finds a `HEADER_ATTR`'s ids after
//! `sizeof(struct perf_event_attr)` (128) whatever the attr's own `size` says.

use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use hwprof_pmu::attr::Attr;

use super::MAGIC;
use super::features::{EventDesc, Features, attr_file_bytes, file_attr_size, id as feat};
use crate::error::{Error, Result};
use crate::outfile::{self, Output};
use crate::record::kind;

/// `sizeof(struct perf_file_header)`.
pub const HEADER_SIZE: u64 = 104;
/// `sizeof(struct perf_file_section)`.
const SECTION_SIZE: u64 = 16;
/// The output buffer: large, so the sampling hot path rarely reaches a syscall.
const BUFFER: usize = 1 << 20;
/// The output buffer in pipe mode: smaller, so a reader at the other end sees records
/// while the recording runs.
const PIPE_BUFFER: usize = 64 << 10;
/// `sizeof(struct perf_pipe_file_header)`.
pub const PIPE_HEADER_SIZE: u64 = 16;
/// perf 6.1's `HEADER_LAST_FEATURE`: the feature id of the mark that ends the feature
/// records of a pipe-mode stream (`perf report` checks it equals its own).
pub const LAST_FEATURE: u32 = 32;
/// The attr size perf 6.1 assumes in `PERF_RECORD_HEADER_ATTR` (`PERF_ATTR_SIZE_VER7`).
const PIPE_ATTR_MIN: usize = 128;
/// Features perf does not synthesize in pipe mode (`FEAT_OPN` in tools/perf/util/header.c):
/// their readers seek in a file, or they come as records of their own (tracing data).
const NOT_IN_PIPE: [u32; 8] = [
    feat::TRACING_DATA,
    feat::BUILD_ID,
    feat::BRANCH_STACK,
    feat::AUXTRACE,
    feat::STAT,
    feat::CACHE,
    feat::DIR_FORMAT,
    feat::HYBRID_TOPOLOGY,
];

/// One event of the file: its attr, name (for `HEADER_EVENT_DESC`) and sample ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventEntry {
    /// The attr the event was opened with.
    pub attr: Attr,
    /// The event's name (`cpu-clock`, `cycles:u`).
    pub name: String,
    /// The ids the kernel gave the event's fds (`PERF_EVENT_IOC_ID`), one per CPU or
    /// thread; records carry them when the attr samples `ID` or `IDENTIFIER`.
    pub ids: Vec<u64>,
}

/// An atomic, streaming perf.data writer (file mode or pipe mode).
#[derive(Debug)]
pub struct Writer {
    /// The output path (for messages).
    path: PathBuf,
    /// The temporary file, when the output is one.
    tmp: Option<PathBuf>,
    /// The buffered output; `None` once consumed.
    out: Option<BufWriter<Output>>,
    events: Vec<EventEntry>,
    /// Pipe mode: everything is streamed, nothing is rewritten.
    pipe: bool,
    /// `perf_file_header.attr_size` (attr bytes + 16).
    attr_size: u64,
    attrs_offset: u64,
    data_offset: u64,
    data_size: u64,
    records: u64,
}

impl Writer {
    /// Creates the output at `path` ([`Output::create`] with
    /// [`outfile::Options::PERF_DATA`]: a temporary file next to it, mode 0600, or
    /// straight into a seekable device), which fails at once with an [`Error::Io`]
    /// naming the path when it cannot be written (so a caller can check before starting
    /// a workload), then writes the header placeholder, each event's ids and the attrs.
    /// An output that cannot seek (a FIFO) is refused: use [`Writer::pipe`].
    pub fn create(path: &Path, events: Vec<EventEntry>) -> Result<Writer> {
        let out = Output::create(path, &outfile::Options::PERF_DATA)?;
        Writer::new(out, events)
    }

    /// File mode into `out` (which must be seekable).
    pub fn new(out: Output, events: Vec<EventEntry>) -> Result<Writer> {
        if !out.is_seekable() {
            return Err(Error::io(
                format!(
                    "{}: file-mode perf.data needs a seekable output",
                    out.path().display()
                ),
                io::Error::from_raw_os_error(libc::ESPIPE),
            ));
        }
        let mut w = Writer::bare(out, events, false);
        w.attr_size = file_attr_size(w.events.iter().map(|e| &e.attr)) as u64 + SECTION_SIZE;
        w.write_prologue()?;
        Ok(w)
    }

    /// Pipe mode into `out` (a pipe, FIFO, or anything else): writes the pipe header,
    /// the attrs with their ids, `features` (those perf synthesizes in pipe mode, then
    /// the end mark; `HEADER_EVENT_DESC` is made from `events` when `features` has none)
    /// and the tracing data when `features` holds some, all at once: in pipe mode the
    /// header features come first and [`Writer::finish`] adds nothing.
    pub fn pipe(out: Output, events: Vec<EventEntry>, features: &Features) -> Result<Writer> {
        let mut w = Writer::bare(out, events, true);
        w.attr_size = file_attr_size(w.events.iter().map(|e| &e.attr)).max(PIPE_ATTR_MIN) as u64
            + SECTION_SIZE;
        let mut buf = Vec::new();
        buf.extend_from_slice(&MAGIC.to_le_bytes());
        buf.extend_from_slice(&PIPE_HEADER_SIZE.to_le_bytes());
        let attr_bytes = (w.attr_size - SECTION_SIZE) as usize;
        for e in &w.events {
            let size = 8 + attr_bytes + 8 * e.ids.len();
            let size = user_record_size(size, "HEADER_ATTR", &e.name)?;
            put_header(&mut buf, kind::HEADER_ATTR, size);
            buf.extend_from_slice(&attr_file_bytes(&e.attr, attr_bytes));
            for id in &e.ids {
                buf.extend_from_slice(&id.to_le_bytes());
            }
        }
        let features = w.with_event_desc(features);
        let mut tracing = None;
        for (f, bytes) in features.to_sections() {
            if f == feat::TRACING_DATA {
                tracing = Some(bytes);
                continue;
            }
            if f >= LAST_FEATURE || NOT_IN_PIPE.contains(&f) {
                continue;
            }
            // A section too large for one record is left out, as a reader without it
            // falls back (EVENT_DESC: names from the attrs).
            let Ok(size) = u16::try_from(16 + bytes.len()) else {
                continue;
            };
            put_header(&mut buf, kind::HEADER_FEATURE, size);
            buf.extend_from_slice(&u64::from(f).to_le_bytes());
            buf.extend_from_slice(&bytes);
        }
        put_header(&mut buf, kind::HEADER_FEATURE, 16);
        buf.extend_from_slice(&u64::from(LAST_FEATURE).to_le_bytes());
        if let Some(t) = tracing {
            // perf_event__synthesize_tracing_data: a 16-byte record whose `size` is the
            // 8-aligned length of the data that follows it, zero-padded.
            let aligned = t.len().next_multiple_of(8);
            let size32 = u32::try_from(aligned)
                .map_err(|_| Error::Unsupported(format!("tracing data of {} bytes", t.len())))?;
            put_header(&mut buf, kind::HEADER_TRACING_DATA, 16);
            buf.extend_from_slice(&size32.to_le_bytes());
            buf.extend_from_slice(&[0; 4]);
            buf.extend_from_slice(&t);
            buf.resize(buf.len() + aligned - t.len(), 0);
        }
        w.data_offset = PIPE_HEADER_SIZE;
        w.write_all(&buf)?;
        Ok(w)
    }

    fn bare(out: Output, events: Vec<EventEntry>, pipe: bool) -> Writer {
        Writer {
            path: out.path().to_path_buf(),
            tmp: out.temp_path().map(Path::to_path_buf),
            out: Some(BufWriter::with_capacity(
                if pipe { PIPE_BUFFER } else { BUFFER },
                out,
            )),
            attr_size: 0,
            events,
            pipe,
            attrs_offset: 0,
            data_offset: 0,
            data_size: 0,
            records: 0,
        }
    }

    /// True in pipe mode.
    pub fn is_pipe(&self) -> bool {
        self.pipe
    }

    /// In pipe mode, writes `PERF_RECORD_FINISHED_INIT`, which perf puts after the
    /// records synthesized for what existed before recording (kernel and process
    /// mappings); nothing in file mode, where hwprof's files never had it and perf
    /// does not need it.
    pub fn finished_init(&mut self) -> Result<()> {
        if !self.pipe {
            return Ok(());
        }
        let mut b = Vec::with_capacity(8);
        put_header(&mut b, kind::FINISHED_INIT, 8);
        self.write_record(&b)
    }

    /// `features` with `HEADER_EVENT_DESC` made from the writer's events when absent.
    fn with_event_desc(&self, features: &Features) -> Features {
        let mut features = features.clone();
        if features.event_desc.is_none() && !self.events.is_empty() {
            features.event_desc = Some(
                self.events
                    .iter()
                    .map(|e| EventDesc {
                        attr: e.attr.clone(),
                        name: e.name.clone(),
                        ids: e.ids.clone(),
                    })
                    .collect(),
            );
        }
        features
    }

    /// Header placeholder, ids, attrs; sets `attrs_offset` and `data_offset`.
    fn write_prologue(&mut self) -> Result<()> {
        let mut buf = vec![0u8; HEADER_SIZE as usize];
        let mut id_sections = Vec::with_capacity(self.events.len());
        for e in &self.events {
            id_sections.push((buf.len() as u64, 8 * e.ids.len() as u64));
            for id in &e.ids {
                buf.extend_from_slice(&id.to_le_bytes());
            }
        }
        self.attrs_offset = buf.len() as u64;
        let attr_bytes = (self.attr_size - SECTION_SIZE) as usize;
        for (e, (off, size)) in self.events.iter().zip(id_sections) {
            buf.extend_from_slice(&attr_file_bytes(&e.attr, attr_bytes));
            buf.extend_from_slice(&off.to_le_bytes());
            buf.extend_from_slice(&size.to_le_bytes());
        }
        self.data_offset = buf.len() as u64;
        self.write_all(&buf)
    }

    fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        let path = &self.path;
        match self.out.as_mut() {
            Some(out) => out
                .write_all(bytes)
                .map_err(|e| Error::io(format!("writing {}", path.display()), e)),
            None => Err(Error::io(
                format!("writing {}", path.display()),
                io::Error::other("writer already finished"),
            )),
        }
    }

    /// Appends one record (its raw bytes, 8-byte `perf_event_header` included),
    /// buffered. The header's `size` must equal `bytes.len()`: a record that would
    /// break the file's framing is refused with [`Error::Malformed`].
    pub fn write_record(&mut self, bytes: &[u8]) -> Result<()> {
        let size = match bytes.get(6..8) {
            Some(s) => usize::from(u16::from_le_bytes([s[0], s[1]])),
            None => 0,
        };
        if size < 8 || size != bytes.len() {
            return Err(Error::malformed(
                "record",
                self.data_offset + self.data_size,
                format!(
                    "header size {size} for {} bytes (records carry their own size, at least 8)",
                    bytes.len()
                ),
            ));
        }
        self.write_all(bytes)?;
        self.data_size += bytes.len() as u64;
        self.records += 1;
        Ok(())
    }

    /// Records written so far.
    pub fn records_written(&self) -> u64 {
        self.records
    }

    /// Bytes of records written so far (the data section's size).
    pub fn data_size(&self) -> u64 {
        self.data_size
    }

    /// The output path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The temporary file being written (removed when the writer is dropped
    /// unfinished); the output itself when it is written directly (a device or FIFO).
    pub fn temp_path(&self) -> &Path {
        self.tmp.as_deref().unwrap_or(&self.path)
    }

    /// Writes the feature sections after the data (`features`; `HEADER_EVENT_DESC` is
    /// made from the writer's events when `features` has none), then the final header
    /// (data offset and size, attrs section, feature bitmap); fsyncs; moves an existing
    /// non-empty output to `PATH.old`, as perf does, and renames the temporary file
    /// over `path`. In pipe mode `features` were written at the start: this only
    /// flushes. On error the temporary file is removed and no output is left
    /// half-written.
    pub fn finish(mut self, features: &Features) -> Result<()> {
        let ctx = format!("writing {}", self.path.display());
        if self.pipe {
            let Some(out) = self.out.take() else {
                return Err(Error::io(ctx, io::Error::other("writer already finished")));
            };
            let out = out
                .into_inner()
                .map_err(|e| Error::io(ctx.clone(), e.into_error()))?;
            return Ok(out.commit()?);
        }
        let features = self.with_event_desc(features);
        let sections: Vec<(u32, Vec<u8>)> = features
            .to_sections()
            .into_iter()
            .filter(|(f, _)| *f < feat::BITS)
            .collect();

        // Feature table, then the sections.
        let table_at = self.data_offset + self.data_size;
        let mut at = table_at + SECTION_SIZE * sections.len() as u64;
        let mut tail = Vec::new();
        let mut bitmap = [0u64; (feat::BITS / 64) as usize];
        for (f, bytes) in &sections {
            tail.extend_from_slice(&at.to_le_bytes());
            tail.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            at += bytes.len() as u64;
            if let Some(word) = bitmap.get_mut((*f / 64) as usize) {
                *word |= 1 << (f % 64);
            }
        }
        for (_, bytes) in &sections {
            tail.extend_from_slice(bytes);
        }
        self.write_all(&tail)?;

        let Some(out) = self.out.take() else {
            return Err(Error::io(ctx, io::Error::other("writer already finished")));
        };
        let mut file = out
            .into_inner()
            .map_err(|e| Error::io(ctx.clone(), e.into_error()))?;
        let header = self.header(&bitmap);
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.write_all(&header))
            .map_err(|e| Error::io(ctx, e))?;
        Ok(file.commit()?)
    }

    /// The final `perf_file_header`.
    fn header(&self, bitmap: &[u64]) -> Vec<u8> {
        let mut h = Vec::with_capacity(HEADER_SIZE as usize);
        let attrs_size = self.attr_size * self.events.len() as u64;
        for v in [
            MAGIC,
            HEADER_SIZE,
            self.attr_size,
            self.attrs_offset,
            attrs_size,
            self.data_offset,
            self.data_size,
            0, // event_types: unused since perf 3.x
            0,
        ] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        for w in bitmap {
            h.extend_from_slice(&w.to_le_bytes());
        }
        h
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if let Some(out) = self.out.take() {
            // Discard the buffer rather than flush it into a file about to be removed;
            // the unfinished Output removes its temporary file.
            let (out, _) = out.into_parts();
            drop(out);
        }
    }
}

/// Appends a `perf_event_header` (misc 0).
fn put_header(buf: &mut Vec<u8>, type_: u32, size: u16) {
    buf.extend_from_slice(&type_.to_le_bytes());
    buf.extend_from_slice(&0u16.to_le_bytes());
    buf.extend_from_slice(&size.to_le_bytes());
}

/// A user record's size, which must fit the header's u16.
fn user_record_size(size: usize, what: &str, name: &str) -> Result<u16> {
    u16::try_from(size).map_err(|_| {
        Error::Unsupported(format!(
            "pipe mode: the {what} record of {name} would be {size} bytes, more than a record holds (65535): too many CPUs x threads; write a file instead"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perfdata::reader::PerfData;
    use crate::record::Body;
    use hwprof_pmu::attr::sample;

    fn entry(name: &str, ids: Vec<u64>) -> EventEntry {
        let mut attr = Attr::new(1, 0); // cpu-clock
        attr.sample_period = 4000;
        attr.freq = true;
        attr.sample_type = sample::IP | sample::TID | sample::ID;
        EventEntry {
            attr,
            name: name.to_string(),
            ids,
        }
    }

    /// A COMM record (no sample_id trailer).
    fn comm() -> Vec<u8> {
        let mut b = Vec::new();
        put_header(&mut b, kind::COMM, 24);
        b.extend_from_slice(&7u32.to_le_bytes());
        b.extend_from_slice(&7u32.to_le_bytes());
        b.extend_from_slice(b"app\0\0\0\0\0");
        b
    }

    fn stream() -> (tempfile::NamedTempFile, Output) {
        let f = tempfile::NamedTempFile::new().expect("temp file");
        let out = Output::from_stream(f.reopen().expect("reopen"), "-");
        (f, out)
    }

    #[test]
    fn pipe_mode_reads_back_as_perf_writes_it() {
        let (f, out) = stream();
        let mut features = Features {
            hostname: Some("host".into()),
            ..Features::default()
        };
        let tracing = b"\x17\x08\x44tracing0.6\0 (not parsed here)".to_vec();
        features.other.push((feat::TRACING_DATA, tracing.clone()));
        let events = vec![entry("cpu-clock", vec![11, 12]), entry("other", vec![13])];
        let mut w = Writer::pipe(out, events, &features).unwrap();
        assert!(w.is_pipe());
        w.write_record(&comm()).unwrap();
        w.finished_init().unwrap();
        w.write_record(&comm()).unwrap();
        w.finish(&Features::default()).unwrap();

        let bytes = std::fs::read(f.path()).unwrap();
        assert_eq!(&bytes[..8], b"PERFILE2");
        assert_eq!(bytes[8..16], 16u64.to_le_bytes());
        // perf 6.1 finds the ids 128 bytes into a HEADER_ATTR whatever attr.size says.
        assert_eq!(u16::from_le_bytes([bytes[22], bytes[23]]), 8 + 128 + 16);
        assert_eq!(bytes[16 + 8 + 128..16 + 8 + 128 + 8], 11u64.to_le_bytes());

        let pd = PerfData::from_bytes(bytes, "pipe").unwrap();
        assert!(pd.is_pipe());
        let names: Vec<&str> = pd.attrs().iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["cpu-clock", "other"], "names from EVENT_DESC");
        assert_eq!(pd.attrs()[0].ids, [11, 12]);
        assert_eq!(pd.features().hostname.as_deref(), Some("host"));
        let mut ids = pd.feature_ids().to_vec();
        ids.sort_unstable();
        assert_eq!(ids, [feat::HOSTNAME, feat::EVENT_DESC, LAST_FEATURE]);
        // The tracing data after its record (padded to 8 bytes, as perf pads it).
        let t = pd.tracing_data().unwrap().expect("tracing data");
        assert_eq!(
            (&t[..tracing.len()], t.len()),
            (&tracing[..], tracing.len().next_multiple_of(8))
        );
        let mut kinds = Vec::new();
        pd.for_each_record(|_, r| -> Result<()> {
            kinds.push(match &r.body {
                Body::HeaderAttr { .. } => "attr",
                Body::HeaderFeature { .. } => "feature",
                Body::TracingData { size } => {
                    assert_eq!(*size as usize, tracing.len().next_multiple_of(8));
                    "tracing"
                }
                Body::FinishedInit => "init",
                Body::Comm { .. } => "comm",
                _ => "other",
            });
            Ok(())
        })
        .unwrap();
        assert_eq!(
            kinds,
            [
                "attr", "attr", "feature", "feature", "feature", "tracing", "comm", "init", "comm"
            ]
        );
    }

    #[test]
    fn file_mode_needs_a_seekable_output() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        let ok = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok);
        // O_RDWR keeps the open from blocking without a reader.
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&fifo)
            .unwrap();
        let out = Output::from_stream(f, &fifo);
        assert!(!out.is_seekable());
        let e = Writer::new(out, vec![entry("cpu-clock", vec![])]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ESPIPE), "{e}");
    }
}
