//! Rendering report tables: perf report's `--stdio` layout, and JSON.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use hwprof_analysis::report::callgraph::Graph;
use hwprof_analysis::report::{EventTable, Row};

use crate::args::SortKey;
use crate::render::round4;

/// One column of a table.
pub struct Col {
    /// The header text.
    pub header: String,
    /// Right-aligned (numbers) or left-aligned (names).
    pub right: bool,
    /// Minimum width (perf's fixed widths of number columns).
    pub min: usize,
    /// One cell per row.
    pub cells: Vec<String>,
}

impl Col {
    /// A column with no minimum width.
    pub fn new(header: &str, right: bool) -> Col {
        Col {
            header: header.to_string(),
            right,
            min: 0,
            cells: Vec::new(),
        }
    }

    /// A column at least `min` characters wide.
    pub fn min(mut self, min: usize) -> Col {
        self.min = min;
        self
    }

    fn width(&self) -> usize {
        self.cells
            .iter()
            .map(|c| c.chars().count())
            .chain([self.header.chars().count(), self.min])
            .max()
            .unwrap_or(0)
    }
}

fn pad(out: &mut String, text: &str, width: usize, right: bool, last: bool) {
    let fill = width.saturating_sub(text.chars().count());
    if right {
        out.extend(std::iter::repeat_n(' ', fill));
        out.push_str(text);
    } else {
        out.push_str(text);
        if !last {
            out.extend(std::iter::repeat_n(' ', fill));
        }
    }
}

/// Writes the header, the dotted line, `#`, and the rows of `cols` as perf does: a `# `
/// (header) or two-space (rows) margin, two spaces between columns, every header padded
/// to its column's width, rows without trailing blanks. Cells are escaped
/// ([`crate::render::escape`]): a comm, path or symbol cannot break a row.
pub fn columns(out: &mut String, cols: &[Col]) {
    columns_then(out, cols, |_, _| {});
}

/// [`columns`], calling `after(row, out)` after each row's line (`report -g`'s graphs).
pub fn columns_then(out: &mut String, cols: &[Col], mut after: impl FnMut(usize, &mut String)) {
    let escaped: Vec<Col> = cols
        .iter()
        .map(|c| Col {
            header: c.header.clone(),
            right: c.right,
            min: c.min,
            cells: c
                .cells
                .iter()
                .map(|s| crate::render::escape(s).into_owned())
                .collect(),
        })
        .collect();
    let cols = &escaped[..];
    let widths: Vec<usize> = cols.iter().map(Col::width).collect();
    out.push_str("# ");
    for (i, (c, &w)) in cols.iter().zip(&widths).enumerate() {
        if i > 0 {
            out.push_str("  ");
        }
        pad(out, &c.header, w, c.right, false);
    }
    out.push_str("\n# ");
    for (i, &w) in widths.iter().enumerate() {
        if i > 0 {
            out.push_str("  ");
        }
        out.extend(std::iter::repeat_n('.', w));
    }
    out.push_str("\n#\n");
    let n = cols.first().map_or(0, |c| c.cells.len());
    for r in 0..n {
        out.push_str("  ");
        for (i, (c, &w)) in cols.iter().zip(&widths).enumerate() {
            if i > 0 {
                out.push_str("  ");
            }
            let cell = c.cells.get(r).map_or("", String::as_str);
            pad(out, cell, w, c.right, i + 1 == cols.len());
        }
        out.push('\n');
        after(r, out);
    }
}

/// perf's `convert_unit`: 1234 -> (1, 'K'), 13 -> (13, ' ').
pub fn short_count(mut v: u64) -> String {
    let mut unit = ' ';
    for u in ['K', 'M', 'G'] {
        if v > 1000 {
            v /= 1000;
            unit = u;
        }
    }
    format!("{v}{unit}")
}

/// A percentage as perf prints it: `66.25%`.
pub fn pct(v: f64) -> String {
    format!("{v:.2}%")
}

/// The key columns of `sort` (in its order), filled from `rows`. `hide_comm` drops the
/// Command column (perf does when `--comm` names a single command).
pub fn key_columns<'a>(
    sort: &[SortKey],
    hide_comm: bool,
    rows: impl Iterator<Item = &'a Row> + Clone,
) -> Vec<Col> {
    let mut cols = Vec::new();
    for key in sort {
        let col = match key {
            SortKey::Comm if hide_comm => continue,
            SortKey::Comm => {
                let mut c = Col::new("Command", false);
                c.cells = rows
                    .clone()
                    .map(|r| r.comm.clone().unwrap_or_default())
                    .collect();
                c
            }
            SortKey::Pid => {
                let mut c = Col::new("Pid", true).min(7);
                c.cells = rows.clone().map(|r| opt_num(r.pid)).collect();
                c
            }
            SortKey::Tid => {
                let mut c = Col::new("Tid", true).min(7);
                c.cells = rows.clone().map(|r| opt_num(r.tid)).collect();
                c
            }
            SortKey::Dso => {
                let mut c = Col::new("Shared Object", false);
                c.cells = rows
                    .clone()
                    .map(|r| r.dso.clone().unwrap_or_default())
                    .collect();
                c
            }
            SortKey::Sym => {
                let mut c = Col::new("Symbol", false);
                c.cells = rows
                    .clone()
                    .map(|r| r.sym.clone().unwrap_or_default())
                    .collect();
                c
            }
            SortKey::Srcline => {
                let mut c = Col::new("Source:Line", false);
                c.cells = rows
                    .clone()
                    .map(|r| r.srcline.clone().unwrap_or_default())
                    .collect();
                c
            }
        };
        // A key given twice (`-s sym,sym`) makes one column.
        if !cols.iter().any(|c: &Col| c.header == col.header) {
            cols.push(col);
        }
    }
    cols
}

/// A pid or tid column cell (perf's -1 for the kernel's "none").
fn opt_num(v: Option<u32>) -> String {
    v.map(|v| crate::render::id(v).to_string())
        .unwrap_or_default()
}

/// perf report's `--stdio` text for every table: the lost-samples line, then per event
/// its sample count, event count, and rows; with `graphs` (one per shown row of each
/// table, `report -g`), each row's call graph under it.
pub fn tables(
    ts: &[EventTable],
    lost: u64,
    sort: &[SortKey],
    hide_comm: bool,
    limit: f64,
    graphs: Option<&[Vec<Graph>]>,
) -> String {
    let mut out = String::new();
    let _ = write!(out, "#\n# Total Lost Samples: {lost}\n#\n");
    for (i, t) in ts.iter().enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        let _ = write!(
            out,
            "# Samples: {} of event '{}'\n# Event count (approx.): {}\n#\n",
            short_count(t.samples),
            crate::render::escape(&t.name),
            t.period
        );
        let rows = t.shown(limit);
        let mut cols = Vec::new();
        if t.children {
            let mut c = Col::new("Children", true).min(8);
            c.cells = rows
                .clone()
                .map(|r| pct(t.pct(r.children_period)))
                .collect();
            cols.push(c);
            let mut c = Col::new("Self", true).min(8);
            c.cells = rows.clone().map(|r| pct(t.pct(r.period))).collect();
            cols.push(c);
        } else {
            let mut c = Col::new("Overhead", true).min(8);
            c.cells = rows.clone().map(|r| pct(t.pct(r.period))).collect();
            cols.push(c);
        }
        let mut c = Col::new("Samples", true).min(12);
        c.cells = rows.clone().map(|r| r.samples.to_string()).collect();
        cols.push(c);
        let mut c = Col::new("Period", true).min(12);
        c.cells = rows.clone().map(|r| r.period.to_string()).collect();
        cols.push(c);
        cols.extend(key_columns(sort, hide_comm, rows));
        // perf leaves out a single root's first frame when the keys begin with sym.
        let skip_first = sort.first() == Some(&SortKey::Sym);
        match graphs.and_then(|g| g.get(i)) {
            Some(gs) => columns_then(&mut out, &cols, |r, out| {
                if let Some(g) = gs.get(r) {
                    super::graph::draw(out, g, t.period, skip_first);
                }
            }),
            None => columns(&mut out, &cols),
        }
    }
    out
}

/// The key fields of a row for JSON, in `sort`'s order.
pub fn key_fields(o: &mut Map<String, Value>, r: &Row) {
    if let Some(c) = &r.comm {
        o.insert("comm".into(), json!(c));
    }
    if let Some(p) = r.pid {
        o.insert("pid".into(), json!(crate::render::id(p)));
    }
    if let Some(t) = r.tid {
        o.insert("tid".into(), json!(crate::render::id(t)));
    }
    if let Some(d) = &r.dso {
        o.insert("dso".into(), json!(d));
    }
    if let Some(s) = &r.sym {
        o.insert("symbol".into(), json!(s));
    }
    if let Some(s) = &r.srcline {
        o.insert("srcline".into(), json!(s));
    }
}

/// The JSON document of the tables (schema in docs/report.md); with `graphs`, each row
/// has its `callgraph`.
pub fn json(ts: &[EventTable], lost: u64, limit: f64, graphs: Option<&[Vec<Graph>]>) -> Value {
    let events: Vec<Value> = ts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let gs = graphs.and_then(|g| g.get(i));
            let rows: Vec<Value> = t
                .shown(limit)
                .enumerate()
                .map(|(k, r)| {
                    let mut o = Map::new();
                    o.insert("overhead".into(), json!(round4(t.pct(r.period))));
                    if t.children {
                        o.insert("children".into(), json!(round4(t.pct(r.children_period))));
                    }
                    o.insert("samples".into(), json!(r.samples));
                    o.insert("period".into(), json!(r.period));
                    key_fields(&mut o, r);
                    if let Some(g) = gs.and_then(|g| g.get(k)) {
                        o.insert("callgraph".into(), super::graph::json(&g.roots, t.period));
                    }
                    Value::Object(o)
                })
                .collect();
            json!({
                "name": t.name,
                "samples": t.samples,
                "period": t.period,
                "lost": lost,
                "rows": rows,
            })
        })
        .collect();
    json!({ "events": events })
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{DEFAULT, aggregate, profile};
    use super::*;

    #[test]
    fn short_counts_like_perf() {
        assert_eq!(short_count(13), "13 ");
        assert_eq!(short_count(1000), "1000 ");
        assert_eq!(short_count(1001), "1K");
        assert_eq!(short_count(1_234_567), "1M");
    }

    #[test]
    fn table_layout_is_perfs() {
        let p = profile();
        let t = aggregate(&p, 0, &DEFAULT, false);
        let text = tables(&[t], 3, &DEFAULT, false, 0.0, None);
        let want = "\
#
# Total Lost Samples: 3
#
# Samples: 6  of event 'cpu-clock'
# Event count (approx.): 550
#
# Overhead       Samples        Period  Command  Shared Object      Symbol                \n\
# ........  ............  ............  .......  .................  ......................
#
    54.55%             3           300  two_hot  two_hot            [.] hot_a
    18.18%             1           100  other    [kernel.kallsyms]  [k] 0xffffffff9661da49
    18.18%             1           100  two_hot  two_hot            [.] hot_b
     9.09%             1            50  other    two_hot            [.] main
";
        assert_eq!(text, want);
    }

    #[test]
    fn children_columns_and_limit() {
        let p = profile();
        let t = aggregate(&p, 0, &[SortKey::Sym], true);
        let text = tables(&[t], 0, &[SortKey::Sym], false, 50.0, None);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[6],
            "# Children      Self       Samples        Period  Symbol                    "
        );
        assert_eq!(
            lines[9],
            "    81.82%     9.09%             1            50  [.] main"
        );
        assert_eq!(
            lines[10],
            "    81.82%     0.00%             0             0  [.] __libc_start_call_main"
        );
        // 9 header lines, 3 rows at or above 50% (hot_a: 54.55%).
        assert_eq!(lines.len(), 12, "{text}");
    }

    #[test]
    fn json_fields() {
        let p = profile();
        let t = aggregate(&p, 0, &[SortKey::Comm, SortKey::Pid, SortKey::Sym], true);
        let v = json(&[t], 3, 20.0, None);
        let e = &v["events"][0];
        assert_eq!(e["name"], "cpu-clock");
        assert_eq!(e["samples"], 6);
        assert_eq!(e["period"], 550);
        assert_eq!(e["lost"], 3);
        let r = &e["rows"][0];
        let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "overhead", "children", "samples", "period", "comm", "pid", "symbol"
            ]
        );
        assert_eq!(r["children"], 72.7273);
    }
}
