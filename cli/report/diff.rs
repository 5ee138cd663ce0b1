//! `hwprof report --diff BASE NEW`: each row's share of its event in both files and the
//! change in percentage points, sorted by the size of the change (like `perf diff`).

use hwprof_analysis::report::diff::EventDiff;
use serde_json::{Map, Value, json};

use super::text::{Col, columns, key_columns, key_fields};
use crate::args::SortKey;
use crate::render::round4;

/// The text tables, one per event.
pub fn text(ds: &[EventDiff], sort: &[SortKey], hide_comm: bool, limit: f64) -> String {
    let mut out = String::new();
    for (i, d) in ds.iter().enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        out.push_str(&format!(
            "# Event '{}'\n#\n# Baseline: {}, event count {}\n# New:      {}, event count {}\n#\n",
            crate::render::escape(&d.name),
            crate::render::plural(d.base.samples, "sample"),
            d.base.period,
            crate::render::plural(d.new.samples, "sample"),
            d.new.period
        ));
        let rows = d.shown(limit);
        let opt = |v: Option<f64>| v.map(|v| format!("{v:.2}%")).unwrap_or_default();
        let mut cols = Vec::new();
        let mut c = Col::new("Baseline", true).min(8);
        c.cells = rows.clone().map(|r| opt(r.base)).collect();
        cols.push(c);
        let mut c = Col::new("New", true).min(8);
        c.cells = rows.clone().map(|r| opt(r.new)).collect();
        cols.push(c);
        let mut c = Col::new("Delta", true).min(8);
        c.cells = rows
            .clone()
            .map(|r| format!("{:+.2}%", r.delta()))
            .collect();
        cols.push(c);
        cols.extend(key_columns(sort, hide_comm, rows.map(|r| &r.row)));
        columns(&mut out, &cols);
    }
    out
}

/// The JSON document of the comparison (schema in docs/report.md).
pub fn json(ds: &[EventDiff], limit: f64) -> Value {
    let events: Vec<Value> = ds
        .iter()
        .map(|d| {
            let rows: Vec<Value> = d
                .shown(limit)
                .map(|r| {
                    let mut o = Map::new();
                    o.insert("baseline".into(), json!(r.base.map(round4)));
                    o.insert("new".into(), json!(r.new.map(round4)));
                    o.insert("delta".into(), json!(round4(r.delta())));
                    key_fields(&mut o, &r.row);
                    Value::Object(o)
                })
                .collect();
            json!({
                "name": d.name,
                "baseline": { "samples": d.base.samples, "period": d.base.period },
                "new": { "samples": d.new.samples, "period": d.new.period },
                "rows": rows,
            })
        })
        .collect();
    json!({ "events": events })
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{DEFAULT, aggregate, profile};
    use super::*;
    use hwprof_analysis::report::diff::compare;

    #[test]
    fn deltas_print_as_perf_diff_does() {
        let base = profile();
        let mut new = profile();
        // NEW: hot_b twice as often, the kernel sample gone.
        new.samples.retain(|s| s.stack != [6]);
        let extra = new.samples[3].clone();
        new.samples.push(extra);
        let b = aggregate(&base, 0, &DEFAULT, false);
        let n = aggregate(&new, 0, &DEFAULT, false);
        // The deltas and their order are the library's (report::diff's tests); here,
        // how they print.
        let d = compare(&b, &n);
        let t = text(std::slice::from_ref(&d), &DEFAULT, false, 0.0);
        assert!(
            t.contains("\n    18.18%    36.36%   +18.18%  two_hot  two_hot            [.] hot_b\n"),
            "{t}"
        );
        assert!(t.contains("\n    18.18%             -18.18%  other    [kernel.kallsyms]  [k] 0xffffffff9661da49\n"), "{t}");
        let j = json(&[d], 0.0);
        assert_eq!(j["events"][0]["rows"][0]["new"], Value::Null);
        assert_eq!(j["events"][0]["rows"][1]["delta"], 18.1818);
    }
}
