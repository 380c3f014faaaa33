//! Writing instructions whose events are known in advance, in time order: a k-way merge of
//! their event lists by `(cycle, placement order)`, released up to a watermark.

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::Write;
use std::rc::Rc;

use kanata_writer::{DepKind, Finished, InsnId, LabelKind, Lane, Stage, Writer, WriterBuilder};

use super::record::StageName;
use crate::error::Error;

/// Ticks to cycles: `cycle = (tick - phase) / ticks_per_cycle`, rounded down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Clock {
    pub(crate) ticks_per_cycle: u64,
    /// The ticks of clock edges modulo `ticks_per_cycle` (Konata counts cycles from the
    /// first tick it sees, so a clock whose edges are not multiples of the period still gives
    /// whole cycles).
    pub(crate) phase: u64,
}

impl Clock {
    /// The cycle of `tick`, and whether it is a whole cycle.
    pub(crate) fn cycle(self, tick: u64) -> (i64, bool) {
        if let Some(shifted) = tick.checked_sub(self.phase) {
            let cycle = shifted / self.ticks_per_cycle;
            return (
                i64::try_from(cycle).unwrap_or(i64::MAX),
                shifted % self.ticks_per_cycle == 0,
            );
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

/// The handle of an instruction once it has begun, shared with the dependency arrows that
/// name it as their producer.
pub(crate) type Handle = Rc<Cell<Option<InsnId>>>;

/// One thing to write for an instruction, at a cycle.
#[derive(Debug)]
pub(crate) enum Event {
    /// `I`, then the name and detail labels.
    Begin,
    /// `S` (closing the stage open in the lane), then one `L 2` per note.
    Enter {
        lane: u32,
        stage: StageName,
        notes: Vec<Box<str>>,
    },
    /// `E` of the stage open in the lane.
    Leave { lane: u32 },
    /// `W` from the producer, if it was written.
    Depend(Handle),
    /// `R … 0` with this retire id.
    Retire(i64),
    /// `R … 1` with this retire id.
    Flush(i64),
}

/// An instruction ready to be written: its `I` fields, labels and events by cycle.
#[derive(Debug)]
pub(crate) struct Placed {
    pub(crate) seq: u64,
    pub(crate) thread: u32,
    pub(crate) name: String,
    pub(crate) detail: String,
    /// Set once `I` is written, for the arrows of later instructions.
    pub(crate) handle: Option<Handle>,
    /// Sorted by cycle; the first is [`Event::Begin`].
    pub(crate) events: Vec<(i64, Event)>,
}

struct Live {
    placed: Placed,
    insn: Option<InsnId>,
    next: usize,
}

/// Where the instructions go: the writer, made at the first event (its start cycle is the
/// first cycle written, so that Konata's timeline starts where the trace does).
pub(crate) struct Emitter<W: Write + Send + 'static> {
    builder: WriterBuilder,
    output: Option<W>,
    writer: Option<Writer<W>>,
    stages: Vec<Stage>,
    heap: BinaryHeap<Reverse<(i64, u64)>>,
    /// The instructions placed and not finished, by placement order from `first_order`
    /// (`None` once finished; finished ones at the front are dropped).
    live: VecDeque<Option<Live>>,
    first_order: u64,
    live_count: usize,
    next_order: u64,
    /// The cycle of the last event written.
    last_cycle: Option<i64>,
    /// The most instructions placed and not yet finished at once (for tests).
    pub(crate) high_water: usize,
}

impl<W: Write + Send + 'static> Emitter<W> {
    pub(crate) fn new(builder: WriterBuilder, output: W) -> Emitter<W> {
        Emitter {
            builder,
            output: Some(output),
            writer: None,
            stages: Vec::new(),
            heap: BinaryHeap::new(),
            live: VecDeque::new(),
            first_order: 0,
            live_count: 0,
            next_order: 0,
            last_cycle: None,
            high_water: 0,
        }
    }

    /// The cycle of the last event written: nothing earlier can be placed any more.
    pub(crate) fn last_cycle(&self) -> Option<i64> {
        self.last_cycle
    }

    /// Queues an instruction. Its first event must not be earlier than
    /// [`last_cycle`](Self::last_cycle).
    pub(crate) fn place(&mut self, placed: Placed) {
        let Some(&(first, _)) = placed.events.first() else {
            return;
        };
        debug_assert!(self.last_cycle.is_none_or(|last| first >= last));
        let order = self.next_order;
        self.next_order += 1;
        self.heap.push(Reverse((first, order)));
        self.live.push_back(Some(Live {
            placed,
            insn: None,
            next: 0,
        }));
        self.live_count += 1;
        self.high_water = self.high_water.max(self.live_count);
    }

    /// Writes every queued event before `watermark` (all of them for `None`).
    pub(crate) fn release(&mut self, watermark: Option<i64>) -> Result<(), Error> {
        while let Some(&Reverse((cycle, order))) = self.heap.peek() {
            if watermark.is_some_and(|w| cycle >= w) {
                break;
            }
            self.heap.pop();
            self.write_at(cycle, order)?;
        }
        Ok(())
    }

    /// Writes what is left and ends the trace.
    pub(crate) fn finish(mut self) -> Result<Finished<W>, Error> {
        self.release(None)?;
        if self.writer.is_none() {
            self.start(0)?;
        }
        let writer = self.writer.take().expect("made above");
        Ok(writer.finish()?)
    }

    fn start(&mut self, cycle: i64) -> Result<(), Error> {
        let output = self.output.take().expect("the writer is made once");
        let mut writer = self
            .builder
            .clone()
            .start_cycle(cycle)
            .from_writer(output)?;
        self.stages = StageName::ALL
            .iter()
            .map(|name| writer.stage(name.as_str()))
            .collect::<Result<_, _>>()?;
        self.writer = Some(writer);
        Ok(())
    }

    /// Writes the events of instruction `order` at `cycle`, and queues its next one.
    fn write_at(&mut self, cycle: i64, order: u64) -> Result<(), Error> {
        if self.writer.is_none() {
            self.start(cycle)?;
        }
        let writer = self.writer.as_mut().expect("made above");
        if cycle > writer.cycle() {
            writer.advance(cycle.abs_diff(writer.cycle()))?;
        }
        self.last_cycle = Some(cycle);
        let index = (order - self.first_order) as usize;
        let live = self.live[index]
            .as_mut()
            .expect("queued instructions are live");
        while let Some((at, event)) = live.placed.events.get(live.next) {
            if *at != cycle {
                break;
            }
            live.next += 1;
            match event {
                Event::Begin => {
                    let p = &live.placed;
                    let insn = writer.begin(p.seq, p.thread)?;
                    writer.label(insn, LabelKind::Name, &p.name)?;
                    writer.label(insn, LabelKind::Detail, &p.detail)?;
                    if let Some(handle) = &p.handle {
                        handle.set(Some(insn));
                    }
                    live.insn = Some(insn);
                }
                Event::Enter { lane, stage, notes } => {
                    let insn = live.insn.expect("`I` comes first");
                    writer.enter(insn, Lane::new(*lane), self.stages[stage.index()])?;
                    for note in notes {
                        writer.label(insn, LabelKind::StageNote, note)?;
                    }
                }
                Event::Leave { lane } => {
                    writer.leave(live.insn.expect("`I` comes first"), Lane::new(*lane))?;
                }
                Event::Depend(producer) => {
                    let insn = live.insn.expect("`I` comes first");
                    if let Some(producer) = producer.get().filter(|&p| p < insn) {
                        writer.depend(insn, producer, DepKind::WAKE_UP)?;
                    }
                }
                Event::Retire(rid) => {
                    writer.retire_as(live.insn.expect("`I` comes first"), *rid)?;
                }
                Event::Flush(rid) => {
                    writer.flush_as(live.insn.expect("`I` comes first"), *rid)?;
                }
            }
        }
        match live.placed.events.get(live.next) {
            Some(&(next, _)) => self.heap.push(Reverse((next, order))),
            None => {
                self.live[index] = None;
                self.live_count -= 1;
                while let Some(None) = self.live.front() {
                    self.live.pop_front();
                    self.first_order += 1;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_count_from_the_phase_and_say_when_a_tick_is_between_edges() {
        let clock = Clock {
            ticks_per_cycle: 500,
            phase: 0,
        };
        assert_eq!(clock.cycle(78_500), (157, true));
        assert_eq!(clock.cycle(305_001), (610, false));
        let shifted = Clock {
            ticks_per_cycle: 1000,
            phase: 500,
        };
        assert_eq!(shifted.cycle(1500), (1, true));
        assert_eq!(shifted.cycle(0), (-1, false));
    }
}
