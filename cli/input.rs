//! Opening the perf.data files that `script`, `report` and `flamegraph` read.

use std::path::Path;

use anyhow::Context;
use hwprof_sampler::Error as SErr;
use hwprof_sampler::perfdata::reader::PerfData;

/// Opens `path` (`-`: a pipe-mode stream on stdin) and prints the reader's warnings (a
/// damaged header feature, say) once. A file that cannot be opened is one line,
/// `cannot open FILE: No such file or directory`, without Rust's "(os error 2)".
pub fn open(path: &Path) -> anyhow::Result<PerfData> {
    let data = match PerfData::open(path) {
        Ok(d) => d,
        Err(SErr::Io { context, source }) => {
            let msg = source.to_string();
            let msg = match msg.find(" (os error") {
                Some(n) => &msg[..n],
                None => &msg,
            };
            anyhow::bail!("{context}: {msg}");
        }
        Err(e) => return Err(e).context(format!("reading {}", path.display())),
    };
    for w in data.warnings() {
        eprintln!("hwprof: warning: {w}");
    }
    Ok(data)
}
