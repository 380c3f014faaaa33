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
use std::sync::mpsc;

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
    /// Stage names by their index ([`Interner`]): as first seen in the text.
    names: Vec<String>,
    /// The text of the latest note (single-threaded reading), which its [`Op`] points into.
    note: String,
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
        let mut interner = Interner::default();
        self.reader.read_each(|event| {
            rows.note.clear();
            if let Some(op) = op_of(event, &mut interner, &mut rows.names, &mut rows.note) {
                let note = std::mem::take(&mut rows.note);
                rows.apply(op, &note)?;
                rows.note = note;
            }
            Ok(true)
        })?;
        Ok(self.rows.finish())
    }

    /// [`read_all`](Self::read_all) on two threads: the lines are read and parsed on a thread
    /// of its own, which hands them over in small ops (what the segments need of a line: ids,
    /// lane, interned stage, time, line number), a few thousand at a time; this thread
    /// assembles the segments into the columns. Both halves take about as long, so on a
    /// machine with a core to spare this takes a little more than half the time. The rows and
    /// the errors are those of `read_all`: an error of the text reaches this thread after the
    /// lines before it, and an error found here stops the reading thread.
    ///
    /// # Errors
    /// As [`read_all`](Self::read_all), and when the thread cannot be started.
    pub fn read_all_on_two_threads(self) -> Result<SegmentColumns, Error>
    where
        R: Send,
    {
        let SegmentReader {
            mut reader,
            mut rows,
        } = self;
        let (to_rows, from_parser) = mpsc::sync_channel::<Result<Chunk, Error>>(CHUNKS_IN_FLIGHT);
        // Chunks come back to be filled again: the reading thread frees nothing it did not
        // allocate, and allocates little.
        let (to_parser, returned) = mpsc::channel::<Chunk>();
        std::thread::scope(|scope| {
            let parser = move || {
                let mut interner = Interner::default();
                let mut chunk = Chunk::default();
                let read = reader.read_each(|event| {
                    if let Some(op) =
                        op_of(event, &mut interner, &mut chunk.names, &mut chunk.texts)
                    {
                        chunk.ops.push(op);
                    }
                    if chunk.ops.len() < CHUNK_OPS {
                        return Ok(true);
                    }
                    let next = returned.try_recv().unwrap_or_default();
                    // An error there: the rows are not wanted any more.
                    Ok(to_rows
                        .send(Ok(std::mem::replace(&mut chunk, next)))
                        .is_ok())
                });
                let _ = to_rows.send(Ok(chunk));
                if let Err(error) = read {
                    let _ = to_rows.send(Err(error));
                }
            };
            std::thread::Builder::new()
                .name("kanata-segments".to_owned())
                .spawn_scoped(scope, parser)
                .map_err(|err| {
                    Error::new(ErrorKind::Io, format!("cannot start a thread: {err}"))
                })?;
            for message in from_parser.iter() {
                let mut chunk = message?;
                rows.names.append(&mut chunk.names);
                for op in chunk.ops.drain(..) {
                    rows.apply(op, &chunk.texts)?;
                }
                chunk.texts.clear();
                let _ = to_parser.send(chunk);
            }
            Ok(())
        })
        // Leaving the scope on an error drops the receiver first: the reading thread's next
        // hand-over fails and it ends.
        .map(|()| rows.finish())
    }
}

/// [`Op`]s handed over at a time by [`SegmentReader::read_all_on_two_threads`].
const CHUNK_OPS: usize = 8192;
/// Chunks in flight between its two threads.
const CHUNKS_IN_FLIGHT: usize = 4;

/// What the segments need of one line: ids, lane, the interned stage, time, line number.
#[derive(Clone, Copy, Debug)]
enum Op {
    Insn {
        id: u64,
        thread: i64,
        line: u64,
    },
    /// A type-0 or type-1 label (only whether its instruction is live matters).
    Label {
        id: u64,
        line: u64,
    },
    /// A note: its text is `from..to` of the texts that come with the op.
    Note {
        id: u64,
        line: u64,
        from: usize,
        to: usize,
    },
    Start {
        id: u64,
        lane: u64,
        stage: u32,
        line: u64,
        cycle: u64,
    },
    End {
        id: u64,
        lane: u64,
        stage: u32,
        line: u64,
        cycle: u64,
    },
    Retire {
        id: u64,
        line: u64,
        cycle: u64,
    },
    Dep {
        consumer: u64,
        producer: u64,
        line: u64,
    },
}

/// Ops handed over, with the texts of their notes and the stage names first seen in them.
#[derive(Debug, Default)]
struct Chunk {
    ops: Vec<Op>,
    texts: String,
    names: Vec<String>,
}

/// Stage names, numbered in the order first seen.
#[derive(Debug, Default)]
struct Interner {
    /// The [`short_key`] of each name (0: longer than 15 bytes, looked up in `long`).
    keys: Vec<u128>,
    long: HashMap<String, u32>,
}

impl Interner {
    /// The index of `name`; a new name is appended to `names`.
    #[inline]
    fn index(&mut self, name: &str, names: &mut Vec<String>) -> u32 {
        // Stage names are few and short: a look through their keys beats hashing each one
        // and comparing bytes.
        let key = short_key(name);
        if key != 0 {
            if let Some(at) = self.keys.iter().position(|&k| k == key) {
                return at as u32;
            }
        } else if let Some(&at) = self.long.get(name) {
            return at;
        }
        let at = self.keys.len() as u32;
        self.keys.push(key);
        if key == 0 {
            self.long.insert(name.to_owned(), at);
        }
        names.push(name.to_owned());
        at
    }
}

/// The op of a line, if it has one (`C=` and `C` lines have none: their time is in the
/// ops). A new stage name goes to `names`, a note's text to `texts`.
#[inline(always)]
fn op_of(
    event: Event<'_>,
    interner: &mut Interner,
    names: &mut Vec<String>,
    texts: &mut String,
) -> Option<Op> {
    let (line, cycle) = (event.line, event.cycle);
    Some(match event.command {
        Command::Start(_) | Command::Step(_) => return None,
        Command::Insn { id, thread, .. } => Op::Insn { id, thread, line },
        Command::Label { id, kind, text } => {
            if kind == LabelKind::StageNote {
                let from = texts.len();
                texts.push_str(text);
                Op::Note {
                    id,
                    line,
                    from,
                    to: texts.len(),
                }
            } else {
                Op::Label { id, line }
            }
        }
        Command::StageStart { id, lane, name } => Op::Start {
            id,
            lane,
            stage: interner.index(name, names),
            line,
            cycle,
        },
        Command::StageEnd { id, lane, name } => Op::End {
            id,
            lane,
            stage: interner.index(name, names),
            line,
            cycle,
        },
        Command::Retire { id, .. } => Op::Retire { id, line, cycle },
        Command::Dep {
            consumer, producer, ..
        } => Op::Dep {
            consumer,
            producer,
            line,
        },
    })
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

    /// Applies one op; `texts` holds the text of a note.
    #[inline(always)]
    fn apply(&mut self, op: Op, texts: &str) -> Result<(), Error> {
        match op {
            Op::Insn { id, thread, line } => {
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
            Op::Label { id, line } => {
                self.live(id, line, "an L")?;
            }
            Op::Note { id, line, from, to } => {
                let last = self.live(id, line, "an L")?.last;
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
                notes.push_str(texts.get(from..to).unwrap_or_default());
            }
            Op::Start {
                id,
                lane,
                stage,
                line,
                cycle,
            } => {
                let last = self.live(id, line, "an S")?.last;
                if let Some(open) = self.open_segment(last, lane) {
                    // The compact form: the S closes the lane's open stage.
                    self.row(open).end = cycle;
                }
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
            Op::End {
                id,
                lane,
                stage,
                line,
                cycle,
            } => {
                let last = self.live(id, line, "an E")?.last;
                let Some(open) = self.open_segment(last, lane) else {
                    return Err(not_canonical(
                        line,
                        format!("an E line closes lane {lane} of instruction {id}, which has no open stage"),
                    ));
                };
                let open_stage = self.row(open).stage;
                if open_stage != stage {
                    return Err(not_canonical(
                        line,
                        format!(
                            "an E line closes `{}` in lane {lane} of instruction {id}, whose open stage is `{}`",
                            quote(self.names[stage as usize].as_bytes()),
                            quote(self.names[open_stage as usize].as_bytes())
                        ),
                    ));
                }
                self.row(open).end = cycle;
            }
            Op::Retire { id, line, cycle } => {
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
            Op::Dep {
                consumer,
                producer,
                line,
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

    /// The columns, once the input has ended: the instructions still in flight are given.
    fn finish(&mut self) -> SegmentColumns {
        for at in 0..self.pending.len() {
            self.pending[at].ended = true;
        }
        self.give();
        std::mem::take(&mut self.columns)
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
        // Two threads, over a buffer small enough that lines cross its end: the same rows or
        // the same error as one.
        let small = std::io::BufReader::with_capacity(64, text);
        let threaded = SegmentReader::new(small).read_all_on_two_threads();
        let ours = SegmentReader::new(text).read_all();
        match (&ours, &threaded) {
            (Ok(ours), Ok(threaded)) => assert_eq!(ours, threaded),
            (Err(ours), Err(threaded)) => assert_eq!(ours.to_string(), threaded.to_string()),
            _ => panic!("{ours:?} against {threaded:?} on two threads"),
        }
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
