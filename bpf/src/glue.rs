//! The kernel frames a raw tracepoint program's kernel stacks begin with: the program's
//! own JIT frame and the tracepoint's BPF glue (`bpf_trace_run4`, and on kernels that do
//! not inline them `__bpf_trace_sched_switch`, `__traceiter_sched_switch`), above the
//! function that fired the tracepoint (`__schedule`). How many there are depends on the
//! kernel's build, so they are found by name in `/proc/kallsyms` and cut off, for stacks
//! that start where perf's would (a classic tracepoint's stack starts at its caller).

use std::collections::BTreeMap;

/// The address ranges of the glue functions (empty when `/proc/kallsyms` is unreadable
/// or its addresses are hidden: stacks then stay whole).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TraceGlue {
    ranges: Vec<(u64, u64)>,
}

/// How deep in a stack glue is looked for: past it, a frame is the kernel's own.
const GLUE_DEPTH: usize = 8;

fn is_glue(name: &str) -> bool {
    name.starts_with("bpf_trace_run")
        || name.starts_with("__bpf_trace_")
        || name.starts_with("__traceiter_")
}

impl TraceGlue {
    /// The glue of the running kernel.
    pub(crate) fn read() -> TraceGlue {
        std::fs::read_to_string("/proc/kallsyms")
            .map(|t| TraceGlue::parse(&t))
            .unwrap_or_default()
    }

    /// The glue of a `/proc/kallsyms` text: each glue function runs from its address to
    /// the next higher symbol's.
    pub(crate) fn parse(kallsyms: &str) -> TraceGlue {
        // address -> whether a glue function starts there (any other name there wins:
        // aliases of a real function are not glue).
        let mut starts: BTreeMap<u64, bool> = BTreeMap::new();
        for line in kallsyms.lines() {
            let mut f = line.split_whitespace();
            let (Some(addr), Some(_kind), Some(name)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            if addr == 0 {
                continue; // hidden (kptr_restrict)
            }
            let glue = is_glue(name);
            starts
                .entry(addr)
                .and_modify(|g| *g &= glue)
                .or_insert(glue);
        }
        let mut ranges = Vec::new();
        let mut it = starts.iter().peekable();
        while let Some((&addr, &glue)) = it.next() {
            if let (true, Some(&(&next, _))) = (glue, it.peek()) {
                ranges.push((addr, next));
            }
        }
        TraceGlue { ranges }
    }

    fn contains(&self, ip: u64) -> bool {
        let i = self.ranges.partition_point(|&(start, _)| start <= ip);
        i > 0 && ip < self.ranges[i - 1].1
    }

    /// Cuts the glue off a kernel stack (leaf first): every frame up to the deepest glue
    /// frame among the first few.
    pub(crate) fn trim(&self, stack: &mut Vec<u64>) {
        let deepest = stack
            .iter()
            .take(GLUE_DEPTH)
            .rposition(|&ip| self.contains(ip));
        if let Some(i) = deepest {
            stack.drain(..=i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KALLSYMS: &str = "\
ffffffff81100000 T __schedule
ffffffff81100800 T schedule
ffffffff81200000 T bpf_trace_run4
ffffffff81200200 T bpf_trace_run5
ffffffff81200400 t __bpf_trace_sched_switch
ffffffff81200480 T __traceiter_sched_switch
ffffffff81200500 T other_fn
ffffffffc0000000 t bpf_prog_6deef7357e7b4530_offcpu_switch\t[bpf]
";

    #[test]
    fn the_glue_and_the_program_above_the_tracepoint_are_cut() {
        let g = TraceGlue::parse(KALLSYMS);
        let prog = 0xffffffffc0000040;
        let mut s = vec![
            prog,
            0xffffffff81200010,
            0xffffffff81100040,
            0xffffffff81100810,
        ];
        g.trim(&mut s);
        assert_eq!(s, [0xffffffff81100040, 0xffffffff81100810]);
        // Not inlined: __bpf_trace_ and __traceiter_ frames too.
        let mut s = vec![
            prog,
            0xffffffff81200010,
            0xffffffff81200410,
            0xffffffff81200490,
            0xffffffff81100040,
        ];
        g.trim(&mut s);
        assert_eq!(s, [0xffffffff81100040]);
    }

    #[test]
    fn stacks_without_glue_or_without_symbols_stay_whole() {
        let g = TraceGlue::parse(KALLSYMS);
        let mut s = vec![0xffffffff81100040, 0xffffffff81200510];
        g.trim(&mut s);
        assert_eq!(s.len(), 2, "other_fn is no glue");
        let hidden = KALLSYMS.replace("ffffffff8", "000000000");
        let hidden = hidden.replace("ffffffffc", "000000000");
        let g = TraceGlue::parse(&hidden);
        let mut s = vec![0xffffffff81200010, 0xffffffff81100040];
        g.trim(&mut s);
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn glue_deep_in_a_stack_is_the_kernel_s_own_call() {
        let g = TraceGlue::parse(KALLSYMS);
        let mut s = vec![0xffffffff81100040; GLUE_DEPTH];
        s.push(0xffffffff81200010);
        let before = s.clone();
        g.trim(&mut s);
        assert_eq!(s, before);
    }
}
