//! The engine: loading an object with its globals and map sizes set, attaching its
//! programs, reading and writing its maps. Program modules (`offcpu`) are built on it;
//! see the crate docs for the shape of a program.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::time::Duration;

use aya::maps::{Map, MapData, MapError, PerCpuArray, RingBuf, StackTraceMap};
use aya::programs::uprobe::{UProbeAttachLocation, UProbeScope};
use aya::programs::{Program, ProgramError, RawTracePoint, TracePoint, UProbe};
use aya::{Btf, Ebpf, EbpfLoader, Pod};

use crate::error::{Error, Unavailable, io_error, one_line};

/// A compiled BPF object of `objects/`, embedded in the binary.
#[derive(Debug)]
pub struct Object {
    /// Its name (the source's, `offcpu` for `src/c/offcpu.bpf.c`).
    pub name: &'static str,
    /// The ELF object.
    pub bytes: &'static [u8],
    /// Its programs read kernel structs with CO-RE (field offsets relocated against the
    /// running kernel's BTF, `/sys/kernel/btf/vmlinux`, at load): it needs that BTF.
    pub core: bool,
}

/// The objects hwprof carries (`bpf/objects/*.bpf.o`, rebuilt by `bpf/build.sh`).
pub mod objects {
    use super::Object;
    use aya::include_bytes_aligned;

    /// `check.bpf.c`: what [`super::Engine::check`] test-loads.
    pub static CHECK: Object = Object {
        name: "check",
        bytes: include_bytes_aligned!("../objects/check.bpf.o"),
        core: true,
    };
    /// `offcpu.bpf.c`: off-CPU time summed in the kernel ([`crate::offcpu`]).
    pub static OFFCPU: Object = Object {
        name: "offcpu",
        bytes: include_bytes_aligned!("../objects/offcpu.bpf.o"),
        core: true,
    };
    /// `alloc.bpf.c`: allocations paired per thread, summed per stack, and the blocks
    /// still allocated ([`crate::alloc`]).
    pub static ALLOC: Object = Object {
        name: "alloc",
        bytes: include_bytes_aligned!("../objects/alloc.bpf.o"),
        core: false,
    };
    /// `io.bpf.c`: system calls paired per thread, summed per syscall and stack
    /// ([`crate::io`]).
    pub static IO: Object = Object {
        name: "io",
        bytes: include_bytes_aligned!("../objects/io.bpf.o"),
        core: true,
    };
    /// `latency.bpf.c`: one function's call latency (uprobe + uretprobe): counts,
    /// histograms, slow calls through a ring buffer ([`crate::latency`]).
    pub static LATENCY: Object = Object {
        name: "latency",
        bytes: include_bytes_aligned!("../objects/latency.bpf.o"),
        core: false,
    };
}

/// Where in a binary a uprobe goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UprobeAt<'a> {
    /// A symbol of the binary's symbol table (`.symtab` or `.dynsym`).
    Symbol(&'a str),
    /// A file offset (what the kernel takes: `pmu::probe` computes it from `func+off`).
    Offset(u64),
}

/// Loading an object: its globals and map sizes, then [`Loader::load`].
#[derive(Debug)]
pub struct Loader {
    object: &'static Object,
    globals: Vec<(&'static str, Vec<u8>)>,
    max_entries: Vec<(&'static str, u32)>,
}

/// A value of a `volatile const` global of a program (set before loading).
pub trait Global {
    /// Its bytes, in the machine's order.
    fn bytes(&self) -> Vec<u8>;
}

macro_rules! global_int {
    ($($t:ty),*) => {$(
        impl Global for $t {
            fn bytes(&self) -> Vec<u8> {
                self.to_ne_bytes().to_vec()
            }
        }
    )*};
}
global_int!(u8, u16, u32, u64, i32, i64);

impl Global for bool {
    fn bytes(&self) -> Vec<u8> {
        vec![u8::from(*self)]
    }
}

impl Loader {
    /// A loader of `object`.
    pub fn new(object: &'static Object) -> Loader {
        Loader {
            object,
            globals: Vec::new(),
            max_entries: Vec::new(),
        }
    }

    /// Sets the `volatile const` global `name` (it must exist and have the value's size).
    pub fn global(mut self, name: &'static str, value: impl Global) -> Loader {
        self.globals.push((name, value.bytes()));
        self
    }

    /// Sets the `max_entries` of map `map` (every map has one; this replaces the C
    /// file's).
    pub fn max_entries(mut self, map: &'static str, entries: u32) -> Loader {
        self.max_entries.push((map, entries));
        self
    }

    /// Creates the maps and loads every program of the object (nothing is attached
    /// yet). An error the kernel gives for want of privileges or features is
    /// [`Error::Unavailable`].
    pub fn load(self) -> Result<Engine, Error> {
        let name = self.object.name;
        // Without the kernel's BTF aya would load a CO-RE program unrelocated (with the
        // offsets it was compiled with): refuse instead.
        let btf = match self.object.core {
            true => Some(Btf::from_sys_fs().map_err(|e| Unavailable::NoBtf(one_line(&e)))?),
            false => None,
        };
        let mut l = EbpfLoader::new();
        l.btf(btf.as_ref());
        for (g, bytes) in &self.globals {
            l.override_global(g, &bytes[..], true);
        }
        for &(m, n) in &self.max_entries {
            l.map_max_entries(m, n);
        }
        let mut ebpf = l
            .load(self.object.bytes)
            .map_err(|e| load_error(name, &e))?;
        for (_, p) in ebpf.programs_mut() {
            let r = match p {
                Program::TracePoint(p) => p.load(),
                Program::RawTracePoint(p) => p.load(),
                Program::UProbe(p) => p.load(),
                _ => Ok(()),
            };
            r.map_err(|e| load_error(name, &e))?;
        }
        Ok(Engine { ebpf, object: name })
    }
}

/// `object` has no `what` (map, program...) named `name`.
fn missing(object: &'static str, what: &'static str, name: &str) -> Error {
    Error::Missing {
        object,
        what,
        name: name.to_string(),
    }
}

/// A load error, as [`Error::Unavailable`] when it says BPF cannot be used here.
fn load_error(object: &'static str, e: &(dyn std::error::Error + 'static)) -> Error {
    let errno = io_error(e).and_then(|io| io.raw_os_error());
    let detail = one_line(e);
    match unavailable(errno, &detail) {
        Some(u) => Error::Unavailable(u),
        None => Error::Load {
            object,
            detail,
            errno,
        },
    }
}

/// What an errno of a load says of this machine, if it says BPF cannot be used.
fn unavailable(errno: Option<i32>, detail: &str) -> Option<Unavailable> {
    const EPERM: i32 = 1;
    const EINVAL: i32 = 22;
    const ENOSYS: i32 = 38;
    const E2BIG: i32 = 7;
    const EOPNOTSUPP: i32 = 95;
    let lockdown = std::fs::read_to_string("/sys/kernel/security/lockdown").ok();
    let locked = lockdown
        .as_deref()
        .and_then(|l| l.split_whitespace().find(|w| w.starts_with('[')))
        .map(|w| w.trim_matches(['[', ']']).to_string())
        .filter(|m| m != "none");
    match errno? {
        // (EACCES from BPF_PROG_LOAD is the verifier refusing a program.)
        EPERM => Some(match locked {
            Some(mode) => Unavailable::LockedDown(format!("lockdown={mode}")),
            None => Unavailable::Permission(detail.to_string()),
        }),
        // A stack map deeper than the sysctl allows is refused with EINVAL.
        EINVAL if max_stack().is_some_and(|n| n < HWPROF_STACK_DEPTH) => {
            Some(Unavailable::Other(format!(
                "kernel.perf_event_max_stack is {}, hwprof's BPF stack maps need {HWPROF_STACK_DEPTH} \
                 (sysctl kernel.perf_event_max_stack={HWPROF_STACK_DEPTH})",
                max_stack().unwrap_or(0)
            )))
        }
        ENOSYS | EINVAL | E2BIG | EOPNOTSUPP => Some(Unavailable::KernelTooOld {
            release: kernel_release(),
            detail: detail.to_string(),
        }),
        _ => None,
    }
}

/// `HWPROF_STACK_DEPTH` of `hwprof.h`: the frames of a stack map's entry.
const HWPROF_STACK_DEPTH: u32 = 127;

/// `kernel.perf_event_max_stack`.
fn max_stack() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_stack")
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".to_string())
}

/// A loaded object: its programs (attached with `attach_*`) and maps. Everything is held
/// by file descriptors: dropping the engine, or the process ending in any way (SIGKILL
/// too), removes the programs and their attachments from the kernel.
#[derive(Debug)]
pub struct Engine {
    ebpf: Ebpf,
    object: &'static str,
}

impl Engine {
    /// Whether BPF can be used here: test-loads a small program (never attached) with
    /// the kinds of maps hwprof's programs use. `Err` says why not, in one line.
    pub fn check() -> Result<(), Unavailable> {
        match Loader::new(&objects::CHECK).load() {
            Ok(_) => Ok(()),
            Err(Error::Unavailable(u)) => Err(u),
            Err(e) => Err(Unavailable::Other(e.to_string())),
        }
    }

    /// The object's name.
    pub fn object(&self) -> &'static str {
        self.object
    }

    fn missing(&self, what: &'static str, name: &str) -> Error {
        missing(self.object, what, name)
    }

    fn map(&self, name: &str) -> Result<&Map, Error> {
        self.ebpf.map(name).ok_or_else(|| self.missing("map", name))
    }

    fn map_mut(&mut self, name: &str) -> Result<&mut Map, Error> {
        let object = self.object;
        (self.ebpf.map_mut(name)).ok_or_else(|| missing(object, "map", name))
    }

    /// Attaches tracepoint program `program` to `category:name`
    /// (`sched`, `sched_switch`).
    pub fn attach_tracepoint(
        &mut self,
        program: &str,
        category: &str,
        name: &str,
    ) -> Result<(), Error> {
        let target = format!("{category}:{name}");
        let p: &mut TracePoint = self.program(program)?;
        p.attach(category, name)
            .map(drop)
            .map_err(|e| attach_error(program, &target, &e))
    }

    /// Attaches raw tracepoint program `program` (a `SEC("raw_tracepoint/...")`) to
    /// tracepoint `name` (`sched_switch`): the kernel calls it straight from the
    /// tracepoint, with the tracepoint's own arguments, and no perf event between.
    pub fn attach_raw_tracepoint(&mut self, program: &str, name: &str) -> Result<(), Error> {
        let p: &mut RawTracePoint = self.program(program)?;
        p.attach(name)
            .map(drop)
            .map_err(|e| attach_error(program, name, &e))
    }

    /// Attaches uprobe program `program` (a `SEC("uprobe")` or `SEC("uretprobe")`) to
    /// `at` in `binary`, for process `pid` (all its threads) or every process.
    pub fn attach_uprobe(
        &mut self,
        program: &str,
        binary: &Path,
        at: UprobeAt<'_>,
        pid: Option<u32>,
    ) -> Result<(), Error> {
        let target = match at {
            UprobeAt::Symbol(s) => format!("{}:{s}", binary.display()),
            UprobeAt::Offset(o) => format!("{}:{o:#x}", binary.display()),
        };
        let scope = match pid.map(NonZeroU32::new) {
            None => UProbeScope::AllProcesses,
            Some(Some(p)) => UProbeScope::OneProcess(p),
            Some(None) => {
                return Err(Error::Attach {
                    program: program.to_string(),
                    target,
                    detail: "pid 0 is no process".to_string(),
                });
            }
        };
        let loc = match at {
            UprobeAt::Symbol(s) => UProbeAttachLocation::Symbol(s),
            UprobeAt::Offset(o) => UProbeAttachLocation::AbsoluteOffset(o),
        };
        let p: &mut UProbe = self.program(program)?;
        p.attach(loc, binary, scope)
            .map(drop)
            .map_err(|e| attach_error(program, &target, &e))
    }

    /// Attaches uprobe program `program` (a `SEC("uprobe")` or `SEC("uretprobe")`) to
    /// an open perf event of a uprobe defined in tracefs (`PERF_EVENT_IOC_SET_BPF`): the
    /// program joins that trace event's programs and runs once on every hit of the
    /// uprobe in the processes that definition's perf events follow (whatever their
    /// number, enabled or not), and those events write a sample only when it returns
    /// non-zero. It stays attached until `event` is freed. Attach it to one fd per trace
    /// event, and to one that no task inherits: every inherited copy of an event gets
    /// its program, and the first copy freed (its task exits) takes the program off the
    /// trace event for all.
    pub fn attach_perf_event(&mut self, program: &str, event: BorrowedFd<'_>) -> Result<(), Error> {
        let p: &mut UProbe = self.program(program)?;
        let attach = |detail: String| Error::Attach {
            program: program.to_string(),
            target: "a uprobe's perf event".to_string(),
            detail,
        };
        let fd = p.fd().map_err(|e| attach(one_line(&e)))?;
        hwprof_pmu::sys::set_bpf(event, fd.as_fd()).map_err(|e| attach(e.to_string()))
    }

    fn program<'a, P>(&'a mut self, name: &str) -> Result<&'a mut P, Error>
    where
        &'a mut P: TryFrom<&'a mut Program, Error = ProgramError>,
    {
        let object = self.object;
        let missing = || missing(object, "program", name);
        let p = self.ebpf.program_mut(name).ok_or_else(missing)?;
        p.try_into().map_err(|_| missing())
    }

    /// The kernel's ids of the object's loaded programs (what `bpftool prog show id N`
    /// takes): for checking that nothing is left behind.
    pub fn program_ids(&self) -> Vec<u32> {
        self.ebpf
            .programs()
            .filter_map(|(_, p)| p.info().ok())
            .map(|i| i.id())
            .collect()
    }

    /// Detaches and unloads every program: nothing runs any more, and the maps keep
    /// what the programs left for reading.
    pub fn detach(&mut self) -> Result<(), Error> {
        for (name, p) in self.ebpf.programs_mut() {
            let r = match p {
                Program::TracePoint(p) => p.unload(),
                Program::RawTracePoint(p) => p.unload(),
                Program::UProbe(p) => p.unload(),
                _ => Ok(()),
            };
            match r {
                // Never loaded (a program of the object not used).
                Ok(()) | Err(ProgramError::NotLoaded) => {}
                Err(e) => {
                    return Err(Error::Attach {
                        program: name.to_string(),
                        target: "(detach)".to_string(),
                        detail: one_line(&e),
                    });
                }
            }
        }
        Ok(())
    }

    /// Every entry of hash map `map`. An entry removed while this reads is left out.
    pub fn hash_entries<K: Pod, V: Pod>(&self, map: &str) -> Result<Vec<(K, V)>, Error> {
        let m = aya::maps::HashMap::<_, K, V>::try_from(self.map(map)?)
            .map_err(|e| map_error(map, &e))?;
        let mut out = Vec::new();
        for kv in m.iter() {
            match kv {
                Ok(kv) => out.push(kv),
                Err(MapError::KeyNotFound) => {}
                Err(e) => return Err(map_error(map, &e)),
            }
        }
        Ok(out)
    }

    /// Inserts or replaces `key` in hash map `map` (an error when it is full).
    pub fn hash_insert<K: Pod, V: Pod>(
        &mut self,
        map: &str,
        key: K,
        value: V,
    ) -> Result<(), Error> {
        let mut m = aya::maps::HashMap::<_, K, V>::try_from(self.map_mut(map)?)
            .map_err(|e| map_error(map, &e))?;
        m.insert(key, value, 0).map_err(|e| map_error(map, &e))
    }

    /// Sets entry `index` of array map `map`.
    pub fn array_set<V: Pod>(&mut self, map: &str, index: u32, value: V) -> Result<(), Error> {
        let mut m = aya::maps::Array::<_, V>::try_from(self.map_mut(map)?)
            .map_err(|e| map_error(map, &e))?;
        m.set(index, value, 0).map_err(|e| map_error(map, &e))
    }

    /// Takes array map `map` out of the engine, to be written from elsewhere (a
    /// switch the programs read); the engine no longer has it.
    pub(crate) fn take_array<V: Pod>(
        &mut self,
        map: &str,
    ) -> Result<aya::maps::Array<MapData, V>, Error> {
        let m = self
            .ebpf
            .take_map(map)
            .ok_or_else(|| self.missing("map", map))?;
        aya::maps::Array::try_from(m).map_err(|e| map_error(map, &e))
    }

    /// Every entry of array map `map`, in index order.
    pub fn array<V: Pod>(&self, map: &str) -> Result<Vec<V>, Error> {
        let m =
            aya::maps::Array::<_, V>::try_from(self.map(map)?).map_err(|e| map_error(map, &e))?;
        m.iter()
            .collect::<Result<Vec<V>, _>>()
            .map_err(|e| map_error(map, &e))
    }

    /// The `u64` counters of array or per-CPU array `map`, in index order (a per-CPU
    /// one summed over the CPUs).
    pub fn counters(&self, map: &str) -> Result<Vec<u64>, Error> {
        match self.map(map)? {
            Map::PerCpuArray(_) => {
                let m = PerCpuArray::<_, u64>::try_from(self.map(map)?)
                    .map_err(|e| map_error(map, &e))?;
                m.iter()
                    .map(|v| v.map(|per_cpu| per_cpu.iter().sum::<u64>()))
                    .collect::<Result<Vec<u64>, _>>()
                    .map_err(|e| map_error(map, &e))
            }
            _ => self.array::<u64>(map),
        }
    }

    /// The log2 histogram in array (or per-CPU array) `map` of `u64` counts: slot `i`
    /// counts the values `v` with `floor(log2(v)) == i` (0 and 1 in slot 0), as
    /// `hwprof_log2` of `hwprof.h` files them.
    pub fn log2_hist(&self, map: &str) -> Result<Log2Hist, Error> {
        Ok(Log2Hist {
            slots: self.counters(map)?,
        })
    }

    /// What did not fit, by slot: the object's `dropped` array (every program has one,
    /// `hwprof.h`; each program names its slots).
    pub fn dropped(&self) -> Result<Vec<u64>, Error> {
        self.counters("dropped")
    }

    /// Stack-trace map `map`, for reading stacks by id.
    pub fn stacks(&self, map: &str) -> Result<StackReader<'_>, Error> {
        let m = self.map(map)?;
        if !matches!(m, Map::StackTraceMap(_)) {
            return Err(self.missing("stack-trace map", map));
        }
        let map_ = StackTraceMap::try_from(m).map_err(|e| map_error(map, &e))?;
        Ok(StackReader {
            map: map_,
            cache: HashMap::new(),
            errors: StackErrors::default(),
        })
    }

    /// Takes BPF ring buffer `map` out of the engine, for draining (it stays valid
    /// while the engine lives, and after: the kernel frees it when both are gone).
    pub fn ring(&mut self, map: &str) -> Result<Ring, Error> {
        let m = self
            .ebpf
            .take_map(map)
            .ok_or_else(|| self.missing("ring buffer", map))?;
        let ring = RingBuf::try_from(m).map_err(|e| map_error(map, &e))?;
        Ok(Ring { ring })
    }
}

fn attach_error(program: &str, target: &str, e: &(dyn std::error::Error + 'static)) -> Error {
    let errno = io_error(e).and_then(|io| io.raw_os_error());
    let detail = one_line(e);
    // EPERM and EACCES (perf_event_paranoid) from perf_event_open: no privileges.
    match unavailable(
        errno
            .map(|n| if n == 13 { 1 } else { n })
            .filter(|&n| n == 1),
        &detail,
    ) {
        Some(u) => Error::Unavailable(u),
        None => Error::Attach {
            program: program.to_string(),
            target: target.to_string(),
            detail,
        },
    }
}

pub(crate) fn map_error(map: &str, e: &(dyn std::error::Error + 'static)) -> Error {
    Error::Map {
        map: map.to_string(),
        detail: one_line(e),
    }
}

/// A log2 histogram read from a map (see [`Engine::log2_hist`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Log2Hist {
    /// Counts by slot.
    pub slots: Vec<u64>,
}

impl Log2Hist {
    /// The values slot `i` counts: `[lo, hi)` (`[0, 2)` for slot 0).
    pub fn range(i: usize) -> (u64, u64) {
        let lo = if i == 0 { 0 } else { 1u64 << i.min(63) };
        let hi = 1u64.checked_shl((i + 1) as u32).unwrap_or(u64::MAX);
        (lo, hi)
    }

    /// The sum of the counts.
    pub fn total(&self) -> u64 {
        self.slots.iter().sum()
    }

    /// `(lo, hi, count)` of the slots that counted something.
    pub fn nonzero(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, &c)| {
                let (lo, hi) = Log2Hist::range(i);
                (lo, hi, c)
            })
    }
}

/// What reading stacks found besides stacks, weighted by what each id stood for (the
/// caller's `weight`: blocks, events).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StackErrors {
    /// Stacks that did not fit: the stack map was full or another stack had their
    /// bucket (-EEXIST: a bigger map makes it rarer).
    pub collisions: u64,
    /// Stacks the kernel could not read (-EFAULT: a kernel thread's user stack, user
    /// memory paged out).
    pub faults: u64,
    /// Any other error, or an id the map no longer held.
    pub other: u64,
}

/// Stacks of a stack-trace map by id, each read once (see [`Engine::stacks`]).
pub struct StackReader<'a> {
    map: StackTraceMap<&'a MapData>,
    cache: HashMap<i32, Vec<u64>>,
    errors: StackErrors,
}

impl std::fmt::Debug for StackReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StackReader")
            .field("cached", &self.cache.len())
            .field("errors", &self.errors)
            .finish()
    }
}

/// `bpf_get_stackid`'s id for "not asked for" (`HWPROF_NO_STACK` of `hwprof.h`).
pub const NO_STACK: i32 = -1;

impl StackReader<'_> {
    /// The instruction pointers of stack `id`, leaf first. A negative id is the
    /// kernel's error when the stack was taken: no frames, counted (`weight` times) in
    /// [`StackReader::errors`]; [`NO_STACK`] (not asked for) is no error.
    pub fn get(&mut self, id: i32, weight: u64) -> Vec<u64> {
        const EFAULT: i32 = 14;
        const EEXIST: i32 = 17;
        if id == NO_STACK {
            return Vec::new();
        }
        if id < 0 {
            let slot = match -id {
                EEXIST => &mut self.errors.collisions,
                EFAULT => &mut self.errors.faults,
                _ => &mut self.errors.other,
            };
            *slot += weight;
            return Vec::new();
        }
        if let Some(s) = self.cache.get(&id) {
            return s.clone();
        }
        match self.map.get(&(id as u32), 0) {
            Ok(st) => {
                let ips: Vec<u64> = st.frames().iter().map(|f| f.ip).collect();
                self.cache.insert(id, ips.clone());
                ips
            }
            Err(_) => {
                self.errors.other += weight;
                Vec::new()
            }
        }
    }

    /// What the ids read so far said besides stacks.
    pub fn errors(&self) -> StackErrors {
        self.errors
    }
}

/// A BPF ring buffer (see [`Engine::ring`]): drained into a callback, by polling or
/// when its fd (epoll-able, [`AsFd`]) is readable.
pub struct Ring {
    ring: RingBuf<MapData>,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring").finish_non_exhaustive()
    }
}

impl Ring {
    /// Hands every record in the ring to `f`, oldest first, and returns how many.
    pub fn drain(&mut self, mut f: impl FnMut(&[u8])) -> usize {
        let mut n = 0;
        while let Some(item) = self.ring.next() {
            f(&item);
            n += 1;
        }
        n
    }

    /// Waits until the ring has records or `timeout` passes; true when it has.
    pub fn wait(&self, timeout: Duration) -> Result<bool, Error> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let mut fds = [PollFd::new(&self.ring, PollFlags::IN)];
        let t = Timespec {
            tv_sec: timeout.as_secs() as i64,
            tv_nsec: i64::from(timeout.subsec_nanos()),
        };
        match poll(&mut fds, Some(&t)) {
            Ok(n) => Ok(n > 0),
            Err(rustix::io::Errno::INTR) => Ok(false),
            Err(e) => Err(Error::Io {
                what: "waiting on a BPF ring buffer".to_string(),
                source: e.into(),
            }),
        }
    }
}

impl AsFd for Ring {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.ring.as_fd()
    }
}

/// The ids of the BPF programs the kernel has loaded now (those `bpftool prog show`
/// lists), for checking that nothing is left behind.
pub fn loaded_program_ids() -> Vec<u32> {
    aya::programs::loaded_programs()
        .filter_map(Result::ok)
        .map(|p| p.id())
        .collect()
}

/// `CLOCK_MONOTONIC` now, in ns: the clock of `bpf_ktime_get_ns`, which the programs'
/// times are in.
pub fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}
