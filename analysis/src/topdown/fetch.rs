//! The published metric tables, downloaded on demand into a cache and verified.
//!
//! When neither `--perfmon-dir` nor the installed perf has a model's formulas, hwprof
//! uses a pinned copy of the published files: Intel's perfmon repository at commit
//! [`PERFMON_COMMIT`] and the kernel's `tools/perf/pmu-events/arch/x86/amdzen*` files
//! at the commits in [`PINNED`]. Each file has its SHA-256 and size pinned here (the
//! data itself is not in this repository). A file is
//!
//! - looked for in the cache, `$XDG_CACHE_HOME/hwprof` or `~/.cache/hwprof`, as
//!   `perfmon/<commit>/SKL/metrics/skylake_metrics.json` or
//!   `linux/<commit>/tools/perf/pmu-events/arch/x86/amdzen4/pipeline.json`, and used
//!   when its bytes have the pinned sum (the bytes checked are the bytes used);
//! - else downloaded from `$HWPROF_TABLES_URL` (default
//!   `https://raw.githubusercontent.com`; empty: never download) as
//!   `BASE/intel/perfmon/<commit>/<path>` or `BASE/torvalds/linux/<commit>/<path>`:
//!   at most the pinned size (a larger `Content-Length` or body is refused), a stall of
//!   [`READ_TIMEOUT`] or a whole transfer longer than [`MAX_TIME`] is abandoned, the
//!   bytes go to a hidden temporary file beside the target and are renamed into place
//!   only when complete and of the pinned sum: an interrupted or wrong download leaves
//!   nothing behind (temporary files of killed runs are swept after an hour).
//!
//! The cache's folders are made with mode 0700 and never followed through a symbolic
//! link.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The commit of intel/perfmon the pinned Intel files are from.
pub const PERFMON_COMMIT: &str = "6dadedf3aa483393943e044ba5ec88a4507cd040";

/// The environment variable naming the download base URL (empty: never download).
pub const URL_ENV: &str = "HWPROF_TABLES_URL";

/// The default base URL.
pub const DEFAULT_URL: &str = "https://raw.githubusercontent.com";

/// The longest a download may wait for the next bytes.
pub const READ_TIMEOUT: Duration = Duration::from_secs(15);

/// The longest a whole download may take (the largest file is 511 KiB).
pub const MAX_TIME: Duration = Duration::from_secs(60);

/// Where a pinned file comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repo {
    /// github.com/intel/perfmon; cached under `perfmon/`.
    Perfmon,
    /// github.com/torvalds/linux; cached under `linux/`.
    Linux,
}

impl Repo {
    /// The repository (`intel/perfmon`).
    pub fn name(self) -> &'static str {
        match self {
            Repo::Perfmon => "intel/perfmon",
            Repo::Linux => "torvalds/linux",
        }
    }

    fn cache_dir(self) -> &'static str {
        match self {
            Repo::Perfmon => "perfmon",
            Repo::Linux => "linux",
        }
    }
}

/// One published file, pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pinned {
    /// The repository.
    pub repo: Repo,
    /// The commit.
    pub commit: &'static str,
    /// The path inside the repository.
    pub path: &'static str,
    /// Its SHA-256, in hex.
    pub sha256: &'static str,
    /// Its size in bytes.
    pub size: u64,
}

const LINUX_X86: &str = "tools/perf/pmu-events/arch/x86";

macro_rules! perfmon {
    ($path:literal, $sum:literal, $size:literal) => {
        Pinned {
            repo: Repo::Perfmon,
            commit: PERFMON_COMMIT,
            path: $path,
            sha256: $sum,
            size: $size,
        }
    };
}

macro_rules! linux {
    ($commit:literal, $path:literal, $sum:literal, $size:literal) => {
        Pinned {
            repo: Repo::Linux,
            commit: $commit,
            path: concat!("tools/perf/pmu-events/arch/x86/", $path),
            sha256: $sum,
            size: $size,
        }
    };
}

/// Every pinned file: the sums are those of the files at these commits.
#[rustfmt::skip]
pub const PINNED: &[Pinned] = &[
    perfmon!("SKL/metrics/skylake_metrics.json", "78e5ebbfb2d09dfbd8bfdef5319e06299684bb5f52fc04a26e199586276cca88", 431_315),
    perfmon!("SKX/metrics/skylakex_metrics.json", "73ac87cf1d5bd3c2b52596ad78266d59093f259f47e588f10084469d87a6a8d3", 494_829),
    perfmon!("ICL/metrics/icelake_metrics.json", "bd962162f91db69c0f1c90ced8dfc6024994baf16d4fb7c2a83f516c6bd1e7d4", 446_202),
    perfmon!("SPR/metrics/sapphirerapids_metrics.json", "913ed24323626d903296fc726347c7f930eb6a3751bb56fe6c087231de2d44e2", 523_251),
    perfmon!("SKL/events/skylake_core.json", "1c79986fe874bd860f7b428b0660172d93b555ca40242edda36c4ae1cf489ce2", 429_063),
    perfmon!("SKX/events/skylakex_core.json", "060364a7735822c851722fb9c96d0ab126e2b3ac05ee004f5ade094955f8fee2", 400_736),
    perfmon!("ICL/events/icelake_core.json", "750cf1391b4733ec6f6998541f5b2036750640757ef817f2d98980bde660325c", 302_135),
    perfmon!("SPR/events/sapphirerapids_core.json", "82dd46b1d795dc0a1f4a994b8336e6694e50895b2ea9173662eef7d5ded44f72", 371_865),
    linux!("037dd1308c6dfa64edd2dfcd1b8177a3f484a124", "amdzen4/pipeline.json", "e62ee36bfffb3fe48220bfeb91a868ed5568adb7e507033c982a2a44e806e301", 4_522),
    linux!("254a142007114cad7b0a901215c1558e4315d46f", "amdzen4/core.json", "efb5a78c1cd1d4ce3f326bacca966a5476ab762b8dcbabb23b89340ed6ab115f", 3_337),
    linux!("254a142007114cad7b0a901215c1558e4315d46f", "amdzen4/branch.json", "ac8090f9e26304336989ab64f72f79890b5255194e8f4278971fa1ee42e24088", 2_928),
    linux!("6599e683db1bf22fee74302c47e31b9a42a1c3d2", "amdzen4/other.json", "09b93b2f7ba49bf86b3f2f77beca686e09b877561580906e569263d19194d10b", 4_830),
    linux!("a9fe4ac7a3a25f0242406db7aa237850692fb29c", "amdzen5/pipeline.json", "395460243449b2591d817a736f129cc00e1e8624e00dfaaf59e84ece9fd0e945", 4_655),
];

/// The pinned file whose path ends with `suffix` (`SKL/metrics/skylake_metrics.json`,
/// `amdzen4/pipeline.json`).
pub fn pinned(suffix: &str) -> Option<&'static Pinned> {
    PINNED.iter().find(|p| {
        p.path == suffix
            || p.path
                .strip_suffix(suffix)
                .is_some_and(|r| r.ends_with('/'))
    })
}

impl Pinned {
    /// The path inside a cache root.
    pub fn cache_path(&self, root: &Path) -> PathBuf {
        root.join(self.repo.cache_dir())
            .join(self.commit)
            .join(self.path)
    }

    /// The URL under `base`.
    pub fn url(&self, base: &str) -> String {
        format!(
            "{}/{}/{}/{}",
            base.trim_end_matches('/'),
            self.repo.name(),
            self.commit,
            self.path
        )
    }

    /// The short name of the file's origin: `intel/perfmon@6dadedf3`.
    pub fn origin(&self) -> String {
        format!("{}@{}", self.repo.name(), &self.commit[..12])
    }

    /// The part of the path below the model folders' parent (`amdzen4/pipeline.json`).
    pub fn short_path(&self) -> &'static str {
        self.path
            .strip_prefix(LINUX_X86)
            .map_or(self.path, |p| p.trim_start_matches('/'))
    }
}

/// Where the cache is and where to download from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The download base URL; None: never download.
    pub base_url: Option<String>,
    /// The cache root (`~/.cache/hwprof`); None: no cache (no home).
    pub cache: Option<PathBuf>,
}

impl Config {
    /// From the environment: `$HWPROF_TABLES_URL`, `$XDG_CACHE_HOME` or `$HOME`.
    pub fn from_env() -> Config {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        let base_url = match std::env::var(URL_ENV) {
            Ok(v) if v.trim().is_empty() => None,
            Ok(v) => Some(v.trim().to_string()),
            Err(_) => Some(DEFAULT_URL.to_string()),
        };
        let cache = var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .map(|c| c.join("hwprof"));
        Config { base_url, cache }
    }
}

/// Why a pinned file could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// No cache folder (no `$HOME` or `$XDG_CACHE_HOME`).
    #[error("no cache folder (set XDG_CACHE_HOME or HOME)")]
    NoCache,
    /// Not cached, and downloads are off.
    #[error("not cached in {0}, and downloads are off ({URL_ENV} is empty)")]
    Off(String),
    /// The cache cannot be used.
    #[error("cache {path}: {what}")]
    Cache {
        /// The path.
        path: String,
        /// What is wrong.
        what: String,
    },
    /// The download failed.
    #[error("downloading {url} failed: {what}")]
    Download {
        /// The URL.
        url: String,
        /// What went wrong.
        what: String,
    },
}

/// A pinned file's verified bytes and where they are.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The cached file.
    pub path: PathBuf,
    /// Its bytes, of the pinned sum.
    pub bytes: Vec<u8>,
    /// The URL, when it was downloaded by this call.
    pub downloaded_from: Option<String>,
}

/// The SHA-256 of `bytes`, in hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn cache_err(path: &Path, what: impl Into<String>) -> FetchError {
    FetchError::Cache {
        path: path.display().to_string(),
        what: what.into(),
    }
}

/// Creates `dir` below `root` (mode 0700), every component a real folder: a symbolic
/// link anywhere from `root` down is refused, so nothing is written through one.
fn make_dirs(root: &Path, dir: &Path) -> Result<(), FetchError> {
    let rel = dir
        .strip_prefix(root)
        .map_err(|_| cache_err(dir, "outside the cache"))?;
    let mut at = root.to_path_buf();
    let check = |p: &Path| -> Result<(), FetchError> {
        match fs::symlink_metadata(p) {
            Ok(m) if m.file_type().is_symlink() => Err(cache_err(
                p,
                "is a symbolic link: not followed (remove it to let hwprof cache the tables there)",
            )),
            Ok(m) if m.is_dir() => Ok(()),
            Ok(_) => Err(cache_err(p, "is not a folder")),
            Err(e) if e.kind() == io::ErrorKind::NotFound => fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(p)
                .map_err(|e| cache_err(p, e.to_string())),
            Err(e) => Err(cache_err(p, e.to_string())),
        }
    };
    check(&at)?;
    for c in rel.components() {
        at.push(c);
        check(&at)?;
    }
    Ok(())
}

/// The cached copy's bytes, when the cache has the file with the pinned sum. A file of
/// another sum is left for the download to replace.
fn read_cached(p: &Pinned, path: &Path) -> Result<Option<Vec<u8>>, FetchError> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(cache_err(path, e.to_string())),
    };
    if !meta.is_file() {
        return Err(cache_err(path, "is not a regular file"));
    }
    if meta.len() != p.size {
        return Ok(None);
    }
    let mut bytes = Vec::with_capacity(p.size as usize);
    fs::File::open(path)
        .and_then(|f| f.take(p.size + 1).read_to_end(&mut bytes))
        .map_err(|e| cache_err(path, e.to_string()))?;
    Ok((sha256_hex(&bytes) == p.sha256).then_some(bytes))
}

/// Removes hidden temporary files older than an hour from `dir` (left by killed runs;
/// a younger one may be another run's download under way).
fn sweep(dir: &Path) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    let now = SystemTime::now();
    for e in rd.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with(".hwprof-tmp-") {
            continue;
        }
        let old = e
            .metadata()
            .ok()
            .filter(std::fs::Metadata::is_file)
            .and_then(|m| m.modified().ok())
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age > Duration::from_secs(3600));
        if old {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// The pinned file from the cache, else downloaded into it (see the module's notes).
pub fn fetch(p: &Pinned, c: &Config) -> Result<Fetched, FetchError> {
    let root = c.cache.as_deref().ok_or(FetchError::NoCache)?;
    let path = p.cache_path(root);
    let dir = path
        .parent()
        .ok_or_else(|| cache_err(&path, "no folder"))?
        .to_path_buf();
    if let Ok(m) = fs::symlink_metadata(&dir)
        && m.is_dir()
        && let Some(bytes) = read_cached(p, &path)?
    {
        return Ok(Fetched {
            path,
            bytes,
            downloaded_from: None,
        });
    }
    let Some(base) = c.base_url.as_deref() else {
        return Err(FetchError::Off(root.display().to_string()));
    };
    let url = p.url(base);
    let derr = |what: String| FetchError::Download {
        url: url.clone(),
        what,
    };
    make_dirs(root, &dir)?;
    sweep(&dir);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .user_agent(format!("hwprof/{}", env!("CARGO_PKG_VERSION")))
        .timeout_resolve(Some(READ_TIMEOUT))
        .timeout_connect(Some(READ_TIMEOUT))
        .timeout_send_request(Some(READ_TIMEOUT))
        .timeout_recv_response(Some(READ_TIMEOUT))
        .timeout_per_read(Some(READ_TIMEOUT))
        .timeout_global(Some(MAX_TIME))
        .build()
        .into();
    let resp = agent.get(&url).call().map_err(|e| derr(e.to_string()))?;
    match resp.status().as_u16() {
        200 => {}
        code => return Err(derr(format!("HTTP status {code}"))),
    }
    let mut body = resp.into_body();
    if let Some(n) = body.content_length()
        && n != p.size
    {
        return Err(derr(format!(
            "the server announces {n} bytes, the pinned file has {}",
            p.size
        )));
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(".hwprof-tmp-")
        .tempfile_in(&dir)
        .map_err(|e| cache_err(&dir, e.to_string()))?;
    let mut bytes = Vec::with_capacity(p.size as usize);
    let read = body
        .with_config()
        .limit(p.size + 1)
        .reader()
        .read_to_end(&mut bytes);
    if let Err(e) = read {
        let inner = e.get_ref().and_then(|i| i.downcast_ref::<ureq::Error>());
        return Err(derr(match inner {
            Some(ureq::Error::BodyExceedsLimit(_)) => {
                format!("more than the pinned {} bytes", p.size)
            }
            Some(ureq::Error::Timeout(t)) => format!("the transfer stalled or took too long ({t})"),
            _ => format!("the transfer failed: {e}"),
        }));
    }
    if bytes.len() as u64 != p.size {
        return Err(derr(format!(
            "{} bytes, the pinned file has {}",
            bytes.len(),
            p.size
        )));
    }
    let sum = sha256_hex(&bytes);
    if sum != p.sha256 {
        return Err(derr(format!(
            "its SHA-256 is {sum}, not the pinned {}: not used",
            p.sha256
        )));
    }
    tmp.as_file_mut()
        .write_all(&bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| cache_err(&dir, e.to_string()))?;
    tmp.persist(&path)
        .map_err(|e| cache_err(&path, e.error.to_string()))?;
    Ok(Fetched {
        path,
        bytes,
        downloaded_from: Some(url),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_files_paths_and_urls() {
        let p = pinned("SKL/metrics/skylake_metrics.json").expect("pinned");
        assert_eq!(
            p.url("http://127.0.0.1:1/"),
            format!(
                "http://127.0.0.1:1/intel/perfmon/{PERFMON_COMMIT}/SKL/metrics/skylake_metrics.json"
            )
        );
        let z = pinned("amdzen4/pipeline.json").expect("zen4");
        assert_eq!(z.short_path(), "amdzen4/pipeline.json");
        assert_eq!(
            z.cache_path(Path::new("/c")),
            Path::new(
                "/c/linux/037dd1308c6dfa64edd2dfcd1b8177a3f484a124/tools/perf/pmu-events/arch/x86/amdzen4/pipeline.json"
            )
        );
        assert!(
            pinned("zen4/pipeline.json").is_none(),
            "whole path components"
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        for p in PINNED {
            assert_eq!(p.sha256.len(), 64, "{p:?}");
            assert_eq!(p.commit.len(), 40, "{p:?}");
        }
    }

    #[test]
    fn cache_is_verified_and_symlinks_are_not_followed() {
        let t = tempfile::tempdir().expect("tempdir");
        let root = t.path().join("hwprof");
        let p = Pinned {
            repo: Repo::Perfmon,
            commit: PERFMON_COMMIT,
            path: "X/x.json",
            sha256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            size: 3,
        };
        let c = Config {
            base_url: None,
            cache: Some(root.clone()),
        };
        // Nothing cached, downloads off.
        assert!(matches!(fetch(&p, &c), Err(FetchError::Off(_))));
        let path = p.cache_path(&root);
        make_dirs(&root, path.parent().expect("dir")).expect("dirs");
        fs::write(&path, "abd").expect("write");
        assert!(
            matches!(fetch(&p, &c), Err(FetchError::Off(_))),
            "wrong sum"
        );
        fs::write(&path, "abc").expect("write");
        let f = fetch(&p, &c).expect("cached");
        assert_eq!(f.bytes, b"abc");
        assert_eq!(f.downloaded_from, None);
        // A symlinked folder in the cache is refused before anything is written.
        let elsewhere = t.path().join("elsewhere");
        fs::create_dir(&elsewhere).expect("mkdir");
        fs::remove_dir_all(root.join("perfmon")).expect("rm");
        std::os::unix::fs::symlink(&elsewhere, root.join("perfmon")).expect("symlink");
        let c = Config {
            base_url: Some("http://127.0.0.1:9".into()),
            cache: Some(root.clone()),
        };
        let e = fetch(&p, &c).expect_err("symlink");
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        assert_eq!(fs::read_dir(&elsewhere).expect("ls").count(), 0);
    }
}
