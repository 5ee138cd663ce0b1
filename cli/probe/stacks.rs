//! Naming the addresses of slow calls' stacks: mappings (from MMAP2 records and
//! `/proc/PID/maps`, as [`hwprof_sampler::synth::Mapping`]s) give the file and offset,
//! the symbolizer names the function.

use hwprof_sampler::record::Body;
use hwprof_sampler::synth::{self, Mapping};
use std::path::PathBuf;

use hwprof_symbolize::profile::TRUNCATED;
use hwprof_symbolize::unwind::stream::TRUNCATED_MARK;
use hwprof_symbolize::{Locator, Module, Symbolizer};

/// A mapping of a process.
#[derive(Clone, Debug)]
pub struct PidMapping {
    /// The process id.
    pub pid: u32,
    /// Its mapping.
    pub mapping: Mapping,
}

impl PidMapping {
    /// The mapping an MMAP or MMAP2 record adds; `None` for other records.
    pub fn of_record(body: &Body<'_>) -> Option<PidMapping> {
        Mapping::of_record(body).map(|(pid, mapping)| PidMapping { pid, mapping })
    }
}

/// The file mappings of process `pid` from `/proc/PID/maps` (empty when unreadable).
pub fn proc_maps(pid: i32) -> impl Iterator<Item = PidMapping> {
    synth::read_maps(pid)
        .into_iter()
        .filter(|m| m.path.starts_with('/'))
        .map(move |mapping| PidMapping {
            pid: pid as u32,
            mapping,
        })
}

/// Callchain markers (`PERF_CONTEXT_*`) are the top 4 KiB of the address space.
const CONTEXT_MARKERS: u64 = 0xffff_ffff_ffff_f000;

/// Names stack addresses.
pub struct Stacks {
    /// Each mapping with its process id, in the order they were seen.
    maps: Vec<PidMapping>,
    sym: Symbolizer,
    fetched: Vec<u32>,
}

impl Stacks {
    /// A namer over these mappings (more are read from `/proc` for unknown processes),
    /// finding files under `symfs` when given (`--symfs`).
    pub fn new(maps: Vec<PidMapping>, symfs: Option<PathBuf>) -> Stacks {
        Stacks {
            maps,
            sym: Symbolizer::with_locator(false, false, Locator::from_env(symfs)),
            fetched: Vec::new(),
        }
    }

    /// What finding files did that a user should know (see [`Locator::notices`]).
    pub fn notices(&self) -> Vec<String> {
        self.sym.locator().notices()
    }

    fn find(&mut self, pid: u32, addr: u64) -> Option<Mapping> {
        let hit = |m: &&PidMapping| m.pid == pid && addr >= m.mapping.start && addr < m.mapping.end;
        // The latest mapping wins (a later MMAP replaces an earlier one).
        if let Some(m) = self.maps.iter().rev().find(hit) {
            return Some(m.mapping.clone());
        }
        if !self.fetched.contains(&pid) {
            self.fetched.push(pid);
            self.maps.extend(proc_maps(pid as i32));
            return self.maps.iter().rev().find(hit).map(|m| m.mapping.clone());
        }
        None
    }

    /// `function (file)` for each user address of `stack`, innermost first; addresses
    /// no mapping covers are printed in hex.
    pub fn names(&mut self, pid: u32, stack: &[u64]) -> Vec<String> {
        let mut out = Vec::new();
        for (i, &addr) in stack.iter().filter(|&&a| a < CONTEXT_MARKERS).enumerate() {
            if addr == TRUNCATED_MARK {
                out.push(TRUNCATED.to_string());
                continue;
            }
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
