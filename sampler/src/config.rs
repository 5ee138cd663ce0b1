//! What `perf record` puts in each `perf_event_attr`, for hwprof's record options.
//!
//! [`configure`] takes parsed events and the options of a recording and sets
//! `sample_type`, period or frequency, callchain, branch-stack and tracking flags the way
//! perf 6.x does, so that `hwprof record --dry-run` and `perf record -vv` agree field by
//! field, and files written by hwprof look like perf's to every consumer.

use hwprof_pmu::EventList;
use hwprof_pmu::attr::{branch, read_format as rf, sample, types};
use hwprof_pmu::event::Class;

/// perf's default sampling frequency (`perf record` without -F/-c).
pub const DEFAULT_FREQ: u64 = 4000;
/// perf's default user stack size for `--call-graph dwarf`.
pub const DEFAULT_DWARF_STACK: u32 = 8192;
/// The x86_64 user registers perf samples for DWARF unwinding (`PERF_REGS_MASK`: all
/// general registers, without the segment registers the kernel does not sample).
pub const X86_64_REGS_MASK: u64 = 0xff0fff;

/// How callchains are recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallGraph {
    /// Frame pointers: the kernel walks the stack (`PERF_SAMPLE_CALLCHAIN`).
    Fp,
    /// The LBR call stack (Intel): `PERF_SAMPLE_BRANCH_CALL_STACK`.
    Lbr,
    /// A copy of the user stack and registers, for DWARF unwinding after the fact.
    Dwarf {
        /// Bytes of user stack per sample.
        stack_size: u32,
    },
}

impl CallGraph {
    /// Parses perf's `--call-graph` argument: `fp`, `lbr`, `dwarf[,SIZE]`.
    pub fn parse(s: &str) -> Result<CallGraph, String> {
        let (mode, size) = match s.split_once(',') {
            Some((m, z)) => (m, Some(z)),
            None => (s, None),
        };
        match (mode, size) {
            ("fp", None) => Ok(CallGraph::Fp),
            ("lbr", None) => Ok(CallGraph::Lbr),
            ("dwarf", None) => Ok(CallGraph::Dwarf {
                stack_size: DEFAULT_DWARF_STACK,
            }),
            ("dwarf", Some(z)) => {
                let n = parse_size(z)
                    .ok_or_else(|| format!("bad dwarf stack size '{z}' (e.g. 8192, 16K)"))?;
                // The kernel wants a multiple of 8, at most 65528 (u16 sample size).
                let n = n.div_ceil(8) * 8;
                if n == 0 || n > 65528 {
                    return Err(format!(
                        "dwarf stack size {z} out of range (8..65528 bytes)"
                    ));
                }
                Ok(CallGraph::Dwarf {
                    stack_size: n as u32,
                })
            }
            ("fp" | "lbr", Some(_)) => Err(format!("'{mode}' takes no size: '{s}'")),
            _ => Err(format!(
                "unknown call graph mode '{s}' (use fp, lbr, or dwarf[,SIZE])"
            )),
        }
    }
}

/// Parses a byte size: `8192`, `16K`, `4M`, `1G`.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mul) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1u64 << 10),
        (i, 'm' | 'M') => (&s[..i], 1 << 20),
        (i, 'g' | 'G') => (&s[..i], 1 << 30),
        (i, 'b' | 'B') => (&s[..i], 1),
        _ => (s, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mul)
}

/// Parses perf's `-j` filter list into `branch_sample_type` bits.
pub fn parse_branch_filter(s: &str) -> Result<u64, String> {
    let mut bits = 0;
    for f in s.split(',').map(str::trim) {
        bits |= match f {
            "u" => branch::USER,
            "k" => branch::KERNEL,
            "hv" => branch::HV,
            "any" => branch::ANY,
            "any_call" => branch::ANY_CALL,
            "any_ret" => branch::ANY_RETURN,
            "ind_call" => branch::IND_CALL,
            "ind_jmp" => branch::IND_JUMP,
            "call" => branch::CALL,
            "cond" => branch::COND,
            "abort_tx" => branch::ABORT_TX,
            "in_tx" => branch::IN_TX,
            "no_tx" => branch::NO_TX,
            "save_type" => branch::TYPE_SAVE,
            "stack" => branch::CALL_STACK,
            "priv" => branch::PRIV_SAVE,
            "counter" => branch::COUNTERS,
            "" => return Err(format!("empty branch filter in '{s}'")),
            other => {
                return Err(format!(
                    "unknown branch filter '{other}' (any, any_call, any_ret, ind_call, \
                     ind_jmp, call, cond, u, k, hv, in_tx, no_tx, abort_tx, save_type, stack, \
                     priv, counter)"
                ));
            }
        };
    }
    // Only privilege levels given: perf samples any branch at those levels.
    const PRIV: u64 = branch::USER | branch::KERNEL | branch::HV;
    if bits & !PRIV == 0 {
        bits |= branch::ANY;
    }
    Ok(bits)
}

/// Sampling by frequency or by period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampling {
    /// perf's default: 4000 Hz, or every event for tracepoints.
    Default,
    /// `-F HZ`: the kernel adjusts the period to reach HZ samples a second.
    Freq(u64),
    /// `-c N`: one sample every N events.
    Period(u64),
}

/// What the recording asks for, from the command line.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// Frequency or period.
    pub sampling: Sampling,
    /// Callchains.
    pub call_graph: Option<CallGraph>,
    /// `branch_sample_type` for `-b` / `-j`.
    pub branch_filter: Option<u64>,
    /// `-d`: data addresses and data source.
    pub data: bool,
    /// `--weight`: sample weights.
    pub weight: bool,
    /// The kernel has `PERF_SAMPLE_WEIGHT_STRUCT` (5.12+).
    pub weight_struct: bool,
    /// The kernel has `PERF_FORMAT_LOST` (6.0+).
    pub read_lost: bool,
    /// `-a` / `-C`.
    pub system_wide: bool,
    /// Recording a command started by hwprof: leaders are enabled on exec.
    pub command: bool,
    /// Follow children and threads.
    pub inherit: bool,
    /// The events are perf's default (`cycles:P`, or its `cpu-clock` fallback).
    pub default_event: bool,
    /// `--switch-events`: PERF_RECORD_SWITCH records (`context_switch`), on the first event.
    pub switch_events: bool,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            sampling: Sampling::Default,
            call_graph: None,
            branch_filter: None,
            data: false,
            weight: false,
            weight_struct: kernel_at_least(5, 12),
            read_lost: kernel_at_least(6, 0),
            system_wide: false,
            command: true,
            inherit: true,
            default_event: false,
            switch_events: false,
        }
    }
}

/// Whether the running kernel's release is at least `major.minor`.
pub fn kernel_at_least(major: u32, minor: u32) -> bool {
    let rel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut it = rel
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|x| x.parse::<u32>().unwrap_or(0));
    let (ma, mi) = (it.next().unwrap_or(0), it.next().unwrap_or(0));
    (ma, mi) >= (major, minor)
}

/// The kernel's limit on the sampling frequency (`perf_event_max_sample_rate`).
pub fn max_sample_rate() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `-F HZ` (or `max`: the kernel's limit, or 4000 Hz when it cannot be read): a
/// frequency above 0 and at most `perf_event_max_sample_rate`. The error says what to
/// give instead.
pub fn parse_freq(text: &str) -> Result<u64, String> {
    let max = max_sample_rate();
    let hz = if text == "max" {
        max.unwrap_or(DEFAULT_FREQ)
    } else {
        text.parse::<u64>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("bad -F value '{text}': give Hz or max"))?
    };
    if let Some(m) = max.filter(|&m| hz > m) {
        return Err(format!(
            "-F {hz} is above the kernel's limit of {m} Hz: use -F {m} or less, or raise /proc/sys/kernel/perf_event_max_sample_rate"
        ));
    }
    Ok(hz)
}

/// perf's default ring size: 512 KiB of data per ring.
const DEFAULT_RING_BYTES: usize = 512 << 10;

/// Data pages per ring from `--mmap-pages` (`None`: perf's 512 KiB): a power-of-two page
/// count, or a size (`512K`, `4M`) rounded up to one.
pub fn ring_pages(m: Option<&str>) -> Result<usize, String> {
    let page = hwprof_pmu::sys::page_size();
    let Some(m) = m else {
        return Ok((DEFAULT_RING_BYTES / page).max(1));
    };
    if let Ok(n) = m.parse::<usize>() {
        if n == 0 || !n.is_power_of_two() {
            return Err(format!(
                "--mmap-pages {m}: the page count must be a power of two (1, 2, 4, ... 128)"
            ));
        }
        return Ok(n);
    }
    let bytes =
        parse_size(m).ok_or_else(|| format!("bad --mmap-pages '{m}' (e.g. 128, 512K, 4M)"))?;
    Ok(((bytes as usize).div_ceil(page)).max(1).next_power_of_two())
}

/// Sets every event's attr for sampling, as `perf record` would with these options.
///
/// The first event also carries the tracking flags (mmap, comm, task, mmap2, comm_exec,
/// ksymbol, bpf_event) so the file has the records that attribute samples; group
/// members are enabled with their leader.
pub fn configure(list: &mut EventList, o: &RecordOptions) {
    let n = list.events.len();
    for (i, e) in list.events.iter_mut().enumerate() {
        let leader = e.leader == i;
        // Uprobes are trace events too (perf records them as `probe_x:f` tracepoints):
        // every hit by default, with their raw data.
        let tracepoint = matches!(e.class, Class::Tracepoint | Class::Uprobe);
        let a = &mut e.attr;
        let mut st = sample::IP | sample::TID | sample::TIME;
        match (o.sampling, tracepoint) {
            (Sampling::Freq(f), _) => {
                a.freq = true;
                a.sample_period = f;
                st |= sample::PERIOD;
            }
            (Sampling::Period(p), _) => {
                a.freq = false;
                a.sample_period = p;
            }
            (Sampling::Default, true) => {
                a.freq = false;
                a.sample_period = 1;
                st |= sample::PERIOD;
            }
            (Sampling::Default, false) => {
                a.freq = true;
                a.sample_period = DEFAULT_FREQ;
                st |= sample::PERIOD;
            }
        }
        if tracepoint {
            st |= sample::RAW | sample::CPU;
        }
        if n > 1 {
            st |= sample::ID;
        }
        if o.system_wide {
            st |= sample::CPU | sample::IDENTIFIER;
        }
        match o.call_graph {
            None => {}
            Some(CallGraph::Fp) => st |= sample::CALLCHAIN,
            Some(CallGraph::Lbr) => {
                st |= sample::CALLCHAIN | sample::BRANCH_STACK;
                a.branch_sample_type = branch::USER
                    | branch::CALL_STACK
                    | branch::NO_FLAGS
                    | branch::NO_CYCLES
                    | branch::HW_INDEX;
            }
            Some(CallGraph::Dwarf { stack_size }) => {
                // perf also samples data addresses with dwarf callchains (its
                // record_opts__parse_callchain sets sample_address for DWARF unwinding):
                // `perf evlist -v` of perf 6.1's `record --call-graph dwarf -e cpu-clock`
                // shows ADDR and DATA_SRC, and mmap_data on the tracking event.
                st |= sample::CALLCHAIN
                    | sample::REGS_USER
                    | sample::STACK_USER
                    | sample::ADDR
                    | sample::DATA_SRC;
                a.sample_regs_user = X86_64_REGS_MASK;
                a.sample_stack_user = stack_size;
                a.exclude_callchain_user = true;
                a.mmap_data = i == 0;
            }
        }
        if let Some(b) = o.branch_filter {
            st |= sample::BRANCH_STACK;
            a.branch_sample_type = b;
        }
        if o.data {
            st |= sample::ADDR | sample::DATA_SRC;
            a.mmap_data = i == 0;
        }
        if o.weight {
            st |= if o.weight_struct {
                sample::WEIGHT_STRUCT
            } else {
                sample::WEIGHT
            };
        }
        a.sample_type = st;
        a.read_format = rf::ID | if o.read_lost { rf::LOST } else { 0 };
        a.disabled = leader;
        a.enable_on_exec = leader && o.command;
        a.inherit = o.inherit;
        a.sample_id_all = true;
        // perf excludes guests unless the user chose with :G/:H (its default cycles:P
        // event counts them).
        if !e.explicit_mods && !o.default_event && a.type_ != types::BREAKPOINT {
            a.exclude_guest = true;
        }
        let track = i == 0;
        a.mmap = track;
        a.comm = track;
        a.task = track;
        a.mmap2 = track;
        a.comm_exec = track;
        a.ksymbol = track;
        a.bpf_event = track;
        a.context_switch = track && o.switch_events;
    }
    // As perf record (evlist__config): events whose sample types differ put their id
    // first (`IDENTIFIER`), or readers could not find it in their records; perf refuses
    // such a file otherwise ("non matching sample_type").
    let first = list.events.first().map(|e| e.attr.sample_type);
    if list
        .events
        .iter()
        .any(|e| Some(e.attr.sample_type) != first)
    {
        for e in &mut list.events {
            e.attr.sample_type |= sample::IDENTIFIER;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwprof_pmu::Encoder;

    fn configured(ev: &str, o: RecordOptions) -> EventList {
        let mut l = Encoder::host().parse(ev).expect("parse");
        configure(&mut l, &o);
        l
    }

    fn opts() -> RecordOptions {
        RecordOptions {
            weight_struct: true,
            read_lost: true,
            ..RecordOptions::default()
        }
    }

    #[test]
    fn like_perf_record_cpu_clock_fp() {
        let l = configured(
            "cpu-clock",
            RecordOptions {
                sampling: Sampling::Freq(999),
                call_graph: Some(CallGraph::Fp),
                ..opts()
            },
        );
        let a = &l.events[0].attr;
        assert_eq!(
            a.sample_type,
            sample::IP | sample::TID | sample::TIME | sample::CALLCHAIN | sample::PERIOD
        );
        assert_eq!(a.read_format, rf::ID | rf::LOST);
        assert!(a.freq && a.sample_period == 999);
        assert!(a.disabled && a.inherit && a.enable_on_exec && a.exclude_guest);
        assert!(a.mmap && a.comm && a.task && a.mmap2 && a.comm_exec && a.sample_id_all);
    }

    /// Events whose sample types differ (a tracepoint and cpu-clock: `record
    /// --off-cpu`) carry `IDENTIFIER`, as perf record sets it; alike ones do not.
    #[test]
    fn mixed_sample_types_carry_the_identifier() {
        let mixed = configured("sched:sched_switch,cpu-clock", opts());
        assert!(
            mixed
                .events
                .iter()
                .all(|e| e.attr.sample_type & sample::IDENTIFIER != 0)
        );
        let alike = configured("cpu-clock,task-clock", opts());
        assert!(
            alike
                .events
                .iter()
                .all(|e| e.attr.sample_type & sample::IDENTIFIER == 0)
        );
    }

    /// What `perf evlist -v` shows for perf 6.1's `perf record --call-graph dwarf -e
    /// cpu-clock -- CMD`: sample_type IP|TID|TIME|ADDR|CALLCHAIN|PERIOD|REGS_USER|
    /// STACK_USER|DATA_SRC, read_format ID|LOST, mmap_data, exclude_callchain_user,
    /// sample_regs_user 0xff0fff, sample_stack_user 8192 (and the tracking flags).
    #[test]
    fn like_perf_record_cpu_clock_dwarf() {
        let l = configured(
            "cpu-clock",
            RecordOptions {
                call_graph: Some(CallGraph::parse("dwarf").unwrap()),
                ..opts()
            },
        );
        let a = &l.events[0].attr;
        assert_eq!(
            a.sample_type,
            sample::IP
                | sample::TID
                | sample::TIME
                | sample::ADDR
                | sample::CALLCHAIN
                | sample::PERIOD
                | sample::REGS_USER
                | sample::STACK_USER
                | sample::DATA_SRC
        );
        assert_eq!(a.read_format, rf::ID | rf::LOST);
        assert!(a.freq && a.sample_period == 4000);
        assert!(a.mmap_data && a.exclude_callchain_user && !a.exclude_callchain_kernel);
        assert_eq!((a.sample_regs_user, a.sample_stack_user), (0xff0fff, 8192));
        assert!(a.disabled && a.inherit && a.enable_on_exec && a.exclude_guest);
        assert!(a.mmap && a.comm && a.task && a.mmap2 && a.comm_exec && a.sample_id_all);
        assert!(a.ksymbol && a.bpf_event);
    }

    #[test]
    fn two_events_get_ids_and_only_the_first_tracks() {
        let l = configured("cpu-clock,page-faults", opts());
        for e in &l.events {
            assert_eq!(
                e.attr.sample_type,
                sample::IP | sample::TID | sample::TIME | sample::ID | sample::PERIOD
            );
            assert!(e.attr.disabled && e.attr.enable_on_exec);
        }
        assert!(l.events[0].attr.mmap && !l.events[1].attr.mmap);
    }

    #[test]
    fn period_data_weight_branches_dwarf_lbr() {
        let l = configured(
            "cpu-clock",
            RecordOptions {
                sampling: Sampling::Period(1000),
                data: true,
                ..opts()
            },
        );
        let a = &l.events[0].attr;
        assert_eq!(
            a.sample_type,
            sample::IP | sample::TID | sample::TIME | sample::ADDR | sample::DATA_SRC
        );
        assert!(!a.freq && a.sample_period == 1000 && a.mmap_data);

        let w = configured(
            "cpu-clock",
            RecordOptions {
                weight: true,
                ..opts()
            },
        );
        assert_ne!(w.events[0].attr.sample_type & sample::WEIGHT_STRUCT, 0);

        let b = configured(
            "cpu-clock",
            RecordOptions {
                branch_filter: Some(parse_branch_filter("any_call,u").unwrap()),
                ..opts()
            },
        );
        assert_eq!(
            b.events[0].attr.branch_sample_type,
            branch::USER | branch::ANY_CALL
        );
        assert_eq!(parse_branch_filter("any").unwrap(), branch::ANY);
        assert_eq!(
            parse_branch_filter("u").unwrap(),
            branch::USER | branch::ANY
        );
        assert!(parse_branch_filter("anny").is_err());

        let d = configured(
            "cpu-clock",
            RecordOptions {
                call_graph: Some(CallGraph::parse("dwarf,8192").unwrap()),
                ..opts()
            },
        );
        let a = &d.events[0].attr;
        assert_eq!(a.sample_regs_user, 0xff0fff);
        assert_eq!(a.sample_stack_user, 8192);
        assert!(a.exclude_callchain_user);

        let lbr = configured(
            "cpu-clock",
            RecordOptions {
                call_graph: Some(CallGraph::Lbr),
                ..opts()
            },
        );
        assert_eq!(
            lbr.events[0].attr.branch_sample_type,
            branch::USER
                | branch::CALL_STACK
                | branch::NO_FLAGS
                | branch::NO_CYCLES
                | branch::HW_INDEX
        );
    }

    #[test]
    fn call_graph_and_sizes_parse() {
        assert_eq!(CallGraph::parse("fp"), Ok(CallGraph::Fp));
        assert_eq!(
            CallGraph::parse("dwarf,16K"),
            Ok(CallGraph::Dwarf { stack_size: 16384 })
        );
        assert!(CallGraph::parse("dwarf,70000").is_err());
        assert!(CallGraph::parse("lbr,3").is_err());
        assert!(CallGraph::parse("frame").is_err());
        assert_eq!(parse_size("4M"), Some(4 << 20));
        assert_eq!(parse_size("x"), None);
    }
}
