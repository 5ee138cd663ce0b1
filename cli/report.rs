//! `hwprof report`: the top table of a perf.data file, per event, like
//! `perf report --stdio`, as text or JSON; and `--diff BASE NEW`, like `perf diff`.
//!
//! The file is symbolized once into a [`Profile`]; [`hwprof_analysis::report`] groups its
//! samples by the sort keys and compares two files; [`text`] and [`diff`] render.

mod branch;
mod diff;
#[cfg(test)]
mod fixture;
mod graph;
mod text;

use std::path::Path;

use anyhow::Context;
use hwprof_analysis::report::diff::{EventDiff, compare_events};
use hwprof_analysis::report::{self, EventTable, Filter, Keys};
use hwprof_symbolize::{Built, Options, Profile, ProfileBuilder};

use crate::args::{ReportArgs, SortKey};
use crate::error::usage;

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
        symfs: a.input.symfs.clone(),
        ..Options::default()
    };
    let filter = Filter {
        pids: a.input.pid.clone(),
        tids: a.input.tid.clone(),
        comms: a.input.comm.clone(),
    };
    // perf drops the Command column when --comm names one command.
    let hide_comm = a.input.comm.len() == 1;
    if a.branch_sort.is_some() && !a.branch_stack {
        return usage("--branch-sort sorts the branch view: add -b (--branch-stack)");
    }
    let out = match &a.diff {
        _ if a.branch_stack => branches(&a, &filter, &opts)?,
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
            let graph = match &a.call_graph {
                Some(spec) => match graph::parse(spec, a.percent_limit) {
                    Ok(g) => g,
                    Err(e) => return usage(e),
                },
                None => None,
            };
            let p = load(&a.input.file, &opts)?;
            let (events, tables) = tables(&a, &filter, &a.input.file, &p)?;
            let graphs = match graph {
                Some(g) => Some(graphs(&a, &filter, &p, &events, &tables, g)?),
                None => None,
            };
            let graphs = graphs.as_deref();
            if a.json {
                json_text(&text::json(&tables, p.lost, a.percent_limit, graphs))?
            } else {
                text::tables(&tables, p.lost, &a.sort, hide_comm, a.percent_limit, graphs)
            }
        }
    };
    crate::destination::print(out.as_bytes())?;
    Ok(0)
}

/// `report -b`: the branch tables of `--event` (or every event with branch stacks).
fn branches(a: &ReportArgs, filter: &Filter, opts: &Options) -> anyhow::Result<String> {
    use self::branch as render;
    use hwprof_analysis::branch;
    let data = crate::input::open(&a.input.file)?;
    let replayed = ProfileBuilder::new(&data, opts)
        .branches(true)
        .replay()
        .with_context(|| format!("reading {}", a.input.file.display()))?;
    drop(data);
    let Built {
        profile: p,
        branches: bs,
        ..
    } = replayed.finish();
    crate::input::notices(&p);
    let events = select_events(a, &a.input.file, &p)?;
    let mut tables = Vec::new();
    let mut kept = 0;
    for ev in events {
        // As perf, the filters keep the 100%: every branch of the event.
        let all: u64 = bs
            .iter()
            .filter(|b| {
                p.samples
                    .get(b.sample as usize)
                    .is_some_and(|s| s.event as usize == ev)
            })
            .map(|b| b.count)
            .sum();
        if all == 0 {
            continue;
        }
        let keep =
            |s: &hwprof_symbolize::Sample| s.event as usize == ev && filter.keeps(&p.comms, s);
        let keys = a.branch_sort.as_deref().unwrap_or(&branch::PERF_DEFAULT);
        let mut table = branch::table(branch::entries(&p, &bs, keep), keys);
        kept += table.total;
        table.total = all;
        let name = p
            .events
            .get(ev)
            .map_or_else(String::new, |e| e.name.clone());
        tables.push(render::EventBranches { name, table });
    }
    if tables.is_empty() {
        anyhow::bail!(
            "{} has no branch stacks: record with -b (--branch-any) or -j on a CPU with LBR",
            a.input.file.display()
        );
    }
    if kept == 0 {
        return Err(no_match(filter, &a.input.file));
    }
    if a.json {
        json_text(&render::json(&tables, p.lost, a.percent_limit))
    } else {
        Ok(render::text(
            &tables,
            p.lost,
            a.input.comm.len() == 1,
            a.percent_limit,
        ))
    }
}

fn json_text(v: &serde_json::Value) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(v)?;
    s.push('\n');
    Ok(s)
}

/// Reads and symbolizes `path`.
fn load(path: &Path, opts: &Options) -> anyhow::Result<Profile> {
    let (p, _) = crate::input::load_profile(path, opts)?;
    crate::render::note_truncated(&p);
    if let Some(c) = &p.cut_stacks {
        crate::sampling::note_cut_stacks(c);
    }
    Ok(p)
}

/// The indexes of the events to show: `--event NAME` (a usage error naming the file's
/// events when it has none of that name), else every event with samples.
fn select_events(a: &ReportArgs, path: &Path, p: &Profile) -> anyhow::Result<Vec<usize>> {
    crate::input::events_to_show(a.event.as_deref(), path, p)
}

/// The row keys of `--sort`.
pub(crate) fn keys(sort: &[SortKey]) -> Keys {
    Keys {
        comm: sort.contains(&SortKey::Comm),
        pid: sort.contains(&SortKey::Pid),
        tid: sort.contains(&SortKey::Tid),
        dso: sort.contains(&SortKey::Dso),
        sym: sort.contains(&SortKey::Sym),
        srcline: sort.contains(&SortKey::Srcline),
    }
}

/// "No sample matches", naming every filter in effect with its values.
fn no_match(filter: &Filter, path: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "no sample of {} matches the filters ({})",
        path.display(),
        filters_text(filter)
    )
}

/// The filters in effect as they are written: `--pid 12,13 --tid 14 --comm app`.
fn filters_text(filter: &Filter) -> String {
    let list = |v: Vec<String>| v.join(",");
    let num = |v: &[u32]| list(v.iter().map(u32::to_string).collect());
    [
        ("--pid", num(&filter.pids)),
        ("--tid", num(&filter.tids)),
        ("--comm", list(filter.comms.clone())),
    ]
    .into_iter()
    .filter(|(_, v)| !v.is_empty())
    .map(|(flag, v)| format!("{flag} {v}"))
    .collect::<Vec<_>>()
    .join(" ")
}

/// The tables of `--event` (or every event) of profile `p`, with their events.
fn tables(
    a: &ReportArgs,
    filter: &Filter,
    path: &Path,
    p: &Profile,
) -> anyhow::Result<(Vec<usize>, Vec<EventTable>)> {
    let events = select_events(a, path, p)?;
    let children = !a.no_children && (a.children || report::has_callchains(p, &events));
    let tables = report::tables(p, &events, keys(&a.sort), filter, children);
    if !filter.is_empty() && tables.iter().all(|t| t.kept_samples == 0) {
        return Err(no_match(filter, path));
    }
    Ok((events, tables))
}

/// `-g`: the call graph of every shown row of each table (`events[i]`'s is `tables[i]`).
fn graphs(
    a: &ReportArgs,
    filter: &Filter,
    p: &Profile,
    events: &[usize],
    tables: &[EventTable],
    opts: report::callgraph::GraphOptions,
) -> anyhow::Result<Vec<Vec<report::callgraph::Graph>>> {
    if !report::has_callchains(p, events) {
        return usage(format!(
            "-g draws call graphs, and {} has no callchains: record with -g (or --call-graph dwarf)",
            a.input.file.display()
        ));
    }
    let k = keys(&a.sort);
    Ok(events
        .iter()
        .zip(tables)
        .map(|(&e, t)| report::callgraph::graphs(p, e, t, k, filter, a.percent_limit, opts))
        .collect())
}

/// The comparisons of the events both files have (or `--event`).
fn diff_events(
    a: &ReportArgs,
    filter: &Filter,
    (base_path, base): (&Path, &Profile),
    (new_path, new): (&Path, &Profile),
) -> anyhow::Result<Vec<EventDiff>> {
    let base_events = select_events(a, base_path, base)?;
    let new_events = select_events(a, new_path, new)?;
    let k = keys(&a.sort);
    let out = compare_events(
        &report::tables(base, &base_events, k, filter, false),
        &report::tables(new, &new_events, k, filter, false),
    );
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every filter in effect is named with its values (`--pid` was missing).
    #[test]
    fn the_no_match_message_names_every_filter() {
        let f = Filter {
            pids: vec![12, 13],
            tids: vec![],
            comms: vec!["app".into()],
        };
        assert_eq!(
            no_match(&f, Path::new("perf.data")).to_string(),
            "no sample of perf.data matches the filters (--pid 12,13 --comm app)"
        );
        let f = Filter {
            pids: vec![],
            tids: vec![7],
            comms: vec![],
        };
        assert_eq!(filters_text(&f), "--tid 7");
    }
}
