//! `hwprof probe`: exact call counts and latencies of user functions, from uprobe /
//! uretprobe pairs. The session defines them in tracefs so that the command's children
//! and threads inherit them ([`hwprof_pmu::uprobe_events`]; the definitions are removed
//! when it ends), or opens them through the uprobe PMU without inheritance where tracefs
//! cannot be written.
//!
//! Flow: probe specs → one entry (`uprobe`) and one return (`uretprobe`) event per
//! function, each sampling every hit (period 1, IP|TID|TIME|ID, +CALLCHAIN with
//! `--stacks`) → a [`Session`] on the command or `-p` PIDs, drained in-process →
//! hits sorted by time and paired per thread (a stack per thread, for recursion) →
//! counts, a log2 histogram and percentiles, and the stacks of the slow calls, written
//! to stderr (as `stat`) or `-o FILE`, never into the command's stdout.

mod bpf;
mod calls;
mod print;
mod stacks;

use std::collections::HashMap;

use anyhow::anyhow;
use hwprof_pmu::stop::Stop;
use hwprof_pmu::target::Rules;
use hwprof_sampler::config::CallGraph;
use hwprof_sampler::probe::{self, Func, SpecError};
use hwprof_sampler::record::Body;
use hwprof_sampler::recorder::{RecordPlan, Recorder, RunError, Sink};
use hwprof_sampler::session::{SessionOptions, Target};
use hwprof_symbolize::unwind::{Arch, StreamUnwinder, stream};

use crate::args::{Engine, ProbeArgs, TargetWords};
use crate::error::{ExitWith, usage};
use crate::render::escape;

use calls::{Hit, pair};

/// Splits the probe arguments into functions, each with an entry and a return spec.
fn functions(specs: &[String]) -> anyhow::Result<(Vec<String>, Vec<Func>)> {
    probe::functions(specs).or_else(|e| match e {
        SpecError::NotUprobe(s) => usage(format!(
            "bad probe '{s}': expected uprobe:/path/bin:func or uretprobe:/path/bin:func"
        )),
        SpecError::NoFunction(s) => usage(format!(
            "bad probe '{s}': expected uprobe:/path/bin:func (the function is missing)"
        )),
        _ => usage("no probe given: e.g. `hwprof probe uprobe:/path/bin:func -- ./bin`"),
    })
}

/// Parses the events, turning parser errors into one line, with a note for stripped
/// binaries.
fn parse_events(
    events: &[String],
    funcs: &[Func],
    target: &Target,
) -> anyhow::Result<hwprof_pmu::EventList> {
    let mut enc = hwprof_pmu::Encoder::host();
    enc.set_processes(target.processes());
    enc.parse(&events.join(",")).map_err(|e| {
        let msg = e.to_string().replace('\n', " ");
        let note = funcs
            .iter()
            .filter_map(|f| f.target.rsplit_once(':').map(|(p, _)| p))
            .find(|p| {
                msg.contains("no function")
                    && hwprof_pmu::probe::locate(p, target.processes())
                        .is_ok_and(|f| hwprof_pmu::probe::is_stripped(&f.to_string_lossy()))
            })
            .map(|p| format!(" ({p} is stripped: only its dynamic symbols are known)"))
            .unwrap_or_default();
        ExitWith(crate::error::pmu_exit_code(&e), format!("{msg}{note}")).into()
    })
}

fn target_of(a: &ProbeArgs) -> anyhow::Result<Target> {
    let flags = a.record.flags();
    let words = TargetWords {
        several: "give one -p",
        missing: "nothing to probe: give a command after --, or -p PID (e.g. `hwprof probe uprobe:./app:work -- ./app`)",
    };
    let rules = Rules {
        live_ids: true,
        ..Rules::default()
    };
    crate::args::target(&flags, rules, &words)
}

/// Why opening failed, in one line; permission errors say what uprobes need: root
/// first (the uprobe PMU opens only for it, even on one's own processes), then ptrace
/// access to another user's process.
fn open_error(e: hwprof_sampler::Error, target: &Target) -> anyhow::Error {
    let errno = e.raw_os_error();
    if !matches!(errno, Some(libc::EACCES | libc::EPERM)) {
        // The error kept as a cause: what to do about its errno (EMFILE) is added.
        let msg = e.to_string().replace('\n', " ");
        return anyhow::Error::from(e).context(ExitWith(1, msg));
    }
    let event = match &e {
        hwprof_sampler::Error::Pmu(hwprof_pmu::Error::Open { event, .. }) => event.clone(),
        _ => "the uprobe".to_string(),
    };
    let why = std::io::Error::from_raw_os_error(errno.unwrap_or(libc::EACCES));
    let pids = target.processes();
    let whom = if pids.is_empty() {
        String::new()
    } else {
        format!(
            " on process {}",
            pids.iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(",")
        )
    };
    let foreign = pids
        .iter()
        .find_map(|&p| hwprof_pmu::target::foreign_owner(p).map(|o| (p, o)))
        .map(|(p, o)| {
            format!(
                "; process {p} also belongs to {o}, and reading another user's process needs CAP_SYS_PTRACE (root has it)"
            )
        })
        .unwrap_or_default();
    anyhow!(ExitWith(
        1,
        format!(
            "cannot open {event}{whom}: uprobes need root (the kernel's uprobe PMU opens only for CAP_SYS_ADMIN, whatever kernel.perf_event_paranoid says){foreign}: run hwprof as root ({why})"
        )
    ))
}

pub fn run(a: ProbeArgs, stop: &Stop) -> anyhow::Result<u8> {
    let threshold = a.threshold;
    if a.stacks && threshold.is_none() {
        return usage(
            "--stacks needs --threshold DURATION (the stacks of the calls slower than it)",
        );
    }
    if a.record.call_graph.is_some() && !a.stacks {
        return usage(
            "--call-graph says how --stacks records the slow calls' stacks: add --stacks (with --threshold)",
        );
    }
    let target = target_of(&a)?;
    let (specs, funcs) = functions(&a.probes)?;
    let mut list = parse_events(&specs, &funcs, &target)?;
    let dwarf_stack = match a.record.call_graph.as_deref().map(CallGraph::parse) {
        None | Some(Ok(CallGraph::Fp)) => None,
        Some(Ok(CallGraph::Dwarf { stack_size })) => Some(stack_size),
        Some(Ok(CallGraph::Lbr)) => {
            return usage(
                "--call-graph lbr does not apply to uprobes (LBR samples only hardware events): use fp or dwarf",
            );
        }
        Some(Err(e)) => return usage(format!("--call-graph: {e}")),
    };
    // JSON on stderr: notes would break it.
    let quiet = a.json && a.output.is_none();
    let mut in_kernel = engine(&a, &funcs, threshold, dwarf_stack.is_some(), quiet)?;
    probe::configure(
        &mut list,
        matches!(target, Target::Command(_)),
        a.stacks,
        dwarf_stack,
    );
    if in_kernel.is_some() {
        // The slow calls' times are the programs' (CLOCK_MONOTONIC): the side-band
        // records that name their stacks must be on the same clock.
        for e in &mut list.events {
            e.attr.use_clockid = true;
            e.attr.clockid = libc::CLOCK_MONOTONIC;
        }
    }
    // The result's output first: a wrong -o fails before anything runs.
    let mut sink = crate::destination::Sink::open(a.output.as_deref(), stop)?;
    let sopts = SessionOptions {
        data_pages: (1 << 20) / hwprof_pmu::sys::page_size().max(1),
        inherit: true,
        duration: a.record.duration,
    };
    // The attrs are set above; no records synthesized (the stacks read /proc instead).
    let mut rec = RecordPlan::new(list, target.clone());
    rec.configure = false;
    // DWARF stacks are unwound as they come, against the mappings the records describe:
    // those of running targets are synthesized first.
    rec.synthesize = dwarf_stack.is_some();
    rec.session = sopts;
    let mut recorder = Recorder::open(rec).map_err(|e| open_error(e.error, &target))?;
    for n in recorder.notices().iter().filter(|_| !quiet) {
        eprintln!("hwprof: note: {}", escape(n));
    }
    if let Some(why) = in_kernel
        .as_ref()
        .and_then(|_| bpf::InKernel::unusable(&recorder, &funcs))
    {
        if a.engine == Engine::Bpf {
            return Err(anyhow!(ExitWith(
                1,
                format!("--engine bpf: {why}; use --engine perf")
            )));
        }
        if !quiet {
            eprintln!(
                "hwprof: note: BPF engine not used: {why}: sampling every call with perf events instead"
            );
        }
        in_kernel = None;
    }
    let mut attached = match in_kernel {
        Some(k) => Some(
            k.attach(&mut recorder, &funcs)
                // The cause kept in the chain: what to do about its errno (EMFILE) is added.
                .map_err(|e| e.context("attaching the BPF programs"))?,
        ),
        None => None,
    };
    let mut event_of: HashMap<u64, usize> = HashMap::new();
    for (i, e) in recorder.entries().iter().enumerate() {
        for &id in &e.ids {
            event_of.insert(id, i);
        }
    }
    let decoder = recorder.decoder();
    let mut sym = stacks::Stacks::new(a.record.symfs.clone());
    if a.stacks {
        if let Target::Pids(p) = &target {
            for &pid in p {
                sym.read_proc(pid as u32);
            }
        }
    }
    let mut hits: Vec<Hit> = Vec::new();
    let mut unwinder = match (dwarf_stack, Arch::host()) {
        (Some(_), Some(arch)) => Some(StreamUnwinder::new(
            arch,
            true,
            hwprof_symbolize::Locator::from_env(a.record.symfs.clone()),
        )),
        (Some(_), None) => {
            return usage(format!(
                "--call-graph dwarf: unwinding is not supported on {}",
                std::env::consts::ARCH
            ));
        }
        _ => None,
    };
    let mut on_record = |bytes: &[u8]| {
        let Ok(rec) = decoder.decode(bytes, 0) else {
            return Ok(());
        };
        let unwound = unwinder.as_mut().and_then(|u| {
            u.record(&rec).map(|(frames, ending)| {
                let mut v = Vec::with_capacity(frames.len() + 1);
                stream::user_addrs(frames, ending, &mut v);
                v
            })
        });
        match rec.body {
            Body::Sample(s) => {
                let Some(ev) = s.id.and_then(|id| event_of.get(&id).copied()) else {
                    return Ok(());
                };
                hits.push(Hit {
                    time: s.time.unwrap_or(0),
                    pid: s.pid.unwrap_or(0),
                    tid: s.tid.unwrap_or(0),
                    event: ev,
                    stack: sym.hold(
                        unwound
                            .or_else(|| s.callchain.map(|c| c.to_vec()))
                            .unwrap_or_default(),
                    ),
                });
            }
            _ => sym.record(&rec),
        }
        Ok(())
    };
    let done = match attached.as_mut() {
        None => recorder.run(Sink::Records(&mut on_record), stop),
        Some(k) => recorder.run_with_edges(&mut on_record, stop, &mut |e| k.edge(e)),
    }
    .map_err(|e| source_of(*e).context("probing"))?;
    let (stats, code) = (&done.stats, done.exit_code());
    if let Some(what) = crate::sampling::lost_words(stats.lost, stats.lost_samples) {
        eprintln!(
            "hwprof: warning: {what} lost (the ring buffer was full): counts are lower bounds"
        );
    }
    let results = match attached {
        None => {
            sym.normalize(&hits);
            pair(&mut hits, &funcs, threshold)
        }
        Some(k) => measured(k.finish()?, &funcs, &mut sym),
    };
    print::print(sink.w(), &a, &funcs, &results, threshold, &mut sym)?;
    sink.commit()?;
    for n in sym.notices() {
        eprintln!("hwprof: note: {}", escape(&n));
    }
    if !quiet {
        for (f, r) in funcs.iter().zip(&results) {
            if let Some(n) = print::short_calls_note(&f.target, &r.durations) {
                eprintln!("hwprof: note: {}", escape(&n));
            }
            if r.too_deep > 0 {
                eprintln!(
                    "hwprof: note: {}: {} nested more than {} deep in their thread, not timed (the kernel sets no return probe on them)",
                    escape(&f.target),
                    crate::render::plural(r.too_deep, "call"),
                    calls::MAX_NESTING
                );
            }
        }
    }
    // The command's exit code, as `stat` and `record` pass it on (128 + signal when
    // killed); --duration ending it with SIGTERM is the plan, not a failure.
    Ok(code)
}

/// The BPF programs, loaded, when `--engine` and the options let them measure: `None`
/// for the perf-event path (asked for; needed for DWARF stacks; or, with `auto`, BPF
/// unavailable here, which a note says).
fn engine(
    a: &ProbeArgs,
    funcs: &[Func],
    threshold: Option<u64>,
    dwarf: bool,
    quiet: bool,
) -> anyhow::Result<Option<bpf::InKernel>> {
    match (a.engine, dwarf && a.stacks) {
        (Engine::Perf, _) | (Engine::Auto, true) => return Ok(None),
        (Engine::Bpf, true) => {
            return usage(
                "--engine bpf takes frame-pointer stacks: --call-graph dwarf copies each hit's stack to user space; use --engine perf",
            );
        }
        _ => {}
    }
    match bpf::InKernel::load(funcs, threshold, a.stacks) {
        Ok(k) => Ok(Some(k)),
        Err(e) if a.engine == Engine::Auto => {
            if !quiet {
                eprintln!(
                    "hwprof: note: {}: sampling every call with perf events instead (more overhead; --engine perf skips this attempt)",
                    escape(&e.to_string())
                );
            }
            Ok(None)
        }
        Err(e) => Err(anyhow!(ExitWith(1, format!("--engine bpf: {e}")))),
    }
}

/// The results of the BPF engine, each slow call's stack held in `sym` as a perf
/// callchain and named against its process at its time.
fn measured(
    data: Vec<hwprof_bpf::LatencyData>,
    funcs: &[Func],
    sym: &mut stacks::Stacks,
) -> Vec<calls::FuncResult> {
    if let Some(line) = bpf::dropped_line(&data.iter().map(|d| d.dropped).collect::<Vec<_>>()) {
        eprintln!("hwprof: warning: the BPF maps were full or stacks unreadable: {line}");
    }
    let mut hits: Vec<Hit> = Vec::new();
    let mut results = Vec::with_capacity(data.len());
    for (d, f) in data.into_iter().zip(funcs) {
        let mut slow = Vec::with_capacity(d.slow.len());
        for s in &d.slow {
            let stack = sym.hold(bpf::callchain(&s.user));
            hits.push(Hit {
                time: s.time,
                pid: s.tgid,
                tid: s.tid,
                event: f.entry,
                stack,
            });
            slow.push(calls::Slow {
                pid: s.tgid,
                tid: s.tid,
                duration_ns: s.ns,
                stack,
            });
        }
        results.push(calls::FuncResult {
            calls: d.calls,
            returns: d.returns,
            durations: calls::Durations {
                log2_us: d.log2_us.clone(),
                hist: d.histogram(),
            },
            slow,
            too_deep: d.dropped.depth,
        });
    }
    sym.normalize(&hits);
    results
}

/// The session's own error behind a recorder error (what `probing:` names), kept typed
/// so that what to do about its errno can be said.
fn source_of(e: RunError) -> anyhow::Error {
    match e {
        RunError::Session(e) | RunError::Synthesized(e) => e.into(),
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_specs_are_usage_errors_in_probe_words() {
        let e = functions(&["kprobe:x".into()]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "bad probe 'kprobe:x': expected uprobe:/path/bin:func or uretprobe:/path/bin:func"
        );
        assert!(e.downcast_ref::<crate::error::Usage>().is_some());
    }
}
