//! `hwprof encode`: what hwprof would pass to perf_event_open, without opening anything.

use std::io::Write;

use hwprof_pmu::counter::{CountOptions, prepare};

use crate::args::EncodeArgs;
use crate::events::{encoder, parse_all, print_json};

pub fn run(a: EncodeArgs) -> anyhow::Result<()> {
    let enc = encoder(a.cpu.as_deref(), &a.events.event_file)?;
    let mut list = parse_all(&enc, &a.events.events)?;
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
