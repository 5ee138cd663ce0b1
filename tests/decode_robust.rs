//! Malformed perf.data never panics the reader or decoder: truncated and bit-flipped
//! copies of every fixture and of files recorded here by perf are read in-process; each
//! must give `Ok` or an error, and errors about the data name a byte offset inside the
//! file. One truncated file also goes through the binary: one line on stderr, exit 1.

#[macro_use]
mod common;

use common::{Why, skip};

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use hwprof_sampler::Error;
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::record::Body;

/// Deterministic xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Reads `bytes` fully (open + every record, touching every sample's fields).
fn read_all(bytes: Vec<u8>) -> Result<usize, Error> {
    let pd = PerfData::from_bytes(bytes, "mutant")?;
    let mut n = 0usize;
    pd.for_each_record(|_, r| {
        n += 1;
        if let Body::Sample(s) = &r.body {
            n += s.callchain.map_or(0, |c| c.iter().count());
            n += s.branch_stack.map_or(0, |b| b.iter().count());
        }
        Ok::<(), Error>(())
    })?;
    Ok(n)
}

/// Offsets of every record (the compressed record's offset for records inside one).
fn record_offsets(bytes: &[u8]) -> Vec<u64> {
    let pd = PerfData::from_bytes(bytes.to_vec(), "original").expect("original reads");
    let mut v = Vec::new();
    pd.for_each_record(|off, _| {
        v.push(off);
        Ok::<(), Error>(())
    })
    .expect("original decodes");
    v.dedup();
    v
}

#[derive(Default, Debug)]
struct Tally {
    ok: usize,
    errors: usize,
}

/// Runs one mutant; panics (with `what`) on a panic or an error without an offset.
fn check(bytes: Vec<u8>, orig_len: usize, what: &str, touched: usize, t: &mut Tally) {
    let len = bytes.len();
    match catch_unwind(AssertUnwindSafe(|| read_all(bytes))) {
        Err(_) => panic!("reader panicked on {what}"),
        Ok(Ok(_)) => t.ok += 1,
        Ok(Err(e)) => {
            t.errors += 1;
            match &e {
                Error::Malformed { offset, .. } => assert!(
                    *offset <= orig_len.max(len) as u64,
                    "{what}: offset {offset:#x} past the file: {e}"
                ),
                // Only a damaged or missing magic/header size may make it "not perf.data"
                // or an unsupported version.
                Error::NotPerfData { .. } | Error::Unsupported(_) => {
                    assert!(touched < 16, "{what}: {e}")
                }
                other => panic!("{what}: unexpected error kind: {other}"),
            }
        }
    }
}

fn torture(name: &str, bytes: &[u8], flips: usize) {
    let offsets = record_offsets(bytes);
    let len = bytes.len();
    let mut t = Tally::default();
    // Truncations: at and around record boundaries (a spread of them when there are
    // many), in the header, and at spread offsets.
    let mut cuts: Vec<usize> = (0..120).collect();
    let step = (offsets.len() / 300).max(1);
    for (i, &o) in offsets.iter().enumerate() {
        if i % step != 0 && i + 20 < offsets.len() {
            continue;
        }
        for d in [-9i64, -1, 0, 1, 4, 8, 9] {
            cuts.push((o as i64 + d).clamp(0, len as i64) as usize);
        }
    }
    cuts.extend((0..200).map(|i| len * i / 200));
    cuts.sort();
    cuts.dedup();
    for &c in &cuts {
        check(
            bytes[..c].to_vec(),
            len,
            &format!("{name} cut at {c}"),
            c,
            &mut t,
        );
    }
    // Bit flips: half in record headers (type, misc, size), half anywhere.
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ len as u64);
    for i in 0..flips {
        let pos = if i % 2 == 0 && !offsets.is_empty() {
            offsets[rng.below(offsets.len())] as usize + rng.below(8)
        } else {
            rng.below(len)
        };
        let pos = pos.min(len - 1);
        let mut m = bytes.to_vec();
        let bit = rng.below(8);
        m[pos] ^= 1 << bit;
        // Sometimes a second flip nearby (sizes and counts spanning bytes).
        if i % 3 == 0 {
            let p2 = (pos + 1 + rng.below(16)).min(len - 1);
            m[p2] ^= 1 << rng.below(8);
        }
        check(
            m,
            len,
            &format!("{name} bit {bit} of byte {pos} flipped"),
            pos,
            &mut t,
        );
    }
    report!(
        "{name}: {} truncations, {flips} flips: {} read fine, {} errors with an offset, no panic",
        cuts.len(),
        t.ok,
        t.errors
    );
    assert!(t.errors > 0, "{name}: no mutant was rejected");
}

fn fixtures() -> Option<Vec<PathBuf>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/perfdata");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_none_or(|e| e != "pb_text"))
        .collect();
    v.sort();
    Some(v)
}

#[test]
fn truncated_and_flipped_fixtures_never_panic() {
    let Some(files) = fixtures() else {
        skip(Why::Setup, "../shared/fixtures/perfdata not found");
        return;
    };
    // Several threads: the debug-build reader is the bottleneck.
    std::thread::scope(|s| {
        for f in &files {
            s.spawn(move || {
                let bytes = std::fs::read(f).unwrap();
                let name = f.file_name().unwrap().to_string_lossy().into_owned();
                torture(&name, &bytes, 2000);
            });
        }
    });
}

/// Records with perf into a scratch file (`-o -` through the shell for pipe mode).
fn perf_file(tag: &str, args: &str) -> Option<Vec<u8>> {
    let out = common::scratch_path(tag);
    let cmd = format!(
        "perf record -q {args} -- {} 100 {}",
        common::wl("spin"),
        if args.contains("-o -") {
            format!("> {}", out.display())
        } else {
            String::new()
        }
    );
    let cmd = if args.contains("-o -") {
        cmd
    } else {
        cmd.replacen(
            "perf record -q",
            &format!("perf record -q -o {}", out.display()),
            1,
        )
    };
    let r = common::run_cmd(
        std::process::Command::new("sh").args(["-c", &cmd]),
        common::TIMEOUT,
    );
    let bytes = std::fs::read(&out).ok();
    let _ = std::fs::remove_file(&out);
    if !r.status.success() {
        skip(
            Why::Setup,
            format_args!("`{cmd}` failed: {}", r.stderr.trim()),
        );
        return None;
    }
    bytes
}

#[test]
fn truncated_and_flipped_perf_files_never_panic() {
    if !common::require_perf("perf-recorded files for the robustness test") {
        return;
    }
    let files: Vec<(&str, Option<Vec<u8>>)> = vec![
        (
            "cpu-clock -g",
            perf_file("rb_g.data", "-e cpu-clock -c 200000 -g"),
        ),
        (
            "pipe",
            perf_file("rb_pipe.data", "-e cpu-clock -c 200000 -g -o -"),
        ),
        (
            "zstd",
            perf_file("rb_z.data", "-z -e cpu-clock -c 200000 -g"),
        ),
    ];
    std::thread::scope(|s| {
        for (name, bytes) in &files {
            if let Some(b) = bytes {
                s.spawn(move || torture(name, b, 1500));
            }
        }
    });
}

#[test]
fn binary_reports_a_truncated_file_in_one_line() {
    let Some(files) = fixtures() else {
        skip(Why::Setup, "../shared/fixtures/perfdata not found");
        return;
    };
    let src = files
        .iter()
        .find(|p| p.ends_with("perf.data.callgraph-3.8"))
        .expect("callgraph fixture");
    let bytes = std::fs::read(src).unwrap();
    // Cut inside the data section, mid-record.
    let offsets = record_offsets(&bytes);
    let cut = offsets[offsets.len() / 2] as usize + 13;
    let out = common::scratch_path("truncated.data");
    std::fs::write(&out, &bytes[..cut]).unwrap();
    let r = common::hwprof(&["script", "-i", out.to_str().unwrap()]);
    assert_eq!(r.code(), 1, "{}", r.dump());
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", r.dump());
    assert!(
        lines[0].starts_with("hwprof: ") && lines[0].contains("offset 0x"),
        "{}",
        lines[0]
    );
    // The records before the damage were printed.
    assert!(r.stdout.lines().count() > 100, "{}", r.dump());
    let _ = std::fs::remove_file(out);
    // A missing file: one line naming it.
    let r = common::hwprof(&["script", "-i", "/nonexistent/perf.data"]);
    assert_eq!(r.code(), 1);
    assert_eq!(
        r.stderr.trim(),
        "hwprof: cannot open /nonexistent/perf.data: No such file or directory"
    );
}
