//! Frame-pointer evidence: the tables of C built with and without frame pointers, the
//! thresholds on samples, and the watch over synthetic records.

use super::*;
use hwprof_pmu::attr::Attr;
use hwprof_sampler::record::kind;

/// A chain of calls whose functions set up frames (locals, calls), in C.
const CHAIN_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) long leaf(long *v, int n) { long s = 0; for (int i = 0; i < n; i++) s += v[i] * i; return s; }
__attribute__((noinline)) long mid(int n) { long v[64]; for (int i = 0; i < 64; i++) v[i] = rand(); return leaf(v, n) + mid2(n); }
__attribute__((noinline)) long mid2(int n) { long w[32]; for (int i = 0; i < 32; i++) w[i] = i * n; return leaf(w, 32); }
__attribute__((noinline)) long top(int n) { long t = 0; for (int i = 0; i < n; i++) t += mid(i % 64); printf("%ld\n", t); return t; }
int main(int argc, char **argv) { return (int)top(argc > 1 ? atoi(argv[1]) : 100) & 1; }
"#;

/// `CHAIN_C` built at -O2 with `fp_flag`, in `dir`.
fn build(dir: &Path, fp_flag: &str) -> Option<std::path::PathBuf> {
    let src = dir.join("chain.c");
    std::fs::write(
        &src,
        CHAIN_C.replace("long mid(int n)", "long mid2(int n);\nlong mid(int n)"),
    )
    .unwrap();
    let out = dir.join(fp_flag.trim_start_matches('-'));
    hwprof_testkit::compile_c(&src, &out, &["-O2", fp_flag]).then_some(out)
}

/// `CHAIN_C` built without frame pointers and with them, in `dir`.
fn builds(dir: &Path) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    Some((
        build(dir, "-fomit-frame-pointer")?,
        build(dir, "-fno-omit-frame-pointer")?,
    ))
}

#[test]
fn tables_tell_frame_pointers_kept_from_omitted() {
    let dir = tempfile::tempdir().unwrap();
    let Some((omit, keep)) = builds(dir.path()) else {
        return;
    };
    let arch = Arch::host().unwrap();
    let use_of = |p: &Path| frame_use(&FileData::load(Some(p), None).unwrap(), arch).unwrap();
    let (o, k) = (use_of(&omit), use_of(&keep));
    assert_eq!(o.verdict(), FramePointers::Omitted, "{o:?}");
    assert_eq!(k.verdict(), FramePointers::Kept, "{k:?}");
    assert!(k.with_fp >= 4, "{k:?}");
    assert_eq!(file_frame_pointers(&omit), FramePointers::Omitted);
    assert_eq!(file_frame_pointers(&keep), FramePointers::Kept);
    assert_eq!(
        file_frame_pointers(Path::new("/nonexistent/prog")),
        FramePointers::Unknown
    );
}

#[test]
fn verdicts_need_enough_framed_functions() {
    let v = |framed, with_fp| FrameUse { framed, with_fp }.verdict();
    assert_eq!(v(3, 0), FramePointers::Unknown);
    assert_eq!(v(3, 3), FramePointers::Unknown);
    assert_eq!(v(100, 50), FramePointers::Kept);
    assert_eq!(v(100, 19), FramePointers::Omitted);
    assert_eq!(v(100, 20), FramePointers::Unknown);
}

/// Suspects end at least [`MIN_SHARE`] of the stacks short, and only those whose
/// tables show omitted frame pointers are named, the one that ends most first.
#[test]
fn only_suspects_with_omitted_frame_pointers_are_named() {
    let mut e: Evidence<&str> = Evidence::default();
    e.samples(1000);
    e.short("/usr/bin/gzip", 900);
    e.short("/lib/libz.so.1", 60);
    e.short("/lib/libc.so.6", 40); // under 5%
    e.short("/opt/fp", 500); // frame pointers kept: short for another reason
    let verdict = |k: &&str| {
        Some((
            k.to_string(),
            if k.contains("fp") {
                FramePointers::Kept
            } else {
                FramePointers::Omitted
            },
        ))
    };
    let c = e.cut(verdict).unwrap();
    assert_eq!(c.modules, ["/usr/bin/gzip", "/lib/libz.so.1"]);
    assert_eq!((c.short, c.samples), (960, 1000));
    // Unknown tables: not named.
    assert!(
        e.cut(|k| Some((k.to_string(), FramePointers::Unknown)))
            .is_none()
    );
    // A handful of samples is no evidence.
    let mut few: Evidence<&str> = Evidence::default();
    few.samples(4);
    few.short("/usr/bin/gzip", 4);
    assert!(few.cut(verdict).is_none());
}

#[test]
fn user_parts_of_callchains() {
    let k = context::KERNEL;
    let u = context::USER;
    assert_eq!(user_part([u, 0x10, 0x20].into_iter()), (2, Some(0x10)));
    assert_eq!(
        user_part([k, 0xffff_ffff_8100_0001, 0xffff_ffff_8100_0002, u, 0x10].into_iter()),
        (1, Some(0x10))
    );
    assert_eq!(user_part([k, 0xffff_ffff_8100_0001].into_iter()), (0, None));
    assert_eq!(user_part([0x10, 0x20].into_iter()), (0, None));
}

/// Bytes of a record: header then body words.
fn record(type_: u32, body: &[u8]) -> Vec<u8> {
    let size = (8 + body.len()) as u16;
    let mut r = Vec::new();
    r.extend_from_slice(&type_.to_le_bytes());
    r.extend_from_slice(&0u16.to_le_bytes());
    r.extend_from_slice(&size.to_le_bytes());
    r.extend_from_slice(body);
    r
}

fn mmap(pid: u32, addr: u64, len: u64, path: &str) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&pid.to_le_bytes());
    b.extend_from_slice(&pid.to_le_bytes());
    for v in [addr, len, 0] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    let mut name = path.as_bytes().to_vec();
    name.resize((name.len() / 8 + 1) * 8, 0);
    b.extend_from_slice(&name);
    record(kind::MMAP, &b)
}

fn sample(pid: u32, chain: &[u64]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&chain.get(1).copied().unwrap_or(0).to_le_bytes());
    b.extend_from_slice(&pid.to_le_bytes());
    b.extend_from_slice(&pid.to_le_bytes());
    b.extend_from_slice(&(chain.len() as u64).to_le_bytes());
    for v in chain {
        b.extend_from_slice(&v.to_le_bytes());
    }
    record(kind::SAMPLE, &b)
}

/// While recording: short stacks in a module built without frame pointers name it; the
/// same stacks in one built with them, or long stacks, name nothing.
#[test]
fn the_watch_names_the_module_that_cut_the_stacks() {
    let dir = tempfile::tempdir().unwrap();
    let Some((omit, keep)) = builds(dir.path()) else {
        return;
    };
    let arch = Arch::host().unwrap();
    let attr = Attr {
        sample_type: st::IP | st::TID | st::CALLCHAIN,
        ..Attr::default()
    };
    assert!(has_fp_stacks(&attr));
    let run = |exe: &Path, chains: &[&[u64]]| {
        let mut w = FpWatch::new(Decoder::new(&[(attr.clone(), vec![])]));
        let mut out = Vec::new();
        let mut feed = |r: Vec<u8>| assert_eq!(w.record(&r, &mut out), Rewritten::AsIs);
        feed(mmap(7, 0x40_0000, 0x10_0000, exe.to_str().unwrap()));
        for _ in 0..50 {
            for c in chains {
                feed(sample(7, c));
            }
        }
        w.cut(&Locator::from_env(None), arch)
    };
    let u = context::USER;
    let short: &[&[u64]] = &[&[u, 0x40_1000], &[u, 0x40_1010, 0x7f00_0000_0000]];
    let c = run(&omit, short).expect("the module without frame pointers is named");
    assert_eq!(c.modules, [omit.to_str().unwrap()]);
    assert_eq!((c.short, c.samples), (100, 100));
    assert!(run(&keep, short).is_none(), "frame pointers kept");
    let long: &[&[u64]] = &[&[u, 0x40_1000, 0x40_2000, 0x40_3000, 0x40_4000]];
    assert!(run(&omit, long).is_none(), "whole stacks");
    // DWARF samples (a stack copy) and LBR call stacks are not frame-pointer stacks.
    let dwarf = Attr {
        sample_type: st::IP | st::TID | st::CALLCHAIN | st::REGS_USER | st::STACK_USER,
        ..Attr::default()
    };
    assert!(!has_fp_stacks(&dwarf));
}
