//! Allocation profiles (`hwprof memory`): recordings whose samples are allocating call
//! chains summed in the kernel, written as samples of an [`ALLOCATED_BYTES`] or
//! [`LEAKED_BYTES`] event: period = bytes, weight = allocations (blocks, for the
//! leaks). [`profile`] reads them with those meanings (fold with
//! [`crate::fold::Weight::Period`] for bytes, [`crate::fold::Weight::Samples`] for
//! allocations); [`table`] makes the `--report` rows, with each stack's oldest block.

pub mod pair;

use std::collections::HashMap;

use hwprof_sampler::perfdata::reader::{EventAttr, PerfData};
use hwprof_sampler::record::{Record, Sample as RecSample};
use hwprof_symbolize::{Options, Profile, ProfileBuilder, Weighed};

use crate::Result;
use crate::fold::{FoldOptions, deannotate, labels};

/// The event of every byte allocated, by allocating stack.
pub const ALLOCATED_BYTES: &str = "allocated-bytes";
/// The event of the bytes still allocated at the end, by allocating stack.
pub const LEAKED_BYTES: &str = "leaked-bytes";

/// The allocation event of a recording and whether it is the leaks'.
pub fn event(attrs: &[EventAttr]) -> Option<(usize, bool)> {
    attrs
        .iter()
        .enumerate()
        .find_map(|(i, a)| match a.name.as_str() {
            ALLOCATED_BYTES => Some((i, false)),
            LEAKED_BYTES => Some((i, true)),
            _ => None,
        })
}

/// The oldest block's age (ns) of a sample's stack, by process and callchain as
/// recorded (`None`: not known, e.g. a recording read later).
pub type Age<'a> = &'a dyn Fn(u32, &[u64]) -> Option<u64>;

/// The profile of the allocation samples (event `event`) of `pd`: each with its bytes
/// as period, its allocations as count and, where `age` knows it, its oldest block's
/// age (ns) as weight. Other samples are left out. Samples are not merged
/// (`opts.merge` is ignored): each keeps its age.
pub fn profile(pd: &PerfData, opts: &Options, event: usize, age: Age<'_>) -> Result<Profile> {
    let opts = Options {
        merge: false,
        ..opts.clone()
    };
    let event = u32::try_from(event).unwrap_or(u32::MAX);
    let mut weigh = |rec: &Record<'_>, s: &RecSample<'_>, period: u64| {
        if rec.attr.and_then(|a| u32::try_from(a).ok()) != Some(event) {
            return None;
        }
        let chain = s.callchain.map(|c| c.to_vec()).unwrap_or_default();
        Some(Weighed {
            event,
            period,
            weight: age(s.pid.unwrap_or(0), &chain),
            count: s.perf_weight().unwrap_or(1).max(1),
        })
    };
    Ok(ProfileBuilder::new(pd, &opts)
        .weigh(&mut weigh)
        .build()?
        .profile)
}

/// A row of the `--report` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row<T> {
    /// A function name, or a stack (its command name, then frames root first).
    pub what: T,
    /// Bytes asked for (still allocated, for the leaks).
    pub bytes: u64,
    /// Allocations (blocks, for the leaks).
    pub count: u64,
    /// The oldest block's age (ns), when known.
    pub oldest_ns: Option<u64>,
}

/// The `--report` table of an allocation profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    /// Bytes of every sample.
    pub bytes: u64,
    /// Allocations of every sample.
    pub count: u64,
    /// Functions by inclusive bytes (each stack counts a function once), heaviest first.
    pub functions: Vec<Row<String>>,
    /// Stacks by bytes, heaviest first.
    pub stacks: Vec<Row<Vec<String>>>,
}

fn add<T>(r: &mut Row<T>, bytes: u64, count: u64, age: Option<u64>) {
    r.bytes = r.bytes.saturating_add(bytes);
    r.count = r.count.saturating_add(count);
    r.oldest_ns = match (r.oldest_ns, age) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
}

/// The heaviest `functions` functions and `stacks` stacks of event `event`'s samples of
/// `p` (a [`profile`]), by bytes or, `by_count`, by allocations, labelled as their
/// folded lines are.
pub fn table(
    p: &Profile,
    event: u32,
    opts: FoldOptions,
    by_count: bool,
    functions: usize,
    stacks: usize,
) -> Table {
    let mut t = Table::default();
    let mut by_stack: HashMap<Vec<String>, Row<Vec<String>>> = HashMap::new();
    let mut by_fn: HashMap<String, Row<String>> = HashMap::new();
    for s in p.samples.iter().filter(|s| s.event == event) {
        t.bytes = t.bytes.saturating_add(s.period);
        t.count = t.count.saturating_add(s.count);
        let frames = labels(p, s, opts);
        let mut seen: Vec<&str> = Vec::new();
        for f in frames.iter().skip(1) {
            let name = deannotate(f);
            if seen.contains(&name) {
                continue;
            }
            seen.push(name);
            let r = by_fn.entry(name.to_string()).or_insert_with(|| Row {
                what: name.to_string(),
                bytes: 0,
                count: 0,
                oldest_ns: None,
            });
            add(r, s.period, s.count, s.weight);
        }
        let r = by_stack.entry(frames.clone()).or_insert_with(|| Row {
            what: frames,
            bytes: 0,
            count: 0,
            oldest_ns: None,
        });
        add(r, s.period, s.count, s.weight);
    }
    let key = |bytes: u64, count: u64| {
        if by_count {
            (count, bytes)
        } else {
            (bytes, count)
        }
    };
    let mut f: Vec<Row<String>> = by_fn.into_values().collect();
    f.sort_by(|a, b| {
        key(b.bytes, b.count)
            .cmp(&key(a.bytes, a.count))
            .then_with(|| a.what.cmp(&b.what))
    });
    f.truncate(functions);
    let mut st: Vec<Row<Vec<String>>> = by_stack.into_values().collect();
    st.sort_by(|a, b| {
        key(b.bytes, b.count)
            .cmp(&key(a.bytes, a.count))
            .then_with(|| a.what.cmp(&b.what))
    });
    st.truncate(stacks);
    t.functions = f;
    t.stacks = st;
    t
}
