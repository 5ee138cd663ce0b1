use super::*;

fn enc(model: Model) -> Encoder {
    Encoder::for_model(model)
}

fn one(e: &Encoder, s: &str) -> Event {
    let l = e.parse(s).unwrap_or_else(|err| panic!("{s}: {err}"));
    assert_eq!(l.events.len(), 1, "{s}");
    l.events.into_iter().next().unwrap()
}

#[test]
fn generic_events_match_perf() {
    let e = enc(Model::Skylake);
    let c = one(&e, "cycles");
    assert_eq!((c.attr.type_, c.attr.config), (0, 0));
    assert!(
        c.attr.exclude_guest,
        "perf excludes guests by default on core events"
    );
    let t = one(&e, "task-clock");
    assert_eq!((t.attr.type_, t.attr.config), (1, 1));
    assert!(!t.attr.exclude_guest);
    let l = one(&e, "LLC-load-misses");
    assert_eq!((l.attr.type_, l.attr.config), (3, 0x10002));
}

#[test]
fn modifiers_follow_perf() {
    let e = enc(Model::Skylake);
    let u = one(&e, "cycles:u").attr;
    assert!(!u.exclude_user && u.exclude_kernel && u.exclude_hv && u.exclude_guest);
    let k = one(&e, "cycles:k").attr;
    assert!(k.exclude_user && !k.exclude_kernel && k.exclude_hv && !k.exclude_guest);
    let h = one(&e, "task-clock:h").attr;
    assert!(h.exclude_user && h.exclude_kernel && !h.exclude_hv);
    let g = one(&e, "cycles:G").attr;
    assert!(g.exclude_host && !g.exclude_guest);
    let hh = one(&e, "cycles:H").attr;
    assert!(!hh.exclude_host && hh.exclude_guest);
    assert_eq!(one(&e, "cycles:ppp").attr.precise_ip, 3);
    assert_eq!(one(&e, "cycles:P").attr.precise_ip, 3);
    assert_eq!(
        enc(Model::Zen4).parse("cycles:P").unwrap().events[0]
            .attr
            .precise_ip,
        2
    );
    assert!(matches!(
        e.parse("cycles:pppp"),
        Err(Error::BadModifier { .. })
    ));
    assert!(matches!(
        e.parse("cycles:x"),
        Err(Error::BadModifier { .. })
    ));
    assert!(one(&e, "cycles:D").attr.pinned);
}

#[test]
fn raw_and_pmu_terms() {
    let e = enc(Model::Skylake);
    let r = one(&e, "r01d1");
    assert_eq!((r.attr.type_, r.attr.config), (4, 0x1d1));
    let p = one(&e, "cpu/event=0xd1,umask=0x20,cmask=1,inv,edge,ldlat=64/pp");
    assert_eq!(p.attr.type_, 4);
    assert_eq!(
        p.attr.config,
        0xd1 | 0x20 << 8 | 1 << 18 | 1 << 23 | 1 << 24
    );
    assert_eq!(p.attr.config1, 64);
    assert_eq!(p.attr.precise_ip, 2);
    assert!(matches!(
        e.parse("cpu/bogus=1/"),
        Err(Error::UnknownTerm { .. })
    ));
    assert!(matches!(
        e.parse("cpu/event=0x1ff/"),
        Err(Error::TermOverflow { .. })
    ));
    assert!(matches!(
        e.parse("nopmu/event=1/"),
        Err(Error::UnknownPmu { .. })
    ));
    let n = one(&e, "cpu/event=0x3c,name=mycycles/");
    assert_eq!(n.name, "mycycles");
}

#[test]
fn amd_event_select_spans_bits_32_to_35() {
    let e = enc(Model::Zen4);
    let p = one(&e, "cpu/event=0x1c0,umask=0x3/");
    assert_eq!(p.attr.config, 0xc0 | 0x3 << 8 | 1 << 32);
}

#[test]
fn vendor_names_encode_through_the_cpu_format() {
    let e = enc(Model::Skylake);
    let v = one(&e, "mem_load_retired.l3_miss:pp");
    assert_eq!(v.attr.config, 0x20d1);
    assert_eq!(v.attr.precise_ip, 2);
    assert_eq!(v.name, "MEM_LOAD_RETIRED.L3_MISS:pp");
    let z = one(&enc(Model::Zen4), "ls_dmnd_fills_from_sys.dram_io_near");
    assert_eq!(z.attr.type_, 4);
    let p = one(&e, "cpu/MEM_LOAD_RETIRED.L3_MISS/");
    assert_eq!(p.attr.config, 0x20d1);
}

#[test]
fn hybrid_generic_events_expand_to_both_core_pmus() {
    let e = enc(Model::AlderLake);
    let l = e.parse("cycles").unwrap();
    assert_eq!(l.events.len(), 2);
    assert_eq!(l.events[0].attr.config, 4 << 32);
    assert_eq!(l.events[1].attr.config, 7 << 32);
    assert_eq!(l.events[0].name, "cpu_core/cycles/");
    assert_eq!(l.groups().len(), 2);
}

#[test]
fn groups_and_leaders() {
    let e = enc(Model::Skylake);
    let l = e
        .parse("{cycles,instructions}:u,task-clock,{branches,branch-misses,cache-misses}")
        .unwrap();
    let leaders: Vec<usize> = l.events.iter().map(|e| e.leader).collect();
    assert_eq!(leaders, vec![0, 0, 2, 3, 3, 3]);
    assert_eq!(l.groups(), vec![0..2, 2..3, 3..6]);
    assert!(l.events[1].attr.exclude_kernel);
    assert_eq!(l.events[1].name, "instructions:u");
}

#[test]
fn breakpoints() {
    let e = enc(Model::Skylake);
    let b = one(&e, "mem:0x1000:w").attr;
    assert_eq!(
        (b.type_, b.bp_type, b.config1, b.config2),
        (5, 2, 0x1000, 4)
    );
    let x = one(&e, "mem:0x2000:x").attr;
    assert_eq!((x.bp_type, x.config2), (4, 8));
    assert!(e.parse("mem:0x1000/3:w").is_err());
}

#[test]
fn unknown_names_get_suggestions() {
    let e = enc(Model::Skylake);
    match e.parse("cycels") {
        Err(Error::UnknownEvent {
            suggestion: Some(s),
            ..
        }) => assert_eq!(s, "cycles"),
        other => panic!("{other:?}"),
    }
    match e.parse("MEM_LOAD_RETIRED.L3_MIS") {
        Err(Error::UnknownEvent {
            suggestion: Some(s),
            ..
        }) => assert_eq!(s, "MEM_LOAD_RETIRED.L3_MISS"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn globs() {
    assert!(glob("sched_*", "sched_switch"));
    assert!(glob("*", "x"));
    assert!(glob("s?hed", "sched"));
    assert!(!glob("sched_*", "irq"));
    assert!(glob("", ""));
    assert!(!glob("", "x"));
    assert!(glob("**", ""));
    assert!(glob("a*b", "abxb"));
    assert!(!glob("a*a", "a"));
    assert!(glob("*miss", "l3_miss"));
    assert!(!glob("*miss", "l3_hit"));
    assert!(glob("mem_load*miss", "mem_load_retired.l3_miss"));
    assert!(glob("?é*", "xéy"), "characters, not bytes");
    // Backtracking stays linear: 2^40 ways to place the stars, one answer.
    let long = "a".repeat(200);
    assert!(!glob(&format!("{}b", "*a".repeat(40)), &long));
    assert!(glob(&format!("{}*", "*a".repeat(40)), &long));
}

#[test]
fn hybrid_atom_events_are_reachable_through_their_pmu() {
    let e = enc(Model::AlderLake);
    let core = one(&e, "cpu_core/MEM_LOAD_RETIRED.L3_MISS/");
    assert_eq!(core.attr.type_, 4);
    let l = e.parse("cpu_atom/event=0xc0/").unwrap();
    assert_eq!(l.events[0].attr.type_, 7);
    let atom_names: Vec<String> = crate::tables::builtin_events(Model::AlderLake)
        .iter()
        .filter(|n| n.pmu == "cpu_atom")
        .map(|n| n.name.to_string())
        .collect();
    let first = &atom_names[0];
    let a = one(&e, &format!("cpu_atom/{first}/"));
    assert_eq!(a.attr.type_, 7, "{first}");
}

#[test]
fn other_vendors_names_say_whose_they_are() {
    let err = enc(Model::Zen4)
        .parse("MEM_LOAD_RETIRED.L3_MISS:pp")
        .unwrap_err();
    let Error::ForeignEvent { models, .. } = &err else {
        panic!("{err}");
    };
    assert!(models.iter().any(|m| m == "skylake"), "{models:?}");
    let msg = err.to_string();
    assert!(msg.contains("an Intel event of skylake"), "{msg}");
    assert!(msg.contains("not an event of --cpu zen4"), "{msg}");
    assert!(msg.contains("--cpu skylake"), "{msg}");
    let msg = enc(Model::Skylake)
        .parse("ls_dmnd_fills_from_sys.dram_io_near")
        .unwrap_err()
        .to_string();
    assert!(msg.contains("an AMD event of zen4"), "{msg}");
    // A typo is still a typo.
    let err = enc(Model::Zen4)
        .parse("MEM_LOAD_RETIRED.L3_MISX")
        .unwrap_err();
    assert!(matches!(err, Error::UnknownEvent { .. }), "{err}");
}

#[test]
fn event_files_for_another_vendor_name_their_cpu() {
    let dir = std::env::temp_dir().join(format!("hwprof-evfile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("skylakex_core.json");
    std::fs::write(
        &file,
        r#"{"Header":{"Copyright":"Intel Corporation"},"Events":[
            {"EventCode":"0xB7, 0xBB","UMask":"0x01","EventName":"OFFCORE_RESPONSE.X",
             "MSRIndex":"0x1a6,0x1a7","MSRValue":"0x10001"}]}"#,
    )
    .unwrap();
    let mut amd = enc(Model::Zen3);
    amd.add_event_file(&file).unwrap();
    let err = amd.parse("OFFCORE_RESPONSE.X").unwrap_err();
    let mut intel = enc(Model::SkylakeX);
    intel.add_event_file(&file).unwrap();
    let ok = intel.parse("OFFCORE_RESPONSE.X");
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(matches!(err, Error::EventFileForOtherCpu { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("an event file for Intel skylakex"), "{msg}");
    assert!(msg.contains("not for --cpu zen3"), "{msg}");
    assert!(msg.contains("pass --cpu skylakex"), "{msg}");
    assert_eq!(ok.unwrap().events[0].attr.config1, 0x10001);
}

#[test]
fn a_cpu_without_a_table_points_to_its_event_file() {
    // Haswell: Intel, no built-in table.
    let id = CpuId::parse(
        "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 63\nmodel name\t: Intel(R) Xeon(R) CPU E5-2680 v3\nstepping\t: 2\n",
    );
    let msg = Encoder::for_host_cpu(Some(id))
        .parse("MEM_LOAD_RETIRED.L3_MISS")
        .unwrap_err()
        .to_string();
    assert!(msg.contains("an Intel event of skylake"), "{msg}");
    assert!(
        msg.contains("hwprof has no built-in table for this CPU (GenuineIntel-6-3F, \"Intel"),
        "{msg}"
    );
    assert!(msg.contains("--event-file FILE.json"), "{msg}");
    assert!(
        msg.contains("mapfile.csv names the file for GenuineIntel-6-3F)"),
        "{msg}"
    );
    // An AMD CPU with a table: the name is not one of its events.
    let id = CpuId::parse(
        "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 97\nmodel name\t: AMD Ryzen 9 7950X\nstepping\t: 2\n",
    );
    let msg = Encoder::for_host_cpu(Some(id))
        .parse("MEM_LOAD_RETIRED.L3_MISS")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("not an event of this CPU (AMD zen4, \"AMD Ryzen 9 7950X\")"),
        "{msg}"
    );
    assert!(
        msg.contains("hwprof encode --cpu skylake -e MEM_LOAD_RETIRED.L3_MISS"),
        "{msg}"
    );
}
