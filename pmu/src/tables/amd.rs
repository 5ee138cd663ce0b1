//! Built-in AMD event tables (placeholder rows; the full tables are being written).

use super::Category::*;
use super::NamedEvent;

/// Zen 2.
pub const ZEN2: &[NamedEvent] = &[NamedEvent { name: "ls_dmnd_fills_from_sys.dram_io_near", pmu: "cpu", terms: "event=0x43,umask=0x08", category: Memory, precise: false, desc: "Demand data cache fills from DRAM or IO in the same NUMA node" }];
/// Zen 3.
pub const ZEN3: &[NamedEvent] = ZEN2;
/// Zen 4.
pub const ZEN4: &[NamedEvent] = ZEN2;
/// Zen 5.
pub const ZEN5: &[NamedEvent] = ZEN2;
