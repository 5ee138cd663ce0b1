//! The files blazesym opens on its own when it reads an ELF file's DWARF: the DWARF
//! package `FILE.dwp`, and the targets of `.gnu_debuglink`, `.gnu_debugaltlink` and
//! `.debug_sup`, looked up in the debug directories and next to the file. blazesym
//! opens them with a plain `open()`, which blocks forever on a FIFO and reads whatever
//! a device gives. [`dwarf_is_safe`] lists the paths blazesym may try (the same search
//! as its `DebugFileIter`) and says whether each is absent or a regular file that passes
//! [`crate::elfcheck::check`] (no compressed section that claims or inflates to more
//! than a file can hold); when one is not, the file is symbolized from its ELF symbols
//! only, where blazesym opens nothing else.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use object::read::ReadCache;
use object::{Object, ObjectSection};

use crate::buildid::BuildId;

/// The debug directories blazesym searches (set explicitly on the symbolizer, so that
/// the search here and blazesym's agree).
pub const DEBUG_DIRS: [&str; 2] = ["/usr/lib/debug", "/lib/debug"];

/// Whether every separate debug file blazesym could open for the ELF file `elf` is
/// absent or a regular file that passes [`crate::elfcheck::check`]. `elf` itself must
/// be a regular file (else: false).
pub fn dwarf_is_safe(elf: &Path) -> bool {
    unsafe_debug_file(elf).is_none()
}

/// Why a separate debug file blazesym could open for `elf` must not be read.
#[derive(Debug)]
pub(crate) enum Unsafe {
    /// `elf` itself is not a regular file, or a linked path is there and is not one.
    NotRegular,
    /// The file at this path fails [`crate::elfcheck::check`].
    Rejected(PathBuf),
}

/// The first separate debug file blazesym could open for `elf` that must not be read
/// (see [`dwarf_is_safe`]), `None` when there is none.
pub(crate) fn unsafe_debug_file(elf: &Path) -> Option<Unsafe> {
    let Ok((file, _)) = hwprof_pmu::file::open(elf) else {
        return Some(Unsafe::NotRegular);
    };
    let mut dwp = elf.as_os_str().to_os_string();
    dwp.push(".dwp");
    if let Some(u) = check_path(Path::new(&dwp)) {
        return Some(u);
    }
    let cache = ReadCache::new(file);
    let Ok(obj) = object::File::parse(&cache) else {
        // blazesym cannot read it either, and opens nothing else.
        return None;
    };
    let own_id = obj.build_id().ok().flatten().map(BuildId::from);
    let mut links: Vec<(PathBuf, Option<BuildId>)> = Vec::new();
    if let Ok(Some((name, _crc))) = obj.gnu_debuglink() {
        links.push((PathBuf::from(OsStr::from_bytes(name)), own_id.clone()));
    }
    if let Ok(Some((name, id))) = obj.gnu_debugaltlink() {
        links.push((PathBuf::from(OsStr::from_bytes(name)), Some(id.into())));
    }
    if let Some(name) = obj
        .section_by_name(".debug_sup")
        .and_then(|s| s.data().ok())
        .and_then(debug_sup_target)
    {
        links.push((PathBuf::from(OsStr::from_bytes(name)), None));
    }
    let canonical = std::fs::canonicalize(elf).ok();
    links.iter().find_map(|(linkee, id)| {
        candidates(linkee, canonical.as_deref(), id.as_ref())
            .iter()
            .find_map(|p| check_path(p))
    })
}

/// Why the file at `p` must not be read: there and not a regular file, or a regular
/// file that fails [`crate::elfcheck::check`]. `None`: absent, or fine.
fn check_path(p: &Path) -> Option<Unsafe> {
    if !absent_or_regular(p) {
        return Some(Unsafe::NotRegular);
    }
    crate::elfcheck::check(p)
        .is_err()
        .then(|| Unsafe::Rejected(p.to_path_buf()))
}

/// The file named by a `.debug_sup` section (version u16, is_supplementary u8, then
/// a NUL-terminated path), when it names one.
fn debug_sup_target(data: &[u8]) -> Option<&[u8]> {
    let rest = data.get(3..)?;
    let end = rest.iter().position(|&b| b == 0)?;
    let name = rest.get(..end)?;
    (data.get(2) == Some(&0) && !name.is_empty()).then_some(name)
}

/// `stat` (following links, as `open` does) says nothing is there, or a regular file.
fn absent_or_regular(p: &Path) -> bool {
    match std::fs::metadata(p) {
        Ok(m) => m.is_file(),
        Err(_) => true,
    }
}

/// Where blazesym looks for `linkee`: `DIR/.build-id/xx/rest.debug` for a build id of
/// at least 8 bytes, `DIR/linkee`, the linker's directory, and `DIR/<linker's
/// directory and each of its parents>/linkee`, for each debug directory.
fn candidates(linkee: &Path, linker: Option<&Path>, build_id: Option<&BuildId>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(id) = build_id.filter(|id| id.as_bytes().len() >= 8) {
        let hex = id.hex();
        for d in DEBUG_DIRS {
            out.push(
                Path::new(d)
                    .join(".build-id")
                    .join(&hex[..2])
                    .join(format!("{}.debug", &hex[2..])),
            );
        }
    }
    for d in DEBUG_DIRS {
        out.push(Path::new(d).join(linkee));
    }
    if let Some(linker) = linker {
        out.push(linker.with_file_name(linkee));
        let rel = linker.strip_prefix("/").unwrap_or(linker);
        let mut dir = rel.parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            for base in DEBUG_DIRS {
                out.push(Path::new(base).join(d).join(linkee));
            }
            dir = d.parent();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_paths_follow_blazesym() {
        let c = candidates(
            Path::new("app.debug"),
            Some(Path::new("/opt/x/bin/app")),
            Some(&BuildId::new([0xab, 1, 2, 3, 4, 5, 6, 7])),
        );
        let want = [
            "/usr/lib/debug/.build-id/ab/01020304050607.debug",
            "/lib/debug/.build-id/ab/01020304050607.debug",
            "/usr/lib/debug/app.debug",
            "/lib/debug/app.debug",
            "/opt/x/bin/app.debug",
            "/usr/lib/debug/opt/x/bin/app.debug",
            "/lib/debug/opt/x/bin/app.debug",
            "/usr/lib/debug/opt/x/app.debug",
            "/lib/debug/opt/x/app.debug",
            "/usr/lib/debug/opt/app.debug",
            "/lib/debug/opt/app.debug",
        ];
        let got: Vec<String> = c.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(got, want);
        assert_eq!(
            debug_sup_target(b"\x05\x00\x00sup.debug\x00\x00"),
            Some(&b"sup.debug"[..])
        );
        assert_eq!(debug_sup_target(b"\x05\x00\x01\x00\x00"), None);
    }

    #[test]
    fn a_fifo_next_to_a_binary_turns_dwarf_off() {
        let d = std::env::temp_dir().join(format!("hwprof-dbgfiles-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let exe = d.join("exe");
        std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
        assert!(dwarf_is_safe(&exe));
        let made = std::process::Command::new("mkfifo")
            .arg(d.join("exe.dwp"))
            .status();
        if made.is_ok_and(|s| s.success()) {
            assert!(!dwarf_is_safe(&exe));
        }
        assert!(!dwarf_is_safe(&d), "a directory is not an ELF file");
        let _ = std::fs::remove_dir_all(&d);
    }
}
