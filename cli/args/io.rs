//! Flags of `hwprof io`.

use std::path::PathBuf;

use super::{Engine, RecordArgs, RecordWords, SYMFS_HELP, threshold_ns};

/// Where `hwprof io` draws by default.
pub const IO_OUT: &str = "io.svg";

/// Flags of `hwprof io`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Each stack ends in the syscall (`[read]`) and the file it worked on (its path, `pipe:[INODE]` or `socket:[INODE]`, as /proc/PID/fd names them): widths are time inside the calls (µs)."
)]
pub struct IoArgs {
    /// `--call-graph`, `-p`, `--duration`, `--data-file`, `--symfs` and the command.
    #[command(flatten)]
    pub record: RecordArgs<IoWords>,
    /// The SVG to write (with --folded or --report: the file for them; default stdout,
    /// and then the command's own stdout goes to stderr so that the data stays clean).
    #[arg(short = 'o', long = "output", value_name = "FILE", default_value = IO_OUT)]
    pub output: PathBuf,
    /// Write folded stacks (`comm;main;f;read;[read];/path USEC`) instead of an SVG.
    #[arg(long = "folded")]
    pub folded: bool,
    /// Print tables instead of an SVG: per file or socket and per syscall, calls, bytes,
    /// total time and p50/p99/max latency; then the stacks that waited longest (and with
    /// --threshold each slow call).
    #[arg(long = "report", conflicts_with = "folded")]
    pub report: bool,
    /// Keep only the calls slower than this, each with its stack (e.g. 10ms, 500us, 2s;
    /// a bare number is milliseconds).
    #[arg(long = "threshold", value_name = "DURATION", value_parser = threshold_ns)]
    pub threshold: Option<u64>,
    /// How to trace: `bpf` pairs and sums the calls per stack and file in the kernel
    /// (frame-pointer stacks; root, or CAP_BPF and CAP_PERFMON); `perf` records every
    /// syscall entry and exit (raw_syscalls) with its stack through perf events and pairs
    /// them here (what --call-graph dwarf needs); `auto`: bpf where it loads and the
    /// stacks are frame pointers, else perf, with a note.
    #[arg(
        long = "engine",
        value_name = "ENGINE",
        default_value = "auto",
        value_enum
    )]
    pub engine: Engine,
}

/// What `hwprof io` takes of [`RecordArgs`], in its words.
#[derive(Debug)]
pub enum IoWords {}

impl RecordWords for IoWords {
    const CALL_GRAPH: Option<&'static str> = Some(
        "How to record user stacks: fp (frame pointers, the default) or dwarf[,SIZE] (copy SIZE bytes of stack, default 8192, and unwind them with the modules' unwind tables; the perf engine)",
    );
    const CALL_GRAPH_MODES: &'static str = "fp|dwarf[,SIZE]";
    const PID: Option<&'static str> = Some("Attach to these processes (all their threads)");
    const ALL_CPUS: Option<&'static str> = Some("Every process of the system");
    const DURATION: Option<&'static str> = Some(
        "Stop after this many seconds (the command, if any, is then ended; units allowed: 500ms, 10m)",
    );
    const DATA_FILE: Option<&'static str> =
        Some("Keep the recording in this perf.data (default: a temporary file, removed)");
    const SYMFS: Option<&'static str> = Some(SYMFS_HELP);
    const COMMAND: Option<&'static str> = Some("The command to run and trace");
}
