//! One instruction as Konata's gem5 loader builds it from its record (spec §2.2, §2.5), still
//! in raw ticks: stages, labels, register keys (and, once written, the handles of its arrows).
//! Nothing here knows about cycles.

use std::fmt::Write as _;

use super::exlog::{self, ExEntry};
use super::order::Handle;
use super::packed::{put_tick, put_varint, take_byte, take_tick, take_varint};

/// The stages Konata draws for a gem5 record (lane 0), plus the two of `--deps` (lane 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum StageName {
    /// `fetch`.
    F,
    /// `decode`.
    Dc,
    /// `rename`.
    Rn,
    /// `dispatch`.
    Ds,
    /// `issue`.
    Is,
    /// `complete`.
    Cm,
    /// `retire` (drawn one cycle wide from the retire tick).
    Rt,
    /// Memory completion, from a MemDepUnit `Completed mem` line.
    Mc,
    /// `--deps`: the one-cycle stage whose name makes Konata draw arrows (lane 1).
    X,
    /// `--deps`: the zero-length stage after `X` that keeps the arrow's tail in place.
    XEnd,
}

impl StageName {
    /// Every stage, in the order the writer interns them.
    pub(crate) const ALL: [StageName; 10] = [
        StageName::F,
        StageName::Dc,
        StageName::Rn,
        StageName::Ds,
        StageName::Is,
        StageName::Cm,
        StageName::Rt,
        StageName::Mc,
        StageName::X,
        StageName::XEnd,
    ];

    /// The name Konata shows.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            StageName::F => "F",
            StageName::Dc => "Dc",
            StageName::Rn => "Rn",
            StageName::Ds => "Ds",
            StageName::Is => "Is",
            StageName::Cm => "Cm",
            StageName::Rt => "Rt",
            StageName::Mc => "Mc",
            StageName::X => "X",
            StageName::XEnd => "x",
        }
    }

    /// The stage an O3PipeView command starts (`fetch` … `complete`).
    pub(crate) fn of_command(command: &str) -> Option<StageName> {
        Some(match command {
            "fetch" => StageName::F,
            "decode" => StageName::Dc,
            "rename" => StageName::Rn,
            "dispatch" => StageName::Ds,
            "issue" => StageName::Is,
            "complete" => StageName::Cm,
            _ => return None,
        })
    }

    /// Index in [`StageName::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// One stage of lane 0, in ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TickStage {
    pub(crate) name: StageName,
    pub(crate) start: u64,
    /// `None` while open (Konata's `endCycle == 0`).
    pub(crate) end: Option<u64>,
}

/// How a packed stage ends, in the top bits of its name byte.
const END_MASK: u8 = 0b0110_0000;
const END_OPEN: u8 = 0;
const END_AT_START: u8 = 0b0010_0000;
const END_AT_NEXT: u8 = 0b0100_0000;
const END_GIVEN: u8 = 0b0110_0000;

/// Stages a record holds in place: F Dc Rn Ds Is Cm, one Mc, Rt.
const STAGES_IN_PLACE: usize = 8;

/// The stages of a record, in the order started. Up to [`STAGES_IN_PLACE`] are kept in the
/// record itself, so that writing a record (a whole window after it was read, when it is no
/// longer cached) reads one allocation, not a second one for its stages; a record with more
/// (several memory completions) keeps them all on the heap.
#[derive(Clone, Debug)]
pub(crate) struct Stages {
    in_place: [TickStage; STAGES_IN_PLACE],
    len: usize,
    /// Every stage, once there are more than fit in place.
    spilled: Vec<TickStage>,
}

impl Stages {
    fn new() -> Stages {
        Stages {
            in_place: [TickStage {
                name: StageName::F,
                start: 0,
                end: None,
            }; STAGES_IN_PLACE],
            len: 0,
            spilled: Vec::new(),
        }
    }

    pub(crate) fn as_slice(&self) -> &[TickStage] {
        if self.len <= STAGES_IN_PLACE {
            &self.in_place[..self.len]
        } else {
            &self.spilled
        }
    }

    fn as_mut_slice(&mut self) -> &mut [TickStage] {
        if self.len <= STAGES_IN_PLACE {
            &mut self.in_place[..self.len]
        } else {
            &mut self.spilled
        }
    }

    fn push(&mut self, stage: TickStage) {
        if self.len < STAGES_IN_PLACE {
            self.in_place[self.len] = stage;
        } else {
            if self.len == STAGES_IN_PLACE {
                self.spilled.clear();
                self.spilled.extend_from_slice(&self.in_place);
            }
            self.spilled.push(stage);
        }
        self.len += 1;
    }

    fn clear(&mut self) {
        if self.len > STAGES_IN_PLACE {
            self.spilled.clear();
        }
        self.len = 0;
    }

    fn last_mut(&mut self) -> Option<&mut TickStage> {
        self.as_mut_slice().last_mut()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Where the last stage `name` starts (`complete` is where the last `Cm` does).
    fn last_start_of(&self, name: StageName) -> Option<u64> {
        self.as_slice()
            .iter()
            .rev()
            .find(|s| s.name == name)
            .map(|s| s.start)
    }
}

/// The store ticks of a record: nearly always one, kept in place.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stores {
    first: Option<u64>,
    rest: Vec<u64>,
}

impl Stores {
    pub(crate) fn set(&mut self, ticks: &[u64]) {
        self.first = ticks.first().copied();
        self.rest.clear();
        if let Some(rest) = ticks.get(1..) {
            self.rest.extend_from_slice(rest);
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.first.into_iter().chain(self.rest.iter().copied())
    }
}

/// How the record ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    /// No `retire` line (yet, or ever: a truncated record).
    Open,
    /// `retire:R` with R ≠ 0; `tick` is R.
    Retired { tick: u64 },
    /// `retire:0`; `tick` is the last tick the record reached.
    Flushed { tick: u64 },
}

/// One instruction in raw ticks, as Konata's per-record state machine leaves it.
#[derive(Clone, Debug)]
pub(crate) struct Record {
    /// gem5's sequence number.
    pub(crate) seq: u64,
    /// The input line of the `fetch` record.
    pub(crate) line: u64,
    pub(crate) fetch_tick: u64,
    /// The name label `<pc>: <disassembly>` (the first `name_len` bytes), then the detail
    /// label without the store ticks (they are appended when the instruction is written,
    /// because BOOM traces give them after the retirement): one allocation for both.
    labels: String,
    name_len: usize,
    /// The thread id of an `O3PipeView:thread` line.
    pub(crate) tid: Option<u32>,
    pub(crate) stages: Stages,
    /// The ex-log lines appended to a stage (by its index in `stages`) while it was the last
    /// one started, each on its own line, in the order they came.
    /// The text of each is the byte range `start..end` of `note_text`.
    notes: Vec<(u32, usize, usize)>,
    note_text: String,
    /// Konata's "current tick": the last tick the record reached.
    pub(crate) current: u64,
    pub(crate) fate: Fate,
    /// The `:store:` ticks of the retire line (or BOOM's `store-comp`).
    pub(crate) stores: Stores,
    /// The start of `Cm` (Konata's `consCycle` and `prodCycle`), if it has one.
    pub(crate) complete: Option<u64>,
    /// Register keys read (from `Rename` lines): byte ranges of `keys`.
    sources: Vec<(usize, usize)>,
    /// Register keys written: byte ranges of `keys`.
    destinations: Vec<(usize, usize)>,
    /// The text of the register keys, one string for all (no allocation per key).
    keys: String,
    /// Once written (`--deps`): set to its file id when its `I` is written, for the arrows
    /// of the instructions that read what it writes. Kept here rather than beside the
    /// record so that the emitter moves one pointer per instruction.
    pub(crate) handle: Option<Handle>,
    /// Once written: the producers of its `Event::Depend`s.
    pub(crate) depends: Vec<Handle>,
}

impl Record {
    /// A record from its `fetch` line; the `F` stage starts at `tick` unless it is 0.
    pub(crate) fn fetch(
        seq: u64,
        line: u64,
        tick: u64,
        address: &str,
        upc: &str,
        disassembly: &str,
    ) -> Record {
        let mut record = Record::empty();
        record.refill(seq, line, tick, address, upc, disassembly);
        record
    }

    /// A record with nothing in it yet, to be [refilled](Self::refill) or
    /// [unpacked](Self::unpack).
    pub(crate) fn empty() -> Record {
        Record {
            seq: 0,
            line: 0,
            fetch_tick: 0,
            labels: String::new(),
            name_len: 0,
            tid: None,
            stages: Stages::new(),
            notes: Vec::new(),
            note_text: String::new(),
            current: 0,
            fate: Fate::Open,
            stores: Stores::default(),
            complete: None,
            sources: Vec::new(),
            destinations: Vec::new(),
            keys: String::new(),
            handle: None,
            depends: Vec::new(),
        }
    }

    /// Makes this record the one a `fetch` line starts, reusing its buffers.
    pub(crate) fn refill(
        &mut self,
        seq: u64,
        line: u64,
        tick: u64,
        address: &str,
        upc: &str,
        disassembly: &str,
    ) {
        self.seq = seq;
        self.line = line;
        self.fetch_tick = tick;
        reuse(&mut self.labels);
        self.labels.push_str(address);
        self.labels.push_str(": ");
        self.labels.push_str(disassembly);
        self.name_len = self.labels.len();
        self.labels.push_str("Fetched Tick: ");
        push_decimal(&mut self.labels, tick);
        self.labels.push_str("\nMicro PC: ");
        self.labels.push_str(upc);
        self.tid = None;
        self.stages.clear();
        self.notes.clear();
        reuse(&mut self.note_text);
        self.current = tick;
        self.fate = Fate::Open;
        self.stores.set(&[]);
        self.complete = None;
        self.sources.clear();
        self.destinations.clear();
        reuse(&mut self.keys);
        self.handle = None;
        self.depends.clear();
        if tick != 0 {
            self.start(StageName::F, tick);
        }
    }

    /// A stage command (`decode` … `complete`) at `tick`, after the ex-log lines before it.
    /// Returns how many ex-log lines were consumed.
    pub(crate) fn stage(
        &mut self,
        command: &str,
        name: StageName,
        tick: u64,
        ex: Option<&mut ExEntry>,
    ) -> usize {
        let consumed = self.consume(ex, Some(tick), tick);
        if tick == 0 {
            return consumed;
        }
        let mut tick = tick;
        if tick < self.current {
            let _ = write!(
                self.labels,
                "\nOut-of-order {command} Tick: {tick} (normalized to {})",
                self.current
            );
            tick = self.current;
        }
        self.close_last(tick);
        self.start(name, tick);
        consumed
    }

    /// The `retire` line: `tick` 0 is a flush at the current tick. Every ex-log line left is
    /// consumed first. Returns how many were.
    pub(crate) fn retire(&mut self, tick: u64, stores: &[u64], ex: Option<&mut ExEntry>) -> usize {
        let cutoff = if tick == 0 { self.current } else { tick };
        let consumed = self.consume(ex, None, cutoff);
        let flushed = tick == 0;
        let at = if flushed { self.current } else { tick };
        self.labels.push_str("\nRetired Tick: ");
        push_decimal(&mut self.labels, tick);
        self.stores.set(stores);
        for stage in self.stages.as_mut_slice() {
            if stage.end.is_none() {
                stage.end = Some(at);
            }
        }
        if flushed {
            self.fate = Fate::Flushed { tick: at };
        } else {
            self.stages.push(TickStage {
                name: StageName::Rt,
                start: at,
                end: Some(at),
            });
            self.fate = Fate::Retired { tick: at };
        }
        consumed
    }

    /// Ends the detail label as Konata ends it: the store ticks after the retired tick.
    pub(crate) fn finish_detail(&mut self) {
        if self.fate != Fate::Open {
            for store in self.stores.iter() {
                self.labels.push_str("\nStore Tick: ");
                push_decimal(&mut self.labels, store);
            }
        }
    }

    /// Appends the record packed (see `packed`), or returns false, appending nothing, when it
    /// has what packing leaves out: more than one store tick, stages on the heap, arrows.
    pub(crate) fn pack(&self, out: &mut Vec<u8>) -> bool {
        if !self.stores.rest.is_empty()
            || self.stages.len > STAGES_IN_PLACE
            || self.handle.is_some()
            || !self.depends.is_empty()
        {
            return false;
        }
        // Most numbers follow from others, and are only flagged: a stage ends where the
        // next starts, the retire tick is where `Rt` starts, `complete` is where `Cm` starts.
        // Stage starts are deltas from the one before (a tick or two).
        let base = self.fetch_tick;
        put_varint(out, self.seq);
        put_varint(out, self.line);
        put_varint(out, self.fetch_tick);
        put_varint(out, self.tid.map_or(0, |t| u64::from(t) + 1));
        let stages = self.stages.as_slice();
        out.push(stages.len() as u8);
        let mut previous = base;
        for (index, stage) in stages.iter().enumerate() {
            let next = stages.get(index + 1).map(|s| s.start);
            let end = match stage.end {
                None => END_OPEN,
                Some(end) if end == stage.start => END_AT_START,
                Some(end) if Some(end) == next => END_AT_NEXT,
                Some(_) => END_GIVEN,
            };
            out.push(stage.name.index() as u8 | end);
            put_tick(out, previous, stage.start);
            if let (END_GIVEN, Some(end)) = (end, stage.end) {
                put_tick(out, stage.start, end);
            }
            previous = stage.start;
        }
        put_tick(out, previous, self.current);
        let last_start = stages.last().map(|s| s.start);
        match self.fate {
            Fate::Open => out.push(0),
            Fate::Retired { tick } if Some(tick) == last_start => out.push(1),
            Fate::Flushed { tick } if tick == self.current => out.push(2),
            Fate::Retired { tick } => {
                out.push(3);
                put_tick(out, base, tick);
            }
            Fate::Flushed { tick } => {
                out.push(4);
                put_tick(out, base, tick);
            }
        }
        match self.stores.first {
            None => out.push(0),
            Some(0) => out.push(1),
            Some(tick) => {
                out.push(2);
                put_tick(out, base, tick);
            }
        }
        match self.complete {
            None => out.push(0),
            Some(tick) if self.stages.last_start_of(StageName::Cm) == Some(tick) => out.push(1),
            Some(tick) => {
                out.push(2);
                put_tick(out, base, tick);
            }
        }
        put_varint(out, self.notes.len() as u64);
        for &(stage, start, end) in &self.notes {
            put_varint(out, u64::from(stage));
            put_varint(out, start as u64);
            put_varint(out, end as u64);
        }
        for ranges in [&self.sources, &self.destinations] {
            put_varint(out, ranges.len() as u64);
            for &(start, end) in ranges {
                put_varint(out, start as u64);
                put_varint(out, end as u64);
            }
        }
        put_varint(out, self.name_len as u64);
        // The texts last, one after the other, so that one UTF-8 check takes them back.
        for text in [&self.labels, &self.note_text, &self.keys] {
            put_varint(out, text.len() as u64);
        }
        for text in [&self.labels, &self.note_text, &self.keys] {
            out.extend_from_slice(text.as_bytes());
        }
        true
    }

    /// Makes this record the one `bytes` (from [`pack`](Self::pack)) holds, reusing its
    /// buffers.
    pub(crate) fn unpack(&mut self, mut bytes: &[u8]) {
        let bytes = &mut bytes;
        self.seq = take_varint(bytes);
        self.line = take_varint(bytes);
        self.fetch_tick = take_varint(bytes);
        let base = self.fetch_tick;
        self.tid = match take_varint(bytes) {
            0 => None,
            t => Some((t - 1) as u32),
        };
        self.stages.clear();
        let mut previous = base;
        let mut ends_at_next = false;
        for _ in 0..take_byte(bytes) {
            let flags = take_byte(bytes);
            let start = take_tick(bytes, previous);
            if ends_at_next {
                if let Some(last) = self.stages.last_mut() {
                    last.end = Some(start);
                }
            }
            let end_form = flags & END_MASK;
            ends_at_next = end_form == END_AT_NEXT;
            let end = match end_form {
                END_OPEN | END_AT_NEXT => None,
                END_AT_START => Some(start),
                _ => Some(take_tick(bytes, start)),
            };
            self.stages.push(TickStage {
                name: StageName::ALL[usize::from(flags & !END_MASK)],
                start,
                end,
            });
            previous = start;
        }
        self.current = take_tick(bytes, previous);
        let last_start = self.stages.as_slice().last().map_or(base, |s| s.start);
        self.fate = match take_byte(bytes) {
            0 => Fate::Open,
            1 => Fate::Retired { tick: last_start },
            2 => Fate::Flushed { tick: self.current },
            3 => Fate::Retired {
                tick: take_tick(bytes, base),
            },
            _ => Fate::Flushed {
                tick: take_tick(bytes, base),
            },
        };
        let store = match take_byte(bytes) {
            0 => None,
            1 => Some(0),
            _ => Some(take_tick(bytes, base)),
        };
        self.stores.set(store.as_slice());
        self.complete = match take_byte(bytes) {
            0 => None,
            1 => self.stages.last_start_of(StageName::Cm),
            _ => Some(take_tick(bytes, base)),
        };
        self.notes.clear();
        for _ in 0..take_varint(bytes) {
            let stage = take_varint(bytes) as u32;
            let start = take_varint(bytes) as usize;
            let end = take_varint(bytes) as usize;
            self.notes.push((stage, start, end));
        }
        for ranges in [&mut self.sources, &mut self.destinations] {
            ranges.clear();
            for _ in 0..take_varint(bytes) {
                let start = take_varint(bytes) as usize;
                let end = take_varint(bytes) as usize;
                ranges.push((start, end));
            }
        }
        self.name_len = take_varint(bytes) as usize;
        let labels_len = take_varint(bytes) as usize;
        let note_text_len = take_varint(bytes) as usize;
        let keys_len = take_varint(bytes) as usize;
        let texts = std::str::from_utf8(&bytes[..labels_len + note_text_len + keys_len])
            .expect("packed from Strings");
        let (labels, rest) = texts.split_at(labels_len);
        let (note_text, keys) = rest.split_at(note_text_len);
        for (buffer, text) in [
            (&mut self.labels, labels),
            (&mut self.note_text, note_text),
            (&mut self.keys, keys),
        ] {
            reuse(buffer);
            buffer.push_str(text);
        }
        self.handle = None;
        self.depends.clear();
    }

    /// The name label, `<pc>: <disassembly>`.
    pub(crate) fn name(&self) -> &str {
        &self.labels[..self.name_len]
    }

    /// The detail label.
    pub(crate) fn detail(&self) -> &str {
        &self.labels[self.name_len..]
    }

    /// The notes of stage `index`.
    pub(crate) fn notes_of(&self, index: u32) -> impl Iterator<Item = &str> + '_ {
        self.notes
            .iter()
            .filter(move |&&(stage, _, _)| stage == index)
            .map(|&(_, start, end)| &self.note_text[start..end])
    }

    /// Whether stage `index` has notes.
    pub(crate) fn has_notes(&self, index: u32) -> bool {
        self.notes.iter().any(|&(stage, _, _)| stage == index)
    }

    /// The register keys read.
    pub(crate) fn sources(&self) -> impl Iterator<Item = &str> + '_ {
        self.sources
            .iter()
            .map(|&(start, end)| &self.keys[start..end])
    }

    /// The register keys written.
    pub(crate) fn destinations(&self) -> impl Iterator<Item = &str> + '_ {
        self.destinations
            .iter()
            .map(|&(start, end)| &self.keys[start..end])
    }

    /// Keeps the key `<class><phys>`, returning its range in `keys`.
    fn key(&mut self, (class, phys): (&str, &str)) -> (usize, usize) {
        let start = self.keys.len();
        self.keys.push_str(class);
        self.keys.push_str(phys);
        (start, self.keys.len())
    }

    /// Every tick Konata's clock detection looks at: fetch, retire, stage starts and ends
    /// (not the store ticks).
    pub(crate) fn ticks(&self, out: &mut impl Extend<u64>) {
        out.extend([self.fetch_tick]);
        let retired = match self.fate {
            Fate::Retired { tick } | Fate::Flushed { tick } => Some(tick),
            Fate::Open => None,
        };
        out.extend(retired);
        for stage in self.stages.as_slice() {
            out.extend([stage.start]);
            out.extend(stage.end);
        }
    }

    fn start(&mut self, name: StageName, tick: u64) {
        self.stages.push(TickStage {
            name,
            start: tick,
            end: None,
        });
        if name == StageName::Cm {
            self.complete = Some(tick);
        }
        self.current = tick;
    }

    /// Closes the last stage started (Konata closes the last stage of that name).
    fn close_last(&mut self, tick: u64) {
        if let Some(last) = self.stages.last_mut() {
            last.end = Some(tick);
        }
    }

    /// Consumes the ex-log lines in file order while their tick is before `cutoff` (all of
    /// them when `None`); a memory completion at a tick in `[current, mc_cutoff)` starts an
    /// `Mc` stage. Returns how many lines were consumed.
    #[inline]
    fn consume(&mut self, ex: Option<&mut ExEntry>, cutoff: Option<u64>, mc_cutoff: u64) -> usize {
        match ex {
            // Nearly always: no debug line names the instruction.
            None => 0,
            Some(ex) => self.consume_lines(ex, cutoff, mc_cutoff),
        }
    }

    /// [`consume`](Self::consume) with lines kept for the instruction.
    fn consume_lines(&mut self, ex: &mut ExEntry, cutoff: Option<u64>, mc_cutoff: u64) -> usize {
        let mut consumed = 0;
        while let Some(front) = ex.lines.front() {
            if let (Some(cutoff), Some(tick)) = (cutoff, front.tick) {
                if tick >= cutoff {
                    break;
                }
            }
            let Some(line) = ex.lines.pop_front() else {
                break;
            };
            consumed += 1;
            self.apply(ex.text(line), line.tick, mc_cutoff);
        }
        ex.forget_consumed();
        consumed
    }

    /// What one consumed ex-log line adds (§2.5).
    fn apply(&mut self, text: &str, tick: Option<u64>, mc_cutoff: u64) {
        // Konata splits the line on `:`; fields are taken from the text as needed, no list
        // of them is built (this runs for every debug line).
        let mut fields = text.split(':');
        let (arg1, arg2) = (fields.nth(1).unwrap_or(""), fields.next().unwrap_or(""));
        if arg1 == " user" {
            let _ = write!(self.labels, "\n {text}");
        } else if arg1 == " global" && arg2 == " RegFile" {
            let _ = write!(self.labels, "\n {}", fields.next().unwrap_or(""));
        } else if contains(arg1, ".memDep") && contains(arg2, " Completed mem") {
            let _ = write!(self.labels, "\n Memory Complete: {text}");
            if let Some(tick) = tick {
                if self.current <= tick && tick < mc_cutoff {
                    self.close_last(tick);
                    self.start(StageName::Mc, tick);
                }
            }
        } else if contains(arg1, ".rename") {
            for token in text.split(':').skip(2) {
                if !contains(token, " Renaming") && !contains(token, "Looking") {
                    continue;
                }
                self.labels.push_str("\n ");
                self.labels.push_str(token);
                if let Some(key) = exlog::destination_key(token) {
                    let key = self.key(key);
                    self.destinations.push(key);
                }
                if let Some(key) = exlog::source_key(token) {
                    let key = self.key(key);
                    self.sources.push(key);
                }
            }
        } else if contains(arg1, ".iew.lsq.thread")
            && (contains(arg2, " Read called") || contains(arg2, "Doing write"))
        {
            // Fields 2 to 6, colons included: from after the second colon to the seventh.
            let mut colons = memchr::memchr_iter(b':', text.as_bytes());
            let start = colons.nth(1).map_or(text.len(), |at| at + 1);
            let end = colons.nth(4).unwrap_or(text.len());
            self.labels.push_str("\n ");
            self.labels.push_str(&text[start..end]);
        }
        if let Some(last) = self.stages.len().checked_sub(1) {
            let start = self.note_text.len();
            self.note_text.push_str(text);
            self.notes.push((last as u32, start, self.note_text.len()));
        }
    }
}

/// `needle` in `hay`: the fields searched are short, so a plain scan beats building a
/// searcher for each.
fn contains(hay: &str, needle: &str) -> bool {
    let (hay, needle) = (hay.as_bytes(), needle.as_bytes());
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    let Some(last_start) = hay.len().checked_sub(needle.len()) else {
        return false;
    };
    memchr::memchr_iter(first, &hay[..=last_start])
        .any(|at| &hay[at + 1..at + needle.len()] == rest)
}

/// A reused record's text buffers keep their capacity up to this; a larger one (left by an
/// unusual record) is dropped, so that the window's thousands of records do not each keep
/// the most any record ever needed.
const REUSED_TEXT: usize = 1024;

/// Empties a text buffer of a record to be reused.
fn reuse(text: &mut String) {
    if text.capacity() > REUSED_TEXT {
        *text = String::new();
    } else {
        text.clear();
    }
}

/// `value` in decimal, as `write!` would put it, without the formatting machinery (this
/// runs three times a record; `itoa` gives the digits as a `str` without checking them).
pub(crate) fn push_decimal(text: &mut String, value: u64) {
    text.push_str(itoa::Buffer::new().format(value));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxes(record: &Record) -> Vec<(&'static str, u64, Option<u64>)> {
        record
            .stages
            .as_slice()
            .iter()
            .map(|s| (s.name.as_str(), s.start, s.end))
            .collect()
    }

    #[test]
    fn stages_chain_and_retire_appends_a_zero_length_rt() {
        let mut r = Record::fetch(10, 1, 1000, "0x10", "0", " add");
        r.stage("decode", StageName::Dc, 2000, None);
        r.stage("rename", StageName::Rn, 0, None);
        r.stage("complete", StageName::Cm, 3000, None);
        r.retire(4000, &[0], None);
        assert_eq!(
            boxes(&r),
            vec![
                ("F", 1000, Some(2000)),
                ("Dc", 2000, Some(3000)),
                ("Cm", 3000, Some(4000)),
                ("Rt", 4000, Some(4000))
            ]
        );
        assert_eq!(r.complete, Some(3000));
        r.finish_detail();
        assert_eq!(
            r.detail(),
            "Fetched Tick: 1000\nMicro PC: 0\nRetired Tick: 4000\nStore Tick: 0"
        );
    }

    #[test]
    fn a_memory_completion_between_stages_starts_mc() {
        let mut ex = ExEntry::default();
        ex.push(
            Some(6000),
            "6000: system.cpu.memDep0: Completed mem instruction [sn:10].",
        );
        let mut r = Record::fetch(10, 1, 1000, "0x10", "0", " load");
        r.stage("complete", StageName::Cm, 5000, Some(&mut ex));
        r.retire(7000, &[], Some(&mut ex));
        assert_eq!(
            boxes(&r),
            vec![
                ("F", 1000, Some(5000)),
                ("Cm", 5000, Some(6000)),
                ("Mc", 6000, Some(7000)),
                ("Rt", 7000, Some(7000))
            ]
        );
        assert_eq!(r.notes_of(2).count(), 1);
    }

    /// Everything writing a record reads, to compare two records.
    fn seen(r: &Record) -> String {
        let notes: Vec<Vec<&str>> = (0..r.stages.len() as u32)
            .map(|stage| r.notes_of(stage).collect())
            .collect();
        format!(
            "{} {} {} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            r.seq,
            r.line,
            r.fetch_tick,
            r.name(),
            r.detail(),
            r.tid,
            r.stages.as_slice(),
            r.current,
            r.fate,
            r.stores.iter().collect::<Vec<_>>(),
            r.complete,
            notes,
            r.sources().collect::<Vec<_>>(),
            r.destinations().collect::<Vec<_>>(),
        )
    }

    #[test]
    fn a_packed_record_unpacks_into_a_used_one_as_it_was() {
        let mut open = Record::fetch(u64::MAX, 3, 5_000, "0x10", "1", " ld a5, 8(sp)");
        open.stage("decode", StageName::Dc, 4_000, None); // out of order: a note in the label
        open.tid = Some(7);
        let mut flushed = Record::fetch(12, 40, 1_000, "0x14", "0", " c.mv a1, a5");
        flushed.stage("decode", StageName::Dc, 1_500, None);
        flushed.retire(0, &[], None);
        let mut retired = Record::fetch(13, 47, u64::MAX - 10, "0x18", "0", " sd a5, 16(sp)");
        retired.stage("complete", StageName::Cm, u64::MAX - 5, None);
        retired.retire(u64::MAX, &[u64::MAX - 1], None);
        retired.finish_detail();
        // Retired before its last stage started, with a store tick: ticks that go back.
        let mut early = Record::fetch(17, 80, 10_000, "0x28", "0", " sd a0, 0(a1)");
        early.stage("complete", StageName::Cm, 12_000, None);
        early.retire(11_000, &[11_500], None);
        early.finish_detail();
        let mut fetched_at_zero = Record::fetch(14, 50, 0, "0x1c", "0", " nop");
        fetched_at_zero.stage("decode", StageName::Dc, 2_000, None);
        fetched_at_zero.retire(3_000, &[], None);
        // Notes, a memory completion and register keys, with text that is not ASCII.
        let mut ex = ExEntry::default();
        ex.push(
            Some(1_500),
            "1500: system.cpu.rename: [tid:0] [sn:16] Renaming arch reg 10 (IntRegClass) to \
             physical reg 42 (IntRegClass)",
        );
        ex.push(
            Some(1_700),
            "1700: system.cpu.rename: [tid:0] [sn:16] Looking up IntRegClass arch reg 11, \
             got phys reg 43 (IntRegClass)",
        );
        ex.push(
            Some(2_500),
            "2500: system.cpu.memDep0: Completed mem instruction [sn:16] \u{e9}.",
        );
        let mut noted = Record::fetch(16, 70, 1_000, "0x24", "0", " ld a0, 0(a1) \u{2192}");
        noted.stage("rename", StageName::Rn, 2_000, Some(&mut ex));
        noted.stage("complete", StageName::Cm, 2_200, Some(&mut ex));
        noted.retire(3_000, &[], Some(&mut ex));
        assert!(noted.sources().count() + noted.destinations().count() > 0);
        assert!((0..8).any(|stage| noted.notes_of(stage).count() > 0));

        // Unpacked into a record that held something else, with more stages.
        let mut used = Record::fetch(99, 99, 99, "0x99", "9", " mul");
        for (command, name, tick) in [
            ("decode", StageName::Dc, 100),
            ("rename", StageName::Rn, 101),
            ("dispatch", StageName::Ds, 102),
            ("issue", StageName::Is, 103),
            ("complete", StageName::Cm, 104),
        ] {
            used.stage(command, name, tick, None);
        }
        used.retire(105, &[106, 107], None);
        for record in [&open, &flushed, &retired, &early, &fetched_at_zero, &noted] {
            let mut bytes = Vec::new();
            assert!(record.pack(&mut bytes));
            used.unpack(&bytes);
            assert_eq!(seen(&used), seen(record));
        }
        // A record with what packing leaves out is not packed.
        let mut two_stores = Record::fetch(15, 60, 1_000, "0x20", "0", " sd");
        two_stores.retire(2_000, &[2_100, 2_200], None);
        let mut bytes = Vec::new();
        assert!(!two_stores.pack(&mut bytes), "two store ticks");
        assert!(bytes.is_empty());
    }
}
