//! Loader for Intel perfmon-format event JSON (the files of intel/perfmon and of the
//! kernel's `tools/perf/pmu-events/arch/x86/`).
//!
//! Each event's fields map to format terms as perf's jevents maps them:
//! EventCode -> `event` (the first code when two are listed), UMask -> `umask`,
//! CounterMask -> `cmask`, Invert -> `inv`, EdgeDetect -> `edge`, AnyThread -> `any`,
//! and MSRIndex/MSRValue -> `ldlat` (0x3F6), `offcore_rsp` (0x1A6/0x1A7) or `frontend`
//! (0x3F7) in config1.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Category, EventDef, EventTable, TableCpu};
use crate::cpu::{Model, Vendor};
use crate::error::{Error, Result};

/// The largest event file read: Intel's largest perfmon files are a few MiB.
pub const MAX_EVENT_FILE: u64 = 64 << 20;

/// Loads a perfmon JSON file (either `{"Header":..,"Events":[..]}` or a bare array).
/// `pmu` is the PMU the events belong to (`cpu` unless a hybrid core type is meant).
/// Only a regular file of at most [`MAX_EVENT_FILE`] bytes is read (never a FIFO or a
/// device, see [`crate::file`]).
pub fn load_perfmon_json(path: &Path, pmu: &str) -> Result<EventTable> {
    let err = |reason: String| Error::EventFile {
        path: path.display().to_string(),
        reason,
    };
    let text = crate::file::read_to_string(path, MAX_EVENT_FILE).map_err(|e| {
        err(match e {
            // "cannot load event file F: No such file or directory", not "cannot read F: .."
            crate::file::FileError::Io { source, .. }
            | crate::file::FileError::Read { source, .. } => source.to_string(),
            e => e.to_string(),
        })
    })?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| err(format!("not JSON: {e}")))?;
    let list = match &doc {
        Value::Array(a) => a,
        Value::Object(o) => match o.get("Events") {
            Some(Value::Array(a)) => a,
            _ => return Err(err("no \"Events\" array".into())),
        },
        _ => return Err(err("expected an object or an array of events".into())),
    };
    let mut events = Vec::with_capacity(list.len());
    for (i, v) in list.iter().enumerate() {
        if let Some(def) = convert(v, pmu).map_err(|r| err(format!("event #{i}: {r}")))? {
            events.push(def);
        }
    }
    if events.is_empty() {
        return Err(err("no events with EventName and EventCode".into()));
    }
    let cpu = file_cpu(path, &doc, &events);
    Ok(EventTable::new(path.display().to_string(), events).with_cpu(cpu))
}

/// The largest `mapfile.csv` read (intel/perfmon's is about 20 KiB).
const MAX_MAPFILE: u64 = 1 << 20;

/// What CPU an event file is for, as far as it says: a model in its name or its
/// folders (`skylakex_core.json`, perfmon's `SKX/events/`, the kernel's `amdzen4/`),
/// the CPUIDs a `mapfile.csv` up to three folders above maps to it, its header's
/// copyright, or terms only Intel PMUs have (`offcore_rsp`, `ldlat`, `frontend`).
fn file_cpu(path: &Path, doc: &Value, events: &[EventDef]) -> Option<TableCpu> {
    let full = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let cpuids = mapfile_cpuids(&full);
    let parsed: Vec<(Vendor, u32, u32)> = cpuids.iter().filter_map(|c| parse_cpuid(c)).collect();
    let model = names_near(&full)
        .into_iter()
        .find_map(|n| model_named(&n))
        .or_else(|| {
            parsed
                .iter()
                .find_map(|&(v, f, m)| Model::from_cpuid(v, f, m))
        });
    let vendor = model
        .map(Model::vendor)
        .or_else(|| parsed.first().map(|&(v, _, _)| v))
        .or_else(|| header_vendor(doc))
        .or_else(|| {
            events
                .iter()
                .any(|e| {
                    e.terms.split(',').any(|t| {
                        let k = t.split('=').next().unwrap_or(t);
                        matches!(k, "offcore_rsp" | "ldlat" | "frontend")
                    })
                })
                .then_some(Vendor::Intel)
        })?;
    Some(TableCpu {
        vendor,
        model,
        cpuids,
    })
}

/// The file's stem (and its first `_` word) and the names of its two folders.
fn names_near(full: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(stem) = full.file_stem().and_then(|s| s.to_str()) {
        out.push(stem.split('_').next().unwrap_or(stem).to_string());
        out.push(stem.to_string());
    }
    for dir in full.ancestors().skip(1).take(2) {
        if let Some(n) = dir.file_name().and_then(|s| s.to_str()) {
            out.push(n.to_string());
        }
    }
    out
}

/// A model named by a file or folder name: `skylake`, `SKX`, `amdzen4`.
fn model_named(name: &str) -> Option<Model> {
    let l = name.to_ascii_lowercase();
    Model::from_name(l.strip_prefix("amd").unwrap_or(&l)).ok()
}

/// `Intel` or `AMD` from a perfmon header's copyright or description.
fn header_vendor(doc: &Value) -> Option<Vendor> {
    let h = doc.get("Header")?;
    let text: String = ["Copyright", "Info"]
        .iter()
        .filter_map(|k| h.get(k).and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    if text.contains("Intel") {
        Some(Vendor::Intel)
    } else if text.contains("AMD") || text.contains("Advanced Micro Devices") {
        Some(Vendor::Amd)
    } else {
        None
    }
}

/// The CPUIDs (`GenuineIntel-6-55`) that a `mapfile.csv` in one of the three folders
/// above `full` maps to it (its `Filename` column is the path below that folder).
fn mapfile_cpuids(full: &Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for dir in full.ancestors().skip(1).take(3) {
        let map: PathBuf = dir.join("mapfile.csv");
        let Ok(rel) = full.strip_prefix(dir) else {
            continue;
        };
        let rel = format!("/{}", rel.display());
        // Only a regular file of bounded size (never a FIFO or a device).
        let Ok(text) = crate::file::read_to_string(&map, MAX_MAPFILE) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let mut cols = line.split(',');
            let (Some(id), _, Some(file)) = (cols.next(), cols.next(), cols.next()) else {
                continue;
            };
            if file.trim().eq_ignore_ascii_case(&rel) && !out.iter().any(|o| o == id.trim()) {
                out.push(id.trim().to_string());
            }
        }
        if !out.is_empty() {
            break;
        }
    }
    out
}

/// `GenuineIntel-6-4E` as vendor, family and model (hex); `None` for the patterns
/// some mapfiles use.
fn parse_cpuid(id: &str) -> Option<(Vendor, u32, u32)> {
    let mut parts = id.split('-');
    let vendor = match parts.next()? {
        "GenuineIntel" => Vendor::Intel,
        "AuthenticAMD" => Vendor::Amd,
        _ => return None,
    };
    let family = parts.next()?.parse().ok()?;
    let model = u32::from_str_radix(parts.next()?, 16).ok()?;
    Some((vendor, family, model))
}

fn field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// Parses `0x1F`, `31`, or the first of a list `0xB7, 0xBB`.
fn number(s: &str) -> std::result::Result<u64, String> {
    let first = s.split(',').next().unwrap_or(s).trim();
    let r = match first
        .strip_prefix("0x")
        .or_else(|| first.strip_prefix("0X"))
    {
        Some(h) => u64::from_str_radix(h, 16),
        None => first.parse(),
    };
    r.map_err(|_| format!("bad number '{s}'"))
}

fn convert(v: &Value, pmu: &str) -> std::result::Result<Option<EventDef>, String> {
    let (Some(name), Some(code)) = (field(v, "EventName"), field(v, "EventCode")) else {
        return Ok(None);
    };
    let mut terms = vec![format!("event={:#x}", number(code)?)];
    let num = |k: &str| -> std::result::Result<u64, String> {
        field(v, k).map(number).transpose().map(|x| x.unwrap_or(0))
    };
    let umask = num("UMask")?;
    if umask != 0 {
        terms.push(format!("umask={umask:#x}"));
    }
    for (key, term) in [
        ("EdgeDetect", "edge"),
        ("AnyThread", "any"),
        ("Invert", "inv"),
    ] {
        if num(key)? != 0 {
            terms.push(format!("{term}=1"));
        }
    }
    let cmask = num("CounterMask")?;
    if cmask != 0 {
        terms.push(format!("cmask={cmask:#x}"));
    }
    let msr_value = num("MSRValue")?;
    if let Some(idx) = field(v, "MSRIndex") {
        let idx = number(idx)?;
        let term = match idx {
            0 => None,
            0x3f6 => Some("ldlat"),
            0x1a6 | 0x1a7 => Some("offcore_rsp"),
            0x3f7 => Some("frontend"),
            other => return Err(format!("{name}: MSRIndex {other:#x} has no format term")),
        };
        if let Some(t) = term {
            terms.push(format!("{t}={msr_value:#x}"));
        }
    }
    let precise = num("PEBS")? > 0 || num("Precise")? > 0;
    let desc = field(v, "BriefDescription").unwrap_or("").to_string();
    Ok(Some(EventDef {
        name: name.to_string(),
        pmu: pmu.to_string(),
        terms: terms.join(","),
        category: guess_category(
            name,
            field(v, "MSRIndex").map(number).transpose()?.unwrap_or(0),
        ),
        precise,
        desc,
    }))
}

fn guess_category(name: &str, msr: u64) -> Category {
    let n = name.to_ascii_uppercase();
    if msr == 0x3f6 {
        Category::LoadLatency
    } else if n.starts_with("TOPDOWN") || n.starts_with("PERF_METRICS") {
        Category::TopDown
    } else if n.contains("TLB") || n.contains("PAGE_WALK") {
        Category::Tlb
    } else if n.starts_with("BR_") || n.contains("BRANCH") {
        Category::Branch
    } else if n.starts_with("OFFCORE") || n.starts_with("OCR.") || n.contains("DRAM") {
        Category::Memory
    } else if n.starts_with("MEM_LOAD")
        || n.starts_with("L1D")
        || n.starts_with("L2_")
        || n.starts_with("LONGEST_LAT")
    {
        Category::Cache
    } else if n.starts_with("FRONTEND")
        || n.starts_with("ICACHE")
        || n.starts_with("IDQ")
        || n.starts_with("DSB")
    {
        Category::Frontend
    } else if n.starts_with("INST_RETIRED") || n.starts_with("CPU_CLK") || n.starts_with("UOPS") {
        Category::Pipeline
    } else {
        Category::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_cpu_of_a_file() {
        assert_eq!(
            model_named("skylakex"),
            Some(Model::SkylakeX),
            "a perfmon file stem"
        );
        assert_eq!(model_named("SKX"), Some(Model::SkylakeX));
        assert_eq!(model_named("amdzen4"), Some(Model::Zen4));
        assert_eq!(model_named("events"), None);
        assert_eq!(
            parse_cpuid("GenuineIntel-6-4E"),
            Some((Vendor::Intel, 6, 0x4e))
        );
        assert_eq!(parse_cpuid("AuthenticAMD-25-[[:xdigit:]]+"), None);
        let doc: Value = serde_json::from_str(
            r#"{"Header":{"Copyright":"Copyright (c) 2001 - 2024 Intel Corporation."}}"#,
        )
        .unwrap();
        assert_eq!(header_vendor(&doc), Some(Vendor::Intel));
        let cpu = file_cpu(Path::new("/nonexistent/x/events.json"), &Value::Null, &[]);
        assert_eq!(cpu, None);
    }

    #[test]
    fn converts_load_latency_and_offcore() {
        let v: Value = serde_json::from_str(
            r#"{"EventCode":"0xcd","UMask":"0x01","EventName":"MEM_TRANS_RETIRED.LOAD_LATENCY_GT_64",
                "MSRIndex":"0x3F6","MSRValue":"0x40","CounterMask":"0","Invert":"0","EdgeDetect":"0","Precise":"1"}"#,
        )
        .unwrap();
        let d = convert(&v, "cpu").unwrap().unwrap();
        assert_eq!(d.terms, "event=0xcd,umask=0x1,ldlat=0x40");
        assert!(d.precise);
        assert_eq!(d.category, Category::LoadLatency);
        let v: Value = serde_json::from_str(
            r#"{"EventCode":"0xB7, 0xBB","UMask":"0x01","EventName":"OFFCORE_RESPONSE.X",
                "MSRIndex":"0x1a6,0x1a7","MSRValue":"0x3FBC000001","CounterMask":"2","Invert":"1","EdgeDetect":"1"}"#,
        )
        .unwrap();
        let d = convert(&v, "cpu").unwrap().unwrap();
        assert_eq!(
            d.terms,
            "event=0xb7,umask=0x1,edge=1,inv=1,cmask=0x2,offcore_rsp=0x3fbc000001"
        );
    }
}
