//! `hwprof list`: every event this machine (or a `--cpu` model) offers, marking what this
//! machine can count.

use std::io::Write;

use hwprof_pmu::catalog::{self, Entry};

use crate::args::ListArgs;
use crate::render::escape;

pub fn run(a: ListArgs) -> anyhow::Result<()> {
    let enc = crate::events::encoder(a.cpu.as_deref(), &a.events.event_file)?;
    let (mut v, tp_note) = catalog::entries(&enc, a.cpu.is_some());
    if let Some(p) = &a.pattern {
        v.retain(|e| e.matches(p));
    }
    let out = std::io::stdout();
    let mut out = out.lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
        return Ok(());
    }
    let kinds = [
        ("hardware", "Hardware event"),
        ("software", "Software event"),
        ("hw_cache", "Hardware cache event"),
        ("pmu", "Kernel PMU event"),
        ("vendor", "Named CPU event"),
        ("tracepoint", "Tracepoint event"),
    ];
    for (kind, title) in kinds {
        let rows: Vec<&Entry> = v.iter().filter(|e| e.kind == kind).collect();
        if rows.is_empty() {
            continue;
        }
        let extra = if kind == "vendor" {
            format!(
                " ({})",
                enc.tables()
                    .iter()
                    .map(|t| escape(&t.source))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            String::new()
        };
        writeln!(out, "\n{title}s{extra}:")?;
        for e in rows {
            let mark = if e.supported {
                ""
            } else {
                "  <not supported here>"
            };
            // Names and descriptions come from event files and tracefs: escaped.
            if kind == "vendor" {
                writeln!(
                    out,
                    "  {:<48} [{}]{mark}\n      {}",
                    escape(&e.name),
                    escape(&e.category),
                    escape(&e.desc)
                )?;
            } else {
                let names = std::iter::once(e.name.as_str())
                    .chain(e.aliases.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" OR ");
                writeln!(out, "  {:<48} [{title}]{mark}", escape(&names))?;
            }
        }
    }
    if let Some(n) = tp_note {
        writeln!(out, "\n(tracepoints not listed: {})", escape(&n))?;
    }
    Ok(())
}
