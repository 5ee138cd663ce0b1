//! The unwinder on hostile stacks: garbage, return addresses into real code, words
//! that point into the stack itself, against this test binary's real unwind tables.

use super::*;

/// xorshift64*: deterministic garbage.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// This test binary's code mapped at `start`, as a process would map it.
struct SelfMapped {
    maps: Vec<Mapped>,
    start: u64,
    text: std::ops::Range<u64>,
    svma0: u64,
}

/// The file offset of the page that holds the start of `file`'s `.text`, where a
/// process maps its code (also the stream unwinder's tests).
pub(super) fn text_page_offset(file: &FileData) -> Option<u64> {
    let text = file.text.clone()?;
    (0..1u64 << 24).map(|p| p * 0x1000).find(|&o| {
        file.svma_of_offset(o)
            .is_some_and(|s| s <= text.start && text.start - s < 0x1000)
    })
}

fn self_mapped() -> SelfMapped {
    let exe = std::env::current_exe().unwrap();
    let file = Arc::new(FileData::load(Some(&exe), None).unwrap());
    let text = file.text.clone().unwrap();
    let pgoff = text_page_offset(&file).unwrap_or(0);
    let svma0 = file.svma_of_offset(pgoff).unwrap();
    let start = 0x5555_0000_0000u64;
    let end = start + (text.end - svma0);
    SelfMapped {
        maps: vec![Mapped {
            start,
            end,
            pgoff,
            file: Some(file),
            name: "self".into(),
        }],
        start,
        text,
        svma0,
    }
}

impl SelfMapped {
    /// An address in the mapped code.
    fn code(&self, r: u64) -> u64 {
        self.start + (self.text.start - self.svma0) + r % (self.text.end - self.text.start)
    }
}

/// Where the stacks are.
const SP: u64 = 0x7ff0_0000_0000;

/// What any unwinding of any stack must respect, whatever the stack holds:
/// - every frame but the pc (and, on AArch64, the link register) is a return address
///   the unwinder read from the stack copy, so it is 8 bytes of the copy;
/// - each frame moves the stack pointer up by 8 bytes or more (a return address
///   popped), so a copy of `len` bytes gives at most `len / 8` such frames;
/// - the same stack unwinds to the same frames a second time (with the caches warm).
fn check_invariants(u: &mut Unwinder, maps: &[Mapped], regs: UserRegs, stack: &[u8], what: &str) {
    let mut out = Vec::new();
    let ending = u.unwind(1, 1, || maps.to_vec(), regs, stack, &mut out);
    // Frame pointers in garbage need not be aligned: any 8 bytes of the copy.
    let in_stack = |a: u64| stack.windows(8).any(|w| w == a.to_le_bytes());
    let from_regs = match u.arch() {
        Arch::X86_64 => 1,
        Arch::Aarch64 => 2,
    };
    assert!(
        out.len() <= from_regs + stack.len() / 8,
        "{what}: {} frames from a {}-byte stack",
        out.len(),
        stack.len()
    );
    assert_eq!(
        out.first().map(|f| f.addr),
        Some(regs.pc),
        "{what}: the pc first"
    );
    for (i, f) in out.iter().enumerate().skip(1) {
        let from_lr = u.arch() == Arch::Aarch64 && i == 1 && f.addr == regs.lr;
        assert!(
            from_lr || in_stack(f.addr),
            "{what}: frame {i} ({:#x}) is no word of the stack",
            f.addr
        );
    }
    let mut again = Vec::new();
    let ending2 = u.unwind(1, 1, || maps.to_vec(), regs, stack, &mut again);
    assert_eq!((&out, ending), (&again, ending2), "{what}: not repeatable");
}

/// Stacks of garbage, of return addresses into real code, and of words that point at
/// themselves: every unwinding respects [`check_invariants`], without a panic. Among
/// them, frame-pointer chains planted in the garbage unwind exactly.
#[test]
fn garbage_stacks_end_without_panics_or_runaways() {
    let m = self_mapped();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for arch in [Arch::X86_64, Arch::Aarch64] {
        let mut u = Unwinder::new(arch);
        for i in 0..2000u64 {
            let len = (rng.next() % 8192) as usize & !7;
            let mut stack = vec![0u8; len];
            for w in stack.chunks_exact_mut(8) {
                let v = match (i % 4, rng.next() % 3) {
                    // Return addresses into real code.
                    (0, _) | (1, 0) => m.code(rng.next()),
                    // Pointers into the stack itself (frame chains, loops).
                    (2, _) | (1, 1) => SP + rng.next() % (len as u64 + 16),
                    _ => rng.next(),
                };
                w.copy_from_slice(&v.to_le_bytes());
            }
            let regs = UserRegs {
                pc: if i % 5 == 0 {
                    rng.next()
                } else {
                    m.code(rng.next())
                },
                sp: SP,
                fp: SP + rng.next() % (len as u64 + 64),
                lr: m.code(rng.next()),
            };
            check_invariants(&mut u, &m.maps, regs, &stack, &format!("{arch:?} #{i}"));
            if arch == Arch::X86_64 && len >= 256 {
                planted_chain(&mut u, &m.maps, &mut rng, stack, i);
            }
        }
        // A stack whose every word is the same return address: no progress, no loop.
        let ra = m.code(0x40);
        let stack: Vec<u8> = (0..64).flat_map(|_| ra.to_le_bytes()).collect();
        let regs = UserRegs {
            pc: ra,
            sp: SP,
            fp: SP,
            lr: ra,
        };
        check_invariants(&mut u, &m.maps, regs, &stack, "one address everywhere");
        // A frame pointer that points at itself.
        let mut stack = vec![0u8; 512];
        stack[..8].copy_from_slice(&SP.to_le_bytes());
        stack[8..16].copy_from_slice(&0x1234_5678u64.to_le_bytes());
        let regs = UserRegs {
            pc: 0x4000,
            sp: SP,
            fp: SP,
            lr: 0x4000,
        };
        check_invariants(&mut u, &m.maps, regs, &stack, "a self-loop");
    }
}

/// A frame-pointer chain of outside-any-module return addresses written over the
/// garbage of `stack`, from a pc outside any module: the unwinder follows it exactly.
/// A null frame pointer ends it at its root; one past the stack copy ends it cut short.
fn planted_chain(u: &mut Unwinder, maps: &[Mapped], rng: &mut Rng, mut stack: Vec<u8>, i: u64) {
    let len = stack.len() as u64;
    let mut at = 8 * (rng.next() % 8);
    let mut frames = Vec::new();
    while at + 16 <= len && frames.len() < 20 {
        frames.push(at);
        at += 16 + 8 * (rng.next() % 8);
    }
    let cut = i % 2 == 1;
    let last = if cut {
        SP + len + 8 * (rng.next() % 64)
    } else {
        0
    };
    let mut expect = vec![0x4000u64];
    for (j, &o) in frames.iter().enumerate() {
        let next = frames.get(j + 1).map_or(last, |&n| SP + n);
        let ra = 0x1000_0000 + 16 * (rng.next() % 0x100_0000) + 1;
        let o = o as usize;
        stack[o..o + 8].copy_from_slice(&next.to_le_bytes());
        stack[o + 8..o + 16].copy_from_slice(&ra.to_le_bytes());
        expect.push(ra);
    }
    let regs = UserRegs {
        pc: 0x4000,
        sp: SP,
        fp: SP + frames[0],
        lr: 0,
    };
    let mut out = Vec::new();
    let ending = u.unwind(1, 1, || maps.to_vec(), regs, &stack, &mut out);
    let got: Vec<u64> = out.iter().map(|f| f.addr).collect();
    let end = if cut {
        Ending::Truncated
    } else {
        Ending::Complete
    };
    assert_eq!((got, ending), (expect, end), "planted chain #{i}");
    check_invariants(u, maps, regs, &stack, &format!("planted chain #{i}"));
}

/// A return address just past the ELF entry point (ld.so's `_start`, which has no
/// unwind info, calling `_dl_start`) is the root of its stack.
#[test]
fn a_call_from_the_entry_point_is_the_root() {
    let m = self_mapped();
    let file = m.maps[0].file.clone().unwrap();
    let entry = file.entry.expect("the test binary has an entry point");
    let base = m.start - m.svma0;
    let proc = Proc::build(Arch::X86_64, 1, &m.maps);
    assert!(proc.is_entry_call(base + entry + 8), "entry + 8");
    assert!(proc.is_entry_call(base + entry + 32), "entry + 32");
    assert!(
        !proc.is_entry_call(base + entry),
        "the entry itself is no return address"
    );
    assert!(!proc.is_entry_call(base + entry + 33));
    assert!(!proc.is_entry_call(0x4000), "outside any module");
}
