//! The instructions in flight and what each has open.
//!
//! Ids are minted in order and mostly end in order, so live instructions sit in a ring
//! indexed by `id - base`; the front is popped as soon as it has ended. An instruction that
//! outlives a long run of younger ones (a leak in the simulator, or one that is simply never
//! retired) would pin the ring and make it grow with every later instruction, so once the
//! ring spans more than [`RING_SPAN`] ids its oldest live entries move to a side map. Memory
//! therefore follows the number of instructions in flight, not the length of the run.

use std::collections::{BTreeMap, VecDeque};

use crate::stage::{Lane, Stage};

/// How many ids the ring may span before its oldest live entries move to the side map.
const RING_SPAN: usize = 1 << 16;

/// What the writer remembers about one live instruction.
#[derive(Debug, Default)]
pub(crate) struct InsnState {
    /// The open stage of lanes 0 and 1, the lanes nearly every trace uses.
    open: [Option<Stage>; 2],
    /// Open stages of lanes 2 and up, sorted by lane.
    open_other: Vec<(Lane, Stage)>,
    /// Whether the instruction has entered any stage (a stage note needs one).
    pub(crate) entered: bool,
}

impl InsnState {
    /// Records `stage` as open in `lane`; returns the stage it replaces.
    #[inline]
    pub(crate) fn open(&mut self, lane: Lane, stage: Stage) -> Option<Stage> {
        self.entered = true;
        match self.open.get_mut(lane.get() as usize) {
            Some(slot) => slot.replace(stage),
            None => match self.open_other.binary_search_by_key(&lane, |&(l, _)| l) {
                Ok(at) => Some(std::mem::replace(&mut self.open_other[at].1, stage)),
                Err(at) => {
                    self.open_other.insert(at, (lane, stage));
                    None
                }
            },
        }
    }

    /// The open stage of `lane`, if any.
    #[inline]
    pub(crate) fn open_in(&self, lane: Lane) -> Option<Stage> {
        match self.open.get(lane.get() as usize) {
            Some(slot) => *slot,
            None => self
                .open_other
                .binary_search_by_key(&lane, |&(l, _)| l)
                .ok()
                .map(|at| self.open_other[at].1),
        }
    }

    /// Closes the open stage of `lane`.
    #[inline]
    pub(crate) fn close(&mut self, lane: Lane) -> Option<Stage> {
        match self.open.get_mut(lane.get() as usize) {
            Some(slot) => slot.take(),
            None => match self.open_other.binary_search_by_key(&lane, |&(l, _)| l) {
                Ok(at) => Some(self.open_other.remove(at).1),
                Err(_) => None,
            },
        }
    }

    /// Every open stage, lanes in ascending order.
    pub(crate) fn open_stages(&self) -> impl Iterator<Item = (Lane, Stage)> + '_ {
        let first = self
            .open
            .iter()
            .enumerate()
            .filter_map(|(lane, stage)| stage.map(|s| (Lane::new(lane as u32), s)));
        first.chain(self.open_other.iter().copied())
    }
}

/// The live instructions, keyed by id in the file.
#[derive(Debug, Default)]
pub(crate) struct LiveSet {
    /// `ring[i]` is instruction `base + i`; `None` once it has ended.
    ring: VecDeque<Option<InsnState>>,
    base: u64,
    /// Live instructions older than `base`.
    stragglers: BTreeMap<u64, InsnState>,
    live: u64,
}

impl LiveSet {
    /// Adds instruction `id`, which must be the next id after every id added before.
    pub(crate) fn push(&mut self, id: u64) {
        debug_assert_eq!(id, self.base + self.ring.len() as u64);
        if self.ring.is_empty() {
            self.base = id;
        }
        self.ring.push_back(Some(InsnState::default()));
        self.live += 1;
        if self.ring.len() > RING_SPAN {
            if let Some(Some(state)) = self.ring.pop_front() {
                self.stragglers.insert(self.base, state);
            }
            self.base += 1;
            self.pop_ended_front();
        }
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, id: u64) -> Option<&mut InsnState> {
        match id.checked_sub(self.base) {
            Some(offset) => self.ring.get_mut(offset as usize)?.as_mut(),
            None => self.stragglers.get_mut(&id),
        }
    }

    #[inline]
    pub(crate) fn get(&self, id: u64) -> Option<&InsnState> {
        match id.checked_sub(self.base) {
            Some(offset) => self.ring.get(offset as usize)?.as_ref(),
            None => self.stragglers.get(&id),
        }
    }

    /// Ends instruction `id` and returns what it had open.
    #[inline]
    pub(crate) fn remove(&mut self, id: u64) -> Option<InsnState> {
        let state = match id.checked_sub(self.base) {
            Some(offset) => self.ring.get_mut(offset as usize)?.take()?,
            None => self.stragglers.remove(&id)?,
        };
        self.live -= 1;
        self.pop_ended_front();
        Some(state)
    }

    #[inline]
    fn pop_ended_front(&mut self) {
        while let Some(None) = self.ring.front() {
            self.ring.pop_front();
            self.base += 1;
        }
    }

    /// How many instructions are live.
    pub(crate) fn len(&self) -> u64 {
        self.live
    }

    /// The ids of the live instructions, oldest first.
    pub(crate) fn ids(&self) -> Vec<u64> {
        let ring = self
            .ring
            .iter()
            .enumerate()
            .filter(|(_, slot)| slot.is_some())
            .map(|(offset, _)| self.base + offset as u64);
        self.stragglers.keys().copied().chain(ring).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leaked_instruction_does_not_pin_the_ring() {
        let mut live = LiveSet::default();
        live.push(0); // never ends
        for id in 1..(3 * RING_SPAN as u64) {
            live.push(id);
            assert!(live.remove(id).is_some());
        }
        assert_eq!(live.len(), 1);
        assert!(live.ring.len() <= 1, "ring holds {} slots", live.ring.len());
        assert!(live.get_mut(0).is_some());
        assert_eq!(live.ids(), vec![0]);
        assert!(live.remove(0).is_some());
        assert!(live.remove(0).is_none());
    }

    #[test]
    fn open_stages_come_in_lane_order() {
        let mut state = InsnState::default();
        let s = Stage::STALL;
        state.open(Lane::new(5), s);
        state.open(Lane::new(3), s);
        state.open(Lane::MAIN, s);
        let lanes: Vec<u32> = state.open_stages().map(|(l, _)| l.get()).collect();
        assert_eq!(lanes, vec![0, 3, 5]);
        assert_eq!(state.close(Lane::new(3)), Some(s));
        assert_eq!(state.open_in(Lane::new(3)), None);
    }
}
