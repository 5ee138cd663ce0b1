//! Every event an encoder knows, marked with what this machine can count: the generic
//! hardware and software events, hw-cache names, PMU aliases from sysfs, the vendor
//! tables, and the tracepoints in tracefs. What `hwprof list` shows.

use serde::Serialize;

use crate::attr::{Attr, types};
use crate::counter::accepts;
use crate::cpu::CpuId;
use crate::event::{Encoder, HARDWARE, SOFTWARE, canonical_cache_names, glob};
use crate::sysfs;

/// One event.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    /// The name to give `-e`.
    pub name: String,
    /// `hardware`, `software`, `hw_cache`, `pmu`, `vendor` or `tracepoint`.
    pub kind: &'static str,
    /// Other names of the same event.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// This machine can count it.
    pub supported: bool,
    /// The vendor table's category.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub category: String,
    /// What it counts.
    pub desc: String,
}

impl Entry {
    fn new(name: String, kind: &'static str, supported: bool, desc: String) -> Entry {
        Entry {
            name,
            kind,
            aliases: Vec::new(),
            supported,
            category: String::new(),
            desc,
        }
    }

    /// `pattern` names this entry's kind, or matches its name or an alias (see
    /// [`glob_or_contains`]).
    pub fn matches(&self, pattern: &str) -> bool {
        self.kind.eq_ignore_ascii_case(pattern)
            || glob_or_contains(pattern, &self.name)
            || self.aliases.iter().any(|a| glob_or_contains(pattern, a))
    }
}

/// `pat` matches `s`, ignoring case: a glob when it has a `*`, else a substring.
pub fn glob_or_contains(pat: &str, s: &str) -> bool {
    let (p, s) = (pat.to_ascii_lowercase(), s.to_ascii_lowercase());
    if !p.contains('*') {
        return s.contains(&p);
    }
    glob(&p, &s)
}

/// The events of `enc`, and why tracepoints are missing when tracefs cannot be read.
/// `other_model`: the encoder is for a CPU model that was asked for (`--cpu`): its
/// hardware events count here only when it is this machine's model.
pub fn entries(enc: &Encoder, other_model: bool) -> (Vec<Entry>, Option<String>) {
    let host_model = CpuId::host().and_then(|c| c.table_model());
    let core_ok = enc.host_has_cpu_pmu() && (!other_model || enc.model() == host_model);
    let mut v: Vec<Entry> = Vec::new();
    for (table, type_, kind, desc) in [
        (HARDWARE, types::HARDWARE, "hardware", "Hardware event"),
        (SOFTWARE, types::SOFTWARE, "software", "Software event"),
    ] {
        for e in table {
            let mut names = e.names.iter().map(|n| n.to_string());
            let Some(name) = names.next() else { continue };
            let supported =
                (type_ == types::SOFTWARE || core_ok) && accepts(&Attr::new(type_, e.config));
            v.push(Entry {
                aliases: names.collect(),
                ..Entry::new(name, kind, supported, desc.into())
            });
        }
    }
    for name in canonical_cache_names() {
        let desc = "Hardware cache event".into();
        v.push(Entry::new(name, "hw_cache", core_ok, desc));
    }
    for p in enc.pmus() {
        for (alias, terms) in &p.aliases {
            let name = format!("{}/{alias}/", p.name);
            let desc = format!("Kernel PMU event ({terms})");
            v.push(Entry::new(name, "pmu", true, desc));
        }
    }
    for t in enc.tables() {
        for e in t.events() {
            let category = serde_json::to_value(e.category)
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
                category,
                ..Entry::new(name, "vendor", core_ok, desc)
            });
        }
    }
    let mut tp_note = None;
    match sysfs::tracefs() {
        Ok(tfs) => {
            for tp in sysfs::tracepoints(&tfs) {
                v.push(Entry::new(
                    tp,
                    "tracepoint",
                    true,
                    "Tracepoint event".into(),
                ));
            }
        }
        Err(e) => tp_note = Some(e.to_string()),
    }
    (v, tp_note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        let g = glob_or_contains;
        assert!(g("MEM_LOAD", "MEM_LOAD_RETIRED.L3_MISS"));
        assert!(g("mem_load*miss", "MEM_LOAD_RETIRED.L3_MISS"));
        assert!(g("sched:*", "sched:sched_switch"));
        assert!(!g("sched:*", "irq:irq_handler_entry"));
        assert!(!g("*miss", "MEM_LOAD_RETIRED.L3_HIT"));
    }

    #[test]
    fn software_events_are_listed_and_counted() {
        let (v, _) = entries(&Encoder::host(), false);
        let tc = v
            .iter()
            .find(|e| e.name == "task-clock")
            .expect("task-clock");
        assert_eq!(tc.kind, "software");
        assert!(tc.supported && tc.matches("TASK") && tc.matches("software"));
    }
}
