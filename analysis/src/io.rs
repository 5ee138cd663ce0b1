//! `hwprof io`'s analysis: system calls as a profile weighted by their time (µs), each
//! stack ending in the syscall (`[read]`) and the file it worked on (a frame named as
//! `/proc/PID/fd` names it), and the tables of `--report` (per file, per syscall: calls,
//! bytes, errors, total time, HdrHistogram percentiles).
//!
//! Two sources, one profile: the BPF engine's sums, written into the recording as
//! samples of an [`IO_TIME`] event (period: ns; the low 32 bits of their time: the
//! [`Labels`] index of their syscall and file), and the perf-event path's
//! `raw_syscalls:sys_enter`/`sys_exit` samples, paired per thread here ([`pair`]).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::record::Body;
use hwprof_symbolize::profile::{Frame, FrameId};
use hwprof_symbolize::{Options, Profile, ProfileBuilder, Weighed};
use rustc_hash::FxHashMap as HashMap;

use crate::error::Result;

/// The name of the event whose samples are the BPF engine's sums.
pub const IO_TIME: &str = "io-time";

/// The time of those samples: after every record of the recording (perf's
/// `OFF_CPU_TIMESTAMP`, as `offcpu-time`), its low 32 bits their label.
pub const LABELLED_TIME: u64 = !0u64 << 32;

/// The (syscall, file) pairs of a profile, each with its index (what the samples carry).
#[derive(Clone, Debug, Default)]
pub struct Labels {
    list: Vec<(String, String)>,
    index: HashMap<(String, String), u32>,
}

impl Labels {
    /// No label.
    pub fn new() -> Labels {
        Labels::default()
    }

    /// The index of (`syscall`, `file`), added when new.
    pub fn intern(&mut self, syscall: &str, file: &str) -> u32 {
        let key = (syscall.to_string(), file.to_string());
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.list.len() as u32;
        self.list.push(key.clone());
        self.index.insert(key, i);
        i
    }

    /// The (syscall, file) of index `i`.
    pub fn get(&self, i: u32) -> Option<(&str, &str)> {
        self.list
            .get(i as usize)
            .map(|(s, f)| (s.as_str(), f.as_str()))
    }
}

/// The histogram of a file's or syscall's durations: 3 significant digits (the BPF
/// engine's buckets), ns.
pub fn histogram() -> Histogram<u64> {
    let mut h = Histogram::<u64>::new(3).expect("3 significant digits are valid");
    h.auto(true);
    h
}

/// The calls of one file or syscall.
#[derive(Clone, Debug)]
pub struct Stats {
    /// Calls.
    pub calls: u64,
    /// Bytes moved (byte-counting syscalls).
    pub bytes: u64,
    /// Calls that failed.
    pub errors: u64,
    /// Time inside them (ns).
    pub ns: u64,
    /// Their durations (ns).
    pub hist: Histogram<u64>,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            calls: 0,
            bytes: 0,
            errors: 0,
            ns: 0,
            hist: histogram(),
        }
    }
}

/// The tables of `hwprof io --report`.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// Per file (its name).
    pub files: BTreeMap<String, Stats>,
    /// Per syscall.
    pub syscalls: BTreeMap<String, Stats>,
    /// Per (file, syscall).
    pub file_syscalls: BTreeMap<(String, String), Stats>,
}

impl Table {
    /// Adds `calls` calls of `syscall` on `file` with their totals (durations apart:
    /// [`Table::durations`]).
    pub fn add(&mut self, syscall: &str, file: &str, calls: u64, bytes: u64, errors: u64, ns: u64) {
        for s in self.rows(syscall, file) {
            s.calls += calls;
            s.bytes += bytes;
            s.errors += errors;
            s.ns += ns;
        }
    }

    /// The rows a call of `syscall` on `file` counts in: its file's, its syscall's and
    /// theirs.
    fn rows(&mut self, syscall: &str, file: &str) -> [&mut Stats; 3] {
        [
            self.files.entry(file.to_string()).or_default(),
            self.syscalls.entry(syscall.to_string()).or_default(),
            (self.file_syscalls)
                .entry((file.to_string(), syscall.to_string()))
                .or_default(),
        ]
    }

    /// Adds `n` durations of `value` ns of `syscall` on `file` to their histograms.
    pub fn durations(&mut self, syscall: &str, file: &str, value: u64, n: u64) {
        for s in self.rows(syscall, file) {
            // An auto-resizing histogram only fails on counts overflowing u64.
            let _ = s.hist.record_n(value, n);
        }
    }
}

/// The profile of the recording `pd`, each sample weighed by `weigh` (given its event
/// index, thread, time and period: its label and its ns, or `None` to leave it out),
/// its stack ending in `[syscall]` and the file's frame; all samples of event 0, period
/// in µs ([`crate::fold::Weight::Micros`]). With `opts.merge`, memory follows the
/// distinct (thread, stack, label).
pub fn profile(
    pd: &PerfData,
    opts: &Options,
    labels: &Labels,
    weigh: &mut dyn FnMut(usize, u32, u64, u64) -> Option<(u32, u64)>,
) -> Result<Profile> {
    let mut w = |rec: &hwprof_sampler::record::Record<'_>,
                 s: &hwprof_sampler::record::Sample<'_>,
                 period: u64| {
        let (label, ns) = weigh(
            rec.attr.unwrap_or(0),
            s.tid.unwrap_or(0),
            s.time.unwrap_or(0),
            period,
        )?;
        Some(Weighed {
            event: label,
            period: ns,
            weight: None,
            count: s.perf_weight().unwrap_or(1).max(1),
        })
    };
    let mut p = ProfileBuilder::new(pd, opts).weigh(&mut w).build()?.profile;
    tag(&mut p, labels);
    Ok(p)
}

/// Each sample's stack ends in its label's `[syscall]` and file frames; its period in
/// µs; event 0.
fn tag(p: &mut Profile, labels: &Labels) {
    let mut frames: HashMap<String, FrameId> = HashMap::default();
    let mut intern = |p: &mut Profile, name: String| -> FrameId {
        *frames.entry(name).or_insert_with_key(|n| {
            p.frames.push(Frame::named(n));
            (p.frames.len() - 1) as FrameId
        })
    };
    for i in 0..p.samples.len() {
        let label = p.samples[i].event;
        let (syscall, file) = labels.get(label).unwrap_or(("?", "?"));
        let (syscall, file) = (format!("[{syscall}]"), file.replace(';', ":"));
        let sc = intern(p, syscall);
        let f = intern(p, file);
        let s = &mut p.samples[i];
        s.stack.insert(0, sc);
        s.stack.insert(0, f);
        s.event = 0;
        s.period /= 1000;
    }
}

/// A syscall paired from its entry to its exit (the perf-event path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    /// The process.
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    /// The entry's time (the entry sample's).
    pub enter: u64,
    /// Its number.
    pub nr: u32,
    /// Its arguments at the entry.
    pub args: [u64; 6],
    /// Time inside it (ns).
    pub ns: u64,
    /// Its result.
    pub ret: i64,
}

/// Offsets in `raw_syscalls:sys_enter`'s raw data (after the 8 bytes of common fields):
/// `long id`, `unsigned long args[6]`; `sys_exit`'s: `long id`, `long ret`.
const RAW_ID: usize = 8;
const RAW_ARGS: usize = 16;
const RAW_RET: usize = 16;

fn u64_at(raw: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(raw.get(o..o + 8)?.try_into().ok()?))
}

/// The calls of the recording `pd`: its `enter` event's samples (`raw_syscalls:sys_enter`)
/// paired per thread with the next `exit` sample (`sys_exit`) of the same syscall, in
/// time order; entries with no exit (in progress at the end) and exits with no entry
/// (begun before) are left out. Sorted by thread and entry time.
pub fn pair(pd: &PerfData, enter: usize, exit: usize) -> Result<Vec<Call>> {
    // (time, is_exit, pid, tid, nr, args or ret)
    let mut seen: Vec<(u64, bool, u32, u32, u32, [u64; 6])> = Vec::new();
    pd.for_each_record(|_, rec| -> Result<()> {
        let Body::Sample(s) = &rec.body else {
            return Ok(());
        };
        let a = rec.attr.unwrap_or(usize::MAX);
        if a != enter && a != exit {
            return Ok(());
        }
        let Some(raw) = s.raw else { return Ok(()) };
        let Some(nr) = u64_at(raw, RAW_ID) else {
            return Ok(());
        };
        let mut v = [0u64; 6];
        if a == enter {
            for (i, x) in v.iter_mut().enumerate() {
                *x = u64_at(raw, RAW_ARGS + 8 * i).unwrap_or(0);
            }
        } else {
            v[0] = u64_at(raw, RAW_RET).unwrap_or(0);
        }
        seen.push((
            s.time.unwrap_or(0),
            a == exit,
            s.pid.unwrap_or(0),
            s.tid.unwrap_or(0),
            nr as u32,
            v,
        ));
        Ok(())
    })?;
    // Per thread in time order; an entry before its exit at the same time.
    seen.sort_by_key(|&(t, x, _, tid, _, _)| (tid, t, x));
    let mut out = Vec::new();
    let mut open: Option<(u64, u32, u32, u32, [u64; 6])> = None;
    for (t, is_exit, pid, tid, nr, v) in seen {
        if !is_exit {
            open = Some((t, pid, tid, nr, v));
            continue;
        }
        if let Some((t0, pid0, tid0, nr0, args)) = open.take()
            && tid0 == tid
            && nr0 == nr
        {
            out.push(Call {
                pid: pid0,
                tid,
                enter: t0,
                nr,
                args,
                ns: t.saturating_sub(t0),
                ret: v[0] as i64,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_tables() {
        let mut l = Labels::new();
        assert_eq!(l.intern("read", "pipe:[1]"), 0);
        assert_eq!(l.intern("read", "/z"), 1);
        assert_eq!(l.intern("read", "pipe:[1]"), 0);
        assert_eq!(l.get(1), Some(("read", "/z")));
        let mut t = Table::default();
        t.add("read", "/z", 256, 256 * 4096, 0, 1_000_000);
        t.add("read", "pipe:[1]", 5, 5, 0, 500_000_000);
        t.durations("read", "pipe:[1]", 100_000_000, 5);
        assert_eq!(t.syscalls["read"].calls, 261);
        assert_eq!(t.files["/z"].bytes, 1_048_576);
        let p50 = t.files["pipe:[1]"].hist.value_at_quantile(0.5);
        assert!((99_900_000..=100_100_000).contains(&p50), "{p50}");
    }
}
