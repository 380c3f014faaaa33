//! Windows: the part of a trace a user looks at (`--cycles`, `--sim-cycles`, `--insns`,
//! `--threads`), cut out of the canonical text of the whole trace on its way to the output.
//!
//! [`WindowFilter`] is a [`Write`] that takes the canonical text of a whole trace (what the
//! writer makes of any input, or a canonical file read back) and writes the canonical text of
//! the window: the instructions the [`Window`] keeps, each **whole** (every label, stage,
//! dependency and its `R`, even where its life reaches outside the window), renumbered densely
//! from 0 in their order. What Konata shows of them does not change:
//!
//! - the `C=` line and the cycle steps are kept, merged where dropped lines stood between
//!   them, so every cycle number Konata shows, and every simulator cycle, is the one of the
//!   whole trace;
//! - simulator ids, thread ids, retire ids and flushes are kept as written;
//! - a dependency between two kept instructions is kept; one whose producer is not kept is
//!   dropped and reported under rule [`Rule::W1`];
//! - when a kept instruction is still open at the end of the input, the output ends at the
//!   input's last cycle (Konata draws open instructions up to it); otherwise it ends with the
//!   last line of the last kept instruction.
//!
//! The output depends on nothing but the canonical text it is given, so the window of a trace
//! is the same bytes whatever the trace was converted from and however it was read (from the
//! start, or from a frame of a seekable file through [`WindowFilter::resume`]).
//!
//! # When an instruction is kept
//!
//! An instruction begins at the cycle of its `I` and ends at the cycle of its `R` (or never,
//! when it has none). With `--cycles A..B` it is kept when it begins before `B` and ends at
//! `A` or later (or never ends); `--sim-cycles` is the same in the simulator's cycles (the
//! `C=` start plus Konata's cycle). `--insns A..B` keeps op ids `[A, B)` of the whole trace;
//! `--threads` keeps the threads listed. Given together, every one must hold.
//!
//! # Memory and early stop
//!
//! The filter holds the lines of the instructions that begin before `A` and are still live,
//! until cycle `A` decides them (or their `R` before `A` drops them): that is what is in
//! flight. It also keeps one bit per instruction read, to renumber the producer of a
//! dependency that has already ended (an eighth of a byte per instruction against the 100 or
//! more bytes of text each takes).
//!
//! Once the window's end is behind (cycle `B` reached, or op id `B` begun) and every kept
//! instruction has ended, nothing later can be in the window: [`WindowFilter::is_done`] turns
//! true and the conversion stops reading. What bounds how far past the window it reads is
//! the longest life of a kept instruction (an instruction that never retires keeps it reading
//! to the end) and, for inputs that are reordered on the way (gem5's reorder window), how far
//! ahead of the text the reading runs.

use std::collections::BinaryHeap;
use std::fmt;
use std::io::{self, Write};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kanata_writer::Summary;

use crate::diag::{Diagnostics, Rule};
use crate::error::{Error, ErrorKind};
use crate::kanata::ids::IdMap;
use crate::output::canonical::{Command, LineParser, Position, Skim};

/// A half-open range `[start, end)` of numbers; either end may be open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bounds<T> {
    /// The first number in the range; `None` for no lower bound.
    pub start: Option<T>,
    /// The first number after the range; `None` for no upper bound.
    pub end: Option<T>,
}

impl<T: Copy + PartialOrd> Bounds<T> {
    /// A range with no bounds: everything.
    pub fn all() -> Bounds<T> {
        Bounds {
            start: None,
            end: None,
        }
    }

    /// Whether either end is set.
    pub fn is_bounded(&self) -> bool {
        self.start.is_some() || self.end.is_some()
    }

    /// Whether `value` is in the range.
    pub fn contains(&self, value: T) -> bool {
        self.start.is_none_or(|start| value >= start) && self.end.is_none_or(|end| value < end)
    }
}

/// The error of a range or a number that cannot be read; says what is accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeError(String);

impl fmt::Display for RangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RangeError {}

impl RangeError {
    /// An error that says `message`.
    pub fn new(message: impl Into<String>) -> RangeError {
        RangeError(message.into())
    }
}

/// What `--cycles`, `--sim-cycles` and `--insns` accept, for messages and `--help`.
pub const RANGE_SYNTAX: &str = "A..B, A.. or ..B: the half-open range [A, B); numbers may use \
     `_` between digits and a k, M or G suffix (thousands, millions, billions: 12M, 12.01M, \
     1_500k)";

/// Reads one number of a range: digits with `_` between them, an optional fraction, an
/// optional `k`/`M`/`G` suffix, and a `-` when `signed`; the value must be a whole number.
fn parse_number(text: &str, signed: bool) -> Result<i128, RangeError> {
    let bad = |why: &str| RangeError(format!("`{text}` is not a number: {why}"));
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) if signed => (true, rest),
        Some(_) => return Err(bad("it cannot be negative")),
        None => (false, text),
    };
    let (digits, scale): (&str, u32) = match rest.as_bytes().last() {
        Some(b'k' | b'K') => (&rest[..rest.len() - 1], 3),
        Some(b'M') => (&rest[..rest.len() - 1], 6),
        Some(b'G') => (&rest[..rest.len() - 1], 9),
        _ => (rest, 0),
    };
    let (whole, fraction) = match digits.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (digits, ""),
    };
    let clean = |part: &str| -> Result<String, RangeError> {
        if part.starts_with('_') || part.ends_with('_') || part.contains("__") {
            return Err(bad("`_` goes only between digits"));
        }
        let part: String = part.chars().filter(|&c| c != '_').collect();
        if !part.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(
                "expected digits, `_` between them and a k, M or G suffix",
            ));
        }
        Ok(part)
    };
    let whole = clean(whole)?;
    let fraction = clean(fraction)?;
    if whole.is_empty() {
        return Err(bad("expected digits before the point"));
    }
    if digits.contains('.') && fraction.is_empty() {
        return Err(bad("expected digits after the point"));
    }
    if fraction.len() > scale as usize && fraction.trim_end_matches('0').len() > scale as usize {
        return Err(bad("it is not a whole number"));
    }
    let too_big = || bad("it is too large");
    let mut value: i128 = 0;
    for b in whole.bytes().chain(fraction.bytes()) {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(i128::from(b - b'0')))
            .filter(|&v| v <= i128::from(u64::MAX) * 10)
            .ok_or_else(too_big)?;
    }
    let shift = scale as i64 - fraction.len() as i64;
    if shift >= 0 {
        value = value
            .checked_mul(10i128.pow(shift as u32))
            .ok_or_else(too_big)?;
    } else {
        let divisor = 10i128.pow((-shift) as u32);
        if value % divisor != 0 {
            return Err(bad("it is not a whole number"));
        }
        value /= divisor;
    }
    Ok(if negative { -value } else { value })
}

/// Reads a non-negative number with `_` separators and a `k`/`M`/`G` suffix, as ranges
/// do (`256k`, `1M`, `1_048_576`).
///
/// # Errors
/// When `text` is not such a number, or does not fit in 64 bits.
pub fn parse_count(text: &str) -> Result<u64, RangeError> {
    let value = parse_number(text.trim(), false)?;
    u64::try_from(value).map_err(|_| RangeError(format!("`{text}` is too large")))
}

/// Reads `A..B`, `A..` or `..B` into bounds of `i128`; `B <= A` is an error.
fn parse_range(text: &str, signed: bool) -> Result<Bounds<i128>, RangeError> {
    let Some((start, end)) = text.split_once("..") else {
        return Err(RangeError(format!(
            "`{text}` is not a range: expected {RANGE_SYNTAX}"
        )));
    };
    let read = |part: &str| -> Result<Option<i128>, RangeError> {
        match part.trim() {
            "" => Ok(None),
            part => parse_number(part, signed).map(Some),
        }
    };
    let bounds = Bounds {
        start: read(start)?,
        end: read(end)?,
    };
    if bounds.start.is_none() && bounds.end.is_none() {
        return Err(RangeError(format!(
            "`{text}` has no bounds: expected {RANGE_SYNTAX}"
        )));
    }
    if let (Some(start), Some(end)) = (bounds.start, bounds.end) {
        if end <= start {
            return Err(RangeError(format!(
                "`{text}` is empty: its end must be after its start ([A, B) needs B > A)"
            )));
        }
    }
    Ok(bounds)
}

impl FromStr for Bounds<u64> {
    type Err = RangeError;

    /// `A..B`, `A..` or `..B` of non-negative numbers, as [`RANGE_SYNTAX`] says.
    ///
    /// ```
    /// use kanata_pp::output::window::Bounds;
    /// let range: Bounds<u64> = "12M..12.01M".parse()?;
    /// assert_eq!((range.start, range.end), (Some(12_000_000), Some(12_010_000)));
    /// assert_eq!("..1_000".parse::<Bounds<u64>>()?.end, Some(1000));
    /// assert!("5..5".parse::<Bounds<u64>>().is_err());
    /// # Ok::<(), kanata_pp::output::window::RangeError>(())
    /// ```
    fn from_str(text: &str) -> Result<Bounds<u64>, RangeError> {
        let bounds = parse_range(text, false)?;
        let narrow = |v: Option<i128>| {
            v.map(|v| {
                u64::try_from(v).map_err(|_| RangeError(format!("`{text}`: {v} is too large")))
            })
            .transpose()
        };
        Ok(Bounds {
            start: narrow(bounds.start)?,
            end: narrow(bounds.end)?,
        })
    }
}

impl FromStr for Bounds<i64> {
    type Err = RangeError;

    /// `A..B`, `A..` or `..B` of numbers that may be negative (simulator cycles).
    fn from_str(text: &str) -> Result<Bounds<i64>, RangeError> {
        let bounds = parse_range(text, true)?;
        let narrow = |v: Option<i128>| {
            v.map(|v| {
                i64::try_from(v).map_err(|_| RangeError(format!("`{text}`: {v} is out of range")))
            })
            .transpose()
        };
        Ok(Bounds {
            start: narrow(bounds.start)?,
            end: narrow(bounds.end)?,
        })
    }
}

/// Reads a list of thread ids: `0,2` (spaces allowed around the commas).
///
/// ```
/// assert_eq!(kanata_pp::output::window::parse_threads("0, 2")?, vec![0, 2]);
/// # Ok::<(), kanata_pp::output::window::RangeError>(())
/// ```
pub fn parse_threads(text: &str) -> Result<Vec<i64>, RangeError> {
    let mut threads = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        let thread = part.parse::<i64>().map_err(|_| {
            RangeError(format!(
                "`{part}` is not a thread id: expected a list of integers such as `0,2`"
            ))
        })?;
        threads.push(thread);
    }
    threads.sort_unstable();
    threads.dedup();
    Ok(threads)
}

/// Which instructions of a trace to keep. The default keeps every one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Window {
    /// Konata's cycles (from the start of the file): keep the instructions whose life
    /// overlaps them.
    pub cycles: Bounds<u64>,
    /// The simulator's cycles (the `C=` start plus Konata's cycle), likewise.
    pub sim_cycles: Bounds<i64>,
    /// Op ids of the whole trace's canonical conversion.
    pub insns: Bounds<u64>,
    /// Thread ids to keep, sorted; `None` keeps every thread.
    pub threads: Option<Vec<i64>>,
}

impl Window {
    /// A window that keeps every instruction.
    pub fn all() -> Window {
        Window::default()
    }

    /// Whether the window keeps less than everything.
    pub fn is_restricted(&self) -> bool {
        self.cycles.is_bounded()
            || self.sim_cycles.is_bounded()
            || self.insns.is_bounded()
            || self.threads.is_some()
    }

    /// The window's cycles in Konata's count for a file that starts at simulator cycle
    /// `start_cycle`: `--cycles` and `--sim-cycles` together, as `[from, until)`.
    pub fn konata_cycles(&self, start_cycle: i64) -> Bounds<u64> {
        let to_konata = |sim: i64| (i128::from(sim) - i128::from(start_cycle)).max(0);
        let clamp = |v: i128| u64::try_from(v).unwrap_or(u64::MAX);
        let from = [
            self.cycles.start.map(i128::from),
            self.sim_cycles.start.map(to_konata),
        ]
        .into_iter()
        .flatten()
        .max()
        .map(clamp);
        let until = [
            self.cycles.end.map(i128::from),
            self.sim_cycles.end.map(to_konata),
        ]
        .into_iter()
        .flatten()
        .min()
        .map(clamp);
        Bounds {
            start: from,
            end: until,
        }
    }

    fn keeps_thread(&self, thread: i64) -> bool {
        self.threads
            .as_ref()
            .is_none_or(|threads| threads.binary_search(&thread).is_ok())
    }
}

/// Which instructions were kept, one bit per op id from the first one read, to renumber
/// the producer of a dependency after it has ended. Kept ids are marked in increasing order,
/// so the count before each word is known when the word is started.
#[derive(Debug, Default)]
struct KeptIds {
    /// The first op id of the bits.
    base: u64,
    words: Vec<u64>,
    /// Kept ids before each word.
    before: Vec<u64>,
    kept: u64,
}

impl KeptIds {
    /// Marks `id` kept; ids come in increasing order.
    fn mark(&mut self, id: u64) {
        let word = ((id - self.base) / 64) as usize;
        while self.words.len() <= word {
            self.words.push(0);
            self.before.push(self.kept);
        }
        self.words[word] |= 1 << ((id - self.base) % 64);
        self.kept += 1;
    }

    /// The output id of `id`, if it was kept.
    fn output_id(&self, id: u64) -> Option<u64> {
        let offset = id.checked_sub(self.base)?;
        let word = usize::try_from(offset / 64).ok()?;
        let bits = *self.words.get(word)?;
        let bit = 1u64 << (offset % 64);
        (bits & bit != 0).then(|| self.before[word] + u64::from((bits & (bit - 1)).count_ones()))
    }
}

/// A live instruction the window keeps or may keep.
#[derive(Debug)]
enum Live {
    /// Kept, under this output id.
    Kept(u64),
    /// Begun before the window's first cycle, decided when that cycle comes: its lines so
    /// far.
    Pending(Lines),
}

/// How many emptied [`Lines`] are kept for reuse: about what is in flight in a big core.
const SPARE_BUFFERS: usize = 1024;

/// Lines held back, in one buffer.
#[derive(Debug, Default)]
struct Lines {
    text: Vec<u8>,
    /// Each line's number, cycle and end in `text`.
    lines: Vec<(u64, u64, usize)>,
}

impl Lines {
    fn push(&mut self, line: u64, cycle: u64, bytes: &[u8]) {
        self.text.extend_from_slice(bytes);
        self.lines.push((line, cycle, self.text.len()));
    }

    fn clear(&mut self) {
        self.text.clear();
        self.lines.clear();
    }

    fn get(&self, index: usize) -> (u64, u64, &[u8]) {
        let from = match index {
            0 => 0,
            _ => self.lines[index - 1].2,
        };
        let (line, cycle, to) = self.lines[index];
        (line, cycle, &self.text[from..to])
    }
}

/// Cuts a window out of canonical Kanata text (see the [module](self) docs).
///
/// ```
/// use kanata_pp::output::window::{Window, WindowFilter};
/// use std::io::Write;
///
/// let mut window = Window::all();
/// window.cycles = "2..3".parse()?;
/// let mut filter = WindowFilter::new(Vec::new(), window, 5);
/// filter.write_all(b"Kanata\t0004\nC=\t100\nI\t0\t10\t0\nS\t0\t0\tF\nC\t1\nE\t0\t0\tF\n\
///                    R\t0\t0\t0\nI\t1\t11\t0\nS\t1\t0\tF\nC\t2\nE\t1\t0\tF\nR\t1\t1\t0\n")?;
/// let window = filter.finish()?;
/// assert_eq!(
///     window.output,
///     b"Kanata\t0004\nC=\t100\nC\t1\nI\t0\t11\t0\nS\t0\t0\tF\nC\t2\nE\t0\t0\tF\nR\t0\t1\t0\n"
/// );
/// assert_eq!(window.summary.instructions, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct WindowFilter<W> {
    out: W,
    window: Window,
    parser: LineParser,
    /// The start of a line whose LF has not come yet.
    partial: Vec<u8>,
    /// Konata's cycles of the window, once the `C=` start is known.
    cycles: Bounds<u64>,
    /// The id the next `I` has.
    next_id: u64,
    /// The live instructions kept or pending; dropped ones are not here.
    live: IdMap<u64, Live>,
    /// Emptied line buffers, for the next pending instructions.
    spare: Vec<Lines>,
    /// The text is the writer's: skimmed, not checked field by field.
    trusted: bool,
    /// How many of `live` are pending.
    pending: usize,
    kept: KeptIds,
    /// The cycle the output is at.
    out_cycle: u64,
    /// Nothing later in the input can be in the window.
    done: Arc<AtomicBool>,
    /// No instruction begun from now on is kept.
    closed: bool,
    /// What the output holds so far.
    summary: Summary,
    diag: Diagnostics,
    /// Instructions read (`I` lines).
    read: u64,
}

/// What [`WindowFilter::finish`] gives back.
#[derive(Debug)]
#[non_exhaustive]
pub struct Finished<W> {
    /// The output, with the whole window written to it.
    pub output: W,
    /// What the window holds (its instructions, cycles, lines and bytes).
    pub summary: Summary,
    /// The dependencies dropped because their producer is not in the window ([`Rule::W1`]),
    /// with line numbers of the canonical text of the whole trace.
    pub diagnostics: Diagnostics,
    /// Instructions read (kept or not).
    pub instructions_read: u64,
    /// Whether reading stopped before the end of the input, because nothing later could be
    /// in the window.
    pub stopped_early: bool,
}

impl<W: Write> WindowFilter<W> {
    /// A filter of a whole file's canonical text, from its header on, writing to `out`;
    /// `max_examples` dropped dependencies are reported by line.
    pub fn new(out: W, window: Window, max_examples: usize) -> WindowFilter<W> {
        WindowFilter::with_parser(out, window, max_examples, LineParser::new(), 0)
    }

    /// A filter of text that continues a canonical file after the lines `at` describes, whose
    /// next `I` has id `next_id` (a frame of a seekable file). Instructions begun before are
    /// unknown to it: their lines are skipped, and a dependency on one is dropped. So the
    /// window is the one the whole file gives when every instruction it keeps begins after
    /// `at` (what the seekable index guarantees for the frame it names).
    ///
    /// # Errors
    /// When `out` cannot be written (the header goes out at once).
    pub fn resume(
        out: W,
        window: Window,
        max_examples: usize,
        at: Position,
        next_id: u64,
    ) -> io::Result<WindowFilter<W>> {
        let mut filter =
            WindowFilter::with_parser(out, window, max_examples, LineParser::resume(at), next_id);
        filter.start(at.start_cycle)?;
        Ok(filter)
    }

    fn with_parser(
        out: W,
        window: Window,
        max_examples: usize,
        parser: LineParser,
        next_id: u64,
    ) -> WindowFilter<W> {
        WindowFilter {
            out,
            window,
            parser,
            partial: Vec::new(),
            cycles: Bounds::all(),
            next_id,
            live: IdMap::default(),
            spare: Vec::new(),
            trusted: false,
            pending: 0,
            kept: KeptIds {
                base: next_id,
                ..KeptIds::default()
            },
            out_cycle: 0,
            done: Arc::new(AtomicBool::new(false)),
            closed: false,
            summary: Summary::default(),
            diag: Diagnostics::new(max_examples, false),
            read: 0,
        }
    }

    /// Trusts the text to be canonical, as the writer's own output is: each line is skimmed
    /// for its command and ids ([`LineParser::skim`]) rather than checked field by field.
    /// The output is the same for canonical text; other text may go through unnoticed.
    pub fn trusted(mut self) -> WindowFilter<W> {
        self.trusted = true;
        self
    }

    /// A flag that turns true when nothing later in the input can be in the window: a reader
    /// that sees it may stop (the filter ignores what comes after).
    pub fn done_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.done)
    }

    /// Whether nothing later in the input can be in the window.
    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::Relaxed)
    }

    /// Writes the output's first lines and sets the window's cycles.
    fn start(&mut self, start_cycle: i64) -> io::Result<()> {
        self.cycles = self.window.konata_cycles(start_cycle);
        self.summary.first_cycle = start_cycle;
        self.emit_raw(b"Kanata\t0004")?;
        self.emit_raw(format!("C=\t{start_cycle}").as_bytes())?;
        if self.cycles.end.is_some_and(|end| end == 0)
            || matches!((self.cycles.start, self.cycles.end), (Some(a), Some(b)) if b <= a)
            || matches!((self.window.insns.start, self.window.insns.end), (Some(a), Some(b)) if b <= a)
        {
            // Nothing can be in the window (a simulator window before the file's start).
            self.closed = true;
        }
        self.check_done();
        Ok(())
    }

    fn check_done(&mut self) {
        if self.closed && self.live.is_empty() {
            self.done.store(true, Ordering::Relaxed);
        }
    }

    /// Writes one line and its LF.
    fn emit_raw(&mut self, line: &[u8]) -> io::Result<()> {
        self.out.write_all(line)?;
        self.out.write_all(b"\n")?;
        self.summary.lines += 1;
        self.summary.text_bytes += line.len() as u64 + 1;
        Ok(())
    }

    /// Moves the output's time to `cycle`, with one `C` step.
    fn advance_to(&mut self, cycle: u64) -> io::Result<()> {
        if cycle > self.out_cycle {
            let mut step = itoa::Buffer::new();
            let step = step.format(cycle - self.out_cycle);
            self.out.write_all(b"C\t")?;
            self.out.write_all(step.as_bytes())?;
            self.out.write_all(b"\n")?;
            self.summary.lines += 1;
            self.summary.text_bytes += step.len() as u64 + 3;
            self.out_cycle = cycle;
        }
        Ok(())
    }

    /// Writes the line `bytes` of a kept instruction at `cycle`, with its ids renumbered.
    fn emit(&mut self, line: u64, cycle: u64, bytes: &[u8]) -> io::Result<()> {
        // The parser has read the line: a command letter, a TAB and the id.
        let rest = &bytes[2..];
        let id_end = memchr::memchr(b'\t', rest).unwrap_or(rest.len());
        match self.output_id(parse_plain(&rest[..id_end])) {
            Some(out_id) => self.emit_as(out_id, line, cycle, bytes),
            None => Ok(()),
        }
    }

    /// Writes the line `bytes` of the kept instruction whose output id is `out_id`.
    fn emit_as(&mut self, out_id: u64, line: u64, cycle: u64, bytes: &[u8]) -> io::Result<()> {
        let command = bytes[0];
        let rest = &bytes[2..];
        let id_end = memchr::memchr(b'\t', rest).unwrap_or(rest.len());
        let mut tail = &rest[id_end..];
        let mut producer_id = itoa::Buffer::new();
        let mut producer_text: &[u8] = b"";
        if command == b'W' {
            let fields = &tail[1..];
            let producer_end = memchr::memchr(b'\t', fields).unwrap_or(fields.len());
            let producer = parse_plain(&fields[..producer_end]);
            let Some(out_producer) = self.output_id(producer) else {
                let id = parse_plain(&rest[..id_end]);
                self.diag.report(Rule::W1, line, || {
                    format!(
                        "instruction {id} waits for instruction {producer}, which is not in \
                         the window: arrow dropped"
                    )
                });
                return Ok(());
            };
            producer_text = producer_id.format(out_producer).as_bytes();
            tail = &fields[producer_end..];
        }
        match command {
            b'I' => self.summary.instructions += 1,
            b'R' if tail.ends_with(b"\t1") => self.summary.flushed += 1,
            b'R' => self.summary.retired += 1,
            _ => {}
        }
        self.advance_to(cycle)?;
        let mut id = itoa::Buffer::new();
        let id = id.format(out_id).as_bytes();
        self.out.write_all(&bytes[..2])?;
        self.out.write_all(id)?;
        let mut length = 2 + id.len() + tail.len() + 1;
        if !producer_text.is_empty() {
            self.out.write_all(b"\t")?;
            self.out.write_all(producer_text)?;
            length += 1 + producer_text.len();
        }
        self.out.write_all(tail)?;
        self.out.write_all(b"\n")?;
        self.summary.lines += 1;
        self.summary.text_bytes += length as u64;
        Ok(())
    }

    /// The output id of input instruction `id`, if it is kept.
    fn output_id(&self, id: u64) -> Option<u64> {
        match self.live.get(&id) {
            Some(Live::Kept(out)) => Some(*out),
            Some(Live::Pending(_)) => None,
            None => self.kept.output_id(id),
        }
    }

    /// Keeps every pending instruction, in op-id order, and writes their lines so far in
    /// their order in the input.
    fn keep_pending(&mut self) -> io::Result<()> {
        if self.pending == 0 {
            return Ok(());
        }
        let mut ids: Vec<u64> = self
            .live
            .iter()
            .filter(|(_, live)| matches!(live, Live::Pending(_)))
            .map(|(&id, _)| id)
            .collect();
        ids.sort_unstable();
        let mut held = Vec::with_capacity(ids.len());
        for &id in &ids {
            let out = self.kept.kept;
            self.kept.mark(id);
            if let Some(Live::Pending(lines)) = self.live.insert(id, Live::Kept(out)) {
                held.push(lines);
            }
        }
        self.pending = 0;
        // Merge the instructions' lines back into input order.
        let mut heap: BinaryHeap<std::cmp::Reverse<(u64, usize, usize)>> = held
            .iter()
            .enumerate()
            .filter(|(_, lines)| !lines.lines.is_empty())
            .map(|(which, lines)| std::cmp::Reverse((lines.lines[0].0, which, 0)))
            .collect();
        while let Some(std::cmp::Reverse((_, which, index))) = heap.pop() {
            let (line, cycle, bytes) = held[which].get(index);
            self.emit(line, cycle, bytes)?;
            if let Some(&(next, _, _)) = held[which].lines.get(index + 1) {
                heap.push(std::cmp::Reverse((next, which, index + 1)));
            }
        }
        Ok(())
    }

    /// Reads one line of the input: every field checked, or only what tracking needs when
    /// the text is trusted.
    fn line(&mut self, bytes: &[u8]) -> Result<(), Error> {
        let before = self.parser.cycle();
        let skim = match self.trusted {
            true => self.parser.skim(bytes)?,
            false => match self.parser.line(bytes)? {
                None => Skim::Header,
                Some(event) => match event.command {
                    Command::Start(start) => Skim::Start(start),
                    Command::Step(_) => Skim::Step,
                    Command::Insn { id, thread, .. } => Skim::Insn { id, thread },
                    Command::Label { id, .. }
                    | Command::StageStart { id, .. }
                    | Command::StageEnd { id, .. } => Skim::Of(id),
                    Command::Retire { id, .. } => Skim::Retire(id),
                    Command::Dep {
                        consumer, producer, ..
                    } => Skim::Dep { consumer, producer },
                },
            },
        };
        let (line, cycle) = (self.parser.lines(), self.parser.cycle());
        match skim {
            Skim::Header => {}
            Skim::Start(start) => self.start(start)?,
            Skim::Step => {
                if self
                    .cycles
                    .start
                    .is_some_and(|from| before < from && cycle >= from)
                {
                    self.keep_pending()?;
                }
                if self.cycles.end.is_some_and(|until| cycle >= until) {
                    self.closed = true;
                    self.check_done();
                }
            }
            Skim::Insn { id, thread } => {
                if id != self.next_id {
                    return Err(Error::new(
                        ErrorKind::Input,
                        format!(
                            "not canonical Kanata: expected instruction {}, found {id}",
                            self.next_id
                        ),
                    )
                    .with_line(line));
                }
                self.next_id += 1;
                self.read += 1;
                // After this one, no op id is in `--insns`.
                let last = self.window.insns.end.is_some_and(|end| self.next_id >= end);
                let kept = !self.closed
                    && self.window.insns.contains(id)
                    && self.window.keeps_thread(thread)
                    && self.cycles.end.is_none_or(|until| cycle < until);
                if kept {
                    if self.cycles.start.is_none_or(|from| cycle >= from) {
                        let out = self.kept.kept;
                        self.kept.mark(id);
                        self.live.insert(id, Live::Kept(out));
                        self.emit_as(out, line, cycle, bytes)?;
                    } else {
                        let mut lines = self.spare.pop().unwrap_or_default();
                        lines.push(line, cycle, bytes);
                        self.live.insert(id, Live::Pending(lines));
                        self.pending += 1;
                    }
                }
                if last {
                    self.closed = true;
                    self.check_done();
                }
            }
            Skim::Of(id) | Skim::Dep { consumer: id, .. } => {
                self.instruction_line(id, line, cycle, bytes)?
            }
            Skim::Retire(id) => {
                match self.live.get(&id) {
                    Some(&Live::Kept(out)) => {
                        self.emit_as(out, line, cycle, bytes)?;
                        self.live.remove(&id);
                    }
                    // Ended before the window's first cycle.
                    Some(Live::Pending(_)) => {
                        if let Some(Live::Pending(mut lines)) = self.live.remove(&id) {
                            if self.spare.len() < SPARE_BUFFERS {
                                lines.clear();
                                self.spare.push(lines);
                            }
                        }
                        self.pending -= 1;
                    }
                    None => {}
                }
                self.check_done();
            }
        }
        Ok(())
    }

    /// A line of instruction `id`: written, held back or skipped as the instruction is.
    fn instruction_line(&mut self, id: u64, line: u64, cycle: u64, bytes: &[u8]) -> io::Result<()> {
        match self.live.get_mut(&id) {
            Some(&mut Live::Kept(out)) => self.emit_as(out, line, cycle, bytes),
            Some(Live::Pending(lines)) => {
                lines.push(line, cycle, bytes);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Ends the input: keeps the pending instructions that never ended, ends the output at
    /// the input's last cycle when kept instructions are still open, and gives the output
    /// back.
    ///
    /// # Errors
    /// For input that does not end with a complete line, ends before its `C=` line, or is not
    /// canonical; when the output cannot be written.
    pub fn finish(mut self) -> Result<Finished<W>, Error> {
        let stopped_early = self.is_done();
        if !stopped_early {
            if !self.partial.is_empty() {
                return Err(Error::new(
                    ErrorKind::Input,
                    "not canonical Kanata: the last line does not end with LF (is the file \
                     truncated?)",
                )
                .with_line(self.parser.lines() + 1));
            }
            self.parser.finish()?;
            // Never ended, so they reach the window however late it starts.
            self.keep_pending()?;
            let open = self.live.len() as u64;
            if open > 0 {
                self.summary.left_open = open;
                let last = self.parser.cycle();
                self.advance_to(last)?;
            }
        }
        self.summary.last_cycle = self.summary.first_cycle + self.out_cycle as i64;
        self.out.flush()?;
        Ok(Finished {
            output: self.out,
            summary: self.summary,
            diagnostics: self.diag,
            instructions_read: self.read,
            stopped_early,
        })
    }

    /// Reads the complete lines of `buf`, keeping the start of a line cut at its end: the
    /// same as [`Write::write`], with the error of a line that is not canonical as it is
    /// (its line number and message).
    ///
    /// # Errors
    /// For a line that is not canonical, and when the output cannot be written.
    pub fn push(&mut self, buf: &[u8]) -> Result<(), Error> {
        let mut rest = buf;
        if !self.partial.is_empty() {
            let Some(lf) = memchr::memchr(b'\n', rest) else {
                self.partial.extend_from_slice(rest);
                return Ok(());
            };
            let mut line = std::mem::take(&mut self.partial);
            line.extend_from_slice(&rest[..lf]);
            rest = &rest[lf + 1..];
            let result = self.line(&line);
            line.clear();
            self.partial = line;
            result?;
        }
        while let Some(lf) = memchr::memchr(b'\n', rest) {
            if self.is_done() {
                return Ok(());
            }
            self.line(&rest[..lf])?;
            rest = &rest[lf + 1..];
        }
        if !self.is_done() {
            self.partial.extend_from_slice(rest);
        }
        Ok(())
    }
}

/// A number the parser has checked to be a plain decimal.
fn parse_plain(digits: &[u8]) -> u64 {
    digits.iter().fold(0u64, |n, &b| {
        n.wrapping_mul(10).wrapping_add(u64::from(b - b'0'))
    })
}

impl<W: Write> Write for WindowFilter<W> {
    /// Takes canonical text in any chunks. A line that is not canonical is an error of kind
    /// `InvalidData` whose message names the line.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.is_done() {
            self.push(buf).map_err(io::Error::other)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests;
