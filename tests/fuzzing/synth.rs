//! Attrs, records and feature sections made up from scratch, well formed for the attr
//! they belong to, so that mutations start from every decoding path: every
//! `PERF_SAMPLE_*` field (READ groups with ids and lost counts, branch stacks with
//! `hw_idx` and counters, register sets with and without an ABI, user stacks, AUX data),
//! every kernel record type with and without a `sample_id` trailer, perf.data's user
//! records, zstd-compressed runs of records, and every decoded header feature.

use hwprof_pmu::attr::{Attr, branch, read_format as rf, sample as st};
use hwprof_sampler::record::{kind, misc};

use super::Rng;
use super::model::{Model, ModelAttr, record};

/// Every `PERF_SAMPLE_*` bit the decoder knows.
pub const SAMPLE_BITS: [u64; 25] = [
    st::IP,
    st::TID,
    st::TIME,
    st::ADDR,
    st::READ,
    st::CALLCHAIN,
    st::ID,
    st::CPU,
    st::PERIOD,
    st::STREAM_ID,
    st::RAW,
    st::BRANCH_STACK,
    st::REGS_USER,
    st::STACK_USER,
    st::WEIGHT,
    st::DATA_SRC,
    st::IDENTIFIER,
    st::TRANSACTION,
    st::REGS_INTR,
    st::PHYS_ADDR,
    st::AUX,
    st::CGROUP,
    st::DATA_PAGE_SIZE,
    st::CODE_PAGE_SIZE,
    st::WEIGHT_STRUCT,
];

/// Every `PERF_FORMAT_*` bit.
pub const READ_BITS: [u64; 5] = [
    rf::TOTAL_TIME_ENABLED,
    rf::TOTAL_TIME_RUNNING,
    rf::ID,
    rf::GROUP,
    rf::LOST,
];

/// Kernel record types (and two the decoder does not know).
pub const KERNEL_TYPES: [u32; 22] = [
    kind::MMAP,
    kind::LOST,
    kind::COMM,
    kind::EXIT,
    kind::THROTTLE,
    kind::UNTHROTTLE,
    kind::FORK,
    kind::READ,
    kind::SAMPLE,
    kind::MMAP2,
    kind::AUX,
    kind::ITRACE_START,
    kind::LOST_SAMPLES,
    kind::SWITCH,
    kind::SWITCH_CPU_WIDE,
    kind::NAMESPACES,
    kind::KSYMBOL,
    kind::BPF_EVENT,
    kind::CGROUP,
    kind::TEXT_POKE,
    kind::AUX_OUTPUT_HW_ID,
    40,
];

/// perf.data user record types (and one past the last).
pub const USER_TYPES: [u32; 21] = [
    kind::HEADER_ATTR,
    kind::HEADER_EVENT_TYPE,
    kind::HEADER_TRACING_DATA,
    kind::HEADER_BUILD_ID,
    kind::FINISHED_ROUND,
    kind::ID_INDEX,
    kind::AUXTRACE_INFO,
    kind::AUXTRACE,
    kind::AUXTRACE_ERROR,
    kind::THREAD_MAP,
    kind::CPU_MAP,
    kind::STAT_CONFIG,
    kind::STAT,
    kind::STAT_ROUND,
    kind::EVENT_UPDATE,
    kind::TIME_CONV,
    kind::HEADER_FEATURE,
    kind::COMPRESSED,
    kind::FINISHED_INIT,
    kind::COMPRESSED2,
    84,
];

/// Values that size and count fields go wrong with.
pub const INTERESTING: [u64; 24] = [
    0,
    1,
    2,
    3,
    7,
    8,
    15,
    16,
    24,
    0x7f,
    0xff,
    0x100,
    0x7fff,
    0xffff,
    0x1_0000,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0x1_0000_0000,
    0x1fff_ffff_ffff_ffff,
    0x7fff_ffff_ffff_ffff,
    0x8000_0000_0000_0000,
    u64::MAX - 7,
    u64::MAX,
];

/// A small count, now and then a large one.
pub fn count(rng: &mut Rng) -> u64 {
    match rng.below(10) {
        0..=5 => rng.below(4) as u64,
        6..=8 => rng.below(40) as u64,
        _ => rng.below(400) as u64,
    }
}

/// A random mask with a few bits set (or all, or none).
fn mask(rng: &mut Rng) -> u64 {
    match rng.below(6) {
        0 => 0,
        1 => u64::MAX,
        2 => rng.next(),
        _ => (0..=rng.below(6)).fold(0, |m, _| m | 1 << rng.below(64)),
    }
}

/// A made-up attr: any subset of the sample fields, read formats, branch flags.
pub fn attr(rng: &mut Rng) -> Attr {
    let mut a = Attr::new(rng.below(9) as u32, rng.below(12) as u64);
    let p = rng.below(4) as u64 + 1; // out of 8
    for b in SAMPLE_BITS {
        if rng.chance(p, 8) {
            a.sample_type |= b;
        }
    }
    for b in READ_BITS {
        if rng.chance(1, 2) {
            a.read_format |= b;
        }
    }
    a.branch_sample_type = mask(rng) & 0xf_ffff;
    if rng.chance(1, 2) {
        a.branch_sample_type |= branch::HW_INDEX;
    }
    if rng.chance(1, 3) {
        a.branch_sample_type |= branch::COUNTERS;
    }
    a.sample_regs_user = mask(rng);
    a.sample_regs_intr = mask(rng);
    a.sample_id_all = rng.chance(2, 3);
    a.sample_period = 4000;
    a
}

/// Changes one decoding-relevant field of `a`.
pub fn mutate_attr(rng: &mut Rng, a: &mut Attr) {
    match rng.below(9) {
        0..=2 => a.sample_type ^= *rng.pick(&SAMPLE_BITS),
        3 => a.read_format ^= *rng.pick(&READ_BITS),
        4 => a.sample_id_all = !a.sample_id_all,
        5 => a.branch_sample_type ^= *rng.pick(&[branch::HW_INDEX, branch::COUNTERS, branch::ANY]),
        6 => a.sample_regs_user = mask(rng),
        7 => a.sample_regs_intr = mask(rng),
        _ => a.sample_type = rng.next() & ((1 << 26) - 1),
    }
}

struct W(Vec<u8>);

impl W {
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(b);
        self
    }
    fn fill(&mut self, rng: &mut Rng, n: usize) -> &mut Self {
        for _ in 0..n {
            self.0.push(rng.next() as u8);
        }
        self
    }
    /// A NUL-terminated string padded to 8 bytes.
    fn cstr(&mut self, s: &[u8]) -> &mut Self {
        self.0.extend_from_slice(s);
        self.0.push(0);
        while self.0.len() % 8 != 0 {
            self.0.push(0);
        }
        self
    }
    fn pad8(&mut self) -> &mut Self {
        while self.0.len() % 8 != 0 {
            self.0.push(0);
        }
        self
    }
}

fn read_values(rng: &mut Rng, w: &mut W, f: u64, id: u64) {
    let one = |rng: &mut Rng, w: &mut W| {
        w.u64(rng.next() >> 20);
        if f & rf::ID != 0 {
            w.u64(id);
        }
        if f & rf::LOST != 0 {
            w.u64(rng.below(3) as u64);
        }
    };
    if f & rf::GROUP != 0 {
        let nr = count(rng).min(64);
        w.u64(nr);
        if f & rf::TOTAL_TIME_ENABLED != 0 {
            w.u64(rng.next() >> 30);
        }
        if f & rf::TOTAL_TIME_RUNNING != 0 {
            w.u64(rng.next() >> 31);
        }
        for _ in 0..nr {
            one(rng, w);
        }
    } else {
        w.u64(rng.next() >> 20);
        if f & rf::TOTAL_TIME_ENABLED != 0 {
            w.u64(rng.next() >> 30);
        }
        if f & rf::TOTAL_TIME_RUNNING != 0 {
            w.u64(rng.next() >> 31);
        }
        if f & rf::ID != 0 {
            w.u64(id);
        }
        if f & rf::LOST != 0 {
            w.u64(rng.below(3) as u64);
        }
    }
}

/// A `sample_id` trailer for `a` (sample id `id`).
fn sample_id(rng: &mut Rng, w: &mut W, t: u64, id: u64) {
    if t & st::TID != 0 {
        w.u32(rng.below(5000) as u32).u32(rng.below(5000) as u32);
    }
    if t & st::TIME != 0 {
        w.u64(rng.next() >> 8);
    }
    if t & st::ID != 0 {
        w.u64(id);
    }
    if t & st::STREAM_ID != 0 {
        w.u64(id);
    }
    if t & st::CPU != 0 {
        w.u32(rng.below(64) as u32).u32(0);
    }
    if t & st::IDENTIFIER != 0 {
        w.u64(id);
    }
}

/// A well-formed `PERF_RECORD_SAMPLE` for `a` with sample id `id`.
pub fn sample(rng: &mut Rng, a: &Attr, id: u64) -> Vec<u8> {
    let t = a.sample_type;
    let mut w = W(Vec::new());
    if t & st::IDENTIFIER != 0 {
        w.u64(id);
    }
    if t & st::IP != 0 {
        w.u64(0x40_0000 + rng.below(0x10000) as u64);
    }
    if t & st::TID != 0 {
        w.u32(rng.below(5000) as u32).u32(rng.below(5000) as u32);
    }
    if t & st::TIME != 0 {
        w.u64(rng.next() >> 8);
    }
    if t & st::ADDR != 0 {
        w.u64(rng.next());
    }
    if t & st::ID != 0 {
        w.u64(id);
    }
    if t & st::STREAM_ID != 0 {
        w.u64(id);
    }
    if t & st::CPU != 0 {
        w.u32(rng.below(64) as u32).u32(0);
    }
    if t & st::PERIOD != 0 {
        w.u64(rng.below(100_000) as u64);
    }
    if t & st::READ != 0 {
        read_values(rng, &mut w, a.read_format, id);
    }
    if t & st::CALLCHAIN != 0 {
        let nr = count(rng).min(127);
        w.u64(nr);
        for i in 0..nr {
            let v = if i == 0 && rng.chance(1, 2) {
                *rng.pick(&[
                    -128i64 as u64,
                    -512i64 as u64,
                    -32i64 as u64,
                    -2048i64 as u64,
                ])
            } else {
                rng.next()
            };
            w.u64(v);
        }
    }
    if t & st::RAW != 0 {
        // The kernel pads raw data so that the u32 size and the data end 8-aligned.
        let n = (count(rng) as usize * 4).next_multiple_of(8) + 4;
        w.u32(n as u32).fill(rng, n);
    }
    if t & st::BRANCH_STACK != 0 {
        let nr = count(rng).min(64);
        w.u64(nr);
        if a.branch_sample_type & branch::HW_INDEX != 0 {
            w.u64(rng.below(32) as u64);
        }
        for _ in 0..nr {
            w.u64(rng.next()).u64(rng.next()).u64(rng.next());
        }
        if a.branch_sample_type & branch::COUNTERS != 0 {
            for _ in 0..nr {
                w.u64(rng.next());
            }
        }
    }
    let regs = |rng: &mut Rng, w: &mut W, mask: u64| {
        let abi = *rng.pick(&[0u64, 1, 2, 2, 2]);
        w.u64(abi);
        if abi != 0 {
            for _ in 0..mask.count_ones() {
                w.u64(rng.next());
            }
        }
    };
    if t & st::REGS_USER != 0 {
        regs(rng, &mut w, a.sample_regs_user);
    }
    if t & st::STACK_USER != 0 {
        let size = if rng.chance(1, 4) {
            0
        } else {
            count(rng) as usize * 8
        };
        w.u64(size as u64).fill(rng, size);
        if size != 0 {
            w.u64(rng.below(size + 1) as u64);
        }
    }
    if t & (st::WEIGHT | st::WEIGHT_STRUCT) != 0 {
        w.u64(rng.next() >> 40);
    }
    if t & st::DATA_SRC != 0 {
        w.u64(rng.next());
    }
    if t & st::TRANSACTION != 0 {
        w.u64(rng.next() >> 32);
    }
    if t & st::REGS_INTR != 0 {
        regs(rng, &mut w, a.sample_regs_intr);
    }
    for b in [
        st::PHYS_ADDR,
        st::CGROUP,
        st::DATA_PAGE_SIZE,
        st::CODE_PAGE_SIZE,
    ] {
        if t & b != 0 {
            w.u64(rng.next());
        }
    }
    if t & st::AUX != 0 {
        let n = count(rng) as usize * 8;
        w.u64(n as u64).fill(rng, n);
    }
    record(
        kind::SAMPLE,
        *rng.pick(&[misc::USER, misc::KERNEL, misc::USER | misc::EXACT_IP]),
        &w.0,
    )
}

/// A kernel record of `type_` for attr `a` (with its `sample_id` trailer when `a` has
/// `sample_id_all`).
pub fn kernel_record(rng: &mut Rng, type_: u32, a: &Attr, id: u64) -> Vec<u8> {
    if type_ == kind::SAMPLE {
        return sample(rng, a, id);
    }
    let mut w = W(Vec::new());
    let mut m = misc::USER;
    let pid = rng.below(5000) as u32;
    match type_ {
        kind::MMAP => {
            w.u32(pid).u32(pid).u64(0x40_0000).u64(0x1000).u64(0);
            w.cstr(b"/usr/bin/fuzzed");
        }
        kind::MMAP2 => {
            w.u32(pid)
                .u32(pid)
                .u64(0x7f00_0000_0000)
                .u64(0x2000)
                .u64(0x1000);
            if rng.chance(1, 2) {
                m |= misc::MMAP_BUILD_ID;
                w.bytes(&[rng.below(25) as u8, 0, 0, 0]).fill(rng, 20);
            } else {
                w.u32(8).u32(1).u64(rng.next()).u64(0);
            }
            w.u32(5).u32(2).cstr(b"/lib/libfuzz.so");
        }
        kind::LOST => {
            w.u64(id).u64(rng.below(100) as u64);
        }
        kind::COMM => {
            if rng.chance(1, 2) {
                m |= misc::COMM_EXEC;
            }
            w.u32(pid).u32(pid).cstr(b"fuzzcomm");
        }
        kind::EXIT | kind::FORK => {
            w.u32(pid).u32(1).u32(pid).u32(1).u64(rng.next() >> 8);
        }
        kind::THROTTLE | kind::UNTHROTTLE => {
            w.u64(rng.next() >> 8).u64(id).u64(id);
        }
        kind::READ => {
            w.u32(pid).u32(pid);
            read_values(rng, &mut w, a.read_format, id);
        }
        kind::AUX => {
            w.u64(rng.next()).u64(rng.next()).u64(rng.below(16) as u64);
        }
        kind::ITRACE_START | kind::SWITCH_CPU_WIDE => {
            w.u32(pid).u32(pid);
            m |= *rng.pick(&[
                0,
                misc::SWITCH_OUT,
                misc::SWITCH_OUT | misc::SWITCH_OUT_PREEMPT,
            ]);
        }
        kind::LOST_SAMPLES => {
            w.u64(rng.below(1000) as u64);
        }
        kind::SWITCH => {
            m |= *rng.pick(&[
                0,
                misc::SWITCH_OUT,
                misc::SWITCH_OUT | misc::SWITCH_OUT_PREEMPT,
            ]);
        }
        kind::NAMESPACES => {
            let nr = count(rng).min(16);
            w.u32(pid).u32(pid).u64(nr);
            for _ in 0..nr * 2 {
                w.u64(rng.next());
            }
        }
        kind::KSYMBOL => {
            w.u64(0xffff_ffff_c000_0000).u32(0x100).u16(1).u16(0);
            w.cstr(b"bpf_prog_fuzz");
        }
        kind::BPF_EVENT => {
            w.u16(1).u16(0).u32(7).fill(rng, 8);
        }
        kind::CGROUP => {
            w.u64(rng.next()).cstr(b"/sys/fs/cgroup/fuzz");
        }
        kind::TEXT_POKE => {
            let (o, n) = (rng.below(16), rng.below(16));
            w.u64(0xffff_ffff_8100_0000).u16(o as u16).u16(n as u16);
            w.fill(rng, o + n).pad8();
        }
        kind::AUX_OUTPUT_HW_ID => {
            w.u64(rng.next());
        }
        _ => {
            let n = count(rng) as usize;
            w.fill(rng, n);
        }
    }
    if a.sample_id_all {
        sample_id(rng, &mut w, a.sample_type, id);
    }
    record(type_, m, &w.0)
}

/// A perf.data user record of `type_` (with the bytes that follow it for tracing data
/// and AUX data). `attrs` are used for HEADER_ATTR and ID_INDEX.
pub fn user_record(rng: &mut Rng, type_: u32, attrs: &[ModelAttr]) -> Vec<u8> {
    let mut w = W(Vec::new());
    match type_ {
        kind::HEADER_ATTR => {
            let a = if attrs.is_empty() || rng.chance(1, 3) {
                attr(rng)
            } else {
                rng.pick(attrs).attr.clone()
            };
            w.bytes(&hwprof_sampler::perfdata::features::attr_file_bytes(
                &a,
                *rng.pick(&[64, 72, 104, 120, 128, 136]),
            ));
            for _ in 0..count(rng).min(32) {
                w.u64(rng.below(64) as u64);
            }
        }
        kind::HEADER_TRACING_DATA => {
            let n = count(rng) as usize * 8;
            w.u32(n as u32).u32(0);
            let mut r = record(type_, 0, &w.0);
            r.extend((0..n).map(|_| rng.next() as u8));
            return r;
        }
        kind::AUXTRACE => {
            let n = count(rng) as usize * 8;
            w.u64(n as u64)
                .u64(0)
                .u64(rng.next())
                .u32(0)
                .u32(1)
                .u32(0)
                .u32(0);
            let mut r = record(type_, 0, &w.0);
            r.extend((0..n).map(|_| rng.next() as u8));
            return r;
        }
        kind::ID_INDEX => {
            let nr = count(rng).min(64);
            w.u64(nr);
            for i in 0..nr {
                let idx = rng.below(attrs.len().max(1)) as u64;
                w.u64(i + 1)
                    .u64(idx)
                    .u64(rng.below(8) as u64)
                    .u64(rng.below(5000) as u64);
            }
        }
        kind::TIME_CONV => {
            w.u64(10).u64(rng.next() >> 40).u64(rng.next());
            if rng.chance(1, 2) {
                w.u64(rng.next()).u64(u64::MAX).bytes(&[1, 0]).pad8();
            }
        }
        kind::HEADER_FEATURE => {
            let f = *rng.pick(&FEATURE_BITS);
            w.u64(u64::from(f)).bytes(&feature(rng, f, attrs));
        }
        kind::COMPRESSED2 => {
            let n = count(rng) as usize;
            w.u64(n as u64).fill(rng, n).pad8();
        }
        kind::FINISHED_ROUND | kind::FINISHED_INIT => {}
        _ => {
            let n = count(rng) as usize;
            w.fill(rng, n);
        }
    }
    record(type_, 0, &w.0)
}

/// Feature bits the reader decodes, and two it keeps raw.
pub const FEATURE_BITS: [u32; 14] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 17, 30];

fn string(w: &mut W, s: &[u8]) {
    let len = (s.len() + 1).next_multiple_of(64);
    w.u32(len as u32).bytes(s);
    w.0.resize(w.0.len() + len - s.len(), 0);
}

/// A well-formed section of feature `bit`.
pub fn feature(rng: &mut Rng, bit: u32, attrs: &[ModelAttr]) -> Vec<u8> {
    let mut w = W(Vec::new());
    match bit {
        3..=6 | 8 | 9 => string(&mut w, b"fuzz-string"),
        7 => {
            w.u32(rng.below(256) as u32).u32(rng.below(256) as u32);
        }
        10 => {
            w.u64(rng.next() >> 20);
        }
        11 => {
            let nr = count(rng).min(16);
            w.u32(nr as u32);
            for _ in 0..nr {
                string(&mut w, b"--arg");
            }
        }
        12 => {
            let sz = *rng.pick(&[64usize, 112, 120, 128, 136]);
            w.u32(attrs.len() as u32).u32(sz as u32);
            for a in attrs {
                w.bytes(&hwprof_sampler::perfdata::features::attr_file_bytes(
                    &a.attr, sz,
                ));
                w.u32(a.ids.len() as u32);
                string(&mut w, b"fuzz-event");
                for &id in &a.ids {
                    w.u64(id);
                }
            }
        }
        2 => {
            for _ in 0..count(rng).min(8) {
                let name = b"/usr/lib/libfuzz.so";
                let len = (name.len() + 1).next_multiple_of(64);
                let m = *rng.pick(&[1u16, 2, 2 | 1 << 15]);
                w.u32(0).u16(m).u16((36 + len) as u16).u32(u32::MAX);
                w.fill(rng, 20)
                    .bytes(&[rng.below(21) as u8, 0, 0, 0])
                    .bytes(name);
                w.0.resize(w.0.len() + len - name.len(), 0);
            }
        }
        17 => {
            let nr = count(rng).min(8);
            w.u32(nr as u32);
            for _ in 0..nr {
                string(&mut w, b"{cycles,instructions}");
                w.u32(rng.below(4) as u32).u32(rng.below(4) as u32);
            }
        }
        _ => {
            let n = count(rng) as usize;
            w.fill(rng, n);
        }
    }
    w.0
}

/// The records as one zstd stream cut into `COMPRESSED` (or `COMPRESSED2`) records, as
/// `perf record -z` writes them.
pub fn compress(rng: &mut Rng, records: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let raw: Vec<u8> = records.concat();
    let Ok(z) = zstd::stream::encode_all(&raw[..], 1) else {
        return records.to_vec();
    };
    let two = rng.chance(1, 3);
    let mut out = Vec::new();
    let mut rest = &z[..];
    while !rest.is_empty() {
        let n = (1 + rng.below(rest.len().min(4000))).min(0xffff - 24);
        let (chunk, r) = rest.split_at(n);
        rest = r;
        if two {
            let mut body = (chunk.len() as u64).to_le_bytes().to_vec();
            body.extend_from_slice(chunk);
            while body.len() % 8 != 0 {
                body.push(0);
            }
            out.push(record(kind::COMPRESSED2, 0, &body));
        } else {
            out.push(record(kind::COMPRESSED, 0, chunk));
        }
    }
    out
}

/// A model made up from scratch: 1 to 4 attrs, records of every kind for them.
pub fn model(rng: &mut Rng) -> Model {
    let n = 1 + rng.below(4);
    let same_identifier = rng.chance(3, 4);
    let attrs: Vec<ModelAttr> = (0..n)
        .map(|i| {
            let mut a = attr(rng);
            if same_identifier && n > 1 {
                a.sample_type |= st::IDENTIFIER;
            }
            ModelAttr {
                attr: a,
                ids: (0..1 + rng.below(3))
                    .map(|j| (i * 16 + j + 1) as u64)
                    .collect(),
            }
        })
        .collect();
    let mut records = Vec::new();
    for _ in 0..1 + rng.below(24) {
        let a = rng.pick(&attrs);
        let id = *rng.pick(&a.ids);
        let r = if rng.chance(1, 2) {
            sample(rng, &a.attr, id)
        } else if rng.chance(3, 4) {
            {
                let t = *rng.pick(&KERNEL_TYPES);
                kernel_record(rng, t, &a.attr, id)
            }
        } else {
            {
                let t = *rng.pick(&USER_TYPES);
                user_record(rng, t, &attrs)
            }
        };
        records.push(r);
    }
    let mut features = Vec::new();
    for &f in &FEATURE_BITS {
        if rng.chance(1, 3) {
            features.push((f, feature(rng, f, &attrs)));
        }
    }
    Model {
        attrs,
        attr_size: *rng.pick(&[64, 112, 120, 128, 136]),
        records,
        features,
        pipe: rng.chance(1, 2),
    }
}
