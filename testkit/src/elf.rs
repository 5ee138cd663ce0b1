//! Hostile ELF files for tests, made at test time from a real one (nothing big is
//! committed): a section's contents replaced by a zlib-compressed stream
//! (`SHF_COMPRESSED`, an `Elf64_Chdr` claiming any size), and zlib bombs that inflate to
//! gigabytes from a few megabytes, built in milliseconds.

use flate2::{Compress, Compression, FlushCompress};

/// `SHF_COMPRESSED`.
const SHF_COMPRESSED: u64 = 0x800;
/// `ELFCOMPRESS_ZLIB`.
const ELFCOMPRESS_ZLIB: u32 = 1;

fn u16_at(b: &[u8], at: usize) -> usize {
    u16::from_le_bytes([b[at], b[at + 1]]) as usize
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The little-endian ELF64 file `elf` with section `name` (which must exist) made a
/// zlib-compressed section: `zlib` (a zlib stream) behind an `Elf64_Chdr` that claims
/// `claimed` uncompressed bytes. The new contents and a new section header table are
/// appended; everything else stays where it was. Panics on anything but a
/// little-endian ELF64 file with that section (test inputs).
pub fn with_compressed_section(elf: &[u8], name: &str, claimed: u64, zlib: &[u8]) -> Vec<u8> {
    assert!(
        elf.len() > 64 && elf[..4] == *b"\x7fELF" && elf[4] == 2 && elf[5] == 1,
        "not a little-endian ELF64 file"
    );
    let shoff = u64_at(elf, 0x28) as usize;
    let (shentsize, shnum, shstrndx) = (u16_at(elf, 0x3a), u16_at(elf, 0x3c), u16_at(elf, 0x3e));
    let hdr = |i: usize| shoff + i * shentsize;
    let strtab = u64_at(elf, hdr(shstrndx) + 24) as usize;
    let index = (0..shnum)
        .find(|&i| {
            let at = strtab + u32_at(elf, hdr(i)) as usize;
            let end = at + elf[at..].iter().position(|&c| c == 0).unwrap();
            &elf[at..end] == name.as_bytes()
        })
        .unwrap_or_else(|| panic!("no section {name}"));
    let mut out = elf.to_vec();
    out.resize(out.len().next_multiple_of(8), 0);
    let contents = out.len() as u64;
    out.extend_from_slice(&ELFCOMPRESS_ZLIB.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&claimed.to_le_bytes());
    out.extend_from_slice(&1u64.to_le_bytes());
    out.extend_from_slice(zlib);
    let size = out.len() as u64 - contents;
    out.resize(out.len().next_multiple_of(8), 0);
    let table = out.len();
    out.extend_from_slice(&elf[shoff..shoff + shnum * shentsize]);
    let h = table + index * shentsize;
    // sh_type: PROGBITS (a debug file's section may have been NOBITS).
    out[h + 4..h + 8].copy_from_slice(&1u32.to_le_bytes());
    let flags = u64_at(&out, h + 8) | SHF_COMPRESSED;
    out[h + 8..h + 16].copy_from_slice(&flags.to_le_bytes());
    out[h + 24..h + 32].copy_from_slice(&contents.to_le_bytes());
    out[h + 32..h + 40].copy_from_slice(&size.to_le_bytes());
    out[h + 48..h + 56].copy_from_slice(&1u64.to_le_bytes());
    out[0x28..0x30].copy_from_slice(&(table as u64).to_le_bytes());
    out
}

/// `data` as a zlib stream, compressed with the best compression.
pub fn zlib(data: &[u8]) -> Vec<u8> {
    let mut c = Compress::new(Compression::best(), true);
    let mut out = Vec::with_capacity(data.len() / 2 + 64);
    loop {
        let done = c.total_in() as usize;
        out.reserve(data.len() / 2 + 64);
        let status = c
            .compress_vec(&data[done..], &mut out, FlushCompress::Finish)
            .expect("deflate");
        if status == flate2::Status::StreamEnd {
            return out;
        }
    }
}

/// Raw deflate of `data` ending in a full flush: byte-aligned, independent of what came
/// before, so that copies of it may follow one another.
fn full_flushed(data: &[u8]) -> Vec<u8> {
    let mut c = Compress::new(Compression::best(), false);
    let mut out = Vec::new();
    loop {
        out.reserve(data.len() / 256 + 1024);
        let done = c.total_in() as usize;
        c.compress_vec(&data[done..], &mut out, FlushCompress::Full)
            .expect("deflate");
        // The flush is complete once all input is in and output room was left over.
        if c.total_in() as usize == data.len() && out.len() < out.capacity() {
            return out;
        }
    }
}

/// A valid zlib stream that inflates to `n` zero bytes (about `n / 1000` bytes long):
/// copies of one fully flushed megabyte of zeros, a final empty block and the Adler-32
/// of `n` zeros.
pub fn zlib_bomb(n: u64) -> Vec<u8> {
    const CHUNK: u64 = 1 << 20;
    let mut out = vec![0x78, 0xda];
    let block = full_flushed(&vec![0u8; CHUNK as usize]);
    for _ in 0..n / CHUNK {
        out.extend_from_slice(&block);
    }
    if n % CHUNK != 0 {
        out.extend_from_slice(&full_flushed(&vec![0u8; (n % CHUNK) as usize]));
    }
    // A final fixed-Huffman block holding only its end code.
    out.extend_from_slice(&[0x03, 0x00]);
    // Adler-32 of n zeros: a stays 1, b adds 1 per byte.
    let adler = ((n % 65521) << 16) | 1;
    out.extend_from_slice(&(adler as u32).to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn bombs_are_valid_zlib_of_zeros() {
        for n in [0u64, 5, (1 << 20) + 3, 3 << 20] {
            let z = zlib_bomb(n);
            let mut d = flate2::read::ZlibDecoder::new(&z[..]);
            let mut out = Vec::new();
            d.read_to_end(&mut out).expect("a valid stream");
            assert_eq!(out.len() as u64, n);
            assert!(out.iter().all(|&b| b == 0));
        }
        assert!(zlib_bomb(3 << 30).len() < 4 << 20, "3 GiB from under 4 MiB");
        let z = zlib(b"hello hello hello");
        let mut out = String::new();
        flate2::read::ZlibDecoder::new(&z[..])
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, "hello hello hello");
    }
}
