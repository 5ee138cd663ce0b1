//! Records a command into a perf.data file with the library alone, as `hwprof record -g
//! -e cpu-clock -o OUT -- CMD` does (`perf report -i OUT` reads it):
//!
//! ```text
//! cargo run -p hwprof-sampler --example record -- OUT.data CMD [ARGS...]
//! ```

use std::error::Error;
use std::path::Path;

use hwprof_pmu::{Encoder, stop::Stop, target::Target};
use hwprof_sampler::config::CallGraph;
use hwprof_sampler::outfile::{Options, Output};
use hwprof_sampler::recorder::{RecordPlan, Recorder, Sink};

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let out = args.next().ok_or("usage: record OUT.data CMD [ARGS...]")?;
    let argv: Vec<String> = args.collect();

    let mut rec = RecordPlan::new(Encoder::host().parse("cpu-clock")?, Target::Command(argv));
    rec.options.call_graph = Some(CallGraph::Fp);
    let recorder = Recorder::open(rec)?;
    for n in recorder.notices() {
        eprintln!("note: {n}");
    }
    let out = Output::create(Path::new(&out), &Options::PERF_DATA)?;
    let done = recorder.run(Sink::PerfData(out), &Stop::new()?)?;

    eprintln!(
        "{} samples, {} bytes; the command exited with {}",
        done.stats.samples,
        done.data_bytes,
        done.exit_code()
    );
    std::process::exit(done.exit_code().into());
}
