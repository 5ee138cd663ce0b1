use super::*;
use hwprof_testkit::{Why, skip};
use std::path::Path;

fn has_cpu_pmu() -> bool {
    Path::new("/sys/bus/event_source/devices/cpu").exists()
}

fn busy(n: u64) -> u64 {
    let mut x = 0u64;
    for i in 0..n {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
    }
    x
}

#[test]
fn task_clock_measures_a_busy_loop() {
    let m = CounterMeasurement::task_clock();
    assert_eq!(m.event(), "task-clock");
    assert!(!m.fell_back());
    let s = m.start();
    busy(2_000_000);
    let ns = m.end(s);
    // A couple of million multiply-adds: well over 100 µs and under 10 s of CPU time.
    assert!(ns > 100_000.0 && ns < 1e10, "task-clock {ns} ns");
    let total = m.add(&ns, &m.zero());
    assert_eq!(m.to_f64(&total), ns);
    // More work measures more (same loop, 4x as long).
    let s = m.start();
    busy(8_000_000);
    let ns4 = m.end(s);
    assert!(ns4 > 2.0 * ns, "4x the work: {ns4} vs {ns}");
}

#[test]
fn instructions_fall_back_to_task_clock_without_a_pmu_and_warn_once() {
    if has_cpu_pmu() {
        skip(
            Why::HasHardwarePmu,
            "a hardware PMU is present, instructions do not fall back",
        );
        return;
    }
    let a = CounterMeasurement::instructions();
    let b = CounterMeasurement::new("cycles").expect("cycles parses");
    for m in [&a, &b] {
        assert!(m.fell_back(), "{} -> {}", m.requested(), m.event());
        assert_eq!(m.event(), "task-clock");
        assert_eq!(m.formatter().format_value(1500.0), "1.5000 µs");
    }
    assert_eq!(a.requested(), "instructions");
    assert_eq!(warnings_printed(), 1, "two fallbacks, one warning");
    let s = a.start();
    busy(1_000_000);
    assert!(a.end(s) > 0.0);
}

#[test]
fn instructions_are_counted_where_there_is_a_pmu() {
    if !has_cpu_pmu() {
        skip(
            Why::NoHardwarePmu,
            "no hardware PMU (/sys/bus/event_source/devices/cpu is absent)",
        );
        return;
    }
    let m = CounterMeasurement::exact("instructions:u").expect("a PMU counts instructions");
    assert!(!m.fell_back());
    let s = m.start();
    busy(1_000_000);
    let n = m.end(s);
    // At least one instruction per iteration, and not absurdly many.
    assert!(n > 1e6 && n < 1e8, "{n} instructions");
    assert!(m.formatter().format_value(n).ends_with("Minstr"));
}

#[test]
fn exact_refuses_to_fall_back() {
    if has_cpu_pmu() {
        skip(
            Why::HasHardwarePmu,
            "a hardware PMU is present, exact(\"instructions\") succeeds",
        );
        return;
    }
    let err = CounterMeasurement::exact("instructions").expect_err("no PMU here");
    let msg = err.to_string();
    assert!(
        msg.contains("cannot open event 'instructions'") && msg.contains("not supported"),
        "{msg}"
    );
    assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
    // A software event is exact everywhere.
    let m = CounterMeasurement::exact("page-faults").expect("software events open");
    assert_eq!(m.event(), "page-faults");
    assert_eq!(m.formatter().format_value(12.0), "12.000 faults");
}

#[test]
fn bad_events_are_errors_not_fallbacks() {
    let err = CounterMeasurement::new("instructons").expect_err("typo");
    assert!(
        err.to_string().contains("did you mean 'instructions'"),
        "{err}"
    );
    let err = CounterMeasurement::new("cycles,instructions").expect_err("two events");
    assert!(err.to_string().contains("exactly one event"), "{err}");
    assert!(CounterMeasurement::exact("task-clock:zz").is_err());
}

#[test]
fn start_on_another_thread_panics_clearly() {
    let m = CounterMeasurement::task_clock();
    let r = thread::scope(|s| s.spawn(|| m.start()).join());
    let Err(payload) = r else {
        panic!("start on another thread must panic")
    };
    let msg = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(msg.contains("counts the thread that created it"), "{msg}");
}

#[test]
fn read_overhead_is_one_syscall() {
    let m = CounterMeasurement::task_clock();
    let n = 20_000;
    let t = Instant::now();
    let mut last = 0.0;
    for _ in 0..n {
        let s = m.start();
        last = m.end(s);
    }
    let per_pair = t.elapsed().as_nanos() as f64 / n as f64;
    hwprof_testkit::report!(
        "criterion start+end pair: {per_pair:.0} ns wall; an empty batch measures {last:.0} ns of task-clock"
    );
    // Two read() syscalls: microseconds at most, even on a slow VM.
    assert!(per_pair < 50_000.0, "{per_pair} ns per start/end pair");
}

#[test]
fn each_event_has_its_own_directory_name() {
    use super::baseline::event_dir;
    assert_eq!(event_dir("task-clock"), "counting-task-clock");
    assert_eq!(event_dir("instructions:u"), "counting-instructions:u");
    assert_eq!(event_dir("msr/tsc/"), "counting-msr%2Ftsc%2F");
    assert_eq!(event_dir("a%2F b"), "counting-a%252F%20b");
    // Distinct names stay distinct (the escape character is escaped too).
    assert_ne!(event_dir("msr/tsc/"), event_dir("msr%2Ftsc%2F"));
}
