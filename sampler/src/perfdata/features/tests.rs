//! Tests of the feature codec: round trips, perf's byte layout, malformed input and
//! every file-mode fixture.

use super::*;
use std::path::PathBuf;

fn sample() -> Features {
    let mut a = Attr::new(1, 0);
    a.sample_period = 4000;
    a.freq = true;
    a.sample_type = 0x127;
    a.disabled = true;
    a.mmap2 = true;
    let mut b = Attr::new(1, 9);
    b.sample_max_stack = 127;
    Features {
        hostname: Some("vm".into()),
        osrelease: Some("6.18.44-fc-v657".into()),
        version: Some("6.1.hwprof-0.1.0".into()),
        arch: Some("x86_64".into()),
        nr_cpus: Some((4, 2)),
        cpudesc: Some("AMD EPYC".into()),
        cpuid: Some("AuthenticAMD,26,2,1".into()),
        total_mem: Some(24684092),
        cmdline: Some(vec![
            "/usr/bin/hwprof".into(),
            "record".into(),
            String::new(),
        ]),
        event_desc: Some(vec![
            EventDesc {
                attr: a,
                name: "cpu-clock".into(),
                ids: vec![189, 190],
            },
            EventDesc {
                attr: b,
                name: "dummy:u".into(),
                ids: vec![],
            },
        ]),
        build_ids: vec![
            BuildIdEntry {
                pid: -1,
                misc: MISC_KERNEL | MISC_BUILD_ID_SIZE,
                build_id: vec![0x48, 0xdc, 0x54, 0x0c, 0x8b, 0x76, 0x39, 0x38, 0x04, 0xca],
                filename: "[kernel.kallsyms]".into(),
            },
            BuildIdEntry {
                pid: -1,
                misc: MISC_USER | MISC_BUILD_ID_SIZE,
                build_id: (0..20).collect(),
                filename: "/usr/lib/x86_64-linux-gnu/libc.so.6".repeat(3),
            },
        ],
        group_desc: Some(vec![GroupDesc {
            name: ANON_GROUP.into(),
            leader_idx: 0,
            nr_members: 2,
        }]),
        other: vec![(id::SAMPLE_TIME, vec![1, 2, 3, 4, 5, 6, 7, 8])],
    }
}

fn parse_all(sections: &[(u32, Vec<u8>)]) -> Features {
    let mut f = Features::default();
    for (id, bytes) in sections {
        f.parse_section(*id, bytes, 0x1000).unwrap();
    }
    f
}

#[test]
fn round_trip() {
    let f = sample();
    let sections = f.to_sections();
    let ids: Vec<u32> = sections.iter().map(|s| s.0).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
    assert_eq!(parse_all(&sections), f);
    // Writing again gives the same bytes.
    assert_eq!(parse_all(&sections).to_sections(), sections);
}

#[test]
fn strings_are_padded_like_perf() {
    let f = Features {
        hostname: Some("vm".into()),
        ..Features::default()
    };
    let s = f.to_sections();
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].0, id::HOSTNAME);
    assert_eq!(s[0].1.len(), 68);
    assert_eq!(&s[0].1[..6], &[64, 0, 0, 0, b'v', b'm']);
    assert!(s[0].1[6..].iter().all(|&b| b == 0));
    // A 63-byte string fits in 64 with its NUL; 64 bytes need 128.
    let mut v = Vec::new();
    put_string(&mut v, &"x".repeat(63));
    assert_eq!(v.len(), 4 + 64);
    v.clear();
    put_string(&mut v, &"x".repeat(64));
    assert_eq!(v.len(), 4 + 128);
}

#[test]
fn attr_size_is_the_smallest_version() {
    let a = Attr::new(1, 0);
    assert_eq!(file_attr_size([&a]), 64);
    let mut b = a.clone();
    b.sample_max_stack = 127; // offset 108 -> VER5
    assert_eq!(file_attr_size([&a, &b]), 112);
    b.config3 = 1;
    assert_eq!(file_attr_size([&b]), 136);
    let bytes = attr_file_bytes(&a, 112);
    assert_eq!(bytes.len(), 112);
    assert_eq!(Attr::from_bytes(&bytes).unwrap(), (a, 112));
}

#[test]
fn malformed_sections_name_the_offset() {
    let sections = sample().to_sections();
    for (fid, bytes) in &sections {
        if matches!(*fid, id::SAMPLE_TIME) || bytes.is_empty() {
            continue;
        }
        // Every truncation either parses (a shorter but valid section) or fails
        // with an offset inside the section; never panics.
        for cut in 0..bytes.len() {
            let mut f = Features::default();
            match f.parse_section(*fid, &bytes[..cut], 0x1000) {
                Ok(()) => {}
                Err(Error::Malformed { what, offset, .. }) => {
                    assert_eq!(what, feature_what(*fid));
                    assert!(
                        (0x1000..=0x1000 + cut as u64).contains(&offset),
                        "{what} offset {offset:#x} cut {cut}"
                    );
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
    let mut f = Features::default();
    let e = f
        .parse_section(id::HOSTNAME, &[200, 0, 0, 0, b'a'], 0x40)
        .unwrap_err();
    assert!(matches!(e, Error::Malformed { offset: 0x40, .. }), "{e}");
    let e = f
        .parse_section(id::NRCPUS, &[1, 0, 0, 0, 2], 0x40)
        .unwrap_err();
    assert!(matches!(e, Error::Malformed { offset: 0x44, .. }), "{e}");
    // A build id entry whose size is below the fixed part.
    let mut b = vec![0u8; 40];
    b[6] = 8;
    let e = f.parse_section(id::BUILD_ID, &b, 0).unwrap_err();
    assert!(matches!(e, Error::Malformed { offset: 0, .. }), "{e}");
    // An absurd id count is refused before allocating.
    let mut ev = sample().to_sections();
    ev.retain(|s| s.0 == id::EVENT_DESC);
    let mut b = ev[0].1.clone();
    let at = 8 + 112; // nr, attr_size, first attr (VER5: sample_max_stack)
    b[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(f.parse_section(id::EVENT_DESC, &b, 0).is_err());
}

#[track_caller]
fn fixtures() -> Option<PathBuf> {
    hwprof_testkit::fixture_path("perfdata")
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The feature sections of a file-mode perf.data, read straight from its header.
fn file_sections(bytes: &[u8]) -> Vec<(u32, u64, Vec<u8>)> {
    assert_eq!(le64(bytes, 0), super::super::MAGIC);
    assert_eq!(le64(bytes, 8), 104);
    let table = (le64(bytes, 40) + le64(bytes, 48)) as usize;
    let mut out = Vec::new();
    let mut k = 0;
    for bit in 0..id::BITS {
        let word = le64(bytes, 72 + 8 * (bit as usize / 64));
        if word >> (bit % 64) & 1 == 1 {
            let at = table + 16 * k;
            let (off, size) = (le64(bytes, at), le64(bytes, at + 8));
            out.push((
                bit,
                off,
                bytes[off as usize..(off + size) as usize].to_vec(),
            ));
            k += 1;
        }
    }
    out
}

#[test]
fn fixtures_features() {
    let Some(dir) = fixtures() else {
        return;
    };
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".pb_text") || name.contains("piped") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let sections = file_sections(&bytes);
        let mut f = Features::default();
        for (fid, off, b) in &sections {
            f.parse_section(*fid, b, *off)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        // Writing the decoded features back gives perf's bytes, except EVENT_DESC
        // (hwprof writes the smallest attr size) which must decode the same.
        let ours = f.to_sections();
        assert_eq!(ours.len(), sections.len(), "{name}");
        for ((fid, _, theirs), (gid, mine)) in sections.iter().zip(&ours) {
            assert_eq!(fid, gid, "{name}");
            if *fid == id::EVENT_DESC {
                let mut g = Features::default();
                g.parse_section(*gid, mine, 0).unwrap();
                assert_eq!(g.event_desc, f.event_desc, "{name}");
            } else if *fid == id::BUILD_ID && theirs != mine {
                // perf 3.8 and 4.4 left garbage after some file names' NUL: same
                // length and same entries are all that can be asked.
                assert_eq!(theirs.len(), mine.len(), "{name}");
                let mut g = Features::default();
                g.parse_section(*gid, mine, 0).unwrap();
                assert_eq!(g.build_ids, f.build_ids, "{name}");
            } else {
                assert!(
                    theirs == mine,
                    "{name}: feature {} differs",
                    feature_name(*fid)
                );
            }
        }
        check_known(&name, &f);
        seen += 1;
    }
    assert_eq!(seen, 5);
}

fn check_known(name: &str, f: &Features) {
    let events: Vec<&str> = f
        .event_desc
        .iter()
        .flatten()
        .map(|e| e.name.as_str())
        .collect();
    let cmd = f.cmdline.as_ref().unwrap();
    assert_eq!(cmd[0].rsplit('/').next(), Some("perf"), "{name}");
    assert_eq!(f.arch.as_deref(), Some("x86_64"));
    assert_eq!(f.hostname.as_deref(), Some("localhost"));
    match name {
        "perf.data.group_desc-4.14" => {
            assert_eq!(events, ["cache-references", "branch-misses"]);
            let ev = f.event_desc.as_ref().unwrap();
            assert_eq!(ev[0].ids, [150, 151, 152, 153]);
            assert_eq!(ev[1].ids, [154, 155, 156, 157]);
            assert_eq!((ev[0].attr.config, ev[1].attr.config), (2, 5));
            assert_eq!(
                f.group_desc,
                Some(vec![GroupDesc {
                    name: ANON_GROUP.into(),
                    leader_idx: 0,
                    nr_members: 2
                }])
            );
            assert_eq!(f.osrelease.as_deref(), Some("4.14.18"));
            assert_eq!(f.cpuid.as_deref(), Some("GenuineIntel,6,78,3"));
            assert_eq!(f.nr_cpus, Some((4, 4)));
            assert_eq!(f.total_mem, Some(16299868));
            let files: Vec<&str> = f.build_ids.iter().map(|b| b.filename.as_str()).collect();
            assert_eq!(files, ["[kernel.kallsyms]", "/lib64/ld-2.23.so", "[vdso]"]);
            let k = &f.build_ids[0];
            assert_eq!((k.pid, k.misc), (-1, MISC_KERNEL));
            assert_eq!(&k.build_id[..4], b"g&y\xce");
            assert_eq!(f.build_ids[1].misc, MISC_USER);
            assert_eq!(cmd.len(), 9);
            assert_eq!(cmd[8], "Hello, World!");
            assert_eq!(cmd[3], "{cache-references,branch-misses}");
        }
        "perf.data.branch-4.14" => {
            assert_eq!(events, ["cycles:ppp"]);
            assert_eq!(
                f.cpudesc.as_deref(),
                Some("Intel(R) Core(TM) m7-6Y75 CPU @ 1.20GHz")
            );
            let a = &f.event_desc.as_ref().unwrap()[0].attr;
            assert_eq!((a.precise_ip, a.branch_sample_type), (3, 1 << 3));
            assert!(f.other.iter().any(|o| o.0 == id::BRANCH_STACK));
        }
        "perf.data.hybrid_topology" => {
            assert_eq!(
                events,
                ["cpu_core/cycles:ppp/", "cpu_atom/cycles:ppp/", "dummy:HG"]
            );
            assert_eq!(f.version.as_deref(), Some("5.15.68"));
            assert_eq!(f.cpuid.as_deref(), Some("GenuineIntel,6,186,3"));
            assert_eq!(f.event_desc.as_ref().unwrap()[1].attr.config, 0x7_0000_0000);
            assert_eq!(f.event_desc.as_ref().unwrap()[2].ids.len(), 12);
            assert!(f.other.iter().any(|o| o.0 == id::HYBRID_TOPOLOGY));
        }
        "perf.data.lost_samples-4.4" => {
            assert_eq!(
                events,
                ["cycles:pp", "instructions:pp", "branch-instructions:pp"]
            );
            assert_eq!(f.version.as_deref(), Some("4.4"));
            let g = f.group_desc.as_ref().unwrap();
            assert_eq!((g.len(), g[0].leader_idx, g[0].nr_members), (1, 0, 3));
            assert_eq!(f.nr_cpus, Some((2, 2)));
        }
        "perf.data.callgraph-3.8" => {
            assert_eq!(events, ["cycles"]);
            assert_eq!(f.version.as_deref(), Some("3.8.11.g047ea3"));
            assert_eq!(f.event_desc.as_ref().unwrap()[0].ids, [81, 82, 83, 84]);
            assert_eq!(
                f.cpudesc.as_deref(),
                Some("Intel(R) Core(TM) i5-2467M CPU @ 1.60GHz")
            );
        }
        other => panic!("unexpected fixture {other}"),
    }
}
