//! [`Module`]: where an address lives (a mapped file, the kernel, anonymous memory of a
//! process...), and [`ModuleId`], its index in the module table. A leaf: the process
//! model, the unwinder and the symbolizer all name modules, and none of them needs the
//! others for it.

use crate::buildid::BuildId;

/// Where code lives.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Module {
    /// A mapped file; offsets are file offsets. `build_id` is what the recording says the
    /// file was (from `HEADER_BUILD_ID` or an MMAP2 build id), if it says.
    File {
        /// The path as mapped.
        path: String,
        /// The recorded build id.
        build_id: Option<BuildId>,
    },
    /// The kernel image; offsets are addresses.
    Kernel,
    /// A kernel module (`[ext4]` or its `.ko` path); offsets are addresses.
    KernelModule {
        /// The module's name as mapped.
        name: String,
    },
    /// Anonymous memory of a process (`//anon`, `/dev/zero`...): JIT code when
    /// `/tmp/perf-PID.map` describes it; offsets are addresses.
    Anon {
        /// The mapping's name.
        name: String,
        /// The process.
        pid: u32,
    },
    /// A mapping no file backs and nothing resolves (`[vdso]`, `[heap]`, `[stack]`);
    /// offsets are relative to the mapping's start.
    Other {
        /// The mapping's name.
        name: String,
    },
    /// A user address no mapping covers; offsets are addresses.
    Unmapped,
    /// Not code: the end of a stack that could not be unwound to its root (one frame,
    /// [`Frame::truncated`](crate::profile::Frame::truncated)).
    Truncated,
}

/// Index of a module in a [`Symbolizer`](crate::Symbolizer).
pub type ModuleId = u32;
