//! The reorder window: instructions waiting to be written, by `(sequence number, duplicate
//! number)`, lowest first, and the smallest fetch tick among them (for the watermark).
//!
//! Sequence numbers are nearly dense and records come at most a window late, so most
//! entries sit in a ring indexed by sequence number from the lowest one waiting: inserting
//! and taking the lowest cost no search. Duplicates (several CPUs) and sequence numbers out
//! of the ring's reach wait in an ordered map; the lowest key is the lower of both.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

/// `(sequence number, duplicate number)`.
pub(super) type Key = (u64, u32);

/// An entry and the stamp that tells its fetch tick in the heap from a stale one.
#[derive(Debug)]
struct Entry<T> {
    stamp: u64,
    value: T,
}

#[derive(Debug)]
pub(super) struct Window<T> {
    /// Sequence numbers `base..base + ring.len()`, duplicate 0; the first is present.
    ring: VecDeque<Option<Entry<T>>>,
    base: u64,
    in_ring: usize,
    /// How far past `base` the ring reaches.
    reach: u64,
    far: BTreeMap<Key, Entry<T>>,
    /// Fetch ticks of the entries, with entries already gone left in until they surface.
    fetch: BinaryHeap<Reverse<(u64, u64, Key)>>,
    next_stamp: u64,
}

impl<T> Window<T> {
    /// A window whose ring reaches `reach` sequence numbers past the lowest waiting.
    pub(super) fn new(reach: usize) -> Window<T> {
        Window {
            ring: VecDeque::new(),
            base: 0,
            in_ring: 0,
            reach: reach.max(64) as u64,
            far: BTreeMap::new(),
            fetch: BinaryHeap::new(),
            next_stamp: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.in_ring + self.far.len()
    }

    fn ring_first(&self) -> Option<Key> {
        (self.in_ring > 0).then_some((self.base, 0))
    }

    /// The lowest key.
    pub(super) fn first_key(&self) -> Option<Key> {
        let far = self.far.keys().next().copied();
        match (self.ring_first(), far) {
            (Some(r), Some(f)) => Some(r.min(f)),
            (r, f) => r.or(f),
        }
    }

    pub(super) fn get(&self, key: Key) -> Option<&T> {
        self.entry(key).map(|e| &e.value)
    }

    fn entry(&self, (seq, dup): Key) -> Option<&Entry<T>> {
        if dup == 0 && seq >= self.base {
            if let Some(Some(entry)) = usize::try_from(seq - self.base)
                .ok()
                .and_then(|at| self.ring.get(at))
            {
                return Some(entry);
            }
        }
        self.far.get(&(seq, dup))
    }

    pub(super) fn get_mut(&mut self, (seq, dup): Key) -> Option<&mut T> {
        if dup == 0 && seq >= self.base {
            let at = usize::try_from(seq - self.base).unwrap_or(usize::MAX);
            if let Some(Some(entry)) = self.ring.get_mut(at) {
                return Some(&mut entry.value);
            }
        }
        self.far.get_mut(&(seq, dup)).map(|e| &mut e.value)
    }

    /// The highest key of `seq`, if one is waiting.
    pub(super) fn last_key(&self, seq: u64) -> Option<Key> {
        let far = if self.far.is_empty() {
            None
        } else {
            self.far
                .range((seq, 0)..=(seq, u32::MAX))
                .next_back()
                .map(|(&key, _)| key)
        };
        far.or_else(|| self.entry((seq, 0)).map(|_| (seq, 0)))
    }

    /// Adds an entry; `key` must not be waiting.
    pub(super) fn insert(&mut self, key: Key, fetch_tick: u64, value: T) {
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        self.fetch.push(Reverse((fetch_tick, stamp, key)));
        let entry = Entry { stamp, value };
        let (seq, dup) = key;
        if dup == 0 {
            if self.in_ring == 0 && self.ring.is_empty() {
                self.base = seq;
            }
            if seq >= self.base && seq - self.base < self.reach {
                let at = (seq - self.base) as usize;
                if at >= self.ring.len() {
                    self.ring.resize_with(at + 1, || None);
                }
                if self.ring[at].is_none() {
                    self.ring[at] = Some(entry);
                    self.in_ring += 1;
                    return;
                }
            }
        }
        self.far.insert(key, entry);
    }

    /// Removes and returns the entry with the lowest key.
    pub(super) fn pop_first(&mut self) -> Option<(Key, T)> {
        let key = self.first_key()?;
        let entry = if self.ring_first() == Some(key) {
            let entry = self
                .ring
                .pop_front()
                .flatten()
                .expect("the ring's first is present");
            self.in_ring -= 1;
            self.base += 1;
            // Keep the first present: the ring's lowest key is then its base.
            while let Some(None) = self.ring.front() {
                self.ring.pop_front();
                self.base += 1;
            }
            entry
        } else {
            self.far.remove(&key).expect("the far first is present")
        };
        Some((key, entry.value))
    }

    /// The smallest fetch tick waiting.
    pub(super) fn min_fetch(&mut self) -> Option<u64> {
        while let Some(&Reverse((tick, stamp, key))) = self.fetch.peek() {
            if self.entry(key).is_some_and(|e| e.stamp == stamp) {
                return Some(tick);
            }
            self.fetch.pop();
        }
        None
    }

    /// Every entry, by key (for the rare whole-window passes).
    pub(super) fn in_order(&self) -> Vec<(Key, &T)> {
        let mut all: Vec<(Key, &T)> = self
            .ring
            .iter()
            .enumerate()
            .filter_map(|(at, e)| e.as_ref().map(|e| ((self.base + at as u64, 0), &e.value)))
            .chain(self.far.iter().map(|(&key, e)| (key, &e.value)))
            .collect();
        all.sort_by_key(|&(key, _)| key);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_gives_the_lowest_key_first_and_the_smallest_fetch_tick() {
        let mut window = Window::new(64);
        let mut model = BTreeMap::new();
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
        for round in 0..5000u64 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let seq = match rng % 10 {
                0 => rng % 100_000,
                1 => model.keys().next().map_or(0, |&(s, _)| s),
                _ => round + rng % 200,
            };
            let dup = model
                .range((seq, 0)..=(seq, u32::MAX))
                .next_back()
                .map_or(0, |(&(_, d), _)| d + 1);
            assert_eq!(
                window.last_key(seq),
                model
                    .range((seq, 0)..=(seq, u32::MAX))
                    .next_back()
                    .map(|(&k, _)| k)
            );
            let fetch = (rng >> 20) % 1000;
            window.insert((seq, dup), fetch, fetch);
            model.insert((seq, dup), fetch);
            if rng % 3 == 0 {
                assert_eq!(window.pop_first(), model.pop_first());
            }
            assert_eq!(window.len(), model.len());
            assert_eq!(window.first_key(), model.keys().next().copied());
            assert_eq!(window.min_fetch(), model.values().min().copied());
            if round % 500 == 0 {
                let all: Vec<(Key, u64)> = window
                    .in_order()
                    .into_iter()
                    .map(|(k, v)| (k, *v))
                    .collect();
                let expected: Vec<(Key, u64)> = model.iter().map(|(&k, &v)| (k, v)).collect();
                assert_eq!(all, expected);
            }
        }
        while let Some(first) = model.pop_first() {
            assert_eq!(window.pop_first(), Some(first));
        }
        assert_eq!(window.pop_first(), None);
    }
}
