//! Reading perf.data files (file mode and pipe mode).
//!
//! [`PerfData`] holds a file's attrs with their sample ids and names, and its header
//! [`Features`]. Records are visited in file order with [`PerfData::for_each_record`],
//! which reads a file-mode file's data section through a window of [`STREAM_CHUNK`]
//! bytes (no `mmap`: that needs `unsafe`), so memory does not grow with the file: a
//! 10 GB recording is read with the same few MiB as a small one, and reading it twice
//! (the symbolizer's two passes) costs the page cache, not the heap. A pipe-mode stream
//! is read the same way once it is spooled (see below). `PERF_RECORD_COMPRESSED` /
//! `COMPRESSED2` payloads are decompressed (one zstd stream across records, as perf
//! writes them) and the records inside are visited right after the compressed record.
//!
//! File mode: the `PERFILE2` header, the attrs section (each attr with its ids section),
//! the data section, then one `perf_file_section` per feature bit after the data. A
//! header with data size 0 (perf killed before it rewrote the header) is read up to EOF,
//! like perf does. Pipe mode: a 16-byte header, then `HEADER_ATTR`, `HEADER_FEATURE`,
//! `HEADER_TRACING_DATA`... records inline; they are scanned once at open so that
//! [`PerfData::attrs`] and [`PerfData::features`] are complete before the records are
//! visited. Big-endian files are rejected with [`Error::Unsupported`].
//!
//! What is read: [`PerfData::open`] reads only regular files (a FIFO, a device or a
//! directory is refused before anything is read, see [`hwprof_pmu::file`]), and checks
//! the magic and header before reading the rest (a 50 GB log given as `-i` costs 16
//! bytes, and so does `/proc/self/pagemap`, which reads on and on). A pipe-mode stream
//! ([`PerfData::from_reader`], `-` for stdin) must be read to its end before its records
//! are visited, because its attrs and features may come anywhere in it: it is scanned a
//! chunk at a time and spooled into an unlinked temporary file (in `$TMPDIR`; a
//! pipe-mode stream in a regular file is read in place), then read back like a file;
//! only where no temporary file can be made is it held in memory. It is checked as it
//! arrives. The magic and the
//! header are checked as soon as their 16 bytes are in (`/dev/zero`, random bytes or a
//! file-mode file on a pipe stop there). Each record's header is checked as soon as it
//! is in (a size that holds the header; a known type, or a size that is a multiple of 8
//! as perf requires of the types it skips), and the user records (attrs, features,
//! tracing data) as soon as they are whole. Reading stops at most one chunk
//! ([`STREAM_CHUNK`]) past a bad record: only a stream of valid-looking records is
//! spooled.
//!
//! ```no_run
//! use hwprof_sampler::perfdata::reader::PerfData;
//! use hwprof_sampler::record::Body;
//!
//! let data = PerfData::open("perf.data".as_ref())?;
//! let mut samples = 0;
//! data.for_each_record(|_offset, rec| {
//!     if let Body::Sample(_) = rec.body {
//!         samples += 1;
//!     }
//!     Ok::<(), hwprof_sampler::Error>(())
//! })?;
//! # Ok::<(), hwprof_sampler::Error>(())
//! ```

use std::borrow::Cow;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use hwprof_pmu::attr::{Attr, types};

use super::MAGIC;
use super::features::{Features, id as feat};
use crate::error::{Error, Result};
use crate::record::{Body, Decoder, Record, U64s, kind, peek_header};

/// Size of a file-mode header (`struct perf_file_header`).
const FILE_HEADER_SIZE: u64 = 104;
/// Header size of perf versions without the feature bitmap.
const FILE_HEADER_SIZE_NO_FEATURES: u64 = 72;
/// Size of a pipe-mode header.
const PIPE_HEADER_SIZE: u64 = 16;
/// `PERFFILE`: perf.data version 1, from before perf 3.0.
const MAGIC_V1: u64 = 0x454c_4946_4652_4550;
/// A stream is read this much at a time; each chunk's records are checked before the
/// next chunk is read.
pub const STREAM_CHUNK: u64 = 1 << 20;
/// Decompressed bytes allowed per compressed byte (plus [`INFLATE_SLACK`]): perf's
/// zstd reaches 6 to 55 here (55 with DWARF stack copies); a zstd bomb reaches 32768.
const MAX_INFLATE_RATIO: u64 = 4096;
/// Decompressed bytes allowed whatever the compressed size.
const INFLATE_SLACK: u64 = 16 << 20;

/// One event of the file: its attr, sample ids and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventAttr {
    /// The attr.
    pub attr: Attr,
    /// The sample ids of its fds.
    pub ids: Vec<u64>,
    /// Its name: from `HEADER_EVENT_DESC` when present, else derived like perf does
    /// (`cycles`, `cpu-clock`, `raw 0x1c2`, `tp:317`).
    pub name: String,
}

/// Where a recording's bytes are.
#[derive(Debug)]
enum Source {
    /// All in memory: a pipe-mode stream, or [`PerfData::from_bytes`].
    Memory(Vec<u8>),
    /// A regular file of `len` bytes (its length when opened), read at offsets.
    File {
        /// The file.
        file: File,
        /// Its length when opened: what the header is checked against.
        len: u64,
        /// Its name in errors.
        name: String,
    },
}

impl Source {
    fn len(&self) -> u64 {
        match self {
            Source::Memory(b) => b.len() as u64,
            Source::File { len, .. } => *len,
        }
    }

    /// The 8-byte little-endian value at `off`.
    fn u64_at(&self, off: u64, what: &'static str) -> Result<u64> {
        match self {
            Source::Memory(b) => u64_at(b, off, what),
            Source::File { .. } => {
                let b = self.section(off, 8, off, what).map_err(|_| {
                    Error::malformed(
                        what,
                        off,
                        format!("file ends at {:#x} before this field", self.len()),
                    )
                })?;
                u64_at(&b, 0, what)
            }
        }
    }

    /// Bytes `off..off+len`, or an error naming `at`: where the section's descriptor
    /// sits. A file's section is read into memory; the callers bound `len` by the file.
    fn section(&self, off: u64, len: u64, at: u64, what: &'static str) -> Result<Cow<'_, [u8]>> {
        match self {
            Source::Memory(b) => section(b, off, len, at, what).map(Cow::Borrowed),
            Source::File {
                file,
                len: flen,
                name,
            } => {
                let past = || {
                    Error::malformed(
                        what,
                        at,
                        format!(
                            "section of {len} bytes at {off:#x} runs past the end of the file ({flen:#x})"
                        ),
                    )
                };
                let n = off
                    .checked_add(len)
                    .filter(|&e| e <= *flen)
                    .and_then(|_| usize::try_from(len).ok())
                    .ok_or_else(past)?;
                let mut buf = Vec::new();
                buf.try_reserve_exact(n).map_err(|_| past())?;
                buf.resize(n, 0);
                read_exact_at(file, &mut buf, off, name)?;
                Ok(Cow::Owned(buf))
            }
        }
    }
}

/// Where the scanned part of a pipe-mode stream goes.
enum Spool {
    /// Nowhere: the stream is a regular file, read again at offsets.
    Reuse(File),
    /// An unlinked temporary file.
    Temp(File),
    /// Nowhere: the stream stays in memory whole (no temporary directory).
    Memory,
}

impl Spool {
    fn write(&mut self, b: &[u8], name: &str) -> Result<()> {
        use std::io::Write;
        match self {
            Spool::Temp(f) => f.write_all(b).map_err(|e| {
                Error::io(
                    format!("cannot spool {name} to a temporary file (in $TMPDIR)"),
                    e,
                )
            }),
            Spool::Reuse(_) | Spool::Memory => Ok(()),
        }
    }
}

/// `read_exact_at`, with the file ending early (it shrank while read) as an error.
fn read_exact_at(file: &File, buf: &mut [u8], off: u64, name: &str) -> Result<()> {
    file.read_exact_at(buf, off).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::malformed(
                "record",
                off,
                format!("{name} became shorter while it was read (truncated by another program?)"),
            )
        } else {
            Error::io(format!("cannot read {name}"), e)
        }
    })
}

/// The records of a data section, read through a window: a slice of the memory, or a
/// buffer of at least [`STREAM_CHUNK`] bytes refilled from the file as records pass.
/// A big file's next chunk is read on another thread while the records of the current
/// one are visited ([`ReadAhead`]), so the reader's copy from the page cache costs the
/// visitor no time.
struct Window<'a> {
    source: &'a Source,
    /// The bytes read, from `buf[base]` on.
    buf: Vec<u8>,
    base: usize,
    /// File offset of `buf[base]`.
    start: u64,
    /// The thread reading the chunk after `buf`, once the file is seen to be long.
    ahead: Option<ReadAhead>,
    /// Chunks read so far (the read-ahead starts at the third: small files, and the
    /// few reads of a file's header and features, never start a thread).
    loads: u32,
}

/// Room left before a chunk read ahead for the start of the record that runs into it
/// (a record is at most 64 KiB), so that joining them copies the record's start only.
const HEADROOM: usize = 1 << 16;

/// A thread reading a file's chunks ahead: one at a time, the one asked, each into a
/// buffer after [`HEADROOM`] bytes.
struct ReadAhead {
    ask: std::sync::mpsc::Sender<(u64, Vec<u8>)>,
    got: std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    /// The chunk asked and not yet taken: its offset and length.
    asked: Option<(u64, usize)>,
}

impl ReadAhead {
    /// A thread reading from its own handle of `file` (`None` if it cannot start:
    /// every chunk is then read when needed, as for small files).
    fn start(file: &File) -> Option<ReadAhead> {
        let file = file.try_clone().ok()?;
        let (ask, asks) = std::sync::mpsc::channel::<(u64, Vec<u8>)>();
        let (give, got) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("read-ahead".into())
            .spawn(move || {
                for (off, mut buf) in asks {
                    let r = file
                        .read_exact_at(buf.get_mut(HEADROOM..).unwrap_or_default(), off)
                        .map(|()| buf);
                    if give.send(r).is_err() {
                        return;
                    }
                }
            })
            .ok()?;
        Some(ReadAhead {
            ask,
            got,
            asked: None,
        })
    }

    /// Asks for `n` bytes at `off`, read into `buf` after its headroom (its old
    /// contents reused: only what grows is zeroed).
    fn ask(&mut self, off: u64, n: usize, mut buf: Vec<u8>) {
        if self.asked.is_some() || n == 0 {
            return;
        }
        let len = HEADROOM + n;
        if buf.len() < len {
            buf.resize(len, 0);
        } else {
            buf.truncate(len);
        }
        if self.ask.send((off, buf)).is_ok() {
            self.asked = Some((off, n));
        }
    }

    /// The chunk asked (headroom first), if it was read (`None`: the read failed, or
    /// the thread is gone; the caller reads it itself, and meets the same error there).
    fn take(&mut self) -> Option<Vec<u8>> {
        self.asked.take()?;
        self.got.recv().ok()?.ok()
    }
}

impl<'a> Window<'a> {
    fn new(source: &'a Source) -> Window<'a> {
        Window {
            source,
            buf: Vec::new(),
            base: 0,
            start: 0,
            ahead: None,
            loads: 0,
        }
    }

    /// The bytes read, from file offset `start` on.
    fn data(&self) -> &[u8] {
        self.buf.get(self.base..).unwrap_or_default()
    }

    /// Makes the window hold `off..off+need` (clipped to `end`), reading ahead up to a
    /// chunk.
    fn load(&mut self, off: u64, need: u64, end: u64) -> Result<()> {
        let Source::File { file, name, .. } = self.source else {
            return Ok(());
        };
        let held = self.data().len() as u64;
        let have = off >= self.start && off + need <= self.start + held;
        if have || off >= end {
            return Ok(());
        }
        self.loads = self.loads.saturating_add(1);
        if self.loads == 3 && self.ahead.is_none() {
            self.ahead = ReadAhead::start(file);
        }
        let held_end = self.start + held;
        // The chunk read ahead continues the window: the start of the record that runs
        // into it goes into its headroom.
        if let Some(a) = &mut self.ahead
            && let Some((at, n)) = a.asked
            && at == held_end
            && off >= self.start
            && off <= held_end
            && held_end - off <= HEADROOM as u64
            && off + need <= at + n as u64
            && let Some(mut chunk) = a.take()
        {
            let tail = (held_end - off) as usize;
            let from = self.base + (off - self.start) as usize;
            let base = HEADROOM - tail;
            if let (Some(dst), Some(src)) = (
                chunk.get_mut(base..HEADROOM),
                self.buf.get(from..from + tail),
            ) {
                dst.copy_from_slice(src);
                let old = std::mem::replace(&mut self.buf, chunk);
                self.base = base;
                self.start = off;
                self.ask_next(end, old);
                return Ok(());
            }
        }
        // Anything asked that does not continue here is not wanted.
        if let Some(a) = &mut self.ahead {
            a.take();
        }
        let n = need.max(STREAM_CHUNK).min(end - off);
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        // Only what grows is zeroed (the read overwrites the rest).
        if self.buf.len() < n {
            self.buf.resize(n, 0);
        } else {
            self.buf.truncate(n);
        }
        self.base = 0;
        self.start = off;
        read_exact_at(file, &mut self.buf, off, name)?;
        self.ask_next(end, Vec::new());
        Ok(())
    }

    /// Has the read-ahead read the chunk after the window into `buf`.
    fn ask_next(&mut self, end: u64, buf: Vec<u8>) {
        let next = self.start + self.data().len() as u64;
        if let Some(a) = &mut self.ahead
            && next < end
        {
            let n = usize::try_from(STREAM_CHUNK.min(end - next)).unwrap_or(0);
            a.ask(next, n, buf);
        }
    }

    /// The record at `off` (checked against `end` and its own size field).
    fn record(&mut self, off: u64, end: u64) -> Result<&[u8]> {
        match self.source {
            Source::Memory(b) => record_at(b, 0, off, end),
            Source::File { .. } => {
                self.load(off, 8.min(end.saturating_sub(off)), end)?;
                let size = self
                    .data()
                    .get(usize::try_from(off - self.start).unwrap_or(usize::MAX)..)
                    .and_then(peek_header)
                    .map_or(8, |(_, _, size)| u64::from(size));
                self.load(off, size.min(end - off), end)?;
                record_at(self.data(), self.start, off, end)
            }
        }
    }
}

/// What [`PerfData::each_record`] does with the samples of the data section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Samples {
    Decoded,
    /// Passed on as bytes.
    Undecoded,
    Skipped,
}

/// A perf.data recording: its header, attrs and features, and its records read on
/// demand ([`PerfData::for_each_record`]).
#[derive(Debug)]
pub struct PerfData {
    source: Source,
    pipe: bool,
    header_size: u64,
    attr_size: u64,
    data_offset: u64,
    data_size: u64,
    attrs: Vec<EventAttr>,
    features: Features,
    feature_bits: Vec<u32>,
    warnings: Vec<String>,
    decoder: Decoder,
    /// File length when the header's data section runs past it (a truncated file).
    truncated: Option<u64>,
    /// Pipe mode: offset and size of the tracing data after `HEADER_TRACING_DATA`.
    pipe_tracing: Option<(u64, u64)>,
}

fn u64_at(b: &[u8], off: u64, what: &'static str) -> Result<u64> {
    let s = usize::try_from(off)
        .ok()
        .and_then(|o| b.get(o..o.checked_add(8)?))
        .ok_or_else(|| {
            Error::malformed(
                what,
                off,
                format!("file ends at {:#x} before this field", b.len()),
            )
        })?;
    Ok(U64s::new(s).get(0).unwrap_or(0))
}

/// `b[off..off+len]`, or an error naming `at`: where the section's descriptor sits.
fn section<'a>(b: &'a [u8], off: u64, len: u64, at: u64, what: &'static str) -> Result<&'a [u8]> {
    usize::try_from(off)
        .ok()
        .zip(usize::try_from(len).ok())
        .and_then(|(o, l)| b.get(o..o.checked_add(l)?))
        .ok_or_else(|| {
            Error::malformed(
                what,
                at,
                format!(
                    "section of {len} bytes at {off:#x} runs past the end of the file ({:#x})",
                    b.len()
                ),
            )
        })
}

impl PerfData {
    /// Reads the perf.data file at `path` (`-` = stdin: a pipe-mode stream, or any
    /// perf.data when stdin is a regular file). Only a regular file is opened (see
    /// [`hwprof_pmu::file::open`]): anything else is an [`Error::File`]. Its magic and
    /// header are checked before the rest is read (a large file that is not perf.data
    /// costs 16 bytes), and a pipe-mode file is checked as it is read.
    pub fn open(path: &Path) -> Result<PerfData> {
        if path.as_os_str() == "-" {
            return PerfData::from_stdin();
        }
        let (file, meta) = hwprof_pmu::file::open(path)?;
        PerfData::from_file(file, meta.len(), &path.display().to_string())
    }

    /// Stdin: a regular file (`-i - < perf.data`) may hold either mode; anything else (a
    /// pipe, a terminal, a device) must carry a pipe-mode stream.
    fn from_stdin() -> Result<PerfData> {
        use std::os::fd::AsFd;
        let stdin = std::io::stdin();
        let regular = stdin
            .as_fd()
            .try_clone_to_owned()
            .ok()
            .map(File::from)
            .and_then(|f| Some((f.metadata().ok().filter(std::fs::Metadata::is_file)?, f)));
        match regular {
            Some((m, f)) => PerfData::from_file(f, m.len(), "<stdin>"),
            None => PerfData::from_reader(stdin.lock()),
        }
    }

    /// A regular file of `len` bytes: file mode is read at offsets, through a window (its
    /// records are never all in memory); pipe mode (`perf record -o - > file`) is read
    /// whole, as a stream.
    fn from_file(file: File, len: u64, name: &str) -> Result<PerfData> {
        let mut head = [0u8; PIPE_HEADER_SIZE as usize];
        let mut got = 0;
        while got < head.len() {
            match file.read_at(&mut head[got..], got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(format!("cannot read {name}"), e)),
            }
        }
        let file_mode = got == head.len() && {
            check_magic(&head, name)?;
            let hs = u64_at(&head, 8, "perf.data header")?;
            hs == FILE_HEADER_SIZE || hs == FILE_HEADER_SIZE_NO_FEATURES
        };
        if !file_mode {
            // Too short, not perf.data, or pipe mode: the stream reader says which. The
            // reads above were at offsets, so `file` is still at its start.
            let reuse = file.try_clone().ok();
            return PerfData::read_stream(file, name, true, len, reuse);
        }
        let hs = u64_at(&head, 8, "perf.data header")?;
        let source = Source::File {
            file,
            len,
            name: name.to_string(),
        };
        PerfData::build(source, hs, None)
    }

    /// Reads a pipe-mode stream from `r`, checking it as it arrives (see the module
    /// doc): the magic and header after 16 bytes, each record's framing and the user
    /// records as soon as they are whole, so that input that is not pipe-mode perf.data
    /// is refused after at most [`STREAM_CHUNK`] bytes past its first bad record. A
    /// file-mode header is refused too: file mode needs the whole file (`open` it).
    pub fn from_reader(r: impl Read) -> Result<PerfData> {
        PerfData::read_stream(r, "<stdin>", false, 0, None)
    }

    /// Reads perf.data from `r` (`name` in errors): the magic after 8 bytes, the header
    /// size after 16, then a file-mode file whole (when `file_mode` allows it) or a
    /// pipe-mode stream checked as it arrives. `size` (0: unknown) sizes the buffer.
    fn read_stream(
        mut r: impl Read,
        name: &str,
        file_mode: bool,
        size: u64,
        reuse: Option<File>,
    ) -> Result<PerfData> {
        let mut bytes = Vec::new();
        let mut eof = fill(&mut r, &mut bytes, 8, name)?;
        if bytes.len() < 8 {
            return Err(Error::NotPerfData {
                path: name.to_string(),
                msg: "shorter than a perf.data header".to_string(),
            });
        }
        check_magic(&bytes, name)?;
        if !eof {
            eof = fill(&mut r, &mut bytes, PIPE_HEADER_SIZE, name)?;
        }
        let header_size = u64_at(&bytes, 8, "perf.data header")?;
        if header_size != PIPE_HEADER_SIZE {
            if header_size != FILE_HEADER_SIZE && header_size != FILE_HEADER_SIZE_NO_FEATURES {
                return Err(bad_header_size(header_size));
            }
            if !file_mode {
                return Err(Error::Unsupported(format!(
                    "{name}: a file-mode perf.data on a pipe: give the file itself (-i FILE); a pipe carries pipe mode (`perf record -o -`)"
                )));
            }
            // The whole file at once where memory allows; else reading fails on the
            // way with an out-of-memory error.
            let _ = bytes.try_reserve_exact(usize::try_from(size).unwrap_or(0));
            r.read_to_end(&mut bytes)
                .map_err(|e| Error::io(format!("cannot read {name}"), e))?;
            return PerfData::from_bytes(bytes, name);
        }
        // Pipe mode: scanned a chunk at a time; what is scanned goes to the spool (the
        // file itself when it is one, else an unlinked temporary file), so that memory
        // holds one chunk, not the stream.
        let mut spool = match reuse {
            Some(f) => Spool::Reuse(f),
            None => match tempfile::tempfile() {
                Ok(f) => Spool::Temp(f),
                // No writable temporary directory: hold the stream in memory.
                Err(_) => Spool::Memory,
            },
        };
        let mut scan = PipeScan::new();
        // Stream offset of `bytes[0]`.
        let mut base = 0u64;
        while !eof {
            scan.advance(&bytes, base, false)?;
            if !matches!(spool, Spool::Memory) {
                let done = usize::try_from(scan.off.saturating_sub(base))
                    .unwrap_or(usize::MAX)
                    .min(bytes.len());
                spool.write(&bytes[..done], name)?;
                bytes.drain(..done);
                base += done as u64;
            }
            let want = (bytes.len() as u64).saturating_add(STREAM_CHUNK);
            eof = fill(&mut r, &mut bytes, want, name)?;
        }
        scan.advance(&bytes, base, true)?;
        spool.write(&bytes, name)?;
        let len = base + bytes.len() as u64;
        let source = match spool {
            Spool::Memory => Source::Memory(bytes),
            Spool::Reuse(file) | Spool::Temp(file) => Source::File {
                file,
                len,
                name: name.to_string(),
            },
        };
        PerfData::build(source, header_size, Some(scan))
    }

    /// Parses perf.data held in `bytes`; `name` names it in errors.
    pub fn from_bytes(bytes: Vec<u8>, name: &str) -> Result<PerfData> {
        if bytes.len() < 8 {
            return Err(Error::NotPerfData {
                path: name.to_string(),
                msg: "shorter than a perf.data header".to_string(),
            });
        }
        check_magic(&bytes, name)?;
        let header_size = u64_at(&bytes, 8, "perf.data header")?;
        let scan = if header_size == PIPE_HEADER_SIZE {
            let mut scan = PipeScan::new();
            scan.advance(&bytes, 0, true)?;
            Some(scan)
        } else {
            None
        };
        PerfData::build(Source::Memory(bytes), header_size, scan)
    }

    /// The reader over `bytes`, whose magic is checked; `scan` holds what the pipe-mode
    /// scan found (`None` in file mode: the header is read here).
    fn build(source: Source, header_size: u64, scan: Option<PipeScan>) -> Result<PerfData> {
        let mut pd = PerfData {
            source,
            pipe: header_size == PIPE_HEADER_SIZE,
            header_size,
            attr_size: 0,
            data_offset: 0,
            data_size: 0,
            attrs: Vec::new(),
            features: Features::default(),
            feature_bits: Vec::new(),
            warnings: Vec::new(),
            decoder: Decoder::default(),
            truncated: None,
            pipe_tracing: None,
        };
        match scan {
            Some(scan) if pd.pipe => {
                pd.data_offset = PIPE_HEADER_SIZE;
                pd.data_size = pd.source.len().saturating_sub(PIPE_HEADER_SIZE);
                pd.attrs = scan.attrs;
                pd.features = scan.features;
                pd.feature_bits = scan.feature_bits;
                pd.warnings = scan.warnings;
                pd.pipe_tracing = scan.tracing;
            }
            _ => pd.read_file_header()?,
        }
        pd.name_events();
        let attrs: Vec<(Attr, Vec<u64>)> = pd
            .attrs
            .iter()
            .map(|e| (e.attr.clone(), e.ids.clone()))
            .collect();
        pd.decoder = Decoder::new(&attrs);
        Ok(pd)
    }

    fn read_file_header(&mut self) -> Result<()> {
        let b = &self.source;
        let hs = self.header_size;
        if hs != FILE_HEADER_SIZE && hs != FILE_HEADER_SIZE_NO_FEATURES {
            return Err(bad_header_size(hs));
        }
        let h = |o: u64| b.u64_at(o, "perf.data header");
        let attr_size = h(16)?;
        let (attrs_off, attrs_len) = (h(24)?, h(32)?);
        let (data_off, mut data_len) = (h(40)?, h(48)?);
        let mut bits = Vec::new();
        if hs == FILE_HEADER_SIZE {
            for w in 0..4u64 {
                let word = h(72 + 8 * w)?;
                for bit in 0..64u32 {
                    if word >> bit & 1 != 0 {
                        bits.push(w as u32 * 64 + bit);
                    }
                }
            }
        }
        if attr_size < 16 + hwprof_pmu::attr::ATTR_SIZE_VER0 as u64 {
            return Err(Error::malformed(
                "perf.data header",
                16,
                format!("attr_size {attr_size} is too small"),
            ));
        }
        let attrs_bytes = b.section(attrs_off, attrs_len, 24, "attrs section")?;
        let mut attrs = Vec::new();
        // Ids sections of different attrs never overlap in a file perf wrote; sections
        // that do (or add up past the file) would be copied once per attr.
        let mut ids_total = 0u64;
        let step = usize::try_from(attr_size).unwrap_or(usize::MAX);
        for (i, entry) in attrs_bytes.chunks_exact(step).enumerate() {
            let at = attrs_off + (i * step) as u64;
            let (attr_b, ids_sec) = entry.split_at(step - 16);
            let (attr, _) = Attr::from_bytes(attr_b)
                .map_err(|e| Error::malformed("attr", at, e.to_string()))?;
            let ids_w = U64s::new(ids_sec);
            let (ids_off, ids_len) = (ids_w.get(0).unwrap_or(0), ids_w.get(1).unwrap_or(0));
            let ids = b.section(ids_off, ids_len, at + step as u64 - 16, "attr ids section")?;
            ids_total += ids_len;
            if ids_total > b.len() {
                return Err(Error::malformed(
                    "attr ids section",
                    at + step as u64 - 16,
                    format!(
                        "the attrs' ids sections add up to {ids_total} bytes, more than the file ({:#x}): they overlap",
                        b.len()
                    ),
                ));
            }
            attrs.push(EventAttr {
                attr,
                ids: U64s::new(&ids).to_vec(),
                name: String::new(),
            });
        }
        let file_len = b.len();
        if data_off > file_len {
            return Err(Error::malformed(
                "perf.data header",
                40,
                format!("data section at {data_off:#x} past the end of the file ({file_len:#x})"),
            ));
        }
        let killed = data_len == 0;
        if killed {
            // perf was killed before it rewrote the header: records run to EOF.
            data_len = file_len - data_off;
        }
        let mut warnings = Vec::new();
        let mut truncated_at = None;
        let truncated = data_off.checked_add(data_len).is_none_or(|e| e > file_len);
        if truncated {
            // Read the records that are there; for_each_record then reports the
            // truncation at the end of the file.
            truncated_at = Some(file_len);
            data_len = file_len - data_off;
        }
        // Feature sections: a table right after the data.
        let mut features = Features::default();
        if !killed && !truncated {
            let table = data_off + data_len;
            // As for ids: sections that overlap would be copied once per feature.
            let mut total = 0u64;
            for (n, &bit) in bits.iter().enumerate() {
                let at = table + 16 * n as u64;
                let (off, len) = match (
                    b.u64_at(at, "feature table"),
                    b.u64_at(at + 8, "feature table"),
                ) {
                    (Ok(o), Ok(l)) => (o, l),
                    (Err(e), _) | (_, Err(e)) => {
                        warnings.push(format!("feature {bit}: {e}"));
                        break;
                    }
                };
                total = total.saturating_add(len);
                if total > file_len {
                    let e = Error::malformed(
                        "feature table",
                        at,
                        format!(
                            "feature sections add up to {total} bytes, more than the file ({file_len:#x}): they overlap"
                        ),
                    );
                    warnings.push(format!("feature {bit}: {e}"));
                    break;
                }
                match b
                    .section(off, len, at, "feature section")
                    .and_then(|s| features.parse_section(bit, &s, off))
                {
                    Ok(()) => {}
                    Err(e) => warnings.push(format!("feature {bit}: {e}")),
                }
            }
        }
        self.attr_size = attr_size;
        self.attrs = attrs;
        self.data_offset = data_off;
        self.data_size = data_len;
        self.features = features;
        self.feature_bits = bits;
        self.warnings = warnings;
        self.truncated = truncated_at;
        Ok(())
    }

    fn name_events(&mut self) {
        let descs = self.features.event_desc.as_deref().unwrap_or(&[]);
        let same_len = descs.len() == self.attrs.len();
        // The first desc with each id list (a map: attrs x descs comparisons would take
        // quadratic time on a file with many of both).
        let mut by_ids: std::collections::HashMap<&[u64], &super::features::EventDesc> =
            std::collections::HashMap::new();
        for d in descs.iter().filter(|d| !d.ids.is_empty()) {
            by_ids.entry(&d.ids).or_insert(d);
        }
        for (i, e) in self.attrs.iter_mut().enumerate() {
            let by_id = by_ids
                .get(e.ids.as_slice())
                .copied()
                .or_else(|| same_len.then(|| descs.get(i)).flatten());
            e.name = match by_id {
                Some(d) if !d.name.is_empty() => d.name.clone(),
                _ => default_name(&e.attr),
            };
        }
    }

    /// True for a pipe-mode stream.
    pub fn is_pipe(&self) -> bool {
        self.pipe
    }

    /// The header's size field (104 or 72 in file mode, 16 in pipe mode).
    pub fn header_size(&self) -> u64 {
        self.header_size
    }

    /// `attr_size` of the file header (0 in pipe mode).
    pub fn attr_size(&self) -> u64 {
        self.attr_size
    }

    /// Offset of the first record.
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// Bytes of records (to EOF when the header said 0).
    pub fn data_size(&self) -> u64 {
        self.data_size
    }

    /// The events, in file order.
    pub fn attrs(&self) -> &[EventAttr] {
        &self.attrs
    }

    /// The header features.
    pub fn features(&self) -> &Features {
        &self.features
    }

    /// Feature ids present (bits of the header's bitmap, or pipe-mode feature records).
    pub fn feature_ids(&self) -> &[u32] {
        &self.feature_bits
    }

    /// Problems that did not stop reading (a feature section hwprof could not parse).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The decoder for this file's records.
    pub fn decoder(&self) -> &Decoder {
        &self.decoder
    }

    /// The tracing data: the `format` files of the recorded tracepoints, which say where
    /// each field sits in their raw data (read them with [`super::tracing::formats`]).
    /// From the `TRACING_DATA` feature in file mode, from the data after the
    /// `HEADER_TRACING_DATA` record in pipe mode; `None` when the file has none.
    /// In pipe mode it is read back from the spooled stream (a few hundred KiB), which
    /// can fail.
    pub fn tracing_data(&self) -> Result<Option<Cow<'_, [u8]>>> {
        if let Some((off, len)) = self.pipe_tracing {
            return self.source.section(off, len, off, "tracing data").map(Some);
        }
        Ok(self
            .features
            .other
            .iter()
            .find(|(f, _)| *f == feat::TRACING_DATA)
            .map(|(_, b)| Cow::Borrowed(b.as_slice())))
    }

    /// Calls `f(offset, record)` for every record in file order. Records inside
    /// `COMPRESSED` records follow the compressed record itself and carry its offset.
    /// Stops at the first error (of decoding, or returned by `f`).
    pub fn for_each_record<E, F>(&self, mut f: F) -> std::result::Result<(), E>
    where
        E: From<Error>,
        F: FnMut(u64, &Record<'_>) -> std::result::Result<(), E>,
    {
        self.each_record(Samples::Decoded, |off, _, rec| match rec {
            Some(rec) => f(off, rec),
            None => Ok(()),
        })
    }

    /// [`PerfData::for_each_record`], with each record's bytes (header included; for a
    /// record inside a `COMPRESSED` record, its decompressed bytes), the samples of the
    /// data section not decoded (`None`): for a reader that holds samples and decodes
    /// them later ([`PerfData::decoder`]; [`Decoder::sample_time`] reads a sample's time
    /// without decoding it). An error in such a sample is found only when it is decoded.
    pub fn for_each_record_lazily<E, F>(&self, f: F) -> std::result::Result<(), E>
    where
        E: From<Error>,
        F: FnMut(u64, &[u8], Option<&Record<'_>>) -> std::result::Result<(), E>,
    {
        self.each_record(Samples::Undecoded, f)
    }

    /// [`PerfData::for_each_record`] of every record but the samples of the data
    /// section (not decoded: a reader that wants the side-band records first, in a pass
    /// of its own). Samples inside `COMPRESSED` records are passed on. An error in a
    /// sample that was skipped is found only by a pass that decodes it.
    pub fn for_each_non_sample<E, F>(&self, mut f: F) -> std::result::Result<(), E>
    where
        E: From<Error>,
        F: FnMut(u64, &Record<'_>) -> std::result::Result<(), E>,
    {
        self.each_record(Samples::Skipped, |off, _, rec| match rec {
            Some(rec) => f(off, rec),
            None => Ok(()),
        })
    }

    fn each_record<E, F>(&self, samples: Samples, mut f: F) -> std::result::Result<(), E>
    where
        E: From<Error>,
        F: FnMut(u64, &[u8], Option<&Record<'_>>) -> std::result::Result<(), E>,
    {
        let end = self.data_offset + self.data_size;
        let mut off = self.data_offset;
        let mut z: Option<Inflater> = None;
        let mut window = Window::new(&self.source);
        while off < end {
            let rec_bytes = window.record(off, end)?;
            if samples != Samples::Decoded
                && let Some((kind::SAMPLE, _, size)) = peek_header(rec_bytes)
                && size >= 8
                && usize::from(size) == rec_bytes.len()
            {
                if samples == Samples::Undecoded {
                    f(off, rec_bytes, None)?;
                }
                off = next_offset(off, size, 0, end)?;
                continue;
            }
            let rec = self.decoder.decode(rec_bytes, off)?;
            let mut skip = 0;
            match rec.body {
                Body::TracingData { size } => skip = u64::from(size).next_multiple_of(8),
                Body::Auxtrace { size, .. } => skip = size,
                _ => {}
            }
            f(off, rec_bytes, Some(&rec))?;
            if let Body::Compressed { data } = rec.body {
                let inf = match &mut z {
                    Some(z) => z,
                    None => z.insert(Inflater::new(off)?),
                };
                inf.feed(data, off, &self.decoder, &mut f)?;
            }
            off = next_offset(off, rec.header.size, skip, end)?;
        }
        if let Some(len) = self.truncated {
            return Err(Error::malformed(
                "data section",
                len,
                "the file ends before the data section the header announces (truncated file?)",
            )
            .into());
        }
        if let Some(z) = &z
            && !z.pending.is_empty()
        {
            return Err(Error::malformed(
                "compressed records",
                end,
                format!(
                    "{} decompressed bytes left that are not a whole record",
                    z.pending.len()
                ),
            )
            .into());
        }
        Ok(())
    }
}

/// Checks the `PERFILE2` magic at the start of `bytes` (at least 8 bytes).
fn check_magic(bytes: &[u8], name: &str) -> Result<()> {
    let magic = u64_at(bytes, 0, "perf.data header")?;
    if magic == MAGIC.swap_bytes() {
        return Err(Error::Unsupported(format!(
            "{name}: big-endian perf.data (magic 2ELIFREP) is not supported"
        )));
    }
    if magic == MAGIC_V1 {
        return Err(Error::Unsupported(format!(
            "{name}: perf.data version 1 (PERFFILE, perf before 3.0) is not supported"
        )));
    }
    if magic != MAGIC {
        return Err(Error::NotPerfData {
            path: name.to_string(),
            msg: "no PERFILE2 magic".to_string(),
        });
    }
    Ok(())
}

fn bad_header_size(hs: u64) -> Error {
    Error::malformed(
        "perf.data header",
        8,
        format!("header size {hs}, expected {FILE_HEADER_SIZE} (or 16 for pipe mode)"),
    )
}

/// Reads from `r` into `bytes` until it holds `want` bytes or `r` ends; returns whether
/// `r` ended. `name` names the input in errors.
fn fill(r: &mut impl Read, bytes: &mut Vec<u8>, want: u64, name: &str) -> Result<bool> {
    while (bytes.len() as u64) < want {
        let missing = want - bytes.len() as u64;
        match r.by_ref().take(missing).read_to_end(bytes) {
            Ok(0) => return Ok(true),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(format!("cannot read {name}"), e)),
        }
    }
    Ok(false)
}

/// The frame checks of the record header at `off`, as soon as its 8 bytes are in: a
/// size that holds the header, and for a type this reader does not know (past
/// `COMPRESSED2`), a size that is a multiple of 8, as perf requires of every record it
/// skips. (A record of a known type is decoded, and checked, when it is visited.)
fn check_frame(type_: u32, size: u16, off: u64) -> Result<()> {
    if size < 8 {
        return Err(Error::malformed(
            "record",
            off,
            format!("record size {size} is smaller than its header"),
        ));
    }
    if type_ > kind::COMPRESSED2 && size % 8 != 0 {
        return Err(Error::malformed(
            "record",
            off,
            format!(
                "unknown record type {type_} of {size} bytes, not a multiple of 8 (not perf.data?)"
            ),
        ));
    }
    Ok(())
}

/// The record at `off` (checked against `end` and its own size field) in `b`, which
/// holds the bytes from offset `base` on.
fn record_at(b: &[u8], base: u64, off: u64, end: u64) -> Result<&[u8]> {
    let start = usize::try_from(off - base).unwrap_or(usize::MAX);
    let stop = usize::try_from(end - base)
        .unwrap_or(usize::MAX)
        .min(b.len());
    let avail = b.get(start..stop).unwrap_or(&[]);
    let (type_, _, size) = peek_header(avail).ok_or_else(|| {
        Error::malformed(
            "record",
            off,
            format!("{} bytes left, a record header needs 8", avail.len()),
        )
    })?;
    check_frame(type_, size, off)?;
    avail.get(..usize::from(size)).ok_or_else(|| {
        Error::malformed(
            "record",
            off,
            format!(
                "record of {size} bytes but only {} left (truncated file?)",
                avail.len()
            ),
        )
    })
}

/// The pipe-mode scan: the attrs and features collected from the stream's user
/// records, and how far it got. It runs over a stream as the stream arrives
/// ([`PipeScan::advance`] after each chunk) or once over a whole stream in memory.
#[derive(Debug)]
struct PipeScan {
    /// Offset of the next record to look at.
    off: u64,
    /// A record whose trailing data (tracing data, AUX data) runs past the bytes read so
    /// far: its offset and that data's size.
    overrun: Option<(u64, u64)>,
    dec: Decoder,
    attrs: Vec<EventAttr>,
    features: Features,
    feature_bits: Vec<u32>,
    warnings: Vec<String>,
    /// Offset and size of the tracing data (the first `HEADER_TRACING_DATA`'s).
    tracing: Option<(u64, u64)>,
}

impl PipeScan {
    fn new() -> PipeScan {
        PipeScan {
            off: PIPE_HEADER_SIZE,
            overrun: None,
            dec: Decoder::default(),
            attrs: Vec::new(),
            features: Features::default(),
            feature_bits: Vec::new(),
            warnings: Vec::new(),
            tracing: None,
        }
    }

    /// Scans the records of `b` (the stream so far: header included) from where the
    /// last call stopped. With `complete` false a record cut off at the end waits for
    /// more bytes (its header is checked already); with `complete` true the stream ends
    /// here and a cut-off record is an error.
    fn advance(&mut self, b: &[u8], base: u64, complete: bool) -> Result<()> {
        let end = base + b.len() as u64;
        while self.off < end {
            let off = self.off;
            let avail = usize::try_from(off - base)
                .ok()
                .and_then(|o| b.get(o..))
                .unwrap_or(&[]);
            if let Some((type_, _, size)) = peek_header(avail) {
                check_frame(type_, size, off)?;
                if !complete && avail.len() < usize::from(size) {
                    return Ok(());
                }
            } else if !complete {
                return Ok(());
            }
            let rec = record_at(b, base, off, end)?;
            let (type_, _, size) = peek_header(rec).unwrap_or((0, 0, 0));
            let mut skip = 0;
            match type_ {
                kind::HEADER_ATTR
                | kind::HEADER_FEATURE
                | kind::HEADER_TRACING_DATA
                | kind::AUXTRACE => match self.dec.decode(rec, off)?.body {
                    Body::HeaderAttr { attr, ids } => self.attrs.push(EventAttr {
                        attr: *attr,
                        ids: ids.to_vec(),
                        name: String::new(),
                    }),
                    Body::HeaderFeature { feature, data } => {
                        let f = u32::try_from(feature).unwrap_or(u32::MAX);
                        if let Err(e) = self.features.parse_section(f, data, off + 16) {
                            self.warnings.push(format!("feature {feature}: {e}"));
                        }
                        self.feature_bits.push(f);
                    }
                    Body::TracingData { size: len } => {
                        skip = u64::from(len).next_multiple_of(8);
                        self.tracing
                            .get_or_insert((off + u64::from(size), u64::from(len)));
                    }
                    Body::Auxtrace { size, .. } => skip = size,
                    _ => {}
                },
                _ => {}
            }
            if complete {
                self.off = next_offset(off, size, skip, end)?;
            } else {
                // The trailing data may still be on its way.
                let next = next_offset(off, size, skip, u64::MAX)?;
                if next > end {
                    self.overrun = Some((off, skip));
                }
                self.off = next;
            }
        }
        if complete
            && self.off > end
            && let Some((off, skip)) = self.overrun
        {
            return Err(Error::malformed(
                "record",
                off,
                format!("data of {skip} bytes after the record runs past the end"),
            ));
        }
        Ok(())
    }
}

/// One zstd stream across `COMPRESSED` records, and the decompressed bytes of a record
/// that straddles two compressed records. Records are visited as they come out of zstd,
/// so memory stays at one buffer and one partial record however much a compressed
/// record expands; the total expansion is capped (a zstd bomb).
struct Inflater {
    z: zstd::stream::raw::Decoder<'static>,
    pending: Vec<u8>,
    buf: Vec<u8>,
    bytes_in: u64,
    bytes_out: u64,
    /// Decompressed bytes visited before `pending`.
    visited: u64,
}

impl Inflater {
    fn new(off: u64) -> Result<Self> {
        Ok(Inflater {
            z: zstd::stream::raw::Decoder::new()
                .map_err(|e| Error::malformed("compressed record", off, e.to_string()))?,
            pending: Vec::new(),
            buf: vec![0; 256 * 1024],
            bytes_in: 0,
            bytes_out: 0,
            visited: 0,
        })
    }

    /// Decompresses `data` (the payload of the compressed record at `off`) and visits
    /// every whole record in it.
    fn feed<E, F>(
        &mut self,
        mut data: &[u8],
        off: u64,
        dec: &Decoder,
        f: &mut F,
    ) -> std::result::Result<(), E>
    where
        E: From<Error>,
        F: FnMut(u64, &[u8], Option<&Record<'_>>) -> std::result::Result<(), E>,
    {
        use zstd::stream::raw::Operation;
        self.bytes_in += data.len() as u64;
        loop {
            let st = self
                .z
                .run_on_buffers(data, &mut self.buf)
                .map_err(|e| Error::malformed("compressed record", off, format!("zstd: {e}")))?;
            self.bytes_out += st.bytes_written as u64;
            if self.bytes_out > self.bytes_in.saturating_mul(MAX_INFLATE_RATIO) + INFLATE_SLACK {
                return Err(Error::malformed(
                    "compressed record",
                    off,
                    format!(
                        "{} compressed bytes inflate to more than {} (more than {MAX_INFLATE_RATIO} times: a corrupt or hostile stream)",
                        self.bytes_in, self.bytes_out
                    ),
                )
                .into());
            }
            self.pending
                .extend_from_slice(self.buf.get(..st.bytes_written).unwrap_or(&[]));
            self.drain(dec, off, f)?;
            data = data.get(st.bytes_read..).unwrap_or(&[]);
            if data.is_empty() && st.bytes_written < self.buf.len() {
                return Ok(());
            }
            if st.bytes_read == 0 && st.bytes_written == 0 {
                return Err(
                    Error::malformed("compressed record", off, "zstd made no progress").into(),
                );
            }
        }
    }

    /// Visits every whole record in `pending`, keeping a partial one.
    fn drain<E, F>(&mut self, dec: &Decoder, off: u64, f: &mut F) -> std::result::Result<(), E>
    where
        E: From<Error>,
        F: FnMut(u64, &[u8], Option<&Record<'_>>) -> std::result::Result<(), E>,
    {
        let mut pos = 0usize;
        while let Some((_, _, size)) = self.pending.get(pos..).and_then(peek_header) {
            let size = usize::from(size);
            if size < 8 {
                return Err(Error::malformed(
                    "compressed record",
                    off,
                    format!(
                        "record of size {size} at byte {} of the decompressed stream",
                        self.visited + pos as u64
                    ),
                )
                .into());
            }
            let Some(rec_bytes) = self.pending.get(pos..pos + size) else {
                break;
            };
            // Offsets inside decompressed data are no file offsets: name the compressed
            // record, and where in its decompressed data the bad record starts.
            let rec = dec.decode(rec_bytes, 0).map_err(|e| {
                Error::malformed(
                    "compressed record",
                    off,
                    format!(
                        "record at byte {} of the decompressed stream: {e}",
                        self.visited + pos as u64
                    ),
                )
            })?;
            f(off, rec_bytes, Some(&rec))?;
            pos += size;
        }
        self.pending.drain(..pos);
        self.visited += pos as u64;
        Ok(())
    }
}

/// perf's name for an event without `HEADER_EVENT_DESC`.
pub fn default_name(a: &Attr) -> String {
    if let Some(n) = hwprof_pmu::event::attr_name(a.type_, a.config) {
        return n.to_string();
    }
    match a.type_ {
        types::HARDWARE => format!("hardware 0x{:x}", a.config),
        types::SOFTWARE => format!("software 0x{:x}", a.config),
        types::TRACEPOINT => format!("tp:{}", a.config),
        types::HW_CACHE => format!("hw-cache 0x{:x}", a.config),
        types::RAW => format!("raw 0x{:x}", a.config),
        types::BREAKPOINT => format!("mem:0x{:x}", a.config1),
        t => format!("pmu{t}/config=0x{:x}/", a.config),
    }
}

/// The feature id constants, re-exported for callers that print them.
pub use feat::BITS as FEATURE_BITS;

/// The offset after the record at `off` of `size` bytes and the `skip` bytes of data that
/// follow it (HEADER_TRACING_DATA, AUXTRACE), which must end by `end`.
fn next_offset(off: u64, size: u16, skip: u64, end: u64) -> Result<u64> {
    off.checked_add(u64::from(size))
        .and_then(|o| o.checked_add(skip))
        .filter(|&o| o <= end)
        .ok_or_else(|| {
            Error::malformed(
                "record",
                off,
                format!("data of {skip} bytes after the record runs past the end"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwprof_pmu::attr::sample;

    /// An endless reader that counts what was taken from it.
    struct Endless<F: FnMut() -> u8> {
        byte: F,
        taken: u64,
    }

    impl<F: FnMut() -> u8> Read for Endless<F> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            for b in buf.iter_mut() {
                *b = (self.byte)();
            }
            self.taken += buf.len() as u64;
            Ok(buf.len())
        }
    }

    fn endless(prefix: Vec<u8>, mut byte: impl FnMut() -> u8) -> Endless<impl FnMut() -> u8> {
        let mut i = 0;
        Endless {
            byte: move || {
                i += 1;
                prefix.get(i - 1).copied().unwrap_or_else(&mut byte)
            },
            taken: 0,
        }
    }

    /// xorshift bytes: /dev/urandom without the device.
    fn random() -> impl FnMut() -> u8 {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        }
    }

    fn record(type_: u32, body: &[u8]) -> Vec<u8> {
        let mut r = type_.to_le_bytes().to_vec();
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&((8 + body.len()) as u16).to_le_bytes());
        r.extend_from_slice(body);
        r
    }

    /// A pipe-mode stream: one HEADER_ATTR (cpu-clock, IP|TID) then `n` samples.
    fn pipe_stream(n: usize) -> Vec<u8> {
        let mut b = b"PERFILE2".to_vec();
        b.extend_from_slice(&16u64.to_le_bytes());
        let mut a = Attr::new(1, 0);
        a.sample_type = sample::IP | sample::TID;
        b.extend(record(kind::HEADER_ATTR, &a.to_bytes()));
        for i in 0..n as u64 {
            let mut body = (0x40_1000 + i).to_le_bytes().to_vec();
            body.extend_from_slice(&7u32.to_le_bytes());
            body.extend_from_slice(&7u32.to_le_bytes());
            b.extend(record(kind::SAMPLE, &body));
        }
        b
    }

    fn samples(pd: &PerfData) -> usize {
        let mut n = 0;
        pd.for_each_record(|_, r| {
            if let Body::Sample(_) = r.body {
                n += 1;
            }
            Ok::<(), Error>(())
        })
        .unwrap();
        n
    }

    #[test]
    fn endless_garbage_stops_at_the_header() {
        let mut zeros = endless(Vec::new(), || 0);
        let e = PerfData::from_reader(&mut zeros).unwrap_err();
        assert!(e.to_string().contains("no PERFILE2 magic"), "{e}");
        assert_eq!(zeros.taken, 8, "the magic is checked after 8 bytes");
        let mut rnd = endless(Vec::new(), random());
        assert!(PerfData::from_reader(&mut rnd).is_err());
        assert_eq!(rnd.taken, 8);
        // A file-mode header on a pipe: refused after the header.
        let mut file_mode = b"PERFILE2".to_vec();
        file_mode.extend_from_slice(&104u64.to_le_bytes());
        let mut fm = endless(file_mode, || 0);
        let e = PerfData::from_reader(&mut fm).unwrap_err();
        assert!(
            e.to_string().contains("file-mode perf.data on a pipe"),
            "{e}"
        );
        assert_eq!(fm.taken, 16);
    }

    #[test]
    fn endless_garbage_after_a_valid_header_stops_at_its_first_record() {
        // Zeros: a record of size 0.
        let mut z = endless(pipe_stream(3), || 0);
        let e = PerfData::from_reader(&mut z).unwrap_err();
        assert!(e.to_string().contains("smaller than its header"), "{e}");
        assert!(z.taken <= 2 * STREAM_CHUNK, "read {} bytes", z.taken);
        // Random bytes: unknown types, sizes not a multiple of 8 (after a few that are).
        let mut r = endless(pipe_stream(3), random());
        let e = PerfData::from_reader(&mut r).unwrap_err();
        assert!(e.to_string().contains("malformed record"), "{e}");
        assert!(r.taken <= 2 * STREAM_CHUNK, "read {} bytes", r.taken);
    }

    #[test]
    fn a_stream_read_in_pieces_equals_the_whole() {
        let stream = pipe_stream(50_000);
        let whole = PerfData::from_bytes(stream.clone(), "whole").unwrap();
        // One byte at a time, the worst case for the checks that wait for a whole record.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = buf.len().min(1).min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let small = pipe_stream(50);
        let piece = PerfData::from_reader(Trickle(&small)).unwrap();
        assert_eq!(piece.attrs(), whole.attrs());
        assert_eq!(samples(&piece), 50);
        let streamed = PerfData::from_reader(&stream[..]).unwrap();
        assert!(streamed.is_pipe());
        assert_eq!(streamed.attrs(), whole.attrs());
        assert_eq!(samples(&streamed), 50_000);
        // Cut inside the last record: the same error as for the whole stream in memory.
        let cut = &stream[..stream.len() - 3];
        let a = PerfData::from_reader(cut).unwrap_err().to_string();
        let b = PerfData::from_bytes(cut.to_vec(), "<stdin>")
            .unwrap_err()
            .to_string();
        assert_eq!(a, b);
        assert!(a.contains("truncated"), "{a}");
    }

    #[test]
    fn unknown_types_need_perfs_alignment() {
        let mut s = pipe_stream(1);
        s.extend(record(200, &[0; 8]));
        let pd = PerfData::from_bytes(s.clone(), "aligned").unwrap();
        assert_eq!(samples(&pd), 1);
        let mut odd = pipe_stream(1);
        odd.extend(record(200, &[0; 5]));
        let e = PerfData::from_bytes(odd, "odd").unwrap_err();
        assert!(e.to_string().contains("unknown record type 200"), "{e}");
    }

    /// An attr without an event description is named as perf names it: the generic
    /// events by pmu's table, the others by type and config.
    #[test]
    fn default_names() {
        let name = |t, c| default_name(&Attr::new(t, c));
        assert_eq!(name(types::HARDWARE, 0), "cycles");
        assert_eq!(name(types::HARDWARE, 4), "branch-instructions");
        assert_eq!(name(types::HARDWARE, 8 << 32 | 9), "ref-cycles");
        assert_eq!(name(types::HARDWARE, 10), "hardware 0xa");
        assert_eq!(name(types::SOFTWARE, 3), "context-switches");
        assert_eq!(name(types::SOFTWARE, 12), "software 0xc");
        assert_eq!(name(types::RAW, 0x1c2), "raw 0x1c2");
        assert_eq!(name(types::TRACEPOINT, 317), "tp:317");
    }
}
