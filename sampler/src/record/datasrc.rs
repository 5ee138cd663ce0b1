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
}
