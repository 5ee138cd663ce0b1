//! The kernel's generic event names: hardware, software and hw-cache, spelled as perf
//! spells them.

use crate::attr::types;

/// One generic event (`PERF_COUNT_HW_*` or `PERF_COUNT_SW_*`): the one table of its
/// names, for parsing `-e`, for `list`, and for naming a recording's attr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Generic {
    /// The `config` of its attr.
    pub config: u64,
    /// The names `-e` takes: the first is the one `list` shows, the others its aliases
    /// (perf's `event_symbols_hw`/`event_symbols_sw`: `cpu-cycles OR cycles`).
    pub names: &'static [&'static str],
    /// The name perf gives an attr of it (`evsel__hw_names`/`evsel__sw_names`: `cycles`
    /// for `cpu-cycles`), one of `names`: what `report` and `script` call the event of a
    /// recording without event descriptions.
    pub attr_name: &'static str,
}

const fn g(config: u64, names: &'static [&'static str], attr_name: &'static str) -> Generic {
    Generic {
        config,
        names,
        attr_name,
    }
}

/// Generic hardware events (`PERF_TYPE_HARDWARE`), by config.
pub const HARDWARE: &[Generic] = &[
    g(0, &["cpu-cycles", "cycles"], "cycles"),
    g(1, &["instructions"], "instructions"),
    g(2, &["cache-references"], "cache-references"),
    g(3, &["cache-misses"], "cache-misses"),
    g(
        4,
        &["branch-instructions", "branches"],
        "branch-instructions",
    ),
    g(5, &["branch-misses"], "branch-misses"),
    g(6, &["bus-cycles"], "bus-cycles"),
    g(
        7,
        &["stalled-cycles-frontend", "idle-cycles-frontend"],
        "stalled-cycles-frontend",
    ),
    g(
        8,
        &["stalled-cycles-backend", "idle-cycles-backend"],
        "stalled-cycles-backend",
    ),
    g(9, &["ref-cycles"], "ref-cycles"),
];

/// Software events (`PERF_TYPE_SOFTWARE`), by config.
pub const SOFTWARE: &[Generic] = &[
    g(0, &["cpu-clock"], "cpu-clock"),
    g(1, &["task-clock"], "task-clock"),
    g(2, &["page-faults", "faults"], "page-faults"),
    g(3, &["context-switches", "cs"], "context-switches"),
    g(4, &["cpu-migrations", "migrations"], "cpu-migrations"),
    g(5, &["minor-faults"], "minor-faults"),
    g(6, &["major-faults"], "major-faults"),
    g(7, &["alignment-faults"], "alignment-faults"),
    g(8, &["emulation-faults"], "emulation-faults"),
    g(9, &["dummy"], "dummy"),
    g(10, &["bpf-output"], "bpf-output"),
    g(11, &["cgroup-switches"], "cgroup-switches"),
];

/// perf's name of a generic attr ([`Generic::attr_name`]): `None` for another type or
/// a config no table has. A hardware config's bits 32-63 (the PMU type of a hybrid
/// CPU's core PMU) are ignored.
pub fn attr_name(type_: u32, config: u64) -> Option<&'static str> {
    let (table, config) = match type_ {
        types::HARDWARE => (HARDWARE, config & 0xffff_ffff),
        types::SOFTWARE => (SOFTWARE, config),
        _ => return None,
    };
    table
        .iter()
        .find(|e| e.config == config)
        .map(|e| e.attr_name)
}

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
    for (table, type_) in [(HARDWARE, types::HARDWARE), (SOFTWARE, types::SOFTWARE)] {
        if let Some(e) = table.iter().find(|e| e.names.contains(&l.as_str())) {
            return Some((type_, e.config));
        }
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
        .flat_map(|e| e.names)
        .map(|n| n.to_string())
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

    /// perf's `evsel__hw_names` and `evsel__sw_names`, indexed by config.
    #[test]
    fn attr_names_are_perfs() {
        let hw = [
            "cycles",
            "instructions",
            "cache-references",
            "cache-misses",
            "branch-instructions",
            "branch-misses",
            "bus-cycles",
            "stalled-cycles-frontend",
            "stalled-cycles-backend",
            "ref-cycles",
        ];
        let sw = [
            "cpu-clock",
            "task-clock",
            "page-faults",
            "context-switches",
            "cpu-migrations",
            "minor-faults",
            "major-faults",
            "alignment-faults",
            "emulation-faults",
            "dummy",
            "bpf-output",
            "cgroup-switches",
        ];
        for (type_, names) in [(types::HARDWARE, &hw[..]), (types::SOFTWARE, &sw[..])] {
            for (config, name) in names.iter().enumerate() {
                assert_eq!(attr_name(type_, config as u64), Some(*name));
            }
            assert_eq!(attr_name(type_, names.len() as u64), None);
        }
        // A hybrid core PMU's type in the high bits; other types have no generic names.
        assert_eq!(
            attr_name(types::HARDWARE, 8 << 32 | 1),
            Some("instructions")
        );
        assert_eq!(attr_name(types::SOFTWARE, 1 << 32), None);
        assert_eq!(attr_name(types::RAW, 0), None);
        // Every attr name is one of its event's names, and each name parses back to it.
        for (table, type_) in [(HARDWARE, types::HARDWARE), (SOFTWARE, types::SOFTWARE)] {
            for e in table {
                assert!(e.names.contains(&e.attr_name), "{e:?}");
                for n in e.names {
                    assert_eq!(lookup(n), Some((type_, e.config)), "{n}");
                }
            }
        }
    }

    #[test]
    fn every_canonical_cache_name_resolves() {
        for n in canonical_cache_names() {
            assert!(lookup(&n).is_some(), "{n}");
        }
    }
}
