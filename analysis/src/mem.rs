//! Memory-access profiles from PEBS load/store samples (`perf mem record`, `perf c2c
//! record`): where loads were served (L1, LFB, L2, L3, local/remote DRAM, remote caches,
//! hit/miss), their snoop and TLB results, latency percentiles per level and per
//! function, and the data symbols their addresses fall in: `hwprof mem report`, in the
//! spirit of `perf mem report`.
//!
//! [`collect`] replays a recording once ([`hwprof_symbolize::replay`]) for its samples'
//! data fields (ADDR, DATA_SRC, WEIGHT / WEIGHT_STRUCT) against the mappings of each
//! process at each sample's time, and counts each sample as it is read
//! ([`MemProfile::add`]: per event and data source, code location, data symbol, and per
//! cache line), so that memory grows with the distinct rows, not the samples; each
//! distinct code location is symbolized once at the end to name its function. Data
//! addresses are named with [`DataSymbols`]. [`table`] groups the counts of one event
//! by a [`Key`].
//!
//! Shares are computed as perf's `--mem-mode` does: each sample costs its weight (the
//! load latency), or 1 when it has none (stores on most CPUs), so the "weight" share of
//! a level is the `Overhead` of `perf mem report --sort mem`; the "samples" share is
//! what `perf report --sort mem` shows (every PEBS sample has period 1... or the
//! period it carries).

use hdrhistogram::Histogram;
use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;

use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::record::{DataSrc, Record, Sample, misc};
use hwprof_symbolize::buildid;
use hwprof_symbolize::datasym::DataSymbols;
use hwprof_symbolize::intern::Interner;
use hwprof_symbolize::process::{KERNEL_START, Processes, base};
use hwprof_symbolize::replay::{Visitor, replay};
use hwprof_symbolize::{FrameKind, Locator, ModuleId, Options, Symbolizer, kernel_matches};

use crate::error::Result;

mod level;
mod lines;
mod sample;

pub use level::{Level, LevelProfile, profile_for_level};
pub use lines::{AccessAcc, Cycles, LineAcc, Stats};
pub use sample::MemSample;

/// The line size `perf c2c` groups addresses by.
pub const CACHE_LINE: u64 = 64;

/// The counts of a group of samples: samples, periods, costs and a latency histogram.
#[derive(Clone, Debug, Default)]
pub struct Agg {
    /// Samples.
    pub samples: u64,
    /// Sum of periods.
    pub period: u64,
    /// Sum of costs (weights, 1 for a sample without).
    pub cost: u64,
    /// Samples with a weight.
    pub weighed: u64,
    /// Sum of their weights.
    pub weight_sum: u64,
    /// Largest weight.
    pub max: u64,
    /// Their weights, to 3 significant digits (exact below 2048).
    hist: Option<Histogram<u64>>,
}

impl Agg {
    fn add(&mut self, s: &MemSample) {
        self.samples += 1;
        self.period = self.period.saturating_add(s.period);
        self.cost = self.cost.saturating_add(s.cost());
        if s.weight > 0 {
            self.weighed += 1;
            self.weight_sum = self.weight_sum.saturating_add(s.weight);
            self.max = self.max.max(s.weight);
            if self.hist.is_none() {
                self.hist = Histogram::new(3).ok();
            }
            // `record` grows the histogram (`saturating_record` would clamp to its
            // current top); a value past u64's reach is clamped.
            if let Some(h) = &mut self.hist
                && h.record(s.weight).is_err()
            {
                h.saturating_record(s.weight);
            }
        }
    }

    fn merge(&mut self, o: &Agg) {
        self.samples += o.samples;
        self.period = self.period.saturating_add(o.period);
        self.cost = self.cost.saturating_add(o.cost);
        self.weighed += o.weighed;
        self.weight_sum = self.weight_sum.saturating_add(o.weight_sum);
        self.max = self.max.max(o.max);
        match (&mut self.hist, &o.hist) {
            (Some(h), Some(oh)) => {
                let _ = h.add(oh);
            }
            (None, Some(oh)) => self.hist = Some(oh.clone()),
            _ => {}
        }
    }

    /// The latency percentiles of the samples with a weight.
    pub fn latency(&self) -> Latency {
        match &self.hist {
            Some(h) if self.weighed > 0 => {
                let q = |p: f64| h.value_at_quantile(p / 100.0).min(self.max);
                Latency {
                    n: self.weighed,
                    mean: self.weight_sum as f64 / self.weighed as f64,
                    p50: q(50.0),
                    p90: q(90.0),
                    p99: q(99.0),
                    max: self.max,
                }
            }
            _ => Latency::default(),
        }
    }
}

/// The memory samples of a recording, counted: per event the groups of every [`Key`],
/// and per cache line its counters (for [`crate::c2c`]). Memory grows with the distinct
/// data sources, code locations, data symbols and lines, not with the samples.
#[derive(Clone, Debug, Default)]
pub struct MemProfile {
    /// Event names, by index.
    pub events: Vec<String>,
    /// The names samples refer to (functions, modules, data symbols), each once.
    pub names: Vec<String>,
    /// Code locations: (function, module) in [`MemProfile::names`].
    pub code: Vec<(u32, u32)>,
    /// Per event: all its samples.
    pub totals: Vec<Agg>,
    /// Per event: whether it is a memory event, one of its samples' data source saying
    /// where it was served ([`DataSrc::is_informative`]): an event that only carries DATA_SRC
    /// (cpu-clock recorded with `--call-graph dwarf`) has `PERF_MEM_NA` in every sample.
    pub memory: Vec<bool>,
    /// Per (event, data source).
    by_src: HashMap<(u32, u64), Agg>,
    /// Per (event, code location).
    by_code: HashMap<(u32, u32), Agg>,
    /// Per (event, data symbol or module).
    by_data: HashMap<(u32, u32), Agg>,
    /// Per (event, data module).
    by_data_module: HashMap<(u32, u32), Agg>,
    /// Counters over all samples (c2c).
    pub c2c_total: Stats,
    /// Cache lines by address (c2c).
    pub lines: HashMap<u64, LineAcc>,
    /// What the reader should be told about the replay (records out of time order).
    pub notices: Vec<String>,
}

impl MemProfile {
    /// Name `id` of [`MemProfile::names`] (`[unknown]` for an id out of range).
    pub fn name(&self, id: u32) -> &str {
        self.names
            .get(id as usize)
            .map_or("[unknown]", |s| s.as_str())
    }

    /// An empty profile with these events, names and code locations (for counting
    /// samples with [`MemProfile::add`]).
    pub fn new(events: Vec<String>, names: Vec<String>, code: Vec<(u32, u32)>) -> MemProfile {
        MemProfile {
            events,
            names,
            code,
            ..MemProfile::default()
        }
    }

    /// The (function, module) names of code location `code`.
    pub fn code_names(&self, code: u32) -> (&str, &str) {
        match self.code.get(code as usize) {
            Some(&(f, m)) => (self.name(f), self.name(m)),
            None => ("[unknown]", "[unknown]"),
        }
    }

    /// Counts one sample.
    pub fn add(&mut self, s: &MemSample) {
        let e = s.event as usize;
        if self.totals.len() <= e {
            self.totals.resize(e + 1, Agg::default());
        }
        self.totals[e].add(s);
        if self.memory.len() <= e {
            self.memory.resize(e + 1, false);
        }
        self.memory[e] |= s.src().is_informative();
        self.by_src.entry((s.event, s.data_src)).or_default().add(s);
        self.by_code.entry((s.event, s.code)).or_default().add(s);
        let data = s.data_symbol.unwrap_or(s.data_module);
        self.by_data.entry((s.event, data)).or_default().add(s);
        self.by_data_module
            .entry((s.event, s.data_module))
            .or_default()
            .add(s);
        self.c2c_total.add(s);
        if s.addr == 0 {
            return;
        }
        let addr = s.addr & !(CACHE_LINE - 1);
        let l = self.lines.entry(addr).or_default();
        l.stats.add(s);
        if l.data_symbol.is_none() {
            l.data_symbol = s.data_symbol;
        }
        let a = l
            .accesses
            .entry((s.addr - addr, s.ip))
            .or_insert_with(|| AccessAcc {
                code: s.code,
                ..AccessAcc::default()
            });
        a.stats.add(s);
        a.threads.insert((s.pid, s.tid));
        if let Some(c) = s.cpu {
            a.cpus.insert(c);
        }
    }

    /// Whether it holds no memory sample: no sample had a data source, or no data
    /// source said anything ([`MemProfile::memory`]).
    pub fn is_empty(&self) -> bool {
        self.events_with_samples().is_empty()
    }

    /// Whether event `e` is a memory event ([`MemProfile::memory`]).
    pub fn is_memory_event(&self, e: u32) -> bool {
        self.memory.get(e as usize).copied().unwrap_or(false)
    }

    /// Samples that carried a data source, of every event (memory events or not).
    pub fn with_source(&self) -> u64 {
        self.totals.iter().map(|t| t.samples).sum()
    }

    /// The events with samples that carry a data source but are no memory events (every
    /// data source `PERF_MEM_NA`): their samples are left out of the tables.
    pub fn not_memory_events(&self) -> Vec<u32> {
        (0..self.events.len() as u32)
            .filter(|&e| {
                !self.is_memory_event(e)
                    && self.totals.get(e as usize).is_some_and(|t| t.samples > 0)
            })
            .collect()
    }

    /// All the samples of event `e`.
    pub fn total(&self, e: u32) -> Agg {
        self.totals.get(e as usize).cloned().unwrap_or_default()
    }

    /// The indices of the memory events that have samples, in event order (an event
    /// whose samples carry no data source that says anything is left out).
    pub fn events_with_samples(&self) -> Vec<u32> {
        (0..self.events.len() as u32)
            .filter(|&e| {
                self.is_memory_event(e)
                    && self.totals.get(e as usize).is_some_and(|t| t.samples > 0)
            })
            .collect()
    }
}

/// The replay's visitor of [`collect`]: counts each memory sample as it comes, its code
/// location normalized (module, offset), its data address named.
struct Collector {
    p: MemProfile,
    /// Everything samples name.
    names: Interner<String>,
    unknown: u32,
    datasyms: DataSymbols,
    /// The name of each data file's module (its base name), by data file id.
    data_modules: HashMap<u32, u32>,
    /// The distinct code locations of the samples' ips.
    codes: Interner<(ModuleId, u64)>,
}

impl Visitor for Collector {
    fn sample(
        &mut self,
        procs: &mut Processes,
        rec: &Record<'_>,
        s: &Sample<'_>,
    ) -> hwprof_symbolize::Result<()> {
        let Some(data_src) = s.data_src else {
            return Ok(());
        };
        let pid = s.pid.unwrap_or(u32::MAX);
        let addr = s.addr.unwrap_or(0);
        let ip = s.ip.unwrap_or(0);
        let cpumode = rec.header.misc & misc::CPUMODE_MASK;
        let user = cpumode == misc::USER;
        let data = if user || addr < KERNEL_START {
            procs.find_data(pid, addr)
        } else {
            None
        };
        let code = self
            .codes
            .id(procs.locate(pid, ip, cpumode == misc::KERNEL));
        let (data_symbol, data_module) = match data {
            Some(d) => {
                let (path, bid) = procs.data_file(d.file);
                let names = &mut self.names;
                let module = *self
                    .data_modules
                    .entry(d.file)
                    .or_insert_with(|| names.id_str(base(path)));
                match self.datasyms.lookup(path, bid, d.offset) {
                    Some((name, _)) => (Some(self.names.id_str(name)), module),
                    None => (None, module),
                }
            }
            None => (None, self.unknown),
        };
        self.p.add(&MemSample {
            event: rec.attr.unwrap_or(0) as u32,
            pid,
            tid: s.tid.unwrap_or(pid),
            cpu: s.cpu,
            ip,
            addr,
            data_src,
            weight: s.perf_weight().unwrap_or(0),
            period: s.period.unwrap_or(1),
            code,
            data_symbol,
            data_module,
        });
        Ok(())
    }
}

/// Reads the memory samples of `pd` in one replay ([`hwprof_symbolize::replay`]): every
/// sample that carries DATA_SRC (samples of other events are left out), counted as it
/// is read, with the code location of its ip and the data symbol of its address, against
/// its process's mappings at its time. Each distinct code location is then symbolized
/// once (`opts`' symbolization, without inlined functions): the function of the ip.
pub fn collect(pd: &PerfData, opts: &Options) -> Result<MemProfile> {
    let mut procs = Processes::new(buildid::by_path(pd.features())).with_data();
    let mut names = Interner::default();
    let unknown = names.id_str("[unknown]");
    let mut v = Collector {
        p: MemProfile {
            events: pd.attrs().iter().map(|a| a.name.clone()).collect(),
            ..MemProfile::default()
        },
        names,
        unknown,
        datasyms: DataSymbols::new(Locator::from_env(opts.symfs.clone())),
        data_modules: HashMap::default(),
        codes: Interner::default(),
    };
    let mut sym = Symbolizer::with_locator(
        false,
        kernel_matches(pd.features()),
        Locator::from_env(opts.symfs.clone()),
    );
    if opts.kernel {
        sym.prefetch_kernel_symbols();
    }
    let order = replay(pd, &mut procs, &mut v)?;
    // The functions: each distinct code location resolved once, one batch per module.
    let mut code = vec![(unknown, unknown); v.codes.len()];
    let names = &mut v.names;
    sym.resolve_locations(
        procs.modules(),
        v.codes.iter().map(|&(m, off)| (m, off, false)),
        |i, frames| {
            let leaf = frames.iter().find(|f| match f.kind {
                FrameKind::Kernel => opts.kernel,
                FrameKind::User | FrameKind::Jit => opts.user,
            });
            if let (Some(f), Some(slot)) = (leaf, code.get_mut(i)) {
                *slot = (names.id_str(f.name()), names.id_str(f.module_name()));
            }
        },
    );
    let mut p = v.p;
    p.code = code;
    p.names = v.names.into_vec();
    p.notices.extend(order.notice());
    Ok(p)
}

/// What rows group samples by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Key {
    /// Where the access was served, as `perf mem` prints it ("L1 hit", "Local RAM hit").
    Level,
    /// The snoop result ("None", "HitM").
    Snoop,
    /// The data TLB result ("L1 or L2 hit", "Walker miss").
    Tlb,
    /// Locked access ("Yes", "No").
    Lock,
    /// The function of the ip.
    Function,
    /// The data symbol (without offset), or the data module for addresses no symbol
    /// covers.
    Data,
    /// The module the data address is mapped from.
    DataModule,
}

impl Key {
    /// The column title.
    pub fn title(self) -> &'static str {
        match self {
            Key::Level => "Memory access",
            Key::Snoop => "Snoop",
            Key::Tlb => "TLB access",
            Key::Lock => "Locked",
            Key::Function => "Symbol",
            Key::Data => "Data Symbol",
            Key::DataModule => "Data Object",
        }
    }
}

/// Latency percentiles (nearest rank) of a row's weights, in cycles: mean and max are
/// exact, the percentiles exact below 2048 cycles and to 3 significant digits above.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Samples with a weight.
    pub n: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest.
    pub max: u64,
}

/// One row of a [`table`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The key's value.
    pub key: String,
    /// Samples.
    pub samples: u64,
    /// Sum of periods.
    pub period: u64,
    /// Sum of costs (weights, 1 for a sample without).
    pub weight: u64,
    /// Share of the event's periods, in percent (`perf report --sort mem`).
    pub period_pct: f64,
    /// Share of the event's costs, in percent (`perf mem report`'s Overhead).
    pub weight_pct: f64,
    /// Latency of the samples with a weight.
    pub latency: Latency,
}

/// The samples of `event` grouped by `key`, largest weight share first (then key).
pub fn table(p: &MemProfile, event: u32, key: Key) -> Vec<Row> {
    let mut groups: HashMap<String, Agg> = HashMap::default();
    let mut put = |k: String, a: &Agg| groups.entry(k).or_default().merge(a);
    match key {
        Key::Level | Key::Snoop | Key::Tlb | Key::Lock => {
            for (&(e, src), a) in &p.by_src {
                if e != event {
                    continue;
                }
                let d = DataSrc::from_u64(src);
                let k = match key {
                    Key::Level => d.level(),
                    Key::Snoop => d.snoop(),
                    Key::Tlb => d.tlb(),
                    _ => d.lock().to_string(),
                };
                put(k, a);
            }
        }
        Key::Function => {
            for (&(e, code), a) in &p.by_code {
                if e == event {
                    put(p.code_names(code).0.to_string(), a);
                }
            }
        }
        Key::Data | Key::DataModule => {
            let m = if key == Key::Data {
                &p.by_data
            } else {
                &p.by_data_module
            };
            for (&(e, n), a) in m {
                if e == event {
                    put(p.name(n).to_string(), a);
                }
            }
        }
    }
    let total = p.total(event);
    let pct = |x: u64, t: u64| {
        if t == 0 {
            0.0
        } else {
            100.0 * x as f64 / t as f64
        }
    };
    let mut rows: Vec<Row> = groups
        .into_iter()
        .map(|(k, a)| Row {
            key: k,
            samples: a.samples,
            period: a.period,
            weight: a.cost,
            period_pct: pct(a.period, total.period),
            weight_pct: pct(a.cost, total.cost),
            latency: a.latency(),
        })
        .collect();
    rows.sort_by(|a, b| b.weight.cmp(&a.weight).then_with(|| a.key.cmp(&b.key)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(event: u32, data_src: u64, weight: u64, function: u32) -> MemSample {
        MemSample {
            event,
            pid: 1,
            tid: 1,
            cpu: None,
            ip: 0,
            addr: 0x1000,
            data_src,
            weight,
            period: 1,
            code: function,
            data_symbol: None,
            data_module: 2,
        }
    }

    fn profile(samples: &[MemSample]) -> MemProfile {
        let mut p = MemProfile::new(
            vec!["e".into()],
            vec!["f".into(), "g".into(), "m".into()],
            vec![(0, 2), (1, 2)],
        );
        for s in samples {
            p.add(s);
        }
        p
    }

    // mem_op LOAD, mem_lvl L1|HIT or L3|HIT.
    const L1: u64 = 0x02 | (0x08 | 0x02) << 5;
    const L3: u64 = 0x02 | (0x40 | 0x02) << 5;

    #[test]
    fn shares_by_weight_and_by_period() {
        let p = profile(&[s(0, L1, 10, 0), s(0, L1, 10, 0), s(0, L3, 80, 1)]);
        let rows = table(&p, 0, Key::Level);
        assert_eq!(rows[0].key, "L3 hit");
        assert_eq!(rows[0].weight_pct, 80.0);
        assert!((rows[0].period_pct - 100.0 / 3.0).abs() < 1e-9);
        assert_eq!(rows[1].key, "L1 hit");
        assert_eq!(rows[1].latency.p50, 10);
        let rows = table(&p, 0, Key::Function);
        assert_eq!(rows[1].key, "f");
    }

    #[test]
    fn samples_without_weight_cost_one() {
        let p = profile(&[s(0, L1, 0, 0), s(0, L3, 0, 0)]);
        let rows = table(&p, 0, Key::Level);
        assert_eq!(rows.iter().map(|r| r.weight_pct).sum::<f64>(), 100.0);
        assert_eq!(rows[0].latency, Latency::default());
    }

    /// An event whose samples carry only `PERF_MEM_NA` (cpu-clock recorded with dwarf
    /// callchains) is no memory event: left out of the tables and c2c's totals.
    #[test]
    fn events_without_memory_samples_are_left_out() {
        const NA: u64 = 0x1e_0508_0021;
        let mut p = profile(&[s(0, NA, 0, 0), s(0, NA, 0, 1)]);
        assert!(p.is_empty());
        assert_eq!(p.with_source(), 2);
        assert_eq!(p.not_memory_events(), [0]);
        p.events.push("mem-loads".into());
        p.add(&s(1, L1, 10, 0));
        p.add(&s(1, NA, 0, 0));
        assert!(!p.is_empty());
        assert_eq!(p.events_with_samples(), [1]);
        assert_eq!(p.not_memory_events(), [0]);
        let r = crate::c2c::analyze(&p, true);
        assert_eq!((r.total.records, r.total.loads, r.total.noparse), (2, 1, 1));
    }

    #[test]
    fn percentiles_nearest_rank() {
        let w: Vec<MemSample> = (1..=100).rev().map(|w| s(0, L1, w, 0)).collect();
        let l = table(&profile(&w), 0, Key::Level)[0].latency;
        assert_eq!((l.p50, l.p90, l.p99, l.max, l.n), (50, 90, 99, 100, 100));
        assert_eq!(l.mean, 50.5);
    }

    #[test]
    fn percentiles_to_three_digits_above_2048() {
        let w: Vec<MemSample> = (0..100).map(|i| s(0, L1, 100_000 + i, 0)).collect();
        let l = table(&profile(&w), 0, Key::Level)[0].latency;
        assert_eq!(l.max, 100_099);
        assert!(l.p50.abs_diff(100_049) <= 100, "{l:?}");
        assert!(l.p99 <= l.max);
    }
}
