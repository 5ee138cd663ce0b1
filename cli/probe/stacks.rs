//! Naming the addresses of slow calls' stacks: mappings (from MMAP2 records and
//! `/proc/PID/maps`) give the file and offset, the symbolizer names the function.

use hwprof_symbolize::{Module, Symbolizer};

/// One file mapping of a process.
#[derive(Debug, Clone)]
pub struct Mapping {
    /// Process id.
    pub pid: u32,
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// The mapped file.
    pub path: String,
}

/// The file mappings of process `pid` from `/proc/PID/maps` (empty when unreadable).
pub fn proc_maps(pid: i32) -> Vec<Mapping> {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (range, _perms, off) = (f.next()?, f.next()?, f.next()?);
            let path = f.nth(2)?;
            if !path.starts_with('/') {
                return None;
            }
            let (s, e) = range.split_once('-')?;
            Some(Mapping {
                pid: pid as u32,
                start: u64::from_str_radix(s, 16).ok()?,
                end: u64::from_str_radix(e, 16).ok()?,
                pgoff: u64::from_str_radix(off, 16).ok()?,
                path: path.to_string(),
            })
        })
        .collect()
}

/// Callchain markers (`PERF_CONTEXT_*`) are the top 4 KiB of the address space.
const CONTEXT_MARKERS: u64 = 0xffff_ffff_ffff_f000;

/// Names stack addresses.
pub struct Stacks {
    maps: Vec<Mapping>,
    sym: Symbolizer,
    fetched: Vec<u32>,
}

impl Stacks {
    /// A namer over these mappings (more are read from `/proc` for unknown processes).
    pub fn new(maps: Vec<Mapping>) -> Stacks {
        Stacks {
            maps,
            sym: Symbolizer::new(false, false),
            fetched: Vec::new(),
        }
    }

    fn find(&mut self, pid: u32, addr: u64) -> Option<Mapping> {
        let hit = |m: &&Mapping| m.pid == pid && addr >= m.start && addr < m.end;
        // The latest mapping wins (a later MMAP replaces an earlier one).
        if let Some(m) = self.maps.iter().rev().find(hit) {
            return Some(m.clone());
        }
        if !self.fetched.contains(&pid) {
            self.fetched.push(pid);
            self.maps.extend(proc_maps(pid as i32));
            return self.maps.iter().rev().find(hit).cloned();
        }
        None
    }

    /// `function (file)` for each user address of `stack`, innermost first; addresses
    /// no mapping covers are printed in hex.
    pub fn names(&mut self, pid: u32, stack: &[u64]) -> Vec<String> {
        let mut out = Vec::new();
        for (i, &addr) in stack.iter().filter(|&&a| a < CONTEXT_MARKERS).enumerate() {
            let Some(m) = self.find(pid, addr) else {
                out.push(format!("{addr:#x}"));
                continue;
            };
            let off = addr - m.start + m.pgoff;
            let id = self.sym.module_id(Module::File {
                path: m.path.clone(),
                build_id: None,
            });
            let frames = self.sym.resolve_one(id, off, i > 0);
            let base = m.path.rsplit('/').next().unwrap_or(&m.path);
            match frames.last().and_then(|f| f.function.clone()) {
                Some(f) => out.push(format!("{f} ({base})")),
                None => out.push(format!("{base}+{off:#x}")),
            }
        }
        out
    }
}
