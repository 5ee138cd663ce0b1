//! Uprobe targets: from `/path:func+off` (or a library name, `libc:malloc`, found by
//! [`locate`]) to the file offset the uprobe PMU wants; and breakpoints that would count
//! nothing ([`breakpoint_notices`]: an address in no mapping, or of a PIE's file).

pub mod allocator;
mod breakpoint;
mod locate;

use std::path::Path;

pub use breakpoint::breakpoint_notices;
pub use locate::{in_path, is_library, locate};

use object::read::ReadCache;
use object::{BinaryFormat, Object, ObjectSegment, ObjectSymbol, SymbolKind};

/// A resolved uprobe location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// Absolute path of the binary.
    pub path: String,
    /// Offset in the file (`probe_offset`).
    pub file_offset: u64,
    /// The virtual address it stands for.
    pub vaddr: u64,
}

/// Resolves `func+offset` (or, with an empty `func`, the virtual address `offset`) in
/// the ELF file at `path`. Errors are one-line reasons; a missing symbol lists the nearest
/// names.
///
/// Only a regular file is opened, without blocking (a FIFO or `/dev/zero` is refused,
/// see [`crate::file::open`]), and it is read lazily: only the headers and symbol tables
/// it needs, never the whole file.
pub fn resolve(path: &str, func: &str, offset: u64) -> Result<Resolved, String> {
    let abs = std::fs::canonicalize(Path::new(path)).map_err(|e| format!("{path}: {e}"))?;
    let (f, _) = crate::file::open(&abs).map_err(|e| e.to_string())?;
    let data = ReadCache::new(f);
    let file = object::File::parse(&data)
        .map_err(|e| format!("{} is not an ELF file we can read ({e})", abs.display()))?;
    let vaddr = if func.is_empty() {
        offset
    } else {
        let mut names: Vec<String> = Vec::new();
        let mut found = None;
        let syms = file.symbols().chain(file.dynamic_symbols());
        for s in syms {
            if s.kind() != SymbolKind::Text || s.address() == 0 {
                continue;
            }
            let Ok(n) = s.name() else { continue };
            if n == func {
                found = Some((s.address(), s.size()));
                break;
            }
            names.push(n.to_string());
        }
        match found {
            Some((_, size)) if size > 0 && offset >= size => {
                return Err(format!(
                    "offset {offset:#x} is past the end of {func} ({size} bytes)"
                ));
            }
            Some((a, _)) => a + offset,
            None if names.is_empty() => {
                return Err(format!(
                    "{} has no symbol table (stripped?): probe an address instead, uprobe:{}:0xADDR",
                    abs.display(),
                    abs.display()
                ));
            }
            None => {
                let near = crate::error::nearest_names(func, names.iter().map(String::as_str));
                return Err(if near.is_empty() {
                    format!(
                        "no function '{func}' in {} (and none with a similar name; `nm -C {}` lists them)",
                        abs.display(),
                        abs.display()
                    )
                } else {
                    format!(
                        "no function '{func}' in {}; nearest: {}",
                        abs.display(),
                        near.join(", ")
                    )
                });
            }
        }
    };
    for seg in file.segments() {
        let (start, size) = (seg.address(), seg.size());
        if vaddr >= start && vaddr < start + size {
            let (foff, _) = seg.file_range();
            return Ok(Resolved {
                path: abs.display().to_string(),
                file_offset: vaddr - start + foff,
                vaddr,
            });
        }
    }
    Err(format!(
        "address {vaddr:#x} is in no loadable segment of {}",
        abs.display()
    ))
}

/// `true` when the ELF file at `path` has no symbol table (`.symtab`): only its dynamic
/// symbols are known. `false` when it has one or cannot be read.
pub fn is_stripped(path: &str) -> bool {
    let Ok((f, _)) = crate::file::open(Path::new(path)) else {
        return false;
    };
    let data = ReadCache::new(f);
    object::File::parse(&data)
        .is_ok_and(|o| o.format() == BinaryFormat::Elf && o.symbol_table().is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_a_libc_function_and_reports_missing_ones() {
        let exe = std::env::current_exe().unwrap();
        let p = exe.to_str().unwrap();
        // The test binary itself always has `main`.
        let r = resolve(p, "main", 0).unwrap();
        assert!(r.file_offset > 0);
        let e = resolve(p, "mian_no_such_fn", 0).unwrap_err();
        assert!(e.contains("no function 'mian_no_such_fn'"), "{e}");
        let e = resolve(p, "zzqxjv_nothing_alike", 0).unwrap_err();
        assert!(e.contains("none with a similar name"), "{e}");
        assert!(resolve("/nonexistent/bin", "main", 0).is_err());
        assert!(
            resolve("/etc/hostname", "main", 0)
                .unwrap_err()
                .contains("not an ELF")
        );
    }
}
