//! Reading perf.data files (file mode and pipe mode).
