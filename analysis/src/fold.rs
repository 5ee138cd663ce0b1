//! Samples → folded stacks (`comm;main;f;g 42`), the boundary between collecting and
//! drawing: every flame graph (`hwprof flamegraph`, `hwprof offcpu`) is drawn from them.
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
//! - `;` inside names becomes `:` (it would split frames), and control characters are
//!   escaped as everywhere ([`crate::text::escape`]: `\n`, `\x1b`), so a line is one
//!   stack whatever a name holds.
//!
//! What a sample adds to its stack is its [`Weight`]: 1, its period, its sampled weight,
//! or the µs of an off-CPU profile. Identical stacks are added up on interned name ids
//! (so two addresses of one function merge), and the lines come out sorted, so the same
//! samples always fold to the same bytes.
//!
//! [`Folder`] takes samples one at a time, so a profile read as a stream folds in memory
//! that follows its distinct stacks; [`fold`] folds a whole [`Profile`]. [`diff`] joins
//! two foldings into the two-count lines of a differential graph.

use std::collections::HashMap;
use std::io;
use std::ops::Range;

use hwprof_symbolize::{Frame, FrameKind, Profile, Sample};

/// What a sample adds to its stack: what a flame graph's widths measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weight {
    /// One per sample.
    Samples,
    /// The events each sample stands for (its period): cycles, cache misses...
    Period,
    /// The sampled weight (e.g. PEBS load latency in cycles).
    Weight,
    /// Time in µs: the off-CPU (and on-CPU) time of an [`crate::offcpu::profile`], whose
    /// samples carry it as their period.
    Micros,
}

impl Weight {
    /// What sample `s` adds (samples without a weight add nothing by [`Weight::Weight`]).
    pub fn of(self, s: &Sample) -> u64 {
        match self {
            Weight::Samples => s.count,
            Weight::Period | Weight::Micros => s.period,
            Weight::Weight => s.weight.unwrap_or(0),
        }
    }
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

/// Sorted lines held in one buffer.
#[derive(Clone, Debug, Default)]
struct Lines {
    text: String,
    lines: Vec<Range<usize>>,
}

impl Lines {
    fn iter(&self) -> impl Iterator<Item = &str> + Clone {
        self.lines.iter().map(|r| &self.text[r.clone()])
    }

    fn to_text(&self) -> String {
        let mut s = String::with_capacity(self.text.len() + self.lines.len());
        for l in self.iter() {
            s.push_str(l);
            s.push('\n');
        }
        s
    }

    fn sort(&mut self) {
        let text = &self.text;
        self.lines
            .sort_unstable_by(|a, b| text[a.clone()].cmp(&text[b.clone()]));
    }
}

/// The folded stacks of one event.
#[derive(Clone, Debug, Default)]
pub struct Folded {
    lines: Lines,
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
    /// Folded stacks from `a;b;c 42` lines as given (folded text read back, tests):
    /// `total` adds up the counts, `samples` counts the lines.
    pub fn from_text(text: &str) -> Folded {
        let mut f = Folded {
            lines: Lines {
                text: text.to_string(),
                lines: Vec::new(),
            },
            ..Folded::default()
        };
        let mut at = 0;
        for l in text.split_inclusive('\n') {
            let line = l.trim_end_matches('\n');
            if !line.is_empty() {
                f.lines.lines.push(at..at + line.len());
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
        self.lines.iter()
    }

    /// No stack has a count.
    pub fn is_empty(&self) -> bool {
        self.lines.lines.is_empty()
    }

    /// All lines, each ending in `\n`.
    pub fn to_text(&self) -> String {
        self.lines.to_text()
    }

    /// The lines as (stack, count): the stack's frames root first (the command name
    /// first), lines without a count left out.
    pub fn stacks(&self) -> impl Iterator<Item = (std::str::Split<'_, char>, u64)> + '_ {
        self.lines().filter_map(|line| {
            let (stack, n) = line.rsplit_once(' ')?;
            Some((stack.split(';'), n.parse::<u64>().ok()?))
        })
    }
}

/// rustc's FxHash: fast on the short integer keys used here; no DoS concern for a
/// local profile.
type FxMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// The annotation of kernel frames (`schedule_[k]`).
pub const KERNEL_SUFFIX: &str = "_[k]";
/// The annotation of inlined functions (`mix_[i]`).
pub const INLINED_SUFFIX: &str = "_[i]";
/// The annotation of JIT frames, from a perf map (`LFoo;bar_[j]`).
pub const JIT_SUFFIX: &str = "_[j]";

/// What the code of a folded stack's frame is, as its label says: the annotation
/// [`frame_label`] gave it, never the spelling of the name (a capital letter, a dot or
/// `::` say nothing about where code runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelKind {
    /// Code of a user-space module (and labels that are not code: the command name,
    /// `[unknown]`, `[truncated]`).
    User,
    /// The kernel or one of its modules (`_[k]`).
    Kernel,
    /// A function inlined into its caller (`_[i]`).
    Inlined,
    /// JIT code named by a perf map (`_[j]`).
    Jit,
}

/// The kind of a frame of a folded line, from its annotation.
pub fn label_kind(label: &str) -> LabelKind {
    if label.ends_with(KERNEL_SUFFIX) {
        LabelKind::Kernel
    } else if label.ends_with(INLINED_SUFFIX) {
        LabelKind::Inlined
    } else if label.ends_with(JIT_SUFFIX) {
        LabelKind::Jit
    } else {
        LabelKind::User
    }
}

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
        (FrameKind::Kernel, _) => s.push_str(KERNEL_SUFFIX),
        (FrameKind::Jit, _) => s.push_str(JIT_SUFFIX),
        (FrameKind::User, true) => s.push_str(INLINED_SUFFIX),
        (FrameKind::User, false) => {}
    }
    s
}

/// The name without inferno's annotation (`_[k]`, `_[i]`, `_[j]`), as its titles show it.
pub fn deannotate(s: &str) -> &str {
    for suffix in [KERNEL_SUFFIX, INLINED_SUFFIX, JIT_SUFFIX] {
        if let Some(base) = s.strip_suffix(suffix) {
            return base;
        }
    }
    s
}

fn clean(s: &str) -> String {
    let s = crate::text::escape(s);
    if s.contains(';') {
        s.replace(';', ":")
    } else {
        s.into_owned()
    }
}

fn comm_label(s: &str) -> String {
    clean(s).replace(' ', "_")
}

/// The labels of sample `s`'s folded line, root first: its command name, then the
/// frames [`FoldOptions`] keeps, as [`Folder`] labels them (for tables that need
/// more than one number per stack).
pub fn labels(p: &Profile, s: &Sample, opts: FoldOptions) -> Vec<String> {
    let comm = p
        .comms
        .get(s.comm as usize)
        .map_or("[unknown]", String::as_str);
    std::iter::once(comm_label(comm))
        .chain(
            s.stack
                .iter()
                .rev()
                .filter_map(|&id| p.frames.get(id as usize))
                .filter(|f| {
                    (opts.kernel || f.kind != FrameKind::Kernel) && (opts.inline || !f.inlined)
                })
                .map(frame_label),
        )
        .collect()
}

/// A frame left out by [`FoldOptions`].
const DROP: u32 = u32::MAX;

/// Folds samples of one event one at a time (see the module docs).
///
/// Samples refer to the frames and command names of their profile; [`Folder::add`] takes
/// those tables with each sample, and they may grow between calls (a profile read as a
/// stream interns new frames as it goes), as long as what is there does not change.
#[derive(Debug)]
pub struct Folder {
    event: u32,
    weight: Weight,
    opts: FoldOptions,
    /// Labels of frames and comms, interned: a stack's key is a `Vec<u32>`.
    names: Vec<String>,
    name_ids: HashMap<String, u32>,
    /// Label id of each frame known so far ([`DROP`]: left out).
    frame_name: Vec<u32>,
    /// Label id of each comm known so far.
    comm_name: Vec<u32>,
    unknown_comm: u32,
    stacks: FxMap<Vec<u32>, u64>,
    /// Per frame: (self, total) weight, to choose each function's source line.
    frame_weight: Vec<(u64, u64)>,
    key: Vec<u32>,
    out: Folded,
}

impl Folder {
    /// A folder of the samples of event `event` (an index in the profile's events).
    pub fn new(event: u32, weight: Weight, opts: FoldOptions) -> Folder {
        let mut f = Folder {
            event,
            weight,
            opts,
            names: Vec::new(),
            name_ids: HashMap::new(),
            frame_name: Vec::new(),
            comm_name: Vec::new(),
            unknown_comm: 0,
            stacks: FxMap::default(),
            frame_weight: Vec::new(),
            key: Vec::with_capacity(128),
            out: Folded::default(),
        };
        f.unknown_comm = f.intern("[unknown]".to_string());
        f
    }

    fn intern(&mut self, label: String) -> u32 {
        if let Some(&id) = self.name_ids.get(&label) {
            return id;
        }
        let id = self.names.len() as u32;
        self.name_ids.insert(label.clone(), id);
        self.names.push(label);
        id
    }

    /// Labels the frames and comms added to the tables since the last call.
    fn sync(&mut self, frames: &[Frame], comms: &[String]) {
        for f in frames.get(self.frame_name.len()..).unwrap_or(&[]) {
            let dropped = (!self.opts.kernel && f.kind == FrameKind::Kernel)
                || (!self.opts.inline && f.inlined);
            let id = if dropped {
                DROP
            } else {
                self.intern(frame_label(f))
            };
            self.frame_name.push(id);
        }
        self.frame_weight.resize(self.frame_name.len(), (0, 0));
        for c in comms.get(self.comm_name.len()..).unwrap_or(&[]) {
            let id = self.intern(comm_label(c));
            self.comm_name.push(id);
        }
    }

    /// Adds sample `s` (ignored unless it is of this folder's event); `frames` and
    /// `comms` are its profile's tables.
    pub fn add(&mut self, frames: &[Frame], comms: &[String], s: &Sample) {
        if s.event != self.event {
            return;
        }
        if frames.len() > self.frame_name.len() || comms.len() > self.comm_name.len() {
            self.sync(frames, comms);
        }
        let out = &mut self.out;
        out.samples += s.count;
        out.period = out.period.saturating_add(s.period);
        if s.weight.is_some() {
            out.weighted += s.count;
        }
        let w = self.weight.of(s);
        if w == 0 {
            return;
        }
        let key = &mut self.key;
        key.clear();
        key.push(
            self.comm_name
                .get(s.comm as usize)
                .copied()
                .unwrap_or(self.unknown_comm),
        );
        // The stack is leaf first; folded lines are root first.
        for &id in s.stack.iter().rev() {
            match self.frame_name.get(id as usize) {
                Some(&name) if name != DROP => key.push(name),
                _ => {}
            }
        }
        let mut leaf = true;
        for &id in &s.stack {
            let (Some(fw), Some(&name)) = (
                self.frame_weight.get_mut(id as usize),
                self.frame_name.get(id as usize),
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
        match self.stacks.get_mut(key.as_slice()) {
            Some(c) => *c = c.saturating_add(w),
            None => {
                self.stacks.insert(key.clone(), w);
            }
        }
    }

    /// The folded stacks, sorted, with each function's source line from `frames` (the
    /// profile's frames, complete).
    pub fn finish(self, frames: &[Frame]) -> Folded {
        let mut out = self.out;
        // Format every distinct stack once, into one buffer, then sort the lines.
        let mut text = String::new();
        let mut lines = Vec::with_capacity(self.stacks.len());
        for (k, count) in &self.stacks {
            let start = text.len();
            for (i, &n) in k.iter().enumerate() {
                if i > 0 {
                    text.push(';');
                }
                text.push_str(&self.names[n as usize]);
            }
            text.push(' ');
            text.push_str(&count.to_string());
            lines.push(start..text.len());
        }
        out.lines = Lines { text, lines };
        out.lines.sort();

        // Each function's source line: its frame with the most self weight, then total.
        let mut best: HashMap<&str, ((u64, u64), usize)> = HashMap::new();
        for (i, f) in frames.iter().enumerate() {
            let Some(func) = &f.function else {
                continue;
            };
            let fw = self.frame_weight.get(i).copied().unwrap_or_default();
            if f.file.is_none()
                || f.line.is_none()
                || fw.1 == 0
                || self.frame_name.get(i) == Some(&DROP)
            {
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
            ) = frames.get(i)
            {
                let label = frame_label(f);
                out.sources
                    .insert(deannotate(&label).to_string(), format!("{file}:{line}"));
            }
        }
        out
    }
}

/// Folds the samples of event `event` (an index in `p.events`).
pub fn fold(p: &Profile, event: u32, weight: Weight, opts: FoldOptions) -> Folded {
    let mut f = Folder::new(event, weight, opts);
    for s in &p.samples {
        f.add(&p.frames, &p.comms, s);
    }
    f.finish(&p.frames)
}

/// Two-count folded lines: what inferno draws as a differential flame graph.
#[derive(Clone, Debug, Default)]
pub struct DiffFolded {
    lines: Lines,
}

impl DiffFolded {
    /// The lines (`a;b;c BASE NEW`, no newline), sorted.
    pub fn lines(&self) -> impl Iterator<Item = &str> + Clone {
        self.lines.iter()
    }

    /// All lines, each ending in `\n`.
    pub fn to_text(&self) -> String {
        self.lines.to_text()
    }
}

/// Joins two foldings of one event into `stack BASE NEW` lines (inferno's differential
/// folding): BASE's counts normalised to NEW's total, a stack absent from one side
/// counting 0 there. Sorted, so the output is reproducible.
pub fn diff(base: &Folded, new: &Folded) -> io::Result<DiffFolded> {
    let mut two = Vec::new();
    let opt = inferno::differential::Options {
        normalize: true,
        strip_hex: false,
    };
    inferno::differential::from_readers(
        opt,
        base.to_text().as_bytes(),
        new.to_text().as_bytes(),
        &mut two,
    )?;
    let text = String::from_utf8(two).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let mut lines = Vec::new();
    let mut at = 0;
    for l in text.split_inclusive('\n') {
        let line = l.trim_end_matches('\n');
        if !line.is_empty() {
            lines.push(at..at + line.len());
        }
        at += l.len();
    }
    // inferno writes them in hash order.
    let mut lines = Lines { text, lines };
    lines.sort();
    Ok(DiffFolded { lines })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use hwprof_pmu::attr::Attr;
    use hwprof_symbolize::EventInfo;

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
            ..Default::default()
        }
    }

    #[test]
    fn folds_root_first_with_annotations() {
        let p = sample_profile();
        let f = fold(&p, 0, Weight::Period, FoldOptions::default());
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
        let stacks: Vec<(Vec<&str>, u64)> = f.stacks().map(|(s, n)| (s.collect(), n)).collect();
        assert_eq!(stacks[1], (vec!["my_prog", "main", "hot_a"], 20));
    }

    #[test]
    fn weights_and_filters() {
        let p = sample_profile();
        let f = fold(&p, 0, Weight::Samples, FoldOptions::default());
        assert_eq!(f.total, 5);
        let f = fold(&p, 0, Weight::Weight, FoldOptions::default());
        assert_eq!(f.to_text(), "my_prog;main;hot_b;sys_x_[k] 7\n");
        let f = fold(
            &p,
            0,
            Weight::Period,
            FoldOptions {
                inline: false,
                kernel: false,
            },
        );
        assert!(!f.to_text().contains("_[k]") && !f.to_text().contains("_[i]"));
        assert!(f.to_text().contains("my_prog;main;hot_a 30\n"));
        assert_eq!(f.total, 40);
        let f = fold(&p, 1, Weight::Period, FoldOptions::default());
        assert_eq!(f.to_text(), "my_prog;main;sys_x_[k] 1\n");
        assert_eq!(
            fold(&p, 0, Weight::Micros, FoldOptions::default()).to_text(),
            fold(&p, 0, Weight::Period, FoldOptions::default()).to_text()
        );
    }

    /// Tables that grow between samples (a profile read as a stream) fold to the same
    /// bytes as the whole profile.
    #[test]
    fn a_merged_sample_folds_as_the_samples_it_stands_for() {
        let (merged, repeated) = crate::report::fixture::merged_and_repeated(&sample_profile(), 4);
        for w in [Weight::Samples, Weight::Period, Weight::Weight] {
            let (m, r) = (
                fold(&merged, 0, w, FoldOptions::default()),
                fold(&repeated, 0, w, FoldOptions::default()),
            );
            assert_eq!(m.to_text(), r.to_text(), "{w:?}");
            assert_eq!((m.total, m.samples, m.weighted), (r.total, 20, 4));
        }
    }

    #[test]
    fn growing_tables_fold_like_the_whole() {
        let p = sample_profile();
        let whole = fold(&p, 0, Weight::Period, FoldOptions::default());
        let mut f = Folder::new(0, Weight::Period, FoldOptions::default());
        for s in &p.samples {
            let known = s.stack.iter().max().map_or(0, |&m| m as usize + 1);
            f.add(&p.frames[..known], &p.comms, s);
        }
        let streamed = f.finish(&p.frames);
        assert_eq!(streamed.to_text(), whole.to_text());
        assert_eq!(streamed.sources, whole.sources);
        assert_eq!(
            (streamed.total, streamed.samples, streamed.period),
            (whole.total, whole.samples, whole.period)
        );
    }

    #[test]
    fn unknown_comms_and_frames_do_not_panic() {
        let mut p = sample_profile();
        p.samples[0].comm = 99;
        p.samples[1].stack = vec![999, 0];
        let f = fold(&p, 0, Weight::Period, FoldOptions::default());
        assert!(
            f.to_text().contains("[unknown];main;hot_a 10\n"),
            "{}",
            f.to_text()
        );
        assert!(f.to_text().contains("my_prog;main 10\n"), "{}", f.to_text());
    }

    #[test]
    fn labels() {
        let mut f = frame(Some("a;b\nc"), FrameKind::Jit, false);
        assert_eq!(frame_label(&f), "a:b\\nc_[j]");
        f.function = None;
        assert_eq!(frame_label(&f), "[libfoo.so]_[j]");
        f.module = Some("[vdso]".into());
        f.kind = FrameKind::User;
        assert_eq!(frame_label(&f), "[vdso]");
        assert_eq!(deannotate("x_[k]"), "x");
        assert_eq!(deannotate("x"), "x");
    }

    /// The kind comes from the annotation the label was given, never from the name.
    #[test]
    fn label_kinds_follow_the_frame_not_its_spelling() {
        let kind = |name: &str, k: FrameKind, inlined: bool| {
            label_kind(&frame_label(&frame(Some(name), k, inlined)))
        };
        for name in [
            "Py_RunMain",
            "foo.isra.0",
            "std::vec::Vec<T>::push",
            "LFoo;bar",
        ] {
            assert_eq!(
                kind(name, FrameKind::User, false),
                LabelKind::User,
                "{name}"
            );
            assert_eq!(
                kind(name, FrameKind::User, true),
                LabelKind::Inlined,
                "{name}"
            );
            assert_eq!(
                kind(name, FrameKind::Kernel, false),
                LabelKind::Kernel,
                "{name}"
            );
            assert_eq!(kind(name, FrameKind::Jit, false), LabelKind::Jit, "{name}");
        }
        assert_eq!(label_kind("my_prog"), LabelKind::User);
        assert_eq!(label_kind("[libc.so.6]"), LabelKind::User);
    }

    #[test]
    fn differential_lines_are_normalised_and_sorted() {
        let base = Folded::from_text("p;a 10\np;b 30\n");
        let new = Folded::from_text("p;b 20\np;c 60\np;a 20\n");
        let d = diff(&base, &new).unwrap();
        // BASE scaled to NEW's total (100 / 40).
        assert_eq!(d.to_text(), "p;a 25 20\np;b 75 20\np;c 0 60\n");
        assert_eq!(d.lines().count(), 3);
    }
}
