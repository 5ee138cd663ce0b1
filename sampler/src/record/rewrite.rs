//! Samples whose user stack was unwound while recording, rewritten into samples with an
//! ordinary callchain.
//!
//! With `--call-graph dwarf` the kernel writes into each sample its callchain without
//! the user part (`exclude_callchain_user`), the user registers (`REGS_USER`) and a copy
//! of the user stack (`STACK_USER`, 8 KiB by default). Once an unwinder has turned
//! registers and stack into return addresses, [`unwound_sample`] writes the sample as
//! the kernel would have written it under [`unwound_attr`]: the kernel's callchain,
//! then `PERF_CONTEXT_USER` and the user addresses, and no registers or stack. A file
//! of such samples is a tenth of the size or less and reads as an ordinary
//! frame-pointer recording in every tool (`perf report` shows the whole stacks).
//!
//! The invariant: every other field of the sample is copied byte for byte, so the
//! rewritten record decodes under [`unwound_attr`] to the same values as the original
//! under the kernel's attr. Records other than samples need no rewriting:
//! [`unwound_attr`] changes no bit that places the sample id (`id_pos`, `is_pos`) or
//! sizes the `sample_id` trailer.
//!
//! ```
//! use hwprof_pmu::attr::{Attr, sample};
//! use hwprof_sampler::record::{Body, Decoder, context, kind, rewrite};
//!
//! let mut attr = Attr::new(1, 0);
//! attr.sample_type = sample::IP | sample::CALLCHAIN | sample::REGS_USER | sample::STACK_USER;
//! attr.sample_regs_user = 0b1;
//! attr.sample_stack_user = 16;
//! attr.exclude_callchain_user = true;
//! // ip, callchain (nr 0), regs (abi 64, one register), stack (16 bytes, all valid)
//! let words: [u64; 8] = [0x401000, 0, 2, 0x7ffc_0000, 16, 0, 0, 16];
//! let mut rec = Vec::new();
//! rec.extend_from_slice(&kind::SAMPLE.to_le_bytes());
//! rec.extend_from_slice(&2u16.to_le_bytes()); // misc: user
//! rec.extend_from_slice(&(8 + 8 * words.len() as u16).to_le_bytes());
//! words.iter().for_each(|w| rec.extend_from_slice(&w.to_le_bytes()));
//!
//! let mut out = Vec::new();
//! let kept = rewrite::unwound_sample(&attr, &rec, &[0x401000, 0x401234], &mut out).unwrap();
//! assert_eq!(kept, 2);
//! let dec = Decoder::new(&[(rewrite::unwound_attr(&attr), vec![])]);
//! let Body::Sample(s) = dec.decode(&out, 0).unwrap().body else { panic!() };
//! assert_eq!(s.callchain.unwrap().to_vec(), [context::USER, 0x401000, 0x401234]);
//! assert!(s.regs_user.is_none() && s.stack_user.is_none());
//! ```

use std::ops::Range;

use hwprof_pmu::attr::{Attr, branch, sample as st};

use super::context;
use super::cursor::Cursor;
use super::kind;
use super::sample::{decode_read, decode_regs};
use crate::error::{Error, Result};

/// The most callchain entries (context markers included) [`unwound_sample`] writes:
/// the kernel's part whole, then as many user addresses as fit in this many. A deeper
/// stack keeps its leaf-most frames (hwprof's kernels stop at 127 frames per part,
/// `kernel.perf_event_max_stack`; perf shows at most `--max-stack` entries, 127 by
/// default, and reads any number). A record also stays within the 65535 bytes of a
/// record header's size: user addresses past that are left out too.
pub const MAX_CALLCHAIN: usize = 1024;

/// The attr that samples rewritten by [`unwound_sample`] follow, for the kernel's
/// `attr`: `REGS_USER` and `STACK_USER` dropped from `sample_type` (their register
/// mask and stack size set to 0), `CALLCHAIN` kept (added if absent), and the user
/// part of callchains no longer excluded (`exclude_callchain_user` false), so readers
/// take the user frames from the callchain. Every other field is kept.
pub fn unwound_attr(attr: &Attr) -> Attr {
    let mut a = attr.clone();
    a.sample_type = (a.sample_type | st::CALLCHAIN) & !(st::REGS_USER | st::STACK_USER);
    a.sample_regs_user = 0;
    a.sample_stack_user = 0;
    a.exclude_callchain_user = false;
    a
}

/// Writes into `out` (cleared first) the `PERF_RECORD_SAMPLE` `record` (its whole
/// bytes, header included, as produced under the kernel's `attr`) as it is under
/// [`unwound_attr`]`(attr)`, with `user` as the user part of its callchain.
///
/// The callchain becomes the entries of the recorded one before its first
/// `PERF_CONTEXT_USER` (the kernel's part with its context markers; a user part the
/// kernel recorded is dropped), then `PERF_CONTEXT_USER` and `user` (leaf first: the
/// user ip, then the return addresses), or nothing more when `user` is empty.
/// `user` is written as given: a stack an unwinder could not complete ends where the
/// unwinder says (with whatever mark it appends). The user registers and stack are
/// left out; every other field is copied byte for byte, and the header's size set.
/// `user` is cut to fit [`MAX_CALLCHAIN`] entries and the u16 record size.
///
/// Returns how many addresses of `user` were written. A record that is not a sample
/// or does not hold what `attr` says is [`Error::Malformed`] (offsets in the record);
/// `out` is then empty.
pub fn unwound_sample(
    attr: &Attr,
    record: &[u8],
    user: &[u64],
    out: &mut Vec<u8>,
) -> Result<usize> {
    out.clear();
    let (rec, at) = sample_layout(attr, record)?;
    let chain = rec.get(at.chain.clone()).unwrap_or_default();
    // Entries of the recorded callchain (after its nr word) before PERF_CONTEXT_USER.
    let kernel: &[u8] = chain.get(8..).unwrap_or_default();
    let kernel_n = kernel
        .chunks_exact(8)
        .position(|w| w == context::USER.to_le_bytes())
        .unwrap_or(kernel.len() / 8);
    let kernel = &kernel[..kernel_n * 8];

    let base = rec.len() - at.chain.len() - at.user.len();
    let words = (usize::from(u16::MAX) - base) / 8;
    let Some(room) = words.checked_sub(1 + kernel_n) else {
        return Err(Error::malformed(
            "sample",
            0,
            format!("a callchain does not fit in a record of {base} bytes"),
        ));
    };
    // The PERF_CONTEXT_USER marker takes one of the words and one of the entries.
    let n = user
        .len()
        .min(room.saturating_sub(1))
        .min(MAX_CALLCHAIN.saturating_sub(kernel_n + 1));
    let nr = kernel_n + if n > 0 { 1 + n } else { 0 };

    out.reserve(base + 8 * (1 + nr));
    out.extend_from_slice(&rec[..at.chain.start]);
    out.extend_from_slice(&(nr as u64).to_le_bytes());
    out.extend_from_slice(kernel);
    if n > 0 {
        out.extend_from_slice(&context::USER.to_le_bytes());
        for a in &user[..n] {
            out.extend_from_slice(&a.to_le_bytes());
        }
    }
    out.extend_from_slice(&rec[at.chain.end..at.user.start]);
    out.extend_from_slice(&rec[at.user.end..]);
    // Fits: base + 8 * (1 + nr) <= u16::MAX by the choice of n above.
    let size = u16::try_from(out.len()).unwrap_or(u16::MAX);
    out[6..8].copy_from_slice(&size.to_le_bytes());
    Ok(n)
}

/// Where one sample's rewritten fields lie, in bytes from the start of its record.
struct Layout {
    /// The callchain with its `nr` word (empty, where one goes, without `CALLCHAIN`).
    chain: Range<usize>,
    /// `REGS_USER` and `STACK_USER` together (empty, where they go, without them).
    user: Range<usize>,
}

/// The record (cut to its header's size) and its [`Layout`], by walking the fields in
/// the kernel's order (`perf_output_sample`) up to `STACK_USER`; what follows is
/// copied whole and needs no walking.
fn sample_layout<'a>(attr: &Attr, record: &'a [u8]) -> Result<(&'a [u8], Layout)> {
    let (type_, _, size) = super::peek_header(record).ok_or_else(|| {
        Error::malformed(
            "sample",
            0,
            format!("{} bytes, a header needs 8", record.len()),
        )
    })?;
    if type_ != kind::SAMPLE {
        return Err(Error::malformed(
            "sample",
            0,
            format!(
                "record type {type_} is not PERF_RECORD_SAMPLE ({})",
                kind::SAMPLE
            ),
        ));
    }
    let size = usize::from(size);
    let rec = record.get(..size).filter(|_| size >= 8).ok_or_else(|| {
        Error::malformed(
            "sample",
            0,
            format!("header size {size} for {} bytes", record.len()),
        )
    })?;
    let t = attr.sample_type;
    let mut c = Cursor::new(&rec[8..], 8, "sample");
    let at = |c: &Cursor<'_>| c.offset() as usize;
    let fixed = [
        st::IDENTIFIER,
        st::IP,
        st::TID,
        st::TIME,
        st::ADDR,
        st::ID,
        st::STREAM_ID,
        st::CPU,
        st::PERIOD,
    ]
    .iter()
    .filter(|&&b| t & b != 0)
    .count();
    c.bytes(8 * fixed)?;
    if t & st::READ != 0 {
        decode_read(&mut c, attr.read_format)?;
    }
    let chain_start = at(&c);
    if t & st::CALLCHAIN != 0 {
        let nr = c.u64()?;
        c.u64s(nr)?;
    }
    let chain = chain_start..at(&c);
    if t & st::RAW != 0 {
        let n = c.u32()?;
        c.bytes(n as usize)?;
    }
    if t & st::BRANCH_STACK != 0 {
        let bst = attr.branch_sample_type;
        let nr = c.u64()?;
        if bst & branch::HW_INDEX != 0 {
            c.u64()?;
        }
        let len = usize::try_from(nr)
            .ok()
            .and_then(|n| n.checked_mul(24))
            .ok_or_else(|| c.err(format!("branch stack of {nr} entries does not fit")))?;
        c.bytes(len)?;
        if bst & branch::COUNTERS != 0 {
            c.u64s(nr)?;
        }
    }
    let user_start = at(&c);
    if t & st::REGS_USER != 0 {
        decode_regs(&mut c, attr.sample_regs_user)?;
    }
    if t & st::STACK_USER != 0 {
        let size = c.u64()?;
        let len = usize::try_from(size)
            .map_err(|_| c.err(format!("user stack of {size} bytes does not fit")))?;
        c.bytes(len)?;
        if size != 0 {
            c.u64()?; // dyn_size
        }
    }
    let user = user_start..at(&c);
    Ok((rec, Layout { chain, user }))
}

#[cfg(test)]
mod tests;
