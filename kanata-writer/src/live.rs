//! The instructions in flight and what each has open.
//!
//! Ids are minted in order and mostly end in order, so live instructions sit in a ring
//! indexed by the id's low bits, which spans the ids from the oldest live one on (and doubles
//! when it must span more). An instruction that outlives a long run of younger ones (a leak in
//! the simulator, or one that is simply never retired) would pin the ring and make it grow
//! with every later instruction, so once the ring spans more than [`RING_SPAN`] ids its
//! oldest live entries move aside, to [`Sleepers`]. Memory therefore follows the number of
//! instructions in flight, not the length of the run.
//!
//! Simulators that never report flushes leave hundreds of thousands of such instructions
//! behind, so a sleeper costs 16 bytes (its id, its flags and the open stages of lanes 0 and
//! 1), in a vector sorted by id: instructions move aside in id order, so it only grows at its
//! end. One that is used again wakes into a full [`InsnState`] for as long as it is used.

use std::collections::BTreeMap;

use crate::encode::LineHead;
use crate::stage::{Lane, Stage};

/// How many ids the ring may span before its oldest live entries move to the side map.
const RING_SPAN: usize = 1 << 16;

/// What the writer remembers about one live instruction.
#[derive(Debug, Default)]
pub(crate) struct InsnState {
    /// `?\t<id>\t`, the start of its lines.
    pub(crate) head: LineHead,
    /// The open stage of lanes 0 and 1, the lanes nearly every trace uses.
    open: [Option<Stage>; 2],
    /// Open stages of lanes 2 and up, sorted by lane.
    open_other: Vec<(Lane, Stage)>,
    /// Whether the instruction has entered any stage (a stage note needs one).
    pub(crate) entered: bool,
}

impl InsnState {
    /// The open stages of lanes 0 and 1, if no other lane has one open (else `None`).
    #[inline(always)]
    pub(crate) fn open_in_first_two_only(&self) -> Option<[Option<Stage>; 2]> {
        self.open_other.is_empty().then_some(self.open)
    }

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
#[derive(Debug)]
pub(crate) struct LiveSet {
    /// Instruction `id` lives in `slots[id & mask]` if that slot's tag is `id`. A slot that
    /// holds no instruction has a tag whose low bits differ from its index
    /// ([`LiveSet::vacant`]), so that no id can match it: the lookup is one compare.
    slots: Vec<Slot>,
    mask: u64,
    /// Every live id in the ring is in `base..next`; `base` is the oldest that may be live.
    base: u64,
    next: u64,
    /// Live instructions older than `base`.
    sleepers: Sleepers,
    live: u64,
}

#[derive(Debug)]
struct Slot {
    tag: u64,
    state: InsnState,
}

/// A live instruction moved out of the ring, in 16 bytes.
#[derive(Clone, Copy, Debug)]
struct Sleeper {
    /// The id in the low 60 bits (the writer mints ids from 0 up: 2^60 is out of reach), and
    /// the [`Sleeper`] flags in the top 4.
    key: u64,
    /// The open stages of lanes 0 and 1.
    open: [Option<Stage>; 2],
}

impl Sleeper {
    const ID_BITS: u64 = (1 << 60) - 1;
    /// It has entered a stage ([`InsnState::entered`]).
    const ENTERED: u64 = 1 << 60;
    /// Lanes 2 and up have open stages, kept in [`Sleepers::other`].
    const OTHER: u64 = 1 << 61;
    /// It is awake: its state is in [`Sleepers::awake`], not here.
    const AWAKE: u64 = 1 << 62;
    /// It has ended.
    const DEAD: u64 = 1 << 63;

    fn id(&self) -> u64 {
        self.key & Sleeper::ID_BITS
    }
}

/// The live instructions older than the ring.
#[derive(Debug, Default)]
struct Sleepers {
    /// Sorted by id; ended ones stay, marked [`Sleeper::DEAD`], until they are half.
    asleep: Vec<Sleeper>,
    dead: usize,
    /// The open stages of lanes 2 and up of the sleepers that have some.
    other: BTreeMap<u64, Vec<(Lane, Stage)>>,
    /// Sleepers being used, whole: put back to sleep once there are [`MAX_AWAKE`].
    awake: BTreeMap<u64, InsnState>,
}

/// How many sleepers may be awake at once.
const MAX_AWAKE: usize = 256;

impl Sleepers {
    /// Puts `id` to sleep: older than every sleeper.
    fn add(&mut self, id: u64, state: InsnState) {
        debug_assert!(self.asleep.last().is_none_or(|s| s.id() < id) && id <= Sleeper::ID_BITS);
        if self.asleep.len() == self.asleep.capacity() {
            // Grow by half, not double: this vector is what long traces leave behind.
            self.asleep.reserve_exact((self.asleep.len() / 2).max(64));
        }
        self.asleep.push(Sleeper {
            key: id,
            open: [None; 2],
        });
        let at = self.asleep.len() - 1;
        self.store(at, state);
    }

    /// Writes `state` into sleeper `at`.
    fn store(&mut self, at: usize, state: InsnState) {
        let sleeper = &mut self.asleep[at];
        let id = sleeper.id();
        sleeper.key = id;
        sleeper.open = state.open;
        if state.entered {
            sleeper.key |= Sleeper::ENTERED;
        }
        if state.open_other.is_empty() {
            self.other.remove(&id);
        } else {
            sleeper.key |= Sleeper::OTHER;
            self.other.insert(id, state.open_other);
        }
    }

    fn find(&self, id: u64) -> Option<usize> {
        let at = self.asleep.binary_search_by_key(&id, Sleeper::id).ok()?;
        (self.asleep[at].key & Sleeper::DEAD == 0).then_some(at)
    }

    fn contains(&self, id: u64) -> bool {
        self.find(id).is_some()
    }

    /// The open stage of sleeper `id` in `lane`, without waking it.
    // Out of line: the search would cost the hot callers registers.
    #[cold]
    #[inline(never)]
    fn open_in(&self, id: u64, lane: Lane) -> Option<Stage> {
        let at = self.find(id)?;
        if let Some(state) = self.awake.get(&id) {
            return state.open_in(lane);
        }
        match self.asleep[at].open.get(lane.get() as usize) {
            Some(&stage) => stage,
            None => self
                .other
                .get(&id)?
                .iter()
                .find(|&&(l, _)| l == lane)
                .map(|&(_, stage)| stage),
        }
    }

    /// The state of sleeper `id`, awake.
    fn wake(&mut self, id: u64) -> Option<&mut InsnState> {
        let at = self.find(id)?;
        if self.asleep[at].key & Sleeper::AWAKE == 0 {
            if self.awake.len() >= MAX_AWAKE {
                self.sleep_all();
            }
            let sleeper = &mut self.asleep[at];
            sleeper.key |= Sleeper::AWAKE;
            let state = InsnState {
                head: LineHead::new(id),
                open: sleeper.open,
                open_other: if sleeper.key & Sleeper::OTHER != 0 {
                    self.other.remove(&id).unwrap_or_default()
                } else {
                    Vec::new()
                },
                entered: sleeper.key & Sleeper::ENTERED != 0,
            };
            self.awake.insert(id, state);
        }
        self.awake.get_mut(&id)
    }

    #[cold]
    fn sleep_all(&mut self) {
        for (id, state) in std::mem::take(&mut self.awake) {
            if let Some(at) = self.find(id) {
                self.store(at, state);
            }
        }
    }

    /// Ends sleeper `id`; whether it was one.
    fn end(&mut self, id: u64) -> bool {
        let Some(at) = self.find(id) else {
            return false;
        };
        self.asleep[at].key |= Sleeper::DEAD;
        self.awake.remove(&id);
        self.other.remove(&id);
        self.dead += 1;
        if self.dead * 2 > self.asleep.len() {
            self.asleep.retain(|s| s.key & Sleeper::DEAD == 0);
            self.dead = 0;
            if self.asleep.capacity() > self.asleep.len() * 2 {
                self.asleep.shrink_to(self.asleep.len() * 3 / 2);
            }
        }
        true
    }

    fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.asleep
            .iter()
            .filter(|s| s.key & Sleeper::DEAD == 0)
            .map(Sleeper::id)
    }
}

impl Default for LiveSet {
    fn default() -> LiveSet {
        LiveSet::with_slots(INITIAL_SLOTS)
    }
}

/// Enough for the instructions in flight of most cores; the ring doubles when it is not.
const INITIAL_SLOTS: usize = 256;

impl LiveSet {
    fn with_slots(n: usize) -> LiveSet {
        debug_assert!(n.is_power_of_two() && n >= 2);
        LiveSet {
            slots: (0..n)
                .map(|i| Slot {
                    tag: LiveSet::vacant(i),
                    state: InsnState::default(),
                })
                .collect(),
            mask: n as u64 - 1,
            base: 0,
            next: 0,
            sleepers: Sleepers::default(),
            live: 0,
        }
    }

    /// The tag of an empty slot `index`: its lowest bit differs from the index's, so it never
    /// equals an id that maps to this slot.
    fn vacant(index: usize) -> u64 {
        index as u64 ^ 1
    }

    /// Adds instruction `id`, which must be the next id after every id added before.
    #[inline]
    pub(crate) fn push(&mut self, id: u64, head: &LineHead) {
        debug_assert!(self.live == 0 || id == self.next);
        if self.live == 0 {
            // Nothing is live: the ring may start anywhere.
            self.base = id;
        }
        while id - self.base > self.mask {
            self.make_room();
        }
        let slot = &mut self.slots[(id & self.mask) as usize];
        slot.tag = id;
        // Field by field, in place: a state built elsewhere and copied in would be read back
        // right after its parts were stored, which stalls the load.
        let state = &mut slot.state;
        state.head = *head;
        state.open = [None; 2];
        state.open_other.clear();
        state.entered = false;
        self.next = id + 1;
        self.live += 1;
    }

    /// Grows the ring or, once it spans [`RING_SPAN`] ids, moves its oldest entry aside.
    #[cold]
    fn make_room(&mut self) {
        if self.slots.len() < RING_SPAN {
            let mut bigger = LiveSet::with_slots(self.slots.len() * 2);
            for id in self.base..self.next {
                let slot = &mut self.slots[(id & self.mask) as usize];
                if slot.tag == id {
                    let new = &mut bigger.slots[(id & bigger.mask) as usize];
                    new.tag = id;
                    new.state = std::mem::take(&mut slot.state);
                }
            }
            self.slots = bigger.slots;
            self.mask = bigger.mask;
        } else {
            let index = (self.base & self.mask) as usize;
            let slot = &mut self.slots[index];
            if slot.tag == self.base {
                slot.tag = LiveSet::vacant(index);
                let state = std::mem::take(&mut slot.state);
                self.sleepers.add(self.base, state);
            }
            self.base += 1;
            self.pop_ended_front();
        }
    }

    #[inline(always)]
    pub(crate) fn get_mut(&mut self, id: u64) -> Option<&mut InsnState> {
        let index = (id & self.mask) as usize;
        if self.slots[index].tag == id {
            Some(&mut self.slots[index].state)
        } else {
            self.straggler_mut(id)
        }
    }

    // Out of line: the search would cost the hot callers registers.
    #[cold]
    #[inline(never)]
    fn straggler_mut(&mut self, id: u64) -> Option<&mut InsnState> {
        self.sleepers.wake(id)
    }

    /// The state of `id`, if live (a sleeper is woken, hence `&mut self`).
    #[inline(always)]
    pub(crate) fn get(&mut self, id: u64) -> Option<&InsnState> {
        self.get_mut(id).map(|state| &*state)
    }

    /// Whether `id` is live.
    pub(crate) fn contains(&self, id: u64) -> bool {
        self.slots[(id & self.mask) as usize].tag == id || self.sleepers.contains(id)
    }

    /// The open stage of live instruction `id` in `lane`.
    #[inline(always)]
    pub(crate) fn open_in(&self, id: u64, lane: Lane) -> Option<Stage> {
        let slot = &self.slots[(id & self.mask) as usize];
        if slot.tag == id {
            slot.state.open_in(lane)
        } else {
            self.sleepers.open_in(id, lane)
        }
    }

    /// Ends instruction `id`, if live. Its state stays in the slot until a new instruction
    /// takes it: the writer reads it in place first, and moving it out would cost more.
    #[inline(always)]
    pub(crate) fn end(&mut self, id: u64) {
        let index = (id & self.mask) as usize;
        let slot = &mut self.slots[index];
        if slot.tag == id {
            slot.tag = LiveSet::vacant(index);
            self.live -= 1;
            if id == self.base {
                self.pop_ended_front();
            }
        } else {
            self.end_straggler(id);
        }
    }

    #[cold]
    fn end_straggler(&mut self, id: u64) {
        if self.sleepers.end(id) {
            self.live -= 1;
        }
    }

    #[inline]
    fn pop_ended_front(&mut self) {
        while self.base < self.next && self.slots[(self.base & self.mask) as usize].tag != self.base
        {
            self.base += 1;
        }
    }

    /// How many instructions are live.
    pub(crate) fn len(&self) -> u64 {
        self.live
    }

    /// The ids of the live instructions, oldest first.
    pub(crate) fn ids(&self) -> Vec<u64> {
        let ring =
            (self.base..self.next).filter(|&id| self.slots[(id & self.mask) as usize].tag == id);
        self.sleepers.ids().chain(ring).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leaked_instruction_does_not_pin_the_ring() {
        let mut live = LiveSet::default();
        live.push(0, &LineHead::new(0)); // never ends
        for id in 1..(3 * RING_SPAN as u64) {
            live.push(id, &LineHead::new(id));
            assert!(live.get(id).is_some());
            live.end(id);
            assert!(live.get(id).is_none());
        }
        assert_eq!(live.len(), 1);
        assert!(
            live.slots.len() <= RING_SPAN,
            "ring holds {} slots",
            live.slots.len()
        );
        assert_eq!(live.sleepers.ids().count(), 1);
        assert!(live.get_mut(0).is_some());
        assert_eq!(live.ids(), vec![0]);
        live.end(0);
        assert_eq!(live.len(), 0);
        assert!(live.get_mut(0).is_none());
    }

    #[test]
    fn sleepers_keep_their_state_through_waking_and_sleeping() {
        let mut live = LiveSet::default();
        let mut stages = crate::stage::StageTable::new(false);
        let (f, x) = (stages.intern("F").unwrap(), stages.intern("X").unwrap());
        let leaked = 4 * MAX_AWAKE as u64;
        for id in 0..leaked {
            live.push(id, &LineHead::new(id));
            let state = live.get_mut(id).unwrap();
            state.open(Lane::MAIN, f);
            if id % 3 == 0 {
                state.open(Lane::new(4), x);
            }
        }
        // Push them all out of the ring with instructions that end at once.
        for id in leaked..leaked + 2 * RING_SPAN as u64 {
            live.push(id, &LineHead::new(id));
            live.end(id);
        }
        assert_eq!(live.len(), leaked);
        assert_eq!(live.ids(), (0..leaked).collect::<Vec<_>>());
        // Wake every one (more than MAX_AWAKE: the earlier ones go back to sleep), change
        // some, end some.
        for id in 0..leaked {
            assert_eq!(live.open_in(id, Lane::MAIN), Some(f));
            let state = live.get_mut(id).unwrap();
            assert!(state.entered);
            assert_eq!(state.open_in(Lane::new(4)), (id % 3 == 0).then_some(x));
            let head = format!("{:?}", state.head);
            assert_eq!(head, format!("{:?}", LineHead::new(id)), "the head of {id}");
            if id % 2 == 0 {
                state.close(Lane::MAIN);
                state.open(Lane::new(1), x);
            }
            if id % 5 == 0 {
                live.end(id);
            }
        }
        for id in 0..leaked {
            assert_eq!(live.contains(id), id % 5 != 0, "{id}");
            if id % 5 == 0 {
                assert!(live.get(id).is_none());
                continue;
            }
            let want = if id % 2 == 0 {
                (None, Some(x))
            } else {
                (Some(f), None)
            };
            assert_eq!(
                (live.open_in(id, Lane::MAIN), live.open_in(id, Lane::new(1))),
                want
            );
            assert_eq!(live.open_in(id, Lane::new(4)), (id % 3 == 0).then_some(x));
        }
        for id in 0..leaked {
            live.end(id);
        }
        assert_eq!(live.len(), 0);
        assert!(live.ids().is_empty());
        assert!(
            live.sleepers.asleep.len() < 64,
            "ended sleepers are dropped"
        );
    }

    #[test]
    fn a_sleeper_is_16_bytes() {
        assert_eq!(std::mem::size_of::<Sleeper>(), 16);
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
