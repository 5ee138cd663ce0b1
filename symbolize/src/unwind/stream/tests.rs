//! The stream unwinder's rules for processes and threads (see the module docs), on
//! synthetic records against this test binary's real unwind tables.
//!
//! A sample whose pc is the first instruction of a function unwinds through that
//! function's CFI to the return address on top of its stack, [`RA`], then ends (a null
//! frame pointer): two frames. Without its process's mappings the unwinder can only
//! follow the (null) frame pointer: one frame. So the number of frames says whether
//! the sample was unwound with its process's mappings.

use super::*;
use hwprof_sampler::record::{Header, Mmap, Regs, Sample, StackUser, Task, U64s, kind};

/// A return address outside every mapping.
const RA: u64 = 0x1000_0000;
/// Where the test binary's code is mapped.
const START: u64 = 0x5555_0000_0000;
const SP: u64 = 0x7ff0_0000_0000;

struct Fixture {
    exe: String,
    len: u64,
    pgoff: u64,
    /// A function's first instruction, as mapped at [`START`].
    pc: u64,
}

fn fixture() -> Fixture {
    let exe = std::env::current_exe().unwrap();
    let file = crate::unwind::FileData::load(Some(&exe), None).unwrap();
    let text = file.text.clone().unwrap();
    let pgoff = crate::unwind::tests::text_page_offset(&file).unwrap();
    let svma0 = file.svma_of_offset(pgoff).unwrap();
    let fde_start = first_function(&file, &text);
    Fixture {
        exe: exe.to_str().unwrap().to_string(),
        len: text.end - svma0,
        pgoff,
        pc: START + (fde_start - svma0),
    }
}

/// The start of a function of `.text` with a CFI entry: the middle one in address order
/// (the first is `_start`, whose CFI says it has no caller).
fn first_function(file: &crate::unwind::FileData, text: &std::ops::Range<u64>) -> u64 {
    use gimli::UnwindSection;
    let eh = file.eh_frame.as_ref().unwrap();
    let section = gimli::EhFrame::new(&eh.data, gimli::LittleEndian);
    let bases = gimli::BaseAddresses::default()
        .set_eh_frame(eh.svma.start)
        .set_text(text.start);
    let mut entries = section.entries(&bases);
    let mut starts = Vec::new();
    while let Ok(Some(e)) = entries.next() {
        if let gimli::CieOrFde::Fde(partial) = e
            && let Ok(fde) = partial.parse(gimli::EhFrame::cie_from_offset)
            && text.contains(&fde.initial_address())
            && fde.len() >= 16
        {
            starts.push(fde.initial_address());
        }
    }
    starts.sort_unstable();
    *starts
        .get(starts.len() / 2)
        .expect("no function with CFI in the test binary")
}

fn rec(body: Body<'_>) -> Record<'_> {
    Record {
        header: Header {
            type_: kind::SAMPLE,
            misc: 0,
            size: 0,
        },
        attr: None,
        sample_id: None,
        body,
    }
}

fn task(pid: u32, tid: u32, ppid: u32, ptid: u32) -> Task {
    Task {
        pid,
        ppid,
        tid,
        ptid,
        time: 0,
    }
}

struct Stream {
    u: StreamUnwinder,
    f: Fixture,
    stack: Vec<u8>,
}

impl Stream {
    fn new(live: bool) -> Stream {
        let f = fixture();
        let mut stack = vec![0u8; 256];
        stack[..8].copy_from_slice(&RA.to_le_bytes());
        Stream {
            u: StreamUnwinder::new(Arch::X86_64, live, crate::Locator::from_env(None)),
            f,
            stack,
        }
    }

    fn mmap(&mut self, pid: u32, start: u64) {
        let r = rec(Body::Mmap(Mmap {
            pid,
            tid: pid,
            addr: start,
            len: self.f.len,
            pgoff: self.f.pgoff,
            filename: self.f.exe.as_bytes(),
        }));
        assert!(self.u.record(&r).is_none());
    }

    fn fork(&mut self, pid: u32, tid: u32, ppid: u32, ptid: u32) {
        self.u.record(&rec(Body::Fork(task(pid, tid, ppid, ptid))));
    }

    fn exit(&mut self, pid: u32, tid: u32) {
        self.u.record(&rec(Body::Exit(task(pid, tid, pid, tid))));
    }

    fn exec(&mut self, pid: u32) {
        self.u.record(&rec(Body::Comm {
            pid,
            tid: pid,
            comm: b"new",
            exec: true,
        }));
    }

    /// The frames of a sample of `pid`/`tid` at the fixture's pc.
    fn frames(&mut self, pid: u32, tid: u32) -> Vec<u64> {
        self.frames_at(pid, tid, self.f.pc)
    }

    fn frames_at(&mut self, pid: u32, tid: u32, pc: u64) -> Vec<u64> {
        let regs: Vec<u8> = [0u64, SP, pc]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let s = Sample {
            pid: Some(pid),
            tid: Some(tid),
            regs_user: Some(Regs {
                abi: 2,
                mask: (1 << 6) | (1 << 7) | (1 << 8),
                regs: U64s::new(&regs),
            }),
            stack_user: Some(StackUser {
                data: &self.stack,
                dyn_size: self.stack.len() as u64,
            }),
            ..Sample::default()
        };
        let r = rec(Body::Sample(s));
        let (frames, _) = self.u.record(&r).expect("a sample with a user stack");
        frames.iter().map(|f| f.addr).collect()
    }
}

const P: u32 = 1000;
const T: u32 = 1001;

#[test]
fn a_process_with_its_mappings_unwinds_two_frames_and_one_without() {
    let mut s = Stream::new(false);
    assert_eq!(s.frames(P, P).len(), 1, "no mappings yet");
    s.mmap(P, START);
    let pc = s.f.pc;
    assert_eq!(s.frames(P, P), vec![pc, RA]);
}

/// A thread exiting leaves its process's mappings to the other threads.
#[test]
fn a_thread_exiting_leaves_the_process_its_mappings() {
    let mut s = Stream::new(false);
    s.mmap(P, START);
    s.fork(P, T, P, P);
    assert_eq!(s.frames(P, T).len(), 2);
    s.exit(P, T);
    assert_eq!(
        s.frames(P, P).len(),
        2,
        "the main thread after another's exit"
    );
    // Its own late samples (another ring) too.
    assert_eq!(s.frames(P, T).len(), 2, "the exited thread's late sample");
    // A thread's exit is not the process's: however many processes exit afterwards,
    // the process keeps its mappings while it has not sampled.
    for i in 0..EXITED_KEPT as u32 + 1 {
        s.exit(10_000 + i, 10_000 + i);
    }
    assert_eq!(
        s.frames(P, P).len(),
        2,
        "the process was dropped for its thread's exit"
    );
}

/// The main thread's EXIT comes first when `main` calls `pthread_exit`, and before
/// the process's last samples when they sit in another CPU's ring: they still unwind.
#[test]
fn samples_after_the_main_thread_exits_still_unwind() {
    let mut s = Stream::new(false);
    s.mmap(P, START);
    s.fork(P, T, P, P);
    s.exit(P, P);
    assert_eq!(
        s.frames(P, T).len(),
        2,
        "another thread after the main one exited"
    );
    assert_eq!(s.frames(P, P).len(), 2, "a late sample of the main thread");
}

/// A pid reused by a new process, or an exec, starts over: nothing of the old
/// mappings unwinds the new program.
#[test]
fn a_reused_pid_or_an_exec_starts_over() {
    let mut s = Stream::new(false);
    s.mmap(P, START);
    s.exit(P, P);
    // The new process with P's pid is forked by Q, which maps the code elsewhere.
    let q = 2000;
    s.mmap(q, START + 0x1000_0000);
    s.fork(P, P, q, q);
    assert_eq!(
        s.frames(P, P).len(),
        1,
        "the old process's mappings were used"
    );
    let moved = s.f.pc + 0x1000_0000;
    assert_eq!(
        s.frames_at(P, P, moved),
        vec![moved, RA],
        "the parent's copy"
    );
    // An exec drops them too.
    s.exec(P);
    assert_eq!(
        s.frames_at(P, P, moved).len(),
        1,
        "mappings kept across exec"
    );
    s.mmap(P, START);
    assert_eq!(s.frames(P, P).len(), 2);
}

/// An exited process's mappings go once enough others have exited since its EXIT or
/// its last sample: memory stays bounded, and a process that still samples keeps them.
#[test]
fn exited_processes_are_dropped_after_enough_other_exits() {
    let mut s = Stream::new(false);
    s.mmap(P, START);
    s.mmap(P + 1, START);
    s.exit(P, P);
    s.exit(P + 1, P + 1);
    for i in 0..EXITED_KEPT as u32 {
        let pid = 10_000 + i;
        s.mmap(pid, START);
        s.exit(pid, pid);
        if i % 64 == 0 {
            // P keeps sampling (its main thread exited, another runs on).
            assert_eq!(s.frames(P, T).len(), 2, "after {i} exits");
        }
    }
    assert_eq!(s.frames(P, T).len(), 2, "a process that samples is kept");
    assert_eq!(
        s.frames(P + 1, P + 1).len(),
        1,
        "a long-exited process is dropped"
    );
    assert!(
        s.u.processes() <= EXITED_KEPT + 2,
        "{} processes kept",
        s.u.processes()
    );
}

/// A live process's sample that comes before its exec's MMAPs (in another CPU's ring)
/// unwinds with its mappings as `/proc/PID/maps` shows them.
#[test]
fn a_live_sample_before_its_mmaps_reads_proc_maps() {
    // This test process, live: its own code as mapped now.
    let me = std::process::id();
    let (pc, ra) = live_function();
    let mut s = Stream::new(true);
    s.stack[..8].copy_from_slice(&ra.to_le_bytes());
    assert_eq!(s.frames_at(me, me, pc), vec![pc, ra]);
    // Not live: no such reading.
    let mut s = Stream::new(false);
    s.stack[..8].copy_from_slice(&ra.to_le_bytes());
    assert_eq!(s.frames_at(me, me, pc).len(), 1);
}

/// The runtime address of the fixture's function in this process, and an address in
/// no mapping of it to return to.
fn live_function() -> (u64, u64) {
    let f = fixture();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    for line in maps.lines() {
        let Some(m) = ProcMap::parse(line.as_bytes()) else {
            continue;
        };
        if m.exec && m.name == f.exe.as_bytes() && m.pgoff == f.pgoff {
            return (m.start + (f.pc - START), 8);
        }
    }
    panic!("the test binary's code is not in /proc/self/maps:\n{maps}");
}

#[test]
fn proc_maps_lines_parse() {
    let m = ProcMap::parse(
        b"7f5de9943000-7f5de9a99000 r-xp 00026000 fe:00 326279    /usr/lib/x86_64-linux-gnu/libc.so.6",
    )
    .unwrap();
    assert_eq!(
        (m.start, m.end, m.pgoff, m.exec),
        (0x7f5d_e994_3000, 0x7f5d_e9a9_9000, 0x26000, true)
    );
    assert_eq!(m.name, b"/usr/lib/x86_64-linux-gnu/libc.so.6");
    let m = ProcMap::parse(b"7ffc0e2dc000-7ffc0e2fd000 rw-p 00000000 00:00 0 [stack]").unwrap();
    assert!(!m.exec);
    assert_eq!(m.name, b"[stack]");
    let m = ProcMap::parse(b"7f5de991a000-7f5de991d000 rw-p 00000000 00:00 0").unwrap();
    assert_eq!(m.name, b"");
    assert!(ProcMap::parse(b"").is_none());
    assert!(ProcMap::parse(b"zz-1 r-xp 0 0 0").is_none());
}
