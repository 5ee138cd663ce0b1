//! What to count or sample: ONE type ([`Target`]) and ONE parser ([`Target::parse`]) for
//! every command: a command to start, running processes (`-p`), threads (`-t`), or CPUs
//! (`-a`, `-C`), or one of those while a command runs; and [`Watch`], which waits until a
//! target is gone, a deadline passes or the program is stopped ([`Stop`]).
//!
//! A command given with `-p`, `-t`, `-a` or `-C` only bounds the time, as in perf
//! (`perf stat -p PID -- sleep 1`, `perf record -a -- sleep 5`): the processes, threads
//! or CPUs are counted from just before the command starts until it exits
//! ([`Target::During`]); the command itself is counted only when it runs on those CPUs.
//! The rule is the same for every command.
//!
//! The parser checks, in this order: that one target is given ([`TargetError::Several`]),
//! then its values (PID/TID lists, CPU lists, and what the command's [`Rules`] ask: live
//! processes, online CPUs), then that there is one at all ([`TargetError::Missing`]).
//! Errors are data: the program words them for its command.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::stop::Stop;
use crate::{sys, sysfs};

/// What to count or sample.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target {
    /// Start this command (argv): its events start at its `exec`, and with inheritance
    /// they follow its children and threads.
    Command(Vec<String>),
    /// Count or sample `of` (processes, threads or CPUs) while this command runs: from
    /// just before it starts until it exits (perf's `-p PID -- sleep 1`, `-a -- CMD`).
    /// The command is counted only where `of` covers it (on CPUs).
    During {
        /// The command that bounds the time.
        argv: Vec<String>,
        /// What is counted: [`Target::Pids`], [`Target::Tids`] or
        /// [`Target::SystemWide`].
        of: Box<Target>,
    },
    /// Attach to these running processes (all their threads).
    Pids(Vec<i32>),
    /// Attach to these threads.
    Tids(Vec<i32>),
    /// Every task on these CPUs (`None` = every online CPU).
    SystemWide {
        /// The `-C` CPU list.
        cpus: Option<Vec<u32>>,
    },
}

/// The target flags as the user gave them (perf's names).
#[derive(Clone, Copy, Debug, Default)]
pub struct Flags<'a> {
    /// The command after `--` (empty: none).
    pub command: &'a [String],
    /// `-p PID,..`.
    pub pid: Option<&'a str>,
    /// `-t TID,..`.
    pub tid: Option<&'a str>,
    /// `-a`.
    pub all_cpus: bool,
    /// `-C CPUS`.
    pub cpus: Option<&'a str>,
}

/// What a command checks of the values of its target.
#[derive(Clone, Copy, Debug, Default)]
pub struct Rules {
    /// Every `-p`/`-t` id must name a process or thread that exists now.
    pub live_ids: bool,
    /// Every `-C` CPU must be online.
    pub online_cpus: bool,
}

/// Why the target flags do not make a target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// Two or more of `-p`, `-t` and `-a`/`-C`.
    #[error(
        "give one target: a command, or -p, -t, or -a/-C (with a command, they are counted while it runs)"
    )]
    Several,
    /// No target at all.
    #[error("nothing to do: give a command, or -p, -t, or -a")]
    Missing,
    /// A `-p`/`-t` list that is not a list of ids above 0.
    #[error(
        "bad {flag} list '{text}': {why} (expected {} like 1234,5678)",
        ids_name(flag)
    )]
    BadIds {
        /// `-p` or `-t`.
        flag: &'static str,
        /// The list as given.
        text: String,
        /// What is wrong in it.
        why: String,
    },
    /// A `-C` list that is not a CPU list; the message names it.
    #[error("{0}")]
    BadCpus(String),
    /// A `-C` CPU that is not online.
    #[error("CPU {cpu} is not online (online CPUs: {online})")]
    Offline {
        /// The CPU.
        cpu: u32,
        /// The online CPUs, as a CPU list.
        online: String,
    },
    /// A `-p`/`-t` id that names no process ([`Rules::live_ids`]).
    #[error("no such process {pid} ({flag} {text})")]
    NoSuchProcess {
        /// The id.
        pid: i32,
        /// `-p` or `-t`.
        flag: &'static str,
        /// The list as given.
        text: String,
    },
}

fn ids_name(flag: &str) -> &'static str {
    if flag == "-t" { "TIDs" } else { "PIDs" }
}

impl Target {
    /// The one target parser (see the module docs for the order of its checks).
    pub fn parse(f: &Flags<'_>, rules: Rules) -> Result<Target, TargetError> {
        let system_wide = f.all_cpus || f.cpus.is_some();
        let attached =
            usize::from(f.pid.is_some()) + usize::from(f.tid.is_some()) + usize::from(system_wide);
        if attached > 1 {
            return Err(TargetError::Several);
        }
        let of = if let Some(p) = f.pid {
            Some(Target::Pids(ids(p, "-p", rules)?))
        } else if let Some(t) = f.tid {
            Some(Target::Tids(ids(t, "-t", rules)?))
        } else if system_wide {
            let cpus = match f.cpus {
                Some(c) => Some(cpu_list(c, rules)?),
                None => None,
            };
            Some(Target::SystemWide { cpus })
        } else {
            None
        };
        match (f.command.is_empty(), of) {
            (false, Some(of)) => Ok(Target::During {
                argv: f.command.to_vec(),
                of: Box::new(of),
            }),
            (false, None) => Ok(Target::Command(f.command.to_vec())),
            (true, Some(of)) => Ok(of),
            (true, None) => Err(TargetError::Missing),
        }
    }

    /// The command to start, if the target has one (counted, or bounding the time).
    pub fn argv(&self) -> Option<&[String]> {
        match self {
            Target::Command(argv) | Target::During { argv, .. } => Some(argv),
            _ => None,
        }
    }

    /// What is attached to (processes, threads or CPUs), with or without a command
    /// bounding the time; `None` for a command counted on its own tasks.
    pub fn attached(&self) -> Option<&Target> {
        match self {
            Target::Command(_) => None,
            Target::During { of, .. } => Some(of),
            other => Some(other),
        }
    }

    /// The processes or threads attached to (`-p`, `-t`, with or without a command);
    /// empty for other targets.
    pub fn processes(&self) -> &[i32] {
        match self.attached() {
            Some(Target::Pids(p) | Target::Tids(p)) => p,
            _ => &[],
        }
    }

    /// Whether events are opened per CPU for every task (`-a`, `-C`), with or without a
    /// command.
    pub fn is_system_wide(&self) -> bool {
        matches!(self.attached(), Some(Target::SystemWide { .. }))
    }

    /// The CPUs of a system-wide target (the `-C` list, or every online CPU); `None` for
    /// other targets.
    pub fn cpus(&self) -> Option<Vec<u32>> {
        match self.attached() {
            Some(Target::SystemWide { cpus }) => {
                Some(cpus.clone().unwrap_or_else(sysfs::online_cpus))
            }
            _ => None,
        }
    }
}

/// The process or thread ids of `-p`/`-t` (`flag`): comma-separated numbers above 0
/// (duplicates are kept, spaces around items allowed); an empty item (`1,,2`, a
/// trailing comma), anything else, or an empty list is an error.
pub fn parse_ids(text: &str, flag: &'static str) -> Result<Vec<i32>, TargetError> {
    let bad = |why: String| TargetError::BadIds {
        flag,
        text: text.to_string(),
        why,
    };
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(bad("an empty item".to_string()));
        }
        match item.parse::<i32>() {
            Ok(n) if n > 0 => out.push(n),
            _ => return Err(bad(format!("'{item}' is not a number above 0"))),
        }
    }
    Ok(out)
}

fn ids(text: &str, flag: &'static str, rules: Rules) -> Result<Vec<i32>, TargetError> {
    let out = parse_ids(text, flag)?;
    if rules.live_ids {
        if let Some(&pid) = out.iter().find(|&&p| !sys::process_exists(p)) {
            return Err(TargetError::NoSuchProcess {
                pid,
                flag,
                text: text.to_string(),
            });
        }
    }
    Ok(out)
}

fn cpu_list(text: &str, rules: Rules) -> Result<Vec<u32>, TargetError> {
    let v = sysfs::parse_cpu_list(text).map_err(TargetError::BadCpus)?;
    if rules.online_cpus {
        let online = sysfs::online_cpus();
        if let Some(&cpu) = v.iter().find(|c| !online.contains(c)) {
            return Err(TargetError::Offline {
                cpu,
                online: cpu_list_text(&online),
            });
        }
    }
    Ok(v)
}

/// A sorted CPU list as the kernel writes one: `0-2,5,7-8`.
pub fn cpu_list_text(cpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// Every thread of process `pid`, sorted, from `/proc/PID/task` (the error of reading
/// that directory: ENOENT when the process is gone).
pub fn threads_of(pid: i32) -> std::io::Result<Vec<i32>> {
    let rd = std::fs::read_dir(format!("/proc/{pid}/task"))?;
    let mut v: Vec<i32> = rd
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    v.sort_unstable();
    Ok(v)
}

/// Every process of `/proc` (its numeric entries), sorted; none when it is unreadable.
pub fn processes() -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut v: Vec<i32> = rd
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    v.sort_unstable();
    v
}

/// Thread `tid` of process `pid`'s scheduler state as `/proc/PID/task/TID/stat` shows
/// it (`R` running or runnable, `S`, `D`, ...), `None` when it is gone. The state
/// follows the comm's closing parenthesis (a comm may hold any byte but NUL).
pub fn thread_state(pid: i32, tid: i32) -> Option<char> {
    use std::io::Read;
    let mut stat = String::new();
    std::fs::File::open(format!("/proc/{pid}/task/{tid}/stat"))
        .ok()?
        .take(64 * 1024) // a few hundred bytes
        .read_to_string(&mut stat)
        .ok()?;
    stat.get(stat.rfind(')')? + 1..)?
        .trim_start()
        .chars()
        .next()
}

/// The owner of a process this program may not read, as the kernel's ptrace read check
/// (`PTRACE_MODE_READ_REALCREDS`, which `perf_event_open` makes on a task) sees it: its
/// real, effective and saved uids and gids are not all our real ones, and we lack
/// CAP_SYS_PTRACE. `kernel.perf_event_paranoid` does not lift this.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignOwner {
    /// The process's real uid.
    pub uid: u32,
    /// Its user name, from `/etc/passwd`.
    pub user: Option<String>,
    /// Our real uid.
    pub me: u32,
}

impl std::fmt::Display for ForeignOwner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.user {
            Some(u) => write!(f, "{u} (uid {})", self.uid),
            None => write!(f, "uid {}", self.uid),
        }
    }
}

/// Credentials from `/proc/PID/status`: uids and gids (real, effective, saved) and
/// the effective capabilities.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Creds {
    uids: [u32; 3],
    gids: [u32; 3],
    cap_eff: u64,
}

/// CAP_SYS_PTRACE's bit.
const CAP_SYS_PTRACE: u64 = 1 << 19;

fn creds(status: &str) -> Option<Creds> {
    let ids = |key: &str| -> Option<[u32; 3]> {
        let line = status.lines().find_map(|l| l.strip_prefix(key))?;
        let v: Vec<u32> = line
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        Some([*v.first()?, *v.get(1)?, *v.get(2)?])
    };
    let cap_eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        .unwrap_or(0);
    Some(Creds {
        uids: ids("Uid:")?,
        gids: ids("Gid:")?,
        cap_eff,
    })
}

/// Whether `me` may not read a process with `them` (see [`ForeignOwner`]).
fn ptrace_read_denied(me: &Creds, them: &Creds) -> bool {
    let same =
        them.uids.iter().all(|&u| u == me.uids[0]) && them.gids.iter().all(|&g| g == me.gids[0]);
    !same && me.cap_eff & CAP_SYS_PTRACE == 0
}

/// The owner of process `pid` when this program may not read it (see
/// [`ForeignOwner`]); `None` when it may, or when that cannot be told (the process is
/// gone, `/proc` unreadable).
pub fn foreign_owner(pid: i32) -> Option<ForeignOwner> {
    let status = |p: &str| {
        crate::file::read_to_string(std::path::Path::new(&format!("/proc/{p}/status")), 1 << 20)
            .ok()
    };
    let me = creds(&status("self")?)?;
    let them = creds(&status(&pid.to_string())?)?;
    if !ptrace_read_denied(&me, &them) {
        return None;
    }
    let uid = them.uids[0];
    let user = crate::file::read_to_string(std::path::Path::new("/etc/passwd"), 16 << 20)
        .ok()
        .and_then(|p| {
            p.lines().find_map(|l| {
                let mut f = l.split(':');
                let name = f.next()?;
                (f.nth(1)?.parse::<u32>().ok()? == uid).then(|| name.to_string())
            })
        });
    Some(ForeignOwner {
        uid,
        user,
        me: me.uids[0],
    })
}

/// Why [`Watch::wait`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Woke {
    /// The deadline passed.
    Deadline,
    /// Every watched process and thread is gone.
    Done,
    /// The [`Stop`] was stopped (reported once; later waits leave it out).
    Stopped,
}

/// How often threads (which have no pidfd) are looked for.
const TID_POLL: Duration = Duration::from_millis(100);

/// Waits for targets to end: processes by pidfd (readable when they exit), threads by
/// looking for them every 100 ms. With nothing to watch (CPUs), only a deadline or the
/// stop ends a wait.
#[derive(Debug, Default)]
pub struct Watch {
    /// One per process, `None` once it exited.
    pidfds: Vec<Option<OwnedFd>>,
    tids: Vec<i32>,
    /// The stop was reported: its fd (readable for good) is left out from then on.
    stop_seen: bool,
}

impl Watch {
    /// Nothing watched yet.
    pub fn new() -> Watch {
        Watch::default()
    }

    /// Watches process `pid` (a pidfd; ESRCH when it does not exist).
    pub fn add_pid(&mut self, pid: i32) -> std::io::Result<()> {
        self.pidfds.push(Some(sys::pidfd_open(pid)?));
        Ok(())
    }

    /// Watches threads (or processes) that may have no pidfd.
    pub fn add_tids(&mut self, tids: &[i32]) {
        self.tids.extend_from_slice(tids);
    }

    fn watches_something(&self) -> bool {
        !self.pidfds.is_empty() || !self.tids.is_empty()
    }

    fn all_done(&self) -> bool {
        self.pidfds.iter().all(Option::is_none)
            && !self.tids.iter().any(|&t| sys::process_exists(t))
    }

    /// Waits until `until` passes, every watched target is gone, or `stop` is stopped
    /// (in that order of precedence when several hold). A signal that stops `stop`
    /// while this is about to block still wakes it: its fd is in the wait.
    pub fn wait(&mut self, stop: &Stop, until: Option<Instant>) -> std::io::Result<Woke> {
        loop {
            if self.stop_seen && until.is_none() && !self.watches_something() {
                // Nothing could ever end this wait.
                return Ok(Woke::Stopped);
            }
            let mut timeout: i32 = match until {
                Some(t) => t
                    .saturating_duration_since(Instant::now())
                    .as_millis()
                    .min(i32::MAX as u128) as i32,
                None => -1,
            };
            if !self.tids.is_empty() {
                let tick = TID_POLL.as_millis() as i32;
                timeout = if timeout < 0 { tick } else { timeout.min(tick) };
            }
            let mut fds: Vec<BorrowedFd<'_>> = Vec::new();
            let mut which: Vec<usize> = Vec::new();
            for (i, p) in self.pidfds.iter().enumerate() {
                if let Some(p) = p {
                    fds.push(p.as_fd());
                    which.push(i);
                }
            }
            if !self.stop_seen {
                fds.push(stop.fd());
            }
            let ready = sys::poll_readable(&fds, timeout)?;
            for r in ready {
                if let Some(&i) = which.get(r) {
                    self.pidfds[i] = None;
                }
            }
            if until.is_some_and(|t| Instant::now() >= t) {
                return Ok(Woke::Deadline);
            }
            if self.watches_something() && self.all_done() {
                return Ok(Woke::Done);
            }
            if !self.stop_seen && stop.is_stopped() {
                self.stop_seen = true;
                return Ok(Woke::Stopped);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's id (`/proc/thread-self` is `PID/task/TID`).
    fn own_tid() -> i32 {
        let link = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
        let name = link.file_name().and_then(|n| n.to_str()).expect("tid");
        name.parse().expect("numeric tid")
    }

    /// A thread named so that a parse from the first ')' would read its state wrong,
    /// asleep on a channel: `S`; this one, running: `R`; a thread that is gone: none.
    #[test]
    fn thread_state_reads_past_the_comm() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let t = std::thread::Builder::new()
            .name("a) R (b".into())
            .spawn(move || {
                tid_tx.send(own_tid()).ok();
                rx.recv().ok();
            })
            .expect("spawn");
        let tid = tid_rx.recv().expect("tid");
        let pid = std::process::id() as i32;
        let mut state = thread_state(pid, tid);
        for _ in 0..1000 {
            if state == Some('S') {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
            state = thread_state(pid, tid);
        }
        assert_eq!(state, Some('S'));
        assert_eq!(thread_state(pid, own_tid()), Some('R'));
        tx.send(()).ok();
        t.join().expect("join");
        assert_eq!(thread_state(pid, tid), None);
        assert!(processes().contains(&pid));
    }

    fn flags<'a>(command: &'a [String]) -> Flags<'a> {
        Flags {
            command,
            ..Flags::default()
        }
    }

    #[test]
    fn one_target_of_each_kind() {
        let cmd = vec!["true".to_string()];
        let r = Rules::default();
        assert_eq!(
            Target::parse(&flags(&cmd), r),
            Ok(Target::Command(cmd.clone()))
        );
        let p = Flags {
            pid: Some("1, 2,2"),
            ..Flags::default()
        };
        assert_eq!(Target::parse(&p, r), Ok(Target::Pids(vec![1, 2, 2])));
        let t = Flags {
            tid: Some("7"),
            ..Flags::default()
        };
        assert_eq!(Target::parse(&t, r), Ok(Target::Tids(vec![7])));
        let a = Flags {
            all_cpus: true,
            ..Flags::default()
        };
        assert_eq!(Target::parse(&a, r), Ok(Target::SystemWide { cpus: None }));
        let c = Flags {
            cpus: Some("3,0-1"),
            ..Flags::default()
        };
        assert_eq!(
            Target::parse(&c, r),
            Ok(Target::SystemWide {
                cpus: Some(vec![0, 1, 3])
            })
        );
        assert_eq!(
            Target::parse(&Flags::default(), r),
            Err(TargetError::Missing)
        );
    }

    #[test]
    fn conflicts_come_before_values() {
        let cmd = vec!["x".to_string()];
        let r = Rules::default();
        let two = Flags {
            pid: Some("bad"),
            cpus: Some("bad"),
            ..flags(&cmd)
        };
        assert_eq!(Target::parse(&two, r), Err(TargetError::Several));
        let ca = Flags {
            all_cpus: true,
            cpus: Some("nope"),
            ..flags(&cmd)
        };
        assert_eq!(
            Target::parse(&ca, r),
            Err(TargetError::BadCpus(
                "bad CPU list 'nope': expected e.g. 0-3,8".into()
            ))
        );
        let cp = Flags {
            pid: Some("1,,2"),
            ..flags(&cmd)
        };
        assert!(matches!(
            Target::parse(&cp, r),
            Err(TargetError::BadIds { flag: "-p", .. })
        ));
    }

    /// A command with -p, -t, -a or -C bounds the time, for every command alike
    /// (perf's `stat -p PID -- sleep 1`, `record -a -- sleep 5`).
    #[test]
    fn a_command_with_a_target_bounds_the_time() {
        let cmd = vec!["sleep".to_string(), "1".to_string()];
        let r = Rules::default();
        let during = |of: Target| Target::During {
            argv: cmd.clone(),
            of: Box::new(of),
        };
        let p = Flags {
            pid: Some("7,8"),
            ..flags(&cmd)
        };
        let t = Target::parse(&p, r).expect("-p with a command");
        assert_eq!(t, during(Target::Pids(vec![7, 8])));
        assert_eq!(t.argv(), Some(&cmd[..]));
        assert_eq!(t.attached(), Some(&Target::Pids(vec![7, 8])));
        assert_eq!(t.processes(), &[7, 8]);
        assert!(!t.is_system_wide() && t.cpus().is_none());
        let tt = Flags {
            tid: Some("9"),
            ..flags(&cmd)
        };
        assert_eq!(Target::parse(&tt, r), Ok(during(Target::Tids(vec![9]))));
        let a = Flags {
            all_cpus: true,
            ..flags(&cmd)
        };
        let t = Target::parse(&a, r).expect("-a with a command");
        assert_eq!(t, during(Target::SystemWide { cpus: None }));
        assert!(t.is_system_wide());
        assert_eq!(t.cpus(), Some(sysfs::online_cpus()));
        let c = Flags {
            cpus: Some("0"),
            ..flags(&cmd)
        };
        let t = Target::parse(&c, r).expect("-C with a command");
        assert_eq!(t.cpus(), Some(vec![0]));
        // The command alone is counted on its own tasks: nothing attached.
        let alone = Target::parse(&flags(&cmd), r).expect("command");
        assert_eq!(alone.attached(), None);
        assert!(!alone.is_system_wide());
    }

    #[test]
    fn id_lists_say_what_is_wrong_once() {
        assert_eq!(parse_ids("1", "-p"), Ok(vec![1]));
        for bad in ["1,,2", "1,", ",1", "", "0", "-3", "x", "99999999999", "1;2"] {
            let e = parse_ids(bad, "-p").expect_err(bad).to_string();
            assert!(e.starts_with(&format!("bad -p list '{bad}': ")), "{e}");
        }
        assert_eq!(
            parse_ids("1,,2", "-t").unwrap_err().to_string(),
            "bad -t list '1,,2': an empty item (expected TIDs like 1234,5678)"
        );
        // A bad CPU list is named once (record used to print "bad CPU list 'x': " twice).
        let c = Flags {
            cpus: Some("x"),
            ..Flags::default()
        };
        assert_eq!(
            Target::parse(&c, Rules::default()).unwrap_err().to_string(),
            "bad CPU list 'x': expected e.g. 0-3,8"
        );
    }

    #[test]
    fn rules_check_processes_and_cpus() {
        let live = Rules {
            live_ids: true,
            ..Rules::default()
        };
        let me = std::process::id().to_string();
        let p = Flags {
            pid: Some(&me),
            ..Flags::default()
        };
        assert!(Target::parse(&p, live).is_ok());
        let gone = format!("{me},{}", i32::MAX - 1);
        let p = Flags {
            pid: Some(&gone),
            ..Flags::default()
        };
        assert_eq!(
            Target::parse(&p, live).unwrap_err().to_string(),
            format!("no such process {} (-p {gone})", i32::MAX - 1)
        );
        assert!(Target::parse(&p, Rules::default()).is_ok());
        let online = Rules {
            online_cpus: true,
            ..Rules::default()
        };
        let c = Flags {
            cpus: Some("4095"),
            ..Flags::default()
        };
        let e = Target::parse(&c, online).unwrap_err();
        assert!(matches!(e, TargetError::Offline { cpu: 4095, .. }), "{e:?}");
        assert!(Target::parse(&c, Rules::default()).is_ok());
    }

    #[test]
    fn another_users_process_is_told_apart() {
        let status = |uid: u32, cap: &str| {
            format!(
                "Name:\tx\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nGid:\t{uid}\t{uid}\t{uid}\t{uid}\nCapEff:\t{cap}\n"
            )
        };
        let nobody = creds(&status(65534, "0000000000000000")).expect("creds");
        let root = creds(&status(0, "000001ffffffffff")).expect("creds");
        assert!(ptrace_read_denied(&nobody, &root));
        assert!(
            !ptrace_read_denied(&root, &nobody),
            "CAP_SYS_PTRACE reads anyone's"
        );
        assert!(!ptrace_read_denied(&nobody, &nobody));
        // A setuid process (saved uid root) is not ours either.
        let setuid =
            creds("Uid:\t65534\t0\t0\t0\nGid:\t65534\t65534\t65534\t65534\n").expect("creds");
        assert!(ptrace_read_denied(&nobody, &setuid));
        assert_eq!(creds("Uid:\t1\n"), None);
        assert_eq!(foreign_owner(std::process::id() as i32), None);
    }

    #[test]
    fn cpu_list_text_compacts_ranges() {
        assert_eq!(cpu_list_text(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(cpu_list_text(&[]), "");
    }

    #[test]
    fn our_threads_are_listed() {
        let me = std::process::id() as i32;
        assert!(threads_of(me).expect("threads").contains(&me));
        assert!(threads_of(i32::MAX - 1).is_err());
    }

    #[test]
    fn a_watch_ends_on_deadline_exit_and_stop() {
        let stop = Stop::new().expect("stop");
        // Nothing watched: only the deadline.
        let mut w = Watch::new();
        let t0 = Instant::now();
        let until = t0 + Duration::from_millis(30);
        assert_eq!(w.wait(&stop, Some(until)).expect("wait"), Woke::Deadline);
        assert!(t0.elapsed() >= Duration::from_millis(30));
        // A thread (here a child reaped by another thread) that ends: looked for.
        let mut child = std::process::Command::new("sleep")
            .arg("0.05")
            .spawn()
            .expect("sleep");
        let mut w = Watch::new();
        w.add_tids(&[child.id() as i32]);
        let reaper = std::thread::spawn(move || child.wait());
        assert_eq!(w.wait(&stop, None).expect("wait"), Woke::Done);
        reaper.join().expect("thread").expect("reap");
        // A child process that exits.
        let mut child = std::process::Command::new("sleep")
            .arg("0.05")
            .spawn()
            .expect("sleep");
        let mut w = Watch::new();
        w.add_pid(child.id() as i32).expect("pidfd");
        assert_eq!(w.wait(&stop, None).expect("wait"), Woke::Done);
        child.wait().expect("reap");
        // Stopped: reported once, then left out (the deadline ends the next wait).
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep");
        let mut w = Watch::new();
        w.add_pid(child.id() as i32).expect("pidfd");
        stop.stop();
        assert_eq!(w.wait(&stop, None).expect("wait"), Woke::Stopped);
        let soon = Instant::now() + Duration::from_millis(20);
        assert_eq!(w.wait(&stop, Some(soon)).expect("wait"), Woke::Deadline);
        child.kill().expect("kill");
        assert_eq!(w.wait(&stop, None).expect("wait"), Woke::Done);
        child.wait().expect("reap");
        // Nothing left that could end a wait: it says so instead of blocking.
        assert_eq!(Watch::new().wait(&stop, None).expect("wait"), Woke::Stopped);
        let mut once = Watch::new();
        assert_eq!(once.wait(&stop, None).expect("wait"), Woke::Stopped);
        assert_eq!(once.wait(&stop, None).expect("wait"), Woke::Stopped);
        assert!(Watch::new().add_pid(i32::MAX - 1).is_err());
    }
}
