//! The replay's time order: a sample before (in the file) the side-band records that
//! came before it in time.

use super::*;
use crate::module::Module;
use hwprof_pmu::attr::{Attr, sample};
use hwprof_sampler::perfdata::features::Features;
use hwprof_sampler::perfdata::writer::{EventEntry, Writer};

fn record(kind: u32, misc: u16, mut body: Vec<u8>) -> Vec<u8> {
    body.resize(body.len().next_multiple_of(8), 0);
    let mut r = kind.to_le_bytes().to_vec();
    r.extend_from_slice(&misc.to_le_bytes());
    r.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
    r.extend_from_slice(&body);
    r
}

fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn u64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn cstr(s: &str) -> Vec<u8> {
    let mut b = s.as_bytes().to_vec();
    b.push(0);
    b.resize(b.len().next_multiple_of(8), 0);
    b
}

/// sample_id trailer for TID|TIME.
fn sid(pid: u32, time: u64) -> Vec<u8> {
    let mut b = u32s(&[pid, pid]);
    b.extend(u64s(&[time]));
    b
}

fn mmap2(pid: u32, addr: u64, name: &str, time: u64) -> Vec<u8> {
    let mut b = u32s(&[pid, pid]);
    b.extend(u64s(&[addr, 0x1000, 0]));
    b.extend(u32s(&[8, 1]));
    b.extend(u64s(&[12345, 0]));
    b.extend(u32s(&[5, 2]));
    b.extend(cstr(name));
    b.extend(sid(pid, time));
    record(10, 2, b)
}

fn exec(pid: u32, name: &str, time: u64) -> Vec<u8> {
    let mut b = u32s(&[pid, pid]);
    b.extend(cstr(name));
    b.extend(sid(pid, time));
    record(3, 1 << 13, b)
}

fn fork(pid: u32, ppid: u32, time: u64) -> Vec<u8> {
    let mut b = u32s(&[pid, ppid, pid, ppid]);
    b.extend(u64s(&[time]));
    b.extend(sid(pid, time));
    record(7, 0, b)
}

/// A sample: IP|TID|TIME.
fn sample_rec(pid: u32, time: u64, ip: u64) -> Vec<u8> {
    let mut b = u64s(&[ip]);
    b.extend(u32s(&[pid, pid]));
    b.extend(u64s(&[time]));
    record(9, 2, b)
}

fn write(dir: &std::path::Path, records: &[Vec<u8>]) -> PerfData {
    write_as(dir, records, sample::IP | sample::TID | sample::TIME)
}

/// A recording of `records`, its one event sampling `sample_type`.
fn write_as(dir: &std::path::Path, records: &[Vec<u8>], sample_type: u64) -> PerfData {
    let mut a = Attr::new(1, 0);
    a.sample_period = 1000;
    a.freq = false;
    a.sample_type = sample_type;
    a.sample_id_all = true;
    a.mmap = true;
    a.mmap2 = true;
    a.comm = true;
    a.task = true;
    let path = dir.join("replay.data");
    let mut w = Writer::create(
        &path,
        vec![EventEntry {
            attr: a,
            name: "cpu-clock".into(),
            ids: vec![],
        }],
    )
    .unwrap();
    for r in records {
        w.write_record(r).unwrap();
    }
    w.finish(&Features::default()).unwrap();
    PerfData::open(&path).unwrap()
}

/// Each sample's (pid, file of its ip, comm).
#[derive(Default)]
struct Seen(Vec<(u32, Option<String>, String)>);

/// The file the ip of `s` is mapped from, in `procs`.
fn file_of(procs: &Processes, s: &Sample<'_>) -> Option<String> {
    procs
        .code_module(s.pid.unwrap_or(0), s.ip.unwrap_or(0))
        .and_then(|m| match procs.module(m) {
            Some(Module::File { path, .. }) => Some(path.clone()),
            _ => None,
        })
}

impl Visitor for Seen {
    fn sample(&mut self, procs: &mut Processes, _: &Record<'_>, s: &Sample<'_>) -> Result<()> {
        let pid = s.pid.unwrap_or(0);
        let file = file_of(procs, s);
        let c = procs.comm_of(pid, pid);
        self.0.push((pid, file, procs.comm(c).to_string()));
        Ok(())
    }
}

const P: u32 = 100;
const Q: u32 = 200;

/// CPU 1's ring holds P's sample at t=20; CPU 0's ring, written after it, P's exec at
/// t=10 and the MMAP2 of the new program at t=11: the sample sees the new program.
#[test]
fn a_sample_before_its_execs_mmap2_in_the_file_sees_the_new_program() {
    let dir = tempfile::tempdir().unwrap();
    let pd = write(
        dir.path(),
        &[
            mmap2(P, 0x1000, "/bin/old", 1),
            // CPU 1's ring.
            sample_rec(P, 20, 0x1800),
            // CPU 0's ring.
            exec(P, "new", 10),
            mmap2(P, 0x1000, "/bin/new", 11),
            sample_rec(P, 30, 0x1800),
        ],
    );
    let mut procs = Processes::default();
    let mut seen = Seen::default();
    replay(&pd, &mut procs, &mut seen).unwrap();
    let new = (P, Some("/bin/new".to_string()), "new".to_string());
    assert_eq!(seen.0, [new.clone(), new]);
}

/// A child's FORK brings its parent up to the fork first, whatever comes later in the
/// file: the child sees what the parent had mapped by then, not after.
#[test]
fn a_fork_brings_the_parent_up_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let pd = write(
        dir.path(),
        &[
            sample_rec(P, 20, 0x1800),
            sample_rec(P, 21, 0x3800),
            fork(P, Q, 5),
            mmap2(Q, 0x1000, "/bin/q", 1),
            mmap2(Q, 0x3000, "/bin/later", 6),
        ],
    );
    let mut procs = Processes::default();
    let mut seen = Seen::default();
    replay(&pd, &mut procs, &mut seen).unwrap();
    let files: Vec<_> = seen.0.iter().map(|s| s.1.as_deref()).collect();
    assert_eq!(files, [Some("/bin/q"), None]);
}

/// A parent's sample after its exec comes (in the file) before its child's sample from
/// before it: the child, forked before the exec, still has the parent's old program and
/// name (perf names it so), and the parent its new ones.
#[test]
fn a_child_copies_its_parent_as_at_the_fork_when_the_parent_went_on() {
    let dir = tempfile::tempdir().unwrap();
    let pd = write(
        dir.path(),
        &[
            exec(Q, "old", 0),
            mmap2(Q, 0x1000, "/bin/old", 1),
            fork(P, Q, 5),
            exec(Q, "new", 10),
            mmap2(Q, 0x1000, "/bin/new", 11),
            // Another CPU's ring: the parent after its exec, then the child.
            sample_rec(Q, 30, 0x1800),
            sample_rec(P, 7, 0x1800),
            sample_rec(P, 31, 0x1800),
        ],
    );
    let mut procs = Processes::default();
    let mut seen = Seen::default();
    replay(&pd, &mut procs, &mut seen).unwrap();
    let old = (P, Some("/bin/old".to_string()), "old".to_string());
    let new = (Q, Some("/bin/new".to_string()), "new".to_string());
    assert_eq!(seen.0, [new, old.clone(), old]);
}

/// The child's own sample applies its FORK first; the parent, passing the fork later,
/// applies nothing again: the child keeps what it copied, the parent goes on.
#[test]
fn a_fork_the_child_applied_first_is_not_applied_again() {
    let dir = tempfile::tempdir().unwrap();
    let pd = write(
        dir.path(),
        &[
            exec(Q, "old", 0),
            mmap2(Q, 0x1000, "/bin/old", 1),
            fork(P, Q, 5),
            exec(Q, "new", 10),
            mmap2(Q, 0x1000, "/bin/new", 11),
            sample_rec(P, 7, 0x1800),
            sample_rec(Q, 30, 0x1800),
            sample_rec(P, 31, 0x1800),
        ],
    );
    let mut procs = Processes::default();
    let mut seen = Seen::default();
    replay(&pd, &mut procs, &mut seen).unwrap();
    let old = (P, Some("/bin/old".to_string()), "old".to_string());
    let new = (Q, Some("/bin/new".to_string()), "new".to_string());
    assert_eq!(seen.0, [old.clone(), new, old]);
}

fn round() -> Vec<u8> {
    record(68, 0, Vec::new())
}

/// Each sample's (time, file of its ip), in the order given; the LOST and the
/// LOST_SAMPLES counts.
#[derive(Default)]
struct Files(Vec<(u64, Option<String>)>, u64, u64);

impl Visitor for Files {
    fn sample(&mut self, procs: &mut Processes, _: &Record<'_>, s: &Sample<'_>) -> Result<()> {
        self.0.push((s.time.unwrap_or(0), file_of(procs, s)));
        Ok(())
    }

    fn lost(&mut self, n: u64) {
        self.1 += n;
    }

    fn lost_samples(&mut self, n: u64) {
        self.2 += n;
    }
}

fn lost(n: u64, time: u64) -> Vec<u8> {
    let mut b = u64s(&[1, n]);
    b.extend(sid(P, time));
    record(2, 0, b)
}

fn lost_samples(n: u64, time: u64) -> Vec<u8> {
    let mut b = u64s(&[n]);
    b.extend(sid(P, time));
    record(13, 0, b)
}

/// With rounds, one read: the exec's MMAP2 (t=11) comes after the sample it precedes
/// (t=20, on another CPU's ring), and the sample still sees it; the samples go in file
/// order, and a sample is not given before the end of the round after next, which says
/// every record up to its time is in (t=30 sees the mapping of t=25 a round later).
#[test]
fn with_rounds_one_read_gives_each_sample_the_state_at_its_time() {
    let dir = tempfile::tempdir().unwrap();
    let pd = write(
        dir.path(),
        &[
            mmap2(P, 0x1000, "/bin/old", 1),
            sample_rec(P, 5, 0x1800),
            round(),
            // Round 2: CPU 1's ring first, then CPU 0's.
            sample_rec(P, 20, 0x1800),
            lost(3, 21),
            exec(P, "new", 10),
            mmap2(P, 0x1000, "/bin/new", 11),
            round(),
            sample_rec(P, 30, 0x1800),
            round(),
            // Round 4 holds a record later than round 2's latest time (21), as it may,
            // but earlier than round 3's sample.
            mmap2(P, 0x1000, "/bin/newer", 25),
            round(),
        ],
    );
    let mut procs = Processes::default();
    let mut seen = Files::default();
    let order = replay(&pd, &mut procs, &mut seen).unwrap();
    assert_eq!(order, Order { sweeps: 1, late: 0 });
    let f = |t, s: &str| (t, Some(s.to_string()));
    assert_eq!(
        seen.0,
        [f(5, "/bin/old"), f(20, "/bin/new"), f(30, "/bin/newer")]
    );
    assert_eq!(seen.1, 3);
}

/// A sample of a file without rounds is held until the file ends (all of it when it
/// is small), or, past the limit, the file is read again in two sweeps: the same
/// answer either way.
#[test]
fn without_rounds_small_files_are_held_and_large_ones_read_twice() {
    let dir = tempfile::tempdir().unwrap();
    let mut recs = vec![mmap2(P, 0x1000, "/bin/old", 1)];
    for t in 0..100 {
        recs.push(sample_rec(P, 20 + t, 0x1800));
    }
    recs.push(exec(P, "new", 10));
    recs.push(mmap2(P, 0x1000, "/bin/new", 11));
    recs.push(lost(3, 130));
    recs.push(lost_samples(5, 131));
    let pd = write(dir.path(), &recs);
    let want: Vec<_> = (0..100)
        .map(|t| (20 + t, Some("/bin/new".to_string())))
        .collect();
    for (limit, sweeps) in [(usize::MAX, 1), (1000, 2)] {
        let mut procs = Processes::default();
        let mut seen = Files::default();
        let limits = Limits {
            no_rounds: limit,
            window: usize::MAX,
        };
        let order = replay_within(&pd, &mut procs, &mut seen, limits).unwrap();
        assert_eq!(order, Order { sweeps, late: 0 }, "limit {limit}");
        assert_eq!(seen.0, want, "limit {limit}");
        // Each kind of lost record as what it is, in both reads.
        assert_eq!((seen.1, seen.2), (3, 5), "limit {limit}");
    }
}

/// Rounds larger than the window: the oldest samples go when it is full, and a
/// side-band record that then comes earlier than a sample already given is applied
/// late and counted.
#[test]
fn past_the_window_samples_go_and_late_records_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let mut recs = vec![mmap2(P, 0x1000, "/bin/old", 1), round()];
    for t in 0..100 {
        recs.push(sample_rec(P, 20 + t, 0x1800));
    }
    recs.push(mmap2(P, 0x1000, "/bin/new", 11));
    recs.push(round());
    let pd = write(dir.path(), &recs);
    let mut procs = Processes::default();
    let mut seen = Files::default();
    // 32 bytes a sample: the window holds 20.
    let limits = Limits {
        no_rounds: 0,
        window: 640,
    };
    let order = replay_within(&pd, &mut procs, &mut seen, limits).unwrap();
    assert_eq!(order.sweeps, 1);
    assert_eq!(order.late, 1);
    assert!(order.notice().unwrap().starts_with("1 side-band record "));
    assert_eq!(seen.0.len(), 100);
    let old = seen
        .0
        .iter()
        .filter(|(_, f)| f.as_deref() == Some("/bin/old"))
        .count();
    // The window held 20 when the record came; at least the 80 given before were named
    // after the old mapping, the rest after the new.
    assert!((80..100).contains(&old), "{old}");
    // Within the window, the same file is right.
    let mut procs = Processes::default();
    let mut seen = Files::default();
    let order = replay(&pd, &mut procs, &mut seen).unwrap();
    assert_eq!(order, Order { sweeps: 1, late: 0 });
    assert!(seen.0.iter().all(|(_, f)| f.as_deref() == Some("/bin/new")));
}

/// A sample with a callchain: IP|TID|TIME|CALLCHAIN, the chain `[PERF_CONTEXT_USER, ip]`.
fn chain_sample(pid: u32, time: u64, ip: u64) -> Vec<u8> {
    let mut b = u64s(&[ip]);
    b.extend(u32s(&[pid, pid]));
    b.extend(u64s(&[time, 2, hwprof_sampler::record::context::USER, ip]));
    record(9, 2, b)
}

/// The same callchain words twice in one process, with an exec and a new program mapped
/// at the same address between them: the profile's stacks (whose recorded chains the
/// builder keeps by words and mappings' versions) name each its own program; and the
/// same words again under unchanged mappings give the same stack.
#[test]
fn the_same_callchain_under_new_mappings_is_located_again() {
    let dir = tempfile::tempdir().unwrap();
    let pd = write_as(
        dir.path(),
        &[
            mmap2(P, 0x1000, "/bin/old", 1),
            chain_sample(P, 2, 0x1800),
            chain_sample(P, 3, 0x1800),
            exec(P, "new", 10),
            mmap2(P, 0x1000, "/bin/new", 11),
            chain_sample(P, 20, 0x1800),
            chain_sample(P, 21, 0x1800),
        ],
        sample::IP | sample::TID | sample::TIME | sample::CALLCHAIN,
    );
    let p = crate::Profile::build(&pd, &crate::Options::default()).unwrap();
    let modules: Vec<Option<&str>> = p
        .samples
        .iter()
        .map(|s| s.stack.first().and_then(|&f| p.frame(f).module.as_deref()))
        .collect();
    assert_eq!(
        modules,
        [
            Some("/bin/old"),
            Some("/bin/old"),
            Some("/bin/new"),
            Some("/bin/new")
        ]
    );
}
