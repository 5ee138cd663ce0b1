//! `hwprof flamegraph` (being written).

use crate::args::FlamegraphArgs;

pub fn run(_a: FlamegraphArgs) -> anyhow::Result<u8> {
    anyhow::bail!("hwprof flamegraph is being written")
}
