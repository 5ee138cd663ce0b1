//! Cache-line contention (`hwprof c2c report`, in the spirit of `perf c2c report`): the
//! load and store samples of a PEBS recording ([`MemProfile`]) grouped by 64-byte cache
//! line, the lines with the most HITM loads (a load that found the line modified in
//! another core's cache: local when that core shares the L3, remote across sockets) and
//! stores ranked first, and within each line the offsets, instructions, functions and
//! threads that touch it, so that false sharing (threads writing different offsets of
//! one line) is visible.
//!
//! The counting follows perf 6.1's `c2c_decode_stats` (tools/perf/util/mem-events.c):
//! each sample's data source adds to one or more of [`Stats`]' counters ([`Stats::add`],
//! in `mem/lines.rs`: [`MemProfile`] counts them as it reads the samples), and a line is
//! "shared" when it has HITM loads or loads from a peer cache (perf 6.1's `HAS_HITMS ||
//! HAS_PEER`). Lines are shown, as perf does by default,
//! when they hold at least 0.1% of the shared lines' HITM loads, and sorted by HITM.

use serde::Serialize;

use crate::mem::MemProfile;
pub use crate::mem::{Cycles, Stats};

/// perf's `DISPLAY_LINE_LIMIT`: a line is shown when it holds this share of the HITMs.
pub const DISPLAY_LINE_LIMIT: f64 = 0.001;

/// One (offset, instruction) of a line: perf's Pareto rows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Access {
    /// Offset of the data address in the line.
    pub offset: u64,
    /// The instruction address.
    pub ip: u64,
    /// Its function.
    pub function: String,
    /// Its module.
    pub module: String,
    /// The counters of these samples.
    pub stats: Stats,
    /// (pid, tid) of the threads, sorted.
    pub threads: Vec<(u32, u32)>,
    /// Distinct CPUs.
    pub cpus: u64,
}

/// One cache line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Line {
    /// The line's address (64-byte aligned).
    pub address: u64,
    /// The data symbol of its first sampled address, when known (`shared`).
    pub data_symbol: Option<String>,
    /// The counters of all its samples.
    pub stats: Stats,
    /// Its offsets and instructions with HITMs or stores (perf's Pareto rows), by
    /// offset, then by HITM, then by stores.
    pub accesses: Vec<Access>,
    /// (pid, tid) of the threads touching it, sorted.
    pub threads: Vec<(u32, u32)>,
}

/// The contention analysis of one recording.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Report {
    /// Counters over all samples (perf's "Trace Event Information").
    pub total: Stats,
    /// Counters over the shared lines (perf's "Global Shared Cache Line Event").
    pub shared: Stats,
    /// Shared lines (HITM or peer loads).
    pub shared_lines: u64,
    /// The shared lines shown (at least [`DISPLAY_LINE_LIMIT`] of the HITMs), by HITM
    /// then stores, most first.
    pub lines: Vec<Line>,
}

/// Groups the samples of `p` by cache line (all events together, as perf c2c does),
/// from the lines [`MemProfile`] counted. `all`: show every shared line (perf's
/// `--show-all`).
pub fn analyze(p: &MemProfile, all: bool) -> Report {
    let mut shared = Stats::default();
    let mut shared_lines = 0;
    let mut out: Vec<Line> = Vec::new();
    for (&address, l) in &p.lines {
        if !l.stats.shared() {
            continue;
        }
        shared_lines += 1;
        shared.merge(&l.stats);
        let mut threads = Vec::new();
        let mut accesses: Vec<Access> = l
            .accesses
            .iter()
            .map(|(&(offset, ip), a)| {
                let mut th: Vec<(u32, u32)> = a.threads.iter().copied().collect();
                th.sort_unstable();
                threads.extend_from_slice(&th);
                let (function, module) = p.code_names(a.code);
                Access {
                    offset,
                    ip,
                    function: function.to_string(),
                    module: module.to_string(),
                    stats: a.stats,
                    threads: th,
                    cpus: a.cpus.len() as u64,
                }
            })
            .collect();
        // perf's Pareto shows the offsets with HITMs or stores (`valid_hitm_or_store`).
        accesses.retain(|a| a.stats.hitm_or_store());
        accesses.sort_by(|a, b| {
            a.offset
                .cmp(&b.offset)
                .then(b.stats.tot_hitm.cmp(&a.stats.tot_hitm))
                .then(b.stats.stores.cmp(&a.stats.stores))
                .then(a.ip.cmp(&b.ip))
        });
        threads.sort_unstable();
        threads.dedup();
        out.push(Line {
            address,
            data_symbol: l.data_symbol.map(|n| p.name(n).to_string()),
            stats: l.stats,
            accesses,
            threads,
        });
    }
    if !all {
        let tot = shared.tot_hitm;
        out.retain(|l| tot > 0 && (l.stats.tot_hitm as f64 / tot as f64) >= DISPLAY_LINE_LIMIT);
    }
    out.sort_by(|a, b| {
        b.stats
            .tot_hitm
            .cmp(&a.stats.tot_hitm)
            .then(b.stats.stores.cmp(&a.stats.stores))
            .then(a.address.cmp(&b.address))
    });
    // The samples of events that are no memory events (every data source PERF_MEM_NA:
    // cpu-clock with DATA_SRC in its sample type) counted in the totals only as records
    // that parse as neither load nor store: taken out again.
    let mut total = p.c2c_total;
    for e in p.not_memory_events() {
        let n = p.total(e).samples;
        total.records = total.records.saturating_sub(n);
        total.noparse = total.noparse.saturating_sub(n);
    }
    Report {
        total,
        shared,
        shared_lines,
        lines: out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::MemSample;

    fn s(tid: u32, ip: u64, addr: u64, data_src: u64, weight: u64) -> MemSample {
        MemSample {
            event: 0,
            pid: 1,
            tid,
            cpu: Some(tid),
            ip,
            addr,
            data_src,
            weight,
            period: 1,
            code: 0,
            data_symbol: Some(2),
            data_module: 1,
        }
    }

    const LCL_HITM: u64 = 0x02 | (0x40 | 0x02) << 5 | 0x10 << 19;
    const RMT_HITM: u64 = 0x02 | (0x400 | 0x02) << 5 | 0x10 << 19;
    const L1_LOAD: u64 = 0x02 | (0x08 | 0x02) << 5 | 0x02 << 19;
    const STORE_HIT: u64 = 0x04 | (0x08 | 0x02) << 5;
    const STORE_MISS: u64 = 0x04 | (0x08 | 0x04) << 5;

    #[test]
    fn false_sharing_shows_both_offsets() {
        let mut p = MemProfile::new(
            vec!["e".into()],
            vec!["f".into(), "m".into(), "x".into()],
            vec![(0, 1)],
        );
        for s in [
            s(1, 0x10, 0x1000, STORE_HIT, 0),
            s(2, 0x20, 0x1008, STORE_MISS, 0),
            s(1, 0x10, 0x1000, LCL_HITM, 100),
            s(2, 0x20, 0x1008, RMT_HITM, 300),
            s(2, 0x20, 0x1008, RMT_HITM, 500),
            s(1, 0x30, 0x2000, L1_LOAD, 5),
            s(1, 0x30, 0x3000, LCL_HITM, 90),
        ] {
            p.add(&s);
        }
        let r = analyze(&p, false);
        assert_eq!(r.total.records, 7);
        assert_eq!(
            (r.total.lcl_hitm, r.total.rmt_hitm, r.total.tot_hitm),
            (2, 2, 4)
        );
        assert_eq!(r.shared_lines, 2);
        assert_eq!(r.lines.len(), 2);
        let l = &r.lines[0];
        assert_eq!(l.address, 0x1000);
        assert_eq!((l.stats.tot_hitm, l.stats.stores), (3, 2));
        assert_eq!((l.stats.st_l1hit, l.stats.st_l1miss), (1, 1));
        assert_eq!(l.threads, vec![(1, 1), (1, 2)]);
        let offs: Vec<(u64, u64)> = l.accesses.iter().map(|a| (a.offset, a.ip)).collect();
        assert_eq!(offs, vec![(0, 0x10), (8, 0x20)]);
        assert_eq!(l.accesses[1].stats.cycles().remote_hitm, 400.0);
        assert_eq!(r.lines[1].address, 0x3000);
    }
}
