//! Built-in Intel event tables (placeholder rows; the full tables are being written).

use super::Category::*;
use super::NamedEvent;

const fn ev(name: &'static str, terms: &'static str, category: super::Category, precise: bool, desc: &'static str) -> NamedEvent {
    NamedEvent { name, pmu: "cpu", terms, category, precise, desc }
}

/// Skylake client.
pub const SKYLAKE: &[NamedEvent] = &[ev("MEM_LOAD_RETIRED.L3_MISS", "event=0xd1,umask=0x20", Cache, true, "Retired load instructions missed L3")];
/// Skylake-X.
pub const SKYLAKEX: &[NamedEvent] = SKYLAKE;
/// Ice Lake.
pub const ICELAKE: &[NamedEvent] = SKYLAKE;
/// Sapphire Rapids.
pub const SAPPHIRERAPIDS: &[NamedEvent] = SKYLAKE;
/// Alder Lake.
pub const ALDERLAKE: &[NamedEvent] = &[NamedEvent { name: "MEM_LOAD_RETIRED.L3_MISS", pmu: "cpu_core", terms: "event=0xd1,umask=0x20", category: Cache, precise: true, desc: "Retired load instructions missed L3" }];
