//! Naming the addresses of slow calls' stacks with the one process model: the probe's
//! live MMAP/COMM/FORK/EXIT records (and `/proc/PID/maps` of processes they say nothing
//! of) feed a [`Processes`] as a recording's replay does, so that each hit's addresses
//! are normalized against its process's mappings at its time (an exec'd target's
//! earlier hits keep the old program's names); the symbolizer names each distinct
//! (module, offset) once.
//!
//! The records come ring by ring, so a hit can come before the MMAP2 of its own exec
//! written on another CPU's ring: the side-band records are held ([`SideBand`]) and the
//! hits normalized in time order once the run is over ([`Stacks::normalize`]).

use std::collections::HashSet;
use std::path::PathBuf;

use hwprof_sampler::record::Record;
use hwprof_sampler::synth;

use hwprof_symbolize::process::{Processes, base};
use hwprof_symbolize::profile::TRUNCATED;
use hwprof_symbolize::replay::{SideBand, event};
use hwprof_symbolize::unwind::stream::TRUNCATED_MARK;
use hwprof_symbolize::{Locator, Module, ModuleId, Symbolizer};

pub use super::calls::{Hit, NO_STACK, StackRef};

/// Callchain markers (`PERF_CONTEXT_*`) are the top 4 KiB of the address space.
const CONTEXT_MARKERS: u64 = 0xffff_ffff_ffff_f000;

/// One address of a stack, normalized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Loc {
    /// The truncation mark of an unwound stack.
    Truncated,
    /// An address no mapping of its process covered.
    Addr(u64),
    /// An offset in a module of [`Stacks::procs`].
    At(ModuleId, u64),
}

/// The processes of a probe run and its hits' stacks.
pub struct Stacks {
    procs: Processes,
    side: SideBand,
    /// Records seen: the position of the next one.
    seq: u64,
    /// Per [`StackRef`] until normalized: its addresses and its position.
    raw: Vec<(u64, Vec<u64>)>,
    /// Per [`StackRef`] once normalized: the id of its locations in `normal`.
    normal_of: Vec<u32>,
    normal: hwprof_symbolize::intern::Interner<Vec<Loc>>,
    sym: Symbolizer,
    /// Processes whose `/proc/PID/maps` was read.
    fetched: HashSet<u32>,
}

impl Stacks {
    /// No process known yet; files are found under `symfs` when given (`--symfs`).
    pub fn new(symfs: Option<PathBuf>) -> Stacks {
        Stacks {
            procs: Processes::default(),
            side: SideBand::default(),
            seq: 0,
            raw: Vec::new(),
            normal_of: Vec::new(),
            normal: Default::default(),
            sym: Symbolizer::with_locator(false, false, Locator::from_env(symfs)),
            fetched: HashSet::new(),
        }
    }

    /// Reads the file mappings of the running process `pid` from `/proc/PID/maps`
    /// (none when unreadable): its state before any record.
    pub fn read_proc(&mut self, pid: u32) {
        if !self.fetched.insert(pid) {
            return;
        }
        for m in synth::read_maps(pid as i32)
            .into_iter()
            .filter(|m| m.path.starts_with('/'))
        {
            self.procs.add_code(pid, m.start, m.end, m.pgoff, &m.path);
        }
    }

    /// Takes one live record that is not a sample: held until the hits reach its time.
    pub fn record(&mut self, rec: &Record<'_>) {
        let seq = self.seq;
        self.seq += 1;
        if let Some(ev) = event(rec, false, self.procs.forgets_exited()) {
            self.side.push(rec.time().unwrap_or(0), (seq, 0), ev);
        }
    }

    /// Holds the callchain of a hit (the record just taken is its sample).
    pub fn hold(&mut self, stack: Vec<u64>) -> StackRef {
        let seq = self.seq;
        self.seq += 1;
        if stack.is_empty() {
            return NO_STACK;
        }
        self.raw.push((seq, stack));
        (self.raw.len() - 1) as StackRef
    }

    /// Normalizes every hit's stack against its process's mappings at its time, in
    /// time order; the addresses are let go.
    pub fn normalize(&mut self, hits: &[Hit]) {
        let mut order: Vec<(u64, u64, u32, StackRef)> = hits
            .iter()
            .filter_map(|h| {
                let (seq, _) = self.raw.get(h.stack as usize)?;
                Some((h.time, *seq, h.pid, h.stack))
            })
            .collect();
        order.sort_unstable();
        self.normal_of = vec![u32::MAX; self.raw.len()];
        for (time, seq, pid, r) in order {
            self.side
                .advance(&mut self.procs, pid, (Some(time), (seq, 0)));
            let addrs = self
                .raw
                .get_mut(r as usize)
                .map(|(_, a)| std::mem::take(a))
                .unwrap_or_default();
            let locs: Vec<Loc> = addrs
                .iter()
                .filter(|&&a| a < CONTEXT_MARKERS)
                .map(|&a| self.loc(pid, a))
                .collect();
            if let Some(slot) = self.normal_of.get_mut(r as usize) {
                *slot = self.normal.id(locs);
            }
        }
        self.raw = Vec::new();
    }

    /// Where `addr` of `pid` is now; a process the records say nothing of is read from
    /// `/proc` (once).
    fn loc(&mut self, pid: u32, addr: u64) -> Loc {
        if addr == TRUNCATED_MARK {
            return Loc::Truncated;
        }
        if let Some((m, off)) = self.procs.code_at(pid, addr) {
            return Loc::At(m, off);
        }
        if !self.fetched.contains(&pid) {
            self.read_proc(pid);
            if let Some((m, off)) = self.procs.code_at(pid, addr) {
                return Loc::At(m, off);
            }
        }
        Loc::Addr(addr)
    }

    /// What finding files did that a user should know (see [`Locator::notices`]).
    pub fn notices(&self) -> Vec<String> {
        self.sym.locator().notices()
    }

    /// `function (file)` for each user address of `stack` (of a hit of `_pid`, its
    /// locations already its process's), innermost first; addresses no mapping covered
    /// are printed in hex.
    pub fn names(&mut self, _pid: u32, stack: &StackRef) -> Vec<String> {
        let Some(locs) = self
            .normal_of
            .get(*stack as usize)
            .and_then(|&id| self.normal.get(id))
        else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(locs.len());
        for (i, &loc) in locs.iter().enumerate() {
            match loc {
                Loc::Truncated => out.push(TRUNCATED.to_string()),
                Loc::Addr(addr) => out.push(format!("{addr:#x}")),
                Loc::At(m, off) => {
                    let name = match self.procs.module(m) {
                        Some(Module::File { path, .. }) => {
                            let id = self.sym.module_id(Module::File {
                                path: path.clone(),
                                build_id: None,
                            });
                            let frames = self.sym.resolve_one(id, off, i > 0);
                            frames
                                .last()
                                .and_then(|f| f.function.clone())
                                .map(|f| format!("{f} ({})", base(path)))
                                .unwrap_or_else(|| format!("{}+{off:#x}", base(path)))
                        }
                        Some(
                            Module::Anon { name, .. }
                            | Module::Other { name }
                            | Module::KernelModule { name },
                        ) => format!("{}+{off:#x}", base(name)),
                        _ => format!("{off:#x}"),
                    };
                    out.push(name);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwprof_sampler::record::{Body, Header, Mmap, SampleId};

    const P: u32 = 4242;

    fn rec(time: u64, body: Body<'_>) -> Record<'_> {
        Record {
            header: Header::default(),
            attr: Some(0),
            sample_id: Some(SampleId {
                time: Some(time),
                ..SampleId::default()
            }),
            body,
        }
    }

    fn exec(time: u64, name: &str) -> Record<'_> {
        rec(
            time,
            Body::Comm {
                pid: P,
                tid: P,
                comm: name.as_bytes(),
                exec: true,
            },
        )
    }

    fn mmap(time: u64, path: &str) -> Record<'_> {
        rec(
            time,
            Body::Mmap(Mmap {
                pid: P,
                tid: P,
                addr: 0x40_0000,
                len: 0x1000,
                pgoff: 0x1000,
                filename: path.as_bytes(),
            }),
        )
    }

    fn hit(time: u64, stack: StackRef) -> Hit {
        Hit {
            time,
            pid: P,
            tid: P,
            event: 0,
            stack,
        }
    }

    /// A target that execs: its hits before the exec keep the old program's names, even
    /// one that comes (on its CPU's ring) after the new program's records; a hit before
    /// any mapping of its process is an address.
    #[test]
    fn hits_are_named_against_their_process_at_their_time() {
        let mut s = Stacks::new(None);
        let early = s.hold(vec![0x40_0010]);
        s.record(&exec(10, "a"));
        s.record(&mmap(11, "/nonexistent/a"));
        let before = s.hold(vec![0x40_0010, 0x40_0020]);
        s.record(&exec(30, "b"));
        s.record(&mmap(31, "/nonexistent/b"));
        let after = s.hold(vec![0x40_0030]);
        // Another CPU's ring, drained last: a hit of the old program.
        let late = s.hold(vec![0x40_0040, TRUNCATED_MARK]);
        let hits = [
            hit(5, early),
            hit(20, before),
            hit(40, after),
            hit(25, late),
            hit(50, NO_STACK),
        ];
        s.normalize(&hits);
        let names: Vec<Vec<String>> = hits.iter().map(|h| s.names(P, &h.stack)).collect();
        assert_eq!(
            names,
            [
                vec!["0x400010".to_string()],
                vec!["a+0x1010".into(), "a+0x1020".into()],
                vec!["b+0x1030".into()],
                vec!["a+0x1040".into(), TRUNCATED.into()],
                vec![],
            ]
        );
    }
}
