//! The Kanata normalizer: the state machine that turns the commands of a (possibly sloppy)
//! Kanata log into calls on `kanata_writer`, applying the rules of the quirk catalogue that
//! need more than one line: the header and start cycle (Q2, Q5), `C 0` (Q4), stages closed
//! twice or never opened (Q7), labels broken over lines (Q8), commands after `R` (Q10), ids
//! used again (Q11), commands for unknown ids (Q12), the meaning of `R` types (Q13), and the
//! optional clean-ups (Q14–Q16).
//!
//! The writer does the rest: it makes implied `E`s explicit (Q6), merges cycle steps (Q4),
//! writes numbers and lanes plain (Q1, Q20), and places labels that come after their `R`
//! within the late window right before it (Q10).

use std::borrow::Cow;
use std::hash::{BuildHasher, BuildHasherDefault};
use std::io::Write;

use bstr::ByteSlice;
use kanata_writer::{DepKind, ErrorKind as WriterErrorKind, Finished, LabelKind, Lane, Stage};
use kanata_writer::{Writer, WriterBuilder};

use crate::diag::{shorten, Diagnostics, Rule};
use crate::error::Error;
use crate::kanata::ids::{out_id, IdHasher, Ids, Resolved};
use crate::kanata::parse::{Command, Line, RetireType, SimId};
use crate::kanata::stage_names::StageNames;

/// What to do with instructions that are still open at the end of the log (Q15).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseOpen {
    /// Flush them at the last cycle.
    Flush,
    /// Retire them at the last cycle.
    Retire,
}

/// The repairs that are off by default, and the knobs of the default ones.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Repairs {
    /// Q10: how many cycles after its `R` a label is still moved before it (default 64).
    pub late_window: u64,
    /// Q14: renumber retire ids serially over retired instructions.
    pub renumber_retire: bool,
    /// Q15: close instructions still open at the end.
    pub close_open: Option<CloseOpen>,
    /// Q16: drop a label identical to the previous one of the same instruction and type, and
    /// merge back-to-back segments of the same stage.
    pub dedupe: bool,
    /// Q17: stretch zero-length stages to one cycle.
    pub stretch_zero: bool,
    /// Q18: keep only lines that start with this prefix, without it.
    pub strip_prefix: Option<Vec<u8>>,
    /// §4.5: leave out the `E` lines that Konata implies.
    pub compact: bool,
}

impl Default for Repairs {
    fn default() -> Repairs {
        Repairs {
            late_window: 64,
            renumber_retire: false,
            close_open: None,
            dedupe: false,
            stretch_zero: false,
            strip_prefix: None,
            compact: false,
        }
    }
}

impl Repairs {
    /// Whether none of the repairs that change canonical text is asked for: then the
    /// conversion of a canonical file is the file itself (the late window only matters to
    /// text that is not canonical).
    pub fn keep_canonical_text(&self) -> bool {
        !self.renumber_retire
            && self.close_open.is_none()
            && !self.dedupe
            && !self.stretch_zero
            && self.strip_prefix.is_none()
            && !self.compact
    }
}

/// Where in the file the normalizer is (the reader has handled the header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Before the first command.
    BeforeCommands,
    /// Writing.
    Body,
}

/// What the normalizer keeps per live instruction: nothing, unless `--dedupe` or
/// `--stretch-zero` needs it (an open instruction that does nothing must cost next to
/// nothing: some logs leave hundreds of thousands of them).
#[derive(Clone, Debug, Default, PartialEq)]
struct LiveInsn(Option<Box<LiveExtra>>);

#[derive(Clone, Debug, Default, PartialEq)]
struct LiveExtra {
    /// Q16: a hash of the last label of each type (0: none yet).
    last_label: [u64; 3],
    /// Q17: the cycle each lane's open stage started at (only kept with `stretch_zero`).
    started: Vec<(u32, i64)>,
}

impl LiveInsn {
    fn extra(&mut self) -> &mut LiveExtra {
        self.0.get_or_insert_with(Box::default)
    }

    fn started(&self) -> &[(u32, i64)] {
        self.0.as_ref().map_or(&[], |extra| &extra.started)
    }
}

/// Q17: the commands of instructions whose zero-length stage is being stretched. Once one
/// command of an instruction is held back to the next cycle, every later command naming
/// that id in the same cycle is held back too, so its order is kept.
#[derive(Default)]
struct Stretch {
    /// Input ids held back in the current cycle.
    held: Vec<i64>,
    /// The held commands, their text owned, with their input line numbers.
    queue: Vec<(Command<Vec<u8>>, u64)>,
}

/// Q16: an explicit `E` kept until the cycle ends, so that an `S` of the same stage in the
/// same cycle can merge the two segments.
#[derive(Clone, Copy, Debug)]
struct DeferredEnd {
    insn: kanata_writer::InsnId,
    lane: Lane,
}

/// A label not yet written, because the next line may continue it (Q8).
#[derive(Default)]
struct PendingLabel {
    active: bool,
    id: i64,
    kind: u8,
    text: Vec<u8>,
    line: u64,
}

/// Stage names by the numbers the reading thread gave them ([`KanataNormalizer::number_stages`]),
/// with the writer's stage of each once known.
pub(crate) type NumberedStages = Vec<(Box<[u8]>, Option<Stage>)>;

/// Turns the lines of a Kanata log into a canonical trace written through `kanata_writer`.
pub(crate) struct KanataNormalizer<W: Write + Send + 'static> {
    builder: WriterBuilder,
    /// The output until the writer is made (at the first command, when the start cycle is
    /// known).
    output: Option<W>,
    writer: Option<Writer<W>>,
    repairs: Repairs,
    ids: Ids<LiveInsn>,
    stages: StageNames,
    /// The names the reading thread numbered, by number, with their stages once known.
    numbered: NumberedStages,
    pending: PendingLabel,
    phase: Phase,
    /// Q13: whether `R` types are written as `'0'`/`'1'` (48/49), decided at the first typed
    /// `R`.
    retire_48: Option<bool>,
    /// Q14/Q15: the next retire id handed out by kanata-pp.
    next_retire_id: i64,
    /// The largest retire id seen, so that Q15 retirements continue after it.
    max_retire_id: i64,
    /// Q16: `E`s not yet written (only with `dedupe`).
    deferred_ends: Vec<DeferredEnd>,
    /// Q17: commands held back to the next cycle (only with `stretch_zero`).
    stretch: Stretch,
}

impl<W: Write + Send + 'static> KanataNormalizer<W> {
    pub(crate) fn new(builder: WriterBuilder, output: W, repairs: Repairs) -> Self {
        let mut builder = builder;
        builder
            .late_labels(repairs.late_window)
            .compact(repairs.compact);
        KanataNormalizer {
            builder,
            output: Some(output),
            writer: None,
            repairs,
            ids: Ids::new(),
            stages: StageNames::default(),
            numbered: Vec::new(),
            pending: PendingLabel::default(),
            phase: Phase::BeforeCommands,
            retire_48: None,
            next_retire_id: 0,
            max_retire_id: -1,
            deferred_ends: Vec::new(),
            stretch: Stretch::default(),
        }
    }

    /// Takes one parsed line, whose pieces of text are `T`s (`&[u8]`, or where they are in
    /// a batch), which `text_of` turns into text: only the pieces used, when they are used
    /// (the whole line turned at once, on every line of a batch, cost 28 M of 618 M
    /// instructions on a 15 MB canonical trace).
    ///
    /// `label_ends` tells, when asked (for a label only), whether the caller knows the next
    /// line does not go on with the label (Q8): the label is then written at once rather
    /// than held until that line.
    #[inline(always)]
    pub(crate) fn parsed<'t, T: Copy>(
        &mut self,
        parsed: &Line<T>,
        text_of: impl Fn(T) -> &'t [u8],
        label_ends: impl FnOnce() -> bool,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        if self.pending.active {
            if let Line::Other(line) = *parsed {
                let line = text_of(line);
                // Q8: the rest of the label, after a raw line break.
                self.pending.text.push(b'\n');
                self.pending.text.extend_from_slice(line);
                diag.report(Rule::Q8, lineno, || {
                    format!("continues the label of line {}", self.pending.line)
                });
                return Ok(());
            }
            self.flush_label(diag)?;
        }
        match *parsed {
            // Most lines: straight to their own function, whose frame is a fraction of
            // `command`'s (which handles every command and every repair), when `command`
            // would go straight there too (the writer made, no command held back, Q17).
            Line::Command(Command::Stage {
                end,
                id,
                lane,
                name,
            }) if self.phase == Phase::Body && self.stretch.held.is_empty() => {
                self.stage(end, id, lane, text_of(name), lineno, diag)
            }
            // Held as `command` would hold it, then written when the next line comes, as
            // `flush_label` would write it: written now, without copying its text (2% of
            // the instructions of a canonical trace's conversion).
            Line::Command(Command::Label { id, kind, text })
                if self.phase == Phase::Body && self.stretch.held.is_empty() && label_ends() =>
            {
                self.write_label(id, kind, text_of(text), lineno, diag)
            }
            Line::Command(command) => self.command(&command.map(text_of), lineno, diag),
            Line::Blank => {
                diag.report(Rule::Q3, lineno, || "blank line dropped".to_owned());
                Ok(())
            }
            Line::Comment => {
                diag.report(Rule::Q3, lineno, || "comment dropped".to_owned());
                Ok(())
            }
            Line::Other(line) => {
                let line = text_of(line);
                if memchr::memchr(0, line).is_some() {
                    return Err(Error::at_line(
                        lineno,
                        "binary data: this is not a Kanata log",
                    ));
                }
                diag.report(Rule::Q3, lineno, || {
                    format!("unknown command {:?} dropped", shorten(line))
                });
                Ok(())
            }
            Line::Header { .. } => {
                diag.report(Rule::Q2, lineno, || "second header dropped".to_owned());
                Ok(())
            }
            Line::Invalid => Ok(()),
            Line::CycleOutOfRange(cycle) => Err(Error::at_line(
                lineno,
                crate::kanata::parse::cycle_out_of_range(text_of(cycle)),
            )),
        }
    }

    /// Takes a command line that is neither `S`, `E` nor `L`, as [`Self::parsed`] takes it.
    #[inline(always)]
    pub(crate) fn command_line(
        &mut self,
        command: &Command<&[u8]>,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        if self.pending.active {
            self.flush_label(diag)?;
        }
        self.command(command, lineno, diag)
    }

    /// Whether a command line that is neither `S`, `E` nor `L` goes straight to its own
    /// function now, as [`Self::command`] would send it: no label is held, the writer is
    /// made, and nothing is held back (Q17).
    #[inline(always)]
    fn commands_go_straight(&self) -> bool {
        !self.pending.active && self.phase == Phase::Body && self.stretch.held.is_empty()
    }

    /// Takes an `I` line, as [`Self::command_line`] does. This and the next three are for
    /// callers that know the command already: through `command_line`, the command is told
    /// twice, by the caller and by `command`, each a branch mispredicted where the commands
    /// follow one another at random.
    #[inline(always)]
    pub(crate) fn insn_line(
        &mut self,
        id: i64,
        sim_id: SimId,
        thread: i64,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        if !self.commands_go_straight() {
            let command = Command::Insn { id, sim_id, thread };
            return self.command_line(&command, lineno, diag);
        }
        self.insn(id, sim_id, thread, lineno, diag)
    }

    /// Takes an `R` line, as [`Self::command_line`] does.
    #[inline(always)]
    pub(crate) fn retire_line(
        &mut self,
        id: i64,
        retire_id: i64,
        kind: RetireType,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        if !self.commands_go_straight() {
            let command = Command::Retire {
                id,
                retire_id,
                kind,
            };
            return self.command_line(&command, lineno, diag);
        }
        self.retire(id, retire_id, kind, lineno, diag)
    }

    /// Takes a `W` line, as [`Self::command_line`] does.
    #[inline(always)]
    pub(crate) fn dep_line(
        &mut self,
        consumer: i64,
        producer: i64,
        kind: u32,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        if !self.commands_go_straight() {
            let command = Command::Dep {
                consumer,
                producer,
                kind,
            };
            return self.command_line(&command, lineno, diag);
        }
        self.dep(consumer, producer, kind, lineno, diag)
    }

    /// Takes a `C` line, as [`Self::command_line`] does.
    #[inline(always)]
    pub(crate) fn cycle_line(
        &mut self,
        cycles: i64,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        if !self.commands_go_straight() || cycles <= 0 {
            return self.command_line(&Command::Cycle(cycles), lineno, diag);
        }
        self.advance(cycles as u64, lineno, diag)
    }

    fn writer(&mut self) -> &mut Writer<W> {
        self.writer
            .as_mut()
            .expect("the writer is made before the first command")
    }

    /// Makes the writer, starting at `start`.
    fn start(&mut self, start: i64) -> Result<(), Error> {
        let output = self.output.take().expect("the writer is made once");
        self.writer = Some(
            self.builder
                .clone()
                .start_cycle(start)
                .from_writer(output)?,
        );
        self.phase = Phase::Body;
        Ok(())
    }

    fn command(
        &mut self,
        command: &Command<&[u8]>,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        if self.phase != Phase::Body {
            if let Command::Start(cycle) = *command {
                return self.start(cycle);
            }
            diag.report(Rule::Q5, lineno, || {
                "no `C=` before the first command: starting at cycle 0".to_owned()
            });
            self.start(0)?;
        }
        if !self.stretch.held.is_empty() {
            if let Some(id) = command_id(command) {
                if self.stretch.held.contains(&id) {
                    self.stretch
                        .queue
                        .push((command.map(<[u8]>::to_vec), lineno));
                    return Ok(());
                }
            }
        }
        match *command {
            Command::Start(cycle) => {
                // Q5: a later `C=` is a step to that absolute cycle.
                let now = self.writer().cycle();
                if cycle < now {
                    return Err(Error::at_line(
                        lineno,
                        format!("`C=` {cycle} goes back in time (the log is at cycle {now})"),
                    ));
                }
                diag.report(Rule::Q5, lineno, || {
                    format!(
                        "`C=` {cycle} after the start written as a step of {}",
                        cycle - now
                    )
                });
                self.advance(cycle.abs_diff(now), lineno, diag)
            }
            Command::Cycle(0) => {
                diag.report(Rule::Q4, lineno, || "`C 0` dropped".to_owned());
                Ok(())
            }
            Command::Cycle(n) if n < 0 => Err(Error::at_line(
                lineno,
                format!("`C {n}` would move time backwards"),
            )),
            Command::Cycle(n) => self.advance(n as u64, lineno, diag),
            Command::Insn { id, sim_id, thread } => self.insn(id, sim_id, thread, lineno, diag),
            Command::Label { id, kind, text } => {
                self.pending.active = true;
                self.pending.id = id;
                self.pending.kind = kind;
                self.pending.line = lineno;
                self.pending.text.clear();
                self.pending.text.extend_from_slice(text);
                Ok(())
            }
            Command::Stage {
                end,
                id,
                lane,
                name,
            } => self.stage(end, id, lane, name, lineno, diag),
            Command::Retire {
                id,
                retire_id,
                kind,
            } => self.retire(id, retire_id, kind, lineno, diag),
            Command::Dep {
                consumer,
                producer,
                kind,
            } => self.dep(consumer, producer, kind, lineno, diag),
        }
    }

    fn advance(&mut self, cycles: u64, lineno: u64, diag: &mut Diagnostics) -> Result<(), Error> {
        let mut cycles = cycles;
        self.end_cycle()?;
        // Q17: what was held back happens one cycle later.
        while cycles > 0 && !self.stretch.queue.is_empty() {
            self.step(1, lineno)?;
            cycles -= 1;
            self.replay_held(diag)?;
            self.end_cycle()?;
        }
        self.step(cycles, lineno)
    }

    fn step(&mut self, cycles: u64, lineno: u64) -> Result<(), Error> {
        self.writer()
            .advance(cycles)
            .map_err(|err| Error::at_line(lineno, err.to_string()))
    }

    /// Writes the `E`s Q16 kept for the cycle that ends.
    fn end_cycle(&mut self) -> Result<(), Error> {
        for end in std::mem::take(&mut self.deferred_ends) {
            self.writer
                .as_mut()
                .expect("stages come after the first command")
                .leave(end.insn, end.lane)?;
        }
        Ok(())
    }

    /// Q17: runs the commands held back from the previous cycle (they may be held again).
    fn replay_held(&mut self, diag: &mut Diagnostics) -> Result<(), Error> {
        self.stretch.held.clear();
        let queue = std::mem::take(&mut self.stretch.queue);
        for (delayed, line) in queue {
            match delayed {
                Command::Label { id, kind, text } => {
                    self.write_label(id, kind, &text, line, diag)?
                }
                other => self.command(&other.as_ref().map(Vec::as_slice), line, diag)?,
            }
        }
        Ok(())
    }

    /// Holds back `command` of instruction `id` to the next cycle (Q17).
    fn hold(&mut self, id: i64, command: Command<Vec<u8>>, lineno: u64, diag: &mut Diagnostics) {
        diag.report(Rule::Q17, lineno, || {
            format!("zero-length stage of id {id} stretched to one cycle")
        });
        if !self.stretch.held.contains(&id) {
            self.stretch.held.push(id);
        }
        self.stretch.queue.push((command, lineno));
    }

    /// Whether `insn` has a stage in `lane` (any lane: `None`) that started this cycle.
    fn opened_this_cycle(&mut self, id: i64, lane: Option<u32>) -> bool {
        let now = self.writer.as_ref().map_or(0, |w| w.cycle());
        self.ids.live(id).is_some_and(|(_, live)| {
            live.started()
                .iter()
                .any(|&(l, start)| start == now && lane.is_none_or(|lane| lane == l))
        })
    }

    fn insn(
        &mut self,
        id: i64,
        sim_id: SimId,
        thread: i64,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        match self.ids.resolve(id) {
            Resolved::Live(old) => {
                // Q11: the old instruction ends (flushed) where the new one with its id begins.
                diag.report(Rule::Q11, lineno, || {
                    format!("`I` for live id {id}: the old instruction is flushed first")
                });
                self.ids.end(id);
                self.drop_deferred_ends(old);
                self.writer().flush_as(old, 0)?;
            }
            Resolved::Finished(_) => diag.report(Rule::Q11, lineno, || {
                format!("id {id} used again: a new instruction")
            }),
            Resolved::Unknown => {}
        }
        let insn = self.writer().begin_signed(sim_id.get(), thread)?;
        self.ids.begin(id, insn, LiveInsn::default());
        Ok(())
    }

    /// Writes the label held for a possible continuation.
    fn flush_label(&mut self, diag: &mut Diagnostics) -> Result<(), Error> {
        self.pending.active = false;
        let PendingLabel { id, kind, line, .. } = self.pending;
        let text = std::mem::take(&mut self.pending.text);
        let result = if self.stretch.held.contains(&id) {
            self.stretch.queue.push((
                Command::Label {
                    id,
                    kind,
                    text: text.clone(),
                },
                line,
            ));
            Ok(())
        } else {
            self.write_label(id, kind, &text, line, diag)
        };
        self.pending.text = text;
        result
    }

    fn write_label(
        &mut self,
        id: i64,
        kind: u8,
        text: &[u8],
        line: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let label_kind = match kind {
            0 => LabelKind::Name,
            1 => LabelKind::Detail,
            _ => LabelKind::StageNote,
        };
        let (insn, late) = match self.ids.resolve(id) {
            Resolved::Live(insn) => (insn, false),
            Resolved::Finished(insn) => (insn, true),
            Resolved::Unknown => {
                diag.report(Rule::Q12, line, || {
                    format!("label for undeclared id {id} dropped")
                });
                return Ok(());
            }
        };
        if self.repairs.dedupe && !late {
            let hash = text_hash(text);
            if let Some((_, live)) = self.ids.live(id) {
                let last = &mut live.extra().last_label[usize::from(kind)];
                if *last == hash {
                    diag.report(Rule::Q16, line, || "repeated label dropped".to_owned());
                    return Ok(());
                }
                *last = hash;
            }
        }
        let writer = self
            .writer
            .as_mut()
            .expect("labels come after the first command");
        // As bytes: invalid text is written as `utf8` would make it (the test
        // `lossy_text_is_std_s`), and a writer that discards (`--check`) skips the check.
        match writer.label_bytes(insn, label_kind, text) {
            Ok(()) if late => {
                diag.report(Rule::Q10, line, || {
                    format!("label for id {id} after its `R` moved before it")
                });
                Ok(())
            }
            Ok(()) => Ok(()),
            Err(err) => match err.kind() {
                WriterErrorKind::NotLive { .. } => {
                    let window = self.repairs.late_window;
                    diag.report(Rule::Q10, line, || {
                        format!("label for id {id} more than {window} cycles after its `R` dropped")
                    });
                    Ok(())
                }
                WriterErrorKind::NoteBeforeStage { .. } => {
                    diag.report(Rule::Q12, line, || {
                        format!("stage note for id {id} before any stage dropped")
                    });
                    Ok(())
                }
                _ => Err(Error::from(err).with_line(line)),
            },
        }
    }

    /// The live instruction `id` names, or a report of why there is none (Q10, Q12) for the
    /// line of `command` (its letter).
    #[inline(always)]
    fn live_insn(
        &mut self,
        id: i64,
        command: u8,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Option<kanata_writer::InsnId> {
        // Inlined up to the lookup: a call per `S` and `E` cost as much as the lookup.
        match self.ids.resolve(id) {
            Resolved::Live(insn) => Some(insn),
            Resolved::Finished(_) => {
                Self::not_live(true, id, command, lineno, diag);
                None
            }
            Resolved::Unknown => {
                Self::not_live(false, id, command, lineno, diag);
                None
            }
        }
    }

    /// Reports why `id`, which names no live instruction, is dropped: it has `finished`
    /// (Q10) or was never declared (Q12).
    #[cold]
    #[inline(never)]
    fn not_live(finished: bool, id: i64, command: u8, lineno: u64, diag: &mut Diagnostics) {
        let command = char::from(command);
        if finished {
            diag.report(Rule::Q10, lineno, || {
                format!("`{command}` for id {id} after its `R` dropped")
            });
        } else {
            diag.report(Rule::Q12, lineno, || {
                format!("`{command}` for undeclared id {id} dropped")
            });
        }
    }

    fn stage_handle(&mut self, name: &[u8], lineno: u64, diag: &mut Diagnostics) -> Option<Stage> {
        if let Some(stage) = self.stages.get(name) {
            return Some(stage);
        }
        let text = utf8(name);
        let writer = self
            .writer
            .as_mut()
            .expect("stages come after the first command");
        match writer.stage(&text) {
            Ok(stage) => {
                self.stages.insert(name, stage);
                Some(stage)
            }
            Err(err) => {
                diag.report(Rule::Q1, lineno, || format!("{err}; command dropped"));
                None
            }
        }
    }

    #[inline(never)]
    fn stage(
        &mut self,
        end: bool,
        id: i64,
        lane: u32,
        name: &[u8],
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let command = if end { b'E' } else { b'S' };
        let Some(insn) = self.live_insn(id, command, lineno, diag) else {
            return Ok(());
        };
        let Some(stage) = self.stage_handle(name, lineno, diag) else {
            return Ok(());
        };
        if self.enter_or_leave(end, insn, lane, stage)? {
            return Ok(());
        }
        self.stage_with_repairs(end, id, insn, lane, stage, name, lineno, diag)
    }

    /// Swaps the numbers stage names have for `other`: for lines whose names were numbered by
    /// another numbering than the reading thread's (the blocks the normalizer parses itself).
    pub(crate) fn swap_numbered(&mut self, other: &mut NumberedStages) {
        std::mem::swap(&mut self.numbered, other);
    }

    /// The names of the stages the reading thread numbered, from number `self.numbered.len()`
    /// on, in the order of their numbers (see [`KanataNormalizer::numbered_stage`]).
    pub(crate) fn number_stages<'n>(&mut self, names: impl Iterator<Item = &'n [u8]>) {
        self.numbered
            .extend(names.map(|name| (Box::<[u8]>::from(name), None)));
    }

    /// Takes an `S` or `E` line whose stage name the reading thread gave the number `name`
    /// (announced by [`KanataNormalizer::number_stages`]): exactly what [`Self::parsed`]
    /// does with the line, without looking at the name's text unless a repair needs it.
    #[inline(always)]
    pub(crate) fn numbered_stage(
        &mut self,
        end: bool,
        id: i64,
        lane: u32,
        name: u8,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        // A stage line does not go on with a held label (Q8): the label is written first,
        // as `parsed` writes it, and the line goes on the numbered way. In the normalizer's
        // own parse, which sees one line at a time, every label is held until the next
        // line: sent as a line, the stage line after it cost 9 % of make_padded's
        // instructions.
        if self.pending.active {
            self.flush_label(diag)?;
        }
        if self.phase != Phase::Body || !self.stretch.held.is_empty() {
            return self.numbered_stage_as_line(end, id, lane, name, lineno, diag);
        }
        self.stage_numbered(end, id, lane, name, lineno, diag)
    }

    /// Whether [`Self::numbered_stage_straight`] may take stage lines now: no label is held,
    /// the writer is made, nothing is held back (Q17), and no repair that looks at the open
    /// stages is asked for. Lines it takes change none of that, so a run of them asks once;
    /// any other line may, so it is asked again after one.
    #[inline(always)]
    pub(crate) fn stages_go_straight(&self) -> bool {
        !self.pending.active
            && self.phase == Phase::Body
            && self.stretch.held.is_empty()
            && !self.repairs.dedupe
            && !self.repairs.stretch_zero
            && self.writer.is_some()
    }

    /// Whether a label's text is read, beyond whether anything of it is written: not when
    /// the writer discards (`--check`) and no repeated label is dropped (`--dedupe`, which
    /// compares the texts).
    #[inline(always)]
    pub(crate) fn reads_label_text(&self) -> bool {
        self.repairs.dedupe || self.writer.as_ref().is_none_or(|writer| !writer.discards())
    }

    /// The commonest `S` and `E` lines while [`Self::stages_go_straight`]: those of a live
    /// instruction, whose stage is known, that enter it, or leave it where it is open. For
    /// them it does what [`Self::numbered_stage`] does, without the checks a run of stage
    /// lines needs once (the per-line checks were a fifth of the normalizer's instructions per
    /// stage line). `false`, with nothing done and nothing reported, for any other line,
    /// which `numbered_stage` takes then.
    #[inline(always)]
    pub(crate) fn numbered_stage_straight(
        &mut self,
        end: bool,
        id: i64,
        lane: u32,
        name: u8,
    ) -> Result<bool, Error> {
        let Resolved::Live(insn) = self.ids.resolve(id) else {
            return Ok(false);
        };
        let Some(stage) = self.numbered[usize::from(name)].1 else {
            return Ok(false);
        };
        let Some(writer) = self.writer.as_mut() else {
            return Ok(false);
        };
        writer_enter_or_leave(writer, end, insn, lane, stage)
    }

    /// [`Self::numbered_stage`] where the line needs [`Self::parsed`]'s checks: the writer is
    /// not made yet, or commands are held back (Q17).
    #[cold]
    #[inline(never)]
    fn numbered_stage_as_line(
        &mut self,
        end: bool,
        id: i64,
        lane: u32,
        name: u8,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        // Taken out while the line is normalized, which needs `self` whole.
        let text = std::mem::take(&mut self.numbered[usize::from(name)].0);
        let line = Line::Command(Command::Stage {
            end,
            id,
            lane,
            name: &text[..],
        });
        let result = self.parsed(&line, |piece| piece, || false, lineno, diag);
        self.numbered[usize::from(name)].0 = text;
        result
    }

    /// [`Self::stage`] for a numbered name: inlined up to the common enter or leave, which
    /// cost less than the call did (the rest, a name's first line or a repair, is out of
    /// line).
    #[inline(always)]
    fn stage_numbered(
        &mut self,
        end: bool,
        id: i64,
        lane: u32,
        name: u8,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let command = if end { b'E' } else { b'S' };
        let Some(insn) = self.live_insn(id, command, lineno, diag) else {
            return Ok(());
        };
        if let Some(stage) = self.numbered[usize::from(name)].1 {
            if self.enter_or_leave(end, insn, lane, stage)? {
                return Ok(());
            }
        }
        self.stage_numbered_rarely(end, id, insn, lane, name, lineno, diag)
    }

    /// [`Self::stage_numbered`] of a name's first line, or of a line that needs a repair.
    ///
    /// The caller has tried [`Self::enter_or_leave`] already when the name had a stage, so
    /// it is tried here only for a name seen for the first time; a known stage goes straight
    /// to [`Self::stage_with_repairs`].
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn stage_numbered_rarely(
        &mut self,
        end: bool,
        id: i64,
        insn: kanata_writer::InsnId,
        lane: u32,
        name: u8,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let number = usize::from(name);
        let stage = match self.numbered[number].1 {
            Some(stage) => stage,
            None => {
                let text = std::mem::take(&mut self.numbered[number].0);
                let stage = self.stage_handle(&text, lineno, diag);
                self.numbered[number] = (text, stage);
                let Some(stage) = stage else {
                    return Ok(());
                };
                if self.enter_or_leave(end, insn, lane, stage)? {
                    return Ok(());
                }
                stage
            }
        };
        let text = std::mem::take(&mut self.numbered[number].0);
        let result = self.stage_with_repairs(end, id, insn, lane, stage, &text, lineno, diag);
        self.numbered[number].0 = text;
        result
    }

    /// The common `S` and `E`: when no repair that looks at the open stages is asked for (so
    /// no `E` is held either), the writer enters, or leaves the open stage an `E` names.
    /// `false` when the line needs [`Self::stage_with_repairs`]: a repair is asked for, or
    /// the `E` names a stage that is not open (reported there).
    #[inline(always)]
    fn enter_or_leave(
        &mut self,
        end: bool,
        insn: kanata_writer::InsnId,
        lane: u32,
        stage: Stage,
    ) -> Result<bool, Error> {
        if self.repairs.dedupe || self.repairs.stretch_zero {
            return Ok(false);
        }
        writer_enter_or_leave(self.writer(), end, insn, lane, stage)
    }

    /// An `S` or `E` of the live instruction `insn` (input id `id`), with the repairs that
    /// look at the open stages (Q7, Q16, Q17).
    #[allow(clippy::too_many_arguments)]
    fn stage_with_repairs(
        &mut self,
        end: bool,
        id: i64,
        insn: kanata_writer::InsnId,
        lane: u32,
        stage: Stage,
        name: &[u8],
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let lane_number = lane;
        let lane = Lane::new(lane);
        let dedupe = self.repairs.dedupe;
        let deferred = self
            .deferred_ends
            .iter()
            .position(|d| d.insn == insn && d.lane == lane);
        // An `S` needs the open stage only for the repairs that look at it (Q16, Q17).
        let open = if end || dedupe || self.repairs.stretch_zero {
            self.writer().open_stage(insn, lane)
        } else {
            None
        };
        let merge = dedupe && open == Some(stage) && !end;
        if self.repairs.stretch_zero
            && open.is_some()
            && !merge
            && (!end || open == Some(stage))
            && deferred.is_none()
            && self.opened_this_cycle(id, Some(lane_number))
        {
            let command = Command::Stage {
                end,
                id,
                lane: lane_number,
                name: name.to_vec(),
            };
            self.hold(id, command, lineno, diag);
            return Ok(());
        }
        if end {
            if open == Some(stage) && deferred.is_none() {
                if dedupe {
                    self.deferred_ends.push(DeferredEnd { insn, lane });
                } else {
                    self.writer().leave(insn, lane)?;
                    self.stage_closed(id, lane_number);
                }
            } else {
                diag.report(Rule::Q7, lineno, || {
                    format!(
                        "`E` for stage {:?} of id {id}, which is not open in lane {}, dropped",
                        shorten(name),
                        lane.get()
                    )
                });
            }
        } else if merge {
            if let Some(at) = deferred {
                self.deferred_ends.swap_remove(at);
            }
            diag.report(Rule::Q16, lineno, || {
                format!(
                    "stage {:?} of id {id} entered again without a gap: segments merged",
                    shorten(name)
                )
            });
        } else {
            if let Some(at) = deferred {
                // The `S` closes the stage itself, exactly as the kept `E` would have.
                self.deferred_ends.swap_remove(at);
            }
            self.writer().enter(insn, lane, stage)?;
            if dedupe {
                // A stage note repeats legitimately on another stage: compare notes within
                // one stage only.
                if let Some((_, LiveInsn(Some(extra)))) = self.ids.live(id) {
                    extra.last_label[2] = 0;
                }
            }
            if self.repairs.stretch_zero {
                let now = self.writer().cycle();
                if let Some((_, live)) = self.ids.live(id) {
                    let started = &mut live.extra().started;
                    started.retain(|&(l, _)| l != lane_number);
                    started.push((lane_number, now));
                }
            }
        }
        Ok(())
    }

    /// Q17 bookkeeping: the stage of `lane` closed.
    fn stage_closed(&mut self, id: i64, lane: u32) {
        if self.repairs.stretch_zero {
            if let Some((_, LiveInsn(Some(extra)))) = self.ids.live(id) {
                extra.started.retain(|&(l, _)| l != lane);
            }
        }
    }

    /// Q16: forgets the `E`s kept for `insn`, which its `R` closes anyway.
    fn drop_deferred_ends(&mut self, insn: kanata_writer::InsnId) {
        if !self.deferred_ends.is_empty() {
            self.deferred_ends.retain(|d| d.insn != insn);
        }
    }

    fn retire(
        &mut self,
        id: i64,
        retire_id: i64,
        kind: RetireType,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let flushed = self.retire_type(kind, lineno, diag);
        let Some(insn) = self.live_insn(id, b'R', lineno, diag) else {
            return Ok(());
        };
        if self.repairs.stretch_zero && self.opened_this_cycle(id, None) {
            // Already read as retired or flushed: hold the decided type.
            let kind = RetireType::Value(i64::from(flushed));
            let command = Command::Retire {
                id,
                retire_id,
                kind,
            };
            self.hold(id, command, lineno, diag);
            return Ok(());
        }
        self.drop_deferred_ends(insn);
        self.ids.end(id);
        self.max_retire_id = self.max_retire_id.max(retire_id);
        let writer = self
            .writer
            .as_mut()
            .expect("retirements come after the first command");
        if self.repairs.renumber_retire {
            if flushed {
                writer.flush(insn)?;
            } else {
                let new_id = self.next_retire_id;
                self.next_retire_id += 1;
                writer.retire_as(insn, new_id)?;
                if new_id != retire_id {
                    diag.report(Rule::Q14, lineno, || {
                        format!("retire id {retire_id} renumbered {new_id}")
                    });
                }
            }
        } else if flushed {
            writer.flush_as(insn, retire_id)?;
        } else {
            writer.retire_as(insn, retire_id)?;
        }
        Ok(())
    }

    /// Q13: whether an `R` of this type is a flush.
    fn retire_type(&mut self, kind: RetireType, lineno: u64, diag: &mut Diagnostics) -> bool {
        match kind {
            RetireType::Empty => {
                diag.report(Rule::Q13, lineno, || {
                    "`R` without a type read as retired (0)".to_owned()
                });
                false
            }
            RetireType::Invalid => {
                diag.report(Rule::Q13, lineno, || {
                    "`R` type that is not a number read as retired (0)".to_owned()
                });
                false
            }
            RetireType::Value(value) => {
                let ascii = *self.retire_48.get_or_insert(value == 48 || value == 49);
                match (value, ascii) {
                    (0, _) => false,
                    (1, _) => true,
                    (48 | 49, true) => {
                        diag.report(Rule::Q13, lineno, || {
                            format!("`R` type {value} read as '{}'", value - 48)
                        });
                        value == 49
                    }
                    _ => {
                        diag.report(Rule::Q13, lineno, || {
                            format!("`R` type {value} read as retired (0)")
                        });
                        false
                    }
                }
            }
        }
    }

    fn dep(
        &mut self,
        consumer: i64,
        producer: i64,
        kind: u32,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let Some(consumer_insn) = self.live_insn(consumer, b'W', lineno, diag) else {
            return Ok(());
        };
        let producer_insn = match self.ids.resolve(producer) {
            Resolved::Live(insn) | Resolved::Finished(insn) => insn,
            Resolved::Unknown => {
                diag.report(Rule::Q12, lineno, || {
                    format!(
                        "`W` whose producer {producer} never appeared (or too long ago) dropped"
                    )
                });
                return Ok(());
            }
        };
        if out_id(producer_insn) >= out_id(consumer_insn) {
            diag.report(Rule::Q12, lineno, || {
                format!("`W` whose producer {producer} is not older than its consumer {consumer} dropped")
            });
            return Ok(());
        }
        self.writer()
            .depend(consumer_insn, producer_insn, DepKind::new(kind))?;
        Ok(())
    }

    /// Ends the trace; returns what it holds.
    pub(crate) fn finish(mut self, diag: &mut Diagnostics) -> Result<Finished<W>, Error> {
        if self.pending.active {
            self.flush_label(diag)?;
        }
        if self.writer.is_none() {
            self.start(0)?;
        }
        self.end_cycle()?;
        while !self.stretch.queue.is_empty() {
            self.step(1, 0)?;
            self.replay_held(diag)?;
            self.end_cycle()?;
        }
        if let Some(policy) = self.repairs.close_open {
            // Konata draws open instructions up to the last cycle + 1: closing them there
            // keeps every stage box as it was, and adds only the flush or retire mark.
            if !self.ids.live_in_order().is_empty() {
                self.step(1, 0)?;
            }
            let mut next_retire_id = if self.repairs.renumber_retire {
                self.next_retire_id
            } else {
                self.max_retire_id + 1
            };
            for (id, insn) in self.ids.live_in_order() {
                let writer = self.writer.as_mut().expect("made above");
                match policy {
                    CloseOpen::Flush => writer.flush(insn)?,
                    CloseOpen::Retire => {
                        writer.retire_as(insn, next_retire_id)?;
                        next_retire_id += 1;
                    }
                }
                diag.report(Rule::Q15, 0, || {
                    format!(
                        "id {id}, still open, {}",
                        match policy {
                            CloseOpen::Flush => "flushed",
                            CloseOpen::Retire => "retired",
                        }
                    )
                });
            }
        }
        let writer = self.writer.take().expect("made above");
        Ok(writer.finish()?)
    }
}

/// The writer enters `stage` (an `S`), or leaves it if it is the one open in `lane` (an `E`;
/// `false`, nothing done, if it is not).
#[inline(always)]
fn writer_enter_or_leave<W: Write + Send + 'static>(
    writer: &mut Writer<W>,
    end: bool,
    insn: kanata_writer::InsnId,
    lane: u32,
    stage: Stage,
) -> Result<bool, Error> {
    let lane = Lane::new(lane);
    if !end {
        writer.enter(insn, lane, stage)?;
        return Ok(true);
    }
    Ok(writer.leave_if_open(insn, lane, stage)?)
}

/// A 64-bit hash of label text, for Q16.
fn text_hash(text: &[u8]) -> u64 {
    // 0 means "no label yet".
    BuildHasherDefault::<IdHasher>::default().hash_one(text) | 1
}

/// The input id a command is about (its consumer for `W`); `None` for time commands.
fn command_id(command: &Command<&[u8]>) -> Option<i64> {
    match *command {
        Command::Start(_) | Command::Cycle(_) => None,
        Command::Insn { id, .. }
        | Command::Label { id, .. }
        | Command::Stage { id, .. }
        | Command::Retire { id, .. } => Some(id),
        Command::Dep { consumer, .. } => Some(consumer),
    }
}

/// The text as UTF-8, invalid bytes replaced by U+FFFD as Konata decodes them; valid text
/// (nearly all of it) is not copied.
#[inline]
fn utf8(bytes: &[u8]) -> Cow<'_, str> {
    // std's check first: this runs for every label, and invalid text is rare.
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => bytes.to_str_lossy(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::testing::Rng;

    /// `write_label` hands the writer a label's bytes, which it decodes with std's
    /// `String::from_utf8_lossy`: that must make of invalid text what `utf8` (bstr's
    /// decoding, which the normalizer used before) makes, for the output to stay the same.
    #[test]
    fn lossy_text_is_std_s() {
        let mut rng = Rng(0x5eed);
        // Bytes near UTF-8's structure: ASCII, continuation bytes, lead bytes of every
        // length (with their edge cases: overlong, surrogates, past U+10FFFF), never-valid
        // bytes.
        let pool = [
            b'a', b'\r', 0x80, 0x9f, 0xa9, 0xbf, 0xc0, 0xc2, 0xc3, 0xe0, 0xe2, 0xed, 0xef, 0xf0,
            0xf4, 0xf5, 0xff,
        ];
        let (mut valid, mut invalid) = (0, 0);
        for _ in 0..50_000 {
            let len = rng.below(10) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| pool[rng.below(pool.len() as u64) as usize])
                .collect();
            match std::str::from_utf8(&bytes) {
                Ok(text) if !text.is_ascii() => valid += 1,
                Ok(_) => {}
                Err(_) => invalid += 1,
            }
            assert_eq!(utf8(&bytes), String::from_utf8_lossy(&bytes), "{bytes:x?}");
        }
        assert!(
            invalid > 10_000 && valid > 100,
            "{invalid} invalid, {valid} valid"
        );
    }
}
