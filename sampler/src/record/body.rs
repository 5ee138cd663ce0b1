//! Bodies of every record type other than `PERF_RECORD_SAMPLE`: the kernel's records
//! (`PERF_RECORD_MMAP` .. `PERF_RECORD_AUX_OUTPUT_HW_ID`) and perf.data's user records
//! (`PERF_RECORD_HEADER_ATTR` .. `PERF_RECORD_COMPRESSED2`).

use hwprof_pmu::attr::Attr;

use super::cursor::{Cursor, U64s, cstr};
use super::sample::{ReadValues, Sample, decode_read};
use super::{kind, misc};
use crate::error::Result;

/// The decoded body of one record; strings and payloads borrow from the input.
///
/// A sample is held in place, not boxed: records are decoded one at a time and
/// borrowed, never stored in bulk, so the size costs nothing, where a box cost an
/// allocation per sample (3% of reading a big recording).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)]
pub enum Body<'a> {
    /// `PERF_RECORD_SAMPLE`.
    Sample(Sample<'a>),
    /// `PERF_RECORD_MMAP`.
    Mmap(Mmap<'a>),
    /// `PERF_RECORD_MMAP2`.
    Mmap2(Mmap2<'a>),
    /// `PERF_RECORD_LOST`.
    Lost {
        /// Id of the event that lost records.
        id: u64,
        /// Records lost.
        lost: u64,
    },
    /// `PERF_RECORD_COMM`.
    Comm {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// The new command name.
        comm: &'a [u8],
        /// `PERF_RECORD_MISC_COMM_EXEC`: the name changed by exec.
        exec: bool,
    },
    /// `PERF_RECORD_EXIT`.
    Exit(Task),
    /// `PERF_RECORD_FORK`.
    Fork(Task),
    /// `PERF_RECORD_THROTTLE`.
    Throttle(Throttle),
    /// `PERF_RECORD_UNTHROTTLE`.
    Unthrottle(Throttle),
    /// `PERF_RECORD_READ`.
    Read {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// Values per the attr's `read_format`.
        values: ReadValues,
    },
    /// `PERF_RECORD_AUX`.
    Aux {
        /// Offset in the AUX area.
        aux_offset: u64,
        /// Size of the new data.
        aux_size: u64,
        /// `PERF_AUX_FLAG_*`.
        flags: u64,
    },
    /// `PERF_RECORD_ITRACE_START`.
    ItraceStart {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
    },
    /// `PERF_RECORD_LOST_SAMPLES`.
    LostSamples {
        /// Samples lost.
        lost: u64,
    },
    /// `PERF_RECORD_SWITCH` (direction and preemption are in `misc`).
    Switch {
        /// `PERF_RECORD_MISC_SWITCH_OUT`.
        out: bool,
        /// `PERF_RECORD_MISC_SWITCH_OUT_PREEMPT`.
        preempt: bool,
    },
    /// `PERF_RECORD_SWITCH_CPU_WIDE`.
    SwitchCpuWide {
        /// `PERF_RECORD_MISC_SWITCH_OUT`.
        out: bool,
        /// `PERF_RECORD_MISC_SWITCH_OUT_PREEMPT`.
        preempt: bool,
        /// The other task's pid.
        next_prev_pid: u32,
        /// The other task's tid.
        next_prev_tid: u32,
    },
    /// `PERF_RECORD_NAMESPACES`.
    Namespaces {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// (dev, inode) pairs, one per namespace type.
        link_info: U64s<'a>,
    },
    /// `PERF_RECORD_KSYMBOL`.
    Ksymbol {
        /// Address.
        addr: u64,
        /// Length.
        len: u32,
        /// `PERF_RECORD_KSYMBOL_TYPE_*`.
        ksym_type: u16,
        /// `PERF_RECORD_KSYMBOL_FLAGS_*`.
        flags: u16,
        /// Symbol name.
        name: &'a [u8],
    },
    /// `PERF_RECORD_BPF_EVENT`.
    BpfEvent {
        /// `PERF_BPF_EVENT_*`.
        type_: u16,
        /// Flags.
        flags: u16,
        /// Program id.
        id: u32,
        /// Program tag.
        tag: [u8; 8],
    },
    /// `PERF_RECORD_CGROUP`.
    Cgroup {
        /// Cgroup id.
        id: u64,
        /// Cgroup path.
        path: &'a [u8],
    },
    /// `PERF_RECORD_TEXT_POKE`.
    TextPoke {
        /// Address.
        addr: u64,
        /// Old bytes.
        old: &'a [u8],
        /// New bytes.
        new: &'a [u8],
    },
    /// `PERF_RECORD_AUX_OUTPUT_HW_ID`.
    AuxOutputHwId {
        /// Hardware id.
        hw_id: u64,
    },
    /// `PERF_RECORD_HEADER_ATTR` (pipe mode): an attr and its sample ids.
    HeaderAttr {
        /// The attr.
        attr: Box<Attr>,
        /// Its ids.
        ids: U64s<'a>,
    },
    /// `PERF_RECORD_HEADER_TRACING_DATA`: `size` bytes of tracing data follow the record
    /// in the stream (not counted in `header.size`).
    TracingData {
        /// Size of the data that follows.
        size: u32,
    },
    /// `PERF_RECORD_FINISHED_ROUND`.
    FinishedRound,
    /// `PERF_RECORD_FINISHED_INIT`.
    FinishedInit,
    /// `PERF_RECORD_ID_INDEX`.
    IdIndex(Vec<IdIndexEntry>),
    /// `PERF_RECORD_AUXTRACE`: `size` bytes of AUX data follow the record in the stream.
    Auxtrace {
        /// Size of the data that follows.
        size: u64,
        /// Offset in the AUX area.
        offset: u64,
        /// Reference.
        reference: u64,
        /// Index of the AUX buffer.
        idx: u32,
        /// Thread id.
        tid: u32,
        /// CPU.
        cpu: u32,
    },
    /// `PERF_RECORD_TIME_CONV`.
    TimeConv(TimeConv),
    /// `PERF_RECORD_HEADER_FEATURE` (pipe mode): one header feature section.
    HeaderFeature {
        /// `HEADER_*` feature id.
        feature: u64,
        /// The section bytes.
        data: &'a [u8],
    },
    /// `PERF_RECORD_COMPRESSED` / `COMPRESSED2`: a piece of one zstd stream of records.
    Compressed {
        /// The compressed bytes.
        data: &'a [u8],
    },
    /// Any other record (user types decoded no further, unknown kernel types), with its
    /// payload after the header.
    Other {
        /// The payload.
        payload: &'a [u8],
    },
}

/// `PERF_RECORD_MMAP`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mmap<'a> {
    /// Process id (u32::MAX for the kernel).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Start address.
    pub addr: u64,
    /// Length.
    pub len: u64,
    /// File offset.
    pub pgoff: u64,
    /// The mapped file.
    pub filename: &'a [u8],
}

/// `PERF_RECORD_MMAP2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mmap2<'a> {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Start address.
    pub addr: u64,
    /// Length.
    pub len: u64,
    /// File offset.
    pub pgoff: u64,
    /// Device major, inode... or the build id (with `PERF_RECORD_MISC_MMAP_BUILD_ID`).
    pub file_id: FileId<'a>,
    /// `PROT_*`.
    pub prot: u32,
    /// `MAP_*`.
    pub flags: u32,
    /// The mapped file.
    pub filename: &'a [u8],
}

/// How an `MMAP2` names its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileId<'a> {
    /// Device and inode.
    Inode {
        /// Major device number.
        maj: u32,
        /// Minor device number.
        min: u32,
        /// Inode.
        ino: u64,
        /// Inode generation.
        ino_generation: u64,
    },
    /// The build id.
    BuildId(&'a [u8]),
}

/// `PERF_RECORD_FORK` / `PERF_RECORD_EXIT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Thread id.
    pub tid: u32,
    /// Parent thread id.
    pub ptid: u32,
    /// Time.
    pub time: u64,
}

/// `PERF_RECORD_THROTTLE` / `UNTHROTTLE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Throttle {
    /// Time.
    pub time: u64,
    /// Event id.
    pub id: u64,
    /// Stream id.
    pub stream_id: u64,
}

/// One `PERF_RECORD_ID_INDEX` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdIndexEntry {
    /// Sample id.
    pub id: u64,
    /// Index of the attr.
    pub idx: u64,
    /// CPU.
    pub cpu: u64,
    /// Thread id.
    pub tid: u64,
}

/// `PERF_RECORD_TIME_CONV`: how to turn TSC values into perf time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeConv {
    /// `time_shift`.
    pub time_shift: u64,
    /// `time_mult`.
    pub time_mult: u64,
    /// `time_zero`.
    pub time_zero: u64,
    /// `time_cycles` (newer perf only).
    pub time_cycles: Option<u64>,
    /// `time_mask` (newer perf only).
    pub time_mask: Option<u64>,
    /// `cap_user_time_zero`.
    pub cap_user_time_zero: Option<bool>,
    /// `cap_user_time_short`.
    pub cap_user_time_short: Option<bool>,
}

/// Decodes the body of a kernel record other than SAMPLE, from `c` (which holds only the
/// payload, the `sample_id` trailer already cut off). `read_format` is the attr's.
pub(crate) fn decode_kernel<'a>(
    c: &mut Cursor<'a>,
    type_: u32,
    misc_: u16,
    read_format: u64,
) -> Result<Body<'a>> {
    let out = misc_ & misc::SWITCH_OUT != 0;
    let preempt = misc_ & misc::SWITCH_OUT_PREEMPT != 0;
    Ok(match type_ {
        kind::MMAP => Body::Mmap(Mmap {
            pid: c.u32()?,
            tid: c.u32()?,
            addr: c.u64()?,
            len: c.u64()?,
            pgoff: c.u64()?,
            filename: c.cstr_rest(),
        }),
        kind::MMAP2 => {
            let (pid, tid, addr, len, pgoff) = (c.u32()?, c.u32()?, c.u64()?, c.u64()?, c.u64()?);
            let file_id = if misc_ & misc::MMAP_BUILD_ID != 0 {
                let size = c.u8()?;
                c.bytes(3)?;
                let id = c.bytes(20)?;
                FileId::BuildId(id.get(..usize::from(size).min(20)).unwrap_or(id))
            } else {
                FileId::Inode {
                    maj: c.u32()?,
                    min: c.u32()?,
                    ino: c.u64()?,
                    ino_generation: c.u64()?,
                }
            };
            Body::Mmap2(Mmap2 {
                pid,
                tid,
                addr,
                len,
                pgoff,
                file_id,
                prot: c.u32()?,
                flags: c.u32()?,
                filename: c.cstr_rest(),
            })
        }
        kind::LOST => Body::Lost {
            id: c.u64()?,
            lost: c.u64()?,
        },
        kind::COMM => Body::Comm {
            pid: c.u32()?,
            tid: c.u32()?,
            comm: c.cstr_rest(),
            exec: misc_ & misc::COMM_EXEC != 0,
        },
        kind::EXIT | kind::FORK => {
            let t = Task {
                pid: c.u32()?,
                ppid: c.u32()?,
                tid: c.u32()?,
                ptid: c.u32()?,
                time: c.u64()?,
            };
            if type_ == kind::EXIT {
                Body::Exit(t)
            } else {
                Body::Fork(t)
            }
        }
        kind::THROTTLE | kind::UNTHROTTLE => {
            let t = Throttle {
                time: c.u64()?,
                id: c.u64()?,
                stream_id: c.u64()?,
            };
            if type_ == kind::THROTTLE {
                Body::Throttle(t)
            } else {
                Body::Unthrottle(t)
            }
        }
        kind::READ => Body::Read {
            pid: c.u32()?,
            tid: c.u32()?,
            values: decode_read(c, read_format)?,
        },
        kind::AUX => Body::Aux {
            aux_offset: c.u64()?,
            aux_size: c.u64()?,
            flags: c.u64()?,
        },
        kind::ITRACE_START => Body::ItraceStart {
            pid: c.u32()?,
            tid: c.u32()?,
        },
        kind::LOST_SAMPLES => Body::LostSamples { lost: c.u64()? },
        kind::SWITCH => Body::Switch { out, preempt },
        kind::SWITCH_CPU_WIDE => Body::SwitchCpuWide {
            out,
            preempt,
            next_prev_pid: c.u32()?,
            next_prev_tid: c.u32()?,
        },
        kind::NAMESPACES => {
            let (pid, tid) = (c.u32()?, c.u32()?);
            let nr = c.u64()?;
            let link_info = c.u64s(nr.checked_mul(2).ok_or_else(|| c.err("bad count"))?)?;
            Body::Namespaces {
                pid,
                tid,
                link_info,
            }
        }
        kind::KSYMBOL => Body::Ksymbol {
            addr: c.u64()?,
            len: c.u32()?,
            ksym_type: c.u16()?,
            flags: c.u16()?,
            name: c.cstr_rest(),
        },
        kind::BPF_EVENT => {
            let (type_, flags, id) = (c.u16()?, c.u16()?, c.u32()?);
            let mut tag = [0u8; 8];
            tag.copy_from_slice(c.bytes(8)?);
            Body::BpfEvent {
                type_,
                flags,
                id,
                tag,
            }
        }
        kind::CGROUP => Body::Cgroup {
            id: c.u64()?,
            path: c.cstr_rest(),
        },
        kind::TEXT_POKE => {
            let addr = c.u64()?;
            let (o, n) = (c.u16()?, c.u16()?);
            Body::TextPoke {
                addr,
                old: c.bytes(usize::from(o))?,
                new: c.bytes(usize::from(n))?,
            }
        }
        kind::AUX_OUTPUT_HW_ID => Body::AuxOutputHwId { hw_id: c.u64()? },
        _ => Body::Other { payload: c.rest() },
    })
}

/// Decodes the body of a perf.data user record (type >= 64).
pub(crate) fn decode_user<'a>(c: &mut Cursor<'a>, type_: u32) -> Result<Body<'a>> {
    Ok(match type_ {
        kind::HEADER_ATTR => {
            let at = c.offset();
            let rest = c.rest();
            let (attr, size) = Attr::from_bytes(rest)
                .map_err(|e| crate::Error::malformed("HEADER_ATTR record", at, e.to_string()))?;
            let size = if size == 0 {
                hwprof_pmu::attr::ATTR_SIZE_VER0
            } else {
                size as usize
            };
            let ids = rest.get(size..).unwrap_or(&[]);
            Body::HeaderAttr {
                attr: Box::new(attr),
                ids: U64s::new(ids),
            }
        }
        kind::HEADER_TRACING_DATA => Body::TracingData { size: c.u32()? },
        kind::FINISHED_ROUND => Body::FinishedRound,
        kind::FINISHED_INIT => Body::FinishedInit,
        kind::ID_INDEX => {
            let nr = c.u64()?;
            let avail = c.remaining() as u64;
            if nr.checked_mul(32).is_none_or(|n| n > avail) {
                return Err(c.err(format!("id index of {nr} entries does not fit")));
            }
            // Newer perf may append more per-entry fields; entries are 32 bytes here.
            let mut v = Vec::with_capacity(nr as usize);
            for _ in 0..nr {
                v.push(IdIndexEntry {
                    id: c.u64()?,
                    idx: c.u64()?,
                    cpu: c.u64()?,
                    tid: c.u64()?,
                });
            }
            Body::IdIndex(v)
        }
        kind::AUXTRACE => {
            let (size, offset, reference) = (c.u64()?, c.u64()?, c.u64()?);
            Body::Auxtrace {
                size,
                offset,
                reference,
                idx: c.u32()?,
                tid: c.u32()?,
                cpu: c.u32()?,
            }
        }
        kind::TIME_CONV => {
            let mut t = TimeConv {
                time_shift: c.u64()?,
                time_mult: c.u64()?,
                time_zero: c.u64()?,
                ..TimeConv::default()
            };
            if c.remaining() >= 24 {
                t.time_cycles = Some(c.u64()?);
                t.time_mask = Some(c.u64()?);
                t.cap_user_time_zero = Some(c.u8()? != 0);
                t.cap_user_time_short = Some(c.u8()? != 0);
            }
            Body::TimeConv(t)
        }
        kind::HEADER_FEATURE => Body::HeaderFeature {
            feature: c.u64()?,
            data: c.rest(),
        },
        kind::COMPRESSED => Body::Compressed { data: c.rest() },
        kind::COMPRESSED2 => {
            let n = c.u64()?;
            let n = usize::try_from(n)
                .ok()
                .filter(|&n| n <= c.remaining())
                .ok_or_else(|| c.err(format!("compressed size {n} exceeds the record")))?;
            Body::Compressed { data: c.bytes(n)? }
        }
        _ => Body::Other { payload: c.rest() },
    })
}

/// Lossy text of a borrowed C string (for display).
pub fn text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(cstr(b))
}
