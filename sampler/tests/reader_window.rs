//! The file-mode reader reads a recording's data section through a window, not whole:
//! records of every size straddle the window's edges and must read exactly as they do
//! from the same bytes in memory; a file cut short while it is read is an error, not a
//! panic or a silent end.

use std::path::PathBuf;

use hwprof_pmu::attr::{Attr, sample};
use hwprof_sampler::Error;
use hwprof_sampler::perfdata::features::Features;
use hwprof_sampler::perfdata::reader::{PerfData, STREAM_CHUNK};
use hwprof_sampler::perfdata::writer::{EventEntry, Writer};
use hwprof_sampler::record::{Body, kind};

/// A fresh scratch directory for one test.
fn scratch(tag: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("reader-window-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A file-mode recording of `n` samples (IP | TID | RAW) whose raw data grows from 4 to
/// 4 + 8 * 997 bytes and wraps: record sizes from 32 bytes to 8 KiB, so that records
/// cross every window edge at every alignment. Returns its path and its size.
fn recording(dir: &std::path::Path, n: u64) -> (PathBuf, u64) {
    let path = dir.join("perf.data");
    let mut attr = Attr::new(1, 0);
    attr.sample_type = sample::IP | sample::TID | sample::RAW;
    attr.sample_period = 1;
    let events = vec![EventEntry {
        attr,
        name: "cpu-clock".to_string(),
        ids: Vec::new(),
    }];
    let mut w = Writer::create(&path, events).unwrap();
    for i in 0..n {
        let raw_len = 4 + 8 * (i % 998) as usize;
        let mut body = (0x40_1000 + i).to_le_bytes().to_vec();
        body.extend_from_slice(&7u32.to_le_bytes());
        body.extend_from_slice(&(i as u32).to_le_bytes());
        body.extend_from_slice(&(raw_len as u32).to_le_bytes());
        body.extend((0..raw_len).map(|j| (i as usize + j) as u8));
        let size = 8 + body.len();
        let mut rec = kind::SAMPLE.to_le_bytes().to_vec();
        rec.extend_from_slice(&0u16.to_le_bytes());
        rec.extend_from_slice(&(size as u16).to_le_bytes());
        rec.extend(body);
        w.write_record(&rec).unwrap();
    }
    w.finish(&Features::default()).unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    (path, len)
}

/// A sample's offset, ip, tid and raw data.
type Seen = (u64, u64, u32, Vec<u8>);

/// Every sample in file order.
fn samples(pd: &PerfData) -> Result<Vec<Seen>, Error> {
    let mut out = Vec::new();
    pd.for_each_record(|off, r| {
        if let Body::Sample(s) = &r.body {
            out.push((
                off,
                s.ip.unwrap_or(0),
                s.tid.unwrap_or(0),
                s.raw.unwrap_or(&[]).to_vec(),
            ));
        }
        Ok::<(), Error>(())
    })?;
    Ok(out)
}

#[test]
fn a_file_read_through_the_window_equals_the_file_in_memory() {
    let dir = scratch("equal");
    let (path, len) = recording(&dir, 2_500);
    assert!(
        len > 4 * STREAM_CHUNK,
        "the recording ({len} bytes) must span several windows"
    );
    let from_file = PerfData::open(&path).unwrap();
    let in_memory = PerfData::from_bytes(std::fs::read(&path).unwrap(), "mem").unwrap();
    let (a, b) = (samples(&from_file).unwrap(), samples(&in_memory).unwrap());
    assert_eq!(a.len(), 2_500);
    assert_eq!(a, b);
    for (i, (_, ip, tid, raw)) in a.iter().enumerate() {
        assert_eq!(*ip, 0x40_1000 + i as u64);
        assert_eq!(*tid, i as u32);
        assert_eq!(raw.len(), 4 + 8 * (i % 998));
        assert_eq!(raw.first().copied(), Some(i as u8));
    }
    assert_eq!(from_file.data_size(), in_memory.data_size());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_cut_short_while_it_is_read_is_an_error() {
    let dir = scratch("cut");
    let (path, len) = recording(&dir, 2_500);
    let pd = PerfData::open(&path).unwrap();
    // Another program truncates the file after it was opened.
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len / 2).unwrap();
    let e = samples(&pd).unwrap_err().to_string();
    assert!(e.contains("became shorter while it was read"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_pipe_mode_stream_spooled_and_read_back_equals_the_stream_in_memory() {
    let dir = scratch("pipe");
    let (path, _) = recording(&dir, 2_500);
    // The same records in pipe mode: the header, one HEADER_ATTR, the data section.
    let file = PerfData::open(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let data = &bytes[file.data_offset() as usize..][..file.data_size() as usize];
    let mut stream = b"PERFILE2".to_vec();
    stream.extend_from_slice(&16u64.to_le_bytes());
    let attr = file.attrs()[0].attr.to_bytes();
    stream.extend_from_slice(&kind::HEADER_ATTR.to_le_bytes());
    stream.extend_from_slice(&0u16.to_le_bytes());
    stream.extend_from_slice(&((8 + attr.len()) as u16).to_le_bytes());
    stream.extend_from_slice(&attr);
    stream.extend_from_slice(data);
    let piped = PerfData::from_reader(std::io::Cursor::new(stream.clone())).unwrap();
    let in_memory = PerfData::from_bytes(stream, "mem").unwrap();
    assert!(piped.is_pipe());
    let (a, b) = (samples(&piped).unwrap(), samples(&in_memory).unwrap());
    assert_eq!(a.len(), 2_500);
    assert_eq!(a, b);
    // Offsets differ between the modes; the records do not.
    let records = |v: Vec<Seen>| -> Vec<_> {
        v.into_iter()
            .map(|(_, ip, tid, raw)| (ip, tid, raw))
            .collect()
    };
    assert_eq!(records(a), records(samples(&file).unwrap()));
    std::fs::remove_dir_all(&dir).unwrap();
}
