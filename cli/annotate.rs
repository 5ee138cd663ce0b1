//! `hwprof annotate SYMBOL`: a function's source lines with the addresses each covers
//! and its share of the function's samples, hot lines marked, as the source-line totals
//! of `perf annotate --stdio`.
//!
//! The recording is symbolized once into a [`Profile`] (inlined frames expanded, so
//! each sample's innermost line is known); [`hwprof_analysis::annotate`] counts the
//! function's samples per line; [`hwprof_symbolize::lines`] gives each line's
//! addresses; the source text is read from the file DWARF names, when it is there.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use hwprof_analysis::annotate::{Annotation, Missing, annotate, hottest};
use hwprof_symbolize::lines::{LineRange, function_lines};
use hwprof_symbolize::{BuildId, Locator, Module, Options, Profile, Symbolizer};

use crate::args::annotate::AnnotateArgs;

/// A line is hot (marked `*`) from this share of the function's samples on: perf's
/// red (`MIN_RED`).
const HOT: f64 = 5.0;

/// Without a SYMBOL, the functions with at least this share (percent) of the event's
/// period are annotated.
const ALL_MIN: f64 = 1.0;

/// The largest source file read for its lines.
const MAX_SOURCE: u64 = 64 << 20;

pub fn run(a: AnnotateArgs) -> anyhow::Result<u8> {
    let opts = Options {
        merge: true,
        symfs: a.input.symfs.clone(),
        ..Options::default()
    };
    let (p, ids) = crate::input::load_profile(&a.input.file, &opts)?;
    let events = crate::input::events_to_show(a.event.as_deref(), &a.input.file, &p)?;
    let symfs = a.input.symfs.as_deref();
    let mut src = SourceFiles::default();
    let out = match &a.symbol {
        Some(name) => one(&a.input.file, (&p, &ids), &events, name, symfs, &mut src)?,
        None => {
            // perf annotates every function with samples; hwprof the hot ones.
            let e = events.first().copied().unwrap_or(0);
            let names = hottest(&p, e, ALL_MIN);
            let mut listings = Vec::new();
            for name in &names {
                listings.push(one(&a.input.file, (&p, &ids), &[e], name, symfs, &mut src)?);
            }
            listings.join("\n")
        }
    };
    crate::destination::print(out.as_bytes())?;
    Ok(0)
}

/// The build ids the recording gives its files, by path.
type Ids = std::collections::HashMap<String, BuildId>;

/// The listing of function `name` in the first of `events` with samples in it, or the
/// one-line error naming the nearest functions; `ids` name the recorded files, so that
/// the addresses are the recorded binary's (from the build-id cache when the file at
/// the path changed since).
fn one(
    file: &Path,
    (p, ids): (&Profile, &Ids),
    events: &[usize],
    name: &str,
    symfs: Option<&Path>,
    src: &mut SourceFiles,
) -> anyhow::Result<String> {
    let mut nearest = Vec::new();
    let mut found = None;
    for &e in events {
        match annotate(p, e, name) {
            Ok(an) => {
                found = Some(an);
                break;
            }
            Err(Missing::NoSuchFunction(near)) => {
                for n in near {
                    if !nearest.contains(&n) {
                        nearest.push(n);
                    }
                }
            }
        }
    }
    let Some(an) = found else {
        nearest.truncate(5);
        let hint = if nearest.is_empty() {
            String::new()
        } else {
            format!("; nearest: {}", nearest.join(", "))
        };
        anyhow::bail!(
            "no samples in a function named '{}' in {}{hint}",
            crate::render::escape(name),
            file.display()
        );
    };
    let ranges = match &an.module {
        Some(path) if path.starts_with('/') => {
            let mut sym = Symbolizer::with_locator(
                true,
                false,
                Locator::from_env(symfs.map(Path::to_path_buf)),
            );
            let id = ids.get(path).cloned();
            // The file the samples were resolved in: the same search, the same build id.
            let elf = sym.locator().executable(path, id.as_ref());
            let m = sym.module_id(Module::File {
                path: path.clone(),
                build_id: id,
            });
            function_lines(&mut sym, m, elf.as_deref(), an.start, &an.function)
        }
        _ => Vec::new(),
    };
    Ok(text(&an, &ranges, src))
}

/// Source files read so far, by path, as lines (`None`: not readable).
#[derive(Default)]
struct SourceFiles {
    files: HashMap<String, Option<Vec<String>>>,
}

impl SourceFiles {
    fn line(&mut self, file: &str, line: u32) -> Option<&str> {
        let lines = self.files.entry(file.to_string()).or_insert_with(|| {
            hwprof_pmu::file::read_to_string(Path::new(file), MAX_SOURCE)
                .ok()
                .map(|t| t.lines().map(str::to_string).collect())
        });
        lines
            .as_ref()?
            .get((line as usize).checked_sub(1)?)
            .map(String::as_str)
    }
}

/// One line of the listing: where, which addresses, its samples.
struct Listed {
    file: Option<String>,
    line: Option<u32>,
    ranges: Vec<(u64, u64)>,
    period: u64,
    samples: u64,
}

/// `file.c:12` (the file's name only), or `??:0` as addr2line says it.
fn location(file: Option<&str>, line: Option<u32>) -> String {
    match (file, line) {
        (Some(f), Some(l)) => format!("{}:{l}", f.rsplit('/').next().unwrap_or(f)),
        _ => "??:0".to_string(),
    }
}

/// The listing: the function's lines in the order of their first address, then lines
/// with samples that no address of the function gave (none, unless the files
/// changed), each with its share, its address ranges and its source text.
fn text(an: &Annotation, ranges: &[LineRange], src: &mut SourceFiles) -> String {
    let mut listed: Vec<Listed> = Vec::new();
    let mut at: HashMap<(Option<String>, Option<u32>), usize> = HashMap::new();
    for r in ranges {
        let key = (r.file.clone(), r.line);
        let i = *at.entry(key).or_insert_with(|| {
            listed.push(Listed {
                file: r.file.clone(),
                line: r.line,
                ranges: Vec::new(),
                period: 0,
                samples: 0,
            });
            listed.len() - 1
        });
        listed[i].ranges.push((r.start, r.end));
    }
    for l in &an.lines {
        let key = (l.file.clone(), l.line);
        match at.get(&key) {
            Some(&i) => {
                listed[i].period += l.period;
                listed[i].samples += l.samples;
            }
            None => {
                at.insert(key, listed.len());
                listed.push(Listed {
                    file: l.file.clone(),
                    line: l.line,
                    ranges: Vec::new(),
                    period: l.period,
                    samples: l.samples,
                });
            }
        }
    }
    let module = an.module.as_deref().unwrap_or("[unknown]");
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# {} in {}: {} samples of event '{}' (period {}); percent of the function's period",
        crate::render::escape(&an.function),
        crate::render::escape(module),
        an.samples,
        crate::render::escape(&an.event),
        an.period
    );
    let cells: Vec<(String, String)> = listed
        .iter()
        .map(|l| {
            let ranges = l
                .ranges
                .iter()
                .map(|(s, e)| format!("{s:x}-{e:x}"))
                .collect::<Vec<_>>()
                .join(",");
            (ranges, location(l.file.as_deref(), l.line))
        })
        .collect();
    let wr = cells.iter().map(|c| c.0.len()).max().unwrap_or(0).max(9);
    let wl = cells.iter().map(|c| c.1.len()).max().unwrap_or(0).max(4);
    let _ = writeln!(
        out,
        "#  Percent  Samples  {:<wr$}  {:<wl$}  Source",
        "Addresses", "Line"
    );
    let _ = writeln!(out, "# {}", ".".repeat(wr + wl + 28));
    for (l, (ranges, loc)) in listed.iter().zip(cells) {
        let pct = an.pct(l.period);
        let mark = if pct >= HOT { '*' } else { ' ' };
        let source = match (&l.file, l.line) {
            (Some(f), Some(n)) => src.line(f, n).unwrap_or("").trim_end().to_string(),
            _ => String::new(),
        };
        let line = format!(
            "{mark} {pct:8.2}  {:>7}  {ranges:<wr$}  {loc:<wl$}  {}",
            l.samples,
            crate::render::escape(&source)
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwprof_analysis::annotate::LineRow;

    #[test]
    fn lines_in_address_order_with_shares() {
        let an = Annotation {
            function: "leaf".into(),
            module: Some("/tmp/callgraph".into()),
            start: 0x1186,
            event: "cpu-clock".into(),
            samples: 100,
            period: 100,
            lines: vec![
                LineRow {
                    file: Some("/nowhere/callgraph.c".into()),
                    line: Some(19),
                    samples: 96,
                    period: 96,
                },
                LineRow {
                    file: Some("/nowhere/callgraph.c".into()),
                    line: Some(20),
                    samples: 4,
                    period: 4,
                },
            ],
        };
        let r = |s: u64, e: u64, line: u32| LineRange {
            start: s,
            end: e,
            file: Some("/nowhere/callgraph.c".into()),
            line: Some(line),
        };
        let ranges = [
            r(0x401186, 0x40118d, 17),
            r(0x40118d, 0x401194, 19),
            r(0x401194, 0x4011c2, 20),
            r(0x4011c2, 0x4011c8, 19),
        ];
        let t = text(&an, &ranges, &mut SourceFiles::default());
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("# leaf in /tmp/callgraph: 100 samples"));
        assert_eq!(
            lines[3],
            "      0.00        0  401186-40118d                callgraph.c:17"
        );
        assert_eq!(
            lines[4],
            "*    96.00       96  40118d-401194,4011c2-4011c8  callgraph.c:19"
        );
        assert_eq!(
            lines[5],
            "      4.00        4  401194-4011c2                callgraph.c:20"
        );
        assert_eq!(lines.len(), 6);
    }
}
