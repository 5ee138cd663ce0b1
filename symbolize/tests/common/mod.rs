//! Helpers for symbolize's integration tests: scratch dirs, compiling C workloads,
//! recording them with perf or hwprof, visible `report!` lines.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Writes one line to the real stderr (visible past libtest's capture).
pub fn report_line(msg: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{msg}\n").as_bytes());
}

/// `eprintln!` that libtest does not capture.
macro_rules! report {
    ($($arg:tt)*) => {
        $crate::common::report_line(&format!($($arg)*))
    };
}
pub(crate) use report;

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

/// The shared fixtures directory (`../shared/fixtures` beside the repository).
pub fn fixtures() -> PathBuf {
    root().join("../shared/fixtures")
}

/// True when `prog` runs.
pub fn have(prog: &str) -> bool {
    Command::new(prog)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Compiles `src` (C) into `dir/name` with `flags`; `None` (after SKIPPED) without cc.
pub fn compile(dir: &Path, name: &str, src: &str, flags: &[&str]) -> Option<PathBuf> {
    if !have("cc") {
        report!("SKIPPED: no C compiler");
        return None;
    }
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).expect("write C source");
    let out = dir.join(name);
    let st = Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(&c)
        .status()
        .expect("run cc");
    assert!(st.success(), "cc failed for {}", c.display());
    Some(out)
}

/// The hwprof binary if it was built (release preferred).
pub fn hwprof_bin() -> Option<PathBuf> {
    ["release", "debug"]
        .iter()
        .map(|p| root().join("target").join(p).join("hwprof"))
        .find(|p| p.is_file())
}

/// Records `cmd` into `out` with `tool` (`perf` or a hwprof binary path) and
/// `record_args`; true when it worked.
pub fn record(tool: &Path, record_args: &[&str], out: &Path, cmd: &[&str]) -> bool {
    let o = Command::new(tool)
        .arg("record")
        .args(record_args)
        .arg("-o")
        .arg(out)
        .arg("--")
        .args(cmd)
        .output()
        .expect("run recorder");
    if !o.status.success() {
        report!(
            "{} record failed: {}",
            tool.display(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    o.status.success() && out.is_file()
}

/// The recorders available: perf and/or hwprof.
pub fn recorders() -> Vec<(&'static str, PathBuf)> {
    let mut v = Vec::new();
    if have("perf") {
        v.push(("perf", PathBuf::from("perf")));
    }
    if let Some(h) = hwprof_bin() {
        v.push(("hwprof", h));
    }
    v
}
