//! Names from outside made safe for a terminal: THE escaping of every text output of
//! hwprof (report, script, folded stacks, notes and error messages).
//!
//! A process names itself (`prctl(PR_SET_NAME)`: any 15 bytes), a recording names files
//! and events, an ELF file names its symbols, and a user's input lines are echoed in
//! errors: any of them may hold an escape sequence that rewrites the terminal, a line
//! break that forges an output line, or bytes that are not UTF-8. Printed through
//! [`escape`] (or [`escape_bytes`]), such a name stays on its line and shows what it
//! holds, as Rust's `escape_debug` and `ls --quoting-style=escape` do:
//!
//! | in the name | printed |
//! |---|---|
//! | line feed, carriage return, tab | `\n`, `\r`, `\t` |
//! | other C0 controls and DEL (ESC, NUL, BEL...) | `\x1b`, `\x00`, `\x7f`... |
//! | C1 controls (U+0080 to U+009F) and bidirectional overrides (U+202E...) | `\u{9b}`, `\u{202e}`... |
//! | a byte that is not UTF-8 ([`escape_bytes`]) | `\xff`... |
//! | anything else, backslashes included | itself |
//!
//! Backslashes are left alone, so that ordinary names (paths, C++ symbols) print as
//! they are; a name that holds the text `\x1b` prints the same as one holding ESC. JSON
//! output needs none of this: serde escapes control characters itself. Folded stacks
//! also turn `;` into `:` ([`crate::fold`]).

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is printed escaped (see the module docs).
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// `s` with its control characters escaped (see the module docs); borrowed when it
/// has none.
pub fn escape(s: &str) -> Cow<'_, str> {
    let Some(first) = s.find(needs_escape) else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len() + 8);
    out.push_str(&s[..first]);
    for c in s[first..].chars() {
        if needs_escape(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `bytes` as text: UTF-8 as [`escape`] prints it, every byte that is not UTF-8 as
/// `\xNN`; borrowed when it is UTF-8 with nothing to escape.
pub fn escape_bytes(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(bytes) {
        return escape(s);
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        out.push_str(&escape(chunk.valid()));
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_borrowed() {
        for s in [
            "main",
            "std::vec::Vec<T>::push",
            "/usr/lib/libc.so.6",
            "é ü 日本",
            "a\\b",
        ] {
            assert!(matches!(escape(s), Cow::Borrowed(_)), "{s}");
            assert!(
                matches!(escape_bytes(s.as_bytes()), Cow::Borrowed(_)),
                "{s}"
            );
        }
    }

    #[test]
    fn controls_are_escaped_and_nothing_raw_remains() {
        assert_eq!(escape("a\x1b[31mb\nc;d"), "a\\x1b[31mb\\nc;d");
        assert_eq!(escape("t\tr\r\0\x7f"), "t\\tr\\r\\x00\\x7f");
        assert_eq!(escape("x\u{9b}y\u{202e}z"), "x\\u{9b}y\\u{202e}z");
        assert_eq!(escape_bytes(b"a\xffb\x1b\xc3"), "a\\xffb\\x1b\\xc3");
        assert_eq!(escape_bytes("é\n".as_bytes()), "é\\n");
        // Every byte value, alone and in a name: the result holds no control character.
        for b in 0..=255u8 {
            let name = [b'a', b, b'z'];
            let e = escape_bytes(&name);
            assert!(!e.chars().any(needs_escape), "{b:#x}: {e:?}");
        }
    }
}
