//! The flags as a whole: clap's own checks, and each command's spellings.

#[test]
fn clap_definition_is_valid() {
    use clap::CommandFactory;
    super::Cli::command().debug_assert();
}

/// Every command's spellings, as each took them before the flag groups: a group
/// gives a command only the flags its words name (flamegraph has no -t, offcpu no
/// -e, probe no -a).
#[test]
fn each_command_takes_exactly_its_flags() {
    use clap::CommandFactory;
    let expect = [
        ("list", "--cpu --event-file --json"),
        ("encode", "-e --cpu --event --event-file --json"),
        (
            "stat",
            "-A -C -I -a -e -i -j -o -p -r -t -x --all-cpus --cpu --duration --event --event-file --field-separator --interval-print --json --json-keys --level --metrics-file --no-aggr --no-inherit --output --pid --repeat --tid --timeout --topdown",
        ),
        (
            "record",
            "-C -F -W -a -b -c -d -e -g -i -j -m -o -p -q -t --all-cpus --branch-any --branch-filter --call-graph --count --cpu --data --dry-run --duration --event --event-file --freq --keep-raw-stacks --mmap-pages --no-inherit --off-cpu --output --pid --quiet --switch-events --tid --weight",
        ),
        (
            "script",
            "-D -F -i --dump-raw-trace --fields --format --header --input --symfs",
        ),
        (
            "report",
            "-b -g -i -s --branch-sort --branch-stack --call-graph --children --comm --diff --event --input --json --no-children --no-inline --percent-limit --pid --sort --stdio --symfs --tid",
        ),
        ("annotate", "-i --event --input --stdio --symfs"),
        (
            "flamegraph",
            "-F -a -c -e -i -o -p --all --all-cpus --call-graph --colors --count --data-file --diff --draw-event --duration --event --event-file --flamechart --folded --freq --inline --input --inverted --kernel --mem --min-width --no-inline --no-kernel --off-cpu --output --pid --reverse --symfs --title --weight",
        ),
        (
            "export",
            "-F -a -c -e -i -o -p --all-cpus --call-graph --count --data-file --duration --event --event-file --format --freq --input --no-inline --no-kernel --output --pid --symfs",
        ),
        (
            "offcpu",
            "-a -o -p -t --all-cpus --call-graph --data-file --duration --engine --folded --min-block --no-kernel --output --pid --report --symfs --tid --wall",
        ),
        (
            "probe",
            "-o -p --call-graph --duration --engine --hist --json --output --pid --stacks --symfs --threshold",
        ),
        (
            "memory",
            "-o -p --allocator --call-graph --data-file --duration --engine --folded --leaks --min-age --output --pid --report --symfs --weight",
        ),
        (
            "io",
            "-a -o -p --all-cpus --call-graph --data-file --duration --engine --folded --output --pid --report --symfs --threshold",
        ),
        (
            "bench",
            "-e -i -r --baseline --baseline-dir --compare --confidence --event --event-file --gate --ignore-failure --json --markdown --runs --save --show-output --threshold --warmup",
        ),
    ];
    let cli = super::Cli::command();
    for (name, want) in expect {
        let cmd = cli.find_subcommand(name).expect(name);
        let mut got: Vec<String> = cmd
            .get_arguments()
            .flat_map(|a| {
                let short = a.get_short().map(|c| format!("-{c}"));
                let long = a.get_long().map(|l| format!("--{l}"));
                short.into_iter().chain(long)
            })
            .filter(|s| s != "--help" && s != "--version" && s != "-h" && s != "-V")
            .collect();
        got.sort_by_key(|s| (s.starts_with("--"), s.clone()));
        assert_eq!(got.join(" "), want, "hwprof {name}");
    }
    for (name, sub) in [("mem", "report"), ("c2c", "report")] {
        let cmd = cli
            .find_subcommand(name)
            .and_then(|c| c.find_subcommand(sub));
        let longs: Vec<&str> = cmd
            .into_iter()
            .flat_map(|c| c.get_arguments())
            .filter_map(|a| a.get_long())
            .filter(|l| matches!(*l, "input" | "symfs" | "pid" | "tid" | "comm"))
            .collect();
        assert_eq!(longs, ["input", "symfs"], "hwprof {name} {sub}");
    }
}

/// Every value of a group reaches its field (the groups read matches by id and type:
/// a mismatch would read as "not given").
#[test]
fn group_values_reach_their_fields() {
    use clap::Parser;
    use std::path::PathBuf;
    use std::time::Duration;

    use super::{Cli, Command};
    let parse = |args: &[&str]| {
        Cli::try_parse_from(std::iter::once("hwprof").chain(args.iter().copied()))
            .expect("parses")
            .command
    };
    let Command::Record(r) = parse(&[
        "record",
        "-e",
        "cycles",
        "-e",
        "instructions",
        "-F",
        "99",
        "-g",
        "--call-graph",
        "dwarf",
        "-p",
        "1",
        "-t",
        "2",
        "-a",
        "-C",
        "0-1",
        "--duration",
        "2",
        "--event-file",
        "x.json",
        "--",
        "sleep",
        "1",
    ]) else {
        panic!("not record");
    };
    let r = r.record;
    assert_eq!(r.events, ["cycles", "instructions"]);
    assert_eq!(r.freq.as_deref(), Some("99"));
    assert!(r.callgraph_fp);
    assert_eq!(r.call_graph.as_deref(), Some("dwarf"));
    assert_eq!((r.pid.as_deref(), r.tid.as_deref()), (Some("1"), Some("2")));
    assert!(r.all_cpus);
    assert_eq!(r.cpus.as_deref(), Some("0-1"));
    assert_eq!(r.duration, Some(Duration::from_secs(2)));
    assert_eq!(r.event_file, [PathBuf::from("x.json")]);
    assert_eq!(r.command, ["sleep", "1"]);
    let Command::Record(r) = parse(&["record", "-c", "1000", "--", "true"]) else {
        panic!("not record");
    };
    assert_eq!(r.record.count, Some(1000));

    let Command::Report(r) = parse(&[
        "report", "-i", "in.data", "--symfs", "/", "--pid", "1,2", "--tid", "3", "--comm", "a,b",
    ]) else {
        panic!("not report");
    };
    let i = r.input;
    assert_eq!(i.file, PathBuf::from("in.data"));
    assert_eq!(i.symfs, Some(PathBuf::from("/")));
    assert_eq!(
        (i.pid, i.tid, i.comm),
        (vec![1, 2], vec![3], vec!["a".into(), "b".into()])
    );
    let Command::Script(s) = parse(&["script"]) else {
        panic!("not script");
    };
    assert_eq!(s.input.file, PathBuf::from("perf.data"));

    let Command::Offcpu(o) = parse(&["offcpu", "--data-file", "o.data", "--", "true"]) else {
        panic!("not offcpu");
    };
    assert_eq!(o.record.data_file, Some(PathBuf::from("o.data")));
    let Command::Probe(p) = parse(&["probe", "uprobe:/bin/true:main", "--", "true", "x"]) else {
        panic!("not probe");
    };
    assert_eq!(p.record.command, ["true", "x"]);
}
