//! The flag groups commands flatten (`#[command(flatten)]`): [`InputArgs`], what a command
//! that reads a recording takes (`-i`, `--symfs`, the sample filters), and
//! [`RecordArgs`], what a command that records, counts or encodes events takes (`-e`, `-F`,
//! `-c`, `-g`, `--call-graph`, the target: `-p`, `-t`, `-a`, `-C`, a command; `--duration`,
//! `--data-file`, `--event-file`, `--symfs`). Each flag is defined once ([`super::flag`]); a command
//! says which of a group's flags it takes and in what words through a `*Words` type,
//! so that `hwprof CMD --help` keeps each command's own help lines.

use std::marker::PhantomData;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgMatches, Args, Command, FromArgMatches};
use hwprof_pmu::target::Flags;

use super::flag;

/// How a reading command words its [`InputArgs`], and which of them it takes.
pub trait InputWords {
    /// The help of `-i/--input`.
    const INPUT: &'static str;
    /// The help of `--symfs`, when the command takes it.
    const SYMFS: Option<&'static str> = None;
    /// Whether the command takes the sample filters `--pid`, `--tid`, `--comm`.
    const FILTERS: bool = false;
}

/// `--symfs`'s help where it is said in full.
pub const SYMFS_HELP: &str = "Look for files with symbols relative to this directory (perf's --symfs: the recorded paths under DIR, and its build-id cache DIR/.debug)";

/// `--symfs`'s help where it is said briefly.
pub const SHORT_SYMFS_HELP: &str =
    "Look for files with symbols relative to this directory (perf's --symfs)";

/// The flags of a command that reads a recording.
#[derive(Debug)]
pub struct InputArgs<W> {
    /// `-i`: the perf.data file (`-`: a pipe-mode stream on stdin).
    pub file: PathBuf,
    /// `--symfs`: where to look for files with symbols.
    pub symfs: Option<PathBuf>,
    /// `--pid`: only these processes (empty: all).
    pub pid: Vec<u32>,
    /// `--tid`: only these threads (empty: all).
    pub tid: Vec<u32>,
    /// `--comm`: only these command names (empty: all).
    pub comm: Vec<String>,
    words: PhantomData<W>,
}

impl<W: InputWords> Args for InputArgs<W> {
    fn augment_args(cmd: Command) -> Command {
        let mut cmd = cmd.arg(flag::input().help(W::INPUT));
        if W::FILTERS {
            cmd = cmd
                .arg(flag::only_pids().help("Only these process ids (comma-separated)"))
                .arg(flag::only_tids().help("Only these thread ids (comma-separated)"))
                .arg(flag::only_comms().help("Only these command names (comma-separated)"));
        }
        if let Some(h) = W::SYMFS {
            cmd = cmd.arg(flag::symfs().help(h));
        }
        cmd
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl<W: InputWords> FromArgMatches for InputArgs<W> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(Self {
            file: one(m, "input").unwrap_or_else(|| PathBuf::from("perf.data")),
            symfs: one(m, "symfs"),
            pid: many(m, "pid"),
            tid: many(m, "tid"),
            comm: many(m, "comm"),
            words: PhantomData,
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

/// How a recording or counting command words its [`RecordArgs`], and which of them it
/// takes (`None`: not this command's flag).
pub trait RecordWords {
    /// `-e/--event`.
    const EVENTS: Option<&'static str> = None;
    /// Whether `-e` must be given.
    const EVENTS_REQUIRED: bool = false;
    /// `-F/--freq`.
    const FREQ: Option<&'static str> = None;
    /// `-c/--count`.
    const COUNT: Option<&'static str> = None;
    /// `-g`.
    const FP: Option<&'static str> = None;
    /// `--call-graph`.
    const CALL_GRAPH: Option<&'static str> = None;
    /// The value name of `--call-graph`: the modes the command takes.
    const CALL_GRAPH_MODES: &'static str = "fp|lbr|dwarf[,SIZE]";
    /// `-p/--pid`.
    const PID: Option<&'static str> = None;
    /// `-t/--tid`.
    const TID: Option<&'static str> = None;
    /// `-a/--all-cpus`.
    const ALL_CPUS: Option<&'static str> = None;
    /// `-C/--cpu`.
    const CPUS: Option<&'static str> = None;
    /// `--duration`.
    const DURATION: Option<&'static str> = None;
    /// `--data-file`.
    const DATA_FILE: Option<&'static str> = None;
    /// `--event-file`.
    const EVENT_FILE: Option<&'static str> = None;
    /// `--symfs`.
    const SYMFS: Option<&'static str> = None;
    /// The command, after `--`.
    const COMMAND: Option<&'static str> = None;
    /// Whether the command comes only after `--` (other positionals come first).
    const COMMAND_LAST: bool = false;
}

/// The flags of a command that records or counts: what, how often, with which stacks,
/// and on what.
#[derive(Debug)]
pub struct RecordArgs<W> {
    /// `-e`: events, perf syntax (empty: the command's default).
    pub events: Vec<String>,
    /// `-F`: frequency (Hz or `max`).
    pub freq: Option<String>,
    /// `-c`: period.
    pub count: Option<u64>,
    /// `-g`: frame-pointer callchains.
    pub callgraph_fp: bool,
    /// `--call-graph`: the mode as given.
    pub call_graph: Option<String>,
    /// `-p`: PIDs as given.
    pub pid: Option<String>,
    /// `-t`: TIDs as given.
    pub tid: Option<String>,
    /// `-a`.
    pub all_cpus: bool,
    /// `-C`: CPUs as given.
    pub cpus: Option<String>,
    /// `--duration`.
    pub duration: Option<Duration>,
    /// `--data-file`: where to keep the recording of a command that draws it.
    pub data_file: Option<PathBuf>,
    /// `--event-file`s.
    pub event_file: Vec<PathBuf>,
    /// `--symfs`.
    pub symfs: Option<PathBuf>,
    /// The command, after `--`.
    pub command: Vec<String>,
    words: PhantomData<W>,
}

impl<W> RecordArgs<W> {
    /// The target flags, for [`hwprof_pmu::target::Target::parse`].
    pub fn flags(&self) -> Flags<'_> {
        Flags {
            command: &self.command,
            pid: self.pid.as_deref(),
            tid: self.tid.as_deref(),
            all_cpus: self.all_cpus,
            cpus: self.cpus.as_deref(),
        }
    }

    /// The same flags, as another command takes them.
    pub fn into_words<V>(self) -> RecordArgs<V> {
        RecordArgs {
            events: self.events,
            freq: self.freq,
            count: self.count,
            callgraph_fp: self.callgraph_fp,
            call_graph: self.call_graph,
            pid: self.pid,
            tid: self.tid,
            all_cpus: self.all_cpus,
            cpus: self.cpus,
            duration: self.duration,
            data_file: self.data_file,
            event_file: self.event_file,
            symfs: self.symfs,
            command: self.command,
            words: PhantomData,
        }
    }
}

impl<W: RecordWords> Args for RecordArgs<W> {
    fn augment_args(cmd: Command) -> Command {
        let mut args = Vec::new();
        let mut add = |help: Option<&'static str>, arg: clap::Arg| {
            if let Some(h) = help {
                args.push(arg.help(h));
            }
        };
        add(W::EVENTS, flag::events().required(W::EVENTS_REQUIRED));
        let freq = flag::freq();
        add(
            W::FREQ,
            if W::COUNT.is_some() {
                freq.conflicts_with("count")
            } else {
                freq
            },
        );
        add(W::COUNT, flag::count());
        add(W::FP, flag::callgraph_fp());
        add(W::CALL_GRAPH, flag::call_graph(W::CALL_GRAPH_MODES));
        add(W::PID, flag::pid());
        add(W::TID, flag::tid());
        add(W::ALL_CPUS, flag::all_cpus());
        add(W::CPUS, flag::cpus());
        add(W::DURATION, flag::duration());
        add(W::DATA_FILE, flag::data_file());
        add(W::EVENT_FILE, flag::event_file());
        add(W::SYMFS, flag::symfs());
        add(W::COMMAND, flag::command(W::COMMAND_LAST));
        cmd.args(args)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl<W: RecordWords> FromArgMatches for RecordArgs<W> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(Self {
            events: many(m, "events"),
            freq: one(m, "freq"),
            count: one(m, "count"),
            callgraph_fp: one(m, "callgraph_fp").unwrap_or(false),
            call_graph: one(m, "call_graph"),
            pid: one(m, "pid"),
            tid: one(m, "tid"),
            all_cpus: one(m, "all_cpus").unwrap_or(false),
            cpus: one(m, "cpus"),
            duration: one(m, "duration"),
            data_file: one(m, "data_file"),
            event_file: many(m, "event_file"),
            symfs: one(m, "symfs"),
            command: many(m, "command"),
            words: PhantomData,
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

/// The value of flag `id`, `None` when not given or not a flag of this command.
fn one<T: Clone + Send + Sync + 'static>(m: &ArgMatches, id: &str) -> Option<T> {
    m.try_get_one::<T>(id).ok().flatten().cloned()
}

/// The values of flag `id`, empty when not given or not a flag of this command.
fn many<T: Clone + Send + Sync + 'static>(m: &ArgMatches, id: &str) -> Vec<T> {
    m.try_get_many::<T>(id)
        .ok()
        .flatten()
        .map(|v| v.cloned().collect())
        .unwrap_or_default()
}
