//! Memory follows the result, not the file, for `mem report` and `c2c report` too: a
//! 200 MB PEBS recording (2.5 million load and store samples from tests/memdata's false
//! sharing pattern, repeated: a few instructions, lines and data symbols) is read with a
//! peak RSS far below its size. A reader that keeps a record per sample needs hundreds
//! of MB for it.

mod common;
mod memdata;

use std::path::Path;
use std::process::Command;

/// Samples in the recording, 80 bytes each: 200 MB.
const SAMPLES: usize = 2_500_000;
/// Peak RSS allowed (the binary and its fixed costs are about 10-20 MB in a debug
/// build).
const MAX_RSS_KB: u64 = 40_000;

/// Runs hwprof with `args`, output into `dir`; returns its stdout and peak RSS in KiB.
fn run(dir: &Path, args: &[&str]) -> (String, u64) {
    let out = dir.join("stdout");
    let mut child = Command::new(common::hwprof_bin())
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
        .spawn()
        .unwrap();
    // wait4 with the child's rusage (std's wait does not give ru_maxrss).
    let info = hwprof_pmu::sys::wait(child.id() as i32).unwrap();
    // Reaped already: this only tells std (ECHILD).
    let _ = child.wait();
    let stderr = std::fs::read_to_string(dir.join("stderr")).unwrap();
    assert_eq!(info.code, 0, "hwprof {args:?} failed: {stderr}");
    (std::fs::read_to_string(&out).unwrap(), info.max_rss_kb)
}

#[test]
fn mem_and_c2c_report_of_a_200_mb_recording_take_far_less_memory_than_the_file() {
    let dir = common::scratch_path("mem_memory");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let bin = memdata::bin();
    let pattern = memdata::false_sharing(&bin);
    let data = dir.join("big.data");
    // In rounds of 4096 samples (330 KB), as a recorder writes them: read once, holding
    // two rounds.
    memdata::write_stream_in_rounds(
        &data,
        &bin,
        bin.path.to_str().unwrap(),
        &[memdata::PID, memdata::TID2],
        pattern.iter().copied().cycle().take(SAMPLES),
        Some(4096),
    );
    let size = std::fs::metadata(&data).unwrap().len();
    assert!(size > 200_000_000, "{size} bytes");
    let d = data.to_str().unwrap();
    let (mem, kb) = run(&dir, &["mem", "report", "-i", d]);
    common::report_line(&format!(
        "memory: mem report: peak RSS {kb} KB for a {} MB recording",
        size / 1_000_000
    ));
    assert!(kb < MAX_RSS_KB, "mem report: peak RSS {kb} KB");
    // Every sample counted, the functions named.
    let loads = pattern.iter().filter(|a| !a.store).count();
    let reps = SAMPLES / pattern.len();
    let rest = &pattern[..SAMPLES % pattern.len()];
    let want = loads * reps + rest.iter().filter(|a| !a.store).count();
    assert!(
        mem.contains(&format!("# Samples: {want}  of event '{}'", memdata::LOADS)),
        "{mem}"
    );
    assert!(mem.contains("writer_a"), "{mem}");
    let (c2c, kb) = run(&dir, &["c2c", "report", "-i", d]);
    common::report_line(&format!(
        "memory: c2c report: peak RSS {kb} KB for a {} MB recording",
        size / 1_000_000
    ));
    assert!(kb < MAX_RSS_KB, "c2c report: peak RSS {kb} KB");
    assert!(
        c2c.lines()
            .any(|l| l.trim_start().starts_with("Total records")
                && l.trim_end().ends_with(&format!(" {SAMPLES}"))),
        "{c2c}"
    );
    assert!(c2c.contains("writer_b"), "{c2c}");
    std::fs::remove_dir_all(&dir).unwrap();
}
