//! Output files that never clobber what they should not: ONE way for every writer of
//! hwprof (perf.data, `stat -o`, SVG and folded stacks, bench baselines).
//!
//! What `-o PATH` becomes, decided once at [`Output::create`], before any workload runs:
//!
//! | `PATH` (links followed)        | written how                                          |
//! |--------------------------------|------------------------------------------------------|
//! | absent, or a regular file      | a temporary file in the same directory, renamed over `PATH` by [`Output::commit`] ([`Kind::Replace`]) |
//! | character/block device, FIFO   | straight into it, never renamed over, never created or truncated ([`Kind::Direct`]) |
//! | a directory, a socket, a path whose directory is missing | refused: [`Error::BadPath`] |
//!
//! The temporary file is `.NAME.hwprof-PID-RANDOM.tmp`: created with `O_CREAT|O_EXCL`
//! (so a planted file or symlink at that name is never opened, let alone followed; a
//! new random name is tried instead), `O_NOFOLLOW`, `O_CLOEXEC`, and the mode of its
//! [`Access`]: [`Access::Private`] 0600 whatever the umask (perf.data: it holds stack
//! copies, raw tracepoint data and addresses, as perf makes it), [`Access::Shared`]
//! `0666 & ~umask` (reports: SVG, folded stacks, counts, baselines), and never looser
//! than a regular file it replaces. It is removed when the [`Output`] is dropped without
//! [`Output::commit`]: on every error path nothing is left behind.
//!
//! A process killed with SIGKILL cannot remove its temporary file; while it lives the
//! file carries an exclusive `flock`. The next [`Output::create`] or [`ScratchDir::new`]
//! in the same directory, whatever its output's name, removes such leftovers
//! ([`sweep`]: only names of exactly our pattern, this user's, regular files or scratch
//! directories (never symlinks), nobody holding their lock, their PID dead here or
//! reused by a later process).
//!
//! A FIFO without a reader: [`Output::create`] blocks in `open(2)` until one comes, as
//! perf does; [`Output::create_until`] waits for it as long as a [`Stop`] allows, and
//! its writes (into a FIFO, a device, a pipe on stdout with [`Output::stop_on`]) wait
//! for a reader that stalls only as long as the stop allows ([`gate`]).
//!
//! [`ScratchDir`] is the same for private working directories (the recordings that
//! `flamegraph` and `offcpu` draw from): mode 0700, random name, removed on drop.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use hwprof_pmu::stop::Stop;
use rustix::fs::{FlockOperation, flock};
use tempfile::{Builder, TempDir, TempPath};

pub mod gate;
mod sweep;

pub use gate::Stopped;
pub use sweep::{SCRATCH_STEM, sweep, temp_owner};

/// Random characters in a temporary name (62^8 names: unguessable and collision-free).
const RAND_LEN: usize = 8;
/// The longest output name kept in a temporary name (NAME_MAX is 255 bytes).
const STEM_MAX: usize = 160;

/// Why an output cannot be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The path itself is wrong (a directory, a socket, a missing directory, no file
    /// name): the user must name another.
    #[error("{msg}")]
    BadPath {
        /// What is wrong and what to do, naming the path.
        msg: String,
        /// The error behind it, if a syscall said so.
        #[source]
        source: Option<io::Error>,
    },
    /// The path is fine but writing failed (permissions, a full disk...).
    #[error("{context}")]
    Io {
        /// What was being done, naming the path.
        context: String,
        /// The error.
        #[source]
        source: io::Error,
    },
}

impl Error {
    fn bad(msg: impl Into<String>, source: Option<io::Error>) -> Error {
        Error::BadPath {
            msg: msg.into(),
            source,
        }
    }

    fn io(context: impl Into<String>, source: io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// The errno behind this error, if any.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            Error::BadPath { source, .. } => source.as_ref().and_then(io::Error::raw_os_error),
            Error::Io { source, .. } => source.raw_os_error(),
        }
    }
}

impl From<Error> for crate::Error {
    fn from(e: Error) -> crate::Error {
        match e {
            Error::BadPath { msg, source } => crate::Error::Io {
                context: msg,
                source: source.unwrap_or_else(|| io::Error::from(io::ErrorKind::InvalidInput)),
            },
            Error::Io { context, source } => crate::Error::Io { context, source },
        }
    }
}

/// `Result` with the output [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Who may read a new output file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// 0600 whatever the umask: files holding sampled memory (perf.data).
    Private,
    /// `0666 & ~umask`, as any tool's output (and no looser than a file it replaces).
    Shared,
}

/// How an [`Output`] is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A temporary file renamed over the path on commit (absent or regular file).
    Replace,
    /// Straight into an existing device or FIFO.
    Direct,
    /// An already open stream (stdout).
    Stream,
}

/// Options of [`Output::create`].
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The new file's mode.
    pub access: Access,
    /// On commit, move a non-empty regular file at the path to `PATH.old` (perf.data).
    pub keep_old: bool,
}

impl Options {
    /// perf.data: private, the previous file kept as `.old`, as perf does.
    pub const PERF_DATA: Options = Options {
        access: Access::Private,
        keep_old: true,
    };
    /// Reports (SVG, folded, counts, JSON): `0666 & ~umask`, replaced in place.
    pub const REPORT: Options = Options {
        access: Access::Shared,
        keep_old: false,
    };
}

/// The stop a FIFO's reader is waited for until, and what to call while waiting.
type Until<'a> = Option<(&'a Stop, &'a mut dyn FnMut(&Path))>;

/// An output being written. Implements [`Write`] and [`Seek`] (seeking fails on a
/// FIFO or stream: see [`Output::is_seekable`]). Dropped without [`Output::commit`],
/// its temporary file is removed and the path is untouched.
#[derive(Debug)]
pub struct Output {
    /// The path as the user gave it (for messages).
    dest: PathBuf,
    /// Where the temporary file is renamed: `dest`, or the file a symlink `dest` names.
    target: PathBuf,
    file: File,
    /// The temporary file (Replace only); removed on drop unless committed.
    temp: Option<TempPath>,
    kind: Kind,
    seekable: bool,
    keep_old: bool,
    /// Stop-aware writes (FIFOs and devices of [`Output::create_until`], streams
    /// given [`Output::stop_on`]).
    gate: Option<gate::Gate>,
}

impl Output {
    /// Classifies `path` (see the module docs) and opens it: creates the temporary file,
    /// or opens the device or FIFO (a FIFO blocks here until a reader opens it, as with
    /// perf). Fails for a directory, a socket, a missing directory or an unwritable one,
    /// so a caller can check before starting anything.
    pub fn create(path: &Path, opts: &Options) -> Result<Output> {
        Self::create_with(path, opts, &mut |_| {})
    }

    /// [`Output::create`], where a FIFO without a reader is waited for only until
    /// `stop` ([`Error::Io`] carrying [`Stopped`]), calling `waiting` once if there is
    /// none yet; writes into a FIFO or device then wait for a stalled reader only as
    /// long as `stop` allows ([`gate`]).
    pub fn create_until(
        path: &Path,
        opts: &Options,
        stop: &Stop,
        waiting: &mut dyn FnMut(&Path),
    ) -> Result<Output> {
        Self::create_inner(path, opts, &mut |_| {}, Some((stop, waiting)))
    }

    /// [`Output::create`] with a hook called with each candidate temporary name just
    /// before it is opened (tests plant files and symlinks there).
    #[doc(hidden)]
    pub fn create_with(
        path: &Path,
        opts: &Options,
        before_open: &mut dyn FnMut(&Path),
    ) -> Result<Output> {
        Self::create_inner(path, opts, before_open, None)
    }

    fn create_inner(
        path: &Path,
        opts: &Options,
        before_open: &mut dyn FnMut(&Path),
        until: Until<'_>,
    ) -> Result<Output> {
        let shown = path.display();
        if path.as_os_str().is_empty() {
            return Err(Error::bad("empty output path: name a file", None));
        }
        let linked = std::fs::symlink_metadata(path)
            .map(|m| m.file_type().is_symlink())
            .unwrap_or(false);
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => Err(Error::bad(
                format!("{shown} is a directory: name a file (in it, or elsewhere)"),
                Some(io::Error::from_raw_os_error(libc::EISDIR)),
            )),
            Ok(m) if m.is_file() => {
                // A symlink to a regular file: the file is replaced, the link stays.
                let target = if linked {
                    std::fs::canonicalize(path)
                        .map_err(|e| Error::io(format!("cannot resolve the symlink {shown}"), e))?
                } else {
                    path.to_path_buf()
                };
                let mode = match opts.access {
                    Access::Private => 0o600,
                    Access::Shared => 0o666 & m.mode(),
                };
                Self::replace(path, target, mode, opts, before_open)
            }
            Ok(m) if m.file_type().is_socket() => Err(Error::bad(
                format!("{shown} is a socket: hwprof writes files, devices and FIFOs"),
                Some(io::Error::from_raw_os_error(libc::ENXIO)),
            )),
            Ok(m) => Self::direct(path, m.file_type().is_fifo(), until),
            // `-o DIR/` for a DIR that does not exist: the rename at the end would fail
            // (ENOTDIR) after the whole run; say it now.
            Err(e)
                if e.kind() == io::ErrorKind::NotFound
                    && path.as_os_str().as_encoded_bytes().ends_with(b"/") =>
            {
                Err(Error::bad(
                    format!(
                        "{shown} names a directory (it ends in '/'), and there is none: name a file"
                    ),
                    Some(e),
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let mode = match opts.access {
                    Access::Private => 0o600,
                    Access::Shared => 0o666,
                };
                Self::replace(path, path.to_path_buf(), mode, opts, before_open)
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => Err(Error::bad(
                format!("{shown}: a component of the path is not a directory"),
                Some(e),
            )),
            Err(e) => Err(Error::io(format!("cannot write {shown}"), e)),
        }
    }

    /// An already open stream (stdout): written directly, never renamed or removed.
    pub fn from_stream(file: File, name: impl Into<PathBuf>) -> Output {
        let name = name.into();
        let mut file = file;
        let seekable = file.stream_position().is_ok();
        Output {
            dest: name.clone(),
            target: name,
            file,
            temp: None,
            kind: Kind::Stream,
            seekable,
            keep_old: false,
            gate: None,
        }
    }

    /// From now on, writes that find a pipe full wait for its reader only as long as
    /// `stop` allows ([`gate`]): for a stream on a pipe or FIFO (stdout), whose flags
    /// are shared and left alone. Nothing changes for other outputs, or for a FIFO or
    /// device of [`Output::create_until`] (already watched).
    pub fn stop_on(&mut self, stop: &Stop) -> Result<()> {
        if self.gate.is_some() || self.kind != Kind::Stream {
            return Ok(());
        }
        let fifo = self.file.metadata().is_ok_and(|m| m.file_type().is_fifo());
        if fifo {
            let g = gate::Gate::new(stop, false)
                .map_err(|e| Error::io(format!("writing {}", self.dest.display()), e))?;
            self.gate = Some(g);
        }
        Ok(())
    }

    fn replace(
        dest: &Path,
        target: PathBuf,
        mode: u32,
        opts: &Options,
        before_open: &mut dyn FnMut(&Path),
    ) -> Result<Output> {
        let shown = dest.display();
        let name = target
            .file_name()
            .ok_or_else(|| Error::bad(format!("{shown}: not a file name"), None))?;
        let dir = parent_of(&target);
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(Error::bad(
                    format!("cannot write {shown}: {} is not a directory", dir.display()),
                    Some(io::Error::from_raw_os_error(libc::ENOTDIR)),
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(Error::bad(
                    format!(
                        "cannot write {shown}: directory {} does not exist",
                        dir.display()
                    ),
                    Some(e),
                ));
            }
            Err(e) => {
                return Err(Error::io(
                    format!("cannot write {shown}: cannot reach {}", dir.display()),
                    e,
                ));
            }
        }
        let stem = temp_stem(name);
        sweep(&dir);
        let prefix = format!(".{stem}.hwprof-{}-", std::process::id());
        let tmp = Builder::new()
            .prefix(&prefix)
            .suffix(".tmp")
            .rand_bytes(RAND_LEN)
            .make_in(&dir, |p| {
                before_open(p);
                create_exclusive(p, mode)
            })
            .map_err(|e| {
                let e = strip_path(e);
                Error::io(
                    format!(
                        "cannot write {shown}: cannot create a file in {}",
                        dir.display()
                    ),
                    e,
                )
            })?;
        let (file, temp) = tmp.into_parts();
        // Marks the file as in use for `remove_stale` of other processes.
        let _ = flock(&file, FlockOperation::NonBlockingLockExclusive);
        Ok(Output {
            dest: dest.to_path_buf(),
            target,
            file,
            temp: Some(temp),
            kind: Kind::Replace,
            seekable: true,
            keep_old: opts.keep_old,
            gate: None,
        })
    }

    /// Opens a device or FIFO. With a stop (`until`), without blocking: a FIFO waits
    /// for its reader as long as the stop allows, and the descriptor stays
    /// `O_NONBLOCK` under a [`gate::Gate`].
    fn direct(dest: &Path, fifo: bool, until: Until<'_>) -> Result<Output> {
        let shown = dest.display();
        let opened = match until {
            None => OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC)
                .open(dest)
                .map(|f| (f, None)),
            Some((stop, waiting)) => {
                let file = if fifo {
                    gate::open_fifo(dest, stop, waiting)
                } else {
                    OpenOptions::new()
                        .write(true)
                        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
                        .open(dest)
                };
                file.and_then(|f| Ok((f, Some(gate::Gate::new(stop, true)?))))
            }
        };
        let (file, gate) = opened.map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => Error::bad(
                format!("cannot write {shown}: no device or reader behind it"),
                Some(e),
            ),
            _ => Error::io(format!("cannot write {shown}"), e),
        })?;
        let m = file
            .metadata()
            .map_err(|e| Error::io(format!("cannot write {shown}"), e))?;
        if m.is_file() || m.is_dir() {
            return Err(Error::io(
                format!("cannot write {shown}: it changed while being opened; try again"),
                io::Error::from(io::ErrorKind::Interrupted),
            ));
        }
        let mut file = file;
        // A FIFO or a terminal cannot seek; /dev/null and block devices can.
        let seekable = !m.file_type().is_fifo() && file.stream_position().is_ok();
        Ok(Output {
            dest: dest.to_path_buf(),
            target: dest.to_path_buf(),
            file,
            temp: None,
            kind: Kind::Direct,
            seekable,
            keep_old: false,
            gate,
        })
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        &self.dest
    }

    /// The temporary file being written ([`Kind::Replace`] only).
    pub fn temp_path(&self) -> Option<&Path> {
        self.temp.as_deref()
    }

    /// How this output is written.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// True when the output can seek back (a file, `/dev/null`, a block device); false
    /// for FIFOs, terminals and pipes, which need a streaming format (perf.data's pipe
    /// mode).
    pub fn is_seekable(&self) -> bool {
        self.seekable
    }

    /// The open file (for `sync_all`, `metadata`...).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Finishes the output: a temporary file is synced and renamed over the path (after
    /// moving a non-empty regular file there to `PATH.old` when asked), then the
    /// directory is synced; a device, FIFO or stream is flushed. On error the temporary
    /// file is removed and the path keeps what it had.
    pub fn commit(mut self) -> Result<()> {
        let shown = self.dest.display().to_string();
        self.file
            .flush()
            .map_err(|e| Error::io(format!("writing {shown}"), e))?;
        let Some(temp) = self.temp.take() else {
            return Ok(());
        };
        self.file
            .sync_all()
            .map_err(|e| Error::io(format!("writing {shown}"), e))?;
        let target = self.target.clone();
        // Whatever appeared at the path meanwhile, only a regular file (or a symlink,
        // itself replaced) is renamed over.
        match std::fs::symlink_metadata(&target) {
            Ok(m) if !m.is_file() && !m.file_type().is_symlink() => {
                return Err(Error::bad(
                    format!(
                        "{} is no longer a regular file (it became {}): not replacing it",
                        target.display(),
                        hwprof_pmu::file::kind_name(m.file_type())
                    ),
                    None,
                ));
            }
            _ => {}
        }
        let mut old = target.clone().into_os_string();
        old.push(".old");
        let old = PathBuf::from(old);
        let moved = match std::fs::symlink_metadata(&target) {
            Ok(m) if self.keep_old && m.is_file() && m.len() > 0 => {
                std::fs::rename(&target, &old).map_err(|e| {
                    Error::io(
                        format!("moving {} to {}", target.display(), old.display()),
                        e,
                    )
                })?;
                true
            }
            _ => false,
        };
        if let Err(e) = temp.persist(&target) {
            if moved {
                // Put the previous file back rather than leave nothing.
                let _ = std::fs::rename(&old, &target);
            }
            // `e.path` (the TempPath) is dropped here: the temporary file goes.
            return Err(Error::io(
                format!("renaming the temporary file over {}", target.display()),
                e.error,
            ));
        }
        // Best effort: the rename is durable once the directory is synced.
        if let Ok(d) = File::open(parent_of(&target)) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.gate {
            Some(g) => g.write(&mut self.file, buf),
            None => self.file.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Seek for Output {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.file.seek(pos)
    }
}

/// Writes `bytes` to `path` through an [`Output`] (created, written, committed).
pub fn write_file(path: &Path, bytes: &[u8], opts: &Options) -> Result<()> {
    let mut out = Output::create(path, opts)?;
    out.write_all(bytes)
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
    out.commit()
}

/// A private working directory (mode 0700, `.hwprof-scratch.hwprof-PID-RANDOM.tmp`),
/// removed with everything in it on drop; leftovers of killed processes are removed
/// by the next one, as temporary files are.
#[derive(Debug)]
pub struct ScratchDir {
    dir: TempDir,
    /// Held open with an exclusive `flock` while we live.
    _lock: Option<File>,
}

impl ScratchDir {
    /// Creates one in `parent`.
    pub fn new(parent: &Path) -> Result<ScratchDir> {
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        sweep(parent);
        let prefix = format!(".{SCRATCH_STEM}.hwprof-{}-", std::process::id());
        let dir = Builder::new()
            .prefix(&prefix)
            .suffix(".tmp")
            .rand_bytes(RAND_LEN)
            .permissions(Permissions::from_mode(0o700))
            .tempdir_in(parent)
            .map_err(|e| {
                Error::io(
                    format!("cannot create a working directory in {}", parent.display()),
                    strip_path(e),
                )
            })?;
        let lock = File::open(dir.path()).ok();
        if let Some(l) = &lock {
            let _ = flock(l, FlockOperation::NonBlockingLockExclusive);
        }
        Ok(ScratchDir { dir, _lock: lock })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// `O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC` with `mode` (masked by the umask): fails with
/// `AlreadyExists` when anything, a symlink included, has the name.
pub fn create_exclusive(path: &Path, mode: u32) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// The directory of `path` (`.` for a bare name).
fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The output's name as it appears in its temporary names (cut to fit NAME_MAX).
fn temp_stem(name: &OsStr) -> String {
    let s = name.to_string_lossy();
    let mut end = s.len().min(STEM_MAX);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// tempfile's errors name the directory again; the context already does.
fn strip_path(e: io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(n) => io::Error::from_raw_os_error(n),
        None => e,
    }
}

#[cfg(test)]
mod tests;
