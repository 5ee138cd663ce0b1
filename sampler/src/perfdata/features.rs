//! perf.data header features (`HEADER_*` sections after the data, or `HEADER_FEATURE`
//! records in pipe mode): one typed [`Features`] that the reader fills and the writer
//! writes.

use hwprof_pmu::attr::Attr;
use serde::Serialize;

use crate::error::{Error, Result};

mod host;
pub use host::VERSION;

/// Feature ids (`enum perf_header_feature` / `HEADER_*` in perf's `header.h`).
pub mod id {
    #![allow(missing_docs)]
    pub const TRACING_DATA: u32 = 1;
    pub const BUILD_ID: u32 = 2;
    pub const HOSTNAME: u32 = 3;
    pub const OSRELEASE: u32 = 4;
    pub const VERSION: u32 = 5;
    pub const ARCH: u32 = 6;
    pub const NRCPUS: u32 = 7;
    pub const CPUDESC: u32 = 8;
    pub const CPUID: u32 = 9;
    pub const TOTAL_MEM: u32 = 10;
    pub const CMDLINE: u32 = 11;
    pub const EVENT_DESC: u32 = 12;
    pub const CPU_TOPOLOGY: u32 = 13;
    pub const NUMA_TOPOLOGY: u32 = 14;
    pub const BRANCH_STACK: u32 = 15;
    pub const PMU_MAPPINGS: u32 = 16;
    pub const GROUP_DESC: u32 = 17;
    pub const AUXTRACE: u32 = 18;
    pub const STAT: u32 = 19;
    pub const CACHE: u32 = 20;
    pub const SAMPLE_TIME: u32 = 21;
    pub const MEM_TOPOLOGY: u32 = 22;
    pub const CLOCKID: u32 = 23;
    pub const DIR_FORMAT: u32 = 24;
    pub const BPF_PROG_INFO: u32 = 25;
    pub const BPF_BTF: u32 = 26;
    pub const COMPRESSED: u32 = 27;
    pub const CPU_PMU_CAPS: u32 = 28;
    pub const CLOCK_DATA: u32 = 29;
    pub const HYBRID_TOPOLOGY: u32 = 30;
    pub const PMU_CAPS: u32 = 31;
    /// Bits in the header's feature bitmap (`HEADER_FEAT_BITS`).
    pub const BITS: u32 = 256;
}

/// One event as `HEADER_EVENT_DESC` describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EventDesc {
    /// The attr.
    pub attr: Attr,
    /// The event's name (`cycles`, `cpu-clock:u`, `sched:sched_switch`).
    pub name: String,
    /// The sample ids of this event.
    pub ids: Vec<u64>,
}

/// One `HEADER_BUILD_ID` entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BuildIdEntry {
    /// Process id (-1 for the kernel and shared objects perf attributes to no process).
    pub pid: i32,
    /// `misc` of the entry's header (`PERF_RECORD_MISC_KERNEL` / `_USER`, `BUILD_ID_SIZE`).
    pub misc: u16,
    /// The build id bytes (usually 20).
    pub build_id: Vec<u8>,
    /// The DSO path (`/usr/lib/x86_64-linux-gnu/libc.so.6`, `[kernel.kallsyms]`).
    pub filename: String,
}

/// One `HEADER_GROUP_DESC` entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupDesc {
    /// The group's name (`{cycles,instructions}`), may be empty.
    pub name: String,
    /// Index of the leader among the file's attrs.
    pub leader_idx: u32,
    /// Number of members, leader included.
    pub nr_members: u32,
}

/// The features of one perf.data file. `None` / empty means absent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Features {
    /// `HEADER_HOSTNAME`.
    pub hostname: Option<String>,
    /// `HEADER_OSRELEASE` (`uname -r`).
    pub osrelease: Option<String>,
    /// `HEADER_VERSION`: the perf (or hwprof) version that wrote the file.
    pub version: Option<String>,
    /// `HEADER_ARCH` (`uname -m`).
    pub arch: Option<String>,
    /// `HEADER_NRCPUS`: (available, online).
    pub nr_cpus: Option<(u32, u32)>,
    /// `HEADER_CPUDESC` (the model name of `/proc/cpuinfo`).
    pub cpudesc: Option<String>,
    /// `HEADER_CPUID` (`GenuineIntel,6,85,4`).
    pub cpuid: Option<String>,
    /// `HEADER_TOTAL_MEM` in kB.
    pub total_mem: Option<u64>,
    /// `HEADER_CMDLINE`: argv of the recording command.
    pub cmdline: Option<Vec<String>>,
    /// `HEADER_EVENT_DESC`.
    pub event_desc: Option<Vec<EventDesc>>,
    /// `HEADER_BUILD_ID`.
    pub build_ids: Vec<BuildIdEntry>,
    /// `HEADER_GROUP_DESC`.
    pub group_desc: Option<Vec<GroupDesc>>,
    /// Every other feature present, as (id, raw section bytes), kept so nothing is lost.
    #[serde(skip)]
    pub other: Vec<(u32, Vec<u8>)>,
}

/// The name of a feature id as perf spells it (`HOSTNAME`, `BUILD_ID`...), `UNKNOWN`
/// for ids hwprof does not know.
pub fn feature_name(feature: u32) -> &'static str {
    feature_what(feature).trim_start_matches("feature ")
}

/// `what` of [`Error::Malformed`] for a feature section.
fn feature_what(feature: u32) -> &'static str {
    match feature {
        id::TRACING_DATA => "feature TRACING_DATA",
        id::BUILD_ID => "feature BUILD_ID",
        id::HOSTNAME => "feature HOSTNAME",
        id::OSRELEASE => "feature OSRELEASE",
        id::VERSION => "feature VERSION",
        id::ARCH => "feature ARCH",
        id::NRCPUS => "feature NRCPUS",
        id::CPUDESC => "feature CPUDESC",
        id::CPUID => "feature CPUID",
        id::TOTAL_MEM => "feature TOTAL_MEM",
        id::CMDLINE => "feature CMDLINE",
        id::EVENT_DESC => "feature EVENT_DESC",
        id::CPU_TOPOLOGY => "feature CPU_TOPOLOGY",
        id::NUMA_TOPOLOGY => "feature NUMA_TOPOLOGY",
        id::BRANCH_STACK => "feature BRANCH_STACK",
        id::PMU_MAPPINGS => "feature PMU_MAPPINGS",
        id::GROUP_DESC => "feature GROUP_DESC",
        id::AUXTRACE => "feature AUXTRACE",
        id::STAT => "feature STAT",
        id::CACHE => "feature CACHE",
        id::SAMPLE_TIME => "feature SAMPLE_TIME",
        id::MEM_TOPOLOGY => "feature MEM_TOPOLOGY",
        id::CLOCKID => "feature CLOCKID",
        id::DIR_FORMAT => "feature DIR_FORMAT",
        id::BPF_PROG_INFO => "feature BPF_PROG_INFO",
        id::BPF_BTF => "feature BPF_BTF",
        id::COMPRESSED => "feature COMPRESSED",
        id::CPU_PMU_CAPS => "feature CPU_PMU_CAPS",
        id::CLOCK_DATA => "feature CLOCK_DATA",
        id::HYBRID_TOPOLOGY => "feature HYBRID_TOPOLOGY",
        id::PMU_CAPS => "feature PMU_CAPS",
        _ => "feature UNKNOWN",
    }
}

/// `PERF_RECORD_MISC_KERNEL`: a kernel DSO's build id entry.
pub const MISC_KERNEL: u16 = 1;
/// `PERF_RECORD_MISC_USER`: a user DSO's build id entry.
pub const MISC_USER: u16 = 2;
/// `PERF_RECORD_MISC_BUILD_ID_SIZE`: the entry's build id length is in its `size` byte.
pub const MISC_BUILD_ID_SIZE: u16 = 1 << 15;

/// perf's `NAME_ALIGN`: strings and build id file names are padded to this many bytes.
const NAME_ALIGN: usize = 64;
/// `sizeof(struct perf_record_header_build_id)` without the file name.
const BUILD_ID_ENTRY_FIXED: usize = 36;
/// The byte length of a build id perf keeps at most (`BUILD_ID_SIZE`).
const BUILD_ID_MAX: usize = 20;
/// The `{anon_group}` name perf writes for a group without a name.
pub const ANON_GROUP: &str = "{anon_group}";

/// The `perf_event_attr` sizes of each ABI version (`PERF_ATTR_SIZE_VER0..VER8`).
const ATTR_VERSION_SIZES: [usize; 9] = [64, 72, 80, 96, 104, 112, 120, 128, 136];

/// The smallest `perf_event_attr` ABI size that holds every non-zero field of `attrs`
/// (at least `PERF_ATTR_SIZE_VER0`, 64 bytes).
///
/// perf refuses an attr larger than the struct it was built with ("file uses a more
/// recent and unsupported ABI"): perf 6.1 knows 128 bytes, so writing hwprof's full
/// 136-byte attr would make every older perf reject the file. Files written with this
/// size read everywhere the fields they use exist.
pub fn file_attr_size<'a>(attrs: impl IntoIterator<Item = &'a Attr>) -> usize {
    let mut size = ATTR_VERSION_SIZES[0];
    for attr in attrs {
        let b = attr.to_bytes();
        // The last non-zero byte, ignoring the `size` field at 4..8.
        let last = b
            .iter()
            .enumerate()
            .rev()
            .find(|&(i, &v)| v != 0 && !(4..8).contains(&i))
            .map_or(0, |(i, _)| i);
        let need = ATTR_VERSION_SIZES
            .iter()
            .copied()
            .find(|&s| s > last)
            .unwrap_or(hwprof_pmu::attr::ATTR_SIZE);
        size = size.max(need);
    }
    size
}

/// `attr` as `size` bytes of a little-endian `perf_event_attr` whose `size` field says
/// `size` (see [`file_attr_size`]; fields past `size` must be zero).
pub fn attr_file_bytes(attr: &Attr, size: usize) -> Vec<u8> {
    let full = attr.to_bytes();
    let size = size.min(full.len());
    let mut v = full.get(..size).unwrap_or(&full[..]).to_vec();
    if let Some(f) = v.get_mut(4..8) {
        f.copy_from_slice(&(size as u32).to_le_bytes());
    }
    v
}

/// A bounds-checked little-endian reader over one feature section.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: u64,
    what: &'static str,
}

impl<'a> Cursor<'a> {
    fn err(&self, at: usize, msg: impl Into<String>) -> Error {
        Error::malformed(self.what, self.base + at as u64, msg)
    }

    fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    fn take(&mut self, n: usize, field: &str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n);
        match end.and_then(|e| self.bytes.get(self.pos..e)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(self.err(
                self.pos,
                format!(
                    "{field}: needs {n} bytes, section has {} left",
                    self.remaining()
                ),
            )),
        }
    }

    fn u32(&mut self, field: &str) -> Result<u32> {
        let b = self.take(4, field)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, field: &str) -> Result<u64> {
        let b = self.take(8, field)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// perf's string: u32 length (NUL and padding included), then the bytes.
    fn string(&mut self, field: &str) -> Result<String> {
        let at = self.pos;
        let len = self.u32(field)? as usize;
        if len > self.remaining() {
            return Err(self.err(
                at,
                format!(
                    "{field}: string of {len} bytes, section has {} left",
                    self.remaining()
                ),
            ));
        }
        let b = self.take(len, field)?;
        Ok(nul_terminated(b))
    }
}

/// The text before the first NUL (all of it when there is none), lossy UTF-8.
fn nul_terminated(b: &[u8]) -> String {
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(b.get(..n).unwrap_or(b)).into_owned()
}

/// Appends `s` the way perf's `do_write_string` does: u32 length = strlen + 1 rounded
/// up to 64, then the string NUL-padded to that length.
fn put_string(out: &mut Vec<u8>, s: &str) {
    let len = (s.len() + 1).next_multiple_of(NAME_ALIGN);
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    out.resize(out.len() + (len - s.len()), 0);
}

impl Features {
    /// Decodes one feature section (`bytes` = that section only; `offset` = its offset
    /// in the file or stream, used in errors) into `self`. Features hwprof does not
    /// decode are kept raw in [`Features::other`].
    pub fn parse_section(&mut self, feature: u32, bytes: &[u8], offset: u64) -> Result<()> {
        let mut c = Cursor {
            bytes,
            pos: 0,
            base: offset,
            what: feature_what(feature),
        };
        match feature {
            id::HOSTNAME => self.hostname = Some(c.string("hostname")?),
            id::OSRELEASE => self.osrelease = Some(c.string("osrelease")?),
            id::VERSION => self.version = Some(c.string("version")?),
            id::ARCH => self.arch = Some(c.string("arch")?),
            id::CPUDESC => self.cpudesc = Some(c.string("cpudesc")?),
            id::CPUID => self.cpuid = Some(c.string("cpuid")?),
            id::NRCPUS => {
                let avail = c.u32("nr_cpus_available")?;
                let online = c.u32("nr_cpus_online")?;
                self.nr_cpus = Some((avail, online));
            }
            id::TOTAL_MEM => self.total_mem = Some(c.u64("total_mem")?),
            id::CMDLINE => {
                let nr = c.u32("nr")?;
                let mut args = Vec::new();
                for _ in 0..nr {
                    args.push(c.string("argument")?);
                }
                self.cmdline = Some(args);
            }
            id::EVENT_DESC => self.event_desc = Some(parse_event_desc(&mut c)?),
            id::BUILD_ID => self.build_ids = parse_build_ids(&mut c)?,
            id::GROUP_DESC => {
                let nr = c.u32("nr_groups")?;
                let mut groups = Vec::new();
                for _ in 0..nr {
                    let name = c.string("group name")?;
                    let leader_idx = c.u32("leader_idx")?;
                    let nr_members = c.u32("nr_members")?;
                    groups.push(GroupDesc {
                        name,
                        leader_idx,
                        nr_members,
                    });
                }
                self.group_desc = Some(groups);
            }
            _ => {
                self.other.retain(|(f, _)| *f != feature);
                self.other.push((feature, bytes.to_vec()));
            }
        }
        // Trailing bytes are tolerated, as perf does.
        Ok(())
    }

    /// Every present feature as `(id, section bytes)`, sorted by id, byte for byte as
    /// perf writes them. Raw [`Features::other`] sections follow their ids; an `other`
    /// entry with the id of a decoded feature that is present is left out.
    pub fn to_sections(&self) -> Vec<(u32, Vec<u8>)> {
        let mut out: Vec<(u32, Vec<u8>)> = Vec::new();
        let strings = [
            (id::HOSTNAME, &self.hostname),
            (id::OSRELEASE, &self.osrelease),
            (id::VERSION, &self.version),
            (id::ARCH, &self.arch),
            (id::CPUDESC, &self.cpudesc),
            (id::CPUID, &self.cpuid),
        ];
        for (f, s) in strings {
            if let Some(s) = s {
                let mut b = Vec::new();
                put_string(&mut b, s);
                out.push((f, b));
            }
        }
        if let Some((avail, online)) = self.nr_cpus {
            let mut b = avail.to_le_bytes().to_vec();
            b.extend_from_slice(&online.to_le_bytes());
            out.push((id::NRCPUS, b));
        }
        if let Some(kb) = self.total_mem {
            out.push((id::TOTAL_MEM, kb.to_le_bytes().to_vec()));
        }
        if let Some(args) = &self.cmdline {
            let mut b = (args.len() as u32).to_le_bytes().to_vec();
            for a in args {
                put_string(&mut b, a);
            }
            out.push((id::CMDLINE, b));
        }
        if let Some(events) = &self.event_desc {
            out.push((id::EVENT_DESC, event_desc_bytes(events)));
        }
        if !self.build_ids.is_empty() {
            out.push((id::BUILD_ID, build_id_bytes(&self.build_ids)));
        }
        if let Some(groups) = &self.group_desc {
            let mut b = (groups.len() as u32).to_le_bytes().to_vec();
            for g in groups {
                put_string(&mut b, &g.name);
                b.extend_from_slice(&g.leader_idx.to_le_bytes());
                b.extend_from_slice(&g.nr_members.to_le_bytes());
            }
            out.push((id::GROUP_DESC, b));
        }
        for (f, bytes) in &self.other {
            if !out.iter().any(|(g, _)| g == f) {
                out.push((*f, bytes.clone()));
            }
        }
        out.sort_by_key(|(f, _)| *f);
        out
    }
}

fn parse_event_desc(c: &mut Cursor<'_>) -> Result<Vec<EventDesc>> {
    let nr = c.u32("nr")?;
    let at = c.pos;
    let sz = c.u32("attr_size")? as usize;
    if nr > 0 && sz < hwprof_pmu::attr::ATTR_SIZE_VER0 {
        return Err(c.err(at, format!("attr_size {sz} is below the 64 bytes of VER0")));
    }
    let mut events = Vec::new();
    for i in 0..nr {
        let at = c.pos;
        let raw = c.take(sz, "attr")?;
        let (attr, _) = Attr::from_bytes(raw).map_err(|e| c.err(at, format!("event {i}: {e}")))?;
        let nr_ids = c.u32("nr_ids")? as usize;
        let name = c.string("event name")?;
        let at = c.pos;
        if nr_ids.saturating_mul(8) > c.remaining() {
            return Err(c.err(
                at,
                format!(
                    "event {i}: {nr_ids} ids, section has {} bytes left",
                    c.remaining()
                ),
            ));
        }
        let mut ids = Vec::with_capacity(nr_ids);
        for _ in 0..nr_ids {
            ids.push(c.u64("id")?);
        }
        events.push(EventDesc { attr, name, ids });
    }
    Ok(events)
}

fn event_desc_bytes(events: &[EventDesc]) -> Vec<u8> {
    let sz = file_attr_size(events.iter().map(|e| &e.attr));
    let mut b = (events.len() as u32).to_le_bytes().to_vec();
    b.extend_from_slice(&(sz as u32).to_le_bytes());
    for e in events {
        b.extend_from_slice(&attr_file_bytes(&e.attr, sz));
        b.extend_from_slice(&(e.ids.len() as u32).to_le_bytes());
        put_string(&mut b, &e.name);
        for id in &e.ids {
            b.extend_from_slice(&id.to_le_bytes());
        }
    }
    b
}

/// `struct perf_record_header_build_id` entries: header {type, misc, size}, pid,
/// build_id[24] (its length in byte 20 when misc has `BUILD_ID_SIZE`), then the
/// NUL-padded file name up to `header.size`.
fn parse_build_ids(c: &mut Cursor<'_>) -> Result<Vec<BuildIdEntry>> {
    let mut out = Vec::new();
    while c.remaining() > 0 {
        let at = c.pos;
        let hdr = c.take(8, "build id entry header")?;
        let misc = u16::from_le_bytes([hdr[4], hdr[5]]);
        let size = usize::from(u16::from_le_bytes([hdr[6], hdr[7]]));
        if size < BUILD_ID_ENTRY_FIXED {
            return Err(c.err(
                at,
                format!("entry size {size} is below the {BUILD_ID_ENTRY_FIXED} fixed bytes"),
            ));
        }
        if size - 8 > c.remaining() {
            return Err(c.err(
                at,
                format!(
                    "entry of {size} bytes, section has {} left",
                    c.remaining() + 8
                ),
            ));
        }
        let pid = c.u32("pid")? as i32;
        let raw = c.take(24, "build_id")?;
        let len = if misc & MISC_BUILD_ID_SIZE != 0 {
            usize::from(raw[BUILD_ID_MAX]).min(BUILD_ID_MAX)
        } else {
            BUILD_ID_MAX
        };
        let build_id = raw.get(..len).unwrap_or_default().to_vec();
        let name = c.take(size - BUILD_ID_ENTRY_FIXED, "filename")?;
        out.push(BuildIdEntry {
            pid,
            misc,
            build_id,
            filename: nul_terminated(name),
        });
    }
    Ok(out)
}

fn build_id_bytes(entries: &[BuildIdEntry]) -> Vec<u8> {
    let mut b = Vec::new();
    for e in entries {
        let name_len = (e.filename.len() + 1).next_multiple_of(NAME_ALIGN);
        let size = BUILD_ID_ENTRY_FIXED + name_len;
        let Ok(size16) = u16::try_from(size) else {
            continue; // a path longer than perf's entries can hold
        };
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&e.misc.to_le_bytes());
        b.extend_from_slice(&size16.to_le_bytes());
        b.extend_from_slice(&e.pid.to_le_bytes());
        let mut id = [0u8; 24];
        let n = e.build_id.len().min(BUILD_ID_MAX);
        id[..n].copy_from_slice(&e.build_id[..n]);
        if e.misc & MISC_BUILD_ID_SIZE != 0 {
            id[BUILD_ID_MAX] = n as u8;
        }
        b.extend_from_slice(&id);
        b.extend_from_slice(e.filename.as_bytes());
        b.resize(b.len() + (name_len - e.filename.len()), 0);
    }
    b
}

#[cfg(test)]
mod tests;
