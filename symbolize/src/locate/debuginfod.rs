//! A debuginfod client (elfutils' protocol and cache layout), over `ureq`.
//!
//! `GET URL/buildid/HEX/debuginfo` (or `/executable`) of each server of
//! `DEBUGINFOD_URLS` in turn; the first answer is kept in the cache shared with elfutils'
//! tools, `CACHE/HEX/debuginfo` (or `/executable`). The cache is
//! `$DEBUGINFOD_CACHE_PATH`, else `$XDG_CACHE_HOME/debuginfod_client`, else
//! `~/.cache/debuginfod_client` (or the older `~/.debuginfod_client_cache` when that
//! exists), as elfutils chooses it; how it is opened, written and cleaned is
//! [`super::cache`]'s.
//!
//! Invariants:
//! - a cache file is whole: a download goes to a temporary file in the same directory
//!   and is renamed into place only once complete, within the size limit, an ELF file
//!   with the build id asked for, and within [`crate::elfcheck`]'s bounds; anything else
//!   is deleted (and temporaries of killed runs are swept by the next one);
//! - a cached file that fails [`crate::elfcheck`] is deleted, not used;
//! - an empty cache file is elfutils' "not found" mark: a build id that every server
//!   said it does not have is not asked for again while the mark is at most
//!   `CACHE/cache_miss_s` seconds old (600 by default), and such a mark is written when
//!   every server said 404;
//! - each (build id, kind) is asked for once per run, and a server that cannot be
//!   reached (refused, unresolvable, timed out, too slow) is not asked again in the run;
//! - downloads are bounded: at most `DEBUGINFOD_MAXSIZE` bytes ([`DEFAULT_MAXSIZE`],
//!   1 GiB, when unset; `0` lifts the limit, as in elfutils), refused from the
//!   `Content-Length` when it says more and cut when the body goes past; a server must
//!   start answering within `DEBUGINFOD_TIMEOUT` seconds (90 by default) and then send
//!   at least 100 KiB per second over every `DEBUGINFOD_TIMEOUT` seconds (elfutils'
//!   `CURLOPT_LOW_SPEED_LIMIT`/`_TIME`), and `DEBUGINFOD_MAXTIME` bounds a whole
//!   download.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::cache::{self, Cache, Found};
use super::{DEFAULT_DEBUGINFOD_TIMEOUT, lock};
use crate::buildid::BuildId;

/// The size limit of a download when `DEBUGINFOD_MAXSIZE` is unset: 1 GiB. Debug files
/// are mostly a few megabytes (libc's is 4 MB, compressed as distributions ship them);
/// the largest ones servers hold (a browser's or a compiler's shared library) run to
/// some hundreds of megabytes. Set `DEBUGINFOD_MAXSIZE` for more, or `0` for no limit.
pub const DEFAULT_MAXSIZE: u64 = 1 << 30;

/// elfutils' `CURLOPT_LOW_SPEED_LIMIT`: a transfer slower than this (bytes per second)
/// over a whole `DEBUGINFOD_TIMEOUT` is abandoned.
pub const LOW_SPEED_LIMIT: u64 = 100 * 1024;

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
    /// The largest file to download (`DEBUGINFOD_MAXSIZE`, bytes; [`DEFAULT_MAXSIZE`]
    /// when unset, `u64::MAX` for `0`: no limit), sent to the server as
    /// `X-DEBUGINFOD-MAXSIZE`.
    pub max_size: u64,
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
            max_size: DEFAULT_MAXSIZE,
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
        // elfutils: 0 (or unset) is no limit; unset is the default limit here.
        let max_size = match number("DEBUGINFOD_MAXSIZE") {
            None => DEFAULT_MAXSIZE,
            Some(0) => u64::MAX,
            Some(n) => n,
        };
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
    cache_path: PathBuf,
    /// The cache, opened (and cleaned) on the first lookup; `None`: not usable.
    cache: OnceLock<Option<Cache>>,
    max_size: u64,
    timeout: Duration,
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
    /// It could not be reached, stalled or was too slow: not asked again this run.
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
            cache_path: cache,
            cache: OnceLock::new(),
            max_size: c.max_size,
            timeout: c.timeout,
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

    /// The cache, opened and cleaned on first use; a notice when it cannot be used.
    fn cache(&self, notices: &mut Vec<String>) -> Option<&Cache> {
        self.cache
            .get_or_init(|| match Cache::open(&self.cache_path) {
                Ok(c) => {
                    c.clean();
                    Some(c)
                }
                Err(why) => {
                    notices.push(format!(
                        "debuginfod: cache {} not used: {why}; nothing is downloaded \
                         (set DEBUGINFOD_CACHE_PATH to a directory of your own)",
                        self.cache_path.display()
                    ));
                    None
                }
            })
            .as_ref()
    }

    fn fetch_uncached(&self, hex: &str, kind: Kind, notices: &mut Vec<String>) -> Option<PathBuf> {
        let cache = self.cache(notices)?;
        let name = kind.name();
        let want = BuildId::from_hex(hex)?;
        let entry = match cache.entry(hex, false) {
            Ok(e) => e,
            Err(why) => {
                notices.push(format!("debuginfod: {why}; build id {hex} is not fetched"));
                return None;
            }
        };
        let mut stale_mark = false;
        if let Some(entry) = &entry {
            entry.sweep(name);
            match entry.look(name) {
                Some(Found::File { size: 0, mtime }) => {
                    // elfutils' "not found" mark, while it holds (its test, to the
                    // second).
                    let miss = cache
                        .setting(cache::CACHE_MISS)
                        .map_or(cache::CACHE_MISS.1, |(n, _)| n);
                    if cache::now_secs().saturating_sub(mtime) <= miss {
                        return None;
                    }
                    stale_mark = true;
                }
                Some(Found::File { .. }) => {
                    let p = entry.file_path(name);
                    if BuildId::read(&p).is_some_and(|have| have.same(&want)) {
                        match crate::elfcheck::check(&p) {
                            Ok(()) => return Some(p),
                            Err(why) => {
                                entry.remove(name);
                                notices.push(format!(
                                    "debuginfod: removed {} from the cache: {why}",
                                    p.display()
                                ));
                            }
                        }
                    }
                    // Not the file it should be: fetched again below, and replaced.
                }
                // A link or anything else is never read; a download replaces it.
                Some(Found::Other) | None => {}
            }
        }
        let mut all_said_no = true;
        for url in &self.urls {
            if lock(&self.dead).contains(url) {
                all_said_no = false;
                continue;
            }
            match self.download(url, hex, &want, kind, cache) {
                Ok((bytes, path)) => {
                    notices.push(format!(
                        "fetched {} for build id {hex} from {url} ({} KB)",
                        kind.what(),
                        bytes.div_ceil(1024)
                    ));
                    return Some(path);
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
            if let Ok(Some(entry)) = cache.entry(hex, true) {
                if stale_mark {
                    entry.remove(name);
                }
                entry.mark(name);
            }
        }
        None
    }

    /// Downloads `URL/buildid/HEX/KIND` into the cache (through a temporary file in
    /// `CACHE/HEX`): its size in bytes and its path.
    fn download(
        &self,
        url: &str,
        hex: &str,
        want: &BuildId,
        kind: Kind,
        cache: &Cache,
    ) -> Result<(u64, PathBuf), Miss> {
        let full = format!("{url}/buildid/{hex}/{}", kind.name());
        let limit = self.max_size;
        let mut req = self.agent.get(&full);
        if limit != u64::MAX {
            req = req.header("X-DEBUGINFOD-MAXSIZE", limit.to_string());
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
        let too_large = |n: Option<u64>| {
            let size = n.map(|n| format!("{n} bytes, ")).unwrap_or_default();
            Miss::Rejected(format!(
                "{size}larger than DEBUGINFOD_MAXSIZE ({limit} bytes{})",
                if limit == DEFAULT_MAXSIZE {
                    ", the default"
                } else {
                    ""
                }
            ))
        };
        let mut body = resp.into_body();
        if let Some(n) = body.content_length().filter(|&n| n > limit) {
            return Err(too_large(Some(n)));
        }
        let name = kind.name();
        let entry = cache
            .entry(hex, true)
            .map_err(Miss::Rejected)?
            .ok_or_else(|| Miss::Rejected(format!("cannot create {}", cache.root().display())))?;
        entry.sweep(name);
        let mut tmp = entry.temp(name).map_err(|e| {
            Miss::Rejected(format!("cannot write in {}: {e}", cache.root().display()))
        })?;
        let reader = body.with_config().limit(limit.saturating_add(1)).reader();
        let mut paced = Paced::new(reader, self.timeout);
        let bytes = match io::copy(&mut paced, &mut tmp.file) {
            Ok(n) => n,
            Err(e) => {
                // A body over the limit, a stall, a crawl, a cut transfer: nothing is
                // kept, and a server that stalls or crawls is not waited for again.
                let inner = e.get_ref().and_then(|i| i.downcast_ref::<ureq::Error>());
                return Err(match inner {
                    Some(ureq::Error::BodyExceedsLimit(_)) => too_large(None),
                    Some(ureq::Error::Timeout(_)) => {
                        Miss::Unreachable(format!("transfer stalled: {e}"))
                    }
                    _ if e.kind() == io::ErrorKind::TimedOut => {
                        Miss::Unreachable(format!("transfer stalled: {e}"))
                    }
                    _ if paced.too_slow => Miss::Unreachable(e.to_string()),
                    _ => Miss::Rejected(format!("the transfer failed: {e}")),
                });
            }
        };
        if bytes > limit {
            return Err(too_large(None));
        }
        tmp.file
            .flush()
            .and_then(|()| tmp.file.sync_all())
            .map_err(|e| {
                Miss::Rejected(format!("cannot write in {}: {e}", cache.root().display()))
            })?;
        let tmp_path = tmp.path();
        match BuildId::read(&tmp_path) {
            Some(have) if have.same(want) => {}
            Some(have) => return Err(Miss::Rejected(format!("it has build id {have}"))),
            None => return Err(Miss::Rejected("not an ELF file with a build id".into())),
        }
        crate::elfcheck::check(&tmp_path).map_err(|why| Miss::Rejected(why.to_string()))?;
        tmp.persist(name).map_err(|e| {
            Miss::Rejected(format!(
                "cannot store {}: {e}",
                entry.file_path(name).display()
            ))
        })?;
        Ok((bytes, entry.file_path(name)))
    }
}

/// A body reader that fails once fewer than [`LOW_SPEED_LIMIT`] bytes per second came
/// over a whole `window` (elfutils' low-speed limit over `DEBUGINFOD_TIMEOUT`).
struct Paced<R> {
    inner: R,
    window: Duration,
    start: Instant,
    bytes: u64,
    too_slow: bool,
}

impl<R> Paced<R> {
    fn new(inner: R, window: Duration) -> Paced<R> {
        Paced {
            inner,
            window,
            start: Instant::now(),
            bytes: 0,
            too_slow: false,
        }
    }
}

impl<R: Read> Read for Paced<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        let elapsed = self.start.elapsed();
        if n > 0 && elapsed >= self.window {
            let need = LOW_SPEED_LIMIT.saturating_mul(self.window.as_secs().max(1));
            if self.bytes < need {
                self.too_slow = true;
                return Err(io::Error::other(format!(
                    "transfer slower than {} KB/s for {} s (DEBUGINFOD_TIMEOUT)",
                    LOW_SPEED_LIMIT / 1024,
                    self.window.as_secs()
                )));
            }
            self.start = Instant::now();
            self.bytes = 0;
        }
        Ok(n)
    }
}
