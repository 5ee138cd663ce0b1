//! The fuzz target of the perf.data reader and the record decoder, shared by every run:
//! the bounded run of the normal test suite (`tests/decode_robust.rs`), its long
//! deterministic run (`HWPROF_FUZZ_CASES=N`, release) and the coverage-guided run under
//! `fuzz/` (cargo-fuzz / libFuzzer, which includes this directory with `#[path]`).
//!
//! - [`fuzz_one`] is the one entry: bytes in, every property checked, a panic when one
//!   does not hold. Input that starts with `PERFILE2` goes through the perf.data reader
//!   (file mode, or pipe mode through `PerfData::from_reader`, the `-i -` path) and every
//!   record through the decoder, touching every field; input that starts with
//!   [`DECODER_MAGIC`] gives the decoder its own attrs (any `sample_type`, `read_format`,
//!   `sample_id_all`, `branch_sample_type`, register masks) and then records.
//! - [`model`] reads a perf.data file into attrs, records and features and writes them
//!   back in file mode, pipe mode or decoder-mode input, with the byte positions of every
//!   size and offset field; [`synth`] makes attrs and records of every type that the
//!   seeds do not have; [`mutate`] is the structure-aware mutator built on both.
//! - [`campaign`] runs N cases over a set of seeds, deterministic for a given RNG seed.
//!
//! Properties: no panic; every data error is one line naming a byte offset inside the
//! input (`NotPerfData` / `Unsupported` only when the input does not start with a
//! little-endian `PERFILE2` header); bounded time per input; the peak heap of the case
//! (measured per thread by `allocation-counter`) stays under
//! [`MEM_PER_INPUT_BYTE`] × input length + [`MEM_FIXED`].

#![allow(dead_code)]

pub mod campaign;
pub mod entry;
pub mod model;
pub mod mutate;
pub mod synth;
mod touch;

#[allow(unused_imports)]
pub use entry::{DECODER_MAGIC, MEM_FIXED, MEM_PER_INPUT_BYTE, Mode, Outcome, fuzz_one};

/// Deterministic xorshift64* (the same sequence everywhere, for reproducible campaigns).
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// A generator; seed 0 is replaced by a fixed odd constant.
    pub fn new(seed: u64) -> Rng {
        Rng(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    /// The next value.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.next() % den < num
    }

    /// One element of `v` (which must not be empty).
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}
