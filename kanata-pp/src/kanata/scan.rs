//! Bytes found 16 and 64 at a time, in the short stretches a Kanata log is made of.
//!
//! A block holds tens of thousands of lines of about 20 bytes, and a label is a few dozen
//! bytes. Searching each with `memchr` costs a call, its dispatch, its setup and its tail
//! handling, for a search of a few bytes: more than the search itself (measured: 155
//! instructions a label, 40 a line end). Here bytes are compared 16 at a time with SSE2,
//! which every x86-64 has, through `safe_arch` (the workspace forbids `unsafe`), and the
//! line ends of a block 64 bytes at a time into a mask, each line end then one bit to take
//! out of it; a stretch shorter than 16 bytes as two words of 8 that may overlap (a byte at
//! a time under 8). Other architectures compare a byte at a time.

/// The positions of the `\n`s in a block, in order.
#[derive(Clone)]
pub(crate) struct LineEnds<'a> {
    block: &'a [u8],
    /// Where the 64 bytes of `mask` start; `block.len()` once they are all read.
    chunk: usize,
    /// The line ends left in those bytes, one bit each (bit 0 for the byte at `chunk`).
    mask: u64,
}

impl<'a> LineEnds<'a> {
    /// The line ends of `block`.
    pub(crate) fn new(block: &'a [u8]) -> LineEnds<'a> {
        LineEnds {
            block,
            chunk: 0,
            mask: newlines(block),
        }
    }
}

impl LineEnds<'_> {
    /// The next line end, left for [`next`](Iterator::next) or [`take_peeked`](Self::take_peeked) to take.
    #[inline(always)]
    pub(crate) fn peek(&mut self) -> Option<usize> {
        while self.mask == 0 {
            self.chunk += 64;
            if self.chunk >= self.block.len() {
                self.chunk = self.block.len();
                return None;
            }
            self.mask = newlines(&self.block[self.chunk..]);
        }
        Some(self.chunk + self.mask.trailing_zeros() as usize)
    }

    /// Takes the line end [`peek`](Self::peek) found.
    #[inline(always)]
    pub(crate) fn take_peeked(&mut self) {
        self.mask &= self.mask.wrapping_sub(1);
    }
}

impl Iterator for LineEnds<'_> {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        let end = self.peek()?;
        self.take_peeked();
        Some(end)
    }
}

/// The `\n`s among the first 64 bytes of `bytes` (all of them if fewer), one bit each.
#[inline(always)]
fn newlines(bytes: &[u8]) -> u64 {
    match bytes.first_chunk::<64>() {
        Some(chunk) => newlines_in_64(chunk),
        None => bytes
            .iter()
            .enumerate()
            .fold(0, |mask, (at, &byte)| mask | u64::from(byte == b'\n') << at),
    }
}

/// The `\n`s among 64 bytes, one bit each.
#[inline(always)]
fn newlines_in_64(chunk: &[u8; 64]) -> u64 {
    let mut mask = 0;
    for (at, sixteen) in chunk.chunks_exact(16).enumerate() {
        let found = matches_in_16(sixteen.try_into().expect("16 bytes"), b'\n');
        mask |= u64::from(found) << (16 * at);
    }
    mask
}

/// Whether `bytes` holds `byte`: for the few dozen bytes of a field, where `memchr`'s call
/// costs more than the search.
#[inline(always)]
pub(crate) fn contains(bytes: &[u8], byte: u8) -> bool {
    holds(bytes, [byte])
}

/// Whether `line` holds `byte` past its first 32 bytes (which its caller has looked at from
/// their masks). When at most 16 bytes follow them, as most labels that go past 32 bytes
/// do, one comparison of the line's last 16 bytes, the bits of the first 32 shifted out:
/// [`contains`] went a byte at a time under 8 bytes and took a branch on the length, both
/// mispredicted as label lengths vary.
#[inline(always)]
pub(crate) fn contains_past_32(line: &[u8], byte: u8) -> bool {
    match line.last_chunk::<16>() {
        Some(last) if (33..=48).contains(&line.len()) => {
            u32::from(matches_in_16(last, byte)) >> (48 - line.len()) != 0
        }
        _ => contains(line.get(32..).unwrap_or_default(), byte),
    }
}

/// Whether `bytes` holds `one` or `other`: for a line, where `memchr2`'s call costs more than
/// the search (88 instructions a line of 20 bytes, measured).
#[inline(always)]
pub(crate) fn contains_either(bytes: &[u8], one: u8, other: u8) -> bool {
    holds(bytes, [one, other])
}

/// Whether `bytes` holds one of `needles`: 16 bytes at a time, the last 16 overlapping the
/// ones before; fewer than 16, as two words of 8 that may overlap; fewer than 8, a byte at a
/// time.
#[inline(always)]
fn holds<const N: usize>(bytes: &[u8], needles: [u8; N]) -> bool {
    let in_16 = |sixteen: &[u8]| {
        let sixteen = sixteen.try_into().expect("16 bytes");
        needles
            .iter()
            .fold(0, |found, &needle| found | matches_in_16(sixteen, needle))
            != 0
    };
    let mut sixteens = bytes.chunks_exact(16);
    for sixteen in &mut sixteens {
        if in_16(sixteen) {
            return true;
        }
    }
    match (
        bytes.last_chunk::<16>(),
        bytes.first_chunk::<8>(),
        bytes.last_chunk::<8>(),
    ) {
        (Some(last), _, _) => !sixteens.remainder().is_empty() && in_16(last),
        (None, Some(first), Some(last)) => {
            let in_8 = |eight: &[u8; 8]| needles.iter().any(|&needle| word_holds(eight, needle));
            in_8(first) || in_8(last)
        }
        _ => bytes.iter().any(|byte| needles.contains(byte)),
    }
}

/// Whether the 8 bytes of `eight` hold `byte`: a word with a zero byte where they do, found
/// by the borrow subtracting one from each byte leaves in its top bit.
#[inline(always)]
fn word_holds(eight: &[u8; 8], byte: u8) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let zero_where_found = u64::from_le_bytes(*eight) ^ (ONES * u64::from(byte));
    zero_where_found.wrapping_sub(ONES) & !zero_where_found & (ONES << 7) != 0
}

/// The bytes equal to `byte` among 16, one bit each: one SSE2 comparison.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn matches_in_16(sixteen: &[u8; 16], byte: u8) -> u16 {
    use safe_arch::{
        cmp_eq_mask_i8_m128i, load_unaligned_m128i, move_mask_i8_m128i, set_splat_i8_m128i,
    };
    let bytes = load_unaligned_m128i(sixteen);
    move_mask_i8_m128i(cmp_eq_mask_i8_m128i(bytes, set_splat_i8_m128i(byte as i8))) as u16
}

/// The bytes equal to `byte` among 16, one bit each.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn matches_in_16(sixteen: &[u8; 16], byte: u8) -> u16 {
    sixteen.iter().enumerate().fold(0, |mask, (at, &found)| {
        mask | u16::from(found == byte) << at
    })
}

/// The bytes of at most `byte` (unsigned) among 16, one bit each: SSE2, the smaller of
/// each byte and `byte` compared with the byte.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn at_most_in_16(sixteen: &[u8; 16], byte: u8) -> u16 {
    use safe_arch::{
        cmp_eq_mask_i8_m128i, load_unaligned_m128i, min_u8_m128i, move_mask_i8_m128i,
        set_splat_i8_m128i,
    };
    let bytes = load_unaligned_m128i(sixteen);
    let smaller = min_u8_m128i(bytes, set_splat_i8_m128i(byte as i8));
    move_mask_i8_m128i(cmp_eq_mask_i8_m128i(smaller, bytes)) as u16
}

/// The bytes of at most `byte` among 16, one bit each.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn at_most_in_16(sixteen: &[u8; 16], byte: u8) -> u16 {
    sixteen.iter().enumerate().fold(0, |mask, (at, &found)| {
        mask | u16::from(found <= byte) << at
    })
}

/// The decimal digits among 16 bytes, one bit each: SSE2, the digits moved to the lowest ten
/// signed bytes (-128 to -119) and compared once.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn digits_in_16(sixteen: &[u8; 16]) -> u16 {
    use safe_arch::{
        add_i8_m128i, cmp_lt_mask_i8_m128i, load_unaligned_m128i, move_mask_i8_m128i,
        set_splat_i8_m128i,
    };
    let bytes = load_unaligned_m128i(sixteen);
    let moved = add_i8_m128i(bytes, set_splat_i8_m128i((0x80u8 - b'0') as i8));
    move_mask_i8_m128i(cmp_lt_mask_i8_m128i(moved, set_splat_i8_m128i(-118))) as u16
}

/// The decimal digits among 16 bytes, one bit each.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn digits_in_16(sixteen: &[u8; 16]) -> u16 {
    sixteen.iter().enumerate().fold(0, |mask, (at, &found)| {
        mask | u16::from(found.is_ascii_digit()) << at
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_end_is_found_as_memchr_finds_it() {
        // Line ends at every place of a chunk, at its edges, and blocks of every length
        // around a few chunks.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for len in 0..300 {
            for _ in 0..20 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let block: Vec<u8> = (0..len)
                    .map(|at| {
                        let pick = (state.rotate_left(at as u32 % 64) >> 3) as u8;
                        if pick % 5 == 0 {
                            b'\n'
                        } else {
                            pick
                        }
                    })
                    .collect();
                let expected: Vec<usize> = memchr::memchr_iter(b'\n', &block).collect();
                assert_eq!(LineEnds::new(&block).collect::<Vec<_>>(), expected);
            }
        }
        assert_eq!(LineEnds::new(&[b'\n'; 130]).count(), 130);
        assert_eq!(LineEnds::new(b"").count(), 0);
    }

    #[test]
    fn bytes_at_most_a_bound_are_found_as_a_comparison_finds_them() {
        // Every byte value at every place, against bounds at the edges of the signed and
        // unsigned orders.
        for bound in [0u8, b' ', 0x7f, 0x80, 0xff] {
            for value in 0..=255u8 {
                for at in 0..16 {
                    let mut sixteen = [bound.wrapping_add(1); 16];
                    sixteen[at] = value;
                    let expected = sixteen.iter().enumerate().fold(0u16, |mask, (at, &byte)| {
                        mask | u16::from(byte <= bound) << at
                    });
                    assert_eq!(at_most_in_16(&sixteen, bound), expected, "{bound} {value}");
                }
            }
        }
    }

    #[test]
    fn a_byte_is_found_at_every_place_of_every_length() {
        // Around other bytes, ASCII or not (a byte over 0x80 must not look like a match).
        for background in [b'a', 0xc3, 0x80, 0x0b] {
            for len in 0..80 {
                let mut bytes = vec![background; len];
                assert!(!contains(&bytes, b'\t'), "{len}");
                assert!(!contains_either(&bytes, b'\t', b'/'), "{len}");
                for at in 0..len {
                    for byte in [b'\t', b'/'] {
                        bytes[at] = byte;
                        assert_eq!(contains(&bytes, b'\t'), byte == b'\t', "{len} {at}");
                        assert!(contains_either(&bytes, b'\t', b'/'), "{len} {at}");
                        assert!(contains_either(&bytes, b'/', b'\t'), "{len} {at}");
                        assert!(!contains(&bytes, b'\n'), "{len} {at}");
                        assert!(!contains_either(&bytes, b'\n', b'b'), "{len} {at}");
                    }
                    bytes[at] = background;
                }
            }
        }
    }

    #[test]
    fn a_byte_past_the_first_32_is_found_and_none_before_them() {
        // Every length around the one comparison's (33 to 48 bytes), the byte at every
        // place: found past the first 32 bytes only.
        for len in 0..90 {
            let mut line = vec![b'a'; len];
            assert!(!contains_past_32(&line, b'\t'), "{len}");
            for at in 0..len {
                line[at] = b'\t';
                assert_eq!(contains_past_32(&line, b'\t'), at >= 32, "{len} {at}");
                line[at] = b'a';
            }
        }
    }
}
