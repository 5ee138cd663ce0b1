//! Samples from a source beside the rings, written at the end of a recording.

use std::io;

use hwprof_pmu::attr::{Attr, sample, types};

use crate::perfdata::writer::EventEntry;
use crate::synth::MADE_SAMPLE_BITS;

/// The sample id of an [`Extra`] event: far above the ids the kernel gives (a counter
/// from 1, one per event opened since boot).
pub const EXTRA_ID: u64 = 0xffff_ffff_0000_0001;

/// The time of samples that sum a whole recording (written by an [`Extra`] at its
/// end): after every record of it, so that each is named against its process's last
/// mappings (perf's `OFF_CPU_TIMESTAMP`).
pub const SUMMED_TIME: u64 = !0u64 << 32;

/// `PERF_COUNT_SW_BPF_OUTPUT`: the software event perf's `offcpu-time` is.
const SW_BPF_OUTPUT: u64 = 10;

/// A source of samples beside the kernel's rings: hwprof offcpu's BPF engine, whose
/// blocks summed in the kernel become samples of an `offcpu-time` event at the end of
/// the recording, as `perf record --off-cpu` writes them. The recorder adds its event
/// to the file's events, starts it with the target ([`Extra::start`]) and, once the
/// rings are drained and the events disabled, writes its samples
/// ([`Extra::finish`], built with [`crate::synth::sample_record`] on the attr
/// [`extra_attr`] gave) before finishing the file.
pub trait Extra {
    /// The event's name (`offcpu-time`).
    fn name(&self) -> String;

    /// Called once the target is set up and before it starts: `child` is the
    /// command's pid (held before `exec`), for a command target.
    fn start(&mut self, child: Option<i32>) -> io::Result<()>;

    /// Called at the window's edges as the recording's events are enabled and disabled
    /// ([`crate::session::Session::run_with_edges`]), between [`Extra::start`] and
    /// [`Extra::finish`]: where a source that keeps counting after the events stop
    /// marks the window's end. Nothing by default.
    fn edge(&mut self, _edge: crate::session::Edge) {}

    /// Called once the rings are drained: passes each of its records, whole, to
    /// `write`; `attr` is the event's ([`extra_attr`]).
    fn finish(
        &mut self,
        attr: &Attr,
        write: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<()>;
}

/// The attr of an [`Extra`] event in a recording whose first event is `first`: a
/// software `bpf-output` event whose samples carry ip, tid, time, id, period,
/// callchain and weight (what a sample sums: blocks, for `offcpu-time`), their sample id where `first`'s records have theirs. `None` when
/// `first`'s records carry no sample id (a recording of one event): the reader could
/// not tell the extra samples from the others.
pub fn extra_attr(first: &Attr) -> Option<Attr> {
    let ids = sample::ID | sample::IDENTIFIER;
    if first.sample_type & ids == 0 {
        return None;
    }
    let mut a = Attr::new(types::SOFTWARE, SW_BPF_OUTPUT);
    let layout = sample::IDENTIFIER | sample::IP | sample::TID | sample::TIME | sample::ID;
    a.sample_type = (first.sample_type & layout & MADE_SAMPLE_BITS)
        | (first.sample_type & sample::CPU)
        | sample::PERIOD
        | sample::CALLCHAIN
        | sample::WEIGHT;
    // The id must sit where `first`'s does: the bits before ID must be the same.
    let before_id = sample::IP | sample::TID | sample::TIME | sample::ADDR;
    if first.sample_type & sample::IDENTIFIER == 0
        && first.sample_type & before_id != a.sample_type & before_id
    {
        return None;
    }
    a.sample_id_all = first.sample_id_all;
    a.sample_period = 1;
    a.freq = false;
    a.disabled = true;
    Some(a)
}

/// The [`EventEntry`] of an extra event.
pub(crate) fn entry(extra: &dyn Extra, first: &Attr) -> Option<EventEntry> {
    Some(EventEntry {
        attr: extra_attr(first)?,
        name: extra.name(),
        ids: vec![EXTRA_ID],
    })
}
