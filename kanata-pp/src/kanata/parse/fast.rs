//! The common lines of a Kanata log read in one pass: a command letter, then TAB-separated
//! fields (or space-separated ones, Q19) whose numbers are decimals, plain or padded with
//! spaces, written with a `+` or leading zeros or not (Q1; Q20 for a lane), and perhaps
//! trailing fields (Q1). That is nearly every line real writers emit, canonical or padded.
//!
//! [`parse_into`] gives exactly what the field-by-field reader in the parent module gives for
//! such a line, and tells which of Q1, Q19 and Q20 apply; it gives `None` (having reported
//! nothing) for anything else: a minus sign, an empty or odd field, a label with a further
//! TAB (Q9), a header or a non-command. The caller then reads the line the slow way, which
//! reports what it repairs. Lines with a `/` (a possible trailing comment, Q3) are the
//! caller's to keep from here, labels excepted.

use super::{is_space, trim, Command, Line, RetireType, SimId};

/// A number field as [`number`] reads it.
struct Number {
    value: i64,
    /// Spaces before or after the number.
    spaced: bool,
    /// A `+` or a leading zero (`+5`, `007`): Q1's to report, or for a lane Q20's.
    signed_or_zero: bool,
}

impl Number {
    /// Whether the field is not written as canonical text writes it (Q1).
    fn odd(&self) -> bool {
        self.spaced | self.signed_or_zero
    }
}

/// The repairs a line read here needs: [`Q1`], [`Q19`] and [`Q20`] bits.
pub(super) type Odd = u8;
/// Padding, trailing fields, or a number written with a `+` or leading zeros.
pub(super) const Q1: Odd = 1;
/// Fields separated by spaces.
pub(super) const Q19: Odd = 2;
/// A lane written other than as a plain decimal (`00`, `+1`).
pub(super) const Q20: Odd = 4;

/// The repairs `line` needs, if it is one of the common lines; its command is then in `out`
/// (left as it was otherwise).
///
/// The command is written where the caller reads it, field by field: returned by value, a
/// line was moved as a whole, wide loads of bytes the parser had just stored narrowly, a
/// store-forwarding stall on every line (a quarter of the reading thread's time).
#[inline(always)]
pub(super) fn parse_into<'a>(line: &'a [u8], out: &mut Line<&'a [u8]>) -> Option<Odd> {
    let first = *line.first()?;
    let (name_end, start) = match line.get(1) {
        Some(b'\t') => (1, false),
        Some(b'=') if first == b'C' && line.get(2) == Some(&b'\t') => (2, true),
        Some(b' ') => return parse_spaced(line, first, 1, false, out),
        Some(b'=') if first == b'C' && line.get(2) == Some(&b' ') => {
            return parse_spaced(line, first, 2, true, out)
        }
        _ => return None,
    };
    let mut at = name_end + 1;
    let id = number(line, &mut at)?;
    let mut odd = id.odd();
    let mut q20 = false;
    match first {
        b'C' => {
            // `C <n>`: any further field is ignored (Q1), whatever it holds.
            odd |= trailing(line, at)?;
            *out = Line::Command(if start {
                Command::Start(id.value)
            } else {
                Command::Cycle(id.value)
            });
        }
        b'I' => {
            next_field(line, &mut at)?;
            let sim_id = number(line, &mut at)?;
            next_field(line, &mut at)?;
            let thread = number(line, &mut at)?;
            odd |= sim_id.odd() | thread.odd() | trailing(line, at)?;
            *out = Line::Command(Command::Insn {
                id: id.value,
                sim_id: SimId::from(i128::from(sim_id.value)),
                thread: thread.value,
            });
        }
        b'S' | b'E' => {
            next_field(line, &mut at)?;
            let lane = number(line, &mut at)?;
            let lane_value = u32::try_from(lane.value).ok()?;
            // Padding around a lane is Q1's; a lane written `00` or `+1`, Q20's.
            q20 = lane.signed_or_zero;
            next_field(line, &mut at)?;
            let field_end = stage_end(line, at)?;
            let field = &line[at..field_end];
            let (&first_byte, &last_byte) = (field.first()?, field.last()?);
            let name = if is_space(first_byte) || is_space(last_byte) {
                trim(field)
            } else {
                field
            };
            if name.is_empty() {
                return None;
            }
            odd |= lane.spaced | (name.len() != field.len()) | trailing(line, field_end)?;
            *out = Line::Command(Command::Stage {
                end: first == b'E',
                id: id.value,
                lane: lane_value,
                name,
            });
        }
        b'L' => {
            next_field(line, &mut at)?;
            let kind = number(line, &mut at)?;
            if kind.value > 2 {
                return None;
            }
            next_field(line, &mut at)?;
            let text = &line[at..];
            // Q9 (a TAB in the text) and an empty label are the slow reader's.
            if text.is_empty() || crate::kanata::scan::contains(text, b'\t') {
                return None;
            }
            odd |= kind.odd();
            *out = Line::Command(Command::Label {
                id: id.value,
                kind: kind.value as u8,
                text,
            });
        }
        b'R' => {
            next_field(line, &mut at)?;
            let retire_id = number(line, &mut at)?;
            odd |= retire_id.odd();
            let kind = if at < line.len() {
                next_field(line, &mut at)?;
                let kind = number(line, &mut at)?;
                odd |= kind.odd() | trailing(line, at)?;
                RetireType::Value(kind.value)
            } else {
                RetireType::Empty
            };
            *out = Line::Command(Command::Retire {
                id: id.value,
                retire_id: retire_id.value,
                kind,
            });
        }
        b'W' => {
            next_field(line, &mut at)?;
            let producer = number(line, &mut at)?;
            next_field(line, &mut at)?;
            let kind = number(line, &mut at)?;
            let kind_value = u32::try_from(kind.value).ok()?;
            odd |= producer.odd() | kind.odd() | trailing(line, at)?;
            *out = Line::Command(Command::Dep {
                consumer: id.value,
                producer: producer.value,
                kind: kind_value,
            });
        }
        _ => return None,
    }
    Some(if odd { Q1 } else { 0 } | if q20 { Q20 } else { 0 })
}

/// [`parse_into`] of a line whose fields are separated by runs of spaces and that has no TAB
/// (Q19), as the field-by-field reader splits it: words, and for the last field of `I`,
/// `S`, `E`, `R` and `W` the rest of the line trimmed, for `L` the rest after one space.
/// `None` for anything that may need another repair: a minus sign, white space other than
/// spaces between the fields, a `/`, a missing or extra field.
#[inline(never)]
fn parse_spaced<'a>(
    line: &'a [u8],
    first: u8,
    name_end: usize,
    start: bool,
    out: &mut Line<&'a [u8]>,
) -> Option<Odd> {
    // A `/` may start a trailing comment (Q3), except in a label.
    let slash = if first == b'L' { b'\t' } else { b'/' };
    if crate::kanata::scan::contains_either(line, b'\t', slash) {
        return None;
    }
    let mut at = name_end;
    let id = word_number(line, &mut at)?;
    let mut odd = id.signed_or_zero;
    let mut q20 = false;
    match first {
        b'C' => {
            spaces(line, &mut at);
            if at != line.len() {
                return None;
            }
            *out = Line::Command(if start {
                Command::Start(id.value)
            } else {
                Command::Cycle(id.value)
            });
        }
        b'I' => {
            let sim_id = word_number(line, &mut at)?;
            let thread = last_number(line, at)?;
            odd |= sim_id.signed_or_zero | thread.signed_or_zero;
            *out = Line::Command(Command::Insn {
                id: id.value,
                sim_id: SimId::from(i128::from(sim_id.value)),
                thread: thread.value,
            });
        }
        b'S' | b'E' => {
            let lane = word_number(line, &mut at)?;
            q20 = lane.signed_or_zero;
            // The rest of the line after one separator, trimmed: the name may hold spaces.
            let name = trim(line.get(at + 1..)?);
            if name.is_empty() {
                return None;
            }
            *out = Line::Command(Command::Stage {
                end: first == b'E',
                id: id.value,
                lane: u32::try_from(lane.value).ok()?,
                name,
            });
        }
        b'L' => {
            let kind = word_number(line, &mut at)?;
            if kind.value > 2 {
                return None;
            }
            odd |= kind.signed_or_zero;
            // The text is the rest of the line after one separator, as written.
            let text = line.get(at + 1..)?;
            if text.is_empty() {
                return None;
            }
            *out = Line::Command(Command::Label {
                id: id.value,
                kind: kind.value as u8,
                text,
            });
        }
        b'R' => {
            let retire_id = word_number(line, &mut at)?;
            odd |= retire_id.signed_or_zero;
            let kind = if line[at..].iter().all(|&byte| byte == b' ') {
                RetireType::Empty
            } else {
                let kind = last_number(line, at)?;
                odd |= kind.signed_or_zero;
                RetireType::Value(kind.value)
            };
            *out = Line::Command(Command::Retire {
                id: id.value,
                retire_id: retire_id.value,
                kind,
            });
        }
        b'W' => {
            let producer = word_number(line, &mut at)?;
            let kind = last_number(line, at)?;
            odd |= producer.signed_or_zero | kind.signed_or_zero;
            *out = Line::Command(Command::Dep {
                consumer: id.value,
                producer: producer.value,
                kind: u32::try_from(kind.value).ok()?,
            });
        }
        _ => return None,
    }
    Some(Q19 | if odd { Q1 } else { 0 } | if q20 { Q20 } else { 0 })
}

/// Steps over the spaces at `at`.
#[inline(always)]
fn spaces(line: &[u8], at: &mut usize) {
    *at += super::leading_spaces(&line[*at..]);
}

/// Reads the word at `at`, after at least one space: perhaps a `+`, then 1 to 18 decimal
/// digits, ended by a space or the end of the line, where `at` is left. A word stands
/// alone: `spaced` is false.
#[inline(always)]
fn word_number(line: &[u8], at: &mut usize) -> Option<Number> {
    if line.get(*at) != Some(&b' ') {
        return None;
    }
    spaces(line, at);
    let plus = line.get(*at) == Some(&b'+');
    let start = *at + usize::from(plus);
    let (value, digits) = digits_at(&line[start..]);
    *at = start + digits;
    if digits == 0 || digits > 18 {
        return None;
    }
    match line.get(*at) {
        None | Some(b' ') => Some(Number {
            value,
            spaced: false,
            signed_or_zero: plus || digits > 1 && line[start] == b'0',
        }),
        Some(_) => None,
    }
}

/// The last field of a command, the rest of the line after the space at `at`, trimmed: one
/// number, as [`word_number`] reads it, and nothing after it but spaces.
#[inline(always)]
fn last_number(line: &[u8], at: usize) -> Option<Number> {
    let mut at = at;
    let number = word_number(line, &mut at)?;
    spaces(line, &mut at);
    (at == line.len()).then_some(number)
}

/// Steps over the TAB at `at`, which must be there.
#[inline(always)]
fn next_field(line: &[u8], at: &mut usize) -> Option<()> {
    if line.get(*at) == Some(&b'\t') {
        *at += 1;
        Some(())
    } else {
        None
    }
}

/// Where the stage name that starts at `at` ends: at the next TAB, or at the end of the
/// line. `None` if it holds a `/`, which may start a trailing comment (Q3).
#[inline(always)]
fn stage_end(line: &[u8], at: usize) -> Option<usize> {
    // Stage names are a few bytes long: a loop beats a call to memchr.
    let mut end = at;
    while let Some(&byte) = line.get(end) {
        match byte {
            b'\t' => break,
            b'/' => return None,
            _ => end += 1,
        }
    }
    Some(end)
}

/// Whether fields follow the last one a command uses, at `at` (a TAB or the end of the
/// line): ignored, as Q1 says. `None` if they hold a `/`, which may start a trailing comment
/// (Q3).
#[inline(always)]
fn trailing(line: &[u8], at: usize) -> Option<bool> {
    let rest = &line[at..];
    // Mostly empty or a TAB or two: a loop, not a call to memchr.
    for &byte in rest {
        if byte == b'/' {
            return None;
        }
    }
    Some(!rest.is_empty())
}

/// Reads the field at `at`: spaces, perhaps a `+`, 1 to 18 decimal digits, spaces, then a TAB
/// or the end of the line, where `at` is left. `None` for anything else (a minus, no digits,
/// another byte, a number that might not fit): the slow reader decides what that is.
#[inline(always)]
fn number(line: &[u8], at: &mut usize) -> Option<Number> {
    let padding = super::leading_spaces(&line[*at..]);
    let mut start = *at + padding;
    let (mut value, mut digits) = digits_at(&line[start..]);
    // A `+` only where no digit is: the common number waits on no test for it.
    let plus = digits == 0 && line.get(start) == Some(&b'+');
    if plus {
        start += 1;
        (value, digits) = digits_at(&line[start..]);
    }
    let mut end = start + digits;
    if digits == 0 || digits > 18 {
        return None;
    }
    let signed_or_zero = plus || digits > 1 && line[start] == b'0';
    let mut spaced = padding > 0;
    if line.get(end) == Some(&b' ') {
        spaced = true;
        while line.get(end) == Some(&b' ') {
            end += 1;
        }
    }
    if end < line.len() && line[end] != b'\t' {
        return None;
    }
    *at = end;
    Some(Number {
        value,
        spaced,
        signed_or_zero,
    })
}

/// The value and the number of the decimal digits `bytes` starts with (the value wraps past
/// 18 digits).
#[inline(always)]
fn digits_at(bytes: &[u8]) -> (i64, usize) {
    digits_in_word(bytes).unwrap_or_else(|| digits_bytewise(bytes))
}

/// The value and the number of the decimal digits `bytes` starts with, when its first eight
/// bytes hold fewer than eight digits: read as one word, with no branch per digit (a loop's
/// exit, at a different digit from one number to the next, is a mispredicted branch per
/// number). `None` when fewer than eight bytes are left or all eight are digits.
#[inline(always)]
fn digits_in_word(bytes: &[u8]) -> Option<(i64, usize)> {
    let word = u64::from_le_bytes(bytes.get(..8)?.try_into().expect("8 bytes"));
    // Digits become the bytes 0 to 9; every other byte is 10 or more.
    let values = word ^ 0x3030_3030_3030_3030;
    // The high bit of each byte that is 10 or more. A byte over 0x89 carries into the next
    // one, which only disturbs bytes after the first non-digit.
    let non_digits = (values.wrapping_add(0x7676_7676_7676_7676) | values) & 0x8080_8080_8080_8080;
    if non_digits == 0 {
        return None;
    }
    let count = (non_digits.trailing_zeros() / 8) as usize;
    if count == 0 {
        return Some((0, 0));
    }
    Some((digits_value(values, count), count))
}

/// The value of the first `count` (1 to 8) digits of `values`, the bytes of a word less
/// `'0'` each.
#[inline(always)]
pub(super) fn digits_value(values: u64, count: usize) -> i64 {
    // The digits moved to the top bytes, the last in the highest, zeros before them; then
    // pairs, fours and eights of digits combined by three multiplications.
    let digits = values << (8 * (8 - count));
    let pairs = digits.wrapping_mul(10 << 8 | 1) >> 8;
    let fours = (pairs & 0x00ff_00ff_00ff_00ff).wrapping_mul(100 << 16 | 1) >> 16;
    let eights = (fours & 0x0000_ffff_0000_ffff).wrapping_mul(10_000 << 32 | 1) >> 32;
    eights as i64
}

/// [`digits_in_word`] a byte at a time, for any number of digits (the value wraps past 18).
#[inline(always)]
fn digits_bytewise(bytes: &[u8]) -> (i64, usize) {
    let mut value = 0i64;
    let mut count = 0;
    while let Some(&byte) = bytes.get(count) {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        value = value.wrapping_mul(10).wrapping_add(i64::from(digit));
        count += 1;
    }
    (value, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_of_digits_reads_as_byte_by_byte() {
        // Every count of digits from 0 to 8, every digit at every place, and every byte
        // after them, against the byte loop.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for count in 0..=8 {
            for _ in 0..20_000 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let mut bytes = [0u8; 10];
                for (at, byte) in bytes.iter_mut().enumerate() {
                    let pick = (state >> (at * 6)) as u8;
                    *byte = if at < count {
                        b'0' + pick % 10
                    } else {
                        pick.wrapping_mul(37) ^ (state >> 60) as u8
                    };
                }
                let expected = digits_bytewise(&bytes);
                match digits_in_word(&bytes) {
                    Some(found) => assert_eq!(found, expected, "{bytes:?}"),
                    None => assert!(expected.1 >= 8, "{bytes:?}"),
                }
                assert_eq!(digits_in_word(&bytes[..7]), None);
            }
        }
        assert_eq!(digits_in_word(b"99999999\t"), None);
        assert_eq!(digits_in_word(b"9999999\t"), Some((9_999_999, 7)));
        assert_eq!(digits_in_word(b"0000001 "), Some((1, 7)));
        assert_eq!(digits_in_word(b"\xb9\xb9123456"), Some((0, 0)));
    }
}
