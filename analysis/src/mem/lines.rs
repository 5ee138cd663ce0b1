//! The counters of cache-line contention: perf's `struct c2c_stats` ([`Stats`]), which
//! [`crate::mem::MemProfile::add`] keeps over all samples, per 64-byte line
//! ([`LineAcc`]) and per (offset, instruction) of a line ([`AccessAcc`]) as samples are
//! read, and [`crate::c2c`] ranks. The counting follows perf 6.1's `c2c_decode_stats`
//! (tools/perf/util/mem-events.c). Here, below both, so that `mem` counts for `c2c`
//! without importing it.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::Serialize;

use hwprof_sampler::record::MemLvl;

use super::sample::MemSample;

/// The counters of perf's `struct c2c_stats`, plus the latency sums of its cycles
/// columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Samples.
    pub records: u64,
    /// Locked accesses.
    pub locks: u64,
    /// Loads.
    pub loads: u64,
    /// Loads without a data address.
    pub ld_noaddr: u64,
    /// Uncached loads.
    pub ld_uncache: u64,
    /// I/O loads.
    pub ld_io: u64,
    /// Fill buffer hits.
    pub ld_fbhit: u64,
    /// L1 hits.
    pub ld_l1hit: u64,
    /// L2 hits.
    pub ld_l2hit: u64,
    /// L3 hits that were not HITM.
    pub ld_llchit: u64,
    /// Loads that hit a modified line in another core of this socket.
    pub lcl_hitm: u64,
    /// Loads that hit a modified line in another socket's cache.
    pub rmt_hitm: u64,
    /// `lcl_hitm + rmt_hitm`.
    pub tot_hitm: u64,
    /// Loads served by a remote cache (not modified).
    pub rmt_hit: u64,
    /// Loads served by a peer cache of this node (snoop extension PEER, Arm SPE).
    pub lcl_peer: u64,
    /// Loads served by a remote peer cache (counted in `rmt_hit` too).
    pub rmt_peer: u64,
    /// Loads from local DRAM.
    pub lcl_dram: u64,
    /// Loads from remote DRAM.
    pub rmt_dram: u64,
    /// DRAM loads of a line in shared state.
    pub ld_shared: u64,
    /// DRAM loads of a line in exclusive state.
    pub ld_excl: u64,
    /// Loads that missed (`LVL_MISS`).
    pub ld_miss: u64,
    /// Stores.
    pub stores: u64,
    /// Stores without a data address.
    pub st_noaddr: u64,
    /// Uncached stores.
    pub st_uncache: u64,
    /// Stores that hit L1.
    pub st_l1hit: u64,
    /// Stores that missed L1.
    pub st_l1miss: u64,
    /// Stores with no level.
    pub st_na: u64,
    /// Samples whose data source could not be parsed (neither load nor store).
    pub noparse: u64,
    /// Sum of the weights of the remote HITM loads.
    pub rmt_hitm_cycles: u64,
    /// Sum of the weights of the local HITM loads.
    pub lcl_hitm_cycles: u64,
    /// Loads (not HITM, not from a peer cache) counted in `load_cycles`.
    pub other_loads: u64,
    /// Sum of the weights of the other loads.
    pub load_cycles: u64,
}

impl Stats {
    /// Counts one sample as perf's `c2c_decode_stats` does (from `mem_lvl`, not the
    /// level number).
    pub fn add(&mut self, s: &MemSample) {
        use MemLvl::*;
        let d = s.src();
        let mrem = d.remote_unnamed();
        self.records += 1;
        if d.is_locked() {
            self.locks += 1;
        }
        let (lcl0, rmt0) = (self.lcl_hitm, self.rmt_hitm);
        let peer0 = self.lcl_peer + self.rmt_peer;
        let peer = d.snoop_peer();
        if d.is_load() {
            self.loads += 1;
            if s.addr == 0 {
                self.ld_noaddr += 1;
                return;
            }
            if d.lvl(Hit) {
                if d.lvl(Uncached) {
                    self.ld_uncache += 1;
                }
                if d.lvl(Io) {
                    self.ld_io += 1;
                }
                if d.lvl(Lfb) {
                    self.ld_fbhit += 1;
                }
                if d.lvl(L1) {
                    self.ld_l1hit += 1;
                }
                if d.lvl(L2) {
                    self.ld_l2hit += 1;
                    if peer {
                        self.lcl_peer += 1;
                    }
                }
                if d.lvl(L3) {
                    if d.snoop_hitm() {
                        self.lcl_hitm += 1;
                        self.tot_hitm += 1;
                    } else {
                        self.ld_llchit += 1;
                    }
                    if peer {
                        self.lcl_peer += 1;
                    }
                }
                if d.lvl(LocalRam) {
                    self.lcl_dram += 1;
                    self.dram_state(d.snoop_hit());
                }
                if d.lvl(RemoteRam) || mrem {
                    self.rmt_dram += 1;
                    self.dram_state(d.snoop_hit());
                }
            }
            if d.lvl(RemoteCache) || mrem {
                if d.snoop_hit() {
                    self.rmt_hit += 1;
                } else if d.snoop_hitm() {
                    self.rmt_hitm += 1;
                    self.tot_hitm += 1;
                } else if peer {
                    self.rmt_hit += 1;
                    self.rmt_peer += 1;
                }
            }
            if d.lvl(Miss) {
                self.ld_miss += 1;
            }
            // perf's compute_stats: the sample's weight goes to one cycles column (peer
            // loads to their own, which perf shows only with `--display peer`).
            if self.rmt_hitm > rmt0 {
                self.rmt_hitm_cycles += s.weight;
            } else if self.lcl_hitm > lcl0 {
                self.lcl_hitm_cycles += s.weight;
            } else if self.lcl_peer + self.rmt_peer == peer0 {
                self.other_loads += 1;
                self.load_cycles += s.weight;
            }
        } else if d.is_store() {
            self.stores += 1;
            if s.addr == 0 {
                self.st_noaddr += 1;
                return;
            }
            if d.lvl(Hit) {
                if d.lvl(Uncached) {
                    self.st_uncache += 1;
                }
                if d.lvl(L1) {
                    self.st_l1hit += 1;
                }
            }
            if d.lvl(Miss) && d.lvl(L1) {
                self.st_l1miss += 1;
            }
            if d.lvl(Na) {
                self.st_na += 1;
            }
        } else {
            self.noparse += 1;
        }
    }

    /// A DRAM load of a line that another cache holds (snoop HIT: shared) or not.
    fn dram_state(&mut self, snoop_hit: bool) {
        if snoop_hit {
            self.ld_shared += 1;
        } else {
            self.ld_excl += 1;
        }
    }

    /// Adds another's counters.
    pub fn merge(&mut self, o: &Stats) {
        macro_rules! sum {
            ($($f:ident),*) => { $(self.$f += o.$f;)* };
        }
        sum!(
            records,
            locks,
            loads,
            ld_noaddr,
            ld_uncache,
            ld_io,
            ld_fbhit,
            ld_l1hit,
            ld_l2hit,
            ld_llchit,
            lcl_hitm,
            rmt_hitm,
            tot_hitm,
            rmt_hit,
            lcl_peer,
            rmt_peer,
            lcl_dram,
            rmt_dram,
            ld_shared,
            ld_excl,
            ld_miss,
            stores,
            st_noaddr,
            st_uncache,
            st_l1hit,
            st_l1miss,
            st_na,
            noparse,
            rmt_hitm_cycles,
            lcl_hitm_cycles,
            other_loads,
            load_cycles
        );
    }

    /// Whether perf counts the line as shared (`resort_shared_cl_cb`): HITM loads, or
    /// loads a peer cache served.
    pub fn shared(&self) -> bool {
        self.tot_hitm > 0 || self.lcl_peer + self.rmt_peer > 0
    }

    /// Whether perf shows an offset of a line in its Pareto (`valid_hitm_or_store`):
    /// HITM loads or stores.
    pub fn hitm_or_store(&self) -> bool {
        self.tot_hitm > 0 || self.stores > 0
    }

    /// Mean cycles of the remote HITM loads, local HITM loads and other loads (perf's
    /// `cycles` columns; 0 when none).
    pub fn cycles(&self) -> Cycles {
        let mean = |s: u64, n: u64| if n == 0 { 0.0 } else { s as f64 / n as f64 };
        Cycles {
            remote_hitm: mean(self.rmt_hitm_cycles, self.rmt_hitm),
            local_hitm: mean(self.lcl_hitm_cycles, self.lcl_hitm),
            other_loads: mean(self.load_cycles, self.other_loads),
        }
    }
}

/// Mean load latencies in cycles ([`Stats::cycles`]): perf c2c's `cycles` columns.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cycles {
    /// Of the remote HITM loads (`rmt hitm`).
    pub remote_hitm: f64,
    /// Of the local HITM loads (`lcl hitm`).
    pub local_hitm: f64,
    /// Of the other loads (`load`).
    pub other_loads: f64,
}

/// One (offset, instruction) of a cache line while counting.
#[derive(Clone, Debug, Default)]
pub struct AccessAcc {
    /// Counters.
    pub stats: Stats,
    /// (pid, tid) of the threads.
    pub threads: HashSet<(u32, u32)>,
    /// CPUs.
    pub cpus: HashSet<u32>,
    /// The code location of its first sample, in
    /// [`MemProfile::code`](crate::mem::MemProfile::code).
    pub code: u32,
}

/// One cache line while counting.
#[derive(Clone, Debug, Default)]
pub struct LineAcc {
    /// Counters.
    pub stats: Stats,
    /// The data symbol of its first sample with one, in
    /// [`MemProfile::names`](crate::mem::MemProfile::names).
    pub data_symbol: Option<u32>,
    /// By (offset, ip).
    pub accesses: HashMap<(u64, u64), AccessAcc>,
}
