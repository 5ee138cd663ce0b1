//! `hwprof annotate SYMBOL`: a function's samples by source line.
//!
//! A sample belongs to a function when its Self frame (the first frame that is not an
//! inlined one, as report counts) is that function; it counts on the line of its
//! innermost frame (the inlined code's line where code was inlined: perf's srcline of
//! the sampled address). A name found in several modules (or at several addresses)
//! is the one with the most period. No I/O: which addresses each line covers is the
//! symbolizer's (`hwprof_symbolize::lines`), the drawing the binary's.

use std::collections::{BTreeMap, BTreeSet};

use hwprof_symbolize::Profile;

/// One source line of the function and its samples.
#[derive(Clone, Debug, PartialEq)]
pub struct LineRow {
    /// The source file as DWARF names it (`None`: no line information).
    pub file: Option<String>,
    /// The line.
    pub line: Option<u32>,
    /// Samples on this line.
    pub samples: u64,
    /// Their period.
    pub period: u64,
}

/// A function's samples by line.
#[derive(Clone, Debug, PartialEq)]
pub struct Annotation {
    /// The function's name.
    pub function: String,
    /// Its module (the path as mapped).
    pub module: Option<String>,
    /// Its start, relative to the module (a file offset for files).
    pub start: u64,
    /// The event's name.
    pub event: String,
    /// The function's samples and period.
    pub samples: u64,
    /// Their period, what the shares are of.
    pub period: u64,
    /// The lines with samples, by file and line.
    pub lines: Vec<LineRow>,
}

impl Annotation {
    /// A line's share of the function's period, in percent.
    pub fn pct(&self, period: u64) -> f64 {
        if self.period == 0 {
            0.0
        } else {
            period as f64 * 100.0 / self.period as f64
        }
    }
}

/// Why there is no annotation.
#[derive(Clone, Debug, PartialEq)]
pub enum Missing {
    /// No sample of the event is in a function of that name; the names with samples
    /// nearest to it, nearest first.
    NoSuchFunction(Vec<String>),
}

/// The annotation of function `name` in event `event` of `p`.
pub fn annotate(p: &Profile, event: usize, name: &str) -> Result<Annotation, Missing> {
    // (module, start) -> (samples, period, per (file, line): samples, period).
    type Lines = BTreeMap<(Option<String>, Option<u32>), (u64, u64)>;
    let mut found: BTreeMap<(Option<String>, u64), (u64, u64, Lines)> = BTreeMap::new();
    let mut names: BTreeSet<&str> = BTreeSet::new();
    for s in p.samples.iter().filter(|s| s.event as usize == event) {
        let Some(&leaf) = s
            .stack
            .iter()
            .find(|&&id| p.frames.get(id as usize).is_some_and(|f| !f.inlined))
        else {
            continue;
        };
        let f = p.frame(leaf);
        let Some(fname) = f.function.as_deref() else {
            continue;
        };
        if fname != name {
            names.insert(fname);
            continue;
        }
        let inner = s.stack.first().map_or(f, |&id| p.frame(id));
        let e = found
            .entry((f.module.clone(), f.module_offset))
            .or_default();
        e.0 += s.count;
        e.1 = e.1.saturating_add(s.period);
        let l = e.2.entry((inner.file.clone(), inner.line)).or_default();
        l.0 += s.count;
        l.1 = l.1.saturating_add(s.period);
    }
    let Some(((module, start), (samples, period, lines))) = found
        .into_iter()
        .max_by(|a, b| (a.1).1.cmp(&(b.1).1).then_with(|| b.0.cmp(&a.0)))
    else {
        return Err(Missing::NoSuchFunction(hwprof_pmu::error::nearest_names(
            name, names,
        )));
    };
    Ok(Annotation {
        function: name.to_string(),
        module,
        start,
        event: p
            .events
            .get(event)
            .map_or_else(|| format!("event {event}"), |e| e.name.clone()),
        samples,
        period,
        lines: lines
            .into_iter()
            .map(|((file, line), (samples, period))| LineRow {
                file,
                line,
                samples,
                period,
            })
            .collect(),
    })
}

/// The functions of event `event` of `p` whose Self samples hold at least `min`
/// percent of the event's period, most period first (`hwprof annotate` without a
/// SYMBOL).
pub fn hottest(p: &Profile, event: usize, min: f64) -> Vec<String> {
    let mut by: BTreeMap<&str, u64> = BTreeMap::new();
    let mut total = 0u64;
    for s in p.samples.iter().filter(|s| s.event as usize == event) {
        total = total.saturating_add(s.period);
        let leaf = s
            .stack
            .iter()
            .find(|&&id| p.frames.get(id as usize).is_some_and(|f| !f.inlined));
        if let Some(name) = leaf.and_then(|&id| p.frame(id).function.as_deref()) {
            let e = by.entry(name).or_default();
            *e = e.saturating_add(s.period);
        }
    }
    let mut hot: Vec<(u64, &str)> = by
        .into_iter()
        .filter(|&(_, v)| total > 0 && v as f64 * 100.0 / total as f64 >= min)
        .map(|(n, v)| (v, n))
        .collect();
    hot.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    hot.into_iter().map(|(_, n)| n.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture::profile;

    #[test]
    fn a_functions_samples_by_line() {
        let mut p = profile();
        p.frames[0].file = Some("/src/two_hot.c".into());
        p.frames[0].line = Some(12);
        p.frames[4].file = Some("/src/step.h".into());
        p.frames[4].line = Some(3);
        let a = annotate(&p, 0, "hot_a").unwrap();
        // hot_a at 0x1196 (two samples: one in an inlined step, one on its own line)
        // beats hot_a at 0x11b0 (one sample).
        assert_eq!(a.start, 0x1196);
        assert_eq!((a.samples, a.period), (2, 200));
        let lines: Vec<_> = a
            .lines
            .iter()
            .map(|l| (l.file.as_deref(), l.line, l.samples))
            .collect();
        assert_eq!(
            lines,
            [
                (Some("/src/step.h"), Some(3), 1),
                (Some("/src/two_hot.c"), Some(12), 1)
            ]
        );
        assert_eq!(a.pct(100), 50.0);
    }

    #[test]
    fn the_hottest_functions_first() {
        let p = profile();
        // Event 0: hot_a 300 of 550, hot_b 100, main 50; the kernel's is unnamed.
        assert_eq!(hottest(&p, 0, 0.0), ["hot_a", "hot_b", "main"]);
        assert_eq!(hottest(&p, 0, 10.0), ["hot_a", "hot_b"]);
    }

    #[test]
    fn a_missing_function_names_the_nearest() {
        let p = profile();
        let Err(Missing::NoSuchFunction(near)) = annotate(&p, 0, "hot_c") else {
            panic!("found");
        };
        assert_eq!(near[..2], ["hot_a", "hot_b"]);
    }
}
