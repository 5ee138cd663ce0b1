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
        let name = dir.file_name()?.to_str()?.to_string();
        let type_ = fs::read_to_string(dir.join("type"))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let mut pairs = Vec::new();
        for (n, text) in read_dir_files(&dir.join("format")) {
            pairs.push((n, text));
        }
        let refs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let format = Format::from_pairs(&refs);
        let aliases = read_dir_files(&dir.join("events"))
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

fn read_dir_files(dir: &Path) -> Vec<(String, String)> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = rd
        .filter_map(|e| {
            let e = e.ok()?;
            let n = e.file_name().into_string().ok()?;
            let t = fs::read_to_string(e.path()).ok()?;
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

/// All PMUs under `root` (tests point this at a fake tree).
pub fn pmus_in(root: &Path) -> Vec<Pmu> {
    let Ok(rd) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut v: Vec<Pmu> = rd.filter_map(|e| Pmu::read(&e.ok()?.path())).collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
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

/// Finds tracefs; when it is not mounted and we are root, mounts it at
/// `/sys/kernel/tracing` (as perf does via its debugfs helpers).
pub fn tracefs() -> Result<PathBuf> {
    if let Some(p) = find_tracefs() {
        return Ok(p);
    }
    if let Ok(p) = std::env::var("HWPROF_TRACEFS") {
        return Err(Error::NoTracefs(format!(
            "HWPROF_TRACEFS={p} has no events/ directory: point it at a mounted tracefs"
        )));
    }
    let target = TRACEFS_CANDIDATES[0];
    if crate::sys::euid() != 0 {
        return Err(Error::NoTracefs(
            "not root, so hwprof cannot mount it".into(),
        ));
    }
    crate::sys::mount_tracefs(target)
        .map_err(|e| Error::NoTracefs(format!("mounting it at {target} failed: {e}")))?;
    find_tracefs()
        .ok_or_else(|| Error::NoTracefs(format!("mounted at {target} but it lists no events")))
}

/// Finds a mounted tracefs with an `events/` directory, without mounting anything.
pub fn find_tracefs() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("HWPROF_TRACEFS") {
        let p = PathBuf::from(p);
        return p.join("events").is_dir().then_some(p);
    }
    TRACEFS_CANDIDATES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("events").is_dir())
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
