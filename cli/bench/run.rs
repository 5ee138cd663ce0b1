//! Running the command: one process per run, counted from its `exec` to its exit, with
//! wall time and the kernel's rusage (user, system, peak RSS) beside the counters.

use std::io::{IsTerminal, Write};

use hwprof_pmu::command::{self, CountedCommand, Finished};
use hwprof_pmu::counter::{CountOptions, prepare};
use hwprof_pmu::stop::Stop;
use hwprof_pmu::{Count, EventList, Status};

use super::stats;
use hwprof_analysis::bench::doc::{Metric, Unit};

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

/// Runs commands with the bench's counters attached.
pub struct Runner {
    list: EventList,
    show_output: bool,
    ignore_failure: bool,
    progress: bool,
}

impl Runner {
    /// Counters for `events` (inherited by the command's children, enabled at exec).
    pub fn new(mut events: EventList, show_output: bool, ignore_failure: bool) -> Runner {
        prepare(
            &mut events,
            CountOptions {
                inherit: true,
                enable_on_exec: true,
            },
        );
        Runner {
            list: events,
            show_output,
            ignore_failure,
            progress: std::io::stderr().is_terminal() && !show_output,
        }
    }

    /// The events' names, in order.
    pub fn event_names(&self) -> Vec<String> {
        self.list.events.iter().map(|e| e.name.clone()).collect()
    }

    /// Shows `text` as the progress line (a terminal only).
    pub fn progress(&self, text: &str) {
        if self.progress {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[K{text}");
            let _ = e.flush();
        }
    }

    /// Clears the progress line.
    pub fn done(&self) {
        self.progress("");
    }

    /// Runs `argv` once. `label` names the run in errors ("run 3 of 'CMD'"). A stop is
    /// passed on to the command, which this waits for (the caller drops that run).
    pub fn run(&self, argv: &[String], label: &str, stop: &Stop) -> anyhow::Result<RunResult> {
        let opts = command::Options {
            inherit: true,
            quiet: !self.show_output,
            cpus: None,
        };
        let cmd = CountedCommand::start(argv, &self.list, &opts)?;
        let Finished {
            exit,
            wall,
            readings,
            counter,
        } = cmd.run_to_end(stop)?;
        if exit.code != 0 && !self.ignore_failure && !stop.is_stopped() {
            let how = match exit.signal {
                Some(s) => format!("was killed by signal {s}"),
                None => format!("exited with code {}", exit.code),
            };
            let hint = if self.show_output {
                "; a benchmark must succeed (--ignore-failure measures it anyway)"
            } else {
                "; a benchmark must succeed (--show-output shows its output, --ignore-failure measures it anyway)"
            };
            anyhow::bail!("{label} of '{}' {how}{hint}", argv.join(" "));
        }
        let n = self.list.events.len();
        let totals = readings.total(n);
        let counts = totals
            .into_iter()
            .zip(counter.status())
            .map(|(c, s)| {
                if *s == Status::Counting {
                    Some(c.unwrap_or_default())
                } else {
                    None
                }
            })
            .collect();
        Ok(RunResult {
            wall_ns: wall.as_nanos() as f64,
            user_ns: exit.user_us as f64 * 1e3,
            sys_ns: exit.sys_us as f64 * 1e3,
            max_rss_kb: exit.max_rss_kb as f64,
            counts,
        })
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
        let unit = if crate::render::is_clock(name) {
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
}
