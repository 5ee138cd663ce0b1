//! A sample's stack as locations ((module, offset) pairs, normalized, not yet
//! symbolized): its recorded callchain (kernel and user parts, guest frames, the mark
//! of a stack unwound while recording that did not reach its root), LBR call-stack
//! stitching (`--call-graph lbr`), DWARF unwinding of its user registers and stack copy
//! (`--call-graph dwarf`), and its branch-stack entries (`report -b`).

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use hwprof_sampler::record::{Record, Sample, context, misc};

use crate::assemble::{Builder, MergeKey, RawBranch, RawSample};
use crate::chains::{ChainHit, ChainShape};
use crate::locate::Locator;
use crate::module::{Module, ModuleId};
use crate::process::Processes;
use crate::timeline::Timed;
use crate::unwind::fp;
use crate::unwind::stream::TRUNCATED_MARK;
use crate::unwind::{Ending, FileData, Mapped, UserRegs};

impl Builder<'_> {
    /// The location of an address of `pid`.
    fn locate(
        &mut self,
        procs: &mut Processes,
        pid: u32,
        addr: u64,
        kernel: bool,
        ret: bool,
    ) -> u32 {
        let (m, off) = procs.locate(pid, addr, kernel);
        if self.met.get(m as usize) != Some(&true) {
            // A module met first: its file is read while the replay goes on.
            if self.met.len() <= m as usize {
                self.met.resize(m as usize + 1, false);
            }
            if let Some(slot) = self.met.get_mut(m as usize) {
                *slot = true;
            }
            if let Some(module) = procs.module(m) {
                self.sym.prefetch(module);
            }
        }
        self.intern_loc((m, off, ret))
    }

    /// Takes one sample: its stack's locations, its branches, and the sample (merged
    /// into an equal one with [`crate::Options::merge`]).
    pub(crate) fn sample(&mut self, procs: &mut Processes, rec: &Record<'_>, s: &Sample<'_>) {
        let attr = rec.attr.unwrap_or(0);
        let period = s
            .period
            .filter(|&p| p != 0)
            .or_else(|| self.fixed_period.get(attr).copied())
            .unwrap_or(1);
        let mut weight = s.perf_weight();
        let mut count = 1;
        let (event, period) = match &mut self.weigh {
            Some(f) => match f(rec, s, period) {
                Some(w) => {
                    weight = w.weight;
                    count = w.count;
                    (w.event, w.period)
                }
                None => return,
            },
            None => (attr as u32, period),
        };
        let pid = s.pid.unwrap_or(u32::MAX);
        let tid = s.tid.unwrap_or(pid);
        let comm = procs.comm_of(pid, tid);
        let stack = self.sample_stack(procs, rec, s, pid);
        // What identifies the sample when samples are merged.
        let key = MergeKey {
            event,
            pid,
            tid,
            comm,
            stack,
            weighed: weight.is_some(),
        };
        if self.branches.is_some()
            && let Some(bs) = &s.branch_stack
        {
            let index = match &self.merged {
                Some(merged) => merged
                    .get(&key)
                    .copied()
                    .unwrap_or(self.samples.len() as u32),
                None => self.samples.len() as u32,
            };
            for e in bs.iter() {
                let from = self.locate(procs, pid, e.from, false, false);
                let to = self.locate(procs, pid, e.to, false, false);
                if let Some((list, ids)) = &mut self.branches {
                    let key = RawBranch {
                        sample: index,
                        from,
                        to,
                        from_addr: e.from,
                        to_addr: e.to,
                        flags: e.flags,
                    };
                    match ids.get(&key) {
                        Some(&i) => {
                            if let Some((_, n)) = list.get_mut(i as usize) {
                                *n += 1;
                            }
                        }
                        None => {
                            ids.insert(key, list.len() as u32);
                            list.push((key, 1));
                        }
                    }
                }
            }
        }
        if let Some(merged) = &mut self.merged {
            let i = match merged.get(&key) {
                Some(&i) => i,
                None => {
                    merged.insert(key, self.samples.len() as u32);
                    self.samples.len() as u32
                }
            };
            if let Some(t) = &mut self.timeline {
                let timed = Timed {
                    time: s.time.unwrap_or(Timed::NO_TIME),
                    period,
                    sample: i,
                    count: u32::try_from(count).unwrap_or(u32::MAX),
                };
                t.push(attr, tid, event, timed);
            }
            if let Some(m) = self.samples.get_mut(i as usize) {
                m.period = m.period.saturating_add(period);
                m.weight = m.weight.map(|w| w.saturating_add(weight.unwrap_or(0)));
                m.count += count;
                return;
            }
        }
        let merge = self.merged.is_some();
        self.samples.push(RawSample {
            event,
            pid,
            tid,
            comm,
            time: if merge { None } else { s.time },
            cpu: if merge { None } else { s.cpu },
            period,
            weight,
            stack,
            count,
        });
    }

    /// The stack (interned) of sample `s` of process `pid`: its recorded callchain, LBR
    /// call stack or DWARF-unwound user stack, as located against `procs`.
    fn sample_stack(
        &mut self,
        procs: &mut Processes,
        rec: &Record<'_>,
        s: &Sample<'_>,
        pid: u32,
    ) -> u32 {
        let attr = rec.attr.unwrap_or(0);
        let cpumode = rec.header.misc & misc::CPUMODE_MASK;
        let mut cur = std::mem::take(&mut self.cur);
        cur.clear();
        let mut pushed = false;
        // With the user registers and stack, the user part comes from unwinding them
        // (the callchain then holds the kernel part only, or a user part that is
        // dropped).
        let dwarf = match (&self.unwind, &s.regs_user, &s.stack_user) {
            (Some(u), Some(r), Some(stack)) => {
                UserRegs::from_sample(u.unwinder.arch(), r).map(|regs| {
                    (
                        regs,
                        stack
                            .data
                            .get(..stack.dyn_size as usize)
                            .unwrap_or(stack.data),
                    )
                })
            }
            _ => None,
        };
        // LBR call stacks: perf's `resolve_lbr_callchain_sample` (callee order). When the
        // callchain has a user part, the stack is the callchain's kernel part, then the
        // function of the most recent call (the first entry's target), then every
        // entry's call site; the callchain's user part is not used.
        let lbr = match (&s.callchain, &s.branch_stack) {
            (Some(chain), Some(bs))
                if self.lbr_call_stack.get(attr).copied().unwrap_or(false) && !bs.is_empty() =>
            {
                chain
                    .iter()
                    .position(|a| a == context::USER)
                    .map(|user| (chain.iter().take(user), bs))
            }
            _ => None,
        };
        let lbr_used = lbr.is_some();
        // A recorded callchain alone (no DWARF, no LBR): its stack is a function of its
        // words, its process's and the kernel's mappings and the cpumode, so each
        // distinct one is made once while those mappings stay as they are.
        let cacheable = dwarf.is_none() && !lbr_used;
        let fp_stack = !lbr_used && self.fp_stacks.get(attr).copied().unwrap_or(false);
        let chain_key = match (&s.callchain, cacheable) {
            (Some(chain), true) => Some((
                ChainShape {
                    pid,
                    maps: procs.maps_version(pid),
                    cpumode,
                },
                *chain,
            )),
            _ => None,
        };
        if let Some((shape, chain)) = chain_key
            && let Some(hit) = self.chains.get(shape, chain)
        {
            self.cur = cur;
            self.marked_truncated += hit.marks;
            if fp_stack && let Some((n, module)) = hit.fp {
                self.short_stacks.add(hit.stack, n, module);
            }
            return hit.stack;
        }
        let marks_before = self.marked_truncated;
        if let Some((kernel_part, bs)) = lbr {
            let mut kernel = cpumode == misc::KERNEL;
            let mut first = true;
            for addr in kernel_part {
                if addr >= context::MAX {
                    kernel = addr == context::KERNEL;
                    continue;
                }
                let id = self.locate(procs, pid, addr, kernel, !first);
                cur.push(id);
                first = false;
            }
            if let Some(top) = bs.iter().next() {
                let id = self.locate(procs, pid, top.to, false, false);
                cur.push(id);
            }
            for e in bs.iter() {
                let id = self.locate(procs, pid, e.from, false, false);
                cur.push(id);
            }
            pushed = true;
        } else if let Some(chain) = &s.callchain {
            let mut kernel = cpumode == misc::KERNEL;
            let mut guest = false;
            let mut first = true;
            for addr in chain.iter() {
                if addr >= context::MAX {
                    kernel = addr == context::KERNEL || addr == context::GUEST_KERNEL;
                    guest = addr == context::GUEST
                        || addr == context::GUEST_KERNEL
                        || addr == context::GUEST_USER;
                    continue;
                }
                if dwarf.is_some() && !kernel && !guest {
                    continue;
                }
                if addr == TRUNCATED_MARK && !kernel && !guest {
                    // A stack unwound while recording that did not reach its root.
                    let id = self.truncated_loc(procs);
                    cur.push(id);
                    self.marked_truncated += 1;
                    continue;
                }
                let id = if guest {
                    let m = procs.module_id(Module::Other {
                        name: "[guest]".to_string(),
                    });
                    self.intern_loc((m, addr, !first))
                } else {
                    self.locate(procs, pid, addr, kernel, !first)
                };
                cur.push(id);
                first = false;
                pushed = true;
            }
        }
        if let Some((regs, stack)) = dwarf.filter(|_| !lbr_used) {
            self.unwind_user(procs, pid, regs, stack, &mut cur);
        } else if !pushed && let Some(ip) = s.ip {
            let kernel = matches!(cpumode, misc::KERNEL);
            let id = self.locate(procs, pid, ip, kernel, false);
            cur.push(id);
        }
        let stack = self.intern_stack(&cur);
        self.cur = cur;
        let mut fp_part = None;
        if let (true, Some(chain)) = (fp_stack, &s.callchain)
            && !chain.iter().any(|a| a == TRUNCATED_MARK)
        {
            // Frame-pointer stacks (not those unwound while recording, which may end in
            // the mark): how far they got, and in which module they started.
            let (n, first) = fp::user_part(chain.iter());
            if let Some(pc) = first {
                let module = procs.code_module(pid, pc);
                self.short_stacks.add(stack, n, module);
                fp_part = Some((n, module));
            }
        }
        if let Some((shape, chain)) = chain_key
            && pushed
        {
            self.chains.insert(
                shape,
                chain,
                ChainHit {
                    stack,
                    marks: self.marked_truncated - marks_before,
                    fp: fp_part,
                },
            );
        }
        stack
    }

    /// Appends the user stack unwound from `regs` and `stack` to `cur`, ending it with
    /// the `[truncated]` frame when the unwinding stopped before the stack's root.
    fn unwind_user(
        &mut self,
        procs: &mut Processes,
        pid: u32,
        regs: UserRegs,
        stack: &[u8],
        cur: &mut Vec<u32>,
    ) {
        let Some(mut u) = self.unwind.take() else {
            return;
        };
        let version = procs.version(pid);
        let mut frames = std::mem::take(&mut u.frames);
        frames.clear();
        let ending = u.unwinder.unwind(
            pid,
            version,
            || mapped(procs, self.sym.locator(), pid, &mut u.files),
            regs,
            stack,
            &mut frames,
        );
        for f in &frames {
            let id = self.locate(procs, pid, f.addr, false, f.ret);
            cur.push(id);
        }
        if ending == Ending::Truncated {
            let id = self.truncated_loc(procs);
            cur.push(id);
        }
        u.frames = frames;
        self.unwind = Some(u);
    }

    /// The location of the `[truncated]` frame.
    fn truncated_loc(&mut self, procs: &mut Processes) -> u32 {
        let m = procs.module_id(Module::Truncated);
        self.intern_loc((m, 0, false))
    }
}

/// The executable mappings of `pid` with their files' unwind tables (read once each,
/// through `locator`).
fn mapped(
    procs: &Processes,
    locator: &Locator,
    pid: u32,
    files: &mut HashMap<ModuleId, Option<Arc<FileData>>>,
) -> Vec<Mapped> {
    let Some(space) = procs.space(pid) else {
        return Vec::new();
    };
    space
        .iter()
        .map(|m| {
            let file = files
                .entry(m.module)
                .or_insert_with(|| match procs.module(m.module) {
                    Some(Module::File { path, build_id }) => {
                        crate::unwind::load_tables(locator, path, build_id.as_ref(), None)
                            .map(Arc::new)
                    }
                    _ => None,
                })
                .clone();
            let name = match procs.module(m.module) {
                Some(Module::File { path, .. }) => path.clone(),
                _ => String::new(),
            };
            Mapped {
                start: m.start,
                end: m.end,
                pgoff: m.pgoff,
                file,
                name,
            }
        })
        .collect()
}
