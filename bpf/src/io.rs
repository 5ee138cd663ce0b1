//! System calls timed in the kernel (`src/c/io.bpf.c`): each call paired per thread
//! from its entry to its exit on the raw `sys_enter`/`sys_exit` tracepoints, summed per
//! (thread, syscall, user stack at the call, fd and the fd's generation) in calls, time
//! in the kernel, bytes (the positive results of the calls that return byte counts) and
//! errors, with HdrHistogram buckets per (process, fd, generation, syscall) from which
//! each file's and each syscall's percentiles are rebuilt exactly: what `hwprof io` is
//! made of.
//!
//! The fd table's changes (opens with their path, dups, pipes, sockets, accepts with
//! the new file's inode, closes, forks of targets) come through a BPF ring buffer as
//! [`IoEvent`]s, with the calls slower than [`IoOptions::min_ns`] when
//! [`IoOptions::slow_events`] asks; each fd has a generation per process, bumped in the
//! kernel each time the fd is made anew, so that a sum's `(fd, generation)` names the file it
//! was when the call was made (generation 0: the fd as it was when tracing began).
//!
//! The syscalls are [`SYSCALLS`] (x86-64's numbers), or a subset of them
//! ([`IoOptions::only`]), or every syscall ([`IoOptions::all_syscalls`]). The threads:
//! every thread ([`IoOptions::all`]) or the target processes' ones, children followed as
//! they fork, a held command's from its `exec` ([`Io::add_tgid`]). A call in progress
//! when tracing stops is not counted.
//!
//! User stacks are frame-pointer walks from the call; syscall wrappers that set up no
//! frame (glibc's `read`, `write`...) would hide their caller, which the program finds
//! among the words above the stack pointer: a return address right after a call to the
//! wrapper (directly, through a PLT slot or the GOT), [`IoSum::user`]'s second frame.
//!
//! Bounded: every map has `max_entries`; what did not fit is counted in [`IoDropped`].

use crate::engine::{Engine, Loader, Ring, StackErrors, objects};
use crate::error::Error;
use crate::maps::{IoHdrKey, IoSumKey, IoSumVal};

/// How a syscall changes the fd table (io.bpf.c's `OP_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FdOp {
    /// It does not.
    None = 0,
    /// `openat`, `openat2`: dirfd, path; the new fd is its result.
    OpenAt = 1,
    /// `open`, `creat`: path; the new fd is its result.
    Open = 2,
    /// `dup`, `dup2`, `dup3`: the old fd; the new one is its result.
    Dup = 3,
    /// `fcntl`: a dup when its command is `F_DUPFD` or `F_DUPFD_CLOEXEC`.
    Fcntl = 4,
    /// `pipe`, `pipe2`: two new fds, written where its argument points.
    Pipe = 5,
    /// `socket`, `accept`, `accept4`: the new fd is its result.
    Socket = 6,
    /// `socketpair`: two new fds, written where its fourth argument points.
    SocketPair = 7,
    /// `close`.
    Close = 8,
}

/// One syscall hwprof io knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Syscall {
    /// Its name.
    pub name: &'static str,
    /// Its number (x86-64).
    pub nr: u32,
    /// Timed (an I/O call); else only followed for the fd table.
    pub timed: bool,
    /// Its positive result is a byte count.
    pub bytes: bool,
    /// Its first argument is the fd it works on (else: none, or for an open its result).
    pub fd_arg0: bool,
    /// How it changes the fd table.
    pub op: FdOp,
}

const fn io(name: &'static str, nr: u32, bytes: bool) -> Syscall {
    Syscall {
        name,
        nr,
        timed: true,
        bytes,
        fd_arg0: true,
        op: FdOp::None,
    }
}

const fn fd(name: &'static str, nr: u32, op: FdOp) -> Syscall {
    Syscall {
        name,
        nr,
        timed: false,
        bytes: false,
        fd_arg0: false,
        op,
    }
}

const fn open(name: &'static str, nr: u32, op: FdOp) -> Syscall {
    Syscall {
        name,
        nr,
        timed: true,
        bytes: false,
        fd_arg0: false,
        op,
    }
}

const fn timed_op(name: &'static str, nr: u32, op: FdOp) -> Syscall {
    Syscall {
        name,
        nr,
        timed: true,
        bytes: false,
        fd_arg0: true,
        op,
    }
}

/// The file and socket I/O syscalls (timed) and the fd-table ones (followed), with
/// x86-64's numbers. Left out on purpose: the waits for readiness (`poll`, `select`,
/// `epoll_wait`: time waiting for any of many fds, not I/O on one) and `io_uring`.
pub const SYSCALLS: &[Syscall] = &[
    io("read", 0, true),
    io("write", 1, true),
    open("open", 2, FdOp::Open),
    timed_op("close", 3, FdOp::Close),
    io("pread64", 17, true),
    io("pwrite64", 18, true),
    io("readv", 19, true),
    io("writev", 20, true),
    fd("pipe", 22, FdOp::Pipe),
    fd("dup", 32, FdOp::Dup),
    fd("dup2", 33, FdOp::Dup),
    io("sendfile", 40, true),
    fd("socket", 41, FdOp::Socket),
    io("connect", 42, false),
    timed_op("accept", 43, FdOp::Socket),
    io("sendto", 44, true),
    io("recvfrom", 45, true),
    io("sendmsg", 46, true),
    io("recvmsg", 47, true),
    fd("socketpair", 53, FdOp::SocketPair),
    fd("fcntl", 72, FdOp::Fcntl),
    io("fsync", 74, false),
    io("fdatasync", 75, false),
    open("creat", 85, FdOp::Open),
    io("getdents64", 217, false),
    open("openat", 257, FdOp::OpenAt),
    io("splice", 275, true),
    io("tee", 276, true),
    io("sync_file_range", 277, false),
    io("vmsplice", 278, true),
    io("fallocate", 285, false),
    timed_op("accept4", 288, FdOp::Socket),
    fd("dup3", 292, FdOp::Dup),
    fd("pipe2", 293, FdOp::Pipe),
    io("preadv", 295, true),
    io("pwritev", 296, true),
    io("recvmmsg", 299, false),
    io("syncfs", 306, false),
    io("sendmmsg", 307, false),
    io("copy_file_range", 326, true),
    io("preadv2", 327, true),
    io("pwritev2", 328, true),
    open("openat2", 437, FdOp::OpenAt),
];

/// The syscall of number `nr` in [`SYSCALLS`].
pub fn syscall(nr: u32) -> Option<&'static Syscall> {
    SYSCALLS.iter().find(|s| s.nr == nr)
}

/// The syscall named `name` in [`SYSCALLS`].
pub fn syscall_named(name: &str) -> Option<&'static Syscall> {
    SYSCALLS.iter().find(|s| s.name == name)
}

/// What to trace, and the maps' sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoOptions {
    /// Every thread of the system; else the target processes' threads.
    pub all: bool,
    /// The target processes, to start with.
    pub tgids: Vec<u32>,
    /// Child processes of targets become targets.
    pub follow_forks: bool,
    /// Time only these syscalls (numbers of [`SYSCALLS`]); empty: all of its timed ones.
    pub only: Vec<u32>,
    /// Time every syscall (no bytes counted but [`SYSCALLS`]'s).
    pub all_syscalls: bool,
    /// Take the user stack (frame pointers) of each call.
    pub user_stacks: bool,
    /// Count only the calls that take this long or longer (ns).
    pub min_ns: u64,
    /// Send each call counted through the ring buffer ([`IoEvent::Slow`]): with
    /// `min_ns`, the slow calls.
    pub slow_events: bool,
    /// Distinct (thread, syscall, stack, fd) sums.
    pub max_sums: u32,
    /// Distinct stacks; each takes 127 × 8 bytes of kernel memory, allocated at load.
    pub max_stacks: u32,
    /// Threads inside a traced call at once.
    pub max_threads: u32,
    /// Distinct (process, fd, syscall, histogram bucket) counts.
    pub max_hdr: u32,
    /// Fds made anew while tracing (their generations).
    pub max_fds: u32,
    /// Bytes of the ring buffer (a power of two and of the page size).
    pub ring_bytes: u32,
}

impl Default for IoOptions {
    fn default() -> Self {
        IoOptions {
            all: false,
            tgids: Vec::new(),
            follow_forks: true,
            only: Vec::new(),
            all_syscalls: false,
            user_stacks: true,
            min_ns: 0,
            slow_events: false,
            max_sums: 65536,
            max_stacks: 16384,
            max_threads: 16384,
            max_hdr: 65536,
            max_fds: 65536,
            ring_bytes: 1 << 22,
        }
    }
}

/// The calls of one thread, syscall, stack and file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoSum {
    /// The process.
    pub tgid: u32,
    /// The thread.
    pub tid: u32,
    /// The syscall's number.
    pub nr: u32,
    /// The fd (-1: none, or an open that failed).
    pub fd: i32,
    /// The fd's generation when the call was made.
    pub generation: u32,
    /// The user stack at the call, leaf first, the frameless wrapper's caller put back
    /// (empty: not asked for or not readable).
    pub user: Vec<u64>,
    /// Calls.
    pub count: u64,
    /// Nanoseconds in the kernel, entry to exit.
    pub ns: u64,
    /// Bytes (the positive results of a byte-counting syscall).
    pub bytes: u64,
    /// Calls that returned an error.
    pub errors: u64,
}

/// Calls of one (process, fd, generation, syscall) in one HdrHistogram bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoHdr {
    /// The process.
    pub tgid: u32,
    /// The fd.
    pub fd: i32,
    /// Its generation.
    pub generation: u32,
    /// The syscall.
    pub nr: u32,
    /// HdrHistogram's counts index of the durations in ns
    /// ([`crate::latency::hdr_value`] gives back its lowest value).
    pub index: u32,
    /// Calls.
    pub count: u64,
}

/// A call the ring buffer carried (with `min_ns`: one slower than it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlowIo {
    /// The process.
    pub tgid: u32,
    /// The thread.
    pub tid: u32,
    /// The syscall.
    pub nr: u32,
    /// The fd and its generation.
    pub fd: i32,
    /// The fd's generation.
    pub generation: u32,
    /// Its time in the kernel (ns).
    pub ns: u64,
    /// When it returned (`CLOCK_MONOTONIC` ns).
    pub time: u64,
    /// Its result.
    pub ret: i64,
    /// The frameless wrapper's caller (0: none found).
    pub caller: u64,
    /// The stack id (filled into [`SlowIo::user`] by [`Io::finish`]).
    pub stack: i32,
    /// The user stack, leaf first, the caller put back.
    pub user: Vec<u64>,
}

/// One record of the ring buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IoEvent {
    /// `fd` (generation `generation`) opened at `path` (as given: relative to `dirfd`'s
    /// generation `dir_gen`, or to the working directory when `dirfd` is -100).
    Open {
        /// The process.
        tgid: u32,
        /// The new fd.
        fd: i32,
        /// Its generation.
        generation: u32,
        /// The directory fd (-100: `AT_FDCWD`).
        dirfd: i32,
        /// Its generation.
        dir_gen: u32,
        /// The path as the call gave it (at most 255 bytes).
        path: Vec<u8>,
        /// The inode opened (0: unreadable).
        ino: u64,
        /// Its mode (`S_IF*` bits).
        mode: u32,
    },
    /// A new fd with no path: a pipe's end, a socket, an accepted connection; or
    /// (`src` ≥ 0) a dup of `src` (generation `src_gen`).
    New {
        /// The process.
        tgid: u32,
        /// The new fd.
        fd: i32,
        /// Its generation.
        generation: u32,
        /// The fd it duplicates (-1: none).
        src: i32,
        /// That fd's generation.
        src_gen: u32,
        /// The inode (0: unreadable).
        ino: u64,
        /// Its mode (`S_IF*` bits).
        mode: u32,
    },
    /// `fd` closed.
    Close {
        /// The process.
        tgid: u32,
        /// The fd.
        fd: i32,
    },
    /// A target process forked: the child's fds are the parent's as they are now.
    Fork {
        /// The parent.
        parent: u32,
        /// The child process.
        child: u32,
    },
    /// A call the ring carried.
    Slow(SlowIo),
}

/// io.bpf.c's `struct event`: its size and the offset of its path.
const EVENT_PATH: usize = 80;
const EVENT_PATH_LEN: usize = 256;

impl IoEvent {
    /// The event in the bytes of a ring buffer record; `None` when they are too short
    /// or of no known kind.
    pub fn from_bytes(b: &[u8]) -> Option<IoEvent> {
        let u32_at = |o: usize| Some(u32::from_ne_bytes(b.get(o..o + 4)?.try_into().ok()?));
        let u64_at = |o: usize| Some(u64::from_ne_bytes(b.get(o..o + 8)?.try_into().ok()?));
        let kind = u32_at(0)?;
        let tgid = u32_at(4)?;
        let fd = u32_at(12)? as i32;
        let generation = u32_at(16)?;
        let src = u32_at(20)? as i32;
        let src_gen = u32_at(24)?;
        let mode = u32_at(28)?;
        let ino = u64_at(32)?;
        Some(match kind {
            1 => {
                let raw = b.get(EVENT_PATH..EVENT_PATH + EVENT_PATH_LEN)?;
                let end = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
                IoEvent::Open {
                    tgid,
                    fd,
                    generation,
                    dirfd: src,
                    dir_gen: src_gen,
                    path: raw[..end].to_vec(),
                    ino,
                    mode,
                }
            }
            2 | 3 => IoEvent::New {
                tgid,
                fd,
                generation,
                src: if kind == 3 { src } else { -1 },
                src_gen,
                ino,
                mode,
            },
            4 => IoEvent::Close { tgid, fd },
            5 => IoEvent::Fork {
                parent: tgid,
                child: fd as u32,
            },
            6 => IoEvent::Slow(SlowIo {
                tgid,
                tid: u32_at(8)?,
                nr: u32_at(72)?,
                fd,
                generation,
                ns: u64_at(40)?,
                time: u64_at(48)?,
                ret: u64_at(64)? as i64,
                caller: u64_at(56)?,
                stack: u32_at(76)? as i32,
                user: Vec::new(),
            }),
            _ => return None,
        })
    }
}

/// What did not fit or could not be read; all zero in a complete answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoDropped {
    /// Calls whose (thread, syscall, stack, fd) found no room in the sums.
    pub sums: u64,
    /// Calls whose thread found no room among the calls in progress: not counted.
    pub calls: u64,
    /// Child processes of targets not followed: no room among the targets.
    pub targets: u64,
    /// Fd-table changes or slow calls the ring buffer had no room for.
    pub events: u64,
    /// Calls left out of the percentiles: no room for their bucket.
    pub hdr: u64,
    /// Fds made anew with no room for their generation: their calls may be named as
    /// the fd was before.
    pub fds: u64,
    /// Stacks that are missing, by cause (weighted by calls).
    pub stacks: StackErrors,
}

/// What the kernel summed (see [`Io::finish`]).
#[derive(Clone, Debug, Default)]
pub struct IoData {
    /// Per thread, syscall, stack and fd.
    pub sums: Vec<IoSum>,
    /// The durations' HdrHistogram buckets per process, fd, syscall.
    pub hdr: Vec<IoHdr>,
    /// The calls the ring buffer carried, their stacks filled in.
    pub slow: Vec<SlowIo>,
    /// What did not fit.
    pub dropped: IoDropped,
}

const DROP_SUMS: usize = 0;
const DROP_STARTS: usize = 1;
const DROP_TARGETS: usize = 2;
const DROP_EVENTS: usize = 3;
const DROP_HDR: usize = 4;
const DROP_GENS: usize = 5;

/// `targets` values of io.bpf.c.
const TARGET: u8 = 1;
const TARGET_AT_EXEC: u8 = 2;

/// The frame-pointer stack `user` with the frameless wrapper's `caller` put back
/// after its leaf (unless the walk has it already).
fn with_caller(mut user: Vec<u64>, caller: u64) -> Vec<u64> {
    if caller != 0 && !user.is_empty() && user.get(1) != Some(&caller) {
        user.insert(1, caller);
    }
    user
}

/// The syscall programs, loaded and attached.
#[derive(Debug)]
pub struct Io {
    engine: Engine,
}

impl Io {
    /// Loads the programs with `o`'s options and attaches them (`sys_enter`,
    /// `sys_exit`, `task_newtask`, `sched_process_exec`): the targets' calls are timed
    /// from now on.
    pub fn start(o: &IoOptions) -> Result<Io, Error> {
        let at_least = |n: u32| n.max(1);
        let targets = u32::try_from(o.tgids.len().saturating_mul(2))
            .unwrap_or(u32::MAX)
            .max(4096);
        let mut engine = Loader::new(&objects::IO)
            .global("all_threads", o.all)
            .global("all_syscalls", o.all_syscalls)
            .global("follow_forks", o.follow_forks)
            .global("user_stacks", o.user_stacks)
            .global("slow_events", o.slow_events)
            .global("min_ns", o.min_ns)
            .max_entries("sums", at_least(o.max_sums))
            .max_entries("stacks", at_least(o.max_stacks))
            .max_entries("start", at_least(o.max_threads))
            .max_entries("hdr", at_least(o.max_hdr))
            .max_entries("fdgen", at_least(o.max_fds))
            .max_entries("events", o.ring_bytes)
            .max_entries("targets", targets)
            .load()?;
        for &t in &o.tgids {
            engine.hash_insert("targets", t, TARGET)?;
        }
        for s in SYSCALLS {
            let timed = s.timed && (o.only.is_empty() || o.only.contains(&s.nr));
            let bits = u8::from(timed) | u8::from(s.bytes) << 1 | u8::from(s.fd_arg0) << 2;
            if timed || s.bytes {
                engine.array_set("wanted", s.nr, bits)?;
            }
            if s.op != FdOp::None {
                engine.array_set("fdop", s.nr, s.op as u8)?;
            }
        }
        engine.attach_raw_tracepoint("io_newtask", "task_newtask")?;
        engine.attach_raw_tracepoint("io_exec", "sched_process_exec")?;
        engine.attach_raw_tracepoint("io_enter", "sys_enter")?;
        engine.attach_raw_tracepoint("io_exit", "sys_exit")?;
        Ok(Io { engine })
    }

    /// Makes `tgid` a target (a command started after [`Io::start`]); with `at_exec`
    /// from its next `exec` on (a command held before it: what it does until then is
    /// hwprof's).
    pub fn add_tgid(&mut self, tgid: u32, at_exec: bool) -> Result<(), Error> {
        let v = if at_exec { TARGET_AT_EXEC } else { TARGET };
        self.engine.hash_insert("targets", tgid, v)
    }

    /// The ring buffer of fd-table changes and slow calls, to drain while the targets
    /// run ([`IoEvent::from_bytes`] reads each record).
    pub fn ring(&mut self) -> Result<Ring, Error> {
        self.engine.ring("events")
    }

    /// The kernel's ids of its programs (see [`Engine::program_ids`]).
    pub fn program_ids(&self) -> Vec<u32> {
        self.engine.program_ids()
    }

    /// Detaches the programs and reads what they summed; `slow` is what was drained of
    /// [`IoEvent::Slow`] from the ring, whose stacks are filled in.
    pub fn finish(mut self, mut slow: Vec<SlowIo>) -> Result<IoData, Error> {
        self.engine.detach()?;
        let e = &self.engine;
        let slots = e.dropped()?;
        let at = |i: usize| slots.get(i).copied().unwrap_or(0);
        let mut stacks = e.stacks("stacks")?;
        let sums = e
            .hash_entries::<IoSumKey, IoSumVal>("sums")?
            .into_iter()
            .map(|(k, v)| IoSum {
                tgid: k.tgid,
                tid: k.tid,
                nr: k.nr,
                fd: k.fd,
                generation: k.generation,
                user: with_caller(stacks.get(k.stack, v.count), k.caller),
                count: v.count,
                ns: v.ns,
                bytes: v.bytes,
                errors: v.errors,
            })
            .collect();
        for s in &mut slow {
            s.user = with_caller(stacks.get(s.stack, 0), s.caller);
        }
        let hdr = e
            .hash_entries::<IoHdrKey, u64>("hdr")?
            .into_iter()
            .map(|(k, count)| IoHdr {
                tgid: k.tgid,
                fd: k.fd,
                generation: k.generation,
                nr: k.nr,
                index: k.index,
                count,
            })
            .collect();
        Ok(IoData {
            sums,
            hdr,
            slow,
            dropped: IoDropped {
                sums: at(DROP_SUMS),
                calls: at(DROP_STARTS),
                targets: at(DROP_TARGETS),
                events: at(DROP_EVENTS),
                hdr: at(DROP_HDR),
                fds: at(DROP_GENS),
                stacks: stacks.errors(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wrappers_caller_goes_after_the_leaf_unless_the_walk_has_it() {
        assert_eq!(with_caller(vec![10, 30], 20), vec![10, 20, 30]);
        assert_eq!(with_caller(vec![10, 20, 30], 20), vec![10, 20, 30]);
        assert_eq!(with_caller(vec![10, 30], 0), vec![10, 30]);
        assert_eq!(with_caller(vec![], 20), Vec::<u64>::new());
    }

    #[test]
    fn events_from_bytes() {
        let mut b = vec![0u8; EVENT_PATH + EVENT_PATH_LEN];
        let put32 =
            |b: &mut Vec<u8>, o: usize, v: u32| b[o..o + 4].copy_from_slice(&v.to_ne_bytes());
        put32(&mut b, 0, 1);
        put32(&mut b, 4, 77);
        put32(&mut b, 12, 5);
        put32(&mut b, 16, 2);
        put32(&mut b, 20, (-100i32) as u32);
        b[EVENT_PATH..EVENT_PATH + 4].copy_from_slice(b"zero");
        assert_eq!(
            IoEvent::from_bytes(&b),
            Some(IoEvent::Open {
                tgid: 77,
                fd: 5,
                generation: 2,
                dirfd: -100,
                dir_gen: 0,
                path: b"zero".to_vec(),
                ino: 0,
                mode: 0
            })
        );
        put32(&mut b, 0, 5);
        assert_eq!(
            IoEvent::from_bytes(&b),
            Some(IoEvent::Fork {
                parent: 77,
                child: 5
            })
        );
        put32(&mut b, 0, 99);
        assert_eq!(IoEvent::from_bytes(&b), None);
        assert_eq!(IoEvent::from_bytes(&b[..20]), None);
    }

    #[test]
    fn syscall_numbers_are_distinct() {
        for (i, a) in SYSCALLS.iter().enumerate() {
            assert!(a.nr < 512, "{}", a.name);
            for b in &SYSCALLS[i + 1..] {
                assert_ne!(a.nr, b.nr, "{} {}", a.name, b.name);
            }
        }
        assert_eq!(syscall_named("read").map(|s| s.nr), Some(0));
        assert_eq!(syscall(257).map(|s| s.name), Some("openat"));
    }
}
