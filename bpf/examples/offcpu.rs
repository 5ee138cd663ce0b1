//! Off-CPU time of a command, summed in the kernel: `cargo run --release -p hwprof-bpf
//! --example offcpu -- COMMAND [ARGS...]` prints the blocked time, what did not fit,
//! and the top rows (thread, kind, time, blocks, leaf instruction pointers). The command
//! waits on a shell `read` until it is a target and the window is open, then `exec`s.

use std::io::Write;
use std::process::{Command, Stdio};

use hwprof_bpf::{OffCpu, OffCpuOptions, now_ns};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprintln!("usage: offcpu COMMAND [ARGS...]");
        std::process::exit(2);
    }
    if let Err(why) = hwprof_bpf::Engine::check() {
        eprintln!("BPF unavailable: {why}");
        std::process::exit(1);
    }
    let stacks = std::env::var("HWPROF_STACKS").unwrap_or_else(|_| "both".to_string());
    let mut child = Command::new("sh")
        .args(["-c", "read _ && exec \"$@\"", "sh"])
        .args(&args)
        .stdin(Stdio::piped())
        .spawn()?;
    let mut off = OffCpu::start(&OffCpuOptions {
        tgids: vec![child.id()],
        // HWPROF_STACKS=none|user|kernel|both (both by default), to see what stacks cost.
        user_stacks: matches!(stacks.as_str(), "user" | "both"),
        kernel_stacks: matches!(stacks.as_str(), "kernel" | "both"),
        ..OffCpuOptions::default()
    })?;
    let start = now_ns();
    off.open_window(start)?;
    child.stdin.take().ok_or("stdin")?.write_all(b"go\n")?;
    let status = child.wait()?;
    let end = now_ns();
    let d = off.finish(end)?;
    let total: u64 = d.blocks.iter().map(|b| b.ns).sum();
    let count: u64 = d.blocks.iter().map(|b| b.count).sum();
    println!(
        "{status}; window {:.3} ms; blocked {:.3} ms in {count} blocks, {} rows; dropped {:?}",
        (end - start) as f64 / 1e6,
        total as f64 / 1e6,
        d.blocks.len(),
        d.dropped
    );
    let mut rows = d.blocks;
    rows.sort_by_key(|b| std::cmp::Reverse(b.ns));
    for b in rows.iter().take(5) {
        let comm = d.comms.get(&b.tid).map_or("?", String::as_str);
        println!(
            "  {comm} {}/{} {:?} {:.3} ms x{} user {:x?} kernel {:x?}",
            b.tgid,
            b.tid,
            b.kind,
            b.ns as f64 / 1e6,
            b.count,
            &b.user[..b.user.len().min(3)],
            &b.kernel[..b.kernel.len().min(2)]
        );
    }
    Ok(())
}
