//! `hwprof report --diff BASE NEW`: each row's share of its event in both files and the
//! change in percentage points, sorted by the size of the change (like `perf diff`).

use std::collections::HashMap;

use super::{EventTable, Row};

/// One row of the comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct DiffRow {
    /// The keys (comm, pid, tid, dso, sym) and NEW's counts, or BASE's when NEW lacks it.
    pub row: Row,
    /// Share of BASE's total period, percent; `None` when BASE has no such row.
    pub base: Option<f64>,
    /// Share of NEW's total period, percent; `None` when NEW has no such row.
    pub new: Option<f64>,
}

impl DiffRow {
    /// NEW minus BASE, percentage points (a missing side counts 0).
    pub fn delta(&self) -> f64 {
        self.new.unwrap_or(0.0) - self.base.unwrap_or(0.0)
    }
}

/// An event's samples and their period in one recording.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Samples.
    pub samples: u64,
    /// Their period.
    pub period: u64,
}

/// The comparison of one event.
#[derive(Clone, Debug, PartialEq)]
pub struct EventDiff {
    /// The event's name.
    pub name: String,
    /// The event's samples and period in BASE.
    pub base: Totals,
    /// The event's samples and period in NEW.
    pub new: Totals,
    /// The rows, sorted by |delta| (largest first).
    pub rows: Vec<DiffRow>,
}

impl EventDiff {
    /// The rows whose share on either side is at or above `limit` percent.
    pub fn shown(&self, limit: f64) -> impl Iterator<Item = &DiffRow> + Clone {
        self.rows
            .iter()
            .filter(move |r| r.base.unwrap_or(0.0).max(r.new.unwrap_or(0.0)) >= limit)
    }
}

type RowKey = (
    Option<String>,
    Option<u32>,
    Option<u32>,
    Option<String>,
    Option<String>,
);

fn key(r: &Row) -> RowKey {
    (r.comm.clone(), r.pid, r.tid, r.dso.clone(), r.sym.clone())
}

/// Joins the self-overhead tables of one event from two files.
pub fn compare(base: &EventTable, new: &EventTable) -> EventDiff {
    let mut at: HashMap<RowKey, usize> = HashMap::new();
    let mut rows: Vec<DiffRow> = Vec::new();
    for r in &base.rows {
        at.insert(key(r), rows.len());
        rows.push(DiffRow {
            row: r.clone(),
            base: Some(base.pct(r.period)),
            new: None,
        });
    }
    for r in &new.rows {
        let v = Some(new.pct(r.period));
        match at.get(&key(r)) {
            Some(&i) => {
                if let Some(d) = rows.get_mut(i) {
                    d.new = v;
                    d.row = r.clone();
                }
            }
            None => rows.push(DiffRow {
                row: r.clone(),
                base: None,
                new: v,
            }),
        }
    }
    // Rows with no samples in a file (they exist only to carry children) are absent there.
    for d in &mut rows {
        if d.base == Some(0.0) {
            d.base = None;
        }
        if d.new == Some(0.0) {
            d.new = None;
        }
    }
    rows.retain(|d| d.base.is_some() || d.new.is_some());
    rows.sort_by(|a, b| {
        b.delta()
            .abs()
            .total_cmp(&a.delta().abs())
            .then(b.base.unwrap_or(0.0).total_cmp(&a.base.unwrap_or(0.0)))
            .then_with(|| key(&a.row).cmp(&key(&b.row)))
    });
    EventDiff {
        name: new.name.clone(),
        base: Totals {
            samples: base.samples,
            period: base.period,
        },
        new: Totals {
            samples: new.samples,
            period: new.period,
        },
        rows,
    }
}

/// The comparisons of the events of BASE that NEW has too (by name, the first of that
/// name in NEW), in BASE's order; events with no kept sample on either side are left
/// out. The tables are self-overhead tables (no children).
pub fn compare_events(base: &[EventTable], new: &[EventTable]) -> Vec<EventDiff> {
    base.iter()
        .filter_map(|b| {
            let n = new.iter().find(|n| n.name == b.name)?;
            (b.kept_samples > 0 || n.kept_samples > 0).then(|| compare(b, n))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::fixture::profile;
    use super::super::tests::DEFAULT;
    use super::super::{Filter, aggregate, tables};
    use super::*;

    #[test]
    fn deltas_and_order() {
        let base = profile();
        let mut new = profile();
        // NEW: hot_b twice as often, the kernel sample gone.
        new.samples.retain(|s| s.stack != [6]);
        let extra = new.samples[3].clone();
        new.samples.push(extra);
        let b = aggregate(&base, 0, DEFAULT, &Filter::default(), false);
        let n = aggregate(&new, 0, DEFAULT, &Filter::default(), false);
        let d = compare(&b, &n);
        // base: hot_a 300/550, hot_b 100/550, kernel 100/550, main 50/550.
        // new:  hot_a 300/550, hot_b 200/550, main 50/550.
        let get = |sym: &str| {
            d.rows
                .iter()
                .find(|r| r.row.sym.as_deref() == Some(sym))
                .unwrap_or_else(|| panic!("no {sym}"))
        };
        assert!((get("[.] hot_b").delta() - 100.0 * 100.0 / 550.0).abs() < 1e-9);
        assert_eq!(get("[k] 0xffffffff9661da49").new, None);
        assert!(get("[.] hot_a").delta().abs() < 1e-9);
        // Equal |delta|: the keys decide ("other" before "two_hot").
        assert_eq!(d.rows[0].row.sym.as_deref(), Some("[k] 0xffffffff9661da49"));
        assert_eq!(d.rows[1].row.sym.as_deref(), Some("[.] hot_b"));
        assert!(d.rows[0].delta() < 0.0);
        // main is 9.09% on both sides.
        assert_eq!(d.shown(9.0).count(), 4);
        assert_eq!(d.shown(10.0).count(), 3);
    }

    #[test]
    fn events_are_matched_by_name() {
        let base = profile();
        let mut new = profile();
        new.events.swap(0, 1);
        for s in &mut new.samples {
            s.event = 1 - s.event;
        }
        let f = Filter::default();
        let tb = tables(&base, &[0, 1], DEFAULT, &f, false);
        let tn = tables(&new, &[0, 1], DEFAULT, &f, false);
        let d = compare_events(&tb, &tn);
        let names: Vec<&str> = d.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["cpu-clock", "page-faults"]);
        assert!(
            d.iter()
                .all(|d| d.rows.iter().all(|r| r.delta().abs() < 1e-9))
        );
        // Nothing kept on either side: left out.
        let none = Filter {
            pids: vec![99],
            ..Filter::default()
        };
        let tb = tables(&base, &[0], DEFAULT, &none, false);
        assert!(compare_events(&tb, &tb).is_empty());
        assert!(compare_events(&tb[..0], &tb).is_empty());
    }
}
