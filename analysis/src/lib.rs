//! `hwprof-analysis`: what hwprof computes from a recording, between symbols and output.
//!
//! This crate owns the analysis that is neither kernel nor rendering: pure functions over
//! records and frames ([`hwprof_symbolize::Profile`] and its samples), unit-tested without
//! a kernel and benchmarked with criterion (`benches/` at the workspace root).
//!
//! - [`branch`]: branch analysis from LBR, the rows of `hwprof report -b` (perf's
//!   `--branch-stack` view) with mispredict shares and average cycles.
//! - [`export`]: a recording as pprof, speedscope or Firefox Profiler files, every
//!   dimension (CPU, off-CPU, allocations, I/O) a series in its unit.
//! - [`fold`]: samples to folded stacks (`comm;main;f;g 42`), the boundary between
//!   collecting and drawing, with one weight type ([`fold::Weight`]: samples, period,
//!   sample weight, µs) for every flame graph; and the two-count lines of a
//!   differential graph.
//! - [`offcpu`]: where threads wait: `sched:sched_switch` raw data decoded with the
//!   format stored in the recording, switch-outs paired with their ends, and the
//!   off-CPU (or wall-clock) profile weighted in µs.
//! - [`report`]: the rows of `hwprof report` (grouped by sort keys, self and children
//!   overhead, filters, percent limits), its `--diff`, and the top functions and stacks
//!   of folded stacks (`hwprof offcpu --report`).
//! - [`stats`]: the statistics of `hwprof bench` (median, MAD, bootstrap intervals,
//!   Mann-Whitney U, Holm) and its verdicts ([`stats::verdict`]).
//! - [`topdown`]: TopDown (TMA) metrics from Intel's metric files, over counts.
//! - [`text`]: the one escaping of names from outside (control characters) in every
//!   text output.
//! - [`bench`](mod@bench): the rest of `hwprof bench` that is not printing: its JSON document and
//!   baselines, runs to metrics, comparisons and gates.
//!
//! It prints nothing and formats no numbers: the binary renders tables, JSON and SVG.
//! The APIs take samples one at a time ([`fold::Folder`], [`report::Aggregator`],
//! [`offcpu::Collector`]) so that a profile read as a stream folds and aggregates with
//! memory that follows the answer (distinct stacks, rows), not the file.
//!
//! ```
//! use hwprof_analysis::fold::{self, FoldOptions, Weight};
//! use hwprof_symbolize::Profile;
//!
//! # let profile = Profile::default();
//! let folded = fold::fold(&profile, 0, Weight::Period, FoldOptions::default());
//! for line in folded.lines() {
//!     println!("{line}");
//! }
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod alloc;
pub mod annotate;
pub mod bench;
pub mod branch;
pub mod c2c;
pub mod error;
pub mod export;
pub mod fold;
pub mod io;
pub mod mem;
pub mod offcpu;
pub mod report;
pub mod stats;
pub mod text;
pub mod topdown;

pub use error::{Error, Result};

/// `part` as a percentage of `total` (0 when `total` is 0): every share hwprof prints.
pub fn percent(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        100.0 * part as f64 / total as f64
    }
}
