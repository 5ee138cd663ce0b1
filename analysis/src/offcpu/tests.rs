//! The off-CPU pass on hand-built records: the raw data is decoded with the format it was
//! recorded with, whatever this kernel's is.

use super::*;
use hwprof_pmu::attr::{Attr, sample, types};
use hwprof_sampler::record::{Decoder, kind};
use hwprof_symbolize::{EventInfo, FrameKind, Sample};

/// This kernel's layout (6.x): `next_pid` at 56.
const KERNEL_FORMAT: &str = "name: sched_switch\nID: 372\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n";

/// Another kernel's layout: the pids and the state elsewhere, `prev_state` 4 bytes.
const OTHER_FORMAT: &str = "name: sched_switch\nID: 316\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:char prev_comm[16];\toffset:12;\tsize:16;\tsigned:0;\n\tfield:pid_t next_pid;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:pid_t prev_pid;\toffset:64;\tsize:4;\tsigned:1;\n\tfield:unsigned int prev_state;\toffset:68;\tsize:4;\tsigned:0;\n";

/// Raw data of a switch in [`OTHER_FORMAT`]'s layout (72 bytes).
fn other_raw(prev: u32, next: u32, state: u32) -> Vec<u8> {
    let mut raw = vec![0u8; 72];
    raw[28..32].copy_from_slice(&next.to_le_bytes());
    raw[64..68].copy_from_slice(&prev.to_le_bytes());
    raw[68..72].copy_from_slice(&state.to_le_bytes());
    // Where this kernel's format looks for next_pid: something else.
    raw[56..60].copy_from_slice(&7777u32.to_le_bytes());
    raw
}

#[test]
fn fields_come_from_the_format_given() {
    let other = SwitchFormat::parse(OTHER_FORMAT);
    let raw = other_raw(10, 11, 1);
    assert_eq!(
        other.decode(&raw),
        SwitchFields {
            prev_pid: Some(10),
            prev_state: Some(1),
            next_pid: Some(11),
        }
    );
    assert_eq!(
        SwitchFormat::parse(KERNEL_FORMAT).decode(&raw).next_pid,
        Some(7777)
    );
    // Short raw data, a negative pid, a format without the field.
    assert_eq!(other.decode(&raw[..30]).next_pid, None);
    assert_eq!(other.decode(&other_raw(u32::MAX, 1, 0)).prev_pid, None);
    let none = SwitchFormat::parse("name: sched_switch\nformat:\n");
    assert!(!none.has_next_pid());
    assert_eq!(none.decode(&raw), SwitchFields::default());
}

/// A tracing data section (perf's layout, version 0.6) with these formats of `sched`.
pub(crate) fn tracing_data(formats: &[&str]) -> Vec<u8> {
    let mut b = b"\x17\x08\x44tracing0.6\0\0\x08".to_vec();
    b.extend_from_slice(&4096u32.to_le_bytes());
    for name in ["header_page", "header_event"] {
        b.extend_from_slice(name.as_bytes());
        b.push(0);
        b.extend_from_slice(&0u64.to_le_bytes());
    }
    b.extend_from_slice(&0u32.to_le_bytes()); // ftrace formats
    b.extend_from_slice(&1u32.to_le_bytes()); // systems
    b.extend_from_slice(b"sched\0");
    b.extend_from_slice(&(formats.len() as u32).to_le_bytes());
    for f in formats {
        b.extend_from_slice(&(f.len() as u64).to_le_bytes());
        b.extend_from_slice(f.as_bytes());
    }
    b.extend_from_slice(&[0; 8]);
    b
}

#[test]
fn the_format_in_tracing_data() {
    let wakeup =
        "name: sched_wakeup\nID: 1\nformat:\n\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n";
    let found = SwitchFormat::from_tracing_data(&tracing_data(&[wakeup, OTHER_FORMAT])).unwrap();
    assert_eq!(found, Some(SwitchFormat::parse(OTHER_FORMAT)));
    assert_eq!(
        SwitchFormat::from_tracing_data(&tracing_data(&[wakeup])).unwrap(),
        None
    );
    assert!(SwitchFormat::from_tracing_data(b"\x17\x08\x44tracing").is_err());
}

const SWITCH_ID: u64 = 1;
const CLOCK_ID: u64 = 2;

fn attrs() -> Vec<(Attr, Vec<u64>)> {
    let st = sample::IDENTIFIER | sample::TID | sample::TIME;
    let mut tp = Attr::new(types::TRACEPOINT, 316);
    tp.sample_type = st | sample::RAW;
    tp.sample_id_all = true;
    let mut clock = Attr::new(types::SOFTWARE, 0);
    clock.sample_type = st;
    clock.sample_id_all = true;
    vec![(tp, vec![SWITCH_ID]), (clock, vec![CLOCK_ID])]
}

fn record(type_: u32, misc: u16, body: Vec<u8>) -> Vec<u8> {
    let mut r = type_.to_le_bytes().to_vec();
    r.extend_from_slice(&misc.to_le_bytes());
    r.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
    r.extend_from_slice(&body);
    r
}

/// A sample: IDENTIFIER, TID, TIME (and RAW, padded to 8 bytes with its size).
fn sample_rec(id: u64, tid: u32, time: u64, raw: Option<&[u8]>) -> Vec<u8> {
    let mut b = id.to_le_bytes().to_vec();
    b.extend_from_slice(&tid.to_le_bytes());
    b.extend_from_slice(&tid.to_le_bytes());
    b.extend_from_slice(&time.to_le_bytes());
    if let Some(raw) = raw {
        let mut raw = raw.to_vec();
        raw.resize((raw.len() + 4).next_multiple_of(8) - 4, 0);
        b.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        b.extend_from_slice(&raw);
    }
    record(kind::SAMPLE, 2, b)
}

/// A PERF_RECORD_SWITCH in (its trailer: TID, TIME, IDENTIFIER).
fn switch_in(tid: u32, time: u64) -> Vec<u8> {
    let mut b = tid.to_le_bytes().to_vec();
    b.extend_from_slice(&tid.to_le_bytes());
    b.extend_from_slice(&time.to_le_bytes());
    b.extend_from_slice(&SWITCH_ID.to_le_bytes());
    record(kind::SWITCH, 0, b)
}

const MS: u64 = 1_000_000;

/// Thread 10 blocks at 1 ms and thread 11 hands it the CPU at 1.05 ms (exact, only in
/// the raw data); 10 switches out again at 2 ms. Thread 12 blocks at 3 ms and is seen
/// running (cpu-clock) at 3.3 ms; thread 13 blocks at 4 ms and switches in at 4.2 ms.
fn records() -> Vec<Vec<u8>> {
    vec![
        sample_rec(SWITCH_ID, 10, MS, Some(&other_raw(10, 11, 1))),
        sample_rec(SWITCH_ID, 11, MS + 50_000, Some(&other_raw(11, 10, 1))),
        sample_rec(SWITCH_ID, 10, 2 * MS, Some(&other_raw(10, 0, 1))),
        sample_rec(SWITCH_ID, 12, 3 * MS, Some(&other_raw(12, 0, 1))),
        sample_rec(CLOCK_ID, 12, 3 * MS + 300_000, None),
        sample_rec(SWITCH_ID, 13, 4 * MS, Some(&other_raw(13, 0, 1))),
        switch_in(13, 4 * MS + 200_000),
    ]
}

fn collected(format: SwitchFormat) -> Switches {
    let dec = Decoder::new(&attrs());
    let mut c = Collector::new(0, format);
    for (i, r) in records().iter().enumerate() {
        let rec = dec.decode(r, i as u64 * 64).unwrap();
        c.add(&rec);
    }
    c.finish()
}

/// A profile of samples (event, thread, time, period), as the recording's would be.
fn profile_of(records: &[(u32, u32, u64, u64)]) -> Profile {
    Profile {
        events: vec![
            EventInfo {
                name: SCHED_SWITCH.into(),
                attr: Attr::default(),
            },
            EventInfo {
                name: "cpu-clock".into(),
                attr: Attr::default(),
            },
        ],
        frames: vec![Frame::named("wait")],
        comms: vec!["app".into()],
        samples: records
            .iter()
            .map(|&(event, tid, time, period)| Sample {
                event,
                pid: tid,
                tid,
                comm: 0,
                time: Some(time),
                cpu: None,
                period,
                weight: None,
                count: 1,
                stack: vec![0],
            })
            .collect(),
        lost: 0,
        ..Default::default()
    }
}

/// The profile of [`records`]: one sample per sample record.
fn samples() -> Profile {
    profile_of(&[
        (0, 10, MS, 1),
        (0, 11, MS + 50_000, 1),
        (0, 10, 2 * MS, 1),
        (0, 12, 3 * MS, 1),
        (1, 12, 3 * MS + 300_000, 250_000),
        (0, 13, 4 * MS, 1),
    ])
}

#[test]
fn the_pairing_uses_the_recorded_layout() {
    let sw = collected(SwitchFormat::parse(OTHER_FORMAT));
    assert_eq!(sw.per_sample.len(), 6);
    assert_eq!(sw.per_sample[1].next_pid, Some(10));
    assert!(
        !sw.per_sample[4].out,
        "a cpu-clock sample is a sign of running"
    );
    assert_eq!(sw.switch_ins.len(), 1);
    let p = Plan::new(sw, 1, false).apply(samples());
    let blocks: Vec<(u32, u64)> = p.samples.iter().map(|s| (s.tid, s.period)).collect();
    // 10: 50 µs until 11 hands over; 12: 300 µs until it is seen running; 13: 200 µs
    // until its switch-in. 10's second block and 11's never end.
    assert_eq!(blocks, [(10, 50), (12, 300), (13, 200)]);

    // This kernel's layout reads another field as next_pid: 10's block then runs to its
    // own next switch-out (1 ms), which is what reading a recording with the wrong
    // format gets wrong.
    let wrong = collected(SwitchFormat::parse(KERNEL_FORMAT));
    let p = Plan::new(wrong, 1, false).apply(samples());
    assert_eq!(p.samples[0].period, 1000);
}

#[test]
fn wall_view_tags_and_min_block() {
    let sw = collected(SwitchFormat::parse(OTHER_FORMAT));
    let p = Plan::new(sw.clone(), 1, true).apply(samples());
    let tags: Vec<(&str, u64)> = p
        .samples
        .iter()
        .map(|s| (p.frames[s.stack[0] as usize].name(), s.period))
        .collect();
    // The cpu-clock sample's 250,000 ns are 250 µs on CPU.
    // In file order: 10's block, 12's, 12's cpu-clock sample, 13's block.
    assert_eq!(
        tags,
        [("[off]", 50), ("[off]", 300), ("[on]", 250), ("[off]", 200)]
    );
    assert!(p.samples.iter().all(|s| s.event == 0));
    let p = Plan::new(sw.clone(), 100, false).apply(samples());
    assert_eq!(p.samples.len(), 2, "the 50 µs block is shorter than 100 µs");
}

/// A window over [`records`] (1 ms to 10 ms) with thread 13 present from its start and
/// thread 14 there all through it with no event.
fn window() -> Window {
    let attached = |tid: u32, stack: &[&str], through: bool| Attached {
        pid: 100,
        tid,
        comm: format!("t{tid}"),
        kernel_stack: stack.iter().map(|s| s.to_string()).collect(),
        through,
    };
    Window {
        start: MS / 2,
        end: 10 * MS,
        threads: vec![
            attached(10, &[], true),
            attached(11, &[], true),
            attached(12, &[], true),
            attached(13, &["do_nanosleep", "hrtimer_nanosleep"], true),
            attached(14, &["pipe_read"], true),
        ],
    }
}

/// The names of the frames of `s`, a sample of `p`, leaf first.
fn frame_names<'a>(p: &'a Profile, s: &Sample) -> Vec<&'a str> {
    s.stack
        .iter()
        .map(|&f| p.frames[f as usize].name())
        .collect()
}

#[test]
fn waits_at_the_window_edges_become_samples() {
    let sw = collected(SwitchFormat::parse(OTHER_FORMAT));
    let w = window();
    // Thread 13's first event is the switch-in at 4.2 ms after a switch-out at 4 ms:
    // that one pairs; nothing of it was in progress at the start.
    let p = Plan::within(sw.clone(), 1, false, &w).apply(samples());
    let got: Vec<(u32, &str, u64, Vec<&str>)> = p
        .samples
        .iter()
        .map(|s| (s.tid, p.comm(s), s.period, frame_names(&p, s)))
        .collect();
    assert_eq!(
        got,
        [
            // In file order: 10, 50 µs until 11 hands over; 11 from its hand-over at
            // 1.05 ms to the end; 10 from 2 ms to the end; 12 and 13 as before.
            (10, "app", 50, vec!["wait"]),
            (11, "app", 8950, vec!["wait"]),
            (10, "app", 8000, vec!["wait"]),
            (12, "app", 300, vec!["wait"]),
            (13, "app", 200, vec!["wait"]),
            // 11 was handed the CPU at 1 ms, its first event: off CPU since the start.
            (11, "t11", 500, vec![BLOCKED_AT_START]),
            // 14: no event, off CPU all window, on its /proc stack.
            (14, "t14", 9500, vec!["pipe_read", BLOCKED_AT_START]),
        ]
    );
    let kernel = p.samples[6].stack[0] as usize;
    assert_eq!(p.frames[kernel].kind, FrameKind::Kernel);
    // With --wall, the added wait ends in [off] too; and --min-block applies to it.
    let p = Plan::within(sw.clone(), 1, true, &w).apply(samples());
    let last = p.samples.last().unwrap();
    assert_eq!(p.frames[last.stack[0] as usize].name(), "[off]");
    assert_eq!(last.event, 0);
    let p = Plan::within(sw, 9000, false, &w).apply(samples());
    let tids: Vec<u32> = p.samples.iter().map(|s| s.tid).collect();
    assert_eq!(tids, [14]);
}

#[test]
fn a_switch_in_first_is_a_wait_since_the_start() {
    // Thread 13 only switches in at 4.2 ms: off CPU since the window opened at 0.5 ms,
    // on the stack read then; the same without the window counts nothing.
    let dec = Decoder::new(&attrs());
    let mut c = Collector::new(0, SwitchFormat::parse(OTHER_FORMAT));
    c.add(&dec.decode(&switch_in(13, 4 * MS + 200_000), 0).unwrap());
    let sw = c.finish();
    let mut w = window();
    w.threads.retain(|t| t.tid == 13);
    w.threads[0].through = false;
    let p = Plan::within(sw.clone(), 1, false, &w).apply(profile_of(&[]));
    let got: Vec<(u32, u64, Vec<&str>)> = p
        .samples
        .iter()
        .map(|s| (s.tid, s.period, frame_names(&p, s)))
        .collect();
    assert_eq!(
        got,
        [(
            13,
            3700,
            vec!["do_nanosleep", "hrtimer_nanosleep", BLOCKED_AT_START]
        )]
    );
    assert_eq!(p.comm(&p.samples[0]), "t13");
    assert!(
        Plan::new(sw, 1, false)
            .apply(profile_of(&[]))
            .samples
            .is_empty()
    );
}

/// Each sample finds its block by its thread and time, not by its number: the samples
/// handed over in another order (a replay by time over rings written one by one) weigh
/// the same; a sample the record pass did not see weighs nothing.
#[test]
fn samples_find_their_blocks_in_any_order() {
    let sw = collected(SwitchFormat::parse(OTHER_FORMAT));
    let mut reversed = samples();
    reversed.samples.reverse();
    reversed
        .samples
        .insert(2, profile_of(&[(0, 99, MS, 1)]).samples[0].clone());
    let p = Plan::new(sw, 1, true).apply(reversed);
    let got: Vec<(u32, u64)> = p.samples.iter().map(|s| (s.tid, s.period)).collect();
    assert_eq!(got, [(13, 200), (12, 250), (12, 300), (10, 50)]);
}

/// Two switch-outs of one thread at one time (no key tells them apart) take their
/// blocks in file order: the first ends at once (0 µs, left out), the second at the
/// thread's switch-in.
#[test]
fn switch_outs_at_one_time_take_their_blocks_in_file_order() {
    let dec = Decoder::new(&attrs());
    let mut c = Collector::new(0, SwitchFormat::parse(OTHER_FORMAT));
    let recs = [
        sample_rec(SWITCH_ID, 10, MS, Some(&other_raw(10, 0, 1))),
        sample_rec(SWITCH_ID, 10, MS, Some(&other_raw(10, 0, 1))),
        switch_in(10, MS + 70_000),
    ];
    for (i, r) in recs.iter().enumerate() {
        c.add(&dec.decode(r, i as u64 * 64).unwrap());
    }
    let mut two = profile_of(&[(0, 10, MS, 1), (0, 10, MS, 1)]);
    two.samples[1].cpu = Some(1);
    let p = Plan::new(c.finish(), 1, false).apply(two);
    let got: Vec<(Option<u32>, u64)> = p.samples.iter().map(|s| (s.cpu, s.period)).collect();
    assert_eq!(got, [(Some(1), 70)]);
}

/// Blocks summed in the kernel (`offcpu-time`): each sample weighs its period in µs,
/// sums under 1 µs are left out, the other events' samples count only with `wall`;
/// the waits in progress at the window's start come in under `[blocked at start]`.
#[test]
fn summed_blocks_weigh_their_period() {
    let mut p = Plan::summed(1, false, Vec::new(), None);
    assert_eq!(p.reweigh(1, 7, 0, 2_500_000), Some((Plan::OFF_EVENT, 2500)));
    assert_eq!(p.reweigh(1, 7, 0, 2_500_000), Some((Plan::OFF_EVENT, 2500)));
    assert_eq!(p.reweigh(1, 7, 0, 999), None);
    assert_eq!(p.reweigh(0, 7, 0, 250_000), None);
    let mut wall = Plan::summed(1, true, vec![(9, 40)], None);
    assert_eq!(wall.reweigh(0, 7, 0, 250_000), Some((Plan::ON_EVENT, 250)));
    let tagged = wall.tag(profile_of(&[]));
    let early: Vec<_> = tagged.samples.iter().map(|s| (s.tid, s.period)).collect();
    assert_eq!(early, [(9, 40)]);
}
