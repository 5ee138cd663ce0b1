//! `hwprof mem report`: memory-access profiles of a PEBS load/store recording (`perf mem
//! record`, `perf c2c record`, `hwprof record -e cpu/mem-loads/P -d`), like `perf mem
//! report --stdio`: per event, the samples grouped by where they were served, their
//! snoop and TLB results, the functions and the data symbols, each row with its share of
//! the samples, its share of the weight (perf's Overhead) and its latency percentiles.
//!
//! [`hwprof_analysis::mem`] reads and groups; this module parses flags and prints.

use std::io::{self, BufWriter, Write};

use hwprof_analysis::mem::{self, Key, Row};
use serde_json::json;

use crate::args::{MemArgs, MemCommand, MemReportArgs};
use crate::render::escape;

pub fn run(a: MemArgs) -> anyhow::Result<u8> {
    match a.command {
        MemCommand::Report(r) => report(r),
    }
}

fn report(a: MemReportArgs) -> anyhow::Result<u8> {
    let p = crate::input::load_memory(&a.input.file, a.input.symfs.clone())?;
    let mut out = BufWriter::new(io::stdout().lock());
    let limit = |rows: Vec<Row>| -> Vec<Row> {
        if a.rows == 0 {
            rows
        } else {
            rows.into_iter().take(a.rows).collect()
        }
    };
    if a.json {
        let events: Vec<_> = p
            .events_with_samples()
            .into_iter()
            .map(|e| {
                let t = p.total(e);
                let (n, w) = (t.samples, t.cost);
                let tables: serde_json::Map<String, serde_json::Value> = a
                    .sort
                    .iter()
                    .map(|&k| {
                        let key = serde_json::to_value(k).unwrap_or_default();
                        let name = key.as_str().unwrap_or("key").to_string();
                        (name, json!(limit(mem::table(&p, e, k))))
                    })
                    .collect();
                json!({
                    "event": p.events.get(e as usize),
                    "samples": n,
                    "total_weight": w,
                    "tables": tables,
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &events)?;
        writeln!(out)?;
        out.flush()?;
        return Ok(0);
    }
    for e in p.events_with_samples() {
        let t = p.total(e);
        let (n, w) = (t.samples, t.cost);
        let name = p.events.get(e as usize).map_or("?", |s| s.as_str());
        writeln!(out, "# Samples: {n}  of event '{}'", escape(name))?;
        writeln!(out, "# Total weight : {w}")?;
        writeln!(out, "#")?;
        for &k in &a.sort {
            let rows = limit(mem::table(&p, e, k));
            print_table(&mut out, k, &rows)?;
        }
    }
    out.flush()?;
    Ok(0)
}

fn print_table(out: &mut impl Write, k: Key, rows: &[Row]) -> io::Result<()> {
    let width = rows
        .iter()
        .map(|r| escape(&r.key).chars().count())
        .chain([k.title().len()])
        .max()
        .unwrap_or(0);
    writeln!(
        out,
        "# {:<width$}  {:>8}  {:>8}  {:>8}  {:>8}  {:>6}  {:>6}  {:>6}  {:>6}",
        k.title(),
        "Samples",
        "Samples%",
        "Weight%",
        "Mean",
        "p50",
        "p90",
        "p99",
        "Max"
    )?;
    for r in rows {
        let (l, key) = (&r.latency, escape(&r.key));
        if l.n == 0 {
            writeln!(
                out,
                "  {:<width$}  {:>8}  {:>7.2}%  {:>7.2}%  {:>8}  {:>6}  {:>6}  {:>6}  {:>6}",
                key, r.samples, r.period_pct, r.weight_pct, "-", "-", "-", "-", "-"
            )?;
        } else {
            writeln!(
                out,
                "  {:<width$}  {:>8}  {:>7.2}%  {:>7.2}%  {:>8.1}  {:>6}  {:>6}  {:>6}  {:>6}",
                key, r.samples, r.period_pct, r.weight_pct, l.mean, l.p50, l.p90, l.p99, l.max
            )?;
        }
    }
    writeln!(out)
}
