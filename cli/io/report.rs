//! `hwprof io --report`: per file or socket and per syscall, the calls, bytes, errors,
//! total time and p50/p99/max latency (from the HdrHistogram buckets: exact to 3
//! significant digits); the stacks that waited longest, leaf first; with
//! `--threshold`, the slow calls one by one.

use hwprof_analysis::fold::Folded;
use hwprof_analysis::io::{Stats, Table};
use hwprof_analysis::report::top::top;

const TOP_STACKS: usize = 10;
const SLOW_LISTED: usize = 50;

/// `1.234 ms`, `56.7 µs`, `890 ns`, `2.500 s`.
pub fn duration(ns: u64) -> String {
    match ns {
        n if n >= 1_000_000_000 => format!("{:.3} s", n as f64 / 1e9),
        n if n >= 1_000_000 => format!("{:.3} ms", n as f64 / 1e6),
        n if n >= 1000 => format!("{:.1} µs", n as f64 / 1e3),
        n => format!("{n} ns"),
    }
}

fn rows<'a>(s: &mut String, what: &str, rows: impl Iterator<Item = (String, &'a Stats)>) {
    let mut v: Vec<(String, &Stats)> = rows.collect();
    v.sort_by(|a, b| b.1.ns.cmp(&a.1.ns).then(a.0.cmp(&b.0)));
    s.push_str(&format!(
        "{:>10} {:>14} {:>7} {:>12} {:>11} {:>11} {:>11}  {what}\n",
        "calls", "bytes", "errors", "total", "p50", "p99", "max"
    ));
    for (name, st) in v {
        let q = |x: f64| match st.hist.len() {
            0 => "-".to_string(),
            _ => duration(st.hist.value_at_quantile(x)),
        };
        s.push_str(&format!(
            "{:>10} {:>14} {:>7} {:>12} {:>11} {:>11} {:>11}  {}\n",
            crate::render::thousands(st.calls),
            crate::render::thousands(st.bytes),
            crate::render::thousands(st.errors),
            duration(st.ns),
            q(0.5),
            q(0.99),
            match st.hist.len() {
                0 => "-".to_string(),
                _ => duration(st.hist.max()),
            },
            crate::render::escape(&name)
        ));
    }
}

/// The report.
pub fn text(
    t: &Table,
    slow: &[(String, String, u64, u32, i64)],
    f: &Folded,
    title: &str,
) -> String {
    let mut s = format!("# {title}\n#\n# Files and sockets, by time inside calls on them\n");
    rows(&mut s, "file", t.files.iter().map(|(k, v)| (k.clone(), v)));
    s.push_str("\n# System calls\n");
    rows(
        &mut s,
        "syscall",
        t.syscalls.iter().map(|(k, v)| (k.clone(), v)),
    );
    s.push_str("\n# Files by system call\n");
    rows(
        &mut s,
        "syscall file",
        (t.file_syscalls.iter()).map(|((f, sc), v)| (format!("{sc} {f}"), v)),
    );
    if !slow.is_empty() {
        s.push_str(&format!(
            "\n# Slow calls ({} in all; the {} slowest)\n",
            slow.len(),
            SLOW_LISTED.min(slow.len())
        ));
        let mut v: Vec<&(String, String, u64, u32, i64)> = slow.iter().collect();
        v.sort_by_key(|c| std::cmp::Reverse(c.2));
        for (sc, file, ns, tid, ret) in v.into_iter().take(SLOW_LISTED) {
            s.push_str(&format!(
                "{:>12}  tid {tid:<8} {sc}({}) = {ret}\n",
                duration(*ns),
                crate::render::escape(file)
            ));
        }
    }
    let tops = top(f, 0, TOP_STACKS);
    s.push_str(
        "\n# Longest-waiting stacks (leaf first: file, syscall, then the program's frames)\n",
    );
    for (frames, n) in &tops.stacks {
        let comm = frames.first().copied().unwrap_or("?");
        s.push_str(&format!(
            "{:>12}  {:>5.1}%  [{comm}]\n",
            duration(n.saturating_mul(1000)),
            hwprof_analysis::percent(*n, tops.total)
        ));
        for fr in frames.iter().skip(1).rev() {
            s.push_str(&format!("                  {fr}\n"));
        }
    }
    s
}
