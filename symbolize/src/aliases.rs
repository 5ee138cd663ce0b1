//! perf's choice among aliases: several function symbols at one address (libc's `read`
//! is also `__read`, `__libc_read`, `__GI___libc_read`, `__GI___read` and `__GI_read`).
//! blazesym returns whichever its unstable sort leaves first; perf keeps one by
//! `choose_best_symbol` (tools/perf/util/symbol.c, run by `symbols__fixup_duplicate`
//! over the symbols of one address, in symbol table order):
//!
//! 1. a symbol with a size over one without;
//! 2. a symbol that is not weak over a weak one (so a local `__GI_x` beats a weak `x`);
//! 3. a global symbol over one that is not;
//! 4. fewer leading underscores;
//! 5. the longer name;
//! 6. else the one first in the symbol table.
//!
//! Names are compared as the table has them (mangled) and demangled as blazesym
//! demangles ELF symbols (Rust first, then C++). perf reads `.symtab` when the file has
//! one, else `.dynsym`; so does [`best_names`]. Only function symbols (`STT_FUNC`,
//! `STT_GNU_IFUNC`) that are defined and named take part: the symbols blazesym reports.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use object::elf::{SHT_DYNSYM, SHT_SYMTAB, STB_GLOBAL, STB_WEAK, STT_FUNC, STT_GNU_IFUNC};
use object::read::ReadCache;
use object::read::elf::{FileHeader, Sym};
use object::{Endianness, FileKind, ReadRef};

/// One symbol at an address, as `choose_best_symbol` sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// The name as the symbol table has it.
    pub name: Vec<u8>,
    /// `st_size`.
    pub size: u64,
    /// `ST_BIND(st_info)`.
    pub bind: object::elf::SymbolBind,
}

fn underscores(name: &[u8]) -> usize {
    name.iter().take_while(|&&c| c == b'_').count()
}

/// perf's `choose_best_symbol(a, b) == SYMBOL_B`: `b`, later in the table, replaces
/// `a`.
pub(crate) fn prefer_later(a: &Candidate, b: &Candidate) -> bool {
    if (a.size > 0) != (b.size > 0) {
        return b.size > 0;
    }
    let (a_weak, b_weak) = (a.bind == STB_WEAK, b.bind == STB_WEAK);
    if a_weak != b_weak {
        return a_weak;
    }
    let (a_global, b_global) = (a.bind == STB_GLOBAL, b.bind == STB_GLOBAL);
    if a_global != b_global {
        return b_global;
    }
    let (a_u, b_u) = (underscores(&a.name), underscores(&b.name));
    if a_u != b_u {
        return b_u < a_u;
    }
    b.name.len() > a.name.len()
}

/// A name demangled: Rust's (legacy `_ZN...E` and v0 `_R`), then C++'s (Itanium, `_Z`);
/// any other name as it is. The one demangling of hwprof's symbols (blazesym's is off:
/// it handed every unmangled name to the C++ demangler, which reads a function `a` as
/// the type `signed char` and `b` as `bool`).
pub(crate) fn demangle(raw: &[u8]) -> String {
    let name = String::from_utf8_lossy(raw);
    if let Ok(d) = rustc_demangle::try_demangle(&name) {
        return format!("{d:#}");
    }
    if !name.starts_with("_Z") {
        return name.into_owned();
    }
    cpp_demangle::Symbol::new(name.as_bytes())
        .ok()
        .and_then(|s| s.demangle().ok())
        .unwrap_or_else(|| name.into_owned())
}

/// perf's name (see the [module docs](self)) of each of `addrs` that two or more
/// function symbols of the ELF file `elf` share, demangled. Addresses with one symbol
/// (or none) are not in the answer. The file must be regular (it is opened with
/// [`hwprof_pmu::file::open`]).
pub(crate) fn best_names(elf: &Path, addrs: &[u64]) -> HashMap<u64, String> {
    let want: HashSet<u64> = addrs.iter().copied().collect();
    if want.is_empty() {
        return HashMap::new();
    }
    let Ok((file, _)) = hwprof_pmu::file::open(elf) else {
        return HashMap::new();
    };
    best_names_of(&ReadCache::new(file), &want)
}

/// [`best_names`] of an ELF image in memory (the vDSO's).
pub(crate) fn best_names_in(image: &[u8], addrs: &[u64]) -> HashMap<u64, String> {
    let want: HashSet<u64> = addrs.iter().copied().collect();
    if want.is_empty() {
        return HashMap::new();
    }
    best_names_of(image, &want)
}

fn best_names_of<'data, R: ReadRef<'data>>(data: R, want: &HashSet<u64>) -> HashMap<u64, String> {
    let groups = match FileKind::parse(data) {
        Ok(FileKind::Elf32) => groups::<object::elf::FileHeader32<Endianness>, R>(data, want),
        Ok(FileKind::Elf64) => groups::<object::elf::FileHeader64<Endianness>, R>(data, want),
        _ => None,
    };
    groups
        .unwrap_or_default()
        .into_iter()
        .filter(|(_, (_, n))| *n > 1)
        .map(|(addr, (best, _))| (addr, demangle(&best.name)))
        .collect()
}

/// The best candidate of each wanted address, and how many distinct names it has.
fn groups<'data, Elf: FileHeader<Endian = Endianness>, R: ReadRef<'data>>(
    data: R,
    want: &HashSet<u64>,
) -> Option<HashMap<u64, (Candidate, usize)>> {
    let header = Elf::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let sections = header.sections(endian, data).ok()?;
    let mut table = sections.symbols(endian, data, SHT_SYMTAB).ok()?;
    if table.is_empty() {
        table = sections.symbols(endian, data, SHT_DYNSYM).ok()?;
    }
    let mut out: HashMap<u64, (Candidate, usize)> = HashMap::new();
    for sym in table.iter() {
        let addr: u64 = sym.st_value(endian).into();
        let kind = sym.st_type();
        if !want.contains(&addr)
            || !(kind == STT_FUNC || kind == STT_GNU_IFUNC)
            || sym.is_undefined(endian)
            || sym.st_name(endian) == 0
        {
            continue;
        }
        let Ok(name) = table.symbol_name(endian, sym) else {
            continue;
        };
        let c = Candidate {
            name: name.to_vec(),
            size: sym.st_size(endian).into(),
            bind: sym.st_bind(),
        };
        match out.get_mut(&addr) {
            None => {
                out.insert(addr, (c, 1));
            }
            Some((best, n)) => {
                if best.name != c.name {
                    *n += 1;
                }
                if prefer_later(best, &c) {
                    *best = c;
                }
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::elf::STB_LOCAL;

    fn c(name: &str, size: u64, bind: object::elf::SymbolBind) -> Candidate {
        Candidate {
            name: name.as_bytes().to_vec(),
            size,
            bind,
        }
    }

    /// The survivor of perf's pairwise fold over `syms` in table order.
    fn best(syms: &[Candidate]) -> String {
        let mut b = syms[0].clone();
        for s in &syms[1..] {
            if prefer_later(&b, s) {
                b = s.clone();
            }
        }
        String::from_utf8(b.name).unwrap()
    }

    #[test]
    fn perfs_order_of_preference() {
        // libc's read and write (Debian 12's libc6-dbg .symtab, in its order).
        let read = [
            c("__libc_read", 157, STB_LOCAL),
            c("__GI___libc_read", 157, STB_LOCAL),
            c("__GI___read", 157, STB_LOCAL),
            c("__GI_read", 157, STB_LOCAL),
            c("read", 157, STB_GLOBAL),
            c("__read", 157, STB_GLOBAL),
        ];
        assert_eq!(best(&read), "read");
        let write = [
            c("__GI___write", 157, STB_LOCAL),
            c("__GI_write", 157, STB_LOCAL),
            c("__GI___libc_write", 157, STB_LOCAL),
            c("__libc_write", 157, STB_LOCAL),
            c("__write", 157, STB_WEAK),
            c("write", 157, STB_WEAK),
        ];
        assert_eq!(best(&write), "__GI___libc_write", "not weak beats weak");
        // A size beats none; then the longer name; then the first.
        assert_eq!(
            best(&[c("f", 0, STB_GLOBAL), c("__g", 4, STB_LOCAL)]),
            "__g"
        );
        assert_eq!(
            best(&[c("ab", 4, STB_GLOBAL), c("abc", 4, STB_GLOBAL)]),
            "abc"
        );
        assert_eq!(
            best(&[c("ab", 4, STB_GLOBAL), c("cd", 4, STB_GLOBAL)]),
            "ab"
        );
        assert_eq!(
            best(&[c("cd", 4, STB_GLOBAL), c("ab", 4, STB_GLOBAL)]),
            "cd"
        );
        assert_eq!(demangle(b"_ZN3foo3barEv"), "foo::bar()");
        assert_eq!(demangle(b"read"), "read");
        // Unmangled names that read as C++ type encodings stay what they are.
        assert_eq!(demangle(b"a"), "a");
        assert_eq!(demangle(b"b"), "b");
        assert_eq!(demangle(b"i"), "i");
        assert_eq!(demangle(b"_RNvCs1234_7mycrate3foo"), "mycrate::foo");
    }
}
