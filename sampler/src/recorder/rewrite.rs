//! The record-rewriting hook of the recorder: a [`Rewrite`] sees every record on its
//! way from the kernel to the sink and may write another in its place. The binary plugs
//! symbolize's online unwinder in here (sampler does not depend on symbolize): it keeps
//! the mappings from the side-band records and turns each DWARF sample (user registers
//! and stack) into one with an ordinary callchain ([`crate::record::rewrite`]).
//!
//! Two kinds of records are in play. The rings hold what the kernel wrote, under the
//! attrs the events were opened with ([`Recorder::entries`], decoded by
//! [`Recorder::decoder`]): a [`Rewrite`] reads those. The sink gets what the rewrite
//! makes of them, under the attrs [`Rewrite::events`] describes
//! ([`Recorder::rewritten_entries`], decoded by [`Recorder::rewritten_decoder`]): the
//! perf.data file's attr section (or pipe-mode `HEADER_ATTR` records) and its
//! `EVENT_DESC` say those.

use super::Recorder;
use crate::error::{Error, Result};
use crate::perfdata::writer::EventEntry;
use crate::record::{Decoder, peek_header};

/// Rewrites records between the kernel and the sink (see the module docs). Given to
/// [`Recorder::run_rewriting`]; the caller keeps it, and with it whatever the rewrite
/// counted (samples unwound, stacks cut short...), to read after the run.
pub trait Rewrite {
    /// Changes `events`, each event as the kernel opened it (its attr, name and sample
    /// ids, in the session's order), into what the records this rewrite writes follow.
    /// A rewrite that turns DWARF samples into callchains gives those events
    /// [`crate::record::rewrite::unwound_attr`].
    ///
    /// Called before anything is written, and by [`Recorder::rewritten_entries`]: it
    /// must give the same result every time. The events stay the same events in the
    /// same order (records find theirs by its ids, the file's groups by its index); a
    /// change must leave each event's records decodable: sample-id placement
    /// (`IDENTIFIER`, `ID`, `IP`, `TID`, `TIME`, `ADDR`, `STREAM_ID`, `CPU`) and
    /// `sample_id_all` as they were, since records passed on as they are keep them.
    fn events(&self, events: &mut [EventEntry]);

    /// One record's bytes (header included), as the kernel wrote it, in the order the
    /// sink gets them: first those synthesized for what existed before recording (the
    /// kernel's text, the mappings, comms and forks of running targets), then the
    /// rings' (MMAP2, COMM, FORK, EXIT, samples... in per-ring order). Returns
    /// [`Rewritten::AsIs`] to pass the record on unchanged, or [`Rewritten::Replaced`]
    /// after writing the record to pass on instead into `out` (empty on each call): one
    /// whole record whose header size is its length. Records the recorder adds itself
    /// (pipe mode's header records and `FINISHED_INIT`) do not come here.
    fn record(&mut self, record: &[u8], out: &mut Vec<u8>) -> Rewritten;
}

/// What [`Rewrite::record`] did with a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rewritten {
    /// Pass the record on as it is.
    AsIs,
    /// Pass on what the rewrite wrote into `out` instead.
    Replaced,
}

impl Recorder {
    /// The events as the output of [`Recorder::run_rewriting`] with `rewrite` describes
    /// them: [`Recorder::entries`] changed by [`Rewrite::events`].
    pub fn rewritten_entries(&self, rewrite: &dyn Rewrite) -> Vec<EventEntry> {
        let mut entries = self.entries.clone();
        rewrite.events(&mut entries);
        entries
    }

    /// A decoder for the records [`Recorder::run_rewriting`] with `rewrite` passes on
    /// (what a [`super::Sink::Records`] callback gets).
    pub fn rewritten_decoder(&self, rewrite: &dyn Rewrite) -> Decoder {
        decoder_of(&self.rewritten_entries(rewrite))
    }
}

/// A decoder for `entries`.
pub(super) fn decoder_of(entries: &[EventEntry]) -> Decoder {
    Decoder::new(
        &entries
            .iter()
            .map(|e| (e.attr.clone(), e.ids.clone()))
            .collect::<Vec<_>>(),
    )
}

/// Records on their way to the sink: through the rewrite, when there is one.
pub(super) struct Pass<'r> {
    rewrite: Option<&'r mut dyn Rewrite>,
    out: Vec<u8>,
}

impl<'r> Pass<'r> {
    pub(super) fn new(rewrite: Option<&'r mut dyn Rewrite>) -> Self {
        Pass {
            rewrite,
            out: Vec::new(),
        }
    }

    /// The bytes to pass on for `record`: itself, or what the rewrite wrote instead. A
    /// replacement that is not one whole record is [`Error::Malformed`].
    pub(super) fn apply<'b>(&'b mut self, record: &'b [u8]) -> Result<&'b [u8]> {
        let Some(rewrite) = self.rewrite.as_deref_mut() else {
            return Ok(record);
        };
        self.out.clear();
        match rewrite.record(record, &mut self.out) {
            Rewritten::AsIs => Ok(record),
            Rewritten::Replaced => {
                let size = peek_header(&self.out).map_or(0, |(_, _, s)| usize::from(s));
                if size < 8 || size != self.out.len() {
                    return Err(Error::malformed(
                        "rewritten record",
                        0,
                        format!(
                            "the record rewrite wrote {} bytes under a header of size {size}",
                            self.out.len()
                        ),
                    ));
                }
                Ok(&self.out)
            }
        }
    }
}
