//! Names from outside cannot reach the terminal raw: a program that names itself
//! `a<ESC>[31mb<LF>c;d<TAB><0xff>` (comm), run from a file whose path holds an escape and
//! a line break, is recorded; `report`, `script`, `flamegraph --folded`, `offcpu
//! --folded` and an error message quoting such a name print it escaped (`\x1b`, `\n`,
//! `\t`, `\xff`), one record, row or stack per line, and folded stacks keep `;` as the
//! only frame separator.

#[macro_use]
mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::*;

/// What the workload names itself (prctl PR_SET_NAME), as bytes.
const COMM: &[u8] = b"a\x1b[31mb\nc;d\t\xff";
/// The escaped comm as `script` prints it (the raw bytes).
const COMM_SCRIPT: &str = "a\\x1b[31mb\\nc;d\\t\\xff";
/// The escaped comm as the symbolized outputs print it: the profile reads names as
/// UTF-8, so the stray byte is U+FFFD there (printable); folded stacks turn `;` to `:`.
const COMM_REPORT: &str = "a\\x1b[31mb\\nc;d\\t\u{fffd}";
const COMM_FOLDED: &str = "a\\x1b[31mb\\nc:d\\t\u{fffd}";
/// The workload's file name, and how it prints.
const BIN: &str = "ev\x1bil\nbin";
const BIN_SHOWN: &str = "ev\\x1bil\\nbin";

fn fresh_dir(tag: &str) -> PathBuf {
    let d = scratch_path(tag);
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).expect("create scratch dir");
    d
}

fn s(p: &Path) -> String {
    p.to_str().expect("utf-8 path").to_string()
}

/// Control characters in `text` other than the line breaks between lines and, where
/// `tabs`, the tabs `script` indents callchains with.
fn raw_controls(text: &str, tabs: bool) -> Vec<(usize, char)> {
    text.char_indices()
        .filter(|&(_, c)| (c.is_control() || c == '\u{202e}') && c != '\n' && !(tabs && c == '\t'))
        .collect()
}

/// The workload, copied to a file whose name holds an escape and a line break.
fn evil_bin(dir: &Path) -> PathBuf {
    let bin = dir.join(BIN);
    hwprof_testkit::copy_executable(&workload("evil_comm"), &bin).expect("copy the workload");
    bin
}

#[test]
fn comm_names_and_paths_are_escaped_in_every_text_output() {
    let dir = fresh_dir("escaping");
    let bin = evil_bin(&dir);
    let data = dir.join("evil.data");
    let rec = hwprof(&[
        "record",
        "-e",
        "cpu-clock",
        "-g",
        "-o",
        &s(&data),
        "--",
        &s(&bin),
        "300",
        "10",
    ]);
    rec.assert_ok();
    assert_eq!(raw_controls(&rec.stderr, false), [], "{}", rec.dump());

    // report: the Command and Shared Object cells escaped, one row per line.
    let rep = hwprof(&["report", "-i", &s(&data), "--sort", "comm,dso,sym"]);
    rep.assert_ok();
    assert_eq!(raw_controls(&rep.stdout, false), [], "{}", rep.dump());
    assert_eq!(raw_controls(&rep.stderr, false), [], "{}", rep.dump());
    let row = rep
        .stdout
        .lines()
        .find(|l| l.contains("spin"))
        .unwrap_or_else(|| panic!("no spin row\n{}", rep.dump()));
    assert!(row.contains(COMM_REPORT), "{row}");
    assert!(row.contains(BIN_SHOWN), "{row}");
    // Every row has its percentage: no row was split by a line break.
    for l in rep
        .stdout
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        assert!(
            l.trim_start().starts_with(|c: char| c.is_ascii_digit()),
            "{l:?}"
        );
    }

    // script: COMM records and samples show the bytes escaped, the path too.
    let sc = hwprof(&["script", "-i", &s(&data)]);
    sc.assert_ok();
    assert_eq!(raw_controls(&sc.stdout, true), [], "{}", sc.dump());
    assert!(
        sc.stdout
            .lines()
            .any(|l| l.contains("PERF_RECORD_COMM") && l.contains(COMM_SCRIPT)),
        "{}",
        sc.dump()
    );
    assert!(
        sc.stdout
            .lines()
            .any(|l| l.contains("PERF_RECORD_MMAP2") && l.ends_with(&format!("/{BIN_SHOWN}"))),
        "{}",
        sc.dump()
    );
    let samples = sc
        .stdout
        .lines()
        .filter(|l| l.contains(" cpu-clock:"))
        .collect::<Vec<_>>();
    assert!(
        samples.iter().any(|l| l.contains(COMM_SCRIPT)),
        "{}",
        sc.dump()
    );
    // Every line is a record or a callchain entry (tab-indented): no forged lines.
    for l in sc.stdout.lines().filter(|l| !l.starts_with('#')) {
        let ok = l.starts_with('\t') || l.contains("PERF_RECORD_") || l.contains(" cpu-clock:");
        assert!(ok, "a line no record made: {l:?}");
    }

    // flamegraph --folded: one stack per line, `;` only between frames.
    let fg = hwprof(&["flamegraph", "-i", &s(&data), "--folded"]);
    fg.assert_ok();
    check_folded(&fg.stdout, "spin");

    // An error quoting such a name (a --comm that matches nothing) holds no raw byte.
    let mut comm = String::from_utf8_lossy(COMM).into_owned();
    comm.push('x');
    let err = hwprof(&["report", "-i", &s(&data), "--comm", &comm]);
    assert_eq!(err.code(), 1, "{}", err.dump());
    assert!(err.stderr.contains("a\\x1b[31mb"), "{}", err.dump());
    assert_eq!(raw_controls(&err.stderr, false), [], "{}", err.dump());
    assert_eq!(err.stderr.lines().count(), 1, "{}", err.dump());
    // A path in an error, the same.
    let missing = dir.join("no\x1bsuch\nfile");
    let err = hwprof(&["report", "-i", &s(&missing)]);
    assert!(err.stderr.contains("no\\x1bsuch"), "{}", err.dump());
    assert_eq!(raw_controls(&err.stderr, false), [], "{}", err.dump());
    assert_eq!(err.stderr.lines().count(), 1, "{}", err.dump());
    report!(
        "comm {COMM_SCRIPT:?} and path {BIN_SHOWN:?}: escaped in report, script, folded stacks and errors"
    );
}

/// Folded stacks of the workload: every line `FRAMES COUNT`, the workload's stack
/// rooted at its escaped comm and reaching `leaf`.
fn check_folded(text: &str, leaf: &str) {
    assert_eq!(raw_controls(text, false), [], "{text}");
    let mut found = false;
    for l in text.lines() {
        let (stack, n) = l.rsplit_once(' ').unwrap_or_else(|| panic!("{l:?}"));
        assert!(n.parse::<u64>().is_ok(), "a line without a count: {l:?}");
        let frames: Vec<&str> = stack.split(';').collect();
        if frames[0] == COMM_FOLDED {
            found |= frames.contains(&leaf);
        } else {
            assert!(
                frames[0] == BIN_SHOWN || !frames[0].contains("\\x1b"),
                "a root frame cut from a name: {l:?}"
            );
        }
    }
    assert!(found, "no stack of {COMM_FOLDED:?} reaching {leaf}\n{text}");
}

#[test]
fn offcpu_folded_stacks_escape_comm_names() {
    if !require_tracefs("offcpu --folded") {
        return;
    }
    let dir = fresh_dir("escaping_offcpu");
    let bin = evil_bin(&dir);
    let r = hwprof(&["offcpu", "--folded", "--", &s(&bin), "20", "200"]);
    r.assert_ok();
    assert_eq!(raw_controls(&r.stderr, false), [], "{}", r.dump());
    check_folded(&r.stdout, "main");
}
