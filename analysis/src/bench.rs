//! `hwprof bench` without its printing: what a benchmark's runs become and how two of
//! them compare.
//!
//! - [`doc`]: the `hwprof-bench/1` document (what `--json` prints and `--save` writes),
//!   loading and checking a saved baseline, the machine it was measured on.
//! - [`metrics`]: what one run measured and the metrics of a series of runs (wall,
//!   user and system time, the events, peak RSS), each with its median, MAD and interval.
//!
//! The statistics under it are [`crate::stats`]; the binary runs the command, renders
//! the tables and writes the files.

pub mod doc;
pub mod metrics;

use std::path::PathBuf;

/// Errors of the bench model. Each message is the one line `hwprof bench` prints (with
/// the flag it concerns and what to do), so they are all the user's to fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The baseline's file does not exist.
    #[error(
        "no baseline '{name}' ({} does not exist); save one first with `hwprof bench --save {name} -- CMD`",
        path.display()
    )]
    NoBaseline {
        /// The name given.
        name: String,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The baseline's file cannot be read: not a regular file, too large, unreadable.
    #[error("bad baseline '{name}': {source}")]
    BadBaseline {
        /// The name given.
        name: String,
        /// Why it cannot be read.
        source: hwprof_pmu::file::FileError,
    },
    /// The file is not a baseline: empty, not text, not JSON, fields or values that no
    /// measurement gives.
    #[error("{} is not a hwprof bench baseline: {why}", path.display())]
    NotBaseline {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A baseline of another version of the schema.
    #[error(
        "{} has schema '{schema}', which this hwprof (reads {}) cannot read; re-save the baseline with this version",
        path.display(),
        doc::SCHEMA
    )]
    OtherSchema {
        /// The file.
        path: PathBuf,
        /// Its `schema`.
        schema: String,
    },
}

/// `Result` with the bench [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
