//! Reading a trace back as instructions: [`open`] takes any input kanata-pp converts (a
//! sloppy Kanata log, a gem5 O3PipeView trace, an RSD raw log, a canonical or seekable
//! `.kanata[.gz|.zst]`) and a [`Window`](crate::output::window::Window), and yields the
//! window's [`Instruction`]s in op-id order, as Konata would show them.
//!
//! It is the conversion of [`convert`](crate::convert()) with the same [`Options`] (window,
//! repairs, format), whose canonical text is read back through the one reader of canonical
//! Kanata, [`Instructions`]. Input that is canonical already (what kanata-pp and
//! kanata-writer write) is read by [`Instructions`] directly, without the conversion, when
//! the conversion could change nothing: the whole trace (no window), no repair asked for, a
//! file rather than stdin. Should a line further on turn out not to be canonical (a sloppy
//! log that starts like a canonical one), the trace is read again through the conversion,
//! whose first instructions are checked against those already given: the instructions are
//! the conversion's either way, and the [`Report`] is the conversion's once it ran (on the
//! direct path it describes the text as read, with no repairs).
//!
//! The reading runs on a thread of its own (and the conversion, when there is one, on
//! another), and hands whole instructions over in batches, so memory stays what the
//! conversion and the instructions in flight need, whatever the size of the trace; a window
//! of a seekable file is read through its index. Rendering and the Python bindings read
//! traces through this module.
//!
//! ```
//! use kanata_pp::output::window::Window;
//! use kanata_pp::{Destination, Options};
//!
//! let mut options = Options::new(Destination::Check);
//! options.window = Window::all();
//! options.window.cycles = "10..20".parse()?;
//! let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../samples/pipeline_sim.kanata");
//! let mut trace = kanata_pp::trace::open(sample.as_ref(), &options)?;
//! let mut count = 0;
//! for insn in trace.by_ref() {
//!     let insn = insn?;
//!     // Kept whole: its life overlaps cycles [10, 20).
//!     assert!(insn.begin < 20 && insn.end.is_none_or(|end| end >= 10));
//!     count += 1;
//! }
//! assert!(count > 0);
//! let report = trace.finish()?;
//! assert_eq!(report.summary.instructions, count);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::VecDeque;
use std::io::{self, BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use kanata_writer::Summary;

use crate::convert::{check_level, convert_into, output_compression, Destination, Options, Report};
use crate::diag::Diagnostics;
use crate::error::{Error, ErrorKind};
use crate::input::{self, detect, AlignedReader};
use crate::output::canonical::{Instruction, Instructions, SPARES};
use crate::output::segments::{SegmentColumns, SegmentReader};
use crate::Format;

/// Bytes of text handed over at a time from the conversion to the reader.
const CHUNK: usize = 256 * 1024;
/// Chunks in flight between the conversion and the reader.
const CHUNKS_IN_FLIGHT: usize = 4;
/// Instructions handed over at a time from the reader.
const BATCH: usize = 1024;
/// Batches in flight between the reader and the [`TraceReader`].
const BATCHES_IN_FLIGHT: usize = 4;
/// The read buffer of a canonical input read directly.
const READ_BUFFER: usize = 256 * 1024;

/// Opens `input` (a path, or `-` for stdin) and starts reading it as `options` say (their
/// destination and `stats` are ignored): the instructions of `options.window` come out of
/// the [`TraceReader`].
///
/// # Errors
/// When the reading thread cannot be started. Errors of the input come out of the reader,
/// as they are met.
pub fn open(input: &Path, options: &Options) -> Result<TraceReader, Error> {
    let mut options = options.clone();
    options.destination = Destination::Check;
    options.stats = false;
    options.progress = false;
    let (sender, receiver) = mpsc::sync_channel(BATCHES_IN_FLIGHT);
    let input: PathBuf = input.to_owned();
    let spares = Arc::new(Mutex::new(Vec::new()));
    let worker_spares = Arc::clone(&spares);
    let worker = std::thread::Builder::new()
        .name("kanata-trace".to_owned())
        .spawn(move || {
            let mut out = BatchSender::new(sender);
            out.spares = worker_spares;
            let given = match may_read_directly(&input, &options) {
                true => match read_directly(&input, &options, &mut out) {
                    Ok(report) => return Ok(report),
                    Err(Stopped) => return Err(reader_gone()),
                    Err(Fallback(given)) => given,
                },
                false => Given::default(),
            };
            read_converted(&input, &options, given, &mut out)
        })
        .map_err(|err| Error::new(ErrorKind::Io, format!("cannot start a thread: {err}")))?;
    Ok(TraceReader {
        receiver: Some(receiver),
        batch: Vec::new().into_iter(),
        start_cycle: None,
        last_cycle: None,
        worker: Some(worker),
        outcome: None,
        failed: false,
        spares,
    })
}

/// The instructions of a window, in op-id order ([`open`]). At the end of the input, or at
/// its first error, the iterator ends; [`finish`](Self::finish) gives the conversion's
/// [`Report`] (its repairs, the window's summary) or its error.
#[derive(Debug)]
pub struct TraceReader {
    receiver: Option<Receiver<Batch>>,
    /// What is left of the latest batch.
    batch: std::vec::IntoIter<Instruction>,
    start_cycle: Option<i64>,
    last_cycle: Option<u64>,
    worker: Option<JoinHandle<Result<Report, Error>>>,
    /// The reading's result, once it has ended.
    outcome: Option<Result<Report, Error>>,
    /// An error was given: the iterator has ended.
    failed: bool,
    /// Instructions given back ([`recycle`](Self::recycle)), for the reading thread.
    spares: Arc<Mutex<Vec<Instruction>>>,
}

impl TraceReader {
    /// The `C=` start cycle of the trace, once the first instruction has been read.
    pub fn start_cycle(&self) -> Option<i64> {
        self.start_cycle
    }

    /// Konata's last cycle of the window's text, once it has all been read: instructions
    /// still open are drawn up to it + 1.
    pub fn last_cycle(&self) -> Option<u64> {
        self.last_cycle
    }

    /// Waits for the reading to end and gives its report: reading stops here, what is
    /// left of the window is read and dropped.
    ///
    /// # Errors
    /// The conversion's error (a bad input, with its file and line).
    pub fn finish(mut self) -> Result<Report, Error> {
        // Taking the rest lets a reader waiting on a full channel end.
        if let Some(receiver) = self.receiver.take() {
            for batch in receiver {
                self.note(&batch);
            }
        }
        self.join();
        self.outcome
            .take()
            .unwrap_or_else(|| Err(Error::new(ErrorKind::Io, "the conversion was lost")))
    }

    /// Gives back instructions that were read and are no longer needed: the reading thread
    /// makes later ones in their memory ([`Instructions::recycle`]) instead of allocating,
    /// and they are not freed on this thread, against the allocator's lock of the reading
    /// thread's memory (what the Python bindings do with every instruction Python drops).
    /// At most [`SPARES`] wait; more are dropped here.
    pub fn recycle(&self, insns: impl IntoIterator<Item = Instruction>) {
        let mut spares = self.spares.lock().unwrap_or_else(|e| e.into_inner());
        let room = SPARES.saturating_sub(spares.len());
        spares.extend(insns.into_iter().take(room));
    }

    fn note(&mut self, batch: &Batch) {
        self.start_cycle = self.start_cycle.or(batch.start_cycle);
        self.last_cycle = self.last_cycle.or(batch.last_cycle);
    }

    fn join(&mut self) {
        if let Some(worker) = self.worker.take() {
            let outcome = worker
                .join()
                .unwrap_or_else(|_| Err(Error::new(ErrorKind::Io, "the reading thread panicked")));
            self.outcome = Some(outcome);
        }
    }
}

impl Iterator for TraceReader {
    type Item = Result<Instruction, Error>;

    fn next(&mut self) -> Option<Result<Instruction, Error>> {
        loop {
            if let Some(insn) = self.batch.next() {
                return Some(Ok(insn));
            }
            if self.failed {
                return None;
            }
            let batch = self.receiver.as_ref().and_then(|r| r.recv().ok());
            match batch {
                Some(batch) => {
                    self.note(&batch);
                    self.batch = batch.insns.into_iter();
                }
                None => {
                    // The reading ended: with an error, it is the one to give.
                    self.receiver = None;
                    self.join();
                    self.failed = true;
                    return match &self.outcome {
                        Some(Err(error)) => Some(Err(error.clone())),
                        _ => None,
                    };
                }
            }
        }
    }
}

/// Instructions handed over, with what the reader knows of the trace so far.
struct Batch {
    insns: Vec<Instruction>,
    start_cycle: Option<i64>,
    last_cycle: Option<u64>,
}

/// The reading thread's end of the hand-over.
struct BatchSender {
    sender: SyncSender<Batch>,
    insns: Vec<Instruction>,
    /// The instructions the [`TraceReader`] gives back.
    spares: Arc<Mutex<Vec<Instruction>>>,
    /// A batch was sent since the spares were last taken.
    sent: bool,
}

impl BatchSender {
    fn new(sender: SyncSender<Batch>) -> BatchSender {
        BatchSender {
            sender,
            insns: Vec::with_capacity(BATCH),
            spares: Arc::default(),
            sent: false,
        }
    }

    /// Moves the instructions given back into `insns`, once a batch has gone since the
    /// last time (they come back a batch at a time).
    fn recycle_into<R: BufRead>(&mut self, insns: &mut Instructions<R>) {
        if !std::mem::take(&mut self.sent) {
            return;
        }
        let spares = std::mem::take(&mut *self.spares.lock().unwrap_or_else(|e| e.into_inner()));
        for insn in spares {
            insns.recycle(insn);
        }
    }

    /// Queues `insn`; false when the [`TraceReader`] is gone (nobody reads any more).
    fn push(&mut self, insn: Instruction, start_cycle: Option<i64>) -> bool {
        self.insns.push(insn);
        self.insns.len() < BATCH || self.send(start_cycle, None)
    }

    /// Sends what is queued; false when the [`TraceReader`] is gone.
    fn send(&mut self, start_cycle: Option<i64>, last_cycle: Option<u64>) -> bool {
        let insns = std::mem::replace(&mut self.insns, Vec::with_capacity(BATCH));
        let batch = Batch {
            insns,
            start_cycle,
            last_cycle,
        };
        self.sent = true;
        self.sender.send(batch).is_ok()
    }
}

/// The error of a reading whose [`TraceReader`] was dropped.
fn reader_gone() -> Error {
    Error::new(ErrorKind::Io, "the trace reader is gone")
}

/// The instructions given on the direct path before it gave up: how many. The conversion's
/// first instructions must be those: [`read_converted`] checks them one by one against the
/// file read directly again (the same reading, which gives the same instructions), so the
/// direct path keeps nothing of what it gives and a fallback costs one more reading of the
/// file's canonical start.
#[derive(Default)]
struct Given {
    count: u64,
    /// What was given, when it is not the direct reading of the file (tests).
    listed: Option<Vec<Instruction>>,
}

impl Given {
    fn add(&mut self, _insn: &Instruction) {
        self.count += 1;
    }

    /// The instructions given, in order: listed, or the direct reading of `input` again.
    fn replay(self, input: &Path) -> Box<dyn Iterator<Item = Instruction> + Send> {
        if let Some(listed) = self.listed {
            return Box::new(listed.into_iter());
        }
        if self.count == 0 {
            return Box::new(std::iter::empty());
        }
        // A file that cannot be read again gives nothing: the check then fails.
        let Ok(opened) = input::open(input) else {
            return Box::new(std::iter::empty());
        };
        let insns = Instructions::new(AlignedReader::with_capacity(READ_BUFFER, opened.reader));
        Box::new(insns.map_while(Result::ok).take(self.count as usize))
    }
}

/// Why the direct path ended without a report.
enum DirectEnd {
    /// The [`TraceReader`] is gone.
    Stopped,
    /// The input is not canonical (or not readable as such): read it through the conversion,
    /// after the instructions already given.
    Fallback(Given),
}
use DirectEnd::{Fallback, Stopped};

/// Whether the conversion of `input` could change nothing if it is canonical text: then
/// [`read_directly`] may try. The format is checked from the head of the text there.
fn may_read_directly(input: &Path, options: &Options) -> bool {
    let repairs = &options.repairs;
    input.as_os_str() != "-"
        && matches!(options.from, None | Some(Format::Kanata))
        && !options.window.is_restricted()
        && repairs.keep_canonical_text()
}

/// Reads `input` with [`Instructions`], straight from its decompressed text, and sends its
/// instructions: the report of a canonical input, or why it stopped.
fn read_directly(
    input: &Path,
    options: &Options,
    out: &mut BatchSender,
) -> Result<Report, DirectEnd> {
    let started = Instant::now();
    let mut given = Given::default();
    // Anything wrong (the usage, opening, the format) is the conversion's to find and word.
    let fallback = |given| Err(Fallback(given));
    let Ok(compression) = output_compression(options) else {
        return fallback(given);
    };
    if check_level(compression, options.level).is_err() {
        return fallback(given);
    }
    let Ok(opened) = input::open(input) else {
        return fallback(given);
    };
    if !opened.head.starts_with(b"Kanata\t0004\nC=\t")
        || !matches!(detect::detect(&opened.head), Ok(Format::Kanata))
    {
        return fallback(given);
    }
    let text = Counted {
        inner: opened.reader,
        bytes: 0,
    };
    let mut insns = Instructions::new(AlignedReader::with_capacity(READ_BUFFER, text));
    let mut summary = Summary::default();
    // Instructions read and not given yet: see `give`.
    let mut held = VecDeque::new();
    let late_window = options.repairs.late_window;
    while let Some(insn) = insns.next() {
        let Ok(insn) = insn else {
            return fallback(given);
        };
        summary.instructions += 1;
        match insn.retire {
            Some(retire) if retire.flushed => summary.flushed += 1,
            Some(_) => summary.retired += 1,
            None => summary.left_open += 1,
        }
        held.push_back(insn);
        out.recycle_into(&mut insns);
        let cycle = insns.reader().cycle();
        let start_cycle = insns.start_cycle();
        if !give(
            &mut held,
            |end| cycle > end.saturating_add(late_window),
            &mut given,
            out,
            start_cycle,
        ) {
            return Err(Stopped);
        }
    }
    let Some(last_cycle) = insns.last_cycle() else {
        return fallback(given);
    };
    if !give(&mut held, |_| true, &mut given, out, insns.start_cycle()) {
        return Err(Stopped);
    }
    let start = insns.start_cycle().unwrap_or(0);
    summary.first_cycle = start;
    summary.last_cycle =
        i64::try_from(i128::from(start) + i128::from(last_cycle)).unwrap_or(i64::MAX);
    summary.lines = insns.reader().lines();
    if !out.send(insns.start_cycle(), Some(last_cycle)) {
        return Err(Stopped);
    }
    summary.text_bytes = insns.into_inner().into_inner().bytes;
    Ok(Report {
        input: input.display().to_string(),
        output: None,
        format: Format::Kanata,
        input_compression: opened.compression,
        output_compression: compression,
        summary,
        diagnostics: Diagnostics::new(options.max_examples, options.strict),
        bytes_in: opened.raw_read.load(Ordering::Relaxed),
        lines_in: summary.lines,
        bytes_out: 0,
        seconds: started.elapsed().as_secs_f64(),
        stats: None,
        window: None,
    })
}

/// The stage segments of the whole trace `input` as columns, in the order [`open`]'s
/// instructions give them, when `input` is canonical and would be read directly (no window,
/// no repair asked for, a file); `None` otherwise, or if any line turns out not to be
/// canonical: then [`open`] is the way, and says what is wrong, if anything. For a table of
/// every segment, this is several times faster than making the instructions. The lines are
/// read on a thread of their own ([`SegmentReader::read_all_on_two_threads`]).
pub fn segment_columns(input: &Path, options: &Options) -> Option<SegmentColumns> {
    if !may_read_directly(input, options) {
        return None;
    }
    let compression = output_compression(options).ok()?;
    check_level(compression, options.level).ok()?;
    let opened = input::open(input).ok()?;
    if !opened.head.starts_with(b"Kanata\t0004\nC=\t")
        || !matches!(detect::detect(&opened.head), Ok(Format::Kanata))
    {
        return None;
    }
    SegmentReader::new(AlignedReader::with_capacity(READ_BUFFER, opened.reader))
        .read_all_on_two_threads()
        .ok()
}

/// Gives the instructions at the front of `held` whose end cycle `settled` says is settled;
/// false when the [`TraceReader`] is gone.
///
/// An instruction read directly is held until the text is past the cycles in which a line of
/// a log that is not canonical after all could still change it: the conversion moves a label
/// that comes at most `--late-window` cycles after an instruction's `R` before that `R` (Q10)
/// and drops every other late command, so an instruction whose `R` is more than that many
/// cycles behind is what the conversion makes of it too. The instructions in flight at the
/// end of the text are given at the end. What is held is what the conversion holds for Q10.
fn give(
    held: &mut VecDeque<Instruction>,
    settled: impl Fn(u64) -> bool,
    given: &mut Given,
    out: &mut BatchSender,
    start_cycle: Option<i64>,
) -> bool {
    while let Some(insn) = held.front() {
        if !insn.end.is_none_or(&settled) {
            break;
        }
        let insn = held.pop_front().expect("an instruction at the front");
        given.add(&insn);
        if !out.push(insn, start_cycle) {
            return false;
        }
    }
    true
}

/// Counts the bytes of text read.
struct Counted {
    inner: Box<dyn Read + Send>,
    bytes: u64,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
}

/// Converts `input` on a thread of its own, reads the canonical text back with
/// [`Instructions`] and sends the instructions after the ones `given` already sent, which
/// must be the conversion's first ones.
fn read_converted(
    input: &Path,
    options: &Options,
    given: Given,
    out: &mut BatchSender,
) -> Result<Report, Error> {
    let (sender, receiver) = mpsc::sync_channel(CHUNKS_IN_FLIGHT);
    let conversion = {
        let input = input.to_owned();
        let options = options.clone();
        std::thread::Builder::new()
            .name("kanata-trace-conversion".to_owned())
            .spawn(move || {
                let text = ChunkWriter {
                    sender,
                    chunk: Vec::with_capacity(CHUNK),
                };
                convert_into(&input, &options, Box::new(text))
            })
            .map_err(|err| Error::new(ErrorKind::Io, format!("cannot start a thread: {err}")))?
    };
    let text = ChunkReader {
        receiver,
        chunk: Vec::new(),
        at: 0,
    };
    let mut insns = Instructions::new(text);
    let given_count = given.count;
    let mut replay = given.replay(input);
    let mut skipped = 0;
    let mut stopped = false;
    let mut failed = None;
    while let Some(insn) = insns.next() {
        let insn = match insn {
            Ok(insn) => insn,
            Err(error) => {
                failed = Some(error);
                break;
            }
        };
        if skipped < given_count {
            skipped += 1;
            if replay.next().as_ref() != Some(&insn) {
                failed = Some(diverged(input, given_count));
                break;
            }
            continue;
        }
        if !out.push(insn, insns.start_cycle()) {
            stopped = true;
            break;
        }
        out.recycle_into(&mut insns);
    }
    let (start_cycle, last_cycle) = (insns.start_cycle(), insns.last_cycle());
    // Dropping the text ends a conversion that is still writing.
    drop(insns);
    let outcome = conversion
        .join()
        .unwrap_or_else(|_| Err(Error::new(ErrorKind::Io, "the conversion thread panicked")));
    // The conversion's error first: a text cut short is its consequence.
    let report = outcome?;
    if let Some(error) = failed {
        return Err(error);
    }
    if stopped {
        return Err(reader_gone());
    }
    if skipped < given_count {
        return Err(diverged(input, given_count));
    }
    if !out.send(start_cycle, last_cycle) {
        return Err(reader_gone());
    }
    Ok(report)
}

/// The error of a trace whose conversion does not begin with the instructions read from its
/// canonical-looking start.
fn diverged(input: &Path, count: u64) -> Error {
    Error::new(
        ErrorKind::Input,
        format!(
            "the trace starts as canonical Kanata but is not: its conversion changes the first \
             {count} instructions, already read as written; convert it with kanata-pp first"
        ),
    )
    .with_file(&input.display().to_string())
}

/// The conversion's end of the hand-over: text in chunks.
struct ChunkWriter {
    sender: SyncSender<Vec<u8>>,
    chunk: Vec<u8>,
}

impl ChunkWriter {
    fn send(&mut self) -> io::Result<()> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let full = std::mem::replace(&mut self.chunk, Vec::with_capacity(CHUNK));
        self.sender
            .send(full)
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the trace reader is gone"))
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.chunk.extend_from_slice(buf);
        if self.chunk.len() >= CHUNK {
            self.send()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

impl Drop for ChunkWriter {
    fn drop(&mut self) {
        // The writer ends by dropping its output: what is left goes now.
        let _ = self.send();
    }
}

/// The reader's end: the chunks as one stream.
#[derive(Debug)]
struct ChunkReader {
    receiver: Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    at: usize,
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for ChunkReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.at == self.chunk.len() {
            match self.receiver.recv() {
                Ok(chunk) => {
                    self.chunk = chunk;
                    self.at = 0;
                }
                // The conversion ended (or failed): the end of the text.
                Err(mpsc::RecvError) => return Ok(&[]),
            }
        }
        Ok(&self.chunk[self.at..])
    }

    fn consume(&mut self, amount: usize) {
        self.at = (self.at + amount).min(self.chunk.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::window::Window;

    fn sample(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../samples")
            .join(name)
    }

    #[test]
    fn trace_reads_the_whole_sample_as_the_canonical_reader_does() {
        let options = Options::new(Destination::Check);
        let mut trace = open(&sample("sloppy.log"), &options).unwrap();
        let all: Vec<_> = trace.by_ref().collect::<Result<_, _>>().unwrap();
        let canonical = std::fs::read(sample("sloppy.kanata")).unwrap();
        let expected: Vec<_> = Instructions::new(&canonical[..])
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(all, expected);
        let report = trace.finish().unwrap();
        assert!(
            report.diagnostics.total() > 0,
            "the sloppy sample needs repairs"
        );
    }

    #[test]
    fn segment_columns_are_the_segments_of_open() {
        let options = Options::new(Destination::Check);
        for name in ["pipeline_sim.kanata", "sloppy.log"] {
            let path = sample(name);
            let mut expected = Vec::new();
            let mut trace = open(&path, &options).unwrap();
            for insn in trace.by_ref() {
                let insn = insn.unwrap();
                for s in insn.stages {
                    expected.push((
                        insn.id,
                        insn.thread,
                        s.lane,
                        s.name.to_string(),
                        s.start,
                        s.end,
                        s.notes,
                    ));
                }
            }
            match segment_columns(&path, &options) {
                Some(c) => {
                    let got: Vec<_> = (0..c.len())
                        .map(|r| {
                            (
                                c.id[r],
                                c.thread[r],
                                c.lane[r],
                                c.stage_names[c.stage[r] as usize].clone(),
                                c.start[r],
                                c.end_of(r),
                                c.notes_of(r).to_owned(),
                            )
                        })
                        .collect();
                    assert_eq!(got, expected, "{name}");
                    assert!(name.ends_with(".kanata"));
                }
                // A sloppy log is not canonical: open converts it.
                None => assert_eq!(name, "sloppy.log"),
            }
        }
        let mut window = options.clone();
        window.window.cycles = "10..20".parse().unwrap();
        assert!(segment_columns(&sample("pipeline_sim.kanata"), &window).is_none());
    }

    #[test]
    fn trace_of_a_window_is_the_window() {
        let mut options = Options::new(Destination::Check);
        options.window = Window::all();
        options.window.insns = "2..4".parse().unwrap();
        let trace = open(&sample("pipeline_sim.kanata"), &options).unwrap();
        let got: Vec<_> = trace.collect::<Result<_, _>>().unwrap();
        let text = std::fs::read(sample("pipeline_sim.kanata")).unwrap();
        let whole: Vec<_> = Instructions::new(&text[..])
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(
            (got[0].sim_id, got[0].begin, got[1].sim_id),
            (whole[2].sim_id, whole[2].begin, whole[3].sim_id)
        );
    }

    /// Every instruction of `path` through the conversion (the direct path not tried), and
    /// its report.
    fn converted(path: &Path, options: &Options) -> (Vec<Instruction>, Report) {
        let (sender, receiver) = mpsc::sync_channel(BATCHES_IN_FLIGHT);
        let (path, options) = (path.to_owned(), options.clone());
        let worker = std::thread::spawn(move || {
            read_converted(
                &path,
                &options,
                Given::default(),
                &mut BatchSender::new(sender),
            )
        });
        let insns = receiver.iter().flat_map(|batch| batch.insns).collect();
        (insns, worker.join().unwrap().unwrap())
    }

    /// The direct path reads canonical files as the conversion reads them: the same
    /// instructions, last cycle and summary counts, no repairs. The samples, and the
    /// conversions of the corpus logs.
    #[test]
    fn trace_of_canonical_text_reads_as_its_conversion() {
        let dir = tempfile::tempdir().unwrap();
        let mut canonical = vec![sample("pipeline_sim.kanata"), sample("sloppy.kanata")];
        let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/kanata");
        let mut logs: Vec<PathBuf> = std::fs::read_dir(&corpus)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|e| e != "md"))
            .collect();
        logs.sort();
        for log in &logs {
            let out = dir.path().join(format!("{}.kanata.zst", canonical.len()));
            let mut options = Options::new(Destination::Path(out.clone()));
            options.max_examples = 0;
            if crate::convert(log, &options).is_ok() {
                canonical.push(out);
            }
        }
        assert!(
            canonical.len() > 2 || !corpus.exists(),
            "the corpus converts"
        );
        let options = Options::new(Destination::Check);
        for path in &canonical {
            assert!(may_read_directly(path, &options));
            let mut trace = open(path, &options).unwrap();
            let direct: Vec<_> = trace.by_ref().collect::<Result<_, _>>().unwrap();
            let last_cycle = trace.last_cycle();
            let report = trace.finish().unwrap();
            let (expected, conversion) = converted(path, &options);
            let what = path.display();
            assert_eq!(direct, expected, "{what}");
            assert!(last_cycle.is_some(), "{what}");
            assert_eq!(report.diagnostics.total(), 0, "{what}");
            let (got, want) = (&report.summary, &conversion.summary);
            assert_eq!(
                (got.instructions, got.retired, got.flushed, got.left_open),
                (
                    want.instructions,
                    want.retired,
                    want.flushed,
                    want.left_open
                ),
                "{what}"
            );
            assert_eq!(
                (got.first_cycle, got.last_cycle),
                (want.first_cycle, want.last_cycle),
                "{what}"
            );
            assert_eq!(
                report.input_compression, conversion.input_compression,
                "{what}"
            );
            assert_eq!(report.bytes_in, conversion.bytes_in, "{what}");
        }
    }

    /// A log that starts as canonical text and is not further on (here: Q4's padded
    /// numbers and a trailing field after a few hundred instructions) is read through the
    /// conversion after all: the instructions and the report are the conversion's.
    #[test]
    fn trace_of_a_sloppy_log_with_a_canonical_start_is_the_conversion() {
        let text = std::fs::read_to_string(sample("pipeline_sim.kanata")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let cut = lines.len() * 2 / 3;
        let mut sloppy = lines[..cut].join("\n");
        for line in &lines[cut..] {
            sloppy.push('\n');
            // Q4, Q5: numbers padded with spaces, a field too many.
            sloppy.push_str(&line.replace('\t', "\t "));
            sloppy.push_str("\textra");
        }
        sloppy.push('\n');
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("late.kanata");
        std::fs::write(&path, &sloppy).unwrap();
        let options = Options::new(Destination::Check);
        let mut trace = open(&path, &options).unwrap();
        let got: Vec<_> = trace.by_ref().collect::<Result<_, _>>().unwrap();
        let report = trace.finish().unwrap();
        let (expected, conversion) = converted(&path, &options);
        assert_eq!(got, expected);
        assert!(report.diagnostics.total() > 0, "the repairs are reported");
        assert_eq!(report.diagnostics.total(), conversion.diagnostics.total());
        assert_eq!(report.summary.instructions, expected.len() as u64);
        // And the canonical start was read directly before it: some instructions were given.
        let canonical_start = Instructions::new(lines[..cut].join("\n").as_bytes())
            .take_while(Result::is_ok)
            .count();
        assert!(canonical_start > 0);
    }

    /// Q10: a label after its instruction's `R`, within `--late-window` (64 cycles) or
    /// beyond it, in a log that is canonical up to there: the conversion moves the first
    /// before the `R` and drops the second, and the trace is the conversion's in both
    /// cases (the instruction was not given before the late label could change it).
    #[test]
    fn trace_of_a_late_label_after_a_canonical_start_is_the_conversion() {
        let dir = tempfile::tempdir().unwrap();
        for gap in [1, 63, 64, 300] {
            let mut text = String::from("Kanata\t0004\nC=\t0\n");
            for id in 0..200 {
                text.push_str(&format!(
                    "I\t{id}\t{id}\t0\nS\t{id}\t0\tF\nC\t1\nR\t{id}\t{id}\t0\n"
                ));
                // After the next instruction's `R`, which the direct path reads first.
                match id {
                    100 => text.push_str(&format!("C\t{gap}\n")),
                    101 => text.push_str("L\t100\t1\tretired late\n"),
                    _ => {}
                }
            }
            let path = dir.path().join(format!("late-{gap}.kanata"));
            std::fs::write(&path, &text).unwrap();
            let options = Options::new(Destination::Check);
            let mut trace = open(&path, &options).unwrap();
            let got: Vec<_> = trace.by_ref().collect::<Result<_, _>>().unwrap();
            let report = trace.finish().unwrap();
            let (expected, conversion) = converted(&path, &options);
            assert_eq!(got, expected, "gap {gap}");
            assert_eq!(
                report.diagnostics.total(),
                1,
                "gap {gap}: the Q10 repair is reported"
            );
            assert_eq!(conversion.diagnostics.total(), 1);
            let moved = expected[100].detail == "retired late";
            // The label comes `gap` + 1 cycles after the `R`.
            assert_eq!(moved, gap < 64, "gap {gap}");
        }
    }

    /// A conversion that does not start with the instructions already given is an error,
    /// not a trace with a changed start.
    #[test]
    fn trace_conversion_that_changes_what_was_given_is_an_error() {
        let path = sample("sloppy.log");
        let options = Options::new(Destination::Check);
        let (first, _) = converted(&path, &options);
        let mut changed = first[0].clone();
        changed.sim_id += 1;
        let given = Given {
            count: 1,
            listed: Some(vec![changed]),
        };
        let (sender, receiver) = mpsc::sync_channel(BATCHES_IN_FLIGHT);
        let worker = std::thread::spawn(move || {
            read_converted(&path, &options, given, &mut BatchSender::new(sender))
        });
        let rest: usize = receiver.iter().map(|batch| batch.insns.len()).sum();
        let error = worker.join().unwrap().unwrap_err();
        assert_eq!(
            rest, 0,
            "nothing is given after the first instructions differ"
        );
        assert!(
            error
                .to_string()
                .contains("changes the first 1 instructions"),
            "{error}"
        );
        assert!(error.to_string().contains("sloppy.log"), "{error}");
        // The same start given: the rest follows.
        let path = sample("sloppy.log");
        let options = Options::new(Destination::Check);
        let given = Given {
            count: 1,
            listed: Some(vec![first[0].clone()]),
        };
        let (sender, receiver) = mpsc::sync_channel(BATCHES_IN_FLIGHT);
        let worker = std::thread::spawn(move || {
            read_converted(&path, &options, given, &mut BatchSender::new(sender))
        });
        let rest: Vec<_> = receiver.iter().flat_map(|batch| batch.insns).collect();
        worker.join().unwrap().unwrap();
        assert_eq!(rest, first[1..]);
    }

    #[test]
    fn trace_errors_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.kanata");
        std::fs::write(&bad, "Kanata\t0004\nC=\t0\nI\t0\t0\t0\nC\t-1\n").unwrap();
        let mut options = Options::new(Destination::Check);
        options.strict = true;
        let mut trace = open(&bad, &options).unwrap();
        let error = trace
            .by_ref()
            .find_map(Result::err)
            .expect("the conversion fails");
        assert!(error.to_string().contains("bad.kanata"), "{error}");
        assert_eq!(error.line(), Some(4));
        assert!(trace.finish().is_err());
        let missing = open(&dir.path().join("missing"), &options).unwrap();
        assert!(missing
            .finish()
            .unwrap_err()
            .to_string()
            .contains("missing"));
    }
}
