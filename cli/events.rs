//! The events a command asks for: the encoder for this machine or a `--cpu` model with
//! `--event-file`s loaded, every `-e` parsed into one list, and that list as the JSON
//! of `hwprof encode --json` and `hwprof record --dry-run`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use hwprof_pmu::cpu::Model;
use hwprof_pmu::{Encoder, EventList};
use serde::Serialize;

/// The encoder for `--cpu MODEL` (or this machine) with `--event-file`s loaded.
pub fn encoder(cpu: Option<&str>, files: &[PathBuf]) -> anyhow::Result<Encoder> {
    let mut enc = match cpu {
        Some(m) => Encoder::for_model(Model::from_name(m)?),
        None => Encoder::host(),
    };
    for f in files {
        enc.add_event_file(f)?;
    }
    Ok(enc)
}

/// Parses every `-e` argument into one list.
pub fn parse_all(enc: &Encoder, events: &[String]) -> anyhow::Result<EventList> {
    let mut list = EventList::default();
    for e in events {
        list.extend(enc.parse(e)?);
    }
    Ok(list)
}

#[derive(Serialize)]
struct Encoded<'a> {
    name: &'a str,
    pmu: &'a str,
    leader: usize,
    attr: &'a hwprof_pmu::attr::Attr,
}

/// Prints `list` as the JSON array `hwprof encode --json` and `hwprof record --dry-run`
/// print: `[{name, pmu, leader, attr}]`.
pub fn print_json(list: &EventList) -> anyhow::Result<()> {
    let v: Vec<Encoded> = list
        .events
        .iter()
        .map(|e| Encoded {
            name: &e.name,
            pmu: &e.pmu,
            leader: e.leader,
            attr: &e.attr,
        })
        .collect();
    let out = std::io::stdout();
    let mut out = out.lock();
    serde_json::to_writer(&mut out, &v).context("writing JSON")?;
    writeln!(out)?;
    Ok(())
}
