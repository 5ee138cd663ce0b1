//! Counting: open an [`EventList`] on a target, enable, read, and scale.
//!
//! Every event is opened with `read_format = GROUP | ID | TOTAL_TIME_ENABLED |
//! TOTAL_TIME_RUNNING` (a lone event is a group of one), so one `read` per group leader
//! returns every member's value with the group's enabled and running times. When the
//! kernel multiplexes, `running < enabled` and the estimate is
//! `raw * enabled / running` ([`Count::scaled`]); the raw value stays available.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use serde::Serialize;

use crate::attr::read_format as rf;
use crate::error::{Error, Result};
use crate::event::{Class, EventList};
use crate::sys;
use crate::uprobe_events;

/// One counter value as the kernel returned it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Count {
    /// The count (for `task-clock`/`cpu-clock`, nanoseconds).
    pub raw: u64,
    /// `time_enabled`, ns.
    pub enabled: u64,
    /// `time_running`, ns.
    pub running: u64,
}

impl Count {
    /// The value scaled for multiplexing: `raw * enabled / running`. `None` when the
    /// event never ran (perf's `<not counted>`).
    pub fn scaled(&self) -> Option<f64> {
        if self.running == 0 {
            return if self.enabled == 0 && self.raw > 0 {
                Some(self.raw as f64)
            } else {
                None
            };
        }
        if self.running >= self.enabled {
            return Some(self.raw as f64);
        }
        Some(self.raw as f64 * self.enabled as f64 / self.running as f64)
    }

    /// Whether [`Count::scaled`] is an estimate (the event was multiplexed).
    pub fn is_scaled(&self) -> bool {
        self.running > 0 && self.running < self.enabled
    }

    /// Percentage of enabled time the event was running (100 when it always ran).
    pub fn pct_running(&self) -> f64 {
        if self.enabled == 0 {
            100.0
        } else {
            (self.running as f64 * 100.0 / self.enabled as f64).min(100.0)
        }
    }

    /// The sum of two counts (values and times), as perf aggregates CPUs and threads.
    pub fn sum(self, o: Count) -> Count {
        Count {
            raw: self.raw + o.raw,
            enabled: self.enabled + o.enabled,
            running: self.running + o.running,
        }
    }

    /// `self - earlier`, for interval deltas.
    pub fn delta(self, earlier: Count) -> Count {
        Count {
            raw: self.raw.saturating_sub(earlier.raw),
            enabled: self.enabled.saturating_sub(earlier.enabled),
            running: self.running.saturating_sub(earlier.running),
        }
    }
}

/// What happened to an event when it was opened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "reason")]
pub enum Status {
    /// Opened and counting.
    Counting,
    /// The kernel or PMU does not support it here (perf's `<not supported>`).
    NotSupported(String),
}

/// Where to attach: one `(pid, cpu)` pair as perf_event_open takes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Slot {
    /// Task id, or -1 for all tasks on `cpu`.
    pub pid: i32,
    /// CPU number, or -1 to follow the task.
    pub cpu: i32,
}

/// How to program counting attrs.
#[derive(Clone, Copy, Debug)]
pub struct CountOptions {
    /// Children inherit counters (perf stat's default; `--no-inherit` clears it).
    pub inherit: bool,
    /// Start counting at the target's `exec` (for a command hwprof starts).
    pub enable_on_exec: bool,
}

impl Default for CountOptions {
    fn default() -> Self {
        CountOptions {
            inherit: true,
            enable_on_exec: false,
        }
    }
}

/// Sets the counting fields of every attr: read format, disabled leaders, inherit,
/// enable_on_exec. This is what `hwprof stat` passes and what `hwprof encode` prints.
pub fn prepare(list: &mut EventList, opts: CountOptions) {
    for (i, e) in list.events.iter_mut().enumerate() {
        let leader = e.leader == i;
        let a = &mut e.attr;
        a.read_format = rf::GROUP | rf::ID | rf::TOTAL_TIME_ENABLED | rf::TOTAL_TIME_RUNNING;
        a.disabled = leader;
        a.enable_on_exec = leader && opts.enable_on_exec;
        a.inherit = opts.inherit;
    }
}

/// An opened set of events on one or more slots.
///
/// Uprobes that must be inherited (on task slots, with `inherit`) are opened as
/// tracepoints on `uprobe_events` definitions ([`crate::uprobe_events`]), which are
/// removed when the counter is dropped.
#[derive(Debug)]
pub struct Counter {
    events: EventList,
    slots: Vec<Slot>,
    /// `fds[slot][event]`.
    fds: Vec<Vec<Option<OwnedFd>>>,
    ids: Vec<Vec<u64>>,
    status: Vec<Status>,
    notices: Vec<String>,
    /// The uprobe definitions the fds use. Last field: dropped after `fds` (a
    /// definition cannot be deleted while an event uses it).
    _probes: Option<uprobe_events::Probes>,
}

/// Counts read from every slot: `values[slot][event]` (`None` when not opened there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Readings {
    /// Per slot, per event.
    pub values: Vec<Vec<Option<Count>>>,
}

impl Readings {
    /// Per event, summed over slots (perf's aggregation: sum values and times).
    pub fn total(&self, n_events: usize) -> Vec<Option<Count>> {
        let mut out = vec![None; n_events];
        for slot in &self.values {
            for (i, v) in slot.iter().enumerate() {
                if let Some(v) = v {
                    out[i] = Some(out[i].map_or(*v, |c: Count| c.sum(*v)));
                }
            }
        }
        out
    }

    /// `self - earlier` for every value.
    pub fn delta(&self, earlier: &Readings) -> Readings {
        let values = self
            .values
            .iter()
            .zip(&earlier.values)
            .map(|(a, b)| {
                a.iter()
                    .zip(b)
                    .map(|(x, y)| x.map(|x| y.map_or(x, |y| x.delta(y))))
                    .collect()
            })
            .collect();
        Readings { values }
    }
}

fn is_unsupported(errno: i32, class: Class) -> bool {
    match errno {
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV | libc::ENXIO => true,
        libc::EINVAL => class == Class::Core,
        _ => false,
    }
}

/// Whether the kernel accepts `attr` for the calling thread: opened disabled (user space
/// only unless root, as an unprivileged `perf list` would count it) and closed at once.
/// What `hwprof list` marks as supported.
pub fn accepts(attr: &crate::attr::Attr) -> bool {
    let mut a = attr.clone();
    a.disabled = true;
    a.exclude_kernel = sys::euid() != 0;
    a.exclude_hv = a.exclude_kernel;
    sys::perf_event_open(&a, 0, -1, None).is_ok()
}

/// Explains an errno from perf_event_open for `event` in one line with what to do.
pub fn open_hint(errno: i32, event: &str, slot: Slot) -> String {
    // The suggestion `NAME:u` replaces modifiers the user wrote (`cpu-clock:k`), never a
    // tracepoint's name (`sched:sched_switch`).
    let event = match event.rsplit_once(':') {
        Some((base, m)) if !m.is_empty() && m.chars().all(|c| "ukhGHpPDIS".contains(c)) => base,
        _ => event,
    };
    let paranoid =
        crate::sysfs::paranoid().map_or_else(|| "unknown".to_string(), |p| p.to_string());
    match errno {
        // perf_event_paranoid does not apply: lowering it or adding `:u` would not help.
        libc::EACCES | libc::EPERM
            if event.starts_with("uprobe:") || event.starts_with("uretprobe:") =>
        {
            "the kernel's uprobe PMU only opens for root or CAP_PERFMON/CAP_SYS_ADMIN, whatever kernel.perf_event_paranoid says: run as root".to_string()
        }
        libc::EACCES | libc::EPERM if slot.pid == -1 => format!(
            "no permission for system-wide counting (kernel.perf_event_paranoid = {paranoid}): run as root or with CAP_PERFMON, or lower it with `sudo sysctl kernel.perf_event_paranoid=0`"
        ),
        // Another user's process: the ptrace check fails whatever the paranoid level
        // or `:u` (the kernel makes it after the paranoid one, so both give EACCES).
        libc::EACCES | libc::EPERM if slot.pid > 0 => {
            match crate::target::foreign_owner(slot.pid) {
                Some(owner) => format!(
                    "process {} belongs to {owner} and hwprof runs as uid {}: perf events on another user's process need ptrace access to it (CAP_SYS_PTRACE), whatever kernel.perf_event_paranoid says: run hwprof as root, or as that user",
                    slot.pid, owner.me
                ),
                None => format!(
                    "no permission (kernel.perf_event_paranoid = {paranoid}): count user space only with '{event}:u', run as root, or lower it with `sudo sysctl kernel.perf_event_paranoid=1`"
                ),
            }
        }
        libc::EACCES | libc::EPERM => format!(
            "no permission (kernel.perf_event_paranoid = {paranoid}): count user space only with '{event}:u', run as root, or lower it with `sudo sysctl kernel.perf_event_paranoid=1`"
        ),
        libc::EMFILE | libc::ENFILE => {
            let lim = sys::open_files_limit().map_or_else(|| "?".to_string(), |l| l.to_string());
            format!(
                "too many open files (limit {lim}): count fewer events or CPUs, or raise it with `ulimit -n 65536`"
            )
        }
        libc::ESRCH => format!("no such process {} (did it exit?)", slot.pid),
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => {
            "not supported by this kernel or PMU (no hardware PMU is exposed here, e.g. in a VM)"
                .to_string()
        }
        libc::EINVAL => {
            "invalid for this PMU (a bad config, modifier or precise level for this CPU)"
                .to_string()
        }
        libc::EBUSY => "the PMU is busy (another tool holds an exclusive counter)".to_string(),
        _ => io::Error::from_raw_os_error(errno).to_string(),
    }
}

impl Counter {
    /// Opens `events` on every slot. Unsupported events are marked, not fatal; a
    /// permission problem on an event without explicit modifiers retries it counting
    /// user space only (as perf does) and says so in [`Counter::notices`].
    pub fn open(mut events: EventList, slots: Vec<Slot>) -> Result<Counter> {
        let n = events.events.len();
        let mut status = vec![Status::Counting; n];
        let mut notices = Vec::new();
        // Declared before the fds so that, on every return, it is dropped after them.
        let per_task = slots.iter().any(|s| s.pid != -1);
        let installed = uprobe_events::install(&mut events, per_task);
        notices.extend(installed.notice);
        let probes = installed.probes;
        let mut fds: Vec<Vec<Option<OwnedFd>>> = Vec::with_capacity(slots.len());
        let mut ids = Vec::with_capacity(slots.len());
        let groups = events.groups();
        for slot in &slots {
            let mut row: Vec<Option<OwnedFd>> = (0..n).map(|_| None).collect();
            let mut idrow = vec![0u64; n];
            for g in &groups {
                for i in g.clone() {
                    if status[i] != Status::Counting {
                        continue;
                    }
                    let leader_fd = if i == g.start {
                        None
                    } else {
                        match &row[g.start] {
                            Some(fd) => Some(fd.as_raw_fd()),
                            None => {
                                status[i] = status[g.start].clone();
                                continue;
                            }
                        }
                    };
                    let ev = &mut events.events[i];
                    let mut res = sys::perf_event_open(&ev.attr, slot.pid, slot.cpu, leader_fd);
                    let denied = |r: &io::Result<OwnedFd>| matches!(r, Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)));
                    if denied(&res)
                        && !ev.explicit_mods
                        && !ev.attr.exclude_kernel
                        && slot.pid != -1
                    {
                        ev.attr.exclude_kernel = true;
                        ev.attr.exclude_hv = true;
                        res = sys::perf_event_open(&ev.attr, slot.pid, slot.cpu, leader_fd);
                        if res.is_ok() {
                            ev.name.push_str(":u");
                            let p = crate::sysfs::paranoid().unwrap_or(2);
                            let note = format!(
                                "kernel.perf_event_paranoid = {p} forbids counting the kernel: counting user space only (':u'); run as root or `sudo sysctl kernel.perf_event_paranoid=1` to include it"
                            );
                            if !notices.contains(&note) {
                                notices.push(note);
                            }
                        }
                    }
                    match res {
                        Ok(fd) => {
                            idrow[i] = sys::event_id(&fd)
                                .map_err(|e| Error::io("reading the event id", e))?;
                            row[i] = Some(fd);
                        }
                        Err(e) => {
                            let errno = e.raw_os_error().unwrap_or(0);
                            if is_unsupported(errno, ev.class) {
                                status[i] = Status::NotSupported(open_hint(errno, &ev.name, *slot));
                            } else if errno == libc::ESRCH {
                                return Err(Error::NoSuchProcess(slot.pid));
                            } else {
                                return Err(Error::Open {
                                    event: ev.name.clone(),
                                    hint: open_hint(errno, &ev.name, *slot),
                                    source: e,
                                });
                            }
                        }
                    }
                }
            }
            fds.push(row);
            ids.push(idrow);
        }
        // A slot may have opened an event that another slot found unsupported: keep the
        // status consistent by dropping those fds (members first, leaders last).
        for row in &mut fds {
            for i in (0..n).rev() {
                if status[i] != Status::Counting {
                    row[i] = None;
                }
            }
        }
        Ok(Counter {
            events,
            slots,
            fds,
            ids,
            status,
            notices,
            _probes: probes,
        })
    }

    /// The events as opened (names carry `:u` where the privilege fallback applied).
    pub fn events(&self) -> &EventList {
        &self.events
    }

    /// The slots.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// Per-event open status.
    pub fn status(&self) -> &[Status] {
        &self.status
    }

    /// Notices to print once (privilege fallback...).
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// Whether any event is counting.
    pub fn any_counting(&self) -> bool {
        self.status.contains(&Status::Counting)
    }

    fn leaders(&self) -> impl Iterator<Item = &OwnedFd> {
        let groups = self.events.groups();
        self.fds.iter().flat_map(move |row| {
            groups
                .iter()
                .filter_map(|g| row[g.start].as_ref())
                .collect::<Vec<_>>()
        })
    }

    /// Enables every group.
    pub fn enable(&self) -> Result<()> {
        for fd in self.leaders() {
            sys::ioctl(fd, sys::Ioctl::Enable, true)
                .map_err(|e| Error::io("enabling counters", e))?;
        }
        Ok(())
    }

    /// Disables every group.
    pub fn disable(&self) -> Result<()> {
        for fd in self.leaders() {
            sys::ioctl(fd, sys::Ioctl::Disable, true)
                .map_err(|e| Error::io("disabling counters", e))?;
        }
        Ok(())
    }

    /// Resets every group to zero.
    pub fn reset(&self) -> Result<()> {
        for fd in self.leaders() {
            sys::ioctl(fd, sys::Ioctl::Reset, true)
                .map_err(|e| Error::io("resetting counters", e))?;
        }
        Ok(())
    }

    /// Reads every group of every slot.
    pub fn read(&self) -> Result<Readings> {
        let groups = self.events.groups();
        let n = self.events.events.len();
        let mut values = Vec::with_capacity(self.slots.len());
        let mut buf = vec![0u8; 8 * (3 + 2 * n)];
        for (s, row) in self.fds.iter().enumerate() {
            let mut out = vec![None; n];
            for g in &groups {
                let Some(fd) = &row[g.start] else { continue };
                let got = sys::read(fd, &mut buf).map_err(|e| Error::io("reading counters", e))?;
                let parsed = parse_group_read(&buf[..got]).ok_or_else(|| {
                    Error::io("reading counters", io::ErrorKind::UnexpectedEof.into())
                })?;
                for (value, id) in parsed.values {
                    if let Some(i) = g
                        .clone()
                        .find(|&i| self.ids[s][i] == id && row[i].is_some())
                    {
                        out[i] = Some(Count {
                            raw: value,
                            enabled: parsed.enabled,
                            running: parsed.running,
                        });
                    }
                }
            }
            values.push(out);
        }
        Ok(Readings { values })
    }
}

/// A decoded `read()` of a group leader with GROUP | ID | TOTAL_TIME_ENABLED | RUNNING.
#[derive(Debug, PartialEq, Eq)]
pub struct GroupRead {
    /// time_enabled.
    pub enabled: u64,
    /// time_running.
    pub running: u64,
    /// `(value, id)` per member, leader first.
    pub values: Vec<(u64, u64)>,
}

/// Decodes the group read layout: `nr, time_enabled, time_running, {value, id} * nr`.
pub fn parse_group_read(b: &[u8]) -> Option<GroupRead> {
    let word = |i: usize| -> Option<u64> {
        Some(u64::from_ne_bytes(
            b.get(i * 8..i * 8 + 8)?.try_into().ok()?,
        ))
    };
    let nr = usize::try_from(word(0)?).ok()?;
    let (enabled, running) = (word(1)?, word(2)?);
    let mut values = Vec::with_capacity(nr.min(64));
    for k in 0..nr {
        values.push((word(3 + 2 * k)?, word(4 + 2 * k)?));
    }
    Some(GroupRead {
        enabled,
        running,
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_follows_enabled_over_running() {
        let c = Count {
            raw: 1000,
            enabled: 200,
            running: 100,
        };
        assert_eq!(c.scaled(), Some(2000.0));
        assert!(c.is_scaled());
        assert_eq!(c.pct_running(), 50.0);
        let full = Count {
            raw: 7,
            enabled: 10,
            running: 10,
        };
        assert_eq!(full.scaled(), Some(7.0));
        assert!(!full.is_scaled());
        assert_eq!(
            Count {
                raw: 0,
                enabled: 10,
                running: 0
            }
            .scaled(),
            None
        );
    }

    #[test]
    fn aggregation_sums_values_and_times_before_scaling() {
        // perf sums raw, enabled and running over CPUs, then scales once.
        let a = Count {
            raw: 100,
            enabled: 10,
            running: 5,
        };
        let b = Count {
            raw: 300,
            enabled: 10,
            running: 10,
        };
        let t = a.sum(b);
        assert_eq!(
            t,
            Count {
                raw: 400,
                enabled: 20,
                running: 15
            }
        );
        assert!((t.scaled().unwrap() - 400.0 * 20.0 / 15.0).abs() < 1e-9);
        assert_eq!(t.delta(a), b);
    }

    #[test]
    fn decodes_group_reads_and_rejects_short_ones() {
        let words: [u64; 7] = [2, 50, 40, 111, 7, 222, 8];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let g = parse_group_read(&bytes).unwrap();
        assert_eq!(
            g,
            GroupRead {
                enabled: 50,
                running: 40,
                values: vec![(111, 7), (222, 8)]
            }
        );
        assert!(parse_group_read(&bytes[..40]).is_none());
    }

    #[test]
    fn readings_total_and_delta() {
        let c = |r| {
            Some(Count {
                raw: r,
                enabled: 10,
                running: 10,
            })
        };
        let r1 = Readings {
            values: vec![vec![c(1), None], vec![c(2), c(5)]],
        };
        assert_eq!(
            r1.total(2),
            vec![
                Some(Count {
                    raw: 3,
                    enabled: 20,
                    running: 20
                }),
                c(5)
            ]
        );
        let r2 = Readings {
            values: vec![vec![c(4), None], vec![c(6), c(9)]],
        };
        let d = r2.delta(&r1);
        assert_eq!(
            d.values[1][1],
            Some(Count {
                raw: 4,
                enabled: 0,
                running: 0
            })
        );
    }
}
