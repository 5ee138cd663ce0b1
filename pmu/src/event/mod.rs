//! From event strings to `perf_event_attr`s: [`Encoder::parse`] applies perf's grammar
//! ([`parse`]) and resolves every name against the kernel's generic events, sysfs PMUs,
//! the vendor tables of the CPU model, tracefs, and ELF symbols for uprobes.

mod names;
pub mod parse;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::attr::{Attr, bp, types};
use crate::cpu::{CpuId, Model, Vendor};
use crate::error::{Error, Result, nearest};
use crate::format::{self, Format};
use crate::sysfs::{self, Pmu};
use crate::tables::{self, EventDef, EventTable};
use parse::{EventAst, Item, Kind, parse_num};

pub use names::{
    Generic, HARDWARE, SOFTWARE, all_names as generic_names, attr_name, canonical_cache_names,
};

/// What kind of PMU an event lives on; decides defaults and fallbacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// A CPU core PMU: generic hardware, hw-cache, raw, vendor and `cpu/../` events.
    Core,
    /// A software event.
    Software,
    /// A tracepoint.
    Tracepoint,
    /// A hardware breakpoint.
    Breakpoint,
    /// A uprobe or uretprobe.
    Uprobe,
    /// Another PMU (msr, uncore...).
    Other,
}

/// One event, ready to open.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Event {
    /// Display name (`cycles:u`, `MEM_LOAD_RETIRED.L3_MISS`, `msr/tsc/`).
    pub name: String,
    /// PMU name (`hardware`, `software`, `cpu`, `msr`, `tracepoint`...).
    pub pmu: String,
    /// Kind of PMU.
    pub class: Class,
    /// The attr to pass.
    pub attr: Attr,
    /// Index of the group leader in the list (its own index when it leads).
    pub leader: usize,
    /// Whether the user wrote modifiers (no automatic privilege fallback then).
    pub explicit_mods: bool,
}

/// Events in order, with their group structure.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EventList {
    /// The events; a group's members follow its leader.
    pub events: Vec<Event>,
}

impl EventList {
    /// The groups as index ranges (a lone event is a group of one).
    pub fn groups(&self) -> Vec<std::ops::Range<usize>> {
        let mut out: Vec<std::ops::Range<usize>> = Vec::new();
        for (i, e) in self.events.iter().enumerate() {
            match out.last_mut() {
                Some(r) if e.leader != i && e.leader == r.start => r.end = i + 1,
                _ => out.push(i..i + 1),
            }
        }
        out
    }

    /// Appends another list, keeping its group structure.
    pub fn extend(&mut self, other: EventList) {
        let base = self.events.len();
        for mut e in other.events {
            e.leader += base;
            self.events.push(e);
        }
    }
}

/// Resolves event strings for one machine or one CPU model.
#[derive(Debug)]
pub struct Encoder {
    model: Option<Model>,
    vendor: Vendor,
    foreign: bool,
    /// This machine's CPU, for messages (`None` with `--cpu`).
    cpu: Option<CpuId>,
    pmus: Vec<Pmu>,
    tables: Vec<EventTable>,
    tracefs: std::cell::OnceCell<Result<PathBuf>>,
    /// The processes probed (`-p`): a uprobe's bare library name is looked for in their
    /// mappings first ([`crate::probe::locate`]).
    processes: Vec<i32>,
    /// Reading the PMUs ran out of file descriptors (EMFILE, ENFILE): a PMU or term
    /// that seems missing is that.
    fds_exhausted: Option<i32>,
}

/// A PMU's type number, format and event aliases.
type PmuDef = (u32, Format, Vec<(String, String)>);

/// Built-in type numbers of hybrid core PMUs when encoding for a CPU we are not on
/// (read from a real Alder Lake capture: cpu_core = 4, cpu_atom = 7).
const HYBRID_TYPES: [(&str, u32); 2] = [("cpu_core", 4), ("cpu_atom", 7)];

impl Encoder {
    /// An encoder for this machine: sysfs PMUs and the table of the host CPU model.
    pub fn host() -> Encoder {
        Self::for_host_cpu(CpuId::host())
    }

    /// [`Encoder::host`] for the CPU `id` says this machine has (tests give others).
    fn for_host_cpu(id: Option<CpuId>) -> Encoder {
        let model = id.as_ref().and_then(CpuId::table_model);
        let vendor = id.as_ref().map_or(Vendor::Other, |i| i.vendor);
        let mut enc = Self::build(model, vendor, false);
        enc.cpu = id;
        enc
    }

    /// An encoder for `model`, used to encode for a CPU we may not be on: core PMU
    /// formats and types are the built-in ones; other PMUs still come from sysfs.
    pub fn for_model(model: Model) -> Encoder {
        Self::build(Some(model), model.vendor(), true)
    }

    fn build(model: Option<Model>, vendor: Vendor, foreign: bool) -> Encoder {
        let tables = model.map(EventTable::builtin).into_iter().collect();
        let (pmus, fds_exhausted) = sysfs::pmus_noting_fds();
        Encoder {
            model,
            vendor,
            foreign,
            cpu: None,
            pmus,
            fds_exhausted,
            tables,
            tracefs: Default::default(),
            processes: Vec::new(),
        }
    }

    /// The model whose tables are in use.
    pub fn model(&self) -> Option<Model> {
        self.model
    }

    /// Sysfs PMUs of this machine.
    pub fn pmus(&self) -> &[Pmu] {
        &self.pmus
    }

    /// Tables in lookup order (event files first).
    pub fn tables(&self) -> &[EventTable] {
        &self.tables
    }

    /// Whether this machine's kernel exposes a core CPU PMU.
    pub fn host_has_cpu_pmu(&self) -> bool {
        sysfs::has_cpu_pmu(&self.pmus)
    }

    /// The processes the events will be opened on (`-p`): a uprobe's bare library name
    /// (`uprobe:libc:malloc`) is looked for in their mappings before the loader's cache.
    pub fn set_processes(&mut self, pids: &[i32]) {
        self.processes = pids.to_vec();
    }

    /// Adds an Intel perfmon JSON file; its events take precedence over built-in ones.
    pub fn add_event_file(&mut self, path: &Path) -> Result<()> {
        let pmu = if self.is_hybrid() { "cpu_core" } else { "cpu" };
        let t = crate::tables::load_perfmon_json(path, pmu)?;
        self.tables.insert(0, t);
        Ok(())
    }

    fn is_hybrid(&self) -> bool {
        if self.foreign {
            self.model.is_some_and(Model::is_hybrid)
        } else {
            self.pmus.iter().any(|p| p.name == "cpu_core")
        }
    }

    /// The core PMUs generic events expand to: `[("cpu", 4)]`, or both hybrid PMUs.
    fn core_pmus(&self) -> Vec<(String, u32)> {
        if !self.is_hybrid() {
            return vec![("cpu".into(), types::RAW)];
        }
        HYBRID_TYPES
            .iter()
            .map(|&(n, t)| {
                let t = if self.foreign {
                    t
                } else {
                    self.pmus
                        .iter()
                        .find(|p| p.name == n)
                        .map_or(t, |p| p.type_)
                };
                (n.to_string(), t)
            })
            .collect()
    }

    /// The error to give for a PMU or term that seems missing when reading sysfs ran
    /// out of file descriptors.
    fn fds_error(&self) -> Option<Error> {
        self.fds_exhausted.map(|n| {
            Error::io(
                format!(
                    "reading the PMUs in {} ({})",
                    sysfs::PMU_ROOT,
                    crate::error::fds_hint(n)
                ),
                std::io::Error::from_raw_os_error(n),
            )
        })
    }

    /// Type and format of a PMU by name: sysfs, or the built-in core layouts.
    fn pmu(&self, name: &str) -> Result<PmuDef> {
        let is_core = matches!(name, "cpu" | "cpu_core" | "cpu_atom");
        if !(self.foreign && is_core) {
            if let Some(p) = self.pmus.iter().find(|p| p.name == name) {
                return Ok((p.type_, p.format.clone(), p.aliases.clone()));
            }
        }
        let builtin = match (name, self.vendor, self.is_hybrid()) {
            ("cpu", Vendor::Amd, _) => Some((types::RAW, format::AMD_CORE)),
            ("cpu", Vendor::Intel, false) => Some((types::RAW, format::INTEL_CORE)),
            ("cpu_core", Vendor::Intel, true) => {
                Some((self.core_type("cpu_core"), format::INTEL_CORE))
            }
            ("cpu_atom", Vendor::Intel, true) => {
                Some((self.core_type("cpu_atom"), format::INTEL_ATOM))
            }
            _ => None,
        };
        match builtin {
            Some((t, f)) => Ok((t, Format::from_pairs(f), Vec::new())),
            None => {
                if let Some(e) = self.fds_error() {
                    return Err(e);
                }
                let mut known: Vec<&str> = self.pmus.iter().map(|p| p.name.as_str()).collect();
                known.push("cpu");
                let list = "`hwprof list` shows the PMUs of this machine".to_string();
                let near = nearest(name, known);
                let (suggestion, hint) = if matches!(name, "cpu_core" | "cpu_atom") {
                    (
                        Some("cpu".to_string()),
                        "cpu_core and cpu_atom are the core PMUs of hybrid CPUs (Alder Lake and later); other CPUs have one, 'cpu'".to_string(),
                    )
                } else if near.is_none() && !self.foreign && !self.host_has_cpu_pmu() {
                    // Not a typo: most likely a hardware PMU this machine does not expose.
                    let names: Vec<&str> = self.pmus.iter().map(|p| p.name.as_str()).collect();
                    (
                        None,
                        format!(
                            "this machine exposes no hardware PMUs (usual in VMs and containers), only {}",
                            names.join(", ")
                        ),
                    )
                } else {
                    (near, list)
                };
                Err(Error::UnknownPmu {
                    name: name.to_string(),
                    suggestion,
                    hint,
                })
            }
        }
    }

    fn core_type(&self, name: &str) -> u32 {
        self.core_pmus()
            .into_iter()
            .find(|(n, _)| n == name)
            .map_or(types::RAW, |(_, t)| t)
    }

    fn table_event(&self, name: &str) -> Option<&EventDef> {
        self.tables.iter().find_map(|t| t.get(name))
    }

    /// The table event of that name, refused when its table is an event file for
    /// another vendor's CPU: its terms would be encoded in the wrong PMU layout (or name
    /// terms this PMU does not have, such as Intel's `offcore_rsp` on AMD).
    fn usable_table_event(&self, name: &str) -> Result<Option<&EventDef>> {
        let Some((table, def)) = self.tables.iter().find_map(|t| t.get(name).map(|d| (t, d)))
        else {
            return Ok(None);
        };
        let Some(tc) = &table.cpu else {
            return Ok(Some(def));
        };
        if tc.vendor == Vendor::Other || self.vendor == Vendor::Other || tc.vendor == self.vendor {
            return Ok(Some(def));
        }
        let here = self.count_here("an event file for this CPU");
        let hint = match tc.model {
            Some(m) => format!(
                "pass --cpu {m} to encode its events for that CPU (`hwprof encode --cpu {m} --event-file FILE -e {}`){here}",
                def.name,
            ),
            None => format!(
                "pass --cpu with an {} model ({}) to encode its events{here}",
                tables::vendor_name(tc.vendor),
                tables::models_of(tc.vendor),
            ),
        };
        Err(Error::EventFileForOtherCpu {
            name: def.name.clone(),
            path: table.source.clone(),
            file_cpu: tc.describe(),
            this: self.describe_target(),
            hint,
        })
    }

    /// How to count on this machine instead (`; to count here, use WHAT`), or that
    /// nothing counts CPU events here; nothing with `--cpu`.
    fn count_here(&self, what: &str) -> String {
        if self.foreign {
            String::new()
        } else if self.host_has_cpu_pmu() {
            format!("; to count here, use {what}")
        } else {
            "; counting CPU events here needs a hardware PMU, which this machine does not expose (usual in VMs)".to_string()
        }
    }

    /// What events are encoded for, in messages: `this CPU (AMD zen5, "AMD EPYC")`, or
    /// `--cpu zen4`.
    fn describe_target(&self) -> String {
        if self.foreign {
            return match self.model {
                Some(m) => format!("--cpu {m}"),
                None => "the --cpu model".to_string(),
            };
        }
        let Some(id) = &self.cpu else {
            return "this CPU (/proc/cpuinfo does not say which)".to_string();
        };
        let brand = if id.brand.is_empty() {
            String::new()
        } else {
            format!(", \"{}\"", id.brand)
        };
        match self.model {
            Some(m) => format!("this CPU ({} {m}{brand})", tables::vendor_name(id.vendor)),
            None => format!("this CPU ({}{brand})", family_model(id)),
        }
    }

    /// Parses an event list (`-e` argument) into events with their attrs.
    pub fn parse(&self, input: &str) -> Result<EventList> {
        let mut list = EventList::default();
        for item in parse::parse_list(input)? {
            match item {
                Item::Event(ev) => {
                    for e in self.resolve(&ev, "")? {
                        let i = list.events.len();
                        list.events.push(Event { leader: i, ..e });
                    }
                }
                Item::Group(members, gmods) => {
                    let leader = list.events.len();
                    for m in &members {
                        for e in self.resolve(m, &gmods)? {
                            list.events.push(Event { leader, ..e });
                        }
                    }
                }
            }
        }
        Ok(list)
    }

    /// Resolves one event; generic events on hybrids and tracepoint globs give several.
    fn resolve(&self, ev: &EventAst, group_mods: &str) -> Result<Vec<Event>> {
        let mods = format!("{}{}", ev.mods, group_mods);
        let mut out = Vec::new();
        match &ev.kind {
            Kind::Name(name) => {
                if let Some((t, c)) = names::lookup(name) {
                    if t == types::SOFTWARE {
                        out.push(self.finish(
                            ev,
                            Attr::new(t, c),
                            "software",
                            Class::Software,
                            &mods,
                        )?);
                    } else if self.is_hybrid() {
                        for (pmu, ptype) in self.core_pmus() {
                            let attr = Attr::new(t, c | (u64::from(ptype) << 32));
                            let mut e = self.finish(ev, attr, &pmu, Class::Core, &mods)?;
                            e.name = format!("{pmu}/{}/{}", name, mod_suffix(&mods));
                            out.push(e);
                        }
                    } else {
                        let pmu = if t == types::HW_CACHE {
                            "hw_cache"
                        } else {
                            "hardware"
                        };
                        out.push(self.finish(ev, Attr::new(t, c), pmu, Class::Core, &mods)?);
                    }
                } else if let Some(def) = self.usable_table_event(name)? {
                    let (t, f, _) = self.pmu(&def.pmu)?;
                    let mut attr = Attr::new(t, 0);
                    self.apply_terms(
                        &def.pmu,
                        &f,
                        &[],
                        &terms_of(&def.terms),
                        &mut attr,
                        &mut None,
                    )?;
                    let mut e = self.finish(ev, attr, &def.pmu, Class::Core, &mods)?;
                    e.name = format!("{}{}", def.name, mod_suffix(&mods));
                    out.push(e);
                } else if let Some(p) = self.pmus.iter().find(|p| p.alias(name).is_some()) {
                    let terms = vec![(name.clone(), None)];
                    let mut attr = Attr::new(p.type_, 0);
                    self.apply_terms(&p.name, &p.format, &p.aliases, &terms, &mut attr, &mut None)?;
                    let mut e = self.finish(ev, attr, &p.name, class_of_pmu(&p.name), &mods)?;
                    e.name = format!("{}/{}/{}", p.name, name, mod_suffix(&mods));
                    out.push(e);
                } else {
                    return Err(self.unknown(name));
                }
            }
            Kind::Raw(config) => out.push(self.finish(
                ev,
                Attr::new(types::RAW, *config),
                "cpu",
                Class::Core,
                &mods,
            )?),
            Kind::Pmu { pmu, terms } => {
                let (t, f, aliases) = self.pmu(pmu)?;
                let mut attr = Attr::new(t, 0);
                let mut display = None;
                self.apply_terms(pmu, &f, &aliases, terms, &mut attr, &mut display)?;
                if pmu == "uprobe" {
                    return Err(Error::Probe {
                        target: ev.text.clone(),
                        reason: "use uprobe:/path:func (hwprof resolves the offset)".into(),
                    });
                }
                let mut e = self.finish(ev, attr, pmu, class_of_pmu(pmu), &mods)?;
                if let Some(n) = display {
                    e.name = n;
                }
                out.push(e);
            }
            Kind::Tracepoint { sys, name } => {
                if names::lookup(sys).is_some() || self.table_event(sys).is_some() {
                    return Err(Error::BadModifier {
                        event: ev.text.clone(),
                        modifier: name.clone(),
                    });
                }
                let tfs = self.tracefs_path()?;
                let globbed = [sys, name].iter().any(|s| s.contains(['*', '?']));
                let names: Vec<(String, String)> = if globbed {
                    let v: Vec<(String, String)> = sysfs::tracepoints(&tfs)
                        .into_iter()
                        .filter_map(|tp| {
                            let (s, n) = tp.split_once(':')?;
                            (glob(sys, s) && glob(name, n)).then(|| (s.to_string(), n.to_string()))
                        })
                        .collect();
                    if v.is_empty() {
                        return Err(Error::UnknownTracepoint {
                            name: format!("{sys}:{name}"),
                            suggestion: None,
                        });
                    }
                    v
                } else {
                    vec![(sys.clone(), name.clone())]
                };
                for (s, n) in names {
                    let id = sysfs::tracepoint_id(&tfs, &s, &n)?;
                    let mut e = self.finish(
                        ev,
                        Attr::new(types::TRACEPOINT, id),
                        "tracepoint",
                        Class::Tracepoint,
                        &mods,
                    )?;
                    e.name = format!("{s}:{n}{}", mod_suffix(&mods));
                    out.push(e);
                }
            }
            Kind::Breakpoint { addr, len, access } => {
                let bp_type = match access.as_str() {
                    "r" => bp::R,
                    "w" => bp::W,
                    "rw" | "wr" => bp::RW,
                    "x" => bp::X,
                    other => {
                        return Err(Error::Syntax {
                            input: ev.text.clone(),
                            reason: format!("access '{other}' is not r, w, rw or x"),
                        });
                    }
                };
                let len = match (*len, bp_type) {
                    (0, bp::X) => 8,
                    (0, _) => 4,
                    (l @ (1 | 2 | 4 | 8), _) => l,
                    (l, _) => {
                        return Err(Error::Syntax {
                            input: ev.text.clone(),
                            reason: format!("breakpoint length {l} is not 1, 2, 4 or 8"),
                        });
                    }
                };
                let mut attr = Attr::new(types::BREAKPOINT, 0);
                attr.bp_type = bp_type;
                attr.config1 = *addr;
                attr.config2 = len;
                out.push(self.finish(ev, attr, "breakpoint", Class::Breakpoint, &mods)?);
            }
            Kind::Uprobe {
                ret,
                path,
                func,
                offset,
            } => {
                let (t, f, _) = self.pmu("uprobe").map_err(|e| match e {
                    e @ Error::Io { .. } => e,
                    _ => Error::Probe {
                        target: ev.text.clone(),
                        reason: "this kernel has no uprobe PMU (/sys/bus/event_source/devices/uprobe); build it with CONFIG_UPROBE_EVENTS".into(),
                    },
                })?;
                let probe_error = |reason| Error::Probe {
                    target: ev.text.clone(),
                    reason,
                };
                let file = crate::probe::locate(path, &self.processes).map_err(probe_error)?;
                let resolved = crate::probe::resolve(&file.to_string_lossy(), func, *offset)
                    .map_err(probe_error)?;
                let mut attr = Attr::new(t, 0);
                if *ret {
                    let retprobe = f.term("retprobe").ok_or_else(|| {
                        self.fds_error().unwrap_or_else(|| Error::UnknownTerm {
                            pmu: "uprobe".into(),
                            term: "retprobe".into(),
                            known: f.names(),
                        })
                    })?;
                    let mut fields = [0u64; 4];
                    retprobe.apply(1, &mut fields)?;
                    attr.config = fields[0];
                }
                attr.config2 = resolved.file_offset;
                attr.uprobe_path = Some(resolved.path);
                out.push(self.finish(ev, attr, "uprobe", Class::Uprobe, &mods)?);
            }
        }
        Ok(out)
    }

    fn tracefs_path(&self) -> Result<PathBuf> {
        // Looked up once (it may mount tracefs); the error is rebuilt for each caller.
        match self.tracefs.get_or_init(sysfs::tracefs) {
            Ok(p) => Ok(p.clone()),
            Err(Error::TracefsDenied { path, mount }) => Err(Error::TracefsDenied {
                path: path.clone(),
                mount: mount.clone(),
            }),
            Err(Error::NoTracefs(reason)) => Err(Error::NoTracefs(reason.clone())),
            Err(other) => Err(Error::NoTracefs(other.to_string())),
        }
    }

    fn unknown(&self, name: &str) -> Error {
        let others: Vec<Model> = tables::models_with(name)
            .into_iter()
            .filter(|&m| Some(m) != self.model)
            .collect();
        if !others.is_empty() {
            return self.foreign_event(name, &others);
        }
        let mut cands = names::all_names();
        for t in &self.tables {
            cands.extend(t.events().iter().map(|e| e.name.clone()));
        }
        for p in &self.pmus {
            cands.extend(p.aliases.iter().map(|(n, _)| n.clone()));
        }
        Error::UnknownEvent {
            name: name.to_string(),
            suggestion: nearest(name, cands.iter().map(String::as_str)),
        }
    }

    /// `name` is in the built-in tables of `models` only, none of them the one in use:
    /// say whose event it is, what this CPU is, and how to proceed.
    fn foreign_event(&self, name: &str, models: &[Model]) -> Error {
        let list = models
            .iter()
            .map(|m| m.name())
            .collect::<Vec<_>>()
            .join(", ");
        let vendor = models[0].vendor();
        let whose = if models.iter().all(|m| m.vendor() == vendor) {
            format!("an {} event of {list}", tables::vendor_name(vendor))
        } else {
            format!("an event of {list}")
        };
        let example = models[0];
        let encode = format!("`hwprof encode --cpu {example} -e {name}` encodes it for {example}");
        let message = if self.foreign {
            format!(
                "'{name}' is {whose}, not an event of {}: pass --cpu {example} (or another of those models) to encode it, or --event-file FILE.json with a file that defines it",
                self.describe_target()
            )
        } else if let (None, Some(id)) = (self.model, &self.cpu) {
            // No table for this CPU: the name may well be right for it.
            let cpuid = family_model(id);
            format!(
                "'{name}' is {whose}, and hwprof has no built-in table for {}: give this CPU's event file with --event-file FILE.json (intel/perfmon's mapfile.csv names the file for {cpuid}), or {encode}",
                self.describe_target()
            )
        } else {
            format!(
                "'{name}' is {whose}, not an event of {}: {encode}{}",
                self.describe_target(),
                self.count_here(
                    "this CPU's events (`hwprof list`) or an event file for it (--event-file FILE.json)"
                )
            )
        };
        Error::ForeignEvent {
            name: name.to_string(),
            models: models.iter().map(|m| m.name().to_string()).collect(),
            message,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn apply_terms(
        &self,
        pmu: &str,
        f: &Format,
        aliases: &[(String, String)],
        terms: &[(String, Option<String>)],
        attr: &mut Attr,
        display: &mut Option<String>,
    ) -> Result<()> {
        let mut fields = [attr.config, attr.config1, attr.config2, attr.config3];
        for (k, v) in terms {
            let num = |v: &str| {
                parse_num(v).ok_or_else(|| Error::Syntax {
                    input: format!("{k}={v}"),
                    reason: "expected a number".into(),
                })
            };
            match (k.as_str(), v.as_deref()) {
                ("config", Some(v)) => fields[0] |= num(v)?,
                ("config1", Some(v)) => fields[1] |= num(v)?,
                ("config2", Some(v)) => fields[2] |= num(v)?,
                ("config3", Some(v)) => fields[3] |= num(v)?,
                ("name", Some(v)) => *display = Some(v.to_string()),
                ("period", Some(v)) => attr.sample_period = num(v)?,
                ("freq", Some(v)) => {
                    attr.sample_period = num(v)?;
                    attr.freq = true;
                }
                (term, value) => {
                    if let Some(ft) = f.term(term) {
                        ft.apply(value.map(num).transpose()?.unwrap_or(1), &mut fields)?;
                    } else if let (None, Some(expansion)) =
                        (value, self.expansion(pmu, aliases, term))
                    {
                        // An alias (sysfs `events/NAME`) or a vendor event name used as a term.
                        let mut sub = Attr {
                            config: fields[0],
                            config1: fields[1],
                            config2: fields[2],
                            config3: fields[3],
                            ..Attr::default()
                        };
                        self.apply_terms(pmu, f, &[], &terms_of(&expansion), &mut sub, &mut None)?;
                        fields = [sub.config, sub.config1, sub.config2, sub.config3];
                    } else {
                        let mut known = f.names();
                        for (a, _) in aliases {
                            known.push(',');
                            known.push_str(a);
                        }
                        return Err(self.fds_error().unwrap_or(Error::UnknownTerm {
                            pmu: pmu.to_string(),
                            term: term.to_string(),
                            known,
                        }));
                    }
                }
            }
        }
        [attr.config, attr.config1, attr.config2, attr.config3] = fields;
        Ok(())
    }

    /// The terms a bare term name stands for on `pmu`: a sysfs alias, or a table event.
    fn expansion(&self, pmu: &str, aliases: &[(String, String)], term: &str) -> Option<String> {
        if let Some((_, text)) = aliases.iter().find(|(n, _)| n.eq_ignore_ascii_case(term)) {
            return Some(text.clone());
        }
        self.tables
            .iter()
            .find_map(|t| t.get_on(pmu, term))
            .or_else(|| self.table_event(term).filter(|_| pmu == "cpu"))
            .map(|d| d.terms.clone())
    }

    /// Applies modifiers with perf's semantics and builds the event.
    fn finish(
        &self,
        ev: &EventAst,
        mut attr: Attr,
        pmu: &str,
        class: Class,
        mods: &str,
    ) -> Result<Event> {
        apply_modifiers(
            &mut attr,
            mods,
            class,
            self.model.map_or(0, Model::max_precise),
        )
        .map_err(|m| Error::BadModifier {
            event: ev.text.clone(),
            modifier: m,
        })?;
        // Show the modifiers that apply, including a group's (`{a,b}:u` -> `a:u`, `b:u`).
        let name = if mods.len() > ev.mods.len() {
            let sep = if ev.mods.is_empty() { ":" } else { "" };
            format!("{}{sep}{}", ev.text, &mods[ev.mods.len()..])
        } else {
            ev.text.clone()
        };
        Ok(Event {
            name,
            pmu: pmu.to_string(),
            class,
            attr,
            leader: 0,
            explicit_mods: !mods.is_empty(),
        })
    }
}

/// `GenuineIntel-6-3F`: perf's CPUID without the stepping, as mapfile.csv rows start.
fn family_model(id: &CpuId) -> String {
    let full = id.perf_cpuid();
    match full.rsplit_once('-') {
        Some((fm, _stepping)) => fm.to_string(),
        None => full,
    }
}

fn mod_suffix(mods: &str) -> String {
    if mods.is_empty() {
        String::new()
    } else {
        format!(":{mods}")
    }
}

fn class_of_pmu(pmu: &str) -> Class {
    match pmu {
        "cpu" | "cpu_core" | "cpu_atom" => Class::Core,
        "software" => Class::Software,
        "tracepoint" => Class::Tracepoint,
        "breakpoint" => Class::Breakpoint,
        "uprobe" => Class::Uprobe,
        _ => Class::Other,
    }
}

fn terms_of(text: &str) -> Vec<(String, Option<String>)> {
    text.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| match t.split_once('=') {
            Some((k, v)) => (k.trim().to_string(), Some(v.trim().to_string())),
            None => (t.to_string(), None),
        })
        .collect()
}

/// Shell-style glob over the whole of `s`: `*` matches any run of characters, `?` any one
/// character, everything else itself (case-sensitive). hwprof's one glob: tracepoint
/// names in events (`sched:sched_*`) and `hwprof list PATTERN`.
///
/// Linear in `pat.len() × s.len()` at worst: on a mismatch after a `*` only that last `*`
/// takes one more character (a match never needs an earlier `*` to take more), so
/// patterns like `*a*a*a*b` cannot make it explode.
pub fn glob(pat: &str, s: &str) -> bool {
    let (p, s): (Vec<char>, Vec<char>) = (pat.chars().collect(), s.chars().collect());
    let (mut pi, mut si) = (0, 0);
    // The last `*` seen and the position in `s` it has taken up to.
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(&c) if c == '?' || c == s[si] => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                Some((sp, taken)) => {
                    star = Some((sp, taken + 1));
                    pi = sp + 1;
                    si = taken + 1;
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Applies perf's modifier semantics:
/// - `u`/`k`/`h`: count only the listed levels (the first one excludes all, each one
///   re-includes its level); `u` also excludes guests, as perf does.
/// - `G`/`H`: count only guest / only host.
/// - each `p` raises `precise_ip` (max 3) and excludes guests; `P` selects the model's max.
/// - `D` pinned, `I` exclude idle.
///
/// With no G/H/p/u modifier, core PMU events exclude guests by default, as perf does.
fn apply_modifiers(
    attr: &mut Attr,
    mods: &str,
    class: Class,
    max_precise: u8,
) -> std::result::Result<(), String> {
    let (mut eu, mut ek, mut eh) = (false, false, false);
    let (mut eg, mut ehost) = (class == Class::Core && mods.is_empty(), false);
    let mut exclude = false;
    let mut exclude_gh = false;
    let mut precise = 0u8;
    for c in mods.chars() {
        match c {
            'u' | 'k' | 'h' => {
                if !exclude {
                    exclude = true;
                    (eu, ek, eh) = (true, true, true);
                }
                match c {
                    'u' => {
                        eu = false;
                        if !exclude_gh {
                            eg = true;
                        }
                    }
                    'k' => ek = false,
                    _ => eh = false,
                }
            }
            'G' | 'H' => {
                if !exclude_gh {
                    exclude_gh = true;
                    (eg, ehost) = (true, true);
                }
                if c == 'G' { eg = false } else { ehost = false }
            }
            'p' => {
                precise += 1;
                if !exclude_gh {
                    eg = true;
                }
            }
            'P' => {
                if class == Class::Core {
                    precise = max_precise;
                }
            }
            'D' => attr.pinned = true,
            'I' => attr.exclude_idle = true,
            other => return Err(other.to_string()),
        }
    }
    if precise > 3 {
        return Err("p".repeat(precise as usize));
    }
    attr.exclude_user = eu;
    attr.exclude_kernel = ek;
    attr.exclude_hv = eh;
    attr.exclude_guest = eg;
    attr.exclude_host = ehost;
    attr.precise_ip = precise;
    Ok(())
}

#[cfg(test)]
mod tests;
