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
//!
//! Each signal (and each [`Stop::stop`]) adds one byte, so [`Stop::times`] tells a
//! second Ctrl-C from the first (a write waiting on a stalled reader gives up at once
//! on the second); [`Stop::signal`] says which signal stopped it, when the program
//! registered [`Stop::signal_slot`] (exit codes 128 + N).

use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A stop token: an atomic flag and a self-pipe that becomes readable when the flag is
/// set (see the module docs).
#[derive(Debug)]
pub struct Stop {
    /// Set once stopped.
    flag: Arc<AtomicBool>,
    /// The signal that stopped it (0: none known).
    signal: Arc<AtomicUsize>,
    /// The read end: readable once stopped (never drained).
    read: UnixStream,
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
            signal: Arc::new(AtomicUsize::new(0)),
            read,
            write,
        })
    }

    /// Another handle on the same token (new descriptors, the same flag): stopping
    /// either stops both. For a part that keeps the token (an output's writes).
    pub fn try_clone(&self) -> io::Result<Stop> {
        Ok(Stop {
            flag: Arc::clone(&self.flag),
            signal: Arc::clone(&self.signal),
            read: self.read.try_clone()?,
            write: self.write.try_clone()?,
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

    /// How many times it was stopped (signals and [`Stop::stop`] calls, as many as the
    /// socket held): a loop that goes on after the first stop tells a second one by
    /// this count growing.
    pub fn times(&self) -> usize {
        crate::sys::unread_bytes(self.read.as_fd()).unwrap_or(0)
    }

    /// Where a signal handler stores its signal number
    /// (`signal_hook::flag::register_usize(SIG, slot, SIG as usize)`), registered before
    /// the flag, so that [`Stop::signal`] names it.
    pub fn signal_slot(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.signal)
    }

    /// The signal that stopped the token, when its handler stored it in
    /// [`Stop::signal_slot`].
    pub fn signal(&self) -> Option<i32> {
        match self.signal.load(Ordering::SeqCst) {
            0 => None,
            n => i32::try_from(n).ok(),
        }
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

    /// A clone is the same token; each stop is counted; the signal slot names one.
    #[test]
    fn clones_share_the_stop_and_stops_are_counted() {
        let s = Stop::new().expect("stop");
        let c = s.try_clone().expect("clone");
        assert_eq!((s.times(), c.times()), (0, 0));
        c.stop();
        assert!(s.is_stopped() && readable(&s, 0));
        assert_eq!(s.times(), 1);
        s.stop();
        assert_eq!(c.times(), 2);
        assert_eq!(s.signal(), None);
        c.signal_slot().store(15, Ordering::SeqCst);
        assert_eq!(s.signal(), Some(15));
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
