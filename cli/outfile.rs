//! Output files of every command, through [`hwprof_sampler::output`] (temporary file
//! renamed over regular files only, devices and FIFOs written directly, modes 0600 for
//! perf.data and `0666 & ~umask` for reports), with its errors turned into the binary's:
//! a path that cannot be an output (a directory, a socket, a missing directory) is a
//! usage error (exit 2), anything else a failure (exit 1).

use std::io::IsTerminal;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use hwprof_sampler::output::{self, Error, Options, Output, ScratchDir};

/// Opens `path` as an output (see the module docs): call it before any workload starts.
pub fn create(path: &Path, opts: &Options) -> anyhow::Result<Output> {
    Output::create(path, opts).map_err(convert)
}

/// Finishes `out` (rename into place, or flush).
pub fn commit(out: Output) -> anyhow::Result<()> {
    out.commit().map_err(convert)
}

/// The binary's error for an output error: [`Error::BadPath`] is a usage error.
pub fn convert(e: Error) -> anyhow::Error {
    match e {
        Error::BadPath { msg, .. } => crate::Usage(msg).into(),
        other => other.into(),
    }
}

/// stdout as a stream for binary data (`record -o -`): refused on a terminal; fd 1 is
/// then pointed at stderr, so that nothing else (a workload started later, a stray
/// print) can mix text into the data, as perf does for its workload in pipe mode.
pub fn binary_stdout() -> anyhow::Result<Output> {
    let stdout = std::io::stdout();
    if stdout.is_terminal() {
        return crate::usage(
            "-o -: stdout is a terminal; pipe it into a reader (`| perf report -i -`, `| hwprof report -i -`) or redirect it to a file",
        );
    }
    let data = stdout
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| anyhow::Error::new(e).context("duplicating stdout"))?;
    rustix::stdio::dup2_stdout(std::io::stderr().as_fd())
        .map_err(|e| anyhow::Error::new(std::io::Error::from(e)).context("redirecting stdout"))?;
    Ok(Output::from_stream(std::fs::File::from(data), "-"))
}

/// When `out` is the very file stdout is (`-o /dev/stdout`), points fd 1 at stderr as
/// [`binary_stdout`] does, so that a workload's output cannot mix into binary data.
pub fn keep_stdout_clean(out: &Output) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let stdout = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(|f| f.metadata());
    let same = match (stdout, out.file().metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    };
    if same {
        rustix::stdio::dup2_stdout(std::io::stderr().as_fd()).map_err(|e| {
            anyhow::Error::new(std::io::Error::from(e)).context("redirecting stdout")
        })?;
    }
    Ok(())
}

/// Where a command that records before it draws (flamegraph, offcpu) puts the
/// recording: `keep` (`--data-file`) as given, or `perf.data` in a new private scratch
/// directory (0700) under `dir`, removed when the returned guard is dropped.
pub fn recording_path(
    keep: Option<&Path>,
    dir: &Path,
) -> anyhow::Result<(PathBuf, Option<ScratchDir>)> {
    match keep {
        Some(f) => Ok((f.to_path_buf(), None)),
        None => {
            let s = ScratchDir::new(dir).map_err(convert)?;
            Ok((s.path().join("perf.data"), Some(s)))
        }
    }
}

/// perf.data outputs.
pub const PERF_DATA: Options = output::Options::PERF_DATA;
/// Reports: SVG, folded stacks, counts, baselines.
pub const REPORT: Options = output::Options::REPORT;
