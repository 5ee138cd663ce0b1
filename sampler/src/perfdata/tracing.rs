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
}
