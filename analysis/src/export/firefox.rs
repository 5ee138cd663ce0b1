//! The Firefox Profiler's processed format, written by `fxprof-processed-profile` (the
//! crate samply writes it with): one process per pid, one thread track per tid, named by
//! its command, every sample at its time on the recording's timeline (0 = the first
//! sample), a run of one stack at a steady pace as its first sample and its rest
//! ([`hwprof_symbolize::timeline`]: the same stack chart, call tree and CPU time).
//!
//! What each series becomes, on the thread that recorded it:
//! - the CPU samples of the first sampled event (`cpu-clock`...): samples with their
//!   period as the CPU delta (the track's CPU graph), weighted by the recorded samples
//!   they stand for;
//! - off-CPU blocks ([`OFF_CPU`], [`OFFCPU_TIME`]) and I/O waits ([`IO_TIME`]):
//!   samples with no CPU delta, as samply writes off-CPU time, their stacks under an
//!   `[off-CPU]` or `[I/O]` leaf, weighted by their time in sampling intervals (the
//!   first event's mean period, else 1 ms), so that one call tree adds CPU and waits;
//!   a paired block sits at its switch-out, a sum from the kernel (no time of its own)
//!   at the thread's last sample;
//! - bytes ([`ALLOCATED_BYTES`], [`LEAKED_BYTES`]): allocation samples (the profiler's
//!   allocation call trees), their size in bytes;
//! - any other event (the other members of a group, tracepoints): a track of its own per
//!   thread, `comm (event)`, weight 1 per sample; but `sched:sched_switch` samples
//!   paired into [`OFF_CPU`] are that off-CPU time, not a track.
//!
//! Frames are labels (the recording is symbolized here), in category `User` or
//! `Kernel` (the waits' leaves in `Off-CPU` and `I/O`).

use rustc_hash::FxHashMap as HashMap;
use std::cmp::Reverse;
use std::io::Write;

use fxprof_processed_profile::{
    CategoryColor, CategoryPairHandle, CpuDelta, Frame as FxFrame, FrameFlags, FrameInfo,
    ProcessHandle, Profile as FxProfile, ReferenceTimestamp, SamplingInterval, StackHandle,
    StringHandle, ThreadHandle, Timestamp,
};
use hwprof_symbolize::{FrameId, Sample};

use super::{Export, OFF_CPU, Unit, frame_name, is_kernel};
use crate::alloc::{ALLOCATED_BYTES, LEAKED_BYTES};
use crate::io::IO_TIME;
use crate::offcpu::{OFFCPU_TIME, SCHED_SWITCH};

/// What an event's samples become.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// CPU samples on the thread's main track.
    Cpu,
    /// Waits on the main track, with this leaf label.
    Wait(&'static str),
    /// Allocation samples.
    Bytes,
    /// A track of its own.
    Own,
    /// Not exported.
    None,
}

/// The role of each event of `e`.
fn roles(e: &Export) -> Vec<Role> {
    let p = &e.profile;
    let mut cpu_taken = false;
    // The switches themselves are the paired off-CPU time's: no track of their own.
    let paired = p.events.iter().any(|x| x.name == OFF_CPU);
    (0..p.events.len() as u32)
        .map(|ev| {
            let Some(ser) = e.series.iter().find(|s| s.event == ev) else {
                return Role::None;
            };
            let name = p.events.get(ev as usize).map_or("", |x| x.name.as_str());
            match name.split(':').next().unwrap_or(name) {
                OFF_CPU | OFFCPU_TIME => Role::Wait("[off-CPU]"),
                IO_TIME => Role::Wait("[I/O]"),
                ALLOCATED_BYTES | LEAKED_BYTES => Role::Bytes,
                _ if paired && name.starts_with(SCHED_SWITCH) => Role::None,
                _ if !cpu_taken && ser.unit != Unit::Bytes => {
                    cpu_taken = true;
                    Role::Cpu
                }
                _ => Role::Own,
            }
        })
        .collect()
}

/// The Firefox Profiler profile of `e` (every recorded sample at its time, or a run's
/// rest at its last: loaded with [`Export::load_timeline`], or unmerged); `product`
/// names it.
pub fn profile(e: &Export, product: &str) -> FxProfile {
    let p = &e.profile;
    let roles = roles(e);
    let role = |s: &Sample| roles.get(s.event as usize).copied().unwrap_or(Role::None);
    // Times: those beyond every real one are a sum's (perf's OFF_CPU_TIMESTAMP).
    let real = |t: u64| t < crate::io::LABELLED_TIME;
    // One pass: the first real time, and each thread's last (where its sums go).
    let mut start = u64::MAX;
    let mut last: HashMap<u32, u64> = HashMap::default();
    for (i, t, _, _) in e.occurrences() {
        let (Some(t), Some(s)) = (t.filter(|&t| real(t)), p.samples.get(i)) else {
            continue;
        };
        if role(s) == Role::None {
            continue;
        }
        start = start.min(t);
        let l = last.entry(s.tid).or_insert(t);
        *l = (*l).max(t);
    }
    let start = if start == u64::MAX { 0 } else { start };
    let (mut cpu_period, mut cpu_count) = (0u64, 0u64);
    for s in p.samples.iter().filter(|s| role(s) == Role::Cpu) {
        cpu_period += s.period;
        cpu_count += s.count;
    }
    let interval_ns = match e
        .series
        .iter()
        .find(|s| roles.get(s.event as usize) == Some(&Role::Cpu))
    {
        Some(s) if s.unit == Unit::Nanoseconds && cpu_count > 0 => (cpu_period / cpu_count).max(1),
        _ => 1_000_000,
    };
    let mut fx = FxProfile::new(
        product,
        ReferenceTimestamp::from_millis_since_unix_epoch(0.0),
        SamplingInterval::from_nanos(interval_ns),
    );
    let cats = Cats {
        user: fx.add_category("User", CategoryColor::Yellow).into(),
        kernel: fx.add_category("Kernel", CategoryColor::Orange).into(),
        off: fx.add_category("Off-CPU", CategoryColor::Blue).into(),
        io: fx.add_category("I/O", CategoryColor::Green).into(),
    };

    // The tracks, in thread id order (then the thread's main track first): a (merged)
    // sample is of one thread and track. Each named by its thread's last sample's
    // command (as samply names a thread by its last COMM: `python3`, not the `bash`
    // that forked it and exec'd), the process by its main thread's.
    let track_of = |s: &Sample| match role(s) {
        Role::Own => s.event,
        _ => u32::MAX,
    };
    let mut tracks: Vec<(u32, u32, Reverse<usize>)> = p
        .samples
        .iter()
        .enumerate()
        .filter(|(_, s)| role(s) != Role::None)
        .map(|(i, s)| (s.tid, track_of(s), Reverse(i)))
        .collect();
    tracks.sort_unstable();
    tracks.dedup_by_key(|&mut (tid, track, _)| (tid, track));
    let zero = Timestamp::from_nanos_since_reference(0);
    let mut processes: HashMap<u32, ProcessHandle> = HashMap::default();
    let mut threads: HashMap<(u32, u32), ThreadHandle> = HashMap::default();
    for (tid, track, Reverse(i)) in tracks {
        let Some(s) = p.samples.get(i) else { continue };
        let comm = p.comm(s);
        let process = *processes
            .entry(s.pid)
            .or_insert_with(|| fx.add_process(comm, s.pid, zero));
        if tid == s.pid {
            fx.set_process_name(process, comm);
        }
        let t = fx.add_thread(process, tid, zero, tid == s.pid && track == u32::MAX);
        let name = match role(s) {
            Role::Own => {
                let ev = p
                    .events
                    .get(s.event as usize)
                    .map_or("", |x| x.name.as_str());
                format!("{comm} ({ev})")
            }
            _ => comm.to_string(),
        };
        fx.set_thread_name(t, &name);
        threads.insert((tid, track), t);
    }

    // Every recorded sample, in file order (time order but for the sums of other
    // profiles; the crate sorts a thread's samples by time when they are not).
    // Whether each event's series is in ns (a CPU delta).
    let ns: Vec<bool> = (0..p.events.len() as u32)
        .map(|ev| {
            e.series
                .iter()
                .find(|x| x.event == ev)
                .is_some_and(|x| x.unit == Unit::Nanoseconds)
        })
        .collect();
    let mut names: Vec<Option<StringHandle>> = vec![None; p.frames.len()];
    type Key<'a> = (ThreadHandle, Option<&'static str>, &'a [FrameId]);
    let mut stacks: HashMap<Key<'_>, Option<StackHandle>> = HashMap::default();
    let mut handles: Vec<Option<(ThreadHandle, Option<StackHandle>)>> = vec![None; p.samples.len()];
    for (i, time, period, count) in e.occurrences() {
        let Some(s) = p.samples.get(i) else {
            continue;
        };
        let r = role(s);
        if r == Role::None {
            continue;
        }
        let time = time.unwrap_or(u64::MAX);
        // A (merged) sample's handles are found once, at its first occurrence.
        let (thread, stack) = match handles.get(i).copied().flatten() {
            Some(h) => h,
            None => {
                let Some(&thread) = threads.get(&(s.tid, track_of(s))) else {
                    continue;
                };
                // Each distinct stack of a thread is interned once.
                let label = match r {
                    Role::Wait(label) => Some(label),
                    _ => None,
                };
                let key = (thread, label, s.stack.as_slice());
                let stack = match stacks.get(&key) {
                    Some(&st) => st,
                    None => {
                        let st =
                            intern_stack(&mut fx, thread, &s.stack, label, &mut names, cats, p);
                        stacks.insert(key, st);
                        st
                    }
                };
                if let Some(slot) = handles.get_mut(i) {
                    *slot = Some((thread, stack));
                }
                (thread, stack)
            }
        };
        let tid = s.tid;
        let at = if real(time) {
            time
        } else {
            last.get(&tid).copied().unwrap_or(start)
        };
        let ts = Timestamp::from_nanos_since_reference(at.saturating_sub(start));
        let weight = |v: u64| i32::try_from(v.max(1)).unwrap_or(i32::MAX);
        match r {
            Role::Cpu => {
                let delta = match ns.get(s.event as usize) {
                    Some(true) => CpuDelta::from_nanos(period),
                    _ => CpuDelta::ZERO,
                };
                fx.add_sample(thread, ts, stack, delta, weight(count));
            }
            Role::Wait(_) => {
                fx.add_sample(
                    thread,
                    ts,
                    stack,
                    CpuDelta::ZERO,
                    weight(period / interval_ns),
                );
            }
            Role::Bytes => {
                let bytes = i64::try_from(period).unwrap_or(i64::MAX);
                fx.add_allocation_sample(thread, ts, stack, 0, bytes);
            }
            Role::Own => fx.add_sample(thread, ts, stack, CpuDelta::ZERO, weight(count)),
            Role::None => {}
        }
    }
    fx
}

/// The categories of frames.
#[derive(Clone, Copy)]
struct Cats {
    user: CategoryPairHandle,
    kernel: CategoryPairHandle,
    off: CategoryPairHandle,
    io: CategoryPairHandle,
}

/// The stack `stack` (leaf first) of `thread`, under a `label` leaf for waits; `names`
/// caches each frame's interned name.
fn intern_stack(
    fx: &mut FxProfile,
    thread: ThreadHandle,
    stack: &[FrameId],
    label: Option<&'static str>,
    names: &mut [Option<StringHandle>],
    cats: Cats,
    p: &hwprof_symbolize::Profile,
) -> Option<StackHandle> {
    // Root first.
    let mut frames: Vec<FrameInfo> = Vec::with_capacity(stack.len() + 1);
    for &fid in stack.iter().rev() {
        let f = p.frame(fid);
        let name = match names.get(fid as usize).copied().flatten() {
            Some(h) => h,
            None => {
                let h = fx.intern_string(&frame_name(f));
                if let Some(slot) = names.get_mut(fid as usize) {
                    *slot = Some(h);
                }
                h
            }
        };
        frames.push(FrameInfo {
            frame: FxFrame::Label(name),
            category_pair: if is_kernel(f) { cats.kernel } else { cats.user },
            flags: FrameFlags::empty(),
        });
    }
    if let Some(label) = label {
        let h = fx.intern_string(label);
        frames.push(FrameInfo {
            frame: FxFrame::Label(h),
            category_pair: if label == "[I/O]" { cats.io } else { cats.off },
            flags: FrameFlags::empty(),
        });
    }
    fx.intern_stack_frames(thread, frames.into_iter())
}

/// Writes `e` as a Firefox Profiler (processed format) JSON file.
pub fn write(e: &Export, product: &str, w: impl Write) -> std::io::Result<()> {
    serde_json::to_writer(w, &profile(e, product)).map_err(std::io::Error::from)
}
