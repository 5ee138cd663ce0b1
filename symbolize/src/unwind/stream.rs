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
//! exec wrote on another, or after its EXIT. The rules:
//! - **a thread's exit** (EXIT with `tid != pid`) changes nothing: the other threads
//!   keep the process's mappings;
//! - **a process's exit** (EXIT of its main thread, `tid == pid`, which also comes
//!   first when `main` calls `pthread_exit` and the others run on) only marks it: its
//!   mappings stay for the samples still to come, and go once [`EXITED_KEPT`] other
//!   processes have exited since its EXIT or its last sample (memory stays bounded on
//!   a system-wide recording of many short processes);
//! - **a pid reused** (a FORK that makes a new process with it) or **an exec** (COMM
//!   with `exec`) starts the process's mappings anew, whatever was kept;
//! - **live processes** (a recording): a sample whose pc is in none of its process's
//!   known mappings (its exec's MMAPs are still in another ring) reads the process's
//!   executable mappings from `/proc/PID/maps`, once per state of its mappings.

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use hwprof_sampler::record::{Body, FileId, Record};

use super::{Arch, Ending, FileData, Mapped, Unwinder, UserFrame, UserRegs};
use crate::Locator;
use crate::maps::{AddrSpace, Mapping};

/// A user-context callchain entry that marks a stack unwinding could not follow to its
/// root. It is not a canonical address on x86-64 or AArch64, so no code is there: hwprof
/// shows it as the `[truncated]` frame, perf as one `[unknown]` frame.
pub const TRUNCATED_MARK: u64 = 0x7fff_ffff_ffff_ffff;

/// `PERF_RECORD_MISC_MMAP_DATA`.
const MISC_MMAP_DATA: u16 = 1 << 13;

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
    spaces: HashMap<u32, AddrSpace>,
    versions: u64,
    /// Mapped files by (path, build id), and their unwind tables.
    module_ids: HashMap<(String, Option<Vec<u8>>), u32>,
    files: Vec<Option<Arc<FileData>>>,
    /// Files not yet loaded (index = module id).
    pending: Vec<Option<PendingFile>>,
    frames: Vec<UserFrame>,
    /// Processes whose main thread exited: pid → the value of `exits` at its EXIT or
    /// its last sample since.
    exited: HashMap<u32, u64>,
    /// Processes that exited so far.
    exits: u64,
    /// Live: per process, the version of its mappings when `/proc/PID/maps` was last
    /// read for it (read again only once they change).
    from_proc: HashMap<u32, u64>,
}

impl std::fmt::Debug for StreamUnwinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamUnwinder")
            .field("unwinder", &self.unwinder)
            .field("processes", &self.spaces.len())
            .field("files", &self.files.len())
            .finish()
    }
}

/// A mapped file not yet read: its path, build id, and a process that maps it.
type PendingFile = (String, Option<Vec<u8>>, u32);

/// Module id of mappings that are not files (anonymous memory, `[vdso]`): no tables.
const NO_FILE: u32 = u32::MAX;

impl StreamUnwinder {
    /// An unwinder for a stream of `arch`; `live`: its processes are running now;
    /// `locator` finds the files of modules (the recorded paths, `--symfs`, build ids).
    pub fn new(arch: Arch, live: bool, locator: Locator) -> StreamUnwinder {
        StreamUnwinder {
            unwinder: Unwinder::new(arch),
            live,
            locator,
            spaces: HashMap::default(),
            versions: 0,
            module_ids: HashMap::default(),
            files: Vec::new(),
            pending: Vec::new(),
            frames: Vec::new(),
            exited: HashMap::default(),
            exits: 0,
            from_proc: HashMap::default(),
        }
    }

    /// How many processes' mappings are kept (running, or exited not long ago).
    pub fn processes(&self) -> usize {
        self.spaces.len()
    }

    /// Stacks unwound so far, and how many of them were cut short.
    pub fn stats(&self) -> super::UnwindStats {
        self.unwinder.stats
    }

    fn bump(&mut self, pid: u32) {
        self.versions += 1;
        let v = self.versions;
        self.spaces.entry(pid).or_default().version = v;
    }

    fn module(&mut self, pid: u32, name: &[u8], build_id: Option<&[u8]>) -> u32 {
        let name = String::from_utf8_lossy(name);
        if !name.starts_with('/') || name.starts_with("/memfd:") || name.starts_with("/dev/") {
            return NO_FILE;
        }
        let key = (name.into_owned(), build_id.map(<[u8]>::to_vec));
        if let Some(&id) = self.module_ids.get(&key) {
            return id;
        }
        let id = self.files.len() as u32;
        self.files.push(None);
        self.pending.push(Some((key.0.clone(), key.1.clone(), pid)));
        self.module_ids.insert(key, id);
        id
    }

    fn mmap(&mut self, pid: u32, misc: u16, addr: u64, len: u64, pgoff: u64, module: u32) {
        if misc & MISC_MMAP_DATA != 0 || pid == u32::MAX {
            return;
        }
        self.spaces.entry(pid).or_default().insert(Mapping {
            start: addr,
            end: addr.saturating_add(len),
            pgoff,
            module,
        });
        self.bump(pid);
    }

    /// Takes a record in stream order. For a sample with user registers and a stack
    /// copy, returns its user stack (leaf first: the sampled user pc, then return
    /// addresses) and whether the unwinding reached the root.
    pub fn record(&mut self, rec: &Record<'_>) -> Option<(&[UserFrame], Ending)> {
        let misc = rec.header.misc;
        match &rec.body {
            Body::Mmap(m) => {
                let id = self.module(m.pid, m.filename, None);
                self.mmap(m.pid, misc, m.addr, m.len, m.pgoff, id);
                None
            }
            Body::Mmap2(m) => {
                let bid = match m.file_id {
                    FileId::BuildId(b) if !b.is_empty() => Some(b),
                    _ => None,
                };
                let id = self.module(m.pid, m.filename, bid);
                self.mmap(m.pid, misc, m.addr, m.len, m.pgoff, id);
                None
            }
            Body::Comm {
                pid, exec: true, ..
            } => {
                if let Some(s) = self.spaces.get_mut(pid) {
                    s.clear();
                }
                self.bump(*pid);
                None
            }
            Body::Fork(t) => {
                if t.pid != t.ppid {
                    // A new process: whatever an exited one of this pid left is not its.
                    self.exited.remove(&t.pid);
                    let copy = self.spaces.get(&t.ppid).cloned().unwrap_or_default();
                    self.spaces.insert(t.pid, copy);
                    self.bump(t.pid);
                }
                None
            }
            Body::Exit(t) => {
                // A thread's exit leaves the process as it is; the process's, for a
                // while (see the module docs).
                if t.pid == t.tid {
                    self.exits += 1;
                    self.exited.insert(t.pid, self.exits);
                    self.drop_long_exited();
                }
                None
            }
            Body::Sample(s) => {
                let (r, stack) = (s.regs_user.as_ref()?, s.stack_user.as_ref()?);
                let regs = UserRegs::from_sample(self.unwinder.arch(), r)?;
                let stack = stack
                    .data
                    .get(..usize::try_from(stack.dyn_size).unwrap_or(usize::MAX))
                    .unwrap_or(stack.data);
                let pid = s.pid?;
                if let Some(seen) = self.exited.get_mut(&pid) {
                    *seen = self.exits;
                }
                if self.live {
                    self.cover_from_proc(pid, regs.pc);
                }
                let version = self.spaces.get(&pid).map_or(0, |s| s.version);
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
                Some((&self.frames, ending))
            }
            _ => None,
        }
    }

    /// Drops the mappings of the processes that exited longest ago once more than
    /// [`EXITED_KEPT`] are kept: the older half, at once (so the sort is paid once per
    /// `EXITED_KEPT / 2` exits).
    fn drop_long_exited(&mut self) {
        if self.exited.len() <= EXITED_KEPT {
            return;
        }
        let mut by_age: Vec<(u64, u32)> = self.exited.iter().map(|(&p, &e)| (e, p)).collect();
        by_age.sort_unstable();
        for &(_, pid) in by_age.iter().take(self.exited.len() - EXITED_KEPT / 2) {
            self.exited.remove(&pid);
            self.spaces.remove(&pid);
            self.from_proc.remove(&pid);
            self.unwinder.forget(pid);
        }
    }

    /// A live process's sample at `pc`, which none of its known mappings holds: its
    /// executable mappings from `/proc/PID/maps` (once per state of its mappings), for
    /// the MMAPs of its exec that another ring still holds.
    fn cover_from_proc(&mut self, pid: u32, pc: u64) {
        let space = self.spaces.get(&pid);
        if space.is_some_and(|s| s.find(pc).is_some()) {
            return;
        }
        let version = space.map_or(0, |s| s.version);
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
            let id = self.module(pid, m.name, None);
            self.spaces.entry(pid).or_default().insert(Mapping {
                start: m.start,
                end: m.end,
                pgoff: m.pgoff,
                module: id,
            });
        }
        self.bump(pid);
        let version = self.spaces.get(&pid).map_or(0, |s| s.version);
        self.from_proc.insert(pid, version);
    }

    /// The mappings of `pid`, with the unwind tables of their files (read on first use).
    fn mapped(&mut self, pid: u32) -> Vec<Mapped> {
        let Some(space) = self.spaces.get(&pid) else {
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

    fn file(&mut self, id: u32) -> Option<Arc<FileData>> {
        let i = id as usize;
        if let Some(Some((path, bid, pid))) = self.pending.get_mut(i).map(Option::take) {
            let live = self.live.then_some(pid);
            let data = super::load_tables(&self.locator, &path, bid.as_deref(), live);
            if let Some(slot) = self.files.get_mut(i) {
                *slot = data.map(Arc::new);
            }
        }
        self.files.get(i).cloned().flatten()
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
