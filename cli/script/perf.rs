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
//! named as perf names it), DWARF stacks unwound against them. The samples' text is
//! held until [`BATCH_TEXT`] bytes, then the locations not seen before are symbolized
//! in one batch per module and the text written; each distinct (module, offset) is
//! symbolized once and its text kept, so memory follows the distinct locations and the
//! replay's window, not the file.

use rustc_hash::FxHashMap as HashMap;

use hwprof_pmu::attr::sample as sample_type;
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::perfdata::tracing::TraceFormat;
use hwprof_sampler::record::{Record, Sample, context, misc};
use hwprof_symbolize::process::Processes;
use hwprof_symbolize::unwind::stream::TRUNCATED_MARK;
use hwprof_symbolize::{Frame, Locator, Module, ModuleId, Symbolizer};

use super::out::{dec, dec_pad, hex, hex_pad};
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

/// Per event: its name, fields, whether frames go on lines of their own, and its
/// tracepoint format.
struct EventOut {
    name: String,
    fields: Fields,
    chain: bool,
    trace: Option<TraceFormat>,
}

/// A location's text: per frame (inlined ones first), what follows the address.
type Lines = Vec<Box<[u8]>>;

/// A location as printed: (module, offset, return address, the fields that shape its
/// text).
type Key = (ModuleId, u64, bool, u32);

/// The fields a frame's text depends on.
const FRAME_FIELDS: u32 =
    Field::Ip as u32 | Field::Sym as u32 | Field::SymOff as u32 | Field::Dso as u32;

/// Samples' text waits for its frames' until this much is held, then the locations
/// not seen before are symbolized in one batch per module (memory stays bounded; a
/// batch costs one read of a file's symbols where one address at a time costs one
/// each).
const BATCH_TEXT: usize = 1 << 20;
const BATCH_FRAMES: usize = 1 << 16;

/// A frame waiting for its text: where it goes in [`PerfText::text`].
struct Pending {
    at: usize,
    key: Key,
    shown: u64,
    /// A line of a callchain (else the end of the sample's line).
    chain: bool,
}

/// Prints samples as `perf script` does.
pub struct PerfText {
    events: Vec<EventOut>,
    /// The widest event name (perf aligns names to it).
    name_width: usize,
    sym: Symbolizer,
    /// Per location: the text of its frames.
    lines: HashMap<Key, Lines>,
    /// The current sample's locations.
    locs: Vec<(u64, ModuleId, u64, bool)>,
    /// The samples' text so far, without their frames' (see [`BATCH_TEXT`]).
    text: Vec<u8>,
    /// Their frames, in order.
    frames: Vec<Pending>,
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
        let events: Vec<EventOut> = data
            .attrs()
            .iter()
            .map(|e| {
                let a = &e.attr;
                let fields = spec.resolve(a.type_, a.sample_type);
                let both = sample_type::REGS_USER | sample_type::STACK_USER;
                let chain = fields.has(Field::Ip)
                    && (a.sample_type & sample_type::CALLCHAIN != 0
                        || a.sample_type & both == both);
                let trace = (a.type_ == hwprof_pmu::attr::types::TRACEPOINT)
                    .then(|| formats.iter().find(|f| f.id == Some(a.config)).cloned())
                    .flatten();
                EventOut {
                    name: esc(&e.name).into_owned(),
                    fields,
                    chain,
                    trace,
                }
            })
            .collect();
        let name_width = events.iter().map(|e| e.name.len()).max().unwrap_or(0);
        let trusted = hwprof_symbolize::kernel_matches(data.features());
        let mut sym = Symbolizer::with_locator(true, trusted, locator);
        sym.prefetch_kernel_symbols();
        PerfText {
            events,
            name_width,
            sym,
            lines: HashMap::default(),
            locs: Vec::new(),
            text: Vec::new(),
            frames: Vec::new(),
        }
    }

    /// Takes one sample, with `procs` as they were at its time; its text goes to `out`
    /// (in batches), with `unwound`: its callchain with the user part unwound (a DWARF
    /// sample).
    pub fn sample(
        &mut self,
        procs: &mut Processes,
        out: &mut Vec<u8>,
        rec: &Record,
        s: &Sample,
        unwound: Option<&[u64]>,
    ) {
        self.take(procs, rec, s, unwound);
        if self.text.len() >= BATCH_TEXT || self.frames.len() >= BATCH_FRAMES {
            self.finish(procs, out);
        }
    }

    /// Writes what is held to `out`: the frames' text (symbolizing the locations not
    /// seen before, one batch per module) in the samples' text.
    pub fn finish(&mut self, procs: &Processes, out: &mut Vec<u8>) {
        let mut todo: HashMap<ModuleId, Vec<(u64, bool)>> = HashMap::default();
        for p in &self.frames {
            if !self.lines.contains_key(&p.key) {
                let (m, off, ret, _) = p.key;
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
        for p in &self.frames {
            let (m, off, ret, bits) = p.key;
            if !self.lines.contains_key(&p.key)
                && let Some(frames) = resolved.get(&(m, off, ret))
            {
                let f = Fields(bits);
                let lines = frames.iter().map(|fr| frame_text(fr, off, f)).collect();
                self.lines.insert(p.key, lines);
            }
        }
        let mut from = 0;
        static EMPTY: Lines = Vec::new();
        for p in &self.frames {
            out.extend_from_slice(&self.text[from..p.at]);
            from = p.at;
            let lines = self.lines.get(&p.key).unwrap_or(&EMPTY);
            if p.chain {
                for line in lines {
                    out.push(b'\t');
                    if p.key.3 & Field::Ip as u32 != 0 {
                        hex_pad(out, p.shown, 16);
                    }
                    out.extend_from_slice(line);
                    out.push(b'\n');
                }
            } else if let Some(last) = lines.last() {
                // The sampled address, one frame: its containing function.
                out.extend_from_slice(last);
            }
        }
        out.extend_from_slice(&self.text[from..]);
        self.text.clear();
        self.frames.clear();
    }

    /// One sample: its text is held.
    fn take(&mut self, procs: &mut Processes, rec: &Record, s: &Sample, unwound: Option<&[u64]>) {
        let Some(ev) = rec.attr.and_then(|i| self.events.get(i)) else {
            return;
        };
        let (fields, chain) = (ev.fields, ev.chain);
        let pid = s.pid.unwrap_or(u32::MAX);
        let tid = s.tid.unwrap_or(pid);
        let mut b = std::mem::take(&mut self.text);
        self.head(procs, &mut b, rec.attr.unwrap_or(0), s, pid, tid);
        let bits = fields.0 & FRAME_FIELDS;
        let kernel_mode = rec.header.misc & misc::CPUMODE_MASK == misc::KERNEL;
        if chain {
            b.push(b'\n');
            self.locs.clear();
            match (unwound, &s.callchain) {
                (Some(c), _) => self.chain_locs(procs, pid, kernel_mode, true, c.iter().copied()),
                (None, Some(c)) => self.chain_locs(procs, pid, kernel_mode, false, c.iter()),
                (None, None) => {
                    if let Some(ip) = s.ip {
                        self.chain_locs(procs, pid, kernel_mode, false, [ip].into_iter());
                    }
                }
            }
            for &(addr, m, off, ret) in &self.locs {
                let shown = shown_addr(procs, m, addr, off);
                self.frames.push(Pending {
                    at: b.len(),
                    key: (m, off, ret, bits),
                    shown,
                    chain: true,
                });
            }
            b.push(b'\n');
        } else {
            if fields.has(Field::Ip)
                && let Some(ip) = s.ip
            {
                let (m, off) = procs.locate(pid, ip, kernel_mode);
                b.push(b' ');
                hex_pad(&mut b, ip, 16);
                self.frames.push(Pending {
                    at: b.len(),
                    key: (m, off, false, bits),
                    shown: ip,
                    chain: false,
                });
            }
            b.push(b'\n');
        }
        self.text = b;
    }

    /// `comm tid [cpu] time: period event: ` (and addr, trace data).
    fn head(
        &self,
        procs: &mut Processes,
        b: &mut Vec<u8>,
        attr: usize,
        s: &Sample,
        pid: u32,
        tid: u32,
    ) {
        let Some(ev) = self.events.get(attr) else {
            return;
        };
        let f = ev.fields;
        if f.has(Field::Comm) {
            let c = procs.comm_of(pid, tid);
            let comm = esc(procs.comm(c));
            if !ev.chain {
                b.resize(b.len() + 16usize.saturating_sub(comm.chars().count()), b' ');
            }
            b.extend_from_slice(comm.as_bytes());
            b.push(b' ');
        }
        match (f.has(Field::Pid), f.has(Field::Tid)) {
            (true, true) => {
                id(b, pid, 5, false);
                b.push(b'/');
                id(b, tid, 5, true);
                b.push(b' ');
            }
            (true, false) => {
                id(b, pid, 5, false);
                b.push(b' ');
            }
            (false, true) => {
                id(b, tid, 5, false);
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
            dec_pad(b, t / 1_000_000_000, 5);
            b.push(b'.');
            dec_zero(b, t % 1_000_000_000 / 1000, 6);
            b.extend_from_slice(b": ");
        }
        if f.has(Field::Period)
            && let Some(p) = s.period
        {
            dec_pad(b, p, 10);
            b.push(b' ');
        }
        if f.has(Field::Event) {
            b.resize(
                b.len() + self.name_width.saturating_sub(ev.name.len()),
                b' ',
            );
            b.extend_from_slice(ev.name.as_bytes());
            b.extend_from_slice(b": ");
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

    /// The locations of a callchain, as perf lists them: markers switch between the
    /// kernel and user parts and are not frames; every entry after the first is a
    /// return address (in an unwound user part: after its first). `unwound`: the user
    /// part was unwound here, and its mark of a
    /// cut stack is left out (perf's own unwinding just ends); a mark in the recorded
    /// chain (written by `hwprof record --call-graph dwarf`) is an address perf
    /// prints as `[unknown]`, and so is it here.
    fn chain_locs(
        &mut self,
        procs: &mut Processes,
        pid: u32,
        kernel_mode: bool,
        unwound: bool,
        chain: impl Iterator<Item = u64>,
    ) {
        let mut kernel = kernel_mode;
        let mut first = true;
        for addr in chain {
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
            let (m, off) = procs.locate(pid, addr, kernel);
            self.locs.push((addr, m, off, !first));
            first = false;
        }
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

/// A pid or tid as perf prints it (`-1` for the kernel's), padded to `width`
/// (`left`: `%-5d`).
fn id(b: &mut Vec<u8>, v: u32, width: usize, left: bool) {
    let s = (v as i32).to_string();
    let pad = width.saturating_sub(s.len());
    if !left {
        b.resize(b.len() + pad, b' ');
    }
    b.extend_from_slice(s.as_bytes());
    if left {
        b.resize(b.len() + pad, b' ');
    }
}

/// `v` zero-padded to `width` digits.
fn dec_zero(b: &mut Vec<u8>, v: u64, width: usize) {
    let mut tmp = Vec::with_capacity(20);
    dec(&mut tmp, v);
    b.resize(b.len() + width.saturating_sub(tmp.len()), b'0');
    b.extend_from_slice(&tmp);
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
