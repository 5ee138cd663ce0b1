//! One set of criterion baselines per measured event: [`CriterionExt::with_counter`].
//!
//! criterion keeps a benchmark's results under `<criterion home>/<group>/<function>/`
//! (`base/`, `new/`, `change/`; the home is `$CRITERION_HOME`, else
//! `$CARGO_TARGET_DIR/criterion`, else cargo's target directory `/criterion`) and compares
//! a run with `base/` by that path alone; the saved numbers carry no unit. A bench saved
//! counting `instructions` and rerun where they fall back to `task-clock` (or with
//! another `HWPROF_BENCH_EVENT`) compared nanoseconds with instructions and printed
//! "+154% Performance has regressed".
//!
//! A `Measurement` never sees the benchmark's id, but the runner's output directory is
//! the first part of that path. `with_counter` sets it to
//! `<criterion home>/counting-<event>/`, with the event actually measured (after any
//! fallback), so each event has its own baselines, named baselines (`--save-baseline`,
//! `--baseline`) and HTML report, and a run never compares with results of another
//! event. It says once on stderr which event is measured and where its baselines are.
//! A measurement put in place with plain `with_measurement` says once that its
//! baselines are not kept apart.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use ::criterion::Criterion;
use ::criterion::measurement::Measurement;

use super::CounterMeasurement;

/// `with_counter` on criterion's [`Criterion`] builder.
pub trait CriterionExt {
    /// Measures with `m` and keeps this runner's results apart per measured event, under
    /// `<criterion home>/counting-<event>/` (see [`crate::criterion`]): a baseline
    /// saved with one event is never compared with a run of another. Prints one line
    /// on stderr naming the event measured (after any fallback) and that directory.
    ///
    /// ```no_run
    /// use criterion::{Criterion, criterion_group, criterion_main};
    /// use hwprof_pmu::criterion::{CounterMeasurement, CriterionExt};
    ///
    /// fn sum(c: &mut Criterion<CounterMeasurement>) {
    ///     let v: Vec<u64> = (0..10_000).collect();
    ///     c.bench_function("sum", |b| b.iter(|| v.iter().sum::<u64>()));
    /// }
    ///
    /// criterion_group! {
    ///     name = benches;
    ///     config = Criterion::default().with_counter(CounterMeasurement::instructions());
    ///     targets = sum
    /// }
    /// criterion_main!(benches);
    /// ```
    fn with_counter(self, m: CounterMeasurement) -> Criterion<CounterMeasurement>;
}

impl<M: Measurement> CriterionExt for Criterion<M> {
    fn with_counter(self, m: CounterMeasurement) -> Criterion<CounterMeasurement> {
        with_counter_in(self, m, &criterion_home())
    }
}

/// [`CriterionExt::with_counter`] with the criterion home given.
pub(super) fn with_counter_in<M: Measurement>(
    c: Criterion<M>,
    mut m: CounterMeasurement,
    home: &Path,
) -> Criterion<CounterMeasurement> {
    let dir = home.join(event_dir(m.event()));
    m.separated = true;
    let instead = if m.fell_back() {
        format!(" (instead of '{}')", m.requested())
    } else {
        String::new()
    };
    notice_once(&format!(
        "criterion measures {}{instead}; baselines of this event in {}",
        m.event(),
        dir.display()
    ));
    // `output_directory` is public (criterion marks it hidden, for its own tests) and
    // is the only way to make the measured event part of where results are kept.
    c.output_directory(&dir).with_measurement(m)
}

/// `counting-EVENT`, with `/`, `%`, whitespace and control characters escaped as `%XX`
/// (`msr/tsc/` -> `counting-msr%2Ftsc%2F`): one directory name per event name.
pub(super) fn event_dir(event: &str) -> String {
    let mut s = String::from("counting-");
    for ch in event.chars() {
        if ch == '/' || ch == '%' || ch.is_whitespace() || ch.is_control() {
            let mut buf = [0u8; 4];
            for b in ch.encode_utf8(&mut buf).bytes() {
                s.push_str(&format!("%{b:02X}"));
            }
        } else {
            s.push(ch);
        }
    }
    s
}

/// criterion's home, found as criterion finds it: `$CRITERION_HOME`, else
/// `$CARGO_TARGET_DIR/criterion`, else the target directory `cargo metadata` reports
/// (`$CARGO` is set when cargo runs the bench), else `target/criterion`.
pub fn criterion_home() -> PathBuf {
    if let Some(h) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(h);
    }
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(t).join("criterion");
    }
    let from_metadata = std::env::var_os("CARGO").and_then(|cargo| {
        let out = std::process::Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--no-deps"])
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        Some(PathBuf::from(v.get("target_directory")?.as_str()?))
    });
    match from_metadata {
        Some(t) => t.join("criterion"),
        None => PathBuf::from("target/criterion"),
    }
}

static NOTICE: AtomicBool = AtomicBool::new(false);
static PLAIN_NOTICE: AtomicBool = AtomicBool::new(false);

fn notice_once(msg: &str) {
    if !NOTICE.swap(true, Ordering::Relaxed) {
        eprintln!("hwprof: {msg}");
    }
}

/// Said once by a measurement not set up through `with_counter`, on its first `start`.
pub(super) fn plain_notice(event: &str) {
    if !PLAIN_NOTICE.swap(true, Ordering::Relaxed) {
        eprintln!(
            "hwprof: criterion measures {event}; its baselines are not kept apart from those of other events (a rerun measuring another event compares the two as one unit): build the runner with `Criterion::default().with_counter(m)` (hwprof_pmu::criterion::CriterionExt)"
        );
    }
}
