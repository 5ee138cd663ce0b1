use super::*;

use std::os::unix::fs::symlink;
use std::process::Command;

fn scratch() -> TempDir {
    Builder::new()
        .prefix("hwprof-output-test-")
        .tempdir()
        .expect("scratch dir")
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn mode_of(p: &Path) -> u32 {
    std::fs::metadata(p).expect("metadata").mode() & 0o7777
}

/// A pid that existed and is gone (reaped).
fn dead_pid() -> i32 {
    let mut c = Command::new("true").spawn().expect("spawn true");
    let pid = c.id() as i32;
    c.wait().expect("wait");
    pid
}

#[test]
fn exclusive_create_never_follows_a_planted_symlink_or_file() {
    let d = scratch();
    let victim = d.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let link = d.path().join("link");
    symlink(&victim, &link).unwrap();
    let e = create_exclusive(&link, 0o600).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
    let e = create_exclusive(&victim, 0o600).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
    // A dangling symlink is not followed either (O_EXCL: the target is not created).
    let dangling = d.path().join("dangling");
    symlink(d.path().join("nowhere"), &dangling).unwrap();
    assert!(create_exclusive(&dangling, 0o600).is_err());
    assert!(!d.path().join("nowhere").exists());
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
}

#[test]
fn a_symlink_planted_at_the_chosen_temporary_name_is_never_followed() {
    for plant_file in [false, true] {
        let d = scratch();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let out = d.path().join("out.svg");
        let mut planted: Vec<PathBuf> = Vec::new();
        // The attacker wins every race: whatever name is chosen, something is there first
        // (for the first three candidates).
        let mut hook = |p: &Path| {
            if planted.len() < 3 {
                if plant_file {
                    std::fs::write(p, b"planted").unwrap();
                } else {
                    symlink(&victim, p).unwrap();
                }
                planted.push(p.to_path_buf());
            }
        };
        let mut o = Output::create_with(&out, &Options::REPORT, &mut hook).unwrap();
        let tmp = o.temp_path().unwrap().to_path_buf();
        assert!(
            !planted.contains(&tmp),
            "the temporary file is a fresh name"
        );
        o.write_all(b"<svg/>").unwrap();
        o.commit().unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"<svg/>");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        for p in &planted {
            let m = std::fs::symlink_metadata(p).unwrap();
            assert_eq!(m.file_type().is_symlink(), !plant_file);
            if plant_file {
                assert_eq!(std::fs::read(p).unwrap(), b"planted");
            }
        }
        assert!(!tmp.exists());
    }
}

#[test]
fn temporary_names_are_ours_and_unpredictable() {
    let d = scratch();
    let out = d.path().join("perf.data");
    let a = Output::create(&out, &Options::PERF_DATA).unwrap();
    let b = Output::create(&out, &Options::PERF_DATA).unwrap();
    let (ta, tb) = (a.temp_path().unwrap(), b.temp_path().unwrap());
    assert_ne!(ta, tb);
    for t in [ta, tb] {
        assert_eq!(t.parent(), Some(d.path()));
        let n = t.file_name().unwrap().to_str().unwrap();
        assert_eq!(
            temp_owner(n, "perf.data"),
            Some(std::process::id() as i32),
            "{n}"
        );
        assert!(
            n.starts_with(".perf.data.hwprof-") && n.ends_with(".tmp"),
            "{n}"
        );
    }
}

#[test]
fn dropped_outputs_leave_nothing_and_commit_renames() {
    let d = scratch();
    let out = d.path().join("x.txt");
    std::fs::write(&out, b"old").unwrap();
    let mut o = Output::create(&out, &Options::REPORT).unwrap();
    o.write_all(b"new").unwrap();
    drop(o);
    assert_eq!(names(d.path()), ["x.txt"]);
    assert_eq!(std::fs::read(&out).unwrap(), b"old");

    let mut o = Output::create(&out, &Options::PERF_DATA).unwrap();
    assert_eq!(o.kind(), Kind::Replace);
    assert!(o.is_seekable());
    o.write_all(b"new").unwrap();
    o.commit().unwrap();
    assert_eq!(names(d.path()), ["x.txt", "x.txt.old"]);
    assert_eq!(std::fs::read(&out).unwrap(), b"new");
    assert_eq!(mode_of(&out), 0o600);
}

#[test]
fn a_symlinked_output_replaces_the_file_and_keeps_the_link() {
    let d = scratch();
    let real = d.path().join("real.txt");
    std::fs::write(&real, b"old").unwrap();
    let link = d.path().join("link.txt");
    symlink(&real, &link).unwrap();
    let mut o = Output::create(&link, &Options::REPORT).unwrap();
    o.write_all(b"new").unwrap();
    o.commit().unwrap();
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read(&real).unwrap(), b"new");
}

#[test]
fn paths_that_cannot_be_outputs_are_refused() {
    let d = scratch();
    let e = Output::create(d.path(), &Options::REPORT).unwrap_err();
    assert!(matches!(e, Error::BadPath { .. }), "{e}");
    assert!(e.to_string().contains("is a directory"), "{e}");
    let e = Output::create(&d.path().join("missing/x"), &Options::REPORT).unwrap_err();
    assert!(matches!(e, Error::BadPath { .. }), "{e}");
    assert!(e.to_string().contains("does not exist"), "{e}");
    assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
    let file = d.path().join("f");
    std::fs::write(&file, b"").unwrap();
    let e = Output::create(&file.join("x"), &Options::REPORT).unwrap_err();
    assert!(matches!(e, Error::BadPath { .. }), "{e}");
    let sock = d.path().join("sock");
    let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let e = Output::create(&sock, &Options::REPORT).unwrap_err();
    assert!(e.to_string().contains("socket"), "{e}");
    assert!(
        std::fs::symlink_metadata(&sock)
            .unwrap()
            .file_type()
            .is_socket()
    );
    assert_eq!(names(d.path()), ["f", "sock"]);
}

/// `mknod DIR/null c 1 3`, or `None` where this process may not make device nodes.
fn private_null(dir: &Path) -> Option<PathBuf> {
    let p = dir.join("null");
    let ok = Command::new("mknod")
        .arg(&p)
        .args(["c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        hwprof_testkit::skip(hwprof_testkit::Why::Setup, "mknod needs root");
        return None;
    }
    Some(p)
}

#[test]
fn a_device_is_written_into_never_replaced() {
    let d = scratch();
    let Some(null) = private_null(d.path()) else {
        return;
    };
    for opts in [Options::PERF_DATA, Options::REPORT] {
        let mut o = Output::create(&null, &opts).unwrap();
        assert_eq!(o.kind(), Kind::Direct);
        assert!(o.is_seekable(), "/dev/null seeks");
        assert!(o.temp_path().is_none());
        o.write_all(b"into the void").unwrap();
        o.commit().unwrap();
        let m = std::fs::symlink_metadata(&null).unwrap();
        assert!(m.file_type().is_char_device(), "{m:?}");
    }
    // Through a symlink too (as /dev/stdout is one).
    let link = d.path().join("null-link");
    symlink(&null, &link).unwrap();
    let o = Output::create(&link, &Options::REPORT).unwrap();
    assert_eq!(o.kind(), Kind::Direct);
    o.commit().unwrap();
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(names(d.path()), ["null", "null-link"]);
}

#[test]
fn a_fifo_gets_the_bytes_and_is_not_seekable() {
    let d = scratch();
    let fifo = d.path().join("fifo");
    let ok = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo");
    let f2 = fifo.clone();
    let reader = std::thread::spawn(move || std::fs::read(&f2).unwrap());
    let mut o = Output::create(&fifo, &Options::PERF_DATA).unwrap();
    assert_eq!(o.kind(), Kind::Direct);
    assert!(!o.is_seekable());
    o.write_all(b"streamed").unwrap();
    o.commit().unwrap();
    assert_eq!(reader.join().unwrap(), b"streamed");
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

#[test]
fn owners_of_temporary_names() {
    assert_eq!(
        temp_owner(".a.svg.hwprof-123-abcDEF12.tmp", "a.svg"),
        Some(123)
    );
    for bad in [
        ".a.svg.hwprof-123-abcDEF1.tmp",  // short random part
        ".a.svg.hwprof-123-abcDEF12.tm",  // suffix
        ".a.svg.hwprof--abcDEF12.tmp",    // no pid
        ".a.svg.hwprof-12x-abcDEF12.tmp", // not a pid
        ".a.svg.hwprof-0-abcDEF12.tmp",   // pid 0
        ".a.svg.hwprof-123-abc.EF12.tmp", // not alphanumeric
        "a.svg.hwprof-123-abcDEF12.tmp",  // no dot
        ".b.svg.hwprof-123-abcDEF12.tmp", // another output
        ".a.svg.hwprof-123.tmp",          // the old scheme
    ] {
        assert_eq!(temp_owner(bad, "a.svg"), None, "{bad}");
    }
}

#[test]
fn stale_temporaries_of_dead_processes_only_are_removed() {
    let d = scratch();
    let dead = dead_pid();
    let mut live = Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("spawn sleep");
    let live_pid = live.id();
    let stale = d.path().join(format!(".out.hwprof-{dead}-AAAAAAAA.tmp"));
    let kept_live = d
        .path()
        .join(format!(".out.hwprof-{live_pid}-BBBBBBBB.tmp"));
    let other = d.path().join(format!(".other.hwprof-{dead}-CCCCCCCC.tmp"));
    let victim = d.path().join("victim");
    let link = d.path().join(format!(".out.hwprof-{dead}-DDDDDDDD.tmp"));
    let locked = d.path().join(format!(".out.hwprof-{dead}-EEEEEEEE.tmp"));
    for p in [&stale, &kept_live, &other, &victim, &locked] {
        std::fs::write(p, b"x").unwrap();
    }
    symlink(&victim, &link).unwrap();
    // A writer in another PID namespace: its pid looks dead here, but it holds the lock.
    let holder = File::open(&locked).unwrap();
    flock(&holder, FlockOperation::NonBlockingLockExclusive).unwrap();

    let o = Output::create(&d.path().join("out"), &Options::REPORT).unwrap();
    drop(o);
    let _ = live.kill();
    let _ = live.wait();
    let left = names(d.path());
    assert!(!left.contains(&stale.file_name().unwrap().to_string_lossy().into_owned()));
    for p in [&kept_live, &other, &victim, &link, &locked] {
        let n = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(left.contains(&n), "{n} was removed: {left:?}");
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"x");
    drop(holder);
    // Now the sleeper is dead too and the lock is gone: both go; the symlink stays.
    assert_eq!(remove_stale(d.path(), "out", false), 2);
    assert!(std::fs::symlink_metadata(&link).is_ok());
}

#[test]
fn scratch_dirs_are_private_and_removed() {
    let d = scratch();
    let dead = dead_pid();
    let stale = d
        .path()
        .join(format!(".hwprof-scratch.hwprof-{dead}-AAAAAAAA.tmp"));
    std::fs::create_dir(&stale).unwrap();
    std::fs::write(stale.join("perf.data"), b"x").unwrap();
    let s = ScratchDir::new(d.path()).unwrap();
    assert!(!stale.exists(), "a dead process's scratch dir is removed");
    assert_eq!(mode_of(s.path()), 0o700);
    let p = s.path().to_path_buf();
    std::fs::write(p.join("perf.data"), b"x").unwrap();
    drop(s);
    assert!(!p.exists());
    assert_eq!(names(d.path()), Vec::<String>::new());
}

#[test]
fn write_file_in_one_call() {
    let d = scratch();
    let out = d.path().join("w.json");
    write_file(&out, b"{}", &Options::REPORT).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), b"{}");
    assert_eq!(names(d.path()), ["w.json"]);
}
