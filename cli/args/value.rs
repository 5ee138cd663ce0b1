//! Parsers of flag values that need checking: durations ([`secs`], [`interval_ms`],
//! [`threshold_ns`], [`block_us`], [`timeout_ms`]) and `--symfs` ([`symfs_dir`]).

use std::path::PathBuf;
use std::time::Duration;

/// The longest duration any flag takes: a year (a longer one is a typo, and `inf`
/// or `1e20` seconds overflow a `Duration`).
const MAX_DURATION_SECS: f64 = 365.0 * 86_400.0;

/// Parses a duration: a number in `unit` (the flag's own unit, in seconds), or a number
/// with one of the units `ns`, `us` (`µs`), `ms`, `s`, `m`, `h`. It must be finite, not
/// negative (more than 0 when `positive`) and at most a year. Errors are one line, for
/// clap to print after the flag's name.
pub fn parse_duration(
    text: &str,
    unit: f64,
    unit_name: &str,
    positive: bool,
) -> Result<Duration, String> {
    const UNITS: [(&str, f64); 7] = [
        ("ns", 1e-9),
        ("us", 1e-6),
        ("µs", 1e-6),
        ("ms", 1e-3),
        ("s", 1.0),
        ("m", 60.0),
        ("h", 3600.0),
    ];
    let t = text.trim();
    let parsed = t.parse::<f64>().ok().map(|v| (v, unit)).or_else(|| {
        UNITS.iter().find_map(|&(name, mul)| {
            let num = t.strip_suffix(name)?.trim_end();
            // `1e5ms`, not `1ems` or `5 s s`.
            num.parse::<f64>().ok().map(|v| (v, mul))
        })
    });
    let Some((v, mul)) = parsed else {
        return Err(format!(
            "expected a duration: a number of {unit_name}, or a number with a unit (ns, us, ms, s, m, h), e.g. 500ms"
        ));
    };
    if !v.is_finite() {
        return Err("the duration must be a finite number".to_string());
    }
    if v < 0.0 || (positive && v == 0.0) {
        let need = if positive { "more than 0" } else { "0 or more" };
        return Err(format!("the duration must be {need}"));
    }
    let secs = v * mul;
    if secs > MAX_DURATION_SECS {
        return Err(format!(
            "the duration must be at most a year ({MAX_DURATION_SECS:.0} s)"
        ));
    }
    Duration::try_from_secs_f64(secs).map_err(|e| format!("bad duration: {e}"))
}

/// `--symfs DIR`: a directory (a path that is none names no file with symbols: a typo).
pub fn symfs_dir(text: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(text);
    match std::fs::metadata(&p) {
        Ok(m) if m.is_dir() => Ok(p),
        Ok(m) => Err(format!(
            "{text} is {}, not a directory",
            hwprof_pmu::file::kind_name(m.file_type())
        )),
        Err(e) => Err(format!("cannot use {text}: {e}")),
    }
}

/// `--duration`: seconds by default, more than 0.
pub fn secs(text: &str) -> Result<Duration, String> {
    parse_duration(text, 1.0, "seconds", true)
}

/// `stat -I`: whole milliseconds by default, at least 10 (perf's minimum).
pub fn interval_ms(text: &str) -> Result<u64, String> {
    let d = parse_duration(text, 1e-3, "milliseconds", false)?;
    let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    if ms < 10 {
        return Err("the interval must be at least 10 ms".to_string());
    }
    Ok(ms)
}

/// `stat --timeout` (perf's): milliseconds by default, at least 10 (perf's minimum).
pub fn timeout_ms(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text, 1e-3, "milliseconds", false)?;
    if d < Duration::from_millis(10) {
        return Err("the timeout must be at least 10 ms".to_string());
    }
    Ok(d)
}

/// `probe --threshold`: milliseconds by default, 0 or more; in nanoseconds.
pub fn threshold_ns(text: &str) -> Result<u64, String> {
    let d = parse_duration(text, 1e-3, "milliseconds", false)?;
    Ok(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// `offcpu --min-block`: microseconds by default, 0 or more; in microseconds.
pub fn block_us(text: &str) -> Result<u64, String> {
    let d = parse_duration(text, 1e-6, "microseconds", false)?;
    Ok(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(secs("2.5"), Ok(Duration::from_millis(2500)));
        assert_eq!(secs("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(secs("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(secs(" 1e1 "), Ok(Duration::from_secs(10)));
        assert_eq!(secs("1e3ms"), Ok(Duration::from_secs(1)));
        for bad in [
            "inf",
            "-inf",
            "NaN",
            "nan",
            "1e20",
            "18446744073709551616",
            "-1",
            "0",
            "",
            "5 parsecs",
            "1ems",
            "infs",
            "366d",
        ] {
            let e = secs(bad).expect_err(bad);
            assert!(!e.contains('\n'), "{e}");
        }
        assert_eq!(secs("31536000"), Ok(Duration::from_secs(31_536_000)));
        assert!(secs("31536001").is_err());
        assert_eq!(threshold_ns("10ms"), Ok(10_000_000));
        assert_eq!(threshold_ns("500us"), Ok(500_000));
        assert_eq!(threshold_ns("2s"), Ok(2_000_000_000));
        assert_eq!(threshold_ns("1.5ms"), Ok(1_500_000));
        assert_eq!(threshold_ns("7"), Ok(7_000_000));
        assert_eq!(threshold_ns("1500ns"), Ok(1500));
        assert_eq!(threshold_ns("0"), Ok(0));
        assert!(threshold_ns("10 parsecs").is_err());
        assert!(threshold_ns("1e300").is_err());
        assert_eq!(interval_ms("100"), Ok(100));
        assert_eq!(interval_ms("1s"), Ok(1000));
        assert!(interval_ms("9").is_err());
        assert!(interval_ms("18446744073709551615").is_err());
        assert_eq!(timeout_ms("1500"), Ok(Duration::from_millis(1500)));
        assert_eq!(timeout_ms("2s"), Ok(Duration::from_secs(2)));
        assert!(timeout_ms("9").is_err());
        assert_eq!(block_us("1"), Ok(1));
        assert_eq!(block_us("2ms"), Ok(2000));
        assert!(block_us("-1").is_err());
    }
}
