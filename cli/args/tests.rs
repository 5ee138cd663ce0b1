//! The flags as a whole: clap's own checks, and each command's spellings.

#[test]
fn clap_definition_is_valid() {
    use clap::CommandFactory;
    super::Cli::command().debug_assert();
}

/// Every command's spellings, as each took them before the flag groups: a group
/// gives a command only the flags its words name (flamegraph has no -t, offcpu no
/// -e, script no --symfs, probe no -a).
#[test]
fn each_command_takes_exactly_its_flags() {
    use clap::CommandFactory;
    let expect = [
        ("list", "--cpu --event-file --json"),
        ("encode", "-e --cpu --event --event-file --json"),
        (
            "stat",
            "-A -C -I -a -e -i -j -o -p -r -t -x --all-cpus --cpu --duration --event --event-file --field-separator --interval-print --json --level --metrics-file --no-aggr --no-inherit --output --pid --repeat --tid --timeout --topdown",
        ),
        (
            "record",
            "-C -F -W -a -b -c -d -e -g -i -j -m -o -p -q -t --all-cpus --branch-any --branch-filter --call-graph --count --cpu --data --dry-run --duration --event --event-file --freq --keep-raw-stacks --mmap-pages --no-inherit --off-cpu --output --pid --quiet --switch-events --tid --weight",
        ),
        ("script", "-i --format --header --input"),
        (
            "report",
            "-b -i -s --branch-sort --branch-stack --children --comm --diff --event --input --json --no-children --no-inline --percent-limit --pid --sort --stdio --symfs --tid",
        ),
        (
            "flamegraph",
            "-F -a -c -e -i -o -p --all --all-cpus --call-graph --count --data-file --diff --draw-event --duration --event --event-file --folded --freq --inline --input --kernel --mem --no-inline --no-kernel --off-cpu --output --pid --symfs --title --weight",
        ),
        (
            "offcpu",
            "-a -o -p -t --all-cpus --call-graph --data-file --duration --folded --min-block --no-kernel --output --pid --report --symfs --tid --wall",
        ),
        (
            "probe",
            "-o -p --call-graph --duration --hist --json --output --pid --stacks --symfs --threshold",
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
