//! The reference side of the `hwprof metrics` tests (`metrics.rs`, `metrics_adl.rs`,
//! `metrics_amd.rs`): a Python script of each test evaluates the published formulas
//! itself (so the reference is not hwprof's parser) and prints JSON lines, which are
//! compared with hwprof's `--json` lines metric by metric.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::process::Command;

use serde_json::{Map, Value};

use crate::common::{self, Run, Why, hwprof, skip};

/// True when `python3` runs; else false after a skip ([`Why::Setup`]).
pub fn python3() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "pass"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip(
            Why::Setup,
            "python3 is not installed (the reference evaluator)",
        );
    }
    ok
}

/// `python3 -c SCRIPT ARGS`: what it prints. A script that fails fails the test.
pub fn python(script: &str, args: &[&OsStr]) -> String {
    let py = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("run python3");
    assert!(
        py.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&py.stderr)
    );
    String::from_utf8_lossy(&py.stdout).into_owned()
}

/// The JSON lines of `text` by their `name`, each first given to `check`.
pub fn by_name(text: &str, check: impl Fn(&Value)) -> BTreeMap<String, Value> {
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            check(&v);
            (v["name"].as_str().expect("name").to_string(), v)
        })
        .collect()
}

/// The reference's metrics `want` (`name: [level, parent, value or null]`) against
/// hwprof's `got` (by [`by_name`]): the same names, each with the reference's level and
/// parent; where both have a value, `close(reference, hwprof)`; where neither has,
/// `unvalued(name, hwprof's line)`; one value alone fails. Returns the levels of the
/// values compared.
pub fn compare_tree(
    case: &str,
    want: &Map<String, Value>,
    got: &BTreeMap<String, Value>,
    close: impl Fn(f64, f64) -> bool,
    unvalued: impl Fn(&str, &Value),
) -> Vec<u64> {
    let mut want_names: Vec<&String> = want.keys().collect();
    want_names.sort();
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want_names,
        "{case}: the metrics"
    );
    let mut levels = Vec::new();
    for (name, w) in want {
        let g = &got[name];
        assert_eq!(g["level"], w[0], "{case} {name}: level");
        assert_eq!(g["parent"], w[1], "{case} {name}: parent");
        match (w[2].as_f64(), g["value"].as_f64()) {
            (Some(a), Some(b)) => {
                assert!(
                    close(a, b),
                    "{case} {name}: perf's expression {a}, hwprof {b}"
                );
                levels.push(w[0].as_u64().unwrap_or(0));
            }
            (None, None) => unvalued(name, g),
            (a, b) => panic!("{case} {name}: python {a:?}, hwprof {b:?}: {g}"),
        }
    }
    levels
}

/// `hwprof metrics ARGS --counts FILE`, `counts` written to FILE (scratch file `tag`,
/// removed after).
pub fn metrics_of_counts(tag: &str, counts: &str, args: &[&str]) -> Run {
    let file = common::scratch_path(tag);
    std::fs::write(&file, counts).expect("write counts");
    let f = file.display().to_string();
    let mut all = vec!["metrics"];
    all.extend_from_slice(args);
    all.extend(["--counts", &f]);
    let run = hwprof(&all);
    let _ = std::fs::remove_file(&file);
    run
}

/// The line of `text` whose first word is `name` (a metric's row).
pub fn row<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find(|r| r.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no {name}\n{text}"))
}
