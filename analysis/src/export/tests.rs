//! The writers on a hand-made profile: a group of two events, a function inlined into
//! another, a kernel frame, one thread.

use std::io::Read;

use hwprof_pmu::attr::Attr;
use hwprof_symbolize::{BuildId, EventInfo, Frame, FrameKind, Profile, Sample};
use prost::Message;

use super::pprof::PbProfile;
use super::{Export, Unit, Value};

fn frame(name: &str, module: &str, line: u32, inlined: bool, kind: FrameKind) -> Frame {
    Frame {
        function: Some(name.to_string()),
        module: Some(module.to_string()),
        module_offset: 0x1000 + u64::from(line),
        file: (kind == FrameKind::User).then(|| "app.c".to_string()),
        line: (kind == FrameKind::User).then_some(line),
        inlined,
        kind,
    }
}

fn sample(event: u32, period: u64, stack: Vec<u32>) -> Sample {
    Sample {
        event,
        pid: 10,
        tid: 11,
        comm: 0,
        time: Some(1_000_000 + u64::from(event) * 1000 + period),
        cpu: None,
        period,
        weight: None,
        count: 1,
        stack,
    }
}

/// cycles and instructions; `mix` inlined into `checksum`, called by `main`; a kernel
/// `schedule` under `main`.
fn export() -> Export {
    let event = |name: &str| EventInfo {
        name: name.to_string(),
        attr: Attr::default(),
    };
    let p = Profile {
        events: vec![event("cycles"), event("instructions")],
        frames: vec![
            frame("mix", "/bin/app", 5, true, FrameKind::User),
            frame("checksum", "/bin/app", 20, false, FrameKind::User),
            frame("main", "/bin/app", 30, false, FrameKind::User),
            frame("schedule", "[kernel.kallsyms]", 0, false, FrameKind::Kernel),
        ],
        comms: vec!["app".to_string()],
        samples: vec![
            sample(0, 100, vec![0, 1, 2]),
            sample(1, 300, vec![0, 1, 2]),
            sample(0, 50, vec![3, 2]),
        ],
        ..Profile::default()
    };
    let mut ids = rustc_hash::FxHashMap::default();
    ids.insert("/bin/app".to_string(), BuildId::new(vec![0xab, 0xcd]));
    Export::from_profile(p, ids)
}

#[test]
fn series_are_the_events_in_their_units() {
    let e = export();
    let got: Vec<(&str, Unit, Value)> = e
        .series
        .iter()
        .map(|s| (s.name.as_str(), s.unit, s.value))
        .collect();
    assert_eq!(
        got,
        [
            ("cycles", Unit::Count, Value::Period),
            ("instructions", Unit::Count, Value::Period)
        ]
    );
}

/// The gzipped profile.proto, gunzipped and decoded.
fn pprof() -> PbProfile {
    let mut gz = Vec::new();
    super::pprof::write(&export(), &mut gz).expect("write");
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut bytes)
        .expect("gunzip");
    PbProfile::decode(&bytes[..]).expect("decode")
}

#[test]
fn pprof_has_one_column_per_event_and_inlined_lines_innermost_first() {
    let p = pprof();
    let s = |i: i64| p.string_table[i as usize].as_str();
    let types: Vec<(&str, &str)> = p
        .sample_type
        .iter()
        .map(|t| (s(t.r#type), s(t.unit)))
        .collect();
    assert_eq!(types, [("cycles", "count"), ("instructions", "count")]);
    let values: Vec<Vec<i64>> = p.sample.iter().map(|x| x.value.clone()).collect();
    assert_eq!(values, [vec![100, 0], vec![0, 300], vec![50, 0]]);
    // mix and checksum are one location (one address), mix first; then main.
    let first = &p.sample[0];
    assert_eq!(first.location_id.len(), 2);
    assert_eq!(
        p.sample[1].location_id, first.location_id,
        "shared locations"
    );
    let loc = |id: u64| p.location.iter().find(|l| l.id == id).expect("location");
    let func = |id: u64| p.function.iter().find(|f| f.id == id).expect("function");
    let lines: Vec<(&str, &str, i64)> = loc(first.location_id[0])
        .line
        .iter()
        .map(|l| {
            let f = func(l.function_id);
            (s(f.name), s(f.filename), l.line)
        })
        .collect();
    assert_eq!(lines, [("mix", "app.c", 5), ("checksum", "app.c", 20)]);
    let main = loc(first.location_id[1]);
    assert_eq!(s(func(main.line[0].function_id).name), "main");
    // The module's mapping with its build id; the kernel's without one.
    let m = p
        .mapping
        .iter()
        .find(|m| m.id == main.mapping_id)
        .expect("mapping");
    assert_eq!((s(m.filename), s(m.build_id)), ("/bin/app", "abcd"));
    let k = loc(p.sample[2].location_id[0]);
    let km = p
        .mapping
        .iter()
        .find(|m| m.id == k.mapping_id)
        .expect("kernel mapping");
    assert_eq!((s(km.filename), s(km.build_id)), ("[kernel.kallsyms]", ""));
    // Labels.
    let labels: Vec<(&str, &str, i64)> = first
        .label
        .iter()
        .map(|l| (s(l.key), s(l.str), l.num))
        .collect();
    assert_eq!(
        labels,
        [("comm", "app", 0), ("pid", "", 10), ("tid", "", 11)]
    );
}

#[test]
fn speedscope_stacks_are_root_first_per_thread_and_series() {
    let doc = super::speedscope::document(&export(), "x.data");
    let frames = doc["shared"]["frames"].as_array().expect("frames");
    let profiles = doc["profiles"].as_array().expect("profiles");
    let names: Vec<&str> = profiles.iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(names, ["app 10/11: cycles", "app 10/11: instructions"]);
    let first: Vec<&str> = profiles[0]["samples"][0]
        .as_array()
        .expect("stack")
        .iter()
        .map(|i| {
            frames[i.as_u64().expect("index") as usize]["name"]
                .as_str()
                .unwrap_or("")
        })
        .collect();
    assert_eq!(first, ["main", "checksum", "mix [inlined]"]);
    assert_eq!(profiles[0]["weights"], serde_json::json!([100, 50]));
    assert_eq!(profiles[1]["weights"], serde_json::json!([300]));
    assert_eq!(profiles[0]["unit"], "none");
}

#[test]
fn firefox_puts_the_first_event_on_the_thread_and_others_beside_it() {
    let fx = super::firefox::profile(&export(), "hwprof");
    let v = serde_json::to_value(&fx).expect("json");
    let threads: Vec<&str> = v["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(threads, ["app", "app (instructions)"]);
    assert_eq!(v["threads"][0]["samples"]["length"], 2);
    assert_eq!(v["threads"][1]["samples"]["length"], 1);
}

/// A thread that exec'd (`bash` forked it, `python3` is what it ran) is named by its
/// last command in every format that names threads: the python recording's two busy
/// threads were tracks named `bash` where perf reports `python3`.
#[test]
fn a_thread_is_named_by_its_last_command() {
    let mut e = export();
    e.profile.comms.push("python3".to_string());
    if let Some(last) = e.profile.samples.last_mut() {
        last.comm = 1;
    }
    let doc = super::speedscope::document(&e, "x.data");
    let names: Vec<&str> = doc["profiles"]
        .as_array()
        .expect("profiles")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names[0], "python3 10/11: cycles");
    let mut main = e;
    for s in &mut main.profile.samples {
        s.tid = s.pid;
    }
    let v = serde_json::to_value(super::firefox::profile(&main, "hwprof")).expect("json");
    assert_eq!(v["threads"][0]["name"], "python3");
    assert_eq!(v["threads"][0]["processName"], "python3");
}
