//! `hwprof memory --engine perf`: the allocator calls recorded as uprobe samples (each
//! entry with its argument registers, each return with its value and the allocating
//! stack), paired here as the BPF programs pair them in the kernel: per thread, a call
//! made inside another (operator new's malloc) left out; the live blocks followed by
//! pointer in time order across threads, so that a block freed by another thread is
//! freed. What [`profile`] weighs: the return samples of the allocations (their bytes),
//! or of the blocks still live at the end (`leaks`, older than `min_age_ns`).
//!
//! Unlike the kernel's, this pairing keeps every call of the recording until the end
//! (about 40 bytes each): the fallback for where BPF cannot run, and for DWARF stacks.

use std::collections::HashMap;

use hwprof_pmu::probe::allocator::Role;
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::record::{Body, Record, Regs, Sample as RecSample};
use hwprof_symbolize::{Options, Profile, ProfileBuilder, Weighed};

use crate::Result;

/// What an event of the recording is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// The uprobe at an allocator function's entry.
    Entry(Role),
    /// The uretprobe at its return.
    Return(Role),
}

/// x86-64's `perf_event_x86_regs` numbers of the registers read here.
pub mod reg {
    /// rax: the return value.
    pub const AX: u32 = 0;
    /// rdx: the third argument.
    pub const DX: u32 = 3;
    /// rsi: the second argument.
    pub const SI: u32 = 4;
    /// rdi: the first argument.
    pub const DI: u32 = 5;
    /// The registers the entries need.
    pub const ARGS: u64 = (1 << DI) | (1 << SI) | (1 << DX);
    /// The register the returns need.
    pub const RET: u64 = 1 << AX;
}

/// Register `n` of a sample's user registers, when sampled.
fn reg(r: &Regs<'_>, n: u32) -> Option<u64> {
    if r.abi == 0 || r.mask & (1 << n) == 0 {
        return None;
    }
    let index = (r.mask & ((1u64 << n) - 1)).count_ones() as usize;
    r.regs.get(index)
}

/// One recorded hit.
#[derive(Clone, Copy, Debug)]
struct Hit {
    time: u64,
    tid: u32,
    probe: Probe,
    args: [u64; 3],
    ret: u64,
}

/// A call in progress on a thread.
#[derive(Clone, Copy, Debug)]
struct Pending {
    role: Role,
    args: [u64; 3],
    depth: u32,
}

/// What the pairing found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Paired {
    /// The return samples to weigh, by (thread, time): bytes, and for the leaks the
    /// block's age at the end (ns).
    pub kept: HashMap<(u32, u64), (u64, u64)>,
    /// Allocations (successful calls).
    pub allocs: u64,
    /// Bytes they asked for.
    pub bytes: u64,
    /// Frees of non-null pointers.
    pub frees: u64,
    /// Of those, of blocks not seen allocated.
    pub unknown_frees: u64,
    /// posix_memalign's blocks: their pointer is stored in memory that the samples do
    /// not hold, so they are counted as allocated but not followed to their free.
    pub unfollowed: u64,
    /// The last time of the recording (ns): the end the ages count to.
    pub end: u64,
}

/// Size asked for, and the block it replaces (realloc's), from the entry's arguments.
fn asked(role: Role, a: [u64; 3]) -> (u64, u64) {
    match role {
        Role::Malloc | Role::Valloc => (a[0], 0),
        Role::Calloc => (a[0].saturating_mul(a[1]), 0),
        Role::Realloc => (a[1], a[0]),
        Role::Reallocarray => (a[1].saturating_mul(a[2]), a[0]),
        Role::AlignedAlloc | Role::Memalign => (a[1], 0),
        Role::PosixMemalign => (a[2], 0),
        Role::Free => (0, 0),
    }
}

/// Live blocks: pointer -> (thread and time of the return that allocated it, size).
type Live = HashMap<u64, (u32, u64, u64)>;

/// A free of `ptr` (none of a null pointer).
fn forget(out: &mut Paired, live: &mut Live, ptr: u64) {
    if ptr == 0 {
        return;
    }
    out.frees += 1;
    if live.remove(&ptr).is_none() {
        out.unknown_frees += 1;
    }
}

/// Pairs the calls of `pd` whose events `probes` names (by event index); `leaks`:
/// keep the blocks live at the end at least `min_age_ns` old, else every allocation.
pub fn pair(
    pd: &PerfData,
    probes: &HashMap<usize, Probe>,
    leaks: bool,
    min_age_ns: u64,
) -> Result<Paired> {
    let mut hits: Vec<Hit> = Vec::new();
    let mut end = 0u64;
    pd.for_each_record(|_, rec: &Record<'_>| -> Result<()> {
        let Body::Sample(s) = &rec.body else {
            return Ok(());
        };
        let time = s.time.unwrap_or(0);
        end = end.max(time);
        let Some(&probe) = rec.attr.and_then(|a| probes.get(&a)) else {
            return Ok(());
        };
        let r = |n| s.regs_user.as_ref().and_then(|g| reg(g, n)).unwrap_or(0);
        hits.push(Hit {
            time,
            tid: s.tid.unwrap_or(0),
            probe,
            args: [r(reg::DI), r(reg::SI), r(reg::DX)],
            ret: r(reg::AX),
        });
        Ok(())
    })?;
    // Time order across threads: a block may be freed by another thread than its own.
    hits.sort_by_key(|h| h.time);
    let mut out = Paired {
        end,
        ..Paired::default()
    };
    let mut pending: HashMap<u32, Pending> = HashMap::new();
    let mut live: Live = HashMap::new();
    for h in &hits {
        match h.probe {
            Probe::Entry(Role::Free) => forget(&mut out, &mut live, h.args[0]),
            Probe::Entry(role) => match pending.get_mut(&h.tid) {
                Some(p) => p.depth += 1,
                None => {
                    pending.insert(
                        h.tid,
                        Pending {
                            role,
                            args: h.args,
                            depth: 0,
                        },
                    );
                }
            },
            Probe::Return(_) => {
                let Some(p) = pending.get_mut(&h.tid) else {
                    continue;
                };
                if p.depth > 0 {
                    p.depth -= 1;
                    continue;
                }
                let p = *p;
                pending.remove(&h.tid);
                let (size, old) = asked(p.role, p.args);
                let ptr = match p.role {
                    Role::PosixMemalign if h.ret == 0 => {
                        out.unfollowed += 1;
                        None
                    }
                    Role::PosixMemalign => continue,
                    _ => Some(h.ret),
                };
                if ptr == Some(0) {
                    // Failed (realloc's block kept), but realloc(p, 0) frees p.
                    if old != 0 && size == 0 {
                        forget(&mut out, &mut live, old);
                    }
                    continue;
                }
                if old != 0 {
                    forget(&mut out, &mut live, old);
                }
                out.allocs += 1;
                out.bytes = out.bytes.saturating_add(size);
                if !leaks {
                    out.kept.insert((h.tid, h.time), (size, 0));
                }
                if let Some(ptr) = ptr {
                    live.insert(ptr, (h.tid, h.time, size));
                }
            }
        }
    }
    if leaks {
        for (tid, time, size) in live.into_values() {
            let age = end.saturating_sub(time);
            if age >= min_age_ns {
                out.kept.insert((tid, time), (size, age));
            }
        }
    }
    Ok(out)
}

/// The profile of the return samples (events `probes` names) that `paired` kept, all as
/// event `event`: period = bytes, count 1, and with `leaks` the block's age (ns) as
/// weight, as [`super::profile`] makes of the kernel's sums.
pub fn profile(
    pd: &PerfData,
    opts: &Options,
    probes: &HashMap<usize, Probe>,
    event: u32,
    paired: &Paired,
    leaks: bool,
) -> Result<Profile> {
    let opts = Options {
        merge: false,
        ..opts.clone()
    };
    let mut weigh = |rec: &Record<'_>, s: &RecSample<'_>, _period: u64| {
        if !matches!(
            rec.attr.and_then(|a| probes.get(&a)),
            Some(Probe::Return(_))
        ) {
            return None;
        }
        let &(bytes, age) = paired
            .kept
            .get(&(s.tid.unwrap_or(0), s.time.unwrap_or(0)))?;
        Some(Weighed {
            event,
            period: bytes,
            weight: leaks.then_some(age),
            count: 1,
        })
    };
    Ok(ProfileBuilder::new(pd, &opts)
        .weigh(&mut weigh)
        .build()?
        .profile)
}
