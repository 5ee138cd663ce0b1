//! `hwprof offcpu --report`: the functions and stacks that waited longest. Stacks are
//! printed whole, leaf first, as bcc's offcputime prints them: the kernel frames
//! (`_[k]`, where the thread blocked), a `--` line, then the user frames (what the
//! program was doing); `--no-kernel` leaves the kernel part out.

use hwprof_analysis::fold::Folded;
use hwprof_analysis::report::top::top;

const TOP_FUNCTIONS: usize = 20;
const TOP_STACKS: usize = 10;

fn ms(us: u64) -> String {
    format!("{:.3}", us as f64 / 1e3)
}

use hwprof_analysis::percent as pct;

/// The table: functions by inclusive off-CPU time (each stack counts a function once),
/// then the longest stacks, whole, leaf first.
pub fn table(f: &Folded, title: &str) -> String {
    let t = top(f, TOP_FUNCTIONS, TOP_STACKS);
    let total = t.total;
    let mut s = format!("# {title}\n#\n# Functions by off-CPU time (inclusive)\n");
    s.push_str(&format!("{:>12}  {:>6}  function\n", "ms", "%"));
    for (name, n) in &t.functions {
        s.push_str(&format!(
            "{:>12}  {:>5.1}%  {name}\n",
            ms(*n),
            pct(*n, total)
        ));
    }
    s.push_str("\n# Longest-waiting stacks (leaf first)\n");
    for (frames, n) in &t.stacks {
        let comm = frames.first().copied().unwrap_or("?");
        s.push_str(&format!(
            "{:>12} ms  {:>5.1}%  [{comm}]\n",
            ms(*n),
            pct(*n, total)
        ));
        let mut in_kernel = false;
        for fr in frames.iter().skip(1).rev() {
            let kernel = fr.ends_with("_[k]");
            if in_kernel && !kernel {
                s.push_str("                  --\n");
            }
            in_kernel = kernel;
            s.push_str(&format!("                  {fr}\n"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stack deeper than the old cut (8 frames): every user frame shows, after the
    /// kernel part and a `--` line.
    #[test]
    fn stacks_show_their_user_frames_after_the_kernel_ones() {
        let kernel: Vec<String> = (0..12).map(|i| format!("k{i}_[k]")).collect();
        let line = format!("app;main;outer;wait_a;{} 1500\n", kernel.join(";"));
        let f = Folded::from_text(&line);
        let t = table(&f, "Off-CPU time");
        let stack: Vec<&str> = t
            .lines()
            .skip_while(|l| !l.contains("[app]"))
            .skip(1)
            .map(str::trim)
            .collect();
        let mut want: Vec<String> = kernel.iter().rev().cloned().collect();
        want.extend(["--", "wait_a", "outer", "main"].map(String::from));
        assert_eq!(stack, want, "{t}");
    }
}
