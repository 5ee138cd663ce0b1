//! `hwprof mem report` on synthetic PEBS load/store recordings (tests/memdata), with
//! `perf mem report` / `perf report --mem-mode` reading the same files as the judge.

mod common;
mod memdata;

/// The synthetic recordings are what perf 6.1 reads as `perf mem record` and `perf c2c
/// record` files: the events, levels, functions and data symbols as written.
#[test]
fn perf_reads_the_synthetic_recordings() {
    if !common::require_perf("perf mem report reads the synthetic recording") {
        return;
    }
    let bin = memdata::bin();
    let path = common::scratch_path("mem_mix.data");
    memdata::write(
        &path,
        &bin,
        &[memdata::PID, memdata::TID2],
        &memdata::mix(&bin),
    );
    let p = path.to_str().unwrap();
    let run = common::perf(&["mem", "report", "--stdio", "-i", p]);
    run.assert_ok();
    for want in [
        "# Samples: 84  of event 'cpu/mem-loads,ldlat=30/P'",
        "# Samples: 27  of event 'cpu/mem-stores/P'",
        "Remote Cache (1 hop) hit  [.] writer_a",
        "[.] table+0x2000",
        "[.] quiet+0x8",
    ] {
        assert!(run.stdout.contains(want), "no {want:?}\n{}", run.dump());
    }
    let run = common::perf(&["c2c", "report", "--stdio", "-i", p]);
    run.assert_ok();
    for want in [
        "Load Local HITM                   :          6",
        "Load Remote HITM                  :          3",
        "Store L1D Miss                    :          7",
    ] {
        assert!(run.stdout.contains(want), "no {want:?}\n{}", run.dump());
    }
}
