//! Symbolization in addresses/s: every distinct (module, offset) of a real recording of
//! a C workload (recorded in the setup with perf, else hwprof), resolved cold (a fresh
//! `Symbolizer` each iteration: blazesym parses ELF/DWARF, kallsyms is read) and cached
//! (a second pass over a warm `Symbolizer`: hash lookups only). Skips (prints why) when
//! no C compiler or recorder is present.
//!
//! `cargo bench --bench symbolize`

use std::path::{Path, PathBuf};
use std::process::Command;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_symbolize::{Options, ProfileBuilder, Symbolizer, kernel_matches};

const WORKLOAD: &str = r#"
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>
#include <fcntl.h>
static char buf[1 << 16];
__attribute__((noinline)) unsigned long f1(unsigned long x) { for (int i = 0; i < 1000; i++) x = x * 6364136223846793005UL + 1; return x; }
__attribute__((noinline)) unsigned long f2(unsigned long x) { char *p = malloc(4096 + (x & 4095)); memset(p, (int)x, 4096); x += p[x & 4095]; free(p); return x; }
__attribute__((noinline)) unsigned long f3(unsigned long x) { char s[64]; snprintf(s, sizeof s, "%lu", x); return x + strlen(s); }
__attribute__((noinline)) unsigned long f4(int fd, unsigned long x) { return x + (unsigned long)read(fd, buf, sizeof buf); }
int main(void) {
    int fd = open("/dev/zero", O_RDONLY);
    unsigned long x = 1;
    for (long i = 0; i < 400000; i++) { x = f1(x); x = f2(x); x = f3(x); if ((i & 7) == 0) x = f4(fd, x); }
    printf("%lu\n", x);
    return 0;
}
"#;

fn recording() -> Option<PathBuf> {
    let dir = std::env::temp_dir().join(format!("hwprof-bench-symbolize.{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let src = dir.join("wl.c");
    std::fs::write(&src, WORKLOAD).ok()?;
    let exe = dir.join("wl");
    let ok = Command::new("cc")
        .args(["-O2", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: no C compiler");
        return None;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut tools: Vec<PathBuf> = vec![PathBuf::from("perf")];
    tools.extend(
        ["release", "debug"]
            .iter()
            .map(|p| root.join("target").join(p).join("hwprof")),
    );
    let out = dir.join("wl.data");
    for tool in tools {
        let ok = Command::new(&tool)
            .args(["record", "-e", "cpu-clock", "-F", "4999", "-g", "-o"])
            .arg(&out)
            .arg("--")
            .arg(&exe)
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
    let opts = Options::default();
    let trusted = kernel_matches(pd.features());
    let fresh = || Symbolizer::new(opts.inline, trusted);
    let build = |s| {
        ProfileBuilder::new(&pd, &opts)
            .symbolizer(s)
            .build()
            .map(|b| (b.profile, b.symbolizer))
    };
    let Ok((p, warm)) = build(fresh()) else {
        eprintln!("SKIPPED: cannot symbolize {}", path.display());
        return;
    };
    let distinct = warm.lookups();
    eprintln!(
        "symbolize bench: {} samples, {distinct} distinct addresses, {} frames",
        p.samples.len(),
        p.frames.len()
    );
    let mut g = c.benchmark_group("symbolize");
    g.throughput(Throughput::Elements(distinct));
    g.sample_size(10);
    g.bench_function("cold", |b| {
        b.iter(|| build(fresh()).map(|(p, _)| p.frames.len()))
    });
    let mut warm = Some(warm);
    g.bench_function("cached", |b| {
        b.iter(|| {
            let s = warm.take().unwrap_or_else(fresh);
            let (p, s) = build(s).ok()?;
            warm = Some(s);
            Some(p.frames.len())
        })
    });
    g.finish();
    let _ = std::fs::remove_dir_all(path.parent().unwrap_or(&path));
}

criterion_group!(benches, bench);
criterion_main!(benches);
