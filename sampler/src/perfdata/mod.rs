//! perf.data files: [`reader`] and [`writer`], with the header [`features`] both share.

pub mod features;
pub mod reader;
pub mod tracing;
pub mod writer;

/// `PERFILE2` as a little-endian u64: the magic of every perf.data since perf 3.x.
pub const MAGIC: u64 = 0x3245_4c49_4652_4550;
