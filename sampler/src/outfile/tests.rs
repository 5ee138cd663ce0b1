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
            temp_owner(n),
            Some(("perf.data", std::process::id() as i32)),
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
        temp_owner(".a.svg.hwprof-123-abcDEF12.tmp"),
        Some(("a.svg", 123))
    );
    // The output's own name may hold the pattern's pieces.
    assert_eq!(
        temp_owner(".x.hwprof-1-y.hwprof-123-abcDEF12.tmp"),
        Some(("x.hwprof-1-y", 123))
    );
    assert_eq!(
        temp_owner(".hwprof-scratch.hwprof-9-abcDEF12.tmp"),
        Some((SCRATCH_STEM, 9))
    );
    for bad in [
        ".a.svg.hwprof-123-abcDEF1.tmp",  // short random part
        ".a.svg.hwprof-123-abcDEF12.tm",  // suffix
        ".a.svg.hwprof--abcDEF12.tmp",    // no pid
        ".a.svg.hwprof-12x-abcDEF12.tmp", // not a pid
        ".a.svg.hwprof-0-abcDEF12.tmp",   // pid 0
        ".a.svg.hwprof-123-abc.EF12.tmp", // not alphanumeric
        "a.svg.hwprof-123-abcDEF12.tmp",  // no dot
        "..hwprof-123-abcDEF12.tmp",      // no output name
        ".a.svg.hwprof-123.tmp",          // the old scheme
    ] {
        assert_eq!(temp_owner(bad), None, "{bad}");
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
    // Another output's leftover goes too: any run writing in the directory sweeps it.
    let other = d.path().join(format!(".other.hwprof-{dead}-CCCCCCCC.tmp"));
    let victim = d.path().join("victim");
    let link = d.path().join(format!(".out.hwprof-{dead}-DDDDDDDD.tmp"));
    let locked = d.path().join(format!(".out.hwprof-{dead}-EEEEEEEE.tmp"));
    // A directory named as a temporary file, not a scratch directory: not ours.
    let not_scratch = d.path().join(format!(".out.hwprof-{dead}-FFFFFFFF.tmp"));
    std::fs::create_dir(&not_scratch).unwrap();
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
    for p in [&stale, &other] {
        let n = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(!left.contains(&n), "{n} is still there: {left:?}");
    }
    for p in [&kept_live, &victim, &link, &locked, &not_scratch] {
        let n = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(left.contains(&n), "{n} was removed: {left:?}");
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"x");
    drop(holder);
    // Now the sleeper is dead too and the lock is gone: both go; the symlink stays.
    assert_eq!(sweep(d.path()), 2);
    assert!(std::fs::symlink_metadata(&link).is_ok());
    assert!(not_scratch.is_dir());
}

/// A PID taken over by a process that started after the file was made (PID reuse) is
/// not the file's writer: its file goes. The same PID on a newer file is kept.
#[test]
fn a_reused_pid_does_not_keep_a_dead_writers_file() {
    let d = scratch();
    let old = d.path().join("old");
    std::fs::write(&old, b"x").unwrap();
    if std::fs::metadata(&old).unwrap().created().is_err() {
        // Without a birth time, the rename below would make the file look new.
        hwprof_testkit::skip(
            hwprof_testkit::Why::Setup,
            "this file system keeps no birth time: PID reuse not checked",
        );
        return;
    }
    // Started after `old` was made by more than the margin.
    std::thread::sleep(sweep::REUSE_MARGIN + std::time::Duration::from_millis(1500));
    let mut later = Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("spawn sleep");
    let pid = later.id();
    let reused = d.path().join(format!(".out.hwprof-{pid}-AAAAAAAA.tmp"));
    std::fs::rename(&old, &reused).unwrap();
    let fresh = d.path().join(format!(".out.hwprof-{pid}-BBBBBBBB.tmp"));
    std::fs::write(&fresh, b"x").unwrap();
    let removed = sweep(d.path());
    let _ = later.kill();
    let _ = later.wait();
    assert_eq!(removed, 1);
    assert!(
        !reused.exists(),
        "the reused PID kept the dead writer's file"
    );
    assert!(fresh.exists(), "a file of the live PID was removed");
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

fn mkfifo(d: &Path, name: &str) -> PathBuf {
    let fifo = d.join(name);
    let ok = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo");
    fifo
}

/// A stop from another thread after `ms`.
fn stop_later(stop: &Stop, ms: u64) -> std::thread::JoinHandle<()> {
    let s = stop.try_clone().expect("clone the stop");
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(ms));
        s.stop();
    })
}

/// No reader ever: the wait for one ends with the stop (it used to block in open(2)
/// for good), says so once, and leaves the FIFO alone.
#[test]
fn a_fifo_without_a_reader_is_waited_for_until_the_stop() {
    let d = scratch();
    let fifo = mkfifo(d.path(), "fifo");
    let stop = Stop::new().unwrap();
    let t = stop_later(&stop, 200);
    let mut told = 0;
    let e =
        Output::create_until(&fifo, &Options::PERF_DATA, &stop, &mut |_| told += 1).unwrap_err();
    t.join().unwrap();
    assert_eq!(told, 1);
    let Error::Io { source, .. } = &e else {
        panic!("{e:?}")
    };
    assert!(Stopped::find(source).is_some(), "{e:?}");
    assert!(e.to_string().contains("fifo"), "{e}");
    assert_eq!(names(d.path()), ["fifo"]);
}

/// A reader that comes late gets everything, in order, through a pipe far smaller than
/// the data (the writes wait for room).
#[test]
fn a_late_reader_gets_the_data_whole() {
    let d = scratch();
    let fifo = mkfifo(d.path(), "fifo");
    let stop = Stop::new().unwrap();
    let f2 = fifo.clone();
    let reader = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        std::fs::read(&f2).unwrap()
    });
    let mut o = Output::create_until(&fifo, &Options::PERF_DATA, &stop, &mut |_| {}).unwrap();
    assert_eq!(o.kind(), Kind::Direct);
    let data: Vec<u8> = (0..4 << 20).map(|i: u32| (i % 251) as u8).collect();
    o.write_all(&data).unwrap();
    o.commit().unwrap();
    assert!(
        reader.join().unwrap() == data,
        "the data came through changed"
    );
}

/// A reader that takes nothing: the stop, then a second one, end the write (it blocked
/// in write(2) before); later writes fail at once. A reader that is only slow after
/// the stop still gets everything.
#[test]
fn writes_to_a_stalled_reader_end_with_a_second_stop() {
    let d = scratch();
    let fifo = mkfifo(d.path(), "fifo");
    let stop = Stop::new().unwrap();
    // Opened for reading, never read.
    let f2 = fifo.clone();
    let holder = std::thread::spawn(move || File::open(&f2).unwrap());
    let mut o = Output::create_until(&fifo, &Options::PERF_DATA, &stop, &mut |_| {}).unwrap();
    let held = holder.join().unwrap();
    let t = stop_later(&stop, 100);
    let t2 = {
        let s = stop.try_clone().unwrap();
        std::thread::spawn(move || {
            while !s.is_stopped() {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
            s.stop();
        })
    };
    let e = o.write_all(&vec![7u8; 1 << 20]).unwrap_err();
    t.join().unwrap();
    t2.join().unwrap();
    assert!(Stopped::find(&e).is_some(), "{e:?}");
    assert!(e.to_string().contains("incomplete"), "{e}");
    let e = o.write(b"more").unwrap_err();
    assert!(Stopped::find(&e).is_some(), "{e:?}");
    drop(held);

    // Slow after the stop, but reading: the data arrives whole.
    let fifo = mkfifo(d.path(), "fifo2");
    let stop = Stop::new().unwrap();
    stop.stop();
    let f2 = fifo.clone();
    let reader = std::thread::spawn(move || {
        let mut f = File::open(&f2).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut f, &mut v).unwrap();
        v
    });
    let o = Output::create(&fifo, &Options::PERF_DATA).unwrap();
    // A stream given the stop (as stdout is): cut to PIPE_BUF, still whole.
    let file = o.file().try_clone().unwrap();
    drop(o);
    let mut o = Output::from_stream(file, "-");
    o.stop_on(&stop).unwrap();
    let data: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 253) as u8).collect();
    o.write_all(&data).unwrap();
    o.commit().unwrap();
    assert!(reader.join().unwrap() == data);
}

/// Opened after a stop (a graph drawn once Ctrl-C ended the recording): the FIFO waits
/// for its reader until the next stop, not failing at once for the first; a reader that
/// comes gets the data.
#[test]
fn a_fifo_opened_after_the_stop_waits_until_the_next_one() {
    let d = scratch();
    let fifo = mkfifo(d.path(), "fifo");
    let stop = Stop::new().unwrap();
    stop.stop();
    let t = stop_later(&stop, 300);
    let mut told = 0;
    let e = Output::create_until(&fifo, &Options::REPORT, &stop, &mut |_| told += 1).unwrap_err();
    t.join().unwrap();
    assert_eq!(told, 1);
    assert_eq!(stop.times(), 2, "ended by the second stop");
    let Error::Io { source, .. } = &e else {
        panic!("{e:?}")
    };
    assert!(Stopped::find(source).is_some(), "{e:?}");

    let f2 = fifo.clone();
    let reader = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        std::fs::read(&f2).unwrap()
    });
    let mut o = Output::create_until(&fifo, &Options::REPORT, &stop, &mut |_| {}).unwrap();
    o.write_all(b"<svg/>").unwrap();
    o.commit().unwrap();
    assert_eq!(reader.join().unwrap(), b"<svg/>");
    assert_eq!(names(d.path()), ["fifo"]);
}
