//! [`replay`]: a recording's samples in file order, each with the [`Processes`] as they
//! were at its time — the one pass every reader of a recording makes.
//!
//! Files are written ring by ring, so a sample can come before (in file order) the MMAP2
//! or COMM of its own exec written on another CPU's ring. Like perf, the replay goes by
//! time: it holds the side-band records (few) per process in time order and applies a
//! process's records up to each of its samples' time (a FORK first brings the parent up
//! to the fork) before handing the sample to the [`Visitor`]. Per process, so that a
//! later sample of another process cannot advance this one's state. Records without a
//! time (files recorded without `sample_id_all`) keep their file order.
//!
//! **One read.** perf and hwprof write a `PERF_RECORD_FINISHED_ROUND` after each pass
//! over the rings, and a record of a later round was written after that pass began: once
//! round *n* has ended, every record up to the latest time seen by the end of round
//! *n − 1* has been read (perf's `ordered_events` rule). So the replay reads the file
//! once, holding the samples of the last two rounds (their bytes, decoded again when
//! given) and giving each, in file order, once every record up to its time is in. The
//! held samples are bounded: past [`WINDOW_CAP`] bytes the oldest half is given (perf
//! flushes half its queue likewise); a side-band record that then arrives earlier than
//! a sample already given is applied late and counted ([`Order::late`]).
//!
//! **Two sweeps** for files without rounds (hwprof's before it wrote them, synthetic
//! ones): when [`NO_ROUNDS_LIMIT`] bytes of samples are held and no round has ended,
//! nothing has been given or applied yet; the replay starts again, gathering the
//! side-band records in a first sweep that skips the samples undecoded, then reads the
//! samples. Both ways the reader reads through its bounded window.

use std::collections::VecDeque;

use rustc_hash::FxHashMap as HashMap;

use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::record::{Body, FileId, Record, Sample};

use crate::buildid::BuildId;
use crate::error::{Error, Result};
use crate::process::{Event, KERNEL_PID, Processes};

/// `PERF_RECORD_MISC_MMAP_DATA`: a data (not executable) mapping.
const MISC_MMAP_DATA: u16 = 1 << 13;

/// Bytes of samples held, with no round ended, at which a file is taken to have no
/// rounds and is replayed in two sweeps instead. perf's first round holds whatever the
/// rings gathered while it synthesized the existing processes' records: 0.4 MB in a
/// 2-CPU `perf record -F 20000 -g` measured here (where 256 KiB, the limit before, read
/// such files twice), up to every CPU's whole ring (512 KiB each by default): 4 MiB
/// covers 8 CPUs' rings. Guessing wrong costs one more read, never a wrong answer.
pub const NO_ROUNDS_LIMIT: usize = 4 << 20;

/// Bytes of samples held at most while waiting for rounds to end; past it the oldest
/// half is given.
pub const WINDOW_CAP: usize = 64 << 20;

/// [`NO_ROUNDS_LIMIT`] and [`WINDOW_CAP`] (smaller in tests).
#[derive(Clone, Copy, Debug)]
struct Limits {
    no_rounds: usize,
    window: usize,
}

impl Limits {
    const DEFAULT: Limits = Limits {
        no_rounds: NO_ROUNDS_LIMIT,
        window: WINDOW_CAP,
    };
}

/// What a reader of a recording does with each sample.
pub trait Visitor {
    /// A sample (`rec` its record), with `procs` as they were at its time.
    fn sample(&mut self, procs: &mut Processes, rec: &Record<'_>, s: &Sample<'_>) -> Result<()>;

    /// Records the kernel dropped for a full ring, as a `PERF_RECORD_LOST` says.
    fn lost(&mut self, _n: u64) {}

    /// Samples lost as a `PERF_RECORD_LOST_SAMPLES` says: those the hardware could not
    /// take, or (written by `perf record` 6.0+ and hwprof at the end) each event's own
    /// count of its drops, which includes those `PERF_RECORD_LOST`s announced (so not
    /// to be added to [`Visitor::lost`]'s: see `Profile::lost`).
    fn lost_samples(&mut self, _n: u64) {}
}

/// How a [`replay`] put the records in time order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Order {
    /// Times the file was read: 1 (rounds), or 2 (a file without rounds, see the
    /// module docs).
    pub sweeps: u8,
    /// Side-band records (mmap, comm, fork, exit) that came after a sample later in
    /// time than them had been given, past the window (perf's "out of order events").
    pub late: u64,
}

impl Order {
    /// What a user should be told, if anything.
    pub fn notice(&self) -> Option<String> {
        (self.late > 0).then(|| {
            format!(
                "{} side-band record{} (mmap, comm, fork, exit) came after later samples, \
                 out of the recording's time order by more than the replay holds; \
                 samples around them may be named after the process's earlier mappings",
                self.late,
                if self.late == 1 { "" } else { "s" }
            )
        })
    }
}

/// Replays `pd` into `procs`, handing every sample to `v` in file order, each with the
/// process state at its time (see the module docs).
pub fn replay<V: Visitor + ?Sized>(
    pd: &PerfData,
    procs: &mut Processes,
    v: &mut V,
) -> Result<Order> {
    replay_within(pd, procs, v, Limits::DEFAULT)
}

fn replay_within<V: Visitor + ?Sized>(
    pd: &PerfData,
    procs: &mut Processes,
    v: &mut V,
    limits: Limits,
) -> Result<Order> {
    match one_read(pd, procs, v, limits) {
        Ok(late) => Ok(Order { sweeps: 1, late }),
        Err(Halt::NoRounds) => {
            two_sweeps(pd, procs, v)?;
            Ok(Order { sweeps: 2, late: 0 })
        }
        Err(Halt::Error(e)) => Err(e),
    }
}

/// Why [`one_read`] stopped early.
enum Halt {
    /// The file has no rounds: nothing was given or applied.
    NoRounds,
    Error(Error),
}

impl From<Error> for Halt {
    fn from(e: Error) -> Halt {
        Halt::Error(e)
    }
}

impl From<hwprof_sampler::Error> for Halt {
    fn from(e: hwprof_sampler::Error) -> Halt {
        Halt::Error(e.into())
    }
}

/// A record held until it may be given (a sample, or a LOST or LOST_SAMPLES record,
/// which go in file order too): its bytes are in [`Held::bytes`].
struct Pending {
    /// Its [`Pos`].
    off: u64,
    n: u32,
    len: u32,
    /// Its time, or [`NO_TIME`].
    time: u64,
}

/// [`Pending::time`] of a record without a time (due once the records before it are).
const NO_TIME: u64 = u64::MAX;

/// The samples (and lost counts) held in file order, and what decides when they go.
#[derive(Default)]
struct Held {
    queue: VecDeque<Pending>,
    /// The held records' bytes, in queue order, from `start`.
    bytes: Vec<u8>,
    start: usize,
    /// Rounds ended so far.
    rounds: u64,
    /// Latest time read so far, and at the end of the previous round.
    latest: Option<u64>,
    latest_at_round: Option<u64>,
    /// Samples up to this time may go (every record up to it is in).
    safe: Option<u64>,
    /// Latest time of a sample given.
    given: Option<u64>,
    any_given: bool,
}

impl Held {
    /// Holds the record `bytes` at `at`, of time `time`.
    fn hold(&mut self, at: Pos, time: Option<u64>, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
        self.queue.push_back(Pending {
            off: at.0,
            n: at.1,
            len: bytes.len() as u32,
            time: time.unwrap_or(NO_TIME),
        });
    }

    /// The error of the first held record that does not decode, if one does not.
    fn first_error(&self, pd: &PerfData) -> Result<()> {
        let mut start = self.start;
        for p in &self.queue {
            let end = start + p.len as usize;
            pd.decoder()
                .decode(self.bytes.get(start..end).unwrap_or(&[]), p.off)?;
            start = end;
        }
        Ok(())
    }

    /// Notes a sample of time `time` given.
    fn gave(&mut self, time: Option<u64>) {
        self.given = self.given.max(time);
        self.any_given = true;
    }

    fn held_bytes(&self) -> usize {
        self.bytes.len() - self.start
    }

    /// Whether the oldest held record may go (`all`: the file has ended).
    fn front_due(&self, all: bool) -> bool {
        self.queue
            .front()
            .is_some_and(|p| all || p.time == NO_TIME || self.safe.is_some_and(|s| p.time <= s))
    }
}

/// The reading state of [`one_read`] besides the held samples.
struct State {
    side: SideBand,
    untimed: VecDeque<(Pos, Event)>,
    data: bool,
    exits: bool,
    late: u64,
}

impl State {
    /// Nothing held yet, keeping the side-band records `procs` tracks.
    fn new(procs: &Processes) -> State {
        State {
            side: SideBand::default(),
            untimed: VecDeque::new(),
            data: procs.tracks_data(),
            exits: procs.forgets_exited(),
            late: 0,
        }
    }

    /// Holds the side-band record `rec` (at `at`) if the replay keeps it: in time order
    /// per process, or in file order without a time. One earlier than `given` (the
    /// latest sample given) is late.
    fn side_band(&mut self, at: Pos, rec: &Record<'_>, given: Option<u64>) {
        let Some(ev) = event(rec, self.data, self.exits) else {
            return;
        };
        match rec.time() {
            Some(t) => {
                if given.is_some_and(|g| t < g) {
                    self.late += 1;
                }
                self.side.push(t, at, ev);
            }
            None => self.untimed.push_back((at, ev)),
        }
    }

    /// Gives `s` (at `seq`) to `v` with its process brought up to its time.
    fn give<V: Visitor + ?Sized>(
        &mut self,
        procs: &mut Processes,
        v: &mut V,
        seq: Pos,
        rec: &Record<'_>,
        s: &Sample<'_>,
    ) -> Result<()> {
        while self.untimed.front().is_some_and(|(sq, _)| *sq < seq) {
            if let Some((_, ev)) = self.untimed.pop_front() {
                procs.apply(ev);
            }
        }
        let at = (s.time, seq);
        self.side.advance(procs, KERNEL_PID, at);
        let pid = s.pid.unwrap_or(u32::MAX);
        self.side.advance(procs, pid, at);
        procs.sampled(pid);
        v.sample(procs, rec, s)
    }
}

/// Gives the held records that are due (all of them when `all`, the oldest until
/// `keep` bytes are left when `keep` is set).
fn release<V: Visitor + ?Sized>(
    pd: &PerfData,
    held: &mut Held,
    st: &mut State,
    procs: &mut Processes,
    v: &mut V,
    all: bool,
    keep: Option<usize>,
) -> Result<()> {
    loop {
        let forced = keep.is_some_and(|k| held.held_bytes() > k);
        if !forced && !held.front_due(all) {
            break;
        }
        let Some(p) = held.queue.pop_front() else {
            break;
        };
        let end = held.start + p.len as usize;
        let bytes = held.bytes.get(held.start..end).unwrap_or(&[]);
        // Borrowed where it lies, not moved out of the result (a sample is some 600
        // bytes).
        let decoded = pd.decoder().decode(bytes, p.off);
        let rec = match decoded {
            Ok(ref rec) => rec,
            Err(e) => return Err(e.into()),
        };
        match &rec.body {
            Body::Sample(s) => {
                st.give(procs, v, (p.off, p.n), rec, s)?;
                held.gave((p.time != NO_TIME).then_some(p.time));
            }
            Body::Lost { lost, .. } => v.lost(*lost),
            Body::LostSamples { lost } => v.lost_samples(*lost),
            _ => {}
        }
        held.start = end;
    }
    // Only the records still held stay: the buffer spans at most the window.
    held.bytes.drain(..held.start);
    held.start = 0;
    Ok(())
}

/// The replay in one read of a file with rounds; [`Halt::NoRounds`] (before anything
/// was given or applied) for a file without. Returns the late side-band records.
fn one_read<V: Visitor + ?Sized>(
    pd: &PerfData,
    procs: &mut Processes,
    v: &mut V,
    limits: Limits,
) -> std::result::Result<u64, Halt> {
    let mut st = State::new(procs);
    let mut held = Held::default();
    let mut pos = Positions::default();
    let read = pd.for_each_record_lazily(|off, bytes, rec| -> std::result::Result<(), Halt> {
        let at = pos.of(off);
        let time = match rec {
            Some(rec) => rec.time(),
            None => pd.decoder().sample_time(bytes),
        };
        match rec.map(|r| &r.body) {
            None | Some(Body::Sample(_)) => {
                if held.queue.is_empty()
                    && time.is_none_or(|t| held.safe.is_some_and(|safe| t <= safe))
                {
                    // Due already: given without being held.
                    let rec = pd.decoder().decode(bytes, off)?;
                    if let Body::Sample(s) = &rec.body {
                        st.give(procs, v, at, &rec, s)?;
                    }
                    held.gave(time);
                } else {
                    held.hold(at, time, bytes);
                }
            }
            Some(Body::Lost { .. } | Body::LostSamples { .. }) => held.hold(at, None, bytes),
            Some(Body::FinishedRound) => {
                held.rounds += 1;
                held.safe = held.latest_at_round;
                held.latest_at_round = held.latest;
                release(pd, &mut held, &mut st, procs, v, false, None)?;
            }
            Some(_) => {
                if let Some(rec) = rec {
                    st.side_band(at, rec, held.given);
                }
            }
        }
        held.latest = held.latest.max(time);
        if held.rounds == 0 && !held.any_given && held.held_bytes() > limits.no_rounds {
            return Err(Halt::NoRounds);
        }
        if held.held_bytes() > limits.window {
            release(
                pd,
                &mut held,
                &mut st,
                procs,
                v,
                false,
                Some(limits.window / 2),
            )?;
        }
        Ok(())
    });
    if let Err(e) = read {
        // The held samples come before the error in the file: the first error is theirs,
        // if one has any (they were not decoded yet).
        held.first_error(pd)?;
        return Err(e);
    }
    release(pd, &mut held, &mut st, procs, v, true, None)?;
    Ok(st.late)
}

/// The replay of a file without rounds: the side-band records first (samples skipped
/// undecoded), then the samples.
fn two_sweeps<V: Visitor + ?Sized>(pd: &PerfData, procs: &mut Processes, v: &mut V) -> Result<()> {
    let mut st = State::new(procs);
    let mut pos = Positions::default();
    let side_band = |off, rec: &Record<'_>| -> Result<()> {
        st.side_band(pos.of(off), rec, None);
        Ok(())
    };
    // The first sweep does not decode the samples (most of the file); when it fails, a
    // sweep that decodes everything finds the first error in file order, as the second
    // would.
    if let Err(e) = pd.for_each_non_sample(side_band) {
        pd.for_each_record(|_, _| Ok::<(), Error>(()))?;
        return Err(e);
    }
    let mut pos = Positions::default();
    pd.for_each_record(|off, rec| -> Result<()> {
        let seq = pos.of(off);
        match &rec.body {
            Body::Sample(s) => st.give(procs, v, seq, rec, s)?,
            Body::Lost { lost, .. } => v.lost(*lost),
            Body::LostSamples { lost } => v.lost_samples(*lost),
            _ => {}
        }
        Ok(())
    })
}

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
    queues: HashMap<u32, Timed<Event>>,
    /// Per parent, its children's FORKs (the child's pid): each is applied before the
    /// parent's next record after it, so that a child copies its parent as it was at
    /// the fork even when a later sample of the parent (earlier in the file, from
    /// another ring) has brought the parent past it. A FORK its child's own sample
    /// applied first stays here until the parent passes it, and then applies nothing.
    forks: HashMap<u32, Timed<u32>>,
}

/// Items of a time and position each ([`Pos`]), given in (time, position) order.
#[derive(Debug)]
struct Timed<T> {
    q: VecDeque<(u64, Pos, T)>,
    /// An item came before one pushed earlier: sort before the next look.
    unsorted: bool,
}

impl<T> Default for Timed<T> {
    fn default() -> Self {
        Timed {
            q: VecDeque::new(),
            unsorted: false,
        }
    }
}

impl<T> Timed<T> {
    fn push(&mut self, time: u64, at: Pos, x: T) {
        if self.q.back().is_some_and(|&(t, p, _)| (t, p) > (time, at)) {
            self.unsorted = true;
        }
        self.q.push_back((time, at, x));
    }

    /// The items, first the earliest.
    fn in_order(&mut self) -> &mut VecDeque<(u64, Pos, T)> {
        if self.unsorted {
            self.q.make_contiguous().sort_by_key(|&(t, p, _)| (t, p));
            self.unsorted = false;
        }
        &mut self.q
    }
}

impl SideBand {
    /// Holds `ev`, of time `time` and position `at`.
    pub fn push(&mut self, time: u64, at: Pos, ev: Event) {
        if let Event::Fork { pid, ppid, .. } = ev
            && pid != ppid
        {
            self.forks.entry(ppid).or_default().push(time, at, pid);
        }
        self.queues.entry(ev.pid()).or_default().push(time, at, ev);
    }

    /// Applies the held records of `pid` due at `at` (a sample's time and position):
    /// earlier times, or an equal time earlier in the file (perf's order); without a
    /// sample time, file order. A FORK first advances its parent to it, and a parent's
    /// children's FORKs before its next record are applied before that record.
    pub fn advance(&mut self, procs: &mut Processes, pid: u32, at: (Option<u64>, Pos)) {
        loop {
            let Some(&(t, sq, _)) = self.queues.get_mut(&pid).and_then(|q| q.in_order().front())
            else {
                // Most samples: nothing held for their process.
                return;
            };
            let due = match at.0 {
                Some(st) => t < st || (t == st && sq < at.1),
                None => sq < at.1,
            };
            if !due {
                return;
            }
            self.fork_children(procs, pid, (t, sq));
            let Some((t, sq, ev)) = self.queues.get_mut(&pid).and_then(|q| q.q.pop_front()) else {
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

    /// Applies the FORKs of `parent`'s children that came before `before` (the time and
    /// position of the parent's next record), each child's held records up to its fork
    /// with them: the children copy the parent as it is now, before that record changes
    /// it.
    fn fork_children(&mut self, procs: &mut Processes, parent: u32, before: (u64, Pos)) {
        while let Some(f) = self.forks.get_mut(&parent)
            && let Some(&(t, (off, n), child)) = f.in_order().front()
            && (t, (off, n)) < before
        {
            f.q.pop_front();
            self.advance(procs, child, (Some(t), (off, n.saturating_add(1))));
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
