//! Output files of every command, through [`hwprof_sampler::outfile`] (temporary file
//! renamed over regular files only, devices and FIFOs written directly, modes 0600 for
//! perf.data and `0666 & ~umask` for reports), with its errors turned into the binary's:
//! a path that cannot be an output (a directory, a socket, a missing directory) is a
//! usage error (exit 2), anything else a failure (exit 1).
//!
//! A FIFO without a reader is waited for (as perf does) before any workload starts, and
//! only until the stop (Ctrl-C, SIGTERM): then nothing has run, and hwprof exits with
//! 128 + the signal. Writes into a FIFO, a device or a pipe on stdout whose reader
//! stalls end the same way (see [`hwprof_sampler::outfile::gate`]).

use std::io::{BufWriter, IsTerminal, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use anyhow::Context;
use hwprof_pmu::stop::Stop;
use hwprof_sampler::outfile::{self, Error, Options, Output, ScratchDir};

/// Opens `path` as an output (see the module docs): call it before any workload starts.
/// A FIFO without a reader is waited for until `stop`, with a note on stderr.
pub fn create(path: &Path, opts: &Options, stop: &Stop) -> anyhow::Result<Output> {
    let mut waiting = |p: &Path| {
        eprintln!(
            "hwprof: note: waiting for a reader of the FIFO {} (Ctrl-C to give up)",
            crate::render::escape(&p.display().to_string())
        );
    };
    Output::create_until(path, opts, stop, &mut waiting).map_err(convert)
}

/// Finishes `out` (rename into place, or flush).
pub fn commit(out: Output) -> anyhow::Result<()> {
    out.commit().map_err(convert)
}

/// The binary's error for an output error: [`Error::BadPath`] is a usage error.
pub fn convert(e: Error) -> anyhow::Error {
    match e {
        Error::BadPath { msg, .. } => crate::error::Usage(msg).into(),
        other => other.into(),
    }
}

/// What a failed write to stdout says it was doing.
pub const WRITING_STDOUT: &str = "writing to stdout";

/// Writes a command's text to stdout and flushes it; a failure says it was stdout's
/// (`writing to stdout: No space left on device`), keeping the error in its chain (a
/// closed pipe is still one: [`crate::error::is_broken_pipe`]).
pub fn print(text: &[u8]) -> anyhow::Result<()> {
    let mut w = std::io::stdout().lock();
    w.write_all(text)
        .and_then(|()| w.flush())
        .context(WRITING_STDOUT)
}

/// stdout as an [`Output`] stream (a duplicate of fd 1, named `-`): what `-o -` and
/// the commands that print data (`--folded`, `--json`) write into.
pub fn stdout() -> anyhow::Result<Output> {
    let data = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| anyhow::Error::new(e).context("duplicating stdout"))?;
    Ok(Output::from_stream(std::fs::File::from(data), "-"))
}

/// Opens a data output: `-` is [`stdout`] (its writes into a pipe watched by `stop`),
/// anything else [`create`].
pub fn open(path: &Path, opts: &Options, stop: &Stop) -> anyhow::Result<Output> {
    if path.as_os_str() == "-" {
        let mut out = stdout()?;
        out.stop_on(stop).map_err(convert)?;
        Ok(out)
    } else {
        create(path, opts, stop)
    }
}

/// [`open`] without a stop, for outputs opened after the target has run by a command
/// whose Ctrl-C keeps its default action (drawing a recording): a FIFO blocks until a
/// reader opens it, as with perf, and the signal ends hwprof.
pub fn open_unwatched(path: &Path, opts: &Options) -> anyhow::Result<Output> {
    if path.as_os_str() == "-" {
        stdout()
    } else {
        Output::create(path, opts).map_err(convert)
    }
}

/// Opens the data output of a command that runs a target (a command, or processes it
/// attaches to), before the target starts: as [`open`], then, when the data goes
/// into the file stdout is (`-`, or a path such as `/dev/stdout`), points fd 1 at
/// stderr ([`keep_stdout_clean`]). The one rule of every command: a target's output
/// never mixes with hwprof's data (`flamegraph --folded`, `offcpu --folded`,
/// `bench --json --show-output`, `stat -o -`, `probe -o -`), as perf does for its
/// workload in pipe mode.
pub fn open_for_target(path: &Path, opts: &Options, stop: &Stop) -> anyhow::Result<Output> {
    let out = open(path, opts, stop)?;
    keep_stdout_clean(&out)?;
    Ok(out)
}

/// stdout as a stream for binary data (`record -o -`): refused on a terminal, then
/// opened as [`open_for_target`] does (fd 1 pointed at stderr).
pub fn binary_stdout(stop: &Stop) -> anyhow::Result<Output> {
    if std::io::stdout().is_terminal() {
        return crate::error::usage(
            "-o -: stdout is a terminal; pipe it into a reader (`| perf report -i -`, `| hwprof report -i -`) or redirect it to a file",
        );
    }
    open_for_target(Path::new("-"), &PERF_DATA, stop)
}

/// When `out` is the very file stdout is (`-o -`, `-o /dev/stdout`), points fd 1 at
/// stderr, so that a target's output (or a stray print) cannot mix into the data:
/// whatever hwprof writes to fd 1 afterwards goes to stderr. Nothing changes when
/// stdout is elsewhere.
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

/// Where the report of a command that runs a target goes (`stat`, `probe`): stderr by
/// default (as perf stat: stdout is the target's), or `-o FILE` opened before the
/// target starts with [`open_for_target`] (a temporary file renamed over a regular
/// file, or straight into a device or FIFO, removed on any error; `-` is stdout, and
/// the target's stdout then goes to stderr).
pub enum Sink {
    /// stderr.
    Stderr(std::io::Stderr),
    /// `-o FILE`.
    File(BufWriter<Output>),
}

impl Sink {
    /// stderr, or `path` opened now (call it before the target starts; a FIFO is
    /// waited for until `stop`).
    pub fn open(path: Option<&Path>, stop: &Stop) -> anyhow::Result<Sink> {
        match path {
            None => Ok(Sink::Stderr(std::io::stderr())),
            Some(dest) => Ok(Sink::File(BufWriter::new(open_for_target(
                dest, &REPORT, stop,
            )?))),
        }
    }

    /// The writer.
    pub fn w(&mut self) -> &mut dyn Write {
        match self {
            Sink::Stderr(s) => s,
            Sink::File(w) => w,
        }
    }

    /// Finishes a file (flushed, renamed into place); nothing for stderr.
    pub fn commit(self) -> anyhow::Result<()> {
        if let Sink::File(w) = self {
            let dest = w.get_ref().path().display().to_string();
            let out = w.into_inner().map_err(|e| {
                anyhow::Error::new(e.into_error()).context(format!("writing {dest}"))
            })?;
            commit(out)?;
        }
        Ok(())
    }
}

/// perf.data outputs.
pub const PERF_DATA: Options = outfile::Options::PERF_DATA;
/// Reports: SVG, folded stacks, counts, baselines.
pub const REPORT: Options = outfile::Options::REPORT;

/// What a command that records and then draws (offcpu, io, memory) writes to: its
/// drawing's output, opened first so that a wrong `-o` fails before the command starts
/// (stdout when `to_stdout`: the command's own stdout then goes to stderr), and where
/// the recording goes (`keep`, its `--data-file`, else a private scratch directory,
/// 0700, removed when the [`ScratchDir`] is dropped).
pub fn record_then_draw(
    output: &Path,
    to_stdout: bool,
    keep: Option<&Path>,
    stop: &Stop,
) -> anyhow::Result<(Option<Output>, PathBuf, Option<ScratchDir>)> {
    let dest = if to_stdout { Path::new("-") } else { output };
    let early = open_for_target(dest, &REPORT, stop)?;
    let (data, scratch) = recording_path(keep, &std::env::temp_dir())?;
    Ok((Some(early), data, scratch))
}

/// The drawing of a command that recorded first (offcpu, io, memory): `bytes` to stdout
/// when `to_stdout`, else to `output` with a line saying so and what it holds
/// (`hwprof: wrote FILE (TITLE)`); into `early` when it was opened before recording.
pub(crate) fn write_drawn(
    output: &Path,
    to_stdout: bool,
    early: Option<Output>,
    bytes: &[u8],
    title: &str,
) -> anyhow::Result<()> {
    if to_stdout {
        return write_output(Path::new("-"), early, bytes);
    }
    write_output(output, early, bytes)?;
    let wrote = format!("{} ({title})", output.display());
    eprintln!("hwprof: wrote {}", crate::render::escape(&wrote));
    Ok(())
}

/// Writes `bytes` to `path` ([`crate::destination`], reports' mode; `-` is stdout), into
/// `early` when the output was opened before recording.
pub(crate) fn write_output(path: &Path, early: Option<Output>, bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = match early {
        Some(o) => o,
        None => crate::destination::open_unwatched(path, &crate::destination::REPORT)?,
    };
    out.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    crate::destination::commit(out)
}
