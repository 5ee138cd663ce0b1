//! Helpers for symbolize's integration tests: scratch dirs, compiling C workloads,
//! visible `report!` lines and the skip policy of `hwprof_testkit` (with
//! `HWPROF_STRICT=1`, a skip for something `.ci/run` provides is a failure).
//!
//! The tests that record with the hwprof binary live in the root package
//! (`tests/symbolize_live.rs`), where cargo hands them the binary of this build.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use hwprof_symbolize::Locator;
use hwprof_symbolize::locate::{Config, DebuginfodConfig};

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

/// The file offset of virtual address `addr` in `bin`.
pub fn file_offset(bin: &Path, addr: u64) -> u64 {
    use object::{Object, ObjectSegment};
    let data = std::fs::read(bin).unwrap();
    let obj = object::File::parse(&*data).unwrap();
    obj.segments()
        .find_map(|seg| {
            let (off, size) = seg.file_range();
            let a = seg.address();
            (addr >= a && addr - a < size).then_some(addr - a + off)
        })
        .expect("address in a segment")
}

/// A locator with nothing local asking the debuginfod servers `urls`, with cache
/// `cache`, `DEBUGINFOD_TIMEOUT` `timeout` and `DEBUGINFOD_MAXSIZE` `max_size`.
pub fn debuginfod_client(
    cache: &Path,
    urls: Vec<String>,
    timeout: Duration,
    max_size: u64,
) -> Locator {
    Locator::new(Config {
        debuginfod: DebuginfodConfig {
            urls,
            cache: Some(cache.to_path_buf()),
            timeout,
            max_size,
            ..DebuginfodConfig::default()
        },
        ..Config::default()
    })
}

/// Every file left under the debuginfod cache `dir` (hidden ones too), relative,
/// sorted, but elfutils' settings files.
pub fn cache_files(dir: &Path) -> Vec<String> {
    hwprof_testkit::files_under(dir, &hwprof_testkit::DEBUGINFOD_SETTINGS)
}
