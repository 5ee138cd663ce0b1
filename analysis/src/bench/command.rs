//! The commands of a benchmark as words: the A command of `--compare` split as a shell
//! would split a simple command, and an argv shown as a shell would read it back.

use super::{Error, Result};

/// Splits a command string into words like a shell would for simple commands: single
/// and double quotes, backslash escapes. Shell syntax (pipes, redirections, `;`, `&`,
/// `$`, backquotes, parentheses) is refused: both sides must run the same way, without
/// a shell's own cost in one of them.
pub fn split_command(s: &str) -> Result<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                        None => return Err(unmatched('\'', s)),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x @ ('"' | '\\' | '$' | '`')) => cur.push(x),
                            Some(x) => {
                                cur.push('\\');
                                cur.push(x);
                            }
                            None => return Err(unmatched('"', s)),
                        },
                        Some('$' | '`') => {
                            return Err(shell_syntax(s));
                        }
                        Some(x) => cur.push(x),
                        None => return Err(unmatched('"', s)),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(x) => cur.push(x),
                    None => {
                        return Err(Error::LoneBackslash {
                            command: s.to_string(),
                        });
                    }
                }
            }
            '|' | '&' | ';' | '<' | '>' | '(' | ')' | '$' | '`' => return Err(shell_syntax(s)),
            x => {
                in_word = true;
                cur.push(x);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    if words.is_empty() {
        return Err(Error::NoCommand);
    }
    Ok(words)
}

fn shell_syntax(s: &str) -> Error {
    Error::ShellSyntax {
        command: s.to_string(),
    }
}

fn unmatched(quote: char, s: &str) -> Error {
    Error::Unmatched {
        quote,
        command: s.to_string(),
    }
}

/// A command line as a shell would read it back: words with spaces or shell
/// characters in single quotes.
pub fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c));
            if plain {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_splitting() {
        assert_eq!(
            split_command("./bench --n 10").unwrap(),
            ["./bench", "--n", "10"]
        );
        assert_eq!(
            split_command(r#"prog 'a b' "c \"d\"" e\ f ''"#).unwrap(),
            ["prog", "a b", "c \"d\"", "e f", ""]
        );
        assert!(
            split_command("a | b")
                .unwrap_err()
                .to_string()
                .contains("shell syntax")
        );
        assert!(
            split_command("echo $HOME")
                .unwrap_err()
                .to_string()
                .contains("shell syntax")
        );
        assert!(
            split_command("'open")
                .unwrap_err()
                .to_string()
                .contains("unmatched")
        );
        assert!(split_command("   ").is_err());
    }

    #[test]
    fn commands_are_shown_quoted() {
        let argv: Vec<String> = ["sh", "-c", "echo a; it's", "x.json"]
            .map(String::from)
            .to_vec();
        assert_eq!(shell_words(&argv), r#"sh -c 'echo a; it'\''s' x.json"#);
    }
}
