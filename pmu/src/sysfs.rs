//! What the running kernel exposes: PMUs under `/sys/bus/event_source/devices` (type
//! numbers, formats, event aliases, caps) and tracepoints under tracefs.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::Format;

/// Where the kernel lists PMUs.
pub const PMU_ROOT: &str = "/sys/bus/event_source/devices";

/// One PMU as sysfs describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pmu {
    /// Directory name: `cpu`, `software`, `msr`, `cpu_core`...
    pub name: String,
    /// `type`: what goes into `perf_event_attr.type`.
    pub type_: u32,
    /// Format terms.
    pub format: Format,
    /// Event aliases (`events/NAME` files): name and term text (`event=0x00`).
    pub aliases: Vec<(String, String)>,
}

impl Pmu {
    /// Reads one PMU directory.
    pub fn read(dir: &Path) -> Option<Pmu> {
        Pmu::read_noting(dir, &mut None)
    }

    /// [`Pmu::read`], keeping in `fds` the errno of a read that failed for want of
    /// file descriptors (EMFILE, ENFILE): the PMU is then missing or incomplete, and
    /// that is why.
    pub fn read_noting(dir: &Path, fds: &mut Option<i32>) -> Option<Pmu> {
        let name = dir.file_name()?.to_str()?.to_string();
        let type_ = note_fds(fs::read_to_string(dir.join("type")), fds)?
            .trim()
            .parse()
            .ok()?;
        let mut pairs = Vec::new();
        for (n, text) in read_dir_files(&dir.join("format"), fds) {
            pairs.push((n, text));
        }
        let refs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let format = Format::from_pairs(&refs);
        let aliases = read_dir_files(&dir.join("events"), fds)
            .into_iter()
            .filter(|(n, _)| !n.contains('.')) // skip NAME.unit / NAME.scale companions
            .map(|(n, t)| (n, t.trim().to_string()))
            .collect();
        Some(Pmu {
            name,
            type_,
            format,
            aliases,
        })
    }

    /// The alias of that name (case-insensitive).
    pub fn alias(&self, name: &str) -> Option<&str> {
        self.aliases
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, t)| t.as_str())
    }
}

/// `r` as an option, noting in `fds` an error that says file descriptors ran out.
fn note_fds<T>(r: std::io::Result<T>, fds: &mut Option<i32>) -> Option<T> {
    r.map_err(|e| {
        if let Some(n @ (libc::EMFILE | libc::ENFILE)) = e.raw_os_error() {
            fds.get_or_insert(n);
        }
    })
    .ok()
}

fn read_dir_files(dir: &Path, fds: &mut Option<i32>) -> Vec<(String, String)> {
    let Some(rd) = note_fds(fs::read_dir(dir), fds) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = rd
        .filter_map(|e| {
            let e = e.ok()?;
            let n = e.file_name().into_string().ok()?;
            let t = note_fds(fs::read_to_string(e.path()), fds)?;
            Some((n, t))
        })
        .collect();
    out.sort();
    out
}

/// All PMUs of this machine, sorted by name. Empty when sysfs is not there.
pub fn pmus() -> Vec<Pmu> {
    pmus_in(Path::new(PMU_ROOT))
}

/// [`pmus`], with the errno (EMFILE, ENFILE) when reading them ran out of file
/// descriptors: the list is then incomplete.
pub fn pmus_noting_fds() -> (Vec<Pmu>, Option<i32>) {
    pmus_in_noting(Path::new(PMU_ROOT))
}

/// All PMUs under `root` (tests point this at a fake tree).
pub fn pmus_in(root: &Path) -> Vec<Pmu> {
    pmus_in_noting(root).0
}

fn pmus_in_noting(root: &Path) -> (Vec<Pmu>, Option<i32>) {
    let mut fds = None;
    let Some(rd) = note_fds(fs::read_dir(root), &mut fds) else {
        return (Vec::new(), fds);
    };
    let mut v: Vec<Pmu> = rd
        .filter_map(|e| Pmu::read_noting(&e.ok()?.path(), &mut fds))
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    (v, fds)
}

/// Whether this kernel exposes a core CPU PMU (`cpu`, or hybrid `cpu_core`/`cpu_atom`).
pub fn has_cpu_pmu(pmus: &[Pmu]) -> bool {
    pmus.iter().any(|p| {
        matches!(
            p.name.as_str(),
            "cpu" | "cpu_core" | "cpu_atom" | "armv8_pmuv3"
        )
    })
}

/// Online CPUs, from `/sys/devices/system/cpu/online`.
pub fn online_cpus() -> Vec<u32> {
    fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse_cpu_list(s.trim()).ok())
        .unwrap_or_else(|| {
            (0..std::thread::available_parallelism().map_or(1, |n| n.get() as u32)).collect()
        })
}

/// Parses a CPU list such as `0-3,8,10-11`.
pub fn parse_cpu_list(s: &str) -> std::result::Result<Vec<u32>, String> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("bad CPU list '{s}': expected e.g. 0-3,8");
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) =
                    (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if a > b {
                    return Err(bad());
                }
                v.extend(a..=b);
            }
            None => v.push(part.parse().map_err(|_| bad())?),
        }
    }
    if v.is_empty() {
        return Err(format!("empty CPU list '{s}'"));
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// The kernel's `perf_event_paranoid` setting, if readable.
pub fn paranoid() -> Option<i32> {
    fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Tracefs mount points to look at, in order.
const TRACEFS_CANDIDATES: &[&str] = &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// The environment variable that points hwprof at another tracefs (tests use it).
pub const TRACEFS_VAR: &str = "HWPROF_TRACEFS";

/// What a look at one tracefs mount point found.
#[derive(Debug)]
enum Found {
    /// `events/` is there.
    Ready,
    /// The path does not exist.
    Missing,
    /// The path exists but is not a directory, or has no `events/`; `empty` when it is
    /// an empty directory (nothing mounted there).
    NoEvents { empty: bool },
    /// This user may not look: a denial on the path or inside it.
    Denied(Error),
    /// Another error looking at it.
    Failed(std::io::Error),
}

/// Looks at `dir` as a tracefs: never mounts, never follows anything but the path.
fn look(dir: &Path) -> Found {
    use std::io::ErrorKind as K;
    match fs::metadata(dir) {
        Err(e) if e.kind() == K::NotFound => return Found::Missing,
        Err(e) if e.kind() == K::PermissionDenied => return Found::Denied(denied(dir, dir)),
        Err(e) => return Found::Failed(e),
        Ok(m) if !m.is_dir() => return Found::NoEvents { empty: false },
        Ok(_) => {}
    }
    match fs::metadata(dir.join("events")) {
        Ok(m) if m.is_dir() => Found::Ready,
        Ok(_) => Found::NoEvents { empty: false },
        Err(e) if e.kind() == K::PermissionDenied => {
            Found::Denied(denied(&dir.join("events"), dir))
        }
        Err(e) if e.kind() == K::NotFound => Found::NoEvents {
            empty: fs::read_dir(dir).is_ok_and(|mut rd| rd.next().is_none()),
        },
        Err(e) => Found::Failed(e),
    }
}

/// The error for a permission denial met on `path` inside the tracefs at `mount`: it
/// names the directory or file that refused (the nearest one this user can see, with
/// its mode and owner) and the way out, as perf does.
pub fn denied(path: &Path, mount: &Path) -> Error {
    use std::os::unix::fs::MetadataExt;
    // A denial on stat(path) means a directory above it cannot be searched: name the
    // nearest one whose mode this user can read.
    let (at, m) = match fs::metadata(path) {
        Ok(m) => (path.to_path_buf(), Some(m)),
        Err(_) => path
            .ancestors()
            .skip(1)
            .find_map(|a| fs::metadata(a).ok().map(|m| (a.to_path_buf(), Some(m))))
            .unwrap_or_else(|| (path.to_path_buf(), None)),
    };
    let who = |id: u32| {
        if id == 0 {
            "root".to_string()
        } else {
            id.to_string()
        }
    };
    let mode = m.map_or_else(String::new, |m| {
        format!(
            " (mode {:o}, owner {}:{})",
            m.mode() & 0o7777,
            who(m.uid()),
            who(m.gid())
        )
    });
    Error::TracefsDenied {
        path: format!("{}{mode}", at.display()),
        mount: mount.display().to_string(),
    }
}

/// Finds tracefs; when it is not mounted and we are root, mounts it at
/// `/sys/kernel/tracing` (as perf does via its debugfs helpers). Each failure says its
/// own cause: `HWPROF_TRACEFS` naming a missing or wrong directory, permission denied
/// (not root, tracefs mounted mode 700), a kernel without tracefs, not mounted and not
/// root, mounting failed.
pub fn tracefs() -> Result<PathBuf> {
    if let Ok(p) = std::env::var(TRACEFS_VAR) {
        let dir = PathBuf::from(&p);
        return match look(&dir) {
            Found::Ready => Ok(dir),
            Found::Denied(e) => Err(e),
            Found::Missing => Err(Error::NoTracefs(format!(
                "{TRACEFS_VAR}={p} does not exist: point it at a mounted tracefs, or unset it"
            ))),
            Found::NoEvents { .. } => Err(Error::NoTracefs(format!(
                "{TRACEFS_VAR}={p} has no events/ directory: point it at a mounted tracefs, or unset it"
            ))),
            Found::Failed(e) => Err(Error::io(format!("looking at {TRACEFS_VAR}={p}"), e)),
        };
    }
    let mut denied = None;
    let mut mount_points = Vec::new();
    for c in TRACEFS_CANDIDATES {
        match look(Path::new(c)) {
            Found::Ready => return Ok(PathBuf::from(c)),
            Found::Denied(e) => {
                denied.get_or_insert(e);
            }
            Found::NoEvents { empty: true } => mount_points.push(*c),
            Found::Missing | Found::NoEvents { empty: false } | Found::Failed(_) => {}
        }
    }
    if let Some(e) = denied {
        return Err(e);
    }
    let target = TRACEFS_CANDIDATES[0];
    if !Path::new(target).is_dir() {
        return Err(Error::NoTracefs(format!(
            "{target} does not exist: this kernel has no tracefs (it needs CONFIG_TRACING)"
        )));
    }
    if !mount_points.contains(&target) {
        return Err(Error::NoTracefs(format!(
            "{target} has no events/ directory: is tracefs mounted there, in a kernel with CONFIG_EVENT_TRACING?"
        )));
    }
    if crate::sys::euid() != 0 {
        return Err(Error::NoTracefs(format!(
            "it is not mounted, and only root can mount it: `sudo mount -t tracefs nodev {target}`"
        )));
    }
    crate::sys::mount_tracefs(target).map_err(|e| {
        Error::NoTracefs(format!(
            "it is not mounted, and mounting it at {target} failed: {}",
            crate::error::io_text(&e)
        ))
    })?;
    match look(Path::new(target)) {
        Found::Ready => Ok(PathBuf::from(target)),
        _ => Err(Error::NoTracefs(format!(
            "mounted at {target}, but it has no events/ directory (a kernel without CONFIG_EVENT_TRACING?)"
        ))),
    }
}

/// Finds a mounted tracefs with an `events/` directory, without mounting anything.
pub fn find_tracefs() -> Option<PathBuf> {
    if let Ok(p) = std::env::var(TRACEFS_VAR) {
        let p = PathBuf::from(p);
        return matches!(look(&p), Found::Ready).then_some(p);
    }
    TRACEFS_CANDIDATES
        .iter()
        .map(PathBuf::from)
        .find(|p| matches!(look(p), Found::Ready))
}

/// The id of tracepoint `sys:name`, from `events/sys/name/id`.
pub fn tracepoint_id(tracefs: &Path, sys: &str, name: &str) -> Result<u64> {
    let p = tracefs.join("events").join(sys).join(name).join("id");
    match fs::read_to_string(&p) {
        Ok(s) => s.trim().parse().map_err(|_| {
            Error::io(
                format!("reading {}", p.display()),
                std::io::ErrorKind::InvalidData.into(),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let all = tracepoints(tracefs);
            let full = format!("{sys}:{name}");
            let suggestion = crate::error::nearest(&full, all.iter().map(String::as_str));
            Err(Error::UnknownTracepoint {
                name: full,
                suggestion,
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(denied(&p, tracefs)),
        Err(e) => Err(Error::io(format!("reading {}", p.display()), e)),
    }
}

/// Every tracepoint as `sys:name`, sorted.
pub fn tracepoints(tracefs: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(systems) = fs::read_dir(tracefs.join("events")) else {
        return out;
    };
    for s in systems.flatten() {
        if !s.path().is_dir() {
            continue;
        }
        let sys = s.file_name().to_string_lossy().into_owned();
        let Ok(evs) = fs::read_dir(s.path()) else {
            continue;
        };
        for e in evs.flatten() {
            if e.path().join("id").is_file() {
                out.push(format!("{sys}:{}", e.file_name().to_string_lossy()));
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,8").unwrap(), vec![0, 1, 2, 3, 8]);
        assert_eq!(parse_cpu_list("1").unwrap(), vec![1]);
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("x").is_err());
    }

    #[test]
    fn tells_tracefs_failures_apart() {
        let d = std::env::temp_dir().join(format!("hwprof-tracefs-{}", std::process::id()));
        fs::create_dir_all(d.join("empty")).unwrap();
        fs::create_dir_all(d.join("full/events")).unwrap();
        fs::create_dir_all(d.join("other/x")).unwrap();
        fs::write(d.join("file"), "").unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(d.join("other"), fs::Permissions::from_mode(0o750)).unwrap();
        }
        let e = denied(&d.join("other"), &d).to_string();
        let found: Vec<Found> = ["missing", "empty", "full", "other", "file"]
            .iter()
            .map(|n| look(&d.join(n)))
            .collect();
        fs::remove_dir_all(&d).unwrap();
        assert!(matches!(found[0], Found::Missing), "{found:?}");
        assert!(
            matches!(found[1], Found::NoEvents { empty: true }),
            "{found:?}"
        );
        assert!(matches!(found[2], Found::Ready), "{found:?}");
        assert!(
            matches!(found[3], Found::NoEvents { empty: false }),
            "{found:?}"
        );
        assert!(
            matches!(found[4], Found::NoEvents { empty: false }),
            "{found:?}"
        );
        let other = format!(
            "permission denied on {} (mode 750, owner ",
            d.join("other").display()
        );
        assert!(e.starts_with(&other), "{e}");
        let remount = format!("sudo mount -o remount,mode=755,gid=GROUP {}`", d.display());
        assert!(e.contains(&remount), "{e}");
    }

    #[test]
    fn reads_a_pmu_tree() {
        let d = std::env::temp_dir().join(format!("hwprof-sysfs-{}", std::process::id()));
        let m = d.join("msr");
        fs::create_dir_all(m.join("format")).unwrap();
        fs::create_dir_all(m.join("events")).unwrap();
        fs::write(m.join("type"), "8\n").unwrap();
        fs::write(m.join("format/event"), "config:0-63\n").unwrap();
        fs::write(m.join("events/tsc"), "event=0x00\n").unwrap();
        fs::write(m.join("events/tsc.unit"), "cycles\n").unwrap();
        let pmus = pmus_in(&d);
        fs::remove_dir_all(&d).unwrap();
        assert_eq!(pmus.len(), 1);
        assert_eq!(pmus[0].type_, 8);
        assert_eq!(pmus[0].alias("TSC"), Some("event=0x00"));
        assert_eq!(pmus[0].aliases.len(), 1);
        assert!(!has_cpu_pmu(&pmus));
    }
}
