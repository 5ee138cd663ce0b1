//! Running the command: one process per run, counted from its `exec` to its exit, with
//! wall time and the kernel's rusage (user, system, peak RSS) beside the counters.

use std::io::{IsTerminal, Write};

use hwprof_analysis::bench::metrics::RunResult;
use hwprof_pmu::EventList;
use hwprof_pmu::command::{self, CountedCommand};
use hwprof_pmu::counter::{CountOptions, prepare};
use hwprof_pmu::stop::Stop;

/// Runs commands with the bench's counters attached.
pub struct Runner {
    list: EventList,
    show_output: bool,
    ignore_failure: bool,
    progress: bool,
}

impl Runner {
    /// Counters for `events` (inherited by the command's children, enabled at exec).
    pub fn new(mut events: EventList, show_output: bool, ignore_failure: bool) -> Runner {
        prepare(
            &mut events,
            CountOptions {
                inherit: true,
                enable_on_exec: true,
            },
        );
        Runner {
            list: events,
            show_output,
            ignore_failure,
            progress: std::io::stderr().is_terminal() && !show_output,
        }
    }

    /// The events' names, in order.
    pub fn event_names(&self) -> Vec<String> {
        self.list.events.iter().map(|e| e.name.clone()).collect()
    }

    /// Shows `text` as the progress line (a terminal only).
    pub fn progress(&self, text: &str) {
        if self.progress {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[K{text}");
            let _ = e.flush();
        }
    }

    /// Clears the progress line.
    pub fn done(&self) {
        self.progress("");
    }

    /// Runs `argv` once. `label` names the run in errors ("run 3 of 'CMD'"). A stop is
    /// passed on to the command, which this waits for (the caller drops that run).
    pub fn run(&self, argv: &[String], label: &str, stop: &Stop) -> anyhow::Result<RunResult> {
        let opts = command::Options {
            inherit: true,
            quiet: !self.show_output,
            attached: None,
        };
        let run = CountedCommand::start(argv, &self.list, &opts)?.run_to_end(stop)?;
        let exit = &run.exit;
        if exit.code != 0 && !self.ignore_failure && !stop.is_stopped() {
            let how = match exit.signal {
                Some(s) => format!("was killed by signal {s}"),
                None => format!("exited with code {}", exit.code),
            };
            let hint = if self.show_output {
                "; a benchmark must succeed (--ignore-failure measures it anyway)"
            } else {
                "; a benchmark must succeed (--show-output shows its output, --ignore-failure measures it anyway)"
            };
            anyhow::bail!("{label} of '{}' {how}{hint}", argv.join(" "));
        }
        Ok(RunResult::of(&run, self.list.events.len()))
    }
}
