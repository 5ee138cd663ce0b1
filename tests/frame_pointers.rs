//! Frame pointers (issue 20, 3d): code built without them cuts `-g` stacks to one or
//! two frames. hwprof says which modules do that after recording and when reading
//! (record, report, flamegraph), and the commands that record and draw at once
//! (`flamegraph -- CMD`, `offcpu -- CMD`) record DWARF stacks for a program built
//! without them, saying so; `--call-graph fp` keeps frame pointers.
//!
//! One C program built twice: `-O2 -fomit-frame-pointer` and `-O2
//! -fno-omit-frame-pointer`.

#[macro_use]
mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::{Run, hwprof, scratch_path};

fn build_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = scratch_path("fp-build");
        fs::create_dir_all(&d).expect("create build dir");
        d
    })
}

/// `tests/workloads/NAME.c` built at -O2 with `fp_flag`, as `OUT`.
fn build(name: &str, out: &str, fp_flag: &str) -> Option<PathBuf> {
    let exe = build_dir().join(out);
    if !exe.exists() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/workloads")
            .join(format!("{name}.c"));
        if !hwprof_testkit::compile_c(&src, &exe, &["-O2", "-g", fp_flag, "-pthread"]) {
            return None;
        }
    }
    Some(exe)
}

/// Workload `name` built without frame pointers and with them.
fn programs(name: &str) -> Option<(PathBuf, PathBuf)> {
    Some((
        build(name, &format!("{name}_omit"), "-fomit-frame-pointer")?,
        build(name, &format!("{name}_keep"), "-fno-omit-frame-pointer")?,
    ))
}

/// `hwprof CMD --folded -o FILE EXTRA -- EXE` (asserted to succeed), and the folded
/// stacks it wrote.
fn folded(cmd: &str, exe: &Path, extra: &[&str]) -> (Run, String) {
    let out = scratch_path(&format!("fp-{cmd}.folded"));
    let mut args = vec![cmd, "--folded", "-o", s(&out)];
    args.extend_from_slice(extra);
    args.extend(["--", s(exe)]);
    let r = hwprof(&args);
    r.assert_ok();
    let text = fs::read_to_string(&out).unwrap_or_default();
    let _ = fs::remove_file(&out);
    (r, text)
}

/// Whether a line of `r`'s stderr names `exe` and says it is recorded with DWARF.
fn picks_dwarf(r: &Run, exe: &Path) -> bool {
    r.stderr
        .lines()
        .any(|l| l.contains(AUTO) && l.contains(s(exe)))
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

const CUT: &str = "stop after 1-2 frames";
const AUTO: &str = "was built without frame pointers: recording its stacks with --call-graph dwarf";

/// The stderr lines that say stacks are cut short.
fn cut_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(CUT)).collect()
}

/// The share of the folded weight in stacks that reach `main`.
fn reach_main(folded: &str) -> f64 {
    let (mut all, mut main) = (0u64, 0u64);
    for l in folded.lines() {
        let Some((stack, n)) = l.rsplit_once(' ') else {
            continue;
        };
        let n: u64 = n.parse().unwrap_or(0);
        all += n;
        if stack.split(';').any(|f| f == "main") {
            main += n;
        }
    }
    main as f64 / all.max(1) as f64
}

/// After `record -g`, and reading the recording with `report` and `flamegraph`: one
/// line naming the program built without frame pointers and saying to record with
/// DWARF; nothing for the one built with them.
#[test]
fn record_report_and_flamegraph_name_the_program_without_frame_pointers() {
    let Some((omit, keep)) = programs("fp_chain") else {
        return;
    };
    for (exe, cut) in [(&omit, true), (&keep, false)] {
        let data = scratch_path(&format!("fp-{}.data", cut));
        let rec = hwprof(&["record", "-g", "-o", s(&data), "--", s(exe)]);
        rec.assert_ok();
        let report = hwprof(&["report", "-i", s(&data)]);
        report.assert_ok();
        let svg = scratch_path(&format!("fp-{}.svg", cut));
        let graph = hwprof(&["flamegraph", "-i", s(&data), "-o", s(&svg)]);
        graph.assert_ok();
        for (what, r) in [
            ("record", &rec),
            ("report", &report),
            ("flamegraph", &graph),
        ] {
            let lines = cut_lines(&r.stderr);
            report!("{what} {}: {lines:?}", exe.display());
            if cut {
                assert_eq!(lines.len(), 1, "{what}: one notice:\n{}", r.dump());
                let l = lines[0];
                assert!(l.starts_with("hwprof: note: stacks through "), "{l}");
                assert!(l.contains(s(exe)), "{what}: the program is not named: {l}");
                assert!(l.contains("record with --call-graph dwarf"), "{l}");
            } else {
                assert!(lines.is_empty(), "{what}: {lines:?}");
            }
        }
        let _ = fs::remove_file(&data);
        let _ = fs::remove_file(&svg);
    }
}

/// `flamegraph -- CMD` records DWARF stacks for a program without frame pointers and
/// says so: its stacks reach `main`. With frame pointers, or `--call-graph fp`, it
/// keeps frame pointers; `fp` on the program without them gives the notice.
#[test]
fn flamegraph_of_a_command_picks_dwarf_for_a_program_without_frame_pointers() {
    let Some((omit, keep)) = programs("fp_chain") else {
        return;
    };
    let (r, text) = folded("flamegraph", &omit, &[]);
    let share = reach_main(&text);
    report!(
        "flamegraph -- (no frame pointers): {:.1}% reach main",
        share * 100.0
    );
    assert!(picks_dwarf(&r, &omit), "{}", r.dump());
    assert!(cut_lines(&r.stderr).is_empty(), "{}", r.dump());
    assert!(
        share >= 0.9,
        "{:.1}% of the weight reaches main:\n{text}",
        share * 100.0
    );

    let (r, text) = folded("flamegraph", &keep, &[]);
    assert!(!r.stderr.contains(AUTO), "{}", r.dump());
    assert!(cut_lines(&r.stderr).is_empty(), "{}", r.dump());
    assert!(reach_main(&text) >= 0.9, "{text}");

    // Asked for, frame pointers are kept: the stacks stop short, and the notice says why.
    let (r, text) = folded("flamegraph", &omit, &["--call-graph", "fp"]);
    let share = reach_main(&text);
    report!(
        "flamegraph --call-graph fp (no frame pointers): {:.1}% reach main",
        share * 100.0
    );
    assert!(!r.stderr.contains(AUTO), "{}", r.dump());
    assert_eq!(cut_lines(&r.stderr).len(), 1, "{}", r.dump());
    assert!(share < 0.1, "{:.1}% reach main", share * 100.0);
}

/// `offcpu -- CMD` makes the same choice.
#[test]
fn offcpu_of_a_command_picks_dwarf_for_a_program_without_frame_pointers() {
    if !common::require_tracefs("offcpu -- CMD") {
        return;
    }
    let Some((omit, keep)) = programs("dwarf_sleeper") else {
        return;
    };
    let (r, text) = folded("offcpu", &omit, &[]);
    assert!(picks_dwarf(&r, &omit), "{}", r.dump());
    // DWARF names the blocked functions through libc.
    assert!(
        text.contains(";a_sleeps;") && text.contains(";b_waits;"),
        "{text}"
    );
    let (r, _) = folded("offcpu", &keep, &[]);
    assert!(!r.stderr.contains(AUTO), "{}", r.dump());
}
