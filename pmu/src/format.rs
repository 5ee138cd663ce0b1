//! PMU format terms: how `pmu/term=value/` becomes bits of config, config1, config2.
//!
//! The layout comes from `/sys/bus/event_source/devices/PMU/format/TERM` (text such as
//! `config:0-7,32-35`) or, when encoding for a CPU we are not on, from the built-in
//! layouts below, which copy what those kernel files say on each vendor's machines.

use crate::error::{Error, Result};

/// Which attr field a format term writes into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigField {
    /// `config`.
    Config,
    /// `config1`.
    Config1,
    /// `config2`.
    Config2,
    /// `config3`.
    Config3,
}

/// One format term: its name and the bit ranges it spreads over, lowest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatTerm {
    /// Term name (`event`, `umask`, `ldlat`...).
    pub name: String,
    /// Target field.
    pub field: ConfigField,
    /// Inclusive bit ranges `(lo, hi)`, filled from the value's low bits upward.
    pub ranges: Vec<(u32, u32)>,
}

impl FormatTerm {
    /// Parses sysfs format text, e.g. `config:0-7,32-35` or `config1:0-15` or `config:21`.
    pub fn parse(name: &str, text: &str) -> Result<FormatTerm> {
        let bad = || Error::Syntax {
            input: text.trim().to_string(),
            reason: format!("bad format of term '{name}'"),
        };
        let (field, bits) = text.trim().split_once(':').ok_or_else(bad)?;
        let field = match field {
            "config" => ConfigField::Config,
            "config1" => ConfigField::Config1,
            "config2" => ConfigField::Config2,
            "config3" => ConfigField::Config3,
            _ => return Err(bad()),
        };
        let mut ranges = Vec::new();
        for part in bits.split(',') {
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?),
                None => {
                    let b: u32 = part.parse().map_err(|_| bad())?;
                    (b, b)
                }
            };
            if lo > hi || hi > 63 {
                return Err(bad());
            }
            ranges.push((lo, hi));
        }
        Ok(FormatTerm {
            name: name.to_string(),
            field,
            ranges,
        })
    }

    /// Total number of bits.
    pub fn bits(&self) -> u32 {
        self.ranges.iter().map(|(lo, hi)| hi - lo + 1).sum()
    }

    /// Writes `value` into `fields` (config, config1, config2, config3), ORing it in.
    pub fn apply(&self, value: u64, fields: &mut [u64; 4]) -> Result<()> {
        let bits = self.bits();
        if bits < 64 && value >> bits != 0 {
            return Err(Error::TermOverflow {
                term: self.name.clone(),
                value,
                bits,
            });
        }
        let slot = &mut fields[self.field as usize];
        let mut v = value;
        for &(lo, hi) in &self.ranges {
            let width = hi - lo + 1;
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            *slot |= (v & mask) << lo;
            v = if width == 64 { 0 } else { v >> width };
        }
        Ok(())
    }
}

/// The format of one PMU: its terms.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Format {
    /// Terms in the order the kernel lists them (sorted by name).
    pub terms: Vec<FormatTerm>,
}

impl Format {
    /// Builds a format from `(name, sysfs text)` pairs.
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Format {
        let terms = pairs
            .iter()
            .filter_map(|(n, t)| FormatTerm::parse(n, t).ok())
            .collect();
        Format { terms }
    }

    /// The term of that name.
    pub fn term(&self, name: &str) -> Option<&FormatTerm> {
        self.terms.iter().find(|t| t.name == name)
    }

    /// Term names, comma-separated, for error messages.
    pub fn names(&self) -> String {
        self.terms
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The `cpu` PMU format of Intel core PMUs (Skylake to Sapphire Rapids, and Alder Lake's
/// `cpu_core`), as `/sys/bus/event_source/devices/cpu/format/*` lists it there.
pub const INTEL_CORE: &[(&str, &str)] = &[
    ("event", "config:0-7"),
    ("umask", "config:8-15"),
    ("edge", "config:18"),
    ("pc", "config:19"),
    ("any", "config:21"),
    ("inv", "config:23"),
    ("cmask", "config:24-31"),
    ("in_tx", "config:32"),
    ("in_tx_cp", "config:33"),
    ("ldlat", "config1:0-15"),
    ("offcore_rsp", "config1:0-63"),
    ("frontend", "config1:0-23"),
];

/// Alder Lake's `cpu_atom` (Gracemont) format.
pub const INTEL_ATOM: &[(&str, &str)] = &[
    ("event", "config:0-7"),
    ("umask", "config:8-15"),
    ("edge", "config:18"),
    ("pc", "config:19"),
    ("inv", "config:23"),
    ("cmask", "config:24-31"),
    ("ldlat", "config1:0-15"),
    ("offcore_rsp", "config1:0-63"),
];

/// The `cpu` PMU format of AMD Zen core PMUs: a 12-bit event select split over bits
/// 0-7 and 32-35.
pub const AMD_CORE: &[(&str, &str)] = &[
    ("event", "config:0-7,32-35"),
    ("umask", "config:8-15"),
    ("edge", "config:18"),
    ("inv", "config:23"),
    ("cmask", "config:24-31"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_applies_split_ranges() {
        let t = FormatTerm::parse("event", "config:0-7,32-35\n").unwrap();
        assert_eq!(t.bits(), 12);
        let mut f = [0u64; 4];
        t.apply(0x1c0, &mut f).unwrap();
        assert_eq!(f[0], 0xc0 | (1 << 32));
    }

    #[test]
    fn single_bit_and_overflow() {
        let t = FormatTerm::parse("inv", "config:23").unwrap();
        let mut f = [0u64; 4];
        t.apply(1, &mut f).unwrap();
        assert_eq!(f[0], 1 << 23);
        assert!(matches!(
            t.apply(2, &mut f),
            Err(Error::TermOverflow { bits: 1, .. })
        ));
        let l = FormatTerm::parse("ldlat", "config1:0-15").unwrap();
        l.apply(64, &mut f).unwrap();
        assert_eq!(f[1], 64);
    }

    #[test]
    fn full_width_term() {
        let t = FormatTerm::parse("event", "config:0-63").unwrap();
        let mut f = [0u64; 4];
        t.apply(u64::MAX, &mut f).unwrap();
        assert_eq!(f[0], u64::MAX);
    }

    #[test]
    fn rejects_garbage() {
        assert!(FormatTerm::parse("x", "conf:1").is_err());
        assert!(FormatTerm::parse("x", "config:9-3").is_err());
        assert!(FormatTerm::parse("x", "config:64").is_err());
    }
}
