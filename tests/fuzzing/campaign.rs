//! A bounded, deterministic mutation campaign: N mutants of the seeds through
//! [`fuzz_one`], with figures for the closing note (cases, outcomes per path, records
//! decoded, the slowest case, the largest peak heap per input byte) and every failing
//! input saved for replay.

use std::collections::BTreeMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::mutate::{Seed, mutant, structured};
use super::{Mode, Rng, fuzz_one};

/// Figures of a campaign.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Inputs run.
    pub cases: u64,
    /// Per path: (inputs read without error, inputs with a data error).
    pub by_mode: BTreeMap<Mode, (u64, u64)>,
    /// Records decoded without error.
    pub records: u64,
    /// Bytes of input.
    pub bytes: u64,
    /// The slowest case and its size.
    pub slowest: (Duration, usize),
    /// The largest peak heap per input byte (inputs of 4 KiB or more) and that input's size.
    pub peak_per_byte: (f64, usize),
    /// The largest peak heap of any case.
    pub peak: u64,
    /// Failures: what went wrong and where the input was saved.
    pub failures: Vec<String>,
    /// Wall time of the campaign.
    pub elapsed: Duration,
}

impl Stats {
    fn merge(&mut self, o: Stats) {
        self.cases += o.cases;
        for (m, (a, b)) in o.by_mode {
            let e = self.by_mode.entry(m).or_default();
            e.0 += a;
            e.1 += b;
        }
        self.records += o.records;
        self.bytes += o.bytes;
        if o.slowest.0 > self.slowest.0 {
            self.slowest = o.slowest;
        }
        if o.peak_per_byte.0 > self.peak_per_byte.0 {
            self.peak_per_byte = o.peak_per_byte;
        }
        self.peak = self.peak.max(o.peak);
        self.failures.extend(o.failures);
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} cases ({} MB) in {:.1?}: ",
            self.cases,
            self.bytes / 1_000_000,
            self.elapsed
        )?;
        for (m, (ok, err)) in &self.by_mode {
            write!(f, "{m:?} {ok} ok / {err} data errors; ")?;
        }
        write!(
            f,
            "{} records decoded; slowest case {:.1?} ({} bytes); peak heap {} KiB, at most {:.1} bytes per input byte (inputs >= 4 KiB, {} bytes); {} failures",
            self.records,
            self.slowest.0,
            self.slowest.1,
            self.peak / 1024,
            self.peak_per_byte.0,
            self.peak_per_byte.1,
            self.failures.len()
        )
    }
}

/// Most failures kept per thread before it stops.
const MAX_FAILURES: usize = 8;

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".to_string())
}

/// FNV-1a of the input, for artifact names.
fn hash(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)
    })
}

fn one_thread(seeds: &[Seed], cases: u64, seed: u64, artifacts: &Path) -> Stats {
    let mut rng = Rng::new(seed);
    let mut st = Stats::default();
    for _ in 0..cases {
        let mut input = mutant(&mut rng, seeds);
        if rng.chance(1, 4) {
            // libFuzzer's structure-aware mutation, applied to a mutant.
            input = structured(&input, rng.next(), seeds);
        }
        st.cases += 1;
        st.bytes += input.len() as u64;
        match catch_unwind(AssertUnwindSafe(|| fuzz_one(&input))) {
            Ok(o) => {
                let e = st.by_mode.entry(o.mode).or_default();
                if o.error.is_some() {
                    e.1 += 1;
                } else {
                    e.0 += 1;
                }
                st.records += o.records;
                if o.elapsed > st.slowest.0 {
                    st.slowest = (o.elapsed, input.len());
                }
                st.peak = st.peak.max(o.peak_bytes);
                if input.len() >= 4096 {
                    let r = o.peak_bytes as f64 / input.len() as f64;
                    if r > st.peak_per_byte.0 {
                        st.peak_per_byte = (r, input.len());
                    }
                }
            }
            Err(p) => {
                let path = artifacts.join(format!("crash-{:016x}", hash(&input)));
                let saved = std::fs::create_dir_all(artifacts)
                    .and_then(|()| std::fs::write(&path, &input))
                    .map_or_else(
                        |e| format!("not saved: {e}"),
                        |()| path.display().to_string(),
                    );
                st.failures.push(format!(
                    "{} (input {} bytes: {saved})",
                    panic_text(&*p),
                    input.len()
                ));
                if st.failures.len() >= MAX_FAILURES {
                    break;
                }
            }
        }
    }
    st
}

/// Runs `cases` mutants of `seeds` on `threads` threads (thread `i` uses RNG seed
/// `seed + i`); failing inputs are saved under `artifacts`.
pub fn run(seeds: &[Seed], cases: u64, seed: u64, threads: usize, artifacts: &Path) -> Stats {
    let start = Instant::now();
    let threads = threads.max(1) as u64;
    let mut total = Stats::default();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let n = cases / threads + u64::from(i < cases % threads);
                s.spawn(move || one_thread(seeds, n, seed.wrapping_add(i), artifacts))
            })
            .collect();
        for h in handles {
            match h.join() {
                Ok(st) => total.merge(st),
                Err(p) => total
                    .failures
                    .push(format!("campaign thread: {}", panic_text(&*p))),
            }
        }
    });
    total.elapsed = start.elapsed();
    total
}

/// Every regular file in `dir` (sorted), as seeds; `.pb_text` descriptions are left out.
pub fn seeds_in(dir: &Path) -> Option<Vec<Seed>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_none_or(|e| e != "pb_text"))
        .collect();
    paths.sort();
    Some(
        paths
            .iter()
            .filter_map(|p| {
                let b = std::fs::read(p).ok()?;
                let name = p.file_name()?.to_string_lossy().into_owned();
                Some(Seed::new(&name, b))
            })
            .collect(),
    )
}

/// `HWPROF_FUZZ_CASES`, or `default`.
pub fn cases_from_env(default: u64) -> u64 {
    std::env::var("HWPROF_FUZZ_CASES")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}
