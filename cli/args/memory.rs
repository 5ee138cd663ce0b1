//! Flags of `hwprof memory`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::group::{RecordArgs, RecordWords, SYMFS_HELP};
use super::{Engine, threshold_ns};

/// Where `hwprof memory` writes without `-o`.
pub const MEMORY_OUT: &str = "memory.svg";

/// Flags of `hwprof memory`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  hwprof memory -- ./app                      bytes allocated, by allocating stack (memory.svg)\n  hwprof memory --leaks -- ./app              bytes still allocated when it exits\n  hwprof memory --leaks --min-age 5s -p PID --duration 30\n                                              blocks older than 5 s still allocated after 30 s\n  hwprof memory --report -- ./app             top stacks and functions as text\n  hwprof memory --allocator ./app:malloc=my_alloc,free=my_free -- ./app\n\nThe allocator is the one the program calls (libc's malloc, or a jemalloc/tcmalloc that replaces it); one under other names is given with --allocator. The target runs unchanged: no restart, no LD_PRELOAD."
)]
pub struct MemoryArgs {
    /// `-p`, `--duration`, `--call-graph`, `--data-file`, `--symfs` and the command.
    #[command(flatten)]
    pub record: RecordArgs<MemoryWords>,
    /// Bytes still allocated at the end (the program's exit, or the end of --duration
    /// when attached), by allocating stack, with their count and age (bcc memleak's
    /// view); without it: every byte allocated.
    #[arg(long = "leaks")]
    pub leaks: bool,
    /// With --leaks: only blocks at least this old at the end (e.g. 5s, 500ms; a bare
    /// number is milliseconds, as memleak's -o), so that a steady-state cache is not
    /// called a leak.
    #[arg(long = "min-age", value_name = "DURATION", value_parser = threshold_ns, requires = "leaks")]
    pub min_age: Option<u64>,
    /// What the widths measure: bytes, or allocations (count).
    #[arg(
        long = "weight",
        value_name = "bytes|count",
        default_value = "bytes",
        value_enum
    )]
    pub weight: MemoryWeight,
    /// The allocator to probe when it is not the one hwprof finds: BINARY (a path or a
    /// library name: glibc's function names in it), BINARY:ROLE=SYMBOL,... (e.g.
    /// ./app:malloc=my_alloc,free=my_free; ROLE is malloc, calloc, realloc, reallocarray,
    /// aligned_alloc, memalign, valloc, posix_memalign or free) or ROLE=SYMBOL,... in the
    /// program itself.
    #[arg(long = "allocator", value_name = "BINARY[:ROLE=SYMBOL,...]")]
    pub allocator: Option<String>,
    /// The SVG to write (with --folded or --report: the file for them; default stdout,
    /// and then the command's own stdout goes to stderr so that the data stays clean).
    #[arg(short = 'o', long = "output", value_name = "FILE", default_value = MEMORY_OUT)]
    pub output: PathBuf,
    /// Write folded stacks (`comm;main;f;g BYTES`) instead of an SVG.
    #[arg(long = "folded")]
    pub folded: bool,
    /// Print the top stacks and functions (bytes, allocations, and for --leaks the
    /// oldest block's age) instead of an SVG.
    #[arg(long = "report", conflicts_with = "folded")]
    pub report: bool,
    /// How to trace: `bpf` pairs the calls and keeps the live blocks in the kernel
    /// (frame-pointer stacks; root); `perf` samples every allocator call and return
    /// with its stack through perf events and pairs them here (what --call-graph dwarf
    /// needs); `auto`: bpf where it loads and the stacks are frame pointers, else perf,
    /// with a note.
    #[arg(
        long = "engine",
        value_name = "ENGINE",
        default_value = "auto",
        value_enum
    )]
    pub engine: Engine,
}

/// `hwprof memory --weight`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MemoryWeight {
    /// Bytes asked for.
    Bytes,
    /// Allocations (calls).
    Count,
}

/// What `hwprof memory` takes of [`RecordArgs`], in its words.
#[derive(Debug)]
pub enum MemoryWords {}

impl RecordWords for MemoryWords {
    const CALL_GRAPH: Option<&'static str> = Some(
        "How to record the allocating stacks: fp (frame pointers, the default) or dwarf[,SIZE] (copy SIZE bytes of the user stack at each call, default 8192, and unwind them with the modules' unwind tables: whole stacks through code without frame pointers; perf engine)",
    );
    const CALL_GRAPH_MODES: &'static str = "fp|dwarf[,SIZE]";
    const PID: Option<&'static str> = Some(
        "Attach to a running process (all its threads, and the children it forks) until it exits, SIGINT or --duration",
    );
    const DURATION: Option<&'static str> = Some(
        "Stop after this many seconds (units allowed: 500ms, 10m); with --leaks, what is still allocated then",
    );
    const DATA_FILE: Option<&'static str> = Some(
        "Keep the recording in this perf.data (its samples: the allocating stacks weighted by bytes, for `hwprof report` and `perf script`); default: a temporary file, removed",
    );
    const SYMFS: Option<&'static str> = Some(SYMFS_HELP);
    const COMMAND: Option<&'static str> = Some("The command to run and trace");
}
