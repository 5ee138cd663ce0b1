//! Outputs that a reader drains (a FIFO, a pipe, a terminal) under a stop token: what
//! keeps `-o FIFO` from hanging hwprof when nobody reads.
//!
//! - **Opening a FIFO** for writing blocks in `open(2)` until a reader opens it, and a
//!   signal handler installed with `SA_RESTART` (signal-hook's) does not end that wait.
//!   A writer cannot poll for a reader to appear, and `O_RDWR` would make hwprof its own
//!   reader. So [`open_fifo`] tries `O_WRONLY|O_NONBLOCK` (ENXIO: no reader yet), then
//!   waits on the stop's fd for a short, growing delay (1 ms up to 100 ms) and tries
//!   again. A reader blocked in its own `open` already counts, so `cat FIFO` started
//!   before or after hwprof both work; a stop ends the wait with [`Stopped`]. A FIFO
//!   opened after the stop (the graphs `flamegraph --all` draws once Ctrl-C ended the
//!   recording) waits until the next stop: the first one ended the target, not this.
//! - **Writing** ([`Gate`]): a full pipe whose reader stalls blocks `write(2)` the same
//!   way. A FIFO or device hwprof opened keeps `O_NONBLOCK` (the open file description
//!   is its own), and a full pipe means waiting for room or the stop. A stream hwprof
//!   did not open (stdout: its description is shared with the shell, so its flags are
//!   never changed) is written in pieces of at most `PIPE_BUF` bytes once `poll` says
//!   there is room, which a pipe then takes without blocking. After the stop, the
//!   reader still gets [`GRACE`] without taking anything before the write gives up
//!   (the last records of a recording stopped by Ctrl-C reach a slow reader whole), and
//!   a second signal gives up at once.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::path::Path;
use std::time::{Duration, Instant};

use hwprof_pmu::stop::Stop;
use rustix::event::{PollFd, PollFlags, Timespec, poll};

/// How long, after a stop, a write waits for a reader that takes nothing.
pub const GRACE: Duration = Duration::from_secs(5);
/// The longest pause between two attempts to open a FIFO without a reader.
const RETRY_MAX: Duration = Duration::from_millis(100);
/// A write into a pipe of at most this many bytes does not block once `poll` says
/// there is room (Linux's `PIPE_BUF`).
const PIPE_BUF: usize = 4096;

/// hwprof was stopped (SIGINT, SIGTERM) while an output's reader was missing or not
/// reading: the open or the write was given up. Carried inside an [`io::Error`] (see
/// [`Stopped::find`]).
#[derive(Debug, thiserror::Error)]
#[error("{what}")]
pub struct Stopped {
    /// The signal that stopped hwprof, when known (exit code 128 + it).
    pub signal: Option<i32>,
    what: String,
}

impl Stopped {
    fn new(stop: &Stop, what: impl Into<String>) -> Stopped {
        Stopped {
            signal: stop.signal(),
            what: what.into(),
        }
    }

    /// The [`Stopped`] inside `e`, if it is one.
    pub fn find(e: &io::Error) -> Option<&Stopped> {
        e.get_ref()
            .and_then(|inner| inner.downcast_ref::<Stopped>())
    }
}

/// Opens the FIFO `path` for writing once it has a reader (see the module docs),
/// calling `waiting` once when there is none yet. ENXIO ends in an error only through
/// the stop (when `stop` was already stopped, through a later one); other errors are
/// returned as they are.
pub fn open_fifo(path: &Path, stop: &Stop, waiting: &mut dyn FnMut(&Path)) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut pause = Duration::from_millis(1);
    let mut told = false;
    // Stopped already: the stops counted so far are not this wait's.
    let before = stop.is_stopped().then(|| stop.times());
    let stopped = || match before {
        None => stop.is_stopped(),
        Some(n) => stop.times() > n,
    };
    loop {
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
            .open(path);
        match opened {
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {}
            other => return other,
        }
        if stopped() {
            return Err(io::Error::other(Stopped::new(
                stop,
                "stopped while waiting for a reader",
            )));
        }
        if !told {
            waiting(path);
            told = true;
        }
        // The stop's fd stays readable once stopped: after a stop, only the pause (a
        // signal cuts it short with EINTR).
        let mut fds = [PollFd::from_borrowed_fd(stop.fd(), PollFlags::IN)];
        let fds = if before.is_some() {
            &mut fds[..0]
        } else {
            &mut fds[..]
        };
        // EINTR (the signal itself): the loop looks at the flag again.
        let _ = poll(fds, Some(&timespec(pause)));
        pause = (pause * 2).min(RETRY_MAX);
    }
}

fn timespec(d: Duration) -> Timespec {
    Timespec::try_from(d).unwrap_or(Timespec {
        tv_sec: 1,
        tv_nsec: 0,
    })
}

/// The stop-aware writes of one output (see the module docs).
#[derive(Debug)]
pub struct Gate {
    stop: Stop,
    /// The descriptor is `O_NONBLOCK` (ours); otherwise writes are cut to `PIPE_BUF`
    /// after `poll` said there is room.
    nonblocking: bool,
    /// Given up: every later write fails at once (a `BufWriter` flushing on drop).
    abandoned: bool,
}

impl Gate {
    /// A gate for a descriptor opened with `O_NONBLOCK` by hwprof (`nonblocking`), or a
    /// blocking stream (a pipe on stdout).
    pub fn new(stop: &Stop, nonblocking: bool) -> io::Result<Gate> {
        Ok(Gate {
            stop: stop.try_clone()?,
            nonblocking,
            abandoned: false,
        })
    }

    fn given_up(&self) -> io::Error {
        io::Error::other(Stopped::new(
            &self.stop,
            "stopped while the reader was not reading: the output is incomplete",
        ))
    }

    /// Writes some of `buf` into `file`, waiting for room as long as the stop allows.
    pub fn write(&mut self, file: &mut File, buf: &[u8]) -> io::Result<usize> {
        if self.abandoned {
            return Err(self.given_up());
        }
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.nonblocking {
                match file.write(buf) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    other => return other,
                }
            }
            self.wait_for_room(file)?;
            if !self.nonblocking {
                return file.write(&buf[..buf.len().min(PIPE_BUF)]);
            }
        }
    }

    /// Returns once `file` takes bytes (or has an error for `write` to report); fails
    /// once the stop, then [`GRACE`] without room or a second stop, says to give up.
    fn wait_for_room(&mut self, file: &File) -> io::Result<()> {
        let out = file.as_fd();
        while !self.stop.is_stopped() {
            let mut fds = [
                PollFd::from_borrowed_fd(out, PollFlags::OUT),
                PollFd::from_borrowed_fd(self.stop.fd(), PollFlags::IN),
            ];
            match poll(&mut fds, None) {
                Ok(_) if !fds[0].revents().is_empty() => return Ok(()),
                // The stop's fd without its flag: a waker alone; stopped all the same.
                Ok(_) if !fds[1].revents().is_empty() => break,
                Ok(_) => {}
                Err(e) if e == rustix::io::Errno::INTR => {}
                Err(e) => return Err(e.into()),
            }
        }
        let seen = self.stop.times();
        let deadline = Instant::now() + GRACE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let why = if left.is_zero() {
                format!("it took nothing for {} s after the stop", GRACE.as_secs())
            } else if self.stop.times() > seen {
                "stopped a second time".to_string()
            } else {
                String::new()
            };
            if !why.is_empty() {
                self.abandoned = true;
                return Err(io::Error::other(Stopped::new(
                    &self.stop,
                    format!(
                        "stopped while the reader was not reading ({why}): the output is incomplete"
                    ),
                )));
            }
            let mut fds = [PollFd::from_borrowed_fd(out, PollFlags::OUT)];
            match poll(&mut fds, Some(&timespec(left.min(RETRY_MAX)))) {
                Ok(_) if !fds[0].revents().is_empty() => return Ok(()),
                Ok(_) => {}
                Err(e) if e == rustix::io::Errno::INTR => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}
