//! [`MemSample`]: one memory sample as [`crate::mem`] counts it and [`crate::c2c`]'s
//! counters read it. A leaf, so that both can name it without naming each other.

use serde::Serialize;

use hwprof_sampler::record::DataSrc;

/// One memory sample, decoded and named: what
/// [`MemProfile::add`](crate::mem::MemProfile::add) counts (samples are not kept).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemSample {
    /// Index in [`MemProfile::events`](crate::mem::MemProfile::events).
    pub event: u32,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// CPU, when sampled.
    pub cpu: Option<u32>,
    /// The instruction address.
    pub ip: u64,
    /// The data address (0 when not sampled).
    pub addr: u64,
    /// The raw `perf_mem_data_src`.
    pub data_src: u64,
    /// The load latency ([`hwprof_sampler::record::Sample::perf_weight`]: WEIGHT, or
    /// WEIGHT_STRUCT's `var1_dw`); 0 when none.
    pub weight: u64,
    /// The period.
    pub period: u64,
    /// The code location of the ip, in [`MemProfile::code`](crate::mem::MemProfile::code).
    pub code: u32,
    /// The data symbol of the address (`table`), when one covers it, in
    /// [`MemProfile::names`](crate::mem::MemProfile::names).
    pub data_symbol: Option<u32>,
    /// The module the data address is mapped from (file name), `[unknown]` when none,
    /// in [`MemProfile::names`](crate::mem::MemProfile::names).
    pub data_module: u32,
}

impl MemSample {
    /// The decoded data source.
    pub fn src(&self) -> DataSrc {
        DataSrc::from_u64(self.data_src)
    }

    /// What the sample costs in perf's `--mem-mode` shares: its weight, 1 when 0.
    pub fn cost(&self) -> u64 {
        self.weight.max(1)
    }
}
