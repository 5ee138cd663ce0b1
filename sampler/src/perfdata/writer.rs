//! Writing perf.data files, atomically.
