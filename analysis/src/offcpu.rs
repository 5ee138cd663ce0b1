//! Off-CPU time: where threads wait, from `sched:sched_switch` samples with callchains.
//!
//! Three steps, each usable on its own:
//! 1. [`SwitchFormat`]: where `prev_pid`, `prev_state` and `next_pid` sit in a switch
//!    sample's raw data, from the tracepoint format stored in the recording
//!    ([`SwitchFormat::of_recording`], the `HEADER_TRACING_DATA` section), never from
//!    the running kernel's unless the recording has none (a recording from another
//!    kernel may lay the fields out differently).
//! 2. [`Collector`]: one pass over the records: one [`Switch`] per sample in file order
//!    (switch-outs, and the other events' samples, which show a thread running), plus
//!    the exact switch-ins of `PERF_RECORD_SWITCH` records.
//! 3. [`Plan`]: the switch-outs paired with their ends ([`pair`]), each blocked stack
//!    weighted by its time off CPU in µs; with `wall`, on-CPU samples too. One entry
//!    per switch-out that ends a block, keyed by its thread and time (which its sample
//!    carries: no sample numbers, no file order to keep aligned), all that is kept of
//!    the record pass. Given the [`Window`] an attached
//!    recording covered ([`Plan::within`], [`pair_within`]), the waits in progress at
//!    its edges count for their time inside it: those at the end up to its end, those
//!    at the start (and threads off CPU all through it) as samples of their own, on the
//!    kernel stack read from /proc when it opened, under [`BLOCKED_AT_START`].
//! 4. [`profile`]: the recording symbolized with the plan's weights (merged, when
//!    asked: memory then follows the distinct stacks), every stack ending in an `[off]`
//!    or `[on]` frame with `wall`. Fold it with [`crate::fold::Weight::Micros`].

pub mod pair;

use hwprof_sampler::perfdata::reader::{EventAttr, PerfData};
use hwprof_sampler::perfdata::tracing::{self, TraceField, TraceFormat};
use hwprof_sampler::record::{Body, Record};
use std::collections::HashMap;

use hwprof_sampler::record::Sample as RecSample;
use hwprof_symbolize::{
    Frame, FrameId, FrameKind, Options, Profile, ProfileBuilder, Sample, Weighed,
};

pub use pair::{Block, Early, Edges, Paired, Switch, pair, pair_within};

use crate::Result;

/// The tracepoint whose samples are switch-outs.
pub const SCHED_SWITCH: &str = "sched:sched_switch";

/// The event whose samples are blocks summed in the kernel, as `perf record --off-cpu`
/// names it (and hwprof offcpu's BPF engine writes it): one sample per thread and
/// stack, its period the time off CPU in ns.
pub const OFFCPU_TIME: &str = "offcpu-time";

/// The index of the [`OFFCPU_TIME`] event among `attrs`.
pub fn summed_event(attrs: &[EventAttr]) -> Option<usize> {
    attrs.iter().position(|a| a.name == OFFCPU_TIME)
}

/// Where the fields of a `sched_switch` sample's raw data sit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwitchFormat {
    prev_pid: Option<TraceField>,
    prev_state: Option<TraceField>,
    next_pid: Option<TraceField>,
}

/// The fields of one `sched_switch` sample that the pairing and its readers use; a field
/// the format does not have, or the raw data does not hold, is `None`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwitchFields {
    /// The task switching out.
    pub prev_pid: Option<u32>,
    /// Its state (0: preempted, running; else why it blocked: `TASK_*` bits).
    pub prev_state: Option<i64>,
    /// The task switching in.
    pub next_pid: Option<u32>,
}

impl SwitchFormat {
    /// The fields of a parsed `sched_switch` format.
    pub fn from_format(f: &TraceFormat) -> SwitchFormat {
        SwitchFormat {
            prev_pid: f.field("prev_pid").cloned(),
            prev_state: f.field("prev_state").cloned(),
            next_pid: f.field("next_pid").cloned(),
        }
    }

    /// The fields of the text of a tracefs `events/sched/sched_switch/format` file.
    pub fn parse(text: &str) -> SwitchFormat {
        SwitchFormat::from_format(&TraceFormat::parse("sched", text))
    }

    /// The `sched_switch` format in a tracing data section; `None` when the section has
    /// none, an error when it cannot be read.
    pub fn from_tracing_data(bytes: &[u8]) -> Result<Option<SwitchFormat>> {
        Ok(tracing::formats(bytes)?
            .iter()
            .find(|f| f.system == "sched" && f.name == "sched_switch")
            .map(SwitchFormat::from_format))
    }

    /// The format stored in `pd`: `None` when it holds no tracing data or none for
    /// `sched_switch` (then only the running kernel's format is left, which may not be
    /// the recording kernel's), an error when its tracing data cannot be read.
    pub fn of_recording(pd: &PerfData) -> Result<Option<SwitchFormat>> {
        match pd.tracing_data()? {
            Some(bytes) => SwitchFormat::from_tracing_data(&bytes),
            None => Ok(None),
        }
    }

    /// Decodes the fields of a sample's raw data (the pids must fit a `pid_t` ≥ 0).
    pub fn decode(&self, raw: &[u8]) -> SwitchFields {
        let int = |f: &Option<TraceField>| f.as_ref().and_then(|f| f.int(raw));
        let pid = |f: &Option<TraceField>| int(f).and_then(|v| u32::try_from(v).ok());
        SwitchFields {
            prev_pid: pid(&self.prev_pid),
            prev_state: int(&self.prev_state),
            next_pid: pid(&self.next_pid),
        }
    }

    /// The format has `next_pid`, without which only switch-in records and on-CPU samples
    /// end blocks.
    pub fn has_next_pid(&self) -> bool {
        self.next_pid.is_some()
    }
}

/// The index of the `sched:sched_switch` event among a recording's events.
pub fn switch_event(attrs: &[EventAttr]) -> Option<usize> {
    attrs.iter().position(|e| e.name.starts_with(SCHED_SWITCH))
}

/// What the record pass found (see [`Collector`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Switches {
    /// The index of the event whose samples are switch-outs.
    pub switch_event: usize,
    /// One entry per sample, in file order (the profile's samples): a switch-out for a
    /// `sched_switch` sample, a sign of running for any other.
    pub per_sample: Vec<Switch>,
    /// Exact switch-ins (`PERF_RECORD_SWITCH` and, system-wide,
    /// `PERF_RECORD_SWITCH_CPU_WIDE`, recorded with `--switch-events`).
    pub switch_ins: Vec<Switch>,
    /// Threads the kernel reported created (FORK records it wrote: synthesized ones,
    /// of threads that existed before, carry time 0).
    pub born: Vec<u32>,
    /// Threads the kernel reported exited (EXIT records).
    pub exited: Vec<u32>,
}

/// The record pass of the off-CPU analysis: give it every record, in file order.
#[derive(Clone, Debug)]
pub struct Collector {
    switch_event: usize,
    format: SwitchFormat,
    out: Switches,
}

impl Collector {
    /// A pass for a recording whose `sched_switch` event is attr `switch_event`, its
    /// raw data laid out as `format` says.
    pub fn new(switch_event: usize, format: SwitchFormat) -> Collector {
        Collector {
            switch_event,
            format,
            out: Switches {
                switch_event,
                ..Switches::default()
            },
        }
    }

    /// Takes one record.
    pub fn add(&mut self, rec: &Record<'_>) {
        // Exact switch-ins: they end a block where the tracepoint, seen only in the task
        // switching out, cannot.
        if let Body::Switch { out: false, .. } | Body::SwitchCpuWide { out: false, .. } = &rec.body
            && let Some(id) = rec.sample_id
            && let (Some(time), Some(tid)) = (id.time, id.tid)
        {
            self.out.switch_ins.push(Switch {
                time,
                tid,
                // Exact: the thread itself came in.
                next_pid: Some(tid),
                out: false,
            });
        }
        match &rec.body {
            Body::Fork(t) if t.time != 0 => self.out.born.push(t.tid),
            Body::Exit(t) => self.out.exited.push(t.tid),
            _ => {}
        }
        if let Body::Sample(s) = &rec.body {
            // (A record of a file with one attr and no sample ids is that attr's.)
            let out = rec.attr.unwrap_or(0) == self.switch_event;
            self.out.per_sample.push(Switch {
                time: s.time.unwrap_or(0),
                tid: s.tid.unwrap_or(0),
                next_pid: match (out, s.raw) {
                    (true, Some(raw)) => self.format.decode(raw).next_pid,
                    _ => None,
                },
                out,
            });
        }
    }

    /// What was found.
    pub fn finish(self) -> Switches {
        self.out
    }
}

/// [`Collector`] over every record of `pd`.
pub fn collect(pd: &PerfData, switch_event: usize, format: SwitchFormat) -> Result<Switches> {
    let mut c = Collector::new(switch_event, format);
    pd.for_each_record(|_, rec| -> Result<()> {
        c.add(rec);
        Ok(())
    })?;
    Ok(c.finish())
}

/// The frame at the root of a wait in progress when the recording's window opened (no
/// sample recorded its stack): under it, the kernel stack read from /proc then, if any.
pub const BLOCKED_AT_START: &str = "[blocked at start]";

/// The window a recording covered, and the target's threads as they were when it
/// opened: what [`Plan::within`] needs to count the time of the waits in progress at its
/// edges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// When the events were enabled (ns, in the samples' clock).
    pub start: u64,
    /// When they were disabled (ns, in the samples' clock).
    pub end: u64,
    /// The target's threads as /proc showed them just before the window opened.
    pub threads: Vec<Attached>,
}

impl Window {
    /// The threads of `window` (none without one), by tid.
    fn by_tid(window: Option<&Window>) -> HashMap<u32, Attached> {
        window
            .map(|w| w.threads.iter().map(|t| (t.tid, t.clone())).collect())
            .unwrap_or_default()
    }
}

/// A thread of the target when the window opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attached {
    /// Its process.
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    /// Its command name.
    pub comm: String,
    /// Its kernel stack then, leaf first (function names, as /proc/PID/task/TID/stack
    /// gives them); empty when unreadable or when kernel frames are not wanted.
    pub kernel_stack: Vec<String>,
    /// It still existed when the window closed: with no event in the window, it was off
    /// CPU for all of it.
    pub through: bool,
}

/// What each recorded sample becomes in the off-CPU profile (see [`Plan::reweigh`]):
/// the switch-outs that end a block, each keyed by what its sample carries (its thread
/// and time), so that the profile can be built merged in any order (its memory then
/// follows the distinct stacks, not the recording); the other events' samples need no
/// entry (with `wall` each weighs its own period).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The event whose samples are switch-outs.
    switch_event: usize,
    /// The switch-outs that weigh something, sorted by (time, tid); several switch-outs
    /// of one thread at one time are all here, in file order, whatever they weigh.
    blocks: Vec<Keyed>,
    wall: bool,
    /// Waits in progress when the window opened (no sample holds them), in µs.
    early: Vec<(u32, u64)>,
    /// What was read of the threads when it opened, by tid.
    attached: HashMap<u32, Attached>,
    /// The switch event's samples are blocks summed in the kernel ([`OFFCPU_TIME`]):
    /// each weighs its period (ns), no pairing.
    summed: bool,
}

/// A switch-out in the [`Plan`]: its thread and time (the key its sample carries) and its
/// block's length in µs ([`Plan::DROP`] when none counts, [`Plan::TAKEN`] once a sample
/// took it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Keyed {
    time: u64,
    tid: u32,
    us: u64,
}

impl Keyed {
    fn key(&self) -> (u64, u32) {
        (self.time, self.tid)
    }
}

impl Plan {
    /// Left out.
    const DROP: u64 = 0;
    /// A switch-out whose sample was weighed already.
    const TAKEN: u64 = u64::MAX;
    /// The event of off-CPU blocks in a profile built with [`Plan::reweigh`].
    pub const OFF_EVENT: u32 = 0;
    /// The event of on-CPU samples (wall-clock view) in such a profile.
    pub const ON_EVENT: u32 = 1;

    /// The plan for the samples `sw` was collected from: the switch-outs paired with
    /// their ends ([`pair`]) weigh their time off CPU in µs (blocks shorter than
    /// `min_block_us`, at least 1, are left out); with `wall`, the other events' samples
    /// (cpu-clock: periods in ns) weigh their period in µs.
    pub fn new(sw: Switches, min_block_us: u64, wall: bool) -> Plan {
        Plan::build(sw, min_block_us, wall, None)
    }

    /// [`Plan::new`] for a recording that covered `window`, counting the time inside it
    /// of the waits in progress at its edges ([`pair_within`]): a wait still in progress
    /// when it closed weighs its time up to the end; one in progress when it opened, and
    /// a thread that stayed off CPU all through it, become samples of their own (see
    /// [`Plan::tag`]).
    pub fn within(sw: Switches, min_block_us: u64, wall: bool, window: &Window) -> Plan {
        Plan::build(sw, min_block_us, wall, Some(window))
    }

    fn build(sw: Switches, min_block_us: u64, wall: bool, window: Option<&Window>) -> Plan {
        let aligned = sw.per_sample.len();
        let min_us = min_block_us.max(1);
        let mut switches = sw.per_sample;
        switches.extend(sw.switch_ins);
        let paired = match window {
            None => Paired {
                blocks: pair(&switches),
                early: Vec::new(),
            },
            Some(w) => {
                let edges = Edges {
                    start: w.start,
                    end: w.end,
                    present: w.threads.iter().map(|t| t.tid).collect(),
                    born: sw.born.into_iter().collect(),
                    exited: sw.exited.into_iter().collect(),
                    through: w
                        .threads
                        .iter()
                        .filter(|t| t.through)
                        .map(|t| t.tid)
                        .collect(),
                };
                pair_within(&switches, &edges)
            }
        };
        // Each switch-out's block, by its index (switch-ins, after the samples, start
        // none).
        switches.truncate(aligned);
        let mut us_of = vec![Plan::DROP; aligned];
        for b in paired.blocks {
            let us = b.ns / 1000;
            if us >= min_us
                && let Some(slot) = us_of.get_mut(b.index)
            {
                // Never `TAKEN`.
                *slot = us.min(Plan::TAKEN - 1);
            }
        }
        let mut keyed: Vec<Keyed> = switches
            .into_iter()
            .enumerate()
            .filter(|(_, s)| s.out)
            .map(|(i, s)| Keyed {
                time: s.time,
                tid: s.tid,
                us: us_of.get(i).copied().unwrap_or(Plan::DROP),
            })
            .collect();
        drop(us_of);
        // Stable: the switch-outs of one thread at one time stay in file order.
        keyed.sort_by_key(Keyed::key);
        let mut blocks = Vec::new();
        for same in keyed.chunk_by(|a, b| a.key() == b.key()) {
            if same.len() > 1 || same.iter().any(|k| k.us != Plan::DROP) {
                blocks.extend_from_slice(same);
            }
        }
        drop(keyed);
        let early = paired
            .early
            .iter()
            .map(|e| (e.tid, e.ns / 1000))
            .filter(|&(_, us)| us >= min_us)
            .collect();
        let attached = Window::by_tid(window);
        Plan {
            switch_event: sw.switch_event,
            blocks,
            wall,
            early,
            attached,
            summed: false,
        }
    }

    /// The plan for a recording whose event `event` ([`OFFCPU_TIME`]) holds the blocks
    /// summed in the kernel (hwprof's BPF engine, `perf record --off-cpu`): each of its
    /// samples weighs its period (ns) in µs; `early` are the waits in progress when the
    /// `window` opened, by thread, in µs (under [`BLOCKED_AT_START`], on the kernel
    /// stacks the window read); with `wall` the other events' samples weigh their
    /// period too.
    pub fn summed(
        event: usize,
        wall: bool,
        early: Vec<(u32, u64)>,
        window: Option<&Window>,
    ) -> Plan {
        Plan {
            switch_event: event,
            blocks: Vec::new(),
            wall,
            early,
            attached: Window::by_tid(window),
            summed: true,
        }
    }

    /// What a sample of event `event` (an index among the recording's events), thread
    /// `tid` and time `time`, of `period`, becomes: a block ([`Plan::OFF_EVENT`], µs off
    /// CPU) when it is a switch-out that ends one, an on-CPU sample ([`Plan::ON_EVENT`],
    /// its period in µs, at least 1 µs) with `wall`, or nothing. The samples of one
    /// thread at one time take their blocks in the order they come (file order). For
    /// [`ProfileBuilder::weigh`](hwprof_symbolize::ProfileBuilder::weigh).
    pub fn reweigh(
        &mut self,
        event: usize,
        tid: u32,
        time: u64,
        period: u64,
    ) -> Option<(u32, u64)> {
        if event != self.switch_event {
            return (self.wall && period >= 1000).then_some((Plan::ON_EVENT, period / 1000));
        }
        if self.summed {
            return (period >= 1000).then_some((Plan::OFF_EVENT, period / 1000));
        }
        let key = (time, tid);
        let first = self.blocks.partition_point(|k| k.key() < key);
        let k = self
            .blocks
            .get_mut(first..)?
            .iter_mut()
            .take_while(|k| k.key() == key)
            .find(|k| k.us != Plan::TAKEN)?;
        let us = std::mem::replace(&mut k.us, Plan::TAKEN);
        (us != Plan::DROP).then_some((Plan::OFF_EVENT, us))
    }

    /// The profile built with [`Plan::reweigh`] made an off-CPU one: the waits in
    /// progress when the window opened added (see [`Plan::add_early`]), all samples of
    /// event 0, and with `wall` each stack ending in an `[off]` or `[on]` frame.
    pub fn tag(&self, mut p: Profile) -> Profile {
        self.add_early(&mut p);
        let mut tag = |name: &str| -> FrameId {
            p.frames.push(Frame::named(name));
            (p.frames.len() - 1) as FrameId
        };
        let tags = self.wall.then(|| (tag("[off]"), tag("[on]")));
        for s in &mut p.samples {
            if let Some((off, on)) = tags {
                let t = if s.event == Plan::ON_EVENT { on } else { off };
                s.stack.insert(0, t);
            }
            s.event = 0;
        }
        p
    }

    /// Adds a sample for each wait in progress when the window opened: its thread (pid
    /// and command name as /proc said then, else as the profile's samples of the thread
    /// say), its time in the window, and as its stack the thread's kernel stack read then
    /// (leaf first) under a [`BLOCKED_AT_START`] frame: no sample recorded where it
    /// blocked, and its user stack was not read.
    fn add_early(&self, p: &mut Profile) {
        if self.early.is_empty() {
            return;
        }
        let known: HashMap<u32, (u32, u32)> =
            p.samples.iter().map(|s| (s.tid, (s.pid, s.comm))).collect();
        let mut frames: HashMap<Frame, FrameId> = HashMap::new();
        let mut intern = |p: &mut Profile, f: Frame| -> FrameId {
            *frames.entry(f).or_insert_with_key(|f| {
                p.frames.push(f.clone());
                (p.frames.len() - 1) as FrameId
            })
        };
        let comm_id = |p: &mut Profile, name: &str| -> u32 {
            match p.comms.iter().position(|c| c == name) {
                Some(i) => i as u32,
                None => {
                    p.comms.push(name.to_string());
                    (p.comms.len() - 1) as u32
                }
            }
        };
        for &(tid, us) in &self.early {
            let a = self.attached.get(&tid);
            let (pid, comm) = match (a, known.get(&tid)) {
                (Some(a), _) => (a.pid, comm_id(p, &a.comm)),
                (None, Some(&known)) => known,
                (None, None) => (tid, comm_id(p, "[unknown]")),
            };
            let mut stack: Vec<FrameId> = Vec::new();
            for name in a.map_or(&[][..], |a| &a.kernel_stack[..]) {
                let f = Frame {
                    function: Some(name.clone()),
                    module: Some("[kernel.kallsyms]".to_string()),
                    kind: FrameKind::Kernel,
                    ..Frame::named(name)
                };
                stack.push(intern(p, f));
            }
            stack.push(intern(p, Frame::named(BLOCKED_AT_START)));
            p.samples.push(Sample {
                event: Plan::OFF_EVENT,
                pid,
                tid,
                comm,
                time: None,
                cpu: None,
                period: us,
                weight: None,
                count: 1,
                stack,
            });
        }
    }

    /// The plan applied to `p`, the recording's profile built unmerged (one sample per
    /// recorded sample, each with its time), as [`profile`] builds it from the file.
    pub fn apply(mut self, mut p: Profile) -> Profile {
        let samples = std::mem::take(&mut p.samples);
        p.samples = samples
            .into_iter()
            .filter_map(|mut s| {
                let time = s.time.unwrap_or(0);
                let (event, period) = self.reweigh(s.event as usize, s.tid, time, s.period)?;
                (s.event, s.period, s.weight) = (event, period, None);
                Some(s)
            })
            .collect();
        self.tag(p)
    }
}

/// The off-CPU profile of the recording `pd` whose event `event` ([`OFFCPU_TIME`])
/// holds the blocks summed in the kernel: [`profile`] with [`Plan::summed`].
pub fn profile_summed(pd: &PerfData, opts: &Options, plan: Plan) -> Result<Profile> {
    profile_with(pd, opts, plan)
}

/// The off-CPU profile of the recording `pd` (`sw` collected from it): symbolized as
/// `opts` asks, each sample weighted as [`Plan::new`] says (with `opts.merge`, the
/// samples of one stack and thread merge, so memory follows the distinct stacks); all
/// samples of event 0, and with `wall` every stack ending in `[off]` or `[on]`. Fold it
/// with [`crate::fold::Weight::Micros`]. Each sample finds its weight by its event,
/// thread and time, whatever the order the replay hands it over in (the samples of one
/// thread at one time, which no key tells apart, take their blocks in file order).
///
/// With the `window` the recording covered, the time inside it of the waits in
/// progress at its edges counts too ([`Plan::within`]).
pub fn profile(
    pd: &PerfData,
    opts: &Options,
    sw: Switches,
    min_block_us: u64,
    wall: bool,
    window: Option<&Window>,
) -> Result<Profile> {
    profile_with(pd, opts, Plan::build(sw, min_block_us, wall, window))
}

/// The profile of `pd` weighed by `plan`, tagged.
fn profile_with(pd: &PerfData, opts: &Options, mut plan: Plan) -> Result<Profile> {
    let mut weigh = |rec: &Record<'_>, s: &RecSample<'_>, period| {
        let (event, period) = plan.reweigh(
            rec.attr.unwrap_or(0),
            s.tid.unwrap_or(0),
            s.time.unwrap_or(0),
            period,
        )?;
        // A summed sample (offcpu-time) carries the blocks it sums as its weight.
        let count = match (plan.summed, rec.attr == Some(plan.switch_event)) {
            (true, true) => s.perf_weight().unwrap_or(1).max(1),
            _ => 1,
        };
        Some(Weighed {
            event,
            period,
            weight: None,
            count,
        })
    };
    let p = ProfileBuilder::new(pd, opts)
        .weigh(&mut weigh)
        .build()?
        .profile;
    Ok(plan.tag(p))
}

#[cfg(test)]
mod tests;
