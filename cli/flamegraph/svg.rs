//! Folded lines → SVG with inferno, plus what the graph says about its event: the unit,
//! the title and the tooltips' count name.
//!
//! Output is deterministic: colours come from a hash of the function name (inferno's
//! `deterministic` FNV colouring, never its random one), the lines are sorted before they
//! get here, so the same folded input gives the same SVG bytes. The palette is inferno's
//! `java`, which reads the annotations: kernel `_[k]` orange, inlined `_[i]` aqua, JIT
//! `_[j]` green, C++/Rust paths yellow, other native code red.
//!
//! Tooltips: inferno's `<title>` is `func (N unit, P%)`. Where the function's source line
//! is known it becomes `func (N unit, P%; file.c:42)`: inside the parenthesis, which
//! inferno's script strips to get the label back when zooming. (inferno's
//! `func_frameattrs` would replace the whole title, counts included, so it is not used.)
//!
//! The folded lines come from [`hwprof_analysis::fold`]; the widths are what its
//! [`Weight`] says.

use std::collections::HashMap;
use std::io;

use hwprof_analysis::fold::Weight;
use inferno::flamegraph::color::{MultiPalette, Palette};
use inferno::flamegraph::{self, Options};

use crate::render::thousands;

/// What the graph measures, for its title and tooltips.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit {
    /// Plural noun of one period unit: `ns`, `cycles`, `misses`, `faults`, `events`.
    pub noun: &'static str,
    /// The event counts nanoseconds (cpu-clock, task-clock).
    pub clock: bool,
}

impl Unit {
    /// The noun for `n` units: `1 miss`, `2 misses` (`ns` either way).
    pub fn noun_for(&self, n: u64) -> &'static str {
        if n != 1 {
            return self.noun;
        }
        match self.noun {
            "misses" => "miss",
            "branches" => "branch",
            "switches" => "switch",
            "cache references" => "cache reference",
            other => other
                .strip_suffix('s')
                .filter(|_| other != "ns")
                .unwrap_or(other),
        }
    }
}

/// The unit of an event's period, from its name (`tracepoint`: a tracepoint event).
pub fn unit_of(event: &str, tracepoint: bool) -> Unit {
    let base = event
        .split(':')
        .next()
        .unwrap_or(event)
        .to_ascii_lowercase();
    let noun = if tracepoint {
        "events"
    } else if base == "cpu-clock" || base == "task-clock" {
        return Unit {
            noun: "ns",
            clock: true,
        };
    } else if base.contains("miss") {
        "misses"
    } else if base.contains("fault") {
        "faults"
    } else if base.contains("cycles") {
        "cycles"
    } else if base.contains("instructions") {
        "instructions"
    } else if base.contains("cache") {
        "cache references"
    } else if base.contains("branch") {
        "branches"
    } else if base.contains("switch") || base == "cs" {
        "switches"
    } else if base.contains("migration") {
        "migrations"
    } else {
        "events"
    };
    Unit { noun, clock: false }
}

/// The title: names the event, its unit and the total, e.g.
/// `cpu-clock: 12.346 s on CPU (12,345,678,901 ns, period), 12,345 samples`,
/// `cache-misses: 1,234,567 misses (period), 1,234 samples`,
/// `MEM_LOAD_RETIRED.L3_MISS: load latency (weight), 123,456 cycles, 1,234 samples`.
pub fn title(event: &str, unit: &Unit, m: Weight, total: u64, samples: u64, period: u64) -> String {
    let secs = |ns: u64| format!("{:.3} s on CPU", ns as f64 / 1e9);
    // `1 sample`, `12,345 samples`.
    let samples_of = |n: u64| {
        let s = if n == 1 { "sample" } else { "samples" };
        format!("{} {s}", thousands(n))
    };
    match m {
        Weight::Samples if unit.clock => {
            format!("{event}: {}, {}", samples_of(total), secs(period))
        }
        Weight::Samples => format!(
            "{event}: {}, {} {}",
            samples_of(total),
            thousands(period),
            unit.noun_for(period)
        ),
        Weight::Period if unit.clock => format!(
            "{event}: {} ({} ns, period), {}",
            secs(total),
            thousands(total),
            samples_of(samples)
        ),
        Weight::Period => format!(
            "{event}: {} {} (period), {}",
            thousands(total),
            unit.noun_for(total),
            samples_of(samples)
        ),
        Weight::Weight => format!(
            "{event}: load latency (weight), {} cycles, {}",
            thousands(total),
            samples_of(samples)
        ),
        Weight::Micros => format!("{event}: {} µs, {}", thousands(total), samples_of(samples)),
    }
}

/// The tooltips' count name (`1,234 misses, 12.5%`).
pub fn count_name(unit: &Unit, m: Weight) -> String {
    match m {
        Weight::Samples => "samples".to_string(),
        Weight::Period => unit.noun.to_string(),
        Weight::Weight => "cycles".to_string(),
        Weight::Micros => "µs".to_string(),
    }
}

/// What to draw.
#[derive(Clone, Debug)]
pub struct Render<'a> {
    /// The title line.
    pub title: String,
    /// A second line under the title, if any.
    pub subtitle: Option<String>,
    /// The count name of tooltips.
    pub count_name: String,
    /// Function name → `file:line`, added to its tooltips.
    pub sources: &'a HashMap<String, String>,
}

/// Renders sorted folded lines (one or two counts) to SVG bytes.
pub fn render<'l, I>(lines: I, r: &Render<'_>) -> io::Result<Vec<u8>>
where
    I: IntoIterator<Item = &'l str>,
{
    let mut opt = Options::default();
    opt.colors = Palette::Multi(MultiPalette::Java);
    opt.deterministic = true;
    opt.hash = false;
    opt.title = r.title.clone();
    opt.subtitle = r.subtitle.clone();
    opt.count_name = r.count_name.clone();
    // The lines come sorted (byte order, as inferno would sort them).
    opt.no_sort = true;
    let mut svg = Vec::with_capacity(1 << 20);
    flamegraph::from_lines(&mut opt, lines, &mut svg)?;
    if r.sources.is_empty() {
        return Ok(svg);
    }
    let text = String::from_utf8(svg).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    Ok(add_sources(&text, r.sources).into_bytes())
}

/// Adds `; file:line` inside the count parenthesis of every `<title>` whose function has
/// a known source line.
fn add_sources(svg: &str, sources: &HashMap<String, String>) -> String {
    const OPEN: &str = "<title>";
    const CLOSE: &str = "</title>";
    let mut out = String::with_capacity(svg.len() + svg.len() / 16);
    let mut rest = svg;
    while let Some(i) = rest.find(OPEN) {
        let body_start = i + OPEN.len();
        let Some(len) = rest[body_start..].find(CLOSE) else {
            break;
        };
        let body = &rest[body_start..body_start + len];
        out.push_str(&rest[..body_start]);
        match with_source(body, sources) {
            Some(b) => out.push_str(&b),
            None => out.push_str(body),
        }
        rest = &rest[body_start + len..];
    }
    out.push_str(rest);
    out
}

fn with_source(body: &str, sources: &HashMap<String, String>) -> Option<String> {
    let body_inner = body.strip_suffix(')')?;
    let open = body_inner.rfind(" (")?;
    let func = unescape(&body_inner[..open]);
    let src = sources.get(func.as_str())?;
    Some(format!("{body_inner}; {})", escape(src)))
}

fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_titles() {
        assert_eq!(unit_of("cpu-clock", false).noun, "ns");
        assert!(unit_of("task-clock:u", false).clock);
        assert_eq!(unit_of("cache-misses", false).noun, "misses");
        assert_eq!(unit_of("MEM_LOAD_RETIRED.L3_MISS", false).noun, "misses");
        assert_eq!(unit_of("cache-references", false).noun, "cache references");
        assert_eq!(unit_of("page-faults", false).noun, "faults");
        assert_eq!(unit_of("cycles:ppp", false).noun, "cycles");
        assert_eq!(unit_of("sched:sched_switch", true).noun, "events");
        assert_eq!(thousands(0), "0");
        for (event, one) in [
            ("cycles", "cycle"),
            ("page-faults", "fault"),
            ("branch-misses", "miss"),
            ("cache-references", "cache reference"),
            ("cpu-clock", "ns"),
            ("context-switches", "switch"),
        ] {
            assert_eq!(unit_of(event, false).noun_for(1), one);
        }
        assert_eq!(thousands(1234567), "1,234,567");
        let u = unit_of("cpu-clock", false);
        assert_eq!(
            title(
                "cpu-clock",
                &u,
                Weight::Period,
                12_345_678_901,
                12_345,
                12_345_678_901
            ),
            "cpu-clock: 12.346 s on CPU (12,345,678,901 ns, period), 12,345 samples"
        );
        let u = unit_of("cache-misses", false);
        assert_eq!(
            title("cache-misses", &u, Weight::Period, 1_234_567, 12, 1_234_567),
            "cache-misses: 1,234,567 misses (period), 12 samples"
        );
        assert_eq!(
            title("cache-misses", &u, Weight::Period, 1, 1, 1),
            "cache-misses: 1 miss (period), 1 sample"
        );
        let u = unit_of("cpu-clock", false);
        assert_eq!(
            title("cpu-clock", &u, Weight::Samples, 1, 1, 250_000),
            "cpu-clock: 1 sample, 0.000 s on CPU"
        );
    }

    #[test]
    fn deterministic_svg_with_sources() {
        let mut sources = HashMap::new();
        sources.insert("hot_a".to_string(), "a<b>.c:10".to_string());
        sources.insert("x<y>".to_string(), "x.cc:3".to_string());
        let lines = [
            "p;main;hot_a 30",
            "p;main;hot_b 10",
            "p;main;x<y> 5",
            "p;sys_k_[k] 1",
        ];
        let r = Render {
            title: "t".into(),
            subtitle: None,
            count_name: "misses".into(),
            sources: &sources,
        };
        let a = render(lines, &r).unwrap();
        let b = render(lines, &r).unwrap();
        assert_eq!(a, b, "same input, same bytes");
        let s = String::from_utf8(a).unwrap();
        assert!(s.starts_with("<?xml"), "{}", &s[..100]);
        assert!(
            s.contains("<title>hot_a (30 misses, 65.22%; a&lt;b&gt;.c:10)</title>"),
            "{s}"
        );
        assert!(
            s.contains("<title>x&lt;y&gt; (5 misses, 10.87%; x.cc:3)</title>"),
            "{s}"
        );
        assert!(
            s.contains("<title>hot_b (10 misses, 21.74%)</title>"),
            "{s}"
        );
    }
}
