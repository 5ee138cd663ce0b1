//! `hwprof c2c report`: cache-line contention of a PEBS load/store recording (`perf c2c
//! record`, `perf mem record`), in the spirit of `perf c2c report --stdio`: the counts of
//! every load and store by where it was served, the cache lines with the most HITM
//! loads and stores, and for each line its offsets with the instructions, functions and
//! threads that touch them, so that false sharing shows as two threads at different
//! offsets of one line.
//!
//! [`hwprof_analysis::c2c`] counts; this module parses flags and prints.

use std::io::{self, BufWriter, Write};

use hwprof_analysis::c2c::{self, Line, Report, Stats};

use crate::args::{C2cArgs, C2cCommand, C2cReportArgs};
use crate::render::escape;

pub fn run(a: C2cArgs) -> anyhow::Result<u8> {
    match a.command {
        C2cCommand::Report(r) => report(r),
    }
}

fn report(a: C2cReportArgs) -> anyhow::Result<u8> {
    let p = crate::input::load_memory(&a.input.file, a.input.symfs.clone())?;
    let mut r = c2c::analyze(&p, a.show_all);
    if a.lines > 0 {
        r.lines.truncate(a.lines);
    }
    let mut out = BufWriter::new(io::stdout().lock());
    if a.json {
        serde_json::to_writer_pretty(&mut out, &r)?;
        writeln!(out)?;
    } else {
        text(&mut out, &r)?;
    }
    out.flush()?;
    Ok(0)
}

fn text(out: &mut impl Write, r: &Report) -> io::Result<()> {
    let t = &r.total;
    writeln!(out, "# Trace event information")?;
    let rows: [(&str, u64); 22] = [
        ("Total records", t.records),
        ("Locked load/store operations", t.locks),
        ("Load operations", t.loads),
        ("Loads - fill buffer hit", t.ld_fbhit),
        ("Loads - L1D hit", t.ld_l1hit),
        ("Loads - L2D hit", t.ld_l2hit),
        ("Loads - LLC hit", t.ld_llchit + t.lcl_hitm),
        ("Loads - local HITM", t.lcl_hitm),
        ("Loads - remote HITM", t.rmt_hitm),
        ("Loads - remote HIT", t.rmt_hit),
        ("Loads - local peer", t.lcl_peer),
        ("Loads - remote peer", t.rmt_peer),
        ("Loads - local DRAM", t.lcl_dram),
        ("Loads - remote DRAM", t.rmt_dram),
        ("Loads - miss", t.ld_miss),
        ("Loads - no address", t.ld_noaddr),
        ("Store operations", t.stores),
        ("Stores - L1D hit", t.st_l1hit),
        ("Stores - L1D miss", t.st_l1miss),
        ("Stores - no level", t.st_na),
        ("Stores - no address", t.st_noaddr),
        ("Shared cache lines", r.shared_lines),
    ];
    for (k, v) in rows {
        writeln!(out, "  {k:<30} {v:>10}")?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "# Shared cache lines, by HITM (local + remote) then stores"
    )?;
    writeln!(
        out,
        "# {:>5}  {:>18}  {:>7}  {:>6}  {:>7}  {:>7}  {:>7}  {:>6}  {:>6}  {:>6}  {:>6}  {:>5}  {:>5}  {:>5}  {:>5}  {:>6}  {:>6}  {:>7}  {:>7}  {:>7}  Data symbol",
        "Index",
        "Address",
        "Hitm%",
        "Hitm",
        "LclHitm",
        "RmtHitm",
        "Records",
        "Loads",
        "Stores",
        "L1Hit",
        "L1Miss",
        "N/A",
        "FB",
        "L1",
        "L2",
        "LclHit",
        "RmtHit",
        "LclDram",
        "RmtDram",
        "Threads",
    )?;
    let pct = hwprof_analysis::percent;
    for (i, l) in r.lines.iter().enumerate() {
        let s = &l.stats;
        writeln!(
            out,
            "  {:>5}  {:>#18x}  {:>6.2}%  {:>6}  {:>7}  {:>7}  {:>7}  {:>6}  {:>6}  {:>6}  {:>6}  {:>5}  {:>5}  {:>5}  {:>5}  {:>6}  {:>6}  {:>7}  {:>7}  {:>7}  {}",
            i,
            l.address,
            pct(s.tot_hitm, r.shared.tot_hitm),
            s.tot_hitm,
            s.lcl_hitm,
            s.rmt_hitm,
            s.records,
            s.loads,
            s.stores,
            s.st_l1hit,
            s.st_l1miss,
            s.st_na,
            s.ld_fbhit,
            s.ld_l1hit,
            s.ld_l2hit,
            s.ld_llchit,
            s.rmt_hit,
            s.lcl_dram,
            s.rmt_dram,
            l.threads.len(),
            escape(l.data_symbol.as_deref().unwrap_or("-")),
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "# Offsets of each line: share of the line's remote/local HITM and L1 hit/miss stores"
    )?;
    for (i, l) in r.lines.iter().enumerate() {
        line(out, i, l)?;
    }
    Ok(())
}

fn line(out: &mut impl Write, i: usize, l: &Line) -> io::Result<()> {
    let s: &Stats = &l.stats;
    writeln!(
        out,
        "  ---- line {i}: {:#x} {}  RmtHitm {}  LclHitm {}  Store L1Hit {}  L1Miss {} ----",
        l.address,
        escape(l.data_symbol.as_deref().unwrap_or("")),
        s.rmt_hitm,
        s.lcl_hitm,
        s.st_l1hit,
        s.st_l1miss
    )?;
    writeln!(
        out,
        "  {:>6}  {:>8}  {:>8}  {:>8}  {:>8}  {:>18}  {:>8}  {:>8}  {:>8}  {:>7}  {:>4}  {:<20}  {:<12}  Threads (pid/tid)",
        "Offset",
        "RmtHitm",
        "LclHitm",
        "StL1Hit",
        "StL1Miss",
        "Code address",
        "rmt-cyc",
        "lcl-cyc",
        "load-cyc",
        "Records",
        "CPUs",
        "Symbol",
        "Object",
    )?;
    let pct = hwprof_analysis::percent;
    for a in &l.accesses {
        let c = a.stats.cycles();
        let threads: Vec<String> = a.threads.iter().map(|(p, t)| format!("{p}/{t}")).collect();
        writeln!(
            out,
            "  {:>#6x}  {:>7.2}%  {:>7.2}%  {:>7.2}%  {:>7.2}%  {:>#18x}  {:>8.0}  {:>8.0}  {:>8.0}  {:>7}  {:>4}  {:<20}  {:<12}  {}",
            a.offset,
            pct(a.stats.rmt_hitm, s.rmt_hitm),
            pct(a.stats.lcl_hitm, s.lcl_hitm),
            pct(a.stats.st_l1hit, s.st_l1hit),
            pct(a.stats.st_l1miss, s.st_l1miss),
            a.ip,
            c.remote_hitm,
            c.local_hitm,
            c.other_loads,
            a.stats.records,
            a.cpus,
            escape(&a.function),
            escape(&a.module),
            threads.join(" "),
        )?;
    }
    writeln!(out)
}
