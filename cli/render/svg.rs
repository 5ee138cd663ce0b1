//! Folded lines → SVG with inferno, plus what the graph says about its event: the unit,
//! the title and the tooltips' count name.
//!
//! Output is deterministic: the lines are sorted before they get here and every colour
//! is a function of the frame's label, so the same folded input gives the same SVG
//! bytes.
//!
//! **Colours say what a frame is**, from its annotation ([`fold::label_kind`]): kernel
//! (`_[k]`) orange, inlined (`_[i]`) aqua, JIT from a perf map (`_[j]`) green, all other
//! code red. inferno's `java` palette reads the same annotations but colours an
//! unannotated name by its spelling (a capital letter, a `.` or a `/` is "Java", green;
//! `::` is C++, yellow), which paints `Py_RunMain` or `foo.isra.0` as JIT code. So every
//! frame's colour is given to inferno in its palette map ([`palette`]): the hue of its
//! kind, the shade from inferno's own deterministic FNV hash of the label (the shades
//! inferno would draw for a kernel, inlined or JIT frame are the same bytes).
//!
//! **Differential graphs** ([`render_diff`]) colour a frame by its change in points of
//! the total ([`DIFF_FULL_SCALE`]), not, as inferno and Gregg's `flamegraph.pl` do, by
//! its change relative to the largest change in the graph (which paints a 1-point
//! change full red when it is the largest).
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

use std::collections::HashSet;

use hwprof_analysis::fold::{self, LabelKind, Weight};
use inferno::flamegraph::color::{Color, MultiPalette, Palette, PaletteMap};
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

/// How a graph is drawn, beyond what it shows: the flame graph options users know from
/// inferno (`--reverse`, `--inverted`, `--flamechart`, `--minwidth`, `--colors`).
#[derive(Clone, Debug, Default)]
pub struct Style {
    /// Each stack drawn leaf first (inferno's `--reverse`): the callers of the hot
    /// functions, merged at the leaves.
    pub reverse: bool,
    /// An icicle graph: the root at the top (inferno's `--inverted`).
    pub inverted: bool,
    /// A flame chart: the x axis is time, stacks in the order given, unmerged but
    /// for neighbours (inferno's `--flamechart`); the lines must come in time order.
    pub flame_chart: bool,
    /// Frames narrower than this percent of the graph are left out (inferno's
    /// `--minwidth`, default 0.01).
    pub min_width: Option<f64>,
    /// One of inferno's palettes instead of hwprof's colours by kind of frame.
    pub colors: Option<Palette>,
}

/// Renders sorted folded lines (`stack COUNT`) to SVG bytes.
pub fn render<'l, I>(lines: I, r: &Render<'_>) -> io::Result<Vec<u8>>
where
    I: IntoIterator<Item = &'l str> + Clone,
{
    render_styled(lines, r, &Style::default())
}

/// [`render`], drawn as `style` says (the lines in time order for a flame chart).
pub fn render_styled<'l, I>(lines: I, r: &Render<'_>, style: &Style) -> io::Result<Vec<u8>>
where
    I: IntoIterator<Item = &'l str> + Clone,
{
    let mut map = palette(lines.clone());
    let map = if style.colors.is_some() {
        None
    } else {
        Some(&mut map)
    };
    let svg = draw(lines, r, map, style)?;
    finish(svg, r, false)
}

/// Renders sorted two-count lines (`stack BASE NEW`, [`fold::diff`]) to SVG bytes: the
/// widths are NEW's, the colours each frame's change (see [`diff_fill`]).
pub fn render_diff<'l, I>(lines: I, r: &Render<'_>) -> io::Result<Vec<u8>>
where
    I: IntoIterator<Item = &'l str>,
{
    let svg = draw(lines, r, None, &Style::default())?;
    finish(svg, r, true)
}

fn draw<'l, I>(
    lines: I,
    r: &Render<'_>,
    map: Option<&mut PaletteMap>,
    style: &Style,
) -> io::Result<Vec<u8>>
where
    I: IntoIterator<Item = &'l str>,
{
    let mut opt = Options::default();
    // Only frames missing from the palette map (the root, `all`) get inferno's colour.
    opt.colors = style.colors.unwrap_or(Palette::Multi(MultiPalette::Java));
    opt.palette_map = map;
    opt.reverse_stack_order = style.reverse;
    if style.inverted {
        opt.direction = flamegraph::Direction::Inverted;
    }
    opt.flame_chart = style.flame_chart;
    if let Some(w) = style.min_width {
        opt.min_width = w;
    }
    opt.deterministic = true;
    opt.hash = false;
    opt.title = r.title.clone();
    opt.subtitle = r.subtitle.clone();
    opt.count_name = r.count_name.clone();
    // The lines come sorted (byte order, as inferno would sort them).
    opt.no_sort = true;
    let mut svg = Vec::with_capacity(1 << 20);
    flamegraph::from_lines(&mut opt, lines, &mut svg)?;
    Ok(svg)
}

/// Recolours a differential graph and adds the source lines to the tooltips.
fn finish(svg: Vec<u8>, r: &Render<'_>, diff: bool) -> io::Result<Vec<u8>> {
    if r.sources.is_empty() && !diff {
        return Ok(svg);
    }
    let mut text =
        String::from_utf8(svg).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    if diff {
        text = recolour_diff(&text);
    }
    if !r.sources.is_empty() {
        text = add_sources(&text, r.sources);
    }
    Ok(text.into_bytes())
}

/// The colour of every frame label of `lines`, by its kind (see the module docs).
pub fn palette<'l, I>(lines: I) -> PaletteMap
where
    I: IntoIterator<Item = &'l str>,
{
    let mut seen: HashSet<&str> = HashSet::new();
    let mut map = PaletteMap::default();
    for line in lines {
        let stack = line.rsplit_once(' ').map_or(line, |(s, _)| s);
        for label in stack.split(';') {
            if seen.insert(label) {
                map.insert(label, frame_colour(label));
            }
        }
    }
    map
}

/// A frame's colour: its kind's hue, shaded by inferno's deterministic hash of the label
/// (the colours of inferno's red, orange, aqua and green palettes, byte for byte).
pub fn frame_colour(label: &str) -> Color {
    // inferno's `deterministic` colouring: FNV-1a of the name, scaled to [0, 1].
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in label.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let v = (hash as f64 / u64::MAX as f64) as f32;
    let t = |base: u8, range: f32| base.saturating_add((range * v) as u8);
    let (r, g, b) = match fold::label_kind(label) {
        LabelKind::User => (t(200, 55.0), t(50, 80.0), t(50, 80.0)),
        LabelKind::Kernel => (t(190, 65.0), t(90, 65.0), 0),
        LabelKind::Inlined => (t(50, 60.0), t(165, 55.0), t(165, 55.0)),
        LabelKind::Jit => (t(50, 60.0), t(200, 55.0), t(50, 60.0)),
    };
    Color { r, g, b }
}

/// The change, in points of the total, that a differential graph draws in full colour;
/// smaller changes are paler in proportion (see [`diff_fill`]).
pub const DIFF_FULL_SCALE: f64 = 10.0;

/// The subtitle's words for the differential colours.
pub fn diff_scale_words() -> String {
    format!(
        "red = grew, blue = shrank, in proportion to the change in points of the total (full colour at ±{DIFF_FULL_SCALE:.0} points or more)"
    )
}

/// The fill of a frame whose share of the total changed by `points` (NEW − BASE, in
/// percentage points of the total, as its tooltip says): white-grey for no change,
/// red for growth, blue for shrinkage, saturated in proportion to the change up to
/// [`DIFF_FULL_SCALE`] points (inferno's end colours: `rgb(250,250,250)` for none,
/// `rgb(255,100,100)` and `rgb(100,100,255)` in full). So a 1-point change is pale
/// whatever else changed.
pub fn diff_fill(points: f64) -> Color {
    let s = (points.abs() / DIFF_FULL_SCALE).min(1.0);
    if !s.is_finite() || points.abs() < 0.005 {
        return Color {
            r: 250,
            g: 250,
            b: 250,
        };
    }
    let c = (250.0 - 150.0 * s).round() as u8;
    if points > 0.0 {
        Color { r: 255, g: c, b: c }
    } else {
        Color { r: c, g: c, b: 255 }
    }
}

/// The change a differential tooltip states: `func (N unit, P%; +D%)` → D.
fn tooltip_change(title: &str) -> Option<f64> {
    let inner = title.strip_suffix("%)")?;
    let (_, d) = inner.rsplit_once("; ")?;
    d.parse::<f64>().ok()
}

/// Gives every frame of inferno's differential SVG the fill of [`diff_fill`] for the
/// change its tooltip states (inferno wrote it as a share of the largest change).
fn recolour_diff(svg: &str) -> String {
    const OPEN: &str = "<title>";
    const CLOSE: &str = "</title>";
    const FILL: &str = "fill=\"";
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(i) = rest.find(OPEN) {
        let body_start = i + OPEN.len();
        let Some(len) = rest[body_start..].find(CLOSE) else {
            break;
        };
        let after_title = body_start + len + CLOSE.len();
        out.push_str(&rest[..after_title]);
        let change = tooltip_change(&rest[body_start..body_start + len]);
        rest = &rest[after_title..];
        // The frame's rectangle follows its title, before the group ends.
        let group_end = rest.find("</g>").unwrap_or(rest.len());
        let (Some(points), Some(f)) = (change, rest[..group_end].find(FILL)) else {
            continue;
        };
        let value_start = f + FILL.len();
        let Some(value_len) = rest[value_start..].find('"') else {
            continue;
        };
        let c = diff_fill(points);
        out.push_str(&rest[..value_start]);
        out.push_str(&format!("rgb({},{},{})", c.r, c.g, c.b));
        rest = &rest[value_start + value_len..];
    }
    out.push_str(rest);
    out
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

    /// The fill of the frame whose tooltip starts with `name (`.
    fn fill_of(svg: &str, name: &str) -> (u8, u8, u8) {
        let at = svg
            .find(&format!("<title>{name} ("))
            .unwrap_or_else(|| panic!("no frame {name} in {svg}"));
        let rest = &svg[at..];
        let f = rest.find("fill=\"rgb(").unwrap() + "fill=\"rgb(".len();
        let v: Vec<u8> = rest[f..rest[f..].find(')').unwrap() + f]
            .split(',')
            .map(|x| x.parse().unwrap())
            .collect();
        (v[0], v[1], v[2])
    }

    fn no_sources() -> &'static HashMap<String, String> {
        static EMPTY: std::sync::OnceLock<HashMap<String, String>> = std::sync::OnceLock::new();
        EMPTY.get_or_init(HashMap::new)
    }

    fn plain(title: &str) -> Render<'static> {
        Render {
            title: title.into(),
            subtitle: None,
            count_name: "samples".into(),
            sources: no_sources(),
        }
    }

    /// Names spelled like Java (a capital, a dot) are user code, drawn red as any other;
    /// kernel, inlined and JIT frames get their hues from their annotations.
    #[test]
    fn frames_are_coloured_by_kind_not_by_spelling() {
        let mut lines = [
            "python3;Py_RunMain;foo.isra.0;sys_read_[k] 10",
            "python3;Py_RunMain;foo.isra.0;mix_[i] 10",
            "python3;Py_RunMain;LFoo::bar_[j] 10",
            "python3;Py_RunMain;std::vec::Vec<T>::push 10",
        ];
        lines.sort_unstable();
        let svg = String::from_utf8(render(lines, &plain("t")).unwrap()).unwrap();
        let red = |(r, g, b): (u8, u8, u8)| r >= 200 && g <= 130 && b <= 130 && g == b;
        for user in [
            "Py_RunMain",
            "foo.isra.0",
            "python3",
            "std::vec::Vec&lt;T&gt;::push",
        ] {
            assert!(
                red(fill_of(&svg, user)),
                "{user}: {:?}",
                fill_of(&svg, user)
            );
        }
        let (r, g, b) = fill_of(&svg, "sys_read");
        assert!(
            r >= 190 && (90..=155).contains(&g) && b == 0,
            "kernel: {r},{g},{b}"
        );
        let (r, g, b) = fill_of(&svg, "mix");
        assert!(r <= 110 && g >= 165 && g == b, "inlined: {r},{g},{b}");
        let (r, g, b) = fill_of(&svg, "LFoo::bar");
        assert!(r <= 110 && g >= 200 && r == b, "JIT: {r},{g},{b}");
    }

    /// The shades are inferno's own for the same hue: a kernel, inlined or JIT frame
    /// (which inferno's java palette colours right) is drawn with the same bytes as
    /// inferno draws it, and so is a lowercase user function.
    #[test]
    fn shades_are_inferno_s() {
        let mut lines = [
            "p;main;work;copy_user_[k] 3",
            "p;main;work;inl_[i] 2",
            "p;main;jitted_[j] 1",
        ];
        lines.sort_unstable();
        let ours = String::from_utf8(render(lines, &plain("t")).unwrap()).unwrap();
        let theirs =
            String::from_utf8(draw(lines, &plain("t"), None, &Style::default()).unwrap()).unwrap();
        for f in ["main", "work", "copy_user", "inl", "jitted"] {
            assert_eq!(fill_of(&ours, f), fill_of(&theirs, f), "{f}");
        }
    }

    fn diff_svg(text_base: &str, text_new: &str) -> String {
        let two = fold::diff(
            &fold::Folded::from_text(text_base),
            &fold::Folded::from_text(text_new),
        )
        .unwrap();
        String::from_utf8(render_diff(two.lines(), &plain("d")).unwrap()).unwrap()
    }

    /// A change of about one point is pale whatever else changed (inferno would paint
    /// the largest change full red, however small); ten points or more is full colour.
    #[test]
    fn differential_colour_follows_the_size_of_the_change() {
        // hot: 50% -> 51.2%, cold: 50% -> 48.8%: the only changes, 1.2 points each.
        let small = diff_svg(
            "p;main;hot 5000\np;main;cold 5000\n",
            "p;main;hot 5120\np;main;cold 4880\n",
        );
        let (r, g, b) = fill_of(&small, "hot");
        assert_eq!(r, 255);
        assert!(g >= 225 && g == b, "+1.2 points is pale red: {r},{g},{b}");
        let (r, g, b) = fill_of(&small, "cold");
        assert_eq!(b, 255);
        assert!(r >= 225 && r == g, "-1.2 points is pale blue: {r},{g},{b}");
        assert_eq!(fill_of(&small, "main"), (250, 250, 250), "no change");
        // hot: 50% -> 80%: full red; cold: full blue.
        let large = diff_svg(
            "p;main;hot 5000\np;main;cold 5000\n",
            "p;main;hot 8000\np;main;cold 2000\n",
        );
        assert_eq!(fill_of(&large, "hot"), (255, 100, 100));
        assert_eq!(fill_of(&large, "cold"), (100, 100, 255));
        // In between, in proportion: 5 points is half way.
        let c = diff_fill(5.0);
        assert_eq!((c.r, c.g, c.b), (255, 175, 175));
        let c = diff_fill(-2.5);
        assert_eq!((c.r, c.g, c.b), (213, 213, 255));
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
