//! Synthesized records for what exists before recording starts: the kernel's text
//! mapping, and the threads and mappings of processes that are already running (`-p`,
//! `-a`). They use the kernel's binary layout, little-endian like the host, so that they
//! can be written into perf.data next to the records from the rings.
//!
//! When the attr has `sample_id_all`, every record gets the `sample_id` trailer that its
//! `sample_type` asks for (pid, tid, time, id, stream_id, cpu, identifier, in that
//! order). As in `perf record`, time is 0; pid/tid are the record's own (0 for the
//! kernel), the ids are 0 (perf maps id 0 to the first event) and the cpu is 0.
//!
//! What `perf record` synthesizes, and so what this module does:
//! - one `PERF_RECORD_MMAP` of `[kernel.kallsyms]_text` (pid -1, tid 0,
//!   `PERF_RECORD_MISC_KERNEL`), from `_text` to `_etext`, pgoff = start;
//! - per process: for each thread a `PERF_RECORD_COMM`, preceded for threads other
//!   than the main one by a `PERF_RECORD_FORK` from the main thread
//!   (`PERF_RECORD_MISC_FORK_EXEC`: an existing thread, not a new one); then a
//!   `PERF_RECORD_MMAP2` (or `MMAP` when the attr has no `mmap2`) per executable
//!   mapping in `/proc/PID/maps`, data mappings too when the attr has `mmap_data`.

use std::fs;

use hwprof_pmu::attr::{Attr, sample};

/// `PERF_RECORD_*` types written here.
mod rtype {
    pub const MMAP: u32 = 1;
    pub const COMM: u32 = 3;
    pub const FORK: u32 = 7;
    pub const MMAP2: u32 = 10;
    pub const LOST_SAMPLES: u32 = 13;
}

/// `PERF_RECORD_MISC_*` bits written here.
mod misc {
    pub const KERNEL: u16 = 1;
    pub const USER: u16 = 2;
    /// For FORK: a thread that existed before recording (same bit as COMM_EXEC).
    pub const FORK_EXEC: u16 = 1 << 13;
}

/// Builds one record: header, then body, then the sample_id trailer.
struct Rec {
    buf: Vec<u8>,
}

impl Rec {
    fn new(ty: u32, misc: u16) -> Rec {
        let mut buf = Vec::with_capacity(128);
        buf.extend_from_slice(&ty.to_le_bytes());
        buf.extend_from_slice(&misc.to_le_bytes());
        buf.extend_from_slice(&0u16.to_le_bytes()); // size, set in `finish`
        Rec { buf }
    }

    fn u32(&mut self, v: u32) -> &mut Rec {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    fn u64(&mut self, v: u64) -> &mut Rec {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// A NUL-terminated string padded with NULs to a multiple of 8 bytes.
    fn str(&mut self, s: &[u8]) -> &mut Rec {
        self.buf.extend_from_slice(s);
        let padded = (s.len() + 1).div_ceil(8) * 8;
        self.buf.resize(self.buf.len() + padded - s.len(), 0);
        self
    }

    /// Appends the sample_id trailer and sets the size. `None` if the record would not
    /// fit the header's u16 size.
    fn finish(mut self, attr: &Attr, pid: u32, tid: u32) -> Option<Vec<u8>> {
        if attr.sample_id_all {
            let st = attr.sample_type;
            if st & sample::TID != 0 {
                self.u32(pid).u32(tid);
            }
            if st & sample::TIME != 0 {
                self.u64(0);
            }
            if st & sample::ID != 0 {
                self.u64(0);
            }
            if st & sample::STREAM_ID != 0 {
                self.u64(0);
            }
            if st & sample::CPU != 0 {
                self.u32(0).u32(0);
            }
            if st & sample::IDENTIFIER != 0 {
                self.u64(0);
            }
        }
        self.sized()
    }

    /// Sets the header's size to the record's length. `None` if it would not fit the
    /// header's u16 size.
    fn sized(mut self) -> Option<Vec<u8>> {
        let size = u16::try_from(self.buf.len()).ok()?;
        self.buf.get_mut(6..8)?.copy_from_slice(&size.to_le_bytes());
        Some(self.buf)
    }
}

/// Where the kernel's text lies, from kallsyms text: `(_text, end)` where end is
/// `_etext`, or the highest text symbol when there is no `_etext`. `None` when `_text`
/// is missing or hidden (addresses shown as zeros to unprivileged users).
pub fn kernel_text_range(kallsyms: &str) -> Option<(u64, u64)> {
    let mut text = None;
    let mut etext = None;
    let mut highest = 0u64;
    for line in kallsyms.lines() {
        let mut it = line.split_whitespace();
        let (Some(addr), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        if it.next().is_some() {
            continue; // a module symbol ("[module]"): not the core kernel's text
        }
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        match name {
            "_text" => text = Some(addr),
            "_etext" => etext = Some(addr),
            _ => {}
        }
        if matches!(kind, "T" | "t") {
            highest = highest.max(addr);
        }
    }
    let start = text.filter(|&a| a != 0)?;
    let end = etext.unwrap_or(highest);
    (end > start).then_some((start, end))
}

/// `PERF_RECORD_MMAP` of `[kernel.kallsyms]_text` as `perf record` writes it, from
/// `/proc/kallsyms`. `None` when the addresses are hidden (not root, or
/// `kernel.kptr_restrict`).
pub fn kernel_mmap(attr: &Attr) -> Option<Vec<u8>> {
    let (start, end) = match quick_text_range() {
        Some(r) => r,
        None => kernel_text_range(&fs::read_to_string("/proc/kallsyms").ok()?)?,
    };
    kernel_mmap_at(attr, start, end)
}

/// `(_text, _etext)` without generating all of `/proc/kallsyms` (about 40 ms of kernel
/// time for 120k symbols): `_text` is among its first lines, and on x86 the "Kernel code"
/// resource of `/proc/iomem` spans exactly `_text` to `_etext` (physical addresses, so
/// only its length is used). `None` where either is not there (other architectures, or
/// addresses hidden from this user).
fn quick_text_range() -> Option<(u64, u64)> {
    use std::io::{BufRead, BufReader};
    if !cfg!(target_arch = "x86_64") {
        return None;
    }
    let f = fs::File::open("/proc/kallsyms").ok()?;
    let start = BufReader::new(f)
        .lines()
        .take(64)
        .map_while(Result::ok)
        .find_map(|l| {
            let mut it = l.split_whitespace();
            let addr = it.next()?;
            (it.nth(1)? == "_text").then(|| u64::from_str_radix(addr, 16).ok())?
        })
        .filter(|&a| a != 0)?;
    let iomem = fs::read_to_string("/proc/iomem").ok()?;
    let len = iomem.lines().find_map(|l| {
        let (range, name) = l.trim().split_once(" : ")?;
        if name != "Kernel code" {
            return None;
        }
        let (a, b) = range.split_once('-')?;
        let (a, b) = (
            u64::from_str_radix(a, 16).ok()?,
            u64::from_str_radix(b, 16).ok()?,
        );
        (b > a).then_some(b - a + 1)
    })?;
    Some((start, start.checked_add(len)?))
}

/// [`kernel_mmap`] for a given text range.
pub fn kernel_mmap_at(attr: &Attr, start: u64, end: u64) -> Option<Vec<u8>> {
    let mut r = Rec::new(rtype::MMAP, misc::KERNEL);
    r.u32(u32::MAX)
        .u32(0)
        .u64(start)
        .u64(end.checked_sub(start)?)
        .u64(start)
        .str(b"[kernel.kallsyms]_text");
    r.finish(attr, 0, 0)
}

/// One line of `/proc/PID/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// Start address.
    pub start: u64,
    /// End address (exclusive).
    pub end: u64,
    /// `PROT_READ | PROT_WRITE | PROT_EXEC` bits.
    pub prot: u32,
    /// `MAP_SHARED` (1) or `MAP_PRIVATE` (2).
    pub flags: u32,
    /// File offset.
    pub pgoff: u64,
    /// Device major number.
    pub maj: u32,
    /// Device minor number.
    pub min: u32,
    /// Inode.
    pub ino: u64,
    /// Path or pseudo-name (`[vdso]`, `[heap]`); empty for anonymous memory.
    pub path: String,
}

/// Parses one `/proc/PID/maps` line; `None` when it is not in that format.
pub fn parse_maps_line(line: &str) -> Option<Mapping> {
    let mut rest = line;
    let mut field = || {
        let t = rest.trim_start();
        let end = t.find(char::is_whitespace).unwrap_or(t.len());
        let (f, r) = t.split_at(end);
        rest = r;
        (!f.is_empty()).then_some(f)
    };
    let range = field()?;
    let perms = field()?.as_bytes();
    let pgoff = u64::from_str_radix(field()?, 16).ok()?;
    let dev = field()?;
    let ino = field()?.parse().ok()?;
    let path = rest.trim_start().to_string();
    let (s, e) = range.split_once('-')?;
    let (maj, min) = dev.split_once(':')?;
    let bit = |i: usize, c: u8, v: u32| if perms.get(i) == Some(&c) { v } else { 0 };
    Some(Mapping {
        start: u64::from_str_radix(s, 16).ok()?,
        end: u64::from_str_radix(e, 16).ok()?,
        prot: bit(0, b'r', libc::PROT_READ as u32)
            | bit(1, b'w', libc::PROT_WRITE as u32)
            | bit(2, b'x', libc::PROT_EXEC as u32),
        flags: if perms.get(3) == Some(&b's') {
            libc::MAP_SHARED as u32
        } else {
            libc::MAP_PRIVATE as u32
        },
        pgoff,
        maj: u32::from_str_radix(maj, 16).ok()?,
        min: u32::from_str_radix(min, 16).ok()?,
        ino,
        path,
    })
}

/// The mappings of process `pid` from `/proc/PID/maps` (empty when it cannot be read:
/// the process is gone or not ours); lines not in that format are skipped.
pub fn read_maps(pid: i32) -> Vec<Mapping> {
    fs::read_to_string(format!("/proc/{pid}/maps"))
        .unwrap_or_default()
        .lines()
        .filter_map(parse_maps_line)
        .collect()
}

impl Mapping {
    /// The process and mapping a `PERF_RECORD_MMAP` or `MMAP2` record describes (the
    /// inverse of [`mmap_record`]); `None` for other records. An MMAP has no device,
    /// inode or protection: those are 0 (`prot` is `PROT_EXEC`, as the kernel only
    /// sends MMAP for executable mappings).
    pub fn of_record(body: &crate::record::Body<'_>) -> Option<(u32, Mapping)> {
        use crate::record::{Body, FileId};
        let (pid, start, len, pgoff, name) = match body {
            Body::Mmap(m) => (m.pid, m.addr, m.len, m.pgoff, m.filename),
            Body::Mmap2(m) => (m.pid, m.addr, m.len, m.pgoff, m.filename),
            _ => return None,
        };
        let mut out = Mapping {
            start,
            end: start.saturating_add(len),
            prot: libc::PROT_EXEC as u32,
            flags: libc::MAP_PRIVATE as u32,
            pgoff,
            maj: 0,
            min: 0,
            ino: 0,
            path: String::from_utf8_lossy(name).into_owned(),
        };
        if let Body::Mmap2(m) = body {
            out.prot = m.prot;
            out.flags = m.flags;
            if let FileId::Inode { maj, min, ino, .. } = m.file_id {
                (out.maj, out.min, out.ino) = (maj, min, ino);
            }
        }
        Some((pid, out))
    }
}

/// The MMAP2 (or MMAP, without `attr.mmap2`) record of one mapping of `pid`.
pub fn mmap_record(attr: &Attr, pid: i32, m: &Mapping) -> Option<Vec<u8>> {
    let name: &str = if m.path.is_empty() { "//anon" } else { &m.path };
    let pid = pid as u32;
    let len = m.end.checked_sub(m.start)?;
    let mut r;
    if attr.mmap2 {
        r = Rec::new(rtype::MMAP2, misc::USER);
        r.u32(pid)
            .u32(pid)
            .u64(m.start)
            .u64(len)
            .u64(m.pgoff)
            .u32(m.maj)
            .u32(m.min)
            .u64(m.ino)
            .u64(0) // ino_generation
            .u32(m.prot)
            .u32(m.flags);
    } else {
        r = Rec::new(rtype::MMAP, misc::USER);
        r.u32(pid).u32(pid).u64(m.start).u64(len).u64(m.pgoff);
    }
    r.str(name.as_bytes());
    r.finish(attr, pid, pid)
}

/// `PERF_RECORD_LOST_SAMPLES` of `lost` records (pid and tid -1: no one task's).
pub fn lost_samples_record(attr: &Attr, lost: u64) -> Option<Vec<u8>> {
    let mut r = Rec::new(rtype::LOST_SAMPLES, 0);
    r.u64(lost);
    r.finish(attr, u32::MAX, u32::MAX)
}

/// `PERF_RECORD_COMM` for thread `tid` of `pid`.
pub fn comm_record(attr: &Attr, pid: i32, tid: i32, comm: &str) -> Option<Vec<u8>> {
    let mut r = Rec::new(rtype::COMM, 0);
    r.u32(pid as u32).u32(tid as u32).str(comm.as_bytes());
    r.finish(attr, pid as u32, tid as u32)
}

/// `PERF_RECORD_FORK` of an existing thread `tid` of `pid` (from its main thread).
pub fn fork_record(attr: &Attr, pid: i32, tid: i32) -> Option<Vec<u8>> {
    let mut r = Rec::new(rtype::FORK, misc::FORK_EXEC);
    r.u32(pid as u32)
        .u32(pid as u32)
        .u32(tid as u32)
        .u32(pid as u32)
        .u64(0);
    r.finish(attr, pid as u32, tid as u32)
}

/// The records that describe running process `pid`: FORK (other threads) and COMM per
/// thread, then its mappings. Empty if the process is gone; a thread or file that
/// vanishes meanwhile is skipped.
pub fn process(attr: &Attr, pid: i32) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let Ok(mut tids) = hwprof_pmu::target::threads_of(pid) else {
        return out;
    };
    // The main thread first.
    if let Some(i) = tids.iter().position(|&t| t == pid) {
        tids[..=i].rotate_right(1);
    }
    for &tid in &tids {
        let Ok(comm) = fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")) else {
            continue;
        };
        let comm = comm.trim_end_matches('\n');
        if tid != pid {
            out.extend(fork_record(attr, pid, tid));
        }
        out.extend(comm_record(attr, pid, tid, comm));
    }
    for m in read_maps(pid) {
        let exec = m.prot & libc::PROT_EXEC as u32 != 0;
        if exec || (attr.mmap_data && !m.path.is_empty()) {
            out.extend(mmap_record(attr, pid, &m));
        }
    }
    out
}

/// [`process`] for every process in `/proc` (for system-wide recording, as perf does).
/// Kernel threads get their COMM only (they have no mappings).
pub fn all_processes(attr: &Attr) -> Vec<Vec<u8>> {
    hwprof_pmu::target::processes()
        .into_iter()
        .flat_map(|p| process(attr, p))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(sample_type: u64) -> Attr {
        let mut a = Attr::new(1, 0);
        a.sample_type = sample_type;
        a.sample_id_all = true;
        a.mmap2 = true;
        a
    }

    fn u32_at(r: &[u8], o: usize) -> u32 {
        u32::from_le_bytes(r[o..o + 4].try_into().unwrap())
    }
    fn u64_at(r: &[u8], o: usize) -> u64 {
        u64::from_le_bytes(r[o..o + 8].try_into().unwrap())
    }

    #[test]
    fn kernel_mmap_matches_perfs_bytes() {
        // perf 6.1, sample_type IP|TID|TIME|PERIOD|CALLCHAIN: an 80-byte record.
        let a = attr(sample::IP | sample::TID | sample::TIME | sample::PERIOD);
        let r = kernel_mmap_at(&a, 0xffffffff81000000, 0xffffffff82209988).unwrap();
        let mut want = vec![
            1, 0, 0, 0, 1, 0, 0x50, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0,
        ];
        want.extend(0xffffffff81000000u64.to_le_bytes());
        want.extend(0x1209988u64.to_le_bytes());
        want.extend(0xffffffff81000000u64.to_le_bytes());
        want.extend(b"[kernel.kallsyms]_text\0\0");
        want.extend([0u8; 16]);
        assert_eq!(r, want);
    }

    #[test]
    fn trailer_follows_the_sample_type() {
        let all = sample::TID
            | sample::TIME
            | sample::ID
            | sample::STREAM_ID
            | sample::CPU
            | sample::IDENTIFIER;
        let r = comm_record(&attr(all), 7, 9, "abc").unwrap();
        // 8 header + 8 pid/tid + 8 "abc\0" padded + trailer 8+8+8+8+8+8.
        assert_eq!(r.len(), 24 + 48);
        assert_eq!(u16::from_le_bytes([r[6], r[7]]) as usize, r.len());
        assert_eq!((u32_at(&r, 24), u32_at(&r, 28)), (7, 9));
        let mut none = attr(all);
        none.sample_id_all = false;
        assert_eq!(comm_record(&none, 7, 9, "abcdefg").unwrap().len(), 24);
        // An 8-byte name needs a second 8 bytes for its NUL.
        assert_eq!(comm_record(&none, 7, 9, "abcdefgh").unwrap().len(), 32);
    }

    #[test]
    fn kallsyms_text_range() {
        let k = "ffffffff81000000 T _text\nffffffff81001000 T foo\nffffffff82209988 T _etext\nffffffffc0000000 t bar\t[mod]\n";
        assert_eq!(
            kernel_text_range(k),
            Some((0xffffffff81000000, 0xffffffff82209988))
        );
        let no_etext = "ffffffff81000000 T _text\nffffffff81001000 t foo\n";
        assert_eq!(
            kernel_text_range(no_etext),
            Some((0xffffffff81000000, 0xffffffff81001000))
        );
        assert_eq!(
            kernel_text_range("0000000000000000 T _text\n0000000000000000 T _etext\n"),
            None
        );
    }

    #[test]
    fn maps_lines_parse() {
        let m = parse_maps_line(
            "557af138a000-557af1390000 r-xp 00002000 fe:00 247282                     /usr/bin/my tool",
        )
        .unwrap();
        assert_eq!(m.start, 0x557af138a000);
        assert_eq!(m.end, 0x557af1390000);
        assert_eq!(m.prot, 5);
        assert_eq!(m.flags, 2);
        assert_eq!(m.pgoff, 0x2000);
        assert_eq!((m.maj, m.min, m.ino), (0xfe, 0, 247282));
        assert_eq!(m.path, "/usr/bin/my tool");
        let anon = parse_maps_line("7f00-8f00 rw-s 00000000 00:00 0 ").unwrap();
        assert_eq!(anon.path, "");
        assert_eq!(anon.flags, 1);
        assert_eq!(anon.prot, 3);
        assert_eq!(parse_maps_line("garbage"), None);
        assert_eq!(parse_maps_line(""), None);
    }

    #[test]
    fn our_own_process_is_described() {
        let a = attr(sample::TID | sample::TIME);
        let me = std::process::id() as i32;
        let recs = process(&a, me);
        let comms = recs.iter().filter(|r| u32_at(r, 0) == 3).count();
        let threads = fs::read_dir(format!("/proc/{me}/task")).unwrap().count();
        assert!(comms >= 1 && threads >= 1, "{comms} COMMs");
        let exe = std::env::current_exe().unwrap();
        let exe = exe.to_str().unwrap();
        let ours = recs.iter().find(|r| {
            u32_at(r, 0) == 10 && {
                let name = &r[72..];
                let end = name.iter().position(|&b| b == 0).unwrap();
                &name[..end] == exe.as_bytes()
            }
        });
        let ours = ours.expect("an MMAP2 of the test binary");
        assert_eq!(u32_at(ours, 8), me as u32);
        assert_eq!(
            u32_at(ours, 64) & libc::PROT_EXEC as u32,
            libc::PROT_EXEC as u32
        );
        assert_ne!(u64_at(ours, 48), 0, "an inode");
        for r in &recs {
            assert_eq!(u16::from_le_bytes([r[6], r[7]]) as usize, r.len());
            assert_eq!(r.len() % 8, 0);
        }
        // FORKs for the other threads of this (multi-threaded) test process.
        let forks = recs.iter().filter(|r| u32_at(r, 0) == 7).count();
        assert_eq!(forks + 1, comms);
    }

    /// A mapping written as MMAP2 (or MMAP) and decoded comes back as it was (MMAP
    /// keeps no device, inode or protection).
    #[test]
    fn mappings_come_back_from_their_records() {
        use crate::record::Decoder;
        let m =
            parse_maps_line("7f0010000000-7f0010004000 r-xp 00003000 fe:01 42 /lib/x.so").unwrap();
        let a = attr(sample::TID | sample::TIME);
        let dec = Decoder::new(&[(a.clone(), vec![])]);
        let rec = mmap_record(&a, 77, &m).unwrap();
        let body = dec.decode(&rec, 0).unwrap().body;
        assert_eq!(Mapping::of_record(&body), Some((77, m.clone())));
        let mut old = a.clone();
        old.mmap2 = false;
        let dec = Decoder::new(&[(old.clone(), vec![])]);
        let rec = mmap_record(&old, 77, &m).unwrap();
        let (pid, back) = Mapping::of_record(&dec.decode(&rec, 0).unwrap().body).unwrap();
        assert_eq!(pid, 77);
        assert_eq!(
            (back.start, back.end, back.pgoff),
            (m.start, m.end, m.pgoff)
        );
        assert_eq!(back.path, "/lib/x.so");
        let comm = comm_record(&a, 1, 1, "x").unwrap();
        assert_eq!(
            Mapping::of_record(&dec.decode(&comm, 0).unwrap().body),
            None
        );
        let me = std::process::id() as i32;
        assert!(
            read_maps(me)
                .iter()
                .any(|m| m.prot & libc::PROT_EXEC as u32 != 0)
        );
        assert!(read_maps(i32::MAX - 1).is_empty());
    }

    #[test]
    fn a_missing_process_gives_nothing() {
        assert!(process(&attr(0), i32::MAX - 1).is_empty());
    }

    #[test]
    fn quick_text_range_agrees_with_the_full_kallsyms_scan() {
        let Some(quick) = quick_text_range() else {
            use hwprof_testkit::{Why, skip};
            if !cfg!(target_arch = "x86_64") {
                skip(Why::OtherArch, "quick_text_range is for x86-64 only");
            } else {
                skip(
                    Why::KernelSetting,
                    "kernel addresses hidden (kptr_restrict) or no _text / Kernel code in /proc",
                );
            }
            return;
        };
        let full = kernel_text_range(&fs::read_to_string("/proc/kallsyms").unwrap());
        assert_eq!(Some(quick), full);
    }
}

/// One sample made in user space (not by the kernel): what a source beside the rings
/// (hwprof offcpu's BPF engine) writes at the end of a recording, as `perf record
/// --off-cpu` writes its `offcpu-time` samples.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MadeSample<'a> {
    /// The event's sample id (`ID`/`IDENTIFIER`).
    pub id: u64,
    /// `PERF_RECORD_MISC_KERNEL` or `_USER` for where `ip` is.
    pub kernel: bool,
    /// The sample's ip (its stack's leaf).
    pub ip: u64,
    /// Process.
    pub pid: u32,
    /// Thread.
    pub tid: u32,
    /// In the recording's clock.
    pub time: u64,
    /// CPU (when the attr has `CPU`).
    pub cpu: u32,
    /// Weight in the event's unit (ns off CPU for `offcpu-time`).
    pub period: u64,
    /// `PERF_SAMPLE_WEIGHT` (the blocks an `offcpu-time` sample sums).
    pub weight: u64,
    /// With its `PERF_CONTEXT_*` markers, as the kernel writes callchains.
    pub callchain: &'a [u64],
}

/// The sample-type bits [`sample_record`] writes.
pub const MADE_SAMPLE_BITS: u64 = sample::IDENTIFIER
    | sample::IP
    | sample::TID
    | sample::TIME
    | sample::ID
    | sample::CPU
    | sample::PERIOD
    | sample::CALLCHAIN
    | sample::WEIGHT;

/// The `PERF_RECORD_SAMPLE` of `s` laid out as `attr.sample_type` says; `None` when
/// the type asks for fields other than [`MADE_SAMPLE_BITS`], or the record would not
/// fit a record's u16 size (a callchain of more than about 8,000 frames).
pub fn sample_record(attr: &Attr, s: &MadeSample<'_>) -> Option<Vec<u8>> {
    let st = attr.sample_type;
    if st & !MADE_SAMPLE_BITS != 0 {
        return None;
    }
    const SAMPLE: u32 = 9;
    let mut r = Rec::new(SAMPLE, if s.kernel { misc::KERNEL } else { misc::USER });
    let has = |bit| st & bit != 0;
    if has(sample::IDENTIFIER) {
        r.u64(s.id);
    }
    if has(sample::IP) {
        r.u64(s.ip);
    }
    if has(sample::TID) {
        r.u32(s.pid).u32(s.tid);
    }
    if has(sample::TIME) {
        r.u64(s.time);
    }
    if has(sample::ID) {
        r.u64(s.id);
    }
    if has(sample::CPU) {
        r.u32(s.cpu).u32(0);
    }
    if has(sample::PERIOD) {
        r.u64(s.period);
    }
    if has(sample::CALLCHAIN) {
        r.u64(s.callchain.len() as u64);
        for &ip in s.callchain {
            r.u64(ip);
        }
    }
    if has(sample::WEIGHT) {
        r.u64(s.weight);
    }
    r.sized()
}
