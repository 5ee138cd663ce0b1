//! Hand-built records for every sample field and record type.

use hwprof_pmu::attr::{Attr, branch, read_format as rf, sample as st};

use super::*;

/// Builds a record: header then little-endian words.
#[derive(Default)]
struct B(Vec<u8>);

impl B {
    fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u16(mut self, v: u16) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
    /// The record, leaked so decoded records may borrow it for the whole test.
    fn rec(self, type_: u32, misc: u16) -> &'static [u8] {
        let mut v = Vec::new();
        v.extend_from_slice(&type_.to_le_bytes());
        v.extend_from_slice(&misc.to_le_bytes());
        v.extend_from_slice(&((self.0.len() + 8) as u16).to_le_bytes());
        v.extend_from_slice(&self.0);
        Box::leak(v.into_boxed_slice())
    }
}

fn attr(sample_type: u64) -> Attr {
    let mut a = Attr::new(1, 0);
    a.sample_type = sample_type;
    a
}

fn sample<'a>(d: &Decoder, b: &'a [u8]) -> Sample<'a> {
    match d.decode(b, 0).unwrap().body {
        Body::Sample(s) => s,
        b => panic!("not a sample: {b:?}"),
    }
}

#[test]
fn every_sample_field_in_kernel_order() {
    let mut a = attr(
        st::IDENTIFIER
            | st::IP
            | st::TID
            | st::TIME
            | st::ADDR
            | st::ID
            | st::STREAM_ID
            | st::CPU
            | st::PERIOD
            | st::READ
            | st::CALLCHAIN
            | st::RAW
            | st::BRANCH_STACK
            | st::REGS_USER
            | st::STACK_USER
            | st::WEIGHT_STRUCT
            | st::DATA_SRC
            | st::TRANSACTION
            | st::REGS_INTR
            | st::PHYS_ADDR
            | st::CGROUP
            | st::DATA_PAGE_SIZE
            | st::CODE_PAGE_SIZE
            | st::AUX,
    );
    a.read_format = rf::GROUP | rf::ID | rf::LOST | rf::TOTAL_TIME_ENABLED;
    a.branch_sample_type = branch::ANY | branch::HW_INDEX | branch::COUNTERS;
    a.sample_regs_user = 0b1011;
    a.sample_regs_intr = 0b1;
    let flags: u64 = 1 | 1 << 2 | 37 << 4 | 5 << 20 | 2 << 24 | 3 << 26 | 6 << 30;
    let rec = B::default()
        .u64(99) // identifier
        .u64(0x1000) // ip
        .u32(10)
        .u32(11) // pid tid
        .u64(123456) // time
        .u64(0xdead) // addr
        .u64(99) // id
        .u64(98) // stream id
        .u32(3)
        .u32(0) // cpu res
        .u64(4000) // period
        .u64(2) // read: nr
        .u64(555) // time_enabled
        .u64(1) // value, id, lost
        .u64(99)
        .u64(0)
        .u64(2)
        .u64(100)
        .u64(7)
        .u64(3) // callchain nr
        .u64(context::KERNEL)
        .u64(0xffff_ffff_8100_0000)
        .u64(0x2000)
        .u32(4) // raw size
        .bytes(&[1, 2, 3, 4])
        .u64(2) // branch nr
        .u64(17) // hw_idx
        .u64(0xa)
        .u64(0xb)
        .u64(flags)
        .u64(0xc)
        .u64(0xd)
        .u64(2) // entry 2: predicted
        .u64(40) // counters
        .u64(41)
        .u64(2) // regs user abi 64
        .u64(1)
        .u64(2)
        .u64(3)
        .u64(16) // stack size
        .bytes(&[7; 16])
        .u64(8) // dyn size
        .u64(0x0003_0002_0000_0064) // weight struct
        .u64(2 | (0x02 | 0x08) << 5) // data src: LOAD L1 hit
        .u64(0x77) // transaction
        .u64(0) // regs intr abi none: no regs
        .u64(0x1234_5000) // phys addr
        .u64(42) // cgroup
        .u64(4096)
        .u64(2 << 20)
        .u64(8) // aux size
        .bytes(&[9; 8])
        .rec(kind::SAMPLE, misc::USER);
    let d = Decoder::new(&[(a, vec![99])]);
    let s = sample(&d, rec);
    assert_eq!(s.identifier, Some(99));
    assert_eq!(s.ip, Some(0x1000));
    assert_eq!((s.pid, s.tid), (Some(10), Some(11)));
    assert_eq!(s.time, Some(123456));
    assert_eq!(s.addr, Some(0xdead));
    assert_eq!((s.id, s.stream_id), (Some(99), Some(98)));
    assert_eq!(s.cpu, Some(3));
    assert_eq!(s.period, Some(4000));
    let r = s.read.clone().unwrap();
    assert_eq!(r.time_enabled, Some(555));
    assert_eq!(r.time_running, None);
    assert_eq!(
        r.values,
        vec![
            ReadValue {
                value: 1,
                id: Some(99),
                lost: Some(0)
            },
            ReadValue {
                value: 2,
                id: Some(100),
                lost: Some(7)
            }
        ]
    );
    assert_eq!(
        s.callchain.unwrap().to_vec(),
        vec![context::KERNEL, 0xffff_ffff_8100_0000, 0x2000]
    );
    assert_eq!(s.raw, Some(&[1u8, 2, 3, 4][..]));
    let bs = s.branch_stack.unwrap();
    assert_eq!(bs.hw_idx, Some(17));
    let e: Vec<BranchEntry> = bs.iter().collect();
    assert_eq!(e.len(), 2);
    assert_eq!((e[0].from, e[0].to, e[0].counter), (0xa, 0xb, Some(40)));
    assert!(e[0].mispred() && !e[0].predicted() && e[0].in_tx() && !e[0].abort());
    assert_eq!(e[0].cycles(), 37);
    assert_eq!(
        (e[0].type_(), e[0].spec(), e[0].new_type(), e[0].priv_()),
        (5, 2, 3, 6)
    );
    assert!(e[1].predicted() && !e[1].mispred());
    assert_eq!(e[1].counter, Some(41));
    let ru = s.regs_user.unwrap();
    assert_eq!((ru.abi, ru.regs.to_vec()), (2, vec![1, 2, 3]));
    let su = s.stack_user.unwrap();
    assert_eq!((su.data.len(), su.dyn_size), (16, 8));
    assert_eq!(
        s.weight_struct,
        Some(WeightStruct {
            var1_dw: 100,
            var2_w: 2,
            var3_w: 3
        })
    );
    assert_eq!(s.weight, None);
    assert_eq!(s.perf_weight(), Some(100));
    assert_eq!(DataSrc::from_u64(s.data_src.unwrap()).level(), "L1 hit");
    assert_eq!(s.transaction, Some(0x77));
    assert_eq!(s.regs_intr.unwrap().abi, 0);
    assert!(s.regs_intr.unwrap().regs.is_empty());
    assert_eq!(s.phys_addr, Some(0x1234_5000));
    assert_eq!(s.cgroup, Some(42));
    assert_eq!(s.data_page_size, Some(4096));
    assert_eq!(s.code_page_size, Some(2 << 20));
    assert_eq!(s.aux, Some(&[9u8; 8][..]));

    // Every truncation is an error naming an offset inside the record, never a panic.
    for cut in 0..rec.len() {
        let mut short = rec[..cut].to_vec();
        if cut >= 8 {
            short[6..8].copy_from_slice(&(cut as u16).to_le_bytes());
        }
        match d.decode(&short, 0x1000) {
            Err(Error::Malformed { offset, .. }) => {
                assert!((0x1000..=0x1000 + cut as u64).contains(&offset), "{cut}")
            }
            other => panic!("cut {cut}: {other:?}"),
        }
    }
}

#[test]
fn plain_weight_read_single_and_stack_user_empty() {
    let mut a = attr(st::READ | st::STACK_USER | st::WEIGHT);
    a.read_format = rf::TOTAL_TIME_ENABLED | rf::TOTAL_TIME_RUNNING | rf::ID;
    let rec = B::default()
        .u64(5)
        .u64(10)
        .u64(9)
        .u64(77)
        .u64(0) // stack size 0: no data, no dyn_size
        .u64(321)
        .rec(kind::SAMPLE, 0);
    let d = Decoder::new(&[(a, vec![])]);
    let s = sample(&d, rec);
    assert_eq!(s.perf_weight(), Some(321));
    let r = s.read.unwrap();
    assert_eq!((r.time_enabled, r.time_running), (Some(10), Some(9)));
    assert_eq!(
        r.values,
        vec![ReadValue {
            value: 5,
            id: Some(77),
            lost: None
        }]
    );
    assert_eq!(s.stack_user.unwrap().data.len(), 0);
    assert_eq!(s.weight, Some(321));
}

/// perf's `perf_sample.weight`: WEIGHT when sampled, else WEIGHT_STRUCT's low 32 bits.
#[test]
fn perf_weight_is_weight_else_var1_dw() {
    let ws = Some(WeightStruct::from_u64(3 << 48 | 2 << 32 | 0xffff_fffe));
    let s = |weight, weight_struct| Sample {
        weight,
        weight_struct,
        ..Sample::default()
    };
    assert_eq!(s(None, None).perf_weight(), None);
    assert_eq!(s(None, ws).perf_weight(), Some(0xffff_fffe));
    assert_eq!(s(Some(1 << 40), None).perf_weight(), Some(1 << 40));
    assert_eq!(s(Some(0), ws).perf_weight(), Some(0));
}

#[test]
fn attr_found_by_id_for_samples_and_sample_id_trailers() {
    let t = st::IP | st::TID | st::TIME | st::ID | st::CPU | st::PERIOD;
    let mut a1 = attr(t);
    a1.sample_id_all = true;
    let mut a2 = a1.clone();
    a2.config = 1;
    a2.read_format = rf::ID;
    let d = Decoder::new(&[(a1, vec![1, 2]), (a2, vec![3])]);
    let s = B::default()
        .u64(0x10)
        .u32(1)
        .u32(2)
        .u64(1000)
        .u64(3)
        .u32(5)
        .u32(0)
        .u64(1)
        .rec(kind::SAMPLE, 0);
    let r = d.decode(s, 0).unwrap();
    assert_eq!(r.attr, Some(1));
    // A COMM with a trailer: pid tid time id cpu.
    let c = B::default()
        .u32(1)
        .u32(2)
        .bytes(b"cat\0\0\0\0\0")
        .u32(1)
        .u32(2)
        .u64(77)
        .u64(2)
        .u32(4)
        .u32(0)
        .rec(kind::COMM, misc::COMM_EXEC);
    let r = d.decode(c, 0).unwrap();
    assert_eq!(r.attr, Some(0));
    let sid = r.sample_id.unwrap();
    assert_eq!((sid.time, sid.id, sid.cpu), (Some(77), Some(2), Some(4)));
    assert_eq!(
        r.body,
        Body::Comm {
            pid: 1,
            tid: 2,
            comm: b"cat",
            exec: true
        }
    );
    // Unknown id: an error, not attr 0.
    let mut bad = s.to_vec();
    bad[8 + 24..8 + 32].copy_from_slice(&9u64.to_le_bytes());
    assert!(d.decode(&bad, 0).is_err());
}

#[test]
fn kernel_records() {
    let d = Decoder::new(&[(attr(st::IP), vec![])]);
    let r = d
        .decode(
            B::default()
                .u32(1)
                .u32(1)
                .u64(0x400000)
                .u64(0x1000)
                .u64(0)
                .bytes(&[3, 0, 0, 0])
                .bytes(&[3; 20])
                .u32(5)
                .u32(2)
                .bytes(b"/bin/x\0\0")
                .rec(kind::MMAP2, misc::USER | misc::MMAP_BUILD_ID),
            0,
        )
        .unwrap();
    let Body::Mmap2(m) = r.body else {
        panic!("{r:?}")
    };
    // build_id_size = 3 (first byte of the union).
    assert_eq!(m.file_id, FileId::BuildId(&[3, 3, 3]));
    assert_eq!((m.prot, m.flags, m.filename), (5, 2, &b"/bin/x"[..]));
    let r = d
        .decode(B::default().u64(1).u64(2).rec(kind::LOST, 0), 0)
        .unwrap();
    assert_eq!(r.body, Body::Lost { id: 1, lost: 2 });
    let r = d
        .decode(
            B::default()
                .u32(1)
                .u32(2)
                .u32(3)
                .u32(4)
                .u64(5)
                .rec(kind::FORK, 0),
            0,
        )
        .unwrap();
    assert_eq!(
        r.body,
        Body::Fork(Task {
            pid: 1,
            ppid: 2,
            tid: 3,
            ptid: 4,
            time: 5
        })
    );
    let r = d
        .decode(
            B::default()
                .u64(0xffff)
                .u16(1)
                .u16(2)
                .bytes(&[1, 2, 3, 0, 0, 0, 0, 0])
                .rec(kind::TEXT_POKE, 0),
            0,
        )
        .unwrap();
    assert_eq!(
        r.body,
        Body::TextPoke {
            addr: 0xffff,
            old: &[1],
            new: &[2, 3]
        }
    );
    let r = d
        .decode(B::default().rec(kind::SWITCH, misc::SWITCH_OUT), 0)
        .unwrap();
    assert_eq!(
        r.body,
        Body::Switch {
            out: true,
            preempt: false
        }
    );
    let r = d
        .decode(
            B::default()
                .u32(1)
                .u32(2)
                .u64(1)
                .u64(3)
                .u64(4)
                .rec(kind::NAMESPACES, 0),
            0,
        )
        .unwrap();
    let Body::Namespaces { link_info, .. } = r.body else {
        panic!()
    };
    assert_eq!(link_info.to_vec(), vec![3, 4]);
}

#[test]
fn user_records() {
    let d = Decoder::default();
    let mut a = attr(st::IP | st::TID);
    a.sample_period = 4000;
    let r = d
        .decode(
            B::default()
                .bytes(&a.to_bytes())
                .u64(7)
                .u64(8)
                .rec(kind::HEADER_ATTR, 0),
            0,
        )
        .unwrap();
    let Body::HeaderAttr { attr: got, ids } = r.body else {
        panic!()
    };
    assert_eq!(*got, a);
    assert_eq!(ids.to_vec(), vec![7, 8]);
    let r = d
        .decode(
            B::default().u64(31).u64(5).u64(6).rec(kind::TIME_CONV, 0),
            0,
        )
        .unwrap();
    assert_eq!(
        r.body,
        Body::TimeConv(TimeConv {
            time_shift: 31,
            time_mult: 5,
            time_zero: 6,
            ..TimeConv::default()
        })
    );
    let r = d
        .decode(
            B::default()
                .u64(1)
                .u64(10)
                .u64(0)
                .u64(2)
                .u64(3)
                .rec(kind::ID_INDEX, 0),
            0,
        )
        .unwrap();
    assert_eq!(
        r.body,
        Body::IdIndex(vec![IdIndexEntry {
            id: 10,
            idx: 0,
            cpu: 2,
            tid: 3
        }])
    );
    // An id index claiming more entries than it holds.
    assert!(
        d.decode(B::default().u64(2).u64(1).rec(kind::ID_INDEX, 0), 0)
            .is_err()
    );
    let r = d
        .decode(B::default().rec(kind::FINISHED_ROUND, 0), 0)
        .unwrap();
    assert_eq!(r.body, Body::FinishedRound);
    let r = d
        .decode(
            B::default()
                .u64(3)
                .bytes(b"abc\0")
                .rec(kind::HEADER_FEATURE, 0),
            0,
        )
        .unwrap();
    assert_eq!(
        r.body,
        Body::HeaderFeature {
            feature: 3,
            data: b"abc\0"
        }
    );
    let r = d
        .decode(
            B::default()
                .u64(3)
                .bytes(&[1, 2, 3, 0, 0, 0, 0, 0])
                .rec(kind::COMPRESSED2, 0),
            0,
        )
        .unwrap();
    assert_eq!(r.body, Body::Compressed { data: &[1, 2, 3] });
    assert_eq!(kind::name(kind::COMPRESSED2), Some("compressed2"));
    assert_eq!(kind::name(kind::SAMPLE), Some("sample"));
    assert_eq!(kind::name(30), None);
    // A kernel record before any attr.
    assert!(
        d.decode(B::default().u64(1).rec(kind::SAMPLE, 0), 4)
            .is_err()
    );
    // Bad sizes.
    assert!(d.decode(&[1, 0, 0, 0, 0, 0, 4, 0], 0).is_err());
    assert!(d.decode(&[1, 0, 0, 0, 0, 0, 16, 0], 0).is_err());
    assert!(d.decode(&[1, 0, 0], 0).is_err());
}
