//! The recorder's rewriting hook end to end on this machine: a command recorded with
//! `--call-graph dwarf` settings (cpu-clock) through a [`Rewrite`] that drops the user
//! stacks (a stand-in for the online unwinder, which lives in symbolize) gives a file
//! whose attrs sample no registers or stack, whose samples decode with ordinary
//! callchains, that is far smaller per sample than the same recording without it, and
//! that `perf report` reads without a word about the file; in pipe mode too, and into
//! a callback. A rewrite that passes on garbage stops the recording and leaves no file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use hwprof_pmu::attr::sample;
use hwprof_pmu::{Encoder, stop::Stop, target::Target};
use hwprof_sampler::config::CallGraph;
use hwprof_sampler::outfile::{Options, Output};
use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_sampler::perfdata::writer::EventEntry;
use hwprof_sampler::record::{Body, Decoder, context, kind, misc, rewrite};
use hwprof_sampler::recorder::{
    RecordPlan, Recorded, Recorder, Rewrite, Rewritten, RunError, Sink,
};
use hwprof_testkit::{Why, report, skip};

/// A fresh scratch directory for one test.
fn scratch(tag: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("rewrite-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// A shell that spins for a few tens of milliseconds.
fn spin() -> Target {
    Target::Command(
        [
            "sh",
            "-c",
            "i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done",
        ]
        .map(String::from)
        .to_vec(),
    )
}

/// cpu-clock on `spin` with `--call-graph dwarf` settings.
fn dwarf_recording() -> RecordPlan {
    let events = Encoder::host().parse("cpu-clock").expect("cpu-clock");
    let mut rec = RecordPlan::new(events, spin());
    rec.options.call_graph = Some(CallGraph::Dwarf { stack_size: 8192 });
    rec
}

/// Drops each DWARF sample's registers and stack, keeping the kernel's callchain and,
/// for samples in user mode, the user ip as the whole user part; counts what it saw.
struct StripUserStacks {
    kernel: Decoder,
    /// Record types in the order they came.
    types: Vec<u32>,
    replaced: u64,
    user_parts: u64,
}

impl StripUserStacks {
    fn new(recorder: &Recorder) -> Self {
        StripUserStacks {
            kernel: recorder.decoder(),
            types: Vec::new(),
            replaced: 0,
            user_parts: 0,
        }
    }

    fn seen(&self, ty: u32) -> usize {
        self.types.iter().filter(|&&t| t == ty).count()
    }
}

const USER_STACKS: u64 = sample::REGS_USER | sample::STACK_USER;

impl Rewrite for StripUserStacks {
    fn events(&self, events: &mut [EventEntry]) {
        for e in events
            .iter_mut()
            .filter(|e| e.attr.sample_type & USER_STACKS != 0)
        {
            e.attr = rewrite::unwound_attr(&e.attr);
        }
    }

    fn record(&mut self, record: &[u8], out: &mut Vec<u8>) -> Rewritten {
        let Ok(r) = self.kernel.decode(record, 0) else {
            return Rewritten::AsIs;
        };
        self.types.push(r.header.type_);
        let Body::Sample(s) = &r.body else {
            return Rewritten::AsIs;
        };
        let Some(attr) = r.attr.and_then(|i| self.kernel.attr(i)) else {
            return Rewritten::AsIs;
        };
        if attr.sample_type & USER_STACKS == 0 {
            return Rewritten::AsIs;
        }
        let in_user = r.header.misc & misc::CPUMODE_MASK == misc::USER;
        let user = s.ip.filter(|_| in_user);
        match rewrite::unwound_sample(attr, record, user.as_slice(), out) {
            Ok(n) => {
                self.replaced += 1;
                self.user_parts += u64::from(n > 0);
                Rewritten::Replaced
            }
            Err(_) => Rewritten::AsIs,
        }
    }
}

/// Records into `path` (file mode), through a [`StripUserStacks`] when `strip`.
fn record_file(path: &Path, strip: bool) -> (Recorded, Option<StripUserStacks>) {
    let recorder = Recorder::open(dwarf_recording()).expect("open");
    let out = Output::create(path, &Options::PERF_DATA).expect("output");
    let stop = Stop::new().expect("stop");
    let mut rewrite = strip.then(|| StripUserStacks::new(&recorder));
    let done = match rewrite.as_mut() {
        Some(r) => recorder.run_rewriting(Sink::PerfData(out), &stop, r),
        None => recorder.run(Sink::PerfData(out), &stop),
    };
    let done = done.unwrap_or_else(|e| panic!("record: {e}"));
    assert!(done.stats.samples > 0, "{:?}", done.stats);
    (done, rewrite)
}

/// Reads back a rewritten recording: attrs without user registers and stack, every
/// sample with a callchain (the user ip as its user part in user mode) and no stack.
/// Returns the number of samples.
fn check_rewritten(data: &PerfData) -> u64 {
    assert_eq!(data.attrs().len(), 1);
    let a = &data.attrs()[0].attr;
    assert_eq!(a.sample_type & USER_STACKS, 0, "{:#x}", a.sample_type);
    assert_ne!(a.sample_type & sample::CALLCHAIN, 0);
    assert_eq!((a.sample_regs_user, a.sample_stack_user), (0, 0));
    assert!(!a.exclude_callchain_user);
    let mut samples = 0;
    data.for_each_record(|_, r| {
        if let Body::Sample(s) = &r.body {
            samples += 1;
            assert!(s.regs_user.is_none() && s.stack_user.is_none());
            let chain = s.callchain.expect("a callchain").to_vec();
            if r.header.misc & misc::CPUMODE_MASK == misc::USER {
                assert_eq!(chain, [context::USER, s.ip.expect("ip")]);
            } else {
                assert!(!chain.contains(&context::USER), "{chain:x?}");
            }
        }
        Ok::<(), hwprof_sampler::Error>(())
    })
    .expect("the samples decode");
    samples
}

/// `perf report --stdio` on `file` (stdin for `-`, from `stdin`): its stdout, after
/// checking it ran and said nothing about the file (its warning that records were lost
/// is let through when the recording lost some: `lost`). `None` after a skip without
/// perf.
fn perf_report(file: &Path, stdin: Option<&Path>, lost: u64) -> Option<String> {
    let mut cmd = Command::new("perf");
    cmd.args(["report", "--stdio", "-i"]).arg(file);
    if let Some(s) = stdin {
        cmd.stdin(std::fs::File::open(s).expect("stdin"));
    } else {
        cmd.stdin(Stdio::null());
    }
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => {
            skip(Why::Setup, format_args!("cannot run perf ({e})"));
            return None;
        }
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "perf report: {stderr}");
    // perf's words for lost records: "Warning:\nProcessed N events and lost M chunks!\n
    // \nCheck IO/CPU overload!".
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| {
            let lost_words = l.trim() == "Warning:"
                || l.contains(" chunks!")
                || l.contains("Check IO/CPU overload!");
            let excused = lost > 0 && lost_words;
            !l.trim().is_empty() && !excused
        })
        .collect();
    assert!(said.is_empty(), "perf report said: {stderr}");
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether `perf report --stdio` output draws call graphs (`---frame` lines).
fn has_call_graphs(out: &str) -> bool {
    out.lines().any(|l| l.trim_start().starts_with("---"))
}

#[test]
fn a_dwarf_recording_through_a_rewrite_is_small_and_perf_reads_it() {
    let dir = scratch("file");
    let (raw_path, path) = (dir.join("raw.data"), dir.join("perf.data"));
    let (raw, _) = record_file(&raw_path, false);
    let (done, strip) = record_file(&path, true);
    let strip = strip.expect("the rewrite");

    let data = PerfData::open(&path).expect("read back");
    let samples = check_rewritten(&data);
    assert_eq!(samples, done.stats.samples);
    assert_eq!(
        strip.replaced, samples,
        "every sample went through the rewrite"
    );
    assert!(strip.user_parts > 0, "no sample in user mode");
    // It saw the side-band records, the synthesized kernel map first.
    if std::fs::read_to_string("/proc/kallsyms").is_ok_and(|k| k.contains(" _stext")) {
        assert_eq!(
            strip.types.first(),
            Some(&kind::MMAP),
            "{:?}",
            &strip.types[..3]
        );
    }
    assert!(strip.seen(kind::COMM) > 0 && strip.seen(kind::MMAP2) > 0);
    assert!(strip.types.len() as u64 >= done.stats.records);
    // The build ids still come from every MMAP record: the same DSOs as without it.
    let names = |p: &Path| {
        let d = PerfData::open(p).expect("read");
        let mut n: Vec<String> = d
            .features()
            .build_ids
            .iter()
            .map(|b| b.filename.clone())
            .collect();
        n.sort();
        n
    };
    let with = names(&path);
    assert!(with.iter().any(|n| n.contains("libc")), "{with:?}");
    assert_eq!(with, names(&raw_path));

    let per = |d: &Recorded| d.data_bytes as f64 / d.stats.samples as f64;
    let (raw_per, per_sample) = (per(&raw), per(&done));
    report!(
        "rewrite: {:.0} bytes/sample through the rewrite ({} samples, {} bytes, {} records lost), {:.0} without ({} samples, {} bytes, {} lost): {:.3}x",
        per_sample,
        done.stats.samples,
        done.data_bytes,
        done.stats.lost,
        raw_per,
        raw.stats.samples,
        raw.data_bytes,
        raw.stats.lost,
        per_sample / raw_per
    );
    assert!(per_sample < raw_per / 10.0, "{per_sample} vs {raw_per}");

    let Some(out) = perf_report(&path, None, done.stats.lost) else {
        return;
    };
    assert!(
        out.contains("# Children"),
        "perf sees no callchains:\n{out}"
    );
    assert!(out.contains("[.] "), "no user frame:\n{out}");
}

#[test]
fn pipe_mode_describes_the_rewritten_attrs_up_front() {
    let dir = scratch("pipe");
    let fifo = dir.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        skip(Why::Setup, "mkfifo failed here");
        return;
    }
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).expect("read the fifo"))
    };
    let recorder = Recorder::open(dwarf_recording()).expect("open");
    let mut strip = StripUserStacks::new(&recorder);
    let out = Output::create(&fifo, &Options::PERF_DATA).expect("output");
    assert!(!out.is_seekable());
    let done = recorder
        .run_rewriting(Sink::PerfData(out), &Stop::new().expect("stop"), &mut strip)
        .expect("record");
    assert!(done.pipe);
    let bytes = reader.join().expect("reader");
    let stream = dir.join("stream.data");
    std::fs::File::create(&stream)
        .and_then(|mut f| f.write_all(&bytes))
        .expect("save the stream");
    let data = PerfData::from_bytes(bytes, "the fifo").expect("read back");
    assert!(data.is_pipe());
    assert_eq!(check_rewritten(&data), done.stats.samples);
    assert_eq!(strip.replaced, done.stats.samples);
    if let Some(out) = perf_report(Path::new("-"), Some(&stream), done.stats.lost) {
        // In pipe mode perf shows the call graphs under the Self column only.
        assert!(has_call_graphs(&out), "perf shows no callchains:\n{out}");
    }
}

#[test]
fn a_callback_gets_the_rewritten_records() {
    let recorder = Recorder::open(dwarf_recording()).expect("open");
    let mut strip = StripUserStacks::new(&recorder);
    let decoder = recorder.rewritten_decoder(&strip);
    assert_eq!(
        decoder.attr(0).map(|a| a.sample_type & USER_STACKS),
        Some(0)
    );
    let (mut samples, mut bytes) = (0u64, 0u64);
    let mut on_record = |b: &[u8]| -> std::io::Result<()> {
        let r = decoder.decode(b, 0).map_err(std::io::Error::other)?;
        if let Body::Sample(s) = &r.body {
            samples += 1;
            bytes += b.len() as u64;
            assert!(s.stack_user.is_none() && s.callchain.is_some());
        }
        Ok(())
    };
    let done = recorder
        .run_rewriting(
            Sink::Records(&mut on_record),
            &Stop::new().expect("stop"),
            &mut strip,
        )
        .expect("record");
    assert!(samples > 0 && samples == done.stats.samples);
    assert_eq!(strip.replaced, samples);
    assert!(bytes / samples < 256, "{} bytes a sample", bytes / samples);
}

/// Passes every sample on as 4 bytes of garbage.
struct Garbage;

impl Rewrite for Garbage {
    fn events(&self, _: &mut [EventEntry]) {}

    fn record(&mut self, record: &[u8], out: &mut Vec<u8>) -> Rewritten {
        if record.get(..4) != Some(&kind::SAMPLE.to_le_bytes()[..]) {
            return Rewritten::AsIs;
        }
        out.extend_from_slice(&[1, 2, 3, 4]);
        Rewritten::Replaced
    }
}

#[test]
fn a_rewrite_that_breaks_records_stops_the_recording_and_leaves_no_file() {
    let path = scratch("garbage").join("perf.data");
    let recorder = Recorder::open(dwarf_recording()).expect("open");
    let out = Output::create(&path, &Options::PERF_DATA).expect("output");
    let e = recorder
        .run_rewriting(
            Sink::PerfData(out),
            &Stop::new().expect("stop"),
            &mut Garbage,
        )
        .expect_err("garbage");
    assert!(matches!(*e, RunError::Rewrite(_)), "{e:?}");
    assert!(
        e.to_string().contains("the record rewrite wrote 4 bytes"),
        "{e}"
    );
    assert!(!path.exists(), "a half-written file");
    let leftovers = std::fs::read_dir(path.parent().expect("dir"))
        .expect("dir")
        .count();
    assert_eq!(leftovers, 0, "a temporary file was left");
}
