//! `hwprof script`: every record of a perf.data file, as text or JSON lines.

use crate::args::ScriptArgs;

pub fn run(_a: ScriptArgs) -> anyhow::Result<u8> {
    anyhow::bail!("hwprof script is being written")
}
