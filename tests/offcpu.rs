//! `hwprof offcpu` end to end: a program whose off-CPU time under two functions is known
//! (`offcpu_ab`: 10 × 50 ms of nanosleep under `a_sleeps`, 5 × 100 ms of pipe reads
//! under `b_waits`), attaching to a running sleeper by PID (which keeps running), the
//! SVG title and the report, and the errors.
//!
//! The workloads time their own waits (CLOCK_MONOTONIC around each call) and print the
//! totals: on a loaded machine a thread that wakes waits for a CPU, which stretches its
//! off-CPU time well past the nominal 500 ms (+20% seen), so the nominal figures are no
//! reference. Off-CPU time under a function is its timed wall time less the few µs it
//! runs: see OWN_BELOW / OWN_ABOVE.

#[macro_use]
mod common;

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;

/// Off-CPU time under a function against the workload's own timing of it: at most that
/// long (the off-CPU intervals lie inside the timed calls; 0.5% for the two clocks and
/// rounding to µs), and short of it by the µs each call runs entering and leaving the
/// kernel. 25 runs of each test under a parallel load (load average 5 to 10 on 2 CPUs):
/// offcpu_ab's a_sleeps and b_waits -0.41% to -0.02% (every view, 50 runs), offcpu_gaps'
/// 200 short sleeps -0.62% to -0.17% (75 runs); 4 times the worst below, never above.
const OWN_BELOW: f64 = 0.025;
const OWN_ABOVE: f64 = 0.005;

/// The two engines (`--engine`): BPF sums in the kernel, perf events pair here. The
/// known-answer tests run on both, and must give the same answers.
const ENGINES: [&str; 2] = ["bpf", "perf"];

/// The `offcpu_ab: a_sleeps_us A b_waits_us B main_us M` line of the workload.
fn own_ab(run: &Run) -> (u64, u64) {
    let line = run
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("offcpu_ab: "))
        .unwrap_or_else(|| panic!("no offcpu_ab timing line\n{}", run.dump()));
    let f: Vec<&str> = line.split_whitespace().collect();
    let num = |i: usize| -> u64 {
        f.get(i)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("bad timing line {line:?}"))
    };
    assert_eq!((f[0], f[2]), ("a_sleeps_us", "b_waits_us"), "{line}");
    (num(1), num(3))
}

/// `got_us` off CPU under a function the workload timed at `own_us`.
fn within_own(what: &str, got_us: u64, own_us: u64) {
    let err = got_us as f64 / own_us as f64 - 1.0;
    report!(
        "offcpu: {what}: {:.1} ms off CPU, timed by the workload {:.1} ms: {:+.2}%",
        got_us as f64 / 1e3,
        own_us as f64 / 1e3,
        err * 100.0
    );
    assert!(
        (-OWN_BELOW..=OWN_ABOVE).contains(&err),
        "{what}: {got_us} µs off CPU, the workload timed {own_us} µs ({:+.2}%)",
        err * 100.0
    );
}

fn within(what: &str, got_us: u64, want_us: u64, tol: f64) {
    let err = (got_us as f64 - want_us as f64).abs() / want_us as f64;
    report!(
        "offcpu: {what}: {:.1} ms (expected {:.1} ms, error {:.1}%)",
        got_us as f64 / 1e3,
        want_us as f64 / 1e3,
        err * 100.0
    );
    assert!(
        err <= tol,
        "{what}: {got_us} µs off CPU, expected {want_us} µs ± {:.0}%",
        tol * 100.0
    );
}

#[test]
fn known_sleeps_and_pipe_waits() {
    if !require_tracefs("hwprof offcpu") {
        return;
    }
    let bin = wl("offcpu_ab");
    let mut shares: Vec<Vec<(String, f64)>> = Vec::new();
    for engine in ENGINES {
        let run = hwprof(&["offcpu", "--engine", engine, "--folded", "--", bin.as_str()]);
        run.assert_ok();
        shares.push(known_sleeps_and_pipe_waits_in(&run));
    }
    // The same stacks: each that holds a tenth of the time by one engine holds at least
    // a twentieth by the other (not the same cut on both sides: a stack near a tenth, the
    // start's wait for a CPU under load, may fall either side of it).
    let share = |of: &[(String, f64)], st: &str| {
        of.iter()
            .filter(|(s, _)| s == st)
            .map(|(_, f)| f)
            .sum::<f64>()
    };
    for (x, y) in [(0, 1), (1, 0)] {
        for (st, f) in shares[x].iter().filter(|(_, f)| *f >= 0.1) {
            assert!(
                share(&shares[y], st) >= 0.05,
                "{st}: {:.1}% of the time by --engine {}, {:.1}% by {}",
                f * 100.0,
                ENGINES[x],
                share(&shares[y], st) * 100.0,
                ENGINES[y]
            );
        }
    }
}

/// The checks of [`known_sleeps_and_pipe_waits`] on one run; each stack's share of the
/// time.
fn known_sleeps_and_pipe_waits_in(run: &Run) -> Vec<(String, f64)> {
    let folded = parse_folded(&run.stdout);
    // The main thread (its stacks start with its command name); the helper thread
    // `ab_writer` waits as long, on its own stacks.
    let main: Vec<(String, u64)> = folded
        .iter()
        .filter(|(st, _)| st.starts_with("offcpu_ab;"))
        .cloned()
        .collect();
    let a = through(&main, "a_sleeps");
    let b = through(&main, "b_waits");
    let total: u64 = main.iter().map(|(_, n)| n).sum();
    let (own_a, own_b) = own_ab(run);
    within_own("a_sleeps (10 × 50 ms nanosleep)", a, own_a);
    within_own("b_waits (5 × 100 ms pipe read)", b, own_b);
    // What is left is the start (exec, the loader) and the end: little on an idle
    // machine (0.4 ms), up to a sixth of the total while waiting for a CPU under load,
    // so it is shown, not bounded; a and b above hold the attribution.
    let elsewhere = total - a - b;
    report!(
        "offcpu: main thread elsewhere: {:.1} ms of {:.1} ms",
        elsewhere as f64 / 1e3,
        total as f64 / 1e3
    );
    // The kernel side of the waits is there too.
    assert!(
        through(&main, "do_nanosleep_[k]") > 400_000,
        "{}",
        run.stdout
    );
    assert!(through(&folded, "ab_writer") > 400_000, "{}", run.stdout);
    let all: u64 = folded.iter().map(|(_, n)| n).sum();
    folded
        .into_iter()
        .map(|(st, n)| (st, n as f64 / all.max(1) as f64))
        .collect()
}

/// Blocks separated by on-CPU work: 200 × (a 1 ms nanosleep under gap_sleep, then 1 ms
/// of spinning). A block ends at the thread's switch-in (PERF_RECORD_SWITCH); without
/// it, the spin's next cpu-clock sample (up to 250 µs later) would end it: +10% here.
/// The workload times its own sleeps (CLOCK_MONOTONIC around each call), so off-CPU
/// time under gap_sleep is that total less the few µs each call spends on the CPU
/// entering and leaving the kernel.
#[test]
fn blocks_between_on_cpu_work_end_at_the_switch_in() {
    if !require_tracefs("hwprof offcpu") {
        return;
    }
    let bin = wl("offcpu_gaps");
    for engine in ENGINES {
        let run = hwprof(&[
            "offcpu",
            "--engine",
            engine,
            "--folded",
            "--",
            bin.as_str(),
            "200",
            "1000",
            "1000",
        ]);
        blocks_between_on_cpu_work_in(&run);
    }
}

/// The checks of [`blocks_between_on_cpu_work_end_at_the_switch_in`] on one run.
fn blocks_between_on_cpu_work_in(run: &Run) {
    run.assert_ok();
    let slept: u64 = run
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("slept_us "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no slept_us line\n{}", run.dump()));
    let off = through(&parse_folded(&run.stdout), "gap_sleep");
    let err = off as f64 / slept as f64 - 1.0;
    report!(
        "offcpu: gap_sleep {:.1} ms off CPU, the workload slept {:.1} ms: {:+.2}%",
        off as f64 / 1e3,
        slept as f64 / 1e3,
        err * 100.0
    );
    assert!(
        (-OWN_BELOW..=OWN_ABOVE).contains(&err),
        "gap_sleep: {off} µs off CPU for {slept} µs of sleeps ({:+.2}%)\n{}",
        err * 100.0,
        run.dump()
    );
}

/// On-CPU time of `spin 300` against its 300 ms: +0.27% to +1.0% in 50 runs under load.
const ON_CPU_TOL: f64 = 0.04;

#[test]
fn svg_title_and_report() {
    if !require_tracefs("hwprof offcpu") {
        return;
    }
    let bin = wl("offcpu_ab");
    let svg = scratch_path("offcpu.svg");
    let data = scratch_path("offcpu.data");
    let _ = fs::remove_file(&svg);
    let run = hwprof(&[
        "offcpu",
        "-o",
        svg.to_str().expect("utf-8"),
        "--data-file",
        data.to_str().expect("utf-8"),
        "--",
        bin.as_str(),
    ]);
    run.assert_ok();
    let text = fs::read_to_string(&svg).expect("svg written");
    assert!(text.contains("Off-CPU time: "), "no title in the SVG");
    assert!(text.contains(" µs"), "no unit in the SVG");
    assert!(text.contains("a_sleeps") && text.contains("b_waits"));
    assert!(data.exists(), "--data-file kept no recording");
    let rep = hwprof(&["offcpu", "--report", "--", bin.as_str()]);
    rep.assert_ok();
    let (own_a, _) = own_ab(&rep);
    let line = rep
        .stdout
        .lines()
        .find(|l| l.ends_with("  a_sleeps"))
        .unwrap_or_else(|| panic!("no a_sleeps in the report:\n{}", rep.stdout));
    let ms: f64 = line
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("bad report line {line:?}"));
    within_own("a_sleeps in --report", (ms * 1e3).round() as u64, own_a);
    let _ = fs::remove_file(&svg);
    let _ = fs::remove_file(&data);
}

#[test]
fn attach_by_pid_and_detach() {
    if !require_tracefs("hwprof offcpu -p") {
        return;
    }
    let mut bg = Background::spawn(&mut Command::new(wl("wait_forever")));
    bg.wait_for_line("ready");
    let pid = bg.pid().to_string();
    let run = hwprof(&["offcpu", "-p", &pid, "--duration", "0.5", "--folded"]);
    run.assert_ok();
    std::thread::sleep(Duration::from_millis(100));
    assert!(bg.alive(), "the traced program did not survive the detach");
    let folded = parse_folded(&run.stdout);
    let sleep = through(&folded, "do_nanosleep_[k]");
    // main calls nanosleep directly; libc's wrapper keeps no frame pointer, so the fp
    // unwinder skips main's frame: its caller stands for it.
    let via_main = through(&folded, "__libc_start_call_main");
    report!(
        "offcpu -p: {:.1} ms in nanosleep over a 0.5 s attach ({} stacks)",
        sleep as f64 / 1e3,
        folded.len()
    );
    // The whole window, off CPU but for the µs of each of its 50 wakeups: the sleeps
    // cut by the attach and the detach count for their time inside it.
    let total: u64 = folded.iter().map(|(_, n)| n).sum();
    within_window("wait_forever over a 0.5 s attach", total, 500_000);
    // Of it, under do_nanosleep: all but the sleep in progress at the attach (its stack
    // read from /proc starts at hrtimer_nanosleep) and any preemption. Before the edges
    // counted, 471.7 to 504.2 ms in 50 runs under load; the bound kept from then.
    assert!(
        (385_000..=total).contains(&sleep),
        "nanosleep {sleep} µs of {total} µs:\n{}",
        run.stdout
    );
    assert!(
        via_main >= sleep * 9 / 10,
        "main's caller missing:\n{}",
        run.stdout
    );
    assert!(
        folded.iter().all(|(st, _)| st.starts_with("wait_forever;")),
        "another program in an attach to one PID:\n{}",
        run.stdout
    );
}

/// The window of an attach (`--duration`) against the time hwprof charges inside it.
/// The window runs from enabling the events to disabling them, a little past the
/// duration asked (the deadline is seen between drains): in 60 runs of the two tests
/// below on this 2-CPU machine under load (load average 13 to 17, 4 extra spinning
/// processes in 16 of them), pipe_block +0.01 to +32.9 ms, edge_waits -0.09 to +29.1 ms.
/// Above: about 4 times the worst. Below: the worst is a tenth of a millisecond, but a
/// thread preempted in the few instructions between edge_waits' clock reads and its
/// waits loses that time from the waits: a scheduler tick allowed.
const WINDOW_ABOVE_MS: f64 = 130.0;
const WINDOW_BELOW_MS: f64 = 5.0;

/// `got_us` against a window part that should last `want_us`: at most
/// [`WINDOW_BELOW_MS`] short, at most [`WINDOW_ABOVE_MS`] long.
fn within_window(what: &str, got_us: u64, want_us: u64) {
    let err_ms = (got_us as f64 - want_us as f64) / 1e3;
    report!(
        "offcpu: {what}: {:.3} ms, expected {:.3} ms: {err_ms:+.3} ms",
        got_us as f64 / 1e3,
        want_us as f64 / 1e3
    );
    assert!(
        (-WINDOW_BELOW_MS..=WINDOW_ABOVE_MS).contains(&err_ms),
        "{what}: {got_us} µs, expected {want_us} µs ({err_ms:+.1} ms)"
    );
}

/// `pipe_block` started and waiting in its pipe read, and its pid.
fn blocked_reader() -> (Background, String) {
    let mut bg = Background::spawn(&mut Command::new(wl("pipe_block")));
    bg.wait_for_line("ready");
    // Until it waits in the read (just after "ready").
    std::thread::sleep(Duration::from_millis(100));
    let pid = bg.pid().to_string();
    (bg, pid)
}

/// The folded stacks of an `offcpu --folded` run of [`blocked_reader`], asserted to be
/// some and every one `pipe_block` blocked since the window opened, and their total.
fn blocked_since_the_start(run: &Run) -> (Vec<(String, u64)>, u64) {
    let folded = parse_folded(&run.stdout);
    assert!(
        !folded.is_empty()
            && folded
                .iter()
                .all(|(st, _)| st.starts_with("pipe_block;[blocked at start]")),
        "{}",
        run.dump()
    );
    let total = folded.iter().map(|(_, n)| n).sum();
    (folded, total)
}

/// `hwprof offcpu --engine ENGINE -p PID --duration SECS --folded`, which must succeed.
fn attached_folded(engine: &str, pid: &str, secs: &str) -> Run {
    let run = hwprof(&[
        "offcpu",
        "--engine",
        engine,
        "-p",
        pid,
        "--duration",
        secs,
        "--folded",
    ]);
    run.assert_ok();
    run
}

/// A process blocked on a pipe read for the whole window is off CPU for all of it, on
/// the kernel stack it waits in (read from /proc when the window opened: no switch-out
/// of the wait was recorded), under a `[blocked at start]` frame. bcc's offcputime and
/// `perf record --off-cpu` show nothing for it (they count only waits whose switch-out
/// they saw); hwprof once said "no thread blocked" and exited 1.
#[test]
fn a_process_blocked_all_window_is_off_cpu_all_window() {
    if !require_tracefs("hwprof offcpu -p") {
        return;
    }
    let (mut bg, pid) = blocked_reader();
    for engine in ENGINES {
        let run = attached_folded(engine, &pid, "1.5");
        let (folded, total) = blocked_since_the_start(&run);
        within_window(
            &format!("--engine {engine}: pipe_block blocked all through a 1.5 s window"),
            total,
            1_500_000,
        );
        // Where it waits: a read in the kernel (the stack as root, else wchan's one
        // frame).
        assert!(
            folded.iter().any(|(st, _)| st
                .split(';')
                .any(|f| f.contains("read") && f.ends_with("_[k]"))),
            "no kernel read frame:\n{}",
            run.stdout
        );
    }
    assert!(bg.alive(), "the traced program did not survive the detach");
}

/// `offcpu -p PID -- sleep S` (perf's idiom): the command only bounds the window, so the
/// waits at its edges count as with `--duration`, and the command's program is not what
/// the stacks are of (sleep, without frame pointers, does not switch the recording to
/// DWARF). A flame graph of a process that never ran names the process, not `sleep`.
#[test]
fn a_command_bounds_the_window_of_an_attached_process() {
    if !require_tracefs("hwprof offcpu -p") {
        return;
    }
    let (mut bg, pid) = blocked_reader();
    for engine in ENGINES {
        let run = hwprof(&[
            "offcpu", "--engine", engine, "-p", &pid, "--folded", "--", "sleep", "1.5",
        ]);
        run.assert_ok();
        assert!(
            !run.stderr.contains("frame pointers"),
            "the bounding command was judged:\n{}",
            run.dump()
        );
        // Only pipe_block: the command that bounds the window is not traced.
        let (_, total) = blocked_since_the_start(&run);
        within_window(
            &format!("--engine {engine}: pipe_block while `sleep 1.5` ran"),
            total,
            1_500_000,
        );
    }

    let flame = hwprof(&["flamegraph", "-p", &pid, "--folded", "--", "sleep", "0.3"]);
    assert_eq!(flame.code(), 1, "{}", flame.dump());
    assert!(
        flame.stderr.contains(&format!(
            "process {pid} ran too briefly to be sampled while `sleep 0.3` ran"
        )) && !flame.stderr.contains("frame pointers"),
        "{}",
        flame.dump()
    );
    assert!(bg.alive(), "the traced program did not survive the detach");
}

/// Waits in progress at both edges count for their time inside the window: the window
/// opens while `edge_waits` sleeps under first_sleep (1.5 s: an attach takes well under
/// that), it spins 0.5 s, then sleeps under final_sleep past the window's end (a 3 s
/// window). The wait at the start (`[blocked at start]`) and the one at the end
/// (final_sleep, from its switch-out to the end) together last the window less the
/// spin's wall time, which the workload measures; the end's alone lasts at least the
/// window less the time from "ready" to the spin's end.
#[test]
fn waits_at_the_window_edges_count_inside_it() {
    if !require_tracefs("hwprof offcpu -p") {
        return;
    }
    for engine in ENGINES {
        edge_waits_with(engine);
    }
}

/// [`waits_at_the_window_edges_count_inside_it`] on one engine.
fn edge_waits_with(engine: &str) {
    let mut bg = Background::spawn(Command::new(wl("edge_waits")).args(["1500", "500"]));
    bg.wait_for_line("ready");
    let pid = bg.pid().to_string();
    let run = attached_folded(engine, &pid, "3");
    signal(bg.pid(), libc::SIGKILL);
    let (_, _, err) = bg
        .wait_timeout(Duration::from_secs(10))
        .expect("edge_waits ends on SIGKILL");
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix("edge_waits: "))
        .unwrap_or_else(|| panic!("no timing line from edge_waits: {err}"));
    let f: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [spin_us, since_ready_us] = f[..] else {
        panic!("bad timing line {line:?}")
    };
    let folded = parse_folded(&run.stdout);
    let early = through(&folded, "[blocked at start]");
    let end = through(&folded, "final_sleep");
    assert!(
        early > 0,
        "no wait in progress at the start:\n{}",
        run.stdout
    );
    assert!(
        folded
            .iter()
            .filter(|(st, _)| st.contains("[blocked at start]"))
            .all(|(st, _)| st.contains("nanosleep")),
        "the wait at the start is not the sleep's:\n{}",
        run.stdout
    );
    within_window(
        &format!(
            "--engine {engine}: edge_waits: start and end waits of a 3 s window less a 0.5 s spin"
        ),
        early + end,
        3_000_000 - spin_us,
    );
    assert!(
        end as f64 >= (3_000_000 - since_ready_us) as f64 - WINDOW_BELOW_MS * 1e3,
        "final_sleep {end} µs, the spin ended {since_ready_us} µs after ready:\n{}",
        run.stdout
    );
}

/// `offcpu -a` never charges the idle task (tid 0, the swapper of each CPU): it switches
/// out whenever a CPU gets work, and those are no waits. A loaded machine may never idle
/// during the recording: the test says how many idle switches it saw, and
/// [`the_idle_task_is_never_charged`] checks the same on a file that holds some.
#[test]
fn system_wide_never_charges_the_idle_task() {
    if !require_tracefs("hwprof offcpu -a") {
        return;
    }
    let data = scratch_path("offcpu_a.data");
    let d = data.to_str().expect("utf-8");
    // The BPF engine never sums the idle task either.
    let bpf = hwprof(&[
        "offcpu",
        "--engine",
        "bpf",
        "-a",
        "--duration",
        "0.5",
        "--folded",
    ]);
    bpf.assert_ok();
    let folded = parse_folded(&bpf.stdout);
    assert!(!folded.is_empty(), "{}", bpf.dump());
    assert!(
        folded.iter().all(|(st, _)| !st.starts_with("swapper")),
        "the idle task charged:\n{}",
        bpf.stdout
    );
    let run = hwprof(&[
        "offcpu",
        "--engine",
        "perf",
        "-a",
        "--duration",
        "0.5",
        "--folded",
        "--data-file",
        d,
    ]);
    run.assert_ok();
    let folded = parse_folded(&run.stdout);
    assert!(!folded.is_empty(), "{}", run.dump());
    let idle: Vec<&(String, u64)> = folded
        .iter()
        .filter(|(st, _)| st.starts_with("swapper"))
        .collect();
    assert!(idle.is_empty(), "the idle task charged: {idle:?}");
    let script = hwprof(&["script", "--format", "jsonl", "-i", d]);
    script.assert_ok();
    let idle_switches = script
        .stdout
        .lines()
        .filter(|l| l.contains(r#""event":"sched:sched_switch""#) && l.contains(r#""tid":0,"#))
        .count();
    report!("offcpu -a: {idle_switches} switch-outs of the idle task in 0.5 s, none charged");
    let _ = fs::remove_file(&data);
}

/// `flamegraph --off-cpu --folded -i DATA` (asserted to succeed), and its off-CPU
/// stacks (those ending in `[off]`).
fn off_cpu_stacks(data: &Path) -> (Run, Vec<(String, u64)>) {
    let run = hwprof(&[
        "flamegraph",
        "--off-cpu",
        "--folded",
        "-i",
        data.to_str().unwrap(),
    ]);
    run.assert_ok();
    let off = parse_folded(&run.stdout)
        .into_iter()
        .filter(|(st, _)| st.ends_with(";[off]"))
        .collect();
    (run, off)
}

/// The idle task's switch-outs in a file (`flamegraph --off-cpu -i`): CPU 0's idle task
/// hands the CPU to thread 10 at 1, 5 and 8 ms, is sampled running at 3 ms, and gets it
/// back at 2 and 6 ms. Thread 10 waited 5 ms (2 to 5 ms, 6 to 8 ms); the idle task,
/// nothing.
#[test]
fn the_idle_task_is_never_charged() {
    const MS: u64 = 1_000_000;
    let data = scratch_path("idle.data");
    switch_recording(
        &data,
        &[(0, "swapper/0"), (10, "t10")],
        &[
            (0, MS, Some(10)),
            (10, 2 * MS, Some(0)),
            (0, 3 * MS, None),
            (0, 5 * MS, Some(10)),
            (10, 6 * MS, Some(0)),
            (0, 8 * MS, Some(10)),
        ],
    );
    let (run, off) = off_cpu_stacks(&data);
    assert_eq!(off, [("t10;[off]".to_string(), 5000)], "{}", run.dump());
    let _ = fs::remove_file(&data);
}

#[test]
fn errors_are_one_line() {
    if !require_tracefs("hwprof offcpu errors") {
        return;
    }
    let run = hwprof(&["offcpu", "-p", "999999999", "--duration", "0.1"]);
    assert_ne!(run.code(), 0, "{}", run.dump());
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.dump());
    assert!(lines[0].contains("999999999"), "{}", run.dump());
    let none = hwprof(&["offcpu"]);
    assert_ne!(none.code(), 0);
    assert!(none.stderr.contains("nothing to trace"), "{}", none.dump());
    // What only the perf-event engine can do is a usage error with --engine bpf.
    let ab = wl("offcpu_ab");
    for (args, says) in [
        (
            vec!["--call-graph", "dwarf", "--", ab.as_str()],
            "--call-graph dwarf",
        ),
        (vec!["-t", "1", "--duration", "0.1"], "single threads (-t)"),
    ] {
        let mut all = vec!["offcpu", "--engine", "bpf"];
        all.extend(args);
        let run = hwprof(&all);
        assert_eq!(run.code(), 2, "{}", run.dump());
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{}", run.dump());
        assert!(
            lines[0].contains(says) && lines[0].contains("--engine perf"),
            "{}",
            run.dump()
        );
    }
}

/// The BPF engine leaves the other users of `sched:sched_switch` their events: a BPF
/// program on a classic tracepoint that returns 0 drops that tracepoint's perf events
/// for everyone (the kernel's perf_trace_run_bpf_submit), which emptied a `record
/// --off-cpu` made meanwhile. (The engine's programs are raw tracepoints now, which
/// never touch perf's events; this keeps it so.)
#[test]
fn the_bpf_engine_leaves_other_tracers_their_events() {
    if !require_tracefs("hwprof offcpu --engine bpf -a") {
        return;
    }
    let mut traced = Background::spawn(
        Command::new(hwprof_bin())
            .args([
                "offcpu",
                "--engine",
                "bpf",
                "-a",
                "--duration",
                "8",
                "--folded",
                "-o",
            ])
            .arg(scratch_path("offcpu_other.folded")),
    );
    // Until its program is attached (it loads in well under a second).
    std::thread::sleep(Duration::from_secs(2));
    let data = scratch_path("offcpu_other.data");
    record_off_cpu_ab(&data, "a_sleeps from record --off-cpu beside a BPF trace");
    assert!(traced.alive(), "the system-wide BPF trace ended early");
    signal(traced.pid(), libc::SIGINT);
    let _ = traced.wait_timeout(Duration::from_secs(20));
    let _ = fs::remove_file(&data);
}

#[test]
fn wall_clock_view_tags_on_and_off() {
    if !require_tracefs("hwprof offcpu --wall") {
        return;
    }
    // spin burns 300 ms of CPU; offcpu_ab sleeps 500 ms under a_sleeps.
    for engine in ENGINES {
        wall_clock_view_with(engine);
    }
}

/// [`wall_clock_view_tags_on_and_off`] on one engine.
fn wall_clock_view_with(engine: &str) {
    let spin = wl("spin");
    let run = hwprof(&[
        "offcpu",
        "--engine",
        engine,
        "--wall",
        "--folded",
        "--",
        spin.as_str(),
        "300",
    ]);
    run.assert_ok();
    let folded = parse_folded(&run.stdout);
    let on = through(&folded, "[on]");
    let untagged = folded
        .iter()
        .filter(|(st, _)| !st.ends_with(";[on]") && !st.ends_with(";[off]"))
        .count();
    assert_eq!(untagged, 0, "stacks without [on]/[off]:\n{}", run.stdout);
    // spin burns 300 ms of its CPU time (it reads that clock): see ON_CPU_TOL.
    within("spin 300 ms on CPU ([on])", on, 300_000, ON_CPU_TOL);
    let ab = wl("offcpu_ab");
    let run = hwprof(&[
        "offcpu",
        "--engine",
        engine,
        "--wall",
        "--folded",
        "--",
        ab.as_str(),
    ]);
    run.assert_ok();
    let (own_a, _) = own_ab(&run);
    let folded = parse_folded(&run.stdout);
    let a_off: u64 = folded
        .iter()
        .filter(|(st, _)| st.ends_with(";[off]") && st.split(';').any(|f| f == "a_sleeps"))
        .map(|(_, n)| n)
        .sum();
    within_own("a_sleeps [off] in the wall-clock view", a_off, own_a);
}

/// `hwprof record --off-cpu -o data -- offcpu_ab`, its off-CPU time under a_sleeps
/// (read back with `flamegraph --off-cpu -i`) checked against the workload's timing.
fn record_off_cpu_ab(data: &Path, what: &str) {
    let rec = hwprof(&[
        "record",
        "-q",
        "--off-cpu",
        "-o",
        data.to_str().unwrap(),
        "--",
        wl("offcpu_ab").as_str(),
    ]);
    rec.assert_ok();
    let (own_a, _) = own_ab(&rec);
    let (_, off) = off_cpu_stacks(data);
    let a_off: u64 = off
        .iter()
        .filter(|(st, _)| st.split(';').any(|f| f == "a_sleeps"))
        .map(|(_, n)| n)
        .sum();
    within_own(what, a_off, own_a);
}

/// `hwprof record --off-cpu` then `hwprof flamegraph --off-cpu -i FILE`, and the one-step
/// `hwprof flamegraph --off-cpu -- CMD`: the same wall-clock view as `offcpu --wall`.
#[test]
fn record_and_flamegraph_off_cpu() {
    if !require_tracefs("hwprof record --off-cpu") {
        return;
    }
    let data = scratch_path("offcpu_wall.data");
    record_off_cpu_ab(&data, "a_sleeps [off] from record --off-cpu");
    // The exact switch-ins (PERF_RECORD_SWITCH, --switch-events) are in the file: at
    // least one per sleep of a_sleeps and wait of b_waits.
    let script = hwprof(&["script", "--format", "jsonl", "-i", data.to_str().unwrap()]);
    script.assert_ok();
    let ins = script
        .stdout
        .lines()
        .filter(|l| l.contains(r#""type":"switch""#) && l.contains(r#""out":false"#))
        .count();
    assert!(ins >= 15, "{ins} switch-in records");
    // perf reads the file: its two events' sample types differ, so their records carry
    // the id first (IDENTIFIER), as perf record writes them.
    if require_perf("perf script on record --off-cpu's file") {
        let ps = perf(&["script", "-F", "event", "-i", data.to_str().unwrap()]);
        ps.assert_ok();
        let switches = ps
            .stdout
            .lines()
            .filter(|l| l.contains("sched:sched_switch"))
            .count();
        assert!(
            switches >= 15,
            "{switches} sched_switch samples\n{}",
            ps.dump()
        );
    }
    let _ = fs::remove_file(&data);

    let spin = wl("spin");
    let run = hwprof(&[
        "flamegraph",
        "--off-cpu",
        "--folded",
        "--",
        spin.as_str(),
        "300",
    ]);
    run.assert_ok();
    let folded = parse_folded(&run.stdout);
    within(
        "spin 300 ms [on] from flamegraph --off-cpu",
        through(&folded, "[on]"),
        300_000,
        ON_CPU_TOL,
    );

    let bad = hwprof(&["record", "--off-cpu", "-e", "cpu-clock", "--", "true"]);
    assert_eq!(bad.code(), 2);
    assert!(bad.stderr.contains("--off-cpu"), "{}", bad.stderr);
}

/// Another kernel's `sched_switch` layout: `next_pid` at 28, `prev_pid` at 64 and a
/// 4-byte `prev_state` at 68 (this machine's 6.x kernel has `next_pid` at 56).
const OTHER_SWITCH_FORMAT: &str = "name: sched_switch\nID: 316\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:char prev_comm[16];\toffset:12;\tsize:16;\tsigned:0;\n\tfield:pid_t next_pid;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:pid_t prev_pid;\toffset:64;\tsize:4;\tsigned:1;\n\tfield:unsigned int prev_state;\toffset:68;\tsize:4;\tsigned:0;\n";

/// A tracing data section (perf's layout, version 0.6) holding `format` for `sched`.
fn tracing_section(format: &str) -> Vec<u8> {
    let mut b = b"\x17\x08\x44tracing0.6\0\0\x08".to_vec();
    b.extend_from_slice(&4096u32.to_le_bytes());
    for name in ["header_page", "header_event"] {
        b.extend_from_slice(name.as_bytes());
        b.push(0);
        b.extend_from_slice(&0u64.to_le_bytes());
    }
    b.extend_from_slice(&0u32.to_le_bytes()); // ftrace formats
    b.extend_from_slice(&1u32.to_le_bytes()); // systems
    b.extend_from_slice(b"sched\0");
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&(format.len() as u64).to_le_bytes());
    b.extend_from_slice(format.as_bytes());
    b.extend_from_slice(&[0; 8]); // no ftrace_printk, no saved_cmdline
    b
}

/// A `sched_switch` sample's raw data in [`OTHER_SWITCH_FORMAT`]'s layout, with another
/// number where this kernel's layout has `next_pid`.
fn other_switch_raw(prev: u32, next: u32) -> Vec<u8> {
    let mut raw = vec![0u8; 76]; // + the u32 size: 8-byte aligned
    raw[28..32].copy_from_slice(&next.to_le_bytes());
    raw[56..60].copy_from_slice(&7777u32.to_le_bytes());
    raw[64..68].copy_from_slice(&prev.to_le_bytes());
    raw[68..72].copy_from_slice(&1u32.to_le_bytes());
    raw
}

fn perf_record(type_: u32, body: &[u8]) -> Vec<u8> {
    let mut r = type_.to_le_bytes().to_vec();
    r.extend_from_slice(&0u16.to_le_bytes());
    r.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
    r.extend_from_slice(body);
    r
}

/// The sample id trailer (and a sample's first fields): TID, TIME, IDENTIFIER.
fn sample_id(tid: u32, time: u64, id: u64) -> Vec<u8> {
    let mut b = tid.to_le_bytes().to_vec();
    b.extend_from_slice(&tid.to_le_bytes());
    b.extend_from_slice(&time.to_le_bytes());
    b.extend_from_slice(&id.to_le_bytes());
    b
}

/// A recording made on a kernel whose `sched_switch` layout is not this machine's is
/// paired with the layout stored in its tracing data. Thread 10 blocks at 1 ms and 11
/// hands the CPU back to it at 1.05 ms (said only by the raw data's `next_pid`); 10
/// switches out again at 2 ms. Read with this machine's layout, `next_pid` is 7777 and
/// A recording of `sched:sched_switch` (in [`OTHER_SWITCH_FORMAT`]'s layout, with its
/// tracing data) and cpu-clock, written with hwprof's writer: COMM records of `comms`,
/// then per `(tid, time, next)` a switch of `tid` to `next`, or with no `next` a
/// cpu-clock sample of `tid` (it runs).
fn switch_recording(
    data: &std::path::Path,
    comms: &[(u32, &str)],
    events: &[(u32, u64, Option<u32>)],
) {
    use hwprof_pmu::attr::{Attr, sample, types};
    use hwprof_sampler::perfdata::features::{Features, id as feature_id};
    use hwprof_sampler::perfdata::writer::{EventEntry, Writer};
    use hwprof_sampler::record::kind;

    let (switch_id, clock_id) = (1u64, 2u64);
    // Sample ids first (IDENTIFIER), in every record (sample_id_all).
    let st = sample::IDENTIFIER | sample::TID | sample::TIME;
    let mut tp = Attr::new(types::TRACEPOINT, 316);
    tp.sample_type = st | sample::RAW;
    tp.sample_period = 1;
    tp.sample_id_all = true;
    let mut clock = Attr::new(types::SOFTWARE, 0);
    clock.sample_type = st;
    clock.sample_period = 250_000;
    clock.sample_id_all = true;
    let mut w = Writer::create(
        data,
        vec![
            EventEntry {
                attr: tp,
                name: "sched:sched_switch".into(),
                ids: vec![switch_id],
            },
            EventEntry {
                attr: clock,
                name: "cpu-clock".into(),
                ids: vec![clock_id],
            },
        ],
    )
    .expect("writer");
    for &(tid, comm) in comms {
        let mut body = tid.to_le_bytes().to_vec();
        body.extend_from_slice(&tid.to_le_bytes());
        let mut name = comm.as_bytes().to_vec();
        name.resize((name.len() + 1).next_multiple_of(8), 0);
        body.extend_from_slice(&name);
        body.extend_from_slice(&sample_id(tid, 0, switch_id));
        w.write_record(&perf_record(kind::COMM, &body))
            .expect("comm");
    }
    for &(tid, time, next) in events {
        let mut body = sample_id(tid, time, if next.is_some() { switch_id } else { clock_id });
        // IDENTIFIER comes first in a sample: move it there.
        body.rotate_right(8);
        if let Some(next) = next {
            let raw = other_switch_raw(tid, next);
            body.extend_from_slice(&(raw.len() as u32).to_le_bytes());
            body.extend_from_slice(&raw);
        }
        w.write_record(&perf_record(kind::SAMPLE, &body))
            .expect("sample");
    }
    let mut features = Features::default();
    features.other.push((
        feature_id::TRACING_DATA,
        tracing_section(OTHER_SWITCH_FORMAT),
    ));
    w.finish(&features).expect("finish");
}

/// 10's block runs to 2 ms: 1000 µs instead of 50.
#[test]
fn a_recording_from_another_kernel_is_read_with_its_own_format() {
    const MS: u64 = 1_000_000;
    let data = scratch_path("other_kernel.data");
    switch_recording(
        &data,
        &[(10, "t10"), (11, "t11"), (12, "t12")],
        &[
            (10, MS, Some(11)),
            (11, MS + 50_000, Some(10)),
            (10, 2 * MS, Some(0)),
            (12, 3 * MS, Some(0)),
            // 12 is seen running at 3.3 ms.
            (12, 3 * MS + 300_000, None),
        ],
    );

    let (run, off) = off_cpu_stacks(&data);
    assert_eq!(
        off,
        [
            ("t10;[off]".to_string(), 50),
            ("t12;[off]".to_string(), 300)
        ],
        "{}",
        run.dump()
    );
    let _ = fs::remove_file(&data);
}
