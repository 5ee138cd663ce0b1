//! The error type of `hwprof-symbolize`.
//!
//! Failing to resolve an address is not an error (it yields an `[unknown]` frame); errors
//! are about the recording itself: a record that cannot be decoded.

/// Errors of symbolization.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The recording could not be read or decoded.
    #[error(transparent)]
    Sampler(#[from] hwprof_sampler::Error),
    /// An I/O error outside the recording (a perf map, kallsyms).
    #[error("{what}: {source}")]
    Io {
        /// What was being read.
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
