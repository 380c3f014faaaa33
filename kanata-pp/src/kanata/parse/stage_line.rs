//! `S` and `E` lines, most lines of a log, read from the classes of their bytes: the first 32
//! bytes of the line are compared with a TAB, a space, the digits and a `/` 16 at a time,
//! each class becomes a mask with a bit a byte, and the fields are found from the masks by
//! bit counts instead of a byte at a time.
//!
//! [`StageLayouts::read`] takes the lines [`super::fast::parse_into`] reads as `S` or `E`,
//! with TAB-separated fields or fields separated by spaces (Q19), padded with spaces or
//! not, numbers written plain or with a `+` or leading zeros (Q1, Q20), and gives exactly
//! what it gives, repairs included; anything rarer (other white space at the ends of the
//! name, a `/`, a line longer than 32 bytes) is left to it.

use super::fast::{Odd, Q1, Q19, Q20};
use super::is_space;
use super::layout::{Key, Layouts, NumberLayout};
use crate::kanata::scan::{at_most_in_16, digits_in_16, matches_in_16};

/// The bytes of a line that are of each class the fields are told by, one bit each (bit 0
/// for the line's first byte).
#[derive(Clone, Copy)]
pub(super) struct Classes {
    pub(super) tab: u32,
    pub(super) space: u32,
    pub(super) digit: u32,
    pub(super) slash: u32,
}

/// An `S` or `E` line as [`StageLayouts::read`] found it.
pub(crate) struct StageLine {
    /// `E`, not `S`.
    pub(crate) end: bool,
    pub(crate) id: i64,
    pub(crate) lane: u32,
    /// Where the name is in the line, trimmed of spaces.
    pub(crate) name_start: usize,
    pub(crate) name_end: usize,
    /// The repairs the line needs: [`Q1`] for padding or trailing fields, or none.
    pub(crate) odd: Odd,
}

/// `S` and `E` among the bytes 64 to 127, one bit each.
const STAGE_LETTER_BITS: u64 = 1 << (b'S' - 64) | 1 << (b'E' - 64);

/// Whether `letter` is `S` or `E`, found by a bit test and by no comparison with either:
/// any branch on the answer is taken alike for both (see [`StageLayouts::read`]).
#[inline(always)]
fn is_stage_letter(letter: u8) -> bool {
    (letter >> 6 == 1) & (STAGE_LETTER_BITS >> (letter & 63) & 1 != 0)
}

/// Whether `bytes` starts as a stage line does, with an `S` or an `E` and a TAB or a space:
/// no branch on which letter or separator (see [`StageLayouts::read`]).
#[inline(always)]
pub(crate) fn starts(bytes: &[u8]) -> bool {
    match bytes {
        [letter, separator, ..] => {
            is_stage_letter(*letter) & ((*separator == b'\t') | (*separator == b' '))
        }
        _ => false,
    }
}

/// The reader of `S` and `E` lines from the masks of their bytes, with the layouts of the
/// lines read lately (see [`Layouts`]): most of the work skipped for a line whose TABs,
/// spaces and digits are the bytes of one read before.
///
/// Besides the classes of its bytes, what the readers of the fields make of a line depends
/// on the bytes of its numbers ([`NumberLayout`]) and on the name's first and last bytes:
/// white space other than a space or a TAB there (a CR, say) sends the line to the
/// field-by-field reader.
/// make_padded's log has about a thousand layouts of `S` and `E` lines among its 444 K.
pub(crate) struct StageLayouts(Layouts<StageLayout>);

/// Where the fields of an `S` or `E` line are, for the lines with its key.
#[derive(Clone, Copy)]
struct StageLayout {
    id: NumberLayout,
    lane: NumberLayout,
    name_start: u8,
    name_end: u8,
    /// The repairs every line with the key needs; a leading zero adds Q1 for the id, Q20
    /// for the lane.
    odd: Odd,
}

impl StageLayout {
    /// The layout of the line `fields` were read from; `None` for one whose numbers it
    /// cannot read.
    fn of(fields: &Fields) -> Option<StageLayout> {
        Some(StageLayout {
            id: NumberLayout::of(&fields.id)?,
            lane: NumberLayout::of(&fields.lane)?,
            name_start: fields.line.name_start as u8,
            name_end: fields.line.name_end as u8,
            odd: fields.odd_of_classes,
        })
    }

    /// The stage line in `window`, whose key is this layout's; `None` where one of the
    /// bytes the layout does not tell is not what the readers of the fields need (then
    /// they decide).
    #[inline(always)]
    fn read(&self, window: &[u8; 32], end: bool) -> Option<StageLine> {
        let name_start = usize::from(self.name_start);
        let name_end = usize::from(self.name_end);
        // The name's ends are neither spaces nor TABs (the key says): only the white space
        // of the field-by-field reader's to trim, LF to CR, is looked for.
        let other_space = |byte: u8| byte.wrapping_sub(b'\n') <= b'\r' - b'\n';
        let holds = self.id.plus_holds(window)
            & self.lane.plus_holds(window)
            & !other_space(window[name_start % 32])
            & !other_space(window[name_end.wrapping_sub(1) % 32]);
        if !holds {
            return None;
        }
        let lane = if self.lane.digits() == 1 {
            self.lane.digit(window)
        } else {
            self.lane.value(window)
        };
        Some(StageLine {
            end,
            id: self.id.value(window),
            lane: lane as u32,
            name_start,
            name_end,
            odd: self.odd
                | if self.id.leading_zero(window) { Q1 } else { 0 }
                | if self.lane.leading_zero(window) {
                    Q20
                } else {
                    0
                },
        })
    }
}

impl Default for StageLayouts {
    fn default() -> Self {
        StageLayouts(Layouts::new(StageLayout {
            id: NumberLayout::NONE,
            lane: NumberLayout::NONE,
            name_start: 0,
            name_end: 1,
            odd: 0,
        }))
    }
}

impl StageLayouts {
    /// Reads the `S` or `E` line of `len` bytes at the start of `window` (which goes on
    /// past the line's end: the bytes after it are not looked at); `None` for any other
    /// line, and for the rare `S` and `E` lines the field-by-field readers take. Through
    /// the layout of a line read before with the same key when there is one; a line read
    /// field by field leaves its layout in its slot.
    #[inline(always)]
    pub(crate) fn read(&mut self, window: &[u8; 32], len: usize) -> Option<StageLine> {
        // No branch on which of the two letters it is: `S` and `E` lines follow one another
        // at random, and a `match` on the letter (or a table of the letters, which the
        // compiler turned back into comparisons) took a branch on it, mispredicted on every
        // other line (callgrind's branch simulation: 234 K of the 1.7 M mispredictions of
        // the parse of make_padded's 15 MB).
        if !is_stage_letter(window[0]) {
            return None;
        }
        let end = window[0] == b'E';
        if len > 32 {
            return None;
        }
        // All 32 bytes: padded logs mix lines shorter and longer than 16 bytes at random,
        // and a branch on it was mispredicted (callgrind's branch simulation).
        let classes = classify_all(window, len);
        if classes.slash != 0 {
            // Perhaps a trailing comment (Q3).
            return None;
        }
        // One key for both letters: the layout is the same.
        let key = Key::new(classes, len);
        if let Some(stage) = self.0.get(&key).and_then(|layout| layout.read(window, end)) {
            return Some(stage);
        }
        self.read_and_learn(window, len, end, classes, &key)
    }

    /// [`read`](Self::read) of a line whose layout is not known, field by field, and its
    /// layout learnt. Out of line: a fortieth of the lines of make_padded's log come here.
    #[inline(never)]
    fn read_and_learn(
        &mut self,
        window: &[u8; 32],
        len: usize,
        end: bool,
        classes: Classes,
        key: &Key,
    ) -> Option<StageLine> {
        let fields = match window[1] {
            b'\t' => read_tabbed(window, len, end, classes),
            b' ' => read_spaced(window, len, end, classes),
            _ => None,
        }?;
        if let Some(layout) = StageLayout::of(&fields) {
            self.0.set(key, layout);
        }
        Some(fields.line)
    }
}

/// A stage line as the readers of every form found it, with where its fields are (for
/// [`StageLayout`]).
struct Fields {
    line: StageLine,
    id: Number,
    lane: Number,
    /// The repairs the classes of the line's bytes tell, the leading zeros' not among them.
    odd_of_classes: Odd,
}

impl Fields {
    /// The line of `id`, `lane` and the name between `name`'s bounds, which needs the
    /// repairs `form` for how its fields are separated and padded, and those its numbers
    /// need: Q1 for a `+` or a leading zero in the id, Q20 in the lane.
    #[inline(always)]
    fn new(end: bool, id: Number, lane: Number, name: (usize, usize), form: Odd) -> Fields {
        let signs = |id: bool, lane: bool| if id { Q1 } else { 0 } | if lane { Q20 } else { 0 };
        Fields {
            line: StageLine {
                end,
                id: id.value,
                lane: lane.value as u32,
                name_start: name.0,
                name_end: name.1,
                odd: form | signs(id.signed_or_zero, lane.signed_or_zero),
            },
            odd_of_classes: form | signs(id.plus, lane.plus),
            id,
            lane,
        }
    }
}

/// Reads the stage line whose fields are TAB-separated.
#[inline(always)]
fn read_tabbed(window: &[u8; 32], len: usize, end: bool, classes: Classes) -> Option<Fields> {
    // The TABs after the first, and the line end: the first ends the id, the next the lane,
    // the next the name, and more means trailing fields (Q1). Each field is the bits
    // between two ends, found by subtraction.
    let ends = u64::from(classes.tab & !0b11) | 1 << len;
    let id_end = ends & ends.wrapping_neg();
    let ends = ends ^ id_end;
    let lane_end = ends & ends.wrapping_neg();
    let ends = ends ^ lane_end;
    if ends == 0 {
        return None;
    }
    let name_field_end = ends & ends.wrapping_neg();
    let trailing = ends != name_field_end;
    let id_field = (id_end - 0b100) as u32;
    let lane_field = (lane_end - (id_end << 1)) as u32;
    let name_field = (name_field_end - (lane_end << 1)) as u32;
    let id = number(window, classes, id_field, 18)?;
    let lane = number(window, classes, lane_field, 9)?;
    let name = name_field & !classes.space;
    let (name_start, name_end) = name_bounds(window, name)?;
    let trimmed = u64::from(name_field) != (1 << name_end) - (1 << name_start);
    let padded = id.spaced | lane.spaced | trimmed | trailing;
    Some(Fields::new(
        end,
        id,
        lane,
        (name_start, name_end),
        if padded { Q1 } else { 0 },
    ))
}

/// Reads the stage line whose fields are separated by spaces and that has no TAB (Q19):
/// the id and the lane are words, and the name is the rest of the line after the one space
/// that follows the lane, trimmed, as [`super::fast`] splits such a line.
#[inline(always)]
fn read_spaced(window: &[u8; 32], len: usize, end: bool, classes: Classes) -> Option<Fields> {
    if classes.tab | classes.slash != 0 {
        return None;
    }
    let line = ((1u64 << len) - 1) as u32;
    // The bytes of the words, after the command letter and the space that follows it.
    let words = line & !classes.space & !0b11;
    let id_field = word(words)?;
    let after_id = after(words, id_field);
    let lane_field = word(after_id)?;
    let id = number(window, classes, id_field, 18)?;
    let lane = number(window, classes, lane_field, 9)?;
    // The name starts a byte after the lane's end, which a space must follow.
    let lane_end = 32 - lane_field.leading_zeros() as usize;
    if lane_end + 1 >= len {
        return None;
    }
    let name = words & !((2 << lane_end) - 1);
    let name = name_bounds(window, name)?;
    Some(Fields::new(end, id, lane, name, Q19))
}

/// The bits of the first word among `words` (the bytes of the line that are not spaces);
/// `None` if there is none.
#[inline(always)]
pub(super) fn word(words: u32) -> Option<u32> {
    if words == 0 {
        return None;
    }
    let start = words & words.wrapping_neg();
    // Adding the lowest bit carries through the word and stops at the space after it.
    Some(words & !words.wrapping_add(start))
}

/// The bits of `words` after `word`, one of its words.
#[inline(always)]
pub(super) fn after(words: u32, word: u32) -> u32 {
    words & !(word | (word - 1))
}

/// Where the name whose bytes other than spaces are the bits of `name` starts and ends;
/// `None` if it is empty, or if it starts or ends with white space other than a space (a
/// CR, a form feed; the field-by-field reader's to trim).
#[inline(always)]
fn name_bounds(window: &[u8; 32], name: u32) -> Option<(usize, usize)> {
    if name == 0 {
        return None;
    }
    let name_start = name.trailing_zeros() as usize;
    let name_end = 32 - name.leading_zeros() as usize;
    if is_space(window[name_start]) || is_space(window[name_end - 1]) {
        return None;
    }
    Some((name_start, name_end))
}

/// [`StageLayouts::read`] for the shortest and commonest lines only, in far fewer
/// instructions: under 16 bytes, three TABs and no other byte up to a space (no padding, no
/// CR, no white space in the name), no `/`, an id of up to 8 digits without a leading zero,
/// a lane of one digit, a name. `None` for any other line (which [`StageLayouts::read`] may
/// still take); what it takes, it reads exactly as [`StageLayouts::read`] does.
///
/// The conditions are comparisons of masks, joined before the branch that decides, but for
/// padding, which most lines that are not read here have and which is found first.
#[inline(always)]
pub(crate) fn read_plain(window: &[u8; 32], len: usize) -> Option<StageLine> {
    if len >= 16 {
        return None;
    }
    let head = u16::from_le_bytes([window[0], window[1]]);
    let end = head == u16::from_le_bytes(*b"E\t");
    if !(end || head == u16::from_le_bytes(*b"S\t")) {
        return None;
    }
    let sixteen: &[u8; 16] = window.first_chunk().expect("16 bytes");
    let line = (1u32 << len) - 1;
    let tabs = u32::from(matches_in_16(sixteen, b'\t')) & line;
    let blanks = u32::from(at_most_in_16(sixteen, b' ')) & line;
    if blanks != tabs {
        // Padding (the commonest reason, so the first to look at), a CR, white space in
        // the name.
        return None;
    }
    let slashes = u32::from(matches_in_16(sixteen, b'/')) & line;
    let digits = u32::from(digits_in_16(sixteen));
    // The TAB after the id: ids of 1 to 8 digits end at 3 to 10.
    let id_end = (tabs & !0b11).trailing_zeros() as usize;
    if !(3..=10).contains(&id_end) {
        return None;
    }
    let lane_end = id_end + 2;
    let name_start = lane_end + 1;
    let numbers = ((1 << id_end) - 0b100) | 1 << (id_end + 1);
    let odd = (tabs != (0b10 | 1 << id_end | 1 << lane_end))
        | (slashes != 0)
        | (numbers & !digits != 0)
        | (window[2] == b'0' && id_end > 3)
        | (name_start >= len);
    if odd {
        return None;
    }
    let word = u64::from_le_bytes(*window[2..].first_chunk().expect("8 bytes"));
    Some(StageLine {
        end,
        id: super::fast::digits_value(word ^ 0x3030_3030_3030_3030, id_end - 2),
        lane: u32::from(window[id_end + 1] - b'0'),
        name_start,
        name_end: len,
        odd: 0,
    })
}

/// A number field as [`number`] reads it.
pub(super) struct Number {
    pub(super) value: i64,
    /// Spaces around the number (Q1's to report).
    pub(super) spaced: bool,
    /// A `+` or a leading zero (`+5`, `007`): Q1's to report, or for a lane Q20's.
    pub(super) signed_or_zero: bool,
    /// Where its first digit is in the window, and how many digits (for [`NumberLayout`]).
    pub(super) first: u8,
    pub(super) digits: u8,
    /// Whether a `+` comes before the digits.
    pub(super) plus: bool,
}

impl Number {
    /// Whether the field is not written as canonical text writes it (Q1).
    #[inline(always)]
    pub(super) fn odd(&self) -> bool {
        self.spaced | self.signed_or_zero
    }
}

/// The number field whose bytes are the bits of `field`: a run of at most `max_digits`
/// decimal digits, perhaps after a `+`, perhaps with spaces around it. `None` for anything
/// else.
#[inline(always)]
pub(super) fn number(
    window: &[u8; 32],
    classes: Classes,
    field: u32,
    max_digits: u32,
) -> Option<Number> {
    let written = field & !classes.space;
    if written == 0 {
        return None;
    }
    let start = written.trailing_zeros();
    let run = written >> start;
    // One run of bytes, no space between them.
    if run & run.wrapping_add(1) != 0 {
        return None;
    }
    let spaced = field & classes.space != 0;
    let start = start as usize;
    if run == 1 {
        // One digit, as most lanes and a tenth of ids are.
        let digit = window[start].wrapping_sub(b'0');
        return (digit <= 9).then_some(Number {
            value: i64::from(digit),
            spaced,
            signed_or_zero: false,
            first: start as u8,
            digits: 1,
            plus: false,
        });
    }
    // A `+` before the digits (`+5`: Q1's, or for a lane Q20's), read here rather than out
    // of line, with no branch on it: a padded log has one on a line in twenty, at random.
    let plus = window[start] == b'+';
    if written & !classes.digit != u32::from(plus) << start {
        return None;
    }
    let first = start + usize::from(plus);
    let digits = run.trailing_ones() - u32::from(plus);
    let value = digits_value(window, first, digits, max_digits)?;
    Some(Number {
        value,
        spaced,
        // Leading zeros, read here rather than out of line: a padded log has them on one
        // line in ten, at random.
        signed_or_zero: plus | (window[first] == b'0'),
        first: first as u8,
        digits: digits as u8,
        plus,
    })
}

/// The value of the `count` (at least 1) digits at `start`; `None` for more than
/// `max_digits`.
#[inline(always)]
fn digits_value(window: &[u8; 32], start: usize, count: u32, max_digits: u32) -> Option<i64> {
    Some(match window.get(start..start + 8) {
        Some(word) if count <= 8 => {
            let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            super::fast::digits_value(word ^ 0x3030_3030_3030_3030, count as usize)
        }
        _ if count <= max_digits => window[start..start + count as usize]
            .iter()
            .fold(0i64, |value, &digit| value * 10 + i64::from(digit - b'0')),
        _ => return None,
    })
}

/// The classes of the bytes of `window`, the TABs and slashes among the first `len` (at
/// most 32) only.
#[inline(always)]
pub(super) fn classify(window: &[u8; 32], len: usize) -> Classes {
    // Most canonical lines end in their first 16 bytes.
    classify_halves::<false>(window, len)
}

/// [`classify`] of all 32 bytes, the second 16 looked at even when the line ends in the
/// first.
#[inline(always)]
pub(super) fn classify_all(window: &[u8; 32], len: usize) -> Classes {
    classify_halves::<true>(window, len)
}

/// [`classify`], the second 16 bytes looked at when the line goes on into them or `ALL`.
/// One function for both, generic rather than the two halves' classes passed to a common
/// join: that took 0.7 % more instructions on make_padded's log.
#[inline(always)]
fn classify_halves<const ALL: bool>(window: &[u8; 32], len: usize) -> Classes {
    let (low, high) = window.split_at(16);
    let low = classify_16(low.try_into().expect("16 bytes"));
    let high = if ALL || len >= 16 {
        classify_16(high.try_into().expect("16 bytes"))
    } else {
        (0, 0, 0, 0)
    };
    let line = ((1u64 << len) - 1) as u32;
    let join = |low: u16, high: u16| u32::from(high) << 16 | u32::from(low);
    // Only the TABs and slashes are limited to the line: fields are found between TABs.
    Classes {
        tab: join(low.0, high.0) & line,
        space: join(low.1, high.1),
        digit: join(low.2, high.2),
        slash: join(low.3, high.3) & line,
    }
}

/// TABs, spaces, digits and slashes among 16 bytes (SSE2 on x86-64, `scan.rs`'s).
#[inline(always)]
fn classify_16(sixteen: &[u8; 16]) -> (u16, u16, u16, u16) {
    (
        matches_in_16(sixteen, b'\t'),
        matches_in_16(sixteen, b' '),
        digits_in_16(sixteen),
        matches_in_16(sixteen, b'/'),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kanata::parse::{Command, Line};

    /// `line` read by [`StageLayouts::read`], with `after` following it in the window: by
    /// the readers of the fields, then through the layout they learnt, which must read it
    /// the same.
    fn read_line(line: &[u8], after: &[u8]) -> Option<StageLine> {
        let mut window = [b'\n'; 32];
        let bytes: Vec<u8> = line.iter().chain(b"\n").chain(after).copied().collect();
        let len = bytes.len().min(32);
        window[..len].copy_from_slice(&bytes[..len]);
        let mut layouts = StageLayouts::default();
        let read = layouts.read(&window, line.len());
        let again = layouts.read(&window, line.len());
        assert_eq!(read.as_ref().map(parts), again.as_ref().map(parts));
        read
    }

    /// What a stage line holds, to compare.
    fn parts(stage: &StageLine) -> (bool, i64, u32, usize, usize, Odd) {
        (
            stage.end,
            stage.id,
            stage.lane,
            stage.name_start,
            stage.name_end,
            stage.odd,
        )
    }

    /// What the one-pass reader makes of `line`: the stage line and its repairs.
    fn expected(line: &[u8]) -> Option<(bool, i64, u32, Vec<u8>, Odd)> {
        let mut out = Line::Blank;
        let odd = super::super::fast::parse_into(line, &mut out)?;
        match out {
            Line::Command(Command::Stage {
                end,
                id,
                lane,
                name,
            }) => Some((end, id, lane, name.to_vec(), odd)),
            _ => None,
        }
    }

    #[test]
    fn common_stage_lines_are_read_and_their_repairs_found() {
        for (line, end, id, lane, name, odd) in [
            (&b"S\t12\t0\tRn"[..], false, 12, 0, &b"Rn"[..], 0),
            (b"E\t123456789\t3\tF", true, 123456789, 3, b"F", 0),
            (b"S\t0\t0\tI D", false, 0, 0, b"I D", 0),
            // Q1: padding, and trailing fields.
            (b"S\t  12 \t 0\tIF  ", false, 12, 0, b"IF", Q1),
            (b"S\t         0\t         0\tF\t", false, 0, 0, b"F", Q1),
            (b"E\t7\t1\t IS\t\tx", true, 7, 1, b"IS", Q1),
            (b"S\t+1\t0\tF", false, 1, 0, b"F", Q1),
            (b"S\t 01\t0\tF", false, 1, 0, b"F", Q1),
            (b"S\t1\t00\tF", false, 1, 0, b"F", Q20),
            (b"S\t1\t +7 \tF", false, 1, 7, b"F", Q1 | Q20),
            // Q19: fields separated by spaces, the name the rest of the line.
            (b"S 1 0 F", false, 1, 0, b"F", Q19),
            (b"E   12  3   I D  ", true, 12, 3, b"I D", Q19),
            (b"S +12 00 F", false, 12, 0, b"F", Q19 | Q1 | Q20),
        ] {
            let stage = read_line(line, b"S\t1\t2\t3/").expect("read");
            let name_read = &line[stage.name_start..stage.name_end];
            assert_eq!(
                (stage.end, stage.id, stage.lane, name_read, stage.odd),
                (end, id, lane, name, odd),
                "{:?}",
                line.escape_ascii().to_string()
            );
        }
    }

    #[test]
    fn the_shortest_lines_are_read_plain_the_others_left() {
        let window = |line: &[u8]| {
            let mut window = [b'\n'; 32];
            window[..line.len()].copy_from_slice(line);
            window
        };
        for (line, end, id, lane, name) in [
            (&b"S\t12\t0\tRn"[..], false, 12, 0, &b"Rn"[..]),
            (b"E\t12345678\t7\tF", true, 12_345_678, 7, b"F"),
            (b"S\t0\t0\tX", false, 0, 0, b"X"),
        ] {
            let stage = read_plain(&window(line), line.len()).expect("read plain");
            let name_read = &line[stage.name_start..stage.name_end];
            assert_eq!(
                (stage.end, stage.id, stage.lane, name_read, stage.odd),
                (end, id, lane, name, 0)
            );
        }
        for line in [
            &b"S\t012\t0\tF"[..],
            b"S\t1\t10\tF",
            b"S\t1\t0\tF\t",
            b"S\t1\t0\t\x0bF",
            b"S\t1\t0\tF\r",
            b"S\t123456789\t0\tF",
            b"S\t1\t0\tI D",
            b"S\t1\t0\tI\x0cD",
            b"S\t1\t0\tF/",
            b"S\t1\t0\tFifteen-by",
            b"S\t1\t0\t",
            b"S\t\t0\tF",
            b"R\t1\t0\tF",
        ] {
            assert!(
                read_plain(&window(line), line.len()).is_none(),
                "{:?}",
                line.escape_ascii().to_string()
            );
        }
    }

    #[test]
    fn rarer_lines_are_left_to_the_other_readers() {
        for line in [
            &b"I\t0\t0\t0"[..],
            b"S 1 0",           // no name
            b"S 1 0 ",          // no name
            b"S 1 0\tF",        // a TAB among spaces
            b"S\t+\t0\tF",      // no digits
            b"S\t+ 1\t0\tF",    // a space inside the number
            b"S 1  + 0 F",      // a space inside the number
            b"S\t-1\t0\tF",     // Q12's to judge
            b"S\t1\t0\tF // x", // Q3
            b"S\t1\t0\t",       // no name
            b"S\t1\t0\t  \tF",  // no name
            b"S\t1\t0",         // no name
            b"S\t1 2\t0\tF",    // not a number
            b"S\t1\t0\tF\r",    // a CR trimmed off the name
            b"S\t1\t0\t\x0bF",  // a vertical TAB trimmed off
            b"S\t1234567890123456789\t0\tF",
            b"S\t1\t0\tthirty-three bytes in this line",
        ] {
            assert!(
                read_line(line, b"").is_none(),
                "{:?}",
                line.escape_ascii().to_string()
            );
        }
    }

    /// Random lines made of the pieces stage lines are made of, read by [`StageLayouts::read`]
    /// and by the one-pass reader: whatever `read` takes, it reads as that reader does, by
    /// the readers of the fields and through a layout learnt from another line with the
    /// same key (one table for all the lines: the bytes a layout does not tell, a `+`, a
    /// `-`, a leading zero, a CR, differ from the line it was learnt from).
    #[test]
    fn every_line_taken_is_read_as_the_one_pass_reader_reads_it() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let pieces: [&[u8]; 16] = [
            b"\t",
            b"\t",
            b" ",
            b"0",
            b"1",
            b"7",
            b"42",
            b"+",
            b"-",
            b"F",
            b"Rn",
            b"/",
            b"\r",
            b"\x0b",
            b"\xc3\xa9",
            b"  ",
        ];
        let mut taken = 0;
        let mut plain_taken = 0;
        let mut spaced_taken = 0;
        let mut layouts = StageLayouts::default();
        let mut through_a_layout = 0;
        for _ in 0..300_000 {
            let mut line = vec![[b'S', b'E', b'I', b'L'][next(4)]];
            // Mostly the shape of a stage line, its fields separated by TABs or by spaces
            // (Q19), then a few pieces anywhere.
            let separator = [b'\t', b'\t', b'\t', b' '][next(4)];
            line.push(separator);
            for field in 0..3 {
                for _ in 0..next(3) {
                    line.extend_from_slice(pieces[next(16)]);
                }
                // Ids and lanes of one digit and of two.
                let value: &[u8] = match field {
                    0 => [&b"3"[..], b"15"][next(2)],
                    1 => [&b"15"[..], b"1"][next(2)],
                    _ => b"IF",
                };
                line.extend_from_slice(value);
                for _ in 0..next(2) {
                    line.extend_from_slice(pieces[next(16)]);
                }
                if field < 2 {
                    line.push(separator);
                }
            }
            line.truncate(line.len() - next(3).min(line.len() - 1));
            let mut after = Vec::new();
            for _ in 0..next(8) {
                after.extend_from_slice(pieces[next(16)]);
            }
            let mut window = [b'\n'; 32];
            let bytes: Vec<u8> = line.iter().chain(b"\n").chain(&after).copied().collect();
            let len = bytes.len().min(32);
            window[..len].copy_from_slice(&bytes[..len]);
            if let Some(plain) = read_plain(&window, line.len()) {
                plain_taken += 1;
                let stage = read_line(&line, &after).expect("read takes what read_plain takes");
                assert_eq!(
                    parts(&plain),
                    parts(&stage),
                    "{:?}",
                    line.escape_ascii().to_string()
                );
            }
            let fresh = read_line(&line, &after);
            if line.len() <= 32 {
                let classes = classify_all(&window, line.len());
                let key = Key::new(classes, line.len());
                through_a_layout += usize::from(layouts.0.get(&key).is_some());
            }
            let shared = layouts.read(&window, line.len());
            assert_eq!(
                fresh.as_ref().map(parts),
                shared.as_ref().map(parts),
                "{:?}",
                line.escape_ascii().to_string()
            );
            let Some(stage) = fresh else {
                continue;
            };
            taken += 1;
            spaced_taken += usize::from(stage.odd & Q19 != 0);
            let name = line[stage.name_start..stage.name_end].to_vec();
            assert_eq!(
                Some((stage.end, stage.id, stage.lane, name, stage.odd)),
                expected(&line),
                "{:?}",
                line.escape_ascii().to_string()
            );
        }
        assert!(taken > 10_000, "{taken} lines taken");
        assert!(
            through_a_layout > 10_000,
            "{through_a_layout} lines found a layout"
        );
        assert!(
            spaced_taken > 1_000,
            "{spaced_taken} lines with spaces taken"
        );
        assert!(
            plain_taken > 1_000,
            "{plain_taken} lines taken by read_plain"
        );
    }
}
