//! Rendering `stat` results: perf's human table, perf's CSV (`-x`), and JSON lines;
//! and the wording every command shares for counts ([`plural`]) and ids ([`id`]).

pub mod svg;

use std::io::{self, Write};

use hwprof_pmu::metrics::is_clock;
use serde_json::json;

/// Output format.
#[derive(Clone, Debug)]
pub enum Format {
    /// perf's aligned table.
    Human,
    /// perf's CSV with this separator.
    Csv(String),
    /// One JSON object per event.
    Json,
    /// One JSON object per event, with `perf stat -j`'s keys, order and value forms
    /// (`counter-value` as text, clocks in msec, `event-runtime`, `pcnt-running`...).
    PerfJson,
}

pub use hwprof_pmu::stat::Line;

/// The one escaping of names from outside in text output (comm names, paths, symbols,
/// input lines echoed in messages): control characters as `\n`, `\x1b`...; see
/// [`hwprof_analysis::text`].
pub use hwprof_analysis::text::{escape, escape_bytes};

/// A number's text with thousands separators in its integer part: `1234567` ->
/// `1,234,567`, `format_args!("{:.2}", -1234.567)` -> `-1,234.57`. The one thousands
/// separator of hwprof (stat's tables, flame graph titles, bench reports).
pub fn thousands(n: impl std::fmt::Display) -> String {
    let s = n.to_string();
    let (sign, rest) = match s.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", s.as_str()),
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (int, tail) = rest.split_at(digits);
    let mut out = String::with_capacity(s.len() + digits / 3);
    out.push_str(sign);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (digits - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out.push_str(tail);
    out
}

/// `12.345 s`, `123.4 ms`, `56 µs` (offcpu's and io's titles).
pub fn human_us(us: u64) -> String {
    if us >= 1_000_000 {
        format!("{:.3} s", us as f64 / 1e6)
    } else if us >= 1000 {
        format!("{:.1} ms", us as f64 / 1e3)
    } else {
        format!("{us} µs")
    }
}

/// The non-zero counts of `items` as `1,234 what` (what did not fit the BPF engine's
/// maps, in the warnings of offcpu, io and memory).
pub fn nonzero_counts(items: &[(u64, &str)]) -> Vec<String> {
    items
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{} {what}", thousands(*n)))
        .collect()
}

/// Rounds a percentage for JSON (4 decimals: stable across platforms' float printing):
/// the one rounding of report's JSON (its tables, diffs, branches and call graphs).
pub fn round4(v: f64) -> f64 {
    (v * 10_000.0).round() / 10_000.0
}

/// `noun` for `n` things: `sample` for 1, `samples` otherwise (every count hwprof
/// prints in words goes through this or [`plural`]).
pub fn noun(n: u64, noun: &str) -> String {
    if n == 1 {
        noun.to_string()
    } else {
        format!("{noun}s")
    }
}

/// `1 call`, `2 calls`, `0 calls`.
pub fn plural(n: u64, word: &str) -> String {
    format!("{n} {}", noun(n, word))
}

/// A pid or tid as perf prints it: the kernel's "none" (`(u32)-1`) is -1, never
/// 4294967295 (records carry ids as u32; the kernel means an `int`).
pub fn id(v: u32) -> i32 {
    v as i32
}

fn status_text(l: &Line) -> Option<&'static str> {
    match (l.count, l.value) {
        (None, _) => Some("<not supported>"),
        (Some(_), None) => Some("<not counted>"),
        _ => None,
    }
}

/// Writes the header of a report (human format only).
pub fn header(
    w: &mut dyn Write,
    fmt: &Format,
    target: &str,
    runs: u32,
    interval: bool,
) -> io::Result<()> {
    if !matches!(fmt, Format::Human) {
        return Ok(());
    }
    if interval {
        return writeln!(w, "#           time             counts unit events");
    }
    let runs = if runs > 1 {
        format!(" ({runs} runs)")
    } else {
        String::new()
    };
    // The target is the command line (or process ids) as given: escaped.
    writeln!(
        w,
        "\n Performance counter stats for {}{runs}:\n",
        escape(target)
    )
}

/// Writes event lines; `ts` is the interval timestamp in seconds.
pub fn lines(w: &mut dyn Write, fmt: &Format, ts: Option<f64>, lines: &[Line]) -> io::Result<()> {
    for l in lines {
        match fmt {
            Format::Human => human_line(w, ts, l)?,
            Format::Csv(sep) => csv_line(w, sep, ts, l)?,
            Format::Json => json_line(w, ts, l)?,
            Format::PerfJson => perf_json_line(w, ts, l)?,
        }
    }
    Ok(())
}

fn human_line(w: &mut dyn Write, ts: Option<f64>, l: &Line) -> io::Result<()> {
    let mut s = String::new();
    if let Some(t) = ts {
        s.push_str(&format!("{t:>16.9} "));
    }
    if let Some(c) = l.cpu {
        s.push_str(&format!("CPU{c:<4}"));
    }
    let clock = is_clock(&l.event);
    let (value, unit) = match (status_text(l), l.value) {
        (Some(t), _) => (t.to_string(), if clock { "msec" } else { "" }),
        (None, Some(v)) if clock => (thousands(format_args!("{:.2}", v / 1e6)), "msec"),
        (None, Some(v)) => (thousands(format_args!("{:.0}", v.round())), ""),
        (None, None) => (String::new(), ""),
    };
    s.push_str(&format!("{value:>18} {unit:<4} {:<32}", escape(&l.event)));
    match (&l.metric, status_text(l)) {
        (Some(m), None) => {
            let pct = if m.unit.starts_with("of all") || m.unit.ends_with("idle") {
                "%"
            } else {
                ""
            };
            let mv = format!("{:.3}{pct}", m.value);
            s.push_str(&format!(" # {mv:>8} {:<22}", m.unit));
        }
        _ => s.push_str(&" ".repeat(35)),
    }
    if let Some(sd) = l.stddev_pct {
        s.push_str(&format!("  ( +- {sd:>5.2}% )"));
    }
    if let Some(c) = l.count {
        if c.is_scaled() {
            s.push_str(&format!("  ({:.2}%)", c.pct_running()));
        }
    }
    writeln!(w, "{}", s.trim_end())
}

fn csv_line(w: &mut dyn Write, sep: &str, ts: Option<f64>, l: &Line) -> io::Result<()> {
    let mut f: Vec<String> = Vec::with_capacity(9);
    if let Some(t) = ts {
        f.push(format!("{t:>16.9}"));
    }
    if let Some(c) = l.cpu {
        f.push(format!("CPU{c}"));
    }
    let clock = is_clock(&l.event);
    f.push(match (status_text(l), l.value) {
        (Some(t), _) => t.to_string(),
        (None, Some(v)) if clock => format!("{:.2}", v / 1e6),
        (None, Some(v)) => format!("{:.0}", v.round()),
        (None, None) => String::new(),
    });
    f.push(if clock { "msec".into() } else { String::new() });
    f.push(escape(&l.event).into_owned());
    if let Some(sd) = l.stddev_pct {
        f.push(format!("{sd:.2}%"));
    }
    let c = l.count.unwrap_or_default();
    f.push(c.running.to_string());
    f.push(format!("{:.2}", c.pct_running()));
    match (&l.metric, status_text(l)) {
        (Some(m), None) => {
            f.push(format!("{:.3}", m.value));
            f.push(m.unit.to_string());
        }
        _ => {
            f.push(String::new());
            f.push(String::new());
        }
    }
    writeln!(w, "{}", f.join(sep))
}

fn json_line(w: &mut dyn Write, ts: Option<f64>, l: &Line) -> io::Result<()> {
    let c = l.count;
    let supported = c.is_some();
    let mut o = json!({
        "event": l.event,
        "value": if l.stddev_pct.is_some() { json!(l.value) } else { json!(c.map(|c| c.raw)) },
        "unit": if is_clock(&l.event) { "ns" } else { "" },
        "enabled_ns": c.map_or(0, |c| c.enabled),
        "running_ns": c.map_or(0, |c| c.running),
        "scaled": l.value,
        "pct_running": c.map_or(0.0, |c| (c.pct_running() * 100.0).round() / 100.0),
        "metric": l.metric.map(|m| m.value),
        "metric_unit": l.metric.map(|m| m.unit),
        "supported": supported,
    });
    if let Some(t) = ts {
        o["interval"] = json!(t);
    }
    if let Some(cpu) = l.cpu {
        o["cpu"] = json!(cpu);
    }
    if let Some(sd) = l.stddev_pct {
        o["stddev_pct"] = json!(sd);
    }
    if !supported {
        o["status"] = json!("not supported");
    } else if l.value.is_none() {
        o["status"] = json!("not counted");
    }
    writeln!(w, "{o}")
}

/// A line as `perf stat -j` (6.1) prints it: `{"counter-value" : "0.531750", "unit" :
/// "msec", "event" : "task-clock", "event-runtime" : 531750, "pcnt-running" : 100.00,
/// "metric-value" : 0.441198, "metric-unit" : "CPUs utilized"}`, after `"interval"`
/// (`-I`) and `"cpu"` (`-A`), with `"variance"` (`-r`) after the event; counts that are
/// not there are `"<not supported>"` or `"<not counted>"`.
fn perf_json_line(w: &mut dyn Write, ts: Option<f64>, l: &Line) -> io::Result<()> {
    let text = |s: &str| serde_json::Value::from(s).to_string();
    let mut f: Vec<String> = Vec::with_capacity(9);
    if let Some(t) = ts {
        f.push(format!("\"interval\" : {t:.9}"));
    }
    if let Some(c) = l.cpu {
        f.push(format!("\"cpu\" : \"{c}\""));
    }
    let clock = is_clock(&l.event);
    let value = match (status_text(l), l.value) {
        (Some(t), _) => t.to_string(),
        (None, Some(v)) if clock => format!("{:.6}", v / 1e6),
        (None, Some(v)) => format!("{v:.6}"),
        (None, None) => String::new(),
    };
    f.push(format!("\"counter-value\" : {}", text(&value)));
    let unit = if clock && l.count.is_some() {
        "msec"
    } else {
        ""
    };
    f.push(format!("\"unit\" : {}", text(unit)));
    f.push(format!("\"event\" : {}", text(&l.event)));
    if let Some(sd) = l.stddev_pct {
        f.push(format!("\"variance\" : {sd:.2}"));
    }
    let c = l.count.unwrap_or_default();
    let counted = status_text(l).is_none();
    f.push(format!(
        "\"event-runtime\" : {}",
        if counted { c.running } else { 0 }
    ));
    let pct = if counted { c.pct_running() } else { 100.0 };
    f.push(format!("\"pcnt-running\" : {pct:.2}"));
    let (mv, mu) = match (&l.metric, counted) {
        (Some(m), true) => (m.value, m.unit.to_string()),
        _ => (0.0, String::new()),
    };
    f.push(format!("\"metric-value\" : {mv:.6}"));
    f.push(format!("\"metric-unit\" : {}", text(&mu)));
    writeln!(w, "{{{}}}", f.join(", "))
}

/// Timing of a finished measurement, for the human footer.
#[derive(Clone, Copy, Debug, Default)]
pub struct Times {
    /// Mean wall time, seconds.
    pub wall: f64,
    /// Standard error of the mean wall time, seconds (`-r`).
    pub wall_sd: Option<f64>,
    /// User CPU seconds (of the workload), if known.
    pub user: Option<f64>,
    /// System CPU seconds.
    pub sys: Option<f64>,
}

/// Writes the human footer: elapsed, user and sys time.
pub fn footer(w: &mut dyn Write, fmt: &Format, t: Times) -> io::Result<()> {
    if !matches!(fmt, Format::Human) {
        return Ok(());
    }
    match t.wall_sd {
        Some(sd) => {
            let pct = if t.wall > 0.0 {
                sd * 100.0 / t.wall
            } else {
                0.0
            };
            writeln!(
                w,
                "\n{:>18.6} +- {sd:.6} seconds time elapsed  ( +- {pct:>5.2}% )",
                t.wall
            )?;
        }
        None => writeln!(w, "\n{:>18.9} seconds time elapsed", t.wall)?,
    }
    if let (Some(u), Some(s)) = (t.user, t.sys) {
        writeln!(w, "\n{u:>18.9} seconds user\n{s:>18.9} seconds sys")?;
    }
    writeln!(w)
}

/// Says on stderr how many stacks end in `[truncated]` (DWARF unwinding stopped before
/// the stack's root), so that a graph with cut stacks never looks whole.
pub fn note_truncated(p: &hwprof_symbolize::Profile) {
    if p.truncated == 0 {
        return;
    }
    let samples: u64 = p.samples.iter().map(|s| s.count).sum();
    // The copies' size is in the attrs of raw stacks; stacks unwound while recording
    // carry none.
    let size = p
        .events
        .iter()
        .map(|e| e.attr.sample_stack_user)
        .filter(|&s| s > 0)
        .max();
    eprintln!(
        "hwprof: note: {} of {} {} have truncated user stacks (they end in [truncated]): the stack copy ended before the stack's root; {}",
        thousands(p.truncated),
        thousands(samples),
        noun(samples, "sample"),
        larger_stack_advice(size)
    );
}

/// The largest user stack copy the kernel takes (`--call-graph dwarf,SIZE`: a sample's
/// size is a u16).
pub const MAX_DWARF_STACK: u32 = 65528;

/// What to do about user stacks cut where their copy ended, given the size of the copy
/// when it is known: a larger one, unless it was the largest already.
pub fn larger_stack_advice(size: Option<u32>) -> String {
    match size {
        Some(s) if s >= MAX_DWARF_STACK => format!(
            "the copies were {MAX_DWARF_STACK} bytes already, the most the kernel takes, so these stacks stay truncated with DWARF unwinding (frame pointers, -g, have no such limit where the code keeps them)"
        ),
        Some(s) => format!(
            "a larger --call-graph dwarf,SIZE keeps more (it was {s} bytes; up to {MAX_DWARF_STACK})"
        ),
        None => format!(
            "record with a larger --call-graph dwarf,SIZE if it was below {MAX_DWARF_STACK} bytes, the most the kernel takes"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Raising the copy is offered only when it can be raised, with the size it was.
    #[test]
    fn a_larger_stack_copy_is_offered_only_below_the_maximum() {
        let at_max = larger_stack_advice(Some(MAX_DWARF_STACK));
        assert!(!at_max.contains("larger"), "{at_max}");
        assert!(at_max.contains("the most the kernel takes"), "{at_max}");
        let small = larger_stack_advice(Some(8192));
        assert!(
            small.contains(
                "a larger --call-graph dwarf,SIZE keeps more (it was 8192 bytes; up to 65528)"
            ),
            "{small}"
        );
        assert!(larger_stack_advice(None).contains("if it was below 65528"));
    }
    use hwprof_pmu::Count;
    use hwprof_pmu::metrics::Metric;

    #[test]
    fn plurals_and_ids() {
        assert_eq!(plural(1, "sample"), "1 sample");
        assert_eq!(plural(0, "sample"), "0 samples");
        assert_eq!(plural(2, "call"), "2 calls");
        assert_eq!(noun(1, "block"), "block");
        assert_eq!(id(u32::MAX), -1);
        assert_eq!(id(4_194_304), 4_194_304);
    }

    #[test]
    fn thousands_separators() {
        let f = |v: f64, d: usize| thousands(format_args!("{v:.d$}"));
        assert_eq!(f(1234567.0, 0), "1,234,567");
        assert_eq!(f(999.0, 0), "999");
        assert_eq!(f(1000.0, 0), "1,000");
        assert_eq!(f(1234.567, 2), "1,234.57");
        assert_eq!(f(-1234.0, 0), "-1,234");
        assert_eq!(f(0.87, 2), "0.87");
        assert_eq!(f(-0.4, 0), "-0");
        assert_eq!(f(f64::NAN, 2), "NaN");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(thousands(-1234567i128), "-1,234,567");
        assert_eq!(thousands(0), "0");
    }

    fn line(event: &str, raw: u64, metric: Option<Metric>) -> Line {
        let c = Count {
            raw,
            enabled: 1_161_089,
            running: 1_161_089,
        };
        Line {
            event: event.into(),
            cpu: None,
            count: Some(c),
            value: c.scaled(),
            stddev_pct: None,
            metric,
        }
    }

    fn render(fmt: &Format, ls: &[Line]) -> String {
        let mut v = Vec::new();
        lines(&mut v, fmt, None, ls).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn csv_matches_perf_field_order() {
        let ls = [
            line(
                "task-clock",
                1_161_089,
                Some(Metric {
                    value: 0.468,
                    unit: "CPUs utilized",
                }),
            ),
            line(
                "page-faults",
                50,
                Some(Metric {
                    value: 43.063,
                    unit: "K/sec",
                }),
            ),
            Line {
                event: "cycles".into(),
                cpu: None,
                count: None,
                value: None,
                stddev_pct: None,
                metric: None,
            },
        ];
        assert_eq!(
            render(&Format::Csv(",".into()), &ls),
            "1.16,msec,task-clock,1161089,100.00,0.468,CPUs utilized\n\
             50,,page-faults,1161089,100.00,43.063,K/sec\n\
             <not supported>,,cycles,0,100.00,,\n"
        );
    }

    #[test]
    fn human_matches_perf_layout() {
        let ls = [
            line(
                "task-clock",
                870_000,
                Some(Metric {
                    value: 0.391,
                    unit: "CPUs utilized",
                }),
            ),
            line(
                "page-faults",
                1_234_567,
                Some(Metric {
                    value: 57.779,
                    unit: "K/sec",
                }),
            ),
            Line {
                event: "cycles".into(),
                cpu: None,
                count: None,
                value: None,
                stddev_pct: None,
                metric: None,
            },
        ];
        let out = render(&Format::Human, &ls);
        let l: Vec<&str> = out.lines().collect();
        assert_eq!(
            l[0],
            "              0.87 msec task-clock                       #    0.391 CPUs utilized"
        );
        assert_eq!(
            l[1],
            "         1,234,567      page-faults                      #   57.779 K/sec"
        );
        assert_eq!(l[2], "   <not supported>      cycles");
    }

    #[test]
    fn multiplexed_counts_show_percent_running() {
        let c = Count {
            raw: 1000,
            enabled: 200,
            running: 100,
        };
        let l = Line {
            event: "instructions".into(),
            cpu: None,
            count: Some(c),
            value: c.scaled(),
            stddev_pct: None,
            metric: None,
        };
        let out = render(&Format::Human, std::slice::from_ref(&l));
        assert!(
            out.contains("2,000") && out.trim_end().ends_with("(50.00%)"),
            "{out}"
        );
        let j: serde_json::Value =
            serde_json::from_str(render(&Format::Json, &[l]).trim()).unwrap();
        assert_eq!(j["value"], 1000);
        assert_eq!(j["scaled"], 2000.0);
        assert_eq!(j["pct_running"], 50.0);
    }
}
