//! Opening the files hwprof reads on a user's or a recording's word: perf.data, event
//! JSON files, uprobe binaries, baselines, the DSOs a recording names.
//!
//! Such a path may name anything: `/dev/zero` (endless bytes), `/dev/urandom`, a FIFO
//! nobody writes to (`open()` blocks forever), a directory, a terminal. hwprof reads only
//! regular files. [`open`] first `stat`s the path (a FIFO or device is never opened),
//! then opens it with `O_NONBLOCK | O_NOCTTY` and checks the opened file with `fstat`
//! (the path may have been swapped in between), so it never blocks and never reads
//! from anything but a regular file. [`read`] adds a size limit, checked against the
//! file's size and again while reading (a file may grow).

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Why an input file cannot be read. Messages name the file and say what is wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// `stat` or `open` failed.
    #[error("cannot open {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// Reading failed, or what was read is not what the caller can take (not UTF-8).
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The path names something other than a regular file.
    #[error("{path} is {kind}, not a regular file")]
    NotRegular {
        /// The file.
        path: String,
        /// What it is instead: `a directory`, `a FIFO`, `a character device`...
        kind: &'static str,
    },
    /// The file is larger than the limit for files of its kind.
    #[error("{path} is larger than {} (the most hwprof reads from such a file)", mib(*.max))]
    TooLarge {
        /// The file.
        path: String,
        /// The limit, in bytes.
        max: u64,
    },
}

impl FileError {
    /// The I/O error behind this error, if there is one.
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            FileError::Io { source, .. } | FileError::Read { source, .. } => Some(source),
            _ => None,
        }
    }

    /// True when the path exists but names the wrong kind of file or too large a
    /// file: the user's input is wrong (as opposed to an I/O failure).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            FileError::NotRegular { .. } | FileError::TooLarge { .. }
        )
    }
}

/// `n` bytes as `64 MiB` (or `1.5 MiB`).
fn mib(n: u64) -> String {
    let m = n as f64 / (1024.0 * 1024.0);
    if m.fract() == 0.0 {
        format!("{m:.0} MiB")
    } else {
        format!("{m:.1} MiB")
    }
}

/// What a file type is, for messages: `a directory`, `a FIFO`...
pub fn kind_name(t: std::fs::FileType) -> &'static str {
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a file"
    }
}

fn io_err(path: &Path, source: io::Error) -> FileError {
    FileError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn check_kind(path: &Path, m: &Metadata) -> Result<(), FileError> {
    if m.file_type().is_file() {
        Ok(())
    } else {
        Err(FileError::NotRegular {
            path: path.display().to_string(),
            kind: kind_name(m.file_type()),
        })
    }
}

/// Opens the regular file at `path` (symbolic links followed) for reading, without
/// blocking: anything else (directory, FIFO, device, socket) is a
/// [`FileError::NotRegular`] and is never opened. Returns the file and its metadata.
pub fn open(path: &Path) -> Result<(File, Metadata), FileError> {
    let before = std::fs::metadata(path).map_err(|e| io_err(path, e))?;
    check_kind(path, &before)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| io_err(path, e))?;
    let meta = file.metadata().map_err(|e| io_err(path, e))?;
    check_kind(path, &meta)?;
    Ok((file, meta))
}

/// Reads the whole regular file at `path` (see [`open`]), which may hold at most `max`
/// bytes ([`FileError::TooLarge`] otherwise, also when it grows past `max` while being
/// read).
pub fn read(path: &Path, max: u64) -> Result<Vec<u8>, FileError> {
    let (file, meta) = open(path)?;
    if meta.len() > max {
        return Err(FileError::TooLarge {
            path: path.display().to_string(),
            max,
        });
    }
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(usize::try_from(meta.len()).unwrap_or(usize::MAX))
        .map_err(|e| FileError::Read {
            path: path.display().to_string(),
            source: io::Error::new(io::ErrorKind::OutOfMemory, e.to_string()),
        })?;
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| FileError::Read {
            path: path.display().to_string(),
            source,
        })?;
    if bytes.len() as u64 > max {
        return Err(FileError::TooLarge {
            path: path.display().to_string(),
            max,
        });
    }
    Ok(bytes)
}

/// [`read`] as UTF-8 text; bytes that are not UTF-8 are an [`io::ErrorKind::InvalidData`]
/// error saying so.
pub fn read_to_string(path: &Path, max: u64) -> Result<String, FileError> {
    let bytes = read(path, max)?;
    String::from_utf8(bytes).map_err(|e| FileError::Read {
        path: path.display().to_string(),
        source: io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "not text (byte {} is not UTF-8: a binary file?)",
                e.utf8_error().valid_up_to()
            ),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("hwprof-file-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn regular_files_only_and_bounded() {
        let d = scratch("kinds");
        let f = d.join("f.json");
        std::fs::write(&f, b"0123456789").unwrap();
        assert_eq!(read(&f, 10).unwrap(), b"0123456789");
        let e = read(&f, 9).unwrap_err();
        assert!(e.is_bad_input(), "{e}");
        assert!(e.to_string().contains("larger than"), "{e}");
        let e = read(&d, 100).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{} is a directory, not a regular file", d.display())
        );
        // A FIFO nobody writes to: refused at once, never opened (open would block).
        let fifo = d.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = open(&fifo).unwrap_err();
            assert!(
                e.to_string().ends_with("is a FIFO, not a regular file"),
                "{e}"
            );
        }
        let e = read(&d.join("missing"), 100).unwrap_err();
        assert!(!e.is_bad_input());
        assert_eq!(
            e.io_error().map(io::Error::kind),
            Some(io::ErrorKind::NotFound)
        );
        std::fs::write(&f, [0xffu8, 0xfe, 0]).unwrap();
        let e = read_to_string(&f, 100).unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn sizes_in_mib() {
        assert_eq!(mib(64 << 20), "64 MiB");
        assert_eq!(mib(3 << 19), "1.5 MiB");
    }
}
