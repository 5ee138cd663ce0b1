//! `hwprof memory` (issue 23, points 1 and 4) against programs with known answers
//! (tests/workloads/alloc_known.c, and the same in C++ and Rust built here): the bytes
//! allocated by `churn()` (1000 × 64 KiB, freed), `leak_here()` (3 × 1 MiB, kept) and
//! `grow()` (16 reallocs, freed), by command and attached with `-p`, through a thread,
//! a fork and an exec, with the allocator found or named (`--allocator`), and what is
//! left after hwprof ends: no uprobe definition, no BPF program, the target untouched.
//! Numbers are exact: the kernel pairs every call.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{
    Background, Why, eventually, hwprof, hwprof_bin, parse_folded, program_ids_of, require_tracefs,
    scratch_path, signal, skip, stopped, through, wl,
};

/// The BPF engine pairs in the kernel; the perf engine samples every call and pairs
/// here: the same answers.
const ENGINES: [&str; 2] = ["bpf", "perf"];

const CHURN: u64 = 65_536_000;
const LEAK: u64 = 3_145_728;
const GROW: u64 = 4096 * 136;

fn bpf_ok(what: &str) -> bool {
    if !require_tracefs(what) {
        return false;
    }
    match hwprof_bpf::Engine::check() {
        Ok(()) => true,
        Err(e) => {
            skip(Why::Setup, format_args!("BPF: {e} ({what})"));
            false
        }
    }
}

/// A fresh scratch directory.
fn scratch(tag: &str) -> PathBuf {
    let d = scratch_path(tag);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// The bytes (or counts) through each of the three functions, whose names end in
/// `suffix` in the folded stacks (`()` for C++, none for C; Rust's are `alloc_known::NAME`).
fn answers(folded: &str, name: impl Fn(&str) -> String) -> (u64, u64, u64) {
    let f = parse_folded(folded);
    (
        through(&f, &name("churn")),
        through(&f, &name("leak_here")),
        through(&f, &name("grow")),
    )
}

fn c_names(n: &str) -> String {
    n.to_string()
}

fn memory(args: &[&str]) -> common::Run {
    let mut all = vec!["memory"];
    all.extend_from_slice(args);
    let run = hwprof(&all);
    run.assert_ok();
    run
}

#[test]
fn a_c_program_s_known_answers() {
    if !bpf_ok("hwprof memory") {
        return;
    }
    let exe = wl("alloc_known");
    for engine in ENGINES {
        let e = ["--engine", engine];
        let run = memory(&[&e[..], &["--folded", "--", &exe]].concat());
        assert_eq!(
            answers(&run.stdout, c_names),
            (CHURN, LEAK, GROW),
            "--engine {engine}: allocated bytes of churn, leak_here, grow:\n{}",
            run.dump()
        );
        let run = memory(&[&e[..], &["--folded", "--weight", "count", "--", &exe]].concat());
        assert_eq!(
            answers(&run.stdout, c_names),
            (1000, 3, 16),
            "--engine {engine}: allocations:\n{}",
            run.dump()
        );
        let run = memory(&[&e[..], &["--leaks", "--folded", "--", &exe]].concat());
        assert_eq!(
            answers(&run.stdout, c_names),
            (0, LEAK, 0),
            "--engine {engine}: still allocated at exit:\n{}",
            run.dump()
        );
        // The report: the title's total, leak_here's row with 3 blocks and an age.
        let run = memory(&[&e[..], &["--leaks", "--report", "--", &exe]].concat());
        let out = &run.stdout;
        assert!(
            out.lines()
                .next()
                .is_some_and(|l| l.starts_with("# Still allocated at exit: ")),
            "{out}"
        );
        let row = out
            .lines()
            .find(|l| l.trim_end().ends_with(" leak_here"))
            .unwrap_or_else(|| panic!("--engine {engine}: no leak_here row:\n{out}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[0], "3,145,728", "{row}");
        assert_eq!(cols[2], "3", "{row}");
        assert!(["s", "ms", "µs"].contains(&cols[4]), "an age: {row}");
        // --min-age longer than the program ran: nothing is old enough.
        let run = memory(
            &[
                &e[..],
                &["--leaks", "--min-age", "1h", "--report", "--", &exe],
            ]
            .concat(),
        );
        assert!(
            run.stdout.starts_with("# Still allocated at exit (blocks older than 3600.000 s): 0 B (0 bytes) in 0 blocks"),
            "--engine {engine}: nothing an hour old:\n{}",
            run.dump()
        );
    }
    // DWARF stacks (perf engine): whole stacks through libc's frameless code.
    let run = memory(&["--call-graph", "dwarf", "--folded", "--", &exe]);
    let f = parse_folded(&run.stdout);
    assert_eq!(through(&f, "churn"), CHURN, "{}", run.dump());
    assert!(
        f.iter()
            .any(|(st, _)| st.contains(";_start;") && st.contains(";printf;")),
        "printf's buffer, under _start: {}",
        run.dump()
    );
}

/// `hwprof memory ARGS -p PID` on `alloc_known stop`, resumed once hwprof says it
/// traces; hwprof's stdout.
fn attached(args: &[&str]) -> String {
    let target = Background::spawn(Command::new(wl("alloc_known")).arg("stop"));
    let pid = target.pid();
    assert!(
        eventually(Duration::from_secs(10), || stopped(pid)),
        "alloc_known did not stop"
    );
    let mut h = Background::spawn(
        Command::new(hwprof_bin())
            .arg("memory")
            .args(args)
            .args(["-p", &pid.to_string()]),
    );
    // hwprof says when its window opened (memleak's "Attaching to pid"): read stderr up
    // to that line, then let the target go.
    let said = h.wait_for_stderr("tracing the allocations of process");
    assert!(signal(pid, libc::SIGCONT));
    let (status, out, rest) = h
        .wait_timeout(Duration::from_secs(60))
        .expect("hwprof ends with its target");
    assert!(status.success(), "{said}{rest}");
    out
}

#[test]
fn the_same_answers_attached_with_p() {
    if !bpf_ok("hwprof memory -p") {
        return;
    }
    for engine in ENGINES {
        let out = attached(&["--engine", engine, "--folded"]);
        assert_eq!(
            answers(&out, c_names),
            (CHURN, LEAK, GROW),
            "--engine {engine}: allocated, attached:\n{out}"
        );
        let out = attached(&["--engine", engine, "--leaks", "--folded"]);
        assert_eq!(
            answers(&out, c_names),
            (0, LEAK, 0),
            "--engine {engine}: still allocated at the end, attached:\n{out}"
        );
    }
}

#[test]
fn c_plus_plus_and_rust_programs() {
    if !bpf_ok("hwprof memory on C++ and Rust") {
        return;
    }
    let dir = scratch("memory_langs");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workloads");
    let cpp = dir.join("alloc_known_cpp");
    match Command::new("g++")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&cpp)
        .arg(src.join("alloc_known.cpp"))
        .output()
    {
        Ok(o) => assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => {
            skip(Why::Setup, format_args!("no g++ ({e})"));
            return;
        }
    }
    let exe = cpp.to_str().expect("utf-8");
    // operator new is probed as malloc: its caller is named although libstdc++ has no
    // frame pointers. The vector in grow() doubles: 4 KiB + 8 + 16 + 32 + 64 KiB.
    let run = memory(&["--folded", "--", exe]);
    assert_eq!(
        answers(&run.stdout, |n| format!("{n}()")),
        (CHURN, LEAK, 4096 * 31),
        "C++ allocated:\n{}",
        run.dump()
    );
    let run = memory(&["--leaks", "--folded", "--", exe]);
    assert_eq!(
        answers(&run.stdout, |n| format!("{n}()")),
        (0, LEAK, 0),
        "C++ still allocated:\n{}",
        run.dump()
    );
    let rs = dir.join("alloc_known_rs");
    let o = Command::new("rustc")
        .args(["-O", "-g", "-C", "force-frame-pointers=yes", "-o"])
        .arg(&rs)
        .arg(src.join("alloc_known.rs"))
        .output()
        .expect("rustc runs (cargo's)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let exe = rs.to_str().expect("utf-8");
    let run = memory(&["--folded", "--", exe]);
    assert_eq!(
        answers(&run.stdout, |n| format!("alloc_known::{n}")),
        (CHURN, LEAK, GROW),
        "Rust allocated (its default allocator is libc's malloc):\n{}",
        run.dump()
    );
    let run = memory(&["--leaks", "--folded", "--", exe]);
    assert_eq!(
        answers(&run.stdout, |n| format!("alloc_known::{n}")),
        (0, LEAK, 0),
        "Rust still allocated:\n{}",
        run.dump()
    );
}

/// A program whose allocator has other names: found with --allocator, and a static
/// program without symbols gets one line saying what is missing and what to do.
#[test]
fn allocators_hwprof_cannot_find_are_named() {
    if !bpf_ok("hwprof memory --allocator") {
        return;
    }
    let dir = scratch("memory_pool");
    let src = dir.join("pool.c");
    std::fs::write(
        &src,
        r#"
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
/* A second allocator, under its own names, over libc's. */
static char arena[1 << 22];
static size_t used;
__attribute__((noinline)) void *pool_alloc(size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (used + n > sizeof arena) return NULL;
    void *p = arena + used; used += n; return p;
}
__attribute__((noinline)) void pool_free(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }
__attribute__((noinline)) void from_pool(void) {
    for (int i = 0; i < 100; i++) pool_free(pool_alloc(1000));
    for (int i = 0; i < 4; i++) pool_alloc(4096);
}
int main(void) { from_pool(); free(malloc(10)); printf("%zu\n", used); return 0; }
"#,
    )
    .expect("write pool.c");
    let exe = dir.join("pool");
    assert!(hwprof_testkit::compile_c(
        &src,
        &exe,
        &["-O1", "-g", "-fno-omit-frame-pointer"]
    ));
    let e = exe.to_str().expect("utf-8");
    for spec in [
        format!("{e}:malloc=pool_alloc,free=pool_free"),
        "malloc=pool_alloc,free=pool_free".to_string(),
    ] {
        let run = memory(&["--folded", "--allocator", &spec, "--", e]);
        let f = parse_folded(&run.stdout);
        assert_eq!(
            through(&f, "from_pool"),
            100 * 1000 + 4 * 4096,
            "pool bytes with --allocator {spec}:\n{}",
            run.dump()
        );
        let run = memory(&["--leaks", "--folded", "--allocator", &spec, "--", e]);
        assert_eq!(
            through(&parse_folded(&run.stdout), "from_pool"),
            4 * 4096,
            "pool blocks never freed:\n{}",
            run.dump()
        );
    }
    let bad = hwprof(&[
        "memory",
        "--allocator",
        &format!("{e}:malloc=no_such"),
        "--",
        e,
    ]);
    assert_eq!(bad.code(), 1, "{}", bad.dump());
    assert!(
        bad.stderr.contains("defines no function 'no_such'") && bad.stderr.lines().count() == 1,
        "{}",
        bad.dump()
    );
    // A static program without symbols: nothing names its allocator.
    let stat = dir.join("pool_static");
    let o = Command::new("cc")
        .args(["-O1", "-static", "-s", "-o"])
        .arg(&stat)
        .arg(&src)
        .output()
        .expect("cc");
    if !o.status.success() {
        skip(
            Why::Setup,
            format_args!(
                "no static libc (libc6-dev's libc.a): {}",
                String::from_utf8_lossy(&o.stderr)
            ),
        );
        return;
    }
    let run = hwprof(&["memory", "--", stat.to_str().expect("utf-8")]);
    assert_eq!(run.code(), 1, "{}", run.dump());
    let line = run.stderr.trim_end();
    assert!(
        line.lines().count() == 1
            && line.contains("no allocator to probe")
            && line.contains("--allocator BINARY"),
        "{}",
        run.dump()
    );
}

/// The allocations of a thread, a forked child and an exec'd program are all there,
/// and the program computes what it computes untraced.
#[test]
fn threads_forks_and_exec_are_followed_and_untouched() {
    if !bpf_ok("hwprof memory through fork and exec") {
        return;
    }
    let exe = wl("alloc_known");
    let bare = Command::new(&exe).arg("family").output().expect("run");
    assert!(bare.status.success());
    let dir = scratch("memory_family");
    let svg = dir.join("family.svg");
    let run = hwprof(&[
        "memory",
        "-o",
        svg.to_str().expect("utf-8"),
        "--",
        &exe,
        "family",
    ]);
    run.assert_ok();
    assert_eq!(
        run.stdout,
        String::from_utf8_lossy(&bare.stdout),
        "the program's own output, traced and not"
    );
    let svg_text = std::fs::read_to_string(&svg).expect("the SVG");
    assert!(svg_text.contains("Allocated: ") && svg_text.contains("leak_here"));
    let run = memory(&["--folded", "--", &exe, "family"]);
    assert_eq!(
        answers(&run.stdout, c_names),
        (CHURN, LEAK, GROW),
        "a thread's, a child's and the exec'd program's:\n{}",
        run.dump()
    );
}

/// The recording kept with --data-file is read by `hwprof report` and `perf script`.
#[test]
fn the_recording_is_read_by_report_and_perf_script() {
    if !bpf_ok("hwprof memory --data-file") {
        return;
    }
    let dir = scratch("memory_data");
    let data = dir.join("memory.data");
    let d = data.to_str().expect("utf-8");
    let exe = wl("alloc_known");
    memory(&["--leaks", "--folded", "--data-file", d, "--", &exe]);
    let rep = hwprof(&["report", "-i", d, "--stdio", "--no-children"]);
    rep.assert_ok();
    assert!(
        rep.stdout.contains("leak_here") && rep.stdout.contains("leaked-bytes"),
        "{}",
        rep.dump()
    );
    if common::require_perf("perf script on hwprof memory's recording") {
        let ps = common::perf(&["script", "-i", d]);
        ps.assert_ok();
        assert!(
            ps.stdout.contains("leaked-bytes") && ps.stdout.contains("leak_here"),
            "{}",
            ps.dump()
        );
    }
}

/// The `hwprof_<PID>` uprobe definitions of hwprof process `pid`.
fn definitions_of(pid: i32) -> Vec<String> {
    let text = std::fs::read_to_string("/sys/kernel/tracing/uprobe_events").unwrap_or_default();
    let group = format!(":hwprof_{pid}/");
    text.lines()
        .filter(|l| l.contains(&group))
        .map(str::to_string)
        .collect()
}

#[test]
fn nothing_is_left_after_sigterm_or_sigkill() {
    if !bpf_ok("hwprof memory after SIGTERM and SIGKILL") {
        return;
    }
    let exe = wl("alloc_known");
    for sig in [libc::SIGTERM, libc::SIGKILL] {
        let dir = scratch(&format!("memory_sig{sig}"));
        let svg = dir.join("m.svg");
        let mut h = Background::spawn(Command::new(hwprof_bin()).args([
            "memory",
            "--leaks",
            "-o",
            svg.to_str().expect("utf-8"),
            "--",
            &exe,
            "hold",
        ]));
        h.wait_for_line("ready");
        let hp = h.pid();
        let defs = definitions_of(hp);
        assert!(defs.len() >= 8, "hwprof's uprobes: {defs:?}");
        let ids = program_ids_of(hp);
        assert!(!ids.is_empty(), "hwprof holds its programs");
        assert!(signal(hp, sig));
        if sig == libc::SIGTERM {
            let (_, _, err) = h
                .wait_timeout(Duration::from_secs(60))
                .expect("hwprof ends after SIGTERM");
            let svg_text = std::fs::read_to_string(&svg).unwrap_or_default();
            assert!(
                svg_text.contains("leak_here") && svg_text.contains("3,145,728 bytes"),
                "the leaks are drawn after SIGTERM: {err}"
            );
        } else {
            assert!(
                eventually(Duration::from_secs(30), || !h.alive()),
                "hwprof survived SIGKILL"
            );
        }
        let gone = eventually(Duration::from_secs(15), || {
            let loaded = hwprof_bpf::loaded_program_ids();
            ids.iter().all(|i| !loaded.contains(i))
        });
        let removed = eventually(Duration::from_secs(20), || definitions_of(hp).is_empty());
        report!("memory after signal {sig}: programs gone {gone}, definitions removed {removed}");
        assert!(gone, "programs left after signal {sig}: {ids:?}");
        assert!(removed, "definitions left: {:?}", definitions_of(hp));
    }
}

#[test]
fn bad_input_gets_one_line() {
    let gone = hwprof(&["memory", "-p", "999999999"]);
    assert_ne!(gone.code(), 0);
    assert!(gone.stderr.contains("no such process"), "{}", gone.dump());
    let none = hwprof(&["memory"]);
    assert_eq!(none.code(), 2, "{}", none.dump());
    assert!(none.stderr.contains("nothing to trace"), "{}", none.dump());
    let age = hwprof(&["memory", "--min-age", "5s", "--", "true"]);
    assert_eq!(age.code(), 2, "--min-age needs --leaks: {}", age.dump());
    assert!(
        age.stderr.contains("--leaks"),
        "names what is missing: {}",
        age.dump()
    );
    let lbr = hwprof(&["memory", "--call-graph", "lbr", "--", "true"]);
    assert_eq!(lbr.code(), 2, "{}", lbr.dump());
    // Not root: one line that says so (not the perf_event_paranoid advice, which
    // does not apply to uprobes).
    if let Some(nobody) = common::Nobody::new("memory") {
        let run = nobody.run(None, &["memory", "-o", "out/m.svg", "--", "true"]);
        assert_eq!(run.code(), 1, "{}", run.dump());
        assert!(
            run.stderr.contains("needs root") && run.stderr.lines().count() == 1,
            "{}",
            run.dump()
        );
    }
}
