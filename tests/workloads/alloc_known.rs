// The Rust twin of alloc_known.c (tests/memory_allocs.rs): Rust's default allocator is
// libc's malloc.
use std::hint::black_box;
#[inline(never)]
fn leak_here() {
    for _ in 0..3 {
        let v: Vec<u8> = vec![1u8; 1 << 20];
        black_box(Box::leak(v.into_boxed_slice()));
    }
}
#[inline(never)]
fn churn() {
    for _ in 0..1000 {
        let v: Vec<u8> = Vec::with_capacity(65536);
        black_box(&v);
    }
}
#[inline(never)]
fn grow() {
    let mut b: Vec<u8> = Vec::new();
    for i in 1..=16usize {
        b.reserve_exact(i * 4096 - b.len());
        b.resize(i * 4096, 0);
    }
    black_box(&b);
}
fn main() {
    leak_here();
    churn();
    grow();
}
