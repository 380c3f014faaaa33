//! The typed writer: the only way this crate writes a trace, and the checks that keep every
//! trace it writes valid and canonical.

use std::fmt;
use std::fs::File;
use std::io::Write;
use std::path::Path;

use crate::encode::{self, LineHead, RetireTail, ROOM};
use crate::error::{Error, ErrorKind, Result};
use crate::holdback::{Holdback, RetireMark};
use crate::live::LiveSet;
use crate::sink::{self, Compression, Sink};
use crate::stage::{Lane, Stage, StageTable};
use crate::window::{Phase, Window, WindowState};

/// An instruction in the trace, as minted by [`Writer::begin`].
///
/// Ids are dense and sequential from 0 in the order instructions begin: the id is the
/// instruction's id in the file. An instruction that begins outside the [`Window`] gets an
/// untraced handle, on which every call is accepted and writes nothing. All untraced handles
/// are equal, so the order of handles is the age of traced instructions only; a simulator
/// that needs ages outside the window keeps its own sequence numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InsnId(u64);

impl InsnId {
    /// The handle of every instruction outside the window: calls on it are accepted and
    /// write nothing.
    pub const UNTRACED: InsnId = InsnId(u64::MAX);

    /// The id written in the file, or `None` for an instruction outside the window.
    ///
    /// ```
    /// # fn main() -> kanata_writer::Result<()> {
    /// let mut w = kanata_writer::Writer::new(Vec::new());
    /// assert_eq!(w.begin(0x8000_0000, 0)?.file_id(), Some(0));
    /// assert_eq!(w.begin(0x8000_0004, 0)?.file_id(), Some(1));
    /// # Ok(()) }
    /// ```
    pub fn file_id(self) -> Option<u64> {
        self.is_traced().then_some(self.0)
    }

    /// Whether the instruction is written to the trace (it began inside the window).
    pub fn is_traced(self) -> bool {
        self != InsnId::UNTRACED
    }

    /// The handle as a plain number, for language bindings: the id in the file, or
    /// `u64::MAX` for an untraced instruction.
    pub fn into_raw(self) -> u64 {
        self.0
    }

    /// The handle [`into_raw`](Self::into_raw) gave, for language bindings. A number the writer
    /// did not mint is refused by every call ([`ErrorKind::UnknownInsn`] or
    /// [`ErrorKind::NotLive`]), so it cannot make the trace invalid.
    ///
    /// ```
    /// # fn main() -> kanata_writer::Result<()> {
    /// let mut w = kanata_writer::Writer::new(Vec::new());
    /// let i = w.begin(1, 0)?;
    /// assert_eq!(kanata_writer::InsnId::from_raw(i.into_raw()), i);
    /// assert!(w.retire(kanata_writer::InsnId::from_raw(7)).is_err());
    /// # Ok(()) }
    /// ```
    pub const fn from_raw(raw: u64) -> InsnId {
        InsnId(raw)
    }
}

/// Which of the three label texts an `L` command appends to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LabelKind {
    /// Type 0: the text in Konata's left pane (PC and disassembly, typically).
    Name = 0,
    /// Type 1: the detail Konata shows on mouse-over (register values, units).
    Detail = 1,
    /// Type 2: a note on the stage the instruction entered most recently, in any lane: after
    /// [`Writer::stall_begin`] a note lands on the `stl` stage, so write a note for the
    /// pipeline stage before the stall begins.
    StageNote = 2,
}

/// The kind of a dependency arrow (`W`). Konata draws type 0, wake-up; other kinds are kept
/// in the file for tools that know them.
///
/// ```
/// use kanata_writer::DepKind;
/// assert_eq!(DepKind::WAKE_UP.get(), 0);
/// assert_eq!(DepKind::new(7).get(), 7);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DepKind(u32);

impl DepKind {
    /// Type 0: the consumer woke up on the producer's result.
    pub const WAKE_UP: DepKind = DepKind(0);

    /// Kind `n`.
    pub const fn new(n: u32) -> DepKind {
        DepKind(n)
    }

    /// The number written in the file.
    pub const fn get(self) -> u32 {
        self.0
    }
}

/// What [`Writer::finish`] does with instructions still live at the end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LiveAtEnd {
    /// Leave them without `R`: Konata draws them up to the last cycle, as in flight.
    #[default]
    LeaveOpen,
    /// Flush them at the last cycle.
    Flush,
    /// Retire them at the last cycle, oldest first, with the next retire ids.
    Retire,
}

/// What a trace holds, returned by [`Writer::finish`] and [`Writer::summary`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Summary {
    /// Instructions written (traced).
    pub instructions: u64,
    /// Of those, retired.
    pub retired: u64,
    /// Of those, flushed.
    pub flushed: u64,
    /// Instructions left without `R` at the end ([`LiveAtEnd::LeaveOpen`]).
    pub left_open: u64,
    /// Instructions that [`LiveAtEnd::Flush`] or [`LiveAtEnd::Retire`] ended at the last cycle
    /// (already counted in `flushed` or `retired`).
    pub ended_at_finish: u64,
    /// The cycle the trace starts at (its `C=`).
    pub first_cycle: i64,
    /// The cycle of the last line.
    pub last_cycle: i64,
    /// Bytes of Kanata text written, before compression.
    pub text_bytes: u64,
    /// Lines of Kanata text written.
    pub lines: u64,
}

/// The result of [`Writer::finish`]: the summary and the writer given to the builder.
#[derive(Debug)]
#[non_exhaustive]
pub struct Finished<W> {
    /// What the trace holds.
    pub summary: Summary,
    /// The output, with all of the trace (and the end of the compressed stream) written to it.
    pub output: W,
}

/// Builds a [`Writer`]: start cycle, compression, window, and what to do at the end.
///
/// ```no_run
/// use kanata_writer::{LiveAtEnd, Window, WriterBuilder};
/// # fn main() -> kanata_writer::Result<()> {
/// // Compression from the extension, compressed on a background thread.
/// let mut w = WriterBuilder::new()
///     .background(true)
///     .window(Window::default().skip_retired(1_000_000).retired_limit(100_000))
///     .live_at_end(LiveAtEnd::Flush)
///     .from_path("trace.kanata.zst")?;
/// # w.finish()?; Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct WriterBuilder {
    start_cycle: i64,
    compression: Option<Compression>,
    level: Option<i32>,
    background: bool,
    window: Window,
    compact: bool,
    live_at_end: LiveAtEnd,
    buffer_size: usize,
    late_labels: Option<u64>,
    discard: bool,
}

impl Default for WriterBuilder {
    fn default() -> WriterBuilder {
        WriterBuilder::new()
    }
}

/// Bytes formatted before they are handed to the output or the compressor.
const DEFAULT_BUFFER_SIZE: usize = 128 * 1024;

impl WriterBuilder {
    /// The defaults: start at cycle 0, plain output (or compression from the path's
    /// extension), trace everything, explicit `E` lines, leave live instructions open.
    pub fn new() -> WriterBuilder {
        WriterBuilder {
            start_cycle: 0,
            compression: None,
            level: None,
            background: false,
            window: Window::default(),
            compact: false,
            live_at_end: LiveAtEnd::LeaveOpen,
            buffer_size: DEFAULT_BUFFER_SIZE,
            late_labels: None,
            discard: false,
        }
    }

    /// The cycle the trace starts at, written as `C=`. Konata's timeline starts at 0 whatever
    /// this is; other tools read it.
    pub fn start_cycle(&mut self, cycle: i64) -> &mut WriterBuilder {
        self.start_cycle = cycle;
        self
    }

    /// Compression of the output. [`from_path`](Self::from_path) picks it from the extension
    /// when it is not set. zstd keeps four of its windows of text (8 MiB at the default
    /// level) and gzip 64 KiB, besides the compressors' own tables.
    pub fn compression(&mut self, compression: Compression) -> &mut WriterBuilder {
        self.compression = Some(compression);
        self
    }

    /// Compression level: gzip 0–9 (default 6), zstd 1–22 or negative fast levels (default 3).
    pub fn level(&mut self, level: i32) -> &mut WriterBuilder {
        self.level = Some(level);
        self
    }

    /// Compresses and writes on a background thread, so the simulator thread only formats
    /// bytes. The output bytes are the same either way.
    pub fn background(&mut self, yes: bool) -> &mut WriterBuilder {
        self.background = yes;
        self
    }

    /// Traces only a region of interest; see [`Window`].
    pub fn window(&mut self, window: Window) -> &mut WriterBuilder {
        self.window = window;
        self
    }

    /// Leaves out the `E` lines that Konata implies (before the next `S` in the same lane and
    /// before `R`): smaller files, drawn identically. Off by default.
    pub fn compact(&mut self, yes: bool) -> &mut WriterBuilder {
        self.compact = yes;
        self
    }

    /// What [`Writer::finish`] does with instructions still live.
    pub fn live_at_end(&mut self, policy: LiveAtEnd) -> &mut WriterBuilder {
        self.live_at_end = policy;
        self
    }

    /// Accepts labels up to `cycles` cycles after their instruction retired or flushed (0: in
    /// the same cycle only), and places them right before its `R` (where Konata would have
    /// applied them anyway, with a warning). The lines of the last `cycles` cycles are held
    /// back in memory for this. Off by default: a label after the end of an instruction is an
    /// error.
    ///
    /// ```
    /// # fn main() -> kanata_writer::Result<()> {
    /// use kanata_writer::{LabelKind, WriterBuilder};
    /// let mut w = WriterBuilder::new().late_labels(64).from_writer(Vec::new())?;
    /// let i = w.begin(1, 0)?;
    /// w.retire(i)?;
    /// w.advance(3)?;
    /// w.label(i, LabelKind::Name, "disassembled late")?;
    /// let text = String::from_utf8(w.finish()?.output).unwrap();
    /// assert!(text.ends_with("I\t0\t1\t0\nL\t0\t0\tdisassembled late\nR\t0\t0\t0\nC\t3\n"));
    /// # Ok(()) }
    /// ```
    pub fn late_labels(&mut self, cycles: u64) -> &mut WriterBuilder {
        self.late_labels = Some(cycles);
        self
    }

    /// How many bytes are formatted before they go to the output (default 128 KiB). Changes
    /// nothing in the output.
    pub fn buffer_size(&mut self, bytes: usize) -> &mut WriterBuilder {
        self.buffer_size = bytes.max(1024);
        self
    }

    /// Checks every call exactly as usual but writes nothing: no line is formatted and nothing
    /// reaches the output, not even a compressed stream's header, so a validation run pays
    /// for the checks only. Calls return the same errors, ids and retire ids, and the
    /// [`Summary`] has the same counts (lines included), except `text_bytes`, which stays 0.
    /// Off by default.
    ///
    /// ```
    /// # fn main() -> kanata_writer::Result<()> {
    /// use kanata_writer::{Lane, WriterBuilder};
    /// let mut w = WriterBuilder::new().discard(true).from_writer(Vec::new())?;
    /// let x = w.stage("X")?;
    /// let i = w.begin(1, 0)?;
    /// w.enter(i, Lane::MAIN, x)?;
    /// assert_eq!(w.retire(i)?, Some(0));
    /// assert!(w.retire(i).is_err()); // still checked
    /// let finished = w.finish()?;
    /// assert!(finished.output.is_empty());
    /// // Header (2 lines), I, S, E, R.
    /// assert_eq!((finished.summary.lines, finished.summary.text_bytes), (6, 0));
    /// # Ok(()) }
    /// ```
    pub fn discard(&mut self, yes: bool) -> &mut WriterBuilder {
        self.discard = yes;
        self
    }

    /// A writer into `output` (compressed if [`compression`](Self::compression) says so).
    ///
    /// ```
    /// # fn main() -> kanata_writer::Result<()> {
    /// use kanata_writer::{Compression, WriterBuilder};
    /// let w = WriterBuilder::new().compression(Compression::Gzip).from_writer(Vec::new())?;
    /// let gz = w.finish()?.output;
    /// assert_eq!(&gz[..2], &[0x1f, 0x8b]);
    /// # Ok(()) }
    /// ```
    pub fn from_writer<W: Write + Send + 'static>(&self, output: W) -> Result<Writer<W>> {
        let compression = self.compression.unwrap_or_default();
        let level = self.level.unwrap_or(compression.default_level());
        compression.check_level(level)?;
        let sink = if self.discard {
            // Nothing reaches it, so neither a compressor nor a thread is needed.
            Sink::inline(output, Compression::None, 0)?
        } else if self.background {
            Sink::background(output, compression, level)?
        } else {
            Sink::inline(output, compression, level)?
        };
        Ok(self.build(sink))
    }

    /// A writer into a new file at `path` (truncated if it exists), compressed as its
    /// extension says (`.gz`, `.zst`) unless [`compression`](Self::compression) is set.
    pub fn from_path<P: AsRef<Path>>(&self, path: P) -> Result<Writer<File>> {
        let path = path.as_ref();
        let mut builder = self.clone();
        builder
            .compression
            .get_or_insert_with(|| Compression::from_path(path));
        let compression = builder.compression.unwrap_or_default();
        compression.check_level(builder.level.unwrap_or(compression.default_level()))?;
        builder.from_writer(sink::create(path)?)
    }

    fn build<W: Write>(&self, sink: Sink<W>) -> Writer<W> {
        let traces_everything = self.window == Window::default();
        let mut writer = Writer {
            out: Out {
                buf: if self.discard {
                    Vec::new()
                } else {
                    vec![0; self.buffer_size + ROOM]
                },
                pos: 0,
                scratch: Vec::new(),
                lines: 0,
                cycle: self.start_cycle,
                written_cycle: self.start_cycle,
                text_bytes: 0,
                holdback: self
                    .late_labels
                    .map(|cycles| Box::new(Holdback::new(cycles))),
                discard: self.discard,
            },
            spill_at: self.buffer_size,
            buffer_size: self.buffer_size,
            sink: Some(sink),
            next_id: 0,
            next_head: LineHead::new(0),
            live: LiveSet::default(),
            stages: StageTable::new(!self.discard),
            next_retire_id: 0,
            next_retire_tail: RetireTail::new(0, false),
            retired: 0,
            flushed: 0,
            window: WindowState::new(self.window.clone()),
            watch_window: !traces_everything,
            compact: self.compact,
            live_at_end: self.live_at_end,
            first_cycle: self.start_cycle,
        };
        writer.update_window();
        writer
    }
}

/// Writes one Kanata trace. Every method checks its call first and either writes complete,
/// canonical lines or rejects the call with an [`Error`] and writes nothing.
///
/// ```
/// use kanata_writer::{LabelKind, Lane, Writer};
/// # fn main() -> kanata_writer::Result<()> {
/// let mut w = Writer::new(Vec::new());
/// let (fetch, exec) = (w.stage("F")?, w.stage("X")?);
/// let add = w.begin(0x1000, 0)?;
/// w.label(add, LabelKind::Name, "0x1000: add r1, r2, r3")?;
/// w.enter(add, Lane::MAIN, fetch)?;
/// w.advance(1)?;
/// w.enter(add, Lane::MAIN, exec)?;
/// w.advance(1)?;
/// w.retire(add)?;
/// let text = String::from_utf8(w.finish()?.output).unwrap();
/// assert_eq!(text, "Kanata\t0004\nC=\t0\nI\t0\t4096\t0\nL\t0\t0\t0x1000: add r1, r2, r3\n\
///                   S\t0\t0\tF\nC\t1\nE\t0\t0\tF\nS\t0\t0\tX\nC\t1\nE\t0\t0\tX\nR\t0\t0\t0\n");
/// # Ok(()) }
/// ```
pub struct Writer<W: Write> {
    /// The text not yet handed to the sink, and time.
    out: Out,
    /// `buf` is handed over once it holds this many bytes; 0 after an I/O error, so that every
    /// later write reports it.
    spill_at: usize,
    buffer_size: usize,
    /// `None` once finished or after an I/O error.
    sink: Option<Sink<W>>,
    next_id: u64,
    /// The head of `next_id`'s lines.
    next_head: LineHead,
    live: LiveSet,
    stages: StageTable,
    next_retire_id: u64,
    /// The end of the `R` line of `next_retire_id`.
    next_retire_tail: RetireTail,
    retired: u64,
    flushed: u64,
    window: WindowState,
    /// Whether time or retirements can still move the window.
    watch_window: bool,
    compact: bool,
    live_at_end: LiveAtEnd,
    /// The cycle of the header's `C=`.
    first_cycle: i64,
}

impl<W: Write> fmt::Debug for Writer<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer")
            .field("cycle", &self.out.cycle)
            .field("live", &self.live.len())
            .field("summary", &self.summary())
            .finish_non_exhaustive()
    }
}

impl<W: Write> Writer<W> {
    /// A writer of plain text into `output` with the default settings (see
    /// [`WriterBuilder::new`]). `output` may be borrowed, for example `&mut Vec<u8>`.
    pub fn new(output: W) -> Writer<W> {
        WriterBuilder::new().build(Sink::Inline(crate::sink::Encoder::Plain(output)))
    }

    // ----- time -----

    /// The current cycle.
    pub fn cycle(&self) -> i64 {
        self.out.cycle
    }

    /// Moves time to the absolute `cycle`. Nothing is written until a command follows, so idle
    /// cycles cost nothing in the file.
    ///
    /// # Errors
    /// [`ErrorKind::TimeWentBack`] if `cycle` is before the current cycle;
    /// [`ErrorKind::CycleOverflow`] past `i64::MAX`.
    ///
    /// ```
    /// # fn main() -> kanata_writer::Result<()> {
    /// let mut w = kanata_writer::Writer::new(Vec::new());
    /// w.set_cycle(100)?;
    /// assert!(w.set_cycle(99).is_err());
    /// assert_eq!(w.cycle(), 100);
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn set_cycle(&mut self, cycle: u64) -> Result<()> {
        let to = match i64::try_from(cycle) {
            Ok(to) if to >= self.out.cycle => to,
            Ok(_) => {
                return Err(Error::new(ErrorKind::TimeWentBack {
                    from: self.out.cycle,
                    to: cycle,
                }))
            }
            Err(_) => {
                return Err(Error::new(ErrorKind::CycleOverflow {
                    from: self.out.cycle,
                    by: cycle.wrapping_sub(self.out.cycle as u64),
                }))
            }
        };
        self.move_to(to)
    }

    /// Moves time forward by `cycles`.
    ///
    /// # Errors
    /// [`ErrorKind::CycleOverflow`] past `i64::MAX`.
    #[inline]
    pub fn advance(&mut self, cycles: u64) -> Result<()> {
        let to = i64::try_from(cycles)
            .ok()
            .and_then(|n| self.out.cycle.checked_add(n))
            .ok_or_else(|| {
                Error::new(ErrorKind::CycleOverflow {
                    from: self.out.cycle,
                    by: cycles,
                })
            })?;
        self.move_to(to)
    }

    #[inline]
    fn move_to(&mut self, cycle: i64) -> Result<()> {
        self.out.cycle = cycle;
        if self.watch_window {
            self.update_window();
        }
        Ok(())
    }

    // ----- stages -----

    /// Checks and interns a stage name, returning the handle that [`enter`](Self::enter)
    /// takes. Calling it again with the same name returns the same handle.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidStageName`] for a name that is empty, has a TAB or a line break,
    /// or starts or ends with white space (Konata would not show it as written).
    pub fn stage(&mut self, name: &str) -> Result<Stage> {
        self.stages.intern(name)
    }

    /// The name of a stage handle of this writer.
    pub fn stage_name(&self, stage: Stage) -> Option<&str> {
        self.stages.name(stage)
    }

    // ----- instructions -----

    /// Begins an instruction with the simulator's own id and a thread id (`I`).
    ///
    /// Returns an untraced handle, and writes nothing, when the [`Window`] is not open.
    #[inline]
    pub fn begin(&mut self, sim_id: u64, thread: u32) -> Result<InsnId> {
        if self.window.phase != Phase::Open || self.out.discard {
            return self.begin_with(sim_id, thread);
        }
        let id = self.next_id;
        // The head is read where it is, not copied: see `advance_id`.
        self.live.push(id, &self.next_head);
        let out = &mut self.out;
        out.sync_cycle();
        out.pos = encode::insn_fast(&mut out.buf, out.pos, &self.next_head, sim_id, thread);
        out.lines += 1;
        self.advance_id();
        self.after_write()?;
        Ok(InsnId(id))
    }

    #[inline]
    fn begin_with<S: encode::Int + itoa::Integer, T: encode::Int + itoa::Integer>(
        &mut self,
        sim_id: S,
        thread: T,
    ) -> Result<InsnId> {
        if self.window.phase != Phase::Open {
            return Ok(InsnId::UNTRACED);
        }
        let id = self.next_id;
        self.live.push(id, &self.next_head);
        self.advance_id();
        self.out.sync_cycle();
        if !self.out.discard {
            self.out.scratch.clear();
            encode::insn(&mut self.out.scratch, id, sim_id, thread);
            self.out.put_scratch();
        }
        self.out.lines += 1;
        self.after_write()?;
        Ok(InsnId(id))
    }

    /// Like [`begin`](Self::begin), for converters whose input ids may be negative or beyond
    /// `i64`: writes the simulator id and thread id as given.
    ///
    /// # Errors
    /// [`ErrorKind::SimIdOutOfRange`] for a simulator id below `i64::MIN` or above
    /// `u64::MAX`, which a reader of Kanata (kanata-pp's, the spec's Q1) would drop with its
    /// instruction; as for [`begin`](Self::begin) otherwise.
    ///
    /// ```
    /// # fn main() -> kanata_writer::Result<()> {
    /// use kanata_writer::{ErrorKind, Writer};
    /// let mut w = Writer::new(Vec::new());
    /// w.begin_signed(-5, -1)?;
    /// w.begin_signed(u64::MAX.into(), 0)?;
    /// let err = w.begin_signed(i128::from(u64::MAX) + 1, 0).unwrap_err();
    /// assert!(matches!(err.kind(), ErrorKind::SimIdOutOfRange { .. }));
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn begin_signed(&mut self, sim_id: i128, thread: i64) -> Result<InsnId> {
        // Ids in `begin`'s range are written the same: take its fast path.
        match (u64::try_from(sim_id), u32::try_from(thread)) {
            (Ok(sim_id), Ok(thread)) => self.begin(sim_id, thread),
            _ if sim_id < i128::from(i64::MIN) || sim_id > i128::from(u64::MAX) => {
                Err(Error::new(ErrorKind::SimIdOutOfRange { sim_id }))
            }
            _ => self.begin_with(sim_id, thread),
        }
    }

    /// Appends `text` to one of the instruction's labels (`L`). The text is escaped, never
    /// refused: a line break becomes `\n` (Konata shows a line break), CR is dropped and TAB
    /// becomes a space. Empty text writes nothing.
    ///
    /// # Errors
    /// [`ErrorKind::NotLive`] after the instruction's end; [`ErrorKind::NoteBeforeStage`] for
    /// a [`LabelKind::StageNote`] before the instruction entered a stage.
    ///
    /// ```
    /// # fn main() -> kanata_writer::Result<()> {
    /// use kanata_writer::{LabelKind, Writer};
    /// let mut w = Writer::new(Vec::new());
    /// let i = w.begin(7, 0)?;
    /// w.label(i, LabelKind::Detail, "r1 = 5\r\nr2 =\t6")?;
    /// let text = String::from_utf8(w.finish()?.output).unwrap();
    /// assert!(text.ends_with("L\t0\t1\tr1 = 5\\nr2 = 6\n"));
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn label(&mut self, insn: InsnId, kind: LabelKind, text: &str) -> Result<()> {
        match self.label_at_once(insn, kind, text.as_bytes(), encode::may_need_escaping) {
            Some(written) => written,
            None => self.label_with(insn, kind, LabelText::Str(text)),
        }
    }

    /// The commonest label, written at once: a live instruction's, short, and plain by
    /// `needs_more` (which flags text that escaping may change). `None` (nothing done) for
    /// any other, which [`label_with`](Self::label_with) takes.
    #[inline(always)]
    fn label_at_once(
        &mut self,
        insn: InsnId,
        kind: LabelKind,
        bytes: &[u8],
        needs_more: impl Fn(&[u8]) -> bool,
    ) -> Option<Result<()>> {
        let state = match self.live.get(insn.0) {
            Some(state)
                if (kind != LabelKind::StageNote || state.entered)
                    && !bytes.is_empty()
                    && bytes.len() <= encode::FAST_LABEL
                    && !self.out.discard
                    && !needs_more(bytes) =>
            {
                state
            }
            _ => return None,
        };
        let out = &mut self.out;
        out.sync_cycle();
        out.pos = encode::label_fast(&mut out.buf, out.pos, &state.head, kind as u8, bytes);
        out.lines += 1;
        Some(self.after_write())
    }

    /// Like [`label`](Self::label), for text read as bytes that may not be UTF-8: each
    /// invalid sequence is written as U+FFFD, as Konata decodes it. A writer that discards
    /// its output ([`WriterBuilder::discard`]) counts the line without checking the bytes:
    /// whether a label makes a line does not depend on how its invalid bytes are shown.
    ///
    /// ```
    /// # fn main() -> kanata_writer::Result<()> {
    /// use kanata_writer::{LabelKind, Writer};
    /// let mut w = Writer::new(Vec::new());
    /// let i = w.begin(7, 0)?;
    /// w.label_bytes(i, LabelKind::Name, b"addi x1, x0, 5 \xff")?;
    /// let text = String::from_utf8(w.finish()?.output).unwrap();
    /// assert!(text.contains("\taddi x1, x0, 5 \u{fffd}\n"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn label_bytes(&mut self, insn: InsnId, kind: LabelKind, text: &[u8]) -> Result<()> {
        if self.out.discard {
            return self.label_with(insn, kind, LabelText::Bytes(text));
        }
        // ASCII text (nearly all) is UTF-8 as it is, found in the same pass as the bytes
        // that escaping changes, with no check of its own.
        let at_once = self.label_at_once(insn, kind, text, encode::may_need_escaping_or_utf8_check);
        if let Some(written) = at_once {
            return written;
        }
        match std::str::from_utf8(text) {
            Ok(text) => self.label(insn, kind, text),
            Err(_) => self.label(insn, kind, &String::from_utf8_lossy(text)),
        }
    }

    /// Like [`label`](Self::label), formatting straight into the output buffer: no `String`
    /// per call, and nothing is formatted for an untraced instruction.
    ///
    /// ```
    /// # fn main() -> kanata_writer::Result<()> {
    /// use kanata_writer::{LabelKind, Writer};
    /// let mut w = Writer::new(Vec::new());
    /// let i = w.begin(7, 0)?;
    /// w.label_fmt(i, LabelKind::Name, format_args!("{:#x}: addi x1, x0, {}", 0x8000_0000u32, 5))?;
    /// let text = String::from_utf8(w.finish()?.output).unwrap();
    /// assert!(text.ends_with("L\t0\t0\t0x80000000: addi x1, x0, 5\n"));
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn label_fmt(
        &mut self,
        insn: InsnId,
        kind: LabelKind,
        args: fmt::Arguments<'_>,
    ) -> Result<()> {
        if let Some(text) = args.as_str() {
            return self.label(insn, kind, text);
        }
        self.label_with(insn, kind, LabelText::Fmt(args))
    }

    fn label_with(&mut self, insn: InsnId, kind: LabelKind, text: LabelText<'_>) -> Result<()> {
        let Some(state) = self.live.get(insn.0) else {
            return self.late_label(insn, kind, text);
        };
        if kind == LabelKind::StageNote && !state.entered {
            return Err(Error::new(ErrorKind::NoteBeforeStage { insn: insn.0 }));
        }
        if self.out.discard {
            if text.is_written()? {
                self.out.sync_cycle();
                self.out.lines += 1;
            }
            return Ok(());
        }
        // Empty text (or text that escaping empties) must leave no line behind, nor the `C`
        // that would have preceded it: the line is made first.
        if !self.out.label_line(insn.0, kind, text)? {
            return Ok(());
        }
        self.out.sync_cycle();
        self.out.put_scratch();
        self.out.lines += 1;
        self.after_write()
    }

    /// A label for an instruction that is not live: placed before its `R` if that is still
    /// held back (see [`WriterBuilder::late_labels`]), else an error.
    #[cold]
    fn late_label(&mut self, insn: InsnId, kind: LabelKind, text: LabelText<'_>) -> Result<()> {
        if self.sink.is_none() {
            // After an I/O error the held-back lines are gone, and so is the place to insert.
            return Err(Error::new(ErrorKind::Poisoned));
        }
        let mark = match &self.out.holdback {
            Some(holdback) if insn.is_traced() => holdback.find_retire(insn.0, self.out.cycle),
            _ => None,
        };
        let Some(mark) = mark else {
            return self.not_live(insn);
        };
        if kind == LabelKind::StageNote && !mark.entered {
            return Err(Error::new(ErrorKind::NoteBeforeStage { insn: insn.0 }));
        }
        if self.out.discard {
            self.out.lines += u64::from(text.is_written()?);
            return Ok(());
        }
        if !self.out.label_line(insn.0, kind, text)? {
            return Ok(());
        }
        self.out.lines += 1;
        // Move what follows the `R` to make room, and put the line there.
        let len = self.out.scratch.len();
        let at = (mark.pos - self.out.text_bytes) as usize;
        self.out.make_room(len);
        self.out.buf.copy_within(at..self.out.pos, at + len);
        self.out.buf[at..at + len].copy_from_slice(&self.out.scratch);
        self.out.pos += len;
        if let Some(holdback) = self.out.holdback.as_mut() {
            holdback.inserted(mark.pos, len as u64);
        }
        self.after_write()
    }

    /// The instruction enters `stage` in `lane` (`S`); the stage it had open in that lane is
    /// closed first with an explicit `E`.
    ///
    /// A stage entered and closed in the same cycle has zero length and Konata does not draw
    /// it. One Konata quirk to know: a zero-length stage in the trace's very first cycle
    /// (before the first `C` line) is drawn as if it never closed, under the stages that
    /// follow it. Advance time before the first stage change if that matters.
    ///
    /// # Errors
    /// [`ErrorKind::NotLive`] after the instruction's end; [`ErrorKind::UnknownStage`] for a
    /// stage handle of another writer.
    #[inline(always)]
    pub fn enter(&mut self, insn: InsnId, lane: Lane, stage: Stage) -> Result<()> {
        // The fast path: lanes 0 and 1, names short enough for a rendered tail (a discarding
        // writer renders none, and only counts lines).
        let Some(state) = self.live.get_mut(insn.0) else {
            return self.enter_general(insn, lane, stage);
        };
        let Some(tail) = self.stages.tail(stage) else {
            return self.enter_general(insn, lane, stage);
        };
        if self.out.discard {
            let previous = state.open(lane, stage);
            self.out.sync_cycle();
            self.out.lines += 1 + u64::from(previous.is_some() && !self.compact);
            return Ok(());
        }
        if lane.get() >= 2 || !tail.fits() {
            return self.enter_general(insn, lane, stage);
        }
        let previous = state.open_in(lane);
        let closed = self.stages.tail_or_any(previous);
        if !closed.fits() {
            return self.enter_general(insn, lane, stage);
        }
        let writes_closed = previous.is_some() & !self.compact;
        state.open(lane, stage);
        let out = &mut self.out;
        out.sync_cycle();
        let (head, lane) = (&state.head, lane.get());
        out.pos = encode::enter_fast(
            &mut out.buf,
            out.pos,
            head,
            lane,
            writes_closed,
            closed,
            tail,
        );
        out.lines += 1 + u64::from(writes_closed);
        self.after_write()
    }

    #[cold]
    #[inline(never)]
    fn enter_general(&mut self, insn: InsnId, lane: Lane, stage: Stage) -> Result<()> {
        let Some(state) = self.live.get_mut(insn.0) else {
            return self.not_live(insn);
        };
        if self.stages.name(stage).is_none() {
            return Err(Error::new(ErrorKind::UnknownStage));
        }
        // A discarding writer comes here for the errors above only: `enter` counts its lines.
        debug_assert!(!self.out.discard);
        let previous = state.open(lane, stage);
        self.out.sync_cycle();
        self.out.scratch.clear();
        if let (Some(previous), false) = (previous, self.compact) {
            self.stages
                .encode_line(&mut self.out.scratch, b'E', insn.0, lane, previous);
            self.out.lines += 1;
        }
        self.stages
            .encode_line(&mut self.out.scratch, b'S', insn.0, lane, stage);
        self.out.put_scratch();
        self.out.lines += 1;
        self.after_write()
    }

    /// The instruction leaves the stage it has open in `lane` (`E`).
    ///
    /// # Errors
    /// [`ErrorKind::NotLive`] after the instruction's end; [`ErrorKind::NoOpenStage`] when
    /// nothing is open in `lane`.
    #[inline]
    pub fn leave(&mut self, insn: InsnId, lane: Lane) -> Result<()> {
        self.leave_in(insn, lane, None).map(drop)
    }

    /// The instruction leaves `stage` if that is the stage it has open in `lane`, as
    /// [`leave`](Self::leave) does, and true is returned; false, with nothing done, if
    /// another stage or none is open there, or the instruction is not live. For converters
    /// whose `E` names the stage it closes: one lookup where
    /// [`open_stage`](Self::open_stage) and `leave` take two.
    ///
    /// ```
    /// # use kanata_writer::{Lane, WriterBuilder};
    /// let mut w = WriterBuilder::new().from_writer(Vec::new())?;
    /// let (fetch, decode) = (w.stage("F")?, w.stage("D")?);
    /// let insn = w.begin(0, 0)?;
    /// w.enter(insn, Lane::MAIN, fetch)?;
    /// assert!(!w.leave_if_open(insn, Lane::MAIN, decode)?);
    /// assert!(w.leave_if_open(insn, Lane::MAIN, fetch)?);
    /// assert_eq!(w.open_stage(insn, Lane::MAIN), None);
    /// # Ok::<(), kanata_writer::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`leave`](Self::leave)'s, once the stage is found open.
    #[inline]
    pub fn leave_if_open(&mut self, insn: InsnId, lane: Lane, stage: Stage) -> Result<bool> {
        self.leave_in(insn, lane, Some(stage))
    }

    /// [`leave`](Self::leave), or with `only` [`leave_if_open`](Self::leave_if_open).
    #[inline(always)]
    fn leave_in(&mut self, insn: InsnId, lane: Lane, only: Option<Stage>) -> Result<bool> {
        let Some(state) = self.live.get_mut(insn.0) else {
            if only.is_some() {
                return Ok(false);
            }
            return self.leave_general(insn, lane).map(|()| true);
        };
        let open = state.open_in(lane);
        if only.is_some() && open != only {
            return Ok(false);
        }
        let tail = match open {
            Some(stage) if lane.get() < 2 => match self.stages.tail(stage) {
                Some(tail) if tail.fits() => tail,
                // A discarding writer renders no tail, and only counts the line.
                Some(_) if self.out.discard => {
                    state.close(lane);
                    self.out.sync_cycle();
                    self.out.lines += 1;
                    return self.after_write().map(|()| true);
                }
                _ => return self.leave_general(insn, lane).map(|()| true),
            },
            _ => return self.leave_general(insn, lane).map(|()| true),
        };
        state.close(lane);
        let out = &mut self.out;
        out.sync_cycle();
        out.pos = encode::stage_fast(&mut out.buf, out.pos, b'E', &state.head, lane.get(), tail);
        out.lines += 1;
        self.after_write().map(|()| true)
    }

    #[cold]
    #[inline(never)]
    fn leave_general(&mut self, insn: InsnId, lane: Lane) -> Result<()> {
        let Some(state) = self.live.get_mut(insn.0) else {
            return self.not_live(insn);
        };
        let Some(stage) = state.close(lane) else {
            return Err(Error::new(ErrorKind::NoOpenStage {
                insn: insn.0,
                lane: lane.get(),
            }));
        };
        self.out.sync_cycle();
        if !self.out.discard {
            self.out.scratch.clear();
            self.stages
                .encode_line(&mut self.out.scratch, b'E', insn.0, lane, stage);
            self.out.put_scratch();
        }
        self.out.lines += 1;
        self.after_write()
    }

    /// The instruction starts stalling: it enters `stl` in [`Lane::STALL`].
    pub fn stall_begin(&mut self, insn: InsnId) -> Result<()> {
        self.enter(insn, Lane::STALL, Stage::STALL)
    }

    /// The instruction stops stalling: it leaves the stage open in [`Lane::STALL`].
    pub fn stall_end(&mut self, insn: InsnId) -> Result<()> {
        self.leave(insn, Lane::STALL)
    }

    /// The instruction retires (`R … 0`), after every stage it has open is closed. Returns the
    /// retire id, assigned serially from 0 over retired instructions, or `None` for an
    /// untraced instruction.
    ///
    /// # Errors
    /// [`ErrorKind::NotLive`] if it already retired or flushed.
    #[inline(always)]
    pub fn retire(&mut self, insn: InsnId) -> Result<Option<u64>> {
        let retire_id = self.next_retire_id;
        if self.end_of_life_fast(insn, false) {
            self.retired += 1;
            if self.watch_window {
                self.update_window();
            }
            self.after_write()?;
            self.next_retire_id += 1;
            self.next_retire_tail.advance();
            return Ok(Some(retire_id));
        }
        if self.end_of_life(insn, retire_id, false)? {
            self.next_retire_id += 1;
            self.next_retire_tail.advance();
            Ok(Some(retire_id))
        } else {
            Ok(None)
        }
    }

    /// The instruction is flushed (`R … 1`, retire id 0), after every stage it has open is
    /// closed.
    ///
    /// # Errors
    /// [`ErrorKind::NotLive`] if it already retired or flushed.
    #[inline(always)]
    pub fn flush(&mut self, insn: InsnId) -> Result<()> {
        if self.end_of_life_fast(insn, true) {
            self.flushed += 1;
            return self.after_write();
        }
        self.end_of_life(insn, 0u64, true).map(drop)
    }

    /// The common end of life, inlined into [`retire`](Self::retire) and
    /// [`flush`](Self::flush): a live instruction with stages open in lanes 0 and 1 only,
    /// each with a rendered tail, the serial retire id, no hold-back. Writes its lines and
    /// ends it, and returns true; false (having done nothing) for everything else, which
    /// [`end_of_life`](Self::end_of_life) does. The caller counts it and spills.
    #[inline(always)]
    fn end_of_life_fast(&mut self, insn: InsnId, flushed: bool) -> bool {
        if self.out.discard || self.out.holdback.is_some() {
            return false;
        }
        let Some(state) = self.live.get(insn.0) else {
            return false;
        };
        let Some(open) = state.open_in_first_two_only() else {
            return false;
        };
        let tails = [
            self.stages.tail_or_any(open[0]),
            self.stages.tail_or_any(open[1]),
        ];
        if !tails[0].fits() || !tails[1].fits() {
            return false;
        }
        let writes = [
            open[0].is_some() & !self.compact,
            open[1].is_some() & !self.compact,
        ];
        let end = if flushed {
            &RetireTail::FLUSHED
        } else {
            &self.next_retire_tail
        };
        let out = &mut self.out;
        out.sync_cycle();
        out.pos = encode::end_fast(&mut out.buf, out.pos, &state.head, writes, tails, end);
        out.lines += 1 + u64::from(writes[0]) + u64::from(writes[1]);
        self.live.end(insn.0);
        true
    }

    /// Like [`retire`](Self::retire) with the retire id given, for converters that keep the
    /// ids of their input. Does not move the serial retire ids of [`retire`](Self::retire).
    pub fn retire_as(&mut self, insn: InsnId, retire_id: i64) -> Result<()> {
        self.end_of_life(insn, retire_id, false).map(drop)
    }

    /// Like [`flush`](Self::flush) with the retire id given, for converters that keep the
    /// ids of their input.
    pub fn flush_as(&mut self, insn: InsnId, retire_id: i64) -> Result<()> {
        self.end_of_life(insn, retire_id, true).map(drop)
    }

    /// Writes the end of `insn`'s life; false if it is untraced.
    #[inline]
    fn end_of_life<R: encode::Int + itoa::Integer>(
        &mut self,
        insn: InsnId,
        retire_id: R,
        flushed: bool,
    ) -> Result<bool> {
        let Some(state) = self.live.get_mut(insn.0) else {
            if insn == InsnId::UNTRACED && !flushed && self.watch_window {
                self.window.count_untraced_retirement();
                self.update_window();
            }
            return self.not_live(insn).map(|()| false);
        };
        // Written from the state in place; the instruction ends once its lines are.
        let state = &*state;
        self.out.sync_cycle();
        if self.out.discard {
            // Nothing to write: the lines the open stages' `E`s and the `R` would be are
            // only counted, and the `R` marked for the labels that come after it.
            if !self.compact {
                self.out.lines += state.open_stages().count() as u64;
            }
            if let Some(holdback) = self.out.holdback.as_mut() {
                // No spill ever releases the marks of a discarding writer.
                holdback.forget_too_old(self.out.cycle);
                holdback.mark_retire(RetireMark {
                    insn: insn.0,
                    pos: self.out.text_bytes + self.out.pos as u64,
                    cycle: self.out.cycle,
                    entered: state.entered,
                });
            }
        } else if let (Some(tails), (false, Some(retire_id))) = (
            // The fast path: stages open in lanes 0 and 1 only, each with a rendered tail,
            // and a retire id of up to 64 bits.
            state
                .open_in_first_two_only()
                .and_then(|open| self.stages.fitting_tails(open)),
            retire_id.parts(),
        ) {
            let mut pos = self.out.pos;
            if !self.compact {
                for (lane, tail) in tails.iter().enumerate() {
                    if let Some(tail) = tail {
                        pos = encode::stage_fast(
                            &mut self.out.buf,
                            pos,
                            b'E',
                            &state.head,
                            lane as u32,
                            tail,
                        );
                        self.out.lines += 1;
                    }
                }
            }
            if let Some(holdback) = self.out.holdback.as_mut() {
                holdback.mark_retire(RetireMark {
                    insn: insn.0,
                    pos: self.out.text_bytes + pos as u64,
                    cycle: self.out.cycle,
                    entered: state.entered,
                });
            }
            let tail = match (flushed, retire_id) {
                (true, 0) => RetireTail::FLUSHED,
                (false, id) if id == self.next_retire_id => self.next_retire_tail,
                _ => RetireTail::new(retire_id, flushed),
            };
            self.out.pos = encode::end_of_life_fast(&mut self.out.buf, pos, &state.head, &tail);
        } else {
            self.out.scratch.clear();
            if !self.compact {
                for (lane, stage) in state.open_stages() {
                    self.stages
                        .encode_line(&mut self.out.scratch, b'E', insn.0, lane, stage);
                    self.out.lines += 1;
                }
            }
            self.out.put_scratch();
            if let Some(holdback) = self.out.holdback.as_mut() {
                holdback.mark_retire(RetireMark {
                    insn: insn.0,
                    pos: self.out.text_bytes + self.out.pos as u64,
                    cycle: self.out.cycle,
                    entered: state.entered,
                });
            }
            self.out.scratch.clear();
            encode::end_of_life(&mut self.out.scratch, insn.0, retire_id, flushed);
            self.out.put_scratch();
        }
        self.live.end(insn.0);
        self.out.lines += 1;
        if flushed {
            self.flushed += 1;
        } else {
            self.retired += 1;
            if self.watch_window {
                self.update_window();
            }
        }
        self.after_write()?;
        Ok(true)
    }

    /// A dependency arrow from `producer` to `consumer` (`W`). Konata draws wake-up arrows
    /// between stages whose names contain `X`. A producer outside the window is skipped: there
    /// is nothing to draw the arrow from.
    ///
    /// # Errors
    /// [`ErrorKind::NotLive`] if the consumer has ended; [`ErrorKind::ProducerNotOlder`]
    /// unless the producer began before the consumer.
    #[inline]
    pub fn depend(&mut self, consumer: InsnId, producer: InsnId, kind: DepKind) -> Result<()> {
        let Some(state) = self.live.get(consumer.0) else {
            return self.not_live(consumer);
        };
        if !producer.is_traced() {
            return Ok(());
        }
        if producer.0 >= consumer.0 {
            return Err(Error::new(ErrorKind::ProducerNotOlder {
                consumer: consumer.0,
                producer: producer.0,
            }));
        }
        self.out.sync_cycle();
        if !self.out.discard {
            let out = &mut self.out;
            out.pos =
                encode::dependency_fast(&mut out.buf, out.pos, &state.head, producer.0, kind.0);
        }
        self.out.lines += 1;
        self.after_write()
    }

    // ----- state -----

    /// Whether instructions that begin now are traced (the [`Window`] is open). A simulator
    /// can skip building label text when it is not.
    pub fn is_tracing(&self) -> bool {
        self.window.phase == Phase::Open
    }

    /// Whether the writer discards its output ([`WriterBuilder::discard`]): it reads of a
    /// label's text only whether anything of it would be written, and a caller that knows
    /// that already may spare the text's bytes a trip through the cache.
    ///
    /// ```
    /// # fn main() -> kanata_writer::Result<()> {
    /// use kanata_writer::WriterBuilder;
    /// let w = WriterBuilder::new().discard(true).from_writer(Vec::new())?;
    /// assert!(w.discards());
    /// # Ok(())
    /// # }
    /// ```
    pub fn discards(&self) -> bool {
        self.out.discard
    }

    /// Whether `insn` is live: traced, begun and not yet retired or flushed.
    pub fn is_live(&self, insn: InsnId) -> bool {
        self.live.contains(insn.0)
    }

    /// The open stage of `insn` in `lane`, if it is live and has one.
    #[inline]
    pub fn open_stage(&self, insn: InsnId, lane: Lane) -> Option<Stage> {
        self.live.open_in(insn.0, lane)
    }

    /// What has been written so far.
    pub fn summary(&self) -> Summary {
        Summary {
            instructions: self.next_id,
            retired: self.retired,
            flushed: self.flushed,
            left_open: self.live.len(),
            ended_at_finish: 0,
            first_cycle: self.first_cycle,
            last_cycle: self.out.written_cycle,
            text_bytes: self.out.text_bytes + self.out.pos as u64,
            lines: self.out.lines,
        }
    }

    /// Ends the trace: applies the [`LiveAtEnd`] policy to instructions still live, writes a
    /// last `C` up to the current cycle (so Konata draws open instructions that far), ends the
    /// compressed stream and returns the output.
    ///
    /// # Errors
    /// Any I/O error, including one from an earlier call.
    pub fn finish(mut self) -> Result<Finished<W>> {
        let (summary, output) = self.close()?;
        Ok(Finished { summary, output })
    }

    // ----- internals -----

    /// Moves to the next file id, once `next_id` has begun.
    #[inline(always)]
    fn advance_id(&mut self) {
        self.next_id += 1;
        // Ids are dense, so the next head is this one's id plus one, in decimal: cheaper than
        // formatting it. In place, and read in place (not copied) by the next `begin`: a copy
        // of bytes stored one by one, read back whole right away, stalls the load. A
        // discarding writer writes no head.
        if !self.out.discard {
            self.next_head.advance();
        }
    }

    /// The error for a call on an instruction that is not live; untraced handles are fine.
    #[cold]
    fn not_live(&self, insn: InsnId) -> Result<()> {
        if insn == InsnId::UNTRACED {
            Ok(())
        } else if insn.0 >= self.next_id {
            Err(Error::new(ErrorKind::UnknownInsn { insn: insn.0 }))
        } else {
            Err(Error::new(ErrorKind::NotLive { insn: insn.0 }))
        }
    }

    #[inline(always)]
    fn after_write(&mut self) -> Result<()> {
        if self.out.pos >= self.spill_at {
            self.spill()
        } else {
            Ok(())
        }
    }

    #[cold]
    #[inline(never)]
    fn spill(&mut self) -> Result<()> {
        let Some(sink) = self.sink.as_mut() else {
            self.out.pos = 0;
            return Err(Error::new(ErrorKind::Poisoned));
        };
        let Some(holdback) = self.out.holdback.as_mut() else {
            self.out.text_bytes += self.out.pos as u64;
            let result = sink.consume(&mut self.out.buf, self.out.pos);
            self.out.pos = 0;
            return result.map_err(|err| self.poison(err));
        };
        let end = self.out.text_bytes + self.out.pos as u64;
        let release = holdback.releasable(self.out.cycle, end);
        holdback.released(release);
        let n = (release - self.out.text_bytes) as usize;
        self.out.text_bytes = release;
        let result = if n > 0 {
            sink.consume_prefix(&mut self.out.buf, self.out.pos, n)
        } else {
            Ok(())
        };
        self.out.pos -= n;
        // What is held back stays; spill again once another buffer's worth has come.
        self.spill_at = self.out.pos + self.buffer_size;
        let room = self.spill_at + ROOM;
        if self.out.buf.len() < room {
            self.out.buf.resize(room, 0);
        }
        result.map_err(|err| self.poison(err))
    }

    fn poison(&mut self, err: std::io::Error) -> Error {
        self.sink = None;
        self.spill_at = 0;
        // Later calls still write their lines (then report the error): keep room for them.
        self.out.buf = vec![0; ROOM];
        self.out.pos = 0;
        self.out.holdback = None;
        Error::from(err)
    }

    #[cold]
    fn update_window(&mut self) {
        if self.window.update(self.out.cycle, self.retired) {
            // Konata's timeline starts at the first line whatever `C=` says, so the trace
            // starts where the window opens, not at the simulator's cycle 0.
            if !self.out.discard {
                self.out.scratch.clear();
                encode::header(&mut self.out.scratch, self.out.cycle);
                self.out.put_scratch();
            }
            self.out.lines += 2;
            self.first_cycle = self.out.cycle;
            self.out.written_cycle = self.out.cycle;
        }
        self.watch_window = match self.window.phase {
            Phase::Before => true,
            Phase::Open => self.window.can_close(),
            Phase::After { .. } => false,
        };
    }

    /// Finishes the file; used by `finish` and, ignoring errors, by `Drop`.
    fn close(&mut self) -> Result<(Summary, W)> {
        if self.sink.is_none() {
            return Err(Error::new(ErrorKind::Poisoned));
        }
        let last_cycle = match self.window.phase {
            Phase::Before => {
                if !self.out.discard {
                    self.out.scratch.clear();
                    encode::header(&mut self.out.scratch, self.out.cycle);
                    self.out.put_scratch();
                }
                self.out.lines += 2;
                self.first_cycle = self.out.cycle;
                self.out.written_cycle = self.out.cycle;
                self.out.cycle
            }
            // Instructions still draining after the window closed were live up to now.
            Phase::After { closed_at } if self.live.len() == 0 => {
                closed_at.max(self.out.written_cycle)
            }
            _ => self.out.cycle,
        };
        self.out.cycle = last_cycle;
        let mut ended_at_finish = 0;
        if self.live_at_end != LiveAtEnd::LeaveOpen {
            for id in self.live.ids() {
                match self.live_at_end {
                    LiveAtEnd::Retire => self.retire(InsnId(id)).map(drop)?,
                    _ => self.flush(InsnId(id))?,
                }
                ended_at_finish += 1;
            }
        }
        self.out.sync_cycle();
        let mut summary = self.summary();
        summary.ended_at_finish = ended_at_finish;
        let sink = self
            .sink
            .take()
            .ok_or(ErrorKind::Poisoned)
            .map_err(Error::new)?;
        let output = sink
            .finish(&mut self.out.buf, self.out.pos)
            .map_err(|err| self.poison(err))?;
        self.out.pos = 0;
        Ok((summary, output))
    }
}

/// The writer's text and clock: what a line needs besides the instruction and the stage, kept
/// apart so that writing a line can borrow it while the live set and the stage table are
/// borrowed too.
struct Out {
    /// Formatted lines not yet handed to the sink: `buf[..pos]`. The whole of `buf` stays
    /// initialized (so the fast encoders write into it in fixed-width blocks, safely), and a
    /// call starts with at least [`ROOM`] bytes of it free (`spill_at + ROOM <= buf.len()`).
    /// Empty for a discarding writer, which writes nothing.
    buf: Vec<u8>,
    pos: usize,
    /// Lines of the general encoder, formatted here before they are copied to `buf`.
    scratch: Vec<u8>,
    /// Lines written so far (including those still in `buf`).
    lines: u64,
    /// The simulator's current cycle.
    cycle: i64,
    /// The cycle of the last line written; the next line first writes `C cycle-written`.
    written_cycle: i64,
    /// Bytes handed to the sink so far: the stream position of `buf[0]`.
    text_bytes: u64,
    /// The recent lines kept for late labels, if enabled.
    holdback: Option<Box<Holdback>>,
    /// [`WriterBuilder::discard`]: every line is counted, none is formatted.
    discard: bool,
}

impl Out {
    /// Writes the `C` that brings the file to the current cycle. Only at the start of a call's
    /// writing, where the buffer has [`ROOM`] free.
    #[inline(always)]
    fn sync_cycle(&mut self) {
        if self.cycle != self.written_cycle {
            self.write_cycle();
        }
    }

    // Out of line: most calls come in a cycle that has its `C` already.
    #[cold]
    #[inline(never)]
    fn write_cycle(&mut self) {
        if !self.discard {
            // cycle > written_cycle always holds: time only moves forward.
            let delta = self.cycle.wrapping_sub(self.written_cycle) as u64;
            self.pos = encode::cycle_fast(&mut self.buf, self.pos, delta);
        }
        self.lines += 1;
        self.written_cycle = self.cycle;
    }

    /// Makes the `L` line of `text` in `scratch`; false, with no line, when the text is
    /// empty once escaped.
    #[inline]
    fn label_line(&mut self, insn: u64, kind: LabelKind, text: LabelText<'_>) -> Result<bool> {
        self.scratch.clear();
        encode::label_start(&mut self.scratch, insn, kind as u8);
        let text_start = self.scratch.len();
        text.push(&mut self.scratch)?;
        if self.scratch.len() == text_start {
            return Ok(false);
        }
        self.scratch.push(b'\n');
        Ok(true)
    }

    /// Copies the lines in `scratch` to the buffer, making room for them.
    fn put_scratch(&mut self) {
        let len = self.scratch.len();
        self.make_room(len);
        self.buf[self.pos..self.pos + len].copy_from_slice(&self.scratch);
        self.pos += len;
    }

    /// Grows the buffer so that `len` more bytes leave [`ROOM`] free after them.
    fn make_room(&mut self, len: usize) {
        let want = self.pos + len + ROOM;
        if want > self.buf.len() {
            self.buf.resize(want, 0);
        }
    }
}

impl<W: Write> Drop for Writer<W> {
    /// Finishes the trace as [`Writer::finish`] would, ignoring errors; call `finish` to see
    /// them.
    fn drop(&mut self) {
        if self.sink.is_some() {
            let _ = self.close();
        }
    }
}

/// Label text as given to [`Writer::label`] or [`Writer::label_fmt`].
#[derive(Clone, Copy)]
enum LabelText<'a> {
    Str(&'a str),
    Fmt(fmt::Arguments<'a>),
    /// Bytes that may not be UTF-8, written lossily (see [`Writer::label_bytes`]).
    Bytes(&'a [u8]),
}

impl LabelText<'_> {
    /// Appends the text, escaped.
    #[inline]
    fn push(self, buf: &mut Vec<u8>) -> Result<()> {
        match self {
            LabelText::Str(text) => {
                encode::push_label_text(buf, text.as_bytes());
                Ok(())
            }
            LabelText::Bytes(bytes) => {
                encode::push_label_text(buf, String::from_utf8_lossy(bytes).as_bytes());
                Ok(())
            }
            LabelText::Fmt(args) => {
                struct Escaping<'a>(&'a mut Vec<u8>);
                impl fmt::Write for Escaping<'_> {
                    fn write_str(&mut self, s: &str) -> fmt::Result {
                        encode::push_label_text(self.0, s.as_bytes());
                        Ok(())
                    }
                }
                fmt::write(&mut Escaping(buf), args).map_err(|_| Error::new(ErrorKind::Format))
            }
        }
    }

    /// Whether [`push`](Self::push) would append anything, without appending it: escaping
    /// keeps every byte but CR in some form. Formats `Fmt` text, for its errors.
    fn is_written(self) -> Result<bool> {
        fn kept(text: &str) -> bool {
            text.bytes().any(|b| b != b'\r')
        }
        match self {
            LabelText::Str(text) => Ok(kept(text)),
            // An invalid sequence becomes U+FFFD, which is kept: the raw bytes answer alike.
            LabelText::Bytes(bytes) => Ok(bytes.iter().any(|&b| b != b'\r')),
            LabelText::Fmt(args) => {
                struct Kept(bool);
                impl fmt::Write for Kept {
                    fn write_str(&mut self, s: &str) -> fmt::Result {
                        self.0 |= kept(s);
                        Ok(())
                    }
                }
                let mut any = Kept(false);
                fmt::write(&mut any, args).map_err(|_| Error::new(ErrorKind::Format))?;
                Ok(any.0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace of one instruction with the label `text`, given by `label`, written or
    /// discarded; its text and line count.
    fn one_label(
        discard: bool,
        label: impl FnOnce(&mut Writer<Vec<u8>>, InsnId),
    ) -> (Vec<u8>, u64) {
        let mut writer = WriterBuilder::new()
            .discard(discard)
            .from_writer(Vec::new())
            .unwrap();
        let insn = writer.begin(3, 0).unwrap();
        let fetch = writer.stage("F").unwrap();
        writer.enter(insn, Lane::new(0), fetch).unwrap();
        label(&mut writer, insn);
        writer.advance(1).unwrap();
        writer.retire(insn).unwrap();
        let finished = writer.finish().unwrap();
        (finished.output, finished.summary.lines)
    }

    #[test]
    fn label_bytes_writes_what_label_writes_of_the_lossy_text() {
        let long = "x".repeat(encode::FAST_LABEL + 1);
        let texts: [&[u8]; 10] = [
            b"0x80001a00: addi a0, a0, 1",
            b"",
            b"\r",
            b"\r\r",
            b"r1 = 5\r\nr2 =\t6",
            "caf\u{e9} \u{1f600}".as_bytes(),
            b"bad \xff byte",
            b"\xc3",
            b"\xed\xa0\x80 surrogate, \xf0\x9f\x98 cut",
            long.as_bytes(),
        ];
        for text in texts {
            let lossy = String::from_utf8_lossy(text);
            for kind in [LabelKind::Name, LabelKind::Detail, LabelKind::StageNote] {
                for discard in [false, true] {
                    let by_bytes = one_label(discard, |w, i| w.label_bytes(i, kind, text).unwrap());
                    let by_str = one_label(discard, |w, i| w.label(i, kind, &lossy).unwrap());
                    assert_eq!(by_bytes, by_str, "{text:x?}, {kind:?}, discard {discard}");
                }
            }
        }
        let (written, _) = one_label(false, |w, i| {
            w.label_bytes(i, LabelKind::Name, b"bad \xff byte").unwrap()
        });
        let written = String::from_utf8(written).unwrap();
        assert!(
            written.contains("\nL\t0\t0\tbad \u{fffd} byte\n"),
            "{written}"
        );
    }
}
