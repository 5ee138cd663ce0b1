//! [`FdTables`]: the processes' open files, as a tracer sees the fd table change —
//! what `hwprof io` names each call's file by. Part of the process model: per process,
//! the same rules as its address space.
//!
//! # Rules
//!
//! - An fd has a **generation** per process, bumped each time the fd is made anew (an
//!   open, a dup onto it, a pipe's or socket's end): a call made on `(fd, generation)`
//!   is named by what that generation was, whatever the fd became later. Generation 0 is
//!   the fd as it was when tracing began ([`FdTables::snapshot`]: `/proc/PID/fd`).
//! - **open**: the path, made absolute against its directory fd or the working
//!   directory ([`resolve`]); **pipe/socket/accept**: `pipe:[INODE]`, `socket:[INODE]`
//!   as `/proc/PID/fd` names them ([`inode_name`]); **dup**: the source's name at its
//!   generation; **close**: the fd is no longer current (its generations keep their
//!   names, for the calls made on them).
//! - **fork** of a process: the child's generation-0 fds are the parent's current ones.
//!   **exec** changes nothing here (its close-on-exec fds are made anew before use).
//!
//! Bounded: at most [`MAX_NAMES`] names; what did not fit is counted
//! ([`FdTables::dropped`]) and those calls are unnamed.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

/// The most names kept (each (process, fd, generation) one).
pub const MAX_NAMES: usize = 1 << 20;

/// `AT_FDCWD`: an open relative to the working directory.
pub const AT_FDCWD: i32 = -100;

/// The open files of the traced processes (see the module doc).
#[derive(Debug, Default)]
pub struct FdTables {
    names: HashMap<(u32, i32, u32), Arc<str>>,
    current: HashMap<(u32, i32), u32>,
    dropped: u64,
}

impl FdTables {
    /// No process known.
    pub fn new() -> FdTables {
        FdTables::default()
    }

    /// Generation 0 of `tgid`'s fds: each link of `proc_fd` (its `/proc/PID/fd`), as
    /// the kernel names them there. A process that is gone adds nothing.
    pub fn snapshot(&mut self, tgid: u32, proc_fd: &Path) {
        let Ok(dir) = std::fs::read_dir(proc_fd) else {
            return;
        };
        for e in dir.flatten() {
            let Some(fd) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            if let Ok(target) = std::fs::read_link(e.path()) {
                self.set(tgid, fd, 0, &target.to_string_lossy());
            }
        }
    }

    /// `fd` of `tgid` is `name` from generation `generation` on: it is the current one.
    pub fn set(&mut self, tgid: u32, fd: i32, generation: u32, name: &str) {
        if self.names.len() >= MAX_NAMES && !self.names.contains_key(&(tgid, fd, generation)) {
            self.dropped += 1;
            return;
        }
        self.names.insert((tgid, fd, generation), Arc::from(name));
        self.current.insert((tgid, fd), generation);
    }

    /// `fd` (generation `generation`) is a dup of `src` at generation `src_gen`: false
    /// when that is unknown (the caller names it otherwise, by its inode).
    pub fn dup(&mut self, tgid: u32, fd: i32, generation: u32, src: i32, src_gen: u32) -> bool {
        match self.name(tgid, src, src_gen).map(Arc::clone) {
            Some(n) => {
                self.set(tgid, fd, generation, &n);
                true
            }
            None => false,
        }
    }

    /// `fd` of `tgid` closed.
    pub fn close(&mut self, tgid: u32, fd: i32) {
        self.current.remove(&(tgid, fd));
    }

    /// `child` forked from `parent`: its fds are the parent's current ones, as its
    /// generation 0.
    pub fn fork(&mut self, parent: u32, child: u32) {
        let inherited: Vec<(i32, Arc<str>)> = self
            .current
            .iter()
            .filter(|((t, _), _)| *t == parent)
            .filter_map(|(&(_, fd), &g)| Some((fd, Arc::clone(self.names.get(&(parent, fd, g))?))))
            .collect();
        for (fd, name) in inherited {
            self.set(child, fd, 0, &name);
        }
    }

    /// The name of `fd` of `tgid` at generation `generation`.
    pub fn name(&self, tgid: u32, fd: i32, generation: u32) -> Option<&Arc<str>> {
        self.names.get(&(tgid, fd, generation))
    }

    /// The name `fd` of `tgid` has now (open, not closed since).
    pub fn current(&self, tgid: u32, fd: i32) -> Option<&Arc<str>> {
        let g = self.current.get(&(tgid, fd))?;
        self.name(tgid, fd, *g)
    }

    /// Names not kept: [`MAX_NAMES`] reached.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// `S_IFMT` and the kinds `/proc/PID/fd` names by inode.
const S_IFMT: u32 = 0o170000;
const S_IFIFO: u32 = 0o010000;
const S_IFSOCK: u32 = 0o140000;

/// The name `/proc/PID/fd` gives a file with no path, by its inode's `mode` and number:
/// `pipe:[INODE]`, `socket:[INODE]`; `None` for other kinds (anonymous inodes: eventfd,
/// epoll, timerfd... whose names the inode does not tell).
pub fn inode_name(mode: u32, ino: u64) -> Option<String> {
    match mode & S_IFMT {
        S_IFIFO => Some(format!("pipe:[{ino}]")),
        S_IFSOCK => Some(format!("socket:[{ino}]")),
        _ => None,
    }
}

/// The path an open gave (`path`, as the call took it), made absolute against `base`
/// (its directory: the working directory, or the directory fd's path); `.` components
/// dropped, `..` kept (a link may stand before it). A relative path with no base stays
/// as it is.
pub fn resolve(base: Option<&str>, path: &str) -> String {
    let p = Path::new(path);
    let joined: PathBuf = match base {
        Some(b) if p.is_relative() && b.starts_with('/') => Path::new(b).join(p),
        _ => p.to_path_buf(),
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        if c != Component::CurDir {
            out.push(c.as_os_str());
        }
    }
    out.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fd reused after a close is named by the generation each call saw; a dup takes
    /// its source's name at its generation; a fork copies the current fds.
    #[test]
    fn generations_dups_closes_and_forks() {
        let mut t = FdTables::new();
        t.set(10, 3, 0, "/old");
        t.close(10, 3);
        t.set(10, 3, 1, "pipe:[77]");
        assert!(t.dup(10, 5, 1, 3, 1));
        assert!(!t.dup(10, 6, 1, 9, 0), "unknown source");
        t.fork(10, 11);
        assert_eq!(t.name(10, 3, 0).map(|n| &**n), Some("/old"));
        assert_eq!(t.name(10, 3, 1).map(|n| &**n), Some("pipe:[77]"));
        assert_eq!(t.current(10, 5).map(|n| &**n), Some("pipe:[77]"));
        assert_eq!(t.name(11, 5, 0).map(|n| &**n), Some("pipe:[77]"));
        assert_eq!(t.name(11, 3, 0).map(|n| &**n), Some("pipe:[77]"));
        t.close(10, 5);
        assert_eq!(t.current(10, 5), None);
        assert_eq!(t.name(10, 5, 1).map(|n| &**n), Some("pipe:[77]"));
    }

    #[test]
    fn paths_and_inodes() {
        assert_eq!(resolve(Some("/tmp/x"), "./zero"), "/tmp/x/zero");
        assert_eq!(resolve(Some("/tmp/x"), "/etc/../a"), "/etc/../a");
        assert_eq!(resolve(None, "zero"), "zero");
        assert_eq!(inode_name(0o010600, 5), Some("pipe:[5]".into()));
        assert_eq!(inode_name(0o140777, 6), Some("socket:[6]".into()));
        assert_eq!(inode_name(0o100644, 7), None);
    }

    /// This process's own fds, named as /proc names them.
    #[test]
    fn a_snapshot_reads_proc() {
        let mut t = FdTables::new();
        let me = std::process::id();
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("f");
        let f = std::fs::File::create(&path).expect("create");
        t.snapshot(me, Path::new("/proc/self/fd"));
        use std::os::fd::AsRawFd;
        let fd = f.as_raw_fd();
        assert_eq!(
            t.name(me, fd, 0).map(|n| n.to_string()),
            Some(path.to_string_lossy().into_owned())
        );
    }
}
