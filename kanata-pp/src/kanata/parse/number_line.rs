//! `I`, `R` and `W` lines, whose fields are all numbers, read from the classes of their
//! bytes as [`super::stage_line`] reads `S` and `E`: the fields are found between the TABs
//! of a mask, and each number from the masks of its bytes, instead of a byte at a time.
//!
//! [`read`] takes the lines of at most 32 bytes that [`super::fast::parse_into`] reads as
//! `I`, `R` or `W`, with TAB-separated fields or fields separated by spaces (Q19), padded
//! with spaces or not, numbers written plain or with a `+` or leading zeros, trailing
//! fields or not (Q1), and gives exactly what it gives; anything else (a `/`, a minus, white
//! space other than spaces, a longer line) is left to it.

use super::fast::{Odd, Q1, Q19};
use super::stage_line::{after, classify, classify_all, number, word};
use super::{Command, Line, RetireType, SimId};

/// An `I`, `R`, `W` or `C` line as [`read`] and [`read_cycle`] read it: its command letter
/// and its numbers, in the order they are written. A value, not a [`Command`], so that the
/// reading thread makes a batch's ops of it with no branch on the command (one per line,
/// mispredicted where the commands follow one another at random), and the normalizer's own
/// parse makes the command once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Numbers {
    /// `I`, `R`, `W` or `C`.
    pub(crate) letter: u8,
    pub(crate) first: i64,
    /// 0 for `C`.
    pub(crate) second: i64,
    /// The type of an `R` or `W`, the thread of an `I`; 0 where there is none.
    pub(crate) third: i64,
    /// Whether the third number is written: an `R` may have no type.
    pub(crate) typed: bool,
}

impl Numbers {
    /// The command the line is (with no text, whatever the type of text).
    pub(crate) fn command<T>(self) -> Command<T> {
        match self.letter {
            b'I' => Command::Insn {
                id: self.first,
                sim_id: SimId::from(i128::from(self.second)),
                thread: self.third,
            },
            b'R' => Command::Retire {
                id: self.first,
                retire_id: self.second,
                kind: if self.typed {
                    RetireType::Value(self.third)
                } else {
                    RetireType::Empty
                },
            },
            b'W' => Command::Dep {
                consumer: self.first,
                producer: self.second,
                // Checked by the readers.
                kind: self.third as u32,
            },
            _ => Command::Cycle(self.first),
        }
    }

    /// The `I`, `R` or `W` line `command` with its three numbers (`R` typed); `None` for a
    /// type of `W` past 32 bits, which the one-pass reader takes.
    #[inline(always)]
    fn of_three(command: u8, first: i64, second: i64, third: i64) -> Option<Numbers> {
        if command == b'W' && u32::try_from(third).is_err() {
            return None;
        }
        Some(Numbers {
            letter: command,
            first,
            second,
            third,
            typed: true,
        })
    }

    /// The `R` line without a type.
    #[inline(always)]
    fn retire_untyped(id: i64, retire_id: i64) -> Numbers {
        Numbers {
            letter: b'R',
            first: id,
            second: retire_id,
            third: 0,
            typed: false,
        }
    }
}

/// Reads the `I`, `R` or `W` line of `len` bytes at the start of `window` (which goes on
/// past the line's end: the bytes after it are not looked at), and gives its repairs;
/// `None` for any other line, and for the rare ones the one-pass reader takes.
#[inline(always)]
pub(crate) fn read(window: &[u8; 32], len: usize) -> Option<(Numbers, Odd)> {
    let command = window[0];
    if !matches!(command, b'I' | b'R' | b'W') || len > 32 {
        return None;
    }
    match window[1] {
        b'\t' => {}
        b' ' => return read_spaced(window, len),
        _ => return None,
    }
    let classes = classify(window, len);
    if classes.slash != 0 {
        // Perhaps a trailing comment (Q3).
        return None;
    }
    // The TABs after the first, and the line end: each ends a field, the fields being the
    // bits between two ends.
    let ends = u64::from(classes.tab & !0b11) | 1 << len;
    let line_end = 1u64 << len;
    let first_end = ends & ends.wrapping_neg();
    let ends = ends ^ first_end;
    if ends == 0 {
        return None;
    }
    let second_end = ends & ends.wrapping_neg();
    let ends = ends ^ second_end;
    let first = number(window, classes, (first_end - 0b100) as u32, 18)?;
    let second = number(window, classes, (second_end - (first_end << 1)) as u32, 18)?;
    // `R <id> <retire id>` alone: no third field. One comparison, with no branch on the
    // command, which `I`, `R` and `W` lines' random order mispredicted (two comparisons
    // joined were split into two branches): for any other command the line end is moved
    // past where any field can end.
    if second_end == line_end << u32::from(command != b'R') {
        let numbers = Numbers::retire_untyped(first.value, second.value);
        return Some((numbers, q1(first.odd() | second.odd())));
    }
    if ends == 0 {
        return None;
    }
    let third_end = ends & ends.wrapping_neg();
    let trailing = ends != third_end;
    let third = number(window, classes, (third_end - (second_end << 1)) as u32, 18)?;
    let odd = first.odd() | second.odd() | third.odd() | trailing;
    let numbers = Numbers::of_three(command, first.value, second.value, third.value)?;
    Some((numbers, q1(odd)))
}

/// [`read`] of a line whose fields are separated by spaces and that has no TAB (Q19): three
/// words, or two for an `R` without a type, and nothing after them. Out of line, as
/// [`super::stage_line`]'s reader of such lines is, for the TAB-separated lines' sake; it
/// takes them in a third of the instructions the one-pass reader took.
#[inline(never)]
fn read_spaced(window: &[u8; 32], len: usize) -> Option<(Numbers, Odd)> {
    let command = window[0];
    // All 32 bytes, as the stage lines' reader of such lines does, for the same reason.
    let classes = classify_all(window, len);
    if classes.tab | classes.slash != 0 {
        return None;
    }
    let line = ((1u64 << len) - 1) as u32;
    // The bytes of the words, after the command letter and the space that follows it.
    // A word holds no space: a number's `odd` is its sign or leading zero alone.
    let words = line & !classes.space & !0b11;
    let first_field = word(words)?;
    let after_first = after(words, first_field);
    let second_field = word(after_first)?;
    let after_second = after(after_first, second_field);
    let first = number(window, classes, first_field, 18)?;
    let second = number(window, classes, second_field, 18)?;
    let Some(third_field) = word(after_second) else {
        if command != b'R' {
            return None;
        }
        let numbers = Numbers::retire_untyped(first.value, second.value);
        return Some((numbers, Q19 | q1(first.odd() | second.odd())));
    };
    if after(after_second, third_field) != 0 {
        // A fourth word.
        return None;
    }
    let third = number(window, classes, third_field, 18)?;
    let odd = first.odd() | second.odd() | third.odd();
    let numbers = Numbers::of_three(command, first.value, second.value, third.value)?;
    Some((numbers, Q19 | q1(odd)))
}

/// Reads the `C` line of `len` bytes at the start of `window`, as [`read`] reads `I`, `R`
/// and `W`: one number, padded or not, trailing fields or not (Q1), or one word (Q19).
/// `None` for any other line, the legacy start `C=` among them.
#[inline(always)]
pub(crate) fn read_cycle(window: &[u8; 32], len: usize) -> Option<(Numbers, Odd)> {
    let tabbed = separated_by_tabs(window)?;
    if window[0] != b'C' || len > 32 {
        return None;
    }
    let classes = classify(window, len);
    if classes.slash != 0 {
        // Perhaps a trailing comment (Q3).
        return None;
    }
    let line = ((1u64 << len) - 1) as u32;
    let (field, odd) = if tabbed {
        // The field up to the next TAB; any after it are ignored (Q1).
        let ends = u64::from(classes.tab & !0b11) | 1 << len;
        let end = ends & ends.wrapping_neg();
        ((end - 0b100) as u32, q1(ends != end))
    } else {
        // One word, and no TAB.
        let words = line & !classes.space & !0b11;
        let field = word(words)?;
        if classes.tab != 0 || words != field {
            return None;
        }
        (field, Q19)
    };
    let cycles = number(window, classes, field, 18)?;
    let numbers = Numbers {
        letter: b'C',
        first: cycles.value,
        second: 0,
        third: 0,
        typed: false,
    };
    Some((numbers, odd | q1(cycles.odd())))
}

/// An `L` line as [`read_label`] reads it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Label<'a> {
    pub(crate) id: i64,
    pub(crate) kind: u8,
    pub(crate) text: &'a [u8],
}

impl<'a> Label<'a> {
    /// The label as a parsed line.
    pub(crate) fn line(self) -> Line<&'a [u8]> {
        Line::Command(Command::Label {
            id: self.id,
            kind: self.kind,
            text: self.text,
        })
    }
}

/// Reads the `L` line `line` (`window` holding its first 32 bytes and what follows them),
/// as [`read`] reads `I`, `R` and `W`: the id and the kind numbers, padded or not, then the
/// text as written, with no TAB (Q9); or fields separated by spaces (Q19), the text the
/// rest of the line after the one space that follows the kind. `None` for any other line,
/// an empty text, one that starts with a CR and a kind past 2 among them.
#[inline(always)]
pub(crate) fn read_label<'a>(window: &[u8; 32], line: &'a [u8]) -> Option<(Label<'a>, Odd)> {
    let tabbed = separated_by_tabs(window)?;
    if window[0] != b'L' {
        return None;
    }
    let len = line.len().min(32);
    let classes = classify(window, len);
    let in_window = ((1u64 << len) - 1) as u32;
    let (id_field, kind_field, text_start, odd) = if tabbed {
        let ends = classes.tab & !0b11;
        let id_end = ends & ends.wrapping_neg();
        let ends = ends ^ id_end;
        let kind_end = ends & ends.wrapping_neg();
        if kind_end == 0 || ends != kind_end {
            // No text, or a TAB in it (Q9).
            return None;
        }
        let id_field = id_end - 0b100;
        (
            id_field,
            kind_end - (id_end << 1),
            kind_end.trailing_zeros() as usize + 1,
            0,
        )
    } else {
        if classes.tab != 0 {
            return None;
        }
        let words = in_window & !classes.space & !0b11;
        let id_field = word(words)?;
        let kind_field = word(after(words, id_field))?;
        // The text starts a byte after the kind's end.
        let kind_end = 32 - kind_field.leading_zeros() as usize;
        if kind_end >= len {
            // No text, or a kind that may go on past the window.
            return None;
        }
        (id_field, kind_field, kind_end + 1, Q19)
    };
    // Not empty, and not starting with a CR: a label read here is written, whatever else
    // it holds (the normalizer counts on it, see `read::Op::take_label`).
    let text = line
        .get(text_start..)
        .filter(|text| text.first().is_some_and(|&first| first != b'\r'))?;
    if crate::kanata::scan::contains_past_32(line, b'\t') {
        return None;
    }
    let id = number(window, classes, id_field, 18)?;
    let kind = number(window, classes, kind_field, 18)?;
    if kind.value > 2 {
        return None;
    }
    let label = Label {
        id: id.value,
        kind: kind.value as u8,
        text,
    };
    Some((label, odd | q1(id.odd() | kind.odd())))
}

/// Whether the fields of the line at the start of `window` are separated by TABs (`true`)
/// or by spaces (`false`, Q19), as the byte after the command letter tells; `None` for
/// anything else.
#[inline(always)]
fn separated_by_tabs(window: &[u8; 32]) -> Option<bool> {
    match window[1] {
        b'\t' => Some(true),
        b' ' => Some(false),
        _ => None,
    }
}

/// The repairs of a line that is odd or not.
#[inline(always)]
fn q1(odd: bool) -> Odd {
    if odd {
        Q1
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pieces the random lines are made of.
    const PIECES: [&[u8]; 14] = [
        b"\t",
        b"\t",
        b" ",
        b"  ",
        b"0",
        b"1",
        b"9",
        b"42",
        b"+",
        b"-",
        b"/",
        b"\r",
        b"x",
        b"4294967296",
    ];

    /// The window a reader is given for `line`: its first 32 bytes, its line end, then
    /// bytes of every piece, which must not count.
    fn window_of(line: &[u8]) -> [u8; 32] {
        let mut window = [b'\n'; 32];
        let len = line.len().min(32);
        window[..len].copy_from_slice(&line[..len]);
        for (at, byte) in window.iter_mut().enumerate().skip(len + 1) {
            *byte = PIECES[(at * 7 + line.len()) % 14][0];
        }
        window
    }

    /// Asserts that `line`, read as `read_out` with the repairs `odd`, is what the one-pass
    /// reader makes of it.
    fn assert_read_as_the_one_pass_reader_reads(line: &[u8], odd: Odd, read_out: &Line<&[u8]>) {
        let mut expected = Line::Blank;
        let expected_odd = super::super::fast::parse_into(line, &mut expected);
        assert_eq!(
            (Some(odd), format!("{read_out:?}")),
            (expected_odd, format!("{expected:?}")),
            "{:?}",
            line.escape_ascii().to_string()
        );
    }

    /// Random lines made of the pieces `I`, `R` and `W` lines are made of, read by [`read`]
    /// and by the one-pass reader: whatever `read` takes, it reads as that reader does.
    #[test]
    fn every_line_taken_is_read_as_the_one_pass_reader_reads_it() {
        let mut rng = crate::output::testing::Rng(0x2545_f491_4f6c_dd1d);
        let mut next = |n: usize| rng.below(n as u64) as usize;
        let (mut taken, mut odd_taken, mut retire_empty, mut spaced_taken) = (0, 0, 0, 0);
        for _ in 0..300_000 {
            // Fields separated by TABs, or by spaces (Q19).
            let separator = [b'\t', b'\t', b'\t', b' '][next(4)];
            let mut line = vec![[b'I', b'R', b'W', b'S'][next(4)], separator];
            for field in 0..3 + next(2) {
                for _ in 0..next(3) {
                    line.extend_from_slice(PIECES[next(14)]);
                }
                line.extend_from_slice([&b"3"[..], b"15", b"0", b"123456789012"][next(4)]);
                for _ in 0..next(2) {
                    line.extend_from_slice(PIECES[next(14)]);
                }
                if field < 2 {
                    line.push(separator);
                }
            }
            line.truncate(line.len() - next(4).min(line.len() - 1));
            let window = window_of(&line);
            let Some((numbers, odd)) = read(&window, line.len()) else {
                continue;
            };
            let read_out = Line::Command(numbers.command());
            taken += 1;
            odd_taken += usize::from(odd != 0);
            spaced_taken += usize::from(odd & Q19 != 0);
            retire_empty += usize::from(matches!(
                read_out,
                Line::Command(Command::Retire {
                    kind: RetireType::Empty,
                    ..
                })
            ));
            assert_read_as_the_one_pass_reader_reads(&line, odd, &read_out);
        }
        assert!(taken > 10_000, "{taken} lines taken");
        assert!(odd_taken > 1_000, "{odd_taken} lines with repairs taken");
        assert!(
            retire_empty > 100,
            "{retire_empty} `R` lines without a type"
        );
        assert!(
            spaced_taken > 1_000,
            "{spaced_taken} lines with spaces taken"
        );
    }

    /// Random `L` and `C` lines, read by [`read_label`] and [`read_cycle`] and by the
    /// one-pass reader: whatever they take, they read as that reader does, labels longer
    /// than the window among them.
    #[test]
    fn every_label_and_cycle_taken_is_read_as_the_one_pass_reader_reads_it() {
        let mut rng = crate::output::testing::Rng(0x9e37_79b9_7f4a_7c15);
        let mut next = |n: usize| rng.below(n as u64) as usize;
        let (mut labels, mut cycles, mut spaced, mut long) = (0, 0, 0, 0);
        let texts: [&[u8]; 7] = [
            b"0x80001000: addi a0, a0, 8",
            b"nop",
            b" x",
            b"a/b ",
            b"x\ty",
            b"",
            b"0x80001000: a label that runs well past the window",
        ];
        for _ in 0..300_000 {
            let separator = [b'\t', b'\t', b'\t', b' '][next(4)];
            let command = [b'L', b'L', b'C'][next(3)];
            let mut line = vec![command, separator];
            // A piece now and then anywhere, mostly padding.
            let piece = |line: &mut Vec<u8>, next: &mut dyn FnMut(usize) -> usize| {
                if next(3) == 0 {
                    line.extend_from_slice(PIECES[next(14)]);
                }
            };
            piece(&mut line, &mut next);
            line.extend_from_slice([&b"3"[..], b"15", b"0", b"+7", b"007"][next(5)]);
            piece(&mut line, &mut next);
            if command == b'L' || next(2) == 0 {
                line.push(separator);
                piece(&mut line, &mut next);
                line.extend_from_slice([&b"0"[..], b"1", b"2", b"3", b"01", b"+1"][next(6)]);
                piece(&mut line, &mut next);
                if next(8) != 0 {
                    line.push(separator);
                }
                line.extend_from_slice(texts[next(7)]);
            }
            let window = window_of(&line);
            let mut read_out = Line::Blank;
            let read = match command {
                b'L' => read_label(&window, &line).map(|(label, odd)| {
                    read_out = label.line();
                    odd
                }),
                _ => read_cycle(&window, line.len()).map(|(numbers, odd)| {
                    read_out = Line::Command(numbers.command());
                    odd
                }),
            };
            let Some(odd) = read else {
                continue;
            };
            labels += usize::from(command == b'L');
            cycles += usize::from(command == b'C');
            spaced += usize::from(odd & Q19 != 0);
            long += usize::from(line.len() > 32);
            assert_read_as_the_one_pass_reader_reads(&line, odd, &read_out);
        }
        assert!(labels > 10_000, "{labels} labels taken");
        assert!(cycles > 5_000, "{cycles} cycles taken");
        assert!(spaced > 2_000, "{spaced} lines with spaces taken");
        assert!(long > 1_000, "{long} labels longer than the window taken");
    }

    #[test]
    fn rarer_lines_are_left_to_the_other_readers() {
        for line in [
            &b"I 1 2 3 4"[..],      // Q19, a field too many
            b"I 1 2\t3",            // a TAB among spaces
            b"I 1 2",               // Q19, a field missing
            b"I\t1\t2",             // a field missing
            b"I\t1\t-2\t0",         // a minus
            b"R\t1\t2\t",           // an empty type
            b"W\t1\t2\t4294967296", // a type past u32
            b"I\t1\t2\t3 // x",     // Q3
            b"I\t1\t2\t3\r",        // a CR
            b"S\t1\t0\tF",
            b"I\t1\t2\tthirty-three bytes in this line",
        ] {
            let mut window = [b'\n'; 32];
            let len = line.len().min(32);
            window[..len].copy_from_slice(&line[..len]);
            assert!(
                read(&window, line.len()).is_none(),
                "{:?}",
                line.escape_ascii().to_string()
            );
        }
    }
}
