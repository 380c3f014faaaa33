//! The writer on a thread of its own. Encoding the Kanata text costs about as much as
//! everything else the converter does, so the emitter records its writer calls as `Op`s, in
//! batches, and this thread replays them on the writer: the two halves run on two cores.
//! Batches come back empty to be filled again, so their buffers are allocated once.
//!
//! The writer mints file ids in `begin` order from 0 (no window is set for gem5 output), so
//! the emitter knows each instruction's id without waiting for this thread; the replay checks
//! that the writer agrees.

use std::io::Write;
use std::sync::mpsc;
use std::thread::JoinHandle;

use kanata_writer::{DepKind, Finished, InsnId, LabelKind, Lane, Stage, Writer, WriterBuilder};

use super::record::StageName;
use crate::error::{Error, ErrorKind};

/// Batches in flight: enough that neither thread waits on the other batch by batch, few
/// enough to bound the memory.
const BATCHES_IN_FLIGHT: usize = 4;
/// Ops per batch.
const BATCH_OPS: usize = 8 * 1024;
/// Text bytes per batch, at most (one label may exceed it).
const BATCH_TEXT: usize = 1 << 22;

/// Text in a batch: a byte range of [`Batch::text`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span {
    start: u32,
    end: u32,
}

/// One writer call. Instructions are named by their file id.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    /// Time moves to this cycle (the first one starts the trace there).
    Cycle(i64),
    /// `I`, then the name and detail labels.
    Begin {
        seq: u64,
        thread: u32,
        name: Span,
        detail: Span,
    },
    Enter {
        insn: u64,
        lane: u32,
        stage: StageName,
    },
    Note {
        insn: u64,
        text: Span,
    },
    Leave {
        insn: u64,
        lane: u32,
    },
    Depend {
        insn: u64,
        producer: u64,
    },
    Retire {
        insn: u64,
        rid: i64,
    },
    Flush {
        insn: u64,
        rid: i64,
    },
}

#[derive(Default)]
struct Batch {
    ops: Vec<Op>,
    text: String,
}

/// The sending end, on the converter's thread.
pub(crate) struct Replay<W: Write + Send + 'static> {
    batch: Batch,
    full: Option<mpsc::SyncSender<Batch>>,
    empty: mpsc::Receiver<Batch>,
    thread: Option<JoinHandle<Result<Finished<W>, Error>>>,
}

impl<W: Write + Send + 'static> Replay<W> {
    pub(crate) fn new(builder: WriterBuilder, output: W) -> Replay<W> {
        let (full_tx, full_rx) = mpsc::sync_channel::<Batch>(BATCHES_IN_FLIGHT);
        let (empty_tx, empty_rx) = mpsc::channel::<Batch>();
        let thread = std::thread::Builder::new()
            .name("kanata-pp gem5 writer".to_owned())
            .spawn(move || replay(builder, output, full_rx, empty_tx))
            .expect("a thread can be started");
        Replay {
            batch: Batch::default(),
            full: Some(full_tx),
            empty: empty_rx,
            thread: Some(thread),
        }
    }

    /// Copies `text` into the batch, for an op that follows.
    #[inline]
    pub(crate) fn text(&mut self, text: &str) -> Span {
        let start = self.batch.text.len() as u32;
        self.batch.text.push_str(text);
        Span {
            start,
            end: self.batch.text.len() as u32,
        }
    }

    /// Queues one op; the batch goes when it is full. Ops after the texts they name, so a
    /// batch never sends a span without its text.
    #[inline]
    pub(crate) fn push(&mut self, op: Op) -> Result<(), Error> {
        self.batch.ops.push(op);
        if self.batch.ops.len() >= BATCH_OPS || self.batch.text.len() >= BATCH_TEXT {
            self.send()?;
        }
        Ok(())
    }

    fn send(&mut self) -> Result<(), Error> {
        let mut next = self.empty.try_recv().unwrap_or_default();
        next.ops.clear();
        next.text.clear();
        let batch = std::mem::replace(&mut self.batch, next);
        let sent = self.full.as_ref().map(|full| full.send(batch));
        match sent {
            Some(Ok(())) => Ok(()),
            // The writer stopped: its error is the one to report.
            _ => Err(self.join().err().unwrap_or_else(stopped)),
        }
    }

    /// Sends what is left and waits for the writer to finish the trace.
    pub(crate) fn finish(mut self) -> Result<Finished<W>, Error> {
        if !self.batch.ops.is_empty() {
            self.send()?;
        }
        self.join()
    }

    fn join(&mut self) -> Result<Finished<W>, Error> {
        self.full = None;
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => Err(stopped()),
        }
    }
}

impl<W: Write + Send + 'static> Drop for Replay<W> {
    /// A conversion that stops early (an input error) still waits for the writer's thread,
    /// so that no thread outlives the conversion, still writing to its output (found by the
    /// `gem5` fuzz target's leak check: the thread's buffers were alive after the call).
    fn drop(&mut self) {
        self.full = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn stopped() -> Error {
    Error::new(ErrorKind::Io, "the gem5 writer thread stopped")
}

/// The writer's thread: replays batches until the sender is dropped, then ends the trace.
fn replay<W: Write + Send + 'static>(
    builder: WriterBuilder,
    output: W,
    full: mpsc::Receiver<Batch>,
    empty: mpsc::Sender<Batch>,
) -> Result<Finished<W>, Error> {
    let mut player = Player {
        builder,
        output: Some(output),
        writer: None,
        stages: Vec::new(),
        begun: 0,
    };
    for batch in full {
        player.play(&batch)?;
        // The converter may have stopped sending; then the batch is simply freed.
        let _ = empty.send(batch);
    }
    if player.writer.is_none() {
        player.start(0)?;
    }
    let writer = player.writer.take().expect("made above");
    Ok(writer.finish()?)
}

struct Player<W: Write + Send + 'static> {
    builder: WriterBuilder,
    output: Option<W>,
    writer: Option<Writer<W>>,
    stages: Vec<Stage>,
    /// Instructions begun: the file id the next one gets.
    begun: u64,
}

impl<W: Write + Send + 'static> Player<W> {
    /// The writer is made at the first cycle written, so that Konata's timeline starts where
    /// the trace does.
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

    fn play(&mut self, batch: &Batch) -> Result<(), Error> {
        let text = |span: Span| &batch.text[span.start as usize..span.end as usize];
        for op in &batch.ops {
            if let Op::Cycle(cycle) = *op {
                match self.writer.as_mut() {
                    None => self.start(cycle)?,
                    Some(writer) if cycle > writer.cycle() => {
                        writer.advance(cycle.abs_diff(writer.cycle()))?;
                    }
                    Some(_) => {}
                }
                continue;
            }
            let writer = self
                .writer
                .as_mut()
                .expect("the emitter sends a cycle first");
            match *op {
                Op::Cycle(_) => unreachable!("handled above"),
                Op::Begin {
                    seq,
                    thread,
                    name,
                    detail,
                } => {
                    let insn = writer.begin(seq, thread)?;
                    if insn != InsnId::from_raw(self.begun) {
                        return Err(Error::new(
                            ErrorKind::Io,
                            "the writer numbered an instruction other than in begin order",
                        ));
                    }
                    self.begun += 1;
                    writer.label(insn, LabelKind::Name, text(name))?;
                    writer.label(insn, LabelKind::Detail, text(detail))?;
                }
                Op::Enter { insn, lane, stage } => {
                    let insn = InsnId::from_raw(insn);
                    writer.enter(insn, Lane::new(lane), self.stages[stage.index()])?;
                }
                Op::Note { insn, text: note } => {
                    writer.label(InsnId::from_raw(insn), LabelKind::StageNote, text(note))?;
                }
                Op::Leave { insn, lane } => {
                    writer.leave(InsnId::from_raw(insn), Lane::new(lane))?
                }
                Op::Depend { insn, producer } => writer.depend(
                    InsnId::from_raw(insn),
                    InsnId::from_raw(producer),
                    DepKind::WAKE_UP,
                )?,
                Op::Retire { insn, rid } => writer.retire_as(InsnId::from_raw(insn), rid)?,
                Op::Flush { insn, rid } => writer.flush_as(InsnId::from_raw(insn), rid)?,
            }
        }
        Ok(())
    }
}
