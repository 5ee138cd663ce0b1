//! Which CPU this is: vendor, family, model, and the model name hwprof's tables use.

use std::fmt;

use crate::error::{Error, Result};

/// CPU vendor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vendor {
    /// GenuineIntel.
    Intel,
    /// AuthenticAMD.
    Amd,
    /// Anything else.
    Other,
}

/// A CPU microarchitecture with a built-in event table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Model {
    /// Intel Skylake client (and Kaby/Coffee/Comet Lake).
    Skylake,
    /// Intel Skylake-SP / Cascade Lake.
    SkylakeX,
    /// Intel Ice Lake client (and Rocket Lake).
    IceLake,
    /// Intel Sapphire Rapids (and Emerald Rapids).
    SapphireRapids,
    /// Intel Alder Lake / Raptor Lake hybrid (`cpu_core` + `cpu_atom`).
    AlderLake,
    /// AMD Zen 2.
    Zen2,
    /// AMD Zen 3.
    Zen3,
    /// AMD Zen 4.
    Zen4,
    /// AMD Zen 5.
    Zen5,
}

impl Model {
    /// Every model with a table.
    pub const ALL: [Model; 9] = [
        Model::Skylake,
        Model::SkylakeX,
        Model::IceLake,
        Model::SapphireRapids,
        Model::AlderLake,
        Model::Zen2,
        Model::Zen3,
        Model::Zen4,
        Model::Zen5,
    ];

    /// The lower-case name used by `--cpu`.
    pub fn name(self) -> &'static str {
        match self {
            Model::Skylake => "skylake",
            Model::SkylakeX => "skylakex",
            Model::IceLake => "icelake",
            Model::SapphireRapids => "sapphirerapids",
            Model::AlderLake => "alderlake",
            Model::Zen2 => "zen2",
            Model::Zen3 => "zen3",
            Model::Zen4 => "zen4",
            Model::Zen5 => "zen5",
        }
    }

    /// Parses a `--cpu` name (also accepts a few common aliases).
    pub fn from_name(s: &str) -> Result<Model> {
        let l = s.to_ascii_lowercase().replace(['-', '_', ' '], "");
        Ok(match l.as_str() {
            "skylake" | "skl" | "kabylake" | "coffeelake" | "cometlake" => Model::Skylake,
            "skylakex" | "skx" | "cascadelake" | "cascadelakex" | "clx" => Model::SkylakeX,
            "icelake" | "icl" | "rocketlake" => Model::IceLake,
            "sapphirerapids" | "spr" | "emeraldrapids" | "emr" => Model::SapphireRapids,
            "alderlake" | "adl" | "raptorlake" | "rpl" => Model::AlderLake,
            "zen2" => Model::Zen2,
            "zen3" => Model::Zen3,
            "zen4" => Model::Zen4,
            "zen5" => Model::Zen5,
            _ => return Err(Error::UnknownModel(s.to_string())),
        })
    }

    /// The vendor of the model.
    pub fn vendor(self) -> Vendor {
        match self {
            Model::Zen2 | Model::Zen3 | Model::Zen4 | Model::Zen5 => Vendor::Amd,
            _ => Vendor::Intel,
        }
    }

    /// Whether the model has two core PMUs (`cpu_core` and `cpu_atom`).
    pub fn is_hybrid(self) -> bool {
        self == Model::AlderLake
    }

    /// The highest `precise_ip` the model's PMU accepts (what `:P` selects).
    pub fn max_precise(self) -> u8 {
        match self.vendor() {
            Vendor::Amd => 2,
            _ => 3,
        }
    }

    /// Maps vendor/family/model (as in /proc/cpuinfo or CPUID) to a table, as the
    /// kernel's `pmu-events/arch/x86/mapfile.csv` does.
    pub fn from_cpuid(vendor: Vendor, family: u32, model: u32) -> Option<Model> {
        match (vendor, family) {
            (Vendor::Intel, 6) => Some(match model {
                0x4e | 0x5e | 0x8e | 0x9e | 0xa5 | 0xa6 => Model::Skylake,
                0x55 => Model::SkylakeX,
                0x7d | 0x7e | 0xa7 => Model::IceLake,
                0x8f | 0xcf => Model::SapphireRapids,
                0x97 | 0x9a | 0xb7 | 0xba | 0xbf => Model::AlderLake,
                _ => return None,
            }),
            (Vendor::Amd, 0x17) if model >= 0x30 => Some(Model::Zen2),
            (Vendor::Amd, 0x19) => Some(match model {
                0x00..=0x0f | 0x20..=0x5f => Model::Zen3,
                _ => Model::Zen4,
            }),
            (Vendor::Amd, 0x1a) => Some(Model::Zen5),
            _ => None,
        }
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What `/proc/cpuinfo` says about this machine's CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuId {
    /// Vendor.
    pub vendor: Vendor,
    /// Family.
    pub family: u32,
    /// Model number.
    pub model: u32,
    /// Stepping.
    pub stepping: u32,
    /// The `model name` line.
    pub brand: String,
}

impl CpuId {
    /// Reads this machine's CPU identity from `/proc/cpuinfo`.
    pub fn host() -> Option<CpuId> {
        let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
        Some(Self::parse(&text))
    }

    /// Parses the first processor block of `/proc/cpuinfo` text.
    pub fn parse(text: &str) -> CpuId {
        let mut id = CpuId {
            vendor: Vendor::Other,
            family: 0,
            model: 0,
            stepping: 0,
            brand: String::new(),
        };
        for line in text.lines() {
            if line.trim().is_empty() && !id.brand.is_empty() {
                break;
            }
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let v = v.trim();
            match k.trim() {
                "vendor_id" => {
                    id.vendor = match v {
                        "GenuineIntel" => Vendor::Intel,
                        "AuthenticAMD" => Vendor::Amd,
                        _ => Vendor::Other,
                    }
                }
                "cpu family" => id.family = v.parse().unwrap_or(0),
                "model" => id.model = v.parse().unwrap_or(0),
                "stepping" => id.stepping = v.parse().unwrap_or(0),
                "model name" => id.brand = v.to_string(),
                _ => {}
            }
        }
        id
    }

    /// The table model of this CPU, if hwprof has one.
    pub fn table_model(&self) -> Option<Model> {
        Model::from_cpuid(self.vendor, self.family, self.model)
    }

    /// perf's CPUID string, e.g. `GenuineIntel-6-A7-1`.
    pub fn perf_cpuid(&self) -> String {
        let v = match self.vendor {
            Vendor::Intel => "GenuineIntel",
            Vendor::Amd => "AuthenticAMD",
            Vendor::Other => "Unknown",
        };
        format!("{v}-{}-{:X}-{:X}", self.family, self.model, self.stepping)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_known_cpus() {
        assert_eq!(
            Model::from_cpuid(Vendor::Intel, 6, 0x55),
            Some(Model::SkylakeX)
        );
        assert_eq!(
            Model::from_cpuid(Vendor::Intel, 6, 0x8f),
            Some(Model::SapphireRapids)
        );
        assert_eq!(
            Model::from_cpuid(Vendor::Amd, 0x19, 0x01),
            Some(Model::Zen3)
        );
        assert_eq!(
            Model::from_cpuid(Vendor::Amd, 0x19, 0x61),
            Some(Model::Zen4)
        );
        assert_eq!(
            Model::from_cpuid(Vendor::Amd, 0x1a, 0x02),
            Some(Model::Zen5)
        );
        assert_eq!(Model::from_cpuid(Vendor::Intel, 6, 0x01), None);
    }

    #[test]
    fn parses_cpuinfo() {
        let id = CpuId::parse(
            "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 167\nmodel name\t: Intel(R) Xeon(R)\nstepping\t: 1\n",
        );
        assert_eq!((id.vendor, id.family, id.model), (Vendor::Intel, 6, 167));
        assert_eq!(id.table_model(), Some(Model::IceLake));
        assert_eq!(id.perf_cpuid(), "GenuineIntel-6-A7-1");
    }

    #[test]
    fn model_names_round_trip() {
        for m in Model::ALL {
            assert_eq!(Model::from_name(m.name()).unwrap(), m);
        }
        assert!(Model::from_name("pentium").is_err());
    }
}
