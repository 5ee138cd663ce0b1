//! Command-line flags, with perf's names where perf has them: each command's flags, the
//! groups several commands flatten ([`InputArgs`], [`RecordArgs`]; `group`) over the one
//! definition of each shared flag (`flag`), the parsers of values that need checking
//! (`value`: durations, `--symfs`), and targets ([`target`], over the one target parser
//! of `hwprof_pmu::target`).

pub mod annotate;
mod choices;
pub mod export;
mod flag;
mod group;
pub mod io;
mod memory;
mod value;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use hwprof_analysis::fold::Weight;
use hwprof_pmu::target::{Flags, Rules, Target, TargetError};

pub use choices::Engine;
pub use group::{InputArgs, InputWords, RecordArgs, RecordWords, SHORT_SYMFS_HELP, SYMFS_HELP};
pub use memory::{MEMORY_OUT, MemoryArgs, MemoryWeight};
pub use value::{block_us, interval_ms, threshold_ns, timeout_ms};

/// `--colors`: one of inferno's palette names.
fn palette(s: &str) -> Result<inferno::flamegraph::color::Palette, String> {
    s.parse().map_err(|_| {
        "expected one of hot, mem, io, wakeup, java, js, perl, python, rust, red, green, blue, aqua, yellow, purple, orange".to_string()
    })
}

/// hwprof: Linux hardware performance counters, PMU sampling and flame graphs.
#[derive(Debug, Parser)]
#[command(name = "hwprof", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Count events while a command runs, or on running PIDs, threads, or CPUs (like `perf stat`).
    Stat(StatArgs),
    /// List the events this machine (or a --cpu model) supports.
    List(ListArgs),
    /// Print the perf_event_attr fields hwprof would pass for EVENTS, without opening anything.
    Encode(EncodeArgs),
    /// Sample a command, PIDs, threads or CPUs into a perf.data file (like `perf record`).
    Record(RecordCommandArgs),
    /// Print every record of a perf.data file, as text or JSON lines (like `perf script -D`).
    Script(ScriptArgs),
    /// The top table of a perf.data file: overhead per comm, module and symbol (like `perf report`).
    Report(ReportArgs),
    /// A function's samples by source line, with the addresses of each line (like `perf annotate --stdio`).
    Annotate(annotate::AnnotateArgs),
    /// Draw an interactive SVG flame graph from a perf.data file, or record a command and draw it.
    Flamegraph(FlamegraphArgs),
    /// Write a recording (or record a command) as a pprof, Firefox Profiler or speedscope profile.
    Export(export::ExportArgs),
    /// Where threads wait: off-CPU time by stack (sched_switch), as a flame graph or table.
    Offcpu(OffcpuArgs),
    /// Count and time calls of a function with uprobes: exact counts, latency histogram, slow-call stacks.
    Probe(ProbeArgs),
    /// Where threads wait on files and sockets: time inside I/O syscalls by stack and file, as a flame graph or table.
    Io(io::IoArgs),
    /// Who allocates memory, and what is still allocated (--leaks): bytes by allocating stack, from uprobes on the allocator.
    Memory(MemoryArgs),
    /// Run a command many times: robust statistics per counter, baselines, and regression verdicts.
    Bench(BenchArgs),
    /// TopDown (TMA) metrics from counts measured elsewhere (`perf stat -x,` or `hwprof stat -j` output).
    Metrics(MetricsArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) on stdout.
    Completions(CompletionsArgs),
    /// Write man pages (hwprof.1 and hwprof-SUBCOMMAND.1) into DIR, or hwprof.1 on stdout.
    Man(ManArgs),
    /// Memory-access profiles of PEBS load/store samples (like `perf mem report`).
    Mem(MemArgs),
    /// Cache-line contention: lines by HITM and stores, offsets, functions, threads (like `perf c2c report`).
    C2c(C2cArgs),
}

#[derive(Debug, Args)]
pub struct MetricsArgs {
    /// The CPU model the counts come from: skl, skx, icl, spr (or skylake, skylakex,
    /// icelake, sapphirerapids), or adl (alderlake: formulas from the installed perf's tables).
    #[arg(long = "cpu", value_name = "MODEL")]
    pub cpu: String,
    /// With --cpu adl: the core type the counts are from (default: both).
    #[arg(long = "core-type", value_name = "core|atom", value_parser = ["core", "atom"])]
    pub core_type: Option<String>,
    /// Whether SMT (hyper-threading) was on where the counts were taken.
    #[arg(long = "smt", value_name = "on|off", default_value = "on", value_parser = ["on", "off"])]
    pub smt: String,
    /// The counts: `perf stat -x,` or `hwprof stat -j` output (`-`: stdin).
    #[arg(long = "counts", value_name = "FILE")]
    pub counts: PathBuf,
    /// One JSON object per metric: name, level, value (null when not computed), unit, missing inputs.
    #[arg(long = "json")]
    pub json: bool,
    /// Show the TopDown tree down to this level (1-6).
    #[arg(long = "level", value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=6))]
    pub level: u32,
    /// Also the file's other metrics of these levels (Info_*, Bottleneck_*, ...), not only the TopDown tree.
    #[arg(long = "all")]
    pub all: bool,
    /// The Intel TMA metrics JSON to use (default: the model's file in --perfmon-dir).
    #[arg(long = "metrics-file", value_name = "FILE.json")]
    pub metrics_file: Option<PathBuf>,
    /// A checkout of https://github.com/intel/perfmon (default: $HWPROF_PERFMON_DIR).
    #[arg(long = "perfmon-dir", value_name = "DIR")]
    pub perfmon_dir: Option<PathBuf>,
    /// A constant some metrics need, e.g. SYSTEM_TSC_FREQ=2.1e9, SOCKET_COUNT=2,
    /// DURATIONTIMEINSECONDS=1.5 (repeatable).
    #[arg(long = "const", value_name = "NAME=VALUE")]
    pub consts: Vec<String>,
}

#[derive(Debug, Args)]
pub struct StatArgs {
    /// Events, target, `--duration`, `--event-file` and the command.
    #[command(flatten)]
    pub record: RecordArgs<StatWords>,
    /// With -a: print each CPU instead of the sum.
    #[arg(short = 'A', long = "no-aggr")]
    pub no_aggr: bool,
    /// Run the command N times and print mean and relative standard error.
    #[arg(short = 'r', long = "repeat", value_name = "N", default_value_t = 1)]
    pub repeat: u32,
    /// Print counts every MS milliseconds (at least 10).
    #[arg(short = 'I', long = "interval-print", value_name = "MS", value_parser = interval_ms)]
    pub interval: Option<u64>,
    /// perf's spelling of --duration, in milliseconds (at least 10).
    #[arg(long = "timeout", value_name = "MS", value_parser = timeout_ms, conflicts_with = "duration")]
    pub timeout: Option<Duration>,
    /// CSV output with this separator, perf's field order.
    #[arg(
        short = 'x',
        long = "field-separator",
        value_name = "SEP",
        conflicts_with = "json"
    )]
    pub sep: Option<String>,
    /// JSON lines output, one object per event.
    #[arg(short = 'j', long = "json")]
    pub json: bool,
    /// The keys of -j's objects: hwprof's (`value`, `unit` ns, `pct_running`...), or
    /// perf's (`counter-value`, `unit` msec, `event-runtime`, `pcnt-running`,
    /// `metric-value`, `metric-unit`, as `perf stat -j` prints them, for its scripts);
    /// `perf` implies -j.
    #[arg(long = "json-keys", value_name = "hwprof|perf", value_parser = ["hwprof", "perf"], conflicts_with = "sep")]
    pub json_keys: Option<String>,
    /// Write the counts to FILE (atomically) instead of stderr; `-` is stdout, and the
    /// command's own stdout then goes to stderr.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Do not count child processes and threads.
    #[arg(short = 'i', long = "no-inherit")]
    pub no_inherit: bool,
    /// TopDown (TMA): count the events of Intel's metric file for this CPU in groups
    /// that fit the counters and print the levels (needs a hardware PMU).
    #[arg(long = "topdown", conflicts_with_all = ["events", "interval", "repeat", "no_aggr", "sep", "pid", "tid", "all_cpus", "cpus"])]
    pub topdown: bool,
    /// With --topdown: the deepest level shown (1 or 2; default 1).
    #[arg(long = "level", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=2))]
    pub topdown_level: Option<u32>,
    /// With --topdown: the Intel TMA metrics JSON (default: the CPU's file in
    /// $HWPROF_PERFMON_DIR, a checkout of https://github.com/intel/perfmon).
    #[arg(long = "metrics-file", value_name = "FILE.json")]
    pub metrics_file: Option<PathBuf>,
}

/// What `hwprof stat` takes of [`RecordArgs`], in its words.
#[derive(Debug)]
pub enum StatWords {}

impl RecordWords for StatWords {
    const EVENTS: Option<&'static str> = Some(
        "Events to count, comma-separated, perf syntax (repeatable). Default: perf stat's set",
    );
    const PID: Option<&'static str> = Some(
        "Count on existing processes (comma-separated PIDs) until they exit, SIGINT or --duration; with a command after `--`, while it runs (`-p PID -- sleep 1`)",
    );
    const TID: Option<&'static str> = Some("Count on existing threads (comma-separated TIDs)");
    const ALL_CPUS: Option<&'static str> =
        Some("System-wide counting on all CPUs (needs root or CAP_PERFMON)");
    const CPUS: Option<&'static str> = Some("Only these CPUs (e.g. 0-3,8); implies system-wide");
    const DURATION: Option<&'static str> = Some(
        "Count at most SECS seconds (fractions and units allowed: 2.5, 500ms, 10m): then -p/-t/-a/-C counting ends, and a command is sent SIGTERM",
    );
    const EVENT_FILE: Option<&'static str> = Some(EVENT_FILE_HELP);
    const COMMAND: Option<&'static str> = Some("The command to run, after `--`");
}

/// `--event-file`'s help where it is said plainly.
const EVENT_FILE_HELP: &str = "Intel perfmon JSON file of named events (repeatable)";

#[derive(Debug, Args)]
pub struct ListArgs {
    /// List the named events of this CPU model instead of this machine's.
    #[arg(long = "cpu", value_name = "MODEL")]
    pub cpu: Option<String>,
    /// `--event-file`.
    #[command(flatten)]
    pub events: RecordArgs<ListWords>,
    /// JSON output.
    #[arg(long = "json")]
    pub json: bool,
    /// Only events whose name or kind contains PATTERN (case-insensitive; `*` globs).
    pub pattern: Option<String>,
}

#[derive(Debug, Args)]
pub struct EncodeArgs {
    /// Encode for this CPU model (skylake, skylakex, icelake, sapphirerapids, alderlake, zen2..zen5).
    #[arg(long = "cpu", value_name = "MODEL")]
    pub cpu: Option<String>,
    /// `--event-file` and `-e`.
    #[command(flatten)]
    pub events: RecordArgs<EncodeWords>,
    /// JSON output (an array of {name, pmu, leader, attr}).
    #[arg(long = "json")]
    pub json: bool,
}

/// What `hwprof list` takes of [`RecordArgs`]: `--event-file`.
#[derive(Debug)]
pub enum ListWords {}

impl RecordWords for ListWords {
    const EVENT_FILE: Option<&'static str> = Some(EVENT_FILE_HELP);
}

/// What `hwprof encode` takes of [`RecordArgs`]: `-e` (at least one) and `--event-file`.
#[derive(Debug)]
pub enum EncodeWords {}

impl RecordWords for EncodeWords {
    const EVENTS: Option<&'static str> = Some("Events, perf syntax (repeatable)");
    const EVENTS_REQUIRED: bool = true;
    const EVENT_FILE: Option<&'static str> = Some(EVENT_FILE_HELP);
}

#[derive(Debug, Args)]
pub struct RecordCommandArgs {
    /// Events, sampling, callchains, target, `--duration`, `--event-file`, the command.
    #[command(flatten)]
    pub record: RecordArgs<RecordCommandWords>,
    /// With --call-graph dwarf: write the raw user registers and stack copies, as perf
    /// does, instead of unwinding while recording (for tools that unwind themselves;
    /// hwprof report, script and flamegraph unwind them when they read the file).
    #[arg(long = "keep-raw-stacks")]
    pub keep_raw_stacks: bool,
    /// Sample any taken branch (LBR branch stack; like `-j any`).
    #[arg(short = 'b', long = "branch-any")]
    pub branch_any: bool,
    /// Branch stack with these filters (any, any_call, any_ret, ind_call, ind_jmp, call,
    /// cond, u, k, hv, in_tx, no_tx, abort_tx, save_type, stack, counter).
    #[arg(short = 'j', long = "branch-filter", value_name = "FILTERS")]
    pub branch_filter: Option<String>,
    /// Sample data addresses and data source (ADDR + DATA_SRC), like perf's -d.
    #[arg(short = 'd', long = "data")]
    pub data: bool,
    /// Sample the weight (WEIGHT_STRUCT: load latency and more where the kernel has it).
    #[arg(short = 'W', long = "weight")]
    pub weight: bool,
    /// Data pages per ring buffer (a power of two), or a size like 512K / 4M.
    #[arg(short = 'm', long = "mmap-pages", value_name = "N")]
    pub mmap_pages: Option<String>,
    /// Output file (written atomically). Default perf.data.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "perf.data"
    )]
    pub output: PathBuf,
    /// Do not follow child processes and threads.
    #[arg(short = 'i', long = "no-inherit")]
    pub no_inherit: bool,
    /// Print the perf_event_attrs as JSON (as `hwprof encode --json`) and exit.
    #[arg(long = "dry-run")]
    pub dry_run: bool,
    /// Record PERF_RECORD_SWITCH when the target's threads switch in and out (perf's
    /// --switch-events).
    #[arg(long = "switch-events")]
    pub switch_events: bool,
    /// Wall-clock recording: cpu-clock samples (on CPU) and every sched:sched_switch with
    /// callchains (off CPU), for `hwprof flamegraph --off-cpu -i FILE`.
    #[arg(long = "off-cpu")]
    pub off_cpu: bool,
    /// Do not print the summary line or notes (as perf record -q).
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Leave out only the summary line (`flamegraph` and `offcpu` record into a scratch
    /// file the user never named), keeping the notes (the cpu-clock fallback, say).
    #[arg(skip)]
    pub no_summary: bool,
}

/// What `hwprof record` takes of [`RecordArgs`] (all of it), in its words.
#[derive(Debug)]
pub enum RecordCommandWords {}

impl RecordWords for RecordCommandWords {
    const EVENTS: Option<&'static str> = Some(
        "Events to sample, comma-separated, perf syntax (repeatable). Default: cycles (cpu-clock where the machine has no hardware PMU)",
    );
    const FREQ: Option<&'static str> =
        Some("Sample at this average frequency (Hz); `max` = the kernel's limit");
    const COUNT: Option<&'static str> = Some("Sample every N events (a fixed period)");
    const FP: Option<&'static str> =
        Some("Record callchains (frame pointers, like `--call-graph fp`)");
    const CALL_GRAPH: Option<&'static str> = Some(
        "Record callchains: fp, lbr, or dwarf[,STACK_BYTES] (default 8192). With dwarf, the user stacks are unwound while recording (with the modules' unwind tables) and written as ordinary callchains: files stay small, and perf reads them too",
    );
    const PID: Option<&'static str> = Some(
        "Sample existing processes (comma-separated PIDs) until they exit, SIGINT or --duration",
    );
    const TID: Option<&'static str> = Some("Sample existing threads (comma-separated TIDs)");
    const ALL_CPUS: Option<&'static str> =
        Some("System-wide on all CPUs (needs root or CAP_PERFMON)");
    const CPUS: Option<&'static str> = Some("Only these CPUs (e.g. 0-3,8); implies system-wide");
    const DURATION: Option<&'static str> = Some(DURATION_HELP);
    const EVENT_FILE: Option<&'static str> = Some(EVENT_FILE_HELP);
    const COMMAND: Option<&'static str> = Some("The command to run, after `--`");
}

/// `--duration`'s help where it is said plainly.
const DURATION_HELP: &str =
    "Stop after SECS seconds (fractions and units allowed: 2.5, 500ms, 10m)";

/// Output formats of `hwprof script`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ScriptFormat {
    /// What `perf script` prints: one line per sample, then one per frame, symbolized
    /// (or the record dump with `-D`).
    Text,
    /// One JSON object per record.
    Jsonl,
}

#[derive(Debug, Args)]
pub struct ScriptArgs {
    /// `-i`.
    #[command(flatten)]
    pub input: InputArgs<ScriptWords>,
    /// Output format.
    #[arg(long = "format", value_enum, default_value_t = ScriptFormat::Text)]
    pub format: ScriptFormat,
    /// Print the file header, attrs and features before the records.
    #[arg(long = "header")]
    pub header: bool,
    /// The fields of each sample, as perf's `-F`: `comm,tid,pid,time,cpu,event,period,
    /// ip,sym,symoff,dso,addr,trace`, or `+field`/`-field` to add to or take from the
    /// default.
    #[arg(
        short = 'F',
        long = "fields",
        value_name = "FIELDS",
        allow_hyphen_values = true
    )]
    pub fields: Option<String>,
    /// The record dump instead (every record, addresses as recorded: perf's
    /// --dump-raw-trace, without its hex).
    #[arg(short = 'D', long = "dump-raw-trace")]
    pub dump: bool,
}

/// What `hwprof script` takes of [`InputArgs`].
#[derive(Debug)]
pub enum ScriptWords {}

impl InputWords for ScriptWords {
    const INPUT: &'static str = READ_HELP;
    const SYMFS: Option<&'static str> = Some(SHORT_SYMFS_HELP);
}

/// `-i`'s help where it is said plainly.
const READ_HELP: &str = "The perf.data file to read (`-` for a pipe-mode stream on stdin)";

/// Sort keys of `hwprof report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SortKey {
    /// The command name.
    Comm,
    /// Process id.
    Pid,
    /// Thread id.
    Tid,
    /// The module (shared object, `[kernel.kallsyms]`).
    Dso,
    /// The function.
    Sym,
    /// The source file and line of the sampled code (`file.c:12`, the innermost
    /// inlined line).
    Srcline,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// `-i`, `--symfs` and the filters `--pid`, `--tid`, `--comm`.
    #[command(flatten)]
    pub input: InputArgs<ReportWords>,
    /// Group rows by these keys, comma-separated.
    #[arg(
        short = 's',
        long = "sort",
        value_name = "KEYS",
        value_enum,
        value_delimiter = ',',
        default_value = "comm,dso,sym"
    )]
    pub sort: Vec<SortKey>,
    /// Overhead of each row's own samples only (perf's --no-children).
    #[arg(long = "no-children", conflicts_with = "children")]
    pub no_children: bool,
    /// Also show the overhead of each row's callees (perf's --children; the default with
    /// callchains, as in perf).
    #[arg(long = "children")]
    pub children: bool,
    /// Only this event (by name) of a multi-event file.
    #[arg(long = "event", value_name = "NAME")]
    pub event: Option<String>,
    /// Hide rows below this overhead in percent.
    #[arg(long = "percent-limit", value_name = "P", default_value_t = 0.0)]
    pub percent_limit: f64,
    /// Plain text table (the default).
    #[arg(long = "stdio", conflicts_with = "json")]
    pub stdio: bool,
    /// JSON output.
    #[arg(long = "json")]
    pub json: bool,
    /// Compare two files: overhead of each row in BASE and NEW and the change.
    #[arg(long = "diff", num_args = 2, value_names = ["BASE", "NEW"])]
    pub diff: Option<Vec<PathBuf>>,
    /// Do not expand inlined functions (rows are the functions that contain the ip).
    #[arg(long = "no-inline")]
    pub no_inline: bool,
    /// Branch view (perf's -b): rows by branch source and target from the samples'
    /// branch stacks (LBR), each entry counted once, with mispredict shares and cycles.
    #[arg(short = 'b', long = "branch-stack", conflicts_with_all = ["diff", "children"])]
    pub branch_stack: bool,
    /// The row keys of the branch view, comma-separated (perf's names; default perf's:
    /// comm,dso_from,symbol_from,symbol_to,cycles).
    #[arg(
        long = "branch-sort",
        value_name = "KEYS",
        value_parser = choices::branch_key(),
        value_delimiter = ','
    )]
    pub branch_sort: Option<Vec<hwprof_analysis::branch::Key>>,
    /// The call graph under each row (perf's -g): `caller` (root first, the default),
    /// `callee` (leaf first), a threshold in percent (default 0.5, else --percent-limit),
    /// perf's `graph,0.5,caller,function,percent` spelling.
    #[arg(
        short = 'g',
        long = "call-graph",
        value_name = "caller|callee|graph,0.5,caller",
        num_args = 0..=1,
        default_missing_value = "graph,caller",
        conflicts_with_all = ["diff", "branch_stack"]
    )]
    pub call_graph: Option<String>,
}

/// What `hwprof report` takes of [`InputArgs`] (all of it).
#[derive(Debug)]
pub enum ReportWords {}

impl InputWords for ReportWords {
    const INPUT: &'static str = READ_HELP;
    const SYMFS: Option<&'static str> = Some(SYMFS_HELP);
    const FILTERS: bool = true;
}

#[derive(Debug, Args)]
pub struct FlamegraphArgs {
    /// `-i` and `--symfs`.
    #[command(flatten)]
    pub input: InputArgs<FlamegraphWords>,
    /// The SVG to write (atomically); with --all or several events, EVENT is inserted
    /// before the extension. `-` is stdout (a recorded command's stdout then goes to
    /// stderr).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "flamegraph.svg"
    )]
    pub output: PathBuf,
    /// Write folded stacks (`a;b;c 42`) instead of an SVG (to stdout unless -o names a
    /// file; a recorded command's stdout then goes to stderr, so the stacks stay clean).
    #[arg(long = "folded")]
    pub folded: bool,
    /// What frame widths measure.
    #[arg(long = "weight", value_parser = choices::weight(), default_value = "period")]
    pub weight: Weight,
    /// Only the samples served from this level (PEBS loads/stores with a data source,
    /// `perf mem record`): l1, lfb, l2, l3, dram, local-dram, remote-dram, remote-cache,
    /// hitm.
    #[arg(long = "mem", value_name = "LEVEL", value_parser = choices::level(), conflicts_with_all = ["off_cpu", "diff"])]
    pub mem: Option<hwprof_analysis::mem::Level>,
    /// Draw only this event (by name) of a recording with several (`-e` records).
    #[arg(long = "draw-event", value_name = "NAME", conflicts_with = "all")]
    pub draw_event: Option<String>,
    /// One graph per event of the file.
    #[arg(long = "all")]
    pub all: bool,
    /// Show inlined functions as frames (the default).
    #[arg(long = "inline", overrides_with = "no_inline")]
    pub inline: bool,
    /// Do not show inlined functions.
    #[arg(long = "no-inline")]
    pub no_inline: bool,
    /// Show kernel frames (the default).
    #[arg(long = "kernel", overrides_with = "no_kernel")]
    pub kernel: bool,
    /// Hide kernel frames.
    #[arg(long = "no-kernel")]
    pub no_kernel: bool,
    /// Differential flame graph of NEW against BASE (red grew, blue shrank).
    #[arg(long = "diff", num_args = 2, value_names = ["BASE", "NEW"])]
    pub diff: Option<Vec<PathBuf>>,
    /// The graph's title (default: names the event, its unit and the total).
    #[arg(long = "title", value_name = "TEXT")]
    pub title: Option<String>,
    /// Draw each stack leaf first (inferno's --reverse): the callers of the hottest
    /// functions, merged at the leaves.
    #[arg(long = "reverse")]
    pub reverse: bool,
    /// An icicle graph: the root at the top, stacks growing down (inferno's --inverted).
    #[arg(long = "inverted")]
    pub inverted: bool,
    /// A flame chart: the x axis is time, the samples in the order of their times,
    /// neighbours with the same stack merged (inferno's --flamechart); with --folded, the
    /// lines in time order.
    #[arg(long = "flamechart", conflicts_with = "diff")]
    pub flamechart: bool,
    /// Leave out frames narrower than this percent of the graph (inferno's --minwidth;
    /// default 0.01).
    #[arg(long = "min-width", alias = "minwidth", value_name = "PERCENT")]
    pub min_width: Option<f64>,
    /// One of inferno's palettes (hot, mem, io, wakeup, java, js, perl, python, rust, red,
    /// green, blue, aqua, yellow, purple, orange) instead of hwprof's colours by kind of
    /// frame (kernel orange, inlined aqua, JIT green, code red).
    #[arg(long = "colors", alias = "colours", value_name = "PALETTE", value_parser = palette)]
    pub colors: Option<inferno::flamegraph::color::Palette>,
    /// Wall-clock view: on-CPU samples and off-CPU time in one graph, in µs, leaves tagged
    /// `[on]`/`[off]` (as `hwprof offcpu --wall`); the input needs cpu-clock and
    /// sched:sched_switch samples, as `hwprof record --off-cpu` records them.
    #[arg(long = "off-cpu", conflicts_with_all = ["diff", "all", "draw_event"])]
    pub off_cpu: bool,
    /// Record: events, sampling, callchains, target, `--duration`, `--event-file`, the
    /// command.
    #[command(flatten)]
    pub record: RecordArgs<FlamegraphWords>,
}

impl FlamegraphArgs {
    /// Whether this records (a command, `-p` or `-a`) rather than drawing a file.
    pub fn records(&self) -> bool {
        !self.record.command.is_empty() || self.record.pid.is_some() || self.record.all_cpus
    }
}

/// How `hwprof flamegraph` words its [`InputArgs`] and [`RecordArgs`].
#[derive(Debug)]
pub enum FlamegraphWords {}

impl InputWords for FlamegraphWords {
    const INPUT: &'static str = "The perf.data file to draw (ignored when a command is given)";
    const SYMFS: Option<&'static str> = Some(SYMFS_HELP);
}

impl RecordWords for FlamegraphWords {
    const EVENTS: Option<&'static str> = Some(
        "Record: events to sample, comma-separated (as `hwprof record -e`; repeatable). To draw one event of an existing recording, use --draw-event",
    );
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

/// Where `--save`/`--baseline` names live unless `--baseline-dir` says otherwise.
pub const DEFAULT_BASELINE_DIR: &str = ".hwprof/baselines";

/// Flags of `hwprof bench`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 no regression, 1 regression, 2 usage error (bad flag or event, missing or malformed baseline), 3 the benchmark could not be measured (the command failed or could not start)."
)]
pub struct BenchArgs {
    /// `-e`, `--event-file` and the command.
    #[command(flatten)]
    pub record: RecordArgs<BenchWords>,
    /// Measured runs (per command with --compare).
    #[arg(short = 'r', long = "runs", value_name = "N", default_value_t = 10)]
    pub runs: u32,
    /// Unmeasured runs first (per command), to warm caches.
    #[arg(long = "warmup", value_name = "N", default_value_t = 1)]
    pub warmup: u32,
    /// Save this run as baseline NAME (DIR/NAME.json; a NAME with '/' or ending in .json is a path).
    #[arg(long = "save", value_name = "NAME")]
    pub save: Option<String>,
    /// Compare with baseline NAME saved earlier; exit 1 on a regression.
    #[arg(long = "baseline", value_name = "NAME", conflicts_with = "compare")]
    pub baseline: Option<String>,
    /// Directory of named baselines.
    #[arg(long = "baseline-dir", value_name = "DIR", default_value = DEFAULT_BASELINE_DIR)]
    pub baseline_dir: PathBuf,
    /// Smallest change of a median, in percent, that counts as a regression or improvement.
    #[arg(long = "threshold", value_name = "PCT", default_value_t = 5.0)]
    pub threshold: f64,
    /// Confidence level of verdicts (Mann-Whitney U, Holm-corrected over the metrics).
    #[arg(long = "confidence", value_name = "LEVEL", default_value_t = 0.99)]
    pub confidence: f64,
    /// Metrics whose verdict decides the exit code, comma-separated, or `all`; the others
    /// are evidence. Default: task-clock,instructions,cycles (those counted here), and
    /// wall-time too with --compare.
    #[arg(long = "gate", value_name = "METRICS")]
    pub gate: Option<String>,
    /// A/B mode: run 'CMD_A' (one string, shell-like quoting, no shell syntax) and CMD
    /// interleaved (A B A B ...), and compare CMD against it.
    #[arg(long = "compare", value_name = "CMD_A", conflicts_with = "save")]
    pub compare: Option<String>,
    /// JSON output (schema hwprof-bench/1, see docs/bench.md).
    #[arg(long = "json", conflicts_with = "markdown")]
    pub json: bool,
    /// Markdown output, for a pull-request comment.
    #[arg(long = "markdown")]
    pub markdown: bool,
    /// Let the command's stdout and stderr through, both to stderr (default: discarded);
    /// stdout holds only the report (table, --json, --markdown).
    #[arg(long = "show-output")]
    pub show_output: bool,
    /// Measure runs even when the command exits non-zero.
    #[arg(short = 'i', long = "ignore-failure")]
    pub ignore_failure: bool,
}

/// What `hwprof bench` takes of [`RecordArgs`], in its words.
#[derive(Debug)]
pub enum BenchWords {}

impl RecordWords for BenchWords {
    const EVENTS: Option<&'static str> = Some(
        "Counters per run, comma-separated, perf syntax (repeatable). Default: task-clock, instructions, cycles, branch-misses, cache-misses, page-faults, context-switches (hardware ones only where a PMU exists). Wall, user and system time and peak RSS are always measured",
    );
    const EVENT_FILE: Option<&'static str> = Some(EVENT_FILE_HELP);
    const COMMAND: Option<&'static str> = Some("The command to benchmark, after `--`");
}

/// Where `hwprof offcpu` draws by default.
pub const OFFCPU_OUT: &str = "offcpu.svg";

/// Flags of `hwprof offcpu`.
#[derive(Debug, clap::Args)]
pub struct OffcpuArgs {
    /// `--call-graph`, the target, `--duration`, `--symfs` and the command.
    #[command(flatten)]
    pub record: RecordArgs<OffcpuWords>,
    /// Drop blocks shorter than this (µs; units allowed: 2ms).
    #[arg(long = "min-block", value_name = "USEC", default_value = "1", value_parser = block_us)]
    pub min_block: u64,
    /// The SVG to write (with --folded or --report: the file for them; default stdout,
    /// and then the command's own stdout goes to stderr so that the data stays clean).
    #[arg(short = 'o', long = "output", value_name = "FILE", default_value = OFFCPU_OUT)]
    pub output: PathBuf,
    /// Write folded stacks (`comm;main;f;g USEC`) instead of an SVG.
    #[arg(long = "folded")]
    pub folded: bool,
    /// Print a table of the functions and stacks that waited longest instead of an SVG;
    /// stacks are whole, leaf first: kernel frames (`_[k]`), `--`, then user frames.
    #[arg(long = "report", conflicts_with = "folded")]
    pub report: bool,
    /// Wall-clock view: also sample on-CPU time (cpu-clock, 4000 Hz) and draw both in one
    /// graph, each stack ending in an `[on]` or `[off]` frame: widths are on- plus
    /// off-CPU time (µs).
    #[arg(long = "wall")]
    pub wall: bool,
    /// Leave kernel frames out of the stacks.
    #[arg(long = "no-kernel")]
    pub no_kernel: bool,
    /// How to trace: `bpf` sums the blocked time per thread and stack in the kernel
    /// (frame-pointer stacks; root, or CAP_BPF and CAP_PERFMON); `perf` records every
    /// context switch with its stack through perf events and pairs them here (what
    /// --call-graph dwarf needs: each stack copy goes to user space); `auto`: bpf where
    /// it loads and the stacks are frame pointers, else perf, with a note.
    #[arg(
        long = "engine",
        value_name = "ENGINE",
        default_value = "auto",
        value_enum
    )]
    pub engine: Engine,
}

/// What `hwprof offcpu` takes of [`RecordArgs`], in its words.
#[derive(Debug)]
pub enum OffcpuWords {}

impl RecordWords for OffcpuWords {
    const CALL_GRAPH: Option<&'static str> = Some(
        "How to record user stacks: fp (frame pointers) or dwarf[,SIZE] (copy SIZE bytes of stack, default 8192, and unwind them with the modules' unwind tables: whole stacks through code built without frame pointers, such as libc). Default: fp, or dwarf for a command whose program was built without frame pointers",
    );
    const CALL_GRAPH_MODES: &'static str = "fp|dwarf[,SIZE]";
    const PID: Option<&'static str> = Some("Attach to these processes (all their threads)");
    const TID: Option<&'static str> = Some("Attach to these threads only");
    const ALL_CPUS: Option<&'static str> = Some("Every thread of the system");
    const DURATION: Option<&'static str> = Some(
        "Stop after this many seconds (the command, if any, is then ended; units allowed: 500ms, 10m)",
    );
    const DATA_FILE: Option<&'static str> =
        Some("Keep the recording in this perf.data (default: a temporary file, removed)");
    const SYMFS: Option<&'static str> = Some(SYMFS_HELP);
    const COMMAND: Option<&'static str> = Some("The command to run and trace");
}

/// Flags of `hwprof probe`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The result goes to stderr (as `hwprof stat` and `perf stat` print counts), so the command's own stdout stays apart: `hwprof probe ... --json -o calls.json -- ./app` writes clean JSON; with --json on stderr, notes are left out."
)]
pub struct ProbeArgs {
    /// Probes: `uprobe:/path/bin:func` (a `uretprobe:` on the same function is added for
    /// latency), or `uretprobe:/path/bin:func`; several may be given, or comma-separated.
    #[arg(value_name = "PROBE", required = true)]
    pub probes: Vec<String>,
    /// `-p`, `--duration`, `--call-graph`, `--symfs` and the command.
    #[command(flatten)]
    pub record: RecordArgs<ProbeWords>,
    /// Print a log2 latency histogram (as bcc's funclatency) with p50/p90/p99/max.
    #[arg(long = "hist")]
    pub hist: bool,
    /// Report the calls slower than this (e.g. 10ms, 500us, 2s, 1500ns; a bare number is
    /// milliseconds).
    #[arg(long = "threshold", value_name = "DURATION", value_parser = threshold_ns)]
    pub threshold: Option<u64>,
    /// With --threshold: print the call stack of each slow call.
    #[arg(long = "stacks")]
    pub stacks: bool,
    /// Print the result as JSON.
    #[arg(long = "json")]
    pub json: bool,
    /// Write the result to FILE (atomically) instead of stderr; `-` is stdout, and the
    /// command's own stdout then goes to stderr.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// How to measure: `bpf` counts, pairs and histograms the calls in the kernel, and
    /// only the slow calls (--threshold) cross to user space, their stacks by frame
    /// pointers (root, or CAP_BPF and CAP_PERFMON); `perf` samples every entry and
    /// return through perf events and pairs them here (what --call-graph dwarf needs:
    /// each stack copy goes to user space); `auto`: bpf where it loads, else perf, with
    /// a note.
    #[arg(
        long = "engine",
        value_name = "ENGINE",
        default_value = "auto",
        value_enum
    )]
    pub engine: Engine,
}

/// What `hwprof probe` takes of [`RecordArgs`], in its words.
#[derive(Debug)]
pub enum ProbeWords {}

impl RecordWords for ProbeWords {
    const CALL_GRAPH: Option<&'static str> = Some(
        "With --stacks: how to record them, fp (frame pointers, the default) or dwarf[,SIZE] (copy SIZE bytes of the user stack, default 8192, and unwind them with the modules' unwind tables: whole stacks through code without frame pointers)",
    );
    const CALL_GRAPH_MODES: &'static str = "fp|dwarf[,SIZE]";
    const PID: Option<&'static str> = Some(
        "Attach to running processes (comma-separated PIDs) until they exit, SIGINT or --duration",
    );
    const DURATION: Option<&'static str> = Some(DURATION_HELP);
    const SYMFS: Option<&'static str> = Some(SYMFS_HELP);
    const COMMAND: Option<&'static str> = Some("The command to run, after `--`");
    const COMMAND_LAST: bool = true;
}

/// Flags of `hwprof completions`.
#[derive(Debug, Args)]
#[command(
    after_help = "Install, e.g.: hwprof completions bash > ~/.local/share/bash-completion/completions/hwprof\n              hwprof completions zsh > ~/.zfunc/_hwprof\n              hwprof completions fish > ~/.config/fish/completions/hwprof.fish"
)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// Flags of `hwprof man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The directory to write the pages into (e.g. ~/.local/share/man/man1); without
    /// it, hwprof.1 goes to stdout.
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Flags of `hwprof mem`.
#[derive(Debug, Args)]
pub struct MemArgs {
    #[command(subcommand)]
    pub command: MemCommand,
}

/// Subcommands of `hwprof mem`.
#[derive(Debug, Subcommand)]
pub enum MemCommand {
    /// Loads and stores by where they were served, snoop, TLB, function and data symbol,
    /// with latency percentiles (like `perf mem report --stdio`).
    Report(MemReportArgs),
}

#[derive(Debug, Args)]
pub struct MemReportArgs {
    /// `-i` and `--symfs`.
    #[command(flatten)]
    pub input: InputArgs<MemWords>,
    /// The tables to print, comma-separated, in this order.
    #[arg(
        short = 's',
        long = "sort",
        value_name = "KEYS",
        value_parser = choices::mem_key(),
        value_delimiter = ',',
        default_value = "level,snoop,tlb,function,data"
    )]
    pub sort: Vec<hwprof_analysis::mem::Key>,
    /// Rows of each table at most (0: all).
    #[arg(long = "rows", value_name = "N", default_value_t = 20)]
    pub rows: usize,
    /// Print JSON: one object per event with its tables.
    #[arg(long = "json")]
    pub json: bool,
}

/// How `hwprof mem report` words its [`InputArgs`].
#[derive(Debug)]
pub enum MemWords {}

impl InputWords for MemWords {
    const INPUT: &'static str =
        "The perf.data file to read (a PEBS recording with data source: `perf mem record`)";
    const SYMFS: Option<&'static str> = Some(SHORT_SYMFS_HELP);
}

/// Flags of `hwprof c2c`.
#[derive(Debug, Args)]
pub struct C2cArgs {
    #[command(subcommand)]
    pub command: C2cCommand,
}

/// Subcommands of `hwprof c2c`.
#[derive(Debug, Subcommand)]
pub enum C2cCommand {
    /// Cache lines by HITM and store traffic, with their offsets, functions and threads.
    Report(C2cReportArgs),
}

#[derive(Debug, Args)]
pub struct C2cReportArgs {
    /// `-i` and `--symfs`.
    #[command(flatten)]
    pub input: InputArgs<C2cWords>,
    /// Lines to show at most (0: all).
    #[arg(long = "lines", value_name = "N", default_value_t = 10)]
    pub lines: usize,
    /// Show every shared line, also those with less than 0.1% of the HITMs (perf's
    /// --show-all).
    #[arg(long = "show-all")]
    pub show_all: bool,
    /// Print JSON: the totals and the lines with their offsets.
    #[arg(long = "json")]
    pub json: bool,
}

/// How `hwprof c2c report` words its [`InputArgs`].
#[derive(Debug)]
pub enum C2cWords {}

impl InputWords for C2cWords {
    const INPUT: &'static str =
        "The perf.data file to read (loads and stores with data addresses and sources)";
    const SYMFS: Option<&'static str> = Some(SHORT_SYMFS_HELP);
}

/// How a command words the target errors that are its own; the others (bad lists,
/// offline CPUs, missing processes) are worded by [`TargetError`] itself.
pub struct TargetWords {
    /// Two or more of -p, -t, -a/-C.
    pub several: &'static str,
    /// No target.
    pub missing: &'static str,
}

/// The target of a command, by the one parser ([`Target::parse`]): its errors are usage
/// errors (exit 2) worded by `words`, except a process that does not exist (exit 1).
pub fn target(flags: &Flags<'_>, rules: Rules, words: &TargetWords) -> anyhow::Result<Target> {
    Target::parse(flags, rules).map_err(|e| match e {
        TargetError::Several => crate::error::Usage(words.several.to_string()).into(),
        TargetError::Missing => crate::error::Usage(words.missing.to_string()).into(),
        TargetError::NoSuchProcess { .. } => crate::error::ExitWith(1, e.to_string()).into(),
        other => crate::error::Usage(other.to_string()).into(),
    })
}

#[cfg(test)]
mod tests;
