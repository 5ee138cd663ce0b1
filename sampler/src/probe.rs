//! Timing calls with uprobes: each probed function as a pair of events, one
//! `uprobe` on entry and one `uretprobe` on return ([`functions`]), each sampling every
//! hit ([`configure`]: period 1, IP, TID, TIME and ID, and the callchain for stacks).
//! Record them with [`crate::recorder`] and pair the hits per thread.

use hwprof_pmu::EventList;
use hwprof_pmu::attr::sample;

/// One probed function: its name and the indexes of its entry and return events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Func {
    /// `/path:func` as given.
    pub target: String,
    /// Index of the uprobe (entry) event in the event list.
    pub entry: usize,
    /// Index of the uretprobe (return) event.
    pub ret: usize,
}

/// A probe spec that is not `uprobe:/path:func` or `uretprobe:/path:func`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// Neither `uprobe:` nor `uretprobe:`.
    #[error("bad probe '{0}': not a uprobe")]
    NotUprobe(String),
    /// No `:func` after the path.
    #[error("bad probe '{0}': the function is missing")]
    NoFunction(String),
    /// No spec at all.
    #[error("no probe given")]
    Empty,
}

/// The functions of `specs` (comma-separated lists; entry or return specs of the same
/// function count once), and for each an entry and a return event spec, in order.
pub fn functions(specs: &[String]) -> Result<(Vec<String>, Vec<Func>), SpecError> {
    let mut targets: Vec<String> = Vec::new();
    for s in specs.iter().flat_map(|s| s.split(',')) {
        let s = s.trim();
        if s.is_empty() {
            continue;
        }
        let t = s
            .strip_prefix("uprobe:")
            .or_else(|| s.strip_prefix("uretprobe:"))
            .ok_or_else(|| SpecError::NotUprobe(s.to_string()))?;
        if !t.contains(':') {
            return Err(SpecError::NoFunction(s.to_string()));
        }
        if !targets.iter().any(|x| x == t) {
            targets.push(t.to_string());
        }
    }
    if targets.is_empty() {
        return Err(SpecError::Empty);
    }
    let mut events = Vec::new();
    let mut funcs = Vec::new();
    for t in targets {
        funcs.push(Func {
            target: t.clone(),
            entry: events.len(),
            ret: events.len() + 1,
        });
        events.push(format!("uprobe:{t}"));
        events.push(format!("uretprobe:{t}"));
    }
    Ok((events, funcs))
}

/// Sets the attrs of the probe events: every hit sampled (period 1) with IP, TID, TIME
/// and ID, plus the user callchain with `stacks` (and, on the first event, the
/// mapping and task records that name its addresses); disabled, and enabled on `exec`
/// for a `command`.
///
/// `dwarf_stack`: with `stacks`, record the user registers and this many bytes of user
/// stack instead of a frame-pointer callchain (`--call-graph dwarf`).
pub fn configure(list: &mut EventList, command: bool, stacks: bool, dwarf_stack: Option<u32>) {
    for (i, e) in list.events.iter_mut().enumerate() {
        let at = &mut e.attr;
        at.sample_type = sample::IP | sample::TID | sample::TIME | sample::ID;
        match (stacks, dwarf_stack) {
            (false, _) => {}
            (true, None) => {
                at.sample_type |= sample::CALLCHAIN;
                at.exclude_callchain_kernel = true;
            }
            (true, Some(size)) => {
                at.sample_type |= sample::REGS_USER | sample::STACK_USER;
                at.sample_regs_user = crate::config::X86_64_REGS_MASK;
                at.sample_stack_user = size;
            }
        }
        at.freq = false;
        at.sample_period = 1;
        at.disabled = true;
        at.enable_on_exec = command;
        at.sample_id_all = true;
        let track = i == 0 && stacks;
        at.mmap = track;
        at.mmap2 = track;
        at.comm = track;
        at.task = track;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uretprobes_are_added() {
        let (ev, f) = functions(&["uprobe:/bin/x:f,uretprobe:/bin/x:f".into()]).unwrap();
        assert_eq!(ev, ["uprobe:/bin/x:f", "uretprobe:/bin/x:f"]);
        assert_eq!((f[0].entry, f[0].ret), (0, 1));
        let e = functions(&["kprobe:x".into()]);
        assert_eq!(e, Err(SpecError::NotUprobe("kprobe:x".into())));
        let e = functions(&["uprobe:/bin/x".into()]);
        assert_eq!(e, Err(SpecError::NoFunction("uprobe:/bin/x".into())));
        assert_eq!(functions(&[" , ".into()]), Err(SpecError::Empty));
    }
}
