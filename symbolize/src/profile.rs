//! The symbolized profile: what reports and flame graphs are drawn from.
//!
//! Frames are interned ([`FrameId`] indexes [`Profile::frames`]), so a profile of
//! millions of samples with deep stacks stays small and folding compares integers.

use hwprof_pmu::attr::Attr;
use serde::Serialize;

/// Index of a frame in [`Profile::frames`].
pub type FrameId = u32;

/// Where a frame's code lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameKind {
    /// User-space code in a mapped file (or anonymous memory).
    User,
    /// The kernel or a kernel module.
    Kernel,
    /// JIT code described by `/tmp/perf-PID.map`.
    Jit,
}

/// One frame of a stack. Inlined functions are frames of their own, marked `inlined`,
/// placed before (leaf side of) the function they were inlined into.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Frame {
    /// The demangled function name; `None` when it could not be resolved.
    pub function: Option<String>,
    /// The module: a file path, `[kernel.kallsyms]`, a kernel module name, `[vdso]`,
    /// `[anon]`, or the perf map of a JIT; `None` when no mapping covers the address.
    pub module: Option<String>,
    /// The address relative to the module (file offset based, as `perf report` shows
    /// unresolved addresses: `libfoo.so+0x1234`).
    pub module_offset: u64,
    /// Source file, when DWARF says.
    pub file: Option<String>,
    /// Source line, when DWARF says.
    pub line: Option<u32>,
    /// An inlined function (its caller is the next frame of the stack).
    pub inlined: bool,
    /// Where the code lives.
    pub kind: FrameKind,
}

/// The name of the frame that ends a stack unwinding could not follow to its root.
pub const TRUNCATED: &str = "[truncated]";

impl Frame {
    /// The frame that ends a stack unwinding could not follow to its root.
    pub fn truncated() -> Frame {
        Frame::named(TRUNCATED)
    }

    /// A frame that is a name only, not code (`[truncated]`, off-CPU's `[off]`).
    pub fn named(name: &str) -> Frame {
        Frame {
            function: Some(name.to_string()),
            module: None,
            module_offset: 0,
            file: None,
            line: None,
            inlined: false,
            kind: FrameKind::User,
        }
    }

    /// The function name, or `[unknown]`.
    pub fn name(&self) -> &str {
        self.function.as_deref().unwrap_or("[unknown]")
    }

    /// The module's file name (no directory), or `[unknown]`.
    pub fn module_name(&self) -> &str {
        match &self.module {
            Some(m) => m.rsplit('/').next().unwrap_or(m),
            None => "[unknown]",
        }
    }
}

/// One event of the recording.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EventInfo {
    /// The event's name (`cpu-clock`, `cycles:ppp`, `sched:sched_switch`).
    pub name: String,
    /// Its attr as recorded.
    pub attr: Attr,
}

/// One sample, symbolized.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Sample {
    /// Index in [`Profile::events`].
    pub event: u32,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Index in [`Profile::comms`]: the thread's command name at the sample's time.
    pub comm: u32,
    /// Timestamp (ns), when sampled.
    pub time: Option<u64>,
    /// CPU, when sampled.
    pub cpu: Option<u32>,
    /// Events this sample stands for: the sampled PERIOD, else the attr's fixed period
    /// (as perf report counts), else 1.
    pub period: u64,
    /// The sampled weight ([`hwprof_sampler::record::Sample::perf_weight`]: WEIGHT, or
    /// WEIGHT_STRUCT's var1_dw: e.g. load latency);
    /// summed over the samples it stands for.
    pub weight: Option<u64>,
    /// Recorded samples this one stands for: 1, or more when [`Options::merge`] merged
    /// samples that differ only in time, CPU, period and weight (which are summed).
    pub count: u64,
    /// The stack, leaf first: the sampled ip then its callers, with inlined functions
    /// expanded (as [`Options`] asked).
    pub stack: Vec<FrameId>,
}

/// One entry of a sample's branch stack (LBR), both ends symbolized
/// ([`ProfileBuilder::branches`](crate::ProfileBuilder::branches)), with how many times it was recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Branch {
    /// Index in [`Profile::samples`] of the sample that recorded it.
    pub sample: u32,
    /// Where the branch was taken.
    pub from: BranchEnd,
    /// Where it went.
    pub to: BranchEnd,
    /// The `perf_branch_entry` flag word (mispred, predicted, in_tx, abort, cycles, type).
    pub flags: u64,
    /// How many recorded entries this one stands for: the same branch (addresses and
    /// flags) of one sample, or of samples that [`Options::merge`] merged.
    pub count: u64,
}

/// One end of a [`Branch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct BranchEnd {
    /// The recorded address.
    pub addr: u64,
    /// The function that holds it (the outermost frame, not an inlined one), or `None`
    /// when [`Options`] leaves out its kind (kernel or user).
    pub frame: Option<FrameId>,
}

/// What to put in the stacks, and where to find the files of a recording's modules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Expand inlined functions into frames of their own.
    pub inline: bool,
    /// Keep kernel frames.
    pub kernel: bool,
    /// Keep user frames.
    pub user: bool,
    /// Merge the samples of one event, process, thread, command name and stack into one
    /// (periods and weights summed, [`Sample::count`] the number merged, time and CPU
    /// dropped), so that the profile grows with the distinct stacks, not the recording:
    /// what a report or a flame graph needs. Off, every recorded sample is kept.
    pub merge: bool,
    /// `--symfs DIR`: look for the recorded files under this directory (perf's
    /// meaning; see [`crate::locate`]).
    pub symfs: Option<std::path::PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            inline: true,
            kernel: true,
            user: true,
            merge: false,
            symfs: None,
        }
    }
}

/// A symbolized recording.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Profile {
    /// The events, in the file's attr order.
    pub events: Vec<EventInfo>,
    /// Interned frames; [`Sample::stack`] holds indexes into it.
    pub frames: Vec<Frame>,
    /// Interned command names; [`Sample::comm`] indexes it.
    pub comms: Vec<String>,
    /// The samples, in file order.
    pub samples: Vec<Sample>,
    /// What was lost: the larger of the sums of `PERF_RECORD_LOST` (ring drops the
    /// kernel announced) and of `PERF_RECORD_LOST_SAMPLES` (which `perf record` 6.0+ and
    /// hwprof write at the end from each event's own count of its drops, announced or
    /// not; perf's "Total Lost Samples"). Not their sum: a drop is in both.
    pub lost: u64,
    /// Recorded samples whose user stack was unwound here from its registers and stack
    /// copy (DWARF unwinding: `--call-graph dwarf` recorded with raw stacks).
    pub unwound: u64,
    /// Of the recorded samples, those whose stack could not be followed to its root:
    /// their stack ends in a `[truncated]` frame.
    pub truncated: u64,
    /// What finding the recording's files did that a user should know (debuginfod
    /// downloads, servers that could not be reached): one line each, for the binary to
    /// print once ([`crate::Locator::notices`]).
    #[serde(skip)]
    pub notices: Vec<String>,
    /// The modules built without frame pointers that cut the recording's
    /// frame-pointer stacks short ([`crate::unwind::fp`]), if any did.
    #[serde(skip)]
    pub cut_stacks: Option<crate::unwind::fp::CutStacks>,
}

impl Profile {
    /// The frame of an id.
    pub fn frame(&self, id: FrameId) -> &Frame {
        &self.frames[id as usize]
    }

    /// The command name of a sample.
    pub fn comm(&self, s: &Sample) -> &str {
        self.comms
            .get(s.comm as usize)
            .map_or("[unknown]", String::as_str)
    }
}
