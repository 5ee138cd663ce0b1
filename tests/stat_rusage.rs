//! `hwprof stat`'s user and sys seconds, against the rusage the workload measured of
//! itself.

#[macro_use]
mod common;

use common::*;

/// `stat -r`'s user and sys seconds are the means of the runs' own rusage: each run of
/// `cpu_split` burns about 200 ms of user and 100 ms of system CPU and writes down its
/// rusage just before it exits. What stat prints (from wait4, after the exit) is never
/// below those means, and above them by no more than the exit's own work (measured:
/// 0.2 ms of sys) and a scheduler tick of the user/sys split.
#[test]
fn repeated_runs_print_the_means_of_their_user_and_sys_time() {
    let bin = wl("cpu_split");
    let log = scratch_path("cpu_split_rusage");
    let _ = std::fs::remove_file(&log);
    let r = hwprof(&[
        "stat",
        "-r",
        "3",
        "-e",
        "task-clock",
        "--",
        &bin,
        "200",
        "100",
        &log.display().to_string(),
    ]);
    r.assert_ok();
    let own: Vec<(f64, f64)> = std::fs::read_to_string(&log)
        .expect("the runs' rusage")
        .lines()
        .map(|l| {
            let v: Vec<f64> = l
                .split_whitespace()
                .map(|x| x.parse::<f64>().expect("µs") / 1e6)
                .collect();
            (v[0], v[1])
        })
        .collect();
    assert_eq!(own.len(), 3, "one line per run");
    let mean = |f: fn(&(f64, f64)) -> f64| own.iter().map(f).sum::<f64>() / own.len() as f64;
    let (own_user, own_sys) = (mean(|x| x.0), mean(|x| x.1));
    let (user, sys) = stat_user_sys(&r);
    report!(
        "stat -r 3 cpu_split 200 100: user {user:.6} s (runs' own mean {own_user:.6}), sys {sys:.6} s (own {own_sys:.6})"
    );
    for (what, printed, own) in [("user", user, own_user), ("sys", sys, own_sys)] {
        let tol = 0.005 + 0.02 * own;
        assert!(
            printed >= own - 1e-6 && printed <= own + tol,
            "{what}: stat printed {printed} s, the runs measured {own} s on average (tolerance {tol})\n{}",
            r.dump()
        );
    }
}
