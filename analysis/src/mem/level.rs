//! `flamegraph --mem LEVEL`: the samples served from one level, and what makes a
//! sample a memory sample at all.

use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::record::{DataSrc, Record, Sample};
use hwprof_symbolize::{Options, Profile, ProfileBuilder, Weighed};
use serde::Serialize;

use crate::error::Result;

/// Where a sample was served, for `flamegraph --mem LEVEL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// L1 hit.
    L1,
    /// Line fill buffer (miss address buffer) hit.
    Lfb,
    /// L2 hit.
    L2,
    /// L3 (LLC) hit, HITM included.
    L3,
    /// DRAM, local or remote.
    Dram,
    /// Local DRAM.
    LocalDram,
    /// Remote DRAM.
    RemoteDram,
    /// A remote cache: another socket's (`mem_lvl`'s remote cache bits), or any cache
    /// `mem_remote` marks as another core's, node's, socket's or board's.
    RemoteCache,
    /// A load that found the line modified in another core's cache (snoop HITM), local
    /// or remote.
    Hitm,
}

impl Level {
    /// Whether data source `d` was served from this level (a hit there).
    pub fn matches(self, d: &DataSrc) -> bool {
        const HIT: u16 = 0x02;
        const L1: u16 = 0x08;
        const LFB: u16 = 0x10;
        const L2: u16 = 0x20;
        const L3: u16 = 0x40;
        const LOC_RAM: u16 = 0x80;
        const REM_RAM: u16 = 0x100 | 0x200;
        const REM_CCE: u16 = 0x400 | 0x800;
        let lvl = d.mem_lvl;
        let hit = lvl & HIT != 0;
        // Newer kernels may say the level only in mem_lvl_num (PERF_MEM_LVLNUM_*), and
        // with mem_remote that it is another core's, node's, socket's or board's (how
        // far in mem_hops): a remote L1, L2 or L3 is a remote cache, not this core's.
        let num = d.mem_lvl_num;
        let remote = d.mem_remote;
        let ram = num == 0x0d;
        // L1 to L4, L2 MHB, memory-side cache, any cache, LFB: not uncached, CXL, I/O,
        // RAM, PMEM or N/A.
        let cache = matches!(num, 0x01..=0x06 | 0x0b | 0x0c);
        let local = |n: u8| num == n && !remote;
        match self {
            Level::L1 => hit && (lvl & L1 != 0 || local(1)),
            Level::Lfb => hit && (lvl & LFB != 0 || local(0x0c)),
            Level::L2 => hit && (lvl & L2 != 0 || local(2)),
            Level::L3 => hit && (lvl & L3 != 0 || local(3)),
            Level::Dram => hit && (lvl & (LOC_RAM | REM_RAM) != 0 || ram),
            Level::LocalDram => hit && (lvl & LOC_RAM != 0 || local(0x0d)),
            Level::RemoteDram => hit && (lvl & REM_RAM != 0 || (ram && remote)),
            Level::RemoteCache => lvl & REM_CCE != 0 || (remote && cache),
            Level::Hitm => d.mem_snoop & 0x10 != 0,
        }
    }
}

/// Whether a data source says anything about where an access was served. The kernel
/// gives each sample of an event that does not sample memory (cpu-clock, or any event
/// whose attr merely asks for DATA_SRC, as `--call-graph dwarf` does) `PERF_MEM_NA`:
/// every field "not available" (`0x1e05080021` with the level number); 0 (no field set)
/// says nothing either. A memory sample (PEBS load latency or stores, IBS, SPE) sets at
/// least one field: an operation, a level, a snoop, TLB or lock result.
pub fn informative(data_src: u64) -> bool {
    let d = DataSrc::from_u64(data_src);
    let nothing = |v: u64, na: u64| v == 0 || v == na;
    !(nothing(d.mem_op.into(), 1)
        && nothing(d.mem_lvl.into(), 1)
        && nothing(d.mem_snoop.into(), 1)
        && nothing(d.mem_lock.into(), 1)
        && nothing(d.mem_dtlb.into(), 1)
        && nothing(d.mem_lvl_num.into(), 0x0f)
        && nothing(d.mem_blk.into(), 1)
        && !d.mem_remote
        && d.mem_snoopx == 0
        && d.mem_hops == 0)
}

/// The samples of a recording served from one level ([`profile_for_level`]), and how
/// many memory samples it has at all.
#[derive(Clone, Debug)]
pub struct LevelProfile {
    /// The samples served from the level.
    pub profile: Profile,
    /// Samples that carry a data source (DATA_SRC in their event's sample type).
    pub with_source: u64,
    /// Of them, memory samples: their data source says where they were served
    /// ([`informative`]). None: the recording has no memory samples.
    pub memory: u64,
}

/// The profile of `pd` with only the samples served from `level` (samples without a
/// data source are left out), each with its period and weight as recorded, and the
/// counts that tell whether the recording has memory samples at all. Samples are not
/// merged (a PEBS recording is small).
pub fn profile_for_level(pd: &PerfData, opts: &Options, level: Level) -> Result<LevelProfile> {
    let (mut with_source, mut memory) = (0u64, 0u64);
    let opts = Options {
        merge: false,
        ..opts.clone()
    };
    let mut weigh = |rec: &Record<'_>, s: &Sample<'_>, period| {
        let d = s.data_src?;
        with_source += 1;
        memory += u64::from(informative(d));
        if !level.matches(&DataSrc::from_u64(d)) {
            return None;
        }
        Some(Weighed {
            event: rec.attr.unwrap_or(0) as u32,
            period,
            // i21: the sample's weight accessor (i21-facts) replaces this fallback.
            weight: s.weight.or(s.weight_struct.map(|w| u64::from(w.var1_dw))),
        })
    };
    let profile = ProfileBuilder::new(pd, &opts)
        .weigh(&mut weigh)
        .build()?
        .profile;
    Ok(LevelProfile {
        profile,
        with_source,
        memory,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `PERF_MEM_NA` as perf 6.1's headers spell it, and with the level number "not
    /// available" that newer kernels add (what cpu-clock samples carry here).
    const MEM_NA: u64 = 0x01 | 0x01 << 5 | 0x01 << 19 | 0x01 << 24 | 0x01 << 26;
    const MEM_NA_LVLNUM: u64 = MEM_NA | 0x0f << 33;

    #[test]
    fn what_says_where_an_access_was_served() {
        assert_eq!(MEM_NA_LVLNUM, 0x1e_0508_0021);
        for v in [0, MEM_NA, MEM_NA_LVLNUM, 0x01 << 40] {
            assert!(!informative(v), "{v:#x}");
        }
        // Any one field set says something: a load, a store with no level, a level
        // number, a remote bit, hops, a snoop extension, a lock, a TLB result.
        for v in [
            MEM_NA_LVLNUM & !0x1f | 0x02,
            MEM_NA & !0x1f | 0x04,
            MEM_NA & !(0x0f << 33) | 0x0d << 33,
            MEM_NA | 1 << 37,
            MEM_NA | 2 << 43,
            MEM_NA | 1 << 38,
            MEM_NA & !(0x03 << 24) | 0x02 << 24,
            MEM_NA & !(0x7f << 26) | 0x0a << 26,
            0x02 | (0x08 | 0x02) << 5,
        ] {
            assert!(informative(v), "{v:#x}");
        }
    }
}
