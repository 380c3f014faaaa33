//! A bounded top-N structure: the weighted Space-Saving algorithm (Metwally, Agrawal and
//! El Abbadi, 2005) over at most `capacity` keys.
//!
//! Every key seen is counted exactly while fewer than `capacity` distinct keys have been
//! seen. Once the table is full, a new key takes the place of the key with the smallest
//! weight (the oldest of those on a tie): it inherits that weight as its `error` and adds
//! its own. So a reported weight `w` with error `e` is an upper bound, and `w − e` a lower
//! bound, of the key's true weight; a key whose true weight exceeds the smallest weight in
//! the table is always in it. Memory is `capacity` entries, whatever the length of the
//! trace. The updates are deterministic, so are the results.

use std::collections::hash_map::Entry as MapEntry;
use std::collections::BTreeSet;
use std::hash::Hash;

use crate::kanata::ids::IdMap;

/// One key's counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counted<K> {
    /// The key.
    pub key: K,
    /// The label of the first instruction counted under the key since it entered.
    pub label: Box<str>,
    /// The summed weight (an upper bound when `error > 0`).
    pub weight: u64,
    /// The weight inherited from the key this one replaced (0: exact).
    pub error: u64,
    /// Updates counted since the key entered the table.
    pub count: u64,
    /// The sum of the sizes of the updates since the key entered the table.
    pub size: u64,
    /// The largest size of one update since the key entered the table.
    pub max: u64,
}

/// The Space-Saving table (see the [module](self) docs).
#[derive(Clone, Debug)]
pub struct TopN<K> {
    capacity: usize,
    index: IdMap<K, usize>,
    entries: Vec<(Counted<K>, u64)>,
    /// (weight, order of entry, index): the smallest first.
    order: BTreeSet<(u64, u64, usize)>,
    next_seq: u64,
    evictions: u64,
}

impl<K: Clone + Eq + Hash + Ord> TopN<K> {
    /// A table of at most `capacity` keys (at least 1).
    pub fn new(capacity: usize) -> TopN<K> {
        TopN {
            capacity: capacity.max(1),
            index: IdMap::default(),
            entries: Vec::new(),
            order: BTreeSet::new(),
            next_seq: 0,
            evictions: 0,
        }
    }

    /// Adds `weight` to `key` (the ranked sum), and one update of `size` (a second sum and
    /// its maximum: the flushed instructions of a flush, the cycles of a stall); `label`
    /// names the key when it enters the table.
    pub fn add(&mut self, key: &K, label: &str, weight: u64, size: u64) {
        if let Some(&at) = self.index.get(key) {
            let (entry, seq) = &mut self.entries[at];
            self.order.remove(&(entry.weight, *seq, at));
            entry.weight = entry.weight.saturating_add(weight);
            entry.count += 1;
            entry.max = entry.max.max(size);
            entry.size = entry.size.saturating_add(size);
            self.order.insert((entry.weight, *seq, at));
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let fresh = |error: u64| Counted {
            key: key.clone(),
            label: label.into(),
            weight: error.saturating_add(weight),
            error,
            count: 1,
            size,
            max: size,
        };
        if self.entries.len() < self.capacity {
            let at = self.entries.len();
            let entry = fresh(0);
            self.order.insert((entry.weight, seq, at));
            self.entries.push((entry, seq));
            self.index.insert(key.clone(), at);
            return;
        }
        let Some((min, _, at)) = self.order.pop_first() else {
            return;
        };
        self.evictions += 1;
        let entry = fresh(min);
        if let MapEntry::Occupied(old) = self.index.entry(self.entries[at].0.key.clone()) {
            old.remove();
        }
        self.order.insert((entry.weight, seq, at));
        self.entries[at] = (entry, seq);
        self.index.insert(key.clone(), at);
    }

    /// Whether every weight is exact (no key was ever replaced).
    pub fn exact(&self) -> bool {
        self.evictions == 0
    }

    /// Keys in the table.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The `n` heaviest keys, heaviest first (ties: smaller key first).
    pub fn top(&self, n: usize) -> Vec<Counted<K>> {
        let mut all: Vec<&Counted<K>> = self.entries.iter().map(|(e, _)| e).collect();
        all.sort_by(|a, b| b.weight.cmp(&a.weight).then_with(|| a.key.cmp(&b.key)));
        all.into_iter().take(n).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn exact_below_capacity() {
        let mut t = TopN::new(8);
        for (key, weight) in [(1, 5), (2, 1), (1, 2), (3, 7), (2, 1)] {
            t.add(&key, "", weight, weight);
        }
        assert!(t.exact());
        let top = t.top(2);
        assert_eq!(
            top.iter()
                .map(|c| (c.key, c.weight, c.count, c.max))
                .collect::<Vec<_>>(),
            [(1, 7, 2, 5), (3, 7, 1, 7)]
        );
    }

    /// A heavy key among many light ones is found, with its weight bounded by the error.
    #[test]
    fn heavy_hitters_survive() {
        let mut t = TopN::new(16);
        let mut truth = HashMap::new();
        for i in 0..10_000u64 {
            let key = if i % 10 == 0 { 7 } else { 1000 + i };
            t.add(&key, "", 1, 0);
            *truth.entry(key).or_insert(0u64) += 1;
        }
        assert!(!t.exact());
        assert!(t.len() <= 16);
        let top = &t.top(1)[0];
        assert_eq!(top.key, 7);
        assert!(top.weight >= truth[&7] && top.weight - top.error <= truth[&7]);
    }
}
