//! DWARF unwinding cost per sample: a C workload built at -O2 without frame pointers
//! (`tests/workloads/dwarf_chain.c`, main -> outer -> middle -> leaf under libc's
//! start-up frames) is recorded in the setup with `perf record --call-graph dwarf`
//! (else hwprof with `--keep-raw-stacks`); the bench then unwinds every sample's
//! registers and 8 KiB stack copy:
//!
//! - `unwind/stream`: [`StreamUnwinder`] over every record (what `hwprof record` does
//!   while it reads the rings, and `hwprof script`): ns per sample.
//! - `unwind/profile`: the whole `Profile::build` of the file (replay, unwinding,
//!   symbolization, cached after the first pass), for scale.
//!
//! Skips (prints why) when no C compiler or recorder is present.
//!
//! `cargo bench --bench unwind`

use std::path::{Path, PathBuf};
use std::process::Command;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::record::Body;
use hwprof_symbolize::unwind::{Arch, StreamUnwinder};
use hwprof_symbolize::{Options, Profile};

fn recording() -> Option<PathBuf> {
    let dir = std::env::temp_dir().join(format!("hwprof-bench-unwind.{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = dir.join("dwarf_chain");
    let ok = Command::new("cc")
        .args(["-O2", "-g", "-fomit-frame-pointer", "-o"])
        .arg(&exe)
        .arg(root.join("tests/workloads/dwarf_chain.c"))
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: no C compiler");
        return None;
    }
    let out = dir.join("dwarf.data");
    let perf = [
        "record",
        "-q",
        "-N",
        "--call-graph",
        "dwarf",
        "-F",
        "4999",
        "-o",
    ];
    let ours = [
        "record",
        "--call-graph",
        "dwarf",
        "--keep-raw-stacks",
        "-F",
        "4999",
        "-o",
    ];
    let mut tries: Vec<(PathBuf, &[&str])> = vec![(PathBuf::from("perf"), &perf)];
    for p in ["release", "debug"] {
        tries.push((root.join("target").join(p).join("hwprof"), &ours));
    }
    for (tool, args) in tries {
        let ok = Command::new(&tool)
            .args(args)
            .arg(&out)
            .arg("--")
            .arg(&exe)
            .arg("10")
            .output()
            .is_ok_and(|o| o.status.success());
        if ok && out.is_file() {
            return Some(out);
        }
    }
    eprintln!("SKIPPED: neither perf nor hwprof could record");
    None
}

fn bench(c: &mut Criterion) {
    let Some(path) = recording() else { return };
    let Ok(pd) = PerfData::open(&path) else {
        eprintln!("SKIPPED: cannot read {}", path.display());
        return;
    };
    let Some(arch) = Arch::host() else {
        eprintln!("SKIPPED: no unwinding on {}", std::env::consts::ARCH);
        return;
    };
    let unwind_all = || {
        let mut u = StreamUnwinder::new(arch, false, hwprof_symbolize::Locator::from_env(None));
        let mut frames = 0usize;
        let _ = pd.for_each_record(|_, rec| -> hwprof_sampler::Result<()> {
            if let Some((f, _)) = u.record(rec) {
                frames += f.len();
            }
            Ok(())
        });
        (u.stats(), frames)
    };
    let (stats, frames) = unwind_all();
    let mut samples = 0u64;
    let _ = pd.for_each_record(|_, rec| -> hwprof_sampler::Result<()> {
        if matches!(rec.body, Body::Sample(_)) {
            samples += 1;
        }
        Ok(())
    });
    eprintln!(
        "unwind bench: {samples} samples, {} unwound ({} truncated), {:.1} frames per stack",
        stats.unwound,
        stats.truncated,
        frames as f64 / stats.unwound.max(1) as f64
    );
    let mut g = c.benchmark_group("unwind");
    g.throughput(Throughput::Elements(stats.unwound));
    g.sample_size(10);
    g.bench_function("stream", |b| b.iter(unwind_all));
    let opts = Options {
        merge: true,
        ..Options::default()
    };
    g.bench_function("profile", |b| {
        b.iter(|| Profile::build(&pd, &opts).map(|p| p.samples.len()))
    });
    g.finish();
    let _ = std::fs::remove_dir_all(path.parent().unwrap_or(&path));
}

criterion_group!(benches, bench);
criterion_main!(benches);
