//! gem5's O3PipeView trace (and its dialects) converted to Kanata, drawn by Konata as Konata
//! draws the raw trace (`shared/spec/gem5-o3pipeview.md`, section 2).
//!
//! # What is converted
//!
//! Each record (`O3PipeView:fetch` … `O3PipeView:retire`) becomes one instruction built the
//! way Konata's gem5 loader builds it (`record`): stages `F Dc Rn Ds Is Cm` started at their
//! ticks (a tick of 0 means "not reached" and leaves the previous stage open; a tick before
//! the last one is normalized to it and noted in the detail label), `Mc` from MemDepUnit
//! `Completed mem` lines, a one-cycle `Rt` after a retirement, a flush for `retire:0`; the
//! left-pane label `<pc>: <disassembly>` (the whole disassembly, colons included); the detail
//! label with the fetch tick, micro-PC, retire and store ticks and the lines of the other
//! debug flags (`Rename`, `MemDepUnit`, `LSQUnit`, `RegFile`, user lines) that Konata shows;
//! those lines also become notes of the stage open when they happened. Thread ids come from
//! `O3PipeView:thread` or a `[tid:N]` line naming the instruction. The simulator id of each
//! instruction is its gem5 sequence number; file ids are dense (no empty rows for missing
//! sequence numbers). Retire ids are Konata's: serial over retired instructions, and for a
//! flushed one the dummy id Konata computes from the sequence numbers.
//!
//! Ticks become cycles with the clock period Konata detects (the smallest difference between
//! the distinct ticks of the first complete instructions, at the same moments Konata looks:
//! after line 101, then every 16,385 lines, and at the end) or `--ticks-per-cycle`. A tick
//! between two clock edges is rounded down and reported (rule G3), never silently.
//!
//! The residue of spec §2.7 remains: an `R` is written one cycle after the retire (or flush)
//! cycle so that `Rt` (and a flushed instruction's last stage) is drawn one cycle wide, and a
//! flushed instruction's other zero-length stages stay zero-length (the next box covers
//! their cell). With `--deps`, each instruction with a `Cm` gets a lane-1 stage `X` for the
//! cycle `Cm` starts, then a zero-length `x`, and the `W` arrows Konata derives from the
//! `Rename` lines: the arrows start and end where Konata draws them.
//!
//! # Dialects
//!
//! A line is a record if it contains `O3PipeView:`; text before it is a prefix (RTL
//! `$display` tracers), ignored. Spaces after the colons are allowed. The `:store:` field of
//! `retire` is optional (old traces). If the prefix of the first record is `<number>; `, the
//! trace is BOOM's event stream: one event per line in time order (`<fseq>;
//! O3PipeView:<stage>:<tick>`), grouped here by sequence number, with separate
//! `<fseq>; store-comp: <tick>` lines. An instruction is complete when it retires; the
//! instructions fetched before it that never retired were squashed (BOOM commits in order).
//! For a stage seen several times the last non-zero tick counts (a re-issue). Other lines of
//! a BOOM log are not gem5 debug lines and are ignored.
//!
//! # Streaming in bounded memory (spec §2.8)
//!
//! Records arrive in the order gem5 destroys instructions, not in sequence-number order, but
//! the writer only moves forward in time. Three stages keep memory proportional to the
//! reorder window, not to the file:
//!
//! 1. **Reorder window.** Complete records wait in the `window`, keyed by sequence number
//!    (a ring indexed by sequence number, a map for duplicates and outliers).
//!    When more than `--window` are waiting, the lowest are written, in order, as Konata's
//!    drain does. A record whose sequence number is below one already written comes too
//!    late: it is reported with its line and dropped (G1). Duplicate sequence numbers
//!    (several CPUs in one file) are reported and both kept (G2).
//! 2. **Events.** Writing an instruction means turning it into its list of events by cycle
//!    (`I` and labels at fetch, each `S` with its notes, `R`, the `--deps` lane) and handing
//!    it to the `order::Emitter`, which files every event under its cycle in a calendar (a
//!    ring of one bucket per cycle, a map for cycles beyond it): the order a merge of the
//!    lists by `(cycle, order written)` gives. Within a cycle, events come in the order
//!    instructions were written, and each instruction's own events in its order.
//! 3. **Watermark.** Events are released to the writer only below the watermark `W`: the
//!    smallest fetch cycle of the last instruction written, of the instructions still
//!    waiting and of the record being read. gem5 allocates sequence numbers at fetch, so
//!    fetch ticks grow with sequence numbers and no instruction to come can have an event
//!    before `W`. (An instruction that breaks this, so that its fetch falls before the
//!    last cycle already written, is reported and dropped: G1. Rows are in the order the
//!    `I` lines are written, fetch cycle then sequence number, which is sequence-number
//!    order whenever fetch ticks grow with them, as they do for one gem5 CPU.) The heap
//!    therefore holds only instructions in flight around `W`.
//!
//! Three threads share the work. A reading thread (`read`) splits the input into lines,
//! parses the record lines of the common form and, for a record whose lines are all of that
//! form, builds and packs it as this thread would (this thread takes it whole when nothing
//! else, such as a debug line naming it, has a say in it); this thread keeps the records,
//! the window and the calendar; the writer runs on a thread of its own (`replay`): the
//! emitter sends it its calls in batches, and it encodes (and compresses) while this thread
//! orders the next records. Records are reused once written, so reading allocates nothing
//! per record, and a record waits packed (`packed`) in the order records finish, because it
//! is written a whole window after it was read, when it is no longer cached.
//!
//! Memory is the window's: under 1 KB per waiting record (2 KB with `Rename` lines), some
//! 30 MB at the default 16,384 (with the batches in flight) whatever the length of the trace.
//!
//! Other debug lines are kept per sequence number until that record consumes them, and
//! dropped once the sequence number is written; their text goes into buffers that are
//! reused, not into an allocation per line. At the end, everything left is written; a
//! record without a `retire` line is reported and left open, not invented (G4).

mod exlog;
mod order;
mod packed;
mod read;
mod record;
mod replay;
mod window;

use std::cell::Cell;
use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{Read, Write};
use std::rc::Rc;

use bstr::ByteSlice;
use kanata_writer::{Finished, WriterBuilder};

use self::exlog::ExLogs;
use self::order::{Clock, Emitter, Event, Handle, Placed};
use self::packed::{Arena, PackedRef};
use self::read::FastLine;
use self::record::{Fate, Record, StageName};
use self::window::{Key, Window};
use crate::convert::converter::Converter;
use crate::diag::{Diagnostics, Rule};
use crate::error::{Error, ErrorKind};
use crate::input::progress::Progress;

/// How a gem5 trace is read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Gem5Options {
    /// How many instructions a record may come late (out of sequence-number order) and still
    /// be placed; at least Konata's 16,384.
    pub window: usize,
    /// Ticks per cycle; `None` detects it from the trace.
    pub ticks_per_cycle: Option<u64>,
    /// Draw dependency arrows from `Rename` debug lines.
    pub deps: bool,
}

impl Default for Gem5Options {
    fn default() -> Gem5Options {
        Gem5Options {
            window: 16_384,
            ticks_per_cycle: None,
            deps: false,
        }
    }
}

/// Konata gives up on a file without a record in its first 20,000 lines.
const GIVING_UP_LINE: u64 = 20_000;
/// Konata detects the clock from at least this many distinct ticks (unless at the end).
const DETECTION_TICKS: usize = 1024;
/// Konata's first drain is after this line, the next ones every `DRAIN_EVERY` lines.
const FIRST_DRAIN_LINE: u64 = 101;
const DRAIN_EVERY: u64 = 16_385;

/// The marker of a record line.
const MARKER: &[u8] = b"O3PipeView:";

/// How the records of the file are laid out, decided by the first one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// No record seen yet.
    Undecided,
    /// gem5's contiguous records (with or without a prefix).
    Records,
    /// BOOM's event stream, `<fseq>; O3PipeView:<stage>:<tick>`.
    Events,
}

/// An instruction of a BOOM event stream, gathered event by event.
#[derive(Debug)]
struct BoomInsn {
    seq: u64,
    line: u64,
    fetch_tick: u64,
    address: Box<str>,
    upc: Box<str>,
    disassembly: Box<str>,
    /// decode, rename, dispatch, issue, complete: the last non-zero tick of each (0: none).
    stages: [u64; 5],
    /// The tick of a `store-comp` line.
    store: Option<u64>,
}

const BOOM_STAGES: [(&str, StageName); 5] = [
    ("decode", StageName::Dc),
    ("rename", StageName::Rn),
    ("dispatch", StageName::Ds),
    ("issue", StageName::Is),
    ("complete", StageName::Cm),
];

impl BoomInsn {
    /// The record gem5 would have printed: retired at `tick` (0: squashed), or still open.
    fn into_record(self, retire: Option<(u64, Vec<u64>)>) -> Record {
        let mut record = Record::fetch(
            self.seq,
            self.line,
            self.fetch_tick,
            &self.address,
            &self.upc,
            &self.disassembly,
        );
        for ((command, name), tick) in BOOM_STAGES.iter().zip(self.stages) {
            record.stage(command, *name, tick, None);
        }
        if let Some((tick, mut stores)) = retire {
            if let Some(store) = self.store {
                stores = vec![store];
            }
            record.retire(tick, &stores, None);
        }
        record
    }
}

/// An instruction waiting in the reorder window.
#[derive(Debug)]
enum Waiting {
    /// A finished record (complete, or truncated and left open). Boxed, so that the map
    /// moves pointers, not records.
    Record(Box<Record>),
    /// A BOOM instruction still in flight.
    Boom(Box<BoomInsn>),
    /// A finished record, packed (see `packed`): most records, once the clock is known.
    Packed(PackedRef),
}

impl Waiting {
    fn complete(&self) -> bool {
        matches!(self, Waiting::Record(_) | Waiting::Packed(_))
    }
}

/// Konata's retire ids: serial over retired instructions; a flushed one gets
/// `last retire id + its sequence number - that of the last retired one`.
#[derive(Clone, Copy, Debug)]
struct RetireIds {
    last_rid: i64,
    last_retired_seq: i128,
}

impl RetireIds {
    fn retire(&mut self, seq: u64) -> i64 {
        self.last_rid += 1;
        self.last_retired_seq = i128::from(seq);
        self.last_rid
    }

    fn flush(&self, seq: u64) -> i64 {
        let rid = i128::from(self.last_rid) + i128::from(seq) - self.last_retired_seq;
        i64::try_from(rid).unwrap_or(i64::MAX)
    }
}

/// The last instruction written that wrote a register key (for `--deps`).
struct Producer {
    handle: Handle,
    /// Its `Cm` cycle (Konata's `prodCycle`).
    complete: Option<i64>,
}

/// FNV-1a for register keys: a few bytes each, looked up for every operand, where the
/// default hasher's resistance to chosen collisions only costs time.
#[derive(Clone, Copy, Debug)]
struct KeyHasher(u64);

impl Default for KeyHasher {
    fn default() -> KeyHasher {
        KeyHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// The most memory each buffer needed, for the bounded-memory tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HighWater {
    /// Instructions waiting in the reorder window.
    pub(crate) waiting: usize,
    /// Instructions written but not finished (in the event heap).
    pub(crate) in_flight: usize,
    /// Debug lines kept.
    pub(crate) ex_lines: usize,
}

/// Reads a gem5 O3PipeView trace and writes it as Kanata.
pub(crate) struct Gem5Converter<W: Write + Send + 'static> {
    options: Gem5Options,
    emitter: Emitter<W>,
    mode: Mode,
    /// The record being read (gem5 records).
    current: Option<Box<Record>>,
    /// Lines of a record whose `fetch` line was malformed are skipped.
    skipping: bool,
    ex: ExLogs,
    /// The reorder window, by (sequence number, duplicate number).
    waiting: Window<Waiting>,
    /// BOOM instructions still in flight.
    in_flight: BTreeSet<(u64, u32)>,
    clock: Option<Clock>,
    /// The highest sequence number written, and the fetch tick of the last one written.
    written: Option<(u64, u64)>,
    retire_ids: Option<RetireIds>,
    producers: HashMap<String, Producer, BuildHasherDefault<KeyHasher>>,
    high_water: HighWater,
    marker: memchr::memmem::Finder<'static>,
    /// The events of the instruction being written (kept for its buffer).
    events: Vec<(i64, Event)>,
    /// The packed records waiting, and the buffer a record is packed in.
    packed: Arena,
    packing: Vec<u8>,
}

impl<W: Write + Send + 'static> Gem5Converter<W> {
    pub(crate) fn new(
        builder: WriterBuilder,
        output: W,
        options: Gem5Options,
    ) -> Result<Gem5Converter<W>, Error> {
        if options.ticks_per_cycle == Some(0) {
            return Err(Error::new(
                ErrorKind::Usage,
                "--ticks-per-cycle must be at least 1",
            ));
        }
        Ok(Gem5Converter {
            waiting: Window::new(options.window.saturating_mul(2).saturating_add(1024)),
            options,
            emitter: Emitter::new(builder, output),
            mode: Mode::Undecided,
            current: None,
            skipping: false,
            ex: ExLogs::default(),
            in_flight: BTreeSet::new(),
            clock: None,
            written: None,
            retire_ids: None,
            producers: HashMap::default(),
            high_water: HighWater::default(),
            marker: memchr::memmem::Finder::new(MARKER),
            events: Vec::new(),
            packed: Arena::default(),
            packing: Vec::new(),
        })
    }

    /// The most memory each buffer needed so far.
    #[cfg(test)]
    pub(crate) fn high_water(&self) -> HighWater {
        HighWater {
            in_flight: self.emitter.high_water,
            ..self.high_water
        }
    }

    /// What the reading thread gives next: a record it packed, offered before its lines
    /// (returns whether it was taken; if not, its lines follow), or a line.
    fn next(&mut self, next: read::Next<'_>, diag: &mut Diagnostics) -> Result<bool, Error> {
        match next {
            read::Next::Record(record) => self.take_prepacked(&record, diag),
            read::Next::Line(line) => self.one_line(line, diag).map(|()| true),
        }
    }

    /// A record the reading thread built and packed from lines in the common form, taken
    /// as it is when these lines would have built it here and it would be packed: once the
    /// clock is known, no record open, no debug lines kept for its sequence number, the
    /// packed records within their budget. Returns false, having done nothing, otherwise.
    fn take_prepacked(
        &mut self,
        record: &read::PackedLines<'_>,
        diag: &mut Diagnostics,
    ) -> Result<bool, Error> {
        let (seq, lineno) = (record.seq, record.number);
        if self.mode != Mode::Records
            || self.current.is_some()
            || self.ex.holds(seq)
            || !self.may_pack()
        {
            return Ok(false);
        }
        self.skipping = false;
        if !self.admit(seq, lineno, diag) {
            return Ok(true);
        }
        let key = self.new_key(seq, lineno, diag);
        let at = self.packed.push(record.bytes);
        self.wait(key, record.fetch_tick, Waiting::Packed(at));
        self.settle(diag)?;
        Ok(true)
    }

    /// A line the reading thread has split and, if it is a record line in the common form,
    /// parsed (nearly every line of a gem5 trace is). Anything unusual takes the general
    /// path, which decides the same way for the lines the fast one accepts.
    fn one_line(&mut self, line: read::Line<'_>, diag: &mut Diagnostics) -> Result<(), Error> {
        let lineno = line.number;
        if self.mode == Mode::Records {
            let done = match line.parsed {
                Some(FastLine::Fetch {
                    tick,
                    seq,
                    address,
                    upc,
                    disassembly,
                }) => {
                    // UTF-8, as the reading thread found: checked again (no unsafe code),
                    // once for the three fields and what is between them.
                    let text = line
                        .block
                        .get(address.start..disassembly.end)
                        .and_then(|bytes| std::str::from_utf8(bytes).ok());
                    let field = |range: read::Range| {
                        let start = range.start.checked_sub(address.start)?;
                        text?.get(start..start + (range.end - range.start))
                    };
                    match (field(address), field(upc), field(disassembly)) {
                        (Some(address), Some(upc), Some(disassembly)) => {
                            let fetch = FetchLine {
                                tick,
                                address,
                                upc,
                                seq,
                                disassembly,
                            };
                            self.start_record(&fetch, lineno, diag)?;
                            true
                        }
                        _ => false,
                    }
                }
                Some(FastLine::Stage {
                    command,
                    name,
                    tick,
                }) => self.fast_stage(command, name, tick),
                Some(FastLine::Retire { tick, store }) => self.fast_retire(tick, store, diag)?,
                _ => false,
            };
            if done {
                return self.after_line(lineno, diag);
            }
        }
        self.general_line(without_bom(line.raw, lineno), lineno, diag)
    }

    /// Any line, read from its text (after a byte order mark on line 1).
    fn general_line(
        &mut self,
        raw: &[u8],
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let text = raw.to_str_lossy();
        if let Some(at) = self.marker.find(raw) {
            // The marker is ASCII, so these are character boundaries of the lossy text too
            // only when the text is valid; find it again in the text to be safe.
            let at = if text.len() == raw.len() {
                at
            } else {
                text.find("O3PipeView:").unwrap_or(0)
            };
            let (prefix, body) = (&text[..at], &text[at + MARKER.len()..]);
            let boom = boom_prefix(prefix);
            if self.mode == Mode::Undecided {
                self.mode = if boom.is_some() {
                    Mode::Events
                } else {
                    Mode::Records
                };
            }
            match (self.mode, boom) {
                (Mode::Events, Some(seq)) => self.boom_event(seq, body, lineno, diag)?,
                (Mode::Events, None) => diag.report(Rule::G5, lineno, || {
                    "an O3PipeView line without the `<sequence number>;` prefix of the BOOM \
                     event stream: dropped"
                        .to_owned()
                }),
                _ => self.record_line(body, lineno, diag)?,
            }
        } else if self.mode == Mode::Events {
            if let Some((seq, tick)) = store_completion(&text) {
                self.store_completion(seq, tick, lineno, diag);
            }
        } else {
            if self.mode == Mode::Undecided && lineno > GIVING_UP_LINE {
                return Err(Error::at_line(
                    lineno,
                    format!(
                        "no O3PipeView record in the first {GIVING_UP_LINE} lines: not a gem5 \
                         O3PipeView trace"
                    ),
                ));
            }
            let written = self.written.map(|(seq, _)| seq);
            self.ex.line(&text, written);
            self.high_water.ex_lines = self.high_water.ex_lines.max(self.ex.kept());
        }
        self.after_line(lineno, diag)
    }

    /// Konata's clock detection runs after fixed line numbers until it finds the clock.
    fn after_line(&mut self, lineno: u64, diag: &mut Diagnostics) -> Result<(), Error> {
        if self.mode != Mode::Undecided
            && self.clock.is_none()
            && lineno >= FIRST_DRAIN_LINE
            && (lineno - FIRST_DRAIN_LINE) % DRAIN_EVERY == 0
            && self.detect(false)
        {
            self.settle(diag)?;
        }
        Ok(())
    }

    // ----- gem5 records -----

    fn record_line(
        &mut self,
        body: &str,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let mut fields = body.split(':');
        let command = fields.next().unwrap_or("").trim();
        if command == "fetch" {
            return self.fetch_line(body, lineno, diag);
        }
        let Some(current) = self.current.as_mut() else {
            if !self.skipping {
                diag.report(Rule::G5, lineno, || {
                    format!("`O3PipeView:{command}` with no `fetch` line before it: dropped")
                });
            }
            return Ok(());
        };
        let Some(tick) = fields.next().and_then(number) else {
            diag.report(Rule::G5, lineno, || {
                format!("`O3PipeView:{command}` without a tick: dropped")
            });
            return Ok(());
        };
        match command {
            "retire" => {
                let stores = store_ticks(fields);
                let consumed = current.retire(tick, &stores, self.ex.get_mut(current.seq));
                self.ex.consumed(consumed);
                let record = self.current.take().expect("matched above");
                self.finished(Waiting::Record(record), diag)?;
            }
            "thread" => match fields.next().and_then(number).map(u32::try_from) {
                Some(Ok(tid)) => current.tid = Some(tid),
                _ => diag.report(Rule::G5, lineno, || {
                    "`O3PipeView:thread` without a thread id: dropped".to_owned()
                }),
            },
            _ => match StageName::of_command(command).filter(|&s| s != StageName::F) {
                Some(name) => {
                    let consumed = current.stage(command, name, tick, self.ex.get_mut(current.seq));
                    self.ex.consumed(consumed);
                }
                None => diag.report(Rule::G5, lineno, || {
                    format!("unknown line `O3PipeView:{command}`: dropped")
                }),
            },
        }
        Ok(())
    }

    /// A stage line of the common form; `false` (nothing done) without a record open.
    fn fast_stage(&mut self, command: &'static str, name: StageName, tick: u64) -> bool {
        let Some(current) = self.current.as_mut() else {
            return false;
        };
        let consumed = current.stage(command, name, tick, self.ex.get_mut(current.seq));
        self.ex.consumed(consumed);
        true
    }

    /// A retire line of the common form; `false` (nothing done) without a record open.
    fn fast_retire(
        &mut self,
        tick: u64,
        store: Option<u64>,
        diag: &mut Diagnostics,
    ) -> Result<bool, Error> {
        let Some(current) = self.current.as_mut() else {
            return Ok(false);
        };
        let consumed = current.retire(tick, store.as_slice(), self.ex.get_mut(current.seq));
        self.ex.consumed(consumed);
        let record = self.current.take().expect("matched above");
        self.finished(Waiting::Record(record), diag)?;
        Ok(true)
    }

    fn fetch_line(&mut self, body: &str, lineno: u64, diag: &mut Diagnostics) -> Result<(), Error> {
        if let Some(open) = self.current.take() {
            report_truncated(diag, &open, "before the next record");
            self.finished(Waiting::Record(open), diag)?;
        }
        let Some(fetch) = FetchLine::parse(body) else {
            diag.report(Rule::G5, lineno, || {
                "`O3PipeView:fetch` without a tick or sequence number: record dropped".to_owned()
            });
            self.skipping = true;
            return Ok(());
        };
        self.start_record(&fetch, lineno, diag)
    }

    /// A well-formed `fetch` line: the record before it ends, a new one starts.
    fn start_record(
        &mut self,
        fetch: &FetchLine<'_>,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        if let Some(open) = self.current.take() {
            report_truncated(diag, &open, "before the next record");
            self.finished(Waiting::Record(open), diag)?;
        }
        self.skipping = false;
        self.fix_clock(fetch.tick);
        let mut record = self.spare_record();
        record.refill(
            fetch.seq,
            lineno,
            fetch.tick,
            fetch.address,
            fetch.upc,
            fetch.disassembly,
        );
        self.current = Some(record);
        Ok(())
    }

    // ----- BOOM event stream -----

    fn boom_event(
        &mut self,
        seq: u64,
        body: &str,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let mut fields = body.split(':');
        let command = fields.next().unwrap_or("").trim();
        if command == "fetch" {
            let Some(fetch) = FetchLine::parse(body) else {
                diag.report(Rule::G5, lineno, || {
                    "`O3PipeView:fetch` without a tick: dropped".to_owned()
                });
                return Ok(());
            };
            if let Some((written, _)) = self.written.filter(|&(w, _)| seq < w) {
                diag.report(Rule::G1, lineno, || {
                    format!(
                        "instruction {seq} fetched after instruction {written} was written: dropped"
                    )
                });
                return Ok(());
            }
            self.fix_clock(fetch.tick);
            let key = self.new_key(seq, lineno, diag);
            self.in_flight.insert(key);
            self.wait(
                key,
                fetch.tick,
                Waiting::Boom(Box::new(BoomInsn {
                    seq,
                    line: lineno,
                    fetch_tick: fetch.tick,
                    address: fetch.address.into(),
                    upc: fetch.upc.into(),
                    disassembly: fetch.disassembly.into(),
                    stages: [0; 5],
                    store: None,
                })),
            );
            return self.settle(diag);
        }
        let Some(tick) = fields.next().and_then(number) else {
            diag.report(Rule::G5, lineno, || {
                format!("`O3PipeView:{command}` without a tick: dropped")
            });
            return Ok(());
        };
        let Some(key) = self.last_key(seq) else {
            self.orphan(seq, command, lineno, diag);
            return Ok(());
        };
        let Some(Waiting::Boom(insn)) = self.waiting.get_mut(key) else {
            diag.report(Rule::G5, lineno, || {
                format!("`O3PipeView:{command}` of instruction {seq} after its retirement: dropped")
            });
            return Ok(());
        };
        if let Some(i) = BOOM_STAGES.iter().position(|(c, _)| *c == command) {
            if tick != 0 {
                insn.stages[i] = tick;
            }
            return Ok(());
        }
        if command != "retire" {
            diag.report(Rule::G5, lineno, || {
                format!("unknown line `O3PipeView:{command}`: dropped")
            });
            return Ok(());
        }
        let stores = store_ticks(fields);
        self.boom_end(key, Some((tick, stores)));
        // BOOM commits in order: what was fetched before and never retired was squashed.
        let squashed: Vec<(u64, u32)> = self.in_flight.range(..(seq, 0)).copied().collect();
        for key in squashed {
            self.boom_end(key, Some((0, Vec::new())));
        }
        self.settle(diag)
    }

    /// Ends a BOOM instruction: retired, squashed (tick 0) or left open (`None`).
    fn boom_end(&mut self, key: (u64, u32), retire: Option<(u64, Vec<u64>)>) {
        self.in_flight.remove(&key);
        if let Some(waiting) = self.waiting.get_mut(key) {
            if let Waiting::Boom(insn) = waiting {
                let insn = std::mem::replace(
                    insn.as_mut(),
                    BoomInsn {
                        seq: 0,
                        line: 0,
                        fetch_tick: 0,
                        address: "".into(),
                        upc: "".into(),
                        disassembly: "".into(),
                        stages: [0; 5],
                        store: None,
                    },
                );
                *waiting = Waiting::Record(Box::new(insn.into_record(retire)));
            }
        }
    }

    fn store_completion(&mut self, seq: u64, tick: u64, lineno: u64, diag: &mut Diagnostics) {
        match self.last_key(seq).and_then(|key| self.waiting.get_mut(key)) {
            Some(Waiting::Record(record)) => record.stores.set(&[tick]),
            Some(Waiting::Boom(insn)) => insn.store = Some(tick),
            // Store completions come only in BOOM's event stream, and records are packed
            // only in gem5's record form: never met here.
            Some(Waiting::Packed(_)) | None => self.orphan(seq, "store-comp", lineno, diag),
        }
    }

    /// A line for an instruction that is not waiting.
    fn orphan(&self, seq: u64, command: &str, lineno: u64, diag: &mut Diagnostics) {
        match self.written {
            Some((written, _)) if seq <= written => diag.report(Rule::G1, lineno, || {
                format!(
                    "`{command}` of instruction {seq} after instruction {written} was written: \
                     dropped"
                )
            }),
            _ => diag.report(Rule::G5, lineno, || {
                format!("`{command}` of instruction {seq}, never fetched: dropped")
            }),
        }
    }

    // ----- the reorder window -----

    /// The key of a new instruction `seq`, reporting a duplicate.
    fn new_key(&mut self, seq: u64, line: u64, diag: &mut Diagnostics) -> (u64, u32) {
        let duplicate = match self.last_key(seq) {
            Some((_, n)) => Some(n + 1),
            None => self.written.filter(|&(w, _)| w == seq).map(|_| 0),
        };
        if duplicate.is_some() {
            diag.report(Rule::G2, line, || {
                format!(
                    "sequence number {seq} used again (several CPUs in one trace?): kept as \
                     another instruction"
                )
            });
        }
        (seq, duplicate.unwrap_or(0))
    }

    fn last_key(&self, seq: u64) -> Option<Key> {
        self.waiting.last_key(seq)
    }

    fn wait(&mut self, key: Key, fetch_tick: u64, waiting: Waiting) {
        self.waiting.insert(key, fetch_tick, waiting);
        self.high_water.waiting = self.high_water.waiting.max(self.waiting.len());
    }

    /// A gem5 record has ended (retired, flushed or truncated).
    fn finished(&mut self, waiting: Waiting, diag: &mut Diagnostics) -> Result<(), Error> {
        let Waiting::Record(record) = &waiting else {
            unreachable!("gem5 records only");
        };
        let (seq, line) = (record.seq, record.line);
        if !self.admit(seq, line, diag) {
            return Ok(());
        }
        let key = self.new_key(seq, line, diag);
        let fetch_tick = record.fetch_tick;
        let waiting = match waiting {
            Waiting::Record(record) if self.may_pack() => {
                self.packing.clear();
                if record.pack(&mut self.packing) {
                    let at = self.packed.push(&self.packing);
                    self.emitter.recycle(record);
                    Waiting::Packed(at)
                } else {
                    Waiting::Record(record)
                }
            }
            other => other,
        };
        self.wait(key, fetch_tick, waiting);
        self.settle(diag)
    }

    /// Whether a finished record `seq` may still be placed: one below an instruction already
    /// written came too late, and is reported and dropped (G1).
    fn admit(&self, seq: u64, line: u64, diag: &mut Diagnostics) -> bool {
        let Some((written, _)) = self.written.filter(|&(w, _)| seq < w) else {
            return true;
        };
        let window = self.options.window;
        diag.report(Rule::G1, line, || {
            format!(
                "instruction {seq} came after instruction {written} was written (more than \
                 --window {window} instructions late): dropped"
            )
        });
        false
    }

    /// Whether a finished record waits packed: once the clock is known (its detection reads
    /// the waiting records), and while the packed records' chunks take at most four times
    /// what the window's records take packed (some 600 bytes a record).
    fn may_pack(&self) -> bool {
        let budget = self.options.window.saturating_mul(600).max(1 << 20);
        self.clock.is_some() && !self.packed.holds_more_than(budget)
    }

    /// Writes what the reorder window no longer needs to hold, then releases the events
    /// below the watermark.
    fn settle(&mut self, diag: &mut Diagnostics) -> Result<(), Error> {
        if self.clock.is_none() {
            // Konata waits for 1024 distinct ticks; a full window cannot wait any longer.
            if self.waiting.len() <= self.options.window || !self.detect(true) {
                return Ok(());
            }
        }
        self.drain(false, diag)
    }

    /// Writes the lowest waiting instructions while more than the window wait (all of them
    /// when `all`).
    fn drain(&mut self, all: bool, diag: &mut Diagnostics) -> Result<(), Error> {
        let mut wrote = false;
        while all || self.waiting.len() > self.options.window {
            let Some(first) = self.waiting.first_key() else {
                break;
            };
            if !all && !self.waiting.get(first).is_some_and(Waiting::complete) {
                break;
            }
            let Some((key, waiting)) = self.waiting.pop_first() else {
                break;
            };
            if !self.in_flight.is_empty() {
                self.in_flight.remove(&key);
            }
            let record = match waiting {
                Waiting::Record(record) => record,
                Waiting::Packed(at) => self.unpack(at),
                Waiting::Boom(insn) => {
                    let record = Box::new(insn.into_record(None));
                    report_truncated(diag, &record, "at the end of the input");
                    record
                }
            };
            self.write(record, diag);
            wrote = true;
        }
        if wrote {
            let watermark = if all { None } else { Some(self.watermark()) };
            self.emitter.release(watermark)?;
        }
        Ok(())
    }

    /// A record to fill: one written already, or a new one.
    fn spare_record(&mut self) -> Box<Record> {
        self.emitter
            .spare()
            .unwrap_or_else(|| Box::new(Record::empty()))
    }

    /// A packed record back in a `Record`.
    fn unpack(&mut self, at: PackedRef) -> Box<Record> {
        let mut record = self.spare_record();
        record.unpack(self.packed.get(at));
        self.packed.release(at);
        record
    }

    /// The cycle below which no instruction to come has an event (see the module docs).
    fn watermark(&mut self) -> i64 {
        let Some(clock) = self.clock else {
            return i64::MIN;
        };
        let ticks = [
            self.written.map(|(_, fetch)| fetch),
            self.waiting.min_fetch(),
            self.current.as_ref().map(|r| r.fetch_tick),
        ];
        ticks
            .into_iter()
            .flatten()
            .map(|tick| clock.cycle(tick).0)
            .min()
            .unwrap_or(i64::MIN)
    }

    // ----- cycles -----

    /// `--ticks-per-cycle`: the clock is known from the first fetch.
    fn fix_clock(&mut self, fetch_tick: u64) {
        if let (None, Some(ticks_per_cycle)) = (self.clock, self.options.ticks_per_cycle) {
            self.clock = Some(Clock::new(ticks_per_cycle, fetch_tick % ticks_per_cycle));
        }
    }

    /// Konata's clock detection over the complete instructions in sequence-number order up
    /// to the first incomplete one: the smallest difference between distinct ticks, counted
    /// from the smallest tick. Needs 1024 distinct ticks unless `force`.
    fn detect(&mut self, force: bool) -> bool {
        if self.clock.is_some() {
            return true;
        }
        let stop = self.current.as_ref().map(|r| r.seq);
        let mut ticks = BTreeSet::new();
        for ((seq, _), waiting) in self.waiting.in_order() {
            if stop.is_some_and(|s| seq >= s) {
                break;
            }
            match waiting {
                Waiting::Record(record) if record.fate != Fate::Open => record.ticks(&mut ticks),
                _ => break,
            }
        }
        if !force && ticks.len() < DETECTION_TICKS {
            return false;
        }
        self.clock = clock_of(&ticks);
        self.clock.is_some()
    }

    /// At the end: Konata's forced detection, else every tick there is, else 1.
    fn detect_at_end(&mut self, diag: &mut Diagnostics) {
        if self.detect(true) {
            return;
        }
        let mut ticks = BTreeSet::new();
        for (_, waiting) in self.waiting.in_order() {
            match waiting {
                Waiting::Record(record) => record.ticks(&mut ticks),
                Waiting::Packed(at) => {
                    let mut record = Record::empty();
                    record.unpack(self.packed.get(*at));
                    record.ticks(&mut ticks);
                }
                Waiting::Boom(insn) => {
                    ticks.insert(insn.fetch_tick);
                    ticks.extend(insn.stages.iter().copied().filter(|&t| t != 0));
                }
            }
        }
        self.clock = clock_of(&ticks);
        if self.clock.is_none() {
            diag.report(Rule::G7, 0, || {
                "fewer than two distinct ticks: ticks per cycle not detected, 1 assumed \
                 (--ticks-per-cycle)"
                    .to_owned()
            });
            self.clock = Some(Clock::new(1, 0));
        }
    }

    // ----- writing -----

    /// Turns a record into its events and hands it to the emitter.
    fn write(&mut self, mut record: Box<Record>, diag: &mut Diagnostics) {
        let clock = self
            .clock
            .expect("the clock is known before anything is written");
        let seq = record.seq;
        let written = self.written.map_or(seq, |(w, _)| w.max(seq));
        self.written = Some((written, record.fetch_tick));
        let ex_tid = self.ex.take_through(seq);
        let thread = record.tid.or(ex_tid).unwrap_or(0);

        let mut inexact = None;
        let mut cycle = |tick: u64| {
            let (cycle, exact) = clock.cycle(tick);
            if !exact && inexact.is_none() {
                inexact = Some((tick, cycle));
            }
            cycle
        };
        let fetched = cycle(record.fetch_tick);
        if let Some(last) = self.emitter.last_cycle().filter(|&last| fetched < last) {
            diag.report(Rule::G1, record.line, || {
                format!(
                    "instruction {seq} was fetched in cycle {fetched}, before cycle {last} \
                     already written (fetch ticks should grow with sequence numbers): dropped"
                )
            });
            self.emitter.recycle(record);
            return;
        }

        // Each instruction's events in its order; the emitter keeps that order within a
        // cycle, as a stable sort by cycle would.
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        events.push((fetched, Event::Begin));
        let mut last_stage: Option<(i64, i64)> = None;
        let mut retire_tick = None;
        for (index, stage) in record.stages.as_slice().iter().enumerate() {
            if stage.name == StageName::Rt {
                retire_tick = Some(stage.start);
                continue;
            }
            let start = cycle(stage.start);
            let end = stage.end.map_or(start, &mut cycle);
            last_stage = Some((start, end));
            let index = u32::try_from(index).unwrap_or(Event::NO_NOTES);
            let notes = if record.has_notes(index) {
                index
            } else {
                Event::NO_NOTES
            };
            events.push((
                start,
                Event::Enter {
                    lane: 0,
                    stage: stage.name,
                    notes,
                },
            ));
        }

        let mut handle = None;
        let mut depends = std::mem::take(&mut record.depends);
        depends.clear();
        if self.options.deps {
            let complete = record.complete.map(&mut cycle);
            if let Some(c) = complete {
                events.push((
                    c,
                    Event::Enter {
                        lane: 1,
                        stage: StageName::X,
                        notes: Event::NO_NOTES,
                    },
                ));
                for source in record.sources() {
                    if let Some(producer) = self.producers.get(source) {
                        if producer.complete.is_none_or(|p| p < c) {
                            events.push((c, Event::Depend(depends.len() as u32)));
                            depends.push(Rc::clone(&producer.handle));
                        }
                    }
                }
                events.push((
                    c + 1,
                    Event::Enter {
                        lane: 1,
                        stage: StageName::XEnd,
                        notes: Event::NO_NOTES,
                    },
                ));
                events.push((c + 1, Event::Leave { lane: 1 }));
            }
            let mut destinations = record.destinations().peekable();
            if destinations.peek().is_some() {
                let shared: Handle = Rc::new(Cell::new(None));
                for key in destinations {
                    let producer = Producer {
                        handle: Rc::clone(&shared),
                        complete,
                    };
                    // The same few hundred registers come back again and again: a key is
                    // copied only the first time.
                    match self.producers.get_mut(key) {
                        Some(known) => *known = producer,
                        None => {
                            self.producers.insert(key.to_owned(), producer);
                        }
                    }
                }
                handle = Some(shared);
            }
        }

        let ids = self.retire_ids.get_or_insert(RetireIds {
            last_rid: -1,
            last_retired_seq: i128::from(seq) - 1,
        });
        match record.fate {
            Fate::Retired { .. } => {
                let mut at = cycle(retire_tick.expect("a retired record has Rt"));
                if let Some((start, _)) = last_stage.filter(|&(start, _)| at < start) {
                    diag.report(Rule::G6, record.line, || {
                        format!(
                            "instruction {seq} retires in cycle {at}, before its last stage \
                             starts in cycle {start}: retired there"
                        )
                    });
                    at = start;
                }
                events.push((
                    at,
                    Event::Enter {
                        lane: 0,
                        stage: StageName::Rt,
                        notes: Event::NO_NOTES,
                    },
                ));
                events.push((at + 1, Event::Retire(ids.retire(seq))));
            }
            Fate::Flushed { .. } => {
                let at = match last_stage {
                    Some((start, end)) if end > start => end,
                    Some((start, _)) => start + 1,
                    None => fetched + 1,
                };
                events.push((at, Event::Flush(ids.flush(seq))));
            }
            Fate::Open => {}
        }

        if let Some((tick, at)) = inexact {
            let tpc = clock.ticks_per_cycle;
            diag.report(Rule::G3, record.line, || {
                format!(
                    "instruction {seq}: tick {tick} is not a whole cycle of {tpc} ticks: \
                     placed in cycle {at} (--ticks-per-cycle)"
                )
            });
        }
        record.finish_detail();
        record.handle = handle;
        record.depends = depends;
        self.emitter.place(Placed { thread, record }, &events);
        self.events = events;
    }

    fn end(mut self, diag: &mut Diagnostics) -> Result<Finished<W>, Error> {
        if self.mode == Mode::Undecided {
            return Err(Error::new(
                ErrorKind::Input,
                "no O3PipeView record: not a gem5 O3PipeView trace",
            ));
        }
        if let Some(open) = self.current.take() {
            report_truncated(diag, &open, "at the end of the input");
            self.finished(Waiting::Record(open), diag)?;
        }
        if self.clock.is_none() {
            self.detect_at_end(diag);
        }
        self.drain(true, diag)?;
        self.emitter.finish()
    }
}

impl<W: Write + Send + 'static> Converter<W> for Gem5Converter<W> {
    fn line(&mut self, line: &[u8], lineno: u64, diag: &mut Diagnostics) -> Result<(), Error> {
        self.one_line(read::single_line(line, lineno), diag)
    }

    fn finish(self: Box<Self>, diag: &mut Diagnostics) -> Result<Finished<W>, Error> {
        (*self).end(diag)
    }
}

/// Converts the gem5 trace read from `input`: lines are split and parsed on a thread of
/// their own (`read`), the records ordered here, the output written on a third (`replay`).
/// Returns the finished output and the number of input lines.
pub(crate) fn run<W: Write + Send + 'static>(
    input: Box<dyn Read + Send>,
    builder: WriterBuilder,
    output: W,
    options: Gem5Options,
    diag: &mut Diagnostics,
    progress: &Progress,
) -> Result<(Finished<W>, u64), Error> {
    let mut converter = Gem5Converter::new(builder, output, options)?;
    let lines = read::run(input, diag, progress, |next, diag| {
        converter.next(next, diag)
    })?;
    let finished = converter.end(diag)?;
    if let Some(error) = crate::diag::strict_error(diag) {
        return Err(error);
    }
    Ok((finished, lines))
}

/// A line without the byte order mark that may start line 1.
fn without_bom(raw: &[u8], lineno: u64) -> &[u8] {
    if lineno == 1 {
        raw.strip_prefix(b"\xef\xbb\xbf").unwrap_or(raw)
    } else {
        raw
    }
}

/// The fields of a `fetch` line (after `O3PipeView:`).
struct FetchLine<'a> {
    tick: u64,
    address: &'a str,
    upc: &'a str,
    seq: u64,
    disassembly: &'a str,
}

impl<'a> FetchLine<'a> {
    /// `fetch:<tick>:<pc>:<upc>:<seq>:<disassembly, colons included>`.
    fn parse(body: &'a str) -> Option<FetchLine<'a>> {
        let mut parts = body.splitn(6, ':');
        parts.next();
        let tick = number(parts.next()?)?;
        let address = parts.next()?.trim();
        let upc = parts.next()?.trim();
        let seq = number(parts.next()?)?;
        Some(FetchLine {
            tick,
            address,
            upc,
            seq,
            disassembly: parts.next().unwrap_or(""),
        })
    }
}

/// ASCII text that `str::trim` leaves as it is; `None` for anything else.
fn untrimmed_ascii(field: &str) -> Option<&str> {
    let blank = |b: &u8| b.is_ascii_whitespace() || *b == 0x0b;
    let bytes = field.as_bytes();
    if !bytes.is_ascii() || bytes.first().is_some_and(blank) || bytes.last().is_some_and(blank) {
        return None;
    }
    Some(field)
}

/// A tick or sequence number: decimal digits, spaces around allowed.
fn number(field: &str) -> Option<u64> {
    let field = field.trim();
    if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    field.parse().ok()
}

/// The ticks of the `store:<tick>` pairs after a retire tick.
fn store_ticks<'a>(mut fields: impl Iterator<Item = &'a str>) -> Vec<u64> {
    let mut stores = Vec::new();
    while let (Some(name), Some(tick)) = (fields.next(), fields.next()) {
        match (name.trim(), number(tick)) {
            ("store", Some(tick)) => stores.push(tick),
            _ => break,
        }
    }
    stores
}

/// The sequence number of a BOOM prefix `<number>;` (spaces around allowed).
fn boom_prefix(prefix: &str) -> Option<u64> {
    number(prefix.trim().strip_suffix(';')?)
}

/// BOOM's `<fseq>; store-comp: <tick>`.
fn store_completion(text: &str) -> Option<(u64, u64)> {
    let (prefix, rest) = text.split_once(';')?;
    let tick = rest.trim_start().strip_prefix("store-comp:")?;
    Some((number(prefix)?, number(tick)?))
}

/// The clock of a set of ticks: their smallest difference, counted from the smallest.
fn clock_of(ticks: &BTreeSet<u64>) -> Option<Clock> {
    let first = *ticks.first()?;
    let ticks_per_cycle = ticks
        .iter()
        .zip(ticks.iter().skip(1))
        .map(|(a, b)| b - a)
        .min()?;
    Some(Clock::new(ticks_per_cycle, first % ticks_per_cycle))
}

fn report_truncated(diag: &mut Diagnostics, record: &Record, when: &str) {
    let seq = record.seq;
    diag.report(Rule::G4, record.line, || {
        format!("instruction {seq} has no retire line ({when}): left open")
    });
}

#[cfg(test)]
mod tests;
