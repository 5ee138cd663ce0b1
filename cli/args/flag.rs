//! One definition of each flag that several commands take: its id, spellings, value
//! name, parser and action, as ripgrep defines each flag once. What a flag means to a
//! command (its help line) is the command's word ([`super::group`]'s `*Words`).

use std::path::PathBuf;

use clap::{Arg, ArgAction, value_parser};

use super::value::{secs, symfs_dir};

/// `-i/--input FILE`: the perf.data file a command reads (`-` for a pipe-mode stream).
pub fn input() -> Arg {
    Arg::new("input")
        .short('i')
        .long("input")
        .value_name("FILE")
        .default_value("perf.data")
        .value_parser(value_parser!(PathBuf))
        .action(ArgAction::Set)
}

/// `--symfs DIR`: where to look for files with symbols (perf's).
pub fn symfs() -> Arg {
    Arg::new("symfs")
        .long("symfs")
        .value_name("DIR")
        .value_parser(symfs_dir)
        .action(ArgAction::Set)
}

/// `--pid PID,..` of a reading command: only the samples of these processes.
pub fn only_pids() -> Arg {
    Arg::new("pid")
        .long("pid")
        .value_name("PID,..")
        .value_delimiter(',')
        .value_parser(value_parser!(u32))
        .action(ArgAction::Append)
}

/// `--tid TID,..` of a reading command: only the samples of these threads.
pub fn only_tids() -> Arg {
    Arg::new("tid")
        .long("tid")
        .value_name("TID,..")
        .value_delimiter(',')
        .value_parser(value_parser!(u32))
        .action(ArgAction::Append)
}

/// `--comm COMM,..` of a reading command: only the samples of these command names.
pub fn only_comms() -> Arg {
    Arg::new("comm")
        .long("comm")
        .value_name("COMM,..")
        .value_delimiter(',')
        .value_parser(value_parser!(String))
        .action(ArgAction::Append)
}

/// `-e/--event EVENTS`: events in perf's syntax, comma-separated, repeatable.
pub fn events() -> Arg {
    Arg::new("events")
        .short('e')
        .long("event")
        .value_name("EVENTS")
        .value_parser(value_parser!(String))
        .action(ArgAction::Append)
}

/// `-F/--freq FREQ`: the sampling frequency (Hz or `max`; checked when recording).
pub fn freq() -> Arg {
    Arg::new("freq")
        .short('F')
        .long("freq")
        .value_name("FREQ")
        .value_parser(value_parser!(String))
        .action(ArgAction::Set)
}

/// `-c/--count N`: the sampling period.
pub fn count() -> Arg {
    Arg::new("count")
        .short('c')
        .long("count")
        .value_name("N")
        .value_parser(value_parser!(u64))
        .action(ArgAction::Set)
}

/// `-g`: frame-pointer callchains.
pub fn callgraph_fp() -> Arg {
    Arg::new("callgraph_fp")
        .short('g')
        .action(ArgAction::SetTrue)
}

/// `--call-graph MODE` (checked when recording); `modes` is its value name.
pub fn call_graph(modes: &'static str) -> Arg {
    Arg::new("call_graph")
        .long("call-graph")
        .value_name(modes)
        .value_parser(value_parser!(String))
        .action(ArgAction::Set)
}

/// `-p/--pid PID,..`: processes to attach to (checked by the one target parser).
pub fn pid() -> Arg {
    Arg::new("pid")
        .short('p')
        .long("pid")
        .value_name("PID,..")
        .value_parser(value_parser!(String))
        .action(ArgAction::Set)
}

/// `-t/--tid TID,..`: threads to attach to.
pub fn tid() -> Arg {
    Arg::new("tid")
        .short('t')
        .long("tid")
        .value_name("TID,..")
        .value_parser(value_parser!(String))
        .action(ArgAction::Set)
}

/// `-a/--all-cpus`: system-wide.
pub fn all_cpus() -> Arg {
    Arg::new("all_cpus")
        .short('a')
        .long("all-cpus")
        .action(ArgAction::SetTrue)
}

/// `-C/--cpu CPUS`: only these CPUs.
pub fn cpus() -> Arg {
    Arg::new("cpus")
        .short('C')
        .long("cpu")
        .value_name("CPUS")
        .value_parser(value_parser!(String))
        .action(ArgAction::Set)
}

/// `--duration SECS`: stop after this long.
pub fn duration() -> Arg {
    Arg::new("duration")
        .long("duration")
        .value_name("SECS")
        .value_parser(secs)
        .action(ArgAction::Set)
}

/// `--data-file FILE`: where a command that records and draws keeps the recording.
pub fn data_file() -> Arg {
    Arg::new("data_file")
        .long("data-file")
        .value_name("FILE")
        .value_parser(value_parser!(PathBuf))
        .action(ArgAction::Set)
}

/// `--event-file FILE.json`: Intel perfmon JSON of named events, repeatable.
pub fn event_file() -> Arg {
    Arg::new("event_file")
        .long("event-file")
        .value_name("FILE.json")
        .value_parser(value_parser!(PathBuf))
        .action(ArgAction::Append)
}

/// `[CMD]...`: the command to run, after `--` (`last`: only after `--`, for a command
/// whose other positionals come first).
pub fn command(last: bool) -> Arg {
    let a = Arg::new("command")
        .value_name("CMD")
        .num_args(1..)
        .value_parser(value_parser!(String))
        .action(ArgAction::Append);
    if last {
        a.last(true)
    } else {
        a.trailing_var_arg(true)
    }
}
