//! Scratch folders and what is in them.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::scratch_path;

/// A fresh, empty scratch directory for one test (see [`scratch_path`]).
pub fn fresh_dir(tag: &str) -> PathBuf {
    let d = scratch_path(tag);
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).expect("create scratch dir");
    d
}

/// The names in `dir`, sorted.
pub fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `p` as an argument (the tests' paths are UTF-8).
pub fn s(p: &Path) -> String {
    p.to_str().expect("utf-8 path").to_string()
}

/// Makes a private character device `major`,`minor` at `p` (`mknod P c MAJOR MINOR`: a
/// copy of what `/dev/null`, `/dev/zero` or `/dev/full` is, never those themselves);
/// `false` where this user may not make device nodes (not root).
pub fn mknod_char(p: &Path, major: u32, minor: u32) -> bool {
    Command::new("mknod")
        .arg(p)
        .args(["c", &major.to_string(), &minor.to_string()])
        .status()
        .is_ok_and(|st| st.success())
}

/// Makes a FIFO at `p` (`mkfifo`).
pub fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo")
        .arg(p)
        .status()
        .is_ok_and(|st| st.success());
    assert!(ok, "mkfifo {}", p.display());
}
