//! Checks of the built-in event tables.
//!
//! - Every Skylake, Skylake-X, Ice Lake and Sapphire Rapids row is compared with Intel's
//!   perfmon event files in `../shared/fixtures/perfmon/` (skipped, with a message, when
//!   that folder is absent).
//! - Every table is checked for shape: unique names per PMU, canonical terms with known
//!   term names, and at least one event in each of the main categories.
//! - Alder Lake and AMD rows, whose source is the Linux kernel's pmu-events JSON (not
//!   available here), get spot checks of codes read from those files.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use hwprof_pmu::cpu::Model;
use hwprof_pmu::tables::{Category, EventTable, NamedEvent, builtin_events, load_perfmon_json};

const INTEL: [Model; 5] = [
    Model::Skylake,
    Model::SkylakeX,
    Model::IceLake,
    Model::SapphireRapids,
    Model::AlderLake,
];
const AMD: [Model; 4] = [Model::Zen2, Model::Zen3, Model::Zen4, Model::Zen5];

const INTEL_TERMS: [&str; 9] = [
    "event",
    "umask",
    "edge",
    "any",
    "inv",
    "cmask",
    "ldlat",
    "offcore_rsp",
    "frontend",
];
const AMD_TERMS: [&str; 5] = ["event", "umask", "edge", "inv", "cmask"];

/// The PERF_METRICS pseudo-events are not entries of the perfmon event files; their
/// encoding is the kernel's `topdown-*` sysfs aliases (arch/x86/events/intel/core.c).
const PERF_METRICS: [(&str, &str); 4] = [
    ("PERF_METRICS.RETIRING", "event=0x00,umask=0x80"),
    ("PERF_METRICS.BAD_SPECULATION", "event=0x00,umask=0x81"),
    ("PERF_METRICS.FRONTEND_BOUND", "event=0x00,umask=0x82"),
    ("PERF_METRICS.BACKEND_BOUND", "event=0x00,umask=0x83"),
];

/// Parses `event=0xd1,umask=0x20` into term -> value, accepting any hex/decimal spelling.
fn parse_terms(terms: &str) -> Result<BTreeMap<String, u64>, String> {
    let mut out = BTreeMap::new();
    for t in terms.split(',') {
        let (k, v) = t
            .split_once('=')
            .ok_or_else(|| format!("term '{t}' has no '='"))?;
        let n = match v.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16),
            None => v.parse(),
        }
        .map_err(|_| format!("term '{t}': bad value"))?;
        if out.insert(k.to_string(), n).is_some() {
            return Err(format!("term '{k}' given twice"));
        }
    }
    Ok(out)
}

/// Checks that `terms` is written exactly as the perfmon loader writes it: known names in
/// the loader's order, `{:#x}` values (flags as `1`), no zero umask, values that fit
/// their fields.
fn check_style(terms: &str, known: &[&str], max_event: u64) -> Result<(), String> {
    let mut last = None;
    for t in terms.split(',') {
        let (k, v) = t
            .split_once('=')
            .ok_or_else(|| format!("term '{t}' has no '='"))?;
        let pos = known
            .iter()
            .position(|n| *n == k)
            .ok_or_else(|| format!("unknown term '{k}'"))?;
        if last.is_some_and(|l| pos <= l) {
            return Err(format!("term '{k}' out of order"));
        }
        if last.is_none() && k != "event" {
            return Err("first term is not 'event'".into());
        }
        last = Some(pos);
        if matches!(k, "edge" | "any" | "inv") {
            if v != "1" {
                return Err(format!("flag '{t}' must be '{k}=1'"));
            }
            continue;
        }
        let n = v
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .ok_or_else(|| format!("'{t}' is not name=0xHEX"))?;
        if v != format!("{n:#x}") {
            return Err(format!("'{t}' is not written as {n:#x}"));
        }
        let max = match k {
            "event" => max_event,
            "umask" | "cmask" => 0xff,
            "ldlat" => 0xffff,
            "frontend" => 0xff_ffff,
            _ => u64::MAX,
        };
        if n > max {
            return Err(format!("'{t}' does not fit its field"));
        }
        if k == "umask" && n == 0 {
            return Err("zero umask must be omitted".into());
        }
    }
    Ok(())
}

#[track_caller]
fn fixture_dir() -> Option<PathBuf> {
    hwprof_testkit::fixture_path("perfmon")
}

fn check_against_perfmon(model: Model, file: &str) {
    let Some(dir) = fixture_dir() else { return };
    let path = dir.join(file);
    let table =
        load_perfmon_json(&path, "cpu").unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut bad = Vec::new();
    for e in builtin_events(model) {
        if e.name.starts_with("PERF_METRICS.") {
            match PERF_METRICS.iter().find(|(n, _)| *n == e.name) {
                Some((_, want)) if parse_terms(want) == parse_terms(e.terms) => {}
                _ => bad.push(format!(
                    "{}: {} is not the kernel's encoding",
                    e.name, e.terms
                )),
            }
            continue;
        }
        let Some(def) = table.get(e.name) else {
            bad.push(format!("{}: not in {file}", e.name));
            continue;
        };
        if def.name != e.name {
            bad.push(format!("{}: spelled {} in {file}", e.name, def.name));
        }
        let (ours, theirs) = (parse_terms(e.terms), parse_terms(&def.terms));
        if ours.is_err() || ours != theirs {
            bad.push(format!(
                "{}: ours {} vs perfmon {}",
                e.name, e.terms, def.terms
            ));
        }
        if e.precise != def.precise {
            bad.push(format!(
                "{}: precise {} vs perfmon {}",
                e.name, e.precise, def.precise
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{model} rows disagree with {file}:\n{}",
        bad.join("\n")
    );
}

#[test]
fn skylake_matches_perfmon() {
    check_against_perfmon(Model::Skylake, "SKL/events/skylake_core.json");
}

#[test]
fn skylakex_matches_perfmon() {
    check_against_perfmon(Model::SkylakeX, "SKX/events/skylakex_core.json");
}

#[test]
fn icelake_matches_perfmon() {
    check_against_perfmon(Model::IceLake, "ICL/events/icelake_core.json");
}

#[test]
fn sapphirerapids_matches_perfmon() {
    check_against_perfmon(Model::SapphireRapids, "SPR/events/sapphirerapids_core.json");
}

fn all_models() -> impl Iterator<Item = (Model, bool)> {
    INTEL
        .into_iter()
        .map(|m| (m, true))
        .chain(AMD.into_iter().map(|m| (m, false)))
}

#[test]
fn every_table_is_well_formed() {
    for (model, intel) in all_models() {
        let events = builtin_events(model);
        assert!(!events.is_empty(), "{model}: empty table");
        let mut seen = HashSet::new();
        for e in events {
            assert!(!e.name.trim().is_empty(), "{model}: empty name");
            assert_eq!(e.name, e.name.trim(), "{model}: {} has spaces", e.name);
            let key = (e.name.to_ascii_lowercase(), e.pmu);
            assert!(seen.insert(key), "{model}: {} twice on {}", e.name, e.pmu);
            assert!(
                !e.desc.trim().is_empty(),
                "{model}: {} has no description",
                e.name
            );
            assert!(
                !e.desc.contains('\n'),
                "{model}: {} description spans lines",
                e.name
            );
            let (known, max_event): (&[&str], u64) = if intel {
                (&INTEL_TERMS, 0xff)
            } else {
                (&AMD_TERMS, 0xfff)
            };
            if let Err(why) = check_style(e.terms, known, max_event) {
                panic!("{model}: {} '{}': {why}", e.name, e.terms);
            }
            let has_ldlat = parse_terms(e.terms).unwrap().contains_key("ldlat");
            assert_eq!(
                has_ldlat,
                e.category == Category::LoadLatency,
                "{model}: {} ldlat term and LoadLatency category disagree",
                e.name
            );
            if has_ldlat {
                assert!(
                    e.precise,
                    "{model}: {} is a PEBS load-latency event",
                    e.name
                );
            }
            if !intel {
                assert!(!e.precise, "{model}: {} AMD rows are not precise", e.name);
            }
        }
        // The table object agrees with the static rows.
        assert_eq!(EventTable::builtin(model).len(), events.len());
    }
}

fn pmus(model: Model) -> Vec<&'static str> {
    if model == Model::AlderLake {
        vec!["cpu_core", "cpu_atom"]
    } else {
        vec!["cpu"]
    }
}

#[test]
fn every_table_covers_the_main_categories() {
    let needed = [
        Category::Pipeline,
        Category::TopDown,
        Category::Cache,
        Category::Memory,
        Category::Tlb,
        Category::Branch,
    ];
    for (model, intel) in all_models() {
        let events = builtin_events(model);
        for e in events {
            assert!(
                pmus(model).contains(&e.pmu),
                "{model}: {} on unexpected PMU {}",
                e.name,
                e.pmu
            );
        }
        for pmu in pmus(model) {
            let of_pmu: Vec<&NamedEvent> = events.iter().filter(|e| e.pmu == pmu).collect();
            for cat in needed.iter().chain(intel.then_some(&Category::LoadLatency)) {
                assert!(
                    of_pmu.iter().any(|e| e.category == *cat),
                    "{model}/{pmu}: no {cat:?} event"
                );
            }
        }
    }
}

fn find(model: Model, pmu: &str, name: &str) -> &'static NamedEvent {
    builtin_events(model)
        .iter()
        .find(|e| e.pmu == pmu && e.name == name)
        .unwrap_or_else(|| panic!("{model}: {pmu}/{name} missing"))
}

fn assert_terms(model: Model, pmu: &str, name: &str, want: &str) {
    let e = find(model, pmu, name);
    assert_eq!(
        parse_terms(e.terms),
        parse_terms(want),
        "{model}: {pmu}/{name}: {} vs {want}",
        e.terms
    );
}

#[test]
fn topdown_inputs_are_present() {
    for m in [Model::Skylake, Model::SkylakeX] {
        for n in [
            "CPU_CLK_UNHALTED.THREAD",
            "UOPS_ISSUED.ANY",
            "UOPS_RETIRED.RETIRE_SLOTS",
            "IDQ_UOPS_NOT_DELIVERED.CORE",
            "INT_MISC.RECOVERY_CYCLES",
        ] {
            assert_eq!(find(m, "cpu", n).category, Category::TopDown, "{m}: {n}");
        }
    }
    for (m, pmu) in [
        (Model::IceLake, "cpu"),
        (Model::SapphireRapids, "cpu"),
        (Model::AlderLake, "cpu_core"),
    ] {
        assert_terms(m, pmu, "TOPDOWN.SLOTS", "event=0x00,umask=0x04");
        for (n, want) in PERF_METRICS {
            assert_terms(m, pmu, n, want);
            assert_eq!(find(m, pmu, n).category, Category::TopDown);
        }
    }
    for m in [Model::Zen4, Model::Zen5] {
        for n in [
            "ls_not_halted_cyc",
            "ex_ret_ops",
            "de_src_op_disp.all",
            "de_no_dispatch_per_slot.no_ops_from_frontend",
            "de_no_dispatch_per_slot.backend_stalls",
        ] {
            find(m, "cpu", n);
        }
    }
}

#[test]
fn alderlake_spot_checks() {
    let adl = Model::AlderLake;
    // tools/perf/pmu-events/arch/x86/alderlake/pipeline.json
    assert_terms(adl, "cpu_core", "UOPS_ISSUED.ANY", "event=0xae,umask=0x01");
    assert_terms(
        adl,
        "cpu_core",
        "INT_MISC.UOP_DROPPING",
        "event=0xad,umask=0x10",
    );
    assert_terms(
        adl,
        "cpu_core",
        "BR_INST_RETIRED.COND",
        "event=0xc4,umask=0x11",
    );
    assert_terms(
        adl,
        "cpu_atom",
        "BR_INST_RETIRED.COND",
        "event=0xc4,umask=0x7e",
    );
    assert_terms(adl, "cpu_atom", "TOPDOWN_BE_BOUND.ALL", "event=0x74");
    assert_terms(adl, "cpu_atom", "TOPDOWN_FE_BOUND.ALL", "event=0x71");
    // tools/perf/pmu-events/arch/x86/alderlake/memory.json
    assert_terms(
        adl,
        "cpu_core",
        "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_64",
        "event=0xcd,umask=0x1,ldlat=0x40",
    );
    assert_terms(
        adl,
        "cpu_core",
        "OCR.DEMAND_DATA_RD.L3_MISS",
        "event=0x2a,umask=0x1,offcore_rsp=0x3fbfc00001",
    );
    // tools/perf/pmu-events/arch/x86/alderlake/virtual-memory.json
    assert_terms(
        adl,
        "cpu_core",
        "DTLB_LOAD_MISSES.WALK_COMPLETED",
        "event=0x12,umask=0xe",
    );
    assert_terms(
        adl,
        "cpu_atom",
        "DTLB_LOAD_MISSES.WALK_COMPLETED",
        "event=0x08,umask=0x0e",
    );
    // tools/perf/pmu-events/arch/x86/alderlake/cache.json
    assert_terms(
        adl,
        "cpu_core",
        "MEM_LOAD_L3_MISS_RETIRED.LOCAL_DRAM",
        "event=0xd3,umask=0x1",
    );
    assert_terms(
        adl,
        "cpu_atom",
        "MEM_UOPS_RETIRED.LOAD_LATENCY_GT_128",
        "event=0xd0,umask=0x5,ldlat=0x80",
    );
    assert!(find(adl, "cpu_core", "MEM_LOAD_RETIRED.L3_MISS").precise);
}

#[test]
fn amd_spot_checks() {
    // amdzen2/core.json, memory.json, cache.json, other.json
    assert_terms(Model::Zen2, "cpu", "ex_ret_cops", "event=0xc1");
    assert_terms(
        Model::Zen2,
        "cpu",
        "ls_refills_from_sys.ls_mabresp_lcl_dram",
        "event=0x43,umask=0x08",
    );
    assert_terms(
        Model::Zen2,
        "cpu",
        "l2_cache_req_stat.ls_rd_blk_c",
        "event=0x64,umask=0x8",
    );
    assert_terms(
        Model::Zen2,
        "cpu",
        "de_dis_dispatch_token_stalls0.retire_token_stall",
        "event=0xaf,umask=0x20",
    );
    // amdzen3/core.json, memory.json, cache.json
    assert_terms(
        Model::Zen3,
        "cpu",
        "ex_ret_msprd_brnch_instr_dir_msmtch",
        "event=0x1c7",
    );
    assert_terms(
        Model::Zen3,
        "cpu",
        "ls_dmnd_fills_from_sys.mem_io_remote",
        "event=0x43,umask=0x40",
    );
    assert_terms(
        Model::Zen3,
        "cpu",
        "ic_tag_hit_miss.instruction_cache_miss",
        "event=0x18e,umask=0x18",
    );
    // amdzen4/other.json, cache.json, core.json
    assert_terms(
        Model::Zen4,
        "cpu",
        "de_no_dispatch_per_slot.backend_stalls",
        "event=0x1a0,umask=0x1e",
    );
    assert_terms(
        Model::Zen4,
        "cpu",
        "de_src_op_disp.all",
        "event=0xaa,umask=0x07",
    );
    assert_terms(
        Model::Zen4,
        "cpu",
        "ls_any_fills_from_sys.dram_io_all",
        "event=0x44,umask=0x48",
    );
    assert_terms(
        Model::Zen4,
        "cpu",
        "ex_no_retire.load_not_complete",
        "event=0xd6,umask=0xa2",
    );
    // amdzen5/l2-cache.json, execution.json, decode.json, load-store.json
    assert_terms(
        Model::Zen5,
        "cpu",
        "l2_request_g1.all_no_prefetch",
        "event=0x60,umask=0xf1",
    );
    assert_terms(Model::Zen5, "cpu", "ex_ret_ops", "event=0xc1");
    assert_terms(
        Model::Zen5,
        "cpu",
        "de_no_dispatch_per_slot.no_ops_from_frontend",
        "event=0x1a0,umask=0x01",
    );
    assert_terms(
        Model::Zen5,
        "cpu",
        "ls_dmnd_fills_from_sys.dram_io_far",
        "event=0x43,umask=0x40",
    );
}
