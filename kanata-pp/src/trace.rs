//! Reading a trace back as instructions: [`open`] takes any input kanata-pp converts (a
//! sloppy Kanata log, a gem5 O3PipeView trace, an RSD raw log, a canonical or seekable
//! `.kanata[.gz|.zst]`) and a [`Window`](crate::output::window::Window), and yields the
//! window's [`Instruction`]s in op-id order, as Konata would show them.
//!
//! It is the conversion of [`convert`](crate::convert()) with the same [`Options`] (window,
//! repairs, format), whose canonical text is read back through the one reader of canonical
//! Kanata, [`Instructions`]. The conversion runs on a thread of its own and hands its text
//! over in chunks, so memory stays what the conversion and the instructions in flight need,
//! whatever the size of the trace; a window of a seekable file is read through its index.
//! Rendering and the Python bindings read traces through this module.
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

use std::io::{self, BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

use crate::convert::{convert_into, Destination, Options, Report};
use crate::error::{Error, ErrorKind};
use crate::output::canonical::{Instruction, Instructions};

/// Bytes of text handed over at a time.
const CHUNK: usize = 256 * 1024;
/// Chunks in flight between the conversion and the reader.
const CHUNKS_IN_FLIGHT: usize = 4;

/// Opens `input` (a path, or `-` for stdin) and starts converting it as `options` say (their
/// destination and `stats` are ignored): the instructions of `options.window` come out of
/// the [`TraceReader`].
///
/// # Errors
/// When the conversion thread cannot be started. Errors of the input come out of the reader,
/// as they are met.
pub fn open(input: &Path, options: &Options) -> Result<TraceReader, Error> {
    let mut options = options.clone();
    options.destination = Destination::Check;
    options.stats = false;
    options.progress = false;
    let (sender, receiver) = mpsc::sync_channel(CHUNKS_IN_FLIGHT);
    let input: PathBuf = input.to_owned();
    let worker = std::thread::Builder::new()
        .name("kanata-trace".to_owned())
        .spawn(move || {
            let text = ChunkWriter {
                sender,
                chunk: Vec::with_capacity(CHUNK),
            };
            convert_into(&input, &options, Box::new(text))
        })
        .map_err(|err| Error::new(ErrorKind::Io, format!("cannot start a thread: {err}")))?;
    let text = ChunkReader {
        receiver,
        chunk: Vec::new(),
        at: 0,
    };
    Ok(TraceReader {
        instructions: Instructions::new(text),
        worker: Some(worker),
        outcome: None,
        failed: false,
    })
}

/// The instructions of a window, in op-id order ([`open`]). At the end of the input, or at
/// its first error, the iterator ends; [`finish`](Self::finish) gives the conversion's
/// [`Report`] (its repairs, the window's summary) or its error.
#[derive(Debug)]
pub struct TraceReader {
    instructions: Instructions<ChunkReader>,
    worker: Option<JoinHandle<Result<Report, Error>>>,
    /// The conversion's result, once it has ended.
    outcome: Option<Result<Report, Error>>,
    /// An error was given: the iterator has ended.
    failed: bool,
}

impl TraceReader {
    /// The `C=` start cycle of the trace, once the first instruction has been read.
    pub fn start_cycle(&self) -> Option<i64> {
        self.instructions.start_cycle()
    }

    /// Konata's last cycle of the window's text, once it has all been read: instructions
    /// still open are drawn up to it + 1.
    pub fn last_cycle(&self) -> Option<u64> {
        self.instructions.last_cycle()
    }

    /// Waits for the conversion to end and gives its report: reading stops here, what is
    /// left of the window is converted and dropped.
    ///
    /// # Errors
    /// The conversion's error (a bad input, with its file and line).
    pub fn finish(mut self) -> Result<Report, Error> {
        // Reading the rest lets a conversion waiting on a full channel end.
        for item in self.instructions.by_ref() {
            if item.is_err() {
                break;
            }
        }
        self.join();
        self.outcome
            .take()
            .unwrap_or_else(|| Err(Error::new(ErrorKind::Io, "the conversion was lost")))
    }

    fn join(&mut self) {
        if let Some(worker) = self.worker.take() {
            let outcome = worker.join().unwrap_or_else(|_| {
                Err(Error::new(ErrorKind::Io, "the conversion thread panicked"))
            });
            self.outcome = Some(outcome);
        }
    }
}

impl Iterator for TraceReader {
    type Item = Result<Instruction, Error>;

    fn next(&mut self) -> Option<Result<Instruction, Error>> {
        if self.failed {
            return None;
        }
        let item = match self.instructions.next() {
            Some(Ok(insn)) => return Some(Ok(insn)),
            item => item,
        };
        // The text ended or broke off: the conversion has ended, and when it failed, its
        // error is the one to give (a text cut short is its consequence).
        self.join();
        let error = match (&self.outcome, item) {
            (Some(Err(cause)), _) => cause.clone(),
            (_, Some(Err(error))) => error,
            _ => return None,
        };
        self.failed = true;
        Some(Err(error))
    }
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
