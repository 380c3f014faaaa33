//! The encoder: appends one Kanata command line at a time to a byte buffer.
//!
//! Nothing here checks anything; [`Writer`](crate::Writer) decides what may be written and
//! these functions only turn a command into the bytes of its canonical line (§4 of the
//! format spec): one TAB between fields, plain decimals, LF line ends.

use memchr::memchr3;

/// The header line that starts every trace (format version 4).
pub(crate) const HEADER: &[u8] = b"Kanata\t0004\n";

#[inline]
fn push_int<I: itoa::Integer>(buf: &mut Vec<u8>, value: I) {
    // `itoa` formats into a stack buffer without the machinery of `fmt`.
    buf.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// An integer as the encoder writes it: a sign and a magnitude.
pub(crate) trait Int: Copy {
    /// Whether it is negative, and its absolute value (`None` if that needs more than 64 bits).
    fn parts(self) -> (bool, Option<u64>);
}

impl Int for u64 {
    #[inline(always)]
    fn parts(self) -> (bool, Option<u64>) {
        (false, Some(self))
    }
}

impl Int for u32 {
    #[inline(always)]
    fn parts(self) -> (bool, Option<u64>) {
        (false, Some(u64::from(self)))
    }
}

impl Int for i64 {
    #[inline(always)]
    fn parts(self) -> (bool, Option<u64>) {
        (self < 0, Some(self.unsigned_abs()))
    }
}

impl Int for i128 {
    #[inline(always)]
    fn parts(self) -> (bool, Option<u64>) {
        (self < 0, u64::try_from(self.unsigned_abs()).ok())
    }
}

/// Two-digit pairs, for formatting two digits per division.
static PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// One line written into a window of zeroed bytes reserved at the end of the buffer, then
/// cut to its length. Lines are a dozen bytes: one resize and plain indexed stores cost far
/// less than a capacity check (or a `memcpy` call) per field.
struct Line<'a> {
    buf: &'a mut Vec<u8>,
    pos: usize,
}

impl<'a> Line<'a> {
    /// Room for a command, four numbers of up to 20 digits and a sign each, separators, and a
    /// stage name of up to [`Line::SHORT`] bytes.
    const WINDOW: usize = 112;
    /// Stage names up to this length go through the window; longer ones are appended after.
    const SHORT: usize = 16;

    #[inline(always)]
    fn new(buf: &'a mut Vec<u8>, command: &[u8; 2]) -> Line<'a> {
        let pos = buf.len();
        buf.extend_from_slice(&[0; Line::WINDOW]);
        buf[pos] = command[0];
        buf[pos + 1] = command[1];
        Line { buf, pos: pos + 2 }
    }

    #[inline(always)]
    fn byte(&mut self, b: u8) {
        self.buf[self.pos] = b;
        self.pos += 1;
    }

    #[inline(always)]
    fn uint(&mut self, mut v: u64) {
        let digits = v.checked_ilog10().unwrap_or(0) as usize + 1;
        let end = self.pos + digits;
        let mut at = end;
        while v >= 100 {
            let pair = (v % 100) as usize * 2;
            v /= 100;
            at -= 2;
            self.buf[at] = PAIRS[pair];
            self.buf[at + 1] = PAIRS[pair + 1];
        }
        if v >= 10 {
            let pair = v as usize * 2;
            self.buf[at - 2] = PAIRS[pair];
            self.buf[at - 1] = PAIRS[pair + 1];
        } else {
            self.buf[at - 1] = b'0' + v as u8;
        }
        self.pos = end;
    }

    #[inline(always)]
    fn int<I: Int + itoa::Integer>(&mut self, value: I) {
        match value.parts() {
            (negative, Some(magnitude)) => {
                if negative {
                    self.byte(b'-');
                }
                self.uint(magnitude);
            }
            // Beyond 64 bits (only `begin_signed` ids): the slow path is fine.
            (_, None) => {
                for &b in itoa::Buffer::new().format(value).as_bytes() {
                    self.byte(b);
                }
            }
        }
    }

    /// Appends `name` and ends the line.
    #[inline(always)]
    fn finish_with_name(mut self, name: &[u8]) {
        if name.len() <= Line::SHORT {
            for &b in name {
                self.byte(b);
            }
            self.finish();
        } else {
            self.buf.truncate(self.pos);
            self.buf.extend_from_slice(name);
            self.buf.push(b'\n');
        }
    }

    #[inline(always)]
    fn finish(mut self) {
        self.byte(b'\n');
        self.buf.truncate(self.pos);
    }

    /// Cuts the window without a line end (the caller appends the rest).
    #[inline(always)]
    fn open_end(self) {
        self.buf.truncate(self.pos);
    }
}

/// `Kanata 0004` and `C= <start>`.
pub(crate) fn header(buf: &mut Vec<u8>, start_cycle: i64) {
    buf.extend_from_slice(HEADER);
    buf.extend_from_slice(b"C=\t");
    push_int(buf, start_cycle);
    buf.push(b'\n');
}

/// `C <n>`, n ≥ 1.
#[inline]
pub(crate) fn cycle_delta(buf: &mut Vec<u8>, cycles: u64) {
    debug_assert!(cycles > 0);
    let mut line = Line::new(buf, b"C\t");
    line.uint(cycles);
    line.finish();
}

/// `I <file id> <sim id> <thread>`.
#[inline]
pub(crate) fn insn<S: Int + itoa::Integer, T: Int + itoa::Integer>(
    buf: &mut Vec<u8>,
    insn: u64,
    sim_id: S,
    thread: T,
) {
    let mut line = Line::new(buf, b"I\t");
    line.int(insn);
    line.byte(b'\t');
    line.int(sim_id);
    line.byte(b'\t');
    line.int(thread);
    line.finish();
}

/// `S` or `E` `<file id> <lane> <stage>`.
#[inline]
pub(crate) fn stage(buf: &mut Vec<u8>, command: u8, insn: u64, lane: u32, name: &[u8]) {
    let mut line = Line::new(buf, &[command, b'\t']);
    line.uint(insn);
    line.byte(b'\t');
    line.uint(u64::from(lane));
    line.byte(b'\t');
    line.finish_with_name(name);
}

/// `R <file id> <retire id> <0 retired | 1 flushed>`.
#[inline]
pub(crate) fn end_of_life<R: Int + itoa::Integer>(
    buf: &mut Vec<u8>,
    insn: u64,
    retire_id: R,
    flushed: bool,
) {
    let mut line = Line::new(buf, b"R\t");
    line.uint(insn);
    line.byte(b'\t');
    line.int(retire_id);
    line.byte(b'\t');
    line.byte(if flushed { b'1' } else { b'0' });
    line.finish();
}

/// `W <consumer> <producer> <kind>`.
#[inline]
pub(crate) fn dependency(buf: &mut Vec<u8>, consumer: u64, producer: u64, kind: u32) {
    let mut line = Line::new(buf, b"W\t");
    line.uint(consumer);
    line.byte(b'\t');
    line.uint(producer);
    line.byte(b'\t');
    line.uint(u64::from(kind));
    line.finish();
}

/// `L <file id> <kind> ` up to the text; the caller appends the text with
/// [`push_label_text`] and ends the line with a `\n`.
#[inline]
pub(crate) fn label_start(buf: &mut Vec<u8>, insn: u64, kind: u8) {
    let mut line = Line::new(buf, b"L\t");
    line.uint(insn);
    line.byte(b'\t');
    line.byte(b'0' + kind);
    line.byte(b'\t');
    line.open_end();
}

/// Appends label text so that it stays on one line and in one field: a line feed becomes the
/// two characters `\n` (Konata shows them as a line break), a carriage return is dropped and a
/// TAB becomes a space. Everything else is kept as written.
#[inline]
pub(crate) fn push_label_text(buf: &mut Vec<u8>, mut text: &[u8]) {
    // Nearly all text has no byte to escape; this test vectorises, `memchr3` on short text
    // does not pay for its dispatch.
    if text.iter().all(|&b| b > b'\r') {
        buf.extend_from_slice(text);
        return;
    }
    while let Some(at) = memchr3(b'\n', b'\r', b'\t', text) {
        buf.extend_from_slice(&text[..at]);
        match text[at] {
            b'\n' => buf.extend_from_slice(b"\\n"),
            b'\t' => buf.push(b' '),
            _ => {}
        }
        text = &text[at + 1..];
    }
    buf.extend_from_slice(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label_text(text: &str) -> String {
        let mut buf = Vec::new();
        push_label_text(&mut buf, text.as_bytes());
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn label_text_escapes_line_breaks_drops_cr_and_replaces_tabs() {
        assert_eq!(label_text("a\r\nb"), "a\\nb");
        assert_eq!(label_text("a\tb\n"), "a b\\n");
        assert_eq!(label_text("  kept as written "), "  kept as written ");
        assert_eq!(label_text("literal \\n stays"), "literal \\n stays");
    }

    #[test]
    fn numbers_are_plain_decimals_at_every_width() {
        let mut buf = Vec::new();
        for v in [0u64, 9, 10, 99, 100, 101, 999_999, 1_000_000, u64::MAX] {
            buf.clear();
            cycle_delta(&mut buf, v.max(1));
            assert_eq!(buf, format!("C\t{}\n", v.max(1)).into_bytes());
        }
        for v in [
            i128::from(i64::MIN),
            -1,
            0,
            i128::from(u64::MAX),
            i128::MAX,
            i128::MIN,
        ] {
            buf.clear();
            insn(&mut buf, 7, v, -3i64);
            assert_eq!(buf, format!("I\t7\t{v}\t-3\n").into_bytes());
        }
        let long = "x".repeat(40);
        buf.clear();
        stage(&mut buf, b'S', u64::MAX, u32::MAX, long.as_bytes());
        assert_eq!(
            buf,
            format!("S\t{}\t{}\t{long}\n", u64::MAX, u32::MAX).into_bytes()
        );
    }

    #[test]
    fn commands_are_one_tab_separated_line() {
        let mut buf = Vec::new();
        header(&mut buf, -1);
        insn(&mut buf, 0, u64::MAX, 3u32);
        stage(&mut buf, b'S', 0, 1, b"stl");
        cycle_delta(&mut buf, 12);
        stage(&mut buf, b'E', 0, 1, b"stl");
        dependency(&mut buf, 0, 0, 7);
        end_of_life(&mut buf, 0, 5u64, true);
        label_start(&mut buf, 0, 2);
        push_label_text(&mut buf, b"x");
        buf.push(b'\n');
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "Kanata\t0004\nC=\t-1\nI\t0\t18446744073709551615\t3\nS\t0\t1\tstl\nC\t12\n\
             E\t0\t1\tstl\nW\t0\t0\t7\nR\t0\t5\t1\nL\t0\t2\tx\n"
        );
    }
}
