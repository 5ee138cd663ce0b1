//! The call graph under each row of `hwprof report -g`: perf report's callchain tree.
//!
//! Which stacks a row's graph holds is perf's rule (`hist_entry_iter` with and without
//! `--children`):
//! - every sample whose Self row is the row adds its whole chain;
//! - with children, every other row on the sample's stack adds the chain from its first
//!   frame (in the graph's order) to the end, once per sample.
//!
//! A chain is the sample's stack with inlined frames, leaf first ([`Order::Callee`]) or
//! root first ([`Order::Caller`]). The chains of a row form a radix tree: a node is a run
//! of frames that every chain through it shares and where none ends ([`Node`]). A node
//! whose period is under the threshold (a percentage of the event's total period, as
//! perf's `min_percent`) is left out with everything below it; siblings are sorted by
//! period, larger first. Percentages are of the event's total (perf's `graph` mode).

use std::collections::HashMap;

use hwprof_symbolize::{Frame, Profile};

use super::{EventTable, Filter, Keys, Row};

/// The order of a chain's frames (perf's `-g caller` / `-g callee`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Root first: the row's callers, then the way down to the sampled function.
    Caller,
    /// Leaf first: from the sampled function up to the root.
    Callee,
}

/// How to build the graphs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GraphOptions {
    /// The order of the frames.
    pub order: Order,
    /// Nodes under this percentage of the event's total period are left out.
    pub threshold: f64,
}

/// One node of a graph: a run of frames shared by every chain through it.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The frames as perf names them: `func`, `func (inlined)`, `0x…` unresolved.
    pub frames: Vec<String>,
    /// Period of the chains through this node.
    pub period: u64,
    /// Samples of the chains through this node.
    pub samples: u64,
    /// The nodes below, larger period first.
    pub children: Vec<Node>,
}

/// The graph of one row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    /// The first nodes, larger period first (empty when everything was under the
    /// threshold).
    pub roots: Vec<Node>,
    /// The period the graph stands for: the row's self period, or its children period
    /// when children are shown (perf's `parent_samples`).
    pub parent: u64,
}

/// A frame's name in a chain, as perf's `callchain_list__sym_name` prints it (an
/// unresolved address with C's `%#x`: `0` for zero). perf prints an unresolved user
/// address as it was in the process; a frame keeps its offset in the module, which is
/// printed instead.
pub fn chain_name(f: &Frame) -> String {
    match &f.function {
        Some(name) if f.inlined => format!("{name} (inlined)"),
        Some(name) => name.clone(),
        None if f.module_offset == 0 => "0".to_string(),
        None => format!("{:#x}", f.module_offset),
    }
}

/// A trie of chains (frames interned as chain keys), one per row.
#[derive(Debug, Default)]
struct Trie {
    /// (key, period ending here, period through, samples through, children).
    nodes: Vec<TNode>,
}

#[derive(Debug, Default)]
struct TNode {
    key: u32,
    ends: u64,
    period: u64,
    samples: u64,
    children: Vec<(u32, usize)>,
}

impl Trie {
    fn new() -> Trie {
        Trie {
            nodes: vec![TNode::default()],
        }
    }

    fn add(&mut self, chain: impl Iterator<Item = u32>, period: u64, samples: u64) {
        let mut at = 0;
        let mut any = false;
        for key in chain {
            any = true;
            let next = match self.nodes[at].children.iter().find(|c| c.0 == key) {
                Some(&(_, n)) => n,
                None => {
                    let n = self.nodes.len();
                    self.nodes.push(TNode {
                        key,
                        ..TNode::default()
                    });
                    self.nodes[at].children.push((key, n));
                    n
                }
            };
            at = next;
            let node = &mut self.nodes[at];
            node.period = node.period.saturating_add(period);
            node.samples += samples;
        }
        if any {
            self.nodes[at].ends = self.nodes[at].ends.saturating_add(period);
        }
    }

    /// The radix tree below node `at`, nodes under `min` left out.
    fn tree(&self, at: usize, min: u64, names: &[String]) -> Vec<Node> {
        let mut out: Vec<Node> = self.nodes[at]
            .children
            .iter()
            .filter(|&&(_, n)| self.nodes[n].period >= min)
            .map(|&(_, n)| {
                let mut node = &self.nodes[n];
                let mut frames = vec![names[node.key as usize].clone()];
                let mut last = n;
                // A run goes on while one chain goes on and none ends.
                while node.ends == 0 && node.children.len() == 1 {
                    last = node.children[0].1;
                    node = &self.nodes[last];
                    frames.push(names[node.key as usize].clone());
                }
                Node {
                    frames,
                    period: self.nodes[n].period,
                    samples: self.nodes[n].samples,
                    children: self.tree(last, min, names),
                }
            })
            .collect();
        out.sort_by(|a, b| {
            b.period
                .cmp(&a.period)
                .then_with(|| a.frames.cmp(&b.frames))
        });
        out
    }
}

/// A row's identity: its key values.
type RowKey = (
    Option<String>,
    Option<u32>,
    Option<u32>,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn row_key(r: &Row) -> RowKey {
    (
        r.comm.clone(),
        r.pid,
        r.tid,
        r.dso.clone(),
        r.sym.clone(),
        r.srcline.clone(),
    )
}

/// The graphs of the rows of `table` shown at `limit` percent (in their order), for
/// event `event` of `p` aggregated with `keys` and `filter`.
pub fn graphs(
    p: &Profile,
    event: usize,
    table: &EventTable,
    keys: Keys,
    filter: &Filter,
    limit: f64,
    opts: GraphOptions,
) -> Vec<Graph> {
    let shown: Vec<&Row> = table.shown(limit).collect();
    let index: HashMap<RowKey, usize> = shown
        .iter()
        .enumerate()
        .map(|(i, r)| (row_key(r), i))
        .collect();
    let mut tries: Vec<Trie> = shown.iter().map(|_| Trie::new()).collect();
    // Chain keys: frames named alike in one module are one node, as perf's (map, symbol).
    let mut chain_ids: HashMap<(String, String), u32> = HashMap::new();
    let mut names: Vec<String> = Vec::new();
    let mut chain_of: Vec<Option<u32>> = vec![None; p.frames.len()];
    let mut fkeys = super::FrameKeys::new(keys);
    fkeys.sync(&p.frames);
    let mut chain: Vec<u32> = Vec::new();
    let mut rows_of: Vec<Option<usize>> = Vec::new();
    let mut seen: Vec<usize> = Vec::new();
    for s in &p.samples {
        if s.event as usize != event || !filter.keeps(&p.comms, s) {
            continue;
        }
        let self_key = super::self_key(&mut fkeys, &p.frames, &s.stack);
        let fkeys = &fkeys;
        let comm = keys.comm.then(|| p.comm(s).to_string());
        let pid = keys.pid.then_some(s.pid);
        let tid = keys.tid.then_some(s.tid);
        let row_of = |k: u32| {
            let (dso, sym, src) = fkeys.keys.get(k as usize).cloned().unwrap_or_default();
            index.get(&(comm.clone(), pid, tid, dso, sym, src)).copied()
        };
        chain.clear();
        rows_of.clear();
        for &id in &s.stack {
            let c = match chain_of.get(id as usize).copied().flatten() {
                Some(c) => c,
                None => {
                    let f = p.frame(id);
                    let name = chain_name(f);
                    let n = names.len() as u32;
                    let c = *chain_ids
                        .entry((f.module_name().to_string(), name.clone()))
                        .or_insert_with(|| {
                            names.push(name);
                            n
                        });
                    if let Some(slot) = chain_of.get_mut(id as usize) {
                        *slot = Some(c);
                    }
                    c
                }
            };
            chain.push(c);
            rows_of.push(if table.children {
                fkeys.of(id).and_then(row_of)
            } else {
                None
            });
        }
        if opts.order == Order::Caller {
            chain.reverse();
            rows_of.reverse();
        }
        seen.clear();
        if let Some(r) = row_of(self_key) {
            tries[r].add(chain.iter().copied(), s.period, s.count);
            seen.push(r);
        }
        for (i, r) in rows_of.iter().enumerate() {
            if let Some(r) = *r {
                if !seen.contains(&r) {
                    seen.push(r);
                    tries[r].add(chain[i..].iter().copied(), s.period, s.count);
                }
            }
        }
    }
    let min = (table.period as f64 * (opts.threshold / 100.0)) as u64;
    shown
        .iter()
        .zip(&tries)
        .map(|(r, t)| Graph {
            roots: t.tree(0, min, &names),
            parent: if table.children {
                r.children_period
            } else {
                r.period
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture::profile;
    use crate::report::tables;

    const SYM: Keys = Keys {
        comm: false,
        pid: false,
        tid: false,
        dso: false,
        sym: true,
        srcline: false,
    };

    fn paths(n: &[Node], prefix: &str, out: &mut Vec<(String, u64)>) {
        for c in n {
            let p = format!("{prefix}{}", c.frames.join(";"));
            out.push((p.clone(), c.period));
            paths(&c.children, &format!("{p};"), out);
        }
    }

    fn graph_of(children: bool, order: Order, threshold: f64) -> (EventTable, Vec<Graph>) {
        let p = profile();
        let t = tables(&p, &[0], SYM, &Filter::default(), children).remove(0);
        let opts = GraphOptions { order, threshold };
        let g = graphs(&p, 0, &t, SYM, &Filter::default(), 0.0, opts);
        (t, g)
    }

    fn of(t: &EventTable, g: &[Graph], sym: &str) -> Vec<(String, u64)> {
        let i = t
            .rows
            .iter()
            .position(|r| r.sym.as_deref() == Some(sym))
            .expect("row");
        let mut out = Vec::new();
        paths(&g[i].roots, "", &mut out);
        out
    }

    /// Self rows hold their samples' whole chains, in either order.
    #[test]
    fn self_rows_hold_whole_chains() {
        let (t, g) = graph_of(false, Order::Callee, 0.0);
        let a = of(&t, &g, "[.] hot_a");
        // hot_a at two addresses is one node; the inlined step is a frame of its own.
        assert_eq!(a[0], ("hot_a;main;__libc_start_call_main".into(), 200));
        assert_eq!(
            a[1],
            (
                "step (inlined);hot_a;main;__libc_start_call_main".into(),
                100
            )
        );
        let (t, g) = graph_of(false, Order::Caller, 0.0);
        let a = of(&t, &g, "[.] hot_a");
        assert!(a[0].0.starts_with("__libc_start_call_main;main"), "{a:?}");
        let row = t
            .rows
            .iter()
            .position(|r| r.sym.as_deref() == Some("[.] hot_a"));
        let total: u64 = g[row.unwrap()].roots.iter().map(|n| n.period).sum();
        assert_eq!(total, t.rows[row.unwrap()].period);
    }

    /// With children, a caller's graph starts at itself, each sample counted once.
    #[test]
    fn children_rows_start_at_themselves() {
        let (t, g) = graph_of(true, Order::Caller, 0.0);
        let m = of(&t, &g, "[.] main");
        let row = t
            .rows
            .iter()
            .position(|r| r.sym.as_deref() == Some("[.] main"));
        let r = &t.rows[row.unwrap()];
        let total: u64 = g[row.unwrap()].roots.iter().map(|n| n.period).sum();
        assert_eq!(total, r.children_period, "{m:?}");
        // main's own samples keep their whole chain; the others start at main.
        assert!(m.iter().any(|(p, _)| p.starts_with("main")), "{m:?}");
    }

    /// Nodes under the threshold go, with what is below them.
    #[test]
    fn the_threshold_cuts_branches() {
        let (t, all) = graph_of(false, Order::Callee, 0.0);
        let (_, cut) = graph_of(false, Order::Callee, 30.0);
        let n = |g: &[Graph]| -> usize {
            g.iter()
                .map(|g| {
                    let mut v = Vec::new();
                    paths(&g.roots, "", &mut v);
                    v.len()
                })
                .sum()
        };
        assert!(n(&cut) < n(&all));
        for g in &cut {
            let mut v = Vec::new();
            paths(&g.roots, "", &mut v);
            for (p, period) in v {
                assert!(t.pct(period) >= 30.0, "{p} {period}");
            }
        }
    }
}
