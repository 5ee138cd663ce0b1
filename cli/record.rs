//! `hwprof record`: sample a command, PIDs, threads or CPUs into perf.data.
//!
//! Flow: parse events (default `cycles:P`, falling back to `cpu-clock` where there is no
//! hardware PMU) → set their attrs as perf does ([`hwprof_sampler::config`]) → open the
//! output (so a wrong or unwritable `-o` fails before any event opens or the target
//! runs) → open the session (the command is forked but held before exec) → synthesize
//! what already exists → let the target run while one drain thread streams ring records
//! into the file → build ids and header features → rename the finished file into place.
//!
//! `-o -` and an `-o` that cannot seek (a FIFO, a terminal) get perf's pipe mode: the
//! header features (all but BUILD_ID) and the tracing data are written first, and the
//! workload's stdout goes to stderr so that only perf.data reaches the pipe.

use std::collections::BTreeSet;

use anyhow::{Context, anyhow};
use hwprof_pmu::EventList;
use hwprof_pmu::event::Class;
use hwprof_pmu::stop::Stop;
use hwprof_pmu::target::{Flags, Rules};
use hwprof_sampler::config::{self, CallGraph, RecordOptions, Sampling};
use hwprof_sampler::output::Output;
use hwprof_sampler::perfdata::features::{ANON_GROUP, Features, GroupDesc, id as feature_id};
use hwprof_sampler::perfdata::tracing;
use hwprof_sampler::perfdata::writer::{EventEntry, Writer};
use hwprof_sampler::record::{Body, Decoder, kind};
use hwprof_sampler::session::{Session, SessionOptions, Target};
use hwprof_sampler::{buildid, synth};

use crate::args::{RecordArgs, TargetWords};
use crate::encode::{encoder, parse_all, print_json};
use crate::{ExitWith, usage};

/// perf's default ring size: 512 KiB of data per ring.
const DEFAULT_RING_BYTES: usize = 512 << 10;

pub fn run(mut a: RecordArgs, stop: &Stop) -> anyhow::Result<u8> {
    if a.off_cpu {
        if !a.events.is_empty() || a.freq.is_some() || a.count.is_some() {
            return usage(
                "--off-cpu records its own events (cpu-clock at 4000 Hz and every sched:sched_switch): leave out -e, -F and -c",
            );
        }
        // Every switch (period 1) and cpu-clock at its default frequency, as `hwprof
        // offcpu` records them; callchains are the point.
        a.events = vec!["sched:sched_switch".to_string(), "cpu-clock".to_string()];
        a.switch_events = true;
        if a.call_graph.is_none() {
            a.callgraph_fp = true;
        }
    }
    let target = target_of(&a)?;
    let enc = encoder(None, &a.event_file)?;
    let default_event = a.events.is_empty();
    // Options are checked before anything is said or opened.
    let mut opts = record_options(&a, &target, default_event)?;
    let data_pages = ring_pages(a.mmap_pages.as_deref())?;
    // The output before anything opens or runs: a wrong -o costs nothing.
    let output = if a.dry_run {
        None
    } else {
        Some(open_output(&a.output)?)
    };
    let has_pmu = enc.host_has_cpu_pmu();
    let branch_flag = branch_flag(&a);
    let mut list = if default_event {
        if has_pmu {
            enc.parse("cycles:P")?
        } else {
            if let Some(flag) = branch_flag.as_deref().filter(|_| !a.dry_run) {
                // Refused before the note: the fallback to cpu-clock cannot help here.
                return Err(no_pmu_for_branches(flag));
            }
            notice(
                &a,
                "no hardware PMU here (cycles is not supported in this VM or container); sampling cpu-clock instead",
            );
            enc.parse("cpu-clock")?
        }
    } else {
        parse_all(&enc, &a.events)?
    };
    // --dry-run shows the attrs whatever they are; it opens nothing.
    if let Some(flag) = branch_flag.as_deref().filter(|_| !a.dry_run) {
        check_branch_events(&a, flag, &list, default_event, has_pmu)?;
    }
    if !default_event && !has_pmu && !a.dry_run {
        if let Some(e) = list.events.iter().find(|e| e.class == Class::Core) {
            return Err(ExitWith(
                1,
                format!(
                    "{}: not supported here: this kernel exposes no hardware PMU (usual in VMs and containers); sample a software event instead, e.g. -e cpu-clock",
                    e.name
                ),
            )
            .into());
        }
    }
    config::configure(&mut list, &opts);
    if a.dry_run {
        print_json(&list)?;
        return Ok(0);
    }
    let sopts = SessionOptions {
        data_pages,
        inherit: !a.no_inherit,
        duration: a.duration,
    };
    // perf's fallbacks, each at most once: the default cycles becomes cpu-clock where
    // there is no hardware PMU, and events the user wrote without modifiers sample user
    // space only where perf_event_paranoid forbids the kernel.
    // Where there is no hardware PMU the default event is cpu-clock already (and said so).
    let mut tried_cpu_clock = default_event && !has_pmu;
    let mut tried_user_only = false;
    let session = loop {
        let e = match Session::open(&list, target.clone(), sopts.clone()) {
            Ok(s) => break s,
            Err(e) => e,
        };
        let errno = e.raw_os_error();
        if default_event
            && !tried_cpu_clock
            && matches!(errno, Some(libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV))
        {
            tried_cpu_clock = true;
            notice(
                &a,
                "cycles is not supported here (no hardware PMU); sampling cpu-clock instead",
            );
            list = enc.parse("cpu-clock")?;
            opts.default_event = true;
            config::configure(&mut list, &opts);
            continue;
        }
        // Not for uprobes: their PMU wants root whatever perf_event_paranoid says, so the
        // retry would only add a misleading note before the same error.
        if !tried_user_only
            && matches!(errno, Some(libc::EACCES | libc::EPERM))
            && !matches!(target, Target::SystemWide { .. })
            && list.events.iter().all(|e| e.class != Class::Uprobe)
            && list
                .events
                .iter()
                .all(|e| !e.explicit_mods && !e.attr.exclude_kernel)
        {
            tried_user_only = true;
            for e in &mut list.events {
                e.attr.exclude_kernel = true;
                e.attr.exclude_hv = true;
                e.name.push_str(":u");
            }
            let paranoid = hwprof_pmu::sysfs::paranoid().map_or("?".into(), |p| p.to_string());
            notice(
                &a,
                &format!(
                    "kernel.perf_event_paranoid = {paranoid} forbids kernel samples: sampling user space only ({})",
                    list.events
                        .iter()
                        .map(|e| e.name.as_str())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            );
            continue;
        }
        return Err(open_error(e, &list, branch_flag.as_deref()));
    };

    for n in session.notices() {
        notice(&a, n);
    }
    // Read now: the formats of uprobes defined for this session disappear with it.
    let tracing = tracing_data(&list, &session)?;
    let attrs = session.attrs();
    let ids = session.ids();
    let entries: Vec<EventEntry> = list
        .events
        .iter()
        .zip(attrs.iter().zip(ids.iter()))
        .map(|(e, (attr, ids))| EventEntry {
            attr: attr.clone(),
            name: e.name.clone(),
            ids: ids.clone(),
        })
        .collect();
    let mut features = Features::for_this_machine(&cmdline(), &[], group_desc(&list));
    // EVENT_DESC is left to the writer, which fills it from the events it was created with.
    if let Some(t) = tracing {
        features.other.push((feature_id::TRACING_DATA, t));
    }
    let Some(output) = output else {
        return Err(anyhow!("no output opened"));
    };
    let mut writer = if output.is_seekable() && output.path() != std::path::Path::new("-") {
        Writer::new(output, entries.clone())
    } else {
        Writer::pipe(output, entries.clone(), &features)
    }
    .with_context(|| format!("cannot write {}", a.output.display()))?;
    let decoder = Decoder::new(
        &entries
            .iter()
            .map(|e| (e.attr.clone(), e.ids.clone()))
            .collect::<Vec<_>>(),
    );

    // What exists before the first sample: the kernel's text, and for running targets
    // their threads and mappings.
    let mut dsos: BTreeSet<(i32, bool, String)> = BTreeSet::new();
    let first = &attrs[0];
    let mut pre: Vec<Vec<u8>> = Vec::new();
    pre.extend(synth::kernel_mmap(first));
    match &target {
        Target::Pids(p) | Target::Tids(p) => {
            for &pid in p {
                pre.extend(synth::process(first, pid));
            }
        }
        Target::SystemWide { .. } => pre.extend(synth::all_processes(first)),
        _ => {}
    }
    for r in &pre {
        note_dso(&decoder, r, &mut dsos);
        writer.write_record(r)?;
    }
    writer.finished_init()?;

    let mut sink_err: Option<anyhow::Error> = None;
    let stats = session.run(stop, |bytes: &[u8]| {
        note_dso(&decoder, bytes, &mut dsos);
        if let Err(e) = writer.write_record(bytes) {
            let msg = e.to_string();
            sink_err.get_or_insert(e.into());
            return Err(std::io::Error::other(msg));
        }
        Ok(())
    });
    let stats = match (stats, sink_err) {
        (_, Some(e)) => return Err(e.context(format!("writing {}", a.output.display()))),
        (Ok(s), None) => s,
        (Err(e), None) => return Err(e).context("recording"),
    };

    if !writer.is_pipe() {
        features.build_ids = buildid::build_id_entries(dsos);
    }
    let pipe = writer.is_pipe();
    let bytes = writer.data_size();
    writer
        .finish(&features)
        .with_context(|| format!("finishing {}", a.output.display()))?;

    if stats.lost > 0 || stats.lost_samples > 0 {
        eprintln!(
            "hwprof: warning: {} and {} lost (the ring buffer was full): raise --mmap-pages or lower -F",
            crate::render::plural(stats.lost, "record"),
            crate::render::plural(stats.lost_samples, "sample")
        );
    }
    if !a.quiet && !a.no_summary {
        eprintln!(
            "[ hwprof record: {}, {} lost, {:.3} MB written to {}{} ]",
            crate::render::plural(stats.samples, "sample"),
            stats.lost + stats.lost_samples,
            bytes as f64 / 1e6,
            if a.output.as_os_str() == "-" {
                "stdout".to_string()
            } else {
                a.output.display().to_string()
            },
            if pipe { " (pipe mode)" } else { "" }
        );
    }
    Ok(match stats.exit {
        // --duration ended the command with SIGTERM: that is the recording's plan, not
        // the command failing.
        Some(x) if a.duration.is_some() && x.signal == Some(libc::SIGTERM) => 0,
        Some(x) => u8::try_from(x.code).unwrap_or(1),
        None => 0,
    })
}

/// The perf.data output: stdout for `-`, else [`Output::create`] (0600, `.old` kept).
fn open_output(path: &std::path::Path) -> anyhow::Result<Output> {
    if path.as_os_str() == "-" {
        return crate::outfile::binary_stdout();
    }
    let out = crate::outfile::create(path, &crate::outfile::PERF_DATA)?;
    if !out.is_seekable() {
        crate::outfile::keep_stdout_clean(&out)?;
    }
    Ok(out)
}

fn notice(a: &RecordArgs, msg: &str) {
    if !a.quiet && !a.dry_run {
        eprintln!("hwprof: note: {msg}");
    }
}

fn target_of(a: &RecordArgs) -> anyhow::Result<Target> {
    let flags = Flags {
        command: &a.command,
        pid: a.pid.as_deref(),
        tid: a.tid.as_deref(),
        all_cpus: a.all_cpus,
        cpus: a.cpus.as_deref(),
    };
    let conflict = "give one target: a command after --, or -p, -t, or -a/-C";
    let words = TargetWords {
        several: conflict,
        command_and: conflict,
        missing: "nothing to record: give a command after --, or -p PID, -t TID, or -a (e.g. `hwprof record -g -- ./app`)",
    };
    let rules = Rules {
        live_ids: true,
        ..Rules::default()
    };
    crate::args::target(&flags, rules, &words)
}

fn record_options(
    a: &RecordArgs,
    target: &Target,
    default_event: bool,
) -> anyhow::Result<RecordOptions> {
    let sampling = match (&a.freq, a.count) {
        (Some(f), _) => {
            let max = config::max_sample_rate();
            let hz = if f == "max" {
                max.unwrap_or(config::DEFAULT_FREQ)
            } else {
                f.parse::<u64>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| crate::Usage(format!("bad -F value '{f}': give Hz or max")))?
            };
            if let Some(m) = max.filter(|&m| hz > m) {
                return usage(format!(
                    "-F {hz} is above the kernel's limit of {m} Hz: use -F {m} or less, or raise /proc/sys/kernel/perf_event_max_sample_rate"
                ));
            }
            Sampling::Freq(hz)
        }
        (None, Some(0)) => return usage("-c must be at least 1"),
        (None, Some(c)) => Sampling::Period(c),
        (None, None) => Sampling::Default,
    };
    let call_graph = match (&a.call_graph, a.callgraph_fp) {
        (Some(s), _) => {
            Some(CallGraph::parse(s).map_err(|e| crate::Usage(format!("--call-graph: {e}")))?)
        }
        (None, true) => Some(CallGraph::Fp),
        (None, false) => None,
    };
    let branch_filter = match (&a.branch_filter, a.branch_any) {
        (Some(j), _) => {
            Some(config::parse_branch_filter(j).map_err(|e| crate::Usage(format!("-j: {e}")))?)
        }
        (None, true) => Some(hwprof_pmu::attr::branch::ANY),
        (None, false) => None,
    };
    Ok(RecordOptions {
        sampling,
        call_graph,
        branch_filter,
        data: a.data,
        weight: a.weight,
        system_wide: matches!(target, Target::SystemWide { .. }),
        command: matches!(target, Target::Command(_)),
        inherit: !a.no_inherit,
        default_event,
        switch_events: a.switch_events,
        ..RecordOptions::default()
    })
}

/// Data pages per ring from `-m`: a power-of-two page count, or a size rounded up to one.
fn ring_pages(m: Option<&str>) -> anyhow::Result<usize> {
    let page = hwprof_pmu::sys::page_size();
    let Some(m) = m else {
        return Ok((DEFAULT_RING_BYTES / page).max(1));
    };
    if let Ok(n) = m.parse::<usize>() {
        if n == 0 || !n.is_power_of_two() {
            return usage(format!(
                "--mmap-pages {m}: the page count must be a power of two (1, 2, 4, ... 128)"
            ));
        }
        return Ok(n);
    }
    let bytes = config::parse_size(m)
        .ok_or_else(|| crate::Usage(format!("bad --mmap-pages '{m}' (e.g. 128, 512K, 4M)")))?;
    Ok(((bytes as usize).div_ceil(page)).max(1).next_power_of_two())
}

/// The flag that asked for branch stacks, as the user wrote it (`-b`, `-j FILTERS`,
/// `--call-graph lbr`), or `None` when none did.
fn branch_flag(a: &RecordArgs) -> Option<String> {
    if let Some(j) = &a.branch_filter {
        return Some(format!("-j {j}"));
    }
    if a.branch_any {
        return Some("-b".to_string());
    }
    a.call_graph
        .as_deref()
        .filter(|c| c.trim().eq_ignore_ascii_case("lbr"))
        .map(|_| "--call-graph lbr".to_string())
}

/// What to use instead of branch stacks for call stacks.
const INSTEAD_OF_BRANCHES: &str =
    "use -g (frame-pointer call stacks) or --call-graph dwarf instead";

/// Branch stacks asked for on a machine without a hardware PMU (perf: "PMU Hardware
/// or event type doesn't support branch stack sampling"): a limit of this machine, so
/// exit 1, as for `-e cycles` here.
fn no_pmu_for_branches(flag: &str) -> anyhow::Error {
    ExitWith(
        1,
        format!(
            "{flag}: branch-stack sampling (Intel LBR, AMD BRS or LbrExtV2) needs a hardware PMU that records branches, and this machine exposes none (usual in VMs and containers): {INSTEAD_OF_BRANCHES}"
        ),
    )
    .into()
}

/// Refuses, before anything opens, branch stacks that cannot work: on events that never
/// have them (software, tracepoint, breakpoint, uprobe: a usage error, exit 2) or on a
/// machine without a hardware PMU (exit 1). The kernel would only say EOPNOTSUPP.
fn check_branch_events(
    a: &RecordArgs,
    flag: &str,
    list: &EventList,
    default_event: bool,
    has_pmu: bool,
) -> anyhow::Result<()> {
    let kind = |c: Class| match c {
        Class::Software => Some("a software event"),
        Class::Tracepoint => Some("a tracepoint"),
        Class::Breakpoint => Some("a breakpoint"),
        Class::Uprobe => Some("a uprobe"),
        Class::Core | Class::Other => None,
    };
    if a.off_cpu {
        return usage(format!(
            "--off-cpu samples cpu-clock and sched:sched_switch, which cannot record branch stacks (only hardware events can): leave out {flag}; -g or --call-graph dwarf give call stacks"
        ));
    }
    // The default event is the machine's choice (cpu-clock only without a PMU).
    let named = list.events.iter().filter(|_| !default_event);
    if let Some((e, k)) = named.filter_map(|e| kind(e.class).map(|k| (e, k))).next() {
        let way_out = if has_pmu {
            format!("sample a hardware event (e.g. -e cycles {flag}), or {INSTEAD_OF_BRANCHES}")
        } else {
            format!("this machine has no hardware PMU either, so {INSTEAD_OF_BRANCHES}")
        };
        return usage(format!(
            "{flag}: branch-stack sampling needs a hardware event, and '{}' is {k}: {way_out}",
            e.name
        ));
    }
    if !has_pmu {
        return Err(no_pmu_for_branches(flag));
    }
    Ok(())
}

fn open_error(
    e: hwprof_sampler::Error,
    list: &EventList,
    branch_flag: Option<&str>,
) -> anyhow::Error {
    let failed = match &e {
        hwprof_sampler::Error::Pmu(hwprof_pmu::Error::Open { event, .. }) => Some(event.as_str()),
        _ => None,
    };
    let event = failed
        .or_else(|| list.events.first().map(|e| e.name.as_str()))
        .unwrap_or_default()
        .to_string();
    // A PMU that cannot record branches answers EOPNOTSUPP: say that, not "not supported".
    if let (Some(flag), Some(libc::EOPNOTSUPP)) = (branch_flag, e.raw_os_error()) {
        return anyhow!(
            "{flag}: cannot sample branch stacks on '{event}': this PMU does not record branches (Intel LBR, AMD BRS or LbrExtV2; VMs often do not pass them through): {INSTEAD_OF_BRANCHES}"
        );
    }
    if e.raw_os_error() == Some(libc::EINVAL) {
        // PMUs other than the CPU's (msr, power, uncore...) mostly only count: the
        // kernel's EINVAL for a sampling event there is that, not a bad config.
        if let Some(ev) = list
            .events
            .iter()
            .find(|x| x.name == event && x.class == Class::Other)
        {
            return anyhow!(
                "cannot sample '{event}': the '{}' PMU refused a sampling event (PMUs such as msr, power and uncore only count): count it with `hwprof stat -e {event}`",
                ev.pmu
            );
        }
        // A frequency above the kernel's limit (refused before opening when the limit
        // is readable).
        let max = config::max_sample_rate();
        if list
            .events
            .iter()
            .any(|e| e.attr.freq && max.is_none_or(|m| e.attr.sample_period > m))
        {
            return anyhow!(
                "{e}: is -F above the kernel's limit of {} Hz (/proc/sys/kernel/perf_event_max_sample_rate)?",
                max.map_or("?".into(), |m| m.to_string())
            );
        }
    }
    // The PMU layer's message already names the event and says what to do.
    anyhow!(e)
}

/// Remembers the DSO a MMAP/MMAP2 record maps, for the BUILD_ID feature.
fn note_dso(dec: &Decoder, bytes: &[u8], dsos: &mut BTreeSet<(i32, bool, String)>) {
    let Some((ty, misc, _)) = hwprof_sampler::record::peek_header(bytes) else {
        return;
    };
    if ty != kind::MMAP && ty != kind::MMAP2 {
        return;
    }
    let kernel = misc & 7 == 1; // PERF_RECORD_MISC_KERNEL
    let (pid, name) = match dec.decode(bytes, 0).map(|r| r.body) {
        Ok(Body::Mmap(m)) => (
            m.pid as i32,
            String::from_utf8_lossy(m.filename).into_owned(),
        ),
        Ok(Body::Mmap2(m)) => (
            m.pid as i32,
            String::from_utf8_lossy(m.filename).into_owned(),
        ),
        _ => return,
    };
    if kernel || name.starts_with('/') {
        let name = if kernel {
            "[kernel.kallsyms]".to_string()
        } else {
            name
        };
        dsos.insert((if kernel { -1 } else { pid }, kernel, name));
    }
}

fn group_desc(list: &EventList) -> Option<Vec<GroupDesc>> {
    let groups: Vec<GroupDesc> = list
        .groups()
        .into_iter()
        .filter(|g| g.len() > 1)
        .map(|g| GroupDesc {
            // perf names groups written without a name this way.
            name: ANON_GROUP.to_string(),
            leader_idx: g.start as u32,
            nr_members: g.len() as u32,
        })
        .collect();
    (!groups.is_empty()).then_some(groups)
}

fn cmdline() -> Vec<String> {
    let mut v: Vec<String> = std::env::args().collect();
    if let Some(first) = v.first_mut() {
        if let Ok(exe) = std::env::current_exe() {
            *first = exe.display().to_string();
        }
    }
    v
}

/// The tracefs formats of the recorded tracepoints (perf needs them to read the file),
/// including the uprobes the session opened as tracepoints on its own definitions.
fn tracing_data(list: &EventList, session: &Session) -> anyhow::Result<Option<Vec<u8>>> {
    let mut tps: Vec<(&str, &str)> = list
        .events
        .iter()
        .filter(|e| e.class == Class::Tracepoint)
        .filter_map(|e| {
            // "sys:name", or "sys:name:mods".
            let (sys, rest) = e.name.split_once(':')?;
            Some((sys, rest.split(':').next().unwrap_or(rest)))
        })
        .collect();
    let defs = session.uprobe_definitions();
    if let Some(d) = defs {
        tps.extend(d.tracepoints().map(|(_, sys, name)| (sys, name)));
    }
    if tps.is_empty() {
        return Ok(None);
    }
    let root = match defs {
        Some(d) => d.tracefs().to_path_buf(),
        None => hwprof_pmu::sysfs::tracefs()?,
    };
    Ok(Some(tracing::tracing_data(&root, &tps)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eopnotsupp_with_branch_stacks_names_branch_recording() {
        let e = hwprof_sampler::Error::Pmu(hwprof_pmu::Error::Open {
            event: "cycles".into(),
            source: std::io::Error::from_raw_os_error(libc::EOPNOTSUPP),
            hint: "not supported".into(),
        });
        let msg = open_error(e, &EventList::default(), Some("-b")).to_string();
        assert!(
            msg.starts_with(
                "-b: cannot sample branch stacks on 'cycles': this PMU does not record branches"
            ),
            "{msg}"
        );
        assert!(msg.contains("--call-graph dwarf"), "{msg}");
        let e = hwprof_sampler::Error::Pmu(hwprof_pmu::Error::Open {
            event: "cycles".into(),
            source: std::io::Error::from_raw_os_error(libc::EOPNOTSUPP),
            hint: "not supported".into(),
        });
        let msg = open_error(e, &EventList::default(), None).to_string();
        assert!(!msg.contains("branch"), "{msg}");
    }
}
