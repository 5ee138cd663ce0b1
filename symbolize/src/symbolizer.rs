//! The low-level symbolizer: (module, offset) pairs to frames, each resolved once.
//!
//! A [`Module`] says where an address lives (a mapped file, the kernel, anonymous memory
//! of a process...) and an offset in it (the file offset for files, the address itself
//! otherwise). [`Symbolizer::resolve`] turns a batch of such offsets of one module into
//! frames: blazesym (ELF symbols, DWARF lines and inlined functions) for files, read from
//! the files a [`Locator`] finds (the module's separate debug file when there is one,
//! else its executable), `/proc/kallsyms` for the kernel, `/tmp/perf-PID.map` for JIT
//! code. Results are cached per (module, offset, return address), so asking twice costs
//! a hash lookup.

mod ahead;

use rustc_hash::FxHashMap as HashMap;
use std::path::{Path, PathBuf};

use blazesym::Pid;
use blazesym::symbolize::source::{Elf, Process, Source};
use blazesym::symbolize::{CodeInfo, Input, Symbolized};
use hwprof_sampler::buildid;
use hwprof_sampler::perfdata::features::Features;

use crate::buildid::BuildId;
use crate::intern::Interner;
use crate::kallsyms::Kallsyms;
use crate::locate::Locator;
use crate::module::{Module, ModuleId};
use crate::perfmap::PerfMap;
use crate::profile::{Frame, FrameKind};

/// The kernel's module name, as perf spells it.
pub const KERNEL_MODULE: &str = "[kernel.kallsyms]";

/// The name of the vDSO's mapping.
const VDSO: &str = "[vdso]";

/// This process's vDSO: where it is mapped, and its image.
struct Vdso {
    start: u64,
    end: u64,
    image: Vec<u8>,
}

impl Vdso {
    /// Read from `/proc/self/maps` and `/proc/self/mem` (`None` without one: a vDSO is
    /// a page or two, at most 64 KiB is read).
    fn of_this_process() -> Option<Vdso> {
        use std::os::unix::fs::FileExt;
        let m = hwprof_sampler::synth::read_maps(std::process::id() as i32)
            .into_iter()
            .find(|m| m.path == VDSO)?;
        let len = usize::try_from(m.end.checked_sub(m.start)?)
            .ok()
            .filter(|&l| l <= 64 << 10)?;
        let mut image = vec![0u8; len];
        std::fs::File::open("/proc/self/mem")
            .ok()?
            .read_exact_at(&mut image, m.start)
            .ok()?;
        Some(Vdso {
            start: m.start,
            end: m.end,
            image,
        })
    }
}

/// Whether a recording's kernel is this machine's kernel: its `[kernel.kallsyms]` build
/// id equals the running kernel's, or, when the file has none, its OSRELEASE equals this
/// kernel's release. Anything else (no information at all included) is "no": kernel
/// addresses are then never named from this machine's `/proc/kallsyms`.
pub fn kernel_matches(features: &Features) -> bool {
    let recorded = features
        .build_ids
        .iter()
        .find(|b| b.filename == buildid::KERNEL_DSO);
    if let Some(b) = recorded {
        return BuildId::kernel().is_some_and(|k| k.same(&BuildId::new(b.build_id.as_slice())));
    }
    match (&features.osrelease, local_release()) {
        (Some(rec), Some(here)) => rec.trim() == here.trim(),
        _ => false,
    }
}

fn local_release() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()
}

/// The ELF file a file module is symbolized from.
#[derive(Clone, Debug)]
struct SymSource {
    /// The file.
    elf: PathBuf,
    /// Whether its DWARF may be read ([`crate::debugfiles::dwarf_is_safe`]).
    dwarf: bool,
    /// For a separate debug file: the loadable segments of the mapped file, which turn
    /// the recorded file offsets into the virtual offsets the debug file knows (its own
    /// code sections are NOBITS, so file offsets mean nothing in it). `None`: `elf` is
    /// the mapped file itself, and file offsets are its own.
    segments: Option<Vec<Segment>>,
}

/// A `PT_LOAD` segment: `filesz` bytes at file offset `offset` are mapped at `vaddr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    offset: u64,
    filesz: u64,
    vaddr: u64,
}

/// The `PT_LOAD` segments of an ELF file that have file contents.
pub(crate) fn load_segments(elf: &Path) -> Vec<Segment> {
    use object::read::ReadCache;
    use object::{Object, ObjectSegment};
    let Ok((file, _)) = hwprof_pmu::file::open(elf) else {
        return Vec::new();
    };
    let cache = ReadCache::new(file);
    let Ok(obj) = object::File::parse(&cache) else {
        return Vec::new();
    };
    obj.segments()
        .filter_map(|seg| {
            let (offset, filesz) = seg.file_range();
            (filesz > 0).then_some(Segment {
                offset,
                filesz,
                vaddr: seg.address(),
            })
        })
        .collect()
}

/// The virtual offset of file offset `off` in segments `segs`.
pub(crate) fn file_to_virt(segs: &[Segment], off: u64) -> Option<u64> {
    segs.iter()
        .find(|s| off >= s.offset && off - s.offset < s.filesz)
        .map(|s| s.vaddr.wrapping_add(off - s.offset))
}

/// Resolves module offsets to frames, caching every answer.
pub struct Symbolizer {
    inline: bool,
    locator: Locator,
    kernel_trusted: bool,
    blaze: blazesym::symbolize::Symbolizer,
    kallsyms: Option<Kallsyms>,
    /// `/proc/kallsyms` being read on another thread (see [`Symbolizer::prefetch_kernel_symbols`]).
    kallsyms_pending: Option<std::thread::JoinHandle<Kallsyms>>,
    /// This process's vDSO, once looked for.
    vdso: Option<Option<Vdso>>,
    perf_maps: HashMap<u32, Option<PerfMap>>,
    modules: Interner<Module>,
    /// Per file module: the ELF to read symbols from, `None` when none matches.
    sources: HashMap<ModuleId, Option<SymSource>>,
    /// The thread reading files ahead ([`Symbolizer::prefetch`]), once started.
    ahead: Option<ahead::Ahead>,
    cache: HashMap<(ModuleId, u64, bool), Vec<Frame>>,
    lookups: u64,
}

impl std::fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbolizer")
            .field("inline", &self.inline)
            .field("kernel_trusted", &self.kernel_trusted)
            .field("modules", &self.modules.len())
            .field("cached", &self.cache.len())
            .field("lookups", &self.lookups)
            .finish()
    }
}

impl Symbolizer {
    /// A symbolizer. `inline`: expand inlined functions; `kernel_trusted`: the recording's
    /// kernel is this one (see [`kernel_matches`]), so `/proc/kallsyms` may name kernel
    /// addresses. Files are found by [`Locator::from_env`] without a symfs.
    pub fn new(inline: bool, kernel_trusted: bool) -> Symbolizer {
        Symbolizer::with_locator(inline, kernel_trusted, Locator::from_env(None))
    }

    /// [`Symbolizer::new`] that finds the files of modules with `locator`.
    pub fn with_locator(inline: bool, kernel_trusted: bool, locator: Locator) -> Symbolizer {
        let blaze = new_blaze(inline);
        Symbolizer {
            inline,
            locator,
            kernel_trusted,
            blaze,
            kallsyms: None,
            kallsyms_pending: None,
            vdso: None,
            perf_maps: HashMap::default(),
            modules: Interner::default(),
            sources: HashMap::default(),
            ahead: None,
            cache: HashMap::default(),
            lookups: 0,
        }
    }

    /// The locator that finds the files of modules (shared with its clones: the
    /// unwinder asks the same one for unwind tables).
    pub fn locator(&self) -> &Locator {
        &self.locator
    }

    /// The id of a module (interned).
    pub fn module_id(&mut self, m: Module) -> ModuleId {
        self.modules.id(m)
    }

    /// The module of an id.
    pub fn module(&self, id: ModuleId) -> Option<&Module> {
        self.modules.get(id)
    }

    /// How many (module, offset) lookups were really done (cache misses) so far.
    pub fn lookups(&self) -> u64 {
        self.lookups
    }

    /// Frames of one offset of a module, innermost inlined function first, the
    /// containing function last. `ret`: the offset is a return address (a caller's
    /// frame), so the call instruction before it is looked up.
    pub fn resolve_one(&mut self, module: ModuleId, offset: u64, ret: bool) -> Vec<Frame> {
        self.resolve(module, &[(offset, ret)])
            .into_iter()
            .next()
            .unwrap_or_default()
    }

    /// Resolves locations `(module, offset, is return address)` whose module ids index
    /// `modules` (a process model's table, interned here in its order), each distinct
    /// one looked up once, one batch per module ([`Symbolizer::resolve_batches`]), and
    /// hands each location's frames to `each` with its index in `locs`, module by
    /// module in id order.
    pub fn resolve_locations<'m>(
        &mut self,
        modules: impl Iterator<Item = &'m Module>,
        locs: impl Iterator<Item = (ModuleId, u64, bool)>,
        mut each: impl FnMut(usize, Vec<Frame>),
    ) {
        let ids: Vec<ModuleId> = modules.map(|m| self.module_id(m.clone())).collect();
        let mut by_module: HashMap<ModuleId, Vec<(u64, bool, usize)>> = HashMap::default();
        for (i, (m, off, ret)) in locs.enumerate() {
            let m = ids.get(m as usize).copied().unwrap_or(m);
            by_module.entry(m).or_default().push((off, ret, i));
        }
        let mut by_module: Vec<_> = by_module.into_iter().collect();
        by_module.sort_by_key(|(m, _)| *m);
        let batches: Vec<(ModuleId, Vec<(u64, bool)>)> = by_module
            .iter()
            .map(|(m, items)| (*m, items.iter().map(|&(o, r, _)| (o, r)).collect()))
            .collect();
        let resolved = self.resolve_batches(&batches);
        drop(batches);
        for ((_, items), resolved) in by_module.iter().zip(resolved) {
            for (&(_, _, i), frames) in items.iter().zip(resolved) {
                each(i, frames);
            }
        }
    }

    /// Frames of a batch of (offset, is return address) of one module, in input order.
    /// Offsets not seen before are resolved together (one blazesym call per file).
    pub fn resolve(&mut self, module: ModuleId, offsets: &[(u64, bool)]) -> Vec<Vec<Frame>> {
        let mut todo: Vec<(u64, bool)> = offsets
            .iter()
            .copied()
            .filter(|&(o, r)| !self.cache.contains_key(&(module, o, r)))
            .collect();
        todo.sort_unstable();
        todo.dedup();
        if !todo.is_empty() {
            self.lookups += todo.len() as u64;
            let frames = self.lookup(module, &todo);
            for (&(o, r), f) in todo.iter().zip(frames) {
                self.cache.insert((module, o, r), f);
            }
        }
        offsets
            .iter()
            .map(|&(o, r)| self.cache.get(&(module, o, r)).cloned().unwrap_or_default())
            .collect()
    }

    /// [`Symbolizer::resolve`] of several modules' batches at once: the files are read
    /// and symbolized on up to as many threads as there are CPUs (each parses its own
    /// files' symbols and DWARF, the bulk of the work), the kernel and the rest on this
    /// one meanwhile. Results are in batch order, as `resolve` gives them.
    pub fn resolve_batches(
        &mut self,
        batches: &[(ModuleId, Vec<(u64, bool)>)],
    ) -> Vec<Vec<Vec<Frame>>> {
        // The offsets to look up, per batch; the files' sources found here (the locator
        // and its memo stay on this thread).
        let mut files: Vec<FileJob> = Vec::new();
        let mut ahead_batches: Vec<ahead::Batch> = Vec::new();
        let mut others: Vec<(ModuleId, Vec<(u64, bool)>)> = Vec::new();
        for (module, offsets) in batches {
            let mut todo: Vec<(u64, bool)> = offsets
                .iter()
                .copied()
                .filter(|&(o, r)| !self.cache.contains_key(&(*module, o, r)))
                .collect();
            todo.sort_unstable();
            todo.dedup();
            if todo.is_empty() {
                continue;
            }
            self.lookups += todo.len() as u64;
            match self.modules.get(*module).cloned() {
                Some(Module::File { path, .. })
                    if self.ahead.as_ref().is_some_and(|a| a.has(*module)) =>
                {
                    ahead_batches.push((*module, path, todo));
                }
                Some(Module::File { path, build_id }) => {
                    match self.source(*module, &path, build_id.as_ref()) {
                        Some(src) => files.push((*module, path, src, todo)),
                        None => {
                            let u = unknowns(Some(&path), &todo, FrameKind::User);
                            self.store(*module, &todo, u);
                        }
                    }
                }
                _ => others.push((*module, todo)),
            }
        }
        // The modules read ahead are looked up on their thread meanwhile (the same
        // batches come back, in order, to be stored).
        let sent: Vec<(ModuleId, Vec<(u64, bool)>)> = ahead_batches
            .iter()
            .map(|(m, _, todo)| (*m, todo.clone()))
            .collect();
        let from_ahead = match &self.ahead {
            Some(a) if !ahead_batches.is_empty() => Some(a.resolve(ahead_batches)),
            _ => None,
        };
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(files.len());
        if workers <= 1 {
            for (m, path, src, todo) in &files {
                let r = symbolize_file(&self.blaze, path, src, todo);
                self.store(*m, todo, r);
            }
            for (m, todo) in &others {
                let r = self.lookup(*m, todo);
                self.store(*m, todo, r);
            }
        } else {
            // Largest files first, so that no thread is left with the biggest at the end.
            files.sort_by_key(|(_, _, src, _)| {
                std::cmp::Reverse(std::fs::metadata(&src.elf).map_or(0, |m| m.len()))
            });
            let next = std::sync::atomic::AtomicUsize::new(0);
            let inline = self.inline;
            let done: Vec<Vec<(usize, Vec<Vec<Frame>>)>> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..workers)
                    .map(|_| {
                        let (files, next) = (&files, &next);
                        scope.spawn(move || {
                            let blaze = new_blaze(inline);
                            let mut out = Vec::new();
                            loop {
                                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                let Some((_, path, src, todo)) = files.get(i) else {
                                    return out;
                                };
                                out.push((i, symbolize_file(&blaze, path, src, todo)));
                            }
                        })
                    })
                    .collect();
                for (m, todo) in &others {
                    let r = self.lookup(*m, todo);
                    self.store(*m, todo, r);
                }
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_default())
                    .collect()
            });
            let mut by_job: Vec<Option<Vec<Vec<Frame>>>> = vec![None; files.len()];
            for (i, r) in done.into_iter().flatten() {
                if let Some(slot) = by_job.get_mut(i) {
                    *slot = Some(r);
                }
            }
            for ((m, path, _, todo), r) in files.iter().zip(by_job) {
                // A worker that panicked: the module's addresses stay unresolved.
                let r = r.unwrap_or_else(|| unknowns(Some(path), todo, FrameKind::User));
                self.store(*m, todo, r);
            }
        }
        if let Some(pending) = from_ahead {
            for ((m, todo), r) in sent.iter().zip(pending.wait()) {
                self.store(*m, todo, r);
            }
        }
        batches
            .iter()
            .map(|(m, offsets)| {
                offsets
                    .iter()
                    .map(|&(o, r)| self.cache.get(&(*m, o, r)).cloned().unwrap_or_default())
                    .collect()
            })
            .collect()
    }

    fn store(&mut self, module: ModuleId, todo: &[(u64, bool)], frames: Vec<Vec<Frame>>) {
        for (&(o, r), f) in todo.iter().zip(frames) {
            self.cache.insert((module, o, r), f);
        }
    }

    fn lookup(&mut self, id: ModuleId, todo: &[(u64, bool)]) -> Vec<Vec<Frame>> {
        let Some(m) = self.modules.get(id).cloned() else {
            return todo
                .iter()
                .map(|&(o, _)| vec![unknown(None, o, FrameKind::User)])
                .collect();
        };
        match m {
            Module::File { path, build_id } => self.lookup_file(id, &path, build_id.as_ref(), todo),
            Module::Kernel => self.lookup_kernel(KERNEL_MODULE, todo),
            Module::KernelModule { name } => self.lookup_kernel(&name, todo),
            Module::Anon { name, pid } => self.lookup_jit(&name, pid, todo),
            Module::Other { name } if name == VDSO && self.kernel_trusted => self.lookup_vdso(todo),
            Module::Other { name } => unknowns(Some(&name), todo, FrameKind::User),
            Module::Truncated => todo.iter().map(|_| vec![Frame::truncated()]).collect(),
            Module::Unmapped => unknowns(None, todo, FrameKind::User),
        }
    }

    /// Frames of offsets in the `[vdso]` of a recording of this machine's kernel: the
    /// vDSO is part of the kernel's build, the same image in every process, so it is
    /// looked up in this process's own (blazesym reads it in memory; the image, read
    /// from `/proc/self/mem`, gives perf's choice among its aliases:
    /// `__vdso_clock_gettime`, not the weak `clock_gettime`), as perf names the vDSO of
    /// a recording of the running kernel from its own.
    fn lookup_vdso(&mut self, todo: &[(u64, bool)]) -> Vec<Vec<Frame>> {
        let all_unknown = || unknowns(Some(VDSO), todo, FrameKind::User);
        let vdso = self.vdso.get_or_insert_with(Vdso::of_this_process);
        let Some(Vdso { start, end, image }) = vdso.as_ref() else {
            return all_unknown();
        };
        let (start, end) = (*start, *end);
        let addrs: Vec<u64> = todo
            .iter()
            .map(|&(o, r)| {
                // An offset past this vDSO's end names nothing (address 0).
                start
                    .checked_add(looked_up(o, r))
                    .filter(|&a| a < end)
                    .unwrap_or(0)
            })
            .collect();
        let mut process = Process::new(Pid::Slf);
        process.debug_syms = false;
        process.perf_map = false;
        process.map_files = false;
        process.vdso = true;
        let Ok(syms) = self
            .blaze
            .symbolize(&Source::Process(process), Input::AbsAddr(&addrs))
        else {
            return all_unknown();
        };
        // blazesym gives a vDSO symbol's address in the image (linked at 0): its offset.
        let starts: Vec<u64> = syms
            .iter()
            .filter_map(|s| match s {
                Symbolized::Sym(sym) => Some(sym.addr),
                _ => None,
            })
            .collect();
        let best = crate::aliases::best_names_in(image, &starts);
        todo.iter()
            .zip(syms)
            .map(|(&(o, _), s)| match s {
                Symbolized::Sym(sym) => vec![Frame {
                    function: Some(match best.get(&sym.addr) {
                        Some(name) => name.clone(),
                        None => crate::aliases::demangle(sym.name.as_bytes()),
                    }),
                    module: Some(VDSO.to_string()),
                    module_offset: sym.addr,
                    file: None,
                    line: None,
                    inlined: false,
                    kind: FrameKind::User,
                }],
                _ => vec![unknown(Some(VDSO), o, FrameKind::User)],
            })
            .collect()
    }

    /// The ELF file to read a file module's symbols from ([`find_source`]), found once.
    fn source(
        &mut self,
        id: ModuleId,
        path: &str,
        build_id: Option<&BuildId>,
    ) -> Option<SymSource> {
        if let Some(s) = self.sources.get(&id) {
            return s.clone();
        }
        let found = find_source(&self.locator, path, build_id);
        self.sources.insert(id, found.clone());
        found
    }

    /// Starts reading the symbols of module `m` (a file module; others cost nothing to
    /// read) on a thread of their own, for lookups to come: called as a replay first
    /// meets each module, so that loading files overlaps with the replay (see
    /// [`ahead`]). Its lookups then go to that thread.
    pub fn prefetch(&mut self, m: &Module) {
        let Module::File { path, build_id } = m else {
            return;
        };
        let id = self.modules.id(m.clone());
        if self.sources.contains_key(&id) {
            // Already read here.
            return;
        }
        if self.ahead.is_none() {
            self.ahead = ahead::Ahead::start(self.inline, self.locator.clone());
        }
        if let Some(a) = &mut self.ahead {
            a.load(id, path, build_id.as_ref());
        }
    }

    fn lookup_file(
        &mut self,
        id: ModuleId,
        path: &str,
        build_id: Option<&BuildId>,
        todo: &[(u64, bool)],
    ) -> Vec<Vec<Frame>> {
        if let Some(a) = self.ahead.as_ref().filter(|a| a.has(id)) {
            let batch = vec![(id, path.to_string(), todo.to_vec())];
            return a
                .resolve(batch)
                .wait()
                .into_iter()
                .next()
                .unwrap_or_default();
        }
        match self.source(id, path, build_id) {
            Some(source) => symbolize_file(&self.blaze, path, &source, todo),
            None => unknowns(Some(path), todo, FrameKind::User),
        }
    }
    /// Starts reading `/proc/kallsyms` on another thread when kernel addresses may be
    /// named from it: generating it costs the kernel some 40 ms, which then overlaps with
    /// replaying the recording instead of adding to it.
    pub fn prefetch_kernel_symbols(&mut self) {
        if self.kernel_trusted && self.kallsyms.is_none() && self.kallsyms_pending.is_none() {
            self.kallsyms_pending = std::thread::Builder::new()
                .name("kallsyms".into())
                .spawn(Kallsyms::load)
                .ok();
        }
    }

    /// Whether symbols are still being read on other threads (`/proc/kallsyms`, files
    /// given to [`Symbolizer::prefetch`]): a lookup now may wait for them, which a
    /// caller with other work to do may put off.
    pub fn reading_ahead(&self) -> bool {
        self.kallsyms_pending
            .as_ref()
            .is_some_and(|h| !h.is_finished())
            || self.ahead.as_ref().is_some_and(ahead::Ahead::loading)
    }

    fn lookup_kernel(&mut self, name: &str, todo: &[(u64, bool)]) -> Vec<Vec<Frame>> {
        if !self.kernel_trusted {
            return unknowns(Some(name), todo, FrameKind::Kernel);
        }
        if self.kallsyms.is_none() {
            let ks = match self.kallsyms_pending.take() {
                Some(h) => h.join().unwrap_or_default(),
                None => Kallsyms::load(),
            };
            self.kallsyms = Some(ks);
        }
        let ks = self.kallsyms.get_or_insert_with(Kallsyms::default);
        todo.iter()
            .map(|&(o, r)| match ks.lookup(looked_up(o, r)) {
                Some(s) => {
                    let module = match s.module {
                        Some(m) => format!("[{m}]"),
                        None => KERNEL_MODULE.to_string(),
                    };
                    vec![Frame {
                        function: Some(s.name.to_string()),
                        module: Some(module),
                        module_offset: s.addr,
                        file: None,
                        line: None,
                        inlined: false,
                        kind: FrameKind::Kernel,
                    }]
                }
                None => vec![unknown(Some(name), o, FrameKind::Kernel)],
            })
            .collect()
    }

    fn lookup_jit(&mut self, name: &str, pid: u32, todo: &[(u64, bool)]) -> Vec<Vec<Frame>> {
        let map_path = format!("/tmp/perf-{pid}.map");
        let map = self
            .perf_maps
            .entry(pid)
            .or_insert_with(|| PerfMap::load(Path::new(&map_path)));
        todo.iter()
            .map(
                |&(o, r)| match map.as_ref().and_then(|m| m.lookup(looked_up(o, r))) {
                    Some(s) => vec![Frame {
                        function: Some(s.name.clone()),
                        module: Some(map_path.clone()),
                        module_offset: s.start,
                        file: None,
                        line: None,
                        inlined: false,
                        kind: FrameKind::Jit,
                    }],
                    None => vec![unknown(Some(name), o, FrameKind::User)],
                },
            )
            .collect()
    }

    /// Whether inlined functions are expanded.
    pub fn inline(&self) -> bool {
        self.inline
    }
}

/// The ELF file to read a file module's symbols from: its separate debug file when
/// `locator` finds one (full symbol table and DWARF), else its executable; `None` when
/// neither is found (a FIFO, device or directory is never chosen or opened: `[unknown]`
/// frames). Offsets into a debug file go through the executable's segments (or the
/// debug file's own when they have contents).
fn find_source(locator: &Locator, path: &str, build_id: Option<&BuildId>) -> Option<SymSource> {
    let exe = locator.executable(path, build_id);
    let debug = locator.debug_file(path, build_id).and_then(|d| {
        let segs = exe
            .as_deref()
            .map(load_segments)
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| load_segments(&d));
        (!segs.is_empty()).then_some((d, segs))
    });
    match (debug, exe) {
        (Some((elf, segs)), _) => Some(SymSource {
            dwarf: dwarf_is_safe(locator, &elf),
            elf,
            segments: Some(segs),
        }),
        (None, Some(elf)) => Some(SymSource {
            dwarf: dwarf_is_safe(locator, &elf),
            elf,
            segments: None,
        }),
        (None, None) => None,
    }
}

/// [`crate::debugfiles::dwarf_is_safe`], with a notice when a debug file is not read
/// because of [`crate::elfcheck`].
fn dwarf_is_safe(locator: &Locator, elf: &Path) -> bool {
    match crate::debugfiles::unsafe_debug_file(elf) {
        None => true,
        Some(crate::debugfiles::Unsafe::NotRegular) => false,
        Some(crate::debugfiles::Unsafe::Rejected(p)) => {
            // Noted once per file, as the locator notes its own candidates.
            locator.elf_ok(&p);
            false
        }
    }
}

/// A file module's batch: its id, path, where its symbols are read from, and the
/// offsets (with whether each is a return address) to look up.
type FileJob = (ModuleId, String, SymSource, Vec<(u64, bool)>);

/// A blazesym symbolizer as hwprof uses them.
fn new_blaze(inline: bool) -> blazesym::symbolize::Symbolizer {
    blazesym::symbolize::Symbolizer::builder()
        .enable_code_info(true)
        .enable_inlined_fns(inline)
        // Demangled here, only names mangled as Rust's or C++'s (crate::aliases::demangle).
        .enable_demangling(false)
        .enable_auto_reload(false)
        .set_debug_dirs(Some(crate::debugfiles::DEBUG_DIRS))
        .build()
}

/// Frames of a batch of offsets of the file module `path`, read from `source` with
/// `blaze` (one call for the batch, one more for the ELF symbols' names).
fn symbolize_file(
    blaze: &blazesym::symbolize::Symbolizer,
    path: &str,
    source: &SymSource,
    todo: &[(u64, bool)],
) -> Vec<Vec<Frame>> {
    let all_unknown = || unknowns(Some(path), todo, FrameKind::User);
    let src_path = &source.elf;
    let query: Vec<u64> = todo.iter().map(|&(o, r)| looked_up(o, r)).collect();
    // A debug file is asked by virtual offset (an offset outside the mapped file's
    // segments asks for 0, which names nothing, keeping the batch in order).
    let virt: Vec<u64>;
    let input = match &source.segments {
        None => Input::FileOffset(query.as_slice()),
        Some(segs) => {
            virt = query
                .iter()
                .map(|&q| file_to_virt(segs, q).unwrap_or(0))
                .collect();
            Input::VirtOffset(virt.as_slice())
        }
    };
    // A file with zlib sections is read from its copy inflated by the bound check
    // (crate::elfcheck), not inflated a second time.
    let inflated = source
        .dwarf
        .then(|| crate::elfcheck::inflated(src_path))
        .flatten();
    let blaze_path = inflated.as_deref().unwrap_or(src_path);
    let elf_source = |debug_syms: bool| {
        let mut elf = Elf::new(blaze_path);
        elf.debug_syms = debug_syms;
        Source::Elf(elf)
    };
    // Debug info that cannot be read (a compression blazesym lacks) must not cost the
    // ELF symbols: retry without it.
    let syms = match blaze.symbolize(&elf_source(source.dwarf), input) {
        Ok(syms) => syms,
        Err(_) => match blaze.symbolize(&elf_source(false), input) {
            Ok(syms) => syms,
            Err(_) => return all_unknown(),
        },
    };
    // The outer function's name comes from the ELF symbol table, as perf shows it:
    // DWARF names are short (`decode_sample` for a Rust path, `__GI___libc_read` for
    // libc's `read`); lines and inlined frames stay DWARF's. Among aliases (several
    // symbols at one address), perf's choice (crate::aliases).
    let elf_syms: Vec<Option<(String, u64)>> = match blaze.symbolize(&elf_source(false), input) {
        Ok(v) => v
            .into_iter()
            .map(|s| match s {
                Symbolized::Sym(sym) => Some((sym.name.to_string(), sym.addr)),
                _ => None,
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    let addrs: Vec<u64> = elf_syms.iter().flatten().map(|&(_, a)| a).collect();
    let best = crate::aliases::best_names(src_path, &addrs);
    let elf_names: Vec<Option<String>> = elf_syms
        .into_iter()
        .map(|s| s.map(|(name, addr)| best.get(&addr).cloned().unwrap_or(name)))
        .collect();
    todo.iter()
        .zip(&query)
        .zip(syms)
        .enumerate()
        .map(|(i, ((&(o, _), &q), s))| match s {
            Symbolized::Sym(sym) => {
                let start = q.saturating_sub(sym.offset as u64);
                let mut frames = Vec::with_capacity(1 + sym.inlined.len());
                for f in sym.inlined.iter().rev() {
                    let (file, line) = code_location(f.code_info.as_ref());
                    frames.push(Frame {
                        function: Some(crate::aliases::demangle(f.name.as_bytes())),
                        module: Some(path.to_string()),
                        module_offset: start,
                        file,
                        line,
                        inlined: true,
                        kind: FrameKind::User,
                    });
                }
                let (file, line) = code_location(sym.code_info.as_deref());
                let name = match elf_names.get(i) {
                    Some(Some(n)) => crate::aliases::demangle(n.as_bytes()),
                    _ => crate::aliases::demangle(sym.name.as_bytes()),
                };
                frames.push(Frame {
                    function: Some(name),
                    module: Some(path.to_string()),
                    module_offset: start,
                    file,
                    line,
                    inlined: false,
                    kind: FrameKind::User,
                });
                frames
            }
            _ => vec![unknown(Some(path), o, FrameKind::User)],
        })
        .collect()
}

fn code_location(ci: Option<&CodeInfo<'_>>) -> (Option<String>, Option<u32>) {
    match ci {
        Some(ci) => (Some(ci.to_path().display().to_string()), ci.line),
        None => (None, None),
    }
}

/// `[unknown]` frames naming `module`, one per offset of `todo`.
fn unknowns(module: Option<&str>, todo: &[(u64, bool)], kind: FrameKind) -> Vec<Vec<Frame>> {
    todo.iter()
        .map(|&(o, _)| vec![unknown(module, o, kind)])
        .collect()
}

/// The address looked up for offset `o`: the byte before it when it is a return
/// address (the call, not the instruction after it, which may be another function's).
fn looked_up(o: u64, ret: bool) -> u64 {
    if ret { o.saturating_sub(1) } else { o }
}

fn unknown(module: Option<&str>, offset: u64, kind: FrameKind) -> Frame {
    Frame {
        function: None,
        module: module.map(str::to_string),
        module_offset: offset,
        file: None,
        line: None,
        inlined: false,
        kind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The offset in this process's vDSO of its `__vdso_clock_gettime` (the image is
    /// linked at 0: a symbol's value is its offset).
    fn vdso_clock_gettime() -> Option<u64> {
        use object::{Object, ObjectSymbol};
        let vdso = Vdso::of_this_process()?;
        let elf = object::File::parse(vdso.image.as_slice()).ok()?;
        elf.dynamic_symbols()
            .chain(elf.symbols())
            .find(|s| s.name() == Ok("__vdso_clock_gettime"))
            .map(|s| s.address())
    }

    #[test]
    fn the_vdso_of_this_kernel_is_named_from_this_process_own() {
        let Some(at) = vdso_clock_gettime() else {
            hwprof_testkit::skip(
                hwprof_testkit::Why::KernelSetting,
                "this process has no vDSO with __vdso_clock_gettime (vdso=0)",
            );
            return;
        };
        let vdso = Module::Other {
            name: VDSO.to_string(),
        };
        // A recording of this kernel: named, at the function's offset.
        let mut s = Symbolizer::new(false, true);
        let id = s.module_id(vdso.clone());
        let f = s.resolve(id, &[(at + 0x10, true), (0x7fff_ffff, false)]);
        assert_eq!(f[0][0].name(), "__vdso_clock_gettime", "{:?}", f[0]);
        assert_eq!(f[0][0].module_offset, at);
        assert_eq!(f[0][0].module_name(), VDSO);
        assert_eq!(f[1][0].name(), "[unknown]", "past the vDSO's end");
        // Another kernel's recording: its vDSO is not this one.
        let mut s = Symbolizer::new(false, false);
        let id = s.module_id(vdso);
        assert_eq!(
            s.resolve(id, &[(at + 0x10, true)])[0][0].name(),
            "[unknown]"
        );
    }

    #[test]
    fn own_function_resolves_once() {
        let exe = std::env::current_exe().unwrap();
        let mut s = Symbolizer::new(true, false);
        let id = s.module_id(Module::Kernel);
        let f = s.resolve(
            id,
            &[
                (0xffff_ffff_8100_0000, false),
                (0xffff_ffff_8100_0000, false),
            ],
        );
        assert_eq!(f.len(), 2);
        assert_eq!(f[0][0].name(), "[unknown]");
        assert_eq!(f[0][0].module_name(), KERNEL_MODULE);
        assert_eq!(s.lookups(), 1);
        let bogus = s.module_id(Module::File {
            path: exe.display().to_string(),
            build_id: Some(BuildId::new([9; 20])),
        });
        let f = s.resolve_one(bogus, 0x1000, false);
        assert_eq!(
            f[0].function, None,
            "a mismatching build id never uses the local file"
        );
        assert_eq!(s.lookups(), 2);
    }

    /// Files given to `prefetch` are being read until the thread has loaded them,
    /// those it cannot find too; then `reading_ahead` says no more (script puts its
    /// batches off until then).
    #[test]
    fn reading_ahead_ends_once_the_prefetched_files_are_loaded() {
        let mut s = Symbolizer::new(true, false);
        assert!(!s.reading_ahead(), "nothing given yet");
        let missing = |n: u32| Module::File {
            path: format!("/nonexistent/hwprof-test-{}-{n}", std::process::id()),
            build_id: None,
        };
        s.prefetch(&missing(1));
        s.prefetch(&missing(2));
        // The thread takes its jobs in order: this lookup is answered after both loads.
        let id = s.module_id(missing(2));
        let f = s.resolve(id, &[(0x1000, false)]);
        assert_eq!(f[0][0].name(), "[unknown]");
        assert!(!s.reading_ahead(), "both files are loaded (not found)");
    }

    /// A program built twice, once with its DWARF compressed (`-gz=zlib`, read through
    /// the inflated copy of crate::elfcheck): every offset of `main` names the same
    /// frames, inlined ones and lines included (a broken copy leaves them out: blazesym
    /// then reads the ELF symbols only).
    #[test]
    fn compressed_dwarf_names_what_plain_dwarf_names() {
        use object::{Object, ObjectSection, ObjectSymbol};
        let d = std::env::temp_dir().join(format!("hwprof-symbolizer-gz-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let c = d.join("inl.c");
        std::fs::write(
            &c,
            "static volatile int sink;\n\
             static inline __attribute__((always_inline)) void add(int x) {\n\
                 sink += x * 3;\n\
             }\n\
             int main(int argc, char **argv) {\n\
                 (void)argv;\n\
                 for (int i = 0; i < argc * 1000; i++) add(i);\n\
                 return sink;\n\
             }\n",
        )
        .unwrap();
        let (plain, packed) = (d.join("plain"), d.join("packed"));
        for (out, gz) in [(&plain, "-gz=none"), (&packed, "-gz=zlib")] {
            if !hwprof_testkit::compile_c(&c, out, &["-g", "-O2", gz]) {
                return;
            }
        }
        assert!(
            crate::elfcheck::inflated(&packed).is_some(),
            "no zlib sections"
        );
        let bytes = std::fs::read(&plain).unwrap();
        let o = object::File::parse(bytes.as_slice()).unwrap();
        let main = o.symbols().find(|s| s.name() == Ok("main")).unwrap();
        let text = o.section_by_name(".text").unwrap();
        let (file_off, _) = text.file_range().unwrap();
        let offsets: Vec<(u64, bool)> = (main.address()..main.address() + main.size())
            .map(|a| (a - text.address() + file_off, false))
            .collect();
        let mut s = Symbolizer::new(true, false);
        let mut frames = |p: &Path| {
            let id = s.module_id(Module::File {
                path: p.display().to_string(),
                build_id: None,
            });
            s.resolve(id, &offsets)
        };
        let (a, b) = (frames(&plain), frames(&packed));
        let inlined = a.iter().filter(|f| f.iter().any(|f| f.inlined)).count();
        assert!(
            inlined > 0,
            "no offset of main is in the inlined add: {a:?}"
        );
        for ((&(off, _), fa), fb) in offsets.iter().zip(&a).zip(&b) {
            let key = |f: &[Frame]| -> Vec<(String, Option<u32>, bool)> {
                f.iter()
                    .map(|f| (f.name().to_string(), f.line, f.inlined))
                    .collect()
            };
            assert_eq!(key(fa), key(fb), "at offset {off:#x}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}
