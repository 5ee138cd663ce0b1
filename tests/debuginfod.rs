//! Symbols for recordings from elsewhere (issue 14, point 5), with the hwprof binary of
//! this build:
//! - the real `debuginfod` server (elfutils, Debian package `debuginfod`) serving the
//!   debug file of a stripped program, in a private network namespace (where it listens
//!   on its own loopback only), and `hwprof report` asking it through
//!   `DEBUGINFOD_URLS` from inside that namespace;
//! - `--symfs DIR` for a binary that moved, compared with `perf report --symfs`;
//! - perf's build-id cache `~/.debug/.build-id/xx/rest/elf`, compared with perf.
//!
//! Every file the tests and the server write is in the test's scratch directory.

#[macro_use]
mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Why, build_id_hex, require_perf, skip};

/// Static functions (only a symbol table names them: a stripped binary has none), kept
/// as they are by `noipa` (no clones such as `spin_leaf.constprop.0`), the frame
/// pointer kept, so that `record -g` sees the whole chain: `spin_leaf` calls `tick` so
/// that it is no leaf (gcc sets up no frame in leaves), and `-fno-shrink-wrap` keeps
/// its frame set up across the loop.
const PROG: &str = r#"
#include <stdlib.h>
#include <time.h>
static volatile unsigned long sink;
static __attribute__((noipa)) void tick(void) { sink++; }
static __attribute__((noipa)) void spin_leaf(unsigned long n) {
    for (unsigned long i = 0; i < n; i++) {
        sink += i * 7;
        if ((i & 0xffff) == 0) tick();
    }
}
static __attribute__((noipa)) void spin_outer(unsigned long n) { spin_leaf(n); sink ^= 1; }
int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 0.5;
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    do {
        spin_outer(200000);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < secs);
    return 0;
}
"#;

const NAMES: [&str; 2] = ["spin_leaf", "spin_outer"];

/// A fresh scratch directory for one test.
fn scratch(tag: &str) -> PathBuf {
    common::fresh_dir(&format!("locate-{tag}"))
}

/// `PROG` built with `-g -O2` (frame pointers kept) into `dir/name`.
fn program(dir: &Path, name: &str) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, PROG).expect("write C source");
    let out = dir.join(name);
    assert!(
        hwprof_testkit::compile_c(
            &c,
            &out,
            &["-g", "-O2", "-fno-omit-frame-pointer", "-fno-shrink-wrap"]
        ),
        "no C compiler: install gcc (.ci/run does)"
    );
    out
}

fn run_ok(cmd: &mut Command) {
    let r = common::run_cmd(cmd, common::TIMEOUT);
    r.assert_ok();
}

/// `hwprof record -g -o OUT -- PROG 0.5`.
fn record(prog: &Path, out: &Path) {
    let r = common::hwprof(&[
        "record",
        "-g",
        "-o",
        out.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
        "0.5",
    ]);
    r.assert_ok();
}

/// `hwprof report -i DATA --stdio EXTRA...` with `env` (HOME set to `home` so that the
/// user's own `~/.debug` plays no part), run in the network namespace of process
/// `netns` when given.
fn report(
    data: &Path,
    extra: &[&str],
    home: &Path,
    env: &[(&str, &str)],
    netns: Option<u32>,
) -> common::Run {
    let mut args = vec!["report", "-i", data.to_str().unwrap(), "--stdio"];
    args.extend_from_slice(extra);
    hwprof_in(netns, &args, home, env)
}

/// The static function names a report shows.
fn named(out: &str) -> Vec<&'static str> {
    NAMES
        .iter()
        .copied()
        .filter(|n| out.lines().any(|l| l.ends_with(&format!("[.] {n}"))))
        .collect()
}

/// A process in its own process group that is ended (SIGTERM, then SIGKILL after 2 s)
/// and reaped when dropped: the test's servers never outlive it, even when it fails.
struct Guard {
    child: Child,
    what: &'static str,
}

impl Guard {
    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let pg = -(self.child.id() as i32);
        common::signal(pg, libc::SIGTERM);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(2) {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        common::signal(pg, libc::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
        eprintln!("stopped {}", self.what);
    }
}

/// Spawns `cmd` in its own process group, stdout and stderr to `log`.
fn spawn(cmd: &mut Command, log: &Path, what: &'static str) -> Guard {
    use std::os::unix::process::CommandExt;
    let f = File::create(log).expect("create log");
    let child = cmd
        .stdin(Stdio::null())
        .stdout(f.try_clone().unwrap())
        .stderr(f)
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {what}: {e}"));
    Guard { child, what }
}

/// A private network namespace with its loopback up, held by a sleeping process.
fn netns(dir: &Path) -> Option<Guard> {
    let ready = dir.join("netns.ready");
    let g = spawn(
        Command::new("unshare")
            .args(["--net", "--", "sh", "-c"])
            .arg(format!(
                "ip link set lo up && touch '{}' && exec sleep 600",
                ready.display()
            )),
        &dir.join("netns.log"),
        "the network namespace holder",
    );
    let start = Instant::now();
    while !ready.exists() {
        if start.elapsed() > Duration::from_secs(10) {
            let log = std::fs::read_to_string(dir.join("netns.log")).unwrap_or_default();
            skip(
                Why::Setup,
                format_args!("cannot make a network namespace (unshare --net, ip): {log}"),
            );
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(g)
}

/// debuginfod serving `served` (`-F`) in the network namespace of `ns`, on the loopback
/// of that namespace (debuginfod 0.188 listens on every address; there the only one is
/// 127.0.0.1), writing only into `d`: its database, HOME and TMPDIR; no
/// DEBUGINFOD_URLS (no federation). Returns once it serves `/buildid/ID/KIND` (copied
/// to `d/probe.KIND`), with its URL.
fn serve(d: &Path, ns: &Guard, served: &Path, id: &str, kind: &str) -> (Guard, String) {
    let port = 8002;
    let url = format!("http://127.0.0.1:{port}");
    let srv_home = d.join("server-home");
    std::fs::create_dir_all(&srv_home).unwrap();
    let server = spawn(
        Command::new("nsenter")
            .arg(format!("--net=/proc/{}/ns/net", ns.pid()))
            .arg("debuginfod")
            .arg("-d")
            .arg(d.join("server.sqlite"))
            .args(["-p", &port.to_string(), "-t", "0", "-g", "0", "-F"])
            .arg(served)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &srv_home)
            .env("TMPDIR", &srv_home),
        &d.join("server.log"),
        "debuginfod",
    );
    // Ready once it serves the file (it scans -F directories at start).
    let probe = d.join(format!("probe.{kind}"));
    let start = Instant::now();
    loop {
        let ok = Command::new("nsenter")
            .arg(format!("--net=/proc/{}/ns/net", ns.pid()))
            .args(["curl", "-sf", "--max-time", "2", "-o"])
            .arg(&probe)
            .arg(format!("{url}/buildid/{id}/{kind}"))
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            break;
        }
        let log = std::fs::read_to_string(d.join("server.log")).unwrap_or_default();
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "debuginfod did not serve {id} within 30 s:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (server, url)
}

#[test]
fn debuginfod_names_a_stripped_programs_functions() {
    if !common::require_tools(&[
        ("debuginfod", "--version"),
        ("unshare", "--version"),
        ("nsenter", "--version"),
        ("ip", "-V"),
        ("curl", "--version"),
        ("objcopy", "--version"),
    ]) {
        return;
    }
    let d = scratch("debuginfod");
    let prog = program(&d, "prog");
    // The debug file goes to the server's directory; the program is stripped, with no
    // debuglink, so that nothing on this machine names its static functions.
    let served = d.join("served");
    std::fs::create_dir_all(&served).unwrap();
    let debug = served.join("prog.debug");
    run_ok(
        Command::new("objcopy")
            .arg("--only-keep-debug")
            .arg(&prog)
            .arg(&debug),
    );
    run_ok(Command::new("strip").arg("-s").arg(&prog));
    let id = build_id_hex(&prog);
    assert_eq!(build_id_hex(&debug), id);
    let data = d.join("perf.data");
    record(&prog, &data);
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();

    let plain = report(&data, &[], &home, &[], None);
    assert!(
        named(&plain.stdout).is_empty(),
        "a stripped program is named without its debug file:\n{}",
        plain.stdout
    );

    // The server, on the loopback of a namespace of its own (debuginfod 0.188 listens
    // on every address; there the only one is 127.0.0.1), writing only into the
    // scratch directory: its database, HOME and TMPDIR; no DEBUGINFOD_URLS (no
    // federation).
    let Some(ns) = netns(&d) else {
        return;
    };
    let (server, url) = serve(&d, &ns, &served, &id, "debuginfo");
    let probe = d.join("probe.debuginfo");
    assert_eq!(
        std::fs::read(&probe).unwrap(),
        std::fs::read(&debug).unwrap()
    );

    let cache = d.join("cache");
    let env = [
        ("DEBUGINFOD_URLS", url.as_str()),
        ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap()),
    ];
    let fetched = report(&data, &[], &home, &env, Some(ns.pid()));
    assert_eq!(
        named(&fetched.stdout),
        NAMES,
        "debuginfod's debug file names the static functions:\n{}",
        fetched.dump()
    );
    let note = format!("hwprof: note: fetched debug info for build id {id} from {url} (");
    assert_eq!(
        fetched.stderr.matches(&note).count(),
        1,
        "one notice of the download:\n{}",
        fetched.stderr
    );
    let cached = cache.join(&id).join("debuginfo");
    assert_eq!(
        std::fs::read(&cached).unwrap(),
        std::fs::read(&debug).unwrap()
    );
    report!(
        "debuginfod: {} served {} ({} bytes) into {}",
        url,
        id,
        std::fs::metadata(&cached).unwrap().len(),
        cached.display()
    );

    // The server stopped (nothing listens on the port now): the cache answers.
    drop(server);
    let again = report(&data, &[], &home, &env, Some(ns.pid()));
    assert_eq!(named(&again.stdout), NAMES, "{}", again.dump());
    assert!(
        !again.stderr.contains("fetched"),
        "nothing downloaded again:\n{}",
        again.stderr
    );
    assert_eq!(again.stdout, fetched.stdout);
}

#[test]
fn symfs_finds_a_moved_binary_as_perf_does() {
    let d = scratch("symfs");
    let run_dir = d.join("run");
    std::fs::create_dir_all(&run_dir).unwrap();
    let prog = program(&run_dir, "prog");
    let data = d.join("perf.data");
    record(&prog, &data);
    // The binary moves into DIR at its absolute path: the recording's path is empty.
    let symfs = d.join("symfs");
    let moved = symfs.join(prog.strip_prefix("/").unwrap());
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&prog, &moved).unwrap();
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();

    let without = report(&data, &["--no-children"], &home, &[], None);
    assert!(named(&without.stdout).is_empty(), "{}", without.stdout);
    assert!(
        without.stdout.contains("prog  ") && without.stdout.contains("[.] 0x"),
        "unresolved addresses of prog:\n{}",
        without.stdout
    );
    let symfs_arg = symfs.to_str().unwrap();
    let with = report(&data, &["--symfs", symfs_arg], &home, &[], None);
    assert_eq!(named(&with.stdout), NAMES, "{}", with.dump());

    // A --symfs that is not a directory is a usage error.
    let bad = common::hwprof(&[
        "report",
        "-i",
        data.to_str().unwrap(),
        "--symfs",
        moved.to_str().unwrap(),
    ]);
    assert_eq!(bad.code(), 2, "{}", bad.dump());
    assert!(bad.stderr.contains("not a directory"), "{}", bad.stderr);

    if require_perf("perf report --symfs") {
        let top = |extra: &[&str]| -> Option<String> {
            let mut c = Command::new("perf");
            c.args(["report", "-i", data.to_str().unwrap(), "--stdio"])
                .args(["--no-children", "-g", "none", "--sort", "sym"])
                .args(extra)
                .env("HOME", &home);
            let r = common::run_cmd(&mut c, common::TIMEOUT);
            r.assert_ok();
            top_symbol(&r.stdout)
        };
        let perf_with = top(&["--symfs", symfs_arg]);
        let perf_without = top(&[]);
        let own = report(
            &data,
            &["--no-children", "--symfs", symfs_arg],
            &home,
            &[],
            None,
        );
        let ours = top_symbol(&own.stdout);
        report!(
            "--symfs: top symbol hwprof {ours:?}, perf {perf_with:?}; without: perf {perf_without:?}"
        );
        assert_eq!(perf_with.as_deref(), Some("spin_leaf"));
        assert_eq!(ours, perf_with);
        assert!(perf_without.is_some_and(|s| s.starts_with("0x")));
    }
}

#[test]
fn perfs_build_id_cache_in_home_finds_a_moved_binary() {
    let d = scratch("buildid-cache");
    let prog = program(&d, "prog");
    let id = build_id_hex(&prog);
    let data = d.join("perf.data");
    record(&prog, &data);
    let kept = d.join("kept");
    std::fs::rename(&prog, &kept).unwrap();
    let empty_home = d.join("empty-home");
    std::fs::create_dir_all(&empty_home).unwrap();
    let without = report(&data, &["--no-children"], &empty_home, &[], None);
    assert!(named(&without.stdout).is_empty(), "{}", without.stdout);

    let home = d.join("home");
    let elf = home
        .join(".debug/.build-id")
        .join(&id[..2])
        .join(&id[2..])
        .join("elf");
    std::fs::create_dir_all(elf.parent().unwrap()).unwrap();
    std::fs::copy(&kept, &elf).unwrap();
    let with = report(&data, &[], &home, &[], None);
    assert_eq!(named(&with.stdout), NAMES, "{}", with.dump());

    if require_perf("perf report with ~/.debug") {
        let mut c = Command::new("perf");
        c.args(["report", "-i", data.to_str().unwrap(), "--stdio"])
            .args(["--no-children", "-g", "none", "--sort", "sym"])
            .env("HOME", &home);
        let r = common::run_cmd(&mut c, common::TIMEOUT);
        r.assert_ok();
        let perf_top = top_symbol(&r.stdout);
        let own = report(&data, &["--no-children"], &home, &[], None);
        let ours = top_symbol(&own.stdout);
        report!("~/.debug: top symbol hwprof {ours:?}, perf {perf_top:?}");
        assert_eq!(perf_top.as_deref(), Some("spin_leaf"));
        assert_eq!(ours, perf_top);
    }
}

/// The symbol of the first row of a `--stdio` report (perf's or hwprof's).
fn top_symbol(out: &str) -> Option<String> {
    out.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.split_once("] ").map(|(_, s)| s.trim().to_string()))
}

/// `hwprof ARGS` with HOME at `home`, no debuginfod settings but `env`, in the network
/// namespace of process `netns`.
fn hwprof_in(netns: Option<u32>, args: &[&str], home: &Path, env: &[(&str, &str)]) -> common::Run {
    let mut cmd = match netns {
        Some(pid) => {
            let mut c = Command::new("nsenter");
            c.arg(format!("--net=/proc/{pid}/ns/net"))
                .arg(common::hwprof_bin());
            c
        }
        None => Command::new(common::hwprof_bin()),
    };
    cmd.args(args)
        .env("HOME", home)
        .env_remove("DEBUGINFOD_URLS")
        .env_remove("DEBUGINFOD_CACHE_PATH")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("PERF_BUILDID_DIR")
        .envs(env.iter().copied());
    let r = common::run_cmd(&mut cmd, Duration::from_secs(60));
    r.assert_ok();
    r
}

/// The share of folded stacks (`hwprof flamegraph --folded --weight samples`) holding
/// the whole `main;outer;middle;leaf` chain.
fn chain_share(folded: &str) -> f64 {
    let (mut all, mut whole) = (0u64, 0u64);
    for l in folded.lines() {
        let Some((stack, n)) = l.rsplit_once(' ') else {
            continue;
        };
        let n: u64 = n.parse().unwrap_or(0);
        all += n;
        if stack.contains("main;outer;middle;leaf") {
            whole += n;
        }
    }
    if all == 0 {
        0.0
    } else {
        whole as f64 / all as f64
    }
}

#[test]
fn debuginfod_serves_the_unwind_tables_of_a_binary_that_moved() {
    if !common::require_tools(&[
        ("debuginfod", "--version"),
        ("unshare", "--version"),
        ("nsenter", "--version"),
        ("ip", "-V"),
        ("curl", "--version"),
    ]) {
        return;
    }
    let d = scratch("debuginfod-unwind");
    // main -> outer -> middle -> leaf at -O2 without frame pointers: only its unwind
    // tables (.eh_frame) give the callers.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workloads/dwarf_chain.c");
    let prog = d.join("chain");
    assert!(
        hwprof_testkit::compile_c(&src, &prog, &["-O2", "-g", "-fomit-frame-pointer"]),
        "no C compiler: install gcc (.ci/run does)"
    );
    let data = d.join("dwarf.data");
    let (p, o) = (prog.to_str().unwrap(), data.to_str().unwrap());
    common::hwprof(&[
        "record",
        "--call-graph",
        "dwarf",
        "--keep-raw-stacks",
        "-F",
        "1000",
        "-o",
        o,
        "--",
        p,
        "3",
    ])
    .assert_ok();
    // The binary leaves the recorded path: only the server has it now.
    let served = d.join("served");
    std::fs::create_dir_all(&served).unwrap();
    std::fs::rename(&prog, served.join("chain")).unwrap();
    let id = build_id_hex(&served.join("chain"));
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let fold = [
        "flamegraph",
        "-i",
        o,
        "--folded",
        "--weight",
        "samples",
        "-o",
        "-",
    ];

    let without = hwprof_in(None, &fold, &home, &[]);
    let before = chain_share(&without.stdout);
    assert!(
        before < 0.05,
        "unwound without the binary? {}",
        without.stdout
    );

    let Some(ns) = netns(&d) else {
        return;
    };
    let (_server, url) = serve(&d, &ns, &served, &id, "executable");
    let cache = d.join("cache");
    let env = [
        ("DEBUGINFOD_URLS", url.as_str()),
        ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap()),
    ];
    let with = hwprof_in(Some(ns.pid()), &fold, &home, &env);
    let after = chain_share(&with.stdout);
    common::report_line(&format!(
        "debuginfod unwind tables: whole chain in {:.1}% of stacks with the server, {:.1}% without",
        after * 100.0,
        before * 100.0
    ));
    assert!(after >= 0.95, "{}", with.dump());
    assert!(
        cache.join(&id).join("executable").is_file(),
        "{}",
        with.stderr
    );
}
