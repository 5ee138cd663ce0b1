//! Build ids of DSOs and of the running kernel, for perf.data's `HEADER_BUILD_ID`.
//!
//! Build ids let `perf report` and hwprof's symbolizer find the exact binary (or its
//! debug info) a recording saw, even after the file on disk changed.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use object::Object;
use object::read::ReadCache;

use crate::perfdata::features::{BuildIdEntry, MISC_BUILD_ID_SIZE, MISC_KERNEL, MISC_USER};

/// The file name perf gives the kernel's build id entry.
pub const KERNEL_DSO: &str = "[kernel.kallsyms]";
/// `NT_GNU_BUILD_ID`.
const NT_GNU_BUILD_ID: u32 = 3;
/// The longest build id perf.data keeps (`BUILD_ID_SIZE`).
const BUILD_ID_MAX: usize = 20;

/// The `NT_GNU_BUILD_ID` note of the ELF file at `path` (any class, endianness or
/// architecture), read lazily (a large binary is not read whole). `None` when the
/// file cannot be read, is not a regular file (a FIFO or a device is never opened, so
/// this never blocks: see [`hwprof_pmu::file::open`]), is not ELF or has no build id.
pub fn read_build_id(path: &Path) -> Option<Vec<u8>> {
    let (file, _) = hwprof_pmu::file::open(path).ok()?;
    let cache = ReadCache::new(file);
    let obj = object::File::parse(&cache).ok()?;
    let id = obj.build_id().ok()??;
    (!id.is_empty()).then(|| id.to_vec())
}

/// The running kernel's build id, from `/sys/kernel/notes`.
pub fn kernel_build_id() -> Option<Vec<u8>> {
    let notes = std::fs::read("/sys/kernel/notes").ok()?;
    gnu_build_id_note(&notes)
}

/// The `GNU` / `NT_GNU_BUILD_ID` descriptor in a sequence of native-endian ELF notes
/// (`namesz, descsz, type`, name and descriptor each padded to 4 bytes).
pub fn gnu_build_id_note(notes: &[u8]) -> Option<Vec<u8>> {
    let u32_at = |at: usize| -> Option<u32> {
        let b = notes.get(at..at.checked_add(4)?)?;
        Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    };
    let mut at = 0usize;
    while at.checked_add(12)? <= notes.len() {
        let namesz = u32_at(at)? as usize;
        let descsz = u32_at(at + 4)? as usize;
        let kind = u32_at(at + 8)?;
        let name_at = at + 12;
        let desc_at = name_at.checked_add(namesz.next_multiple_of(4))?;
        let end = desc_at.checked_add(descsz.next_multiple_of(4))?;
        let name = notes.get(name_at..name_at.checked_add(namesz)?)?;
        let desc = notes.get(desc_at..desc_at.checked_add(descsz)?)?;
        if kind == NT_GNU_BUILD_ID && name == b"GNU\0" && !desc.is_empty() {
            return Some(desc.to_vec());
        }
        at = end;
    }
    None
}

/// Whether perf would look for a build id at this DSO path: not `[vdso]`, `[heap]`,
/// `//anon`, `memfd:`, deleted files and the like.
fn is_file_dso(path: &str) -> bool {
    path.starts_with('/') && !path.starts_with("//") && !path.ends_with(" (deleted)")
}

/// `HEADER_BUILD_ID` entries for the DSOs a recording mapped, given as
/// `(pid, kernel, path)`: each distinct DSO is read once; the kernel
/// (`[kernel.kallsyms]` or any `[kernel...` name) gets one entry with
/// `PERF_RECORD_MISC_KERNEL`, kernel module files theirs, user DSOs
/// `PERF_RECORD_MISC_USER`; all with pid -1, as perf writes host DSOs. A user path is
/// read as is, then through `/proc/PID/root` (a process in another mount namespace).
/// DSOs without a readable build id (`[vdso]`, anonymous or deleted mappings,
/// unreadable files) are skipped. Kernel entries come first.
pub fn build_id_entries(dsos: impl IntoIterator<Item = (i32, bool, String)>) -> Vec<BuildIdEntry> {
    let mut seen: HashSet<(bool, String)> = HashSet::new();
    let mut out = Vec::new();
    for (pid, kernel, path) in dsos {
        let is_kernel_image = kernel && (path.starts_with("[kernel") || path.is_empty());
        let name = if is_kernel_image {
            KERNEL_DSO.to_string()
        } else {
            path
        };
        if !seen.insert((kernel, name.clone())) {
            continue;
        }
        let id = if is_kernel_image {
            kernel_build_id()
        } else if is_file_dso(&name) {
            read_build_id(Path::new(&name)).or_else(|| {
                (pid > 0)
                    .then(|| PathBuf::from(format!("/proc/{pid}/root{name}")))
                    .and_then(|p| read_build_id(&p))
            })
        } else {
            None
        };
        let Some(mut id) = id else { continue };
        id.truncate(BUILD_ID_MAX);
        let misc = if kernel { MISC_KERNEL } else { MISC_USER };
        out.push(BuildIdEntry {
            pid: -1,
            misc: misc | MISC_BUILD_ID_SIZE,
            build_id: id,
            filename: name,
        });
    }
    out.sort_by_key(|e| e.misc & MISC_KERNEL == 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    /// `file`'s view of a build id (`BuildID[sha1]=...`), `None` when `file` is absent.
    fn file_says(path: &str) -> Option<String> {
        let out = std::process::Command::new("file")
            .arg("-L")
            .arg(path)
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let at = text.find("BuildID[")?;
        let rest = &text[at..];
        let eq = rest.find('=')?;
        Some(
            rest[eq + 1..]
                .chars()
                .take_while(|c| c.is_ascii_hexdigit())
                .collect(),
        )
    }

    #[test]
    fn own_executable_and_libc() {
        let exe = std::env::current_exe().unwrap();
        // Rust test binaries are linked with a build id by default on Linux.
        let id = read_build_id(&exe);
        match file_says(exe.to_str().unwrap()) {
            Some(want) => assert_eq!(id.as_deref().map(hex), Some(want)),
            None => hwprof_testkit::skip(
                hwprof_testkit::Why::Setup,
                "`file` cannot show build ids here (install `file`)",
            ),
        }
        assert_eq!(read_build_id(Path::new("/nonexistent/x")), None);
        assert_eq!(read_build_id(Path::new("/proc/self/status")), None);
    }

    #[test]
    fn fifos_and_directories_are_never_opened() {
        let d = std::env::temp_dir().join(format!("hwprof-buildid-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let fifo = d.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            // Nobody writes to it: a plain open() would block forever.
            assert_eq!(read_build_id(&fifo), None);
        } else {
            hwprof_testkit::skip(hwprof_testkit::Why::Setup, "mkfifo failed here");
        }
        assert_eq!(read_build_id(&d), None);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn notes_parser() {
        let mut n = Vec::new();
        // A note of another kind first, with a name needing padding.
        for (name, kind, desc) in [
            (&b"Xen\0"[..], 1u32, &[9u8, 9, 9][..]),
            (
                b"GNU\0",
                NT_GNU_BUILD_ID,
                &[
                    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                ],
            ),
        ] {
            n.extend_from_slice(&(name.len() as u32).to_ne_bytes());
            n.extend_from_slice(&(desc.len() as u32).to_ne_bytes());
            n.extend_from_slice(&kind.to_ne_bytes());
            n.extend_from_slice(name);
            n.resize(n.len().next_multiple_of(4), 0);
            n.extend_from_slice(desc);
            n.resize(n.len().next_multiple_of(4), 0);
        }
        assert_eq!(gnu_build_id_note(&n), Some((1..=20).collect()));
        // Truncations never panic and never invent an id.
        for cut in 0..n.len() {
            assert_eq!(gnu_build_id_note(&n[..cut]), None, "cut {cut}");
        }
        let mut huge = n.clone();
        huge[4..8].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert_eq!(gnu_build_id_note(&huge), None);
    }

    #[test]
    fn kernel_and_entries() {
        let kernel = kernel_build_id();
        if kernel.is_none() {
            hwprof_testkit::skip(
                hwprof_testkit::Why::KernelSetting,
                "/sys/kernel/notes has no build id here (kernel built without one)",
            );
        }
        let exe = std::env::current_exe()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let entries = build_id_entries([
            (1234, false, exe.clone()),
            (-1, true, KERNEL_DSO.to_string()),
            (1235, false, exe.clone()),
            (1234, false, "[vdso]".to_string()),
            (1234, false, "//anon".to_string()),
            (1234, false, "/nonexistent/lib.so".to_string()),
            (1234, true, "[kernel.kallsyms]_text".to_string()),
        ]);
        let names: Vec<&str> = entries.iter().map(|e| e.filename.as_str()).collect();
        let mut want = Vec::new();
        if kernel.is_some() {
            want.push(KERNEL_DSO);
        }
        if read_build_id(Path::new(&exe)).is_some() {
            want.push(exe.as_str());
        }
        assert_eq!(names, want);
        for e in &entries {
            assert_eq!(e.pid, -1);
            let kind = if e.filename == KERNEL_DSO {
                MISC_KERNEL
            } else {
                MISC_USER
            };
            assert_eq!(e.misc, kind | MISC_BUILD_ID_SIZE);
            assert!(!e.build_id.is_empty() && e.build_id.len() <= 20);
        }
        if let Some(k) = kernel {
            assert_eq!(entries[0].build_id, k[..k.len().min(20)]);
        }
    }
}
