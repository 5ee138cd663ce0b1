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
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "clap", value(rename_all = "snake_case"))]
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
    /// The row's place in the order its first entries came.
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
    let mut index: HashMap<RowKey, usize> = HashMap::default();
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
                seen: rows.len(),
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
    rows.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| order(a, b, keys)));
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
fn order(a: &Row, b: &Row, keys: &[Key]) -> Ordering {
    for key in keys {
        let o = match key {
            Key::Comm => a.comm.cmp(&b.comm),
            Key::DsoFrom => dso_order(&a.from, &b.from),
            Key::SymbolFrom => sym_order(&a.from, &b.from, a.starts.0, b.starts.0),
            Key::DsoTo => dso_order(&a.to, &b.to),
            Key::SymbolTo => sym_order(&a.to, &b.to, a.starts.1, b.starts.1),
            Key::Cycles => b.cycles.cmp(&a.cycles),
            // perf's `sort__mispredict_cmp` only says "differs": rows of equal count
            // then come newest first (the later row goes left in its output tree).
            Key::Mispredict if a.mispredict != b.mispredict => b.seen.cmp(&a.seen),
            Key::Mispredict => Ordering::Equal,
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

/// perf's `sort__sym_from_cmp`: both unresolved, addresses ascending (compared as perf
/// does, by the sign of their 64-bit difference); resolved before unresolved; two
/// functions by start (`a_start`, `b_start`), then name.
fn sym_order(a: &End, b: &End, a_start: u64, b_start: u64) -> Ordering {
    match (&a.symbol, &b.symbol) {
        (None, None) => 0i64.cmp(&(b.addr.wrapping_sub(a.addr) as i64)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (Some(x), Some(y)) => a_start.cmp(&b_start).then_with(|| x.cmp(y)),
    }
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

/// The entries of `profile`'s `branches` ([`Profile::build_with_branches`]) whose
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
}
