//! Records packed while they wait in the reorder window.
//!
//! A record waits a whole window (16,384 instructions by default) between being read and
//! being written. As a `Record` it takes about 700 bytes in scattered allocations, so the
//! waiting records outgrow the processor's cache and each is a string of cache misses when it
//! is written (`--window 2048` converted twice as fast). Packed, a record is its numbers as
//! variable-length deltas (those that follow from others only flagged: see `Record::pack`)
//! and its texts (labels, notes, register keys), about 126 bytes for a plain one, appended
//! to a chunk in the order records finish, which is nearly the order they are written: the
//! chunks are read back as a stream. A packed record is unpacked into a spare `Record` when
//! it is written, so everything after that is as before. (A record with several store ticks
//! or more than eight stages, which are rare, waits unpacked.) Most records are packed by
//! the reading thread (`read`), in a batch's own buffer, and copied here whole.

/// Where a packed record is: its chunk and its offset there. The bytes start with their
/// length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PackedRef {
    chunk: u32,
    offset: u32,
}

/// A chunk of packed records and how many of them are still waiting.
#[derive(Debug, Default)]
struct Chunk {
    bytes: Vec<u8>,
    live: u32,
}

/// Bytes per chunk: a chunk is freed when its last record is written. (4 KiB chunks measured
/// 3-4 % slower; what waiting records keep depends on how long they wait, not on this.)
const CHUNK: usize = 64 * 1024;

/// The packed records, in chunks reused once empty.
#[derive(Debug, Default)]
pub(crate) struct Arena {
    chunks: Vec<Chunk>,
    free: Vec<u32>,
    /// The chunk records are appended to, if any.
    current: Option<u32>,
}

impl Arena {
    /// Whether the chunks in use hold more than `bytes`. A record that waits long keeps its
    /// chunk, and every chunk filled while it waits, in use: past a budget, the converter
    /// stops packing until chunks come free, so that the chunks never hold more than a few
    /// windows' worth of records.
    pub(crate) fn holds_more_than(&self, bytes: usize) -> bool {
        (self.chunks.len() - self.free.len()) * CHUNK > bytes
    }

    /// Keeps `bytes` (one packed record) and says where.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> PackedRef {
        let needed = bytes.len() + 4;
        let chunk = match self.current {
            Some(c) if self.chunks[c as usize].bytes.len() + needed <= CHUNK => c,
            // A record larger than a chunk gets a chunk of its own.
            Some(c) if self.chunks[c as usize].bytes.is_empty() => c,
            _ => {
                if let Some(c) = self.current {
                    self.retire_if_empty(c);
                }
                let c = match self.free.pop() {
                    Some(c) => c,
                    None => {
                        self.chunks.push(Chunk {
                            bytes: Vec::with_capacity(CHUNK),
                            live: 0,
                        });
                        (self.chunks.len() - 1) as u32
                    }
                };
                self.current = Some(c);
                c
            }
        };
        let at = &mut self.chunks[chunk as usize];
        let offset = at.bytes.len() as u32;
        at.bytes
            .extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        at.bytes.extend_from_slice(bytes);
        at.live += 1;
        PackedRef { chunk, offset }
    }

    /// The bytes of a packed record.
    pub(crate) fn get(&self, at: PackedRef) -> &[u8] {
        let bytes = &self.chunks[at.chunk as usize].bytes[at.offset as usize..];
        let len = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as usize;
        &bytes[4..4 + len]
    }

    /// Forgets a packed record; its chunk is reused once all of its records are.
    pub(crate) fn release(&mut self, at: PackedRef) {
        let chunk = &mut self.chunks[at.chunk as usize];
        chunk.live -= 1;
        if self.current != Some(at.chunk) {
            self.retire_if_empty(at.chunk);
        }
    }

    fn retire_if_empty(&mut self, c: u32) {
        let chunk = &mut self.chunks[c as usize];
        if chunk.live == 0 {
            chunk.bytes.clear();
            if self.current == Some(c) {
                self.current = None;
            }
            self.free.push(c);
        }
    }
}

/// Appends `value` in LEB128.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Reads one byte from the front of `bytes`.
pub(crate) fn take_byte(bytes: &mut &[u8]) -> u8 {
    let (&byte, rest) = bytes.split_first().expect("a packed record is whole");
    *bytes = rest;
    byte
}

/// Reads a LEB128 value from the front of `bytes`.
pub(crate) fn take_varint(bytes: &mut &[u8]) -> u64 {
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let byte = take_byte(bytes);
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return value;
        }
        shift += 7;
    }
}

/// Appends `tick` as its distance from `base`, zigzag-coded (any two ticks, either order).
pub(crate) fn put_tick(out: &mut Vec<u8>, base: u64, tick: u64) {
    let delta = tick.wrapping_sub(base) as i64;
    put_varint(out, ((delta << 1) ^ (delta >> 63)) as u64);
}

/// Reads a tick written by [`put_tick`].
pub(crate) fn take_tick(bytes: &mut &[u8], base: u64) -> u64 {
    let zigzag = take_varint(bytes);
    let delta = (zigzag >> 1) as i64 ^ -((zigzag & 1) as i64);
    base.wrapping_add(delta as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_ticks_come_back_whatever_their_size_or_order() {
        let values = [0, 1, 127, 128, 300, 1 << 35, u64::MAX - 1, u64::MAX];
        let mut out = Vec::new();
        for &v in &values {
            put_varint(&mut out, v);
            for &base in &values {
                put_tick(&mut out, base, v);
            }
        }
        let mut bytes = &out[..];
        for &v in &values {
            assert_eq!(take_varint(&mut bytes), v);
            for &base in &values {
                assert_eq!(take_tick(&mut bytes, base), v, "{v} from {base}");
            }
        }
        assert!(bytes.is_empty());
    }

    #[test]
    fn one_record_left_keeps_its_chunk_and_the_arena_says_how_much_is_held() {
        let mut arena = Arena::default();
        // About 65 records a chunk, 2,000 records: 31 chunks.
        let record = vec![1u8; 1000];
        let refs: Vec<PackedRef> = (0..2000).map(|_| arena.push(&record)).collect();
        assert!(arena.holds_more_than(20 * CHUNK));
        // All but one record in 50 released: each chunk still holds one.
        let mut kept = Vec::new();
        for (i, r) in refs.into_iter().enumerate() {
            if i % 50 == 0 {
                kept.push(r);
            } else {
                arena.release(r);
            }
        }
        assert!(arena.holds_more_than(20 * CHUNK));
        for r in kept {
            arena.release(r);
        }
        assert!(
            !arena.holds_more_than(CHUNK),
            "only the current chunk is left"
        );
    }

    #[test]
    fn chunks_are_reused_once_their_records_are_all_released() {
        let mut arena = Arena::default();
        let record = vec![7u8; 1000];
        let mut refs: Vec<PackedRef> = (0..200).map(|_| arena.push(&record)).collect();
        assert!(arena.chunks.len() >= 3);
        for r in &refs {
            assert_eq!(arena.get(*r), &record[..]);
        }
        // Released out of order, as records written out of order are.
        refs.swap(3, 150);
        for r in refs.drain(..) {
            arena.release(r);
        }
        let chunks = arena.chunks.len();
        for _ in 0..200 {
            let r = arena.push(&record);
            assert_eq!(arena.get(r), &record[..]);
        }
        assert_eq!(
            arena.chunks.len(),
            chunks,
            "no new chunk while old ones are free"
        );
        // One record larger than a chunk.
        let big = vec![1u8; 3 * CHUNK];
        let r = arena.push(&big);
        assert_eq!(arena.get(r), &big[..]);
    }
}
