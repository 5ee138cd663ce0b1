//! [`Profile::build`]: replays a recording's records into address spaces over time, turns
//! every sample's stack into (module, offset) locations, resolves each distinct location
//! once, and interns the frames.

use rustc_hash::FxHashMap as HashMap;

use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::record::{Body, FileId, Record, context, misc};

use crate::error::Result;
use crate::maps::{AddrSpace, Mapping};
use crate::profile::{EventInfo, Frame, FrameId, FrameKind, Options, Profile, Sample};
use crate::symbolizer::{Module, ModuleId, Symbolizer, kernel_matches};

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
    /// Range in `Builder::stack_locs`.
    stack: (usize, usize),
}

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
    stack_locs: Vec<u32>,
    samples: Vec<RawSample>,
    lost: u64,
    /// Per attr: the period of a sample without PERIOD.
    fixed_period: Vec<u64>,
}

impl Profile {
    /// Symbolizes a recording: every sample of `pd` with its stack resolved against the
    /// address space of its process at its time, as `opts` asks.
    ///
    /// Unresolvable addresses become `[unknown]` frames (with their module when known);
    /// errors are only about records that cannot be decoded.
    pub fn build(pd: &PerfData, opts: &Options) -> Result<Profile> {
        let sym = Symbolizer::new(opts.inline, kernel_matches(pd.features()));
        Profile::build_with(pd, opts, sym).map(|(p, _)| p)
    }

    /// [`Profile::build`] with a given [`Symbolizer`] (its cache is reused), which is
    /// handed back with the profile (e.g. to read [`Symbolizer::lookups`]).
    pub fn build_with(
        pd: &PerfData,
        opts: &Options,
        sym: Symbolizer,
    ) -> Result<(Profile, Symbolizer)> {
        let (b, events) = Builder::replay(pd, opts, sym)?;
        Ok(b.finish(events, opts))
    }

    /// [`Profile::build`] that consumes the file and frees its bytes once its records
    /// are replayed, before the profile is assembled: the peak memory of symbolizing a
    /// large recording is then the profile's, not the profile's plus the file's.
    pub fn from_perf_data(pd: PerfData, opts: &Options) -> Result<Profile> {
        let sym = Symbolizer::new(opts.inline, kernel_matches(pd.features()));
        let (b, events) = Builder::replay(&pd, opts, sym)?;
        drop(pd);
        Ok(b.finish(events, opts).0)
    }
}

impl Builder {
    /// Replays every record of `pd` into address spaces, locations and raw samples.
    fn replay(
        pd: &PerfData,
        opts: &Options,
        mut sym: Symbolizer,
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
        let mut build_ids = HashMap::default();
        for b in &pd.features().build_ids {
            build_ids
                .entry(b.filename.clone())
                .or_insert_with(|| b.build_id.clone());
        }
        let kernel_module = sym.module_id(Module::Kernel);
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
            stack_locs: Vec::new(),
            samples: Vec::new(),
            lost: 0,
            fixed_period,
        };
        pd.for_each_record(|_off, rec| -> Result<()> {
            b.record(rec);
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

    fn record(&mut self, rec: &Record<'_>) {
        match &rec.body {
            Body::Sample(s) => self.sample(rec, s),
            Body::Mmap(m) if rec.header.misc & MISC_MMAP_DATA == 0 => {
                let name = String::from_utf8_lossy(m.filename);
                self.mmap(m.pid, m.addr, m.len, m.pgoff, &name, None);
            }
            Body::Mmap2(m) if rec.header.misc & MISC_MMAP_DATA == 0 => {
                let name = String::from_utf8_lossy(m.filename);
                let bid = match m.file_id {
                    FileId::BuildId(b) if !b.is_empty() => Some(b.to_vec()),
                    _ => None,
                };
                self.mmap(m.pid, m.addr, m.len, m.pgoff, &name, bid);
            }
            Body::Comm {
                pid,
                tid,
                comm,
                exec,
            } => {
                let name = String::from_utf8_lossy(comm);
                let id = self.intern_comm(&name);
                self.tid_comm.insert(*tid, id);
                if pid == tid {
                    self.pid_comm.insert(*pid, id);
                }
                if *exec && let Some(sp) = self.spaces.get_mut(pid) {
                    sp.clear();
                }
            }
            Body::Fork(t) => {
                if t.pid != t.ppid
                    && let Some(parent) = self.spaces.get(&t.ppid)
                {
                    let copy = parent.clone();
                    self.spaces.insert(t.pid, copy);
                }
                let parent_comm = self
                    .tid_comm
                    .get(&t.ptid)
                    .or_else(|| self.pid_comm.get(&t.ppid))
                    .copied();
                if let Some(c) = parent_comm {
                    self.tid_comm.insert(t.tid, c);
                    if t.pid == t.tid {
                        self.pid_comm.insert(t.pid, c);
                    }
                }
            }
            Body::Exit(t) => {
                // The process's last samples may follow its EXIT in a file written from
                // several rings: keep its maps until a new process reuses the pid (a FORK
                // or an exec replaces them).
                let _ = t;
            }
            Body::Lost { lost, .. } => self.lost += lost,
            Body::LostSamples { lost } => self.lost += lost,
            _ => {}
        }
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
            self.spaces.entry(pid).or_default().insert(m);
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

    fn sample(&mut self, rec: &Record<'_>, s: &hwprof_sampler::record::Sample<'_>) {
        let event = rec.attr.unwrap_or(0);
        let pid = s.pid.unwrap_or(u32::MAX);
        let tid = s.tid.unwrap_or(pid);
        let comm = match self.tid_comm.get(&tid).or_else(|| self.pid_comm.get(&pid)) {
            Some(&c) => c,
            None if pid == 0 => self.intern_comm("swapper"),
            None => self.intern_comm(&format!(":{tid}")),
        };
        let cpumode = rec.header.misc & misc::CPUMODE_MASK;
        let start = self.stack_locs.len();
        let mut pushed = false;
        if let Some(chain) = &s.callchain {
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
                let id = if guest {
                    let m = self.sym.module_id(Module::Other {
                        name: "[guest]".to_string(),
                    });
                    self.intern_loc((m, addr, !first))
                } else {
                    self.locate(pid, addr, kernel, !first)
                };
                self.stack_locs.push(id);
                first = false;
                pushed = true;
            }
        }
        if !pushed && let Some(ip) = s.ip {
            let kernel = matches!(cpumode, misc::KERNEL);
            let id = self.locate(pid, ip, kernel, false);
            self.stack_locs.push(id);
        }
        let period = s
            .period
            .filter(|&p| p != 0)
            .or_else(|| self.fixed_period.get(event).copied())
            .unwrap_or(1);
        let weight = s.weight.or(s.weight_struct.map(|w| u64::from(w.var1_dw)));
        self.samples.push(RawSample {
            event: event as u32,
            pid,
            tid,
            comm,
            time: s.time,
            cpu: s.cpu,
            period,
            weight,
            stack: (start, self.stack_locs.len()),
        });
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
    fn finish(mut self, events: Vec<EventInfo>, opts: &Options) -> (Profile, Symbolizer) {
        let mut by_module: HashMap<ModuleId, Vec<(u64, bool, usize)>> = HashMap::default();
        for (i, &(m, off, ret)) in self.locs.iter().enumerate() {
            by_module.entry(m).or_default().push((off, ret, i));
        }
        let mut frames: Vec<Frame> = Vec::new();
        let mut frame_ids: HashMap<Frame, FrameId> = HashMap::default();
        let mut loc_frames: Vec<Vec<FrameId>> = vec![Vec::new(); self.locs.len()];
        let mut modules: Vec<_> = by_module.into_iter().collect();
        modules.sort_by_key(|(m, _)| *m);
        for (m, items) in modules {
            let batch: Vec<(u64, bool)> = items.iter().map(|&(o, r, _)| (o, r)).collect();
            let resolved = self.sym.resolve(m, &batch);
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
        let samples = self
            .samples
            .iter()
            .map(|r| {
                let locs = self.stack_locs.get(r.stack.0..r.stack.1).unwrap_or(&[]);
                let mut stack = Vec::with_capacity(locs.len());
                for &l in locs {
                    if let Some(fs) = loc_frames.get(l as usize) {
                        stack.extend_from_slice(fs);
                    }
                }
                Sample {
                    event: r.event,
                    pid: r.pid,
                    tid: r.tid,
                    comm: r.comm,
                    time: r.time,
                    cpu: r.cpu,
                    period: r.period,
                    weight: r.weight,
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
        };
        (profile, self.sym)
    }
}
