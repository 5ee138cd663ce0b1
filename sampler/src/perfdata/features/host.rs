//! [`Features::for_this_machine`]: the header features of a recording made here, read
//! from `/proc` and `/sys` (no `uname` call: that would need `unsafe`).

use super::{EventDesc, Features, GroupDesc};

/// The `HEADER_VERSION` string hwprof writes. perf only prints it (`# perf version :`).
pub const VERSION: &str = concat!("hwprof ", env!("CARGO_PKG_VERSION"));

impl Features {
    /// The features of a recording made on this machine now: HOSTNAME, OSRELEASE,
    /// VERSION, ARCH, NRCPUS, CPUDESC, CPUID (x86), TOTAL_MEM, CMDLINE (`cmdline`, argv
    /// with the program first, as perf writes its own path first), EVENT_DESC
    /// (`events`) and GROUP_DESC (`groups`, when given and not empty). What cannot be
    /// read is left out. BUILD_ID is for the caller to fill (see `crate::buildid`).
    pub fn for_this_machine(
        cmdline: &[String],
        events: &[EventDesc],
        groups: Option<Vec<GroupDesc>>,
    ) -> Features {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = CpuInfo::parse(&cpuinfo);
        Features {
            hostname: read_line("/proc/sys/kernel/hostname"),
            osrelease: read_line("/proc/sys/kernel/osrelease"),
            version: Some(VERSION.to_string()),
            arch: read_line("/proc/sys/kernel/arch").or_else(|| Some(uname_machine().into())),
            nr_cpus: nr_cpus(),
            cpudesc: cpu.model_name.clone(),
            cpuid: cpu.perf_cpuid(),
            total_mem: std::fs::read_to_string("/proc/meminfo")
                .ok()
                .and_then(|t| mem_total_kb(&t)),
            cmdline: (!cmdline.is_empty()).then(|| cmdline.to_vec()),
            event_desc: (!events.is_empty()).then(|| events.to_vec()),
            build_ids: Vec::new(),
            group_desc: groups.filter(|g| !g.is_empty()),
            other: Vec::new(),
        }
    }
}

/// The first line of a small text file, trimmed; `None` when unreadable or empty.
fn read_line(path: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().next()?.trim();
    (!line.is_empty()).then(|| line.to_string())
}

/// `uname -m` for this build's architecture.
fn uname_machine() -> &'static str {
    match std::env::consts::ARCH {
        "x86" => "i686",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

/// `(available, online)` as perf writes them: the highest present CPU + 1 and the
/// number of online CPUs.
fn nr_cpus() -> Option<(u32, u32)> {
    let present = read_line("/sys/devices/system/cpu/present")
        .or_else(|| read_line("/sys/devices/system/cpu/possible"))?;
    let online = read_line("/sys/devices/system/cpu/online")?;
    let avail = cpu_list(&present)?.0;
    let online = cpu_list(&online)?.1;
    Some((avail, online))
}

/// A sysfs CPU list (`0-3,5`) as (highest CPU + 1, number of CPUs).
fn cpu_list(s: &str) -> Option<(u32, u32)> {
    let (mut max, mut count) = (0u32, 0u32);
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?),
            None => {
                let c = part.trim().parse::<u32>().ok()?;
                (c, c)
            }
        };
        if hi < lo {
            return None;
        }
        max = max.max(hi.checked_add(1)?);
        count = count.checked_add(hi - lo + 1)?;
    }
    (count > 0).then_some((max, count))
}

/// `MemTotal` of `/proc/meminfo` text, in kB.
fn mem_total_kb(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The fields of the first processor of `/proc/cpuinfo` that perf's header uses.
#[derive(Debug, Default, PartialEq, Eq)]
struct CpuInfo {
    vendor: Option<String>,
    family: Option<u32>,
    model: Option<u32>,
    stepping: Option<u32>,
    /// `model name`, whitespace runs squeezed to one space as perf does.
    model_name: Option<String>,
}

impl CpuInfo {
    fn parse(text: &str) -> CpuInfo {
        let mut c = CpuInfo::default();
        for line in text.lines() {
            if line.trim().is_empty() {
                if c.vendor.is_some() || c.model_name.is_some() {
                    break; // end of the first processor block
                }
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match key.trim() {
                "vendor_id" => c.vendor = Some(value.to_string()),
                "cpu family" => c.family = value.parse().ok(),
                "model" => c.model = value.parse().ok(),
                "stepping" => c.stepping = value.parse().ok(),
                "model name" => {
                    let squeezed = value.split_whitespace().collect::<Vec<_>>().join(" ");
                    c.model_name = (!squeezed.is_empty()).then_some(squeezed);
                }
                _ => {}
            }
        }
        c
    }

    /// perf's x86 `HEADER_CPUID`: `vendor,family,model,stepping` in decimal
    /// (`GenuineIntel,6,85,4`). `None` off x86 (perf writes other forms there).
    fn perf_cpuid(&self) -> Option<String> {
        match (&self.vendor, self.family, self.model, self.stepping) {
            (Some(v), Some(f), Some(m), Some(s)) => Some(format!("{v},{f},{m},{s}")),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_like_perf() {
        let text = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n\
                    model name\t: Intel(R) Xeon(R)   Gold  6152 CPU @ 2.10GHz\nstepping\t: 4\n\n\
                    processor\t: 1\nvendor_id\t: Other\n";
        let c = CpuInfo::parse(text);
        assert_eq!(c.perf_cpuid().as_deref(), Some("GenuineIntel,6,85,4"));
        assert_eq!(
            c.model_name.as_deref(),
            Some("Intel(R) Xeon(R) Gold 6152 CPU @ 2.10GHz")
        );
        assert_eq!(CpuInfo::parse("Processor : AArch64\n").perf_cpuid(), None);
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list("0-1"), Some((2, 2)));
        assert_eq!(cpu_list("0-3,5\n"), Some((6, 5)));
        assert_eq!(cpu_list("7"), Some((8, 1)));
        assert_eq!(cpu_list(""), None);
        assert_eq!(cpu_list("3-1"), None);
        assert_eq!(cpu_list("x"), None);
    }

    #[test]
    fn mem_total() {
        assert_eq!(
            mem_total_kb("MemTotal:       24684092 kB\nMemFree: 1 kB\n"),
            Some(24684092)
        );
        assert_eq!(mem_total_kb("MemFree: 1 kB\n"), None);
    }

    #[test]
    fn this_machine() {
        let f = Features::for_this_machine(&["hwprof".into(), "record".into()], &[], None);
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert_eq!(f.hostname.as_deref(), Some(host.trim()));
        assert!(f.osrelease.is_some() && f.arch.is_some() && f.total_mem.is_some());
        let (avail, online) = f.nr_cpus.unwrap();
        assert!(online >= 1 && avail >= online, "{avail} {online}");
        assert_eq!(f.version.as_deref(), Some(VERSION));
        assert_eq!(f.cmdline.as_ref().map(Vec::len), Some(2));
        assert!(f.event_desc.is_none() && f.group_desc.is_none());
        if cfg!(target_arch = "x86_64") {
            assert_eq!(f.arch.as_deref(), Some("x86_64"));
            let id = f.cpuid.unwrap();
            assert_eq!(id.split(',').count(), 4, "{id}");
        }
    }
}
