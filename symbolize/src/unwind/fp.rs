//! Frame-pointer stacks and the modules that cut them short.
//!
//! The kernel walks a user stack (`-g`, `--call-graph fp`) by following the frame
//! pointer. Code built without frame pointers (most distributions' packages:
//! `-fomit-frame-pointer` is gcc's default at `-O2`) uses that register for data, so
//! a sample taken in it has a stack of one or two frames: its caller, `main` and
//! everything between are lost. Two kinds of evidence, each cheap, say which modules
//! do that, and they must agree before hwprof says so:
//!
//! - **the samples** ([`Evidence`]): of the samples with a frame-pointer user stack,
//!   those whose stack holds at most [`SHORT`] user frames (and, where names are known,
//!   no `main`, `_start` or thread start), counted against the module of their first
//!   user frame, the code that ran: a module that ends [`MIN_SHARE`] of the stacks or
//!   more is a suspect;
//! - **the code** ([`frame_use`]): a module's call frame information (`.eh_frame`, or
//!   `.debug_frame`) says how each function addresses its frame. Built with frame
//!   pointers, every function that sets up a frame moves its CFA to the frame pointer
//!   (`push %rbp; mov %rsp,%rbp` is `DW_CFA_def_cfa_register rbp`); built without, the
//!   CFA stays on the stack pointer except in the rare function with a variable frame.
//!   Functions that set up no frame (leaves, stubs) say nothing and are not counted.
//!
//! A suspect whose tables show frame pointers is not named (its stacks end short for
//! another reason); one whose tables cannot be read is not named either.
//!
//! [`FpWatch`] gathers the samples' evidence while recording (a [`Rewrite`] that
//! passes every record on as it is); `Profile::build` gathers it while reading.

use std::hash::Hash;
use std::path::Path;

use rustc_hash::FxHashMap as HashMap;

use hwprof_pmu::attr::{Attr, branch, sample as st};
use hwprof_sampler::perfdata::writer::EventEntry;
use hwprof_sampler::record::{Body, Decoder, context};
use hwprof_sampler::recorder::{Rewrite, Rewritten};

use super::{Arch, FileData};
use crate::Locator;
use crate::buildid::BuildId;
use crate::module::{Module, ModuleId};
use crate::process::Processes;

/// A stack of at most this many user frames is short.
pub const SHORT: usize = 2;

/// The share of the frame-pointer stacks a module must end short to be a suspect.
pub const MIN_SHARE: f64 = 0.05;

/// And at least this many of them.
pub const MIN_SAMPLES: u64 = 5;

/// At most this many functions of a module are looked at (the first, in table order).
pub const MAX_FUNCTIONS: usize = 20_000;

/// What a module's unwind tables say about its frame pointers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FramePointers {
    /// Its functions keep a frame pointer.
    Kept,
    /// Its functions use the frame pointer register for data.
    Omitted,
    /// Too few functions set up a frame to tell, a mix, or no tables.
    Unknown,
}

/// Of a module's functions, those that set up a frame, and of those, the ones whose
/// frame is addressed from the frame pointer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameUse {
    /// Functions whose CFI changes the CFA or saves a register.
    pub framed: u32,
    /// Of them, functions whose CFA moves to the frame pointer.
    pub with_fp: u32,
}

impl FrameUse {
    /// [`FramePointers::Kept`] when half of the framed functions or more use the frame
    /// pointer, [`FramePointers::Omitted`] below a fifth (functions with `alloca` or a
    /// realigned stack use it in any build), else (or with fewer than 4 framed
    /// functions) [`FramePointers::Unknown`].
    pub fn verdict(self) -> FramePointers {
        if self.framed < 4 {
            return FramePointers::Unknown;
        }
        let share = f64::from(self.with_fp) / f64::from(self.framed);
        if share >= 0.5 {
            FramePointers::Kept
        } else if share < 0.2 {
            FramePointers::Omitted
        } else {
            FramePointers::Unknown
        }
    }
}

/// The DWARF number of the frame pointer register.
fn fp_register(arch: Arch) -> gimli::Register {
    match arch {
        Arch::X86_64 => gimli::X86_64::RBP,
        Arch::Aarch64 => gimli::AArch64::X29,
    }
}

/// How the functions of `data` (its `.eh_frame`, else its `.debug_frame`) address
/// their frames; `None` without tables.
pub fn frame_use(data: &FileData, arch: Arch) -> Option<FrameUse> {
    use gimli::{BaseAddresses, CieOrFde, DebugFrame, EhFrame, LittleEndian, UnwindSection};
    let fp = fp_register(arch);
    let mut bases = BaseAddresses::default();
    if let Some(t) = &data.text {
        bases = bases.set_text(t.start);
    }
    if let Some(g) = &data.got {
        bases = bases.set_got(g.start);
    }
    fn count<R, S>(section: &S, bases: &BaseAddresses, fp: gimli::Register) -> FrameUse
    where
        R: gimli::Reader,
        S: UnwindSection<R>,
    {
        let mut out = FrameUse::default();
        let mut entries = section.entries(bases);
        let mut seen = 0usize;
        while let Ok(Some(entry)) = entries.next() {
            let CieOrFde::Fde(partial) = entry else {
                continue;
            };
            seen += 1;
            if seen > MAX_FUNCTIONS {
                break;
            }
            let Ok(fde) = partial.parse(S::cie_from_offset) else {
                continue;
            };
            let (mut framed, mut with_fp) = (false, false);
            let mut ins = fde.instructions(section, bases);
            while let Ok(Some(i)) = ins.next() {
                use gimli::CallFrameInstruction as I;
                match i {
                    I::DefCfa { register, .. }
                    | I::DefCfaSf { register, .. }
                    | I::DefCfaRegister { register } => {
                        framed = true;
                        with_fp |= register == fp;
                    }
                    I::DefCfaOffset { .. }
                    | I::DefCfaOffsetSf { .. }
                    | I::Offset { .. }
                    | I::OffsetExtendedSf { .. } => framed = true,
                    _ => {}
                }
            }
            if framed {
                out.framed += 1;
                out.with_fp += u32::from(with_fp);
            }
        }
        out
    }
    if let Some(eh) = &data.eh_frame {
        let section = EhFrame::new(&eh.data, LittleEndian);
        let eh_bases = bases.clone().set_eh_frame(eh.svma.start);
        let u = count(&section, &eh_bases, fp);
        if u.framed > 0 || data.debug_frame.is_none() {
            return Some(u);
        }
    }
    let debug = data.debug_frame.as_ref()?;
    let mut section = DebugFrame::new(debug, LittleEndian);
    section.set_address_size(8);
    Some(count(&section, &bases, fp))
}

/// What the unwind tables of the ELF file at `path` say (for a program about to be
/// recorded: this machine's architecture).
pub fn file_frame_pointers(path: &Path) -> FramePointers {
    let (Some(arch), Some(data)) = (Arch::host(), FileData::load(Some(path), None)) else {
        return FramePointers::Unknown;
    };
    frame_use(&data, arch).map_or(FramePointers::Unknown, FrameUse::verdict)
}

/// Modules that cut frame-pointer stacks short, as [`Evidence::cut`] found them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CutStacks {
    /// The modules (their recorded paths), the one that ends most stacks first.
    pub modules: Vec<String>,
    /// The samples whose stack ends short in one of them.
    pub short: u64,
    /// The samples with a frame-pointer user stack.
    pub samples: u64,
}

/// The samples' evidence (see the module docs), per module key `K`.
#[derive(Clone, Debug)]
pub struct Evidence<K> {
    samples: u64,
    short: HashMap<K, u64>,
}

impl<K> Default for Evidence<K> {
    fn default() -> Self {
        Evidence {
            samples: 0,
            short: HashMap::default(),
        }
    }
}

impl<K: Hash + Eq + Clone> Evidence<K> {
    /// `n` samples with a frame-pointer user stack.
    pub fn samples(&mut self, n: u64) {
        self.samples += n;
    }

    /// `n` of them end short, their first user frame in `module`.
    pub fn short(&mut self, module: K, n: u64) {
        *self.short.entry(module).or_default() += n;
    }

    /// The suspects whose tables say their frame pointers are omitted: `lookup` gives a
    /// module's path and what its tables say.
    pub fn cut(
        &self,
        mut lookup: impl FnMut(&K) -> Option<(String, FramePointers)>,
    ) -> Option<CutStacks> {
        let min = (self.samples as f64 * MIN_SHARE).max(MIN_SAMPLES as f64);
        let mut named: Vec<(u64, String)> = self
            .short
            .iter()
            .filter(|&(_, &n)| n as f64 >= min)
            .filter_map(|(k, &n)| match lookup(k) {
                Some((path, FramePointers::Omitted)) => Some((n, path)),
                _ => None,
            })
            .collect();
        named.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let out = CutStacks {
            short: named.iter().map(|(n, _)| n).sum(),
            modules: named.into_iter().map(|(_, p)| p).collect(),
            samples: self.samples,
        };
        (!out.modules.is_empty()).then_some(out)
    }
}

/// Functions a stack that reached its root holds: the program's `main`, its entry point,
/// a thread's start.
pub fn is_root_function(name: &str) -> bool {
    matches!(
        name,
        "main"
            | "_start"
            | "__libc_start_main"
            | "start_thread"
            | "thread_start"
            | "clone"
            | "__clone"
            | "clone3"
            | "__clone3"
    )
}

/// The samples' evidence as a recording is read (`Profile::build`): short stacks are
/// kept by stack id until their frames have names, so that those that reached `main`
/// or a thread's start are not counted.
#[derive(Debug, Default)]
pub(crate) struct ShortStacks {
    samples: u64,
    /// (stack id, module of the first user frame) → samples.
    short: HashMap<(u32, crate::ModuleId), u64>,
}

impl ShortStacks {
    /// A sample with a frame-pointer user stack of `user_frames` frames, the first in
    /// `module` (when a file is mapped there), whose whole stack is `stack`.
    pub(crate) fn add(&mut self, stack: u32, user_frames: usize, module: Option<crate::ModuleId>) {
        self.samples += 1;
        if let (true, Some(m)) = (user_frames <= SHORT, module) {
            *self.short.entry((stack, m)).or_default() += 1;
        }
    }

    /// The modules that cut stacks short: `reached_root` says whether a stack holds a
    /// [root function](is_root_function), `lookup` gives a module's path and tables.
    pub(crate) fn cut(
        &self,
        reached_root: impl Fn(u32) -> bool,
        lookup: impl FnMut(&crate::ModuleId) -> Option<(String, FramePointers)>,
    ) -> Option<CutStacks> {
        if self.samples == 0 {
            return None;
        }
        let mut e = Evidence::default();
        e.samples(self.samples);
        for (&(stack, m), &n) in &self.short {
            if !reached_root(stack) {
                e.short(m, n);
            }
        }
        e.cut(lookup)
    }
}

/// What the tables of the module at `path` (recorded build id `build_id`) say, its files
/// found by `locator`.
pub(crate) fn module_frame_pointers(
    locator: &Locator,
    path: &str,
    build_id: Option<&BuildId>,
    arch: Arch,
) -> FramePointers {
    super::load_tables(locator, path, build_id, None)
        .and_then(|d| frame_use(&d, arch))
        .map_or(FramePointers::Unknown, FrameUse::verdict)
}

/// Whether an attr's samples carry frame-pointer user stacks: a callchain with its user
/// part, no stack copy (DWARF) and no LBR call stack.
pub fn has_fp_stacks(a: &Attr) -> bool {
    a.sample_type & st::CALLCHAIN != 0
        && a.sample_type & (st::REGS_USER | st::STACK_USER) == 0
        && !a.exclude_callchain_user
        && !(a.sample_type & st::BRANCH_STACK != 0
            && a.branch_sample_type & branch::CALL_STACK != 0)
}

/// The user part of a callchain: how many frames, and the first (the sampled user pc).
pub fn user_part(chain: impl Iterator<Item = u64>) -> (usize, Option<u64>) {
    let mut user = false;
    let (mut n, mut first) = (0, None);
    for a in chain {
        if a >= context::MAX {
            user = a == context::USER;
            continue;
        }
        if user {
            n += 1;
            first = first.or(Some(a));
        }
    }
    (n, first)
}

/// Gathers the samples' [`Evidence`] while recording frame-pointer stacks: follows the
/// processes (MMAP, exec, FORK, EXIT: [`Processes`], as a stream keeps them) and counts
/// each sample's user frames. Every record is passed on as it is.
#[derive(Debug)]
pub struct FpWatch {
    decoder: Decoder,
    procs: Processes,
    evidence: Evidence<ModuleId>,
}

impl FpWatch {
    /// A watch over the records `decoder` reads (the recorder's).
    pub fn new(decoder: Decoder) -> FpWatch {
        FpWatch {
            decoder,
            procs: Processes::default().forget_exited_after(super::stream::EXITED_KEPT),
            evidence: Evidence::default(),
        }
    }

    /// Whether any of `events` samples frame-pointer stacks.
    pub fn applies(events: &[EventEntry]) -> bool {
        events.iter().any(|e| has_fp_stacks(&e.attr))
    }

    /// The modules that cut the recorded stacks short: their files as the process that
    /// mapped them sees them (`/proc/PID/root`) while it runs, else as `locator` finds
    /// them.
    pub fn cut(&self, locator: &Locator, arch: Arch) -> Option<CutStacks> {
        self.evidence.cut(|&id| {
            let Some(Module::File { path, build_id }) = self.procs.module(id) else {
                return None;
            };
            let pid = self.procs.mapper(id);
            let verdict = super::load_tables(locator, path, build_id.as_ref(), pid)
                .and_then(|d| frame_use(&d, arch))
                .map_or(FramePointers::Unknown, FrameUse::verdict);
            Some((path.clone(), verdict))
        })
    }

    /// [`FpWatch::cut`] with the files as this machine has them (no download).
    pub fn cut_here(&self, arch: Arch) -> Option<CutStacks> {
        self.cut(&super::online::local_locator(), arch)
    }
}

impl Rewrite for FpWatch {
    fn events(&self, _events: &mut [EventEntry]) {}

    fn record(&mut self, record: &[u8], _out: &mut Vec<u8>) -> Rewritten {
        let Ok(rec) = self.decoder.decode(record, 0) else {
            return Rewritten::AsIs;
        };
        let Body::Sample(s) = &rec.body else {
            if let Some(ev) = crate::replay::event(&rec, false, true) {
                self.procs.apply(ev);
                self.procs.take_forgotten();
            }
            return Rewritten::AsIs;
        };
        let fp = rec
            .attr
            .and_then(|i| self.decoder.attr(i))
            .is_some_and(has_fp_stacks);
        if let Some(pid) = s.pid {
            self.procs.sampled(pid);
        }
        if let (true, Some(chain), Some(pid)) = (fp, &s.callchain, s.pid) {
            let (n, first) = user_part(chain.iter());
            if let Some(pc) = first {
                self.evidence.samples(1);
                if n <= SHORT {
                    let m = self.procs.code_module(pid, pc).filter(|&m| {
                        matches!(self.procs.module(m),
                            Some(Module::File { path, .. }) if !path.starts_with("/dev/"))
                    });
                    if let Some(m) = m {
                        self.evidence.short(m, 1);
                    }
                }
            }
        }
        Rewritten::AsIs
    }
}

#[cfg(test)]
mod tests;
