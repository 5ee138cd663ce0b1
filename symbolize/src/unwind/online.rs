//! Online unwinding: a [`Rewrite`] for [`hwprof_sampler::recorder::Recorder::run_rewriting`]
//! that unwinds each DWARF sample (user registers and stack copy) as the recorder reads
//! it from the rings, and writes it as a sample with an ordinary callchain instead: the
//! kernel's part, `PERF_CONTEXT_USER`, then the unwound user frames (and
//! [`super::stream::TRUNCATED_MARK`] when the unwinding stopped early). The file says
//! those events sample no registers or stacks ([`unwound_attr`]), so every reader,
//! perf included, takes the user stack from the callchain; a sample is some 100 bytes
//! plus 8 per frame instead of the 8 KiB stack copy.

use hwprof_pmu::attr::{Attr, sample as st};
use hwprof_sampler::perfdata::writer::EventEntry;
use hwprof_sampler::record::rewrite::{unwound_attr, unwound_sample};
use hwprof_sampler::record::{Body, Decoder};
use hwprof_sampler::recorder::{Rewrite, Rewritten};

use super::stream::{StreamUnwinder, user_addrs};
use super::{Arch, UnwindStats};

/// Whether an attr's samples carry user registers and stacks.
fn has_user_stacks(a: &Attr) -> bool {
    let both = st::REGS_USER | st::STACK_USER;
    a.sample_type & both == both
}

/// Unwinds DWARF samples while recording (see the module docs).
#[derive(Debug)]
pub struct OnlineUnwinder {
    /// The kernel's decoder ([`hwprof_sampler::recorder::Recorder::decoder`]).
    decoder: Decoder,
    stream: StreamUnwinder,
    addrs: Vec<u64>,
    /// Samples that could not be rewritten (left as the kernel wrote them: a file
    /// reader would misread them, so the recording should be redone).
    pub failed: u64,
}

impl OnlineUnwinder {
    /// An unwinder for the records `decoder` reads (the recorder's, the kernel's
    /// attrs), of processes of `arch` running now.
    pub fn new(decoder: Decoder, arch: Arch) -> OnlineUnwinder {
        OnlineUnwinder {
            decoder,
            stream: StreamUnwinder::new(arch, true, local_locator()),
            addrs: Vec::new(),
            failed: 0,
        }
    }

    /// Whether any of `events` records user stacks (so that unwinding applies).
    pub fn applies(events: &[EventEntry]) -> bool {
        events.iter().any(|e| has_user_stacks(&e.attr))
    }

    /// Stacks unwound, and how many were cut short.
    pub fn stats(&self) -> UnwindStats {
        self.stream.stats()
    }
}

/// Files as the recording machine has them: the processes' own (through
/// `/proc/PID/root`), the build-id cache and debug directories, never a debuginfod
/// download (which could stall the rings' reader).
pub(crate) fn local_locator() -> crate::Locator {
    let (mut config, _) = crate::locate::Config::from_env(None);
    config.debuginfod.urls.clear();
    crate::Locator::new(config)
}

impl Rewrite for OnlineUnwinder {
    fn events(&self, events: &mut [EventEntry]) {
        for e in events.iter_mut().filter(|e| has_user_stacks(&e.attr)) {
            e.attr = unwound_attr(&e.attr);
        }
    }

    fn record(&mut self, record: &[u8], out: &mut Vec<u8>) -> Rewritten {
        let Ok(rec) = self.decoder.decode(record, 0) else {
            return Rewritten::AsIs;
        };
        let attr = rec
            .attr
            .and_then(|i| self.decoder.attr(i))
            .filter(|a| has_user_stacks(a));
        let unwound = self.stream.record(&rec);
        let (Body::Sample(_), Some(attr)) = (&rec.body, attr) else {
            return Rewritten::AsIs;
        };
        // Every sample of such an event is rewritten (the file describes them without
        // registers and stacks), one without user registers (a kernel thread) with no
        // user part.
        self.addrs.clear();
        if let Some((frames, ending)) = unwound {
            user_addrs(frames, ending, &mut self.addrs);
        }
        match unwound_sample(attr, record, &self.addrs, out) {
            Ok(_) => Rewritten::Replaced,
            Err(_) => {
                self.failed += 1;
                out.clear();
                Rewritten::AsIs
            }
        }
    }
}
