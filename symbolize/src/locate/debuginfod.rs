//! A debuginfod client (elfutils' protocol and cache layout), over `ureq`.
//!
//! `GET URL/buildid/HEX/debuginfo` (or `/executable`) of each server of
//! `DEBUGINFOD_URLS` in turn; the first answer is kept in the cache shared with elfutils'
//! tools, `CACHE/HEX/debuginfo` (or `/executable`). The cache is
//! `$DEBUGINFOD_CACHE_PATH`, else `$XDG_CACHE_HOME/debuginfod_client`, else
//! `~/.cache/debuginfod_client` (or the older `~/.debuginfod_client_cache` when that
//! exists), as elfutils chooses it.
//!
//! Invariants:
//! - a cache file is whole: a download goes to a temporary file in the same directory
//!   and is renamed into place only once complete, within `DEBUGINFOD_MAXSIZE`, and an
//!   ELF file with the build id asked for; anything else is deleted;
//! - an empty cache file is elfutils' "not found" mark: a build id that every server
//!   said it does not have is not asked for again for `CACHE/cache_miss_s` seconds (600
//!   by default), and such a mark is written when every server said 404;
//! - each (build id, kind) is asked for once per run, and a server that cannot be
//!   reached (refused, unresolvable, timed out) is not asked again in the run;
//! - a server must start answering within `DEBUGINFOD_TIMEOUT` seconds (90 by default)
//!   and never stall longer than that; `DEBUGINFOD_MAXTIME` bounds a whole download.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use hwprof_sampler::buildid::read_build_id;

use super::{DEFAULT_DEBUGINFOD_TIMEOUT, lock};
use crate::symbolizer::same_build_id;

/// elfutils' default `cache_miss_s`: how long a "not found" mark holds.
const DEFAULT_CACHE_MISS: Duration = Duration::from_secs(600);

/// Settings of the debuginfod client (elfutils' environment variables).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DebuginfodConfig {
    /// Server URLs (`DEBUGINFOD_URLS`, space-separated), without trailing `/`. None: no
    /// client.
    pub urls: Vec<String>,
    /// The cache directory; `None`: no client (there is nowhere to put files).
    pub cache: Option<PathBuf>,
    /// How long a server may take to connect and start answering, and the longest
    /// stall while it sends (`DEBUGINFOD_TIMEOUT`, seconds).
    pub timeout: Duration,
    /// The largest file to download (`DEBUGINFOD_MAXSIZE`, bytes), sent to the server
    /// as `X-DEBUGINFOD-MAXSIZE`.
    pub max_size: Option<u64>,
    /// The longest a whole download may take (`DEBUGINFOD_MAXTIME`, seconds).
    pub max_time: Option<Duration>,
}

impl Default for DebuginfodConfig {
    /// No servers.
    fn default() -> Self {
        DebuginfodConfig {
            urls: Vec::new(),
            cache: None,
            timeout: DEFAULT_DEBUGINFOD_TIMEOUT,
            max_size: None,
            max_time: None,
        }
    }
}

impl DebuginfodConfig {
    /// The settings of elfutils' variables, read through `var`, and notices for values
    /// that were not understood (their defaults are used).
    pub fn from_vars(var: &impl Fn(&str) -> Option<OsString>) -> (DebuginfodConfig, Vec<String>) {
        let text = |k: &str| -> Option<String> {
            var(k)
                .map(|v| v.to_string_lossy().trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let path = |k: &str| var(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let mut notices = Vec::new();
        let mut urls: Vec<String> = Vec::new();
        for u in text("DEBUGINFOD_URLS")
            .unwrap_or_default()
            .split_whitespace()
        {
            let u = u.trim_end_matches('/').to_string();
            if !u.is_empty() && !urls.contains(&u) {
                urls.push(u);
            }
        }
        let home = path("HOME");
        let cache = path("DEBUGINFOD_CACHE_PATH").or_else(|| {
            let legacy = home.as_ref().map(|h| h.join(".debuginfod_client_cache"));
            match legacy {
                Some(l) if l.is_dir() => Some(l),
                _ => path("XDG_CACHE_HOME")
                    .map(|x| x.join("debuginfod_client"))
                    .or_else(|| home.map(|h| h.join(".cache").join("debuginfod_client"))),
            }
        });
        if !urls.is_empty() && cache.is_none() {
            notices.push(
                "debuginfod: no cache directory (HOME is not set): set DEBUGINFOD_CACHE_PATH; \
                 DEBUGINFOD_URLS is ignored"
                    .to_string(),
            );
        }
        let mut number = |k: &str| -> Option<u64> {
            let t = text(k)?;
            match t.parse::<u64>() {
                Ok(n) => Some(n),
                Err(_) => {
                    notices.push(format!(
                        "debuginfod: {k}={t} is not a whole number; using the default"
                    ));
                    None
                }
            }
        };
        let timeout = number("DEBUGINFOD_TIMEOUT")
            .filter(|&s| s > 0)
            .map_or(DEFAULT_DEBUGINFOD_TIMEOUT, Duration::from_secs);
        let max_size = number("DEBUGINFOD_MAXSIZE").filter(|&n| n > 0);
        let max_time = number("DEBUGINFOD_MAXTIME")
            .filter(|&s| s > 0)
            .map(Duration::from_secs);
        let config = DebuginfodConfig {
            urls,
            cache,
            timeout,
            max_size,
            max_time,
        };
        (config, notices)
    }
}

/// What is downloaded: elfutils' artifact types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Debuginfo,
    Executable,
}

impl Kind {
    /// The name in URLs and in the cache.
    fn name(self) -> &'static str {
        match self {
            Kind::Debuginfo => "debuginfo",
            Kind::Executable => "executable",
        }
    }

    /// How notices call it.
    fn what(self) -> &'static str {
        match self {
            Kind::Debuginfo => "debug info",
            Kind::Executable => "the executable",
        }
    }
}

/// The client: servers, cache, and what this run has learnt.
pub(crate) struct Client {
    urls: Vec<String>,
    cache: PathBuf,
    max_size: Option<u64>,
    agent: ureq::Agent,
    /// Servers that could not be reached: not asked again this run.
    dead: Mutex<HashSet<String>>,
    /// The answer for each (build id, kind) asked for this run.
    tried: Mutex<HashMap<(String, Kind), Option<PathBuf>>>,
    /// One download at a time (two threads asking for one file download it once).
    fetching: Mutex<()>,
}

/// Why a server gave no file.
enum Miss {
    /// It answered that it has none (404).
    NotThere,
    /// It answered with another HTTP status (a server error...).
    Status(u16),
    /// It could not be reached, or the transfer failed: not asked again this run.
    Unreachable(String),
    /// What it sent was not the file (too large, not ELF, another build id, cut short),
    /// or it could not be stored.
    Rejected(String),
}

impl Client {
    /// A client for `c`, `None` when there are no servers or no cache directory.
    pub(crate) fn new(c: &DebuginfodConfig) -> Option<Client> {
        if c.urls.is_empty() {
            return None;
        }
        let cache = c.cache.clone()?;
        let t = Some(c.timeout);
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .user_agent(format!("hwprof/{}", env!("CARGO_PKG_VERSION")))
            .timeout_resolve(t)
            .timeout_connect(t)
            .timeout_send_request(t)
            .timeout_recv_response(t)
            .timeout_per_read(t)
            .timeout_global(c.max_time)
            .build()
            .into();
        Some(Client {
            urls: c.urls.clone(),
            cache,
            max_size: c.max_size,
            agent,
            dead: Mutex::new(HashSet::new()),
            tried: Mutex::new(HashMap::new()),
            fetching: Mutex::new(()),
        })
    }

    /// The file of kind `kind` for the build id `hex` (lower-case hex): from the cache,
    /// else downloaded into it. Notices of downloads and failures go to `notices`.
    pub(crate) fn fetch(
        &self,
        hex: &str,
        kind: Kind,
        notices: &mut Vec<String>,
    ) -> Option<PathBuf> {
        if hex.len() < 8 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let key = (hex.to_string(), kind);
        if let Some(found) = lock(&self.tried).get(&key) {
            return found.clone();
        }
        let _one = lock(&self.fetching);
        // Another thread may have fetched it while this one waited.
        if let Some(found) = lock(&self.tried).get(&key) {
            return found.clone();
        }
        let found = self.fetch_uncached(hex, kind, notices);
        lock(&self.tried).insert(key, found.clone());
        found
    }

    fn fetch_uncached(&self, hex: &str, kind: Kind, notices: &mut Vec<String>) -> Option<PathBuf> {
        let dir = self.cache.join(hex);
        let target = dir.join(kind.name());
        let want = unhex(hex)?;
        let cached = std::fs::symlink_metadata(&target)
            .ok()
            .filter(|m| m.file_type().is_file());
        let mut stale_mark = false;
        if let Some(m) = &cached {
            if m.len() > 0 {
                if read_build_id(&target).is_some_and(|have| same_build_id(&have, &want)) {
                    return Some(target);
                }
                // Not the file it should be: fetched again below, and replaced.
            } else {
                // elfutils' "not found" mark, while it holds.
                let age = m
                    .modified()
                    .ok()
                    .and_then(|t| SystemTime::now().duration_since(t).ok());
                if age.is_some_and(|a| a < self.cache_miss()) {
                    return None;
                }
                stale_mark = true;
            }
        }
        let mut all_said_no = true;
        for url in &self.urls {
            if lock(&self.dead).contains(url) {
                all_said_no = false;
                continue;
            }
            match self.download(url, hex, &want, kind, &dir, &target) {
                Ok(bytes) => {
                    notices.push(format!(
                        "fetched {} for build id {hex} from {url} ({} KB)",
                        kind.what(),
                        bytes.div_ceil(1024)
                    ));
                    return Some(target);
                }
                Err(Miss::NotThere) => {}
                Err(Miss::Status(code)) => {
                    all_said_no = false;
                    notices.push(format!(
                        "debuginfod server {url} answered HTTP {code} for {} of build id {hex}",
                        kind.what()
                    ));
                }
                Err(Miss::Unreachable(why)) => {
                    all_said_no = false;
                    lock(&self.dead).insert(url.clone());
                    notices.push(format!(
                        "debuginfod server {url} unreachable: {why}; not asked again in this run"
                    ));
                }
                Err(Miss::Rejected(why)) => {
                    all_said_no = false;
                    notices.push(format!(
                        "debuginfod server {url}: {} for build id {hex} not used: {why}",
                        kind.what()
                    ));
                }
            }
        }
        if all_said_no {
            // elfutils' "not found" mark: an empty file, created whole or not at all
            // (an expired one is replaced, so that it holds from now).
            if stale_mark {
                let _ = std::fs::remove_file(&target);
            }
            if ensure_dir(&dir).is_ok() {
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&target);
            }
        }
        None
    }

    /// How long a "not found" mark holds: `CACHE/cache_miss_s`, else 600 s.
    fn cache_miss(&self) -> Duration {
        hwprof_pmu::file::read_to_string(&self.cache.join("cache_miss_s"), 64)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
            .map_or(DEFAULT_CACHE_MISS, Duration::from_secs)
    }

    /// Downloads `URL/buildid/HEX/KIND` into `target` (through a temporary file in
    /// `dir`); the size in bytes.
    fn download(
        &self,
        url: &str,
        hex: &str,
        want: &[u8],
        kind: Kind,
        dir: &Path,
        target: &Path,
    ) -> Result<u64, Miss> {
        let full = format!("{url}/buildid/{hex}/{}", kind.name());
        let mut req = self.agent.get(&full);
        if let Some(max) = self.max_size {
            req = req.header("X-DEBUGINFOD-MAXSIZE", max.to_string());
        }
        let resp = req.call().map_err(|e| match e {
            ureq::Error::BadUri(_) | ureq::Error::Http(_) => {
                Miss::Unreachable(format!("not a URL ({e})"))
            }
            e => Miss::Unreachable(e.to_string()),
        })?;
        match resp.status().as_u16() {
            200 => {}
            404 => return Err(Miss::NotThere),
            code => return Err(Miss::Status(code)),
        }
        let limit = self.max_size.unwrap_or(u64::MAX);
        let mut body = resp.into_body();
        if body.content_length().is_some_and(|n| n > limit) {
            return Err(Miss::Rejected(format!(
                "larger than DEBUGINFOD_MAXSIZE ({limit} bytes)"
            )));
        }
        ensure_dir(dir)
            .map_err(|e| Miss::Rejected(format!("cannot create {}: {e}", dir.display())))?;
        let mut tmp = tempfile::Builder::new()
            .prefix(&format!(".{}.", kind.name()))
            .tempfile_in(dir)
            .map_err(|e| Miss::Rejected(format!("cannot write in {}: {e}", dir.display())))?;
        let mut reader = body.with_config().limit(limit.saturating_add(1)).reader();
        let copied = io::copy(&mut reader, tmp.as_file_mut());
        let bytes = match copied {
            Ok(n) => n,
            Err(e) => {
                // A body over the limit, a stall, a cut transfer: nothing is kept, and a
                // server that stalls is not waited for again.
                let inner = e.get_ref().and_then(|i| i.downcast_ref::<ureq::Error>());
                return Err(match inner {
                    Some(ureq::Error::BodyExceedsLimit(_)) => {
                        Miss::Rejected(format!("larger than DEBUGINFOD_MAXSIZE ({limit} bytes)"))
                    }
                    Some(ureq::Error::Timeout(_)) => {
                        Miss::Unreachable(format!("transfer stalled: {e}"))
                    }
                    _ if e.kind() == io::ErrorKind::TimedOut => {
                        Miss::Unreachable(format!("transfer stalled: {e}"))
                    }
                    _ => Miss::Rejected(format!("the transfer failed: {e}")),
                });
            }
        };
        if bytes > limit {
            return Err(Miss::Rejected(format!(
                "larger than DEBUGINFOD_MAXSIZE ({limit} bytes)"
            )));
        }
        tmp.as_file_mut()
            .flush()
            .and_then(|()| tmp.as_file().sync_all())
            .map_err(|e| Miss::Rejected(format!("cannot write in {}: {e}", dir.display())))?;
        match read_build_id(tmp.path()) {
            Some(have) if same_build_id(&have, want) => {}
            Some(have) => {
                return Err(Miss::Rejected(format!(
                    "it has build id {}",
                    super::hex(&have)
                )));
            }
            None => return Err(Miss::Rejected("not an ELF file with a build id".into())),
        }
        tmp.persist(target).map_err(|e| {
            Miss::Rejected(format!("cannot store {}: {}", target.display(), e.error))
        })?;
        Ok(bytes)
    }
}

/// Creates `dir` and its parents (mode 0700, as elfutils makes its cache).
fn ensure_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Bytes of a hex string.
fn unhex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}
