//! perf.data header features (`HEADER_*` sections after the data, or `HEADER_FEATURE`
//! records in pipe mode): one typed [`Features`] that the reader fills and the writer
//! writes.

use hwprof_pmu::attr::Attr;
use serde::Serialize;

/// Feature ids (`enum perf_header_feature` / `HEADER_*` in perf's `header.h`).
pub mod id {
    #![allow(missing_docs)]
    pub const TRACING_DATA: u32 = 1;
    pub const BUILD_ID: u32 = 2;
    pub const HOSTNAME: u32 = 3;
    pub const OSRELEASE: u32 = 4;
    pub const VERSION: u32 = 5;
    pub const ARCH: u32 = 6;
    pub const NRCPUS: u32 = 7;
    pub const CPUDESC: u32 = 8;
    pub const CPUID: u32 = 9;
    pub const TOTAL_MEM: u32 = 10;
    pub const CMDLINE: u32 = 11;
    pub const EVENT_DESC: u32 = 12;
    pub const CPU_TOPOLOGY: u32 = 13;
    pub const NUMA_TOPOLOGY: u32 = 14;
    pub const BRANCH_STACK: u32 = 15;
    pub const PMU_MAPPINGS: u32 = 16;
    pub const GROUP_DESC: u32 = 17;
    pub const AUXTRACE: u32 = 18;
    pub const STAT: u32 = 19;
    pub const CACHE: u32 = 20;
    pub const SAMPLE_TIME: u32 = 21;
    pub const MEM_TOPOLOGY: u32 = 22;
    pub const CLOCKID: u32 = 23;
    pub const DIR_FORMAT: u32 = 24;
    pub const BPF_PROG_INFO: u32 = 25;
    pub const BPF_BTF: u32 = 26;
    pub const COMPRESSED: u32 = 27;
    pub const CPU_PMU_CAPS: u32 = 28;
    pub const CLOCK_DATA: u32 = 29;
    pub const HYBRID_TOPOLOGY: u32 = 30;
    pub const PMU_CAPS: u32 = 31;
    /// Bits in the header's feature bitmap (`HEADER_FEAT_BITS`).
    pub const BITS: u32 = 256;
}

/// One event as `HEADER_EVENT_DESC` describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EventDesc {
    /// The attr.
    pub attr: Attr,
    /// The event's name (`cycles`, `cpu-clock:u`, `sched:sched_switch`).
    pub name: String,
    /// The sample ids of this event.
    pub ids: Vec<u64>,
}

/// One `HEADER_BUILD_ID` entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BuildIdEntry {
    /// Process id (-1 for the kernel and shared objects perf attributes to no process).
    pub pid: i32,
    /// `misc` of the entry's header (`PERF_RECORD_MISC_KERNEL` / `_USER`, `BUILD_ID_SIZE`).
    pub misc: u16,
    /// The build id bytes (usually 20).
    pub build_id: Vec<u8>,
    /// The DSO path (`/usr/lib/x86_64-linux-gnu/libc.so.6`, `[kernel.kallsyms]`).
    pub filename: String,
}

/// One `HEADER_GROUP_DESC` entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupDesc {
    /// The group's name (`{cycles,instructions}`), may be empty.
    pub name: String,
    /// Index of the leader among the file's attrs.
    pub leader_idx: u32,
    /// Number of members, leader included.
    pub nr_members: u32,
}

/// The features of one perf.data file. `None` / empty means absent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Features {
    /// `HEADER_HOSTNAME`.
    pub hostname: Option<String>,
    /// `HEADER_OSRELEASE` (`uname -r`).
    pub osrelease: Option<String>,
    /// `HEADER_VERSION`: the perf (or hwprof) version that wrote the file.
    pub version: Option<String>,
    /// `HEADER_ARCH` (`uname -m`).
    pub arch: Option<String>,
    /// `HEADER_NRCPUS`: (available, online).
    pub nr_cpus: Option<(u32, u32)>,
    /// `HEADER_CPUDESC` (the model name of `/proc/cpuinfo`).
    pub cpudesc: Option<String>,
    /// `HEADER_CPUID` (`GenuineIntel,6,85,4`).
    pub cpuid: Option<String>,
    /// `HEADER_TOTAL_MEM` in kB.
    pub total_mem: Option<u64>,
    /// `HEADER_CMDLINE`: argv of the recording command.
    pub cmdline: Option<Vec<String>>,
    /// `HEADER_EVENT_DESC`.
    pub event_desc: Option<Vec<EventDesc>>,
    /// `HEADER_BUILD_ID`.
    pub build_ids: Vec<BuildIdEntry>,
    /// `HEADER_GROUP_DESC`.
    pub group_desc: Option<Vec<GroupDesc>>,
    /// Every other feature present, as (id, raw section bytes), kept so nothing is lost.
    #[serde(skip)]
    pub other: Vec<(u32, Vec<u8>)>,
}
