//! Hostile debug files through the binary of this build (issue 20, points 1 and 2): a
//! separate debug file whose compressed `.debug_info` claims a terabyte, a zlib bomb
//! (3 GiB of zeros in 3 MB) claimed honestly, and the same bomb claiming 4 MiB. Each
//! used to abort `hwprof report` (`memory allocation of 1099511627776 bytes failed`) or
//! take gigabytes; now each is skipped with one notice, under a 2 GiB address-space
//! limit (`prlimit --as`), and the other modules (libc) are still named:
//! - found through `--symfs` (report and flamegraph);
//! - served by a debuginfod-like server on 127.0.0.1 (`hwprof_testkit::http`): not kept
//!   in the cache; and a bad file already in the cache is removed, not used;
//! - a `hwprof report` killed in the middle of a download leaves only its temporary
//!   file, which the next run removes; never a partial `debuginfo`.
//!
//! The files are made here from a real debug file (`hwprof_testkit::elf`); nothing big
//! is committed. Every file is in the test's scratch directory.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use hwprof_testkit::elf::{with_compressed_section, zlib, zlib_bomb};
use hwprof_testkit::http::{Reply, Switched};

/// Static functions (only the debug file names them once the program is stripped),
/// and a loop in libc (`snprintf` of a double) so that another module has samples.
const PROG: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static volatile unsigned long sink;
static char buf[256];
static __attribute__((noipa)) void tick(void) { sink++; }
static __attribute__((noipa)) void spin_leaf(unsigned long n) {
    for (unsigned long i = 0; i < n; i++) { sink += i * 7; if ((i & 0xffff) == 0) tick(); }
}
static __attribute__((noipa)) void format_some(unsigned long n) {
    for (unsigned long i = 0; i < n; i++) snprintf(buf, sizeof buf, "%lu %f", i, (double)i / 3.0);
}
static __attribute__((noipa)) void spin_outer(unsigned long n) {
    spin_leaf(n); format_some(n / 20); sink ^= 1;
}
int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 0.5;
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    do { spin_outer(200000); clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b); }
    while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < secs);
    return 0;
}
"#;

/// The program's own functions, named only by its debug file.
const OWN: [&str; 2] = ["spin_leaf", "format_some"];

/// The address-space limit the binary runs under: a terabyte allocation, or gigabytes
/// of inflated zeros, end it (SIGABRT) instead of the machine's memory.
const AS_LIMIT: &str = "--as=2147483648";

struct Setup {
    dir: PathBuf,
    /// The stripped program, as recorded.
    data: PathBuf,
    /// Its debug file (sections compressed with zlib), good.
    debug: PathBuf,
    /// Its build id, hex.
    id: String,
}

/// The program built, split into a stripped program and a compressed debug file, and
/// recorded with `-g`; `None` after a SKIPPED line when a tool is missing.
fn setup(tag: &str) -> Option<Setup> {
    if !common::require_tools(&[
        ("objcopy", "--version"),
        ("strip", "--version"),
        ("prlimit", "--version"),
    ]) {
        return None;
    }
    let dir = common::scratch_path(&format!("hostile-{tag}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join("prog.c");
    std::fs::write(&c, PROG).unwrap();
    let prog = dir.join("prog");
    let flags = ["-g", "-O2", "-fno-omit-frame-pointer", "-fno-shrink-wrap"];
    assert!(
        hwprof_testkit::compile_c(&c, &prog, &flags),
        "no C compiler: install gcc (.ci/run does)"
    );
    let debug = dir.join("prog.debug");
    let ok = |c: &mut Command| assert!(c.status().is_ok_and(|s| s.success()), "{c:?}");
    ok(Command::new("objcopy")
        .args(["--only-keep-debug", "--compress-debug-sections=zlib"])
        .arg(&prog)
        .arg(&debug));
    ok(Command::new("strip").arg("-s").arg(&prog));
    let id = common::build_id_hex(&prog);
    let data = dir.join("perf.data");
    common::hwprof(&[
        "record",
        "-g",
        "-o",
        data.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
        "0.6",
    ])
    .assert_ok();
    Some(Setup {
        dir,
        data,
        debug,
        id,
    })
}

/// (what, the hostile debug file's bytes, what its notice says).
fn hostile(debug: &Path) -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let good = std::fs::read(debug).unwrap();
    let small = zlib(b"not DWARF at all");
    let bomb = zlib_bomb(3 << 30);
    vec![
        (
            "a terabyte claimed",
            with_compressed_section(&good, ".debug_info", 1 << 40, &small),
            "section .debug_info claims 1099511627776 bytes uncompressed, more than",
        ),
        (
            "a zlib bomb",
            with_compressed_section(&good, ".debug_info", 3 << 30, &bomb),
            "section .debug_info claims 3221225472 bytes uncompressed from",
        ),
        (
            "a zlib bomb claiming 4 MiB",
            with_compressed_section(&good, ".debug_info", 4 << 20, &bomb),
            "section .debug_info inflates to more than the 4194304 bytes it claims",
        ),
    ]
}

/// The most memory (resident) a run here may take: the normal report takes some
/// 30 MB; a bomb inflated takes gigabytes (or fails an allocation at the 2 GiB
/// address-space limit, after taking most of it).
const MAX_RSS_KB: u64 = 512 << 10;

/// `prlimit --as=2GiB hwprof ARGS` with HOME at `home` and `env` (no other debuginfod
/// settings), killed after 2 minutes; asserts its peak resident memory (`ru_maxrss` of
/// `wait4`: prlimit execs hwprof) stayed under [`MAX_RSS_KB`].
fn bounded(args: &[&str], home: &Path, env: &[(&str, &str)]) -> common::Run {
    use std::os::unix::process::ExitStatusExt;
    static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SEQ.fetch_add(1, Ordering::SeqCst);
    let out = home.join(format!("run{n}.out"));
    let err = home.join(format!("run{n}.err"));
    let mut cmd = Command::new("prlimit");
    cmd.arg(AS_LIMIT)
        .arg("--")
        .arg(common::hwprof_bin())
        .args(args)
        .env("HOME", home)
        .env_remove("DEBUGINFOD_URLS")
        .env_remove("DEBUGINFOD_CACHE_PATH")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("PERF_BUILDID_DIR")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    let cmdline = format!("prlimit {AS_LIMIT} -- hwprof {}", args.join(" "));
    let start = Instant::now();
    let child = cmd.spawn().expect("spawn prlimit");
    let pid = child.id() as i32;
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let done = done.clone();
        thread::spawn(move || {
            while start.elapsed() < Duration::from_secs(120) {
                if done.load(Ordering::SeqCst) {
                    return false;
                }
                thread::sleep(Duration::from_millis(50));
            }
            common::signal(pid, libc::SIGKILL)
        })
    };
    // wait4 with the child's rusage (std's wait does not give ru_maxrss).
    let info = hwprof_pmu::sys::wait(pid).expect("wait4");
    done.store(true, Ordering::SeqCst);
    let killed = watchdog.join().unwrap_or(false);
    drop(child);
    let raw = match info.signal {
        Some(sig) => sig,
        None => info.code << 8,
    };
    let run = common::Run {
        cmdline,
        status: std::process::ExitStatus::from_raw(raw),
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
        elapsed: start.elapsed(),
    };
    assert!(!killed, "did not end within 2 minutes: {}", run.dump());
    assert!(
        info.max_rss_kb < MAX_RSS_KB,
        "took {} MB of memory (at most {} MB): {}",
        info.max_rss_kb >> 10,
        MAX_RSS_KB >> 10,
        run.dump()
    );
    run
}

/// The names of a `--stdio` report's rows of module `module` (the column before `[.]`).
fn names_in(out: &str, module: &str) -> Vec<String> {
    out.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let at = words.iter().position(|w| *w == "[.]")?;
            (at > 0 && words[at - 1] == module).then(|| words[at + 1..].join(" "))
        })
        .collect()
}

/// Exit 0 (not a signal, not 1), the program's own functions unnamed, libc's named.
fn assert_survived(r: &common::Run, what: &str) {
    assert_eq!(r.code(), 0, "{what}: {}", r.dump());
    assert!(
        !r.stderr.contains("memory allocation"),
        "{what}: {}",
        r.stderr
    );
    let own = names_in(&r.stdout, "prog");
    assert!(
        !own.is_empty() && own.iter().all(|n| n.starts_with("0x")),
        "{what}: the program's frames are unnamed without its debug file: {own:?}\n{}",
        r.stdout
    );
    let libc = names_in(&r.stdout, "libc.so.6");
    assert!(
        libc.iter().any(|n| !n.starts_with("0x")),
        "{what}: libc is still named: {libc:?}\n{}",
        r.stdout
    );
}

#[test]
fn hostile_debug_files_under_symfs_are_skipped_with_a_notice() {
    let Some(s) = setup("symfs") else {
        return;
    };
    let home = s.dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let symfs = s.dir.join("symfs");
    let at = symfs
        .join("usr/lib/debug/.build-id")
        .join(&s.id[..2])
        .join(format!("{}.debug", &s.id[2..]));
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    let data = s.data.to_str().unwrap();
    let sym = symfs.to_str().unwrap();

    // The good debug file names the program's functions.
    std::fs::copy(&s.debug, &at).unwrap();
    let good = bounded(
        &["report", "-i", data, "--stdio", "--symfs", sym],
        &home,
        &[],
    );
    good.assert_ok();
    let own = names_in(&good.stdout, "prog");
    assert!(
        OWN.iter().all(|f| own.iter().any(|n| n == f)),
        "the good debug file names {OWN:?}: {own:?}\n{}",
        good.dump()
    );
    assert!(!good.stderr.contains("skipping"), "{}", good.stderr);

    for (what, bytes, why) in hostile(&s.debug) {
        std::fs::write(&at, &bytes).unwrap();
        let r = bounded(
            &["report", "-i", data, "--stdio", "--symfs", sym],
            &home,
            &[],
        );
        assert_survived(&r, what);
        let note = format!("hwprof: note: skipping {}: {why}", at.display());
        assert_eq!(
            r.stderr.matches(&note).count(),
            1,
            "{what}: one notice `{note}`:\n{}",
            r.stderr
        );
        let f = bounded(
            &[
                "flamegraph",
                "-i",
                data,
                "--folded",
                "--symfs",
                sym,
                "-o",
                "-",
            ],
            &home,
            &[],
        );
        assert_eq!(f.code(), 0, "{what}: {}", f.dump());
        assert!(f.stderr.contains(&note), "{what}: {}", f.stderr);
        assert!(
            !OWN.iter().any(|n| f.stdout.contains(n)) && f.stdout.contains("libc.so.6"),
            "{what}: {}",
            f.stdout
        );
        report!(
            "{what}: {} bytes, skipped: {}",
            bytes.len(),
            r.stderr
                .lines()
                .find(|l| l.contains("skipping"))
                .unwrap_or("")
        );
    }
}

/// What the test's debuginfod server does.
enum Serve {
    /// 200 with these bytes for the build id's debuginfo, 404 for anything else.
    File(String, Vec<u8>),
    /// 404 for everything.
    Nothing,
    /// 200 promising 10 MB for the build id's debuginfo, 64 KiB of it, then nothing
    /// until the client goes or the server stops.
    Stall(String),
}

/// A debuginfod-like server on 127.0.0.1 serving `what`, set anew by `set`; stopped on
/// drop.
fn debuginfod(what: Serve) -> Switched<Serve> {
    Switched::start(what, |what, path| {
        let wanted = |id: &str| path == format!("/buildid/{id}/debuginfo");
        match what {
            Serve::File(id, bytes) if wanted(id) => Reply::ok(bytes.clone()),
            Serve::Stall(id) if wanted(id) => Reply::ok(vec![0x7f; 64 << 10])
                .length(10 << 20)
                .hold(Duration::MAX),
            _ => Reply::not_found(),
        }
    })
}

/// Every file under `dir` (hidden ones too), relative, sorted, but elfutils' settings.
fn files_under(dir: &Path) -> Vec<String> {
    hwprof_testkit::files_under(dir, &hwprof_testkit::DEBUGINFOD_SETTINGS)
}

#[test]
fn hostile_debuginfod_files_are_neither_kept_nor_used() {
    let Some(s) = setup("debuginfod") else {
        return;
    };
    let home = s.dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let server = debuginfod(Serve::Nothing);
    let url = server.url();
    let data = s.data.to_str().unwrap();
    for (i, (what, bytes, why)) in hostile(&s.debug).into_iter().enumerate() {
        let cache = s.dir.join(format!("cache{i}"));
        let env = [
            ("DEBUGINFOD_URLS", url.as_str()),
            ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap()),
        ];
        // Served: rejected, not kept.
        server.set(Serve::File(s.id.clone(), bytes.clone()));
        let r = bounded(&["report", "-i", data, "--stdio"], &home, &env);
        assert_survived(&r, what);
        let note = format!(
            "hwprof: note: debuginfod server {url}: debug info for build id {} not used: {why}",
            s.id
        );
        assert_eq!(
            r.stderr.matches(&note).count(),
            1,
            "{what}: `{note}`:\n{}",
            r.stderr
        );
        // (Other modules' "not found" marks may be there: only this build id's.)
        let entry = cache.join(&s.id);
        assert!(
            files_under(&entry).is_empty(),
            "{what}: {:?}",
            files_under(&entry)
        );

        // Already in the cache (an older client kept it): removed, not used.
        let cached = cache.join(&s.id).join("debuginfo");
        std::fs::create_dir_all(cached.parent().unwrap()).unwrap();
        std::fs::write(&cached, &bytes).unwrap();
        server.set(Serve::Nothing);
        let r = bounded(&["report", "-i", data, "--stdio"], &home, &env);
        assert_survived(&r, what);
        let note = format!(
            "hwprof: note: debuginfod: removed {} from the cache: {why}",
            cached.display()
        );
        assert_eq!(
            r.stderr.matches(&note).count(),
            1,
            "{what}: `{note}`:\n{}",
            r.stderr
        );
        // The server then said it has none: elfutils' empty "not found" mark.
        assert_eq!(
            std::fs::metadata(&cached).map(|m| m.len()).ok(),
            Some(0),
            "{what}"
        );
        assert_eq!(files_under(&entry), ["debuginfo"]);
    }
    // The good file is fetched and kept.
    let cache = s.dir.join("cache-good");
    let env = [
        ("DEBUGINFOD_URLS", url.as_str()),
        ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap()),
    ];
    server.set(Serve::File(s.id.clone(), std::fs::read(&s.debug).unwrap()));
    let r = bounded(&["report", "-i", data, "--stdio"], &home, &env);
    r.assert_ok();
    let own = names_in(&r.stdout, "prog");
    assert!(
        OWN.iter().all(|f| own.iter().any(|n| n == f)),
        "{own:?}\n{}",
        r.dump()
    );
    assert_eq!(
        std::fs::read(cache.join(&s.id).join("debuginfo")).unwrap(),
        std::fs::read(&s.debug).unwrap()
    );
}

#[test]
fn a_killed_download_leaves_no_partial_file_and_is_swept() {
    let Some(s) = setup("killed") else {
        return;
    };
    let home = s.dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let server = debuginfod(Serve::Stall(s.id.clone()));
    let url = server.url();
    let cache = s.dir.join("cache");
    let entry = cache.join(&s.id);
    let mut cmd = Command::new(common::hwprof_bin());
    cmd.args(["report", "-i", s.data.to_str().unwrap(), "--stdio"])
        .env("HOME", &home)
        .env("DEBUGINFOD_URLS", &url)
        .env("DEBUGINFOD_CACHE_PATH", &cache)
        .env("DEBUGINFOD_TIMEOUT", "60");
    let mut bg = common::Background::spawn(&mut cmd);
    let temp = |prefix: &str| -> Vec<String> {
        std::fs::read_dir(&entry)
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|n| n.starts_with(prefix) && n.ends_with(".tmp"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mine = format!(".debuginfo.hwprof-{}-", bg.pid());
    let start = Instant::now();
    while temp(&mine).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(60) && bg.alive(),
            "no download started in {}",
            entry.display()
        );
        thread::sleep(Duration::from_millis(20));
    }
    // Killed mid-download: its temporary stays (nothing runs at SIGKILL), no debuginfo.
    let _ = bg.child.kill();
    let _ = bg.child.wait();
    let left = temp(&mine);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(!entry.join("debuginfo").exists());
    report!("killed mid-download, left {}", left[0]);

    // The next run (the server has nothing now) removes it.
    server.set(Serve::Nothing);
    let env = [
        ("DEBUGINFOD_URLS", url.as_str()),
        ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap()),
    ];
    let r = bounded(
        &["report", "-i", s.data.to_str().unwrap(), "--stdio"],
        &home,
        &env,
    );
    r.assert_ok();
    assert!(
        temp(".debuginfo.hwprof-").is_empty(),
        "{:?}",
        files_under(&entry)
    );
    assert_eq!(files_under(&entry), ["debuginfo"]);
    assert_eq!(std::fs::metadata(entry.join("debuginfo")).unwrap().len(), 0);
}
