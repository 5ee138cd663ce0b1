//! Leftovers of killed runs: the temporary files (`.NAME.hwprof-PID-RANDOM.tmp`) and
//! scratch directories (`.hwprof-scratch.hwprof-PID-RANDOM.tmp`) a process killed with
//! SIGKILL could not remove, swept by the next run that writes in the same directory,
//! whatever the output's name.
//!
//! One is removed only when all of these hold: its name is exactly our pattern; it is a
//! regular file, or a directory named as a scratch directory (never a symlink, never
//! followed); it belongs to this user; nobody holds its `flock` (a live writer holds
//! one on each, in any PID namespace); and its PID is not a live writer here: dead, or
//! reused by a process that started after the file was made (its start time in
//! `/proc/PID/stat` is later than the file's birth, with a margin for the clocks'
//! granularity). The PID keeps the file of a writer between `open` and `flock`.

use std::fs::{self, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, SystemTime};

use rustix::fs::{FlockOperation, flock};

use super::RAND_LEN;

/// The name of every scratch directory (`.hwprof-scratch.hwprof-PID-RANDOM.tmp`).
pub const SCRATCH_STEM: &str = "hwprof-scratch";

/// How much later than a file's birth a process must have started for its PID to be
/// taken as reused (`/proc/stat`'s boot time has one-second steps).
pub(super) const REUSE_MARGIN: Duration = Duration::from_secs(2);

/// The output name and PID in a temporary name of ours, `.STEM.hwprof-PID-RANDOM.tmp`
/// (RANDOM: [`RAND_LEN`] ASCII letters and digits).
pub fn temp_owner(file_name: &str) -> Option<(&str, i32)> {
    let rest = file_name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (rest, rand) = rest.rsplit_once('-')?;
    let (stem, pid) = rest.rsplit_once(".hwprof-")?;
    let ok = !stem.is_empty()
        && !pid.is_empty()
        && pid.len() <= 10
        && pid.bytes().all(|b| b.is_ascii_digit())
        && rand.len() == RAND_LEN
        && rand.bytes().all(|b| b.is_ascii_alphanumeric());
    if !ok {
        return None;
    }
    let pid = pid.parse::<i32>().ok().filter(|&p| p > 0)?;
    Some((stem, pid))
}

/// True unless `pid` is certainly dead here (ESRCH); EPERM means it lives.
fn pid_alive(pid: i32) -> bool {
    match rustix::process::Pid::from_raw(pid) {
        Some(p) => !matches!(
            rustix::process::test_kill_process(p),
            Err(e) if e == rustix::io::Errno::SRCH
        ),
        None => true,
    }
}

/// When process `pid` started (None when it cannot be told).
fn started(pid: i32) -> Option<SystemTime> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: count after the last ')'.
    let after = stat.get(stat.rfind(')')? + 1..)?;
    // Field 22 (starttime), the 20th after the name's: clock ticks since boot.
    let ticks: u64 = after.split_whitespace().nth(19)?.parse().ok()?;
    let hz = rustix::param::clock_ticks_per_second().max(1);
    let boot: u64 = fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let since_boot =
        Duration::from_secs(ticks / hz) + Duration::from_nanos((ticks % hz) * 1_000_000_000 / hz);
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(boot) + since_boot)
}

/// When the file of `m` was made: its birth time, else its change time (never
/// earlier than its birth).
fn born(m: &fs::Metadata) -> Option<SystemTime> {
    m.created().ok().or_else(|| {
        let secs = u64::try_from(m.ctime()).ok()?;
        let nanos = u64::try_from(m.ctime_nsec()).ok()?;
        SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs) + Duration::from_nanos(nanos))
    })
}

/// Whether `pid` may be the live writer of a file made at `birth`: alive, and not
/// started after it (a reused PID).
fn may_own(pid: i32, birth: Option<SystemTime>) -> bool {
    if !pid_alive(pid) {
        return false;
    }
    match (started(pid), birth) {
        (Some(start), Some(birth)) => start <= birth + REUSE_MARGIN,
        _ => true,
    }
}

/// Removes the leftovers of killed runs in `dir` (see the module docs). Returns how
/// many were removed; errors are ignored (best effort).
pub fn sweep(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let me = std::process::id() as i32;
    let uid = rustix::process::geteuid().as_raw();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((stem, pid)) = name.to_str().and_then(temp_owner) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let path = entry.path();
        // lstat: a symlink is never a temporary file of ours.
        let Ok(m) = fs::symlink_metadata(&path) else {
            continue;
        };
        let dir = m.is_dir();
        if !(m.is_file() || (dir && stem == SCRATCH_STEM)) || m.uid() != uid {
            continue;
        }
        if may_own(pid, born(&m)) {
            continue;
        }
        let Ok(f) = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path)
        else {
            continue;
        };
        // The same file we looked at, and nobody's lock on it.
        let same = f
            .metadata()
            .is_ok_and(|n| n.dev() == m.dev() && n.ino() == m.ino());
        if !same || flock(&f, FlockOperation::NonBlockingLockExclusive).is_err() {
            continue;
        }
        let gone = if dir {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        if gone.is_ok() {
            removed += 1;
        }
    }
    removed
}
