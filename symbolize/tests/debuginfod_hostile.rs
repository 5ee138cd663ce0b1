//! The debuginfod client against hostile servers and caches (issue 20, points 2 and 6),
//! with a small HTTP server on 127.0.0.1 run by the test (`hwprof_testkit::http`):
//! downloads are bounded (`DEBUGINFOD_MAXSIZE`, 1 GiB by default; elfutils' low-speed
//! limit over `DEBUGINFOD_TIMEOUT`), leave nothing half-written, temporaries of killed
//! runs are swept (never a live one's), a symbolic link in the cache is never followed,
//! and elfutils' expiry settings (`cache_miss_s`, `cache_clean_interval_s`,
//! `max_unused_age_s`) are honoured to the second (file times set in the past, no
//! sleeping).
//!
//! A killed `hwprof report` mid-download and hostile ELF files served to the binary are
//! in the root package's `tests/debug_hostile.rs`.

mod common;

use std::fs::{File, FileTimes};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::{cache_files, compile, debuginfod_client, scratch};
use hwprof_symbolize::locate::DEFAULT_MAXSIZE;
use hwprof_symbolize::{BuildId, Locator};
use hwprof_testkit::http::{Reply, Server};

const SRC: &str = "int main(void) { return 0; }\n";

/// The build id of test program `tag`.
fn build_id(tag: u8) -> BuildId {
    let mut id = vec![0xba, 0xdd, 0x0c, 0x5e, 0x77, 0x00, 0x00, 0x00];
    id.extend(std::iter::repeat_n(tag, 12));
    BuildId::new(id)
}

/// A program with build id `build_id(tag)`.
fn program(dir: &Path, tag: u8) -> Option<PathBuf> {
    let bid = format!("-Wl,--build-id=0x{}", build_id(tag).hex());
    compile(dir, &format!("prog{tag}"), SRC, &[&bid])
}

/// A locator asking `urls` with cache `cache`, `DEBUGINFOD_TIMEOUT` `timeout` s and
/// `DEBUGINFOD_MAXSIZE` `max_size`.
fn client(cache: &Path, urls: Vec<String>, timeout: u64, max_size: u64) -> Locator {
    debuginfod_client(cache, urls, Duration::from_secs(timeout), max_size)
}

/// Sets the access and modification times of `p` (a file or directory) to `age`
/// seconds ago.
fn age(p: &Path, secs: u64) {
    let t = SystemTime::now() - Duration::from_secs(secs);
    File::open(p)
        .unwrap()
        .set_times(FileTimes::new().set_accessed(t).set_modified(t))
        .unwrap();
}

const GONE: &str = "/nonexistent/hwprof-test/prog";

#[test]
fn endless_huge_and_crawling_bodies_are_abandoned_with_a_notice() {
    let d = scratch("debuginfod-hostile-bodies");
    let (endless, huge, drip) = (build_id(1).hex(), build_id(2).hex(), build_id(3).hex());
    let (e, h, dr) = (endless.clone(), huge.clone(), drip.clone());
    let server = Server::start(move |path| {
        if path.contains(&e) {
            // Cut at 64 MiB: a client without a limit fails instead of hanging.
            Reply::endless()
        } else if path.contains(&h) {
            // 5 GB announced, then nothing until the client goes (or 5 s): it must
            // neither wait for nor take 5 GB.
            Reply::ok(Vec::new())
                .length(5_000_000_000)
                .hold(Duration::from_secs(5))
        } else if path.contains(&dr) {
            // A megabyte announced, then one byte a second, ten at most: a client
            // without a rate limit fails instead of hanging.
            Reply::drip(Duration::from_secs(1), 10).length(1 << 20)
        } else {
            Reply::not_found()
        }
    });
    let cache = d.join("cache");

    // An endless body: cut at DEBUGINFOD_MAXSIZE.
    let l = client(&cache, vec![server.url()], 5, 100_000);
    assert_eq!(l.debug_file(GONE, Some(&build_id(1))), None);
    let notes = l.notices();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains(&endless)
            && notes[0].contains("larger than DEBUGINFOD_MAXSIZE (100000 bytes)"),
        "{notes:?}"
    );

    // 5 GB announced: refused from the header under the default limit.
    let l = client(&cache, vec![server.url()], 5, DEFAULT_MAXSIZE);
    assert_eq!(l.debug_file(GONE, Some(&build_id(2))), None);
    let notes = l.notices();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains(&huge)
            && notes[0].contains(
                "5000000000 bytes, larger than DEBUGINFOD_MAXSIZE (1073741824 bytes, the default)"
            ),
        "{notes:?}"
    );

    // One byte a second: under 100 KiB/s over DEBUGINFOD_TIMEOUT (2 s) is abandoned
    // (the per-read timeout, 2 s, never fires: a byte comes every second).
    let l = client(&cache, vec![server.url()], 2, DEFAULT_MAXSIZE);
    assert_eq!(l.debug_file(GONE, Some(&build_id(3))), None);
    let notes = l.notices();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("unreachable: transfer slower than 100 KB/s for 2 s")
            && notes[0].ends_with("not asked again in this run"),
        "{notes:?}"
    );
    // A crawling server is not asked again in the run.
    let before = server.requests();
    assert_eq!(l.executable(GONE, Some(&build_id(3))), None);
    assert_eq!(server.requests(), before);

    // Nothing kept: no file, no temporary, no "not found" mark.
    assert!(cache_files(&cache).is_empty(), "{:?}", cache_files(&cache));
}

#[test]
fn a_symbolic_link_in_the_cache_is_never_followed() {
    let d = scratch("debuginfod-hostile-links");
    let Some(prog) = program(&d, 4) else {
        return;
    };
    let id = build_id(4);
    let h = id.hex();
    let bytes = std::fs::read(&prog).unwrap();
    let server = Server::start(move |_| Reply::ok(bytes.clone()));
    let cache = d.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    // CACHE/HEX -> a directory outside, as another user (or an attacker with root's
    // cache) could plant it.
    let outside = d.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("keep"), b"untouched").unwrap();
    std::os::unix::fs::symlink(&outside, cache.join(&h)).unwrap();
    let l = client(&cache, vec![server.url()], 5, DEFAULT_MAXSIZE);
    assert_eq!(l.executable(GONE, Some(&id)), None);
    let notes = l.notices();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains(&format!(
            "{} is a symbolic link (not followed)",
            cache.join(&h).display()
        )),
        "{notes:?}"
    );
    assert_eq!(
        server.requests(),
        0,
        "nothing fetched that could not be stored"
    );
    assert_eq!(cache_files(&outside), ["keep"]);
    assert_eq!(std::fs::read(outside.join("keep")).unwrap(), b"untouched");
    assert!(
        std::fs::symlink_metadata(cache.join(&h))
            .unwrap()
            .is_symlink()
    );

    // A link at CACHE/HEX/executable is replaced, never written through.
    let cache2 = d.join("cache2");
    std::fs::create_dir_all(cache2.join(&h)).unwrap();
    let target = outside.join("target");
    std::fs::write(&target, b"untouched").unwrap();
    std::os::unix::fs::symlink(&target, cache2.join(&h).join("executable")).unwrap();
    let l = client(&cache2, vec![server.url()], 5, DEFAULT_MAXSIZE);
    let got = l.executable(GONE, Some(&id));
    assert_eq!(
        got,
        Some(cache2.join(&h).join("executable")),
        "{:?}",
        l.notices()
    );
    assert!(
        std::fs::symlink_metadata(cache2.join(&h).join("executable"))
            .unwrap()
            .is_file()
    );
    assert_eq!(std::fs::read(&target).unwrap(), b"untouched");

    // The cache itself a link, or under a directory anyone may write to: not used.
    let linked = d.join("linked-cache");
    std::os::unix::fs::symlink(&outside, &linked).unwrap();
    let l = client(&linked, vec![server.url()], 5, DEFAULT_MAXSIZE);
    assert_eq!(l.executable(GONE, Some(&id)), None);
    let notes = l.notices();
    assert!(
        notes.len() == 1 && notes[0].contains("is a symbolic link (not followed)"),
        "{notes:?}"
    );
    let open = d.join("open");
    std::fs::create_dir_all(&open).unwrap();
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let l = client(&open.join("cache"), vec![server.url()], 5, DEFAULT_MAXSIZE);
    assert_eq!(l.executable(GONE, Some(&id)), None);
    let notes = l.notices();
    assert!(
        notes.len() == 1 && notes[0].contains("is writable by other users"),
        "{notes:?}"
    );
    assert!(!open.join("cache").exists());
    assert_eq!(server.requests(), 1, "only the download into cache2");
    assert_eq!(cache_files(&outside), ["keep", "target"]);
}

#[test]
fn stale_temporaries_are_swept_and_live_ones_kept() {
    let d = scratch("debuginfod-hostile-temps");
    let Some(prog) = program(&d, 5) else {
        return;
    };
    let id = build_id(5);
    let h = id.hex();
    let bytes = std::fs::read(&prog).unwrap();
    let server = Server::start(move |_| Reply::ok(bytes.clone()));
    let cache = d.join("cache");
    let dir = cache.join(&h);
    std::fs::create_dir_all(&dir).unwrap();
    // A dead process's temporary, a live one's, and a dead PID's that someone (a
    // writer in another PID namespace) still holds locked.
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let mut live = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let stale = format!(".executable.hwprof-{dead_pid}-AbCdEf12.tmp");
    let held = format!(".executable.hwprof-{dead_pid}-XyZ98765.tmp");
    let alive = format!(".executable.hwprof-{}-QwErTy34.tmp", live.id());
    for n in [&stale, &held, &alive] {
        std::fs::write(dir.join(n), b"partial").unwrap();
    }
    let lock = File::open(dir.join(&held)).unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    let l = client(&cache, vec![server.url()], 5, DEFAULT_MAXSIZE);
    assert_eq!(l.executable(GONE, Some(&id)), Some(dir.join("executable")));
    let mut want = vec![
        format!("{h}/executable"),
        format!("{h}/{held}"),
        format!("{h}/{alive}"),
    ];
    want.sort();
    assert_eq!(cache_files(&cache), want);
    let _ = live.kill();
    let _ = live.wait();
    drop(lock);
}

#[test]
fn a_not_found_mark_holds_for_cache_miss_s_seconds_exactly() {
    let d = scratch("debuginfod-cache-miss");
    let server = Server::start(|_| Reply::not_found());
    let cache = d.join("cache");
    let id = build_id(6);
    let mark = cache.join(id.hex()).join("debuginfo");
    let asks = |expect_request: bool, what: &str| {
        let before = server.requests();
        let l = client(&cache, vec![server.url()], 5, DEFAULT_MAXSIZE);
        assert_eq!(l.debug_file(GONE, Some(&id)), None);
        assert_eq!(
            server.requests() - before,
            usize::from(expect_request),
            "{what}"
        );
        assert!(l.notices().is_empty());
    };
    // The first 404 writes the mark.
    asks(true, "no mark yet");
    assert_eq!(std::fs::metadata(&mark).unwrap().len(), 0);
    // The default, 600 s: a mark 598 s old holds, one 602 s old does not (and is
    // written anew). Reading the setting writes its default, as elfutils does.
    age(&mark, 598);
    asks(false, "a 598 s old mark under the default 600 s");
    assert_eq!(
        std::fs::read_to_string(cache.join("cache_miss_s")).unwrap(),
        "600"
    );
    age(&mark, 602);
    asks(true, "a 602 s old mark under the default 600 s");
    let fresh = std::fs::metadata(&mark).unwrap().modified().unwrap();
    assert!(fresh.elapsed().unwrap_or_default() < Duration::from_secs(60));
    // cache_miss_s as the cache says it (as scanf reads it).
    std::fs::write(cache.join("cache_miss_s"), "100\n").unwrap();
    age(&mark, 98);
    asks(false, "a 98 s old mark under cache_miss_s = 100");
    age(&mark, 102);
    asks(true, "a 102 s old mark under cache_miss_s = 100");
    std::fs::write(cache.join("cache_miss_s"), "3000").unwrap();
    age(&mark, 2000);
    asks(false, "a 2000 s old mark under cache_miss_s = 3000");
}

#[test]
fn the_cache_is_cleaned_as_elfutils_cleans_it() {
    let d = scratch("debuginfod-clean");
    let server = Server::start(|_| Reply::not_found());
    let cache = d.join("cache");
    let (old, new, empty) = (build_id(7).hex(), build_id(8).hex(), build_id(9).hex());
    for h in [&old, &new] {
        std::fs::create_dir_all(cache.join(h)).unwrap();
        std::fs::write(cache.join(h).join("debuginfo"), b"\x7fELF...").unwrap();
    }
    std::fs::create_dir_all(cache.join(&empty)).unwrap();
    std::fs::write(cache.join("notes.txt"), b"not ours").unwrap();
    std::fs::write(cache.join("cache_clean_interval_s"), "1000").unwrap();
    std::fs::write(cache.join("max_unused_age_s"), "5000").unwrap();
    let interval = cache.join("cache_clean_interval_s");
    let run = || {
        let l = client(&cache, vec![server.url()], 5, DEFAULT_MAXSIZE);
        // Any lookup opens the cache, which cleans it when due.
        assert_eq!(l.debug_file(GONE, Some(&build_id(10))), None);
    };
    let setup = |interval_age: u64| {
        age(&cache.join(&old).join("debuginfo"), 5002);
        age(&cache.join(&new).join("debuginfo"), 4998);
        age(&cache.join(&old), 5002);
        age(&cache.join(&empty), 5002);
        age(&cache.join(&new), 10);
        age(&cache.join("notes.txt"), 100_000);
        age(&interval, interval_age);
    };
    // The last cleaning 998 s ago, the interval 1000 s: nothing is deleted.
    setup(998);
    run();
    let mut all = vec![
        format!("{new}/debuginfo"),
        format!("{old}/debuginfo"),
        "notes.txt".to_string(),
        format!("{}/debuginfo", build_id(10).hex()),
    ];
    all.sort();
    assert_eq!(cache_files(&cache), all);
    assert!(cache.join(&empty).is_dir());
    // 1002 s ago: files unread for max_unused_age_s (5000 s) go, and directories that
    // old once empty; newer files, other names and settings stay.
    setup(1002);
    run();
    let mut kept = vec![
        format!("{new}/debuginfo"),
        "notes.txt".to_string(),
        format!("{}/debuginfo", build_id(10).hex()),
    ];
    kept.sort();
    assert_eq!(cache_files(&cache), kept);
    assert!(!cache.join(&old).exists() && !cache.join(&empty).exists());
    assert!(cache.join(&new).is_dir());
    // The cleaning's time is now: the next run does not clean.
    let since = std::fs::metadata(&interval).unwrap().modified().unwrap();
    assert!(since.elapsed().unwrap_or_default() < Duration::from_secs(60));
    assert_eq!(
        std::fs::read_to_string(cache.join("max_unused_age_s")).unwrap(),
        "5000"
    );
}
