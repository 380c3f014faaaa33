//! Reading a gem5 trace on a thread of its own. Splitting the input into lines and reading
//! the fields of well-formed record lines needs nothing but the line, so it runs ahead of the
//! converter, which keeps the records, the window and the output: with the writer's thread,
//! the three halves of the work run on two cores instead of the converter doing two of them.
//!
//! The reading thread also builds and packs each record whose lines, from `fetch` to
//! `retire`, are all of the common form and in one batch: the same `Record` calls the
//! converter makes, on the thread with time to spare. The converter takes such a record
//! whole when it would have built the same one from the lines (see
//! `Gem5Converter::take_prepacked`), and reads the lines otherwise.
//!
//! Lines cross in batches: a block of the input (whole lines only, read straight into it)
//! and, per line, its bounds and what the fast parse made of it. Batches come back empty to
//! be filled again. The converter decides what a line means exactly as when it reads the
//! line itself (`FastLine` is the same parse), so the result, reports and errors included, is
//! the one of reading line after line on one thread.

use std::io::{self, Read};
use std::sync::mpsc;

use super::record::{Record, StageName};
use super::{untrimmed_ascii, MARKER};
use crate::diag::Diagnostics;
use crate::error::{Error, ErrorKind};
use crate::input::progress::Progress;
use crate::input::ReadBuffer;

/// Batches in flight: enough that neither thread waits on the other batch by batch, few
/// enough to bound the memory a fast reader can take.
const BATCHES_IN_FLIGHT: usize = 4;
/// Bytes read into a batch before it is cut at its last line end.
const BLOCK: usize = 1 << 18;

/// A well-formed record line in the common form (after `O3PipeView:`): a known command,
/// plain decimal ticks, no spaces to trim, ASCII address and micro-PC. Anything else is read
/// by the converter's general path, which decides the same way for these lines. `T` is how
/// the text fields are held: slices of the line while parsing, [`Range`]s of the batch's text
/// between threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FastLine<T> {
    Fetch {
        tick: u64,
        address: T,
        upc: T,
        seq: u64,
        disassembly: T,
    },
    Stage {
        command: &'static str,
        name: StageName,
        tick: u64,
    },
    Retire {
        tick: u64,
        store: Option<u64>,
    },
}

impl<T> FastLine<T> {
    /// The same line with its text fields held another way.
    fn map<U>(self, mut f: impl FnMut(T) -> U) -> FastLine<U> {
        match self {
            FastLine::Fetch {
                tick,
                address,
                upc,
                seq,
                disassembly,
            } => FastLine::Fetch {
                tick,
                address: f(address),
                upc: f(upc),
                seq,
                disassembly: f(disassembly),
            },
            FastLine::Stage {
                command,
                name,
                tick,
            } => FastLine::Stage {
                command,
                name,
                tick,
            },
            FastLine::Retire { tick, store } => FastLine::Retire { tick, store },
        }
    }
}

impl<'a> FastLine<&'a str> {
    /// The line after the marker, if it has the common form. Each byte is looked at once:
    /// the command by its first letter, numbers as they are read.
    pub(super) fn parse(body: &'a [u8]) -> Option<FastLine<&'a str>> {
        let stage = |command, name, prefix: &[u8]| {
            body.strip_prefix(prefix)
                .map(|rest| (Some((command, name)), rest))
        };
        let (stage, rest) = match body.first()? {
            b'f' => (None, body.strip_prefix(b"fetch:")?),
            b'd' => stage("decode", StageName::Dc, b"decode:")
                .or_else(|| stage("dispatch", StageName::Ds, b"dispatch:"))?,
            b'r' => match body.strip_prefix(b"retire:") {
                Some(rest) => return FastLine::retire(rest),
                None => stage("rename", StageName::Rn, b"rename:")?,
            },
            b'i' => stage("issue", StageName::Is, b"issue:")?,
            b'c' => stage("complete", StageName::Cm, b"complete:")?,
            _ => return None,
        };
        let (tick, after) = leading_number(rest)?;
        if let Some((command, name)) = stage {
            // Anything after the tick's colon is not looked at (nor is it by Konata).
            return matches!(after.first(), None | Some(b':')).then_some(FastLine::Stage {
                command,
                name,
                tick,
            });
        }
        // The text fields are checked for UTF-8 at once, then cut at the colons (ASCII, so
        // character boundaries).
        let mut rest = std::str::from_utf8(after.strip_prefix(b":")?).ok()?;
        let mut field = || {
            let at = colon(rest.as_bytes())?;
            let field = rest.get(..at)?;
            rest = rest.get(at + 1..)?;
            Some(field)
        };
        let address = untrimmed_ascii(field()?)?;
        let upc = untrimmed_ascii(field()?)?;
        let (seq, after) = leading_number(rest.as_bytes())?;
        let disassembly = match after.first() {
            // Empty, at the end of the line: every field is a piece of `body` (see
            // `parse_lines`, which turns them into ranges of the block).
            None => rest.get(rest.len()..)?,
            Some(b':') => rest.get(rest.len() - after.len() + 1..)?,
            Some(_) => return None,
        };
        Some(FastLine::Fetch {
            tick,
            address,
            upc,
            seq,
            disassembly,
        })
    }

    /// `retire:<tick>` or `retire:<tick>:store:<tick>`, after `retire:`.
    fn retire(rest: &[u8]) -> Option<FastLine<&'a str>> {
        let (tick, after) = leading_number(rest)?;
        let store = match after {
            [] => None,
            _ => match leading_number(after.strip_prefix(b":store:")?)? {
                (store, []) => Some(store),
                _ => return None,
            },
        };
        Some(FastLine::Retire { tick, store })
    }
}

/// The number of 1 to 19 decimal digits (so it cannot overflow) at the start of `bytes`, and
/// what follows it; `None` for anything the general path must look at.
pub(super) fn leading_number(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut value = 0u64;
    let mut digits = 0;
    while let Some(&byte) = bytes.get(digits) {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        value = value.wrapping_mul(10).wrapping_add(u64::from(digit));
        digits += 1;
    }
    (1..=19)
        .contains(&digits)
        .then(|| (value, &bytes[digits..]))
}

/// Where the first colon of a field is: a plain loop, as the fields are a few bytes long
/// (memchr's setup costs more than the search).
fn colon(field: &[u8]) -> Option<usize> {
    field.iter().position(|&b| b == b':')
}

/// A byte range of a batch's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Range {
    pub(super) start: usize,
    pub(super) end: usize,
}

/// What the reading thread made of a line: `None` for a line not in the common form, or in
/// a block that is not UTF-8, which the converter reads whole.
pub(super) type Parsed = Option<FastLine<Range>>;

/// One line of a batch.
#[derive(Clone, Copy, Debug)]
struct Item {
    /// The line, without its line end (LF, or CR LF).
    text: Range,
    parsed: Parsed,
}

/// Lines on their way from the reading thread to the converter.
#[derive(Debug)]
struct Batch {
    /// A block of whole lines.
    text: ReadBuffer,
    items: Vec<Item>,
    /// The number of the first line.
    first: u64,
    /// The records whose lines are all in the common form, built and packed here.
    records: PackedRecords,
    /// What stopped the reader after these lines: an error, or the end of the input (with
    /// the number of lines read).
    end: Option<Result<u64, Error>>,
}

impl Default for Batch {
    fn default() -> Batch {
        Batch {
            text: ReadBuffer::default(),
            items: Vec::new(),
            first: 1,
            records: PackedRecords::default(),
            end: None,
        }
    }
}

/// One line as the converter gets it.
pub(super) struct Line<'a> {
    pub(super) number: u64,
    pub(super) raw: &'a [u8],
    /// The batch's text, which the ranges of `parsed` are in (those ranges are UTF-8).
    pub(super) block: &'a [u8],
    pub(super) parsed: Parsed,
}

/// A record read and packed by the reading thread, from its `fetch` line to its `retire`
/// line with only stage lines between: [`Record::pack`] of the record the converter would
/// build from these lines when no debug line names it. The converter takes it whole, or
/// declines it and reads its lines one by one as usual.
#[derive(Clone, Copy, Debug)]
pub(super) struct PackedLines<'a> {
    /// The number of its `fetch` line.
    pub(super) number: u64,
    pub(super) seq: u64,
    pub(super) fetch_tick: u64,
    pub(super) bytes: &'a [u8],
    /// How many lines it covers, the `fetch` line included.
    pub(super) lines: usize,
}

/// What the converter is given next: a record packed by the reading thread, or a line.
pub(super) enum Next<'a> {
    Record(PackedLines<'a>),
    Line(Line<'a>),
}

/// Where a [`PackedLines`] is in its batch: everything the converter needs to take it
/// without reading the batch's lines (which the other thread wrote: each is a cache miss).
#[derive(Clone, Copy, Debug)]
struct Prepacked {
    /// The index of its `fetch` line in the batch's items.
    item: u32,
    lines: u32,
    /// Its bytes in the batch's `packed`.
    start: u32,
    end: u32,
    seq: u64,
    fetch_tick: u64,
}

/// The records of a batch packed by the reading thread.
#[derive(Debug, Default)]
struct PackedRecords {
    records: Vec<Prepacked>,
    /// Their packed bytes, one after the other.
    bytes: Vec<u8>,
}

impl PackedRecords {
    fn clear(&mut self) {
        self.records.clear();
        self.bytes.clear();
    }
}

/// The record being built from the lines of a batch, while they are all in the common form.
struct Prepacker {
    record: Record,
    /// The index of the `fetch` line of the record being built, if one is.
    open: Option<usize>,
    /// Whether the line before was not a record line in the common form.
    after_other: bool,
}

impl Prepacker {
    fn new() -> Prepacker {
        Prepacker {
            record: Record::empty(),
            open: None,
            after_other: false,
        }
    }

    /// Line `index` (number `number`) of the batch, as parsed: the converter's own calls for
    /// a record (`Record::refill`, `stage`, `retire`, `pack`), made here while every line
    /// of the record is in the common form.
    fn line(
        &mut self,
        index: usize,
        number: u64,
        line: Option<&FastLine<&str>>,
        out: &mut PackedRecords,
    ) {
        let after_other = std::mem::replace(&mut self.after_other, line.is_none());
        match (line, self.open) {
            // gem5 prints the debug lines of an instruction before its record, and the
            // converter does not take a record that debug lines name: not worth packing.
            (Some(FastLine::Fetch { .. }), _) if after_other => self.open = None,
            (
                Some(&FastLine::Fetch {
                    tick,
                    address,
                    upc,
                    seq,
                    disassembly,
                }),
                _,
            ) => {
                self.record
                    .refill(seq, number, tick, address, upc, disassembly);
                self.open = Some(index);
            }
            (
                Some(&FastLine::Stage {
                    command,
                    name,
                    tick,
                }),
                Some(_),
            ) => {
                self.record.stage(command, name, tick, None);
            }
            (Some(&FastLine::Retire { tick, store }), Some(fetch)) => {
                self.open = None;
                self.record.retire(tick, store.as_slice(), None);
                let start = out.bytes.len();
                if self.record.pack(&mut out.bytes) {
                    // A block is far smaller than 4 GiB.
                    let short = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
                    out.records.push(Prepacked {
                        item: short(fetch),
                        lines: short(index + 1 - fetch),
                        start: short(start),
                        end: short(out.bytes.len()),
                        seq: self.record.seq,
                        fetch_tick: self.record.fetch_tick,
                    });
                }
            }
            _ => self.open = None,
        }
    }
}

/// `raw`, one line without its line end, as the reading thread hands lines over: for the
/// line-at-a-time [`Converter`](crate::convert::converter::Converter) interface.
pub(super) fn single_line(raw: &[u8], number: u64) -> Line<'_> {
    let mut items = [line_item(raw, 0, raw.len())];
    parse_lines(raw, number, &mut items, None);
    let [Item {
        text: range,
        parsed,
    }] = items;
    Line {
        number,
        raw: &raw[range.start..range.end],
        block: raw,
        parsed,
    }
}

/// Reads `input` on a second thread and hands every line, in order, to `next` on this one;
/// a record the reading thread packed is offered first, and its lines are given one by one
/// only if `next` declines it (returns false). Returns the number of lines read. Stops at
/// the first error (from the input or from `next`), which is returned.
pub(super) fn run(
    input: Box<dyn Read + Send>,
    diag: &mut Diagnostics,
    progress: &Progress,
    mut next: impl FnMut(Next<'_>, &mut Diagnostics) -> Result<bool, Error>,
) -> Result<u64, Error> {
    let (full_tx, full_rx) = mpsc::sync_channel::<Batch>(BATCHES_IN_FLIGHT);
    let (empty_tx, empty_rx) = mpsc::channel::<Batch>();
    // Not a scoped thread: on an early return this one must not wait for the reader, which
    // may be blocked on a full channel or on its input. Dropping the receiver makes its next
    // send fail and it stops; the process does not wait for it.
    std::thread::Builder::new()
        .name("kanata-pp gem5 reader".to_owned())
        .spawn(move || read_batches(input, full_tx, empty_rx))
        .map_err(|err| {
            Error::new(
                ErrorKind::Io,
                format!("cannot start the reading thread: {err}"),
            )
        })?;
    loop {
        let Ok(mut batch) = full_rx.recv() else {
            return Err(Error::new(ErrorKind::Io, "the reading thread stopped"));
        };
        let bytes: &[u8] = &batch.text;
        let mut records = batch.records.records.iter().peekable();
        let mut index = 0;
        while index < batch.items.len() {
            let number = batch.first + index as u64;
            let mut taken = 0;
            if let Some(record) = records.next_if(|record| record.item as usize == index) {
                let packed = PackedLines {
                    number,
                    seq: record.seq,
                    fetch_tick: record.fetch_tick,
                    bytes: &batch.records.bytes[record.start as usize..record.end as usize],
                    lines: record.lines as usize,
                };
                if next(Next::Record(packed), diag)? {
                    taken = packed.lines;
                }
            }
            if taken == 0 {
                let item = &batch.items[index];
                let line = Line {
                    number,
                    raw: &bytes[item.text.start..item.text.end],
                    block: bytes,
                    parsed: item.parsed,
                };
                next(Next::Line(line), diag)?;
                taken = 1;
            }
            if let Some(error) = crate::diag::strict_error(diag) {
                return Err(error);
            }
            if (number - 1) / 65_536 != (number - 1 + taken as u64) / 65_536 {
                progress.update();
            }
            index += taken;
        }
        if let Some(end) = batch.end.take() {
            return end;
        }
        // The reader may have stopped already; then the batch is simply freed.
        let _ = empty_tx.send(batch);
    }
}

/// The reading thread: blocks of input in, batches of lines out, until the input ends, an
/// error, or the converter stops listening.
fn read_batches(
    mut input: Box<dyn Read + Send>,
    full: mpsc::SyncSender<Batch>,
    empty: mpsc::Receiver<Batch>,
) {
    // The start of a line read into the previous block.
    let mut carry: Vec<u8> = Vec::new();
    let mut number = 0u64;
    let mut prepacker = Prepacker::new();
    let mut eof = false;
    loop {
        let mut batch = empty.try_recv().unwrap_or_default();
        batch.items.clear();
        batch.records.clear();
        batch.end = None;
        batch.first = number + 1;
        let mut buf = std::mem::take(&mut batch.text);
        buf.restart_with(&carry, BLOCK);
        carry.clear();
        let mut error = None;
        // Read a block, then more until it holds a line end (one line may be longer). A
        // whole block after the carry, so that the reads stay on the input's page
        // boundaries as well as on the buffer's cache lines.
        let mut target = buf.len() + BLOCK;
        let cut = loop {
            while !eof && buf.len() < target {
                let want = target - buf.len();
                match input.read(&mut buf.room(want)[..want]) {
                    Ok(0) => eof = true,
                    Ok(n) => buf.len += n,
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                    Err(err) => {
                        error = Some(err);
                        break;
                    }
                }
            }
            if eof {
                break buf.len();
            }
            match memchr::memrchr(b'\n', &buf) {
                Some(at) => break at + 1,
                None if error.is_some() => break 0,
                None => target = target.saturating_mul(2),
            }
        };
        carry.extend_from_slice(&buf[cut..]);
        buf.truncate(cut);
        split_lines(&buf, &mut batch.items);
        number += batch.items.len() as u64;
        parse_lines(
            &buf,
            batch.first,
            &mut batch.items,
            Some((&mut prepacker, &mut batch.records)),
        );
        batch.text = buf;
        let last = if let Some(err) = error {
            batch.end = Some(Err(Error::at_line(
                number + 1,
                format!("cannot read the input: {err}"),
            )));
            true
        } else if eof {
            batch.end = Some(Ok(number));
            true
        } else {
            false
        };
        if full.send(batch).is_err() || last {
            return;
        }
    }
}

/// The lines of a block of whole lines (the last one may lack its line end at the end of
/// the input), as the converter's line reader splits them.
fn split_lines(block: &[u8], items: &mut Vec<Item>) {
    let mut start = 0;
    // memchr directly: this is the hot loop, and it wants the offsets of the line ends in
    // the block, which one vectorized search over the whole block gives.
    for at in memchr::memchr_iter(b'\n', block) {
        items.push(line_item(block, start, at));
        start = at + 1;
    }
    if start < block.len() {
        items.push(line_item(block, start, block.len()));
    }
}

fn line_item(block: &[u8], start: usize, end: usize) -> Item {
    let end = if end > start && block[end - 1] == b'\r' {
        end - 1
    } else {
        end
    };
    Item {
        text: Range { start, end },
        parsed: None,
    }
}

/// Reads the fields of the record lines of a block, and packs the records whose lines are
/// all in the common form when given a [`Prepacker`].
fn parse_lines(
    block: &[u8],
    first: u64,
    items: &mut [Item],
    mut packing: Option<(&mut Prepacker, &mut PackedRecords)>,
) {
    if let Some((packer, _)) = &mut packing {
        // A record is packed only when all of its lines are in the batch.
        packer.open = None;
        packer.after_other = false;
    }
    for (index, item) in items.iter_mut().enumerate() {
        let number = first + index as u64;
        let mut start = item.text.start;
        let mut line = &block[start..item.text.end];
        if number == 1 {
            if let Some(rest) = line.strip_prefix(b"\xef\xbb\xbf") {
                line = rest;
                start += 3;
            }
        }
        let parsed = line.strip_prefix(MARKER).and_then(|body| {
            let parsed = FastLine::parse(body)?;
            Some((body, parsed))
        });
        if let Some((packer, out)) = &mut packing {
            packer.line(index, number, parsed.as_ref().map(|(_, line)| line), out);
        }
        let Some((body, parsed)) = parsed else {
            continue;
        };
        let at = |piece: &str| {
            let offset = piece.as_ptr() as usize - body.as_ptr() as usize;
            let start = start + MARKER.len() + offset;
            Range {
                start,
                end: start + piece.len(),
            }
        };
        item.parsed = Some(parsed.map(at));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line and its parse, read through the thread from a reader giving `chunk`
    /// bytes at a time.
    fn read_all(input: &[u8], chunk: usize) -> Vec<(u64, Vec<u8>, Parsed)> {
        struct Chunked(Vec<u8>, usize, usize);
        impl Read for Chunked {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = buf.len().min(self.1).min(self.0.len() - self.2);
                buf[..n].copy_from_slice(&self.0[self.2..self.2 + n]);
                self.2 += n;
                Ok(n)
            }
        }
        let mut diag = Diagnostics::new(5, false);
        let progress = Progress::new(false, None, "test", None);
        let mut lines = Vec::new();
        let count = run(
            Box::new(Chunked(input.to_vec(), chunk, 0)),
            &mut diag,
            &progress,
            |next, _| {
                if let Next::Line(line) = next {
                    lines.push((line.number, line.raw.to_vec(), line.parsed));
                }
                Ok(false)
            },
        )
        .unwrap();
        assert_eq!(count, lines.len() as u64);
        lines
    }

    #[test]
    fn lines_are_split_as_the_line_reader_splits_them() {
        let text = b"\xef\xbb\xbfO3PipeView:fetch:1000:0x10:0:7:add: x\r\nplain\n\nO3PipeView:issue:5\nlast";
        for chunk in [1, 3, 7, 1 << 20] {
            let lines = read_all(text, chunk);
            let raws: Vec<&[u8]> = lines.iter().map(|(_, raw, _)| raw.as_slice()).collect();
            assert_eq!(
                raws,
                vec![
                    &b"\xef\xbb\xbfO3PipeView:fetch:1000:0x10:0:7:add: x"[..],
                    b"plain",
                    b"",
                    b"O3PipeView:issue:5",
                    b"last"
                ]
            );
            assert!(matches!(
                lines[0].2,
                Some(FastLine::Fetch {
                    tick: 1000,
                    seq: 7,
                    ..
                })
            ));
            if let Some(FastLine::Fetch { disassembly, .. }) = lines[0].2 {
                assert_eq!(disassembly.end - disassembly.start, b"add: x".len());
            }
            assert_eq!(
                lines[3].2,
                Some(FastLine::Stage {
                    command: "issue",
                    name: StageName::Is,
                    tick: 5
                })
            );
            assert_eq!(lines[4].0, 5);
        }
    }

    #[test]
    fn a_fetch_line_without_disassembly_has_an_empty_one_at_its_end() {
        let text = b"O3PipeView:fetch:1000:0x10:0:7\nO3PipeView:fetch:1000:0x10:0:8:\n";
        let lines = read_all(text, 1 << 20);
        // Each line's end in the block: 30, and 31 + 31.
        for (line, end) in [(0, 30), (1, 62)] {
            let Some(FastLine::Fetch { disassembly, .. }) = lines[line].2 else {
                panic!("line {line} not parsed: {:?}", lines[line]);
            };
            assert_eq!((disassembly.start, disassembly.end), (end, end));
        }
    }

    #[test]
    fn a_line_that_is_not_utf8_is_left_to_the_converter() {
        let lines = read_all(
            b"O3PipeView:fetch:1000:0x10:0:7:\xff\nO3PipeView:issue:5\n",
            64,
        );
        assert_eq!(lines[0].2, None);
        assert!(matches!(lines[1].2, Some(FastLine::Stage { tick: 5, .. })));
    }

    #[test]
    fn an_error_of_the_converter_returns_at_once_with_the_reader_blocked() {
        // Many batches' worth of input: the reader fills the channel and waits on it.
        let input = b"O3PipeView:issue:5\n".repeat(1 << 20);
        let mut diag = Diagnostics::new(5, false);
        let (done_tx, done_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let result = run(
                Box::new(io::Cursor::new(input)),
                &mut diag,
                &Progress::new(false, None, "test", None),
                |next, _| match next {
                    Next::Record(record) => Err(Error::at_line(record.number, "bad line")),
                    Next::Line(line) => Err(Error::at_line(line.number, "bad line")),
                },
            );
            let _ = done_tx.send(result.is_err());
        });
        let failed = done_rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("run returns instead of waiting for the reader");
        assert!(failed);
    }

    #[test]
    fn a_read_error_is_reported_after_the_lines_before_it() {
        struct Failing(bool);
        impl Read for Failing {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if std::mem::replace(&mut self.0, true) {
                    return Err(io::Error::other("disk on fire"));
                }
                let text = b"a\nb\npartial";
                buf[..text.len()].copy_from_slice(text);
                Ok(text.len())
            }
        }
        let mut diag = Diagnostics::new(5, false);
        let mut seen = 0;
        let err = run(
            Box::new(Failing(false)),
            &mut diag,
            &Progress::new(false, None, "test", None),
            |_, _| {
                seen += 1;
                Ok(false)
            },
        )
        .unwrap_err();
        assert_eq!(seen, 2);
        let message = err.to_string();
        assert!(message.contains("line 3"), "{message}");
        assert!(message.contains("disk on fire"), "{message}");
    }
}
