//! Malformed perf.data never panics, hangs or balloons the reader or the decoder: a
//! bounded, deterministic, structure-aware fuzz campaign (`tests/fuzzing`, the same
//! entry the coverage-guided run under `fuzz/` uses) over every fixture in
//! `../shared/fixtures/perfdata`, the small committed corpus `fuzz/seeds` and files
//! recorded here by `hwprof record` and `perf record` (file mode, pipe mode, zstd,
//! tracepoints, frame-pointer and DWARF callchains). One truncated file also goes
//! through the binary: one line on stderr, exit 1.
//!
//! `HWPROF_FUZZ_CASES=N` (default 10,000, a few seconds in debug) sets the number of
//! cases, `HWPROF_FUZZ_SEED` the RNG seed and `HWPROF_FUZZ_THREADS` the threads; the
//! long run is `HWPROF_FUZZ_CASES=1000000 cargo test --release --test decode_robust`.
//! Failing inputs are saved under `target/tmp/fuzz-artifacts/` for replay with
//! `HWPROF_FUZZ_REPLAY=FILE` (see `fuzz/README.md`).

#[macro_use]
mod common;
mod fuzzing;

use std::path::{Path, PathBuf};
use std::process::Command;

use fuzzing::campaign;
use fuzzing::mutate::Seed;
use hwprof_sampler::Error;
use hwprof_sampler::perfdata::reader::PerfData;

#[track_caller]
fn fixtures_dir() -> Option<PathBuf> {
    hwprof_testkit::fixture_path("perfdata")
}

/// Runs `sh -c CMD` in a private scratch directory (a stray output file lands there);
/// returns the bytes of `out`, or `None` (and says SKIPPED) when the command failed.
fn recording(what: &str, tag: &str, cmd: &str) -> Option<Seed> {
    let dir = common::scratch_path(&format!("fuzzrec-{tag}"));
    std::fs::create_dir_all(&dir).ok()?;
    let out = dir.join("out.data");
    let cmd = cmd.replace("OUT", &out.display().to_string());
    let r = common::run_cmd(
        Command::new("sh").args(["-c", &cmd]).current_dir(&dir),
        common::TIMEOUT,
    );
    let bytes = std::fs::read(&out).ok();
    let _ = std::fs::remove_dir_all(&dir);
    match bytes {
        Some(b) if r.status.success() && b.len() > 16 => Some(Seed::new(what, b)),
        b => {
            let why = match b {
                Some(b) if r.status.success() => format!("it wrote {} bytes", b.len()),
                _ => format!("it failed: {}", r.stderr.trim()),
            };
            report!("SKIPPED seed {what}: `{cmd}`: {why}");
            None
        }
    }
}

/// Files recorded here, in parallel: hwprof's (software events, tracepoints, `-g`,
/// `--call-graph dwarf`, `-d --weight --switch-events`, pipe mode) and perf's (`-g`,
/// pipe mode, zstd, tracepoints, DWARF).
fn recordings() -> Vec<Seed> {
    let hw = common::hwprof_bin();
    let spin = common::wl("spin");
    let sleeper = common::wl("sleeper");
    let mut cmds: Vec<(String, String)> = vec![
        (
            "hwprof task-clock -g".into(),
            format!("{hw} record -q -e task-clock -c 200000 -g -o OUT -- {spin} 60"),
        ),
        (
            "hwprof dwarf".into(),
            format!(
                "{hw} record -q -e cpu-clock -c 400000 --call-graph dwarf,2048 -o OUT -- {spin} 40"
            ),
        ),
        (
            "hwprof -d --weight --switch-events".into(),
            format!(
                "{hw} record -q -e cpu-clock -c 300000 -d --weight --switch-events -o OUT -- {sleeper} 5 2"
            ),
        ),
        (
            "hwprof pipe".into(),
            format!("{hw} record -q -e task-clock -c 300000 -g -o - -- {spin} 40 > OUT"),
        ),
    ];
    let tracefs = common::require_tracefs("tracepoint seeds for the fuzz campaign");
    if tracefs {
        cmds.push((
            "hwprof tracepoints".into(),
            format!(
                "{hw} record -q -e sched:sched_switch,sched:sched_wakeup -g -o OUT -- {sleeper} 5 2"
            ),
        ));
    }
    if common::require_perf("perf-recorded seeds for the fuzz campaign") {
        let p = "perf record -q";
        cmds.extend([
            (
                "perf cpu-clock -g".into(),
                format!("{p} -e cpu-clock -c 200000 -g -o OUT -- {spin} 60"),
            ),
            (
                "perf pipe".into(),
                format!("{p} -e cpu-clock -c 200000 -g -o - -- {spin} 40 > OUT"),
            ),
            (
                "perf zstd".into(),
                format!("{p} -z -e cpu-clock -c 200000 -g -o OUT -- {spin} 40"),
            ),
            (
                "perf dwarf".into(),
                format!("{p} -e cpu-clock -c 400000 --call-graph dwarf,2048 -o OUT -- {spin} 40"),
            ),
        ]);
        if tracefs {
            cmds.push((
                "perf tracepoints".into(),
                format!("{p} -e sched:sched_switch -g -o OUT -- {sleeper} 5 2"),
            ));
        }
    }
    std::thread::scope(|s| {
        let hs: Vec<_> = cmds
            .iter()
            .enumerate()
            .map(|(i, (what, cmd))| s.spawn(move || recording(what, &format!("r{i}"), cmd)))
            .collect();
        hs.into_iter()
            // A seed that could not be recorded is a skip, which fails under
            // HWPROF_STRICT=1 in its thread: pass that failure on.
            .filter_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn fuzz_reader_and_decoder() {
    // Replay one saved input instead (a crash found by a campaign or by libFuzzer).
    if let Ok(f) = std::env::var("HWPROF_FUZZ_REPLAY") {
        let b = std::fs::read(&f).expect("HWPROF_FUZZ_REPLAY file");
        let o = fuzzing::fuzz_one(&b);
        report!("replayed {f}: {o:?}");
        return;
    }
    let mut seeds = Vec::new();
    if let Some(dir) = fixtures_dir() {
        seeds.extend(campaign::seeds_in(&dir).unwrap_or_default());
    }
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    seeds.extend(campaign::seeds_in(&committed).unwrap_or_default());
    seeds.extend(recordings());
    assert!(!seeds.is_empty(), "no seed at all");
    // Every seed is well-formed: it reads without error as it is.
    for s in &seeds {
        assert!(
            s.model.is_some(),
            "seed {} is not perf.data hwprof can take apart",
            s.name
        );
        let o = fuzzing::fuzz_one(&s.bytes);
        assert!(o.error.is_none(), "seed {}: {:?}", s.name, o.error);
        assert!(o.records > 0, "seed {}: no records", s.name);
    }
    let cases = campaign::cases_from_env(10_000);
    let seed = env_u64("HWPROF_FUZZ_SEED", 0x5eed_0011);
    let threads = env_u64("HWPROF_FUZZ_THREADS", 1) as usize;
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-artifacts");
    let st = campaign::run(&seeds, cases, seed, threads, &artifacts);
    let names: Vec<&str> = seeds.iter().map(|s| s.name.as_str()).collect();
    report!(
        "fuzz: {} seeds ({}), RNG seed {seed:#x}",
        seeds.len(),
        names.join(", ")
    );
    report!("fuzz: {st}");
    assert!(
        st.failures.is_empty(),
        "{} failing inputs:\n{}",
        st.failures.len(),
        st.failures.join("\n")
    );
    // The mutants reach every path, and both outcomes on each.
    if cases >= 1000 {
        for m in [
            fuzzing::Mode::File,
            fuzzing::Mode::Pipe,
            fuzzing::Mode::Decoder,
        ] {
            let (ok, err) = st.by_mode.get(&m).copied().unwrap_or_default();
            assert!(ok > 0 && err > 0, "{m:?}: {ok} read fine, {err} errors");
        }
    }
}

/// The made-up attrs and records the mutator starts from decode cleanly, with every
/// field the attr asks for: mutants of them reach the paths the seeds do not.
#[test]
fn synthetic_records_decode_with_every_field() {
    use fuzzing::synth;
    use hwprof_pmu::attr::sample as st;
    use hwprof_sampler::record::{Body, Decoder};
    let mut rng = fuzzing::Rng::new(7);
    let mut fields = 0u64;
    for _ in 0..2000 {
        let a = synth::attr(&mut rng);
        let dec = Decoder::new(&[(a.clone(), vec![5])]);
        for &t in &synth::KERNEL_TYPES {
            let rec = synth::kernel_record(&mut rng, t, &a, 5);
            let r = dec
                .decode(&rec, 0)
                .unwrap_or_else(|e| panic!("type {t}, attr {a:?}: {e}"));
            assert_eq!(r.sample_id.is_some(), a.sample_id_all && t != 9, "{t}");
            if let Body::Sample(s) = &r.body {
                let t = a.sample_type;
                let have = [
                    (st::READ, s.read.is_some()),
                    (st::CALLCHAIN, s.callchain.is_some()),
                    (st::RAW, s.raw.is_some()),
                    (st::BRANCH_STACK, s.branch_stack.is_some()),
                    (st::REGS_USER, s.regs_user.is_some()),
                    (st::STACK_USER, s.stack_user.is_some()),
                    (st::DATA_SRC, s.data_src.is_some()),
                    (st::REGS_INTR, s.regs_intr.is_some()),
                    (st::AUX, s.aux.is_some()),
                    (st::CODE_PAGE_SIZE, s.code_page_size.is_some()),
                ];
                for (bit, present) in have {
                    assert_eq!(t & bit != 0, present, "bit {bit:#x} of {t:#x}");
                    fields += u64::from(present);
                }
            }
        }
    }
    assert!(fields > 5000, "{fields}");
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

#[test]
fn binary_reports_a_truncated_file_in_one_line() {
    let Some(files) = fixtures_dir().and_then(|d| campaign::seeds_in(&d)) else {
        return;
    };
    let src = files
        .iter()
        .find(|s| s.name == "perf.data.callgraph-3.8")
        .expect("callgraph fixture");
    let bytes = &src.bytes;
    // Cut inside the data section, mid-record.
    let offsets = record_offsets(bytes);
    let cut = offsets[offsets.len() / 2] as usize + 13;
    let out = common::scratch_path("truncated.data");
    std::fs::write(&out, &bytes[..cut]).unwrap();
    // The dump (-D): every record before the damage is a line (the first half of this
    // file is side-band records, which perf script's text does not show).
    let r = common::hwprof(&["script", "-D", "-i", out.to_str().unwrap()]);
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
