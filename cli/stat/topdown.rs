//! `hwprof stat --topdown`: the TopDown levels of this CPU, counted live. The CPU model
//! comes from `/proc/cpuinfo` (pmu's identification), the formulas and their events
//! from the first source that has them ([`crate::tma::load`]: `--metrics-file`,
//! `$HWPROF_PERFMON_DIR`, the installed perf's tables, the verified cached copy), the
//! groups from `hwprof_analysis::topdown::schedule`; the events are counted by the stat
//! machinery (multiplexed counts scaled) and the metrics printed as `hwprof metrics`
//! prints them.

use anyhow::Context;
use hwprof_analysis::topdown::schedule::{self, GroupKind, Privilege};
use hwprof_analysis::topdown::{Constants, Counts, MetricFile, Model};
use hwprof_pmu::cpu::CpuId;
use hwprof_pmu::stat::{self, Counting};
use hwprof_pmu::stop::Stop;
use hwprof_pmu::{Encoder, EventList};

use crate::args::StatArgs;
use crate::destination::Sink;
use crate::error::usage;

/// The one line when the machine cannot count TopDown events.
pub const NO_PMU: &str = "TopDown needs a hardware PMU, and this machine exposes none (no /sys/bus/event_source/devices/cpu; usual in VMs and containers): count the events where there is one with `perf stat -x,` and evaluate them with `hwprof metrics --cpu MODEL --counts FILE`";

fn topdown_model(id: &CpuId) -> anyhow::Result<Model> {
    let m = match id.table_model().map(Model::try_from) {
        Some(Ok(m)) => m,
        other => anyhow::bail!(
            "TopDown metrics are read for Skylake, Skylake-X, Ice Lake, Sapphire Rapids, Zen 4 and Zen 5; this CPU is {} ({}{}), which has none yet",
            id.brand,
            id.perf_cpuid(),
            other
                .and_then(Result::err)
                .map_or(String::new(), |m| format!(", {}", m.name()))
        ),
    };
    Ok(m)
}

fn smt_active() -> bool {
    std::fs::read_to_string("/sys/devices/system/cpu/smt/active").is_ok_and(|s| s.trim() == "1")
}

/// The hwprof event string of an event as the formulas name it: Intel's file
/// (`IDQ.MS_UOPS:c1`, `PERF_METRICS.RETIRING`) or perf's language
/// (`topdown-retiring`, `cpu@INT_MISC.RECOVERY_CYCLES,cmask=1,edge@`,
/// `de_no_dispatch_per_slot.no_ops_from_frontend`).
fn spec(enc: &Encoder, model: Model, name: &str) -> anyhow::Result<String> {
    if model.has_perf_metrics()
        && let Some(config) = hwprof_analysis::topdown::counts::perf_metrics_config(name)
    {
        return Ok(format!("cpu/config={config:#x}/"));
    }
    // perf's `pmu@event,term=value@`: hwprof's (and perf's) `pmu/event,term=value/`.
    if let Some(inner) = name.strip_suffix('@')
        && let Some((pmu, terms)) = inner.split_once('@')
    {
        return Ok(format!("{pmu}/{terms}/"));
    }
    let Some((base, mods)) = name.split_once(':').filter(|_| !model.is_amd()) else {
        return Ok(name.to_string());
    };
    let list = enc
        .parse(base)
        .with_context(|| format!("encoding {name} of the metric file"))?;
    let ev = list
        .events
        .first()
        .with_context(|| format!("{base} encodes to no event"))?;
    let (config, privilege) = schedule::apply_modifiers(ev.attr.config, mods)
        .map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    let suffix = match privilege {
        Privilege::Both => "",
        Privilege::Kernel => ":k",
        Privilege::User => ":u",
    };
    Ok(format!("{}/config={config:#x}/{suffix}", ev.pmu))
}

/// The events of the groups, as one list, each named as the formulas name it.
fn event_list(
    enc: &Encoder,
    model: Model,
    groups: &[schedule::Group],
) -> anyhow::Result<EventList> {
    let mut list = EventList::default();
    for g in groups {
        let specs: Vec<String> = g
            .events
            .iter()
            .map(|e| spec(enc, model, e))
            .collect::<anyhow::Result<_>>()?;
        let text = match g.kind {
            GroupKind::Fixed => specs.join(","),
            GroupKind::PerfMetrics | GroupKind::General => format!("{{{}}}", specs.join(",")),
        };
        let mut part = enc
            .parse(&text)
            .with_context(|| format!("encoding {text}"))?;
        if part.events.len() != g.events.len() {
            anyhow::bail!(
                "encoding {text}: {} events for {}",
                part.events.len(),
                g.events.len()
            );
        }
        for (ev, name) in part.events.iter_mut().zip(&g.events) {
            ev.name = name.clone();
        }
        list.extend(part);
    }
    Ok(list)
}

pub fn run(a: &StatArgs, stop: &Stop) -> anyhow::Result<u8> {
    let mut enc = crate::events::encoder(None, &a.record.event_file)?;
    if !enc.host_has_cpu_pmu() {
        anyhow::bail!(NO_PMU);
    }
    let Some(argv) = Some(&a.record.command).filter(|c| !c.is_empty()) else {
        return usage("--topdown needs a command to count, after `--`");
    };
    let id = CpuId::host().context("reading /proc/cpuinfo")?;
    let model = topdown_model(&id)?;
    let smt = smt_active();
    let loaded = crate::tma::load(
        model,
        a.metrics_file.as_deref(),
        None,
        &id.perf_cpuid(),
        true,
    )?;
    // The model's full event tables, for the events the built-in one lacks.
    for f in &loaded.event_files {
        enc.add_event_file(f)?;
    }
    let levels: Vec<u32> = (1..=a.topdown_level.unwrap_or(1)).collect();
    let selected = loaded.file.select(&levels, false);
    let groups = schedule::schedule(&selected, model, smt);
    let events = event_list(&enc, model, &groups).map_err(|e| match &loaded.events_note {
        Some(note) => e.context(format!("the event files are missing ({note})")),
        None => e,
    })?;
    let opts = stat::Options {
        inherit: !a.no_inherit,
        per_cpu: false,
        interval: None,
        duration: None,
    };
    let c = Counting::command(argv, &events, None, &opts)?;
    let run = c.run_to_end(stop)?;
    let mut counts = Counts::default();
    for l in &run.lines {
        if let Some(v) = l.value {
            counts.add(&l.event, v);
        }
    }
    let consts = Constants {
        smt,
        ..Constants::default()
    };
    let values = MetricFile::evaluate(&selected, &counts, &consts);
    crate::tma::say_source(model.label(), &loaded.source);
    let mut sink = Sink::open(a.output.as_deref(), stop)?;
    crate::tma::print(sink.w(), &values, a.json, &loaded.source)?;
    sink.commit()?;
    Ok(run.exit.map_or(0, |x| u8::try_from(x.code).unwrap_or(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwprof_analysis::topdown::fetch;
    use hwprof_analysis::topdown::perf_tables::PerfTables;
    use hwprof_analysis::topdown::schedule::general_counters;
    use hwprof_analysis::topdown::source;
    use hwprof_pmu::cpu;

    /// Loads `model`'s formulas from a fixture folder (never perf or the network).
    fn from_dir(model: Model, dir: &std::path::Path) -> source::Loaded {
        let off = fetch::Config {
            base_url: None,
            cache: None,
        };
        source::load(&source::Request {
            model,
            metrics_file: None,
            perfmon_dir: Some(dir),
            perf_cpuid: model.perf_cpuid(),
            fetch: &off,
            events: true,
        })
        .expect("loads")
    }

    /// The events of levels 1 and 2 encode, in groups by the kernel's rules: `slots`
    /// leads the PERF_METRICS group (config 0x400, members 0x80xx), no group has more
    /// general-counter events than the counters (Intel: 4 with SMT on, 8 off; Zen: 6),
    /// every event the metrics need is counted once.
    fn check_groups(model: Model, file: &MetricFile, enc: &Encoder, nodes: usize) {
        let selected = file.select(&[1, 2], false);
        assert_eq!(
            selected.len(),
            nodes,
            "{model:?}: TopDown nodes of levels 1-2"
        );
        for smt in [true, false] {
            let groups = schedule::schedule(&selected, model, smt);
            let list = event_list(enc, model, &groups).expect("encodes");
            let consts = Constants {
                smt,
                ..Constants::default()
            };
            let needed: std::collections::BTreeSet<&str> = selected
                .iter()
                .flat_map(|m| m.needed_events(&consts))
                .collect();
            let counted: Vec<&str> = list.events.iter().map(|e| e.name.as_str()).collect();
            let uniq: std::collections::BTreeSet<&str> = counted.iter().copied().collect();
            assert_eq!(uniq.len(), counted.len(), "{model:?}: each event once");
            assert_eq!(uniq, needed, "{model:?}: every event of the metrics");
            for r in list.groups() {
                let evs = &list.events[r.clone()];
                let g = groups
                    .iter()
                    .find(|g| g.events.contains(&evs[0].name))
                    .expect("group");
                match g.kind {
                    GroupKind::PerfMetrics => {
                        assert!(model.has_perf_metrics());
                        assert_eq!(evs[0].attr.config, 0x400, "slots leads");
                        assert!(evs[1..].iter().all(|e| e.attr.config & 0xff00 >= 0x8000));
                        assert!(evs.len() <= if model == Model::SapphireRapids { 9 } else { 5 });
                    }
                    GroupKind::General => {
                        let cap = general_counters(model, smt);
                        assert!(evs.len() <= cap, "{model:?}: {g:?}");
                        let pm = hwprof_analysis::topdown::counts::perf_metrics_config;
                        assert!(
                            !model.has_perf_metrics() || evs.iter().all(|e| pm(&e.name).is_none()),
                            "{model:?}: {g:?}"
                        );
                    }
                    GroupKind::Fixed => assert!(!model.is_amd()),
                }
            }
            if model == Model::Skylake && !selected[0].name.starts_with("tma_") {
                // Intel's file: the per-core clock only with SMT on.
                assert_eq!(uniq.contains("CPU_CLK_UNHALTED.THREAD_ANY"), smt);
            }
            assert_eq!(
                groups.iter().any(|g| g.kind == GroupKind::PerfMetrics),
                model.has_perf_metrics(),
                "{model:?}"
            );
        }
    }

    fn encoder(model: Model, files: &[std::path::PathBuf]) -> Encoder {
        let mut enc = Encoder::for_model(cpu::Model::from(model));
        for f in files {
            enc.add_event_file(f).expect("event file");
        }
        enc
    }

    #[test]
    fn intel_files_events_encode_in_groups_that_fit() {
        let Some(root) = hwprof_testkit::fixture_path("perfmon/mapfile.csv") else {
            return;
        };
        let dir = root.parent().expect("perfmon dir");
        for model in Model::INTEL {
            let l = from_dir(model, dir);
            assert_eq!(l.event_files.len(), 1, "{model:?}: {:?}", l.events_note);
            check_groups(model, &l.file, &encoder(model, &l.event_files), 12);
        }
        // A modifier: IDQ.MS_UOPS (event 0x79, umask 0x30) with cmask 1.
        let l = from_dir(Model::Skylake, dir);
        let enc = encoder(Model::Skylake, &l.event_files);
        let s = spec(&enc, Model::Skylake, "IDQ.MS_UOPS:c1").expect("spec");
        assert_eq!(s, "cpu/config=0x1003079/");
    }

    /// Zen 4 and Zen 5: the kernel's pipeline metrics, 5 level-1 and 8 level-2 nodes,
    /// in groups of 6; perf's `cpu@event\,cmask\=0x6@` term encodes with its cmask.
    #[test]
    fn amd_pipeline_events_encode_in_groups_of_six() {
        let Some(p) = hwprof_testkit::fixture_path("amd/amdzen4/pipeline.json") else {
            return;
        };
        let dir = p.parent().and_then(|d| d.parent()).expect("amd dir");
        for (model, cmask) in [(Model::Zen4, 6u64), (Model::Zen5, 8)] {
            let l = from_dir(model, dir);
            let enc = encoder(model, &l.event_files);
            check_groups(model, &l.file, &enc, 13);
            let name =
                format!("cpu@de_no_dispatch_per_slot.no_ops_from_frontend,cmask={cmask:#x}@");
            let list = enc
                .parse(&spec(&enc, model, &name).expect("spec"))
                .expect("encodes");
            // event 0x1a0 (select bits 0-7 and 32-35), umask 1, cmask in bits 24-31.
            assert_eq!(
                list.events[0].attr.config,
                0x1_0000_01a0 | (cmask << 24),
                "{model:?}"
            );
        }
        let l = from_dir(Model::Zen4, dir);
        assert_eq!(l.event_files.len(), 3, "core, branch and other.json");
    }

    /// Intel models from the installed perf's tables (perf's names, `topdown-*`, `cpu@..@`
    /// terms), when this perf has them.
    #[test]
    fn perf_table_events_encode_in_groups_that_fit() {
        let Some(root) = hwprof_testkit::fixture_path("perfmon/mapfile.csv") else {
            return;
        };
        let dir = root.parent().expect("perfmon dir");
        for model in Model::INTEL {
            let file =
                match PerfTables::from_perf(model.perf_cpuid()).and_then(|t| t.metric_file(None)) {
                    Ok(f) => f,
                    Err(e) => {
                        hwprof_testkit::skip(
                            hwprof_testkit::Why::Setup,
                            format!("perf's tables for {model:?}: {e}"),
                        );
                        continue;
                    }
                };
            let l = from_dir(model, dir);
            check_groups(model, &file, &encoder(model, &l.event_files), 12);
        }
        let l = from_dir(Model::IceLake, dir);
        let enc = encoder(Model::IceLake, &l.event_files);
        let s = spec(
            &enc,
            Model::IceLake,
            "cpu@INT_MISC.RECOVERY_CYCLES,cmask=1,edge@",
        )
        .expect("spec");
        let list = enc.parse(&s).expect("encodes");
        // INT_MISC.RECOVERY_CYCLES is event 0x0d umask 0x01; edge is bit 18.
        assert_eq!(list.events[0].attr.config, 0x0104_010d);
    }
}
