//! The kernel's generic event names: hardware, software and hw-cache, spelled as perf
//! spells them.

use crate::attr::types;

/// `(name, config)` of generic hardware events (`PERF_COUNT_HW_*`), aliases included.
pub const HARDWARE: &[(&str, u64)] = &[
    ("cpu-cycles", 0),
    ("cycles", 0),
    ("instructions", 1),
    ("cache-references", 2),
    ("cache-misses", 3),
    ("branch-instructions", 4),
    ("branches", 4),
    ("branch-misses", 5),
    ("bus-cycles", 6),
    ("stalled-cycles-frontend", 7),
    ("idle-cycles-frontend", 7),
    ("stalled-cycles-backend", 8),
    ("idle-cycles-backend", 8),
    ("ref-cycles", 9),
];

/// `(name, config)` of software events (`PERF_COUNT_SW_*`), aliases included.
pub const SOFTWARE: &[(&str, u64)] = &[
    ("cpu-clock", 0),
    ("task-clock", 1),
    ("page-faults", 2),
    ("faults", 2),
    ("context-switches", 3),
    ("cs", 3),
    ("cpu-migrations", 4),
    ("migrations", 4),
    ("minor-faults", 5),
    ("major-faults", 6),
    ("alignment-faults", 7),
    ("emulation-faults", 8),
    ("dummy", 9),
    ("bpf-output", 10),
    ("cgroup-switches", 11),
];

/// hw-cache ids (`PERF_COUNT_HW_CACHE_*`) with the spellings perf accepts.
const CACHES: &[(&[&str], u64)] = &[
    (&["L1-dcache", "l1-d", "l1d", "L1-data"], 0),
    (&["L1-icache", "l1-i", "l1i", "L1-instruction"], 1),
    (&["LLC", "L2"], 2),
    (&["dTLB", "d-tlb", "Data-TLB"], 3),
    (&["iTLB", "i-tlb", "Instruction-TLB"], 4),
    (&["branch", "branches", "bpu", "btb", "bpc"], 5),
    (&["node"], 6),
];

/// hw-cache ops: `(spellings, op id)`.
const OPS: &[(&[&str], u64)] = &[
    (&["load", "loads", "read"], 0),
    (&["store", "stores", "write"], 1),
    (
        &[
            "prefetch",
            "prefetches",
            "speculative-read",
            "speculative-load",
        ],
        2,
    ),
];

/// Resolves a generic name to `(type, config)`: hardware, software or hw-cache.
pub fn lookup(name: &str) -> Option<(u32, u64)> {
    let l = name.to_ascii_lowercase();
    if let Some(&(_, c)) = HARDWARE.iter().find(|(n, _)| *n == l) {
        return Some((types::HARDWARE, c));
    }
    if let Some(&(_, c)) = SOFTWARE.iter().find(|(n, _)| *n == l) {
        return Some((types::SOFTWARE, c));
    }
    cache_lookup(&l).map(|c| (types::HW_CACHE, c))
}

/// Parses `CACHE-OP[-RESULT]` or `CACHE-RESULT` (op defaults to load), e.g.
/// `L1-dcache-load-misses`, `LLC-loads`, `dTLB-misses`.
fn cache_lookup(l: &str) -> Option<u64> {
    for (names, id) in CACHES {
        for n in names.iter() {
            let n = n.to_ascii_lowercase();
            let Some(rest) = l.strip_prefix(&n).and_then(|r| r.strip_prefix('-')) else {
                continue;
            };
            let mut op = None;
            let mut result = None;
            for (ops, oid) in OPS {
                for o in ops.iter() {
                    if rest == *o {
                        op = Some(*oid);
                        result = Some(0);
                    } else if let Some(r) = rest.strip_prefix(o).and_then(|r| r.strip_prefix('-')) {
                        if let Some(res) = result_of(r) {
                            op = Some(*oid);
                            result = Some(res);
                        }
                    }
                }
            }
            if op.is_none() {
                if let Some(res) = result_of(rest) {
                    op = Some(0);
                    result = Some(res);
                }
            }
            if let (Some(op), Some(res)) = (op, result) {
                return Some(id | (op << 8) | (res << 16));
            }
        }
    }
    None
}

fn result_of(s: &str) -> Option<u64> {
    match s {
        "refs" | "reference" | "references" | "access" | "accesses" | "ops" => Some(0),
        "misses" | "miss" => Some(1),
        _ => None,
    }
}

/// Every generic name, for suggestions and `hwprof list`.
pub fn all_names() -> Vec<String> {
    let mut v: Vec<String> = HARDWARE
        .iter()
        .chain(SOFTWARE)
        .map(|(n, _)| n.to_string())
        .collect();
    v.extend(canonical_cache_names());
    v
}

/// perf's canonical hw-cache names: `L1-dcache-loads`, `L1-dcache-load-misses`, ...
pub fn canonical_cache_names() -> Vec<String> {
    let mut v = Vec::new();
    for (cache, _) in CACHES {
        for (op, _) in OPS {
            let (plural, single) = (op[1], op[0]);
            v.push(format!("{}-{plural}", cache[0]));
            v.push(format!("{}-{single}-misses", cache[0]));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_names() {
        assert_eq!(lookup("cycles"), Some((0, 0)));
        assert_eq!(lookup("branch-misses"), Some((0, 5)));
        assert_eq!(lookup("task-clock"), Some((1, 1)));
        assert_eq!(lookup("cs"), Some((1, 3)));
    }

    #[test]
    fn cache_names_encode_as_the_kernel_expects() {
        // id | op << 8 | result << 16, checked against perf -vv output.
        assert_eq!(lookup("L1-dcache-load-misses"), Some((3, 0x10000)));
        assert_eq!(lookup("L1-dcache-loads"), Some((3, 0)));
        assert_eq!(lookup("LLC-load-misses"), Some((3, 0x10002)));
        assert_eq!(lookup("LLC-store-misses"), Some((3, 0x10102)));
        assert_eq!(lookup("dTLB-load-misses"), Some((3, 0x10003)));
        assert_eq!(lookup("iTLB-load-misses"), Some((3, 0x10004)));
        assert_eq!(lookup("L1-icache-load-misses"), Some((3, 0x10001)));
        assert_eq!(lookup("branch-load-misses"), Some((3, 0x10005)));
        assert_eq!(lookup("node-loads"), Some((3, 6)));
        assert_eq!(lookup("L1-dcache-prefetches"), Some((3, 0x200)));
        assert_eq!(lookup("dTLB-misses"), Some((3, 0x10003)));
        assert_eq!(lookup("L1-dcache-frobs"), None);
    }

    #[test]
    fn every_canonical_cache_name_resolves() {
        for n in canonical_cache_names() {
            assert!(lookup(&n).is_some(), "{n}");
        }
    }
}
