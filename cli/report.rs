//! `hwprof report`: the top table of a perf.data file, per event, like
//! `perf report --stdio`, as text or JSON; and `--diff BASE NEW`, like `perf diff`.
//!
//! The file is symbolized once into a [`Profile`]; [`table::aggregate`] groups its samples
//! by the sort keys; [`text`] and [`diff`] render.

mod diff;
mod table;
mod text;

use std::io::{self, Write};
use std::path::Path;

use anyhow::Context;
use hwprof_pmu::attr::sample;
use hwprof_symbolize::{Options, Profile};

use crate::args::ReportArgs;
use crate::usage;
use table::{EventTable, Filter, aggregate};

pub fn run(a: ReportArgs) -> anyhow::Result<u8> {
    if !(a.percent_limit >= 0.0 && a.percent_limit <= 100.0) {
        return usage(format!(
            "--percent-limit must be between 0 and 100, not {}",
            a.percent_limit
        ));
    }
    let opts = Options {
        inline: !a.no_inline,
        merge: true,
        ..Options::default()
    };
    let filter = Filter {
        pids: a.pid.clone(),
        tids: a.tid.clone(),
        comms: a.comm.clone(),
    };
    // perf drops the Command column when --comm names one command.
    let hide_comm = a.comm.len() == 1;
    let out = match &a.diff {
        Some(files) => {
            let [base, new] = files.as_slice() else {
                return usage("--diff takes two files: BASE NEW");
            };
            if a.children {
                return usage("--diff compares self overhead; --children does not apply");
            }
            let pb = load(base, &opts)?;
            let pn = load(new, &opts)?;
            let diffs = diff_events(&a, &filter, (base, &pb), (new, &pn))?;
            if a.json {
                json_text(&diff::json(&diffs, a.percent_limit))?
            } else {
                diff::text(&diffs, &a.sort, hide_comm, a.percent_limit)
            }
        }
        None => {
            let p = load(&a.input, &opts)?;
            let tables = tables(&a, &filter, &a.input, &p)?;
            if a.json {
                json_text(&text::json(&tables, p.lost, a.percent_limit))?
            } else {
                text::tables(&tables, p.lost, &a.sort, hide_comm, a.percent_limit)
            }
        }
    };
    let stdout = io::stdout();
    let mut w = stdout.lock();
    w.write_all(out.as_bytes())?;
    w.flush()?;
    Ok(0)
}

fn json_text(v: &serde_json::Value) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(v)?;
    s.push('\n');
    Ok(s)
}

/// Reads and symbolizes `path`.
fn load(path: &Path, opts: &Options) -> anyhow::Result<Profile> {
    let data = crate::input::open(path)?;
    let p = Profile::from_perf_data(data, opts)
        .with_context(|| format!("reading {}", path.display()))?;
    if p.samples.is_empty() {
        anyhow::bail!("{} has no samples", path.display());
    }
    Ok(p)
}

/// The indexes of the events to show: `--event NAME` (a usage error naming the file's
/// events when it has none of that name), else every event with samples.
fn select_events(a: &ReportArgs, path: &Path, p: &Profile) -> anyhow::Result<Vec<usize>> {
    match &a.event {
        Some(name) => {
            let found: Vec<usize> = (0..p.events.len())
                .filter(|&i| p.events.get(i).is_some_and(|e| &e.name == name))
                .collect();
            if found.is_empty() {
                let names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
                return usage(format!(
                    "no event '{name}' in {} (its events: {})",
                    path.display(),
                    names.join(", ")
                ));
            }
            Ok(found)
        }
        None => {
            let mut with_samples = vec![false; p.events.len()];
            for s in &p.samples {
                if let Some(w) = with_samples.get_mut(s.event as usize) {
                    *w = true;
                }
            }
            Ok((0..p.events.len())
                .filter(|&i| with_samples.get(i) == Some(&true))
                .collect())
        }
    }
}

/// Whether the events carry callchains (perf shows children by default then).
fn has_callchains(p: &Profile, events: &[usize]) -> bool {
    events.iter().any(|&i| {
        p.events
            .get(i)
            .is_some_and(|e| e.attr.sample_type & sample::CALLCHAIN != 0)
    })
}

fn no_match(filter: &Filter, path: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "no sample of {} matches the filters (--pid/--tid/--comm{})",
        path.display(),
        if filter.comms.is_empty() {
            String::new()
        } else {
            format!(": commands {}", filter.comms.join(","))
        }
    )
}

/// The tables of `--event` (or every event) of profile `p`.
fn tables(
    a: &ReportArgs,
    filter: &Filter,
    path: &Path,
    p: &Profile,
) -> anyhow::Result<Vec<EventTable>> {
    let events = select_events(a, path, p)?;
    let children = !a.no_children && (a.children || has_callchains(p, &events));
    let tables: Vec<EventTable> = events
        .iter()
        .map(|&e| aggregate(p, e, &a.sort, filter, children))
        .collect();
    if !filter.is_empty() && tables.iter().all(|t| t.kept_samples == 0) {
        return Err(no_match(filter, path));
    }
    Ok(tables)
}

/// The comparisons of the events both files have (or `--event`).
fn diff_events(
    a: &ReportArgs,
    filter: &Filter,
    (base_path, base): (&Path, &Profile),
    (new_path, new): (&Path, &Profile),
) -> anyhow::Result<Vec<diff::EventDiff>> {
    let base_events = select_events(a, base_path, base)?;
    let new_events = select_events(a, new_path, new)?;
    let mut out = Vec::new();
    for &be in &base_events {
        let Some(name) = base.events.get(be).map(|e| &e.name) else {
            continue;
        };
        let Some(&ne) = new_events
            .iter()
            .find(|&&ne| new.events.get(ne).is_some_and(|e| &e.name == name))
        else {
            continue;
        };
        let tb = aggregate(base, be, &a.sort, filter, false);
        let tn = aggregate(new, ne, &a.sort, filter, false);
        if tb.kept_samples == 0 && tn.kept_samples == 0 {
            continue;
        }
        out.push(diff::compare(&tb, &tn));
    }
    if out.is_empty() {
        if !filter.is_empty() {
            return Err(no_match(filter, base_path));
        }
        let names = |p: &Profile| {
            p.events
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        anyhow::bail!(
            "{} and {} have no event with samples in common ({} vs {})",
            base_path.display(),
            new_path.display(),
            names(base),
            names(new)
        );
    }
    Ok(out)
}
