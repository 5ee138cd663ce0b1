//! `hwprof_symbolize::locate`: where a module's files are found (perf's order, only
//! regular files with the recorded build id), the debuginfod client against a small
//! HTTP server run by the test on 127.0.0.1 (downloads, elfutils' cache, no half-written
//! files, memo and dead servers), and symbolizing from a separate debug file.
//!
//! The real `debuginfod` server is tested end to end with the binary in the root
//! package's `tests/debuginfod.rs`.

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{Input, Symbolized};
use common::{Why, cache_files, compile, debuginfod_client, file_offset, have, scratch, skip};
use hwprof_symbolize::locate::{Config, DEFAULT_MAXSIZE};
use hwprof_symbolize::{BuildId, Locator, Module, Symbolizer};
use hwprof_testkit::http::{Reply, Server};

const SRC: &str = r#"
static volatile unsigned long sink;
static __attribute__((noinline)) void hidden_leaf(unsigned long n) {
    for (unsigned long i = 0; i < n; i++) sink += i * 7;
}
static __attribute__((noinline)) void hidden_outer(unsigned long n) { hidden_leaf(n); sink ^= 1; }
int main(int argc, char **argv) { (void)argv; hidden_outer(argc * 1000UL); return 0; }
"#;

/// The build id of the test programs: `0x5eed` then `tag`.
fn build_id(tag: u8) -> BuildId {
    let mut id = vec![0x5e, 0xed, 0x10, 0xca, 0x7e, 0x00, 0x00, 0x00];
    id.extend(std::iter::repeat_n(tag, 12));
    BuildId::new(id)
}

/// Compiles the test program with `-g -O2` and build id `build_id(tag)` into
/// `dir/name`.
fn program(dir: &Path, name: &str, tag: u8) -> Option<PathBuf> {
    let bid = format!("-Wl,--build-id=0x{}", build_id(tag).hex());
    compile(dir, name, SRC, &["-g", "-O2", &bid])
}

fn binutils() -> bool {
    if have("objcopy") && have("strip") && have("nm") {
        return true;
    }
    skip(Why::Setup, "objcopy/strip/nm (binutils) not installed");
    false
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run a binutils tool");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `exe` split into `exe.debug` (objcopy --only-keep-debug) and a stripped `exe`.
fn split_debug(exe: &Path) -> PathBuf {
    let debug = exe.with_extension("debug");
    run(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(exe)
        .arg(&debug));
    run(Command::new("strip").arg("-s").arg(exe));
    debug
}

fn mkdirs(p: &Path) {
    std::fs::create_dir_all(p).unwrap();
}

fn copy(from: &Path, to: &Path) {
    mkdirs(to.parent().unwrap());
    std::fs::copy(from, to).unwrap();
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn executables_are_found_in_perfs_order_with_their_build_id() {
    let d = scratch("locate-order");
    let Some(exe) = program(&d, "app", 1) else {
        return;
    };
    let id = build_id(1);
    let h = id.hex();
    let recorded = "/opt/elsewhere/bin/app";
    let home_debug = d.join("home/.debug");
    let cache_elf = home_debug
        .join(".build-id")
        .join(&h[..2])
        .join(&h[2..])
        .join("elf");
    let symfs = d.join("symfs");
    let in_symfs = symfs.join("opt/elsewhere/bin/app");
    let config = |symfs: Option<PathBuf>| Config {
        buildid_dir: Some(match &symfs {
            Some(s) => s.join(".debug"),
            None => home_debug.clone(),
        }),
        symfs,
        ..Config::default()
    };

    // Nowhere yet.
    let l = Locator::new(config(None));
    assert_eq!(l.executable(recorded, Some(&id)), None);

    // The symfs has it at the recorded path.
    copy(&exe, &in_symfs);
    let l = Locator::new(config(Some(symfs.clone())));
    assert_eq!(l.executable(recorded, Some(&id)), Some(in_symfs.clone()));
    // An 8-byte build id as old perf.data files keep it: padded with zeros to 20.
    let Some(short) = compile(&d, "short", SRC, &["-Wl,--build-id=0x0102030405060708"]) else {
        return;
    };
    copy(&short, &symfs.join("opt/short"));
    let mut padded = vec![1, 2, 3, 4, 5, 6, 7, 8];
    padded.resize(20, 0);
    assert_eq!(
        l.executable("/opt/short", Some(&BuildId::new(padded))),
        Some(symfs.join("opt/short"))
    );

    // perf's build-id cache comes first (the symfs's own: SYMFS/.debug).
    let symfs_cache = symfs
        .join(".debug/.build-id")
        .join(&h[..2])
        .join(&h[2..])
        .join("elf");
    copy(&exe, &symfs_cache);
    let l = Locator::new(config(Some(symfs.clone())));
    assert_eq!(l.executable(recorded, Some(&id)), Some(symfs_cache.clone()));

    // Without a symfs: ~/.debug, by build id only.
    copy(&exe, &cache_elf);
    let l = Locator::new(config(None));
    assert_eq!(l.executable(recorded, Some(&id)), Some(cache_elf.clone()));
    assert_eq!(
        l.executable(recorded, None),
        None,
        "no build id: the recorded path, which does not exist"
    );

    // A file with another build id is never taken, wherever it is.
    let Some(other) = program(&d, "other", 2) else {
        return;
    };
    std::fs::copy(&other, &cache_elf).unwrap();
    std::fs::copy(&other, &in_symfs).unwrap();
    let l = Locator::new(config(Some(symfs.clone())));
    std::fs::remove_file(&symfs_cache).unwrap();
    assert_eq!(l.executable(recorded, Some(&id)), None);
    // Without a build id the symfs file is taken as perf takes it.
    assert_eq!(l.executable(recorded, None), Some(in_symfs.clone()));

    // The path itself: without a symfs always; with one only when its build id says
    // it is the recorded file.
    let local = s(&exe);
    let l = Locator::new(config(Some(symfs.clone())));
    assert_eq!(l.executable(local, Some(&id)), Some(exe.clone()));
    assert_eq!(l.executable(local, None), None, "another machine's file");
    let l = Locator::new(config(None));
    assert_eq!(l.executable(local, None), Some(exe.clone()));
    assert_eq!(l.executable(local, Some(&build_id(3))), None);
}

#[test]
fn fifos_and_devices_are_never_opened() {
    let d = scratch("locate-fifo");
    let Some(exe) = program(&d, "app", 4) else {
        return;
    };
    let h = build_id(4).hex();
    let home_debug = d.join("home/.debug");
    let leaf = home_debug.join(".build-id").join(&h[..2]).join(&h[2..]);
    mkdirs(&leaf);
    let symfs = d.join("symfs");
    let in_symfs = symfs.join(s(&exe).trim_start_matches('/'));
    mkdirs(in_symfs.parent().unwrap());
    for p in [leaf.join("elf"), leaf.join("debug"), in_symfs.clone()] {
        run(Command::new("mkfifo").arg(&p));
    }
    // A private /dev/zero where the debug directory's build-id file would be.
    let dbg = d.join("debugdir");
    let tree = dbg.join(".build-id").join(&h[..2]);
    mkdirs(&tree);
    let zero = tree.join(format!("{}.debug", &h[2..]));
    let made = Command::new("mknod")
        .arg(&zero)
        .args(["c", "1", "5"])
        .status()
        .is_ok_and(|s| s.success());
    let l = Locator::new(Config {
        symfs: Some(symfs),
        buildid_dir: Some(home_debug),
        debug_dirs: vec![dbg],
        ..Config::default()
    });
    let start = Instant::now();
    // Each would block forever (FIFO) or read endless zeros (device) if opened.
    assert_eq!(l.executable(s(&exe), None), None);
    assert_eq!(l.executable(s(&exe), Some(&build_id(4))), Some(exe.clone()));
    assert_eq!(l.debug_file(s(&exe), Some(&build_id(4))), None);
    assert!(start.elapsed() < Duration::from_secs(5));
    if !made {
        skip(
            Why::Setup,
            "mknod failed (not root?): the device case was not run",
        );
    }
}

#[test]
fn debug_files_by_build_id_and_debuglink() {
    let d = scratch("locate-debug");
    if !binutils() {
        return;
    }
    let Some(exe) = program(&d, "app", 5) else {
        return;
    };
    let id = build_id(5);
    let h = id.hex();
    let debug = split_debug(&exe);
    let dbgdir = d.join("debugdir");
    let l = || {
        Locator::new(Config {
            buildid_dir: Some(d.join("home/.debug")),
            debug_dirs: vec![dbgdir.clone()],
            ..Config::default()
        })
    };
    assert_eq!(l().debug_file(s(&exe), Some(&id)), None);

    // DIR/.build-id/xx/rest.debug of a debug directory.
    let by_id = dbgdir
        .join(".build-id")
        .join(&h[..2])
        .join(format!("{}.debug", &h[2..]));
    copy(&debug, &by_id);
    assert_eq!(l().debug_file(s(&exe), Some(&id)), Some(by_id.clone()));
    // perf's build-id cache first.
    let cached = d
        .join("home/.debug/.build-id")
        .join(&h[..2])
        .join(&h[2..])
        .join("debug");
    copy(&debug, &cached);
    assert_eq!(l().debug_file(s(&exe), Some(&id)), Some(cached.clone()));
    std::fs::remove_file(&cached).unwrap();
    std::fs::remove_file(&by_id).unwrap();

    // .gnu_debuglink: next to the executable, in its .debug/, or under a debug
    // directory at the executable's directory; with the executable's build id even
    // when the recording has none.
    run(Command::new("objcopy")
        .arg(format!("--add-gnu-debuglink={}", s(&debug)))
        .arg(&exe));
    let linked = d.join(".debug").join("app.debug");
    mkdirs(linked.parent().unwrap());
    std::fs::rename(&debug, &linked).unwrap();
    assert_eq!(l().debug_file(s(&exe), Some(&id)), Some(linked.clone()));
    assert_eq!(l().debug_file(s(&exe), None), Some(linked.clone()));
    let under = dbgdir.join(d.strip_prefix("/").unwrap()).join("app.debug");
    copy(&linked, &under);
    std::fs::remove_file(&linked).unwrap();
    assert_eq!(l().debug_file(s(&exe), None), Some(under.clone()));
    // A link target of another build is not taken.
    let Some(other) = program(&d, "other", 6) else {
        return;
    };
    let other_debug = split_debug(&other);
    std::fs::copy(&other_debug, &under).unwrap();
    assert_eq!(l().debug_file(s(&exe), None), None);
}

#[test]
fn debuglink_without_build_ids_checks_the_crc() {
    let d = scratch("locate-crc");
    if !binutils() {
        return;
    }
    let Some(exe) = compile(&d, "app", SRC, &["-g", "-O2", "-Wl,--build-id=none"]) else {
        return;
    };
    let debug = split_debug(&exe);
    run(Command::new("objcopy")
        .arg(format!("--add-gnu-debuglink={}", s(&debug)))
        .arg(&exe));
    let l = || Locator::new(Config::default());
    assert_eq!(l().debug_file(s(&exe), None), Some(debug.clone()));
    // Same name, other contents: the CRC differs.
    let mut bytes = std::fs::read(&debug).unwrap();
    bytes.push(0);
    std::fs::write(&debug, bytes).unwrap();
    assert_eq!(l().debug_file(s(&exe), None), None);
}

#[test]
fn symbols_from_a_separate_debug_file() {
    let d = scratch("locate-symbolize");
    if !binutils() {
        return;
    }
    let Some(exe) = program(&d, "app", 7) else {
        return;
    };
    let id = build_id(7);
    let h = id.hex();
    let func = hwprof_testkit::nm_address(&exe, "hidden_leaf");
    let offset = file_offset(&exe, func);
    let debug = split_debug(&exe);
    let dbgdir = d.join("debugdir");
    copy(
        &debug,
        &dbgdir
            .join(".build-id")
            .join(&h[..2])
            .join(format!("{}.debug", &h[2..])),
    );
    let module = Module::File {
        path: s(&exe).to_string(),
        build_id: Some(id.clone()),
    };
    let name = |debug_dirs: Vec<PathBuf>| {
        let l = Locator::new(Config {
            debug_dirs,
            ..Config::default()
        });
        let mut sym = Symbolizer::with_locator(true, false, l);
        let m = sym.module_id(module.clone());
        let frames = sym.resolve_one(m, offset + 2, false);
        frames.last().and_then(|f| f.function.clone())
    };
    assert_eq!(
        name(Vec::new()),
        None,
        "stripped: the static function has no name"
    );
    assert_eq!(name(vec![dbgdir]).as_deref(), Some("hidden_leaf"));

    // Why virtual offsets: the debug file's code is NOBITS, so a file offset names
    // nothing in it.
    let blaze = blazesym::symbolize::Symbolizer::new();
    let direct = blaze
        .symbolize_single(
            &Source::Elf(Elf::new(&debug)),
            Input::FileOffset(offset + 2),
        )
        .unwrap();
    assert!(
        !matches!(&direct, Symbolized::Sym(s) if s.name == "hidden_leaf"),
        "blazesym now reads file offsets of a debug file: {direct:?}"
    );
}

// ---------------------------------------------------------------------------
// debuginfod client
// ---------------------------------------------------------------------------

/// A locator asking `urls` with cache `cache`, `DEBUGINFOD_TIMEOUT` 1 s.
fn client(cache: &Path, urls: Vec<String>) -> Locator {
    debuginfod_client(cache, urls, Duration::from_secs(1), DEFAULT_MAXSIZE)
}

#[test]
fn debuginfod_downloads_into_elfutils_cache_once() {
    let d = scratch("debuginfod-ok");
    if !binutils() {
        return;
    }
    let Some(exe) = program(&d, "app", 8) else {
        return;
    };
    let id = build_id(8);
    let h = id.hex();
    let debug = split_debug(&exe);
    let bytes = std::fs::read(&debug).unwrap();
    let want = format!("/buildid/{h}/debuginfo");
    let server = Server::start(move |path| {
        if path == want {
            Reply::ok(bytes.clone())
        } else {
            Reply::not_found()
        }
    });
    let cache = d.join("cache");
    // The recorded path is gone: nothing local, so the server is asked.
    let gone = "/nonexistent/app";
    let l = client(&cache, vec![server.url()]);
    let got = l.debug_file(gone, Some(&id));
    let expect = cache.join(&h).join("debuginfo");
    assert_eq!(got, Some(expect.clone()));
    assert_eq!(
        std::fs::read(&expect).unwrap(),
        std::fs::read(&debug).unwrap()
    );
    let notes = l.notices();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with(&format!(
            "fetched debug info for build id {h} from {}",
            server.url()
        )) && notes[0].ends_with(" KB)"),
        "{notes:?}"
    );
    let asked = server.requests();
    // The executable is not on the server: a 404, then elfutils' "not found" mark.
    assert_eq!(l.executable(gone, Some(&id)), None);
    assert_eq!(server.requests(), asked + 1);
    let mark = cache.join(&h).join("executable");
    assert_eq!(std::fs::metadata(&mark).map(|m| m.len()).ok(), Some(0));
    // Asked again in this run: memo; in a new run: the cache and the mark.
    assert_eq!(l.debug_file(gone, Some(&id)), Some(expect.clone()));
    let l2 = client(&cache, vec![server.url()]);
    assert_eq!(l2.debug_file(gone, Some(&id)), Some(expect.clone()));
    assert_eq!(l2.executable(gone, Some(&id)), None);
    assert_eq!(server.requests(), asked + 1, "nothing asked twice");
    assert!(l2.notices().is_empty());
    assert_eq!(
        cache_files(&cache),
        [format!("{h}/debuginfo"), format!("{h}/executable")]
    );
    // A module with DWARF of its own never makes debuginfod asked for a debug file.
    let Some(full) = program(&d, "full", 9) else {
        return;
    };
    assert_eq!(l2.debug_file(s(&full), Some(&build_id(9))), None);
    assert_eq!(server.requests(), asked + 1);
}

#[test]
fn debuginfod_never_leaves_a_partial_or_wrong_file() {
    let d = scratch("debuginfod-bad");
    if !binutils() {
        return;
    }
    let (Some(a), Some(b)) = (program(&d, "a", 10), program(&d, "b", 11)) else {
        return;
    };
    let a_bytes = std::fs::read(&a).unwrap();
    let b_bytes = std::fs::read(&b).unwrap();
    let (cut, wrong, big) = (build_id(12).hex(), build_id(13).hex(), build_id(14).hex());
    let server = Server::start(move |path| {
        if path.contains(&cut) {
            // Promises twice the bytes it sends, then closes.
            Reply::ok(a_bytes.clone()).length(2 * a_bytes.len() as u64)
        } else if path.contains(&wrong) {
            // Another file than the build id asked for.
            Reply::ok(b_bytes.clone())
        } else if path.contains(&big) {
            Reply::ok(vec![0x7f; 4096])
        } else {
            Reply::not_found()
        }
    });
    let cache = d.join("cache");
    let mut l = client(&cache, vec![server.url()]);
    for tag in [12, 13] {
        assert_eq!(l.executable("/nonexistent/x", Some(&build_id(tag))), None);
    }
    let notes = l.notices();
    assert!(
        notes.iter().any(|n| n.contains("the transfer failed")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains(&format!("it has build id {}", build_id(11).hex()))),
        "{notes:?}"
    );
    // DEBUGINFOD_MAXSIZE: a larger file is not kept.
    l = debuginfod_client(&cache, vec![server.url()], Duration::from_secs(1), 1000);
    assert_eq!(l.executable("/nonexistent/x", Some(&build_id(14))), None);
    let notes = l.notices();
    assert!(
        notes.iter().any(|n| n.contains("DEBUGINFOD_MAXSIZE")),
        "{notes:?}"
    );
    // No file of any of them, not even a temporary one; no "not found" mark either
    // (the servers did not say they have none).
    let left: Vec<String> = cache_files(&cache);
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn unreachable_servers_are_skipped_for_the_run() {
    let d = scratch("debuginfod-dead");
    // A port nothing listens on (bound, then closed): connections are refused.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = format!("http://127.0.0.1:{port}");
    // Headers, then nothing for 20 s.
    let stall = Server::start(|_| {
        Reply::ok(Vec::new())
            .length(1000)
            .hold(Duration::from_secs(20))
    });
    let cache = d.join("cache");
    let l = client(&cache, vec![dead.clone(), stall.url()]);
    let start = Instant::now();
    for tag in [20, 21, 22] {
        assert_eq!(l.debug_file("/nonexistent/x", Some(&build_id(tag))), None);
    }
    let took = start.elapsed();
    // DEBUGINFOD_TIMEOUT (1 s here) ends the stall once; later lookups skip both.
    assert!(took < Duration::from_secs(8), "took {took:?}");
    assert_eq!(stall.requests(), 1);
    let notes = l.notices();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].starts_with(&format!("debuginfod server {dead} unreachable: "))
            && notes[0].ends_with("not asked again in this run"),
        "{notes:?}"
    );
    assert!(notes[1].contains(&stall.url()), "{notes:?}");
    assert!(cache_files(&cache).is_empty(), "{:?}", cache_files(&cache));
}

#[test]
fn failures_are_asked_for_once_per_run() {
    let d = scratch("debuginfod-once");
    let server = Server::start(|_| Reply::status(500));
    let cache = d.join("cache");
    let id = build_id(30);
    let l = client(&cache, vec![server.url()]);
    // Two modules with one build id (two paths): one request.
    assert_eq!(l.executable("/nonexistent/a", Some(&id)), None);
    assert_eq!(l.executable("/nonexistent/b", Some(&id)), None);
    assert_eq!(server.requests(), 1);
    let notes = l.notices();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("answered HTTP 500"), "{notes:?}");
    // A server error is no "not found": the next run asks again.
    assert!(cache_files(&cache).is_empty(), "{:?}", cache_files(&cache));
    let l2 = client(&cache, vec![server.url()]);
    assert_eq!(l2.executable("/nonexistent/a", Some(&id)), None);
    assert_eq!(server.requests(), 2);
}
