//! `hwprof stat --topdown`: the TopDown levels of this CPU, counted live. The CPU model
//! comes from `/proc/cpuinfo` (pmu's identification), the formulas and their events
//! from Intel's metric file ([`crate::metrics::load`]), the groups from
//! `hwprof_analysis::topdown::schedule`; the events are counted by the stat machinery
//! (multiplexed counts scaled) and the metrics printed as `hwprof metrics` prints them.

use anyhow::Context;
use hwprof_analysis::topdown::schedule::{self, GroupKind, Privilege};
use hwprof_analysis::topdown::{Constants, Counts, MetricFile, Model};
use hwprof_pmu::cpu::CpuId;
use hwprof_pmu::stat::{self, Counting};
use hwprof_pmu::stop::Stop;
use hwprof_pmu::{Encoder, EventList};

use crate::args::StatArgs;
use crate::error::usage;
use crate::outfile::Sink;

/// The one line when the machine cannot count TopDown events.
pub const NO_PMU: &str = "TopDown needs a hardware PMU, and this machine exposes none (no /sys/bus/event_source/devices/cpu; usual in VMs and containers): count the events where there is one with `perf stat -x,` and evaluate them with `hwprof metrics --cpu MODEL --counts FILE`";

fn topdown_model(id: &CpuId) -> anyhow::Result<Model> {
    let m = match id.table_model().map(Model::try_from) {
        Some(Ok(m)) => m,
        other => anyhow::bail!(
            "TopDown metric files are read for Skylake, Skylake-X, Ice Lake and Sapphire Rapids; this CPU is {} ({}{}), which has none yet",
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

/// The hwprof event string of an event as Intel's file names it.
fn spec(enc: &Encoder, model: Model, intel: &str) -> anyhow::Result<String> {
    if model.has_perf_metrics()
        && let Some(config) = hwprof_analysis::topdown::counts::perf_metrics_config(intel)
    {
        return Ok(format!("cpu/config={config:#x}/"));
    }
    let Some((base, mods)) = intel.split_once(':') else {
        return Ok(intel.to_string());
    };
    let list = enc
        .parse(base)
        .with_context(|| format!("encoding {intel} of the metric file"))?;
    let ev = list
        .events
        .first()
        .with_context(|| format!("{base} encodes to no event"))?;
    let (config, privilege) = schedule::apply_modifiers(ev.attr.config, mods)
        .map_err(|e| anyhow::anyhow!("{intel}: {e}"))?;
    let suffix = match privilege {
        Privilege::Both => "",
        Privilege::Kernel => ":k",
        Privilege::User => ":u",
    };
    Ok(format!("{}/config={config:#x}/{suffix}", ev.pmu))
}

/// The events of the groups, as one list, each named as in Intel's file.
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

/// `DIR/SKL/events/skylake_core.json` of the perfmon checkout, when there is one.
fn core_events_file(model: Model, perfmon: Option<&std::path::Path>) -> Option<std::path::PathBuf> {
    let dir = crate::metrics::perfmon_dir(perfmon)?;
    let f = dir
        .join(model.dir())
        .join("events")
        .join(format!("{}_core.json", model.name()));
    f.is_file().then_some(f)
}

pub fn run(a: &StatArgs, stop: &Stop) -> anyhow::Result<u8> {
    let mut enc = crate::encode::encoder(None, &a.event_file)?;
    if !enc.host_has_cpu_pmu() {
        anyhow::bail!(NO_PMU);
    }
    let Some(argv) = Some(&a.command).filter(|c| !c.is_empty()) else {
        return usage("--topdown needs a command to count, after `--`");
    };
    let id = CpuId::host().context("reading /proc/cpuinfo")?;
    let model = topdown_model(&id)?;
    let smt = smt_active();
    let file = crate::metrics::load(model, a.metrics_file.as_deref(), None)?;
    // The model's full event table, for the events the built-in one lacks.
    if let Some(f) = core_events_file(model, None) {
        enc.add_event_file(&f)?;
    }
    let levels: Vec<u32> = (1..=a.topdown_level.unwrap_or(1)).collect();
    let selected = file.select(&levels, false);
    let groups = schedule::schedule(&selected, model, smt);
    let events = event_list(&enc, model, &groups)?;
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
    let mut sink = Sink::open(a.output.as_deref())?;
    crate::metrics::print(sink.w(), &values, a.json)?;
    sink.commit()?;
    Ok(run.exit.map_or(0, |x| u8::try_from(x.code).unwrap_or(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwprof_analysis::topdown::schedule::general_counters;
    use hwprof_pmu::cpu;

    /// The events of levels 1 and 2 of Skylake, Ice Lake and Sapphire Rapids encode, in
    /// groups by the kernel's rules: `slots` leads the PERF_METRICS group (config
    /// 0x400, members 0x80xx), no group has more general-counter events than the
    /// counters (4 with SMT on, 8 off), and `:c1`-style modifiers land in the config.
    #[test]
    fn topdown_events_encode_in_groups_that_fit() {
        let Some(root) = hwprof_testkit::fixture_path("perfmon/mapfile.csv") else {
            return;
        };
        let dir = root.parent().expect("perfmon dir");
        for model in Model::ALL {
            let cpu = cpu::Model::from(model);
            let file = crate::metrics::load(model, None, Some(dir)).expect("metrics file");
            let mut enc = Encoder::for_model(cpu);
            enc.add_event_file(&core_events_file(model, Some(dir)).expect("core events"))
                .expect("event file");
            let selected = file.select(&[1, 2], false);
            assert_eq!(selected.len(), 12, "{model:?}: 4 + 8 TopDown nodes");
            for smt in [true, false] {
                let groups = schedule::schedule(&selected, model, smt);
                let list = event_list(&enc, model, &groups).expect("encodes");
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
                            assert!(
                                evs.len() <= if model == Model::SapphireRapids { 9 } else { 5 }
                            );
                        }
                        GroupKind::General => {
                            assert!(evs.len() <= general_counters(smt), "{model:?}: {g:?}");
                            assert!(evs.iter().all(|e| !e.name.starts_with("PERF_METRICS")));
                        }
                        GroupKind::Fixed => {}
                    }
                }
                // Skylake: the per-core clock only with SMT on.
                if model == Model::Skylake {
                    assert_eq!(uniq.contains("CPU_CLK_UNHALTED.THREAD_ANY"), smt);
                }
                assert_eq!(
                    groups.iter().any(|g| g.kind == GroupKind::PerfMetrics),
                    model.has_perf_metrics(),
                    "{model:?}"
                );
            }
        }
        // A modifier: IDQ.MS_UOPS (event 0x79, umask 0x30) with cmask 1.
        let mut enc = Encoder::for_model(cpu::Model::Skylake);
        enc.add_event_file(&core_events_file(Model::Skylake, Some(dir)).expect("core events"))
            .expect("event file");
        let s = spec(&enc, Model::Skylake, "IDQ.MS_UOPS:c1").expect("spec");
        assert_eq!(s, "cpu/config=0x1003079/");
    }
}
