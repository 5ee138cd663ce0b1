//! Aggregation on a small profile whose answers are worked out by hand.

use super::fixture::{frame, merged_and_repeated, profile};
use super::*;

fn find<'a>(t: &'a EventTable, sym: &str) -> &'a Row {
    t.rows
        .iter()
        .find(|r| r.sym.as_deref() == Some(sym))
        .unwrap_or_else(|| panic!("no row {sym} in {t:#?}"))
}

pub(crate) const DEFAULT: Keys = Keys {
    comm: true,
    dso: true,
    sym: true,
    pid: false,
    tid: false,
    srcline: false,
};

#[test]
fn self_goes_to_the_first_non_inlined_frame() {
    let p = profile();
    let t = aggregate(&p, 0, DEFAULT, &Filter::default(), false);
    assert_eq!((t.samples, t.period, t.kept_samples), (6, 550, 6));
    // Samples 0, 1 and 2 (two addresses, one inlined leaf, two interned "two_hot").
    let a = find(&t, "[.] hot_a");
    assert_eq!((a.samples, a.period), (3, 300));
    assert_eq!(a.comm.as_deref(), Some("two_hot"));
    assert_eq!(a.dso.as_deref(), Some("two_hot"));
    assert!((t.pct(a.period) - 300.0 * 100.0 / 550.0).abs() < 1e-9);
    assert!(t.rows.iter().all(|r| r.sym.as_deref() != Some("[.] step")));
    assert_eq!(t.rows[0].sym.as_deref(), Some("[.] hot_a"));
    let k = find(&t, "[k] 0xffffffff9661da49");
    assert_eq!(k.dso.as_deref(), Some("[kernel.kallsyms]"));
    assert_eq!(t.rows.iter().map(|r| r.period).sum::<u64>(), 550);
}

#[test]
fn children_count_each_sample_once_per_row() {
    let p = profile();
    let t = aggregate(&p, 0, DEFAULT, &Filter::default(), true);
    let main_two_hot = t
        .rows
        .iter()
        .find(|r| r.sym.as_deref() == Some("[.] main") && r.comm.as_deref() == Some("two_hot"))
        .expect("main row");
    assert_eq!(
        (main_two_hot.children_samples, main_two_hot.children_period),
        (4, 400)
    );
    assert_eq!((main_two_hot.samples, main_two_hot.period), (0, 0));
    let main_other = t
        .rows
        .iter()
        .find(|r| r.sym.as_deref() == Some("[.] main") && r.comm.as_deref() == Some("other"))
        .expect("main row of other");
    assert_eq!((main_other.children_period, main_other.period), (50, 50));
    let step = find(&t, "[.] step");
    assert_eq!((step.children_period, step.period), (100, 0));
    // Sorted by children: the two 400s (libc, main) before hot_a (300).
    assert_eq!(t.rows[0].children_period, 400);
    assert_eq!(t.rows[2].sym.as_deref(), Some("[.] hot_a"));
}

#[test]
fn filters_keep_totals_of_all_samples() {
    let p = profile();
    let f = Filter {
        comms: vec!["other".into()],
        ..Filter::default()
    };
    let t = aggregate(&p, 0, DEFAULT, &f, false);
    assert_eq!((t.samples, t.period, t.kept_samples), (6, 550, 2));
    assert_eq!(t.rows.len(), 2);
    let f = Filter {
        pids: vec![10],
        tids: vec![10],
        ..Filter::default()
    };
    let t = aggregate(&p, 0, DEFAULT, &f, false);
    assert_eq!(t.kept_samples, 4);
    let f = Filter {
        pids: vec![99],
        ..Filter::default()
    };
    assert_eq!(aggregate(&p, 0, DEFAULT, &f, false).rows.len(), 0);
}

#[test]
fn sort_keys_group_rows() {
    let p = profile();
    let t = aggregate(
        &p,
        0,
        Keys {
            pid: true,
            ..Keys::default()
        },
        &Filter::default(),
        false,
    );
    assert_eq!(t.rows.len(), 2);
    assert_eq!((t.rows[0].pid, t.rows[0].period), (Some(10), 400));
    assert!(t.rows[0].sym.is_none() && t.rows[0].comm.is_none());
    let t = aggregate(
        &p,
        0,
        Keys {
            dso: true,
            ..Keys::default()
        },
        &Filter::default(),
        false,
    );
    let dsos: Vec<_> = t
        .rows
        .iter()
        .map(|r| r.dso.clone().unwrap_or_default())
        .collect();
    assert_eq!(dsos, ["two_hot", "[kernel.kallsyms]"]);
    let t = aggregate(&p, 1, DEFAULT, &Filter::default(), true);
    assert_eq!(
        (t.name.as_str(), t.samples, t.period),
        ("page-faults", 1, 7)
    );
}

#[test]
fn symbol_text_is_perfs() {
    let f = frame(None, "/usr/lib/libglib-2.0.so.0", 0x45c0e, false);
    assert_eq!(symbol_text(&f), "[.] 0x0000000000045c0e");
    let f = frame(None, "/x", 0, false);
    assert_eq!(symbol_text(&f), "[.] 0000000000000000");
    let f = frame(Some("schedule"), "[kernel.kallsyms]", 1, false);
    assert_eq!(symbol_text(&f), "[k] schedule");
}

/// The one-pass tables of several events equal one aggregation per event, and an
/// aggregator fed tables that grow gives the same table.
#[test]
fn one_pass_and_growing_tables_agree() {
    let p = profile();
    let both = tables(&p, &[1, 0], DEFAULT, &Filter::default(), true);
    assert_eq!(both[0], aggregate(&p, 1, DEFAULT, &Filter::default(), true));
    assert_eq!(both[1], aggregate(&p, 0, DEFAULT, &Filter::default(), true));
    let mut a = Aggregator::new(0, DEFAULT, &Filter::default(), true);
    for s in &p.samples {
        let known = s.stack.iter().max().map_or(0, |&m| m as usize + 1);
        a.add(&p.frames[..known], &p.comms[..=s.comm as usize], s);
    }
    assert_eq!(a.finish("cpu-clock".into(), &p.comms), both[1]);
    assert_eq!(events_with_samples(&p), [0, 1]);
    assert!(!has_callchains(&p, &[0, 1]));
    // An event the profile does not have: an empty table named after its index.
    let t = aggregate(&p, 7, DEFAULT, &Filter::default(), false);
    assert_eq!(
        (t.name.as_str(), t.samples, t.rows.len()),
        ("event 7", 0, 0)
    );
}

#[test]
fn percent_limits() {
    let p = profile();
    let t = aggregate(&p, 0, DEFAULT, &Filter::default(), false);
    assert_eq!(t.shown(0.0).count(), t.rows.len());
    // hot_a 54.55%, then 18.18% twice, then main 9.09%.
    assert_eq!(t.shown(18.0).count(), 3);
    assert_eq!(t.shown(60.0).count(), 0);
}

#[test]
fn a_merged_sample_counts_as_the_samples_it_stands_for() {
    let (merged, repeated) = merged_and_repeated(&profile(), 3);
    for children in [false, true] {
        let m = aggregate(&merged, 0, DEFAULT, &Filter::default(), children);
        let r = aggregate(&repeated, 0, DEFAULT, &Filter::default(), children);
        assert_eq!(m, r, "children: {children}");
        assert_eq!((m.samples, m.kept_samples), (18, 18));
    }
}
