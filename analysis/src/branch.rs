//! Branch analysis from LBR: the rows of `hwprof report -b`, perf's `--branch-stack`
//! view.
//!
//! Every entry of every sample's branch stack counts once (perf's pseudo period of 1:
//! the table shows shares of the branches captured, not of the events sampled). Rows
//! group the entries by the sort keys ([`Key`]); perf 6.1's default is
//! [`PERF_DEFAULT`] (`comm,dso_from,symbol_from,symbol_to,cycles`). A symbol key
//! compares functions when both ends resolved to one, else the raw addresses, as perf's
//! `sort__sym_from_cmp` does; rows come out in perf's order (count, then each key's own
//! order: commands ascending, objects descending with unknown ones first, addresses
//! ascending, cycles descending).
//!
//! Beyond perf's columns each row carries what the entries say about prediction and
//! timing: how many were mispredicted, and the cycles of those that recorded them
//! (Skylake and later), for a mispredict share and an average.

use std::cmp::Ordering;

use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;

use hwprof_symbolize::{Branch, FrameKind, Profile, Sample};

/// A sort key of the branch view (perf's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Key {
    /// The sample's command name.
    Comm,
    /// The module of the branch source.
    DsoFrom,
    /// The function of the branch source (its address when unresolved).
    SymbolFrom,
    /// The module of the branch target.
    DsoTo,
    /// The function of the branch target (its address when unresolved).
    SymbolTo,
    /// The cycles the entry recorded (0: not recorded).
    Cycles,
    /// Predicted, mispredicted, or neither recorded.
    Mispredict,
}

/// perf 6.1's default sort of `perf report -b`.
pub const PERF_DEFAULT: [Key; 5] = [
    Key::Comm,
    Key::DsoFrom,
    Key::SymbolFrom,
    Key::SymbolTo,
    Key::Cycles,
];

/// One end of a branch, as the table shows and compares it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct End {
    /// perf's level mark: `k` kernel, `.` user, `H` no mapping holds the address.
    pub level: char,
    /// The module's short name; `None` when no mapping holds the address.
    pub dso: Option<String>,
    /// The function; `None` when unresolved.
    pub symbol: Option<String>,
    /// The recorded address.
    pub addr: u64,
    /// The address perf shows when unresolved: relative to the module's file for user
    /// code, as recorded for the kernel and for unmapped addresses.
    pub shown: u64,
}

/// One branch-stack entry of a sample.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// The sample's command name.
    pub comm: String,
    /// Where the branch was taken.
    pub from: End,
    /// Where it went.
    pub to: End,
    /// The hardware flagged it mispredicted.
    pub mispred: bool,
    /// The hardware flagged it predicted.
    pub predicted: bool,
    /// Cycles since the previous branch (0: not recorded).
    pub cycles: u16,
    /// How many recorded entries this one stands for.
    pub count: u64,
}

/// What a symbol key compares: the function, else the address.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum SymKey {
    Sym(Option<String>, String),
    Addr(u64),
}

impl End {
    fn sym_key(&self) -> SymKey {
        match &self.symbol {
            Some(s) => SymKey::Sym(self.dso.clone(), s.clone()),
            None => SymKey::Addr(self.addr),
        }
    }

    /// The cell perf prints: `[k] name`, or `[.] 0x00000000000097db` unresolved (C's
    /// `%#.16llx`, which writes no `0x` for zero).
    pub fn cell(&self) -> String {
        match &self.symbol {
            Some(s) => format!("[{}] {s}", self.level),
            None if self.shown == 0 => format!("[{}] {:016x}", self.level, 0),
            None => format!("[{}] {:#018x}", self.level, self.shown),
        }
    }
}

/// The identity of a row: the value of each selected key (`None` for the others).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct RowKey {
    comm: Option<String>,
    dso_from: Option<Option<String>>,
    sym_from: Option<SymKey>,
    dso_to: Option<Option<String>>,
    sym_to: Option<SymKey>,
    cycles: Option<u16>,
    mispredict: Option<(bool, bool)>,
}

/// One row of the branch table: the entries sharing its key values. The key fields
/// show the first entry of the row (the value of a key that is not selected is that
/// entry's, for display only).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The command name.
    pub comm: String,
    /// The branch source.
    pub from: End,
    /// The branch target.
    pub to: End,
    /// The cycles of the first entry (the row's value with [`Key::Cycles`]).
    pub cycles: u16,
    /// The first entry's (mispredicted, predicted) flags.
    pub mispredict: (bool, bool),
    /// Entries in the row.
    pub count: u64,
    /// Of them, flagged mispredicted.
    pub mispredicted: u64,
    /// Of them, those that recorded cycles.
    pub timed: u64,
    /// The sum of their cycles.
    pub cycles_sum: u64,
    /// Where the source and target functions start, as far as the entries tell (the
    /// lowest offset seen in each): perf orders functions by their start.
    #[serde(skip)]
    starts: (u64, u64),
    /// The place, in the order their first entries came, of the first row sharing this
    /// row's values of the keys up to and including [`Key::Mispredict`] (0 without that
    /// key): what the mispredict key compares.
    #[serde(skip)]
    seen: usize,
}

impl Row {
    /// The row's share of all entries, in percent.
    pub fn percent(&self, total: u64) -> f64 {
        crate::percent(self.count, total)
    }

    /// The share of the row's entries flagged mispredicted, in percent.
    pub fn mispredict_percent(&self) -> f64 {
        crate::percent(self.mispredicted, self.count)
    }

    /// The average cycles of the row's entries that recorded them.
    pub fn avg_cycles(&self) -> Option<f64> {
        (self.timed > 0).then(|| self.cycles_sum as f64 / self.timed as f64)
    }
}

/// The branch table of one event.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Table {
    /// The keys the rows are grouped by.
    pub keys: Vec<Key>,
    /// Entries counted (the 100%).
    pub total: u64,
    /// Of them, flagged mispredicted.
    pub mispredicted: u64,
    /// Of them, flagged mispredicted or predicted (0: the hardware records neither).
    pub flagged: u64,
    /// Of them, those that recorded cycles (0: the hardware records none).
    pub timed: u64,
    /// The rows, in perf's order.
    pub rows: Vec<Row>,
}

/// Groups `entries` by `keys` into rows in perf's order.
pub fn table(entries: impl IntoIterator<Item = Entry>, keys: &[Key]) -> Table {
    let mut t = grouped(entries, keys);
    t.rows.sort_by(|a, b| row_order(a, b, keys));
    t
}

/// The order of the table's rows: count descending, then [`order`].
fn row_order(a: &Row, b: &Row, keys: &[Key]) -> Ordering {
    b.count.cmp(&a.count).then_with(|| order(a, b, keys))
}

/// The rows of `entries` grouped by `keys`, in the order their first entries came.
fn grouped(entries: impl IntoIterator<Item = Entry>, keys: &[Key]) -> Table {
    let mut index: HashMap<RowKey, usize> = HashMap::default();
    // The keys that decide the order of rows differing in prediction: see `order`.
    let through_mispredict = keys
        .iter()
        .position(|k| *k == Key::Mispredict)
        .map_or(&keys[..0], |i| &keys[..=i]);
    let mut groups: HashMap<RowKey, usize> = HashMap::default();
    let mut rows: Vec<Row> = Vec::new();
    let mut total = 0u64;
    let mut mispredicted = 0u64;
    let mut flagged = 0u64;
    let mut timed = 0u64;
    for e in entries {
        let n = e.count;
        total += n;
        mispredicted += n * u64::from(e.mispred);
        flagged += n * u64::from(e.mispred || e.predicted);
        timed += n * u64::from(e.cycles != 0);
        let k = row_key(&e, keys);
        let i = *index.entry(k).or_insert_with(|| {
            let next = groups.len();
            let group = *groups
                .entry(row_key(&e, through_mispredict))
                .or_insert(next);
            rows.push(Row {
                comm: e.comm.clone(),
                from: e.from.clone(),
                to: e.to.clone(),
                cycles: e.cycles,
                mispredict: (e.mispred, e.predicted),
                count: 0,
                mispredicted: 0,
                timed: 0,
                cycles_sum: 0,
                starts: (0, 0),
                seen: group,
            });
            rows.len() - 1
        });
        if let Some(r) = rows.get_mut(i) {
            r.count += n;
            r.mispredicted += n * u64::from(e.mispred);
            if e.cycles != 0 {
                r.timed += n;
                r.cycles_sum += n * u64::from(e.cycles);
            }
        }
    }
    // A function starts at or below the lowest offset seen in it, and functions do not
    // overlap: ordering by that offset is perf's order by start address.
    let mut starts: HashMap<(&Option<String>, &String), u64> = HashMap::default();
    for r in &rows {
        for e in [&r.from, &r.to] {
            if let Some(sym) = &e.symbol {
                let v = starts.entry((&e.dso, sym)).or_insert(e.shown);
                *v = (*v).min(e.shown);
            }
        }
    }
    let start = |e: &End| {
        e.symbol
            .as_ref()
            .and_then(|sym| starts.get(&(&e.dso, sym)))
            .copied()
            .unwrap_or(e.shown)
    };
    let found: Vec<(u64, u64)> = rows
        .iter()
        .map(|r| (start(&r.from), start(&r.to)))
        .collect();
    drop(starts);
    for (r, s) in rows.iter_mut().zip(found) {
        r.starts = s;
    }
    Table {
        keys: keys.to_vec(),
        total,
        mispredicted,
        flagged,
        timed,
        rows,
    }
}

fn row_key(e: &Entry, keys: &[Key]) -> RowKey {
    let mut k = RowKey::default();
    for key in keys {
        match key {
            Key::Comm => k.comm = Some(e.comm.clone()),
            Key::DsoFrom => k.dso_from = Some(e.from.dso.clone()),
            Key::SymbolFrom => k.sym_from = Some(e.from.sym_key()),
            Key::DsoTo => k.dso_to = Some(e.to.dso.clone()),
            Key::SymbolTo => k.sym_to = Some(e.to.sym_key()),
            Key::Cycles => k.cycles = Some(e.cycles),
            Key::Mispredict => k.mispredict = Some((e.mispred, e.predicted)),
        }
    }
    k
}

/// perf's order of rows of equal count: each key's own comparison in turn.
///
/// Each key compares one value of each row by a total order, so that the whole is one
/// (`sort_by` may panic otherwise): perf's own comparisons where they are orders, and
/// where perf's is not, the nearest order that gives perf's output on the orders it
/// can print (see [`Key::Mispredict`] and [`addr_order`]).
fn order(a: &Row, b: &Row, keys: &[Key]) -> Ordering {
    for key in keys {
        let o = match key {
            Key::Comm => a.comm.cmp(&b.comm),
            Key::DsoFrom => dso_order(&a.from, &b.from),
            Key::SymbolFrom => sym_order(&a.from, &b.from, a.starts.0, b.starts.0),
            Key::DsoTo => dso_order(&a.to, &b.to),
            Key::SymbolTo => sym_order(&a.to, &b.to, a.starts.1, b.starts.1),
            Key::Cycles => b.cycles.cmp(&a.cycles),
            // perf's `sort__mispredict_cmp` only says "differs" (1, whichever side):
            // no order. With the key last, rows of equal count and equal other keys come
            // newest first in perf (the later row goes left in its output tree); the
            // order of first appearance of each value of the keys up to this one, newest
            // first, is that and is an order whatever keys follow.
            Key::Mispredict => b.seen.cmp(&a.seen),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// perf's `sort__dso_from_cmp`: unknown objects first, then names descending.
fn dso_order(a: &End, b: &End) -> Ordering {
    match (&a.dso, &b.dso) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => y.cmp(x),
    }
}

/// perf's `sort__sym_from_cmp`: both unresolved, addresses ascending ([`addr_order`]);
/// resolved before unresolved; two functions by start (`a_start`, `b_start`, compared
/// the same way), then name.
fn sym_order(a: &End, b: &End, a_start: u64, b_start: u64) -> Ordering {
    match (&a.symbol, &b.symbol) {
        (None, None) => addr_order(a.addr, b.addr),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (Some(x), Some(y)) => addr_order(a_start, b_start).then_with(|| x.cmp(y)),
    }
}

/// perf's `_sort__addr_cmp`, `(int64_t)(right - left)`, as an order. The sign of a
/// wrapped difference is no order over all of `u64` (0 < 2^62 < 2^63 < 0), but over
/// addresses less than 2^63 apart as signed numbers, which canonical x86-64 addresses
/// (user below 2^47, kernel from 2^64 - 2^47) are, it is the order of the addresses read
/// as signed numbers: kernel addresses before user ones, each ascending. That order is
/// total, so it stands for perf's everywhere, non-canonical addresses included.
fn addr_order(a: u64, b: u64) -> Ordering {
    (a as i64).cmp(&(b as i64))
}

/// perf's cell of the mispredict key: `Y`, `N`, or `N/A`.
pub fn mispredict_cell((mispred, predicted): (bool, bool)) -> &'static str {
    if mispred {
        "Y"
    } else if predicted {
        "N"
    } else {
        "N/A"
    }
}

/// The entries of `profile`'s `branches` ([`ProfileBuilder::branches`](hwprof_symbolize::ProfileBuilder::branches)) whose
/// sample `keep` accepts (an event, a filter), with the number of times each was
/// recorded.
pub fn entries<'a>(
    profile: &'a Profile,
    branches: &'a [Branch],
    keep: impl Fn(&Sample) -> bool + 'a,
) -> impl Iterator<Item = Entry> + 'a {
    branches.iter().filter_map(move |b| {
        let s = profile.samples.get(b.sample as usize).filter(|s| keep(s))?;
        Some(Entry {
            comm: profile.comm(s).to_string(),
            from: end(profile, b.from),
            to: end(profile, b.to),
            mispred: b.flags & 1 != 0,
            predicted: b.flags >> 1 & 1 != 0,
            cycles: (b.flags >> 4) as u16,
            count: b.count,
        })
    })
}

fn end(p: &Profile, e: hwprof_symbolize::BranchEnd) -> End {
    let frame = e.frame.and_then(|f| p.frames.get(f as usize));
    match frame {
        Some(f) if f.module.is_some() => End {
            level: if f.kind == FrameKind::Kernel {
                'k'
            } else {
                '.'
            },
            dso: Some(f.module_name().to_string()),
            symbol: f.function.clone(),
            addr: e.addr,
            shown: f.module_offset,
        },
        _ => End {
            level: 'H',
            dso: None,
            symbol: None,
            addr: e.addr,
            shown: e.addr,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(level: char, dso: Option<&str>, symbol: Option<&str>, addr: u64) -> End {
        End {
            level,
            dso: dso.map(str::to_string),
            symbol: symbol.map(str::to_string),
            addr,
            shown: addr,
        }
    }

    fn entry(comm: &str, from: End, to: End, mispred: bool, cycles: u16) -> Entry {
        Entry {
            comm: comm.to_string(),
            from,
            to,
            mispred,
            predicted: !mispred,
            cycles,
            count: 1,
        }
    }

    #[test]
    fn rows_group_by_function_and_count_mispredicts_and_cycles() {
        let f = |a| end('.', Some("a.out"), Some("loop"), a);
        let g = end('.', Some("a.out"), Some("body"), 0x500);
        let es = vec![
            entry("a", f(0x100), g.clone(), false, 4),
            entry("a", f(0x108), g.clone(), true, 0),
            entry("a", f(0x110), g.clone(), true, 8),
            entry("a", g.clone(), f(0x100), false, 1),
        ];
        let t = table(es, &[Key::SymbolFrom, Key::SymbolTo]);
        assert_eq!(t.total, 4);
        assert_eq!(t.mispredicted, 2);
        assert_eq!(t.rows.len(), 2);
        let r = &t.rows[0];
        assert_eq!(r.from.symbol.as_deref(), Some("loop"));
        assert_eq!(r.count, 3);
        assert_eq!(r.percent(t.total), 75.0);
        assert!((r.mispredict_percent() - 200.0 / 3.0).abs() < 1e-9);
        assert_eq!(r.avg_cycles(), Some(6.0));
    }

    #[test]
    fn perf_order_breaks_ties_by_comm_dso_address_and_cycles() {
        let k = |a| end('k', Some("[kernel.kallsyms]"), None, a);
        let u = |a| end('.', Some("ld-2.23.so"), None, a);
        let es = vec![
            entry("perf", k(0xffff_ffff_b420_a473), k(1), false, 1),
            entry("perf", k(0xffff_ffff_b420_0000), k(1), false, 1),
            entry("echo", k(0xffff_ffff_b420_0000), k(1), false, 1),
            entry("echo", u(0x1a5c2), u(1), false, 1),
            entry(
                "perf",
                end('H', None, None, 0),
                end('H', None, None, 0),
                false,
                0,
            ),
            entry("perf", k(0xffff_ffff_b420_0000), k(1), false, 9),
        ];
        let t = table(es, &PERF_DEFAULT);
        let got: Vec<(&str, String, u16)> = t
            .rows
            .iter()
            .map(|r| (r.comm.as_str(), r.from.cell(), r.cycles))
            .collect();
        assert_eq!(
            got,
            vec![
                ("echo", "[.] 0x000000000001a5c2".to_string(), 1),
                ("echo", "[k] 0xffffffffb4200000".to_string(), 1),
                ("perf", "[H] 0000000000000000".to_string(), 0),
                ("perf", "[k] 0xffffffffb4200000".to_string(), 9),
                ("perf", "[k] 0xffffffffb4200000".to_string(), 1),
                ("perf", "[k] 0xffffffffb420a473".to_string(), 1),
            ]
        );
    }

    #[test]
    fn an_entry_recorded_many_times_counts_as_many() {
        let a = end('.', Some("x"), Some("f"), 1);
        let mut e = entry("c", a.clone(), a.clone(), true, 4);
        e.count = 3;
        let t = table([e, entry("c", a.clone(), a, false, 0)], &[Key::Comm]);
        assert_eq!((t.total, t.mispredicted, t.timed), (4, 3, 3));
        assert_eq!(t.rows[0].count, 4);
        assert_eq!(t.rows[0].mispredict_percent(), 75.0);
        assert_eq!(t.rows[0].avg_cycles(), Some(4.0));
    }

    #[test]
    fn mispredict_key_splits_rows() {
        let a = end('.', Some("x"), Some("f"), 1);
        let es = vec![
            entry("c", a.clone(), a.clone(), true, 0),
            entry("c", a.clone(), a.clone(), false, 0),
            entry("c", a.clone(), a.clone(), false, 0),
        ];
        let t = table(es, &[Key::Mispredict]);
        let got: Vec<(&str, u64)> = t
            .rows
            .iter()
            .map(|r| (mispredict_cell(r.mispredict), r.count))
            .collect();
        assert_eq!(got, vec![("N", 2), ("Y", 1)]);
    }

    /// Addresses that collide, straddle the signed boundary, and are not canonical:
    /// where the sign of a wrapped difference stops being an order.
    const ADDRS: [u64; 10] = [
        0,
        1,
        0x1a5c2,
        0x7fff_ffff_ffff,
        0x4000_0000_0000_0000,
        0x7fff_ffff_ffff_ffff,
        0x8000_0000_0000_0000,
        0xc000_0000_0000_0000,
        0xffff_ffff_b420_a473,
        u64::MAX,
    ];

    fn random_end(rng: &mut fastrand::Rng) -> End {
        let addr = if rng.u8(..4) == 0 {
            rng.u64(..)
        } else {
            ADDRS[rng.usize(..ADDRS.len())]
        };
        End {
            level: ['k', '.', 'H'][rng.usize(..3)],
            dso: [None, Some("x"), Some("[kernel.kallsyms]")][rng.usize(..3)].map(str::to_string),
            symbol: [None, None, Some("f"), Some("g")][rng.usize(..4)].map(str::to_string),
            addr,
            shown: if rng.bool() {
                addr
            } else {
                ADDRS[rng.usize(..ADDRS.len())]
            },
        }
    }

    fn random_entry(rng: &mut fastrand::Rng) -> Entry {
        Entry {
            comm: ["a", "b"][rng.usize(..2)].to_string(),
            from: random_end(rng),
            to: random_end(rng),
            mispred: rng.bool(),
            predicted: rng.bool(),
            cycles: rng.u16(..3),
            count: rng.u64(1..3),
        }
    }

    const ALL: [Key; 7] = [
        Key::Comm,
        Key::DsoFrom,
        Key::SymbolFrom,
        Key::DsoTo,
        Key::SymbolTo,
        Key::Cycles,
        Key::Mispredict,
    ];

    /// Every key list (random keys, repeats allowed) orders any rows totally: the
    /// comparison is reflexive, antisymmetric and transitive on every triple of rows,
    /// and sorting neither panics nor leaves rows out of order.
    #[test]
    fn every_key_list_is_a_total_order() {
        let mut rng = fastrand::Rng::with_seed(0x2026_1126);
        for round in 0..400 {
            let keys: Vec<Key> = (0..rng.usize(1..=8))
                .map(|_| ALL[rng.usize(..ALL.len())])
                .collect();
            let entries: Vec<Entry> = (0..rng.usize(1..80))
                .map(|_| random_entry(&mut rng))
                .collect();
            let rows = grouped(entries.clone(), &keys).rows;
            let cmp = |a: &Row, b: &Row| row_order(a, b, &keys);
            for a in &rows {
                assert_eq!(cmp(a, a), Ordering::Equal, "round {round} {keys:?}");
                for b in &rows {
                    let ab = cmp(a, b);
                    assert_eq!(ab, cmp(b, a).reverse(), "round {round} {keys:?}");
                    for c in &rows {
                        let (bc, ac) = (cmp(b, c), cmp(a, c));
                        if ab != Ordering::Greater && bc != Ordering::Greater {
                            assert_ne!(ac, Ordering::Greater, "round {round} {keys:?}");
                        }
                        if ab == Ordering::Equal && bc == Ordering::Equal {
                            assert_eq!(ac, Ordering::Equal, "round {round} {keys:?}");
                        }
                    }
                }
            }
            let t = table(entries, &keys);
            assert_eq!(t.rows.len(), rows.len());
            assert!(t.rows.is_sorted_by(|a, b| cmp(a, b) != Ordering::Greater));
        }
    }

    /// Where perf's sign of a difference is an order (canonical addresses), the order
    /// is perf's: kernel addresses before user ones, each ascending.
    #[test]
    fn canonical_addresses_keep_perfs_order() {
        let perf = |a: u64, b: u64| 0i64.cmp(&(b.wrapping_sub(a) as i64));
        let canonical = [
            0,
            1,
            0x1a5c2,
            0x7fff_ffff_ffff,
            0xffff_8000_0000_0000,
            0xffff_ffff_b420_a473,
            u64::MAX,
        ];
        for a in canonical {
            for b in canonical {
                assert_eq!(addr_order(a, b), perf(a, b), "{a:#x} {b:#x}");
            }
        }
    }

    /// The rows of the panics: Skylake-like entries under `mispredict,symbol_from`
    /// (rows that differ in prediction ordered by first appearance only when they
    /// differ) and non-canonical addresses under perf's default.
    #[test]
    fn mispredict_then_symbol_and_non_canonical_addresses_sort() {
        let u = |a| end('.', Some("x"), None, a);
        let mut es = Vec::new();
        for (i, a) in [0x10u64, 0x20, 0x30, 0x40, 0x50, 0x60].iter().enumerate() {
            es.push(entry("c", u(*a), u(1), i % 2 == 0, 0));
        }
        let t = table(es, &[Key::Mispredict, Key::SymbolFrom]);
        let got: Vec<(&str, u64)> = t
            .rows
            .iter()
            .map(|r| (mispredict_cell(r.mispredict), r.from.addr))
            .collect();
        // The N group came second: newest first, then addresses ascending.
        assert_eq!(
            got,
            vec![
                ("N", 0x20),
                ("N", 0x40),
                ("N", 0x60),
                ("Y", 0x10),
                ("Y", 0x30),
                ("Y", 0x50)
            ]
        );
        let h = |a| end('H', None, None, a);
        let es: Vec<Entry> = [
            0u64,
            0x4000_0000_0000_0000,
            0x8000_0000_0000_0000,
            0xc000_0000_0000_0000,
        ]
        .iter()
        .cycle()
        .take(40)
        .map(|a| entry("c", h(*a), h(0), false, 0))
        .collect();
        let t = table(es, &PERF_DEFAULT);
        let got: Vec<u64> = t.rows.iter().map(|r| r.from.addr).collect();
        assert_eq!(
            got,
            vec![
                0x8000_0000_0000_0000,
                0xc000_0000_0000_0000,
                0,
                0x4000_0000_0000_0000
            ]
        );
    }
}
