//! The bound on what an ELF file may make its readers allocate, checked before a file is
//! handed to blazesym (symbols, DWARF) or to the unwinder (framehop over `.eh_frame` and
//! `.debug_frame`).
//!
//! A file is data from anywhere: a debuginfod server, a `--symfs` tree, a build-id cache,
//! a recording's path. blazesym inflates a compressed section (`SHF_COMPRESSED`) into a
//! buffer of the size its `Elf_Chdr` claims, allocated up front, and then inflates until
//! the zlib stream ends, whatever it claimed: a claimed terabyte aborts the process
//! (`memory allocation of 1099511627776 bytes failed`), and a few megabytes of zlib
//! that inflate to gigabytes (zlib's ratio goes to about 1000:1) take that memory. So
//! [`check`] reads the section headers and, for each compressed section, bounds:
//!
//! | what | limit | measured on real files (zlib) |
//! | --- | --- | --- |
//! | claimed size of one section | [`MAX_SECTION`] (4 GiB) | largest 40 MB (hwprof's own debug build) |
//! | claimed size over compressed size, for claims above [`RATIO_FREE`] (16 MiB) | [`MAX_RATIO`] (128×) | 9.2× at most above 1.4 MiB; 33× for a 1.4 MB section, 83× for a 160 KB one (libc6-dbg) |
//! | all claims of the file over its size, above [`FILE_FREE`] (256 MiB) | [`MAX_FILE_RATIO`] (64×) | 13× at most (libc6-dbg), 1.6× (hwprof) |
//! | what the zlib stream really inflates to | the claim | always the claim |
//!
//! The last is checked by inflating each zlib section into nothing (a 64 KiB buffer),
//! stopping one byte past its claim: the only way to know, and bounded by the limits
//! before it. It costs one more inflation of the file's compressed sections, once per
//! file and process ([`check`] remembers): measured 0.08 s for libc6-dbg's libc (10 MB
//! inflated) and 0.45 s for 94 MB of hwprof's own DWARF, on 2 cores under a load of 17
//! where Python's zlib took 1.1 s for the same.
//!
//! Any section but `SHT_NOBITS` must also lie inside the file (readers size their
//! buffers from `sh_size`). Other compression types are not inflated by blazesym as
//! hwprof builds it (only zlib is enabled), and `.zdebug_*`/`.gnu_debugdata` sections
//! are not read at all, so they cost nothing.
//!
//! A file that fails is not used: the locator goes on to its next candidate and says so
//! in a notice ([`crate::Locator::notices`]); addresses in the module then resolve as for
//! a missing file (`[unknown]` frames that name the module).

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::sync::{Mutex, OnceLock, PoisonError};

use object::elf::{ELFCOMPRESS_ZLIB, SHF_COMPRESSED, SHT_NOBITS};
use object::read::ReadCache;
use object::read::elf::{CompressionHeader, FileHeader, SectionHeader};
use object::{Endianness, FileKind};

/// The largest uncompressed size a compressed section may claim: 4 GiB (the reach of
/// 32-bit DWARF offsets).
pub const MAX_SECTION: u64 = 4 << 30;
/// Claims up to this size are not held to [`MAX_RATIO`]: small sections of repeated
/// entries compress far better than DWARF as a whole (83× measured), and a bound this
/// small costs little memory.
pub const RATIO_FREE: u64 = 16 << 20;
/// The largest claimed-to-compressed ratio of a section claiming more than
/// [`RATIO_FREE`].
pub const MAX_RATIO: u64 = 128;
/// All compressed sections of a file may claim this much whatever the file's size.
pub const FILE_FREE: u64 = 256 << 20;
/// Beyond [`FILE_FREE`], all claims of a file together are at most this many times the
/// file's size.
pub const MAX_FILE_RATIO: u64 = 64;

/// Why a file is not read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rejected {
    /// A compressed section claims more than [`MAX_SECTION`].
    #[error(
        "section {section} claims {claimed} bytes uncompressed, more than the {max} \
         bytes hwprof reads in one section"
    )]
    TooLarge {
        /// The section's name.
        section: String,
        /// Its claimed uncompressed size.
        claimed: u64,
        /// [`MAX_SECTION`].
        max: u64,
    },
    /// A compressed section claims too much for its compressed size.
    #[error(
        "section {section} claims {claimed} bytes uncompressed from {compressed} \
         (over {max}x, a zlib bomb)"
    )]
    Ratio {
        /// The section's name.
        section: String,
        /// Its claimed uncompressed size.
        claimed: u64,
        /// Its compressed size.
        compressed: u64,
        /// [`MAX_RATIO`].
        max: u64,
    },
    /// The compressed sections of a file claim too much for its size.
    #[error(
        "its compressed sections claim {claimed} bytes uncompressed in a file of {size} \
         bytes (over {max}x)"
    )]
    FileRatio {
        /// All claims.
        claimed: u64,
        /// The file's size.
        size: u64,
        /// [`MAX_FILE_RATIO`].
        max: u64,
    },
    /// A zlib section inflates to more than it claims.
    #[error("section {section} inflates to more than the {claimed} bytes it claims (a zlib bomb)")]
    Inflates {
        /// The section's name.
        section: String,
        /// Its claimed uncompressed size.
        claimed: u64,
    },
    /// A section's contents lie outside the file.
    #[error("section {section} lies outside the file ({end} > {size} bytes)")]
    OutsideFile {
        /// The section's name.
        section: String,
        /// Where its contents end.
        end: u64,
        /// The file's size.
        size: u64,
    },
    /// The section headers cannot be read.
    #[error("its section headers cannot be read ({0})")]
    Headers(String),
    /// The file could not be read while checking it.
    #[error("it cannot be read ({0})")]
    Io(String),
}

/// A file as it was checked: same device, inode, size and modification time, same
/// answer.
type Key = (u64, u64, u64, i64, i64);

fn memo() -> &'static Mutex<HashMap<Key, Result<(), Rejected>>> {
    static MEMO: OnceLock<Mutex<HashMap<Key, Result<(), Rejected>>>> = OnceLock::new();
    MEMO.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Whether the ELF file at `path` is within the bounds of the [module docs](self). A
/// file that is not ELF (or not a regular file: it is never opened) passes: readers
/// reject it on their own, allocating nothing. Answers are remembered per file (device,
/// inode, size, modification time) for the process.
pub fn check(path: &Path) -> Result<(), Rejected> {
    let Ok((file, meta)) = hwprof_pmu::file::open(path) else {
        return Ok(());
    };
    let key = (
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime(),
        meta.mtime_nsec(),
    );
    if let Some(r) = memo()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
    {
        return r.clone();
    }
    let r = check_file(file, meta.size());
    memo()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(key, r.clone());
    r
}

/// [`check`] of an open file of `size` bytes, without the memo.
pub(crate) fn check_file(file: File, size: u64) -> Result<(), Rejected> {
    let reader = file.try_clone().map_err(|e| Rejected::Io(e.to_string()))?;
    let cache = ReadCache::new(file);
    let zlib = match FileKind::parse(&cache) {
        Ok(FileKind::Elf32) => sections::<object::elf::FileHeader32<Endianness>>(&cache, size)?,
        Ok(FileKind::Elf64) => sections::<object::elf::FileHeader64<Endianness>>(&cache, size)?,
        _ => return Ok(()),
    };
    for z in &zlib {
        inflates_to_claim(&reader, z)?;
    }
    Ok(())
}

/// A zlib-compressed section to inflate: its stream's place in the file and its claim.
struct Zlib {
    name: String,
    offset: u64,
    compressed: u64,
    claimed: u64,
}

/// The header checks of every section; the zlib sections to inflate.
fn sections<Elf: FileHeader<Endian = Endianness>>(
    data: &ReadCache<File>,
    size: u64,
) -> Result<Vec<Zlib>, Rejected> {
    let bad = |e: object::read::Error| Rejected::Headers(e.to_string());
    let header = Elf::parse(data).map_err(bad)?;
    let endian = header.endian().map_err(bad)?;
    let table = header.sections(endian, data).map_err(bad)?;
    let mut zlib = Vec::new();
    let mut total: u64 = 0;
    for s in table.iter() {
        let name = || match table.section_name(endian, s) {
            Ok(n) if !n.is_empty() => String::from_utf8_lossy(n).into_owned(),
            _ => "[unnamed]".to_string(),
        };
        if s.sh_type(endian) == SHT_NOBITS {
            continue;
        }
        let offset: u64 = s.sh_offset(endian).into();
        let len: u64 = s.sh_size(endian).into();
        let end = offset.saturating_add(len);
        if end > size {
            return Err(Rejected::OutsideFile {
                section: name(),
                end,
                size,
            });
        }
        if !s.sh_flags(endian).contains(SHF_COMPRESSED) {
            continue;
        }
        // A header that does not fit is an error for every reader, which then
        // allocates nothing.
        let Ok(Some((chdr, stream, compressed))) = s.compression(endian, data) else {
            continue;
        };
        let claimed: u64 = chdr.ch_size(endian).into();
        if claimed > MAX_SECTION {
            return Err(Rejected::TooLarge {
                section: name(),
                claimed,
                max: MAX_SECTION,
            });
        }
        if claimed > RATIO_FREE && claimed > compressed.saturating_mul(MAX_RATIO) {
            return Err(Rejected::Ratio {
                section: name(),
                claimed,
                compressed,
                max: MAX_RATIO,
            });
        }
        total = total.saturating_add(claimed);
        if chdr.ch_type(endian) == ELFCOMPRESS_ZLIB {
            zlib.push(Zlib {
                name: name(),
                offset: stream,
                compressed,
                claimed,
            });
        }
    }
    if total > FILE_FREE && total > size.saturating_mul(MAX_FILE_RATIO) {
        return Err(Rejected::FileRatio {
            claimed: total,
            size,
            max: MAX_FILE_RATIO,
        });
    }
    Ok(zlib)
}

/// Inflates section `z` into nothing, one byte past its claim at most: more is a lie.
/// A stream that is corrupt or ends early is left to the readers, which stop there
/// (within the claim).
fn inflates_to_claim(file: &File, z: &Zlib) -> Result<(), Rejected> {
    let range = Range {
        file,
        pos: z.offset,
        end: z.offset.saturating_add(z.compressed),
    };
    let raw = io::BufReader::with_capacity(64 << 10, range);
    let mut inflate = flate2::bufread::ZlibDecoder::new(raw).take(z.claimed.saturating_add(1));
    let mut buf = vec![0u8; 64 << 10];
    let mut out: u64 = 0;
    loop {
        match inflate.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if out > z.claimed {
        return Err(Rejected::Inflates {
            section: z.name.clone(),
            claimed: z.claimed,
        });
    }
    Ok(())
}

/// Bytes `pos..end` of a file, read with `pread`.
struct Range<'f> {
    file: &'f File,
    pos: u64,
    end: u64,
}

impl Read for Range<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.end.saturating_sub(self.pos);
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_test_binary_and_non_elf_files_pass() {
        let exe = std::env::current_exe().unwrap();
        assert_eq!(check(&exe), Ok(()));
        assert_eq!(check(Path::new("/nonexistent/x")), Ok(()));
        let d = std::env::temp_dir().join(format!("hwprof-elfcheck-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let text = d.join("text");
        std::fs::write(&text, b"not an ELF file").unwrap();
        assert_eq!(check(&text), Ok(()));
        // A truncated ELF file: its section headers are gone.
        let cut = d.join("cut");
        let bytes = std::fs::read(&exe).unwrap();
        std::fs::write(&cut, &bytes[..4096]).unwrap();
        assert!(
            matches!(check(&cut), Err(Rejected::Headers(_))),
            "{:?}",
            check(&cut)
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A small C program with DWARF, built here.
    fn program(dir: &Path) -> Option<Vec<u8>> {
        let c = dir.join("p.c");
        std::fs::write(&c, "static int f(int x) { return x * 3; }\nint main(int c, char **v) { (void)v; return f(c); }\n").unwrap();
        let exe = dir.join("p");
        hwprof_testkit::compile_c(&c, &exe, &["-g", "-O1"]).then(|| std::fs::read(&exe).unwrap())
    }

    fn check_bytes(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), Rejected> {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        let f = File::open(&p).unwrap();
        check_file(f, bytes.len() as u64)
    }

    #[test]
    fn each_bound_rejects_its_hostile_file() {
        use hwprof_testkit::elf::{with_compressed_section, zlib, zlib_bomb};
        let d = std::env::temp_dir().join(format!("hwprof-elfcheck-bounds-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let Some(good) = program(&d) else {
            return;
        };
        assert_eq!(check_bytes(&d, "good", &good), Ok(()));
        // An honest small compressed section passes.
        let text = b"abcabcabc".repeat(1000);
        let honest = with_compressed_section(&good, ".debug_str", text.len() as u64, &zlib(&text));
        assert_eq!(check_bytes(&d, "honest", &honest), Ok(()));
        let small = zlib(b"x");
        let r = check_bytes(
            &d,
            "tb",
            &with_compressed_section(&good, ".debug_info", 1 << 40, &small),
        );
        assert!(
            matches!(r, Err(Rejected::TooLarge { claimed, .. }) if claimed == 1 << 40),
            "{r:?}"
        );
        // Over RATIO_FREE at about 1000x (zeros): over the ratio, before inflating.
        let stream = zlib_bomb(RATIO_FREE + 1);
        let r = check_bytes(
            &d,
            "ratio",
            &with_compressed_section(&good, ".debug_info", RATIO_FREE + 1, &stream),
        );
        assert!(matches!(r, Err(Rejected::Ratio { .. })), "{r:?}");
        // A claim under RATIO_FREE whatever the ratio, inflating to exactly it: passes.
        let exact =
            with_compressed_section(&good, ".debug_info", RATIO_FREE, &zlib_bomb(RATIO_FREE));
        assert_eq!(check_bytes(&d, "exact", &exact), Ok(()));
        // One byte more than it claims.
        let liar =
            with_compressed_section(&good, ".debug_info", RATIO_FREE, &zlib_bomb(RATIO_FREE + 1));
        let r = check_bytes(&d, "liar", &liar);
        assert!(
            matches!(r, Err(Rejected::Inflates { claimed, .. }) if claimed == RATIO_FREE),
            "{r:?}"
        );
        // Seventeen sections claiming 16 MiB each, every one honest: 272 MiB in a file
        // of about 300 KB is over FILE_FREE and MAX_FILE_RATIO.
        let names = [
            ".debug_info",
            ".debug_abbrev",
            ".debug_line",
            ".debug_str",
            ".debug_aranges",
            ".comment",
            ".symtab",
            ".strtab",
            ".dynamic",
            ".text",
            ".rodata",
            ".data",
            ".eh_frame",
            ".dynsym",
            ".dynstr",
            ".init",
            ".fini",
        ];
        let bomb = zlib_bomb(RATIO_FREE);
        let mut many = good.clone();
        for n in names {
            many = with_compressed_section(&many, n, RATIO_FREE, &bomb);
        }
        let r = check_bytes(&d, "many", &many);
        assert!(
            matches!(r, Err(Rejected::FileRatio { claimed, .. }) if claimed == 17 * RATIO_FREE),
            "{r:?}"
        );
        // A section that says it runs past the end of the file.
        let mut outside = good.clone();
        let shoff = u64::from_le_bytes(outside[0x28..0x30].try_into().unwrap()) as usize;
        let sh = shoff + 64; // section 1
        outside[sh + 32..sh + 40].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let r = check_bytes(&d, "outside", &outside);
        assert!(matches!(r, Err(Rejected::OutsideFile { .. })), "{r:?}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
