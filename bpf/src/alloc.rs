//! Allocations in the kernel (`src/c/alloc.bpf.c`): each allocator call paired per
//! thread from its entry (the size asked for) to its return (the pointer given), summed
//! per process and allocating call chain, and every block still allocated kept by
//! pointer until it is freed: the allocated-bytes view ([`AllocData::allocated`]) and
//! the outstanding (leaked) one ([`AllocData::outstanding`]), as bcc's memleak keeps
//! them.
//!
//! The allocators: `malloc`, `calloc`, `realloc` and `reallocarray` (a successful one
//! frees its old block), `aligned_alloc`, `memalign`, `valloc`, `posix_memalign` (the
//! pointer it stores), and `free`, by symbol in the library given (glibc's
//! `libc.so.6`, or a program's own allocator with the same names). A stack is the user
//! stack at the allocator's return: the allocating call, then its callers. Each
//! outstanding block keeps its allocation time: [`Allocs::finish`] can leave out the
//! younger ones (memleak's `-o`), and says each stack's oldest.
//!
//! Bounded: every map has `max_entries`; what did not fit is counted in
//! [`AllocDropped`].

use std::collections::HashMap;
use std::os::fd::BorrowedFd;
use std::path::Path;

pub use hwprof_pmu::probe::allocator::Role;

use crate::engine::{Engine, Loader, StackErrors, UprobeAt, objects};
use crate::error::Error;
use crate::gate::Gate;
use crate::maps::{AllocSiteKey, Allocation, CountBytes};

/// What to keep, and the maps' sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocOptions {
    /// Take the user stack (frame pointers) of each allocation.
    pub user_stacks: bool,
    /// Threads inside an allocator at once.
    pub max_threads: u32,
    /// Blocks still allocated (their entries are made as they come).
    pub max_outstanding: u32,
    /// Distinct (process, stack) pairs of the allocations.
    pub max_sites: u32,
    /// Distinct stacks; each takes 127 × 8 bytes of kernel memory, allocated at load.
    pub max_stacks: u32,
}

impl Default for AllocOptions {
    fn default() -> Self {
        AllocOptions {
            user_stacks: true,
            max_threads: 10240,
            max_outstanding: 1 << 20,
            max_sites: 16384,
            max_stacks: 4096,
        }
    }
}

/// Allocations of one process and call chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The process.
    pub tgid: u32,
    /// The user stack at the allocator's return, leaf first (empty: not asked for, or
    /// not readable: see [`AllocDropped::stacks`]).
    pub user: Vec<u64>,
    /// Allocations.
    pub count: u64,
    /// Bytes asked for.
    pub bytes: u64,
    /// For outstanding blocks, the age of the oldest at the end (ns); 0 for the
    /// allocations.
    pub age_ns: u64,
}

/// What did not fit or could not be read; all zero in a complete answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocDropped {
    /// Allocator calls whose thread found no room (`max_threads`): not counted.
    pub calls: u64,
    /// Allocations with no room among the outstanding blocks (`max_outstanding`):
    /// allocated, but missing from the outstanding ones (and their frees counted as
    /// frees of unknown blocks).
    pub outstanding: u64,
    /// Allocations whose (process, stack) found no room (`max_sites`): in the counts,
    /// not in [`AllocData::allocated`].
    pub sites: u64,
    /// Stacks that are missing, by cause (weighted by allocations).
    pub stacks: StackErrors,
}

impl AllocDropped {
    /// Nothing was dropped and every stack asked for was read.
    pub fn is_empty(&self) -> bool {
        *self == AllocDropped::default()
    }
}

/// What the kernel kept (see [`Allocs::finish`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllocData {
    /// Every allocation, per process and stack.
    pub allocated: Vec<Site>,
    /// The blocks still allocated at the end, per process and stack.
    pub outstanding: Vec<Site>,
    /// Allocations (successful calls).
    pub allocs: u64,
    /// Bytes they asked for.
    pub bytes: u64,
    /// Frees of non-null pointers (a successful realloc frees its old block).
    pub frees: u64,
    /// Of those, frees of blocks not seen allocated (allocated before tracing).
    pub unknown_frees: u64,
    /// What did not fit.
    pub dropped: AllocDropped,
}

/// `dropped` slots and `counts` of alloc.bpf.c.
const DROP_PENDING: usize = 0;
const DROP_OUTSTANDING: usize = 1;
const DROP_SITES: usize = 2;

/// The entry program of an allocator function and its return program (`None`: free,
/// which returns nothing).
pub fn programs(role: Role) -> (&'static str, Option<&'static str>) {
    match role {
        Role::Malloc | Role::Valloc => ("alloc_malloc", Some("alloc_return")),
        Role::Calloc => ("alloc_calloc", Some("alloc_return")),
        Role::Realloc => ("alloc_realloc", Some("alloc_return")),
        Role::Reallocarray => ("alloc_reallocarray", Some("alloc_return")),
        Role::AlignedAlloc | Role::Memalign => ("alloc_aligned", Some("alloc_return")),
        Role::PosixMemalign => ("alloc_posix_memalign", Some("alloc_posix_return")),
        Role::Free => ("alloc_free", None),
    }
}

/// The allocation programs, loaded.
#[derive(Debug)]
pub struct Allocs {
    engine: Engine,
    gate: Option<Gate>,
}

impl Allocs {
    /// Loads the programs with `o`'s options (nothing is attached).
    pub fn load(o: &AllocOptions) -> Result<Allocs, Error> {
        let at_least = |n: u32| n.max(1);
        let mut engine = Loader::new(&objects::ALLOC)
            .global("user_stacks", o.user_stacks)
            .max_entries("pending", at_least(o.max_threads))
            .max_entries("outstanding", at_least(o.max_outstanding))
            .max_entries("allocated", at_least(o.max_sites))
            .max_entries("stacks", at_least(o.max_stacks))
            .load()?;
        let gate = Gate::attach(&mut engine, "alloc_exec")?;
        Ok(Allocs {
            engine,
            gate: Some(gate),
        })
    }

    /// Attaches to glibc's allocator functions in `library` (by symbol; those it lacks
    /// but malloc, calloc, realloc and free are left out), for process `pid` (all its
    /// threads) or every process that maps it.
    pub fn attach(&mut self, library: &Path, pid: Option<u32>) -> Result<(), Error> {
        for role in Role::ALL {
            let required = matches!(
                role,
                Role::Malloc | Role::Calloc | Role::Realloc | Role::Free
            );
            match self.attach_symbol(role, library, role.name(), pid) {
                Err(_) if !required => continue,
                r => r?,
            }
        }
        Ok(())
    }

    /// Attaches the programs of `role` to function `symbol` of `binary` (its uprobe and,
    /// but for free, its uretprobe), for process `pid` or every process.
    pub fn attach_symbol(
        &mut self,
        role: Role,
        binary: &Path,
        symbol: &str,
        pid: Option<u32>,
    ) -> Result<(), Error> {
        let (entry, ret) = programs(role);
        self.engine
            .attach_uprobe(entry, binary, UprobeAt::Symbol(symbol), pid)?;
        if let Some(ret) = ret {
            self.engine
                .attach_uprobe(ret, binary, UprobeAt::Symbol(symbol), pid)?;
        }
        Ok(())
    }

    /// Attaches the entry program of `role` to a perf event of its function's uprobe as
    /// defined in tracefs ([`Engine::attach_perf_event`]: an fd that no task inherits,
    /// which must outlive the tracing).
    pub fn attach_entry_event(&mut self, role: Role, event: BorrowedFd<'_>) -> Result<(), Error> {
        self.engine.attach_perf_event(programs(role).0, event)
    }

    /// Attaches the return program of `role` (none for free) to a perf event of its
    /// function's uretprobe, as [`Allocs::attach_entry_event`].
    pub fn attach_return_event(&mut self, role: Role, event: BorrowedFd<'_>) -> Result<(), Error> {
        match programs(role).1 {
            Some(p) => self.engine.attach_perf_event(p, event),
            None => Ok(()),
        }
    }

    /// The programs' [`Gate`] (open when loaded), to open and close their window
    /// (once only: `None` after).
    pub fn gate(&mut self) -> Option<Gate> {
        self.gate.take()
    }

    /// The kernel's ids of its programs (see [`Engine::program_ids`]).
    pub fn program_ids(&self) -> Vec<u32> {
        self.engine.program_ids()
    }

    /// Detaches the programs and reads what they kept, as of `end` ([`crate::now_ns`]:
    /// the end of the window, for the blocks' ages); the outstanding blocks younger
    /// than `min_age_ns` then are left out (0: none is).
    pub fn finish(mut self, end: u64, min_age_ns: u64) -> Result<AllocData, Error> {
        let now = end;
        self.engine.detach()?;
        let e = &self.engine;
        let counts = e.counters("counts")?;
        let slots = e.dropped()?;
        let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
        let mut stacks = e.stacks("stacks")?;
        let mut allocated = Vec::new();
        for (k, v) in e.hash_entries::<AllocSiteKey, CountBytes>("allocated")? {
            allocated.push(Site {
                tgid: k.tgid,
                user: stacks.get(k.stack, v.count),
                count: v.count,
                bytes: v.bytes,
                age_ns: 0,
            });
        }
        // The outstanding blocks old enough, grouped by process and stack with their
        // oldest allocation time; their stacks' errors were counted with the allocations.
        let mut by_site: HashMap<(u32, i32), (CountBytes, u64)> = HashMap::new();
        for (_, a) in e.hash_entries::<u64, Allocation>("outstanding")? {
            if now.saturating_sub(a.ts) < min_age_ns {
                continue;
            }
            let (s, oldest) = by_site
                .entry((a.tgid, a.stack))
                .or_insert((CountBytes::default(), u64::MAX));
            s.count += 1;
            s.bytes += a.size;
            *oldest = (*oldest).min(a.ts);
        }
        let errors = stacks.errors();
        let outstanding = by_site
            .into_iter()
            .map(|((tgid, stack), (v, oldest))| Site {
                tgid,
                user: stacks.get(stack, 0),
                count: v.count,
                bytes: v.bytes,
                age_ns: now.saturating_sub(oldest),
            })
            .collect();
        Ok(AllocData {
            allocated,
            outstanding,
            allocs: at(&counts, 0),
            bytes: at(&counts, 1),
            frees: at(&counts, 2),
            unknown_frees: at(&counts, 3),
            dropped: AllocDropped {
                calls: at(&slots, DROP_PENDING),
                outstanding: at(&slots, DROP_OUTSTANDING),
                sites: at(&slots, DROP_SITES),
                stacks: errors,
            },
        })
    }
}
