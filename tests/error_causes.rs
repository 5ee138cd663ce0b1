//! Errors name the real cause and the way out, once (issue 12): the first line a user
//! sees is the cause, not a consequence of it (a fallback that cannot help, a lookup
//! that hid the errno), and it says what to do.
//!
//! Each test runs the real binary and checks the exit code, that stderr is one
//! `hwprof:` line (or one `hwprof: note:` line and one error line), and the words that
//! name the cause and the way out.

mod common;

use std::path::Path;

use common::{Run, hwprof, scratch_path};

/// The error lines of a failed run: every stderr line, each checked to be `hwprof: ...`.
/// At most one `hwprof: note:` line may come before the one error line.
#[track_caller]
fn error_line(r: &Run, code: i32) -> String {
    assert_eq!(r.code(), code, "exit code of `{}`\n{}", r.cmdline, r.dump());
    let lines: Vec<&str> = r.stderr.lines().collect();
    let (notes, errors): (Vec<&str>, Vec<&str>) =
        lines.iter().partition(|l| l.starts_with("hwprof: note:"));
    assert!(
        notes.len() <= 1 && errors.len() == 1,
        "`{}` must print one error line (after at most one note), not {} notes and {} other lines\n{}",
        r.cmdline,
        notes.len(),
        errors.len(),
        r.dump()
    );
    let line = errors[0];
    assert!(
        line.starts_with("hwprof: "),
        "`{}`: the error line must start with `hwprof: `\n{}",
        r.cmdline,
        r.dump()
    );
    assert!(
        !line.contains("(os error"),
        "`{}` prints Rust's `(os error N)`\n{}",
        r.cmdline,
        r.dump()
    );
    line.to_string()
}

/// Like [`error_line`], and no note either: the error is all there is.
#[track_caller]
fn only_line(r: &Run, code: i32) -> String {
    let line = error_line(r, code);
    assert_eq!(
        r.stderr.lines().count(),
        1,
        "`{}` must print the error alone\n{}",
        r.cmdline,
        r.dump()
    );
    line
}

#[track_caller]
fn assert_says(r: &Run, line: &str, words: &[&str]) {
    for w in words {
        assert!(
            line.contains(w),
            "`{}`: the error must say {w:?}\n{}",
            r.cmdline,
            r.dump()
        );
    }
}

#[track_caller]
fn assert_not_says(r: &Run, line: &str, words: &[&str]) {
    for w in words {
        assert!(
            !line.contains(w),
            "`{}`: the error must not say {w:?} (a consequence, not the cause)\n{}",
            r.cmdline,
            r.dump()
        );
    }
}

// ---------------------------------------------------------------------------
// 1. Branch stacks (-b, -j, --call-graph lbr)
// ---------------------------------------------------------------------------

/// Without a hardware PMU, every way of asking for branch stacks says, once, that
/// branch-stack sampling needs a PMU that records branches, and what to use instead;
/// not the no-PMU note twice and then "cannot open event 'cpu-clock'" (the fallback's
/// event, which never has branch stacks).
#[test]
fn branch_stacks_without_a_pmu_say_branch_recording_is_missing() {
    if !common::require_no_hardware_pmu("branch stacks refused without a PMU") {
        return;
    }
    let data = scratch_path("branch-nopmu.data");
    let data = data.to_str().expect("utf-8 scratch path");
    let svg = scratch_path("branch-nopmu.svg");
    let svg = svg.to_str().expect("utf-8 scratch path");
    let cases: [(&[&str], &str); 5] = [
        (&["record", "-b", "-o", data, "--", "true"], "-b"),
        (
            &["record", "--call-graph", "lbr", "-o", data, "--", "true"],
            "--call-graph lbr",
        ),
        (
            &["record", "-j", "any,u", "-o", data, "--", "true"],
            "-j any,u",
        ),
        (
            &["record", "-e", "cycles", "-b", "-o", data, "--", "true"],
            "-b",
        ),
        (
            &["flamegraph", "--call-graph", "lbr", "-o", svg, "--", "true"],
            "--call-graph lbr",
        ),
    ];
    for (args, flag) in cases {
        let r = hwprof(args);
        let line = only_line(&r, 1);
        assert_says(
            &r,
            &line,
            &[
                flag,
                "branch-stack sampling",
                "LBR",
                "hardware PMU",
                "-g",
                "--call-graph dwarf",
            ],
        );
        assert_not_says(&r, &line, &["cpu-clock", "not supported by this kernel"]);
        assert!(!Path::new(data).exists() && !Path::new(svg).exists());
    }
}

/// Branch stacks on an event that never has them (software, tracepoint; `--off-cpu`,
/// which records both) is a usage error (2), refused before anything opens, naming the
/// event.
#[test]
fn branch_stacks_on_software_events_are_a_usage_error() {
    let data = scratch_path("branch-sw.data");
    let data = data.to_str().expect("utf-8 scratch path");
    let r = hwprof(&["record", "-e", "cpu-clock", "-b", "-o", data, "--", "true"]);
    let line = only_line(&r, 2);
    assert_says(
        &r,
        &line,
        &[
            "-b",
            "'cpu-clock' is a software event",
            "hardware event",
            "-g",
        ],
    );
    assert_not_says(&r, &line, &["cannot open"]);

    let r = hwprof(&["record", "--off-cpu", "-b", "-o", data, "--", "true"]);
    let line = only_line(&r, 2);
    assert_says(&r, &line, &["--off-cpu", "branch stacks", "leave out -b"]);

    if common::require_tracefs("branch stacks on a tracepoint") {
        let r = hwprof(&[
            "record",
            "-e",
            "sched:sched_switch",
            "--call-graph",
            "lbr",
            "-o",
            data,
            "--",
            "true",
        ]);
        let line = only_line(&r, 2);
        assert_says(
            &r,
            &line,
            &["--call-graph lbr", "'sched:sched_switch' is a tracepoint"],
        );
    }
    assert!(!Path::new(data).exists());
}
