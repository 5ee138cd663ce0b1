//! Exports of a recording for other profilers: pprof ([`pprof`]), speedscope
//! ([`speedscope`]) and the Firefox Profiler ([`firefox`]).
//!
//! Every writer works from one symbolized [`Profile`] (its interned frames, command
//! names and samples: no string is copied per sample) and a list of [`Series`]: the
//! dimensions of the recording, each an event's samples read as one value in one unit.
//! [`Export::load`] builds both from a perf.data file:
//!
//! - every sampled event is a series of its periods: CPU time in ns for `cpu-clock` and
//!   `task-clock`, events counted for the others (`cycles`, `instructions`, the
//!   members of a group each on their own, so that their ratio per function is one
//!   division), samples for tracepoints;
//! - the sums the BPF engines write are two series each: [`OFFCPU_TIME`] (ns off CPU and
//!   blocks), [`ALLOCATED_BYTES`]/[`LEAKED_BYTES`] (bytes and allocations or blocks),
//!   [`IO_TIME`] (ns inside I/O syscalls and calls);
//! - a recording with `sched:sched_switch` samples (and no `offcpu-time`) gets its
//!   off-CPU time as one more event, [`OFF_CPU`], paired as `hwprof offcpu` pairs it
//!   ([`crate::offcpu::profile`]), each block's time in ns (µs resolution) at its
//!   switch-out.
//!
//! With [`Options::merge`] the profile holds the distinct stacks (pprof, speedscope:
//! memory follows the answer); the Firefox Profiler's also needs every sample's time:
//! [`Export::load_timeline`] adds the timeline of the merged samples, in which a run of
//! one (a loop's) is two entries ([`hwprof_symbolize::timeline`]).

pub mod firefox;
pub mod pprof;
pub mod speedscope;

use std::collections::HashMap;

use hwprof_pmu::attr::types;
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_symbolize::buildid::{self, BuildId};
use hwprof_symbolize::{Frame, FrameId, FrameKind, Options, Profile, ProfileBuilder};

use crate::alloc::{ALLOCATED_BYTES, LEAKED_BYTES};
use crate::io::IO_TIME;
use crate::offcpu::{self, OFFCPU_TIME, SwitchFormat};

/// The event added for the off-CPU time paired from `sched:sched_switch` samples.
pub const OFF_CPU: &str = "off-cpu";

/// The unit of a series' values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Time, ns.
    Nanoseconds,
    /// Memory, bytes.
    Bytes,
    /// Events or things counted.
    Count,
}

impl Unit {
    /// pprof's (and speedscope's) name of the unit.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Nanoseconds => "nanoseconds",
            Unit::Bytes => "bytes",
            Unit::Count => "count",
        }
    }
}

/// Which number of a [`hwprof_symbolize::Sample`] a series reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    /// Its period: the events it stands for (ns, bytes, events).
    Period,
    /// Its weight: what a summed sample counts (blocks, allocations, calls).
    Weight,
}

/// One dimension of the recording: the samples of one event, read as one value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Series {
    /// The event (an index into [`Profile::events`]).
    pub event: u32,
    /// Its name in the export (`cpu-clock`, `offcpu-time`, `allocations`).
    pub name: String,
    /// The unit of its values.
    pub unit: Unit,
    /// What it reads of each sample.
    pub value: Value,
}

impl Series {
    /// The value of sample `s` in this series: 0 for another event's sample.
    pub fn of(&self, s: &hwprof_symbolize::Sample) -> u64 {
        if s.event != self.event {
            return 0;
        }
        match self.value {
            Value::Period => s.period,
            Value::Weight => s.weight.unwrap_or(s.count),
        }
    }
}

/// A recording ready to export: its profile, its series and its modules' build ids.
#[derive(Clone, Debug, Default)]
pub struct Export {
    /// The symbolized samples of every event (and of [`OFF_CPU`], when paired).
    pub profile: Profile,
    /// The dimensions, in the events' order.
    pub series: Vec<Series>,
    /// The build ids the recording's header names, by module path.
    pub build_ids: rustc_hash::FxHashMap<String, BuildId>,
    /// With [`Export::load_timeline`]: every recorded sample of the (merged) profile's
    /// first samples, in file order, as the merged sample it went into with its own
    /// time and period (a run's rest: its last time, summed period and count); the
    /// samples after those it covers stand each for themselves.
    pub timeline: Vec<hwprof_symbolize::Timed>,
    /// How many of the profile's first samples the timeline covers.
    pub timed_samples: usize,
}

/// One recorded sample in time: its index in [`Profile::samples`], its time, period and
/// the recorded samples it stands for.
pub type Occurrence = (usize, Option<u64>, u64, u64);

/// The series of event `ev` named `name` (its attr's `type_`).
fn series_of(ev: u32, name: &str, tracepoint: bool) -> Vec<Series> {
    let base = name.split(':').next().unwrap_or(name);
    let one = |name: &str, unit, value| Series {
        event: ev,
        name: name.to_string(),
        unit,
        value,
    };
    match base {
        OFFCPU_TIME => vec![
            one(name, Unit::Nanoseconds, Value::Period),
            one("offcpu-blocks", Unit::Count, Value::Weight),
        ],
        OFF_CPU => vec![
            one(name, Unit::Nanoseconds, Value::Period),
            one("off-cpu-blocks", Unit::Count, Value::Weight),
        ],
        IO_TIME => vec![
            one(name, Unit::Nanoseconds, Value::Period),
            one("io-calls", Unit::Count, Value::Weight),
        ],
        ALLOCATED_BYTES => vec![
            one(name, Unit::Bytes, Value::Period),
            one("allocations", Unit::Count, Value::Weight),
        ],
        LEAKED_BYTES => vec![
            one(name, Unit::Bytes, Value::Period),
            one("leaked-blocks", Unit::Count, Value::Weight),
        ],
        "cpu-clock" | "task-clock" if !tracepoint => {
            vec![one(name, Unit::Nanoseconds, Value::Period)]
        }
        _ => vec![one(name, Unit::Count, Value::Period)],
    }
}

/// The series of every event of `p` with samples.
fn series(p: &Profile) -> Vec<Series> {
    p.events
        .iter()
        .enumerate()
        .flat_map(|(i, ev)| {
            let i = i as u32;
            let sampled = p.samples.iter().any(|s| s.event == i);
            let series = series_of(i, &ev.name, ev.attr.type_ == types::TRACEPOINT);
            if sampled { series } else { Vec::new() }
        })
        .collect()
}

impl Export {
    /// Reads and symbolizes `pd` as `opts` says (see the module's doc for what becomes
    /// a series). Events without samples are left out of the series.
    pub fn load(pd: &PerfData, opts: &Options) -> crate::Result<Export> {
        Export::load_as(pd, opts, false)
    }

    /// [`Export::load`] with merged samples and the [`Export::timeline`] of every
    /// recorded one (what a timeline such as the Firefox Profiler's needs, at a fraction
    /// of unmerged samples' memory and time).
    pub fn load_timeline(pd: &PerfData, opts: &Options) -> crate::Result<Export> {
        let opts = Options {
            merge: true,
            ..opts.clone()
        };
        Export::load_as(pd, &opts, true)
    }

    fn load_as(pd: &PerfData, opts: &Options, timeline: bool) -> crate::Result<Export> {
        let built = ProfileBuilder::new(pd, opts).timeline(timeline).build()?;
        let mut e = Export {
            series: Vec::new(),
            build_ids: buildid::by_path(pd.features()),
            timed_samples: if built.timeline.is_empty() {
                0
            } else {
                built.profile.samples.len()
            },
            profile: built.profile,
            timeline: built.timeline,
        };
        // The off-CPU blocks appended below are few: each keeps its own time.
        let unmerged;
        let opts = if timeline {
            unmerged = Options {
                merge: false,
                ..opts.clone()
            };
            &unmerged
        } else {
            opts
        };
        let attrs = pd.attrs();
        if offcpu::summed_event(attrs).is_none()
            && let Some(sw) = offcpu::switch_event(attrs)
            && let Some(format) = SwitchFormat::of_recording(pd)?
        {
            let switches = offcpu::collect(pd, sw, format)?;
            let mut off = offcpu::profile(pd, opts, switches, 1, false, None)?;
            for s in &mut off.samples {
                s.period = s.period.saturating_mul(1000);
                s.weight = Some(s.count);
            }
            let attr = attrs.get(sw).map(|a| a.attr.clone()).unwrap_or_default();
            e.append(off, OFF_CPU, attr);
        }
        e.series = series(&e.profile);
        Ok(e)
    }

    /// The export of a profile built elsewhere, with the build ids of its modules.
    pub fn from_profile(
        profile: Profile,
        build_ids: rustc_hash::FxHashMap<String, BuildId>,
    ) -> Export {
        Export {
            series: series(&profile),
            profile,
            build_ids,
            timeline: Vec::new(),
            timed_samples: 0,
        }
    }

    /// Every recorded sample in file order (a run's rest as one): the
    /// [`Export::timeline`]'s, then the samples it does not cover (all of them without
    /// one), each for itself.
    pub fn occurrences(&self) -> impl Iterator<Item = Occurrence> + '_ {
        (0..).map_while(|at| self.occurrence(at))
    }

    /// The recorded sample at position `at` of [`Export::occurrences`].
    pub fn occurrence(&self, at: usize) -> Option<Occurrence> {
        match self.timeline.get(at) {
            Some(t) => Some((t.sample as usize, t.time(), t.period, u64::from(t.count))),
            None => {
                let i = self.timed_samples + (at - self.timeline.len());
                let s = self.profile.samples.get(i)?;
                Some((i, s.time, s.period, s.count))
            }
        }
    }

    /// Adds the samples of `other` (all of its event 0) as a new event `name`, its
    /// frames and command names interned into this profile's.
    pub fn append(&mut self, other: Profile, name: &str, attr: hwprof_pmu::attr::Attr) {
        let p = &mut self.profile;
        let ev = p.events.len() as u32;
        p.events.push(hwprof_symbolize::EventInfo {
            name: name.to_string(),
            attr,
        });
        let mut known: HashMap<Frame, FrameId> = p
            .frames
            .iter()
            .enumerate()
            .map(|(i, f)| (f.clone(), i as FrameId))
            .collect();
        let frames: Vec<FrameId> = other
            .frames
            .into_iter()
            .map(|f| {
                *known.entry(f).or_insert_with_key(|f| {
                    p.frames.push(f.clone());
                    (p.frames.len() - 1) as FrameId
                })
            })
            .collect();
        let comms: Vec<u32> = other
            .comms
            .iter()
            .map(|c| match p.comms.iter().position(|k| k == c) {
                Some(i) => i as u32,
                None => {
                    p.comms.push(c.clone());
                    (p.comms.len() - 1) as u32
                }
            })
            .collect();
        for mut s in other.samples {
            s.event = ev;
            s.comm = comms.get(s.comm as usize).copied().unwrap_or(0);
            for f in &mut s.stack {
                *f = frames.get(*f as usize).copied().unwrap_or(0);
            }
            p.samples.push(s);
        }
    }

    /// Whether any series has a sample.
    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }
}

/// The name a frame shows in an export: its function, else its address in its module
/// as perf names unresolved code (`libc.so.6+0x12bd80`; one name per address, as
/// `hwprof report` has one row per address), else `[unknown]`.
pub fn frame_name(f: &Frame) -> String {
    match (&f.function, &f.module) {
        (Some(name), _) => name.clone(),
        (None, Some(_)) => format!("{}+{:#x}", f.module_name(), f.module_offset),
        (None, None) => "[unknown]".to_string(),
    }
}

/// Whether a frame is the kernel's.
pub fn is_kernel(f: &Frame) -> bool {
    f.kind == FrameKind::Kernel
}

#[cfg(test)]
mod tests;
