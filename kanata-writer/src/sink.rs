//! Where the encoded bytes go: plain, gzip or zstd, compressed inline or on a background
//! thread.
//!
//! The writer hands over whole buffers and never asks the compressor to flush before the
//! end: flushing a compressor early costs ratio and speed, and the output stays the same
//! bytes whatever the buffer size or thread (§4.9 of the format spec).

use std::io::{self, Write};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::{self, JoinHandle};

use crate::error::{Error, ErrorKind, Result};
use crate::zstd_ring::ZstdRing;

/// How the trace is compressed.
///
/// ```
/// use kanata_writer::Compression;
/// assert_eq!(Compression::from_path("run.kanata.zst".as_ref()), Compression::Zstd);
/// assert_eq!(Compression::from_path("run.kanata.gz".as_ref()), Compression::Gzip);
/// assert_eq!(Compression::from_path("run.kanata".as_ref()), Compression::None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    /// Plain text.
    #[default]
    None,
    /// gzip (`.gz`), one member; Konata opens it by extension.
    Gzip,
    /// zstd (`.zst`), one frame with a checksum; Konata opens it by extension.
    Zstd,
}

impl Compression {
    /// The compression Konata expects for a file name: `.gz` is gzip, `.zst` is zstd, anything
    /// else plain.
    pub fn from_path(path: &Path) -> Compression {
        match path.extension().and_then(|ext| ext.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("gz") => Compression::Gzip,
            Some(ext) if ext.eq_ignore_ascii_case("zst") => Compression::Zstd,
            _ => Compression::None,
        }
    }

    /// The level used when none is given: 6 for gzip and 3 for zstd, the defaults of the
    /// `gzip` and `zstd` command-line tools.
    pub fn default_level(self) -> i32 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 6,
            Compression::Zstd => 3,
        }
    }

    /// Checks that `level` is one this compression has (gzip 0–9, zstd its whole range).
    ///
    /// ```
    /// use kanata_writer::Compression;
    /// assert!(Compression::Zstd.check_level(19).is_ok());
    /// assert!(Compression::Gzip.check_level(10).is_err());
    /// ```
    pub fn check_level(self, level: i32) -> Result<()> {
        let range = match self {
            Compression::None => return Ok(()),
            Compression::Gzip => 0..=9,
            Compression::Zstd => zstd::compression_level_range(),
        };
        if range.contains(&level) {
            Ok(())
        } else {
            Err(Error::new(ErrorKind::InvalidOption(format!(
                "{self:?} level {level} is outside {}..={}",
                range.start(),
                range.end()
            ))))
        }
    }
}

/// A compressor (or none) in front of the user's writer.
pub(crate) enum Encoder<W: Write> {
    Plain(W),
    Gzip(Chunked<flate2::write::GzEncoder<W>>),
    Zstd(ZstdRing<W>),
}

/// How many bytes gzip is given per call.
const COMPRESS_CHUNK: usize = 64 * 1024;

/// Feeds gzip in pieces of exactly [`COMPRESS_CHUNK`] bytes at fixed offsets of the
/// stream. Deflate's output depends on how its input is split into calls, so without this
/// the compressed bytes would change with the writer's buffer size or hold-back, and the
/// output would not be deterministic.
pub(crate) struct Chunked<E> {
    inner: E,
    staged: Vec<u8>,
}

impl<E: Write> Chunked<E> {
    fn new(inner: E) -> Chunked<E> {
        Chunked {
            inner,
            staged: Vec::with_capacity(COMPRESS_CHUNK),
        }
    }

    fn write_all(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        if !self.staged.is_empty() {
            let take = bytes.len().min(COMPRESS_CHUNK - self.staged.len());
            self.staged.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.staged.len() < COMPRESS_CHUNK {
                return Ok(());
            }
            self.inner.write_all(&self.staged)?;
            self.staged.clear();
        }
        let whole = bytes.len() - bytes.len() % COMPRESS_CHUNK;
        for chunk in bytes[..whole].chunks_exact(COMPRESS_CHUNK) {
            self.inner.write_all(chunk)?;
        }
        self.staged.extend_from_slice(&bytes[whole..]);
        Ok(())
    }

    /// Hands over what is staged; the caller then ends the stream.
    fn into_inner(mut self) -> io::Result<E> {
        if !self.staged.is_empty() {
            self.inner.write_all(&self.staged)?;
        }
        Ok(self.inner)
    }
}

impl<W: Write> Encoder<W> {
    fn new(inner: W, compression: Compression, level: i32) -> io::Result<Encoder<W>> {
        Ok(match compression {
            Compression::None => Encoder::Plain(inner),
            // GzBuilder writes mtime 0 and no file name, so the bytes depend on the input only.
            Compression::Gzip => Encoder::Gzip(Chunked::new(
                flate2::GzBuilder::new().write(inner, flate2::Compression::new(level as u32)),
            )),
            Compression::Zstd => Encoder::Zstd(ZstdRing::new(inner, level)?),
        })
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Encoder::Plain(w) => w.write_all(bytes),
            Encoder::Gzip(w) => w.write_all(bytes),
            Encoder::Zstd(w) => w.write_all(bytes),
        }
    }

    fn finish(self) -> io::Result<W> {
        let mut inner = match self {
            Encoder::Plain(w) => w,
            Encoder::Gzip(w) => w.into_inner()?.finish()?,
            Encoder::Zstd(w) => w.finish()?,
        };
        inner.flush()?;
        Ok(inner)
    }
}

/// A compressing [`Write`]r, for callers that sit between the trace text and the file (a
/// statistics pass, for example) and compress behind it. It compresses exactly as the
/// writer's own output does, so the bytes are the same whatever the writes' sizes.
///
/// ```
/// use std::io::Write;
/// use kanata_writer::{CompressWriter, Compression};
/// let mut w = CompressWriter::new(Vec::new(), Compression::Zstd, None)?;
/// w.write_all(b"Kanata\t0004\nC=\t0\n")?;
/// let zst = w.finish()?;
/// assert_eq!(zstd::decode_all(&zst[..])?, b"Kanata\t0004\nC=\t0\n");
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct CompressWriter<W: Write> {
    encoder: Encoder<W>,
}

impl<W: Write> CompressWriter<W> {
    /// Compresses into `inner`; `level` `None` is the compression's default.
    pub fn new(inner: W, compression: Compression, level: Option<i32>) -> io::Result<Self> {
        let level = level.unwrap_or(compression.default_level());
        compression
            .check_level(level)
            .map_err(|err| io::Error::new(io::ErrorKind::InvalidInput, err.to_string()))?;
        Ok(CompressWriter {
            encoder: Encoder::new(inner, compression, level)?,
        })
    }

    /// Ends the compressed stream and gives back the writer.
    pub fn finish(self) -> io::Result<W> {
        self.encoder.finish()
    }
}

impl<W: Write> Write for CompressWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.encoder.write_all(buf)?;
        Ok(buf.len())
    }

    /// Does nothing: flushing a compressor early would change its output; `finish` ends the
    /// stream.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The encoder, inline or on its own thread.
pub(crate) enum Sink<W: Write> {
    Inline(Encoder<W>),
    Background(Background<W>),
}

impl<W: Write> Sink<W> {
    pub(crate) fn inline(inner: W, compression: Compression, level: i32) -> io::Result<Sink<W>> {
        Ok(Sink::Inline(Encoder::new(inner, compression, level)?))
    }

    // The writer's buffer is written in place and kept initialized to its whole length (the
    // text is `buf[..len]`), so the calls below take the text's length, and a buffer they hand
    // back in its place is at least as long.

    /// Hands over `buf[..len]`; the whole of `buf` is free afterwards (possibly a different
    /// allocation of at least the same length).
    #[inline]
    pub(crate) fn consume(&mut self, buf: &mut Vec<u8>, len: usize) -> io::Result<()> {
        match self {
            Sink::Inline(encoder) => encoder.write_all(&buf[..len]),
            Sink::Background(background) => background.send(buf, len),
        }
    }

    /// Hands over `buf[..n]` and moves `buf[n..len]` to the start of `buf`.
    pub(crate) fn consume_prefix(
        &mut self,
        buf: &mut Vec<u8>,
        len: usize,
        n: usize,
    ) -> io::Result<()> {
        if n == len {
            return self.consume(buf, len);
        }
        match self {
            Sink::Inline(encoder) => {
                let result = encoder.write_all(&buf[..n]);
                buf.copy_within(n..len, 0);
                result
            }
            Sink::Background(background) => {
                let mut rest = background.spare(buf.len());
                rest[..len - n].copy_from_slice(&buf[n..len]);
                let full = std::mem::replace(buf, rest);
                background.send_full(full, n)
            }
        }
    }

    /// Writes `buf[..len]`, ends the compressed stream and gives back the writer.
    pub(crate) fn finish(self, buf: &mut Vec<u8>, len: usize) -> io::Result<W> {
        match self {
            Sink::Inline(mut encoder) => {
                encoder.write_all(&buf[..len])?;
                encoder.finish()
            }
            Sink::Background(mut background) => {
                let sent = if len == 0 {
                    Ok(())
                } else {
                    background.send(buf, len)
                };
                let joined = background.join();
                sent.and(joined)
            }
        }
    }
}

impl<W: Write + Send + 'static> Sink<W> {
    pub(crate) fn background(
        inner: W,
        compression: Compression,
        level: i32,
    ) -> io::Result<Sink<W>> {
        let encoder = Encoder::new(inner, compression, level)?;
        Ok(Sink::Background(Background::spawn(encoder)?))
    }
}

/// How many full buffers may wait for the compressor before the simulator thread waits:
/// enough to ride out a slow moment, few enough that memory stays a few buffers.
const QUEUED_BUFFERS: usize = 4;

/// A compressor thread fed whole buffers; emptied buffers come back for reuse, so the
/// simulator thread allocates nothing once the pipeline is primed.
pub(crate) struct Background<W: Write> {
    /// A buffer and the length of its text.
    full: Option<SyncSender<(Vec<u8>, usize)>>,
    empty: Receiver<Vec<u8>>,
    worker: Option<JoinHandle<io::Result<W>>>,
}

impl<W: Write> Background<W> {
    /// A buffer of at least `len` initialized bytes: one the worker has written out, or a new
    /// one.
    fn spare(&mut self, len: usize) -> Vec<u8> {
        let mut spare = self.empty.try_recv().unwrap_or_default();
        if spare.len() < len {
            spare.resize(len, 0);
        }
        spare
    }

    fn send(&mut self, buf: &mut Vec<u8>, len: usize) -> io::Result<()> {
        let spare = self.spare(buf.len());
        let full = std::mem::replace(buf, spare);
        self.send_full(full, len)
    }

    fn send_full(&mut self, full: Vec<u8>, len: usize) -> io::Result<()> {
        let sent = self.full.as_ref().map(|tx| tx.send((full, len)));
        match sent {
            Some(Ok(())) => Ok(()),
            // The worker stopped: its result says why.
            _ => match self.join() {
                Ok(_) => Err(io::Error::other("the compression thread stopped early")),
                Err(err) => Err(err),
            },
        }
    }

    fn join(&mut self) -> io::Result<W> {
        self.full = None; // ends the worker's loop
        let Some(worker) = self.worker.take() else {
            return Err(io::Error::other("the compression thread already stopped"));
        };
        worker
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the compression thread panicked")))
    }
}

impl<W: Write + Send + 'static> Background<W> {
    fn spawn(mut encoder: Encoder<W>) -> io::Result<Background<W>> {
        let (full_tx, full_rx) = mpsc::sync_channel::<(Vec<u8>, usize)>(QUEUED_BUFFERS);
        let (empty_tx, empty_rx) = mpsc::channel::<Vec<u8>>();
        let worker = thread::Builder::new()
            .name("kanata-compress".into())
            .spawn(move || {
                for (buf, len) in full_rx {
                    encoder.write_all(&buf[..len])?;
                    // The writer may be gone already; then the buffer is simply freed.
                    let _ = empty_tx.send(buf);
                }
                encoder.finish()
            })?;
        Ok(Background {
            full: Some(full_tx),
            empty: empty_rx,
            worker: Some(worker),
        })
    }
}

impl<W: Write> Drop for Background<W> {
    fn drop(&mut self) {
        // Never leave the thread running on its own; its result is lost here by design (the
        // writer's `finish` is the place to see it).
        if self.worker.is_some() {
            let _ = self.join();
        }
    }
}

/// Opens `path` for writing, truncating it.
pub(crate) fn create(path: &Path) -> Result<std::fs::File> {
    std::fs::File::create(path).map_err(|err| {
        Error::new(ErrorKind::Io(io::Error::new(
            err.kind(),
            format!("cannot create {}: {err}", path.display()),
        )))
    })
}
