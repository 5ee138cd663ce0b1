//! DWARF unwinding (issue 14): whole stacks through code built without frame pointers,
//! on hwprof's recordings and on perf's, compared with perf's own DWARF unwinding of
//! the same file (`perf script`, libdw).
//!
//! Workloads are built here: C at -O2 without frame pointers (a call chain, the same
//! chain in a shared library, a signal handler, a sleeper), and a Rust release build
//! without frame pointers.

#[macro_use]
mod common;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{Why, hwprof, perf, require_perf, scratch_path, skip};

/// Where this test binary builds its workloads.
fn build_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = scratch_path("dwarf-build");
        fs::create_dir_all(&d).expect("create build dir");
        d
    })
}

fn src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/workloads")
        .join(name)
}

const NO_FP: [&str; 4] = ["-O2", "-g", "-fomit-frame-pointer", "-pthread"];

/// `tests/workloads/NAME.c` built with -O2 and no frame pointers (plus `extra`).
fn c_workload(name: &str, out: &str, extra: &[&str]) -> Option<PathBuf> {
    let exe = build_dir().join(out);
    if !exe.exists() {
        let flags: Vec<&str> = NO_FP.iter().chain(extra).copied().collect();
        if !hwprof_testkit::compile_c(&src(&format!("{name}.c")), &exe, &flags) {
            return None;
        }
    }
    Some(exe)
}

/// The chain with outer/middle/leaf in `libdwarf_lib.so` next to it.
fn shared_workload() -> Option<PathBuf> {
    let lib = build_dir().join("libdwarf_lib.so");
    if !lib.exists()
        && !hwprof_testkit::compile_c(
            &src("dwarf_lib.c"),
            &lib,
            &[&NO_FP[..], &["-shared", "-fPIC"]].concat(),
        )
    {
        return None;
    }
    let exe = build_dir().join("dwarf_chain_shared");
    if !exe.exists() {
        // The library must follow the source on the command line.
        let out = Command::new("cc")
            .args(NO_FP)
            .args(["-DSHARED", "-o"])
            .arg(&exe)
            .arg(src("dwarf_chain.c"))
            .arg(&lib)
            .arg(format!("-Wl,-rpath,{}", build_dir().display()))
            .output()
            .expect("run cc");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Some(exe)
}

/// The Rust chain, `rustc -O -C force-frame-pointers=no`.
fn rust_workload() -> Option<PathBuf> {
    let exe = build_dir().join("dwarf_chain_rs");
    if exe.exists() {
        return Some(exe);
    }
    let out = Command::new("rustc")
        .args([
            "-O",
            "-C",
            "force-frame-pointers=no",
            "-C",
            "debuginfo=1",
            "-o",
        ])
        .arg(&exe)
        .arg(src("dwarf_chain.rs"))
        .output();
    match out {
        Ok(o) => {
            assert!(
                o.status.success(),
                "rustc failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            Some(exe)
        }
        Err(e) => {
            skip(Why::Setup, format_args!("cannot run rustc ({e})"));
            None
        }
    }
}

/// Folded stacks (root first, `;`-joined, inlined frames as perf names them with no
/// suffix) with their sample counts, from `hwprof flamegraph --folded` weighted by
/// samples.
fn hwprof_folded(data: &Path) -> (HashMap<String, u64>, String) {
    let r = hwprof(&[
        "flamegraph",
        "-i",
        data.to_str().unwrap(),
        "--folded",
        "--weight",
        "samples",
        "--no-inline",
        "-o",
        "-",
    ]);
    r.assert_ok();
    let mut out = HashMap::new();
    for line in r.stdout.lines() {
        let Some((stack, n)) = line.rsplit_once(' ') else {
            continue;
        };
        *out.entry(stack.to_string()).or_default() += n.parse::<u64>().unwrap_or(0);
    }
    (out, r.stderr.clone())
}

/// The same from `perf script` (perf's own DWARF unwinding, libdw), folded here.
fn perf_folded(data: &Path) -> HashMap<String, u64> {
    let r = perf(&[
        "script",
        "-i",
        data.to_str().unwrap(),
        "-F",
        "comm,ip,sym",
        "--no-inline",
    ]);
    r.assert_ok();
    let mut out: HashMap<String, u64> = HashMap::new();
    let mut frames: Vec<String> = Vec::new();
    let mut comm = String::new();
    let mut flush = |comm: &str, frames: &mut Vec<String>| {
        if !comm.is_empty() {
            frames.push(comm.to_string());
            frames.reverse();
            *out.entry(frames.join(";")).or_default() += 1;
        }
        frames.clear();
    };
    for line in r.stdout.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            let mut parts = line.split_whitespace();
            let _addr = parts.next();
            let sym = parts.collect::<Vec<_>>().join(" ");
            frames.push(sym.trim_end_matches(" (inlined)").to_string());
        } else {
            flush(&comm, &mut frames);
            comm = line.trim().to_string();
        }
    }
    flush(&comm, &mut frames);
    out
}

/// The share of samples whose stack holds `chain` (root to leaf, `;`-joined) reached
/// from the root (`_start` or a thread start) within the stack.
fn share(folded: &HashMap<String, u64>, chain: &str) -> f64 {
    let total: u64 = folded.values().sum();
    let hit: u64 = folded
        .iter()
        .filter(|(s, _)| s.contains(chain) && (s.contains("_start;") || s.contains("clone3;")))
        .map(|(_, n)| n)
        .sum();
    if total == 0 {
        0.0
    } else {
        hit as f64 / total as f64
    }
}

fn record_perf(exe: &Path, args: &[&str], tag: &str) -> Option<PathBuf> {
    if !require_perf("perf record --call-graph dwarf") {
        return None;
    }
    let data = scratch_path(&format!("{tag}.perf.data"));
    let mut cmd = vec![
        "record",
        "-q",
        "-N",
        "--call-graph",
        "dwarf",
        "-F",
        "1000",
        "-o",
    ];
    let d = data.to_str().unwrap().to_string();
    cmd.push(&d);
    let e = exe.to_str().unwrap().to_string();
    cmd.push(&e);
    cmd.extend_from_slice(args);
    perf(&cmd).assert_ok();
    Some(data)
}

/// `hwprof record --call-graph MODE -F 1000 EXTRA -- EXE ARGS`.
fn record_hwprof(exe: &Path, args: &[&str], tag: &str, mode: &str, extra: &[&str]) -> PathBuf {
    let data = scratch_path(&format!("{tag}.hw.data"));
    let d = data.to_str().unwrap().to_string();
    let e = exe.to_str().unwrap().to_string();
    let mut cmd = vec!["record", "--call-graph", mode, "-F", "1000", "-o", &d];
    cmd.extend_from_slice(extra);
    cmd.push("--");
    cmd.push(&e);
    cmd.extend_from_slice(args);
    hwprof(&cmd).assert_ok();
    data
}

/// hwprof's stacks of `data` hold `chain` in at least 95% of samples, and within 3
/// points of perf's unwinding of the same file.
fn check_against_perf(data: &Path, chain: &str, what: &str) {
    let (ours, _) = hwprof_folded(data);
    let theirs = perf_folded(data);
    let (a, b) = (share(&ours, chain), share(&theirs, chain));
    report!(
        "{what}: whole chain {chain} in {:.1}% of hwprof's stacks, {:.1}% of perf's",
        a * 100.0,
        b * 100.0
    );
    assert!(
        a >= 0.95,
        "{what}: hwprof unwound {chain} in only {:.1}%: {ours:?}",
        a * 100.0
    );
    assert!(
        a + 0.03 >= b,
        "{what}: hwprof {:.1}% vs perf {:.1}%",
        a * 100.0,
        b * 100.0
    );
}

/// `Children` percentages by symbol of `report --stdio --sort sym` (hwprof's and
/// perf's print the same first two columns).
fn children(out: &str) -> HashMap<String, f64> {
    out.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let pct: f64 = l
                .split_whitespace()
                .next()?
                .strip_suffix('%')?
                .parse()
                .ok()?;
            let sym = l.split_once("] ")?.1.trim().to_string();
            Some((sym, pct))
        })
        .collect()
}

/// `hwprof report` and `perf report --call-graph dwarf` (perf unwinding the file
/// itself: `--children`) give each of `syms` the same inclusive share, to 0.5 points.
fn children_like_perf_report(data: &Path, syms: &[&str], what: &str) {
    let d = data.to_str().unwrap();
    let ours = hwprof(&["report", "-i", d, "--stdio", "--sort", "sym"]);
    ours.assert_ok();
    let theirs = perf(&[
        "report",
        "-i",
        d,
        "--stdio",
        "--children",
        "--sort",
        "sym",
        "-g",
        "none",
    ]);
    theirs.assert_ok();
    let (a, b) = (children(&ours.stdout), children(&theirs.stdout));
    for s in syms {
        let (x, y) = (
            a.get(*s).copied().unwrap_or(0.0),
            b.get(*s).copied().unwrap_or(0.0),
        );
        report!("{what}: {s} children hwprof {x:.2}%, perf report {y:.2}%");
        assert!(
            (x - y).abs() <= 0.5,
            "{what}: {s}: hwprof {x}% vs perf {y}%\n{}\n{}",
            ours.stdout,
            theirs.stdout
        );
    }
}

#[test]
fn c_without_frame_pointers_unwinds_to_main_like_perf() {
    let Some(exe) = c_workload("dwarf_chain", "dwarf_chain", &[]) else {
        return;
    };
    let chain = "main;outer;middle;leaf";
    if let Some(p) = record_perf(&exe, &["5"], "c-chain") {
        check_against_perf(&p, chain, "C -O2 without frame pointers, perf's recording");
        children_like_perf_report(&p, &["main", "outer", "middle", "leaf"], "perf's recording");
    }
    let h = record_hwprof(&exe, &["5"], "c-chain", "dwarf", &["--keep-raw-stacks"]);
    check_against_perf(
        &h,
        chain,
        "C -O2 without frame pointers, hwprof's raw stacks",
    );
    children_like_perf_report(
        &h,
        &["main", "outer", "middle", "leaf"],
        "hwprof's raw stacks",
    );
    // Frame pointers alone cannot: this is what the issue is about.
    let fp = record_hwprof(&exe, &["5"], "c-chain-fp", "fp", &[]);
    let (f, _) = hwprof_folded(&fp);
    assert!(
        share(&f, chain) < 0.5,
        "frame pointers found the chain without them? {f:?}"
    );
}

#[test]
fn rust_release_without_frame_pointers_unwinds_like_perf() {
    let Some(exe) = rust_workload() else {
        return;
    };
    let chain = "dwarf_chain::main;dwarf_chain::outer;dwarf_chain::middle;dwarf_chain::leaf";
    if let Some(p) = record_perf(&exe, &["5"], "rs-chain") {
        check_against_perf(
            &p,
            chain,
            "Rust release without frame pointers, perf's recording",
        );
    }
    let h = record_hwprof(&exe, &["5"], "rs-chain", "dwarf", &["--keep-raw-stacks"]);
    check_against_perf(
        &h,
        chain,
        "Rust release without frame pointers, hwprof's raw stacks",
    );
    let o = record_hwprof(&exe, &["5"], "rs-chain-online", "dwarf", &[]);
    check_against_perf(&o, chain, "Rust release, unwound while recording");
}

#[test]
fn frames_in_a_shared_library_unwind_like_perf() {
    let Some(exe) = shared_workload() else {
        return;
    };
    let chain = "main;outer;lib_middle;lib_leaf";
    if let Some(p) = record_perf(&exe, &["5"], "so-chain") {
        check_against_perf(&p, chain, "shared library, perf's recording");
    }
    let h = record_hwprof(&exe, &["5"], "so-chain", "dwarf", &["--keep-raw-stacks"]);
    check_against_perf(&h, chain, "shared library, hwprof's raw stacks");
    let o = record_hwprof(&exe, &["5"], "so-chain-online", "dwarf", &[]);
    check_against_perf(&o, chain, "shared library, unwound while recording");
    let (f, _) = hwprof_folded(&h);
    assert!(
        f.keys().any(|s| s.contains("lib_leaf")),
        "no frames of libdwarf_lib.so: {f:?}"
    );
}

#[test]
fn a_signal_handler_unwinds_through_the_signal_frame() {
    let Some(exe) = c_workload("dwarf_signal", "dwarf_signal", &[]) else {
        return;
    };
    // Unwound when the file is read, and while recording: the same stacks.
    for (tag, extra) in [
        ("signal", &["--keep-raw-stacks"][..]),
        ("signal-online", &[]),
    ] {
        let h = record_hwprof(&exe, &[], tag, "dwarf", extra);
        handler_stacks_reach_main(&h);
    }
    // perf unwinds through it too (it names the trampoline's return address only as an
    // address): the handler's stacks reach main.
    if let Some(p) = record_perf(&exe, &[], "signal") {
        let theirs = perf_folded(&p);
        let t = share(&theirs, "main;interrupted");
        let o = share(&hwprof_folded(&p).0, "main;interrupted");
        report!(
            "signal handler, perf's recording: stacks reaching main;interrupted: hwprof {:.1}%, perf {:.1}%",
            o * 100.0,
            t * 100.0
        );
        assert!(o + 0.03 >= t, "hwprof {o} vs perf {t}");
    }
}

/// Samples in the handler reach main through the signal frame.
fn handler_stacks_reach_main(h: &Path) {
    let (f, _) = hwprof_folded(h);
    let in_handler: u64 = f
        .iter()
        .filter(|(s, _)| s.ends_with(";in_handler"))
        .map(|(_, n)| n)
        .sum();
    let through: u64 = f
        .iter()
        .filter(|(s, _)| s.ends_with("main;interrupted;__restore_rt;handler;in_handler"))
        .map(|(_, n)| n)
        .sum();
    report!(
        "signal handler: {through} of {in_handler} handler samples reach main through __restore_rt"
    );
    assert!(in_handler >= 10, "too few handler samples: {f:?}");
    assert!(
        through as f64 >= 0.95 * in_handler as f64,
        "handler stacks stop at the signal frame: {f:?}"
    );
}

#[test]
fn offcpu_with_dwarf_names_the_blocked_functions() {
    if !common::require_tracefs("offcpu --call-graph dwarf") {
        return;
    }
    let Some(exe) = c_workload("dwarf_sleeper", "dwarf_sleeper", &[]) else {
        return;
    };
    let out = scratch_path("sleeper.folded");
    let r = hwprof(&[
        "offcpu",
        "--call-graph",
        "dwarf",
        "--folded",
        "-o",
        out.to_str().unwrap(),
        "--",
        exe.to_str().unwrap(),
    ]);
    r.assert_ok();
    let text = fs::read_to_string(&out).unwrap();
    let us = |f: &str| -> u64 {
        text.lines()
            .filter(|l| l.contains(&format!(";{f};")))
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
            .sum()
    };
    let (a, b) = (us("a_sleeps"), us("b_waits"));
    report!(
        "offcpu --call-graph dwarf: a_sleeps {} ms, b_waits {} ms off CPU",
        a / 1000,
        b / 1000
    );
    // Kernel and user together: the kernel's part (from its callchain) under the user
    // part (unwound), in one stack.
    assert!(
        text.lines().any(|l| l
            .split_once(";b_waits;")
            .is_some_and(|(_, below)| below.contains("_[k]"))),
        "no kernel frames under b_waits:\n{text}"
    );
    for (name, v) in [("a_sleeps", a), ("b_waits", b)] {
        assert!(
            (450_000..=900_000).contains(&v),
            "{name}: {v} µs off CPU, expected about 500 ms:\n{text}"
        );
    }
}

#[test]
fn a_stack_copy_too_small_ends_in_truncated_and_is_counted() {
    let Some(exe) = c_workload("dwarf_chain", "dwarf_chain", &[]) else {
        return;
    };
    let h = record_hwprof(
        &exe,
        &["3"],
        "small-stack",
        "dwarf,16",
        &["--keep-raw-stacks"],
    );
    let (f, stderr) = hwprof_folded(&h);
    let total: u64 = f.values().sum();
    let cut: u64 = f
        .iter()
        .filter(|(s, _)| s.contains(";[truncated];"))
        .map(|(_, n)| n)
        .sum();
    // A sample in `_start` (a page fault as the program starts) is whole in 16 bytes:
    // the outermost frame, nothing above it to cut. Every other stack is longer.
    let outermost: u64 = f
        .iter()
        .filter(|(s, _)| s.starts_with("dwarf_chain;_start;") || s.as_str() == "dwarf_chain;_start")
        .map(|(_, n)| n)
        .sum();
    assert!(
        cut > 0 && cut + outermost == total,
        "16 bytes cannot hold the stack: {f:?}"
    );
    assert!(
        stderr.contains(&format!(
            "{cut} of {total} samples have truncated user stacks"
        )),
        "{stderr}"
    );
}

#[test]
fn script_prints_the_unwound_user_callchain() {
    let Some(exe) = c_workload("dwarf_chain", "dwarf_chain", &[]) else {
        return;
    };
    let h = record_hwprof(&exe, &["2"], "script", "dwarf", &["--keep-raw-stacks"]);
    let r = hwprof(&["script", "-D", "-i", h.to_str().unwrap()]);
    r.assert_ok();
    // Each sample: PERF_CONTEXT_USER, then the pc and at least main's and _start's
    // return addresses.
    let samples = r.stdout.matches("cpu-clock:").count();
    let user = r.stdout.matches("\tfffffffffffffe00\n").count();
    assert!(
        samples > 0 && user == samples,
        "{samples} samples, {user} user chains"
    );
    let deep = r
        .stdout
        .split("cpu-clock:")
        .skip(1)
        .filter(|s| {
            s.lines()
                .skip(2)
                .take_while(|l| l.starts_with('\t'))
                .count()
                >= 6
        })
        .count();
    assert!(
        deep as f64 >= 0.95 * samples as f64,
        "{deep} of {samples} deep"
    );
}

/// Samples and data bytes of a recording, from `hwprof report --json`... simpler: from
/// `perf script` lines and the file size less the header's.
fn samples_of(data: &Path) -> u64 {
    let r = hwprof(&["script", "-i", data.to_str().unwrap()]);
    r.assert_ok();
    r.stdout.matches(" cpu-clock:").count() as u64
}

#[test]
fn unwinding_while_recording_writes_small_files_that_perf_reads_whole() {
    let Some(exe) = c_workload("dwarf_chain", "dwarf_chain", &[]) else {
        return;
    };
    let chain = "main;outer;middle;leaf";
    let ours = record_hwprof(&exe, &["5"], "online", "dwarf", &[]);
    // The file describes callchains, not registers and stacks.
    if require_perf("perf evlist") {
        let ev = perf(&["evlist", "-v", "-i", ours.to_str().unwrap()]);
        ev.assert_ok();
        assert!(
            ev.stdout.contains("CALLCHAIN") && !ev.stdout.contains("REGS_USER"),
            "{}",
            ev.stdout
        );
    }
    check_against_perf(
        &ours,
        chain,
        "C -O2 without frame pointers, unwound while recording",
    );
    children_like_perf_report(
        &ours,
        &["main", "outer", "middle", "leaf"],
        "unwound while recording",
    );
    let Some(theirs) = record_perf(&exe, &["5"], "online") else {
        return;
    };
    let per_sample = |p: &Path| fs::metadata(p).unwrap().len() as f64 / samples_of(p).max(1) as f64;
    let (a, b) = (per_sample(&ours), per_sample(&theirs));
    report!(
        "--call-graph dwarf bytes per sample: hwprof {a:.0}, perf {b:.0} ({:.3}x)",
        a / b
    );
    assert!(a <= 0.2 * b, "hwprof {a:.0} B/sample vs perf {b:.0}");
}

#[test]
fn a_module_without_unwind_tables_falls_back_to_frame_pointers() {
    // Built with frame pointers, then its unwind tables removed: its frames can only
    // come from the frame pointers (libc's still come from libc's tables).
    let Some(exe) = c_workload(
        "dwarf_chain",
        "dwarf_chain_fp_only",
        &[
            "-fno-omit-frame-pointer",
            "-fno-asynchronous-unwind-tables",
            "-fno-unwind-tables",
        ],
    ) else {
        return;
    };
    let stripped = build_dir().join("dwarf_chain_no_tables");
    if !stripped.exists() {
        let out = Command::new("objcopy")
            .args([
                "--remove-section=.eh_frame",
                "--remove-section=.eh_frame_hdr",
                "--remove-section=.debug_frame",
            ])
            .arg(&exe)
            .arg(&stripped)
            .output();
        match out {
            Ok(o) => assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr)),
            Err(e) => {
                skip(Why::Setup, format_args!("cannot run objcopy ({e})"));
                return;
            }
        }
    }
    let sections = Command::new("readelf")
        .arg("-SW")
        .arg(&stripped)
        .output()
        .unwrap();
    let sections = String::from_utf8_lossy(&sections.stdout);
    assert!(!sections.contains(".eh_frame"), "{sections}");
    let h = record_hwprof(&stripped, &["3"], "no-tables", "dwarf", &[]);
    let (f, _) = hwprof_folded(&h);
    // gcc keeps no frame in `leaf` (it calls nothing), so from there the frame pointer
    // leads to outer: middle is skipped, as with -g (the kernel's frame-pointer walk).
    let s = share(&f, "main;outer;leaf");
    let fp = record_hwprof(&stripped, &["3"], "no-tables-fp", "fp", &[]);
    let g = share(&hwprof_folded(&fp).0, "main;outer;leaf");
    report!(
        "no unwind tables: main;outer;leaf in {:.1}% of DWARF stacks (frame pointers), {:.1}% with -g",
        s * 100.0,
        g * 100.0
    );
    assert!(s >= 0.95 && s + 0.03 >= g, "{f:?}");
}

#[test]
fn probe_stacks_with_dwarf_name_the_callers() {
    if !common::require_pmu("uprobe", "probe --stacks --call-graph dwarf")
        || !common::require_tracefs("probe --stacks --call-graph dwarf")
    {
        return;
    }
    // Its own name: uprobe events are named after the binary.
    let Some(exe) = c_workload("dwarf_chain", "dwarf_chain_probe", &[]) else {
        return;
    };
    let target = format!("uprobe:{}:leaf", exe.display());
    let e = exe.to_str().unwrap();
    let r = hwprof(&[
        "probe",
        &target,
        "--threshold",
        "1us",
        "--stacks",
        "--call-graph",
        "dwarf",
        "--",
        e,
        "1",
    ]);
    r.assert_ok();
    // The result goes to stderr (stdout is the command's).
    let stacks = r.stderr.matches("tid ").count();
    let whole = r
        .stderr
        .split("tid ")
        .skip(1)
        .filter(|s| {
            let frames: Vec<&str> = s.lines().skip(1).map(str::trim).collect();
            ["leaf (", "middle (", "outer (", "main ("]
                .iter()
                .all(|f| frames.iter().any(|l| l.starts_with(f)))
        })
        .count();
    report!("probe --stacks --call-graph dwarf: {whole} of {stacks} slow calls' stacks reach main");
    assert!(stacks > 0 && whole == stacks, "{}", r.stderr);
}

#[test]
fn stack_flags_that_do_not_fit_are_one_line_usage_errors() {
    let out = scratch_path("flags.data");
    let o = out.to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["record", "--keep-raw-stacks", "-o", o, "--", "true"],
            "--keep-raw-stacks",
        ),
        (
            &[
                "record",
                "--call-graph",
                "dwarf,70000",
                "-o",
                o,
                "--",
                "true",
            ],
            "70000",
        ),
        (
            &["offcpu", "--call-graph", "lbr", "-o", o, "--", "true"],
            "lbr",
        ),
        (
            &["offcpu", "--call-graph", "dwarf,x", "-o", o, "--", "true"],
            "dwarf",
        ),
        (
            &[
                "probe",
                "uprobe:/bin/true:main",
                "--call-graph",
                "dwarf",
                "--",
                "true",
            ],
            "--stacks",
        ),
    ];
    for (args, says) in cases {
        let r = hwprof(args);
        assert_eq!(r.code(), 2, "{args:?}: {}", r.stderr);
        let lines: Vec<&str> = r.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {}", r.stderr);
        assert!(
            lines[0].starts_with("hwprof: ") && lines[0].contains(says),
            "{args:?}: {}",
            r.stderr
        );
        assert!(!out.exists(), "{args:?} left {}", out.display());
    }
}
