//! libFuzzer target: bytes -> the perf.data reader (file and pipe mode) or the record
//! decoder with attrs from the input, every field of every record read, every property
//! of `tests/fuzzing` checked (no panic, errors naming an offset inside the input, peak
//! heap bounded by the input's size, bounded time). Half of the mutations are
//! structure-aware (`tests/fuzzing/mutate.rs`, splicing records of the seeds in
//! `fuzz/seeds` and `../shared/fixtures/perfdata`), half are libFuzzer's own.

#![no_main]

#[path = "../../tests/fuzzing/mod.rs"]
mod fuzzing;

use std::path::Path;
use std::sync::OnceLock;

use libfuzzer_sys::{fuzz_mutator, fuzz_target};

fuzz_target!(|data: &[u8]| {
    fuzzing::fuzz_one(data);
});

/// Seeds whose records the structure-aware mutator splices into inputs.
fn donors() -> &'static [fuzzing::mutate::Seed] {
    static DONORS: OnceLock<Vec<fuzzing::mutate::Seed>> = OnceLock::new();
    DONORS.get_or_init(|| {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut v = Vec::new();
        for dir in [here.join("seeds"), here.join("../../shared/fixtures/perfdata")] {
            v.extend(fuzzing::campaign::seeds_in(&dir).unwrap_or_default());
        }
        v
    })
}

fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    if seed % 2 == 0 {
        return libfuzzer_sys::fuzzer_mutate(data, size, max_size);
    }
    let out = fuzzing::mutate::structured(&data[..size], u64::from(seed), donors());
    let n = out.len().min(max_size);
    data[..n].copy_from_slice(&out[..n]);
    n
});
