//! `/proc/kallsyms`: kernel and kernel-module symbols, parsed once into a sorted table.

/// One kernel symbol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSym {
    /// Start address.
    pub addr: u64,
    /// Name.
    pub name: String,
    /// The module (`ext4`), or `None` for the kernel image.
    pub module: Option<String>,
}

/// A sorted table of kernel symbols.
#[derive(Clone, Debug, Default)]
pub struct Kallsyms {
    syms: Vec<KernelSym>,
}

impl Kallsyms {
    /// Parses kallsyms text (`ADDR TYPE NAME [MODULE]` lines). Lines that do not parse,
    /// zero addresses (kptr_restrict) and absolute/undefined symbols are skipped.
    pub fn parse(text: &str) -> Kallsyms {
        let mut syms = Vec::new();
        for line in text.lines() {
            let mut it = line.split_ascii_whitespace();
            let (Some(addr), Some(ty), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            // Text symbols only (and weak ones): data symbols would swallow code ranges.
            if addr == 0 || !matches!(ty, "t" | "T" | "w" | "W") {
                continue;
            }
            let module = it
                .next()
                .map(|m| m.trim_start_matches('[').trim_end_matches(']').to_string());
            syms.push(KernelSym {
                addr,
                name: name.to_string(),
                module,
            });
        }
        syms.sort_by_key(|s| s.addr);
        Kallsyms { syms }
    }

    /// Reads and parses `/proc/kallsyms`; an empty table when it cannot be read.
    pub fn load() -> Kallsyms {
        std::fs::read_to_string("/proc/kallsyms")
            .map(|t| Kallsyms::parse(&t))
            .unwrap_or_default()
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// True when no symbol was read.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The symbol containing `addr`: the last one starting at or before it. Addresses
    /// before the first symbol, or past the last one by more than 1 MiB, find nothing.
    pub fn lookup(&self, addr: u64) -> Option<&KernelSym> {
        let i = self.syms.partition_point(|s| s.addr <= addr);
        let s = self.syms.get(i.checked_sub(1)?)?;
        if i == self.syms.len() && addr - s.addr > (1 << 20) {
            return None;
        }
        Some(s)
    }

    /// The lowest symbol address of a module (its load address, approximately).
    pub fn module_start(&self, module: &str) -> Option<u64> {
        self.syms
            .iter()
            .filter(|s| s.module.as_deref() == Some(module))
            .map(|s| s.addr)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_finds_the_enclosing_symbol() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _text\nffffffff81000100 t foo\n0000000000000000 A zero\n\
             ffffffff81000200 D data\nffffffffc0001000 t bar\t[ext4]\nnot a line\n",
        );
        assert_eq!(k.len(), 3);
        assert_eq!(
            k.lookup(0xffffffff81000150).map(|s| s.name.as_str()),
            Some("foo")
        );
        assert_eq!(
            k.lookup(0xffffffff81000250).map(|s| s.name.as_str()),
            Some("foo")
        );
        let b = k.lookup(0xffffffffc0001010).unwrap();
        assert_eq!(
            (b.name.as_str(), b.module.as_deref()),
            ("bar", Some("ext4"))
        );
        assert!(k.lookup(0x1000).is_none());
        assert!(k.lookup(0xffffffffc0001000 + (2 << 20)).is_none());
        assert_eq!(k.module_start("ext4"), Some(0xffffffffc0001000));
    }
}
