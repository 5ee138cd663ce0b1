//! `hwprof_symbolize` on real recordings made here: a frame-pointer C program with a
//! known inlined helper (function names, caller chain to `main`, file:line, `inlined`
//! frames), and a syscall-heavy workload whose stacks carry kernel frames named from
//! kallsyms. Each is recorded with perf and with the hwprof binary of this build.
//!
//! These tests live in the root package (not in `symbolize/tests`) so that they run
//! `env!("CARGO_BIN_EXE_hwprof")`, the binary cargo built for this very test run, never
//! a stale or missing `target/*/hwprof`.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Why, require_perf, skip};
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_symbolize::{FrameKind, Options, Profile, ProfileBuilder, Symbolizer, kernel_matches};

const INLINED: &str = r#"
#include <stdio.h>
#include <stdlib.h>
static inline __attribute__((always_inline)) unsigned long mix(unsigned long x) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}
__attribute__((noinline)) unsigned long sink(unsigned long x) { __asm__ volatile("" : "+r"(x)); return x; }
__attribute__((noinline)) unsigned long hot(unsigned long n) {
    unsigned long x = n | 1;
    for (unsigned long i = 0; i < n; i++) {
        x = mix(x);
        if ((i & 0xffffff) == 0) x = sink(x);
    }
    return x;
}
__attribute__((noinline)) unsigned long middle(unsigned long n) { return hot(n) * 3 + 1; }
int main(int argc, char **argv) {
    unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 300000000UL;
    printf("%lu\n", middle(n));
    return 0;
}
"#;

/// Lines of `mix`'s body in INLINED (1-based, the string starts with a newline).
const MIX_LINES: std::ops::RangeInclusive<u32> = 5..=8;
/// `hot`'s lines.
const HOT_LINES: std::ops::RangeInclusive<u32> = 11..=17;

// `hot` calls `sink` so that it is no leaf and keeps its frame pointer (gcc omits it in
// leaves whatever -fno-omit-frame-pointer says), else the frame-pointer walk skips
// `middle`. `-fno-shrink-wrap` keeps the frame set up across the loop.

/// A fresh scratch directory for one test.
fn scratch(tag: &str) -> PathBuf {
    common::fresh_dir(&format!("symbolize-{tag}"))
}

/// Compiles `src` (C) into `dir/name` with `flags`; a compile error fails the test.
fn compile(dir: &Path, name: &str, src: &str, flags: &[&str]) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).expect("write C source");
    let out = dir.join(name);
    assert!(
        hwprof_testkit::compile_c(&c, &out, flags),
        "no C compiler: install gcc (.ci/run does)"
    );
    out
}

/// The recorders: the hwprof binary of this build, and perf (a SKIPPED line when it
/// is missing, a failure with `HWPROF_STRICT=1`).
fn recorders(what: &str) -> Vec<(&'static str, PathBuf)> {
    let mut v = vec![("hwprof", PathBuf::from(common::hwprof_bin()))];
    if require_perf(what) {
        v.push(("perf", PathBuf::from("perf")));
    }
    v
}

/// Records `cmd` into `out` with `tool` (`perf` or hwprof) and `record_args`. hwprof
/// must succeed; perf failing is a SKIPPED line (a failure with `HWPROF_STRICT=1`).
fn record(name: &str, tool: &Path, record_args: &[&str], out: &Path, cmd: &[&str]) -> bool {
    let mut c = Command::new(tool);
    c.arg("record")
        .args(record_args)
        .arg("-o")
        .arg(out)
        .arg("--")
        .args(cmd);
    let r = common::run_cmd(&mut c, common::TIMEOUT);
    let ok = r.status.success() && out.is_file();
    if !ok && name == "hwprof" {
        panic!("hwprof record failed\n{}", r.dump());
    }
    if !ok {
        skip(
            Why::Setup,
            format_args!("{name} record failed: {}", r.stderr.trim()),
        );
    }
    ok
}

fn build(path: &Path) -> (Profile, Symbolizer) {
    let pd = PerfData::open(path).unwrap();
    let sym = Symbolizer::new(true, kernel_matches(pd.features()));
    let b = ProfileBuilder::new(&pd, &Options::default())
        .symbolizer(sym)
        .build()
        .unwrap();
    (b.profile, b.symbolizer)
}

#[test]
fn frame_pointer_c_program_with_inlined_helper() {
    let dir = scratch("inlined");
    let flags = [
        "-O2",
        "-g",
        "-fno-omit-frame-pointer",
        "-fno-shrink-wrap",
        "-no-pie",
    ];
    let prog = compile(&dir, "inl", INLINED, &flags);
    for (name, tool) in recorders("symbolizing perf's recording of a C program") {
        let out = dir.join(format!("{name}.data"));
        let args = ["-e", "cpu-clock", "-F", "999", "-g"];
        if !record(
            name,
            &tool,
            &args,
            &out,
            &[prog.to_str().unwrap(), "200000000"],
        ) {
            continue;
        }
        let (p, sym) = build(&out);
        let total = p.samples.len();
        assert!(total >= 20, "{name}: only {total} samples");
        let mut good = 0;
        for s in &p.samples {
            let fr: Vec<_> = s.stack.iter().map(|&f| p.frame(f)).collect();
            let names: Vec<&str> = fr.iter().map(|f| f.name()).collect();
            // Leaf-first: [mix (inlined)], hot, middle, main, ...
            let Some(h) = names.iter().position(|&n| n == "hot") else {
                continue;
            };
            if names.get(h + 1..h + 3) != Some(&["middle", "main"][..]) {
                continue;
            }
            if h == 1 {
                let mix = fr[0];
                assert_eq!(mix.name(), "mix", "{name}: {names:?}");
                assert!(mix.inlined && !fr[1].inlined, "{name}: {mix:?}");
                assert!(
                    mix.file.as_deref().is_some_and(|f| f.ends_with("inl.c")),
                    "{name}: {mix:?}"
                );
                assert!(
                    MIX_LINES.contains(&mix.line.unwrap_or(0)),
                    "{name}: {mix:?}"
                );
            }
            let leaf = fr[h];
            assert!(leaf.file.as_deref().is_some_and(|f| f.ends_with("inl.c")));
            assert!(
                HOT_LINES.contains(&leaf.line.unwrap_or(0)),
                "{name}: {leaf:?}"
            );
            assert_eq!(leaf.kind, FrameKind::User);
            assert_eq!(leaf.module_name(), "inl");
            good += 1;
        }
        let with_mix = p
            .samples
            .iter()
            .filter(|s| {
                s.stack
                    .first()
                    .is_some_and(|&f| p.frame(f).inlined && p.frame(f).name() == "mix")
            })
            .count();
        report!(
            "{name}: {good}/{total} samples in hot<-middle<-main, {with_mix} with inlined mix at the leaf; {} frames, {} lookups",
            p.frames.len(),
            sym.lookups()
        );
        assert!(good * 100 >= total * 80, "{name}: {good}/{total}");
        assert!(with_mix * 100 >= total * 50, "{name}: {with_mix}/{total}");
        // Without inline expansion, no inlined frames at all, hot is the leaf.
        let pd = PerfData::open(&out).unwrap();
        let flat = Profile::build(
            &pd,
            &Options {
                inline: false,
                ..Options::default()
            },
        )
        .unwrap();
        assert!(flat.frames.iter().all(|f| !f.inlined));
        let hot_leaf = flat
            .samples
            .iter()
            .filter(|s| {
                s.stack
                    .first()
                    .is_some_and(|&f| flat.frame(f).name() == "hot")
            })
            .count();
        assert!(hot_leaf * 100 >= total * 80, "{name}: {hot_leaf}/{total}");
        // The number of lookups is the number of distinct locations: a second pass over
        // the same symbolizer resolves nothing anew.
        let opts = Options::default();
        let build_with = |sym| {
            let b = ProfileBuilder::new(&pd, &opts)
                .symbolizer(sym)
                .build()
                .unwrap();
            (b.profile, b.symbolizer)
        };
        let again = build_with(sym);
        assert_eq!(again.0, p);
        let n = again.1.lookups();
        let (_, s2) = build_with(again.1);
        assert_eq!(s2.lookups(), n, "cached: no new lookups");
    }
}

const SYSCALLS: &str = r#"
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
static char buf[1 << 16];
__attribute__((noinline)) long reader(int fd) {
    long total = 0;
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    do {
        for (int i = 0; i < 1000; i++) total += read(fd, buf, sizeof buf);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 400000000L);
    return total;
}
int main(void) {
    int fd = open("/dev/zero", O_RDONLY);
    return reader(fd) > 0 ? 0 : 1;
}
"#;

#[test]
fn kernel_frames_from_kallsyms() {
    if !std::fs::read_to_string("/proc/kallsyms").is_ok_and(|k| {
        k.lines()
            .next()
            .is_some_and(|l| !l.starts_with("0000000000000000"))
    }) {
        skip(
            Why::KernelSetting,
            "/proc/kallsyms addresses are hidden (kptr_restrict)",
        );
        return;
    }
    let dir = scratch("kernel");
    let prog = compile(
        &dir,
        "sys",
        SYSCALLS,
        &["-O1", "-g", "-fno-omit-frame-pointer", "-no-pie"],
    );
    for (name, tool) in recorders("kernel frames of perf's recording") {
        let out = dir.join(format!("{name}.data"));
        let args = ["-e", "cpu-clock", "-F", "999", "-g"];
        if !record(name, &tool, &args, &out, &[prog.to_str().unwrap()]) {
            continue;
        }
        let pd = PerfData::open(&out).unwrap();
        if !kernel_matches(pd.features()) {
            // hwprof writes this machine's build id and osrelease: not matching is a bug.
            assert_ne!(
                name, "hwprof",
                "hwprof's file does not identify this kernel"
            );
            skip(
                Why::KernelSetting,
                format_args!(
                    "{name}'s file does not identify this kernel (no build id / osrelease)"
                ),
            );
            continue;
        }
        let (p, _) = build(&out);
        let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
        let mut with_kernel = 0;
        let mut reader_below = 0;
        for s in &p.samples {
            let fr: Vec<_> = s.stack.iter().map(|&f| p.frame(f)).collect();
            let Some(first_user) = fr.iter().position(|f| f.kind != FrameKind::Kernel) else {
                continue;
            };
            if first_user == 0 {
                continue;
            }
            with_kernel += 1;
            for f in &fr[..first_user] {
                let n = f.name();
                assert_ne!(n, "[unknown]", "{name}: kernel frame unnamed: {f:?}");
                assert_eq!(f.module_name(), "[kernel.kallsyms]");
                assert!(
                    kallsyms.contains(&format!(" {n}\n")),
                    "{name}: {n} not in kallsyms"
                );
            }
            assert!(fr[first_user..].iter().all(|f| f.kind != FrameKind::Kernel));
            // libc's read() has no frame pointer, so the walk skips reader(): main is
            // the first frame of the program itself.
            if fr.iter().any(|f| f.name() == "main") {
                reader_below += 1;
            }
        }
        let total = p.samples.len();
        let read_named = p
            .frames
            .iter()
            .any(|f| f.kind == FrameKind::Kernel && f.name().contains("read"));
        report!(
            "{name}: {with_kernel}/{total} samples with kernel frames, {reader_below} of them under main(), a *read* kernel function: {read_named}"
        );
        assert!(with_kernel * 2 >= total, "{name}: {with_kernel}/{total}");
        assert!(reader_below * 10 >= with_kernel * 8);
        assert!(read_named);
    }
}
