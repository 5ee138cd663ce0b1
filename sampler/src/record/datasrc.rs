//! `PERF_SAMPLE_DATA_SRC` (`union perf_mem_data_src`) decoded into the strings `perf mem`
//! and `perf script -F data_src` show ("L1 hit", "Snoop None", "TLB L1 or L2 hit"...).

use std::fmt::Write;

/// The bit fields of one `perf_mem_data_src` value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DataSrc {
    /// `mem_op` (5 bits: NA, LOAD, STORE, PFETCH, EXEC).
    pub mem_op: u8,
    /// `mem_lvl` (14 bits: NA, HIT, MISS, L1, LFB, L2, L3, LOC_RAM, REM_RAM1/2,
    /// REM_CCE1/2, IO, UNC).
    pub mem_lvl: u16,
    /// `mem_snoop` (5 bits: NA, NONE, HIT, MISS, HITM).
    pub mem_snoop: u8,
    /// `mem_lock` (2 bits: NA, LOCKED).
    pub mem_lock: u8,
    /// `mem_dtlb` (7 bits: NA, HIT, MISS, L1, L2, WK, OS).
    pub mem_dtlb: u8,
    /// `mem_lvl_num` (4 bits: `PERF_MEM_LVLNUM_*`).
    pub mem_lvl_num: u8,
    /// `mem_remote` (1 bit).
    pub mem_remote: bool,
    /// `mem_snoopx` (2 bits: FWD, PEER).
    pub mem_snoopx: u8,
    /// `mem_blk` (3 bits: NA, DATA, ADDR).
    pub mem_blk: u8,
    /// `mem_hops` (3 bits).
    pub mem_hops: u8,
}

const LVL: [&str; 14] = [
    "N/A",
    "HIT",
    "MISS",
    "L1",
    "LFB/MAB",
    "L2",
    "L3",
    "Local RAM",
    "Remote RAM (1 hop)",
    "Remote RAM (2 hops)",
    "Remote Cache (1 hop)",
    "Remote Cache (2 hops)",
    "I/O",
    "Uncached",
];
const SNOOP: [&str; 5] = ["N/A", "None", "Hit", "Miss", "HitM"];
const TLB: [&str; 7] = ["N/A", "HIT", "MISS", "L1", "L2", "Walker", "Fault"];
const HOPS: [&str; 5] = [
    "N/A",
    "core, same node",
    "node, same socket",
    "socket, same board",
    "board",
];

fn lvlnum_name(n: u8) -> Option<&'static str> {
    Some(match n {
        0x04 => "L4",
        0x05 => "L2 MHB",
        0x06 => "Memory-side Cache",
        0x08 => "Uncached",
        0x09 => "CXL",
        0x0a => "I/O",
        0x0b => "Any cache",
        0x0c => "LFB/MAB",
        0x0d => "RAM",
        0x0e => "PMEM",
        0x0f => "N/A",
        _ => return None,
    })
}

/// Appends the names of the set bits of `m` (bit i = `names[i]`) joined by " or ".
/// Ends a level or TLB description as perf does: "N/A" when nothing was named, then the
/// HIT / MISS bits as " hit" / " miss".
fn hit_miss(mut out: String, hit: bool, miss: bool) -> String {
    if out.is_empty() {
        out.push_str("N/A");
    }
    if hit {
        out.push_str(" hit");
    }
    if miss {
        out.push_str(" miss");
    }
    out
}

fn bits(out: &mut String, mut m: u64, names: &[&str], printed: &mut usize) {
    for name in names {
        if m == 0 {
            break;
        }
        if m & 1 != 0 {
            if *printed > 0 {
                out.push_str(" or ");
            }
            *printed += 1;
            out.push_str(name);
        }
        m >>= 1;
    }
}

/// `mem_op` bits (`PERF_MEM_OP_*`).
const OP_LOAD: u8 = 0x02;
const OP_STORE: u8 = 0x04;
/// `mem_lvl` bits (`PERF_MEM_LVL_*`).
const LVL_NA: u16 = 0x01;
const LVL_HIT: u16 = 0x02;
const LVL_MISS: u16 = 0x04;
const LVL_L1: u16 = 0x08;
const LVL_LFB: u16 = 0x10;
const LVL_L2: u16 = 0x20;
const LVL_L3: u16 = 0x40;
const LVL_LOC_RAM: u16 = 0x80;
const LVL_REM_RAM1: u16 = 0x100;
const LVL_REM_RAM2: u16 = 0x200;
const LVL_REM_CCE1: u16 = 0x400;
const LVL_REM_CCE2: u16 = 0x800;
const LVL_IO: u16 = 0x1000;
const LVL_UNC: u16 = 0x2000;
/// `mem_snoop` bits (`PERF_MEM_SNOOP_*`).
const SNOOP_HIT: u8 = 0x04;
const SNOOP_HITM: u8 = 0x10;
/// `mem_snoopx` bits (`PERF_MEM_SNOOPX_*`).
const SNOOPX_PEER: u8 = 0x02;
/// `mem_lock` bits (`PERF_MEM_LOCK_*`).
const LOCK_LOCKED: u8 = 0x02;
/// `mem_lvl_num` values (`PERF_MEM_LVLNUM_*`).
const LVLNUM_L1: u8 = 0x01;
const LVLNUM_L2: u8 = 0x02;
const LVLNUM_L3: u8 = 0x03;
const LVLNUM_ANY_CACHE: u8 = 0x0b;
const LVLNUM_LFB: u8 = 0x0c;
const LVLNUM_RAM: u8 = 0x0d;
const LVLNUM_NA: u8 = 0x0f;

/// A bit of `mem_lvl`, the first namespace of levels (`PERF_MEM_LVL_*`), the one perf
/// 6.1's `c2c_decode_stats` reads (it ignores `mem_lvl_num`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemLvl {
    /// `NA`: not available.
    Na,
    /// `HIT`.
    Hit,
    /// `MISS`.
    Miss,
    /// `L1`.
    L1,
    /// `LFB`: line fill buffer (miss address buffer).
    Lfb,
    /// `L2`.
    L2,
    /// `L3`.
    L3,
    /// `LOC_RAM`: local DRAM.
    LocalRam,
    /// `REM_RAM1` or `REM_RAM2`: remote DRAM, one hop or two.
    RemoteRam,
    /// `REM_CCE1` or `REM_CCE2`: a remote cache, one hop or two.
    RemoteCache,
    /// `IO`.
    Io,
    /// `UNC`: uncached memory.
    Uncached,
}

impl MemLvl {
    const fn mask(self) -> u16 {
        match self {
            MemLvl::Na => LVL_NA,
            MemLvl::Hit => LVL_HIT,
            MemLvl::Miss => LVL_MISS,
            MemLvl::L1 => LVL_L1,
            MemLvl::Lfb => LVL_LFB,
            MemLvl::L2 => LVL_L2,
            MemLvl::L3 => LVL_L3,
            MemLvl::LocalRam => LVL_LOC_RAM,
            MemLvl::RemoteRam => LVL_REM_RAM1 | LVL_REM_RAM2,
            MemLvl::RemoteCache => LVL_REM_CCE1 | LVL_REM_CCE2,
            MemLvl::Io => LVL_IO,
            MemLvl::Uncached => LVL_UNC,
        }
    }
}

/// The questions mem, c2c and `flamegraph --mem LEVEL` ask of a data source: the
/// `PERF_MEM_*` bits are read here and nowhere else.
impl DataSrc {
    /// A load (`mem_op` LOAD).
    pub fn is_load(&self) -> bool {
        self.mem_op & OP_LOAD != 0
    }

    /// A store (`mem_op` STORE).
    pub fn is_store(&self) -> bool {
        self.mem_op & OP_STORE != 0
    }

    /// A locked access (`mem_lock` LOCKED).
    pub fn is_locked(&self) -> bool {
        self.mem_lock & LOCK_LOCKED != 0
    }

    /// Whether `mem_lvl` has bit `l` (the first level namespace only).
    pub fn lvl(&self, l: MemLvl) -> bool {
        self.mem_lvl & l.mask() != 0
    }

    /// The snoop found the line in another cache, clean (`mem_snoop` HIT).
    pub fn snoop_hit(&self) -> bool {
        self.mem_snoop & SNOOP_HIT != 0
    }

    /// The snoop found the line modified in another core's cache (`mem_snoop` HITM),
    /// at any level, local or remote.
    pub fn snoop_hitm(&self) -> bool {
        self.mem_snoop & SNOOP_HITM != 0
    }

    /// Served by a peer cache (`mem_snoopx` PEER, Arm SPE).
    pub fn snoop_peer(&self) -> bool {
        self.mem_snoopx & SNOOPX_PEER != 0
    }

    /// `mem_remote` without `mem_hops`: Skylake's mark of a remote level it does not
    /// name (perf 6.1's `mrem` in `c2c_decode_stats`; with hops, Power10 marks another
    /// core's cache of the same node, which is no remote access).
    pub fn remote_unnamed(&self) -> bool {
        self.mem_remote && self.mem_hops == 0
    }

    /// `mem_lvl_num` is `n` and `mem_remote` is not set: this core's (or node's) level.
    fn local_num(&self, n: u8) -> bool {
        self.mem_lvl_num == n && !self.mem_remote
    }

    /// A hit in this core's L1: `mem_lvl` HIT with L1, or with level number L1 not
    /// marked remote (newer kernels may say the level only in `mem_lvl_num`, and with
    /// `mem_remote` that it is another core's, node's, socket's or board's).
    pub fn l1_hit(&self) -> bool {
        self.lvl(MemLvl::Hit) && (self.lvl(MemLvl::L1) || self.local_num(LVLNUM_L1))
    }

    /// A hit in the line fill buffer (miss address buffer), `mem_lvl` or level number
    /// LFB not marked remote.
    pub fn lfb_hit(&self) -> bool {
        self.lvl(MemLvl::Hit) && (self.lvl(MemLvl::Lfb) || self.local_num(LVLNUM_LFB))
    }

    /// A hit in this core's L2, `mem_lvl` or level number L2 not marked remote.
    pub fn l2_hit(&self) -> bool {
        self.lvl(MemLvl::Hit) && (self.lvl(MemLvl::L2) || self.local_num(LVLNUM_L2))
    }

    /// A hit in this socket's L3 (HITM included), `mem_lvl` or level number L3 not
    /// marked remote.
    pub fn l3_hit(&self) -> bool {
        self.lvl(MemLvl::Hit) && (self.lvl(MemLvl::L3) || self.local_num(LVLNUM_L3))
    }

    /// A hit in DRAM, local or remote: `mem_lvl` LOC_RAM, REM_RAM1 or REM_RAM2, or
    /// level number RAM.
    pub fn dram_hit(&self) -> bool {
        self.lvl(MemLvl::Hit)
            && (self.lvl(MemLvl::LocalRam)
                || self.lvl(MemLvl::RemoteRam)
                || self.mem_lvl_num == LVLNUM_RAM)
    }

    /// A hit in local DRAM: `mem_lvl` LOC_RAM, or level number RAM not marked remote.
    pub fn local_dram_hit(&self) -> bool {
        self.lvl(MemLvl::Hit) && (self.lvl(MemLvl::LocalRam) || self.local_num(LVLNUM_RAM))
    }

    /// A hit in remote DRAM: `mem_lvl` REM_RAM1 or REM_RAM2, or level number RAM marked
    /// remote.
    pub fn remote_dram_hit(&self) -> bool {
        self.lvl(MemLvl::Hit)
            && (self.lvl(MemLvl::RemoteRam) || (self.mem_lvl_num == LVLNUM_RAM && self.mem_remote))
    }

    /// An access to a remote cache, hit or not: another socket's (`mem_lvl` REM_CCE1 or
    /// REM_CCE2), or a cache level number (L1 to L4, L2 MHB, memory-side cache, any
    /// cache, LFB; not uncached, CXL, I/O, RAM, PMEM or N/A) that `mem_remote` marks as
    /// another core's, node's, socket's or board's.
    pub fn remote_cache(&self) -> bool {
        let cache = matches!(
            self.mem_lvl_num,
            LVLNUM_L1..=0x06 | LVLNUM_ANY_CACHE | LVLNUM_LFB
        );
        self.lvl(MemLvl::RemoteCache) || (self.mem_remote && cache)
    }

    /// Whether it says anything about where an access was served. The kernel gives
    /// each sample of an event that does not sample memory (cpu-clock, or any event
    /// whose attr merely asks for DATA_SRC, as `--call-graph dwarf` does) `PERF_MEM_NA`:
    /// every field "not available" (`0x1e05080021` with the level number); 0 (no field
    /// set) says nothing either. A memory sample (PEBS load latency or stores, IBS, SPE)
    /// sets at least one field: an operation, a level, a snoop, TLB or lock result.
    pub fn is_informative(&self) -> bool {
        let nothing = |v: u64, na: u64| v == 0 || v == na;
        !(nothing(self.mem_op.into(), 1)
            && nothing(self.mem_lvl.into(), 1)
            && nothing(self.mem_snoop.into(), 1)
            && nothing(self.mem_lock.into(), 1)
            && nothing(self.mem_dtlb.into(), 1)
            && nothing(self.mem_lvl_num.into(), LVLNUM_NA.into())
            && nothing(self.mem_blk.into(), 1)
            && !self.mem_remote
            && self.mem_snoopx == 0
            && self.mem_hops == 0)
    }
}

impl DataSrc {
    /// Splits the u64 of a sample.
    pub fn from_u64(v: u64) -> Self {
        DataSrc {
            mem_op: (v & 0x1f) as u8,
            mem_lvl: (v >> 5 & 0x3fff) as u16,
            mem_snoop: (v >> 19 & 0x1f) as u8,
            mem_lock: (v >> 24 & 0x3) as u8,
            mem_dtlb: (v >> 26 & 0x7f) as u8,
            mem_lvl_num: (v >> 33 & 0xf) as u8,
            mem_remote: v >> 37 & 1 != 0,
            mem_snoopx: (v >> 38 & 0x3) as u8,
            mem_blk: (v >> 40 & 0x7) as u8,
            mem_hops: (v >> 43 & 0x7) as u8,
        }
    }

    /// The operation: "LOAD", "STORE", "PFETCH", "EXEC", "N/A" or "No".
    pub fn op(&self) -> &'static str {
        let o = self.mem_op;
        if o & 1 != 0 {
            "N/A"
        } else if o & 2 != 0 {
            "LOAD"
        } else if o & 4 != 0 {
            "STORE"
        } else if o & 8 != 0 {
            "PFETCH"
        } else if o & 16 != 0 {
            "EXEC"
        } else {
            "No"
        }
    }

    /// The memory level as `perf mem` prints it ("L1 hit", "LFB/MAB hit", "RAM hit",
    /// "Remote L3 or ... miss").
    pub fn level(&self) -> String {
        let mut out = String::new();
        let m = u64::from(self.mem_lvl);
        let (hit, miss) = (m & 2 != 0, m & 4 != 0);
        let m = m & !6;
        let mut printed = 0;
        if self.mem_remote {
            out.push_str("Remote ");
        }
        if self.mem_hops != 0 {
            let h = HOPS
                .get(usize::from(self.mem_hops))
                .copied()
                .unwrap_or("N/A");
            out.push_str(h);
            out.push(' ');
        } else {
            bits(&mut out, m, &LVL, &mut printed);
        }
        if self.mem_lvl_num != 0 {
            if printed > 0 {
                out.push_str(" or ");
            }
            printed += 1;
            match lvlnum_name(self.mem_lvl_num) {
                Some(n) => out.push_str(n),
                None => {
                    let _ = write!(out, "L{}", self.mem_lvl_num);
                }
            }
        }
        let _ = printed;
        hit_miss(out, hit, miss)
    }

    /// The snoop result ("None", "Hit", "HitM", "Miss", "Fwd", "Peer", "N/A").
    pub fn snoop(&self) -> String {
        let mut out = String::new();
        let mut printed = 0;
        bits(&mut out, u64::from(self.mem_snoop), &SNOOP, &mut printed);
        for (bit, name) in [(1, "Fwd"), (2, "Peer")] {
            if self.mem_snoopx & bit != 0 {
                if printed > 0 {
                    out.push_str(" or ");
                }
                printed += 1;
                out.push_str(name);
            }
        }
        if out.is_empty() {
            out.push_str("N/A");
        }
        out
    }

    /// The data TLB access ("L1 or L2 hit", "Walker miss", "N/A").
    pub fn tlb(&self) -> String {
        let mut out = String::new();
        let m = u64::from(self.mem_dtlb);
        let (hit, miss) = (m & 2 != 0, m & 4 != 0);
        let mut printed = 0;
        bits(&mut out, m & !6, &TLB, &mut printed);
        hit_miss(out, hit, miss)
    }

    /// Locked access: "Yes", "No" or "N/A".
    pub fn lock(&self) -> &'static str {
        if self.mem_lock & 1 != 0 {
            "N/A"
        } else if self.mem_lock & 2 != 0 {
            "Yes"
        } else {
            "No"
        }
    }

    /// Blocked access: "N/A", "Data", "Addr" or "Data Addr".
    pub fn blk(&self) -> &'static str {
        match self.mem_blk {
            b if b == 0 || b & 1 != 0 => "N/A",
            2 => "Data",
            4 => "Addr",
            _ => "Data Addr",
        }
    }

    /// The line `perf script -F data_src` prints after the value:
    /// `|OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A`.
    pub fn summary(&self) -> String {
        format!(
            "|OP {}|LVL {}|SNP {}|TLB {}|LCK {}|BLK  {}",
            self.op(),
            self.level(),
            self.snoop(),
            self.tlb(),
            self.lock(),
            self.blk()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // perf_event.h shifts.
    fn ds(op: u64, lvl: u64, snoop: u64, lock: u64, dtlb: u64, lvlnum: u64) -> u64 {
        op | lvl << 5 | snoop << 19 | lock << 24 | dtlb << 26 | lvlnum << 33
    }

    #[test]
    fn l1_hit_load() {
        // LOAD, LVL HIT|L1, SNOOP NONE, LOCK NA... as Intel PEBS reports an L1 hit.
        let d = DataSrc::from_u64(ds(2, 0x02 | 0x08, 0x02, 0, 0x02 | 0x08 | 0x10, 0));
        assert_eq!(d.op(), "LOAD");
        assert_eq!(d.level(), "L1 hit");
        assert_eq!(d.snoop(), "None");
        assert_eq!(d.tlb(), "L1 or L2 hit");
        assert_eq!(d.lock(), "No");
        assert_eq!(d.blk(), "N/A");
        assert_eq!(
            d.summary(),
            "|OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A"
        );
    }

    #[test]
    fn lfb_ram_remote_hops_and_lvlnum() {
        let d = DataSrc::from_u64(ds(2, 0x02 | 0x10, 0x01, 1, 0x04 | 0x20, 0));
        assert_eq!(d.level(), "LFB/MAB hit");
        assert_eq!(d.snoop(), "N/A");
        assert_eq!(d.lock(), "N/A");
        assert_eq!(d.tlb(), "Walker miss");
        // lvl_num RAM only.
        let d = DataSrc::from_u64(ds(2, 0x02, 0x04, 2, 0, 0x0d));
        assert_eq!(d.level(), "RAM hit");
        assert_eq!(d.snoop(), "Hit");
        assert_eq!(d.lock(), "Yes");
        // Remote, 1 hop, lvl_num L3 miss.
        let v = ds(4, 0x04, 0x10, 0, 0, 3) | 1 << 37 | 1 << 43;
        let d = DataSrc::from_u64(v);
        assert!(d.mem_remote);
        assert_eq!(d.mem_hops, 1);
        assert_eq!(d.op(), "STORE");
        assert_eq!(d.level(), "Remote core, same node L3 miss");
        assert_eq!(d.snoop(), "HitM");
        // Both level namespaces, snoopx forward, blk data.
        let v = ds(8, 0x02 | 0x40, 0x04, 0, 0, 3) | 1 << 38 | 2 << 40;
        let d = DataSrc::from_u64(v);
        assert_eq!(d.op(), "PFETCH");
        assert_eq!(d.level(), "L3 or L3 hit");
        assert_eq!(d.snoop(), "Hit or Fwd");
        assert_eq!(d.blk(), "Data");
        assert_eq!(DataSrc::from_u64(0).level(), "N/A");
        assert_eq!(DataSrc::from_u64(0).op(), "No");
    }

    /// `PERF_MEM_NA` as perf 6.1's headers spell it, and with the level number "not
    /// available" that newer kernels add (what cpu-clock samples carry here).
    const MEM_NA: u64 = 0x01 | 0x01 << 5 | 0x01 << 19 | 0x01 << 24 | 0x01 << 26;
    const MEM_NA_LVLNUM: u64 = MEM_NA | 0x0f << 33;

    fn informative(v: u64) -> bool {
        DataSrc::from_u64(v).is_informative()
    }

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

    /// `v` with the fields past `mem_dtlb`.
    fn ext(v: u64, lvlnum: u64, remote: bool, snoopx: u64, hops: u64) -> u64 {
        v | lvlnum << 33 | u64::from(remote) << 37 | snoopx << 38 | hops << 43
    }

    #[test]
    fn operation_lock_snoop() {
        let d = DataSrc::from_u64(ds(2, 0x02 | 0x40, 0x10, 2, 0, 0));
        assert!(d.is_load() && !d.is_store() && d.is_locked());
        assert!(d.snoop_hitm() && !d.snoop_hit() && !d.snoop_peer());
        let d = DataSrc::from_u64(ext(ds(4, 0x02 | 0x08, 0x04, 1, 0, 0), 0, false, 2, 0));
        assert!(d.is_store() && !d.is_load() && !d.is_locked());
        assert!(d.snoop_hit() && !d.snoop_hitm() && d.snoop_peer());
        // Snoop extension FWD is no peer; PFETCH and EXEC are neither load nor store.
        let d = DataSrc::from_u64(ext(ds(8 | 16, 0, 0, 0, 0, 0), 0, false, 1, 0));
        assert!(!d.snoop_peer() && !d.is_load() && !d.is_store());
    }

    #[test]
    fn mem_lvl_bit_by_bit() {
        let all = [
            (MemLvl::Na, 0x01),
            (MemLvl::Hit, 0x02),
            (MemLvl::Miss, 0x04),
            (MemLvl::L1, 0x08),
            (MemLvl::Lfb, 0x10),
            (MemLvl::L2, 0x20),
            (MemLvl::L3, 0x40),
            (MemLvl::LocalRam, 0x80),
            (MemLvl::RemoteRam, 0x100),
            (MemLvl::RemoteRam, 0x200),
            (MemLvl::RemoteCache, 0x400),
            (MemLvl::RemoteCache, 0x800),
            (MemLvl::Io, 0x1000),
            (MemLvl::Uncached, 0x2000),
        ];
        for (l, bit) in all {
            let d = DataSrc::from_u64(ds(2, bit, 0, 0, 0, 0));
            for (m, _) in all {
                assert_eq!(d.lvl(m), m == l, "{bit:#x} {m:?}");
            }
        }
        // The level number is another namespace: no mem_lvl bit.
        let d = DataSrc::from_u64(ds(2, 0x02, 0, 0, 0, 1));
        assert!(d.lvl(MemLvl::Hit) && !d.lvl(MemLvl::L1));
    }

    #[test]
    fn remote_without_hops_is_unnamed() {
        assert!(DataSrc::from_u64(ext(ds(2, 0x04, 0, 0, 0, 0), 0, true, 0, 0)).remote_unnamed());
        assert!(!DataSrc::from_u64(ext(ds(2, 0x04, 0, 0, 0, 0), 0, true, 0, 1)).remote_unnamed());
        assert!(!DataSrc::from_u64(ext(ds(2, 0x04, 0, 0, 0, 0), 0, false, 0, 0)).remote_unnamed());
    }

    /// Which of the served-from predicates hold for `v`, in the order l1, lfb, l2, l3,
    /// dram, local dram, remote dram, remote cache.
    fn served(v: u64) -> [bool; 8] {
        let d = DataSrc::from_u64(v);
        [
            d.l1_hit(),
            d.lfb_hit(),
            d.l2_hit(),
            d.l3_hit(),
            d.dram_hit(),
            d.local_dram_hit(),
            d.remote_dram_hit(),
            d.remote_cache(),
        ]
    }

    #[test]
    fn served_from_either_level_namespace() {
        const T: bool = true;
        const F: bool = false;
        let hit = |lvl: u64| ds(2, 0x02 | lvl, 0, 0, 0, 0);
        let num = |n: u64, remote: bool| ext(ds(2, 0x02, 0, 0, 0, 0), n, remote, 0, 0);
        for (v, want) in [
            // mem_lvl.
            (hit(0x08), [T, F, F, F, F, F, F, F]),
            (hit(0x10), [F, T, F, F, F, F, F, F]),
            (hit(0x20), [F, F, T, F, F, F, F, F]),
            (hit(0x40), [F, F, F, T, F, F, F, F]),
            (hit(0x80), [F, F, F, F, T, T, F, F]),
            (hit(0x100), [F, F, F, F, T, F, T, F]),
            (hit(0x200), [F, F, F, F, T, F, T, F]),
            (hit(0x400), [F, F, F, F, F, F, F, T]),
            (hit(0x800), [F, F, F, F, F, F, F, T]),
            (hit(0x1000 | 0x2000), [F; 8]),
            // A miss is served from none of them; a remote cache is one hit or not.
            (ds(2, 0x04 | 0x08 | 0x80, 0, 0, 0, 0), [F; 8]),
            (ds(2, 0x04 | 0x400, 0, 0, 0, 0), [F, F, F, F, F, F, F, T]),
            // mem_lvl_num, local.
            (num(1, false), [T, F, F, F, F, F, F, F]),
            (num(0x0c, false), [F, T, F, F, F, F, F, F]),
            (num(2, false), [F, F, T, F, F, F, F, F]),
            (num(3, false), [F, F, F, T, F, F, F, F]),
            (num(0x0d, false), [F, F, F, F, T, T, F, F]),
            (num(4, false), [F; 8]),
            (num(0x0e, false), [F; 8]),
            // mem_lvl_num, remote: a remote cache level is a remote cache, remote RAM
            // is remote DRAM; uncached, CXL, I/O, PMEM and N/A are none.
            (num(1, true), [F, F, F, F, F, F, F, T]),
            (num(3, true), [F, F, F, F, F, F, F, T]),
            (num(4, true), [F, F, F, F, F, F, F, T]),
            (num(5, true), [F, F, F, F, F, F, F, T]),
            (num(6, true), [F, F, F, F, F, F, F, T]),
            (num(0x0b, true), [F, F, F, F, F, F, F, T]),
            (num(0x0c, true), [F, F, F, F, F, F, F, T]),
            (num(0x0d, true), [F, F, F, F, T, F, T, F]),
            (num(0x08, true), [F; 8]),
            (num(0x09, true), [F; 8]),
            (num(0x0a, true), [F; 8]),
            (num(0x0e, true), [F; 8]),
            (num(0x0f, true), [F; 8]),
            // Both namespaces: either says it.
            (ext(hit(0x40), 3, false, 0, 0), [F, F, F, T, F, F, F, F]),
            (ext(hit(0x08), 0x0d, false, 0, 0), [T, F, F, F, T, T, F, F]),
        ] {
            assert_eq!(served(v), want, "{v:#x}");
        }
    }
}
