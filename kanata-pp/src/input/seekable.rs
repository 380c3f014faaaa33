//! Reading a seekable, indexed `.kanata.zst` (`docs/seekable.md`): the index that
//! [`crate::output::seekable::SeekableWriter`] writes, where a window starts, and the text
//! from that frame on.
//!
//! ```
//! use std::io::Write;
//! use kanata_pp::input::seekable::Index;
//! use kanata_pp::output::canonical::Command;
//! use kanata_pp::output::seekable::SeekableWriter;
//!
//! let mut text = String::from("Kanata\t0004\nC=\t0\n");
//! for id in 0..100 {
//!     text += &format!("I\t{id}\t{id}\t0\nS\t{id}\t0\tF\nC\t1\nE\t{id}\t0\tF\nR\t{id}\t{id}\t0\n");
//! }
//! let mut w = SeekableWriter::new(Vec::new(), 3)?.with_frame_size(256);
//! w.write_all(text.as_bytes())?;
//! let mut file = tempfile::tempfile()?;
//! file.write_all(&w.finish()?)?;
//!
//! let index = Index::open(&mut file)?.expect("an index");
//! // Every instruction alive at cycle 50 or later has its I line from `start` on.
//! let start = index.start_for(Some(50), None);
//! assert!(start.frame > 0 && start.next_id <= 50);
//! let mut reader = index.canonical_reader(file, &start);
//! let mut first = None;
//! while let Some(event) = reader.next_command()? {
//!     if let Command::Insn { id, .. } = event.command {
//!         first.get_or_insert(id);
//!     }
//! }
//! assert_eq!(first, Some(start.next_id));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What is checked
//!
//! [`Index::open`] reads the last 9 bytes; a file that does not end with the seek table's
//! magic number is not seekable ([`Ok(None)`](Option::None): read it from the start, as any
//! zstd file). Otherwise it reads the seek table and our index, and checks the index's
//! version, its checksum, that it was written for this very seek table (the number of frames,
//! the CRC-32 of their sizes, the total sizes) and that it sits exactly between the last frame
//! and the seek table, and that its entries are consistent. Anything wrong is an
//! [`IndexError`]; the index is then not used, never trusted in part.
//!
//! A file cut anywhere has lost its seek table: it reads as a plain zstd file, whose decoder
//! then reports the cut. Each frame is checked when it is read: its checksum, and that it
//! decompresses to the size the seek table gives.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, Read, Seek, SeekFrom};
use std::sync::Arc;

use zeekstd::{SeekTable, SEEKABLE_MAGIC_NUMBER, SEEKABLE_MAX_FRAMES, SEEK_TABLE_INTEGRITY_SIZE};

use crate::output::canonical::{CanonicalReader, Position};
use crate::output::seekable::format::{
    self, Entry, CRC_LEN, ENTRY_LEN, FRAME_MAGIC, HEADER_LEN, SKIPPABLE_HEADER_LEN, TAG, VERSION,
};

/// What is wrong with the seek table or the index of a seekable file: the index is not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexError {
    message: String,
}

impl IndexError {
    fn new(message: impl Into<String>) -> IndexError {
        IndexError {
            message: message.into(),
        }
    }

    /// What is wrong, for example `the index's checksum does not match (damaged index)`.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for IndexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seekable index: {}", self.message)
    }
}

impl std::error::Error for IndexError {}

/// Where to start reading a window: a frame, and what a reader starting there must be told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    /// The frame to read from ([`Index::reader`]).
    pub frame: u32,
    /// Where the text stands at the frame's start: lines before it, Konata's cycle, and the
    /// file's `C=` start. At frame 0 it is the start of the file (`line` 0): read the frame
    /// with [`CanonicalReader::new`], any other with [`CanonicalReader::resume`]
    /// ([`Index::canonical_reader`] picks the right one).
    pub position: Position,
    /// The op id the first `I` line from the frame on has.
    pub next_id: u64,
}

/// One frame's place in the file, from the seek table.
#[derive(Clone, Copy, Debug)]
struct Span {
    /// Offset of the frame in the file.
    offset: u64,
    /// Compressed size.
    compressed: u32,
    /// Decompressed size.
    decompressed: u32,
    /// The frame's content checksum as the index gives it.
    checksum: u32,
}

/// The index of a seekable, indexed `.kanata.zst`, read and checked (see the [module](self)
/// docs).
#[derive(Clone, Debug)]
pub struct Index {
    header: format::Header,
    entries: Vec<Entry>,
    spans: Arc<[Span]>,
}

fn io_error(what: &str, err: io::Error) -> IndexError {
    IndexError::new(format!("cannot read the {what}: {err}"))
}

fn le32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn le64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

impl Index {
    /// Reads the index of `file`: `Ok(None)` when the file is not a seekable zstd file with
    /// our index (a plain zstd file: only its last 9 bytes are read; a seekable file another
    /// tool wrote), `Err` when its seek table or index is damaged, truncated or belongs to
    /// another file. The file's position afterwards is unspecified.
    ///
    /// # Errors
    /// [`IndexError`], saying what is wrong.
    pub fn open(file: &mut File) -> Result<Option<Index>, IndexError> {
        let len = file
            .seek(SeekFrom::End(0))
            .map_err(|err| io_error("file's length", err))?;
        if len < SEEK_TABLE_INTEGRITY_SIZE as u64 {
            return Ok(None);
        }
        let mut footer = [0u8; SEEK_TABLE_INTEGRITY_SIZE];
        file.seek(SeekFrom::End(-(SEEK_TABLE_INTEGRITY_SIZE as i64)))
            .and_then(|_| file.read_exact(&mut footer))
            .map_err(|err| io_error("seek table", err))?;
        if le32(&footer, 5) != SEEKABLE_MAGIC_NUMBER {
            return Ok(None);
        }
        // Check the seek table's size against the file before zeekstd allocates for it.
        let frames = le32(&footer, 0);
        let per_frame = if footer[4] & 0x80 != 0 { 12 } else { 8 };
        if frames > SEEKABLE_MAX_FRAMES
            || u64::from(frames) * per_frame
                + (SKIPPABLE_HEADER_LEN + SEEK_TABLE_INTEGRITY_SIZE) as u64
                > len
        {
            return Err(IndexError::new(format!(
                "the seek table lists {frames} frames, more than the file can hold \
                 (damaged or truncated)"
            )));
        }
        let table_len = u64::from(frames) * per_frame
            + (SKIPPABLE_HEADER_LEN + SEEK_TABLE_INTEGRITY_SIZE) as u64;
        file.seek(SeekFrom::Start(0))
            .map_err(|err| io_error("seek table", err))?;
        let table = SeekTable::from_seekable(file)
            .map_err(|err| IndexError::new(format!("the seek table is damaged: {err}")))?;
        let data = table.size_comp();
        let Some(gap) = len
            .checked_sub(table_len)
            .and_then(|end| end.checked_sub(data))
        else {
            return Err(IndexError::new(
                "the frames of the seek table do not fit in the file (damaged or truncated)",
            ));
        };
        if gap == 0 {
            // A seekable file without our index.
            return Ok(None);
        }
        let expected = (SKIPPABLE_HEADER_LEN + HEADER_LEN + CRC_LEN) as u64
            + u64::from(frames) * ENTRY_LEN as u64;
        if gap != expected {
            return Err(IndexError::new(format!(
                "{gap} bytes between the last frame and the seek table, where an index of \
                 {frames} frames takes {expected} (damaged, or an index of another file)"
            )));
        }
        let mut bytes = vec![0u8; gap as usize];
        file.seek(SeekFrom::Start(data))
            .and_then(|_| file.read_exact(&mut bytes))
            .map_err(|err| io_error("index", err))?;
        let index = Index::parse(&bytes, &table)?;
        Ok(Some(index))
    }

    /// Checks and reads the index's skippable frame `bytes`, written for `table`.
    fn parse(bytes: &[u8], table: &SeekTable) -> Result<Index, IndexError> {
        if le32(bytes, 0) != FRAME_MAGIC {
            return Err(IndexError::new(
                "no index between the last frame and the seek table (damaged?)",
            ));
        }
        let body = &bytes[SKIPPABLE_HEADER_LEN..];
        if le32(bytes, 4) as usize != body.len() {
            return Err(IndexError::new(
                "the index frame's size field is wrong (damaged)",
            ));
        }
        if &body[..8] != TAG {
            return Err(IndexError::new("the index has no KANATAIX tag (damaged)"));
        }
        let (content, crc) = body.split_at(body.len() - CRC_LEN);
        if format::crc32(content) != le32(crc, 0) {
            return Err(IndexError::new(
                "the index's checksum does not match (damaged index)",
            ));
        }
        let version = le32(body, 8);
        if version != VERSION {
            return Err(IndexError::new(format!(
                "index version {version}; this kanata-pp reads version {VERSION}"
            )));
        }
        if le32(body, 12) as usize != ENTRY_LEN {
            return Err(IndexError::new("the index's entry size is wrong"));
        }
        let header = format::Header {
            frames: le32(body, 16),
            sizes_crc: le32(body, 20),
            compressed: le64(body, 24),
            decompressed: le64(body, 32),
            start_cycle: le64(body, 40) as i64,
            lines: le64(body, 48),
            last_cycle: le64(body, 56),
            insns: le64(body, 64),
        };
        let frames = table.num_frames();
        let mut spans = Vec::with_capacity(frames as usize);
        for i in 0..frames {
            let offset = table.frame_start_comp(i);
            let compressed = table.frame_size_comp(i);
            let decompressed = table.frame_size_decomp(i);
            let (Ok(offset), Ok(compressed), Ok(decompressed)) = (offset, compressed, decompressed)
            else {
                return Err(IndexError::new("the seek table is damaged"));
            };
            spans.push(Span {
                offset,
                compressed: compressed as u32,
                decompressed: decompressed as u32,
                checksum: 0,
            });
        }
        let sizes_crc = format::sizes_crc(spans.iter().map(|s| (s.compressed, s.decompressed)));
        if header.frames != frames
            || header.sizes_crc != sizes_crc
            || header.compressed != table.size_comp()
            || header.decompressed != table.size_decomp()
        {
            return Err(IndexError::new(
                "the index was written for another file: its frames are not the seek table's",
            ));
        }
        let mut entries = Vec::with_capacity(frames as usize);
        for i in 0..frames as usize {
            let at = HEADER_LEN + i * ENTRY_LEN;
            entries.push(Entry {
                line: le64(body, at),
                cycle: le64(body, at + 8),
                next_id: le64(body, at + 16),
                oldest_live: le32(body, at + 24),
                checksum: le32(body, at + 28),
            });
        }
        check_entries(&header, &entries, &spans)?;
        for (span, entry) in spans.iter_mut().zip(&entries) {
            span.checksum = entry.checksum;
        }
        Ok(Index {
            header,
            entries,
            spans: spans.into(),
        })
    }

    /// Checks that frames `0..=last` of `file` are the frames the index describes: each
    /// frame's content checksum (its last 4 bytes) against the index's. The index's entry of a
    /// frame says what every frame before it holds, so a reader that starts at frame `last`
    /// checks them all first; [`Index::reader`] checks each frame it reads. This reads 4 bytes
    /// a frame.
    ///
    /// # Errors
    /// An [`IndexError`] for a frame that is not the one the index describes (the index was
    /// written for another text with frames of the same sizes), or that cannot be read.
    pub fn check_frames(&self, file: &mut File, last: u32) -> Result<(), IndexError> {
        let mut tail = [0u8; 4];
        for (frame, span) in self.spans.iter().enumerate().take(last as usize + 1) {
            let at = span.offset + u64::from(span.compressed).saturating_sub(4);
            file.seek(SeekFrom::Start(at))
                .and_then(|_| file.read_exact(&mut tail))
                .map_err(|err| io_error("frames", err))?;
            if u32::from_le_bytes(tail) != span.checksum {
                return Err(IndexError::new(format!(
                    "frame {frame} is not the one the index describes (the index was written \
                     for another text)"
                )));
            }
        }
        Ok(())
    }

    /// The file's `C=` start cycle.
    pub fn start_cycle(&self) -> i64 {
        self.header.start_cycle
    }

    /// The number of frames of text.
    pub fn frames(&self) -> u32 {
        self.header.frames
    }

    /// The number of instructions (`I` lines) in the whole file.
    pub fn instructions(&self) -> u64 {
        self.header.insns
    }

    /// Where the text stands at its end: every line, and Konata's last cycle.
    pub fn end(&self) -> Position {
        Position {
            line: self.header.lines,
            cycle: self.header.last_cycle,
            start_cycle: self.header.start_cycle,
        }
    }

    /// Where frame `frame` starts; `None` past the last frame.
    pub fn frame_start(&self, frame: u32) -> Option<Start> {
        let entry = self.entries.get(frame as usize)?;
        Some(Start {
            frame,
            position: Position {
                line: entry.line,
                cycle: entry.cycle,
                start_cycle: self.header.start_cycle,
            },
            next_id: entry.next_id,
        })
    }

    /// Where to start reading so that every instruction whose life reaches cycle
    /// `cycles_from` or later (Konata's cycles: from the start of the file, by the `C` steps)
    /// and whose op id is `insns_from` or more has its `I` line in the frames read. `None` is
    /// no constraint.
    ///
    /// The rule: F is the last frame that starts before cycle `cycles_from` (frame 0 if
    /// none), and the cycle constraint starts at the oldest frame with an instruction still
    /// live at F's start; the op-id constraint starts at the last frame whose first op id is
    /// at most `insns_from`; the later of the two is the start. An instruction that never
    /// retires keeps every later frame's cycle start at its own frame.
    pub fn start_for(&self, cycles_from: Option<u64>, insns_from: Option<u64>) -> Start {
        let by_cycle = match cycles_from {
            Some(from) => {
                let f = self
                    .entries
                    .partition_point(|e| e.cycle < from)
                    .saturating_sub(1);
                self.entries.get(f).map_or(0, |e| e.oldest_live)
            }
            None => 0,
        };
        let by_id = match insns_from {
            Some(from) => self
                .entries
                .partition_point(|e| e.next_id <= from)
                .saturating_sub(1) as u32,
            None => 0,
        };
        let frame = by_cycle.max(by_id);
        self.frame_start(frame).unwrap_or(Start {
            frame: 0,
            position: Position {
                line: 0,
                cycle: 0,
                start_cycle: self.header.start_cycle,
            },
            next_id: 0,
        })
    }

    /// The decompressed text of `file` (the file this index was read from) from frame
    /// `from_frame` to the end of the text, as one byte stream. Frames are read and
    /// decompressed one at a time, as the stream is read. A frame that is damaged (its
    /// checksum, its size) is an [`io::ErrorKind::InvalidData`] error naming it.
    pub fn reader(&self, file: File, from_frame: u32) -> FrameReader {
        FrameReader {
            file,
            spans: self.spans.clone(),
            next: from_frame.min(self.frames()) as usize,
            compressed: Vec::new(),
            text: Vec::new(),
            pos: 0,
            decompressor: None,
            bytes_read: 0,
            spare: Vec::new(),
        }
    }

    /// A [`CanonicalReader`] of `file` from `start` on: [`CanonicalReader::new`] at frame 0
    /// (the header is there), [`CanonicalReader::resume`] at any other frame.
    pub fn canonical_reader(&self, file: File, start: &Start) -> CanonicalReader<FrameReader> {
        let reader = self.reader(file, start.frame);
        if start.frame == 0 {
            CanonicalReader::new(reader)
        } else {
            CanonicalReader::resume(reader, start.position)
        }
    }
}

/// Checks that the entries describe a text the seek table can hold.
fn check_entries(
    header: &format::Header,
    entries: &[Entry],
    spans: &[Span],
) -> Result<(), IndexError> {
    let bad = |what: String| {
        Err(IndexError::new(format!(
            "the index is inconsistent: {what}"
        )))
    };
    if let Some(first) = entries.first() {
        let start = Entry {
            checksum: first.checksum,
            ..Entry::default()
        };
        if *first != start {
            return bad("frame 0 does not start at the start of the text".into());
        }
    }
    let mut previous = Entry::default();
    for (i, (entry, span)) in entries.iter().zip(spans).enumerate() {
        let i32 = i as u32;
        if i > 0
            && (entry.line <= previous.line
                || entry.cycle < previous.cycle
                || entry.next_id < previous.next_id
                || entry.oldest_live < previous.oldest_live)
        {
            return bad(format!("frame {i} starts before frame {}", i - 1));
        }
        if entry.oldest_live > i32 {
            return bad(format!("frame {i} points to a later frame"));
        }
        if span.decompressed == 0 {
            return bad(format!("frame {i} is empty"));
        }
        previous = *entry;
    }
    if !entries.is_empty()
        && (header.lines <= previous.line
            || header.last_cycle < previous.cycle
            || header.insns < previous.next_id)
    {
        return bad("the end is before the last frame".into());
    }
    Ok(())
}

/// The text of a seekable file from a frame on ([`Index::reader`]): a [`Read`] and a
/// [`BufRead`] over the frames, decompressed one at a time as they are read.
pub struct FrameReader {
    file: File,
    spans: Arc<[Span]>,
    /// The next frame to decompress.
    next: usize,
    compressed: Vec<u8>,
    /// The current frame's text; `text[pos..]` is not read yet.
    text: Vec<u8>,
    pos: usize,
    decompressor: Option<zstd::bulk::Decompressor<'static>>,
    /// Compressed bytes of the frames read so far.
    bytes_read: u64,
    /// Buffers given back, for the next frames.
    spare: Vec<Vec<u8>>,
}

impl FrameReader {
    /// The text of the next frame (what is left of the current one first), as a buffer of
    /// its own, for a reader that decompresses on one thread and reads on another; `None`
    /// at the end of the text.
    ///
    /// # Errors
    /// A damaged frame, as [`Read::read`] says.
    pub fn next_text(&mut self) -> io::Result<Option<Vec<u8>>> {
        if self.pos == self.text.len() && !self.next_frame()? {
            return Ok(None);
        }
        let text = match self.pos {
            0 => std::mem::replace(&mut self.text, self.spare.pop().unwrap_or_default()),
            at => self.text[at..].to_vec(),
        };
        self.text.clear();
        self.pos = 0;
        Ok(Some(text))
    }

    /// Takes back a buffer [`next_text`](Self::next_text) gave, to decompress a later frame
    /// into without allocating (and faulting in) a new one.
    pub fn give_back(&mut self, mut buffer: Vec<u8>) {
        if self.spare.len() < 4 {
            buffer.clear();
            self.spare.push(buffer);
        }
    }

    /// Compressed bytes of the frames read so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Reads and decompresses the next frame into `text`; false at the end.
    fn next_frame(&mut self) -> io::Result<bool> {
        let Some(span) = self.spans.get(self.next).copied() else {
            return Ok(false);
        };
        let frame = self.next;
        self.next += 1;
        let damaged = |what: String| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("frame {frame} of the seekable file is damaged: {what}"),
            )
        };
        self.compressed.resize(span.compressed as usize, 0);
        self.file.seek(SeekFrom::Start(span.offset))?;
        self.bytes_read += u64::from(span.compressed);
        self.file.read_exact(&mut self.compressed).map_err(|err| {
            if err.kind() == io::ErrorKind::UnexpectedEof {
                damaged("the file ends inside it".into())
            } else {
                err
            }
        })?;
        // zstd's frame header: the magic number, then the descriptor (bit 2: a checksum).
        if self.compressed.len() < 5 || le32(&self.compressed, 0) != 0xFD2F_B528 {
            return Err(damaged("not a zstd frame".into()));
        }
        if self.compressed[4] & 0x04 == 0 {
            return Err(damaged("it has no checksum".into()));
        }
        if le32(&self.compressed, self.compressed.len() - 4) != span.checksum {
            return Err(damaged(
                "its checksum is not the one the index gives (an index of another text?)".into(),
            ));
        }
        let decompressor = match &mut self.decompressor {
            Some(d) => d,
            None => self.decompressor.insert(zstd::bulk::Decompressor::new()?),
        };
        self.text.clear();
        self.text.reserve_exact(span.decompressed as usize);
        let n = decompressor
            .decompress_to_buffer(&self.compressed[..], &mut self.text)
            .map_err(|err| damaged(err.to_string()))?;
        if n != span.decompressed as usize {
            return Err(damaged(format!(
                "it holds {n} bytes of text, the seek table says {}",
                span.decompressed
            )));
        }
        self.pos = 0;
        Ok(true)
    }
}

impl Read for FrameReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for FrameReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos == self.text.len() {
            if !self.next_frame()? {
                break;
            }
        }
        Ok(&self.text[self.pos..])
    }

    fn consume(&mut self, amount: usize) {
        self.pos = (self.pos + amount).min(self.text.len());
    }
}

#[cfg(test)]
mod tests;
