//! `hwprof bench` without its printing: what a benchmark's runs become and how two of
//! them compare.
//!
//! - [`doc`]: the `hwprof-bench/1` document (what `--json` prints and `--save` writes),
//!   loading and checking a saved baseline, the machine it was measured on.
//! - [`compare`]: the verdicts of a comparison with a baseline or side A, and the
//!   metrics that gate it (`--gate`).
//! - [`command`]: the A command of `--compare` split into words, an argv shown quoted.
//! - [`metrics`]: what one run measured and the metrics of a series of runs (wall,
//!   user and system time, the events, peak RSS), each with its median, MAD and interval.
//!
//! The statistics under it are [`crate::stats`]; the binary runs the command, renders
//! the tables and writes the files.

pub mod command;
pub mod compare;
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
    /// A quote of the `--compare` command is not closed.
    #[error("unmatched {quote} in '{command}'")]
    Unmatched {
        /// `'` or `"`.
        quote: char,
        /// The command as given.
        command: String,
    },
    /// The `--compare` command ends with `\\`.
    #[error("'{command}' ends with a lone backslash")]
    LoneBackslash {
        /// The command as given.
        command: String,
    },
    /// The `--compare` command uses shell syntax (pipes, redirections, `;`, `&`, `$`,
    /// backquotes, parentheses).
    #[error(
        "'{command}' uses shell syntax; run it through a shell on both sides so both pay the same cost, e.g. --compare \"sh -c '...'\" -- sh -c '...'"
    )]
    ShellSyntax {
        /// The command as given.
        command: String,
    },
    /// The `--compare` command has no words.
    #[error("give the A command, e.g. --compare './bench-old --fast'")]
    NoCommand,
    /// A `--gate` metric that this benchmark does not measure.
    #[error("--gate {gate}: no such metric here (metrics: {}, or `all`)", metrics.join(", "))]
    NoSuchMetric {
        /// The name given.
        gate: String,
        /// The metrics measured.
        metrics: Vec<String>,
    },
    /// `--gate` names no metric.
    #[error("--gate needs at least one metric, or `all`")]
    NoGate,
}

/// `Result` with the bench [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
