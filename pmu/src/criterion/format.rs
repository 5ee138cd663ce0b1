//! How criterion prints what a [`CounterMeasurement`](super::CounterMeasurement) measured.
//!
//! Counts print with SI prefixes and a short unit named after the event (`12.34 Kinstr`,
//! `1.502 Mcycles`, `310.0 misses`, other events `events`); per-element or per-byte
//! throughput prints as the cost of one element or byte (`3.012 instr/elem`,
//! `0.8125 cycles/B`), which is how counter results are usually compared. Time events
//! (`task-clock`, `cpu-clock`, and the wall-clock last resort) print like criterion's own
//! wall time (`ps` to `s`, throughput in `elem/s`, `KiB/s`...).

use ::criterion::Throughput;
use ::criterion::measurement::ValueFormatter;

/// Unit strings of one kind of count: plain, K, M, G; then per element, byte, bit.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Unit {
    scaled: [&'static str; 4],
    per: [&'static str; 3],
}

macro_rules! unit {
    ($s:literal) => {
        Unit {
            scaled: [$s, concat!("K", $s), concat!("M", $s), concat!("G", $s)],
            per: [concat!($s, "/elem"), concat!($s, "/B"), concat!($s, "/bit")],
        }
    };
}

pub(super) static INSTR: Unit = unit!("instr");
pub(super) static CYCLES: Unit = unit!("cycles");
pub(super) static MISSES: Unit = unit!("misses");
pub(super) static FAULTS: Unit = unit!("faults");
pub(super) static SWITCHES: Unit = unit!("switches");
pub(super) static EVENTS: Unit = unit!("events");

/// The formatter of one measurement.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Formatter {
    /// Nanoseconds.
    Time,
    /// Event counts.
    Count(&'static Unit),
}

impl Formatter {
    /// The formatter for an event by its display name (modifiers ignored).
    pub(super) fn for_event(name: &str) -> Formatter {
        let base = name.split(':').next().unwrap_or(name);
        match base {
            "task-clock" | "cpu-clock" | "wall-time" => Formatter::Time,
            "instructions" => Formatter::Count(&INSTR),
            "cycles" | "cpu-cycles" | "ref-cycles" | "bus-cycles" => Formatter::Count(&CYCLES),
            "page-faults" | "faults" | "minor-faults" | "major-faults" => Formatter::Count(&FAULTS),
            "context-switches" | "cs" => Formatter::Count(&SWITCHES),
            b if b.ends_with("-misses") || b.ends_with("-miss") => Formatter::Count(&MISSES),
            _ => Formatter::Count(&EVENTS),
        }
    }
}

/// `(divisor, index)` of the SI prefix for a typical value: 1, K, M, G.
fn si(typical: f64) -> (f64, usize) {
    if typical < 1e3 {
        (1.0, 0)
    } else if typical < 1e6 {
        (1e3, 1)
    } else if typical < 1e9 {
        (1e6, 2)
    } else {
        (1e9, 3)
    }
}

/// Turns nanoseconds into `amount` per second, scaled by `base` powers; `units` are the
/// names of 1, base, base², base³ per second.
fn per_second(
    amount: f64,
    typical: f64,
    values: &mut [f64],
    base: f64,
    units: [&'static str; 4],
) -> &'static str {
    let rate = |ns: f64| if ns > 0.0 { amount * 1e9 / ns } else { 0.0 };
    let t = rate(typical);
    let mut div = 1.0;
    let mut idx = 0;
    while idx < 3 && t >= div * base {
        div *= base;
        idx += 1;
    }
    for v in values {
        *v = rate(*v) / div;
    }
    units[idx]
}

impl ValueFormatter for Formatter {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = match self {
            Formatter::Time if typical < 1.0 => (1e3, "ps"),
            Formatter::Time if typical < 1e3 => (1.0, "ns"),
            Formatter::Time if typical < 1e6 => (1e-3, "µs"),
            Formatter::Time if typical < 1e9 => (1e-6, "ms"),
            Formatter::Time => (1e-9, "s"),
            Formatter::Count(u) => {
                let (div, i) = si(typical);
                (1.0 / div, u.scaled[i])
            }
        };
        for v in values {
            *v *= factor;
        }
        unit
    }

    fn scale_throughputs(
        &self,
        typical: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        let (amount, kind) = match *throughput {
            Throughput::Elements(n) | Throughput::ElementsAndBytes { elements: n, .. } => {
                (n as f64, 0)
            }
            Throughput::Bytes(n) | Throughput::BytesDecimal(n) => (n as f64, 1),
            Throughput::Bits(n) => (n as f64, 2),
        };
        match self {
            Formatter::Count(u) => {
                for v in values {
                    *v = if amount > 0.0 { *v / amount } else { 0.0 };
                }
                u.per[kind]
            }
            Formatter::Time => {
                let units = match *throughput {
                    Throughput::Bytes(_) => ["  B/s", "KiB/s", "MiB/s", "GiB/s"],
                    Throughput::BytesDecimal(_) => ["  B/s", "KB/s", "MB/s", "GB/s"],
                    Throughput::Bits(_) => ["  b/s", "Kb/s", "Mb/s", "Gb/s"],
                    _ => [" elem/s", "Kelem/s", "Melem/s", "Gelem/s"],
                };
                let base = if matches!(throughput, Throughput::Bytes(_)) {
                    1024.0
                } else {
                    1000.0
                };
                per_second(amount, typical, values, base, units)
            }
        }
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        match self {
            Formatter::Time => "ns",
            Formatter::Count(u) => u.scaled[0],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_use_si_prefixes_and_the_event_unit() {
        let f = Formatter::for_event("instructions:u");
        assert_eq!(f.format_value(12_345.0), "12.345 Kinstr");
        assert_eq!(f.format_value(999.0), "999.00 instr");
        assert_eq!(
            Formatter::for_event("cycles").format_value(2.5e9),
            "2.5000 Gcycles"
        );
        assert_eq!(
            Formatter::for_event("L1-dcache-load-misses").format_value(3.0e6),
            "3.0000 Mmisses"
        );
        assert_eq!(
            Formatter::for_event("r00c0").format_value(7.0),
            "7.0000 events"
        );
        let mut v = [1500.0, 2500.0];
        assert_eq!(f.scale_values(2000.0, &mut v), "Kinstr");
        assert_eq!(v, [1.5, 2.5]);
        let mut m = [1500.0];
        assert_eq!(f.scale_for_machines(&mut m), "instr");
        assert_eq!(m, [1500.0]);
    }

    #[test]
    fn count_throughput_is_cost_per_unit() {
        let f = Formatter::for_event("instructions");
        let mut v = [30_000.0];
        assert_eq!(
            f.scale_throughputs(30_000.0, &Throughput::Elements(10_000), &mut v),
            "instr/elem"
        );
        assert_eq!(v, [3.0]);
        let mut v = [8000.0];
        assert_eq!(
            Formatter::for_event("cycles").scale_throughputs(
                8000.0,
                &Throughput::Bytes(4096),
                &mut v
            ),
            "cycles/B"
        );
        assert_eq!(v, [8000.0 / 4096.0]);
    }

    #[test]
    fn time_formats_like_wall_time() {
        let f = Formatter::for_event("task-clock");
        assert_eq!(f, Formatter::Time);
        assert_eq!(f.format_value(1_500.0), "1.5000 µs");
        assert_eq!(f.format_value(2.0e9), "2.0000 s");
        assert_eq!(f.format_value(0.5), "500.00 ps");
        let mut m = [7.0];
        assert_eq!(f.scale_for_machines(&mut m), "ns");
        // 10_000 elements in 1 ms = 10 Melem/s.
        let mut v = [1e6];
        assert_eq!(
            f.scale_throughputs(1e6, &Throughput::Elements(10_000), &mut v),
            "Melem/s"
        );
        assert!((v[0] - 10.0).abs() < 1e-9);
        let mut v = [1e9];
        assert_eq!(
            f.scale_throughputs(1e9, &Throughput::Bytes(2048), &mut v),
            "KiB/s"
        );
        assert_eq!(v, [2.0]);
    }
}
