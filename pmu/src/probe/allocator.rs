//! Which allocator a program calls, for `hwprof memory`'s uprobes: the first object in
//! the dynamic linker's search order (the program, `LD_PRELOAD`, then the libraries it
//! needs, breadth first) that defines `malloc` binds every `malloc` call of the
//! process, so that is the one to probe: glibc's `libc.so.6` usually, a preloaded or
//! linked jemalloc/tcmalloc that replaces it, or a static program's own. An allocator
//! under other names (mimalloc's `mi_malloc`, a program's pool) is named by the user:
//! `--allocator BINARY[:malloc=SYM,free=SYM,...]` ([`parse`]).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use object::read::ReadCache;
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

/// What an allocator function does (its arguments and result are glibc's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// `malloc(size)`
    Malloc,
    /// `calloc(n, size)`
    Calloc,
    /// `realloc(ptr, size)`
    Realloc,
    /// `reallocarray(ptr, n, size)`
    Reallocarray,
    /// `aligned_alloc(align, size)`
    AlignedAlloc,
    /// `memalign(align, size)`
    Memalign,
    /// `valloc(size)`
    Valloc,
    /// `posix_memalign(&ptr, align, size)`
    PosixMemalign,
    /// `free(ptr)`
    Free,
}

impl Role {
    /// Every role, in the order they are probed.
    pub const ALL: [Role; 9] = [
        Role::Malloc,
        Role::Calloc,
        Role::Realloc,
        Role::Reallocarray,
        Role::AlignedAlloc,
        Role::Memalign,
        Role::Valloc,
        Role::PosixMemalign,
        Role::Free,
    ];

    /// glibc's name for it (what `--allocator ...:NAME=SYM` calls it too).
    pub fn name(self) -> &'static str {
        match self {
            Role::Malloc => "malloc",
            Role::Calloc => "calloc",
            Role::Realloc => "realloc",
            Role::Reallocarray => "reallocarray",
            Role::AlignedAlloc => "aligned_alloc",
            Role::Memalign => "memalign",
            Role::Valloc => "valloc",
            Role::PosixMemalign => "posix_memalign",
            Role::Free => "free",
        }
    }

    /// The role glibc names `name`.
    pub fn named(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.name() == name)
    }
}

/// How the allocator was chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// glibc's (a library named `libc.so...`).
    Libc,
    /// Another library or the program itself defines `malloc` before libc does.
    Replaced,
    /// `--allocator`.
    Given,
}

/// The functions to probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocator {
    /// The binary that holds them.
    pub path: PathBuf,
    /// Each role's symbol in it (the roles it lacks are left out; `malloc` and `free`
    /// are always there).
    pub symbols: Vec<(Role, String)>,
    /// How it was chosen.
    pub found: Found,
    /// C++'s `operator new`s, taken as mallocs, and the library that defines them
    /// (libstdc++): the stack at their return names the function that called `new`,
    /// which the frames of a library built without frame pointers would hide; the
    /// `malloc` inside each is left out (the kernel counts it as nested).
    pub operator_new: Option<(PathBuf, Vec<String>)>,
}

/// C++'s allocating `operator new`s (Itanium ABI): `new(size_t)`, `new[](size_t)`, their
/// `nothrow` and aligned forms; the size is the first argument of each.
pub const OPERATOR_NEW: [&str; 6] = [
    "_Znwm",
    "_Znam",
    "_ZnwmRKSt9nothrow_t",
    "_ZnamRKSt9nothrow_t",
    "_ZnwmSt11align_val_t",
    "_ZnamSt11align_val_t",
];

/// ELF files read here are headers and tables; a bigger `.dynamic` is not one.
const DYNAMIC_MAX: u64 = 1 << 20;
/// Libraries looked at, at most (a process maps a few hundred).
const MAX_LIBRARIES: usize = 1024;

/// `--allocator SPEC`: `BINARY` (glibc's names in it), `BINARY:ROLE=SYM,...` (those
/// symbols for those roles; the others by glibc's names when the binary has them) or
/// `ROLE=SYM,...` (in `program`). BINARY is a path or a library name found as
/// `uprobe:` paths are ([`super::locate`]).
pub fn parse(spec: &str, program: Option<&Path>, pids: &[i32]) -> Result<Allocator, String> {
    let (binary, list) = match spec.rsplit_once(':') {
        Some((b, l)) if l.contains('=') => (Some(b), l),
        _ if !spec.contains('/') && spec.contains('=') => (None, spec),
        _ => (Some(spec), ""),
    };
    let path = match binary {
        Some(b) => super::locate(b, pids)?,
        None => program.map(Path::to_path_buf).ok_or_else(|| {
            format!("--allocator {spec}: no program to find these symbols in: give BINARY:{spec}")
        })?,
    };
    let mut given: Vec<(Role, String)> = Vec::new();
    for pair in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (role, sym) = pair.split_once('=').ok_or_else(|| {
            format!("--allocator: '{pair}' is not ROLE=SYMBOL (e.g. malloc=je_malloc)")
        })?;
        let r = Role::named(role.trim()).ok_or_else(|| {
            format!(
                "--allocator: no allocator function '{role}': one of {}",
                Role::ALL.map(Role::name).join(", ")
            )
        })?;
        given.push((r, sym.trim().to_string()));
    }
    let elf = Elf::read(&path)?;
    let mut symbols = Vec::new();
    for role in Role::ALL {
        let sym = given
            .iter()
            .find(|(r, _)| *r == role)
            .map(|(_, s)| s.clone());
        match sym {
            Some(s) if elf.defines(&s) => symbols.push((role, s)),
            Some(s) => {
                return Err(format!(
                    "--allocator: {} defines no function '{s}' (for {}): `nm -D {}` lists what it has",
                    path.display(),
                    role.name(),
                    path.display()
                ));
            }
            None if elf.defines(role.name()) => symbols.push((role, role.name().to_string())),
            None => {}
        }
    }
    for need in [Role::Malloc, Role::Free] {
        if !symbols.iter().any(|(r, _)| *r == need) {
            return Err(format!(
                "--allocator: {} has no '{}': name its {} too, e.g. --allocator {}:{}=SYMBOL",
                path.display(),
                need.name(),
                need.name(),
                path.display(),
                need.name()
            ));
        }
    }
    Ok(Allocator {
        path,
        symbols,
        found: Found::Given,
        operator_new: None,
    })
}

/// The allocator `program` calls (run as a command, or process `pids[0]` when it is
/// attached to: its mappings say where its libraries are). The error says what is
/// missing and how to name the allocator.
pub fn find(program: &Path, pids: &[i32]) -> Result<Allocator, String> {
    let what = |p: &Path| p.display().to_string();
    let exe = Elf::read(program)?;
    let maps = pids.first().and_then(|&p| {
        crate::file::read_to_string(Path::new(&format!("/proc/{p}/maps")), 64 << 20).ok()
    });
    let mut order: Vec<PathBuf> = vec![program.to_path_buf()];
    let mut queue: VecDeque<(PathBuf, Elf)> = VecDeque::new();
    let mut seen: Vec<String> = Vec::new();
    if exe.dynamic {
        // LD_PRELOAD: hwprof's own for a command (it passes its environment on), the
        // process's for an attached one.
        let preload = match pids.first() {
            Some(&p) => environ_var(p, "LD_PRELOAD"),
            None => std::env::var("LD_PRELOAD").ok(),
        };
        for lib in preload
            .unwrap_or_default()
            .split([' ', ':'])
            .filter(|s| !s.is_empty())
        {
            let p = PathBuf::from(lib);
            if let Ok(e) = Elf::read(&p) {
                seen.push(file_name(&p));
                queue.push_back((p, e));
            }
        }
    }
    queue.push_front((program.to_path_buf(), exe));
    // Every object, in the loader's order: the first that defines malloc binds every
    // malloc call; the first that defines operator new, every `new`.
    let mut objects: Vec<(PathBuf, Elf)> = Vec::new();
    while let Some((path, elf)) = queue.pop_front() {
        if objects.len() >= MAX_LIBRARIES {
            break;
        }
        for needed in &elf.needed {
            if seen.contains(needed) {
                continue;
            }
            seen.push(needed.clone());
            let Some(p) = library_path(needed, &path, &elf, maps.as_deref()) else {
                continue;
            };
            if let Ok(e) = Elf::read(&p) {
                order.push(p.clone());
                queue.push_back((p, e));
            }
        }
        objects.push((path, elf));
    }
    let operator_new = objects
        .iter()
        .find(|(_, e)| e.defines(OPERATOR_NEW[0]))
        .map(|(p, e)| {
            let names = OPERATOR_NEW
                .iter()
                .filter(|n| e.defines(n))
                .map(|n| n.to_string())
                .collect();
            (p.clone(), names)
        });
    if let Some((path, elf)) = objects
        .into_iter()
        .find(|(_, e)| e.defines("malloc") && e.defines("free"))
    {
        let found = if file_name(&path).starts_with("libc.so") {
            Found::Libc
        } else {
            Found::Replaced
        };
        let symbols = Role::ALL
            .into_iter()
            .filter(|r| elf.defines(r.name()))
            .map(|r| (r, r.name().to_string()))
            .collect();
        return Ok(Allocator {
            path,
            symbols,
            found,
            operator_new,
        });
    }
    let program_words = if order.len() == 1 {
        format!(
            "{} defines no malloc and loads no library that does",
            what(program)
        )
    } else {
        format!(
            "neither {} nor the {} libraries it loads define malloc",
            what(program),
            order.len() - 1
        )
    };
    Err(format!(
        "no allocator to probe: {program_words} (a static program without symbols, or an allocator under other names, such as mimalloc's mi_malloc or Rust's jemallocator); name it: --allocator BINARY[:malloc=SYMBOL,free=SYMBOL,...]"
    ))
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// One variable of process `pid`'s environment (root reads any).
fn environ_var(pid: i32, name: &str) -> Option<String> {
    let env = crate::file::read(Path::new(&format!("/proc/{pid}/environ")), 1 << 20).ok()?;
    env.split(|&b| b == 0).find_map(|kv| {
        let kv = std::str::from_utf8(kv).ok()?;
        kv.strip_prefix(name)?.strip_prefix('=').map(str::to_string)
    })
}

/// Where the loader finds library `soname` for `by` (read as `elf`): the mapping of
/// that name in the attached process (`maps`); else `by`'s RPATH/RUNPATH (with
/// `$ORIGIN`), `LD_LIBRARY_PATH`, the loader's cache and the default directories.
fn library_path(soname: &str, by: &Path, elf: &Elf, maps: Option<&str>) -> Option<PathBuf> {
    if soname.contains('/') {
        return Some(PathBuf::from(soname));
    }
    if let Some(maps) = maps {
        return maps
            .lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .find(|p| p.starts_with('/') && p.rsplit('/').next() == Some(soname))
            .map(PathBuf::from);
    }
    let origin = by
        .canonicalize()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    let env = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let dirs = elf
        .search
        .iter()
        .flat_map(|s| s.split(':'))
        .map(|d| d.replace("$ORIGIN", &origin.to_string_lossy()))
        .chain(env.split(':').map(str::to_string))
        .filter(|d| !d.is_empty());
    for d in dirs {
        let p = Path::new(&d).join(soname);
        if p.is_file() {
            return Some(p);
        }
    }
    if let Ok(p) = super::locate(soname, &[]) {
        return Some(p);
    }
    ["/lib", "/usr/lib", "/lib64", "/usr/lib64"]
        .iter()
        .map(|d| Path::new(d).join(soname))
        .find(|p| p.is_file())
}

/// What is read of an ELF file: whether it is linked dynamically, the libraries it
/// needs, its RPATH/RUNPATH, and the functions it defines.
struct Elf {
    dynamic: bool,
    needed: Vec<String>,
    search: Vec<String>,
    defined: Vec<String>,
}

impl Elf {
    fn read(path: &Path) -> Result<Elf, String> {
        let (f, _) = crate::file::open(path).map_err(|e| e.to_string())?;
        let data = ReadCache::new(f);
        let file = object::File::parse(&data)
            .map_err(|e| format!("{} is not an ELF file we can read ({e})", path.display()))?;
        let mut defined: Vec<String> = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.kind() == SymbolKind::Text && !s.is_undefined() && s.address() != 0)
            .filter_map(|s| s.name().ok().map(str::to_string))
            .collect();
        defined.sort_unstable();
        defined.dedup();
        let (mut needed, mut search) = (Vec::new(), Vec::new());
        let dynamic =
            file.section_by_name(".interp").is_some() || file.section_by_name(".dynamic").is_some();
        if let (Some(dynsec), Some(strsec)) = (
            file.section_by_name(".dynamic"),
            file.section_by_name(".dynstr"),
        ) && dynsec.size() <= DYNAMIC_MAX
            && strsec.size() <= DYNAMIC_MAX
            && let (Ok(d), Ok(s)) = (dynsec.data(), strsec.data())
        {
            let string = |off: u64| -> Option<String> {
                let rest = s.get(usize::try_from(off).ok()?..)?;
                let end = rest.iter().position(|&b| b == 0)?;
                Some(String::from_utf8_lossy(&rest[..end]).into_owned())
            };
            const DT_NEEDED: u64 = 1;
            const DT_RPATH: u64 = 15;
            const DT_RUNPATH: u64 = 29;
            for e in d.chunks_exact(16) {
                let tag = u64::from_le_bytes(e[..8].try_into().unwrap_or_default());
                let val = u64::from_le_bytes(e[8..].try_into().unwrap_or_default());
                match tag {
                    0 => break,
                    DT_NEEDED => needed.extend(string(val)),
                    DT_RPATH | DT_RUNPATH => search.extend(string(val)),
                    _ => {}
                }
            }
        }
        Ok(Elf {
            dynamic,
            needed,
            search,
            defined,
        })
    }

    fn defines(&self, name: &str) -> bool {
        self.defined
            .binary_search_by(|d| d.as_str().cmp(name))
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test program is linked against glibc, whose malloc it calls.
    #[test]
    fn a_dynamic_program_calls_libcs_allocator() {
        let exe = std::env::current_exe().unwrap();
        let a = find(&exe, &[]).unwrap();
        assert_eq!(a.found, Found::Libc, "{a:?}");
        assert!(file_name(&a.path).starts_with("libc.so"), "{a:?}");
        for r in [Role::Malloc, Role::Calloc, Role::Realloc, Role::Free] {
            assert!(
                a.symbols.iter().any(|(x, s)| *x == r && s == r.name()),
                "{a:?}"
            );
        }
        // Attached: found through this process's mappings, the same file.
        let me = std::process::id() as i32;
        let b = find(&exe, &[me]).unwrap();
        assert_eq!(
            b.path.canonicalize().unwrap(),
            a.path.canonicalize().unwrap()
        );
    }

    #[test]
    fn given_allocators_are_checked_against_the_binary() {
        let exe = std::env::current_exe().unwrap();
        let libc = find(&exe, &[]).unwrap().path;
        let spec = format!("{}:malloc=__libc_malloc", libc.display());
        let a = parse(&spec, None, &[]).unwrap();
        assert_eq!(a.found, Found::Given);
        assert!(
            a.symbols
                .contains(&(Role::Malloc, "__libc_malloc".to_string()))
        );
        assert!(a.symbols.contains(&(Role::Free, "free".to_string())));
        let e = parse(&format!("{}:malloc=no_such_fn", libc.display()), None, &[]).unwrap_err();
        assert!(e.contains("defines no function 'no_such_fn'"), "{e}");
        let e = parse(&format!("{}:mallocc=x", libc.display()), None, &[]).unwrap_err();
        assert!(e.contains("no allocator function 'mallocc'"), "{e}");
        // Symbols alone are the program's.
        let e = parse("malloc=x", None, &[]).unwrap_err();
        assert!(e.contains("no program"), "{e}");
    }
}
