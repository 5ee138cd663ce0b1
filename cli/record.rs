//! `hwprof record`: sample a command, PIDs, threads or CPUs into perf.data.

use crate::args::RecordArgs;

pub fn run(_a: RecordArgs) -> anyhow::Result<u8> {
    anyhow::bail!("hwprof record is being written")
}
