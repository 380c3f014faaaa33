//! Reading a Kanata log on two threads. The rules that need only the line itself (the header
//! and the legacy start, Q2; the line prefix, Q18; CR LF, Q3; every field's parse, Q1, Q4b,
//! Q9, Q19, Q20) run on a reading thread, ahead of the normalizer, which keeps the state of
//! the instructions on the calling thread. Parsed lines cross in batches, their text copied
//! once into the batch, so neither side waits on the other line by line; the result is the
//! same as reading line after line on one thread, reports and errors included.
//!
//! Parsing costs more than normalizing when little is written (`--check`, plain output), so
//! the two threads share it: when the normalizer finds no batch waiting, the reader stops
//! parsing its block at the next line and sends it with the rest of its lines unparsed, and
//! the normalizer parses those itself while the reader goes on with the next block. Which
//! thread parses a line changes nothing in the result.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use bstr::ByteSlice;
use kanata_writer::Finished;

use crate::diag::{shorten, strict_error, Diagnostics, Rule};
use crate::error::Error;
use crate::input::progress::Progress;
use crate::input::ReadBuffer;
use crate::kanata::normalize::{KanataNormalizer, NumberedStages};
use crate::kanata::parse::{
    read_plain_stage_line, starts_a_command, starts_stage_line, Command, FromMasks, Label, Line,
    LineParser, Numbers, RetireType, SimId, StageLine,
};
use crate::kanata::scan::LineEnds;
use crate::kanata::stage_names::StageNames;

/// Batches in flight between the threads; a few bound the memory a fast reader can take.
const BATCHES_IN_FLIGHT: usize = 4;

/// The line-local half of reading a Kanata log.
pub(crate) struct KanataReader {
    parser: LineParser,
    /// Q18: only lines with this prefix are read, without it.
    prefix: Option<Vec<u8>>,
    /// Before the header (or the legacy first `C=`).
    in_header: bool,
}

impl KanataReader {
    pub(crate) fn new(prefix: Option<Vec<u8>>) -> KanataReader {
        KanataReader {
            parser: LineParser::new(),
            prefix,
            in_header: true,
        }
    }

    /// Whether a line is read as it is: the header is behind, and no prefix is to be taken
    /// off (Q18).
    #[inline(always)]
    fn reads_plain_lines(&self) -> bool {
        !self.in_header && self.prefix.is_none()
    }

    /// Reads one line into `out`; `false` when there is nothing for the normalizer (already
    /// reported).
    ///
    /// The line is written where the caller reads it, never returned: moved as a whole, a
    /// parsed line is copied in loads wider than the parser's stores, a store-forwarding
    /// stall on every line (a quarter of the reading thread's time).
    #[inline(always)]
    pub(crate) fn read<'a>(
        &'a mut self,
        raw: &'a [u8],
        lineno: u64,
        diag: &mut Diagnostics,
        out: &mut Line<&'a [u8]>,
    ) -> Result<bool, Error> {
        let mut line = raw;
        if let Some(prefix) = &self.prefix {
            let Some(rest) = line.strip_prefix(prefix.as_slice()) else {
                diag.report(Rule::Q18, lineno, || {
                    "line without the prefix skipped".to_owned()
                });
                return Ok(false);
            };
            line = rest;
            while let [b' ', rest @ ..] = line {
                line = rest;
            }
        }
        if self.in_header {
            return self.header(line, lineno, diag, out);
        }
        self.parser.parse_into(line, lineno, diag, out);
        Ok(true)
    }

    /// Q2: blank and comment lines, a BOM, then the header or (legacy) a `C=`.
    fn header<'a>(
        &'a mut self,
        line: &'a [u8],
        lineno: u64,
        diag: &mut Diagnostics,
        out: &mut Line<&'a [u8]>,
    ) -> Result<bool, Error> {
        let mut line = line;
        if let Some(rest) = line.strip_prefix(b"\xef\xbb\xbf") {
            diag.report(Rule::Q2, lineno, || "byte order mark dropped".to_owned());
            line = rest;
        }
        match self.parser.parse(line, lineno, diag) {
            Line::Blank | Line::Comment => {
                diag.report(Rule::Q2, lineno, || {
                    "blank or comment line before the header dropped".to_owned()
                });
                Ok(false)
            }
            Line::Header { version } => {
                if line != b"Kanata\t0004" {
                    diag.report(Rule::Q2, lineno, || {
                        format!("header {:?} written as `Kanata<TAB>0004`", shorten(line))
                    });
                }
                let text = version.to_str_lossy();
                if u32::from_str_radix(text.trim(), 16) != Ok(4) {
                    diag.report(Rule::Q2, lineno, || {
                        format!("version {text:?} read as version 4")
                    });
                }
                self.in_header = false;
                Ok(false)
            }
            Line::Command(Command::Start(cycle)) => {
                diag.report(Rule::Q2, lineno, || {
                    "legacy log without header: header added".to_owned()
                });
                self.in_header = false;
                *out = Line::Command(Command::Start(cycle));
                Ok(true)
            }
            _ => Err(Error::at_line(
                lineno,
                format!(
                    "not a Kanata log: expected the header `Kanata<TAB>0004`, found {:?}",
                    shorten(line)
                ),
            )),
        }
    }
}

/// Where a piece of text sits in a [`Batch`]'s text: in the block of input, or among the
/// texts the parser rebuilt, which follow the block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    start: u32,
    len: u32,
}

/// One line of a batch: its number and what the parser made of it.
struct Item {
    number: u64,
    parsed: Line<Span>,
}

/// A line of a batch in a third of an [`Item`]'s bytes: an `S` or `E` line, most lines of a
/// log, its stage name a number the reading thread gives each name ([`StageNumbers`]), so
/// that the normalizer finds the stage by indexing, not by hashing the name; or a `C`. An
/// `I`, `R` or `W` line takes two ops, the second holding its second number in `value`; an
/// `L` line two, the second holding where its text is. As ops rather than items, these
/// lines cross in a third of the bytes (two thirds for `I`, `R`, `W`, `L`), and the
/// normalizer takes them in one loop over the ops, the numbers' lines without going through
/// the general [`KanataNormalizer::parsed`].
#[derive(Clone, Copy, Debug)]
struct Op {
    /// `S`, `E`, `I`, `R`, `L`: the instruction's id; `W`: the consumer's; `C`: the cycles.
    /// In the second op of an `I`, `R`, `W` or `L`: the sim id, the retire id, the producer's
    /// id, the text's place (see [`OpKind::Label`]).
    value: i64,
    /// The line's number, from the batch's first line (0).
    line: u32,
    /// `S`, `E`: the lane; `I`: the thread; `R`: the type, if it has one; `W`: the type; `L`:
    /// the kind.
    small: u16,
    /// `S`, `E`: the stage name's number; `R`: whether it has a type.
    name: u8,
    kind: OpKind,
}

/// What line an [`Op`] is. In this order: the stage lines are the kinds up to `End`
/// ([`normalize_ops`]), and those from `Insn` on take two ops ([`Op::width`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
enum OpKind {
    Stage,
    End,
    Cycle,
    Insn,
    Retire,
    Dep,
    /// An `L` line: the id and the kind (in `small`); the second op holds where the text is
    /// in the batch's text (a [`Span`]: its start in the low 32 bits, its length above).
    Label,
}

/// The [`OpKind`] of a line of [`Numbers`] by its letter's low five bits (`C`, `I`, `R` and
/// `W` differ there): a load, not a branch on the letter, which would be mispredicted where
/// the commands follow one another at random.
const OP_KIND_BY_LETTER: [OpKind; 32] = {
    let mut kinds = [OpKind::Cycle; 32];
    kinds[(b'I' & 31) as usize] = OpKind::Insn;
    kinds[(b'R' & 31) as usize] = OpKind::Retire;
    kinds[(b'W' & 31) as usize] = OpKind::Dep;
    kinds
};

impl Op {
    /// The ops of the `I`, `R`, `W` or `C` line `line` (from the batch's first), if its
    /// third number fits one: the first, and the second, which only `I`, `R` and `W` take
    /// (see [`Op::width`]).
    #[inline(always)]
    fn of_numbers(numbers: Numbers, line: u32) -> Option<(Op, Op)> {
        let op = |kind, value, small, name| Op {
            value,
            line,
            small,
            name,
            kind,
        };
        let kind = OP_KIND_BY_LETTER[usize::from(numbers.letter & 31)];
        let third = u16::try_from(numbers.third).ok()?;
        Some((
            op(kind, numbers.first, third, u8::from(numbers.typed)),
            op(OpKind::Cycle, numbers.second, 0, 0),
        ))
    }

    /// [`Op::take`] of an `L` line.
    #[inline(always)]
    fn take_label<W: Write + Send + 'static>(
        self,
        second: Op,
        normalizer: &mut KanataNormalizer<W>,
        (batch, at, item): (&Batch, usize, Option<&Item>),
        number: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let label = Line::Command(Command::Label {
            id: self.value,
            kind: self.small as u8,
            text: Span {
                start: second.value as u32,
                len: (second.value >> 32) as u32,
            },
        });
        let label_ends = || label_ends(batch, batch.ops.get(at + self.width()), item);
        let text: &[u8] = &batch.text;
        // Every label op's text is written: it starts with a byte other than a CR (see
        // `number_line::read_label`). When nothing else of it is read, a text that is
        // written as well stands in for it: its bytes are in the reading thread's cache, and
        // the normalizer's load of the first missed it on every label (3 % of the samples
        // of `--check` on make_padded's log).
        // One call, not one for each way: `parsed` is inlined, and a second copy of it made
        // the loop over the ops 6 % longer in instructions.
        let unread = !normalizer.reads_label_text();
        let text_of = |span: Span| if unread { WRITTEN_TEXT } else { span.of(text) };
        normalizer.parsed(&label, text_of, label_ends, number, diag)
    }

    /// How many ops the line of this op takes.
    #[inline(always)]
    fn width(self) -> usize {
        if self.kind >= OpKind::Insn {
            2
        } else {
            1
        }
    }

    /// Hands `normalizer` the `I`, `R`, `W`, `C` or `L` line `number` of this op, `second`
    /// the op after it: the command told once, here. `at` is where the op is: its batch,
    /// its place among the ops, and the next item, for a label's text and its end.
    #[inline(always)]
    fn take<W: Write + Send + 'static>(
        self,
        second: Op,
        normalizer: &mut KanataNormalizer<W>,
        at: (&Batch, usize, Option<&Item>),
        number: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        match self.kind {
            OpKind::Label => self.take_label(second, normalizer, at, number, diag),
            OpKind::Insn => {
                let sim_id = SimId::from(i128::from(second.value));
                let thread = i64::from(self.small);
                normalizer.insn_line(self.value, sim_id, thread, number, diag)
            }
            OpKind::Retire => {
                let kind = if self.name == 0 {
                    RetireType::Empty
                } else {
                    RetireType::Value(i64::from(self.small))
                };
                normalizer.retire_line(self.value, second.value, kind, number, diag)
            }
            OpKind::Dep => {
                let kind = u32::from(self.small);
                normalizer.dep_line(self.value, second.value, kind, number, diag)
            }
            OpKind::Cycle | OpKind::Stage | OpKind::End => {
                normalizer.cycle_line(self.value, number, diag)
            }
        }
    }
}

/// The bits of the slot of [`StageNumbers::short`] a key hashes to.
const SHORT_BITS: u32 = 8;
/// Slots of [`StageNumbers::short`].
const SHORT_SLOTS: usize = 1 << SHORT_BITS;
/// How many names [`StageNumbers::short`] holds at most: an eighth of the slots, so that a
/// multiplier that puts each in a slot of its own is found within a few tries.
const SHORT_NAMES: usize = SHORT_SLOTS / 8;
/// How many multipliers [`StageNumbers::hold_short`] tries before it leaves a name out.
const SHORT_TRIES: usize = 64;

/// The slot of [`StageNumbers::short`] the key `key` hashes to with `multiplier`.
#[inline(always)]
fn short_slot(key: u64, multiplier: u64) -> usize {
    (key.wrapping_mul(multiplier) >> (64 - SHORT_BITS)) as usize
}

/// The numbers the reading thread gives stage names: one byte each, for the first 256
/// names of the log (the others' lines cross as [`Item`]s).
struct StageNumbers {
    /// The numbers of names of up to 7 bytes by [`StageNumbers::key`], each in the slot its
    /// key hashes to, no two in one (the hash's multiplier is chosen so), for the first
    /// names only (never evicted, as in [`StageNames`]): most lines find their name here
    /// with one load, from the block, and one compare, and a lookup takes no branch on
    /// which name it is. With a probe from slot to slot, the names whose slot another held
    /// took one more, mispredicted (callgrind's branch simulation: a sixth of the
    /// mispredictions of the parse of make_padded's log, whose 8 names shared a slot).
    short: [(u64, u8); SHORT_SLOTS],
    /// The multiplier of the hash of the keys (odd).
    multiplier: u64,
    /// How many names `short` holds, or [`SHORT_NAMES`] once a name found no slot.
    short_names: usize,
    names: StageNames<u8>,
    count: usize,
}

impl Default for StageNumbers {
    fn default() -> Self {
        StageNumbers {
            // No key is 0: a key holds its name's length, which is not.
            short: [(0, 0); SHORT_SLOTS],
            multiplier: 0x9e37_79b9_7f4a_7c15,
            short_names: 0,
            names: StageNames::default(),
            count: 0,
        }
    }
}

impl StageNumbers {
    /// The number of `name`, a slice of `block` or not; a new name is numbered and handed to
    /// `new` (in the order of the numbers). `None` once 256 names are numbered.
    #[inline(always)]
    fn number(&mut self, name: &[u8], block: &[u8], new: impl FnOnce()) -> Option<u8> {
        let offset = (name.as_ptr() as usize).wrapping_sub(block.as_ptr() as usize);
        let word = block.get(offset..).and_then(|from| from.first_chunk::<8>());
        let Some(key) = word.and_then(|word| Self::key(word, name.len())) else {
            return self.number_of_any(name, new);
        };
        if let Some(number) = self.find_short(key) {
            return Some(number);
        }
        let number = self.number_of_any(name, new)?;
        if self.short_names < SHORT_NAMES {
            self.hold_short(key, number);
        }
        Some(number)
    }

    /// The number of the name from `name_start` to `name_end` in `window`, if it is a short
    /// name numbered already: for the commonest lines, which need nothing else.
    #[inline(always)]
    fn short_number(&self, window: &[u8; 32], name_start: usize, name_end: usize) -> Option<u8> {
        let word = window.get(name_start..)?.first_chunk::<8>()?;
        let key = Self::key(word, name_end.checked_sub(name_start)?)?;
        self.find_short(key)
    }

    /// The number of the short name `key`, if `short` holds it.
    #[inline(always)]
    fn find_short(&self, key: u64) -> Option<u8> {
        let (short, number) = self.short[short_slot(key, self.multiplier)];
        (short == key).then_some(number)
    }

    /// Puts the short name `key`, numbered `number`, in `short`: in its slot if that is
    /// free; if not, every name in a new slot, by the first multiplier that gives each a
    /// slot of its own. A name none does is left out, and no more are put in.
    #[cold]
    fn hold_short(&mut self, key: u64, number: u8) {
        let slot = short_slot(key, self.multiplier);
        if self.short[slot].0 == 0 {
            self.short[slot] = (key, number);
            self.short_names += 1;
            return;
        }
        let held: Vec<(u64, u8)> = (self.short.iter().copied())
            .filter(|&(short, _)| short != 0)
            .chain([(key, number)])
            .collect();
        let mut multiplier = self.multiplier;
        for _ in 0..SHORT_TRIES {
            // The odd multipliers of a fixed sequence: the same input, the same slots.
            multiplier = multiplier.wrapping_add(0x6a09_e667_f3bc_c908);
            let mut short = [(0, 0); SHORT_SLOTS];
            let apart = held.iter().all(|&(key, number)| {
                let slot = &mut short[short_slot(key, multiplier)];
                let free = slot.0 == 0;
                *slot = (key, number);
                free
            });
            if apart {
                (self.short, self.multiplier) = (short, multiplier);
                self.short_names += 1;
                return;
            }
        }
        self.short_names = SHORT_NAMES;
    }

    /// The key of a name of 1 to 7 bytes, the first `len` of `word` (which goes on past the
    /// name), and its length; `None` for other names.
    #[inline(always)]
    fn key(word: &[u8; 8], len: usize) -> Option<u64> {
        if len == 0 || len > 7 {
            return None;
        }
        let bytes = u64::from_le_bytes(*word) & ((1 << (8 * len)) - 1);
        Some(bytes | (len as u64) << 56)
    }

    #[inline(never)]
    fn number_of_any(&mut self, name: &[u8], new: impl FnOnce()) -> Option<u8> {
        if let Some(number) = self.names.get(name) {
            return Some(number);
        }
        let number = u8::try_from(self.count).ok()?;
        self.names.insert(name, number);
        self.count += 1;
        new();
        Some(number)
    }
}

/// Parsed lines on their way from the reading thread to the normalizer.
#[derive(Default)]
struct Batch {
    /// A block of the input, whole lines only: the lines' text is read straight into it.
    /// Once the block is parsed, the label text the parser rebuilt from several fields (Q9)
    /// follows it, so that every span is found the same way. Shared, so that the reading
    /// thread can count the lines it hands over after it has sent the batch (see
    /// [`read_batches`]); only ever changed while it is not.
    text: Arc<ReadBuffer>,
    /// The rebuilt label text, while the block is parsed.
    rebuilt: Vec<u8>,
    items: Vec<Item>,
    /// The lines that are not among the items, in order (see [`normalize_batch`]): most
    /// lines, the `S`, `E`, `I`, `R`, `W` and `C`.
    ops: Vec<Op>,
    /// The text of the stage names numbered in this batch, in the order of their numbers.
    new_names: Vec<Span>,
    /// The number of the block's first line.
    first_line: u64,
    /// The lines of the block left for the normalizer to parse, after the parsed ones: from
    /// where the reader saw the normalizer waiting, or all but the header when it only
    /// reads.
    unparsed: Option<Unparsed>,
    /// What stopped the reader after these lines: an error, or the end of the input (with
    /// the number of lines read).
    end: Option<Result<u64, Error>>,
}

impl Batch {
    /// Empty, for the next block (its buffers kept).
    fn clear(&mut self) {
        Arc::make_mut(&mut self.text).clear();
        self.rebuilt.clear();
        self.items.clear();
        self.ops.clear();
        self.new_names.clear();
        self.unparsed = None;
        self.end = None;
    }

    /// The lines of the block left for the normalizer to parse, if any, to count once the
    /// batch is on its way.
    fn handed_over(&self) -> Option<HandedOver> {
        self.unparsed.map(|unparsed| HandedOver {
            text: Arc::clone(&self.text),
            lines: unparsed.start..unparsed.end,
        })
    }
}

/// The lines a batch hands over to the normalizer, in its text.
struct HandedOver {
    text: Arc<ReadBuffer>,
    lines: std::ops::Range<usize>,
}

impl HandedOver {
    /// How many lines.
    fn count(&self) -> u64 {
        count_lines(&self.text[self.lines.clone()])
    }
}

/// Whole lines at the end of a [`Batch`]'s block, left for the normalizer to parse.
#[derive(Clone, Copy, Debug)]
struct Unparsed {
    /// The number of the first of them.
    first_line: u64,
    /// Where they are in the batch's text: from `start` to the end of the block (the
    /// rebuilt label text of the parsed lines follows it).
    start: usize,
    end: usize,
}

impl Span {
    /// The piece of a batch's `text` the span is.
    #[inline(always)]
    fn of(self, text: &[u8]) -> &[u8] {
        &text[self.start as usize..self.start as usize + self.len as usize]
    }
}

/// `piece` as a span of `block` when it is a slice of it, else copied into `rebuilt`, which
/// will follow the block.
#[inline(always)]
fn span(piece: &[u8], block: &[u8], rebuilt: &mut Vec<u8>) -> Span {
    let offset = (piece.as_ptr() as usize).wrapping_sub(block.as_ptr() as usize);
    if offset <= block.len() && offset + piece.len() <= block.len() {
        Span {
            start: offset as u32,
            len: piece.len() as u32,
        }
    } else {
        let start = (block.len() + rebuilt.len()) as u32;
        rebuilt.extend_from_slice(piece);
        Span {
            start,
            len: piece.len() as u32,
        }
    }
}

/// Which lines the reader leaves for the normalizer to parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sharing {
    /// The rest of the block it is parsing whenever the normalizer waits for work: both
    /// threads parse.
    WhenIdle,
    /// Every one after the header: the reading thread only reads.
    All,
}

impl Sharing {
    /// How to share for a conversion that does or does not compress its output. A
    /// compressor thread sets the pace and needs a core of its own: on two cores, a reading
    /// thread that also parses would be a third busy thread and slow it down (measured:
    /// `.zst` output 1.45x `zstd -3`'s time sharing when idle, 1.09x leaving all parsing to
    /// the normalizer). On one core the threads take turns, and the normalizer's own parse
    /// costs less than a parse into batches and their normalizing (measured, pinned to one
    /// core: `--check` 0.95–0.96x the time). With more cores, or nothing to compress, both
    /// threads parse.
    pub(crate) fn for_output(compressing: bool) -> Sharing {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cores == 1 || compressing && cores <= 2 {
            Sharing::All
        } else {
            Sharing::WhenIdle
        }
    }

    /// Whether the normalizer spins a moment for the next batch before it sleeps: when
    /// sharing when idle, which [`Sharing::for_output`] chooses only when the reading thread
    /// and the normalizer each have a core of their own (two cores, or three with a
    /// compressor's thread). Sharing all, the reading thread only reads, the normalizer
    /// waits little, and a spin would take the compressor's core or the reading thread's.
    fn spins(self) -> bool {
        self == Sharing::WhenIdle
    }
}

/// Converts the Kanata log read from `input`: lines are read (and parsed, as `sharing` says)
/// on a second thread, the normalizer runs here. Returns the finished output and the number
/// of input lines.
pub(crate) fn run<W: Write + Send + 'static>(
    input: Box<dyn Read + Send>,
    mut normalizer: KanataNormalizer<W>,
    prefix: Option<Vec<u8>>,
    diag: &mut Diagnostics,
    progress: &Progress,
    sharing: Sharing,
) -> Result<(Finished<W>, u64), Error> {
    let (full_tx, full_rx) = mpsc::sync_channel::<Batch>(BATCHES_IN_FLIGHT);
    let (empty_tx, empty_rx) = mpsc::channel::<Batch>();
    let mut reader_diag = diag.empty_like();
    let mut own = OwnParser::new(prefix.clone());
    let waiting = AtomicBool::new(false);
    let outcome = std::thread::scope(|scope| {
        let reader_diag = &mut reader_diag;
        let waiting = &waiting;
        // Owned by this closure, so that an early return (an error) drops it: a reader
        // blocked on a full channel then stops, instead of the scope waiting for it forever.
        let full_rx = full_rx;
        let reader = scope.spawn(move || {
            read_batches(
                input,
                prefix,
                reader_diag,
                progress,
                (sharing, waiting),
                full_tx,
                empty_rx,
            )
        });
        let spins = sharing.spins();
        let mut normalize = || {
            let mut end = None;
            loop {
                let mut batch = match full_rx.try_recv() {
                    Ok(batch) => batch,
                    Err(mpsc::TryRecvError::Disconnected) => break,
                    Err(mpsc::TryRecvError::Empty) => {
                        waiting.store(true, Ordering::Relaxed);
                        match wait_for_batch(&full_rx, spins) {
                            Some(batch) => batch,
                            None => break,
                        }
                    }
                };
                own.normalize(&mut normalizer, &mut batch, diag)?;
                end = batch.end.take();
                if end.is_some() {
                    break;
                }
                // The reader may have stopped already; then the batch is simply freed.
                let _ = empty_tx.send(batch);
            }
            end.unwrap_or_else(|| {
                Err(Error::new(
                    crate::ErrorKind::Io,
                    "the reading thread stopped",
                ))
            })
        };
        let outcome = normalize();
        // Dropping the receiver (after an early return too) stops the reader. Joined here
        // rather than by the scope, which waits for the closure only: the thread itself
        // may still be running its thread-locals' destructors then (the fuzzers' leak
        // checker saw that once, as a 32-byte `__cxa_thread_atexit_impl` record).
        drop(full_rx);
        let _ = reader.join();
        outcome
    });
    diag.merge(reader_diag);
    let lines = outcome?;
    let finished = normalizer.finish(diag)?;
    // The end can need repairs too (a label held for a continuation, Q15).
    if let Some(error) = strict_error(diag) {
        return Err(error);
    }
    Ok((finished, lines))
}

/// How long the normalizer spins for the next batch before it sleeps, when it [spins](
/// Sharing::spins).
const SPIN: std::time::Duration = std::time::Duration::from_micros(50);

/// The next batch, once the normalizer has found none waiting; `None` when the reading
/// thread has stopped. With `spins`, it spins for up to [`SPIN`] first: sharing when idle,
/// the reading thread hands the rest of its block over within microseconds of seeing the
/// normalizer wait, a few hundred times a second. Sleeping until then cost a system call on
/// each side every time, and a wake-up late by tens of microseconds (measured: 2 ms of
/// waiting in a run of 180 ms instead of 12 ms, and 0.96x the time).
fn wait_for_batch(full_rx: &mpsc::Receiver<Batch>, spins: bool) -> Option<Batch> {
    if spins {
        let start = std::time::Instant::now();
        loop {
            match full_rx.try_recv() {
                Ok(batch) => return Some(batch),
                Err(mpsc::TryRecvError::Disconnected) => return None,
                Err(mpsc::TryRecvError::Empty) if start.elapsed() < SPIN => {
                    std::hint::spin_loop();
                }
                Err(mpsc::TryRecvError::Empty) => break,
            }
        }
    }
    full_rx.recv().ok()
}

/// The normalizer's own parser, for the lines the reading thread leaves unparsed (never the
/// header: the reading thread parses until the header is behind it). It hands the lines of
/// a block straight to the normalizer ([`IntoNormalizer`]), its stage names numbered by a
/// numbering of its own.
struct OwnParser {
    reader: KanataReader,
    numbers: StageNumbers,
    /// The normalizer's stages for `numbers`, while it holds the reading thread's.
    numbered: NumberedStages,
}

impl OwnParser {
    fn new(prefix: Option<Vec<u8>>) -> OwnParser {
        let mut reader = KanataReader::new(prefix);
        reader.in_header = false;
        OwnParser {
            reader,
            numbers: StageNumbers::default(),
            numbered: NumberedStages::new(),
        }
    }

    /// Normalizes `batch`: the lines the reading thread parsed, then those it left unparsed,
    /// parsed here.
    fn normalize<W: Write + Send + 'static>(
        &mut self,
        normalizer: &mut KanataNormalizer<W>,
        batch: &mut Batch,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        normalize_batch(normalizer, batch, diag)?;
        let Some(unparsed) = batch.unparsed else {
            return Ok(());
        };
        let mut at = Position {
            number: unparsed.first_line - 1,
            eof: false,
            unterminated: false,
        };
        let block = &batch.text[unparsed.start..unparsed.end];
        normalizer.swap_numbered(&mut self.numbered);
        let mut take = IntoNormalizer {
            normalizer,
            block,
            numbers: &mut self.numbers,
        };
        let stop = parse_lines(block, &mut self.reader, &mut at, diag, &mut take);
        normalizer.swap_numbered(&mut self.numbered);
        match stop {
            Some(Err(error)) => Err(error),
            _ => Ok(()),
        }
    }
}

/// A label's text that is written, standing in for the text of a label op when only that
/// is read of it (see [`Op::take_label`]).
const WRITTEN_TEXT: &[u8] = b"L";

/// Whether the line after a label in `batch` is known not to go on with it (Q8), given the
/// op and the item that come after the label: the next line is the op if it comes before
/// the item, else the item, which goes on with the label only if it is no command. With
/// neither, the next line is in the next batch: not known.
#[inline(always)]
fn label_ends(batch: &Batch, next_op: Option<&Op>, next_item: Option<&Item>) -> bool {
    let op_first = next_op.is_some_and(|op| {
        next_item.is_none_or(|item| batch.first_line + u64::from(op.line) < item.number)
    });
    op_first || next_item.is_some_and(|item| !matches!(item.parsed, Line::Other(_)))
}

/// Bytes read into a batch at a time. A quarter of a megabyte, so that a block and its
/// parsed lines (48 bytes each, about three times the text) fit in a core's L2 cache of 1 MiB:
/// the kernel's copy into the block and the parse that follows then stay in it. Blocks of
/// 1 MiB took 1.4x the system time and up to 1.02x the wall time of `--check`; 64 KiB ones
/// cost more than they saved (both measured before the reads were aligned, see
/// [`ReadBuffer`]).
const BLOCK: usize = 1 << 18;

/// Where the reading thread is in the input.
struct Position {
    /// The number of the last line read.
    number: u64,
    eof: bool,
    /// Whether the last line had no line end.
    unterminated: bool,
}

/// The reading thread: blocks of input in, batches of parsed lines out, until the input ends
/// or an error. Lines are parsed where they were read, so their text is never copied.
fn read_batches(
    mut input: Box<dyn Read + Send>,
    prefix: Option<Vec<u8>>,
    diag: &mut Diagnostics,
    progress: &Progress,
    (sharing, normalizer_waiting): (Sharing, &AtomicBool),
    full: mpsc::SyncSender<Batch>,
    empty: mpsc::Receiver<Batch>,
) {
    let mut reader = KanataReader::new(prefix);
    let mut numbers = StageNumbers::default();
    let mut at = Position {
        number: 0,
        eof: false,
        unterminated: false,
    };
    // The start of a line cut by the end of the previous block.
    let mut carry = Vec::new();
    loop {
        let mut batch = empty.try_recv().unwrap_or_default();
        batch.clear();
        let text = Arc::make_mut(&mut batch.text);
        text.restart_with(&carry, BLOCK);
        carry.clear();
        batch.end = fill(&mut input, text, &mut at).err();
        if batch.end.is_none() {
            // Whole lines only; the cut one waits for the next block.
            let whole = match memchr::memrchr(b'\n', text) {
                Some(last) if !at.eof => last + 1,
                _ => text.len(),
            };
            carry.extend_from_slice(&text[whole..]);
            text.truncate(whole);
            // Sharing when idle, the rest of the block goes to the normalizer as soon as it
            // waits, rather than when the block is parsed: it would otherwise wait half a
            // block's parse on average, every time (15 % of its time, measured). Never the
            // last block: its end needs the checks of `end_of_input`.
            let hand_over = match sharing {
                _ if at.eof => HandOver::Never,
                Sharing::WhenIdle => HandOver::WhenWaiting(normalizer_waiting),
                Sharing::All => HandOver::Always,
            };
            batch.end = parse_block(
                &mut batch,
                &mut reader,
                &mut numbers,
                &mut at,
                hand_over,
                diag,
            );
            if batch.end.is_none() && at.eof {
                batch.end = Some(end_of_input(&at, &reader, diag));
            }
        }
        progress.update();
        let last = batch.end.is_some();
        // The lines handed over are counted once the normalizer has them: it waits for the
        // batch, and the count of half a block took 2 to 8 µs, most of its wait (measured
        // on make_padded's log: about 500 waits, 1.5 % of its time).
        let handed_over = batch.handed_over();
        if full.send(batch).is_err() || last {
            return;
        }
        if let Some(handed_over) = handed_over {
            at.number += handed_over.count();
        }
    }
}

/// Reads into `text` until it holds a whole line (or the input ends).
fn fill(
    input: &mut Box<dyn Read + Send>,
    text: &mut ReadBuffer,
    at: &mut Position,
) -> Result<(), Result<u64, Error>> {
    let mut searched = 0;
    while !at.eof {
        let room = text.room(BLOCK);
        let read = loop {
            match input.read(&mut room[..BLOCK]) {
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                result => break result,
            }
        };
        match read {
            Ok(0) => at.eof = true,
            Ok(n) => {
                text.len += n;
                if memchr::memchr(b'\n', &text[searched..]).is_some() {
                    return Ok(());
                }
                searched = text.len();
            }
            Err(err) => {
                return Err(Err(Error::at_line(
                    at.number + 1,
                    format!("cannot read the input: {err}"),
                )));
            }
        }
    }
    Ok(())
}

/// The number of lines in `text`, which ends with a line end.
fn count_lines(text: &[u8]) -> u64 {
    // memchr's count is vectorized; a plain filter-and-count is not.
    memchr::memchr_iter(b'\n', text).count() as u64
}

/// When the reading thread hands the rest of the block it parses to the normalizer.
#[derive(Clone, Copy)]
enum HandOver<'a> {
    Never,
    /// When the normalizer is waiting for work, as the flag says (cleared when taken).
    WhenWaiting(&'a AtomicBool),
    /// At once: the reading thread parses the header only.
    Always,
    /// At the first line of each block that starts this many bytes or more into it, for
    /// tests: the reading thread's and the normalizer's parse meet at any line.
    #[cfg(test)]
    From(usize),
}

impl<'a> HandOver<'a> {
    /// A flag that is set whenever the reading thread may hand over at the next line: the
    /// normalizer's when it waits, one never set or always set for the others.
    #[inline(always)]
    fn flag(self) -> &'a AtomicBool {
        /// Never set, never written.
        static NEVER: AtomicBool = AtomicBool::new(false);
        /// Always set, never written.
        static ALWAYS: AtomicBool = AtomicBool::new(true);
        match self {
            HandOver::Never => &NEVER,
            HandOver::WhenWaiting(waiting) => waiting,
            HandOver::Always => &ALWAYS,
            #[cfg(test)]
            HandOver::From(_) => &ALWAYS,
        }
    }
}

/// Parses the whole lines of `batch.text` into its items and stage lines, or the first of
/// them, the rest left unparsed, as `hand_over` says; `Some` when reading must stop. `at`
/// is left at the last line parsed: the caller counts those left ([`Batch::handed_over`]).
fn parse_block(
    batch: &mut Batch,
    reader: &mut KanataReader,
    numbers: &mut StageNumbers,
    at: &mut Position,
    hand_over: HandOver,
    diag: &mut Diagnostics,
) -> Option<Result<u64, Error>> {
    let text = std::mem::take(&mut batch.text);
    let block: &ReadBuffer = &text;
    batch.first_line = at.number + 1;
    let mut into_batch = IntoBatch {
        block,
        first: batch.first_line,
        rebuilt: &mut batch.rebuilt,
        items: &mut batch.items,
        ops: &mut batch.ops,
        new_names: &mut batch.new_names,
        numbers,
        hand_over,
        hand_over_flag: hand_over.flag(),
        handed_over: None,
    };
    let stop = parse_lines(block, reader, at, diag, &mut into_batch);
    if let Some(start) = into_batch.handed_over {
        batch.unparsed = Some(Unparsed {
            first_line: at.number + 1,
            start,
            end: block.len(),
        });
    }
    batch.text = text;
    Arc::make_mut(&mut batch.text).extend_from_slice(&batch.rebuilt);
    stop
}

/// Where the parsed lines of a block go.
trait TakeLines {
    /// Takes line `number`, as parsed; `next` is where the line after it starts in the
    /// block (the block's end if it is in the next block, or if it may be skipped).
    fn take(
        &mut self,
        number: u64,
        parsed: &Line<&[u8]>,
        next: usize,
        diag: &mut Diagnostics,
    ) -> Result<(), Error>;

    /// Takes line `number`, the `L` line `label`; `next` as for [`Self::take`].
    fn take_label(
        &mut self,
        number: u64,
        label: Label<'_>,
        next: usize,
        diag: &mut Diagnostics,
    ) -> Result<(), Error>;

    /// Takes line `number`, the `I`, `R`, `W` or `C` line of `numbers`.
    fn take_numbers(
        &mut self,
        number: u64,
        numbers: Numbers,
        diag: &mut Diagnostics,
    ) -> Result<(), Error>;

    /// Takes the common `S` and `E` lines of the block from `*start` on, read straight
    /// from the block, up to the first other line (or one it leaves to the general loop):
    /// `*start`, `line_ends` and `*number` (the last line's number) move past the lines
    /// taken. An error when the reading must stop (a repair under `--strict`).
    fn take_stage_lines(
        &mut self,
        line_ends: &mut LineEnds,
        start: &mut usize,
        number: &mut u64,
        parser: &mut LineParser,
        diag: &mut Diagnostics,
    ) -> Result<(), Error>;

    /// Whether the lines of the block from `start` on are left to the normalizer, unparsed:
    /// reading stops there.
    fn hands_over(&mut self, start: usize) -> bool;
}

/// The lines of a block into the parts of its [`Batch`].
struct IntoBatch<'b> {
    block: &'b [u8],
    /// The number of the block's first line.
    first: u64,
    rebuilt: &'b mut Vec<u8>,
    items: &'b mut Vec<Item>,
    ops: &'b mut Vec<Op>,
    new_names: &'b mut Vec<Span>,
    numbers: &'b mut StageNumbers,
    hand_over: HandOver<'b>,
    /// `hand_over`'s [flag](HandOver::flag).
    hand_over_flag: &'b AtomicBool,
    /// Where the lines left to the normalizer start, once handed over.
    handed_over: Option<usize>,
}

impl IntoBatch<'_> {
    /// The `S` or `E` line `number` as an [`Op`]; `false` (nothing done) when it does not
    /// fit one.
    #[inline(always)]
    fn stage_op(&mut self, number: u64, end: bool, id: i64, lane: u32, name: &[u8]) -> bool {
        let (Ok(line), Ok(lane)) = (u32::try_from(number - self.first), u16::try_from(lane)) else {
            return false;
        };
        let (block, rebuilt, new_names) = (self.block, &mut *self.rebuilt, &mut *self.new_names);
        let new = || new_names.push(span(name, block, rebuilt));
        let Some(name) = self.numbers.number(name, block, new) else {
            return false;
        };
        self.ops.push(Op {
            value: id,
            line,
            small: lane,
            name,
            kind: if end { OpKind::End } else { OpKind::Stage },
        });
        true
    }
}

impl TakeLines for IntoBatch<'_> {
    #[inline(always)]
    fn take(
        &mut self,
        number: u64,
        parsed: &Line<&[u8]>,
        _next: usize,
        _diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        if let Line::Command(Command::Stage {
            end,
            id,
            lane,
            name,
        }) = *parsed
        {
            if self.stage_op(number, end, id, lane, name) {
                return Ok(());
            }
        }
        let (block, rebuilt) = (self.block, &mut *self.rebuilt);
        self.items.push(Item {
            number,
            parsed: parsed.map(|piece| span(piece, block, rebuilt)),
        });
        Ok(())
    }

    #[inline(always)]
    fn take_label(
        &mut self,
        number: u64,
        label: Label<'_>,
        _next: usize,
        _diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let text = span(label.text, self.block, self.rebuilt);
        // A line number that fits no op (never, in blocks of `BLOCK`): as an item.
        let Ok(line) = u32::try_from(number - self.first) else {
            self.items.push(Item {
                number,
                parsed: label.line().map(|_| text),
            });
            return Ok(());
        };
        self.ops.push(Op {
            value: label.id,
            line,
            small: u16::from(label.kind),
            name: 0,
            kind: OpKind::Label,
        });
        self.ops.push(Op {
            value: i64::from(text.start) | i64::from(text.len) << 32,
            line,
            small: 0,
            name: 0,
            kind: OpKind::Cycle,
        });
        Ok(())
    }

    #[inline(always)]
    fn take_numbers(
        &mut self,
        number: u64,
        numbers: Numbers,
        _diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let line = u32::try_from(number - self.first).ok();
        match line.and_then(|line| Op::of_numbers(numbers, line)) {
            Some((op, second)) => {
                // Both written, the second dropped again for a `C`: no branch on the
                // command.
                self.ops.push(op);
                self.ops.push(second);
                self.ops.truncate(self.ops.len() + op.width() - 2);
            }
            None => self.items.push(Item {
                number,
                parsed: Line::Command(numbers.command()),
            }),
        }
        Ok(())
    }

    #[inline(always)]
    fn take_stage_lines(
        &mut self,
        line_ends: &mut LineEnds,
        start: &mut usize,
        number: &mut u64,
        parser: &mut LineParser,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let block = self.block;
        // Each line of the block has a byte, so once the first fits the op's line number,
        // every line after it does (see `numbered`).
        let Ok(line) = u32::try_from(*number + 1 - self.first) else {
            return Ok(());
        };
        if u32::try_from(block.len()).is_err() || line.checked_add(block.len() as u32).is_none() {
            return Ok(());
        }
        take_stage_lines(self, block, line_ends, start, number, parser, diag)
    }

    #[inline(always)]
    fn hands_over(&mut self, start: usize) -> bool {
        // One load on the way of every line, whatever `hand_over` says, rather than a jump
        // on it; loaded before the swap, which would take the flag's cache line from the
        // normalizer on every call.
        if !self.hand_over_flag.load(Ordering::Relaxed) {
            return false;
        }
        let now = match self.hand_over {
            HandOver::Never => false,
            HandOver::Always => true,
            HandOver::WhenWaiting(waiting) => waiting.swap(false, Ordering::Relaxed),
            #[cfg(test)]
            HandOver::From(offset) => start >= offset,
        };
        if now {
            self.handed_over = Some(start);
        }
        now
    }
}

impl StageLineSink for IntoBatch<'_> {
    #[inline(always)]
    fn short_number(&self, window: &[u8; 32], name_start: usize, name_end: usize) -> Option<u8> {
        self.numbers.short_number(window, name_start, name_end)
    }

    // The commonest lines go the shortest way, straight to an op.
    #[inline(always)]
    fn numbered(
        &mut self,
        stage: &StageLine,
        name: u8,
        number: u64,
        _diag: &mut Diagnostics,
    ) -> Result<bool, Error> {
        let Ok(lane) = u16::try_from(stage.lane) else {
            return Ok(false);
        };
        self.ops.push(Op {
            value: stage.id,
            // Fits: `IntoBatch::take_stage_lines` checked it for the whole block.
            line: (number - self.first) as u32,
            small: lane,
            name,
            kind: if stage.end {
                OpKind::End
            } else {
                OpKind::Stage
            },
        });
        Ok(true)
    }

    // Inlined: out of line, the call cost the padded logs more than the canonical ones
    // gained.
    #[inline(always)]
    fn other(
        &mut self,
        stage: StageLine,
        window: &[u8; 32],
        at: usize,
        len: usize,
        number: u64,
        parser: &mut LineParser,
        diag: &mut Diagnostics,
    ) -> Result<bool, Error> {
        // A short name numbered already (a padded line's, most often) needs no more than
        // the commonest lines do.
        let short = self.short_number(window, stage.name_start, stage.name_end);
        let taken = match short {
            Some(name) => self.numbered(&stage, name, number, diag)?,
            None => false,
        };
        if !taken {
            let name = &self.block[at + stage.name_start..at + stage.name_end];
            if !self.stage_op(number, stage.end, stage.id, stage.lane, name) {
                return Ok(false);
            }
        }
        if parser.report_stage_line(window, len, &stage, number, diag) {
            if let Some(error) = strict_error(diag) {
                return Err(error);
            }
        }
        Ok(true)
    }
}

/// Where [`take_stage_lines`] hands the `S` and `E` lines it reads from a block.
trait StageLineSink {
    /// The number of the name from `name_start` to `name_end` in `window`, if it is a short
    /// name numbered already.
    fn short_number(&self, window: &[u8; 32], name_start: usize, name_end: usize) -> Option<u8>;

    /// Takes line `number`, read by `read_plain_stage_line` as `stage`, its short name
    /// numbered `name`; `false` (nothing done) when it leaves it to [`Self::other`].
    fn numbered(
        &mut self,
        stage: &StageLine,
        name: u8,
        number: u64,
        diag: &mut Diagnostics,
    ) -> Result<bool, Error>;

    /// Takes line `number`, the `len` bytes at `at` in the block (at the start of `window`),
    /// read as `stage`: the padded lines, the new names, the long ones. `false` (nothing
    /// done) when it is no stage line taken here, left to the general loop; an error when
    /// the reading must stop, the line taken.
    #[allow(clippy::too_many_arguments)]
    fn other(
        &mut self,
        stage: StageLine,
        window: &[u8; 32],
        at: usize,
        len: usize,
        number: u64,
        parser: &mut LineParser,
        diag: &mut Diagnostics,
    ) -> Result<bool, Error>;
}

/// [`TakeLines::take_stage_lines`] for either sink: a loop of its own, which keeps in
/// registers only what these lines need (the general loop around every kind of line keeps
/// most of its state on the stack). The commonest lines (those `read_plain_stage_line`
/// reads, with a short name numbered already) take the shortest way; in a batch, so do the
/// padded ones `read_stage_line` reads (see `IntoBatch::other`).
///
/// Whether `read_plain_stage_line` is tried first is as [`LineParser::end_block`] decided
/// for the block: a loop of each kind ([`take_stage_lines_with`]) rather than a flag in the
/// loop, which the loop had no register left for (7 instructions a line).
///
/// Inlined into the general loop by both sinks: called, it set up its state again for each
/// run of stage lines (80 to 115 instructions, and runs are 3 to 6 lines long), which cost
/// more than the inlined loop loses to the general loop's registers.
#[inline(always)]
fn take_stage_lines(
    sink: &mut impl StageLineSink,
    block: &[u8],
    line_ends: &mut LineEnds,
    start: &mut usize,
    number: &mut u64,
    parser: &mut LineParser,
    diag: &mut Diagnostics,
) -> Result<(), Error> {
    if parser.plain_first() {
        take_stage_lines_with::<true>(sink, block, line_ends, start, number, parser, diag)
    } else {
        take_stage_lines_with::<false>(sink, block, line_ends, start, number, parser, diag)
    }
}

/// [`take_stage_lines`], `read_plain_stage_line` tried first or not.
#[inline(always)]
fn take_stage_lines_with<const PLAIN_FIRST: bool>(
    sink: &mut impl StageLineSink,
    block: &[u8],
    line_ends: &mut LineEnds,
    start: &mut usize,
    number: &mut u64,
    parser: &mut LineParser,
    diag: &mut Diagnostics,
) -> Result<(), Error> {
    // In locals, kept in registers, rather than behind the references.
    let (mut at, mut last, mut ends) = (*start, *number, line_ends.clone());
    let taken = loop {
        let Some(end) = ends.peek() else {
            break Ok(());
        };
        let Some(window) = block[at..].first_chunk::<32>() else {
            break Ok(());
        };
        let len = end - at;
        let plain = if PLAIN_FIRST {
            read_plain_stage_line(window, len)
        } else {
            None
        };
        // The error the reading stops at, after the line that made it.
        let mut stop = None;
        if let Some(stage) = &plain {
            if let Some(name) = sink.short_number(window, stage.name_start, len) {
                match sink.numbered(stage, name, last + 1, diag) {
                    Ok(true) => {
                        last += 1;
                        at = end + 1;
                        ends.take_peeked();
                        continue;
                    }
                    Ok(false) => {}
                    Err(error) => stop = Some(error),
                }
            }
        }
        if stop.is_none() {
            let stage = match plain {
                Some(stage) => stage,
                None => {
                    let Some(stage) = parser.read_stage_line(window, len) else {
                        break Ok(());
                    };
                    parser.read_by_every_form(&stage, len);
                    stage
                }
            };
            match sink.other(stage, window, at, len, last + 1, parser, diag) {
                Ok(true) => {}
                Ok(false) => break Ok(()),
                Err(error) => stop = Some(error),
            }
        }
        last += 1;
        at = end + 1;
        ends.take_peeked();
        if let Some(error) = stop {
            break Err(error);
        }
    };
    (*start, *number, *line_ends) = (at, last, ends);
    taken
}

/// The lines of a block straight to the normalizer, which parses the blocks the reading
/// thread leaves it: no batch between them, the stage names numbered (by a numbering of the
/// normalizer's own parser) so that the normalizer finds the stage by indexing.
struct IntoNormalizer<'b, W: Write + Send + 'static> {
    normalizer: &'b mut KanataNormalizer<W>,
    block: &'b [u8],
    numbers: &'b mut StageNumbers,
}

impl<W: Write + Send + 'static> TakeLines for IntoNormalizer<'_, W> {
    #[inline(always)]
    fn take(
        &mut self,
        number: u64,
        parsed: &Line<&[u8]>,
        next: usize,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        // A label is written at once when the next line is known to be a command, which no
        // label goes on into (Q8); held for the next line otherwise, copied.
        let label_ends = || starts_a_command(self.block.get(next..).unwrap_or_default());
        self.normalizer
            .parsed(parsed, |piece| piece, label_ends, number, diag)
    }

    #[inline(always)]
    fn take_label(
        &mut self,
        number: u64,
        label: Label<'_>,
        next: usize,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        self.take(number, &label.line(), next, diag)
    }

    #[inline(always)]
    fn take_numbers(
        &mut self,
        number: u64,
        numbers: Numbers,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        take_numbers(self.normalizer, numbers, number, diag)
    }

    #[inline(always)]
    fn take_stage_lines(
        &mut self,
        line_ends: &mut LineEnds,
        start: &mut usize,
        number: &mut u64,
        parser: &mut LineParser,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let block = self.block;
        take_stage_lines(self, block, line_ends, start, number, parser, diag)
    }

    #[inline(always)]
    fn hands_over(&mut self, _start: usize) -> bool {
        false
    }
}

// Each line's stage handed on at once.
impl<W: Write + Send + 'static> StageLineSink for IntoNormalizer<'_, W> {
    #[inline(always)]
    fn short_number(&self, window: &[u8; 32], name_start: usize, name_end: usize) -> Option<u8> {
        self.numbers.short_number(window, name_start, name_end)
    }

    #[inline(always)]
    fn numbered(
        &mut self,
        stage: &StageLine,
        name: u8,
        number: u64,
        diag: &mut Diagnostics,
    ) -> Result<bool, Error> {
        self.normalizer
            .numbered_stage(stage.end, stage.id, stage.lane, name, number, diag)?;
        strict_error(diag).map_or(Ok(true), Err)
    }

    #[inline(always)]
    fn other(
        &mut self,
        stage: StageLine,
        window: &[u8; 32],
        at: usize,
        len: usize,
        number: u64,
        parser: &mut LineParser,
        diag: &mut Diagnostics,
    ) -> Result<bool, Error> {
        let block = self.block;
        let name = &block[at + stage.name_start..at + stage.name_end];
        parser.report_stage_line(window, len, &stage, number, diag);
        let normalizer = &mut *self.normalizer;
        let new = || normalizer.number_stages(std::iter::once(name));
        match self.numbers.number(name, block, new) {
            Some(name) => self
                .normalizer
                .numbered_stage(stage.end, stage.id, stage.lane, name, number, diag)?,
            None => {
                let line = Line::Command(Command::Stage {
                    end: stage.end,
                    id: stage.id,
                    lane: stage.lane,
                    name,
                });
                self.normalizer
                    .parsed(&line, |piece| piece, || false, number, diag)?;
            }
        }
        strict_error(diag).map_or(Ok(true), Err)
    }
}

/// Hands `normalizer` the `I`, `R`, `W` or `C` line `number` of `numbers`, as [`Op::take`]
/// does its op's.
#[inline(always)]
fn take_numbers<W: Write + Send + 'static>(
    normalizer: &mut KanataNormalizer<W>,
    numbers: Numbers,
    number: u64,
    diag: &mut Diagnostics,
) -> Result<(), Error> {
    let Numbers {
        first,
        second,
        third,
        ..
    } = numbers;
    match numbers.letter {
        b'I' => {
            let sim_id = SimId::from(i128::from(second));
            normalizer.insn_line(first, sim_id, third, number, diag)
        }
        b'R' => {
            let kind = if numbers.typed {
                RetireType::Value(third)
            } else {
                RetireType::Empty
            };
            normalizer.retire_line(first, second, kind, number, diag)
        }
        // The readers checked that the type fits.
        b'W' => normalizer.dep_line(first, second, third as u32, number, diag),
        _ => normalizer.cycle_line(first, number, diag),
    }
}

/// Hands the lines of a parsed batch to the normalizer in their order: the items, and
/// before each the ops that came before it.
#[inline(always)]
fn normalize_batch<W: Write + Send + 'static>(
    normalizer: &mut KanataNormalizer<W>,
    batch: &Batch,
    diag: &mut Diagnostics,
) -> Result<(), Error> {
    let text: &[u8] = &batch.text;
    normalizer.number_stages(batch.new_names.iter().map(|name| name.of(text)));
    let items = &batch.items;
    let ops = &batch.ops;
    let mut next_op = 0;
    for (at, item) in items.iter().enumerate() {
        next_op = normalize_ops(normalizer, batch, next_op, Some(item), diag)?;
        let label_ends = || label_ends(batch, ops.get(next_op), items.get(at + 1));
        let text_of = |span: Span| span.of(text);
        normalizer.parsed(&item.parsed, text_of, label_ends, item.number, diag)?;
        if let Some(error) = strict_error(diag) {
            return Err(error);
        }
    }
    normalize_ops(normalizer, batch, next_op, None, diag)?;
    Ok(())
}

/// Hands the normalizer the ops of `batch` from `next` on that come before `item` (all
/// that are left without one); returns where they end.
#[inline(always)]
fn normalize_ops<W: Write + Send + 'static>(
    normalizer: &mut KanataNormalizer<W>,
    batch: &Batch,
    mut next: usize,
    item: Option<&Item>,
    diag: &mut Diagnostics,
) -> Result<usize, Error> {
    let until = item.map_or(u64::MAX, |item| item.number - batch.first_line);
    let mut straight = normalizer.stages_go_straight();
    while let Some(&op) = batch.ops.get(next) {
        if u64::from(op.line) >= until {
            break;
        }
        if op.kind > OpKind::End {
            let second = batch.ops.get(next + 1).copied().unwrap_or(op);
            let number = batch.first_line + u64::from(op.line);
            op.take(second, normalizer, (batch, next, item), number, diag)?;
            if let Some(error) = strict_error(diag) {
                return Err(error);
            }
            straight = normalizer.stages_go_straight();
            next += op.width();
            continue;
        }
        let (end, lane) = (op.kind == OpKind::End, u32::from(op.small));
        // The straight way reports nothing, so there is no --strict error to look for.
        if !(straight && normalizer.numbered_stage_straight(end, op.value, lane, op.name)?) {
            let number = batch.first_line + u64::from(op.line);
            normalizer.numbered_stage(end, op.value, lane, op.name, number, diag)?;
            if let Some(error) = strict_error(diag) {
                return Err(error);
            }
            straight = normalizer.stages_go_straight();
        }
        next += 1;
    }
    Ok(next)
}

/// Parses the lines of `block` and hands each to `take` with its number; `Some` when
/// reading must stop.
fn parse_lines(
    block: &[u8],
    reader: &mut KanataReader,
    at: &mut Position,
    diag: &mut Diagnostics,
    take: &mut impl TakeLines,
) -> Option<Result<u64, Error>> {
    let first = at.number;
    let stop = parse_lines_unsettled(block, reader, at, diag, take);
    reader.parser.settle(diag);
    reader.parser.end_block(at.number - first);
    stop
}

/// [`parse_lines`], leaving the reports the parser counts itself with the parser.
#[inline(always)]
fn parse_lines_unsettled<T: TakeLines>(
    block: &[u8],
    reader: &mut KanataReader,
    at: &mut Position,
    diag: &mut Diagnostics,
    take: &mut T,
) -> Option<Result<u64, Error>> {
    let mut start = 0;
    let mut line_ends = LineEnds::new(block);
    let mut plain = reader.reads_plain_lines();
    // The normalizer's parse starts once the header is behind, prefix (Q18) or not.
    let mut past_header = !reader.in_header;
    while start < block.len() {
        if past_header && take.hands_over(start) {
            break;
        }
        if plain && starts_stage_line(&block[start..]) {
            let parser = &mut reader.parser;
            let taken =
                take.take_stage_lines(&mut line_ends, &mut start, &mut at.number, parser, diag);
            if let Err(error) = taken {
                return Some(Err(error));
            }
            if start >= block.len() {
                break;
            }
        }
        let (end, next) = match line_ends.next() {
            Some(end) => (end, end + 1),
            None => {
                at.unterminated = true;
                (block.len(), block.len())
            }
        };
        at.number += 1;
        let number = at.number;
        let line_start = start;
        let mut line = &block[start..end];
        start = next;
        if let [rest @ .., b'\r'] = line {
            line = rest;
            diag.report(Rule::Q3, number, || "CR LF line end".to_owned());
        }
        let mut parsed = Line::Blank;
        // `I`, `R`, `W`, `C` and `L` lines from the masks of their bytes, as the stage lines
        // are.
        let window = block[line_start..].first_chunk::<32>();
        let from_masks = match window {
            Some(window) if plain => {
                let parser = &mut reader.parser;
                parser.parse_number_line(window, line, number, diag)
            }
            _ => FromMasks::No,
        };
        // The `S` and `E` lines `take_stage_lines` leaves (and every line until the header
        // is behind or while a prefix is taken off) are read here with the others.
        let read = match from_masks {
            FromMasks::Numbers(numbers) => {
                if let Err(error) = take.take_numbers(number, numbers, diag) {
                    return Some(Err(error));
                }
                if let Some(error) = strict_error(diag) {
                    return Some(Err(error));
                }
                // Plain: nothing to look up again.
                continue;
            }
            FromMasks::Label(label) => {
                if let Err(error) = take.take_label(number, label, start, diag) {
                    return Some(Err(error));
                }
                if let Some(error) = strict_error(diag) {
                    return Some(Err(error));
                }
                // Plain, as above.
                continue;
            }
            FromMasks::No => reader.read(line, number, diag, &mut parsed),
        };
        match read {
            Ok(false) => {}
            // By reference, here and on to the normalizer (see `KanataReader::read`).
            Ok(true) => {
                if let Line::CycleOutOfRange(cycle) = parsed {
                    let message = crate::kanata::parse::cycle_out_of_range(cycle);
                    return Some(Err(Error::at_line(number, message)));
                }
                // With a prefix to take off, the next line may be skipped (Q18): not known.
                let next = if plain { start } else { block.len() };
                if let Err(error) = take.take(number, &parsed, next, diag) {
                    return Some(Err(error));
                }
            }
            Err(error) => return Some(Err(error)),
        }
        // A repair under --strict ends the conversion at the line that needed it.
        if let Some(error) = strict_error(diag) {
            return Some(Err(error));
        }
        // Once plain, for good: the header is behind for the rest of the input, and the
        // prefix never changes. Looked up again only until then, with the header.
        if !plain {
            plain = reader.reads_plain_lines();
            past_header = !reader.in_header;
        }
    }
    None
}

/// The end of the input: the checks that need all of it.
fn end_of_input(
    at: &Position,
    reader: &KanataReader,
    diag: &mut Diagnostics,
) -> Result<u64, Error> {
    if reader.in_header {
        return Err(Error::new(
            crate::ErrorKind::Input,
            "empty input: not a Kanata log",
        ));
    }
    if at.unterminated {
        diag.report(Rule::Q3, at.number, || {
            "no line end after the last line".to_owned()
        });
        if let Some(error) = strict_error(diag) {
            return Err(error);
        }
    }
    Ok(at.number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kanata::normalize::Repairs;
    use kanata_writer::WriterBuilder;

    fn convert(input: Vec<u8>) -> (Vec<u8>, Diagnostics) {
        let (output, diag) = convert_sharing(input, Sharing::WhenIdle, false);
        (output.unwrap(), diag)
    }

    fn convert_sharing(
        input: Vec<u8>,
        sharing: Sharing,
        strict: bool,
    ) -> (Result<Vec<u8>, String>, Diagnostics) {
        convert_prefixed(input, sharing, strict, None)
    }

    /// [`convert_sharing`] of a log whose lines have `prefix` to take off (Q18).
    fn convert_prefixed(
        input: Vec<u8>,
        sharing: Sharing,
        strict: bool,
        prefix: Option<&[u8]>,
    ) -> (Result<Vec<u8>, String>, Diagnostics) {
        let normalizer =
            KanataNormalizer::new(WriterBuilder::new(), Vec::new(), Repairs::default());
        let mut diag = Diagnostics::new(3, strict);
        let progress = Progress::new(false, None, "test", None);
        let result = run(
            Box::new(std::io::Cursor::new(input)),
            normalizer,
            prefix.map(<[u8]>::to_vec),
            &mut diag,
            &progress,
            sharing,
        );
        let output = result
            .map(|(finished, _)| finished.output)
            .map_err(|e| e.to_string());
        (output, diag)
    }

    /// A log of several blocks with repairs on both sides of every block edge.
    fn sloppy_blocks() -> Vec<u8> {
        sloppy_log(120_000)
    }

    /// A log of `ids` instructions, three to five lines each, with repairs (Q1, Q3, Q8, Q9,
    /// Q20).
    fn sloppy_log(ids: usize) -> Vec<u8> {
        let mut input = b"Kanata\t0004\nC=\t0\n".to_vec();
        for id in 0..ids {
            let line = match id % 5 {
                0 => format!("I\t{id:8}\t{id}\t0\r\nS\t{id}\t0\tF\nR\t{id}\t{id}\t0\n"),
                1 => format!("I\t{id}\t{id}\t0\nL\t{id}\t0\tx\ty\nR\t{id}\t{id}\t0\n"),
                2 => format!("I\t{id}\t{id}\t0\n# comment\nR\t{id}\t{id}\t0\nC\t1\n"),
                3 => format!("I\t{id}\t{id}\t0\nL\t{id}\t0\ta\nb\nR\t{id}\t{id}\t0\n"),
                _ => format!("I\t{id}\t{id}\t0\nS\t{id}\t01\tX\nR\t{id}\t{id}\t0\n"),
            };
            input.extend_from_slice(line.as_bytes());
        }
        input
    }

    #[test]
    fn blocks_parsed_by_the_normalizer_give_the_same_output_and_reports() {
        let input = sloppy_blocks();
        assert!(input.len() > 3 * BLOCK);
        let (alone, alone_diag) = convert_sharing(input.clone(), Sharing::WhenIdle, false);
        let (shared, shared_diag) = convert_sharing(input, Sharing::All, false);
        assert_eq!(alone.unwrap(), shared.unwrap());
        assert_eq!(format!("{alone_diag:?}"), format!("{shared_diag:?}"));
        for rule in [Rule::Q1, Rule::Q3, Rule::Q8, Rule::Q9, Rule::Q20] {
            assert!(shared_diag.rules().contains_key(&rule), "{rule:?}");
        }
    }

    #[test]
    fn a_block_handed_over_at_any_line_gives_the_same_output_and_reports() {
        // The reading thread hands the rest of its block to the normalizer at whatever line
        // it is when the normalizer waits: between a label and its next line (Q8), after a
        // CR LF line (Q3), before a lane written `01` (Q20). Every report is kept, with the
        // number of its line, in the order of the lines (as `run` merges the threads'
        // reports: here both parse into one `Diagnostics`, one part of a block after the
        // other).
        let input = sloppy_log(25_000);
        assert!(input.len() > 3 * BLOCK);
        let convert = |blocks| convert_with_every_report(&input, blocks);
        let (expected, expected_reports) = convert(Blocks::Parsed);
        // Each split is at the start of the line with the byte `at` past the needle's start.
        for (needle, at) in [(&b"\ta\nb\n"[..], 3), (b"\r\nS", 2), (b"\t01\tX", 0)] {
            let found = BLOCK / 2 + memchr::memmem::find(&input[BLOCK / 2..], needle).unwrap();
            let split = memchr::memrchr(b'\n', &input[..=found + at]).unwrap() + 1;
            let (output, reports) = convert(Blocks::Split(split));
            assert!(output == expected, "split at {split}");
            assert_eq!(reports, expected_reports, "split at {split}");
        }
    }

    /// The reports of a conversion: for each rule, its count and every example (its line
    /// and message).
    type EveryReport = Vec<(Rule, u64, Vec<(u64, String)>)>;

    /// `input` converted a block at a time, `blocks` parsed as it says: the output, and
    /// every report.
    fn convert_with_every_report(input: &[u8], blocks: Blocks) -> (Vec<u8>, EveryReport) {
        let normalizer =
            KanataNormalizer::new(WriterBuilder::new(), Vec::new(), Repairs::default());
        let mut diag = Diagnostics::new(usize::MAX, false);
        let finished = convert_in_blocks(input, normalizer, blocks, &mut diag);
        let reports = (diag.rules().iter())
            .map(|(rule, report)| {
                let mut examples: Vec<_> = (report.examples.iter())
                    .map(|example| (example.line, example.message.clone()))
                    .collect();
                examples.sort();
                (*rule, report.count, examples)
            })
            .collect();
        (finished.unwrap().unwrap().output, reports)
    }

    /// Asserts that each of `rules` was reported among `reports`.
    fn assert_reported(reports: &EveryReport, rules: &[Rule]) {
        for rule in rules {
            assert!(reports.iter().any(|report| report.0 == *rule), "{rule:?}");
        }
    }

    #[test]
    fn labels_cross_as_ops_and_end_or_go_on_as_the_next_line_says() {
        // A label line crosses as an op; whether it is written at once or held for a
        // continuation (Q8) depends on the line after it: an op (a stage line, another
        // label, a number line), an item (a blank line, a continuation, a label with a TAB
        // in its text, Q9), or nothing yet (the end of a block). Every way of sharing the
        // parse gives what the normalizer's own parse gives, and each label its text.
        let mut input = b"Kanata\t0004\nC=\t0\n".to_vec();
        let mut ids = 0u64;
        while input.len() < 3 * BLOCK {
            let id = ids;
            ids += 1;
            let after = match id % 7 {
                0 => format!("S\t{id}\t0\tF\n"),
                1 => format!("L\t{id}\t1\tdetail {id}\n"),
                2 => "C\t1\n".to_owned(),
                3 => "\n".to_owned(),
                4 => format!("more text {id}\n"),
                5 => format!("L\t{id}\t1\twith\ta TAB\n"),
                _ => format!("L {id} 1 spaced {id}\n"),
            };
            let lines = format!(
                "I\t{id}\t{id}\t0\nS\t{id}\t0\tF\nL\t{id}\t0\tlabel {id}\n{after}R\t{id}\t{id}\t0\n"
            );
            input.extend_from_slice(lines.as_bytes());
        }
        let (own, own_reports) = convert_with_every_report(&input, Blocks::Unparsed);
        for blocks in EVERY_SHARE {
            let (output, reports) = convert_with_every_report(&input, blocks);
            assert!(output == own, "{blocks:?}");
            assert_eq!(reports, own_reports, "{blocks:?}");
        }
        let text = String::from_utf8(own).unwrap();
        assert!(
            text.contains("\tlabel 4\\nmore text 4\n"),
            "Q8's continuation"
        );
        assert!(text.contains("\tlabel 0\n"), "a label before a stage line");
        assert!(text.contains("\tspaced 6\n"), "a label separated by spaces");
        assert_reported(&own_reports, &[Rule::Q3, Rule::Q8, Rule::Q9, Rule::Q19]);
    }

    #[test]
    fn number_lines_that_fit_no_op_cross_as_items_with_the_same_result() {
        // A thread, a retire type or a dependency type past 16 bits fits no op: such lines
        // cross as items, among the lines that cross as ops (untyped `R`, `C`, padded and
        // space-separated lines, Q1, Q19), and give what the normalizer's own parse gives.
        let mut input = b"Kanata\t0004\nC=\t0\n".to_vec();
        for id in 0..20_000u64 {
            let thread = if id % 7 == 0 { 70_000 } else { id % 3 };
            let retire = match id % 4 {
                0 => " 70000".to_owned(),
                1 => String::new(),
                _ => format!(" {}", id % 2),
            };
            let dep = if id % 5 == 0 { 70_000 } else { 1 };
            let line = format!(
                "I\t{id}\t{}\t{thread}\nS\t {id} \t0\tF\nW {id} {} {dep}\nC\t1\nR {id} {id}{retire}\n",
                id + 100,
                id.saturating_sub(1),
            );
            input.extend_from_slice(line.as_bytes());
        }
        assert!(input.len() > 3 * BLOCK);
        let (parsed, parsed_reports) = convert_with_every_report(&input, Blocks::Parsed);
        let (own, own_reports) = convert_with_every_report(&input, Blocks::Unparsed);
        assert!(parsed == own);
        assert_eq!(parsed_reports, own_reports);
        // The wide numbers were kept.
        let text = String::from_utf8(parsed).unwrap();
        assert!(
            text.contains("\t100\t70000\n"),
            "the thread of the first `I`"
        );
        assert_reported(&parsed_reports, &[Rule::Q1, Rule::Q19]);
    }

    #[test]
    fn q8_a_label_goes_on_past_a_line_without_the_prefix_in_either_parse() {
        // The normalizer's own parse writes a label at once when the next line of the block
        // is a command; a line without the prefix is skipped (Q18), so it tells nothing,
        // even when it looks like a command: the label's next line is the one after it.
        let mut input = b"> Kanata\t0004\n> C=\t0\n".to_vec();
        let ids = 40_000;
        for id in 0..ids {
            let lines = format!(
                "> I\t{id}\t{id}\t0\n> L\t{id}\t0\tfirst\nS\t{id}\t0\tF\n> second\n\
                 > S\t{id}\t0\tF\n> R\t{id}\t{id}\t0\n"
            );
            input.extend_from_slice(lines.as_bytes());
        }
        assert!(input.len() > 3 * BLOCK);
        let prefix = Some(&b">"[..]);
        let (alone, alone_diag) = convert_prefixed(input.clone(), Sharing::WhenIdle, false, prefix);
        let (shared, shared_diag) = convert_prefixed(input, Sharing::All, false, prefix);
        let shared = shared.unwrap();
        assert_eq!(alone.unwrap(), shared);
        assert_eq!(format!("{alone_diag:?}"), format!("{shared_diag:?}"));
        assert_eq!(shared_diag.rules()[&Rule::Q8].count, ids);
        assert_eq!(shared_diag.rules()[&Rule::Q18].count, ids);
        assert!(!shared_diag.rules().contains_key(&Rule::Q3));
        let label = b"\nL\t0\t0\tfirst\\nsecond\n";
        assert!(
            shared.windows(label.len()).any(|window| window == label),
            "{}",
            String::from_utf8_lossy(&shared[..300])
        );
    }

    #[test]
    fn q1_on_every_line_is_counted_exactly_once_its_examples_are_taken() {
        // Q1 reports past the examples are counted by the parser and handed over per block:
        // none may be lost or counted twice, whichever thread parsed the block.
        let mut input = b"Kanata\t0004\nC=\t0\n".to_vec();
        let mut padded = 0;
        for id in 0..150_000 {
            input.extend_from_slice(format!("I\t{id:7}\t{id}\t0\nR\t{id}\t{id}\t0\t\n").as_bytes());
            padded += 2;
        }
        assert!(input.len() > 3 * BLOCK);
        for sharing in [Sharing::WhenIdle, Sharing::All] {
            let (output, diag) = convert_sharing(input.clone(), sharing, false);
            assert!(output.is_ok());
            let q1 = &diag.rules()[&Rule::Q1];
            assert_eq!(q1.count, padded, "{sharing:?}");
            let lines: Vec<u64> = q1.examples.iter().map(|e| e.line).collect();
            assert_eq!(lines, [3, 4, 5], "{sharing:?}");
        }
    }

    #[test]
    fn stage_names_are_numbered_in_order_and_short_ones_found_in_a_slot_of_their_own() {
        // 300 names, short and long: numbers in the order of their first line, the same
        // number each time after, none past 256; the short names found by one probe.
        let names: Vec<String> = (0..300)
            .map(|i| match i % 3 {
                0 => format!("S{i}"),
                1 => format!("{}", i * 7919 % 1000),
                _ => format!("long_name_{i}"),
            })
            .collect();
        let mut block = Vec::new();
        let mut spans = Vec::new();
        for name in &names {
            spans.push(block.len()..block.len() + name.len());
            block.extend_from_slice(name.as_bytes());
            block.push(b'\n');
        }
        block.extend_from_slice(&[b'\n'; 8]);
        let mut numbers = StageNumbers::default();
        let mut new = Vec::new();
        for (pass, order) in [(0..300).collect::<Vec<_>>(), (0..300).rev().collect()]
            .iter()
            .enumerate()
        {
            for &i in order {
                let name = &block[spans[i].clone()];
                let numbered = numbers.number(name, &block, || new.push(i));
                assert_eq!(numbered, u8::try_from(i).ok(), "{pass} {i}");
            }
        }
        assert_eq!(new, (0..256).collect::<Vec<_>>());
        let held: Vec<u64> = (numbers.short.iter().map(|&(key, _)| key))
            .filter(|&key| key != 0)
            .collect();
        assert_eq!(held.len(), SHORT_NAMES);
        for (i, span) in spans.iter().enumerate() {
            let mut window = [b'\n'; 32];
            window[..span.len()].copy_from_slice(&block[span.clone()]);
            let short = numbers.short_number(&window, 0, span.len());
            // The first short names are held: two in every three names.
            let held = i < SHORT_NAMES * 3 / 2 && i % 3 != 2;
            assert_eq!(short, held.then_some(i as u8), "{i}");
        }
    }

    #[test]
    fn a_parsed_line_takes_three_quarters_of_a_cache_line() {
        // Batches of items cross from one core to the other: every byte of an item is a
        // cache miss on the normalizer's side. 48 bytes: a line number and a parsed line,
        // its text in spans of the batch's text.
        assert!(std::mem::size_of::<Item>() <= 48);
        assert_eq!(std::mem::size_of::<Span>(), 8);
        // Most lines, `S` and `E`, in a quarter of a cache line.
        assert_eq!(std::mem::size_of::<Op>(), 16);
    }

    #[test]
    fn q3_trailing_comments_are_found_on_every_line_of_every_block() {
        let mut input = b"Kanata\t0004\nC=\t0 // start\n".to_vec();
        let mut commented = 1;
        for id in 0..100_000 {
            input.extend_from_slice(format!("I\t{id}\t{id}\t0\n").as_bytes());
            // Slashes in a label are text, not a comment.
            input.extend_from_slice(format!("L\t{id}\t0\ta // b/c\n").as_bytes());
            if id % 7 == 0 {
                input.extend_from_slice(format!("S\t{id}\t0\tX // {id}\n").as_bytes());
                commented += 1;
            } else {
                input.extend_from_slice(format!("S\t{id}\t0\tX/Y\n").as_bytes());
            }
            input.extend_from_slice(format!("R\t{id}\t{id}\t0\n").as_bytes());
        }
        assert!(input.len() > 3 * BLOCK);
        let (output, diag) = convert(input);
        let text = String::from_utf8(output).unwrap();
        assert_eq!(diag.rules()[&Rule::Q3].count, commented);
        assert_eq!(text.matches("\tX\n").count(), 2 * 14_286, "S and E of X");
        assert_eq!(text.matches("\tX/Y\n").count(), 2 * (100_000 - 14_286));
        assert_eq!(text.matches("a // b/c\n").count(), 100_000);
    }

    #[test]
    fn an_error_early_in_a_long_input_ends_the_run_instead_of_waiting_for_the_reader() {
        for sharing in [Sharing::WhenIdle, Sharing::All] {
            // An `S` for an undeclared id: a repair only the normalizer sees (Q12), while the
            // reader has blocks of input left to hand over.
            let mut input = b"Kanata\t0004\nC=\t0\nS\t5\t0\tX\n".to_vec();
            while input.len() < 20 * BLOCK {
                input.extend_from_slice(b"C\t1\n");
            }
            let (done_tx, done_rx) = mpsc::channel();
            std::thread::spawn(move || {
                let _ = done_tx.send(convert_sharing(input, sharing, true).0);
            });
            let result = done_rx
                .recv_timeout(std::time::Duration::from_secs(30))
                .expect("the conversion ends");
            let error = result.unwrap_err();
            assert!(
                error.contains("line 3") && error.contains("Q12"),
                "{sharing:?}: {error}"
            );
        }
    }

    /// A canonical log of `ids` instructions, each declared and retired, several blocks
    /// long, and the number of its next line.
    fn declared_and_retired(ids: u64) -> (Vec<u8>, usize) {
        let mut input = b"Kanata\t0004\nC=\t0\n".to_vec();
        for id in 0..ids {
            input.extend_from_slice(format!("I\t{id}\t{id}\t0\nR\t{id}\t{id}\t0\n").as_bytes());
        }
        let next_line = input.iter().filter(|&&b| b == b'\n').count() + 1;
        (input, next_line)
    }

    #[test]
    fn strict_stops_at_the_first_repair_in_a_block_the_normalizer_parsed() {
        let (mut input, bad_line) = declared_and_retired(100_000);
        input.extend_from_slice(b"C\t 1\n");
        let (result, _) = convert_sharing(input, Sharing::All, true);
        let error = result.unwrap_err();
        assert!(error.contains(&format!("line {bad_line}")), "{error}");
        assert!(error.contains("Q1"), "{error}");
    }

    #[test]
    fn strict_stops_at_a_label_repair_before_the_next_lines_in_either_parse() {
        // A label for an id never declared (Q12, the normalizer's), then a padded stage line
        // (Q1, the parser's): `--strict` names the label, whichever thread parsed it.
        let (mut input, label_line) = declared_and_retired(100_000);
        input.extend_from_slice(b"I\t100000\t0\t0\nL\t5000000\t0\tx\nS\t 100000\t0\tF\n");
        for sharing in [Sharing::All, Sharing::WhenIdle] {
            let (result, _) = convert_sharing(input.clone(), sharing, true);
            let error = result.unwrap_err();
            assert!(
                error.contains(&format!("line {}", label_line + 1)),
                "{error}"
            );
            assert!(error.contains("Q12"), "{sharing:?}: {error}");
        }
    }

    #[test]
    fn lines_across_blocks_and_longer_than_a_block_are_read_whole() {
        let label = "x".repeat(BLOCK * 2 + 17);
        let mut input = b"Kanata\t0004\nC=\t0\n".to_vec();
        // Enough short lines that some cross the end of the first block.
        for id in 0..60_000 {
            input.extend_from_slice(format!("I\t{id}\t{id}\t0\nR\t{id}\t{id}\t0\n").as_bytes());
        }
        input.extend_from_slice(format!("I\t60000\t0\t0\nL\t60000\t0\t{label}\r\nC\t1").as_bytes());
        let (output, diag) = convert(input);
        let text = String::from_utf8(output).unwrap();
        assert!(text.contains(&format!("L\t60000\t0\t{label}\nC\t1\n")));
        assert_eq!(text.matches("\nR\t").count(), 60_000);
        // The CR LF line and the missing final line end, reported at their line numbers.
        let q3 = &diag.rules()[&Rule::Q3].examples;
        let lines: Vec<u64> = q3.iter().map(|e| e.line).collect();
        assert_eq!(lines, [120_004, 120_005]);
    }

    /// The batch path on one thread, for counting its instructions (BENCHMARKS.md, issue
    /// 20): the file `KANATA_PP_BATCH_INPUT` cut into blocks, each parsed into a batch's
    /// items as the reading thread does, then the items normalized as `--check` does
    /// (`KANATA_PP_BATCH_PARSE_ONLY` set: parsed only; `KANATA_PP_BATCH_UNPARSED` set: the
    /// blocks after the header parsed by the normalizer's own parser). Run under callgrind:
    ///
    /// ```sh
    /// cargo test --release -p kanata-pp --lib --no-run   # prints the test binary, BIN
    /// KANATA_PP_BATCH_INPUT=FILE valgrind --tool=callgrind BIN --ignored --exact \
    ///     kanata::read::tests::batch_path_over_a_file
    /// ```
    #[test]
    #[ignore = "a benchmark: needs KANATA_PP_BATCH_INPUT"]
    fn batch_path_over_a_file() {
        let path = std::env::var_os("KANATA_PP_BATCH_INPUT").expect("KANATA_PP_BATCH_INPUT");
        let parse_only = std::env::var_os("KANATA_PP_BATCH_PARSE_ONLY").is_some();
        let input = std::fs::read(path).expect("the input");
        let mut builder = WriterBuilder::new();
        builder
            .compression(kanata_writer::Compression::None)
            .discard(true);
        let normalizer = KanataNormalizer::new(builder, std::io::sink(), Repairs::default());
        let mut diag = Diagnostics::new(3, false);
        let blocks = if parse_only {
            Blocks::ParsedOnly
        } else if std::env::var_os("KANATA_PP_BATCH_UNPARSED").is_some() {
            Blocks::Unparsed
        } else {
            Blocks::Parsed
        };
        convert_in_blocks(&input, normalizer, blocks, &mut diag).expect("normalized");
    }

    /// Who parses the blocks of [`convert_in_blocks`].
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Blocks {
        /// The reading thread's way, into batches, which the normalizer takes.
        Parsed,
        /// As `Parsed`, and the batches are dropped unread.
        ParsedOnly,
        /// The normalizer's own way, every line after the header.
        Unparsed,
        /// The reading thread's way up to the first line this many bytes or more into the
        /// block, the normalizer's own way from there.
        Split(usize),
    }

    /// Every way the threads may share the parse of a block, the hand-over somewhere in the
    /// middle of a line of several blocks' logs among them.
    const EVERY_SHARE: [Blocks; 5] = [
        Blocks::Parsed,
        Blocks::Unparsed,
        Blocks::Split(1),
        Blocks::Split(BLOCK / 3 + 7),
        Blocks::Split(BLOCK - 40),
    ];

    /// Converts `input` a block at a time on this thread, as [`run`] does on two: the
    /// threads' work without their timing.
    fn convert_in_blocks<W: Write + Send + 'static>(
        input: &[u8],
        mut normalizer: KanataNormalizer<W>,
        blocks: Blocks,
        diag: &mut Diagnostics,
    ) -> Result<Option<Finished<W>>, Error> {
        let mut reader = KanataReader::new(None);
        let mut own = OwnParser::new(None);
        let mut numbers = StageNumbers::default();
        let mut at = Position {
            number: 0,
            eof: false,
            unterminated: false,
        };
        let mut batch = Batch::default();
        let mut start = 0;
        while start < input.len() {
            let mut end = (start + BLOCK).min(input.len());
            if end < input.len() {
                let last = memchr::memrchr(b'\n', &input[start..end]).expect("a line end");
                end = start + last + 1;
            }
            batch.clear();
            Arc::make_mut(&mut batch.text).extend_from_slice(&input[start..end]);
            start = end;
            // The lines before the one that stopped the parse are normalized first, as `run`
            // normalizes a batch before its end.
            let hand_over = match blocks {
                Blocks::Parsed | Blocks::ParsedOnly => HandOver::Never,
                Blocks::Unparsed => HandOver::Always,
                Blocks::Split(offset) if end < input.len() => HandOver::From(offset),
                Blocks::Split(_) => HandOver::Never,
            };
            let stop = parse_block(
                &mut batch,
                &mut reader,
                &mut numbers,
                &mut at,
                hand_over,
                diag,
            );
            let handed_over = batch.handed_over();
            if blocks != Blocks::ParsedOnly {
                own.normalize(&mut normalizer, &mut batch, diag)?;
            }
            if let Some(handed_over) = handed_over {
                at.number += handed_over.count();
            }
            if let Some(Err(error)) = stop {
                return Err(error);
            }
        }
        if blocks == Blocks::ParsedOnly {
            return Ok(None);
        }
        normalizer.finish(diag).map(Some)
    }

    #[test]
    fn strict_stops_at_a_padded_stage_line_among_common_ones() {
        // Line 5 is the first repair (Q1), in the middle of a run of stage lines.
        let input = b"Kanata\t0004\nC=\t0\nI\t0\t0\t0\nS\t0\t0\tF\nS\t0\t1 \tD\nE\t0\t0\tF\n";
        for blocks in EVERY_SHARE {
            let normalizer =
                KanataNormalizer::new(WriterBuilder::new(), Vec::new(), Repairs::default());
            let mut diag = Diagnostics::new(3, true);
            let Err(error) = convert_in_blocks(input, normalizer, blocks, &mut diag) else {
                panic!("{blocks:?}: no --strict error");
            };
            assert!(error.to_string().contains("line 5"), "{blocks:?}: {error}");
            assert!(error.to_string().contains("Q1"), "{blocks:?}: {error}");
        }
    }

    #[test]
    fn strict_stops_at_a_normalizer_repair_among_common_stage_lines() {
        // Line N is an `E` of a stage that is not open (Q7), in a run of common stage lines
        // after a few blocks of them; two lines on, a cycle past 64 bits stops the
        // conversion with an error of its own. The repair, the first, is what --strict
        // reports, whichever thread parsed the block.
        let mut input = b"Kanata\t0004\nC=\t0\n".to_vec();
        for id in 0..60_000 {
            input.extend_from_slice(format!("I\t{id}\t{id}\t0\nS\t{id}\t0\tF\n").as_bytes());
            input.extend_from_slice(format!("E\t{id}\t0\tF\nR\t{id}\t{id}\t0\n").as_bytes());
        }
        input.extend_from_slice(b"I\t60000\t60000\t0\nS\t60000\t0\tF\nE\t60000\t0\tX\n");
        input.extend_from_slice(b"S\t60000\t0\tD\n");
        input.extend_from_slice(b"C\t99999999999999999999999\n");
        assert!(input.len() > 3 * BLOCK);
        let line = 2 + 4 * 60_000 + 3;
        for blocks in EVERY_SHARE {
            let normalizer =
                KanataNormalizer::new(WriterBuilder::new(), Vec::new(), Repairs::default());
            let mut diag = Diagnostics::new(3, true);
            let Err(error) = convert_in_blocks(&input, normalizer, blocks, &mut diag) else {
                panic!("{blocks:?}: no --strict error");
            };
            let error = error.to_string();
            assert!(
                error.contains(&format!("line {line}")),
                "{blocks:?}: {error}"
            );
            assert!(error.contains("Q7"), "{blocks:?}: {error}");
        }
    }

    #[test]
    fn stage_lines_sent_numbered_normalize_as_the_normalizer_parsing_them_does() {
        // Every way the numbered `S` and `E` lines of a batch meet the normalizer's state:
        // before the first `C=` (Q5), after a label that may go on (Q8), with the repairs
        // that hold lines back (Q16, Q17), an `E` of a stage that is not open (Q7), more
        // names than numbers, more short names than the short table keeps, long names, lanes
        // past 16 bits. Labels whose text starts with a CR: one that is nothing else once the
        // CR LF line end is taken off (not written), one with more after it.
        let mut input = b"Kanata\t0004\nI\t0\t0\t0\nS\t0\t0\tF\nC=\t5\n".to_vec();
        // `{id}` a new id, `{p}` the one before, `{n}` one of 300 names.
        let patterns = [
            "I {id} {id} 0|L {id} 0 x|S {id} 0 F|E {id} 0 F|S {id} 0 Writeback|E {id} 0 D",
            "I {id} {id} 0|L {id} 0 a|b|S {id} 0 D|C 1",
            "S {id} 0 N{n}|E {id} 0 X|I {id} {id} 0",
            "I {id} {id} 0|S {id} 70000 F|S {id} 0 F|S {id} 0 F",
            "I {id} {id} 0|S {id} 1 F|E {id} 1 F|S {id} 1 F|C 1",
            "S {p} 0 W|E {id} 0 F|R {id} {id} 0|S {id} 0 F",
            "I {id} {id} 0|S {id} 0 N{n}|L {id} 1 z|L {id} 0 \r\r|L {id} 1 \rz",
            "E {p} 0 N{n}|R {p} {id} 1|S {p} 0 F",
        ];
        for id in 1..40_000usize {
            let lines = patterns[id % 8]
                .replace("{id}", &id.to_string())
                .replace("{p}", &(id - 1).to_string())
                .replace("{n}", &((id - 1) % 300).to_string())
                .replace(' ', "\t")
                .replace('|', "\n");
            input.extend_from_slice(lines.as_bytes());
            input.push(b'\n');
        }
        assert!(input.len() > 3 * BLOCK);
        let dedupe = Repairs {
            dedupe: true,
            ..Repairs::default()
        };
        let stretch = Repairs {
            stretch_zero: true,
            ..Repairs::default()
        };
        // Writing, and discarding as --check does (its line count is what it reports): the
        // lines a discarding writer counts are the lines the writing one writes.
        let runs = [Repairs::default(), dedupe, stretch]
            .into_iter()
            .flat_map(|repairs| [(repairs.clone(), false), (repairs, true)]);
        let mut lines_written = 0;
        for (repairs, discard) in runs {
            let [(parsed, parsed_summary, parsed_diag, diag, counted), others @ ..] = EVERY_SHARE
                .map(|blocks| {
                    let mut builder = WriterBuilder::new();
                    builder.discard(discard);
                    let normalizer = KanataNormalizer::new(builder, Vec::new(), repairs.clone());
                    let mut diag = Diagnostics::new(3, false);
                    let finished = convert_in_blocks(&input, normalizer, blocks, &mut diag)
                        .unwrap()
                        .unwrap();
                    let summary = format!("{:?}", finished.summary);
                    let lines = finished.summary.lines;
                    (finished.output, summary, format!("{diag:?}"), diag, lines)
                });
            for (blocks, (output, summary, reports, ..)) in EVERY_SHARE[1..].iter().zip(others) {
                assert!(output == parsed, "{blocks:?} {repairs:?} {discard}");
                assert_eq!(summary, parsed_summary, "{blocks:?} {repairs:?} {discard}");
                assert_eq!(reports, parsed_diag, "{blocks:?} {repairs:?} {discard}");
            }
            for rule in [Rule::Q5, Rule::Q7, Rule::Q8, Rule::Q10, Rule::Q12] {
                assert!(diag.rules().contains_key(&rule), "{rule:?} {repairs:?}");
            }
            if discard {
                assert_eq!(counted, lines_written, "{repairs:?}");
            } else {
                lines_written = parsed.iter().filter(|&&byte| byte == b'\n').count() as u64;
            }
        }
    }
}
