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
//!    weighted by its time off CPU in µs; with `wall`, on-CPU samples too. One `u64`
//!    per sample, all that is kept of the record pass.
//! 4. [`profile`]: the recording symbolized with the plan's weights (merged, when
//!    asked: memory then follows the distinct stacks), every stack ending in an `[off]`
//!    or `[on]` frame with `wall`. Fold it with [`crate::fold::Weight::Micros`].

pub mod pair;

use hwprof_sampler::perfdata::reader::{EventAttr, PerfData};
use hwprof_sampler::perfdata::tracing::{self, TraceField, TraceFormat};
use hwprof_sampler::record::{Body, Record};
use hwprof_symbolize::{Frame, FrameId, Options, Profile};

pub use pair::{Block, Switch, pair};

use crate::{Error, Result};

/// The tracepoint whose samples are switch-outs.
pub const SCHED_SWITCH: &str = "sched:sched_switch";

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
    /// One entry per sample, in file order (the profile's samples): a switch-out for a
    /// `sched_switch` sample, a sign of running for any other.
    pub per_sample: Vec<Switch>,
    /// Exact switch-ins (`PERF_RECORD_SWITCH`, recorded with `--switch-events`).
    pub switch_ins: Vec<Switch>,
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
            out: Switches::default(),
        }
    }

    /// Takes one record.
    pub fn add(&mut self, rec: &Record<'_>) {
        // Exact switch-ins: they end a block where the tracepoint, seen only in the task
        // switching out, cannot.
        if let Body::Switch { out: false, .. } = &rec.body
            && let Some(id) = rec.sample_id
            && let (Some(time), Some(tid)) = (id.time, id.tid)
        {
            self.out.switch_ins.push(Switch {
                time,
                tid,
                next_pid: None,
                out: false,
            });
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

/// What each recorded sample becomes in the off-CPU profile (see [`Plan::reweigh`]):
/// one `u64` per sample, in file order, so that the profile itself can be built merged
/// (its memory then follows the distinct stacks, not the recording).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Per sample: [`Plan::DROP`], [`Plan::ON`], or a block's length in µs.
    per_sample: Vec<u64>,
    wall: bool,
}

impl Plan {
    /// Left out.
    const DROP: u64 = 0;
    /// An on-CPU sample of the wall-clock view.
    const ON: u64 = u64::MAX;
    /// The event of off-CPU blocks in a profile built with [`Plan::reweigh`].
    pub const OFF_EVENT: u32 = 0;
    /// The event of on-CPU samples (wall-clock view) in such a profile.
    pub const ON_EVENT: u32 = 1;

    /// The plan for the samples `sw` was collected from: the switch-outs paired with
    /// their ends ([`pair`]) weigh their time off CPU in µs (blocks shorter than
    /// `min_block_us`, at least 1, are left out); with `wall`, the other events' samples
    /// (cpu-clock: periods in ns) weigh their period in µs.
    pub fn new(sw: Switches, min_block_us: u64, wall: bool) -> Plan {
        let aligned = sw.per_sample.len();
        let mut per_sample: Vec<u64> = sw
            .per_sample
            .iter()
            .map(|s| if wall && !s.out { Plan::ON } else { Plan::DROP })
            .collect();
        // After the sample-aligned entries: a block's index is always a sample's.
        let mut switches = sw.per_sample;
        switches.extend(sw.switch_ins);
        for b in pair(&switches) {
            let us = b.ns / 1000;
            if us >= min_block_us.max(1)
                && b.index < aligned
                && let Some(slot) = per_sample.get_mut(b.index)
            {
                // Never `ON`: an on-CPU sample does not start a block.
                *slot = us.min(Plan::ON - 1);
            }
        }
        Plan { per_sample, wall }
    }

    /// Samples the plan is for.
    pub fn len(&self) -> usize {
        self.per_sample.len()
    }

    /// True when it is for no sample.
    pub fn is_empty(&self) -> bool {
        self.per_sample.is_empty()
    }

    /// What sample `index` (file order, all events) of `period` becomes: a block
    /// ([`Plan::OFF_EVENT`], µs off CPU), an on-CPU sample ([`Plan::ON_EVENT`], its
    /// period in µs, at least 1 µs), or nothing. For
    /// [`Profile::build_reweighted`](hwprof_symbolize::Profile::build_reweighted).
    pub fn reweigh(&self, index: usize, period: u64) -> Option<(u32, u64)> {
        match self.per_sample.get(index).copied()? {
            Plan::DROP => None,
            Plan::ON => (period >= 1000).then_some((Plan::ON_EVENT, period / 1000)),
            us => Some((Plan::OFF_EVENT, us)),
        }
    }

    /// The profile built with [`Plan::reweigh`] made an off-CPU one: all samples of
    /// event 0, and with `wall` each stack ending in an `[off]` or `[on]` frame.
    pub fn tag(&self, mut p: Profile) -> Profile {
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

    /// The plan applied to `p`, the recording's profile built unmerged (one sample per
    /// recorded sample, in file order), as [`profile`] builds it from the file. An
    /// error when `p` does not have one sample per entry of the plan.
    pub fn apply(&self, mut p: Profile) -> Result<Profile> {
        if p.samples.len() != self.len() {
            return Err(Error::Misaligned {
                read: self.len(),
                symbolized: p.samples.len(),
            });
        }
        let samples = std::mem::take(&mut p.samples);
        p.samples = samples
            .into_iter()
            .enumerate()
            .filter_map(|(i, mut s)| {
                let (event, period) = self.reweigh(i, s.period)?;
                (s.event, s.period, s.weight) = (event, period, None);
                Some(s)
            })
            .collect();
        Ok(self.tag(p))
    }
}

/// The off-CPU profile of the recording `pd` (`sw` collected from it): symbolized as
/// `opts` asks, each sample weighted as [`Plan::new`] says (with `opts.merge`, the
/// samples of one stack and thread merge, so memory follows the distinct stacks); all
/// samples of event 0, and with `wall` every stack ending in `[off]` or `[on]`. Fold it
/// with [`crate::fold::Weight::Micros`]. An error when the file does not hold the
/// samples `sw` was collected from.
pub fn profile(
    pd: &PerfData,
    opts: &Options,
    sw: Switches,
    min_block_us: u64,
    wall: bool,
) -> Result<Profile> {
    let plan = Plan::new(sw, min_block_us, wall);
    let mut seen = 0;
    let p = Profile::build_reweighted(pd, opts, &mut |i, period| {
        seen = seen.max(i + 1);
        plan.reweigh(i, period)
    })?;
    if seen != plan.len() {
        return Err(Error::Misaligned {
            read: plan.len(),
            symbolized: seen,
        });
    }
    Ok(plan.tag(p))
}

#[cfg(test)]
mod tests;
