//! Which output instruction an input file id names (Q11, Q12).
//!
//! Writers that reuse file ids (ROB slots, instruction-buffer entries) make an id name
//! different instructions over time: an `I` for a finished id starts a new instruction, and
//! a dependency's producer is the live instruction with that id, else the most recent
//! finished one among the last [`PRODUCER_HORIZON`] instructions. Live instructions sit in a
//! small map; finished ones in a larger one that forgets instructions once they fall behind
//! the horizon, so memory stays bounded however long the log is.
//!
//! Simulators that never report flushes leave hundreds of thousands of instructions open
//! that nothing names again. Once more than [`LIVE_SPAN`] are live (and ids increase), the
//! oldest move from the map to a vector sorted by input id, 16 bytes each, where they are
//! found by binary search; one that is named again moves back.
//!
//! Every `S`, `E`, `L` and `R` line names a live instruction, most of them one declared a
//! few hundred lines before, and every `I` and `R` declares or ends one: live instructions
//! sit in a ring indexed by the id's low bits, found with one load and one compare, declared
//! and ended with one store; only one whose slot is taken by another live instruction goes
//! to the map (a hash map insert and remove per instruction cost make_padded's log 2 % of
//! its instructions).

use std::collections::HashMap;
use std::collections::VecDeque;
use std::hash::{BuildHasherDefault, Hasher};

use kanata_writer::InsnId;

/// How many instructions back a dependency may name a finished producer.
pub(crate) const PRODUCER_HORIZON: u64 = 1 << 20;

/// How many live instructions the map holds before the oldest move to [`Ids::old`].
pub(crate) const LIVE_SPAN: usize = 1 << 16;

/// Slots of [`Ids::ring`] (a power of two): more than the instructions a pipeline holds in
/// flight, so that with increasing ids the live ones rarely share a slot.
const RING: usize = 1 << 12;

/// The output id of a free slot of [`Ids::ring`]: no instruction has it.
const FREE: InsnId = InsnId::from_raw(u64::MAX);

/// A multiplicative hash for integer keys: file ids are mostly sequential, and SipHash's
/// resistance to chosen keys buys nothing here.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0; 8];
            word.copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
        let mut word = [0; 8];
        word[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        self.write_u64(u64::from_le_bytes(word));
    }

    fn write_i64(&mut self, n: i64) {
        self.0 = (self.0.rotate_left(5) ^ n as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_u64(&mut self, n: u64) {
        self.write_i64(n as i64);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_i64(n as i64);
    }
}

/// A `HashMap` with [`IdHasher`].
pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// What an input id names now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// A live instruction.
    Live(InsnId),
    /// An instruction that has ended (within the horizon).
    Finished(InsnId),
    /// Nothing: never declared, or ended too long ago.
    Unknown,
}

/// The map from input file ids to output instructions; `L` is what the caller keeps per
/// live instruction.
///
/// Most writers give every instruction a new, larger id than the one before. While that holds
/// the last [`PRODUCER_HORIZON`] input ids, kept in output order, are sorted, and a finished
/// instruction is found by binary search among them: no map of a million finished ids to keep
/// up (whose every update would miss the cache). The first id that breaks the order switches
/// to such a map, built once from the ids kept.
pub(crate) struct Ids<L> {
    /// Live instructions by the low bits of their input id, each in the slot that was free
    /// when it was declared (the output id [`FREE`] otherwise); most live instructions.
    ring: Box<[(i64, (InsnId, L))]>,
    /// How many slots of `ring` are taken.
    in_ring: usize,
    /// The other live instructions: those declared while their slot was taken.
    live: IdMap<i64, (InsnId, L)>,
    /// Finished instructions by input id, the most recent instance of each; only once ids are
    /// no longer increasing.
    finished: Option<IdMap<i64, InsnId>>,
    /// Input id of each of the last `PRODUCER_HORIZON` output ids, oldest first.
    recent: VecDeque<i64>,
    /// Output id of `recent[0]`.
    recent_base: u64,
    /// Live instructions moved out of `live`, sorted by input id (ids were increasing when
    /// they moved); ended ones are marked with [`DEAD`] until they are half.
    old: Vec<(i64, InsnId)>,
    old_dead: usize,
    /// What the caller keeps for the instructions in `old`, where it is not the default.
    old_keep: IdMap<i64, L>,
    /// The output id of the next instruction to move to `old` when the map is full.
    demote_next: u64,
}

/// The mark of an ended instruction in [`Ids::old`].
const DEAD: InsnId = InsnId::from_raw(u64::MAX);

impl<L: Default + PartialEq> Ids<L> {
    pub(crate) fn new() -> Ids<L> {
        Ids {
            ring: std::iter::repeat_with(|| (0, (FREE, L::default())))
                .take(RING)
                .collect(),
            in_ring: 0,
            live: IdMap::default(),
            finished: None,
            recent: VecDeque::new(),
            recent_base: 0,
            old: Vec::new(),
            old_dead: 0,
            old_keep: IdMap::default(),
            demote_next: 0,
        }
    }

    /// The live instruction with input id `id`, and what the caller keeps for it.
    #[inline]
    pub(crate) fn live(&mut self, id: i64) -> Option<&mut (InsnId, L)> {
        if let Some(slot) = self.ring_holding(id) {
            return Some(&mut self.ring[slot].1);
        }
        if !self.live.contains_key(&id) && !self.promote(id) {
            return None;
        }
        self.live.get_mut(&id)
    }

    /// Whether the ring or the map holds `id`.
    fn in_ring_or_map(&self, id: i64) -> bool {
        self.ring_holding(id).is_some() || self.live.contains_key(&id)
    }

    /// How many instructions the ring and the map hold.
    fn live_len(&self) -> usize {
        self.in_ring + self.live.len()
    }

    /// Takes the live instruction `id` out of the ring or the map.
    #[inline(always)]
    fn take_live(&mut self, id: i64) -> Option<(InsnId, L)> {
        if let Some(slot) = self.ring_holding(id) {
            self.in_ring -= 1;
            return Some(std::mem::replace(
                &mut self.ring[slot].1,
                (FREE, L::default()),
            ));
        }
        self.live.remove(&id)
    }

    /// Where `id` is in [`Ids::old`], if it is there and live.
    fn find_old(&self, id: i64) -> Option<usize> {
        if self.old.last().is_none_or(|&(last, _)| id > last) {
            return None;
        }
        let at = self.old.binary_search_by_key(&id, |&(i, _)| i).ok()?;
        (self.old[at].1 != DEAD).then_some(at)
    }

    /// Takes `id` out of [`Ids::old`], with what the caller keeps for it.
    fn take_old(&mut self, id: i64) -> Option<(InsnId, L)> {
        let at = self.find_old(id)?;
        let insn = std::mem::replace(&mut self.old[at].1, DEAD);
        self.old_dead += 1;
        if self.old_dead * 2 > self.old.len() {
            self.old.retain(|&(_, insn)| insn != DEAD);
            self.old_dead = 0;
        }
        Some((insn, self.old_keep.remove(&id).unwrap_or_default()))
    }

    /// Moves `id` back from [`Ids::old`] to the map; whether it was there.
    #[cold]
    fn promote(&mut self, id: i64) -> bool {
        match self.take_old(id) {
            Some(entry) => {
                self.live.insert(id, entry);
                true
            }
            None => false,
        }
    }

    /// Moves the oldest live instructions from the map to [`Ids::old`] until it holds
    /// [`LIVE_SPAN`]; ids are increasing.
    #[cold]
    fn demote(&mut self) {
        self.demote_next = self.demote_next.max(self.recent_base);
        while self.live_len() > LIVE_SPAN {
            let Some(&id) = self
                .recent
                .get((self.demote_next - self.recent_base) as usize)
            else {
                break;
            };
            self.demote_next += 1;
            if let Some((insn, keep)) = self.take_live(id) {
                if self.old.len() == self.old.capacity() {
                    // Grow by half, not double: this vector is what long traces leave.
                    self.old.reserve_exact((self.old.len() / 2).max(1024));
                }
                self.old.push((id, insn));
                if keep != L::default() {
                    self.old_keep.insert(id, keep);
                }
            }
        }
    }

    /// The slot of [`Ids::ring`] that holds the live instruction `id`, if one does.
    #[inline(always)]
    fn ring_holding(&self, id: i64) -> Option<usize> {
        let slot = Self::ring_slot(id);
        let (held, (insn, _)) = &self.ring[slot];
        (*held == id && *insn != FREE).then_some(slot)
    }

    /// The slot of [`Ids::ring`] for `id`.
    #[inline(always)]
    fn ring_slot(id: i64) -> usize {
        id as usize % RING
    }

    /// What `id` names now.
    #[inline(always)]
    pub(crate) fn resolve(&self, id: i64) -> Resolved {
        if let Some(slot) = self.ring_holding(id) {
            return Resolved::Live(self.ring[slot].1 .0);
        }
        // While ids increase, an id past the last one declared is new (every `I` of such a
        // log): nothing to look up, not even the live map, and no call.
        if self.finished.is_none() && self.recent.back().is_none_or(|&last| id > last) {
            return Resolved::Unknown;
        }
        self.resolve_in_maps(id)
    }

    /// [`Ids::resolve`] for an id the ring does not hold, and that is not past the last one
    /// declared while ids increase.
    #[inline(never)]
    fn resolve_in_maps(&self, id: i64) -> Resolved {
        if let Some(&(insn, _)) = self.live.get(&id) {
            return Resolved::Live(insn);
        }
        if let Some(at) = self.find_old(id) {
            return Resolved::Live(self.old[at].1);
        }
        let found = match &self.finished {
            Some(finished) => finished.get(&id).copied(),
            // Increasing ids (and not past the last, above): the output id is the position
            // among the recent ones.
            None => self
                .recent_position(id)
                .map(|at| InsnId::from_raw(self.recent_base + at as u64)),
        };
        match found {
            Some(insn) if out_id(insn) >= self.recent_base => Resolved::Finished(insn),
            _ => Resolved::Unknown,
        }
    }

    /// Where `id`, not past the last, is among the recent ids while they increase. Ids that
    /// increase by one (most logs') are found with one load: an id `d` below the last is `d`
    /// places from the end (and no nearer with any increasing ids). The binary search, a
    /// cache miss a step among a million ids, only for the others: it was 1.5 % of the time
    /// of make_padded's log, whose dependencies name finished producers.
    fn recent_position(&self, id: i64) -> Option<usize> {
        let last = *self.recent.back()?;
        let from_end = usize::try_from(last.abs_diff(id)).unwrap_or(usize::MAX);
        if let Some(at) = (self.recent.len() - 1).checked_sub(from_end) {
            if self.recent[at] == id {
                return Some(at);
            }
        }
        self.recent.binary_search(&id).ok()
    }

    /// Input id `id`, which names no live instruction, now names the new live instruction
    /// `insn` (the next output id).
    #[inline(always)]
    pub(crate) fn begin(&mut self, id: i64, insn: InsnId, keep: L) {
        if self.finished.is_none() && self.recent.back().is_some_and(|&last| id <= last) {
            self.switch_to_map();
        }
        if let Some(finished) = &mut self.finished {
            finished.remove(&id);
        }
        let slot = &mut self.ring[Self::ring_slot(id)];
        if slot.1 .0 == FREE {
            *slot = (id, (insn, keep));
            self.in_ring += 1;
        } else {
            self.live.insert(id, (insn, keep));
        }
        if self.live_len() > LIVE_SPAN && self.finished.is_none() {
            self.demote();
        }
        if self.recent.is_empty() {
            self.recent_base = out_id(insn);
        }
        self.recent.push_back(id);
        if self.recent.len() as u64 > PRODUCER_HORIZON {
            if let Some(old) = self.recent.pop_front() {
                let old_out = self.recent_base;
                self.recent_base += 1;
                if let Some(finished) = &mut self.finished {
                    if finished.get(&old).is_some_and(|&i| out_id(i) == old_out) {
                        finished.remove(&old);
                    }
                }
            }
        }
    }

    /// Ids stopped increasing: from now on finished instructions are looked up in a map.
    #[cold]
    fn switch_to_map(&mut self) {
        let mut finished = IdMap::default();
        for (at, &id) in self.recent.iter().enumerate() {
            if !self.in_ring_or_map(id) {
                finished.insert(id, InsnId::from_raw(self.recent_base + at as u64));
            }
        }
        self.finished = Some(finished);
    }

    /// The live instruction `id` ended.
    pub(crate) fn end(&mut self, id: i64) -> Option<(InsnId, L)> {
        let (insn, keep) = match self.take_live(id) {
            Some(entry) => entry,
            None => self.take_old(id)?,
        };
        if let Some(finished) = &mut self.finished {
            if out_id(insn) >= self.recent_base {
                finished.insert(id, insn);
            }
        }
        Some((insn, keep))
    }

    /// The live instructions, oldest first.
    pub(crate) fn live_in_order(&self) -> Vec<(i64, InsnId)> {
        let mut live: Vec<(i64, InsnId)> = self
            .ring
            .iter()
            .filter(|&&(_, (insn, _))| insn != FREE)
            .map(|&(id, (insn, _))| (id, insn))
            .chain(self.live.iter().map(|(&id, &(insn, _))| (id, insn)))
            .chain(self.old.iter().copied().filter(|&(_, insn)| insn != DEAD))
            .collect();
        live.sort_by_key(|&(_, insn)| insn);
        live
    }
}

/// The output file id of a traced instruction (every instruction kanata-pp writes is).
pub(crate) fn out_id(insn: InsnId) -> u64 {
    insn.file_id().unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insn(out: u64) -> InsnId {
        InsnId::from_raw(out)
    }

    #[test]
    fn finished_ids_are_found_whether_ids_increase_by_one_or_not() {
        // By one (found at the place their distance from the last gives), then with gaps
        // (found by the search), then by one again after the gaps.
        let ids_in_order: Vec<i64> = (0..1000)
            .chain((1000..3000).step_by(7))
            .chain(3000..3500)
            .collect();
        let mut ids = Ids::<()>::new();
        for (out, &id) in ids_in_order.iter().enumerate() {
            ids.begin(id, insn(out as u64), ());
            ids.end(id);
        }
        for (out, &id) in ids_in_order.iter().enumerate() {
            assert_eq!(
                ids.resolve(id),
                Resolved::Finished(insn(out as u64)),
                "{id}"
            );
        }
        for id in [1001, 2999, -1, 3500] {
            assert_eq!(ids.resolve(id), Resolved::Unknown, "{id}");
        }
    }

    #[test]
    fn finished_ids_resolve_before_and_after_ids_stop_increasing() {
        let mut ids = Ids::<()>::new();
        for (out, id) in [10i64, 20, 30].into_iter().enumerate() {
            ids.begin(id, insn(out as u64), ());
        }
        ids.end(20);
        assert_eq!(ids.resolve(20), Resolved::Finished(insn(1)));
        assert_eq!(ids.resolve(30), Resolved::Live(insn(2)));
        assert_eq!(ids.resolve(25), Resolved::Unknown);
        // Id 20 used again: a new instruction; the map takes over.
        ids.begin(20, insn(3), ());
        assert!(ids.finished.is_some());
        assert_eq!(ids.resolve(20), Resolved::Live(insn(3)));
        ids.end(10);
        ids.end(20);
        assert_eq!(ids.resolve(10), Resolved::Finished(insn(0)));
        assert_eq!(
            ids.resolve(20),
            Resolved::Finished(insn(3)),
            "the most recent instance"
        );
    }

    #[test]
    fn ids_that_share_a_ring_slot_resolve_as_the_maps_say() {
        let mut ids = Ids::<()>::new();
        let ring = RING as i64;
        let (a, b, c) = (5, 5 + ring, 5 - ring);
        ids.begin(a, insn(0), ());
        ids.begin(b, insn(1), ());
        assert_eq!(ids.resolve(a), Resolved::Live(insn(0)), "in the ring");
        assert_eq!(ids.resolve(b), Resolved::Live(insn(1)), "in the map");
        assert_eq!(ids.live.len(), 1);
        // Ending the one the ring holds frees its slot, and the map still holds the other.
        ids.end(a);
        assert_eq!(ids.resolve(a), Resolved::Finished(insn(0)));
        assert_eq!(ids.resolve(b), Resolved::Live(insn(1)));
        assert_eq!(ids.live(b).map(|e| e.0), Some(insn(1)));
        // A third id of the slot takes the free slot; ending each leaves the other.
        let d = 5 + 2 * ring;
        ids.begin(d, insn(4), ());
        assert_eq!(ids.in_ring, 1);
        ids.end(b);
        assert_eq!(ids.resolve(b), Resolved::Finished(insn(1)));
        assert_eq!(ids.resolve(d), Resolved::Live(insn(4)));
        assert_eq!(ids.end(d), Some((insn(4), ())));
        assert_eq!(ids.live_len(), 0);
        // A negative id, and an id of 0 in a free slot.
        ids.begin(c, insn(2), ());
        assert_eq!(ids.resolve(c), Resolved::Live(insn(2)));
        assert_eq!(ids.resolve(0), Resolved::Unknown);
        // The same id declared again once ended: the new instruction.
        ids.end(c);
        ids.begin(c, insn(3), ());
        assert_eq!(ids.resolve(c), Resolved::Live(insn(3)));
    }

    #[test]
    fn the_oldest_of_many_live_instructions_move_aside_and_come_back() {
        let mut ids = Ids::<u8>::new();
        let n = 3 * LIVE_SPAN as i64;
        for id in 0..n {
            // Every hundredth keeps something (as --dedupe does).
            ids.begin(id * 2, insn(id as u64), u8::from(id % 100 == 0));
        }
        assert_eq!(ids.live_len(), LIVE_SPAN);
        assert_eq!(ids.old.len(), n as usize - LIVE_SPAN);
        assert_eq!(ids.resolve(2 * 7), Resolved::Live(insn(7)));
        assert_eq!(ids.resolve(2 * 7 + 1), Resolved::Unknown);
        // Named again: back in the map, with what it kept.
        assert_eq!(ids.live(0).map(|e| *e), Some((insn(0), 1)));
        assert_eq!(ids.live(2).map(|e| *e), Some((insn(1), 0)));
        assert!(ids.live.contains_key(&0));
        // Ended from either place.
        assert_eq!(ids.end(2 * 100), Some((insn(100), 1)));
        assert_eq!(ids.end(2 * 101), Some((insn(101), 0)));
        assert_eq!(ids.resolve(2 * 100), Resolved::Finished(insn(100)));
        assert_eq!(ids.end(2 * 101), None);
        let order = ids.live_in_order();
        assert_eq!(order.len(), n as usize - 2);
        assert!(order.windows(2).all(|w| w[0].1 < w[1].1));
        // Ids that stop increasing: the map takes over; the moved ones are still found.
        ids.begin(2 * 101, insn(n as u64), 0);
        assert!(ids.finished.is_some());
        assert_eq!(ids.resolve(2 * 101), Resolved::Live(insn(n as u64)));
        assert_eq!(ids.resolve(2 * 50), Resolved::Live(insn(50)));
        // Ending most of the moved ones drops them.
        for id in 0..(n - LIVE_SPAN as i64) {
            ids.end(id * 2);
        }
        assert!(ids.old.len() < n as usize / 2, "{}", ids.old.len());
        assert!(ids.old_keep.is_empty());
    }
}
