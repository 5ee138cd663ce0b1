//! Reading files' symbols ahead: a thread that, as soon as a replay meets a file module,
//! finds its symbol source (the [`Locator`]'s search, [`crate::elfcheck`]'s inflation
//! of its compressed sections) and has blazesym load it (symbols, DWARF), while the
//! recording is still being replayed on the calling thread; then it symbolizes those
//! modules' batches with what it loaded.
//!
//! Why a thread of its own and not a handover: blazesym's symbolizer keeps what it
//! parsed in itself and is not `Send`, so the thread that loaded a file is the one that
//! must look addresses up in it. Loading is the bulk of symbolizing a recording of a
//! few modules (e.g. 45 ms for libc's 10 MB of compressed DWARF, 30 ms more for the
//! check), and the replay of a big recording takes longer than that, so on two CPUs
//! it costs no wall time at all.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::{SymSource, find_source, new_blaze, symbolize_file};
use crate::buildid::BuildId;
use crate::locate::Locator;
use crate::module::ModuleId;
use crate::profile::{Frame, FrameKind};

/// A batch for the thread: a module it loaded, its path, the offsets to look up.
pub(super) type Batch = (ModuleId, String, Vec<(u64, bool)>);

enum Job {
    /// Find and load a module's file.
    Load(ModuleId, String, Option<BuildId>),
    /// Look batches up; the frames go back in batch order.
    Resolve(Vec<Batch>, Sender<Vec<Vec<Vec<Frame>>>>),
}

/// The thread, and the modules it was given.
pub(super) struct Ahead {
    jobs: Sender<Job>,
    loaded: HashSet<ModuleId>,
    /// Files given to the thread and not loaded yet.
    loading: Arc<AtomicUsize>,
    _thread: JoinHandle<()>,
}

impl Ahead {
    /// Starts the thread (`None` when it cannot be started: files are then read when
    /// their addresses are looked up, as without it).
    pub(super) fn start(inline: bool, locator: Locator) -> Option<Ahead> {
        let (jobs, rx) = channel();
        let loading = Arc::new(AtomicUsize::new(0));
        let left = Arc::clone(&loading);
        let thread = std::thread::Builder::new()
            .name("symbols".into())
            .spawn(move || work(inline, &locator, rx, &left))
            .ok()?;
        Some(Ahead {
            jobs,
            loaded: HashSet::default(),
            loading,
            _thread: thread,
        })
    }

    /// Has the thread load module `id`'s file (once).
    pub(super) fn load(&mut self, id: ModuleId, path: &str, build_id: Option<&BuildId>) {
        if self.loaded.insert(id) {
            let job = Job::Load(id, path.to_string(), build_id.cloned());
            self.loading.fetch_add(1, Ordering::Relaxed);
            if self.jobs.send(job).is_err() {
                self.loaded.remove(&id);
                self.loading.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Whether files given to the thread are still being loaded (a lookup in them
    /// would wait for it).
    pub(super) fn loading(&self) -> bool {
        self.loading.load(Ordering::Relaxed) > 0
    }

    /// Whether module `id` was given to the thread (its batches go there).
    pub(super) fn has(&self, id: ModuleId) -> bool {
        self.loaded.contains(&id)
    }

    /// Sends batches to look up; [`Pending::wait`] gives their frames.
    pub(super) fn resolve(&self, batches: Vec<Batch>) -> Pending {
        let (tx, rx) = channel();
        let unknowns: Vec<Vec<Vec<Frame>>> = batches.iter().map(unknowns).collect();
        let rx = self.jobs.send(Job::Resolve(batches, tx)).ok().map(|()| rx);
        Pending { rx, unknowns }
    }
}

/// Frames being looked up on the thread.
pub(super) struct Pending {
    rx: Option<Receiver<Vec<Vec<Vec<Frame>>>>>,
    /// What the batches are if the thread is gone (it panicked): `[unknown]` frames.
    unknowns: Vec<Vec<Vec<Frame>>>,
}

impl Pending {
    /// The frames of each batch, in the order sent.
    pub(super) fn wait(self) -> Vec<Vec<Vec<Frame>>> {
        match self.rx.and_then(|rx| rx.recv().ok()) {
            Some(r) => r,
            None => self.unknowns,
        }
    }
}

/// `[unknown]` frames naming the batch's module, one per offset.
fn unknowns((_, path, offsets): &Batch) -> Vec<Vec<Frame>> {
    super::unknowns(Some(path), offsets, FrameKind::User)
}

/// Counts a file loaded when dropped (even by a panic in blazesym: the file is then
/// not being loaded any more either).
struct Loaded<'a>(&'a AtomicUsize);

impl Drop for Loaded<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The thread: loads what it is given, then looks up in it.
fn work(inline: bool, locator: &Locator, jobs: Receiver<Job>, loading: &AtomicUsize) {
    let blaze = new_blaze(inline);
    let mut sources: HashMap<ModuleId, Option<SymSource>> = HashMap::default();
    for job in jobs {
        match job {
            Job::Load(id, path, build_id) => {
                let _done = Loaded(loading);
                let src = find_source(locator, &path, build_id.as_ref());
                if let Some(src) = &src {
                    // Any offset makes blazesym parse the file (its result is not kept).
                    symbolize_file(&blaze, &path, src, &[(0, false)]);
                }
                sources.insert(id, src);
            }
            Job::Resolve(batches, reply) => {
                let frames = batches
                    .iter()
                    .map(|batch| match sources.get(&batch.0) {
                        Some(Some(src)) => symbolize_file(&blaze, &batch.1, src, &batch.2),
                        _ => unknowns(batch),
                    })
                    .collect();
                // The asker may have gone (it panicked): nothing to do.
                let _ = reply.send(frames);
            }
        }
    }
}
