//! `hwprof report` (being written).

use crate::args::ReportArgs;

pub fn run(_a: ReportArgs) -> anyhow::Result<u8> {
    anyhow::bail!("hwprof report is being written")
}
