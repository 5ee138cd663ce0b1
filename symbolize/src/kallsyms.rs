//! `/proc/kallsyms`: kernel and kernel-module symbols, parsed once into a sorted table.
//!
//! The table is compact (about 16 bytes a symbol plus its name, in one arena), because a
//! kernel has 100,000 and more text symbols and every report or flame graph with kernel
//! frames loads them: this is most of `hwprof report`'s fixed memory.

use std::io::BufRead;

/// One kernel symbol, as [`Kallsyms::lookup`] finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelSym<'a> {
    /// Start address.
    pub addr: u64,
    /// Name.
    pub name: &'a str,
    /// The module (`ext4`), or `None` for the kernel image.
    pub module: Option<&'a str>,
}

/// How deep in a kernel stack [`Kallsyms::tracing_glue`] looks: past it, a glue
/// function is the kernel's own call.
pub const GLUE_DEPTH: usize = 8;

/// A symbol of the table: its address, its name's range in the arena, its module.
#[derive(Clone, Copy, Debug)]
struct Entry {
    addr: u64,
    name: u32,
    len: u16,
    /// Index in `modules` + 1; 0 for the kernel image.
    module: u16,
}

/// A sorted table of kernel symbols.
#[derive(Clone, Debug, Default)]
pub struct Kallsyms {
    syms: Vec<Entry>,
    /// Every name, back to back.
    names: String,
    modules: Vec<String>,
}

impl Kallsyms {
    /// Parses kallsyms text (`ADDR TYPE NAME [MODULE]` lines). Lines that do not parse,
    /// zero addresses (kptr_restrict) and absolute/undefined symbols are skipped.
    pub fn parse(text: &str) -> Kallsyms {
        let mut k = Kallsyms::default();
        for line in text.lines() {
            k.add_line(line);
        }
        k.finish()
    }

    /// Reads and parses `/proc/kallsyms` line by line; an empty table when it cannot be
    /// read.
    pub fn load() -> Kallsyms {
        let Ok(f) = std::fs::File::open("/proc/kallsyms") else {
            return Kallsyms::default();
        };
        let mut k = Kallsyms::default();
        let mut r = std::io::BufReader::new(f);
        let mut line = String::new();
        loop {
            line.clear();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => k.add_line(&line),
            }
        }
        k.finish()
    }

    fn add_line(&mut self, line: &str) {
        let mut it = line.split_ascii_whitespace();
        let (Some(addr), Some(ty), Some(name)) = (it.next(), it.next(), it.next()) else {
            return;
        };
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            return;
        };
        // Text symbols only (and weak ones): data symbols would swallow code ranges.
        if addr == 0 || !matches!(ty, "t" | "T" | "w" | "W") {
            return;
        }
        let (Ok(start), Ok(len)) = (u32::try_from(self.names.len()), u16::try_from(name.len()))
        else {
            return;
        };
        let module = match it.next() {
            None => 0,
            Some(m) => {
                let m = m.trim_start_matches('[').trim_end_matches(']');
                // Modules come in runs: the last one is the likely match.
                match self.modules.iter().rposition(|x| x == m) {
                    Some(i) => i + 1,
                    None => {
                        self.modules.push(m.to_string());
                        self.modules.len()
                    }
                }
            }
        };
        let Ok(module) = u16::try_from(module) else {
            return;
        };
        self.names.push_str(name);
        self.syms.push(Entry {
            addr,
            name: start,
            len,
            module,
        });
    }

    fn finish(mut self) -> Kallsyms {
        // Stable: of symbols at one address, the first listed wins, as before.
        self.syms.sort_by_key(|s| s.addr);
        self.syms.shrink_to_fit();
        self.names.shrink_to_fit();
        self
    }

    fn sym(&self, e: &Entry) -> KernelSym<'_> {
        let start = e.name as usize;
        KernelSym {
            addr: e.addr,
            name: self
                .names
                .get(start..start + usize::from(e.len))
                .unwrap_or(""),
            module: (e.module > 0)
                .then(|| self.modules.get(usize::from(e.module) - 1))
                .flatten()
                .map(String::as_str),
        }
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
    pub fn lookup(&self, addr: u64) -> Option<KernelSym<'_>> {
        let i = self.syms.partition_point(|s| s.addr <= addr);
        let s = self.syms.get(i.checked_sub(1)?)?;
        if i == self.syms.len() && addr - s.addr > (1 << 20) {
            return None;
        }
        Some(self.sym(s))
    }

    /// How many leading frames of `stack` (a kernel stack, leaf first) a BPF program on
    /// a raw tracepoint added: its own JIT frame and the tracing glue that called it
    /// (`bpf_trace_run4`, and where the kernel does not inline them `__bpf_trace_*`,
    /// `__traceiter_*`), above the function that fired the tracepoint. Their number
    /// depends on the kernel's build, so they are found by name: everything up to the
    /// deepest glue frame among the first [`GLUE_DEPTH`] (the program's frame is above
    /// it, and unnamed once it is unloaded). 0 when the table is empty.
    pub fn tracing_glue(&self, stack: &[u64]) -> usize {
        let glue = |ip: u64| {
            self.lookup(ip).is_some_and(|s| {
                s.module.is_none()
                    && (s.name.starts_with("bpf_trace_run")
                        || s.name.starts_with("__bpf_trace_")
                        || s.name.starts_with("__traceiter_"))
            })
        };
        stack
            .iter()
            .take(GLUE_DEPTH)
            .rposition(|&ip| glue(ip))
            .map_or(0, |i| i + 1)
    }

    /// The lowest symbol address of a module (its load address, approximately).
    pub fn module_start(&self, module: &str) -> Option<u64> {
        let m = self.modules.iter().position(|x| x == module)? + 1;
        self.syms
            .iter()
            .filter(|s| usize::from(s.module) == m)
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
        assert_eq!(k.lookup(0xffffffff81000150).map(|s| s.name), Some("foo"));
        assert_eq!(k.lookup(0xffffffff81000250).map(|s| s.name), Some("foo"));
        let b = k.lookup(0xffffffffc0001010).unwrap();
        assert_eq!((b.name, b.module), ("bar", Some("ext4")));
        assert!(k.lookup(0x1000).is_none());
        assert!(k.lookup(0xffffffffc0001000 + (2 << 20)).is_none());
        assert_eq!(k.module_start("ext4"), Some(0xffffffffc0001000));
    }

    const GLUE_SYMS: &str = "\
ffffffff81100000 T __schedule
ffffffff81100800 T schedule
ffffffff81200000 T bpf_trace_run4
ffffffff81200200 T bpf_trace_run5
ffffffff81200400 t __bpf_trace_sched_switch
ffffffff81200480 T __traceiter_sched_switch
ffffffff81200500 T other_fn
";
    /// The program's own symbol, while it is loaded.
    const PROG_SYM: &str = "ffffffffc0000000 t bpf_prog_6deef7357e7b4530_offcpu_switch\t[bpf]\n";
    const PROG_IP: u64 = 0xffffffffc0000040;

    #[test]
    fn the_tracing_glue_and_the_program_above_the_tracepoint_are_counted() {
        let loaded = Kallsyms::parse(&format!("{GLUE_SYMS}{PROG_SYM}"));
        // Unloaded (its symbol gone): its frame is still above the glue.
        let unloaded = Kallsyms::parse(GLUE_SYMS);
        for k in [loaded, unloaded] {
            let s = [
                PROG_IP,
                0xffffffff81200010,
                0xffffffff81100040,
                0xffffffff81100810,
            ];
            assert_eq!(k.tracing_glue(&s), 2);
            // Not inlined: __bpf_trace_ and __traceiter_ frames too.
            let s = [
                PROG_IP,
                0xffffffff81200010,
                0xffffffff81200410,
                0xffffffff81200490,
                0xffffffff81100040,
            ];
            assert_eq!(k.tracing_glue(&s), 4);
        }
    }

    #[test]
    fn stacks_without_glue_or_symbols_or_with_it_deep_keep_every_frame() {
        let k = Kallsyms::parse(GLUE_SYMS);
        assert_eq!(k.tracing_glue(&[0xffffffff81100040, 0xffffffff81200510]), 0);
        let hidden = GLUE_SYMS
            .replace("ffffffff8", "000000000")
            .replace("ffffffffc", "000000000");
        let k0 = Kallsyms::parse(&hidden);
        assert_eq!(
            k0.tracing_glue(&[0xffffffff81200010, 0xffffffff81100040]),
            0
        );
        let mut deep = vec![0xffffffff81100040; GLUE_DEPTH];
        deep.push(0xffffffff81200010);
        assert_eq!(k.tracing_glue(&deep), 0);
    }
}
