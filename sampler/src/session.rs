//! Sampling sessions: open the events on a target, map one ring per CPU, and drain the
//! rings on one thread into a sink until the target is done.
//!
//! # How fds and rings are laid out
//!
//! Every target is opened **per CPU** (`cpu` = each online CPU, or the `-C` list), so
//! that inherited events can be mmap'd (the kernel refuses to mmap an `inherit` event
//! with `cpu = -1`) and so that there is exactly **one ring per CPU**:
//!
//! | target | `pid` passed to `perf_event_open` | fds |
//! |---|---|---|
//! | [`Target::Command`] | the held child (events start at its `exec`) | CPUs × events |
//! | [`Target::Pids`] | every thread in `/proc/PID/task` | CPUs × threads × events |
//! | [`Target::Tids`] | each thread | CPUs × threads × events |
//! | [`Target::SystemWide`] | -1 | CPUs × events |
//! | [`Target::During`] | as its attached target; the command is held, then started once the events are enabled | as its attached target |
//!
//! On each CPU the first fd opened owns the ring (`mmap`); every other fd of that CPU
//! sends its records there with `PERF_EVENT_IOC_SET_OUTPUT`. Group members are opened
//! with their leader's fd on the same CPU and thread. Each attr gets a byte watermark of
//! an eighth of the ring (`watermark = 1`, `wakeup_watermark = data_size / 8`), so the
//! drain thread sleeps in `epoll_wait` until there is that much to read, plus a
//! 100 ms tick that drains stragglers and checks for the end.
//!
//! # When a session ends
//!
//! - the command exits (its pidfd becomes readable; with [`Target::During`] this alone
//!   ends it, as in perf), or every `-p` PID is gone, or every `-t` thread is gone;
//! - the [`Stop`](hwprof_pmu::stop::Stop) given to [`Session::run`] is stopped (the
//!   program's SIGINT or SIGTERM; its fd is in every wait, so a stop is never missed). A
//!   `-p`/`-t`/`-a` target is left alone. A command gets 500 ms to exit by itself (a
//!   terminal's Ctrl-C reaches it too), then SIGTERM, as `perf record` does with an
//!   unfinished workload;
//! - `duration` elapses: a command is then sent SIGTERM and reaped (and SIGKILL if it
//!   ignores SIGTERM for 2 s), so that nothing keeps running unobserved.
//!
//! Then the events are disabled and every ring is drained to empty.
//!
//! # Uprobes
//!
//! Uprobes that children inherit are defined in tracefs and opened as tracepoints
//! ([`hwprof_pmu::uprobe_events`]): the uprobe PMU's path pointer breaks the target's
//! `fork()` when inherited. The session holds the definitions until its fds and rings
//! are gone (its last field), and [`Session::uprobe_definitions`] names them for
//! `HEADER_TRACING_DATA`. When they cannot be written the uprobes are opened without
//! inheritance and [`Session::notices`] says so.

mod run;

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use hwprof_pmu::EventList;
use hwprof_pmu::attr::Attr;
use hwprof_pmu::counter::{Slot, open_hint};
use hwprof_pmu::sys::{self, ExecError, Workload};
use hwprof_pmu::uprobe_events::{self, Probes};

use crate::error::{Error, Result};
use crate::ring::Ring;

pub use hwprof_pmu::target::Target;
pub use run::{Edge, FINISHED_ROUND, RunStats};

/// How to run a session.
#[derive(Clone, Debug)]
pub struct SessionOptions {
    /// Data pages per ring (a power of two); the ring is this many pages plus one
    /// control page.
    pub data_pages: usize,
    /// Children and new threads inherit the events (sets `attr.inherit`; ignored for
    /// system-wide targets).
    pub inherit: bool,
    /// Stop after this long.
    pub duration: Option<Duration>,
}

impl Default for SessionOptions {
    /// perf's default: 512 KiB of data per ring, inherit, no time limit.
    fn default() -> Self {
        SessionOptions {
            data_pages: default_data_pages(),
            inherit: true,
            duration: None,
        }
    }
}

/// perf's default ring size, 512 KiB of data, in pages of this machine (at least 1).
pub fn default_data_pages() -> usize {
    let pages = (512 * 1024 / sys::page_size()).max(1);
    if pages.is_power_of_two() {
        pages
    } else {
        pages.next_power_of_two() / 2
    }
}

/// One opened fd.
#[derive(Debug)]
struct Opened {
    fd: OwnedFd,
    /// Index of the event in the list.
    event: usize,
    /// Whether it leads its group (enabled explicitly for targets other than commands).
    leader: bool,
}

/// One ring and what it serves.
#[derive(Debug)]
struct RingSlot {
    ring: Ring,
    /// Index in `Session::fds` of the fd that owns the mapping; the ring serves it and
    /// the fds after it, up to the next ring's owner.
    owner: usize,
    /// The CPU.
    cpu: u32,
    /// Records the kernel said it dropped on this ring (`PERF_RECORD_LOST`).
    announced: u64,
}

/// An opened sampling session, ready to [`run`](Session::run).
#[derive(Debug)]
pub struct Session {
    attrs: Vec<Attr>,
    names: Vec<String>,
    fds: Vec<Opened>,
    ids: Vec<Vec<u64>>,
    rings: Vec<RingSlot>,
    workload: Option<Workload>,
    argv0: String,
    target: Target,
    opts: SessionOptions,
    notices: Vec<String>,
    /// Events opened beside the session's ([`Session::open_anchor`]), closed with them.
    anchors: Vec<OwnedFd>,
    /// The uprobe definitions the fds use. Last field: dropped after `fds` and `rings`
    /// (a definition cannot be deleted while an event or a ring mapping uses it).
    probes: Option<Probes>,
}

/// The ring settings every attr gets: a byte watermark of an eighth of the ring (earlier
/// wakeups than a quarter halved the samples lost at 100 kHz with 2 busy threads on 2 CPUs).
fn ring_attr(attr: &Attr, data_size: usize) -> Attr {
    let mut a = attr.clone();
    a.watermark = true;
    a.wakeup_events = u32::try_from((data_size / 8).max(8)).unwrap_or(u32::MAX);
    a
}

/// The threads of process `pid` (from `/proc/PID/task`).
fn threads_of(pid: i32) -> Result<Vec<i32>> {
    hwprof_pmu::target::threads_of(pid).map_err(|e| {
        let e = if e.kind() == std::io::ErrorKind::NotFound {
            std::io::Error::from_raw_os_error(libc::ESRCH)
        } else {
            e
        };
        Error::io(
            format!("listing the threads of process {pid} (/proc/{pid}/task)"),
            e,
        )
    })
}

/// A command that could not run, as the PMU layer says it for `stat`
/// ([`hwprof_pmu::Error::Exec`]: not found, not executable; or
/// [`hwprof_pmu::Error::Start`]), so that every command gives it the same exit code.
fn exec_error(program: &str, e: ExecError) -> Error {
    let program = program.to_string();
    Error::Pmu(match e {
        ExecError::Exec(source) => hwprof_pmu::Error::Exec { program, source },
        ExecError::Setup(source) => hwprof_pmu::Error::Start { program, source },
    })
}

impl Session {
    /// Opens every event of `events` on `target` (see the module docs for the layout)
    /// and maps one ring per CPU. For a command, the child is forked and held before
    /// `exec` until [`Session::run`].
    ///
    /// Errors keep the kernel's errno ([`Error::raw_os_error`]): opening an event gives
    /// `Error::Pmu(hwprof_pmu::Error::Open { .. })` with the event name and a hint;
    /// mapping a ring gives `Error::Io`.
    pub fn open(events: &EventList, target: Target, opts: SessionOptions) -> Result<Session> {
        let page = sys::page_size();
        if opts.data_pages == 0 || !opts.data_pages.is_power_of_two() {
            return Err(Error::io(
                format!(
                    "ring of {} data pages: the kernel needs a power of two",
                    opts.data_pages
                ),
                std::io::Error::from_raw_os_error(libc::EINVAL),
            ));
        }
        if events.events.is_empty() {
            return Err(Error::Unsupported("no events to record".into()));
        }
        let data_size = opts.data_pages.saturating_mul(page);
        let system_wide = target.is_system_wide();
        let mut list = events.clone();
        for e in &mut list.events {
            e.attr.inherit = opts.inherit && !system_wide;
        }
        let installed = uprobe_events::install(&mut list, !system_wide);
        let attrs: Vec<Attr> = list
            .events
            .iter()
            .map(|e| ring_attr(&e.attr, data_size))
            .collect();
        let names: Vec<String> = events.events.iter().map(|e| e.name.clone()).collect();
        // From here on, every early return drops the definitions after what uses them:
        // nothing is opened before `s` owns them.

        let mut workload = None;
        let mut argv0 = String::new();
        if let Some(argv) = target.argv() {
            argv0 = argv.first().cloned().unwrap_or_default();
            let w = Workload::prepare(argv).map_err(|e| exec_error(&argv0, e))?;
            workload = Some(w);
        }
        let (cpus, tasks): (Vec<u32>, Vec<i32>) = match target.attached() {
            None => (
                hwprof_pmu::sysfs::online_cpus(),
                workload.iter().map(Workload::pid).collect(),
            ),
            Some(Target::Pids(pids)) => {
                let mut tids = Vec::new();
                for &p in pids {
                    tids.extend(threads_of(p)?);
                }
                (hwprof_pmu::sysfs::online_cpus(), tids)
            }
            Some(Target::Tids(tids)) => (hwprof_pmu::sysfs::online_cpus(), tids.clone()),
            Some(t) => (t.cpus().unwrap_or_default(), vec![-1]),
        };
        if tasks.is_empty() || cpus.is_empty() {
            return Err(Error::Unsupported(
                "nothing to record: no threads or CPUs".into(),
            ));
        }

        let mut s = Session {
            ids: vec![Vec::new(); attrs.len()],
            attrs,
            names,
            fds: Vec::new(),
            anchors: Vec::new(),
            rings: Vec::new(),
            workload,
            argv0,
            target,
            opts,
            notices: installed.notice.into_iter().collect(),
            probes: installed.probes,
        };
        let groups = events.groups();
        let many_tasks = tasks.len() > 1;
        for &cpu in &cpus {
            let ring_owner_before = s.fds.len();
            let mut any_on_cpu = false;
            for &tid in &tasks {
                match s.open_task(&groups, tid, cpu) {
                    Ok(()) => any_on_cpu = true,
                    // A thread of a -p process that exited since we listed it.
                    Err(e) if many_tasks && e.raw_os_error() == Some(libc::ESRCH) => {}
                    Err(e) => return Err(e),
                }
            }
            if !any_on_cpu {
                let e = std::io::Error::from_raw_os_error(libc::ESRCH);
                let name = s.names.first().cloned().unwrap_or_default();
                return Err(Error::Pmu(hwprof_pmu::Error::Open {
                    hint: open_hint(
                        libc::ESRCH,
                        &name,
                        Slot {
                            pid: tasks.first().copied().unwrap_or(-1),
                            cpu: cpu as i32,
                        },
                    ),
                    event: name,
                    source: e,
                }));
            }
            s.map_cpu(ring_owner_before, cpu)?;
        }
        Ok(s)
    }

    /// Opens every event (group by group) for one task on one CPU.
    fn open_task(&mut self, groups: &[std::ops::Range<usize>], tid: i32, cpu: u32) -> Result<()> {
        let first = self.fds.len();
        for g in groups {
            let mut leader_fd = None;
            for i in g.clone() {
                let attr = self.attrs.get(i).ok_or_else(|| {
                    Error::Unsupported(format!("event {i} is outside the event list"))
                })?;
                let res = sys::perf_event_open(attr, tid, cpu as i32, leader_fd);
                let fd = match res {
                    Ok(fd) => fd,
                    Err(e) => {
                        // Close what this task opened so far (members before leaders).
                        while self.fds.len() > first {
                            self.fds.pop();
                        }
                        let errno = e.raw_os_error().unwrap_or(0);
                        let name = self.names.get(i).cloned().unwrap_or_default();
                        let slot = Slot {
                            pid: tid,
                            cpu: cpu as i32,
                        };
                        return Err(Error::Pmu(hwprof_pmu::Error::Open {
                            hint: open_hint(errno, &name, slot),
                            event: name,
                            source: e,
                        }));
                    }
                };
                if i == g.start {
                    leader_fd = Some(fd.as_raw_fd());
                }
                self.fds.push(Opened {
                    fd,
                    event: i,
                    leader: i == g.start,
                });
            }
        }
        for o in &self.fds[first..] {
            let id = sys::event_id(&o.fd).map_err(|e| Error::io("reading an event id", e))?;
            if let Some(v) = self.ids.get_mut(o.event) {
                v.push(id);
            }
        }
        Ok(())
    }

    /// Maps the ring of CPU `cpu` on its first fd (index `owner`) and redirects the
    /// CPU's other fds into it.
    fn map_cpu(&mut self, owner: usize, cpu: u32) -> Result<()> {
        let Some(first) = self.fds.get(owner) else {
            return Ok(());
        };
        let ring = Ring::new(&first.fd, self.opts.data_pages).map_err(|e| {
            let hint = if matches!(e.raw_os_error(), Some(libc::EPERM | libc::ENOMEM)) {
                " (over the locked-memory limit? see /proc/sys/kernel/perf_event_mlock_kb and `ulimit -l`; try fewer --mmap-pages)"
            } else {
                ""
            };
            Error::io(
                format!(
                    "mapping a ring of {} data pages on CPU {cpu}{hint}",
                    self.opts.data_pages
                ),
                e,
            )
        })?;
        let (owner_fd, rest) = match self.fds.get(owner..) {
            Some([o, rest @ ..]) => (o, rest),
            _ => return Ok(()),
        };
        for o in rest {
            sys::set_output(&o.fd, &owner_fd.fd).map_err(|e| {
                Error::io(
                    format!(
                        "redirecting '{}' into the ring of CPU {cpu} (PERF_EVENT_IOC_SET_OUTPUT)",
                        self.names.get(o.event).map_or("?", |s| s.as_str())
                    ),
                    e,
                )
            })?;
        }
        self.rings.push(RingSlot {
            ring,
            owner,
            cpu,
            announced: 0,
        });
        Ok(())
    }

    /// The attrs as opened (with the ring's watermark settings and `inherit`), one per
    /// event, in the event list's order.
    pub fn attrs(&self) -> Vec<Attr> {
        self.attrs.clone()
    }

    /// The kernel sample ids (`PERF_EVENT_IOC_ID`) of every fd of each event, in the
    /// event list's order.
    pub fn ids(&self) -> Vec<Vec<u64>> {
        self.ids.clone()
    }

    /// The child's pid for [`Target::Command`] and [`Target::During`].
    pub fn child_pid(&self) -> Option<i32> {
        self.workload.as_ref().map(Workload::pid)
    }

    /// Opens one more event like event `index` (its type and config), disabled for
    /// good, sampling nothing and not inherited, on the target's first task (the held
    /// command, or the first `-p` process), and holds it with the session's events
    /// (closed with them, before the uprobe definitions go): the fd a BPF program
    /// attaches to, to run on every hit of a uprobe's trace event in the processes the
    /// session's events follow.
    ///
    /// Not one of the session's own fds: the kernel gives every inherited copy of an
    /// event its parent's BPF program, and the first copy freed (a child or thread of
    /// the target that exits) takes the program off the trace event for everyone
    /// (`perf_event_free_bpf_prog` on the copy); an event nothing inherits keeps it.
    pub fn open_anchor(&mut self, index: usize) -> Result<BorrowedFd<'_>> {
        let Some(like) = self.attrs.get(index) else {
            return Err(Error::io(
                "opening an anchor event",
                std::io::Error::from_raw_os_error(libc::EINVAL),
            ));
        };
        let mut attr = Attr::new(like.type_, like.config);
        attr.config1 = like.config1;
        attr.config2 = like.config2;
        attr.uprobe_path = like.uprobe_path.clone();
        attr.disabled = true;
        attr.sample_period = 1;
        let (pid, cpu) = match (self.child_pid(), &self.target) {
            (Some(p), _) => (p, -1),
            (None, Target::Pids(p) | Target::Tids(p)) => (p.first().copied().unwrap_or(-1), -1),
            _ => (-1, 0),
        };
        let name = self.names.get(index).cloned().unwrap_or_default();
        let fd = sys::perf_event_open(&attr, pid, cpu, None)
            .map_err(|e| Error::io(format!("opening an anchor event for {name}"), e))?;
        self.anchors.push(fd);
        let held = self.anchors.last().map(|f| f.as_fd());
        held.ok_or_else(|| Error::io("opening an anchor event", std::io::Error::other("lost")))
    }

    /// The CPUs that have a ring, in ring order.
    pub fn ring_cpus(&self) -> Vec<u32> {
        self.rings.iter().map(|r| r.cpu).collect()
    }

    /// The number of perf fds opened.
    pub fn fd_count(&self) -> usize {
        self.fds.len()
    }

    /// The target.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Notices to print once (uprobes opened without inheritance, and why).
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// The uprobe definitions of this session, when it opened uprobes as tracepoints on
    /// them: their formats belong in `HEADER_TRACING_DATA` (read them before
    /// [`Session::run`], which removes the definitions at its end).
    pub fn uprobe_definitions(&self) -> Option<&Probes> {
        self.probes.as_ref()
    }
}
