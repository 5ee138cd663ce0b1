//! The sampler's error type.

use std::io;

/// What went wrong while sampling, decoding or reading/writing perf.data.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Bytes that are not a valid record or file structure, with where they are.
    #[error("malformed {what} at offset {offset:#x}: {msg}")]
    Malformed {
        /// What was being decoded (`record`, `sample`, `perf.data header`, ...).
        what: &'static str,
        /// Byte offset in the file or stream (or in the record for live data).
        offset: u64,
        /// What is wrong.
        msg: String,
    },
    /// A file or stream that is not perf.data at all.
    #[error("{path}: not a perf.data file ({msg})")]
    NotPerfData {
        /// The file.
        path: String,
        /// Why.
        msg: String,
    },
    /// Something valid that hwprof does not handle.
    #[error("{0}")]
    Unsupported(String),
    /// An I/O error, with what was being done.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// An error from the PMU layer (opening events...).
    #[error(transparent)]
    Pmu(#[from] hwprof_pmu::Error),
    /// An input file that cannot be read: missing, not a regular file (a FIFO, a device,
    /// a directory), or too large.
    #[error(transparent)]
    File(#[from] hwprof_pmu::file::FileError),
}

impl Error {
    /// An I/O error with context.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// A malformed-input error.
    pub fn malformed(what: &'static str, offset: u64, msg: impl Into<String>) -> Self {
        Error::Malformed {
            what,
            offset,
            msg: msg.into(),
        }
    }

    /// The errno behind this error, if it came from a syscall.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            Error::Io { source, .. } => source.raw_os_error(),
            Error::Pmu(e) => e.raw_os_error(),
            Error::File(e) => e.io_error().and_then(io::Error::raw_os_error),
            _ => None,
        }
    }
}

/// `Result` with the sampler's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
