//! The `HEADER_TRACING_DATA` feature: the tracefs format files of the recorded
//! tracepoints, which `perf script` / `perf report` need to decode their raw data.
//!
//! The layout is perf's `trace-event-info` version 0.6, little-endian:
//! 1. magic `\x17\x08\x44tracing`, `"0.6\0"`, endianness byte (0 = little),
//!    `sizeof(long)`, u32 page size;
//! 2. `"header_page\0"`, u64 size, `events/header_page`; the same for `header_event`;
//! 3. u32 count, then u64 size + format for each used `ftrace` event;
//! 4. u32 count of systems, then per system its NUL-terminated name, u32 count and
//!    u64 size + format per used event;
//! 5. u32 0 (kallsyms, left empty as perf 6.x does), u32 size + `printk_formats`,
//!    u64 size + `saved_cmdlines`.
//!
//! [`tracing_data`] writes the section from this machine's tracefs; [`formats`] reads
//! the event formats back out of a section (perf's, or hwprof's, version 0.5 or 0.6, of
//! either byte order), and [`TraceFormat`] is one `format` file: each field's offset,
//! size and signedness in a sample's raw data. A recording's raw data is decoded with
//! the formats stored in it, never with the running kernel's, whose layout may differ.

use std::collections::BTreeMap;
use std::path::Path;

use crate::{Error, Result};

/// Builds the section for tracepoints named `system:event` under the tracefs at `root`.
/// Duplicate names are written once; systems and events keep their first-seen order.
pub fn tracing_data(root: &Path, tracepoints: &[(&str, &str)]) -> Result<Vec<u8>> {
    let read = |rel: &str| -> Result<Vec<u8>> {
        let p = root.join(rel);
        read_tracefs_file(&p).map_err(|e| Error::io(format!("reading {}", p.display()), e))
    };
    let mut systems: BTreeMap<usize, (&str, Vec<&str>)> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for &(sys, ev) in tracepoints {
        let idx = match order.iter().position(|s| *s == sys) {
            Some(i) => i,
            None => {
                order.push(sys);
                order.len() - 1
            }
        };
        let entry = systems.entry(idx).or_insert((sys, Vec::new()));
        if !entry.1.contains(&ev) {
            entry.1.push(ev);
        }
    }

    let mut b = Vec::new();
    b.extend_from_slice(b"\x17\x08\x44tracing");
    b.extend_from_slice(b"0.6\0");
    b.push(0); // little-endian
    b.push(std::mem::size_of::<std::ffi::c_long>() as u8);
    b.extend_from_slice(&(hwprof_pmu::sys::page_size() as u32).to_le_bytes());
    for name in ["header_page", "header_event"] {
        b.extend_from_slice(name.as_bytes());
        b.push(0);
        let f = read(&format!("events/{name}"))?;
        b.extend_from_slice(&(f.len() as u64).to_le_bytes());
        b.extend_from_slice(&f);
    }
    let formats = |sys: &str, evs: &[&str], b: &mut Vec<u8>| -> Result<()> {
        b.extend_from_slice(&(evs.len() as u32).to_le_bytes());
        for ev in evs {
            let f = read(&format!("events/{sys}/{ev}/format"))?;
            b.extend_from_slice(&(f.len() as u64).to_le_bytes());
            b.extend_from_slice(&f);
        }
        Ok(())
    };
    let ftrace: Vec<&str> = systems
        .values()
        .filter(|(s, _)| *s == "ftrace")
        .flat_map(|(_, e)| e.iter().copied())
        .collect();
    formats("ftrace", &ftrace, &mut b)?;
    let others: Vec<&(&str, Vec<&str>)> =
        systems.values().filter(|(s, _)| *s != "ftrace").collect();
    b.extend_from_slice(&(others.len() as u32).to_le_bytes());
    for (sys, evs) in others {
        b.extend_from_slice(sys.as_bytes());
        b.push(0);
        formats(sys, evs, &mut b)?;
    }
    b.extend_from_slice(&0u32.to_le_bytes()); // kallsyms: empty, as perf 6.x writes it
    let printk = read("printk_formats").unwrap_or_default();
    b.extend_from_slice(&(printk.len() as u32).to_le_bytes());
    b.extend_from_slice(&printk);
    let cmdlines = read("saved_cmdlines").unwrap_or_default();
    b.extend_from_slice(&(cmdlines.len() as u64).to_le_bytes());
    b.extend_from_slice(&cmdlines);
    Ok(b)
}

/// Reads a tracefs file with large reads: these files report size 0, and some of their
/// handlers end the file after a short first read (so `fs::read`'s small probe loses data).
fn read_tracefs_file(p: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut f = std::fs::File::open(p)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match f.read(&mut buf) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// One field of a tracepoint's raw data (a `field:` line of its `format` file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceField {
    /// The field's name (`next_pid`; an array's name without its brackets).
    pub name: String,
    /// Offset in the raw data (bytes).
    pub offset: usize,
    /// Size (bytes).
    pub size: usize,
    /// A signed integer.
    pub signed: bool,
}

impl TraceField {
    /// The field read as an integer of its size (1, 2, 4 or 8 bytes, little-endian),
    /// sign-extended when it is signed; `None` when the raw data is too short or the
    /// field is not an integer of those sizes.
    pub fn int(&self, raw: &[u8]) -> Option<i64> {
        let b = raw.get(self.offset..self.offset.checked_add(self.size)?)?;
        let mut le = [0u8; 8];
        le.get_mut(..b.len())?.copy_from_slice(b);
        let v = u64::from_le_bytes(le);
        let bits = match self.size {
            1 | 2 | 4 | 8 => self.size as u32 * 8,
            _ => return None,
        };
        Some(if self.signed && bits < 64 {
            // Sign-extend from `bits`.
            ((v << (64 - bits)) as i64) >> (64 - bits)
        } else {
            v as i64
        })
    }
}

/// One tracepoint's `format` file: its name, id and fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceFormat {
    /// The system (`sched`; `ftrace` for ftrace's own events).
    pub system: String,
    /// The event's name (`sched_switch`).
    pub name: String,
    /// The `ID:` line (the attr config of the tracepoint), when present.
    pub id: Option<u64>,
    /// The fields in the file's order, common ones first.
    pub fields: Vec<TraceField>,
}

impl TraceFormat {
    /// Parses the text of a `format` file of `system`. Lines that are not understood are
    /// skipped (a field without a numeric offset and size is left out).
    pub fn parse(system: &str, text: &str) -> TraceFormat {
        let mut f = TraceFormat {
            system: system.to_string(),
            ..TraceFormat::default()
        };
        for line in text.lines().map(str::trim) {
            if let Some(name) = line.strip_prefix("name:") {
                f.name = name.trim().to_string();
            } else if let Some(id) = line.strip_prefix("ID:") {
                f.id = id.trim().parse().ok();
            } else if let Some(rest) = line.strip_prefix("field:") {
                f.fields.extend(parse_field(rest));
            }
        }
        f
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&TraceField> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// `unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;` (after `field:`).
fn parse_field(rest: &str) -> Option<TraceField> {
    let mut parts = rest.split(';').map(str::trim);
    let decl = parts.next()?;
    let ident = decl.rsplit([' ', '*']).next().unwrap_or(decl);
    let name = ident.split('[').next().unwrap_or(ident);
    let (mut offset, mut size, mut signed) = (None, None, false);
    for p in parts {
        if let Some(v) = p.strip_prefix("offset:") {
            offset = v.trim().parse().ok();
        } else if let Some(v) = p.strip_prefix("size:") {
            size = v.trim().parse().ok();
        } else if let Some(v) = p.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    Some(TraceField {
        name: name.to_string(),
        offset: offset?,
        size: size?,
        signed,
    })
}

/// Reads a tracing data section (see the module doc) as far as its event formats: the
/// `ftrace` formats and those of every system, in the section's order. Formats whose
/// text is not UTF-8 are read lossily. Errors name the offset in `bytes`.
pub fn formats(bytes: &[u8]) -> Result<Vec<TraceFormat>> {
    let mut c = Reader {
        b: bytes,
        pos: 0,
        big: false,
    };
    if c.take(10, "tracing data magic")? != b"\x17\x08\x44tracing" {
        return Err(Error::malformed(
            "tracing data",
            0,
            "no tracing data magic (`\\x17\\x08\\x44tracing`)",
        ));
    }
    let version = c.cstr("tracing data version")?;
    if !matches!(version.as_str(), "0.5" | "0.6") {
        return Err(Error::malformed(
            "tracing data",
            10,
            format!("version {version:?}, expected 0.5 or 0.6"),
        ));
    }
    c.big = c.take(1, "tracing data endianness")?[0] != 0;
    c.take(1, "tracing data long size")?;
    c.u32("tracing data page size")?;
    for name in ["header_page", "header_event"] {
        let at = c.pos;
        if c.cstr("tracing data header name")? != name {
            return Err(Error::malformed(
                "tracing data",
                at as u64,
                format!("expected the {name} file"),
            ));
        }
        let len = c.u64("tracing data header size")?;
        c.take_u64(len, "tracing data header file")?;
    }
    let mut out = Vec::new();
    let mut read_formats = |c: &mut Reader<'_>, system: &str| -> Result<()> {
        let n = c.u32("tracing data format count")?;
        for _ in 0..n {
            let len = c.u64("tracing data format size")?;
            let text = c.take_u64(len, "tracing data format")?;
            out.push(TraceFormat::parse(system, &String::from_utf8_lossy(text)));
        }
        Ok(())
    };
    read_formats(&mut c, "ftrace")?;
    let systems = c.u32("tracing data system count")?;
    for _ in 0..systems {
        let system = c.cstr("tracing data system name")?;
        read_formats(&mut c, &system)?;
    }
    Ok(out)
}

/// A bounds-checked reader over a tracing data section.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
    big: bool,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        let s = self
            .pos
            .checked_add(n)
            .and_then(|end| self.b.get(self.pos..end))
            .ok_or_else(|| {
                Error::malformed(
                    what,
                    self.pos as u64,
                    format!(
                        "{n} bytes needed, {} left in the tracing data",
                        self.b.len().saturating_sub(self.pos)
                    ),
                )
            })?;
        self.pos += n;
        Ok(s)
    }

    fn take_u64(&mut self, n: u64, what: &'static str) -> Result<&'a [u8]> {
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        self.take(n, what)
    }

    fn u32(&mut self, what: &'static str) -> Result<u32> {
        let mut w = [0u8; 4];
        w.copy_from_slice(self.take(4, what)?);
        Ok(if self.big {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        })
    }

    fn u64(&mut self, what: &'static str) -> Result<u64> {
        let mut w = [0u8; 8];
        w.copy_from_slice(self.take(8, what)?);
        Ok(if self.big {
            u64::from_be_bytes(w)
        } else {
            u64::from_le_bytes(w)
        })
    }

    /// A NUL-terminated string.
    fn cstr(&mut self, what: &'static str) -> Result<String> {
        let rest = self.b.get(self.pos..).unwrap_or(&[]);
        let len = rest.iter().position(|&c| c == 0).ok_or_else(|| {
            Error::malformed(
                what,
                self.pos as u64,
                "no NUL before the end of the tracing data",
            )
        })?;
        let s = String::from_utf8_lossy(&rest[..len]).into_owned();
        self.pos += len + 1;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_of_a_fake_tracefs() {
        let dir = std::env::temp_dir().join(format!("hwprof-tracing-{}", std::process::id()));
        let ev = dir.join("events/sched/sched_switch");
        std::fs::create_dir_all(&ev).unwrap();
        std::fs::write(dir.join("events/header_page"), b"HP").unwrap();
        std::fs::write(dir.join("events/header_event"), b"HEV").unwrap();
        std::fs::write(ev.join("format"), b"FMT").unwrap();
        std::fs::write(dir.join("printk_formats"), b"P").unwrap();
        let b = tracing_data(
            &dir,
            &[("sched", "sched_switch"), ("sched", "sched_switch")],
        )
        .unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let mut want = b"\x17\x08\x44tracing0.6\0\0\x08".to_vec();
        want.extend_from_slice(&(hwprof_pmu::sys::page_size() as u32).to_le_bytes());
        want.extend_from_slice(b"header_page\0\x02\0\0\0\0\0\0\0HP");
        want.extend_from_slice(b"header_event\0\x03\0\0\0\0\0\0\0HEV");
        want.extend_from_slice(b"\0\0\0\0"); // no ftrace events
        want.extend_from_slice(b"\x01\0\0\0sched\0\x01\0\0\0\x03\0\0\0\0\0\0\0FMT");
        want.extend_from_slice(b"\0\0\0\0"); // kallsyms
        want.extend_from_slice(b"\x01\0\0\0P");
        want.extend_from_slice(&0u64.to_le_bytes()); // no saved_cmdlines
        assert_eq!(b, want);
    }

    #[test]
    fn missing_format_is_an_error_naming_the_file() {
        let e = tracing_data(Path::new("/nonexistent-tracefs"), &[("a", "b")]).unwrap_err();
        assert!(
            e.to_string()
                .contains("/nonexistent-tracefs/events/header_page"),
            "{e}"
        );
    }

    const SWITCH: &str = "name: sched_switch\nID: 372\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\tfield:__data_loc char[] name;\toffset:64;\tsize:4;\tsigned:0;\n\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\nprint fmt: \"prev_comm=%s\", REC->prev_comm\n";

    #[test]
    fn format_fields() {
        let f = TraceFormat::parse("sched", SWITCH);
        assert_eq!(
            (f.system.as_str(), f.name.as_str()),
            ("sched", "sched_switch")
        );
        assert_eq!(f.id, Some(372));
        let next = f.field("next_pid").unwrap();
        assert_eq!((next.offset, next.size, next.signed), (56, 4, true));
        assert_eq!(
            f.field("prev_comm").map(|f| (f.offset, f.size)),
            Some((8, 16))
        );
        assert_eq!(f.field("name").map(|f| f.offset), Some(64));
        assert!(f.field("nope").is_none());
        let mut raw = vec![0u8; 72];
        raw[56..60].copy_from_slice(&1234i32.to_le_bytes());
        raw[24..28].copy_from_slice(&(-1i32).to_le_bytes());
        raw[32..40].copy_from_slice(&0x402u64.to_le_bytes());
        assert_eq!(next.int(&raw), Some(1234));
        assert_eq!(f.field("prev_pid").unwrap().int(&raw), Some(-1));
        assert_eq!(f.field("prev_state").unwrap().int(&raw), Some(0x402));
        assert_eq!(
            f.field("common_type").unwrap().int(&[0xff, 0xff]),
            Some(0xffff)
        );
        // Past the end of the raw data, or not an integer.
        assert_eq!(next.int(&raw[..58]), None);
        assert_eq!(f.field("prev_comm").unwrap().int(&raw), None);
    }

    /// A section of `tracing_data`'s layout, built by hand (big-endian when `big`).
    fn section(big: bool, version: &str, systems: &[(&str, &[&str])]) -> Vec<u8> {
        let u32b = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let u64b = |v: u64| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut b = b"\x17\x08\x44tracing".to_vec();
        b.extend_from_slice(version.as_bytes());
        b.push(0);
        b.extend_from_slice(&[u8::from(big), 8]);
        b.extend_from_slice(&u32b(4096));
        for name in ["header_page", "header_event"] {
            b.extend_from_slice(name.as_bytes());
            b.push(0);
            b.extend_from_slice(&u64b(3));
            b.extend_from_slice(b"xyz");
        }
        b.extend_from_slice(&u32b(1));
        let ftrace = "name: function\nID: 1\nformat:\n\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n";
        b.extend_from_slice(&u64b(ftrace.len() as u64));
        b.extend_from_slice(ftrace.as_bytes());
        b.extend_from_slice(&u32b(systems.len() as u32));
        for (sys, formats) in systems {
            b.extend_from_slice(sys.as_bytes());
            b.push(0);
            b.extend_from_slice(&u32b(formats.len() as u32));
            for f in *formats {
                b.extend_from_slice(&u64b(f.len() as u64));
                b.extend_from_slice(f.as_bytes());
            }
        }
        b.extend_from_slice(&u32b(0));
        b.extend_from_slice(&u32b(0));
        b
    }

    #[test]
    fn formats_of_a_section() {
        for big in [false, true] {
            let b = section(big, "0.6", &[("sched", &[SWITCH])]);
            let f = formats(&b).unwrap();
            assert_eq!(f.len(), 2);
            assert_eq!(
                (f[0].system.as_str(), f[0].name.as_str()),
                ("ftrace", "function")
            );
            assert_eq!(f[1], TraceFormat::parse("sched", SWITCH));
        }
        assert_eq!(formats(&section(false, "0.5", &[])).unwrap().len(), 1);
    }

    #[test]
    fn formats_of_what_tracing_data_writes() {
        let dir = std::env::temp_dir().join(format!("hwprof-tracing-rt-{}", std::process::id()));
        let ev = dir.join("events/sched/sched_switch");
        std::fs::create_dir_all(&ev).unwrap();
        std::fs::write(dir.join("events/header_page"), b"HP").unwrap();
        std::fs::write(dir.join("events/header_event"), b"HEV").unwrap();
        std::fs::write(ev.join("format"), SWITCH).unwrap();
        let b = tracing_data(&dir, &[("sched", "sched_switch")]).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            formats(&b).unwrap(),
            vec![TraceFormat::parse("sched", SWITCH)]
        );
    }

    #[test]
    fn bad_sections_are_errors_with_offsets() {
        let e = formats(b"not tracing data").unwrap_err();
        assert!(e.to_string().contains("magic"), "{e}");
        let b = section(false, "0.6", &[("sched", &[SWITCH])]);
        // Every cut inside the formats is an error, never a panic.
        for cut in 0..b.len() - 8 {
            assert!(formats(&b[..cut]).is_err(), "cut at {cut}");
        }
        let e = formats(&section(false, "9.9", &[])).unwrap_err();
        assert!(e.to_string().contains("version \"9.9\""), "{e}");
        // A size that runs past the end.
        let mut b = section(false, "0.6", &[]);
        let at = b.windows(11).position(|w| w == b"header_page").unwrap() + 12;
        b[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        let e = formats(&b).unwrap_err();
        assert!(
            e.to_string().contains(&format!("offset {:#x}", at + 8)),
            "{e}"
        );
    }
}
