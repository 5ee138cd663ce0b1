//! `hwprof-pmu`: what to count and how to ask the kernel.
//!
//! This crate owns the `perf_event_open` layer of hwprof: the event grammar (generic and
//! hw-cache names, `rNNNN`, `pmu/term=val/`, vendor names, tracepoints, uprobes,
//! breakpoints, modifiers and groups), PMU discovery in sysfs, the built-in Intel and AMD
//! event tables and the perfmon JSON loader, counters and groups with multiplexing
//! scaling, and derived metrics. It samples nothing and writes no files; [`file`] is how
//! every hwprof crate opens the files it reads (regular files only, never blocking).
//!
//! The only `unsafe` code is in [`sys`].
//!
//! Uprobes that a target's children inherit are defined in tracefs and opened as
//! tracepoints ([`uprobe_events`]): the uprobe PMU's path pointer cannot be inherited.
//! [`Counter`] does this itself and removes the definitions when dropped.
//!
//! Count a closure with [`Counters`]; open any event list on any target with
//! [`Encoder::parse`] and [`Counter::open`]. With the `criterion` feature,
//! `hwprof_pmu::criterion::CounterMeasurement` makes criterion benches count
//! instructions or cycles (task-clock where there is no hardware PMU).

// Unsafe code only in `sys` (syscalls), which allows it.
#![deny(unsafe_code)]

pub mod attr;
pub mod catalog;
pub mod command;
pub mod counter;
pub mod cpu;
#[cfg(feature = "criterion")]
pub mod criterion;
pub mod error;
pub mod event;
pub mod file;
pub mod format;
pub mod metrics;
pub mod probe;
pub mod stat;
pub mod stop;
#[allow(unsafe_code)]
pub mod sys;
pub mod sysfs;
pub mod tables;
pub mod target;
pub mod uprobe_events;

pub use error::{Error, Result};
mod measure;

pub use counter::{Count, Counter, Slot, Status};
pub use event::{Encoder, Event, EventList};
pub use measure::{Counters, Counts};
