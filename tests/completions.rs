//! `hwprof completions SHELL` and `hwprof man` (issue 24, point 5): made from the clap
//! definitions, so a new flag or subcommand is in them without anyone writing it.
//! bash's completion runs live: the script is sourced and asked what `hwprof memo<TAB>`
//! and `hwprof memory --lea<TAB>` complete to.

#[macro_use]
mod common;

use std::process::Command;

use common::{Why, hwprof, hwprof_bin, scratch_path, skip};

/// What bash completes the last word of `words` (after `hwprof`) to, with hwprof's
/// script sourced.
fn bash_completes(words: &[&str]) -> Option<Vec<String>> {
    let script = format!(
        "source <('{bin}' completions bash) || exit 3\nCOMP_WORDS=(hwprof {w})\nCOMP_CWORD={n}\n_hwprof hwprof '{cur}' '{prev}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"",
        bin = hwprof_bin(),
        w = words.join(" "),
        n = words.len(),
        cur = words.last().copied().unwrap_or(""),
        prev = if words.len() > 1 {
            words[words.len() - 2]
        } else {
            "hwprof"
        },
    );
    let out = match Command::new("bash").arg("-c").arg(&script).output() {
        Ok(o) => o,
        Err(e) => {
            skip(Why::Setup, format_args!("no bash ({e})"));
            return None;
        }
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

#[test]
fn bash_completes_subcommands_and_their_flags() {
    let Some(sub) = bash_completes(&["memo"]) else {
        return;
    };
    assert_eq!(sub, ["memory"]);
    let Some(flag) = bash_completes(&["memory", "--lea"]) else {
        return;
    };
    assert_eq!(flag, ["--leaks"]);
    let Some(flag) = bash_completes(&["stat", "--json-k"]) else {
        return;
    };
    assert_eq!(flag, ["--json-keys"]);
}

#[test]
fn every_shell_gets_a_script() {
    for (shell, marker) in [
        ("bash", "_hwprof()"),
        ("zsh", "#compdef hwprof"),
        ("fish", "complete -c hwprof"),
        ("elvish", "edit:completion:arg-completer[hwprof]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let run = hwprof(&["completions", shell]);
        run.assert_ok();
        assert!(run.stdout.contains(marker), "{shell}: {}", run.dump());
        // Every subcommand is offered.
        for sub in ["stat", "record", "memory", "io", "completions", "man"] {
            assert!(run.stdout.contains(sub), "{shell} lacks {sub}");
        }
    }
    let bad = hwprof(&["completions", "tcsh"]);
    assert_eq!(bad.code(), 2, "{}", bad.dump());
}

#[test]
fn man_writes_a_page_per_subcommand() {
    let dir = scratch_path("man_pages");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let run = hwprof(&["man", dir.to_str().expect("utf-8")]);
    run.assert_ok();
    // The subcommands as `hwprof --help` lists them.
    let help = hwprof(&["--help"]);
    let subs: Vec<String> = help
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|s| s != "help")
        .collect();
    assert!(subs.len() >= 15, "{}", help.stdout);
    for s in std::iter::once("hwprof".to_string()).chain(subs.iter().map(|s| format!("hwprof-{s}")))
    {
        let page = dir.join(format!("{s}.1"));
        let text =
            std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        assert!(
            text.starts_with(".ie") || text.contains(".TH"),
            "{s}: not a man page"
        );
        assert!(text.contains(&s), "{s}: its name is not in its page");
    }
    // Rendered by man(1), the page of memory names its flags.
    if let Ok(out) = Command::new("man")
        .arg("-l")
        .arg(dir.join("hwprof-memory.1"))
        .env("MANWIDTH", "100")
        .env("MANPAGER", "cat")
        .output()
    {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("--leaks") && text.contains("--min-age"),
            "{text}"
        );
    }
    // Without a directory: hwprof.1 on stdout.
    let top = hwprof(&["man"]);
    top.assert_ok();
    assert!(top.stdout.contains(".TH hwprof 1"), "{}", top.dump());
}
