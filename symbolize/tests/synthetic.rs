//! `Profile::build` on hand-built perf.data files: JIT frames from `/tmp/perf-PID.map`,
//! exec replacing a process's maps, FORK copying them, a build id that does not match
//! the local file (never this machine's symbols), periods, lost counts, comms, and each
//! distinct address resolved once.

mod common;

use std::path::{Path, PathBuf};

use common::report;
use hwprof_pmu::attr::{Attr, sample};
use hwprof_sampler::perfdata::features::{BuildIdEntry, Features};
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::perfdata::writer::{EventEntry, Writer};
use hwprof_sampler::record::{Record, Sample as RecSample};
use hwprof_symbolize::{
    FrameKind, Options, Profile, ProfileBuilder, Symbolizer, Weighed, kernel_matches,
};
use object::{Object, ObjectSegment, ObjectSymbol, SegmentFlags};

const CTX_USER: u64 = (-512i64) as u64;
const CTX_KERNEL: u64 = (-128i64) as u64;

fn record(kind: u32, misc: u16, mut body: Vec<u8>) -> Vec<u8> {
    body.resize(body.len().next_multiple_of(8), 0);
    let mut r = kind.to_le_bytes().to_vec();
    r.extend_from_slice(&misc.to_le_bytes());
    r.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
    r.extend_from_slice(&body);
    r
}

fn cstr(s: &str) -> Vec<u8> {
    let mut b = s.as_bytes().to_vec();
    b.push(0);
    b.resize(b.len().next_multiple_of(8), 0);
    b
}

fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn u64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// sample_id trailer for TID|TIME.
fn sid(pid: u32, time: u64) -> Vec<u8> {
    let mut b = u32s(&[pid, pid]);
    b.extend(u64s(&[time]));
    b
}

fn mmap2(pid: u32, addr: u64, len: u64, pgoff: u64, name: &str, time: u64) -> Vec<u8> {
    let mut b = u32s(&[pid, pid]);
    b.extend(u64s(&[addr, len, pgoff]));
    b.extend(u32s(&[8, 1]));
    b.extend(u64s(&[12345, 0]));
    b.extend(u32s(&[5, 2])); // PROT_READ|PROT_EXEC, MAP_PRIVATE
    b.extend(cstr(name));
    b.extend(sid(pid, time));
    record(10, 2, b)
}

fn comm(pid: u32, name: &str, exec: bool, time: u64) -> Vec<u8> {
    let mut b = u32s(&[pid, pid]);
    b.extend(cstr(name));
    b.extend(sid(pid, time));
    record(3, if exec { 1 << 13 } else { 0 }, b)
}

fn fork(pid: u32, ppid: u32, time: u64) -> Vec<u8> {
    let mut b = u32s(&[pid, ppid, pid, ppid]);
    b.extend(u64s(&[time]));
    b.extend(sid(pid, time));
    record(7, 0, b)
}

fn lost(n: u64, time: u64) -> Vec<u8> {
    let mut b = u64s(&[0, n]);
    b.extend(sid(0, time));
    record(2, 0, b)
}

/// `PERF_RECORD_LOST_SAMPLES` of `n`.
fn lost_samples(n: u64, time: u64) -> Vec<u8> {
    let mut b = u64s(&[n]);
    b.extend(sid(0, time));
    record(13, 0, b)
}

/// A sample: IP|TID|TIME|PERIOD|CALLCHAIN.
fn sample_rec(pid: u32, time: u64, period: u64, chain: &[u64]) -> Vec<u8> {
    let ip = chain
        .iter()
        .copied()
        .find(|&a| a < (-4095i64) as u64)
        .unwrap_or(0);
    let mut b = u64s(&[ip]);
    b.extend(u32s(&[pid, pid]));
    b.extend(u64s(&[time, period, chain.len() as u64]));
    b.extend(u64s(chain));
    record(9, 2, b)
}

fn attr() -> Attr {
    let mut a = Attr::new(1, 0);
    a.sample_period = 1000;
    a.freq = false;
    a.sample_type = sample::IP | sample::TID | sample::TIME | sample::PERIOD | sample::CALLCHAIN;
    a.sample_id_all = true;
    a.mmap = true;
    a.mmap2 = true;
    a.comm = true;
    a.task = true;
    a
}

fn write(path: &Path, records: &[Vec<u8>], features: &Features) -> PerfData {
    let mut w = Writer::create(
        path,
        vec![EventEntry {
            attr: attr(),
            name: "cpu-clock".into(),
            ids: vec![],
        }],
    )
    .unwrap();
    for r in records {
        w.write_record(r).unwrap();
    }
    w.finish(features).unwrap();
    PerfData::open(path).unwrap()
}

/// A small C binary and where its functions are (file offsets of `leaf` and `main`).
struct Bin {
    path: PathBuf,
    map: (u64, u64, u64),
    leaf: u64,
    main: u64,
}

fn bin(dir: &Path) -> Option<Bin> {
    let src = "__attribute__((noinline)) long leaf(long n) { long s = 0; \
               for (long i = 0; i < n; i++) s += i * i; return s; }\n\
               int main(int argc, char **argv) { (void)argv; return (int)leaf(argc); }\n";
    let path = common::compile(dir, "synth", src, &["-O1", "-g", "-no-pie"])?;
    let data = std::fs::read(&path).unwrap();
    let obj = object::File::parse(&*data).unwrap();
    let sym = |n: &str| {
        obj.symbols()
            .find(|s| s.name() == Ok(n))
            .map(|s| s.address())
            .unwrap()
    };
    let text = obj
        .segments()
        .find(|s| matches!(s.flags(), SegmentFlags::Elf { p_flags, .. } if p_flags.0 & 1 != 0))
        .unwrap();
    let start = text.address() & !0xfff;
    let end = (text.address() + text.size()).next_multiple_of(0x1000);
    let pgoff = text.file_range().0 & !0xfff;
    Some(Bin {
        map: (start, end - start, pgoff),
        leaf: sym("leaf"),
        main: sym("main"),
        path,
    })
}

#[test]
fn jit_exec_fork_lost_and_resolved_once() {
    let dir = common::scratch("synthetic");
    let Some(b) = bin(&dir) else { return };
    let path = b.path.display().to_string();
    // A pid no process here has; its perf map is ours.
    let jit_pid = 3_999_001u32;
    let child = jit_pid + 1;
    let map_path = format!("/tmp/perf-{jit_pid}.map");
    std::fs::write(
        &map_path,
        "7f0000001000 100 js:hotLoop\n7f0000001100 80 js:caller\n",
    )
    .unwrap();
    let (start, len, pgoff) = b.map;
    let recs = vec![
        comm(jit_pid, "node", false, 1),
        mmap2(jit_pid, start, len, pgoff, &path, 2),
        mmap2(jit_pid, 0x7f00_0000_0000, 0x10_0000, 0, "//anon", 3),
        // JIT leaf, JIT caller, then the binary's main.
        sample_rec(
            jit_pid,
            10,
            7,
            &[CTX_USER, 0x7f00_0000_1010, 0x7f00_0000_1120, b.main + 4],
        ),
        sample_rec(
            jit_pid,
            11,
            7,
            &[CTX_USER, 0x7f00_0000_1010, 0x7f00_0000_1120, b.main + 4],
        ),
        // A kernel address with a marker: never named (the file has no kernel build id
        // and no OSRELEASE), still a kernel frame.
        sample_rec(
            jit_pid,
            12,
            0,
            &[CTX_KERNEL, 0xffff_ffff_8100_0010, CTX_USER, b.leaf + 1],
        ),
        lost(5, 13),
        // FORK copies the maps; exec replaces them.
        fork(child, jit_pid, 14),
        sample_rec(child, 15, 3, &[CTX_USER, b.leaf + 2, b.main + 4]),
        comm(child, "other", true, 16),
        sample_rec(child, 17, 3, &[CTX_USER, b.leaf + 2]),
    ];
    let pd = write(&dir.join("jit.data"), &recs, &Features::default());
    assert!(!kernel_matches(pd.features()));
    let b = ProfileBuilder::new(&pd, &Options::default())
        .symbolizer(Symbolizer::new(true, false))
        .build()
        .unwrap();
    let (p, sym) = (b.profile, b.symbolizer);
    let _ = std::fs::remove_file(&map_path);
    assert_eq!(p.samples.len(), 5);
    assert_eq!(p.lost, 5);
    let names = |i: usize| -> Vec<String> {
        p.samples[i]
            .stack
            .iter()
            .map(|&f| p.frame(f).name().to_string())
            .collect()
    };
    assert_eq!(names(0), ["js:hotLoop", "js:caller", "main"]);
    let jit = p.frame(p.samples[0].stack[0]);
    assert_eq!(jit.kind, FrameKind::Jit);
    assert_eq!(jit.module_name(), format!("perf-{jit_pid}.map"));
    assert_eq!(p.comm(&p.samples[0]), "node");
    assert_eq!(p.samples[0].period, 7);
    assert_eq!(
        p.samples[2].period, 1000,
        "PERIOD 0: the attr's fixed period"
    );
    let k = p.frame(p.samples[2].stack[0]);
    assert_eq!(
        (k.name(), k.module_name(), k.kind),
        ("[unknown]", "[kernel.kallsyms]", FrameKind::Kernel)
    );
    assert_eq!(names(2)[1], "leaf");
    // The forked child sees the parent's maps and inherits its comm.
    assert_eq!(names(3), ["leaf", "main"]);
    assert_eq!(p.comm(&p.samples[3]), "node");
    // After exec the old mappings are gone.
    let after = p.frame(p.samples[4].stack[0]);
    assert_eq!((after.name(), after.module.as_deref()), ("[unknown]", None));
    assert_eq!(p.comm(&p.samples[4]), "other");
    // Distinct (module, offset, return?) triples: 0x1010, 0x1120r, main r, kernel, leaf+1 r,
    // leaf+2, main r (same as before), leaf+2 unmapped after exec.
    assert_eq!(sym.lookups(), 7, "each distinct address resolved once");
    report!(
        "synthetic: {} samples, {} frames, {} lookups",
        p.samples.len(),
        p.frames.len(),
        sym.lookups()
    );

    // Options: no kernel, no user.
    let nok = Profile::build(
        &pd,
        &Options {
            kernel: false,
            ..Options::default()
        },
    )
    .unwrap();
    assert!(
        nok.samples
            .iter()
            .flat_map(|s| &s.stack)
            .all(|&f| nok.frame(f).kind != FrameKind::Kernel)
    );
    let nou = Profile::build(
        &pd,
        &Options {
            user: false,
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(nou.samples[2].stack.len(), 1);

    // Merged: samples 0 and 1 (same process, thread, comm and stack; other times) are one,
    // standing for 2 samples with their periods summed; the rest stay as they were.
    let merged = Profile::build(
        &pd,
        &Options {
            merge: true,
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(merged.samples.len(), 4);
    let m = &merged.samples[0];
    assert_eq!((m.count, m.period, m.time, m.cpu), (2, 14, None, None));
    assert_eq!(
        merged.samples.iter().map(|s| s.count).sum::<u64>(),
        p.samples.len() as u64
    );
    assert_eq!(
        merged.samples.iter().map(|s| s.period).sum::<u64>(),
        p.samples.iter().map(|s| s.period).sum::<u64>()
    );
    assert!(p.samples.iter().all(|s| s.count == 1 && s.time.is_some()));
    let frames = |p: &Profile, i: usize| -> Vec<String> {
        p.samples[i]
            .stack
            .iter()
            .map(|&f| p.frame(f).name().to_string())
            .collect()
    };
    // Reweighted: sample 1 left out, the others get event 1 and 10 × their period, and
    // merge after that (samples 0 and 1 would have merged; now 0 stands alone).
    let mut seen = Vec::new();
    let merge = Options {
        merge: true,
        ..Options::default()
    };
    let mut weigh = |_: &Record<'_>, _: &RecSample<'_>, period| {
        let i = seen.len();
        seen.push((i, period));
        (i != 1).then_some(Weighed {
            event: 1,
            period: period * 10,
            weight: None,
            count: 1,
        })
    };
    let rew = ProfileBuilder::new(&pd, &merge)
        .weigh(&mut weigh)
        .build()
        .unwrap()
        .profile;
    assert_eq!(seen, [(0, 7), (1, 7), (2, 1000), (3, 3), (4, 3)]);
    assert_eq!(rew.samples.len(), 4);
    assert!(rew.samples.iter().all(|s| s.event == 1 && s.count == 1));
    assert_eq!(rew.samples[0].period, 70);
    // (The JIT map is gone by now: its frames are [unknown] here.)
    assert_eq!(frames(&merged, 0), ["[unknown]", "[unknown]", "main"]);
    assert_eq!(frames(&merged, 3), names(4));
}

#[test]
fn a_mismatching_build_id_never_uses_the_local_file() {
    let dir = common::scratch("buildid");
    let Some(b) = bin(&dir) else { return };
    let path = b.path.display().to_string();
    let (start, len, pgoff) = b.map;
    let recs = vec![
        comm(77, "synth", false, 1),
        mmap2(77, start, len, pgoff, &path, 2),
        sample_rec(77, 10, 1, &[CTX_USER, b.leaf + 1, b.main + 4]),
    ];
    let mut f = Features::default();
    let right =
        Profile::build(&write(&dir.join("ok.data"), &recs, &f), &Options::default()).unwrap();
    let name = |p: &Profile| p.frame(p.samples[0].stack[0]).name().to_string();
    assert_eq!(
        name(&right),
        "leaf",
        "no build id recorded: the local file is used"
    );
    let leaf = right.frame(right.samples[0].stack[0]);
    assert!(
        leaf.file.as_deref().is_some_and(|f| f.ends_with("synth.c")),
        "{leaf:?}"
    );
    assert_eq!(leaf.line, Some(1));

    f.build_ids.push(BuildIdEntry {
        pid: -1,
        misc: 2,
        build_id: vec![0xab; 20],
        filename: path.clone(),
    });
    let other = Profile::build(
        &write(&dir.join("other.data"), &recs, &f),
        &Options::default(),
    )
    .unwrap();
    let fr = other.frame(other.samples[0].stack[0]);
    assert_eq!(fr.name(), "[unknown]");
    assert_eq!(fr.module.as_deref(), Some(path.as_str()));
    assert_eq!(
        fr.module_offset,
        b.leaf + 1 - start + pgoff,
        "file offset, as perf's dso+0x..."
    );
}

/// perf record (6.0+) writes, at the end, each event's own count of its drops as
/// `PERF_RECORD_LOST_SAMPLES`, which includes the drops a `PERF_RECORD_LOST` already
/// announced: a recording of 340 drops holds both (seen: `perf report` says "Total Lost
/// Samples: 340", hwprof said 680). What was lost is the larger, not the sum; a
/// recording with only one of them is that one.
#[test]
fn a_drop_announced_and_counted_is_lost_once() {
    let dir = common::scratch("synthetic-lost");
    let cases: [(&[Vec<u8>], u64); 3] = [
        (&[lost(340, 13), lost_samples(340, 20)], 340),
        (&[lost(300, 13), lost_samples(340, 20)], 340),
        (&[lost(354, 13)], 354),
    ];
    for (i, (lostrecs, want)) in cases.iter().enumerate() {
        let mut recs = vec![
            comm(7, "w", false, 1),
            sample_rec(7, 10, 1, &[CTX_USER, 0x1000]),
        ];
        recs.extend(lostrecs.iter().cloned());
        let pd = write(
            &dir.join(format!("lost{i}.data")),
            &recs,
            &Features::default(),
        );
        let b = ProfileBuilder::new(&pd, &Options::default())
            .symbolizer(Symbolizer::new(false, false))
            .build()
            .unwrap();
        assert_eq!(b.profile.lost, *want, "case {i}");
    }
}
