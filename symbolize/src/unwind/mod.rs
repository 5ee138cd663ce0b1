//! DWARF unwinding of sampled user stacks (`PERF_SAMPLE_REGS_USER` + `STACK_USER`)
//! with [framehop], the unwinder samply uses.
//!
//! A sample that carries the user registers and a copy of the top of the user stack is
//! unwound against the unwind tables of the modules its process had mapped at the time:
//! `.eh_frame` / `.eh_frame_hdr` of each file, or `.debug_frame` (also from a separate
//! debug file). Where a module has no tables, or an address is in no module, framehop
//! falls back to the frame pointer. x86-64 signal frames (`__restore_rt`) are stepped
//! through here, by reading the interrupted registers from the `ucontext` the kernel
//! pushed: framehop cannot evaluate glibc's CFI for that frame (a CFA expression that
//! dereferences memory), and perf, libunwind and gdb all special-case it the same way.
//!
//! The result is the user part of the stack, leaf first, and whether the unwinding
//! reached the stack's root or stopped early ([`Ending::Truncated`]: the stack copy was
//! too small, or an address could not be unwound).

mod elf;
pub mod fp;
pub mod online;
pub mod stream;

use std::path::PathBuf;
use std::sync::Arc;

use framehop::aarch64::{CacheAarch64, UnwindRegsAarch64, UnwinderAarch64};
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder as _};
use rustc_hash::FxHashMap as HashMap;

use crate::buildid::BuildId;

pub use elf::{Bytes, FileData};
pub use stream::StreamUnwinder;

/// The most frames one stack gets (perf's `kernel.perf_event_max_stack` default is 127;
/// DWARF stacks are bounded by their stack copy, this only stops a runaway).
pub const MAX_FRAMES: usize = 1024;

/// The CPU architecture of the recorded process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// x86-64: perf registers BP = 6, SP = 7, IP = 8.
    X86_64,
    /// AArch64: perf registers X29 (FP) = 29, LR = 30, SP = 31, PC = 32.
    Aarch64,
}

impl Arch {
    /// This machine's architecture, when unwinding supports it.
    pub fn host() -> Option<Arch> {
        Arch::from_name(std::env::consts::ARCH)
    }

    /// The architecture a perf.data `HEADER_ARCH` (`uname -m`) names.
    pub fn from_name(name: &str) -> Option<Arch> {
        match name.trim() {
            "x86_64" | "amd64" => Some(Arch::X86_64),
            "aarch64" | "arm64" => Some(Arch::Aarch64),
            _ => None,
        }
    }

    /// The `sample_regs_user` mask unwinding needs.
    pub fn regs_mask(self) -> u64 {
        match self {
            Arch::X86_64 => (1 << 6) | (1 << 7) | (1 << 8),
            Arch::Aarch64 => (1 << 29) | (1 << 30) | (1 << 31) | (1 << 32),
        }
    }
}

/// The user registers unwinding starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserRegs {
    /// The instruction pointer.
    pub pc: u64,
    /// The stack pointer: the copied stack starts here.
    pub sp: u64,
    /// The frame pointer (RBP, X29).
    pub fp: u64,
    /// The link register (AArch64; 0 on x86-64).
    pub lr: u64,
}

impl UserRegs {
    /// The registers of a sample's `PERF_SAMPLE_REGS_USER`: `None` when the sample has
    /// none (ABI 0: a kernel thread) or the mask lacks one that is needed.
    pub fn from_sample(arch: Arch, regs: &hwprof_sampler::record::Regs<'_>) -> Option<UserRegs> {
        if regs.abi == 0 {
            return None;
        }
        let get = |i: u32| -> Option<u64> {
            if regs.mask & (1u64 << i) == 0 {
                return None;
            }
            let idx = (regs.mask & ((1u64 << i) - 1)).count_ones() as usize;
            regs.regs.iter().nth(idx)
        };
        match arch {
            Arch::X86_64 => Some(UserRegs {
                pc: get(8)?,
                sp: get(7)?,
                fp: get(6)?,
                lr: 0,
            }),
            Arch::Aarch64 => Some(UserRegs {
                pc: get(32)?,
                sp: get(31)?,
                fp: get(29)?,
                lr: get(30)?,
            }),
        }
    }
}

/// How an unwinding ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// It reached the root of the stack (a function whose unwind info says it has no
    /// caller, such as `_start` or `clone3`, or a null frame pointer).
    Complete,
    /// It stopped before the root: the stack copy ended, an address could not be
    /// unwound, or the stack was deeper than [`MAX_FRAMES`].
    Truncated,
}

/// One frame of an unwound user stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserFrame {
    /// The address.
    pub addr: u64,
    /// A return address (look up the call before it), rather than the address of the
    /// instruction that was executing (the sampled pc, or where a signal interrupted).
    pub ret: bool,
}

/// One executable mapping of a process, as the unwinder sees it.
#[derive(Clone, Debug)]
pub struct Mapped {
    /// `[start, end)` of the mapping.
    pub start: u64,
    /// End of the mapping.
    pub end: u64,
    /// File offset at `start`.
    pub pgoff: u64,
    /// The file's unwind tables; `None` when there are none (frame pointers are used).
    pub file: Option<Arc<FileData>>,
    /// A name for the module (for debugging).
    pub name: String,
}

/// A process's modules, as framehop needs them, for one version of its mappings.
enum Modules {
    X86(UnwinderX86_64<Bytes>),
    Arm(UnwinderAarch64<Bytes>),
}

struct Proc {
    version: u64,
    modules: Modules,
    /// The mappings with unwind data, sorted by start, for the sigreturn check.
    maps: Vec<(u64, u64, u64, Arc<FileData>)>,
}

/// Unwinds user stacks, keeping each process's modules until its mappings change.
pub struct Unwinder {
    arch: Arch,
    procs: HashMap<u32, Proc>,
    cache_x86: Box<CacheX86_64>,
    cache_arm: Box<CacheAarch64>,
    /// Stacks unwound, and how many of them ended early.
    pub stats: UnwindStats,
}

/// What an [`Unwinder`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnwindStats {
    /// Stacks unwound.
    pub unwound: u64,
    /// Of them, stacks that stopped before their root.
    pub truncated: u64,
}

impl std::fmt::Debug for Unwinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unwinder")
            .field("arch", &self.arch)
            .field("processes", &self.procs.len())
            .field("stats", &self.stats)
            .finish()
    }
}

fn section_info(f: &FileData) -> ExplicitModuleSectionInfo<Bytes> {
    ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma: f.text.clone(),
        got_svma: f.got.clone(),
        eh_frame_svma: f.eh_frame.as_ref().map(|s| s.svma.clone()),
        eh_frame: f.eh_frame.as_ref().map(|s| s.data.clone()),
        eh_frame_hdr_svma: f.eh_frame_hdr.as_ref().map(|s| s.svma.clone()),
        eh_frame_hdr: f.eh_frame_hdr.as_ref().map(|s| s.data.clone()),
        debug_frame: f.debug_frame.clone(),
        ..Default::default()
    }
}

impl Unwinder {
    /// An unwinder for processes of `arch`.
    pub fn new(arch: Arch) -> Unwinder {
        Unwinder {
            arch,
            procs: HashMap::default(),
            cache_x86: Box::new(CacheX86_64::new()),
            cache_arm: Box::new(CacheAarch64::new()),
            stats: UnwindStats::default(),
        }
    }

    /// The architecture.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// Whether the modules of `pid` are those of mappings `version` (so that
    /// [`Unwinder::unwind`] will not ask for them).
    pub fn is_current(&self, pid: u32, version: u64) -> bool {
        self.procs.get(&pid).is_some_and(|p| p.version == version)
    }

    /// Forgets a process (it exited).
    pub fn forget(&mut self, pid: u32) {
        self.procs.remove(&pid);
    }

    /// Unwinds the user stack of process `pid` from `regs`, with `stack` the bytes
    /// copied from `regs.sp` up. `version` identifies the process's mappings: when it
    /// differs from the last call's, `maps` is called for them. Frames are appended to
    /// `out`, leaf first (the pc first).
    pub fn unwind(
        &mut self,
        pid: u32,
        version: u64,
        maps: impl FnOnce() -> Vec<Mapped>,
        regs: UserRegs,
        stack: &[u8],
        out: &mut Vec<UserFrame>,
    ) -> Ending {
        let arch = self.arch;
        let fresh = self.procs.get(&pid).is_none_or(|p| p.version != version);
        if fresh {
            let maps = maps();
            self.procs.insert(pid, Proc::build(arch, version, &maps));
        }
        let Some(proc) = self.procs.get(&pid) else {
            return Ending::Truncated;
        };
        let read = |addr: u64| -> Result<u64, ()> {
            let off = usize::try_from(addr.checked_sub(regs.sp).ok_or(())?).map_err(|_| ())?;
            let b = stack.get(off..off.checked_add(8).ok_or(())?).ok_or(())?;
            Ok(u64::from_le_bytes(b.try_into().map_err(|_| ())?))
        };
        let first = out.len();
        let mut ending = match &proc.modules {
            Modules::X86(u) => {
                let r = UnwindRegsX86_64::new(regs.pc, regs.sp, regs.fp);
                walk(u, r, regs.pc, &mut self.cache_x86, read, out, |ra, r| {
                    proc.x86_sigreturn(ra, r, read)
                })
            }
            Modules::Arm(u) => {
                let r = UnwindRegsAarch64::new(regs.lr, regs.sp, regs.fp);
                walk(u, r, regs.pc, &mut self.cache_arm, read, out, |_, _| None)
            }
        };
        if ending == Ending::Truncated
            && out.len() > first + 1
            && out
                .last()
                .is_some_and(|f| f.ret && proc.is_entry_call(f.addr))
        {
            // The process's first function called this one: the stack's root, even
            // where no unwind info says so (ld.so's `_start` has none).
            ending = Ending::Complete;
        }
        self.stats.unwound += 1;
        if ending == Ending::Truncated {
            self.stats.truncated += 1;
        }
        ending
    }
}

impl Proc {
    fn build(arch: Arch, version: u64, maps: &[Mapped]) -> Proc {
        let mut with_data = Vec::new();
        let mut modules: Vec<Module<Bytes>> = Vec::new();
        for m in maps {
            let Some(f) = &m.file else { continue };
            let Some(svma) = f.svma_of_offset(m.pgoff) else {
                continue;
            };
            let base_avma = m.start.wrapping_sub(svma);
            modules.push(Module::new(
                m.name.clone(),
                m.start..m.end,
                base_avma,
                section_info(f),
            ));
            with_data.push((m.start, m.end, base_avma, f.clone()));
        }
        with_data.sort_by_key(|m| m.0);
        let modules = match arch {
            Arch::X86_64 => {
                let mut u = UnwinderX86_64::new();
                modules.into_iter().for_each(|m| u.add_module(m));
                Modules::X86(u)
            }
            Arch::Aarch64 => {
                let mut u = UnwinderAarch64::new();
                modules.into_iter().for_each(|m| u.add_module(m));
                Modules::Arm(u)
            }
        };
        Proc {
            version,
            modules,
            maps: with_data,
        }
    }

    /// Whether return address `ra` is in the first bytes of its module's ELF entry
    /// point: a call made by the code the kernel starts a process at (`_start` calls
    /// `_dl_start` or `__libc_start_main` within its first few instructions).
    fn is_entry_call(&self, ra: u64) -> bool {
        const ENTRY_CALLS: u64 = 32;
        let Some(i) = self.maps.partition_point(|m| m.0 <= ra).checked_sub(1) else {
            return false;
        };
        let Some((_, end, base, file)) = self.maps.get(i) else {
            return false;
        };
        let svma = ra.wrapping_sub(*base);
        ra < *end
            && file
                .entry
                .is_some_and(|e| svma > e && svma - e <= ENTRY_CALLS)
    }

    /// When `ra` is the x86-64 sigreturn trampoline, the interrupted context: the
    /// kernel's `rt_sigframe` puts `struct ucontext` where the handler's return took
    /// the stack pointer, its `uc_mcontext` at +40, and in it RBP at +80, RSP at
    /// +120 and RIP at +128 (`arch/x86/include/uapi/asm/sigcontext.h`).
    fn x86_sigreturn(
        &self,
        ra: u64,
        regs: &UnwindRegsX86_64,
        mut read: impl FnMut(u64) -> Result<u64, ()>,
    ) -> Option<(u64, UnwindRegsX86_64)> {
        let i = self.maps.partition_point(|m| m.0 <= ra).checked_sub(1)?;
        let (_, end, base, file) = self.maps.get(i)?;
        if ra >= *end || !file.is_x86_64_sigreturn(ra.wrapping_sub(*base)) {
            return None;
        }
        let mc = regs.sp().checked_add(40)?;
        let bp = read(mc + 80).ok()?;
        let sp = read(mc + 120).ok()?;
        let ip = read(mc + 128).ok()?;
        Some((ip, UnwindRegsX86_64::new(ip, sp, bp)))
    }
}

/// Walks one stack. `signal` turns a return address into the interrupted context when
/// it is a sigreturn trampoline.
fn walk<U, F>(
    u: &U,
    mut regs: U::UnwindRegs,
    pc: u64,
    cache: &mut U::Cache,
    mut read: F,
    out: &mut Vec<UserFrame>,
    signal: impl Fn(u64, &U::UnwindRegs) -> Option<(u64, U::UnwindRegs)>,
) -> Ending
where
    U: framehop::Unwinder,
    F: FnMut(u64) -> Result<u64, ()>,
{
    let start = out.len();
    out.push(UserFrame {
        addr: pc,
        ret: false,
    });
    let mut addr = FrameAddress::from_instruction_pointer(pc);
    loop {
        if out.len() - start >= MAX_FRAMES {
            return Ending::Truncated;
        }
        match u.unwind_frame(addr, &mut regs, cache, &mut read) {
            Ok(Some(ra)) => {
                if let Some((ip, r)) = signal(ra, &regs) {
                    out.push(UserFrame {
                        addr: ra,
                        ret: false,
                    });
                    out.push(UserFrame {
                        addr: ip,
                        ret: false,
                    });
                    regs = r;
                    addr = FrameAddress::from_instruction_pointer(ip);
                    continue;
                }
                let Some(next) = FrameAddress::from_return_address(ra) else {
                    // A null return address ends a frame-pointer chain.
                    return Ending::Complete;
                };
                out.push(UserFrame {
                    addr: ra,
                    ret: true,
                });
                addr = next;
            }
            Ok(None) => return Ending::Complete,
            Err(_) => return Ending::Truncated,
        }
    }
}

/// The unwind tables of the module mapped from `path` (recorded build id `build_id`): of
/// the file `locator` finds for it (or, for a process running now, `live_pid`, the file
/// as that process sees it through `/proc/PID/root`: another mount namespace, a
/// container), and `.debug_frame` of its debug file when the file has no tables.
pub fn load_tables(
    locator: &crate::Locator,
    path: &str,
    build_id: Option<&BuildId>,
    live_pid: Option<u32>,
) -> Option<FileData> {
    let exe = live_pid
        .map(|pid| PathBuf::from(format!("/proc/{pid}/root{path}")))
        .filter(|p| p.is_file())
        .or_else(|| locator.executable(path, build_id));
    if let Some(d) = FileData::load(exe.as_deref(), None) {
        return Some(d);
    }
    let debug = locator.debug_file(path, build_id);
    FileData::load(exe.as_deref(), debug.as_deref())
}

#[cfg(test)]
mod tests;
