//! A stop token: how a program tells the libraries' waiting loops to stop (Ctrl-C).
//!
//! No hwprof library installs a signal handler or keeps global state. The program creates
//! one [`Stop`] and decides what triggers it: the `hwprof` binary registers SIGINT and
//! SIGTERM with the `signal-hook` crate, setting [`Stop::flag`] first and then writing
//! to [`Stop::waker`]; a library user may call [`Stop::stop`] from another thread. Every
//! loop that waits on a target (counting, sampling, a command) takes `&Stop`, checks
//! [`Stop::is_stopped`], and waits on [`Stop::fd`] together with what it waits for.
//!
//! # The race it closes
//!
//! A loop that checks a flag and then blocks in `poll` misses a signal that lands between
//! the two: the flag is set, but nothing wakes the `poll`. Here the signal also writes a
//! byte into a socket pair whose read end ([`Stop::fd`]) is in every wait, and that byte
//! is never read: once stopped, the fd stays readable, so any later `poll` or `epoll_wait`
//! on it returns at once. A loop that goes on waiting after it has seen the stop (for a
//! command to exit by itself, say) leaves the fd out of its later waits.

use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A stop token: an atomic flag and a self-pipe that becomes readable when the flag is
/// set (see the module docs).
#[derive(Debug)]
pub struct Stop {
    /// Set once stopped.
    flag: Arc<AtomicBool>,
    /// The read end: readable once stopped (never drained).
    read: OwnedFd,
    /// The write end (non-blocking), for [`Stop::stop`].
    write: UnixStream,
}

impl Stop {
    /// A token that nothing has stopped yet.
    pub fn new() -> io::Result<Stop> {
        let (read, write) = UnixStream::pair()?;
        read.set_nonblocking(true)?;
        write.set_nonblocking(true)?;
        Ok(Stop {
            flag: Arc::new(AtomicBool::new(false)),
            read: OwnedFd::from(read),
            write,
        })
    }

    /// Stops: sets the flag, then makes [`Stop::fd`] readable. Safe to call from any
    /// thread, any number of times.
    pub fn stop(&self) {
        self.flag.store(true, Ordering::SeqCst);
        // A full socket buffer (WouldBlock) means it is readable already.
        let _ = (&self.write).write(&[1]);
    }

    /// Whether the token was stopped.
    pub fn is_stopped(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// The flag, for a signal handler to set (`signal_hook::flag::register`): register it
    /// before [`Stop::waker`], so that a loop woken by the fd finds the flag set.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }

    /// A new descriptor of the write end (a non-blocking stream socket), for a signal
    /// handler to write one byte into (`signal_hook::low_level::pipe::register`, which
    /// takes ownership of it).
    pub fn waker(&self) -> io::Result<UnixStream> {
        self.write.try_clone()
    }

    /// The descriptor to wait on: readable once stopped, and from then on.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys;
    use std::time::{Duration, Instant};

    fn readable(s: &Stop, ms: i32) -> bool {
        !sys::poll_readable(&[s.fd()], ms).expect("poll").is_empty()
    }

    #[test]
    fn stopping_sets_the_flag_and_wakes_a_poll_for_good() {
        let s = Stop::new().expect("stop");
        assert!(!s.is_stopped());
        assert!(!readable(&s, 0));
        s.stop();
        assert!(s.is_stopped());
        // Readable now and later: the byte is never read.
        assert!(readable(&s, 0));
        assert!(readable(&s, 0));
        s.stop();
        assert!(readable(&s, 0));
    }

    /// A stop from another thread (as a signal handler's write) wakes a poll that
    /// started before it, with no timeout.
    #[test]
    fn a_stop_wakes_a_poll_already_waiting() {
        let s = Arc::new(Stop::new().expect("stop"));
        let waker = s.waker().expect("waker");
        let t0 = Instant::now();
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            // What signal-hook's pipe action does: one byte, without blocking.
            let _ = (&waker).write(b"X");
        });
        assert!(readable(&s, 10_000));
        assert!(t0.elapsed() < Duration::from_secs(5));
        h.join().expect("thread");
        // The flag is the handler's other half: untouched by the waker alone.
        assert!(!s.is_stopped());
        s.flag().store(true, Ordering::SeqCst);
        assert!(s.is_stopped());
    }
}
