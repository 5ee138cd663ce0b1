//! What runs killed with SIGKILL leave (temporary outputs `.NAME.hwprof-PID-RANDOM.tmp`
//! of record, stat, flamegraph and offcpu; the scratch directories flamegraph and
//! offcpu record into) is removed by the next run of any command that writes in the
//! same directory, whatever its output's name, while a live run's temporaries stay.
//! Reading a pipe-mode stream (`report -i -`) spools it into an unlinked file: a
//! killed reader leaves nothing.

#[macro_use]
mod common;

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::*;

/// `hwprof ARGS` in the background with `TMPDIR=dir`.
fn start(args: &[&str], dir: &Path) -> Background {
    let mut cmd = Command::new(hwprof_bin());
    cmd.args(args).env("TMPDIR", dir);
    Background::spawn(&mut cmd)
}

/// The names in `dir` that hwprof process `pid` made: `.STEM.hwprof-PID-*.tmp`, waiting
/// (hang detector: [`TIMEOUT`]) until there are `n`.
fn temporaries_of(bg: &mut Background, dir: &Path, n: usize) -> Vec<String> {
    let tag = format!(".hwprof-{}-", bg.pid());
    let start = Instant::now();
    loop {
        let found: Vec<String> = entries(dir)
            .into_iter()
            .filter(|e| e.contains(&tag) && e.ends_with(".tmp"))
            .collect();
        if found.len() >= n {
            return found;
        }
        assert!(bg.alive(), "`{}` ended early", bg.cmdline);
        assert!(
            start.elapsed() < TIMEOUT,
            "`{}`: {n} temporaries never appeared: {found:?}",
            bg.cmdline
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// SIGKILL to the run's whole process group (hwprof and its workload), reaped.
fn kill(bg: Background) {
    signal(-bg.pid(), libc::SIGKILL);
    drop(bg);
}

#[test]
fn leftovers_of_killed_runs_go_with_the_next_run_and_live_ones_stay() {
    let dir = fresh_dir("sweep");
    let out = |n: &str| s(&dir.join(n));
    // Each kind of leftover, from a run killed mid-way: output temporaries (record,
    // stat, flamegraph, offcpu) and scratch directories (flamegraph next to its output,
    // offcpu in TMPDIR), the latter holding perf.data's own temporary.
    let runs: [(&[&str], usize); 4] = [
        (
            &[
                "record",
                "-e",
                "cpu-clock",
                "-o",
                &out("r.data"),
                "--",
                "sleep",
                "30",
            ],
            1,
        ),
        (
            &[
                "stat",
                "-e",
                "task-clock",
                "-o",
                &out("s.txt"),
                "--",
                "sleep",
                "30",
            ],
            1,
        ),
        (&["flamegraph", "-o", &out("g.svg"), "--", "sleep", "30"], 2),
        (&["offcpu", "-o", &out("o.svg"), "--", "sleep", "30"], 2),
    ];
    // Each run sweeps what the runs killed before it left; the last one's are swept by
    // the `stat -o` below.
    let mut left = Vec::new();
    let mut scratch = 0;
    for (args, n) in runs {
        let mut bg = start(args, &dir);
        let made = temporaries_of(&mut bg, &dir, n);
        kill(bg);
        for m in &made {
            assert!(dir.join(m).exists(), "SIGKILL leaves {m}");
            scratch += usize::from(m.starts_with(".hwprof-scratch.") && dir.join(m).is_dir());
        }
        left.extend(made);
    }
    assert_eq!(scratch, 2, "{left:?}");

    // A live run's temporaries (output and scratch directory) must survive the sweep.
    // It spins (a command that only sleeps may get no sample, and then no graph).
    let spin = wl("spin");
    let mut live = start(
        &["flamegraph", "-o", &out("live.svg"), "--", &spin, "30000"],
        &dir,
    );
    let kept = temporaries_of(&mut live, &dir, 2);

    // The next run writing here, under another output name, sweeps.
    let r = hwprof(&[
        "stat",
        "-e",
        "task-clock",
        "-o",
        &out("next.txt"),
        "--",
        "true",
    ]);
    r.assert_ok();
    let now = entries(&dir);
    for n in &left {
        assert!(
            !now.contains(n),
            "{n} is still there after the next run: {now:?}"
        );
    }
    for n in &kept {
        assert!(now.contains(n), "the live run's {n} was removed: {now:?}");
    }
    // The live run ends normally (its own temporaries go, its output comes).
    signal(live.pid(), libc::SIGINT);
    let Some((st, _, err)) = live.wait_timeout(TIMEOUT) else {
        panic!("the live flamegraph did not end");
    };
    assert!(st.code().is_some(), "{st:?}\n{err}");
    assert_eq!(entries(&dir), ["live.svg", "next.txt"], "{err}");
    report!(
        "record, stat, flamegraph, offcpu killed with SIGKILL: their temporaries and scratch directories swept by a later stat -o, a live run's kept"
    );
}

/// `report -i -` spools the stream into an unlinked temporary file (O_TMPFILE): killed
/// while reading, it leaves nothing in TMPDIR.
#[test]
fn a_killed_pipe_reader_leaves_no_spool_file() {
    let dir = fresh_dir("sweep_spool");
    let tmp = dir.join("tmp");
    fs::create_dir(&tmp).expect("mkdir");
    let data = dir.join("pipe.data");
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(format!(
        "{} record -e cpu-clock -o - -- {} 200 > {}",
        hwprof_bin(),
        wl("two_hot"),
        s(&data)
    ));
    let r = run_cmd(&mut cmd, TIMEOUT);
    assert!(r.status.success(), "{}", r.dump());
    let bytes = fs::read(&data).expect("read the stream");
    assert!(bytes.len() > 4096, "a short stream: {} bytes", bytes.len());

    let mut child = Command::new(hwprof_bin())
        .args(["report", "-i", "-"])
        .env("TMPDIR", &tmp)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn report");
    let mut stdin = child.stdin.take().expect("stdin");
    // Most of the stream, then nothing: the reader waits for more, its spool open.
    stdin
        .write_all(&bytes[..bytes.len() / 2])
        .expect("write the stream");
    stdin.flush().expect("flush");
    thread::sleep(Duration::from_millis(500));
    let _ = child.kill();
    let _ = child.wait();
    drop(stdin);
    assert_eq!(
        entries(&tmp),
        Vec::<String>::new(),
        "the killed reader left files"
    );
}
