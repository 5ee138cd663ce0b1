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
        match self {
            Level::L1 => d.l1_hit(),
            Level::Lfb => d.lfb_hit(),
            Level::L2 => d.l2_hit(),
            Level::L3 => d.l3_hit(),
            Level::Dram => d.dram_hit(),
            Level::LocalDram => d.local_dram_hit(),
            Level::RemoteDram => d.remote_dram_hit(),
            Level::RemoteCache => d.remote_cache(),
            Level::Hitm => d.snoop_hitm(),
        }
    }
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
    /// ([`DataSrc::is_informative`]). None: the recording has no memory samples.
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
        memory += u64::from(DataSrc::from_u64(d).is_informative());
        if !level.matches(&DataSrc::from_u64(d)) {
            return None;
        }
        Some(Weighed {
            event: rec.attr.unwrap_or(0) as u32,
            period,
            weight: s.perf_weight(),
            count: 1,
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

    /// Each level asks its own question of the data source.
    #[test]
    fn each_level_its_own() {
        // mem_op LOAD, mem_lvl HIT | `lvl`, mem_snoop `snoop`.
        let ds = |lvl: u64, snoop: u64| DataSrc::from_u64(0x02 | (0x02 | lvl) << 5 | snoop << 19);
        let levels = [
            (Level::L1, ds(0x08, 0x02)),
            (Level::Lfb, ds(0x10, 0x02)),
            (Level::L2, ds(0x20, 0x02)),
            (Level::L3, ds(0x40, 0x02)),
            (Level::LocalDram, ds(0x80, 0x02)),
            (Level::RemoteDram, ds(0x100, 0x02)),
            (Level::RemoteCache, ds(0x400, 0x02)),
            (Level::Hitm, ds(0x1000, 0x10)),
        ];
        for (l, d) in levels {
            for (m, _) in levels {
                assert_eq!(m.matches(&d), m == l, "{m:?} of {l:?}'s {d:?}");
            }
            let dram = matches!(l, Level::LocalDram | Level::RemoteDram);
            assert_eq!(Level::Dram.matches(&d), dram, "{l:?}");
        }
    }
}
