//! The one skip policy of hwprof's tests, shared by every test crate of the workspace
//! (the root package's `tests/`, `pmu`, `sampler` and `symbolize`, unit and integration
//! tests alike; `analysis` tests need nothing a machine may lack, and the scan below
//! keeps any skip it grows on the policy too).
//!
//! A test that cannot run on this machine calls [`skip`] with the reason's kind ([`Why`])
//! and returns. The `SKIPPED: ...` line goes to the process's real stderr, past libtest's
//! output capture (which only intercepts the `print!` macros), so CI logs show it even
//! though the test passes.
//!
//! With `HWPROF_STRICT=1` (`.ci/run` sets it) a skip is a failure unless no setup can
//! fix it ([`Why::allowed`]): no hardware PMU (VMs), a hardware PMU that hides the
//! no-PMU fallback, a kernel setting tests must not change, another architecture, and a
//! clone with no `../shared/fixtures` folder at all (the fixtures are external; see
//! [`fixture_path`]). Missing perf, tracefs, a C compiler, a fixture file in a fixtures
//! folder that exists, root or a tool's feature are [`Why::Setup`]: `.ci/run` provides
//! them, so strict mode fails the test instead of letting it pass without checking
//! anything.
//!
//! [`report_line`] (and [`report!`]) print figures past the capture too; a line they are
//! given that starts with `SKIPPED` goes through [`skip`] as [`Why::Setup`], so a skip
//! written as `report!("SKIPPED: ...")` cannot escape strict mode either.
//!
//! [`elf`] makes hostile ELF files at test time (compressed sections claiming any size,
//! zlib bombs), so that nothing big is committed. [`http`] is a small HTTP server on
//! 127.0.0.1 that answers as scripted, hostile servers included, for the tests of
//! hwprof's HTTP clients; [`files_under`] lists what a run left in a folder.

#![forbid(unsafe_code)]

pub mod elf;
pub mod http;

use std::fmt::Display;
use std::io::Write;

/// The environment variable that turns unneeded skips into failures (`1`).
pub const STRICT_VAR: &str = "HWPROF_STRICT";

/// Why a test cannot run here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// No hardware (core) PMU is exposed: VMs and containers. Allowed in strict mode.
    NoHardwarePmu,
    /// A hardware PMU is present, so the no-PMU fallback under test is never taken.
    /// Allowed in strict mode.
    HasHardwarePmu,
    /// A kernel setting that tests must not change: `kptr_restrict` hiding kernel
    /// addresses, `perf_event_paranoid` allowing what the test expects to be refused, a
    /// kernel built without build ids. Allowed in strict mode.
    KernelSetting,
    /// The code under test is for another architecture. Allowed in strict mode.
    OtherArch,
    /// `../shared/fixtures` (real-hardware captures and vendor tables, kept outside the
    /// repo) is absent as a whole: a clone outside this workplace. Allowed in strict
    /// mode; a folder that is there but lacks a file is [`Why::Setup`] (see
    /// [`fixture_path`]).
    NoFixtures,
    /// Anything a machine set up by `.ci/run` has: perf, tracefs, gcc, binutils,
    /// setpriv, root, `../shared/fixtures`, the uprobe/breakpoint PMUs... A failure in
    /// strict mode.
    Setup,
}

impl Why {
    /// Whether strict mode lets a test skip for this reason.
    pub fn allowed(self) -> bool {
        !matches!(self, Why::Setup)
    }
}

/// `../shared/fixtures` next to the workspace: real-hardware recordings and vendor
/// tables that tests read in place and never copy into the repo.
pub fn fixtures_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures")
}

/// `fixtures_root()/rel` when it exists. Otherwise a skip that names it: allowed in
/// strict mode only when the whole fixtures folder is absent ([`Why::NoFixtures`]); when
/// the folder is there but `rel` is not, something is wrong ([`Why::Setup`]).
#[track_caller]
pub fn fixture_path(rel: &str) -> Option<std::path::PathBuf> {
    let root = fixtures_root();
    let p = root.join(rel);
    if p.exists() {
        return Some(p);
    }
    let why = if root.is_dir() {
        Why::Setup
    } else {
        Why::NoFixtures
    };
    skip(
        why,
        format_args!("../shared/fixtures/{rel} not found (fixtures are external)"),
    );
    None
}

/// True when `HWPROF_STRICT=1`.
pub fn strict() -> bool {
    std::env::var_os(STRICT_VAR).is_some_and(|v| v == "1")
}

/// Writes `msg` and a newline to the real stderr, past libtest's capture.
fn write_stderr(msg: &str) {
    let mut line = String::with_capacity(msg.len() + 1);
    line.push_str(msg);
    line.push('\n');
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Prints `SKIPPED: {msg}` past the capture; in strict mode, panics (fails the test)
/// unless `why` is [allowed](Why::allowed). The caller returns after it.
#[track_caller]
pub fn skip(why: Why, msg: impl Display) {
    let line = format!("SKIPPED: {msg}");
    write_stderr(&line);
    if let Some(failure) = strict_failure(why, strict(), &line) {
        panic!("{failure}");
    }
}

/// The failure message of a skip in strict mode, `None` when the skip may pass.
fn strict_failure(why: Why, strict: bool, line: &str) -> Option<String> {
    (strict && !why.allowed()).then(|| {
        format!(
            "{STRICT_VAR}=1: this machine should be able to run this test ({line}); \
             install or set up what it names (.ci/run does), or unset {STRICT_VAR}"
        )
    })
}

/// The reason of a `SKIPPED: reason` line, `None` for other lines.
fn skip_reason(msg: &str) -> Option<&str> {
    msg.strip_prefix("SKIPPED")
        .map(|r| r.trim_start_matches([':', ' ']))
}

/// Writes one line to the real stderr, past libtest's capture, so that CI logs show the
/// compared figures of passing tests too. A line starting with `SKIPPED` is a skip for
/// [`Why::Setup`] (see the crate docs).
#[track_caller]
pub fn report_line(msg: &str) {
    match skip_reason(msg) {
        Some(reason) => skip(Why::Setup, reason),
        None => write_stderr(msg),
    }
}

/// `eprintln!` that libtest does not capture (see [`report_line`]).
#[macro_export]
macro_rules! report {
    ($($arg:tt)*) => {
        $crate::report_line(&format!($($arg)*))
    };
}

/// Compiles the C file `src` into `out` (`cc FLAGS -o OUT SRC`), the one way every test
/// crate builds its C workloads. `false` after a [`Why::Setup`] skip when `cc` cannot be
/// run (a failure with `HWPROF_STRICT=1`); a source that does not compile fails the
/// test with the compiler's messages: it is never a skip.
#[track_caller]
pub fn compile_c(src: &std::path::Path, out: &std::path::Path, flags: &[&str]) -> bool {
    let res = std::process::Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(out)
        .arg(src)
        .output();
    let res = match res {
        Ok(r) => r,
        Err(e) => {
            skip(Why::Setup, format_args!("cannot run cc ({e})"));
            return false;
        }
    };
    assert!(
        res.status.success(),
        "compiling {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&res.stderr)
    );
    true
}

/// Symbol `name` of the binary `bin` as `nm -S` lists it: its address and size (0 when
/// nm shows none), the one way every test crate reads a workload's symbols. Panics with
/// nm's output when the symbol is not there.
#[track_caller]
pub fn nm_symbol(bin: &std::path::Path, name: &str) -> (u64, u64) {
    let out = std::process::Command::new("nm")
        .arg("-S")
        .arg(bin)
        .output()
        .expect("nm (binutils) runs");
    assert!(out.status.success(), "nm {} failed", bin.display());
    let text = String::from_utf8_lossy(&out.stdout);
    let hex = |f: &str| u64::from_str_radix(f, 16).expect("nm prints hex");
    for line in text.lines() {
        match line.split_whitespace().collect::<Vec<_>>()[..] {
            [addr, size, _, sym] if sym == name => return (hex(addr), hex(size)),
            [addr, _, sym] if sym == name => return (hex(addr), 0),
            _ => {}
        }
    }
    panic!("no symbol {name} in {}:\n{text}", bin.display());
}

/// The address of symbol `name` of `bin` ([`nm_symbol`]).
#[track_caller]
pub fn nm_address(bin: &std::path::Path, name: &str) -> u64 {
    nm_symbol(bin, name).0
}

/// Copies the executable `src` to `dst` (mode 0755) so that it can be run at once, from
/// any thread of a test binary.
///
/// Writing the copy in this process would race with every other thread that forks: a
/// child forked while the copy's file is open for writing holds that descriptor until it
/// execs (`O_CLOEXEC` only closes it then), and running the copy meanwhile fails with
/// `ETXTBSY` ("Text file busy"), as seen under load. So the copy is written by `cp` in a
/// child process, whose descriptors no other child can inherit, and is closed before
/// this returns. (Not a hard link: a copy is a file of its own, so uprobes and modes set
/// on it never reach the original.)
pub fn copy_executable(src: &std::path::Path, dst: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let out = std::process::Command::new("cp")
        .arg("--")
        .arg(src)
        .arg(dst)
        .output()?;
    if !out.status.success() {
        return Err(std::io::Error::other(format!(
            "cp {} {}: {}",
            src.display(),
            dst.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    std::fs::set_permissions(dst, std::fs::Permissions::from_mode(0o755))
}

/// elfutils' settings files in the root of a debuginfod cache (its client and hwprof's
/// write them), for [`files_under`] to pass over.
pub const DEBUGINFOD_SETTINGS: [&str; 3] =
    ["cache_clean_interval_s", "cache_miss_s", "max_unused_age_s"];

/// Every file under `dir` (hidden ones too), as paths relative to `dir`, sorted, but
/// those named in `except`. Links are listed, never followed; a missing `dir` has none.
pub fn files_under(dir: &std::path::Path, except: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
                todo.push(p);
            } else if let Ok(rel) = p.strip_prefix(dir) {
                let rel = rel.display().to_string();
                if !except.contains(&rel.as_str()) {
                    out.push(rel);
                }
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    #[test]
    fn only_setup_fails_and_only_in_strict_mode() {
        let line = "SKIPPED: perf not installed";
        let msg = strict_failure(Why::Setup, true, line).expect("a failure");
        assert!(
            msg.contains(line) && msg.contains("HWPROF_STRICT=1"),
            "{msg}"
        );
        assert_eq!(strict_failure(Why::Setup, false, line), None);
        for w in [
            Why::NoHardwarePmu,
            Why::HasHardwarePmu,
            Why::KernelSetting,
            Why::OtherArch,
        ] {
            assert!(w.allowed(), "{w:?}");
            assert_eq!(strict_failure(w, true, line), None, "{w:?}");
        }
    }

    /// Copies run at once while other threads fork and exec all the time never fail
    /// with ETXTBSY. (Written with `fs::copy` instead, 6 of 300 did on a loaded 2-core
    /// machine.)
    #[test]
    fn copies_run_while_other_threads_fork() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        const ETXTBSY: i32 = 26;
        let src = Path::new("/bin/true");
        if !src.exists() {
            skip(Why::Setup, "/bin/true not found");
            return;
        }
        let dir = std::env::temp_dir().join(format!("hwprof-testkit-copy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let stop = Arc::new(AtomicBool::new(false));
        let forkers: Vec<_> = (0..3)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let _ = std::process::Command::new(src).status();
                    }
                })
            })
            .collect();
        let mut busy = 0;
        for i in 0..300 {
            let exe = dir.join(format!("true{i}"));
            copy_executable(src, &exe).expect("copy");
            match std::process::Command::new(&exe).status() {
                Ok(st) => assert!(st.success()),
                Err(e) if e.raw_os_error() == Some(ETXTBSY) => busy += 1,
                Err(e) => panic!("running {}: {e}", exe.display()),
            }
        }
        stop.store(true, Ordering::Relaxed);
        for f in forkers {
            f.join().expect("forker");
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(busy, 0, "copies that could not run (Text file busy)");
    }

    /// Files at any depth, hidden ones too, relative and sorted; a link to a folder is
    /// one entry, never followed; the names excepted are left out.
    #[test]
    fn files_under_lists_files_and_links_but_never_follows_them() {
        let dir = std::env::temp_dir().join(format!("hwprof-testkit-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("a/b")).expect("mkdir");
        std::fs::create_dir_all(dir.join("outside")).expect("mkdir");
        for f in ["a/b/.hidden", "a/x", "cache_miss_s", "outside/y"] {
            std::fs::write(dir.join(f), b"").expect("write");
        }
        std::os::unix::fs::symlink(dir.join("outside"), dir.join("a/link")).expect("link");
        let want = ["a/b/.hidden", "a/link", "a/x", "outside/y"];
        assert_eq!(files_under(&dir, &DEBUGINFOD_SETTINGS), want);
        assert_eq!(files_under(&dir, &[]).len(), 5);
        assert!(files_under(&dir.join("none"), &[]).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn skipped_lines_of_report_are_setup_skips() {
        assert_eq!(skip_reason("SKIPPED: no cc"), Some("no cc"));
        assert_eq!(skip_reason("SKIPPED no cc"), Some("no cc"));
        assert_eq!(skip_reason("page-faults: 553"), None);
        assert_eq!(skip_reason("not SKIPPED: x"), None);
    }

    /// The `.rs` files under `dir`, outside build output (`target`), git's folder, and
    /// `benches` (benches are not tests and may print their skips).
    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = e.file_name();
            if p.is_dir() {
                if name != "target" && name != "benches" && name != ".git" {
                    rust_files(&p, out);
                }
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    /// The lines of `text` where a `print!`-family macro (print, println, eprint,
    /// eprintln) starts its format string with `SKIPPED`, the string on the macro's line
    /// or on the next one (as rustfmt breaks long calls).
    fn printed_skips(text: &str) -> Vec<usize> {
        // Built from pieces so that this file does not match itself.
        let word = format!("\"{}", "SKIPPED");
        let mut found = Vec::new();
        for (at, _) in text.match_indices("print") {
            let rest = &text[at + "print".len()..];
            let rest = rest.strip_prefix("ln").unwrap_or(rest);
            let Some(args) = rest.strip_prefix("!(") else {
                continue;
            };
            if args.trim_start().starts_with(&word) {
                found.push(text[..at].matches('\n').count() + 1);
            }
        }
        found
    }

    /// Every `.rs` file of the workspace under `root` with a skip printed behind the
    /// capture, as `path:line`.
    fn skips_behind_the_capture(root: &Path) -> (usize, Vec<String>) {
        let mut files = Vec::new();
        rust_files(root, &mut files);
        let mut bad = Vec::new();
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            for line in printed_skips(&text) {
                bad.push(format!("{}:{line}", f.display()));
            }
        }
        (files.len(), bad)
    }

    /// Every skip in the workspace goes through the policy: no `SKIPPED` line printed
    /// with the `print!` macros (captured, so invisible when the test passes, and never
    /// failing in strict mode). The whole workspace is scanned, so a crate added later
    /// is too. Benches (`benches/`) are not tests and may.
    #[test]
    fn no_test_skips_behind_the_capture() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("workspace root");
        let (n, bad) = skips_behind_the_capture(root);
        assert!(n > 50, "found only {n} .rs files");
        assert!(
            bad.is_empty(),
            "skips printed with print!/eprintln! (use hwprof_testkit::skip or report!):\n{}",
            bad.join("\n")
        );
    }

    /// Every member of the workspace is under the scanned root (none outside it).
    #[test]
    fn the_scan_covers_every_workspace_member() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("workspace root");
        let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
        let members = manifest
            .lines()
            .find(|l| l.trim_start().starts_with("members"))
            .expect("a members list");
        let mut files = Vec::new();
        rust_files(root, &mut files);
        for m in members.split('"').skip(1).step_by(2) {
            assert!(
                files.iter().any(|f| f.starts_with(root.join(m))),
                "workspace member {m} has no scanned .rs file"
            );
        }
        for d in [
            "analysis",
            "pmu",
            "sampler",
            "symbolize",
            "cli",
            "tests",
            "testkit",
        ] {
            assert!(
                files.iter().any(|f| f.starts_with(root.join(d))),
                "{d}/ is not scanned"
            );
        }
    }

    /// The scan finds skips printed in any folder (`analysis/` included), on one line
    /// or broken over two, and leaves benches, build output and other text alone.
    #[test]
    fn the_scan_finds_printed_skips() {
        let word = "SKIPPED";
        let dir = std::env::temp_dir().join(format!("hwprof-testkit-scan-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let write = |rel: &str, text: &str| {
            let p = dir.join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        };
        write(
            "analysis/src/a.rs",
            &format!("fn f() {{\n    println!(\"{word}: no fixture\");\n}}\n"),
        );
        write(
            "symbolize/src/b.rs",
            &format!(
                "fn f() {{\n    eprintln!(\n        \"{word}: x {{}}\",\n        1\n    );\n}}\n"
            ),
        );
        write(
            "pmu/src/c.rs",
            &format!("fn f() {{ eprint!(\"{word} y\"); }}\n"),
        );
        write(
            "benches/d.rs",
            &format!("fn f() {{ eprintln!(\"{word}: ok\"); }}\n"),
        );
        write(
            "target/e.rs",
            &format!("fn f() {{ eprintln!(\"{word}: ok\"); }}\n"),
        );
        write(
            "tests/f.rs",
            &format!("fn f() {{ report!(\"{word}: ok\"); eprintln!(\"not {word}\"); }}\n"),
        );
        let (_, mut bad) = skips_behind_the_capture(&dir);
        bad.sort();
        let at = |rel: &str, line: usize| format!("{}:{line}", dir.join(rel).display());
        assert_eq!(
            bad,
            [
                at("analysis/src/a.rs", 2),
                at("pmu/src/c.rs", 1),
                at("symbolize/src/b.rs", 2)
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
