//! JIT symbol maps: `/tmp/perf-PID.map`, one `START SIZE NAME` line (hex) per function.

use std::path::Path;

/// The largest perf map read (a busy JIT writes some 100 bytes per compiled function).
pub const MAX_PERF_MAP: u64 = 1 << 30;

/// One JIT function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitSym {
    /// Start address.
    pub start: u64,
    /// Size in bytes.
    pub size: u64,
    /// Name (may contain spaces).
    pub name: String,
}

/// A parsed perf map, sorted by start address.
#[derive(Clone, Debug, Default)]
pub struct PerfMap {
    syms: Vec<JitSym>,
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim_start_matches("0x").trim_start_matches("0X"), 16).ok()
}

impl PerfMap {
    /// Parses perf map text; malformed lines are skipped.
    pub fn parse(text: &str) -> PerfMap {
        let mut syms: Vec<JitSym> = text
            .lines()
            .filter_map(|line| {
                let mut it = line.trim().splitn(3, ' ');
                let start = hex(it.next()?)?;
                let size = hex(it.next()?)?;
                let name = it.next()?.trim().to_string();
                Some(JitSym { start, size, name })
            })
            .collect();
        syms.sort_by_key(|s| s.start);
        PerfMap { syms }
    }

    /// Reads the map at `path`, `None` when it cannot be read, is not a regular file (a
    /// FIFO is never opened) or is larger than [`MAX_PERF_MAP`].
    pub fn load(path: &Path) -> Option<PerfMap> {
        hwprof_pmu::file::read(path, MAX_PERF_MAP)
            .ok()
            .map(|b| PerfMap::parse(&String::from_utf8_lossy(&b)))
    }

    /// The function containing `addr`. A later entry wins over an earlier overlapping one
    /// only when it starts later (JITs rarely reuse ranges within one map).
    pub fn lookup(&self, addr: u64) -> Option<&JitSym> {
        let i = self.syms.partition_point(|s| s.start <= addr);
        let s = self.syms.get(i.checked_sub(1)?)?;
        (addr - s.start < s.size.max(1)).then_some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_lookup() {
        let m = PerfMap::parse("7f0000001000 40 jitted fn one\n0x7f0000002000 0x10 two\nbad\n");
        assert_eq!(
            m.lookup(0x7f000000103f).map(|s| s.name.as_str()),
            Some("jitted fn one")
        );
        assert!(m.lookup(0x7f0000001040).is_none());
        assert_eq!(
            m.lookup(0x7f0000002000).map(|s| s.name.as_str()),
            Some("two")
        );
        assert!(m.lookup(0x10).is_none());
    }
}
