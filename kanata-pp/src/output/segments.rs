//! The stage segments of a canonical trace as columns, one row per segment, in the order
//! [`Instructions`](crate::output::canonical::Instructions) gives them (op-id order, each
//! instruction's segments in the order of their `S`), without making an
//! [`Instruction`](crate::output::canonical::Instruction) of each instruction.
//!
//! A table of a whole trace wants every segment and nothing else of an instruction but its
//! thread; building the instructions first (their vectors, strings and hand-over) costs
//! more than reading the lines. [`SegmentReader`] reads the lines with the same
//! [`CanonicalReader`] and the same rules as `Instructions` (a line that `Instructions`
//! refuses is refused here with the same error), keeps the segments of the instructions in
//! flight in one ring, linked per instruction, and appends an instruction's segments to the
//! columns once it and every older one have ended. Memory is the columns plus the segments
//! in flight.

use std::collections::{HashMap, VecDeque};
use std::io::BufRead;

use crate::error::{Error, ErrorKind};
use crate::output::canonical::{quote, CanonicalReader, Command, Event, LabelKind};

/// No row: the end of a chain.
const NONE: u64 = u64::MAX;

/// The segments of a trace, one row per segment; every vector but [`open`](Self::open) and
/// [`notes`](Self::notes) has one entry per row. The columns are what an Arrow table of
/// them holds (a cycle, an id or a lane is 64 bits; an open end is a null), so that they can
/// be handed over without being converted: which rows are open, and which have notes, are
/// listed apart, since few rows are either.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SegmentColumns {
    /// The file id of the segment's instruction.
    pub id: Vec<u64>,
    /// Its thread.
    pub thread: Vec<i64>,
    /// The lane.
    pub lane: Vec<u64>,
    /// The stage: an index into [`stage_names`](Self::stage_names).
    pub stage: Vec<u32>,
    /// The stage names, in the order the rows first name them.
    pub stage_names: Vec<String>,
    /// Konata's cycle of the `S`.
    pub start: Vec<u64>,
    /// Konata's cycle of the end; 0 for a row in [`open`](Self::open).
    pub end: Vec<u64>,
    /// The rows whose stage is still open at the end of the file (no end), ascending.
    pub open: Vec<usize>,
    /// The rows that have notes, ascending, with their notes: the type-2 labels written
    /// while this was the stage the instruction entered most recently, a line break between
    /// two, `\n` escapes as written (as
    /// [`Segment::notes`](crate::output::canonical::Segment::notes)). Never empty.
    pub notes: Vec<(usize, String)>,
}

impl SegmentColumns {
    /// The number of rows.
    pub fn len(&self) -> usize {
        self.id.len()
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.id.is_empty()
    }

    /// The end of row `row`: `None` if its stage is still open at the end of the file.
    pub fn end_of(&self, row: usize) -> Option<u64> {
        match self.open.binary_search(&row) {
            Ok(_) => None,
            Err(_) => Some(self.end[row]),
        }
    }

    /// The notes of row `row` (empty without any).
    pub fn notes_of(&self, row: usize) -> &str {
        match self.notes.binary_search_by_key(&row, |(at, _)| *at) {
            Ok(at) => &self.notes[at].1,
            Err(_) => "",
        }
    }
}

/// A segment of an instruction in flight.
#[derive(Clone, Copy, Debug)]
struct Row {
    lane: u64,
    start: u64,
    /// [`NONE`] while open.
    end: u64,
    /// An index into the reader's stage names (first seen in the text).
    stage: u32,
    /// The instruction's previous and next segment (global row numbers), [`NONE`] at the
    /// ends.
    prev: u64,
    next: u64,
    /// Appended to the columns: the ring's front is cut up to the first row not given.
    given: bool,
}

/// An instruction not given to the columns yet.
#[derive(Clone, Copy, Debug)]
struct Pending {
    thread: i64,
    /// Its first and latest segments (global row numbers), [`NONE`] before its first `S`.
    first: u64,
    last: u64,
    ended: bool,
}

/// Reads canonical Kanata into [`SegmentColumns`] (see the [module](self) docs).
///
/// ```
/// use kanata_pp::output::segments::SegmentReader;
/// use kanata_writer::{LabelKind, Lane, Writer};
///
/// let mut w = Writer::new(Vec::new());
/// let (f, x) = (w.stage("F")?, w.stage("X")?);
/// let a = w.begin(10, 0)?;
/// let b = w.begin(11, 1)?;
/// w.enter(a, Lane::MAIN, f)?;
/// w.enter(b, Lane::MAIN, f)?;
/// w.advance(1)?;
/// w.enter(a, Lane::MAIN, x)?;
/// w.label(a, LabelKind::StageNote, "hit")?;
/// w.advance(2)?;
/// w.retire(a)?;
/// let text = w.finish()?.output;
///
/// let columns = SegmentReader::new(&text[..]).read_all()?;
/// assert_eq!(columns.id, [0, 0, 1]);
/// assert_eq!(columns.thread, [0, 0, 1]);
/// assert_eq!(columns.stage_names, ["F", "X"]);
/// assert_eq!(columns.end, [1, 3, 0]);
/// assert_eq!(columns.open, [2]); // b is in flight at the end
/// assert_eq!(columns.end_of(2), None);
/// assert_eq!(columns.notes_of(1), "hit");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SegmentReader<R> {
    reader: CanonicalReader<R>,
    rows: Rows,
}

/// What the lines read so far hold.
#[derive(Debug, Default)]
struct Rows {
    pending: VecDeque<Pending>,
    next_id: u64,
    /// The segments of the instructions in flight, from global row number `ring_base`: a
    /// vector whose given front is cut off now and then (indexing it is one subtraction).
    ring: Vec<Row>,
    ring_base: u64,
    /// How many rows at the front of `ring` are given.
    ring_given: usize,
    /// Notes by global row number: few rows have any.
    notes: HashMap<u64, String>,
    /// Stage names as first seen in the text, their [`short_key`]s, and their index.
    names: Vec<String>,
    keys: Vec<u128>,
    name_index: HashMap<String, u32>,
    /// The reader's stage index → the columns' (`u32::MAX`: not in a row yet).
    column_stage: Vec<u32>,
    columns: SegmentColumns,
}

impl<R: BufRead> SegmentReader<R> {
    /// A reader of the canonical text `input` (uncompressed).
    pub fn new(input: R) -> SegmentReader<R> {
        SegmentReader {
            reader: CanonicalReader::new(input),
            rows: Rows::default(),
        }
    }

    /// Reads the whole input: the segments of every instruction, those in flight at the end
    /// included (with `end` `None` for their open stages).
    ///
    /// # Errors
    /// The first error [`Instructions`](crate::output::canonical::Instructions) would give
    /// for this input: a line that is not canonical, or reading that fails.
    pub fn read_all(mut self) -> Result<SegmentColumns, Error> {
        let rows = &mut self.rows;
        self.reader.read_each(|event| {
            rows.apply(event)?;
            Ok(true)
        })?;
        for at in 0..rows.pending.len() {
            rows.pending[at].ended = true;
        }
        rows.give();
        Ok(std::mem::take(&mut rows.columns))
    }
}

impl Rows {
    /// The pending instruction `id` names, if it is live; else the error `Instructions`
    /// gives for `what` line `line`.
    #[inline(always)]
    fn live(&mut self, id: u64, line: u64, what: &str) -> Result<&mut Pending, Error> {
        let base = self.next_id - self.pending.len() as u64;
        let state = if id >= self.next_id {
            "which has not begun"
        } else if id < base {
            "which has ended"
        } else {
            let index = (id - base) as usize;
            if !self.pending[index].ended {
                return Ok(&mut self.pending[index]);
            }
            "which has ended"
        };
        Err(not_canonical(
            line,
            format!("{what} line names instruction {id}, {state}"),
        ))
    }

    fn row(&mut self, at: u64) -> &mut Row {
        &mut self.ring[(at - self.ring_base) as usize]
    }

    /// The open segment of `lane` among the segments of the instruction whose latest one is
    /// `last`: the lane's latest segment, if it has not ended.
    fn open_segment(&mut self, mut at: u64, lane: u64) -> Option<u64> {
        while at != NONE {
            let row = *self.row(at);
            if row.lane == lane {
                return (row.end == NONE).then_some(at);
            }
            at = row.prev;
        }
        None
    }

    fn stage_index(&mut self, name: &str) -> u32 {
        // Stage names are few and short: a look through their keys beats hashing each one
        // and comparing bytes.
        let key = short_key(name);
        if key != 0 {
            if let Some(at) = self.keys.iter().position(|&k| k == key) {
                return at as u32;
            }
        } else if let Some(&at) = self.name_index.get(name) {
            return at;
        }
        let at = self.names.len() as u32;
        self.names.push(name.to_owned());
        self.keys.push(key);
        self.name_index.insert(name.to_owned(), at);
        at
    }

    /// Whether stage `stage` is named `name`.
    #[inline]
    fn is_named(&self, stage: usize, name: &str) -> bool {
        match self.keys[stage] {
            0 => self.names[stage] == name,
            key => key == short_key(name),
        }
    }

    /// Applies one command.
    #[inline(always)]
    fn apply(&mut self, event: Event<'_>) -> Result<(), Error> {
        let (line, cycle) = (event.line, event.cycle);
        match event.command {
            Command::Start(_) | Command::Step(_) => {}
            Command::Insn { id, thread, .. } => {
                if id != self.next_id {
                    return Err(not_canonical(
                        line,
                        format!("an I line has id {id}, expected {}", self.next_id),
                    ));
                }
                self.pending.push_back(Pending {
                    thread,
                    first: NONE,
                    last: NONE,
                    ended: false,
                });
                self.next_id += 1;
            }
            Command::Label { id, kind, text } => {
                let last = self.live(id, line, "an L")?.last;
                if kind == LabelKind::StageNote {
                    if last == NONE {
                        return Err(not_canonical(
                            line,
                            format!("a note (L type 2) for instruction {id} before its first S"),
                        ));
                    }
                    let notes = self.notes.entry(last).or_default();
                    // Konata joins a stage's notes with a line break.
                    if !notes.is_empty() {
                        notes.push('\n');
                    }
                    notes.push_str(text);
                }
            }
            Command::StageStart { id, lane, name } => {
                let last = self.live(id, line, "an S")?.last;
                if let Some(open) = self.open_segment(last, lane) {
                    // The compact form: the S closes the lane's open stage.
                    self.row(open).end = cycle;
                }
                let stage = self.stage_index(name);
                let at = self.ring_base + self.ring.len() as u64;
                self.ring.push(Row {
                    lane,
                    start: cycle,
                    end: NONE,
                    stage,
                    prev: last,
                    next: NONE,
                    given: false,
                });
                if last != NONE {
                    self.row(last).next = at;
                }
                let p = self.live(id, line, "an S")?;
                if p.first == NONE {
                    p.first = at;
                }
                p.last = at;
            }
            Command::StageEnd { id, lane, name } => {
                let last = self.live(id, line, "an E")?.last;
                let Some(open) = self.open_segment(last, lane) else {
                    return Err(not_canonical(
                        line,
                        format!("an E line closes lane {lane} of instruction {id}, which has no open stage"),
                    ));
                };
                let stage = self.row(open).stage as usize;
                if !self.is_named(stage, name) {
                    return Err(not_canonical(
                        line,
                        format!(
                            "an E line closes `{}` in lane {lane} of instruction {id}, whose open stage is `{}`",
                            quote(name.as_bytes()),
                            quote(self.names[stage].as_bytes())
                        ),
                    ));
                }
                self.row(open).end = cycle;
            }
            Command::Retire { id, .. } => {
                let p = self.live(id, line, "an R")?;
                p.ended = true;
                let mut at = p.last;
                while at != NONE {
                    let row = self.row(at);
                    if row.end == NONE {
                        row.end = cycle;
                    }
                    at = row.prev;
                }
                self.give();
            }
            Command::Dep {
                consumer, producer, ..
            } => {
                self.live(consumer, line, "a W")?;
                if producer >= consumer {
                    return Err(not_canonical(
                        line,
                        format!("a W line's producer {producer} is not older than its consumer {consumer}"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Appends the segments of the instructions at the front that have ended, and drops the
    /// rows no instruction in flight holds.
    fn give(&mut self) {
        while let Some(p) = self.pending.front().copied() {
            if !p.ended {
                break;
            }
            self.pending.pop_front();
            let id = self.next_id - self.pending.len() as u64 - 1;
            let mut at = p.first;
            while at != NONE {
                let row = *self.row(at);
                let stage = match self.column_stage.get(row.stage as usize) {
                    Some(&stage) if stage != u32::MAX => stage,
                    _ => {
                        let stage = self.columns.stage_names.len() as u32;
                        self.columns
                            .stage_names
                            .push(self.names[row.stage as usize].clone());
                        if self.column_stage.len() <= row.stage as usize {
                            self.column_stage.resize(row.stage as usize + 1, u32::MAX);
                        }
                        self.column_stage[row.stage as usize] = stage;
                        stage
                    }
                };
                let c = &mut self.columns;
                if row.end == NONE {
                    c.open.push(c.id.len());
                }
                if !self.notes.is_empty() {
                    if let Some(notes) = self.notes.remove(&at) {
                        c.notes.push((c.id.len(), notes));
                    }
                }
                c.id.push(id);
                c.thread.push(p.thread);
                c.lane.push(row.lane);
                c.stage.push(stage);
                c.start.push(row.start);
                c.end.push(if row.end == NONE { 0 } else { row.end });
                self.row(at).given = true;
                at = row.next;
            }
        }
        while self.ring.get(self.ring_given).is_some_and(|row| row.given) {
            self.ring_given += 1;
        }
        // Cut when the given front is most of the vector: each row is moved about once.
        if self.ring_given > 1024 && self.ring_given * 2 > self.ring.len() {
            self.ring.drain(..self.ring_given);
            self.ring_base += self.ring_given as u64;
            self.ring_given = 0;
        }
    }
}

/// A name of at most 15 bytes as one number (its bytes and its length; never 0, since a
/// stage name is not empty), 0 for a longer one.
#[inline]
fn short_key(name: &str) -> u128 {
    let bytes = name.as_bytes();
    if bytes.len() > 15 {
        return 0;
    }
    // The length above the bytes: names of different lengths differ in that byte.
    bytes
        .iter()
        .fold(bytes.len() as u128, |key, &b| key << 8 | u128::from(b))
}

fn not_canonical(line: u64, what: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Input, format!("not canonical Kanata: {what}")).with_line(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::canonical::Instructions;

    /// The columns made from what `Instructions` gives.
    fn from_instructions(text: &[u8]) -> Result<SegmentColumns, Error> {
        let mut c = SegmentColumns::default();
        let mut names: Vec<String> = Vec::new();
        for insn in Instructions::new(text) {
            let insn = insn?;
            for s in &insn.stages {
                let stage = match names.iter().position(|n| *n == *s.name) {
                    Some(at) => at,
                    None => {
                        names.push(s.name.to_string());
                        names.len() - 1
                    }
                };
                c.id.push(insn.id);
                c.thread.push(insn.thread);
                c.lane.push(s.lane);
                c.stage.push(stage as u32);
                if s.end.is_none() {
                    c.open.push(c.id.len() - 1);
                }
                if !s.notes.is_empty() {
                    c.notes.push((c.id.len() - 1, s.notes.clone()));
                }
                c.start.push(s.start);
                c.end.push(s.end.unwrap_or(0));
            }
        }
        c.stage_names = names;
        Ok(c)
    }

    fn check(text: &[u8]) {
        let ours = SegmentReader::new(text).read_all();
        let theirs = from_instructions(text);
        match (ours, theirs) {
            (Ok(ours), Ok(theirs)) => assert_eq!(ours, theirs),
            (Err(ours), Err(theirs)) => assert_eq!(ours.to_string(), theirs.to_string()),
            (ours, theirs) => panic!("{ours:?} against {theirs:?}"),
        }
    }

    #[test]
    fn the_samples_read_as_their_instructions() {
        let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/../samples");
        let mut read = 0;
        for entry in std::fs::read_dir(samples).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "kanata") {
                check(&std::fs::read(&path).unwrap());
                read += 1;
            }
        }
        assert!(read > 0);
    }

    #[test]
    fn errors_are_those_of_instructions() {
        let head = "Kanata\t0004\nC=\t0\nI\t0\t0\t0\nS\t0\t0\tF\n";
        for tail in [
            "I\t2\t0\t0\n",                            // an id out of order
            "L\t0\t2\tn\nR\t0\t0\t0\nL\t0\t0\tlate\n", // after its R
            "I\t1\t0\t0\nL\t1\t2\tnote\n",             // a note before the first S
            "E\t0\t1\tF\n",                            // no open stage in lane 1
            "E\t0\t0\tX\n",                            // another stage open
            "I\t1\t0\t0\nW\t0\t1\t0\n",                // the producer is younger
            "S\t5\t0\tF\n",                            // not begun
            "R\t0\t0\t0\nC\t1\nS\t0\t0\tX\n",
        ] {
            let text = format!("{head}{tail}");
            assert!(
                SegmentReader::new(text.as_bytes()).read_all().is_err(),
                "{tail:?}"
            );
            check(text.as_bytes());
        }
        check(head.as_bytes());
    }

    #[test]
    fn generated_traces_read_as_their_instructions() {
        // Random but canonical: several lanes, notes, out-of-order ends, compact stages.
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut rand = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut seen = (false, false, false, false);
        for round in 0..200 {
            let mut w = kanata_writer::WriterBuilder::new()
                .compact(round % 2 == 0)
                .from_writer(Vec::new())
                .unwrap();
            let stages: Vec<_> = ["F", "D", "X", "stl", "W"]
                .iter()
                .map(|s| w.stage(s).unwrap())
                .collect();
            let mut live = Vec::new();
            for _ in 0..rand(300) {
                match rand(8) {
                    0 | 1 => live.push(w.begin(rand(1000), rand(3) as u32).unwrap()),
                    2 | 3 if !live.is_empty() => {
                        let i = live[rand(live.len() as u64) as usize];
                        let lane = kanata_writer::Lane::new(rand(3) as u32);
                        let _ = w.enter(i, lane, stages[rand(5) as usize]);
                    }
                    4 if !live.is_empty() => {
                        let i = live[rand(live.len() as u64) as usize];
                        let _ = w.label(i, kanata_writer::LabelKind::StageNote, "n\\nx");
                        let _ = w.leave(i, kanata_writer::Lane::new(rand(3) as u32));
                    }
                    5 if !live.is_empty() => {
                        let at = rand(live.len() as u64) as usize;
                        let i = live.swap_remove(at);
                        if rand(2) == 0 {
                            w.retire(i).unwrap();
                        } else {
                            w.flush(i).unwrap();
                        }
                    }
                    _ => w.advance(rand(3) + 1).unwrap(),
                }
            }
            let text = w.finish().unwrap().output;
            check(&text);
            let c = SegmentReader::new(&text[..]).read_all().unwrap();
            seen.0 |= !c.notes.is_empty();
            seen.1 |= !c.open.is_empty();
            seen.2 |= c.lane.iter().any(|&l| l > 0);
            seen.3 |= c.thread.iter().any(|&t| t > 0);
        }
        assert_eq!(
            seen,
            (true, true, true, true),
            "notes, open stages, lanes, threads"
        );
    }
}
