//! `hwprof offcpu` (being written).

/// Flags of `hwprof offcpu`.
#[derive(Debug, clap::Args)]
pub struct OffcpuArgs {}

pub fn run(_a: OffcpuArgs) -> anyhow::Result<u8> {
    anyhow::bail!("hwprof offcpu is being written")
}
