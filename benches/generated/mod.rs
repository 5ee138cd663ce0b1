//! The profile the analysis benches share: [`SAMPLES`] samples whose stacks are
//! [`DEPTH`] frames deep over [`FRAMES`] distinct frames ([`PATHS`] distinct call paths,
//! picked with a skew so that a few paths are hot, as in real profiles). Seeded: the same
//! profile on every run.

use hwprof_pmu::attr::Attr;
use hwprof_symbolize::{EventInfo, Frame, FrameKind, Profile, Sample};

/// Samples in the profile.
pub const SAMPLES: usize = 200_000;
/// Frames per stack.
pub const DEPTH: usize = 40;
/// Distinct frames.
pub const FRAMES: usize = 2_000;
/// Distinct call paths.
pub const PATHS: usize = 20_000;

/// A seeded xorshift: the same profile on every run.
pub struct Rng(pub u64);

impl Rng {
    /// The next number.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The profile (see the module docs).
pub fn profile() -> Profile {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let frames: Vec<Frame> = (0..FRAMES)
        .map(|i| Frame {
            function: Some(format!("module_{}::function_number_{i}", i % 37)),
            module: Some("/usr/lib/libbench.so".into()),
            module_offset: i as u64 * 64,
            file: Some(format!("src/file_{}.rs", i % 101)),
            line: Some(i as u32 % 500 + 1),
            inlined: i % 10 == 3,
            kind: if i >= FRAMES - 100 {
                FrameKind::Kernel
            } else {
                FrameKind::User
            },
        })
        .collect();
    // Call paths: a random walk down a tree-like graph (each frame calls a few others).
    let paths: Vec<Vec<u32>> = (0..PATHS)
        .map(|_| {
            let mut f = (rng.next() % 16) as usize;
            let mut root_first = Vec::with_capacity(DEPTH);
            for _ in 0..DEPTH {
                root_first.push(f as u32);
                f = (f * 7 + 1 + (rng.next() % 3) as usize) % FRAMES;
            }
            root_first.reverse(); // stacks are leaf first
            root_first
        })
        .collect();
    let samples = (0..SAMPLES)
        .map(|_| {
            // Skewed: squaring a uniform number makes low-numbered paths hot.
            let u = (rng.next() % 1_000_000) as f64 / 1e6;
            let path = ((u * u) * PATHS as f64) as usize;
            Sample {
                event: 0,
                pid: 1,
                tid: 1,
                comm: 0,
                time: None,
                cpu: None,
                period: 1_000_000 + rng.next() % 1000,
                weight: None,
                count: 1,
                stack: paths[path.min(PATHS - 1)].clone(),
            }
        })
        .collect();
    Profile {
        events: vec![EventInfo {
            name: "cpu-clock".into(),
            attr: Attr::default(),
        }],
        frames,
        comms: vec!["bench".into()],
        samples,
        lost: 0,
        notices: Vec::new(),
    }
}
