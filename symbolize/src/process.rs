//! [`Processes`]: the one model of what a recording's processes look like at a point of
//! it — per pid a versioned address space (the executable mappings, and, when asked,
//! every mapping for data addresses), the comm of each thread, the kernel's space, and
//! the module table the mappings point into. Every reader builds it from the same
//! side-band records ([`Event`]) with the same rules; [`crate::replay`] feeds it in time
//! order.
//!
//! # Rules
//!
//! - **MMAP/MMAP2** of pid `u32::MAX` goes to the kernel's space; any other to its
//!   process's: executable mappings (no `PERF_RECORD_MISC_MMAP_DATA`) to its code space,
//!   which gets a new version; with [`Processes::with_data`], every mapping (code or
//!   data) also to its data space. A later mapping replaces what it overlaps.
//! - **exec** (COMM with `exec`): the process's code and data mappings are forgotten
//!   (new version); the thread's comm is the new name.
//! - **COMM**: the thread's comm (and the process's, for its main thread).
//! - **FORK of a new process** (`pid != ppid`) whose parent is known: the child gets a
//!   copy of the parent's mappings (new version). Whose parent is unknown: the child
//!   gets an empty space (new version) — a pid seen before belonged to a process that
//!   is gone, and its mappings are not the child's. (The time-ordered replay applies a
//!   child's FORK only once its parent's records up to it are applied, so a parent is
//!   unknown only when the recording holds nothing of it.) Either way a known parent
//!   thread's (else process's) comm is the new thread's; a new process is no longer
//!   marked exited.
//! - **FORK of a thread** (`pid == ppid`): the new thread's comm is its parent's.
//! - **EXIT of a thread** (`tid != pid`) changes nothing: the other threads keep the
//!   process's mappings.
//! - **EXIT of a process** (its main thread, which also comes first when `main` calls
//!   `pthread_exit` and the others run on) only marks it: its mappings stay, for the
//!   samples that follow it (another CPU's ring, or the other threads). A reader of an
//!   endless stream ([`Processes::forget_exited_after`]) drops them once that many
//!   other processes have exited since its EXIT or its last sample; a recording's
//!   replay keeps them (the file bounds them, and a late sample must still resolve).
//!   A later FORK or exec of the pid replaces them.
//! - **a sample before its own exec's MMAP2** (written on another CPU's ring, so
//!   before it in the file): not a rule of this type but of the replay, which applies
//!   each process's side-band records up to each of its samples' time.
//!
//! Mappings are classified by name once ([`classify`], [`MapKind`]), as perf's
//! `DsoKey::detect` does, into the [`Module`] their addresses resolve in.

pub mod fds;

use rustc_hash::FxHashMap as HashMap;

use crate::buildid::BuildId;
use crate::intern::Interner;
use crate::maps::{AddrSpace, Mapping};
use crate::module::{Module, ModuleId};

/// The pid of kernel mappings.
pub const KERNEL_PID: u32 = u32::MAX;
/// Lowest kernel address on x86-64 (and the canonical upper half elsewhere).
pub const KERNEL_START: u64 = 0xffff_8000_0000_0000;

/// What a mapping's name says it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapKind {
    /// Anonymous memory (`//anon`, no name, `/dev/zero`, `/anon_hugepage`, `[anon:..]`,
    /// `/memfd:`): where JIT code lives, named by `/tmp/perf-PID.map`.
    Anon,
    /// `[heap]`.
    Heap,
    /// `[stack]` (or a thread's `[stack:TID]`).
    Stack,
    /// `[vdso]`, `[vsyscall]`, `[vvar]`.
    Vdso,
    /// A JIT's ELF image (`jitted-PID-N.so`, what `perf inject --jit` writes): a file.
    JitImage,
    /// The kernel image (`[kernel.kallsyms]...`).
    Kernel,
    /// A guest's kernel (`[guest.kernel.kallsyms]...`).
    GuestKernel,
    /// A kernel module (`[ext4]`, or its `.ko` path).
    KernelModule,
    /// A file by absolute path.
    File,
    /// Anything else (a bracketed or relative name).
    Other,
}

/// The kind of the mapping `name` of a process (`kernel`: of the kernel's space).
pub fn classify(name: &str, kernel: bool) -> MapKind {
    if kernel {
        return if name.starts_with("[kernel.kallsyms]") {
            MapKind::Kernel
        } else if name.starts_with("[guest.kernel") {
            MapKind::GuestKernel
        } else {
            MapKind::KernelModule
        };
    }
    if is_anon(name) {
        MapKind::Anon
    } else if name == "[heap]" {
        MapKind::Heap
    } else if name.starts_with("[stack") {
        MapKind::Stack
    } else if matches!(name, "[vdso]" | "[vsyscall]" | "[vvar]") {
        MapKind::Vdso
    } else if name.starts_with('[') || !name.starts_with('/') {
        MapKind::Other
    } else if base(name).starts_with("jitted-") && name.ends_with(".so") {
        MapKind::JitImage
    } else {
        MapKind::File
    }
}

/// Whether `name` is anonymous memory ([`MapKind::Anon`]).
pub fn is_anon(name: &str) -> bool {
    name.is_empty()
        || name == "//anon"
        || name.starts_with("/dev/zero")
        || name.starts_with("/anon_hugepage")
        || name.starts_with("[anon")
        || name.starts_with("/memfd:")
}

/// The last component of a path.
pub fn base(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The module the addresses of mapping `name` of `pid` resolve in.
pub fn module_of(name: &str, pid: u32, build_id: Option<BuildId>) -> Module {
    match classify(name, pid == KERNEL_PID) {
        MapKind::Kernel => Module::Kernel,
        MapKind::GuestKernel => Module::Other {
            name: "[guest.kernel.kallsyms]".to_string(),
        },
        MapKind::KernelModule => Module::KernelModule {
            name: kernel_module_name(name),
        },
        MapKind::Anon => Module::Anon {
            name: if name.is_empty() { "//anon" } else { name }.to_string(),
            pid,
        },
        MapKind::Heap | MapKind::Stack | MapKind::Vdso | MapKind::Other => Module::Other {
            name: name.to_string(),
        },
        MapKind::File | MapKind::JitImage => Module::File {
            path: name.to_string(),
            build_id,
        },
    }
}

/// perf's short name of a kernel module: `/lib/modules/.../ath9k_hw.ko` -> `[ath9k_hw]`
/// (dashes become underscores, as the kernel names modules); `[name]` stays.
fn kernel_module_name(name: &str) -> String {
    if name.starts_with('[') {
        return name.to_string();
    }
    let stem = base(name).split(".ko").next().unwrap_or(name);
    format!("[{}]", stem.replace('-', "_"))
}

/// A record that changes what addresses mean (mappings, names, processes), owned so
/// that it can be queued and applied in time order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// MMAP or MMAP2.
    Mmap {
        /// The process (`u32::MAX`: the kernel).
        pid: u32,
        /// Start address.
        addr: u64,
        /// Length.
        len: u64,
        /// File offset at `addr`.
        pgoff: u64,
        /// The mapped name.
        name: String,
        /// MMAP2's build id.
        build_id: Option<BuildId>,
        /// Not executable (`PERF_RECORD_MISC_MMAP_DATA`).
        data: bool,
    },
    /// COMM.
    Comm {
        /// Process.
        pid: u32,
        /// Thread.
        tid: u32,
        /// The new name.
        name: String,
        /// Written by an exec.
        exec: bool,
    },
    /// FORK.
    Fork {
        /// The new process (or the process of the new thread).
        pid: u32,
        /// Its parent process.
        ppid: u32,
        /// The new thread.
        tid: u32,
        /// The parent thread.
        ptid: u32,
    },
    /// EXIT.
    Exit {
        /// Process.
        pid: u32,
        /// Thread.
        tid: u32,
    },
}

impl Event {
    /// The process whose state the record changes (the child, for a FORK).
    pub fn pid(&self) -> u32 {
        match self {
            Event::Mmap { pid, .. }
            | Event::Comm { pid, .. }
            | Event::Fork { pid, .. }
            | Event::Exit { pid, .. } => *pid,
        }
    }
}

/// A data mapping: where a data address falls ([`Processes::find_data`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataLoc {
    /// The mapped name, in [`Processes::data_file`].
    pub file: u32,
    /// The file offset of the address.
    pub offset: u64,
    /// The offset from the mapping's start.
    pub rel: u64,
}

/// Every process of a recording at one point of it (see the module docs for the rules).
#[derive(Debug)]
pub struct Processes {
    /// Per pid: its executable mappings.
    code: HashMap<u32, AddrSpace>,
    /// Per pid: all its mappings (with [`Processes::with_data`]), `module` naming
    /// the file in `data_files`.
    data: Option<HashMap<u32, AddrSpace>>,
    data_files: Interner<String>,
    /// Build ids from MMAP2, per data file (they win over the header's).
    data_build_ids: HashMap<u32, BuildId>,
    kernel: AddrSpace,
    modules: Interner<Module>,
    /// The id of [`Module::Kernel`].
    kernel_module: ModuleId,
    /// Build ids of files by path (the recording's `HEADER_BUILD_ID`).
    build_ids: HashMap<String, BuildId>,
    comms: Interner<String>,
    tid_comm: HashMap<u32, u32>,
    pid_comm: HashMap<u32, u32>,
    /// The last version given to an address space.
    versions: u64,
    /// Processes whose main thread exited: pid → the value of `exits` at its EXIT or
    /// its last sample since.
    exited: HashMap<u32, u64>,
    exits: u64,
    /// Drop an exited process's mappings once this many others exited since.
    forget_after: Option<usize>,
    /// The processes dropped so, not yet taken ([`Processes::take_forgotten`]).
    forgotten: Vec<u32>,
    /// Per module: the first process that mapped it.
    mappers: HashMap<ModuleId, u32>,
}

impl Default for Processes {
    fn default() -> Self {
        Processes::new(HashMap::default())
    }
}

impl Processes {
    /// No process yet; `build_ids`: the build ids a recording's header gives paths (for
    /// MMAP records that carry none).
    pub fn new(build_ids: HashMap<String, BuildId>) -> Processes {
        let mut modules = Interner::default();
        let kernel_module = modules.id(Module::Kernel);
        Processes {
            code: HashMap::default(),
            data: None,
            data_files: Interner::default(),
            data_build_ids: HashMap::default(),
            kernel: AddrSpace::default(),
            modules,
            kernel_module,
            build_ids,
            comms: Interner::default(),
            tid_comm: HashMap::default(),
            pid_comm: HashMap::default(),
            versions: 0,
            exited: HashMap::default(),
            exits: 0,
            forget_after: None,
            forgotten: Vec::new(),
            mappers: HashMap::default(),
        }
    }

    /// Also keeps every mapping (code and data) per process, for data addresses.
    pub fn with_data(mut self) -> Processes {
        self.data = Some(HashMap::default());
        self
    }

    /// For an endless stream: an exited process's mappings are dropped once `n` other
    /// processes have exited since its EXIT or its last sample (see the rules).
    pub fn forget_exited_after(mut self, n: usize) -> Processes {
        self.forget_after = Some(n);
        self
    }

    /// Applies one side-band record.
    pub fn apply(&mut self, ev: Event) {
        match ev {
            Event::Mmap {
                pid,
                addr,
                len,
                pgoff,
                name,
                build_id,
                data,
            } => self.mmap(pid, addr, len, pgoff, &name, build_id, data),
            Event::Comm {
                pid,
                tid,
                name,
                exec,
            } => {
                let id = self.comms.id_str(&name);
                self.tid_comm.insert(tid, id);
                if pid == tid {
                    self.pid_comm.insert(pid, id);
                }
                if exec {
                    if let Some(sp) = self.code.get_mut(&pid) {
                        sp.clear();
                        self.versions += 1;
                        sp.version = self.versions;
                    }
                    if let Some(sp) = self.data.as_mut().and_then(|d| d.get_mut(&pid)) {
                        sp.clear();
                    }
                }
            }
            Event::Fork {
                pid,
                ppid,
                tid,
                ptid,
            } => {
                if pid != ppid {
                    self.exited.remove(&pid);
                    let mut copy = self.code.get(&ppid).cloned().unwrap_or_default();
                    self.versions += 1;
                    copy.version = self.versions;
                    self.code.insert(pid, copy);
                    if let Some(d) = &mut self.data {
                        let copy = d.get(&ppid).cloned().unwrap_or_default();
                        d.insert(pid, copy);
                    }
                }
                let parent_comm = self
                    .tid_comm
                    .get(&ptid)
                    .or_else(|| self.pid_comm.get(&ppid))
                    .copied();
                if let Some(c) = parent_comm {
                    self.tid_comm.insert(tid, c);
                    if pid == tid {
                        self.pid_comm.insert(pid, c);
                    }
                }
            }
            Event::Exit { pid, tid } => {
                if pid == tid && self.forget_after.is_some() {
                    self.exits += 1;
                    self.exited.insert(pid, self.exits);
                    self.forget_long_exited();
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn mmap(
        &mut self,
        pid: u32,
        addr: u64,
        len: u64,
        pgoff: u64,
        name: &str,
        bid: Option<BuildId>,
        data: bool,
    ) {
        let end = addr.saturating_add(len);
        if pid != KERNEL_PID
            && let Some(d) = &mut self.data
        {
            let file = self.data_files.id_str(name);
            if let Some(b) = &bid {
                self.data_build_ids.entry(file).or_insert_with(|| b.clone());
            }
            d.entry(pid).or_default().insert(Mapping {
                start: addr,
                end,
                pgoff,
                module: file,
            });
        }
        if data {
            return;
        }
        let bid = bid.or_else(|| self.build_ids.get(name).cloned());
        let module = self.modules.id(module_of(name, pid, bid));
        let m = Mapping {
            start: addr,
            end,
            pgoff,
            module,
        };
        if pid == KERNEL_PID {
            self.kernel.insert(m);
            self.versions += 1;
            self.kernel.version = self.versions;
        } else {
            self.mappers.entry(module).or_insert(pid);
            let space = self.code.entry(pid).or_default();
            space.insert(m);
            self.versions += 1;
            space.version = self.versions;
        }
    }

    /// Whether every mapping is kept for data addresses ([`Processes::with_data`]).
    pub fn tracks_data(&self) -> bool {
        self.data.is_some()
    }

    /// Whether exited processes are forgotten ([`Processes::forget_exited_after`]).
    pub fn forgets_exited(&self) -> bool {
        self.forget_after.is_some()
    }

    /// Notes a sample of `pid`: an exited process that still samples is kept longer.
    pub fn sampled(&mut self, pid: u32) {
        if let Some(seen) = self.exited.get_mut(&pid) {
            *seen = self.exits;
        }
    }

    /// Drops the mappings of the processes that exited longest ago once more than the
    /// bound are kept: the older half, at once (the sort is paid once per half-bound
    /// exits); they are listed for [`Processes::take_forgotten`].
    fn forget_long_exited(&mut self) {
        let Some(kept) = self.forget_after else {
            return;
        };
        if self.exited.len() <= kept {
            return;
        }
        let mut by_age: Vec<(u64, u32)> = self.exited.iter().map(|(&p, &e)| (e, p)).collect();
        by_age.sort_unstable();
        for &(_, pid) in by_age.iter().take(self.exited.len() - kept / 2) {
            self.exited.remove(&pid);
            self.code.remove(&pid);
            if let Some(d) = &mut self.data {
                d.remove(&pid);
            }
            self.forgotten.push(pid);
        }
    }

    /// The processes whose mappings were dropped since the last call (see
    /// [`Processes::forget_exited_after`]), for what a reader keeps per process.
    pub fn take_forgotten(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.forgotten)
    }

    /// Adds an executable mapping of `pid` read from elsewhere (`/proc/PID/maps` of a
    /// live process): as an MMAP of it.
    pub fn add_code(&mut self, pid: u32, start: u64, end: u64, pgoff: u64, name: &str) {
        self.mmap(
            pid,
            start,
            end.saturating_sub(start),
            pgoff,
            name,
            None,
            false,
        );
    }

    /// The executable mappings of `pid`.
    pub(crate) fn space(&self, pid: u32) -> Option<&AddrSpace> {
        self.code.get(&pid)
    }

    /// The version of `pid`'s executable mappings (0: none known).
    pub fn version(&self, pid: u32) -> u64 {
        self.code.get(&pid).map_or(0, |s| s.version)
    }

    /// What a code address of `pid` locates against: the versions of its executable
    /// mappings and of the kernel's. Equal pairs locate every address alike, so a
    /// reader may keep what it made of a stack under them.
    pub fn maps_version(&self, pid: u32) -> (u64, u64) {
        (self.version(pid), self.kernel.version)
    }

    /// How many processes' mappings are kept.
    pub fn len(&self) -> usize {
        self.code.len()
    }

    /// Whether no process is known.
    pub fn is_empty(&self) -> bool {
        self.code.is_empty()
    }

    /// The module of an id.
    pub fn module(&self, id: ModuleId) -> Option<&Module> {
        self.modules.get(id)
    }

    /// The id of a module (interned).
    pub fn module_id(&mut self, m: Module) -> ModuleId {
        self.modules.id(m)
    }

    /// The first process that mapped module `id` (a live reader opens its file through
    /// that process's `/proc/PID/root`).
    pub fn mapper(&self, id: ModuleId) -> Option<u32> {
        self.mappers.get(&id).copied()
    }

    /// The module table, by id.
    pub fn modules(&self) -> impl Iterator<Item = &Module> {
        self.modules.iter()
    }

    /// The module of the executable mapping of `pid` that holds `addr`.
    pub fn code_module(&self, pid: u32, addr: u64) -> Option<ModuleId> {
        self.code.get(&pid)?.find(addr).map(|m| m.module)
    }

    /// The executable mapping of `pid` that holds `addr`: its module, and the file
    /// offset of `addr` (what a file module resolves; for a name no file backs, what
    /// a reader prints after it).
    pub fn code_at(&self, pid: u32, addr: u64) -> Option<(ModuleId, u64)> {
        let m = self.code.get(&pid)?.find(addr)?;
        Some((m.module, addr - m.start + m.pgoff))
    }

    /// Where code address `addr` of `pid` is: its module and the offset in it that
    /// the module resolves (`kernel`: the sample says it is a kernel address).
    pub fn locate(&mut self, pid: u32, addr: u64, kernel: bool) -> (ModuleId, u64) {
        if kernel || addr >= KERNEL_START {
            return match self.kernel.find(addr) {
                Some(m) => match self.modules.get(m.module) {
                    Some(Module::KernelModule { .. } | Module::Other { .. }) => (m.module, addr),
                    _ => (self.kernel_module, addr),
                },
                None => (self.kernel_module, addr),
            };
        }
        match self.code.get(&pid).and_then(|s| s.find(addr)).copied() {
            Some(m) => {
                let off = match self.modules.get(m.module) {
                    Some(Module::File { .. }) => addr - m.start + m.pgoff,
                    Some(Module::Other { .. }) => addr - m.start,
                    _ => addr,
                };
                (m.module, off)
            }
            None => (self.modules.id(Module::Unmapped), addr),
        }
    }

    /// The mapping of `pid` (any, code or data) that holds `addr`, with
    /// [`Processes::with_data`].
    pub fn find_data(&self, pid: u32, addr: u64) -> Option<DataLoc> {
        let m = self.data.as_ref()?.get(&pid)?.find(addr)?;
        Some(DataLoc {
            file: m.module,
            offset: addr - m.start + m.pgoff,
            rel: addr - m.start,
        })
    }

    /// The name of data file `id` ([`DataLoc::file`]) and its build id (the mapping's,
    /// else the header's).
    pub fn data_file(&self, id: u32) -> (&str, Option<&BuildId>) {
        let name = self.data_files.get(id).map_or("", String::as_str);
        let bid = self
            .data_build_ids
            .get(&id)
            .or_else(|| self.build_ids.get(name));
        (name, bid)
    }

    /// The comm id of thread `tid` of `pid` (its own, else its process's; `swapper`
    /// for pid 0, `:TID` for one never named).
    pub fn comm_of(&mut self, pid: u32, tid: u32) -> u32 {
        match self.tid_comm.get(&tid).or_else(|| self.pid_comm.get(&pid)) {
            Some(&c) => c,
            None if pid == 0 => self.comms.id_str("swapper"),
            None => self.comms.id(format!(":{tid}")),
        }
    }

    /// The comm of an id.
    pub fn comm(&self, id: u32) -> &str {
        self.comms.get(id).map_or("", String::as_str)
    }

    /// Takes the comm names (by id), leaving none.
    pub fn take_comms(&mut self) -> Vec<String> {
        std::mem::take(&mut self.comms).into_vec()
    }
}

#[cfg(test)]
mod tests;
