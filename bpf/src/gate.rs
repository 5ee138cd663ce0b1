//! A program's own window (`HWPROF_GATE` in `src/c/hwprof.h`): for programs attached
//! to perf events, which run on every hit whether the events are enabled or not.

use crate::engine::Engine;
use crate::error::Error;

/// `gate` closed: no pid execs as this one.
const GATE_CLOSED: u32 = u32::MAX;

/// Whether a program counts (its `gate` map, read on every hit): open when
/// loaded. A window of its own for a program whose perf events count only while
/// enabled (it runs whether they are or not): closed until they are enabled, or opened
/// by the `exec` of a held command, and closed when they are disabled.
pub struct Gate {
    map: aya::maps::Array<aya::maps::MapData, u32>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate").finish_non_exhaustive()
    }
}

impl Gate {
    fn set(&mut self, v: u32) -> Result<(), Error> {
        self.map
            .set(0, v, 0)
            .map_err(|e| crate::engine::map_error("gate", &e))
    }

    /// Counts from now on.
    pub fn open(&mut self) -> Result<(), Error> {
        self.set(0)
    }

    /// Counts nothing from now on.
    pub fn close(&mut self) -> Result<(), Error> {
        self.set(GATE_CLOSED)
    }

    /// Counts once process `pid` execs (a command held before its `exec`, as perf's
    /// `enable_on_exec` starts its events); nothing until then.
    pub fn open_at_exec(&mut self, pid: u32) -> Result<(), Error> {
        self.set(pid)
    }
}

impl Gate {
    /// Attaches the object's `exec` program (named in its `HWPROF_GATE`), which
    /// [`Gate::open_at_exec`] needs, and takes its `gate` map (open).
    pub fn attach(engine: &mut Engine, exec_program: &str) -> Result<Gate, Error> {
        engine.attach_raw_tracepoint(exec_program, "sched_process_exec")?;
        Ok(Gate {
            map: engine.take_array("gate")?,
        })
    }
}
