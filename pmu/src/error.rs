//! Errors of the pmu layer.

use std::io;

/// Everything that can go wrong between an event string and a running counter.
///
/// Messages are one line, say what is wrong, and where there is one, what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The event string does not follow the grammar.
    #[error("bad event syntax in '{input}': {reason}")]
    Syntax {
        /// The whole event string, or the part in error.
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No event of that name exists for this machine (or the `--cpu` model).
    #[error("unknown event '{name}'{}", suggestion_text(.suggestion))]
    UnknownEvent {
        /// The name the user typed.
        name: String,
        /// The nearest known name, if any is close.
        suggestion: Option<String>,
    },
    /// A vendor event name that hwprof's tables have for other CPU models only (an
    /// Intel name on AMD, or the reverse, or another model's name).
    #[error("{message}")]
    ForeignEvent {
        /// The name the user typed.
        name: String,
        /// The models whose tables have it.
        models: Vec<String>,
        /// The whole message: which models have it, what this CPU is, what to do.
        message: String,
    },
    /// An event of an event file made for another vendor's CPU than the one encoded for
    /// (its terms use that vendor's PMU layout).
    #[error("'{name}' is from {path}, an event file for {file_cpu}, not for {this}: {hint}")]
    EventFileForOtherCpu {
        /// The event.
        name: String,
        /// The event file.
        path: String,
        /// The CPU the file is for (`Intel skylakex (GenuineIntel-6-55)`).
        file_cpu: String,
        /// The CPU encoded for (`this CPU (AMD zen5, "AMD EPYC")`, `--cpu zen4`).
        this: String,
        /// What to do.
        hint: String,
    },
    /// A modifier character that perf's grammar does not have.
    #[error(
        "bad modifier '{modifier}' in event '{event}': valid modifiers are u k h G H p pp ppp P"
    )]
    BadModifier {
        /// The event with its modifiers.
        event: String,
        /// The offending modifier text.
        modifier: String,
    },
    /// A `pmu/terms/` event names a PMU that does not exist.
    #[error("unknown PMU '{name}'{}: {hint}", suggestion_text(.suggestion))]
    UnknownPmu {
        /// The PMU name.
        name: String,
        /// The nearest PMU name.
        suggestion: Option<String>,
        /// Why it is missing when that is known, and where to look.
        hint: String,
    },
    /// A `pmu/term=val/` term that the PMU's format does not define.
    #[error("PMU '{pmu}' has no term '{term}' (it has: {known})")]
    UnknownTerm {
        /// The PMU.
        pmu: String,
        /// The term.
        term: String,
        /// The terms it does have, comma-separated.
        known: String,
    },
    /// A term value does not fit the bits the format gives it.
    #[error("value {value:#x} of term '{term}' does not fit in {bits} bits")]
    TermOverflow {
        /// The term.
        term: String,
        /// The value given.
        value: u64,
        /// Bits available.
        bits: u32,
    },
    /// A `--cpu` model name that hwprof does not know.
    #[error(
        "unknown CPU model '{0}': known models are skylake, skylakex, icelake, sapphirerapids, alderlake, zen2, zen3, zen4, zen5"
    )]
    UnknownModel(String),
    /// tracefs is not there (absent, not mounted, no `events/`) and could not be
    /// mounted; the text says which and what to do.
    #[error("tracefs is not available: {0}")]
    NoTracefs(String),
    /// tracefs (or a file in it) is there but this user may not read it: perf's
    /// "permission denied" and its remount hint.
    #[error(
        "permission denied on {path}: run as root, or open tracefs to a group you are in: `sudo mount -o remount,mode=755,gid=GROUP {mount}`"
    )]
    TracefsDenied {
        /// What refused, with its mode and owner when visible.
        path: String,
        /// The tracefs mount point.
        mount: String,
    },
    /// A tracepoint that tracefs does not list.
    #[error("unknown tracepoint '{name}'{}: `hwprof list tracepoint` shows them", suggestion_text(.suggestion))]
    UnknownTracepoint {
        /// `subsystem:event`.
        name: String,
        /// The nearest tracepoint.
        suggestion: Option<String>,
    },
    /// A uprobe target that cannot be resolved.
    #[error("cannot place uprobe on '{target}': {reason}")]
    Probe {
        /// What the user asked for.
        target: String,
        /// Why it fails, with the nearest symbols when the symbol is missing.
        reason: String,
    },
    /// An event file (`--event-file`) that cannot be read or parsed.
    #[error("cannot load event file {path}: {reason}")]
    EventFile {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// `perf_event_open` failed; `hint` explains the errno for this event.
    #[error("cannot open event '{event}': {hint}")]
    Open {
        /// The event's display name.
        event: String,
        /// The errno as the kernel returned it.
        #[source]
        source: io::Error,
        /// What it means and what to do.
        hint: String,
    },
    /// A command could not be executed (`execvp` failed: not found, not executable).
    #[error("cannot run '{program}': {source}")]
    Exec {
        /// The program as given (`argv[0]`).
        program: String,
        /// The errno of `execvp` (ENOENT: not found).
        #[source]
        source: io::Error,
    },
    /// Setting a command up before its `exec` failed (fork, pipes, redirections).
    #[error("starting '{program}': {source}")]
    Start {
        /// The program as given (`argv[0]`).
        program: String,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// A target process or thread that does not exist.
    #[error("no such process: {0} (is the PID right, and did it exit already?)")]
    NoSuchProcess(i32),
    /// Any other I/O failure, with what was being done.
    #[error("{context}: {source}")]
    Io {
        /// What hwprof was doing.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

/// What running out of file descriptors means and what to do: EMFILE is this
/// process's limit (`ulimit -n`), ENFILE the system's table (`fs.file-max`).
pub fn fds_hint(errno: i32) -> String {
    if errno == libc::ENFILE {
        "the system's table of open files is full: close programs, or raise /proc/sys/fs/file-max"
            .to_string()
    } else {
        let lim = crate::sys::open_files_limit().map_or_else(|| "?".to_string(), |l| l.to_string());
        format!("the limit is {lim} open files: raise it with `ulimit -n 65536`")
    }
}

fn suggestion_text(s: &Option<String>) -> String {
    match s {
        Some(s) => format!(" (did you mean '{s}'?)"),
        None => String::new(),
    }
}

impl Error {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// The errno behind this error, when it came from the kernel.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            Error::Open { source, .. }
            | Error::Io { source, .. }
            | Error::Exec { source, .. }
            | Error::Start { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `text` without Rust's ` (os error N)` markers: the OS's own words say what
/// happened, and a user reads the number as noise. Every message hwprof prints about an
/// I/O error goes through here (the binary's error line, the libraries' notices).
pub fn without_os_error_code(text: &str) -> String {
    const MARK: &str = " (os error ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        let after = &rest[at + MARK.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && after[digits..].starts_with(')') {
            out.push_str(&rest[..at]);
            rest = &after[digits + 1..];
        } else {
            out.push_str(&rest[..at + MARK.len()]);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The text of an I/O error without its ` (os error N)` (see [`without_os_error_code`]).
pub fn io_text(e: &std::io::Error) -> String {
    without_os_error_code(&e.to_string())
}

/// The nearest of `candidates` to `name` by edit distance, if it is close enough to be a
/// plausible typo (case-insensitive).
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let lname = name.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = strsim::levenshtein(&lname, &c.to_lowercase());
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    let (d, c) = best?;
    (d <= typo_limit(name)).then(|| c.to_string())
}

/// How many edits a plausible typo of `name` makes.
fn typo_limit(name: &str) -> usize {
    (name.chars().count() / 3).clamp(2, 6)
}

/// Up to five of `names` near `name` (a function the user asked for), nearest first,
/// never names that merely come first. A name's distance is the smaller of its edit
/// distance to `name` (of the whole name, or of its base without a compiler's suffix
/// such as `.constprop.0` or `.isra.0`) and, when it contains `name` (or is contained
/// in it), one plus an eighth of the characters its base has beyond it; a name is near
/// when that is a plausible typo's. So `lef` finds `leaf` (one edit) before
/// `can_vma_merge_left.constprop.0` (2: contains it, 15 characters more), and `merge`
/// finds that one before `leaf` (4 edits). Ties go to the shorter name, then by name.
pub fn nearest_names<'a>(name: &str, names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let lower = name.to_lowercase();
    let chars = lower.chars().count();
    let limit = typo_limit(name);
    let mut scored: Vec<(usize, usize, &str)> = names
        .into_iter()
        .filter_map(|n| {
            let l = n.to_lowercase();
            let base = match l.get(1..).and_then(|t| t.find('.')) {
                Some(dot) => &l[..dot + 1],
                None => &l[..],
            };
            let mut d = strsim::levenshtein(&lower, &l).min(strsim::levenshtein(&lower, base));
            if l.contains(&lower) || lower.contains(&l) {
                d = d.min(1 + base.chars().count().abs_diff(chars) / 8);
            }
            (d <= limit).then(|| (d, l.chars().count(), n))
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.2 == b.2);
    scored
        .into_iter()
        .take(5)
        .map(|(_, _, n)| n.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_read_without_their_code() {
        let e = std::io::Error::from_raw_os_error(libc::EACCES);
        assert_eq!(io_text(&e), "Permission denied");
        assert_eq!(
            without_os_error_code("open x: Is a directory (os error 21); (os error z)"),
            "open x: Is a directory; (os error z)"
        );
    }

    #[test]
    fn suggests_close_names_only() {
        let names = ["cycles", "instructions", "cache-misses", "page-faults"];
        assert_eq!(nearest("cycels", names).as_deref(), Some("cycles"));
        assert_eq!(nearest("page-fault", names).as_deref(), Some("page-faults"));
        assert_eq!(
            nearest("INSTRUCTIONS", names).as_deref(),
            Some("instructions")
        );
        assert_eq!(nearest("zzzzzzzzzzzz", names), None);
    }

    /// Seen in a CI clone whose recording had kernel frames: `annotate lef` named a
    /// kernel function containing "lef" before `leaf`, one edit away.
    #[test]
    fn a_near_typo_comes_before_a_long_name_containing_it() {
        let names = [
            "can_vma_merge_left.constprop.0",
            "finish_task_switch.isra.0",
            "leaf",
            "irqentry_exit_to_user_mode",
        ];
        assert_eq!(
            nearest_names("lef", names),
            ["leaf", "can_vma_merge_left.constprop.0"]
        );
        assert_eq!(
            nearest_names("merge", names)[0],
            "can_vma_merge_left.constprop.0"
        );
        assert_eq!(
            nearest_names("finish_task_swtch", names)[0],
            "finish_task_switch.isra.0"
        );
        assert_eq!(nearest_names("LEAF_", names), ["leaf"]);
        assert!(nearest_names("zzzzzz", names).is_empty());
    }
}
