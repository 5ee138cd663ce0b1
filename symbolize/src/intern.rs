//! [`Interner`]: values kept once each, named by a dense `u32` id in first-seen order.

use std::hash::Hash;

use rustc_hash::FxHashMap as HashMap;

/// Values kept once each: `id` gives the same id for equal values, ids count from 0 in
/// the order values were first seen, and `get` gives a value back.
#[derive(Clone, Debug)]
pub struct Interner<T> {
    list: Vec<T>,
    ids: HashMap<T, u32>,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            list: Vec::new(),
            ids: HashMap::default(),
        }
    }
}

impl<T: Clone + Eq + Hash> Interner<T> {
    /// The id of `v`, added when new.
    pub fn id(&mut self, v: T) -> u32 {
        if let Some(&id) = self.ids.get(&v) {
            return id;
        }
        let id = self.list.len() as u32;
        self.list.push(v.clone());
        self.ids.insert(v, id);
        id
    }

    /// The id of `v` if it was seen, borrowed (no copy made when it is there).
    pub fn find<Q>(&self, v: &Q) -> Option<u32>
    where
        T: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.ids.get(v).copied()
    }

    /// The value of `id`.
    pub fn get(&self, id: u32) -> Option<&T> {
        self.list.get(id as usize)
    }

    /// How many values.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether none was added.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The values, by id.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.list.iter()
    }

    /// The values, by id, without the index.
    pub fn into_vec(self) -> Vec<T> {
        self.list
    }
}

impl Interner<String> {
    /// [`Interner::id`] of a borrowed string (copied only when new).
    pub fn id_str(&mut self, s: &str) -> u32 {
        match self.find(s) {
            Some(id) => id,
            None => self.id(s.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_in_first_seen_order() {
        let mut i = Interner::default();
        assert_eq!(i.id_str("b"), 0);
        assert_eq!(i.id_str("a"), 1);
        assert_eq!(i.id_str("b"), 0);
        assert_eq!(i.get(1).map(String::as_str), Some("a"));
        assert_eq!(i.find("c"), None);
        assert_eq!(i.into_vec(), ["b", "a"]);
    }
}
