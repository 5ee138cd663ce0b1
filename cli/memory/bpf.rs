//! `hwprof memory` on the BPF engine (`hwprof_bpf::alloc`): the allocator calls are
//! paired per thread, summed per allocating stack and the live blocks kept by pointer,
//! all in the kernel; nothing crosses to user space per call. The programs run on the
//! hits of the recording's uprobe events (anchor events, as `probe`'s: they follow the
//! command's children and threads, or the `-p` process), inside a window of their own
//! ([`Gate`]). At the end the sums (or the blocks still allocated, with `--leaks`) are
//! written into the recording as samples of an `allocated-bytes` (`leaked-bytes`)
//! event: period = bytes, weight = allocations, callchain = the allocating user stack.

use std::collections::HashMap;
use std::io;

use hwprof_analysis::alloc::{ALLOCATED_BYTES, LEAKED_BYTES};
use hwprof_bpf::alloc::{AllocData, Allocs, Role};
use hwprof_bpf::{AllocOptions, Gate};
use hwprof_pmu::attr::Attr;
use hwprof_sampler::record::context;
use hwprof_sampler::recorder::{EXTRA_ID, Extra, Recorder, SUMMED_TIME};
use hwprof_sampler::session::Edge;
use hwprof_sampler::synth::{MadeSample, sample_record};

/// The programs, attached, as an [`Extra`] source of the recording.
pub struct Summed {
    allocs: Option<Allocs>,
    gate: Gate,
    /// A command target: its `exec` opens the window.
    command: bool,
    leaks: bool,
    min_age_ns: u64,
    gate_error: Option<hwprof_bpf::Error>,
    /// Said on stderr as the window of an attached process opens (memleak's
    /// "Attaching to pid N"): the target may go on.
    pub announce: Option<String>,
    /// When the window closed (CLOCK_MONOTONIC ns): the end the blocks' ages count to.
    closed: Option<u64>,
    /// What the kernel kept (after [`Extra::finish`]; its sites moved into the file).
    pub data: Option<AllocData>,
    /// The oldest block's age (ns) of each leaked stack, by process and callchain as
    /// written.
    pub ages: HashMap<(u32, Vec<u64>), u64>,
}

/// An allocator function's events in the recording: its role, then the indexes of its
/// uprobe and uretprobe (none for free).
pub type FuncEvents = (Role, usize, Option<usize>);

impl Summed {
    /// Loads the programs (nothing attached: a failure leaves the perf-event path).
    pub fn load() -> Result<Allocs, hwprof_bpf::Error> {
        Allocs::load(&AllocOptions::default())
    }

    /// Attaches `allocs` to anchor events of the recorder's uprobes (`events`).
    pub fn attach(
        mut allocs: Allocs,
        recorder: &mut Recorder,
        events: &[FuncEvents],
        command: bool,
        leaks: bool,
        min_age_ns: u64,
    ) -> anyhow::Result<Summed> {
        let gate = allocs.gate().ok_or(hwprof_bpf::Error::Missing {
            object: "alloc",
            what: "map",
            name: "gate".to_string(),
        })?;
        for &(role, entry, ret) in events {
            allocs.attach_entry_event(role, recorder.open_anchor(entry)?)?;
            if let Some(r) = ret {
                allocs.attach_return_event(role, recorder.open_anchor(r)?)?;
            }
        }
        Ok(Summed {
            allocs: Some(allocs),
            gate,
            command,
            leaks,
            min_age_ns,
            gate_error: None,
            announce: None,
            closed: None,
            data: None,
            ages: HashMap::new(),
        })
    }
}

impl Extra for Summed {
    fn name(&self) -> String {
        if self.leaks {
            LEAKED_BYTES
        } else {
            ALLOCATED_BYTES
        }
        .to_string()
    }

    fn start(&mut self, child: Option<i32>) -> io::Result<()> {
        // A held command counts from its exec (as its events, enabled on exec); an
        // attached process from the enabling edge.
        let r = match child.and_then(|c| u32::try_from(c).ok()) {
            Some(pid) if self.command => self.gate.open_at_exec(pid),
            _ => self.gate.close(),
        };
        r.map_err(io::Error::other)
    }

    fn edge(&mut self, edge: Edge) {
        let r = match edge {
            Edge::Start if self.command => Ok(()),
            Edge::Start => self.gate.open(),
            Edge::Enabled => {
                if let Some(a) = &self.announce {
                    eprintln!("{a}");
                }
                Ok(())
            }
            Edge::End => {
                self.closed = Some(hwprof_bpf::now_ns());
                self.gate.close()
            }
        };
        if let Err(e) = r {
            self.gate_error.get_or_insert(e);
        }
    }

    fn finish(
        &mut self,
        attr: &Attr,
        write: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        let Some(allocs) = self.allocs.take() else {
            return Ok(());
        };
        if let Some(e) = self.gate_error.take() {
            return Err(io::Error::other(format!(
                "opening or closing the BPF programs' window: {e}"
            )));
        }
        let end = self.closed.unwrap_or_else(hwprof_bpf::now_ns);
        let mut data = allocs
            .finish(end, if self.leaks { self.min_age_ns } else { 0 })
            .map_err(io::Error::other)?;
        let sites = std::mem::take(if self.leaks {
            &mut data.outstanding
        } else {
            &mut data.allocated
        });
        let mut chain: Vec<u64> = Vec::new();
        for s in &sites {
            chain.clear();
            if !s.user.is_empty() {
                chain.push(context::USER);
                chain.extend(&s.user);
            }
            let made = MadeSample {
                id: EXTRA_ID,
                kernel: false,
                ip: s.user.first().copied().unwrap_or(0),
                pid: s.tgid,
                tid: s.tgid,
                time: SUMMED_TIME,
                cpu: 0,
                period: s.bytes,
                weight: s.count,
                callchain: &chain,
            };
            if self.leaks {
                let age = self.ages.entry((s.tgid, chain.clone())).or_insert(0);
                *age = (*age).max(s.age_ns);
            }
            if let Some(rec) = sample_record(attr, &made) {
                write(&rec)?;
            }
        }
        self.data = Some(data);
        Ok(())
    }
}
