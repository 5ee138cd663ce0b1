//! What the commands that record (record, flamegraph, offcpu) share over
//! [`hwprof_sampler::recorder`]: their target flags, `-F`/`-c`/`--call-graph`, the
//! perf.data output, and the recorder's notices, errors and lost-record warning as the
//! user reads them.

use anyhow::anyhow;
use hwprof_pmu::stop::Stop;
use hwprof_pmu::target::{Flags, Rules, Target};
use hwprof_sampler::config::{self, CallGraph, RecordOptions, Sampling};
use hwprof_sampler::outfile::Output;
use hwprof_sampler::recorder::{
    Diagnosis, OpenError, RecordPlan, Recorded, Recorder, Refused, Sink,
};
use hwprof_sampler::session::{Edge, SessionOptions};
use hwprof_symbolize::unwind::fp::{self, CutStacks, FpWatch, FramePointers};
use hwprof_symbolize::unwind::{Arch, online::OnlineUnwinder};

use crate::args::TargetWords;
use crate::error::{ExitWith, usage};

/// The target of a recording (`-p`, `-t`, `-a`/`-C` or a command), in record's words.
pub fn target(flags: &Flags<'_>) -> anyhow::Result<Target> {
    target_or(
        flags,
        "nothing to record: give a command after --, or -p PID, -t TID, or -a (e.g. `hwprof record -g -- ./app`)",
    )
}

/// [`target`], with `missing` the usage error when none is given (in the command's
/// words: what it traces, with an example).
pub fn target_or(flags: &Flags<'_>, missing: &'static str) -> anyhow::Result<Target> {
    let words = TargetWords {
        several: "choose one of -p, -t, -a/-C (with a command after --, they are recorded while it runs)",
        missing,
    };
    let rules = Rules {
        live_ids: true,
        ..Rules::default()
    };
    crate::args::target(flags, rules, &words)
}

/// `-F` (Hz or `max`) or `-c` (a period), checked.
pub fn sampling(freq: Option<&str>, count: Option<u64>) -> anyhow::Result<Sampling> {
    Ok(match (freq, count) {
        (Some(f), _) => Sampling::Freq(config::parse_freq(f).map_err(crate::error::Usage)?),
        (None, Some(0)) => return usage("-c must be at least 1"),
        (None, Some(c)) => Sampling::Period(c),
        (None, None) => Sampling::Default,
    })
}

/// `--call-graph MODE`, or `-g` (frame pointers).
pub fn call_graph(mode: Option<&str>, fp: bool) -> anyhow::Result<Option<CallGraph>> {
    Ok(match (mode, fp) {
        (Some(s), _) => Some(
            CallGraph::parse(s).map_err(|e| crate::error::Usage(format!("--call-graph: {e}")))?,
        ),
        (None, true) => Some(CallGraph::Fp),
        (None, false) => None,
    })
}

/// `--call-graph` of a command recorded and drawn at once (`flamegraph -- CMD`,
/// `offcpu -- CMD`): the user's `--call-graph` as given; without one, DWARF when the
/// program the command runs was built without frame pointers (its unwind tables say
/// so, [`fp::file_frame_pointers`]), with a note saying so, else frame pointers. Only a
/// command that is the target is judged: one that only bounds the time of `-p`/`-t`/`-a`
/// (`-p PID -- sleep 5`) is not what the stacks are of.
pub fn auto_call_graph(arg: Option<&str>, target: &Target) -> anyhow::Result<CallGraph> {
    if let Some(s) = arg {
        return CallGraph::parse(s)
            .map_err(|e| crate::error::Usage(format!("--call-graph: {e}")).into());
    }
    let Target::Command(command) = target else {
        return Ok(CallGraph::Fp);
    };
    let Some(program) = program_of(command) else {
        return Ok(CallGraph::Fp);
    };
    if fp::file_frame_pointers(&program) != FramePointers::Omitted {
        return Ok(CallGraph::Fp);
    }
    eprintln!(
        "hwprof: note: {} was built without frame pointers: recording its stacks with --call-graph dwarf (--call-graph fp keeps frame pointers)",
        program.display()
    );
    Ok(CallGraph::Dwarf {
        stack_size: config::DEFAULT_DWARF_STACK,
    })
}

/// The ELF program `command` runs: its first word found as `execvp` finds it (in
/// `PATH` unless it holds a `/`), and for a `#!` script its interpreter (`env NAME`
/// found in `PATH`). `None` when there is no such file.
pub fn program_of(command: &[String]) -> Option<std::path::PathBuf> {
    let first = command.first()?;
    let path = find_in_path(first)?;
    let head = hwprof_pmu::file::open(&path).ok().and_then(|(f, _)| {
        use std::io::Read;
        let mut buf = Vec::with_capacity(256);
        f.take(256).read_to_end(&mut buf).ok()?;
        Some(buf)
    })?;
    let Some(line) = head.strip_prefix(b"#!") else {
        return Some(path);
    };
    let line =
        String::from_utf8_lossy(line.split(|&b| b == b'\n').next().unwrap_or(&[])).into_owned();
    let mut words = line.split_whitespace();
    let interp = words.next()?;
    if interp.rsplit('/').next() == Some("env") {
        let name = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
        return find_in_path(name);
    }
    Some(std::path::PathBuf::from(interp))
}

/// A program's path as `execvp` finds it: as given when it holds a `/`, else the first
/// executable regular file of that name in `PATH`.
fn find_in_path(name: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if name.contains('/') {
        return Some(std::path::PathBuf::from(name));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Data pages per ring from `--mmap-pages`.
pub fn ring_pages(m: Option<&str>) -> anyhow::Result<usize> {
    Ok(config::ring_pages(m).map_err(crate::error::Usage)?)
}

/// The perf.data output: stdout for `-`, else a new file (0600, `.old` kept); when it
/// cannot seek, the target's stdout goes to stderr. A FIFO is waited for until `stop`.
pub fn open_output(path: &std::path::Path, stop: &Stop) -> anyhow::Result<Output> {
    if path.as_os_str() == "-" {
        return crate::destination::binary_stdout(stop);
    }
    let out = crate::destination::create(path, &crate::destination::PERF_DATA, stop)?;
    if !out.is_seekable() {
        crate::destination::keep_stdout_clean(&out)?;
    }
    Ok(out)
}

/// Records `rec` into `output`: notices on stderr (unless `quiet`), open errors in the
/// user's words (`branch_flag`: the flag that asked for branch stacks), and a warning
/// when records were lost. DWARF user stacks are unwound while recording (the file
/// holds callchains) unless `raw_stacks`; how many ended truncated is said when
/// `say_truncated` (a command that draws the file next says it there, once).
/// `announce`: said on stderr as the events are enabled (that an attached process is
/// traced from now on).
#[allow(clippy::too_many_arguments)]
pub fn record(
    rec: RecordPlan,
    output: Output,
    quiet: bool,
    branch_flag: Option<&str>,
    raw_stacks: bool,
    say_truncated: bool,
    announce: Option<&str>,
    stop: &Stop,
) -> anyhow::Result<Recorded> {
    let mut edges = |e: Edge| {
        if let (Edge::Enabled, Some(a)) = (e, announce) {
            eprintln!("{a}");
        }
    };
    let dwarf_size = match rec.options.call_graph {
        Some(CallGraph::Dwarf { stack_size }) => Some(stack_size),
        _ => None,
    };
    let recorder = open_recorder(rec, quiet, branch_flag)?;
    let unwind = !raw_stacks && OnlineUnwinder::applies(recorder.entries());
    let done = match (unwind, Arch::host()) {
        (true, Some(arch)) => {
            let mut u = OnlineUnwinder::new(recorder.decoder(), arch);
            let done =
                recorder.run_all(Sink::PerfData(output), stop, Some(&mut u), None, &mut edges)?;
            let st = u.stats();
            if st.truncated > 0 && !quiet && say_truncated {
                eprintln!(
                    "hwprof: note: {} of {} user stacks unwound while recording are truncated (they end in [truncated]): the stack copy ended before the stack's root; {}",
                    crate::render::thousands(st.truncated),
                    crate::render::thousands(st.unwound),
                    crate::render::larger_stack_advice(dwarf_size)
                );
            }
            if u.failed > 0 {
                eprintln!(
                    "hwprof: warning: {} could not be rewritten with their unwound stacks: the file may not read back; record again, or with --keep-raw-stacks",
                    crate::render::plural(u.failed, "sample")
                );
            }
            done
        }
        (true, None) => {
            note(
                quiet,
                &format!(
                    "unwinding while recording is not supported on {}: the raw user stacks are written (as with --keep-raw-stacks)",
                    std::env::consts::ARCH
                ),
            );
            recorder.run_all(Sink::PerfData(output), stop, None, None, &mut edges)?
        }
        (false, Some(arch)) if FpWatch::applies(recorder.entries()) => {
            let mut w = FpWatch::new(recorder.decoder());
            let done =
                recorder.run_all(Sink::PerfData(output), stop, Some(&mut w), None, &mut edges)?;
            if !quiet && let Some(c) = w.cut_here(arch) {
                note_cut_stacks(&c);
            }
            done
        }
        (false, _) => recorder.run_all(Sink::PerfData(output), stop, None, None, &mut edges)?,
    };
    warn_lost(&done);
    Ok(done)
}

/// [`record`] with `extra`'s samples at the end of the file
/// ([`Recorder::run_with_extra`]): no rewriting of the rings' records (their stacks
/// are frame pointers, or none).
pub fn record_with_extra(
    rec: RecordPlan,
    output: Output,
    extra: &mut dyn hwprof_sampler::recorder::Extra,
    stop: &Stop,
) -> anyhow::Result<Recorded> {
    let recorder = open_recorder(rec, false, None)?;
    let done = recorder.run_with_extra(output, stop, None, extra)?;
    warn_lost(&done);
    Ok(done)
}

/// Opens `rec`, its notices on stderr (unless `quiet`), open errors in the user's words.
pub(crate) fn open_recorder(
    rec: RecordPlan,
    quiet: bool,
    branch_flag: Option<&str>,
) -> anyhow::Result<Recorder> {
    match Recorder::open(rec) {
        Ok(r) => {
            r.notices().iter().for_each(|n| note(quiet, n));
            Ok(r)
        }
        Err(e) => {
            e.notices.iter().for_each(|n| note(quiet, n));
            Err(open_error(*e, branch_flag))
        }
    }
}

/// A note on stderr, unless `quiet`.
fn note(quiet: bool, n: &str) {
    if !quiet {
        eprintln!("hwprof: note: {}", crate::render::escape(n));
    }
}

/// Warns when the kernel lost records or samples.
pub(crate) fn warn_lost(done: &Recorded) {
    let s = &done.stats;
    if let Some(what) = lost_words(s.lost, s.lost_samples) {
        eprintln!(
            "hwprof: warning: {what} lost (the ring buffer was full): raise --mmap-pages or lower -F"
        );
    }
}

/// "N records and M samples", leaving out a zero count; `None` when both are.
pub(crate) fn lost_words(records: u64, samples: u64) -> Option<String> {
    let parts: Vec<String> = [(records, "record"), (samples, "sample")]
        .into_iter()
        .filter(|&(n, _)| n > 0)
        .map(|(n, what)| crate::render::plural(n, what))
        .collect();
    (!parts.is_empty()).then(|| parts.join(" and "))
}

/// Says which modules cut frame-pointer stacks short (built without frame pointers)
/// and what gives whole stacks: after recording (`record -g`) and when reading such a
/// recording (report, flamegraph).
pub fn note_cut_stacks(c: &CutStacks) {
    eprintln!("hwprof: note: {}", cut_stacks_words(c));
}

/// The words of [`note_cut_stacks`]: executables by path, libraries by file name.
pub fn cut_stacks_words(c: &CutStacks) -> String {
    let names: Vec<&str> = c
        .modules
        .iter()
        .map(|p| {
            let file = p.rsplit('/').next().unwrap_or(p);
            if file.contains(".so") {
                file
            } else {
                p.as_str()
            }
        })
        .collect();
    let share = 100.0 * c.short as f64 / c.samples.max(1) as f64;
    let who = if names.len() == 1 {
        "it was"
    } else {
        "these were"
    };
    format!(
        "stacks through {} stop after 1-2 frames ({share:.0}% of the samples): {who} built without frame pointers; record with --call-graph dwarf for whole stacks",
        names.join(", ")
    )
}

/// What to use instead of branch stacks for call stacks.
pub const INSTEAD_OF_BRANCHES: &str =
    "use -g (frame-pointer call stacks) or --call-graph dwarf instead";

/// Why the events did not open, in one line.
fn open_error(e: OpenError, branch_flag: Option<&str>) -> anyhow::Error {
    match e.diagnose(branch_flag.is_some()) {
        Diagnosis::NoBranchRecording { event } => anyhow!(
            "{}: cannot sample branch stacks on '{event}': this PMU does not record branches (Intel LBR, AMD BRS or LbrExtV2; VMs often do not pass them through): {INSTEAD_OF_BRANCHES}",
            branch_flag.unwrap_or_default()
        ),
        Diagnosis::CountingOnly { event, pmu } => anyhow!(
            "cannot sample '{event}': the '{pmu}' PMU refused a sampling event (PMUs such as msr, power and uncore only count): count it with `hwprof stat -e {event}`"
        ),
        Diagnosis::FreqAboveLimit { max } => anyhow!(
            "{}: is -F above the kernel's limit of {} Hz (/proc/sys/kernel/perf_event_max_sample_rate)?",
            e.error,
            max.map_or("?".into(), |m| m.to_string())
        ),
        // The PMU layer's message already names the event and says what to do.
        _ => e.error.into(),
    }
}

/// Refuses, before anything opens, what cannot record here
/// ([`RecordPlan::check`]; branch stacks with `--off-cpu`): a mistake in what was asked
/// is a usage error (exit 2), a limit of this machine exit 1.
pub fn check_events(
    rec: &RecordPlan,
    enc: &hwprof_pmu::Encoder,
    branch_flag: Option<&str>,
    off_cpu: bool,
) -> anyhow::Result<()> {
    let flag = branch_flag.unwrap_or_default();
    if off_cpu && branch_flag.is_some() {
        return usage(format!(
            "--off-cpu samples cpu-clock and sched:sched_switch, which cannot record branch stacks (only hardware events can): leave out {flag}; -g or --call-graph dwarf give call stacks"
        ));
    }
    let limit = |msg: String| Err(ExitWith(1, msg).into());
    match rec.check(enc.host_has_cpu_pmu(), branch_flag.is_some())? {
        None => Ok(()),
        Some(Refused::NoPmuForBranches) => limit(format!(
            "{flag}: branch-stack sampling (Intel LBR, AMD BRS or LbrExtV2) needs a hardware PMU that records branches, and this machine exposes none (usual in VMs and containers): {INSTEAD_OF_BRANCHES}"
        )),
        Some(Refused::BranchesNeedHardware {
            event,
            kind,
            has_pmu,
        }) => {
            let way_out = if has_pmu {
                format!("sample a hardware event (e.g. -e cycles {flag}), or {INSTEAD_OF_BRANCHES}")
            } else {
                format!("this machine has no hardware PMU either, so {INSTEAD_OF_BRANCHES}")
            };
            usage(format!(
                "{flag}: branch-stack sampling needs a hardware event, and '{event}' is {kind}: {way_out}"
            ))
        }
        Some(Refused::NoPmu { event }) => limit(format!(
            "{event}: not supported here: this kernel exposes no hardware PMU (usual in VMs and containers); sample a software event instead, e.g. -e cpu-clock"
        )),
    }
}

/// The flag that asked for branch stacks, as the user wrote it (`-b`, `-j FILTERS`,
/// `--call-graph lbr`), or `None` when none did.
pub fn branch_flag(filter: Option<&str>, any: bool, call_graph: Option<&str>) -> Option<String> {
    if let Some(j) = filter {
        return Some(format!("-j {j}"));
    }
    if any {
        return Some("-b".to_string());
    }
    call_graph
        .filter(|c| c.trim().eq_ignore_ascii_case("lbr"))
        .map(|_| "--call-graph lbr".to_string())
}

/// What `hwprof memory` and `hwprof io` say on stderr as the window of an attached
/// process opens (as memleak's "Attaching to pid N"): that it may go on. `None` for a
/// command (traced from its exec).
pub fn announce(
    target: &Target,
    what: &str,
    duration: Option<std::time::Duration>,
) -> Option<String> {
    let pids = target.processes();
    if pids.is_empty() {
        return None;
    }
    let list: Vec<String> = pids.iter().map(i32::to_string).collect();
    let until = match duration {
        Some(d) => format!("for {:.1} s, or until it exits or Ctrl-C", d.as_secs_f64()),
        None => "until it exits or Ctrl-C".to_string(),
    };
    Some(format!(
        "hwprof: tracing the {what} of {} {}: {until}",
        if pids.len() == 1 {
            "process"
        } else {
            "processes"
        },
        list.join(",")
    ))
}

/// Records `target` as `hwprof record -F 999 -g -q -o DATA` into `output`, for the
/// commands that record and then draw or export a CPU profile (`flamegraph -- CMD`,
/// `export -- CMD`): the events, `-F`/`-c`, `--call-graph` (frame pointers, or DWARF
/// for a program built without them), `--event-file` and `--duration` of `r`;
/// `weight`: sample the weight too. Returns the command's exit code. The truncated
/// stacks are said once, by the recording (it knows the copies' size).
pub fn record_profile<W>(
    r: &crate::args::RecordArgs<W>,
    target: Target,
    weight: bool,
    output: Output,
    stop: &Stop,
) -> anyhow::Result<u8> {
    let mut enc = crate::events::encoder(None, &r.event_file)?;
    enc.set_processes(target.processes());
    let default_event = r.events.is_empty();
    let freq = match (&r.freq, r.count) {
        (Some(f), _) => Some(f.as_str()),
        (None, Some(_)) => None,
        (None, None) => Some("999"),
    };
    let options = RecordOptions {
        sampling: sampling(freq, r.count)?,
        call_graph: Some(auto_call_graph(r.call_graph.as_deref(), &target)?),
        weight,
        default_event,
        ..RecordOptions::default()
    };
    let list = if default_event {
        hwprof_pmu::EventList::default()
    } else {
        crate::events::parse_all(&enc, &r.events)?
    };
    let mut rec = RecordPlan::new(list, target);
    rec.options = options;
    rec.session = SessionOptions {
        data_pages: ring_pages(None)?,
        inherit: true,
        duration: r.duration,
    };
    let branch_flag = branch_flag(None, false, r.call_graph.as_deref());
    check_events(&rec, &enc, branch_flag.as_deref(), false)?;
    Ok(record(
        rec,
        output,
        false,
        branch_flag.as_deref(),
        false,
        true,
        None,
        stop,
    )?
    .exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eopnotsupp() -> OpenError {
        OpenError {
            error: hwprof_sampler::Error::Pmu(hwprof_pmu::Error::Open {
                event: "cycles".into(),
                source: std::io::Error::from_raw_os_error(libc::EOPNOTSUPP),
                hint: "not supported".into(),
            }),
            events: hwprof_pmu::EventList::default(),
            notices: Vec::new(),
        }
    }

    #[test]
    fn cut_stacks_name_executables_by_path_and_libraries_by_file() {
        let c = CutStacks {
            modules: vec![
                "/usr/bin/gzip".into(),
                "/usr/lib/x86_64-linux-gnu/libz.so.1".into(),
            ],
            short: 970,
            samples: 1000,
        };
        assert_eq!(
            cut_stacks_words(&c),
            "stacks through /usr/bin/gzip, libz.so.1 stop after 1-2 frames (97% of the samples): these were built without frame pointers; record with --call-graph dwarf for whole stacks"
        );
        let one = CutStacks {
            modules: vec!["/usr/lib/libc.so.6".into()],
            short: 50,
            samples: 1000,
        };
        assert!(
            cut_stacks_words(&one)
                .contains("libc.so.6 stop after 1-2 frames (5% of the samples): it was built")
        );
    }

    #[test]
    fn eopnotsupp_with_branch_stacks_names_branch_recording() {
        let msg = open_error(eopnotsupp(), Some("-b")).to_string();
        assert!(
            msg.starts_with(
                "-b: cannot sample branch stacks on 'cycles': this PMU does not record branches"
            ),
            "{msg}"
        );
        assert!(msg.contains("--call-graph dwarf"), "{msg}");
        let msg = open_error(eopnotsupp(), None).to_string();
        assert!(!msg.contains("branch"), "{msg}");
    }
}
