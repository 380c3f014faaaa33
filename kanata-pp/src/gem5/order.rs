//! Writing instructions whose events are known in advance, in time order: their events wait
//! in a calendar of cycles, in the order a k-way merge of their event lists by `(cycle,
//! placement order)` gives, and are released up to a watermark.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::Write;
use std::rc::Rc;

use kanata_writer::{Finished, InsnId, WriterBuilder};

use super::record::{Record, StageName};
use super::replay::{Op, Replay};
use crate::error::Error;

/// Ticks to cycles: `cycle = (tick - phase) / ticks_per_cycle`, rounded down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Clock {
    pub(crate) ticks_per_cycle: u64,
    /// The ticks of clock edges modulo `ticks_per_cycle` (Konata counts cycles from the
    /// first tick it sees, so a clock whose edges are not multiples of the period still gives
    /// whole cycles).
    pub(crate) phase: u64,
    /// `(2^64 - 1) / ticks_per_cycle`: a tick is divided by a multiplication and at most two
    /// corrections, because a 64-bit division costs tens of cycles and every record has
    /// about eight ticks.
    reciprocal: u64,
}

impl Clock {
    /// A clock of `ticks_per_cycle` (at least 1) whose edges are at `phase` modulo it.
    pub(crate) fn new(ticks_per_cycle: u64, phase: u64) -> Clock {
        let ticks_per_cycle = ticks_per_cycle.max(1);
        Clock {
            ticks_per_cycle,
            phase,
            reciprocal: u64::MAX / ticks_per_cycle,
        }
    }

    /// `(x / ticks_per_cycle, x % ticks_per_cycle)`. The estimate `x * reciprocal / 2^64`
    /// is at most the quotient and more than the quotient minus 2.
    fn divide(self, x: u64) -> (u64, u64) {
        let mut quotient = ((u128::from(x) * u128::from(self.reciprocal)) >> 64) as u64;
        let mut rest = x - quotient * self.ticks_per_cycle;
        while rest >= self.ticks_per_cycle {
            quotient += 1;
            rest -= self.ticks_per_cycle;
        }
        (quotient, rest)
    }

    /// The cycle of `tick`, and whether it is a whole cycle.
    pub(crate) fn cycle(self, tick: u64) -> (i64, bool) {
        if let Some(shifted) = tick.checked_sub(self.phase) {
            let (cycle, rest) = self.divide(shifted);
            return (i64::try_from(cycle).unwrap_or(i64::MAX), rest == 0);
        }
        let shifted = i128::from(tick) - i128::from(self.phase);
        let tpc = i128::from(self.ticks_per_cycle);
        let cycle = shifted.div_euclid(tpc);
        (
            i64::try_from(cycle).unwrap_or(i64::MAX),
            shifted.rem_euclid(tpc) == 0,
        )
    }
}

/// The handle of an instruction once it has begun (its file id), shared with the dependency
/// arrows that name it as their producer.
pub(crate) type Handle = Rc<Cell<Option<InsnId>>>;

/// Events whose cycle is this far ahead of the last one written wait in an ordered map
/// instead of the ring of cycles. A bucket's memory is reused once per turn of the ring, so
/// a shorter ring keeps it in the cache (1,024 cycles: about 10 % slower on the 200 MB
/// trace), while a longer one keeps more events out of the map: 256 holds the whole life of
/// 99 % of the instructions in the spec's real gem5 sample (about 230 cycles at the 99th
/// percentile).
const RING: usize = 256;

/// One thing to write for an instruction, at a cycle.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
    /// `I`, then the name and detail labels.
    Begin,
    /// `S` (closing the stage open in the lane), then one `L 2` per note of the record's
    /// stage `notes` (none for [`Event::NO_NOTES`]).
    Enter {
        lane: u32,
        stage: StageName,
        notes: u32,
    },
    /// `E` of the stage open in the lane.
    Leave { lane: u32 },
    /// `W` from the producer of [`Placed::depends`] number `n`, if it was written.
    Depend(u32),
    /// `R … 0` with this retire id.
    Retire(i64),
    /// `R … 1` with this retire id.
    Flush(i64),
}

impl Event {
    /// [`Event::Enter`] of a stage without notes.
    pub(crate) const NO_NOTES: u32 = u32::MAX;
}

/// An instruction ready to be written: its thread and its record (labels, notes, handle
/// and producers). Its events are given with it.
#[derive(Debug)]
pub(crate) struct Placed {
    pub(crate) thread: u32,
    pub(crate) record: Box<Record>,
}

/// An instruction placed and not finished.
struct Live {
    placed: Placed,
    /// The file id, once begun.
    insn: Option<u64>,
    /// Its events not yet written.
    left: u32,
}

/// An event waiting for its cycle, and whose it is.
#[derive(Clone, Copy, Debug)]
struct Due {
    slot: u32,
    event: Event,
}

/// The events placed and not yet written, by cycle: a ring of one bucket per cycle from
/// `base` (the last cycle written), and a map for the cycles beyond the ring. Within a cycle
/// events stay in the order they were placed: by instruction in placement order, each
/// instruction's in its own order (the order a k-way merge by `(cycle, placement)` gives).
struct Calendar {
    ring: Vec<Vec<Due>>,
    /// Which buckets of `ring` hold events, one bit each.
    occupied: Vec<u64>,
    /// The cycle of the first bucket; `None` until the first cycle is written. Events before
    /// it are never placed (they would be before the last cycle written).
    base: Option<i64>,
    /// Events beyond the ring (or before any cycle was written).
    far: BTreeMap<i64, Vec<Due>>,
}

impl Calendar {
    fn new() -> Calendar {
        Calendar {
            ring: (0..RING).map(|_| Vec::new()).collect(),
            occupied: vec![0; RING / 64],
            base: None,
            far: BTreeMap::new(),
        }
    }

    fn bucket(cycle: i64) -> usize {
        cycle.rem_euclid(RING as i64) as usize
    }

    fn in_ring(&self, cycle: i64) -> bool {
        self.base
            .is_some_and(|base| cycle >= base && cycle - base < RING as i64)
    }

    fn push(&mut self, cycle: i64, due: Due) {
        if self.in_ring(cycle) {
            let bucket = Calendar::bucket(cycle);
            self.ring[bucket].push(due);
            self.occupied[bucket / 64] |= 1 << (bucket % 64);
        } else {
            self.far.entry(cycle).or_default().push(due);
        }
    }

    /// The earliest cycle with events.
    fn first(&self) -> Option<i64> {
        let far = self.far.keys().next().copied();
        let Some(base) = self.base else {
            return far;
        };
        let start = Calendar::bucket(base);
        let mut ring = None;
        // The words from the base's, wrapping around: the first set bit is the earliest.
        let words = RING / 64;
        for k in 0..=words {
            let word = (start / 64 + k) % words;
            let mut bits = self.occupied[word];
            if k == 0 {
                bits &= u64::MAX << (start % 64);
            } else if k == words {
                bits &= !(u64::MAX << (start % 64));
            }
            if bits != 0 {
                let bucket = word * 64 + bits.trailing_zeros() as usize;
                let offset = (bucket + RING - start) % RING;
                ring = Some(base + offset as i64);
                break;
            }
        }
        match (ring, far) {
            (Some(r), Some(f)) => Some(r.min(f)),
            (r, f) => r.or(f),
        }
    }

    /// Takes the events of `cycle`, the earliest, into `out`; the ring then starts there.
    fn take(&mut self, cycle: i64, out: &mut Vec<Due>) {
        if self.base.is_none_or(|base| cycle > base) {
            self.base = Some(cycle);
            // The buckets the ring gains were those of the cycles before `cycle`: empty. Events
            // that come into its reach move in ahead of any placed later.
            while let Some(entry) = self.far.first_entry() {
                let at = *entry.key();
                if at < cycle {
                    break;
                }
                if at - cycle >= RING as i64 {
                    break;
                }
                let dues = entry.remove();
                let bucket = Calendar::bucket(at);
                self.ring[bucket].extend(dues);
                self.occupied[bucket / 64] |= 1 << (bucket % 64);
            }
        }
        if let Some(dues) = self.far.remove(&cycle) {
            out.extend(dues);
        }
        if self.in_ring(cycle) {
            let bucket = Calendar::bucket(cycle);
            out.append(&mut self.ring[bucket]);
            self.occupied[bucket / 64] &= !(1 << (bucket % 64));
        }
    }
}

/// Where the instructions go: the writer, on its own thread (see `replay`).
pub(crate) struct Emitter<W: Write + Send + 'static> {
    out: Replay<W>,
    calendar: Calendar,
    /// The instructions placed and not finished, in slots reused once free.
    live: Vec<Option<Live>>,
    free: Vec<u32>,
    live_count: usize,
    /// The events of the cycle being written.
    now: Vec<Due>,
    /// Records written, kept for the next ones to reuse. Boxed: a record goes from here to
    /// the record being read, the window and back as one pointer.
    #[allow(clippy::vec_box)]
    spare: Vec<Box<Record>>,
    /// The cycle of the last event written.
    last_cycle: Option<i64>,
    /// Instructions begun: the file id of the next one.
    begun: u64,
    /// The most instructions placed and not yet finished at once (for tests).
    pub(crate) high_water: usize,
}

impl<W: Write + Send + 'static> Emitter<W> {
    pub(crate) fn new(builder: WriterBuilder, output: W) -> Emitter<W> {
        Emitter {
            out: Replay::new(builder, output),
            calendar: Calendar::new(),
            live: Vec::new(),
            free: Vec::new(),
            live_count: 0,
            now: Vec::new(),
            spare: Vec::new(),
            last_cycle: None,
            begun: 0,
            high_water: 0,
        }
    }

    /// The cycle of the last event written: nothing earlier can be placed any more.
    pub(crate) fn last_cycle(&self) -> Option<i64> {
        self.last_cycle
    }

    /// A record no longer needed, to be filled again.
    pub(crate) fn spare(&mut self) -> Option<Box<Record>> {
        self.spare.pop()
    }

    /// Keeps a record for reuse.
    pub(crate) fn recycle(&mut self, record: Box<Record>) {
        self.spare.push(record);
    }

    /// Queues an instruction and its events, in its order; the same cycle may come several
    /// times, in any order. No event may be earlier than [`last_cycle`](Self::last_cycle).
    pub(crate) fn place(&mut self, placed: Placed, events: &[(i64, Event)]) {
        if events.is_empty() {
            self.spare.push(placed.record);
            return;
        }
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.live.push(None);
                (self.live.len() - 1) as u32
            }
        };
        self.live[slot as usize] = Some(Live {
            placed,
            insn: None,
            left: events.len() as u32,
        });
        for &(cycle, event) in events {
            debug_assert!(self.last_cycle.is_none_or(|last| cycle >= last));
            self.calendar.push(cycle, Due { slot, event });
        }
        self.live_count += 1;
        self.high_water = self.high_water.max(self.live_count);
    }

    /// Writes every queued event before `watermark` (all of them for `None`).
    pub(crate) fn release(&mut self, watermark: Option<i64>) -> Result<(), Error> {
        while let Some(cycle) = self.calendar.first() {
            if watermark.is_some_and(|w| cycle >= w) {
                break;
            }
            let mut now = std::mem::take(&mut self.now);
            self.calendar.take(cycle, &mut now);
            let written = self.write_at(cycle, &now);
            now.clear();
            self.now = now;
            written?;
        }
        Ok(())
    }

    /// Writes what is left and ends the trace.
    pub(crate) fn finish(mut self) -> Result<Finished<W>, Error> {
        self.release(None)?;
        self.out.finish()
    }

    /// Writes the events of `cycle`.
    fn write_at(&mut self, cycle: i64, dues: &[Due]) -> Result<(), Error> {
        if self.last_cycle != Some(cycle) {
            self.out.push(Op::Cycle(cycle))?;
        }
        self.last_cycle = Some(cycle);
        for due in dues {
            let live = self.live[due.slot as usize]
                .as_mut()
                .expect("queued instructions are live");
            let insn = live.insn.unwrap_or(self.begun);
            match due.event {
                Event::Begin => {
                    self.begun += 1;
                    let record = &live.placed.record;
                    let name = self.out.text(record.name());
                    let detail = self.out.text(record.detail());
                    self.out.push(Op::Begin {
                        seq: record.seq,
                        thread: live.placed.thread,
                        name,
                        detail,
                    })?;
                    if let Some(handle) = &live.placed.record.handle {
                        handle.set(Some(InsnId::from_raw(insn)));
                    }
                    live.insn = Some(insn);
                }
                Event::Enter { lane, stage, notes } => {
                    self.out.push(Op::Enter { insn, lane, stage })?;
                    if notes != Event::NO_NOTES {
                        for note in live.placed.record.notes_of(notes) {
                            let text = self.out.text(note);
                            self.out.push(Op::Note { insn, text })?;
                        }
                    }
                }
                Event::Leave { lane } => self.out.push(Op::Leave { insn, lane })?,
                Event::Depend(n) => {
                    let producer = live.placed.record.depends[n as usize].get();
                    if let Some(producer) = producer.filter(|p| p.into_raw() < insn) {
                        self.out.push(Op::Depend {
                            insn,
                            producer: producer.into_raw(),
                        })?;
                    }
                }
                Event::Retire(rid) => self.out.push(Op::Retire { insn, rid })?,
                Event::Flush(rid) => self.out.push(Op::Flush { insn, rid })?,
            }
            live.left -= 1;
            if live.left == 0 {
                let done = self.live[due.slot as usize].take().expect("live above");
                self.spare.push(done.placed.record);
                self.free.push(due.slot);
                self.live_count -= 1;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calendar_gives_events_by_cycle_in_placement_order_near_and_far() {
        let mut calendar = Calendar::new();
        let mut placed = Vec::new();
        let mut taken = Vec::new();
        let mut now = Vec::new();
        let mut rng = 0x2545_f491_4f6c_dd1d_u64;
        let mut last = -5;
        for slot in 0..3000u32 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            // Mostly near, some beyond the ring, all at or after the last cycle taken.
            let ahead = if rng % 7 == 0 { rng % 5000 } else { rng % 40 } as i64;
            for k in 0..3 {
                let cycle = last + ahead + k;
                calendar.push(
                    cycle,
                    Due {
                        slot,
                        event: Event::Retire(k),
                    },
                );
                placed.push((cycle, slot, k));
            }
            if slot % 3 == 0 {
                if let Some(cycle) = calendar.first() {
                    calendar.take(cycle, &mut now);
                    taken.extend(now.drain(..).map(|d| match d.event {
                        Event::Retire(k) => (cycle, d.slot, k),
                        _ => unreachable!(),
                    }));
                    last = cycle;
                }
            }
        }
        while let Some(cycle) = calendar.first() {
            calendar.take(cycle, &mut now);
            taken.extend(now.drain(..).map(|d| match d.event {
                Event::Retire(k) => (cycle, d.slot, k),
                _ => unreachable!(),
            }));
        }
        placed.sort_by_key(|&(cycle, slot, _)| (cycle, slot));
        assert_eq!(taken, placed);
    }

    #[test]
    fn cycles_count_from_the_phase_and_say_when_a_tick_is_between_edges() {
        let clock = Clock::new(500, 0);
        assert_eq!(clock.cycle(78_500), (157, true));
        assert_eq!(clock.cycle(305_001), (610, false));
        let shifted = Clock::new(1000, 500);
        assert_eq!(shifted.cycle(1500), (1, true));
        assert_eq!(shifted.cycle(0), (-1, false));
    }

    #[test]
    fn division_by_the_reciprocal_is_exact() {
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let divisors = [
            1,
            2,
            3,
            7,
            333,
            500,
            1000,
            1 << 32,
            u64::MAX / 3,
            u64::MAX - 1,
            u64::MAX,
        ];
        for &d in &divisors {
            let clock = Clock::new(d, 0);
            let edges = [0, 1, d - 1, d, d.wrapping_add(1), u64::MAX, u64::MAX - 1];
            for x in edges.into_iter().chain((0..2000).map(|_| next())) {
                assert_eq!(clock.divide(x), (x / d, x % d), "{x} / {d}");
            }
        }
        for _ in 0..2000 {
            let d = next() >> (next() % 64);
            let clock = Clock::new(d, 0);
            let d = d.max(1);
            let x = next();
            assert_eq!(clock.divide(x), (x / d, x % d), "{x} / {d}");
        }
    }
}
