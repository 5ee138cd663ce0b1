//! Live tests of `hwprof_sampler::session` on this machine: software events
//! (cpu-clock) on commands, running processes, threads and all CPUs. Records are
//! checked by their headers and the sample layout the tests set
//! (IP | TID | TIME | PERIOD | CALLCHAIN).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use hwprof_pmu::attr::{Attr, sample, types};
use hwprof_pmu::event::Class;
use hwprof_pmu::stop::Stop;
use hwprof_pmu::{Event, EventList};
use hwprof_sampler::session::{RunStats, Session, SessionOptions, Target};

use hwprof_testkit::{Why, report, skip};

/// A stop token nothing stops: the sessions here end with their targets.
fn never() -> Stop {
    Stop::new().expect("a stop token")
}

const CPU_CLOCK: u64 = 0;
const LOST: u32 = 2;
const COMM: u32 = 3;
const EXIT: u32 = 4;
const FORK: u32 = 7;
const SAMPLE: u32 = 9;
const MMAP2: u32 = 10;
const LOST_SAMPLES: u32 = 13;
const MISC_COMM_EXEC: u16 = 1 << 13;

/// Compiles `tests/workloads/NAME.c` of the workspace once per test binary. A source
/// that does not compile fails the test (it is never a skip); a missing `cc` is a skip
/// (a failure with `HWPROF_STRICT=1`).
fn workload(name: &str) -> Option<PathBuf> {
    static BUILT: OnceLock<Mutex<BTreeMap<String, PathBuf>>> = OnceLock::new();
    let mut built = BUILT
        .get_or_init(|| Mutex::new(BTreeMap::new()))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(p) = built.get(name) {
        return Some(p.clone());
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/workloads")
        .join(format!("{name}.c"));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sampler-workloads");
    std::fs::create_dir_all(&dir).expect("create the workloads dir");
    let out = dir.join(name);
    let flags = [
        "-O1",
        "-g",
        "-fno-omit-frame-pointer",
        "-no-pie",
        "-pthread",
    ];
    if !hwprof_testkit::compile_c(&src, &out, &flags) {
        return None;
    }
    built.insert(name.to_string(), out.clone());
    Some(out)
}

/// A cpu-clock sampling attr as `hwprof record -F FREQ -g` would set it for `command`.
fn cpu_clock(freq: Option<u64>, period: Option<u64>, command: bool) -> EventList {
    let mut a = Attr::new(types::SOFTWARE, CPU_CLOCK);
    match (freq, period) {
        (Some(f), _) => {
            a.freq = true;
            a.sample_period = f;
        }
        (None, Some(p)) => a.sample_period = p,
        (None, None) => unreachable!("a frequency or a period"),
    }
    a.sample_type = sample::IP | sample::TID | sample::TIME | sample::PERIOD | sample::CALLCHAIN;
    a.mmap = true;
    a.comm = true;
    a.task = true;
    a.mmap2 = true;
    a.comm_exec = true;
    a.sample_id_all = true;
    a.disabled = true;
    a.enable_on_exec = command;
    a.inherit = true;
    EventList {
        events: vec![Event {
            name: "cpu-clock".into(),
            pmu: "software".into(),
            class: Class::Software,
            attr: a,
            leader: 0,
            explicit_mods: false,
        }],
    }
}

fn u32_at(r: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(r[o..o + 4].try_into().expect("4 bytes"))
}
fn u64_at(r: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(r[o..o + 8].try_into().expect("8 bytes"))
}
fn rtype(r: &[u8]) -> u32 {
    u32_at(r, 0)
}
fn misc(r: &[u8]) -> u16 {
    u16::from_le_bytes([r[4], r[5]])
}
fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// A decoded sample of the layout above.
#[derive(Debug)]
struct Sample {
    pid: u32,
    tid: u32,
    period: u64,
    callchain: Vec<u64>,
}

fn sample_of(r: &[u8]) -> Sample {
    assert_eq!(u16::from_le_bytes([r[6], r[7]]) as usize, r.len());
    let pid = u32_at(r, 16);
    let tid = u32_at(r, 20);
    let period = u64_at(r, 32);
    let nr = u64_at(r, 40) as usize;
    let callchain = (0..nr).map(|i| u64_at(r, 48 + 8 * i)).collect();
    assert_eq!(48 + 8 * nr, r.len(), "sample size matches its layout");
    Sample {
        pid,
        tid,
        period,
        callchain,
    }
}

fn run(events: &EventList, target: Target, opts: SessionOptions) -> (Vec<Vec<u8>>, RunStats) {
    let s = Session::open(events, target, opts).expect("open the session");
    let mut recs = Vec::new();
    let stats = s
        .run(&never(), |r| {
            recs.push(r.to_vec());
            Ok(())
        })
        .expect("run the session");
    (without_rounds(recs), stats)
}

const FINISHED_ROUND: u32 = 68;

/// The records of a run without its `FINISHED_ROUND`s, which it must have as perf
/// record writes them: one after each pass over the rings that found records (never
/// two in a row, never first), the last record a round.
fn without_rounds(recs: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let is_round = |r: &Vec<u8>| rtype(r) == FINISHED_ROUND;
    if let Some(last) = recs.last() {
        assert!(is_round(last), "the last record ends a round");
        assert_eq!(last.len(), 8, "a round is a header alone");
    }
    for (i, _) in recs.iter().enumerate().filter(|(_, r)| is_round(r)) {
        assert!(i > 0 && !is_round(&recs[i - 1]), "an empty round at {i}");
    }
    recs.into_iter().filter(|r| !is_round(r)).collect()
}

fn samples(recs: &[Vec<u8>]) -> Vec<Sample> {
    recs.iter()
        .filter(|r| rtype(r) == SAMPLE)
        .map(|r| sample_of(r))
        .collect()
}

fn opts() -> SessionOptions {
    SessionOptions::default()
}

#[test]
fn command_gives_the_expected_samples_comm_and_mmap2() {
    let Some(spin) = workload("spin") else { return };
    let ev = cpu_clock(Some(1000), None, true);
    let target = Target::Command(vec![spin.display().to_string(), "300".into()]);
    let s = Session::open(&ev, target, opts()).expect("open");
    let child = s.child_pid().expect("a child") as u32;
    let attrs = s.attrs();
    assert!(attrs[0].watermark && attrs[0].wakeup_events > 0);
    let ids = s.ids();
    assert_eq!(ids.len(), 1);
    assert_eq!(ids[0].len(), s.ring_cpus().len(), "one fd per CPU");
    let mut recs = Vec::new();
    let stats = s
        .run(&never(), |r| {
            recs.push(r.to_vec());
            Ok(())
        })
        .expect("run");
    let recs = without_rounds(recs);
    let smp = samples(&recs);
    report!(
        "session command: spin 300 at -F 1000 -> {} samples ({} records, {} bytes, lost {}, wall {:?})",
        smp.len(),
        stats.records,
        stats.bytes,
        stats.lost,
        stats.wall
    );
    assert_eq!(stats.samples as usize, smp.len());
    assert_eq!(stats.records as usize, recs.len());
    assert_eq!(stats.exit.map(|e| e.code), Some(0));
    assert!(
        (240..=360).contains(&smp.len()),
        "≈300 samples expected, got {}",
        smp.len()
    );
    assert!(smp.iter().all(|s| s.pid == child && s.tid == child));
    assert!(smp.iter().all(|s| s.period > 0 && !s.callchain.is_empty()));
    let comm_exec = recs.iter().any(|r| {
        rtype(r) == COMM
            && misc(r) & MISC_COMM_EXEC != 0
            && u32_at(r, 8) == child
            && cstr(&r[16..]) == "spin"
    });
    assert!(comm_exec, "a COMM(exec) record naming 'spin'");
    let mmap2 = recs
        .iter()
        .any(|r| rtype(r) == MMAP2 && u32_at(r, 8) == child && cstr(&r[80..]).ends_with("/spin"));
    assert!(mmap2, "an MMAP2 record of the binary");
}

#[test]
fn threads_are_attributed_and_forked() {
    let Some(threads) = workload("threads") else {
        return;
    };
    let ev = cpu_clock(Some(4000), None, true);
    let target = Target::Command(vec![
        threads.display().to_string(),
        "2".into(),
        "40000".into(),
    ]);
    let s = Session::open(&ev, target, opts()).expect("open");
    let child = s.child_pid().expect("child") as u32;
    let mut recs = Vec::new();
    let stats = s
        .run(&never(), |r| {
            recs.push(r.to_vec());
            Ok(())
        })
        .expect("run");
    let forked: BTreeSet<u32> = recs
        .iter()
        .filter(|r| rtype(r) == FORK && u32_at(r, 8) == child && u32_at(r, 16) != child)
        .map(|r| u32_at(r, 16))
        .collect();
    let exited: BTreeSet<u32> = recs
        .iter()
        .filter(|r| rtype(r) == EXIT && u32_at(r, 8) == child)
        .map(|r| u32_at(r, 16))
        .collect();
    let mut per_tid: BTreeMap<u32, usize> = BTreeMap::new();
    for s in samples(&recs) {
        assert_eq!(s.pid, child);
        *per_tid.entry(s.tid).or_default() += 1;
    }
    report!(
        "session threads: samples per tid {per_tid:?}, FORKed threads {forked:?}, lost {}",
        stats.lost
    );
    assert_eq!(forked.len(), 2, "two FORK records of new threads");
    assert!(forked.iter().all(|t| exited.contains(t)), "and their EXITs");
    for t in &forked {
        assert!(
            per_tid.get(t).copied().unwrap_or(0) > 0,
            "samples of thread {t}: {per_tid:?}"
        );
    }
}

#[test]
fn attaching_to_a_pid_for_a_duration_leaves_it_running() {
    let Some(spin) = workload("spin") else { return };
    let mut child = Command::new(&spin)
        .arg("20000")
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn spin");
    let pid = child.id() as i32;
    let ev = cpu_clock(Some(1000), None, false);
    let o = SessionOptions {
        duration: Some(Duration::from_millis(500)),
        ..opts()
    };
    let t0 = Instant::now();
    let (recs, stats) = run(&ev, Target::Pids(vec![pid]), o);
    let took = t0.elapsed();
    let smp = samples(&recs);
    let alive = child.try_wait().expect("try_wait").is_none();
    let _ = child.kill();
    let _ = child.wait();
    report!(
        "session -p: {} samples in {:?} (wall {:?}), target alive afterwards: {alive}",
        smp.len(),
        took,
        stats.wall
    );
    assert!(alive, "-p must not kill its target");
    assert!(stats.exit.is_none());
    assert!(took >= Duration::from_millis(450) && took < Duration::from_secs(3));
    assert!(smp.iter().all(|s| s.pid == pid as u32));
    assert!(
        smp.len() >= 50,
        "≈500 samples expected (fewer when tests share the CPUs), got {}",
        smp.len()
    );
}

#[test]
fn attaching_to_threads_samples_only_them() {
    let Some(spin) = workload("spin") else { return };
    let mut child = Command::new(&spin)
        .arg("20000")
        .spawn()
        .expect("spawn spin");
    let pid = child.id() as i32;
    let ev = cpu_clock(Some(1000), None, false);
    let o = SessionOptions {
        duration: Some(Duration::from_millis(300)),
        ..opts()
    };
    let (recs, _) = run(&ev, Target::Tids(vec![pid]), o);
    let _ = child.kill();
    let _ = child.wait();
    let smp = samples(&recs);
    assert!(
        smp.len() >= 30,
        "≈300 samples expected (fewer when tests share the CPUs), got {}",
        smp.len()
    );
    assert!(smp.iter().all(|s| s.tid == pid as u32));
}

#[test]
fn a_tiny_ring_loses_records_and_still_finishes() {
    let Some(threads) = workload("threads") else {
        return;
    };
    // 10 µs cpu-clock period = 100 kHz per thread with callchains into 4 KiB rings.
    let ev = cpu_clock(None, Some(10_000), true);
    let o = SessionOptions {
        data_pages: 1,
        ..opts()
    };
    let target = Target::Command(vec![
        threads.display().to_string(),
        "2".into(),
        "40000".into(),
    ]);
    let (recs, stats) = run(&ev, target, o);
    report!(
        "session tiny ring: {} samples, lost {}, lost_samples {}, throttled {}",
        stats.samples,
        stats.lost,
        stats.lost_samples,
        stats.throttled
    );
    assert_eq!(stats.exit.map(|e| e.code), Some(0));
    assert!(stats.lost + stats.lost_samples > 0, "{stats:?}");
    assert_eq!(stats.corrupt, 0);
    assert!(recs.iter().any(|r| rtype(r) == LOST), "a LOST record");
    // The counts are those of the records the sink got, decoded here on their own:
    // PERF_RECORD_LOST is header, id, lost; PERF_RECORD_LOST_SAMPLES is header, lost.
    let sum = |ty: u32, at: usize| -> u64 {
        recs.iter()
            .filter(|r| rtype(r) == ty)
            .map(|r| u64_at(r, at))
            .sum()
    };
    assert_eq!(stats.lost, sum(LOST, 16), "{stats:?}");
    assert_eq!(stats.lost_samples, sum(LOST_SAMPLES, 8), "{stats:?}");
    assert_eq!(stats.samples, samples(&recs).len() as u64);
    assert_eq!(stats.records, recs.len() as u64);
    assert_eq!(
        stats.bytes,
        recs.iter().map(|r| r.len() as u64).sum::<u64>()
    );
}

#[test]
fn system_wide_sees_several_pids() {
    let Some(spin) = workload("spin") else { return };
    let mut child = Command::new(&spin).arg("2000").spawn().expect("spawn");
    let ev = cpu_clock(Some(1000), None, false);
    let o = SessionOptions {
        duration: Some(Duration::from_millis(300)),
        ..opts()
    };
    let (recs, stats) = run(&ev, Target::SystemWide { cpus: None }, o);
    let _ = child.kill();
    let _ = child.wait();
    let pids: BTreeSet<u32> = samples(&recs).iter().map(|s| s.pid).collect();
    report!("session -a: {} samples over pids {:?}", stats.samples, pids);
    assert!(pids.len() >= 2, "several pids: {pids:?}");
    assert!(pids.contains(&child.id()), "the spinner is among them");
}

#[test]
fn a_target_that_dies_mid_recording_ends_cleanly() {
    let Some(spin) = workload("spin") else { return };
    let ev = cpu_clock(Some(1000), None, true);
    let target = Target::Command(vec![spin.display().to_string(), "100".into()]);
    let (recs, stats) = run(&ev, target, opts());
    assert_eq!(stats.exit.map(|e| e.code), Some(0));
    assert!(stats.wall < Duration::from_secs(3), "{:?}", stats.wall);
    assert!(recs.iter().any(|r| rtype(r) == EXIT), "its EXIT record");
    assert!(stats.samples > 50);
}

#[test]
fn a_duration_terminates_the_command() {
    let Some(wait) = workload("wait_forever") else {
        return;
    };
    let ev = cpu_clock(Some(1000), None, true);
    let o = SessionOptions {
        duration: Some(Duration::from_millis(300)),
        ..opts()
    };
    let target = Target::Command(vec![wait.display().to_string()]);
    let (_, stats) = run(&ev, target, o);
    let exit = stats.exit.expect("reaped");
    assert_eq!(exit.signal, Some(libc::SIGTERM));
    assert!(stats.wall < Duration::from_secs(3));
}

#[test]
fn open_errors_keep_the_errno() {
    // No such process.
    let ev = cpu_clock(Some(1000), None, false);
    let e = Session::open(&ev, Target::Tids(vec![i32::MAX - 1]), opts()).expect_err("ESRCH");
    assert_eq!(e.raw_os_error(), Some(libc::ESRCH), "{e}");
    let e = Session::open(&ev, Target::Pids(vec![i32::MAX - 1]), opts()).expect_err("ESRCH");
    assert_eq!(e.raw_os_error(), Some(libc::ESRCH), "{e}");
    // A command that cannot be executed: the exec errno, at run time.
    let cmd = cpu_clock(Some(1000), None, true);
    let s = Session::open(
        &cmd,
        Target::Command(vec!["/nonexistent/hwprof-test".into()]),
        opts(),
    )
    .expect("the fork succeeds");
    let e = s.run(&never(), |_| Ok(())).expect_err("ENOENT");
    assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}");
    // A ring size the kernel refuses.
    let o = SessionOptions {
        data_pages: 3,
        ..opts()
    };
    let e = Session::open(&ev, Target::SystemWide { cpus: None }, o).expect_err("EINVAL");
    assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}");
    // A hardware event where there is no PMU keeps ENOENT and names the event.
    if !Path::new("/sys/bus/event_source/devices/cpu").exists() {
        let mut hw = cpu_clock(Some(1000), None, false);
        hw.events[0].attr.type_ = types::HARDWARE;
        hw.events[0].name = "cycles".into();
        let e = Session::open(&hw, Target::SystemWide { cpus: None }, opts()).expect_err("ENOENT");
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}");
        assert!(e.to_string().contains("cycles"), "{e}");
    }
    // A frequency over the kernel's limit is EINVAL.
    let max: u64 = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100_000);
    let fast = cpu_clock(Some(max + 1), None, false);
    let e = Session::open(&fast, Target::SystemWide { cpus: None }, opts()).expect_err("EINVAL");
    assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}");
}

/// Wall time of `spin 2000` alone and under a session at -F 999 with callchains.
/// Run alone for meaningful figures:
/// `cargo test --release -p hwprof-sampler --test session -- --ignored --nocapture`.
#[test]
#[ignore = "timing measurement; run explicitly"]
fn measure_overhead_of_spin_2000() {
    let Some(spin) = workload("spin") else { return };
    let runs = 3;
    let mut alone = Vec::new();
    let mut under = Vec::new();
    let mut samples = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let st = Command::new(&spin).arg("2000").status().expect("spin");
        assert!(st.success());
        alone.push(t.elapsed());
        let ev = cpu_clock(Some(999), None, true);
        let target = Target::Command(vec![spin.display().to_string(), "2000".into()]);
        let t = Instant::now();
        let s = Session::open(&ev, target, opts()).expect("open");
        let mut bytes = 0usize;
        let stats = s
            .run(&never(), |r| {
                bytes += r.len();
                Ok(())
            })
            .expect("run");
        under.push(t.elapsed());
        samples.push(stats.samples);
    }
    let med = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (a, u) = (med(&mut alone), med(&mut under));
    report!(
        "measure: spin 2000 alone {:?}, under session -F 999 -g {:?} (ratio {:.4}); samples {:?} (expected ≈1998 each)",
        a,
        u,
        u.as_secs_f64() / a.as_secs_f64(),
        samples
    );
    // spin runs for a fixed CPU time, which hides the cost of sampling interrupts
    // (they are charged to it); `calls N` does a fixed amount of work instead.
    let Some(calls) = workload("calls") else {
        return;
    };
    let n = "2000000000";
    let (mut alone, mut under) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        assert!(
            Command::new(&calls)
                .arg(n)
                .status()
                .expect("calls")
                .success()
        );
        alone.push(t.elapsed());
        let ev = cpu_clock(Some(999), None, true);
        let target = Target::Command(vec![calls.display().to_string(), n.into()]);
        let t = Instant::now();
        let s = Session::open(&ev, target, opts()).expect("open");
        let stats = s.run(&never(), |_| Ok(())).expect("run");
        under.push(t.elapsed());
        assert_eq!(stats.exit.map(|e| e.code), Some(0));
    }
    let (a, u) = (med(&mut alone), med(&mut under));
    report!(
        "measure: calls {n} alone {:?}, under session -F 999 -g {:?} (ratio {:.4})",
        a,
        u,
        u.as_secs_f64() / a.as_secs_f64()
    );
}

/// The records `synth` writes for a running process and the kernel match what
/// `perf record -p` synthesizes (same mappings, same kernel text range).
#[test]
fn synthesized_records_match_perfs() {
    use hwprof_sampler::synth;
    if Command::new("perf").arg("--version").output().is_err() {
        skip(Why::Setup, "perf is not installed");
        return;
    }
    let Some(spin) = workload("spin") else { return };
    let mut child = Command::new(&spin).arg("20000").spawn().expect("spawn");
    let pid = child.id() as i32;
    std::thread::sleep(Duration::from_millis(100));
    let data = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("synth.{pid}.data"));
    let ok = Command::new("perf")
        .args(["record", "-q", "-F", "99", "-p", &pid.to_string(), "-o"])
        .arg(&data)
        .args(["--", "sleep", "0.1"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let attr = cpu_clock(Some(1000), None, false).events[0].attr.clone();
    let ours = synth::process(&attr, pid);
    let kernel = synth::kernel_mmap(&attr);
    let _ = child.kill();
    let _ = child.wait();
    if !ok {
        skip(Why::Setup, "perf record -p failed");
        return;
    }
    let out = Command::new("perf")
        .args(["script", "--show-task-events", "--show-mmap-events", "-i"])
        .arg(&data)
        .output()
        .expect("perf script");
    let _ = std::fs::remove_file(&data);
    let text = String::from_utf8_lossy(&out.stdout);
    // "... PERF_RECORD_MMAP2 PID/TID: [0xADDR(0xLEN) @ 0xPGOFF ...]: r-xp PATH"
    let mut theirs = BTreeSet::new();
    let mut their_kernel = None;
    for line in text.lines() {
        let Some(i) = line.find("PERF_RECORD_MMAP") else {
            continue;
        };
        let rest = &line[i..];
        let (Some(a), Some(b)) = (rest.find("[0x"), rest.find(" @ ")) else {
            continue;
        };
        let (addr, len) = rest[a + 1..b].split_once('(').expect("addr(len)");
        let addr = u64::from_str_radix(addr.trim_start_matches("0x"), 16).expect("addr");
        let len = u64::from_str_radix(len.trim_start_matches("0x").trim_end_matches(')'), 16)
            .expect("len");
        let path = rest.rsplit(' ').next().unwrap_or("").to_string();
        if path.contains("kallsyms") {
            their_kernel = Some((addr, len));
        } else if rest.contains(&format!(" {pid}/{pid}:")) {
            theirs.insert((addr, len, path));
        }
    }
    let mut mine = BTreeSet::new();
    let mut comm = None;
    for r in &ours {
        match rtype(r) {
            MMAP2 => {
                mine.insert((u64_at(r, 16), u64_at(r, 24), cstr(&r[72..])));
            }
            COMM => comm = Some(cstr(&r[16..])),
            _ => {}
        }
    }
    report!(
        "synth: {} mappings of spin (perf: {}), kernel {:?} (perf: {:?})",
        mine.len(),
        theirs.len(),
        kernel.as_ref().map(|k| (u64_at(k, 16), u64_at(k, 24))),
        their_kernel
    );
    assert_eq!(comm.as_deref(), Some("spin"));
    assert_eq!(mine, theirs, "the same executable mappings as perf");
    if let Some(theirs) = their_kernel {
        let k = kernel.expect("kallsyms readable where perf read it");
        assert_eq!((u64_at(&k, 16), u64_at(&k, 24)), theirs);
    }
}

/// Lost records and samples at rising frequencies on the 2-thread workload with the
/// default ring (perf's 512 KiB). Run explicitly:
/// `cargo test --release -p hwprof-sampler --test session -- --ignored --nocapture loss`.
#[test]
#[ignore = "timing measurement; run explicitly"]
fn measure_loss_by_frequency() {
    let Some(threads) = workload("threads") else {
        return;
    };
    let max: u64 = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100_000);
    for f in [1_000u64, 5_000, 10_000, 25_000, 50_000, 100_000] {
        if f > max {
            report!("measure loss: -F {f} is over perf_event_max_sample_rate = {max}");
            continue;
        }
        let ev = cpu_clock(Some(f), None, true);
        let target = Target::Command(vec![
            threads.display().to_string(),
            "2".into(),
            "100000".into(),
        ]);
        let (_, st) = run(&ev, target, opts());
        report!(
            "measure loss: -F {f} -g, 2 threads: {} samples, lost {}, lost_samples {}, throttled {}",
            st.samples,
            st.lost,
            st.lost_samples,
            st.throttled
        );
    }
}
