//! Prints a perf.data's symbolized samples (debugging aid):
//! `cargo run -p hwprof-symbolize --example dump -- FILE [N]`.

use hwprof_sampler::perfdata::reader::PerfData;
use hwprof_symbolize::{Options, Profile};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: dump FILE [N]")?;
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let pd = PerfData::open(path.as_ref())?;
    let p = Profile::build(&pd, &Options::default())?;
    println!(
        "{} samples, {} frames, {} lost, events {:?}",
        p.samples.len(),
        p.frames.len(),
        p.lost,
        p.events.iter().map(|e| &e.name).collect::<Vec<_>>()
    );
    for s in p.samples.iter().take(n) {
        println!("{} {}/{} period {}", p.comm(s), s.pid, s.tid, s.period);
        for &f in &s.stack {
            let f = p.frame(f);
            println!(
                "    {}{} ({}+{:#x}) {}:{}",
                f.name(),
                if f.inlined { " [inlined]" } else { "" },
                f.module_name(),
                f.module_offset,
                f.file.as_deref().unwrap_or("?"),
                f.line.unwrap_or(0)
            );
        }
    }
    Ok(())
}
