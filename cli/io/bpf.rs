//! `hwprof io` on the BPF engine (`hwprof_bpf::io`): the calls are paired and summed
//! per thread, stack and file in the kernel, with HdrHistogram buckets per file and
//! syscall; the fd table's changes (and with `--threshold` each slow call) come through
//! a BPF ring buffer drained on a thread of its own into the process model's
//! [`FdTables`]. The recording around it keeps what the stacks need to be named (the
//! side-band records of a `dummy` event), and the sums are written at its end as
//! samples of an `io-time` event (period: ns; weight: calls; callchain: the user stack;
//! time: [`LABELLED_TIME`] with the index of their syscall and file), as offcpu's
//! BPF engine writes its `offcpu-time`.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use hwprof_analysis::io::{IO_TIME, LABELLED_TIME, Labels, Table};
use hwprof_bpf::io::{Io, IoDropped, IoEvent, IoOptions, SlowIo};
use hwprof_bpf::latency::hdr_value;
use hwprof_pmu::attr::Attr;
use hwprof_sampler::recorder::{EXTRA_ID, Extra};
use hwprof_sampler::synth::{MadeSample, sample_record};
use hwprof_symbolize::process::fds::{AT_FDCWD, FdTables, inode_name, resolve};

/// Slow calls kept for the report's list at most; the others are counted.
const MAX_SLOW: usize = 100_000;

/// The syscall programs as an [`Extra`] source of the recording.
pub struct Traced {
    io: Option<Io>,
    command: bool,
    fds: Arc<Mutex<FdTables>>,
    stop: Arc<AtomicBool>,
    drain: Option<JoinHandle<(Vec<SlowIo>, u64)>>,
    threshold: bool,
    /// The (syscall, file) of each sample written.
    pub labels: Labels,
    /// The tables of `--report`.
    pub table: Table,
    /// With `--threshold`: each slow call (its syscall, file, ns, thread, result).
    pub slow: Vec<(String, String, u64, u32, i64)>,
    /// Slow calls not kept in [`Traced::slow`] ([`MAX_SLOW`]).
    pub slow_dropped: u64,
    /// What did not fit the kernel's maps.
    pub dropped: IoDropped,
    /// Names the process model could not keep.
    pub names_dropped: u64,
    /// Said on stderr as an attached process's tracing begins
    /// ([`crate::sampling::announce`]).
    pub announce: Option<String>,
}

impl Traced {
    /// Names the fds the `pids` have open now (generation 0), loads and attaches the
    /// programs and starts draining their ring (before anything starts: a failure
    /// leaves the perf-event path to run instead).
    pub fn start(o: &IoOptions, command: bool) -> Result<Traced, hwprof_bpf::Error> {
        let mut fds = FdTables::new();
        for &p in &o.tgids {
            fds.snapshot(p, &Path::new("/proc").join(p.to_string()).join("fd"));
        }
        let mut io = Io::start(o)?;
        let ring = io.ring()?;
        let fds = Arc::new(Mutex::new(fds));
        let stop = Arc::new(AtomicBool::new(false));
        let drain = {
            let (fds, stop) = (Arc::clone(&fds), Arc::clone(&stop));
            std::thread::spawn(move || drain(ring, &fds, &stop))
        };
        Ok(Traced {
            io: Some(io),
            command,
            fds,
            stop,
            drain: Some(drain),
            threshold: o.slow_events,
            labels: Labels::new(),
            table: Table::default(),
            slow: Vec::new(),
            slow_dropped: 0,
            dropped: IoDropped::default(),
            names_dropped: 0,
            announce: None,
        })
    }

    fn fds(&self) -> std::sync::MutexGuard<'_, FdTables> {
        self.fds.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Drains the ring until `stop`, then once more: the fd table's changes into `fds`,
/// the slow calls into the list (at most [`MAX_SLOW`], the others counted).
fn drain(
    mut ring: hwprof_bpf::Ring,
    fds: &Mutex<FdTables>,
    stop: &AtomicBool,
) -> (Vec<SlowIo>, u64) {
    let mut slow = Vec::new();
    let mut over = 0u64;
    loop {
        let last = stop.load(Ordering::Relaxed);
        let mut t = fds.lock().unwrap_or_else(PoisonError::into_inner);
        ring.drain(|b| match IoEvent::from_bytes(b) {
            Some(IoEvent::Slow(s)) if slow.len() < MAX_SLOW => slow.push(s),
            Some(IoEvent::Slow(_)) => over += 1,
            Some(e) => apply(&mut t, e),
            None => {}
        });
        drop(t);
        if last {
            return (slow, over);
        }
        // The ring wakes its fd on every record; a tick bounds how late a stop is seen.
        let _ = ring.wait(Duration::from_millis(50));
    }
}

/// One change of the fd table.
fn apply(t: &mut FdTables, e: IoEvent) {
    match e {
        IoEvent::Open {
            tgid,
            fd,
            generation,
            dirfd,
            dir_gen,
            path,
            ino,
            mode,
        } => {
            let path = String::from_utf8_lossy(&path);
            let name = if path.is_empty() {
                inode_name(mode, ino).unwrap_or_else(|| format!("inode:[{ino}]"))
            } else if dirfd == AT_FDCWD {
                // The working directory now: a chdir since is rare, and then the path
                // is named against the new one.
                let cwd = std::fs::read_link(format!("/proc/{tgid}/cwd")).ok();
                resolve(cwd.as_deref().and_then(Path::to_str), &path)
            } else {
                let base = t.name(tgid, dirfd, dir_gen).map(|n| n.to_string());
                resolve(base.as_deref(), &path)
            };
            t.set(tgid, fd, generation, &name);
        }
        IoEvent::New {
            tgid,
            fd,
            generation,
            src,
            src_gen,
            ino,
            mode,
        } => {
            if src >= 0 && t.dup(tgid, fd, generation, src, src_gen) {
                return;
            }
            let name = inode_name(mode, ino).unwrap_or_else(|| format!("inode:[{ino}]"));
            t.set(tgid, fd, generation, &name);
        }
        IoEvent::Close { tgid, fd } => t.close(tgid, fd),
        IoEvent::Fork { parent, child } => t.fork(parent, child),
        IoEvent::Slow(_) => {}
    }
}

/// The name of a syscall by number.
pub fn syscall_name(nr: u32) -> String {
    hwprof_bpf::io::syscall(nr).map_or_else(|| format!("syscall_{nr}"), |s| s.name.to_string())
}

/// The file of a call on `fd` (its generation `generation`) of `tgid`.
fn file_name(t: &FdTables, tgid: u32, fd: i32, generation: u32) -> String {
    match t.name(tgid, fd, generation) {
        Some(n) => n.to_string(),
        None if fd < 0 => "[no fd]".to_string(),
        None => format!("fd {fd}"),
    }
}

/// A sample to write: process, thread, syscall, fd, generation, user stack, ns, calls.
type Drawn<'a> = (u32, u32, u32, i32, u32, &'a [u64], u64, u64);

impl Extra for Traced {
    fn name(&self) -> String {
        IO_TIME.to_string()
    }

    fn start(&mut self, child: Option<i32>) -> io::Result<()> {
        // A command target is traced from its exec; its fds then are the ones it had
        // before (those it inherits from hwprof). A command that only bounds the time
        // of an attach (`-p PID -- sleep 5`) is not traced.
        if self.command
            && let Some(pid) = child.and_then(|c| u32::try_from(c).ok())
        {
            self.fds()
                .snapshot(pid, &Path::new("/proc").join(pid.to_string()).join("fd"));
            let io = self
                .io
                .as_mut()
                .ok_or_else(|| io::Error::other("the syscall programs are gone"))?;
            io.add_tgid(pid, true).map_err(io::Error::other)?;
        }
        // The programs run since `Traced::start`: an attached process is traced.
        if let Some(a) = &self.announce {
            eprintln!("{a}");
        }
        Ok(())
    }

    fn finish(
        &mut self,
        attr: &Attr,
        write: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        let Some(io) = self.io.take() else {
            return Ok(());
        };
        self.stop.store(true, Ordering::Relaxed);
        let (slow, over) = match self.drain.take().map(JoinHandle::join) {
            Some(Ok(s)) => s,
            _ => {
                return Err(io::Error::other(
                    "the thread draining the BPF ring buffer failed",
                ));
            }
        };
        self.slow_dropped = over;
        let data = io.finish(slow).map_err(io::Error::other)?;
        self.dropped = data.dropped;
        let fds = Arc::clone(&self.fds);
        let t = fds.lock().unwrap_or_else(PoisonError::into_inner);
        self.names_dropped = t.dropped();
        for s in &data.sums {
            let (sc, file) = (
                syscall_name(s.nr),
                file_name(&t, s.tgid, s.fd, s.generation),
            );
            self.table.add(&sc, &file, s.count, s.bytes, s.errors, s.ns);
        }
        for h in &data.hdr {
            let (sc, file) = (
                syscall_name(h.nr),
                file_name(&t, h.tgid, h.fd, h.generation),
            );
            self.table
                .durations(&sc, &file, hdr_value(h.index), h.count);
        }
        // The samples: each slow call with --threshold, else each sum.
        let mut samples: Vec<Drawn<'_>> = Vec::new();
        if self.threshold {
            for s in &data.slow {
                samples.push((s.tgid, s.tid, s.nr, s.fd, s.generation, &s.user, s.ns, 1));
                self.slow.push((
                    syscall_name(s.nr),
                    file_name(&t, s.tgid, s.fd, s.generation),
                    s.ns,
                    s.tid,
                    s.ret,
                ));
            }
        } else {
            for s in &data.sums {
                samples.push((
                    s.tgid,
                    s.tid,
                    s.nr,
                    s.fd,
                    s.generation,
                    &s.user,
                    s.ns,
                    s.count,
                ));
            }
        }
        let mut chain: Vec<u64> = Vec::new();
        for (tgid, tid, nr, fd, generation, user, ns, count) in samples {
            let label = self
                .labels
                .intern(&syscall_name(nr), &file_name(&t, tgid, fd, generation));
            chain.clear();
            if !user.is_empty() {
                chain.push(hwprof_sampler::record::context::USER);
                chain.extend(user);
            }
            let s = MadeSample {
                id: EXTRA_ID,
                kernel: false,
                ip: user.first().copied().unwrap_or(0),
                pid: tgid,
                tid,
                time: LABELLED_TIME | u64::from(label),
                cpu: 0,
                period: ns,
                weight: count,
                callchain: &chain,
            };
            if let Some(rec) = sample_record(attr, &s) {
                write(&rec)?;
            }
        }
        Ok(())
    }
}
