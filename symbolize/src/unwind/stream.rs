//! Unwinding records as they stream past, in the order they come: what `hwprof record
//! --call-graph dwarf` does while it reads the rings (so that the file holds ordinary
//! callchains), and what `hwprof script` and live views do with raw-stack samples.
//!
//! [`StreamUnwinder::record`] follows MMAP/MMAP2, COMM (exec), FORK and EXIT records
//! to keep each process's executable mappings, and unwinds every sample that carries
//! user registers and a stack copy. It never symbolizes: the result is addresses, as
//! the kernel would have written them in a user callchain.
//!
//! Records come in per-ring order (the recorder drains one CPU's ring, then the next),
//! not in time order: a process's samples on one CPU can come before the MMAPs its
//! exec wrote on another, or after its EXIT. The processes follow the rules of
//! [`Processes`] (the one process model), as a stream that has no end keeps them: an
//! exited process's mappings stay for the samples still to come, and go once
//! [`EXITED_KEPT`] other processes have exited since its EXIT or its last sample
//! (memory stays bounded on a system-wide recording of many short processes). One rule
//! is the stream's own: for **live processes** (a recording), a sample whose pc is in
//! none of its process's known mappings (its exec's MMAPs are still in another ring)
//! reads the process's executable mappings from `/proc/PID/maps`, once per state of
//! its mappings.

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use hwprof_sampler::record::{Body, Record};

use super::{Arch, Ending, FileData, Mapped, Unwinder, UserFrame, UserRegs};
use crate::Locator;
use crate::maps::Mapping;
use crate::module::{Module, ModuleId};
use crate::process::{Event, Processes};
use crate::replay::event;

/// A user-context callchain entry that marks a stack unwinding could not follow to its
/// root. It is not a canonical address on x86-64 or AArch64, so no code is there: hwprof
/// shows it as the `[truncated]` frame, perf as one `[unknown]` frame.
pub const TRUNCATED_MARK: u64 = 0x7fff_ffff_ffff_ffff;

/// How many processes may exit after an exited process's EXIT (or last sample) before
/// its mappings are dropped (see the module docs).
pub const EXITED_KEPT: usize = 256;

/// The largest `/proc/PID/maps` read (a JVM's is a few MB).
const MAX_PROC_MAPS: u64 = 64 << 20;

/// Follows a record stream's processes and unwinds its samples' user stacks.
pub struct StreamUnwinder {
    unwinder: Unwinder,
    /// Whether the processes are alive (a recording): files are then opened through
    /// `/proc/PID/root`, as the process sees them.
    live: bool,
    locator: Locator,
    /// The processes, with the rules of [`Processes`] (exited ones forgotten after
    /// [`EXITED_KEPT`] other exits).
    procs: Processes,
    /// Per file module: its unwind tables, read on first use.
    files: HashMap<ModuleId, Option<Arc<FileData>>>,
    frames: Vec<UserFrame>,
    /// Live: per process, the version of its mappings when `/proc/PID/maps` was last
    /// read for it (read again only once they change).
    from_proc: HashMap<u32, u64>,
}

impl std::fmt::Debug for StreamUnwinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamUnwinder")
            .field("unwinder", &self.unwinder)
            .field("processes", &self.procs.len())
            .field("files", &self.files.len())
            .finish()
    }
}

impl StreamUnwinder {
    /// An unwinder for a stream of `arch`; `live`: its processes are running now;
    /// `locator` finds the files of modules (the recorded paths, `--symfs`, build ids).
    pub fn new(arch: Arch, live: bool, locator: Locator) -> StreamUnwinder {
        StreamUnwinder {
            unwinder: Unwinder::new(arch),
            live,
            locator,
            procs: Processes::default().forget_exited_after(EXITED_KEPT),
            files: HashMap::default(),
            frames: Vec::new(),
            from_proc: HashMap::default(),
        }
    }

    /// How many processes' mappings are kept (running, or exited not long ago).
    pub fn processes(&self) -> usize {
        self.procs.len()
    }

    /// Stacks unwound so far, and how many of them were cut short.
    pub fn stats(&self) -> super::UnwindStats {
        self.unwinder.stats
    }

    /// Applies a side-band record, and forgets what is kept for the processes it made
    /// [`Processes`] drop.
    fn apply(&mut self, ev: Event) {
        self.procs.apply(ev);
        for pid in self.procs.take_forgotten() {
            self.from_proc.remove(&pid);
            self.unwinder.forget(pid);
        }
    }

    /// Takes a record in stream order. For a sample with user registers and a stack
    /// copy, returns its user stack (leaf first: the sampled user pc, then return
    /// addresses) and whether the unwinding reached the root.
    pub fn record(&mut self, rec: &Record<'_>) -> Option<(&[UserFrame], Ending)> {
        if let Body::Sample(s) = &rec.body {
            let (r, stack) = (s.regs_user.as_ref()?, s.stack_user.as_ref()?);
            let regs = UserRegs::from_sample(self.unwinder.arch(), r)?;
            let stack = stack
                .data
                .get(..usize::try_from(stack.dyn_size).unwrap_or(usize::MAX))
                .unwrap_or(stack.data);
            let pid = s.pid?;
            self.procs.sampled(pid);
            if self.live {
                self.cover_from_proc(pid, regs.pc);
            }
            let version = self.procs.version(pid);
            let mut frames = std::mem::take(&mut self.frames);
            frames.clear();
            let maps = if self.unwinder.is_current(pid, version) {
                Vec::new()
            } else {
                self.mapped(pid)
            };
            let ending = self
                .unwinder
                .unwind(pid, version, || maps, regs, stack, &mut frames);
            self.frames = frames;
            return Some((&self.frames, ending));
        }
        if let Some(ev) = event(rec, false, true) {
            self.apply(ev);
        }
        None
    }

    /// [`StreamUnwinder::record`] for a reader that keeps the processes itself (a
    /// replay in time order, `script`): a sample's user stack unwound against `procs`,
    /// as they are at its time. The unwinder's own processes are not used: one
    /// unwinder takes records one way or the other, not both.
    pub fn unwind_in(
        &mut self,
        procs: &Processes,
        rec: &Record<'_>,
    ) -> Option<(&[UserFrame], Ending)> {
        let Body::Sample(s) = &rec.body else {
            return None;
        };
        let (r, stack) = (s.regs_user.as_ref()?, s.stack_user.as_ref()?);
        let regs = UserRegs::from_sample(self.unwinder.arch(), r)?;
        let stack = stack
            .data
            .get(..usize::try_from(stack.dyn_size).unwrap_or(usize::MAX))
            .unwrap_or(stack.data);
        let pid = s.pid?;
        let version = procs.version(pid);
        let mut frames = std::mem::take(&mut self.frames);
        frames.clear();
        let maps = if self.unwinder.is_current(pid, version) {
            Vec::new()
        } else {
            let maps: Vec<Mapping> = procs
                .space(pid)
                .map(|s| s.iter().copied().collect())
                .unwrap_or_default();
            maps.into_iter()
                .map(|m| Mapped {
                    start: m.start,
                    end: m.end,
                    pgoff: m.pgoff,
                    file: self.file_in(procs, m.module),
                    name: String::new(),
                })
                .collect()
        };
        let ending = self
            .unwinder
            .unwind(pid, version, || maps, regs, stack, &mut frames);
        self.frames = frames;
        Some((&self.frames, ending))
    }

    /// The unwind tables of module `id` of `procs` when it is a file (not a device),
    /// read once.
    fn file_in(&mut self, procs: &Processes, id: ModuleId) -> Option<Arc<FileData>> {
        if let Some(f) = self.files.get(&id) {
            return f.clone();
        }
        let data = match procs.module(id) {
            Some(Module::File { path, build_id }) if !path.starts_with("/dev/") => {
                super::load_tables(&self.locator, path, build_id.as_ref(), None).map(Arc::new)
            }
            _ => None,
        };
        self.files.insert(id, data.clone());
        data
    }

    /// A live process's sample at `pc`, which none of its known mappings holds: its
    /// executable mappings from `/proc/PID/maps` (once per state of its mappings), for
    /// the MMAPs of its exec that another ring still holds.
    fn cover_from_proc(&mut self, pid: u32, pc: u64) {
        if self.procs.code_module(pid, pc).is_some() {
            return;
        }
        let version = self.procs.version(pid);
        if self.from_proc.get(&pid) == Some(&version) {
            return;
        }
        let path = format!("/proc/{pid}/maps");
        let text = match hwprof_pmu::file::read(std::path::Path::new(&path), MAX_PROC_MAPS) {
            Ok(b) => b,
            Err(_) => {
                self.from_proc.insert(pid, version);
                return;
            }
        };
        for line in text.split(|&b| b == b'\n') {
            let Some(m) = ProcMap::parse(line) else {
                continue;
            };
            if !m.exec {
                continue;
            }
            let name = String::from_utf8_lossy(m.name);
            self.procs.add_code(pid, m.start, m.end, m.pgoff, &name);
        }
        let version = self.procs.version(pid);
        self.from_proc.insert(pid, version);
    }

    /// The mappings of `pid`, with the unwind tables of their files (read on first use).
    fn mapped(&mut self, pid: u32) -> Vec<Mapped> {
        let Some(space) = self.procs.space(pid) else {
            return Vec::new();
        };
        let maps: Vec<Mapping> = space.iter().copied().collect();
        maps.into_iter()
            .map(|m| Mapped {
                start: m.start,
                end: m.end,
                pgoff: m.pgoff,
                file: self.file(m.module),
                name: String::new(),
            })
            .collect()
    }

    /// The unwind tables of module `id` when it is a file (not a device), read once.
    fn file(&mut self, id: ModuleId) -> Option<Arc<FileData>> {
        if let Some(f) = self.files.get(&id) {
            return f.clone();
        }
        let data = match self.procs.module(id) {
            Some(Module::File { path, build_id }) if !path.starts_with("/dev/") => {
                let live = self.live.then(|| self.procs.mapper(id)).flatten();
                super::load_tables(&self.locator, path, build_id.as_ref(), live).map(Arc::new)
            }
            _ => None,
        };
        self.files.insert(id, data.clone());
        data
    }
}

/// One line of `/proc/PID/maps`: `START-END PERMS OFFSET DEV INODE [NAME]`.
struct ProcMap<'a> {
    start: u64,
    end: u64,
    exec: bool,
    pgoff: u64,
    name: &'a [u8],
}

impl<'a> ProcMap<'a> {
    fn parse(line: &'a [u8]) -> Option<ProcMap<'a>> {
        let mut rest = line;
        let mut field = || -> Option<&'a [u8]> {
            let start = rest.iter().position(|&b| b != b' ')?;
            let tail = &rest[start..];
            let len = tail.iter().position(|&b| b == b' ').unwrap_or(tail.len());
            rest = &tail[len..];
            Some(&tail[..len])
        };
        let range = std::str::from_utf8(field()?).ok()?;
        let perms = field()?;
        let offset = std::str::from_utf8(field()?).ok()?;
        let _dev = field()?;
        let _inode = field()?;
        let (start, end) = range.split_once('-')?;
        let name = match rest.iter().position(|&b| b != b' ') {
            Some(i) => &rest[i..],
            None => &[],
        };
        Some(ProcMap {
            start: u64::from_str_radix(start, 16).ok()?,
            end: u64::from_str_radix(end, 16).ok()?,
            exec: perms.get(2) == Some(&b'x'),
            pgoff: u64::from_str_radix(offset, 16).ok()?,
            name,
        })
    }
}

/// The user part of a callchain for an unwound stack, as the kernel would have written
/// it after `PERF_CONTEXT_USER`: the frames' addresses, and [`TRUNCATED_MARK`] when the
/// unwinding did not reach the root.
///
/// Readers take every entry after the first as a return address and look up the byte
/// before it (the call). A frame below the first that is not one (a signal trampoline
/// entered at its first byte, the instruction a signal interrupted) is written one byte
/// on, so that the byte before it is the frame's own.
pub fn user_addrs(frames: &[UserFrame], ending: Ending, out: &mut Vec<u64>) {
    out.extend(frames.iter().enumerate().map(|(i, f)| {
        if i > 0 && !f.ret {
            f.addr.wrapping_add(1)
        } else {
            f.addr
        }
    }));
    if ending == Ending::Truncated {
        out.push(TRUNCATED_MARK);
    }
}

/// A sample's whole callchain with its user part from unwinding: the recorded entries
/// before any `PERF_CONTEXT_USER` (the kernel part), then `PERF_CONTEXT_USER` and
/// [`user_addrs`].
pub fn callchain(
    recorded: Option<&hwprof_sampler::record::U64s<'_>>,
    frames: &[UserFrame],
    ending: Ending,
    out: &mut Vec<u64>,
) {
    use hwprof_sampler::record::context;
    out.clear();
    if let Some(cc) = recorded {
        out.extend(cc.iter().take_while(|&a| a != context::USER));
    }
    out.push(context::USER);
    user_addrs(frames, ending, out);
}

#[cfg(test)]
mod tests;
