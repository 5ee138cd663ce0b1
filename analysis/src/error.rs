//! The error type of `hwprof-analysis`.
//!
//! Most of the analysis cannot fail: it counts what it is given. Errors are about the
//! recording under it (a record that cannot be decoded, or symbolized).

/// Errors of the analysis.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The recording could not be read or decoded.
    #[error(transparent)]
    Sampler(#[from] hwprof_sampler::Error),
    /// The recording could not be symbolized.
    #[error(transparent)]
    Symbolize(#[from] hwprof_symbolize::Error),
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
