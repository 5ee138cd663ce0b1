//! A perf.data file as parts the mutator can rearrange: attrs with their ids, the data
//! records (each with the bytes that follow it in the stream: tracing data, AUX data),
//! and the header features; written back as a file-mode file, a pipe-mode stream or a
//! decoder-mode input ([`super::entry`]), with a [`Layout`] that says where each record
//! and each size / offset field ended up (for byte-level mutations that hit them).

use hwprof_pmu::attr::{ATTR_SIZE, Attr};
use hwprof_sampler::perfdata::features::attr_file_bytes;
use hwprof_sampler::record::{kind, peek_header};

use super::entry::{DECODER_MAGIC, PERF_MAGIC};

/// One event: its attr and sample ids.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelAttr {
    /// The attr.
    pub attr: Attr,
    /// Its sample ids.
    pub ids: Vec<u64>,
}

/// A perf.data file taken apart.
#[derive(Clone, Debug, Default)]
pub struct Model {
    /// The events.
    pub attrs: Vec<ModelAttr>,
    /// Bytes of each attr as the file writes it (64..=136, `perf_event_attr.size`).
    pub attr_size: usize,
    /// Records of the data section in order (pipe mode: other than HEADER_ATTR and
    /// HEADER_FEATURE), each with the bytes that follow it.
    pub records: Vec<Vec<u8>>,
    /// Header features: (bit, section), sorted by bit, no duplicates.
    pub features: Vec<(u32, Vec<u8>)>,
    /// The seed was pipe mode.
    pub pipe: bool,
}

/// Width of a field the byte-level mutator may overwrite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// u16 (record sizes).
    U16,
    /// u32 (record types, counts).
    U32,
    /// u64 (section offsets and sizes).
    U64,
}

/// Where the parts of a written input are.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    /// Offsets of record headers.
    pub records: Vec<usize>,
    /// Size, offset and count fields (header, attr ids sections, feature table, record
    /// sizes).
    pub fields: Vec<(usize, Width)>,
    /// Offsets where attrs start (their `perf_event_attr` bytes).
    pub attrs: Vec<usize>,
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(off..off.checked_add(8)?)?.try_into().ok()?,
    ))
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(off..off.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// Bytes that follow a record of `type_` in the stream (not counted in its size).
pub fn trailing(rec: &[u8], type_: u32) -> Option<usize> {
    match type_ {
        kind::HEADER_TRACING_DATA => {
            Some(usize::try_from(u32_at(rec, 8)?).ok()?.next_multiple_of(8))
        }
        kind::AUXTRACE => usize::try_from(u64_at(rec, 8)?).ok(),
        _ => Some(0),
    }
}

/// Splits a run of records (with their trailing data) into pieces.
fn split_records(b: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut off = 0;
    while off < b.len() {
        let (type_, _, size) = peek_header(&b[off..])?;
        let size = usize::from(size);
        if size < 8 {
            return None;
        }
        let total = size.checked_add(trailing(b.get(off..off + size)?, type_)?)?;
        out.push(b.get(off..off.checked_add(total)?)?.to_vec());
        off += total;
    }
    Some(out)
}

/// Takes a well-formed perf.data (file or pipe mode) apart; `None` for anything else.
pub fn parse(b: &[u8]) -> Option<Model> {
    if !b.starts_with(PERF_MAGIC) {
        return None;
    }
    let hs = u64_at(b, 8)?;
    if hs == 16 {
        return parse_pipe(b);
    }
    if hs != 104 {
        return None;
    }
    let h = |o| u64_at(b, o).and_then(|v| usize::try_from(v).ok());
    let attr_size = h(16)?.checked_sub(16)?;
    let (aoff, alen, doff, dlen) = (h(24)?, h(32)?, h(40)?, h(48)?);
    if !(64..=512).contains(&attr_size) {
        return None;
    }
    let mut attrs = Vec::new();
    for e in b
        .get(aoff..aoff.checked_add(alen)?)?
        .chunks_exact(attr_size + 16)
    {
        let (attr, _) = Attr::from_bytes(&e[..attr_size]).ok()?;
        let (ioff, ilen) = (u64_at(e, attr_size)?, u64_at(e, attr_size + 8)?);
        let (ioff, ilen) = (usize::try_from(ioff).ok()?, usize::try_from(ilen).ok()?);
        let ids = b
            .get(ioff..ioff.checked_add(ilen)?)?
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        attrs.push(ModelAttr { attr, ids });
    }
    let dlen = if dlen == 0 {
        b.len().checked_sub(doff)?
    } else {
        dlen
    };
    let records = split_records(b.get(doff..doff.checked_add(dlen)?)?)?;
    let mut features = Vec::new();
    let mut t = doff.checked_add(dlen)?;
    for w in 0..4 {
        let word = u64_at(b, 72 + 8 * w)?;
        for bit in 0..64 {
            if word >> bit & 1 != 0 {
                let (off, len) = (h(t)?, h(t.checked_add(8)?)?);
                features.push((
                    (w * 64 + bit) as u32,
                    b.get(off..off.checked_add(len)?)?.to_vec(),
                ));
                t += 16;
            }
        }
    }
    Some(Model {
        attrs,
        attr_size,
        records,
        features,
        pipe: false,
    })
}

fn parse_pipe(b: &[u8]) -> Option<Model> {
    let mut m = Model {
        pipe: true,
        attr_size: 0,
        ..Model::default()
    };
    for rec in split_records(b.get(16..)?)? {
        let (type_, _, size) = peek_header(&rec)?;
        let body = rec.get(8..usize::from(size))?;
        match type_ {
            kind::HEADER_ATTR => {
                let (attr, sz) = Attr::from_bytes(body).ok()?;
                let sz = if sz == 0 { 64 } else { sz as usize };
                m.attr_size = m.attr_size.max(sz.min(ATTR_SIZE));
                let ids = body
                    .get(sz..)?
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                    .collect();
                m.attrs.push(ModelAttr { attr, ids });
            }
            kind::HEADER_FEATURE => {
                let f = u32::try_from(u64_at(body, 0)?).ok()?;
                m.features.retain(|(g, _)| *g != f);
                m.features.push((f, body.get(8..)?.to_vec()));
            }
            _ => m.records.push(rec),
        }
    }
    m.features.sort_by_key(|(f, _)| *f);
    if m.attr_size == 0 {
        m.attr_size = 64;
    }
    Some(m)
}

fn put(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn attr_bytes(a: &Attr, size: usize) -> Vec<u8> {
    let mut b = attr_file_bytes(a, size.min(ATTR_SIZE));
    b.resize(size, 0);
    b
}

fn push_records(out: &mut Vec<u8>, lay: &mut Layout, records: &[Vec<u8>]) {
    for r in records {
        lay.records.push(out.len());
        lay.fields.push((out.len() + 6, Width::U16));
        lay.fields.push((out.len(), Width::U32));
        if r.len() >= 16 {
            lay.fields.push((out.len() + 8, Width::U64));
        }
        out.extend_from_slice(r);
    }
}

/// Writes `m` as a file-mode perf.data.
pub fn to_file(m: &Model) -> (Vec<u8>, Layout) {
    let mut lay = Layout::default();
    let asz = m.attr_size.max(64);
    let attrs_off = 104;
    let attrs_len = m.attrs.len() * (asz + 16);
    let mut ids_off = attrs_off + attrs_len;
    let mut out = Vec::new();
    out.extend_from_slice(PERF_MAGIC);
    put(&mut out, 104);
    put(&mut out, (asz + 16) as u64);
    let ids_total: usize = m.attrs.iter().map(|a| a.ids.len() * 8).sum();
    let data_off = attrs_off + attrs_len + ids_total;
    let data_len: usize = m.records.iter().map(Vec::len).sum();
    for v in [attrs_off, attrs_len, data_off, data_len, 0, 0] {
        put(&mut out, v as u64);
    }
    let mut bits = [0u64; 4];
    for (f, _) in &m.features {
        if let Some(w) = bits.get_mut(*f as usize / 64) {
            *w |= 1 << (f % 64);
        }
    }
    for w in bits {
        put(&mut out, w);
    }
    for o in (16..72).step_by(8) {
        lay.fields.push((o, Width::U64));
    }
    for a in &m.attrs {
        lay.attrs.push(out.len());
        out.extend_from_slice(&attr_bytes(&a.attr, asz));
        lay.fields.push((out.len(), Width::U64));
        lay.fields.push((out.len() + 8, Width::U64));
        put(&mut out, ids_off as u64);
        put(&mut out, a.ids.len() as u64 * 8);
        ids_off += a.ids.len() * 8;
    }
    for a in &m.attrs {
        for &id in &a.ids {
            put(&mut out, id);
        }
    }
    push_records(&mut out, &mut lay, &m.records);
    let feats: Vec<&(u32, Vec<u8>)> = m.features.iter().filter(|(f, _)| *f < 256).collect();
    let mut sec = out.len() + 16 * feats.len();
    for (_, s) in &feats {
        lay.fields.push((out.len(), Width::U64));
        lay.fields.push((out.len() + 8, Width::U64));
        put(&mut out, sec as u64);
        put(&mut out, s.len() as u64);
        sec += s.len();
    }
    for (_, s) in feats {
        lay.fields.push((out.len(), Width::U32));
        out.extend_from_slice(s);
    }
    (out, lay)
}

/// A record of `type_` with `body` (size capped: the body is cut to fit a u16 size).
pub fn record(type_: u32, misc: u16, body: &[u8]) -> Vec<u8> {
    let body = &body[..body.len().min(0xffff - 8)];
    let mut r = Vec::with_capacity(8 + body.len());
    r.extend_from_slice(&type_.to_le_bytes());
    r.extend_from_slice(&misc.to_le_bytes());
    r.extend_from_slice(&((8 + body.len()) as u16).to_le_bytes());
    r.extend_from_slice(body);
    r
}

/// `HEADER_ATTR` records of `m`'s attrs, as pipe mode writes them.
pub fn header_attrs(m: &Model) -> Vec<Vec<u8>> {
    let asz = m.attr_size.max(64);
    m.attrs
        .iter()
        .map(|a| {
            let mut body = attr_bytes(&a.attr, asz);
            for &id in a.ids.iter().take((0xffff - 8 - asz) / 8) {
                body.extend_from_slice(&id.to_le_bytes());
            }
            record(kind::HEADER_ATTR, 0, &body)
        })
        .collect()
}

/// Writes `m` as a pipe-mode stream: HEADER_ATTR, HEADER_FEATURE, then the records.
pub fn to_pipe(m: &Model) -> (Vec<u8>, Layout) {
    let mut lay = Layout::default();
    let mut out = Vec::new();
    out.extend_from_slice(PERF_MAGIC);
    put(&mut out, 16);
    lay.fields.push((8, Width::U64));
    let mut recs = header_attrs(m);
    for (f, s) in &m.features {
        if s.len() + 16 <= 0xffff {
            let mut body = u64::from(*f).to_le_bytes().to_vec();
            body.extend_from_slice(s);
            recs.push(record(kind::HEADER_FEATURE, 0, &body));
        }
    }
    let n_attr = m.attrs.len();
    let start = out.len();
    push_records(&mut out, &mut lay, &recs);
    let mut o = start;
    for r in recs.iter().take(n_attr) {
        lay.attrs.push(o + 8);
        o += r.len();
    }
    push_records(&mut out, &mut lay, &m.records);
    (out, lay)
}

/// A decoder-mode input: `attrs` (each with `attr_size` bytes, at most 8), then `records`.
pub fn decoder_input(
    attrs: &[ModelAttr],
    attr_size: usize,
    records: &[Vec<u8>],
) -> (Vec<u8>, Layout) {
    let mut lay = Layout::default();
    let mut out = DECODER_MAGIC.to_vec();
    let attrs = &attrs[..attrs.len().min(8)];
    out.push(attrs.len() as u8);
    let asz = attr_size.clamp(64, 512);
    for a in attrs {
        out.extend_from_slice(&(asz as u16).to_le_bytes());
        lay.attrs.push(out.len());
        out.extend_from_slice(&attr_bytes(&a.attr, asz));
        let ids = &a.ids[..a.ids.len().min(64)];
        out.extend_from_slice(&(ids.len() as u16).to_le_bytes());
        for &id in ids {
            put(&mut out, id);
        }
    }
    push_records(&mut out, &mut lay, records);
    (out, lay)
}
