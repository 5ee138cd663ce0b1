//! The top of folded stacks (`hwprof offcpu --report`): functions by inclusive count (a
//! stack counts each function in it once, however often it recurses) and the heaviest
//! stacks, whole.

use std::collections::{HashMap, HashSet};

use crate::fold::{Folded, deannotate};

/// The heaviest functions and stacks of a folding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Top<'a> {
    /// Function (annotation removed) and its inclusive count, heaviest first (then by
    /// name).
    pub functions: Vec<(&'a str, u64)>,
    /// Stack (the command name, then the frames root first, annotated) and its count,
    /// heaviest first (then by frames).
    pub stacks: Vec<(Vec<&'a str>, u64)>,
    /// The folding's total.
    pub total: u64,
}

/// The `functions` heaviest functions and `stacks` heaviest stacks of `f`.
pub fn top(f: &Folded, functions: usize, stacks: usize) -> Top<'_> {
    let mut by_fn: HashMap<&str, u64> = HashMap::new();
    let mut all: Vec<(Vec<&str>, u64)> = Vec::new();
    for (frames, n) in f.stacks() {
        let frames: Vec<&str> = frames.collect();
        let mut seen = HashSet::new();
        // The first frame is the thread's command name.
        for fr in frames.iter().skip(1) {
            let name = deannotate(fr);
            if seen.insert(name) {
                *by_fn.entry(name).or_insert(0) += n;
            }
        }
        all.push((frames, n));
    }
    let mut fns: Vec<(&str, u64)> = by_fn.into_iter().collect();
    fns.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    fns.truncate(functions);
    all.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    all.truncate(stacks);
    Top {
        functions: fns,
        stacks: all,
        total: f.total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inclusive_functions_and_heaviest_stacks() {
        let f = Folded::from_text(
            "app;main;a;wait_[k] 30\napp;main;b;a;a;wait_[k] 50\napp;main;c 5\nother;x 1\n",
        );
        let t = top(&f, 3, 2);
        assert_eq!(t.functions, [("main", 85), ("a", 80), ("wait", 80)]);
        assert_eq!(
            t.stacks,
            [
                (vec!["app", "main", "b", "a", "a", "wait_[k]"], 50),
                (vec!["app", "main", "a", "wait_[k]"], 30)
            ]
        );
        assert_eq!(t.total, 86);
        // Lines without a count are skipped.
        let f = Folded::from_text("app;main\napp;main 4\n");
        assert_eq!(top(&f, 10, 10).stacks, [(vec!["app", "main"], 4)]);
    }
}
