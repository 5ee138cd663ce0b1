//! The unwind tables of one ELF file, read once and shared (by `Arc`) by every process
//! that maps it: `.eh_frame` and `.eh_frame_hdr` from the file holding the code, and
//! `.debug_frame` from it or from its separate debug file, with the program headers that
//! turn a mapping's file offset into the file's own addresses (SVMAs).

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use object::read::ReadCache;
use object::{Object, ObjectSection, ObjectSegment};

/// Section bytes shared between modules (framehop wants `Deref<Target = [u8]>`).
#[derive(Clone, Debug, Default)]
pub struct Bytes(Arc<[u8]>);

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// One section: its stated address range and its bytes.
#[derive(Clone, Debug)]
pub(crate) struct Section {
    pub svma: std::ops::Range<u64>,
    pub data: Bytes,
}

/// A `PT_LOAD` segment: file offset, stated address, size in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Load {
    offset: u64,
    vaddr: u64,
    filesz: u64,
}

/// What unwinding needs of one file.
#[derive(Debug, Default)]
pub struct FileData {
    /// The file the code was read from (for the sigreturn check).
    code_file: Option<std::fs::File>,
    loads: Vec<Load>,
    pub(crate) eh_frame: Option<Section>,
    pub(crate) eh_frame_hdr: Option<Section>,
    pub(crate) debug_frame: Option<Bytes>,
    pub(crate) text: Option<std::ops::Range<u64>>,
    pub(crate) got: Option<std::ops::Range<u64>>,
    /// The ELF entry point (`e_entry`), where the kernel starts the process: the root
    /// of every stack that reaches it.
    pub(crate) entry: Option<u64>,
    /// Answers of [`FileData::is_x86_64_sigreturn`] by address: one read per distinct
    /// return address, not per frame.
    sigreturn: std::sync::Mutex<rustc_hash::FxHashMap<u64, bool>>,
}

/// Sections larger than this are not read (a corrupt header must not cost the memory).
const MAX_SECTION: u64 = 512 << 20;

fn section_bytes<'d>(s: &object::Section<'d, '_, &'d ReadCache<std::fs::File>>) -> Option<Bytes> {
    if s.size() > MAX_SECTION {
        return None;
    }
    // A NOBITS section (a debug file's copy of .eh_frame) has no bytes.
    let (_, size) = s.file_range()?;
    if size == 0 {
        return None;
    }
    s.data().ok().map(|d| Bytes(Arc::from(d)))
}

fn section<'d>(
    obj: &object::File<'d, &'d ReadCache<std::fs::File>>,
    name: &str,
) -> Option<Section> {
    let s = obj.section_by_name(name)?;
    let data = section_bytes(&s)?;
    Some(Section {
        svma: s.address()..s.address().saturating_add(s.size()),
        data,
    })
}

impl FileData {
    /// Reads the unwind tables of `exe` (the file with the code), taking `.debug_frame`
    /// from `debug` when `exe` has none. `None` when neither can be parsed as ELF or
    /// neither has any unwind table. Only regular files are opened, and only those
    /// within [`crate::elfcheck`]'s bounds (a file that is not is as good as absent).
    pub fn load(exe: Option<&Path>, debug: Option<&Path>) -> Option<FileData> {
        let bounded = |p: &&Path| crate::elfcheck::check(p).is_ok();
        let (exe, debug) = (exe.filter(bounded), debug.filter(bounded));
        let mut out = FileData::default();
        if let Some(exe) = exe
            && let Ok((file, _)) = hwprof_pmu::file::open(exe)
        {
            let code = file.try_clone().ok();
            let cache = ReadCache::new(file);
            if let Ok(obj) = object::File::parse(&cache) {
                out.loads = loads(&obj);
                out.eh_frame = section(&obj, ".eh_frame");
                out.eh_frame_hdr = section(&obj, ".eh_frame_hdr");
                out.debug_frame = section(&obj, ".debug_frame").map(|s| s.data);
                out.text = obj
                    .section_by_name(".text")
                    .map(|s| s.address()..s.address().saturating_add(s.size()));
                out.got = obj
                    .section_by_name(".got")
                    .map(|s| s.address()..s.address().saturating_add(s.size()));
                out.code_file = code;
                out.entry = Some(obj.entry()).filter(|&e| e != 0);
            }
        }
        if out.debug_frame.is_none()
            && let Some(debug) = debug
            && let Ok((file, _)) = hwprof_pmu::file::open(debug)
        {
            let cache = ReadCache::new(file);
            if let Ok(obj) = object::File::parse(&cache) {
                out.debug_frame = section(&obj, ".debug_frame").map(|s| s.data);
                if out.loads.is_empty() {
                    // objcopy --only-keep-debug keeps the program headers.
                    out.loads = loads(&obj);
                }
            }
        }
        let any = out.eh_frame.is_some() || out.debug_frame.is_some();
        (any && !out.loads.is_empty()).then_some(out)
    }

    /// The stated address (SVMA) at file offset `pgoff` of a mapping: through the
    /// `PT_LOAD` segment that maps it.
    ///
    /// A page can hold the end of one segment and the start of the next (lld puts the
    /// read-only data and the code on one page of the file): the segment that starts
    /// on the mapping's first page is the one mapped there, else the one containing it.
    pub(crate) fn svma_of_offset(&self, pgoff: u64) -> Option<u64> {
        let page = |l: &Load| l.offset & !0xfff;
        self.loads
            .iter()
            .find(|l| page(l) == pgoff)
            .or_else(|| {
                self.loads
                    .iter()
                    .find(|l| pgoff >= page(l) && pgoff < l.offset.saturating_add(l.filesz))
            })
            .map(|l| l.vaddr.wrapping_add(pgoff.wrapping_sub(l.offset)))
    }

    /// Whether the code at stated address `svma` is x86-64's `rt_sigreturn` trampoline
    /// (`mov $0xf, %rax; syscall`, glibc's and musl's `__restore_rt`).
    pub(crate) fn is_x86_64_sigreturn(&self, svma: u64) -> bool {
        let mut memo = self.sigreturn.lock().unwrap_or_else(|e| e.into_inner());
        *memo
            .entry(svma)
            .or_insert_with(|| self.read_is_x86_64_sigreturn(svma))
    }

    fn read_is_x86_64_sigreturn(&self, svma: u64) -> bool {
        const CODE: [u8; 9] = [0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05];
        let Some(file) = &self.code_file else {
            return false;
        };
        let Some(off) = self.loads.iter().find_map(|l| {
            (svma >= l.vaddr && svma < l.vaddr.saturating_add(l.filesz))
                .then(|| l.offset + (svma - l.vaddr))
        }) else {
            return false;
        };
        let mut buf = [0u8; 9];
        file.read_exact_at(&mut buf, off).is_ok() && buf == CODE
    }
}

fn loads<'d>(obj: &object::File<'d, &'d ReadCache<std::fs::File>>) -> Vec<Load> {
    obj.segments()
        .map(|s| {
            // object lists PT_LOAD segments only.
            let (offset, filesz) = s.file_range();
            Load {
                offset,
                vaddr: s.address(),
                filesz,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_test_binary_has_unwind_tables() {
        let exe = std::env::current_exe().unwrap();
        let d = FileData::load(Some(&exe), None).expect("a Rust test binary has .eh_frame");
        assert!(d.eh_frame.is_some() && d.eh_frame_hdr.is_some());
        let text = d.text.clone().unwrap();
        // The text's file offset maps back to its address.
        let load = d
            .loads
            .iter()
            .find(|l| text.start >= l.vaddr && text.start < l.vaddr + l.filesz)
            .unwrap();
        let off = load.offset + (text.start - load.vaddr);
        assert_eq!(d.svma_of_offset(off), Some(text.start));
        assert!(!d.is_x86_64_sigreturn(text.start));
    }

    #[test]
    fn a_page_shared_by_two_segments_maps_the_one_starting_there() {
        // lld's layout: read-only data ends and code starts on file page 0x12000.
        let d = FileData {
            loads: vec![
                Load {
                    offset: 0,
                    vaddr: 0,
                    filesz: 0x12a64,
                },
                Load {
                    offset: 0x12a70,
                    vaddr: 0x13a70,
                    filesz: 0x3d030,
                },
            ],
            ..FileData::default()
        };
        assert_eq!(d.svma_of_offset(0x12000), Some(0x13000));
        assert_eq!(d.svma_of_offset(0), Some(0));
        assert_eq!(d.svma_of_offset(0x13000), Some(0x14000));
        assert!(FileData::load(Some(Path::new("/nonexistent/x")), None).is_none());
    }
}
