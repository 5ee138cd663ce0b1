//! KDAB hotspot's parser (`hotspot-perfparser`, Debian's `hotspot`) reads hwprof's
//! recordings: frame pointers, DWARF (unwound while recording, and raw stacks that it
//! unwinds itself) and off-CPU (`hwprof offcpu --data-file`). It exits 0, reports no
//! error, and the functions it finds at the leaves of the samples are `hwprof report
//! --no-children`'s top functions, with the same sample counts.
//!
//! perfparser writes a stream (`--output FILE`): `QPERFSTREAM\0`, a 32-bit version,
//! then messages, each a little-endian u32 size and a `QDataStream` (big-endian) body
//! whose first byte is its type (perfparser's `PerfUnwind::EventType`, in
//! `app/perfunwind.{h,cpp}` of KDAB/perfparser as hotspot 1.3 ships it, 4.12). The
//! decoder below reads what the comparison needs: strings, locations (their parent:
//! the function an address's location belongs to), symbols (keyed by location) and
//! samples (pid, tid, time, cpu, then the frames' location ids, leaf first), and the
//! errors it sends.

#[macro_use]
mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Why, hwprof, scratch_path, skip};

const PERFPARSER: &str = "/usr/lib/x86_64-linux-gnu/libexec/hotspot-perfparser";

/// `StringDefinition`, `LocationDefinition`, `SymbolDefinition`, `Error`, `Sample`.
const STRING: u8 = 5;
const LOCATION: u8 = 3;
const SYMBOL: u8 = 4;
const ERROR: u8 = 8;
const SAMPLE: u8 = 13;

/// A big-endian reader over one message.
struct Be<'a>(&'a [u8]);

impl Be<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let (a, b) = self.0.split_at(N);
        self.0 = b;
        a.try_into().unwrap()
    }
    fn i32(&mut self) -> i32 {
        i32::from_be_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_be_bytes(self.take())
    }
    /// A `QByteArray`: u32 length (`0xffffffff`: null), bytes.
    fn bytes(&mut self) -> Vec<u8> {
        let n = self.u32();
        if n == u32::MAX {
            return Vec::new();
        }
        let (a, b) = self.0.split_at(n as usize);
        self.0 = b;
        a.to_vec()
    }
}

/// What perfparser's stream says: samples per leaf function, and its errors.
#[derive(Debug, Default)]
struct Parsed {
    samples: u64,
    leaves: HashMap<String, u64>,
    errors: Vec<i32>,
}

fn decode(stream: &[u8]) -> Parsed {
    assert!(
        stream.starts_with(b"QPERFSTREAM\0"),
        "not perfparser's stream"
    );
    let mut pos = 16;
    let (mut strings, mut parents, mut symbols) = (HashMap::new(), HashMap::new(), HashMap::new());
    let mut leaf_ids: HashMap<i32, u64> = HashMap::new();
    let mut p = Parsed::default();
    while pos + 4 <= stream.len() {
        let size = u32::from_le_bytes(stream[pos..pos + 4].try_into().unwrap()) as usize;
        pos += 4;
        let msg = &stream[pos..pos + size];
        pos += size;
        let mut r = Be(&msg[1..]);
        match msg[0] {
            STRING => {
                let id = r.i32();
                strings.insert(id, String::from_utf8_lossy(&r.bytes()).into_owned());
            }
            LOCATION => {
                let id = r.i32();
                let (_addr, _file, _pid, _line, _col) =
                    (r.u64(), r.i32(), r.u32(), r.i32(), r.i32());
                parents.insert(id, r.i32());
            }
            SYMBOL => {
                let id = r.i32();
                symbols.insert(id, r.i32());
            }
            ERROR => p.errors.push(r.i32()),
            SAMPLE => {
                let (_pid, _tid, _time, _cpu) = (r.u32(), r.u32(), r.u64(), r.u32());
                let n = r.u32();
                p.samples += 1;
                if n > 0 {
                    *leaf_ids.entry(r.i32()).or_default() += 1;
                }
            }
            _ => {}
        }
    }
    // A frame's function: the symbol of its location, else of its parents'.
    for (mut id, n) in leaf_ids {
        while !symbols.contains_key(&id) {
            match parents.get(&id) {
                Some(&parent) if parent >= 0 => id = parent,
                _ => break,
            }
        }
        let name = symbols
            .get(&id)
            .and_then(|s| strings.get(s))
            .cloned()
            .unwrap_or_else(|| "[unknown]".into());
        *p.leaves.entry(name).or_default() += n;
    }
    p
}

/// The function a name means, across the two tools' spellings: perfparser names an
/// inlined function's samples `outer::inlined` and takes libc's exported name
/// (`__getppid`) where hwprof, as perf, shows the local alias (`__GI___getppid`).
fn function(name: &str) -> String {
    let n = name.split("::").next().unwrap_or(name);
    n.trim_start_matches("__GI_").to_string()
}

/// `hwprof report --no-children -s sym` rows: (function, samples), biggest first.
fn report_rows(data: &Path) -> Vec<(String, u64)> {
    let r = hwprof(&[
        "report",
        "-i",
        data.to_str().unwrap(),
        "--no-children",
        "-s",
        "sym",
        "--stdio",
        "--percent-limit",
        "0",
    ]);
    r.assert_ok();
    r.stdout
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            // `12.34%  SAMPLES  PERIOD  [.] name`
            let n = w.get(1)?.parse().ok()?;
            Some((w.get(4..)?.join(" "), n))
        })
        .collect()
}

/// Runs perfparser on `data`: exit 0, no error in its stream or on stderr; then the
/// top functions of `hwprof report` at the leaves of as many of its samples.
fn check(what: &str, data: &Path, top: usize) {
    let out = scratch_path(&format!(
        "{}.pp",
        data.file_name().unwrap().to_str().unwrap()
    ));
    let r = common::run_cmd(
        Command::new(PERFPARSER)
            .arg("--input")
            .arg(data)
            .arg("--output")
            .arg(&out),
        common::TIMEOUT,
    );
    assert_eq!(r.code(), 0, "{what}: {}", r.dump());
    for l in r.stderr.lines() {
        let bad = l.to_ascii_lowercase();
        assert!(
            !bad.contains("error") && !bad.contains("invalid") && !bad.contains("fail"),
            "{what}: perfparser says: {l}"
        );
    }
    let p = decode(&std::fs::read(&out).unwrap());
    assert!(
        p.errors.is_empty(),
        "{what}: perfparser's errors {:?}",
        p.errors
    );
    let rows = report_rows(data);
    let total: u64 = rows.iter().map(|r| r.1).sum();
    assert_eq!(
        p.samples, total,
        "{what}: samples, perfparser vs hwprof report"
    );
    let mut theirs: HashMap<String, u64> = HashMap::new();
    for (name, n) in &p.leaves {
        *theirs.entry(function(name)).or_default() += n;
    }
    let mut shown = Vec::new();
    for (name, n) in rows.iter().take(top) {
        let f = function(name);
        assert_eq!(
            theirs.get(&f),
            Some(n),
            "{what}: {name}: hwprof report {n} samples; perfparser's leaves {theirs:?}"
        );
        shown.push(format!("{f} {n}"));
    }
    report!(
        "{what}: hotspot-perfparser read {} samples, top functions as hwprof report: {}",
        p.samples,
        shown.join(", ")
    );
}

fn build(name: &str, workload: &str, flags: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/workloads")
        .join(format!("{workload}.c"));
    let out = scratch_path(name);
    assert!(
        hwprof_testkit::compile_c(&src, &out, flags),
        "no C compiler: install gcc (.ci/run does)"
    );
    out
}

fn have_perfparser() -> bool {
    if Path::new(PERFPARSER).exists() {
        return true;
    }
    skip(
        Why::Setup,
        "hotspot-perfparser not installed (Debian hotspot; .ci/run installs it)",
    );
    false
}

#[test]
fn perfparser_reads_cpu_recordings_with_report_s_top_functions() {
    if !have_perfparser() {
        return;
    }
    let fp = build(
        "hs_fi_fp",
        "flame_inline",
        &["-O1", "-g", "-fno-omit-frame-pointer"],
    );
    let nofp = build(
        "hs_fi_dw",
        "flame_inline",
        &["-O2", "-g", "-fomit-frame-pointer"],
    );
    for (what, exe, args) in [
        ("frame pointers", &fp, &["-g"][..]),
        (
            "DWARF unwound while recording",
            &nofp,
            &["--call-graph", "dwarf"][..],
        ),
        (
            "DWARF raw stacks",
            &nofp,
            &["--call-graph", "dwarf", "--keep-raw-stacks"][..],
        ),
    ] {
        let data = scratch_path(&format!("hs_{}.data", what.replace(' ', "_")));
        let d = data.to_str().unwrap();
        let mut cmd = vec!["record"];
        cmd.extend_from_slice(args);
        cmd.extend(["-o", d, "--", exe.to_str().unwrap(), "400"]);
        hwprof(&cmd).assert_ok();
        check(what, &data, 4);
    }
}

#[test]
fn perfparser_reads_offcpu_recordings() {
    if !have_perfparser() {
        return;
    }
    let exe = build(
        "hs_sleeper",
        "sleeper",
        &["-O1", "-g", "-fno-omit-frame-pointer"],
    );
    let data = scratch_path("hs_offcpu.data");
    let svg = scratch_path("hs_offcpu.svg");
    hwprof(&[
        "offcpu",
        "--data-file",
        data.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
        "--",
        exe.to_str().unwrap(),
        "20",
        "10",
    ])
    .assert_ok();
    check("off-CPU (hwprof offcpu --data-file)", &data, 1);
}
