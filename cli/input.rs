//! Opening the perf.data files that `script`, `report` and `flamegraph` read, and
//! printing the notices of symbolizing them.

use std::path::Path;

use anyhow::Context;
use hwprof_pmu::file::FileError;
use hwprof_sampler::Error as SErr;
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_symbolize::Profile;

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
