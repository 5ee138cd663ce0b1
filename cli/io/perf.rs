//! `hwprof io` on perf events (`--engine perf`, `--call-graph dwarf`, or where BPF
//! cannot load): every `raw_syscalls:sys_enter` and `sys_exit` of the targets recorded
//! with its stack (the entry's is drawn), paired per thread here
//! ([`hwprof_analysis::io::pair`]).
//!
//! Files are named without the kernel's help: the entries carry the fd but not an
//! open's path nor a pipe's fds, so a thread polls the targets' `/proc/PID/fd` while
//! they run (every [`POLL`]) and each call takes the name its fd had in the poll that
//! falls inside the fd's lifetime, as the recorded opens, dups, accepts and closes
//! delimit it. An fd that lives shorter than a poll is named `fd N`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hwprof_analysis::io::{Call, Labels, Table};
use hwprof_bpf::io::{FdOp, syscall};
use hwprof_pmu::stop::Stop;
use hwprof_pmu::target::Target;
use hwprof_sampler::config::{self, CallGraph, RecordOptions};
use hwprof_sampler::outfile::Output;
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::recorder::RecordPlan;
use hwprof_sampler::session::SessionOptions;
use rustc_hash::FxHashMap as HashMap;

use super::Measured;
use super::bpf::syscall_name;

/// How often the targets' fds are read.
const POLL: Duration = Duration::from_millis(5);
/// Names seen by the polls, at most (the others are not kept).
const MAX_SEEN: usize = 1 << 20;
const ENTER: &str = "raw_syscalls:sys_enter";
const EXIT: &str = "raw_syscalls:sys_exit";

/// `CLOCK_MONOTONIC` now (ns): the records' clock (`use_clockid`) and the polls'.
fn now() -> u64 {
    hwprof_bpf::now_ns()
}

/// What the polls saw: (time, process, fd, name), in time order.
type Seen = Vec<(u64, u32, i32, String)>;

/// Records the targets' syscalls into `output` while a thread polls their fds; the
/// exit code and what the polls saw.
pub fn record(
    enc: &hwprof_pmu::event::Encoder,
    target: Target,
    mode: CallGraph,
    session: SessionOptions,
    output: Output,
    stop: &Stop,
) -> anyhow::Result<(u8, Seen)> {
    let events = [ENTER.to_string(), EXIT.to_string()];
    let mut rec = RecordPlan::new(crate::events::parse_all(enc, &events)?, target.clone());
    rec.options = RecordOptions {
        call_graph: Some(mode),
        command: matches!(target, Target::Command(_)),
        system_wide: target.is_system_wide(),
        ..RecordOptions::default()
    };
    config::configure(&mut rec.events, &rec.options);
    for e in &mut rec.events.events {
        e.attr.use_clockid = true;
        e.attr.clockid = libc::CLOCK_MONOTONIC;
        // Every entry and exit (their default period is 1 as a tracepoint's).
        e.attr.sample_period = 1;
        e.attr.freq = false;
    }
    rec.configure = false;
    let announce = crate::sampling::announce(&target, "I/O system calls", session.duration);
    rec.session = session;
    let pids: Vec<u32> = match &target {
        Target::Pids(p) => p.iter().filter_map(|&p| u32::try_from(p).ok()).collect(),
        Target::During { of, .. } => match of.as_ref() {
            Target::Pids(p) => p.iter().filter_map(|&p| u32::try_from(p).ok()).collect(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    let done = Arc::new(AtomicBool::new(false));
    let poller = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || poll(&pids, &done))
    };
    let recorded = crate::sampling::record(
        rec,
        output,
        false,
        None,
        false,
        true,
        announce.as_deref(),
        stop,
    );
    done.store(true, Ordering::Relaxed);
    let seen = poller.join().unwrap_or_default();
    Ok((recorded?.exit_code(), seen))
}

/// Polls the fds of `pids` and of hwprof's descendants (a command and its children)
/// until `done`: each (process, fd) name when first seen or changed.
fn poll(pids: &[u32], done: &AtomicBool) -> Seen {
    let mut seen: Seen = Vec::new();
    let mut last: HashMap<(u32, i32), String> = HashMap::default();
    loop {
        let stop = done.load(Ordering::Relaxed);
        let mut all: Vec<u32> = pids.to_vec();
        descendants(std::process::id(), &mut all);
        let t = now();
        for &p in &all {
            let Ok(dir) = std::fs::read_dir(format!("/proc/{p}/fd")) else {
                continue;
            };
            for e in dir.flatten() {
                let Some(fd) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                    continue;
                };
                let Ok(target) = std::fs::read_link(e.path()) else {
                    continue;
                };
                let name = target.to_string_lossy().into_owned();
                if last.get(&(p, fd)) != Some(&name) && seen.len() < MAX_SEEN {
                    last.insert((p, fd), name.clone());
                    seen.push((t, p, fd, name));
                }
            }
        }
        if stop {
            return seen;
        }
        std::thread::sleep(POLL);
    }
}

/// The processes below `pid` (from `/proc/PID/task/*/children`), added to `out`.
fn descendants(pid: u32, out: &mut Vec<u32>) {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return;
    };
    for t in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(t.path().join("children")) else {
            continue;
        };
        for c in text
            .split_whitespace()
            .filter_map(|c| c.parse::<u32>().ok())
        {
            if !out.contains(&c) && out.len() < 4096 {
                out.push(c);
                descendants(c, out);
            }
        }
    }
}

/// Each call's weight by (thread, entry time): its label and ns.
pub type Weights = HashMap<(u32, u64), (u32, u64)>;

/// The calls of the recording `pd`, paired, named and measured: the tables, the slow
/// calls (with `threshold`), the labels, and each drawn call's weight.
pub fn measure(
    pd: &PerfData,
    seen: &Seen,
    threshold: Option<u64>,
) -> anyhow::Result<(Measured, Weights)> {
    let idx = |name: &str| pd.attrs().iter().position(|e| e.name == name);
    let (Some(enter), Some(exit)) = (idx(ENTER), idx(EXIT)) else {
        anyhow::bail!("the recording has no {ENTER} and {EXIT} samples");
    };
    let calls = hwprof_analysis::io::pair(pd, enter, exit)?;
    let names = Names::new(seen, &calls);
    let mut m = Measured {
        labels: Labels::new(),
        table: Table::default(),
        slow: Vec::new(),
    };
    let mut weights = Weights::default();
    let min = threshold.unwrap_or(0);
    for c in &calls {
        let Some(sc) = syscall(c.nr).filter(|s| s.timed) else {
            continue;
        };
        if c.ns < min {
            continue;
        }
        let fd = match (sc.fd_arg0, sc.op) {
            (true, _) => c.args[0] as i32,
            (false, FdOp::Open | FdOp::OpenAt) if c.ret >= 0 => c.ret as i32,
            _ => -1,
        };
        // An open's fd is the one it made: named after the call.
        let at = match sc.op {
            FdOp::Open | FdOp::OpenAt => c.enter + c.ns,
            _ => c.enter,
        };
        let file = names.name(c.pid, fd, at);
        let name = syscall_name(c.nr);
        let bytes = if sc.bytes && c.ret > 0 {
            c.ret as u64
        } else {
            0
        };
        m.table
            .add(&name, &file, 1, bytes, u64::from(c.ret < 0), c.ns);
        m.table.durations(&name, &file, c.ns, 1);
        if threshold.is_some() {
            m.slow
                .push((name.clone(), file.clone(), c.ns, c.tid, c.ret));
        }
        let label = m.labels.intern(&name, &file);
        weights.insert((c.tid, c.enter), (label, c.ns));
    }
    Ok((m, weights))
}

/// The weigher of [`hwprof_analysis::io::profile`] for a perf-event recording: each
/// entry sample of a drawn call weighs its call's ns under its label.
pub fn weigher(
    pd: &PerfData,
    weights: Weights,
) -> impl FnMut(usize, u32, u64, u64) -> Option<(u32, u64)> {
    let enter = pd.attrs().iter().position(|e| e.name == ENTER);
    move |attr, tid, time, _period| {
        if Some(attr) != enter {
            return None;
        }
        weights.get(&(tid, time)).copied()
    }
}

/// Names calls' fds from the polls, within each fd's lifetime as the recorded calls
/// delimit it.
struct Names<'a> {
    /// Per (process, fd): the polls' names in time order.
    seen: HashMap<(u32, i32), Vec<(u64, &'a str)>>,
    /// Per (process, fd): when it was made anew or closed, in time order.
    edges: HashMap<(u32, i32), Vec<u64>>,
}

impl<'a> Names<'a> {
    fn new(seen: &'a Seen, calls: &[Call]) -> Names<'a> {
        let mut by: HashMap<(u32, i32), Vec<(u64, &'a str)>> = HashMap::default();
        for (t, p, fd, n) in seen {
            by.entry((*p, *fd)).or_default().push((*t, n.as_str()));
        }
        let mut edges: HashMap<(u32, i32), Vec<u64>> = HashMap::default();
        for c in calls {
            let Some(sc) = syscall(c.nr) else { continue };
            let end = c.enter + c.ns;
            match sc.op {
                FdOp::Close if c.ret == 0 => edges
                    .entry((c.pid, c.args[0] as i32))
                    .or_default()
                    .push(end),
                FdOp::Open | FdOp::OpenAt | FdOp::Dup | FdOp::Fcntl | FdOp::Socket
                    if c.ret >= 0 =>
                {
                    edges.entry((c.pid, c.ret as i32)).or_default().push(end)
                }
                _ => {}
            }
        }
        for v in edges.values_mut() {
            v.sort_unstable();
        }
        Names { seen: by, edges }
    }

    /// The name of `fd` of `pid` at `t`: the first poll inside its lifetime (from its
    /// last edge before `t` to its next one), else `fd N`.
    fn name(&self, pid: u32, fd: i32, t: u64) -> String {
        if fd < 0 {
            return "[no fd]".to_string();
        }
        let e = self.edges.get(&(pid, fd)).map(Vec::as_slice).unwrap_or(&[]);
        let i = e.partition_point(|&x| x <= t);
        let from = if i == 0 { 0 } else { e[i - 1] };
        let to = e.get(i).copied().unwrap_or(u64::MAX);
        self.seen
            .get(&(pid, fd))
            .and_then(|v| v.iter().find(|(s, _)| *s >= from && *s <= to))
            .map_or_else(|| format!("fd {fd}"), |(_, n)| n.to_string())
    }
}
