//! The debuginfod client's cache directory, elfutils' layout (`CACHE/HEX/debuginfo`,
//! `CACHE/HEX/executable`, empty files as "not found" marks, the settings
//! `cache_clean_interval_s`, `max_unused_age_s` and `cache_miss_s`), kept as elfutils
//! keeps it, and opened so that nothing is written through a link another user planted.
//!
//! - [`Cache::open`]: the cache is used only when every directory on its way (as named
//!   and as resolved) belongs to root or to this user and is not writable by other users
//!   (sticky directories such as `/tmp` excepted): a cache under another user's home,
//!   reached by root through `sudo -E`, is not written to. The cache itself is opened
//!   with `O_NOFOLLOW` and must belong to this user.
//! - [`Cache::entry`]: `CACHE/HEX` is created and opened relative to the cache's
//!   descriptor with `O_NOFOLLOW`: a symbolic link there is never followed (nothing is
//!   read or written through it), and a directory of another user is not written to.
//!   Every name inside is reached through that descriptor (`openat`, `renameat`,
//!   `unlinkat`), never through a path.
//! - [`Entry::temp`]: a download goes to `.KIND.hwprof-PID-RANDOM.tmp` (`O_EXCL`,
//!   `O_NOFOLLOW`, mode 0600), held under an exclusive `flock` while it is written, and
//!   renamed over `KIND` only when whole and checked; it is removed on every error.
//!   [`Entry::sweep`] removes such temporaries left by a killed process: only names of
//!   that pattern, regular files, whose PID is dead here and whose lock nobody holds
//!   (as `hwprof_sampler::outfile` sweeps its own).
//! - [`Cache::clean`]: elfutils' cleaning, at most once per `cache_clean_interval_s`
//!   (86400 s unless that file says otherwise; its modification time is the last
//!   cleaning): files `HEX`, `HEX/debuginfo`, `HEX/executable`, `HEX/source*` not read
//!   for `max_unused_age_s` (604800 s) are deleted, and `HEX` directories that old and
//!   now empty. Like elfutils, each setting file is created with its default when it is
//!   missing or empty, and read as a decimal number (else the default).

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags, Stat, Timestamps};
use rustix::io::Errno;

/// elfutils' `cache_clean_interval_s` and its default (a day).
pub(crate) const CLEAN_INTERVAL: (&str, i64) = ("cache_clean_interval_s", 86_400);
/// elfutils' `max_unused_age_s` and its default (a week).
pub(crate) const MAX_UNUSED_AGE: (&str, i64) = ("max_unused_age_s", 604_800);
/// elfutils' `cache_miss_s` and its default (ten minutes).
pub(crate) const CACHE_MISS: (&str, i64) = ("cache_miss_s", 600);

/// The cache directory, open.
#[derive(Debug)]
pub(crate) struct Cache {
    root: PathBuf,
    fd: OwnedFd,
}

/// One build id's directory `CACHE/HEX`, open.
#[derive(Debug)]
pub(crate) struct Entry {
    path: PathBuf,
    fd: OwnedFd,
}

/// What a name in an [`Entry`] is, not following links.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Found {
    /// A regular file of this many bytes, last modified at this time (seconds).
    File { size: u64, mtime: i64 },
    /// Anything else (a link, a directory...): never read.
    Other,
}

/// Seconds since the epoch.
pub(crate) fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn egid() -> u32 {
    rustix::process::getegid().as_raw()
}

/// Why directory `dir` (resolved, and every directory above it) may let another user
/// replace what is in it: owned by someone else than root or this user, or writable by
/// other users without the sticky bit. `None`: trusted.
fn untrusted(dir: &Path) -> Option<String> {
    let real = match std::fs::canonicalize(dir) {
        Ok(r) => r,
        Err(e) => return Some(format!("{}: {e}", dir.display())),
    };
    let (uid, gid) = (euid(), egid());
    for a in real.ancestors() {
        let m = match std::fs::metadata(a) {
            Ok(m) => m,
            Err(e) => return Some(format!("{}: {e}", a.display())),
        };
        if m.uid() != 0 && m.uid() != uid {
            return Some(format!(
                "{} belongs to uid {}, not to this user (uid {uid})",
                a.display(),
                m.uid()
            ));
        }
        let mode = m.mode();
        let others = mode & 0o002 != 0 || (mode & 0o020 != 0 && m.gid() != gid && m.gid() != 0);
        if others && mode & 0o1000 == 0 {
            return Some(format!("{} is writable by other users", a.display()));
        }
    }
    None
}

fn errno_text(e: Errno) -> String {
    io::Error::from(e).to_string()
}

impl Cache {
    /// The cache at `root`, created (mode 0700) when missing; `Err` says why it cannot
    /// be used (see the [module docs](self)).
    pub(crate) fn open(root: &Path) -> Result<Cache, String> {
        let root = if root.is_absolute() {
            root.to_path_buf()
        } else {
            let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
            cwd.join(root)
        };
        // Every directory above, as named (so that a link in it is one only root or
        // this user could have made) and as resolved.
        let parents: Vec<&Path> = root.ancestors().skip(1).collect();
        for p in parents.iter().rev().filter(|p| p.exists()) {
            if let Some(why) = untrusted(p) {
                return Err(why);
            }
        }
        ensure_dir(&root).map_err(|e| format!("cannot create {}: {e}", root.display()))?;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::open(&root, flags, Mode::empty()).map_err(|e| {
            if e == Errno::LOOP || e == Errno::NOTDIR {
                format!("{} is a symbolic link (not followed)", root.display())
            } else {
                format!("{}: {}", root.display(), errno_text(e))
            }
        })?;
        let st = rustix::fs::fstat(&fd).map_err(errno_text)?;
        if st.st_uid != euid() {
            return Err(format!(
                "{} belongs to uid {}, not to this user (uid {})",
                root.display(),
                st.st_uid,
                euid()
            ));
        }
        if let Some(why) = untrusted(&root) {
            return Err(why);
        }
        Ok(Cache { root, fd })
    }

    /// The cache directory.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// `CACHE/hex`, created (mode 0700) when `create` and missing; `Ok(None)` when
    /// absent. `Err`: a link (never followed), not a directory, or another user's.
    pub(crate) fn entry(&self, hex: &str, create: bool) -> Result<Option<Entry>, String> {
        let path = self.root.join(hex);
        if create {
            match rustix::fs::mkdirat(&self.fd, hex, Mode::from_raw_mode(0o700)) {
                Ok(()) => {}
                Err(e) if e == Errno::EXIST => {}
                Err(e) => {
                    return Err(format!(
                        "cannot create {}: {}",
                        path.display(),
                        errno_text(e)
                    ));
                }
            }
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&self.fd, hex, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(e) if e == Errno::NOENT => return Ok(None),
            Err(e) if e == Errno::LOOP || e == Errno::NOTDIR => {
                let link = rustix::fs::statat(&self.fd, hex, AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Symlink);
                return Err(format!(
                    "{} is {} (not followed)",
                    path.display(),
                    if link {
                        "a symbolic link"
                    } else {
                        "not a directory"
                    }
                ));
            }
            Err(e) => return Err(format!("{}: {}", path.display(), errno_text(e))),
        };
        let st = rustix::fs::fstat(&fd).map_err(errno_text)?;
        if st.st_uid != euid() {
            return Err(format!(
                "{} belongs to uid {}, not to this user",
                path.display(),
                st.st_uid
            ));
        }
        Ok(Some(Entry { path, fd }))
    }

    /// elfutils' `debuginfod_config_cache`: the number in `CACHE/name`, or `default`
    /// (written there) when the file is missing or empty; `None` when the file cannot
    /// be opened. With the file's status.
    pub(crate) fn setting(&self, (name, default): (&str, i64)) -> Option<(i64, Stat)> {
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(0o666)).ok()?;
        let st = rustix::fs::fstat(&fd).ok()?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return None;
        }
        let mut f = File::from(fd);
        if st.st_size == 0 {
            let _ = write!(f, "{default}");
            return Some((default, st));
        }
        let mut text = String::new();
        let _ = f.take(64).read_to_string(&mut text);
        Some((scan_long(&text).unwrap_or(default), st))
    }

    /// elfutils' cleaning (see the [module docs](self)), when `cache_clean_interval_s`
    /// has passed since the last one. Returns how many files were deleted.
    pub(crate) fn clean(&self) -> usize {
        let Some((interval, st)) = self.setting(CLEAN_INTERVAL) else {
            return 0;
        };
        let now = now_secs();
        if now.saturating_sub(st.st_mtime) < interval {
            return 0;
        }
        // The time of this cleaning, set first (as elfutils does, so that concurrent
        // clients do not all clean).
        if let Ok(fd) = rustix::fs::openat(
            &self.fd,
            CLEAN_INTERVAL.0,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            let t = rustix::fs::Timespec {
                tv_sec: 0,
                tv_nsec: rustix::fs::UTIME_NOW,
            };
            let _ = rustix::fs::futimens(
                &fd,
                &Timestamps {
                    last_access: t,
                    last_modification: t,
                },
            );
        }
        let Some((max_age, _)) = self.setting(MAX_UNUSED_AGE) else {
            return 0;
        };
        let old = |s: &Stat, t: i64| now.saturating_sub(t) >= max_age && s.st_uid == euid();
        let mut deleted = 0;
        for name in names(&self.fd) {
            let Some(n) = name.to_str().ok().filter(|n| is_hex(n)) else {
                continue;
            };
            let Ok(st) = rustix::fs::statat(&self.fd, n, AtFlags::SYMLINK_NOFOLLOW) else {
                continue;
            };
            match FileType::from_raw_mode(st.st_mode) {
                FileType::RegularFile
                    if old(&st, st.st_atime)
                        && rustix::fs::unlinkat(&self.fd, n, AtFlags::empty()).is_ok() =>
                {
                    deleted += 1;
                }
                FileType::Directory => {
                    let Ok(Some(e)) = self.entry(n, false) else {
                        continue;
                    };
                    for f in names(&e.fd) {
                        let Some(f) = f.to_str().ok().filter(|f| {
                            *f == "debuginfo" || *f == "executable" || f.starts_with("source")
                        }) else {
                            continue;
                        };
                        let Ok(fs) = rustix::fs::statat(&e.fd, f, AtFlags::SYMLINK_NOFOLLOW) else {
                            continue;
                        };
                        if FileType::from_raw_mode(fs.st_mode) == FileType::RegularFile
                            && old(&fs, fs.st_atime)
                            && rustix::fs::unlinkat(&e.fd, f, AtFlags::empty()).is_ok()
                        {
                            deleted += 1;
                        }
                    }
                    if old(&st, st.st_mtime) {
                        // Fails unless empty, as elfutils' rmdir.
                        let _ = rustix::fs::unlinkat(&self.fd, n, AtFlags::REMOVEDIR);
                    }
                }
                _ => {}
            }
        }
        deleted
    }
}

/// The names in a directory (no `.` or `..`).
fn names(dir: &OwnedFd) -> Vec<std::ffi::CString> {
    let Ok(d) = rustix::fs::Dir::read_from(dir) else {
        return Vec::new();
    };
    d.filter_map(Result::ok)
        .map(|e| e.file_name().to_owned())
        .filter(|n| n.as_bytes() != b"." && n.as_bytes() != b"..")
        .collect()
}

/// elfutils' cache entry names: lower-case hex.
fn is_hex(n: &str) -> bool {
    !n.is_empty()
        && n.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// `scanf("%ld")`: leading white space, a sign, digits (what follows is ignored).
pub(crate) fn scan_long(text: &str) -> Option<i64> {
    let t = text.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let end = digits.bytes().take_while(u8::is_ascii_digit).count();
    let n: i64 = digits.get(..end)?.parse().ok()?;
    Some(if neg { -n } else { n })
}

impl Entry {
    /// `CACHE/HEX/name`, for readers that take a path.
    pub(crate) fn file_path(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// What `name` is, not following links; `None` when absent.
    pub(crate) fn look(&self, name: &str) -> Option<Found> {
        let st = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        Some(match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => Found::File {
                size: u64::try_from(st.st_size).unwrap_or(0),
                mtime: st.st_mtime,
            },
            _ => Found::Other,
        })
    }

    /// Removes `name` (a file or link; never what a link points to).
    pub(crate) fn remove(&self, name: &str) {
        let _ = rustix::fs::unlinkat(&self.fd, name, AtFlags::empty());
    }

    /// Creates the empty "not found" mark `name`, unless something is there.
    pub(crate) fn mark(&self, name: &str) {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let _ = rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(0o666));
    }

    /// Removes the temporaries of `stem` left by dead processes (see the [module
    /// docs](self)); how many.
    pub(crate) fn sweep(&self, stem: &str) -> usize {
        let me = std::process::id() as i32;
        let mut removed = 0;
        for name in names(&self.fd) {
            let Ok(n) = name.to_str() else { continue };
            let Some(pid) = hwprof_sampler::outfile::temp_owner(n)
                .and_then(|(s, pid)| (s == stem).then_some(pid))
            else {
                continue;
            };
            if pid == me || alive(pid) {
                continue;
            }
            let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
            let Ok(fd) = rustix::fs::openat(&self.fd, n, flags, Mode::empty()) else {
                continue;
            };
            let (Ok(open), Ok(named)) = (
                rustix::fs::fstat(&fd),
                rustix::fs::statat(&self.fd, n, AtFlags::SYMLINK_NOFOLLOW),
            ) else {
                continue;
            };
            let same = open.st_dev == named.st_dev && open.st_ino == named.st_ino;
            if !same
                || FileType::from_raw_mode(open.st_mode) != FileType::RegularFile
                || rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive).is_err()
            {
                continue;
            }
            if rustix::fs::unlinkat(&self.fd, n, AtFlags::empty()).is_ok() {
                removed += 1;
            }
        }
        removed
    }

    /// A new temporary file for `stem` (see the [module docs](self)).
    pub(crate) fn temp(&self, stem: &str) -> io::Result<Temp<'_>> {
        let flags =
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        for attempt in 0u32..100 {
            let name = format!(
                ".{stem}.hwprof-{}-{}.tmp",
                std::process::id(),
                random_word(attempt)
            );
            match rustix::fs::openat(&self.fd, name.as_str(), flags, Mode::from_raw_mode(0o600)) {
                Ok(fd) => {
                    // Marks it as in use for the sweeps of other processes.
                    let _ = rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive);
                    return Ok(Temp {
                        entry: self,
                        name,
                        file: File::from(fd),
                        kept: false,
                    });
                }
                Err(e) if e == Errno::EXIST => {}
                Err(e) => return Err(e.into()),
            }
        }
        Err(io::Error::from(io::ErrorKind::AlreadyExists))
    }
}

/// True unless `pid` is certainly dead here (ESRCH); EPERM means it lives.
fn alive(pid: i32) -> bool {
    match rustix::process::Pid::from_raw(pid) {
        Some(p) => !matches!(rustix::process::test_kill_process(p), Err(e) if e == Errno::SRCH),
        None => true,
    }
}

/// Eight letters and digits, different on each call.
fn random_word(salt: u32) -> String {
    use std::hash::BuildHasher;
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut x = std::collections::hash_map::RandomState::new().hash_one((nanos, salt));
    (0..8)
        .map(|_| {
            let c = ALPHABET[(x % ALPHABET.len() as u64) as usize];
            x /= ALPHABET.len() as u64;
            c as char
        })
        .collect()
}

/// A temporary file in an [`Entry`], removed on drop unless [`Temp::persist`]ed.
pub(crate) struct Temp<'e> {
    entry: &'e Entry,
    name: String,
    /// The open file, to write.
    pub(crate) file: File,
    kept: bool,
}

impl Temp<'_> {
    /// Its path, for readers that take one.
    pub(crate) fn path(&self) -> PathBuf {
        self.entry.file_path(&self.name)
    }

    /// Renames it over `name` in its directory.
    pub(crate) fn persist(mut self, name: &str) -> io::Result<()> {
        let fd = self.entry.fd.as_fd();
        rustix::fs::renameat(fd, self.name.as_str(), fd, name)?;
        self.kept = true;
        Ok(())
    }
}

impl Drop for Temp<'_> {
    fn drop(&mut self) {
        if !self.kept {
            self.entry.remove(&self.name);
        }
    }
}

/// Creates `dir` and its parents (mode 0700, as elfutils makes its cache).
pub(super) fn ensure_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_read_as_scanf_reads_them() {
        assert_eq!(scan_long("600"), Some(600));
        assert_eq!(scan_long("  42\n"), Some(42));
        assert_eq!(scan_long("-5x"), Some(-5));
        assert_eq!(scan_long("+7 s"), Some(7));
        assert_eq!(scan_long("soon"), None);
        assert_eq!(scan_long(""), None);
        assert!(is_hex("0a1b") && !is_hex("0A1B") && !is_hex("") && !is_hex("cache_miss_s"));
    }
}
