//! Aggregating a profile's samples into the rows of `hwprof report`'s top table.
//!
//! Pure functions of a [`Profile`]: no I/O, no formatting of numbers. Rows are keyed by
//! the sort keys (comm, pid, tid, dso, sym). `Self` is the period of the samples whose
//! leaf (the first frame that is not inlined, as perf report counts) is the row's
//! function; `Children` is the period of the samples whose stack holds the row's
//! function (or an inlined frame of it) anywhere, each sample counted once per row.

use std::collections::HashMap;

use hwprof_symbolize::{Frame, FrameKind, Profile, Sample};

use crate::args::SortKey;

/// A `HashMap` with rustc's FxHash, fast on the integer keys of the aggregation.
pub type FastMap<K, V> = rustc_hash::FxHashMap<K, V>;

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

    fn keeps(&self, p: &Profile, s: &Sample) -> bool {
        (self.pids.is_empty() || self.pids.contains(&s.pid))
            && (self.tids.is_empty() || self.tids.contains(&s.tid))
            && (self.comms.is_empty() || self.comms.iter().any(|c| c == p.comm(s)))
    }
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
}

/// What is keyed of the sample (comm, pid, tid) and of the frame (dso, sym).
#[derive(Clone, Copy, Debug, Default)]
pub struct Keys {
    comm: bool,
    pid: bool,
    tid: bool,
    dso: bool,
    sym: bool,
}

impl Keys {
    /// The keys of `--sort`.
    pub fn new(sort: &[SortKey]) -> Keys {
        Keys {
            comm: sort.contains(&SortKey::Comm),
            pid: sort.contains(&SortKey::Pid),
            tid: sort.contains(&SortKey::Tid),
            dso: sort.contains(&SortKey::Dso),
            sym: sort.contains(&SortKey::Sym),
        }
    }
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

/// The key text of a frame for the dso and sym keys.
type FrameKey = (Option<String>, Option<String>);

/// Interned dso/sym keys of every frame of a profile, plus the key of an empty stack.
struct FrameKeys {
    /// Key id of each frame.
    of_frame: Vec<u32>,
    /// Key id of the leaf of a sample without frames.
    empty: u32,
    /// The keys, by id.
    keys: Vec<FrameKey>,
}

impl FrameKeys {
    fn new(p: &Profile, k: Keys) -> FrameKeys {
        let mut ids: HashMap<FrameKey, u32> = HashMap::new();
        let mut keys = Vec::new();
        let mut intern = |key: FrameKey| -> u32 {
            *ids.entry(key.clone()).or_insert_with(|| {
                keys.push(key);
                (keys.len() - 1) as u32
            })
        };
        let of_frame = p
            .frames
            .iter()
            .map(|f| {
                intern((
                    k.dso.then(|| f.module_name().to_string()),
                    k.sym.then(|| symbol_text(f)),
                ))
            })
            .collect();
        let empty = intern((
            k.dso.then(|| "[unknown]".to_string()),
            k.sym.then(|| "[.] [unknown]".to_string()),
        ));
        FrameKeys {
            of_frame,
            empty,
            keys,
        }
    }

    fn of(&self, id: u32) -> Option<u32> {
        self.of_frame.get(id as usize).copied()
    }
}

/// Rows being counted.
#[derive(Default)]
struct Acc {
    /// Row identity: (comm, pid, tid, frame key), `u32::MAX` where not keyed.
    ids: FastMap<[u32; 4], u32>,
    keys: Vec<[u32; 4]>,
    /// Samples, period, children samples, children period.
    counts: Vec<[u64; 4]>,
    /// 1 + index of the last sample counted in each row's children.
    last_seen: Vec<u32>,
}

impl Acc {
    fn row(&mut self, base: [u32; 3], key: u32) -> usize {
        let full = [base[0], base[1], base[2], key];
        let n = self.keys.len();
        let id = *self.ids.entry(full).or_insert(n as u32) as usize;
        if id == n {
            self.keys.push(full);
            self.counts.push([0; 4]);
            self.last_seen.push(0);
        }
        id
    }

    /// Adds a sample (tagged `tag`) to row `r`'s children unless it is there already.
    fn child(&mut self, r: usize, tag: u32, count: u64, period: u64) {
        if self.last_seen[r] != tag {
            self.last_seen[r] = tag;
            self.counts[r][2] += count;
            self.counts[r][3] = self.counts[r][3].saturating_add(period);
        }
    }
}

/// Builds the table of event `event` (an index in `p.events`).
pub fn aggregate(
    p: &Profile,
    event: usize,
    sort: &[SortKey],
    filter: &Filter,
    children: bool,
) -> EventTable {
    let k = Keys::new(sort);
    let fk = FrameKeys::new(p, k);
    // Command names are compared as strings (the same name may be interned twice).
    let mut comm_ids: HashMap<&str, u32> = HashMap::new();
    let comm_canon: Vec<u32> = p
        .comms
        .iter()
        .enumerate()
        .map(|(i, c)| *comm_ids.entry(c.as_str()).or_insert(i as u32))
        .collect();

    let mut acc = Acc::default();
    let (mut total_samples, mut total_period, mut kept) = (0u64, 0u64, 0u64);
    let none = u32::MAX;

    for (i, s) in p.samples.iter().enumerate() {
        if s.event as usize != event {
            continue;
        }
        total_samples += s.count;
        total_period = total_period.saturating_add(s.period);
        if !filter.keeps(p, s) {
            continue;
        }
        kept += s.count;
        let comm = if k.comm {
            comm_canon.get(s.comm as usize).copied().unwrap_or(none - 1)
        } else {
            none
        };
        let base = [
            comm,
            if k.pid { s.pid } else { none },
            if k.tid { s.tid } else { none },
        ];
        // Self: the first frame that is not an inlined one.
        let leaf = s
            .stack
            .iter()
            .find(|&&id| p.frames.get(id as usize).is_some_and(|f| !f.inlined))
            .or(s.stack.first())
            .and_then(|&id| fk.of(id))
            .unwrap_or(fk.empty);
        let r = acc.row(base, leaf);
        acc.counts[r][0] += s.count;
        acc.counts[r][1] = acc.counts[r][1].saturating_add(s.period);
        if children {
            let tag = i as u32 + 1;
            acc.child(r, tag, s.count, s.period);
            for &id in &s.stack {
                if let Some(key) = fk.of(id) {
                    let r = acc.row(base, key);
                    acc.child(r, tag, s.count, s.period);
                }
            }
        }
    }

    let comm_name = |c: u32| p.comms.get(c as usize).cloned().unwrap_or_default();
    let mut rows: Vec<Row> = acc
        .keys
        .iter()
        .zip(&acc.counts)
        .map(|(key, c)| {
            let (dso, sym) = fk.keys.get(key[3] as usize).cloned().unwrap_or_default();
            Row {
                comm: k.comm.then(|| comm_name(key[0])),
                pid: k.pid.then_some(key[1]),
                tid: k.tid.then_some(key[2]),
                dso,
                sym,
                samples: c[0],
                period: c[1],
                children_samples: c[2],
                children_period: c[3],
            }
        })
        .collect();
    let name = p
        .events
        .get(event)
        .map_or_else(|| format!("event {event}"), |e| e.name.clone());
    sort_rows(&mut rows, children);
    EventTable {
        name,
        samples: total_samples,
        period: total_period,
        kept_samples: kept,
        rows,
        children,
    }
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
    });
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use hwprof_pmu::attr::Attr;
    use hwprof_symbolize::EventInfo;

    pub(crate) fn frame(name: Option<&str>, module: &str, off: u64, inlined: bool) -> Frame {
        Frame {
            function: name.map(str::to_string),
            module: Some(module.to_string()),
            module_offset: off,
            file: None,
            line: None,
            inlined,
            kind: if module == "[kernel.kallsyms]" {
                FrameKind::Kernel
            } else {
                FrameKind::User
            },
        }
    }

    pub(crate) fn sample(event: u32, pid: u32, comm: u32, period: u64, stack: &[u32]) -> Sample {
        Sample {
            event,
            pid,
            tid: pid,
            comm,
            time: None,
            cpu: None,
            period,
            weight: None,
            count: 1,
            stack: stack.to_vec(),
        }
    }

    /// Frames: 0 hot_a, 1 hot_b, 2 main, 3 __libc_start_call_main, 4 an inlined `step` in
    /// hot_a, 5 hot_a at another address, 6 an unresolved kernel address.
    pub(crate) fn profile() -> Profile {
        Profile {
            events: vec![
                EventInfo {
                    name: "cpu-clock".into(),
                    attr: Attr::default(),
                },
                EventInfo {
                    name: "page-faults".into(),
                    attr: Attr::default(),
                },
            ],
            frames: vec![
                frame(Some("hot_a"), "/tmp/two_hot", 0x1196, false),
                frame(Some("hot_b"), "/tmp/two_hot", 0x11cf, false),
                frame(Some("main"), "/tmp/two_hot", 0x1208, false),
                frame(
                    Some("__libc_start_call_main"),
                    "/usr/lib/libc.so.6",
                    0x2724a,
                    false,
                ),
                frame(Some("step"), "/tmp/two_hot", 0x11a0, true),
                frame(Some("hot_a"), "/tmp/two_hot", 0x11b0, false),
                frame(None, "[kernel.kallsyms]", 0xffff_ffff_9661_da49, false),
            ],
            comms: vec!["two_hot".into(), "other".into(), "two_hot".into()],
            samples: vec![
                sample(0, 10, 0, 100, &[4, 0, 2, 3]),
                sample(0, 10, 0, 100, &[5, 2, 3]),
                sample(0, 10, 2, 100, &[0, 2, 3]),
                sample(0, 10, 0, 100, &[1, 2, 3]),
                sample(0, 11, 1, 100, &[6]),
                // Recursion: main counted once.
                sample(0, 11, 1, 50, &[2, 2, 3]),
                sample(1, 10, 0, 7, &[1]),
            ],
            lost: 3,
        }
    }

    fn find<'a>(t: &'a EventTable, sym: &str) -> &'a Row {
        t.rows
            .iter()
            .find(|r| r.sym.as_deref() == Some(sym))
            .unwrap_or_else(|| panic!("no row {sym} in {t:#?}"))
    }

    const DEFAULT: [SortKey; 3] = [SortKey::Comm, SortKey::Dso, SortKey::Sym];

    #[test]
    fn self_goes_to_the_first_non_inlined_frame() {
        let p = profile();
        let t = aggregate(&p, 0, &DEFAULT, &Filter::default(), false);
        assert_eq!((t.samples, t.period, t.kept_samples), (6, 550, 6));
        // Samples 0, 1 and 2 (two addresses, one inlined leaf, two interned "two_hot").
        let a = find(&t, "[.] hot_a");
        assert_eq!((a.samples, a.period), (3, 300));
        assert_eq!(a.comm.as_deref(), Some("two_hot"));
        assert_eq!(a.dso.as_deref(), Some("two_hot"));
        assert!((t.pct(a.period) - 300.0 * 100.0 / 550.0).abs() < 1e-9);
        assert!(t.rows.iter().all(|r| r.sym.as_deref() != Some("[.] step")));
        assert_eq!(t.rows[0].sym.as_deref(), Some("[.] hot_a"));
        let k = find(&t, "[k] 0xffffffff9661da49");
        assert_eq!(k.dso.as_deref(), Some("[kernel.kallsyms]"));
        assert_eq!(t.rows.iter().map(|r| r.period).sum::<u64>(), 550);
    }

    #[test]
    fn children_count_each_sample_once_per_row() {
        let p = profile();
        let t = aggregate(&p, 0, &DEFAULT, &Filter::default(), true);
        let main_two_hot = t
            .rows
            .iter()
            .find(|r| r.sym.as_deref() == Some("[.] main") && r.comm.as_deref() == Some("two_hot"))
            .expect("main row");
        assert_eq!(
            (main_two_hot.children_samples, main_two_hot.children_period),
            (4, 400)
        );
        assert_eq!((main_two_hot.samples, main_two_hot.period), (0, 0));
        let main_other = t
            .rows
            .iter()
            .find(|r| r.sym.as_deref() == Some("[.] main") && r.comm.as_deref() == Some("other"))
            .expect("main row of other");
        assert_eq!((main_other.children_period, main_other.period), (50, 50));
        let step = find(&t, "[.] step");
        assert_eq!((step.children_period, step.period), (100, 0));
        // Sorted by children: the two 400s (libc, main) before hot_a (300).
        assert_eq!(t.rows[0].children_period, 400);
        assert_eq!(t.rows[2].sym.as_deref(), Some("[.] hot_a"));
    }

    #[test]
    fn filters_keep_totals_of_all_samples() {
        let p = profile();
        let f = Filter {
            comms: vec!["other".into()],
            ..Filter::default()
        };
        let t = aggregate(&p, 0, &DEFAULT, &f, false);
        assert_eq!((t.samples, t.period, t.kept_samples), (6, 550, 2));
        assert_eq!(t.rows.len(), 2);
        let f = Filter {
            pids: vec![10],
            tids: vec![10],
            ..Filter::default()
        };
        let t = aggregate(&p, 0, &DEFAULT, &f, false);
        assert_eq!(t.kept_samples, 4);
        let f = Filter {
            pids: vec![99],
            ..Filter::default()
        };
        assert_eq!(aggregate(&p, 0, &DEFAULT, &f, false).rows.len(), 0);
    }

    #[test]
    fn sort_keys_group_rows() {
        let p = profile();
        let t = aggregate(&p, 0, &[SortKey::Pid], &Filter::default(), false);
        assert_eq!(t.rows.len(), 2);
        assert_eq!((t.rows[0].pid, t.rows[0].period), (Some(10), 400));
        assert!(t.rows[0].sym.is_none() && t.rows[0].comm.is_none());
        let t = aggregate(&p, 0, &[SortKey::Dso], &Filter::default(), false);
        let dsos: Vec<_> = t
            .rows
            .iter()
            .map(|r| r.dso.clone().unwrap_or_default())
            .collect();
        assert_eq!(dsos, ["two_hot", "[kernel.kallsyms]"]);
        let t = aggregate(&p, 1, &DEFAULT, &Filter::default(), true);
        assert_eq!(
            (t.name.as_str(), t.samples, t.period),
            ("page-faults", 1, 7)
        );
    }

    #[test]
    fn symbol_text_is_perfs() {
        let f = frame(None, "/usr/lib/libglib-2.0.so.0", 0x45c0e, false);
        assert_eq!(symbol_text(&f), "[.] 0x0000000000045c0e");
        let f = frame(None, "/x", 0, false);
        assert_eq!(symbol_text(&f), "[.] 0000000000000000");
        let f = frame(Some("schedule"), "[kernel.kallsyms]", 1, false);
        assert_eq!(symbol_text(&f), "[k] schedule");
    }
}
