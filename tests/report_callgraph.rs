//! End-to-end tests of `hwprof report -g` and `--sort srcline` against perf report on
//! the same files: the call graph under each row (with and without children, caller and
//! callee order) as (row, path, percent) lists, on recordings of a program of known call
//! structure made by perf and by hwprof, and on the other-machine fixture
//! perf.data.callgraph-3.8; the srcline rows of the same program.

#[macro_use]
mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;

/// (row's symbol, path of frames from the graph's top joined by `;`) -> percent.
type Paths = BTreeMap<(String, String), f64>;

/// A row line of `--stdio` (a percentage first, then the columns), its symbol text
/// (what follows `[.] `/`[k] `) and its first percentage.
fn row_of(line: &str) -> Option<(String, f64)> {
    let first = line.split_whitespace().next()?;
    let pct: f64 = first.strip_suffix('%')?.parse().ok()?;
    let at = ["[.] ", "[k] ", "[g] ", "[u] ", "[H] "]
        .iter()
        .filter_map(|l| line.rfind(l))
        .max()?;
    Some((line[at + 4..].trim_end().to_string(), pct))
}

/// Parses perf's `--stdio` graphs (hwprof draws the same characters) into the path of
/// every node: a frame line's name starts after its `|`, spaces, `---` or
/// `--N.NN%--`; a line with a percentage (or `---`, the row's own) starts a node whose
/// parent is the last open node whose names start left of it; a line without one adds
/// a frame to the open node whose names start at its column. `hex` maps each frame
/// name (unresolved addresses); nodes that map to one path add up.
fn parse_graphs(text: &str, hex: &dyn Fn(&str) -> String) -> Paths {
    // (row's symbol, path, percent) of every node.
    let mut nodes: Vec<(String, String, f64)> = Vec::new();
    let mut row: Option<(String, f64)> = None;
    // (name column, node) of the open nodes, outermost first.
    let mut open: Vec<(usize, usize)> = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if let Some(r) = row_of(line) {
            row = Some(r);
            open.clear();
            continue;
        }
        let Some((sym, row_pct)) = &row else {
            continue;
        };
        let body = line.trim_start_matches([' ', '|']);
        if body.is_empty() {
            continue;
        }
        let col = line.len() - body.len();
        let (pct, name, col) = if let Some(rest) = body.strip_prefix("---") {
            (Some(*row_pct), rest, col + 3)
        } else if let Some(rest) = body.strip_prefix("--") {
            let end = rest.find("%--").expect("a graph percentage");
            let p: f64 = rest[..end].parse().expect("graph percent");
            (Some(p), &rest[end + 3..], col + 2 + end + 3)
        } else {
            (None, body, col)
        };
        let name = hex(name.trim_end());
        match pct {
            Some(p) => {
                while open.last().is_some_and(|o| o.0 >= col) {
                    open.pop();
                }
                let path = match open.last() {
                    Some(&(_, parent)) => format!("{};{name}", nodes[parent].1),
                    None => name,
                };
                nodes.push((sym.clone(), path, p));
                open.push((col, nodes.len() - 1));
            }
            None => {
                while open.last().is_some_and(|o| o.0 > col) {
                    open.pop();
                }
                let &(_, n) = open.last().expect("a frame line inside a node");
                nodes[n].1 = format!("{};{name}", nodes[n].1);
            }
        }
    }
    let mut out = Paths::new();
    for (sym, path, p) in nodes {
        *out.entry((sym, path)).or_default() += p;
    }
    out
}

fn same(s: &str) -> String {
    s.to_string()
}

/// Compares two graph path lists: every path above 1% in one is in the other within
/// 0.5 points (the tolerance of rounding), and there are some.
fn assert_graphs_agree(what: &str, perf: &Paths, hw: &Paths) {
    let mut checked = 0;
    for (a, b, an, bn) in [(perf, hw, "perf", "hwprof"), (hw, perf, "hwprof", "perf")] {
        for (k, &v) in a.iter().filter(|(_, v)| **v >= 1.0) {
            let w = b.get(k).unwrap_or_else(|| {
                panic!("{what}: {an}'s {k:?} ({v}%) is not in {bn}'s graph\nperf: {perf:#?}\nhwprof: {hw:#?}")
            });
            assert!((v - w).abs() <= 0.5, "{what}: {k:?}: {an} {v}%, {bn} {w}%");
            checked += 1;
        }
    }
    report!("{what}: {checked} graph paths above 1% agree with perf report");
    assert!(checked > 0, "{what}: no path above 1%");
}

/// `perf report --stdio` with `args` of `file`.
fn perf_text(file: &Path, args: &[&str]) -> String {
    let f = s(file);
    let mut a = vec!["report", "--stdio", "-i", &f];
    a.extend_from_slice(args);
    let r = perf(&a);
    r.assert_ok();
    r.stdout
}

/// `hwprof report` with `args` of `file`.
fn hwprof_text(file: &Path, args: &[&str]) -> String {
    let f = s(file);
    let mut a = vec!["report", "-i", &f];
    a.extend_from_slice(args);
    let r = hwprof(&a);
    r.assert_ok();
    r.stdout
}

/// Every combination of order and children on `file`, against perf; with children,
/// only the rows `children_row` keeps (by symbol).
fn graphs_agree_on(
    what: &str,
    file: &Path,
    hex: &dyn Fn(&str) -> String,
    children_row: &dyn Fn(&str) -> bool,
) {
    for children in ["--no-children", "--children"] {
        for order in ["caller", "callee"] {
            let args = [children, "-g", order];
            let mut p = parse_graphs(&perf_text(file, &args), hex);
            let mut h = parse_graphs(&hwprof_text(file, &args), hex);
            if children == "--children" {
                p.retain(|(sym, _), _| children_row(sym));
                h.retain(|(sym, _), _| children_row(sym));
            }
            assert_graphs_agree(&format!("{what} {children} -g {order}"), &p, &h);
        }
    }
}

/// leaf's callers in its callee graph: (under via_a, under via_b) in percent.
fn leaf_callers(paths: &Paths) -> (f64, f64) {
    let get = |p: &str| {
        paths
            .iter()
            .filter(|((s, path), _)| s == "leaf" && path.starts_with(p))
            .map(|(_, v)| *v)
            .sum::<f64>()
    };
    (get("leaf;via_a;"), get("leaf;via_b;"))
}

#[test]
fn graphs_agree_with_perf_on_perf_and_hwprof_recordings() {
    if !require_perf("report -g against perf report -g") {
        return;
    }
    let wl = wl("callgraph");
    for (who, file) in [
        ("perf", record_perf("cg-perf.data", &[&wl, "400"])),
        ("hwprof", record_hwprof("cg-hwprof.data", &[&wl, "400"])),
    ] {
        graphs_agree_on(&format!("{who} recording"), &file, &same, &|_| true);
        // Keys beginning with sym: a single run without its first frame, as perf.
        let args = ["--no-children", "-s", "sym,dso", "-g", "callee"];
        let p = parse_graphs(&perf_text(&file, &args), &same);
        let h = parse_graphs(&hwprof_text(&file, &args), &same);
        assert!(
            h.keys()
                .any(|(s, p)| s.starts_with("leaf") && p.starts_with("via_a;")),
            "{h:#?}"
        );
        assert_graphs_agree(&format!("{who} recording -s sym,dso"), &p, &h);
        // The known shape: leaf's time 2/3 under via_a, 1/3 under via_b. Some 400
        // samples (400 ms of CPU at 999 Hz): the share under via_a has a binomial
        // spread of 2.4 points, so 4 of those (57-76%) put the ratio in 1.3-3.3 (CI's
        // loaded clone measured 72.6% against 26.7%, 2.72, on perf's recording). The
        // workload varies each round's length: with one length the samples could keep
        // step with the loop (53% against 45% once under load; 63-70% in ten loaded runs
        // since).
        let h = parse_graphs(
            &hwprof_text(&file, &["--no-children", "-g", "callee"]),
            &same,
        );
        let (a, b) = leaf_callers(&h);
        assert!(
            a > 40.0 && b > 20.0 && (1.3..=3.3).contains(&(a / b)),
            "{who} recording: leaf under via_a {a}%, under via_b {b}%\n{h:#?}"
        );
        // -g alone is perf's caller order: the root first.
        let h = parse_graphs(&hwprof_text(&file, &["--no-children", "-g"]), &same);
        assert!(
            h.keys()
                .any(|(s, p)| s == "leaf" && p.starts_with("__libc_start_call_main;main")),
            "{h:#?}"
        );
    }
}

#[test]
fn graphs_agree_with_perf_on_the_other_machine_fixture() {
    if !require_perf("report -g against perf report -g") {
        return;
    }
    let Some(file) = fixture("perf.data.callgraph-3.8") else {
        return;
    };
    // Unresolved user addresses: perf prints the address in the process, hwprof the
    // offset in the module; kernel addresses are the same. perf's rows of the callers
    // (--children) that are such addresses are named by the address in the process,
    // hwprof's by the offset (the row of the frame's own samples): different rows,
    // left out there.
    let user = |n: &str| n.starts_with("0x") && !n.starts_with("0xffff");
    let hex = |n: &str| {
        if user(n) {
            "0x?".to_string()
        } else {
            n.to_string()
        }
    };
    graphs_agree_on("perf.data.callgraph-3.8", &file, &hex, &|sym| !user(sym));
}

/// `--percent-limit` cuts the graph's branches too (perf's min_percent).
#[test]
fn percent_limit_cuts_branches() {
    let wl = wl("callgraph");
    let file = record_hwprof("cg-limit.data", &[&wl, "300"]);
    let all = parse_graphs(
        &hwprof_text(&file, &["--no-children", "-g", "callee"]),
        &same,
    );
    let (_, b) = leaf_callers(&all);
    assert!(b > 20.0, "{all:#?}");
    let limit = format!("{}", b + 5.0);
    let cut = parse_graphs(
        &hwprof_text(
            &file,
            &["--no-children", "-g", "callee", "--percent-limit", &limit],
        ),
        &same,
    );
    let (a, b) = leaf_callers(&cut);
    assert!(a > 0.0 && b == 0.0, "{cut:#?}");
}

/// perf's srcline rows: file:line of the sampled code, the same shares as perf.
#[test]
fn srcline_rows_agree_with_perf() {
    if !require_perf("--sort srcline against perf report") {
        return;
    }
    let wl = wl("callgraph");
    let file = record_perf("cg-srcline.data", &[&wl, "400"]);
    let rows = |text: &str| -> BTreeMap<String, f64> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let pct: f64 = w.next()?.strip_suffix('%')?.parse().ok()?;
                let key = w.last()?.to_string();
                key.contains(".c:").then_some((key, pct))
            })
            .collect()
    };
    let p = rows(&perf_text(
        &file,
        &["--no-children", "-s", "srcline", "-g", "none"],
    ));
    let h = rows(&hwprof_text(&file, &["--no-children", "-s", "srcline"]));
    let hot = p.get("callgraph.c:19").copied().unwrap_or(0.0);
    let warm = p.get("callgraph.c:20").copied().unwrap_or(0.0);
    assert!(hot > 50.0 && warm > 3.0, "perf's rows {p:#?}");
    for (k, v) in p.iter().filter(|(_, v)| **v >= 1.0) {
        let w = h.get(k).copied().unwrap_or(0.0);
        assert!((v - w).abs() <= 0.5, "{k}: perf {v}%, hwprof {w}%\n{h:#?}");
    }
    report!("srcline: callgraph.c:19 {hot}%, :20 {warm}% in both");
}

#[test]
fn graph_errors_are_one_line() {
    let wl = wl("callgraph");
    let file = record_hwprof("cg-err.data", &[&wl, "50"]);
    let f = s(&file);
    for (args, needle) in [
        (vec!["-g", "fractal"], "not supported"),
        (vec!["-g", "sideways"], "not 'sideways'"),
        (vec!["-g", "--diff", &f, &f], "cannot be used"),
    ] {
        let mut a = vec!["report", "-i", &f];
        a.extend(args.iter().copied());
        let r = hwprof(&a);
        assert_eq!(r.code(), 2, "{}", r.dump());
        assert!(r.stderr.contains(needle), "{}", r.dump());
    }
    // A recording without callchains.
    let plain = scratch_path("cg-plain.data");
    let p = s(&plain);
    hwprof(&["record", "-e", "cpu-clock", "-o", &p, "--", &wl, "50"]).assert_ok();
    let r = hwprof(&["report", "-i", &p, "-g"]);
    assert_eq!(r.code(), 2, "{}", r.dump());
    assert!(r.stderr.contains("no callchains"), "{}", r.dump());
}

/// `--json -g` carries the same tree as the text.
#[test]
fn json_carries_the_graph() {
    let wl = wl("callgraph");
    let file = record_hwprof("cg-json.data", &[&wl, "300"]);
    let f = s(&file);
    let args = ["--no-children", "-g", "callee"];
    let text = parse_graphs(&hwprof_text(&file, &args), &same);
    let mut a = vec!["report", "--json", "-i", &f];
    a.extend(args);
    let r = hwprof(&a);
    r.assert_ok();
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    let mut json = Paths::new();
    fn walk(nodes: &serde_json::Value, sym: &str, prefix: &str, out: &mut Paths) {
        for n in nodes.as_array().into_iter().flatten() {
            let frames: Vec<&str> = n["frames"]
                .as_array()
                .expect("frames")
                .iter()
                .map(|f| f.as_str().expect("a frame"))
                .collect();
            let path = format!("{prefix}{}", frames.join(";"));
            let pct = n["percent"].as_f64().expect("percent");
            out.insert((sym.to_string(), path.clone()), pct);
            walk(&n["children"], sym, &format!("{path};"), out);
        }
    }
    for row in v["events"][0]["rows"].as_array().expect("rows") {
        let sym = row["symbol"].as_str().expect("symbol");
        let sym = sym.split_once("] ").map_or(sym, |(_, s)| s);
        walk(&row["callgraph"], sym, "", &mut json);
    }
    // The text leaves out the percentage of a run standing for its whole row.
    let (a, b) = leaf_callers(&json);
    assert!(a > 40.0 && b > 20.0, "{json:#?}");
    for (k, v) in &text {
        let w = json
            .get(k)
            .unwrap_or_else(|| panic!("{k:?} not in the JSON {json:#?}"));
        assert!(
            (v - w).abs() <= 0.01 || k.1 == k.0,
            "{k:?}: text {v}, JSON {w}"
        );
    }
}
