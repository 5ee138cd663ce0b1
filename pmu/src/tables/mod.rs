//! Named vendor events: built-in tables of the events users reach for on each model, and
//! a loader for Intel perfmon-format JSON (`--event-file`) that gives any model's full
//! catalog.
//!
//! An event is stored as the `pmu/terms/` text it stands for (`event=0xd1,umask=0x20`), so
//! table events, file events and hand-written `cpu/.../` events share one encoder.

mod amd;
mod intel;
mod perfmon;

use std::collections::HashMap;

use serde::Serialize;

use crate::cpu::{Model, Vendor};

pub use perfmon::load_perfmon_json;

/// What an event is about, for `hwprof list` grouping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Core pipeline: cycles, instructions, uops.
    Pipeline,
    /// TopDown level 1 (slots, retiring, bad speculation, frontend/backend bound).
    TopDown,
    /// Cache hits/misses at L1D, L2, L3/LLC.
    Cache,
    /// Memory: fills from DRAM, bandwidth, remote memory.
    Memory,
    /// PEBS load-latency sampling (`ldlat`).
    LoadLatency,
    /// TLB and page walks.
    Tlb,
    /// Branches and mispredictions.
    Branch,
    /// Front end (i-cache, decoders, DSB).
    Frontend,
    /// Anything else.
    Other,
}

/// A table entry in source form: the static shape of the built-in tables.
#[derive(Clone, Copy, Debug)]
pub struct NamedEvent {
    /// Vendor name, e.g. `MEM_LOAD_RETIRED.L3_MISS` or `ls_dmnd_fills_from_sys.dram_io_near`.
    pub name: &'static str,
    /// PMU it belongs to: `cpu`, or `cpu_core` / `cpu_atom` on hybrids.
    pub pmu: &'static str,
    /// Format terms, e.g. `event=0xd1,umask=0x20`.
    pub terms: &'static str,
    /// Grouping.
    pub category: Category,
    /// Supports precise sampling (PEBS / IBS).
    pub precise: bool,
    /// One-line description.
    pub desc: &'static str,
}

/// An event definition from a table or an event file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EventDef {
    /// Vendor name as published.
    pub name: String,
    /// PMU name.
    pub pmu: String,
    /// Format terms.
    pub terms: String,
    /// Grouping.
    pub category: Category,
    /// Supports precise sampling.
    pub precise: bool,
    /// Description.
    pub desc: String,
}

impl From<&NamedEvent> for EventDef {
    fn from(e: &NamedEvent) -> Self {
        EventDef {
            name: e.name.to_string(),
            pmu: e.pmu.to_string(),
            terms: e.terms.to_string(),
            category: e.category,
            precise: e.precise,
            desc: e.desc.to_string(),
        }
    }
}

/// The CPU a table is for, as far as its source says (a built-in table's model; an
/// event file's name, folder, header or a `mapfile.csv` next to it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableCpu {
    /// The vendor whose PMU layout the events use.
    pub vendor: Vendor,
    /// The model, when known.
    pub model: Option<Model>,
    /// CPUIDs that a `mapfile.csv` maps to the file (`GenuineIntel-6-55`).
    pub cpuids: Vec<String>,
}

impl TableCpu {
    /// `Intel skylakex (GenuineIntel-6-55)`, `Intel CPUs`, `AMD zen4`.
    pub fn describe(&self) -> String {
        let mut s = vendor_name(self.vendor).to_string();
        match self.model {
            Some(m) => {
                s.push(' ');
                s.push_str(m.name());
            }
            None => s.push_str(" CPUs"),
        }
        if !self.cpuids.is_empty() {
            let shown: Vec<&str> = self.cpuids.iter().take(3).map(String::as_str).collect();
            let more = if self.cpuids.len() > 3 { ", ..." } else { "" };
            s.push_str(&format!(" ({}{more})", shown.join(", ")));
        }
        s
    }
}

/// `Intel`, `AMD`, or `another vendor`.
pub fn vendor_name(v: Vendor) -> &'static str {
    match v {
        Vendor::Intel => "Intel",
        Vendor::Amd => "AMD",
        Vendor::Other => "another vendor",
    }
}

/// The models whose built-in table has an event of this name (case-insensitive).
pub fn models_with(name: &str) -> Vec<Model> {
    Model::ALL
        .into_iter()
        .filter(|&m| {
            builtin_events(m)
                .iter()
                .any(|e| e.name.eq_ignore_ascii_case(name))
        })
        .collect()
}

/// The built-in models of a vendor, comma-separated (`skylake, skylakex, ...`).
pub fn models_of(vendor: Vendor) -> String {
    Model::ALL
        .into_iter()
        .filter(|m| m.vendor() == vendor)
        .map(Model::name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A set of named events with case-insensitive lookup.
#[derive(Clone, Debug, Default)]
pub struct EventTable {
    /// Where the table came from (`built-in skylake`, a file path).
    pub source: String,
    /// The CPU the table is for, when its source says.
    pub cpu: Option<TableCpu>,
    events: Vec<EventDef>,
    index: HashMap<String, usize>,
}

impl EventTable {
    /// Builds a table; later duplicates of a name are ignored.
    pub fn new(source: impl Into<String>, events: Vec<EventDef>) -> EventTable {
        let mut index = HashMap::with_capacity(events.len());
        for (i, e) in events.iter().enumerate() {
            index.entry(e.name.to_ascii_lowercase()).or_insert(i);
        }
        EventTable {
            source: source.into(),
            cpu: None,
            events,
            index,
        }
    }

    /// The same table, marked as being for `cpu`.
    pub fn with_cpu(mut self, cpu: Option<TableCpu>) -> EventTable {
        self.cpu = cpu;
        self
    }

    /// The built-in table of a model.
    pub fn builtin(model: Model) -> EventTable {
        let src = builtin_events(model);
        EventTable::new(
            format!("built-in {model}"),
            src.iter().map(EventDef::from).collect(),
        )
        .with_cpu(Some(TableCpu {
            vendor: model.vendor(),
            model: Some(model),
            cpuids: Vec::new(),
        }))
    }

    /// Looks an event up by name, ignoring case.
    pub fn get(&self, name: &str) -> Option<&EventDef> {
        self.index
            .get(&name.to_ascii_lowercase())
            .map(|&i| &self.events[i])
    }

    /// Looks an event up by name on one PMU (hybrid models list a name once per PMU).
    pub fn get_on(&self, pmu: &str, name: &str) -> Option<&EventDef> {
        self.events
            .iter()
            .find(|e| e.pmu == pmu && e.name.eq_ignore_ascii_case(name))
    }

    /// All events in table order.
    pub fn events(&self) -> &[EventDef] {
        &self.events
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

/// The static built-in events of a model.
pub fn builtin_events(model: Model) -> &'static [NamedEvent] {
    match model {
        Model::Skylake => intel::SKYLAKE,
        Model::SkylakeX => intel::SKYLAKEX,
        Model::IceLake => intel::ICELAKE,
        Model::SapphireRapids => intel::SAPPHIRERAPIDS,
        Model::AlderLake => intel::ALDERLAKE,
        Model::Zen2 => amd::ZEN2,
        Model::Zen3 => amd::ZEN3,
        Model::Zen4 => amd::ZEN4,
        Model::Zen5 => amd::ZEN5,
    }
}
