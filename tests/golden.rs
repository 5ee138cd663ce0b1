//! Outputs that must not change: every reading command (report, `report -b`, script,
//! flamegraph, mem, c2c) on every recording the tests can make deterministically (the
//! shared real-hardware fixtures and the synthetic PEBS recordings of `tests/memdata`),
//! compared byte for byte with `tests/golden/`. The files were written by the binary of
//! issue 21's start (commit 90648f0), before the process model and the replay were
//! rewritten; a refactor must leave them as they are. `HWPROF_BLESS=1` rewrites them
//! (only for a change of output that is meant, reviewed in the diff).
//!
//! Live recordings are not here: what they hold differs from run to run. The recording's path is written
//! `<recording>`, cargo's temporary directory `<tmp>` and the scratch directory's process
//! id `<pid>` (only there: a timestamp may hold the same digits), so that the files hold
//! across checkouts and runs.

#[macro_use]
mod common;
mod memdata;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// One command's result as compared: exit code, stdout, stderr, paths normalized (the
/// recording's as `<recording>`).
fn outcome(args: &[&str], file: &str) -> String {
    // `HWPROF_GOLDEN_BIN`: another binary (with `HWPROF_BLESS=1`, the one whose outputs
    // the files keep, e.g. a release build of the commit before a refactor).
    let bin = std::env::var("HWPROF_GOLDEN_BIN").unwrap_or_else(|_| hwprof_bin().to_string());
    let r = run_cmd(Command::new(bin).args(args), TIMEOUT);
    let norm = |t: &str| {
        t.replace(file, "<recording>")
            .replace(env!("CARGO_TARGET_TMPDIR"), "<tmp>")
            .replace(
                &format!("golden_mem.{}", std::process::id()),
                "golden_mem.<pid>",
            )
    };
    format!(
        "$ hwprof {}\nexit {}\n--- stdout\n{}--- stderr\n{}",
        norm(&args[..].join(" ")),
        r.code(),
        abridged(&norm(&r.stdout)),
        abridged(&norm(&r.stderr))
    )
}

/// Outputs over 64 KiB (script's, mostly) as their first 60 lines and the SHA-256 of the
/// whole: the repository keeps the start to read and the digest to compare.
fn abridged(text: &str) -> String {
    const LIMIT: usize = 64 << 10;
    if text.len() <= LIMIT {
        return text.to_string();
    }
    let head: String = text.lines().take(60).map(|l| format!("{l}\n")).collect();
    format!(
        "{head}[... {} lines, {} bytes in all, sha256 {}]\n",
        text.lines().count(),
        text.len(),
        hwprof_analysis::topdown::fetch::sha256_hex(text.as_bytes())
    )
}

/// Compares `actual` with `tests/golden/NAME`, or rewrites it with `HWPROF_BLESS=1`.
fn golden(name: &str, actual: &str) -> Option<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("HWPROF_BLESS").is_some_and(|v| v == "1") {
        fs::create_dir_all(path.parent().expect("dir")).expect("create tests/golden");
        fs::write(&path, actual).expect("write golden file");
        report!("blessed {}", path.display());
        return None;
    }
    let expected = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => return Some(format!("cannot read {} ({e})", path.display())),
    };
    if expected == actual {
        return None;
    }
    let at = expected
        .lines()
        .zip(actual.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
    Some(format!(
        "{name}: differs from line {}:\n  expected: {:?}\n  actual:   {:?}",
        at + 1,
        expected.lines().nth(at).unwrap_or("<end>"),
        actual.lines().nth(at).unwrap_or("<end>"),
    ))
}

/// Runs each command (`{}` is the recording) on `file`, compares each with
/// `tests/golden/TAG/N.txt`, and returns what differs.
fn check(tag: &str, file: &Path, commands: &[&[&str]]) -> Vec<String> {
    let f = s(file);
    let mut bad = Vec::new();
    for (i, cmd) in commands.iter().enumerate() {
        let args: Vec<&str> = cmd
            .iter()
            .map(|&a| if a == "{}" { f.as_str() } else { a })
            .collect();
        if let Some(d) = golden(&format!("{tag}/{i:02}.txt"), &outcome(&args, &f)) {
            bad.push(d);
        }
    }
    bad
}

/// The commands of every recording with samples and stacks.
const PROFILE: &[&[&str]] = &[
    &["report", "-i", "{}", "--stdio"],
    &[
        "report",
        "-i",
        "{}",
        "--stdio",
        "--no-children",
        "-s",
        "comm,dso,sym",
    ],
    &[
        "report",
        "-i",
        "{}",
        "--stdio",
        "-s",
        "pid,sym",
        "--percent-limit",
        "0",
    ],
    &["report", "-i", "{}", "--json"],
    &["script", "-D", "-i", "{}"],
    &["script", "-i", "{}", "--format", "jsonl"],
    &["flamegraph", "-i", "{}", "--folded"],
    &["flamegraph", "-i", "{}", "--folded", "--no-kernel"],
    // perf script's text, script's default since issue 24 (after the others, so that
    // their files keep their numbers).
    &["script", "-i", "{}"],
];

/// The commands of memory recordings (on top of [`PROFILE`]).
const MEMORY: &[&[&str]] = &[
    &["mem", "report", "-i", "{}"],
    &["mem", "report", "-i", "{}", "-s", "level,snoop,tlb,lock"],
    &[
        "mem",
        "report",
        "-i",
        "{}",
        "-s",
        "function,data,data-module",
    ],
    &["mem", "report", "-i", "{}", "--json"],
    &["c2c", "report", "-i", "{}"],
    &["c2c", "report", "-i", "{}", "--show-all", "--json"],
    &["flamegraph", "-i", "{}", "--folded", "--mem", "l1"],
    &["flamegraph", "-i", "{}", "--folded", "--mem", "l3"],
    &["flamegraph", "-i", "{}", "--folded", "--mem", "hitm"],
    &["flamegraph", "-i", "{}", "--folded", "--mem", "dram"],
    &[
        "flamegraph",
        "-i",
        "{}",
        "--folded",
        "--mem",
        "l1",
        "--draw-event",
        "cpu/mem-stores/P",
    ],
];

#[test]
fn outputs_on_the_shared_fixtures_are_unchanged() {
    let names = [
        "perf.data.branch-4.14",
        "perf.data.callgraph-3.8",
        "perf.data.group_desc-4.14",
        "perf.data.hybrid_topology",
        "perf.data.lost_samples-4.4",
        "perf.data.piped.hw_and_sw-3.4",
    ];
    let mut bad = Vec::new();
    for name in names {
        let Some(f) = fixture(name) else {
            continue;
        };
        let tag = name.trim_start_matches("perf.data.");
        bad.extend(check(tag, &f, PROFILE));
        bad.extend(check(
            &format!("{tag}/branch"),
            &f,
            &[
                &["report", "-i", "{}", "-b", "--stdio"],
                &["report", "-i", "{}", "-b", "--json"],
                &[
                    "report",
                    "-i",
                    "{}",
                    "-b",
                    "--stdio",
                    "--branch-sort",
                    "mispredict,symbol_from",
                ],
            ],
        ));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn outputs_on_synthetic_memory_recordings_are_unchanged() {
    let bin = memdata::bin();
    let dir = fresh_dir("golden_mem");
    let mix: PathBuf = dir.join("mix.data");
    memdata::write(
        &mix,
        &bin,
        &[memdata::PID, memdata::TID2],
        &memdata::mix(&bin),
    );
    let fs_: PathBuf = dir.join("false_sharing.data");
    memdata::write(
        &fs_,
        &bin,
        &[memdata::PID, memdata::TID2],
        &memdata::false_sharing(&bin),
    );
    let mut bad = Vec::new();
    for (tag, f) in [("mem_mix", &mix), ("mem_false_sharing", &fs_)] {
        bad.extend(check(tag, f, PROFILE));
        bad.extend(check(&format!("{tag}/mem"), f, MEMORY));
    }
    let _ = fs::remove_dir_all(&dir);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
