//! Printing probe results: counts, a bcc-style log2 histogram, percentiles from an
//! HdrHistogram, slow calls with their stacks; or the same as JSON.

use std::fmt::Write as _;
use std::io::Write;

use hdrhistogram::Histogram;
use serde_json::{Value, json};

use super::calls::{Durations, FuncResult};
use super::stacks::Stacks;
use super::{Func, ProbeArgs};
use crate::render::{escape, plural};

/// Percentiles of a set of durations (ns).
#[derive(Debug, Default, Clone, Copy)]
pub struct Percentiles {
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest.
    pub max: u64,
}

/// Percentiles of the durations' HdrHistogram.
pub fn percentiles(h: &Histogram<u64>) -> Percentiles {
    if h.is_empty() {
        return Percentiles::default();
    }
    Percentiles {
        p50: h.value_at_quantile(0.50),
        p90: h.value_at_quantile(0.90),
        p99: h.value_at_quantile(0.99),
        max: h.max(),
    }
}

/// One log2 bucket of durations in microseconds: `lo -> hi : count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// The shortest duration it holds (µs).
    pub lo: u64,
    /// The longest (µs).
    pub hi: u64,
    /// Calls that took that long.
    pub count: u64,
}

/// The log2 buckets of `log2_us` (calls by bit length of µs, [`Durations::log2_us`]),
/// from the `0 -> 1` bucket up to the highest non-empty one (empty when there are none).
pub fn log2_buckets(log2_us: &[u64]) -> Vec<Bucket> {
    let Some(top) = log2_us.iter().rposition(|&c| c > 0) else {
        return Vec::new();
    };
    (1..=top.max(1))
        .map(|s| {
            let lo = if s == 1 { 0 } else { 1u64 << (s - 1) };
            let hi = if s >= 64 { u64::MAX } else { (1u64 << s) - 1 };
            let count = log2_us.get(s).copied().unwrap_or(0);
            Bucket { lo, hi, count }
        })
        .collect()
}

/// The histogram as bcc's `print_log2_hist` draws it.
pub fn draw_hist(buckets: &[Bucket]) -> String {
    let max = buckets.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    let mut s = format!("     {:<19} : count     distribution\n", "usecs");
    for &Bucket { lo, hi, count: c } in buckets {
        let n = (c * 40 / max) as usize;
        let _ = writeln!(s, "{lo:>10} -> {hi:<10} : {c:<8} |{:<40}|", "*".repeat(n));
    }
    s
}

/// `1.234 ms` style.
pub fn human(ns: u64) -> String {
    let v = ns as f64;
    if ns >= 1_000_000_000 {
        format!("{:.3} s", v / 1e9)
    } else if ns >= 1_000_000 {
        format!("{:.3} ms", v / 1e6)
    } else if ns >= 1_000 {
        format!("{:.3} us", v / 1e3)
    } else {
        format!("{ns} ns")
    }
}

fn func_json(f: &Func, r: &FuncResult, stacks: &mut Stacks) -> Value {
    let p = percentiles(&r.durations.hist);
    let hist: Vec<Value> = log2_buckets(&r.durations.log2_us)
        .into_iter()
        .map(|Bucket { lo, hi, count }| json!({"lo": lo, "hi": hi, "count": count}))
        .collect();
    let slow: Vec<Value> = r
        .slow
        .iter()
        .map(|s| {
            json!({
                "pid": crate::render::id(s.pid),
                "tid": crate::render::id(s.tid),
                "duration_ns": s.duration_ns,
                "stack": stacks.names(s.pid, &s.stack),
            })
        })
        .collect();
    json!({
        "probe": f.target,
        "count": r.calls,
        "returns": r.returns,
        "timed": r.durations.timed(),
        "hist_unit": "usecs",
        "hist": hist,
        "p50_ns": p.p50,
        "p90_ns": p.p90,
        "p99_ns": p.p99,
        "max_ns": p.max,
        "slow": slow,
    })
}

/// Median durations below this are of the same order as what the probes themselves
/// cost a call (a uprobe and a uretprobe trap: about 10 to 15 µs on a VM here, 1 to 3 µs
/// on bare metal).
pub const SHORT_CALL_NS: u64 = 20_000;

/// A note for a function whose median call is shorter than [`SHORT_CALL_NS`]: its
/// durations include the probes' own cost, and the probes slow the program down.
pub fn short_calls_note(target: &str, durations: &Durations) -> Option<String> {
    if durations.hist.is_empty() {
        return None;
    }
    let p50 = percentiles(&durations.hist).p50;
    (p50 < SHORT_CALL_NS).then(|| {
        format!(
            "{target}: half of the calls took under {}, the order of what the uprobe and uretprobe cost each call (about 10 to 15 us on a VM, 1 to 3 us on bare metal): these durations are upper bounds, and the program ran slower for it; probe a caller that does more per call",
            human(p50)
        )
    })
}

/// Writes every function's results as text or JSON into `w`.
pub fn print(
    w: &mut dyn Write,
    a: &ProbeArgs,
    funcs: &[Func],
    results: &[FuncResult],
    threshold: Option<u64>,
    stacks: &mut Stacks,
) -> anyhow::Result<()> {
    if a.json {
        let mut all: Vec<Value> = funcs
            .iter()
            .zip(results)
            .map(|(f, r)| func_json(f, r, stacks))
            .collect();
        let v = if all.len() == 1 {
            all.pop().unwrap_or(Value::Null)
        } else {
            Value::Array(all)
        };
        serde_json::to_writer_pretty(&mut *w, &v)?;
        writeln!(w)?;
        return Ok(());
    }
    // Text: the probe (a path from the command line) and the stacks' names (symbols
    // and file names) escaped; JSON escapes them itself.
    for (f, r) in funcs.iter().zip(results) {
        writeln!(
            w,
            "{}: {} ({}, {} timed)",
            escape(&f.target),
            plural(r.calls, "call"),
            plural(r.returns, "return"),
            r.durations.timed()
        )?;
        if a.hist && r.durations.timed() > 0 {
            writeln!(w)?;
            write!(w, "{}", draw_hist(&log2_buckets(&r.durations.log2_us)))?;
            let p = percentiles(&r.durations.hist);
            writeln!(
                w,
                "\np50 {}  p90 {}  p99 {}  max {}",
                human(p.p50),
                human(p.p90),
                human(p.p99),
                human(p.max)
            )?;
        }
        if let Some(t) = threshold {
            writeln!(
                w,
                "\n{} slower than {}:",
                plural(r.slow.len() as u64, "call"),
                human(t)
            )?;
            for s in &r.slow {
                writeln!(
                    w,
                    "  pid {} tid {}: {}",
                    crate::render::id(s.pid),
                    crate::render::id(s.tid),
                    human(s.duration_ns)
                )?;
                if a.stacks {
                    for n in stacks.names(s.pid, &s.stack) {
                        writeln!(w, "      {}", escape(&n))?;
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_calls_get_a_note_long_ones_do_not() {
        let note = short_calls_note("./a:f", &durations(&[400, 500, 600])).expect("a note");
        assert!(
            note.starts_with("./a:f: half of the calls took under"),
            "{note}"
        );
        assert!(short_calls_note("./a:f", &durations(&[1_000_000; 3])).is_none());
        assert!(short_calls_note("./a:f", &durations(&[])).is_none());
    }

    fn durations(ns: &[u64]) -> Durations {
        let mut d = Durations::default();
        ns.iter().for_each(|&n| d.record(n));
        d
    }

    #[test]
    fn buckets_and_bars() {
        let d = durations(&[0, 1500, 1_000_000, 1_000_000, 20_000_000]);
        let b = log2_buckets(&d.log2_us);
        let bucket = |lo, hi, count| Bucket { lo, hi, count };
        assert_eq!(b.first(), Some(&bucket(0, 1, 2)));
        assert!(b.contains(&bucket(512, 1023, 2)));
        assert!(b.contains(&bucket(16384, 32767, 1)));
        assert!(b.contains(&bucket(2, 3, 0)));
        let h = draw_hist(&b);
        assert!(h.starts_with("     usecs               : count     distribution\n"));
        assert!(h.contains("|****************************************|"));
        let p = percentiles(&d.hist);
        assert!(p.max >= 20_000_000 && p.max < 20_100_000);
    }
}
