//! Which file a uprobe's PATH names: a path, or a bare library or program name
//! (`uprobe:libc:malloc`, `uprobe:libc.so.6:malloc`, `uprobe:bash:readline`), found as
//! bcc and bpftrace find them: in the mappings of the processes probed, then in the
//! loader's cache (`/etc/ld.so.cache`, what `ldconfig -p` prints), then in `$PATH`.

use std::path::{Path, PathBuf};

/// The loader's cache.
const LD_SO_CACHE: &str = "/etc/ld.so.cache";
/// The cache is a few hundred KiB; a larger file is not one.
const LD_SO_CACHE_MAX: u64 = 64 << 20;
/// `/proc/PID/maps` of a large process is a few MiB.
const MAPS_MAX: u64 = 64 << 20;

/// The file a uprobe PATH stands for: `path` itself when it holds a `/` or names a file
/// in the current directory; otherwise a library named by `path` in the mappings of
/// `pids` (the processes probed), then in the loader's cache, then a program in
/// `$PATH`. The error is one line that says where it looked.
pub fn locate(path: &str, pids: &[i32]) -> Result<PathBuf, String> {
    if path.contains('/') || Path::new(path).is_file() {
        return Ok(PathBuf::from(path));
    }
    if path.is_empty() {
        return Err("an empty path: give the binary or library, e.g. uprobe:/usr/bin/app:func or uprobe:libc:malloc".into());
    }
    for &pid in pids {
        if let Some(p) = in_maps(path, pid) {
            return Ok(p);
        }
    }
    if let Some(p) = in_ld_cache(path) {
        return Ok(p);
    }
    if let Some(p) = in_path(path) {
        return Ok(p);
    }
    let procs = if pids.is_empty() {
        String::new()
    } else {
        format!(
            " the mappings of process {},",
            pids.iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        )
    };
    Err(format!(
        "no file or library '{path}': not in the current directory,{procs} the loader's cache ({LD_SO_CACHE}, see `ldconfig -p`) or $PATH; give its path, e.g. uprobe:/usr/lib/x86_64-linux-gnu/lib{}.so:FUNC",
        path.strip_prefix("lib").unwrap_or(path)
    ))
}

/// Whether file name `file` is library `name`: the name itself (`libc.so.6`), or
/// `NAME.so…`/`NAME-…` (`libc` → `libc.so.6`, `libc-2.31.so`), or the same with `lib`
/// in front (`c` → `libc.so.6`), as bcc's `bcc_procutils_which_so` matches.
pub fn is_library(file: &str, name: &str) -> bool {
    if file == name {
        return true;
    }
    let so = |stem: &str| {
        file.strip_prefix(stem).is_some_and(|rest| {
            rest.starts_with(".so") || (rest.starts_with('-') && file.contains(".so"))
        })
    };
    so(name) || (!name.starts_with("lib") && so(&format!("lib{name}")))
}

/// Library `name` among the mappings of process `pid` (`/proc/PID/maps`).
fn in_maps(name: &str, pid: i32) -> Option<PathBuf> {
    let maps =
        crate::file::read_to_string(Path::new(&format!("/proc/{pid}/maps")), MAPS_MAX).ok()?;
    maps_lookup(&maps, name)
}

/// The first mapped file of `maps` (the text of `/proc/PID/maps`) that is library
/// `name`.
fn maps_lookup(maps: &str, name: &str) -> Option<PathBuf> {
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.starts_with('/'))
        .find(|p| {
            Path::new(p)
                .file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| is_library(f, name))
        })
        .map(PathBuf::from)
}

/// Library `name` in the loader's cache, for this machine's ABI.
fn in_ld_cache(name: &str) -> Option<PathBuf> {
    let data = crate::file::read(Path::new(LD_SO_CACHE), LD_SO_CACHE_MAX).ok()?;
    ld_cache_entries(&data)
        .into_iter()
        .filter(|e| abi_matches(e.flags))
        .find(|e| is_library(&e.name, name))
        .map(|e| PathBuf::from(e.path))
}

/// A program `name` in `$PATH`.
pub fn in_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// One library of the loader's cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheEntry {
    /// glibc's flags: the type (`0x03`: ELF libc6) and the ABI (`0x0300`: x86-64).
    pub flags: i32,
    /// The library's name (its soname, or the file name).
    pub name: String,
    /// Where it is.
    pub path: String,
}

/// glibc's `FLAG_ELF_LIBC6`, and the ABI of 64-bit libraries of this architecture
/// (`FLAG_X8664_LIB64`, `FLAG_AARCH64_LIB64`), from glibc's `ldconfig.h`.
const TYPE_ELF_LIBC6: i32 = 0x0003;
#[cfg(target_arch = "x86_64")]
const ABI: Option<i32> = Some(0x0300);
#[cfg(target_arch = "aarch64")]
const ABI: Option<i32> = Some(0x0a00);
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const ABI: Option<i32> = None;

fn abi_matches(flags: i32) -> bool {
    flags & 0xff == TYPE_ELF_LIBC6 && ABI.is_none_or(|abi| flags & 0xff00 == abi)
}

/// The entries of a glibc loader cache (`glibc-ld.so.cache1.1`, alone or after the
/// old `ld.so-1.7.0` table): the header (magic, `nlibs`, `len_strings`, flags,
/// extension offset), then `nlibs` entries of 24 bytes (flags, key and value offsets,
/// os version, hwcap); the offsets count from the start of that header. Anything out
/// of bounds ends the list: a damaged cache gives fewer entries, never an error.
pub fn ld_cache_entries(data: &[u8]) -> Vec<CacheEntry> {
    const MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
    const HEADER: usize = 48;
    const ENTRY: usize = 24;
    let Some(start) = data.windows(MAGIC.len()).position(|w| w == MAGIC) else {
        return Vec::new();
    };
    let cache = &data[start..];
    let u32_at = |o: usize| -> Option<u32> {
        let b = cache.get(o..o.checked_add(4)?)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let string_at = |o: u32| -> Option<String> {
        let s = cache.get(usize::try_from(o).ok()?..)?;
        let end = s.iter().position(|&b| b == 0)?;
        std::str::from_utf8(&s[..end]).ok().map(str::to_string)
    };
    let Some(nlibs) = u32_at(20) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for i in 0..nlibs as usize {
        let Some(at) = i.checked_mul(ENTRY).and_then(|o| o.checked_add(HEADER)) else {
            break;
        };
        let (Some(flags), Some(key), Some(value)) = (u32_at(at), u32_at(at + 4), u32_at(at + 8))
        else {
            break;
        };
        let (Some(name), Some(path)) = (string_at(key), string_at(value)) else {
            continue;
        };
        out.push(CacheEntry {
            flags: flags as i32,
            name,
            path,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_names_match_as_bcc_matches_them() {
        for (file, name) in [
            ("libc.so.6", "libc"),
            ("libc.so.6", "c"),
            ("libc.so.6", "libc.so.6"),
            ("libc-2.31.so", "libc"),
            ("libpthread.so.0", "pthread"),
            ("libssl.so.3", "libssl"),
        ] {
            assert!(is_library(file, name), "{file} is {name}");
        }
        for (file, name) in [
            ("libcap.so.2", "libc"),
            ("libcrypto.so.3", "c"),
            ("libc.so.6", "lib"),
            ("libc-client", "libc"),
            ("liblibc.so", "libc"),
        ] {
            assert!(!is_library(file, name), "{file} is not {name}");
        }
    }

    #[test]
    fn maps_name_the_mapped_library() {
        let maps = "\
55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 123 /usr/bin/app
7f1e2a000000-7f1e2a028000 r--p 00000000 08:01 456 /usr/lib/x86_64-linux-gnu/libcap.so.2.66
7f1e2a200000-7f1e2a228000 r--p 00000000 08:01 789 /usr/lib/x86_64-linux-gnu/libc.so.6
7ffd1c000000-7ffd1c021000 rw-p 00000000 00:00 0 [stack]
";
        assert_eq!(
            maps_lookup(maps, "libc"),
            Some(PathBuf::from("/usr/lib/x86_64-linux-gnu/libc.so.6"))
        );
        assert_eq!(maps_lookup(maps, "stack"), None);
        assert_eq!(maps_lookup(maps, "libm"), None);
    }

    /// A cache built by hand: the layout glibc's ldconfig writes.
    #[test]
    fn a_loader_cache_is_read_and_damage_is_not_an_error() {
        let mut c = b"glibc-ld.so.cache1.1".to_vec();
        let strings = 48 + 2 * 24;
        let names = [
            "libm.so.6\0",
            "/lib/libm.so.6\0",
            "libc.so.6\0",
            "/lib/libc.so.6\0",
        ];
        c.extend(2u32.to_le_bytes()); // nlibs
        c.extend(0u32.to_le_bytes()); // len_strings
        c.extend([0u8; 4]); // flags, padding
        c.extend([0u8; 16]); // extension offset, unused
        let mut off = strings as u32;
        let mut offs = Vec::new();
        for n in names {
            offs.push(off);
            off += n.len() as u32;
        }
        for (i, flags) in [(0, 0x0303u32), (2, 0x0003)] {
            c.extend(flags.to_le_bytes());
            c.extend(offs[i].to_le_bytes());
            c.extend(offs[i + 1].to_le_bytes());
            c.extend([0u8; 12]);
        }
        for n in names {
            c.extend(n.as_bytes());
        }
        let e = ld_cache_entries(&c);
        assert_eq!(e.len(), 2);
        assert_eq!(
            (e[0].name.as_str(), e[0].path.as_str()),
            ("libm.so.6", "/lib/libm.so.6")
        );
        assert_eq!(e[1].flags, 0x0003);
        // Cut anywhere: fewer entries, never a panic.
        for n in 0..c.len() {
            assert!(ld_cache_entries(&c[..n]).len() <= 2);
        }
        assert!(ld_cache_entries(b"not a cache").is_empty());
    }

    /// This machine's cache names libc where `ldconfig -p` does.
    #[test]
    fn libc_is_found_in_this_machines_cache() {
        let Ok(out) = std::process::Command::new("ldconfig").arg("-p").output() else {
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let Some(want) = text
            .lines()
            .find(|l| l.trim_start().starts_with("libc.so.6 ") && l.contains("x86-64"))
            .and_then(|l| l.rsplit_once("=> "))
            .map(|(_, p)| PathBuf::from(p.trim()))
        else {
            return;
        };
        assert_eq!(in_ld_cache("libc"), Some(want.clone()));
        assert_eq!(locate("libc", &[]), Ok(want));
        let me = std::process::id() as i32;
        let mapped = locate("libc", &[me]).expect("libc is mapped here");
        assert!(is_library(
            mapped.file_name().and_then(|f| f.to_str()).unwrap_or(""),
            "libc"
        ));
        let e = locate("libnosuchlib_hwprof", &[me]).unwrap_err();
        assert!(e.contains(&format!("the mappings of process {me}")), "{e}");
        assert!(!e.contains('\n'));
    }
}
