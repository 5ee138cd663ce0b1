//! Memory-access profiles from PEBS load/store samples (`perf mem record`, `perf c2c
//! record`): where loads were served (L1, LFB, L2, L3, local/remote DRAM, remote caches,
//! hit/miss), their snoop and TLB results, latency percentiles per level and per
//! function, and the data symbols their addresses fall in: `hwprof mem report`, in the
//! spirit of `perf mem report`.
//!
//! [`collect`] reads a recording once for its samples' data fields (ADDR, DATA_SRC,
//! WEIGHT / WEIGHT_STRUCT) and the mappings of each process at each sample's time, and
//! once more through [`Profile::build_reweighted`] for the function of each sample's ip;
//! data addresses are named with [`DataSymbols`]. [`table`] groups the samples of one
//! event by a [`Key`].
//!
//! Shares are computed as perf's `--mem-mode` does: each sample costs its weight (the
//! load latency), or 1 when it has none (stores on most CPUs), so the "weight" share of
//! a level is the `Overhead` of `perf mem report --sort mem`; the "samples" share is
//! what `perf report --sort mem` shows (every PEBS sample has period 1... or the
//! period it carries).

use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;

use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::record::{Body, DataSrc, FileId, misc};
use hwprof_symbolize::datasym::DataSymbols;
use hwprof_symbolize::{Locator, Options, Profile};

use crate::error::Result;

/// The line size `perf c2c` groups addresses by.
pub const CACHE_LINE: u64 = 64;

/// One memory sample, decoded and named.
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
    /// The load latency (WEIGHT, or WEIGHT_STRUCT's `var1_dw`); 0 when none.
    pub weight: u64,
    /// The period.
    pub period: u64,
    /// The function of the ip (`[unknown]` when none), in [`MemProfile::names`].
    pub function: u32,
    /// The module of the ip (file name), in [`MemProfile::names`].
    pub module: u32,
    /// The data symbol of the address (`table`), when one covers it, in
    /// [`MemProfile::names`].
    pub data_symbol: Option<u32>,
    /// The offset of the address in its data symbol.
    pub data_offset: u64,
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

/// The memory samples of a recording.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MemProfile {
    /// Event names, by index.
    pub events: Vec<String>,
    /// The names samples refer to (functions, modules, data symbols), each once.
    pub names: Vec<String>,
    /// The samples (with DATA_SRC) in file order.
    pub samples: Vec<MemSample>,
}

impl MemProfile {
    /// Name `id` of [`MemProfile::names`] (`[unknown]` for an id out of range).
    pub fn name(&self, id: u32) -> &str {
        self.names
            .get(id as usize)
            .map_or("[unknown]", |s| s.as_str())
    }

    /// The data symbol of `s` with its offset as perf prints it (`table+0x2000`), or
    /// the address in hex.
    pub fn data_name(&self, s: &MemSample) -> String {
        match s.data_symbol {
            Some(n) => format!("{}+{:#x}", self.name(n), s.data_offset),
            None => format!("{:#018x}", s.addr),
        }
    }

    /// The indices of the events that have samples, in event order.
    pub fn events_with_samples(&self) -> Vec<u32> {
        let mut seen = vec![false; self.events.len()];
        for s in &self.samples {
            if let Some(x) = seen.get_mut(s.event as usize) {
                *x = true;
            }
        }
        (0..self.events.len() as u32)
            .filter(|&e| seen[e as usize])
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

/// What the first pass keeps of one sample.
struct Raw {
    event: u32,
    pid: u32,
    tid: u32,
    cpu: Option<u32>,
    ip: u64,
    addr: u64,
    data_src: Option<u64>,
    weight: u64,
    period: u64,
    /// (file name id, file offset) of the data address.
    data: Option<(u32, u64)>,
}

/// Reads the memory samples of `pd`: every sample that carries DATA_SRC (samples of
/// other events are left out), with its function (from `opts`' symbolization) and data
/// symbol.
pub fn collect(pd: &PerfData, opts: &Options) -> Result<MemProfile> {
    let mut raws: Vec<Raw> = Vec::new();
    let mut maps: HashMap<u32, Vec<Map>> = HashMap::default();
    // Mapped file names (paths), then everything samples name.
    let mut files = Names::default();
    // Build ids of the mapped files: MMAP2's, else HEADER_BUILD_ID's.
    let mut file_build_ids: HashMap<u32, Vec<u8>> = HashMap::default();
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
                let pid = s.pid.unwrap_or(u32::MAX);
                let addr = s.addr.unwrap_or(0);
                let user = rec.header.misc & misc::CPUMODE_MASK == misc::USER;
                let data = if user || addr < 0xffff_8000_0000_0000 {
                    maps.get(&pid).and_then(|ms| {
                        ms.iter()
                            .rev()
                            .find(|m| addr >= m.start && addr - m.start < m.len)
                            .map(|m| (m.name, addr - m.start + m.pgoff))
                    })
                } else {
                    None
                };
                raws.push(Raw {
                    event: rec.attr.unwrap_or(0) as u32,
                    pid,
                    tid: s.tid.unwrap_or(pid),
                    cpu: s.cpu,
                    ip: s.ip.unwrap_or(0),
                    addr,
                    data_src: s.data_src,
                    weight: s
                        .weight
                        .or(s.weight_struct.map(|w| u64::from(w.var1_dw)))
                        .unwrap_or(0),
                    period: s.period.unwrap_or(1),
                    data,
                });
            }
            _ => {}
        }
        Ok::<(), crate::Error>(())
    })?;
    // The function of each sample's ip: the profile's period is the sample's number
    // (+1), so that each profile sample finds its raw sample whatever the order.
    let opts = Options {
        merge: false,
        inline: false,
        ..opts.clone()
    };
    let mut reweigh = |n: usize, _period: u64| {
        raws.get(n)
            .filter(|r| r.data_src.is_some())
            .map(|r| (r.event, n as u64 + 1))
    };
    let profile = Profile::build_reweighted(pd, &opts, &mut reweigh)?;
    let mut datasyms = DataSymbols::new(Locator::from_env(opts.symfs.clone()));
    let mut build_ids: HashMap<&str, &[u8]> = HashMap::default();
    for b in &pd.features().build_ids {
        build_ids.entry(b.filename.as_str()).or_insert(&b.build_id);
    }
    for (&file, b) in &file_build_ids {
        if let Some(path) = files.list.get(file as usize) {
            build_ids.insert(path.as_str(), b);
        }
    }
    let mut names = Names::default();
    let unknown = names.id("[unknown]");
    let mut samples = Vec::with_capacity(profile.samples.len());
    for ps in &profile.samples {
        let Some(r) = ps
            .period
            .checked_sub(1)
            .and_then(|n| raws.get(usize::try_from(n).ok()?))
        else {
            continue;
        };
        let leaf = ps.stack.first().map(|&f| profile.frame(f));
        let (data_symbol, data_offset, data_module) = match r.data {
            Some((file, off)) => {
                let path = files.list.get(file as usize).map_or("", |s| s.as_str());
                let module = names.id(base(path));
                match datasyms.lookup(path, build_ids.get(path).copied(), off) {
                    Some((name, o)) => (Some(names.id(name)), o, module),
                    None => (None, 0, module),
                }
            }
            None => (None, 0, unknown),
        };
        samples.push(MemSample {
            event: r.event,
            pid: r.pid,
            tid: r.tid,
            cpu: r.cpu,
            ip: r.ip,
            addr: r.addr,
            data_src: r.data_src.unwrap_or(0),
            weight: r.weight,
            period: r.period,
            function: leaf.map_or(unknown, |f| names.id(f.name())),
            module: leaf.map_or(unknown, |f| names.id(f.module_name())),
            data_symbol,
            data_offset,
            data_module,
        });
    }
    Ok(MemProfile {
        events: profile.events.iter().map(|e| e.name.clone()).collect(),
        names: names.list,
        samples,
    })
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
    /// The key of sample `s` of `p`.
    pub fn of(self, p: &MemProfile, s: &MemSample) -> String {
        match self {
            Key::Level => s.src().level(),
            Key::Snoop => s.src().snoop(),
            Key::Tlb => s.src().tlb(),
            Key::Lock => s.src().lock().to_string(),
            Key::Function => p.name(s.function).to_string(),
            Key::Data => p.name(s.data_symbol.unwrap_or(s.data_module)).to_string(),
            Key::DataModule => p.name(s.data_module).to_string(),
        }
    }

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

/// Latency percentiles (nearest rank) of a row's weights, in cycles.
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

impl Latency {
    /// The percentiles of `w` (sorted here); all zero when empty.
    pub fn of(w: &mut [u64]) -> Latency {
        if w.is_empty() {
            return Latency::default();
        }
        w.sort_unstable();
        let rank = |p: f64| {
            let i = ((p / 100.0) * w.len() as f64).ceil() as usize;
            w[i.clamp(1, w.len()) - 1]
        };
        Latency {
            n: w.len() as u64,
            mean: w.iter().sum::<u64>() as f64 / w.len() as f64,
            p50: rank(50.0),
            p90: rank(90.0),
            p99: rank(99.0),
            max: w[w.len() - 1],
        }
    }
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
    let mut groups: HashMap<String, (u64, u64, u64, Vec<u64>)> = HashMap::default();
    let (mut tot_period, mut tot_cost) = (0u64, 0u64);
    for s in p.samples.iter().filter(|s| s.event == event) {
        let g = groups.entry(key.of(p, s)).or_default();
        g.0 += 1;
        g.1 = g.1.saturating_add(s.period);
        g.2 = g.2.saturating_add(s.cost());
        if s.weight > 0 {
            g.3.push(s.weight);
        }
        tot_period = tot_period.saturating_add(s.period);
        tot_cost = tot_cost.saturating_add(s.cost());
    }
    let pct = |x: u64, t: u64| {
        if t == 0 {
            0.0
        } else {
            100.0 * x as f64 / t as f64
        }
    };
    let mut rows: Vec<Row> = groups
        .into_iter()
        .map(|(k, (n, period, cost, mut w))| Row {
            key: k,
            samples: n,
            period,
            weight: cost,
            period_pct: pct(period, tot_period),
            weight_pct: pct(cost, tot_cost),
            latency: Latency::of(&mut w),
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
            function,
            module: 2,
            data_symbol: None,
            data_offset: 0,
            data_module: 2,
        }
    }

    // mem_op LOAD, mem_lvl L1|HIT or L3|HIT.
    const L1: u64 = 0x02 | (0x08 | 0x02) << 5;
    const L3: u64 = 0x02 | (0x40 | 0x02) << 5;

    #[test]
    fn shares_by_weight_and_by_period() {
        let p = MemProfile {
            events: vec!["loads".into()],
            names: vec!["f".into(), "g".into(), "m".into()],
            samples: vec![s(0, L1, 10, 0), s(0, L1, 10, 0), s(0, L3, 80, 1)],
        };
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
        let p = MemProfile {
            events: vec!["stores".into()],
            names: vec!["f".into(), "g".into(), "m".into()],
            samples: vec![s(0, L1, 0, 0), s(0, L3, 0, 0)],
        };
        let rows = table(&p, 0, Key::Level);
        assert_eq!(rows.iter().map(|r| r.weight_pct).sum::<f64>(), 100.0);
        assert_eq!(rows[0].latency, Latency::default());
    }

    #[test]
    fn percentiles_nearest_rank() {
        let mut w: Vec<u64> = (1..=100).rev().collect();
        let l = Latency::of(&mut w);
        assert_eq!((l.p50, l.p90, l.p99, l.max, l.n), (50, 90, 99, 100, 100));
        assert_eq!(l.mean, 50.5);
    }
}

/// Where a sample was served, for `flamegraph --mem LEVEL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// L1 hit.
    L1,
    /// Line fill buffer (miss address buffer) hit.
    Lfb,
    /// L2 hit.
    L2,
    /// L3 (LLC) hit, HITM included.
    L3,
    /// DRAM, local or remote.
    Dram,
    /// Local DRAM.
    LocalDram,
    /// Remote DRAM.
    RemoteDram,
    /// A remote cache (another socket's).
    RemoteCache,
    /// A load that found the line modified in another core's cache (snoop HITM), local
    /// or remote.
    Hitm,
}

impl Level {
    /// Whether data source `d` was served from this level (a hit there).
    pub fn matches(self, d: &DataSrc) -> bool {
        const HIT: u16 = 0x02;
        const L1: u16 = 0x08;
        const LFB: u16 = 0x10;
        const L2: u16 = 0x20;
        const L3: u16 = 0x40;
        const LOC_RAM: u16 = 0x80;
        const REM_RAM: u16 = 0x100 | 0x200;
        const REM_CCE: u16 = 0x400 | 0x800;
        let lvl = d.mem_lvl;
        let hit = lvl & HIT != 0;
        // Newer kernels may say the level only in mem_lvl_num (PERF_MEM_LVLNUM_*).
        let num = d.mem_lvl_num;
        let ram = num == 0x0d;
        match self {
            Level::L1 => hit && (lvl & L1 != 0 || num == 1),
            Level::Lfb => hit && (lvl & LFB != 0 || num == 0x0c),
            Level::L2 => hit && (lvl & L2 != 0 || num == 2),
            Level::L3 => hit && (lvl & L3 != 0 || (num == 3 && !d.mem_remote)),
            Level::Dram => hit && (lvl & (LOC_RAM | REM_RAM) != 0 || ram),
            Level::LocalDram => hit && (lvl & LOC_RAM != 0 || (ram && !d.mem_remote)),
            Level::RemoteDram => hit && (lvl & REM_RAM != 0 || (ram && d.mem_remote)),
            Level::RemoteCache => lvl & REM_CCE != 0 || (d.mem_remote && !ram && num != 0),
            Level::Hitm => d.mem_snoop & 0x10 != 0,
        }
    }
}

/// The profile of `pd` with only the samples served from `level` (samples without a
/// data source are left out), each with its period and weight as recorded. Samples are
/// not merged (a PEBS recording is small).
pub fn profile_for_level(pd: &PerfData, opts: &Options, level: Level) -> Result<Profile> {
    // Per sample in file order: (event, period, weight, kept).
    let mut raws: Vec<(u32, u64, Option<u64>, bool)> = Vec::new();
    pd.for_each_record(|_, rec| {
        if let Body::Sample(s) = &rec.body {
            let keep = s
                .data_src
                .is_some_and(|d| level.matches(&DataSrc::from_u64(d)));
            let weight = s.weight.or(s.weight_struct.map(|w| u64::from(w.var1_dw)));
            raws.push((rec.attr.unwrap_or(0) as u32, 0, weight, keep));
        }
        Ok::<(), crate::Error>(())
    })?;
    let opts = Options {
        merge: false,
        ..opts.clone()
    };
    let mut reweigh = |n: usize, period: u64| {
        let r = raws.get_mut(n).filter(|r| r.3)?;
        r.1 = period;
        Some((r.0, n as u64 + 1))
    };
    let mut p = Profile::build_reweighted(pd, &opts, &mut reweigh)?;
    for s in &mut p.samples {
        let r = s
            .period
            .checked_sub(1)
            .and_then(|n| raws.get(usize::try_from(n).ok()?));
        if let Some(&(_, period, weight, _)) = r {
            s.period = period;
            s.weight = weight;
        }
    }
    Ok(p)
}
