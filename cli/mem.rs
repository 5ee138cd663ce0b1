//! `hwprof mem report`: memory-access profiles of a PEBS load/store recording (`perf mem
//! record`, `perf c2c record`, `hwprof record -e cpu/mem-loads/P -d`), like `perf mem
//! report --stdio`: per event, the samples grouped by where they were served, their
//! snoop and TLB results, the functions and the data symbols, each row with its share of
//! the samples, its share of the weight (perf's Overhead) and its latency percentiles.
//!
//! [`hwprof_analysis::mem`] reads and groups; this module parses flags and prints.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand};
use hwprof_analysis::mem::{self, Key, MemProfile, Row};
use hwprof_symbolize::Options;
use serde_json::json;

use crate::render::escape;

/// Flags of `hwprof mem`.
#[derive(Debug, Args)]
pub struct MemArgs {
    #[command(subcommand)]
    pub command: MemCommand,
}

/// Subcommands of `hwprof mem`.
#[derive(Debug, Subcommand)]
pub enum MemCommand {
    /// Loads and stores by where they were served, snoop, TLB, function and data symbol,
    /// with latency percentiles (like `perf mem report --stdio`).
    Report(MemReportArgs),
}

#[derive(Debug, Args)]
pub struct MemReportArgs {
    /// The perf.data file to read (a PEBS recording with data source: `perf mem record`).
    #[arg(
        short = 'i',
        long = "input",
        value_name = "FILE",
        default_value = "perf.data"
    )]
    pub input: PathBuf,
    /// The tables to print, comma-separated, in this order.
    #[arg(
        short = 's',
        long = "sort",
        value_name = "KEYS",
        value_enum,
        value_delimiter = ',',
        default_value = "level,snoop,tlb,function,data"
    )]
    pub sort: Vec<Key>,
    /// Rows of each table at most (0: all).
    #[arg(long = "rows", value_name = "N", default_value_t = 20)]
    pub rows: usize,
    /// Print JSON: one object per event with its tables.
    #[arg(long = "json")]
    pub json: bool,
    /// Look for files with symbols relative to this directory (perf's --symfs).
    #[arg(long = "symfs", value_name = "DIR", value_parser = crate::args::symfs_dir)]
    pub symfs: Option<PathBuf>,
}

pub fn run(a: MemArgs) -> anyhow::Result<u8> {
    match a.command {
        MemCommand::Report(r) => report(r),
    }
}

/// Reads the memory samples of `input`; a recording without any is a usage error, and
/// events without any (their samples carry DATA_SRC but say nothing) are named in a note.
pub fn load(input: &std::path::Path, symfs: Option<PathBuf>) -> anyhow::Result<MemProfile> {
    let pd = crate::input::open(input)?;
    let opts = Options {
        symfs,
        ..Options::default()
    };
    let p = mem::collect(&pd, &opts)?;
    if p.is_empty() {
        return Err(no_memory_samples(input, p.with_source()));
    }
    for e in p.not_memory_events() {
        eprintln!(
            "hwprof: note: {} samples of {} carry no data source (every one N/A): left out",
            p.total(e).samples,
            p.events.get(e as usize).map_or("?", |s| s.as_str())
        );
    }
    Ok(p)
}

/// The usage error of a recording without memory samples (`with_source`: its samples
/// that carry a data source field, all N/A).
pub fn no_memory_samples(input: &std::path::Path, with_source: u64) -> anyhow::Error {
    let why = if with_source == 0 {
        "no sample carries a data source".to_string()
    } else {
        format!(
            "its {with_source} samples carry a data source field, but every one is N/A \
             (their events do not sample memory; --call-graph dwarf asks for the field, as perf does)"
        )
    };
    crate::error::Usage(format!(
        "{} has no memory samples: {why}; record loads and stores with `perf mem record` \
         or `perf c2c record` (or `hwprof record -e cpu/mem-loads/P -d` on a PEBS CPU)",
        input.display()
    ))
    .into()
}

fn report(a: MemReportArgs) -> anyhow::Result<u8> {
    let p = load(&a.input, a.symfs.clone())?;
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
