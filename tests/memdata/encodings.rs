//! Data sources beyond Skylake's `mem_lvl` bits, as newer CPUs and kernels write them:
//! the level in `mem_lvl_num` (`PERF_MEM_LVLNUM_*`: L1 to L4, any cache, LFB, RAM, PMEM,
//! CXL, N/A; Intel since Alder Lake sets both namespaces, AMD IBS and Arm SPE mostly the
//! number), `mem_remote` with and without `mem_hops` (Power10, AMD: how far away the
//! serving core, node, socket or board is), `mem_snoopx` (Arm SPE's forward and peer
//! snoops), and the remote HITM and hop encodings that `perf c2c` counts.
//!
//! Within one event every kind has its own `mem_lvl` and its own level text, and its own
//! `mem_snoop` per snoop text: perf's `--sort mem` and `--sort snoop` compare only those
//! fields (hwprof groups by the text), so that both tools make the same rows.

use super::ds::*;
use super::{Access, Bin, PID, TID2, push};

/// `PERF_MEM_LVLNUM_*`.
pub mod lvlnum {
    pub const L1: u64 = 0x01;
    pub const L2: u64 = 0x02;
    pub const L3: u64 = 0x03;
    pub const L4: u64 = 0x04;
    pub const CXL: u64 = 0x09;
    pub const ANY_CACHE: u64 = 0x0b;
    pub const LFB: u64 = 0x0c;
    pub const RAM: u64 = 0x0d;
    pub const PMEM: u64 = 0x0e;
    pub const NA: u64 = 0x0f;
}

/// `PERF_MEM_HOPS_0..3` (the field's values 1 to 4).
pub mod hops {
    /// Remote core, same node.
    pub const CORE: u64 = 1;
    /// Remote node, same socket.
    pub const NODE: u64 = 2;
    /// Remote socket, same board.
    pub const SOCKET: u64 = 3;
    /// Remote board.
    pub const BOARD: u64 = 4;
}

pub const SNOOPX_FWD: u64 = 0x01;
pub const SNOOPX_PEER: u64 = 0x02;

/// The fields past `mem_dtlb`: `mem_lvl_num`, `mem_remote`, `mem_snoopx`, `mem_hops`
/// (`PERF_MEM_*_SHIFT`), added to a [`pack`]ed value.
pub fn ext(base: u64, num: u64, remote: bool, snoopx: u64, hops: u64) -> u64 {
    base | num << 33 | u64::from(remote) << 37 | snoopx << 38 | hops << 43
}

/// One kind of access: its data source and how many of it, and the `flamegraph --mem`
/// levels it belongs to, labelled by hand from what perf_event.h says the fields mean.
#[derive(Clone, Copy, Debug)]
pub struct Kind {
    pub store: bool,
    pub data_src: u64,
    pub n: usize,
    pub levels: &'static [&'static str],
}

const TLB: u64 = TLB_L1 | TLB_L2 | TLB_HIT;

fn load(lvl: u64, snoop: u64, num: u64, remote: bool, snoopx: u64, hops: u64) -> u64 {
    ext(pack(OP_LOAD, lvl, snoop, 0, TLB), num, remote, snoopx, hops)
}

/// `v` with another `mem_dtlb` (bit 6: "Fault", the OS handled it).
fn tlb(v: u64, dtlb: u64) -> u64 {
    v & !(0x7f << 26) | dtlb << 26
}

/// The kinds of [`accesses`], loads then stores.
#[rustfmt::skip]
pub fn kinds() -> Vec<Kind> {
    use hops::*;
    use lvlnum as n;
    let k = |data_src, n, levels| Kind { store: false, data_src, n, levels };
    let s = |data_src, n| Kind { store: true, data_src, n, levels: &[] };
    let none = SNOOP_NONE;
    vec![
        // The number only (AMD IBS, Arm SPE): L1 hit, L2 miss.
        k(load(LVL_HIT, none, n::L1, false, 0, 0), 9, &["l1"]),
        k(load(LVL_MISS, none, n::L2, false, 0, 0), 4, &[]),
        // Both namespaces (Intel since Alder Lake).
        k(load(LVL_HIT | LVL_L3, none, n::L3, false, 0, 0), 6, &["l3"]),
        k(load(LVL_HIT | LVL_LFB, none, n::LFB, false, 0, 0), 5, &["lfb"]),
        k(load(LVL_HIT | LVL_LOC_RAM, SNOOP_MISS, n::RAM, false, 0, 0), 3, &["dram", "local-dram"]),
        // The number only, beside classic bits that name no level (uncached, I/O, N/A):
        // an LFB hit, and another core's L1 (remote, hops).
        k(load(LVL_HIT | LVL_NA | 0x2000, none, n::LFB, false, 0, 0), 2, &["lfb"]),
        k(load(LVL_HIT | LVL_NA | 0x1000 | 0x2000, none, n::L1, true, 0, CORE), 2, &["remote-cache"]),
        // RAM by number only, here and one hop away; any cache of another board.
        k(load(LVL_HIT | LVL_NA | 0x1000, none, n::RAM, false, 0, 0), 2, &["dram", "local-dram"]),
        k(load(LVL_HIT | LVL_NA | LVL_MISS, none, n::RAM, true, 0, NODE), 2, &["dram", "remote-dram"]),
        k(load(LVL_HIT | LVL_MISS, none, n::ANY_CACHE, true, 0, BOARD), 2, &["remote-cache"]),
        // Levels no classic bit names: L4, PMEM, CXL; the number "not available".
        k(load(LVL_HIT | LVL_NA, none, n::L4, false, 0, 0), 2, &[]),
        k(tlb(load(LVL_MISS | LVL_NA, none, n::PMEM, false, 0, 0), TLB_WK | TLB_MISS), 2, &[]),
        k(tlb(load(LVL_HIT | 0x2000, none, n::CXL, false, 0, 0), 0x40 | TLB_MISS), 2, &[]),
        k(load(LVL_HIT | LVL_L2, none, n::NA, false, 0, 0), 4, &["l2"]),
        // Remote without hops: Skylake's remote RAM, its remote HITM of unknown level, and
        // an I/O hit (c2c counts `mem_remote` with no hops as remote, a hit as remote
        // DRAM too).
        k(load(LVL_HIT | LVL_REM_RAM1, SNOOP_HIT, n::RAM, true, 0, 0), 3, &["dram", "remote-dram"]),
        k(load(LVL_MISS | LVL_L3, SNOOP_HITM, 0, true, 0, 0), 3, &["hitm"]),
        k(load(LVL_HIT | 0x1000, SNOOP_MISS, 0, true, 0, 0), 3, &[]),
        // A remote HITM two hops away, as older CPUs say it.
        k(load(LVL_HIT | 0x800, SNOOP_HITM, 0, false, 0, 0), 2, &["remote-cache", "hitm"]),
        // Remote with hops (Power10, AMD): another core's L2 in this node, another
        // node's cache, another socket's, another board's RAM; a HITM in another node.
        k(load(LVL_HIT | LVL_NA | 0x800, none, n::L2, true, 0, CORE), 3, &["remote-cache"]),
        k(load(LVL_HIT | LVL_REM_CCE1, none, n::ANY_CACHE, true, 0, NODE), 2, &["remote-cache"]),
        k(load(LVL_HIT | LVL_REM_CCE1 | 0x800, none, n::ANY_CACHE, true, 0, SOCKET), 2, &["remote-cache"]),
        k(load(LVL_HIT | 0x200, none, n::RAM, true, 0, BOARD), 2, &["dram", "remote-dram"]),
        k(load(LVL_HIT | LVL_NA | LVL_REM_CCE1, SNOOP_HITM, n::L3, true, 0, NODE), 3, &["remote-cache", "hitm"]),
        // A local HITM (L1 or L3, as no CPU says it: two classic bits), and a HITM in
        // another core's L3 of this node (Power10: remote with hops, which c2c does not
        // count as remote).
        k(load(LVL_HIT | LVL_L1 | LVL_L3, SNOOP_HITM, 0, false, 0, 0), 2, &["l1", "l3", "hitm"]),
        k(load(LVL_HIT | LVL_NA | LVL_REM_CCE1 | LVL_L3, SNOOP_HITM, n::L3, true, 0, CORE), 2, &["l3", "remote-cache", "hitm"]),
        // Arm SPE's snoop extensions: forwarded, and a peer cache's, remote and local.
        k(load(LVL_HIT | LVL_L3 | LVL_NA, SNOOP_NONE | SNOOP_HIT, 0, false, SNOOPX_FWD, 0), 3, &["l3"]),
        k(load(LVL_HIT | LVL_NA | LVL_REM_CCE1 | 0x800, 0, 0, false, SNOOPX_PEER, 0), 2, &["remote-cache"]),
        k(load(LVL_HIT | LVL_NA | LVL_L2, 0, 0, false, SNOOPX_PEER, 0), 2, &["l2"]),
        // A locked L1 hit.
        k(ext(pack(OP_LOAD, LVL_HIT | LVL_L1 | LVL_L2, none, LOCK_LOCKED, TLB), 0, false, 0, 0), 1, &["l1", "l2"]),
        // Stores: L1 hit and miss, and no level (IBS).
        s(store(true), 6),
        s(store(false), 3),
        s(pack(OP_STORE, LVL_NA, SNOOP_NA, 0, TLB_NA), 2),
    ]
}

/// The accesses of [`kinds`]: loads from `scan` (thread [`PID`]) and `writer_b`
/// ([`TID2`]) over the line `shared` (so that c2c's lines count them) and `table`, stores
/// of `writer_a` to `shared`.
pub fn accesses(bin: &Bin) -> Vec<Access> {
    let (wa, wb, scan) = (bin.sym("writer_a"), bin.sym("writer_b"), bin.sym("scan"));
    let (table, shared) = (bin.sym("table"), bin.sym("shared"));
    let mut v = Vec::new();
    for (i, k) in kinds().iter().enumerate() {
        let i = i as u64;
        let (tid, ip, addr) = match (k.store, i % 2) {
            (true, _) => (PID, wa + 4, shared),
            (false, 0) => (PID, scan + 0x10, table + 64 * i),
            (false, _) => (TID2, wb + 4, shared + 8),
        };
        push(
            &mut v,
            k.n,
            k.store,
            tid,
            ip,
            addr,
            (8, 4),
            k.data_src,
            40 + 10 * i as u32,
        );
    }
    v
}
