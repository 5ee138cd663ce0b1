//! `hwprof list`: placeholder replaced below.
use crate::args::ListArgs;
pub fn run(_a: ListArgs) -> anyhow::Result<()> { Ok(()) }
