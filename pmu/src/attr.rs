//! A safe, plain description of one `perf_event_attr`.
//!
//! [`Attr`] holds the fields hwprof sets; [`crate::sys`] turns it into the kernel struct.
//! It serializes to the JSON that `hwprof encode --json` prints, so what you see is
//! exactly what would be passed to `perf_event_open`.

use serde::Serialize;

/// `perf_event_attr.type` values (`enum perf_type_id`).
pub mod types {
    /// Generic hardware events (`cycles`, `instructions`...).
    pub const HARDWARE: u32 = 0;
    /// Software events (`task-clock`, `page-faults`...).
    pub const SOFTWARE: u32 = 1;
    /// Tracepoints; `config` is the tracepoint id.
    pub const TRACEPOINT: u32 = 2;
    /// Generic hardware cache events.
    pub const HW_CACHE: u32 = 3;
    /// Raw CPU events (`rNNNN`); also the type of the `cpu` PMU.
    pub const RAW: u32 = 4;
    /// Hardware breakpoints (`mem:ADDR`).
    pub const BREAKPOINT: u32 = 5;
}

/// `PERF_FORMAT_*` bits of `read_format`.
pub mod read_format {
    /// Adds `time_enabled`.
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    /// Adds `time_running`.
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    /// Adds the event id.
    pub const ID: u64 = 1 << 2;
    /// Reads the whole group in one `read`.
    pub const GROUP: u64 = 1 << 3;
    /// Adds the lost-sample count.
    pub const LOST: u64 = 1 << 4;
}

/// `HW_BREAKPOINT_*` access types for `bp_type`.
pub mod bp {
    /// Read access.
    pub const R: u32 = 1;
    /// Write access.
    pub const W: u32 = 2;
    /// Read or write access.
    pub const RW: u32 = 3;
    /// Instruction execution.
    pub const X: u32 = 4;
}

/// The fields of a `perf_event_attr` that hwprof programs.
///
/// For breakpoints `config1`/`config2` carry `bp_addr`/`bp_len`; for uprobes `config2` is
/// the `probe_offset` and `config1` is set at open time to point at `uprobe_path`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Attr {
    /// `type`: the PMU's type number.
    #[serde(rename = "type")]
    pub type_: u32,
    /// `config`.
    pub config: u64,
    /// `config1` (ldlat, offcore_rsp, frontend, bp_addr...).
    pub config1: u64,
    /// `config2` (bp_len, probe_offset...).
    pub config2: u64,
    /// `config3`.
    pub config3: u64,
    /// Sampling period, or frequency when `freq` is set; 0 for counting.
    pub sample_period: u64,
    /// `sample_period` is a frequency in Hz.
    pub freq: bool,
    /// `PERF_SAMPLE_*` bits.
    pub sample_type: u64,
    /// `PERF_FORMAT_*` bits.
    pub read_format: u64,
    /// Start disabled.
    pub disabled: bool,
    /// Children inherit the counter.
    pub inherit: bool,
    /// Always on the PMU.
    pub pinned: bool,
    /// Do not count user space.
    pub exclude_user: bool,
    /// Do not count the kernel.
    pub exclude_kernel: bool,
    /// Do not count the hypervisor.
    pub exclude_hv: bool,
    /// Do not count when idle.
    pub exclude_idle: bool,
    /// Do not count the host (guest only).
    pub exclude_host: bool,
    /// Do not count guests.
    pub exclude_guest: bool,
    /// Enable on the next `exec`.
    pub enable_on_exec: bool,
    /// Skid constraint: 0 arbitrary .. 3 zero skid (PEBS `:ppp`).
    pub precise_ip: u8,
    /// Breakpoint access type (`HW_BREAKPOINT_R/W/RW/X`), 0 otherwise.
    pub bp_type: u32,
    /// `PERF_SAMPLE_BRANCH_*` bits.
    pub branch_sample_type: u64,
    /// Path of the uprobe's binary; passed through `config1` (`uprobe_path`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uprobe_path: Option<String>,
}

impl Attr {
    /// A counting attr of `type_`/`config`, everything else zero.
    pub fn new(type_: u32, config: u64) -> Self {
        Attr {
            type_,
            config,
            ..Attr::default()
        }
    }

    /// Whether this attr excludes none of user, kernel, hypervisor.
    pub fn counts_all_levels(&self) -> bool {
        !self.exclude_user && !self.exclude_kernel && !self.exclude_hv
    }
}
