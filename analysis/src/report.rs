//! The rows of `hwprof report`'s top table, per event; its `--diff` ([`diff`]); and the
//! top functions and stacks of folded stacks ([`top`], `hwprof offcpu --report`).
//!
//! No I/O, no formatting of numbers. Rows are keyed by the sort keys ([`Keys`]: comm,
//! pid, tid, dso, sym). `Self` is the period of the samples whose leaf (the first frame
//! that is not inlined, as perf report counts) is the row's function; `Children` is the
//! period of the samples whose stack holds the row's function (or an inlined frame of it)
//! anywhere, each sample counted once per row. Totals count every sample of the event,
//! filtered or not, as perf's header and percentages do.
//!
//! [`Aggregator`] takes samples one at a time (a profile read as a stream), [`tables`]
//! aggregates a whole [`Profile`] in one pass.

pub mod callgraph;
pub mod diff;
pub mod top;

use std::collections::HashMap;

use hwprof_pmu::attr::sample;
use hwprof_symbolize::{Frame, FrameKind, Profile, Sample};

/// A `HashMap` with rustc's FxHash, fast on the integer keys of the aggregation.
type FastMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// Which samples to count (empty lists keep everything).
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Process ids.
    pub pids: Vec<u32>,
    /// Thread ids.
    pub tids: Vec<u32>,
    /// Command names.
    pub comms: Vec<String>,
}

impl Filter {
    /// True when no filter is set.
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty() && self.tids.is_empty() && self.comms.is_empty()
    }

    /// Whether sample `s` (whose command names are `comms`) is counted.
    pub fn keeps(&self, comms: &[String], s: &Sample) -> bool {
        (self.pids.is_empty() || self.pids.contains(&s.pid))
            && (self.tids.is_empty() || self.tids.contains(&s.tid))
            && (self.comms.is_empty() || self.comms.iter().any(|c| c == comm(comms, s)))
    }
}

/// A sample's command name, `[unknown]` when its index is out of the table.
fn comm<'a>(comms: &'a [String], s: &Sample) -> &'a str {
    comms
        .get(s.comm as usize)
        .map_or("[unknown]", String::as_str)
}

/// One row: the values of its sort keys and what it counts.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Command name (with the `comm` key).
    pub comm: Option<String>,
    /// Process id (with the `pid` key).
    pub pid: Option<u32>,
    /// Thread id (with the `tid` key).
    pub tid: Option<u32>,
    /// Module name as perf shows it (with the `dso` key).
    pub dso: Option<String>,
    /// Symbol as perf shows it, `[.] func`, `[k] func`, `[.] 0x...` (with the `sym` key).
    pub sym: Option<String>,
    /// Source file name and line of the sampled code, `file.c:12` (with the `srcline`
    /// key; [`srcline_text`]).
    pub srcline: Option<String>,
    /// Samples whose leaf is this row.
    pub samples: u64,
    /// Period of the samples whose leaf is this row.
    pub period: u64,
    /// Samples whose stack holds this row anywhere.
    pub children_samples: u64,
    /// Period of the samples whose stack holds this row anywhere.
    pub children_period: u64,
}

/// The rows of one event.
#[derive(Clone, Debug, PartialEq)]
pub struct EventTable {
    /// The event's name.
    pub name: String,
    /// All samples of the event (before filters, as perf counts its header and totals).
    pub samples: u64,
    /// Sum of the periods of all samples of the event (before filters).
    pub period: u64,
    /// Samples left after the filters.
    pub kept_samples: u64,
    /// The rows, sorted (children period first when `children`, else self period).
    pub rows: Vec<Row>,
    /// Whether the rows carry children figures.
    pub children: bool,
}

impl EventTable {
    /// A row's overhead in percent of the event's total period.
    pub fn pct(&self, period: u64) -> f64 {
        if self.period == 0 {
            0.0
        } else {
            period as f64 * 100.0 / self.period as f64
        }
    }

    /// The percentage a row is sorted and limited by.
    pub fn sort_pct(&self, r: &Row) -> f64 {
        self.pct(if self.children {
            r.children_period
        } else {
            r.period
        })
    }

    /// The rows at or above `limit` percent (`--percent-limit`).
    pub fn shown(&self, limit: f64) -> impl Iterator<Item = &Row> + Clone {
        self.rows.iter().filter(move |r| self.sort_pct(r) >= limit)
    }
}

/// What rows are keyed by: of the sample (comm, pid, tid) and of the frame (dso, sym).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Keys {
    /// The command name.
    pub comm: bool,
    /// The process id.
    pub pid: bool,
    /// The thread id.
    pub tid: bool,
    /// The module.
    pub dso: bool,
    /// The function.
    pub sym: bool,
    /// The source line (`file.c:12`).
    pub srcline: bool,
}

/// perf's symbol column: `[k] name` / `[.] name`, and for unresolved addresses the
/// address perf shows (map-relative for user modules, as `%#.16x`: `0x0000000000045c0e`;
/// perf's `#` flag prints 0 as `0000000000000000`).
pub fn symbol_text(f: &Frame) -> String {
    let level = match f.kind {
        FrameKind::Kernel => 'k',
        FrameKind::User | FrameKind::Jit => '.',
    };
    match &f.function {
        Some(name) => format!("[{level}] {name}"),
        None if f.module_offset == 0 => format!("[{level}] {:016x}", 0),
        None => format!("[{level}] {:#018x}", f.module_offset),
    }
}

/// perf's `srcline` key of a frame: the source file's name and the line, `file.c:12`;
/// where DWARF has no line, the function's name (perf adds the offset in it, which a
/// frame does not keep), else `module[0x…]` (perf's `dso[addr]`).
pub fn srcline_text(f: &Frame) -> String {
    match (&f.file, f.line, &f.function) {
        (Some(file), Some(line), _) if line > 0 => {
            let base = file.rsplit('/').next().unwrap_or(file);
            format!("{base}:{line}")
        }
        (_, _, Some(name)) => name.clone(),
        _ => format!("{}[{:#x}]", f.module_name(), f.module_offset),
    }
}

/// The key text of a frame for the dso, sym and srcline keys.
type FrameKey = (Option<String>, Option<String>, Option<String>);

/// The frame key of a sample's Self row: the dso and sym of its first frame that is not
/// inlined (as perf report counts), the srcline of its innermost frame (perf's srcline
/// of the sampled ip).
fn self_key(fk: &mut FrameKeys, frames: &[Frame], stack: &[u32]) -> u32 {
    let leaf = stack
        .iter()
        .find(|&&id| frames.get(id as usize).is_some_and(|f| !f.inlined))
        .or(stack.first())
        .copied();
    let Some(leaf) = leaf else {
        return fk.empty;
    };
    let Some(key) = fk.of(leaf) else {
        return fk.empty;
    };
    match stack.first() {
        Some(&inner) if fk.keys_of.srcline && inner != leaf => {
            let Some(src) = fk.of(inner) else {
                return key;
            };
            if let Some(&k) = fk.pairs.get(&(key, src)) {
                return k;
            }
            let (dso, sym, _) = fk.keys[key as usize].clone();
            let srcline = fk.keys[src as usize].2.clone();
            let k = fk.intern((dso, sym, srcline));
            fk.pairs.insert((key, src), k);
            k
        }
        _ => key,
    }
}

/// Interned dso/sym keys of the frames known so far, plus the key of an empty stack.
#[derive(Debug)]
struct FrameKeys {
    keys_of: Keys,
    ids: HashMap<FrameKey, u32>,
    /// Key id of each frame.
    of_frame: Vec<u32>,
    /// Key id of the leaf of a sample without frames.
    empty: u32,
    /// The keys, by id.
    keys: Vec<FrameKey>,
    /// Self keys of (non-inlined leaf key, innermost frame key) pairs with `srcline`.
    pairs: HashMap<(u32, u32), u32>,
}

impl FrameKeys {
    fn new(k: Keys) -> FrameKeys {
        let mut fk = FrameKeys {
            keys_of: k,
            ids: HashMap::new(),
            of_frame: Vec::new(),
            empty: 0,
            keys: Vec::new(),
            pairs: HashMap::new(),
        };
        fk.empty = fk.intern((
            k.dso.then(|| "[unknown]".to_string()),
            k.sym.then(|| "[.] [unknown]".to_string()),
            k.srcline.then(|| "[unknown]".to_string()),
        ));
        fk
    }

    fn intern(&mut self, key: FrameKey) -> u32 {
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = self.keys.len() as u32;
        self.ids.insert(key.clone(), id);
        self.keys.push(key);
        id
    }

    /// Interns the keys of the frames added since the last call.
    fn sync(&mut self, frames: &[Frame]) {
        let k = self.keys_of;
        for f in frames.get(self.of_frame.len()..).unwrap_or(&[]) {
            let id = self.intern((
                k.dso.then(|| f.module_name().to_string()),
                k.sym.then(|| symbol_text(f)),
                k.srcline.then(|| srcline_text(f)),
            ));
            self.of_frame.push(id);
        }
    }

    fn of(&self, id: u32) -> Option<u32> {
        self.of_frame.get(id as usize).copied()
    }
}

/// Aggregates the samples of one event into its table, one sample at a time.
///
/// Like [`crate::fold::Folder`], [`Aggregator::add`] takes the profile's frames and
/// command names with each sample; they may grow between calls.
#[derive(Debug)]
pub struct Aggregator {
    event: u32,
    keys: Keys,
    filter: Filter,
    children: bool,
    frame_keys: FrameKeys,
    /// Canonical id of each comm known so far (the same name may be interned twice: rows
    /// compare command names as strings).
    comm_canon: Vec<u32>,
    comm_ids: HashMap<String, u32>,
    /// Row identity: (comm, pid, tid, frame key), `u32::MAX` where not keyed.
    row_ids: FastMap<[u32; 4], u32>,
    row_keys: Vec<[u32; 4]>,
    /// Samples, period, children samples, children period.
    counts: Vec<[u64; 4]>,
    /// The last sample (numbered from 1) counted in each row's children.
    last_seen: Vec<u64>,
    total_samples: u64,
    total_period: u64,
    kept: u64,
}

/// Not keyed (or an unknown comm, `NONE - 1`).
const NONE: u32 = u32::MAX;

impl Aggregator {
    /// An aggregator of event `event` (an index in the profile's events): rows keyed by
    /// `keys`, samples kept by `filter`, children figures when `children`.
    pub fn new(event: u32, keys: Keys, filter: &Filter, children: bool) -> Aggregator {
        Aggregator {
            event,
            keys,
            filter: filter.clone(),
            children,
            frame_keys: FrameKeys::new(keys),
            comm_canon: Vec::new(),
            comm_ids: HashMap::new(),
            row_ids: FastMap::default(),
            row_keys: Vec::new(),
            counts: Vec::new(),
            last_seen: Vec::new(),
            total_samples: 0,
            total_period: 0,
            kept: 0,
        }
    }

    fn row(&mut self, base: [u32; 3], key: u32) -> usize {
        let full = [base[0], base[1], base[2], key];
        let n = self.row_keys.len();
        let id = *self.row_ids.entry(full).or_insert(n as u32) as usize;
        if id == n {
            self.row_keys.push(full);
            self.counts.push([0; 4]);
            self.last_seen.push(0);
        }
        id
    }

    /// Adds sample number `tag` to row `r`'s children unless it is there already.
    fn child(&mut self, r: usize, tag: u64, count: u64, period: u64) {
        if self.last_seen[r] != tag {
            self.last_seen[r] = tag;
            self.counts[r][2] += count;
            self.counts[r][3] = self.counts[r][3].saturating_add(period);
        }
    }

    /// Adds sample `s` (ignored unless it is of this aggregator's event); `frames` and
    /// `comms` are its profile's tables.
    pub fn add(&mut self, frames: &[Frame], comms: &[String], s: &Sample) {
        if s.event != self.event {
            return;
        }
        self.total_samples += s.count;
        self.total_period = self.total_period.saturating_add(s.period);
        if !self.filter.keeps(comms, s) {
            return;
        }
        self.kept += s.count;
        let tag = self.kept;
        if frames.len() > self.frame_keys.of_frame.len() {
            self.frame_keys.sync(frames);
        }
        for (i, c) in comms.iter().enumerate().skip(self.comm_canon.len()) {
            let canon = *self.comm_ids.entry(c.clone()).or_insert(i as u32);
            self.comm_canon.push(canon);
        }
        let k = self.keys;
        let comm = if k.comm {
            self.comm_canon
                .get(s.comm as usize)
                .copied()
                .unwrap_or(NONE - 1)
        } else {
            NONE
        };
        let base = [
            comm,
            if k.pid { s.pid } else { NONE },
            if k.tid { s.tid } else { NONE },
        ];
        // Self: the first frame that is not an inlined one.
        let leaf = self_key(&mut self.frame_keys, frames, &s.stack);
        let r = self.row(base, leaf);
        self.counts[r][0] += s.count;
        self.counts[r][1] = self.counts[r][1].saturating_add(s.period);
        if self.children {
            self.child(r, tag, s.count, s.period);
            for &id in &s.stack {
                if let Some(key) = self.frame_keys.of(id) {
                    let r = self.row(base, key);
                    self.child(r, tag, s.count, s.period);
                }
            }
        }
    }

    /// The table, rows sorted, named `name`; `comms` are the profile's command names.
    pub fn finish(self, name: String, comms: &[String]) -> EventTable {
        let k = self.keys;
        let comm_name = |c: u32| comms.get(c as usize).cloned().unwrap_or_default();
        let mut rows: Vec<Row> = self
            .row_keys
            .iter()
            .zip(&self.counts)
            .map(|(key, c)| {
                let (dso, sym, srcline) = self
                    .frame_keys
                    .keys
                    .get(key[3] as usize)
                    .cloned()
                    .unwrap_or_default();
                Row {
                    comm: k.comm.then(|| comm_name(key[0])),
                    pid: k.pid.then_some(key[1]),
                    tid: k.tid.then_some(key[2]),
                    dso,
                    sym,
                    srcline,
                    samples: c[0],
                    period: c[1],
                    children_samples: c[2],
                    children_period: c[3],
                }
            })
            .collect();
        sort_rows(&mut rows, self.children);
        EventTable {
            name,
            samples: self.total_samples,
            period: self.total_period,
            kept_samples: self.kept,
            rows,
            children: self.children,
        }
    }
}

/// The name of event `event` of `p` (`event N` when it has none).
fn event_name(p: &Profile, event: usize) -> String {
    p.events
        .get(event)
        .map_or_else(|| format!("event {event}"), |e| e.name.clone())
}

/// Builds the table of event `event` (an index in `p.events`).
pub fn aggregate(
    p: &Profile,
    event: usize,
    keys: Keys,
    filter: &Filter,
    children: bool,
) -> EventTable {
    let mut t = tables(p, &[event], keys, filter, children);
    t.pop().unwrap_or_else(|| {
        Aggregator::new(event as u32, keys, filter, children).finish(event_name(p, event), &p.comms)
    })
}

/// The tables of `events` (indexes in `p.events`), in that order, in one pass over the
/// samples.
pub fn tables(
    p: &Profile,
    events: &[usize],
    keys: Keys,
    filter: &Filter,
    children: bool,
) -> Vec<EventTable> {
    let mut aggs: Vec<Aggregator> = events
        .iter()
        .map(|&e| Aggregator::new(e as u32, keys, filter, children))
        .collect();
    // Which aggregators take each event's samples.
    let mut by_event: Vec<Vec<usize>> = vec![Vec::new(); p.events.len()];
    for (i, &e) in events.iter().enumerate() {
        if let Some(v) = by_event.get_mut(e) {
            v.push(i);
        }
    }
    for s in &p.samples {
        for &i in by_event
            .get(s.event as usize)
            .map_or(&[][..], Vec::as_slice)
        {
            aggs[i].add(&p.frames, &p.comms, s);
        }
    }
    aggs.into_iter()
        .zip(events)
        .map(|(a, &e)| a.finish(event_name(p, e), &p.comms))
        .collect()
}

/// The events (indexes in `p.events`) that have samples, in order.
pub fn events_with_samples(p: &Profile) -> Vec<usize> {
    let mut with = vec![false; p.events.len()];
    for s in &p.samples {
        if let Some(w) = with.get_mut(s.event as usize) {
            *w = true;
        }
    }
    (0..p.events.len()).filter(|&i| with[i]).collect()
}

/// Whether any of `events` was sampled with callchains (perf shows children then).
pub fn has_callchains(p: &Profile, events: &[usize]) -> bool {
    events.iter().any(|&i| {
        p.events
            .get(i)
            .is_some_and(|e| e.attr.sample_type & sample::CALLCHAIN != 0)
    })
}

/// Sorts rows by children period (when `children`), then self period, then samples,
/// then the keys, so that the output is deterministic.
pub fn sort_rows(rows: &mut [Row], children: bool) {
    rows.sort_by(|a, b| {
        let c = if children {
            b.children_period.cmp(&a.children_period)
        } else {
            std::cmp::Ordering::Equal
        };
        c.then(b.period.cmp(&a.period))
            .then(b.samples.cmp(&a.samples))
            .then_with(|| a.comm.cmp(&b.comm))
            .then(a.pid.cmp(&b.pid))
            .then(a.tid.cmp(&b.tid))
            .then_with(|| a.dso.cmp(&b.dso))
            .then_with(|| a.sym.cmp(&b.sym))
            .then_with(|| a.srcline.cmp(&b.srcline))
    });
}

#[cfg(any(test, feature = "fixtures"))]
pub mod fixture;
#[cfg(test)]
pub(crate) mod tests;
