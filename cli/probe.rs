//! `hwprof probe` (being written).

/// Flags of `hwprof probe`.
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {}

pub fn run(_a: ProbeArgs) -> anyhow::Result<u8> {
    anyhow::bail!("hwprof probe is being written")
}
