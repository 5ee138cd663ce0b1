//! Synthetic PEBS memory recordings for tests/mem.rs and tests/c2c.rs: perf.data files
//! written with hwprof's own writer that `perf mem report`, `perf report --mem-mode` and
//! `perf c2c report` (perf 6.1) accept as what `perf mem record` / `perf c2c record`
//! make on Skylake.
//!
//! What perf needs (found by trying perf 6.1 on this PMU-less machine):
//! - The attrs of `perf mem record`: `cpu/mem-loads,ldlat=30/P` (raw 0x1cd, config1 = the
//!   latency threshold) and `cpu/mem-stores/P` (raw 0x82d0), precise_ip 3, sample_type
//!   IP|TID|TIME|ADDR|ID|CPU|PERIOD|DATA_SRC|WEIGHT_STRUCT. perf never opens them when
//!   reading, so no PMU is needed; the names only label the events (`HEADER_EVENT_DESC`).
//! - `perf report --mem-mode` (what `perf mem report` runs) only needs DATA_SRC sampled.
//! - `perf c2c report` also needs `HEADER_NUMA_TOPOLOGY` (its node setup fails with
//!   "failed setup nodes" without one) and NRCPUS, and CPU in the samples.
//! - MMAP2 records for each PT_LOAD segment of a real binary (the workload `memshare`),
//!   so that perf (and hwprof) name the sampled functions and the data symbols.

#![allow(dead_code)]

pub mod encodings;

use std::path::{Path, PathBuf};
use std::process::Command;

use hwprof_pmu::attr::{Attr, sample, types};
use hwprof_sampler::perfdata::features::{EventDesc, Features, id as feat};
use hwprof_sampler::perfdata::writer::{EventEntry, Writer};

/// `perf_mem_data_src` fields (include/uapi/linux/perf_event.h).
pub mod ds {
    /// `mem_op`.
    pub const OP_LOAD: u64 = 0x02;
    pub const OP_STORE: u64 = 0x04;
    /// `mem_lvl`.
    pub const LVL_HIT: u64 = 0x02;
    pub const LVL_MISS: u64 = 0x04;
    pub const LVL_L1: u64 = 0x08;
    pub const LVL_LFB: u64 = 0x10;
    pub const LVL_L2: u64 = 0x20;
    pub const LVL_L3: u64 = 0x40;
    pub const LVL_LOC_RAM: u64 = 0x80;
    pub const LVL_REM_RAM1: u64 = 0x100;
    pub const LVL_REM_CCE1: u64 = 0x400;
    pub const LVL_NA: u64 = 0x01;
    /// `mem_snoop`.
    pub const SNOOP_NA: u64 = 0x01;
    pub const SNOOP_NONE: u64 = 0x02;
    pub const SNOOP_HIT: u64 = 0x04;
    pub const SNOOP_MISS: u64 = 0x08;
    pub const SNOOP_HITM: u64 = 0x10;
    /// `mem_dtlb`.
    pub const TLB_NA: u64 = 0x01;
    pub const TLB_HIT: u64 = 0x02;
    pub const TLB_MISS: u64 = 0x04;
    pub const TLB_L1: u64 = 0x08;
    pub const TLB_L2: u64 = 0x10;
    pub const TLB_WK: u64 = 0x20;
    /// `mem_lock`.
    pub const LOCK_LOCKED: u64 = 0x02;

    /// Packs the fields as the kernel does (`PERF_MEM_*_SHIFT`).
    pub fn pack(op: u64, lvl: u64, snoop: u64, lock: u64, dtlb: u64) -> u64 {
        op | lvl << 5 | snoop << 19 | lock << 24 | dtlb << 26
    }

    /// A load served at `lvl` (hit), with a snoop result and an L1/L2 TLB hit.
    pub fn load(lvl: u64, snoop: u64) -> u64 {
        pack(OP_LOAD, lvl | LVL_HIT, snoop, 0, TLB_L1 | TLB_L2 | TLB_HIT)
    }

    /// A load that hit a remote cache line in modified state (Skylake's
    /// `MEM_LOAD_L3_MISS_RETIRED.REMOTE_HITM`): what c2c counts as remote HITM.
    pub fn load_rmt_hitm() -> u64 {
        pack(
            OP_LOAD,
            LVL_REM_CCE1 | LVL_HIT,
            SNOOP_HITM,
            0,
            TLB_L1 | TLB_L2 | TLB_HIT,
        )
    }

    /// A load that hit a modified line in another core's cache of this socket (L3 hit,
    /// snoop HITM): local HITM.
    pub fn load_lcl_hitm() -> u64 {
        load(LVL_L3, SNOOP_HITM)
    }

    /// A store as Skylake's PEBS reports it: L1 hit or miss, no snoop information.
    pub fn store(l1_hit: bool) -> u64 {
        let hm = if l1_hit { LVL_HIT } else { LVL_MISS };
        pack(OP_STORE, LVL_L1 | hm, SNOOP_NA, 0, TLB_NA)
    }
}

/// One sampled access.
#[derive(Clone, Copy, Debug)]
pub struct Access {
    /// Store (`cpu/mem-stores/P`) or load (`cpu/mem-loads,ldlat=30/P`).
    pub store: bool,
    pub tid: u32,
    pub cpu: u32,
    /// Instruction address (in the binary's text).
    pub ip: u64,
    /// Data address.
    pub addr: u64,
    /// `perf_mem_data_src`.
    pub data_src: u64,
    /// Load latency in cycles (`weight_struct.var1_dw`); 0 for stores.
    pub weight: u32,
}

/// The `memshare` workload: its path and the addresses the tests sample.
pub struct Bin {
    pub path: PathBuf,
    /// (vaddr, file offset, file size, mem size, executable) of each PT_LOAD.
    pub loads: Vec<(u64, u64, u64, u64, bool)>,
}

impl Bin {
    /// Address of symbol `name` (nm).
    pub fn sym(&self, name: &str) -> u64 {
        hwprof_testkit::nm_address(&self.path, name)
    }
}

/// Compiles the workload and reads its program headers (readelf).
pub fn bin() -> Bin {
    let path = super::common::workload("memshare");
    let out = Command::new("readelf")
        .arg("-lW")
        .arg(&path)
        .output()
        .expect("run readelf");
    assert!(
        out.status.success(),
        "readelf -lW {} failed",
        path.display()
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex");
    let loads = text
        .lines()
        .filter(|l| l.trim_start().starts_with("LOAD"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let exec = l.contains(" E ") || l.contains("RWE");
            (hex(f[2]), hex(f[1]), hex(f[4]), hex(f[5]), exec)
        })
        .collect();
    Bin { path, loads }
}

pub const PID: u32 = 4242;
const LOAD_ID: u64 = 1001;
const STORE_ID: u64 = 1002;
/// Sample ids of the loads and stores events.
const TYPE: u64 = sample::IP
    | sample::TID
    | sample::TIME
    | sample::ADDR
    | sample::ID
    | sample::CPU
    | sample::PERIOD
    | sample::WEIGHT_STRUCT
    | sample::DATA_SRC;

fn attr(store: bool) -> Attr {
    let mut a = Attr::new(types::RAW, if store { 0x82d0 } else { 0x1cd });
    if !store {
        a.config1 = 30;
    }
    a.sample_period = 4000;
    a.freq = true;
    a.sample_type = TYPE;
    a.precise_ip = 3;
    a.sample_id_all = true;
    a.mmap = true;
    a.mmap2 = true;
    a.mmap_data = true;
    a.comm = true;
    a.comm_exec = true;
    a.task = true;
    a.exclude_guest = true;
    a
}

pub const LOADS: &str = "cpu/mem-loads,ldlat=30/P";
pub const STORES: &str = "cpu/mem-stores/P";

fn events() -> Vec<EventEntry> {
    vec![
        EventEntry {
            attr: attr(false),
            name: LOADS.into(),
            ids: vec![LOAD_ID],
        },
        EventEntry {
            attr: attr(true),
            name: STORES.into(),
            ids: vec![STORE_ID],
        },
    ]
}

fn record(kind: u32, misc: u16, mut body: Vec<u8>) -> Vec<u8> {
    body.resize(body.len().next_multiple_of(8), 0);
    let mut r = kind.to_le_bytes().to_vec();
    r.extend_from_slice(&misc.to_le_bytes());
    r.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
    r.extend_from_slice(&body);
    r
}

fn cstr(s: &str) -> Vec<u8> {
    let mut b = s.as_bytes().to_vec();
    b.push(0);
    b.resize(b.len().next_multiple_of(8), 0);
    b
}

fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn u64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The `sample_id` trailer: TID, TIME, ID, CPU.
fn sid(pid: u32, tid: u32, time: u64) -> Vec<u8> {
    let mut b = u32s(&[pid, tid]);
    b.extend(u64s(&[time, LOAD_ID]));
    b.extend(u32s(&[0, 0]));
    b
}

fn comm(pid: u32, tid: u32, name: &str, exec: bool, time: u64) -> Vec<u8> {
    let mut b = u32s(&[pid, tid]);
    b.extend(cstr(name));
    b.extend(sid(pid, tid, time));
    record(3, if exec { 1 << 13 } else { 0 }, b)
}

/// MMAP2 of one segment; `misc` USER, plus MMAP_DATA for a data segment.
fn mmap2(pid: u32, addr: u64, len: u64, pgoff: u64, exec: bool, name: &str) -> Vec<u8> {
    let mut b = u32s(&[pid, pid]);
    b.extend(u64s(&[addr, len, pgoff]));
    b.extend(u32s(&[8, 1]));
    b.extend(u64s(&[12345, 0]));
    let prot = if exec { 5 } else { 3 };
    b.extend(u32s(&[prot, 2]));
    b.extend(cstr(name));
    b.extend(sid(pid, pid, 1));
    record(10, if exec { 2 } else { 2 | 1 << 13 }, b)
}

fn sample_rec(a: &Access, time: u64) -> Vec<u8> {
    let mut b = u64s(&[a.ip]);
    b.extend(u32s(&[PID, a.tid]));
    b.extend(u64s(&[
        time,
        a.addr,
        if a.store { STORE_ID } else { LOAD_ID },
    ]));
    b.extend(u32s(&[a.cpu, 0]));
    b.extend(u64s(&[1, u64::from(a.weight), a.data_src]));
    // PERF_RECORD_MISC_USER | PERF_RECORD_MISC_EXACT_IP.
    record(9, 2 | 1 << 14, b)
}

/// `HEADER_NUMA_TOPOLOGY`: one node with CPUs 0-(ncpus-1).
fn numa_topology(ncpus: u32) -> Vec<u8> {
    let mut b = u32s(&[1, 0]);
    b.extend(u64s(&[16 << 20, 8 << 20]));
    let cpus = format!("0-{}", ncpus - 1);
    let mut s = cpus.into_bytes();
    s.push(0);
    s.resize(s.len().next_multiple_of(64), 0);
    b.extend(u32s(&[s.len() as u32]));
    b.extend(s);
    b
}

/// Writes `path`: the `memshare` binary mapped in process [`PID`] (threads named
/// `memshare`), then one sample per access, in order.
pub fn write(path: &Path, bin: &Bin, threads: &[u32], accesses: &[Access]) {
    write_as(
        path,
        bin,
        bin.path.to_str().expect("utf-8 path"),
        threads,
        accesses,
    );
}

/// [`write`] with the binary recorded as mapped from `name` (a path that need not
/// exist here: for `--symfs`).
pub fn write_as(path: &Path, bin: &Bin, name: &str, threads: &[u32], accesses: &[Access]) {
    write_stream(path, bin, name, threads, accesses.iter().copied());
}

/// [`write_as`] from an iterator: the samples are written as they come (for recordings
/// larger than memory should hold).
pub fn write_stream(
    path: &Path,
    bin: &Bin,
    name: &str,
    threads: &[u32],
    accesses: impl IntoIterator<Item = Access>,
) {
    write_stream_in_rounds(path, bin, name, threads, accesses, None);
}

/// [`write_stream`], with a `PERF_RECORD_FINISHED_ROUND` after every `round` samples
/// when set, as a recorder writes one after each pass over its rings.
pub fn write_stream_in_rounds(
    path: &Path,
    bin: &Bin,
    name: &str,
    threads: &[u32],
    accesses: impl IntoIterator<Item = Access>,
    round: Option<usize>,
) {
    let events = events();
    let mut w = Writer::create(path, events.clone()).expect("create perf.data");
    let mut recs = vec![comm(PID, PID, "memshare", true, 1)];
    for &tid in threads.iter().filter(|&&t| t != PID) {
        recs.push(comm(PID, tid, "memshare", false, 1));
    }
    for &(vaddr, off, filesz, _, exec) in &bin.loads {
        let start = vaddr & !0xfff;
        let end = (vaddr + filesz).next_multiple_of(0x1000);
        recs.push(mmap2(PID, start, end - start, off & !0xfff, exec, name));
    }
    for r in &recs {
        w.write_record(r).expect("write record");
    }
    for (i, a) in accesses.into_iter().enumerate() {
        w.write_record(&sample_rec(&a, 1000 + i as u64))
            .expect("write record");
        if round.is_some_and(|n| (i + 1) % n == 0) {
            w.write_record(&hwprof_sampler::session::FINISHED_ROUND)
                .expect("write record");
        }
    }
    let ncpus = 4;
    let features = Features {
        hostname: Some("synthetic".into()),
        osrelease: Some("6.1.0".into()),
        version: Some("6.1.0".into()),
        arch: Some("x86_64".into()),
        nr_cpus: Some((ncpus, ncpus)),
        cpudesc: Some("Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz".into()),
        cpuid: Some("GenuineIntel,6,85,4".into()),
        total_mem: Some(16 << 20),
        cmdline: Some(vec!["perf".into(), "mem".into(), "record".into()]),
        event_desc: Some(
            events
                .iter()
                .map(|e| EventDesc {
                    attr: e.attr.clone(),
                    name: e.name.clone(),
                    ids: e.ids.clone(),
                })
                .collect(),
        ),
        build_ids: Vec::new(),
        group_desc: None,
        other: vec![(feat::NUMA_TOPOLOGY, numa_topology(ncpus))],
    };
    w.finish(&features).expect("finish perf.data");
}

/// Appends `n` accesses of one kind: data addresses from `addr` stepping by `step` bytes
/// over `spread` slots, latencies `weight + i % 5` (loads) or 0 (stores).
#[allow(clippy::too_many_arguments)]
fn push(
    v: &mut Vec<Access>,
    n: usize,
    store: bool,
    tid: u32,
    ip: u64,
    addr: u64,
    (step, spread): (u64, u64),
    data_src: u64,
    weight: u32,
) {
    for i in 0..n {
        v.push(Access {
            store,
            tid,
            cpu: tid % 4,
            ip,
            addr: addr + (i as u64 % spread) * step,
            data_src,
            weight: if store { 0 } else { weight + i as u32 % 5 },
        });
    }
}

/// The second thread of the synthetic process.
pub const TID2: u32 = PID + 1;

/// Loads served at every level (L1, LFB, L2, L3 hit and HITM, local DRAM, remote HITM)
/// from `scan`, `writer_a` and `writer_b`, and stores that hit or miss L1.
pub fn mix(bin: &Bin) -> Vec<Access> {
    let (wa, wb, scan) = (bin.sym("writer_a"), bin.sym("writer_b"), bin.sym("scan"));
    let (table, quiet, shared) = (bin.sym("table"), bin.sym("quiet"), bin.sym("shared"));
    let mut v = Vec::new();
    let l = |lvl, snoop| ds::load(lvl, snoop);
    push(
        &mut v,
        40,
        false,
        PID,
        scan + 0x10,
        table,
        (8, 8),
        l(ds::LVL_L1, ds::SNOOP_NONE),
        30,
    );
    push(
        &mut v,
        10,
        false,
        PID,
        scan + 0x18,
        quiet,
        (8, 8),
        l(ds::LVL_LFB, ds::SNOOP_NONE),
        60,
    );
    push(
        &mut v,
        12,
        false,
        PID,
        scan + 0x10,
        table + 512,
        (8, 8),
        l(ds::LVL_L2, ds::SNOOP_NONE),
        40,
    );
    push(
        &mut v,
        8,
        false,
        PID,
        scan + 0x10,
        table + 4096,
        (8, 8),
        l(ds::LVL_L3, ds::SNOOP_HIT),
        80,
    );
    push(
        &mut v,
        6,
        false,
        TID2,
        wb + 4,
        shared + 8,
        (0, 1),
        ds::load_lcl_hitm(),
        150,
    );
    push(
        &mut v,
        5,
        false,
        PID,
        scan + 0x10,
        table + 8192,
        (64, 5),
        // An STLB miss, as Skylake's PEBS says it (L2 TLB miss).
        ds::pack(
            ds::OP_LOAD,
            ds::LVL_LOC_RAM | ds::LVL_HIT,
            ds::SNOOP_MISS,
            0,
            ds::TLB_L2 | ds::TLB_MISS,
        ),
        300,
    );
    push(
        &mut v,
        3,
        false,
        PID,
        wa + 4,
        shared,
        (0, 1),
        ds::load_rmt_hitm(),
        500,
    );
    push(
        &mut v,
        20,
        true,
        PID,
        wa + 4,
        shared,
        (0, 1),
        ds::store(true),
        0,
    );
    push(
        &mut v,
        7,
        true,
        TID2,
        wb + 4,
        shared + 8,
        (0, 1),
        ds::store(false),
        0,
    );
    v
}

/// False sharing: `writer_a` (thread [`PID`]) and `writer_b` (thread [`TID2`]) write
/// and read offsets 0 and 8 of the line `shared`, with local and remote HITM loads;
/// `quiet` gets a little store and load traffic from `scan` (one local HITM), `table`
/// loads only (no HITM, no stores: not a shared line for c2c).
pub fn false_sharing(bin: &Bin) -> Vec<Access> {
    let (wa, wb, scan) = (bin.sym("writer_a"), bin.sym("writer_b"), bin.sym("scan"));
    let (table, quiet, shared) = (bin.sym("table"), bin.sym("quiet"), bin.sym("shared"));
    let mut v = Vec::new();
    let one = (0, 1);
    push(
        &mut v,
        30,
        true,
        PID,
        wa + 4,
        shared,
        one,
        ds::store(true),
        0,
    );
    push(
        &mut v,
        10,
        true,
        PID,
        wa + 4,
        shared,
        one,
        ds::store(false),
        0,
    );
    push(
        &mut v,
        25,
        true,
        TID2,
        wb + 4,
        shared + 8,
        one,
        ds::store(true),
        0,
    );
    push(
        &mut v,
        12,
        true,
        TID2,
        wb + 4,
        shared + 8,
        one,
        ds::store(false),
        0,
    );
    push(
        &mut v,
        9,
        false,
        PID,
        wa + 4,
        shared,
        one,
        ds::load_lcl_hitm(),
        180,
    );
    push(
        &mut v,
        4,
        false,
        PID,
        wa + 4,
        shared,
        one,
        ds::load_rmt_hitm(),
        420,
    );
    push(
        &mut v,
        7,
        false,
        TID2,
        wb + 4,
        shared + 8,
        one,
        ds::load_lcl_hitm(),
        200,
    );
    push(
        &mut v,
        2,
        false,
        TID2,
        wb + 4,
        shared + 8,
        one,
        ds::load_rmt_hitm(),
        450,
    );
    push(
        &mut v,
        5,
        false,
        PID,
        wa + 4,
        shared,
        one,
        ds::load(ds::LVL_L1, ds::SNOOP_NONE),
        30,
    );
    push(
        &mut v,
        1,
        false,
        PID,
        scan + 0x18,
        quiet + 16,
        one,
        ds::load_lcl_hitm(),
        160,
    );
    push(
        &mut v,
        3,
        false,
        PID,
        scan + 0x18,
        quiet + 16,
        one,
        ds::load(ds::LVL_L2, ds::SNOOP_NONE),
        40,
    );
    push(
        &mut v,
        2,
        true,
        PID,
        scan + 0x18,
        quiet + 24,
        one,
        ds::store(true),
        0,
    );
    push(
        &mut v,
        20,
        false,
        PID,
        scan + 0x10,
        table,
        (8, 16),
        ds::load(ds::LVL_L3, ds::SNOOP_HIT),
        70,
    );
    v
}

/// A recording of one `cpu-clock` sample (IP|TID|TIME|PERIOD): no data source.
pub fn write_plain(path: &Path) {
    let mut a = Attr::new(types::SOFTWARE, 0);
    a.sample_period = 1000;
    a.sample_type = sample::IP | sample::TID | sample::TIME | sample::PERIOD;
    a.sample_id_all = true;
    let mut w = Writer::create(
        path,
        vec![EventEntry {
            attr: a,
            name: "cpu-clock".into(),
            ids: vec![],
        }],
    )
    .expect("create perf.data");
    let mut b = u64s(&[0x401000]);
    b.extend(u32s(&[PID, PID]));
    b.extend(u64s(&[10, 1000]));
    w.write_record(&record(9, 2, b)).expect("write record");
    w.finish(&Features::default()).expect("finish perf.data");
}
