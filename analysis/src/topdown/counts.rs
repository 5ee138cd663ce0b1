//! Event counts measured elsewhere: `perf stat -x,` output (`value,unit,event,...`
//! lines, also with `-I` timestamps or `-A` CPUs in front; an event written with PMU
//! terms, `cpu/event,cmask=0x6/`, keeps its commas), `hwprof stat -j` output (one JSON
//! object per event, `scaled` being the multiplexing-scaled count) or `perf stat -j`
//! output (`counter-value`).
//!
//! Counts of the same event (per CPU, per interval) are summed. Events perf could not
//! count (`<not counted>`, `<not supported>`, `"supported": false`) are left out, so
//! the metrics that need them say so.

use std::collections::BTreeMap;

use super::Error;

/// Counts by event name, as written in the input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    by_name: BTreeMap<String, f64>,
}

/// One PERF_METRICS event: its name in Intel's files, perf's, and the umask the kernel
/// gives it (event 0x00; `arch/x86/events/intel/core.c`:
/// `EVENT_ATTR_STR(slots, slots, "event=0x00,umask=0x4")`, `topdown-retiring` 0x80...).
struct PerfName {
    intel: &'static str,
    perf: &'static str,
    umask: u8,
}

const fn n(intel: &'static str, perf: &'static str, umask: u8) -> PerfName {
    PerfName { intel, perf, umask }
}

/// perf's names of the PERF_METRICS events and the names in Intel's files.
const PERF_NAMES: [PerfName; 10] = [
    n("TOPDOWN.SLOTS:perf_metrics", "slots", 0x04),
    n("PERF_METRICS.RETIRING", "topdown-retiring", 0x80),
    n("PERF_METRICS.BAD_SPECULATION", "topdown-bad-spec", 0x81),
    n("PERF_METRICS.FRONTEND_BOUND", "topdown-fe-bound", 0x82),
    n("PERF_METRICS.BACKEND_BOUND", "topdown-be-bound", 0x83),
    n("PERF_METRICS.HEAVY_OPERATIONS", "topdown-heavy-ops", 0x84),
    n(
        "PERF_METRICS.BRANCH_MISPREDICTS",
        "topdown-br-mispredict",
        0x85,
    ),
    n("PERF_METRICS.FETCH_LATENCY", "topdown-fetch-lat", 0x86),
    n("PERF_METRICS.MEMORY_BOUND", "topdown-mem-bound", 0x87),
    n("TOPDOWN.SLOTS", "slots", 0x04),
];

/// perf's name (`topdown-retiring`) of an event of Intel's files, if it has one.
pub fn perf_name(intel: &str) -> Option<&'static str> {
    PERF_NAMES.iter().find(|p| p.intel == intel).map(|p| p.perf)
}

/// The `cpu` PMU config of a PERF_METRICS event as the kernel defines it, for Ice Lake
/// and later: by Intel's name (`PERF_METRICS.RETIRING`, `TOPDOWN.SLOTS`) or perf's
/// (`topdown-retiring`, `slots`).
pub fn perf_metrics_config(name: &str) -> Option<u64> {
    PERF_NAMES
        .iter()
        .find(|p| p.intel == name || p.perf == name)
        .map(|p| u64::from(p.umask) << 8)
}

/// The fields of a `perf stat -x,` line, an event with PMU terms kept whole:
/// `5,,cpu/ev,cmask=0x6/u,100,...` has `cpu/ev,cmask=0x6/u` as its third field.
fn fields(line: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut open = false;
    for f in line.split(',') {
        match out.last_mut() {
            Some(last) if open => {
                last.push(',');
                last.push_str(f);
            }
            _ => out.push(f.to_string()),
        }
        if f.matches('/').count() % 2 == 1 {
            open = !open;
        }
    }
    out
}

/// One spelling of an event with PMU terms, `pmu/terms/mods` or perf's
/// `pmu@terms@`: lower case, numbers in decimal (`cmask=0x6` is `cmask=6`).
fn canonical(name: &str) -> Option<String> {
    let (pmu, rest) = name.split_once(['/', '@'])?;
    let close = if name.as_bytes()[pmu.len()] == b'/' {
        '/'
    } else {
        '@'
    };
    let (terms, mods) = rest.rsplit_once(close)?;
    let terms: Vec<String> = terms
        .split(',')
        .map(|t| {
            let t = t.trim().to_ascii_lowercase();
            match t.split_once('=') {
                Some((k, v)) => {
                    let n = match v.strip_prefix("0x") {
                        Some(h) => u64::from_str_radix(h, 16).ok(),
                        None => v.parse::<u64>().ok(),
                    };
                    n.map_or_else(|| t.clone(), |n| format!("{k}={n}"))
                }
                None => t,
            }
        })
        .collect();
    Some(format!(
        "{}/{}/{}",
        pmu.to_ascii_lowercase(),
        terms.join(","),
        mods.to_ascii_lowercase()
    ))
}

impl Counts {
    /// From (name, count) pairs.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, f64)>) -> Counts {
        let mut c = Counts::default();
        for (n, v) in pairs {
            c.add(n, v);
        }
        c
    }

    /// Adds `v` to the count of `name`.
    pub fn add(&mut self, name: &str, v: f64) {
        *self.by_name.entry(name.to_string()).or_insert(0.0) += v;
    }

    /// The count of an event as Intel's file writes it (`UOPS_ISSUED.ANY`,
    /// `IDQ.MS_UOPS:c1`, `TOPDOWN.SLOTS:perf_metrics`): the same name, else the same
    /// name in another case, else perf's name of a PERF_METRICS event (`slots`,
    /// `topdown-retiring`), else without the `:perf_metrics` tag. Modifiers such as
    /// `:c1` are part of the name: `IDQ.MS_UOPS` is not `IDQ.MS_UOPS:c1`.
    pub fn get(&self, name: &str) -> Option<f64> {
        if let Some(v) = self.by_name.get(name) {
            return Some(*v);
        }
        let ci = |n: &str| {
            self.by_name
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(n))
                .map(|(_, v)| *v)
        };
        ci(name)
            .or_else(|| {
                perf_name(name).and_then(|p| {
                    ci(p)
                        .or_else(|| ci(&format!("cpu/{p}/")))
                        .or_else(|| ci(&format!("cpu_core/{p}/")))
                })
            })
            .or_else(|| name.strip_suffix(":perf_metrics").and_then(ci))
            .or_else(|| {
                // perf's `cpu@ev\,cmask\=0x6@` is `cpu/ev,cmask=6/` as counted.
                let want = canonical(name)?;
                self.by_name
                    .iter()
                    .find(|(k, _)| canonical(k).as_deref() == Some(want.as_str()))
                    .map(|(_, v)| *v)
            })
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The events and counts.
    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.by_name.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// Parses `perf stat -x,` or `hwprof stat -j` output (told apart by the first
    /// non-empty line: `{` is JSON).
    pub fn parse(text: &str) -> Result<Counts, Error> {
        let first = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'));
        match first {
            None => Err(Error::Counts(
                "the counts file is empty: give the output of `perf stat -x,` or `hwprof stat -j`"
                    .into(),
            )),
            Some(l) if l.starts_with('{') => Self::parse_json(text),
            Some(_) => Self::parse_csv(text),
        }
    }

    fn parse_json(text: &str) -> Result<Counts, Error> {
        let mut c = Counts::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let v: serde_json::Value = serde_json::from_str(line).map_err(|e| {
                Error::Counts(format!(
                    "line {}: not a JSON object of `hwprof stat -j` ({e})",
                    i + 1
                ))
            })?;
            let Some(event) = v.get("event").and_then(|e| e.as_str()) else {
                return Err(Error::Counts(format!(
                    "line {}: no \"event\" field (is this `hwprof stat -j` output?)",
                    i + 1
                )));
            };
            if v.get("supported").and_then(|s| s.as_bool()) == Some(false) {
                continue;
            }
            // perf stat -j: "counter-value" : "123.000000" (or "<not counted>").
            let perf_value = v.get("counter-value").and_then(|c| match c {
                serde_json::Value::String(s) => s.trim().parse::<f64>().ok(),
                c => c.as_f64(),
            });
            let value = v
                .get("scaled")
                .and_then(|s| s.as_f64())
                .or_else(|| v.get("value").and_then(|s| s.as_f64()))
                .or(perf_value);
            if let Some(value) = value {
                c.add(event, value);
            }
        }
        Ok(c)
    }

    fn parse_csv(text: &str) -> Result<Counts, Error> {
        let mut c = Counts::default();
        let numeric = |s: &str| s.trim().parse::<f64>().is_ok();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let f = fields(line);
            let f: Vec<&str> = f.iter().map(String::as_str).collect();
            // value,unit,event,...  or  (time|CPUn),value,unit,event,...
            // value,unit,event,run,pct,...; `-I` or `-A` put a time or CPU in front
            // (then the fourth field is the event, not the run time, a number); the
            // --per-core / --per-socket aggregations put an id and a count of CPUs.
            let value_like = |s: &str| numeric(s) || s.trim().starts_with('<');
            let event_like = |s: &str| !s.trim().is_empty() && !numeric(s);
            let (value, event) = if f.len() >= 5
                && !numeric(f[0])
                && numeric(f[1])
                && value_like(f[2])
                && event_like(f[4])
            {
                (f[2], f[4])
            } else if f.len() >= 4 && event_like(f[3]) {
                (f[1], f[3])
            } else if f.len() >= 3 && event_like(f[2]) {
                (f[0], f[2])
            } else if f.iter().take(2).all(|x| x.trim().is_empty()) {
                continue; // a metric-only line (`,,,,,32.4,%  tma_retiring`)
            } else {
                return Err(Error::Counts(format!(
                    "line {}: `{line}` is not a `perf stat -x,` line (value,unit,event,...)",
                    i + 1
                )));
            };
            let value = value.trim();
            if value.starts_with('<') {
                continue; // <not counted>, <not supported>
            }
            let v: f64 = value.parse().map_err(|_| {
                Error::Counts(format!(
                    "line {}: count `{value}` of {event} is not a number",
                    i + 1
                ))
            })?;
            c.add(event.trim(), v);
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_csv_plain_interval_and_not_counted() {
        let text = "# started on x\n\n\
            1000,,UOPS_ISSUED.ANY,2000000,100.00,,\n\
            <not counted>,,BR_MISP_RETIRED.ALL_BRANCHES,0,0.00,,\n\
            5,,IDQ.MS_UOPS:c1,2000000,100.00,,\n\
            12.50,msec,task-clock,12500000,100.00,0.999,CPUs utilized\n\
            1.001,7,,slots,1000,100.00,,\n\
            2.002,3,,slots,1000,100.00,,\n\
            2.002,1.5,msec,cpu-clock,1000,100.00,,\n\
            CPU1,4,,INST_RETIRED.ANY,1000,100.00,,\n\
            S0-D0-C0,2,40,,UOPS_RETIRED.SLOTS,1000,100.00,,\n\
            S0-D0-C1,2,2,,UOPS_RETIRED.SLOTS,1000,100.00,,\n\
            ,,,,,32.4,%  tma_retiring\n\
            9,,cpu_core/topdown-be-bound/,1000,100.00,,\n";
        let c = Counts::parse(text).expect("parses");
        assert_eq!(c.get("UOPS_ISSUED.ANY"), Some(1000.0));
        assert_eq!(c.get("uops_issued.any"), Some(1000.0));
        assert_eq!(c.get("BR_MISP_RETIRED.ALL_BRANCHES"), None);
        assert_eq!(c.get("IDQ.MS_UOPS:c1"), Some(5.0));
        assert_eq!(c.get("IDQ.MS_UOPS"), None);
        assert_eq!(c.get("task-clock"), Some(12.5));
        assert_eq!(c.get("TOPDOWN.SLOTS:perf_metrics"), Some(10.0));
        assert_eq!(c.get("cpu-clock"), Some(1.5));
        assert_eq!(c.get("INST_RETIRED.ANY"), Some(4.0));
        assert_eq!(c.get("UOPS_RETIRED.SLOTS"), Some(42.0));
        assert_eq!(c.get("PERF_METRICS.BACKEND_BOUND"), Some(9.0));
        assert_eq!(c.len(), 8, "{c:?}");
        let e = Counts::parse("hello world\n").expect_err("not csv");
        assert!(e.to_string().contains("not a `perf stat -x,` line"), "{e}");
    }

    #[test]
    fn events_with_pmu_terms_keep_their_commas_and_match_perfs_spelling() {
        let text = "100,,cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6/,1000,100.00,,\n\
            7,,cpu/INT_MISC.RECOVERY_CYCLES,cmask=1,edge/u,1000,100.00,,\n\
            CPU3,5,,cpu/event=0xc1/,1000,100.00,,\n\
            9,,ex_ret_ops,1000,100.00,,\n\
            3,,cpu/x.y,cmask=012/,1000,100.00,,\n";
        let c = Counts::parse(text).expect("parses");
        assert_eq!(c.len(), 5, "{c:?}");
        assert_eq!(
            c.get("cpu@x.y,cmask=0xc@"),
            Some(3.0),
            "numbers compared as numbers"
        );
        assert_eq!(
            c.get("cpu@de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6@"),
            Some(100.0)
        );
        assert_eq!(
            c.get("cpu@de_no_dispatch_per_slot.no_ops_from_frontend,cmask=6@"),
            Some(100.0)
        );
        assert_eq!(
            c.get("cpu@de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x8@"),
            None
        );
        assert_eq!(
            c.get("cpu@INT_MISC.RECOVERY_CYCLES,cmask=1,edge@u"),
            Some(7.0)
        );
        assert_eq!(c.get("cpu@INT_MISC.RECOVERY_CYCLES,cmask=1,edge@"), None);
        assert_eq!(c.get("cpu/event=0xc1/"), Some(5.0));
        // perf stat -j.
        let j = r#"{"counter-value" : "1234.000000", "unit" : "", "event" : "cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6/", "event-runtime" : 1, "pcnt-running" : 100.00}
{"counter-value" : "<not counted>", "unit" : "", "event" : "ex_ret_ops", "event-runtime" : 0, "pcnt-running" : 0.00}
"#;
        let c = Counts::parse(j).expect("perf json");
        assert_eq!(
            c.get("cpu@de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6@"),
            Some(1234.0)
        );
        assert_eq!(c.get("ex_ret_ops"), None);
    }

    #[test]
    fn hwprof_json_uses_scaled_counts_and_skips_unsupported() {
        let text = r#"{"event":"cycles","value":null,"supported":false,"scaled":null}
{"event":"topdown-retiring","value":100,"scaled":400.0,"supported":true}
{"event":"INST_RETIRED.ANY","value":5,"scaled":5.0,"supported":true,"cpu":0}
{"event":"INST_RETIRED.ANY","value":6,"scaled":6.0,"supported":true,"cpu":1}
"#;
        let c = Counts::parse(text).expect("parses");
        assert_eq!(c.get("cycles"), None);
        assert_eq!(c.get("PERF_METRICS.RETIRING"), Some(400.0));
        assert_eq!(c.get("INST_RETIRED.ANY"), Some(11.0));
        assert!(Counts::parse("{\"x\":1}\n").is_err());
        assert!(Counts::parse("\n\n").is_err());
    }
}
