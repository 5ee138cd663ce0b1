//! Loader for Intel perfmon-format event JSON (the files of intel/perfmon and of the
//! kernel's `tools/perf/pmu-events/arch/x86/`).
//!
//! Each event's fields map to format terms as perf's jevents maps them:
//! EventCode -> `event` (the first code when two are listed), UMask -> `umask`,
//! CounterMask -> `cmask`, Invert -> `inv`, EdgeDetect -> `edge`, AnyThread -> `any`,
//! and MSRIndex/MSRValue -> `ldlat` (0x3F6), `offcore_rsp` (0x1A6/0x1A7) or `frontend`
//! (0x3F7) in config1.

use std::path::Path;

use serde_json::Value;

use super::{Category, EventDef, EventTable};
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
    Ok(EventTable::new(path.display().to_string(), events))
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
