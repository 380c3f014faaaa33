//! Reading a Kanata log on two threads. The rules that need only the line itself (the header
//! and the legacy start, Q2; the line prefix, Q18; CR LF, Q3; every field's parse, Q1, Q4b,
//! Q9, Q19, Q20) run on a reading thread, ahead of the normalizer, which keeps the state of
//! the instructions on the calling thread. Parsed lines cross in batches, their text copied
//! once into the batch, so neither side waits on the other line by line; the result is the
//! same as reading line after line on one thread, reports and errors included.

use std::io::{Read, Write};
use std::sync::mpsc;

use kanata_writer::Finished;

use crate::diag::{Diagnostics, Rule};
use crate::error::Error;
use crate::input::Lines;
use crate::kanata_parse::{Command, Line, LineParser};
use crate::normalize::{shorten, KanataNormalizer};
use crate::progress::Progress;

/// Lines per batch: large enough that a batch's hand-over costs nothing per line, small
/// enough that the two threads overlap from the start.
const BATCH_LINES: usize = 8192;

/// Batches in flight between the threads; a few bound the memory a fast reader can take.
const BATCHES_IN_FLIGHT: usize = 4;

/// What the reader hands the normalizer for one line: the parsed line and its text (after
/// any prefix), or nothing.
type ReadLine<'a> = Option<(Line<&'a [u8]>, &'a [u8])>;

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

    /// Reads one line: what the normalizer gets of it (the parsed line and its text after
    /// any prefix), or `None` when there is nothing for it (already reported).
    pub(crate) fn read<'a>(
        &'a mut self,
        raw: &'a [u8],
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<ReadLine<'a>, Error> {
        let mut line = raw;
        if let Some(prefix) = &self.prefix {
            let Some(rest) = line.strip_prefix(prefix.as_slice()) else {
                diag.report(Rule::Q18, lineno, || {
                    "line without the prefix skipped".to_owned()
                });
                return Ok(None);
            };
            line = rest;
            while let [b' ', rest @ ..] = line {
                line = rest;
            }
        }
        if self.in_header {
            return self.header(line, lineno, diag);
        }
        Ok(Some((self.parser.parse(line, lineno, diag), line)))
    }

    /// Q2: blank and comment lines, a BOM, then the header or (legacy) a `C=`.
    fn header<'a>(
        &'a mut self,
        line: &'a [u8],
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<ReadLine<'a>, Error> {
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
                Ok(None)
            }
            Line::Header { version } => {
                if line != b"Kanata\t0004" {
                    diag.report(Rule::Q2, lineno, || {
                        format!("header {:?} written as `Kanata<TAB>0004`", shorten(line))
                    });
                }
                let text = String::from_utf8_lossy(version);
                if u32::from_str_radix(text.trim(), 16) != Ok(4) {
                    diag.report(Rule::Q2, lineno, || {
                        format!("version {text:?} read as version 4")
                    });
                }
                self.in_header = false;
                Ok(None)
            }
            Line::Command(Command::Start(cycle)) => {
                diag.report(Rule::Q2, lineno, || {
                    "legacy log without header: header added".to_owned()
                });
                self.in_header = false;
                Ok(Some((Line::Command(Command::Start(cycle)), line)))
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

/// Where a piece of text sits in a [`Batch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    start: u32,
    len: u32,
}

/// One line of a batch: its number, its text, and what the parser made of it.
struct Item {
    number: u64,
    text: Span,
    parsed: Line<Span>,
}

/// Parsed lines on their way from the reading thread to the normalizer.
#[derive(Default)]
struct Batch {
    /// The text of every line, and of labels the parser rebuilt (Q9).
    text: Vec<u8>,
    items: Vec<Item>,
    /// What stopped the reader after these lines: an error, or the end of the input (with
    /// the number of lines read).
    end: Option<Result<u64, Error>>,
}

impl Batch {
    fn push(&mut self, bytes: &[u8]) -> Span {
        let start = self.text.len() as u32;
        self.text.extend_from_slice(bytes);
        Span {
            start,
            len: bytes.len() as u32,
        }
    }

    /// `piece` as a span: inside `line` (at `line_span`) when it is a slice of it, else copied.
    fn span(&mut self, piece: &[u8], line: &[u8], line_span: Span) -> Span {
        let offset = (piece.as_ptr() as usize).wrapping_sub(line.as_ptr() as usize);
        if offset <= line.len() && offset + piece.len() <= line.len() {
            Span {
                start: line_span.start + offset as u32,
                len: piece.len() as u32,
            }
        } else {
            self.push(piece)
        }
    }

    fn get(&self, span: Span) -> &[u8] {
        &self.text[span.start as usize..(span.start + span.len) as usize]
    }
}

/// Converts the Kanata log read from `input`: lines are read and parsed on a second thread,
/// the normalizer runs here. Returns the finished output and the number of input lines.
pub(crate) fn run<W: Write + Send + 'static>(
    input: Box<dyn Read + Send>,
    mut normalizer: KanataNormalizer<W>,
    prefix: Option<Vec<u8>>,
    diag: &mut Diagnostics,
    progress: &Progress,
) -> Result<(Finished<W>, u64), Error> {
    let (full_tx, full_rx) = mpsc::sync_channel::<Batch>(BATCHES_IN_FLIGHT);
    let (empty_tx, empty_rx) = mpsc::channel::<Batch>();
    let mut reader_diag = diag.empty_like();
    let outcome = std::thread::scope(|scope| {
        let reader_diag = &mut reader_diag;
        scope.spawn(move || read_batches(input, prefix, reader_diag, progress, full_tx, empty_rx));
        let mut end = None;
        for mut batch in full_rx {
            for item in &batch.items {
                let parsed = item.parsed.clone().map(|span| batch.get(span));
                normalizer.parsed(parsed, batch.get(item.text), item.number, diag)?;
                if let Some(error) = strict_error(diag) {
                    return Err(error);
                }
            }
            end = batch.end.take();
            if end.is_some() {
                break;
            }
            // The reader may have stopped already; then the batch is simply freed.
            let _ = empty_tx.send(batch);
        }
        // Dropping the receiver on an early return stops the reader.
        end.unwrap_or_else(|| {
            Err(Error::new(
                crate::ErrorKind::Io,
                "the reading thread stopped",
            ))
        })
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

/// The reading thread: lines in, parsed batches out, until the input ends or an error.
fn read_batches(
    input: Box<dyn Read + Send>,
    prefix: Option<Vec<u8>>,
    diag: &mut Diagnostics,
    progress: &Progress,
    full: mpsc::SyncSender<Batch>,
    empty: mpsc::Receiver<Batch>,
) {
    let mut lines = Lines::new(input);
    let mut reader = KanataReader::new(prefix);
    loop {
        let mut batch = empty.try_recv().unwrap_or_default();
        batch.text.clear();
        batch.items.clear();
        batch.end = None;
        while batch.items.len() < BATCH_LINES && batch.end.is_none() {
            batch.end = read_one(&mut lines, &mut reader, &mut batch, diag);
        }
        progress.update();
        let last = batch.end.is_some();
        if full.send(batch).is_err() || last {
            return;
        }
    }
}

/// Reads one line into `batch`; `Some` when the input ended or reading must stop.
fn read_one(
    lines: &mut Lines<Box<dyn Read + Send>>,
    reader: &mut KanataReader,
    batch: &mut Batch,
    diag: &mut Diagnostics,
) -> Option<Result<u64, Error>> {
    let (number, had_cr, line) = match lines.next_line() {
        Ok(Some(line)) => line,
        Ok(None) => return Some(end_of_input(lines, reader, diag)),
        Err(err) => {
            return Some(Err(Error::at_line(
                lines.number + 1,
                format!("cannot read the input: {err}"),
            )))
        }
    };
    if had_cr {
        diag.report(Rule::Q3, number, || "CR LF line end".to_owned());
    }
    match reader.read(line, number, diag) {
        Ok(None) => {}
        Ok(Some((Line::Fatal(message), _))) => return Some(Err(Error::at_line(number, message))),
        Ok(Some((parsed, text))) => {
            let line_span = batch.push(text);
            let parsed = parsed.map(|piece| batch.span(piece, text, line_span));
            batch.items.push(Item {
                number,
                text: line_span,
                parsed,
            });
        }
        Err(error) => return Some(Err(error)),
    }
    // A repair under --strict ends the conversion at the line that needed it.
    strict_error(diag).map(Err)
}

/// The end of the input: the checks that need all of it.
fn end_of_input(
    lines: &Lines<Box<dyn Read + Send>>,
    reader: &KanataReader,
    diag: &mut Diagnostics,
) -> Result<u64, Error> {
    if reader.in_header {
        return Err(Error::new(
            crate::ErrorKind::Input,
            "empty input: not a Kanata log",
        ));
    }
    if lines.unterminated {
        diag.report(Rule::Q3, lines.number, || {
            "no line end after the last line".to_owned()
        });
        if let Some(error) = strict_error(diag) {
            return Err(error);
        }
    }
    Ok(lines.number)
}

/// The `--strict` error for the first repair, if there was one.
pub(crate) fn strict_error(diag: &Diagnostics) -> Option<Error> {
    let (rule, example) = diag.strict_violation()?;
    let error = Error::new(
        crate::ErrorKind::Strict,
        format!("--strict: {rule}: {}", example.message),
    );
    Some(match example.line {
        0 => error,
        line => error.with_line(line),
    })
}
