//! The binary's errors: [`Usage`] (exit 2) and [`ExitWith`] (a given code) beside the
//! libraries' typed errors; how one prints ([`error_line`]) and which exit code it means
//! ([`exit_code_of`]). It uses only the libraries and
//! `render`'s escaping, and every cli file may use it.

/// An error in what the user asked for (exit code 2), as opposed to a failure while
/// doing it (exit code 1).
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// A failure that must exit with a specific code (e.g. 127: command not found).
#[derive(Debug)]
pub struct ExitWith(pub u8, pub String);

impl std::fmt::Display for ExitWith {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.1)
    }
}

impl std::error::Error for ExitWith {}

/// Returns a usage error.
pub fn usage<T>(msg: impl Into<String>) -> anyhow::Result<T> {
    Err(Usage(msg.into()).into())
}

/// The one line an error prints: its chain of causes joined with `: `, each said once.
///
/// Errors that carry a source often print it in their own message too (`cannot write
/// X: No such file or directory`, then the I/O error itself), so a cause whose text is
/// already in the line is left out; and Rust's ` (os error N)` after an OS error's text
/// is dropped (the text says it). Every error hwprof prints goes through here, and
/// what it quotes (a path, a comm name, an input line) is escaped
/// ([`crate::render::escape`]): the line holds no control character.
pub fn error_line(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for e in err.chain() {
        let text = hwprof_pmu::error::without_os_error_code(&e.to_string()).replace('\n', " ");
        let text = text.trim();
        if text.is_empty() || parts.iter().any(|p| p.contains(text)) {
            continue;
        }
        // `writing X`, then a cause that says `writing X: ...` itself: said once.
        if let Some(last) = parts.last_mut()
            && text
                .strip_prefix(last.as_str())
                .is_some_and(|rest| rest.starts_with(": "))
        {
            *last = text.to_string();
            continue;
        }
        parts.push(text.to_string());
    }
    crate::render::escape(&with_fds_hint(err, parts.join(": "))).into_owned()
}

/// `line` with what to do about running out of file descriptors when that is a cause of
/// `err` and the line does not say it yet (a `fork`, a pipe or a sysfs read that hit
/// the limit only says "Too many open files").
fn with_fds_hint(err: &anyhow::Error, line: String) -> String {
    let errno = err.chain().find_map(|e| {
        let n = if let Some(io) = e.downcast_ref::<std::io::Error>() {
            io.raw_os_error()
        } else if let Some(pe) = e.downcast_ref::<hwprof_pmu::Error>() {
            pe.raw_os_error()
        } else if let Some(se) = e.downcast_ref::<hwprof_sampler::Error>() {
            se.raw_os_error()
        } else {
            None
        };
        n.filter(|&n| n == libc::EMFILE || n == libc::ENFILE)
    });
    match errno {
        Some(n) if !line.contains("ulimit") && !line.contains("file-max") => {
            format!("{line} ({})", hwprof_pmu::error::fds_hint(n))
        }
        _ => line,
    }
}

/// Whether `err` comes from writing into a pipe whose reader has gone (`| head`): such
/// a command ends quietly with exit 0, whatever the writer (a `write!`, serde_json,
/// an [`hwprof_sampler::outfile::Output`]) and however deep the I/O error is wrapped.
///
/// Errors must keep their types for this: `anyhow!("...: {e}")` turns a cause into
/// text that no one can recognise (bench wraps failures with [`ExitWith`] only after
/// asking this).
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(cause_is_broken_pipe)
}

fn cause_is_broken_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    if let Some(io) = e.downcast_ref::<std::io::Error>() {
        // An io::Error may carry another error (`io::Error::other`), serde_json's say.
        return io.kind() == std::io::ErrorKind::BrokenPipe
            || io
                .get_ref()
                .is_some_and(|inner| cause_is_broken_pipe(inner));
    }
    // serde_json keeps the io::Error inside: its `source()` skips it.
    e.downcast_ref::<serde_json::Error>()
        .is_some_and(|j| j.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe))
}

/// The [`Stopped`](hwprof_sampler::outfile::Stopped) behind `err`: an output whose
/// reader was missing or stalled, given up on Ctrl-C or SIGTERM.
pub fn stopped(err: &anyhow::Error) -> Option<&hwprof_sampler::outfile::Stopped> {
    use hwprof_sampler::outfile::Stopped;
    err.chain().find_map(|e| {
        e.downcast_ref::<Stopped>()
            .or_else(|| e.downcast_ref::<std::io::Error>().and_then(Stopped::find))
    })
}

/// 2 for errors in the user's input (events, flags), 128 + the signal for an output
/// given up on a signal (130 when it is not known), 1 for everything else.
pub fn exit_code_of(err: &anyhow::Error) -> u8 {
    if let Some(s) = stopped(err) {
        return s
            .signal
            .and_then(|n| u8::try_from(128 + n).ok())
            .unwrap_or(130);
    }
    for e in err.chain() {
        if e.downcast_ref::<Usage>().is_some() {
            return 2;
        }
        if let Some(ExitWith(code, _)) = e.downcast_ref::<ExitWith>() {
            return *code;
        }
        if let Some(pe) = e.downcast_ref::<hwprof_pmu::Error>() {
            return pmu_exit_code(pe);
        }
        // The sampler passes the PMU layer's errors on transparently (a command that
        // cannot run: 127 or 126, as in stat).
        if let Some(hwprof_sampler::Error::Pmu(pe)) = e.downcast_ref::<hwprof_sampler::Error>() {
            return pmu_exit_code(pe);
        }
    }
    1
}

/// 2 when a pmu error is about the user's input (an event, a uprobe target, an event
/// file), 127 or 126 for a command that cannot run, else 1.
pub fn pmu_exit_code(e: &hwprof_pmu::Error) -> u8 {
    use hwprof_pmu::Error as E;
    match e {
        E::Syntax { .. }
        | E::UnknownEvent { .. }
        | E::ForeignEvent { .. }
        | E::EventFileForOtherCpu { .. }
        | E::BadModifier { .. }
        | E::UnknownPmu { .. }
        | E::UnknownTerm { .. }
        | E::TermOverflow { .. }
        | E::UnknownModel(_)
        | E::UnknownTracepoint { .. }
        | E::Probe { .. }
        | E::EventFile { .. } => 2,
        // A shell's codes for a command that cannot run: 127 not found, 126 not executable.
        E::Exec { source, .. } if source.raw_os_error() == Some(libc::ENOENT) => 127,
        E::Exec { .. } => 126,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_print_once() {
        let io = || std::io::Error::from_raw_os_error(libc::ENOENT);
        let inner = hwprof_sampler::Error::io("cannot create the output in /nonexistent", io());
        let err = anyhow::Error::from(inner).context("cannot write /nonexistent/x");
        assert_eq!(
            error_line(&err),
            "cannot write /nonexistent/x: cannot create the output in /nonexistent: No such file or directory"
        );
        let plain = anyhow::Error::from(io()).context("reading x");
        assert_eq!(error_line(&plain), "reading x: No such file or directory");
        let text = anyhow::anyhow!("a (os error x) b (os error 12) c (os error 3");
        assert_eq!(error_line(&text), "a (os error x) b c (os error 3");
        // A cause that repeats its context's words first says them once.
        let inner = hwprof_sampler::Error::io("writing f", io());
        let err = anyhow::Error::from(inner).context("writing f");
        assert_eq!(error_line(&err), "writing f: No such file or directory");
    }

    /// What an error quotes (a comm, a path, an input line) cannot put a control
    /// character on the terminal.
    #[test]
    fn error_lines_hold_no_control_characters() {
        let err = anyhow::anyhow!("no sample of 'a\x1b[31mb\nc;d'").context("reading x\ty");
        let line = error_line(&err);
        // Line breaks join an error's lines (some span several); the rest is escaped.
        assert_eq!(line, "reading x\\ty: no sample of 'a\\x1b[31mb c;d'");
        assert!(!line.chars().any(char::is_control), "{line:?}");
    }

    #[test]
    fn running_out_of_file_descriptors_says_what_to_do() {
        let emfile = || std::io::Error::from_raw_os_error(libc::EMFILE);
        let e = hwprof_sampler::Error::io("cannot start 'true'", emfile());
        let line = error_line(&anyhow::Error::from(e));
        assert!(
            line.starts_with("cannot start 'true': Too many open files (the limit is "),
            "{line}"
        );
        assert!(line.ends_with("raise it with `ulimit -n 65536`)"), "{line}");
        let enfile = anyhow::Error::from(std::io::Error::from_raw_os_error(libc::ENFILE));
        assert!(error_line(&enfile).contains("file-max"));
        // Said once when the message has it already.
        let pe = hwprof_pmu::Error::Open {
            event: "x".into(),
            source: emfile(),
            hint: "raise it with `ulimit -n 65536`".into(),
        };
        assert_eq!(error_line(&pe.into()).matches("ulimit").count(), 1);
    }

    /// A closed pipe is recognised whatever wrote into it: serde_json hides its
    /// io::Error from `source()`, and an io::Error may wrap another.
    #[test]
    fn broken_pipes_are_found_through_serde_json_and_wrappers() {
        struct Closed;
        impl std::io::Write for Closed {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let json = serde_json::to_writer(Closed, &[1, 2, 3]).expect_err("closed");
        assert!(is_broken_pipe(
            &anyhow::Error::from(json).context("writing JSON")
        ));
        let io = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let out = hwprof_sampler::outfile::Error::Io {
            context: "writing -".into(),
            source: io,
        };
        assert!(is_broken_pipe(&anyhow::Error::from(out)));
        let json = serde_json::to_writer(Closed, &[1]).expect_err("closed");
        assert!(is_broken_pipe(&std::io::Error::other(json).into()));
        assert!(!is_broken_pipe(&anyhow::anyhow!("Broken pipe")));
        let full = std::io::Error::from_raw_os_error(libc::ENOSPC);
        assert!(!is_broken_pipe(&full.into()));
    }
}
