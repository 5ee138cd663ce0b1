//! Data symbols: the global variable (ELF `STT_OBJECT` symbol) a data address falls in,
//! as `perf mem report` names data addresses (`table+0x2000`).
//!
//! A data address is first placed in a mapping of its process (by the caller, which
//! replays the recording's MMAP records): that gives the file and the file offset, as
//! for code ([`crate::Module::File`]). Here the offset goes back to a virtual address
//! through the file's `PT_LOAD` segments, and the symbol table says which object covers
//! it. The file is found as code's files are ([`Locator`]: perf's build-id cache, the
//! symfs, the recorded path, debuginfod), and its separate debug file is tried when the
//! file itself names nothing there (a stripped binary). Each file is read once; a file
//! that cannot be read or parsed names nothing.

use rustc_hash::FxHashMap as HashMap;

use crate::buildid::BuildId;
use crate::locate::Locator;

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

/// The data symbols of one file.
#[derive(Debug, Default)]
struct FileSyms {
    /// (file offset, file size, vaddr) of each loaded segment.
    segments: Vec<(u64, u64, u64)>,
    /// (start vaddr, size, name), sorted by start.
    symbols: Vec<(u64, u64, String)>,
}

/// Data symbols of the files a recording maps, read on first use.
#[derive(Debug)]
pub struct DataSymbols {
    locator: Locator,
    /// Per recorded path: the executable's symbols, then the debug file's.
    files: HashMap<String, Vec<FileSyms>>,
}

impl DataSymbols {
    /// An empty cache that finds files with `locator`.
    pub fn new(locator: Locator) -> DataSymbols {
        DataSymbols {
            locator,
            files: HashMap::default(),
        }
    }

    /// The data symbol covering file offset `offset` of the file mapped from `path`
    /// (whose build id the recording says is `build_id`), and the offset in it:
    /// `("table", 0x2000)`. `None` when no file is found or readable, or no object
    /// symbol covers the address.
    pub fn lookup(
        &mut self,
        path: &str,
        build_id: Option<&BuildId>,
        offset: u64,
    ) -> Option<(&str, u64)> {
        if !self.files.contains_key(path) {
            let exe = self.locator.executable(path, build_id);
            let mut found: Vec<FileSyms> = exe.iter().filter_map(|p| read(p)).collect();
            if let Some(debug) = self.locator.debug_file(path, build_id)
                && Some(&debug) != exe.as_ref()
                && let Some(f) = read(&debug)
            {
                found.push(f);
            }
            self.files.insert(path.to_string(), found);
        }
        self.files.get(path)?.iter().find_map(|f| f.lookup(offset))
    }
}

impl FileSyms {
    fn lookup(&self, offset: u64) -> Option<(&str, u64)> {
        let vaddr = self
            .segments
            .iter()
            .find(|&&(off, size, _)| offset >= off && offset - off < size)
            .map(|&(off, _, vaddr)| vaddr + (offset - off))?;
        let i = self
            .symbols
            .partition_point(|&(start, _, _)| start <= vaddr);
        let (start, size, name) = self.symbols.get(i.checked_sub(1)?)?;
        (vaddr - start < (*size).max(1)).then(|| (name.as_str(), vaddr - start))
    }
}

fn read(path: &std::path::Path) -> Option<FileSyms> {
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    let segments = file
        .segments()
        .map(|s| {
            let (off, size) = s.file_range();
            (off, size, s.address())
        })
        .filter(|&(_, size, _)| size > 0)
        .collect();
    let mut symbols: Vec<(u64, u64, String)> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Data && s.address() != 0)
        .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
        .collect();
    symbols.sort();
    symbols.dedup_by_key(|s| s.0);
    Some(FileSyms { segments, symbols })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreadable_files_name_nothing() {
        let mut d = DataSymbols::new(Locator::from_env(None));
        assert_eq!(d.lookup("/nonexistent/hwprof-datasym", None, 0x1000), None);
        // The test binary itself has data symbols, but offset u64::MAX is in no segment.
        let me = std::env::current_exe().unwrap();
        assert_eq!(d.lookup(me.to_str().unwrap(), None, u64::MAX), None);
    }
}
