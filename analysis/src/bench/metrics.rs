//! A benchmark's runs as metrics: what one run measured ([`RunResult`], from a
//! [`CountedCommand`](hwprof_pmu::command::CountedCommand)'s end), and the metrics of a
//! series of runs, each summarized by [`crate::stats`].

use hwprof_pmu::command::Finished;
use hwprof_pmu::metrics::is_clock;
use hwprof_pmu::{Count, Status};

use super::doc::{Metric, Unit};
use crate::stats;

/// What one run measured.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// From letting the command exec to reaping it, ns.
    pub wall_ns: f64,
    /// User CPU time (rusage), ns.
    pub user_ns: f64,
    /// System CPU time (rusage), ns.
    pub sys_ns: f64,
    /// Peak resident set size, KiB.
    pub max_rss_kb: f64,
    /// Each event's count, `None` when it could not be counted.
    pub counts: Vec<Option<Count>>,
}

impl RunResult {
    /// What a finished run of a command counted with `events` events measured: wall
    /// time, rusage, and each event's total (`None` when it was not counting).
    pub fn of(run: &Finished, events: usize) -> RunResult {
        let counts = run
            .readings
            .total(events)
            .into_iter()
            .zip(run.counter.status())
            .map(|(c, s)| (*s == Status::Counting).then(|| c.unwrap_or_default()))
            .collect();
        RunResult {
            wall_ns: run.wall.as_nanos() as f64,
            user_ns: run.exit.user_us as f64 * 1e3,
            sys_ns: run.exit.sys_us as f64 * 1e3,
            max_rss_kb: run.exit.max_rss_kb as f64,
            counts,
        }
    }
}

/// Builds a metric from per-run values (`None`: not supported here).
fn metric(name: &str, unit: Unit, values: Option<Vec<f64>>, scaled: bool) -> Metric {
    let Some(values) = values.filter(|v| !v.is_empty()) else {
        return Metric {
            name: name.to_string(),
            unit,
            supported: false,
            scaled: false,
            values: Vec::new(),
            median: None,
            mad: None,
            min: None,
            max: None,
            ci95: None,
        };
    };
    let (lo, hi) = stats::median_ci(&values, 0.95);
    Metric {
        name: name.to_string(),
        unit,
        supported: true,
        scaled,
        median: Some(stats::median(&values)),
        mad: Some(stats::mad(&values)),
        min: Some(stats::min(&values)),
        max: Some(values.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        ci95: Some([lo, hi]),
        values,
    }
}

/// The metrics measured before the events, and after them.
const TIMES: [&str; 3] = ["wall-time", "user-time", "sys-time"];
const RSS: &str = "max-rss";

/// The names of the metrics [`metrics`] returns, in the same order.
pub fn metric_names(event_names: &[String]) -> Vec<String> {
    let mut names: Vec<String> = TIMES.map(String::from).to_vec();
    names.extend(event_names.iter().cloned());
    names.push(RSS.to_string());
    names
}

/// The names of the metrics `run` counted: [`metric_names`] without the events the
/// kernel refused.
pub fn counted(event_names: &[String], run: &RunResult) -> Vec<String> {
    metric_names(event_names)
        .into_iter()
        .filter(|m| {
            event_names
                .iter()
                .position(|e| e == m)
                .is_none_or(|i| run.counts.get(i).is_some_and(Option::is_some))
        })
        .collect()
}

/// The metrics of a series of runs, in display order: wall, user and system time, the
/// events, peak RSS.
pub fn metrics(runs: &[RunResult], event_names: &[String]) -> Vec<Metric> {
    let col = |f: fn(&RunResult) -> f64| Some(runs.iter().map(f).collect::<Vec<f64>>());
    let mut out = vec![
        metric(TIMES[0], Unit::Ns, col(|r| r.wall_ns), false),
        metric(TIMES[1], Unit::Ns, col(|r| r.user_ns), false),
        metric(TIMES[2], Unit::Ns, col(|r| r.sys_ns), false),
    ];
    for (i, name) in event_names.iter().enumerate() {
        let counts: Option<Vec<Count>> = runs
            .iter()
            .map(|r| r.counts.get(i).copied().flatten())
            .collect();
        let scaled = counts
            .as_ref()
            .is_some_and(|c| c.iter().any(Count::is_scaled));
        let values = counts.and_then(|c| c.iter().map(Count::scaled).collect::<Option<Vec<f64>>>());
        // Clocks count nanoseconds (as `hwprof stat` shows them).
        let unit = if is_clock(name) {
            Unit::Ns
        } else {
            Unit::Count
        };
        out.push(metric(name, unit, values, scaled));
    }
    out.push(metric(RSS, Unit::Kib, col(|r| r.max_rss_kb), false));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(wall: f64, counts: Vec<Option<Count>>) -> RunResult {
        RunResult {
            wall_ns: wall,
            user_ns: wall / 2.0,
            sys_ns: 0.0,
            max_rss_kb: 1000.0,
            counts,
        }
    }

    #[test]
    fn metrics_keep_order_and_mark_unsupported_and_scaled() {
        let c = |raw, enabled, running| {
            Some(Count {
                raw,
                enabled,
                running,
            })
        };
        let runs = vec![
            run(10.0, vec![c(100, 10, 10), None, c(50, 10, 5)]),
            run(12.0, vec![c(120, 10, 10), None, c(60, 10, 5)]),
            run(11.0, vec![c(110, 10, 10), None, c(55, 10, 5)]),
        ];
        let names: Vec<String> = ["task-clock", "cycles", "page-faults"]
            .map(String::from)
            .to_vec();
        let m = metrics(&runs, &names);
        let got: Vec<&str> = m.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(got, metric_names(&names));
        let mut all = metric_names(&names);
        all.remove(4);
        assert_eq!(counted(&names, &runs[0]), all, "cycles was not counted");
        assert_eq!(
            got,
            [
                "wall-time",
                "user-time",
                "sys-time",
                "task-clock",
                "cycles",
                "page-faults",
                "max-rss"
            ]
        );
        assert_eq!(m[0].median, Some(11.0));
        assert_eq!(m[3].unit, Unit::Ns);
        assert_eq!(m[3].values, [100.0, 120.0, 110.0]);
        assert!(!m[4].supported && m[4].values.is_empty() && m[4].median.is_none());
        assert!(m[5].scaled);
        assert_eq!(
            m[5].values,
            [100.0, 120.0, 110.0],
            "scaled by enabled/running"
        );
        assert_eq!(m[6].unit, Unit::Kib);
    }

    /// Each metric's `ci95` is the bootstrap interval of its median at 95%: the same
    /// numbers as `stats::median_ci` at 0.95 (whose ranks are tested against a reference
    /// in `stats`), not those of another level.
    #[test]
    fn ci95_is_the_95_percent_interval() {
        let walls: Vec<f64> = (0..25u32)
            .map(|i| 1e6 + f64::from((i * 7919) % 101) * 1e3 + f64::from(i))
            .collect();
        let runs: Vec<RunResult> = walls.iter().map(|&w| run(w, vec![])).collect();
        let m = metrics(&runs, &[]);
        let got = m[0].ci95.expect("an interval");
        let at = |level| {
            let (lo, hi) = stats::median_ci(&walls, level);
            [lo, hi]
        };
        assert_eq!(got, at(0.95));
        assert_ne!(got, at(0.99));
        assert_ne!(got, at(0.90));
    }

    /// A count is an estimate when its event ran for less time than it was enabled:
    /// `running == enabled` is exact, one nanosecond less is multiplexed, and one run
    /// multiplexed among exact ones makes the metric's values estimates.
    #[test]
    fn multiplexed_means_running_less_than_enabled_in_any_run() {
        let c = |raw, enabled, running| {
            Some(Count {
                raw,
                enabled,
                running,
            })
        };
        let names = ["page-faults".to_string()];
        let scaled = |counts: Vec<Option<Count>>| -> bool {
            let runs: Vec<RunResult> = counts.into_iter().map(|c| run(1.0, vec![c])).collect();
            metrics(&runs, &names)[3].scaled
        };
        assert!(!scaled(vec![c(10, 1000, 1000), c(10, 1000, 1000)]));
        assert!(scaled(vec![c(10, 1000, 999), c(10, 1000, 1000)]));
        assert!(scaled(vec![
            c(10, 1000, 1000),
            c(10, 1000, 1000),
            c(10, 1000, 999)
        ]));
        // Never ran (<not counted>): no estimate to warn about.
        assert!(!scaled(vec![c(0, 1000, 0)]));
        // Enabled and running 0 (a software event read at once): exact.
        assert!(!scaled(vec![c(5, 0, 0)]));
        // The estimate is raw x enabled / running.
        let runs = vec![
            run(1.0, vec![c(999, 1000, 999)]),
            run(1.0, vec![c(10, 40, 10)]),
        ];
        assert_eq!(metrics(&runs, &names)[3].values, [1000.0, 40.0]);
    }
}
