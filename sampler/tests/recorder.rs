//! The recorder end to end on this machine: a command recorded into perf.data (the
//! lines of `examples/record.rs`) reads back with its samples, comm and mappings; the
//! callback sink gets the same records live; the default event falls back to cpu-clock
//! where there is no hardware PMU and says so; the command's exit code comes back.

use std::path::PathBuf;

use hwprof_pmu::{Encoder, stop::Stop, target::Target};
use hwprof_sampler::config::CallGraph;
use hwprof_sampler::outfile::{Options, Output};
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::record::{Body, kind};
use hwprof_sampler::recorder::{RecordPlan, Recorder, Sink};

/// A fresh scratch directory for one test.
fn scratch(tag: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("recorder-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// A shell that spins for a few tens of milliseconds, then exits with `code`.
fn spin(code: i32) -> Target {
    Target::Command(
        [
            "sh",
            "-c",
            &format!("i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done; exit {code}"),
        ]
        .map(String::from)
        .to_vec(),
    )
}

fn cpu_clock() -> hwprof_pmu::EventList {
    Encoder::host().parse("cpu-clock").expect("cpu-clock")
}

/// What `examples/record.rs` does, into a temp dir, read back with `PerfData`.
#[test]
fn a_command_is_recorded_into_perf_data() {
    let path = scratch("file").join("perf.data");
    let mut rec = RecordPlan::new(cpu_clock(), spin(0));
    rec.options.call_graph = Some(CallGraph::Fp);
    let recorder = Recorder::open(rec).expect("open");
    let out = Output::create(&path, &Options::PERF_DATA).expect("output");
    let done = recorder
        .run(Sink::PerfData(out), &Stop::new().expect("stop"))
        .expect("record");
    assert_eq!(done.exit_code(), 0);
    assert!(!done.pipe);
    assert!(done.stats.samples > 0, "{:?}", done.stats);

    let data = PerfData::open(&path).expect("read back");
    assert_eq!(data.attrs().len(), 1);
    assert_eq!(data.attrs()[0].name, "cpu-clock");
    let (mut samples, mut comms, mut sh_mapped, mut chains) = (0u64, 0, false, 0);
    data.for_each_record(|_, r| {
        match &r.body {
            Body::Sample(s) => {
                samples += 1;
                chains += usize::from(s.callchain.is_some_and(|c| !c.is_empty()));
            }
            Body::Comm { .. } => comms += 1,
            Body::Mmap2(m) => {
                sh_mapped |= String::from_utf8_lossy(m.filename).ends_with("sh")
                    || String::from_utf8_lossy(m.filename).contains("/dash")
                    || String::from_utf8_lossy(m.filename).contains("/bash");
            }
            _ => {}
        }
        Ok::<(), hwprof_sampler::Error>(())
    })
    .expect("records");
    assert_eq!(samples, done.stats.samples);
    assert!(comms > 0, "no COMM record");
    assert!(sh_mapped, "no MMAP2 of the shell");
    assert!(chains > 0, "no callchains");
}

/// The callback sink gets the synthesized kernel mapping first, then the rings'
/// records, decodable with the recorder's decoder; and the exit code comes back.
#[test]
fn a_callback_gets_the_records_live() {
    let recorder = Recorder::open(RecordPlan::new(cpu_clock(), spin(3))).expect("open");
    let decoder = recorder.decoder();
    let mut types: Vec<u32> = Vec::new();
    let mut samples = 0u64;
    let mut on_record = |bytes: &[u8]| -> std::io::Result<()> {
        let r = decoder.decode(bytes, 0).map_err(std::io::Error::other)?;
        types.push(r.header.type_);
        samples += u64::from(matches!(r.body, Body::Sample(_)));
        Ok(())
    };
    let done = recorder
        .run(Sink::Records(&mut on_record), &Stop::new().expect("stop"))
        .expect("record");
    assert_eq!(done.exit_code(), 3);
    assert_eq!(done.data_bytes, 0);
    assert!(samples > 0 && samples == done.stats.samples, "{samples}");
    if std::fs::read_to_string("/proc/kallsyms").is_ok_and(|k| k.contains(" _stext")) {
        assert_eq!(types.first(), Some(&kind::MMAP), "{types:?}");
    }
    assert!(types.contains(&kind::COMM));
}

/// perf's default event: cycles, or cpu-clock with a notice where there is no PMU.
#[test]
fn the_default_event_falls_back_to_cpu_clock_and_says_so() {
    let mut rec = RecordPlan::new(Default::default(), spin(0));
    rec.options.default_event = true;
    let recorder = Recorder::open(rec).expect("open");
    let names: Vec<&str> = recorder
        .events()
        .events
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    if Encoder::host().host_has_cpu_pmu() && names != ["cpu-clock"] {
        assert!(recorder.notices().is_empty(), "{:?}", recorder.notices());
    } else {
        assert_eq!(names, ["cpu-clock"]);
        assert!(
            recorder.notices()[0].contains("sampling cpu-clock instead"),
            "{:?}",
            recorder.notices()
        );
    }
    let mut sink = |_: &[u8]| Ok(());
    let done = recorder
        .run(Sink::Records(&mut sink), &Stop::new().expect("stop"))
        .expect("record");
    assert_eq!(done.exit_code(), 0);
}
