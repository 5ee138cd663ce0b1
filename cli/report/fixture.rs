//! The rendering tests' table: the analysis crate's hand-checked profile
//! (`hwprof_analysis::report::fixture`, with its `fixtures` feature) under perf's default
//! sort keys.

pub use hwprof_analysis::report::fixture::profile;
use hwprof_analysis::report::{self, EventTable, Filter};
use hwprof_symbolize::Profile;

use crate::args::SortKey;

/// perf report's default sort keys.
pub const DEFAULT: [SortKey; 3] = [SortKey::Comm, SortKey::Dso, SortKey::Sym];

/// The table of `event` of `p` by `sort`, unfiltered.
pub fn aggregate(p: &Profile, event: usize, sort: &[SortKey], children: bool) -> EventTable {
    report::aggregate(p, event, super::keys(sort), &Filter::default(), children)
}
