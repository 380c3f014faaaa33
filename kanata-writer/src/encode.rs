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

/// Writes `v` in decimal at the start of `out` (which has room for 20 digits); returns the
/// number of digits.
#[inline(always)]
fn digits(out: &mut [u8], mut v: u64) -> usize {
    let out = &mut out[..20];
    let n = v.checked_ilog10().unwrap_or(0) as usize + 1;
    let mut at = n;
    while v >= 100 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        at -= 2;
        out[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if v >= 10 {
        let pair = v as usize * 2;
        out[at - 2..at].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        out[at - 1] = b'0' + v as u8;
    }
    n
}

/// How many bytes past the end of the text a fast-path call may write into: the writer keeps
/// at least this much room after its buffer's text, so that the fast encoders below write
/// fixed-width blocks (most of them past the line's end, overwritten by the next line)
/// instead of checking room field by field.
pub(crate) const ROOM: usize = 512;

/// Longest label text the fast path takes; longer text goes through the general path, which
/// makes room for it.
pub(crate) const FAST_LABEL: usize = 256;

/// The start of every line about one instruction, `?\t<file id>\t`, rendered once when it
/// begins: re-formatting the id on every line cost more than the rest of the line. The first
/// byte, where the command goes, holds the length meanwhile, so that the head is 24 bytes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LineHead([u8; 24]);

impl LineHead {
    pub(crate) fn new(id: u64) -> LineHead {
        let mut bytes = [0; 24];
        bytes[1] = b'\t';
        let end = 2 + digits(&mut bytes[2..22], id);
        bytes[end] = b'\t';
        bytes[0] = (end + 1) as u8;
        LineHead(bytes)
    }

    /// Makes this the head of id + 1: the id's decimal digits incremented in place.
    #[inline]
    pub(crate) fn advance(&mut self) {
        let bytes = &mut self.0;
        let len = usize::from(bytes[0]);
        // Digits are bytes[2..len - 1].
        if increment(&mut bytes[2..len - 1]) {
            // All nines became `10…0`: one digit more.
            bytes[len - 1] = b'0';
            bytes[len] = b'\t';
            bytes[0] = (len + 1) as u8;
        }
    }

    /// The head as three words, to be loaded once for several lines: loads of the head that
    /// come after stores into the buffer were seen to wait on them.
    #[inline(always)]
    fn words(&self) -> HeadWords {
        let word = |at: usize| u64::from_le_bytes(self.0[at..at + 8].try_into().unwrap());
        HeadWords([word(0), word(8), word(16)])
    }

    /// Writes the head with `command` at `out[0]`; returns where the next field starts.
    #[inline(always)]
    fn put(&self, out: &mut [u8], command: u8) -> usize {
        out[..24].copy_from_slice(&self.0);
        out[0] = command;
        // The length is at most 23; saying so lets the compiler drop the bounds checks after.
        usize::from(self.0[0]) & 31
    }
}

/// A [`LineHead`] in registers.
#[derive(Clone, Copy)]
struct HeadWords([u64; 3]);

impl HeadWords {
    /// As [`LineHead::put`].
    #[inline(always)]
    fn put(self, out: &mut [u8], command: u8) -> usize {
        let [first, second, third] = self.0;
        out[..8].copy_from_slice(&(first & !0xff | u64::from(command)).to_le_bytes());
        out[8..16].copy_from_slice(&second.to_le_bytes());
        out[16..24].copy_from_slice(&third.to_le_bytes());
        (first & 31) as usize
    }
}

/// Adds one to the decimal number `digits`; true if it was all nines, which leaves `10…0`
/// without its last zero (the caller appends it).
#[inline]
fn increment(digits: &mut [u8]) -> bool {
    for digit in digits.iter_mut().rev() {
        if *digit < b'9' {
            *digit += 1;
            return false;
        }
        *digit = b'0';
    }
    if let Some(first) = digits.first_mut() {
        *first = b'1';
    }
    true
}

/// The end of an `R` line, `<retire id>\t<0|1>\n`, rendered ahead: the serial retire ids of
/// [`Writer::retire`](crate::Writer::retire) are kept rendered and incremented, like the file
/// ids. The last byte holds the length.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RetireTail([u8; 24]);

impl RetireTail {
    /// What a flush writes: retire id 0, type 1.
    pub(crate) const FLUSHED: RetireTail = RetireTail([
        b'0', b'\t', b'1', b'\n', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4,
    ]);

    pub(crate) fn new(retire_id: u64, flushed: bool) -> RetireTail {
        let mut bytes = [0; 24];
        let n = digits(&mut bytes[..20], retire_id);
        bytes[n..n + 3].copy_from_slice(if flushed { b"\t1\n" } else { b"\t0\n" });
        bytes[23] = (n + 3) as u8;
        RetireTail(bytes)
    }

    /// Makes this the tail of the next retire id (of a retirement).
    #[inline]
    pub(crate) fn advance(&mut self) {
        let bytes = &mut self.0;
        let len = usize::from(bytes[23]);
        if increment(&mut bytes[..len - 3]) {
            bytes[len - 3..len + 1].copy_from_slice(b"0\t0\n");
            bytes[23] = (len + 1) as u8;
        }
    }
}

/// The end of a stage line in lanes 0–9, `<lane>\t<name>\n`, rendered once per stage name.
/// The first byte, where the lane digit goes, holds the length meanwhile; 0 for a name too
/// long for it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StageTail([u8; 32]);

impl StageTail {
    /// No tail: lines of this stage go through the general encoder.
    pub(crate) const NONE: StageTail = StageTail([0; 32]);

    pub(crate) fn new(name: &[u8]) -> StageTail {
        let mut tail = [0; 32];
        // Up to 31 bytes, so that a length fits in five bits.
        if name.len() + 3 < tail.len() {
            tail[0] = (name.len() + 3) as u8;
            tail[1] = b'\t';
            tail[2..2 + name.len()].copy_from_slice(name);
            tail[2 + name.len()] = b'\n';
        }
        StageTail(tail)
    }

    /// Whether the fast encoder can write this stage's lines.
    #[inline(always)]
    pub(crate) fn fits(&self) -> bool {
        self.0[0] != 0
    }
}

/// A stage line in `out`; returns its length (at most 54, and the compiler sees 62).
#[inline(always)]
fn stage_line(
    out: &mut [u8; 64],
    command: u8,
    head: HeadWords,
    lane: u32,
    tail: &StageTail,
) -> usize {
    debug_assert!(lane < 10 && tail.fits());
    let at = head.put(out, command);
    out[at..at + 32].copy_from_slice(&tail.0);
    out[at] = b'0' + lane as u8;
    at + (usize::from(tail.0[0]) & 31)
}

/// `S` or `E` `<file id> <lane> <stage>` for a lane below 10 and a stage whose tail
/// [`fits`](StageTail::fits), at `pos`; returns the position after it. Writes 64 bytes.
#[inline(always)]
pub(crate) fn stage_fast(
    buf: &mut [u8],
    pos: usize,
    command: u8,
    head: &LineHead,
    lane: u32,
    tail: &StageTail,
) -> usize {
    let out: &mut [u8; 64] = (&mut buf[pos..pos + 64]).try_into().unwrap();
    pos + stage_line(out, command, head.words(), lane, tail)
}

/// What [`Writer::enter`](crate::Writer::enter) writes: `E` for the stage `closed` if
/// `writes_closed`, then `S` for `entered`, as [`stage_fast`] would; one bounds check for
/// both. The `E` line is formatted either way and then kept or not, which costs less than a
/// mispredicted branch. Writes 128 bytes.
#[inline(always)]
pub(crate) fn enter_fast(
    buf: &mut [u8],
    pos: usize,
    head: &LineHead,
    lane: u32,
    writes_closed: bool,
    closed: &StageTail,
    entered: &StageTail,
) -> usize {
    let head = head.words();
    let out: &mut [u8; 128] = (&mut buf[pos..pos + 128]).try_into().unwrap();
    let first: &mut [u8; 64] = (&mut out[..64]).try_into().unwrap();
    let closed_len = stage_line(first, b'E', head, lane, closed);
    let at = closed_len * usize::from(writes_closed);
    let line: &mut [u8; 64] = (&mut out[at..at + 64]).try_into().unwrap();
    pos + at + stage_line(line, b'S', head, lane, entered)
}

/// What [`Writer::retire`](crate::Writer::retire) and [`Writer::flush`](crate::Writer::flush)
/// write: `E` for the stage open in lane 0 and then lane 1 if `writes` says so, then `R`
/// with `end`; each `E` formatted either way and then kept or not, as in [`enter_fast`].
/// Writes 192 bytes.
#[inline(always)]
pub(crate) fn end_fast(
    buf: &mut [u8],
    pos: usize,
    head: &LineHead,
    writes: [bool; 2],
    tails: [&StageTail; 2],
    end: &RetireTail,
) -> usize {
    let head = head.words();
    let out: &mut [u8; 192] = (&mut buf[pos..pos + 192]).try_into().unwrap();
    let lane_0: &mut [u8; 64] = (&mut out[..64]).try_into().unwrap();
    let at = stage_line(lane_0, b'E', head, 0, tails[0]) * usize::from(writes[0]);
    let lane_1: &mut [u8; 64] = (&mut out[at..at + 64]).try_into().unwrap();
    let at = at + stage_line(lane_1, b'E', head, 1, tails[1]) * usize::from(writes[1]);
    let r: &mut [u8; 64] = (&mut out[at..at + 64]).try_into().unwrap();
    let r_at = head.put(r, b'R');
    r[r_at..r_at + 24].copy_from_slice(&end.0);
    pos + at + r_at + (usize::from(end.0[23]) & 31)
}

/// `C <n>`, n ≥ 1, at `pos`; returns the position after it. Writes 23 bytes at most.
#[inline]
pub(crate) fn cycle_fast(buf: &mut [u8], pos: usize, cycles: u64) -> usize {
    debug_assert!(cycles > 0);
    let out = &mut buf[pos..pos + 24];
    out[0] = b'C';
    out[1] = b'\t';
    let at = 2 + digits(&mut out[2..22], cycles);
    out[at] = b'\n';
    pos + at + 1
}

/// `I <file id> <sim id> <thread>` at `pos`; returns the position after it. Writes 64 bytes
/// at most.
#[inline(always)]
pub(crate) fn insn_fast(
    buf: &mut [u8],
    pos: usize,
    head: &LineHead,
    sim_id: u64,
    thread: u32,
) -> usize {
    let out = &mut buf[pos..pos + 64];
    let mut at = head.put(out, b'I');
    at += digits(&mut out[at..at + 20], sim_id);
    out[at] = b'\t';
    at += 1;
    at += digits(&mut out[at..at + 20], u64::from(thread));
    out[at] = b'\n';
    pos + at + 1
}

/// `R <file id> <retire id> <0 retired | 1 flushed>` at `pos`; returns the position after
/// it. Writes 64 bytes.
#[inline(always)]
pub(crate) fn end_of_life_fast(
    buf: &mut [u8],
    pos: usize,
    head: &LineHead,
    tail: &RetireTail,
) -> usize {
    let out: &mut [u8; 64] = (&mut buf[pos..pos + 64]).try_into().unwrap();
    let at = head.put(out, b'R');
    out[at..at + 24].copy_from_slice(&tail.0);
    pos + at + (usize::from(tail.0[23]) & 31)
}

/// `W <consumer> <producer> <kind>` at `pos`; returns the position after it. Writes 72 bytes
/// at most.
#[inline]
pub(crate) fn dependency_fast(
    buf: &mut [u8],
    pos: usize,
    consumer: &LineHead,
    producer: u64,
    kind: u32,
) -> usize {
    let out = &mut buf[pos..pos + 72];
    let mut at = consumer.put(out, b'W');
    at += digits(&mut out[at..at + 20], producer);
    out[at] = b'\t';
    at += 1;
    at += digits(&mut out[at..at + 20], u64::from(kind));
    out[at] = b'\n';
    pos + at + 1
}

/// `L <file id> <kind> <text>` at `pos` for text that needs no escaping (see
/// [`may_need_escaping`]) and is at most [`FAST_LABEL`] bytes; returns the position after it.
#[inline(always)]
pub(crate) fn label_fast(
    buf: &mut [u8],
    pos: usize,
    head: &LineHead,
    kind: u8,
    text: &[u8],
) -> usize {
    let out = &mut buf[pos..pos + 32 + FAST_LABEL];
    let at = head.put(out, b'L');
    out[at] = b'0' + kind;
    out[at + 1] = b'\t';
    let text_at = at + 2;
    copy_text(&mut out[text_at..text_at + text.len()], text);
    out[text_at + text.len()] = b'\n';
    pos + text_at + text.len() + 1
}

/// `out.copy_from_slice(text)`: text up to 64 bytes in two or four overlapping fixed-size
/// pieces, which costs less than a call to `memcpy` for the short text of most labels.
#[inline(always)]
fn copy_text(out: &mut [u8], text: &[u8]) {
    let n = text.len();
    debug_assert_eq!(out.len(), n);
    match n {
        8..=16 => {
            out[..8].copy_from_slice(&text[..8]);
            out[n - 8..].copy_from_slice(&text[n - 8..]);
        }
        17..=32 => {
            out[..16].copy_from_slice(&text[..16]);
            out[n - 16..].copy_from_slice(&text[n - 16..]);
        }
        33..=64 => {
            out[..32].copy_from_slice(&text[..32]);
            out[n - 32..].copy_from_slice(&text[n - 32..]);
        }
        _ => out.copy_from_slice(text),
    }
}

/// Whether label text may hold a byte that escaping changes (LF, CR, TAB). False means
/// certainly not; true may be a false alarm (any byte below 14), which the general path sorts
/// out. Eight bytes per step, without a branch per byte.
#[inline(always)]
pub(crate) fn may_need_escaping(text: &[u8]) -> bool {
    flags_bytes_below_14(text, false)
}

/// [`may_need_escaping`], or the text holds a byte that is not ASCII (and so may not be
/// UTF-8): false means the text is ASCII and escaping leaves it as it is.
#[inline(always)]
pub(crate) fn may_need_escaping_or_utf8_check(text: &[u8]) -> bool {
    flags_bytes_below_14(text, true)
}

/// Whether `text` may hold a byte below 14 (exactly so, or a false alarm above one), or,
/// with `or_non_ascii`, a byte of 128 or more.
#[inline(always)]
fn flags_bytes_below_14(text: &[u8], or_non_ascii: bool) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    // Per byte, the high bit of `(w - 14) & !w` is set for every byte below 14, and only
    // spuriously above such a byte (a borrow), so the whole word flags exactly when one is.
    // `| w` adds the bytes whose own high bit is set.
    let flags_of = |w: u64| w.wrapping_sub(ONES * 14) & !w | if or_non_ascii { w } else { 0 };
    if text.len() < 8 {
        return text
            .iter()
            .any(|&b| b <= b'\r' || or_non_ascii && !b.is_ascii());
    }
    let word = |chunk: &[u8]| u64::from_le_bytes(chunk.try_into().unwrap_or([0xff; 8]));
    let mut flags = flags_of(word(&text[text.len() - 8..]));
    for chunk in text.chunks_exact(8) {
        flags |= flags_of(word(chunk));
    }
    flags & (ONES << 7) != 0
}

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

    /// Runs a fast encoder on a buffer with [`ROOM`] after `pos` (filled with junk, which
    /// must not show) and returns the line it wrote.
    fn fast(pos: usize, write: impl FnOnce(&mut [u8], usize) -> usize) -> String {
        let mut buf = vec![b'#'; pos + ROOM];
        let end = write(&mut buf, pos);
        assert!(buf[..pos].iter().all(|&b| b == b'#'), "wrote before pos");
        String::from_utf8(buf[pos..end].to_vec()).unwrap()
    }

    #[test]
    fn numbers_are_plain_decimals_at_every_width() {
        let widths = [0u64, 1, 9, 10, 99, 100, 101, 999, 1000, 999_999, 1_000_000];
        for v in widths.into_iter().chain([u64::MAX / 10, u64::MAX]) {
            let c = fast(3, |buf, pos| cycle_fast(buf, pos, v.max(1)));
            assert_eq!(c, format!("C\t{}\n", v.max(1)));
            let head = LineHead::new(v);
            let i = fast(1, |buf, pos| {
                insn_fast(buf, pos, &head, u64::MAX - v, u32::MAX)
            });
            assert_eq!(i, format!("I\t{v}\t{}\t{}\n", u64::MAX - v, u32::MAX));
            let tail = RetireTail::new(v, false);
            let r = fast(0, |buf, pos| end_of_life_fast(buf, pos, &head, &tail));
            assert_eq!(r, format!("R\t{v}\t{v}\t0\n"));
            let tail = RetireTail::new(v, true);
            let r = fast(0, |buf, pos| end_of_life_fast(buf, pos, &head, &tail));
            assert_eq!(r, format!("R\t{v}\t{v}\t1\n"));
            let w = fast(5, |buf, pos| {
                dependency_fast(buf, pos, &head, v / 3, u32::MAX)
            });
            assert_eq!(w, format!("W\t{v}\t{}\t{}\n", v / 3, u32::MAX));
        }
        let mut buf = Vec::new();
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
    fn the_next_head_is_the_next_id() {
        let mut starts = vec![0u64, 1, u64::MAX / 10 - 20, u64::MAX - 30];
        starts.extend((1..20).map(|e| 10u64.pow(e).saturating_sub(12)));
        for start in starts {
            let mut head = LineHead::new(start);
            let mut tail = RetireTail::new(start, false);
            for id in start..start + 25 {
                assert_eq!(head.0, LineHead::new(id).0, "{id}");
                assert_eq!(tail.0[..23], RetireTail::new(id, false).0[..23], "{id}");
                assert_eq!(tail.0[23], RetireTail::new(id, false).0[23], "{id}");
                head.advance();
                tail.advance();
            }
        }
    }

    #[test]
    fn a_flush_tail_is_retire_id_0_type_1() {
        assert_eq!(RetireTail::FLUSHED.0, RetireTail::new(0, true).0);
    }

    #[test]
    fn stage_tails_fit_names_up_to_28_bytes() {
        let head = LineHead::new(u64::MAX);
        for len in 1..=28 {
            let name = "n".repeat(len);
            let tail = StageTail::new(name.as_bytes());
            assert!(tail.fits());
            for lane in [0, 1, 9] {
                let line = fast(2, |buf, pos| stage_fast(buf, pos, b'E', &head, lane, &tail));
                assert_eq!(line, format!("E\t{}\t{lane}\t{name}\n", u64::MAX));
            }
        }
        assert!(!StageTail::new("n".repeat(29).as_bytes()).fits());
    }

    #[test]
    fn fast_labels_are_the_text_as_given() {
        let head = LineHead::new(12);
        let texts = (1..=70).map(|n| ('a'..='z').cycle().take(n).collect::<String>());
        for text in texts.chain(["0x80001a00: addi a0, a0, 1".into(), "y".repeat(FAST_LABEL)]) {
            let text = &text;
            let line = fast(1, |buf, pos| {
                label_fast(buf, pos, &head, 2, text.as_bytes())
            });
            assert_eq!(line, format!("L\t12\t2\t{text}\n"));
        }
    }

    #[test]
    fn escaping_and_text_to_check_are_never_missed() {
        for len in 0..40 {
            let plain: Vec<u8> = (0..len).map(|i| b"a\xe3 ~\x7f\xff"[i % 6]).collect();
            let ascii: Vec<u8> = (0..len).map(|i| b"a ~\x7f\x0e\\"[i % 6]).collect();
            assert!(!may_need_escaping(&plain), "{plain:?}");
            assert!(!may_need_escaping_or_utf8_check(&ascii), "{ascii:?}");
            for at in 0..len {
                for b in [b'\n', b'\r', b'\t', 0, 0x80, 0x8d, 0xc3, 0xe3, 0xff] {
                    let mut text = ascii.clone();
                    text[at] = b;
                    assert!(may_need_escaping_or_utf8_check(&text), "{text:?}");
                    if b <= b'\r' {
                        let mut text = plain.clone();
                        text[at] = b;
                        assert!(may_need_escaping(&text), "{text:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn commands_are_one_tab_separated_line() {
        let mut buf = Vec::new();
        header(&mut buf, -1);
        insn(&mut buf, 0, u64::MAX, 3u32);
        stage(&mut buf, b'S', 0, 1, b"stl");
        stage(&mut buf, b'E', 0, 1, b"stl");
        end_of_life(&mut buf, 0, 5u64, true);
        label_start(&mut buf, 0, 2);
        push_label_text(&mut buf, b"x");
        buf.push(b'\n');
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "Kanata\t0004\nC=\t-1\nI\t0\t18446744073709551615\t3\nS\t0\t1\tstl\n\
             E\t0\t1\tstl\nR\t0\t5\t1\nL\t0\t2\tx\n"
        );
    }
}
