//! perf's event grammar, parsed into a small syntax tree; [`super::Encoder`] gives it
//! meaning.
//!
//! ```text
//! list     := item (',' item)*
//! item     := '{' event (',' event)* '}' [':' mods] | event
//! event    := pmu '/' terms '/' [[':'] mods]      e.g. cpu/event=0xd1,umask=0x20/pp
//!           | 'mem:' ADDR ['/' LEN] [':' rwx] [':' mods]
//!           | ('uprobe'|'uretprobe'|'u'|'ur') ':' PATH ':' (FUNC ['+' OFF] | ADDR)
//!           | sys ':' name [':' mods]             a tracepoint (globs allowed)
//!           | 'r' HEX [':' mods]                  raw
//!           | NAME [':' mods]                     generic, hw-cache, vendor or alias
//! mods     := [ukhGHpPDI]+
//! ```

use crate::error::{Error, Result};

/// One event as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventAst {
    /// What kind of event.
    pub kind: Kind,
    /// Modifier characters (`upp`), possibly empty.
    pub mods: String,
    /// The text as written, for display and errors.
    pub text: String,
}

/// The kinds of event syntax.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A name: generic, hw-cache, vendor table or sysfs alias.
    Name(String),
    /// `rNNNN`.
    Raw(u64),
    /// `pmu/terms/`; a term without value is `None` (means 1, or an alias).
    Pmu {
        /// PMU name.
        pmu: String,
        /// Terms in order.
        terms: Vec<(String, Option<String>)>,
    },
    /// `sys:name`.
    Tracepoint {
        /// Subsystem (may hold globs).
        sys: String,
        /// Event (may hold globs).
        name: String,
    },
    /// `mem:ADDR[/LEN][:rwx]`.
    Breakpoint {
        /// Address.
        addr: u64,
        /// Length in bytes (1, 2, 4, 8).
        len: u64,
        /// Access letters (`r`, `w`, `x`, `rw`...).
        access: String,
    },
    /// A uprobe in bpftrace's syntax.
    Uprobe {
        /// uretprobe.
        ret: bool,
        /// The binary.
        path: String,
        /// Symbol name, empty when an address was given.
        func: String,
        /// Offset from the symbol, or the address when `func` is empty.
        offset: u64,
    },
}

/// One item of a list: an event or a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// A lone event.
    Event(EventAst),
    /// `{a,b,...}` with group modifiers applied to every member.
    Group(Vec<EventAst>, String),
}

/// Modifier letters hwprof accepts.
pub const MODIFIERS: &str = "ukhGHpPDI";

fn is_mods(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| MODIFIERS.contains(c))
}

fn syntax(input: &str, reason: impl Into<String>) -> Error {
    Error::Syntax {
        input: input.to_string(),
        reason: reason.into(),
    }
}

/// Parses a number in C syntax: `0x1f`, `31`, `0b101`.
pub fn parse_num(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if let Some(b) = s.strip_prefix("0b") {
        u64::from_str_radix(b, 2).ok()
    } else {
        s.parse().ok()
    }
}

/// Parses a whole `-e` argument.
pub fn parse_list(input: &str) -> Result<Vec<Item>> {
    let mut items = Vec::new();
    let mut rest = input.trim();
    if rest.is_empty() {
        return Err(syntax(input, "empty event list"));
    }
    loop {
        let (item, tail) = if let Some(inner) = rest.strip_prefix('{') {
            let close = inner
                .find('}')
                .ok_or_else(|| syntax(input, "'{' without '}'"))?;
            let body = &inner[..close];
            let mut tail = &inner[close + 1..];
            let mut mods = String::new();
            if let Some(t) = tail.strip_prefix(':') {
                let end = t.find(',').unwrap_or(t.len());
                mods = t[..end].to_string();
                if !is_mods(&mods) {
                    return Err(Error::BadModifier {
                        event: format!("{{{body}}}"),
                        modifier: mods,
                    });
                }
                tail = &t[end..];
            }
            let mut members = Vec::new();
            let mut b = body.trim();
            if b.is_empty() {
                return Err(syntax(input, "empty group '{}'"));
            }
            loop {
                let (ev, t) = parse_event(b, input)?;
                members.push(ev);
                match t.strip_prefix(',') {
                    Some(t) => b = t.trim_start(),
                    None if t.trim().is_empty() => break,
                    None => return Err(syntax(input, format!("unexpected '{t}' in group"))),
                }
            }
            (Item::Group(members, mods), tail)
        } else {
            let (ev, t) = parse_event(rest, input)?;
            (Item::Event(ev), t)
        };
        items.push(item);
        let tail = tail.trim_start();
        if tail.is_empty() {
            break;
        }
        rest = tail
            .strip_prefix(',')
            .ok_or_else(|| syntax(input, format!("expected ',' before '{tail}'")))?
            .trim_start();
        if rest.is_empty() {
            return Err(syntax(input, "trailing ','"));
        }
    }
    Ok(items)
}

/// Parses one event at the start of `s`; returns it and the unparsed rest (starting at
/// `,` or empty).
fn parse_event<'a>(s: &'a str, whole: &str) -> Result<(EventAst, &'a str)> {
    for (prefix, ret) in [
        ("uprobe:", false),
        ("uretprobe:", true),
        ("u:", false),
        ("ur:", true),
    ] {
        if let Some(body) = s.strip_prefix(prefix) {
            let end = body.find(',').unwrap_or(body.len());
            let text = &s[..prefix.len() + end];
            return Ok((parse_uprobe(&body[..end], ret, text)?, &body[end..]));
        }
    }
    // pmu/terms/[mods]
    let ident_end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'))
        .unwrap_or(s.len());
    if ident_end > 0 && s[ident_end..].starts_with('/') {
        let pmu = &s[..ident_end];
        let after = &s[ident_end + 1..];
        let close = after
            .find('/')
            .ok_or_else(|| syntax(whole, format!("'{pmu}/' without closing '/'")))?;
        let body = &after[..close];
        let mut tail = &after[close + 1..];
        let m_end = tail.find([',', '}']).unwrap_or(tail.len());
        let mut mods = tail[..m_end].trim_start_matches(':').to_string();
        let text = &s[..s.len() - tail.len() + m_end];
        if !mods.is_empty() && !is_mods(&mods) {
            return Err(Error::BadModifier {
                event: text.to_string(),
                modifier: std::mem::take(&mut mods),
            });
        }
        tail = &tail[m_end..];
        let mut terms = Vec::new();
        for t in body.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            match t.split_once('=') {
                Some((k, v)) => terms.push((k.trim().to_string(), Some(v.trim().to_string()))),
                None => terms.push((t.to_string(), None)),
            }
        }
        if terms.is_empty() {
            return Err(syntax(whole, format!("no terms in '{text}'")));
        }
        return Ok((
            EventAst {
                kind: Kind::Pmu {
                    pmu: pmu.to_string(),
                    terms,
                },
                mods,
                text: text.to_string(),
            },
            tail,
        ));
    }
    let end = s.find([',', '}']).unwrap_or(s.len());
    let text = s[..end].trim();
    if text.is_empty() {
        return Err(syntax(whole, "empty event name"));
    }
    Ok((parse_simple(text)?, &s[end..]))
}

fn parse_uprobe(body: &str, ret: bool, text: &str) -> Result<EventAst> {
    let bad = |r: &str| Error::Probe {
        target: text.to_string(),
        reason: r.to_string(),
    };
    let (path, target) = body
        .rsplit_once(':')
        .ok_or_else(|| bad("expected uprobe:/path/to/binary:function"))?;
    if path.is_empty() || target.is_empty() {
        return Err(bad("expected uprobe:/path/to/binary:function"));
    }
    let (func, offset) = if target.starts_with("0x") || target.chars().all(|c| c.is_ascii_digit()) {
        (
            String::new(),
            parse_num(target).ok_or_else(|| bad("bad address"))?,
        )
    } else if let Some((f, off)) = target.split_once('+') {
        (
            f.to_string(),
            parse_num(off).ok_or_else(|| bad("bad offset after '+'"))?,
        )
    } else {
        (target.to_string(), 0)
    };
    Ok(EventAst {
        kind: Kind::Uprobe {
            ret,
            path: path.to_string(),
            func,
            offset,
        },
        mods: String::new(),
        text: text.to_string(),
    })
}

fn parse_simple(text: &str) -> Result<EventAst> {
    if let Some(rest) = text.strip_prefix("mem:") {
        return parse_breakpoint(rest, text);
    }
    let (body, mods) = match text.rsplit_once(':') {
        Some((b, m)) if is_mods(m) => (b, m.to_string()),
        _ => (text, String::new()),
    };
    let kind = if let Some((sys, name)) = body.split_once(':') {
        if name.contains(':') || sys.is_empty() || name.is_empty() {
            return Err(syntax(text, "expected subsystem:tracepoint[:modifiers]"));
        }
        Kind::Tracepoint {
            sys: sys.to_string(),
            name: name.to_string(),
        }
    } else if let Some(hex) = body
        .strip_prefix('r')
        .filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
    {
        Kind::Raw(
            u64::from_str_radix(hex, 16)
                .map_err(|_| syntax(text, "raw event does not fit 64 bits"))?,
        )
    } else {
        Kind::Name(body.to_string())
    };
    Ok(EventAst {
        kind,
        mods,
        text: text.to_string(),
    })
}

fn parse_breakpoint(rest: &str, text: &str) -> Result<EventAst> {
    let mut parts = rest.split(':');
    let addr_len = parts.next().unwrap_or("");
    let (addr, len) = match addr_len.split_once('/') {
        Some((a, l)) => (
            a,
            parse_num(l).ok_or_else(|| syntax(text, "bad breakpoint length"))?,
        ),
        None => (addr_len, 0),
    };
    let addr = parse_num(addr)
        .ok_or_else(|| syntax(text, "expected mem:ADDR[/LEN][:rwx], e.g. mem:0x601040:w"))?;
    // perf's grammar (parse-events.l, the <mem> state): the access, 1 to 3 of r, w, x
    // each at most once, then event modifiers right after it (`:wu`, `:rwk`) or after
    // another colon (`:w:u`); or modifiers alone (`:u`, access rw).
    let bad = |p: &str| {
        syntax(
            text,
            format!(
                "bad breakpoint access or modifier '{p}' (access is r, w, x or rw, optionally followed by modifiers, e.g. mem:0x601040:wu)"
            ),
        )
    };
    let mut access = String::new();
    let mut mods = String::new();
    if let Some(first) = parts.next() {
        let split = first
            .find(|c: char| !"rwx".contains(c))
            .unwrap_or(first.len());
        let (acc, rest) = first.split_at(split);
        let repeated = acc.char_indices().any(|(i, c)| acc[..i].contains(c));
        if repeated || (!rest.is_empty() && !is_mods(rest)) || first.is_empty() {
            return Err(bad(first));
        }
        access = acc.to_string();
        mods = rest.to_string();
        if let Some(second) = parts.next() {
            if access.is_empty() || !mods.is_empty() || !is_mods(second) {
                return Err(bad(second));
            }
            mods = second.to_string();
        }
        if let Some(extra) = parts.next() {
            return Err(bad(extra));
        }
    }
    if access.is_empty() {
        access = "rw".into();
    }
    Ok(EventAst {
        kind: Kind::Breakpoint { addr, len, access },
        mods,
        text: text.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(s: &str) -> EventAst {
        match parse_list(s).unwrap().remove(0) {
            Item::Event(e) => e,
            Item::Group(..) => panic!("group"),
        }
    }

    #[test]
    fn names_and_modifiers() {
        let e = one("cycles:upp");
        assert_eq!(e.kind, Kind::Name("cycles".into()));
        assert_eq!(e.mods, "upp");
        assert_eq!(
            one("MEM_LOAD_RETIRED.L3_MISS:pp").kind,
            Kind::Name("MEM_LOAD_RETIRED.L3_MISS".into())
        );
        assert_eq!(one("r1a8").kind, Kind::Raw(0x1a8));
        assert_eq!(one("ref-cycles").kind, Kind::Name("ref-cycles".into()));
    }

    #[test]
    fn pmu_terms() {
        let e = one("cpu/event=0xd1,umask=0x20,cmask=1,inv,edge,ldlat=64/pp");
        let Kind::Pmu { pmu, terms } = e.kind else {
            panic!()
        };
        assert_eq!(pmu, "cpu");
        assert_eq!(terms.len(), 6);
        assert_eq!(terms[3], ("inv".into(), None));
        assert_eq!(e.mods, "pp");
        assert_eq!(
            one("msr/tsc/").kind,
            Kind::Pmu {
                pmu: "msr".into(),
                terms: vec![("tsc".into(), None)]
            }
        );
        assert_eq!(one("msr/tsc/:u").mods, "u");
    }

    #[test]
    fn tracepoints_breakpoints_uprobes() {
        assert_eq!(
            one("sched:sched_switch").kind,
            Kind::Tracepoint {
                sys: "sched".into(),
                name: "sched_switch".into()
            }
        );
        assert_eq!(one("sched:sched_switch:k").mods, "k");
        assert_eq!(
            one("mem:0x1000/8:w").kind,
            Kind::Breakpoint {
                addr: 0x1000,
                len: 8,
                access: "w".into()
            }
        );
        assert_eq!(
            one("mem:4096").kind,
            Kind::Breakpoint {
                addr: 4096,
                len: 0,
                access: "rw".into()
            }
        );
        // perf's breakpoint grammar: modifiers right after the access, or after a colon.
        for (text, access, mods) in [
            ("mem:0x1000:wu", "w", "u"),
            ("mem:0x1000:w:u", "w", "u"),
            ("mem:0x1000/4:wu", "w", "u"),
            ("mem:0x1000:u", "rw", "u"),
            ("mem:0x1000:rwk", "rw", "k"),
            ("mem:0x1000:xu", "x", "u"),
            ("mem:0x1000:wpp", "w", "pp"),
            ("mem:0x1000/8:rw:k", "rw", "k"),
            ("mem:0x1000:rwx", "rwx", ""),
        ] {
            let e = one(text);
            let Kind::Breakpoint { access: a, .. } = &e.kind else {
                panic!("{text}: {e:?}")
            };
            assert_eq!((a.as_str(), e.mods.as_str()), (access, mods), "{text}");
        }
        for bad in [
            "mem:0x1000:ww",
            "mem:0x1000:wq",
            "mem:0x1000:w:r",
            "mem:0x1000:wu:k",
            "mem:0x1000:u:k",
            "mem:0x1000:",
            "mem:0x1000:w:u:k",
        ] {
            assert!(parse_list(bad).is_err(), "{bad:?} should fail");
        }
        assert_eq!(
            one("uprobe:/usr/bin/x:main+0x10").kind,
            Kind::Uprobe {
                ret: false,
                path: "/usr/bin/x".into(),
                func: "main".into(),
                offset: 0x10
            }
        );
        assert_eq!(
            one("uretprobe:/lib/a.so:0x1234").kind,
            Kind::Uprobe {
                ret: true,
                path: "/lib/a.so".into(),
                func: String::new(),
                offset: 0x1234
            }
        );
    }

    #[test]
    fn lists_and_groups() {
        let v = parse_list(
            "{cycles,instructions}:u,task-clock,cpu/event=1,umask=2/,uprobe:/bin/true:main",
        )
        .unwrap();
        assert_eq!(v.len(), 4);
        let Item::Group(m, mods) = &v[0] else {
            panic!()
        };
        assert_eq!((m.len(), mods.as_str()), (2, "u"));
    }

    #[test]
    fn errors() {
        for bad in [
            "",
            "{cycles",
            "{}",
            "cycles,",
            "cpu/event=1",
            "{a}:q",
            "mem:zz",
            "a:b:c:d",
            "uprobe:nocolon",
        ] {
            assert!(parse_list(bad).is_err(), "{bad:?} should fail");
        }
    }
}
