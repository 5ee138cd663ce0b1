//! The one decoder from bytes to [`Record`]s, for live rings and files alike.
//!
//! A [`Decoder`] knows the attrs (and their sample ids) of a session or file. Given the
//! bytes of one whole record (8-byte `perf_event_header` included) it finds the attr
//! that produced it, as perf does (by the id at `id_pos` in samples and `is_pos` from the
//! end of a `sample_id` trailer; a single attr needs no id), and decodes every field the
//! attr's `sample_type`, `read_format`, `branch_sample_type` and register masks ask for.
//! Strings, callchains and payloads borrow from the input; decoding allocates only for
//! `READ` values and `ID_INDEX` entries.
//!
//! Malformed or truncated input yields [`Error::Malformed`] naming the absolute byte
//! offset (the `offset` passed in plus the position in the record); it never panics.
//!
//! [`rewrite`] turns a DWARF sample (user registers and stack) into one with an
//! ordinary callchain once its user stack is unwound.
//!
//! ```
//! use hwprof_pmu::attr::{Attr, sample};
//! use hwprof_sampler::record::{Body, Decoder, kind};
//!
//! let mut attr = Attr::new(1, 0);
//! attr.sample_type = sample::IP | sample::TID;
//! let dec = Decoder::new(&[(attr, vec![])]);
//! let mut rec = Vec::new();
//! rec.extend_from_slice(&kind::SAMPLE.to_le_bytes());
//! rec.extend_from_slice(&2u16.to_le_bytes()); // misc: user
//! rec.extend_from_slice(&24u16.to_le_bytes()); // size
//! rec.extend_from_slice(&0x401000u64.to_le_bytes());
//! rec.extend_from_slice(&7u32.to_le_bytes());
//! rec.extend_from_slice(&8u32.to_le_bytes());
//! let r = dec.decode(&rec, 0).unwrap();
//! let Body::Sample(s) = &r.body else { panic!() };
//! assert_eq!((s.ip, s.pid, s.tid), (Some(0x401000), Some(7), Some(8)));
//! assert!(dec.decode(&rec[..20], 0x100).is_err());
//! ```

mod body;
mod cursor;
mod datasrc;
pub mod rewrite;
mod sample;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use hwprof_pmu::attr::{Attr, sample as st};

pub use body::{Body, FileId, IdIndexEntry, Mmap, Mmap2, Task, Throttle, TimeConv, text};
pub use cursor::U64s;
pub use datasrc::{DataSrc, MemLvl};
pub use sample::{
    BranchEntry, BranchStack, ReadValue, ReadValues, Regs, Sample, SampleId, StackUser,
    WeightStruct,
};

use crate::error::{Error, Result};
use cursor::Cursor;

/// The counter values a `read()` of an event's fd gave (the layout of a
/// `PERF_RECORD_READ`'s values), per the event's `read_format`.
pub fn read_values(bytes: &[u8], read_format: u64) -> Result<ReadValues> {
    sample::decode_read(&mut Cursor::new(bytes, 0, "counter read"), read_format)
}

/// `PERF_RECORD_*` type numbers (kernel types below 64, perf.data user types from 64).
pub mod kind {
    #![allow(missing_docs)]
    pub const MMAP: u32 = 1;
    pub const LOST: u32 = 2;
    pub const COMM: u32 = 3;
    pub const EXIT: u32 = 4;
    pub const THROTTLE: u32 = 5;
    pub const UNTHROTTLE: u32 = 6;
    pub const FORK: u32 = 7;
    pub const READ: u32 = 8;
    pub const SAMPLE: u32 = 9;
    pub const MMAP2: u32 = 10;
    pub const AUX: u32 = 11;
    pub const ITRACE_START: u32 = 12;
    pub const LOST_SAMPLES: u32 = 13;
    pub const SWITCH: u32 = 14;
    pub const SWITCH_CPU_WIDE: u32 = 15;
    pub const NAMESPACES: u32 = 16;
    pub const KSYMBOL: u32 = 17;
    pub const BPF_EVENT: u32 = 18;
    pub const CGROUP: u32 = 19;
    pub const TEXT_POKE: u32 = 20;
    pub const AUX_OUTPUT_HW_ID: u32 = 21;
    pub const HEADER_ATTR: u32 = 64;
    pub const HEADER_EVENT_TYPE: u32 = 65;
    pub const HEADER_TRACING_DATA: u32 = 66;
    pub const HEADER_BUILD_ID: u32 = 67;
    pub const FINISHED_ROUND: u32 = 68;
    pub const ID_INDEX: u32 = 69;
    pub const AUXTRACE_INFO: u32 = 70;
    pub const AUXTRACE: u32 = 71;
    pub const AUXTRACE_ERROR: u32 = 72;
    pub const THREAD_MAP: u32 = 73;
    pub const CPU_MAP: u32 = 74;
    pub const STAT_CONFIG: u32 = 75;
    pub const STAT: u32 = 76;
    pub const STAT_ROUND: u32 = 77;
    pub const EVENT_UPDATE: u32 = 78;
    pub const TIME_CONV: u32 = 79;
    pub const HEADER_FEATURE: u32 = 80;
    pub const COMPRESSED: u32 = 81;
    pub const FINISHED_INIT: u32 = 82;
    pub const COMPRESSED2: u32 = 83;

    /// The snake_case name of a record type (`sample`, `mmap2`, `finished_round`), or
    /// `None` for a type hwprof does not know.
    pub fn name(t: u32) -> Option<&'static str> {
        const K: [&str; 21] = [
            "mmap",
            "lost",
            "comm",
            "exit",
            "throttle",
            "unthrottle",
            "fork",
            "read",
            "sample",
            "mmap2",
            "aux",
            "itrace_start",
            "lost_samples",
            "switch",
            "switch_cpu_wide",
            "namespaces",
            "ksymbol",
            "bpf_event",
            "cgroup",
            "text_poke",
            "aux_output_hw_id",
        ];
        const U: [&str; 20] = [
            "header_attr",
            "header_event_type",
            "header_tracing_data",
            "header_build_id",
            "finished_round",
            "id_index",
            "auxtrace_info",
            "auxtrace",
            "auxtrace_error",
            "thread_map",
            "cpu_map",
            "stat_config",
            "stat",
            "stat_round",
            "event_update",
            "time_conv",
            "header_feature",
            "compressed",
            "finished_init",
            "compressed2",
        ];
        match t {
            1..=21 => K.get(t as usize - 1).copied(),
            64..=83 => U.get(t as usize - 64).copied(),
            _ => None,
        }
    }
}

/// `perf_event_header.misc` bits.
pub mod misc {
    #![allow(missing_docs)]
    pub const CPUMODE_MASK: u16 = 7;
    pub const CPUMODE_UNKNOWN: u16 = 0;
    pub const KERNEL: u16 = 1;
    pub const USER: u16 = 2;
    pub const HYPERVISOR: u16 = 3;
    pub const GUEST_KERNEL: u16 = 4;
    pub const GUEST_USER: u16 = 5;
    /// COMM: the name changed by exec.
    pub const COMM_EXEC: u16 = 1 << 13;
    /// SWITCH: switch out.
    pub const SWITCH_OUT: u16 = 1 << 13;
    /// MMAP2: the record carries a build id instead of device/inode.
    pub const MMAP_BUILD_ID: u16 = 1 << 14;
    /// SWITCH: switched out while runnable (preempted).
    pub const SWITCH_OUT_PREEMPT: u16 = 1 << 14;
    /// SAMPLE: the ip is exact (PEBS).
    pub const EXACT_IP: u16 = 1 << 14;
}

/// Callchain context markers (`PERF_CONTEXT_*`), kept as values in callchains.
pub mod context {
    #![allow(missing_docs)]
    pub const HV: u64 = -32i64 as u64;
    pub const KERNEL: u64 = -128i64 as u64;
    pub const USER: u64 = -512i64 as u64;
    pub const GUEST: u64 = -2048i64 as u64;
    pub const GUEST_KERNEL: u64 = -2176i64 as u64;
    pub const GUEST_USER: u64 = -2560i64 as u64;
    /// Values at or above this are markers, not addresses.
    pub const MAX: u64 = -4095i64 as u64;
}

/// `struct perf_event_header`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// `PERF_RECORD_*` ([`kind`]).
    pub type_: u32,
    /// [`misc`] bits.
    pub misc: u16,
    /// Size of the whole record, header included.
    pub size: u16,
}

/// The type, misc and size of the record at the start of `bytes`, if 8 bytes are there.
pub fn peek_header(bytes: &[u8]) -> Option<(u32, u16, u16)> {
    let h = bytes.get(..8)?;
    Some((
        u32::from_le_bytes([h[0], h[1], h[2], h[3]]),
        u16::from_le_bytes([h[4], h[5]]),
        u16::from_le_bytes([h[6], h[7]]),
    ))
}

/// One decoded record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// The header.
    pub header: Header,
    /// Index of the attr that produced it (in the decoder's attr list), when known.
    pub attr: Option<usize>,
    /// The `sample_id` trailer of non-sample kernel records (with `sample_id_all`).
    pub sample_id: Option<SampleId>,
    /// The body.
    pub body: Body<'a>,
}

impl Record<'_> {
    /// The record's time: the sample's, or its `sample_id` trailer's.
    pub fn time(&self) -> Option<u64> {
        match &self.body {
            Body::Sample(s) => s.time,
            _ => self.sample_id.and_then(|s| s.time),
        }
    }
}

#[derive(Clone, Debug)]
struct AttrInfo {
    attr: Attr,
    id_size: usize,
}

/// Decodes records for a fixed (or growing, in pipe mode) set of attrs.
#[derive(Clone, Debug, Default)]
pub struct Decoder {
    attrs: Vec<AttrInfo>,
    ids: HashMap<u64, usize>,
}

impl Decoder {
    /// A decoder for `attrs`, each with the sample ids the kernel gave its fds.
    pub fn new(attrs: &[(Attr, Vec<u64>)]) -> Decoder {
        let mut d = Decoder::default();
        for (a, ids) in attrs {
            d.add_attr(a.clone(), ids);
        }
        d
    }

    /// Adds one attr (pipe mode's `HEADER_ATTR`); returns its index.
    pub fn add_attr(&mut self, attr: Attr, ids: &[u64]) -> usize {
        let idx = self.attrs.len();
        for &id in ids {
            self.ids.entry(id).or_insert(idx);
        }
        self.attrs.push(AttrInfo {
            id_size: sample::sample_id_size(attr.sample_type),
            attr,
        });
        idx
    }

    /// The attrs, in index order.
    pub fn attrs(&self) -> impl Iterator<Item = &Attr> {
        self.attrs.iter().map(|a| &a.attr)
    }

    /// The attr with index `idx` (a decoded record's [`Record::attr`]).
    pub fn attr(&self, idx: usize) -> Option<&Attr> {
        self.attrs.get(idx).map(|a| &a.attr)
    }

    /// Number of attrs.
    pub fn len(&self) -> usize {
        self.attrs.len()
    }

    /// True when the decoder knows no attr.
    pub fn is_empty(&self) -> bool {
        self.attrs.is_empty()
    }

    /// Index of the attr a decoded record came from.
    pub fn attr_index(&self, r: &Record) -> Option<usize> {
        r.attr
    }

    /// Index of the attr with sample id `id`.
    pub fn attr_of_id(&self, id: u64) -> Option<usize> {
        self.ids.get(&id).copied()
    }

    fn pick(&self, id: Option<u64>, what: &'static str, at: u64) -> Result<usize> {
        if self.attrs.len() <= 1 || self.ids.is_empty() {
            return Ok(0);
        }
        match id {
            // Records perf synthesizes (MMAP, COMM at start) carry id 0: first attr.
            Some(0) | None => Ok(0),
            Some(id) => self.ids.get(&id).copied().ok_or_else(|| {
                Error::malformed(what, at, format!("sample id {id} matches no event"))
            }),
        }
    }

    /// The time of the sample record `bytes` (header included), read without decoding
    /// it: `None` when its event has no `PERF_SAMPLE_TIME`, or when it is no sample or
    /// not one this decoder can read ([`Decoder::decode`] says why).
    pub fn sample_time(&self, bytes: &[u8]) -> Option<u64> {
        let (type_, _, size) = peek_header(bytes)?;
        let payload = U64s::new(bytes.get(8..usize::from(size))?);
        let first = &self.attrs.first()?.attr;
        if type_ != kind::SAMPLE {
            return None;
        }
        let id = sample::id_pos(first.sample_type).and_then(|p| payload.get(p));
        let t = self
            .attrs
            .get(self.pick(id, "sample", 0).ok()?)?
            .attr
            .sample_type;
        if t & st::TIME == 0 {
            return None;
        }
        let pos = [st::IDENTIFIER, st::IP, st::TID]
            .iter()
            .filter(|&&b| t & b != 0)
            .count();
        payload.get(pos)
    }

    /// Decodes one whole record (`bytes` starts at its header and is exactly
    /// `header.size` long, or longer: the rest is ignored). `offset` is where the record
    /// sits in its file or stream and only appears in error messages.
    pub fn decode<'a>(&self, bytes: &'a [u8], offset: u64) -> Result<Record<'a>> {
        let (type_, misc_, size) = peek_header(bytes).ok_or_else(|| {
            Error::malformed(
                "record",
                offset,
                format!("{} bytes, a header needs 8", bytes.len()),
            )
        })?;
        let size = usize::from(size);
        let header = Header {
            type_,
            misc: misc_,
            size: size as u16,
        };
        if size < 8 {
            return Err(Error::malformed(
                "record",
                offset,
                format!("size {size} is smaller than its header"),
            ));
        }
        let rec = bytes.get(..size).ok_or_else(|| {
            Error::malformed(
                "record",
                offset,
                format!("size {size} but only {} bytes left", bytes.len()),
            )
        })?;
        let payload = rec.get(8..).unwrap_or(&[]);
        let body_off = offset + 8;
        if type_ >= 64 {
            let mut c = Cursor::new(payload, body_off, "user record");
            let body = body::decode_user(&mut c, type_)?;
            return Ok(Record {
                header,
                attr: None,
                sample_id: None,
                body,
            });
        }
        if self.attrs.is_empty() {
            return Err(Error::malformed(
                "record",
                offset,
                format!("record type {type_} before any event attr"),
            ));
        }
        let first = &self.attrs[0];
        if type_ == kind::SAMPLE {
            let id = sample::id_pos(first.attr.sample_type).and_then(|p| U64s::new(payload).get(p));
            let idx = self.pick(id, "sample", offset)?;
            let info = self.attrs.get(idx).unwrap_or(first);
            let mut c = Cursor::new(payload, body_off, "sample");
            let mut rec = Record {
                header,
                attr: Some(idx),
                sample_id: None,
                body: Body::Sample(Sample::default()),
            };
            if let Body::Sample(s) = &mut rec.body {
                sample::decode_sample(&mut c, &info.attr, s)?;
            }
            return Ok(rec);
        }
        // Kernel records other than samples: maybe a sample_id trailer.
        let (idx, sid, body_bytes) = if first.attr.sample_id_all {
            let words = U64s::new(payload);
            let n = words.len();
            let id = sample::is_pos(first.attr.sample_type)
                .and_then(|p| n.checked_sub(p))
                .and_then(|i| words.get(i));
            let idx = self.pick(id, "record sample_id", offset)?;
            let info = self.attrs.get(idx).unwrap_or(first);
            let split = payload.len().checked_sub(info.id_size).ok_or_else(|| {
                Error::malformed(
                    "record",
                    offset,
                    format!(
                        "{} bytes of payload cannot hold a {}-byte sample_id",
                        payload.len(),
                        info.id_size
                    ),
                )
            })?;
            let (body_bytes, trailer) = payload.split_at(split);
            let mut tc = Cursor::new(trailer, body_off + split as u64, "sample_id");
            let sid = sample::decode_sample_id(&mut tc, info.attr.sample_type)?;
            (idx, Some(sid), body_bytes)
        } else {
            (0, None, payload)
        };
        let info = self.attrs.get(idx).unwrap_or(first);
        let mut c = Cursor::new(body_bytes, body_off, "record");
        let body = body::decode_kernel(&mut c, type_, misc_, info.attr.read_format)?;
        Ok(Record {
            header,
            attr: (sid.is_some() || self.attrs.len() == 1).then_some(idx),
            sample_id: sid,
            body,
        })
    }
}
