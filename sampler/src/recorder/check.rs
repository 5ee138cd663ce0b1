//! What the recorder can say before and after opening: a recording this machine cannot
//! make ([`RecordPlan::check`], before anything opens), and what an open error means
//! ([`OpenError::diagnose`]). Both are data: the program words them with its flags.

use hwprof_pmu::EventList;
use hwprof_pmu::event::Class;

use super::{OpenError, RecordPlan};
use crate::config;
use crate::error::Error;

/// A recording this machine cannot make, found before anything opens.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Branch stacks were asked for, and there is no hardware PMU to record them (a
    /// limit of the machine).
    #[error(
        "branch-stack sampling needs a hardware PMU that records branches, and this machine exposes none"
    )]
    NoPmuForBranches,
    /// Branch stacks were asked for on an event that never has them (a mistake in what
    /// was asked).
    #[error("branch-stack sampling needs a hardware event, and '{event}' is {kind}")]
    BranchesNeedHardware {
        /// The event.
        event: String,
        /// What it is: `a software event`, `a tracepoint`, `a breakpoint`, `a uprobe`.
        kind: &'static str,
        /// This machine has a hardware PMU (another event could do).
        has_pmu: bool,
    },
    /// A hardware event was named where there is no hardware PMU.
    #[error("{event}: not supported here: this kernel exposes no hardware PMU")]
    NoPmu {
        /// The event.
        event: String,
    },
}

impl RecordPlan {
    /// What cannot record here, checked before anything opens: branch stacks
    /// (`branches`: they were asked for) on events that never have them or on a
    /// machine without a hardware PMU (`has_pmu`), and hardware events named where
    /// there is none. The kernel would only say EOPNOTSUPP or ENOENT. Errors: the
    /// default event's (see [`RecordPlan::events_to_open`]).
    pub fn check(&self, has_pmu: bool, branches: bool) -> crate::Result<Option<Refused>> {
        let default_event = self.options.default_event;
        if branches && default_event && !has_pmu {
            // Before the default event's notice: the fallback to cpu-clock cannot help.
            return Ok(Some(Refused::NoPmuForBranches));
        }
        let (first, _) = self.events_to_open()?;
        if branches {
            let kind = |c: Class| match c {
                Class::Software => Some("a software event"),
                Class::Tracepoint => Some("a tracepoint"),
                Class::Breakpoint => Some("a breakpoint"),
                Class::Uprobe => Some("a uprobe"),
                Class::Core | Class::Other => None,
            };
            // The default event is the machine's choice (cpu-clock only without a PMU).
            let named = first.events.iter().filter(|_| !default_event);
            if let Some((e, kind)) = named.filter_map(|e| kind(e.class).map(|k| (e, k))).next() {
                let event = e.name.clone();
                return Ok(Some(Refused::BranchesNeedHardware {
                    event,
                    kind,
                    has_pmu,
                }));
            }
            if !has_pmu {
                return Ok(Some(Refused::NoPmuForBranches));
            }
        }
        if !default_event && !has_pmu {
            if let Some(e) = first.events.iter().find(|e| e.class == Class::Core) {
                let event = e.name.clone();
                return Ok(Some(Refused::NoPmu { event }));
            }
        }
        Ok(None)
    }
}

/// What an open error means ([`OpenError::diagnose`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Diagnosis {
    /// The PMU does not record branches (EOPNOTSUPP with branch stacks asked for).
    NoBranchRecording {
        /// The event that failed.
        event: String,
    },
    /// A PMU that only counts (msr, power, uncore...) refused a sampling event: the
    /// kernel's EINVAL there is that, not a bad config.
    CountingOnly {
        /// The event that failed.
        event: String,
        /// Its PMU.
        pmu: String,
    },
    /// A frequency above the kernel's limit (EINVAL), with the limit when readable.
    FreqAboveLimit {
        /// `perf_event_max_sample_rate`.
        max: Option<u64>,
    },
    /// Anything else: the error names the event and says what to do.
    Other,
}

impl OpenError {
    /// What this error means (`branches`: branch stacks were asked for).
    pub fn diagnose(&self, branches: bool) -> Diagnosis {
        diagnose(&self.error, &self.events, branches)
    }
}

fn failed_event<'a>(e: &'a Error, list: &'a EventList) -> &'a str {
    match e {
        Error::Pmu(hwprof_pmu::Error::Open { event, .. }) => Some(event.as_str()),
        _ => None,
    }
    .or_else(|| list.events.first().map(|e| e.name.as_str()))
    .unwrap_or_default()
}

fn diagnose(e: &Error, list: &EventList, branches: bool) -> Diagnosis {
    let event = failed_event(e, list);
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) if branches => Diagnosis::NoBranchRecording {
            event: event.to_string(),
        },
        Some(libc::EINVAL) => {
            let x = list.events.iter();
            if let Some(ev) = x
                .clone()
                .find(|x| x.name == event && x.class == Class::Other)
            {
                return Diagnosis::CountingOnly {
                    event: event.to_string(),
                    pmu: ev.pmu.clone(),
                };
            }
            // Refused before opening when the limit is readable.
            let max = config::max_sample_rate();
            let above = |e: &hwprof_pmu::Event| max.is_none_or(|m| e.attr.sample_period > m);
            if x.clone().any(|e| e.attr.freq && above(e)) {
                return Diagnosis::FreqAboveLimit { max };
            }
            Diagnosis::Other
        }
        _ => Diagnosis::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_failed(errno: i32) -> Error {
        Error::Pmu(hwprof_pmu::Error::Open {
            event: "cycles".into(),
            source: std::io::Error::from_raw_os_error(errno),
            hint: "not supported".into(),
        })
    }

    #[test]
    fn eopnotsupp_with_branch_stacks_is_no_branch_recording() {
        let list = EventList::default();
        let d = diagnose(&open_failed(libc::EOPNOTSUPP), &list, true);
        let event = "cycles".to_string();
        assert_eq!(d, Diagnosis::NoBranchRecording { event });
        let d = diagnose(&open_failed(libc::EOPNOTSUPP), &list, false);
        assert_eq!(d, Diagnosis::Other);
    }

    #[test]
    fn branch_stacks_on_software_events_are_refused() {
        let events = hwprof_pmu::Encoder::host()
            .parse("cpu-clock")
            .expect("cpu-clock");
        let target = hwprof_pmu::target::Target::SystemWide { cpus: None };
        let rec = RecordPlan::new(events, target);
        let r = rec.check(true, true).expect("check");
        assert!(
            matches!(&r, Some(Refused::BranchesNeedHardware { event, kind: "a software event", has_pmu: true }) if event == "cpu-clock"),
            "{r:?}"
        );
        assert_eq!(rec.check(false, false).expect("check"), None);
    }
}
