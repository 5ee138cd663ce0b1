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

/// An `Extra` source (as offcpu's BPF engine is): started with the command's pid before
/// it runs, its samples written at the end as the file's last event, which perf reads.
#[test]
fn an_extra_source_adds_its_event_and_samples_at_the_end() {
    use hwprof_pmu::attr::Attr;
    use hwprof_sampler::recorder::{EXTRA_ID, Extra};
    use hwprof_sampler::synth::{MadeSample, sample_record};

    struct Two {
        child: Option<i32>,
    }
    impl Extra for Two {
        fn name(&self) -> String {
            "offcpu-time".into()
        }
        fn start(&mut self, child: Option<i32>) -> std::io::Result<()> {
            self.child = child;
            Ok(())
        }
        fn finish(
            &mut self,
            attr: &Attr,
            write: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
        ) -> std::io::Result<()> {
            let pid = self.child.unwrap_or(0) as u32;
            const KERNEL: u64 = -128i64 as u64;
            const USER: u64 = -512i64 as u64;
            for (i, chain) in [[KERNEL, 0xffff_ffff_8100_0000, USER, 0x40_1000]]
                .iter()
                .chain(&[[USER, 0x40_2000, 0x40_3000, 0x40_4000]])
                .enumerate()
            {
                let s = MadeSample {
                    id: EXTRA_ID,
                    kernel: i == 0,
                    ip: chain[1],
                    pid,
                    tid: pid,
                    time: u64::MAX << 32,
                    cpu: 0,
                    period: 1_000_000 * (i as u64 + 1),
                    weight: 1,
                    callchain: chain,
                };
                write(&sample_record(attr, &s).expect("a sample"))?;
            }
            Ok(())
        }
    }

    let path = scratch("extra").join("perf.data");
    let events = Encoder::host().parse("cpu-clock,dummy").expect("events");
    let rec = RecordPlan::new(events, spin(0));
    let recorder = Recorder::open(rec).expect("open");
    let child = recorder.child_pid();
    let out = Output::create(&path, &Options::PERF_DATA).expect("output");
    let mut two = Two { child: None };
    let done = recorder
        .run_with_extra(out, &Stop::new().expect("stop"), None, &mut two)
        .expect("record");
    assert_eq!(done.exit_code(), 0);
    assert_eq!(two.child, child);

    let data = PerfData::open(&path).expect("read back");
    let names: Vec<&str> = data.attrs().iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["cpu-clock", "dummy", "offcpu-time"]);
    let mut extra: Vec<(u64, usize)> = Vec::new();
    let mut last_type = 0;
    data.for_each_record(|_, r| {
        if let (Body::Sample(s), Some(2)) = (&r.body, r.attr) {
            assert_eq!(s.pid, child.map(|p| p as u32));
            extra.push((s.period.unwrap_or(0), s.callchain.map_or(0, |c| c.len())));
        }
        last_type = r.header.type_;
        Ok::<(), hwprof_sampler::Error>(())
    })
    .expect("records");
    assert_eq!(extra, [(1_000_000, 4), (2_000_000, 4)]);
    assert_eq!(last_type, kind::FINISHED_ROUND);

    // perf reads the file and names the event.
    if let Ok(out) = std::process::Command::new("perf")
        .args(["script", "-F", "event,period", "-i"])
        .arg(&path)
        .output()
        && out.status.success()
    {
        let text = String::from_utf8_lossy(&out.stdout);
        let ours: Vec<&str> = text.lines().filter(|l| l.contains("offcpu-time")).collect();
        assert_eq!(ours.len(), 2, "{text}");
        assert!(ours[1].contains("2000000"), "{text}");
    }
}
