//! The reorder window: instructions waiting to be written, by `(sequence number, duplicate
//! number)`, lowest first, and the smallest fetch tick among them (for the watermark).
//!
//! Sequence numbers are nearly dense and records come at most a window late, so most
//! entries sit in a ring indexed by sequence number from the lowest one waiting: inserting
//! and taking the lowest cost no search, and a tree of minima over the ring's slots, eight
//! to a node, keeps the smallest fetch tick. Duplicates (several CPUs) and sequence numbers
//! out of the ring's reach wait in an ordered map; the lowest key is the lower of both.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// `(sequence number, duplicate number)`.
pub(super) type Key = (u64, u32);

/// A far entry and the stamp that tells its fetch tick in the heap from a stale one.
#[derive(Debug)]
struct Entry<T> {
    stamp: u64,
    value: T,
}

/// The most ring slots: a larger window's outliers wait in the map.
const MAX_RING: usize = 1 << 20;

#[derive(Debug)]
pub(super) struct Window<T> {
    /// Sequence number `s` (duplicate 0) in slot `s % len`, for `base..base + len`; the slot
    /// of `base` is taken whenever any is.
    ring: Vec<Option<T>>,
    base: u64,
    in_ring: usize,
    /// The smallest fetch tick of groups of the ring's slots, level by level: level 0 holds
    /// each slot's (`u64::MAX` for none), each level above the smallest of every eight below,
    /// up to one value at the top. Eight a node, a change touches a few cache lines, not a
    /// binary tree's sixteen levels.
    smallest: Vec<Vec<u64>>,
    far: BTreeMap<Key, Entry<T>>,
    /// Fetch ticks of the far entries, with entries already gone left in until they surface.
    far_fetch: BinaryHeap<Reverse<(u64, u64, Key)>>,
    next_stamp: u64,
}

impl<T> Window<T> {
    /// A window whose ring reaches at least `reach` sequence numbers past the lowest waiting
    /// (up to a limit).
    pub(super) fn new(reach: usize) -> Window<T> {
        let len = reach.clamp(64, MAX_RING).next_power_of_two();
        Window {
            ring: (0..len).map(|_| None).collect(),
            base: 0,
            in_ring: 0,
            smallest: {
                // Each level padded to whole groups of eight (see `clear_fetch`).
                let padded = |n: usize| n.div_ceil(8) * 8;
                let mut levels = vec![vec![u64::MAX; padded(len)]];
                let mut groups = len.div_ceil(8);
                while groups > 1 {
                    levels.push(vec![u64::MAX; padded(groups)]);
                    groups = groups.div_ceil(8);
                }
                levels.push(vec![u64::MAX; 1]);
                levels
            },
            far: BTreeMap::new(),
            far_fetch: BinaryHeap::new(),
            next_stamp: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.in_ring + self.far.len()
    }

    fn slot(&self, seq: u64) -> usize {
        // The length is a power of two: a mask, not a division (the length is not a
        // constant, so the compiler would divide, tens of cycles for every slot).
        (seq & (self.ring.len() as u64 - 1)) as usize
    }

    fn covers(&self, seq: u64) -> bool {
        seq >= self.base && seq - self.base < self.ring.len() as u64
    }

    /// Empties the fetch tick of a slot and recomputes the group minima above it that it was.
    fn clear_fetch(&mut self, slot: usize) {
        let mut at = slot;
        self.smallest[0][at] = u64::MAX;
        for level in 1..self.smallest.len() {
            let group = at / 8;
            // Every level is padded to whole groups of eight: a group is an array, whose
            // minimum the compiler computes without a loop.
            let min = self.smallest[level - 1]
                .get(group * 8..group * 8 + 8)
                .and_then(|eight| <[u64; 8]>::try_from(eight).ok())
                .map_or(u64::MAX, |eight| eight.into_iter().fold(u64::MAX, u64::min));
            if self.smallest[level][group] == min {
                break;
            }
            self.smallest[level][group] = min;
            at = group;
        }
    }

    /// Sets the fetch tick of an empty slot: a new tick can only lower the minima above it,
    /// so one comparison a level does (most new records are not the oldest of their group).
    fn lower_fetch(&mut self, slot: usize, tick: u64) {
        let mut at = slot;
        for level in &mut self.smallest {
            if level[at] <= tick {
                break;
            }
            level[at] = tick;
            at /= 8;
        }
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

    pub(super) fn get(&self, (seq, dup): Key) -> Option<&T> {
        if dup == 0 && self.covers(seq) {
            if let Some(value) = &self.ring[self.slot(seq)] {
                return Some(value);
            }
        }
        self.far.get(&(seq, dup)).map(|e| &e.value)
    }

    pub(super) fn get_mut(&mut self, (seq, dup): Key) -> Option<&mut T> {
        if dup == 0 && self.covers(seq) {
            let slot = self.slot(seq);
            if self.ring[slot].is_some() {
                return self.ring[slot].as_mut();
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
        far.or_else(|| self.get((seq, 0)).map(|_| (seq, 0)))
    }

    /// Adds an entry; `key` must not be waiting.
    pub(super) fn insert(&mut self, key: Key, fetch_tick: u64, value: T) {
        let (seq, dup) = key;
        if dup == 0 {
            if self.in_ring == 0 {
                self.base = seq;
            }
            if self.covers(seq) {
                let slot = self.slot(seq);
                if self.ring[slot].is_none() {
                    self.ring[slot] = Some(value);
                    self.in_ring += 1;
                    self.lower_fetch(slot, fetch_tick);
                    return;
                }
            }
        }
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        self.far_fetch.push(Reverse((fetch_tick, stamp, key)));
        self.far.insert(key, Entry { stamp, value });
    }

    /// Removes and returns the entry with the lowest key.
    pub(super) fn pop_first(&mut self) -> Option<(Key, T)> {
        let key = self.first_key()?;
        if self.ring_first() == Some(key) {
            let slot = self.slot(self.base);
            let value = self.ring[slot].take().expect("the ring's first is present");
            self.clear_fetch(slot);
            self.in_ring -= 1;
            // Keep the first present: the ring's lowest key is then its base.
            if self.in_ring > 0 {
                self.base += 1;
                while self.ring[self.slot(self.base)].is_none() {
                    self.base += 1;
                }
            }
            return Some((key, value));
        }
        let entry = self.far.remove(&key).expect("the far first is present");
        Some((key, entry.value))
    }

    /// The smallest fetch tick waiting.
    pub(super) fn min_fetch(&mut self) -> Option<u64> {
        let top = self.smallest.last().map_or(u64::MAX, |level| level[0]);
        let ring = Some(top).filter(|&t| t != u64::MAX || self.in_ring > 0);
        let mut far = None;
        while let Some(&Reverse((tick, stamp, key))) = self.far_fetch.peek() {
            if self.far.get(&key).is_some_and(|e| e.stamp == stamp) {
                far = Some(tick);
                break;
            }
            self.far_fetch.pop();
        }
        match (ring, far) {
            (Some(r), Some(f)) => Some(r.min(f)),
            (r, f) => r.or(f),
        }
    }

    /// Every entry, by key (for the rare whole-window passes).
    pub(super) fn in_order(&self) -> Vec<(Key, &T)> {
        let mut all: Vec<(Key, &T)> = (0..self.ring.len() as u64)
            .filter_map(|at| {
                let seq = self.base + at;
                self.ring[self.slot(seq)].as_ref().map(|v| ((seq, 0), v))
            })
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
        // 64 and 4096 slots make full groups of eight at every level; 128 does not.
        for reach in [64, 128, 4096] {
            check_against_a_map(reach);
        }
    }

    fn check_against_a_map(reach: usize) {
        let mut window = Window::new(reach);
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
