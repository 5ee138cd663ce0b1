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
    /// Only on this PMU when scheduled.
    pub exclusive: bool,
    /// Emit `PERF_RECORD_MMAP` for executable mappings.
    pub mmap: bool,
    /// Emit `PERF_RECORD_COMM`.
    pub comm: bool,
    /// Per-task counts on exit (inherited counters).
    pub inherit_stat: bool,
    /// Emit `PERF_RECORD_FORK` / `PERF_RECORD_EXIT`.
    pub task: bool,
    /// `wakeup_events` counts bytes (`wakeup_watermark`) instead of events.
    pub watermark: bool,
    /// Emit mmap records for data (non-exec) mappings too.
    pub mmap_data: bool,
    /// Append `sample_id` fields to non-sample records.
    pub sample_id_all: bool,
    /// No kernel callchain.
    pub exclude_callchain_kernel: bool,
    /// No user callchain.
    pub exclude_callchain_user: bool,
    /// Emit `PERF_RECORD_MMAP2` (with inode or build id) instead of MMAP.
    pub mmap2: bool,
    /// Flag COMM records caused by exec.
    pub comm_exec: bool,
    /// Timestamps use `clockid`.
    pub use_clockid: bool,
    /// Emit `PERF_RECORD_SWITCH` records.
    pub context_switch: bool,
    /// Ring written backward (overwrite mode).
    pub write_backward: bool,
    /// Emit `PERF_RECORD_NAMESPACES`.
    pub namespaces: bool,
    /// Emit `PERF_RECORD_KSYMBOL`.
    pub ksymbol: bool,
    /// Emit `PERF_RECORD_BPF_EVENT`.
    pub bpf_event: bool,
    /// Generate AUX records.
    pub aux_output: bool,
    /// Emit `PERF_RECORD_CGROUP`.
    pub cgroup: bool,
    /// Emit `PERF_RECORD_TEXT_POKE`.
    pub text_poke: bool,
    /// MMAP2 records carry a build id instead of device/inode.
    pub build_id: bool,
    /// Inherit to threads only (with `inherit`).
    pub inherit_thread: bool,
    /// Remove the event on exec.
    pub remove_on_exec: bool,
    /// Send SIGTRAP on overflow.
    pub sigtrap: bool,
    /// `wakeup_events` (or `wakeup_watermark` in bytes when `watermark` is set).
    pub wakeup_events: u32,
    /// `PERF_REG_*` mask of user registers to sample.
    pub sample_regs_user: u64,
    /// Bytes of user stack to sample.
    pub sample_stack_user: u32,
    /// Clock for timestamps when `use_clockid` is set.
    pub clockid: i32,
    /// `PERF_REG_*` mask of interrupted registers to sample.
    pub sample_regs_intr: u64,
    /// AUX area wakeup watermark.
    pub aux_watermark: u32,
    /// Maximum callchain depth (0 = the kernel's default).
    pub sample_max_stack: u16,
    /// AUX sample size.
    pub aux_sample_size: u32,
    /// Data delivered with SIGTRAP.
    pub sig_data: u64,
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

/// `PERF_SAMPLE_*` bits of `sample_type`.
pub mod sample {
    #![allow(missing_docs)]
    pub const IP: u64 = 1 << 0;
    pub const TID: u64 = 1 << 1;
    pub const TIME: u64 = 1 << 2;
    pub const ADDR: u64 = 1 << 3;
    pub const READ: u64 = 1 << 4;
    pub const CALLCHAIN: u64 = 1 << 5;
    pub const ID: u64 = 1 << 6;
    pub const CPU: u64 = 1 << 7;
    pub const PERIOD: u64 = 1 << 8;
    pub const STREAM_ID: u64 = 1 << 9;
    pub const RAW: u64 = 1 << 10;
    pub const BRANCH_STACK: u64 = 1 << 11;
    pub const REGS_USER: u64 = 1 << 12;
    pub const STACK_USER: u64 = 1 << 13;
    pub const WEIGHT: u64 = 1 << 14;
    pub const DATA_SRC: u64 = 1 << 15;
    pub const IDENTIFIER: u64 = 1 << 16;
    pub const TRANSACTION: u64 = 1 << 17;
    pub const REGS_INTR: u64 = 1 << 18;
    pub const PHYS_ADDR: u64 = 1 << 19;
    pub const AUX: u64 = 1 << 20;
    pub const CGROUP: u64 = 1 << 21;
    pub const DATA_PAGE_SIZE: u64 = 1 << 22;
    pub const CODE_PAGE_SIZE: u64 = 1 << 23;
    pub const WEIGHT_STRUCT: u64 = 1 << 24;
}

/// `PERF_SAMPLE_BRANCH_*` bits of `branch_sample_type`.
pub mod branch {
    #![allow(missing_docs)]
    pub const USER: u64 = 1 << 0;
    pub const KERNEL: u64 = 1 << 1;
    pub const HV: u64 = 1 << 2;
    pub const ANY: u64 = 1 << 3;
    pub const ANY_CALL: u64 = 1 << 4;
    pub const ANY_RETURN: u64 = 1 << 5;
    pub const IND_CALL: u64 = 1 << 6;
    pub const ABORT_TX: u64 = 1 << 7;
    pub const IN_TX: u64 = 1 << 8;
    pub const NO_TX: u64 = 1 << 9;
    pub const COND: u64 = 1 << 10;
    pub const CALL_STACK: u64 = 1 << 11;
    pub const IND_JUMP: u64 = 1 << 12;
    pub const CALL: u64 = 1 << 13;
    pub const NO_FLAGS: u64 = 1 << 14;
    pub const NO_CYCLES: u64 = 1 << 15;
    pub const TYPE_SAVE: u64 = 1 << 16;
    pub const HW_INDEX: u64 = 1 << 17;
    pub const PRIV_SAVE: u64 = 1 << 18;
    pub const COUNTERS: u64 = 1 << 19;
}

/// Size of `perf_event_attr` as hwprof writes it (`PERF_ATTR_SIZE_VER8`, with `config3`).
pub const ATTR_SIZE: usize = 136;
/// The smallest `perf_event_attr` any perf wrote (`PERF_ATTR_SIZE_VER0`).
pub const ATTR_SIZE_VER0: usize = 64;

/// One flag of `perf_event_attr`: its bit, a getter and a setter.
type FlagBit = (u32, fn(&Attr) -> bool, fn(&mut Attr, bool));

/// The flag bits of `perf_event_attr` in kernel bit order (bit 15..16 is `precise_ip`).
const FLAG_BITS: [FlagBit; 36] = {
    macro_rules! f {
        ($bit:expr, $name:ident) => {
            (
                $bit,
                |a: &Attr| a.$name,
                |a: &mut Attr, v: bool| a.$name = v,
            )
        };
    }
    [
        f!(0, disabled),
        f!(1, inherit),
        f!(2, pinned),
        f!(3, exclusive),
        f!(4, exclude_user),
        f!(5, exclude_kernel),
        f!(6, exclude_hv),
        f!(7, exclude_idle),
        f!(8, mmap),
        f!(9, comm),
        f!(10, freq),
        f!(11, inherit_stat),
        f!(12, enable_on_exec),
        f!(13, task),
        f!(14, watermark),
        // 15-16: precise_ip
        f!(17, mmap_data),
        f!(18, sample_id_all),
        f!(19, exclude_host),
        f!(20, exclude_guest),
        f!(21, exclude_callchain_kernel),
        f!(22, exclude_callchain_user),
        f!(23, mmap2),
        f!(24, comm_exec),
        f!(25, use_clockid),
        f!(26, context_switch),
        f!(27, write_backward),
        f!(28, namespaces),
        f!(29, ksymbol),
        f!(30, bpf_event),
        f!(31, aux_output),
        f!(32, cgroup),
        f!(33, text_poke),
        f!(34, build_id),
        f!(35, inherit_thread),
        f!(36, remove_on_exec),
        f!(37, sigtrap),
    ]
};

/// Why a `perf_event_attr` could not be read from bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttrBytesError {
    /// Bytes available.
    pub len: usize,
    /// The size the attr claims (its `size` field), 0 when even that is missing.
    pub size: u32,
}

impl std::fmt::Display for AttrBytesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "perf_event_attr of size {} in {} bytes (need at least {ATTR_SIZE_VER0})",
            self.size, self.len
        )
    }
}

impl std::error::Error for AttrBytesError {}

impl Attr {
    /// The flags word (bits 0..63 after `read_format`).
    pub fn flags(&self) -> u64 {
        let mut w = 0u64;
        for (bit, get, _) in FLAG_BITS {
            w |= u64::from(get(self)) << bit;
        }
        w | (u64::from(self.precise_ip & 3) << 15)
    }

    /// Sets every flag from a flags word.
    pub fn set_flags(&mut self, w: u64) {
        for (bit, _, set) in FLAG_BITS {
            set(self, w >> bit & 1 == 1);
        }
        self.precise_ip = (w >> 15 & 3) as u8;
    }

    /// The attr as the kernel's little-endian `perf_event_attr` of [`ATTR_SIZE`] bytes,
    /// the layout perf.data stores. `config1` is written as is (a uprobe's path pointer
    /// means nothing in a file, so it is written as 0).
    pub fn to_bytes(&self) -> [u8; ATTR_SIZE] {
        let mut b = [0u8; ATTR_SIZE];
        let mut put = |off: usize, v: &[u8]| b[off..off + v.len()].copy_from_slice(v);
        put(0, &self.type_.to_le_bytes());
        put(4, &(ATTR_SIZE as u32).to_le_bytes());
        put(8, &self.config.to_le_bytes());
        put(16, &self.sample_period.to_le_bytes());
        put(24, &self.sample_type.to_le_bytes());
        put(32, &self.read_format.to_le_bytes());
        put(40, &self.flags().to_le_bytes());
        put(48, &self.wakeup_events.to_le_bytes());
        put(52, &self.bp_type.to_le_bytes());
        let c1 = if self.uprobe_path.is_some() {
            0
        } else {
            self.config1
        };
        put(56, &c1.to_le_bytes());
        put(64, &self.config2.to_le_bytes());
        put(72, &self.branch_sample_type.to_le_bytes());
        put(80, &self.sample_regs_user.to_le_bytes());
        put(88, &self.sample_stack_user.to_le_bytes());
        put(92, &self.clockid.to_le_bytes());
        put(96, &self.sample_regs_intr.to_le_bytes());
        put(104, &self.aux_watermark.to_le_bytes());
        put(108, &self.sample_max_stack.to_le_bytes());
        put(112, &self.aux_sample_size.to_le_bytes());
        put(120, &self.sig_data.to_le_bytes());
        put(128, &self.config3.to_le_bytes());
        b
    }

    /// Reads a little-endian `perf_event_attr` of any version (its `size` field says
    /// which: 64 bytes for perf 2.6.x up to 136 today). Fields the version lacks are 0;
    /// bytes past what hwprof knows are ignored. Returns the attr and its size.
    pub fn from_bytes(b: &[u8]) -> Result<(Attr, u32), AttrBytesError> {
        let size = match b.get(4..8) {
            Some(s) => u32::from_le_bytes([s[0], s[1], s[2], s[3]]),
            None => {
                return Err(AttrBytesError {
                    len: b.len(),
                    size: 0,
                });
            }
        };
        // Some perf versions wrote size 0 meaning VER0.
        let eff = if size == 0 {
            ATTR_SIZE_VER0
        } else {
            size as usize
        };
        if eff < ATTR_SIZE_VER0 || b.len() < eff {
            return Err(AttrBytesError { len: b.len(), size });
        }
        let mut full = [0u8; ATTR_SIZE];
        let n = eff.min(ATTR_SIZE);
        full[..n].copy_from_slice(&b[..n]);
        let u64_at = |o: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&full[o..o + 8]);
            u64::from_le_bytes(x)
        };
        let u32_at = |o: usize| {
            let mut x = [0u8; 4];
            x.copy_from_slice(&full[o..o + 4]);
            u32::from_le_bytes(x)
        };
        let mut a = Attr {
            type_: u32_at(0),
            config: u64_at(8),
            sample_period: u64_at(16),
            sample_type: u64_at(24),
            read_format: u64_at(32),
            wakeup_events: u32_at(48),
            bp_type: u32_at(52),
            config1: u64_at(56),
            config2: u64_at(64),
            branch_sample_type: u64_at(72),
            sample_regs_user: u64_at(80),
            sample_stack_user: u32_at(88),
            clockid: u32_at(92) as i32,
            sample_regs_intr: u64_at(96),
            aux_watermark: u32_at(104),
            sample_max_stack: (u32_at(108) & 0xffff) as u16,
            aux_sample_size: u32_at(112),
            sig_data: u64_at(120),
            config3: u64_at(128),
            ..Attr::default()
        };
        a.set_flags(u64_at(40));
        Ok((a, size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_every_flag() {
        let mut a = Attr::new(types::SOFTWARE, 0);
        a.sample_period = 999;
        a.sample_type = sample::IP | sample::TID | sample::CALLCHAIN;
        for w in [
            0u64,
            u64::MAX >> 26,
            1 << 37,
            0x5555_5555_5555 & ((1 << 38) - 1),
        ] {
            a.set_flags(w);
            let (b, size) = Attr::from_bytes(&a.to_bytes()).unwrap();
            assert_eq!(size as usize, ATTR_SIZE);
            assert_eq!(b, a);
            assert_eq!(b.flags(), w & ((1 << 38) - 1));
        }
    }

    #[test]
    fn old_sizes_read_with_zeroed_tail_and_short_input_errors() {
        let mut a = Attr::new(types::HARDWARE, 5);
        a.branch_sample_type = branch::ANY;
        a.config3 = 7;
        let mut b = a.to_bytes();
        b[4..8].copy_from_slice(&80u32.to_le_bytes());
        let (r, size) = Attr::from_bytes(&b[..80]).unwrap();
        assert_eq!(size, 80);
        assert_eq!(r.branch_sample_type, branch::ANY);
        assert_eq!(r.config3, 0);
        assert!(Attr::from_bytes(&b[..70]).is_err());
        assert!(Attr::from_bytes(&b[..3]).is_err());
    }
}
