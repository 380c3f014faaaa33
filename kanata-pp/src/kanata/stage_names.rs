//! The writer's stage handle for each stage name of the input (on the normalizer's thread),
//! or the small number the reading thread gives each name (see `read.rs`).
//!
//! Every `S` and `E` line names its stage, so the lookup runs on most lines of a log. Logs
//! name a handful of stages of a few letters; a name of up to 15 bytes is packed with its
//! length into one `u128` and found in a small open-addressed table, mostly by one compare,
//! before the general map (which hashes the bytes and compares them) is asked.

use kanata_writer::Stage;

use crate::kanata::ids::IdMap;

/// Slots of the table of short names (a power of two).
const SLOTS: usize = 64;

/// Short names the table takes at most: half its slots, so that a probe ends soon.
const SHORT_NAMES: usize = SLOTS / 2;

/// What the names seen so far stand for: a writer's [`Stage`], or a number.
pub(crate) struct StageNames<V = Stage> {
    /// The short names seen (packed by [`pack`]; 0 marks a free slot), each at the first free
    /// slot from the one its packed value hashes to. Never evicted: two names that shared a
    /// slot would otherwise push each other out, and a log that alternates them would miss
    /// on every line.
    short: Vec<(u128, V)>,
    short_names: usize,
    all: IdMap<Box<[u8]>, V>,
}

impl<V> Default for StageNames<V> {
    fn default() -> Self {
        StageNames {
            short: Vec::new(),
            short_names: 0,
            all: IdMap::default(),
        }
    }
}

/// A name of 1 to 15 bytes and its length in one value; 0 for any other name (no short name
/// packs to 0: its length byte is not 0).
#[inline(always)]
fn pack(name: &[u8]) -> u128 {
    if name.is_empty() || name.len() > 15 {
        return 0;
    }
    // Shifted in registers: bytes copied to the stack and read back as one value would
    // stall on store forwarding. Two 64-bit halves, as a shift of a `u128` by a variable
    // amount is several instructions a byte.
    let (low, high) = name.split_at(name.len().min(8));
    let mut low_word = 0u64;
    for (at, &byte) in low.iter().enumerate() {
        low_word |= u64::from(byte) << (8 * at);
    }
    let mut high_word = (name.len() as u64) << 56;
    for (at, &byte) in high.iter().enumerate() {
        high_word |= u64::from(byte) << (8 * at);
    }
    (u128::from(high_word) << 64) | u128::from(low_word)
}

#[inline]
fn slot(packed: u128) -> usize {
    let folded = (packed as u64) ^ ((packed >> 64) as u64).rotate_left(29);
    (folded.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - SLOTS.trailing_zeros())) as usize
}

impl<V: Copy> StageNames<V> {
    /// What `name` stands for, if it was inserted.
    #[inline(always)]
    pub(crate) fn get(&mut self, name: &[u8]) -> Option<V> {
        let packed = pack(name);
        if packed != 0 && !self.short.is_empty() {
            let mut at = slot(packed);
            loop {
                let (key, stage) = self.short[at];
                if key == packed {
                    return Some(stage);
                }
                if key == 0 {
                    break;
                }
                at = (at + 1) % SLOTS;
            }
        }
        // A long name, a new one, or a short one the full table could not take.
        self.all.get(name).copied()
    }

    /// `name` stands for `stage`.
    pub(crate) fn insert(&mut self, name: &[u8], stage: V) {
        self.all.insert(name.into(), stage);
        let packed = pack(name);
        if packed == 0 || self.short_names >= SHORT_NAMES {
            return;
        }
        if self.short.is_empty() {
            self.short = vec![(0, stage); SLOTS];
        }
        let mut at = slot(packed);
        while self.short[at].0 != 0 {
            if self.short[at].0 == packed {
                self.short[at].1 = stage;
                return;
            }
            at = (at + 1) % SLOTS;
        }
        self.short[at] = (packed, stage);
        self.short_names += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_whatever_their_length_and_however_their_slots_collide() {
        let mut writer = kanata_writer::Writer::new(Vec::new());
        let mut names = StageNames::default();
        let all: Vec<String> = (0..300)
            .map(|i| match i % 3 {
                0 => format!("S{i}"),
                1 => format!("stage-number-{i:03}"),
                _ => "x".repeat(i % 20 + 1) + &i.to_string(),
            })
            .collect();
        for name in &all {
            assert_eq!(names.get(name.as_bytes()), None, "{name}");
            let stage = writer.stage(name).unwrap();
            names.insert(name.as_bytes(), stage);
        }
        for _ in 0..2 {
            for name in &all {
                let stage = names.get(name.as_bytes()).expect(name);
                assert_eq!(writer.stage_name(stage), Some(name.as_str()));
            }
        }
        // Same bytes, other length: not the same name.
        assert_eq!(names.get(b"S0\0"), None);
        assert_eq!(names.get(b"S"), None);
    }
}
