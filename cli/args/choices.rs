//! The values of flags that pick one of a few choices (`--weight`, `--mem`, `mem report
//! -s`, `report --branch-sort`), spelled and documented here for clap and mapped to the
//! analysis type each stands for: `hwprof-analysis` knows nothing of flags.

use clap::ValueEnum;
use clap::builder::{EnumValueParser, TypedValueParser};
use hwprof_analysis::{branch, fold, mem};

/// The parser of a flag whose values are `E`'s, giving the analysis type `T`.
fn mapped<E, T>(to: fn(E) -> T) -> impl TypedValueParser<Value = T>
where
    E: ValueEnum + Clone + Send + Sync + 'static,
    T: Clone + Send + Sync + 'static,
{
    EnumValueParser::<E>::new().map(to)
}

/// How `offcpu` and `probe` trace (`--engine`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    /// BPF where it loads (and the stacks are frame pointers), else perf events.
    Auto,
    /// BPF programs that aggregate in the kernel.
    Bpf,
    /// perf events: every event and its stack through the ring buffer.
    Perf,
}

/// What a flame graph's widths measure (`flamegraph --weight`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Widths {
    /// One per sample.
    Samples,
    /// The events each sample stands for (its period): cycles, cache misses...
    Period,
    /// The sampled weight (e.g. PEBS load latency in cycles).
    Weight,
}

/// `--weight`'s parser.
pub fn weight() -> impl TypedValueParser<Value = fold::Weight> {
    mapped(|w: Widths| match w {
        Widths::Samples => fold::Weight::Samples,
        Widths::Period => fold::Weight::Period,
        Widths::Weight => fold::Weight::Weight,
    })
}

/// Where a sample was served (`flamegraph --mem LEVEL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Level {
    /// L1 hit.
    L1,
    /// Line fill buffer (miss address buffer) hit.
    Lfb,
    /// L2 hit.
    L2,
    /// L3 (LLC) hit, HITM included.
    L3,
    /// DRAM, local or remote.
    Dram,
    /// Local DRAM.
    LocalDram,
    /// Remote DRAM.
    RemoteDram,
    /// A remote cache: another socket's (`mem_lvl`'s remote cache bits), or any cache
    /// `mem_remote` marks as another core's, node's, socket's or board's.
    RemoteCache,
    /// A load that found the line modified in another core's cache (snoop HITM), local
    /// or remote.
    Hitm,
}

/// `--mem`'s parser.
pub fn level() -> impl TypedValueParser<Value = mem::Level> {
    mapped(|l: Level| match l {
        Level::L1 => mem::Level::L1,
        Level::Lfb => mem::Level::Lfb,
        Level::L2 => mem::Level::L2,
        Level::L3 => mem::Level::L3,
        Level::Dram => mem::Level::Dram,
        Level::LocalDram => mem::Level::LocalDram,
        Level::RemoteDram => mem::Level::RemoteDram,
        Level::RemoteCache => mem::Level::RemoteCache,
        Level::Hitm => mem::Level::Hitm,
    })
}

/// The tables of `mem report` (`-s`); perf's `--sort` keys of `perf mem report` are
/// accepted for the same tables (`mem`, `locked`, `symbol`, `symbol_daddr`, `dso_daddr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MemKey {
    /// Where the access was served, as `perf mem` prints it ("L1 hit", "Local RAM hit");
    /// perf's `mem`.
    #[value(alias = "mem")]
    Level,
    /// The snoop result ("None", "HitM").
    Snoop,
    /// The data TLB result ("L1 or L2 hit", "Walker miss").
    Tlb,
    /// Locked access ("Yes", "No"); perf's `locked`.
    #[value(alias = "locked")]
    Lock,
    /// The function of the ip; perf's `symbol`/`sym`.
    #[value(alias = "symbol", alias = "sym")]
    Function,
    /// The data symbol (without offset), or the data module for addresses no symbol
    /// covers; perf's `symbol_daddr`.
    #[value(alias = "symbol_daddr")]
    Data,
    /// The module the data address is mapped from; perf's `dso_daddr`.
    #[value(alias = "dso_daddr")]
    DataModule,
}

/// `mem report -s`'s parser.
pub fn mem_key() -> impl TypedValueParser<Value = mem::Key> {
    mapped(|k: MemKey| match k {
        MemKey::Level => mem::Key::Level,
        MemKey::Snoop => mem::Key::Snoop,
        MemKey::Tlb => mem::Key::Tlb,
        MemKey::Lock => mem::Key::Lock,
        MemKey::Function => mem::Key::Function,
        MemKey::Data => mem::Key::Data,
        MemKey::DataModule => mem::Key::DataModule,
    })
}

/// A sort key of the branch view (`report --branch-sort`; perf's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum BranchKey {
    /// The sample's command name.
    Comm,
    /// The module of the branch source.
    DsoFrom,
    /// The function of the branch source (its address when unresolved).
    SymbolFrom,
    /// The module of the branch target.
    DsoTo,
    /// The function of the branch target (its address when unresolved).
    SymbolTo,
    /// The cycles the entry recorded (0: not recorded).
    Cycles,
    /// Predicted, mispredicted, or neither recorded.
    Mispredict,
}

/// `--branch-sort`'s parser.
pub fn branch_key() -> impl TypedValueParser<Value = branch::Key> {
    mapped(|k: BranchKey| match k {
        BranchKey::Comm => branch::Key::Comm,
        BranchKey::DsoFrom => branch::Key::DsoFrom,
        BranchKey::SymbolFrom => branch::Key::SymbolFrom,
        BranchKey::DsoTo => branch::Key::DsoTo,
        BranchKey::SymbolTo => branch::Key::SymbolTo,
        BranchKey::Cycles => branch::Key::Cycles,
        BranchKey::Mispredict => branch::Key::Mispredict,
    })
}
