//! Helpers for symbolize's integration tests: scratch dirs, compiling C workloads,
//! visible `report!` lines and the skip policy of `hwprof_testkit` (with
//! `HWPROF_STRICT=1`, a skip for something `.ci/run` provides is a failure).
//!
//! The tests that record with the hwprof binary live in the root package
//! (`tests/symbolize_live.rs`), where cargo hands them the binary of this build.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

#[allow(unused_imports)] // each test file takes what it needs
pub use hwprof_testkit::{Why, report, skip};

/// A fresh scratch directory for one test.
pub fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join("hwprof-symbolize-tests")
        .join(format!("{tag}.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// True when `prog` runs.
pub fn have(prog: &str) -> bool {
    Command::new(prog)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Compiles `src` (C) into `dir/name` with `flags`; `None` after a SKIPPED line when
/// there is no `cc`. A compile error fails the test.
pub fn compile(dir: &Path, name: &str, src: &str, flags: &[&str]) -> Option<PathBuf> {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).expect("write C source");
    let out = dir.join(name);
    hwprof_testkit::compile_c(&c, &out, flags).then_some(out)
}
