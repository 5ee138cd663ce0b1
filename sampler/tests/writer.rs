//! The perf.data writer against the real `perf`: files built from synthesized records
//! (COMM, MMAP2 of a binary compiled here, samples in two of its functions at a known
//! ratio) must read in `perf script`, `perf report`, `perf buildid-list` and `perf
//! evlist` unchanged. Plus the writer's atomicity: no output and no temporary file
//! when dropped unfinished, errors at `create` for unwritable places, `.old` backups.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use hwprof_pmu::attr::{Attr, read_format, sample};
use hwprof_sampler::Error;
use hwprof_sampler::buildid::{build_id_entries, read_build_id};
use hwprof_sampler::perfdata::features::{ANON_GROUP, Features, GroupDesc};
use hwprof_sampler::perfdata::writer::{EventEntry, Writer};
use object::{Object, ObjectSegment, ObjectSymbol, SegmentFlags};

use hwprof_testkit::{Why, report, skip};

const PID: u32 = 4242;
const TID: u32 = 4243;
const COMM: &str = "hwprof-wl";
const PERF_CONTEXT_USER: u64 = (-512i64) as u64;

/// A fresh scratch directory for one test.
fn scratch(tag: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("writer-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn have_perf() -> bool {
    let ok = Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip(Why::Setup, "perf not installed");
    }
    ok
}

/// Runs `perf ARGS`, returns stdout; panics with stderr on failure.
fn perf(args: &[&str]) -> String {
    perf_both(args).0
}

/// Runs `perf ARGS`, returns (stdout, stderr); panics with stderr on failure.
fn perf_both(args: &[&str]) -> (String, String) {
    let out = Command::new("perf").args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "perf {args:?} failed: {stderr}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

/// `_text` and `_etext` from /proc/kallsyms (`None` when hidden by kptr_restrict).
fn kernel_text() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/kallsyms").ok()?;
    let find = |name: &str| {
        text.lines().find_map(|l| {
            let mut f = l.split_whitespace();
            let addr = u64::from_str_radix(f.next()?, 16).ok()?;
            (f.nth(1)? == name && addr != 0).then_some(addr)
        })
    };
    Some((find("_text")?, find("_etext")?))
}

/// The PERF_RECORD_MMAP perf synthesizes for the kernel (`[kernel.kallsyms]_text`).
fn kernel_mmap_record(start: u64, end: u64, time: u64) -> Vec<u8> {
    let mut b = u32::MAX.to_le_bytes().to_vec(); // pid -1
    b.extend_from_slice(&0u32.to_le_bytes());
    for v in [start, end - start, start] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend(cstr("[kernel.kallsyms]_text"));
    b.extend(sample_id(time, None));
    record(1, 1, b) // PERF_RECORD_MMAP, MISC_KERNEL
}

const SOURCE: &str = r#"
#include <stdio.h>
__attribute__((noinline)) long hot_a(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * i; return s; }
__attribute__((noinline)) long hot_b(long n) { long s = 1; for (long i = 0; i < n; i++) s ^= s * 7 + i; return s; }
int main(int argc, char **argv) { (void)argv; printf("%ld\n", hot_a(argc) + hot_b(argc)); return 0; }
"#;

/// The compiled workload: its path, text mapping as the kernel reports it (addr, len,
/// pgoff), and the addresses of `hot_a`, `hot_b`, `main`.
struct Binary {
    path: PathBuf,
    map: (u64, u64, u64),
    hot_a: u64,
    hot_b: u64,
    main: u64,
}

fn compile(dir: &Path) -> Option<Binary> {
    let src = dir.join("wl.c");
    std::fs::write(&src, SOURCE).unwrap();
    let path = dir.join("hwprof-wl");
    let flags = ["-O1", "-g", "-fno-omit-frame-pointer", "-no-pie"];
    if !hwprof_testkit::compile_c(&src, &path, &flags) {
        return None;
    }
    let data = std::fs::read(&path).unwrap();
    let obj = object::File::parse(&*data).unwrap();
    let sym = |name: &str| {
        obj.symbols()
            .find(|s| s.name() == Ok(name))
            .map(|s| s.address())
            .unwrap()
    };
    let text = obj
        .segments()
        .find(|s| matches!(s.flags(), SegmentFlags::Elf { p_flags, .. } if p_flags.0 & 1 != 0))
        .unwrap();
    let start = text.address() & !0xfff;
    let end = (text.address() + text.size()).next_multiple_of(0x1000);
    let pgoff = text.file_range().0 & !0xfff;
    Some(Binary {
        map: (start, end - start, pgoff),
        hot_a: sym("hot_a"),
        hot_b: sym("hot_b"),
        main: sym("main"),
        path,
    })
}

/// The attr perf gives `-e cpu-clock -g` (plus `ID` when there are several events).
fn cpu_clock_attr(with_id: bool) -> Attr {
    let mut a = Attr::new(1, 0); // PERF_TYPE_SOFTWARE / PERF_COUNT_SW_CPU_CLOCK
    a.sample_period = 4000;
    a.freq = true;
    a.sample_type = sample::IP | sample::TID | sample::TIME | sample::PERIOD | sample::CALLCHAIN;
    if with_id {
        a.sample_type |= sample::ID;
        a.read_format = read_format::ID;
    }
    a.sample_id_all = true;
    a.disabled = true;
    a.inherit = true;
    a.mmap = true;
    a.mmap2 = true;
    a.comm = true;
    a.comm_exec = true;
    a.task = true;
    a.enable_on_exec = true;
    a.exclude_guest = true;
    a.sample_max_stack = 127;
    a
}

/// A record: header (type, misc, size) + body, padded to 8 bytes.
fn record(kind: u32, misc: u16, mut body: Vec<u8>) -> Vec<u8> {
    body.resize(body.len().next_multiple_of(8), 0);
    let mut r = kind.to_le_bytes().to_vec();
    r.extend_from_slice(&misc.to_le_bytes());
    r.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
    r.extend_from_slice(&body);
    r
}

/// The `sample_id` trailer of non-sample records for sample_type TID|TIME(|ID).
fn sample_id(time: u64, id: Option<u64>) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&PID.to_le_bytes());
    b.extend_from_slice(&TID.to_le_bytes());
    b.extend_from_slice(&time.to_le_bytes());
    if let Some(id) = id {
        b.extend_from_slice(&id.to_le_bytes());
    }
    b
}

/// A NUL-terminated string padded to 8 bytes.
fn cstr(s: &str) -> Vec<u8> {
    let mut b = s.as_bytes().to_vec();
    b.push(0);
    b.resize(b.len().next_multiple_of(8), 0);
    b
}

fn comm_record(time: u64, id: Option<u64>) -> Vec<u8> {
    let mut b = PID.to_le_bytes().to_vec();
    b.extend_from_slice(&TID.to_le_bytes());
    b.extend(cstr(COMM));
    b.extend(sample_id(time, id));
    record(3, 0x2000, b) // PERF_RECORD_COMM, MISC_COMM_EXEC
}

fn mmap2_record(bin: &Binary, time: u64, id: Option<u64>) -> Vec<u8> {
    let (addr, len, pgoff) = bin.map;
    let mut b = PID.to_le_bytes().to_vec();
    b.extend_from_slice(&PID.to_le_bytes());
    for v in [addr, len, pgoff] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&[0u8; 8]); // maj, min
    b.extend_from_slice(&[0u8; 16]); // ino, ino_generation
    b.extend_from_slice(&5u32.to_le_bytes()); // PROT_READ | PROT_EXEC
    b.extend_from_slice(&2u32.to_le_bytes()); // MAP_PRIVATE
    b.extend(cstr(bin.path.to_str().unwrap()));
    b.extend(sample_id(time, id));
    record(10, 2, b) // PERF_RECORD_MMAP2, MISC_USER
}

/// PERF_RECORD_SAMPLE for IP|TID|TIME(|ID)|PERIOD|CALLCHAIN.
fn sample_record(ip: u64, caller: u64, time: u64, id: Option<u64>) -> Vec<u8> {
    let mut b = ip.to_le_bytes().to_vec();
    b.extend_from_slice(&PID.to_le_bytes());
    b.extend_from_slice(&TID.to_le_bytes());
    b.extend_from_slice(&time.to_le_bytes());
    if let Some(id) = id {
        b.extend_from_slice(&id.to_le_bytes());
    }
    b.extend_from_slice(&1000u64.to_le_bytes()); // period
    for v in [3, PERF_CONTEXT_USER, ip, caller] {
        b.extend_from_slice(&u64::to_le_bytes(v));
    }
    record(9, 2, b)
}

/// Writes a file of `n_a` samples in hot_a and `n_b` in hot_b (interleaved).
fn write_profile(bin: &Binary, out: &Path, n_a: usize, n_b: usize) -> Features {
    let events = vec![EventEntry {
        attr: cpu_clock_attr(false),
        name: "cpu-clock".into(),
        ids: vec![17, 18],
    }];
    let mut w = Writer::create(out, events.clone()).unwrap();
    let t0 = 1_000_000_000u64;
    let ktext = kernel_text();
    if let Some((start, end)) = ktext {
        w.write_record(&kernel_mmap_record(start, end, 0)).unwrap();
    }
    w.write_record(&comm_record(t0, None)).unwrap();
    w.write_record(&mmap2_record(bin, t0 + 1, None)).unwrap();
    let total = n_a + n_b;
    let mut a_left = n_a;
    for i in 0..total {
        // Spread the hot_b samples evenly among the hot_a ones.
        let in_a = a_left > 0 && (i * n_b) / total == ((i + 1) * n_b) / total;
        let ip = if in_a {
            a_left -= 1;
            bin.hot_a + 4
        } else {
            bin.hot_b + 4
        };
        let t = t0 + 1000 + 1_000_000 * i as u64;
        w.write_record(&sample_record(ip, bin.main + 8, t, None))
            .unwrap();
    }
    assert_eq!(
        w.records_written(),
        total as u64 + 2 + u64::from(ktext.is_some())
    );
    let descs: Vec<_> = events
        .iter()
        .map(|e| hwprof_sampler::perfdata::features::EventDesc {
            attr: e.attr.clone(),
            name: e.name.clone(),
            ids: e.ids.clone(),
        })
        .collect();
    let cmdline: Vec<String> = ["/usr/bin/hwprof", "record", "-g", "--", "./hwprof-wl"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut f = Features::for_this_machine(&cmdline, &descs, None);
    f.build_ids = build_id_entries([
        (PID as i32, false, bin.path.to_string_lossy().into_owned()),
        (-1, true, "[kernel.kallsyms]".to_string()),
    ]);
    assert!(!f.build_ids.is_empty());
    w.finish(&f).unwrap();
    f
}

#[test]
fn perf_reads_hwprof_files() {
    if !have_perf() {
        return;
    }
    let dir = scratch("perf");
    let Some(bin) = compile(&dir) else { return };
    let file = dir.join("perf.data");
    let features = write_profile(&bin, &file, 700, 300);
    let file_s = file.to_str().unwrap();

    // perf script: one line per sample with comm, pid/tid and the function.
    let script = perf(&["script", "-i", file_s, "-F", "comm,pid,tid,ip,sym", "-G"]);
    let lines: Vec<&str> = script.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1000, "{script}");
    let mut counts = (0, 0);
    for l in &lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(f[0], COMM, "{l}");
        assert_eq!(f[1], format!("{PID}/{TID}"), "{l}");
        match f.get(3) {
            Some(&"hot_a") => counts.0 += 1,
            Some(&"hot_b") => counts.1 += 1,
            _ => panic!("unexpected line {l}"),
        }
    }
    assert_eq!(counts, (700, 300));
    report!(
        "perf script: {} samples, first line: {}",
        lines.len(),
        lines[0].trim()
    );

    // perf script with call graphs shows the caller.
    let full = perf(&["script", "-i", file_s, "-F", "ip,sym"]);
    assert_eq!(full.matches("main").count(), 1000, "{full}");

    // perf report: 70% / 30%.
    let (rep, err) = perf_both(&[
        "report",
        "--stdio",
        "--no-children",
        "-g",
        "none",
        "-i",
        file_s,
    ]);
    if kernel_text().is_some() {
        // With the kernel's MMAP record, perf has nothing to warn about.
        assert!(!err.contains("Warning"), "{err}");
    } else {
        skip(
            Why::KernelSetting,
            "kernel map check (/proc/kallsyms addresses hidden)",
        );
    }
    let pct = |sym: &str| -> f64 {
        let line = rep
            .lines()
            .find(|l| l.contains('%') && l.trim_end().ends_with(sym))
            .unwrap_or_else(|| panic!("no {sym} in\n{rep}"));
        line.split_whitespace()
            .next()
            .unwrap()
            .trim_end_matches('%')
            .parse()
            .unwrap()
    };
    let (a, b) = (pct("hot_a"), pct("hot_b"));
    report!("perf report: hot_a {a}%, hot_b {b}%");
    assert!((a - 70.0).abs() <= 0.5 && (b - 30.0).abs() <= 0.5, "{rep}");
    assert!(rep.contains(COMM) && rep.contains("hwprof-wl"), "{rep}");

    // perf report --header-only: the features.
    let hdr = perf(&["report", "--header-only", "-i", file_s]);
    report!("perf report --header-only:\n{hdr}");
    let has = |k: &str, v: &str| {
        assert!(
            hdr.lines()
                .any(|l| l.starts_with(&format!("# {k}")) && l.contains(v)),
            "no `{k}` with `{v}` in\n{hdr}"
        );
    };
    has("hostname", features.hostname.as_deref().unwrap());
    has("os release", features.osrelease.as_deref().unwrap());
    has("perf version", "hwprof");
    has("arch", features.arch.as_deref().unwrap());
    let (avail, online) = features.nr_cpus.unwrap();
    has("nrcpus online", &online.to_string());
    has("nrcpus avail", &avail.to_string());
    if let Some(d) = &features.cpudesc {
        has("cpudesc", d);
    }
    if let Some(c) = &features.cpuid {
        has("cpuid", c);
    }
    has(
        "total memory",
        &format!("{} kB", features.total_mem.unwrap()),
    );
    has("cmdline", "/usr/bin/hwprof record -g -- ./hwprof-wl");
    has("event", "name = cpu-clock");
    has("event", "id = { 17, 18 }");

    // perf buildid-list: the binary's build id.
    let want: String = read_build_id(&bin.path)
        .unwrap()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let ids = perf(&["buildid-list", "-i", file_s]);
    report!("perf buildid-list: {}", ids.trim());
    assert!(
        ids.lines()
            .any(|l| l.starts_with(&want) && l.ends_with(bin.path.to_str().unwrap())),
        "{ids}"
    );
    // The kernel's entry matches what perf itself reads from /sys/kernel/notes.
    let kernel = perf(&["buildid-list", "-k"]);
    if !kernel.trim().is_empty() {
        let want = format!("{} [kernel.kallsyms]", kernel.trim());
        assert!(ids.lines().any(|l| l == want), "{ids}");
    }
}

#[test]
fn group_desc_in_perf() {
    if !have_perf() {
        return;
    }
    let dir = scratch("group");
    let Some(bin) = compile(&dir) else { return };
    let leader = cpu_clock_attr(true);
    let mut member = cpu_clock_attr(true);
    member.config = 1; // task-clock
    member.disabled = false;
    member.enable_on_exec = false;
    member.mmap = false;
    member.mmap2 = false;
    member.comm = false;
    member.comm_exec = false;
    member.task = false;
    let events = vec![
        EventEntry {
            attr: leader,
            name: "cpu-clock".into(),
            ids: vec![101],
        },
        EventEntry {
            attr: member,
            name: "task-clock".into(),
            ids: vec![102],
        },
    ];
    let file = dir.join("group.data");
    let mut w = Writer::create(&file, events).unwrap();
    let t0 = 5_000_000_000u64;
    w.write_record(&comm_record(t0, Some(101))).unwrap();
    w.write_record(&mmap2_record(&bin, t0 + 1, Some(101)))
        .unwrap();
    for i in 0..10u64 {
        let id = if i % 2 == 0 { 101 } else { 102 };
        w.write_record(&sample_record(
            bin.hot_a + 4,
            bin.main + 8,
            t0 + 10 + i,
            Some(id),
        ))
        .unwrap();
    }
    // EVENT_DESC comes from the writer's events when the features have none.
    let f = Features {
        group_desc: Some(vec![GroupDesc {
            name: ANON_GROUP.into(),
            leader_idx: 0,
            nr_members: 2,
        }]),
        ..Features::default()
    };
    w.finish(&f).unwrap();
    let file_s = file.to_str().unwrap();
    let evlist = perf(&["evlist", "-g", "-i", file_s]);
    report!("perf evlist -g: {}", evlist.trim());
    assert!(evlist.contains("{cpu-clock,task-clock}"), "{evlist}");
    let hdr = perf(&["report", "--header-only", "-i", file_s]);
    assert!(hdr.contains("# group: {cpu-clock,task-clock}"), "{hdr}");
    let rep = perf(&["report", "--stdio", "--group", "-g", "none", "-i", file_s]);
    assert!(rep.contains("hot_a"), "{rep}");
    let script = perf(&["script", "-i", file_s, "-F", "event,sym", "-G"]);
    assert_eq!(script.matches("cpu-clock").count(), 5, "{script}");
    assert_eq!(script.matches("task-clock").count(), 5, "{script}");
}

fn entries() -> Vec<EventEntry> {
    vec![EventEntry {
        attr: cpu_clock_attr(false),
        name: "cpu-clock".into(),
        ids: vec![1],
    }]
}

fn dir_entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn dropped_writer_leaves_nothing() {
    let dir = scratch("drop");
    let out = dir.join("perf.data");
    let mut w = Writer::create(&out, entries()).unwrap();
    let tmp = w.temp_path().to_path_buf();
    assert_eq!(tmp.parent(), Some(dir.as_path()));
    let name = tmp.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(".perf.data.hwprof-") && name.ends_with(".tmp"),
        "{name}"
    );
    assert!(tmp.exists());
    w.write_record(&record(3, 0, vec![0; 24])).unwrap();
    drop(w);
    assert_eq!(dir_entries(&dir), Vec::<String>::new());
}

#[test]
fn create_fails_where_it_cannot_write() {
    let dir = scratch("nowrite");
    let e = Writer::create(&dir.join("missing/perf.data"), entries()).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert!(e.to_string().contains("missing"), "{e}");
    assert_eq!(e.raw_os_error(), Some(2)); // ENOENT
    let e = Writer::create(Path::new("/proc/hwprof-test.data"), entries()).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    // A read-only directory. Root ignores permissions: then the check runs in a copy of
    // this test binary as user nobody (setpriv), as tests/errors.rs runs hwprof.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ro = dir.join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let privileged = std::fs::write(ro.join("probe"), b"x").is_ok();
    let _ = std::fs::remove_file(ro.join("probe"));
    if !privileged {
        create_in_read_only_dir_fails(&ro);
    } else if !Path::new("/usr/bin/setpriv").exists() && !Path::new("/bin/setpriv").exists() {
        skip(
            Why::Setup,
            "setpriv not found: cannot check a read-only directory as root",
        );
    } else {
        let exe = dir.join("writer-test");
        // Never written in this process: see copy_executable (ETXTBSY under load).
        hwprof_testkit::copy_executable(&std::env::current_exe().unwrap(), &exe).unwrap();
        let out = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&exe)
            .args([
                "--exact",
                "read_only_dir_helper",
                "--ignored",
                "--test-threads=1",
            ])
            .env(RO_DIR_VAR, &ro)
            .current_dir(&dir)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && text.contains("1 passed"),
            "the read-only directory check as user nobody failed:\n{text}"
        );
        report!("read-only directory: Writer::create fails with EACCES as user nobody");
    }
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The directory [`read_only_dir_helper`] writes into.
const RO_DIR_VAR: &str = "HWPROF_WRITER_RO_DIR";

fn create_in_read_only_dir_fails(ro: &Path) {
    let e = Writer::create(&ro.join("perf.data"), entries()).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(13), "{e}"); // EACCES
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert_eq!(dir_entries(ro), Vec::<String>::new(), "nothing left behind");
}

/// Run by [`create_fails_where_it_cannot_write`] as user nobody when the tests run as
/// root (who may write anywhere).
#[test]
#[ignore = "helper: create_fails_where_it_cannot_write runs it as user nobody"]
fn read_only_dir_helper() {
    let ro = std::env::var_os(RO_DIR_VAR).expect("HWPROF_WRITER_RO_DIR set by the caller");
    create_in_read_only_dir_fails(Path::new(&ro));
}

#[test]
fn existing_output_moves_to_old_and_bad_records_are_refused() {
    let dir = scratch("old");
    let out = dir.join("perf.data");
    std::fs::write(&out, b"previous recording").unwrap();
    let mut w = Writer::create(&out, entries()).unwrap();
    // Framing errors are refused: size field != length, or too short.
    let mut bad = record(3, 0, vec![0; 24]);
    bad[6] = 16;
    assert!(matches!(w.write_record(&bad), Err(Error::Malformed { .. })));
    assert!(w.write_record(&[1, 2, 3]).is_err());
    w.write_record(&record(3, 0, vec![0; 24])).unwrap();
    assert_eq!((w.records_written(), w.data_size()), (1, 32));
    // The old output stays untouched until finish.
    assert_eq!(std::fs::read(&out).unwrap(), b"previous recording");
    w.finish(&Features::default()).unwrap();
    assert_eq!(
        std::fs::read(dir.join("perf.data.old")).unwrap(),
        b"previous recording"
    );
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(&bytes[..8], b"PERFILE2");
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
    assert_eq!(u64_at(8), 104);
    // header, 1 id, one attr (VER5 size: sample_max_stack) + section, then data.
    assert_eq!(u64_at(16), 112 + 16);
    assert_eq!((u64_at(24), u64_at(32)), (104 + 8, 128));
    assert_eq!((u64_at(40), u64_at(48)), (104 + 8 + 128, 32));
    assert_eq!((u64_at(56), u64_at(64)), (0, 0));
    // Only EVENT_DESC (from the writer's events).
    assert_eq!(u64_at(72), 1 << 12);
    assert_eq!(
        dir_entries(&dir),
        ["perf.data".to_string(), "perf.data.old".to_string()]
    );
}

/// Write throughput of the hot path (64-byte records), reported in MB/s.
#[test]
fn write_throughput() {
    let dir = scratch("speed");
    let out = dir.join("big.data");
    let rec = record(9, 2, vec![0x5a; 56]);
    let n: u64 = 4 << 20; // 256 MiB of records
    let mut w = Writer::create(&out, entries()).unwrap();
    let start = Instant::now();
    for _ in 0..n {
        w.write_record(&rec).unwrap();
    }
    w.finish(&Features::default()).unwrap();
    let secs = start.elapsed().as_secs_f64();
    let mb = (n * 64) as f64 / 1e6;
    let size = std::fs::metadata(&out).unwrap().len();
    assert!(size > n * 64);
    report!(
        "writer throughput: {n} records, {mb:.0} MB in {secs:.2}s = {:.0} MB/s, {:.1} M records/s (incl. fsync)",
        mb / secs,
        n as f64 / secs / 1e6
    );
    std::fs::remove_file(&out).unwrap();
}

/// The smallest attr ABI (VER0, 64 bytes) is what an attr without callchain depth or
/// registers needs; perf reads it.
#[test]
fn ver0_attr_reads_in_perf() {
    if !have_perf() {
        return;
    }
    let dir = scratch("ver0");
    let Some(bin) = compile(&dir) else { return };
    let mut attr = cpu_clock_attr(false);
    attr.sample_max_stack = 0;
    let file = dir.join("v0.data");
    let mut w = Writer::create(
        &file,
        vec![EventEntry {
            attr,
            name: "cpu-clock".into(),
            ids: vec![],
        }],
    )
    .unwrap();
    w.write_record(&comm_record(10, None)).unwrap();
    w.write_record(&mmap2_record(&bin, 11, None)).unwrap();
    for i in 0..7 {
        w.write_record(&sample_record(bin.hot_b + 4, bin.main + 8, 20 + i, None))
            .unwrap();
    }
    w.finish(&Features::default()).unwrap();
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(
        u64::from_le_bytes(bytes[16..24].try_into().unwrap()),
        64 + 16
    );
    let file_s = file.to_str().unwrap();
    let hdr = perf(&["report", "--header-only", "-i", file_s]);
    assert!(
        hdr.contains("name = cpu-clock") && hdr.contains("size = 64"),
        "{hdr}"
    );
    let script = perf(&["script", "-i", file_s, "-F", "comm,ip,sym", "-G"]);
    assert_eq!(script.matches("hot_b").count(), 7, "{script}");
}

/// hwprof's own reader gets back exactly what the writer was given.
#[test]
fn reader_reads_writer_files() {
    use hwprof_sampler::perfdata::features::EventDesc;
    use hwprof_sampler::perfdata::reader::PerfData;
    let dir = scratch("readback");
    let file = dir.join("rb.data");
    let mut member = cpu_clock_attr(true);
    member.config = 1;
    let events = vec![
        EventEntry {
            attr: cpu_clock_attr(true),
            name: "cpu-clock".into(),
            ids: vec![7, 8],
        },
        EventEntry {
            attr: member,
            name: "task-clock".into(),
            ids: vec![9],
        },
    ];
    let mut w = Writer::create(&file, events.clone()).unwrap();
    w.write_record(&comm_record(1, Some(7))).unwrap();
    for i in 0..100 {
        w.write_record(&sample_record(
            0x401000 + i,
            0x401100,
            10 + i,
            Some(7 + i % 3),
        ))
        .unwrap();
    }
    let descs: Vec<EventDesc> = events
        .iter()
        .map(|e| EventDesc {
            attr: e.attr.clone(),
            name: e.name.clone(),
            ids: e.ids.clone(),
        })
        .collect();
    let mut f = Features::for_this_machine(&["hwprof".into()], &descs, None);
    f.group_desc = Some(vec![GroupDesc {
        name: ANON_GROUP.into(),
        leader_idx: 0,
        nr_members: 2,
    }]);
    f.build_ids = build_id_entries([(-1, true, "[kernel.kallsyms]".to_string())]);
    let data_size = w.data_size();
    w.finish(&f).unwrap();

    let pd = PerfData::open(&file).unwrap();
    assert!(!pd.is_pipe());
    assert_eq!(pd.data_size(), data_size);
    assert_eq!(pd.features(), &f);
    let got: Vec<(String, Vec<u64>, u64)> = pd
        .attrs()
        .iter()
        .map(|a| (a.name.clone(), a.ids.clone(), a.attr.sample_type))
        .collect();
    let want: Vec<(String, Vec<u64>, u64)> = events
        .iter()
        .map(|e| (e.name.clone(), e.ids.clone(), e.attr.sample_type))
        .collect();
    assert_eq!(got, want);
    assert_eq!(pd.attrs()[1].attr, events[1].attr);
    let mut n = 0;
    pd.for_each_record::<Error, _>(|_, _| {
        n += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(n, 101);
}
