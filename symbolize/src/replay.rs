//! [`replay`]: a recording's samples in file order, each with the [`Processes`] as they
//! were at its time — the one pass every reader of a recording makes.
//!
//! Files are written ring by ring, so a sample can come before (in file order) the MMAP2
//! or COMM of its own exec written on another CPU's ring. Like perf, the replay goes by
//! time: pass 1 gathers the side-band records (few) per process in time order; pass 2
//! reads the samples and applies a process's records up to each of its samples' time
//! (a FORK first brings the parent up to the fork) before handing the sample to the
//! [`Visitor`]. Per process, so that a later sample of another process cannot advance
//! this one's state. Records without a time (files recorded without `sample_id_all`)
//! keep their file order. Both passes read the file through the reader's bounded window;
//! only the side-band records are held.

use std::collections::VecDeque;

use rustc_hash::FxHashMap as HashMap;

use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::record::{Body, FileId, Record, Sample};

use crate::buildid::BuildId;
use crate::error::Result;
use crate::process::{Event, KERNEL_PID, Processes};

/// `PERF_RECORD_MISC_MMAP_DATA`: a data (not executable) mapping.
const MISC_MMAP_DATA: u16 = 1 << 13;

/// What a reader of a recording does with each sample.
pub trait Visitor {
    /// A sample (`rec` its record), with `procs` as they were at its time.
    fn sample(&mut self, procs: &mut Processes, rec: &Record<'_>, s: &Sample<'_>) -> Result<()>;

    /// Samples the kernel or the recorder lost (LOST, LOST_SAMPLES).
    fn lost(&mut self, _n: u64) {}
}

/// Replays `pd` into `procs`, handing every sample to `v` in file order (see the module
/// docs).
pub fn replay<V: Visitor + ?Sized>(pd: &PerfData, procs: &mut Processes, v: &mut V) -> Result<()> {
    let data = procs.tracks_data();
    let exits = procs.forgets_exited();
    let mut side = SideBand::default();
    let mut untimed: Vec<(Pos, Event)> = Vec::new();
    let mut pos = Positions::default();
    let side_band = |off, rec: &Record<'_>| -> Result<()> {
        let at = pos.of(off);
        if let Some(ev) = event(rec, data, exits) {
            match rec.time() {
                Some(t) => side.push(t, at, ev),
                None => untimed.push((at, ev)),
            }
        }
        Ok(())
    };
    // Pass 1 does not decode the samples (most of the file); when it fails, a pass that
    // decodes everything finds the first error in file order, as pass 2 would.
    if let Err(e) = pd.for_each_non_sample(side_band) {
        pd.for_each_record(|_, _| Ok::<(), crate::Error>(()))?;
        return Err(e);
    }
    side.sort();
    let mut untimed = untimed.into_iter().peekable();
    let mut pos = Positions::default();
    pd.for_each_record(|off, rec| -> Result<()> {
        let seq = pos.of(off);
        match &rec.body {
            Body::Sample(s) => {
                while let Some((_, ev)) = untimed.next_if(|(sq, _)| *sq < seq) {
                    procs.apply(ev);
                }
                let at = (s.time, seq);
                side.advance(procs, KERNEL_PID, at);
                let pid = s.pid.unwrap_or(u32::MAX);
                side.advance(procs, pid, at);
                procs.sampled(pid);
                v.sample(procs, rec, s)?;
            }
            Body::Lost { lost, .. } => v.lost(*lost),
            Body::LostSamples { lost } => v.lost(*lost),
            _ => {}
        }
        Ok(())
    })
}

/// A queued side-band record: (time, position in the file, record).
type Pending = (u64, Pos, Event);

/// A record's position in the file (or stream): its offset, and its number among the
/// records at that offset (those inside one `COMPRESSED` record share its offset).
pub type Pos = (u64, u32);

/// Gives records their [`Pos`] in the order they come.
#[derive(Default)]
struct Positions {
    last: Option<u64>,
    n: u32,
}

impl Positions {
    fn of(&mut self, off: u64) -> Pos {
        if self.last == Some(off) {
            self.n += 1;
        } else {
            (self.last, self.n) = (Some(off), 0);
        }
        (off, self.n)
    }
}

/// Side-band records held per process in time order, each applied to the
/// [`Processes`] only when a sample of its process reaches its time: how [`replay`]
/// gives every sample the state at its time, and how a live reader whose records come
/// ring by ring (`probe --stacks`) does the same once its records are in.
#[derive(Debug, Default)]
pub struct SideBand {
    queues: HashMap<u32, VecDeque<Pending>>,
    sorted: bool,
}

impl SideBand {
    /// Holds `ev`, of time `time` and position `at`.
    pub fn push(&mut self, time: u64, at: Pos, ev: Event) {
        self.queues
            .entry(ev.pid())
            .or_default()
            .push_back((time, at, ev));
        self.sorted = false;
    }

    /// Puts each process's records in (time, position) order.
    fn sort(&mut self) {
        for q in self.queues.values_mut() {
            q.make_contiguous().sort_by_key(|&(t, s, _)| (t, s));
        }
        self.sorted = true;
    }

    /// Applies the held records of `pid` due at `at` (a sample's time and position):
    /// earlier times, or an equal time earlier in the file (perf's order); without a
    /// sample time, file order. A FORK first advances its parent to it.
    pub fn advance(&mut self, procs: &mut Processes, pid: u32, at: (Option<u64>, Pos)) {
        if !self.sorted {
            self.sort();
        }
        loop {
            let due = match self.queues.get(&pid).and_then(|q| q.front()) {
                Some(&(t, sq, _)) => match at.0 {
                    Some(st) => t < st || (t == st && sq < at.1),
                    None => sq < at.1,
                },
                None => false,
            };
            if !due {
                return;
            }
            let Some((t, sq, ev)) = self.queues.get_mut(&pid).and_then(VecDeque::pop_front) else {
                return;
            };
            if let Event::Fork { ppid, .. } = ev
                && ppid != pid
            {
                self.advance(procs, ppid, (Some(t), sq));
            }
            procs.apply(ev);
        }
    }
}

/// The side-band record `rec` is, if it is one the replay keeps: data mappings only
/// when `data`, EXITs only when `exits`.
pub fn event(rec: &Record<'_>, data: bool, exits: bool) -> Option<Event> {
    let is_data = rec.header.misc & MISC_MMAP_DATA != 0;
    Some(match &rec.body {
        Body::Mmap(m) if data || !is_data => Event::Mmap {
            pid: m.pid,
            addr: m.addr,
            len: m.len,
            pgoff: m.pgoff,
            name: String::from_utf8_lossy(m.filename).into_owned(),
            build_id: None,
            data: is_data,
        },
        Body::Mmap2(m) if data || !is_data => Event::Mmap {
            pid: m.pid,
            addr: m.addr,
            len: m.len,
            pgoff: m.pgoff,
            name: String::from_utf8_lossy(m.filename).into_owned(),
            build_id: match m.file_id {
                FileId::BuildId(b) if !b.is_empty() => Some(BuildId::from(b)),
                _ => None,
            },
            data: is_data,
        },
        Body::Comm {
            pid,
            tid,
            comm,
            exec,
        } => Event::Comm {
            pid: *pid,
            tid: *tid,
            name: String::from_utf8_lossy(comm).into_owned(),
            exec: *exec,
        },
        Body::Fork(t) => Event::Fork {
            pid: t.pid,
            ppid: t.ppid,
            tid: t.tid,
            ptid: t.ptid,
        },
        Body::Exit(t) if exits => Event::Exit {
            pid: t.pid,
            tid: t.tid,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
