//! zstd compression that keeps its window contiguous.
//!
//! zstd's streaming encoder copies its input into a buffer one window plus one block long
//! and wraps around at the end of it. After the wrap, the window is in two pieces, and zstd
//! compresses with its slower two-segment ("external dictionary") match finder until the new
//! piece is a whole window long, which in a buffer that short is almost never: nearly every
//! block of a long trace went through the slow finder. Here the input is copied into a ring
//! four windows long instead, and handed to zstd's buffer-less interface one block at a
//! time, so the window is in two pieces only for the first window after each wrap. At level
//! 3, Kanata text compresses 1–4 % faster (8 % on the generated text of the bench) and
//! 0.3–0.6 % smaller; inside `kanata-pp`, where the compressor sets the pace of a `.zst`
//! conversion, that is most of the gain (`cargo bench -p kanata-writer --bench zstd`,
//! BENCHMARKS.md).
//!
//! The buffer-less interface is in zstd's experimental section, reached through `zstd-sys`
//! (the crate `zstd` is built on), and deprecated: should a zstd release drop it, the
//! `zstd` crate's streaming encoder takes this one's place in `sink.rs` (the output stays a
//! valid frame, a little larger). It is the only unsafe code in the crate: each call below
//! states what it relies on.
//!
//! The output is one frame with a checksum and no content size, made of blocks of exactly
//! [`BLOCK`] bytes at fixed offsets of the stream, so the bytes depend on the text and the
//! level only, never on how the text was split into writes.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::io::{self, Write};
use std::ptr::NonNull;

use zstd_sys as sys;

/// Bytes per block: zstd's largest, and the size its streaming encoder uses.
const BLOCK: usize = 128 * 1024;

/// Compressed bytes gathered before they are written out: one write per megabyte rather
/// than one per block.
const WRITE_AT: usize = 1 << 20;

/// The ring's length for a window: four windows (so that three blocks in four are
/// compressed with the window in one piece; eight windows measured no faster), at most
/// 8 MiB, and never less than a window and a block, so that the whole window is there to
/// match against. (A shorter ring would still be correct: zstd forgets the history a new
/// block overwrites.)
fn ring_len(window: usize) -> usize {
    let len = (4 * window).min(8 << 20).max(window + BLOCK);
    len.div_ceil(BLOCK) * BLOCK
}

/// A zstd compression context, freed on drop.
struct Context(NonNull<sys::ZSTD_CCtx>);

// SAFETY: a ZSTD_CCtx has no thread affinity; it may move between threads as long as one
// thread uses it at a time, which `&mut` guarantees.
unsafe impl Send for Context {}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: the pointer came from ZSTD_createCCtx and is freed only here.
        unsafe { sys::ZSTD_freeCCtx(self.0.as_ptr()) };
    }
}

/// Turns a zstd return code into a result.
fn check(code: usize) -> io::Result<usize> {
    // SAFETY: both functions take any value; ZSTD_getErrorName returns a static string.
    unsafe {
        if sys::ZSTD_isError(code) == 0 {
            return Ok(code);
        }
        let name = CStr::from_ptr(sys::ZSTD_getErrorName(code));
        Err(io::Error::other(format!(
            "zstd: {}",
            name.to_string_lossy()
        )))
    }
}

/// A zstd encoder writing one frame into `W`.
pub(crate) struct ZstdRing<W> {
    context: Context,
    /// Never reallocated: zstd keeps pointers into the last window of it between calls.
    ring: Box<[u8]>,
    /// Where the block being filled starts in `ring`.
    start: usize,
    /// How much of that block is filled.
    held: usize,
    /// Compressed blocks not written out yet (`compressed[..filled]`), and room for one
    /// more with the frame header and checksum.
    compressed: Box<[u8]>,
    filled: usize,
    inner: W,
}

impl<W: Write> ZstdRing<W> {
    /// Starts a frame at `level` (any of zstd's levels).
    pub(crate) fn new(inner: W, level: i32) -> io::Result<ZstdRing<W>> {
        ZstdRing::with_ring(inner, level, ring_len)
    }

    /// [`new`](Self::new) with the ring's length for a window given by `ring_len` (a test
    /// tries one shorter than the window).
    fn with_ring(inner: W, level: i32, ring_len: fn(usize) -> usize) -> io::Result<ZstdRing<W>> {
        // SAFETY: ZSTD_createCCtx takes no arguments; a null result is handled.
        let context = NonNull::new(unsafe { sys::ZSTD_createCCtx() })
            .map(Context)
            .ok_or_else(|| io::Error::other("zstd: cannot allocate a compression context"))?;
        // SAFETY: plain value computation. A size of 0 means unknown: the parameters are the
        // ones `zstd -<level>` takes for a large input.
        let mut params = unsafe { sys::ZSTD_getParams(level, 0, 0) };
        params.fParams.checksumFlag = 1;
        params.fParams.contentSizeFlag = 0;
        // SAFETY: the context is valid, there is no dictionary (null, 0), and the size is
        // ZSTD_CONTENTSIZE_UNKNOWN.
        check(unsafe {
            sys::ZSTD_compressBegin_advanced(
                context.0.as_ptr(),
                std::ptr::null(),
                0,
                params,
                sys::ZSTD_CONTENTSIZE_UNKNOWN as u64,
            )
        })?;
        // SAFETY: plain value computation.
        let bound = unsafe { sys::ZSTD_compressBound(BLOCK) };
        Ok(ZstdRing {
            context,
            ring: vec![0; ring_len(1 << params.cParams.windowLog)].into_boxed_slice(),
            start: 0,
            held: 0,
            // A frame header is at most 18 bytes, the checksum 4, an empty last block 3.
            compressed: vec![0; WRITE_AT + bound + 32].into_boxed_slice(),
            filled: 0,
            inner,
        })
    }

    /// Compresses `bytes`, a block at a time as blocks fill.
    pub(crate) fn write_all(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let take = bytes.len().min(BLOCK - self.held);
            let at = self.start + self.held;
            self.ring[at..at + take].copy_from_slice(&bytes[..take]);
            self.held += take;
            bytes = &bytes[take..];
            if self.held == BLOCK {
                self.compress_block(false)?;
            }
        }
        Ok(())
    }

    /// Compresses the block being filled (the last one of the frame when `last`), and writes
    /// out what is gathered once that is a megabyte, or the frame ends.
    fn compress_block(&mut self, last: bool) -> io::Result<()> {
        let block = &self.ring[self.start..self.start + self.held];
        let room = &mut self.compressed[self.filled..];
        let (context, src, dst, capacity) = (
            self.context.0.as_ptr(),
            block.as_ptr().cast(),
            room.as_mut_ptr().cast(),
            room.len(),
        );
        // SAFETY: `src` is `held` readable bytes; `dst` is `capacity` writable bytes, room
        // for a compressed block of that size with the frame header and checksum
        // (ZSTD_compressBound plus 32: `filled` stays under WRITE_AT). The earlier blocks
        // zstd keeps pointers to are where it saw them (the ring is never reallocated) and
        // unchanged, except where `src` itself lies: zstd detects that overlap and forgets
        // that part of its history (the buffer-less interface's documented behaviour).
        let written = check(unsafe {
            if last {
                sys::ZSTD_compressEnd(context, dst, capacity, src, self.held)
            } else {
                sys::ZSTD_compressContinue(context, dst, capacity, src, self.held)
            }
        })?;
        self.filled += written;
        if self.filled >= WRITE_AT || last {
            self.inner.write_all(&self.compressed[..self.filled])?;
            self.filled = 0;
        }
        self.start += self.held;
        self.held = 0;
        if self.start + BLOCK > self.ring.len() {
            self.start = 0;
        }
        Ok(())
    }

    /// Ends the frame (its last block and checksum) and gives back the writer.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        self.compress_block(true)?;
        Ok(self.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text like a trace's: repetitive, with numbers that change, and longer than the ring
    /// at level 1 (2 MiB) so that it wraps around several times.
    fn trace_like(len: usize) -> Vec<u8> {
        let mut text = Vec::with_capacity(len + 64);
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut id = 0u64;
        while text.len() < len {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let stage = ["F", "D", "Rn", "X", "Cm"][(state % 5) as usize];
            text.extend_from_slice(format!("S\t{id}\t0\t{stage}\nC\t{}\n", state % 7).as_bytes());
            id += state % 3;
        }
        text.truncate(len);
        text
    }

    fn compress(text: &[u8], level: i32, write_len: usize) -> Vec<u8> {
        let mut ring = ZstdRing::new(Vec::new(), level).unwrap();
        for piece in text.chunks(write_len) {
            ring.write_all(piece).unwrap();
        }
        ring.finish().unwrap()
    }

    #[test]
    fn the_frame_decodes_to_the_text_across_ring_wraps() {
        let text = trace_like(5 << 20);
        assert!(text.len() > 2 * ring_len(1 << 19), "the ring must wrap");
        let frame = compress(&text, 1, 1 << 20);
        assert_eq!(zstd::decode_all(&frame[..]).unwrap(), text);
        assert!(frame.len() < text.len() / 4, "compressed: {}", frame.len());
    }

    fn compress_with_ring(text: &[u8], level: i32, ring_len: fn(usize) -> usize) -> Vec<u8> {
        let mut ring = ZstdRing::with_ring(Vec::new(), level, ring_len).unwrap();
        for piece in text.chunks(100_000) {
            ring.write_all(piece).unwrap();
        }
        ring.finish().unwrap()
    }

    #[test]
    fn a_ring_shorter_than_the_window_still_makes_a_valid_frame() {
        // zstd sees where each block is and forgets the history a block overwrites, so the
        // frame is right whatever the ring's length; the length only decides how much of the
        // window is there to match against.
        let text = trace_like(3 << 20);
        let frame = compress_with_ring(&text, 3, |_| 2 * BLOCK);
        assert_eq!(zstd::decode_all(&frame[..]).unwrap(), text);
    }

    #[test]
    fn the_bytes_do_not_depend_on_how_the_text_was_split_into_writes() {
        let text = trace_like(3 << 20);
        let whole = compress(&text, 3, text.len());
        assert_eq!(compress(&text, 3, 1000), whole);
        assert_eq!(compress(&text, 3, BLOCK + 1), whole);
        assert_eq!(zstd::decode_all(&whole[..]).unwrap(), text);
    }

    #[test]
    fn empty_and_tiny_inputs_are_whole_frames_with_a_checksum() {
        for text in [&b""[..], b"Kanata\t0004\n"] {
            let frame = compress(text, 3, 7);
            assert_eq!(zstd::decode_all(&frame[..]).unwrap(), text);
            // Frame header descriptor: bit 2 is the checksum flag.
            assert_eq!(frame[4] & 0b100, 0b100);
        }
    }

    #[test]
    fn the_ring_is_longer_than_a_window_and_a_block_at_every_level() {
        for level in [-5, 1, 3, 9, 19, 22] {
            // SAFETY: plain value computation.
            let window = 1usize
                << unsafe { sys::ZSTD_getParams(level, 0, 0) }
                    .cParams
                    .windowLog;
            let len = ring_len(window);
            assert!(
                len >= window + BLOCK && len % BLOCK == 0,
                "level {level}: {len}"
            );
        }
    }
}
