//! Flags of `hwprof annotate`.

use super::{InputArgs, InputWords, SHORT_SYMFS_HELP};

/// Flags of `hwprof annotate`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Each source line of the function with the addresses it covers and its share of the function's samples (lines with 5% or more marked `*`), as perf annotate --stdio's source-line totals."
)]
pub struct AnnotateArgs {
    /// `-i` and `--symfs`.
    #[command(flatten)]
    pub input: InputArgs<AnnotateWords>,
    /// The function, as report names it (without `[.] `); without one, every function
    /// with 1% or more of the event's samples, hottest first.
    #[arg(value_name = "SYMBOL")]
    pub symbol: Option<String>,
    /// Only this event (by name) of a multi-event file (default: the first event with
    /// samples in the function).
    #[arg(long = "event", value_name = "NAME")]
    pub event: Option<String>,
    /// Plain text (the default; accepted for perf's --stdio).
    #[arg(long = "stdio")]
    pub stdio: bool,
}

/// What `hwprof annotate` takes of [`InputArgs`].
#[derive(Debug)]
pub enum AnnotateWords {}

impl InputWords for AnnotateWords {
    const INPUT: &'static str = "The perf.data file to read (`-` for a pipe-mode stream on stdin)";
    const SYMFS: Option<&'static str> = Some(SHORT_SYMFS_HELP);
}
