//! `hwprof metrics` without `--perfmon-dir` and without perf: the pinned copy of the
//! published tables, downloaded into the cache and verified. This machine has no
//! internet, so the download is tested against a server on 127.0.0.1 (started and
//! stopped by each test) that serves the fixture files under the paths
//! raw.githubusercontent.com has them (`/intel/perfmon/<commit>/SKL/...`,
//! `/torvalds/linux/<commit>/tools/perf/pmu-events/arch/x86/amdzen4/...`), through
//! `HWPROF_TABLES_URL`. The sums hwprof pins are those of the fixture files.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::run_cmd;
use hwprof_testkit::http::{Reply, Switched};
use serde_json::Value;

const PERFMON_COMMIT: &str = "6dadedf3aa483393943e044ba5ec88a4507cd040";

/// How the server answers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// The file as it is.
    Good,
    /// One byte changed.
    Corrupt,
    /// Half the body, then the connection closed.
    Cut,
    /// A `Content-Length` of 5 GB.
    Huge,
}

/// The server of the fixture files on 127.0.0.1, answering in the mode set last
/// (first [`Mode::Good`]); stopped on drop.
fn tables(fixtures: PathBuf) -> Switched<Mode> {
    Switched::start(Mode::Good, move |mode, path| answer(&fixtures, path, *mode))
}

/// The fixture file of a URL path, as raw.githubusercontent.com lays the repositories.
fn file_of(fixtures: &Path, path: &str) -> Option<PathBuf> {
    let p = path.strip_prefix('/')?;
    if let Some(rest) = p.strip_prefix("intel/perfmon/") {
        let (_commit, file) = rest.split_once('/')?;
        return Some(fixtures.join("perfmon").join(file));
    }
    let rest = p.strip_prefix("torvalds/linux/")?;
    let (_commit, file) = rest.split_once('/')?;
    let file = file.strip_prefix("tools/perf/pmu-events/arch/x86/")?;
    Some(fixtures.join("amd").join(file))
}

/// The answer to `path` in `mode`: the fixture file, or 404.
fn answer(fixtures: &Path, path: &str, mode: Mode) -> Reply {
    let Some(mut body) = file_of(fixtures, path).and_then(|f| std::fs::read(f).ok()) else {
        return Reply::not_found();
    };
    match mode {
        Mode::Good => Reply::ok(body),
        Mode::Corrupt => {
            body[10] ^= 0x20;
            Reply::ok(body)
        }
        Mode::Cut => {
            let len = body.len() as u64;
            body.truncate(body.len() / 2);
            Reply::ok(body).length(len)
        }
        Mode::Huge => Reply::ok(body).length(5_000_000_000),
    }
}

struct Env {
    fixtures: PathBuf,
    scratch: PathBuf,
    cache: PathBuf,
    nobin: PathBuf,
}

fn env(tag: &str) -> Option<Env> {
    let root = hwprof_testkit::fixture_path("perfmon/mapfile.csv")?;
    hwprof_testkit::fixture_path("amd/amdzen4/pipeline.json")?;
    let fixtures = root.parent()?.parent()?.to_path_buf();
    let scratch = common::scratch_path(&format!("metrics_download_{tag}"));
    let _ = std::fs::remove_dir_all(&scratch);
    let cache = scratch.join("cache");
    let nobin = scratch.join("nobin");
    std::fs::create_dir_all(&nobin).expect("scratch");
    Some(Env {
        fixtures,
        scratch,
        cache,
        nobin,
    })
}

impl Env {
    /// `hwprof metrics ARGS` with no perf on PATH, the cache in the scratch folder and
    /// downloads from `url`.
    fn metrics(&self, url: &str, args: &[&str]) -> common::Run {
        let mut cmd = Command::new(common::hwprof_bin());
        cmd.arg("metrics")
            .args(args)
            .env("PATH", &self.nobin)
            .env("XDG_CACHE_HOME", &self.cache)
            .env("HWPROF_TABLES_URL", url)
            .env_remove("HWPROF_PERFMON_DIR");
        run_cmd(&mut cmd, common::TIMEOUT)
    }

    fn counts(&self, name: &str, text: &str) -> String {
        let p = self.scratch.join(name);
        std::fs::write(&p, text).expect("write counts");
        p.display().to_string()
    }

    /// Every file under the cache (temporary ones too).
    fn cached(&self) -> Vec<PathBuf> {
        hwprof_testkit::files_under(&self.cache, &[])
            .into_iter()
            .map(|f| self.cache.join(f))
            .collect()
    }
}

/// name -> value of `--json` output, and the source kind of every line.
fn values(run: &common::Run) -> (BTreeMap<String, Value>, Vec<String>) {
    let mut kinds = Vec::new();
    let v = run
        .stdout
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("json line");
            kinds.push(v["source"].as_str().unwrap_or("").to_string());
            (
                v["name"].as_str().expect("name").to_string(),
                v["value"].clone(),
            )
        })
        .collect();
    kinds.dedup();
    (v, kinds)
}

const SKL_COUNTS: &str = "4000,,IDQ_UOPS_NOT_DELIVERED.CORE,1,100.00,,\n\
    2000,,CPU_CLK_UNHALTED.THREAD_ANY,1,100.00,,\n\
    4000,,CPU_CLK_UNHALTED.THREAD,1,100.00,,\n\
    3000,,UOPS_RETIRED.RETIRE_SLOTS,1,100.00,,\n\
    5000,,UOPS_ISSUED.ANY,1,100.00,,\n\
    100,,INT_MISC.RECOVERY_CYCLES_ANY,1,100.00,,\n\
    100,,INT_MISC.RECOVERY_CYCLES,1,100.00,,\n";

const ZEN4_COUNTS: &str = "1000000,,ls_not_halted_cyc,1,100.00,,\n\
    1200000,,de_no_dispatch_per_slot.no_ops_from_frontend,1,100.00,,\n\
    600000,,cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6/,1,100.00,,\n\
    2000000,,de_no_dispatch_per_slot.backend_stalls,1,100.00,,\n\
    2400000,,ex_ret_ops,1,100.00,,\n";

/// Downloaded once (the source said, in the one line and in `--json`), then read from
/// the cache without a request; the values are those of the same file given with
/// `--perfmon-dir`. Intel (intel/perfmon) and AMD (the kernel's amdzen4) alike.
#[test]
fn download_once_then_cache_with_the_same_values_as_perfmon_dir() {
    let Some(e) = env("ok") else { return };
    let server = tables(e.fixtures.clone());
    let url = server.url();
    for (cpu, counts, dir, file) in [
        (
            "skl",
            e.counts("skl.csv", SKL_COUNTS),
            e.fixtures.join("perfmon"),
            format!("intel/perfmon/{PERFMON_COMMIT}/SKL/metrics/skylake_metrics.json"),
        ),
        (
            "zen4",
            e.counts("zen4.csv", ZEN4_COUNTS),
            e.fixtures.join("amd"),
            "torvalds/linux/037dd1308c6dfa64edd2dfcd1b8177a3f484a124/tools/perf/pmu-events/arch/x86/amdzen4/pipeline.json".to_string(),
        ),
    ] {
        let d = dir.display().to_string();
        let want = e.metrics("", &["--cpu", cpu, "--json", "--counts", &counts, "--perfmon-dir", &d]);
        want.assert_ok();
        let before = server.requests();
        let got = e.metrics(&url, &["--cpu", cpu, "--json", "--counts", &counts]);
        got.assert_ok();
        assert_eq!(server.requests(), before + 1, "one download\n{}", got.dump());
        assert_eq!(got.stderr.lines().count(), 1, "{}", got.dump());
        assert!(
            got.stderr.contains(&format!("downloaded from {url}/{file}, SHA-256 verified, cached in")),
            "{}",
            got.dump()
        );
        let (gv, kinds) = values(&got);
        assert_eq!(kinds, ["download"], "{}", got.stdout);
        assert_eq!(gv, values(&want).0, "{cpu}: the values of --perfmon-dir");
        assert!(gv.values().any(Value::is_f64), "{cpu}: some value\n{}", got.stdout);
        // Again: from the cache, no request.
        let again = e.metrics(&url, &["--cpu", cpu, "--json", "--counts", &counts]);
        again.assert_ok();
        assert_eq!(server.requests(), before + 1, "no second download");
        assert_eq!(values(&again).1, ["cache"]);
        assert!(again.stderr.contains("SHA-256 verified, cached in"), "{}", again.dump());
        assert_eq!(values(&again).0, gv);
    }
    // Exactly the two files, under <cache>/hwprof/{perfmon,linux}/<commit>/..., the
    // bytes of the fixtures.
    let cached = e.cached();
    assert_eq!(cached.len(), 2, "{cached:?}");
    let hw = e.cache.join("hwprof");
    let skl = hw.join(format!(
        "perfmon/{PERFMON_COMMIT}/SKL/metrics/skylake_metrics.json"
    ));
    assert!(cached.contains(&skl), "{cached:?}");
    assert_eq!(
        std::fs::read(&skl).expect("cached"),
        std::fs::read(e.fixtures.join("perfmon/SKL/metrics/skylake_metrics.json"))
            .expect("fixture")
    );
    // A cached copy changed on disk is not used: it is downloaded again.
    std::fs::write(&skl, b"{}").expect("tamper");
    let counts = e.counts("skl.csv", SKL_COUNTS);
    let before = server.requests();
    let run = e.metrics(&url, &["--cpu", "skl", "--json", "--counts", &counts]);
    run.assert_ok();
    assert_eq!(server.requests(), before + 1, "{}", run.dump());
    assert_eq!(values(&run).1, ["download"]);
    assert_eq!(std::fs::metadata(&skl).expect("cached").len(), 431_315);
    let _ = std::fs::remove_dir_all(&e.scratch);
}

/// A wrong, cut or oversized download is refused in one line that names the other
/// sources, and leaves nothing in the cache; a temporary file of a killed run is swept.
#[test]
fn bad_downloads_leave_nothing_and_say_so_in_one_line() {
    let Some(e) = env("bad") else { return };
    let server = tables(e.fixtures.clone());
    let url = server.url();
    let counts = e.counts("skl.csv", SKL_COUNTS);
    // A leftover of a killed run, two hours old, where the file goes.
    let dir = e
        .cache
        .join(format!("hwprof/perfmon/{PERFMON_COMMIT}/SKL/metrics"));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let stale = dir.join(".hwprof-tmp-killed");
    std::fs::write(&stale, b"partial").expect("stale");
    let touched = Command::new("touch")
        .args(["-d", "2 hours ago"])
        .arg(&stale)
        .status()
        .is_ok_and(|s| s.success());
    assert!(touched, "touch -d");
    for (mode, what) in [
        (Mode::Corrupt, "its SHA-256 is"),
        (Mode::Cut, "the transfer failed"),
        (Mode::Huge, "the server announces 5000000000 bytes"),
    ] {
        server.set(mode);
        let run = e.metrics(&url, &["--cpu", "skl", "--counts", &counts]);
        assert_eq!(run.code(), 1, "{mode:?}\n{}", run.dump());
        assert_eq!(run.stderr.lines().count(), 1, "{mode:?}\n{}", run.dump());
        for part in [
            what,
            "--perfmon-dir",
            "install perf",
            "perf is not installed",
        ] {
            assert!(
                run.stderr.contains(part),
                "{mode:?}: {part}\n{}",
                run.dump()
            );
        }
        assert!(run.stdout.is_empty(), "{}", run.dump());
        assert_eq!(e.cached(), Vec::<PathBuf>::new(), "{mode:?}: nothing left");
    }
    // No server, and downloads off: one line each.
    drop(server);
    for (u, what) in [
        (url.as_str(), "downloading http://127.0.0.1"),
        ("", "downloads are off (HWPROF_TABLES_URL is empty)"),
    ] {
        for cpu in ["icl", "zen5"] {
            let run = e.metrics(u, &["--cpu", cpu, "--counts", &counts]);
            assert_eq!(run.code(), 1, "{}", run.dump());
            assert_eq!(run.stderr.lines().count(), 1, "{}", run.dump());
            assert!(run.stderr.contains(what), "{}", run.dump());
            assert!(
                run.stderr.contains("pass --perfmon-dir DIR"),
                "{}",
                run.dump()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&e.scratch);
}
