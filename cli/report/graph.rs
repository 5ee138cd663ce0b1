//! `report -g`: perf's call-graph option spelled as perf spells it, and the graphs drawn
//! as `perf report --stdio` draws them (`ui/stdio/hist.c`: `|`, `---`, `--N.NN%--`).

use serde_json::{Value, json};

use hwprof_analysis::report::callgraph::{Graph, GraphOptions, Node, Order};

/// perf's `-g` value: `[graph][,THRESHOLD][,caller|callee][,function][,percent]` in any
/// order (perf's grammar); `none` turns the graph off (`None`). `limit` is
/// `--percent-limit`, the threshold when `-g` names none (else perf's 0.5).
pub fn parse(spec: &str, limit: f64) -> Result<Option<GraphOptions>, String> {
    let mut order = Order::Caller;
    let mut threshold = None;
    for word in spec.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        match word {
            "graph" | "function" | "percent" => {}
            "none" => return Ok(None),
            "caller" => order = Order::Caller,
            "callee" => order = Order::Callee,
            "flat" | "fractal" | "folded" | "address" | "srcline" | "branch" | "period"
            | "count" => {
                return Err(format!(
                    "-g {word}: hwprof draws perf's graph of functions in percent (graph, \
                     caller|callee, a threshold); '{word}' is not supported"
                ));
            }
            w => match w.parse::<f64>() {
                Ok(v) if threshold.is_none() && (0.0..=100.0).contains(&v) => threshold = Some(v),
                // perf's print_limit after the threshold: entries per row.
                Ok(_) if threshold.is_some() => {
                    return Err(format!("-g {w}: a print limit is not supported"));
                }
                _ => {
                    return Err(format!(
                        "-g takes graph, caller, callee, function, percent and a threshold \
                         in percent (perf's graph,0.5,caller), not '{w}'"
                    ));
                }
            },
        }
    }
    let threshold = threshold.unwrap_or(if limit > 0.0 { limit } else { 0.5 });
    Ok(Some(GraphOptions { order, threshold }))
}

/// perf's left margin of a graph: 12 spaces, plus `extra`.
fn margin(out: &mut String, extra: usize) {
    out.extend(std::iter::repeat_n(' ', 12 + extra));
}

/// A node's share of the total, as perf prints it.
fn pct(period: u64, total: u64) -> String {
    let v = if total == 0 {
        0.0
    } else {
        period as f64 * 100.0 / total as f64
    };
    format!("{v:.2}%")
}

/// perf's `ipchain__fprintf_graph_line`: the separator line of a level.
fn graph_line(out: &mut String, depth: usize, mask: &[bool], extra: usize) {
    margin(out, extra);
    for i in 0..depth {
        out.push_str(if mask.get(i).copied().unwrap_or(false) {
            "|          "
        } else {
            "           "
        });
    }
    out.push('\n');
}

/// perf's `ipchain__fprintf_graph`: frame `i` of `node` at `depth`.
#[allow(clippy::too_many_arguments)]
fn frame_line(
    out: &mut String,
    node: &Node,
    name: &str,
    i: usize,
    depth: usize,
    mask: &[bool],
    total: u64,
    extra: usize,
) {
    margin(out, extra);
    for d in 0..depth {
        out.push(if mask.get(d).copied().unwrap_or(false) {
            '|'
        } else {
            ' '
        });
        if i == 0 && d + 1 == depth {
            out.push_str("--");
            out.push_str(&pct(node.period, total));
            out.push_str("--");
        } else {
            out.push_str("          ");
        }
    }
    out.push_str(&crate::render::escape(name));
    out.push('\n');
}

/// perf's `__callchain__fprintf_graph`: the nodes of one level and what is below them.
fn level(out: &mut String, nodes: &[Node], total: u64, depth: usize, mask: &[bool], extra: usize) {
    let mut new_mask = mask.to_vec();
    for (k, child) in nodes.iter().enumerate() {
        if k + 1 == nodes.len() {
            if let Some(m) = new_mask.get_mut(depth - 1) {
                *m = false;
            }
        }
        graph_line(out, depth, mask, extra);
        for (i, name) in child.frames.iter().enumerate() {
            frame_line(out, child, name, i, depth, &new_mask, total, extra);
        }
        let mut below = new_mask.clone();
        below.resize(depth + 1, false);
        below[depth] = true;
        level(out, &child.children, total, depth + 1, &below, extra);
    }
}

/// A row's graph as perf's `callchain__fprintf_graph` draws it (nothing when every node
/// was under the threshold): `total` is the event's period; `skip_first` leaves out
/// the first frame of a single root (perf does when the sort keys begin with `sym`).
pub fn draw(out: &mut String, g: &Graph, total: u64, skip_first: bool) {
    let start = out.len();
    let mut extra = 0;
    let mut roots = &g.roots[..];
    // One root standing for the whole row: its frames without a percentage.
    if let [only] = roots {
        if only.period == g.parent {
            let mut printed = false;
            for (i, name) in only.frames.iter().enumerate() {
                if i == 0 && skip_first {
                    continue;
                }
                if !printed {
                    margin(out, extra);
                    out.push_str("|\n");
                    margin(out, extra);
                    out.push_str("---");
                    extra += 3;
                    printed = true;
                } else {
                    margin(out, extra);
                }
                out.push_str(&crate::render::escape(name));
                out.push('\n');
            }
            roots = &only.children;
        }
    }
    level(out, roots, total, 1, &[true], extra);
    if out.len() > start {
        out.push('\n');
    }
}

/// A graph's nodes for JSON: frames, period, samples, percent of the total, children.
pub fn json(nodes: &[Node], total: u64) -> Value {
    Value::Array(
        nodes
            .iter()
            .map(|n| {
                let p = if total == 0 {
                    0.0
                } else {
                    n.period as f64 * 100.0 / total as f64
                };
                json!({
                    "frames": n.frames,
                    "period": n.period,
                    "samples": n.samples,
                    "percent": crate::render::round4(p),
                    "children": json(&n.children, total),
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(frames: &[&str], period: u64, children: Vec<Node>) -> Node {
        Node {
            frames: frames.iter().map(|s| s.to_string()).collect(),
            period,
            samples: period,
            children,
        }
    }

    /// `-g` alone is perf's default; `-g caller`/`-g callee` take the next word, as
    /// perf 6.1 does; the flags after it stay flags.
    #[test]
    fn dash_g_alone_and_with_a_value() {
        use clap::Parser;
        let g = |args: &[&str]| {
            let mut all = vec!["hwprof", "report"];
            all.extend_from_slice(args);
            match crate::args::Cli::try_parse_from(all).map(|c| c.command) {
                Ok(crate::args::Command::Report(r)) => r.call_graph,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(g(&["-g"]).as_deref(), Some("graph,caller"));
        assert_eq!(g(&["-g", "--no-children"]).as_deref(), Some("graph,caller"));
        assert_eq!(g(&["-g", "callee"]).as_deref(), Some("callee"));
        assert_eq!(
            g(&["--call-graph=graph,0.1,callee"]).as_deref(),
            Some("graph,0.1,callee")
        );
        assert_eq!(g(&[]), None);
    }

    #[test]
    fn parses_perfs_spellings() {
        let g = parse("graph,caller", 0.0).unwrap().unwrap();
        assert_eq!((g.order, g.threshold), (Order::Caller, 0.5));
        let g = parse("callee", 2.0).unwrap().unwrap();
        assert_eq!((g.order, g.threshold), (Order::Callee, 2.0));
        let g = parse("graph,0.1,callee,function,percent", 2.0)
            .unwrap()
            .unwrap();
        assert_eq!((g.order, g.threshold), (Order::Callee, 0.1));
        assert_eq!(parse("none", 0.0), Ok(None));
        assert!(parse("fractal", 0.0).unwrap_err().contains("fractal"));
        assert!(parse("perf.data", 0.0).unwrap_err().contains("perf.data"));
    }

    /// The drawing of perf 6.1 on fp_chain (`perf report -g caller --no-children`),
    /// character for character.
    #[test]
    fn draws_as_perf() {
        let g = Graph {
            roots: vec![node(
                &["__libc_start_call_main", "main", "top"],
                1000,
                vec![
                    node(&["mid", "leaf"], 692, vec![]),
                    node(&["leaf"], 303, vec![]),
                ],
            )],
            parent: 1000,
        };
        let mut out = String::new();
        draw(&mut out, &g, 1000, false);
        let want = "            |
            ---__libc_start_call_main
               main
               top
               |          
               |--69.20%--mid
               |          leaf
               |          
                --30.30%--leaf

";
        assert_eq!(out, want);
    }

    /// A single root short of the row gets its percentage, and nothing under the
    /// threshold draws nothing.
    #[test]
    fn partial_and_empty_graphs() {
        let g = Graph {
            roots: vec![node(&["a", "b"], 90, vec![])],
            parent: 100,
        };
        let mut out = String::new();
        draw(&mut out, &g, 200, false);
        assert_eq!(
            out,
            "            |          \n             --45.00%--a\n                       b\n\n"
        );
        let mut out = String::new();
        draw(&mut out, &Graph::default(), 200, false);
        assert_eq!(out, "");
    }
}
