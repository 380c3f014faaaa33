//! The seekable, indexed `.kanata.zst`: canonical text written as independent zstd frames in
//! the Zstandard seekable format (the zstd project's contrib spec, written with `zeekstd`),
//! with an index of our own that maps cycles and op ids to frames (`docs/seekable.md`).
//!
//! The file stays a valid zstd file: `zstd -d` decodes it to exactly the canonical text, and
//! any reader of the seekable format (`zeekstd`, zstd's contrib library) reads it. The layout:
//!
//! ```text
//! frame 0 | frame 1 | … | frame N-1 | our index (skippable frame) | seek table (skippable frame)
//! ```
//!
//! Every frame holds whole lines and has a checksum. A frame is cut at the first line end
//! once at least the frame size is gathered, so the bytes depend only on the text, the level
//! and the frame size, never on how the text was split into writes.
//!
//! [`crate::input::seekable::Index`] reads the index back and answers where a window starts.
//!
//! # Threads
//!
//! [`SeekableWriter`](crate::output::seekable::SeekableWriter) scans the text for the index on the thread that writes to it and
//! compresses the frames on a thread of its own, a few frames behind; the compressed frames
//! come back to the writing thread, which writes them to the inner writer in order (so the
//! inner writer need not be `Send`).
//!
//! # Instructions that never retire
//!
//! The index says, per frame, which is the oldest frame still holding the `I` of a live
//! instruction. An instruction without `R` stays live to the end of the file, so every later
//! frame points back to its frame: the index stays correct, but a window that starts after
//! it reads (and skips) everything from that frame on.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::{self, JoinHandle};

use zeekstd::{EncodeOptions, FrameSizePolicy, RawEncoder, SeekTable, SEEKABLE_MAX_FRAME_SIZE};

use crate::output::canonical::{LineParser, Skim};

/// The frame size [`SeekableWriter::new`] uses: 1 MiB of text per frame. Measured at level 3
/// on 356 MB and 471 MB canonical traces (`BENCHMARKS.md`, "Seekable output"): the file is no
/// larger than one zstd frame (0.3 % and 3.4 % smaller), one frame reads in
/// 1.1–1.4 ms, and the index of a 50 GB trace is about 2 MB. 256 KiB frames read in 0.3 ms
/// but make the index (what every seek reads first) four times longer; 4 MiB frames cost
/// 4–6 ms a frame and compress no better.
pub const DEFAULT_FRAME_SIZE: usize = 1 << 20;

/// The largest frame size [`SeekableWriter::with_frame_size`] takes: half of the seekable
/// format's largest frame, so that a frame and its last line fit.
pub const MAX_FRAME_SIZE: usize = SEEKABLE_MAX_FRAME_SIZE / 2;

/// The layout of the index, shared with its reader (`docs/seekable.md`).
pub(crate) mod format {
    /// The magic number of the skippable frame that holds the index (zstd's skippable range
    /// is `0x184D2A50..=0x184D2A5F`; the seek table uses `…5E`).
    pub(crate) const FRAME_MAGIC: u32 = 0x184D_2A5B;
    /// The first bytes of the index's content.
    pub(crate) const TAG: &[u8; 8] = b"KANATAIX";
    /// The version of the layout.
    pub(crate) const VERSION: u32 = 2;
    /// The bytes of the fixed part, before the entries.
    pub(crate) const HEADER_LEN: usize = 72;
    /// The bytes of one frame's entry.
    pub(crate) const ENTRY_LEN: usize = 32;
    /// The bytes of the index's own checksum, at its end.
    pub(crate) const CRC_LEN: usize = 4;
    /// zstd's skippable frame header: magic and size.
    pub(crate) const SKIPPABLE_HEADER_LEN: usize = 8;

    /// The CRC-32 of `bytes`.
    pub(crate) fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = flate2::Crc::new();
        crc.update(bytes);
        crc.sum()
    }

    /// The CRC-32 of the frames' sizes as the seek table lists them: per frame, the
    /// compressed and the decompressed size, 32-bit little-endian each.
    pub(crate) fn sizes_crc(sizes: impl Iterator<Item = (u32, u32)>) -> u32 {
        let mut crc = flate2::Crc::new();
        for (c, d) in sizes {
            crc.update(&c.to_le_bytes());
            crc.update(&d.to_le_bytes());
        }
        crc.sum()
    }

    /// One frame's entry: where a reader stands at the frame's start.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub(crate) struct Entry {
        /// Lines before the frame.
        pub(crate) line: u64,
        /// Konata's cycle at the frame's start.
        pub(crate) cycle: u64,
        /// The op id of the next `I` line: the `I` lines before the frame.
        pub(crate) next_id: u64,
        /// The frame holding the `I` of the oldest instruction begun before this frame and
        /// still live at its start; this frame when there is none.
        pub(crate) oldest_live: u32,
        /// The frame's zstd content checksum (its last 4 bytes: the low 32 bits of the
        /// XXH64 of its text), which ties the entry to the text it describes.
        pub(crate) checksum: u32,
    }

    /// The fixed part of the index.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub(crate) struct Header {
        pub(crate) frames: u32,
        pub(crate) sizes_crc: u32,
        pub(crate) compressed: u64,
        pub(crate) decompressed: u64,
        pub(crate) start_cycle: i64,
        pub(crate) lines: u64,
        pub(crate) last_cycle: u64,
        pub(crate) insns: u64,
    }

    /// The whole skippable frame of the index: header, entries and checksum.
    pub(crate) fn encode(header: &Header, entries: &[Entry]) -> Vec<u8> {
        let len = HEADER_LEN + ENTRY_LEN * entries.len() + CRC_LEN;
        let mut out = Vec::with_capacity(SKIPPABLE_HEADER_LEN + len);
        out.extend_from_slice(&FRAME_MAGIC.to_le_bytes());
        out.extend_from_slice(&(len as u32).to_le_bytes());
        out.extend_from_slice(TAG);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(ENTRY_LEN as u32).to_le_bytes());
        out.extend_from_slice(&header.frames.to_le_bytes());
        out.extend_from_slice(&header.sizes_crc.to_le_bytes());
        out.extend_from_slice(&header.compressed.to_le_bytes());
        out.extend_from_slice(&header.decompressed.to_le_bytes());
        out.extend_from_slice(&header.start_cycle.to_le_bytes());
        out.extend_from_slice(&header.lines.to_le_bytes());
        out.extend_from_slice(&header.last_cycle.to_le_bytes());
        out.extend_from_slice(&header.insns.to_le_bytes());
        for entry in entries {
            out.extend_from_slice(&entry.line.to_le_bytes());
            out.extend_from_slice(&entry.cycle.to_le_bytes());
            out.extend_from_slice(&entry.next_id.to_le_bytes());
            out.extend_from_slice(&entry.oldest_live.to_le_bytes());
            out.extend_from_slice(&entry.checksum.to_le_bytes());
        }
        let crc = crc32(&out[SKIPPABLE_HEADER_LEN..]);
        out.extend_from_slice(&crc.to_le_bytes());
        debug_assert_eq!(out.len(), SKIPPABLE_HEADER_LEN + len);
        out
    }
}

use format::Entry;

/// Frames handed to the compressing thread and not yet written out, at most: enough to
/// keep it busy, few enough that memory stays a few frames.
const IN_FLIGHT: usize = 3;

/// What the index needs from the text, gathered line by line.
struct Scan {
    parser: LineParser,
    /// Lines so far.
    lines: u64,
    /// `I` lines so far.
    next_id: u64,
    /// Per frame, its entry (the first `next_id` of each frame finds an id's frame).
    entries: Vec<Entry>,
    /// Live instructions begun in each frame from `live_base` on.
    live: VecDeque<u64>,
    /// The frame of `live[0]`.
    live_base: u32,
}

impl Scan {
    fn new() -> Scan {
        let mut scan = Scan {
            parser: LineParser::new(),
            lines: 0,
            next_id: 0,
            entries: Vec::new(),
            live: VecDeque::new(),
            live_base: 0,
        };
        scan.start_frame();
        scan
    }

    /// Records the entry of a new frame, at its start.
    fn start_frame(&mut self) {
        let frame = self.entries.len() as u32;
        // A frame's count only falls once the frame is behind: the leading zeros are done.
        while self.live.front() == Some(&0) {
            self.live.pop_front();
            self.live_base += 1;
        }
        let oldest_live = if self.live.is_empty() {
            self.live_base = frame;
            frame
        } else {
            self.live_base
        };
        self.live.push_back(0);
        self.entries.push(Entry {
            line: self.lines,
            cycle: self.parser.cycle(),
            next_id: self.next_id,
            oldest_live,
            // Known once the frame is compressed.
            checksum: 0,
        });
    }

    /// Reads one line (without its LF) into the state.
    ///
    /// Only the lines that move the index are skimmed ([`LineParser::skim`]): the header,
    /// `C=`, `C`, `I` and `R` (in canonical text a line's command is its first byte). The
    /// `S`, `E`, `L` and `W` lines, most of a trace, are only counted. The text is the
    /// writer's, trusted: reading every line would cost as much as compressing it
    /// (`BENCHMARKS.md`, "Seekable output").
    #[inline]
    fn line(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.lines += 1;
        if self.lines > 2 && !matches!(bytes.first(), Some(b'C' | b'I' | b'R')) {
            return Ok(());
        }
        // The parser sees only these lines: its line numbers are not the file's, so its
        // messages get the file's.
        let skim = self.parser.skim(bytes).map_err(|err| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("line {}: {}", self.lines, err.message()),
            )
        })?;
        match skim {
            Skim::Insn { id, .. } => {
                if id != self.next_id {
                    return Err(not_canonical(self.lines, "an I line out of order"));
                }
                self.next_id += 1;
                *self.live.back_mut().expect("the current frame has a count") += 1;
            }
            Skim::Retire(id) => {
                if id >= self.next_id {
                    return Err(not_canonical(self.lines, "an R line before its I line"));
                }
                // The last frame whose first id is at most `id` holds its I line.
                let frame = self.entries.partition_point(|e| e.next_id <= id) - 1;
                let count = (frame as u32)
                    .checked_sub(self.live_base)
                    .and_then(|at| self.live.get_mut(at as usize))
                    .filter(|count| **count > 0)
                    .ok_or_else(|| {
                        not_canonical(self.lines, "an R line of a retired instruction")
                    })?;
                *count -= 1;
            }
            _ => {}
        }
        Ok(())
    }
}

fn not_canonical(line: u64, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("line {line}: not canonical Kanata: {what}"),
    )
}

/// A frame compressed by the worker: the compressed bytes, and the text buffer back for
/// reuse.
type Compressed = io::Result<(Vec<u8>, Vec<u8>)>;

/// The thread that compresses frames, one at a time, in the order they come.
struct Worker {
    to: Option<SyncSender<Vec<u8>>>,
    from: Receiver<Compressed>,
    handle: Option<JoinHandle<()>>,
}

impl Worker {
    fn spawn(level: i32) -> io::Result<Worker> {
        let mut encoder: RawEncoder<'static> = EncodeOptions::new()
            .checksum_flag(true)
            .compression_level(level)
            .frame_size_policy(FrameSizePolicy::Uncompressed(
                SEEKABLE_MAX_FRAME_SIZE as u32,
            ))
            .into_raw_encoder()
            .map_err(io::Error::other)?;
        let (to, frames) = mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT);
        let (done, from) = mpsc::channel::<Compressed>();
        let handle = thread::Builder::new()
            .name("kanata-seekable".into())
            .spawn(move || {
                for text in frames {
                    let result = compress_frame(&mut encoder, &text).map(|c| (c, text));
                    let failed = result.is_err();
                    if done.send(result).is_err() || failed {
                        return;
                    }
                }
            })?;
        Ok(Worker {
            to: Some(to),
            from,
            handle: Some(handle),
        })
    }

    fn send(&mut self, text: Vec<u8>) -> io::Result<()> {
        let sent = self.to.as_ref().map(|to| to.send(text));
        match sent {
            Some(Ok(())) => Ok(()),
            _ => Err(io::Error::other("the seekable compression thread stopped")),
        }
    }

    fn receive(&mut self) -> Compressed {
        self.from
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("the seekable compression thread stopped")))
    }

    fn stop(&mut self) {
        self.to = None;
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Compresses `text` as one frame of the seekable format into `out`.
fn compress_frame(encoder: &mut RawEncoder<'_>, text: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = vec![0; zstd::zstd_safe::compress_bound(text.len()) + 64];
    let mut written = 0;
    let mut read = 0;
    while read < text.len() {
        let progress = encoder
            .compress(&text[read..], &mut out[written..])
            .map_err(io::Error::other)?;
        read += progress.in_progress();
        written += progress.out_progress();
        if progress.in_progress() == 0 && progress.out_progress() == 0 {
            out.resize(out.len() * 2, 0);
        }
    }
    loop {
        if written == out.len() {
            out.resize(out.len() * 2, 0);
        }
        let progress = encoder
            .end_frame(&mut out[written..])
            .map_err(io::Error::other)?;
        written += progress.out_progress();
        if progress.data_left() == 0 {
            break;
        }
    }
    out.truncate(written);
    Ok(out)
}

/// Writes canonical Kanata text as a seekable, indexed zstd file (see the [module](self)
/// docs and `docs/seekable.md`).
///
/// It is given the whole text, from `Kanata\t0004` on, in chunks of any size; [`finish`]
/// writes the last frame, the index and the seek table. The text must be canonical (as
/// `kanata-writer` writes it, in the explicit or the compact form): a line that is not is an
/// [`io::ErrorKind::InvalidData`] error.
///
/// ```
/// use std::io::Write;
/// use kanata_pp::output::seekable::SeekableWriter;
///
/// let text = b"Kanata\t0004\nC=\t0\nI\t0\t0\t0\nS\t0\t0\tF\nC\t1\nE\t0\t0\tF\nR\t0\t0\t0\n";
/// let mut w = SeekableWriter::new(Vec::new(), 3)?.with_frame_size(16);
/// w.write_all(text)?;
/// let file = w.finish()?;
/// assert_eq!(zstd::decode_all(&file[..])?, text);
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// [`finish`]: SeekableWriter::finish
pub struct SeekableWriter<W: Write> {
    inner: W,
    frame_size: usize,
    /// The text of the frame being filled; `frame[..scanned]` is whole lines, scanned.
    frame: Vec<u8>,
    scanned: usize,
    scan: Scan,
    /// Frames sent to the worker and not written out yet.
    in_flight: usize,
    /// Text buffers back from the worker.
    spare: Vec<Vec<u8>>,
    worker: Worker,
    seek_table: SeekTable,
    /// A failure already returned: later calls fail too.
    failed: bool,
}

impl<W: Write> SeekableWriter<W> {
    /// A writer into `inner` at zstd level `level` (3 is `zstd`'s default), with frames of
    /// [`DEFAULT_FRAME_SIZE`].
    ///
    /// # Errors
    /// When the level is not one zstd takes, or the compression thread cannot start.
    pub fn new(inner: W, level: i32) -> io::Result<Self> {
        if !zstd::compression_level_range().contains(&level) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("zstd has no compression level {level}"),
            ));
        }
        Ok(SeekableWriter {
            inner,
            frame_size: DEFAULT_FRAME_SIZE,
            frame: Vec::new(),
            scanned: 0,
            scan: Scan::new(),
            in_flight: 0,
            spare: Vec::new(),
            worker: Worker::spawn(level)?,
            seek_table: SeekTable::new(),
            failed: false,
        })
    }

    /// Sets the frame size: a frame ends at the first line end once it holds at least
    /// `bytes` bytes of text. Taken between 1 and [`MAX_FRAME_SIZE`]. Call it before
    /// writing.
    pub fn with_frame_size(mut self, bytes: usize) -> Self {
        self.frame_size = bytes.clamp(1, MAX_FRAME_SIZE);
        self
    }

    /// Scans the lines of `frame` not scanned yet and cuts frames.
    fn scan(&mut self) -> io::Result<()> {
        loop {
            let rest = &self.frame[self.scanned..];
            let Some(lf) = memchr::memchr(b'\n', rest) else {
                if self.frame.len() >= SEEKABLE_MAX_FRAME_SIZE {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "a line longer than the seekable format's largest frame (1 GiB)",
                    ));
                }
                return Ok(());
            };
            self.scan.line(&rest[..lf])?;
            self.scanned += lf + 1;
            if self.scanned >= self.frame_size {
                self.cut()?;
            }
        }
    }

    /// Ends the frame after the lines scanned; what follows them starts the next frame.
    fn cut(&mut self) -> io::Result<()> {
        if self.scanned > SEEKABLE_MAX_FRAME_SIZE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a line longer than the seekable format's largest frame (1 GiB)",
            ));
        }
        let mut next = self.spare.pop().unwrap_or_default();
        next.clear();
        next.extend_from_slice(&self.frame[self.scanned..]);
        self.frame.truncate(self.scanned);
        let text = std::mem::replace(&mut self.frame, next);
        self.scanned = 0;
        self.send(text)?;
        self.scan.start_frame();
        Ok(())
    }

    /// Hands a frame's text to the worker, writing out what it has compressed.
    fn send(&mut self, text: Vec<u8>) -> io::Result<()> {
        if self.in_flight >= IN_FLIGHT {
            self.write_one()?;
        }
        while let Ok(done) = self.worker.from.try_recv() {
            self.write_compressed(done)?;
        }
        self.worker.send(text)?;
        self.in_flight += 1;
        Ok(())
    }

    /// Waits for the oldest frame in flight and writes it.
    fn write_one(&mut self) -> io::Result<()> {
        let done = self.worker.receive();
        self.write_compressed(done)
    }

    fn write_compressed(&mut self, done: Compressed) -> io::Result<()> {
        let (compressed, text) = done?;
        self.in_flight -= 1;
        self.inner.write_all(&compressed)?;
        // Frames come back in order: this one is the first without its checksum.
        let frame = self.seek_table.num_frames() as usize;
        if let (Some(entry), Some(tail)) = (
            self.scan.entries.get_mut(frame),
            compressed.len().checked_sub(4),
        ) {
            entry.checksum = u32::from_le_bytes(compressed[tail..].try_into().expect("4 bytes"));
        }
        self.seek_table
            .log_frame(compressed.len() as u32, text.len() as u32)
            .map_err(io::Error::other)?;
        if self.spare.len() < IN_FLIGHT {
            self.spare.push(text);
        }
        Ok(())
    }

    /// Writes the last frame, the index and the seek table, and gives the inner writer back
    /// (flushed).
    ///
    /// # Errors
    /// When compressing or writing fails, or the text ended in the middle of a line.
    pub fn finish(mut self) -> io::Result<W> {
        if self.failed {
            return Err(io::Error::other("the seekable writer failed before"));
        }
        if self.scanned < self.frame.len() {
            return Err(not_canonical(
                self.scan.lines + 1,
                "the last line does not end with LF",
            ));
        }
        // The last frame, unless the text ended exactly at a cut (or there was no text).
        if !self.frame.is_empty() {
            let text = std::mem::take(&mut self.frame);
            self.send(text)?;
        } else {
            self.scan.entries.pop();
        }
        while self.in_flight > 0 {
            self.write_one()?;
        }
        self.worker.stop();
        let frames = self.seek_table.num_frames();
        debug_assert_eq!(frames as usize, self.scan.entries.len());
        let sizes = (0..frames).map(|i| {
            let c = self.seek_table.frame_size_comp(i).unwrap_or(0) as u32;
            let d = self.seek_table.frame_size_decomp(i).unwrap_or(0) as u32;
            (c, d)
        });
        let header = format::Header {
            frames,
            sizes_crc: format::sizes_crc(sizes),
            compressed: self.seek_table.size_comp(),
            decompressed: self.seek_table.size_decomp(),
            start_cycle: self.scan.parser.start_cycle().unwrap_or(0),
            lines: self.scan.lines,
            last_cycle: self.scan.parser.cycle(),
            insns: self.scan.next_id,
        };
        self.inner
            .write_all(&format::encode(&header, &self.scan.entries))?;
        let seek_table = std::mem::take(&mut self.seek_table);
        io::copy(&mut seek_table.into_serializer(), &mut self.inner)?;
        self.inner.flush()?;
        let SeekableWriter { inner, .. } = self;
        Ok(inner)
    }
}

impl<W: Write> Write for SeekableWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.failed {
            return Err(io::Error::other("the seekable writer failed before"));
        }
        self.frame.extend_from_slice(buf);
        let scanned = self.scan();
        if scanned.is_err() {
            self.failed = true;
        }
        scanned.map(|()| buf.len())
    }

    /// Writes out the frames compressed so far; the frame being filled stays (a frame ends
    /// only at its size, so that the bytes never depend on when `flush` was called).
    fn flush(&mut self) -> io::Result<()> {
        while let Ok(done) = self.worker.from.try_recv() {
            self.write_compressed(done)?;
        }
        self.inner.flush()
    }
}
