//! `hwprof script`'s default output: the text `perf script` prints, symbolized.
//!
//! Per sample, `comm tid [cpu] time: period event:` (the fields of [`Fields`], each
//! only when the event's `sample_type` holds it, as perf leaves them out), then either
//! the sampled address on the same line (` ip sym+off (dso)`) or, when the event has
//! callchains, one line per frame (`\t addr sym+off (dso)`, inlined functions as lines
//! of their own ending in `(inlined)`) and a blank line. Addresses are printed as perf
//! prints them: a callchain's user addresses relative to their file (`map_ip`), the
//! kernel's and those no file backs as they are.
//!
//! Samples come from the replay ([`hwprof_symbolize::replay`]): in the file's order
//! (perf sorts them by time), each with the processes as they were at its time (a
//! sample ahead, in the file, of its exec's COMM and MMAPs written on another ring is
//! named as perf names it), DWARF stacks unwound against them.
//!
//! A sample's text is its head and its stack's. Each distinct stack (the sample's words
//! with what their meaning depends on: the process's mappings' versions, the CPU mode,
//! the fields; [`Stacks`]) is located once and its text made once, so a sample whose
//! stack was seen costs its head (mostly copied too, see [`Head`]) and one copy. From
//! a sample whose stack is new on, the samples' text is held until [`BATCH_TEXT`]
//! bytes, then the locations not seen before are symbolized in one batch per module and
//! the text written; each distinct (module, offset) is symbolized once and its text
//! kept, and the stacks' text is dropped past [`STACKS_HELD`], so memory follows the
//! distinct locations and the replay's window, not the file. Each file module's
//! symbols are read on a thread of their own from its first location on
//! ([`Symbolizer::prefetch`]), while the replay goes on.

use std::ops::Range;

use rustc_hash::FxHashMap as HashMap;

use hwprof_pmu::attr::sample as sample_type;
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::perfdata::tracing::TraceFormat;
use hwprof_sampler::record::{Record, Sample, context, misc};
use hwprof_symbolize::chains::{self, ShapeHash, WordCache};
use hwprof_symbolize::process::Processes;
use hwprof_symbolize::unwind::stream::TRUNCATED_MARK;
use hwprof_symbolize::{Frame, Locator, Module, ModuleId, Symbolizer};

use super::out::{dec, dec_pad, dec_zero, hex, hex_pad, id_left, id_pad};
use crate::render::escape as esc;

/// One field of `-F`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Field {
    Comm = 1,
    Tid = 1 << 1,
    Pid = 1 << 2,
    Time = 1 << 3,
    Cpu = 1 << 4,
    Event = 1 << 5,
    Period = 1 << 6,
    Ip = 1 << 7,
    Sym = 1 << 8,
    SymOff = 1 << 9,
    Dso = 1 << 10,
    Addr = 1 << 11,
    Trace = 1 << 12,
}

const NAMES: [(&str, Field); 14] = [
    ("comm", Field::Comm),
    ("tid", Field::Tid),
    ("pid", Field::Pid),
    ("time", Field::Time),
    ("cpu", Field::Cpu),
    ("event", Field::Event),
    ("period", Field::Period),
    ("ip", Field::Ip),
    ("sym", Field::Sym),
    ("symoff", Field::SymOff),
    ("dso", Field::Dso),
    ("addr", Field::Addr),
    ("trace", Field::Trace),
    ("evname", Field::Event),
];

/// A set of fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fields(u32);

impl Fields {
    /// perf's default for an event of attr type `type_` (tracepoints: their data
    /// instead of the period and address; the frames too when they have callchains).
    pub fn default_for(type_: u32, callchain: bool) -> Fields {
        use Field::*;
        if type_ == hwprof_pmu::attr::types::TRACEPOINT {
            let mut f = Fields::of(&[Comm, Tid, Cpu, Time, Event, Trace]);
            if callchain {
                f = f.with(Ip).with(Sym).with(SymOff).with(Dso);
            }
            f
        } else {
            Fields::of(&[Comm, Tid, Cpu, Time, Period, Event, Ip, Sym, SymOff, Dso])
        }
    }

    fn of(list: &[Field]) -> Fields {
        Fields(list.iter().fold(0, |a, &f| a | f as u32))
    }

    fn with(self, f: Field) -> Fields {
        Fields(self.0 | f as u32)
    }

    fn without(self, f: Field) -> Fields {
        Fields(self.0 & !(f as u32))
    }

    /// Whether `f` is in the set.
    pub fn has(self, f: Field) -> bool {
        self.0 & f as u32 != 0
    }
}

/// What `-F` says: the fields, or changes to the default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldSpec {
    /// No `-F`: perf's default per event.
    Default,
    /// `-F a,b,c`: exactly these.
    Exactly(Fields),
    /// `-F +a,-b`: the default with `add` and without `remove`.
    Change { add: Fields, remove: Fields },
}

impl FieldSpec {
    /// Parses `-F`'s value as perf does: a list, or a list whose every item starts with
    /// `+` or `-` (`-F +pid` adds pid to the default, `-F -period` takes it out).
    pub fn parse(s: &str) -> Result<FieldSpec, String> {
        let items: Vec<&str> = s.split(',').map(str::trim).collect();
        let lookup = |name: &str| -> Result<Field, String> {
            NAMES
                .iter()
                .find(|(n, _)| *n == name)
                .map(|&(_, f)| f)
                .ok_or_else(|| {
                    let known: Vec<&str> = NAMES.iter().map(|(n, _)| *n).collect();
                    format!("unknown field '{name}' (fields: {})", known.join(","))
                })
        };
        if items.iter().any(|i| i.starts_with(['+', '-'])) {
            let (mut add, mut remove) = (Fields::default(), Fields::default());
            for i in items {
                if let Some(n) = i.strip_prefix('+') {
                    add = add.with(lookup(n)?);
                } else if let Some(n) = i.strip_prefix('-') {
                    remove = remove.with(lookup(n)?);
                } else {
                    return Err(format!(
                        "'{i}': with +field or -field, every field needs its sign"
                    ));
                }
            }
            return Ok(FieldSpec::Change { add, remove });
        }
        let mut f = Fields::default();
        for i in items {
            f = f.with(lookup(i)?);
        }
        Ok(FieldSpec::Exactly(f))
    }

    /// The fields of one event: the spec over perf's default, less what the event's
    /// `sample_type` does not hold (perf leaves those out of its default too).
    pub fn resolve(&self, type_: u32, st: u64) -> Fields {
        let chain = st & sample_type::CALLCHAIN != 0
            || st & (sample_type::REGS_USER | sample_type::STACK_USER)
                == (sample_type::REGS_USER | sample_type::STACK_USER);
        let mut f = match self {
            FieldSpec::Default => Fields::default_for(type_, chain),
            FieldSpec::Exactly(f) => *f,
            FieldSpec::Change { add, remove } => {
                Fields(Fields::default_for(type_, chain).0 | add.0).without_all(*remove)
            }
        };
        for (bit, field) in [
            (sample_type::TID, Field::Tid),
            (sample_type::TID, Field::Pid),
            (sample_type::TIME, Field::Time),
            (sample_type::CPU, Field::Cpu),
            (sample_type::PERIOD, Field::Period),
            (sample_type::IP, Field::Ip),
            (sample_type::ADDR, Field::Addr),
            (sample_type::RAW, Field::Trace),
        ] {
            if st & bit == 0 && !(field == Field::Ip && chain) {
                f = f.without(field);
            }
        }
        f
    }
}

impl Fields {
    fn without_all(self, other: Fields) -> Fields {
        Fields(self.0 & !other.0)
    }
}

/// Per event: its fields, whether frames go on lines of their own, its tracepoint
/// format, and its name as printed.
struct EventOut {
    /// Its fields.
    fields: Fields,
    /// Its frames go on lines of their own (it has callchains or stacks to unwind).
    chain: bool,
    /// Its tracepoint format (a tracepoint's, when the file has it).
    trace: Option<TraceFormat>,
    /// `name: `, padded on the left to the widest event name (perf aligns them).
    label: Box<[u8]>,
}

/// A location's text: per frame (inlined ones first), what follows the address.
type Lines = Vec<Box<[u8]>>;

/// A location as printed: (module, offset, return address, the fields that shape its
/// text).
type Key = (ModuleId, u64, bool, u32);

/// The fields a frame's text depends on.
const FRAME_FIELDS: u32 =
    Field::Ip as u32 | Field::Sym as u32 | Field::SymOff as u32 | Field::Dso as u32;

/// A [`Shape`] flag: the stack is printed a frame a line (else it is the sampled
/// address, on the sample's line).
const CHAIN: u32 = 1 << 16;
/// A [`Shape`] flag: the sample was taken in the kernel.
const KERNEL_MODE: u32 = 1 << 17;
/// A [`Shape`] flag: the chain's user part was unwound here (a DWARF sample).
const UNWOUND: u32 = 1 << 18;

/// Samples' text waits for its stacks' until this much is held, then the locations
/// not seen before are symbolized in one batch per module (memory stays bounded; a
/// batch costs one read of a file's symbols where one address at a time costs one
/// each).
const BATCH_TEXT: usize = 1 << 20;
/// ... or until this many samples wait, or new stacks have this many locations.
const BATCH_FRAMES: usize = 1 << 16;
/// While symbols are still being read on other threads (`/proc/kallsyms`, which the
/// kernel takes some 40 ms to generate, and the first files' DWARF: see
/// [`Symbolizer::reading_ahead`]), a batch waits until this much text instead (and
/// [`BATCH_FRAMES_AHEAD`]), so that the replay goes on meanwhile rather than wait for
/// them at its first batch.
const BATCH_TEXT_AHEAD: usize = 16 << 20;
/// [`BATCH_FRAMES`] while symbols are read ahead.
const BATCH_FRAMES_AHEAD: usize = 1 << 18;

/// The most bytes [`Stacks`] holds past a batch: then it is emptied and fills again.
/// A recording of many distinct stacks (an interpreter's, say) would otherwise keep
/// the text of every one of them; emptied, a stack seen again costs its locations
/// once more (their frames' text is kept in [`PerfText::lines`], so not its
/// symbolizing), while one recurring stack (a loop's) is rebuilt once per refill.
const STACKS_HELD: usize = 64 << 20;

/// A sample waiting for its stack's text: where it goes in [`PerfText::text`].
struct Pending {
    /// The offset in [`PerfText::text`] of the end of its head.
    at: usize,
    /// Its stack, in [`PerfText::stacks`].
    stack: u32,
}

/// Prints samples as `perf script` does.
///
/// A sample's text is its head (`comm tid ... event:`, see [`Head`]) and its stack's
/// text (every frame's line, or the sampled address), which is made once per distinct
/// stack ([`Stacks`]): a sample whose stack was seen costs its head and one copy.
pub struct PerfText {
    /// Per event (attr index): how its samples print.
    events: Vec<EventOut>,
    /// The samples' heads, mostly copied.
    head: Head,
    /// Every location's frames.
    sym: Symbolizer,
    /// Per location: the text of its frames.
    lines: HashMap<Key, Lines>,
    /// Per module id: whether a stack met it (its file is then read ahead).
    met: Vec<bool>,
    /// The samples' stacks, each with its text once it is made.
    stacks: Stacks,
    /// Per thread slot (see [`THREADS`]): the stack of its last sample, which its next
    /// one mostly repeats (found without hashing).
    recent: Vec<u32>,
    /// The stacks first seen since the last batch, each with its locations' range in
    /// `fresh_locs`.
    fresh: Vec<(u32, Range<usize>)>,
    /// The locations of the `fresh` stacks, each with the address it shows.
    fresh_locs: Vec<(Key, u64)>,
    /// The samples' text from the first one whose stack's text is not made yet,
    /// without the stacks' text (see [`BATCH_TEXT`]); until such a sample, samples
    /// go straight to the output.
    text: Vec<u8>,
    /// The samples waiting for their stack's text, in order.
    pending: Vec<Pending>,
}

impl PerfText {
    /// A printer for the samples of `data`, with `spec`'s fields; files are found by
    /// `locator`.
    pub fn new(data: &PerfData, spec: &FieldSpec, locator: Locator) -> PerfText {
        let formats = data
            .tracing_data()
            .ok()
            .flatten()
            .and_then(|b| hwprof_sampler::perfdata::tracing::formats(&b).ok())
            .unwrap_or_default();
        let names: Vec<String> = data
            .attrs()
            .iter()
            .map(|e| esc(&e.name).into_owned())
            .collect();
        let name_width = names.iter().map(String::len).max().unwrap_or(0);
        let events: Vec<EventOut> = data
            .attrs()
            .iter()
            .zip(names)
            .map(|(e, name)| {
                let a = &e.attr;
                let fields = spec.resolve(a.type_, a.sample_type);
                let both = sample_type::REGS_USER | sample_type::STACK_USER;
                let chain = fields.has(Field::Ip)
                    && (a.sample_type & sample_type::CALLCHAIN != 0
                        || a.sample_type & both == both);
                let trace = (a.type_ == hwprof_pmu::attr::types::TRACEPOINT)
                    .then(|| formats.iter().find(|f| f.id == Some(a.config)).cloned())
                    .flatten();
                let mut label = vec![b' '; name_width.saturating_sub(name.len())];
                label.extend_from_slice(name.as_bytes());
                label.extend_from_slice(b": ");
                EventOut {
                    fields,
                    chain,
                    trace,
                    label: label.into_boxed_slice(),
                }
            })
            .collect();
        let trusted = hwprof_symbolize::kernel_matches(data.features());
        let mut sym = Symbolizer::with_locator(true, trusted, locator);
        sym.prefetch_kernel_symbols();
        PerfText {
            events,
            head: Head::default(),
            sym,
            lines: HashMap::default(),
            met: Vec::new(),
            stacks: Stacks::default(),
            recent: vec![NO_STACK; THREADS],
            fresh: Vec::new(),
            fresh_locs: Vec::new(),
            text: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// Takes one sample, with `procs` as they were at its time; its text goes to `out`
    /// (at once when its stack's text is made, else in batches), with `unwound`: its
    /// callchain with the user part unwound (a DWARF sample).
    pub fn sample(
        &mut self,
        procs: &mut Processes,
        out: &mut Vec<u8>,
        rec: &Record,
        s: &Sample,
        unwound: Option<&[u64]>,
        flush: &mut impl FnMut(&mut Vec<u8>) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        self.take(procs, out, rec, s, unwound);
        let full = |text: usize, frames: usize| {
            self.text.len() >= text
                || self.pending.len() >= frames
                || self.fresh_locs.len() >= frames
        };
        if full(BATCH_TEXT, BATCH_FRAMES)
            && (!self.sym.reading_ahead() || full(BATCH_TEXT_AHEAD, BATCH_FRAMES_AHEAD))
        {
            return self.finish(procs, out, flush);
        }
        Ok(())
    }

    /// Writes what is held to `out`: the new stacks' text (symbolizing the locations
    /// not seen before, one batch per module) in the samples' text, calling `flush`
    /// with `out` as it grows (it writes `out` out and empties it once it holds enough),
    /// so that `out` stays small whatever the batch's size.
    pub fn finish(
        &mut self,
        procs: &Processes,
        out: &mut Vec<u8>,
        flush: &mut impl FnMut(&mut Vec<u8>) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut todo: HashMap<ModuleId, Vec<(u64, bool)>> = HashMap::default();
        for (key, _) in &self.fresh_locs {
            if !self.lines.contains_key(key) {
                let (m, off, ret, _) = *key;
                todo.entry(m).or_default().push((off, ret));
            }
        }
        let mut todo: Vec<_> = todo.into_iter().collect();
        todo.sort_unstable_by_key(|(m, _)| *m);
        let mut resolved: HashMap<(ModuleId, u64, bool), Vec<Frame>> = HashMap::default();
        for (m, mut offs) in todo {
            offs.sort_unstable();
            offs.dedup();
            let module = procs.module(m).cloned().unwrap_or(Module::Unmapped);
            let id = self.sym.module_id(module);
            let frames = self.sym.resolve(id, &offs);
            for (&(off, ret), frames) in offs.iter().zip(frames) {
                resolved.insert((m, off, ret), frames);
            }
        }
        for (key, _) in &self.fresh_locs {
            let (m, off, ret, bits) = *key;
            if !self.lines.contains_key(key)
                && let Some(frames) = resolved.get(&(m, off, ret))
            {
                let f = Fields(bits);
                let lines = frames.iter().map(|fr| frame_text(fr, off, f)).collect();
                self.lines.insert(*key, lines);
            }
        }
        for (id, locs) in self.fresh.drain(..) {
            self.stacks
                .make_text(id, &self.fresh_locs[locs], &self.lines);
        }
        self.fresh_locs.clear();
        let mut from = 0;
        let mut written = Ok(());
        for p in &self.pending {
            out.extend_from_slice(&self.text[from..p.at]);
            out.extend_from_slice(self.stacks.text(p.stack).unwrap_or_default());
            from = p.at;
            written = flush(out);
            if written.is_err() {
                break;
            }
        }
        if written.is_ok() {
            out.extend_from_slice(&self.text[from..]);
        }
        self.text.clear();
        self.pending.clear();
        // Nothing refers to a stack now: the cache may start again (see STACKS_HELD).
        if self.stacks.held() > STACKS_HELD {
            self.stacks.clear();
        }
        written
    }

    /// One sample: its head, then its stack's text, or its place to wait for it.
    fn take(
        &mut self,
        procs: &mut Processes,
        out: &mut Vec<u8>,
        rec: &Record,
        s: &Sample,
        unwound: Option<&[u64]>,
    ) {
        let Some((attr, ev)) = rec.attr.and_then(|i| Some((i, self.events.get(i)?))) else {
            return;
        };
        let (fields, chain) = (ev.fields, ev.chain);
        let (pid, tid) = ids(s);
        // While no sample waits for its stack's text, samples go straight to `out`.
        let direct = self.pending.is_empty();
        let mut b = std::mem::take(if direct { &mut *out } else { &mut self.text });
        self.head.write(procs, &mut b, attr, ev, s);
        let kernel_mode = rec.header.misc & misc::CPUMODE_MASK == misc::KERNEL;
        let flags = (fields.0 & FRAME_FIELDS) | if kernel_mode { KERNEL_MODE } else { 0 };
        let stack = if chain {
            let flags = flags | CHAIN;
            Some(match (unwound, &s.callchain) {
                (Some(c), _) => self.stack(procs, pid, tid, flags | UNWOUND, c.iter().copied()),
                (None, Some(c)) => self.stack(procs, pid, tid, flags, c.iter()),
                (None, None) => self.stack(procs, pid, tid, flags, s.ip.into_iter()),
            })
        } else if fields.has(Field::Ip)
            && let Some(ip) = s.ip
        {
            Some(self.stack(procs, pid, tid, flags, std::iter::once(ip)))
        } else {
            None
        };
        match stack.map(|id| (id, self.stacks.text(id))) {
            None => b.push(b'\n'),
            Some((_, Some(text))) if direct => b.extend_from_slice(text),
            Some((stack, _)) => {
                // Held, a sample's stack waits as a reference (its text is copied
                // once, into `out`). `text` is empty while samples go to `out`.
                let at = if direct { 0 } else { b.len() };
                self.pending.push(Pending { at, stack });
            }
        }
        if direct {
            *out = b;
        } else {
            self.text = b;
        }
    }

    /// The stack of a sample of `pid` and `tid` (`flags`: its [`Shape`]'s) made of
    /// `words`; a stack not seen before is located now, against `procs` at the sample's
    /// time.
    fn stack(
        &mut self,
        procs: &mut Processes,
        pid: u32,
        tid: u32,
        flags: u32,
        words: impl Iterator<Item = u64> + Clone,
    ) -> u32 {
        let shape = Shape {
            pid,
            flags,
            versions: procs.maps_version(pid),
        };
        let recent = &mut self.recent[tid as usize % THREADS];
        let (id, new) = self.stacks.find_or_add(shape, words, *recent);
        *recent = id;
        if new {
            let start = self.fresh_locs.len();
            locations(procs, shape, self.stacks.words(id), &mut self.fresh_locs);
            for &((m, ..), _) in &self.fresh_locs[start..] {
                if self.met.get(m as usize) != Some(&true) {
                    // A module met first: its file is read while the replay goes on.
                    if self.met.len() <= m as usize {
                        self.met.resize(m as usize + 1, false);
                    }
                    self.met[m as usize] = true;
                    if let Some(module) = procs.module(m) {
                        self.sym.prefetch(module);
                    }
                }
            }
            self.fresh.push((id, start..self.fresh_locs.len()));
        }
        id
    }
}

/// How many threads' leads [`Head`] keeps, and their last stacks
/// [`PerfText::recent`] (a thread's slot: its tid modulo this).
const THREADS: usize = 64;
/// How many events' tails [`Head`] keeps (an event's slot: its index modulo this).
const TAILS: usize = 8;
/// The longest piece of a head a [`Memo`] keeps.
const MEMO: usize = 64;

/// Nanoseconds in a second.
const NS: u64 = 1_000_000_000;

/// What a thread's lead is made of: the event, comm id, pid, tid, cpu and second.
type LeadKey = (usize, u32, u32, u32, Option<u32>, Option<u64>);
/// What an event's tail is made of: the event and the period.
type TailKey = (usize, Option<u64>);

/// The start of every sample's line: `comm tid [cpu] time: period event: ` (and addr,
/// trace data), each field as the event has it.
///
/// Consecutive samples of a thread mostly differ only in their time's microseconds:
/// what comes before them (the lead: comm, pid/tid, cpu, second) is kept per thread,
/// and what follows (the tail: period, event) per event, each written once and
/// copied while its key holds.
struct Head {
    /// Per thread slot: its last lead.
    leads: Vec<Memo<LeadKey>>,
    /// Per event slot: its last tail.
    tails: Vec<Memo<TailKey>>,
}

impl Default for Head {
    fn default() -> Self {
        Head {
            leads: vec![Memo::default(); THREADS],
            tails: vec![Memo::default(); TAILS],
        }
    }
}

/// A piece of text kept with the key it was made for.
#[derive(Clone, Copy)]
struct Memo<K> {
    /// What it was made for (none yet, or it did not fit).
    key: Option<K>,
    /// How many bytes of `text` it is.
    len: usize,
    /// The text, then whatever was there before.
    text: [u8; MEMO],
}

impl<K> Default for Memo<K> {
    fn default() -> Self {
        Memo {
            key: None,
            len: 0,
            text: [0; MEMO],
        }
    }
}

impl<K: Copy + PartialEq> Memo<K> {
    /// Appends the text kept for `key`; false (nothing appended) when it is not kept.
    #[inline]
    fn put(&self, key: K, b: &mut Vec<u8>) -> bool {
        if self.key != Some(key) {
            return false;
        }
        // The whole buffer, then cut: a copy of a length the compiler knows.
        let at = b.len();
        b.extend_from_slice(&self.text);
        b.truncate(at + self.len);
        true
    }

    /// Keeps `text` for `key` (when it fits).
    fn keep(&mut self, key: K, text: &[u8]) {
        match self.text.get_mut(..text.len()) {
            Some(t) => {
                t.copy_from_slice(text);
                self.key = Some(key);
                self.len = text.len();
            }
            None => self.key = None,
        }
    }
}

impl Head {
    /// Appends the head of sample `s` of event `ev` (the `attr`th) to `b`.
    fn write(
        &mut self,
        procs: &mut Processes,
        b: &mut Vec<u8>,
        attr: usize,
        ev: &EventOut,
        s: &Sample,
    ) {
        let (pid, tid) = ids(s);
        let f = ev.fields;
        // Comm ids are interned: an id names one comm while `procs` lives.
        let comm = if f.has(Field::Comm) {
            procs.comm_of(pid, tid)
        } else {
            0
        };
        let time = s.time.filter(|_| f.has(Field::Time));
        let key = (attr, comm, pid, tid, s.cpu, time.map(|t| t / NS));
        let lead = &mut self.leads[tid as usize % THREADS];
        if !lead.put(key, b) {
            let at = b.len();
            lead_text(procs, b, ev, s, comm, pid, tid);
            lead.keep(key, &b[at..]);
        }
        if let Some(t) = time {
            dec_zero(b, t % NS / 1000, 6);
            b.extend_from_slice(b": ");
        }
        let key = (attr, s.period);
        let tail = &mut self.tails[attr % TAILS];
        if !tail.put(key, b) {
            let at = b.len();
            if f.has(Field::Period)
                && let Some(p) = s.period
            {
                dec_pad(b, p, 10);
                b.push(b' ');
            }
            if f.has(Field::Event) {
                b.extend_from_slice(&ev.label);
            }
            tail.keep(key, &b[at..]);
        }
        if f.has(Field::Addr)
            && let Some(a) = s.addr
        {
            hex_pad(b, a, 16);
        }
        if f.has(Field::Trace)
            && let (Some(raw), Some(fmt)) = (s.raw, &ev.trace)
        {
            trace(b, fmt, raw);
        }
    }
}

/// The pid and tid of a sample (the kernel's -1 when it has none; its pid when it has
/// no tid).
fn ids(s: &Sample) -> (u32, u32) {
    let pid = s.pid.unwrap_or(u32::MAX);
    (pid, s.tid.unwrap_or(pid))
}

/// A head's lead: `comm tid [cpu] second.`, as the event's fields have it (`comm`:
/// the thread's comm id).
fn lead_text(
    procs: &Processes,
    b: &mut Vec<u8>,
    ev: &EventOut,
    s: &Sample,
    comm: u32,
    pid: u32,
    tid: u32,
) {
    let f = ev.fields;
    if f.has(Field::Comm) {
        let name = esc(procs.comm(comm));
        if !ev.chain {
            b.resize(b.len() + 16usize.saturating_sub(name.chars().count()), b' ');
        }
        b.extend_from_slice(name.as_bytes());
        b.push(b' ');
    }
    match (f.has(Field::Pid), f.has(Field::Tid)) {
        (true, true) => {
            id_pad(b, pid, 5);
            b.push(b'/');
            id_left(b, tid, 5);
            b.push(b' ');
        }
        (true, false) => {
            id_pad(b, pid, 5);
            b.push(b' ');
        }
        (false, true) => {
            id_pad(b, tid, 5);
            b.push(b' ');
        }
        _ => {}
    }
    if f.has(Field::Cpu)
        && let Some(cpu) = s.cpu
    {
        b.push(b'[');
        dec_zero(b, cpu.into(), 3);
        b.extend_from_slice(b"] ");
    }
    if f.has(Field::Time)
        && let Some(t) = s.time
    {
        dec_pad(b, t / NS, 5);
        b.push(b'.');
    }
}

/// What a stack's text depends on besides its words: equal shapes and words print
/// alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Shape {
    /// The sample's process.
    pid: u32,
    /// The frame fields' bits, [`CHAIN`], [`KERNEL_MODE`], [`UNWOUND`].
    flags: u32,
    /// [`Processes::maps_version`] of `pid` at the sample's time: its addresses
    /// locate alike while it stays.
    versions: (u64, u64),
}

impl ShapeHash for Shape {
    fn words(&self) -> [u64; 2] {
        [
            u64::from(self.pid) << 32 | u64::from(self.flags),
            self.versions.0 ^ self.versions.1.rotate_left(32),
        ]
    }
}

/// No stack (a hint that names none).
const NO_STACK: u32 = chains::NONE;

/// The samples' distinct stacks, each with its text once made.
///
/// A stack is a sample's words (its callchain, unwound chain or sampled address) and
/// its [`Shape`], found again through [`WordCache`]; its value is its text's place in
/// [`Stacks::text`], once made.
#[derive(Default)]
struct Stacks {
    cache: WordCache<Shape, Option<Range<usize>>>,
    /// Every made stack's text, end to end.
    text: Vec<u8>,
}

impl Stacks {
    /// The stack of `shape` and `words`, and whether it is new (added now); `hint`:
    /// the stack it likely is (compared first; any id, or [`NO_STACK`]).
    fn find_or_add(
        &mut self,
        shape: Shape,
        words: impl Iterator<Item = u64> + Clone,
        hint: u32,
    ) -> (u32, bool) {
        self.cache.find_or_add(shape, words, hint, || None)
    }

    /// The words of stack `id`.
    fn words(&self, id: u32) -> &[u64] {
        self.cache.words(id)
    }

    /// The text of stack `id`, once made.
    fn text(&self, id: u32) -> Option<&[u8]> {
        let r = self.cache.value(id)?.clone()?;
        self.text.get(r)
    }

    /// Makes the text of stack `id` from its locations (each with the address it
    /// shows) and their frames' `lines`: for a chain, a line per frame between blank
    /// ones (`\n\t addr sym+off (dso)\n...\n`); for a sampled address, ` addr sym+off
    /// (dso)\n` with its containing function.
    fn make_text(&mut self, id: u32, locs: &[(Key, u64)], lines: &HashMap<Key, Lines>) {
        static NONE: Lines = Vec::new();
        let Some(shape) = self.cache.shape(id).copied() else {
            return;
        };
        let t = &mut self.text;
        let start = t.len();
        if shape.flags & CHAIN != 0 {
            t.push(b'\n');
            for (key, shown) in locs {
                for line in lines.get(key).unwrap_or(&NONE) {
                    t.push(b'\t');
                    if key.3 & Field::Ip as u32 != 0 {
                        hex_pad(t, *shown, 16);
                    }
                    t.extend_from_slice(line);
                    t.push(b'\n');
                }
            }
        } else {
            for (key, shown) in locs {
                t.push(b' ');
                hex_pad(t, *shown, 16);
                // The sampled address, one frame: its containing function.
                if let Some(last) = lines.get(key).and_then(|l| l.last()) {
                    t.extend_from_slice(last);
                }
            }
        }
        t.push(b'\n');
        let end = t.len();
        if let Some(v) = self.cache.value_mut(id) {
            *v = Some(start..end);
        }
    }

    /// About how many bytes are held.
    fn held(&self) -> usize {
        self.cache.held() + self.text.len()
    }

    /// Forgets every stack.
    fn clear(&mut self) {
        self.cache.clear();
        self.text.clear();
    }
}

/// The locations of a stack's words, each with the address it shows, as perf lists
/// them. A sampled address is one location shown as it is. In a chain, markers switch
/// between the kernel and user parts and are not frames; every entry after the first
/// is a return address (in an unwound user part: after its first). An unwound user
/// part ([`UNWOUND`]) was unwound here, and its mark of a cut stack is left out
/// (perf's own unwinding just ends); a mark in the recorded chain (written by `hwprof
/// record --call-graph dwarf`) is an address perf prints as `[unknown]`, and so is it
/// here.
fn locations(procs: &mut Processes, shape: Shape, words: &[u64], locs: &mut Vec<(Key, u64)>) {
    let bits = shape.flags & FRAME_FIELDS;
    let kernel_mode = shape.flags & KERNEL_MODE != 0;
    if shape.flags & CHAIN == 0 {
        for &ip in words {
            let (m, off) = procs.locate(shape.pid, ip, kernel_mode);
            locs.push(((m, off, false, bits), ip));
        }
        return;
    }
    let unwound = shape.flags & UNWOUND != 0;
    let mut kernel = kernel_mode;
    let mut first = true;
    for &addr in words {
        if addr >= context::MAX {
            kernel = addr == context::KERNEL || addr == context::GUEST_KERNEL;
            // An unwound user part starts with the user pc, not a return address
            // (as hwprof's profiles read it).
            first |= unwound && addr == context::USER;
            continue;
        }
        if unwound && addr == TRUNCATED_MARK && !kernel {
            continue;
        }
        let (m, off) = procs.locate(shape.pid, addr, kernel);
        locs.push(((m, off, !first, bits), shown_addr(procs, m, addr, off)));
        first = false;
    }
}

/// The address perf prints for a callchain entry: relative to its file (and to a
/// named mapping such as `[vdso]`), else as it is.
fn shown_addr(procs: &Processes, m: ModuleId, addr: u64, off: u64) -> u64 {
    match procs.module(m) {
        Some(Module::File { .. } | Module::Other { .. }) => off,
        _ => addr,
    }
}

/// ` sym+0xoff (dso)`, or ` inlined+0xoff (inlined)`, per the fields.
fn frame_text(fr: &Frame, off: u64, f: Fields) -> Box<[u8]> {
    let mut b = Vec::new();
    if f.has(Field::Sym) {
        b.push(b' ');
        match &fr.function {
            Some(name) => {
                b.extend_from_slice(esc(name).as_bytes());
                if f.has(Field::SymOff) {
                    b.extend_from_slice(b"+0x");
                    hex(&mut b, off.wrapping_sub(fr.module_offset));
                }
            }
            None => b.extend_from_slice(b"[unknown]"),
        }
    }
    if fr.inlined {
        b.extend_from_slice(b" (inlined)");
    } else if f.has(Field::Dso) {
        b.extend_from_slice(b" (");
        b.extend_from_slice(esc(fr.module.as_deref().unwrap_or("[unknown]")).as_bytes());
        b.push(b')');
    }
    b.into_boxed_slice()
}

/// A tracepoint's fields after the common ones, `name=value`: integers in decimal,
/// character arrays as text (perf formats them with the event's print format, which
/// hwprof does not evaluate).
fn trace(b: &mut Vec<u8>, fmt: &TraceFormat, raw: &[u8]) {
    let mut first = true;
    for field in fmt.fields.iter().filter(|f| !f.name.starts_with("common_")) {
        if !first {
            b.push(b' ');
        }
        first = false;
        b.extend_from_slice(field.name.as_bytes());
        b.push(b'=');
        match field.int(raw) {
            Some(v) if field.signed => b.extend_from_slice(v.to_string().as_bytes()),
            Some(v) => dec(b, v as u64),
            None => {
                let bytes = raw
                    .get(field.offset..field.offset.saturating_add(field.size))
                    .unwrap_or_default();
                let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
                b.extend_from_slice(crate::render::escape_bytes(&bytes[..end]).as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_lists_as_perf_takes_them() {
        let e = FieldSpec::parse("comm,tid,time,ip,sym").unwrap();
        let FieldSpec::Exactly(f) = e else {
            panic!("{e:?}")
        };
        assert!(f.has(Field::Comm) && f.has(Field::Sym) && !f.has(Field::Dso));
        let c = FieldSpec::parse("+pid,-period").unwrap();
        let all = u64::MAX;
        let f = c.resolve(1, all);
        assert!(f.has(Field::Pid) && f.has(Field::Tid) && !f.has(Field::Period));
        assert!(FieldSpec::parse("comm,+pid").is_err());
        assert!(FieldSpec::parse("bogus").is_err());
    }

    #[test]
    fn default_leaves_out_what_the_sample_lacks() {
        let st = sample_type::IP | sample_type::TID | sample_type::TIME | sample_type::PERIOD;
        let f = FieldSpec::Default.resolve(1, st);
        assert!(!f.has(Field::Cpu) && f.has(Field::Period) && f.has(Field::Ip));
        // Tracepoints: their data, no period, frames only with callchains.
        let t = FieldSpec::Default.resolve(2, st | sample_type::RAW | sample_type::CPU);
        assert!(t.has(Field::Trace) && t.has(Field::Cpu) && !t.has(Field::Period));
        assert!(!t.has(Field::Ip));
        let t = FieldSpec::Default.resolve(2, st | sample_type::CALLCHAIN);
        assert!(t.has(Field::Ip) && t.has(Field::Sym));
    }

    #[test]
    fn a_stack_is_its_shape_and_words() {
        // (How stacks are found again is chains::WordCache's, tested there.)
        let mut st = Stacks::default();
        let shape = Shape {
            pid: 7,
            flags: CHAIN | FRAME_FIELDS,
            versions: (3, 1),
        };
        let (a, new) = st.find_or_add(shape, [1u64, 2, 3].into_iter(), NO_STACK);
        assert!(new);
        // Other mappings, other fields: another stack each.
        for other in [
            Shape {
                versions: (4, 1),
                ..shape
            },
            Shape {
                versions: (3, 2),
                ..shape
            },
            Shape {
                flags: FRAME_FIELDS,
                ..shape
            },
        ] {
            assert!(st.find_or_add(other, [1u64, 2, 3].into_iter(), a).1);
        }
        assert_eq!(st.words(a), &[1, 2, 3]);
        assert_eq!(st.text(a), None);
        // Emptied, a stack is new again (a stale hint included).
        st.clear();
        assert!(st.find_or_add(shape, [1u64, 2, 3].into_iter(), a).1);
    }

    #[test]
    fn stack_text_as_perf_prints_it() {
        let mut st = Stacks::default();
        let chain = Shape {
            pid: 1,
            flags: CHAIN | FRAME_FIELDS,
            versions: (1, 0),
        };
        let (pc, ret) = (
            (0, 0x19, false, FRAME_FIELDS),
            (0, 0x40, true, FRAME_FIELDS),
        );
        let line = |t: &str| t.as_bytes().to_vec().into_boxed_slice();
        let mut lines: HashMap<Key, Lines> = HashMap::default();
        lines.insert(
            pc,
            vec![line(" f+0x9 (inlined)"), line(" main+0x19 (/bin/x)")],
        );
        lines.insert(ret, vec![line(" start+0x0 (/bin/x)")]);
        let (id, _) = st.find_or_add(chain, [0x1019u64, 0x1040].into_iter(), NO_STACK);
        st.make_text(id, &[(pc, 0x19), (ret, 0x40)], &lines);
        let want = format!(
            "\n\t{:>16x} f+0x9 (inlined)\n\t{:>16x} main+0x19 (/bin/x)\n\t{:>16x} start+0x0 (/bin/x)\n\n",
            0x19, 0x19, 0x40
        );
        assert_eq!(st.text(id), Some(want.as_bytes()));
        // A sampled address: its containing function, on the sample's line.
        let single = Shape {
            flags: FRAME_FIELDS,
            ..chain
        };
        let (id, _) = st.find_or_add(single, [0x1019u64].into_iter(), NO_STACK);
        st.make_text(id, &[(pc, 0x1019)], &lines);
        let want = format!(" {:>16x} main+0x19 (/bin/x)\n", 0x1019);
        assert_eq!(st.text(id), Some(want.as_bytes()));
    }

    #[test]
    fn memo_keeps_what_fits() {
        let mut m: Memo<u32> = Memo::default();
        let mut b = b"x".to_vec();
        assert!(!m.put(1, &mut b));
        m.keep(1, b"abc");
        assert!(m.put(1, &mut b) && !m.put(2, &mut b));
        assert_eq!(b, b"xabc");
        m.keep(2, &[b'y'; MEMO + 1]);
        assert!(!m.put(2, &mut b) && !m.put(1, &mut b));
        assert_eq!(b, b"xabc");
    }

    #[test]
    fn frame_text_as_perf_prints_it() {
        let mut fr = Frame::named("main");
        fr.module = Some("/bin/x".into());
        fr.module_offset = 0x1000;
        let all = Fields::default_for(1, true);
        assert_eq!(&*frame_text(&fr, 0x1019, all), b" main+0x19 (/bin/x)");
        fr.inlined = true;
        assert_eq!(&*frame_text(&fr, 0x1019, all), b" main+0x19 (inlined)");
        fr.function = None;
        fr.inlined = false;
        assert_eq!(&*frame_text(&fr, 0x1019, all), b" [unknown] (/bin/x)");
    }
}
