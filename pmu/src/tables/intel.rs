//! Built-in Intel event tables: the named events performance engineers reach for on each
//! model (pipeline, TopDown level 1, caches, DRAM fills, TLBs, branches, PEBS load latency),
//! stored as the format terms they stand for.
//!
//! Where the codes come from (no code here is made up):
//! - Skylake, Skylake-X, Ice Lake and Sapphire Rapids: Intel's perfmon core event files
//!   (`SKL/events/skylake_core.json`, `SKX/events/skylakex_core.json`,
//!   `ICL/events/icelake_core.json`, `SPR/events/sapphirerapids_core.json`). The terms are
//!   exactly what [`super::load_perfmon_json`] makes of those entries, and
//!   `tests/tables.rs` checks every row against the files.
//! - Alder Lake: the Linux kernel's `tools/perf/pmu-events/arch/x86/alderlake/`
//!   (`pipeline.json`, `cache.json`, `memory.json`, `virtual-memory.json`), split by their
//!   `Unit` into `cpu_core` (Golden Cove) and `cpu_atom` (Gracemont) rows.
//! - `PERF_METRICS.*`: these TopDown level-1 pseudo-events are not entries of the perfmon
//!   event files (their TMA metric files name them). Their encoding is the kernel's, from
//!   the `topdown-*` sysfs aliases in `arch/x86/events/intel/core.c`
//!   (`topdown-retiring` = `event=0x00,umask=0x80`, then `bad-spec` 0x81, `fe-bound` 0x82,
//!   `be-bound` 0x83). The kernel only accepts them in a group led by `TOPDOWN.SLOTS`.
//!
//! Skylake and Skylake-X have no PERF_METRICS: their TopDown rows are the inputs of the
//! 4-wide slot formula (cycles, issued and retired slots, undelivered slots, recovery cycles).

use super::Category::{self, *};
use super::NamedEvent;

/// A row of a non-hybrid model (`cpu` PMU).
const fn ev(
    name: &'static str,
    terms: &'static str,
    category: Category,
    precise: bool,
    desc: &'static str,
) -> NamedEvent {
    NamedEvent {
        name,
        pmu: "cpu",
        terms,
        category,
        precise,
        desc,
    }
}

/// A Golden Cove row of Alder Lake (`cpu_core` PMU).
const fn core(
    name: &'static str,
    terms: &'static str,
    category: Category,
    precise: bool,
    desc: &'static str,
) -> NamedEvent {
    NamedEvent {
        name,
        pmu: "cpu_core",
        terms,
        category,
        precise,
        desc,
    }
}

/// A Gracemont row of Alder Lake (`cpu_atom` PMU).
const fn atom(
    name: &'static str,
    terms: &'static str,
    category: Category,
    precise: bool,
    desc: &'static str,
) -> NamedEvent {
    NamedEvent {
        name,
        pmu: "cpu_atom",
        terms,
        category,
        precise,
        desc,
    }
}

/// Skylake client (and Kaby/Coffee/Comet Lake), from perfmon `skylake_core.json`.
#[rustfmt::skip]
pub const SKYLAKE: &[NamedEvent] = &[
    // Pipeline
    ev("INST_RETIRED.ANY", "event=0x0,umask=0x1", Pipeline, false, "Instructions retired from execution."),
    ev("INST_RETIRED.ANY_P", "event=0xc0", Pipeline, false, "Number of instructions retired. General Counter - architectural event"),
    ev("CPU_CLK_UNHALTED.THREAD_P", "event=0x3c", Pipeline, false, "Thread cycles when thread is not in halt state"),
    ev("CPU_CLK_UNHALTED.REF_TSC", "event=0x0,umask=0x3", Pipeline, false, "Reference cycles when the core is not in halt state."),
    ev("UOPS_EXECUTED.THREAD", "event=0xb1,umask=0x1", Pipeline, false, "Counts the number of uops to be executed per-thread each cycle."),
    ev("CYCLE_ACTIVITY.STALLS_TOTAL", "event=0xa3,umask=0x4,cmask=0x4", Pipeline, false, "Total execution stalls."),
    ev("MEM_INST_RETIRED.ALL_LOADS", "event=0xd0,umask=0x81", Pipeline, true, "Retired load instructions."),
    ev("MEM_INST_RETIRED.ALL_STORES", "event=0xd0,umask=0x82", Pipeline, true, "Retired store instructions."),
    ev("MACHINE_CLEARS.COUNT", "event=0xc3,umask=0x1,edge=1,cmask=0x1", Pipeline, false, "Number of machine clears (nukes) of any type."),
    // TopDown
    ev("CPU_CLK_UNHALTED.THREAD", "event=0x0,umask=0x2", TopDown, false, "Core cycles when the thread is not in halt state"),
    ev("CPU_CLK_UNHALTED.THREAD_ANY", "event=0x0,umask=0x2,any=1", TopDown, false, "Core cycles when at least one thread on the physical core is not in halt state."),
    ev("UOPS_ISSUED.ANY", "event=0xe,umask=0x1", TopDown, false, "Uops that Resource Allocation Table (RAT) issues to Reservation Station (RS)"),
    ev("UOPS_RETIRED.RETIRE_SLOTS", "event=0xc2,umask=0x2", TopDown, false, "Retirement slots used."),
    ev("IDQ_UOPS_NOT_DELIVERED.CORE", "event=0x9c,umask=0x1", TopDown, false, "Uops not delivered to Resource Allocation Table (RAT) per thread when backend of the machine is not stalled"),
    ev("INT_MISC.RECOVERY_CYCLES", "event=0xd,umask=0x1", TopDown, false, "Core cycles the allocator was stalled due to recovery from earlier clear event for this thread"),
    ev("INT_MISC.RECOVERY_CYCLES_ANY", "event=0xd,umask=0x1,any=1", TopDown, false, "Core cycles the allocator was stalled due to recovery from earlier clear event for any thread on the core"),
    // Cache
    ev("L1D.REPLACEMENT", "event=0x51,umask=0x1", Cache, false, "L1D data line replacements"),
    ev("MEM_LOAD_RETIRED.L1_MISS", "event=0xd1,umask=0x8", Cache, true, "Retired load instructions missed L1 cache as data sources"),
    ev("MEM_LOAD_RETIRED.L2_HIT", "event=0xd1,umask=0x2", Cache, true, "Retired load instructions with L2 cache hits as data sources"),
    ev("MEM_LOAD_RETIRED.L2_MISS", "event=0xd1,umask=0x10", Cache, true, "Retired load instructions missed L2 cache as data sources"),
    ev("MEM_LOAD_RETIRED.L3_HIT", "event=0xd1,umask=0x4", Cache, true, "Retired load instructions with L3 cache hits as data sources"),
    ev("MEM_LOAD_RETIRED.L3_MISS", "event=0xd1,umask=0x20", Cache, true, "Retired load instructions missed L3 cache as data sources"),
    ev("MEM_LOAD_L3_HIT_RETIRED.XSNP_HITM", "event=0xd2,umask=0x4", Cache, true, "Retired load instructions which data sources were HitM responses from shared L3"),
    ev("L2_RQSTS.REFERENCES", "event=0x24,umask=0xff", Cache, false, "All L2 requests"),
    ev("L2_RQSTS.MISS", "event=0x24,umask=0x3f", Cache, false, "All requests that miss L2 cache"),
    ev("L2_RQSTS.ALL_DEMAND_DATA_RD", "event=0x24,umask=0xe1", Cache, false, "Demand Data Read requests"),
    ev("L2_RQSTS.DEMAND_DATA_RD_MISS", "event=0x24,umask=0x21", Cache, false, "Demand Data Read miss L2, no rejects"),
    ev("LONGEST_LAT_CACHE.REFERENCE", "event=0x2e,umask=0x4f", Cache, false, "Core-originated cacheable demand requests that refer to L3"),
    ev("LONGEST_LAT_CACHE.MISS", "event=0x2e,umask=0x41", Cache, false, "Core-originated cacheable demand requests missed L3"),
    ev("CYCLE_ACTIVITY.STALLS_L1D_MISS", "event=0xa3,umask=0xc,cmask=0xc", Cache, false, "Execution stalls while L1 cache miss demand load is outstanding."),
    ev("CYCLE_ACTIVITY.STALLS_L2_MISS", "event=0xa3,umask=0x5,cmask=0x5", Cache, false, "Execution stalls while L2 cache miss demand load is outstanding."),
    // Memory
    ev("CYCLE_ACTIVITY.STALLS_L3_MISS", "event=0xa3,umask=0x6,cmask=0x6", Memory, false, "Execution stalls while L3 cache miss demand load is outstanding."),
    ev("OFFCORE_REQUESTS.L3_MISS_DEMAND_DATA_RD", "event=0xb0,umask=0x10", Memory, false, "Demand Data Read requests who miss L3 cache"),
    ev("OFFCORE_REQUESTS_OUTSTANDING.L3_MISS_DEMAND_DATA_RD", "event=0x60,umask=0x10", Memory, false, "Counts number of Offcore outstanding Demand Data Read requests that miss L3 cache in the superQ every cycle."),
    ev("OFFCORE_RESPONSE.DEMAND_DATA_RD.L3_MISS.ANY_SNOOP", "event=0xb7,umask=0x1,offcore_rsp=0x3ffc400001", Memory, false, "Counts demand data reads that miss in the L3 (any snoop response)"),
    ev("OFFCORE_RESPONSE.DEMAND_DATA_RD.L3_MISS_LOCAL_DRAM.ANY_SNOOP", "event=0xb7,umask=0x1,offcore_rsp=0x3fc4000001", Memory, false, "Counts demand data reads that miss the L3 and are served from local DRAM"),
    // LoadLatency
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4", "event=0xcd,umask=0x1,ldlat=0x4", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 4 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_8", "event=0xcd,umask=0x1,ldlat=0x8", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 8 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_16", "event=0xcd,umask=0x1,ldlat=0x10", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 16 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_32", "event=0xcd,umask=0x1,ldlat=0x20", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 32 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_64", "event=0xcd,umask=0x1,ldlat=0x40", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 64 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_128", "event=0xcd,umask=0x1,ldlat=0x80", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 128 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_256", "event=0xcd,umask=0x1,ldlat=0x100", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 256 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_512", "event=0xcd,umask=0x1,ldlat=0x200", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 512 cycles."),
    // Tlb
    ev("DTLB_LOAD_MISSES.WALK_COMPLETED", "event=0x8,umask=0xe", Tlb, false, "Load miss in all TLB levels causes a page walk that completes. (All page sizes)"),
    ev("DTLB_LOAD_MISSES.STLB_HIT", "event=0x8,umask=0x20", Tlb, false, "Loads that miss the DTLB and hit the STLB."),
    ev("DTLB_STORE_MISSES.WALK_COMPLETED", "event=0x49,umask=0xe", Tlb, false, "Store misses in all TLB levels causes a page walk that completes. (All page sizes)"),
    ev("DTLB_STORE_MISSES.STLB_HIT", "event=0x49,umask=0x20", Tlb, false, "Stores that miss the DTLB and hit the STLB."),
    ev("ITLB_MISSES.WALK_COMPLETED", "event=0x85,umask=0xe", Tlb, false, "Code miss in all TLB levels causes a page walk that completes. (All page sizes)"),
    ev("ITLB_MISSES.STLB_HIT", "event=0x85,umask=0x20", Tlb, false, "Instruction fetch requests that miss the ITLB and hit the STLB."),
    ev("MEM_INST_RETIRED.STLB_MISS_LOADS", "event=0xd0,umask=0x11", Tlb, true, "Retired load instructions that miss the STLB."),
    ev("MEM_INST_RETIRED.STLB_MISS_STORES", "event=0xd0,umask=0x12", Tlb, true, "Retired store instructions that miss the STLB."),
    // Branch
    ev("BR_INST_RETIRED.ALL_BRANCHES", "event=0xc4", Branch, false, "All (macro) branch instructions retired."),
    ev("BR_INST_RETIRED.CONDITIONAL", "event=0xc4,umask=0x1", Branch, true, "Conditional branch instructions retired."),
    ev("BR_INST_RETIRED.NEAR_TAKEN", "event=0xc4,umask=0x20", Branch, true, "Taken branch instructions retired."),
    ev("BR_MISP_RETIRED.ALL_BRANCHES", "event=0xc5", Branch, false, "All mispredicted macro branch instructions retired."),
    ev("BR_MISP_RETIRED.CONDITIONAL", "event=0xc5,umask=0x1", Branch, true, "Mispredicted conditional branch instructions retired."),
    ev("BR_MISP_RETIRED.NEAR_TAKEN", "event=0xc5,umask=0x20", Branch, true, "Number of near branch instructions retired that were mispredicted and taken."),
    // Frontend
    ev("FRONTEND_RETIRED.DSB_MISS", "event=0xc6,umask=0x1,frontend=0x11", Frontend, true, "Retired Instructions who experienced a critical DSB miss."),
    ev("FRONTEND_RETIRED.L1I_MISS", "event=0xc6,umask=0x1,frontend=0x12", Frontend, true, "Retired Instructions who experienced Instruction L1 Cache true miss."),
];

/// Skylake-SP / Cascade Lake, from perfmon `skylakex_core.json`; adds local/remote DRAM
/// load sources.
#[rustfmt::skip]
pub const SKYLAKEX: &[NamedEvent] = &[
    // Pipeline
    ev("INST_RETIRED.ANY", "event=0x0,umask=0x1", Pipeline, false, "Instructions retired from execution."),
    ev("INST_RETIRED.ANY_P", "event=0xc0", Pipeline, false, "Number of instructions retired. General Counter - architectural event"),
    ev("CPU_CLK_UNHALTED.THREAD_P", "event=0x3c", Pipeline, false, "Thread cycles when thread is not in halt state"),
    ev("CPU_CLK_UNHALTED.REF_TSC", "event=0x0,umask=0x3", Pipeline, false, "Reference cycles when the core is not in halt state."),
    ev("UOPS_EXECUTED.THREAD", "event=0xb1,umask=0x1", Pipeline, false, "Counts the number of uops to be executed per-thread each cycle."),
    ev("CYCLE_ACTIVITY.STALLS_TOTAL", "event=0xa3,umask=0x4,cmask=0x4", Pipeline, false, "Total execution stalls."),
    ev("MEM_INST_RETIRED.ALL_LOADS", "event=0xd0,umask=0x81", Pipeline, true, "Retired load instructions."),
    ev("MEM_INST_RETIRED.ALL_STORES", "event=0xd0,umask=0x82", Pipeline, true, "Retired store instructions."),
    ev("MACHINE_CLEARS.COUNT", "event=0xc3,umask=0x1,edge=1,cmask=0x1", Pipeline, false, "Number of machine clears (nukes) of any type."),
    // TopDown
    ev("CPU_CLK_UNHALTED.THREAD", "event=0x0,umask=0x2", TopDown, false, "Core cycles when the thread is not in halt state"),
    ev("CPU_CLK_UNHALTED.THREAD_ANY", "event=0x0,umask=0x2,any=1", TopDown, false, "Core cycles when at least one thread on the physical core is not in halt state."),
    ev("UOPS_ISSUED.ANY", "event=0xe,umask=0x1", TopDown, false, "Uops that Resource Allocation Table (RAT) issues to Reservation Station (RS)"),
    ev("UOPS_RETIRED.RETIRE_SLOTS", "event=0xc2,umask=0x2", TopDown, false, "Retirement slots used."),
    ev("IDQ_UOPS_NOT_DELIVERED.CORE", "event=0x9c,umask=0x1", TopDown, false, "Uops not delivered to Resource Allocation Table (RAT) per thread when backend of the machine is not stalled"),
    ev("INT_MISC.RECOVERY_CYCLES", "event=0xd,umask=0x1", TopDown, false, "Core cycles the allocator was stalled due to recovery from earlier clear event for this thread"),
    ev("INT_MISC.RECOVERY_CYCLES_ANY", "event=0xd,umask=0x1,any=1", TopDown, false, "Core cycles the allocator was stalled due to recovery from earlier clear event for any thread on the core"),
    // Cache
    ev("L1D.REPLACEMENT", "event=0x51,umask=0x1", Cache, false, "L1D data line replacements"),
    ev("MEM_LOAD_RETIRED.L1_MISS", "event=0xd1,umask=0x8", Cache, true, "Retired load instructions missed L1 cache as data sources"),
    ev("MEM_LOAD_RETIRED.L2_HIT", "event=0xd1,umask=0x2", Cache, true, "Retired load instructions with L2 cache hits as data sources"),
    ev("MEM_LOAD_RETIRED.L2_MISS", "event=0xd1,umask=0x10", Cache, true, "Retired load instructions missed L2 cache as data sources"),
    ev("MEM_LOAD_RETIRED.L3_HIT", "event=0xd1,umask=0x4", Cache, true, "Retired load instructions with L3 cache hits as data sources"),
    ev("MEM_LOAD_RETIRED.L3_MISS", "event=0xd1,umask=0x20", Cache, true, "Retired load instructions missed L3 cache as data sources"),
    ev("MEM_LOAD_L3_HIT_RETIRED.XSNP_HITM", "event=0xd2,umask=0x4", Cache, true, "Retired load instructions which data sources were HitM responses from shared L3"),
    ev("L2_RQSTS.REFERENCES", "event=0x24,umask=0xff", Cache, false, "All L2 requests"),
    ev("L2_RQSTS.MISS", "event=0x24,umask=0x3f", Cache, false, "All requests that miss L2 cache"),
    ev("L2_RQSTS.ALL_DEMAND_DATA_RD", "event=0x24,umask=0xe1", Cache, false, "Demand Data Read requests"),
    ev("L2_RQSTS.DEMAND_DATA_RD_MISS", "event=0x24,umask=0x21", Cache, false, "Demand Data Read miss L2, no rejects"),
    ev("LONGEST_LAT_CACHE.REFERENCE", "event=0x2e,umask=0x4f", Cache, false, "Core-originated cacheable demand requests that refer to L3"),
    ev("LONGEST_LAT_CACHE.MISS", "event=0x2e,umask=0x41", Cache, false, "Core-originated cacheable demand requests missed L3"),
    ev("CYCLE_ACTIVITY.STALLS_L1D_MISS", "event=0xa3,umask=0xc,cmask=0xc", Cache, false, "Execution stalls while L1 cache miss demand load is outstanding."),
    ev("CYCLE_ACTIVITY.STALLS_L2_MISS", "event=0xa3,umask=0x5,cmask=0x5", Cache, false, "Execution stalls while L2 cache miss demand load is outstanding."),
    // Memory
    ev("CYCLE_ACTIVITY.STALLS_L3_MISS", "event=0xa3,umask=0x6,cmask=0x6", Memory, false, "Execution stalls while L3 cache miss demand load is outstanding."),
    ev("OFFCORE_REQUESTS.L3_MISS_DEMAND_DATA_RD", "event=0xb0,umask=0x10", Memory, false, "Demand Data Read requests who miss L3 cache"),
    ev("OFFCORE_RESPONSE.DEMAND_DATA_RD.L3_MISS.ANY_SNOOP", "event=0xb7,umask=0x1,offcore_rsp=0x3fbc000001", Memory, false, "Counts demand data reads that miss in the L3 (any snoop response)"),
    ev("MEM_LOAD_L3_MISS_RETIRED.LOCAL_DRAM", "event=0xd3,umask=0x1", Memory, true, "Retired load instructions which data sources missed L3 but serviced from local dram"),
    ev("MEM_LOAD_L3_MISS_RETIRED.REMOTE_DRAM", "event=0xd3,umask=0x2", Memory, true, "Retired load instructions which data sources missed L3 but serviced from remote dram"),
    ev("MEM_LOAD_L3_MISS_RETIRED.REMOTE_HITM", "event=0xd3,umask=0x4", Memory, true, "Retired load instructions whose data sources was remote HITM"),
    ev("OFFCORE_RESPONSE.DEMAND_DATA_RD.L3_MISS_LOCAL_DRAM.SNOOP_MISS_OR_NO_FWD", "event=0xb7,umask=0x1,offcore_rsp=0x604000001", Memory, false, "Counts demand data reads that miss the L3 and the data is returned from local dram."),
    ev("OFFCORE_RESPONSE.DEMAND_DATA_RD.L3_MISS_REMOTE_DRAM.SNOOP_MISS_OR_NO_FWD", "event=0xb7,umask=0x1,offcore_rsp=0x63b800001", Memory, false, "Counts demand data reads that miss the L3 and the data is returned from remote dram."),
    // LoadLatency
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4", "event=0xcd,umask=0x1,ldlat=0x4", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 4 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_8", "event=0xcd,umask=0x1,ldlat=0x8", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 8 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_16", "event=0xcd,umask=0x1,ldlat=0x10", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 16 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_32", "event=0xcd,umask=0x1,ldlat=0x20", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 32 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_64", "event=0xcd,umask=0x1,ldlat=0x40", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 64 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_128", "event=0xcd,umask=0x1,ldlat=0x80", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 128 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_256", "event=0xcd,umask=0x1,ldlat=0x100", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 256 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_512", "event=0xcd,umask=0x1,ldlat=0x200", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 512 cycles."),
    // Tlb
    ev("DTLB_LOAD_MISSES.WALK_COMPLETED", "event=0x8,umask=0xe", Tlb, false, "Load miss in all TLB levels causes a page walk that completes. (All page sizes)"),
    ev("DTLB_LOAD_MISSES.STLB_HIT", "event=0x8,umask=0x20", Tlb, false, "Loads that miss the DTLB and hit the STLB."),
    ev("DTLB_STORE_MISSES.WALK_COMPLETED", "event=0x49,umask=0xe", Tlb, false, "Store misses in all TLB levels causes a page walk that completes. (All page sizes)"),
    ev("DTLB_STORE_MISSES.STLB_HIT", "event=0x49,umask=0x20", Tlb, false, "Stores that miss the DTLB and hit the STLB."),
    ev("ITLB_MISSES.WALK_COMPLETED", "event=0x85,umask=0xe", Tlb, false, "Code miss in all TLB levels causes a page walk that completes. (All page sizes)"),
    ev("ITLB_MISSES.STLB_HIT", "event=0x85,umask=0x20", Tlb, false, "Instruction fetch requests that miss the ITLB and hit the STLB."),
    ev("MEM_INST_RETIRED.STLB_MISS_LOADS", "event=0xd0,umask=0x11", Tlb, true, "Retired load instructions that miss the STLB."),
    ev("MEM_INST_RETIRED.STLB_MISS_STORES", "event=0xd0,umask=0x12", Tlb, true, "Retired store instructions that miss the STLB."),
    // Branch
    ev("BR_INST_RETIRED.ALL_BRANCHES", "event=0xc4", Branch, false, "All (macro) branch instructions retired."),
    ev("BR_INST_RETIRED.CONDITIONAL", "event=0xc4,umask=0x1", Branch, true, "Conditional branch instructions retired."),
    ev("BR_INST_RETIRED.NEAR_TAKEN", "event=0xc4,umask=0x20", Branch, true, "Taken branch instructions retired."),
    ev("BR_MISP_RETIRED.ALL_BRANCHES", "event=0xc5", Branch, false, "All mispredicted macro branch instructions retired."),
    ev("BR_MISP_RETIRED.CONDITIONAL", "event=0xc5,umask=0x1", Branch, true, "Mispredicted conditional branch instructions retired."),
    ev("BR_MISP_RETIRED.NEAR_TAKEN", "event=0xc5,umask=0x20", Branch, true, "Number of near branch instructions retired that were mispredicted and taken."),
    // Frontend
    ev("FRONTEND_RETIRED.DSB_MISS", "event=0xc6,umask=0x1,frontend=0x11", Frontend, true, "Retired Instructions who experienced a critical DSB miss."),
    ev("FRONTEND_RETIRED.L1I_MISS", "event=0xc6,umask=0x1,frontend=0x12", Frontend, true, "Retired Instructions who experienced Instruction L1 Cache true miss."),
];

/// Ice Lake client, from perfmon `icelake_core.json`; TopDown through `TOPDOWN.SLOTS` and
/// `PERF_METRICS.*`.
#[rustfmt::skip]
pub const ICELAKE: &[NamedEvent] = &[
    // Pipeline
    ev("INST_RETIRED.ANY", "event=0x0,umask=0x1", Pipeline, true, "Number of instructions retired. Fixed Counter - architectural event"),
    ev("INST_RETIRED.ANY_P", "event=0xc0", Pipeline, true, "Number of instructions retired. General Counter - architectural event"),
    ev("CPU_CLK_UNHALTED.THREAD", "event=0x0,umask=0x2", Pipeline, false, "Core cycles when the thread is not in halt state"),
    ev("CPU_CLK_UNHALTED.THREAD_P", "event=0x3c", Pipeline, false, "Thread cycles when thread is not in halt state"),
    ev("CPU_CLK_UNHALTED.REF_TSC", "event=0x0,umask=0x3", Pipeline, false, "Reference cycles when the core is not in halt state."),
    ev("UOPS_ISSUED.ANY", "event=0xe,umask=0x1", Pipeline, false, "Uops that RAT issues to RS"),
    ev("UOPS_EXECUTED.THREAD", "event=0xb1,umask=0x1", Pipeline, false, "Counts the number of uops to be executed per-thread each cycle."),
    ev("CYCLE_ACTIVITY.STALLS_TOTAL", "event=0xa3,umask=0x4,cmask=0x4", Pipeline, false, "Total execution stalls."),
    ev("MEM_INST_RETIRED.ALL_LOADS", "event=0xd0,umask=0x81", Pipeline, true, "Retired load instructions."),
    ev("MEM_INST_RETIRED.ALL_STORES", "event=0xd0,umask=0x82", Pipeline, true, "Retired store instructions."),
    ev("MACHINE_CLEARS.COUNT", "event=0xc3,umask=0x1,edge=1,cmask=0x1", Pipeline, false, "Number of machine clears (nukes) of any type."),
    // TopDown
    ev("TOPDOWN.SLOTS", "event=0x0,umask=0x4", TopDown, false, "TMA slots available for an unhalted logical processor. Fixed counter - architectural event"),
    ev("PERF_METRICS.RETIRING", "event=0x0,umask=0x80", TopDown, false, "TMA slots used by retiring uops (fixed-counter metric; group with TOPDOWN.SLOTS)"),
    ev("PERF_METRICS.BAD_SPECULATION", "event=0x0,umask=0x81", TopDown, false, "TMA slots wasted by bad speculation (fixed-counter metric; group with TOPDOWN.SLOTS)"),
    ev("PERF_METRICS.FRONTEND_BOUND", "event=0x0,umask=0x82", TopDown, false, "TMA slots stalled on the front end (fixed-counter metric; group with TOPDOWN.SLOTS)"),
    ev("PERF_METRICS.BACKEND_BOUND", "event=0x0,umask=0x83", TopDown, false, "TMA slots stalled on the back end (fixed-counter metric; group with TOPDOWN.SLOTS)"),
    ev("TOPDOWN.BACKEND_BOUND_SLOTS", "event=0xa4,umask=0x2", TopDown, false, "TMA slots where no uops were being issued due to lack of back-end resources."),
    ev("UOPS_RETIRED.SLOTS", "event=0xc2,umask=0x2", TopDown, false, "Retirement slots used."),
    ev("IDQ_UOPS_NOT_DELIVERED.CORE", "event=0x9c,umask=0x1", TopDown, false, "Uops not delivered by IDQ when backend of the machine is not stalled"),
    ev("INT_MISC.RECOVERY_CYCLES", "event=0xd,umask=0x1", TopDown, false, "Core cycles the allocator was stalled due to recovery from earlier clear event for this thread"),
    ev("INT_MISC.UOP_DROPPING", "event=0xd,umask=0x10", TopDown, false, "TMA slots where uops got dropped"),
    // Cache
    ev("L1D.REPLACEMENT", "event=0x51,umask=0x1", Cache, false, "Counts the number of cache lines replaced in L1 data cache."),
    ev("MEM_LOAD_RETIRED.L1_MISS", "event=0xd1,umask=0x8", Cache, true, "Retired load instructions missed L1 cache as data sources"),
    ev("MEM_LOAD_RETIRED.L2_HIT", "event=0xd1,umask=0x2", Cache, true, "Retired load instructions with L2 cache hits as data sources"),
    ev("MEM_LOAD_RETIRED.L2_MISS", "event=0xd1,umask=0x10", Cache, true, "Retired load instructions missed L2 cache as data sources"),
    ev("MEM_LOAD_RETIRED.L3_HIT", "event=0xd1,umask=0x4", Cache, true, "Retired load instructions with L3 cache hits as data sources"),
    ev("MEM_LOAD_RETIRED.L3_MISS", "event=0xd1,umask=0x20", Cache, true, "Retired load instructions missed L3 cache as data sources"),
    ev("MEM_LOAD_L3_HIT_RETIRED.XSNP_HITM", "event=0xd2,umask=0x4", Cache, true, "Retired load instructions whose data sources were HitM responses from shared L3"),
    ev("L2_RQSTS.ALL_DEMAND_DATA_RD", "event=0x24,umask=0xe1", Cache, false, "Demand Data Read requests"),
    ev("L2_RQSTS.DEMAND_DATA_RD_MISS", "event=0x24,umask=0x21", Cache, false, "Demand Data Read miss L2, no rejects"),
    ev("L2_RQSTS.ALL_DEMAND_MISS", "event=0x24,umask=0x27", Cache, false, "Demand requests that miss L2 cache"),
    ev("L2_RQSTS.CODE_RD_MISS", "event=0x24,umask=0x24", Cache, false, "L2 cache misses when fetching instructions"),
    ev("LONGEST_LAT_CACHE.MISS", "event=0x2e,umask=0x41", Cache, false, "Core-originated cacheable requests that missed L3 (Except hardware prefetches to the L3)"),
    ev("CYCLE_ACTIVITY.STALLS_L1D_MISS", "event=0xa3,umask=0xc,cmask=0xc", Cache, false, "Execution stalls while L1 cache miss demand load is outstanding."),
    ev("CYCLE_ACTIVITY.STALLS_L2_MISS", "event=0xa3,umask=0x5,cmask=0x5", Cache, false, "Execution stalls while L2 cache miss demand load is outstanding."),
    // Memory
    ev("CYCLE_ACTIVITY.STALLS_L3_MISS", "event=0xa3,umask=0x6,cmask=0x6", Memory, false, "Execution stalls while L3 cache miss demand load is outstanding."),
    ev("OFFCORE_REQUESTS.L3_MISS_DEMAND_DATA_RD", "event=0xb0,umask=0x10", Memory, false, "Counts demand data read requests that miss the L3 cache."),
    ev("OCR.DEMAND_DATA_RD.L3_MISS", "event=0xb7,umask=0x1,offcore_rsp=0x3fffc00001", Memory, false, "Counts demand data reads that was not supplied by the L3 cache."),
    ev("OCR.DEMAND_DATA_RD.DRAM", "event=0xb7,umask=0x1,offcore_rsp=0x184000001", Memory, false, "Counts demand data reads that DRAM supplied the request."),
    // LoadLatency
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4", "event=0xcd,umask=0x1,ldlat=0x4", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 4 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_8", "event=0xcd,umask=0x1,ldlat=0x8", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 8 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_16", "event=0xcd,umask=0x1,ldlat=0x10", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 16 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_32", "event=0xcd,umask=0x1,ldlat=0x20", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 32 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_64", "event=0xcd,umask=0x1,ldlat=0x40", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 64 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_128", "event=0xcd,umask=0x1,ldlat=0x80", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 128 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_256", "event=0xcd,umask=0x1,ldlat=0x100", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 256 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_512", "event=0xcd,umask=0x1,ldlat=0x200", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 512 cycles."),
    // Tlb
    ev("DTLB_LOAD_MISSES.WALK_COMPLETED", "event=0x8,umask=0xe", Tlb, false, "Load miss in all TLB levels causes a page walk that completes. (All page sizes)"),
    ev("DTLB_LOAD_MISSES.STLB_HIT", "event=0x8,umask=0x20", Tlb, false, "Loads that miss the DTLB and hit the STLB."),
    ev("DTLB_STORE_MISSES.WALK_COMPLETED", "event=0x49,umask=0xe", Tlb, false, "Store misses in all TLB levels causes a page walk that completes. (All page sizes)"),
    ev("DTLB_STORE_MISSES.STLB_HIT", "event=0x49,umask=0x20", Tlb, false, "Stores that miss the DTLB and hit the STLB."),
    ev("ITLB_MISSES.WALK_COMPLETED", "event=0x85,umask=0xe", Tlb, false, "Code miss in all TLB levels causes a page walk that completes. (All page sizes)"),
    ev("ITLB_MISSES.STLB_HIT", "event=0x85,umask=0x20", Tlb, false, "Instruction fetch requests that miss the ITLB and hit the STLB."),
    ev("MEM_INST_RETIRED.STLB_MISS_LOADS", "event=0xd0,umask=0x11", Tlb, true, "Retired load instructions that miss the STLB."),
    ev("MEM_INST_RETIRED.STLB_MISS_STORES", "event=0xd0,umask=0x12", Tlb, true, "Retired store instructions that miss the STLB."),
    // Branch
    ev("BR_INST_RETIRED.ALL_BRANCHES", "event=0xc4", Branch, true, "All branch instructions retired."),
    ev("BR_INST_RETIRED.COND", "event=0xc4,umask=0x11", Branch, true, "Conditional branch instructions retired."),
    ev("BR_INST_RETIRED.NEAR_TAKEN", "event=0xc4,umask=0x20", Branch, true, "Taken branch instructions retired."),
    ev("BR_INST_RETIRED.INDIRECT", "event=0xc4,umask=0x80", Branch, true, "Indirect near branch instructions retired (excluding returns)"),
    ev("BR_MISP_RETIRED.ALL_BRANCHES", "event=0xc5", Branch, true, "All mispredicted branch instructions retired."),
    ev("BR_MISP_RETIRED.COND", "event=0xc5,umask=0x11", Branch, true, "Mispredicted conditional branch instructions retired."),
    ev("BR_MISP_RETIRED.INDIRECT", "event=0xc5,umask=0x80", Branch, true, "All miss-predicted indirect branch instructions retired (excluding RETs. TSX aborts is considered indirect branch)."),
    // Frontend
    ev("FRONTEND_RETIRED.DSB_MISS", "event=0xc6,umask=0x1,frontend=0x11", Frontend, true, "Retired Instructions who experienced a critical DSB miss."),
    ev("FRONTEND_RETIRED.L1I_MISS", "event=0xc6,umask=0x1,frontend=0x12", Frontend, true, "Retired Instructions who experienced Instruction L1 Cache true miss."),
];

/// Sapphire Rapids (and Emerald Rapids), from perfmon `sapphirerapids_core.json`.
#[rustfmt::skip]
pub const SAPPHIRERAPIDS: &[NamedEvent] = &[
    // Pipeline
    ev("INST_RETIRED.ANY", "event=0x0,umask=0x1", Pipeline, true, "Number of instructions retired. Fixed Counter - architectural event"),
    ev("INST_RETIRED.ANY_P", "event=0xc0", Pipeline, true, "Number of instructions retired. General Counter - architectural event"),
    ev("CPU_CLK_UNHALTED.THREAD", "event=0x0,umask=0x2", Pipeline, false, "Core cycles when the thread is not in halt state"),
    ev("CPU_CLK_UNHALTED.THREAD_P", "event=0x3c", Pipeline, false, "Thread cycles when thread is not in halt state"),
    ev("CPU_CLK_UNHALTED.REF_TSC", "event=0x0,umask=0x3", Pipeline, false, "Reference cycles when the core is not in halt state."),
    ev("UOPS_ISSUED.ANY", "event=0xae,umask=0x1", Pipeline, false, "Uops that RAT issues to RS"),
    ev("CYCLE_ACTIVITY.STALLS_TOTAL", "event=0xa3,umask=0x4,cmask=0x4", Pipeline, false, "Total execution stalls."),
    ev("MEM_INST_RETIRED.ALL_LOADS", "event=0xd0,umask=0x81", Pipeline, true, "Retired load instructions."),
    ev("MEM_INST_RETIRED.ALL_STORES", "event=0xd0,umask=0x82", Pipeline, true, "Retired store instructions."),
    ev("MACHINE_CLEARS.COUNT", "event=0xc3,umask=0x1,edge=1,cmask=0x1", Pipeline, false, "Number of machine clears (nukes) of any type."),
    // TopDown
    ev("TOPDOWN.SLOTS", "event=0x0,umask=0x4", TopDown, false, "TMA slots available for an unhalted logical processor. Fixed counter - architectural event"),
    ev("PERF_METRICS.RETIRING", "event=0x0,umask=0x80", TopDown, false, "TMA slots used by retiring uops (fixed-counter metric; group with TOPDOWN.SLOTS)"),
    ev("PERF_METRICS.BAD_SPECULATION", "event=0x0,umask=0x81", TopDown, false, "TMA slots wasted by bad speculation (fixed-counter metric; group with TOPDOWN.SLOTS)"),
    ev("PERF_METRICS.FRONTEND_BOUND", "event=0x0,umask=0x82", TopDown, false, "TMA slots stalled on the front end (fixed-counter metric; group with TOPDOWN.SLOTS)"),
    ev("PERF_METRICS.BACKEND_BOUND", "event=0x0,umask=0x83", TopDown, false, "TMA slots stalled on the back end (fixed-counter metric; group with TOPDOWN.SLOTS)"),
    ev("TOPDOWN.BACKEND_BOUND_SLOTS", "event=0xa4,umask=0x2", TopDown, false, "TMA slots where no uops were being issued due to lack of back-end resources."),
    ev("TOPDOWN.BAD_SPEC_SLOTS", "event=0xa4,umask=0x4", TopDown, false, "TMA slots wasted due to incorrect speculations."),
    ev("TOPDOWN.BR_MISPREDICT_SLOTS", "event=0xa4,umask=0x8", TopDown, false, "TMA slots wasted due to incorrect speculation by branch mispredictions"),
    ev("UOPS_RETIRED.SLOTS", "event=0xc2,umask=0x2", TopDown, false, "Retirement slots used."),
    ev("INT_MISC.UOP_DROPPING", "event=0xad,umask=0x10", TopDown, false, "TMA slots where uops got dropped"),
    ev("INT_MISC.RECOVERY_CYCLES", "event=0xad,umask=0x1", TopDown, false, "Core cycles the allocator was stalled due to recovery from earlier clear event for this thread"),
    // Cache
    ev("L1D.REPLACEMENT", "event=0x51,umask=0x1", Cache, false, "Counts the number of cache lines replaced in L1 data cache."),
    ev("MEM_LOAD_RETIRED.L1_MISS", "event=0xd1,umask=0x8", Cache, true, "Retired load instructions missed L1 cache as data sources"),
    ev("MEM_LOAD_RETIRED.L2_HIT", "event=0xd1,umask=0x2", Cache, true, "Retired load instructions with L2 cache hits as data sources"),
    ev("MEM_LOAD_RETIRED.L2_MISS", "event=0xd1,umask=0x10", Cache, true, "Retired load instructions missed L2 cache as data sources"),
    ev("MEM_LOAD_RETIRED.L3_HIT", "event=0xd1,umask=0x4", Cache, true, "Retired load instructions with L3 cache hits as data sources"),
    ev("MEM_LOAD_RETIRED.L3_MISS", "event=0xd1,umask=0x20", Cache, true, "Retired load instructions missed L3 cache as data sources"),
    ev("MEM_LOAD_L3_HIT_RETIRED.XSNP_FWD", "event=0xd2,umask=0x4", Cache, true, "Retired load instructions whose data sources were HitM responses from shared L3"),
    ev("L2_RQSTS.REFERENCES", "event=0x24,umask=0xff", Cache, false, "All accesses to L2 cache"),
    ev("L2_RQSTS.MISS", "event=0x24,umask=0x3f", Cache, false, "Read requests with true-miss in L2 cache."),
    ev("L2_RQSTS.ALL_DEMAND_DATA_RD", "event=0x24,umask=0xe1", Cache, false, "Demand Data Read access L2 cache"),
    ev("L2_RQSTS.DEMAND_DATA_RD_MISS", "event=0x24,umask=0x21", Cache, false, "Demand Data Read miss L2 cache"),
    ev("LONGEST_LAT_CACHE.REFERENCE", "event=0x2e,umask=0x4f", Cache, false, "Core-originated cacheable requests that refer to L3 (Except hardware prefetches to the L3)"),
    ev("LONGEST_LAT_CACHE.MISS", "event=0x2e,umask=0x41", Cache, false, "Core-originated cacheable requests that missed L3 (Except hardware prefetches to the L3)"),
    ev("CYCLE_ACTIVITY.STALLS_L1D_MISS", "event=0xa3,umask=0xc,cmask=0xc", Cache, false, "Execution stalls while L1 cache miss demand load is outstanding."),
    ev("CYCLE_ACTIVITY.STALLS_L2_MISS", "event=0xa3,umask=0x5,cmask=0x5", Cache, false, "Execution stalls while L2 cache miss demand load is outstanding."),
    // Memory
    ev("CYCLE_ACTIVITY.STALLS_L3_MISS", "event=0xa3,umask=0x6,cmask=0x6", Memory, false, "Execution stalls while L3 cache miss demand load is outstanding."),
    ev("MEM_LOAD_L3_MISS_RETIRED.LOCAL_DRAM", "event=0xd3,umask=0x1", Memory, true, "Retired load instructions which data sources missed L3 but serviced from local dram"),
    ev("MEM_LOAD_L3_MISS_RETIRED.REMOTE_DRAM", "event=0xd3,umask=0x2", Memory, true, "MEM_LOAD_L3_MISS_RETIRED.REMOTE_DRAM."),
    ev("MEM_LOAD_L3_MISS_RETIRED.REMOTE_HITM", "event=0xd3,umask=0x4", Memory, true, "MEM_LOAD_L3_MISS_RETIRED.REMOTE_HITM."),
    ev("OCR.DEMAND_DATA_RD.L3_MISS", "event=0x2a,umask=0x1,offcore_rsp=0x3fbfc00001", Memory, false, "Counts demand data reads that were not supplied by the local socket's L1, L2, or L3 caches."),
    ev("OCR.DEMAND_DATA_RD.LOCAL_DRAM", "event=0x2a,umask=0x1,offcore_rsp=0x104000001", Memory, false, "Counts demand data reads that were supplied by DRAM attached to this socket, unless in Sub NUMA Cluster(SNC) Mode"),
    ev("OCR.DEMAND_DATA_RD.REMOTE_DRAM", "event=0x2a,umask=0x1,offcore_rsp=0x730000001", Memory, false, "Counts demand data reads that were supplied by DRAM attached to another socket."),
    // LoadLatency
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4", "event=0xcd,umask=0x1,ldlat=0x4", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 4 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_8", "event=0xcd,umask=0x1,ldlat=0x8", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 8 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_16", "event=0xcd,umask=0x1,ldlat=0x10", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 16 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_32", "event=0xcd,umask=0x1,ldlat=0x20", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 32 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_64", "event=0xcd,umask=0x1,ldlat=0x40", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 64 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_128", "event=0xcd,umask=0x1,ldlat=0x80", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 128 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_256", "event=0xcd,umask=0x1,ldlat=0x100", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 256 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_512", "event=0xcd,umask=0x1,ldlat=0x200", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 512 cycles."),
    ev("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_1024", "event=0xcd,umask=0x1,ldlat=0x400", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 1024 cycles."),
    // Tlb
    ev("DTLB_LOAD_MISSES.WALK_COMPLETED", "event=0x12,umask=0xe", Tlb, false, "Load miss in all TLB levels causes a page walk that completes. (All page sizes)"),
    ev("DTLB_LOAD_MISSES.STLB_HIT", "event=0x12,umask=0x20", Tlb, false, "Loads that miss the DTLB and hit the STLB."),
    ev("DTLB_STORE_MISSES.WALK_COMPLETED", "event=0x13,umask=0xe", Tlb, false, "Store misses in all TLB levels causes a page walk that completes. (All page sizes)"),
    ev("DTLB_STORE_MISSES.STLB_HIT", "event=0x13,umask=0x20", Tlb, false, "Stores that miss the DTLB and hit the STLB."),
    ev("ITLB_MISSES.WALK_COMPLETED", "event=0x11,umask=0xe", Tlb, false, "Code miss in all TLB levels causes a page walk that completes. (All page sizes)"),
    ev("ITLB_MISSES.STLB_HIT", "event=0x11,umask=0x20", Tlb, false, "Instruction fetch requests that miss the ITLB and hit the STLB."),
    ev("MEM_INST_RETIRED.STLB_MISS_LOADS", "event=0xd0,umask=0x11", Tlb, true, "Retired load instructions that miss the STLB."),
    ev("MEM_INST_RETIRED.STLB_MISS_STORES", "event=0xd0,umask=0x12", Tlb, true, "Retired store instructions that miss the STLB."),
    // Branch
    ev("BR_INST_RETIRED.ALL_BRANCHES", "event=0xc4", Branch, true, "All branch instructions retired."),
    ev("BR_INST_RETIRED.COND", "event=0xc4,umask=0x11", Branch, true, "Conditional branch instructions retired."),
    ev("BR_INST_RETIRED.NEAR_TAKEN", "event=0xc4,umask=0x20", Branch, true, "Taken branch instructions retired."),
    ev("BR_MISP_RETIRED.ALL_BRANCHES", "event=0xc5", Branch, true, "All mispredicted branch instructions retired."),
    ev("BR_MISP_RETIRED.COND", "event=0xc5,umask=0x11", Branch, true, "Mispredicted conditional branch instructions retired."),
    ev("BR_MISP_RETIRED.INDIRECT", "event=0xc5,umask=0x80", Branch, true, "Miss-predicted near indirect branch instructions retired (excluding returns)"),
    // Frontend
    ev("FRONTEND_RETIRED.DSB_MISS", "event=0xc6,umask=0x1,frontend=0x11", Frontend, true, "Retired Instructions who experienced a critical DSB miss."),
    ev("FRONTEND_RETIRED.L1I_MISS", "event=0xc6,umask=0x1,frontend=0x12", Frontend, true, "Retired Instructions who experienced Instruction L1 Cache true miss."),
];

/// Alder Lake / Raptor Lake hybrid, from the kernel's `alderlake/*.json`: Golden Cove rows on
/// `cpu_core`, then Gracemont rows on `cpu_atom` (a name may appear once per PMU).
#[rustfmt::skip]
pub const ALDERLAKE: &[NamedEvent] = &[
    // ---- Golden Cove (cpu_core) ----
    // Pipeline
    core("INST_RETIRED.ANY", "event=0x0,umask=0x1", Pipeline, true, "Number of instructions retired. Fixed Counter - architectural event"),
    core("INST_RETIRED.ANY_P", "event=0xc0", Pipeline, true, "Number of instructions retired. General Counter - architectural event"),
    core("CPU_CLK_UNHALTED.THREAD", "event=0x0,umask=0x2", Pipeline, false, "Core cycles when the thread is not in halt state"),
    core("CPU_CLK_UNHALTED.THREAD_P", "event=0x3c", Pipeline, false, "Thread cycles when thread is not in halt state"),
    core("CPU_CLK_UNHALTED.REF_TSC", "event=0x0,umask=0x3", Pipeline, false, "Reference cycles when the core is not in halt state."),
    core("UOPS_ISSUED.ANY", "event=0xae,umask=0x1", Pipeline, false, "Uops that RAT issues to RS"),
    core("UOPS_RETIRED.SLOTS", "event=0xc2,umask=0x2", Pipeline, false, "Retirement slots used."),
    core("CYCLE_ACTIVITY.STALLS_TOTAL", "event=0xa3,umask=0x4,cmask=0x4", Pipeline, false, "Total execution stalls."),
    core("MACHINE_CLEARS.COUNT", "event=0xc3,umask=0x1,edge=1,cmask=0x1", Pipeline, false, "Number of machine clears (nukes) of any type."),
    core("MEM_INST_RETIRED.ALL_LOADS", "event=0xd0,umask=0x81", Pipeline, true, "Retired load instructions."),
    // TopDown
    core("TOPDOWN.SLOTS", "event=0x0,umask=0x4", TopDown, false, "TMA slots available for an unhalted logical processor. Fixed counter - architectural event"),
    core("PERF_METRICS.RETIRING", "event=0x0,umask=0x80", TopDown, false, "TMA slots used by retiring uops (fixed-counter metric; group with TOPDOWN.SLOTS)"),
    core("PERF_METRICS.BAD_SPECULATION", "event=0x0,umask=0x81", TopDown, false, "TMA slots wasted by bad speculation (fixed-counter metric; group with TOPDOWN.SLOTS)"),
    core("PERF_METRICS.FRONTEND_BOUND", "event=0x0,umask=0x82", TopDown, false, "TMA slots stalled on the front end (fixed-counter metric; group with TOPDOWN.SLOTS)"),
    core("PERF_METRICS.BACKEND_BOUND", "event=0x0,umask=0x83", TopDown, false, "TMA slots stalled on the back end (fixed-counter metric; group with TOPDOWN.SLOTS)"),
    core("TOPDOWN.BACKEND_BOUND_SLOTS", "event=0xa4,umask=0x2", TopDown, false, "TMA slots where no uops were being issued due to lack of back-end resources."),
    core("TOPDOWN.BAD_SPEC_SLOTS", "event=0xa4,umask=0x4", TopDown, false, "TMA slots wasted due to incorrect speculations."),
    core("TOPDOWN.BR_MISPREDICT_SLOTS", "event=0xa4,umask=0x8", TopDown, false, "TMA slots wasted due to incorrect speculation by branch mispredictions"),
    core("INT_MISC.UOP_DROPPING", "event=0xad,umask=0x10", TopDown, false, "TMA slots where uops got dropped"),
    core("INT_MISC.RECOVERY_CYCLES", "event=0xad,umask=0x1", TopDown, false, "Core cycles the allocator was stalled due to recovery from earlier clear event for this thread"),
    // Cache
    core("CYCLE_ACTIVITY.STALLS_L2_MISS", "event=0xa3,umask=0x5,cmask=0x5", Cache, false, "Execution stalls while L2 cache miss demand load is outstanding."),
    core("L1D.REPLACEMENT", "event=0x51,umask=0x1", Cache, false, "Counts the number of cache lines replaced in L1 data cache."),
    core("L2_RQSTS.REFERENCES", "event=0x24,umask=0xff", Cache, false, "All accesses to L2 cache"),
    core("L2_RQSTS.MISS", "event=0x24,umask=0x3f", Cache, false, "Read requests with true-miss in L2 cache."),
    core("L2_RQSTS.ALL_DEMAND_DATA_RD", "event=0x24,umask=0xe1", Cache, false, "Demand Data Read access L2 cache"),
    core("L2_RQSTS.DEMAND_DATA_RD_MISS", "event=0x24,umask=0x21", Cache, false, "Demand Data Read miss L2 cache"),
    core("L2_RQSTS.ALL_DEMAND_MISS", "event=0x24,umask=0x27", Cache, false, "Demand requests that miss L2 cache"),
    core("LONGEST_LAT_CACHE.REFERENCE", "event=0x2e,umask=0x4f", Cache, false, "Core-originated cacheable requests that refer to L3 (Except hardware prefetches to the L3)"),
    core("LONGEST_LAT_CACHE.MISS", "event=0x2e,umask=0x41", Cache, false, "Core-originated cacheable requests that missed L3  (Except hardware prefetches to the L3)"),
    core("MEM_LOAD_RETIRED.L1_MISS", "event=0xd1,umask=0x8", Cache, true, "Retired load instructions missed L1 cache as data sources"),
    core("MEM_LOAD_RETIRED.L2_HIT", "event=0xd1,umask=0x2", Cache, true, "Retired load instructions with L2 cache hits as data sources"),
    core("MEM_LOAD_RETIRED.L2_MISS", "event=0xd1,umask=0x10", Cache, true, "Retired load instructions missed L2 cache as data sources"),
    core("MEM_LOAD_RETIRED.L3_HIT", "event=0xd1,umask=0x4", Cache, true, "Retired load instructions with L3 cache hits as data sources"),
    core("MEM_LOAD_RETIRED.L3_MISS", "event=0xd1,umask=0x20", Cache, true, "Retired load instructions missed L3 cache as data sources"),
    core("MEM_LOAD_L3_HIT_RETIRED.XSNP_FWD", "event=0xd2,umask=0x4", Cache, true, "Retired load instructions whose data sources were HitM responses from shared L3"),
    // Memory
    core("CYCLE_ACTIVITY.STALLS_L3_MISS", "event=0xa3,umask=0x6,cmask=0x6", Memory, false, "Execution stalls while L3 cache miss demand load is outstanding."),
    core("OCR.DEMAND_DATA_RD.L3_MISS", "event=0x2a,umask=0x1,offcore_rsp=0x3fbfc00001", Memory, false, "Counts demand data reads that were not supplied by the L3 cache."),
    core("MEM_LOAD_L3_MISS_RETIRED.LOCAL_DRAM", "event=0xd3,umask=0x1", Memory, true, "Retired load instructions which data sources missed L3 but serviced from local dram"),
    // LoadLatency
    core("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4", "event=0xcd,umask=0x1,ldlat=0x4", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 4 cycles."),
    core("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_8", "event=0xcd,umask=0x1,ldlat=0x8", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 8 cycles."),
    core("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_16", "event=0xcd,umask=0x1,ldlat=0x10", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 16 cycles."),
    core("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_32", "event=0xcd,umask=0x1,ldlat=0x20", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 32 cycles."),
    core("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_64", "event=0xcd,umask=0x1,ldlat=0x40", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 64 cycles."),
    core("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_128", "event=0xcd,umask=0x1,ldlat=0x80", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 128 cycles."),
    core("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_256", "event=0xcd,umask=0x1,ldlat=0x100", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 256 cycles."),
    core("MEM_TRANS_RETIRED.LOAD_LATENCY_GT_512", "event=0xcd,umask=0x1,ldlat=0x200", LoadLatency, true, "Counts randomly selected loads when the latency from first dispatch to completion is greater than 512 cycles."),
    // Tlb
    core("DTLB_LOAD_MISSES.WALK_COMPLETED", "event=0x12,umask=0xe", Tlb, false, "Load miss in all TLB levels causes a page walk that completes. (All page sizes)"),
    core("DTLB_LOAD_MISSES.STLB_HIT", "event=0x12,umask=0x20", Tlb, false, "Loads that miss the DTLB and hit the STLB."),
    core("DTLB_STORE_MISSES.WALK_COMPLETED", "event=0x13,umask=0xe", Tlb, false, "Store misses in all TLB levels causes a page walk that completes. (All page sizes)"),
    core("DTLB_STORE_MISSES.STLB_HIT", "event=0x13,umask=0x20", Tlb, false, "Stores that miss the DTLB and hit the STLB."),
    core("ITLB_MISSES.WALK_COMPLETED", "event=0x11,umask=0xe", Tlb, false, "Code miss in all TLB levels causes a page walk that completes. (All page sizes)"),
    core("ITLB_MISSES.STLB_HIT", "event=0x11,umask=0x20", Tlb, false, "Instruction fetch requests that miss the ITLB and hit the STLB."),
    core("MEM_INST_RETIRED.STLB_MISS_LOADS", "event=0xd0,umask=0x11", Tlb, true, "Retired load instructions that miss the STLB."),
    core("MEM_INST_RETIRED.STLB_MISS_STORES", "event=0xd0,umask=0x12", Tlb, true, "Retired store instructions that miss the STLB."),
    // Branch
    core("BR_INST_RETIRED.ALL_BRANCHES", "event=0xc4", Branch, true, "All branch instructions retired."),
    core("BR_INST_RETIRED.COND", "event=0xc4,umask=0x11", Branch, true, "Conditional branch instructions retired."),
    core("BR_INST_RETIRED.NEAR_TAKEN", "event=0xc4,umask=0x20", Branch, true, "Taken branch instructions retired."),
    core("BR_INST_RETIRED.INDIRECT", "event=0xc4,umask=0x80", Branch, true, "Indirect near branch instructions retired (excluding returns)"),
    core("BR_MISP_RETIRED.ALL_BRANCHES", "event=0xc5", Branch, true, "All mispredicted branch instructions retired."),
    core("BR_MISP_RETIRED.COND", "event=0xc5,umask=0x11", Branch, true, "Mispredicted conditional branch instructions retired."),
    core("BR_MISP_RETIRED.INDIRECT", "event=0xc5,umask=0x80", Branch, true, "Miss-predicted near indirect branch instructions retired (excluding returns)"),
    // ---- Gracemont (cpu_atom) ----
    // Pipeline
    atom("INST_RETIRED.ANY", "event=0x0,umask=0x1", Pipeline, true, "Counts the total number of instructions retired. (Fixed event)"),
    atom("INST_RETIRED.ANY_P", "event=0xc0", Pipeline, true, "Counts the total number of instructions retired."),
    atom("CPU_CLK_UNHALTED.CORE", "event=0x0,umask=0x2", Pipeline, false, "Counts the number of unhalted core clock cycles. (Fixed event)"),
    atom("CPU_CLK_UNHALTED.CORE_P", "event=0x3c", Pipeline, false, "Counts the number of unhalted core clock cycles."),
    atom("UOPS_RETIRED.ALL", "event=0xc2", Pipeline, true, "Counts the total number of uops retired."),
    // TopDown
    atom("TOPDOWN_RETIRING.ALL", "event=0xc2", TopDown, true, "Counts the total number of consumed retirement slots."),
    atom("TOPDOWN_FE_BOUND.ALL", "event=0x71", TopDown, false, "Issue slots not consumed by the backend due to frontend stalls."),
    atom("TOPDOWN_BE_BOUND.ALL", "event=0x74", TopDown, false, "Issue slots not consumed by the backend due to backend stalls."),
    atom("TOPDOWN_BAD_SPECULATION.ALL", "event=0x73", TopDown, false, "Issue slots not consumed by the backend due to a mispredicted jump or a machine clear."),
    // Cache
    atom("LONGEST_LAT_CACHE.REFERENCE", "event=0x2e,umask=0x4f", Cache, false, "Counts the number of cacheable memory requests that access the LLC. Counts on a per core basis."),
    atom("LONGEST_LAT_CACHE.MISS", "event=0x2e,umask=0x41", Cache, false, "Counts the number of cacheable memory requests that miss in the LLC. Counts on a per core basis."),
    atom("L2_REQUEST.MISS", "event=0x24,umask=0x1", Cache, false, "Counts the number of L2 Cache accesses that resulted in a miss. Counts on a per core basis."),
    atom("MEM_LOAD_UOPS_RETIRED.L1_MISS", "event=0xd1,umask=0x8", Cache, true, "Counts the number of load uops retired that miss in the L1 data cache."),
    atom("MEM_LOAD_UOPS_RETIRED.L2_MISS", "event=0xd1,umask=0x10", Cache, true, "Counts the number of load uops retired that miss in the L2 cache."),
    atom("MEM_LOAD_UOPS_RETIRED.L3_HIT", "event=0xd1,umask=0x4", Cache, true, "Counts the number of load uops retired that hit in the L3 cache."),
    // Memory
    atom("OCR.DEMAND_DATA_RD.L3_MISS", "event=0xb7,umask=0x1,offcore_rsp=0x3f84400001", Memory, false, "Counts demand data reads that were not supplied by the L3 cache."),
    atom("MEM_LOAD_UOPS_RETIRED.DRAM_HIT", "event=0xd1,umask=0x80", Memory, true, "Counts the number of load uops retired that hit in DRAM."),
    // LoadLatency
    atom("MEM_UOPS_RETIRED.LOAD_LATENCY_GT_16", "event=0xd0,umask=0x5,ldlat=0x10", LoadLatency, true, "Tagged loads with an instruction latency of at least 16 cycles (PEBS only)."),
    atom("MEM_UOPS_RETIRED.LOAD_LATENCY_GT_32", "event=0xd0,umask=0x5,ldlat=0x20", LoadLatency, true, "Tagged loads with an instruction latency of at least 32 cycles (PEBS only)."),
    atom("MEM_UOPS_RETIRED.LOAD_LATENCY_GT_64", "event=0xd0,umask=0x5,ldlat=0x40", LoadLatency, true, "Tagged loads with an instruction latency of at least 64 cycles (PEBS only)."),
    atom("MEM_UOPS_RETIRED.LOAD_LATENCY_GT_128", "event=0xd0,umask=0x5,ldlat=0x80", LoadLatency, true, "Tagged loads with an instruction latency of at least 128 cycles (PEBS only)."),
    // Tlb
    atom("DTLB_LOAD_MISSES.WALK_COMPLETED", "event=0x8,umask=0xe", Tlb, false, "Counts the number of page walks completed due to load DTLB misses to any page size."),
    atom("DTLB_STORE_MISSES.WALK_COMPLETED", "event=0x49,umask=0xe", Tlb, false, "Counts the number of page walks completed due to store DTLB misses to any page size."),
    atom("ITLB_MISSES.WALK_COMPLETED", "event=0x85,umask=0xe", Tlb, false, "Counts the number of page walks completed due to instruction fetch misses to any page size."),
    atom("MEM_UOPS_RETIRED.STLB_MISS_LOADS", "event=0xd0,umask=0x11", Tlb, true, "Counts the number of load ops retired that miss in the second Level TLB."),
    // Branch
    atom("BR_INST_RETIRED.ALL_BRANCHES", "event=0xc4", Branch, true, "Counts the total number of branch instructions retired for all branch types."),
    atom("BR_INST_RETIRED.COND", "event=0xc4,umask=0x7e", Branch, true, "Counts the number of retired JCC (Jump on Conditional Code) branch instructions retired."),
    atom("BR_MISP_RETIRED.ALL_BRANCHES", "event=0xc5", Branch, true, "Counts the total number of mispredicted branch instructions retired for all branch types."),
    atom("BR_MISP_RETIRED.COND", "event=0xc5,umask=0x7e", Branch, true, "Counts the number of mispredicted JCC (Jump on Conditional Code) branch instructions retired."),
];
