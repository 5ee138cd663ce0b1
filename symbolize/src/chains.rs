//! Stacks seen before, found again by their words ([`WordCache`]): most samples of a
//! recording repeat a few thousand stacks, so a stack seen again costs a hash and a
//! compare instead of locating (and symbolizing, printing) each of its addresses. The
//! replay's profile assembly keeps what each recorded callchain made ([`ChainCache`]);
//! `hwprof script` keeps each stack's text in one too.

use rustc_hash::FxHashMap as HashMap;

use hwprof_sampler::record::U64s;

use crate::module::ModuleId;

/// No entry: the end of a list of entries of one hash, or a hint that names none.
pub const NONE: u32 = u32::MAX;

/// One entry: its shape, its words in [`WordCache::words`], its value, and the entry
/// added before it with the same hash.
struct Entry<S, V> {
    shape: S,
    words: (usize, usize),
    value: V,
    next: u32,
}

/// Entries found by a shape (`S`: what the words' meaning depends on, e.g. a process and
/// the version of its mappings) and words (a callchain, an unwound chain, a sampled
/// address), each with a value. Found without allocating: by a hash of both, entries of
/// one hash listed and told apart by their shapes and words.
pub struct WordCache<S, V> {
    /// Per hash: the last entry added with it.
    by_hash: HashMap<u64, u32>,
    entries: Vec<Entry<S, V>>,
    /// Every entry's words, end to end.
    words: Vec<u64>,
}

impl<S, V> Default for WordCache<S, V> {
    fn default() -> Self {
        WordCache {
            by_hash: HashMap::default(),
            entries: Vec::new(),
            words: Vec::new(),
        }
    }
}

/// A shape's part of an entry's hash.
pub trait ShapeHash {
    /// Two words that tell shapes apart (equal shapes give equal words).
    fn words(&self) -> [u64; 2];
}

impl<S: Copy + PartialEq + ShapeHash, V> WordCache<S, V> {
    /// The entry of `shape` and `words`; `hint`: the entry it likely is (compared first;
    /// any id, or [`NONE`]).
    pub fn find(
        &self,
        shape: S,
        words: impl Iterator<Item = u64> + Clone,
        hint: u32,
    ) -> Option<u32> {
        if self.is(hint, shape, words.clone()) {
            return Some(hint);
        }
        self.find_hashed(hash(shape, words.clone()), shape, words)
    }

    fn find_hashed(
        &self,
        h: u64,
        shape: S,
        words: impl Iterator<Item = u64> + Clone,
    ) -> Option<u32> {
        let mut at = self.by_hash.get(&h).copied().unwrap_or(NONE);
        while let Some(e) = self.entries.get(at as usize) {
            if self.is(at, shape, words.clone()) {
                return Some(at);
            }
            at = e.next;
        }
        None
    }

    /// The entry of `shape` and `words`, added with `value()` if there is none, and
    /// whether it was added now; `hint` as for [`WordCache::find`].
    pub fn find_or_add(
        &mut self,
        shape: S,
        words: impl Iterator<Item = u64> + Clone,
        hint: u32,
        value: impl FnOnce() -> V,
    ) -> (u32, bool) {
        if self.is(hint, shape, words.clone()) {
            return (hint, false);
        }
        let h = hash(shape, words.clone());
        if let Some(id) = self.find_hashed(h, shape, words.clone()) {
            return (id, false);
        }
        (self.push(h, shape, words, value()), true)
    }

    /// Adds `value` for `shape` and `words` (another entry of both stays, found first).
    pub fn add(&mut self, shape: S, words: impl Iterator<Item = u64> + Clone, value: V) -> u32 {
        let h = hash(shape, words.clone());
        self.push(h, shape, words, value)
    }

    fn push(&mut self, h: u64, shape: S, words: impl Iterator<Item = u64>, value: V) -> u32 {
        let id = u32::try_from(self.entries.len()).unwrap_or(NONE - 1);
        let start = self.words.len();
        self.words.extend(words);
        let next = self.by_hash.insert(h, id).unwrap_or(NONE);
        self.entries.push(Entry {
            shape,
            words: (start, self.words.len()),
            value,
            next,
        });
        id
    }

    /// Whether entry `id` is there and is of `shape` and `words`.
    #[inline]
    fn is(&self, id: u32, shape: S, words: impl Iterator<Item = u64>) -> bool {
        self.entries.get(id as usize).is_some_and(|e| {
            e.shape == shape
                && self
                    .words
                    .get(e.words.0..e.words.1)
                    .is_some_and(|w| words.eq(w.iter().copied()))
        })
    }
}

impl<S, V> WordCache<S, V> {
    /// The value of entry `id`.
    pub fn value(&self, id: u32) -> Option<&V> {
        self.entries.get(id as usize).map(|e| &e.value)
    }

    /// The value of entry `id`, to change.
    pub fn value_mut(&mut self, id: u32) -> Option<&mut V> {
        self.entries.get_mut(id as usize).map(|e| &mut e.value)
    }

    /// The shape of entry `id`.
    pub fn shape(&self, id: u32) -> Option<&S> {
        self.entries.get(id as usize).map(|e| &e.shape)
    }

    /// The words of entry `id`.
    pub fn words(&self, id: u32) -> &[u64] {
        self.entries
            .get(id as usize)
            .and_then(|e| self.words.get(e.words.0..e.words.1))
            .unwrap_or_default()
    }

    /// About how many bytes the entries hold (their values' own heap memory not
    /// counted).
    pub fn held(&self) -> usize {
        self.words.len() * 8
            + self.entries.len() * std::mem::size_of::<Entry<S, V>>()
            + self.by_hash.len() * 16
    }

    /// Forgets every entry (their ids then name none, hints included).
    pub fn clear(&mut self) {
        self.by_hash.clear();
        self.entries.clear();
        self.words.clear();
    }
}

/// A hash of a shape and words through a folded 64x64->128 bit multiply (every bit of a
/// word reaches every bit of the hash; equal hashes are told apart by comparing, so this
/// only keeps lists short).
fn hash(shape: impl ShapeHash, words: impl Iterator<Item = u64>) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mix = |h: u64, w: u64| {
        let p = u128::from(h ^ w) * u128::from(K);
        (p as u64) ^ ((p >> 64) as u64)
    };
    let [a, b] = shape.words();
    let mut h = mix(a, b);
    for w in words {
        h = mix(h, w);
    }
    h
}

/// What makes a recorded callchain's stack besides its words: its process, the versions
/// of that process's and the kernel's mappings, and the sample's cpumode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ChainShape {
    pub pid: u32,
    pub maps: (u64, u64),
    pub cpumode: u16,
}

impl ShapeHash for ChainShape {
    fn words(&self) -> [u64; 2] {
        [
            u64::from(self.pid) << 32 | u64::from(self.cpumode),
            self.maps.0 ^ self.maps.1.rotate_left(32),
        ]
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

/// The stacks the recorded callchains made. Bounded: past [`ChainCache::MAX_BYTES`] it
/// starts again empty (stacks are interned apart from it, so only speed is lost).
#[derive(Default)]
pub(crate) struct ChainCache(WordCache<ChainShape, ChainHit>);

impl ChainCache {
    const MAX_BYTES: usize = 64 << 20;

    /// What the chain of `shape` and `chain` made, if it was kept.
    pub(crate) fn get(&self, shape: ChainShape, chain: U64s<'_>) -> Option<ChainHit> {
        let id = self.0.find(shape, chain.iter(), NONE)?;
        self.0.value(id).copied()
    }

    /// Keeps `hit` for the chain of `shape` and `chain`.
    pub(crate) fn insert(&mut self, shape: ChainShape, chain: U64s<'_>, hit: ChainHit) {
        if self.0.held() + chain.as_bytes().len() > Self::MAX_BYTES {
            self.0.clear();
        }
        self.0.add(shape, chain.iter(), hit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, PartialEq, Debug)]
    struct Pid(u32);

    impl ShapeHash for Pid {
        fn words(&self) -> [u64; 2] {
            [u64::from(self.0), 0]
        }
    }

    #[test]
    fn entries_are_found_by_shape_and_words() {
        let mut c: WordCache<Pid, &str> = WordCache::default();
        let (a, new) = c.find_or_add(Pid(7), [1u64, 2, 3].into_iter(), NONE, || "a");
        assert!(new);
        assert_eq!(
            c.find_or_add(Pid(7), [1u64, 2, 3].into_iter(), NONE, || "x"),
            (a, false)
        );
        // A hint is a first guess only.
        let (b, new) = c.find_or_add(Pid(7), [1u64, 2].into_iter(), a, || "b");
        assert!(new && b != a);
        assert_eq!(c.find(Pid(7), [1u64, 2, 3].into_iter(), b), Some(a));
        // Another shape, another entry; the words of a chain's bytes are its words.
        assert_eq!(c.find(Pid(8), [1u64, 2, 3].into_iter(), a), None);
        let bytes: Vec<u8> = [1u64, 2, 3].iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(c.find(Pid(7), U64s::new(&bytes).iter(), NONE), Some(a));
        assert_eq!(c.words(a), &[1, 2, 3]);
        assert_eq!(c.value(b), Some(&"b"));
        if let Some(v) = c.value_mut(b) {
            *v = "c";
        }
        assert_eq!(c.value(b), Some(&"c"));
        // Emptied, an entry is new again (a stale hint included).
        c.clear();
        assert_eq!(c.find(Pid(7), [1u64, 2, 3].into_iter(), a), None);
        assert!(c.value(a).is_none() && c.words(a).is_empty());
    }

    /// Shapes that hash alike (every one here) are told apart by comparing.
    #[test]
    fn entries_of_one_hash_are_listed() {
        #[derive(Clone, Copy, PartialEq, Debug)]
        struct Same(u32);
        impl ShapeHash for Same {
            fn words(&self) -> [u64; 2] {
                [0, 0]
            }
        }
        let mut c: WordCache<Same, u32> = WordCache::default();
        for i in 0..10 {
            c.add(Same(i), [5u64].into_iter(), i);
        }
        for i in 0..10 {
            let id = c.find(Same(i), [5u64].into_iter(), NONE);
            assert_eq!(id.and_then(|id| c.value(id)), Some(&i));
        }
    }
}
