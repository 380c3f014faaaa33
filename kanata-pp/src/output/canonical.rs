//! The one reader of canonical Kanata: the form `kanata-writer` writes and kanata-pp converts
//! every log into (`docs/canonical-form.md`). Statistics (`--stats`), windows, the seekable
//! index, rendering, analysis and the Python bindings read canonical text through this module,
//! never through a parser of their own.
//!
//! It has two levels:
//!
//! - [`CanonicalReader`] reads one line at a time into a [`Command`], with the line number and
//!   the time of the line ([`Event`]). It reuses one line buffer, so reading allocates nothing
//!   per line, and it checks that every line is canonical *in its own fields*: the header,
//!   exactly the fields of its command separated by one TAB, plain decimal numbers, plain
//!   lanes, valid UTF-8, label texts and stage names as the canonical form writes them.
//! - [`Instructions`] assembles the commands into whole [`Instruction`]s (labels, stage
//!   segments with their notes, retirement, dependencies) and yields them in op-id order. It
//!   also checks the rules that span lines: dense ids, commands only for live instructions,
//!   `E` only for the open stage, a note only after a stage, a producer older than its
//!   consumer.
//!
//! Anything that is not canonical is an [`Error`] of kind [`ErrorKind::Input`] that names
//! the 1-based line and says what is wrong, for example
//! `line 3: not canonical Kanata: expected 4 fields in an I line, found 3`. No input, of any
//! bytes, makes the reader panic. Read errors are of kind [`ErrorKind::Io`].
//!
//! # Cycles
//!
//! Every [`Event`] carries two times: [`Event::cycle`] is Konata's cycle, the sum of the `C`
//! steps since the start of the file (Konata ignores `C=`, its timeline starts at 0), and
//! [`Event::sim_cycle`] is the simulator's cycle, the `C=` start plus those steps. Windows
//! (`--cycles`, `--sim-cycles`) are stated in one or the other.
//!
//! # What is accepted
//!
//! - The compact form (implied `E`s left out, `kanata-pp --compact`, the writer's
//!   `compact(true)`) is accepted: an `S` in a lane whose stage is still open closes that
//!   stage in the same cycle, and an `R` closes every stage still open, as Konata does. Both
//!   forms read as the same instructions.
//! - Instructions without `R` at the end of the file are allowed, as in canonical form: they
//!   are yielded with [`Instruction::end`] `None`.
//! - A file whose last line has no LF is an error ("the last line does not end with LF"):
//!   canonical files always end with LF, and a missing one most likely means the file was
//!   cut while it was written, so the last number read could be cut too.
//! - Two `C` lines in a row are accepted (their steps add up) though the writer never writes
//!   them. Every other rule of the canonical form is checked.
//!
//! # Example
//!
//! ```
//! use kanata_pp::output::canonical::Instructions;
//!
//! let text = "Kanata\t0004\nC=\t100\nI\t0\t4096\t0\nL\t0\t0\taddi x1, x0, 5\nS\t0\t0\tF\n\
//!             C\t1\nE\t0\t0\tF\nS\t0\t0\tX\nC\t2\nE\t0\t0\tX\nR\t0\t0\t0\nC\t3\n";
//! let mut insns = Instructions::new(text.as_bytes());
//! let insn = insns.next().unwrap()?;
//! assert_eq!((insn.id, insn.sim_id, insn.begin, insn.end), (0, 4096, 0, Some(3)));
//! assert_eq!(insn.name, "addi x1, x0, 5");
//! assert_eq!(insn.stages[1].name, "X");
//! assert_eq!((insn.stages[1].start, insn.stages[1].end), (1, Some(3)));
//! assert!(insns.next().is_none());
//! assert_eq!(insns.start_cycle(), Some(100));
//! assert_eq!(insns.last_cycle(), Some(6));
//! # Ok::<(), kanata_pp::error::Error>(())
//! ```
//!
//! # Memory
//!
//! [`CanonicalReader`] holds one line. [`Instructions`] holds the instructions it has not
//! yielded yet: every instruction from the oldest one that has not ended up to the newest
//! one begun. That is what is in flight, plus the younger instructions that already ended
//! and wait for an older one to end (op-id order). An instruction that never ends (no `R`
//! until the end of the file) holds back every younger one until the end of the input.

use std::collections::VecDeque;
use std::io::BufRead;

pub use compact_str::CompactString;

use crate::diag::shorten;
use crate::error::{Error, ErrorKind};

pub use kanata_writer::LabelKind;

/// The header line, without its LF.
const HEADER: &[u8] = b"Kanata\t0004";

/// One command of a canonical Kanata file. Texts borrow the reader's line buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command<'a> {
    /// `C=→start`: the simulator's cycle at the start of the file (line 2 only).
    Start(i64),
    /// `C→n`: time moves forward by `n` ≥ 1 cycles.
    Step(u64),
    /// `I→id→sim_id→thread`: instruction `id` begins.
    Insn {
        /// The file id (Konata's op id).
        id: u64,
        /// The simulator's own id (any integer the writer takes: `i64::MIN` to `u64::MAX`;
        /// read up to 128 bits).
        sim_id: i128,
        /// The thread id.
        thread: i64,
    },
    /// `L→id→type→text`: text appended to one of the instruction's labels.
    Label {
        /// The file id.
        id: u64,
        /// Which label: name (0), detail (1) or a note on the latest stage (2).
        kind: LabelKind,
        /// The text as written: never empty, no TAB, CR or LF; `\n` (two characters) is
        /// Konata's line break.
        text: &'a str,
    },
    /// `S→id→lane→name`: the instruction enters stage `name` in `lane`.
    StageStart {
        /// The file id.
        id: u64,
        /// The lane (0: the pipeline, 1: stalls, by convention).
        lane: u64,
        /// The stage name: not empty, no white space at either end.
        name: &'a str,
    },
    /// `E→id→lane→name`: the instruction leaves stage `name` of `lane`.
    StageEnd {
        /// The file id.
        id: u64,
        /// The lane.
        lane: u64,
        /// The stage name.
        name: &'a str,
    },
    /// `R→id→retire_id→type`: the instruction retires (type 0) or is flushed (type 1).
    Retire {
        /// The file id.
        id: u64,
        /// The retire id as written (kanata-writer numbers retirements from 0 and gives
        /// flushes 0; kanata-pp keeps the ids of its input).
        retire_id: i64,
        /// Type 1: flushed rather than retired.
        flushed: bool,
    },
    /// `W→consumer→producer→type`: a dependency arrow.
    Dep {
        /// The file id of the instruction that waits.
        consumer: u64,
        /// The file id of the older instruction it waits for.
        producer: u64,
        /// The dependency type (0: wake-up).
        kind: u64,
    },
}

/// One line of a canonical file, as [`CanonicalReader::next_command`] returns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event<'a> {
    /// The 1-based line number.
    pub line: u64,
    /// Konata's cycle of the line: the `C` steps since the start of the file, this line's
    /// own step included.
    pub cycle: u64,
    /// The simulator's cycle of the line: the `C=` start plus [`cycle`](Self::cycle).
    pub sim_cycle: i64,
    /// The command.
    pub command: Command<'a>,
}

/// Where a reader of canonical text stands between two lines: what a reader that starts
/// mid-file (at a frame of a seekable file) must be told to read on as if it had read every
/// line before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Position {
    /// Lines read so far, the header and the `C=` line included.
    pub line: u64,
    /// Konata's cycle after those lines.
    pub cycle: u64,
    /// The `C=` start cycle (line 2).
    pub start_cycle: i64,
}

/// What [`LineParser::skim`] reads of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skim {
    /// The header line.
    Header,
    /// The `C=` line, with the start cycle.
    Start(i64),
    /// A `C` step (the parser's cycle has moved).
    Step,
    /// An `I`.
    Insn {
        /// The file id.
        id: u64,
        /// The thread id.
        thread: i64,
    },
    /// An `L`, `S` or `E` of instruction `id`.
    Of(u64),
    /// An `R` of instruction `id`.
    Retire(u64),
    /// A `W`.
    Dep {
        /// The instruction that waits.
        consumer: u64,
        /// The one it waits for.
        producer: u64,
    },
}

/// What [`LineParser::skim_stages`] reads of a line: what [`Skim`] reads, and also the lane
/// and stage name of an `S` or `E` and the type of an `R` (what stage residencies and
/// retirement counts need). Names borrow the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageSkim<'a> {
    /// The header line.
    Header,
    /// The `C=` line, with the start cycle.
    Start(i64),
    /// A `C` step (the parser's cycle has moved).
    Step,
    /// An `I`.
    Insn {
        /// The file id.
        id: u64,
        /// The thread id.
        thread: i64,
    },
    /// An `L` of instruction `id` (its type and text are not read).
    Label(u64),
    /// An `S`.
    StageStart {
        /// The file id.
        id: u64,
        /// The lane: a plain decimal.
        lane: u64,
        /// The stage name as written, up to the next TAB: never empty, not checked
        /// otherwise (it may not be UTF-8).
        name: &'a [u8],
    },
    /// An `E`.
    StageEnd {
        /// The file id.
        id: u64,
        /// The lane.
        lane: u64,
        /// The stage name as written, as in [`StageStart`](Self::StageStart).
        name: &'a [u8],
    },
    /// An `R`.
    Retire {
        /// The file id.
        id: u64,
        /// Type 1: flushed. Any other type counts as retired, as in Konata.
        flushed: bool,
    },
    /// A `W`.
    Dep {
        /// The instruction that waits.
        consumer: u64,
        /// The one it waits for.
        producer: u64,
    },
}

/// Parses canonical text one line at a time, for text that is pushed rather than read (the
/// output of a conversion on its way to the file). [`CanonicalReader`] is this plus a
/// `BufRead`; both check the same rules (see the [module](self) docs).
///
/// ```
/// use kanata_pp::output::canonical::{Command, LineParser};
///
/// let mut parser = LineParser::new();
/// assert!(parser.line(b"Kanata\t0004")?.is_none());
/// assert_eq!(parser.line(b"C=\t10")?.unwrap().command, Command::Start(10));
/// let event = parser.line(b"C\t3")?.unwrap();
/// assert_eq!((event.line, event.cycle, event.sim_cycle), (3, 3, 13));
/// parser.finish()?;
/// # Ok::<(), kanata_pp::error::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct LineParser {
    /// Lines read so far.
    line: u64,
    /// Konata's cycle.
    cycle: u64,
    /// The `C=` start, once line 2 is read.
    start: Option<i64>,
}

impl LineParser {
    /// A parser of a whole file, which starts with the header.
    pub fn new() -> LineParser {
        LineParser::default()
    }

    /// A parser that continues a file after the lines `at` describes: the next line is line
    /// `at.line + 1` at cycle `at.cycle`. At line 0 (the start of the file, the header still
    /// to come) it is [`LineParser::new`].
    pub fn resume(at: Position) -> LineParser {
        if at.line == 0 {
            return LineParser::new();
        }
        LineParser {
            line: at.line.max(2),
            cycle: at.cycle,
            start: Some(at.start_cycle),
        }
    }

    /// Parses the next line, given without its LF. The header (line 1) is checked and gives
    /// `None`; the `C=` line gives [`Command::Start`].
    ///
    /// # Errors
    /// [`ErrorKind::Input`], naming the line, for a line that is not canonical.
    pub fn line<'a>(&mut self, bytes: &'a [u8]) -> Result<Option<Event<'a>>, Error> {
        self.line += 1;
        match self.line {
            1 => {
                if bytes != HEADER {
                    return Err(not_canonical(
                        1,
                        format!(
                            "expected the header `Kanata\\t0004`, found `{}`",
                            quote(bytes)
                        ),
                    ));
                }
                return Ok(None);
            }
            2 => {
                let start = match bytes.strip_prefix(b"C=\t") {
                    Some(field) => parse_i64(field)
                        .ok_or_else(|| bad_number(2, "start cycle", "a C=", field))?,
                    None => {
                        return Err(not_canonical(
                            2,
                            format!(
                                "expected `C=\\t<start cycle>` on line 2, found `{}`",
                                quote(bytes)
                            ),
                        ))
                    }
                };
                self.start = Some(start);
                return Ok(Some(Event {
                    line: 2,
                    cycle: 0,
                    sim_cycle: start,
                    command: Command::Start(start),
                }));
            }
            _ => {}
        }
        let start = self.start.unwrap_or(0);
        let command = parse(bytes, self.line)?;
        if let Command::Step(step) = command {
            self.advance(step).ok_or_else(|| self.past_i64())?;
        }
        Ok(Some(Event {
            line: self.line,
            cycle: self.cycle,
            sim_cycle: sim_cycle(start, self.cycle),
            command,
        }))
    }

    /// Reads the next line of text known to be canonical (what the writer just wrote) for
    /// what tracking instructions needs, without checking the rest of the line: the time,
    /// and the ids of the command. About three times as fast as [`line`](Self::line). A
    /// line whose command and ids cannot be read is still an error, never a panic; anything
    /// else wrong with it goes unnoticed.
    ///
    /// ```
    /// use kanata_pp::output::canonical::{LineParser, Skim};
    ///
    /// let mut parser = LineParser::new();
    /// assert_eq!(parser.skim(b"Kanata\t0004")?, Skim::Header);
    /// assert_eq!(parser.skim(b"C=\t-4")?, Skim::Start(-4));
    /// assert_eq!(parser.skim(b"C\t3")?, Skim::Step);
    /// assert_eq!(parser.skim(b"I\t0\t77\t1")?, Skim::Insn { id: 0, thread: 1 });
    /// assert_eq!(parser.skim(b"W\t5\t2\t0")?, Skim::Dep { consumer: 5, producer: 2 });
    /// assert_eq!(parser.cycle(), 3);
    /// # Ok::<(), kanata_pp::error::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`ErrorKind::Input`] for a line whose command or ids cannot be read.
    pub fn skim(&mut self, bytes: &[u8]) -> Result<Skim, Error> {
        if self.line < 2 {
            return Ok(match self.line(bytes)? {
                Some(event) => Skim::Start(event.sim_cycle),
                None => Skim::Header,
            });
        }
        self.line += 1;
        let line = self.line;
        let bad = || not_canonical(line, format!("cannot read `{}`", quote(bytes)));
        let (&command, rest) = bytes.split_first().ok_or_else(bad)?;
        let rest = rest.strip_prefix(b"\t").ok_or_else(bad)?;
        let mut fields = rest.splitn(3, |&b| b == b'\t');
        let mut number = || fields.next().and_then(parse_u64).ok_or_else(bad);
        Ok(match command {
            b'C' => {
                self.advance(number()?).ok_or_else(bad)?;
                Skim::Step
            }
            b'I' => {
                let id = number()?;
                let _sim_id = fields.next();
                let thread = fields.next().and_then(parse_i64).ok_or_else(bad)?;
                Skim::Insn { id, thread }
            }
            b'L' | b'S' | b'E' => Skim::Of(number()?),
            b'R' => Skim::Retire(number()?),
            b'W' => Skim::Dep {
                consumer: number()?,
                producer: number()?,
            },
            _ => return Err(bad()),
        })
    }

    /// Reads the next line of trusted canonical text as [`skim`](Self::skim) does, and also
    /// what stage residencies and retirement counts need: the lane and stage name of an `S`
    /// or `E` (the name up to the next TAB, not empty) and whether an `R` is a flush (its
    /// type, up to the next TAB, is `1`; an empty type is an error). Each field it reads is
    /// read in one pass; the statistics ([`StatsSink`](crate::output::stats::StatsSink))
    /// read the writer's output through it. Like `skim` it never panics: a line whose
    /// command, ids, lane, name or type cannot be read is an error, which leaves the
    /// parser's cycle as it was; anything else wrong goes unnoticed.
    ///
    /// ```
    /// use kanata_pp::output::canonical::{LineParser, StageSkim};
    ///
    /// let mut parser = LineParser::new();
    /// assert_eq!(parser.skim_stages(b"Kanata\t0004")?, StageSkim::Header);
    /// assert_eq!(parser.skim_stages(b"C=\t10")?, StageSkim::Start(10));
    /// assert_eq!(parser.skim_stages(b"I\t0\t77\t1")?, StageSkim::Insn { id: 0, thread: 1 });
    /// assert_eq!(
    ///     parser.skim_stages(b"S\t0\t1\tMem miss")?,
    ///     StageSkim::StageStart { id: 0, lane: 1, name: b"Mem miss" }
    /// );
    /// assert_eq!(parser.skim_stages(b"C\t2")?, StageSkim::Step);
    /// assert_eq!(
    ///     parser.skim_stages(b"E\t0\t1\tMem miss")?,
    ///     StageSkim::StageEnd { id: 0, lane: 1, name: b"Mem miss" }
    /// );
    /// assert_eq!(parser.skim_stages(b"L\t0\t2\thit")?, StageSkim::Label(0));
    /// assert_eq!(
    ///     parser.skim_stages(b"R\t0\t0\t1")?,
    ///     StageSkim::Retire { id: 0, flushed: true }
    /// );
    /// assert_eq!(parser.cycle(), 2);
    /// assert!(parser.skim_stages(b"S\t0\t01\tF").is_err()); // not a plain lane
    /// assert!(parser.skim_stages(b"S\t0\t0\t").is_err()); // no name
    /// # Ok::<(), kanata_pp::error::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`ErrorKind::Input`] for a line whose command, ids, lane, stage name or `R` type
    /// cannot be read.
    #[inline]
    pub fn skim_stages<'a>(&mut self, bytes: &'a [u8]) -> Result<StageSkim<'a>, Error> {
        if self.line < 2 {
            return self.skim_stages_head(bytes);
        }
        self.line += 1;
        // One pass over each field: the numbers are read up to their TAB.
        let skimmed = match bytes {
            [command @ (b'S' | b'E'), b'\t', rest @ ..] => (|| {
                let (id, rest) = leading_u64(rest)?;
                let (lane, rest) = leading_u64(rest?)?;
                let name = up_to_tab(rest?);
                if name.is_empty() {
                    return None;
                }
                Some(if *command == b'S' {
                    StageSkim::StageStart { id, lane, name }
                } else {
                    StageSkim::StageEnd { id, lane, name }
                })
            })(),
            [b'C', b'\t', rest @ ..] => leading_u64(rest)
                .and_then(|(step, _)| self.advance(step))
                .map(|()| StageSkim::Step),
            [b'I', b'\t', rest @ ..] => (|| {
                let (id, rest) = leading_u64(rest)?;
                let (_sim_id, thread) = split_tab(rest?);
                let thread = parse_i64(thread?)?;
                Some(StageSkim::Insn { id, thread })
            })(),
            [b'L', b'\t', rest @ ..] => leading_u64(rest).map(|(id, _)| StageSkim::Label(id)),
            [b'R', b'\t', rest @ ..] => (|| {
                let (id, rest) = leading_u64(rest)?;
                let (_retire_id, kind) = split_tab(rest?);
                let kind = up_to_tab(kind?);
                if kind.is_empty() {
                    return None;
                }
                Some(StageSkim::Retire {
                    id,
                    flushed: kind == b"1",
                })
            })(),
            [b'W', b'\t', rest @ ..] => (|| {
                let (consumer, rest) = leading_u64(rest)?;
                let (producer, _) = leading_u64(rest?)?;
                Some(StageSkim::Dep { consumer, producer })
            })(),
            _ => None,
        };
        skimmed.ok_or_else(|| self.unreadable(bytes))
    }

    /// [`skim_stages`](Self::skim_stages) of the header and the `C=` line.
    #[cold]
    fn skim_stages_head<'a>(&mut self, bytes: &'a [u8]) -> Result<StageSkim<'a>, Error> {
        Ok(match self.line(bytes)? {
            Some(event) => StageSkim::Start(event.sim_cycle),
            None => StageSkim::Header,
        })
    }

    /// The error for the latest line, a step past the largest simulator cycle.
    #[cold]
    fn past_i64(&self) -> Error {
        not_canonical(
            self.line,
            "the simulator's cycle goes past the largest signed 64-bit number",
        )
    }

    /// The error for the latest line, whose command or ids cannot be read.
    #[cold]
    fn unreadable(&self, bytes: &[u8]) -> Error {
        not_canonical(self.line, format!("cannot read `{}`", quote(bytes)))
    }

    /// Moves the cycle `step` cycles on; `None`, the cycle unchanged, if the simulator's
    /// cycle would go past `i64::MAX`.
    #[inline]
    fn advance(&mut self, step: u64) -> Option<()> {
        let start = self.start.unwrap_or(0);
        // Konata's cycle may pass i64::MAX from a negative start; the simulator's may not
        // (spec 4.10), as the writer keeps it.
        self.cycle = self
            .cycle
            .checked_add(step)
            .filter(|&c| i64::try_from(i128::from(start) + i128::from(c)).is_ok())?;
        Some(())
    }

    /// Checks that the text did not end before its `C=` line.
    ///
    /// # Errors
    /// [`ErrorKind::Input`] for an empty file or one that ends after its header.
    pub fn finish(&self) -> Result<(), Error> {
        match self.line {
            0 => Err(not_canonical(1, "the file is empty, expected the header")),
            1 => Err(not_canonical(2, "the file ends before the C= line")),
            _ => Ok(()),
        }
    }

    /// Where the parser stands: after the latest line.
    pub fn position(&self) -> Position {
        Position {
            line: self.line,
            cycle: self.cycle,
            start_cycle: self.start.unwrap_or(0),
        }
    }

    /// The `C=` start cycle, once line 2 has been read.
    pub fn start_cycle(&self) -> Option<i64> {
        self.start
    }

    /// Konata's cycle of the latest line.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    /// The number of lines parsed so far (the header included).
    pub fn lines(&self) -> u64 {
        self.line
    }
}

/// Reads canonical Kanata line by line, checking each line (see the [module](self) docs).
///
/// ```
/// use kanata_pp::output::canonical::{CanonicalReader, Command};
///
/// let mut reader = CanonicalReader::new(&b"Kanata\t0004\nC=\t-5\nC\t2\nI\t0\t7\t1\n"[..]);
/// assert_eq!(reader.next_command()?.unwrap().command, Command::Start(-5));
/// assert_eq!(reader.next_command()?.unwrap().command, Command::Step(2));
/// let event = reader.next_command()?.unwrap();
/// assert_eq!((event.line, event.cycle, event.sim_cycle), (4, 2, -3));
/// assert_eq!(event.command, Command::Insn { id: 0, sim_id: 7, thread: 1 });
/// assert!(reader.next_command()?.is_none());
/// # Ok::<(), kanata_pp::error::Error>(())
/// ```
#[derive(Debug)]
pub struct CanonicalReader<R> {
    input: R,
    /// The current line, LF stripped, when it crossed the end of the input's buffer (most
    /// lines are read where they are, in the input's buffer).
    buf: Vec<u8>,
    /// Bytes of the input's buffer the current line takes, LF included: consumed before the
    /// next line is read (the current line borrows them until then).
    unconsumed: usize,
    /// Bytes at the start of the input's buffer known to be whole lines (up to the last LF
    /// in it), which [`read_each`](Self::read_each) reads on without searching again; 0
    /// when not known.
    whole: usize,
    /// What the lines so far say.
    parser: LineParser,
    /// The input ended (or an error was returned): nothing more is read.
    ended: bool,
    /// The input ended cleanly.
    complete: bool,
}

impl<R: BufRead> CanonicalReader<R> {
    /// A reader of the canonical text `input` (uncompressed; decompress before).
    pub fn new(input: R) -> CanonicalReader<R> {
        CanonicalReader::with_parser(input, LineParser::new())
    }

    /// A reader of text that continues a file after the lines `at` describes (a frame of a
    /// seekable file), without its header.
    pub fn resume(input: R, at: Position) -> CanonicalReader<R> {
        CanonicalReader::with_parser(input, LineParser::resume(at))
    }

    fn with_parser(input: R, parser: LineParser) -> CanonicalReader<R> {
        CanonicalReader {
            input,
            buf: Vec::new(),
            unconsumed: 0,
            whole: 0,
            parser,
            ended: false,
            complete: false,
        }
    }

    /// The next command, or `None` at the end of the input. The header line is checked, not
    /// returned; the `C=` line is returned as [`Command::Start`]. After an error or the end,
    /// it returns `None`.
    ///
    /// # Errors
    /// [`ErrorKind::Input`], naming the line, for a line that is not canonical;
    /// [`ErrorKind::Io`] when reading fails.
    pub fn next_command(&mut self) -> Result<Option<Event<'_>>, Error> {
        // It reads from the front of the buffer: what `read_each` knew of it is forgotten.
        self.whole = 0;
        if self.ended {
            return Ok(None);
        }
        // Only the header gives no event: after it, read line 2.
        if self.parser.lines() == 0 {
            let header = next_line(&mut self.input, &mut self.buf, &mut self.unconsumed, 1);
            let header = match header {
                Ok(Some(header)) => self.parser.line(header).map(|_| ()),
                Ok(None) => self.parser.finish(),
                Err(error) => Err(error),
            };
            if let Err(error) = header {
                self.ended = true;
                return Err(error);
            }
        }
        let number = self.parser.lines() + 1;
        match next_line(&mut self.input, &mut self.buf, &mut self.unconsumed, number) {
            Ok(Some(bytes)) => match self.parser.line(bytes) {
                Ok(event) => Ok(event),
                Err(error) => {
                    self.ended = true;
                    Err(error)
                }
            },
            Ok(None) => {
                self.ended = true;
                self.parser.finish()?;
                self.complete = true;
                Ok(None)
            }
            Err(error) => {
                self.ended = true;
                Err(error)
            }
        }
    }

    /// The `C=` start cycle, once line 2 has been read.
    pub fn start_cycle(&self) -> Option<i64> {
        self.parser.start_cycle()
    }

    /// Konata's cycle of the latest line read.
    pub fn cycle(&self) -> u64 {
        self.parser.cycle()
    }

    /// The number of lines read so far (the header included).
    pub fn lines(&self) -> u64 {
        self.parser.lines()
    }

    /// Where the reader stands: after the latest line.
    pub fn position(&self) -> Position {
        self.parser.position()
    }

    /// Konata's cycle at the end of the file, once the input has ended without error: the
    /// last cycle of the trace. Konata draws instructions still in flight up to it + 1.
    pub fn last_cycle(&self) -> Option<u64> {
        self.complete.then_some(self.parser.cycle())
    }

    /// The input, given back.
    pub fn into_inner(mut self) -> R {
        self.input.consume(self.unconsumed);
        self.input
    }

    /// Reads the lines that follow and hands each one's event to `each`, until `each`
    /// returns `false` (the reader stops after that line: call again to read on) or the
    /// input ends. Returns `true` when `each` stopped it, `false` at the end of the input
    /// (or after an error, once returned).
    ///
    /// The events, errors, lines and cycles are those of calling
    /// [`next_command`](Self::next_command) until it gives `None`, but the lines are read a
    /// buffer at a time: every whole line in the input's buffer is parsed where it is, the
    /// common ones (plain numbers, ASCII text) in one pass that also finds the line's end, so
    /// a line costs no search for its LF and no call on the input. This is the way to read a
    /// whole file ([`Instructions`] and
    /// [`SegmentReader`](crate::output::segments::SegmentReader) read through it).
    ///
    /// ```
    /// use kanata_pp::output::canonical::{CanonicalReader, Command};
    ///
    /// let text = &b"Kanata\t0004\nC=\t0\nI\t0\t7\t0\nC\t2\nR\t0\t0\t0\n"[..];
    /// let mut reader = CanonicalReader::new(text);
    /// let mut steps = 0;
    /// let stopped = reader.read_each(|event| {
    ///     steps += u64::from(matches!(event.command, Command::Step(_)));
    ///     Ok(!matches!(event.command, Command::Retire { .. }))
    /// })?;
    /// assert!(stopped); // at the R, the last line
    /// assert!(!reader.read_each(|_| Ok(true))?); // the end
    /// assert_eq!((steps, reader.cycle(), reader.last_cycle()), (1, 2, Some(2)));
    /// # Ok::<(), kanata_pp::error::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`next_command`](Self::next_command), and the errors of `each`, which end the
    /// reading too.
    pub fn read_each(
        &mut self,
        mut each: impl FnMut(Event<'_>) -> Result<bool, Error>,
    ) -> Result<bool, Error> {
        loop {
            if self.ended {
                return Ok(false);
            }
            if self.parser.lines() >= 2 {
                match self.read_block(&mut each) {
                    Block::Read => continue,
                    Block::Stopped => return Ok(true),
                    Block::Failed(error) => {
                        self.ended = true;
                        return Err(error);
                    }
                    // The line crosses the end of the buffer, or the input ends.
                    Block::NoLine => {}
                }
            }
            let Some(event) = self.next_command()? else {
                return Ok(false);
            };
            match each(event) {
                Ok(true) => {}
                Ok(false) => return Ok(true),
                Err(error) => {
                    self.ended = true;
                    return Err(error);
                }
            }
        }
    }

    /// [`read_each`](Self::read_each) over the whole lines in the input's buffer.
    #[inline(always)]
    fn read_block(&mut self, each: &mut impl FnMut(Event<'_>) -> Result<bool, Error>) -> Block {
        self.input.consume(std::mem::take(&mut self.unconsumed));
        let parser = &mut self.parser;
        let block = match self.input.fill_buf() {
            Ok(block) => block,
            Err(error) => return Block::Failed(Error::from(error).with_line(parser.line + 1)),
        };
        if self.whole == 0 {
            // Searched once per buffer, not once per call: `each` may stop after any line.
            match memchr::memrchr(b'\n', block) {
                Some(last) => self.whole = last + 1,
                None => return Block::NoLine,
            }
        }
        let block = &block[..self.whole];
        let start = parser.start.unwrap_or(0);
        let mut sim = sim_cycle(start, parser.cycle);
        let mut at = 0;
        let mut outcome = Block::Read;
        while at < block.len() {
            parser.line += 1;
            let (command, next) = match parse_common_at(block, at) {
                Some(parsed) => parsed,
                None => {
                    // The block ends with an LF.
                    let end = memchr::memchr(b'\n', &block[at..]).map_or(block.len(), |lf| at + lf);
                    match parse_checked(&block[at..end], parser.line) {
                        Ok(command) => (command, end + 1),
                        Err(error) => {
                            outcome = Block::Failed(error);
                            at = end + 1;
                            break;
                        }
                    }
                }
            };
            at = next;
            if let Command::Step(step) = command {
                if parser.advance(step).is_none() {
                    outcome = Block::Failed(parser.past_i64());
                    break;
                }
                sim = sim_cycle(start, parser.cycle);
            }
            let event = Event {
                line: parser.line,
                cycle: parser.cycle,
                sim_cycle: sim,
                command,
            };
            match each(event) {
                Ok(true) => {}
                Ok(false) => {
                    outcome = Block::Stopped;
                    break;
                }
                Err(error) => {
                    outcome = Block::Failed(error);
                    break;
                }
            }
        }
        self.input.consume(at);
        self.whole -= at;
        outcome
    }
}

/// How [`CanonicalReader::read_block`] ended.
enum Block {
    /// Every line of the buffer was read.
    Read,
    /// `each` stopped the reading.
    Stopped,
    /// An error, of the text or of `each`.
    Failed(Error),
    /// No whole line in the buffer: the next one crosses its end, or the input has ended.
    NoLine,
}

/// Reads line `line` of `input` without its LF, where it is in the input's buffer when it
/// can (no copy), into `buf` when it crosses the buffer's end; `None` at the end of the
/// input. `unconsumed` carries the length of the line returned to the next call, which
/// consumes it.
fn next_line<'a, R: BufRead>(
    input: &'a mut R,
    buf: &'a mut Vec<u8>,
    unconsumed: &mut usize,
    line: u64,
) -> Result<Option<&'a [u8]>, Error> {
    input.consume(std::mem::take(unconsumed));
    let io = |e: std::io::Error| Error::from(e).with_line(line);
    let available = input.fill_buf().map_err(io)?;
    if let Some(lf) = memchr::memchr(b'\n', available) {
        *unconsumed = lf + 1;
        // The buffer again, which `fill_buf` returns as it is while nothing is consumed: the
        // borrow checker does not let the first one out of the function on one branch only.
        return Ok(Some(&input.fill_buf().map_err(io)?[..lf]));
    }
    if available.is_empty() {
        return Ok(None);
    }
    buf.clear();
    input.read_until(b'\n', buf).map_err(io)?;
    if buf.pop() != Some(b'\n') {
        return Err(not_canonical(
            line,
            "the last line does not end with LF (is the file truncated?)",
        ));
    }
    Ok(Some(&buf[..]))
}

/// The simulator's cycle at Konata's `cycle`, which [`LineParser::advance`] keeps within
/// i64.
fn sim_cycle(start: i64, cycle: u64) -> i64 {
    i64::try_from(i128::from(start) + i128::from(cycle)).unwrap_or(i64::MAX)
}

/// The error for line `line`: "not canonical Kanata: `what`".
fn not_canonical(line: u64, what: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Input, format!("not canonical Kanata: {what}")).with_line(line)
}

/// The start of `bytes`, printable (control characters escaped), for an error message.
pub(crate) fn quote(bytes: &[u8]) -> String {
    shorten(bytes).escape_debug().to_string()
}

fn bad_number(line: u64, what: &str, command: &str, field: &[u8]) -> Error {
    not_canonical(
        line,
        format!(
            "the {what} of {command} line is not a plain decimal number: `{}`",
            quote(field)
        ),
    )
}

/// `field` up to its first TAB (a skimmed field may run to the end of the line). Skimmed
/// fields are short: a loop beats a call of `memchr`.
#[inline]
fn up_to_tab(field: &[u8]) -> &[u8] {
    match field.iter().position(|&b| b == b'\t') {
        Some(tab) => &field[..tab],
        None => field,
    }
}

/// The field at the start of `s` up to its TAB, and what follows the TAB (`None` without
/// one).
#[inline]
fn split_tab(s: &[u8]) -> (&[u8], Option<&[u8]>) {
    match s.iter().position(|&b| b == b'\t') {
        Some(tab) => (&s[..tab], Some(&s[tab + 1..])),
        None => (s, None),
    }
}

/// The plain decimal (as [`parse_u64`] reads it) that starts `s` and ends at a TAB or at the
/// end of `s`, and what follows the TAB (`None` without one): one pass, for skimming.
#[inline]
fn leading_u64(s: &[u8]) -> Option<(u64, Option<&[u8]>)> {
    let (&first, rest) = s.split_first()?;
    let mut value = u64::from(first.wrapping_sub(b'0'));
    if value > 9 {
        return None;
    }
    for (at, &b) in rest.iter().enumerate() {
        if b == b'\t' {
            return Some((value, Some(&rest[at + 1..])));
        }
        let digit = b.wrapping_sub(b'0');
        // No digit after a leading 0.
        if digit > 9 || value == 0 {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(digit))?;
    }
    Some((value, None))
}

/// A plain non-negative decimal: `0` or a non-zero digit and digits, within u64.
fn parse_u64(field: &[u8]) -> Option<u64> {
    match field {
        [] => None,
        [b'0'] => Some(0),
        [b'0', ..] => None,
        _ => field.iter().try_fold(0u64, |n, &b| {
            let digit = b.wrapping_sub(b'0');
            if digit > 9 {
                return None;
            }
            n.checked_mul(10)?.checked_add(u64::from(digit))
        }),
    }
}

/// A plain decimal with an optional `-` (never `-0`), within i64.
pub(crate) fn parse_i64(field: &[u8]) -> Option<i64> {
    match field {
        [b'-', digits @ ..] => {
            let n = parse_u64(digits).filter(|&n| n != 0)?;
            if n == 1 << 63 {
                Some(i64::MIN)
            } else {
                i64::try_from(n).ok().map(|n| -n)
            }
        }
        _ => parse_u64(field).and_then(|n| i64::try_from(n).ok()),
    }
}

/// A plain decimal with an optional `-` (never `-0`), within i128: a simulator id.
fn parse_i128(field: &[u8]) -> Option<i128> {
    let (negative, digits) = match field {
        [b'-', digits @ ..] => (true, digits),
        _ => (false, field),
    };
    let magnitude: u128 = match digits {
        [] => return None,
        [b'0'] if !negative => 0,
        [b'0', ..] => return None,
        _ => digits.iter().try_fold(0u128, |n, &b| {
            let digit = b.wrapping_sub(b'0');
            if digit > 9 {
                return None;
            }
            n.checked_mul(10)?.checked_add(u128::from(digit))
        })?,
    };
    if negative {
        0i128.checked_sub_unsigned(magnitude)
    } else {
        i128::try_from(magnitude).ok()
    }
}

/// Splits `rest` (the line after its command and TAB) into exactly `N` fields.
fn fields<'b, const N: usize>(
    rest: &'b str,
    line: u64,
    command: &str,
) -> Result<[&'b str; N], Error> {
    let mut out = [""; N];
    let mut from = 0;
    let mut tabs = memchr::memchr_iter(b'\t', rest.as_bytes());
    for (i, slot) in out.iter_mut().enumerate() {
        let to = if i + 1 == N {
            rest.len()
        } else {
            match tabs.next() {
                Some(to) => to,
                None => {
                    let found = i + 2; // the command and the fields so far
                    return Err(too_few(line, command, N + 1, found));
                }
            }
        };
        *slot = &rest[from..to];
        from = to + 1;
    }
    if tabs.next().is_some() {
        let found = N + 2 + tabs.count();
        return Err(not_canonical(
            line,
            format!("expected {} fields in {command} line, found {found}", N + 1),
        ));
    }
    Ok(out)
}

fn too_few(line: u64, command: &str, expected: usize, found: usize) -> Error {
    not_canonical(
        line,
        format!("expected {expected} fields in {command} line, found {found}"),
    )
}

/// A field that must be a plain non-negative decimal.
fn unsigned(field: &str, line: u64, what: &str, command: &str) -> Result<u64, Error> {
    parse_u64(field.as_bytes()).ok_or_else(|| bad_number(line, what, command, field.as_bytes()))
}

/// A field that must be a plain decimal, negative allowed.
fn signed(field: &str, line: u64, what: &str, command: &str) -> Result<i64, Error> {
    parse_i64(field.as_bytes()).ok_or_else(|| bad_number(line, what, command, field.as_bytes()))
}

/// White space as Rust's `trim` or JavaScript's (which Konata uses, and which also strips
/// U+FEFF) sees it.
fn is_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

/// A stage name: not empty, no CR, no white space at either end.
fn stage_name<'b>(name: &'b str, line: u64, command: &str) -> Result<&'b str, Error> {
    let problem = if name.is_empty() {
        "is empty"
    } else if name.contains('\r') {
        "contains a CR"
    } else if name.starts_with(is_space) || name.ends_with(is_space) {
        "has white space at an end"
    } else {
        return Ok(name);
    };
    Err(not_canonical(
        line,
        format!(
            "the stage name of {command} line {problem}: `{}`",
            quote(name.as_bytes())
        ),
    ))
}

/// Parses one line after line 2, without its LF.
fn parse(bytes: &[u8], line: u64) -> Result<Command<'_>, Error> {
    match parse_common(bytes) {
        Some(command) => Ok(command),
        None => parse_checked(bytes, line),
    }
}

/// The common line read in one pass: a command whose numbers are plain non-negative
/// decimals and whose text is ASCII-only, which is what almost every line of a trace is.
/// `None` for anything else, valid or not, which [`parse_checked`] then reads (and words the
/// error of). It accepts only lines `parse_checked` accepts, and reads them the same
/// (`canonical_common_lines_read_as_checked` and the `canonical` fuzz target hold it to
/// that).
#[inline]
pub(crate) fn parse_common(bytes: &[u8]) -> Option<Command<'_>> {
    let (&command, rest) = bytes.split_first()?;
    let rest = rest.strip_prefix(b"\t")?;
    Some(match command {
        b'S' | b'E' => {
            let (id, rest) = leading_u64(rest)?;
            let (lane, name) = leading_u64(rest?)?;
            let name = ascii_stage_name(name?)?;
            if command == b'S' {
                Command::StageStart { id, lane, name }
            } else {
                Command::StageEnd { id, lane, name }
            }
        }
        b'C' => match leading_u64(rest)? {
            (step, None) if step > 0 => Command::Step(step),
            _ => return None,
        },
        b'L' => {
            let (id, rest) = leading_u64(rest)?;
            let kind = match rest? {
                [b'0', b'\t', ..] => LabelKind::Name,
                [b'1', b'\t', ..] => LabelKind::Detail,
                [b'2', b'\t', ..] => LabelKind::StageNote,
                _ => return None,
            };
            let text = &rest?[2..];
            if text.is_empty() || !text.iter().all(|b| (b' '..0x7f).contains(b)) {
                return None;
            }
            // ASCII without control characters: UTF-8 with no TAB and no CR.
            let text = std::str::from_utf8(text).ok()?;
            Command::Label { id, kind, text }
        }
        b'I' => {
            let (id, rest) = leading_u64(rest)?;
            let (sim_id, rest) = leading_u64(rest?)?;
            let (thread, none) = leading_u64(rest?)?;
            if none.is_some() {
                return None;
            }
            Command::Insn {
                id,
                sim_id: i128::from(sim_id),
                thread: i64::try_from(thread).ok()?,
            }
        }
        b'R' => {
            let (id, rest) = leading_u64(rest)?;
            let (retire_id, rest) = leading_u64(rest?)?;
            let flushed = match rest? {
                b"0" => false,
                b"1" => true,
                _ => return None,
            };
            Command::Retire {
                id,
                retire_id: i64::try_from(retire_id).ok()?,
                flushed,
            }
        }
        b'W' => {
            let (consumer, rest) = leading_u64(rest)?;
            let (producer, rest) = leading_u64(rest?)?;
            let (kind, none) = leading_u64(rest?)?;
            if none.is_some() {
                return None;
            }
            Command::Dep {
                consumer,
                producer,
                kind,
            }
        }
        _ => return None,
    })
}

/// [`parse_common`] of the line that starts at `at` in `block`, which ends with an LF:
/// the command and where the next line starts. It reads each field once and finds the
/// line's end on the way (the last field ends at the LF), so it accepts exactly the lines
/// `parse_common` accepts, with their LF (`canonical_common_lines_read_in_blocks` and the
/// `canonical` fuzz target hold it to that). No index goes past the LF: every scan stops
/// at the first byte it does not take, and none takes an LF.
#[inline(always)]
pub(crate) fn parse_common_at(block: &[u8], at: usize) -> Option<(Command<'_>, usize)> {
    let command = block[at];
    if command == b'\n' || block[at + 1] != b'\t' {
        return None;
    }
    let at = at + 2;
    Some(match command {
        b'S' | b'E' => {
            let (id, at) = field_at(block, at)?;
            let (lane, at) = field_at(block, at)?;
            let mut end = at;
            while block[end] > b' ' && block[end] < 0x7f {
                end += 1;
            }
            if end == at || block[end] != b'\n' {
                return None;
            }
            let name = std::str::from_utf8(&block[at..end]).ok()?;
            let command = if command == b'S' {
                Command::StageStart { id, lane, name }
            } else {
                Command::StageEnd { id, lane, name }
            };
            (command, end + 1)
        }
        b'C' => match last_at(block, at)? {
            (0, _) => return None,
            (step, next) => (Command::Step(step), next),
        },
        b'L' => {
            let (id, at) = field_at(block, at)?;
            let kind = match block[at] {
                b'0' => LabelKind::Name,
                b'1' => LabelKind::Detail,
                b'2' => LabelKind::StageNote,
                _ => return None,
            };
            if block[at + 1] != b'\t' {
                return None;
            }
            let at = at + 2;
            let mut end = at;
            while (b' '..0x7f).contains(&block[end]) {
                end += 1;
            }
            if end == at || block[end] != b'\n' {
                return None;
            }
            // ASCII without control characters: UTF-8 with no TAB and no CR.
            let text = std::str::from_utf8(&block[at..end]).ok()?;
            (Command::Label { id, kind, text }, end + 1)
        }
        b'I' => {
            let (id, at) = field_at(block, at)?;
            let (sim_id, at) = field_at(block, at)?;
            let (thread, next) = last_at(block, at)?;
            let command = Command::Insn {
                id,
                sim_id: i128::from(sim_id),
                thread: i64::try_from(thread).ok()?,
            };
            (command, next)
        }
        b'R' => {
            let (id, at) = field_at(block, at)?;
            let (retire_id, at) = field_at(block, at)?;
            let flushed = match block[at] {
                b'0' => false,
                b'1' => true,
                _ => return None,
            };
            if block[at + 1] != b'\n' {
                return None;
            }
            let command = Command::Retire {
                id,
                retire_id: i64::try_from(retire_id).ok()?,
                flushed,
            };
            (command, at + 2)
        }
        b'W' => {
            let (consumer, at) = field_at(block, at)?;
            let (producer, at) = field_at(block, at)?;
            let (kind, next) = last_at(block, at)?;
            let command = Command::Dep {
                consumer,
                producer,
                kind,
            };
            (command, next)
        }
        _ => return None,
    })
}

/// The plain decimal (as [`parse_u64`] reads it) at `at` in `block`, and the index of the
/// byte after its digits.
#[inline(always)]
fn number_at(block: &[u8], at: usize) -> Option<(u64, usize)> {
    let first = block[at].wrapping_sub(b'0');
    if first > 9 {
        return None;
    }
    // A leading 0 is the whole number: a digit after it is refused by the caller, which
    // wants a TAB or an LF there.
    if first == 0 {
        return Some((0, at + 1));
    }
    let mut value = u64::from(first);
    let mut at = at + 1;
    loop {
        let digit = block[at].wrapping_sub(b'0');
        if digit > 9 {
            return Some((value, at));
        }
        value = value.checked_mul(10)?.checked_add(u64::from(digit))?;
        at += 1;
    }
}

/// A number and its TAB: the value and where the next field starts.
#[inline(always)]
fn field_at(block: &[u8], at: usize) -> Option<(u64, usize)> {
    let (value, at) = number_at(block, at)?;
    (block[at] == b'\t').then_some((value, at + 1))
}

/// The last number of a line and its LF: the value and where the next line starts.
#[inline(always)]
fn last_at(block: &[u8], at: usize) -> Option<(u64, usize)> {
    let (value, at) = number_at(block, at)?;
    (block[at] == b'\n').then_some((value, at + 1))
}

/// A stage name of printable ASCII without spaces (what [`stage_name`] accepts, and
/// almost every name is), or `None`.
#[inline]
fn ascii_stage_name(name: &[u8]) -> Option<&str> {
    if name.is_empty() || !name.iter().all(|&b| b > b' ' && b < 0x7f) {
        return None;
    }
    std::str::from_utf8(name).ok()
}

/// Parses one line after line 2, without its LF, checking every rule and wording the error.
pub(crate) fn parse_checked(bytes: &[u8], line: u64) -> Result<Command<'_>, Error> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(not_canonical(line, "the line is not valid UTF-8"));
    };
    if text.is_empty() {
        return Err(not_canonical(line, "empty line"));
    }
    let (name, rest) = match memchr::memchr(b'\t', bytes) {
        Some(tab) => (&text[..tab], Some(&text[tab + 1..])),
        None => (text, None),
    };
    let (what, expected) = match name {
        "C" => ("a C", 2),
        "I" => ("an I", 4),
        "L" => ("an L", 4),
        "S" => ("an S", 4),
        "E" => ("an E", 4),
        "R" => ("an R", 4),
        "W" => ("a W", 4),
        "C=" => {
            return Err(not_canonical(
                line,
                "C= appears only on line 2 (later times are C steps)",
            ))
        }
        _ => {
            return Err(not_canonical(
                line,
                format!("unknown command `{}`", quote(name.as_bytes())),
            ))
        }
    };
    let Some(rest) = rest else {
        return Err(too_few(line, what, expected, 1));
    };
    Ok(match name {
        "C" => {
            let [n] = fields(rest, line, what)?;
            let step = unsigned(n, line, "step", what)?;
            if step == 0 {
                return Err(not_canonical(line, "a C line steps 0 cycles"));
            }
            Command::Step(step)
        }
        "I" => {
            let [id, sim_id, thread] = fields(rest, line, what)?;
            Command::Insn {
                id: unsigned(id, line, "id", what)?,
                sim_id: parse_i128(sim_id.as_bytes())
                    .ok_or_else(|| bad_number(line, "simulator id", what, sim_id.as_bytes()))?,
                thread: signed(thread, line, "thread", what)?,
            }
        }
        "L" => {
            let [id, kind, text] = fields(rest, line, what)?;
            let id = unsigned(id, line, "id", what)?;
            let kind = match kind {
                "0" => LabelKind::Name,
                "1" => LabelKind::Detail,
                "2" => LabelKind::StageNote,
                _ => {
                    return Err(not_canonical(
                        line,
                        format!(
                            "the type of an L line is not 0, 1 or 2: `{}`",
                            quote(kind.as_bytes())
                        ),
                    ))
                }
            };
            if text.is_empty() {
                return Err(not_canonical(line, "the text of an L line is empty"));
            }
            if memchr::memchr(b'\r', text.as_bytes()).is_some() {
                return Err(not_canonical(line, "the text of an L line contains a CR"));
            }
            Command::Label { id, kind, text }
        }
        "S" | "E" => {
            let [id, lane, stage] = fields(rest, line, what)?;
            let id = unsigned(id, line, "id", what)?;
            let lane = unsigned(lane, line, "lane", what)?;
            let name = stage_name(stage, line, what)?;
            if what == "an S" {
                Command::StageStart { id, lane, name }
            } else {
                Command::StageEnd { id, lane, name }
            }
        }
        "R" => {
            let [id, retire_id, kind] = fields(rest, line, what)?;
            let id = unsigned(id, line, "id", what)?;
            let retire_id = signed(retire_id, line, "retire id", what)?;
            let flushed = match kind {
                "0" => false,
                "1" => true,
                _ => {
                    return Err(not_canonical(
                        line,
                        format!(
                            "the type of an R line is not 0 or 1: `{}`",
                            quote(kind.as_bytes())
                        ),
                    ))
                }
            };
            Command::Retire {
                id,
                retire_id,
                flushed,
            }
        }
        _ => {
            let [consumer, producer, kind] = fields(rest, line, what)?;
            Command::Dep {
                consumer: unsigned(consumer, line, "consumer", what)?,
                producer: unsigned(producer, line, "producer", what)?,
                kind: unsigned(kind, line, "type", what)?,
            }
        }
    })
}

/// How an instruction left the pipeline (its `R`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Retirement {
    /// The retire id as written.
    pub retire_id: i64,
    /// Flushed (type 1) rather than retired (type 0).
    pub flushed: bool,
}

/// One stay of an instruction in a stage of a lane: from its `S` to the `E` that closes it
/// (or the next `S` of the lane, or the `R`, in the compact form).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Segment {
    /// The lane.
    pub lane: u64,
    /// The stage name (a string kept inline when it is short, as stage names are: no
    /// allocation of its own; it derefs to `&str`).
    pub name: CompactString,
    /// Konata's cycle of the `S`.
    pub start: u64,
    /// Konata's cycle of the end, `None` if the stage is still open at the end of the file.
    pub end: Option<u64>,
    /// The type-2 labels (notes) written while this was the stage the instruction entered
    /// most recently, in order, a line break between two (as Konata joins them); the `\n`
    /// escapes inside each are kept as written.
    pub notes: String,
}

/// A dependency arrow into an instruction (its `W` lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dependency {
    /// The file id of the producer (always smaller than the consumer's).
    pub producer: u64,
    /// The dependency type (0: wake-up).
    pub kind: u64,
}

/// The most instructions [`Instructions::recycle`] keeps.
pub const SPARES: usize = 4096;

/// One whole instruction, as [`Instructions`] yields it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Instruction {
    /// The file id: Konata's op id, dense from 0.
    pub id: u64,
    /// The simulator's own id.
    pub sim_id: i128,
    /// The thread id.
    pub thread: i64,
    /// Konata's cycle of the `I`.
    pub begin: u64,
    /// Konata's cycle of the `R`, `None` if the instruction has none (still in flight at the
    /// end of the file; Konata draws it up to the last cycle + 1).
    pub end: Option<u64>,
    /// The retire id and whether it was a flush, `None` without `R`.
    pub retire: Option<Retirement>,
    /// The type-0 label (Konata's left pane): every `L … 0` text appended.
    pub name: String,
    /// The type-1 label (mouse-over detail): every `L … 1` text appended.
    pub detail: String,
    /// The stage segments in the order of their `S`; notes are on the segments.
    pub stages: Vec<Segment>,
    /// The dependencies in the order of their `W`.
    pub deps: Vec<Dependency>,
}

/// Whole instructions of a canonical file, in op-id order (see the [module](self) docs).
///
/// An instruction is yielded once it and every older one have ended (their `R` was read);
/// at the end of the input the ones still in flight follow, with `end` `None`. After an
/// error the iterator ends.
///
/// ```
/// use kanata_pp::output::canonical::Instructions;
/// use kanata_writer::{LabelKind, Lane, Writer};
///
/// let mut w = Writer::new(Vec::new());
/// let x = w.stage("X")?;
/// let a = w.begin(10, 0)?;
/// let b = w.begin(11, 0)?;
/// w.enter(a, Lane::MAIN, x)?;
/// w.label(a, LabelKind::StageNote, "hit")?;
/// w.advance(2)?;
/// w.retire(a)?;
/// let text = w.finish()?.output;
///
/// let insns: Vec<_> = Instructions::new(&text[..]).collect::<Result<_, _>>()?;
/// assert_eq!(insns[0].end, Some(2));
/// assert_eq!(insns[0].stages[0].notes, "hit");
/// assert_eq!((insns[1].sim_id, insns[1].end), (11, None));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Instructions<R> {
    reader: CanonicalReader<R>,
    assembly: Assembly,
    /// The input ended (or failed): only `pending` is left.
    ended: bool,
    failed: bool,
}

/// The instructions [`Instructions`] is assembling.
#[derive(Debug, Default)]
struct Assembly {
    /// The instructions not yielded yet, from file id `next_id - pending.len()`. The open
    /// segment of a lane, if any, is the lane's latest segment.
    pending: VecDeque<Instruction>,
    /// The id the next `I` must have.
    next_id: u64,
    /// The segments of the instruction retired last: what a new one is given room for.
    stages_hint: usize,
    /// Instructions given back ([`Instructions::recycle`]), made into new ones.
    spares: Vec<Instruction>,
}

impl<R: BufRead> Instructions<R> {
    /// The instructions of the canonical text `input`.
    pub fn new(input: R) -> Instructions<R> {
        Instructions::from_reader(CanonicalReader::new(input))
    }

    /// The instructions read through `reader`, which must not have read any line yet.
    pub fn from_reader(reader: CanonicalReader<R>) -> Instructions<R> {
        Instructions {
            reader,
            assembly: Assembly::default(),
            ended: false,
            failed: false,
        }
    }

    /// The `C=` start cycle, once the header has been read (after the first call of
    /// [`next`](Iterator::next)).
    pub fn start_cycle(&self) -> Option<i64> {
        self.reader.start_cycle()
    }

    /// Konata's last cycle of the file, once the input has ended without error. Konata draws
    /// instructions without `R` up to it + 1.
    pub fn last_cycle(&self) -> Option<u64> {
        self.reader.last_cycle()
    }

    /// Konata's cycle of the latest line read.
    pub fn cycle(&self) -> u64 {
        self.reader.cycle()
    }

    /// How many instructions are held: begun and not yielded yet.
    pub fn held(&self) -> usize {
        self.assembly.pending.len()
    }

    /// The line reader underneath.
    pub fn reader(&self) -> &CanonicalReader<R> {
        &self.reader
    }

    /// The input, given back (what was read of it is consumed).
    pub fn into_inner(self) -> R {
        self.reader.into_inner()
    }

    /// Gives back an instruction that was yielded and is no longer needed: a later one is
    /// made in its place, in the memory of its strings and vectors, instead of new memory.
    /// A reader that hands instructions to another thread, which would free them there
    /// (against the allocator's lock of this thread's memory), can have them sent back
    /// instead. At most [`SPARES`] are kept; more are dropped.
    pub fn recycle(&mut self, insn: Instruction) {
        if self.assembly.spares.len() < SPARES {
            self.assembly.spares.push(insn);
        }
    }

    /// Reads commands into the pending instructions until the oldest one has ended; false
    /// at the end of the input.
    fn step(&mut self) -> Result<bool, Error> {
        let assembly = &mut self.assembly;
        self.reader.read_each(|event| {
            assembly.apply(event)?;
            Ok(assembly.pending.front().is_none_or(|p| p.end.is_none()))
        })
    }
}

impl Assembly {
    /// Applies one command to the pending instructions.
    #[inline(always)]
    fn apply(&mut self, event: Event<'_>) -> Result<(), Error> {
        let (line, cycle) = (event.line, event.cycle);
        let base = self.next_id - self.pending.len() as u64;
        let next_id = self.next_id;
        match event.command {
            Command::Start(_) | Command::Step(_) => {}
            Command::Insn { id, sim_id, thread } => {
                if id != self.next_id {
                    return Err(not_canonical(
                        line,
                        format!("an I line has id {id}, expected {}", self.next_id),
                    ));
                }
                let insn = match self.spares.pop() {
                    // A used one: its strings and vectors keep their memory.
                    Some(mut insn) => {
                        insn.id = id;
                        insn.sim_id = sim_id;
                        insn.thread = thread;
                        insn.begin = cycle;
                        insn.end = None;
                        insn.retire = None;
                        insn.name.clear();
                        insn.detail.clear();
                        insn.stages.clear();
                        insn.deps.clear();
                        insn
                    }
                    None => Instruction {
                        id,
                        sim_id,
                        thread,
                        begin: cycle,
                        // As many as the previous instruction had: one allocation, mostly.
                        stages: Vec::with_capacity(self.stages_hint),
                        ..Instruction::default()
                    },
                };
                self.pending.push_back(insn);
                self.next_id += 1;
            }
            Command::Label { id, kind, text } => {
                let p = live(&mut self.pending, base, next_id, id, line, "an L")?;
                match kind {
                    LabelKind::Name => p.name.push_str(text),
                    LabelKind::Detail => p.detail.push_str(text),
                    LabelKind::StageNote => match p.stages.last_mut() {
                        Some(segment) => {
                            // Konata joins a stage's notes with a line break
                            // (`OnikiriParser.parseLabelCommand_`), unlike the other labels.
                            if !segment.notes.is_empty() {
                                segment.notes.push('\n');
                            }
                            segment.notes.push_str(text)
                        }
                        None => {
                            return Err(not_canonical(
                                line,
                                format!(
                                    "a note (L type 2) for instruction {id} before its first S"
                                ),
                            ))
                        }
                    },
                }
            }
            Command::StageStart { id, lane, name } => {
                let p = live(&mut self.pending, base, next_id, id, line, "an S")?;
                if let Some(open) = open_segment(&mut p.stages, lane) {
                    // The compact form: the S closes the lane's open stage.
                    open.end = Some(cycle);
                }
                p.stages.push(Segment {
                    lane,
                    name: CompactString::new(name),
                    start: cycle,
                    end: None,
                    notes: String::new(),
                });
            }
            Command::StageEnd { id, lane, name } => {
                let p = live(&mut self.pending, base, next_id, id, line, "an E")?;
                let Some(segment) = open_segment(&mut p.stages, lane) else {
                    return Err(not_canonical(
                        line,
                        format!("an E line closes lane {lane} of instruction {id}, which has no open stage"),
                    ));
                };
                if segment.name != name {
                    return Err(not_canonical(
                        line,
                        format!(
                            "an E line closes `{}` in lane {lane} of instruction {id}, whose open stage is `{}`",
                            quote(name.as_bytes()),
                            quote(segment.name.as_bytes())
                        ),
                    ));
                }
                segment.end = Some(cycle);
            }
            Command::Retire {
                id,
                retire_id,
                flushed,
            } => {
                let p = live(&mut self.pending, base, next_id, id, line, "an R")?;
                for segment in &mut p.stages {
                    if segment.end.is_none() {
                        segment.end = Some(cycle);
                    }
                }
                p.end = Some(cycle);
                p.retire = Some(Retirement { retire_id, flushed });
                // Capped: one long-lived instruction must not make every later one big.
                self.stages_hint = p.stages.len().min(32);
            }
            Command::Dep {
                consumer,
                producer,
                kind,
            } => {
                let p = live(&mut self.pending, base, next_id, consumer, line, "a W")?;
                if producer >= consumer {
                    return Err(not_canonical(
                        line,
                        format!("a W line's producer {producer} is not older than its consumer {consumer}"),
                    ));
                }
                p.deps.push(Dependency { producer, kind });
            }
        }
        Ok(())
    }
}

/// The open segment of `lane` among `stages`: the lane's latest segment, if it has not
/// ended (a lane's segments follow one another: each `S` closes or follows the one before).
fn open_segment(stages: &mut [Segment], lane: u64) -> Option<&mut Segment> {
    stages
        .iter_mut()
        .rev()
        .find(|segment| segment.lane == lane)
        .filter(|segment| segment.end.is_none())
}

/// The live instruction `id` names among `pending` (file ids from `base` to `next_id`), or
/// the error for `what` line `line`.
#[inline(always)]
fn live<'p>(
    pending: &'p mut VecDeque<Instruction>,
    base: u64,
    next_id: u64,
    id: u64,
    line: u64,
    what: &str,
) -> Result<&'p mut Instruction, Error> {
    if id < next_id && id >= base {
        let index = (id - base) as usize;
        if pending[index].end.is_none() {
            return Ok(&mut pending[index]);
        }
    }
    Err(not_live(id >= next_id, id, line, what))
}

/// The error of a line that names instruction `id`, which is not live: it has not begun,
/// or it has ended.
#[cold]
fn not_live(not_begun: bool, id: u64, line: u64, what: &str) -> Error {
    let state = match not_begun {
        true => "which has not begun",
        false => "which has ended",
    };
    not_canonical(line, format!("{what} line names instruction {id}, {state}"))
}

impl<R: BufRead> Iterator for Instructions<R> {
    type Item = Result<Instruction, Error>;

    fn next(&mut self) -> Option<Result<Instruction, Error>> {
        if self.failed {
            return None;
        }
        loop {
            let pending = &mut self.assembly.pending;
            let ready = pending
                .front()
                .is_some_and(|p| p.end.is_some() || self.ended);
            if ready {
                return pending.pop_front().map(Ok);
            }
            if self.ended {
                return None;
            }
            match self.step() {
                Ok(true) => {}
                Ok(false) => self.ended = true,
                Err(error) => {
                    self.failed = true;
                    self.assembly.pending.clear();
                    return Some(Err(error));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::testing::{random_trace, segment, Rng};
    use kanata_writer::{DepKind, Lane, WriterBuilder};

    /// Every instruction of `bytes`, or the first error.
    fn read_all(bytes: &[u8]) -> Result<Vec<Instruction>, Error> {
        Instructions::new(bytes).collect()
    }

    /// The error reading `bytes` gives: its line and message.
    fn error_of(bytes: &[u8]) -> (Option<u64>, String) {
        match read_all(bytes) {
            Ok(insns) => panic!("read {} instructions from {bytes:?}", insns.len()),
            Err(error) => {
                assert_eq!(error.kind(), ErrorKind::Input, "{error}");
                assert!(
                    error.message().starts_with("not canonical Kanata: "),
                    "{error}"
                );
                (error.line(), error.message().to_owned())
            }
        }
    }

    /// A file of the header, `C=\t0` and `body`.
    fn file(body: &str) -> Vec<u8> {
        format!("Kanata\t0004\nC=\t0\n{body}").into_bytes()
    }

    #[track_caller]
    fn assert_error(bytes: &[u8], line: u64, part: &str) {
        let (at, message) = error_of(bytes);
        assert_eq!(at, Some(line), "{message}");
        assert!(message.contains(part), "`{message}` lacks `{part}`");
    }

    #[test]
    fn canonical_events_of_the_documented_example() {
        let text = "Kanata\t0004\nC=\t100\nI\t0\t4096\t0\nL\t0\t0\t0x1000: addi x1, x0, 5\n\
                    S\t0\t0\tF\nC\t1\nE\t0\t0\tF\nS\t0\t0\tX\nS\t0\t1\tstl\nC\t2\nE\t0\t0\tX\n\
                    E\t0\t1\tstl\nR\t0\t0\t0\nW\t3\t1\t0\nC\t3\n";
        let mut reader = CanonicalReader::new(text.as_bytes());
        let mut events = Vec::new();
        while let Some(event) = reader.next_command().unwrap() {
            events.push((
                event.line,
                event.cycle,
                event.sim_cycle,
                format!("{:?}", event.command),
            ));
        }
        let expected = [
            (2, 0, 100, "Start(100)"),
            (3, 0, 100, "Insn { id: 0, sim_id: 4096, thread: 0 }"),
            (
                4,
                0,
                100,
                "Label { id: 0, kind: Name, text: \"0x1000: addi x1, x0, 5\" }",
            ),
            (5, 0, 100, "StageStart { id: 0, lane: 0, name: \"F\" }"),
            (6, 1, 101, "Step(1)"),
            (7, 1, 101, "StageEnd { id: 0, lane: 0, name: \"F\" }"),
            (8, 1, 101, "StageStart { id: 0, lane: 0, name: \"X\" }"),
            (9, 1, 101, "StageStart { id: 0, lane: 1, name: \"stl\" }"),
            (10, 3, 103, "Step(2)"),
            (11, 3, 103, "StageEnd { id: 0, lane: 0, name: \"X\" }"),
            (12, 3, 103, "StageEnd { id: 0, lane: 1, name: \"stl\" }"),
            (13, 3, 103, "Retire { id: 0, retire_id: 0, flushed: false }"),
            (14, 3, 103, "Dep { consumer: 3, producer: 1, kind: 0 }"),
            (15, 6, 106, "Step(3)"),
        ];
        let expected: Vec<_> = expected
            .iter()
            .map(|&(l, c, s, d)| (l, c, s, d.to_owned()))
            .collect();
        assert_eq!(events, expected);
        assert_eq!(reader.start_cycle(), Some(100));
        assert_eq!(reader.last_cycle(), Some(6));
        assert_eq!(reader.lines(), 15);
        assert!(reader.next_command().unwrap().is_none());
    }

    #[test]
    fn canonical_instructions_equal_what_the_writer_wrote() {
        let mut w = WriterBuilder::new()
            .start_cycle(-7)
            .from_writer(Vec::new())
            .unwrap();
        let f = w.stage("F").unwrap();
        let x = w.stage("X").unwrap();
        let m = w.stage("Mem miss").unwrap();
        let a = w.begin(100, 0).unwrap();
        let b = w.begin_signed(-3, 2).unwrap();
        w.enter(a, Lane::MAIN, f).unwrap();
        w.label(a, LabelKind::Name, "0x10: ld").unwrap();
        w.label(a, LabelKind::Name, " x1, 0(x2)").unwrap();
        w.label(a, LabelKind::StageNote, "fetched").unwrap();
        w.advance(1).unwrap();
        w.enter(b, Lane::MAIN, f).unwrap();
        w.enter(a, Lane::MAIN, x).unwrap();
        w.label(a, LabelKind::StageNote, "x ").unwrap();
        w.label(a, LabelKind::StageNote, "again").unwrap();
        w.label(a, LabelKind::Detail, "r1 = 5\nr2 = 6").unwrap();
        w.advance(2).unwrap();
        w.stall_begin(a).unwrap();
        w.label(a, LabelKind::StageNote, "stalled").unwrap();
        w.enter(a, Lane::new(3), m).unwrap();
        w.advance(4).unwrap();
        w.depend(b, a, DepKind::new(5)).unwrap();
        w.stall_end(a).unwrap();
        w.advance(1).unwrap();
        assert_eq!(w.retire(a).unwrap(), Some(0));
        let c = w.begin(7, 1).unwrap();
        w.flush(b).unwrap();
        w.advance(3).unwrap();
        w.enter(c, Lane::MAIN, x).unwrap();
        w.depend(c, a, DepKind::WAKE_UP).unwrap();
        w.advance(2).unwrap();
        let d = w.begin(8, 1).unwrap();
        w.retire(c).unwrap();
        w.advance(5).unwrap();
        let text = w.finish().unwrap().output;

        let mut insns = Instructions::new(&text[..]);
        let all: Vec<_> = insns.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(insns.start_cycle(), Some(-7));
        assert_eq!(insns.last_cycle(), Some(18));
        let expected = vec![
            Instruction {
                id: 0,
                sim_id: 100,
                thread: 0,
                begin: 0,
                end: Some(8),
                retire: Some(Retirement {
                    retire_id: 0,
                    flushed: false,
                }),
                name: "0x10: ld x1, 0(x2)".to_owned(),
                detail: "r1 = 5\\nr2 = 6".to_owned(),
                stages: vec![
                    segment(0, "F", 0, Some(1), "fetched"),
                    // Two notes on one stage: joined with a line break, as Konata does.
                    segment(0, "X", 1, Some(8), "x \nagain"),
                    segment(1, "stl", 3, Some(7), "stalled"),
                    segment(3, "Mem miss", 3, Some(8), ""),
                ],
                deps: vec![],
            },
            Instruction {
                id: 1,
                sim_id: -3,
                thread: 2,
                begin: 0,
                end: Some(8),
                retire: Some(Retirement {
                    retire_id: 0,
                    flushed: true,
                }),
                name: String::new(),
                detail: String::new(),
                stages: vec![segment(0, "F", 1, Some(8), "")],
                deps: vec![Dependency {
                    producer: 0,
                    kind: 5,
                }],
            },
            Instruction {
                id: 2,
                sim_id: 7,
                thread: 1,
                begin: 8,
                end: Some(13),
                retire: Some(Retirement {
                    retire_id: 1,
                    flushed: false,
                }),
                name: String::new(),
                detail: String::new(),
                stages: vec![segment(0, "X", 11, Some(13), "")],
                deps: vec![Dependency {
                    producer: 0,
                    kind: 0,
                }],
            },
            Instruction {
                id: 3,
                sim_id: 8,
                thread: 1,
                begin: 13,
                end: None,
                retire: None,
                name: String::new(),
                detail: String::new(),
                stages: vec![],
                deps: vec![],
            },
        ];
        assert_eq!(all, expected);
        let _ = d;
    }

    #[test]
    fn canonical_open_instructions_and_stages_at_the_end() {
        let text = file("I\t0\t0\t0\nS\t0\t0\tF\nI\t1\t1\t0\nS\t1\t0\tF\nC\t2\nR\t1\t0\t0\nC\t1\n");
        let all = read_all(&text).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].end, all[0].retire), (None, None));
        assert_eq!(all[0].stages, vec![segment(0, "F", 0, None, "")]);
        assert_eq!(all[1].end, Some(2));
        assert_eq!(all[1].stages, vec![segment(0, "F", 0, Some(2), "")]);
    }

    #[test]
    fn canonical_yields_in_id_order_as_soon_as_older_ones_end() {
        // 1 ends before 0: nothing is yielded until 0 ends, then both.
        let text = file(
            "I\t0\t0\t0\nI\t1\t0\t0\nR\t1\t0\t0\nC\t1\nI\t2\t0\t0\nR\t0\t1\t0\nC\t1\nI\t3\t0\t0\n",
        );
        let mut insns = Instructions::new(&text[..]);
        assert_eq!(insns.next().unwrap().unwrap().id, 0);
        assert_eq!(insns.reader().lines(), 8);
        assert_eq!(insns.held(), 2);
        assert_eq!(insns.next().unwrap().unwrap().id, 1);
        let two = insns.next().unwrap().unwrap();
        assert_eq!((two.id, two.begin, two.end), (2, 1, None));
        assert_eq!(insns.last_cycle(), Some(2));
        assert_eq!(insns.next().unwrap().unwrap().id, 3);
        assert!(insns.next().is_none());
        assert!(insns.next().is_none());
    }

    #[test]
    fn canonical_compact_and_explicit_read_the_same() {
        for seed in 0..50 {
            let explicit = random_trace(seed, Some(false)).0;
            let compact = random_trace(seed, Some(true)).0;
            assert_eq!(read_all(&explicit).unwrap(), read_all(&compact).unwrap());
        }
    }

    #[test]
    fn canonical_random_traces_read_back_as_written() {
        let mut instructions = 0;
        for seed in 0..400 {
            let (text, expected, start, last) = random_trace(seed, None);
            let mut insns = Instructions::new(&text[..]);
            let all: Vec<_> = insns
                .by_ref()
                .collect::<Result<_, _>>()
                .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", String::from_utf8_lossy(&text)));
            assert_eq!(
                all,
                expected,
                "seed {seed}\n{}",
                String::from_utf8_lossy(&text)
            );
            assert_eq!(insns.start_cycle(), Some(start), "seed {seed}");
            assert_eq!(insns.last_cycle(), Some(last), "seed {seed}");
            instructions += all.len();
        }
        assert!(instructions > 2500, "{instructions}");
    }

    #[test]
    fn canonical_reads_the_sample_trace() {
        let text = include_bytes!("../../../samples/pipeline_sim.kanata");
        let lines_with_i = text
            .split(|&b| b == b'\n')
            .filter(|l| l.starts_with(b"I\t"))
            .count();
        let mut insns = Instructions::new(&text[..]);
        let mut count = 0;
        let mut most_held = 0;
        while let Some(insn) = insns.next() {
            let insn = insn.unwrap();
            assert_eq!(insn.id, count as u64);
            assert!(!insn.name.is_empty());
            most_held = most_held.max(insns.held());
            count += 1;
        }
        assert_eq!(count, lines_with_i);
        assert!(most_held < count / 2, "{most_held} of {count}");
        assert!(insns.last_cycle().is_some());
    }

    #[test]
    fn canonical_header_errors() {
        assert_error(b"", 1, "the file is empty");
        assert_error(b"Kanata\t0004\n", 2, "ends before the C= line");
        assert_error(b"Kanata 0004\nC=\t0\n", 1, "expected the header");
        assert_error(b"Kanata\t0003\nC=\t0\n", 1, "expected the header");
        assert_error(
            b"\xEF\xBB\xBFKanata\t0004\nC=\t0\n",
            1,
            "expected the header",
        );
        assert_error(b"Kanata\t0004\r\nC=\t0\n", 1, "expected the header");
        assert_error(b"Kanata\t0004\nC\t1\n", 2, "expected `C=\\t<start cycle>`");
        assert_error(
            b"Kanata\t0004\nC=\t01\n",
            2,
            "start cycle of a C= line is not a plain decimal number: `01`",
        );
        assert_error(b"Kanata\t0004\nC=\t-0\n", 2, "not a plain decimal");
        assert_error(b"Kanata\t0004\nC=\t0\t\n", 2, "not a plain decimal");
        assert_error(
            b"Kanata\t0004\nC=\t9223372036854775808\n",
            2,
            "not a plain decimal",
        );
        assert!(read_all(b"Kanata\t0004\nC=\t-9223372036854775808\n")
            .unwrap()
            .is_empty());
        assert!(read_all(b"Kanata\t0004\nC=\t0\n").unwrap().is_empty());
        assert_error(&file("C=\t5\n"), 3, "C= appears only on line 2");
        assert_error(&file("Kanata\t0004\n"), 3, "unknown command `Kanata`");
    }

    #[test]
    fn canonical_number_errors() {
        assert_error(
            &file("I\t01\t0\t0\n"),
            3,
            "the id of an I line is not a plain decimal number: `01`",
        );
        assert_error(&file("I\t+1\t0\t0\n"), 3, "`+1`");
        assert_error(&file("I\t 1\t0\t0\n"), 3, "` 1`");
        assert_error(&file("I\t1 \t0\t0\n"), 3, "`1 `");
        assert_error(&file("I\t-1\t0\t0\n"), 3, "the id of an I line");
        assert_error(&file("I\t0\t-0\t0\n"), 3, "the simulator id of an I line");
        assert_error(&file("I\t0\t0\t0x1\n"), 3, "the thread of an I line");
        assert_error(
            &file("I\t18446744073709551616\t0\t0\n"),
            3,
            "not a plain decimal",
        );
        assert_error(&file("C\t0\n"), 3, "steps 0 cycles");
        assert_error(&file("C\t-1\n"), 3, "the step of a C line");
        assert_error(&file("C\t\n"), 3, "the step of a C line");
        assert_error(
            &file("I\t0\t0\t0\nS\t0\t00\tF\n"),
            4,
            "the lane of an S line is not a plain decimal number: `00`",
        );
        assert_error(
            &file("I\t0\t0\t0\nS\t0\t+1\tF\n"),
            4,
            "the lane of an S line",
        );
        assert_error(
            &file("I\t0\t0\t0\nR\t0\t01\t0\n"),
            4,
            "the retire id of an R line",
        );
        assert_error(
            &file("I\t0\t0\t0\nR\t0\t0\t2\n"),
            4,
            "the type of an R line is not 0 or 1",
        );
        assert_error(
            &file("I\t0\t0\t0\nL\t0\t3\tx\n"),
            4,
            "the type of an L line is not 0, 1 or 2",
        );
        assert_error(
            &file("I\t1\t0\t0\nI\t0\t0\t0\nW\t1\t0\t01\n"),
            3,
            "an I line has id 1, expected 0",
        );
        assert_error(
            &file("I\t0\t0\t0\nI\t1\t0\t0\nW\t1\t0\t01\n"),
            5,
            "the type of a W line",
        );
        let big = "Kanata\t0004\nC=\t9223372036854775806\nC\t1\nC\t1\n";
        assert_error(big.as_bytes(), 4, "past the largest signed 64-bit number");
        let big = "Kanata\t0004\nC=\t0\nC\t9223372036854775807\nC\t1\n";
        assert_error(big.as_bytes(), 4, "past the largest signed 64-bit number");
        assert!(read_all(b"Kanata\t0004\nC=\t-1\nC\t9223372036854775807\n").is_ok());
    }

    #[test]
    fn canonical_field_errors() {
        assert_error(
            &file("I\t0\t0\n"),
            3,
            "expected 4 fields in an I line, found 3",
        );
        assert_error(&file("I\n"), 3, "expected 4 fields in an I line, found 1");
        assert_error(
            &file("I\t0\t0\t0\t\n"),
            3,
            "expected 4 fields in an I line, found 5",
        );
        assert_error(
            &file("I\t0\t0\t0\nI\t1\t0\t0\nL\t1\t0\ta\tb\n"),
            5,
            "expected 4 fields in an L line, found 5",
        );
        assert_error(
            &file("I\t0\t0\t0\nL\t0\t0\n"),
            4,
            "expected 4 fields in an L line, found 3",
        );
        assert_error(&file("C\n"), 3, "expected 2 fields in a C line, found 1");
        assert_error(
            &file("C\t1\t2\n"),
            3,
            "expected 2 fields in a C line, found 3",
        );
        assert_error(
            &file("I\t0\t0\t0\nE\t0\t0\n"),
            4,
            "expected 4 fields in an E line, found 3",
        );
        assert_error(&file("X\t1\n"), 3, "unknown command `X`");
        assert_error(&file("i\t0\t0\t0\n"), 3, "unknown command `i`");
        assert_error(&file("# comment\n"), 3, "unknown command `# comment`");
        assert_error(&file("\n"), 3, "empty line");
        assert_error(&file("I\t0\t0\t0\r\n"), 3, "the thread of an I line");
        assert_error(
            &file("I\t0\t0\t0\nL\t0\t0\t\n"),
            4,
            "the text of an L line is empty",
        );
        assert_error(&file("I\t0\t0\t0\nL\t0\t0\tab\r\n"), 4, "contains a CR");
        assert_error(
            &file("I\t0\t0\t0\nS\t0\t0\t\n"),
            4,
            "the stage name of an S line is empty",
        );
        assert_error(
            &file("I\t0\t0\t0\nS\t0\t0\t F\n"),
            4,
            "has white space at an end",
        );
        assert_error(&file("I\t0\t0\t0\nS\t0\t0\tF\r\n"), 4, "contains a CR");
        assert_error(
            &file("I\t0\t0\t0\nS\t0\t0\tF\u{feff}\n"),
            4,
            "has white space at an end",
        );
        assert_error(
            &file("I\t0\t0\t0\nS\t0\t0\t\u{3000}F\n"),
            4,
            "has white space at an end",
        );
        assert_error(
            b"Kanata\t0004\nC=\t0\nI\t0\t0\t0\nL\t0\t0\tab\xFFc\n",
            4,
            "not valid UTF-8",
        );
        assert_error(
            b"Kanata\t0004\nC=\t0\nI\t0\t0\t0\nL\t0\t0\tab\xE2\x82\n",
            4,
            "not valid UTF-8",
        );
        // Spaces in label text are kept as written, and are fine.
        let all = read_all(&file("I\t0\t0\t0\nL\t0\t0\t  a \nS\t0\t0\tMem miss\n")).unwrap();
        assert_eq!(all[0].name, "  a ");
    }

    #[test]
    fn canonical_truncated_last_line_is_an_error() {
        assert_error(b"Kanata\t0004", 1, "does not end with LF");
        assert_error(b"Kanata\t0004\nC=\t0", 2, "does not end with LF");
        assert_error(
            &file("I\t0\t0\t0\nC\t1"),
            4,
            "does not end with LF (is the file truncated?)",
        );
    }

    #[test]
    fn canonical_rules_across_lines() {
        assert_error(&file("I\t1\t0\t0\n"), 3, "an I line has id 1, expected 0");
        assert_error(
            &file("I\t0\t0\t0\nI\t0\t0\t0\n"),
            4,
            "an I line has id 0, expected 1",
        );
        assert_error(
            &file("S\t0\t0\tF\n"),
            3,
            "an S line names instruction 0, which has not begun",
        );
        assert_error(
            &file("I\t0\t0\t0\nR\t0\t0\t0\nL\t0\t0\tx\n"),
            5,
            "an L line names instruction 0, which has ended",
        );
        // Ended and already yielded.
        assert_error(
            &file("I\t0\t0\t0\nR\t0\t0\t0\nI\t1\t0\t0\nR\t0\t0\t0\n"),
            6,
            "an R line names instruction 0, which has ended",
        );
        assert_error(&file("I\t0\t0\t0\nE\t0\t0\tF\n"), 4, "no open stage");
        assert_error(
            &file("I\t0\t0\t0\nS\t0\t0\tF\nE\t0\t0\tD\n"),
            5,
            "whose open stage is `F`",
        );
        assert_error(
            &file("I\t0\t0\t0\nS\t0\t0\tF\nE\t0\t1\tF\n"),
            5,
            "no open stage",
        );
        assert_error(
            &file("I\t0\t0\t0\nS\t0\t0\tF\nE\t0\t0\tF\nE\t0\t0\tF\n"),
            6,
            "no open stage",
        );
        assert_error(
            &file("I\t0\t0\t0\nL\t0\t2\tnote\n"),
            4,
            "before its first S",
        );
        assert_error(
            &file("I\t0\t0\t0\nW\t0\t0\t0\n"),
            4,
            "producer 0 is not older than its consumer 0",
        );
        assert_error(
            &file("I\t0\t0\t0\nW\t1\t0\t0\n"),
            4,
            "a W line names instruction 1, which has not begun",
        );
        // A W's producer may have ended.
        let all = read_all(&file("I\t0\t0\t0\nR\t0\t0\t0\nI\t1\t0\t0\nW\t1\t0\t0\n")).unwrap();
        assert_eq!(
            all[1].deps,
            vec![Dependency {
                producer: 0,
                kind: 0
            }]
        );
    }

    #[test]
    fn canonical_stops_after_an_error() {
        let text = file("I\t0\t0\t0\nR\t0\t0\t0\nI\t1\t0\t0\nX\n");
        let mut insns = Instructions::new(&text[..]);
        assert_eq!(insns.next().unwrap().unwrap().id, 0);
        assert_eq!(insns.next().unwrap().unwrap_err().line(), Some(6));
        assert!(insns.next().is_none());
        assert_eq!(insns.last_cycle(), None);
        let mut reader = CanonicalReader::new(&b"Kanata\t0005\n"[..]);
        assert!(reader.next_command().is_err());
        assert!(reader.next_command().unwrap().is_none());
    }

    /// The one-pass reading of common lines (`parse_common`) accepts only what the checked
    /// parser accepts, and reads it the same: on lines made of canonical pieces and of the
    /// near misses around them (leading zeros, signs, spaces, overflows, control bytes,
    /// non-ASCII, missing and extra fields).
    /// `parse_common_at` reads `line` with its LF, behind another line in a block, as
    /// `parse_common` reads it, and says where the next line starts.
    fn common_at_agrees(line: &[u8]) -> bool {
        if line.contains(&b'\n') {
            return true;
        }
        let mut block = b"C\t1\n".to_vec();
        block.extend_from_slice(line);
        block.extend_from_slice(b"\nC\t1\n");
        let expected = parse_common(line).map(|command| (command, 4 + line.len() + 1));
        parse_common_at(&block, 4) == expected
    }

    #[test]
    fn canonical_common_lines_read_in_blocks() {
        let sample = include_bytes!("../../../samples/pipeline_sim.kanata");
        for line in sample.split(|&b| b == b'\n').skip(2) {
            assert!(common_at_agrees(line), "`{}`", quote(line));
        }
        for line in [
            &b""[..],
            b"S",
            b"S\t",
            b"C\t0",
            b"C\t01",
            b"L\t1\t0\t",
            b"R\t1\t0\t2",
        ] {
            assert!(common_at_agrees(line), "`{}`", quote(line));
            assert!(parse_common(line).is_none());
        }
        // read_each gives the events of next_command, over buffers of every size.
        for seed in 0..50 {
            let text = random_trace(seed, Some(seed % 2 == 0)).0;
            let mut expected = Vec::new();
            let mut reader = CanonicalReader::new(&text[..]);
            while let Some(event) = reader.next_command().unwrap() {
                expected.push(format!("{event:?}"));
            }
            for capacity in [1, 7, 64, 4096] {
                let input = std::io::BufReader::with_capacity(capacity, &text[..]);
                let mut reader = CanonicalReader::new(input);
                let mut got = Vec::new();
                let mut calls = 0;
                // Stopped after every third line, as Instructions stops.
                while reader
                    .read_each(|event| {
                        got.push(format!("{event:?}"));
                        Ok(got.len() % 3 != 0)
                    })
                    .unwrap()
                {
                    calls += 1;
                }
                assert_eq!(got, expected, "seed {seed}, buffer {capacity}");
                assert!(calls >= expected.len() / 3);
                assert!(reader.last_cycle().is_some());
            }
        }
    }

    #[test]
    fn canonical_common_lines_read_as_checked() {
        const COMMANDS: &[&[u8]] = &[b"C", b"I", b"L", b"S", b"E", b"R", b"W", b"C=", b"X", b""];
        const FIELDS: &[&[u8]] = &[
            b"0",
            b"1",
            b"2",
            b"7",
            b"42",
            b"00",
            b"01",
            b"-1",
            b"-0",
            b" 1",
            b"1 ",
            b"+1",
            b"18446744073709551615",
            b"18446744073709551616",
            b"9223372036854775807",
            b"9223372036854775808",
            b"",
            b"F",
            b"Dc",
            b"X",
            b" X",
            b"X ",
            b"a b",
            b"\xc3\xa9",
            b"\xff",
            b"x\ry",
            b"0x80000000: addi a0, a1, 0",
            b"\x7f",
            b"\x01",
            b"2\t",
        ];
        let mut rng = Rng(11);
        let mut accepted = 0;
        for _ in 0..200_000 {
            let mut line = COMMANDS[rng.below(COMMANDS.len() as u64) as usize].to_vec();
            for _ in 0..rng.below(5) {
                line.push(b'\t');
                line.extend_from_slice(FIELDS[rng.below(FIELDS.len() as u64) as usize]);
            }
            let checked = parse_checked(&line, 9).ok();
            assert!(common_at_agrees(&line), "`{}`", quote(&line));
            if let Some(common) = parse_common(&line) {
                assert_eq!(Some(common), checked, "`{}`", quote(&line));
                accepted += 1;
            }
        }
        // The generator does make common lines, of every command.
        assert!(accepted > 1_000, "{accepted}");
        for line in [
            &b"S\t3\t0\tF"[..],
            b"E\t3\t1\tstall",
            b"C\t1",
            b"L\t3\t2\tx",
            b"I\t0\t2147483648\t0",
            b"R\t3\t0\t1",
            b"W\t4\t3\t0",
        ] {
            assert_eq!(
                parse_common(line),
                parse_checked(line, 9).ok(),
                "`{}`",
                quote(line)
            );
            assert!(parse_common(line).is_some(), "`{}` is common", quote(line));
        }
    }

    #[test]
    fn canonical_damaged_bytes_never_panic() {
        let sample = include_bytes!("../../../samples/pipeline_sim.kanata");
        let mut rng = Rng(0x1234_5678);
        let special = [
            b'\t', b'\n', b'\r', b'0', b'-', b'+', b' ', 0xFF, 0xC3, b'C', b'E',
        ];
        for _ in 0..300 {
            let mut bytes = sample.to_vec();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(bytes.len() as u64) as usize;
                match rng.below(3) {
                    0 => bytes[at] = special[rng.below(special.len() as u64) as usize],
                    1 => {
                        bytes.remove(at);
                    }
                    _ => bytes.truncate(at),
                }
            }
            let result = read_all(&bytes);
            if let Err(error) = result {
                assert!(error.line().is_some(), "{error}");
                assert!(
                    error.message().starts_with("not canonical Kanata: "),
                    "{error}"
                );
            }
        }
        for seed in 0..300 {
            let mut rng = Rng(seed + 1);
            let len = rng.below(64) as usize;
            let mut bytes = b"Kanata\t0004\nC=\t0\n".to_vec();
            bytes.extend((0..len).map(|_| {
                let b = rng.next() as u8;
                if b < 128 {
                    special[usize::from(b) % special.len()]
                } else {
                    b
                }
            }));
            let _ = read_all(&bytes);
        }
    }

    /// What [`LineParser::skim_stages`] must give for a line that [`LineParser::line`] reads
    /// as `event` (`None`: the header).
    fn stage_skim_of<'a>(event: Option<Event<'a>>) -> StageSkim<'a> {
        let Some(event) = event else {
            return StageSkim::Header;
        };
        match event.command {
            Command::Start(start) => StageSkim::Start(start),
            Command::Step(_) => StageSkim::Step,
            Command::Insn { id, thread, .. } => StageSkim::Insn { id, thread },
            Command::Label { id, .. } => StageSkim::Label(id),
            Command::StageStart { id, lane, name } => StageSkim::StageStart {
                id,
                lane,
                name: name.as_bytes(),
            },
            Command::StageEnd { id, lane, name } => StageSkim::StageEnd {
                id,
                lane,
                name: name.as_bytes(),
            },
            Command::Retire { id, flushed, .. } => StageSkim::Retire { id, flushed },
            Command::Dep {
                consumer, producer, ..
            } => StageSkim::Dep { consumer, producer },
        }
    }

    /// What [`LineParser::skim`] must give for a line that `skim_stages` reads as `skim`.
    fn skim_of(skim: StageSkim<'_>) -> Skim {
        match skim {
            StageSkim::Header => Skim::Header,
            StageSkim::Start(start) => Skim::Start(start),
            StageSkim::Step => Skim::Step,
            StageSkim::Insn { id, thread } => Skim::Insn { id, thread },
            StageSkim::Label(id)
            | StageSkim::StageStart { id, .. }
            | StageSkim::StageEnd { id, .. } => Skim::Of(id),
            StageSkim::Retire { id, .. } => Skim::Retire(id),
            StageSkim::Dep { consumer, producer } => Skim::Dep { consumer, producer },
        }
    }

    /// Reads every line of `bytes` three ways, from the same state: checked (`line`),
    /// `skim_stages` and `skim`. A line `line` reads, `skim_stages` reads the same; a line
    /// `skim_stages` reads, `skim` reads the same ids; all three keep the same time. A line
    /// a skim cannot read leaves the cycle as it was. Returns the lines `skim_stages` read.
    fn skim_three_ways(bytes: &[u8]) -> usize {
        let mut parser = LineParser::new();
        let mut read = 0;
        for line in bytes.split(|&b| b == b'\n') {
            let (mut checked, mut skimmed) = (parser.clone(), parser.clone());
            let before = parser.cycle();
            let stages = parser.skim_stages(line);
            let skim = skimmed.skim(line);
            match &stages {
                Ok(stages) => {
                    read += 1;
                    assert_eq!(skim.as_ref().ok(), Some(&skim_of(*stages)), "{line:?}");
                    assert_eq!(skimmed.position(), parser.position(), "{line:?}");
                }
                Err(error) => {
                    assert_eq!(error.kind(), ErrorKind::Input);
                    assert!(error.message().starts_with("not canonical Kanata: "));
                    assert_eq!(error.line(), Some(parser.lines()), "{line:?}");
                    assert_eq!(parser.cycle(), before, "{line:?}");
                }
            }
            if skim.is_err() {
                assert_eq!(skimmed.cycle(), before, "{line:?}");
            }
            if let Ok(event) = checked.line(line) {
                let event_cycle = event.map(|e| e.cycle);
                assert_eq!(
                    stages.as_ref().ok(),
                    Some(&stage_skim_of(event)),
                    "{line:?}"
                );
                assert_eq!(checked.position(), parser.position(), "{line:?}");
                if let Some(cycle) = event_cycle {
                    assert_eq!(cycle, parser.cycle());
                }
            }
        }
        read
    }

    #[test]
    fn canonical_skims_read_what_the_checked_reader_reads() {
        let sample = include_bytes!("../../../samples/pipeline_sim.kanata");
        let lines = sample.iter().filter(|&&b| b == b'\n').count();
        // The empty piece after the last LF is not a line.
        assert_eq!(skim_three_ways(&sample[..sample.len() - 1]), lines);
        for seed in 0..200 {
            for compact in [false, true] {
                let text = random_trace(seed, Some(compact)).0;
                let lines = text.iter().filter(|&&b| b == b'\n').count();
                assert_eq!(skim_three_ways(&text[..text.len() - 1]), lines);
            }
        }
    }

    #[test]
    fn canonical_skim_stages_fields() {
        let mut parser = LineParser::resume(Position {
            line: 2,
            cycle: 5,
            start_cycle: -3,
        });
        let mut skim = |line: &'static [u8]| parser.skim_stages(line).ok();
        assert_eq!(
            skim(b"S\t12\t3\tMem miss"),
            Some(StageSkim::StageStart {
                id: 12,
                lane: 3,
                name: b"Mem miss"
            })
        );
        // The name ends at a TAB, as Konata reads it; it is not checked otherwise.
        assert_eq!(
            skim(b"E\t12\t0\tF\tmore"),
            Some(StageSkim::StageEnd {
                id: 12,
                lane: 0,
                name: b"F"
            })
        );
        assert_eq!(
            skim(b"S\t1\t0\t\xff x "),
            Some(StageSkim::StageStart {
                id: 1,
                lane: 0,
                name: b"\xff x "
            })
        );
        assert_eq!(skim(b"S\t1\t0\t"), None);
        assert_eq!(skim(b"S\t1\t0\t\tF"), None);
        assert_eq!(skim(b"S\t1\t0"), None);
        assert_eq!(skim(b"S\t1\t00\tF"), None);
        assert_eq!(skim(b"S\t1\t-1\tF"), None);
        assert_eq!(skim(b"S\t1\t18446744073709551616\tF"), None);
        assert_eq!(skim(b"E\t\t0\tF"), None);
        assert_eq!(
            skim(b"R\t4\t9\t1"),
            Some(StageSkim::Retire {
                id: 4,
                flushed: true
            })
        );
        assert_eq!(
            skim(b"R\t4\t9\t1\tx"),
            Some(StageSkim::Retire {
                id: 4,
                flushed: true
            })
        );
        // Any type other than 1 is a retirement, as in Konata.
        for line in [&b"R\t4\t9\t0"[..], b"R\t4\t-2\t2", b"R\t4\t\t11"] {
            assert_eq!(
                parser.skim_stages(line).ok(),
                Some(StageSkim::Retire {
                    id: 4,
                    flushed: false
                })
            );
        }
        for line in [&b"R\t4\t9\t"[..], b"R\t4\t9", b"R\t4", b"R\t-4\t0\t0"] {
            assert!(parser.skim_stages(line).is_err(), "{line:?}");
        }
        assert_eq!(
            parser.skim_stages(b"L\t7\t0\tanything\tat all").ok(),
            Some(StageSkim::Label(7))
        );
        assert!(parser.skim_stages(b"L\tx\t0\ta").is_err());
        assert_eq!(
            parser.skim_stages(b"I\t3\tjunk\t-2").ok(),
            Some(StageSkim::Insn { id: 3, thread: -2 })
        );
        assert_eq!(
            parser.skim_stages(b"W\t3\t1\t0").ok(),
            Some(StageSkim::Dep {
                consumer: 3,
                producer: 1
            })
        );
        // The time: a step past the largest simulator cycle is an error and changes nothing.
        assert_eq!(parser.skim_stages(b"C\t2").ok(), Some(StageSkim::Step));
        assert_eq!(parser.cycle(), 7);
        assert!(parser.skim_stages(b"C\t9223372036854775807").is_err());
        assert!(parser.skim_stages(b"C\t-1").is_err());
        assert_eq!(parser.cycle(), 7);
        assert_eq!(parser.position().start_cycle, -3);
        assert_eq!(parser.lines(), 2 + 26);
        for line in [
            &b""[..],
            b"C",
            b"C=\t1",
            b"Kanata\t0004",
            b"X\t1",
            b"S1\t0\tF",
        ] {
            assert!(parser.skim_stages(line).is_err(), "{line:?}");
        }
        // The header and the `C=` line are read as `line` reads them.
        let mut parser = LineParser::new();
        assert_eq!(
            parser.skim_stages(b"Kanata\t0004").ok(),
            Some(StageSkim::Header)
        );
        assert_eq!(
            parser.skim_stages(b"C=\t-9").ok(),
            Some(StageSkim::Start(-9))
        );
        assert!(LineParser::new().skim_stages(b"I\t0\t0\t0").is_err());
    }

    #[test]
    fn canonical_skims_never_panic() {
        let sample = include_bytes!("../../../samples/pipeline_sim.kanata");
        let mut rng = Rng(0x9abc_def0);
        let special = [
            b'\t', b'\n', b'\r', b'0', b'1', b'9', b'-', b'+', b' ', 0xFF, 0xC3, b'C', b'E', b'S',
            b'R', b'=',
        ];
        for _ in 0..200 {
            let mut bytes = sample[..20_000].to_vec();
            for _ in 0..1 + rng.below(40) {
                let at = rng.below(bytes.len() as u64) as usize;
                match rng.below(3) {
                    0 => bytes[at] = special[rng.below(special.len() as u64) as usize],
                    1 => {
                        bytes.remove(at);
                    }
                    _ => bytes.insert(at, rng.next() as u8),
                }
            }
            skim_three_ways(&bytes);
        }
        for seed in 0..500 {
            let mut rng = Rng(seed + 1);
            let len = rng.below(200) as usize;
            let mut bytes = b"Kanata\t0004\nC=\t0\n".to_vec();
            bytes.extend((0..len).map(|_| {
                let b = rng.next() as u8;
                if b < 160 {
                    special[usize::from(b) % special.len()]
                } else {
                    b
                }
            }));
            skim_three_ways(&bytes);
            skim_three_ways(&bytes[17..]);
        }
    }

    /// Every log of the shared corpus (when it is there), converted by kanata-pp, reads back
    /// with the instruction counts and cycles of the conversion's summary.
    #[test]
    fn canonical_reads_the_conversions_of_the_corpus() {
        use crate::convert::{convert, Destination, Options};
        let root = std::path::Path::new("/work/shared/corpus");
        let Ok(folders) = std::fs::read_dir(root) else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let (mut files, mut smaller) = (0, 0);
        for folder in folders {
            let Ok(entries) = std::fs::read_dir(folder.unwrap().path()) else {
                continue;
            };
            for entry in entries {
                let input = entry.unwrap().path();
                if input.file_name().is_some_and(|n| n == "SOURCES.md") {
                    continue;
                }
                let output = dir.path().join(format!("{files}.kanata"));
                let mut options = Options::new(Destination::Path(output.clone()));
                let Ok(report) = convert(&input, &options) else {
                    continue;
                };
                let text = std::fs::read(&output).unwrap();
                // The compact form reads as the same instructions.
                options.repairs.compact = true;
                convert(&input, &options).unwrap();
                let compact = std::fs::read(&output).unwrap();
                smaller += usize::from(compact.len() < text.len());
                assert_eq!(read_all(&compact).unwrap(), read_all(&text).unwrap());
                let mut insns = Instructions::new(&text[..]);
                let (mut count, mut retired, mut flushed, mut open) = (0, 0, 0, 0);
                for insn in insns.by_ref() {
                    let insn = insn.unwrap_or_else(|e| panic!("{}: {e}", input.display()));
                    assert_eq!(insn.id, count);
                    count += 1;
                    match insn.retire {
                        Some(Retirement { flushed: true, .. }) => flushed += 1,
                        Some(_) => retired += 1,
                        None => open += 1,
                    }
                }
                let summary = report.summary;
                let name = input.display();
                assert_eq!(count, summary.instructions, "{name}");
                assert_eq!(retired, summary.retired, "{name}");
                assert_eq!(flushed, summary.flushed, "{name}");
                assert_eq!(open, summary.left_open, "{name}");
                assert_eq!(insns.start_cycle(), Some(summary.first_cycle), "{name}");
                let last = summary.last_cycle - summary.first_cycle;
                assert_eq!(insns.last_cycle(), Some(last as u64), "{name}");
                files += 1;
            }
        }
        assert!(files >= 10, "{files}");
        assert!(smaller >= 5, "{smaller} of {files}");
    }

    /// Found by the `window` fuzz target (fuzz/, docs/testing.md): the writer writes any
    /// simulator id `begin_signed` takes (an `i128`) and `begin` takes (a `u64`), and
    /// kanata-pp keeps ids up to `u64::MAX`; the reader refused every one beyond `i64`.
    #[test]
    fn reads_every_simulator_id_the_writer_writes() {
        let mut w = WriterBuilder::new().from_writer(Vec::new()).unwrap();
        let ids = [
            i128::from(i64::MIN),
            -1,
            0,
            i128::from(i64::MAX) + 1,
            i128::from(u64::MAX),
        ];
        for &id in &ids {
            w.begin_signed(id, -1).unwrap();
        }
        w.begin(u64::MAX, 0).unwrap();
        let text = w.finish().unwrap().output;
        let insns: Vec<_> = Instructions::new(&text[..])
            .collect::<Result<_, _>>()
            .unwrap();
        let read: Vec<i128> = insns.iter().map(|insn| insn.sim_id).collect();
        let mut expected = ids.to_vec();
        expected.push(i128::from(u64::MAX));
        assert_eq!(read, expected);
        // Beyond what the writer takes, the reader still reads any i128.
        for id in [i128::MIN, i128::from(i64::MIN) - 1, i128::MAX] {
            let text = format!("Kanata\t0004\nC=\t0\nI\t0\t{id}\t0\n");
            let insns: Vec<_> = Instructions::new(text.as_bytes())
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(insns[0].sim_id, id);
        }
        // Still plain decimals only, and within i128.
        for bad in [
            "-0",
            "00",
            "+1",
            "170141183460469231731687303715884105728",
            "-",
        ] {
            assert_error(
                &file(&format!("I\t0\t{bad}\t0\n")),
                3,
                "the simulator id of an I line",
            );
        }
    }

    /// Found by the `window` fuzz target (docs/testing.md): the writer keeps the simulator's
    /// cycle within i64 (spec 4.10), so from a negative `C=` start its `C` steps may add up
    /// past `i64::MAX`; the reader refused that although Konata's cycle is a `u64`.
    #[test]
    fn reads_steps_past_i64_max_from_a_negative_start() {
        let mut builder = WriterBuilder::new();
        builder.start_cycle(-6_785_173_883_069_375_032);
        let mut w = builder.from_writer(Vec::new()).unwrap();
        let a = w.begin(1, 0).unwrap();
        w.advance(6_785_173_883_069_409_071).unwrap();
        w.advance(2_815_781_993_598_893_372).unwrap();
        w.retire(a).unwrap();
        let text = w.finish().unwrap().output;
        let insns: Vec<_> = Instructions::new(&text[..])
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            insns[0].end,
            Some(6_785_173_883_069_409_071 + 2_815_781_993_598_893_372)
        );
    }
}
