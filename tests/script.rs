//! `hwprof script` end to end: the JSONL schema (field names from `linux/perf_event.h`),
//! DATA_SRC decoded as `perf mem` shows it, text output, `--header`, stdin, a closed
//! stdout pipe, and the sample counts of every fixture against quipper's dumps.

#[macro_use]
mod common;

use std::process::Command;

use common::fixture;
use hwprof_pmu::attr::{Attr, sample as st};
use serde_json::{Value, json};

fn jsonl(args: &[&str]) -> Vec<Value> {
    let mut a = vec!["script", "--format", "jsonl"];
    a.extend_from_slice(args);
    let r = common::hwprof(&a);
    r.assert_ok();
    assert!(r.stderr.is_empty(), "{}", r.dump());
    r.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn jsonl_schema_of_branch_fixture() {
    let Some(f) = fixture("perf.data.branch-4.14") else {
        return;
    };
    let recs = jsonl(&["-i", f.to_str().unwrap()]);
    assert_eq!(recs.len(), 50);
    let s = recs.iter().find(|r| r["type"] == "sample").unwrap();
    // First sample of the file, values from quipper's dump.
    assert_eq!(s["event"], "cycles:ppp");
    assert_eq!(s["ip"], 18446744072436609522u64);
    assert_eq!(
        (s["pid"].clone(), s["tid"].clone()),
        (json!(5805), json!(5805))
    );
    assert_eq!(s["time"], 12631245939019u64);
    assert_eq!(s["period"], 1);
    let bs = s["branch_stack"].as_array().unwrap();
    assert_eq!(bs.len(), 32);
    let keys: Vec<&str> = bs[0]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    for k in [
        "from",
        "to",
        "mispred",
        "predicted",
        "in_tx",
        "abort",
        "cycles",
        "type",
        "spec",
    ] {
        assert!(keys.contains(&k), "branch entry lacks {k}: {keys:?}");
    }
    assert_eq!(bs[0]["from"], 18446744072436616726u64);
    assert_eq!(bs[0]["to"], 18446744072436609507u64);
    assert_eq!(bs[0]["predicted"], true);
    assert_eq!(bs[0]["mispred"], false);
    assert_eq!(bs[0]["cycles"], 4);
    // Fields absent from sample_type are absent.
    for k in ["addr", "callchain", "data_src", "weight", "raw", "cpu"] {
        assert!(s.get(k).is_none(), "unexpected {k} in {s}");
    }
    let tc = recs.iter().find(|r| r["type"] == "time_conv").unwrap();
    assert_eq!(tc["time_shift"], 31);
    assert_eq!(tc["time_mult"], 1789569706);
    let m2 = recs.iter().find(|r| r["type"] == "mmap2").unwrap();
    for k in [
        "pid",
        "tid",
        "addr",
        "len",
        "pgoff",
        "maj",
        "min",
        "ino",
        "ino_generation",
        "prot",
        "flags",
        "filename",
        "sample_id",
    ] {
        assert!(m2.get(k).is_some(), "mmap2 lacks {k}: {m2}");
    }
    let comm = recs.iter().find(|r| r["type"] == "comm").unwrap();
    assert_eq!(comm["comm"], "perf");
    assert!(comm["exec"].is_boolean());
    assert!(recs.iter().any(|r| r["type"] == "finished_round"));
    assert!(recs.iter().any(|r| r["type"] == "exit"));
}

#[test]
fn sample_counts_match_quipper_for_every_fixture() {
    let Some(dir) = fixture("") else {
        return;
    };
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|e| e == "pb_text") {
            continue;
        }
        let pb = std::fs::read_to_string(format!("{}.pb_text", p.display())).unwrap();
        let want = pb.matches("\n  sample_event {").count();
        let lost: u64 = pb
            .lines()
            .filter_map(|l| l.trim().strip_prefix("num_lost: "))
            .map(|v| v.parse::<u64>().unwrap())
            .sum();
        let recs = jsonl(&["-i", p.to_str().unwrap()]);
        let got = recs.iter().filter(|r| r["type"] == "sample").count();
        assert_eq!(got, want, "{}", p.display());
        let got_lost: u64 = recs
            .iter()
            .filter(|r| r["type"] == "lost_samples")
            .map(|r| r["lost"].as_u64().unwrap())
            .sum();
        assert_eq!(got_lost, lost, "{}: lost samples", p.display());
        // Text (perf script's) prints one line per sample (then its frames and a
        // blank line); the dump one line per sample and per other record.
        let t = common::hwprof(&["script", "-i", p.to_str().unwrap()]);
        t.assert_ok();
        let heads = t
            .stdout
            .lines()
            .filter(|l| !l.starts_with('\t') && !l.is_empty())
            .count();
        assert_eq!(heads, want, "{}: text sample lines", p.display());
        let d = common::hwprof(&["script", "-D", "-i", p.to_str().unwrap()]);
        d.assert_ok();
        let heads = d
            .stdout
            .lines()
            .filter(|l| !l.starts_with('\t') && !l.contains("PERF_RECORD_"))
            .count();
        assert_eq!(heads, want, "{}: dump sample lines", p.display());
        n += 1;
    }
    assert!(n >= 6);
}

#[test]
fn dump_callchain_lines_match_perf_script() {
    let Some(f) = fixture("perf.data.callgraph-3.8") else {
        return;
    };
    if !common::require_perf("perf script on callgraph-3.8") {
        return;
    }
    let f = f.to_str().unwrap();
    let ours = common::hwprof(&["script", "-D", "-i", f]);
    ours.assert_ok();
    let theirs = common::perf(&["script", "-i", f, "-F", "comm,tid,cpu,time,period,event,ip"]);
    theirs.assert_ok();
    // perf: "perf 10447 [000] 346832.330193:          1 cycles: " then one line per
    // frame "\tffffffff96613abf"; hwprof prints the same fields (pid/tid for tid), plus
    // the context markers perf hides. perf sorts samples by time, hwprof prints them in
    // file order: the sets of sample lines are compared.
    let heads = |s: &str| -> Vec<String> {
        let mut v: Vec<String> = s
            .lines()
            .filter(|l| !l.starts_with('\t') && !l.contains("PERF_RECORD_") && !l.is_empty())
            .map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                let i = w.iter().position(|x| x.starts_with('[')).unwrap();
                let tid = w[i - 1].rsplit('/').next().unwrap();
                format!(
                    "{} {tid} {} {} {}",
                    w[..i - 1].join(" "),
                    w[i],
                    w[i + 1],
                    w[i + 2]
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(heads(&ours.stdout), heads(&theirs.stdout));
    // Per sample: its header and frames, sorted by header (time order differs).
    let samples = |s: &str, skip_markers: bool| -> Vec<(String, Vec<u64>)> {
        let mut v: Vec<(String, Vec<u64>)> = Vec::new();
        for l in s.lines() {
            if let Some(f) = l.strip_prefix('\t') {
                let a = u64::from_str_radix(f.split_whitespace().next().unwrap(), 16).unwrap();
                if !skip_markers || a < (-4095i64) as u64 {
                    v.last_mut().unwrap().1.push(a);
                }
            } else if !l.contains("PERF_RECORD_") && !l.is_empty() {
                let w: Vec<&str> = l.split_whitespace().collect();
                let i = w.iter().position(|x| x.starts_with('[')).unwrap();
                v.push((format!("{} {}", w[i], w[i + 1]), Vec::new()));
            }
        }
        v.sort();
        v
    };
    let ours_s = samples(&ours.stdout, true);
    let theirs_s = samples(&theirs.stdout, false);
    assert_eq!(ours_s.len(), theirs_s.len());
    let mut frames = 0;
    let mut exact = 0;
    for ((h1, f1), (h2, f2)) in ours_s.iter().zip(&theirs_s) {
        assert_eq!(h1, h2);
        assert_eq!(f1.len(), f2.len(), "frames of the sample at {h1}");
        for (a, b) in f1.iter().zip(f2) {
            // perf prints user frames it resolves to a DSO relative to that DSO (a
            // small offset); kernel frames and the others must be equal.
            let relative = *a < 1 << 63 && b < a && *b < 1 << 40;
            assert!(
                a == b || relative,
                "sample at {h1}: frame {a:#x} vs perf's {b:#x}"
            );
            frames += 1;
            exact += usize::from(a == b);
        }
    }
    assert!(
        frames > 1000 && exact > frames / 2,
        "{exact} of {frames} frames equal"
    );
    report!(
        "callgraph-3.8: {} samples, {frames} frames as perf script prints them \
         ({exact} equal, the rest DSO-relative in perf's output)",
        ours_s.len(),
    );
}

/// A pipe-mode stream: header, one HEADER_ATTR, then `samples`.
fn pipe_stream(attr: &Attr, ids: &[u64], samples: &[Vec<u64>]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"PERFILE2");
    b.extend_from_slice(&16u64.to_le_bytes());
    let ab = attr.to_bytes();
    let size = 8 + ab.len() + 8 * ids.len();
    b.extend_from_slice(&64u32.to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes());
    b.extend_from_slice(&(size as u16).to_le_bytes());
    b.extend_from_slice(&ab);
    for id in ids {
        b.extend_from_slice(&id.to_le_bytes());
    }
    for s in samples {
        b.extend_from_slice(&9u32.to_le_bytes());
        b.extend_from_slice(&2u16.to_le_bytes());
        b.extend_from_slice(&((8 + 8 * s.len()) as u16).to_le_bytes());
        for w in s {
            b.extend_from_slice(&w.to_le_bytes());
        }
    }
    b
}

#[test]
fn data_src_weight_struct_and_phys_addr_from_stdin() {
    let mut a = Attr::new(4, 0x1cd);
    a.sample_type = st::IP
        | st::TID
        | st::ADDR
        | st::RAW
        | st::WEIGHT_STRUCT
        | st::DATA_SRC
        | st::PHYS_ADDR
        | st::DATA_PAGE_SIZE;
    // LOAD, LVL HIT|L1, SNOOP NONE, TLB HIT|L1|L2.
    let ds: u64 = 2 | (0x02 | 0x08) << 5 | 0x02 << 19 | (0x02 | 0x08 | 0x10) << 26;
    // RAM hit via lvl_num, snoop hit, locked.
    let ds2: u64 = 2 | 0x02 << 5 | 0x04 << 19 | 2 << 24 | 0x0d << 33;
    let raw = |v: u32| -> u64 { 4 | u64::from(v) << 32 };
    let samples = vec![
        vec![
            0x401000,
            5 | 6 << 32,
            0x7fff_0000,
            raw(0xabcd),
            0x0003_0002_0000_0064,
            ds,
            0x1_2345_6000,
            4096,
        ],
        vec![
            0x401004,
            5 | 6 << 32,
            0x7fff_0040,
            raw(1),
            250,
            ds2,
            0x2000,
            4096,
        ],
    ];
    let stream = pipe_stream(&a, &[], &samples);
    let path = common::scratch_path("pipe_ds.data");
    std::fs::write(&path, &stream).unwrap();
    let r = common::run_cmd(
        Command::new("sh").args([
            "-c",
            &format!(
                "{} script -i - --format jsonl < {}",
                common::hwprof_bin(),
                path.display()
            ),
        ]),
        common::TIMEOUT,
    );
    r.assert_ok();
    let recs: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs[0]["type"], "header_attr");
    let s: Vec<&Value> = recs.iter().filter(|r| r["type"] == "sample").collect();
    assert_eq!(s.len(), 2);
    assert_eq!(s[0]["event"], "raw 0x1cd");
    assert_eq!(s[0]["addr"], 0x7fff_0000u64);
    assert_eq!(s[0]["raw"], "cdab0000");
    assert_eq!(
        s[0]["weight_struct"],
        json!({"var1_dw": 100, "var2_w": 2, "var3_w": 3})
    );
    assert_eq!(s[0]["data_src"], ds);
    assert_eq!(s[0]["mem"]["op"], "LOAD");
    assert_eq!(s[0]["mem"]["lvl"], "L1 hit");
    assert_eq!(s[0]["mem"]["snoop"], "None");
    assert_eq!(s[0]["mem"]["tlb"], "L1 or L2 hit");
    assert_eq!(s[0]["mem"]["lock"], "No");
    assert_eq!(s[1]["mem"]["lvl"], "RAM hit");
    assert_eq!(s[1]["mem"]["snoop"], "Hit");
    assert_eq!(s[1]["mem"]["lock"], "Yes");
    assert_eq!(s[0]["phys_addr"], 0x1_2345_6000u64);
    assert_eq!(s[0]["data_page_size"], 4096);
    // The dump shows the perf script -F data_src form.
    let t = common::hwprof(&["script", "-D", "-i", path.to_str().unwrap()]);
    t.assert_ok();
    assert!(
        t.stdout
            .contains("|OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A"),
        "{}",
        t.stdout
    );
    let _ = std::fs::remove_file(path);
}

#[test]
fn header_flag_and_closed_pipe() {
    let Some(f) = fixture("perf.data.callgraph-3.8") else {
        return;
    };
    let f = f.to_str().unwrap();
    let r = common::hwprof(&["script", "--header", "-i", f]);
    r.assert_ok();
    assert!(r.stdout.starts_with("# file mode"), "{}", &r.stdout[..200]);
    assert!(
        r.stdout.contains("# event : name = cycles"),
        "{}",
        &r.stdout[..2000]
    );
    let recs = jsonl(&["--header", "-i", f]);
    assert_eq!(recs[0]["type"], "header");
    assert_eq!(recs[0]["attrs"][0]["name"], "cycles");
    assert!(recs[0]["features"]["hostname"].is_string());
    // `| head -1`: stdout closes early, hwprof exits 0 without a message.
    let r = common::run_cmd(
        Command::new("bash").args([
            "-c",
            &format!(
                "{} script -i {f} --format jsonl | head -1; exit ${{PIPESTATUS[0]}}",
                common::hwprof_bin()
            ),
        ]),
        common::TIMEOUT,
    );
    assert_eq!(r.stdout.lines().count(), 1);
    assert!(r.stderr.is_empty(), "{}", r.dump());
    assert_eq!(r.code(), 0, "{}", r.dump());
}
