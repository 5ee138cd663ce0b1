//! The record decoder in records/s: every record of the callgraph-3.8 fixture (samples
//! with frame-pointer callchains, mmaps, comms) when the fixtures are present, and a
//! generated buffer of 10k samples with 32-entry callchains either way.
//!
//! `cargo bench --bench decode`

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hwprof_pmu::attr::{Attr, sample as st};
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::record::{Body, Decoder, kind, peek_header};

/// Decodes every record of `buf` (back to back); returns a checksum.
fn decode_all(dec: &Decoder, buf: &[u8]) -> u64 {
    let mut off = 0usize;
    let mut sum = 0u64;
    while let Some((_, _, size)) = buf.get(off..).and_then(peek_header) {
        let size = usize::from(size);
        let Ok(r) = dec.decode(&buf[off..off + size], off as u64) else {
            break;
        };
        if let Body::Sample(s) = &r.body {
            sum = sum.wrapping_add(s.ip.unwrap_or(0));
            if let Some(cc) = s.callchain {
                sum = sum.wrapping_add(cc.iter().fold(0, u64::wrapping_add));
            }
        }
        off += size;
    }
    sum
}

/// 10k samples of IP|TID|TIME|CPU|PERIOD|CALLCHAIN with 32 frames.
fn generated() -> (Decoder, Vec<u8>, u64) {
    let mut a = Attr::new(1, 0);
    a.sample_type = st::IP | st::TID | st::TIME | st::CPU | st::PERIOD | st::CALLCHAIN;
    let dec = Decoder::new(&[(a, vec![])]);
    let mut buf = Vec::new();
    let n = 10_000u64;
    for i in 0..n {
        let words = 6 + 32;
        buf.extend_from_slice(&kind::SAMPLE.to_le_bytes());
        buf.extend_from_slice(&2u16.to_le_bytes());
        buf.extend_from_slice(&((8 + 8 * words) as u16).to_le_bytes());
        for w in [0x40_1000 + i, 7 | 7 << 32, i * 1000, 1, 10_000, 31] {
            buf.extend_from_slice(&w.to_le_bytes());
        }
        buf.extend_from_slice(&(-512i64 as u64).to_le_bytes());
        for f in 0..31u64 {
            buf.extend_from_slice(&(0x40_0000 + f * 0x40).to_le_bytes());
        }
    }
    (dec, buf, n)
}

/// The data section of the callgraph fixture, re-packed back to back, and its decoder.
fn fixture() -> Option<(Decoder, Vec<u8>, u64)> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/perfdata/perf.data.callgraph-3.8");
    let bytes = std::fs::read(&p).ok()?;
    let data = PerfData::from_bytes(bytes.clone(), "callgraph-3.8").ok()?;
    let start = data.data_offset() as usize;
    let buf = bytes
        .get(start..start + data.data_size() as usize)?
        .to_vec();
    let mut n = 0u64;
    data.for_each_record(|_, _| {
        n += 1;
        Ok::<(), hwprof_sampler::Error>(())
    })
    .ok()?;
    Some((data.decoder().clone(), buf, n))
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode");
    let (dec, buf, n) = generated();
    g.throughput(Throughput::Elements(n));
    g.bench_function("generated_samples_callchain32", |b| {
        b.iter(|| decode_all(&dec, black_box(&buf)))
    });
    match fixture() {
        Some((dec, buf, n)) => {
            g.throughput(Throughput::Elements(n));
            g.bench_function("callgraph-3.8_records", |b| {
                b.iter(|| decode_all(&dec, black_box(&buf)))
            });
        }
        None => eprintln!("SKIPPED: callgraph-3.8 fixture not found (../shared/fixtures)"),
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
