//! The unsafe layer: `perf_event_open`, its ioctls, `read`, and process control for
//! starting a workload. Everything above this module is safe code. Nothing here keeps
//! global state or installs a signal handler (see [`crate::stop`]).
//!
//! Every syscall result passes [`check`], which turns `-1` + errno into `io::Error`.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use perf_event_open_sys as pes;

use crate::attr::Attr;

/// Turns a raw syscall return into `io::Result`: negative means errno.
fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Builds the kernel's `perf_event_attr` from an [`Attr`].
///
/// `path` must outlive every use of the returned struct when `attr.uprobe_path` is set,
/// because `config1` then points into it.
fn to_kernel(attr: &Attr, path: Option<&CStr>) -> pes::bindings::perf_event_attr {
    let mut a = pes::bindings::perf_event_attr {
        type_: attr.type_,
        size: std::mem::size_of::<pes::bindings::perf_event_attr>() as u32,
        config: attr.config,
        sample_type: attr.sample_type,
        read_format: attr.read_format,
        bp_type: attr.bp_type,
        branch_sample_type: attr.branch_sample_type,
        sample_regs_user: attr.sample_regs_user,
        sample_stack_user: attr.sample_stack_user,
        clockid: attr.clockid,
        sample_regs_intr: attr.sample_regs_intr,
        aux_watermark: attr.aux_watermark,
        sample_max_stack: attr.sample_max_stack,
        aux_sample_size: attr.aux_sample_size,
        sig_data: attr.sig_data,
        config3: attr.config3,
        ..Default::default()
    };
    a.sample_period = attr.sample_period;
    a.wakeup_events = attr.wakeup_events;
    a.config1 = match path {
        Some(p) => p.as_ptr() as u64,
        None => attr.config1,
    };
    a.config2 = attr.config2;
    // The flag bits sit in one u64 bitfield right after `read_format`; [`Attr::flags`]
    // builds it in the kernel's bit order.
    a._bitfield_1 = pes::bindings::__BindgenBitfieldUnit::new(attr.flags().to_le_bytes());
    a
}

/// Opens one event. `pid`/`cpu` follow perf_event_open(2): pid -1 with a CPU is
/// system-wide on that CPU; cpu -1 follows the task. `group` is the leader's fd.
pub fn perf_event_open(
    attr: &Attr,
    pid: i32,
    cpu: i32,
    group: Option<RawFd>,
) -> io::Result<OwnedFd> {
    let path = match &attr.uprobe_path {
        Some(p) => {
            Some(CString::new(p.as_str()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?)
        }
        None => None,
    };
    let mut kattr = to_kernel(attr, path.as_deref());
    let flags = pes::bindings::PERF_FLAG_FD_CLOEXEC as libc::c_ulong;
    // SAFETY: `kattr` is a fully initialised perf_event_attr whose `size` is its own size;
    // `config1` points into `path`, which lives until after the call. The kernel copies
    // the struct and the string during the call and keeps no pointer to our memory.
    let fd = unsafe { pes::perf_event_open(&mut kattr, pid, cpu, group.unwrap_or(-1), flags) };
    let fd = check(fd.into())? as RawFd;
    // SAFETY: the syscall returned a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The ioctls on a perf event fd that hwprof uses.
#[derive(Clone, Copy, Debug)]
pub enum Ioctl {
    /// `PERF_EVENT_IOC_ENABLE`.
    Enable,
    /// `PERF_EVENT_IOC_DISABLE`.
    Disable,
    /// `PERF_EVENT_IOC_RESET`.
    Reset,
}

/// Runs an argument-less ioctl; with `group` it applies to the whole group
/// (`PERF_IOC_FLAG_GROUP`).
pub fn ioctl(fd: &OwnedFd, op: Ioctl, group: bool) -> io::Result<()> {
    let flag = if group {
        pes::bindings::PERF_IOC_FLAG_GROUP
    } else {
        0
    };
    let raw = fd.as_raw_fd();
    // SAFETY: `raw` is an open perf event fd borrowed for the call; these ioctls take an
    // integer flag argument and touch no memory of ours.
    let ret = unsafe {
        match op {
            Ioctl::Enable => pes::ioctls::ENABLE(raw, flag),
            Ioctl::Disable => pes::ioctls::DISABLE(raw, flag),
            Ioctl::Reset => pes::ioctls::RESET(raw, flag),
        }
    };
    check(ret.into()).map(drop)
}

/// The kernel's unique id of an event (`PERF_EVENT_IOC_ID`).
pub fn event_id(fd: &OwnedFd) -> io::Result<u64> {
    let mut id = 0u64;
    // SAFETY: the ioctl writes one u64 to the pointer, which points at `id` on our stack.
    let ret = unsafe { pes::ioctls::ID(fd.as_raw_fd(), &mut id) };
    check(ret.into())?;
    Ok(id)
}

/// Reads from a perf fd into `buf`, returning the bytes read.
pub fn read(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the whole call.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    check(n as libc::c_long).map(|n| n as usize)
}

/// A child process forked and held before `exec` until [`Workload::start`].
///
/// This is how counters see a command from its first instruction: the child is created,
/// counters are attached to its pid with `enable_on_exec`, then it is let go.
///
/// The child dies with its creator (`PR_SET_PDEATHSIG` = SIGKILL): when hwprof is killed,
/// the command it started does not run on unobserved. The kernel sends that signal when
/// the *thread* that called [`Workload::prepare`] exits, so prepare a workload on a
/// thread that outlives it (hwprof uses its main thread). The command's own children are
/// not affected.
#[derive(Debug)]
pub struct Workload {
    pid: i32,
    go: Option<OwnedFd>,
    err: OwnedFd,
}

/// How a workload could not start.
#[derive(Debug)]
pub enum ExecError {
    /// `execvp` failed in the child with this errno.
    Exec(io::Error),
    /// Setting the child up failed.
    Setup(io::Error),
}

impl Workload {
    /// Forks a child that waits, then `execvp`s `argv`.
    pub fn prepare(argv: &[String]) -> Result<Workload, ExecError> {
        Self::prepare_with(argv, None)
    }

    /// Like [`Workload::prepare`], with the child's stdout and stderr sent to `/dev/null`
    /// (for benchmarks, where the command's output would mix with the results).
    pub fn prepare_quiet(argv: &[String]) -> Result<Workload, ExecError> {
        let null = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .map_err(ExecError::Setup)?;
        Self::prepare_with(argv, Some(OwnedFd::from(null)))
    }

    fn prepare_with(argv: &[String], null_out: Option<OwnedFd>) -> Result<Workload, ExecError> {
        let cargs: Vec<CString> = argv
            .iter()
            .map(|a| CString::new(a.as_bytes()))
            .collect::<Result<_, _>>()
            .map_err(|_| ExecError::Setup(io::Error::from_raw_os_error(libc::EINVAL)))?;
        if cargs.is_empty() {
            return Err(ExecError::Setup(io::Error::from_raw_os_error(libc::EINVAL)));
        }
        let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let (go_r, go_w) = pipe().map_err(ExecError::Setup)?;
        let (err_r, err_w) = pipe().map_err(ExecError::Setup)?;
        // SAFETY: getpid has no preconditions and cannot fail.
        let parent = unsafe { libc::getpid() };
        // SAFETY: fork has no memory-safety preconditions. The child below calls only
        // async-signal-safe functions (prctl, getppid, read, dup2, execvp, write, _exit)
        // on memory prepared before the fork, so it is sound even if other threads held
        // locks.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(ExecError::Setup(io::Error::last_os_error()));
        }
        if pid == 0 {
            // SAFETY: in the child: only async-signal-safe calls on pre-built buffers.
            unsafe {
                // Close the parent's ends first, or a parent that gives up (drops `go`
                // unsent) would leave us blocked forever on our own copy of the writer.
                libc::close(go_w.as_raw_fd());
                libc::close(err_r.as_raw_fd());
                // Die with hwprof: if it is killed (even with SIGKILL), the kernel sends
                // us SIGKILL, so no target it started keeps running unobserved. The
                // setting survives exec (not of set-uid binaries) and is not passed to our
                // own children. Had the parent already died before prctl, nothing would
                // ever be sent: getppid() then names another process, and we leave.
                libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                );
                if libc::getppid() != parent {
                    libc::_exit(127);
                }
                let mut b = [0u8; 1];
                // Wait for the parent: 1 byte = go, EOF = abort.
                let n = libc::read(go_r.as_raw_fd(), b.as_mut_ptr().cast(), 1);
                if let Some(null) = &null_out {
                    // dup2 clears O_CLOEXEC on the new fds 1 and 2; the original closes at exec.
                    libc::dup2(null.as_raw_fd(), 1);
                    libc::dup2(null.as_raw_fd(), 2);
                }
                if n == 1 {
                    libc::execvp(ptrs[0], ptrs.as_ptr());
                    let e = *libc::__errno_location();
                    let eb = e.to_ne_bytes();
                    libc::write(err_w.as_raw_fd(), eb.as_ptr().cast(), eb.len());
                }
                libc::_exit(127);
            }
        }
        drop(go_r);
        drop(err_w);
        drop(null_out);
        Ok(Workload {
            pid,
            go: Some(go_w),
            err: err_r,
        })
    }

    /// The child's pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Lets the child exec. Returns the exec error if `execvp` failed.
    pub fn start(&mut self) -> Result<(), ExecError> {
        let go = self
            .go
            .take()
            .ok_or_else(|| ExecError::Setup(io::Error::from_raw_os_error(libc::EINVAL)))?;
        let one = [1u8];
        // SAFETY: writes one byte from a live buffer to our pipe fd.
        let n = unsafe { libc::write(go.as_raw_fd(), one.as_ptr().cast(), 1) };
        check(n as libc::c_long).map_err(ExecError::Setup)?;
        drop(go);
        let mut eb = [0u8; 4];
        let mut got = 0;
        while got < eb.len() {
            // SAFETY: reads into the unfilled tail of a live buffer.
            let n = unsafe {
                libc::read(
                    self.err.as_raw_fd(),
                    eb[got..].as_mut_ptr().cast(),
                    eb.len() - got,
                )
            };
            match check(n as libc::c_long) {
                Ok(0) => break,
                Ok(n) => got += n as usize,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ExecError::Setup(e)),
            }
        }
        if got == eb.len() {
            return Err(ExecError::Exec(io::Error::from_raw_os_error(
                i32::from_ne_bytes(eb),
            )));
        }
        Ok(())
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        // Dropping `go` unstarted makes the child read EOF and _exit; nothing to reap here
        // because `wait` is the caller's job once started.
        if self.go.take().is_some() {
            let _ = wait(self.pid);
        }
    }
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two fds into the array.
    let ret = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    check(ret.into())?;
    // SAFETY: both fds are new and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A watchdog process that undoes kernel settings hwprof made if hwprof dies without
/// undoing them itself (SIGKILL, a crash).
///
/// hwprof tells it, one line at a time over a socket pair ([`Cleaner::send`]), the
/// commands that undo what it is about to set up (e.g. `-:hwprof_123/f`, which deletes a
/// uprobe definition). The watchdog only collects them. When every copy of hwprof's end
/// is closed (hwprof dropped the [`Cleaner`], exited, or was killed: the kernel closes
/// the fds of a dead process), it reads EOF and writes each line to the control file
/// given at spawn (`uprobe_events`), one `write` per line (newline included). A line
/// that fails with EBUSY (the kernel has not released the events yet) is retried every
/// 50 ms for up to `patience`; any other outcome (done, ENOENT because hwprof already
/// removed it) ends that line. Then the watchdog exits.
///
/// The watchdog is a grandchild (fork, fork, the middle one exits at once and is
/// reaped here), so it is never a zombie of hwprof and is reaped by init. It starts its
/// own session (a terminal's Ctrl-C or hangup does not reach it), ignores SIGINT,
/// SIGHUP and SIGPIPE, and closes every inherited fd but its socket: it keeps no perf
/// event, ring or pipe of hwprof alive. Between fork and exit it calls only
/// async-signal-safe functions on memory allocated before the fork, so it is sound to
/// spawn from a multi-threaded process.
#[derive(Debug)]
pub struct Cleaner {
    sock: OwnedFd,
}

/// How often the watchdog retries a line the kernel refused with EBUSY.
const CLEANER_RETRY_NS: i64 = 50_000_000;

impl Cleaner {
    /// Starts a watchdog that, at EOF, writes up to `capacity` bytes of received lines
    /// into `control` (bytes past `capacity` are dropped), retrying EBUSY for `patience`.
    pub fn spawn(
        control: &std::path::Path,
        capacity: usize,
        patience: Duration,
    ) -> io::Result<Cleaner> {
        use std::os::unix::ffi::OsStrExt;
        let path = CString::new(control.as_os_str().as_bytes())
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let mut buf = vec![0u8; capacity.max(1)];
        let max_fd = open_files_limit().map_or(65_536, |l| l.min(1 << 20)) as libc::c_int;
        let patience_ns = i64::try_from(patience.as_nanos()).unwrap_or(i64::MAX);
        let (ours, theirs) = socketpair()?;
        // SAFETY: fork has no memory-safety preconditions. The child and grandchild below
        // call only async-signal-safe functions (fork, _exit, setsid, sigaction, close,
        // close_range, read, open, write, clock_gettime, nanosleep) on memory allocated
        // before the fork (`path`, `buf`), so this is sound even if other threads held
        // locks (the allocator's included) at the time of the fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // SAFETY: see above; `cleaner_main` never returns.
            unsafe {
                let grandchild = libc::fork();
                if grandchild != 0 {
                    // The middle process: report whether the watchdog exists, and go.
                    libc::_exit(i32::from(grandchild < 0));
                }
                cleaner_main(theirs.as_raw_fd(), &path, &mut buf, patience_ns, max_fd)
            }
        }
        drop(theirs);
        let middle = wait(pid)?;
        if middle.code != 0 {
            return Err(io::Error::other("the watchdog process could not be forked"));
        }
        Ok(Cleaner { sock: ours })
    }

    /// Sends one line (without its newline) for the watchdog to write at EOF; a line
    /// holding a newline is EINVAL (it would be two commands).
    pub fn send(&self, line: &str) -> io::Result<()> {
        if line.contains('\n') {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let mut msg = Vec::with_capacity(line.len() + 1);
        msg.extend_from_slice(line.as_bytes());
        msg.push(b'\n');
        let mut off = 0;
        while off < msg.len() {
            let rest = &msg[off..];
            // SAFETY: sends from a live buffer; MSG_NOSIGNAL turns a gone watchdog into
            // EPIPE instead of killing us with SIGPIPE.
            let n = unsafe {
                libc::send(
                    self.sock.as_raw_fd(),
                    rest.as_ptr().cast(),
                    rest.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            match check(n as libc::c_long) {
                Ok(n) => off += n as usize,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// A connected `AF_UNIX` stream socket pair, both ends close-on-exec.
fn socketpair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: socketpair writes two fds into the array.
    let ret = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    check(ret.into())?;
    // SAFETY: both fds are new and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn monotonic_ns() -> i64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into a live local (async-signal-safe).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec.saturating_mul(1_000_000_000) + t.tv_nsec
}

/// The watchdog's life after the fork (see [`Cleaner`]): collect lines until EOF on
/// `sock`, then write each into `path`, retrying EBUSY until `patience_ns` passed.
///
/// # Safety
/// Call only in a freshly forked child; it never returns. Everything it touches was
/// allocated before the fork, and it calls only async-signal-safe functions.
unsafe fn cleaner_main(
    sock: RawFd,
    path: &CStr,
    buf: &mut [u8],
    patience_ns: i64,
    max_fd: libc::c_int,
) -> ! {
    // SAFETY: async-signal-safe calls on live locals; see the function's contract.
    unsafe {
        libc::setsid();
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = libc::SIG_IGN;
        libc::sigemptyset(&mut sa.sa_mask);
        for sig in [libc::SIGINT, libc::SIGHUP, libc::SIGPIPE] {
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
        // Keep nothing of hwprof's open: a perf fd held here would keep its events (and
        // so the definitions) busy forever, and a pipe or terminal would not see EOF.
        let ok = sock > 0
            && libc::syscall(libc::SYS_close_range, 0u32, (sock - 1) as u32, 0u32) == 0
            && libc::syscall(libc::SYS_close_range, (sock + 1) as u32, u32::MAX, 0u32) == 0;
        if !ok {
            for fd in 0..max_fd.max(sock + 1) {
                if fd != sock {
                    libc::close(fd);
                }
            }
        }
        // Collect until EOF; past the buffer, keep reading (to notice EOF) and drop.
        let mut len = 0usize;
        let mut spill = [0u8; 256];
        loop {
            let n = if len < buf.len() {
                libc::read(sock, buf.as_mut_ptr().add(len).cast(), buf.len() - len)
            } else {
                libc::read(sock, spill.as_mut_ptr().cast(), spill.len())
            };
            if n > 0 {
                if len < buf.len() {
                    len += n as usize;
                }
            } else if n == 0 || *libc::__errno_location() != libc::EINTR {
                break;
            }
        }
        libc::close(sock);
        // A partial last line (buffer full) must not run: cut back to the last newline.
        while len > 0 && buf[len - 1] != b'\n' {
            len -= 1;
        }
        let deadline = monotonic_ns().saturating_add(patience_ns);
        loop {
            let fd = libc::open(
                path.as_ptr(),
                libc::O_WRONLY | libc::O_APPEND | libc::O_CLOEXEC,
            );
            if fd < 0 {
                if *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                break;
            }
            let mut busy = false;
            let mut start = 0usize;
            while start < len {
                let mut end = start;
                while end < len && buf[end] != b'\n' {
                    end += 1;
                }
                // A line whose first byte is 0 is done. Each line is written with its
                // newline (`end` < `len` is one: `len` was cut back to a newline).
                if end > start && buf[start] != 0 {
                    let r = libc::write(fd, buf.as_ptr().add(start).cast(), end + 1 - start);
                    let e = *libc::__errno_location();
                    if r < 0 && (e == libc::EBUSY || e == libc::EINTR) {
                        busy = true;
                    } else {
                        buf[start] = 0;
                    }
                }
                start = end + 1;
            }
            libc::close(fd);
            if !busy || monotonic_ns() >= deadline {
                break;
            }
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: CLEANER_RETRY_NS,
            };
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
        libc::_exit(0)
    }
}

/// How a waited-for child ended, with its resource usage.
#[derive(Clone, Copy, Debug)]
pub struct ExitInfo {
    /// Exit code, or 128 + signal number when killed by a signal (the shell convention).
    pub code: i32,
    /// The signal that killed it, if any.
    pub signal: Option<i32>,
    /// User CPU time in microseconds.
    pub user_us: u64,
    /// System CPU time in microseconds.
    pub sys_us: u64,
    /// Peak resident set size in KiB (`ru_maxrss`).
    pub max_rss_kb: u64,
}

/// Waits for child `pid` (retrying on EINTR), returning its exit status and rusage.
pub fn wait(pid: i32) -> io::Result<ExitInfo> {
    let mut status = 0;
    // SAFETY: rusage is plain old data; zeroed is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4 writes into `status` and `ru`, both live locals.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        match check(r.into()) {
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    let (code, signal) = if libc::WIFSIGNALED(status) {
        let s = libc::WTERMSIG(status);
        (128 + s, Some(s))
    } else {
        (libc::WEXITSTATUS(status), None)
    };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Ok(ExitInfo {
        code,
        signal,
        user_us: us(ru.ru_utime),
        sys_us: us(ru.ru_stime),
        max_rss_kb: u64::try_from(ru.ru_maxrss).unwrap_or(0),
    })
}

/// A pidfd: readable when the process exits (`pidfd_open(2)`).
pub fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes two integers and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = check(fd)? as RawFd;
    // SAFETY: a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Polls `fds` for readability for up to `timeout_ms` (-1 = forever). Returns the
/// indexes that are ready; an empty list on timeout or on EINTR (a signal arrived).
pub fn poll_readable(fds: &[BorrowedFd<'_>], timeout_ms: i32) -> io::Result<Vec<usize>> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|f| libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `p` is a live array of `p.len()` pollfd structs.
    let r = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, timeout_ms) };
    match check(r.into()) {
        Ok(_) => Ok(p
            .iter()
            .enumerate()
            .filter(|(_, x)| x.revents != 0)
            .map(|(i, _)| i)
            .collect()),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// How many bytes are waiting to be read on a socket or pipe (`FIONREAD`), without
/// reading them.
pub fn unread_bytes(fd: BorrowedFd<'_>) -> io::Result<usize> {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer, which points at `n`.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut n) };
    check(r.into())?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Sends `sig` to `pid`.
pub fn kill(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: kill takes two integers.
    let r = unsafe { libc::kill(pid, sig) };
    check(r.into()).map(drop)
}

/// Whether a process exists (signal 0); EPERM means it exists but is not ours.
pub fn process_exists(pid: i32) -> bool {
    match kill(pid, 0) {
        Ok(()) => true,
        Err(e) => e.raw_os_error() == Some(libc::EPERM),
    }
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf takes an integer and has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 { n as usize } else { 4096 }
}

/// The soft limit on open files (`RLIMIT_NOFILE`).
pub fn open_files_limit() -> Option<u64> {
    // SAFETY: rlimit is plain old data; getrlimit writes into it.
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `r` is a live local.
    let ret = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) };
    (ret == 0).then_some(r.rlim_cur)
}

/// The effective uid.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Mounts tracefs at `target` (root only).
pub fn mount_tracefs(target: &str) -> io::Result<()> {
    let src = CString::new("nodev").map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let tgt = CString::new(target).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let fstype = CString::new("tracefs").map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: all three are valid NUL-terminated strings alive for the call; data is null.
    let r = unsafe {
        libc::mount(
            src.as_ptr(),
            tgt.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    check(r.into()).map(drop)
}

/// Redirects the records of perf event `fd` into the ring of `target`
/// (`PERF_EVENT_IOC_SET_OUTPUT`): both must be on the same CPU (or the same task when
/// `cpu` is -1), and `fd` must not be mmap'd itself.
pub fn set_output(fd: &OwnedFd, target: &OwnedFd) -> io::Result<()> {
    // SAFETY: both are open perf event fds borrowed for the call; the ioctl takes the
    // target fd as an integer argument and touches no memory of ours.
    let ret = unsafe { pes::ioctls::SET_OUTPUT(fd.as_raw_fd(), target.as_raw_fd()) };
    check(ret.into()).map(drop)
}

/// Attaches BPF program `prog` to perf event `fd` (`PERF_EVENT_IOC_SET_BPF`): on a
/// tracepoint, kprobe or uprobe event the program joins that trace event's programs and
/// runs on its hits in the event's targets; it leaves when `fd` is closed.
pub fn set_bpf(fd: BorrowedFd<'_>, prog: BorrowedFd<'_>) -> io::Result<()> {
    let prog =
        u32::try_from(prog.as_raw_fd()).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: `fd` is an open perf event fd borrowed for the call; the ioctl takes the
    // program's fd as an integer argument and touches no memory of ours.
    let ret = unsafe { pes::ioctls::SET_BPF(fd.as_raw_fd(), prog) };
    check(ret.into()).map(drop)
}

/// An epoll instance (`epoll_create1(EPOLL_CLOEXEC)`), level-triggered, with a reused
/// event buffer so that waiting allocates nothing after the first calls.
#[derive(Debug)]
pub struct Epoll {
    fd: OwnedFd,
    buf: Vec<libc::epoll_event>,
}

impl Epoll {
    /// A new epoll instance.
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: epoll_create1 takes an integer flag and returns a new fd or -1.
        let fd = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) }.into())? as RawFd;
        Ok(Epoll {
            // SAFETY: a new fd that nothing else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            buf: Vec::new(),
        })
    }

    /// Watches `fd` for readability (EPOLLIN; EPOLLHUP/EPOLLERR are always reported);
    /// [`Epoll::wait`] reports it as `token`.
    pub fn add(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: `ev` is a live local the kernel reads during the call; `fd` is only
        // an integer to the kernel (EBADF if it is not open).
        let r = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        check(r.into())?;
        self.buf.push(libc::epoll_event { events: 0, u64: 0 });
        Ok(())
    }

    /// Stops watching `fd` (e.g. after it reported EPOLLHUP, which would otherwise
    /// wake every wait).
    pub fn remove(&mut self, fd: RawFd) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: as in `add`; the event argument is ignored for EPOLL_CTL_DEL but must be
        // a valid pointer on old kernels.
        let r = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut ev) };
        check(r.into()).map(drop)
    }

    /// Waits up to `timeout_ms` (-1 = forever) and fills `ready` with `(token, hup)` for
    /// every ready fd, where `hup` is set for EPOLLHUP/EPOLLERR. A timeout or EINTR (a
    /// signal arrived) leaves `ready` empty.
    pub fn wait(&mut self, ready: &mut Vec<(u64, bool)>, timeout_ms: i32) -> io::Result<()> {
        ready.clear();
        if self.buf.is_empty() {
            self.buf.push(libc::epoll_event { events: 0, u64: 0 });
        }
        let max = self.buf.len().min(i32::MAX as usize) as i32;
        // SAFETY: `buf` is a live array of `max` epoll_event structs the kernel may write.
        let n = unsafe {
            libc::epoll_wait(self.fd.as_raw_fd(), self.buf.as_mut_ptr(), max, timeout_ms)
        };
        match check(n.into()) {
            Ok(n) => {
                let hup = (libc::EPOLLHUP | libc::EPOLLERR) as u32;
                for ev in self.buf.iter().take(n as usize) {
                    let (events, token) = (ev.events, ev.u64);
                    ready.push((token, events & hup != 0));
                }
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            Err(e) => Err(e),
        }
    }
}
