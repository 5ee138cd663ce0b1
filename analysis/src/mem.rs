//! Memory-access profiles from PEBS load/store samples (`perf mem record`, `perf c2c
//! record`): where loads were served (L1, LFB, L2, L3, local/remote DRAM, remote caches,
//! hit/miss), their snoop and TLB results, latency percentiles per level and per
//! function, and the data symbols their addresses fall in: `hwprof mem report`, in the
//! spirit of `perf mem report`.
//!
//! [`collect`] reads a recording once for its samples' data fields (ADDR, DATA_SRC,
//! WEIGHT / WEIGHT_STRUCT) and the mappings of each process at each sample's time, and
//! counts each sample as it is read ([`MemProfile::add`]: per event and data source,
//! code location, data symbol, and per cache line), so that memory grows with the
//! distinct rows, not the samples; a merged [`Profile::build_reweighted`] (one sample
//! per distinct stack) then names the function of each code location. Data addresses
//! are named with [`DataSymbols`]. [`table`] groups the counts of one event by a
//! [`Key`].
//!
//! Shares are computed as perf's `--mem-mode` does: each sample costs its weight (the
//! load latency), or 1 when it has none (stores on most CPUs), so the "weight" share of
//! a level is the `Overhead` of `perf mem report --sort mem`; the "samples" share is
//! what `perf report --sort mem` shows (every PEBS sample has period 1... or the
//! period it carries).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::Serialize;

use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::record::{Body, DataSrc, FileId, misc};
use hwprof_symbolize::datasym::DataSymbols;
use hwprof_symbolize::symbolizer::KERNEL_MODULE;
use hwprof_symbolize::{Locator, Options, Profile};

use crate::c2c::Stats;
use crate::error::Result;

mod level;

pub use level::{Level, LevelProfile, profile_for_level};

/// The line size `perf c2c` groups addresses by.
pub const CACHE_LINE: u64 = 64;

/// One memory sample, decoded and named: what [`MemProfile::add`] counts (samples are
/// not kept).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemSample {
    /// Index in [`MemProfile::events`].
    pub event: u32,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// CPU, when sampled.
    pub cpu: Option<u32>,
    /// The instruction address.
    pub ip: u64,
    /// The data address (0 when not sampled).
    pub addr: u64,
    /// The raw `perf_mem_data_src`.
    pub data_src: u64,
    /// The load latency ([`hwprof_sampler::record::Sample::perf_weight`]: WEIGHT, or
    /// WEIGHT_STRUCT's `var1_dw`); 0 when none.
    pub weight: u64,
    /// The period.
    pub period: u64,
    /// The code location of the ip, in [`MemProfile::code`].
    pub code: u32,
    /// The data symbol of the address (`table`), when one covers it, in
    /// [`MemProfile::names`].
    pub data_symbol: Option<u32>,
    /// The module the data address is mapped from (file name), `[unknown]` when none,
    /// in [`MemProfile::names`].
    pub data_module: u32,
}

impl MemSample {
    /// The decoded data source.
    pub fn src(&self) -> DataSrc {
        DataSrc::from_u64(self.data_src)
    }

    /// What the sample costs in perf's `--mem-mode` shares: its weight, 1 when 0.
    pub fn cost(&self) -> u64 {
        self.weight.max(1)
    }
}

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

/// One (offset, instruction) of a cache line while counting.
#[derive(Clone, Debug, Default)]
pub struct AccessAcc {
    /// Counters.
    pub stats: Stats,
    /// (pid, tid) of the threads.
    pub threads: HashSet<(u32, u32)>,
    /// CPUs.
    pub cpus: HashSet<u32>,
    /// The code location of its first sample, in [`MemProfile::code`].
    pub code: u32,
}

/// One cache line while counting.
#[derive(Clone, Debug, Default)]
pub struct LineAcc {
    /// Counters.
    pub stats: Stats,
    /// The data symbol of its first sample with one, in [`MemProfile::names`].
    pub data_symbol: Option<u32>,
    /// By (offset, ip).
    pub accesses: HashMap<(u64, u64), AccessAcc>,
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

/// What a sample's data address was known to be at its time.
#[derive(Clone, Debug)]
struct Map {
    start: u64,
    len: u64,
    pgoff: u64,
    /// The file, in [`Names`].
    name: u32,
}

/// Strings kept once each, by id.
#[derive(Default)]
struct Names {
    list: Vec<String>,
    ids: HashMap<String, u32>,
}

impl Names {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.list.len() as u32;
        self.list.push(s.to_string());
        self.ids.insert(s.to_string(), id);
        id
    }
}

/// Where an ip was mapped from in the first pass: (file name id, file offset, offset
/// in the mapping), or the bare ip when nothing maps it.
type CodeKey = (Option<(u32, u64, u64)>, u64);

/// Reads the memory samples of `pd`: every sample that carries DATA_SRC (samples of
/// other events are left out), with its function (from `opts`' symbolization) and data
/// symbol, counted as they are read.
///
/// Functions come from a merged [`Profile::build_reweighted`] (one sample per distinct
/// stack): its frames, by module and offset, name the code locations this pass found.
pub fn collect(pd: &PerfData, opts: &Options) -> Result<MemProfile> {
    let mut maps: HashMap<u32, Vec<Map>> = HashMap::default();
    // Mapped file names (paths).
    let mut files = Names::default();
    // Everything samples name.
    let mut names = Names::default();
    let unknown = names.id("[unknown]");
    let mut datasyms = DataSymbols::new(Locator::from_env(opts.symfs.clone()));
    let mut header_ids: HashMap<String, Vec<u8>> = HashMap::default();
    for b in &pd.features().build_ids {
        header_ids
            .entry(b.filename.clone())
            .or_insert_with(|| b.build_id.clone());
    }
    // Build ids of the mapped files from MMAP2 (they win over HEADER_BUILD_ID's).
    let mut file_build_ids: HashMap<u32, Vec<u8>> = HashMap::default();
    let mut codes: HashMap<CodeKey, u32> = HashMap::default();
    let mut code_keys: Vec<CodeKey> = Vec::new();
    let mut p = MemProfile {
        events: pd.attrs().iter().map(|a| a.name.clone()).collect(),
        ..MemProfile::default()
    };
    pd.for_each_record(|_, rec| {
        if let Body::Mmap2(m) = &rec.body
            && let FileId::BuildId(b) = m.file_id
        {
            let id = files.id(&String::from_utf8_lossy(m.filename));
            file_build_ids.entry(id).or_insert_with(|| b.to_vec());
        }
        let mut add = |pid, start, len, pgoff, name: &[u8]| {
            let name = files.id(&String::from_utf8_lossy(name));
            add_map(
                &mut maps,
                pid,
                Map {
                    start,
                    len,
                    pgoff,
                    name,
                },
            );
        };
        match &rec.body {
            Body::Mmap(m) => add(m.pid, m.addr, m.len, m.pgoff, m.filename),
            Body::Mmap2(m) => add(m.pid, m.addr, m.len, m.pgoff, m.filename),
            Body::Comm {
                pid, exec: true, ..
            } => {
                maps.remove(pid);
            }
            Body::Fork(t) if t.pid != t.ppid => {
                if let Some(parent) = maps.get(&t.ppid).cloned() {
                    maps.insert(t.pid, parent);
                }
            }
            Body::Sample(s) => {
                let Some(data_src) = s.data_src else {
                    return Ok(());
                };
                let pid = s.pid.unwrap_or(u32::MAX);
                let addr = s.addr.unwrap_or(0);
                let ip = s.ip.unwrap_or(0);
                let user = rec.header.misc & misc::CPUMODE_MASK == misc::USER;
                let find = |a: u64| {
                    maps.get(&pid).and_then(|ms| {
                        ms.iter()
                            .rev()
                            .find(|m| a >= m.start && a - m.start < m.len)
                            .map(|m| (m.name, a - m.start + m.pgoff, a - m.start))
                    })
                };
                let data = if user || addr < 0xffff_8000_0000_0000 {
                    find(addr)
                } else {
                    None
                };
                let code_key: CodeKey = (
                    if user || ip < 0xffff_8000_0000_0000 {
                        find(ip)
                    } else {
                        None
                    },
                    ip,
                );
                let code = *codes.entry(code_key).or_insert_with(|| {
                    code_keys.push(code_key);
                    code_keys.len() as u32 - 1
                });
                let (data_symbol, data_module) = match data {
                    Some((file, off, _)) => {
                        let path = files.list.get(file as usize).map_or("", |s| s.as_str());
                        let module = names.id(base(path));
                        let bid = file_build_ids
                            .get(&file)
                            .or_else(|| header_ids.get(path))
                            .map(|b| b.as_slice());
                        match datasyms.lookup(path, bid, off) {
                            Some((name, _)) => (Some(names.id(name)), module),
                            None => (None, module),
                        }
                    }
                    None => (None, unknown),
                };
                p.add(&MemSample {
                    event: rec.attr.unwrap_or(0) as u32,
                    pid,
                    tid: s.tid.unwrap_or(pid),
                    cpu: s.cpu,
                    ip,
                    addr,
                    data_src,
                    weight: s
                        .weight
                        .or(s.weight_struct.map(|w| u64::from(w.var1_dw)))
                        .unwrap_or(0),
                    period: s.period.unwrap_or(1),
                    code,
                    data_symbol,
                    data_module,
                });
            }
            _ => {}
        }
        Ok::<(), crate::Error>(())
    })?;
    // The functions: a merged profile (one sample per distinct stack), whose frames
    // say the function at each (module, offset).
    let opts = Options {
        merge: true,
        inline: false,
        ..opts.clone()
    };
    let mut reweigh = |_: usize, _period: u64| Some((0, 1));
    let profile = Profile::build_reweighted(pd, &opts, &mut reweigh)?;
    // Each resolved frame's offset is its function's start (or the address itself when
    // unresolved), and every sampled ip has its frame here: the ip's function is the
    // frame of its module that starts last at or before it.
    let mut by_module: HashMap<Option<&str>, BTreeMap<u64, (&str, &str)>> = HashMap::default();
    for ps in &profile.samples {
        if let Some(f) = ps.stack.first().map(|&f| profile.frame(f)) {
            by_module
                .entry(f.module.as_deref())
                .or_default()
                .entry(f.module_offset)
                .or_insert((f.name(), f.module_name()));
        }
    }
    let find = |module: Option<&str>, off: u64| {
        by_module
            .get(&module)
            .and_then(|m| m.range(..=off).next_back())
            .map(|(_, &v)| v)
    };
    p.code = code_keys
        .iter()
        .map(|&(map, ip)| {
            let found = match map {
                Some((file, off, rel)) => {
                    let path = files.list.get(file as usize).map_or("", |s| s.as_str());
                    if anon(path) {
                        find(Some(path), ip)
                    } else if path.starts_with('/') {
                        find(Some(path), off)
                    } else {
                        find(Some(path), rel)
                    }
                }
                None if ip >= 0xffff_8000_0000_0000 => find(Some(KERNEL_MODULE), ip),
                None => find(None, ip),
            };
            match found {
                Some((f, m)) => (names.id(f), names.id(m)),
                None => (unknown, unknown),
            }
        })
        .collect();
    p.names = names.list;
    Ok(p)
}

/// Whether the profile names mapping `name` anonymous memory (offsets are addresses).
fn anon(name: &str) -> bool {
    name.is_empty()
        || name == "//anon"
        || name.starts_with("/dev/zero")
        || name.starts_with("/anon_hugepage")
        || name.starts_with("[anon")
        || name.starts_with("/memfd:")
}

fn base(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Adds `map` to the mappings of `pid`; it replaces what it overlaps.
fn add_map(maps: &mut HashMap<u32, Vec<Map>>, pid: u32, map: Map) {
    let ms = maps.entry(pid).or_default();
    let end = map.start.saturating_add(map.len);
    ms.retain(|m| m.start.saturating_add(m.len) <= map.start || end <= m.start);
    ms.push(map);
}

/// What rows group samples by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
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
