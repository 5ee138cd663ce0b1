//! `hwprof offcpu` on the BPF engine (`hwprof_bpf::offcpu`): the blocked time is summed
//! per thread and stack in the kernel, and nothing crosses to user space per switch.
//! The recording around it keeps what the stacks need to be named (the side-band
//! records of a `dummy` event: mmaps, comms, forks; cpu-clock samples with `--wall`),
//! and the sums are written at its end as samples of an `offcpu-time` event (period:
//! ns off CPU; callchain: kernel then user stack), as `perf record --off-cpu` writes
//! them: the drawing reads them as it reads any recording, and perf reads the file.

use std::io;

use hwprof_analysis::offcpu::OFFCPU_TIME;
use hwprof_bpf::offcpu::{BlockKind, Dropped, OffCpu, OffCpuOptions};
use hwprof_pmu::attr::Attr;
use hwprof_sampler::record::context;
use hwprof_sampler::recorder::{EXTRA_ID, Extra, SUMMED_TIME};
use hwprof_sampler::session::Edge;
use hwprof_sampler::synth::{MadeSample, sample_record};
use hwprof_symbolize::kallsyms::Kallsyms;

/// The off-CPU program as an [`Extra`] source of the recording.
pub struct Summed {
    off: Option<OffCpu>,
    /// When the window opened (CLOCK_MONOTONIC ns).
    opened: u64,
    /// When the recording's events were disabled: the window's end (the program counts
    /// on until `finish`, which may come later on a loaded machine).
    closed: Option<u64>,
    /// A command target (traced from its `exec`; its wait for the go-ahead before it
    /// is not its own).
    command: bool,
    /// Waits in progress when the window opened, by thread (µs).
    pub early: Vec<(u32, u64)>,
    /// What did not fit the kernel's maps.
    pub dropped: Dropped,
    /// Samples written.
    pub written: u64,
}

impl Summed {
    /// Loads and attaches the program (before anything starts: a failure leaves the
    /// perf-event path to run instead).
    pub fn start(o: &OffCpuOptions, command: bool) -> Result<Summed, hwprof_bpf::Error> {
        Ok(Summed {
            off: Some(OffCpu::start(o)?),
            opened: 0,
            closed: None,
            command,
            early: Vec::new(),
            dropped: Dropped::default(),
            written: 0,
        })
    }
}

impl Extra for Summed {
    fn name(&self) -> String {
        OFFCPU_TIME.to_string()
    }

    fn start(&mut self, child: Option<i32>) -> io::Result<()> {
        let off = self
            .off
            .as_mut()
            .ok_or_else(|| io::Error::other("the off-CPU program is gone"))?;
        // A command target is traced; one that only bounds the time of an attach
        // (`-p PID -- sleep 5`) is not.
        if self.command
            && let Some(pid) = child.and_then(|c| u32::try_from(c).ok())
        {
            off.add_tgid(pid).map_err(io::Error::other)?;
        }
        self.opened = hwprof_bpf::now_ns();
        off.open_window(self.opened).map_err(io::Error::other)
    }

    fn edge(&mut self, edge: Edge) {
        if edge != Edge::End {
            return;
        }
        let now = hwprof_bpf::now_ns();
        // Closed in the kernel too: the blocks that end later count up to it. Should
        // that fail, `finish` still counts the ones in progress up to it.
        if let Some(off) = self.off.as_mut() {
            let _ = off.close_window(now);
        }
        self.closed = Some(now);
    }

    fn finish(
        &mut self,
        attr: &Attr,
        write: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        let Some(off) = self.off.take() else {
            return Ok(());
        };
        let end = self.closed.unwrap_or_else(hwprof_bpf::now_ns);
        let data = off.finish(end).map_err(io::Error::other)?;
        self.dropped = data.dropped;
        // Threads present when the window opened with no switch in it: off CPU all
        // through it when they sleep now (one that runs never switched).
        for &(tgid, tid) in &data.silent {
            if super::attach::sleeping(tgid, tid) {
                self.early
                    .push((tid, end.saturating_sub(self.opened) / 1000));
            }
        }
        let mut chain: Vec<u64> = Vec::new();
        // To cut the program's frame and the tracing glue off the kernel stacks.
        let mut kallsyms: Option<Kallsyms> = None;
        for b in &data.blocks {
            if b.kind == BlockKind::BeforeWindow && b.user.is_empty() && b.kernel.is_empty() {
                // No stack seen: a wait in progress when the window opened (its kernel
                // stack as /proc showed it then goes under `[blocked at start]`). A
                // command's only such wait is for the go-ahead to `exec`: not its.
                if !self.command {
                    self.early.push((b.tid, b.ns / 1000));
                }
                continue;
            }
            chain.clear();
            let kernel = match b.kernel.is_empty() {
                true => &b.kernel[..],
                false => {
                    let ks = kallsyms.get_or_insert_with(Kallsyms::load);
                    &b.kernel[ks.tracing_glue(&b.kernel)..]
                }
            };
            if !kernel.is_empty() {
                chain.push(context::KERNEL);
                chain.extend(kernel);
            }
            if !b.user.is_empty() {
                chain.push(context::USER);
                chain.extend(&b.user);
            }
            let ip = kernel.first().or(b.user.first()).copied().unwrap_or(0);
            let s = MadeSample {
                id: EXTRA_ID,
                kernel: !kernel.is_empty(),
                ip,
                pid: b.tgid,
                tid: b.tid,
                time: SUMMED_TIME,
                cpu: 0,
                period: b.ns,
                weight: b.count,
                callchain: &chain,
            };
            if let Some(rec) = sample_record(attr, &s) {
                write(&rec)?;
                self.written += 1;
            }
        }
        Ok(())
    }
}
