//! [`Profile`] → folded stacks (`comm;main;f;g 42`), the boundary between collecting and
//! drawing.
//!
//! Conventions (the same as `perf script | inferno-collapse-perf`, so graphs compare):
//! - the root frame is the thread's command name (spaces become `_`), then the callers
//!   root first, the sampled function last;
//! - a frame is its function name; a frame whose function is unknown is `[MODULE]` (the
//!   module's file name, e.g. `[libc.so.6]`; pseudo modules keep their own brackets:
//!   `[kernel.kallsyms]`, `[vdso]`), or `[unknown]` when no mapping covers it, so the
//!   unresolved addresses of one module add up in one frame;
//! - kernel frames end in `_[k]`, inlined functions in `_[i]`, JIT frames in `_[j]`
//!   (inferno's annotations: the palette colours them and the labels hide the suffix);
//! - `;` and line breaks inside names become `:` and spaces (they would split frames or lines).
//!
//! Identical stacks are added up on interned name ids (so two addresses of one function
//! merge), and the lines come out sorted, so the same profile always folds to the same
//! bytes. This file depends only on `hwprof-symbolize` and std (the fold+render bench
//! includes it).

use std::collections::HashMap;
use std::ops::Range;

use hwprof_symbolize::{Frame, FrameKind, Profile};

/// What a sample adds to its stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountBy {
    /// 1 per sample.
    Samples,
    /// The sample's period (events it stands for).
    Period,
    /// The sample's weight (e.g. load latency); samples without one add nothing.
    Weight,
}

/// Which frames to keep (on top of what the profile was built with).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FoldOptions {
    /// Keep inlined frames.
    pub inline: bool,
    /// Keep kernel frames.
    pub kernel: bool,
}

impl Default for FoldOptions {
    fn default() -> Self {
        FoldOptions {
            inline: true,
            kernel: true,
        }
    }
}

/// The folded stacks of one event.
#[derive(Clone, Debug, Default)]
pub struct Folded {
    text: String,
    lines: Vec<Range<usize>>,
    /// Sum of the counts of all lines.
    pub total: u64,
    /// Samples of the event.
    pub samples: u64,
    /// Sum of the periods of the event's samples.
    pub period: u64,
    /// Samples of the event that carry a weight.
    pub weighted: u64,
    /// Function name (without annotation) → `file:line` of its hottest frame with a
    /// known source line (most self weight, then most total weight).
    pub sources: HashMap<String, String>,
}

impl Folded {
    /// Folded stacks from `a;b;c 42` lines as given (for tests of what reads them).
    #[cfg(test)]
    pub fn from_text(text: &str) -> Folded {
        let mut f = Folded {
            text: text.to_string(),
            ..Folded::default()
        };
        let mut at = 0;
        for l in text.split_inclusive('\n') {
            let line = l.trim_end_matches('\n');
            if !line.is_empty() {
                f.lines.push(at..at + line.len());
                let n = line
                    .rsplit_once(' ')
                    .and_then(|(_, n)| n.parse::<u64>().ok());
                f.total += n.unwrap_or(0);
                f.samples += 1;
            }
            at += l.len();
        }
        f
    }

    /// The folded lines (`a;b;c 42`, no newline), sorted.
    pub fn lines(&self) -> impl Iterator<Item = &str> + Clone {
        self.lines.iter().map(|r| &self.text[r.clone()])
    }

    /// No stack has a count.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// All lines, each ending in `\n`.
    pub fn to_text(&self) -> String {
        let mut s = String::with_capacity(self.text.len() + self.lines.len());
        for l in self.lines() {
            s.push_str(l);
            s.push('\n');
        }
        s
    }
}

/// rustc's FxHash: fast on the short integer keys used here; no DoS concern for a
/// local profile.
type FxMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// The label of a frame in a folded stack (see the module docs).
pub fn frame_label(f: &Frame) -> String {
    let mut s = match &f.function {
        Some(name) => clean(name),
        None => {
            let m = clean(f.module_name());
            if m.starts_with('[') && m.ends_with(']') {
                m
            } else {
                format!("[{m}]")
            }
        }
    };
    match (f.kind, f.inlined) {
        (FrameKind::Kernel, _) => s.push_str("_[k]"),
        (FrameKind::Jit, _) => s.push_str("_[j]"),
        (FrameKind::User, true) => s.push_str("_[i]"),
        (FrameKind::User, false) => {}
    }
    s
}

/// The name without inferno's annotation (`_[k]`, `_[i]`, `_[j]`), as its titles show it.
pub fn deannotate(s: &str) -> &str {
    for suffix in ["_[k]", "_[i]", "_[j]"] {
        if let Some(base) = s.strip_suffix(suffix) {
            return base;
        }
    }
    s
}

fn clean(s: &str) -> String {
    if s.contains([';', '\n', '\r']) {
        s.replace(';', ":").replace(['\n', '\r'], " ")
    } else {
        s.to_string()
    }
}

fn comm_label(s: &str) -> String {
    clean(s).replace(' ', "_")
}

/// Folds the samples of event `event` (an index in `p.events`).
pub fn fold(p: &Profile, event: u32, weight: CountBy, opts: FoldOptions) -> Folded {
    // Intern labels: frames and comms share one name table, so a key is a Vec<u32>.
    let mut names: Vec<String> = Vec::new();
    let mut name_ids: HashMap<String, u32> = HashMap::new();
    let mut intern = |label: String| -> u32 {
        if let Some(&id) = name_ids.get(&label) {
            return id;
        }
        let id = names.len() as u32;
        name_ids.insert(label.clone(), id);
        names.push(label);
        id
    };
    const DROP: u32 = u32::MAX;
    let frame_name: Vec<u32> = p
        .frames
        .iter()
        .map(|f| {
            let dropped =
                (!opts.kernel && f.kind == FrameKind::Kernel) || (!opts.inline && f.inlined);
            if dropped {
                DROP
            } else {
                intern(frame_label(f))
            }
        })
        .collect();
    let comm_name: Vec<u32> = p.comms.iter().map(|c| intern(comm_label(c))).collect();
    let unknown_comm = intern("[unknown]".to_string());

    let mut out = Folded::default();
    let mut stacks: FxMap<Vec<u32>, u64> = FxMap::default();
    // Per frame: (self, total) weight, to choose each function's source line.
    let mut frame_weight: Vec<(u64, u64)> = vec![(0, 0); p.frames.len()];
    let mut key: Vec<u32> = Vec::with_capacity(128);
    for s in p.samples.iter().filter(|s| s.event == event) {
        out.samples += s.count;
        out.period = out.period.saturating_add(s.period);
        if s.weight.is_some() {
            out.weighted += s.count;
        }
        let w = match weight {
            CountBy::Samples => s.count,
            CountBy::Period => s.period,
            CountBy::Weight => s.weight.unwrap_or(0),
        };
        if w == 0 {
            continue;
        }
        key.clear();
        key.push(
            comm_name
                .get(s.comm as usize)
                .copied()
                .unwrap_or(unknown_comm),
        );
        let mut leaf = true;
        // The stack is leaf first; folded lines are root first.
        for &id in s.stack.iter().rev() {
            let Some(&name) = frame_name.get(id as usize) else {
                continue;
            };
            if name != DROP {
                key.push(name);
            }
        }
        for &id in &s.stack {
            let (Some(fw), Some(&name)) = (
                frame_weight.get_mut(id as usize),
                frame_name.get(id as usize),
            ) else {
                continue;
            };
            if leaf && name != DROP {
                fw.0 += w;
                leaf = false;
            }
            fw.1 += w;
        }
        out.total = out.total.saturating_add(w);
        match stacks.get_mut(key.as_slice()) {
            Some(c) => *c = c.saturating_add(w),
            None => {
                stacks.insert(key.clone(), w);
            }
        }
    }

    // Format every distinct stack once, into one buffer, then sort the lines.
    let mut text = String::new();
    let mut lines = Vec::with_capacity(stacks.len());
    for (k, count) in &stacks {
        let start = text.len();
        for (i, &n) in k.iter().enumerate() {
            if i > 0 {
                text.push(';');
            }
            text.push_str(&names[n as usize]);
        }
        text.push(' ');
        text.push_str(&count.to_string());
        lines.push(start..text.len());
    }
    lines.sort_unstable_by(|a, b| text[a.clone()].cmp(&text[b.clone()]));
    out.text = text;
    out.lines = lines;

    // Each function's source line: its frame with the most self weight, then total.
    let mut best: HashMap<&str, ((u64, u64), usize)> = HashMap::new();
    for (i, f) in p.frames.iter().enumerate() {
        let Some(func) = &f.function else {
            continue;
        };
        let fw = frame_weight.get(i).copied().unwrap_or_default();
        if f.file.is_none() || f.line.is_none() || fw.1 == 0 || frame_name.get(i) == Some(&DROP) {
            continue;
        }
        let e = best.entry(func.as_str()).or_insert((fw, i));
        if fw > e.0 {
            *e = (fw, i);
        }
    }
    for (_, (_, i)) in best {
        if let Some(
            f @ Frame {
                file: Some(file),
                line: Some(line),
                ..
            },
        ) = p.frames.get(i)
        {
            let label = frame_label(f);
            out.sources
                .insert(deannotate(&label).to_string(), format!("{file}:{line}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwprof_pmu::attr::Attr;
    use hwprof_symbolize::{EventInfo, Sample};

    fn frame(name: Option<&str>, kind: FrameKind, inlined: bool) -> Frame {
        Frame {
            function: name.map(str::to_string),
            module: Some("/usr/lib/libfoo.so".to_string()),
            module_offset: 0x1234,
            file: None,
            line: None,
            inlined,
            kind,
        }
    }

    /// Frames: 0 main, 1 hot_a, 2 hot_b, 3 inl (inlined into hot_a), 4 sys_x (kernel),
    /// 5 unknown in libfoo.so, 6 hot_a again (another address).
    pub(crate) fn sample_profile() -> Profile {
        let mut frames = vec![
            frame(Some("main"), FrameKind::User, false),
            frame(Some("hot_a"), FrameKind::User, false),
            frame(Some("hot_b"), FrameKind::User, false),
            frame(Some("inl"), FrameKind::User, true),
            frame(Some("sys_x"), FrameKind::Kernel, false),
            frame(None, FrameKind::User, false),
            frame(Some("hot_a"), FrameKind::User, false),
        ];
        frames[1].file = Some("a.c".into());
        frames[1].line = Some(10);
        frames[6].file = Some("a.c".into());
        frames[6].line = Some(12);
        let s = |event, period, weight, stack: &[u32]| Sample {
            event,
            pid: 1,
            tid: 1,
            comm: 0,
            time: None,
            cpu: None,
            period,
            weight,
            count: 1,
            stack: stack.to_vec(),
        };
        Profile {
            events: vec![
                EventInfo {
                    name: "cpu-clock".into(),
                    attr: Attr::default(),
                },
                EventInfo {
                    name: "page-faults".into(),
                    attr: Attr::default(),
                },
            ],
            frames,
            comms: vec!["my prog".into()],
            samples: vec![
                s(0, 10, None, &[1, 0]),
                s(0, 10, None, &[6, 0]),
                s(0, 10, None, &[3, 1, 0]),
                s(0, 5, Some(7), &[4, 2, 0]),
                s(0, 5, None, &[5, 0]),
                s(1, 1, None, &[4, 0]),
            ],
            lost: 0,
        }
    }

    #[test]
    fn folds_root_first_with_annotations() {
        let p = sample_profile();
        let f = fold(&p, 0, CountBy::Period, FoldOptions::default());
        assert_eq!(
            f.to_text(),
            "my_prog;main;[libfoo.so] 5\n\
             my_prog;main;hot_a 20\n\
             my_prog;main;hot_a;inl_[i] 10\n\
             my_prog;main;hot_b;sys_x_[k] 5\n"
        );
        assert_eq!((f.total, f.samples, f.period, f.weighted), (40, 5, 40, 1));
        // hot_a's line: frame 1 and 6 both have 10 self; frame 1 has more total (20).
        assert_eq!(f.sources.get("hot_a").map(String::as_str), Some("a.c:10"));
    }

    #[test]
    fn weights_and_filters() {
        let p = sample_profile();
        let f = fold(&p, 0, CountBy::Samples, FoldOptions::default());
        assert_eq!(f.total, 5);
        let f = fold(&p, 0, CountBy::Weight, FoldOptions::default());
        assert_eq!(f.to_text(), "my_prog;main;hot_b;sys_x_[k] 7\n");
        let f = fold(
            &p,
            0,
            CountBy::Period,
            FoldOptions {
                inline: false,
                kernel: false,
            },
        );
        assert!(!f.to_text().contains("_[k]") && !f.to_text().contains("_[i]"));
        assert!(f.to_text().contains("my_prog;main;hot_a 30\n"));
        assert_eq!(f.total, 40);
        let f = fold(&p, 1, CountBy::Period, FoldOptions::default());
        assert_eq!(f.to_text(), "my_prog;main;sys_x_[k] 1\n");
    }
}
