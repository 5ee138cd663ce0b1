//! The rules of [`Processes`], case by case.

use super::*;

const P: u32 = 100;
const Q: u32 = 200;

fn mmap(pid: u32, addr: u64, name: &str) -> Event {
    Event::Mmap {
        pid,
        addr,
        len: 0x1000,
        pgoff: 0,
        name: name.to_string(),
        build_id: None,
        data: false,
    }
}

fn data_mmap(pid: u32, addr: u64, name: &str) -> Event {
    Event::Mmap {
        pid,
        addr,
        len: 0x1000,
        pgoff: 0,
        name: name.to_string(),
        build_id: None,
        data: true,
    }
}

fn comm(pid: u32, tid: u32, name: &str, exec: bool) -> Event {
    Event::Comm {
        pid,
        tid,
        name: name.to_string(),
        exec,
    }
}

fn fork(pid: u32, ppid: u32) -> Event {
    Event::Fork {
        pid,
        ppid,
        tid: pid,
        ptid: ppid,
    }
}

fn file(p: &Processes, pid: u32, addr: u64) -> Option<String> {
    match p.module(p.code_module(pid, addr)?)? {
        Module::File { path, .. } => Some(path.clone()),
        m => Some(format!("{m:?}")),
    }
}

fn comm_name(p: &mut Processes, pid: u32, tid: u32) -> String {
    let id = p.comm_of(pid, tid);
    p.comm(id).to_string()
}

#[test]
fn classifier() {
    assert_eq!(classify("//anon", false), MapKind::Anon);
    assert_eq!(classify("", false), MapKind::Anon);
    assert_eq!(classify("/memfd:jit (deleted)", false), MapKind::Anon);
    assert_eq!(classify("[anon:v8]", false), MapKind::Anon);
    assert_eq!(classify("[heap]", false), MapKind::Heap);
    assert_eq!(classify("[stack]", false), MapKind::Stack);
    assert_eq!(classify("[vdso]", false), MapKind::Vdso);
    assert_eq!(classify("/tmp/jitted-12-3.so", false), MapKind::JitImage);
    assert_eq!(classify("/usr/lib/libc.so.6", false), MapKind::File);
    assert_eq!(classify("relative", false), MapKind::Other);
    assert_eq!(classify("[kernel.kallsyms]_text", true), MapKind::Kernel);
    assert_eq!(
        classify("[guest.kernel.kallsyms]", true),
        MapKind::GuestKernel
    );
    assert_eq!(
        classify("/lib/modules/x/ath9k-hw.ko", true),
        MapKind::KernelModule
    );
    assert_eq!(
        module_of("/lib/modules/x/ath9k-hw.ko", KERNEL_PID, None),
        Module::KernelModule {
            name: "[ath9k_hw]".into()
        }
    );
    assert_eq!(
        module_of("", P, None),
        Module::Anon {
            name: "//anon".into(),
            pid: P
        }
    );
}

#[test]
fn mmap_maps_code_and_the_kernel_apart() {
    let mut p = Processes::default();
    p.apply(mmap(P, 0x1000, "/bin/a"));
    p.apply(mmap(KERNEL_PID, KERNEL_START, "[kernel.kallsyms]_text"));
    assert_eq!(file(&p, P, 0x1800).as_deref(), Some("/bin/a"));
    assert_eq!(p.locate(P, 0x1800, false).1, 0x800);
    let k = p.locate(P, KERNEL_START + 5, false);
    assert_eq!(p.module(k.0), Some(&Module::Kernel));
    let un = p.locate(P, 0x9000, false);
    assert_eq!(p.module(un.0), Some(&Module::Unmapped));
    // A data mapping is not code.
    p.apply(data_mmap(P, 0x5000, "/data"));
    assert_eq!(p.code_module(P, 0x5000), None);
    assert_eq!(p.find_data(P, 0x5000), None, "data kept only when asked");
}

#[test]
fn data_spaces_hold_every_mapping() {
    let mut p = Processes::default().with_data();
    p.apply(mmap(P, 0x1000, "/bin/a"));
    p.apply(data_mmap(P, 0x5000, "/data"));
    let d = p.find_data(P, 0x5010).unwrap();
    assert_eq!(
        (p.data_file(d.file).0, d.offset, d.rel),
        ("/data", 0x10, 0x10)
    );
    let c = p.find_data(P, 0x1010).unwrap();
    assert_eq!(p.data_file(c.file).0, "/bin/a");
    p.apply(comm(P, P, "b", true));
    assert_eq!(p.find_data(P, 0x5010), None, "exec forgets data mappings");
}

#[test]
fn exec_forgets_the_mappings_and_names_the_thread() {
    let mut p = Processes::default();
    p.apply(mmap(P, 0x1000, "/bin/a"));
    let v = p.version(P);
    p.apply(comm(P, P, "b", true));
    assert_eq!(file(&p, P, 0x1800), None);
    assert!(p.version(P) > v, "a new version");
    assert_eq!(comm_name(&mut p, P, P), "b");
    p.apply(mmap(P, 0x1000, "/bin/b"));
    assert_eq!(file(&p, P, 0x1800).as_deref(), Some("/bin/b"));
}

#[test]
fn comm_names_the_thread_and_the_process_for_its_main_thread() {
    let mut p = Processes::default();
    p.apply(comm(P, P, "main", false));
    p.apply(comm(P, P + 1, "worker", false));
    assert_eq!(comm_name(&mut p, P, P + 1), "worker");
    assert_eq!(comm_name(&mut p, P, P + 2), "main", "the process's name");
    assert_eq!(comm_name(&mut p, 0, 0), "swapper");
    assert_eq!(comm_name(&mut p, 7, 8), ":8");
}

#[test]
fn fork_of_a_known_parent_copies_its_mappings_and_comm() {
    let mut p = Processes::default();
    p.apply(comm(Q, Q, "parent", false));
    p.apply(mmap(Q, 0x1000, "/bin/q"));
    p.apply(fork(P, Q));
    assert_eq!(file(&p, P, 0x1800).as_deref(), Some("/bin/q"));
    assert_ne!(p.version(P), p.version(Q), "its own version");
    assert_eq!(comm_name(&mut p, P, P), "parent");
    // The copy is the child's: the parent's later mappings are not.
    p.apply(mmap(Q, 0x3000, "/bin/later"));
    assert_eq!(file(&p, P, 0x3800), None);
}

#[test]
fn fork_of_an_unknown_parent_starts_empty() {
    let mut p = Processes::default();
    // A process with pid P existed and exited; a new one reuses the pid.
    p.apply(mmap(P, 0x1000, "/bin/old"));
    p.apply(Event::Exit { pid: P, tid: P });
    p.apply(fork(P, Q));
    assert_eq!(file(&p, P, 0x1800), None, "the old process's mappings");
    assert!(p.version(P) > 0);
}

#[test]
fn fork_of_a_thread_shares_the_process() {
    let mut p = Processes::default();
    p.apply(comm(P, P, "main", false));
    p.apply(mmap(P, 0x1000, "/bin/a"));
    let v = p.version(P);
    p.apply(Event::Fork {
        pid: P,
        ppid: P,
        tid: P + 1,
        ptid: P,
    });
    assert_eq!(p.version(P), v, "mappings untouched");
    assert_eq!(comm_name(&mut p, P, P + 1), "main");
}

#[test]
fn exit_keeps_the_mappings_for_late_samples() {
    let mut p = Processes::default();
    p.apply(mmap(P, 0x1000, "/bin/a"));
    p.apply(Event::Exit { pid: P, tid: P + 1 });
    p.apply(Event::Exit { pid: P, tid: P });
    for i in 0..1000 {
        p.apply(Event::Exit {
            pid: 10_000 + i,
            tid: 10_000 + i,
        });
    }
    assert_eq!(
        file(&p, P, 0x1800).as_deref(),
        Some("/bin/a"),
        "a recording keeps them"
    );
}

#[test]
fn an_endless_stream_forgets_long_exited_processes() {
    let kept = 8;
    let mut p = Processes::default().forget_exited_after(kept);
    p.apply(mmap(P, 0x1000, "/bin/a"));
    p.apply(mmap(Q, 0x1000, "/bin/q"));
    p.apply(Event::Exit { pid: P, tid: P });
    p.apply(Event::Exit { pid: Q, tid: Q });
    // A thread's exit is not the process's.
    p.apply(mmap(P + 1, 0x1000, "/bin/t"));
    p.apply(Event::Exit {
        pid: P + 1,
        tid: P + 2,
    });
    for i in 0..kept as u32 {
        let pid = 10_000 + i;
        p.apply(mmap(pid, 0x1000, "/bin/x"));
        p.apply(Event::Exit { pid, tid: pid });
        // P samples on (another thread): it stays.
        p.sampled(P);
    }
    assert!(file(&p, P, 0x1800).is_some(), "a sampling process stays");
    assert_eq!(file(&p, Q, 0x1800), None, "a long-exited process goes");
    assert!(file(&p, P + 1, 0x1800).is_some(), "a thread's exit");
    // A pid reused after an EXIT starts over.
    p.apply(fork(Q, P));
    assert_eq!(file(&p, Q, 0x1800).as_deref(), Some("/bin/a"));
}
