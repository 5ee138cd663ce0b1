//! `hwprof`: hardware performance counters and PMU sampling for Linux.
//!
//! `main` only parses arguments, dispatches to a subcommand, and turns errors into one
//! line on stderr and an exit code (2 for bad input, 1 for failures, the workload's own
//! code when a command ran). A closed stdout pipe is not an error.

#![forbid(unsafe_code)]

mod annotate;
mod args;
mod bench;
mod c2c;
mod completions;
mod destination;
mod encode;
mod error;
mod events;
mod export;
mod flamegraph;
mod input;
mod io;
mod list;
mod mem;
mod memory;
mod metrics;
mod offcpu;
mod probe;
mod record;
mod render;
mod report;
mod sampling;
mod script;
mod stat;
mod tma;

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use hwprof_pmu::stop::Stop;

use error::{error_line, exit_code_of, is_broken_pipe};

fn main() -> ExitCode {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(), // --help, --version
        Err(e) => {
            let line = clap_line(&e.to_string());
            eprintln!("hwprof: {} (see `hwprof --help`)", render::escape(&line));
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("hwprof: {}", error_line(&err));
            ExitCode::from(exit_code_of(&err))
        }
    }
}

/// clap's error in one line: its first, with the list that follows when it ends in a
/// colon (`the following required arguments were not provided:` then `  --leaks`).
fn clap_line(text: &str) -> String {
    let mut lines = text.lines();
    let first = lines
        .next()
        .unwrap_or("bad arguments")
        .trim_start_matches("error: ");
    if !first.ends_with(':') {
        return first.to_string();
    }
    let list: Vec<&str> = lines
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    format!("{first} {}", list.join(", "))
}

fn run(cli: args::Cli) -> anyhow::Result<u8> {
    match cli.command {
        args::Command::Stat(a) => stat::run(a, &stop_on_signals()?),
        args::Command::List(a) => list::run(a).map(|()| 0),
        args::Command::Encode(a) => encode::run(a).map(|()| 0),
        args::Command::Record(a) => record::run(a, &stop_on_signals()?),
        args::Command::Script(a) => script::run(a),
        args::Command::Report(a) => report::run(a),
        args::Command::Annotate(a) => annotate::run(a),
        args::Command::Flamegraph(a) if a.off_cpu => {
            let stop = if a.records() {
                stop_on_signals()?
            } else {
                Stop::new().context("creating the stop token")?
            };
            offcpu::flamegraph(a, &stop)
        }
        args::Command::Flamegraph(a) => {
            let stop = if a.records() {
                stop_on_signals()?
            } else {
                Stop::new().context("creating the stop token")?
            };
            flamegraph::run(a, &stop)
        }
        args::Command::Export(a) => export::run(a, stop_on_signals),
        args::Command::Offcpu(a) => offcpu::run(a, &stop_on_signals()?),
        args::Command::Probe(a) => probe::run(a, &stop_on_signals()?),
        args::Command::Io(a) => io::run(a, &stop_on_signals()?),
        args::Command::Memory(a) => memory::run(a, &stop_on_signals()?),
        args::Command::Bench(a) => bench::run(a, &stop_on_signals()?),
        args::Command::Metrics(a) => metrics::run(a),
        args::Command::Mem(a) => mem::run(a),
        args::Command::Completions(a) => completions::completions(&a),
        args::Command::Man(a) => completions::man(&a),
        args::Command::C2c(a) => c2c::run(a),
    }
}

/// The stop token of a command that waits on a target (a command, processes, CPUs):
/// SIGINT and SIGTERM stop it, setting its flag and then waking its fd, which every
/// library wait includes (see [`hwprof_pmu::stop`]). The one place hwprof handles
/// signals. Commands that only read files keep the default action: Ctrl-C ends them.
fn stop_on_signals() -> anyhow::Result<Stop> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let installing = || "installing the SIGINT handler";
    let stop = Stop::new().context("creating the stop token")?;
    for sig in [SIGINT, SIGTERM] {
        // Which signal, then the flag, then the fd (see `Stop::signal_slot`).
        signal_hook::flag::register_usize(sig, stop.signal_slot(), sig as usize)
            .context(installing())?;
        signal_hook::flag::register(sig, stop.flag()).context(installing())?;
        let waker = stop.waker().context(installing())?;
        signal_hook::low_level::pipe::register(sig, waker).context(installing())?;
    }
    Ok(stop)
}

#[cfg(test)]
mod clap_tests {
    use super::clap_line;

    #[test]
    fn clap_errors_keep_the_names_they_list() {
        let text = "error: the following required arguments were not provided:\n  --leaks\n\nUsage: hwprof memory --leaks --min-age <DURATION> [CMD]...\n";
        assert_eq!(
            clap_line(text),
            "the following required arguments were not provided: --leaks"
        );
        assert_eq!(
            clap_line("error: unexpected argument '--x' found\n\nUsage: ..."),
            "unexpected argument '--x' found"
        );
    }
}
