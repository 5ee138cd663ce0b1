//! `hwprof encode`: what hwprof would pass to perf_event_open, without opening anything.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use hwprof_pmu::counter::{CountOptions, prepare};
use hwprof_pmu::cpu::Model;
use hwprof_pmu::{Encoder, EventList};
use serde::Serialize;

use crate::args::EncodeArgs;

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

pub fn run(a: EncodeArgs) -> anyhow::Result<()> {
    let enc = encoder(a.cpu.as_deref(), &a.event_file)?;
    let mut list = parse_all(&enc, &a.events)?;
    // What `hwprof stat -- CMD` passes: inherit, leaders disabled until exec.
    prepare(
        &mut list,
        CountOptions {
            inherit: true,
            enable_on_exec: true,
        },
    );
    if a.json {
        return print_json(&list);
    }
    let out = std::io::stdout();
    let mut out = out.lock();
    for (i, e) in list.events.iter().enumerate() {
        let a = &e.attr;
        let leader = if e.leader == i {
            "leader".to_string()
        } else {
            format!("member of group led by #{}", e.leader)
        };
        // The name as given and a file's path (uprobes): escaped.
        writeln!(
            out,
            "#{i} {} (pmu {}, {leader})",
            crate::render::escape(&e.name),
            crate::render::escape(&e.pmu)
        )?;
        let rows: [(&str, String); 15] = [
            ("type", a.type_.to_string()),
            ("config", format!("{:#x}", a.config)),
            ("config1", format!("{:#x}", a.config1)),
            ("config2", format!("{:#x}", a.config2)),
            ("precise_ip", a.precise_ip.to_string()),
            ("exclude_user", u8::from(a.exclude_user).to_string()),
            ("exclude_kernel", u8::from(a.exclude_kernel).to_string()),
            ("exclude_hv", u8::from(a.exclude_hv).to_string()),
            ("exclude_host", u8::from(a.exclude_host).to_string()),
            ("exclude_guest", u8::from(a.exclude_guest).to_string()),
            ("sample_type", format!("{:#x}", a.sample_type)),
            ("read_format", format!("{:#x}", a.read_format)),
            ("disabled", u8::from(a.disabled).to_string()),
            ("inherit", u8::from(a.inherit).to_string()),
            ("enable_on_exec", u8::from(a.enable_on_exec).to_string()),
        ];
        for (k, v) in rows {
            writeln!(out, "  {k:<16} {v}")?;
        }
        if a.bp_type != 0 {
            writeln!(out, "  {:<16} {}", "bp_type", a.bp_type)?;
        }
        if let Some(p) = &a.uprobe_path {
            writeln!(out, "  {:<16} {}", "uprobe_path", crate::render::escape(p))?;
        }
    }
    Ok(())
}
