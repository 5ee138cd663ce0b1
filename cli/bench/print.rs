//! The human table (with the distribution plot) and the Markdown table of a bench run.
//! What came from outside (the command line, metric names made of event names, a
//! baseline's name and date, the machine's CPU name) is escaped where it is printed.

use std::io::Write;

use hwprof_analysis::bench::command::shell_words;
use hwprof_analysis::bench::compare::{IMPROVEMENT, NEGLIGIBLE, REGRESSION};
use hwprof_analysis::bench::doc::{Comparison, Doc, Metric, MetricChange, Unit};

use crate::render::escape;

/// A value with its unit, four significant digits for times and sizes, counts whole
/// with thousands separators.
pub fn value(v: f64, unit: Unit) -> String {
    let sig = |x: f64, suffix: &str| -> String {
        let d = if x.abs() >= 100.0 {
            1
        } else if x.abs() >= 10.0 {
            2
        } else {
            3
        };
        format!("{x:.d$} {suffix}")
    };
    match unit {
        Unit::Ns => match v.abs() {
            a if a < 1e3 => format!("{v:.0} ns"),
            a if a < 1e6 => sig(v / 1e3, "µs"),
            a if a < 1e9 => sig(v / 1e6, "ms"),
            _ => sig(v / 1e9, "s"),
        },
        Unit::Kib => match v.abs() {
            a if a < 1024.0 => format!("{v:.0} KiB"),
            a if a < 1024.0 * 1024.0 => sig(v / 1024.0, "MiB"),
            _ => sig(v / (1024.0 * 1024.0), "GiB"),
        },
        Unit::Count => {
            if v.fract() != 0.0 && v.abs() < 1000.0 {
                format!("{v:.1}")
            } else {
                crate::render::thousands(v.round() as i128)
            }
        }
    }
}

/// A signed percentage: `+12.3%`; `from 0` when the baseline's median is 0 (a change
/// no percentage describes; JSON says `null`).
pub fn pct(p: Option<f64>) -> String {
    match p {
        Some(p) if p.abs() >= 100.0 => format!("{p:+.0}%"),
        Some(p) => format!("{p:+.1}%"),
        None => "from 0".to_string(),
    }
}

fn p_text(p: f64) -> String {
    if p < 0.001 {
        "<0.001".to_string()
    } else {
        format!("{p:.3}")
    }
}

fn verdict_text(c: &MetricChange) -> String {
    let t = match c.verdict.as_str() {
        REGRESSION if c.gating => "REGRESSION",
        REGRESSION => "regression",
        IMPROVEMENT => "improvement",
        NEGLIGIBLE => "within threshold",
        _ => "no change",
    };
    if c.gating {
        t.to_string()
    } else {
        format!("{t}*")
    }
}

/// One line of a histogram of `values` over `[lo, hi]` in `width` bins, drawn with block
/// characters (a blank bin had no runs).
pub fn spark(values: &[f64], lo: f64, hi: f64, width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let mut bins = vec![0usize; width];
    for &v in values {
        let i = if hi > lo {
            (((v - lo) / (hi - lo)) * width as f64) as usize
        } else {
            width / 2
        };
        bins[i.min(width - 1)] += 1;
    }
    let most = bins.iter().copied().max().unwrap_or(0).max(1);
    bins.iter()
        .map(|&b| {
            if b == 0 {
                ' '
            } else {
                BARS[((b * 8).div_ceil(most)).clamp(1, 8) - 1]
            }
        })
        .collect()
}

/// Columns padded to their widest cell; `right[i]` right-aligns column i.
fn table(w: &mut dyn Write, rows: &[Vec<String>], right: &[bool]) -> std::io::Result<()> {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            let pad = widths[i].saturating_sub(c.chars().count());
            if i > 0 {
                line.push_str("  ");
            }
            if right.get(i).copied().unwrap_or(false) {
                line.push_str(&" ".repeat(pad));
                line.push_str(c);
            } else {
                line.push_str(c);
                line.push_str(&" ".repeat(pad));
            }
        }
        writeln!(w, "{}", line.trim_end())?;
    }
    Ok(())
}

/// The metrics not supported here, as one escaped list.
fn unsupported(doc: &Doc) -> String {
    doc.metrics
        .iter()
        .filter(|m| !m.supported)
        .map(|m| escape(&m.name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn runs_line(doc: &Doc) -> String {
    let s = &doc.settings;
    let warm = match s.warmup {
        0 => "no warm-up".to_string(),
        1 => "1 warm-up run".to_string(),
        n => format!("{n} warm-up runs"),
    };
    format!(
        "{}, {warm}",
        crate::render::plural(u64::from(s.runs), "run")
    )
}

/// A command line as a shell would take it, escaped.
fn command(argv: &[String]) -> String {
    escape(&shell_words(argv)).into_owned()
}

fn title(doc: &Doc) -> String {
    let cmd = command(&doc.command);
    match (&doc.baseline, &doc.comparison) {
        (Some(b), Some(c)) if c.mode == "ab" => {
            format!("A: {}  vs  B: {cmd} (interleaved)", command(&b.command))
        }
        (Some(b), Some(_)) => format!(
            "{cmd} vs baseline '{}' ({}, {})",
            escape(b.name.as_deref().unwrap_or("?")),
            escape(&b.created),
            crate::render::plural(b.runs_measured() as u64, "run")
        ),
        _ => cmd,
    }
}

/// The human-readable report on `w`.
pub fn human(w: &mut dyn Write, doc: &Doc) -> std::io::Result<()> {
    writeln!(w, "hwprof bench: {}", title(doc))?;
    match (&doc.baseline, &doc.comparison) {
        (Some(base), Some(cmp)) => human_comparison(w, doc, base, cmp),
        _ => human_summary(w, doc),
    }
}

fn human_summary(w: &mut dyn Write, doc: &Doc) -> std::io::Result<()> {
    writeln!(w, "{}\n", runs_line(doc))?;
    let mut rows = vec![
        [
            "metric",
            "median",
            "MAD",
            "min",
            "95% CI of median",
            "distribution (min … max)",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for m in doc.metrics.iter().filter(|m| m.supported) {
        let (Some(med), Some(mad), Some(min), Some(max), Some([lo, hi])) =
            (m.median, m.mad, m.min, m.max, m.ci95)
        else {
            continue;
        };
        let v = |x| value(x, m.unit);
        rows.push(vec![
            name_of(m),
            v(med),
            v(mad),
            v(min),
            format!("[{}, {}]", v(lo), v(hi)),
            format!("│{}│ {}", spark(&m.values, min, max, 24), v(max)),
        ]);
    }
    table(w, &rows, &[false, true, true, true, true, false])?;
    let uns = unsupported(doc);
    if !uns.is_empty() {
        writeln!(w, "\nnot supported here: {uns}")?;
    }
    Ok(())
}

fn name_of(m: &Metric) -> String {
    if m.scaled {
        format!("{} (scaled)", escape(&m.name))
    } else {
        escape(&m.name).into_owned()
    }
}

fn ci_text(c: &MetricChange) -> String {
    match c.change_ci {
        Some([lo, hi]) => format!("[{}, {}]", pct(Some(lo)), pct(Some(hi))),
        None => "-".to_string(),
    }
}

fn human_comparison(
    w: &mut dyn Write,
    doc: &Doc,
    base: &Doc,
    cmp: &Comparison,
) -> std::io::Result<()> {
    let s = &doc.settings;
    writeln!(
        w,
        "{}; threshold {}%, confidence {}%; verdict from {}\n",
        runs_line(doc),
        s.threshold_pct,
        s.confidence * 100.0,
        escape(&s.gate.join(", "))
    )?;
    let (a, b) = if cmp.mode == "ab" {
        ("A", "B")
    } else {
        ("baseline", "current")
    };
    let ci_head = format!("{}% CI of change", s.confidence * 100.0);
    let mut rows = vec![
        ["metric", a, b, "change", &ci_head, "p", "verdict"]
            .map(String::from)
            .to_vec(),
    ];
    for c in &cmp.metrics {
        rows.push(vec![
            escape(&c.name).into_owned(),
            value(c.baseline_median, c.unit),
            value(c.median, c.unit),
            pct(c.change_pct),
            ci_text(c),
            p_text(c.p_adjusted),
            verdict_text(c),
        ]);
    }
    table(w, &rows, &[false, true, true, true, true, true, false])?;
    writeln!(
        w,
        "(medians; p: two-sided Mann-Whitney U, Holm-corrected over the {} metrics; * evidence only, not gating the verdict: see --gate)",
        cmp.metrics.len()
    )?;
    // Distributions: both sides of each metric on one scale.
    writeln!(
        w,
        "\ndistribution ({a} above {b}, each metric on one scale, min … max)"
    )?;
    let mut rows = Vec::new();
    for c in &cmp.metrics {
        let find = |d: &Doc| {
            d.metrics
                .iter()
                .find(|m| m.name == c.name)
                .map(|m| m.values.clone())
        };
        let (Some(bv), Some(cv)) = (find(base), find(doc)) else {
            continue;
        };
        let lo = bv.iter().chain(&cv).copied().fold(f64::INFINITY, f64::min);
        let hi = bv
            .iter()
            .chain(&cv)
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        rows.push(vec![
            escape(&c.name).into_owned(),
            a.to_string(),
            format!("│{}│", spark(&bv, lo, hi, 32)),
            value(lo, c.unit),
        ]);
        rows.push(vec![
            String::new(),
            b.to_string(),
            format!("│{}│", spark(&cv, lo, hi, 32)),
            value(hi, c.unit),
        ]);
    }
    table(w, &rows, &[false, false, false, true])?;
    let uns = unsupported(doc);
    if !uns.is_empty() {
        writeln!(w, "\nnot supported here: {uns}")?;
    }
    writeln!(w, "\n{}", summary_line(cmp, s.threshold_pct, s.confidence))
}

/// The one-line verdict: `REGRESSION: wall-time +99.8%, ...`.
pub fn summary_line(cmp: &Comparison, threshold: f64, confidence: f64) -> String {
    let list = |v: &str| -> String {
        cmp.metrics
            .iter()
            .filter(|m| m.gating && m.verdict == v)
            .map(|m| format!("{} {}", escape(&m.name), pct(m.change_pct)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let basis = format!(
        "significant at {}% confidence and beyond the {}% threshold",
        confidence * 100.0,
        threshold
    );
    let evidence: Vec<String> = cmp
        .metrics
        .iter()
        .filter(|m| !m.gating && (m.verdict == REGRESSION || m.verdict == IMPROVEMENT))
        .map(|m| format!("{} {}", escape(&m.name), pct(m.change_pct)))
        .collect();
    let evidence = if evidence.is_empty() {
        String::new()
    } else {
        format!(
            "; also changed (evidence, not gating): {}",
            evidence.join(", ")
        )
    };
    let line = match cmp.verdict.as_str() {
        REGRESSION => {
            let imp = list(IMPROVEMENT);
            let also = if imp.is_empty() {
                String::new()
            } else {
                format!("; improved: {imp}")
            };
            format!("REGRESSION: {} ({basis}){also}", list(REGRESSION))
        }
        IMPROVEMENT => format!("no regression; improved: {} ({basis})", list(IMPROVEMENT)),
        _ => format!(
            "no regression: no gating metric changed beyond the {threshold}% threshold with {}% confidence",
            confidence * 100.0
        ),
    };
    line + &evidence
}

/// A Markdown report, fit for a pull-request comment.
pub fn markdown(w: &mut dyn Write, doc: &Doc) -> std::io::Result<()> {
    let s = &doc.settings;
    let m = &doc.machine;
    let cmd = |argv: &[String]| format!("`{}`", command(argv));
    let heading = match (&doc.baseline, &doc.comparison) {
        (Some(b), Some(c)) if c.mode == "ab" => {
            format!("A: {}  vs  B: {}", cmd(&b.command), cmd(&doc.command))
        }
        (Some(b), Some(_)) => format!(
            "{} vs baseline `{}`",
            cmd(&doc.command),
            escape(b.name.as_deref().unwrap_or("?"))
        ),
        _ => cmd(&doc.command),
    };
    writeln!(w, "#### hwprof bench: {heading}\n")?;
    let machine = format!(
        "{} ({} CPUs), kernel {}, {}",
        if m.cpu.is_empty() {
            "unknown CPU".into()
        } else {
            escape(&m.cpu)
        },
        m.cpus,
        escape(&m.kernel),
        if m.pmu {
            "hardware PMU"
        } else {
            "no hardware PMU"
        }
    );
    match (&doc.baseline, &doc.comparison) {
        (Some(_), Some(cmp)) => {
            let line = summary_line(cmp, s.threshold_pct, s.confidence);
            let (head, rest) = line.split_once(':').unwrap_or((&line, ""));
            writeln!(w, "**{head}**:{rest}\n")?;
            let (a, b) = if cmp.mode == "ab" {
                ("A", "B")
            } else {
                ("baseline", "current")
            };
            writeln!(
                w,
                "| metric | {a} | {b} | change | {}% CI | p | verdict |",
                s.confidence * 100.0
            )?;
            writeln!(w, "|:--|--:|--:|--:|:--|--:|:--|")?;
            for c in &cmp.metrics {
                let v = verdict_text(c);
                let v = if c.gating && (c.verdict == REGRESSION || c.verdict == IMPROVEMENT) {
                    format!("**{}**", v.to_lowercase())
                } else {
                    v.replace('*', "\\*")
                };
                writeln!(
                    w,
                    "| {} | {} | {} | {} | {} | {} | {v} |",
                    escape(&c.name),
                    value(c.baseline_median, c.unit),
                    value(c.median, c.unit),
                    pct(c.change_pct),
                    ci_text(c),
                    p_text(c.p_adjusted),
                )?;
            }
            writeln!(
                w,
                "\n<sub>{}; medians; p: two-sided Mann-Whitney U, Holm-corrected; confidence {}%, threshold {}%; \\* evidence only (not gating). {machine}.</sub>",
                runs_line(doc),
                s.confidence * 100.0,
                s.threshold_pct
            )?;
            for warn in &cmp.warnings {
                writeln!(w, "\n> **warning:** {}", escape(warn))?;
            }
        }
        _ => {
            writeln!(w, "| metric | median | MAD | min | 95% CI of median |")?;
            writeln!(w, "|:--|--:|--:|--:|:--|")?;
            for m in doc.metrics.iter().filter(|m| m.supported) {
                let (Some(med), Some(mad), Some(min), Some([lo, hi])) =
                    (m.median, m.mad, m.min, m.ci95)
                else {
                    continue;
                };
                let v = |x| value(x, m.unit);
                writeln!(
                    w,
                    "| {} | {} | {} | {} | [{}, {}] |",
                    name_of(m),
                    v(med),
                    v(mad),
                    v(min),
                    v(lo),
                    v(hi)
                )?;
            }
            writeln!(w, "\n<sub>{}. {machine}.</sub>", runs_line(doc))?;
        }
    }
    let uns = unsupported(doc);
    if !uns.is_empty() {
        writeln!(w, "\n<sub>not supported here: {uns}</sub>")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_percentages() {
        assert_eq!(value(512.0, Unit::Ns), "512 ns");
        assert_eq!(value(12_345_678.0, Unit::Ns), "12.35 ms");
        assert_eq!(value(1.5e9, Unit::Ns), "1.500 s");
        assert_eq!(value(1_234_567.0, Unit::Count), "1,234,567");
        assert_eq!(value(52.5, Unit::Count), "52.5");
        assert_eq!(value(2048.0, Unit::Kib), "2.000 MiB");
        assert_eq!(pct(Some(9.87)), "+9.9%");
        assert_eq!(pct(Some(-100.0)), "-100%");
        assert_eq!(pct(None), "from 0");
        assert_eq!(p_text(0.0001), "<0.001");
    }

    #[test]
    fn sparkline_bins() {
        assert_eq!(spark(&[0.0, 0.0, 10.0], 0.0, 10.0, 4), "█  ▄");
        assert_eq!(spark(&[5.0, 5.0], 5.0, 5.0, 3), " █ ");
    }
}
