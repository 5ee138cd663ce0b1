//! Uprobes that the target's children inherit: `uprobe_events` definitions opened as
//! tracepoints, the way `perf probe` + `perf stat -e probe_x:f` does it.
//!
//! # Why the uprobe PMU cannot be inherited
//!
//! An event of the uprobe PMU names its binary by a *pointer*: `config1` is
//! `attr.uprobe_path`, the address of a C string in the opening process, and the PMU's
//! `event_init` copies it with `strndup_user(u64_to_user_ptr(attr.uprobe_path),
//! PATH_MAX)` (`perf_uprobe_init`, kernel/trace/trace_event_perf.c). An inherited
//! event is built again, from the parent event's attr, when the target forks or
//! creates a thread: `copy_process` → `perf_event_init_task` → `inherit_event` →
//! `perf_event_alloc(&parent_event->attr, ..)` → `perf_init_event` → the PMU's
//! `event_init` (kernel/events/core.c). That runs in the forking task, so the pointer
//! is read in the *target's* address space, where it means nothing: `strndup_user`
//! fails with EFAULT, `copy_process` fails, and the target's `fork()`, `clone()` and
//! `pthread_create()` return EFAULT ("fork: Bad address"); if that address happens
//! to be mapped in the target, some other string is read and another file probed.
//!
//! # What hwprof does instead
//!
//! A tracepoint event carries no pointer: `config` is the event's id, which means the
//! same in every task. So when a uprobe must be inherited (a command or `-p`/`-t`
//! target with inheritance on), [`install`] defines it in tracefs, as `perf probe` does,
//! `p:hwprof_<PID>/<name> <path>:0x<offset>` (`r:` for a uretprobe) appended to
//! `<tracefs>/uprobe_events`, and rewrites the attr to `PERF_TYPE_TRACEPOINT` with
//! `config = events/hwprof_<PID>/<name>/id`. The event keeps its name (`uprobe:/p:f`)
//! and the rest of its attr; a sampling attr also gets `PERF_SAMPLE_RAW`, as perf gives
//! every tracepoint (perf report reads tracepoint samples through it). Counts then
//! follow children, threads and exec as perf's do.
//!
//! Definitions outlive processes, so they are removed:
//! - when the [`Probes`] guard is dropped, which must happen after the event fds (and
//!   their ring mappings) are closed: a definition in use is EBUSY (retried for a
//!   bounded time); [`crate::Counter`] and the sampler's session hold the guard in
//!   their last field for that reason;
//! - by a watchdog process ([`crate::sys::Cleaner`]) when hwprof dies without dropping
//!   it (SIGKILL): it learns each delete command before the definition is written;
//! - by the next run, as a backstop: [`install`] deletes the `hwprof_<PID>` events of
//!   dead PIDs.
//!
//! Where no inheritance is needed (`--no-inherit`, system-wide, one thread) the uprobe
//! PMU is kept, which leaves nothing behind. Where it is needed but `uprobe_events`
//! cannot be written (not root, no tracefs, read-only), [`install`] falls back to the
//! uprobe PMU with `inherit` off for the uprobes' groups and says so in a notice: the
//! target's fork never breaks, its children's calls are just not counted.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::attr::types;
use crate::event::{Class, EventList};
use crate::sys;

/// How long dropping [`Probes`] retries a definition the kernel still holds (EBUSY).
const DROP_PATIENCE: Duration = Duration::from_secs(2);
/// How long the watchdog retries after hwprof died (the kernel releases a dead
/// process's events as it closes its files).
const WATCHDOG_PATIENCE: Duration = Duration::from_secs(10);
/// Longest event name written (the kernel's limit is 64; room for a `_N` suffix).
const MAX_NAME: usize = 56;
/// The group prefix; the group is `hwprof_<PID>`.
const GROUP_PREFIX: &str = "hwprof_";

/// Serializes [`install`] within this process: checking that a name is free and
/// writing it must not interleave (the kernel *merges* a second definition of the same
/// name into the first instead of refusing it).
static INSTALLING: Mutex<()> = Mutex::new(());

/// What [`install`] did to an event list.
#[derive(Debug, Default)]
pub struct Installed {
    /// The definitions written (removed when this is dropped), if any.
    pub probes: Option<Probes>,
    /// A notice to print once: the definitions could not be written, so the uprobes
    /// were left on the uprobe PMU without inheritance.
    pub notice: Option<String>,
}

/// Uprobe definitions in `uprobe_events`, removed on drop (see the module docs for
/// when to drop it).
#[derive(Debug)]
pub struct Probes {
    /// The tracefs root.
    tracefs: PathBuf,
    /// `hwprof_<PID>`.
    group: String,
    /// `(index in the event list, event name)` of every definition written.
    events: Vec<(usize, String)>,
    /// The watchdog that removes them if this process dies first.
    watchdog: Option<sys::Cleaner>,
}

impl Probes {
    /// The tracefs group of the definitions (`hwprof_<PID>`).
    pub fn group(&self) -> &str {
        &self.group
    }

    /// `(index in the event list, tracefs system, event name)` of every uprobe turned
    /// into a tracepoint: what `HEADER_TRACING_DATA` must describe in a recording
    /// (read `events/SYSTEM/NAME/format` while this guard lives).
    pub fn tracepoints(&self) -> impl Iterator<Item = (usize, &str, &str)> {
        self.events
            .iter()
            .map(|(i, n)| (*i, self.group.as_str(), n.as_str()))
    }

    /// The tracefs root the definitions live in.
    pub fn tracefs(&self) -> &Path {
        &self.tracefs
    }

    /// Deletes every definition, retrying those the kernel still holds (EBUSY, while
    /// it releases closed events) for up to `patience`. Returns the first other error.
    fn remove(&mut self, patience: Duration) -> io::Result<()> {
        let deadline = Instant::now() + patience;
        let control = self.tracefs.join("uprobe_events");
        let mut left: Vec<String> = self
            .events
            .iter()
            .rev()
            .map(|(_, n)| delete_line(&self.group, n))
            .collect();
        let mut first_err = None;
        while !left.is_empty() {
            let mut f = open_control(&control)?;
            let mut busy = Vec::new();
            for line in left {
                match write_line(&mut f, &line) {
                    Ok(()) => {}
                    Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                    Err(e) if e.raw_os_error() == Some(libc::EBUSY) => busy.push(line),
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
            left = busy;
            if left.is_empty() || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.events.clear();
        match (first_err, left.is_empty()) {
            (Some(e), _) => Err(e),
            (None, false) => Err(io::Error::from_raw_os_error(libc::EBUSY)),
            (None, true) => Ok(()),
        }
    }
}

impl Drop for Probes {
    fn drop(&mut self) {
        // Whatever is left (still busy) is the watchdog's: closing its socket lets it
        // retry for longer, without holding this process up.
        let _ = self.remove(DROP_PATIENCE);
        self.watchdog.take();
    }
}

/// Makes every uprobe of `list` that must be inherited safe to inherit (see the module
/// docs). A uprobe must be inherited when `per_task` (the events are opened on tasks,
/// not system-wide) and its attr, or its group leader's, has `inherit` set.
///
/// Never fails: when definitions cannot be written, the uprobes' groups lose `inherit`
/// and [`Installed::notice`] says so. Keep [`Installed::probes`] alive until every fd
/// of `list` is closed.
pub fn install(list: &mut EventList, per_task: bool) -> Installed {
    let mut need: Vec<usize> = Vec::new();
    let groups = list.groups();
    if per_task {
        for g in &groups {
            let inherit = g.clone().any(|i| list.events[i].attr.inherit);
            need.extend(g.clone().filter(|&i| {
                let e = &list.events[i];
                inherit && e.class == Class::Uprobe && e.attr.uprobe_path.is_some()
            }));
        }
    }
    if need.is_empty() {
        return Installed::default();
    }
    match define(list, &need) {
        Ok(probes) => Installed {
            probes: Some(probes),
            notice: None,
        },
        Err(reason) => {
            for g in groups.iter().filter(|g| need.iter().any(|i| g.contains(i))) {
                for i in g.clone() {
                    list.events[i].attr.inherit = false;
                }
            }
            let names: Vec<&str> = need.iter().map(|&i| list.events[i].name.as_str()).collect();
            Installed {
                probes: None,
                notice: Some(format!(
                    "{reason}: counting {} without inheritance, so calls in the target's child processes and new threads are not counted",
                    names.join(", ")
                )),
            }
        }
    }
}

/// Writes a definition for each event of `need` and rewrites their attrs; on error,
/// `list` is unchanged and nothing is left defined.
fn define(list: &mut EventList, need: &[usize]) -> Result<Probes, String> {
    let _lock = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    let tracefs =
        crate::sysfs::tracefs().map_err(|e| format!("cannot define inheritable uprobes: {e}"))?;
    let control = tracefs.join("uprobe_events");
    if !control.is_file() {
        return Err(format!(
            "cannot define inheritable uprobes: {} does not exist (kernel without CONFIG_UPROBE_EVENTS)",
            control.display()
        ));
    }
    let mut f = open_control(&control).map_err(|e| {
        format!(
            "cannot define inheritable uprobes in {} ({}; run as root with tracefs mounted read-write)",
            control.display(),
            crate::error::io_text(&e)
        )
    })?;
    remove_stale(&tracefs, &mut f);

    // Every definition line, checked before anything is written.
    let mut lines = Vec::with_capacity(need.len());
    for &i in need {
        let e = &list.events[i];
        let a = &e.attr;
        let path = a.uprobe_path.as_deref().unwrap_or_default();
        if path.is_empty() || path.contains(|c: char| c.is_whitespace() || c == '#') {
            return Err(format!(
                "cannot define {} in uprobe_events: its path has a space or '#', which uprobe_events cannot take (run a copy of the binary from a path without them)",
                e.name
            ));
        }
        let ret = match retprobe_bit()
            .map_err(|why| format!("cannot define {} in uprobe_events: {why}", e.name))?
        {
            Some(bit) if a.config & !bit == 0 => a.config & bit != 0,
            _ => {
                return Err(format!(
                    "cannot define {} in uprobe_events: unexpected uprobe config {:#x}",
                    e.name, a.config
                ));
            }
        };
        lines.push((i, ret, path.to_string(), a.config2, base_name(&e.name, ret)));
    }

    let group = format!("{GROUP_PREFIX}{}", std::process::id());
    let capacity = lines.len() * (group.len() + MAX_NAME + 16) + 64;
    let watchdog = sys::Cleaner::spawn(&control, capacity, WATCHDOG_PATIENCE).map_err(|e| {
        format!(
            "cannot start the watchdog that removes uprobe definitions ({})",
            crate::error::io_text(&e)
        )
    })?;
    let mut probes = Probes {
        tracefs: tracefs.clone(),
        group,
        events: Vec::new(),
        watchdog: Some(watchdog),
    };
    let mut ids = Vec::with_capacity(lines.len());
    for (i, ret, path, offset, base) in lines {
        let name = free_name(&tracefs, &probes.group, &base);
        let del = delete_line(&probes.group, &name);
        // The watchdog learns how to undo it before it exists.
        if let Some(w) = &probes.watchdog {
            w.send(&del).map_err(|e| {
                format!(
                    "cannot reach the uprobe watchdog ({})",
                    crate::error::io_text(&e)
                )
            })?;
        }
        let def = format!(
            "{}:{}/{name} {path}:{offset:#x}",
            if ret { 'r' } else { 'p' },
            probes.group
        );
        write_line(&mut f, &def).map_err(|e| {
            format!(
                "cannot define inheritable uprobes in {} (`{def}`: {})",
                control.display(),
                crate::error::io_text(&e)
            )
        })?;
        probes.events.push((i, name.clone()));
        let id = crate::sysfs::tracepoint_id(&tracefs, &probes.group, &name).map_err(|e| {
            format!(
                "cannot read the id of {}/{name} ({})",
                probes.group,
                crate::error::without_os_error_code(&e.to_string())
            )
        })?;
        ids.push((i, id));
    }
    for (i, id) in ids {
        let a = &mut list.events[i].attr;
        a.type_ = types::TRACEPOINT;
        a.config = id;
        a.config1 = 0;
        a.config2 = 0;
        a.uprobe_path = None;
        if a.sample_type != 0 {
            // Samples of a tracepoint carry its raw record, as `perf record` gives every
            // tracepoint: `perf report` reads tracepoint samples through it (perf 6.1
            // crashes on one without).
            a.sample_type |= crate::attr::sample::RAW;
        }
    }
    Ok(probes)
}

/// `uprobe_events`, opened to append commands (never `O_TRUNC`: truncating it deletes
/// every uprobe of the system).
fn open_control(path: &Path) -> io::Result<fs::File> {
    fs::OpenOptions::new().append(true).open(path)
}

/// Writes one command in one `write` (the kernel runs each write's lines; a short write
/// would cut a command).
fn write_line(f: &mut fs::File, line: &str) -> io::Result<()> {
    let cmd = format!("{line}\n");
    let n = f.write(cmd.as_bytes())?;
    if n != cmd.len() {
        return Err(io::Error::other(format!(
            "short write ({n} of {} bytes)",
            cmd.len()
        )));
    }
    Ok(())
}

fn delete_line(group: &str, name: &str) -> String {
    format!("-:{group}/{name}")
}

/// The `retprobe` bit of the uprobe PMU's config (`config:0` on every kernel so far).
fn retprobe_bit() -> Result<Option<u64>, String> {
    let dir = Path::new(crate::sysfs::PMU_ROOT).join("uprobe");
    let mut fds = None;
    let pmu = crate::sysfs::Pmu::read_noting(&dir, &mut fds);
    if let Some(n) = fds {
        return Err(format!(
            "reading {} ({})",
            dir.display(),
            crate::error::fds_hint(n)
        ));
    }
    let Some(pmu) = pmu else {
        return Ok(Some(1));
    };
    Ok(retprobe_bit_of(&pmu))
}

fn retprobe_bit_of(pmu: &crate::sysfs::Pmu) -> Option<u64> {
    let term = pmu.format.term("retprobe")?;
    let mut fields = [0u64; 4];
    term.apply(1, &mut fields).ok()?;
    (fields[1..].iter().all(|&f| f == 0) && fields[0].count_ones() == 1).then_some(fields[0])
}

/// A tracefs event name for the uprobe named `name` (`uprobe:/bin/app:parse+0x10`):
/// the function and offset as an identifier (`parse_0x10`, `addr_0x1149` for an
/// address), `__return` appended for a uretprobe as perf does.
pub fn base_name(name: &str, ret: bool) -> String {
    let body = ["uprobe:", "uretprobe:", "ur:", "u:"]
        .iter()
        .find_map(|p| name.strip_prefix(p))
        .unwrap_or(name);
    // `/path:func[+off]`, maybe followed by `:mods` from a group.
    let mut parts: Vec<&str> = body.split(':').collect();
    if parts.len() > 2
        && parts
            .last()
            .is_some_and(|m| !m.is_empty() && m.chars().all(|c| "ukhGHpPDIS".contains(c)))
    {
        parts.pop();
    }
    let target = parts.last().copied().unwrap_or("");
    let mut id: String = target
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if id.is_empty() || id.starts_with(|c: char| c.is_ascii_digit()) {
        id = format!("addr_{id}");
    }
    if ret {
        id.push_str("__return");
    }
    id.truncate(MAX_NAME);
    id
}

/// `base`, or `base_N` for the first N with no such event in `group` yet.
fn free_name(tracefs: &Path, group: &str, base: &str) -> String {
    let dir = tracefs.join("events").join(group);
    let mut name = base.to_string();
    let mut n = 1;
    while dir.join(&name).exists() {
        name = format!("{base}_{n}");
        n += 1;
    }
    name
}

/// The `(group, event)` of every `hwprof_<PID>` definition in `uprobe_events` text whose
/// process is gone (`alive` says which PIDs exist), other than `own_pid`'s.
pub fn stale_definitions(
    text: &str,
    own_pid: u32,
    alive: impl Fn(i32) -> bool,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        // `p:GROUP/EVENT PATH:0xOFF ...` or `r:GROUP/EVENT ...`
        let Some(head) = line.split_whitespace().next() else {
            continue;
        };
        let Some((_, ge)) = head.split_once(':') else {
            continue;
        };
        let Some((group, event)) = ge.split_once('/') else {
            continue;
        };
        let Some(pid) = group
            .strip_prefix(GROUP_PREFIX)
            .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        if pid as u32 != own_pid && !alive(pid) && !event.is_empty() {
            out.push((group.to_string(), event.to_string()));
        }
    }
    out
}

/// Deletes the definitions left behind by hwprof processes that are gone (killed before
/// they and their watchdog could). Best effort: errors are ignored.
fn remove_stale(tracefs: &Path, f: &mut fs::File) {
    let Ok(text) = fs::read_to_string(tracefs.join("uprobe_events")) else {
        return;
    };
    for (group, event) in stale_definitions(&text, std::process::id(), sys::process_exists) {
        let _ = write_line(f, &delete_line(&group, &event));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_identifiers_from_the_function() {
        assert_eq!(base_name("uprobe:/tmp/w/forker:target", false), "target");
        assert_eq!(
            base_name("uretprobe:/tmp/w/forker:target", true),
            "target__return"
        );
        assert_eq!(base_name("u:/bin/x:parse+0x10", false), "parse_0x10");
        assert_eq!(base_name("uprobe:/bin/x:0x1149", false), "addr_0x1149");
        assert_eq!(base_name("uprobe:/bin/x:f.cold:u", false), "f_cold");
        let long = format!("uprobe:/bin/x:{}", "a".repeat(200));
        assert_eq!(base_name(&long, true).len(), MAX_NAME);
    }

    #[test]
    fn the_watchdog_writes_its_lines_when_we_close_it() {
        let dir = std::env::temp_dir().join(format!("hwprof-cleaner-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let control = dir.join("control");
        fs::write(&control, "").unwrap();
        let w = sys::Cleaner::spawn(&control, 64, Duration::from_secs(1)).unwrap();
        w.send("-:hwprof_1/a").unwrap();
        w.send("-:hwprof_1/b").unwrap();
        // Past the capacity: dropped whole, never cut.
        w.send(&"x".repeat(100)).unwrap();
        assert_eq!(
            fs::read_to_string(&control).unwrap(),
            "",
            "nothing before EOF"
        );
        drop(w);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut text = String::new();
        while Instant::now() < deadline {
            text = fs::read_to_string(&control).unwrap();
            if !text.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(50));
        let text2 = fs::read_to_string(&control).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(text, "-:hwprof_1/a\n-:hwprof_1/b\n");
        assert_eq!(text2, text, "each line written once");
    }

    #[test]
    fn stale_groups_are_those_of_dead_pids() {
        let text = "p:hwprof_100/target /tmp/a:0x0000000000001149\n\
                    r:hwprof_100/target__return /tmp/a:0x0000000000001149\n\
                    p:hwprof_200/f /tmp/b:0x10\n\
                    p:hwprof_300/g /tmp/c:0x10\n\
                    p:probe_x/target /tmp/a:0x1149\n\
                    p:hwprof_x1/h /tmp/d:0x1\n\
                    garbage\n";
        let alive = |p: i32| p == 200;
        let s = stale_definitions(text, 300, alive);
        assert_eq!(
            s,
            vec![
                ("hwprof_100".to_string(), "target".to_string()),
                ("hwprof_100".to_string(), "target__return".to_string()),
            ]
        );
    }
}
