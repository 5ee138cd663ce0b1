//! Run a command and count it: the one way `stat` and `bench` (and any library user)
//! measure a command from its first instruction.
//!
//! [`CountedCommand::start`] forks the command and holds it before `exec`
//! ([`sys::Workload`]), opens the counters on its pid with `enable_on_exec` (or on other
//! tasks or CPUs, enabled now, for [`Options::attached`]), then lets it `exec`. [`CountedCommand::wait`]
//! waits for it to exit, for a deadline (intervals), or for the [`Stop`]: a stop is
//! passed on to the command as SIGINT, once, and the wait goes on until it exits (the
//! command decides how to end, as with Ctrl-C in a terminal). [`CountedCommand::finish`]
//! reaps it with its rusage and reads the counters.

use std::time::{Duration, Instant};

use crate::counter::{CountOptions, Counter, Readings, Slot, prepare};
use crate::error::{Error, Result};
use crate::event::EventList;
use crate::stop::Stop;
use crate::sys::{self, ExecError, ExitInfo, Workload};
use crate::target::{Watch, Woke};

/// How to run the command.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Children and new threads inherit the counters.
    pub inherit: bool,
    /// Send the command's stdout and stderr to `/dev/null` (benchmarks).
    pub quiet: bool,
    /// Count these tasks or CPUs while the command runs, instead of the command's own
    /// tasks (`stat -a -- CMD`, `stat -p PID -- sleep 1`): the command only bounds the
    /// time.
    pub attached: Option<Vec<Slot>>,
}

/// A command running with counters attached (see the module docs).
#[derive(Debug)]
pub struct CountedCommand {
    pid: i32,
    program: String,
    counter: Counter,
    watch: Watch,
    started: Instant,
    /// The counters are on other tasks or CPUs ([`Options::attached`]).
    attached: bool,
    /// The stop was passed on as SIGINT.
    interrupted: bool,
}

/// How a counted command ended.
#[derive(Debug)]
pub struct Finished {
    /// Its exit status and rusage.
    pub exit: ExitInfo,
    /// From letting it `exec` to its exit.
    pub wall: Duration,
    /// The counters at the end.
    pub readings: Readings,
    /// The counters (their events, status and notices).
    pub counter: Counter,
}

fn exec_error(program: &str, e: ExecError) -> Error {
    match e {
        ExecError::Exec(source) => Error::Exec {
            program: program.to_string(),
            source,
        },
        ExecError::Setup(source) => Error::Start {
            program: program.to_string(),
            source,
        },
    }
}

impl CountedCommand {
    /// Starts `argv` with `events` counting it (see the module docs). Errors:
    /// [`Error::Exec`] when it cannot be executed (nothing ran), [`Error::Start`] when
    /// it could not be set up, the counters' errors when they cannot open.
    pub fn start(argv: &[String], events: &EventList, opts: &Options) -> Result<CountedCommand> {
        let program = argv.first().cloned().unwrap_or_default();
        let prepared = if opts.quiet {
            Workload::prepare_quiet(argv)
        } else {
            Workload::prepare(argv)
        };
        let mut wl = prepared.map_err(|e| exec_error(&program, e))?;
        let pid = wl.pid();
        let mut list = events.clone();
        prepare(
            &mut list,
            CountOptions {
                inherit: opts.inherit,
                enable_on_exec: opts.attached.is_none(),
            },
        );
        let slots: Vec<Slot> = match &opts.attached {
            Some(s) => s.clone(),
            None => vec![Slot { pid, cpu: -1 }],
        };
        // Dropping `wl` unstarted (on any error below) makes the child exit unrun.
        let counter = Counter::open(list, slots)?;
        if opts.attached.is_some() {
            counter.enable()?;
        }
        let mut watch = Watch::new();
        watch
            .add_pid(pid)
            .map_err(|e| Error::io("watching the workload", e))?;
        let started = Instant::now();
        if let Err(e) = wl.start() {
            let _ = sys::wait(pid);
            return Err(exec_error(&program, e));
        }
        Ok(CountedCommand {
            pid,
            program,
            counter,
            watch,
            started,
            attached: opts.attached.is_some(),
            interrupted: false,
        })
    }

    /// The command's pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The counters (read them for intervals).
    pub fn counter(&self) -> &Counter {
        &self.counter
    }

    /// When the command was let go.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Whether a stop was passed on to the command.
    pub fn interrupted(&self) -> bool {
        self.interrupted
    }

    /// Waits until the command exits ([`Woke::Done`]), `until` passes
    /// ([`Woke::Deadline`]), or `stop` is stopped ([`Woke::Stopped`], once: the command
    /// is sent SIGINT, and the next waits go on until it exits).
    pub fn wait(&mut self, stop: &Stop, until: Option<Instant>) -> std::io::Result<Woke> {
        let woke = self.watch.wait(stop, until)?;
        if woke == Woke::Stopped && !self.interrupted {
            self.interrupted = true;
            let _ = sys::kill(self.pid, libc::SIGINT);
        }
        Ok(woke)
    }

    /// Waits until the command exits (passing a stop on as [`CountedCommand::wait`]
    /// does), then [`CountedCommand::finish`]es it.
    pub fn run_to_end(mut self, stop: &Stop) -> Result<Finished> {
        loop {
            match self.wait(stop, None) {
                Ok(Woke::Done) => break,
                Ok(_) => {}
                Err(e) => {
                    self.abort();
                    return Err(Error::io("waiting for the workload", e));
                }
            }
        }
        self.finish()
    }

    /// Sends the command signal `sig` (ending it at a time limit, say); the waits go on
    /// until it exits.
    pub fn signal(&self, sig: i32) {
        let _ = sys::kill(self.pid, sig);
    }

    /// Reaps the command (which must have exited, or this blocks until it does) with its
    /// rusage, stops counters on other tasks or CPUs, and reads the counters.
    pub fn finish(self) -> Result<Finished> {
        let wall = self.started.elapsed();
        let exit = sys::wait(self.pid).map_err(|e| Error::io("waiting for the workload", e))?;
        if self.attached {
            self.counter.disable()?;
        }
        let readings = self.counter.read()?;
        Ok(Finished {
            exit,
            wall,
            readings,
            counter: self.counter,
        })
    }

    /// Ends the command as Ctrl-C would (SIGINT) and reaps it: for a caller that gives up
    /// (its output failed, say).
    pub fn abort(self) {
        let _ = sys::kill(self.pid, libc::SIGINT);
        let _ = sys::wait(self.pid);
    }

    /// `argv[0]`.
    pub fn program(&self) -> &str {
        &self.program
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Encoder;

    fn sh(script: &str) -> Vec<String> {
        ["sh", "-c", script].map(String::from).to_vec()
    }

    fn events() -> EventList {
        Encoder::host().parse("task-clock").expect("task-clock")
    }

    #[test]
    fn a_command_is_counted_from_exec_to_exit() {
        let stop = Stop::new().expect("stop");
        let opts = Options {
            inherit: true,
            quiet: true,
            attached: None,
        };
        let c = CountedCommand::start(
            &sh("i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 3"),
            &events(),
            &opts,
        )
        .expect("start");
        let f = c.run_to_end(&stop).expect("finish");
        assert_eq!(f.exit.code, 3);
        let n = f.counter.events().events.len();
        let tc = f.readings.total(n)[0].expect("task-clock counted");
        assert!(tc.raw > 1_000_000, "task-clock {} ns", tc.raw);
        assert!(f.wall > Duration::ZERO);
        assert!(f.exit.user_us + f.exit.sys_us > 0, "rusage");
    }

    #[test]
    fn a_missing_program_is_an_exec_error() {
        let e = CountedCommand::start(
            &["/nonexistent/hwprof-test".to_string()],
            &events(),
            &Options::default(),
        )
        .expect_err("no such program");
        assert!(
            matches!(&e, Error::Exec { program, .. } if program == "/nonexistent/hwprof-test"),
            "{e:?}"
        );
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        assert_eq!(
            crate::error::without_os_error_code(&e.to_string()),
            "cannot run '/nonexistent/hwprof-test': No such file or directory"
        );
    }

    /// A stop is passed on as SIGINT once, and the wait goes on until the command exits.
    #[test]
    fn a_stop_interrupts_the_command_and_waits_for_it() {
        let stop = Stop::new().expect("stop");
        let sleep = ["sleep", "30"].map(String::from);
        let mut c = CountedCommand::start(&sleep, &events(), &Options::default()).expect("start");
        stop.stop();
        assert_eq!(c.wait(&stop, None).expect("wait"), Woke::Stopped);
        assert!(c.interrupted());
        assert_eq!(c.wait(&stop, None).expect("wait"), Woke::Done);
        let f = c.finish().expect("finish");
        assert_eq!(f.exit.signal, Some(libc::SIGINT));
    }
}
