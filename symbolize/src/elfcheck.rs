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
//! That inflation is not wasted: a file that links to no other (no `.gnu_debuglink`,
//! `.gnu_debugaltlink`, `.debug_sup` or `FILE.dwp` beside it, which blazesym would look
//! up from its path) is inflated into a sealed in-memory copy (`memfd`) whose compressed
//! sections are plain ones, and blazesym reads that copy ([`inflated`]) instead of
//! inflating the file a second time: the DWARF of libc6-dbg's libc, read for one
//! `script` of a 950k-sample recording, cost 80 ms of inflating less (the script's wall
//! time 0.21 → 0.18 s). The copy holds what blazesym would have held inflated; it lives
//! as long as the process. A file with links is checked into nothing, as before.
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
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

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

/// A file that passed: `None` to be read as it is, or its [`Inflated`] copy.
type Verdict = Result<Option<Arc<Inflated>>, Rejected>;

fn memo() -> &'static Mutex<HashMap<Key, Verdict>> {
    static MEMO: OnceLock<Mutex<HashMap<Key, Verdict>>> = OnceLock::new();
    MEMO.get_or_init(|| Mutex::new(HashMap::new()))
}

/// A checked file's copy with its zlib sections inflated, in a sealed `memfd` (see the
/// [module docs](self)), open for the process's life.
#[derive(Debug)]
pub(crate) struct Inflated {
    /// Keeps the copy open.
    _file: File,
    /// `/proc/self/fd/N`: the copy, for a reader that opens a path.
    path: PathBuf,
}

/// Whether the ELF file at `path` is within the bounds of the [module docs](self). A
/// file that is not ELF (or not a regular file: it is never opened) passes: readers
/// reject it on their own, allocating nothing. Answers are remembered per file (device,
/// inode, size, modification time) for the process.
pub fn check(path: &Path) -> Result<(), Rejected> {
    verdict(path).map(|_| ())
}

/// The path of the inflated copy of the file at `path` to hand blazesym instead of it
/// (see the [module docs](self)), when the file passes [`check`], has zlib sections and
/// links to no other file; `None`: read the file itself.
pub(crate) fn inflated(path: &Path) -> Option<PathBuf> {
    verdict(path).ok().flatten().map(|i| i.path.clone())
}

fn verdict(path: &Path) -> Verdict {
    let Ok((file, meta)) = hwprof_pmu::file::open(path) else {
        return Ok(None);
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
    let mut dwp = path.as_os_str().to_os_string();
    dwp.push(".dwp");
    let links = Path::new(&dwp).symlink_metadata().is_ok();
    let r = examine(file, meta.size(), links);
    settle(
        &mut memo().lock().unwrap_or_else(PoisonError::into_inner),
        key,
        r,
    )
}

/// The answer for `key`: the one already in `memo` when another thread examined the
/// file meanwhile, else `r`, kept. The first stays, so that every path handed out names
/// a copy the memo keeps open for good (a copy dropped would free its fd number for
/// another file, which blazesym would then read).
fn settle(memo: &mut HashMap<Key, Verdict>, key: Key, r: Verdict) -> Verdict {
    memo.entry(key).or_insert(r).clone()
}

/// [`check`] of an open file of `size` bytes, without the memo.
#[cfg(test)]
pub(crate) fn check_file(file: File, size: u64) -> Result<(), Rejected> {
    examine(file, size, true).map(|_| ())
}

/// The checks of an open file of `size` bytes, and its inflated copy when it has zlib
/// sections and neither it (`links`: a `.dwp` is beside it) nor its sections link to
/// another file.
fn examine(file: File, size: u64, links: bool) -> Verdict {
    let reader = file.try_clone().map_err(|e| Rejected::Io(e.to_string()))?;
    let cache = ReadCache::new(file);
    let layout = match FileKind::parse(&cache) {
        Ok(FileKind::Elf32) => sections::<object::elf::FileHeader32<Endianness>>(&cache, size)?,
        Ok(FileKind::Elf64) => sections::<object::elf::FileHeader64<Endianness>>(&cache, size)?,
        _ => return Ok(None),
    };
    if layout.zlib.is_empty() {
        return Ok(None);
    }
    let mut copy = (!links && !layout.links)
        .then(|| Copy::start(&reader, size))
        .flatten();
    for z in &layout.zlib {
        match &mut copy {
            Some(c) => {
                if !c.add(&reader, z)? {
                    copy = None;
                }
            }
            // Checked only: a corrupt or short stream is the readers' to stop at.
            None => {
                let _ = inflate(&reader, z, &mut io::sink())?;
            }
        }
    }
    Ok(copy.and_then(|c| c.finish(&layout)).map(Arc::new))
}

/// A zlib-compressed section to inflate: its stream's place in the file and its claim,
/// where its section header is and the alignment its compression header gives.
struct Zlib {
    name: String,
    offset: u64,
    compressed: u64,
    claimed: u64,
    header: u64,
    flags: u64,
    align: u64,
}

/// What [`sections`] finds: the zlib sections, whether a section links to another
/// file, and how section headers are written.
struct Layout {
    zlib: Vec<Zlib>,
    links: bool,
    elf64: bool,
    big_endian: bool,
}

/// Sections that name another file blazesym opens from the file's path.
const LINKS: [&[u8]; 3] = [b".gnu_debuglink", b".gnu_debugaltlink", b".debug_sup"];

/// The header checks of every section; the zlib sections to inflate.
fn sections<Elf: FileHeader<Endian = Endianness>>(
    data: &ReadCache<File>,
    size: u64,
) -> Result<Layout, Rejected> {
    let bad = |e: object::read::Error| Rejected::Headers(e.to_string());
    let header = Elf::parse(data).map_err(bad)?;
    let endian = header.endian().map_err(bad)?;
    let table = header.sections(endian, data).map_err(bad)?;
    let shoff: u64 = header.e_shoff(endian).into();
    let shentsize = u64::from(header.e_shentsize(endian));
    let mut zlib = Vec::new();
    let mut links = false;
    let mut total: u64 = 0;
    for (index, s) in table.iter().enumerate() {
        let raw_name = table.section_name(endian, s).unwrap_or_default();
        let name = || match raw_name {
            [] => "[unnamed]".to_string(),
            n => String::from_utf8_lossy(n).into_owned(),
        };
        links |= LINKS.contains(&raw_name);
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
                header: shoff.saturating_add(shentsize.saturating_mul(index as u64)),
                flags: s.sh_flags(endian).0,
                align: chdr.ch_addralign(endian).into(),
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
    Ok(Layout {
        zlib,
        links,
        elf64: header.is_class_64(),
        big_endian: endian == Endianness::Big,
    })
}

/// Inflates section `z` into `out`, one byte past its claim at most: more is a lie.
/// `Ok(Ok(n))`: the stream ended cleanly after `n` bytes (at most the claim);
/// `Ok(Err(()))`: it is corrupt, ends early or `out` failed, which is left to the
/// readers (they stop there, within the claim).
fn inflate(file: &File, z: &Zlib, out: &mut dyn Write) -> Result<Result<u64, ()>, Rejected> {
    let range = Range {
        file,
        pos: z.offset,
        end: z.offset.saturating_add(z.compressed),
    };
    let raw = io::BufReader::with_capacity(64 << 10, range);
    let mut inflate = flate2::bufread::ZlibDecoder::new(raw).take(z.claimed.saturating_add(1));
    let mut buf = vec![0u8; 64 << 10];
    let mut n: u64 = 0;
    let mut clean = true;
    loop {
        match inflate.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => {
                n += k as u64;
                if n <= z.claimed && clean {
                    clean = out.write_all(&buf[..k]).is_ok();
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => {
                clean = false;
                break;
            }
        }
    }
    if n > z.claimed {
        return Err(Rejected::Inflates {
            section: z.name.clone(),
            claimed: z.claimed,
        });
    }
    Ok(if clean { Ok(n) } else { Err(()) })
}

/// An inflated copy in the making: the file's bytes, then each section inflated.
struct Copy {
    out: io::BufWriter<File>,
    /// Where the copy ends.
    end: u64,
    /// Each zlib section's place in the copy: offset, size (in `Layout::zlib`'s order).
    placed: Vec<(u64, u64)>,
}

impl Copy {
    /// A sealable `memfd` holding the `size` bytes of `file`; `None` when one cannot be
    /// made (or the file is no longer that long).
    fn start(file: &File, size: u64) -> Option<Copy> {
        use rustix::fs::MemfdFlags;
        let fd = rustix::fs::memfd_create(
            "hwprof-inflated",
            MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
        )
        .ok()?;
        let mut mem = File::from(fd);
        let mut src = file.try_clone().ok()?;
        io::Seek::rewind(&mut src).ok()?;
        let end = io::copy(&mut src, &mut mem).ok().filter(|&n| n == size)?;
        Some(Copy {
            out: io::BufWriter::with_capacity(256 << 10, mem),
            end,
            placed: Vec::new(),
        })
    }

    /// Inflates section `z` of `file` onto the end of the copy (checked as
    /// [`inflate`] checks it); `false` when the copy cannot hold it (a write failed, or
    /// the stream is corrupt or short: left to the readers, and the copy given up).
    fn add(&mut self, file: &File, z: &Zlib) -> Result<bool, Rejected> {
        let Ok(at) = self.align(z.align) else {
            let _ = inflate(file, z, &mut io::sink())?;
            return Ok(false);
        };
        if inflate(file, z, &mut self.out)? != Ok(z.claimed) {
            return Ok(false);
        }
        self.placed.push((at, z.claimed));
        self.end = at + z.claimed;
        Ok(true)
    }

    /// Pads the copy to a multiple of `align` (8 when the header's is not a power of
    /// two up to 4096); where the next section starts.
    fn align(&mut self, align: u64) -> io::Result<u64> {
        let a = if align.is_power_of_two() && align <= 4096 {
            align
        } else {
            8
        };
        let pad = self.end.next_multiple_of(a) - self.end;
        self.out.write_all(&[0; 4096][..pad as usize])?;
        self.end += pad;
        Ok(self.end)
    }

    /// The copy with each section's header pointing at its inflated bytes (no longer
    /// `SHF_COMPRESSED`) and the compressed bytes freed (a hole), sealed; `None` when
    /// it cannot be written, an offset does not fit an ELF32 file, or `/proc/self/fd`
    /// does not reach it.
    fn finish(self, layout: &Layout) -> Option<Inflated> {
        use rustix::fs::FallocateFlags;
        let mem = self.out.into_inner().ok()?;
        for (z, &(at, size)) in layout.zlib.iter().zip(&self.placed) {
            for (offset, bytes) in header_fields(layout, z, at, size)? {
                mem.write_all_at(&bytes, z.header.checked_add(offset)?)
                    .ok()?;
            }
            // Nothing reads the stream in the copy: its memory is given back (reads
            // of a hole give zeros). Only an optimization, so a failure is no matter.
            let _ = rustix::fs::fallocate(
                &mem,
                FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE,
                z.offset,
                z.compressed,
            );
        }
        use rustix::fs::SealFlags;
        rustix::fs::fcntl_add_seals(
            &mem,
            SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE | SealFlags::SEAL,
        )
        .ok()?;
        let path = PathBuf::from(format!("/proc/self/fd/{}", mem.as_raw_fd()));
        let (there, own) = (std::fs::metadata(&path).ok()?, mem.metadata().ok()?);
        (there.dev() == own.dev() && there.ino() == own.ino())
            .then_some(Inflated { _file: mem, path })
    }
}

/// The fields of zlib section `z`'s header to write (offset in the header, bytes in
/// the file's byte order) once it is inflated at `at`, `size` bytes: `sh_flags` without
/// `SHF_COMPRESSED`, `sh_offset`, `sh_size`, and `sh_addralign` from its compression
/// header. `None` when a value does not fit an ELF32 field.
fn header_fields(layout: &Layout, z: &Zlib, at: u64, size: u64) -> Option<Vec<(u64, Vec<u8>)>> {
    let flags = z.flags & !SHF_COMPRESSED.0;
    let align = z.align.max(1);
    // Elf64_Shdr: sh_flags at 8, sh_offset 24, sh_size 32, sh_addralign 48 (8 bytes
    // each); Elf32_Shdr: 8, 16, 20, 32 (4 bytes each).
    let fields = if layout.elf64 {
        [(8, flags), (24, at), (32, size), (48, align)]
    } else {
        [(8, flags), (16, at), (20, size), (32, align)]
    };
    fields
        .into_iter()
        .map(|(offset, v)| {
            let bytes = match (layout.elf64, layout.big_endian) {
                (true, false) => v.to_le_bytes().to_vec(),
                (true, true) => v.to_be_bytes().to_vec(),
                (false, false) => u32::try_from(v).ok()?.to_le_bytes().to_vec(),
                (false, true) => u32::try_from(v).ok()?.to_be_bytes().to_vec(),
            };
            Some((offset, bytes))
        })
        .collect()
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

    /// The program of [`program`] with its debug sections compressed (`-gz=zlib`).
    fn compressed_program(dir: &Path) -> Option<PathBuf> {
        let c = dir.join("z.c");
        std::fs::write(&c, "static int f(int x) { return x * 3; }\nint main(int c, char **v) { (void)v; return f(c); }\n").unwrap();
        let exe = dir.join("z");
        hwprof_testkit::compile_c(&c, &exe, &["-g", "-O1", "-gz=zlib"]).then_some(exe)
    }

    /// Each section's name, flags and (uncompressed) bytes.
    fn section_bytes(bytes: &[u8]) -> Vec<(String, bool, Vec<u8>)> {
        use object::{Object, ObjectSection};
        let o = object::File::parse(bytes).unwrap();
        o.sections()
            .map(|s| {
                let compressed = matches!(
                    s.flags(),
                    object::SectionFlags::Elf { sh_flags, .. } if sh_flags.contains(SHF_COMPRESSED)
                );
                let c = s.compressed_data().unwrap();
                let data = match c.format {
                    object::CompressionFormat::Zlib => {
                        let mut v = Vec::new();
                        flate2::read::ZlibDecoder::new(c.data)
                            .read_to_end(&mut v)
                            .unwrap();
                        v
                    }
                    _ => c.data.to_vec(),
                };
                (s.name().unwrap().to_string(), compressed, data)
            })
            .collect()
    }

    #[test]
    fn a_file_with_zlib_sections_is_read_from_its_sealed_inflated_copy() {
        let d = std::env::temp_dir().join(format!("hwprof-elfcheck-copy-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let Some(exe) = compressed_program(&d) else {
            return;
        };
        let original = std::fs::read(&exe).unwrap();
        let before = section_bytes(&original);
        assert!(
            before.iter().any(|(n, z, _)| n == ".debug_info" && *z),
            "cc -gz=zlib compressed no .debug_info"
        );
        let copy = inflated(&exe).expect("an inflated copy");
        assert_eq!(inflated(&exe), Some(copy.clone()), "made once per file");
        // Examined by two threads at once: the second's copy is dropped, the first's
        // is what both get (and stays open).
        let first = examine(File::open(&exe).unwrap(), original.len() as u64, false);
        let second = examine(File::open(&exe).unwrap(), original.len() as u64, false);
        let path = |v: &Verdict| v.clone().ok().flatten().map(|i| i.path.clone());
        assert_ne!(path(&first), path(&second), "two examinations, two copies");
        let mut memo = HashMap::new();
        let key = (0, 0, 0, 0, 0);
        let a = settle(&mut memo, key, first.clone());
        let b = settle(&mut memo, key, second);
        assert_eq!(path(&a), path(&first));
        assert_eq!(path(&b), path(&first), "the second caller got its own copy");
        let after = section_bytes(&std::fs::read(&copy).unwrap());
        assert_eq!(after.len(), before.len());
        for ((n, _, a), (m, z, b)) in before.iter().zip(&after) {
            assert_eq!(n, m);
            assert!(!z, "{m} is still compressed in the copy");
            assert!(a == b, "{m} differs in the copy");
        }
        // Sealed: nothing changes it.
        let w = std::fs::OpenOptions::new().write(true).open(&copy);
        assert!(
            w.and_then(|mut f| f.write_all(b"x")).is_err(),
            "the copy can be written"
        );
        // A file with no compressed section, or one linking to another file, is read
        // as it is (and still checked).
        let plain = d.join("plain");
        std::fs::write(&plain, program(&d).unwrap()).unwrap();
        assert_eq!(inflated(&plain), None);
        let linked = d.join("linked");
        let ok = std::process::Command::new("objcopy")
            .arg("--add-gnu-debuglink")
            .arg(&plain)
            .arg(&exe)
            .arg(&linked)
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "objcopy --add-gnu-debuglink failed (binutils: .ci/run installs it)"
        );
        assert_eq!(check(&linked), Ok(()));
        assert_eq!(inflated(&linked), None);
        let beside = d.join("beside");
        std::fs::copy(&exe, &beside).unwrap();
        std::fs::write(d.join("beside.dwp"), b"").unwrap();
        assert_eq!(inflated(&beside), None, "a .dwp beside it");
        // A stream that ends early is the readers' to stop at; no copy.
        use hwprof_testkit::elf::{with_compressed_section, zlib};
        let short = d.join("short");
        let text = b"abc".repeat(100);
        std::fs::write(
            &short,
            with_compressed_section(&original, ".debug_str", 1000, &zlib(&text)),
        )
        .unwrap();
        assert_eq!(check(&short), Ok(()));
        assert_eq!(inflated(&short), None);
        let _ = std::fs::remove_dir_all(&d);
    }
}
