//! The error type of `hwprof-analysis`.
//!
//! Most of the analysis cannot fail: it counts what it is given. Errors are about the
//! recording under it (a record that cannot be decoded) or inputs that do not belong
//! together.

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
    /// The per-sample entries of a record pass and the profile's samples differ in
    /// number (they must be the same samples, in file order).
    #[error("{read} samples read but {symbolized} symbolized")]
    Misaligned {
        /// Samples seen by the record pass.
        read: usize,
        /// Samples in the profile.
        symbolized: usize,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
