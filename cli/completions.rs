//! `hwprof completions SHELL` and `hwprof man`: shell completions and man pages made
//! from the clap definitions (clap_complete, clap_mangen), so they never drift from the
//! flags.

use std::path::Path;

use clap::CommandFactory;

use crate::args::{Cli, CompletionsArgs, ManArgs};

/// Prints the completion script for `a.shell` on stdout.
pub fn completions(a: &CompletionsArgs) -> anyhow::Result<u8> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "hwprof", &mut out);
    crate::destination::print(&out)?;
    Ok(0)
}

/// Writes `hwprof.1` and one page per subcommand (`hwprof-record.1`...) into `a.dir`;
/// without one, `hwprof.1` on stdout.
pub fn man(a: &ManArgs) -> anyhow::Result<u8> {
    let cmd = Cli::command();
    let Some(dir) = &a.dir else {
        let mut out = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut out)?;
        crate::destination::print(&out)?;
        return Ok(0);
    };
    // As clap_mangen::generate_to, each page written whole (a temporary file renamed).
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let mut pending = vec![cmd.clone()];
    let mut pages = 0;
    while let Some(c) = pending.pop() {
        pending.extend(c.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
        let man = clap_mangen::Man::new(c);
        let mut out = Vec::new();
        man.render(&mut out)?;
        write_page(&dir.join(man.get_filename()), &out)?;
        pages += 1;
    }
    eprintln!(
        "hwprof: wrote {pages} man pages into {}",
        crate::render::escape(&dir.display().to_string())
    );
    Ok(0)
}

/// One page, written whole or not at all (a temporary file renamed into place).
fn write_page(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let out = crate::destination::open_unwatched(path, &crate::destination::REPORT)?;
    crate::destination::write_output(path, Some(out), bytes)
}
