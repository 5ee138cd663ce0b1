//! Derived metrics, as pure functions of counts: CPUs utilized, GHz, IPC, miss ratios,
//! rates per second of task time. They follow the "shadow" metrics of `perf stat`.

/// The counts metrics are derived from, by event base name (modifiers stripped).
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// Wall-clock time of the measurement, ns.
    pub wall_ns: f64,
    values: Vec<(String, f64)>,
}

/// A derived value with its unit, e.g. `(1.23, "insn per cycle")`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Metric {
    /// The value.
    pub value: f64,
    /// Its unit or description.
    pub unit: &'static str,
}

/// Whether `event` is a clock (`task-clock`, `cpu-clock`, with any modifiers): its
/// count is nanoseconds.
pub fn is_clock(event: &str) -> bool {
    matches!(base_name(event), "task-clock" | "cpu-clock")
}

/// Strips modifiers and hybrid PMU wrappers: `cycles:u` and `cpu_core/cycles/` -> `cycles`.
pub fn base_name(name: &str) -> &str {
    let n = name.split(':').next().unwrap_or(name);
    match n
        .strip_prefix("cpu_core/")
        .or_else(|| n.strip_prefix("cpu_atom/"))
    {
        Some(inner) => inner.trim_end_matches('/'),
        None => n,
    }
}

fn canonical(name: &str) -> &str {
    match name {
        "cpu-cycles" => "cycles",
        "branch-instructions" => "branches",
        "cs" => "context-switches",
        "migrations" => "cpu-migrations",
        "faults" => "page-faults",
        other => other,
    }
}

impl Context {
    /// A context for a measurement of `wall_ns`.
    pub fn new(wall_ns: f64) -> Context {
        Context {
            wall_ns,
            values: Vec::new(),
        }
    }

    /// Records the (scaled) value of an event; repeated names add up.
    pub fn add(&mut self, name: &str, value: f64) {
        let key = canonical(base_name(name)).to_string();
        match self.values.iter_mut().find(|(n, _)| *n == key) {
            Some((_, v)) => *v += value,
            None => self.values.push((key, value)),
        }
    }

    fn get(&self, name: &str) -> Option<f64> {
        self.values
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .filter(|v| *v > 0.0)
    }

    /// The metric shown beside `name` with `value`, if it has one.
    pub fn metric(&self, name: &str, value: f64) -> Option<Metric> {
        let base = canonical(base_name(name));
        let ratio = |den: &str, unit: &'static str| {
            self.get(den).map(|d| Metric {
                value: value * 100.0 / d,
                unit,
            })
        };
        match base {
            "task-clock" | "cpu-clock" => (self.wall_ns > 0.0).then(|| Metric {
                value: value / self.wall_ns,
                unit: "CPUs utilized",
            }),
            "cycles" => self
                .get("task-clock")
                .or(self.get("cpu-clock"))
                .map(|t| Metric {
                    value: value / t,
                    unit: "GHz",
                }),
            "instructions" => self.get("cycles").map(|c| Metric {
                value: value / c,
                unit: "insn per cycle",
            }),
            "branch-misses" => ratio("branches", "of all branches"),
            "cache-misses" => ratio("cache-references", "of all cache refs"),
            "L1-dcache-load-misses" => ratio("L1-dcache-loads", "of all L1-dcache accesses"),
            "L1-icache-load-misses" => ratio("L1-icache-loads", "of all L1-icache accesses"),
            "LLC-load-misses" => ratio("LLC-loads", "of all LL-cache accesses"),
            "dTLB-load-misses" => ratio("dTLB-loads", "of all dTLB cache accesses"),
            "iTLB-load-misses" => ratio("iTLB-loads", "of all iTLB cache accesses"),
            "stalled-cycles-frontend" => ratio("cycles", "frontend cycles idle"),
            "stalled-cycles-backend" => ratio("cycles", "backend cycles idle"),
            _ => self.rate(value),
        }
    }

    /// Events per second of task time, scaled to K/M/G like perf prints it.
    fn rate(&self, value: f64) -> Option<Metric> {
        let t = self.get("task-clock").or(self.get("cpu-clock"))?;
        let per_sec = value * 1e9 / t;
        Some(if per_sec >= 1e9 {
            Metric {
                value: per_sec / 1e9,
                unit: "G/sec",
            }
        } else if per_sec >= 1e6 {
            Metric {
                value: per_sec / 1e6,
                unit: "M/sec",
            }
        } else if per_sec >= 1e3 {
            Metric {
                value: per_sec / 1e3,
                unit: "K/sec",
            }
        } else {
            Metric {
                value: per_sec,
                unit: "/sec",
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_stat_shadow_metrics() {
        let mut c = Context::new(2_000_000.0);
        c.add("task-clock", 1_000_000.0);
        c.add("cycles:u", 3_000_000.0);
        c.add("instructions:u", 6_000_000.0);
        c.add("branches", 1000.0);
        assert_eq!(
            c.metric("task-clock", 1_000_000.0),
            Some(Metric {
                value: 0.5,
                unit: "CPUs utilized"
            })
        );
        assert_eq!(
            c.metric("cycles", 3_000_000.0),
            Some(Metric {
                value: 3.0,
                unit: "GHz"
            })
        );
        assert_eq!(
            c.metric("instructions", 6_000_000.0),
            Some(Metric {
                value: 2.0,
                unit: "insn per cycle"
            })
        );
        assert_eq!(
            c.metric("branch-misses", 10.0),
            Some(Metric {
                value: 1.0,
                unit: "of all branches"
            })
        );
        // 50 faults in 1 ms of task time = 50 K/sec
        assert_eq!(
            c.metric("page-faults", 50.0),
            Some(Metric {
                value: 50.0,
                unit: "K/sec"
            })
        );
        assert_eq!(
            c.metric("context-switches", 0.5),
            Some(Metric {
                value: 500.0,
                unit: "/sec"
            })
        );
        assert_eq!(
            c.metric("cache-misses", 5.0),
            None,
            "no cache-references counted"
        );
    }

    #[test]
    fn base_names() {
        assert_eq!(base_name("cpu_core/cycles/:u"), "cycles");
        assert_eq!(base_name("cycles:ppp"), "cycles");
        assert_eq!(base_name("task-clock"), "task-clock");
    }
}
