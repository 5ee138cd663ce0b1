//! `hwprof report -b` (branch analysis from LBR) judged by `perf report -b --stdio` on
//! the same files: a real Skylake LBR capture (`perf record -b -- echo`, recorded on
//! another machine, so both tools show addresses).

mod common;

use std::path::PathBuf;

#[track_caller]
fn fixture() -> Option<PathBuf> {
    hwprof_testkit::fixture_path("perfdata/perf.data.branch-4.14")
}

/// The table rows of a `--stdio` report (the lines after the header, two-space margin).
fn rows(out: &str) -> Vec<&str> {
    out.lines().filter(|l| l.starts_with("  ")).collect()
}

/// The `# Samples:` and `# Event count` lines.
fn counts(out: &str) -> Vec<&str> {
    out.lines()
        .filter(|l| l.starts_with("# Samples:") || l.starts_with("# Event count"))
        .collect()
}

/// Every perf row, its trailing padding trimmed, starts hwprof's row at the same place
/// (hwprof adds its Mispredicted and Avg Cycles columns after perf's).
#[track_caller]
fn assert_perf_prefix(hw: &str, perf: &str) {
    let (h, p) = (rows(hw), rows(perf));
    assert!(!p.is_empty(), "perf printed no rows:\n{perf}");
    assert_eq!(h.len(), p.len(), "row count\nhwprof:\n{hw}\nperf:\n{perf}");
    for (i, (h, p)) in h.iter().zip(&p).enumerate() {
        assert!(
            h.starts_with(p.trim_end()),
            "row {i} differs\nhwprof: {h}\nperf:   {p}"
        );
    }
    assert_eq!(counts(hw), counts(perf), "sample and event counts");
}

#[test]
fn report_b_matches_perf_on_a_skylake_lbr_capture() {
    let Some(f) = fixture() else { return };
    if !common::require_perf("perf report -b is the judge") {
        return;
    }
    let f = f.to_string_lossy().into_owned();
    let hw = common::hwprof(&["report", "-b", "-i", &f]);
    hw.assert_ok();
    let perf = common::perf(&["report", "-b", "--stdio", "-i", &f]);
    perf.assert_ok();
    assert_perf_prefix(&hw.stdout, &perf.stdout);
    // Every branch entry counts once: 13 samples of 32 LBR entries.
    assert!(hw.stdout.contains("# Samples: 416  of event 'cycles:ppp'"));
    // perf's cells: zero without 0x, a 16-bit cycle count printed signed, our columns.
    assert!(
        hw.stdout
            .contains("6.97%  perf     [unknown]             [H] 0000000000000000"),
        "{}",
        hw.stdout
    );
    assert!(hw.stdout.contains("[k] 0xffffffffb420a582  -23395"));
    assert!(hw.stdout.contains("Mispredicted  Avg Cycles"));
    // --comm keeps the 100% and, naming one command, drops the column, as perf does.
    let hw = common::hwprof(&["report", "-b", "--comm", "perf", "-i", &f]);
    hw.assert_ok();
    let perf = common::perf(&["report", "-b", "--stdio", "--comm", "perf", "-i", &f]);
    perf.assert_ok();
    assert_perf_prefix(&hw.stdout, &perf.stdout);
    assert!(!hw.stdout.contains("Command"), "{}", hw.stdout);
}

#[test]
fn report_b_mispredict_key_matches_perf() {
    let Some(f) = fixture() else { return };
    if !common::require_perf("perf report -b is the judge") {
        return;
    }
    let f = f.to_string_lossy().into_owned();
    let hw = common::hwprof(&["report", "-b", "--branch-sort", "mispredict", "-i", &f]);
    hw.assert_ok();
    let perf = common::perf(&["report", "-b", "--stdio", "--sort", "mispredict", "-i", &f]);
    perf.assert_ok();
    assert_perf_prefix(&hw.stdout, &perf.stdout);
    // Rows of equal share differing in prediction only come in perf's order (libc-2.23.so
    // Y before N), and with more keys too.
    for keys in ["dso_from,mispredict", "comm,dso_from,cycles,mispredict"] {
        let hw = common::hwprof(&["report", "-b", "--branch-sort", keys, "-i", &f]);
        hw.assert_ok();
        let perf = common::perf(&["report", "-b", "--stdio", "--sort", keys, "-i", &f]);
        perf.assert_ok();
        assert_perf_prefix(&hw.stdout, &perf.stdout);
    }
    // The mispredicted branches' own column says 100% of them are.
    let y = rows(&hw.stdout)
        .into_iter()
        .find(|r| r.contains("5.05%  Y"))
        .unwrap_or_else(|| panic!("no Y row:\n{}", hw.stdout));
    assert!(y.contains("100.00%"), "{y}");
}

#[test]
fn report_b_json_counts_every_branch() {
    let Some(f) = fixture() else { return };
    let f = f.to_string_lossy().into_owned();
    let hw = common::hwprof(&["report", "-b", "--json", "-i", &f]);
    hw.assert_ok();
    let v: serde_json::Value = serde_json::from_str(&hw.stdout).unwrap();
    let ev = &v["events"][0];
    assert_eq!(ev["event"], "cycles:ppp");
    assert_eq!(ev["branches"], 416);
    assert_eq!(ev["mispredicted"], 21);
    let rows = ev["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 291);
    let n: u64 = rows.iter().map(|r| r["branches"].as_u64().unwrap()).sum();
    assert_eq!(n, 416);
    assert_eq!(rows[0]["overhead"], 6.9712);
    assert_eq!(rows[0]["from"]["level"], "H");
    assert_eq!(rows[0]["from"]["dso"], serde_json::Value::Null);
}

#[test]
fn branch_sort_without_b_is_a_usage_error() {
    let r = common::hwprof(&[
        "report",
        "--branch-sort",
        "cycles",
        "-i",
        "nonexistent.data",
    ]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(r.stderr.contains("add -b"), "{}", r.stderr);
}

#[test]
fn report_b_without_branch_stacks_says_how_to_record_them() {
    let Some(dir) = hwprof_testkit::fixture_path("perfdata") else {
        return;
    };
    let f = dir.join("perf.data.group_desc-4.14");
    let hw = common::hwprof(&["report", "-b", "-i", &f.to_string_lossy()]);
    assert_eq!(hw.code(), 1, "{}", hw.stderr);
    assert!(hw.stderr.contains("has no branch stacks"), "{}", hw.stderr);
    assert!(hw.stdout.is_empty());
}

// ---- LBR call stacks (`--call-graph lbr`) on a synthetic recording ----

use hwprof_pmu::attr::{Attr, branch, sample};
use hwprof_sampler::perfdata::features::Features;
use hwprof_sampler::perfdata::writer::{EventEntry, Writer};
use hwprof_sampler::record::context;

fn record(kind: u32, misc: u16, mut body: Vec<u8>) -> Vec<u8> {
    body.resize(body.len().next_multiple_of(8), 0);
    let mut r = kind.to_le_bytes().to_vec();
    r.extend_from_slice(&misc.to_le_bytes());
    r.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
    r.extend_from_slice(&body);
    r
}

fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn u64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// One sample of a synthetic recording: ip, cpumode (header misc), callchain, and
/// branch entries (from, to, flags), most recent first.
struct Smp {
    ip: u64,
    misc: u16,
    chain: Vec<u64>,
    entries: Vec<(u64, u64, u64)>,
}

/// A recording of `exe` mapped at 0x400000 (process `chain`), its samples with
/// CALLCHAIN and BRANCH_STACK of `branch_sample_type`, written with hwprof's writer.
fn recording(out: &std::path::Path, exe: &std::path::Path, bst: u64, samples: &[Smp]) {
    let pid = 4343u32;
    let sid = |t: u64| -> Vec<u8> {
        let mut b = u32s(&[pid, pid]);
        b.extend(u64s(&[t]));
        b
    };
    let mut a = Attr::new(0, 0);
    a.sample_period = 100_000;
    a.sample_type = sample::IP
        | sample::TID
        | sample::TIME
        | sample::PERIOD
        | sample::CALLCHAIN
        | sample::BRANCH_STACK;
    a.branch_sample_type = bst;
    a.sample_id_all = true;
    a.mmap = true;
    a.mmap2 = true;
    a.comm = true;
    let mut w = Writer::create(
        out,
        vec![EventEntry {
            attr: a,
            name: "cycles".into(),
            ids: vec![],
        }],
    )
    .unwrap();
    let mut body = u32s(&[pid, pid]);
    let mut name = b"chain".to_vec();
    name.resize(16, 0);
    body.extend(name);
    body.extend(sid(1));
    w.write_record(&record(3, 0, body)).unwrap();
    let path = exe.to_string_lossy();
    let mut b = u32s(&[pid, pid]);
    b.extend(u64s(&[0x40_0000, 0x10_0000, 0]));
    b.extend(u32s(&[8, 1]));
    b.extend(u64s(&[77, 0]));
    b.extend(u32s(&[5, 2]));
    let mut p = path.as_bytes().to_vec();
    p.push(0);
    p.resize(p.len().next_multiple_of(8), 0);
    b.extend(p);
    b.extend(sid(2));
    w.write_record(&record(10, 2, b)).unwrap();
    for (i, s) in samples.iter().enumerate() {
        let mut b = u64s(&[s.ip]);
        b.extend(u32s(&[pid, pid]));
        b.extend(u64s(&[10 + i as u64, 100_000, s.chain.len() as u64]));
        b.extend(u64s(&s.chain));
        b.extend(u64s(&[s.entries.len() as u64]));
        for &(from, to, flags) in &s.entries {
            b.extend(u64s(&[from, to, flags]));
        }
        w.write_record(&record(9, s.misc, b)).unwrap();
    }
    w.finish(&Features::default()).unwrap();
}

/// The functions of the dwarf_chain workload (main -> outer -> middle -> leaf):
/// the binary and their addresses.
fn chain_workload() -> (PathBuf, [u64; 4]) {
    let exe = common::workload("dwarf_chain");
    let addrs = ["main", "outer", "middle", "leaf"].map(|n| hwprof_testkit::nm_address(&exe, n));
    (exe, addrs)
}

/// A `perf record --call-graph lbr` recording of dwarf_chain: user samples whose
/// callchain holds the sampled ip (and a stale frame LBR mode must ignore), and whose
/// LBR call stack holds the calls; one sample taken in the kernel, whose callchain has a
/// kernel part.
fn lbr_recording(out: &std::path::Path) {
    let (exe, [main, outer, middle, leaf]) = chain_workload();
    // Call sites a few bytes into each caller, entries most recent first.
    let calls = vec![
        (middle + 4, leaf, 0),
        (outer + 4, middle, 0),
        (main + 8, outer, 0),
    ];
    let mut samples: Vec<Smp> = (0..3)
        .map(|_| Smp {
            ip: leaf + 2,
            misc: 2,
            chain: vec![context::USER, leaf + 2, 0x40_0001],
            entries: calls.clone(),
        })
        .collect();
    // In middle (leaf returned: its call left the LBR call stack).
    samples.push(Smp {
        ip: middle + 6,
        misc: 2,
        chain: vec![context::USER, middle + 6],
        entries: calls[1..].to_vec(),
    });
    // In the kernel, called from leaf: the kernel part comes from the callchain.
    samples.push(Smp {
        ip: 0xffff_ffff_8100_0010,
        misc: 1,
        chain: vec![
            context::KERNEL,
            0xffff_ffff_8100_0010,
            0xffff_ffff_8100_0020,
            context::USER,
            leaf + 2,
        ],
        entries: calls,
    });
    let bst = branch::USER | branch::CALL_STACK | branch::NO_FLAGS | branch::NO_CYCLES;
    recording(out, &exe, bst, &samples);
}

/// Folded stacks (root first, `;`-joined, with their sample counts) of `perf script -F
/// comm,ip,sym` output; kernel frames (addresses in the upper half) become `[k]`.
fn perf_folded(script: &str) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for block in script.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut lines = block.lines();
        let comm = lines.next().unwrap_or_default().trim().to_string();
        let mut frames: Vec<String> = lines
            .map(|l| {
                let mut f = l.split_whitespace();
                let addr = u64::from_str_radix(f.next().unwrap_or("0"), 16).unwrap_or(0);
                if addr >= 0xffff_8000_0000_0000 {
                    "[k]".to_string()
                } else {
                    f.next().unwrap_or("[unknown]").to_string()
                }
            })
            .collect();
        frames.push(comm);
        frames.reverse();
        *out.entry(frames.join(";")).or_insert(0) += 1;
    }
    out
}

/// hwprof's folded stacks (`--weight samples`), kernel frames as `[k]`.
fn hwprof_folded(folded: &str) -> std::collections::BTreeMap<String, u64> {
    folded
        .lines()
        .filter_map(|l| {
            let (stack, n) = l.rsplit_once(' ')?;
            let stack: Vec<&str> = stack
                .split(';')
                .map(|f| if f.ends_with("_[k]") { "[k]" } else { f })
                .collect();
            Some((stack.join(";"), n.parse().ok()?))
        })
        .collect()
}

#[test]
fn lbr_call_stacks_are_stitched_as_perf_shows_them() {
    if !common::require_perf("perf script is the judge") {
        return;
    }
    let data = common::scratch_path("lbr-callstack.data");
    lbr_recording(&data);
    let f = data.to_string_lossy().into_owned();
    let perf = common::perf(&["script", "-F", "comm,ip,sym", "-i", &f]);
    perf.assert_ok();
    let hw = common::hwprof(&["flamegraph", "--folded", "--weight", "samples", "-i", &f]);
    hw.assert_ok();
    let want = perf_folded(&perf.stdout);
    let got = hwprof_folded(&hw.stdout);
    assert_eq!(got, want, "hwprof:\n{}\nperf:\n{}", hw.stdout, perf.stdout);
    // The stacks perf stitches: the leaf from the newest call's target, callers from
    // the call sites, the kernel part from the callchain, the stale user frame gone.
    assert_eq!(
        want.get("chain;main;outer;middle;leaf"),
        Some(&3),
        "{want:?}"
    );
    assert_eq!(want.get("chain;main;outer;middle"), Some(&1), "{want:?}");
    assert_eq!(
        want.get("chain;main;outer;middle;leaf;[k];[k]"),
        Some(&1),
        "{want:?}"
    );
    // perf report's self overhead agrees too.
    let rows = |out: &str| -> Vec<(String, String)> {
        out.lines()
            .filter(|l| l.contains("%") && l.contains("[.]"))
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f[0].to_string(), f[f.len() - 1].to_string())
            })
            .collect()
    };
    let perf = common::perf(&["report", "--no-children", "--stdio", "-i", &f]);
    perf.assert_ok();
    let hw = common::hwprof(&["report", "--no-children", "-i", &f]);
    hw.assert_ok();
    let (mut p, mut h) = (rows(&perf.stdout), rows(&hw.stdout));
    p.sort();
    h.sort();
    assert_eq!(h, p, "hwprof:\n{}\nperf:\n{}", hw.stdout, perf.stdout);
}

/// `perf record -b` of dwarf_chain with symbols: branches within one function merge into
/// its row, prediction flags and cycles as recorded.
fn any_branch_recording(out: &std::path::Path) {
    let (exe, [main, outer, middle, leaf]) = chain_workload();
    const P: u64 = 2;
    const M: u64 = 1;
    let cyc = |c: u64| c << 4;
    let mut samples = Vec::new();
    for i in 0..4u64 {
        samples.push(Smp {
            ip: leaf + 2,
            misc: 2,
            chain: vec![context::USER, leaf + 2],
            entries: vec![
                (leaf + 4 + i, middle + 10, P | cyc(3)),
                (middle + 4, leaf, if i == 0 { M } else { P } | cyc(3)),
                (outer + 4, middle, M | cyc(5 + i % 2)),
                (main + 8, outer, P),
                (0x40_0001, 0x7f00_0000_0000, P | cyc(1)),
            ],
        });
    }
    recording(out, &exe, branch::ANY, &samples);
}

#[test]
fn report_b_resolves_functions_as_perf_does() {
    if !common::require_perf("perf report -b is the judge") {
        return;
    }
    let data = common::scratch_path("any-branch.data");
    any_branch_recording(&data);
    let f = data.to_string_lossy().into_owned();
    let hw = common::hwprof(&["report", "-b", "-i", &f]);
    hw.assert_ok();
    let perf = common::perf(&["report", "-b", "--stdio", "-i", &f]);
    perf.assert_ok();
    assert_perf_prefix(&hw.stdout, &perf.stdout);
    assert!(hw.stdout.contains("[.] leaf"), "{}", hw.stdout);
    let perf = common::perf(&["report", "-b", "--stdio", "--sort", "mispredict", "-i", &f]);
    perf.assert_ok();
    let hw = common::hwprof(&["report", "-b", "--branch-sort", "mispredict", "-i", &f]);
    hw.assert_ok();
    assert_perf_prefix(&hw.stdout, &perf.stdout);
}

/// Key lists under which perf's comparisons are no order (mispredict before another key)
/// sort without a panic: every entry in a row, rows in one order on every run.
#[test]
fn report_b_mispredict_before_other_keys_sorts() {
    let Some(f) = fixture() else { return };
    let f = f.to_string_lossy().into_owned();
    for keys in ["mispredict,symbol_from", "dso_from,mispredict,symbol_from"] {
        let hw = common::hwprof(&["report", "-b", "--branch-sort", keys, "-i", &f]);
        hw.assert_ok();
        assert!(!hw.stderr.contains("panicked"), "{}", hw.stderr);
        assert!(
            hw.stdout.contains("[k] 0xffffffffb420a473"),
            "{}",
            hw.stdout
        );
        let json = common::hwprof(&["report", "-b", "--branch-sort", keys, "--json", "-i", &f]);
        json.assert_ok();
        let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
        let n: u64 = v["events"][0]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["branches"].as_u64().unwrap())
            .sum();
        assert_eq!(n, 416, "{keys}: every entry in a row");
        let again = common::hwprof(&["report", "-b", "--branch-sort", keys, "-i", &f]);
        assert_eq!(hw.stdout, again.stdout, "{keys}");
    }
}

/// LBR entries with non-canonical addresses (no mapping holds them) sort under perf's
/// default keys: addresses read as signed numbers, as perf orders canonical ones. (perf's
/// sign of a wrapped difference is no order over these: 0x7fff...ff < 0x8000...00 by it,
/// and 0x8000...00 < 0; what it prints depends on its tree's shape.)
#[test]
fn report_b_non_canonical_addresses_sort() {
    let (exe, _) = chain_workload();
    let weird = [
        0u64,
        0x4000_0000_0000_0000,
        0x8000_0000_0000_0000,
        0xc000_0000_0000_0000,
        0x7fff_ffff_ffff_ffff,
        0x9000_0000_0000_0000,
    ];
    let samples: Vec<Smp> = (0..8)
        .map(|i| Smp {
            ip: 0x40_0001,
            misc: 2,
            chain: vec![context::USER, 0x40_0001],
            entries: weird
                .iter()
                .cycle()
                .skip(i)
                .take(weird.len())
                .map(|&a| (a, a ^ 0x5555, 2))
                .collect(),
        })
        .collect();
    let data = common::scratch_path("non-canonical.data");
    recording(&data, &exe, branch::ANY, &samples);
    let hw = common::hwprof(&["report", "-b", "-i", &data.to_string_lossy()]);
    hw.assert_ok();
    let from: Vec<&str> = rows(&hw.stdout)
        .iter()
        .filter_map(|r| r.split_whitespace().nth(4))
        .collect();
    assert_eq!(
        from,
        [
            "0x8000000000000000",
            "0x9000000000000000",
            "0xc000000000000000",
            "0000000000000000",
            "0x4000000000000000",
            "0x7fffffffffffffff",
        ],
        "{}",
        hw.stdout
    );
}
