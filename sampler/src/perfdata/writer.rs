//! Writing perf.data files, atomically.
//!
//! The layout is perf's file mode:
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
//! Everything goes to a temporary file next to the output (`.NAME.hwprof-PID.tmp`);
//! [`Writer::finish`] writes the features and the final header, fsyncs, moves an
//! existing output to `NAME.old` (as perf does) and renames the temporary file into
//! place. A [`Writer`] dropped without `finish` removes its temporary file: there is
//! never a half-written output.
//!
//! Attrs are written with the smallest `perf_event_attr` ABI size that holds their
//! fields (see [`file_attr_size`]), because perf refuses attrs larger than the struct
//! it was built with (perf 6.1 knows 128 bytes, hwprof 136).

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use hwprof_pmu::attr::Attr;

use super::MAGIC;
use super::features::{EventDesc, Features, attr_file_bytes, file_attr_size, id as feat};
use crate::error::{Error, Result};

/// `sizeof(struct perf_file_header)`.
pub const HEADER_SIZE: u64 = 104;
/// `sizeof(struct perf_file_section)`.
const SECTION_SIZE: u64 = 16;
/// The output buffer: large, so the sampling hot path rarely reaches a syscall.
const BUFFER: usize = 1 << 20;

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

/// An atomic, streaming perf.data writer (file mode).
#[derive(Debug)]
pub struct Writer {
    /// The output path.
    path: PathBuf,
    /// The temporary file being written.
    tmp: PathBuf,
    /// The buffered temporary file; `None` once consumed.
    out: Option<BufWriter<File>>,
    events: Vec<EventEntry>,
    /// `perf_file_header.attr_size` (attr bytes + 16).
    attr_size: u64,
    attrs_offset: u64,
    data_offset: u64,
    data_size: u64,
    records: u64,
    /// Set once the output is in place: the temporary file is then not removed.
    done: bool,
}

impl Writer {
    /// Creates a temporary file next to `path` (same directory, named
    /// `.NAME.hwprof-PID.tmp`), which fails at once with an [`Error::Io`] naming the
    /// directory when it is missing or not writable (so a caller can check before
    /// starting a workload), then writes the header placeholder, each event's ids and
    /// the attrs.
    pub fn create(path: &Path, events: Vec<EventEntry>) -> Result<Writer> {
        let name = path.file_name().ok_or_else(|| {
            Error::io(
                format!("perf.data output {}", path.display()),
                io::Error::new(io::ErrorKind::InvalidInput, "not a file name"),
            )
        })?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let base = format!(".{}.hwprof-{}", name.to_string_lossy(), std::process::id());
        let (tmp, file) = create_unique(&dir, &base)?;
        let mut w = Writer {
            path: path.to_path_buf(),
            tmp,
            out: Some(BufWriter::with_capacity(BUFFER, file)),
            attr_size: file_attr_size(events.iter().map(|e| &e.attr)) as u64 + SECTION_SIZE,
            events,
            attrs_offset: 0,
            data_offset: 0,
            data_size: 0,
            records: 0,
            done: false,
        };
        w.write_prologue()?;
        Ok(w)
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
        let tmp = &self.tmp;
        match self.out.as_mut() {
            Some(out) => out
                .write_all(bytes)
                .map_err(|e| Error::io(format!("writing {}", tmp.display()), e)),
            None => Err(Error::io(
                format!("writing {}", tmp.display()),
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

    /// The temporary file being written (removed when the writer is dropped unfinished).
    pub fn temp_path(&self) -> &Path {
        &self.tmp
    }

    /// Writes the feature sections after the data (`features`; `HEADER_EVENT_DESC` is
    /// made from the writer's events when `features` has none), then the final header
    /// (data offset and size, attrs section, feature bitmap); fsyncs; moves an existing
    /// non-empty output to `PATH.old`, as perf does, and renames the temporary file
    /// over `path`. On error the temporary file is removed and no output is left
    /// half-written.
    pub fn finish(mut self, features: &Features) -> Result<()> {
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

        let ctx = format!("writing {}", self.tmp.display());
        let Some(out) = self.out.take() else {
            return Err(Error::io(ctx, io::Error::other("writer already finished")));
        };
        let mut file = out
            .into_inner()
            .map_err(|e| Error::io(ctx.clone(), e.into_error()))?;
        let header = self.header(&bitmap);
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.write_all(&header))
            .and_then(|_| file.sync_all())
            .map_err(|e| Error::io(ctx, e))?;
        drop(file);
        self.put_in_place()?;
        self.done = true;
        Ok(())
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

    /// Moves an existing non-empty output to `.old`, renames the temporary file into
    /// place and syncs the directory.
    fn put_in_place(&self) -> Result<()> {
        let mut old = self.path.clone().into_os_string();
        old.push(".old");
        let old = PathBuf::from(old);
        let moved = match std::fs::metadata(&self.path) {
            Ok(m) if m.is_file() && m.len() > 0 => {
                std::fs::rename(&self.path, &old).map_err(|e| {
                    Error::io(
                        format!("moving {} to {}", self.path.display(), old.display()),
                        e,
                    )
                })?;
                true
            }
            _ => false,
        };
        if let Err(e) = std::fs::rename(&self.tmp, &self.path) {
            if moved {
                // Put the previous file back rather than leave nothing.
                let _ = std::fs::rename(&old, &self.path);
            }
            return Err(Error::io(
                format!("renaming {} to {}", self.tmp.display(), self.path.display()),
                e,
            ));
        }
        if let Some(dir) = self.path.parent() {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            // Best effort: the rename is durable once the directory is synced.
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Some(out) = self.out.take() {
            // Discard the buffer rather than flush it into a file about to be removed.
            let (file, _) = out.into_parts();
            drop(file);
        }
        let _ = std::fs::remove_file(&self.tmp);
    }
}

/// Creates `dir/base.tmp` (or `dir/base-N.tmp` when a stale one exists) exclusively.
fn create_unique(dir: &Path, base: &str) -> Result<(PathBuf, File)> {
    let mut last = None;
    for n in 0..64 {
        let name = if n == 0 {
            format!("{base}.tmp")
        } else {
            format!("{base}-{n}.tmp")
        };
        let tmp = dir.join(name);
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => {
                return Err(Error::io(
                    format!("cannot create the output in {}", dir.display()),
                    e,
                ));
            }
        }
    }
    Err(Error::io(
        format!("cannot create a temporary file in {}", dir.display()),
        last.unwrap_or_else(|| io::Error::other("too many stale temporary files")),
    ))
}
