//! Profile assembly: [`ProfileBuilder`] replays a recording ([`crate::replay`]) with a
//! visitor that turns every sample's stack into (module, offset) locations
//! ([`crate::stacks`]), interns the distinct stacks, merges samples when asked, then
//! resolves each distinct location once through the [`Symbolizer`] and interns the
//! frames into a [`Profile`].

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use hwprof_pmu::attr::{branch, sample as st};
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::record::{Record, Sample as RecSample};

use crate::buildid;
use crate::error::Result;
use crate::intern::Interner;
use crate::locate::Locator;
use crate::module::{Module, ModuleId};
use crate::process::Processes;
use crate::profile::{
    Branch, BranchEnd, EventInfo, Frame, FrameId, FrameKind, Options, Profile, Sample,
};
use crate::replay::{Order, Visitor, replay};
use crate::symbolizer::{Symbolizer, kernel_matches};
use crate::timeline::{Timed, Timeline};
use crate::unwind::fp::{self, ShortStacks};
use crate::unwind::{Arch, FileData, Unwinder, UserFrame};

/// A location: a module, an offset in it, and whether it is a return address.
pub(crate) type Loc = (ModuleId, u64, bool);

/// A sample before symbolization: its stack as location ids.
pub(crate) struct RawSample {
    pub event: u32,
    pub pid: u32,
    pub tid: u32,
    pub comm: u32,
    pub time: Option<u64>,
    pub cpu: Option<u32>,
    pub period: u64,
    pub weight: Option<u64>,
    /// Index in `Builder::stacks`.
    pub stack: u32,
    /// Samples merged into this one.
    pub count: u64,
}

/// A branch-stack entry before symbolization.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RawBranch {
    /// The index of its sample in `Builder::samples`.
    pub sample: u32,
    /// The location of its source, in `Builder::locs`.
    pub from: u32,
    /// The location of its target.
    pub to: u32,
    /// The source address.
    pub from_addr: u64,
    /// The target address.
    pub to_addr: u64,
    /// The entry's flags.
    pub flags: u64,
}

/// The distinct branch-stack entries with their counts, and each one's index.
pub(crate) type BranchCounts = (Vec<(RawBranch, u64)>, HashMap<RawBranch, u32>);

/// What identifies a sample when samples are merged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct MergeKey {
    pub event: u32,
    pub pid: u32,
    pub tid: u32,
    pub comm: u32,
    /// The stack id.
    pub stack: u32,
    /// Whether it has a weight.
    pub weighed: bool,
}

/// What a sample is in the profile, as a [`Weigh`] hook decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Weighed {
    /// Its event (an index in the profile's events, or one the caller gives meaning).
    pub event: u32,
    /// Its period.
    pub period: u64,
    /// Its weight.
    pub weight: Option<u64>,
    /// The samples it stands for (1; more for a sample that sums several, such as an
    /// `offcpu-time` sample of the blocks of one stack).
    pub count: u64,
}

/// What [`ProfileBuilder::weigh`] makes of each recorded sample: given its record, its
/// sample and its period (as recorded, else its event's fixed period), what it is in the
/// profile, or `None` to leave it out.
pub type Weigh<'a> = &'a mut dyn FnMut(&Record<'_>, &RecSample<'_>, u64) -> Option<Weighed>;

/// The state of the replay's visitor that assembles a profile.
pub(crate) struct Builder<'r> {
    pub sym: Symbolizer,
    /// The distinct locations, each once.
    pub locs: Interner<Loc>,
    /// The distinct stacks (as location ids), each once: a range of `stack_locs`.
    pub stacks: Vec<(usize, usize)>,
    pub stack_ids: HashMap<Box<[u32]>, u32>,
    pub stack_locs: Vec<u32>,
    /// The stack being built (scratch).
    pub cur: Vec<u32>,
    /// The stacks of the recorded callchains seen.
    pub chains: crate::chains::ChainCache,
    /// Per module id: a location in it was met (its file is being read ahead).
    pub met: Vec<bool>,
    pub samples: Vec<RawSample>,
    /// With [`Options::merge`]: the index in `samples` of each distinct sample.
    pub merged: Option<HashMap<MergeKey, u32>>,
    /// Sums of `PERF_RECORD_LOST` and of `PERF_RECORD_LOST_SAMPLES` (see
    /// [`Profile::lost`]).
    pub lost: u64,
    pub lost_samples: u64,
    /// Per attr: the period of a sample without PERIOD.
    pub fixed_period: Vec<u64>,
    /// Per attr: it records LBR call stacks (`--call-graph lbr`: BRANCH_STACK with
    /// `PERF_SAMPLE_BRANCH_CALL_STACK`).
    pub lbr_call_stack: Vec<bool>,
    /// DWARF unwinding, when an event recorded user registers and stacks.
    pub unwind: Option<UnwindState>,
    /// Samples whose recorded callchain ends in the truncation mark.
    pub marked_truncated: u64,
    /// Per attr: its samples carry frame-pointer user stacks.
    pub fp_stacks: Vec<bool>,
    /// What they say about modules built without frame pointers.
    pub short_stacks: ShortStacks,
    /// With [`ProfileBuilder::branches`]: the distinct branch-stack entries (per sample,
    /// which [`Options::merge`] merges) in the order first seen, with counts.
    pub branches: Option<BranchCounts>,
    /// With [`ProfileBuilder::timeline`]: every sample as the merged one it went into.
    pub timeline: Option<Timeline>,
    pub weigh: Option<Weigh<'r>>,
}

/// What DWARF unwinding keeps during a replay.
pub(crate) struct UnwindState {
    pub unwinder: Unwinder,
    /// Per file module: its unwind tables, read once.
    pub files: HashMap<ModuleId, Option<Arc<FileData>>>,
    /// Scratch for one stack.
    pub frames: Vec<UserFrame>,
}

/// Builds a [`Profile`] from a recording: every sample of it with its stack resolved
/// against the address space of its process at its time, as the [`Options`] ask.
///
/// ```no_run
/// # use hwprof_sampler::perfdata::reader::PerfData;
/// # use hwprof_symbolize::{Options, ProfileBuilder};
/// let pd = PerfData::open("perf.data".as_ref())?;
/// let built = ProfileBuilder::new(&pd, &Options::default()).branches(true).build()?;
/// println!("{} samples, {} branches", built.profile.samples.len(), built.branches.len());
/// # Ok::<(), hwprof_symbolize::Error>(())
/// ```
///
/// Unresolvable addresses become `[unknown]` frames (with their module when known);
/// errors are only about records that cannot be decoded.
pub struct ProfileBuilder<'a, 'r> {
    pd: &'a PerfData,
    opts: &'a Options,
    sym: Option<Symbolizer>,
    branches: bool,
    timeline: bool,
    weigh: Option<Weigh<'r>>,
}

/// What [`ProfileBuilder::build`] gives.
pub struct Built {
    /// The profile.
    pub profile: Profile,
    /// The symbolizer, its cache filled (e.g. to read [`Symbolizer::lookups`], or to
    /// reuse it).
    pub symbolizer: Symbolizer,
    /// With [`ProfileBuilder::branches`]: every sample's branch-stack (LBR) entries.
    pub branches: Vec<Branch>,
    /// With [`ProfileBuilder::timeline`] and [`Options::merge`]: every recorded sample
    /// in file order, as the merged sample it went into and its own time, runs of one
    /// sample kept as two entries ([`crate::timeline`]).
    pub timeline: Vec<Timed>,
}

/// A recording replayed, not yet symbolized: what [`ProfileBuilder::replay`] gives, so
/// that the caller can let the file go before the profile is assembled.
pub struct Replayed<'a> {
    b: Builder<'a>,
    procs: Processes,
    events: Vec<EventInfo>,
    opts: Options,
    order: Order,
}

impl Profile {
    /// The profile of `pd` as `opts` ask: [`ProfileBuilder::new`]`(pd, opts).build()`.
    pub fn build(pd: &PerfData, opts: &Options) -> Result<Profile> {
        ProfileBuilder::new(pd, opts).build().map(|b| b.profile)
    }
}

impl<'a, 'r> ProfileBuilder<'a, 'r> {
    /// A builder of the profile of `pd` as `opts` ask.
    pub fn new(pd: &'a PerfData, opts: &'a Options) -> ProfileBuilder<'a, 'r> {
        ProfileBuilder {
            pd,
            opts,
            sym: None,
            branches: false,
            timeline: false,
            weigh: None,
        }
    }

    /// Resolves with `sym` (its cache is reused), handed back in [`Built::symbolizer`].
    pub fn symbolizer(mut self, sym: Symbolizer) -> Self {
        self.sym = Some(sym);
        self
    }

    /// Also symbolizes both ends of every sample's branch-stack (LBR) entries, most
    /// recent first per sample, as `perf report -b` resolves them: each address against
    /// its process's mappings at the sample's time, kernel addresses against the
    /// kernel's.
    pub fn branches(mut self, on: bool) -> Self {
        self.branches = on;
        self
    }

    /// With [`Options::merge`], also keeps every recorded sample's time and period with
    /// the merged sample it went into ([`Built::timeline`]): a timeline of the
    /// recording at 24 bytes a sample, where unmerged samples cost each its own copy of
    /// its stack (and the time to make it).
    pub fn timeline(mut self, on: bool) -> Self {
        self.timeline = on;
        self
    }

    /// `weigh` decides each sample's event, period and weight, or leaves it out (see
    /// [`Weigh`]). With [`Options::merge`] the samples are merged after that, so that a
    /// profile of derived weights (the off-CPU time that follows a switch-out) also
    /// grows with its distinct stacks, not the recording.
    pub fn weigh(mut self, weigh: Weigh<'r>) -> Self {
        self.weigh = Some(weigh);
        self
    }

    /// Replays the recording and symbolizes: the profile.
    pub fn build(self) -> Result<Built> {
        Ok(self.replay()?.finish())
    }

    /// Replays the recording into locations and raw samples; [`Replayed::finish`]
    /// symbolizes them. The file is not needed after this.
    pub fn replay(self) -> Result<Replayed<'r>> {
        let pd = self.pd;
        let opts = self.opts;
        let mut sym = self.sym.unwrap_or_else(|| {
            Symbolizer::with_locator(
                opts.inline,
                kernel_matches(pd.features()),
                Locator::from_env(opts.symfs.clone()),
            )
        });

        if opts.kernel {
            sym.prefetch_kernel_symbols();
        }
        let events: Vec<EventInfo> = pd
            .attrs()
            .iter()
            .map(|a| EventInfo {
                name: a.name.clone(),
                attr: a.attr.clone(),
            })
            .collect();
        let fixed_period = events
            .iter()
            .map(|e| {
                if e.attr.freq {
                    1
                } else {
                    e.attr.sample_period.max(1)
                }
            })
            .collect();
        let fp_stacks = events.iter().map(|e| fp::has_fp_stacks(&e.attr)).collect();
        let lbr_call_stack = events
            .iter()
            .map(|e| {
                e.attr.sample_type & st::BRANCH_STACK != 0
                    && e.attr.branch_sample_type & branch::CALL_STACK != 0
            })
            .collect();
        let user_stacks = st::REGS_USER | st::STACK_USER;
        let arch = pd
            .features()
            .arch
            .as_deref()
            .and_then(Arch::from_name)
            .or_else(Arch::host);
        let unwind = match arch {
            Some(arch)
                if events
                    .iter()
                    .any(|e| e.attr.sample_type & user_stacks == user_stacks) =>
            {
                Some(UnwindState {
                    unwinder: Unwinder::new(arch),
                    files: HashMap::default(),
                    frames: Vec::new(),
                })
            }
            _ => None,
        };
        let mut b = Builder {
            sym,
            locs: Interner::default(),
            stacks: Vec::new(),
            stack_ids: HashMap::default(),
            stack_locs: Vec::new(),
            cur: Vec::new(),
            chains: Default::default(),
            met: Vec::new(),
            samples: Vec::new(),
            merged: opts.merge.then(HashMap::default),
            lost: 0,
            lost_samples: 0,
            fixed_period,
            lbr_call_stack,
            unwind,
            marked_truncated: 0,
            fp_stacks,
            short_stacks: ShortStacks::default(),
            branches: self.branches.then(Default::default),
            timeline: (self.timeline && opts.merge)
                .then(|| Timeline::new(events.iter().map(|e| &e.attr))),
            weigh: self.weigh,
        };
        let mut procs = Processes::new(buildid::by_path(pd.features()));
        let order = replay(pd, &mut procs, &mut b)?;
        Ok(Replayed {
            b,
            procs,
            events,
            opts: opts.clone(),
            order,
        })
    }
}

impl Replayed<'_> {
    /// Resolves every distinct location (one batch per module), interns the frames and
    /// assembles the samples.
    pub fn finish(self) -> Built {
        let mut b = self.b;
        let timeline = b
            .timeline
            .take()
            .map(Timeline::into_entries)
            .unwrap_or_default();
        let (mut profile, symbolizer, branches) = b.finish(self.procs, self.events, &self.opts);
        profile.notices.extend(self.order.notice());
        Built {
            profile,
            symbolizer,
            branches,
            timeline,
        }
    }
}

impl Visitor for Builder<'_> {
    fn sample(&mut self, procs: &mut Processes, rec: &Record<'_>, s: &RecSample<'_>) -> Result<()> {
        self.sample(procs, rec, s);
        Ok(())
    }

    fn lost(&mut self, n: u64) {
        self.lost += n;
    }

    fn lost_samples(&mut self, n: u64) {
        self.lost_samples += n;
    }
}

impl Builder<'_> {
    /// The modules built without frame pointers that cut the frame-pointer stacks short
    /// (see [`fp`]): `stacks` and `frames` name the stacks' functions.
    fn cut_stacks(
        &self,
        procs: &Processes,
        stacks: &[Vec<FrameId>],
        frames: &[Frame],
    ) -> Option<fp::CutStacks> {
        let arch = self
            .unwind
            .as_ref()
            .map(|u| u.unwinder.arch())
            .or_else(Arch::host)?;
        let reached_root = |stack: u32| {
            stacks.get(stack as usize).is_some_and(|st| {
                st.iter().any(|&f| {
                    frames.get(f as usize).is_some_and(|f| {
                        f.kind == FrameKind::User
                            && f.function.as_deref().is_some_and(fp::is_root_function)
                    })
                })
            })
        };
        self.short_stacks
            .cut(reached_root, |&m| match procs.module(m) {
                Some(Module::File { path, build_id }) => Some((
                    path.clone(),
                    fp::module_frame_pointers(self.sym.locator(), path, build_id.as_ref(), arch),
                )),
                _ => None,
            })
    }

    /// The id of a stack of location ids, each distinct stack stored once.
    pub(crate) fn intern_stack(&mut self, locs: &[u32]) -> u32 {
        if let Some(&id) = self.stack_ids.get(locs) {
            return id;
        }
        let id = self.stacks.len() as u32;
        let start = self.stack_locs.len();
        self.stack_locs.extend_from_slice(locs);
        self.stacks.push((start, self.stack_locs.len()));
        self.stack_ids.insert(locs.into(), id);
        id
    }

    pub(crate) fn intern_loc(&mut self, loc: Loc) -> u32 {
        self.locs.id(loc)
    }

    /// Resolves every distinct location (one batch per module), interns the frames and
    /// assembles the samples.
    fn finish(
        mut self,
        mut procs: Processes,
        events: Vec<EventInfo>,
        opts: &Options,
    ) -> (Profile, Symbolizer, Vec<Branch>) {
        let mut frames: Vec<Frame> = Vec::new();
        let mut frame_ids: HashMap<Frame, FrameId> = HashMap::default();
        let mut loc_frames: Vec<Vec<FrameId>> = vec![Vec::new(); self.locs.len()];
        self.sym
            .resolve_locations(procs.modules(), self.locs.iter().copied(), |i, fs| {
                let keep: Vec<FrameId> = fs
                    .into_iter()
                    .filter(|f| match f.kind {
                        FrameKind::Kernel => opts.kernel,
                        FrameKind::User | FrameKind::Jit => opts.user,
                    })
                    .map(|f| {
                        *frame_ids.entry(f).or_insert_with_key(|f| {
                            frames.push(f.clone());
                            (frames.len() - 1) as FrameId
                        })
                    })
                    .collect();
                if let Some(slot) = loc_frames.get_mut(i) {
                    *slot = keep;
                }
            });
        // Each distinct stack's frames, once.
        let stacks: Vec<Vec<FrameId>> = self
            .stacks
            .iter()
            .map(|&(a, b)| {
                let locs = self.stack_locs.get(a..b).unwrap_or(&[]);
                let mut stack = Vec::with_capacity(locs.len());
                for &l in locs {
                    if let Some(fs) = loc_frames.get(l as usize) {
                        stack.extend_from_slice(fs);
                    }
                }
                stack
            })
            .collect();
        let cut_stacks = self.cut_stacks(&procs, &stacks, &frames);
        drop(self.stack_ids);
        drop(self.merged);
        // A branch end is the function holding it: the last (outermost) frame of its
        // location.
        let end = |loc: u32, addr: u64| BranchEnd {
            addr,
            frame: loc_frames
                .get(loc as usize)
                .and_then(|fs| fs.last())
                .copied(),
        };
        let branches = self
            .branches
            .take()
            .map(|(list, _)| list)
            .unwrap_or_default()
            .into_iter()
            .map(|(r, count)| Branch {
                sample: r.sample,
                from: end(r.from, r.from_addr),
                to: end(r.to, r.to_addr),
                flags: r.flags,
                count,
            })
            .collect();
        let samples = self
            .samples
            .iter()
            .map(|r| {
                let stack = stacks.get(r.stack as usize).cloned().unwrap_or_default();
                Sample {
                    event: r.event,
                    pid: r.pid,
                    tid: r.tid,
                    comm: r.comm,
                    time: r.time,
                    cpu: r.cpu,
                    period: r.period,
                    weight: r.weight,
                    count: r.count,
                    stack,
                }
            })
            .collect();
        let profile = Profile {
            events,
            frames,
            comms: procs.take_comms(),
            samples,
            lost: self.lost.max(self.lost_samples),
            unwound: self.unwind.as_ref().map_or(0, |u| u.unwinder.stats.unwound),
            truncated: self.marked_truncated
                + self
                    .unwind
                    .as_ref()
                    .map_or(0, |u| u.unwinder.stats.truncated),
            notices: self.sym.locator().notices(),
            cut_stacks,
        };
        (profile, self.sym, branches)
    }
}
