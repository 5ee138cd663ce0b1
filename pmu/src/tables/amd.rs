//! Built-in AMD event tables for Zen 2 to Zen 5, stored as the format terms they stand for.
//!
//! Every code comes from the Linux kernel's `tools/perf/pmu-events/arch/x86/amdzenN/` files
//! (names exactly as published there, lower case):
//! - Zen 2: `core.json`, `branch.json`, `cache.json`, `memory.json`, `other.json`.
//! - Zen 3: `core.json`, `branch.json`, `cache.json`, `memory.json`, `other.json`.
//! - Zen 4: `core.json`, `branch.json`, `cache.json`, `memory.json`, `other.json`.
//! - Zen 5: `execution.json`, `decode.json`, `load-store.json`, `l2-cache.json`,
//!   `inst-cache.json`, `branch-prediction.json`.
//!
//! AMD event selects are 12 bits (`config:0-7,32-35`), so codes such as `event=0x1a0`
//! are written as they are. TopDown level 1 on Zen 4/5 is the kernel's `PipelineL1`
//! metric group: slots = 6 (Zen 4) or 8 (Zen 5) x `ls_not_halted_cyc`; frontend bound =
//! `de_no_dispatch_per_slot.no_ops_from_frontend`; backend bound =
//! `de_no_dispatch_per_slot.backend_stalls`; bad speculation = `de_src_op_disp.all` -
//! `ex_ret_ops`; retiring = `ex_ret_ops`. Zen 2/3 have no slot counters, so their TopDown
//! rows are the dispatch and fetch stall events they do have. The L3 events of these
//! parts belong to the separate `amd_l3` PMU and are left out of these `cpu` tables.
//! No row is marked precise: the kernel files mark none (IBS is a separate PMU).

use super::Category::{self, *};
use super::NamedEvent;

/// A core PMU row (`cpu`); AMD core events are never precise here.
const fn ev(
    name: &'static str,
    terms: &'static str,
    category: Category,
    desc: &'static str,
) -> NamedEvent {
    NamedEvent {
        name,
        pmu: "cpu",
        terms,
        category,
        precise: false,
        desc,
    }
}

/// Zen 2 (family 17h models 30h+), from the kernel's `amdzen2/*.json`.
#[rustfmt::skip]
pub const ZEN2: &[NamedEvent] = &[
    // Pipeline
    ev("ls_not_halted_cyc", "event=0x76", Pipeline, "Cycles not in Halt."),
    ev("ex_ret_instr", "event=0xc0", Pipeline, "Retired Instructions."),
    ev("ex_ret_cops", "event=0xc1", Pipeline, "Retired Uops."),
    ev("de_dis_uops_from_decoder", "event=0xaa,umask=0xff", Pipeline, "Ops dispatched from either the decoders, OpCache or both."),
    ev("ex_div_busy", "event=0xd3", Pipeline, "Div Cycles Busy count."),
    // TopDown
    ev("de_dis_uop_queue_empty_di0", "event=0xa9", TopDown, "Cycles where the Micro-Op Queue is empty."),
    ev("ic_fetch_stall.ic_stall_any", "event=0x87,umask=0x4", TopDown, "Instruction Pipe Stall. IC pipe was stalled during this clock cycle for any reason."),
    ev("ic_fetch_stall.ic_stall_back_pressure", "event=0x87,umask=0x1", TopDown, "IC pipe was stalled during this clock cycle due to back-pressure."),
    ev("de_dis_dispatch_token_stalls0.retire_token_stall", "event=0xaf,umask=0x20", TopDown, "Dispatch stalls: RETIRE Tokens unavailable."),
    ev("de_dis_dispatch_token_stalls0.alu_token_stall", "event=0xaf,umask=0x8", TopDown, "Dispatch stalls: ALU tokens total unavailable."),
    ev("de_dis_dispatch_token_stalls0.agsq_token_stall", "event=0xaf,umask=0x10", TopDown, "Dispatch stalls: AGSQ Tokens unavailable."),
    ev("de_dis_dispatch_token_stalls1.int_phy_reg_file_token_stall", "event=0xae,umask=0x1", TopDown, "Dispatch stalls: Integer Physical Register File resource stall."),
    ev("de_dis_dispatch_token_stalls1.load_queue_token_stall", "event=0xae,umask=0x2", TopDown, "Dispatch stalls: Load queue resource stall."),
    ev("de_dis_dispatch_token_stalls1.store_queue_token_stall", "event=0xae,umask=0x4", TopDown, "Dispatch stalls: Store queue resource stall."),
    ev("de_dis_dispatch_token_stalls1.fp_sch_rsrc_stall", "event=0xae,umask=0x40", TopDown, "Dispatch stalls: FP scheduler resource stall."),
    // Cache
    ev("ls_dc_accesses", "event=0x40", Cache, "Number of accesses to the dcache for load/store references."),
    ev("ls_mab_alloc.loads", "event=0x41,umask=0x1", Cache, "LS MAB Allocates by Type. Loads."),
    ev("l2_request_g1.all_no_prefetch", "event=0x60,umask=0xf9", Cache, "All L2 cache requests except L2 prefetches."),
    ev("l2_cache_req_stat.ls_rd_blk_c", "event=0x64,umask=0x8", Cache, "Core to L2 cacheable request access status: Data cache request miss in L2 (all types)."),
    ev("l2_cache_req_stat.ic_dc_miss_in_l2", "event=0x64,umask=0x9", Cache, "Core to L2 cacheable request access status: IC and DC request miss in L2."),
    ev("l2_cache_req_stat.ic_dc_hit_in_l2", "event=0x64,umask=0xf6", Cache, "Core to L2 cacheable request access status: IC and DC request hit in L2."),
    ev("l2_pf_hit_l2", "event=0x70,umask=0xff", Cache, "L2 prefetch hit in L2."),
    ev("l2_pf_miss_l2_hit_l3", "event=0x71,umask=0xff", Cache, "L2 prefetcher hits in L3."),
    ev("l2_pf_miss_l2_l3", "event=0x72,umask=0xff", Cache, "L2 prefetcher misses in L3."),
    ev("l2_latency.l2_cycles_waiting_on_fills", "event=0x62,umask=0x1", Cache, "Total cycles spent waiting for L2 fills to complete from L3 or memory, divided by four."),
    ev("ls_refills_from_sys.ls_mabresp_lcl_l2", "event=0x43,umask=0x1", Cache, "Demand Data Cache Fills by Data Source. Local L2 hit."),
    ev("ls_refills_from_sys.ls_mabresp_lcl_cache", "event=0x43,umask=0x2", Cache, "Demand Data Cache Fills by Data Source. Hit in cache; local CCX (not Local L2)."),
    ev("ls_refills_from_sys.ls_mabresp_rmt_cache", "event=0x43,umask=0x10", Cache, "Demand Data Cache Fills by Data Source. Hit in cache; Remote CCX, home node on a different die."),
    // Memory
    ev("ls_refills_from_sys.ls_mabresp_lcl_dram", "event=0x43,umask=0x8", Memory, "Demand Data Cache Fills by Data Source. DRAM or IO from this thread's die."),
    ev("ls_refills_from_sys.ls_mabresp_rmt_dram", "event=0x43,umask=0x40", Memory, "Demand Data Cache Fills by Data Source. DRAM or IO from different die."),
    ev("ls_hw_pf_dc_fill.ls_mabresp_lcl_dram", "event=0x5a,umask=0x8", Memory, "Hardware Prefetch Data Cache Fills by Data Source. From DRAM (home node local)."),
    ev("ls_hw_pf_dc_fill.ls_mabresp_rmt_dram", "event=0x5a,umask=0x40", Memory, "Hardware Prefetch Data Cache Fills by Data Source. From DRAM (home node remote)."),
    // Tlb
    ev("ls_l1_d_tlb_miss.all", "event=0x45,umask=0xff", Tlb, "All L1 DTLB Misses or Reloads."),
    ev("ls_l1_d_tlb_miss.tlb_reload_4k_l2_miss", "event=0x45,umask=0x10", Tlb, "L1 DTLB Miss. DTLB reload to a 4K page that miss the L2 TLB."),
    ev("ls_l1_d_tlb_miss.tlb_reload_2m_l2_miss", "event=0x45,umask=0x40", Tlb, "L1 DTLB Miss. DTLB reload to a 2M page that miss in the L2 TLB."),
    ev("ls_l1_d_tlb_miss.tlb_reload_1g_l2_miss", "event=0x45,umask=0x80", Tlb, "L1 DTLB Miss. DTLB reload to a 1G page that miss in the L2 TLB."),
    ev("ls_tablewalker.dside", "event=0x46,umask=0x3", Tlb, "Total Page Table Walks on D-side."),
    ev("ls_tablewalker.iside", "event=0x46,umask=0xc", Tlb, "Total Page Table Walks on I-side."),
    ev("bp_l1_tlb_miss_l2_hit", "event=0x84", Tlb, "The number of instruction fetches that miss in the L1 ITLB but hit in the L2 ITLB."),
    ev("bp_l1_tlb_miss_l2_tlb_miss", "event=0x85,umask=0xff", Tlb, "The number of instruction fetches that miss in both the L1 and L2 TLBs."),
    // Branch
    ev("ex_ret_brn", "event=0xc2", Branch, "Retired Branch Instructions."),
    ev("ex_ret_brn_misp", "event=0xc3", Branch, "Retired Branch Instructions Mispredicted."),
    ev("ex_ret_brn_tkn", "event=0xc4", Branch, "Retired Taken Branch Instructions."),
    ev("ex_ret_brn_tkn_misp", "event=0xc5", Branch, "Retired Taken Branch Instructions Mispredicted."),
    ev("ex_ret_cond", "event=0xd1", Branch, "Retired Conditional Branch Instructions."),
    ev("ex_ret_brn_ind_misp", "event=0xca", Branch, "Retired Indirect Branch Instructions Mispredicted."),
    ev("ex_ret_near_ret_mispred", "event=0xc9", Branch, "Retired Near Returns Mispredicted."),
    // Frontend
    ev("ic_fw32_miss", "event=0x81", Frontend, "The number of 32B fetch windows tried to read the L1 IC and missed in the full tag."),
];

/// Zen 3 (family 19h), from the kernel's `amdzen3/*.json`.
#[rustfmt::skip]
pub const ZEN3: &[NamedEvent] = &[
    // Pipeline
    ev("ls_not_halted_cyc", "event=0x76", Pipeline, "Cycles not in Halt."),
    ev("ex_ret_instr", "event=0xc0", Pipeline, "Retired Instructions."),
    ev("ex_ret_ops", "event=0xc1", Pipeline, "Retired Ops."),
    ev("ex_div_busy", "event=0xd3", Pipeline, "Div Cycles Busy count."),
    ev("ls_dispatch.ld_dispatch", "event=0x29,umask=0x1", Pipeline, "Dispatch of a single op that performs a memory load."),
    ev("ls_dispatch.store_dispatch", "event=0x29,umask=0x2", Pipeline, "Dispatch of a single op that performs a memory store."),
    // TopDown
    ev("de_dis_uop_queue_empty_di0", "event=0xa9", TopDown, "Cycles where the Micro-Op Queue is empty."),
    ev("ic_fetch_stall.ic_stall_any", "event=0x87,umask=0x4", TopDown, "Instruction Pipe Stall. IC pipe was stalled during this clock cycle for any reason."),
    ev("ic_fetch_stall.ic_stall_back_pressure", "event=0x87,umask=0x1", TopDown, "IC pipe was stalled during this clock cycle due to back-pressure."),
    ev("de_dis_dispatch_token_stalls1.int_phy_reg_file_rsrc_stall", "event=0xae,umask=0x1", TopDown, "Dispatch stalls: Integer Physical Register File resource stall."),
    ev("de_dis_dispatch_token_stalls1.load_queue_rsrc_stall", "event=0xae,umask=0x2", TopDown, "Dispatch stalls: Load Queue resource stall."),
    ev("de_dis_dispatch_token_stalls1.store_queue_rsrc_stall", "event=0xae,umask=0x4", TopDown, "Dispatch stalls: Store Queue resource stall."),
    ev("de_dis_dispatch_token_stalls1.fp_sch_rsrc_stall", "event=0xae,umask=0x40", TopDown, "Dispatch stalls: FP scheduler resource stall."),
    ev("de_dis_dispatch_token_stalls2.retire_token_stall", "event=0xaf,umask=0x20", TopDown, "Dispatch stalls: Insufficient Retire Queue tokens available."),
    ev("de_dis_dispatch_token_stalls2.agsq_token_stall", "event=0xaf,umask=0x10", TopDown, "Dispatch stalls: AGSQ Tokens unavailable."),
    // Cache
    ev("ls_dc_accesses", "event=0x40", Cache, "Number of accesses to the dcache for load/store references."),
    ev("ls_mab_alloc.load_store_allocations", "event=0x41,umask=0x3f", Cache, "Load Store Allocations. Counts when a LS pipe allocates a MAB entry."),
    ev("ls_alloc_mab_count", "event=0x5f", Cache, "Count of Allocated Mabs"),
    ev("l2_request_g1.all_no_prefetch", "event=0x60,umask=0xf9", Cache, "All L2 cache requests except L2 prefetches."),
    ev("l2_cache_req_stat.ls_rd_blk_c", "event=0x64,umask=0x8", Cache, "Core to L2 cacheable request access status: Data cache request miss in L2 (all types)."),
    ev("l2_cache_req_stat.ic_dc_miss_in_l2", "event=0x64,umask=0x9", Cache, "Core to L2 cacheable request access status: IC and DC request miss in L2."),
    ev("l2_cache_req_stat.ic_dc_hit_in_l2", "event=0x64,umask=0xf6", Cache, "Core to L2 cacheable request access status: IC and DC request hit in L2."),
    ev("l2_pf_hit_l2", "event=0x70,umask=0xff", Cache, "L2 prefetch hit in L2."),
    ev("l2_pf_miss_l2_hit_l3", "event=0x71,umask=0xff", Cache, "L2 prefetcher hits in L3."),
    ev("l2_pf_miss_l2_l3", "event=0x72,umask=0xff", Cache, "L2 prefetcher misses in L3."),
    ev("l2_latency.l2_cycles_waiting_on_fills", "event=0x62,umask=0x1", Cache, "Total cycles spent waiting for L2 fills to complete from L3 or memory, divided by four."),
    ev("ls_dmnd_fills_from_sys.lcl_l2", "event=0x43,umask=0x1", Cache, "Demand Data Cache Fills by Data Source. From Local L2 to the core."),
    ev("ls_dmnd_fills_from_sys.int_cache", "event=0x43,umask=0x2", Cache, "Demand Data Cache Fills by Data Source. From L3 or different L2 in same CCX."),
    ev("ls_dmnd_fills_from_sys.ext_cache_local", "event=0x43,umask=0x4", Cache, "Demand Data Cache Fills by Data Source. From cache of different CCX in same node."),
    ev("ls_dmnd_fills_from_sys.ext_cache_remote", "event=0x43,umask=0x10", Cache, "Demand Data Cache Fills by Data Source. From CCX Cache in different Node."),
    // Memory
    ev("ls_dmnd_fills_from_sys.mem_io_local", "event=0x43,umask=0x8", Memory, "Demand Data Cache Fills by Data Source. From DRAM or IO connected in same node."),
    ev("ls_dmnd_fills_from_sys.mem_io_remote", "event=0x43,umask=0x40", Memory, "Demand Data Cache Fills by Data Source. From DRAM or IO connected in different Node."),
    ev("ls_any_fills_from_sys.mem_io_local", "event=0x44,umask=0x8", Memory, "Any Data Cache Fills by Data Source. From DRAM or IO connected in same node."),
    ev("ls_any_fills_from_sys.mem_io_remote", "event=0x44,umask=0x40", Memory, "Any Data Cache Fills by Data Source. From DRAM or IO connected in different Node."),
    // Tlb
    ev("ls_l1_d_tlb_miss.all", "event=0x45,umask=0xff", Tlb, "All L1 DTLB Misses or Reloads."),
    ev("ls_l1_d_tlb_miss.tlb_reload_4k_l2_miss", "event=0x45,umask=0x10", Tlb, "L1 DTLB Miss. DTLB reload to a 4K page that missed the L2 TLB."),
    ev("ls_l1_d_tlb_miss.tlb_reload_2m_l2_miss", "event=0x45,umask=0x40", Tlb, "L1 DTLB Miss. DTLB reload to a 2M page that also missed in the L2 TLB."),
    ev("ls_l1_d_tlb_miss.tlb_reload_1g_l2_miss", "event=0x45,umask=0x80", Tlb, "L1 DTLB Miss. DTLB reload to a 1G page that also missed in the L2 TLB."),
    ev("ls_tablewalker.dside", "event=0x46,umask=0x3", Tlb, "Total Page Table Walks on D-side."),
    ev("ls_tablewalker.iside", "event=0x46,umask=0xc", Tlb, "Total Page Table Walks on I-side."),
    ev("bp_l1_tlb_miss_l2_tlb_hit", "event=0x84", Tlb, "L1 ITLB Miss, L2 ITLB Hit."),
    ev("bp_l1_tlb_miss_l2_tlb_miss", "event=0x85,umask=0xff", Tlb, "The number of instruction fetches that miss in both the L1 and L2 TLBs."),
    // Branch
    ev("ex_ret_brn", "event=0xc2", Branch, "Retired Branch Instructions."),
    ev("ex_ret_brn_misp", "event=0xc3", Branch, "Retired Branch Instructions Mispredicted."),
    ev("ex_ret_brn_tkn", "event=0xc4", Branch, "Retired Taken Branch Instructions."),
    ev("ex_ret_brn_tkn_misp", "event=0xc5", Branch, "Retired Taken Branch Instructions Mispredicted."),
    ev("ex_ret_cond", "event=0xd1", Branch, "Retired Conditional Branch Instructions."),
    ev("ex_ret_msprd_brnch_instr_dir_msmtch", "event=0x1c7", Branch, "Retired Mispredicted Branch Instructions due to Direction Mismatch"),
    ev("ex_ret_ind_brch_instr", "event=0xcc", Branch, "Retired Indirect Branch Instructions."),
    ev("ex_ret_brn_ind_misp", "event=0xca", Branch, "Retired Indirect Branch Instructions Mispredicted."),
    // Frontend
    ev("ic_tag_hit_miss.instruction_cache_miss", "event=0x18e,umask=0x18", Frontend, "Instruction Cache Miss."),
    ev("op_cache_hit_miss.op_cache_miss", "event=0x28f,umask=0x4", Frontend, "Op Cache Miss."),
];

/// Zen 4 (family 19h models 10h+), from the kernel's `amdzen4/*.json`.
#[rustfmt::skip]
pub const ZEN4: &[NamedEvent] = &[
    // Pipeline
    ev("ls_not_halted_cyc", "event=0x76", Pipeline, "Core cycles not in halt."),
    ev("ex_ret_instr", "event=0xc0", Pipeline, "Retired instructions."),
    ev("ex_ret_ops", "event=0xc1", Pipeline, "Retired macro-ops."),
    ev("ex_ret_ucode_ops", "event=0x1c2", Pipeline, "Retired microcode ops."),
    ev("ls_not_halted_p0_cyc.p0_freq_cyc", "event=0x120,umask=0x1", Pipeline, "Reference cycles (P0 frequency) not in halt."),
    ev("ls_dispatch.ld_dispatch", "event=0x29,umask=0x1", Pipeline, "Number of memory load operations dispatched to the load-store unit."),
    ev("ls_dispatch.store_dispatch", "event=0x29,umask=0x2", Pipeline, "Number of memory store operations dispatched to the load-store unit."),
    // TopDown
    ev("de_src_op_disp.all", "event=0xaa,umask=0x7", TopDown, "Ops dispatched from any source."),
    ev("de_no_dispatch_per_slot.no_ops_from_frontend", "event=0x1a0,umask=0x1", TopDown, "In each cycle counts dispatch slots left empty because the front-end did not supply ops."),
    ev("de_no_dispatch_per_slot.backend_stalls", "event=0x1a0,umask=0x1e", TopDown, "In each cycle counts ops unable to dispatch because of back-end stalls."),
    ev("de_no_dispatch_per_slot.smt_contention", "event=0x1a0,umask=0x60", TopDown, "In each cycle counts ops unable to dispatch because the dispatch cycle was granted to the other SMT thread."),
    ev("ex_no_retire.not_complete", "event=0xd6,umask=0x2", TopDown, "Cycles with no retire while the oldest op is waiting to be executed."),
    ev("ex_no_retire.load_not_complete", "event=0xd6,umask=0xa2", TopDown, "Cycles with no retire while the oldest op is waiting for load data."),
    ev("resyncs_or_nc_redirects", "event=0x96", TopDown, "Pipeline restarts not caused by branch mispredicts."),
    // Cache
    ev("ls_mab_alloc.load_store_allocations", "event=0x41,umask=0x3f", Cache, "Miss Address Buffer (MAB) entries allocated by a Load-Store (LS) pipe for load-store allocations."),
    ev("ls_alloc_mab_count", "event=0x5f", Cache, "In-flight L1 data cache misses i.e. Miss Address Buffer (MAB) allocations each cycle."),
    ev("ls_dmnd_fills_from_sys.local_l2", "event=0x43,umask=0x1", Cache, "Demand data cache fills from local L2 cache."),
    ev("ls_dmnd_fills_from_sys.local_ccx", "event=0x43,umask=0x2", Cache, "Demand data cache fills from L3 cache or different L2 cache in the same CCX."),
    ev("ls_dmnd_fills_from_sys.near_cache", "event=0x43,umask=0x4", Cache, "Demand data cache fills from cache of another CCX when the address was in the same NUMA node."),
    ev("ls_dmnd_fills_from_sys.far_cache", "event=0x43,umask=0x10", Cache, "Demand data cache fills from cache of another CCX when the address was in a different NUMA node."),
    ev("ls_dmnd_fills_from_sys.all", "event=0x43,umask=0xff", Cache, "Demand data cache fills from all types of data sources."),
    ev("l2_request_g1.all_no_prefetch", "event=0x60,umask=0xf9", Cache, "L2 cache requests of common types not including prefetches."),
    ev("l2_cache_req_stat.dc_access_in_l2", "event=0x64,umask=0xf8", Cache, "Core to L2 cache requests (not including L2 prefetch) for data cache access."),
    ev("l2_cache_req_stat.dc_hit_in_l2", "event=0x64,umask=0xf0", Cache, "Core to L2 cache requests (not including L2 prefetch) for data cache hits."),
    ev("l2_cache_req_stat.ls_rd_blk_c", "event=0x64,umask=0x8", Cache, "Core to L2 cache requests (not including L2 prefetch) with status: data cache request miss in L2."),
    ev("l2_cache_req_stat.ic_dc_miss_in_l2", "event=0x64,umask=0x9", Cache, "Core to L2 cache requests (not including L2 prefetch) for data and instruction cache misses."),
    ev("l2_pf_hit_l2.all", "event=0x70,umask=0xff", Cache, "L2 prefetches accepted by the L2 pipeline which hit in the L2 cache of all types."),
    ev("l2_pf_miss_l2_hit_l3.all", "event=0x71,umask=0xff", Cache, "L2 prefetches which miss the L2 cache and hit in the L3 cache of all types."),
    ev("l2_pf_miss_l2_l3.all", "event=0x72,umask=0xff", Cache, "L2 prefetches which miss the L2 and the L3 caches of all types."),
    // Memory
    ev("ls_dmnd_fills_from_sys.dram_io_near", "event=0x43,umask=0x8", Memory, "Demand data cache fills from either DRAM or MMIO in the same NUMA node."),
    ev("ls_dmnd_fills_from_sys.dram_io_far", "event=0x43,umask=0x40", Memory, "Demand data cache fills from either DRAM or MMIO in a different NUMA node (same or different socket)."),
    ev("ls_dmnd_fills_from_sys.alternate_memories", "event=0x43,umask=0x80", Memory, "Demand data cache fills from extension memory."),
    ev("ls_any_fills_from_sys.dram_io_all", "event=0x44,umask=0x48", Memory, "Any data cache fills from either DRAM or MMIO in any NUMA node (same or different socket)."),
    ev("ls_any_fills_from_sys.far_all", "event=0x44,umask=0x50", Memory, "Any data cache fills from cache of another CCX, DRAM or MMIO in a different NUMA node."),
    ev("ls_hw_pf_dc_fills.dram_io_near", "event=0x5a,umask=0x8", Memory, "Hardware prefetch data cache fills from either DRAM or MMIO in the same NUMA node."),
    // Tlb
    ev("ls_l1_d_tlb_miss.all", "event=0x45,umask=0xff", Tlb, "L1 DTLB misses for all page sizes."),
    ev("ls_l1_d_tlb_miss.all_l2_miss", "event=0x45,umask=0xf0", Tlb, "L1 DTLB misses with L2 DTLB misses (page-table walks are requested) for all page sizes."),
    ev("ls_l1_d_tlb_miss.tlb_reload_4k_l2_miss", "event=0x45,umask=0x10", Tlb, "L1 DTLB misses with L2 DTLB misses (page-table walks are requested) for 4k pages."),
    ev("ls_l1_d_tlb_miss.tlb_reload_2m_l2_miss", "event=0x45,umask=0x40", Tlb, "L1 DTLB misses with L2 DTLB misses (page-table walks are requested) for 2M pages."),
    ev("bp_l1_tlb_miss_l2_tlb_hit", "event=0x84", Tlb, "Instruction fetches that miss in the L1 ITLB but hit in the L2 ITLB."),
    ev("bp_l1_tlb_miss_l2_tlb_miss.all", "event=0x85,umask=0xf", Tlb, "Instruction fetches that miss in both the L1 and L2 ITLBs (page-table walks are requested) for all page sizes."),
    // Branch
    ev("ex_ret_brn", "event=0xc2", Branch, "Retired branch instructions (all types of architectural control flow changes)."),
    ev("ex_ret_brn_misp", "event=0xc3", Branch, "Retired branch instructions mispredicted."),
    ev("ex_ret_brn_tkn", "event=0xc4", Branch, "Retired taken branch instructions."),
    ev("ex_ret_brn_tkn_misp", "event=0xc5", Branch, "Retired taken branch instructions mispredicted."),
    ev("ex_ret_cond", "event=0xd1", Branch, "Retired conditional branch instructions."),
    ev("ex_ret_msprd_brnch_instr_dir_msmtch", "event=0x1c7", Branch, "Retired branch instructions mispredicted due to direction mismatch."),
    ev("ex_ret_ind_brch_instr", "event=0xcc", Branch, "Retired indirect branch instructions."),
    ev("ex_ret_brn_ind_misp", "event=0xca", Branch, "Retired indirect branch instructions mispredicted (only EX mispredicts)."),
    // Frontend
    ev("de_op_queue_empty", "event=0xa9", Frontend, "Cycles when the op queue is empty."),
    ev("ic_tag_hit_miss.instruction_cache_miss", "event=0x18e,umask=0x18", Frontend, "Instruction cache misses."),
    ev("op_cache_hit_miss.op_cache_miss", "event=0x28f,umask=0x4", Frontend, "Op cache misses."),
];

/// Zen 5 (family 1Ah), from the kernel's `amdzen5/*.json`.
#[rustfmt::skip]
pub const ZEN5: &[NamedEvent] = &[
    // Pipeline
    ev("ls_not_halted_cyc", "event=0x76", Pipeline, "Core cycles not in halt."),
    ev("ex_ret_instr", "event=0xc0", Pipeline, "Retired instructions."),
    ev("ex_ret_ops", "event=0xc1", Pipeline, "Retired macro-ops."),
    ev("ex_ret_ucode_ops", "event=0x1c2", Pipeline, "Retired microcode ops."),
    ev("ls_not_halted_p0_cyc.p0_freq_cyc", "event=0x120,umask=0x1", Pipeline, "Reference cycles (P0 frequency) not in halt."),
    ev("ls_dispatch.ld_dispatch", "event=0x29,umask=0x1", Pipeline, "Number of memory load operations dispatched to the load-store unit."),
    ev("ls_dispatch.store_dispatch", "event=0x29,umask=0x2", Pipeline, "Number of memory store operations dispatched to the load-store unit."),
    // TopDown
    ev("de_src_op_disp.all", "event=0xaa,umask=0x7", TopDown, "Ops dispatched from any source."),
    ev("de_no_dispatch_per_slot.no_ops_from_frontend", "event=0x1a0,umask=0x1", TopDown, "In each cycle counts dispatch slots left empty because the front-end did not supply ops."),
    ev("de_no_dispatch_per_slot.backend_stalls", "event=0x1a0,umask=0x1e", TopDown, "In each cycle counts ops unable to dispatch because of back-end stalls."),
    ev("de_no_dispatch_per_slot.smt_contention", "event=0x1a0,umask=0x60", TopDown, "In each cycle counts ops unable to dispatch because the dispatch cycle was granted to the other SMT thread."),
    ev("ex_no_retire.not_complete", "event=0xd6,umask=0x2", TopDown, "Cycles with no retire while the oldest op is waiting to be executed."),
    ev("ex_no_retire.load_not_complete", "event=0xd6,umask=0xa2", TopDown, "Cycles with no retire while the oldest op is waiting for load data."),
    ev("bp_redirects.resync", "event=0x9f,umask=0x1", TopDown, "Redirects of the branch predictor caused by resyncs."),
    // Cache
    ev("ls_alloc_mab_count", "event=0x5f", Cache, "In-flight L1 data cache misses i.e. Miss Address Buffer (MAB) allocations each cycle."),
    ev("ls_dmnd_fills_from_sys.local_l2", "event=0x43,umask=0x1", Cache, "Demand data cache fills from local L2 cache."),
    ev("ls_dmnd_fills_from_sys.local_ccx", "event=0x43,umask=0x2", Cache, "Demand data cache fills from L3 cache or different L2 cache in the same CCX."),
    ev("ls_dmnd_fills_from_sys.near_cache", "event=0x43,umask=0x4", Cache, "Demand data cache fills from cache of another CCX when the address was in the same NUMA node."),
    ev("ls_dmnd_fills_from_sys.far_cache", "event=0x43,umask=0x10", Cache, "Demand data cache fills from cache of another CCX when the address was in a different NUMA node."),
    ev("ls_dmnd_fills_from_sys.all", "event=0x43,umask=0xff", Cache, "Demand data cache fills from all types of data sources."),
    ev("l2_request_g1.all_no_prefetch", "event=0x60,umask=0xf1", Cache, "L2 cache requests of common types not including prefetches."),
    ev("l2_cache_req_stat.dc_access_in_l2", "event=0x64,umask=0xf8", Cache, "Core to L2 cache requests (not including L2 prefetch) for data cache access."),
    ev("l2_cache_req_stat.dc_hit_in_l2", "event=0x64,umask=0xf0", Cache, "Core to L2 cache requests (not including L2 prefetch) for data cache hits."),
    ev("l2_cache_req_stat.ls_rd_blk_c", "event=0x64,umask=0x8", Cache, "Core to L2 cache requests (not including L2 prefetch) with status: data cache request miss in L2."),
    ev("l2_cache_req_stat.ic_dc_miss_in_l2", "event=0x64,umask=0x9", Cache, "Core to L2 cache requests (not including L2 prefetch) for data and instruction cache misses."),
    ev("l2_pf_hit_l2.l1_dc_l2_hwpf", "event=0x70,umask=0xff", Cache, "L2 prefetches which hit in the L2 cache (L1 data and L2 hardware prefetchers)."),
    ev("l2_pf_miss_l2_hit_l3.l1_dc_l2_hwpf", "event=0x71,umask=0xff", Cache, "L2 prefetches which miss the L2 cache but hit in the L3 cache (L1 data and L2 hardware prefetchers)."),
    ev("l2_pf_miss_l2_l3.l1_dc_l2_hwpf", "event=0x72,umask=0xff", Cache, "L2 prefetches which miss the L2 as well as the L3 caches (L1 data and L2 hardware prefetchers)."),
    ev("l2_fill_rsp_src.local_ccx", "event=0x165,umask=0x2", Cache, "L2 cache fills from L3 cache or different L2 cache in the same CCX."),
    // Memory
    ev("ls_dmnd_fills_from_sys.dram_io_near", "event=0x43,umask=0x8", Memory, "Demand data cache fills from either DRAM or MMIO in the same NUMA node."),
    ev("ls_dmnd_fills_from_sys.dram_io_far", "event=0x43,umask=0x40", Memory, "Demand data cache fills from either DRAM or MMIO in a different NUMA node (same or different socket)."),
    ev("ls_dmnd_fills_from_sys.alternate_memories", "event=0x43,umask=0x80", Memory, "Demand data cache fills from extension memory."),
    ev("ls_any_fills_from_sys.dram_io_all", "event=0x44,umask=0x48", Memory, "Any data cache fills from either DRAM or MMIO in any NUMA node (same or different socket)."),
    ev("l2_fill_rsp_src.dram_io_near", "event=0x165,umask=0x8", Memory, "L2 cache fills from either DRAM or MMIO in the same NUMA node."),
    ev("l2_fill_rsp_src.dram_io_far", "event=0x165,umask=0x40", Memory, "L2 cache fills from either DRAM or MMIO in a different NUMA node (same or different socket)."),
    // Tlb
    ev("ls_l1_d_tlb_miss.all", "event=0x45,umask=0xff", Tlb, "L1 DTLB misses for all page sizes."),
    ev("ls_l1_d_tlb_miss.all_l2_miss", "event=0x45,umask=0xf0", Tlb, "L1 DTLB misses with L2 DTLB misses (page-table walks are requested) for all page sizes."),
    ev("ls_l1_d_tlb_miss.tlb_reload_4k_l2_miss", "event=0x45,umask=0x10", Tlb, "L1 DTLB misses with L2 DTLB misses (page-table walks are requested) for 4k pages."),
    ev("ls_l1_d_tlb_miss.tlb_reload_2m_l2_miss", "event=0x45,umask=0x40", Tlb, "L1 DTLB misses with L2 DTLB misses (page-table walks are requested) for 2M pages."),
    ev("bp_l1_tlb_miss_l2_tlb_hit", "event=0x84", Tlb, "Instruction fetches that miss in the L1 ITLB but hit in the L2 ITLB."),
    ev("bp_l1_tlb_miss_l2_tlb_miss.all", "event=0x85,umask=0xf", Tlb, "Instruction fetches that miss in both the L1 and L2 ITLBs (page-table walks are requested) for all page sizes."),
    // Branch
    ev("ex_ret_brn", "event=0xc2", Branch, "Retired branch instructions (all types of architectural control flow changes)."),
    ev("ex_ret_brn_misp", "event=0xc3", Branch, "Retired branch instructions mispredicted."),
    ev("ex_ret_brn_tkn", "event=0xc4", Branch, "Retired taken branch instructions."),
    ev("ex_ret_brn_tkn_misp", "event=0xc5", Branch, "Retired taken branch instructions mispredicted."),
    ev("ex_ret_cond", "event=0xd1", Branch, "Retired conditional branch instructions."),
    ev("ex_ret_msprd_brnch_instr_dir_msmtch", "event=0x1c7", Branch, "Retired branch instructions mispredicted due to direction mismatch."),
    ev("ex_ret_ind_brch_instr", "event=0xcc", Branch, "Retired indirect branch instructions."),
    ev("ex_ret_brn_ind_misp", "event=0xca", Branch, "Retired indirect branch instructions mispredicted (only EX mispredicts)."),
    // Frontend
    ev("de_op_queue_empty", "event=0xa9", Frontend, "Cycles where the op queue is empty."),
    ev("ic_tag_hit_miss.instruction_cache_miss", "event=0x18e,umask=0x18", Frontend, "Instruction cache misses."),
    ev("op_cache_hit_miss.op_cache_miss", "event=0x28f,umask=0x4", Frontend, "Op cache misses."),
];
