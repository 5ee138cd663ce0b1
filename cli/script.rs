//! `hwprof script`: the samples of a perf.data file as `perf script` prints them
//! (symbolized, [`perf`]), or every record of it as a dump (`-D`) or JSON lines.
//!
//! Output goes through one locked, buffered stdout; numbers are formatted by hand (no
//! `fmt`, no per-record serde) because this command is meant to be several times faster
//! than `perf script` on large files. In text, names from the recording (comm names,
//! paths, event and header strings) are escaped ([`crate::render::escape`]): a record
//! is one line whatever they hold.

mod out;
mod perf;

use std::collections::HashMap;
use std::io::{self, Write};

use anyhow::Context;
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::record::{Body, DataSrc, FileId, Record, Sample, kind, misc};

use hwprof_pmu::attr::sample as sample_type;
use hwprof_symbolize::Locator;
use hwprof_symbolize::process::Processes;

use crate::render::{escape as esc, escape_bytes as esc_bytes};
use hwprof_symbolize::unwind::{Arch, StreamUnwinder, stream};

use crate::args::{ScriptArgs, ScriptFormat};
use out::{Obj, dec, dec_pad, hex, hex_pad, id_pad};

/// Flush the line buffer to stdout past this many bytes.
const FLUSH_AT: usize = 1 << 16;

pub fn run(a: ScriptArgs) -> anyhow::Result<u8> {
    let data = crate::input::open(&a.input.file)?;
    let json = matches!(a.format, ScriptFormat::Jsonl);
    let perf_text = if json || a.dump {
        None
    } else {
        let spec = match &a.fields {
            Some(f) => match perf::FieldSpec::parse(f) {
                Ok(s) => s,
                Err(e) => return crate::error::usage(format!("-F: {e}")),
            },
            None => perf::FieldSpec::Default,
        };
        let locator = Locator::from_env(a.input.symfs.clone());
        Some(perf::PerfText::new(&data, &spec, locator))
    };
    let stdout = io::stdout();
    let mut w = stdout.lock();
    let mut p = Printer {
        buf: Vec::with_capacity(FLUSH_AT * 2),
        names: data.attrs().iter().map(|e| e.name.clone()).collect(),
        // perf names pid 0 "swapper" until a COMM says otherwise.
        comms: HashMap::from([(0, b"swapper".to_vec())]),
        json,
        unwinder: stack_unwinder(&data, a.input.symfs.clone()),
        chain: Vec::new(),
        unwound: false,
    };
    if a.header {
        p.header(&data)?;
    }
    use crate::destination::WRITING_STDOUT as STDOUT;
    if let Some(text) = perf_text {
        w.write_all(&p.buf).context(STDOUT)?;
        let mut v = PerfVisitor {
            text,
            unwinder: p.unwinder.take(),
            chain: Vec::new(),
            buf: std::mem::take(&mut p.buf),
            w: &mut w,
        };
        let mut procs = Processes::new(hwprof_symbolize::buildid::by_path(data.features()));
        let res = hwprof_symbolize::replay::replay(&data, &mut procs, &mut v);
        // Print what was decoded before an error, then report it.
        let finished = v.text.finish(&procs, &mut v.buf, &mut flusher(&mut *v.w));
        finished
            .and_then(|()| v.w.write_all(&v.buf))
            .and_then(|()| v.w.flush())
            .context(STDOUT)?;
        res.with_context(|| format!("reading {}", a.input.file.display()))?;
        return Ok(0);
    }
    let res = data.for_each_record(|off, rec| -> anyhow::Result<()> {
        p.record(off, rec);
        if p.buf.len() >= FLUSH_AT {
            w.write_all(&p.buf).context(STDOUT)?;
            p.buf.clear();
        }
        Ok(())
    });
    // Print what was decoded before an error, then report it.
    w.write_all(&p.buf)
        .and_then(|()| w.flush())
        .context(STDOUT)?;
    res.with_context(|| format!("reading {}", a.input.file.display()))?;
    Ok(0)
}

/// An unwinder for the user stacks of `--call-graph dwarf` recordings made with raw
/// stacks, when the file has such samples.
fn stack_unwinder(data: &PerfData, symfs: Option<std::path::PathBuf>) -> Option<StreamUnwinder> {
    let both = sample_type::REGS_USER | sample_type::STACK_USER;
    if !data
        .attrs()
        .iter()
        .any(|a| a.attr.sample_type & both == both)
    {
        return None;
    }
    let arch = data
        .features()
        .arch
        .as_deref()
        .and_then(Arch::from_name)
        .or_else(Arch::host)?;
    Some(StreamUnwinder::new(arch, false, Locator::from_env(symfs)))
}

struct Printer {
    /// Unwinds raw-stack samples: their callchains are printed with the user part
    /// unwound (as `hwprof record` writes them), `PERF_CONTEXT_USER` then the frames.
    unwinder: Option<StreamUnwinder>,
    /// The current sample's callchain from unwinding, when `unwound`.
    chain: Vec<u64>,
    unwound: bool,
    buf: Vec<u8>,
    names: Vec<String>,
    /// Command names by tid (from COMM, inherited on FORK), for text output.
    comms: HashMap<u32, Vec<u8>>,
    json: bool,
}

/// The default output, `perf script`'s text: the replay's samples, each with the
/// processes at its time, to stdout.
struct PerfVisitor<'w, W: Write> {
    text: perf::PerfText,
    /// Unwinds raw-stack samples against the replay's processes.
    unwinder: Option<StreamUnwinder>,
    chain: Vec<u64>,
    buf: Vec<u8>,
    w: &'w mut W,
}

impl<W: Write> hwprof_symbolize::replay::Visitor for PerfVisitor<'_, W> {
    fn sample(
        &mut self,
        procs: &mut Processes,
        rec: &Record<'_>,
        s: &Sample<'_>,
    ) -> hwprof_symbolize::Result<()> {
        let mut unwound = false;
        if let Some(u) = &mut self.unwinder
            && let Some((frames, ending)) = u.unwind_in(procs, rec)
        {
            stream::callchain(s.callchain.as_ref(), frames, ending, &mut self.chain);
            unwound = true;
        }
        let chain = unwound.then_some(&self.chain[..]);
        let mut flush = flusher(&mut *self.w);
        self.text
            .sample(procs, &mut self.buf, rec, s, chain, &mut flush)
            .and_then(|()| flush(&mut self.buf))
            .map_err(|source| hwprof_symbolize::Error::Io {
                what: crate::destination::WRITING_STDOUT.into(),
                source,
            })
    }
}

/// What writes a buffer out to `w` once it holds [`FLUSH_AT`] bytes, and empties it.
fn flusher<W: Write>(w: &mut W) -> impl FnMut(&mut Vec<u8>) -> io::Result<()> + '_ {
    move |buf| {
        if buf.len() >= FLUSH_AT {
            w.write_all(buf)?;
            buf.clear();
        }
        Ok(())
    }
}

fn record_name(t: u32) -> &'static str {
    kind::name(t).unwrap_or("unknown")
}

impl Printer {
    fn header(&mut self, data: &PerfData) -> anyhow::Result<()> {
        let f = data.features();
        if self.json {
            let attrs: Vec<serde_json::Value> = data
                .attrs()
                .iter()
                .map(|e| serde_json::json!({"name": e.name, "ids": e.ids, "attr": e.attr}))
                .collect();
            let v = serde_json::json!({
                "type": "header",
                "pipe": data.is_pipe(),
                "data_offset": data.data_offset(),
                "data_size": data.data_size(),
                "feature_ids": data.feature_ids(),
                "attrs": attrs,
                "features": f,
            });
            serde_json::to_writer(&mut self.buf, &v)?;
            self.buf.push(b'\n');
        } else {
            let b = &mut self.buf;
            writeln!(
                b,
                "# {} mode, data at {:#x} ({} bytes)",
                if data.is_pipe() { "pipe" } else { "file" },
                data.data_offset(),
                data.data_size()
            )?;
            for (k, v) in [
                ("hostname", &f.hostname),
                ("os release", &f.osrelease),
                ("perf version", &f.version),
                ("arch", &f.arch),
                ("cpudesc", &f.cpudesc),
                ("cpuid", &f.cpuid),
            ] {
                if let Some(v) = v {
                    writeln!(b, "# {k} : {}", esc(v))?;
                }
            }
            if let Some((avail, online)) = f.nr_cpus {
                writeln!(b, "# nrcpus online : {online}\n# nrcpus avail : {avail}")?;
            }
            if let Some(c) = &f.cmdline {
                writeln!(b, "# cmdline : {}", esc(&c.join(" ")))?;
            }
            for e in data.attrs() {
                let a = &e.attr;
                writeln!(
                    b,
                    "# event : name = {}, type = {}, config = {:#x}, sample_type = {:#x}, \
                     read_format = {:#x}, sample_period = {}, freq = {}, sample_id_all = {}, \
                     ids = {:?}",
                    esc(&e.name),
                    a.type_,
                    a.config,
                    a.sample_type,
                    a.read_format,
                    a.sample_period,
                    a.freq,
                    a.sample_id_all,
                    e.ids
                )?;
            }
            for id in &f.build_ids {
                b.extend_from_slice(b"# build id ");
                out::hex_bytes(b, &id.build_id);
                writeln!(b, " {}", esc(&id.filename))?;
            }
        }
        Ok(())
    }

    fn event_name(&self, rec: &Record) -> &str {
        rec.attr
            .and_then(|i| self.names.get(i))
            .map_or("", String::as_str)
    }

    fn record(&mut self, off: u64, rec: &Record) {
        // Keep the comm table for text output (cheap, also in JSON mode).
        match &rec.body {
            Body::Comm { tid, comm, .. } => {
                self.comms.insert(*tid, comm.to_vec());
            }
            Body::Fork(t) => {
                if let Some(c) = self.comms.get(&t.ptid).cloned() {
                    self.comms.insert(t.tid, c);
                }
            }
            _ => {}
        }
        self.unwound = false;
        if let Some(u) = &mut self.unwinder
            && let Some((frames, ending)) = u.record(rec)
        {
            let recorded = match &rec.body {
                Body::Sample(s) => s.callchain.as_ref(),
                _ => None,
            };
            stream::callchain(recorded, frames, ending, &mut self.chain);
            self.unwound = true;
        }
        if self.json {
            self.json_record(off, rec);
        } else {
            self.text_record(off, rec);
        }
    }

    // ----------------------------------------------------------------- JSON lines

    fn json_record(&mut self, _off: u64, rec: &Record) {
        let name = self.event_name(rec).to_string();
        let mut j = Obj::new(&mut self.buf);
        j.s("type", record_name(rec.header.type_).as_bytes());
        j.u("misc", u64::from(rec.header.misc));
        match &rec.body {
            Body::Sample(s) => {
                j.s("event", name.as_bytes());
                json_sample(&mut j, s, self.unwound.then_some(&self.chain[..]));
            }
            Body::Mmap(m) => {
                j.id("pid", m.pid.into()).id("tid", m.tid.into());
                j.u("addr", m.addr).u("len", m.len).u("pgoff", m.pgoff);
                j.s("filename", m.filename);
            }
            Body::Mmap2(m) => {
                j.id("pid", m.pid.into()).id("tid", m.tid.into());
                j.u("addr", m.addr).u("len", m.len).u("pgoff", m.pgoff);
                match m.file_id {
                    FileId::Inode {
                        maj,
                        min,
                        ino,
                        ino_generation,
                    } => {
                        j.u("maj", maj.into()).u("min", min.into());
                        j.u("ino", ino).u("ino_generation", ino_generation);
                    }
                    FileId::BuildId(id) => {
                        j.x("build_id", id);
                    }
                }
                j.u("prot", m.prot.into()).u("flags", m.flags.into());
                j.s("filename", m.filename);
            }
            Body::Lost { id, lost } => {
                j.u("id", *id).u("lost", *lost);
            }
            Body::Comm {
                pid,
                tid,
                comm,
                exec,
            } => {
                j.id("pid", (*pid).into()).id("tid", (*tid).into());
                j.s("comm", comm).b("exec", *exec);
            }
            Body::Exit(t) | Body::Fork(t) => {
                j.id("pid", t.pid.into()).id("ppid", t.ppid.into());
                j.id("tid", t.tid.into()).id("ptid", t.ptid.into());
                j.u("time", t.time);
            }
            Body::Throttle(t) | Body::Unthrottle(t) => {
                j.u("time", t.time)
                    .u("id", t.id)
                    .u("stream_id", t.stream_id);
            }
            Body::Read { pid, tid, values } => {
                j.id("pid", (*pid).into()).id("tid", (*tid).into());
                json_read(&mut j, values);
            }
            Body::Aux {
                aux_offset,
                aux_size,
                flags,
            } => {
                j.u("aux_offset", *aux_offset).u("aux_size", *aux_size);
                j.u("flags", *flags);
            }
            Body::ItraceStart { pid, tid } => {
                j.id("pid", (*pid).into()).id("tid", (*tid).into());
            }
            Body::LostSamples { lost } => {
                j.u("lost", *lost);
            }
            Body::Switch { out, preempt } => {
                j.b("out", *out).b("preempt", *preempt);
            }
            Body::SwitchCpuWide {
                out,
                preempt,
                next_prev_pid,
                next_prev_tid,
            } => {
                j.b("out", *out).b("preempt", *preempt);
                j.id("next_prev_pid", (*next_prev_pid).into());
                j.id("next_prev_tid", (*next_prev_tid).into());
            }
            Body::Namespaces {
                pid,
                tid,
                link_info,
            } => {
                j.id("pid", (*pid).into()).id("tid", (*tid).into());
                j.arr("link_info", link_info.iter());
            }
            Body::Ksymbol {
                addr,
                len,
                ksym_type,
                flags,
                name,
            } => {
                j.u("addr", *addr).u("len", (*len).into());
                j.u("ksym_type", (*ksym_type).into())
                    .u("flags", (*flags).into());
                j.s("name", name);
            }
            Body::BpfEvent {
                type_,
                flags,
                id,
                tag,
            } => {
                j.u("bpf_type", (*type_).into()).u("flags", (*flags).into());
                j.u("id", (*id).into()).x("tag", tag);
            }
            Body::Cgroup { id, path } => {
                j.u("id", *id).s("path", path);
            }
            Body::TextPoke { addr, old, new } => {
                j.u("addr", *addr).x("old", old).x("new", new);
            }
            Body::AuxOutputHwId { hw_id } => {
                j.u("hw_id", *hw_id);
            }
            Body::HeaderAttr { attr, ids } => {
                let o = j.key("attr");
                let _ = serde_json::to_writer(&mut *o, attr);
                j.arr("ids", ids.iter());
            }
            Body::TracingData { size } => {
                j.u("size", (*size).into());
            }
            Body::IdIndex(v) => {
                let o = j.key("entries");
                o.push(b'[');
                for (i, e) in v.iter().enumerate() {
                    if i > 0 {
                        o.push(b',');
                    }
                    let mut e_ = Obj::new(o);
                    e_.u("id", e.id)
                        .u("idx", e.idx)
                        .id("cpu", e.cpu)
                        .id("tid", e.tid);
                    e_.end();
                }
                o.push(b']');
            }
            Body::Auxtrace {
                size,
                offset,
                reference,
                idx,
                tid,
                cpu,
            } => {
                j.u("size", *size)
                    .u("offset", *offset)
                    .u("reference", *reference);
                j.u("idx", (*idx).into()).id("tid", (*tid).into());
                j.id("cpu", (*cpu).into());
            }
            Body::TimeConv(t) => {
                j.u("time_shift", t.time_shift).u("time_mult", t.time_mult);
                j.u("time_zero", t.time_zero);
                j.opt("time_cycles", t.time_cycles);
                j.opt("time_mask", t.time_mask);
                if let Some(v) = t.cap_user_time_zero {
                    j.b("cap_user_time_zero", v);
                }
                if let Some(v) = t.cap_user_time_short {
                    j.b("cap_user_time_short", v);
                }
            }
            Body::HeaderFeature { feature, data } => {
                j.u("feat_id", *feature).u("size", data.len() as u64);
            }
            Body::Compressed { data } => {
                j.u("data_size", data.len() as u64);
            }
            Body::FinishedRound | Body::FinishedInit => {}
            Body::Other { payload } => {
                j.u("record_type", rec.header.type_.into());
                j.x("payload", payload);
            }
            _ => {
                j.u("record_type", rec.header.type_.into());
            }
        }
        if let Some(sid) = &rec.sample_id {
            let o = j.key("sample_id");
            let mut s = Obj::new(o);
            s.opt_id("pid", sid.pid);
            s.opt_id("tid", sid.tid);
            s.opt("time", sid.time).opt("id", sid.id);
            s.opt("stream_id", sid.stream_id);
            s.opt_id("cpu", sid.cpu);
            s.opt("identifier", sid.identifier);
            s.end();
        }
        j.end();
        self.buf.push(b'\n');
    }

    // ----------------------------------------------------------------------- text

    fn comm_of(&self, tid: Option<u32>) -> Vec<u8> {
        match tid.and_then(|t| self.comms.get(&t)) {
            Some(c) => c.clone(),
            None => format!(":{}", tid.unwrap_or(0)).into_bytes(),
        }
    }

    fn text_record(&mut self, _off: u64, rec: &Record) {
        if let Body::Sample(s) = &rec.body {
            let comm = self.comm_of(s.tid);
            let name = self.event_name(rec).to_string();
            let chain = self.unwound.then_some(&self.chain[..]);
            text_sample(&mut self.buf, &comm, &name, s, chain);
            return;
        }
        let b = &mut self.buf;
        if let Some(t) = rec.time() {
            time(b, t);
            b.extend_from_slice(b": ");
        }
        b.extend_from_slice(b"PERF_RECORD_");
        for c in record_name(rec.header.type_).bytes() {
            b.push(c.to_ascii_uppercase());
        }
        let _ = match &rec.body {
            Body::Mmap(m) => write!(
                b,
                " {}/{}: [{:#x}({:#x}) @ {:#x}]: {} {}",
                m.pid as i32,
                m.tid,
                m.addr,
                m.len,
                m.pgoff,
                if rec.header.misc & misc::CPUMODE_MASK == misc::USER {
                    'x'
                } else {
                    'k'
                },
                esc_bytes(m.filename)
            ),
            Body::Mmap2(m) => {
                let _ = write!(
                    b,
                    " {}/{}: [{:#x}({:#x}) @ {:#x} ",
                    m.pid as i32, m.tid, m.addr, m.len, m.pgoff
                );
                match m.file_id {
                    FileId::Inode {
                        maj,
                        min,
                        ino,
                        ino_generation,
                    } => {
                        let _ = write!(b, "{maj:02x}:{min:02x} {ino} {ino_generation}");
                    }
                    FileId::BuildId(id) => {
                        b.extend_from_slice(b"build id ");
                        out::hex_bytes(b, id);
                    }
                }
                write!(b, "]: {} {}", prot_str(m.prot), esc_bytes(m.filename))
            }
            Body::Comm {
                pid,
                tid,
                comm,
                exec,
            } => write!(
                b,
                "{} {}: {}/{}",
                if *exec { " EXEC" } else { "" },
                esc_bytes(comm),
                crate::render::id(*pid),
                crate::render::id(*tid)
            ),
            Body::Exit(t) | Body::Fork(t) => {
                let id = crate::render::id;
                write!(
                    b,
                    "({}:{}):({}:{})",
                    id(t.pid),
                    id(t.tid),
                    id(t.ppid),
                    id(t.ptid)
                )
            }
            Body::Lost { id, lost } => write!(b, " id {id} lost {lost}"),
            Body::LostSamples { lost } => write!(b, " lost {lost}"),
            Body::Throttle(t) | Body::Unthrottle(t) => {
                write!(b, " {}: id:{} stream_id:{}", t.time, t.id, t.stream_id)
            }
            Body::Switch { out, preempt } => write!(
                b,
                " {}{}",
                if *out { "OUT" } else { "IN" },
                if *preempt { " preempt" } else { "" }
            ),
            Body::SwitchCpuWide {
                out,
                preempt,
                next_prev_pid,
                next_prev_tid,
            } => write!(
                b,
                " {}{} {} pid/tid: {}/{}",
                if *out { "OUT" } else { "IN" },
                if *preempt { " preempt" } else { "" },
                if *out { "next" } else { "prev" },
                crate::render::id(*next_prev_pid),
                crate::render::id(*next_prev_tid)
            ),
            Body::TimeConv(t) => write!(
                b,
                " shift {} mult {} zero {}",
                t.time_shift, t.time_mult, t.time_zero
            ),
            Body::HeaderAttr { attr, ids } => write!(
                b,
                " type {} config {:#x} sample_type {:#x} ids {:?}",
                attr.type_,
                attr.config,
                attr.sample_type,
                ids.to_vec()
            ),
            Body::HeaderFeature { feature, data } => {
                write!(b, " feat_id {feature} size {}", data.len())
            }
            Body::Compressed { data } => write!(b, " data size {}", data.len()),
            Body::Ksymbol {
                addr, len, name, ..
            } => write!(b, " addr {addr:#x} len {len} name {}", esc_bytes(name)),
            Body::Cgroup { id, path } => {
                write!(b, " cgroup: {id} {}", esc_bytes(path))
            }
            Body::Other { payload } => {
                write!(b, " type {} size {}", rec.header.type_, payload.len())
            }
            _ => Ok(()),
        };
        b.push(b'\n');
    }
}

fn prot_str(p: u32) -> String {
    let mut s = String::with_capacity(4);
    s.push(if p & 1 != 0 { 'r' } else { '-' });
    s.push(if p & 2 != 0 { 'w' } else { '-' });
    s.push(if p & 4 != 0 { 'x' } else { '-' });
    s
}

/// `secs.micros`, as perf script prints times.
fn time(b: &mut Vec<u8>, t: u64) {
    dec(b, t / 1_000_000_000);
    b.push(b'.');
    let us = t % 1_000_000_000 / 1000;
    let mut tmp = Vec::with_capacity(6);
    dec(&mut tmp, us);
    b.resize(b.len() + 6 - tmp.len(), b'0');
    b.extend_from_slice(&tmp);
}

/// `comm pid/tid [cpu] time: period event: ip`, then callchain and branch lines.
/// One sample; `chain`: its callchain with the user part unwound, printed instead of
/// the recorded one.
fn text_sample(b: &mut Vec<u8>, comm: &[u8], event: &str, s: &Sample, chain: Option<&[u64]>) {
    let comm = esc_bytes(comm);
    let pad = 16usize.saturating_sub(comm.len());
    b.resize(b.len() + pad, b' ');
    b.extend_from_slice(comm.as_bytes());
    b.push(b' ');
    if let (Some(pid), Some(tid)) = (s.pid, s.tid) {
        id_pad(b, pid, 6);
        b.push(b'/');
        id_pad(b, tid, 0);
    }
    if let Some(cpu) = s.cpu {
        b.extend_from_slice(b" [");
        if cpu < 100 {
            b.push(b'0');
        }
        if cpu < 10 {
            b.push(b'0');
        }
        dec(b, cpu.into());
        b.push(b']');
    }
    if let Some(t) = s.time {
        b.push(b' ');
        time(b, t);
        b.push(b':');
    }
    if let Some(p) = s.period {
        dec_pad(b, p, 11);
    }
    b.push(b' ');
    b.extend_from_slice(esc(event).as_bytes());
    b.push(b':');
    if let Some(ip) = s.ip {
        hex_pad(b, ip, 17);
    }
    if let Some(a) = s.addr {
        b.extend_from_slice(b" addr ");
        hex(b, a);
    }
    if let Some(d) = s.data_src {
        b.extend_from_slice(b" data_src ");
        hex(b, d);
        b.push(b' ');
        b.extend_from_slice(DataSrc::from_u64(d).summary().as_bytes());
    }
    if let Some(w) = s.weight {
        b.extend_from_slice(b" weight ");
        dec(b, w);
    }
    if let Some(w) = s.weight_struct {
        b.extend_from_slice(b" weight ");
        dec(b, w.var1_dw.into());
    }
    b.push(b'\n');
    let mut entry = |a: u64| {
        b.push(b'\t');
        hex_pad(b, a, 16);
        b.push(b'\n');
    };
    match (chain, &s.callchain) {
        (Some(c), recorded) => {
            c.iter().copied().for_each(&mut entry);
            // The kernel's words, as recorded, after the unwound chain.
            for a in recorded.iter().flat_map(|r| r.iter()) {
                b.extend_from_slice(b"\trecorded ");
                hex_pad(b, a, 16);
                b.push(b'\n');
            }
        }
        (None, Some(cc)) => cc.iter().for_each(&mut entry),
        (None, None) => {}
    }
    if let Some(bs) = &s.branch_stack {
        for e in bs.iter() {
            b.extend_from_slice(b"\tbranch ");
            hex(b, e.from);
            b.extend_from_slice(b" -> ");
            hex(b, e.to);
            b.extend_from_slice(match (e.mispred(), e.predicted()) {
                (true, _) => b" M",
                (false, true) => b" P",
                _ => b" -",
            });
            b.extend_from_slice(b" cycles ");
            dec(b, e.cycles().into());
            b.push(b'\n');
        }
    }
    if let Some(raw) = s.raw {
        b.extend_from_slice(b"\traw ");
        out::hex_bytes(b, raw);
        b.push(b'\n');
    }
}

fn json_read(j: &mut Obj, r: &hwprof_sampler::record::ReadValues) {
    let o = j.key("read");
    let mut ro = Obj::new(o);
    ro.opt("time_enabled", r.time_enabled);
    ro.opt("time_running", r.time_running);
    let o = ro.key("values");
    o.push(b'[');
    for (i, v) in r.values.iter().enumerate() {
        if i > 0 {
            o.push(b',');
        }
        let mut vo = Obj::new(o);
        vo.u("value", v.value).opt("id", v.id).opt("lost", v.lost);
        vo.end();
    }
    o.push(b']');
    ro.end();
}

fn json_regs(j: &mut Obj, k: &str, r: &hwprof_sampler::record::Regs) {
    let o = j.key(k);
    let mut ro = Obj::new(o);
    ro.u("abi", r.abi)
        .u("mask", r.mask)
        .arr("regs", r.regs.iter());
    ro.end();
}

fn json_sample(j: &mut Obj, s: &Sample, chain: Option<&[u64]>) {
    j.opt("identifier", s.identifier).opt("ip", s.ip);
    j.opt_id("pid", s.pid).opt_id("tid", s.tid);
    j.opt("time", s.time).opt("addr", s.addr).opt("id", s.id);
    j.opt("stream_id", s.stream_id).opt_id("cpu", s.cpu);
    j.opt("period", s.period);
    if let Some(r) = &s.read {
        json_read(j, r);
    }
    match (chain, &s.callchain) {
        (Some(c), recorded) => {
            j.arr("callchain", c.iter().copied());
            // The kernel's words, as recorded, next to the unwound chain.
            if let Some(r) = recorded {
                j.arr("callchain_recorded", r.iter());
            }
        }
        (None, Some(cc)) => {
            j.arr("callchain", cc.iter());
        }
        (None, None) => {}
    }
    if let Some(raw) = s.raw {
        j.x("raw", raw);
    }
    if let Some(bs) = &s.branch_stack {
        j.opt("branch_hw_idx", bs.hw_idx);
        let o = j.key("branch_stack");
        o.push(b'[');
        for (i, e) in bs.iter().enumerate() {
            if i > 0 {
                o.push(b',');
            }
            let mut eo = Obj::new(o);
            eo.u("from", e.from).u("to", e.to);
            eo.b("mispred", e.mispred()).b("predicted", e.predicted());
            eo.b("in_tx", e.in_tx()).b("abort", e.abort());
            eo.u("cycles", e.cycles().into())
                .u("type", e.type_().into());
            eo.u("spec", e.spec().into());
            eo.u("new_type", e.new_type().into())
                .u("priv", e.priv_().into());
            eo.opt("counters", e.counter);
            eo.end();
        }
        o.push(b']');
    }
    if let Some(r) = &s.regs_user {
        json_regs(j, "regs_user", r);
    }
    if let Some(st) = &s.stack_user {
        let o = j.key("stack_user");
        let mut so = Obj::new(o);
        so.u("size", st.data.len() as u64)
            .u("dyn_size", st.dyn_size);
        so.end();
    }
    j.opt("weight", s.weight);
    if let Some(w) = s.weight_struct {
        let o = j.key("weight_struct");
        let mut wo = Obj::new(o);
        wo.u("var1_dw", w.var1_dw.into())
            .u("var2_w", w.var2_w.into())
            .u("var3_w", w.var3_w.into());
        wo.end();
    }
    if let Some(d) = s.data_src {
        j.u("data_src", d);
        let m = DataSrc::from_u64(d);
        let o = j.key("mem");
        let mut mo = Obj::new(o);
        mo.s("op", m.op().as_bytes())
            .s("lvl", m.level().as_bytes())
            .s("snoop", m.snoop().as_bytes())
            .s("tlb", m.tlb().as_bytes())
            .s("lock", m.lock().as_bytes())
            .s("blk", m.blk().as_bytes());
        mo.b("remote", m.mem_remote).u("hops", m.mem_hops.into());
        mo.end();
    }
    j.opt("transaction", s.transaction);
    if let Some(r) = &s.regs_intr {
        json_regs(j, "regs_intr", r);
    }
    j.opt("phys_addr", s.phys_addr).opt("cgroup", s.cgroup);
    j.opt("data_page_size", s.data_page_size);
    j.opt("code_page_size", s.code_page_size);
    if let Some(a) = s.aux {
        j.x("aux", a);
    }
}
