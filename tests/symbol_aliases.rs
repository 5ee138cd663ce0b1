//! Names among aliases, live against perf (issue 20, point 3): with libc's debug file
//! installed (Debian's `libc6-dbg`, which `.ci/run` installs), libc's full symbol table
//! has six names at `read`'s address (`read`, `__read`, `__libc_read`,
//! `__GI___libc_read`...). `hwprof report` must name each libc function of a recording
//! as `perf report` does on the same recording (perf's `choose_best_symbol`: `read`,
//! and `__GI___libc_write` for `write`, whose global names are weak). The rules
//! themselves are unit-tested in `symbolize/tests/aliases.rs`.

#[macro_use]
mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Why, require_perf, skip};

/// `write` and `read` of one byte through a pipe, for half a second of its own CPU time
/// (not wall time: on a loaded machine a wall-clock second gave as few as 46 samples,
/// none of them in `read`).
const PROG: &str = r#"
#include <unistd.h>
#include <time.h>
int main(void) {
    int p[2];
    if (pipe(p)) return 1;
    char b[1] = {0};
    struct timespec a, c;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    do {
        for (int i = 0; i < 1000; i++) {
            if (write(p[1], b, 1) != 1 || read(p[0], b, 1) != 1) return 1;
        }
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
    } while ((c.tv_sec - a.tv_sec) * 1000000000L + (c.tv_nsec - a.tv_nsec) < 500000000L);
    return 0;
}
"#;

/// The libc this test runs with (from `/proc/self/maps`).
fn libc_path() -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            p.rsplit('/')
                .next()
                .is_some_and(|n| n.starts_with("libc.so"))
        })
        .map(PathBuf::from)
}

/// Whether `/usr/lib/debug/.build-id/xx/rest.debug` exists for `elf`.
fn has_debug_file(elf: &Path) -> bool {
    let out = Command::new("readelf").arg("-n").arg(elf).output();
    let Ok(out) = out else { return false };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(id) = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
    else {
        return false;
    };
    let id = id.trim();
    Path::new("/usr/lib/debug/.build-id")
        .join(&id[..2])
        .join(format!("{}.debug", &id[2..]))
        .is_file()
}

/// The names of the `libc.so.6` rows of a `--stdio` report with at least 1% (the
/// column before `[.]` is the module).
fn libc_rows(out: &str) -> BTreeSet<String> {
    out.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let at = w.iter().position(|x| *x == "[.]")?;
            let pct: f64 = w.first()?.trim_end_matches('%').parse().ok()?;
            (at > 0 && w[at - 1] == "libc.so.6" && pct >= 1.0).then(|| w[at + 1..].join(" "))
        })
        .collect()
}

#[test]
fn libc_aliases_are_named_as_perf_names_them() {
    if !require_perf("perf report on the same recording") {
        return;
    }
    let Some(libc) = libc_path() else {
        skip(Why::Setup, "no libc.so in this process's maps");
        return;
    };
    if !has_debug_file(&libc) {
        skip(
            Why::Setup,
            format_args!(
                "no debug file for {} (install libc6-dbg; .ci/run does)",
                libc.display()
            ),
        );
        return;
    }
    let dir = common::scratch_path("aliases");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join("rw.c");
    std::fs::write(&c, PROG).unwrap();
    let prog = dir.join("rw");
    assert!(
        hwprof_testkit::compile_c(&c, &prog, &["-O2"]),
        "no C compiler: install gcc (.ci/run does)"
    );
    let data = dir.join("perf.data");
    let d = data.to_str().unwrap();
    common::hwprof(&["record", "-o", d, "--", prog.to_str().unwrap()]).assert_ok();
    let ours = common::hwprof(&["report", "-i", d, "--stdio", "--no-children"]);
    ours.assert_ok();
    let perf = common::perf(&[
        "report",
        "-i",
        d,
        "--stdio",
        "--no-children",
        "--sort",
        "comm,dso,sym",
    ]);
    perf.assert_ok();
    let (mine, theirs) = (libc_rows(&ours.stdout), libc_rows(&perf.stdout));
    report!("libc functions: hwprof {mine:?}, perf {theirs:?}");
    assert!(
        mine.contains("read") && !mine.iter().any(|n| n.contains("libc_read")),
        "read is named as perf names it: {mine:?}\n{}",
        ours.stdout
    );
    assert_eq!(mine, theirs, "{}\n{}", ours.stdout, perf.stdout);
}

/// Functions whose names read as C++ type encodings (`a` is `signed char`, `b` is
/// `bool`, `i` is `int` to a demangler) keep their names, as perf shows them: only
/// mangled names (`_Z...`, `_R...`) are demangled.
#[test]
fn short_names_are_not_demangled_into_types() {
    let dir = common::scratch_path("short_names");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join("ab.c");
    std::fs::write(
        &c,
        r#"
#include <time.h>
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec / 1e9; }
__attribute__((noinline)) unsigned long a(unsigned long x) { double e = cpu() + 0.2; while (cpu() < e) for (int k = 0; k < 10000; k++) x = x * 3 + 1; return x; }
__attribute__((noinline)) unsigned long b(unsigned long x) { double e = cpu() + 0.2; while (cpu() < e) for (int k = 0; k < 10000; k++) x = x * 5 + 1; return x; }
int main(void) { return (int)(a(1) ^ b(2)) & 0; }
"#,
    )
    .unwrap();
    let prog = dir.join("ab");
    assert!(
        hwprof_testkit::compile_c(&c, &prog, &["-O1", "-g", "-fno-omit-frame-pointer"]),
        "no C compiler: install gcc (.ci/run does)"
    );
    let data = dir.join("perf.data");
    let d = data.to_str().unwrap();
    common::hwprof(&["record", "-q", "-o", d, "--", prog.to_str().unwrap()]).assert_ok();
    let ours = common::hwprof(&["report", "-i", d, "--stdio", "--no-children"]);
    ours.assert_ok();
    let rows: BTreeSet<String> = ours
        .stdout
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(" ab "))
        .filter_map(|l| l.split("[.] ").nth(1).map(|s| s.trim().to_string()))
        .collect();
    assert!(
        rows.contains("a") && rows.contains("b"),
        "a and b by their names: {rows:?}\n{}",
        ours.stdout
    );
    assert!(
        !rows.iter().any(|r| r == "signed char" || r == "bool"),
        "{rows:?}"
    );
}
