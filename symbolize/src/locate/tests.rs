use super::*;

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let map: HashMap<String, OsString> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), OsString::from(v)))
        .collect();
    move |k| map.get(k).cloned()
}

#[test]
fn build_id_forms_drop_perf_data_padding() {
    let forms = |b: &[u8]| BuildId::new(b).forms();
    let padded = [0xab, 0xcd, 0xef, 0x01, 0, 0, 0, 0];
    assert_eq!(forms(&padded), ["abcdef01", "abcdef0100000000"]);
    assert_eq!(forms(&[1, 2, 3, 4, 5]), ["0102030405"]);
    assert!(forms(&[1, 0, 0, 0, 0]).is_empty(), "too short");
    assert!(forms(&[]).is_empty());
    assert_eq!(
        buildid_cache_path(Path::new("/h/.debug"), "abcdef01", "elf"),
        Path::new("/h/.debug/.build-id/ab/cdef01/elf")
    );
    assert_eq!(
        build_id_debug_path(Path::new("/usr/lib/debug"), "abcdef01"),
        Path::new("/usr/lib/debug/.build-id/ab/cdef01.debug")
    );
    assert_eq!(
        under(Path::new("/sym"), Path::new("/usr/bin/x")),
        Path::new("/sym/usr/bin/x")
    );
}

#[test]
fn environment_as_perf_and_elfutils_read_it() {
    let (c, notes) = Config::from_vars(None, vars(&[("HOME", "/home/u")]));
    assert_eq!(c.buildid_dir, Some(PathBuf::from("/home/u/.debug")));
    assert_eq!(c.symfs, None);
    assert_eq!(c.debuginfod.urls, Vec::<String>::new());
    assert_eq!(
        c.debuginfod.cache,
        Some(PathBuf::from("/home/u/.cache/debuginfod_client"))
    );
    assert_eq!(c.debuginfod.timeout, Duration::from_secs(90));
    assert_eq!(c.debuginfod.max_size, DEFAULT_MAXSIZE);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(c.debug_dirs, default_debug_dirs());

    // A symfs has its own build-id cache (perf's symbol__config_symfs).
    let (c, _) = Config::from_vars(
        Some(PathBuf::from("/sym")),
        vars(&[("HOME", "/home/u"), ("PERF_BUILDID_DIR", "/cache")]),
    );
    assert_eq!(c.buildid_dir, Some(PathBuf::from("/sym/.debug")));
    let (c, _) = Config::from_vars(
        None,
        vars(&[("HOME", "/home/u"), ("PERF_BUILDID_DIR", "/cache")]),
    );
    assert_eq!(c.buildid_dir, Some(PathBuf::from("/cache")));

    let (c, notes) = Config::from_vars(
        None,
        vars(&[
            ("HOME", "/home/u"),
            ("XDG_CACHE_HOME", "/xdg"),
            (
                "DEBUGINFOD_URLS",
                " https://a.example/  http://b.example:8002 https://a.example ",
            ),
            ("DEBUGINFOD_TIMEOUT", "5"),
            ("DEBUGINFOD_MAXSIZE", "1000"),
            ("DEBUGINFOD_MAXTIME", "60"),
        ]),
    );
    assert_eq!(
        c.debuginfod.urls,
        ["https://a.example", "http://b.example:8002"]
    );
    assert_eq!(
        c.debuginfod.cache,
        Some(PathBuf::from("/xdg/debuginfod_client"))
    );
    assert_eq!(c.debuginfod.timeout, Duration::from_secs(5));
    assert_eq!(c.debuginfod.max_size, 1000);
    assert_eq!(c.debuginfod.max_time, Some(Duration::from_secs(60)));
    assert!(notes.is_empty(), "{notes:?}");

    let (c, _) = Config::from_vars(
        None,
        vars(&[
            ("HOME", "/home/u"),
            ("XDG_CACHE_HOME", "/xdg"),
            ("DEBUGINFOD_CACHE_PATH", "/mine"),
        ]),
    );
    assert_eq!(c.debuginfod.cache, Some(PathBuf::from("/mine")));

    let (c, notes) = Config::from_vars(
        None,
        vars(&[
            ("DEBUGINFOD_URLS", "http://x"),
            ("DEBUGINFOD_TIMEOUT", "soon"),
        ]),
    );
    assert_eq!(c.buildid_dir, None);
    assert_eq!(c.debuginfod.cache, None);
    assert_eq!(c.debuginfod.timeout, Duration::from_secs(90));
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].contains("DEBUGINFOD_CACHE_PATH"), "{notes:?}");
    assert!(notes[1].contains("DEBUGINFOD_TIMEOUT=soon"), "{notes:?}");
    // Without a cache there is no client, and nothing is asked.
    let l = Locator::new(c);
    assert!(l.inner.client.is_none());
}

#[test]
fn nothing_configured_finds_only_the_path_itself() {
    let l = Locator::new(Config::default());
    let exe = std::env::current_exe().unwrap();
    let p = exe.to_str().unwrap();
    assert_eq!(l.executable(p, None), Some(exe.clone()));
    let own = BuildId::read(&exe);
    assert_eq!(l.executable(p, own.as_ref()), own.map(|_| exe.clone()));
    assert_eq!(
        l.executable(p, Some(&BuildId::new([7; 20]))),
        None,
        "another build id"
    );
    assert_eq!(l.executable("relative/path", None), None);
    assert!(l.notices().is_empty());
}
