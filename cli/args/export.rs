//! Flags of `hwprof export`.

use std::path::PathBuf;

use clap::ValueEnum;

use super::{InputArgs, InputWords, RecordArgs, RecordWords, SYMFS_HELP};

/// The formats of `hwprof export --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// gzipped profile.proto, for `go tool pprof`, Pyroscope, Parca.
    Pprof,
    /// The Firefox Profiler's processed format (JSON), for profiler.firefox.com.
    Firefox,
    /// speedscope's file format (JSON), for speedscope.app.
    Speedscope,
}

impl ExportFormat {
    /// The output file when `-o` is not given.
    pub fn default_output(self) -> &'static str {
        match self {
            ExportFormat::Pprof => "profile.pb.gz",
            ExportFormat::Firefox => "profile.firefox.json",
            ExportFormat::Speedscope => "profile.speedscope.json",
        }
    }
}

/// Flags of `hwprof export`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Every event of the recording is exported, each in its unit: CPU time (ns) for cpu-clock and task-clock, events for the others (each member of a group on its own), off-CPU time (ns, from offcpu-time or paired sched:sched_switch samples), bytes and allocations (allocated-bytes, leaked-bytes), I/O time (io-time)."
)]
pub struct ExportArgs {
    /// `-i` and `--symfs`.
    #[command(flatten)]
    pub input: InputArgs<ExportWords>,
    /// The format to write.
    #[arg(long = "format", value_name = "FORMAT", value_enum)]
    pub format: ExportFormat,
    /// The file to write (atomically; `-` is stdout); default profile.pb.gz,
    /// profile.firefox.json or profile.speedscope.json.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Leave inlined functions out of the stacks (pprof keeps them in its locations'
    /// lines by default).
    #[arg(long = "no-inline")]
    pub no_inline: bool,
    /// Leave kernel frames out.
    #[arg(long = "no-kernel")]
    pub no_kernel: bool,
    /// Record: events, sampling, callchains, target, `--duration`, `--data-file`, the
    /// command.
    #[command(flatten)]
    pub record: RecordArgs<ExportWords>,
}

impl ExportArgs {
    /// Whether this records (a command, `-p` or `-a`) rather than reading a file.
    pub fn records(&self) -> bool {
        !self.record.command.is_empty() || self.record.pid.is_some() || self.record.all_cpus
    }

    /// Where the export goes.
    pub fn output(&self) -> PathBuf {
        self.output
            .clone()
            .unwrap_or_else(|| PathBuf::from(self.format.default_output()))
    }
}

/// How `hwprof export` words its [`InputArgs`] and [`RecordArgs`].
#[derive(Debug)]
pub enum ExportWords {}

impl InputWords for ExportWords {
    const INPUT: &'static str = "The perf.data file to export (ignored when a command is given)";
    const SYMFS: Option<&'static str> = Some(SYMFS_HELP);
}

impl RecordWords for ExportWords {
    const EVENTS: Option<&'static str> =
        Some("Record: events to sample, comma-separated (as `hwprof record -e`; repeatable)");
    const FREQ: Option<&'static str> = Some("Record: sampling frequency (default 999 Hz)");
    const COUNT: Option<&'static str> = Some("Record: sample every N events");
    const CALL_GRAPH: Option<&'static str> = Some(
        "Record: callchain mode, fp, lbr or dwarf[,SIZE] (default: fp, or dwarf for a command whose program was built without frame pointers)",
    );
    const PID: Option<&'static str> = Some("Record: attach to these PIDs");
    const ALL_CPUS: Option<&'static str> = Some("Record: system-wide");
    const DURATION: Option<&'static str> =
        Some("Record: stop after SECS seconds (fractions and units allowed: 2.5, 500ms, 10m)");
    const DATA_FILE: Option<&'static str> =
        Some("Record: keep the recording in this file (default: a temporary file, removed)");
    const EVENT_FILE: Option<&'static str> =
        Some("Record: Intel perfmon JSON file of named events for -e (repeatable)");
    const COMMAND: Option<&'static str> = Some("The command to record, after `--`");
}
