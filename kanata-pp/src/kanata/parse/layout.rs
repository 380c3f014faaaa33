//! The layouts of the lines read lately: where the fields of a line are, found once for all
//! the lines whose bytes are of the same classes.
//!
//! The readers of [`super::stage_line`] find a line's fields from the classes of its
//! bytes: which are TABs, which spaces, which digits. Two lines whose bytes are of the
//! same classes have their fields in the same places, written the same way: only the digits
//! differ, and the few other bytes a reader looks at (a `+` before a number, a leading
//! zero). So the first such line's layout, kept in a slot found by hashing its key (the
//! classes and the length), reads every later one with no search for its fields
//! and no branch on where they are or how they are written. Padded logs pad each field at
//! random, and those branches were mispredicted there: make_padded's log has about a
//! thousand layouts of `S` and `E` lines, and 97 % of its `S` and `E` lines find theirs.

use super::stage_line::{Classes, Number};

/// Slots of a [`Layouts`] (a power of two): 32 KiB of stage lines' layouts, found for 97 %
/// of make_padded's `S` and `E` lines (256 slots: 91 %, 4,096: 99 %, by a model of the
/// table run over the log).
const SLOTS: usize = 1 << 10;

/// Layouts `T` of the lines read lately, by key: one a slot, the last learnt.
pub(super) struct Layouts<T> {
    slots: Box<[Slot<T>]>,
}

#[derive(Clone, Copy)]
struct Slot<T> {
    blanks: u64,
    digits: u64,
    layout: T,
}

/// What a line's layout depends on, the classes of its bytes, and its slot.
pub(super) struct Key {
    /// The line's TABs (low 32 bits) and spaces (high 32 bits), one bit a byte.
    blanks: u64,
    /// The line's digits (low 32 bits) and its length (above).
    digits: u64,
    slot: usize,
}

impl Key {
    /// The key of the line of `len` bytes (at most 32) whose bytes are of `classes`. Only
    /// the line's bytes count: what follows it in the window is not looked at.
    #[inline(always)]
    pub(super) fn new(classes: Classes, len: usize) -> Key {
        let line = ((1u64 << len) - 1) as u32;
        let blanks = u64::from(classes.tab & line) | u64::from(classes.space & line) << 32;
        let digits = u64::from(classes.digit & line) | (len as u64) << 32;
        let mixed = (blanks ^ digits.rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        Key {
            blanks,
            digits,
            slot: (mixed >> (64 - SLOTS.trailing_zeros())) as usize,
        }
    }
}

impl<T: Copy> Layouts<T> {
    /// A table of no layouts, `empty` filling the slots.
    pub(super) fn new(empty: T) -> Layouts<T> {
        // No key has a length of 0: no line finds an empty slot's layout.
        let slot = Slot {
            blanks: 0,
            digits: 0,
            layout: empty,
        };
        Layouts {
            slots: vec![slot; SLOTS].into_boxed_slice(),
        }
    }

    /// The layout of the lines with `key`, if one was learnt and is still in its slot.
    #[inline(always)]
    pub(super) fn get(&self, key: &Key) -> Option<&T> {
        let slot = &self.slots[key.slot];
        ((slot.blanks == key.blanks) & (slot.digits == key.digits)).then_some(&slot.layout)
    }

    /// Learns `layout` for the lines with `key`, in place of the slot's last one.
    pub(super) fn set(&mut self, key: &Key, layout: T) {
        self.slots[key.slot] = Slot {
            blanks: key.blanks,
            digits: key.digits,
            layout,
        };
    }
}

/// Where a number's digits are in a line, and which bytes to look at for what the classes
/// do not tell.
#[derive(Clone, Copy)]
pub(super) struct NumberLayout {
    /// The first digit's byte, and how many digits (1 to 8).
    first: u8,
    digits: u8,
    /// The byte that must be a `+`, or 0 (the command letter, never one) for none.
    plus_at: u8,
    /// The byte whose `0` is a leading zero, or 0 (never one) where a zero would be the
    /// whole number.
    zero_at: u8,
}

impl NumberLayout {
    /// The layout of no number.
    pub(super) const NONE: NumberLayout = NumberLayout {
        first: 0,
        digits: 1,
        plus_at: 0,
        zero_at: 0,
    };

    /// The layout of `number`; `None` where its value is not in the 8 bytes from its first
    /// digit (the window's last bytes, more than 8 digits).
    pub(super) fn of(number: &Number) -> Option<NumberLayout> {
        if number.first > 24 || number.digits > 8 {
            return None;
        }
        Some(NumberLayout {
            first: number.first,
            digits: number.digits,
            plus_at: if number.plus { number.first - 1 } else { 0 },
            zero_at: if number.plus || number.digits > 1 {
                number.first
            } else {
                0
            },
        })
    }

    /// How many digits.
    #[inline(always)]
    pub(super) fn digits(self) -> u8 {
        self.digits
    }

    /// The number's value in `window`.
    #[inline(always)]
    pub(super) fn value(self, window: &[u8; 32]) -> i64 {
        // At most 24 (see `of`), and known to be here: no bounds check (a `% 25` took a
        // division by multiplication).
        let first = usize::from(self.first).min(24);
        let word = window[first..first + 8].try_into().expect("8 bytes");
        super::fast::digits_value(
            u64::from_le_bytes(word) ^ 0x3030_3030_3030_3030,
            usize::from(self.digits),
        )
    }

    /// The value of a number of one digit in `window`.
    #[inline(always)]
    pub(super) fn digit(self, window: &[u8; 32]) -> i64 {
        i64::from(window[usize::from(self.first) % 32].wrapping_sub(b'0'))
    }

    /// Whether the byte before the digits is a `+`, if the layout has one there.
    #[inline(always)]
    pub(super) fn plus_holds(self, window: &[u8; 32]) -> bool {
        (window[usize::from(self.plus_at) % 32] == b'+') | (self.plus_at == 0)
    }

    /// Whether the number has a leading zero in `window`.
    #[inline(always)]
    pub(super) fn leading_zero(self, window: &[u8; 32]) -> bool {
        window[usize::from(self.zero_at) % 32] == b'0'
    }
}
