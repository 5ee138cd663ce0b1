//! The source lines of one function of a file and the addresses each covers: what
//! `hwprof annotate` shows beside a function's samples.
//!
//! Every byte from the function's start is resolved through the [`Symbolizer`] (the
//! same files, debug files and inlined frames as the samples were resolved with), until
//! an offset resolves to another function or to nothing; consecutive bytes on one line
//! (of the innermost inlined frame) make a range. No disassembly: ranges are of bytes.

use std::path::Path;

use crate::module::ModuleId;
use crate::symbolizer::{Symbolizer, file_to_virt, load_segments};

/// The most bytes of one function looked at.
pub const MAX_FUNCTION: u64 = 1 << 20;

/// Bytes resolved per batch.
const BATCH: u64 = 512;

/// Bytes `start..end` of a function on one source line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineRange {
    /// The first byte, as a virtual address of the file when its segments are known
    /// (what `perf annotate` and `objdump` show), else a file offset.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// The source file (of the innermost inlined frame).
    pub file: Option<String>,
    /// The line.
    pub line: Option<u32>,
}

/// The ranges of function `name` of file module `module`, which starts at file offset
/// `start`; `elf`, the file when it can be read, gives the virtual addresses. Empty
/// when the start does not resolve to `name`.
pub fn function_lines(
    sym: &mut Symbolizer,
    module: ModuleId,
    elf: Option<&Path>,
    start: u64,
    name: &str,
) -> Vec<LineRange> {
    let segs = elf.map(load_segments).unwrap_or_default();
    let addr = |off: u64| file_to_virt(&segs, off).unwrap_or(off);
    let mut out: Vec<LineRange> = Vec::new();
    let mut off = start;
    'walk: while off < start + MAX_FUNCTION {
        let batch: Vec<(u64, bool)> = (off..off + BATCH).map(|o| (o, false)).collect();
        for (o, frames) in batch
            .iter()
            .map(|&(o, _)| o)
            .zip(sym.resolve(module, &batch))
        {
            let (Some(inner), Some(outer)) = (frames.first(), frames.last()) else {
                break 'walk;
            };
            if outer.inlined
                || outer.function.as_deref() != Some(name)
                || outer.module_offset != start
            {
                break 'walk;
            }
            let a = addr(o);
            match out.last_mut() {
                Some(r) if r.end == a && r.file == inner.file && r.line == inner.line => {
                    r.end = a + 1;
                }
                _ => out.push(LineRange {
                    start: a,
                    end: a + 1,
                    file: inner.file.clone(),
                    line: inner.line,
                }),
            }
        }
        off += BATCH;
    }
    out
}
