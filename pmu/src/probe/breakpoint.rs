//! Breakpoints (`mem:ADDR`) that would count nothing: an address that lies in no
//! mapping of the processes attached to, or one taken from the symbol table of a
//! position-independent executable (PIE), whose addresses are relocated at load time
//! (at a random base). perf says nothing in either case; hwprof warns once per event.

use std::path::{Path, PathBuf};

use object::{Object, ObjectKind, ObjectSegment};

use crate::event::{Class, EventList};
use crate::target::Target;

/// `/proc/PID/maps` of a large process is a few MiB.
const MAPS_MAX: u64 = 64 << 20;
/// User addresses end below this on every 64-bit Linux (kernel addresses are left alone).
const USER_END: u64 = 1 << 63;

/// One line per breakpoint of `list` that would likely count nothing on `target` (see
/// the module docs); empty when nothing looks wrong or nothing can be told (CPUs).
pub fn breakpoint_notices(list: &EventList, target: &Target) -> Vec<String> {
    list.events
        .iter()
        .filter(|e| e.class == Class::Breakpoint)
        .filter_map(|e| notice(&e.name, e.attr.config1, target))
        .collect()
}

fn notice(name: &str, addr: u64, target: &Target) -> Option<String> {
    if addr >= USER_END {
        return None;
    }
    match (target.argv(), target.attached()) {
        (Some(argv), None) => {
            let program = argv.first()?;
            let path = if program.contains('/') {
                PathBuf::from(program)
            } else {
                super::in_path(program)?
            };
            let pie = Pie::of(&path)?;
            pie.holds(addr).then(|| {
                format!(
                    "{name}: {} is a position-independent executable (PIE): it is loaded at a random base, so {addr:#x}, an address of its file, is not where that data is at run time and the breakpoint will likely count nothing; build it with -no-pie, or attach to it running (-p) with the address plus its base from /proc/PID/maps",
                    path.display()
                )
            })
        }
        _ => target
            .processes()
            .iter()
            .find_map(|&pid| notice_for_process(name, addr, pid)),
    }
}

/// The notice for process `pid` when no mapping of it holds `addr`.
fn notice_for_process(name: &str, addr: u64, pid: i32) -> Option<String> {
    let maps =
        crate::file::read_to_string(Path::new(&format!("/proc/{pid}/maps")), MAPS_MAX).ok()?;
    let maps = parse_maps(&maps);
    if maps.iter().any(|m| m.start <= addr && addr < m.end) {
        return None;
    }
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
    let relocated = exe.as_ref().and_then(|exe| {
        let pie = Pie::of(exe)?;
        let base = maps
            .iter()
            .find(|m| m.offset == 0 && Path::new(&m.path) == exe.as_path())?
            .start;
        pie.holds(addr)
            .then(|| base.checked_sub(pie.first_page)?.checked_add(addr))
            .flatten()
    });
    Some(match (relocated, exe) {
        (Some(r), Some(exe)) => format!(
            "{name}: no mapping of process {pid} holds {addr:#x}: {} is a position-independent executable (PIE), relocated when loaded; that address of its file is {r:#x} in process {pid} (-e mem:{r:#x}...)",
            exe.display()
        ),
        _ => format!(
            "{name}: no mapping of process {pid} holds {addr:#x}, so the breakpoint will count nothing there (its mappings: /proc/{pid}/maps)"
        ),
    })
}

/// The loadable address range of a PIE file, and its first segment's page.
struct Pie {
    lo: u64,
    hi: u64,
    first_page: u64,
}

impl Pie {
    /// `None` unless `path` is a readable ELF file of type `ET_DYN` (a PIE, or a shared
    /// library) with loadable segments.
    fn of(path: &Path) -> Option<Pie> {
        let (f, _) = crate::file::open(path).ok()?;
        let data = object::read::ReadCache::new(f);
        let file = object::File::parse(&data).ok()?;
        if file.kind() != ObjectKind::Dynamic {
            return None;
        }
        let mut lo = u64::MAX;
        let mut hi = 0u64;
        for s in file.segments() {
            lo = lo.min(s.address());
            hi = hi.max(s.address().saturating_add(s.size()));
        }
        (lo < hi).then_some(Pie {
            lo,
            hi,
            first_page: lo & !0xfff,
        })
    }

    fn holds(&self, addr: u64) -> bool {
        self.lo <= addr && addr < self.hi
    }
}

/// One line of `/proc/PID/maps`.
#[derive(Debug, PartialEq, Eq)]
struct Mapping {
    start: u64,
    end: u64,
    offset: u64,
    path: String,
}

fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (s, e) = f.next()?.split_once('-')?;
            let _perms = f.next()?;
            let offset = u64::from_str_radix(f.next()?, 16).ok()?;
            let _dev = f.next()?;
            let _inode = f.next()?;
            Some(Mapping {
                start: u64::from_str_radix(s, 16).ok()?,
                end: u64::from_str_radix(e, 16).ok()?,
                offset,
                path: f.collect::<Vec<_>>().join(" "),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_are_parsed() {
        let m = parse_maps(
            "55d0c0a00000-55d0c0a02000 r--p 00001000 08:01 123 /usr/bin/my app\n\
             7ffd1c000000-7ffd1c021000 rw-p 00000000 00:00 0 [stack]\nbad line\n",
        );
        assert_eq!(m.len(), 2);
        assert_eq!(
            m[0],
            Mapping {
                start: 0x55d0_c0a0_0000,
                end: 0x55d0_c0a0_2000,
                offset: 0x1000,
                path: "/usr/bin/my app".into()
            }
        );
    }

    /// The test binary is a PIE (Rust's default): an address of its file lies in no
    /// mapping of this process, and the notice gives where it is.
    #[test]
    fn an_unrelocated_pie_address_is_named_with_its_relocation() {
        let exe = std::env::current_exe().expect("exe");
        let Some(pie) = Pie::of(&exe) else {
            return; // built without PIE: nothing to check
        };
        let me = std::process::id() as i32;
        let addr = pie.lo + 0x10;
        let n = notice_for_process("mem:x", addr, me).expect("a notice");
        assert!(
            n.contains("position-independent") && n.contains(&format!("process {me}")),
            "{n}"
        );
        // The address it names is mapped here.
        let named = n
            .split("(-e mem:")
            .nth(1)
            .and_then(|r| r.split("...").next())
            .and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok())
            .expect("the relocated address");
        assert_eq!(notice_for_process("mem:x", named, me), None);
        let cmd = Target::Command(vec![exe.display().to_string()]);
        assert!(notice("mem:x", addr, &cmd).is_some_and(|n| n.contains("-no-pie")));
        assert_eq!(notice("mem:x", 1 << 63, &cmd), None);
        assert_eq!(
            notice("mem:x", addr, &Target::SystemWide { cpus: None }),
            None
        );
    }
}
