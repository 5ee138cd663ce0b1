//! [`unwound_sample`] against the decoder: samples built for many `sample_type`s, read
//! back under [`unwound_attr`], keep every field but the callchain's user part.

use hwprof_pmu::attr::{Attr, branch, read_format as rf, sample as st};

use super::*;
use crate::record::{Body, Decoder, Sample, misc};

/// The optional fields mixed into the generated samples (`CALLCHAIN`, `REGS_USER` and
/// `STACK_USER` are chosen separately). `WEIGHT` and `WEIGHT_STRUCT` are one choice:
/// with both bits the kernel writes the struct.
const OPTIONAL: [u64; 22] = [
    st::IDENTIFIER,
    st::IP,
    st::TID,
    st::TIME,
    st::ADDR,
    st::ID,
    st::STREAM_ID,
    st::CPU,
    st::PERIOD,
    st::READ,
    st::RAW,
    st::BRANCH_STACK,
    st::WEIGHT,
    st::WEIGHT_STRUCT,
    st::DATA_SRC,
    st::TRANSACTION,
    st::REGS_INTR,
    st::PHYS_ADDR,
    st::CGROUP,
    st::DATA_PAGE_SIZE,
    st::CODE_PAGE_SIZE,
    st::AUX,
];

const KERNEL_IP: u64 = 0xffff_ffff_8100_1234;

/// A sample for `attr` with a distinct value in every field, `chain` as its callchain
/// and `raw_len` bytes of raw data, encoded in the kernel's order.
fn encode(attr: &Attr, chain: &[u64], raw_len: usize) -> Vec<u8> {
    let t = attr.sample_type;
    let mut b: Vec<u8> = Vec::new();
    let w = |b: &mut Vec<u8>, v: u64| b.extend_from_slice(&v.to_le_bytes());
    let has = |bit: u64| t & bit != 0;
    if has(st::IDENTIFIER) {
        w(&mut b, 7);
    }
    if has(st::IP) {
        w(&mut b, 0x40_1000);
    }
    if has(st::TID) {
        w(&mut b, 0x0000_0065_0000_0064); // pid 100, tid 101
    }
    for (bit, v) in [
        (st::TIME, 123_456_789),
        (st::ADDR, 0xdead_beef),
        (st::ID, 7),
        (st::STREAM_ID, 8),
        (st::CPU, 0x0000_0000_0000_0003),
        (st::PERIOD, 250_000),
    ] {
        if has(bit) {
            w(&mut b, v);
        }
    }
    if has(st::READ) {
        let f = attr.read_format;
        let group = f & rf::GROUP != 0;
        let n = if group { 2 } else { 1 };
        if group {
            w(&mut b, n);
        } else {
            w(&mut b, 1111);
        }
        if f & rf::TOTAL_TIME_ENABLED != 0 {
            w(&mut b, 555);
        }
        if f & rf::TOTAL_TIME_RUNNING != 0 {
            w(&mut b, 444);
        }
        for i in 0..n {
            if group {
                w(&mut b, 1000 + i);
            }
            if f & rf::ID != 0 {
                w(&mut b, 7 + i);
            }
            if f & rf::LOST != 0 {
                w(&mut b, i);
            }
        }
    }
    if has(st::CALLCHAIN) {
        w(&mut b, chain.len() as u64);
        chain.iter().for_each(|&c| w(&mut b, c));
    }
    if has(st::RAW) {
        // The kernel pads the raw data so that its u32 size and it end 8-aligned.
        let padded = (4 + raw_len).next_multiple_of(8) - 4;
        b.extend_from_slice(&(padded as u32).to_le_bytes());
        b.extend((0..padded).map(|i| (i % 251) as u8));
    }
    if has(st::BRANCH_STACK) {
        let bst = attr.branch_sample_type;
        w(&mut b, 2);
        if bst & branch::HW_INDEX != 0 {
            w(&mut b, 17);
        }
        for v in [0xa, 0xb, 0x35, 0xc, 0xd, 0x2] {
            w(&mut b, v);
        }
        if bst & branch::COUNTERS != 0 {
            w(&mut b, 40);
            w(&mut b, 41);
        }
    }
    if has(st::REGS_USER) {
        w(&mut b, 2); // PERF_SAMPLE_REGS_ABI_64
        for i in 0..attr.sample_regs_user.count_ones() {
            w(&mut b, 0x7ffc_0000 + u64::from(i));
        }
    }
    if has(st::STACK_USER) {
        let size = u64::from(attr.sample_stack_user);
        w(&mut b, size);
        b.extend((0..size).map(|i| (i * 7) as u8));
        if size != 0 {
            w(&mut b, size / 2);
        }
    }
    if has(st::WEIGHT_STRUCT) || has(st::WEIGHT) {
        w(&mut b, 0x0003_0002_0000_0064);
    }
    for (bit, v) in [
        (st::DATA_SRC, 0x0000_0000_0000_0142),
        (st::TRANSACTION, 0x77),
    ] {
        if has(bit) {
            w(&mut b, v);
        }
    }
    if has(st::REGS_INTR) {
        w(&mut b, 2);
        for i in 0..attr.sample_regs_intr.count_ones() {
            w(&mut b, 0xffff_0000 + u64::from(i));
        }
    }
    for (bit, v) in [
        (st::PHYS_ADDR, 0x1234_5000),
        (st::CGROUP, 42),
        (st::DATA_PAGE_SIZE, 4096),
        (st::CODE_PAGE_SIZE, 2 << 20),
    ] {
        if has(bit) {
            w(&mut b, v);
        }
    }
    if has(st::AUX) {
        w(&mut b, 16);
        b.extend_from_slice(b"aux data 16 byte");
    }
    let mut rec = Vec::with_capacity(8 + b.len());
    rec.extend_from_slice(&kind::SAMPLE.to_le_bytes());
    rec.extend_from_slice(&misc::KERNEL.to_le_bytes());
    rec.extend_from_slice(&u16::try_from(8 + b.len()).expect("fits").to_le_bytes());
    rec.extend_from_slice(&b);
    rec
}

/// An attr as `--call-graph dwarf` sets it, plus `extra` sample bits.
fn dwarf_attr(extra: u64) -> Attr {
    let mut a = Attr::new(1, 0);
    a.sample_type = extra | st::CALLCHAIN | st::REGS_USER | st::STACK_USER;
    a.read_format = rf::GROUP | rf::ID | rf::LOST | rf::TOTAL_TIME_ENABLED;
    a.branch_sample_type = branch::ANY | branch::HW_INDEX | branch::COUNTERS;
    a.sample_regs_user = 0xff0fff;
    a.sample_stack_user = 64;
    a.sample_regs_intr = 0b101;
    a.exclude_callchain_user = true;
    a.sample_id_all = true;
    a
}

fn decoded<'a>(attr: &Attr, rec: &'a [u8]) -> Sample<'a> {
    match Decoder::new(&[(attr.clone(), vec![7, 8])]).decode(rec, 0) {
        Ok(r) => match r.body {
            Body::Sample(s) => s,
            b => panic!("not a sample: {b:?}"),
        },
        Err(e) => panic!("{e}"),
    }
}

/// `s` without the fields the rewrite changes.
fn kept_fields<'a>(s: &Sample<'a>) -> Sample<'a> {
    Sample {
        callchain: None,
        regs_user: None,
        stack_user: None,
        ..s.clone()
    }
}

/// Rewrites `rec` (made for `attr`) with `user`, checks every kept field and the
/// header, and returns the new callchain.
fn check(attr: &Attr, rec: &[u8], user: &[u64]) -> Vec<u64> {
    let mut out = vec![0xee; 3]; // cleared by the rewrite
    let kept = unwound_sample(attr, rec, user, &mut out).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kept, user.len());
    let new_attr = unwound_attr(attr);
    let (before, after) = (decoded(attr, rec), decoded(&new_attr, &out));
    assert_eq!(
        kept_fields(&before),
        kept_fields(&after),
        "{:#x}",
        attr.sample_type
    );
    assert_eq!((after.regs_user, after.stack_user), (None, None));
    assert_eq!(out.len(), usize::from(u16::from_le_bytes([out[6], out[7]])));
    assert_eq!(out[..6], rec[..6], "type and misc");
    assert_eq!(out.len() % 8, 0);
    after.callchain.expect("a callchain").to_vec()
}

#[test]
fn every_other_field_is_copied_for_many_sample_types() {
    let chain = [context::KERNEL, KERNEL_IP, KERNEL_IP + 8];
    let user = [0x40_1000, 0x40_2000, 0x40_3000];
    let want: Vec<u64> = chain
        .iter()
        .chain(&[context::USER])
        .chain(&user)
        .copied()
        .collect();
    // Every optional field at once, none, and 3000 mixes (a fixed xorshift sequence).
    let mut masks = vec![OPTIONAL.iter().fold(0, |m, b| m | b), 0];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..3000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        masks.push(
            OPTIONAL
                .iter()
                .enumerate()
                .filter(|(i, _)| x >> i & 1 == 1)
                .fold(0, |m, (_, b)| m | b),
        );
    }
    for (i, extra) in masks.into_iter().enumerate() {
        let mut attr = dwarf_attr(extra);
        // Vary the variable-size fields' shapes too.
        if i % 2 == 1 {
            attr.read_format = rf::ID | rf::TOTAL_TIME_RUNNING;
            attr.branch_sample_type = branch::ANY;
            attr.sample_stack_user = 0;
            attr.sample_regs_intr = 0;
        }
        let rec = encode(&attr, &chain, i % 13);
        assert_eq!(check(&attr, &rec, &user), want, "{extra:#x}");
        // The kernel's part alone when nothing was unwound.
        assert_eq!(check(&attr, &rec, &[]), chain, "{extra:#x}");
    }
}

#[test]
fn a_recorded_user_part_is_replaced() {
    let attr = dwarf_attr(st::IP | st::TID | st::TIME | st::PERIOD);
    let recorded = [
        context::KERNEL,
        KERNEL_IP,
        context::USER,
        0x40_9999,
        0x40_8888,
    ];
    let rec = encode(&attr, &recorded, 0);
    assert_eq!(
        check(&attr, &rec, &[0x40_1000]),
        [context::KERNEL, KERNEL_IP, context::USER, 0x40_1000]
    );
    assert_eq!(check(&attr, &rec, &[]), [context::KERNEL, KERNEL_IP]);
    // A user-mode sample: the callchain is the user part alone.
    let rec = encode(&attr, &[context::USER, 0x40_9999], 0);
    assert_eq!(check(&attr, &rec, &[]), Vec::<u64>::new());
    assert_eq!(
        check(&attr, &rec, &[0x40_1000, 0x40_2000]),
        [context::USER, 0x40_1000, 0x40_2000]
    );
}

#[test]
fn an_attr_without_callchain_gets_one() {
    let mut attr = dwarf_attr(st::IP | st::TID | st::TIME);
    attr.sample_type &= !st::CALLCHAIN;
    let rec = encode(&attr, &[], 0);
    assert_eq!(check(&attr, &rec, &[0x40_1000]), [context::USER, 0x40_1000]);
    assert_eq!(check(&attr, &rec, &[]), Vec::<u64>::new());
}

#[test]
fn the_callchain_is_capped_at_max_callchain_entries() {
    let attr = dwarf_attr(st::IP | st::TID);
    let chain = [context::KERNEL, KERNEL_IP, KERNEL_IP + 8];
    let rec = encode(&attr, &chain, 0);
    let user: Vec<u64> = (0..5000).map(|i| 0x40_0000 + 16 * i).collect();
    let mut out = Vec::new();
    let kept = unwound_sample(&attr, &rec, &user, &mut out).expect("rewrite");
    assert_eq!(kept, MAX_CALLCHAIN - chain.len() - 1);
    let s = decoded(&unwound_attr(&attr), &out);
    let got = s.callchain.expect("callchain").to_vec();
    assert_eq!(got.len(), MAX_CALLCHAIN);
    assert_eq!(
        got[..4],
        [context::KERNEL, KERNEL_IP, KERNEL_IP + 8, context::USER]
    );
    assert_eq!(got[4..], user[..kept], "the leaf-most frames are kept");
}

#[test]
fn the_record_stays_within_its_u16_size() {
    // A sample with 64000 bytes of raw data: room for a few hundred user addresses.
    let attr = dwarf_attr(st::IP | st::RAW | st::PERIOD);
    let rec = encode(&attr, &[context::KERNEL, KERNEL_IP], 64_000);
    let user: Vec<u64> = (0..1000).map(|i| 0x40_0000 + 16 * i).collect();
    let mut out = Vec::new();
    let kept = unwound_sample(&attr, &rec, &user, &mut out).expect("rewrite");
    assert!(kept > 0 && kept < user.len(), "{kept}");
    assert!(out.len() <= usize::from(u16::MAX) && out.len() + 8 > usize::from(u16::MAX));
    let s = decoded(&unwound_attr(&attr), &out);
    assert_eq!(
        s.raw.map(<[u8]>::len),
        decoded(&attr, &rec).raw.map(<[u8]>::len)
    );
    assert_eq!(s.callchain.expect("callchain").len(), 2 + 1 + kept);
}

#[test]
fn malformed_records_are_errors_and_leave_out_empty() {
    let attr = dwarf_attr(st::IP | st::TID | st::TIME | st::READ | st::RAW);
    let rec = encode(&attr, &[context::KERNEL, KERNEL_IP], 5);
    let mut out = Vec::new();
    // Every truncation (its header size patched to match): an error, never a panic.
    for cut in 0..rec.len() {
        let mut short = rec[..cut].to_vec();
        if cut >= 8 {
            short[6..8].copy_from_slice(&(cut as u16).to_le_bytes());
        }
        out.push(1);
        assert!(
            unwound_sample(&attr, &short, &[1, 2], &mut out).is_err(),
            "{cut}"
        );
        assert!(out.is_empty());
    }
    // A header longer than the bytes, and a record that is not a sample.
    assert!(unwound_sample(&attr, &rec[..rec.len() - 8], &[], &mut out).is_err());
    let mut comm = rec.clone();
    comm[..4].copy_from_slice(&kind::COMM.to_le_bytes());
    let e = unwound_sample(&attr, &comm, &[], &mut out).expect_err("not a sample");
    assert!(e.to_string().contains("not PERF_RECORD_SAMPLE"), "{e}");
    // A stack size the record cannot hold.
    let mut lying = dwarf_attr(st::IP);
    lying.sample_stack_user = 64;
    let mut rec = encode(&lying, &[], 0);
    let at = rec.len() - 64 - 16; // the stack's size word
    rec[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(unwound_sample(&lying, &rec, &[], &mut out).is_err());
}

#[test]
fn the_unwound_attr_samples_a_callchain_and_keeps_the_rest() {
    let mut a = dwarf_attr(st::IP | st::TID | st::TIME | st::ADDR | st::PERIOD | st::DATA_SRC);
    a.mmap_data = true;
    let u = unwound_attr(&a);
    assert_eq!(
        u.sample_type,
        st::IP | st::TID | st::TIME | st::ADDR | st::PERIOD | st::DATA_SRC | st::CALLCHAIN
    );
    assert_eq!((u.sample_regs_user, u.sample_stack_user), (0, 0));
    assert!(!u.exclude_callchain_user);
    let back = Attr {
        sample_type: a.sample_type,
        sample_regs_user: a.sample_regs_user,
        sample_stack_user: a.sample_stack_user,
        exclude_callchain_user: true,
        ..u.clone()
    };
    assert_eq!(back, a, "nothing else changes");
    // What places ids and sizes sample_id trailers is unchanged: other records need no
    // rewriting.
    for t in [
        a.sample_type,
        a.sample_type | st::ID | st::CPU | st::IDENTIFIER,
    ] {
        let u = unwound_attr(&Attr {
            sample_type: t,
            ..a.clone()
        });
        assert_eq!(
            super::super::sample::sample_id_size(t),
            super::super::sample::sample_id_size(u.sample_type)
        );
        assert_eq!(
            super::super::sample::id_pos(t),
            super::super::sample::id_pos(u.sample_type)
        );
        assert_eq!(
            super::super::sample::is_pos(t),
            super::super::sample::is_pos(u.sample_type)
        );
    }
}
