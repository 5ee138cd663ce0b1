//! Address spaces: the mappings of one process (or of the kernel) at one point of a
//! recording, updated as MMAP/MMAP2 records arrive.

use crate::module::ModuleId;

/// One mapping: `[start, end)` of a module, `pgoff` its file offset at `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mapping {
    pub start: u64,
    pub end: u64,
    pub pgoff: u64,
    pub module: ModuleId,
}

/// Non-overlapping mappings sorted by start.
#[derive(Clone, Debug, Default)]
pub(crate) struct AddrSpace {
    maps: Vec<Mapping>,
    /// Set by the owner whenever the mappings change (a value never given to another
    /// space), so that what is derived from them (an unwinder's modules) can be reused
    /// until then.
    pub version: u64,
}

impl AddrSpace {
    /// Adds `m`, replacing whatever it overlaps (a later mmap over an earlier one wins;
    /// the remaining pieces of a split mapping keep their file offsets right).
    pub fn insert(&mut self, m: Mapping) {
        if m.end <= m.start {
            return;
        }
        let mut out = Vec::with_capacity(self.maps.len() + 2);
        for &o in &self.maps {
            if o.end <= m.start || o.start >= m.end {
                out.push(o);
                continue;
            }
            if o.start < m.start {
                out.push(Mapping { end: m.start, ..o });
            }
            if o.end > m.end {
                out.push(Mapping {
                    start: m.end,
                    pgoff: o.pgoff.wrapping_add(m.end - o.start),
                    ..o
                });
            }
        }
        let at = out.partition_point(|o| o.start < m.start);
        out.insert(at, m);
        self.maps = out;
    }

    /// The mapping containing `addr`.
    pub fn find(&self, addr: u64) -> Option<&Mapping> {
        let i = self.maps.partition_point(|o| o.start <= addr);
        let m = self.maps.get(i.checked_sub(1)?)?;
        (addr < m.end).then_some(m)
    }

    /// The mappings, sorted by start.
    pub fn iter(&self) -> impl Iterator<Item = &Mapping> {
        self.maps.iter()
    }

    /// Forgets every mapping (exec).
    pub fn clear(&mut self) {
        self.maps.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(start: u64, end: u64, pgoff: u64, module: ModuleId) -> Mapping {
        Mapping {
            start,
            end,
            pgoff,
            module,
        }
    }

    #[test]
    fn later_mappings_split_earlier_ones() {
        let mut a = AddrSpace::default();
        a.insert(m(0x1000, 0x5000, 0, 1));
        a.insert(m(0x2000, 0x3000, 0x100, 2));
        assert_eq!(a.find(0x1fff).unwrap().module, 1);
        assert_eq!(a.find(0x2000).unwrap().module, 2);
        let tail = a.find(0x3000).unwrap();
        assert_eq!((tail.module, tail.pgoff, tail.start), (1, 0x2000, 0x3000));
        assert!(a.find(0x5000).is_none());
        assert!(a.find(0x10).is_none());
        a.clear();
        assert!(a.find(0x1000).is_none());
    }
}
