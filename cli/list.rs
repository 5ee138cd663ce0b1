//! `hwprof list`: every event this machine (or a `--cpu` model) offers, marking what this
//! machine can count.

use std::io::Write;

use hwprof_pmu::attr::{Attr, types};
use hwprof_pmu::counter::accepts;
use hwprof_pmu::cpu::CpuId;
use hwprof_pmu::event::{HARDWARE, SOFTWARE, canonical_cache_names};
use hwprof_pmu::sysfs;
use serde::Serialize;

use crate::args::ListArgs;

#[derive(Serialize)]
struct Entry {
    name: String,
    kind: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    aliases: Vec<String>,
    supported: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    category: String,
    desc: String,
}

/// `PATTERN` matches `s`, ignoring case: a glob when it has a `*`, else a substring.
fn glob_or_contains(pat: &str, s: &str) -> bool {
    let (p, s) = (pat.to_ascii_lowercase(), s.to_ascii_lowercase());
    if !p.contains('*') {
        return s.contains(&p);
    }
    hwprof_pmu::event::glob(&p, &s)
}

pub fn run(a: ListArgs) -> anyhow::Result<()> {
    let enc = crate::encode::encoder(a.cpu.as_deref(), &a.event_file)?;
    let host_model = CpuId::host().and_then(|c| c.table_model());
    let core_ok = enc.host_has_cpu_pmu() && (a.cpu.is_none() || enc.model() == host_model);
    let mut v: Vec<Entry> = Vec::new();
    for (table, type_, kind, desc) in [
        (HARDWARE, types::HARDWARE, "hardware", "Hardware event"),
        (SOFTWARE, types::SOFTWARE, "software", "Software event"),
    ] {
        let mut configs: Vec<u64> = table.iter().map(|&(_, c)| c).collect();
        configs.dedup();
        for config in configs {
            let mut names = table
                .iter()
                .filter(|&&(_, c)| c == config)
                .map(|&(n, _)| n.to_string());
            let Some(name) = names.next() else { continue };
            let supported =
                (type_ == types::SOFTWARE || core_ok) && accepts(&Attr::new(type_, config));
            v.push(Entry {
                name,
                kind,
                aliases: names.collect(),
                supported,
                category: String::new(),
                desc: desc.into(),
            });
        }
    }
    for name in canonical_cache_names() {
        v.push(Entry {
            name,
            kind: "hw_cache",
            aliases: Vec::new(),
            supported: core_ok,
            category: String::new(),
            desc: "Hardware cache event".into(),
        });
    }
    for p in enc.pmus() {
        for (alias, terms) in &p.aliases {
            v.push(Entry {
                name: format!("{}/{alias}/", p.name),
                kind: "pmu",
                aliases: Vec::new(),
                supported: true,
                category: String::new(),
                desc: format!("Kernel PMU event ({terms})"),
            });
        }
    }
    for t in enc.tables() {
        for e in t.events() {
            let cat = serde_json::to_value(e.category)
                .ok()
                .and_then(|c| c.as_str().map(String::from))
                .unwrap_or_default();
            let desc = if e.desc.is_empty() {
                format!("{} ({})", e.terms, t.source)
            } else {
                e.desc.clone()
            };
            let name = if e.pmu == "cpu" {
                e.name.clone()
            } else {
                format!("{}/{}/", e.pmu, e.name)
            };
            v.push(Entry {
                name,
                kind: "vendor",
                aliases: Vec::new(),
                supported: core_ok,
                category: cat,
                desc,
            });
        }
    }
    let mut tp_note = None;
    match sysfs::tracefs() {
        Ok(tfs) => {
            for tp in sysfs::tracepoints(&tfs) {
                v.push(Entry {
                    name: tp,
                    kind: "tracepoint",
                    aliases: Vec::new(),
                    supported: true,
                    category: String::new(),
                    desc: "Tracepoint event".into(),
                });
            }
        }
        Err(e) => tp_note = Some(e.to_string()),
    }
    if let Some(p) = &a.pattern {
        v.retain(|e| {
            e.kind.eq_ignore_ascii_case(p)
                || glob_or_contains(p, &e.name)
                || e.aliases.iter().any(|a| glob_or_contains(p, a))
        });
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
                    .map(|t| t.source.as_str())
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
            if kind == "vendor" {
                writeln!(
                    out,
                    "  {:<48} [{}]{mark}\n      {}",
                    e.name, e.category, e.desc
                )?;
            } else {
                let names = std::iter::once(e.name.as_str())
                    .chain(e.aliases.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" OR ");
                writeln!(out, "  {names:<48} [{title}]{mark}")?;
            }
        }
    }
    if let Some(n) = tp_note {
        writeln!(out, "\n(tracepoints not listed: {n})")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn patterns() {
        use super::glob_or_contains as g;
        assert!(g("MEM_LOAD", "MEM_LOAD_RETIRED.L3_MISS"));
        assert!(g("mem_load*miss", "MEM_LOAD_RETIRED.L3_MISS"));
        assert!(g("sched:*", "sched:sched_switch"));
        assert!(!g("sched:*", "irq:irq_handler_entry"));
        assert!(!g("*miss", "MEM_LOAD_RETIRED.L3_HIT"));
    }
}
