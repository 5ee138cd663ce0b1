//! `PERF_RECORD_SAMPLE` bodies and the `sample_id` trailer of other records, decoded in
//! the kernel's order (`perf_output_sample` in `kernel/events/core.c`) as the attr's
//! `sample_type`, `read_format` and `branch_sample_type` say.

use hwprof_pmu::attr::{Attr, branch, read_format as rf, sample as st};

use super::cursor::{Cursor, U64s};
use crate::error::Result;

/// `PERF_SAMPLE_*` fields of one sample; `None` when the attr does not sample the field.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sample<'a> {
    /// `PERF_SAMPLE_IDENTIFIER`.
    pub identifier: Option<u64>,
    /// `PERF_SAMPLE_IP`.
    pub ip: Option<u64>,
    /// `PERF_SAMPLE_TID`: pid.
    pub pid: Option<u32>,
    /// `PERF_SAMPLE_TID`: tid.
    pub tid: Option<u32>,
    /// `PERF_SAMPLE_TIME`.
    pub time: Option<u64>,
    /// `PERF_SAMPLE_ADDR`.
    pub addr: Option<u64>,
    /// `PERF_SAMPLE_ID`.
    pub id: Option<u64>,
    /// `PERF_SAMPLE_STREAM_ID`.
    pub stream_id: Option<u64>,
    /// `PERF_SAMPLE_CPU` (the `res` half is dropped).
    pub cpu: Option<u32>,
    /// `PERF_SAMPLE_PERIOD`.
    pub period: Option<u64>,
    /// `PERF_SAMPLE_READ`.
    pub read: Option<ReadValues>,
    /// `PERF_SAMPLE_CALLCHAIN`, context markers (`PERF_CONTEXT_*`) included as values.
    pub callchain: Option<U64s<'a>>,
    /// `PERF_SAMPLE_RAW` data (without its u32 size).
    pub raw: Option<&'a [u8]>,
    /// `PERF_SAMPLE_BRANCH_STACK`.
    pub branch_stack: Option<BranchStack<'a>>,
    /// `PERF_SAMPLE_REGS_USER`.
    pub regs_user: Option<Regs<'a>>,
    /// `PERF_SAMPLE_STACK_USER`.
    pub stack_user: Option<StackUser<'a>>,
    /// `PERF_SAMPLE_WEIGHT`.
    pub weight: Option<u64>,
    /// `PERF_SAMPLE_WEIGHT_STRUCT`.
    pub weight_struct: Option<WeightStruct>,
    /// `PERF_SAMPLE_DATA_SRC` (decode with [`super::DataSrc`]).
    pub data_src: Option<u64>,
    /// `PERF_SAMPLE_TRANSACTION`.
    pub transaction: Option<u64>,
    /// `PERF_SAMPLE_REGS_INTR`.
    pub regs_intr: Option<Regs<'a>>,
    /// `PERF_SAMPLE_PHYS_ADDR`.
    pub phys_addr: Option<u64>,
    /// `PERF_SAMPLE_CGROUP`.
    pub cgroup: Option<u64>,
    /// `PERF_SAMPLE_DATA_PAGE_SIZE`.
    pub data_page_size: Option<u64>,
    /// `PERF_SAMPLE_CODE_PAGE_SIZE`.
    pub code_page_size: Option<u64>,
    /// `PERF_SAMPLE_AUX` data.
    pub aux: Option<&'a [u8]>,
}

impl Sample<'_> {
    /// The sample's weight as perf reads it (`perf_sample.weight`): `PERF_SAMPLE_WEIGHT`,
    /// else `PERF_SAMPLE_WEIGHT_STRUCT`'s `var1_dw` (the load latency on x86); `None`
    /// when the attr samples neither.
    pub fn perf_weight(&self) -> Option<u64> {
        self.weight
            .or(self.weight_struct.map(|w| u64::from(w.var1_dw)))
    }
}

/// Counter values of `PERF_SAMPLE_READ` or a `PERF_RECORD_READ`, per `read_format`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadValues {
    /// `PERF_FORMAT_TOTAL_TIME_ENABLED`.
    pub time_enabled: Option<u64>,
    /// `PERF_FORMAT_TOTAL_TIME_RUNNING`.
    pub time_running: Option<u64>,
    /// One value, or one per group member with `PERF_FORMAT_GROUP`.
    pub values: Vec<ReadValue>,
}

/// One counter value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadValue {
    /// The count.
    pub value: u64,
    /// `PERF_FORMAT_ID`.
    pub id: Option<u64>,
    /// `PERF_FORMAT_LOST`.
    pub lost: Option<u64>,
}

/// `PERF_SAMPLE_WEIGHT_STRUCT`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WeightStruct {
    /// `var1_dw` (the latency on x86).
    pub var1_dw: u32,
    /// `var2_w` (instruction latency / retire latency).
    pub var2_w: u16,
    /// `var3_w`.
    pub var3_w: u16,
}

impl WeightStruct {
    /// Splits the u64 the kernel writes.
    pub fn from_u64(w: u64) -> Self {
        WeightStruct {
            var1_dw: w as u32,
            var2_w: (w >> 32) as u16,
            var3_w: (w >> 48) as u16,
        }
    }
}

/// `PERF_SAMPLE_REGS_USER` / `_INTR`: the ABI and one value per bit set in the mask.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Regs<'a> {
    /// `PERF_SAMPLE_REGS_ABI_*` (0 = none: no values follow).
    pub abi: u64,
    /// The attr's register mask (bit i set = register i present, in order).
    pub mask: u64,
    /// The values.
    pub regs: U64s<'a>,
}

/// `PERF_SAMPLE_STACK_USER`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StackUser<'a> {
    /// The copied stack (`size` bytes; only `dyn_size` of them are valid).
    pub data: &'a [u8],
    /// How many bytes the kernel really copied.
    pub dyn_size: u64,
}

/// `PERF_SAMPLE_BRANCH_STACK`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BranchStack<'a> {
    /// `hw_idx` when `branch_sample_type` has `PERF_SAMPLE_BRANCH_HW_INDEX`.
    pub hw_idx: Option<u64>,
    entries: &'a [u8],
    counters: Option<U64s<'a>>,
}

impl<'a> BranchStack<'a> {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len() / 24
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entries, most recent first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = BranchEntry> + 'a {
        let counters = self.counters;
        U64s::new(self.entries)
            .to_triples()
            .enumerate()
            .map(move |(i, (from, to, flags))| BranchEntry {
                from,
                to,
                flags,
                counter: counters.and_then(|c| c.get(i)),
            })
    }

    /// Builds a branch stack from raw entry bytes (24 per entry), for tests and writers.
    pub fn from_raw(hw_idx: Option<u64>, entries: &'a [u8], counters: Option<&'a [u8]>) -> Self {
        BranchStack {
            hw_idx,
            entries,
            counters: counters.map(U64s::new),
        }
    }
}

impl<'a> U64s<'a> {
    fn to_triples(self) -> impl ExactSizeIterator<Item = (u64, u64, u64)> + 'a {
        let b = self.as_bytes();
        b.chunks_exact(24).map(|c| {
            let w = U64s::new(c);
            (
                w.get(0).unwrap_or(0),
                w.get(1).unwrap_or(0),
                w.get(2).unwrap_or(0),
            )
        })
    }
}

/// One `perf_branch_entry`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BranchEntry {
    /// Source address.
    pub from: u64,
    /// Target address.
    pub to: u64,
    /// The flag word: mispred:1, predicted:1, in_tx:1, abort:1, cycles:16, type:4, spec:2,
    /// new_type:4, priv:3.
    pub flags: u64,
    /// The per-entry counters word with `PERF_SAMPLE_BRANCH_COUNTERS`.
    pub counter: Option<u64>,
}

impl BranchEntry {
    /// Mispredicted.
    pub fn mispred(&self) -> bool {
        self.flags & 1 != 0
    }
    /// Predicted.
    pub fn predicted(&self) -> bool {
        self.flags >> 1 & 1 != 0
    }
    /// In a transaction.
    pub fn in_tx(&self) -> bool {
        self.flags >> 2 & 1 != 0
    }
    /// Transaction abort.
    pub fn abort(&self) -> bool {
        self.flags >> 3 & 1 != 0
    }
    /// Cycles since the previous branch (0 = unknown).
    pub fn cycles(&self) -> u16 {
        (self.flags >> 4) as u16
    }
    /// `PERF_BR_*` type.
    pub fn type_(&self) -> u8 {
        (self.flags >> 20 & 0xf) as u8
    }
    /// `PERF_BR_SPEC_*`.
    pub fn spec(&self) -> u8 {
        (self.flags >> 24 & 0x3) as u8
    }
    /// `PERF_BR_NEW_*` type.
    pub fn new_type(&self) -> u8 {
        (self.flags >> 26 & 0xf) as u8
    }
    /// `PERF_BR_PRIV_*`.
    pub fn priv_(&self) -> u8 {
        (self.flags >> 30 & 0x7) as u8
    }
}

/// The `sample_id` trailer of non-sample records (`sample_id_all`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleId {
    /// pid (`PERF_SAMPLE_TID`).
    pub pid: Option<u32>,
    /// tid.
    pub tid: Option<u32>,
    /// `PERF_SAMPLE_TIME`.
    pub time: Option<u64>,
    /// `PERF_SAMPLE_ID`.
    pub id: Option<u64>,
    /// `PERF_SAMPLE_STREAM_ID`.
    pub stream_id: Option<u64>,
    /// `PERF_SAMPLE_CPU`.
    pub cpu: Option<u32>,
    /// `PERF_SAMPLE_IDENTIFIER`.
    pub identifier: Option<u64>,
}

/// Size in bytes of the `sample_id` trailer for `sample_type`.
pub(crate) fn sample_id_size(sample_type: u64) -> usize {
    [
        st::TID,
        st::TIME,
        st::ID,
        st::STREAM_ID,
        st::CPU,
        st::IDENTIFIER,
    ]
    .iter()
    .filter(|&&b| sample_type & b != 0)
    .count()
        * 8
}

#[inline(always)]
fn opt<T>(present: bool, f: impl FnOnce() -> Result<T>) -> Result<Option<T>> {
    if present { f().map(Some) } else { Ok(None) }
}

/// Decodes a `sample_id` trailer.
pub(crate) fn decode_sample_id(c: &mut Cursor<'_>, t: u64) -> Result<SampleId> {
    let mut s = SampleId::default();
    if t & st::TID != 0 {
        s.pid = Some(c.u32()?);
        s.tid = Some(c.u32()?);
    }
    s.time = opt(t & st::TIME != 0, || c.u64())?;
    s.id = opt(t & st::ID != 0, || c.u64())?;
    s.stream_id = opt(t & st::STREAM_ID != 0, || c.u64())?;
    if t & st::CPU != 0 {
        s.cpu = Some(c.u32()?);
        c.u32()?;
    }
    s.identifier = opt(t & st::IDENTIFIER != 0, || c.u64())?;
    Ok(s)
}

/// Decodes counter values per `read_format`.
pub(crate) fn decode_read(c: &mut Cursor<'_>, f: u64) -> Result<ReadValues> {
    let one = |c: &mut Cursor<'_>, value: u64| -> Result<ReadValue> {
        Ok(ReadValue {
            value,
            id: opt(f & rf::ID != 0, || c.u64())?,
            lost: opt(f & rf::LOST != 0, || c.u64())?,
        })
    };
    if f & rf::GROUP != 0 {
        let nr = c.u64()?;
        let time_enabled = opt(f & rf::TOTAL_TIME_ENABLED != 0, || c.u64())?;
        let time_running = opt(f & rf::TOTAL_TIME_RUNNING != 0, || c.u64())?;
        let per = 8 * (1 + usize::from(f & rf::ID != 0) + usize::from(f & rf::LOST != 0));
        if nr > (c.remaining() / per) as u64 {
            return Err(c.err(format!("read group of {nr} values does not fit")));
        }
        let mut values = Vec::with_capacity(nr as usize);
        for _ in 0..nr {
            let v = c.u64()?;
            values.push(one(c, v)?);
        }
        Ok(ReadValues {
            time_enabled,
            time_running,
            values,
        })
    } else {
        let value = c.u64()?;
        let time_enabled = opt(f & rf::TOTAL_TIME_ENABLED != 0, || c.u64())?;
        let time_running = opt(f & rf::TOTAL_TIME_RUNNING != 0, || c.u64())?;
        let v = one(c, value)?;
        Ok(ReadValues {
            time_enabled,
            time_running,
            values: vec![v],
        })
    }
}

pub(super) fn decode_regs<'a>(c: &mut Cursor<'a>, mask: u64) -> Result<Regs<'a>> {
    let abi = c.u64()?;
    let regs = if abi == 0 {
        U64s::default()
    } else {
        c.u64s(u64::from(mask.count_ones()))?
    };
    Ok(Regs { abi, mask, regs })
}

/// Decodes a sample body (after the 8-byte header) for `attr` into `s` (a default
/// sample: the fields `attr` does not sample stay `None`). In place: a sample is some
/// 500 bytes, and a replay decodes a million of them.
pub(crate) fn decode_sample<'a>(c: &mut Cursor<'a>, attr: &Attr, s: &mut Sample<'a>) -> Result<()> {
    let t = attr.sample_type;
    s.identifier = opt(t & st::IDENTIFIER != 0, || c.u64())?;
    s.ip = opt(t & st::IP != 0, || c.u64())?;
    if t & st::TID != 0 {
        s.pid = Some(c.u32()?);
        s.tid = Some(c.u32()?);
    }
    s.time = opt(t & st::TIME != 0, || c.u64())?;
    s.addr = opt(t & st::ADDR != 0, || c.u64())?;
    s.id = opt(t & st::ID != 0, || c.u64())?;
    s.stream_id = opt(t & st::STREAM_ID != 0, || c.u64())?;
    if t & st::CPU != 0 {
        s.cpu = Some(c.u32()?);
        c.u32()?;
    }
    s.period = opt(t & st::PERIOD != 0, || c.u64())?;
    s.read = opt(t & st::READ != 0, || decode_read(c, attr.read_format))?;
    if t & st::CALLCHAIN != 0 {
        let nr = c.u64()?;
        s.callchain = Some(c.u64s(nr)?);
    }
    if t & st::RAW != 0 {
        let n = c.u32()?;
        s.raw = Some(c.bytes(n as usize)?);
    }
    if t & st::BRANCH_STACK != 0 {
        let bst = attr.branch_sample_type;
        let nr = c.u64()?;
        let hw_idx = opt(bst & branch::HW_INDEX != 0, || c.u64())?;
        let len = usize::try_from(nr)
            .ok()
            .and_then(|n| n.checked_mul(24))
            .filter(|&l| l <= c.remaining())
            .ok_or_else(|| c.err(format!("branch stack of {nr} entries does not fit")))?;
        let entries = c.bytes(len)?;
        let counters = if bst & branch::COUNTERS != 0 {
            Some(c.u64s(nr)?)
        } else {
            None
        };
        s.branch_stack = Some(BranchStack {
            hw_idx,
            entries,
            counters,
        });
    }
    s.regs_user = opt(t & st::REGS_USER != 0, || {
        decode_regs(c, attr.sample_regs_user)
    })?;
    if t & st::STACK_USER != 0 {
        let size = c.u64()?;
        let data = usize::try_from(size)
            .ok()
            .filter(|&l| l <= c.remaining())
            .ok_or_else(|| c.err(format!("user stack of {size} bytes does not fit")))?;
        let data = c.bytes(data)?;
        let dyn_size = if size != 0 { c.u64()? } else { 0 };
        s.stack_user = Some(StackUser { data, dyn_size });
    }
    if t & st::WEIGHT_STRUCT != 0 {
        s.weight_struct = Some(WeightStruct::from_u64(c.u64()?));
    } else if t & st::WEIGHT != 0 {
        s.weight = Some(c.u64()?);
    }
    s.data_src = opt(t & st::DATA_SRC != 0, || c.u64())?;
    s.transaction = opt(t & st::TRANSACTION != 0, || c.u64())?;
    s.regs_intr = opt(t & st::REGS_INTR != 0, || {
        decode_regs(c, attr.sample_regs_intr)
    })?;
    s.phys_addr = opt(t & st::PHYS_ADDR != 0, || c.u64())?;
    s.cgroup = opt(t & st::CGROUP != 0, || c.u64())?;
    s.data_page_size = opt(t & st::DATA_PAGE_SIZE != 0, || c.u64())?;
    s.code_page_size = opt(t & st::CODE_PAGE_SIZE != 0, || c.u64())?;
    if t & st::AUX != 0 {
        let n = c.u64()?;
        let n = usize::try_from(n)
            .ok()
            .filter(|&l| l <= c.remaining())
            .ok_or_else(|| c.err(format!("aux sample of {n} bytes does not fit")))?;
        s.aux = Some(c.bytes(n)?);
    }
    Ok(())
}

/// Index (in u64 words after the header) of the sample's id, as perf's `id_pos`.
pub(crate) fn id_pos(t: u64) -> Option<usize> {
    if t & st::IDENTIFIER != 0 {
        return Some(0);
    }
    if t & st::ID == 0 {
        return None;
    }
    Some(
        [st::IP, st::TID, st::TIME, st::ADDR]
            .iter()
            .filter(|&&b| t & b != 0)
            .count(),
    )
}

/// Index (in u64 words from the end) of the id in a `sample_id` trailer, as perf's
/// `is_pos` (1 = the last word).
pub(crate) fn is_pos(t: u64) -> Option<usize> {
    if t & st::IDENTIFIER != 0 {
        return Some(1);
    }
    if t & st::ID == 0 {
        return None;
    }
    Some(
        1 + [st::CPU, st::STREAM_ID]
            .iter()
            .filter(|&&b| t & b != 0)
            .count(),
    )
}
