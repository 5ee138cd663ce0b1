//! A small profile whose report figures are worked out by hand in the crate's tests:
//! for unit tests here and, with the `fixtures` feature, for the binary's rendering
//! tests (one fixture, not a copy per crate).

use hwprof_pmu::attr::Attr;
use hwprof_symbolize::{EventInfo, Frame, FrameKind, Profile, Sample};

/// A frame of `module` at `off` (a kernel frame in `[kernel.kallsyms]`).
pub fn frame(name: Option<&str>, module: &str, off: u64, inlined: bool) -> Frame {
    Frame {
        function: name.map(str::to_string),
        module: Some(module.to_string()),
        module_offset: off,
        file: None,
        line: None,
        inlined,
        kind: if module == "[kernel.kallsyms]" {
            FrameKind::Kernel
        } else {
            FrameKind::User
        },
    }
}

/// A sample of `pid` (its only thread) standing for one recorded sample.
pub fn sample(event: u32, pid: u32, comm: u32, period: u64, stack: &[u32]) -> Sample {
    Sample {
        event,
        pid,
        tid: pid,
        comm,
        time: None,
        cpu: None,
        period,
        weight: None,
        count: 1,
        stack: stack.to_vec(),
    }
}

/// Frames: 0 hot_a, 1 hot_b, 2 main, 3 __libc_start_call_main, 4 an inlined `step` in
/// hot_a, 5 hot_a at another address, 6 an unresolved kernel address.
pub fn profile() -> Profile {
    Profile {
        events: vec![
            EventInfo {
                name: "cpu-clock".into(),
                attr: Attr::default(),
            },
            EventInfo {
                name: "page-faults".into(),
                attr: Attr::default(),
            },
        ],
        frames: vec![
            frame(Some("hot_a"), "/tmp/two_hot", 0x1196, false),
            frame(Some("hot_b"), "/tmp/two_hot", 0x11cf, false),
            frame(Some("main"), "/tmp/two_hot", 0x1208, false),
            frame(
                Some("__libc_start_call_main"),
                "/usr/lib/libc.so.6",
                0x2724a,
                false,
            ),
            frame(Some("step"), "/tmp/two_hot", 0x11a0, true),
            frame(Some("hot_a"), "/tmp/two_hot", 0x11b0, false),
            frame(None, "[kernel.kallsyms]", 0xffff_ffff_9661_da49, false),
        ],
        comms: vec!["two_hot".into(), "other".into(), "two_hot".into()],
        samples: vec![
            sample(0, 10, 0, 100, &[4, 0, 2, 3]),
            sample(0, 10, 0, 100, &[5, 2, 3]),
            sample(0, 10, 2, 100, &[0, 2, 3]),
            sample(0, 10, 0, 100, &[1, 2, 3]),
            sample(0, 11, 1, 100, &[6]),
            // Recursion: main counted once.
            sample(0, 11, 1, 50, &[2, 2, 3]),
            sample(1, 10, 0, 7, &[1]),
        ],
        lost: 3,
        notices: Vec::new(),
    }
}

/// A profile whose samples each stand for `n` recorded ones (as `symbolize` merges
/// them), and the same profile with every sample repeated `n` times.
pub fn merged_and_repeated(p: &Profile, n: u64) -> (Profile, Profile) {
    let mut merged = p.clone();
    for s in &mut merged.samples {
        s.count = n;
        s.period *= n;
        s.weight = s.weight.map(|w| w * n);
    }
    let mut repeated = p.clone();
    repeated.samples = p
        .samples
        .iter()
        .flat_map(|s| std::iter::repeat_n(s.clone(), n as usize))
        .collect();
    (merged, repeated)
}
