//! The stacks of the recorded callchains a replay has seen ([`ChainCache`]), kept apart
//! from the profile assembly that fills and reads it (`assemble`, `stacks`).

use std::hash::{Hash, Hasher};

use rustc_hash::FxHashMap as HashMap;

use crate::module::ModuleId;

/// What makes a recorded callchain's stack: the chain's words, its process, the
/// versions of that process's and the kernel's mappings, and the sample's cpumode.
pub(crate) struct ChainKey<'a> {
    pub pid: u32,
    pub maps: (u64, u64),
    pub cpumode: u16,
    pub words: &'a [u8],
}

impl ChainKey<'_> {
    fn hash(&self) -> u64 {
        let mut h = rustc_hash::FxHasher::default();
        self.pid.hash(&mut h);
        self.maps.hash(&mut h);
        self.cpumode.hash(&mut h);
        self.words.hash(&mut h);
        h.finish()
    }
}

/// What a callchain made, to give again: its stack, the truncation marks it counted, and
/// its frame-pointer user part (length, first module) when that was noted.
#[derive(Clone, Copy)]
pub(crate) struct ChainHit {
    pub stack: u32,
    pub marks: u64,
    pub fp: Option<(usize, Option<ModuleId>)>,
}

/// One callchain seen: its key's fields, its words in [`ChainCache::words`], what it made.
struct ChainEntry {
    pid: u32,
    maps: (u64, u64),
    cpumode: u16,
    words: (usize, usize),
    hit: ChainHit,
}

/// The stacks of the callchains seen, so that a chain seen again (most samples of a
/// recording repeat a few thousand stacks) costs a hash and a compare instead of
/// locating and interning each of its addresses. Bounded: past [`ChainCache::MAX_BYTES`]
/// of words it starts again empty (stacks are interned apart from it, so only speed
/// is lost).
#[derive(Default)]
pub(crate) struct ChainCache {
    by_hash: HashMap<u64, u32>,
    entries: Vec<ChainEntry>,
    words: Vec<u8>,
}

impl ChainCache {
    const MAX_BYTES: usize = 64 << 20;

    /// What `key`'s chain made, if it was kept.
    pub(crate) fn get(&self, key: &ChainKey<'_>) -> Option<ChainHit> {
        let &i = self.by_hash.get(&key.hash())?;
        let e = self.entries.get(i as usize)?;
        let same = e.pid == key.pid
            && e.maps == key.maps
            && e.cpumode == key.cpumode
            && self.words.get(e.words.0..e.words.1) == Some(key.words);
        same.then_some(e.hit)
    }

    /// Keeps `hit` for `key` (a hash already taken by another chain keeps that one).
    pub(crate) fn insert(&mut self, key: &ChainKey<'_>, hit: ChainHit) {
        if self.words.len() + key.words.len() > Self::MAX_BYTES {
            *self = ChainCache::default();
        }
        let h = key.hash();
        if self.by_hash.contains_key(&h) {
            return;
        }
        let start = self.words.len();
        self.words.extend_from_slice(key.words);
        self.by_hash.insert(h, self.entries.len() as u32);
        self.entries.push(ChainEntry {
            pid: key.pid,
            maps: key.maps,
            cpumode: key.cpumode,
            words: (start, self.words.len()),
            hit,
        });
    }
}
