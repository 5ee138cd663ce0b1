//! Reads every field of what the reader and the decoder hand out (as `script` and
//! `report` would), so that lazily decoded parts (callchains, branch entries, register
//! values, data_src bit fields, strings) run on fuzzed bytes too.

use std::hint::black_box;

use hwprof_pmu::attr::Attr;
use hwprof_sampler::perfdata::reader::{PerfData, default_name};
use hwprof_sampler::record::{
    Body, BranchStack, DataSrc, Decoder, FileId, ReadValues, Record, Regs, Sample, text,
};

/// A running checksum, so that nothing read can be optimized away.
#[derive(Default)]
struct H(u64);

impl H {
    fn u(&mut self, v: u64) {
        self.0 = (self.0 ^ v).wrapping_mul(0x100_0000_01b3).rotate_left(5);
    }
    fn o<T: Into<u64>>(&mut self, v: Option<T>) {
        match v {
            Some(v) => self.u(v.into()),
            None => self.u(0x5a5a),
        }
    }
    fn b(&mut self, bytes: &[u8]) {
        self.u(bytes.len() as u64);
        if let (Some(&f), Some(&l)) = (bytes.first(), bytes.last()) {
            self.u(u64::from(f) << 8 | u64::from(l));
        }
    }
    fn s(&mut self, bytes: &[u8]) {
        self.u(text(bytes).len() as u64);
    }
}

fn attr(h: &mut H, a: &Attr) {
    h.u(u64::from(a.type_));
    h.u(a.config ^ a.sample_type ^ a.read_format ^ a.branch_sample_type);
    h.u(a.sample_regs_user ^ a.sample_regs_intr);
    h.u(u64::from(a.sample_id_all));
    h.u(default_name(a).len() as u64);
}

/// Everything a [`PerfData`] says about the file outside its records.
pub fn perf_data(pd: &PerfData) {
    let mut h = H::default();
    h.u(pd.header_size() ^ pd.attr_size() ^ pd.data_offset() ^ pd.data_size());
    h.u(u64::from(pd.is_pipe()));
    for e in pd.attrs() {
        attr(&mut h, &e.attr);
        h.u(e.ids.len() as u64);
        h.u(e.name.len() as u64);
    }
    for &f in pd.feature_ids() {
        h.u(u64::from(f));
    }
    let f = pd.features();
    for s in [
        &f.hostname,
        &f.osrelease,
        &f.version,
        &f.arch,
        &f.cpudesc,
        &f.cpuid,
    ]
    .into_iter()
    .flatten()
    {
        h.u(s.len() as u64);
    }
    h.o(f.nr_cpus.map(|(a, o)| u64::from(a) << 32 | u64::from(o)));
    h.o(f.total_mem);
    for a in f.cmdline.iter().flatten() {
        h.u(a.len() as u64);
    }
    for d in f.event_desc.iter().flatten() {
        attr(&mut h, &d.attr);
        h.u(d.name.len() as u64 ^ d.ids.len() as u64);
    }
    for b in &f.build_ids {
        h.u(b.pid as u64 ^ u64::from(b.misc));
        h.b(&b.build_id);
        h.u(b.filename.len() as u64);
    }
    for g in f.group_desc.iter().flatten() {
        h.u(g.name.len() as u64 ^ u64::from(g.leader_idx) ^ u64::from(g.nr_members));
    }
    for (id, bytes) in &f.other {
        h.u(u64::from(*id));
        h.b(bytes);
    }
    // The writer's view of the same features (`hwprof record` re-emits them).
    for (id, bytes) in f.to_sections() {
        h.u(u64::from(id));
        h.b(&bytes);
    }
    for d in pd.decoder().attrs() {
        attr(&mut h, d);
    }
    black_box(h.0);
}

fn read_values(h: &mut H, r: &ReadValues) {
    h.o(r.time_enabled);
    h.o(r.time_running);
    for v in &r.values {
        h.u(v.value);
        h.o(v.id);
        h.o(v.lost);
    }
}

fn regs(h: &mut H, r: &Option<Regs<'_>>) {
    if let Some(r) = r {
        h.u(r.abi ^ r.mask);
        h.u(r.regs.len() as u64);
        for v in r.regs.iter() {
            h.u(v);
        }
    }
}

fn branches(h: &mut H, b: &BranchStack<'_>) {
    h.o(b.hw_idx);
    h.u(b.len() as u64 ^ u64::from(b.is_empty()));
    for e in b.iter() {
        h.u(e.from ^ e.to ^ e.flags);
        h.o(e.counter);
        h.u(u64::from(e.mispred()) | u64::from(e.predicted()) << 1);
        h.u(u64::from(e.in_tx()) | u64::from(e.abort()) << 1);
        h.u(u64::from(e.cycles()) ^ u64::from(e.type_()) ^ u64::from(e.spec()));
        h.u(u64::from(e.new_type()) ^ u64::from(e.priv_()));
    }
}

fn data_src(h: &mut H, v: u64) {
    let d = DataSrc::from_u64(v);
    h.u(d.op().len() as u64 ^ d.level().len() as u64 ^ d.snoop().len() as u64);
    h.u(d.tlb().len() as u64 ^ d.lock().len() as u64 ^ d.blk().len() as u64);
    h.u(d.summary().len() as u64);
}

fn sample(h: &mut H, s: &Sample<'_>) {
    for v in [
        s.identifier,
        s.ip,
        s.time,
        s.addr,
        s.id,
        s.stream_id,
        s.period,
        s.weight,
        s.transaction,
        s.phys_addr,
        s.cgroup,
        s.data_page_size,
        s.code_page_size,
    ] {
        h.o(v);
    }
    h.o(s.pid);
    h.o(s.tid);
    h.o(s.cpu);
    if let Some(r) = &s.read {
        read_values(h, r);
    }
    if let Some(c) = &s.callchain {
        h.u(c.len() as u64 ^ u64::from(c.is_empty()));
        for ip in c.iter() {
            h.u(ip);
        }
        h.o(c.get(c.len().wrapping_sub(1)));
        h.b(c.as_bytes());
    }
    if let Some(r) = s.raw {
        h.b(r);
    }
    if let Some(b) = &s.branch_stack {
        branches(h, b);
    }
    regs(h, &s.regs_user);
    regs(h, &s.regs_intr);
    if let Some(st) = &s.stack_user {
        h.b(st.data);
        h.u(st.dyn_size);
    }
    if let Some(w) = s.weight_struct {
        h.u(u64::from(w.var1_dw) ^ u64::from(w.var2_w) ^ u64::from(w.var3_w));
    }
    if let Some(v) = s.data_src {
        data_src(h, v);
    }
    if let Some(a) = s.aux {
        h.b(a);
    }
}

/// Every field of one record (and which attr it came from).
pub fn record(r: &Record<'_>, dec: &Decoder) {
    let mut h = H::default();
    h.u(u64::from(r.header.type_) ^ u64::from(r.header.misc) ^ u64::from(r.header.size));
    h.o(r.attr.map(|a| a as u64));
    h.o(dec.attr_index(r).map(|a| a as u64));
    h.o(r.time());
    if let Some(id) = &r.sample_id {
        h.o(id.pid);
        h.o(id.tid);
        h.o(id.time);
        h.o(id.id);
        h.o(id.stream_id);
        h.o(id.cpu);
        h.o(id.identifier);
    }
    match &r.body {
        Body::Sample(s) => sample(&mut h, s),
        Body::Mmap(m) => {
            h.u(u64::from(m.pid) ^ u64::from(m.tid) ^ m.addr ^ m.len ^ m.pgoff);
            h.s(m.filename);
        }
        Body::Mmap2(m) => {
            h.u(u64::from(m.pid) ^ u64::from(m.tid) ^ m.addr ^ m.len ^ m.pgoff);
            h.u(u64::from(m.prot) ^ u64::from(m.flags));
            match m.file_id {
                FileId::Inode {
                    maj,
                    min,
                    ino,
                    ino_generation,
                } => h.u(u64::from(maj) ^ u64::from(min) ^ ino ^ ino_generation),
                FileId::BuildId(b) => h.b(b),
            }
            h.s(m.filename);
        }
        Body::Lost { id, lost } => h.u(id ^ lost),
        Body::Comm {
            pid,
            tid,
            comm,
            exec,
        } => {
            h.u(u64::from(*pid) ^ u64::from(*tid) ^ u64::from(*exec));
            h.s(comm);
        }
        Body::Exit(t) | Body::Fork(t) => {
            h.u(u64::from(t.pid) ^ u64::from(t.ppid) ^ u64::from(t.tid) ^ u64::from(t.ptid));
            h.u(t.time);
        }
        Body::Throttle(t) | Body::Unthrottle(t) => h.u(t.time ^ t.id ^ t.stream_id),
        Body::Read { pid, tid, values } => {
            h.u(u64::from(*pid) ^ u64::from(*tid));
            read_values(&mut h, values);
        }
        Body::Aux {
            aux_offset,
            aux_size,
            flags,
        } => h.u(aux_offset ^ aux_size ^ flags),
        Body::ItraceStart { pid, tid } => h.u(u64::from(*pid) ^ u64::from(*tid)),
        Body::LostSamples { lost } => h.u(*lost),
        Body::Switch { out, preempt } => h.u(u64::from(*out) ^ u64::from(*preempt)),
        Body::SwitchCpuWide {
            out,
            preempt,
            next_prev_pid,
            next_prev_tid,
        } => h.u(u64::from(*out)
            ^ u64::from(*preempt)
            ^ u64::from(*next_prev_pid)
            ^ u64::from(*next_prev_tid)),
        Body::Namespaces {
            pid,
            tid,
            link_info,
        } => {
            h.u(u64::from(*pid) ^ u64::from(*tid));
            for v in link_info.iter() {
                h.u(v);
            }
        }
        Body::Ksymbol {
            addr,
            len,
            ksym_type,
            flags,
            name,
        } => {
            h.u(addr ^ u64::from(*len) ^ u64::from(*ksym_type) ^ u64::from(*flags));
            h.s(name);
        }
        Body::BpfEvent {
            type_,
            flags,
            id,
            tag,
        } => {
            h.u(u64::from(*type_) ^ u64::from(*flags) ^ u64::from(*id));
            h.b(tag);
        }
        Body::Cgroup { id, path } => {
            h.u(*id);
            h.s(path);
        }
        Body::TextPoke { addr, old, new } => {
            h.u(*addr);
            h.b(old);
            h.b(new);
        }
        Body::AuxOutputHwId { hw_id } => h.u(*hw_id),
        Body::HeaderAttr { attr: a, ids } => {
            attr(&mut h, a);
            for id in ids.iter() {
                h.u(id);
            }
        }
        Body::TracingData { size } => h.u(u64::from(*size)),
        Body::FinishedRound | Body::FinishedInit => h.u(1),
        Body::IdIndex(v) => {
            for e in v {
                h.u(e.id ^ e.idx ^ e.cpu ^ e.tid);
            }
        }
        Body::Auxtrace {
            size,
            offset,
            reference,
            idx,
            tid,
            cpu,
        } => h.u(size ^ offset ^ reference ^ u64::from(*idx) ^ u64::from(*tid) ^ u64::from(*cpu)),
        Body::TimeConv(t) => {
            h.u(t.time_shift ^ t.time_mult ^ t.time_zero);
            h.o(t.time_cycles);
            h.o(t.time_mask);
            h.o(t.cap_user_time_zero.map(u64::from));
            h.o(t.cap_user_time_short.map(u64::from));
        }
        Body::HeaderFeature { feature, data } => {
            h.u(*feature);
            h.b(data);
        }
        Body::Compressed { data } => h.b(data),
        Body::Other { payload } => h.b(payload),
        _ => h.u(2),
    }
    black_box(h.0);
}
