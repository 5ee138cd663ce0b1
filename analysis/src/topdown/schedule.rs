//! The events of a set of metrics in groups that fit the counters, by the kernel's and
//! perf's rules:
//!
//! - Ice Lake and later count TopDown level 1 (Sapphire Rapids: level 2 too) in the
//!   PERF_METRICS MSR: one group led by `slots` (fixed counter 3) with the
//!   `topdown-*` events as members; it takes no general counter. The kernel refuses a
//!   `topdown-*` event that is not in a group led by `slots`.
//! - The fixed counters (`INST_RETIRED.ANY`, `CPU_CLK_UNHALTED.THREAD` and `.THREAD_ANY`,
//!   `CPU_CLK_UNHALTED.REF_TSC`) take no general counter either.
//! - Every other event takes a general counter: at most 4 per group with SMT on (the
//!   sibling thread has the other 4), 8 with SMT off. AMD Zen 4 and Zen 5 have 6 core
//!   counters per thread, SMT or not, and no fixed counter for these events. The events
//!   of a metric are kept in one group where they fit, so its ratio comes from one time
//!   slice; groups are then multiplexed and scaled.
//!
//! Events are named as the formulas name them: Intel's files (`PERF_METRICS.RETIRING`,
//! `TOPDOWN.SLOTS:perf_metrics`) or perf's language (`topdown-retiring`,
//! `TOPDOWN.SLOTS`, `cpu@INT_MISC.RECOVERY_CYCLES,cmask=1,edge@`).

use super::{Constants, Metric, Model, counts::perf_metrics_config, counts::perf_name};

/// What a group holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupKind {
    /// `slots` + `topdown-*` (PERF_METRICS).
    PerfMetrics,
    /// Events on fixed counters.
    Fixed,
    /// Events on general counters.
    General,
}

/// One event group, leader first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// What it holds.
    pub kind: GroupKind,
    /// The events, as Intel's file names them (leader first).
    pub events: Vec<String>,
}

impl Group {
    /// The events with perf's names where perf has its own (`slots`,
    /// `topdown-retiring`).
    pub fn perf_events(&self) -> Vec<String> {
        self.events
            .iter()
            .map(|e| perf_name(e).map_or_else(|| e.clone(), str::to_string))
            .collect()
    }
}

/// General counters per group.
pub fn general_counters(model: Model, smt: bool) -> usize {
    if model.is_amd() {
        6
    } else if smt {
        4
    } else {
        8
    }
}

fn is_fixed(event: &str, model: Model) -> bool {
    !model.is_amd()
        && matches!(
            event,
            "INST_RETIRED.ANY"
                | "CPU_CLK_UNHALTED.THREAD"
                | "CPU_CLK_UNHALTED.THREAD_P"
                | "CPU_CLK_UNHALTED.THREAD_ANY"
                | "CPU_CLK_UNHALTED.REF_TSC"
        )
}

fn is_perf_metrics(event: &str, model: Model) -> bool {
    model.has_perf_metrics() && perf_metrics_config(event).is_some()
}

fn is_slots(event: &str) -> bool {
    perf_metrics_config(event) == Some(0x400)
}

/// Groups the events of `metrics` for `model`: those their formulas need with this SMT
/// setting (a Skylake formula with SMT off needs no `CPU_CLK_UNHALTED.THREAD_ANY`).
pub fn schedule(metrics: &[&Metric], model: Model, smt: bool) -> Vec<Group> {
    let cap = general_counters(model, smt);
    let mut topdown: Vec<String> = Vec::new();
    let mut fixed: Vec<String> = Vec::new();
    let mut bundles: Vec<Vec<String>> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let consts = Constants {
        smt,
        ..Constants::default()
    };
    for m in metrics {
        let mut bundle = Vec::new();
        for e in m.needed_events(&consts) {
            if is_perf_metrics(e, model) {
                if !topdown.iter().any(|t| t == e) {
                    topdown.push(e.to_string());
                }
            } else if is_fixed(e, model) {
                if !fixed.iter().any(|t| t == e) {
                    fixed.push(e.to_string());
                }
            } else if !seen.iter().any(|t| t == e) {
                seen.push(e.to_string());
                bundle.push(e.to_string());
            }
        }
        if !bundle.is_empty() {
            bundles.push(bundle);
        }
    }
    let mut groups = Vec::new();
    if !topdown.is_empty() {
        // `slots` leads; the topdown events follow in the file's order.
        let slots = topdown
            .iter()
            .position(|e| is_slots(e))
            .map(|i| topdown.remove(i))
            .unwrap_or_else(|| "TOPDOWN.SLOTS:perf_metrics".to_string());
        topdown.retain(|e| !is_slots(e));
        let mut events = vec![slots];
        events.extend(topdown);
        groups.push(Group {
            kind: GroupKind::PerfMetrics,
            events,
        });
    }
    if !fixed.is_empty() {
        groups.push(Group {
            kind: GroupKind::Fixed,
            events: fixed,
        });
    }
    // First fit, largest bundles first; a bundle larger than a group is split.
    let mut chunks: Vec<Vec<String>> = bundles
        .into_iter()
        .flat_map(|b| b.chunks(cap).map(<[String]>::to_vec).collect::<Vec<_>>())
        .collect();
    chunks.sort_by_key(|c| std::cmp::Reverse(c.len()));
    let mut general: Vec<Vec<String>> = Vec::new();
    for c in chunks {
        match general.iter_mut().find(|g| g.len() + c.len() <= cap) {
            Some(g) => g.extend(c),
            None => general.push(c),
        }
    }
    groups.extend(general.into_iter().map(|events| Group {
        kind: GroupKind::General,
        events,
    }));
    groups
}

/// Which privilege levels an event counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Privilege {
    /// User and kernel.
    Both,
    /// `:SUP`: kernel only.
    Kernel,
    /// `:USER`: user only.
    User,
}

/// Applies the modifiers Intel's metric files write after an event name
/// (`IDQ.MS_UOPS:c1`, `ICACHE_16B.IFDATA_STALL:c1:e1`, `X:u0x80`, `X:SUP`) to the raw
/// `config` of the event (the `IA32_PERFEVTSELx` layout: umask bits 8-15, edge 18,
/// inv 23, cmask 24-31). `:perf_metrics` and `:percore` change nothing in the config.
/// Others (`filter1=`, `ocr_msr_val=`: uncore and offcore filters) are an error naming
/// them.
pub fn apply_modifiers(mut config: u64, mods: &str) -> Result<(u64, Privilege), String> {
    let mut privilege = Privilege::Both;
    for m in mods.split(':').filter(|m| !m.is_empty()) {
        let num = |s: &str| -> Result<u64, String> {
            let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                Some(h) => u64::from_str_radix(h, 16),
                None => s.parse(),
            };
            v.map_err(|_| format!("bad modifier `{m}`"))
        };
        match m {
            "perf_metrics" | "percore" => {}
            "SUP" => privilege = Privilege::Kernel,
            "USER" => privilege = Privilege::User,
            _ if m.starts_with('c') => {
                let v = num(&m[1..])?;
                if v > 0xff {
                    return Err(format!("bad modifier `{m}`: cmask is 0-255"));
                }
                config = (config & !(0xff << 24)) | (v << 24);
            }
            _ if m.starts_with('u') => {
                let v = num(&m[1..])?;
                if v > 0xff {
                    return Err(format!("bad modifier `{m}`: umask is 0-0xff"));
                }
                config = (config & !(0xff << 8)) | (v << 8);
            }
            "e1" => config |= 1 << 18,
            "e0" => config &= !(1 << 18),
            "i1" => config |= 1 << 23,
            "i0" => config &= !(1 << 23),
            _ => return Err(format!("unsupported event modifier `{m}`")),
        }
    }
    Ok((config, privilege))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topdown::expr::{Expr, Op};

    fn metric(events: &[&str]) -> Metric {
        Metric {
            name: "m".into(),
            level: 1,
            parent: None,
            unit: String::new(),
            category: String::new(),
            events: events
                .iter()
                .enumerate()
                .map(|(i, e)| (e.to_string(), format!("a{i}")))
                .collect(),
            constants: Vec::new(),
            formula_text: String::new(),
            formula: (0..events.len()).fold(Expr::Num(0.0), |acc, i| {
                Expr::Bin(Op::Add, Box::new(acc), Box::new(Expr::Var(format!("a{i}"))))
            }),
            in_tree: true,
        }
    }

    #[test]
    fn icelake_topdown_group_is_led_by_slots_and_general_groups_fit() {
        let m1 = metric(&[
            "PERF_METRICS.FRONTEND_BOUND",
            "PERF_METRICS.BAD_SPECULATION",
            "TOPDOWN.SLOTS:perf_metrics",
            "INT_MISC.UOP_DROPPING",
            "CPU_CLK_UNHALTED.THREAD",
        ]);
        let m2 = metric(&["A", "B", "C", "D", "E", "INT_MISC.UOP_DROPPING"]);
        let g = schedule(&[&m1, &m2], Model::IceLake, true);
        assert_eq!(g[0].kind, GroupKind::PerfMetrics);
        assert_eq!(
            g[0].perf_events(),
            ["slots", "topdown-fe-bound", "topdown-bad-spec"]
        );
        assert_eq!(g[1].events, ["CPU_CLK_UNHALTED.THREAD"]);
        for gr in &g[2..] {
            assert_eq!(gr.kind, GroupKind::General);
            assert!(gr.events.len() <= 4, "{gr:?}");
        }
        let all: Vec<&String> = g[2..].iter().flat_map(|g| &g.events).collect();
        assert_eq!(all.len(), 6, "each event once: {all:?}");
        let g = schedule(&[&m1, &m2], Model::IceLake, false);
        assert_eq!(g.len(), 3, "one general group of 6 with SMT off: {g:?}");
    }

    #[test]
    fn modifiers_set_the_perfevtsel_fields() {
        // IDQ.MS_UOPS is event 0x79 umask 0x30.
        assert_eq!(
            apply_modifiers(0x3079, "c1"),
            Ok((0x0100_3079, Privilege::Both))
        );
        assert_eq!(
            apply_modifiers(0x0480, "c1:e1"),
            Ok((0x0104_0480, Privilege::Both))
        );
        assert_eq!(
            apply_modifiers(0x01c2, "u0x80"),
            Ok((0x80c2, Privilege::Both))
        );
        assert_eq!(apply_modifiers(0x3c, "SUP"), Ok((0x3c, Privilege::Kernel)));
        assert_eq!(
            apply_modifiers(0x3c, "perf_metrics"),
            Ok((0x3c, Privilege::Both))
        );
        assert!(apply_modifiers(0x3c, "filter1=0x40433").is_err());
        assert!(apply_modifiers(0x3c, "c300").is_err());
    }

    #[test]
    fn perf_names_and_amd_counters() {
        let m = metric(&[
            "topdown-fe-bound",
            "TOPDOWN.SLOTS",
            "topdown-retiring",
            "INT_MISC.UOP_DROPPING",
            "cpu@INT_MISC.RECOVERY_CYCLES,cmask=1,edge@",
        ]);
        let g = schedule(&[&m], Model::IceLake, true);
        assert_eq!(g[0].kind, GroupKind::PerfMetrics);
        assert_eq!(
            g[0].events,
            ["TOPDOWN.SLOTS", "topdown-fe-bound", "topdown-retiring"]
        );
        assert_eq!(g[1].events.len(), 2);
        // Zen: 6 counters whatever SMT, `ls_not_halted_cyc` on one of them.
        let names: Vec<String> = (0..8).map(|i| format!("e{i}")).collect();
        let mut evs: Vec<&str> = names.iter().map(String::as_str).collect();
        evs.push("CPU_CLK_UNHALTED.THREAD");
        let m = metric(&evs);
        for smt in [true, false] {
            let g = schedule(&[&m], Model::Zen4, smt);
            assert!(g.iter().all(|g| g.kind == GroupKind::General), "{g:?}");
            assert_eq!(
                g.iter().map(|g| g.events.len()).collect::<Vec<_>>(),
                [6, 3],
                "{g:?}"
            );
        }
    }

    #[test]
    fn skylake_has_no_perf_metrics() {
        let m = metric(&[
            "TOPDOWN.SLOTS",
            "IDQ_UOPS_NOT_DELIVERED.CORE",
            "CPU_CLK_UNHALTED.THREAD_ANY",
        ]);
        let g = schedule(&[&m], Model::Skylake, true);
        assert!(g.iter().all(|g| g.kind != GroupKind::PerfMetrics), "{g:?}");
    }
}
