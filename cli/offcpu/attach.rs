//! `hwprof offcpu` attached to running threads (`-p`, `-t`, `-a`): the window the
//! recording covers, in the clock of its samples, and the threads as /proc shows them
//! when it opens, so that waits in progress at its edges count for their time inside it
//! ([`hwprof_analysis::offcpu::Plan::within`]).
//!
//! The events of an attached recording time their records with `CLOCK_MONOTONIC`
//! (`use_clockid`, perf's `record -k mono`), which this process reads too (as
//! `Instant` does): the window starts when the session enabled the events
//! (`RunStats::started`) and lasts until it disabled them (`RunStats::wall`).

use std::path::Path;
use std::time::{Duration, Instant};

use hwprof_analysis::offcpu::{Attached, Window};
use hwprof_pmu::target::Target;
use hwprof_sampler::recorder::RecordPlan;
use rustix::time::{ClockId, clock_gettime};

/// The clock the events of an attached recording use (`attr.clockid`).
const CLOCK: i32 = libc::CLOCK_MONOTONIC;

/// Now, in [`CLOCK`] (ns).
pub fn now_ns() -> u64 {
    let t = clock_gettime(ClockId::Monotonic);
    u64::try_from(t.tv_sec)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(t.tv_nsec).unwrap_or(0))
}

/// Whether the recording of `target` has edges to count: attached to threads that ran
/// before it (not a command, whose events start at its `exec` and end with it; but
/// `-p`/`-t`/`-a` while a command runs are attached, the command bounding the window).
pub fn applies(target: &Target) -> bool {
    matches!(
        attached(target),
        Target::Pids(_) | Target::Tids(_) | Target::SystemWide { .. }
    )
}

/// What is attached to: `target` itself, or the `-p`/`-t`/`-a` part of
/// [`Target::During`] (the command's own threads start inside the window).
pub fn attached(target: &Target) -> &Target {
    match target {
        Target::During { of, .. } => of,
        t => t,
    }
}

/// Makes every event of `rec` time its records with [`CLOCK`].
pub fn use_clock(rec: &mut RecordPlan) {
    for e in &mut rec.events.events {
        e.attr.use_clockid = true;
        e.attr.clockid = CLOCK;
    }
}

/// The threads of `target` now (all of the system's with `-a`), with their kernel
/// stacks when `kernel`.
pub fn threads(target: &Target, kernel: bool) -> Vec<Attached> {
    let proc = Path::new("/proc");
    let tasks: Vec<(u32, u32)> = match attached(target) {
        Target::Pids(pids) => pids
            .iter()
            .filter_map(|&p| u32::try_from(p).ok())
            .flat_map(|p| tasks_of(proc, p).into_iter().map(move |t| (p, t)))
            .collect(),
        Target::Tids(tids) => tids
            .iter()
            .filter_map(|&t| u32::try_from(t).ok())
            .filter_map(|t| Some((tgid(proc, t)?, t)))
            .collect(),
        Target::SystemWide { .. } => numbered(proc)
            .into_iter()
            .flat_map(|p| tasks_of(proc, p).into_iter().map(move |t| (p, t)))
            .collect(),
        _ => Vec::new(),
    };
    tasks
        .into_iter()
        .map(|(pid, tid)| {
            let dir = proc.join(format!("{pid}/task/{tid}"));
            Attached {
                pid,
                tid,
                comm: read_small(&dir.join("comm"))
                    .map(|c| c.trim_end_matches('\n').to_string())
                    .unwrap_or_default(),
                kernel_stack: if kernel {
                    kernel_stack(&dir)
                } else {
                    Vec::new()
                },
                through: false,
            }
        })
        .collect()
}

/// The window of a session that enabled its events at `started` and disabled them
/// `wall` later, in [`CLOCK`] (read together with `Instant::now()` to place `started`),
/// with the threads read when it opened; with `-p`/`-t`, those that still exist were
/// there all through it.
pub fn window(
    target: &Target,
    mut threads: Vec<Attached>,
    started: Instant,
    wall: Duration,
) -> Window {
    let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let start = now_ns().saturating_sub(ns(started.elapsed()));
    if matches!(attached(target), Target::Pids(_) | Target::Tids(_)) {
        let proc = Path::new("/proc");
        for t in &mut threads {
            t.through = proc.join(format!("{}/task/{}", t.pid, t.tid)).exists();
        }
    }
    Window {
        start,
        end: start.saturating_add(ns(wall)),
        threads,
    }
}

/// The numbered entries of a /proc directory.
fn numbered(dir: &Path) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

fn tasks_of(proc: &Path, pid: u32) -> Vec<u32> {
    numbered(&proc.join(format!("{pid}/task")))
}

/// The process of thread `tid` (its `Tgid:`).
fn tgid(proc: &Path, tid: u32) -> Option<u32> {
    let status = read_small(&proc.join(format!("{tid}/status")))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))?
        .trim()
        .parse()
        .ok()
}

/// Whether thread `tid` of `tgid` is asleep now (`/proc/TGID/task/TID/stat` says a
/// state other than running; a thread that is gone is not).
pub fn sleeping(tgid: u32, tid: u32) -> bool {
    let (Ok(pid), Ok(tid)) = (i32::try_from(tgid), i32::try_from(tid)) else {
        return false;
    };
    hwprof_pmu::target::thread_state(pid, tid).is_some_and(|state| state != 'R')
}

/// A /proc text file, read with a bound (these are a few hundred bytes).
fn read_small(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut s = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(64 * 1024)
        .read_to_string(&mut s)
        .ok()?;
    Some(s)
}

/// The thread's kernel stack, leaf first: `stack` (`[<0>] pipe_read+0x2f3/0x430`, root
/// only), else the one function of `wchan` (where it waits), else nothing.
fn kernel_stack(dir: &Path) -> Vec<String> {
    let frames: Vec<String> = read_small(&dir.join("stack"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f = l.split_whitespace().nth(1)?;
            let name = f.split('+').next()?;
            (!name.is_empty()).then(|| name.to_string())
        })
        .collect();
    if !frames.is_empty() {
        return frames;
    }
    match read_small(&dir.join("wchan")) {
        Some(w) if !w.is_empty() && w != "0" => vec![w],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_threads_stack_and_comm() {
        let me = std::process::id();
        let t = threads(&Target::Pids(vec![me as i32]), true);
        assert!(
            t.iter()
                .any(|a| a.tid == me && a.pid == me && !a.comm.is_empty())
        );
        let started = Instant::now();
        let before = now_ns();
        let w = window(
            &Target::Pids(vec![me as i32]),
            t,
            started,
            Duration::from_secs(1),
        );
        // Placed where `started` was in the monotonic clock, as long as the session ran.
        assert!(
            w.start.abs_diff(before) < 1_000_000_000,
            "{} {before}",
            w.start
        );
        assert_eq!(w.end - w.start, 1_000_000_000);
        // This thread exists before and after.
        assert!(w.threads.iter().any(|a| a.through && a.tid == me));
    }
}
