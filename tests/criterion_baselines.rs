//! A criterion bench measured with one event is never compared with a baseline measured
//! with another (issue 11, defect 9: a baseline in TSC ticks compared with a rerun in
//! task-clock ns printed "+154% Performance has regressed").
//!
//! The bench is that of `benches/counters.rs` (its `config` and `sum`, a module both
//! share in `benches/support/`), run in a child process of this test binary with
//! `CRITERION_HOME` in a scratch directory and `HWPROF_BENCH_EVENT` set, three times: task-clock, then another event (`msr/tsc/`
//! where the msr PMU exists, else cpu-clock), then task-clock again. The second run must
//! not compare (no `change:` line), the third must (same event, same baseline).

#[macro_use]
mod common;

#[path = "../benches/support/mod.rs"]
mod counters;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

const CHILD: &str = "HWPROF_CRITERION_CHILD";

/// The child: one short criterion run of `sum`, configured as `cargo bench --bench
/// counters` configures it.
#[test]
#[ignore = "run by a_rerun_with_another_event_is_not_compared in a child process"]
fn child_run() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let mut c = counters::config()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_millis(300))
        .without_plots();
    counters::sum(&mut c);
}

fn run(home: &Path, event: &str) -> common::Run {
    let exe = std::env::current_exe().expect("test binary");
    let r = common::run_cmd(
        Command::new(exe)
            .args([
                "--ignored",
                "--exact",
                "child_run",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .env("CRITERION_HOME", home)
            .env("HWPROF_BENCH_EVENT", event),
        common::TIMEOUT,
    );
    r.assert_ok();
    r
}

#[test]
fn a_rerun_with_another_event_is_not_compared() {
    let home = common::scratch_path("criterion-home");
    let _ = std::fs::remove_dir_all(&home);
    let (other, other_dir) = if common::pmu_exists("msr") {
        ("msr/tsc/", "counting-msr%2Ftsc%2F")
    } else {
        ("cpu-clock", "counting-cpu-clock")
    };
    let a = run(&home, "task-clock");
    assert!(
        !a.stdout.contains("change:"),
        "first run compared:\n{}",
        a.dump()
    );
    let b = run(&home, other);
    assert!(
        !b.stdout.contains("change:") && !b.stdout.contains("Performance has"),
        "{other} was compared with the task-clock baseline:\n{}",
        b.dump()
    );
    let c = run(&home, "task-clock");
    assert!(
        c.stdout.contains("change:"),
        "the same event was not compared with its baseline:\n{}",
        c.dump()
    );
    // Each event has its own baseline, and each run said which event it measured.
    for dir in ["counting-task-clock", other_dir] {
        let base = home.join(dir).join("sum/10k u64/base/estimates.json");
        assert!(base.exists(), "{} missing", base.display());
    }
    for (r, ev) in [(&a, "task-clock"), (&b, other), (&c, "task-clock")] {
        let said = format!("hwprof: criterion measures {ev}; baselines of this event in");
        assert!(r.stderr.contains(&said), "{}", r.dump());
    }
    report!(
        "criterion: {other} kept apart from task-clock under {}",
        home.display()
    );
    let _ = std::fs::remove_dir_all(&home);
}
