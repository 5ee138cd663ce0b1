//! `stat -x,` output (CSV): its lines parsed, and hwprof's counts compared with perf's.

use super::*;

/// One line of `stat -x,` output.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Leading timestamp column (with -I).
    pub interval: Option<f64>,
    /// Leading `CPUn` column (with -A).
    pub cpu: Option<u32>,
    /// The counter value; `None` for `<not supported>` / `<not counted>`.
    pub value: Option<f64>,
    pub value_text: String,
    pub unit: String,
    pub event: String,
    pub run_ns: Option<u64>,
    pub pct_running: Option<f64>,
    pub metric_value: Option<f64>,
    pub metric_unit: String,
    /// The line as printed.
    pub line: String,
}

/// Parses one CSV line; `None` unless it has 7 fields plus optional
/// timestamp and `CPUn` prefixes and a non-empty event column.
pub fn parse_csv_line(line: &str) -> Option<Record> {
    let f: Vec<&str> = line.split(',').collect();
    if f.len() < 7 || f.len() > 9 {
        return None;
    }
    let extra = f.len() - 7;
    let mut interval = None;
    let mut cpu = None;
    for p in &f[..extra] {
        let p = p.trim();
        if let Some(n) = p.strip_prefix("CPU") {
            cpu = Some(n.parse().ok()?);
        } else {
            interval = Some(p.parse().ok()?);
        }
    }
    let f = &f[extra..];
    let event = f[2].trim().to_string();
    if event.is_empty() {
        return None;
    }
    let value_text = f[0].trim().to_string();
    let value = if value_text.starts_with('<') {
        None
    } else {
        Some(value_text.parse().ok()?)
    };
    Some(Record {
        interval,
        cpu,
        value,
        value_text,
        unit: f[1].trim().to_string(),
        event,
        run_ns: f[3].trim().parse().ok(),
        pct_running: f[4].trim().parse().ok(),
        metric_value: f[5].trim().parse().ok(),
        metric_unit: f[6].trim().to_string(),
        line: line.to_string(),
    })
}

/// All CSV records in `text` (other lines, e.g. a workload's own output, are
/// ignored).
pub fn parse_csv(text: &str) -> Vec<Record> {
    text.lines().filter_map(parse_csv_line).collect()
}

/// The value of the single (aggregate) record for `event`, or a panic that
/// shows the whole run.
pub fn value_of(run: &Run, event: &str) -> f64 {
    let recs: Vec<Record> = parse_csv(&run.stderr)
        .into_iter()
        .filter(|r| r.event == event)
        .collect();
    assert_eq!(
        recs.len(),
        1,
        "expected one CSV line for {event} from `{}`\n{}",
        run.cmdline,
        run.dump()
    );
    match recs[0].value {
        Some(v) => v,
        None => panic!(
            "{event} is {} in `{}`\n{}",
            recs[0].value_text,
            run.cmdline,
            run.dump()
        ),
    }
}

/// Runs `perf stat -x, -e EVENT -- CMD` and then `hwprof stat -x, -e EVENT --
/// CMD`; returns (perf's value, hwprof's value). Both must exit 0.
pub fn stat_both(event: &str, cmd: &[&str]) -> (f64, f64) {
    let p = stat_perf(event, event, cmd);
    let h = stat_hwprof(event, cmd);
    (p, h)
}

/// `hwprof stat -x, -e EVENT -- CMD`: the value of EVENT.
pub fn stat_hwprof(event: &str, cmd: &[&str]) -> f64 {
    let mut args = vec!["stat", "-x,", "-e", event, "--"];
    args.extend_from_slice(cmd);
    let run = hwprof(&args);
    run.assert_ok();
    value_of(&run, event)
}

/// `perf stat -x, -e EVENT -- CMD`: the value of the line named `name`.
pub fn stat_perf(event: &str, name: &str, cmd: &[&str]) -> f64 {
    let mut args = vec!["stat", "-x,", "-e", event, "--"];
    args.extend_from_slice(cmd);
    let run = perf(&args);
    run.assert_ok();
    value_of(&run, name)
}

/// The leading number of the human-table line for `event` (thousands
/// separators removed), if there is such a line.
pub fn human_value(text: &str, event: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let toks: Vec<&str> = l.split_whitespace().collect();
        let pos = toks.iter().position(|t| *t == event)?;
        (pos >= 1).then(|| toks[0].replace(',', ""))
    })
}

/// The `seconds user` and `seconds sys` of a human stat footer.
pub fn stat_user_sys(r: &Run) -> (f64, f64) {
    let secs = |what: &str| -> f64 {
        r.stderr
            .lines()
            .find(|l| l.trim_end().ends_with(what))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no `{what}` line\n{}", r.dump()))
    };
    (secs("seconds user"), secs("seconds sys"))
}

/// Asserts `|a - b| <= tol` with a message showing both figures.
pub fn assert_close(what: &str, perf: f64, hwprof: f64, tol: f64) {
    report!("{what}: perf={perf} hwprof={hwprof} (allowed difference {tol:.3})");
    assert!(
        (perf - hwprof).abs() <= tol,
        "{what}: hwprof={hwprof} differs from perf={perf} by more than {tol:.3}"
    );
}
