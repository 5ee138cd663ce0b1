//! Opening the perf.data files that `script`, `report`, `flamegraph`, `mem` and `c2c`
//! read, printing the notices of symbolizing them, and reading the memory samples of a
//! recording (`mem report`, `c2c report`, `flamegraph --mem`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use hwprof_analysis::mem::{self, MemProfile};
use hwprof_pmu::file::FileError;
use hwprof_sampler::Error as SErr;
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_symbolize::{Options, Profile};

use crate::error::Usage;

/// Opens `path` (`-`: a pipe-mode stream on stdin) and prints the reader's warnings (a
/// damaged header feature, say) once. Only a regular file is read: a FIFO, a device or
/// a directory is a usage error (exit 2) naming what it is, and nothing is read from
/// it; a file that cannot be opened is one line, `cannot open FILE: No such file or
/// directory`.
pub fn open(path: &Path) -> anyhow::Result<PerfData> {
    let data = match PerfData::open(path) {
        Ok(d) => d,
        Err(SErr::File(e)) if e.is_bad_input() => {
            let hint = match &e {
                FileError::NotRegular { kind, .. } if *kind == "a FIFO" => {
                    "; for a pipe-mode stream, give `-i -` with the stream on stdin"
                }
                _ => "",
            };
            return Err(Usage(format!("{e}{hint}")).into());
        }
        // These name the file already.
        Err(e @ (SErr::File(_) | SErr::Io { .. } | SErr::NotPerfData { .. })) => {
            return Err(e.into());
        }
        Err(e) => return Err(e).context(format!("reading {}", path.display())),
    };
    for w in data.warnings() {
        eprintln!("hwprof: warning: {}", crate::render::escape(w));
    }
    Ok(data)
}

/// Prints what finding the recording's files did that a user should know (debuginfod
/// downloads, servers that could not be reached), once each.
pub fn notices(p: &Profile) {
    for n in &p.notices {
        eprintln!("hwprof: note: {}", crate::render::escape(n));
    }
}

/// Reads the memory samples of `input`; a recording without any is a usage error, and
/// events without any (their samples carry DATA_SRC but say nothing) are named in a note.
pub fn load_memory(input: &std::path::Path, symfs: Option<PathBuf>) -> anyhow::Result<MemProfile> {
    let pd = crate::input::open(input)?;
    let opts = Options {
        symfs,
        ..Options::default()
    };
    let p = mem::collect(&pd, &opts)?;
    for n in &p.notices {
        eprintln!("hwprof: note: {}", crate::render::escape(n));
    }
    if p.is_empty() {
        return Err(no_memory_samples(input, p.with_source()));
    }
    for e in p.not_memory_events() {
        eprintln!(
            "hwprof: note: {} samples of {} carry no data source (every one N/A): left out",
            p.total(e).samples,
            p.events.get(e as usize).map_or("?", |s| s.as_str())
        );
    }
    Ok(p)
}

/// The usage error of a recording without memory samples (`with_source`: its samples
/// that carry a data source field, all N/A).
pub fn no_memory_samples(input: &std::path::Path, with_source: u64) -> anyhow::Error {
    let why = if with_source == 0 {
        "no sample carries a data source".to_string()
    } else {
        format!(
            "its {with_source} samples carry a data source field, but every one is N/A \
             (their events do not sample memory; --call-graph dwarf asks for the field, as perf does)"
        )
    };
    crate::error::Usage(format!(
        "{} has no memory samples: {why}; record loads and stores with `perf mem record` \
         or `perf c2c record` (or `hwprof record -e cpu/mem-loads/P -d` on a PEBS CPU)",
        input.display()
    ))
    .into()
}

/// Reads and symbolizes `path` with `opts` (the file is closed before the profile is
/// finished), its notices said; the build ids its header records, by path; an error
/// when it has no samples. What report and annotate read.
pub fn load_profile(
    path: &Path,
    opts: &Options,
) -> anyhow::Result<(
    Profile,
    std::collections::HashMap<String, hwprof_symbolize::buildid::BuildId>,
)> {
    let data = open(path)?;
    let ids = hwprof_symbolize::buildid::by_path(data.features())
        .into_iter()
        .collect();
    let replayed = hwprof_symbolize::ProfileBuilder::new(&data, opts)
        .replay()
        .with_context(|| format!("reading {}", path.display()))?;
    drop(data);
    let p = replayed.finish().profile;
    notices(&p);
    if p.samples.is_empty() {
        anyhow::bail!("{} has no samples", path.display());
    }
    Ok((p, ids))
}

/// The events `--event NAME` names in `p` (read from `path`), or every event with
/// samples without one; a usage error naming the file's events when none has the
/// name. (report, annotate)
pub fn events_to_show(event: Option<&str>, path: &Path, p: &Profile) -> anyhow::Result<Vec<usize>> {
    match event {
        Some(name) => {
            let found: Vec<usize> = (0..p.events.len())
                .filter(|&i| p.events.get(i).is_some_and(|e| e.name == name))
                .collect();
            if found.is_empty() {
                let names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
                return crate::error::usage(format!(
                    "no event '{name}' in {} (its events: {})",
                    path.display(),
                    names.join(", ")
                ));
            }
            Ok(found)
        }
        None => Ok(hwprof_analysis::report::events_with_samples(p)),
    }
}
