//! `hwprof memory --report`: the functions and stacks that allocated the most bytes
//! (or hold the most, with `--leaks`), with their allocations (blocks) and, for the
//! leaks, the oldest block's age. Stacks are printed whole, leaf first, as bcc's
//! memleak prints them.

use hwprof_analysis::alloc::Table;
use hwprof_analysis::percent as pct;

use crate::render::thousands;

/// The table, by bytes or (`by_count`, `--weight count`) by allocations; the `%`
/// column is of that.
pub fn table(t: &Table, title: &str, leaks: bool, by_count: bool) -> String {
    let count = if leaks { "blocks" } else { "allocs" };
    let by = if !by_count {
        "bytes"
    } else if leaks {
        "blocks"
    } else {
        "allocations"
    };
    let share = |bytes: u64, n: u64| {
        if by_count {
            pct(n, t.count)
        } else {
            pct(bytes, t.bytes)
        }
    };
    let age = |a: Option<u64>| match (leaks, a) {
        (false, _) => String::new(),
        (true, Some(ns)) => format!("  {:>10}", crate::render::human_us(ns / 1000)),
        (true, None) => format!("  {:>10}", "-"),
    };
    let age_head = if leaks {
        format!("  {:>10}", "oldest")
    } else {
        String::new()
    };
    let mut s = format!(
        "# {title}\n#\n# Functions by {by} (inclusive)\n{:>16}  {:>6}  {:>12}{age_head}  function\n",
        "bytes", "%", count
    );
    for r in &t.functions {
        s.push_str(&format!(
            "{:>16}  {:>5.1}%  {:>12}{}  {}\n",
            thousands(r.bytes),
            share(r.bytes, r.count),
            thousands(r.count),
            age(r.oldest_ns),
            r.what
        ));
    }
    s.push_str(&format!(
        "\n# Stacks by {by} (leaf first)\n{:>16}  {:>6}  {:>12}{age_head}\n",
        "bytes", "%", count
    ));
    for r in &t.stacks {
        let comm = r.what.first().map_or("?", String::as_str);
        s.push_str(&format!(
            "{:>16}  {:>5.1}%  {:>12}{}  [{comm}]\n",
            thousands(r.bytes),
            share(r.bytes, r.count),
            thousands(r.count),
            age(r.oldest_ns)
        ));
        for f in r.what.iter().skip(1).rev() {
            s.push_str(&format!("{:>18}{f}\n", ""));
        }
    }
    s
}
