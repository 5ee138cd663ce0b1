//! Finding the files of a recording's modules: the ELF file that holds a module's code
//! and unwind tables ([`Locator::executable`]) and the separate file that holds its
//! symbols and DWARF ([`Locator::debug_file`]), for recordings made on this machine, on
//! another one, or of a binary that has since moved, changed or been stripped.
//!
//! The search is perf's (`dso__load` and its build-id cache), plus elfutils' debuginfod
//! client:
//!
//! | step | executable | debug file |
//! | --- | --- | --- |
//! | 1 | `BUILDID_DIR/.build-id/xx/rest/elf` | `BUILDID_DIR/.build-id/xx/rest/debug` |
//! | 2 | `SYMFS/path` | `[SYMFS]/usr/lib/debug/.build-id/xx/rest.debug` (each debug dir, under the symfs first) |
//! | 3 | `path` itself (see below) | the `.gnu_debuglink` target next to the executable, in its `.debug/`, or under each debug dir |
//! | 4 | debuginfod `buildid/ID/executable` | debuginfod `buildid/ID/debuginfo` |
//!
//! `BUILDID_DIR` is perf's build-id cache: `$PERF_BUILDID_DIR`, else `~/.debug`; with a
//! symfs, `SYMFS/.debug` (as `perf report --symfs` sets it). `path` itself is tried when
//! no symfs is given; with a symfs only when the recording gave a build id and the file
//! has it (a file identified by its build id is the right one wherever it is found).
//!
//! Every candidate must be a regular file ([`hwprof_pmu::file::open`]: a FIFO or a
//! device is never opened), within [`crate::elfcheck`]'s bounds (no compressed section
//! that claims or inflates to more than a file can hold: a file that is not is skipped
//! with a notice, and the search goes on) and, when the recording gave a build id, carry
//! that build id (compared as perf.data stores them: common prefix, zero padding
//! trimmed); a debuglink target must carry the executable's build id, or, when neither
//! has one, the CRC the link names. debuginfod is asked for a debug file only when the module has no DWARF of
//! its own (`.debug_info`), so a report of unstripped binaries never goes to the network.
//!
//! Answers are kept for the run (per module, and per build id and server), so a module
//! that is not found anywhere is searched for once. What the search did that a user
//! should know (a download, a server that cannot be reached, a file skipped, a setting
//! that was not understood) is kept as [`Locator::notices`] for the binary to print:
//! this crate prints nothing. The debuginfod client's bounds and its cache (never
//! written through a link, temporaries of killed runs swept, elfutils' expiry settings)
//! are described in `locate/debuginfod.rs` and `locate/cache.rs`.

mod cache;
mod debuginfod;

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use object::read::ReadCache;
use object::{Object, ObjectSection, SectionKind};

pub use debuginfod::{DEFAULT_MAXSIZE, DebuginfodConfig, LOW_SPEED_LIMIT};

use crate::buildid::BuildId;

/// Where a [`Locator`] looks. [`Config::from_env`] is what the binary uses;
/// [`Config::default`] looks nowhere (not even at the recorded path's directory
/// neighbours), for tests to fill in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// `--symfs DIR`: the recorded paths are looked up under this directory (as in
    /// `perf report --symfs`), and perf's build-id cache is `DIR/.debug`.
    pub symfs: Option<PathBuf>,
    /// perf's build-id cache (`~/.debug`), `None` for none.
    pub buildid_dir: Option<PathBuf>,
    /// Directories of separate debug files (`/usr/lib/debug`): their `.build-id/`
    /// trees and the debuglink targets under them (each under the symfs first).
    pub debug_dirs: Vec<PathBuf>,
    /// The debuginfod client's settings (no servers: no client).
    pub debuginfod: DebuginfodConfig,
}

/// The debug directories searched by default (and by blazesym, see
/// [`crate::debugfiles::DEBUG_DIRS`]).
fn default_debug_dirs() -> Vec<PathBuf> {
    crate::debugfiles::DEBUG_DIRS
        .iter()
        .map(PathBuf::from)
        .collect()
}

impl Config {
    /// The configuration of this process's environment: `HOME` (`~/.debug`),
    /// `PERF_BUILDID_DIR`, `DEBUGINFOD_URLS`, `DEBUGINFOD_CACHE_PATH`, `XDG_CACHE_HOME`,
    /// `DEBUGINFOD_TIMEOUT`, `DEBUGINFOD_MAXSIZE` and `DEBUGINFOD_MAXTIME`, and the symfs
    /// given; with notices for values that could not be used.
    pub fn from_env(symfs: Option<PathBuf>) -> (Config, Vec<String>) {
        Config::from_vars(symfs, |k| std::env::var_os(k))
    }

    /// [`Config::from_env`] over any variable lookup (for tests: no process-wide state).
    pub fn from_vars(
        symfs: Option<PathBuf>,
        var: impl Fn(&str) -> Option<OsString>,
    ) -> (Config, Vec<String>) {
        let nonempty = |k: &str| var(k).filter(|v| !v.is_empty());
        let home = nonempty("HOME").map(PathBuf::from);
        let buildid_dir = match &symfs {
            // perf's symbol__config_symfs: the build-id cache of a symfs is its .debug.
            Some(dir) => Some(dir.join(".debug")),
            None => nonempty("PERF_BUILDID_DIR")
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(".debug"))),
        };
        let (debuginfod, notices) = DebuginfodConfig::from_vars(&var);
        let config = Config {
            symfs,
            buildid_dir,
            debug_dirs: default_debug_dirs(),
            debuginfod,
        };
        (config, notices)
    }
}

/// What is looked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Executable,
    /// The executable found on this machine (steps 1-3), which the debug file's search
    /// asks for too.
    LocalExecutable,
    Debug,
}

/// (what, recorded path, recorded build id).
type MemoKey = (Kind, String, Option<BuildId>);

/// Finds the files of modules (see the [module docs](self)). Cheap to clone: clones
/// share the answers found so far, the debuginfod client and the notices.
#[derive(Clone)]
pub struct Locator {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    client: Option<debuginfod::Client>,
    memo: Mutex<HashMap<MemoKey, Option<PathBuf>>>,
    notices: Mutex<Vec<String>>,
    /// Files that failed [`crate::elfcheck::check`] and were said so (once each).
    rejected: Mutex<std::collections::HashSet<PathBuf>>,
}

impl std::fmt::Debug for Locator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Locator")
            .field("config", &self.inner.config)
            .field("debuginfod", &self.inner.client.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for Locator {
    /// A locator of this environment without a symfs ([`Locator::from_env`]).
    fn default() -> Self {
        Locator::from_env(None)
    }
}

impl Locator {
    /// The locator of this process's environment (see [`Config::from_env`]) with the
    /// given `--symfs`.
    pub fn from_env(symfs: Option<PathBuf>) -> Locator {
        let (config, notices) = Config::from_env(symfs);
        let l = Locator::new(config);
        l.push_notices(notices);
        l
    }

    /// A locator that looks where `config` says.
    pub fn new(config: Config) -> Locator {
        let client = debuginfod::Client::new(&config.debuginfod);
        Locator {
            inner: Arc::new(Inner {
                config,
                client,
                memo: Mutex::new(HashMap::new()),
                notices: Mutex::new(Vec::new()),
                rejected: Mutex::new(std::collections::HashSet::new()),
            }),
        }
    }

    /// Where this locator looks.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The notices gathered since the last call (downloads, unreachable servers,
    /// settings that could not be used), oldest first, each once: one line each, for
    /// the binary to print.
    pub fn notices(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.inner.notices))
    }

    fn push_notices(&self, mut more: Vec<String>) {
        if !more.is_empty() {
            lock(&self.inner.notices).append(&mut more);
        }
    }

    /// A notice for the binary to print (see [`Locator::notices`]).
    pub(crate) fn note(&self, notice: String) {
        lock(&self.inner.notices).push(notice);
    }

    /// Whether `p` passes [`crate::elfcheck::check`]; a notice for each file that does
    /// not (once per file).
    pub(crate) fn elf_ok(&self, p: &Path) -> bool {
        match crate::elfcheck::check(p) {
            Ok(()) => true,
            Err(why) => {
                if lock(&self.inner.rejected).insert(p.to_path_buf()) {
                    self.note(skipped(p, &why));
                }
                false
            }
        }
    }

    /// `p` is a regular file with `build_id` (when given) that may be read
    /// ([`crate::elfcheck`]).
    fn usable(&self, p: &Path, build_id: Option<&BuildId>) -> bool {
        is_module_file(p, build_id) && self.elf_ok(p)
    }

    /// The ELF file that holds the code and unwind tables (`.eh_frame`) of the module
    /// mapped from `path`, whose build id the recording says is `build_id`: perf's
    /// build-id cache, the symfs, the path itself, debuginfod (see the [module
    /// docs](self)). `None` when no regular file with that build id is found.
    ///
    /// The recorded id comes as bytes, as the record and the replay hold it; the
    /// search compares and files it as a [`BuildId`].
    pub fn executable(&self, path: &str, build_id: Option<&BuildId>) -> Option<PathBuf> {
        self.memoized(Kind::Executable, path, build_id, |l| {
            l.local_executable(path, build_id)
                .or_else(|| l.debuginfod(build_id, debuginfod::Kind::Executable))
        })
    }

    /// A separate debug file (full symbol table, DWARF, `.debug_frame`) of the module
    /// mapped from `path`: perf's build-id cache, the build-id trees of the debug
    /// directories, the `.gnu_debuglink` target, debuginfod (see the [module
    /// docs](self)). `None` when there is none (the executable may have all it needs).
    pub fn debug_file(&self, path: &str, build_id: Option<&BuildId>) -> Option<PathBuf> {
        self.memoized(Kind::Debug, path, build_id, |l| {
            l.local_debug_file(path, build_id).or_else(|| {
                let own_dwarf = l
                    .local_executable(path, build_id)
                    .is_some_and(|exe| has_dwarf(&exe));
                if own_dwarf {
                    None
                } else {
                    l.debuginfod(build_id, debuginfod::Kind::Debuginfo)
                }
            })
        })
    }

    fn memoized(
        &self,
        kind: Kind,
        path: &str,
        build_id: Option<&BuildId>,
        find: impl FnOnce(&Locator) -> Option<PathBuf>,
    ) -> Option<PathBuf> {
        let key = (kind, path.to_string(), build_id.cloned());
        if let Some(found) = lock(&self.inner.memo).get(&key) {
            return found.clone();
        }
        let found = find(self);
        lock(&self.inner.memo).insert(key, found.clone());
        found
    }

    /// Steps 1-3 of [`Locator::executable`]: no network.
    fn local_executable(&self, path: &str, build_id: Option<&BuildId>) -> Option<PathBuf> {
        self.memoized(Kind::LocalExecutable, path, build_id, |l| {
            l.search_local_executable(path, build_id)
        })
    }

    fn search_local_executable(&self, path: &str, build_id: Option<&BuildId>) -> Option<PathBuf> {
        let c = &self.inner.config;
        let ids = build_id.map(BuildId::forms).unwrap_or_default();
        if let Some(dir) = &c.buildid_dir {
            for hex in &ids {
                let p = buildid_cache_path(dir, hex, "elf");
                if self.usable(&p, build_id) {
                    return Some(p);
                }
            }
        }
        if let Some(symfs) = &c.symfs {
            let p = under(symfs, Path::new(path));
            if self.usable(&p, build_id) {
                return Some(p);
            }
        }
        // With a symfs the local file is another machine's unless its build id says
        // it is the one.
        let local_ok = c.symfs.is_none() || build_id.is_some();
        let p = PathBuf::from(path);
        (local_ok && p.is_absolute() && self.usable(&p, build_id)).then_some(p)
    }

    /// Steps 1-3 of [`Locator::debug_file`]: no network.
    fn local_debug_file(&self, path: &str, build_id: Option<&BuildId>) -> Option<PathBuf> {
        let c = &self.inner.config;
        let ids = build_id.map(BuildId::forms).unwrap_or_default();
        if build_id.is_some() {
            if let Some(dir) = &c.buildid_dir {
                for hex in &ids {
                    let p = buildid_cache_path(dir, hex, "debug");
                    if self.usable(&p, build_id) {
                        return Some(p);
                    }
                }
            }
            for hex in &ids {
                for d in self.debug_dirs() {
                    let p = build_id_debug_path(&d, hex);
                    if self.usable(&p, build_id) {
                        return Some(p);
                    }
                }
            }
        }
        let exe = self.local_executable(path, build_id)?;
        self.debuglink_target(&exe, path, build_id)
    }

    /// The debug directories, each under the symfs first.
    fn debug_dirs(&self) -> Vec<PathBuf> {
        let c = &self.inner.config;
        let mut out = Vec::with_capacity(c.debug_dirs.len() * 2);
        for d in &c.debug_dirs {
            if let Some(symfs) = &c.symfs {
                out.push(under(symfs, d));
            }
            out.push(d.clone());
        }
        out
    }

    /// The file named by `exe`'s `.gnu_debuglink`, looked for as gdb and perf do: next
    /// to `exe`, in its `.debug/`, and under each debug directory at the recorded path's
    /// directory. It must carry `exe`'s build id (or the recorded one), or when there is
    /// none, the CRC32 the link names.
    fn debuglink_target(
        &self,
        exe: &Path,
        recorded: &str,
        build_id: Option<&BuildId>,
    ) -> Option<PathBuf> {
        let (name, crc) = read_debuglink(exe)?;
        let name = Path::new(&name);
        if name.components().count() != 1 {
            // A link is a file name; anything else is not followed.
            return None;
        }
        let want = build_id.cloned().or_else(|| BuildId::read(exe));
        let mut candidates = Vec::new();
        let mut near = |dir: &Path| {
            candidates.push(dir.join(name));
            candidates.push(dir.join(".debug").join(name));
        };
        if let Some(dir) = exe.parent() {
            near(dir);
        }
        let recorded_dir = Path::new(recorded).parent();
        if let (Some(symfs), Some(dir)) = (&self.inner.config.symfs, recorded_dir) {
            near(&under(symfs, dir));
        }
        if let Some(dir) = recorded_dir {
            for d in self.debug_dirs() {
                candidates.push(under(&d, dir).join(name));
            }
        }
        candidates.into_iter().find(|p| {
            p != exe
                && match &want {
                    Some(id) => is_module_file(p, Some(id)),
                    None => file_crc32(p) == Some(crc),
                }
                && self.elf_ok(p)
        })
    }

    /// Step 4: the debuginfod client, when there is one and a build id to ask for.
    fn debuginfod(&self, build_id: Option<&BuildId>, kind: debuginfod::Kind) -> Option<PathBuf> {
        let client = self.inner.client.as_ref()?;
        let id = build_id?;
        let mut notices = Vec::new();
        let found = id
            .forms()
            .into_iter()
            .find_map(|hex| client.fetch(&hex, kind, &mut notices));
        self.push_notices(notices);
        found
    }
}

/// A mutex's data even when a thread panicked holding it (the maps stay consistent: each
/// update is one insert).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `base` joined with `p` as if `p` were relative (`/usr/bin/x` under `/sym` is
/// `/sym/usr/bin/x`), as perf's `path__join` puts recorded paths under a symfs.
fn under(base: &Path, p: &Path) -> PathBuf {
    base.join(p.strip_prefix("/").unwrap_or(p))
}

/// The notice of a file not read because of [`crate::elfcheck`].
pub(crate) fn skipped(p: &Path, why: &crate::elfcheck::Rejected) -> String {
    format!(
        "skipping {}: {why}; its module is symbolized without it",
        p.display()
    )
}

/// `DIR/.build-id/xx/rest/NAME` in perf's build-id cache.
fn buildid_cache_path(dir: &Path, hex: &str, name: &str) -> PathBuf {
    dir.join(".build-id")
        .join(&hex[..2])
        .join(&hex[2..])
        .join(name)
}

/// `DIR/.build-id/xx/rest.debug` in a debug directory.
fn build_id_debug_path(dir: &Path, hex: &str) -> PathBuf {
    dir.join(".build-id")
        .join(&hex[..2])
        .join(format!("{}.debug", &hex[2..]))
}

/// `p` is a regular file and, when `build_id` is given, an ELF file with that build id.
fn is_module_file(p: &Path, build_id: Option<&BuildId>) -> bool {
    match build_id {
        // BuildId::read opens regular files only.
        Some(want) => BuildId::read(p).is_some_and(|have| have.same(want)),
        None => hwprof_pmu::file::open(p).is_ok(),
    }
}

/// The `.gnu_debuglink` of an ELF file: the debug file's name and its CRC32.
fn read_debuglink(elf: &Path) -> Option<(OsString, u32)> {
    use std::os::unix::ffi::OsStrExt;
    let (file, _) = hwprof_pmu::file::open(elf).ok()?;
    let cache = ReadCache::new(file);
    let obj = object::File::parse(&cache).ok()?;
    let (name, crc) = obj.gnu_debuglink().ok()??;
    (!name.is_empty()).then(|| (std::ffi::OsStr::from_bytes(name).to_os_string(), crc))
}

/// Whether an ELF file carries DWARF of its own: a `.debug_info` section with contents
/// (not the NOBITS placeholder a stripped file may keep).
pub(crate) fn has_dwarf(elf: &Path) -> bool {
    let Ok((file, _)) = hwprof_pmu::file::open(elf) else {
        return false;
    };
    let cache = ReadCache::new(file);
    let Ok(obj) = object::File::parse(&cache) else {
        return false;
    };
    obj.section_by_name(".debug_info")
        .is_some_and(|s| s.kind() != SectionKind::UninitializedData && s.size() > 0)
}

/// The CRC32 (gdb's debuglink CRC: IEEE, as zlib's `crc32`) of a regular file.
fn file_crc32(p: &Path) -> Option<u32> {
    let (mut file, _) = hwprof_pmu::file::open(p).ok()?;
    let mut h = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => h.update(buf.get(..n)?),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(h.finalize())
}

/// The default of [`DebuginfodConfig::timeout`] (elfutils' `DEBUGINFOD_TIMEOUT`).
pub const DEFAULT_DEBUGINFOD_TIMEOUT: Duration = Duration::from_secs(90);

#[cfg(test)]
mod tests;
