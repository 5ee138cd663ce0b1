// dwarf_chain.rs: main -> outer -> middle -> leaf in Rust, built by tests/dwarf.rs with
// `rustc -O -C force-frame-pointers=no -C debuginfo=1`: a release build without frame
// pointers, where only the unwind tables find the callers.
use std::hint::black_box;

#[inline(never)]
fn leaf(n: u64) -> u64 {
    let mut s = 0u64;
    for i in 0..n {
        s = s.wrapping_add(black_box(i).wrapping_mul(i));
    }
    s
}

#[inline(never)]
fn middle(n: u64) -> u64 {
    black_box(leaf(black_box(n))).wrapping_add(1)
}

#[inline(never)]
fn outer(n: u64) -> u64 {
    black_box(middle(black_box(n))).wrapping_add(1)
}

fn main() {
    let tenths: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let mut s = 0u64;
    for _ in 0..tenths * 350 {
        s = s.wrapping_add(outer(1_000_000));
    }
    black_box(s);
}
