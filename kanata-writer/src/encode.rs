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

/// One line appended byte by byte. Lines are a dozen bytes and their pieces (a digit or
/// three, a TAB, a one-letter stage) are shorter still: pushing bytes beats a `memcpy` call per
/// piece at these lengths, and the writer keeps enough spare capacity that a push never
/// reallocates in practice.
struct Line<'a> {
    buf: &'a mut Vec<u8>,
}

impl<'a> Line<'a> {
    /// Stage names longer than this are copied in one piece.
    const SHORT: usize = 16;

    #[inline]
    fn new(buf: &'a mut Vec<u8>, command: &[u8; 2]) -> Line<'a> {
        buf.extend_from_slice(command);
        Line { buf }
    }

    #[inline]
    fn byte(&mut self, b: u8) {
        self.buf.push(b);
    }

    #[inline]
    fn short(&mut self, s: &[u8]) {
        if s.len() <= Line::SHORT {
            for &b in s {
                self.buf.push(b);
            }
        } else {
            self.buf.extend_from_slice(s);
        }
    }

    #[inline]
    fn int<I: itoa::Integer>(&mut self, value: I) {
        for &b in itoa::Buffer::new().format(value).as_bytes() {
            self.buf.push(b);
        }
    }

    #[inline]
    fn finish(self) {
        self.buf.push(b'\n');
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
    line.int(cycles);
    line.finish();
}

/// `I <file id> <sim id> <thread>`.
#[inline]
pub(crate) fn insn<S: itoa::Integer, T: itoa::Integer>(
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
    line.int(insn);
    line.byte(b'\t');
    line.int(lane);
    line.byte(b'\t');
    line.short(name);
    line.finish();
}

/// `R <file id> <retire id> <0 retired | 1 flushed>`.
#[inline]
pub(crate) fn end_of_life<R: itoa::Integer>(
    buf: &mut Vec<u8>,
    insn: u64,
    retire_id: R,
    flushed: bool,
) {
    let mut line = Line::new(buf, b"R\t");
    line.int(insn);
    line.byte(b'\t');
    line.int(retire_id);
    line.short(if flushed { b"\t1" } else { b"\t0" });
    line.finish();
}

/// `W <consumer> <producer> <kind>`.
#[inline]
pub(crate) fn dependency(buf: &mut Vec<u8>, consumer: u64, producer: u64, kind: u32) {
    let mut line = Line::new(buf, b"W\t");
    line.int(consumer);
    line.byte(b'\t');
    line.int(producer);
    line.byte(b'\t');
    line.int(kind);
    line.finish();
}

/// `L <file id> <kind> ` up to the text; the caller appends the text with
/// [`push_label_text`] and ends the line with a `\n`.
#[inline]
pub(crate) fn label_start(buf: &mut Vec<u8>, insn: u64, kind: u8) {
    let mut line = Line::new(buf, b"L\t");
    line.int(insn);
    line.short(&[b'\t', b'0' + kind, b'\t']);
}

/// Appends label text so that it stays on one line and in one field: a line feed becomes the
/// two characters `\n` (Konata shows them as a line break), a carriage return is dropped and a
/// TAB becomes a space. Everything else is kept as written.
#[inline]
pub(crate) fn push_label_text(buf: &mut Vec<u8>, mut text: &[u8]) {
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
