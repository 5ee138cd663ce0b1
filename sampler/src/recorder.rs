//! The recorder: record a target into perf.data (or hand its records to a live consumer)
//! in one call, as `perf record` does. Every hwprof command that samples (record,
//! flamegraph, offcpu, probe) records through here.
//!
//! A [`RecordPlan`] describes the session: the events (or perf's default), how they
//! sample ([`RecordOptions`]: frequency or period, callchains, branch stacks, side-band
//! records such as context switches), the [`Target`] and the ring size
//! ([`SessionOptions`]). [`Recorder::open`] opens it with perf's fallbacks, each at most
//! once:
//!
//! - the default event is `cycles:P`, or `cpu-clock` where there is no hardware PMU;
//!   when `cycles` cannot open (ENOENT, EOPNOTSUPP, ENODEV) it becomes `cpu-clock`;
//! - events written without modifiers sample user space only (`:u`) when
//!   `perf_event_paranoid` forbids kernel samples (EACCES, EPERM), except for
//!   system-wide targets and uprobes.
//!
//! What each fallback did is a [`Recorder::notices`] line for the program to show (the
//! library prints nothing). A command target is forked and held before `exec` until
//! [`Recorder::run`], which synthesizes what exists before the first sample (the
//! kernel's text; the threads and mappings of running processes), lets the target run
//! until it ends, the [`Stop`] is stopped or the duration passes, and streams every
//! record into a [`Sink`]:
//!
//! - [`Sink::PerfData`]: a perf.data file through [`crate::outfile`]; an output that
//!   cannot seek (`-`, a pipe, a FIFO) gets perf's pipe mode (header features and
//!   tracing data first). The recorder tracks the DSOs that MMAP records name and
//!   writes their build ids (file mode), the header features of this machine, the
//!   event groups and the tracefs formats of tracepoints and uprobes;
//! - [`Sink::Records`]: a callback that gets each record's bytes (synthesized ones
//!   first), for live consumers; decode them with [`Recorder::decoder`].
//!
//! [`Recorder::run_rewriting`] passes every record through a [`Rewrite`] on its way
//! into either sink: the hook that unwinds DWARF samples while recording and writes
//! ordinary callchains in their place (see [`Rewrite`] for which attrs describe what).
//!
//! ```no_run
//! use hwprof_pmu::{Encoder, stop::Stop, target::Target};
//! use hwprof_sampler::{outfile::{Options, Output}, recorder::{Recorder, RecordPlan, Sink}};
//!
//! let events = Encoder::host().parse("cpu-clock")?;
//! let recording = RecordPlan::new(events, Target::Command(vec!["ls".into()]));
//! let out = Output::create("perf.data".as_ref(), &Options::PERF_DATA)?;
//! let recorder = Recorder::open(recording)?;
//! let done = recorder.run(Sink::PerfData(out), &Stop::new()?)?;
//! println!("{} samples", done.stats.samples);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod check;
mod extra;
mod rewrite;

pub use check::{Diagnosis, Refused};
pub use extra::{EXTRA_ID, Extra, SUMMED_TIME, extra_attr};
pub use rewrite::{Rewrite, Rewritten};

use std::collections::BTreeSet;
use std::io;
use std::path::PathBuf;

use hwprof_pmu::event::Class;
use hwprof_pmu::stop::Stop;
use hwprof_pmu::{Encoder, EventList};

use crate::config::{self, RecordOptions};
use crate::error::Error;
use crate::outfile::Output;
use crate::perfdata::features::{ANON_GROUP, Features, GroupDesc, id as feature_id};
use crate::perfdata::tracing;
use crate::perfdata::writer::{EventEntry, Writer};
use crate::record::{Body, Decoder, kind};
use crate::session::{RunStats, Session, SessionOptions, Target};
use crate::{buildid, synth};
use rewrite::{Pass, decoder_of};

/// What to record: the session description (see the module docs).
#[derive(Clone, Debug)]
pub struct RecordPlan {
    /// The events. Empty with [`RecordOptions::default_event`]: perf's default,
    /// `cycles:P`, or `cpu-clock` where there is no hardware PMU (said in a notice).
    pub events: EventList,
    /// How they sample: frequency or period, callchains, branch stacks, data addresses,
    /// weights, side-band records. `system_wide` and `command` follow the target.
    pub options: RecordOptions,
    /// Set the events' attrs from [`RecordPlan::options`] ([`config::configure`]); off
    /// for a caller that set them itself.
    pub configure: bool,
    /// What to record.
    pub target: Target,
    /// Ring size, inheritance, duration.
    pub session: SessionOptions,
    /// Synthesize the records of what exists before the first sample (the kernel's
    /// text; the threads and mappings of `-p`/`-t`/`-a` targets).
    pub synthesize: bool,
    /// The command line in the header's CMDLINE feature (this program's, by default).
    pub cmdline: Vec<String>,
}

impl RecordPlan {
    /// `events` on `target` with perf's defaults: 4000 Hz, no callchains, a 512 KiB
    /// ring, children followed, records synthesized.
    pub fn new(events: EventList, target: Target) -> RecordPlan {
        RecordPlan {
            events,
            options: RecordOptions::default(),
            configure: true,
            target,
            session: SessionOptions::default(),
            synthesize: true,
            cmdline: this_cmdline(),
        }
    }

    /// The events as [`Recorder::open`] tries them first (the default resolved, attrs
    /// set), with the notices of that choice: what a dry run shows.
    pub fn events_to_open(&self) -> crate::Result<(EventList, Vec<String>)> {
        let mut notices = Vec::new();
        let mut list = if self.options.default_event && self.events.events.is_empty() {
            let enc = Encoder::host();
            if enc.host_has_cpu_pmu() {
                enc.parse("cycles:P")?
            } else {
                notices.push(NO_PMU.to_string());
                enc.parse("cpu-clock")?
            }
        } else {
            self.events.clone()
        };
        if self.configure {
            config::configure(&mut list, &self.options_for_target());
        }
        Ok((list, notices))
    }

    fn options_for_target(&self) -> RecordOptions {
        RecordOptions {
            system_wide: self.target.is_system_wide(),
            command: matches!(self.target, Target::Command(_)),
            ..self.options.clone()
        }
    }
}

/// The notice of the default event where there is no hardware PMU.
const NO_PMU: &str = "no hardware PMU here (cycles is not supported in this VM or container); sampling cpu-clock instead";

/// This program's command line, its first word the full path of its executable.
fn this_cmdline() -> Vec<String> {
    let mut v: Vec<String> = std::env::args().collect();
    if let Some(first) = v.first_mut() {
        if let Ok(exe) = std::env::current_exe() {
            *first = exe.display().to_string();
        }
    }
    v
}

/// Where the records go.
pub enum Sink<'a> {
    /// A perf.data file (pipe mode when the output cannot seek or is `-`).
    PerfData(Output),
    /// Each record's bytes, header included: synthesized records first, then the
    /// rings' in per-ring order (as a [`Rewrite`] left them, with
    /// [`Recorder::run_rewriting`]). An error stops the recording (a command is then
    /// terminated).
    Records(&'a mut dyn FnMut(&[u8]) -> io::Result<()>),
}

/// Why [`Recorder::open`] failed: the error, the events as last tried (after any
/// fallback), and the notices said until then.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct OpenError {
    /// What failed.
    #[source]
    pub error: Error,
    /// The events that failed to open.
    pub events: EventList,
    /// The fallbacks' notices before the failure.
    pub notices: Vec<String>,
}

/// Why [`Recorder::run`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// Reading the tracepoints' formats for the header.
    #[error(transparent)]
    Tracing(Error),
    /// Starting the perf.data file.
    #[error("cannot write {}", path.display())]
    Create {
        /// The output.
        path: PathBuf,
        /// The error.
        #[source]
        source: Error,
    },
    /// Writing the synthesized records.
    #[error(transparent)]
    Synthesized(Error),
    /// A [`Rewrite`] passed on something that is not one whole record.
    #[error(transparent)]
    Rewrite(Error),
    /// Writing a record into the file.
    #[error("writing {}", path.display())]
    Write {
        /// The output.
        path: PathBuf,
        /// The error.
        #[source]
        source: Error,
    },
    /// The session (its target, its rings, a callback's error).
    #[error("recording")]
    Session(#[source] Error),
    /// An [`Extra`] source could not start or finish.
    #[error("{0}")]
    Extra(#[source] io::Error),
    /// Finishing the file (build ids, features, rename into place).
    #[error("finishing {}", path.display())]
    Finish {
        /// The output.
        path: PathBuf,
        /// The error.
        #[source]
        source: Error,
    },
}

/// What a recording did.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The session's counts, and the command's exit.
    pub stats: RunStats,
    /// Bytes of records in the file (0 for [`Sink::Records`]).
    pub data_bytes: u64,
    /// The file was written in pipe mode.
    pub pipe: bool,
    /// A duration was set.
    timed: bool,
}

impl Recorded {
    /// The exit code to pass on: the command's (1 for a code that does not fit), 0
    /// when a duration ended it with SIGTERM (the recording's plan, not the command
    /// failing), and 0 without a command.
    pub fn exit_code(&self) -> u8 {
        match self.stats.exit {
            Some(x) if self.timed && x.signal == Some(libc::SIGTERM) => 0,
            Some(x) => u8::try_from(x.code).unwrap_or(1),
            None => 0,
        }
    }
}

/// An opened recording, ready to [`run`](Recorder::run) (see the module docs).
pub struct Recorder {
    session: Session,
    events: EventList,
    entries: Vec<EventEntry>,
    notices: Vec<String>,
    target: Target,
    synthesize: bool,
    cmdline: Vec<String>,
    timed: bool,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("events", &self.events.events.len())
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// Opens the events on the target with perf's fallbacks (see the module docs); a
    /// command is forked and held before `exec`.
    pub fn open(rec: RecordPlan) -> Result<Recorder, Box<OpenError>> {
        let (mut list, mut notices) = rec.events_to_open().map_err(|error| {
            Box::new(OpenError {
                error,
                events: rec.events.clone(),
                notices: Vec::new(),
            })
        })?;
        let mut opts = rec.options_for_target();
        // The default cycles becomes cpu-clock (once; not when it is cpu-clock already).
        let mut tried_cpu_clock =
            !(opts.default_event && list.events.iter().any(|e| e.class == Class::Core));
        let mut tried_user_only = false;
        let session = loop {
            let e = match Session::open(&list, rec.target.clone(), rec.session.clone()) {
                Ok(s) => break s,
                Err(e) => e,
            };
            let errno = e.raw_os_error();
            if !tried_cpu_clock
                && matches!(errno, Some(libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV))
            {
                tried_cpu_clock = true;
                notices.push(
                    "cycles is not supported here (no hardware PMU); sampling cpu-clock instead"
                        .to_string(),
                );
                list = match Encoder::host().parse("cpu-clock") {
                    Ok(l) => l,
                    Err(error) => {
                        return Err(Box::new(OpenError {
                            error: error.into(),
                            events: list,
                            notices,
                        }));
                    }
                };
                opts.default_event = true;
                if rec.configure {
                    config::configure(&mut list, &opts);
                }
                continue;
            }
            // Not for uprobes: their PMU wants root whatever perf_event_paranoid says,
            // so the retry would only add a misleading note before the same error.
            if !tried_user_only
                && matches!(errno, Some(libc::EACCES | libc::EPERM))
                && !rec.target.is_system_wide()
                // Another user's process: user space only would be refused the same.
                && rec
                    .target
                    .processes()
                    .iter()
                    .all(|&p| hwprof_pmu::target::foreign_owner(p).is_none())
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
                notices.push(format!(
                    "kernel.perf_event_paranoid = {paranoid} forbids kernel samples: sampling user space only ({})",
                    list.events
                        .iter()
                        .map(|e| e.name.as_str())
                        .collect::<Vec<_>>()
                        .join(",")
                ));
                continue;
            }
            return Err(Box::new(OpenError {
                error: e,
                events: list,
                notices,
            }));
        };
        notices.extend(session.notices().iter().cloned());
        let entries: Vec<EventEntry> = list
            .events
            .iter()
            .zip(session.attrs().into_iter().zip(session.ids()))
            .map(|(e, (attr, ids))| EventEntry {
                attr,
                name: e.name.clone(),
                ids,
            })
            .collect();
        Ok(Recorder {
            session,
            events: list,
            entries,
            notices,
            target: rec.target,
            synthesize: rec.synthesize,
            cmdline: rec.cmdline,
            timed: rec.session.duration.is_some(),
        })
    }

    /// What the fallbacks did and what the session noted, one line each, for the
    /// program to show.
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// The events as opened (after any fallback).
    pub fn events(&self) -> &EventList {
        &self.events
    }

    /// Each event's attr as opened, its name and its sample ids.
    pub fn entries(&self) -> &[EventEntry] {
        &self.entries
    }

    /// A decoder for this recording's records as the kernel writes them (what
    /// [`Recorder::run`] passes on, and what a [`Rewrite`] reads).
    pub fn decoder(&self) -> Decoder {
        decoder_of(&self.entries)
    }

    /// An event like event `index` opened beside the recording's, for a BPF program to
    /// attach to ([`Session::open_anchor`]).
    pub fn open_anchor(&mut self, index: usize) -> Result<std::os::fd::BorrowedFd<'_>, Error> {
        self.session.open_anchor(index)
    }

    /// The held command's pid, for a command target.
    pub fn child_pid(&self) -> Option<i32> {
        self.session.child_pid()
    }

    /// Runs the target and records it into `sink` until it ends, `stop` is stopped or
    /// the duration passes (see the module docs).
    pub fn run(self, sink: Sink<'_>, stop: &Stop) -> Result<Recorded, Box<RunError>> {
        self.run_with(sink, stop, None, None, &mut |_| {})
    }

    /// [`Recorder::run`] into a callback, calling `edges` at the window's edges (see
    /// [`Session::run_with_edges`]): where a BPF program attached to the events opens
    /// and closes its own window.
    pub fn run_with_edges(
        self,
        sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
        stop: &Stop,
        edges: &mut dyn FnMut(crate::session::Edge),
    ) -> Result<Recorded, Box<RunError>> {
        self.run_with(Sink::Records(sink), stop, None, None, edges)
    }

    /// [`Recorder::run`], passing every record through `rewrite` on its way into
    /// `sink`: the output describes the events as [`Rewrite::events`] changes them
    /// (for a perf.data file: its attrs, in pipe mode too; for a callback: decode what
    /// it gets with [`Recorder::rewritten_decoder`]), and holds what
    /// [`Rewrite::record`] makes of each record. The build ids of a file are those of
    /// the DSOs the MMAP records it holds name.
    ///
    /// ```no_run
    /// use hwprof_pmu::{Encoder, stop::Stop, target::Target};
    /// use hwprof_sampler::config::CallGraph;
    /// use hwprof_sampler::outfile::{Options, Output};
    /// use hwprof_sampler::perfdata::writer::EventEntry;
    /// use hwprof_sampler::record::{Body, Decoder, rewrite};
    /// use hwprof_sampler::recorder::{Recorder, RecordPlan, Rewrite, Rewritten, Sink};
    ///
    /// /// Keeps the kernel's part of each callchain and the sampled user ip.
    /// struct IpOnly(Decoder);
    ///
    /// impl Rewrite for IpOnly {
    ///     fn events(&self, events: &mut [EventEntry]) {
    ///         events.iter_mut().for_each(|e| e.attr = rewrite::unwound_attr(&e.attr));
    ///     }
    ///     fn record(&mut self, record: &[u8], out: &mut Vec<u8>) -> Rewritten {
    ///         let Ok(r) = self.0.decode(record, 0) else { return Rewritten::AsIs };
    ///         let (Body::Sample(s), Some(attr)) = (&r.body, r.attr.and_then(|i| self.0.attr(i)))
    ///         else {
    ///             return Rewritten::AsIs;
    ///         };
    ///         let user = s.regs_user.and(s.ip).filter(|_| r.header.misc & 7 == 2);
    ///         match rewrite::unwound_sample(attr, record, user.as_slice(), out) {
    ///             Ok(_) => Rewritten::Replaced,
    ///             Err(_) => Rewritten::AsIs,
    ///         }
    ///     }
    /// }
    ///
    /// let mut rec = RecordPlan::new(Encoder::host().parse("cpu-clock")?, Target::Command(vec!["ls".into()]));
    /// rec.options.call_graph = Some(CallGraph::Dwarf { stack_size: 8192 });
    /// let recorder = Recorder::open(rec)?;
    /// let mut ip_only = IpOnly(recorder.decoder());
    /// let out = Output::create("perf.data".as_ref(), &Options::PERF_DATA)?;
    /// let done = recorder.run_rewriting(Sink::PerfData(out), &Stop::new()?, &mut ip_only)?;
    /// println!("{} samples, {} bytes", done.stats.samples, done.data_bytes);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run_rewriting(
        self,
        sink: Sink<'_>,
        stop: &Stop,
        rewrite: &mut dyn Rewrite,
    ) -> Result<Recorded, Box<RunError>> {
        self.run_with(sink, stop, Some(rewrite), None, &mut |_| {})
    }

    /// [`Recorder::run`] or [`Recorder::run_rewriting`] (with `rewrite`), with the
    /// samples of `extra` added at the end of the perf.data file (see [`Extra`]): its
    /// event is the file's last. Recordings of one event (whose records carry no sample
    /// id) cannot take one: that is [`RunError::Extra`], before anything starts.
    pub fn run_with_extra(
        self,
        output: crate::outfile::Output,
        stop: &Stop,
        rewrite: Option<&mut dyn Rewrite>,
        extra: &mut dyn Extra,
    ) -> Result<Recorded, Box<RunError>> {
        self.run_with(
            Sink::PerfData(output),
            stop,
            rewrite,
            Some(extra),
            &mut |_| {},
        )
    }

    /// The general form of the `run` methods: into `sink`, records passed through
    /// `rewrite` when given, `extra`'s samples at the end of a perf.data file when
    /// given, `edges` called at the window's edges.
    pub fn run_all(
        self,
        sink: Sink<'_>,
        stop: &Stop,
        rewrite: Option<&mut dyn Rewrite>,
        extra: Option<&mut dyn Extra>,
        edges: &mut dyn FnMut(crate::session::Edge),
    ) -> Result<Recorded, Box<RunError>> {
        self.run_with(sink, stop, rewrite, extra, edges)
    }

    fn run_with(
        self,
        sink: Sink<'_>,
        stop: &Stop,
        rewrite: Option<&mut dyn Rewrite>,
        extra: Option<&mut dyn Extra>,
        edges: &mut dyn FnMut(crate::session::Edge),
    ) -> Result<Recorded, Box<RunError>> {
        let mut entries = match &rewrite {
            Some(r) => self.rewritten_entries(&**r),
            None => self.entries.clone(),
        };
        let extra = match extra {
            Some(x) => {
                let first = entries.first().map(|e| e.attr.clone()).unwrap_or_default();
                let entry = extra::entry(&*x, &first).ok_or_else(|| {
                    RunError::Extra(io::Error::other(format!(
                        "{} needs a recording whose samples carry their event's id (two events or more)",
                        x.name()
                    )))
                })?;
                let attr = entry.attr.clone();
                entries.push(entry);
                Some((x, attr))
            }
            None => None,
        };
        let mut pass = Pass::new(rewrite);
        match sink {
            Sink::PerfData(out) => self.run_into_file(out, stop, entries, &mut pass, extra, edges),
            Sink::Records(f) => {
                let timed = self.timed;
                for r in self.synthesized() {
                    let r = pass.apply(&r).map_err(RunError::Rewrite)?;
                    f(r).map_err(|e| RunError::Synthesized(Error::io("a synthesized record", e)))?;
                }
                let mut rewrite_err: Option<Error> = None;
                let stats = self.session.run_with_edges(
                    stop,
                    |bytes: &[u8]| match pass.apply(bytes) {
                        Ok(r) => f(r),
                        Err(e) => {
                            let msg = e.to_string();
                            rewrite_err.get_or_insert(e);
                            Err(io::Error::other(msg))
                        }
                    },
                    edges,
                );
                let stats = match (stats, rewrite_err) {
                    (_, Some(e)) => return Err(RunError::Rewrite(e).into()),
                    (Ok(s), None) => s,
                    (Err(e), None) => return Err(RunError::Session(e).into()),
                };
                Ok(Recorded {
                    stats,
                    data_bytes: 0,
                    pipe: false,
                    timed,
                })
            }
        }
    }

    /// What exists before the first sample: the kernel's text, and for running targets
    /// their threads and mappings.
    fn synthesized(&self) -> Vec<Vec<u8>> {
        let mut pre: Vec<Vec<u8>> = Vec::new();
        let Some(first) = self.entries.first().map(|e| &e.attr) else {
            return pre;
        };
        if !self.synthesize {
            return pre;
        }
        pre.extend(synth::kernel_mmap(first));
        match self.target.attached() {
            Some(Target::Pids(p) | Target::Tids(p)) => {
                for &pid in p {
                    pre.extend(synth::process(first, pid));
                }
            }
            Some(Target::SystemWide { .. }) => pre.extend(synth::all_processes(first)),
            _ => {}
        }
        pre
    }

    /// Records into a perf.data file describing `entries`, each record through `pass`,
    /// the samples of `extra` (with its event's attr) at the end.
    fn run_into_file(
        self,
        output: Output,
        stop: &Stop,
        entries: Vec<EventEntry>,
        pass: &mut Pass<'_>,
        mut extra: Option<(&mut dyn Extra, hwprof_pmu::attr::Attr)>,
        edges: &mut dyn FnMut(crate::session::Edge),
    ) -> Result<Recorded, Box<RunError>> {
        // Read now: the formats of uprobes defined for this session disappear with it.
        let tracing = tracing_data(&self.events, &self.session).map_err(RunError::Tracing)?;
        let mut features = Features::for_this_machine(&self.cmdline, &[], group_desc(&self.events));
        // EVENT_DESC is left to the writer, which fills it from its events.
        if let Some(t) = tracing {
            features.other.push((feature_id::TRACING_DATA, t));
        }
        let path = output.path().to_path_buf();
        let file_mode = output.is_seekable() && output.path() != std::path::Path::new("-");
        // What the file's records follow (decodes the MMAP records for the build ids).
        let decoder = decoder_of(&entries);
        let writer = if file_mode {
            Writer::new(output, entries)
        } else {
            Writer::pipe(output, entries, &features)
        };
        let mut writer = writer.map_err(|source| RunError::Create {
            path: path.clone(),
            source,
        })?;
        let mut dsos: BTreeSet<(i32, bool, String)> = BTreeSet::new();
        for r in &self.synthesized() {
            let r = pass.apply(r).map_err(RunError::Rewrite)?;
            note_dso(&decoder, r, &mut dsos);
            writer.write_record(r).map_err(RunError::Synthesized)?;
        }
        writer.finished_init().map_err(RunError::Synthesized)?;

        let timed = self.timed;
        if let Some((x, _)) = &mut extra {
            x.start(self.child_pid()).map_err(RunError::Extra)?;
        }
        let mut sink_err: Option<RunError> = None;
        let stats = self.session.run_with_edges(
            stop,
            |bytes: &[u8]| {
                let err = match pass.apply(bytes) {
                    Err(e) => RunError::Rewrite(e),
                    Ok(r) => {
                        note_dso(&decoder, r, &mut dsos);
                        match writer.write_record(r) {
                            Ok(()) => return Ok(()),
                            Err(source) => RunError::Write {
                                path: path.clone(),
                                source,
                            },
                        }
                    }
                };
                let msg = err.to_string();
                sink_err.get_or_insert(err);
                Err(io::Error::other(msg))
            },
            &mut |e| {
                edges(e);
                if let Some((x, _)) = &mut extra {
                    x.edge(e);
                }
            },
        );
        let stats = match (stats, sink_err) {
            (_, Some(e)) => return Err(e.into()),
            (Ok(s), None) => s,
            (Err(e), None) => return Err(RunError::Session(e).into()),
        };
        if let Some((x, attr)) = extra {
            let mut write_err = None;
            x.finish(&attr, &mut |r: &[u8]| {
                writer.write_record(r).map_err(|e| {
                    let msg = e.to_string();
                    write_err.get_or_insert(e);
                    io::Error::other(msg)
                })
            })
            .map_err(|e| match write_err.take() {
                Some(source) => RunError::Write {
                    path: path.clone(),
                    source,
                },
                None => RunError::Extra(e),
            })?;
            writer
                .write_record(&crate::session::FINISHED_ROUND)
                .map_err(|source| RunError::Write {
                    path: path.clone(),
                    source,
                })?;
        }
        let pipe = writer.is_pipe();
        if !pipe {
            features.build_ids = buildid::build_id_entries(dsos);
        }
        let data_bytes = writer.data_size();
        writer
            .finish(&features)
            .map_err(|source| RunError::Finish { path, source })?;
        Ok(Recorded {
            stats,
            data_bytes,
            pipe,
            timed,
        })
    }
}

/// Remembers the DSO a MMAP/MMAP2 record maps, for the BUILD_ID feature.
fn note_dso(dec: &Decoder, bytes: &[u8], dsos: &mut BTreeSet<(i32, bool, String)>) {
    let Some((ty, misc, _)) = crate::record::peek_header(bytes) else {
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

/// The groups of more than one event, for the GROUP_DESC feature.
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

/// The tracefs formats of the recorded tracepoints (perf needs them to read the file),
/// including the uprobes the session opened as tracepoints on its own definitions.
fn tracing_data(list: &EventList, session: &Session) -> crate::Result<Option<Vec<u8>>> {
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
