//! The structure-aware mutator: a seed is taken apart ([`super::model`]), a window of its
//! records is kept, then 0 to 3 changes to its structure (records dropped, duplicated,
//! swapped, spliced in from another seed, made up for any record type; attrs and ids
//! changed or added with samples that fit them; features dropped, added or changed; runs
//! of records zstd-compressed; attr sizes changed), and it is written back as a file,
//! a pipe-mode stream or a decoder-mode input, followed by 0 to 6 byte-level changes
//! aimed at what the layout says matters (record sizes and types, section offsets and
//! sizes, attr fields, counts inside records, truncation at and around record
//! boundaries, bit flips).

use hwprof_pmu::attr::sample as st;
use hwprof_sampler::record::{kind, peek_header};

use super::Rng;
use super::entry::parse_decoder_preamble;
use super::model::{self, Layout, Model, ModelAttr, Width};
use super::synth::{self, INTERESTING, KERNEL_TYPES, USER_TYPES};

/// A seed: its bytes and, when it is well-formed perf.data, its parts (compressed
/// records replaced by the records inside, so that windows of them stay decodable).
#[derive(Clone, Debug)]
pub struct Seed {
    /// Where it came from.
    pub name: String,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// Its parts.
    pub model: Option<Model>,
}

impl Seed {
    /// A seed from `bytes`.
    pub fn new(name: &str, bytes: Vec<u8>) -> Seed {
        let model = model::parse(&bytes).map(decompress);
        Seed {
            name: name.to_string(),
            bytes,
            model,
        }
    }
}

/// Replaces the `COMPRESSED` records of `m` by the records inside them.
fn decompress(mut m: Model) -> Model {
    let mut z = Vec::new();
    for r in &m.records {
        match peek_header(r) {
            Some((kind::COMPRESSED, _, size)) => {
                z.extend_from_slice(r.get(8..usize::from(size)).unwrap_or(&[]));
            }
            Some((kind::COMPRESSED2, _, _)) => {
                let n = r.get(8..16).map_or(0, |b| {
                    u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as usize
                });
                z.extend_from_slice(r.get(16..16usize.saturating_add(n)).unwrap_or(&[]));
            }
            _ => {}
        }
    }
    if z.is_empty() {
        return m;
    }
    let Ok(raw) = zstd::stream::decode_all(&z[..]) else {
        return m;
    };
    let Some(Model { records: inner, .. }) = model::parse(&{
        let mut pipe = b"PERFILE2".to_vec();
        pipe.extend_from_slice(&16u64.to_le_bytes());
        pipe.extend_from_slice(&raw);
        pipe
    }) else {
        return m;
    };
    let mut out = Vec::new();
    let mut done = false;
    for r in m.records.drain(..) {
        match peek_header(&r) {
            Some((kind::COMPRESSED | kind::COMPRESSED2, _, _)) => {
                if !done {
                    out.extend(inner.iter().cloned());
                    done = true;
                }
            }
            _ => out.push(r),
        }
    }
    m.records = out;
    m
}

/// Largest number of records a mutant keeps from a seed.
const WINDOW: usize = 64;

fn window(rng: &mut Rng, m: &Model) -> Model {
    let n = m.records.len();
    let keep = if rng.chance(1, 8) { WINDOW * 4 } else { WINDOW };
    let (start, len) = if n <= keep {
        (0, n)
    } else if rng.chance(1, 4) {
        (0, keep) // the start: attrs' synthesized MMAP/COMM records, HEADER records
    } else {
        (rng.below(n - keep), keep)
    };
    Model {
        attrs: m.attrs.clone(),
        attr_size: m.attr_size,
        records: m.records[start..start + len].to_vec(),
        features: m.features.clone(),
        pipe: m.pipe,
    }
}

/// One mutant made from the seeds (or, now and then, from a made-up model).
pub fn mutant(rng: &mut Rng, seeds: &[Seed]) -> Vec<u8> {
    let donors: Vec<&Model> = seeds.iter().filter_map(|s| s.model.as_ref()).collect();
    if seeds.is_empty() || rng.chance(1, 8) {
        let m = synth::model(rng);
        return write(rng, m, &donors);
    }
    let s = rng.pick(seeds);
    match &s.model {
        Some(m) => {
            let m = window(rng, m);
            write(rng, m, &donors)
        }
        None => {
            let mut b = s.bytes.clone();
            for _ in 0..1 + rng.below(4) {
                byte_op(rng, &mut b, &Layout::default());
            }
            b
        }
    }
}

/// The structure-aware mutation of any input (for libFuzzer's custom mutator): perf.data
/// and decoder-mode inputs are taken apart and mutated as seeds are; anything else gets
/// byte-level changes, or is replaced by a made-up model.
pub fn structured(input: &[u8], seed: u64, donors: &[Seed]) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let donor_models: Vec<&Model> = donors.iter().filter_map(|s| s.model.as_ref()).collect();
    if let Some(m) = model::parse(input) {
        let m = window(&mut rng, &m);
        return write(&mut rng, m, &donor_models);
    }
    if let Some((attrs, start)) = parse_decoder_preamble(input)
        && let Some(records) = split_loose(&input[start..])
    {
        let m = Model {
            attrs: attrs
                .into_iter()
                .map(|(attr, ids)| ModelAttr { attr, ids })
                .collect(),
            attr_size: 136,
            records,
            features: Vec::new(),
            pipe: false,
        };
        return write(&mut rng, m, &donor_models);
    }
    if rng.chance(1, 4) || input.len() < 16 {
        return mutant(&mut rng, donors);
    }
    let mut b = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        byte_op(&mut rng, &mut b, &Layout::default());
    }
    b
}

/// Records one after the other (sizes at least 8), the last one possibly cut.
fn split_loose(b: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut off = 0;
    while off < b.len() {
        let (_, _, size) = peek_header(&b[off..])?;
        let size = usize::from(size).max(8);
        let end = (off + size).min(b.len());
        out.push(b[off..end].to_vec());
        off = end;
    }
    Some(out)
}

/// Mutates the structure of `m`, writes it in one of the three forms, mutates bytes.
fn write(rng: &mut Rng, mut m: Model, donors: &[&Model]) -> Vec<u8> {
    for _ in 0..rng.below(4) {
        model_op(rng, &mut m, donors);
    }
    let (mut bytes, layout) = match rng.below(10) {
        0..=3 => model::to_file(&m),
        4..=6 => model::to_pipe(&m),
        _ => {
            let mut recs = Vec::new();
            if rng.chance(1, 4) {
                recs.extend(model::header_attrs(&m));
            }
            recs.extend(m.records.iter().cloned());
            model::decoder_input(&m.attrs, m.attr_size, &recs)
        }
    };
    let n = match rng.below(4) {
        0 => 0,
        1 => 1,
        2 => 2,
        _ => 1 + rng.below(6),
    };
    for _ in 0..n {
        byte_op(rng, &mut bytes, &layout);
    }
    bytes
}

fn attr_of(rng: &mut Rng, m: &mut Model) -> usize {
    if m.attrs.is_empty() {
        m.attrs.push(ModelAttr {
            attr: synth::attr(rng),
            ids: vec![1],
        });
    }
    rng.below(m.attrs.len())
}

/// Records made for attr `i` of `m` (samples mostly).
fn records_for(rng: &mut Rng, m: &Model, i: usize, n: usize) -> Vec<Vec<u8>> {
    let a = &m.attrs[i];
    let id = a.ids.first().copied().unwrap_or(0);
    (0..n)
        .map(|_| {
            if rng.chance(2, 3) {
                synth::sample(rng, &a.attr, id)
            } else {
                {
                    let t = *rng.pick(&KERNEL_TYPES);
                    synth::kernel_record(rng, t, &a.attr, id)
                }
            }
        })
        .collect()
}

fn insert_at(rng: &mut Rng, m: &mut Model, recs: Vec<Vec<u8>>) {
    let at = rng.below(m.records.len() + 1);
    m.records.splice(at..at, recs);
}

fn model_op(rng: &mut Rng, m: &mut Model, donors: &[&Model]) {
    let n = m.records.len();
    match rng.below(17) {
        0 if n > 0 => {
            m.records.remove(rng.below(n));
        }
        1 if n > 0 => {
            let r = m.records[rng.below(n)].clone();
            insert_at(rng, m, vec![r]);
        }
        2 if n > 1 => m.records.swap(rng.below(n), rng.below(n)),
        3 if !donors.is_empty() => {
            // Records of another seed: another attr layout behind the same bytes.
            let d = rng.pick(donors);
            if !d.records.is_empty() {
                let at = rng.below(d.records.len());
                let k = (1 + rng.below(8)).min(d.records.len() - at);
                insert_at(rng, m, d.records[at..at + k].to_vec());
            }
        }
        4 => {
            let i = attr_of(rng, m);
            synth::mutate_attr(rng, &mut m.attrs[i].attr);
        }
        5 | 6 => {
            // A made-up attr, with records that fit it.
            let mut a = synth::attr(rng);
            if m.attrs
                .first()
                .is_some_and(|f| f.attr.sample_type & st::IDENTIFIER != 0)
            {
                a.sample_type |= st::IDENTIFIER;
            }
            let id = 1000 + rng.below(1000) as u64;
            let new = ModelAttr {
                attr: a,
                ids: vec![id],
            };
            let i = if m.attrs.is_empty() || rng.chance(1, 2) {
                m.attrs.push(new);
                m.attrs.len() - 1
            } else {
                let i = rng.below(m.attrs.len());
                m.attrs[i] = new;
                i
            };
            let k = 1 + rng.below(12);
            let recs = records_for(rng, m, i, k);
            insert_at(rng, m, recs);
        }
        7 => {
            let i = attr_of(rng, m);
            match rng.below(5) {
                0 => m.attrs[i].ids.clear(),
                1 => m.attrs[i].ids.push(0),
                2 => {
                    let j = rng.below(m.attrs.len());
                    let ids = m.attrs[j].ids.clone();
                    m.attrs[i].ids.extend(ids);
                }
                3 => {
                    let extra = synth::count(rng) as usize * 8;
                    m.attrs[i].ids.extend((0..extra).map(|_| rng.next()));
                }
                _ => {
                    let a = m.attrs[i].clone();
                    m.attrs.push(a);
                }
            }
        }
        8 => {
            let i = attr_of(rng, m);
            let k = 1 + rng.below(4);
            let recs = records_for(rng, m, i, k);
            insert_at(rng, m, recs);
        }
        9 => {
            let t = *rng.pick(&USER_TYPES);
            let r = synth::user_record(rng, t, &m.attrs);
            insert_at(rng, m, vec![r]);
        }
        10 => feature_op(rng, m),
        11 if n > 0 => {
            let at = rng.below(n);
            let k = (1 + rng.below(32)).min(n - at);
            let z = synth::compress(rng, &m.records[at..at + k]);
            m.records.splice(at..at + k, z);
        }
        12 => {
            m.attr_size = *rng.pick(&[64, 65, 72, 80, 96, 104, 112, 120, 128, 136, 144, 200]);
        }
        13 if n > 0 => {
            // A count or size inside a record's body.
            let r = &mut m.records[rng.below(n)];
            if r.len() > 8 {
                let words = (r.len() - 8) / 4;
                let at = 8 + 4 * rng.below(words.max(1));
                let v = *rng.pick(&INTERESTING);
                if at + 8 <= r.len() && rng.chance(2, 3) {
                    r[at..at + 8].copy_from_slice(&v.to_le_bytes());
                } else if at + 4 <= r.len() {
                    r[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes());
                }
            }
        }
        14 if n > 0 => {
            // Cut or grow a record's body, its size kept consistent.
            let i = rng.below(n);
            let r = &m.records[i];
            let (t, mi, size) = peek_header(r).unwrap_or((0, 0, 8));
            let body = r.get(8..usize::from(size)).unwrap_or(&[]).to_vec();
            let new_len = if rng.chance(1, 2) {
                rng.below(body.len() + 1)
            } else {
                body.len() + rng.below(64)
            };
            let mut b = body;
            b.resize(new_len, rng.next() as u8);
            m.records[i] = model::record(t, mi, &b);
        }
        15 if n > 0 => {
            let r = &mut m.records[rng.below(n)];
            let t = if rng.chance(1, 2) {
                *rng.pick(&KERNEL_TYPES)
            } else {
                *rng.pick(&USER_TYPES)
            };
            r[..4].copy_from_slice(&t.to_le_bytes());
        }
        _ => {
            let i = attr_of(rng, m);
            let t = *rng.pick(&KERNEL_TYPES);
            let a = m.attrs[i].attr.clone();
            let id = m.attrs[i].ids.first().copied().unwrap_or(0);
            let r = synth::kernel_record(rng, t, &a, id);
            insert_at(rng, m, vec![r]);
        }
    }
}

fn feature_op(rng: &mut Rng, m: &mut Model) {
    let nf = m.features.len();
    match rng.below(5) {
        0 if nf > 0 => {
            m.features.remove(rng.below(nf));
        }
        1 if nf > 0 => {
            // Damage a count or length at the start of a section.
            let (_, s) = &mut m.features[rng.below(nf)];
            if s.len() >= 8 {
                let at = 4 * rng.below(s.len().min(64) / 4);
                let v = *rng.pick(&INTERESTING) as u32;
                s[at..at + 4].copy_from_slice(&v.to_le_bytes());
            } else {
                s.clear();
            }
        }
        2 if nf > 0 => {
            let (_, s) = &mut m.features[rng.below(nf)];
            s.truncate(rng.below(s.len() + 1));
        }
        3 => {
            let f = rng.below(256) as u32;
            let s = synth::feature(rng, f, &m.attrs);
            m.features.retain(|(g, _)| *g != f);
            m.features.push((f, s));
        }
        _ => {
            let f = *rng.pick(&synth::FEATURE_BITS);
            let s = synth::feature(rng, f, &m.attrs);
            m.features.retain(|(g, _)| *g != f);
            m.features.push((f, s));
        }
    }
    m.features.sort_by_key(|(f, _)| *f);
}

/// Offsets inside a `perf_event_attr` the decoder depends on: size, sample_type,
/// read_format, flags (sample_id_all), branch_sample_type, register masks.
const ATTR_FIELDS: [usize; 7] = [4, 24, 32, 40, 72, 80, 96];

fn byte_op(rng: &mut Rng, b: &mut Vec<u8>, lay: &Layout) {
    if b.is_empty() {
        b.extend((0..1 + rng.below(64)).map(|_| rng.next() as u8));
        return;
    }
    let len = b.len();
    match rng.below(10) {
        0 if !lay.records.is_empty() => {
            let o = *rng.pick(&lay.records) as i64 + rng.below(19) as i64 - 9;
            b.truncate(o.clamp(0, len as i64) as usize);
        }
        1 => b.truncate(rng.below(len)),
        2 if !lay.records.is_empty() => {
            let p = (*rng.pick(&lay.records) + rng.below(8)).min(len - 1);
            b[p] ^= 1 << rng.below(8);
        }
        3 => {
            let p = rng.below(len);
            b[p] ^= 1 << rng.below(8);
            if rng.chance(1, 3) {
                let q = (p + 1 + rng.below(16)).min(len - 1);
                b[q] ^= 1 << rng.below(8);
            }
        }
        4 | 5 if !lay.fields.is_empty() => {
            let (at, w) = *rng.pick(&lay.fields);
            let old = match w {
                Width::U16 => b
                    .get(at..at + 2)
                    .map_or(0, |s| u64::from(u16::from_le_bytes([s[0], s[1]]))),
                Width::U32 => b.get(at..at + 4).map_or(0, |s| {
                    u64::from(u32::from_le_bytes(s.try_into().unwrap_or([0; 4])))
                }),
                Width::U64 => b
                    .get(at..at + 8)
                    .map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap_or([0; 8]))),
            };
            let v = match rng.below(5) {
                0 => *rng.pick(&INTERESTING),
                1 => old.wrapping_add(1 + rng.below(16) as u64),
                2 => old.wrapping_sub(1 + rng.below(16) as u64),
                3 => (len as u64 + rng.below(17) as u64).wrapping_sub(8),
                _ => old.wrapping_mul(2 + rng.below(1000) as u64),
            };
            let bytes = v.to_le_bytes();
            let n = match w {
                Width::U16 => 2,
                Width::U32 => 4,
                Width::U64 => 8,
            };
            if let Some(s) = b.get_mut(at..at + n) {
                s.copy_from_slice(&bytes[..n]);
            }
        }
        6 if !lay.attrs.is_empty() => {
            let at = *rng.pick(&lay.attrs) + *rng.pick(&ATTR_FIELDS);
            let v = if rng.chance(1, 2) {
                rng.next()
            } else {
                1 << rng.below(64)
            };
            let old = b
                .get(at..at + 8)
                .map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap_or([0; 8])));
            if let Some(s) = b.get_mut(at..at + 8) {
                s.copy_from_slice(&(old ^ v).to_le_bytes());
            }
        }
        7 => {
            let p = rng.below(len) & !7;
            let v = *rng.pick(&INTERESTING);
            if let Some(s) = b.get_mut(p..p + 8) {
                s.copy_from_slice(&v.to_le_bytes());
            }
        }
        8 => {
            // Insert or delete a few bytes at a record boundary (misaligns what follows).
            let p = if lay.records.is_empty() {
                rng.below(len)
            } else {
                *rng.pick(&lay.records)
            }
            .min(len);
            if rng.chance(1, 2) {
                let k = 1 + rng.below(16);
                b.splice(p..p, (0..k).map(|_| rng.next() as u8));
            } else {
                let k = (1 + rng.below(16)).min(len - p);
                b.drain(p..p + k);
            }
        }
        _ => {
            // Repeat a chunk (a record or any run of bytes).
            let p = rng.below(len);
            let k = (1 + rng.below(256)).min(len - p);
            let chunk = b[p..p + k].to_vec();
            let at = rng.below(len + 1);
            b.splice(at..at, chunk);
        }
    }
}
