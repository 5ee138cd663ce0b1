//! `hwprof probe` on the BPF engine (`hwprof_bpf::latency`): one program per function,
//! attached to events of its uprobe and uretprobe as the session defined them in
//! tracefs (anchor events beside the session's: `Session::open_anchor`), so that it follows what they follow (the command's children and
//! threads, `-p` processes); calls are counted, paired and put in histograms in the
//! kernel, and only the slow calls (`--threshold`) cross to user space, through a BPF
//! ring buffer drained on a thread of their own while the target runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use hwprof_bpf::{Gate, Latency, LatencyData, LatencyDropped, LatencyEvent, LatencyOptions, Ring};
use hwprof_pmu::attr::types;
use hwprof_sampler::probe::Func;
use hwprof_sampler::record::context;
use hwprof_sampler::recorder::Recorder;
use hwprof_sampler::session::Edge;

/// One loaded program per function, in the functions' order.
pub struct InKernel {
    progs: Vec<Latency>,
}

impl InKernel {
    /// Loads a program per function (nothing attached yet).
    pub fn load(
        funcs: &[Func],
        threshold: Option<u64>,
        stacks: bool,
    ) -> Result<InKernel, hwprof_bpf::Error> {
        let o = LatencyOptions {
            threshold_ns: threshold,
            user_stacks: stacks,
            ..LatencyOptions::default()
        };
        let progs = funcs
            .iter()
            .map(|_| Latency::load(&o))
            .collect::<Result<_, _>>()?;
        Ok(InKernel { progs })
    }

    /// Why the opened events cannot carry the programs: a uprobe opened through the
    /// uprobe PMU (tracefs could not be written) is a trace event of its own per fd,
    /// so one attachment would not see every hit.
    pub fn unusable(recorder: &Recorder, funcs: &[Func]) -> Option<&'static str> {
        let shared = funcs.iter().flat_map(|f| [f.entry, f.ret]).all(|i| {
            recorder
                .entries()
                .get(i)
                .is_some_and(|e| e.attr.type_ == types::TRACEPOINT)
        });
        (!shared).then_some(
            "the uprobes could not be defined in tracefs (its uprobe_events), which the BPF engine attaches to",
        )
    }

    /// Attaches each function's programs to its uprobe's and uretprobe's trace events,
    /// their window closed (a held
    /// command's `exec` opens it; else [`Attached::edge`]). Then starts draining the
    /// ring buffers.
    pub fn attach(mut self, recorder: &mut Recorder, funcs: &[Func]) -> anyhow::Result<Attached> {
        let child = recorder.child_pid().and_then(|p| u32::try_from(p).ok());
        let mut gates = Vec::with_capacity(self.progs.len());
        for (p, f) in self.progs.iter_mut().zip(funcs) {
            let mut gate = p.gate().ok_or(hwprof_bpf::Error::Missing {
                object: "latency",
                what: "map",
                name: "gate".to_string(),
            })?;
            match child {
                Some(pid) => gate.open_at_exec(pid)?,
                None => gate.close()?,
            }
            gates.push(gate);
            // On events of their own beside the recording's (see open_anchor).
            p.attach_entry_event(recorder.open_anchor(f.entry)?)?;
            p.attach_return_event(recorder.open_anchor(f.ret)?)?;
        }
        let rings = self
            .progs
            .iter_mut()
            .map(Latency::ring)
            .collect::<Result<Vec<Ring>, _>>()?;
        let stop = Arc::new(AtomicBool::new(false));
        let drain = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || drain(rings, &stop))
        };
        Ok(Attached {
            progs: self.progs,
            gates,
            command: child.is_some(),
            gate_error: None,
            stop,
            drain,
        })
    }
}

/// The programs attached, their rings draining.
pub struct Attached {
    progs: Vec<Latency>,
    gates: Vec<Gate>,
    /// A held command (its `exec` opens the window).
    command: bool,
    gate_error: Option<hwprof_bpf::Error>,
    stop: Arc<AtomicBool>,
    drain: JoinHandle<Vec<Vec<LatencyEvent>>>,
}

impl Attached {
    /// Opens the programs' window as the events are enabled (a command's `exec` does
    /// that itself) and closes it as they are disabled: the programs run on every hit
    /// whether the events are enabled or not, and must count what perf events would.
    pub fn edge(&mut self, e: Edge) {
        for g in &mut self.gates {
            let r = match e {
                Edge::Start if self.command => Ok(()),
                Edge::Start => g.open(),
                Edge::Enabled => Ok(()),
                Edge::End => g.close(),
            };
            if let Err(err) = r {
                self.gate_error.get_or_insert(err);
            }
        }
    }

    /// Stops draining (after the last drain) and reads what each program measured.
    pub fn finish(self) -> anyhow::Result<Vec<LatencyData>> {
        self.stop.store(true, Ordering::Relaxed);
        let slow = self
            .drain
            .join()
            .map_err(|_| anyhow::anyhow!("the thread draining the BPF ring buffers failed"))?;
        if let Some(e) = self.gate_error {
            return Err(anyhow::anyhow!(
                "opening or closing the BPF programs' window: {e}"
            ));
        }
        self.progs
            .into_iter()
            .zip(slow)
            .map(|(p, s)| p.finish(s).map_err(anyhow::Error::from))
            .collect()
    }
}

/// Drains every ring into its list until `stop`, then once more.
fn drain(mut rings: Vec<Ring>, stop: &AtomicBool) -> Vec<Vec<LatencyEvent>> {
    let mut out: Vec<Vec<LatencyEvent>> = rings.iter().map(|_| Vec::new()).collect();
    loop {
        let last = stop.load(Ordering::Relaxed);
        for (r, o) in rings.iter_mut().zip(out.iter_mut()) {
            r.drain(|b| o.extend(LatencyEvent::from_bytes(b)));
        }
        if last {
            return out;
        }
        // The rings wake their fd on every record; a tick bounds how late a stop is
        // seen. One ring is waited on, the others drained at each wake-up.
        match rings.first() {
            Some(r) => {
                let _ = r.wait(Duration::from_millis(50));
            }
            None => return out,
        }
    }
}

/// A slow call's user stack as a perf callchain (`PERF_CONTEXT_USER`, then leaf first).
pub fn callchain(user: &[u64]) -> Vec<u64> {
    if user.is_empty() {
        return Vec::new();
    }
    std::iter::once(context::USER)
        .chain(user.iter().copied())
        .collect()
}

/// What did not fit the programs' maps, in one line (`None`: nothing).
pub fn dropped_line(all: &[LatencyDropped]) -> Option<String> {
    let sum = |f: fn(&LatencyDropped) -> u64| all.iter().map(f).sum::<u64>();
    let parts: Vec<String> = [
        (
            sum(|d| d.threads),
            "calls not timed: no room for their thread",
        ),
        (
            sum(|d| d.events),
            "slow calls not listed: the ring buffer was full",
        ),
        (
            sum(|d| d.slots),
            "durations left out of the percentiles: no room",
        ),
        (
            sum(|d| d.stacks.collisions + d.stacks.other),
            "slow calls' stacks lost: the stack map was full",
        ),
        (sum(|d| d.stacks.faults), "slow calls' stacks unreadable"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}
