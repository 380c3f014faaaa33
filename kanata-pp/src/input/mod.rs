//! Opening the input: a path or `-` (stdin), plain, gzip or zstd recognised by its magic
//! bytes (never by its name), read as lines.

pub mod detect;
pub(crate) mod progress;
pub mod seekable;

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How the input was compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputCompression {
    /// Plain text.
    None,
    /// gzip (one member or several).
    Gzip,
    /// zstd (one frame or several).
    Zstd,
}

impl InputCompression {
    /// The name reports use: `none`, `gzip`, `zstd`.
    pub fn name(self) -> &'static str {
        match self {
            InputCompression::None => "none",
            InputCompression::Gzip => "gzip",
            InputCompression::Zstd => "zstd",
        }
    }
}

/// Counts the bytes read from the raw (possibly compressed) input, for progress bars.
struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// An opened input: its decompressed bytes, and what was found out about it.
pub struct Input {
    /// The decompressed text.
    pub reader: Box<dyn Read + Send>,
    /// The compression found from the magic bytes.
    pub compression: InputCompression,
    /// The size of the raw input, when it is a file.
    pub raw_len: Option<u64>,
    /// Raw bytes read so far.
    pub raw_read: Arc<AtomicU64>,
    /// The first bytes of the decompressed text, for format detection.
    pub head: Vec<u8>,
}

/// Opens `path` (`-` for stdin) and recognises its compression.
pub fn open(path: &Path) -> io::Result<Input> {
    let (raw, raw_len): (Box<dyn Read + Send>, Option<u64>) = if path.as_os_str() == "-" {
        (Box::new(io::stdin()), None)
    } else {
        let file = File::open(path)?;
        let len = file
            .metadata()
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.len());
        (Box::new(file), len)
    };
    from_reader(raw, raw_len)
}

/// Recognises the compression of `raw` and wraps it in the right decoder.
pub fn from_reader(raw: Box<dyn Read + Send>, raw_len: Option<u64>) -> io::Result<Input> {
    let raw_read = Arc::new(AtomicU64::new(0));
    let counting = Counting {
        inner: raw,
        count: Arc::clone(&raw_read),
    };
    // Small, so that the readers' large reads (64 KiB and up) bypass it: a read smaller than
    // the buffer goes through it, one more copy of the whole input.
    let mut buffered = BufReader::with_capacity(64 * 1024, counting);
    let magic = buffered.fill_buf()?;
    let compression = if magic.starts_with(&[0x1f, 0x8b]) {
        InputCompression::Gzip
    } else if magic.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        InputCompression::Zstd
    } else {
        InputCompression::None
    };
    let mut reader: Box<dyn Read + Send> = match compression {
        InputCompression::None => Box::new(buffered),
        // Several members (pigz, concatenated files) are one stream.
        InputCompression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(buffered)),
        InputCompression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(buffered)?),
    };
    // Read the head for format detection; it is given back in front of the rest.
    let mut head = vec![0; 4096];
    let mut filled = 0;
    while filled < head.len() {
        match reader.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    head.truncate(filled);
    let reader: Box<dyn Read + Send> = Box::new(io::Cursor::new(head.clone()).chain(reader));
    Ok(Input {
        reader,
        compression,
        raw_len,
        raw_read,
        head,
    })
}

/// Bytes read from the input: a `Vec` whose room past the bytes held stays initialized from
/// one block to the next, so that reading into it does not zero a megabyte each time.
///
/// The bytes start where the block's reads land on a 64-byte boundary in memory. The
/// kernel copies a file's bytes into a destination that is not on one five times slower
/// (measured on this project's AMD machine: 0.12 s of system time for 234 MB read 256 KiB
/// at a time at an address of 16 modulo 64, 0.02 s at a multiple of 64, as `dd` reads);
/// that was a seventh of `--check`'s time.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReadBuffer {
    bytes: Vec<u8>,
    /// Where the bytes held start in `bytes`.
    start: usize,
    /// How many bytes are held; the reader that fills [`Self::room`] adds what it read.
    pub(crate) len: usize,
}

/// The alignment in memory of the reads into a [`ReadBuffer`]: a cache line.
const READ_ALIGN: usize = 64;

impl ReadBuffer {
    /// Empties the buffer (its room kept).
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    /// Empties the buffer and puts `carry` (the start of a line cut by the end of the last
    /// block) in it, placed so that the bytes read after it, `room` of them at least, land
    /// on a [`READ_ALIGN`] boundary in memory.
    pub(crate) fn restart_with(&mut self, carry: &[u8], room: usize) {
        self.start = self.start_for(carry.len(), room);
        self.len = 0;
        self.extend_from_slice(carry);
    }

    /// Keeps the bytes held from `from` on (the start of a line cut by the end of the
    /// block), moved so that the bytes read after them, `room` of them at least, land on a
    /// [`READ_ALIGN`] boundary in memory.
    pub(crate) fn keep_from(&mut self, from: usize, room: usize) {
        let kept = self.len - from;
        let old = self.start + from;
        let start = self.start_for(kept, room);
        self.bytes.copy_within(old..old + kept, start);
        self.start = start;
        self.len = kept;
    }

    /// Where `kept` bytes must start for the `room` bytes read after them to land on a
    /// [`READ_ALIGN`] boundary in memory, with room made for both (the bytes held stay
    /// where they are in `bytes`).
    fn start_for(&mut self, kept: usize, room: usize) -> usize {
        let needed = READ_ALIGN + kept + room;
        if self.bytes.len() < needed {
            self.bytes.resize(needed, 0);
        }
        // Only the address's value is used, to choose where the bytes start.
        let read_at = self.bytes.as_ptr() as usize + kept;
        read_at.next_multiple_of(READ_ALIGN) - read_at
    }

    /// Keeps the first `len` bytes held.
    pub(crate) fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Appends `more`.
    pub(crate) fn extend_from_slice(&mut self, more: &[u8]) {
        self.room(more.len())[..more.len()].copy_from_slice(more);
        self.len += more.len();
    }

    /// Room for at least `at_least` more bytes, after the ones held.
    pub(crate) fn room(&mut self, at_least: usize) -> &mut [u8] {
        let end = self.start + self.len;
        if self.bytes.len() < end + at_least {
            self.bytes.resize(end + at_least, 0);
        }
        &mut self.bytes[end..]
    }
}

impl std::ops::Deref for ReadBuffer {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes[self.start..self.start + self.len]
    }
}

/// A [`BufRead`] like std's `BufReader`, whose reads land on a cache line in memory (see
/// [`ReadBuffer`]): `BufReader` reads into the start of a buffer wherever the allocator put
/// it, 16 bytes off a cache line for a large one, where the kernel copies a file five times
/// slower.
#[derive(Debug)]
pub(crate) struct AlignedReader<R> {
    inner: R,
    buf: ReadBuffer,
    /// The bytes of `buf` consumed.
    at: usize,
    capacity: usize,
}

impl<R: Read> AlignedReader<R> {
    /// Reads `inner` `capacity` bytes at a time.
    pub(crate) fn with_capacity(capacity: usize, inner: R) -> AlignedReader<R> {
        AlignedReader {
            inner,
            buf: ReadBuffer::default(),
            at: 0,
            capacity: capacity.max(1),
        }
    }

    /// The reader read, and the bytes read from it and not consumed dropped.
    pub(crate) fn into_inner(self) -> R {
        self.inner
    }
}

impl<R: Read> Read for AlignedReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        // As `BufReader` does: a large read with nothing buffered goes straight through.
        if self.at == self.buf.len() && out.len() >= self.capacity {
            return self.inner.read(out);
        }
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for AlignedReader<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.at == self.buf.len() {
            self.buf.restart_with(&[], self.capacity);
            self.at = 0;
            let room = &mut self.buf.room(self.capacity)[..self.capacity];
            let n = loop {
                match self.inner.read(room) {
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                    result => break result?,
                }
            };
            self.buf.len = n;
        }
        Ok(&self.buf[self.at..])
    }

    fn consume(&mut self, amount: usize) {
        self.at = (self.at + amount).min(self.buf.len());
    }
}

/// Reads lines out of a byte stream in large blocks, without a `String` per line.
pub(crate) struct Lines<R> {
    reader: R,
    buf: ReadBuffer,
    /// Start of the next line in `buf`.
    start: usize,
    eof: bool,
    /// Number of the line last returned (1-based).
    pub(crate) number: u64,
    /// Whether the last line had no line end.
    pub(crate) unterminated: bool,
}

const BLOCK: usize = 1 << 20;

impl<R: Read> Lines<R> {
    pub(crate) fn new(reader: R) -> Lines<R> {
        Lines {
            reader,
            buf: ReadBuffer::default(),
            start: 0,
            eof: false,
            number: 0,
            unterminated: false,
        }
    }

    /// The next line without its LF (and without a CR before it), with its number and
    /// whether it ended in CR LF; `None` at the end.
    pub(crate) fn next_line(&mut self) -> io::Result<Option<(u64, bool, &[u8])>> {
        loop {
            let end = self.buf.len();
            let (line_end, next) = match memchr::memchr(b'\n', &self.buf[self.start..]) {
                Some(n) => (self.start + n, self.start + n + 1),
                None if self.eof && self.start < end => {
                    // The last line has no LF.
                    self.unterminated = true;
                    (end, end)
                }
                None if self.eof => return Ok(None),
                None => {
                    self.refill()?;
                    continue;
                }
            };
            let line_start = self.start;
            self.start = next;
            self.number += 1;
            let had_cr = line_end > line_start && self.buf[line_end - 1] == b'\r';
            let line = &self.buf[line_start..line_end - usize::from(had_cr)];
            return Ok(Some((self.number, had_cr, line)));
        }
    }

    fn refill(&mut self) -> io::Result<()> {
        // The partial line moved to the front, a block read after it (the buffer grows when
        // one line is longer).
        self.buf.keep_from(self.start, BLOCK);
        self.start = 0;
        loop {
            match self.reader.read(&mut self.buf.room(BLOCK)[..BLOCK]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.buf.len += n;
                    return Ok(());
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn aligned_reader_reads_what_bufreader_reads() {
        let text: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        for capacity in [1, 7, 64, 4096, 1 << 18] {
            let mut reader = AlignedReader::with_capacity(capacity, &text[..]);
            let mut got = Vec::new();
            let (mut step, mut fresh) = (0, true);
            loop {
                step += 1;
                let block = reader.fill_buf().unwrap();
                if block.is_empty() {
                    break;
                }
                if fresh {
                    // Just read: where the read landed.
                    assert_eq!(
                        block.as_ptr() as usize % READ_ALIGN,
                        0,
                        "capacity {capacity}"
                    );
                }
                let held = block.len();
                // Consume part of the block, or read some of it, in turns.
                let n = if step % 2 == 0 {
                    let n = held.min(1 + step % 13);
                    got.extend_from_slice(&block[..n]);
                    reader.consume(n);
                    n
                } else {
                    let mut some = vec![0; 1 + step % 17];
                    let n = reader.read(&mut some).unwrap();
                    got.extend_from_slice(&some[..n]);
                    n
                };
                fresh = n == held;
            }
            assert_eq!(got, text, "capacity {capacity}");
            let mut rest = Vec::new();
            let mut again = AlignedReader::with_capacity(capacity, &text[..]);
            again.read_to_end(&mut rest).unwrap();
            assert_eq!(rest, text);
        }
    }

    #[test]
    fn reads_land_on_a_cache_line_after_any_carry() {
        let mut buffer = ReadBuffer::default();
        for carry_len in [0, 1, 15, 16, 63, 64, 65, 200, 4097] {
            let carry: Vec<u8> = (0..carry_len).map(|i| i as u8).collect();
            buffer.restart_with(&carry, 1 << 18);
            assert_eq!(&*buffer, &carry[..], "the carry comes first");
            let room = buffer.room(1 << 18);
            assert!(room.len() >= 1 << 18);
            assert_eq!(
                room.as_ptr() as usize % READ_ALIGN,
                0,
                "carry of {carry_len}"
            );
            room[..3].copy_from_slice(b"abc");
            buffer.len += 3;
            assert_eq!(&buffer[carry_len..], b"abc");
            // The tail kept for the next block, moved likewise.
            let tail = buffer[carry_len / 2..].to_vec();
            buffer.keep_from(carry_len / 2, 1 << 18);
            assert_eq!(&*buffer, &tail[..]);
            let room = buffer.room(1 << 18);
            assert_eq!(
                room.as_ptr() as usize % READ_ALIGN,
                0,
                "tail of {}",
                tail.len()
            );
        }
    }

    use bstr::ByteSlice;

    fn lines(text: &[u8]) -> Vec<(u64, String, bool)> {
        let mut lines = Lines::new(text);
        let mut out = Vec::new();
        while let Some((number, had_cr, line)) = lines.next_line().unwrap() {
            out.push((number, line.to_str_lossy().into_owned(), had_cr));
        }
        out
    }

    #[test]
    fn lines_strip_lf_and_crlf_and_keep_a_last_line_without_newline() {
        assert_eq!(
            lines(b"a\r\nb\n\nc"),
            vec![
                (1, "a".into(), true),
                (2, "b".into(), false),
                (3, "".into(), false),
                (4, "c".into(), false)
            ]
        );
        assert!(lines(b"").is_empty());
    }

    #[test]
    fn a_line_longer_than_the_block_is_read_whole() {
        let mut text = vec![b'x'; 3 * BLOCK];
        text.extend_from_slice(b"\ny\n");
        let got = lines(&text);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].1.len(), 3 * BLOCK);
    }

    #[test]
    fn compression_is_recognised_by_magic_bytes() {
        use std::io::Write;
        let text = b"Kanata\t0004\nC=\t0\n".to_vec();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&text).unwrap();
        let gz = gz.finish().unwrap();
        let zst = zstd::encode_all(&text[..], 3).unwrap();
        for (raw, want) in [
            (text.clone(), InputCompression::None),
            (gz, InputCompression::Gzip),
            (zst, InputCompression::Zstd),
        ] {
            let mut input = from_reader(Box::new(io::Cursor::new(raw)), None).unwrap();
            assert_eq!(input.compression, want);
            let mut got = Vec::new();
            input.reader.read_to_end(&mut got).unwrap();
            assert_eq!(got, text);
            assert!(input.head.starts_with(b"Kanata"));
        }
    }

    #[test]
    fn truncated_compressed_input_is_an_error() {
        use std::io::Write;
        let text = b"Kanata\t0004\nC=\t0\n".repeat(1000);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&text).unwrap();
        let gz = gz.finish().unwrap();
        let zst = zstd::encode_all(&text[..], 3).unwrap();
        for raw in [gz, zst] {
            let cut = raw[..raw.len() - 10].to_vec();
            let result = from_reader(Box::new(io::Cursor::new(cut)), None)
                .and_then(|mut input| input.reader.read_to_end(&mut Vec::new()));
            assert!(
                result.is_err(),
                "a truncated stream must not read as complete"
            );
        }
    }
}
