//! The drain loop of a [`Session`]: start the target, drain the rings on one thread
//! until the target is done, stop, drain what is left.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use hwprof_pmu::stop::Stop;
use hwprof_pmu::sys::{self, Epoll, ExitInfo, Ioctl};

use super::{Session, Target};
use crate::error::{Error, Result};
use crate::ring::Drained;

/// How often the drain thread wakes without a watermark wakeup: drains stragglers and
/// checks the stop conditions.
const TICK: Duration = Duration::from_millis(100);
/// How long a command gets to exit by itself after SIGINT before it is sent SIGTERM.
const INTERRUPT_GRACE: Duration = Duration::from_millis(500);
/// How long a command gets after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// Record types counted from the header alone.
mod rtype {
    pub const LOST: u32 = 2;
    pub const THROTTLE: u32 = 5;
    pub const SAMPLE: u32 = 9;
    pub const LOST_SAMPLES: u32 = 13;
}

/// What a [`Session::run`] saw.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunStats {
    /// Records passed to the sink.
    pub records: u64,
    /// `PERF_RECORD_SAMPLE` records.
    pub samples: u64,
    /// Sum of `PERF_RECORD_LOST.lost` (records the kernel dropped for a full ring), and
    /// the drops no such record announced, counted by the events themselves and
    /// written at the end as `PERF_RECORD_LOST_SAMPLES` ([`Session::run`]).
    pub lost: u64,
    /// Sum of `PERF_RECORD_LOST_SAMPLES.lost` (samples the kernel could not take).
    pub lost_samples: u64,
    /// `PERF_RECORD_THROTTLE` records.
    pub throttled: u64,
    /// Bytes of records passed to the sink.
    pub bytes: u64,
    /// Times a ring held an impossible record header and was skipped to its head (should
    /// stay 0).
    pub corrupt: u64,
    /// How the command ended ([`Target::Command`] and [`Target::During`] only).
    pub exit: Option<ExitInfo>,
    /// From starting the target to stopping the events.
    pub wall: Duration,
    /// When the target was started (the events enabled): with `wall`, where the
    /// recording's window lies in time (`hwprof offcpu` charges waits up to its edges).
    pub started: Option<Instant>,
}

impl RunStats {
    /// Counts one record by its header.
    fn count(&mut self, rec: &[u8]) {
        let u32_at = |o: usize| {
            rec.get(o..o + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let u64_at = |o: usize| {
            rec.get(o..o + 8).map(|b| {
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                u64::from_le_bytes(a)
            })
        };
        self.records += 1;
        self.bytes += rec.len() as u64;
        match u32_at(0) {
            Some(rtype::SAMPLE) => self.samples += 1,
            Some(rtype::LOST) => self.lost += u64_at(16).unwrap_or(0),
            Some(rtype::LOST_SAMPLES) => self.lost_samples += u64_at(8).unwrap_or(0),
            Some(rtype::THROTTLE) => self.throttled += 1,
            _ => {}
        }
    }

    fn add(&mut self, d: &Drained) {
        if d.corrupt.is_some() {
            self.corrupt += 1;
        }
    }
}

/// `PERF_RECORD_FINISHED_ROUND` (a header alone), passed to the sink after every pass
/// over the rings that passed records on, as perf record writes it: a record that a
/// later round holds was written to its ring after this pass began, so readers that put
/// records in time order (hwprof's replay, perf's ordered events) need to hold only the
/// records of the last two rounds. Not counted in [`RunStats`].
pub const FINISHED_ROUND: [u8; 8] = {
    let t = crate::record::kind::FINISHED_ROUND.to_le_bytes();
    [t[0], t[1], t[2], t[3], 0, 0, 8, 0]
};

/// An edge of a session's window (see [`Session::run_with_edges`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    /// The events are about to be enabled, or the command to `exec`.
    Start,
    /// The events were just enabled (or the command let go to its `exec`): what
    /// happens in the target from now on is seen (where a tracer says so).
    Enabled,
    /// The events were just disabled (a command has ended, or was ended).
    End,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    TargetDone,
    Interrupted,
    Duration,
}

/// Token of the target's pidfds in the epoll set: `PIDFD_BASE + index`.
const PIDFD_BASE: u64 = 1 << 32;
/// Token of the stop token's fd in the epoll set.
const STOP_TOKEN: u64 = u64::MAX;

impl Session {
    /// Starts the target (lets the command `exec`, or enables the events), then drains
    /// every ring on this thread into `sink` until the target is done, `stop` is
    /// stopped, or `duration` elapses (see the module docs for what happens to the
    /// target then). Finally disables the events, drains what is left and returns the
    /// counts.
    ///
    /// `sink` gets each record's bytes, header included, in per-ring order, and a
    /// [`FINISHED_ROUND`] after each pass over the rings that found records; an error
    /// from it stops the session (a command is then terminated) and is returned.
    pub fn run<F>(self, stop: &Stop, sink: F) -> Result<RunStats>
    where
        F: FnMut(&[u8]) -> std::io::Result<()>,
    {
        self.run_with_edges(stop, sink, &mut |_| {})
    }

    /// [`Session::run`], calling `edges` at the window's edges: [`Edge::Start`] just
    /// before the events are enabled (or the command let go to its `exec`, which enables
    /// them), [`Edge::Enabled`] just after, [`Edge::End`] just after they are disabled,
    /// before anything is closed.
    /// What counts beside the events (a BPF program on them, which runs whether they
    /// are enabled or not) opens and closes its own window there.
    pub fn run_with_edges<F>(
        mut self,
        stop: &Stop,
        mut sink: F,
        edges: &mut dyn FnMut(Edge),
    ) -> Result<RunStats>
    where
        F: FnMut(&[u8]) -> std::io::Result<()>,
    {
        let mut epoll = Epoll::new().map_err(|e| Error::io("epoll_create1", e))?;
        // A stop wakes the wait even when it lands just before it (the fd stays readable).
        epoll
            .add(stop.fd().as_raw_fd(), STOP_TOKEN)
            .map_err(|e| Error::io("epoll_ctl on the stop token", e))?;
        for (i, r) in self.rings.iter().enumerate() {
            if let Some(o) = self.fds.get(r.owner) {
                epoll
                    .add(o.fd.as_raw_fd(), i as u64)
                    .map_err(|e| Error::io("epoll_ctl on a ring", e))?;
            }
        }
        // What tells us the target is gone.
        let mut pidfds: Vec<Option<OwnedFd>> = Vec::new();
        match &self.target {
            Target::Command(_) | Target::During { .. } => {
                if let Some(pid) = self.child_pid() {
                    pidfds.push(Some(
                        sys::pidfd_open(pid).map_err(|e| Error::io("pidfd_open", e))?,
                    ));
                }
            }
            Target::Pids(pids) => {
                for &p in pids {
                    // ESRCH: already gone.
                    pidfds.push(sys::pidfd_open(p).ok());
                }
            }
            _ => {}
        }
        for (i, p) in pidfds.iter().enumerate() {
            if let Some(p) = p {
                epoll
                    .add(p.as_raw_fd(), PIDFD_BASE + i as u64)
                    .map_err(|e| Error::io("epoll_ctl on a pidfd", e))?;
            }
        }

        let mut stats = RunStats::default();
        let start = Instant::now();
        stats.started = Some(start);
        edges(Edge::Start);
        self.start_target()?;
        edges(Edge::Enabled);
        let deadline = self.opts.duration.map(|d| start + d);

        let mut ready: Vec<(u64, bool)> = Vec::with_capacity(self.rings.len() + pidfds.len());
        let mut hung = vec![false; self.rings.len()];
        let mut result: Result<()> = Ok(());
        let stop = loop {
            let timeout = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()).min(TICK),
                None => TICK,
            };
            let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
            if let Err(e) = epoll.wait(&mut ready, ms) {
                result = Err(Error::io("epoll_wait", e));
                break Ended::Interrupted;
            }
            for &(token, hup) in &ready {
                if token == STOP_TOKEN {
                    // Seen through `stop.is_stopped()` below.
                } else if token >= PIDFD_BASE {
                    let i = (token - PIDFD_BASE) as usize;
                    if let Some(p) = pidfds.get_mut(i).and_then(Option::take) {
                        let _ = epoll.remove(p.as_raw_fd());
                    }
                } else if hup {
                    // The ring's task is gone: drain it below, then stop watching it
                    // (a hung-up fd would wake every wait).
                    let i = token as usize;
                    if let (Some(h), Some(r)) = (hung.get_mut(i), self.rings.get(i)) {
                        if !*h {
                            *h = true;
                            if let Some(o) = self.fds.get(r.owner) {
                                let _ = epoll.remove(o.fd.as_raw_fd());
                            }
                        }
                    }
                }
            }
            if let Err(e) = self.drain_all(&mut sink, &mut stats) {
                result = Err(e);
                break Ended::Interrupted;
            }
            if stop.is_stopped() {
                break Ended::Interrupted;
            }
            if self.target_done(&pidfds) {
                break Ended::TargetDone;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break Ended::Duration;
            }
        };

        // Stop: end the command if needed, disable, drain the rest.
        if self.workload.is_some() {
            let pidfd = pidfds.first_mut().and_then(Option::take);
            match self.finish_command(stop, pidfd.as_ref()) {
                Ok(exit) => stats.exit = exit,
                Err(e) => {
                    if result.is_ok() {
                        result = Err(e);
                    }
                }
            }
        }
        for o in &self.fds {
            // A task that exited leaves its events dead: ESRCH/EINVAL here is harmless.
            let _ = sys::ioctl(&o.fd, Ioctl::Disable, false);
        }
        edges(Edge::End);
        stats.wall = start.elapsed();
        if result.is_ok() {
            // The kernel finishes writing a record before it moves data_head, and the
            // events are disabled: two passes catch anything published meanwhile.
            for _ in 0..2 {
                if let Err(e) = self.drain_all(&mut sink, &mut stats) {
                    result = Err(e);
                    break;
                }
            }
        }
        if result.is_ok() {
            result = self.write_lost_counts(&mut sink, &mut stats);
        }
        result.map(|()| stats)
    }

    /// Each ring's drops as its events counted them, for the drops no `PERF_RECORD_LOST`
    /// announced: a record dropped after the last one a ring took is announced only by
    /// the next one it takes, and after the end there is none. With `PERF_FORMAT_LOST` (Linux 6.0+) each event counts the records it
    /// could not write: read at the end, each ring's count goes into the file as one
    /// `PERF_RECORD_LOST_SAMPLES` (as `perf record` writes the counts it reads, one per
    /// fd), and what it holds beyond the ring's `PERF_RECORD_LOST`s into
    /// [`RunStats::lost`]. An inherited event's copies in other tasks count apart and
    /// the kernel does not add them up, so their drops are known from the ring's
    /// `PERF_RECORD_LOST` only: a ring's drops are at least each of the two numbers,
    /// and readers take the larger (hwprof's `Profile::lost`; perf's "Total Lost
    /// Samples" is the second).
    fn write_lost_counts<F>(&mut self, sink: &mut F, stats: &mut RunStats) -> Result<()>
    where
        F: FnMut(&[u8]) -> std::io::Result<()>,
    {
        let Some(attr) = self.attrs.first() else {
            return Ok(());
        };
        for (i, r) in self.rings.iter().enumerate() {
            let end = self.rings.get(i + 1).map_or(self.fds.len(), |n| n.owner);
            let counted: u64 = self
                .fds
                .get(r.owner..end)
                .unwrap_or(&[])
                .iter()
                .filter_map(|o| {
                    let attr = self.attrs.get(o.event)?;
                    read_lost(&o.fd, attr.read_format)
                })
                .sum();
            if counted == 0 {
                continue;
            }
            if let Some(rec) = crate::synth::lost_samples_record(attr, counted) {
                // Ring drops like those of PERF_RECORD_LOST: counted with them, once.
                stats.records += 1;
                stats.bytes += rec.len() as u64;
                stats.lost += counted.saturating_sub(r.announced);
                sink(&rec).map_err(|e| Error::io("writing records", e))?;
            }
        }
        Ok(())
    }

    /// Lets the command exec (its events start there), or enables every event and then
    /// lets the command (one that only bounds the time) exec.
    fn start_target(&mut self) -> Result<()> {
        let on_exec = self.attrs.iter().any(|a| a.enable_on_exec);
        if !on_exec {
            for o in &self.fds {
                let attr = self.attrs.get(o.event);
                if o.leader || attr.is_some_and(|a| a.disabled) {
                    sys::ioctl(&o.fd, Ioctl::Enable, false)
                        .map_err(|e| Error::io("enabling an event (PERF_EVENT_IOC_ENABLE)", e))?;
                }
            }
        }
        if let Some(w) = self.workload.as_mut() {
            if let Err(e) = w.start() {
                // The child exits (127) when it cannot exec: reap it.
                let _ = sys::wait(w.pid());
                return Err(super::exec_error(&self.argv0, e));
            }
        }
        Ok(())
    }

    /// Drains every ring that has data; when that passed records on, ends the round
    /// with a `PERF_RECORD_FINISHED_ROUND` (see [`FINISHED_ROUND`]).
    fn drain_all<F>(&mut self, sink: &mut F, stats: &mut RunStats) -> Result<()>
    where
        F: FnMut(&[u8]) -> std::io::Result<()>,
    {
        let before = stats.records;
        for r in &mut self.rings {
            while r.ring.has_data() {
                let lost = stats.lost;
                let d = r
                    .ring
                    .drain(|rec| {
                        stats.count(rec);
                        sink(rec)
                    })
                    .map_err(|e| Error::io("writing records", e))?;
                stats.add(&d);
                r.announced += stats.lost - lost;
            }
        }
        if stats.records != before {
            sink(&FINISHED_ROUND).map_err(|e| Error::io("writing records", e))?;
        }
        Ok(())
    }

    /// Whether the target has finished (commands and -p: their pidfds; -t: /proc).
    fn target_done(&self, pidfds: &[Option<OwnedFd>]) -> bool {
        match &self.target {
            Target::Command(_) | Target::During { .. } | Target::Pids(_) => {
                pidfds.iter().all(Option::is_none)
            }
            Target::Tids(tids) => tids
                .iter()
                .all(|t| !std::path::Path::new(&format!("/proc/{t}")).exists()),
            _ => false,
        }
    }

    /// Makes sure the command has ended (waiting, then SIGTERM, then SIGKILL as the
    /// stop reason requires) and reaps it.
    fn finish_command(&mut self, stop: Ended, pidfd: Option<&OwnedFd>) -> Result<Option<ExitInfo>> {
        let Some(pid) = self.child_pid() else {
            return Ok(None);
        };
        let exited = |fd: Option<&OwnedFd>, wait: Duration| match fd {
            Some(fd) => sys::poll_readable(
                &[fd.as_fd()],
                i32::try_from(wait.as_millis()).unwrap_or(i32::MAX),
            )
            .map(|r| !r.is_empty())
            .unwrap_or(false),
            None => false,
        };
        match stop {
            Ended::TargetDone => {}
            Ended::Interrupted | Ended::Duration => {
                let grace = if stop == Ended::Interrupted {
                    INTERRUPT_GRACE
                } else {
                    Duration::ZERO
                };
                if pidfd.is_some() && !exited(pidfd, grace) {
                    let _ = sys::kill(pid, libc::SIGTERM);
                    if !exited(pidfd, TERM_GRACE) {
                        let _ = sys::kill(pid, libc::SIGKILL);
                    }
                }
            }
        }
        sys::wait(pid)
            .map(Some)
            .map_err(|e| Error::io(format!("waiting for '{}'", self.argv0), e))
    }
}

/// The count of records event `fd` could not write (`PERF_FORMAT_LOST`), read from the
/// fd; `None` when its `read_format` has no such count, is a group's (a read gives
/// every member's, which their own fds give again), or the read fails (an event of a
/// task that is gone).
fn read_lost(fd: &OwnedFd, read_format: u64) -> Option<u64> {
    use hwprof_pmu::attr::read_format as rf;
    if read_format & rf::GROUP != 0 {
        return None;
    }
    // value, time enabled, time running, id, lost: at most five words.
    let mut buf = [0u8; 40];
    let n = sys::read(fd, &mut buf).ok()?;
    let values = crate::record::read_values(buf.get(..n)?, read_format).ok()?;
    values.values.first()?.lost
}
