//! `hwprof report -b`: the branch view (perf's `--branch-stack`), as perf report's
//! `--stdio` table with two columns of its own, or JSON.

use std::fmt::Write as _;

use serde_json::{Value, json};

use hwprof_analysis::branch::{Key, Table, mispredict_cell};

use super::text::{Col, columns, pct, short_count};
use crate::render::round4;

/// One event's table and its name.
pub struct EventBranches {
    /// The event's name.
    pub name: String,
    /// Its rows; `total` is every branch of the event, also those the filters left out.
    pub table: Table,
}

/// perf's column of a key.
fn key_column(key: Key, t: &Table, limit: f64) -> Col {
    let rows = shown(t, limit);
    let (header, cells): (&str, Vec<String>) = match key {
        Key::Comm => ("Command", rows.map(|r| r.comm.clone()).collect()),
        Key::DsoFrom => ("Source Shared Object", rows.map(|r| dso(&r.from)).collect()),
        Key::SymbolFrom => ("Source Symbol", rows.map(|r| r.from.cell()).collect()),
        Key::DsoTo => ("Target Shared Object", rows.map(|r| dso(&r.to)).collect()),
        Key::SymbolTo => ("Target Symbol", rows.map(|r| r.to.cell()).collect()),
        Key::Cycles => (
            "Basic Block Cycles",
            rows.map(|r| cycles(r.cycles)).collect(),
        ),
        Key::Mispredict => (
            "Branch Mispredicted",
            rows.map(|r| mispredict_cell(r.mispredict).to_string())
                .collect(),
        ),
    };
    let mut c = Col::new(header, false);
    c.cells = cells;
    c
}

fn dso(e: &hwprof_analysis::branch::End) -> String {
    e.dso.clone().unwrap_or_else(|| "[unknown]".to_string())
}

/// perf's cell of the cycles key: `-` when not recorded, else the 16-bit count as C's
/// `%hd` prints it (signed: 42141 shows as -23395).
fn cycles(c: u16) -> String {
    if c == 0 {
        "-".to_string()
    } else {
        (c as i16).to_string()
    }
}

fn shown(t: &Table, limit: f64) -> impl Iterator<Item = &hwprof_analysis::branch::Row> + '_ {
    t.rows
        .iter()
        .filter(move |r| limit <= 0.0 || r.percent(t.total) >= limit)
}

/// The text of every event's table: perf's header lines and columns (Overhead, then
/// the keys), then `Mispredicted` (the share of the row's branches the hardware flagged
/// mispredicted) when the file records prediction, and `Avg Cycles` when it records
/// cycles. `hide_comm` drops the Command column (perf does when `--comm` names one
/// command).
pub fn text(ts: &[EventBranches], lost: u64, hide_comm: bool, limit: f64) -> String {
    let mut out = String::new();
    let _ = write!(out, "#\n# Total Lost Samples: {lost}\n#\n");
    for (i, e) in ts.iter().enumerate() {
        let t = &e.table;
        if i > 0 {
            out.push_str("\n\n");
        }
        let _ = write!(
            out,
            "# Samples: {} of event '{}'\n# Event count (approx.): {}\n#\n",
            short_count(t.total),
            crate::render::escape(&e.name),
            t.total
        );
        let mut cols = Vec::new();
        let mut c = Col::new("Overhead", true).min(8);
        c.cells = shown(t, limit).map(|r| pct(r.percent(t.total))).collect();
        cols.push(c);
        for &k in &t.keys {
            if hide_comm && k == Key::Comm {
                continue;
            }
            let col = key_column(k, t, limit);
            if !cols.iter().any(|c: &Col| c.header == col.header) {
                cols.push(col);
            }
        }
        if t.flagged > 0 {
            let mut c = Col::new("Mispredicted", true);
            c.cells = shown(t, limit)
                .map(|r| pct(r.mispredict_percent()))
                .collect();
            cols.push(c);
        }
        if t.timed > 0 {
            let mut c = Col::new("Avg Cycles", true);
            c.cells = shown(t, limit)
                .map(|r| {
                    r.avg_cycles()
                        .map_or("-".to_string(), |a| format!("{a:.1}"))
                })
                .collect();
            cols.push(c);
        }
        columns(&mut out, &cols);
    }
    out
}

/// The JSON document of the tables (schema in docs/report.md).
pub fn json(ts: &[EventBranches], lost: u64, limit: f64) -> Value {
    let events: Vec<Value> = ts
        .iter()
        .map(|e| {
            let t = &e.table;
            let end = |x: &hwprof_analysis::branch::End| {
                json!({
                    "level": x.level.to_string(),
                    "dso": x.dso,
                    "symbol": x.symbol,
                    "addr": x.addr,
                    "shown_addr": x.shown,
                })
            };
            let rows: Vec<Value> = shown(t, limit)
                .map(|r| {
                    json!({
                        "overhead": round4(r.percent(t.total)),
                        "branches": r.count,
                        "comm": r.comm,
                        "from": end(&r.from),
                        "to": end(&r.to),
                        "cycles": r.cycles,
                        "mispredict": mispredict_cell(r.mispredict),
                        "mispredicted": r.mispredicted,
                        "mispredicted_percent": round4(r.mispredict_percent()),
                        "avg_cycles": r.avg_cycles().map(round4),
                    })
                })
                .collect();
            json!({
                "event": e.name,
                "keys": t.keys,
                "branches": t.total,
                "mispredicted": t.mispredicted,
                "rows": rows,
            })
        })
        .collect();
    json!({ "lost": lost, "events": events })
}
