//! [`Profile::build`]: replays a recording's records into address spaces over time, turns
//! every sample's stack into (module, offset) locations, resolves each distinct location
//! once, and interns the frames.

use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use hwprof_pmu::attr::{branch, sample as st};
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::record::{Body, FileId, Record, context, misc};

use crate::error::Result;
use crate::locate::Locator;
use crate::maps::{AddrSpace, Mapping};
use crate::profile::{
    Branch, BranchEnd, EventInfo, Frame, FrameId, FrameKind, Options, Profile, Sample,
};
use crate::symbolizer::{Module, ModuleId, Symbolizer, kernel_matches};
use crate::unwind::fp::{self, ShortStacks};
use crate::unwind::stream::TRUNCATED_MARK;
use crate::unwind::{Arch, Ending, FileData, Mapped, Unwinder, UserFrame, UserRegs};

/// `PERF_RECORD_MISC_MMAP_DATA`: a data (not executable) mapping.
const MISC_MMAP_DATA: u16 = 1 << 13;
/// The pid of kernel mappings.
const KERNEL_PID: u32 = u32::MAX;
/// Lowest kernel address on x86-64 (and the canonical upper half elsewhere).
const KERNEL_START: u64 = 0xffff_8000_0000_0000;

/// A location: a module, an offset in it, and whether it is a return address.
type Loc = (ModuleId, u64, bool);

/// A sample before symbolization: its stack as location ids.
struct RawSample {
    event: u32,
    pid: u32,
    tid: u32,
    comm: u32,
    time: Option<u64>,
    cpu: Option<u32>,
    period: u64,
    weight: Option<u64>,
    /// Index in `Builder::stacks`.
    stack: u32,
    /// Samples merged into this one.
    count: u64,
}

/// A branch-stack entry before symbolization: (sample index, from location, to location,
/// from address, to address, flags).
type RawBranch = (u32, u32, u32, u64, u64, u64);

/// The distinct branch-stack entries with their counts, and each one's index.
type BranchCounts = (Vec<(RawBranch, u64)>, HashMap<RawBranch, u32>);

/// What identifies a sample when samples are merged: event, pid, tid, comm, stack id,
/// and whether it has a weight.
type MergeKey = (u32, u32, u32, u32, u32, bool);

/// State of the replay.
struct Builder {
    sym: Symbolizer,
    /// The id of [`Module::Kernel`], looked up once.
    kernel_module: ModuleId,
    build_ids: HashMap<String, Vec<u8>>,
    spaces: HashMap<u32, AddrSpace>,
    kernel: AddrSpace,
    comms: Vec<String>,
    comm_ids: HashMap<String, u32>,
    tid_comm: HashMap<u32, u32>,
    pid_comm: HashMap<u32, u32>,
    locs: Vec<Loc>,
    loc_ids: HashMap<Loc, u32>,
    /// The distinct stacks (as location ids), each once: a range of `stack_locs`.
    stacks: Vec<(usize, usize)>,
    stack_ids: HashMap<Box<[u32]>, u32>,
    stack_locs: Vec<u32>,
    /// The stack being built (scratch).
    cur: Vec<u32>,
    samples: Vec<RawSample>,
    /// With [`Options::merge`]: the index in `samples` of each distinct sample.
    merged: Option<HashMap<MergeKey, u32>>,
    lost: u64,
    /// Per attr: the period of a sample without PERIOD.
    fixed_period: Vec<u64>,
    /// Per attr: it records LBR call stacks (`--call-graph lbr`: BRANCH_STACK with
    /// `PERF_SAMPLE_BRANCH_CALL_STACK`).
    lbr_call_stack: Vec<bool>,
    /// Samples seen so far (all events), in file order.
    seen: usize,
    /// DWARF unwinding, when an event recorded user registers and stacks.
    unwind: Option<UnwindState>,
    /// The last version given to an address space.
    versions: u64,
    /// Samples whose recorded callchain ends in [`TRUNCATED_MARK`].
    marked_truncated: u64,
    /// Per attr: its samples carry frame-pointer user stacks.
    fp_stacks: Vec<bool>,
    /// What they say about modules built without frame pointers.
    short_stacks: ShortStacks,
    /// With [`Profile::build_with_branches`]: the distinct branch-stack entries (per
    /// sample, which [`Options::merge`] merges) in the order first seen, with counts.
    branches: Option<BranchCounts>,
}

/// What DWARF unwinding keeps during a replay.
struct UnwindState {
    unwinder: Unwinder,
    /// Per file module: its unwind tables, read once.
    files: HashMap<ModuleId, Option<Arc<FileData>>>,
    /// Scratch for one stack.
    frames: Vec<UserFrame>,
}

/// What [`Profile::build_reweighted`] makes of each recorded sample: given its number
/// (in file order from 0, over all events) and its period, the event and period it has
/// in the profile, or `None` to leave it out.
pub type Reweigh<'a> = &'a mut dyn FnMut(usize, u64) -> Option<(u32, u64)>;

impl Profile {
    /// Symbolizes a recording: every sample of `pd` with its stack resolved against the
    /// address space of its process at its time, as `opts` asks.
    ///
    /// Unresolvable addresses become `[unknown]` frames (with their module when known);
    /// errors are only about records that cannot be decoded.
    pub fn build(pd: &PerfData, opts: &Options) -> Result<Profile> {
        let sym = Symbolizer::with_locator(
            opts.inline,
            kernel_matches(pd.features()),
            Locator::from_env(opts.symfs.clone()),
        );
        Profile::build_with(pd, opts, sym).map(|(p, _)| p)
    }

    /// [`Profile::build`] with a given [`Symbolizer`] (its cache is reused), which is
    /// handed back with the profile (e.g. to read [`Symbolizer::lookups`]).
    pub fn build_with(
        pd: &PerfData,
        opts: &Options,
        sym: Symbolizer,
    ) -> Result<(Profile, Symbolizer)> {
        let (b, events) = Builder::replay(pd, opts, sym, None, false)?;
        let (p, sym, _) = b.finish(events, opts);
        Ok((p, sym))
    }

    /// [`Profile::build`] that also symbolizes both ends of every sample's branch-stack
    /// (LBR) entries, most recent first per sample, as `perf report -b` resolves them:
    /// each address against its process's mappings at the sample's time, kernel
    /// addresses against the kernel's.
    pub fn build_with_branches(pd: &PerfData, opts: &Options) -> Result<(Profile, Vec<Branch>)> {
        let sym = Symbolizer::with_locator(
            opts.inline,
            kernel_matches(pd.features()),
            Locator::from_env(opts.symfs.clone()),
        );
        let (b, events) = Builder::replay(pd, opts, sym, None, true)?;
        let (p, _, branches) = b.finish(events, opts);
        Ok((p, branches))
    }

    /// [`Profile::build`] that consumes the reader (and its file) once the records are
    /// replayed, before the profile is assembled.
    pub fn from_perf_data(pd: PerfData, opts: &Options) -> Result<Profile> {
        let sym = Symbolizer::with_locator(
            opts.inline,
            kernel_matches(pd.features()),
            Locator::from_env(opts.symfs.clone()),
        );
        let (b, events) = Builder::replay(&pd, opts, sym, None, false)?;
        drop(pd);
        Ok(b.finish(events, opts).0)
    }

    /// [`Profile::build`] where `reweigh` decides each sample's event and period (see
    /// [`Reweigh`]); its weight is dropped. With [`Options::merge`] the samples are
    /// merged after that, so that a profile of derived weights (the off-CPU time that
    /// follows a switch-out) also grows with its distinct stacks, not the recording.
    pub fn build_reweighted(
        pd: &PerfData,
        opts: &Options,
        reweigh: Reweigh<'_>,
    ) -> Result<Profile> {
        let sym = Symbolizer::with_locator(
            opts.inline,
            kernel_matches(pd.features()),
            Locator::from_env(opts.symfs.clone()),
        );
        let (b, events) = Builder::replay(pd, opts, sym, Some(reweigh), false)?;
        Ok(b.finish(events, opts).0)
    }
}

impl Builder {
    /// Replays every record of `pd` into address spaces, locations and raw samples.
    fn replay(
        pd: &PerfData,
        opts: &Options,
        mut sym: Symbolizer,
        mut reweigh: Option<Reweigh<'_>>,
        branches: bool,
    ) -> Result<(Builder, Vec<EventInfo>)> {
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
        let mut build_ids = HashMap::default();
        for b in &pd.features().build_ids {
            build_ids
                .entry(b.filename.clone())
                .or_insert_with(|| b.build_id.clone());
        }
        let kernel_module = sym.module_id(Module::Kernel);
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
            kernel_module,
            build_ids,
            spaces: HashMap::default(),
            kernel: AddrSpace::default(),
            comms: Vec::new(),
            comm_ids: HashMap::default(),
            tid_comm: HashMap::default(),
            pid_comm: HashMap::default(),
            locs: Vec::new(),
            loc_ids: HashMap::default(),
            stacks: Vec::new(),
            stack_ids: HashMap::default(),
            stack_locs: Vec::new(),
            cur: Vec::new(),
            samples: Vec::new(),
            merged: opts.merge.then(HashMap::default),
            lost: 0,
            fixed_period,
            lbr_call_stack,
            seen: 0,
            unwind,
            versions: 0,
            marked_truncated: 0,
            fp_stacks,
            short_stacks: ShortStacks::default(),
            branches: branches.then(Default::default),
        };
        // Files are written ring by ring, so a sample can come before (in file order) the
        // MMAP2 or COMM of its own exec on another CPU's ring. Like perf, replay by time:
        // pass 1 gathers the side-band records (few) per process in time order; pass 2
        // applies a process's records up to each of its samples' time (a FORK first
        // brings the parent up to the fork). Per process, so that a later sample of
        // another process cannot advance this one's state. Records without a time
        // (files recorded without sample_id_all) keep their file order.
        let mut queues: HashMap<u32, Vec<Pending>> = HashMap::default();
        let mut untimed: Vec<(u64, SideBand)> = Vec::new();
        let mut seq = 0u64;
        pd.for_each_record(|_off, rec| -> Result<()> {
            seq += 1;
            if let Some(sb) = SideBand::of(rec) {
                match rec.time() {
                    Some(t) => queues.entry(sb.pid()).or_default().push((t, seq, sb)),
                    None => untimed.push((seq, sb)),
                }
            }
            Ok(())
        })?;
        let mut queues: HashMap<u32, std::collections::VecDeque<Pending>> = queues
            .into_iter()
            .map(|(pid, mut q)| {
                q.sort_by_key(|&(t, s, _)| (t, s));
                (pid, q.into())
            })
            .collect();
        let mut untimed = untimed.into_iter().peekable();
        let mut seq = 0u64;
        pd.for_each_record(|_off, rec| -> Result<()> {
            seq += 1;
            match &rec.body {
                Body::Sample(s) => {
                    while let Some((_, sb)) = untimed.next_if(|(sq, _)| *sq < seq) {
                        b.apply(sb);
                    }
                    let at = (s.time, seq);
                    b.advance(&mut queues, KERNEL_PID, at);
                    b.advance(&mut queues, s.pid.unwrap_or(u32::MAX), at);
                    b.sample(rec, s, &mut reweigh);
                }
                Body::Lost { lost, .. } => b.lost += lost,
                Body::LostSamples { lost } => b.lost += lost,
                _ => {}
            }
            Ok(())
        })?;
        Ok((b, events))
    }
}

/// perf's short name of a kernel module: `/lib/modules/.../ath9k_hw.ko` -> `[ath9k_hw]`
/// (dashes become underscores, as the kernel names modules); `[name]` stays.
fn kernel_module_name(name: &str) -> String {
    if name.starts_with('[') {
        return name.to_string();
    }
    let base = name.rsplit('/').next().unwrap_or(name);
    let stem = base.split(".ko").next().unwrap_or(base);
    format!("[{}]", stem.replace('-', "_"))
}

/// What a mapping's name says the module is.
fn classify(name: &str, pid: u32, build_id: Option<Vec<u8>>) -> Module {
    if pid == KERNEL_PID {
        return if name.starts_with("[kernel.kallsyms]") {
            Module::Kernel
        } else if name.starts_with("[guest.kernel") {
            Module::Other {
                name: "[guest.kernel.kallsyms]".to_string(),
            }
        } else {
            Module::KernelModule {
                name: kernel_module_name(name),
            }
        };
    }
    let anon = name.is_empty()
        || name == "//anon"
        || name.starts_with("/dev/zero")
        || name.starts_with("/anon_hugepage")
        || name.starts_with("[anon")
        || name.starts_with("/memfd:");
    if anon {
        Module::Anon {
            name: if name.is_empty() { "//anon" } else { name }.to_string(),
            pid,
        }
    } else if name.starts_with('[') || !name.starts_with('/') {
        Module::Other {
            name: name.to_string(),
        }
    } else {
        Module::File {
            path: name.to_string(),
            build_id,
        }
    }
}

impl Builder {
    fn intern_comm(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.comm_ids.get(name) {
            return id;
        }
        let id = self.comms.len() as u32;
        self.comms.push(name.to_string());
        self.comm_ids.insert(name.to_string(), id);
        id
    }

    /// Applies the queued records of `pid` due at `at` (a sample's time and file
    /// position): earlier times, or an equal time earlier in the file (perf's order);
    /// without a sample time, file order. A FORK first advances its parent to it.
    fn advance(
        &mut self,
        queues: &mut HashMap<u32, VecDeque<Pending>>,
        pid: u32,
        at: (Option<u64>, u64),
    ) {
        loop {
            let due = match queues.get(&pid).and_then(|q| q.front()) {
                Some(&(t, sq, _)) => match at.0 {
                    Some(st) => t < st || (t == st && sq < at.1),
                    None => sq < at.1,
                },
                None => false,
            };
            if !due {
                return;
            }
            let Some((t, sq, sb)) = queues.get_mut(&pid).and_then(VecDeque::pop_front) else {
                return;
            };
            if let SideBand::Fork { ppid, .. } = sb
                && ppid != pid
            {
                self.advance(queues, ppid, (Some(t), sq));
            }
            self.apply(sb);
        }
    }

    fn apply(&mut self, sb: SideBand) {
        match sb {
            SideBand::Mmap {
                pid,
                addr,
                len,
                pgoff,
                name,
                build_id,
            } => self.mmap(pid, addr, len, pgoff, &name, build_id),
            SideBand::Comm {
                pid,
                tid,
                name,
                exec,
            } => {
                let id = self.intern_comm(&name);
                self.tid_comm.insert(tid, id);
                if pid == tid {
                    self.pid_comm.insert(pid, id);
                }
                if exec && let Some(sp) = self.spaces.get_mut(&pid) {
                    sp.clear();
                    self.versions += 1;
                    sp.version = self.versions;
                }
            }
            SideBand::Fork {
                pid,
                ppid,
                tid,
                ptid,
            } => {
                if pid != ppid
                    && let Some(parent) = self.spaces.get(&ppid)
                {
                    let mut copy = parent.clone();
                    self.versions += 1;
                    copy.version = self.versions;
                    self.spaces.insert(pid, copy);
                }
                let parent_comm = self
                    .tid_comm
                    .get(&ptid)
                    .or_else(|| self.pid_comm.get(&ppid))
                    .copied();
                if let Some(c) = parent_comm {
                    self.tid_comm.insert(tid, c);
                    if pid == tid {
                        self.pid_comm.insert(pid, c);
                    }
                }
            }
        }
        // EXIT changes nothing: the process's last samples may follow it (another ring),
        // and a FORK or exec replaces the maps when the pid is reused.
    }

    fn mmap(
        &mut self,
        pid: u32,
        addr: u64,
        len: u64,
        pgoff: u64,
        name: &str,
        bid: Option<Vec<u8>>,
    ) {
        let bid = bid.or_else(|| self.build_ids.get(name).cloned());
        let module = classify(name, pid, bid);
        let module = self.sym.module_id(module);
        let m = Mapping {
            start: addr,
            end: addr.saturating_add(len),
            pgoff,
            module,
        };
        if pid == KERNEL_PID {
            self.kernel.insert(m);
        } else {
            let space = self.spaces.entry(pid).or_default();
            space.insert(m);
            self.versions += 1;
            space.version = self.versions;
        }
    }

    /// The location of an address of `pid`.
    fn locate(&mut self, pid: u32, addr: u64, kernel: bool, ret: bool) -> u32 {
        let loc: Loc = if kernel || addr >= KERNEL_START {
            match self.kernel.find(addr) {
                Some(m) => match self.sym.module(m.module) {
                    Some(Module::KernelModule { .. } | Module::Other { .. }) => {
                        (m.module, addr, ret)
                    }
                    _ => (self.kernel_module, addr, ret),
                },
                None => (self.kernel_module, addr, ret),
            }
        } else {
            match self.spaces.get(&pid).and_then(|s| s.find(addr)).copied() {
                Some(m) => {
                    let off = match self.sym.module(m.module) {
                        Some(Module::File { .. }) => addr - m.start + m.pgoff,
                        Some(Module::Other { .. }) => addr - m.start,
                        _ => addr,
                    };
                    (m.module, off, ret)
                }
                None => (self.sym.module_id(Module::Unmapped), addr, ret),
            }
        };
        if let Some(&id) = self.loc_ids.get(&loc) {
            return id;
        }
        let id = self.locs.len() as u32;
        self.locs.push(loc);
        self.loc_ids.insert(loc, id);
        id
    }

    fn sample(
        &mut self,
        rec: &Record<'_>,
        s: &hwprof_sampler::record::Sample<'_>,
        reweigh: &mut Option<Reweigh<'_>>,
    ) {
        let attr = rec.attr.unwrap_or(0);
        let period = s
            .period
            .filter(|&p| p != 0)
            .or_else(|| self.fixed_period.get(attr).copied())
            .unwrap_or(1);
        let n = self.seen;
        self.seen += 1;
        let mut weight = s.weight.or(s.weight_struct.map(|w| u64::from(w.var1_dw)));
        let (event, period) = match reweigh {
            Some(f) => match f(n, period) {
                Some(new) => {
                    weight = None;
                    new
                }
                None => return,
            },
            None => (attr as u32, period),
        };
        let pid = s.pid.unwrap_or(u32::MAX);
        let tid = s.tid.unwrap_or(pid);
        let comm = match self.tid_comm.get(&tid).or_else(|| self.pid_comm.get(&pid)) {
            Some(&c) => c,
            None if pid == 0 => self.intern_comm("swapper"),
            None => self.intern_comm(&format!(":{tid}")),
        };
        let cpumode = rec.header.misc & misc::CPUMODE_MASK;
        let mut cur = std::mem::take(&mut self.cur);
        cur.clear();
        let mut pushed = false;
        // With the user registers and stack, the user part comes from unwinding them
        // (the callchain then holds the kernel part only, or a user part that is
        // dropped).
        let dwarf = match (&self.unwind, &s.regs_user, &s.stack_user) {
            (Some(u), Some(r), Some(stack)) => {
                UserRegs::from_sample(u.unwinder.arch(), r).map(|regs| {
                    (
                        regs,
                        stack
                            .data
                            .get(..stack.dyn_size as usize)
                            .unwrap_or(stack.data),
                    )
                })
            }
            _ => None,
        };
        // LBR call stacks: perf's `resolve_lbr_callchain_sample` (callee order). When the
        // callchain has a user part, the stack is the callchain's kernel part, then the
        // function of the most recent call (the first entry's target), then every
        // entry's call site; the callchain's user part is not used.
        let lbr = match (&s.callchain, &s.branch_stack) {
            (Some(chain), Some(bs))
                if self.lbr_call_stack.get(attr).copied().unwrap_or(false) && !bs.is_empty() =>
            {
                chain
                    .iter()
                    .position(|a| a == context::USER)
                    .map(|user| (chain.iter().take(user), bs))
            }
            _ => None,
        };
        let lbr_used = lbr.is_some();
        if let Some((kernel_part, bs)) = lbr {
            let mut kernel = cpumode == misc::KERNEL;
            let mut first = true;
            for addr in kernel_part {
                if addr >= context::MAX {
                    kernel = addr == context::KERNEL;
                    continue;
                }
                let id = self.locate(pid, addr, kernel, !first);
                cur.push(id);
                first = false;
            }
            if let Some(top) = bs.iter().next() {
                let id = self.locate(pid, top.to, false, false);
                cur.push(id);
            }
            for e in bs.iter() {
                let id = self.locate(pid, e.from, false, false);
                cur.push(id);
            }
            pushed = true;
        } else if let Some(chain) = &s.callchain {
            let mut kernel = cpumode == misc::KERNEL;
            let mut guest = false;
            let mut first = true;
            for addr in chain.iter() {
                if addr >= context::MAX {
                    kernel = addr == context::KERNEL || addr == context::GUEST_KERNEL;
                    guest = addr == context::GUEST
                        || addr == context::GUEST_KERNEL
                        || addr == context::GUEST_USER;
                    continue;
                }
                if dwarf.is_some() && !kernel && !guest {
                    continue;
                }
                if addr == TRUNCATED_MARK && !kernel && !guest {
                    // A stack unwound while recording that did not reach its root.
                    let id = self.truncated_loc();
                    cur.push(id);
                    self.marked_truncated += 1;
                    continue;
                }
                let id = if guest {
                    let m = self.sym.module_id(Module::Other {
                        name: "[guest]".to_string(),
                    });
                    self.intern_loc((m, addr, !first))
                } else {
                    self.locate(pid, addr, kernel, !first)
                };
                cur.push(id);
                first = false;
                pushed = true;
            }
        }
        if let Some((regs, stack)) = dwarf.filter(|_| !lbr_used) {
            self.unwind_user(pid, regs, stack, &mut cur);
        } else if !pushed && let Some(ip) = s.ip {
            let kernel = matches!(cpumode, misc::KERNEL);
            let id = self.locate(pid, ip, kernel, false);
            cur.push(id);
        }
        let stack = self.intern_stack(&cur);
        self.cur = cur;
        if let (false, true, Some(chain)) = (
            lbr_used,
            self.fp_stacks.get(attr).copied().unwrap_or(false),
            &s.callchain,
        ) && !chain.iter().any(|a| a == TRUNCATED_MARK)
        {
            // Frame-pointer stacks (not those unwound while recording, which may end in
            // the mark): how far they got, and in which module they started.
            let (n, first) = fp::user_part(chain.iter());
            if let Some(pc) = first {
                let module = self.spaces.get(&pid).and_then(|sp| sp.find(pc));
                self.short_stacks.add(stack, n, module.map(|m| m.module));
            }
        }
        if self.branches.is_some()
            && let Some(bs) = &s.branch_stack
        {
            let index = match &self.merged {
                Some(merged) => merged
                    .get(&(event, pid, tid, comm, stack, weight.is_some()))
                    .copied()
                    .unwrap_or(self.samples.len() as u32),
                None => self.samples.len() as u32,
            };
            for e in bs.iter() {
                let from = self.locate(pid, e.from, false, false);
                let to = self.locate(pid, e.to, false, false);
                if let Some((list, ids)) = &mut self.branches {
                    let key = (index, from, to, e.from, e.to, e.flags);
                    match ids.get(&key) {
                        Some(&i) => {
                            if let Some((_, n)) = list.get_mut(i as usize) {
                                *n += 1;
                            }
                        }
                        None => {
                            ids.insert(key, list.len() as u32);
                            list.push((key, 1));
                        }
                    }
                }
            }
        }
        if let Some(merged) = &mut self.merged {
            let key = (event, pid, tid, comm, stack, weight.is_some());
            if let Some(&i) = merged.get(&key)
                && let Some(m) = self.samples.get_mut(i as usize)
            {
                m.period = m.period.saturating_add(period);
                m.weight = m.weight.map(|w| w.saturating_add(weight.unwrap_or(0)));
                m.count += 1;
                return;
            }
            merged.insert(key, self.samples.len() as u32);
        }
        let merge = self.merged.is_some();
        self.samples.push(RawSample {
            event,
            pid,
            tid,
            comm,
            time: if merge { None } else { s.time },
            cpu: if merge { None } else { s.cpu },
            period,
            weight,
            stack,
            count: 1,
        });
    }

    /// Appends the user stack unwound from `regs` and `stack` to `cur`, ending it with
    /// the `[truncated]` frame when the unwinding stopped before the stack's root.
    fn unwind_user(&mut self, pid: u32, regs: UserRegs, stack: &[u8], cur: &mut Vec<u32>) {
        let Some(mut u) = self.unwind.take() else {
            return;
        };
        let version = self.spaces.get(&pid).map_or(0, |s| s.version);
        let mut frames = std::mem::take(&mut u.frames);
        frames.clear();
        let ending = u.unwinder.unwind(
            pid,
            version,
            || self.mapped(pid, &mut u.files),
            regs,
            stack,
            &mut frames,
        );
        for f in &frames {
            let id = self.locate(pid, f.addr, false, f.ret);
            cur.push(id);
        }
        if ending == Ending::Truncated {
            let id = self.truncated_loc();
            cur.push(id);
        }
        u.frames = frames;
        self.unwind = Some(u);
    }

    /// The modules built without frame pointers that cut the frame-pointer stacks short
    /// (see [`fp`]): `stacks` and `frames` name the stacks' functions.
    fn cut_stacks(&self, stacks: &[Vec<FrameId>], frames: &[Frame]) -> Option<fp::CutStacks> {
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
            .cut(reached_root, |&m| match self.sym.module(m) {
                Some(Module::File { path, build_id }) => Some((
                    path.clone(),
                    fp::module_frame_pointers(self.sym.locator(), path, build_id.as_deref(), arch),
                )),
                _ => None,
            })
    }

    /// The location of the `[truncated]` frame.
    fn truncated_loc(&mut self) -> u32 {
        let m = self.sym.module_id(Module::Truncated);
        self.intern_loc((m, 0, false))
    }

    /// The executable mappings of `pid` with their files' unwind tables.
    fn mapped(
        &mut self,
        pid: u32,
        files: &mut HashMap<ModuleId, Option<Arc<FileData>>>,
    ) -> Vec<Mapped> {
        let Some(space) = self.spaces.get(&pid) else {
            return Vec::new();
        };
        space
            .iter()
            .map(|m| {
                let file = files
                    .entry(m.module)
                    .or_insert_with(|| match self.sym.module(m.module) {
                        Some(Module::File { path, build_id }) => crate::unwind::load_tables(
                            self.sym.locator(),
                            path,
                            build_id.as_deref(),
                            None,
                        )
                        .map(Arc::new),
                        _ => None,
                    })
                    .clone();
                let name = match self.sym.module(m.module) {
                    Some(Module::File { path, .. }) => path.clone(),
                    _ => String::new(),
                };
                Mapped {
                    start: m.start,
                    end: m.end,
                    pgoff: m.pgoff,
                    file,
                    name,
                }
            })
            .collect()
    }

    /// The id of a stack of location ids, each distinct stack stored once.
    fn intern_stack(&mut self, locs: &[u32]) -> u32 {
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

    fn intern_loc(&mut self, loc: Loc) -> u32 {
        if let Some(&id) = self.loc_ids.get(&loc) {
            return id;
        }
        let id = self.locs.len() as u32;
        self.locs.push(loc);
        self.loc_ids.insert(loc, id);
        id
    }

    /// Resolves every distinct location (one batch per module), interns the frames and
    /// assembles the samples.
    fn finish(
        mut self,
        events: Vec<EventInfo>,
        opts: &Options,
    ) -> (Profile, Symbolizer, Vec<Branch>) {
        let mut by_module: HashMap<ModuleId, Vec<(u64, bool, usize)>> = HashMap::default();
        for (i, &(m, off, ret)) in self.locs.iter().enumerate() {
            by_module.entry(m).or_default().push((off, ret, i));
        }
        let mut frames: Vec<Frame> = Vec::new();
        let mut frame_ids: HashMap<Frame, FrameId> = HashMap::default();
        let mut loc_frames: Vec<Vec<FrameId>> = vec![Vec::new(); self.locs.len()];
        let mut modules: Vec<_> = by_module.into_iter().collect();
        modules.sort_by_key(|(m, _)| *m);
        let batches: Vec<(ModuleId, Vec<(u64, bool)>)> = modules
            .iter()
            .map(|(m, items)| (*m, items.iter().map(|&(o, r, _)| (o, r)).collect()))
            .collect();
        let resolved = self.sym.resolve_batches(&batches);
        drop(batches);
        for ((_, items), resolved) in modules.iter().zip(resolved) {
            for ((_, _, i), fs) in items.iter().zip(resolved) {
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
                if let Some(slot) = loc_frames.get_mut(*i) {
                    *slot = keep;
                }
            }
        }
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
        let cut_stacks = self.cut_stacks(&stacks, &frames);
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
            .map(|((sample, from, to, fa, ta, flags), count)| Branch {
                sample,
                from: end(from, fa),
                to: end(to, ta),
                flags,
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
            comms: self.comms,
            samples,
            lost: self.lost,
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

/// A queued side-band record: (time, position in the file, record).
type Pending = (u64, u64, SideBand);

/// A record that changes what addresses mean (mappings, names, processes), owned so that
/// it can be applied in time order.
enum SideBand {
    Mmap {
        pid: u32,
        addr: u64,
        len: u64,
        pgoff: u64,
        name: String,
        build_id: Option<Vec<u8>>,
    },
    Comm {
        pid: u32,
        tid: u32,
        name: String,
        exec: bool,
    },
    Fork {
        pid: u32,
        ppid: u32,
        tid: u32,
        ptid: u32,
    },
}

impl SideBand {
    /// The process whose state the record changes (the child, for a FORK).
    fn pid(&self) -> u32 {
        match self {
            SideBand::Mmap { pid, .. }
            | SideBand::Comm { pid, .. }
            | SideBand::Fork { pid, .. } => *pid,
        }
    }

    fn of(rec: &Record<'_>) -> Option<SideBand> {
        Some(match &rec.body {
            Body::Mmap(m) if rec.header.misc & MISC_MMAP_DATA == 0 => SideBand::Mmap {
                pid: m.pid,
                addr: m.addr,
                len: m.len,
                pgoff: m.pgoff,
                name: String::from_utf8_lossy(m.filename).into_owned(),
                build_id: None,
            },
            Body::Mmap2(m) if rec.header.misc & MISC_MMAP_DATA == 0 => SideBand::Mmap {
                pid: m.pid,
                addr: m.addr,
                len: m.len,
                pgoff: m.pgoff,
                name: String::from_utf8_lossy(m.filename).into_owned(),
                build_id: match m.file_id {
                    FileId::BuildId(b) if !b.is_empty() => Some(b.to_vec()),
                    _ => None,
                },
            },
            Body::Comm {
                pid,
                tid,
                comm,
                exec,
            } => SideBand::Comm {
                pid: *pid,
                tid: *tid,
                name: String::from_utf8_lossy(comm).into_owned(),
                exec: *exec,
            },
            Body::Fork(t) => SideBand::Fork {
                pid: t.pid,
                ppid: t.ppid,
                tid: t.tid,
                ptid: t.ptid,
            },
            _ => return None,
        })
    }
}
