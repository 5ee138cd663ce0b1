//! speedscope: its JSON file format (`https://www.speedscope.app/file-format-schema.json`,
//! shipped by the `speedscope` npm package as `file-format-schema.json`).
//!
//! The frames are the profile's functions, shared (`shared.frames`: name, file, the
//! first line seen; kernel frames marked ` [k]`, inlined ones ` [inlined]`); one
//! `sampled` profile per thread and [`Series`](super::Series), named
//! `comm pid/tid: series`, in the series' unit (`none` for counts), each stack root
//! first with its weight.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use serde_json::{Value as Json, json};

use super::{Export, Unit, frame_name, is_kernel};

/// speedscope's name of a unit.
fn unit(u: Unit) -> &'static str {
    match u {
        Unit::Nanoseconds => "nanoseconds",
        Unit::Bytes => "bytes",
        Unit::Count => "none",
    }
}

/// The speedscope document of `e`; `name` is the file it came from.
pub fn document(e: &Export, name: &str) -> Json {
    let p = &e.profile;
    // One speedscope frame per function (name and file): the profile's frames of one
    // function at several lines are one box, at its first line seen.
    let mut index: HashMap<(String, Option<&str>), u32> = HashMap::new();
    let mut frames: Vec<Json> = Vec::new();
    let of: Vec<u32> = p
        .frames
        .iter()
        .map(|f| {
            let mut label = frame_name(f);
            if is_kernel(f) {
                label.push_str(" [k]");
            } else if f.inlined {
                label.push_str(" [inlined]");
            }
            *index
                .entry((label, f.file.as_deref()))
                .or_insert_with_key(|(label, file)| {
                    let mut o = serde_json::Map::new();
                    o.insert("name".into(), json!(label));
                    if let Some(file) = file {
                        o.insert("file".into(), json!(file));
                    }
                    if let Some(line) = f.line {
                        o.insert("line".into(), json!(line));
                    }
                    frames.push(Json::Object(o));
                    (frames.len() - 1) as u32
                })
        })
        .collect();
    // (series, pid, tid) -> (comm, stacks, weights)
    type Track = (u32, Vec<Json>, Vec<u64>);
    let mut tracks: BTreeMap<(usize, u32, u32), Track> = BTreeMap::new();
    for s in &p.samples {
        for (i, ser) in e.series.iter().enumerate() {
            let v = ser.of(s);
            if v == 0 {
                continue;
            }
            let t = tracks
                .entry((i, s.pid, s.tid))
                .or_insert_with(|| (s.comm, Vec::new(), Vec::new()));
            // Named by the thread's last command (`python3`, not the `bash` it was
            // before its exec), as perf's thread and samply's track are.
            t.0 = s.comm;
            let stack: Vec<u32> = s
                .stack
                .iter()
                .rev()
                .map(|&f| of.get(f as usize).copied().unwrap_or(0))
                .collect();
            t.1.push(json!(stack));
            t.2.push(v);
        }
    }
    let profiles: Vec<Json> = tracks
        .into_iter()
        .filter_map(|((i, pid, tid), (comm, samples, weights))| {
            let ser = e.series.get(i)?;
            let comm = p
                .comms
                .get(comm as usize)
                .map_or("[unknown]", String::as_str);
            let total: u64 = weights.iter().sum();
            Some(json!({
                "type": "sampled",
                "name": format!("{comm} {pid}/{tid}: {}", ser.name),
                "unit": unit(ser.unit),
                "startValue": 0,
                "endValue": total,
                "samples": samples,
                "weights": weights,
            }))
        })
        .collect();
    // Shown first: the first profile in time (CPU or waits), else the first.
    let active = profiles
        .iter()
        .position(|p| p["unit"] == "nanoseconds")
        .unwrap_or(0);
    json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": { "frames": frames },
        "profiles": profiles,
        "name": name,
        "activeProfileIndex": active,
        "exporter": concat!("hwprof ", env!("CARGO_PKG_VERSION")),
    })
}

/// Writes `e` as a speedscope file.
pub fn write(e: &Export, name: &str, w: impl Write) -> std::io::Result<()> {
    serde_json::to_writer(w, &document(e, name)).map_err(std::io::Error::from)
}
