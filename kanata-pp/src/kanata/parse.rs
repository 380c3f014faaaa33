//! Reading one line of a Kanata log into a command, with the line-level repairs of the quirk
//! catalogue: padding and trailing blanks (Q1), header variants (Q2), comments and unknown
//! lines (Q3), the bare `C` (Q4b), TABs inside labels (Q9), the type of `R` (Q13, raw),
//! space-separated fields (Q19) and lanes written oddly (Q20).
//!
//! Works on bytes: a line is split in place and numbers are parsed without allocating. Only
//! a label whose text must be rebuilt (Q9, Q19) is copied, into a buffer the caller keeps.

use std::fmt;

use bstr::ByteSlice;
use memchr::memchr;

use crate::diag::{Diagnostics, Rule};

mod fast;
mod layout;
mod number_line;
mod stage_line;

pub(crate) use number_line::{Label, Numbers};

pub(crate) use stage_line::{
    read_plain as read_plain_stage_line, starts as starts_stage_line, StageLine,
};

/// The Q1 report of a command line that was padded or had trailing fields (both readers).
const Q1_COMMAND: &str = "padded number, white space or trailing empty field";
/// The Q1 report of such an `L` line.
const Q1_LABEL: &str = "padded number or trailing empty field";
/// The Q19 report (both readers).
const Q19_SPACES: &str = "fields separated by spaces, not TABs";

/// What one input line is. `T` is how text is held: a slice of the line while parsing,
/// a [`Span`](crate::kanata::read::Span) between threads, owned bytes when held back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Line<T> {
    /// Empty or only white space.
    Blank,
    /// A `#` or `//` comment line.
    Comment,
    /// `Kanata <version>`.
    Header { version: T },
    /// A command.
    Command(Command<T>),
    /// A command line that cannot be used (already reported).
    Invalid,
    /// Not a command: text that may continue a label (Q8), else dropped (Q3). The line.
    Other(T),
    /// A cycle beyond 64 bits, which makes the rest of the log meaningless: the number as
    /// written. (Text, not a message, so that a parsed line owns nothing to drop.)
    CycleOutOfRange(T),
}

/// A command, fields parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Command<T> {
    /// `C= <cycle>`.
    Start(i64),
    /// `C <n>`.
    Cycle(i64),
    /// `I <id> <sim id> <thread>`.
    Insn { id: i64, sim_id: SimId, thread: i64 },
    /// `L <id> <type> <text>`; text as written (never empty).
    Label { id: i64, kind: u8, text: T },
    /// `S`/`E` `<id> <lane> <stage>`.
    Stage {
        end: bool,
        id: i64,
        lane: u32,
        name: T,
    },
    /// `R <id> <retire id> <type>`; the type is decided by the normalizer (Q13).
    Retire {
        id: i64,
        retire_id: i64,
        kind: RetireType,
    },
    /// `W <consumer> <producer> <type>`.
    Dep {
        consumer: i64,
        producer: i64,
        kind: u32,
    },
}

impl<T> Command<T> {
    /// The same command with its text held another way.
    pub(crate) fn map<U>(self, mut f: impl FnMut(T) -> U) -> Command<U> {
        match self {
            Command::Start(cycle) => Command::Start(cycle),
            Command::Cycle(n) => Command::Cycle(n),
            Command::Insn { id, sim_id, thread } => Command::Insn { id, sim_id, thread },
            Command::Label { id, kind, text } => Command::Label {
                id,
                kind,
                text: f(text),
            },
            Command::Stage {
                end,
                id,
                lane,
                name,
            } => Command::Stage {
                end,
                id,
                lane,
                name: f(name),
            },
            Command::Retire {
                id,
                retire_id,
                kind,
            } => Command::Retire {
                id,
                retire_id,
                kind,
            },
            Command::Dep {
                consumer,
                producer,
                kind,
            } => Command::Dep {
                consumer,
                producer,
                kind,
            },
        }
    }

    /// The command with its text borrowed.
    pub(crate) fn as_ref(&self) -> Command<&T> {
        match self {
            Command::Start(cycle) => Command::Start(*cycle),
            Command::Cycle(n) => Command::Cycle(*n),
            Command::Insn { id, sim_id, thread } => Command::Insn {
                id: *id,
                sim_id: *sim_id,
                thread: *thread,
            },
            Command::Label { id, kind, text } => Command::Label {
                id: *id,
                kind: *kind,
                text,
            },
            Command::Stage {
                end,
                id,
                lane,
                name,
            } => Command::Stage {
                end: *end,
                id: *id,
                lane: *lane,
                name,
            },
            Command::Retire {
                id,
                retire_id,
                kind,
            } => Command::Retire {
                id: *id,
                retire_id: *retire_id,
                kind: *kind,
            },
            Command::Dep {
                consumer,
                producer,
                kind,
            } => Command::Dep {
                consumer: *consumer,
                producer: *producer,
                kind: *kind,
            },
        }
    }
}

impl<T> Line<T> {
    /// The same line with its text held another way.
    pub(crate) fn map<U>(self, mut f: impl FnMut(T) -> U) -> Line<U> {
        match self {
            Line::Blank => Line::Blank,
            Line::Comment => Line::Comment,
            Line::Header { version } => Line::Header {
                version: f(version),
            },
            Line::Command(command) => Line::Command(command.map(f)),
            Line::Invalid => Line::Invalid,
            Line::Other(line) => Line::Other(f(line)),
            Line::CycleOutOfRange(cycle) => Line::CycleOutOfRange(f(cycle)),
        }
    }
}

/// The simulator id of an `I`: any value of 64 bits, signed or unsigned. Held as its 64 bits
/// and a sign rather than as an `i128`, whose 16-byte alignment would make every parsed line
/// a quarter larger (and the batches that cross threads with it).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct SimId {
    bits: u64,
    negative: bool,
}

impl SimId {
    /// The id as a number.
    pub(crate) fn get(self) -> i128 {
        if self.negative {
            i128::from(self.bits as i64)
        } else {
            i128::from(self.bits)
        }
    }
}

impl From<i128> for SimId {
    /// `value` must be within `i64::MIN..=u64::MAX` (what [`parse_wide`] returns).
    fn from(value: i128) -> SimId {
        SimId {
            bits: value as u64,
            negative: value < 0,
        }
    }
}

impl fmt::Debug for SimId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

/// The type field of an `R`, before Q13 decides what it means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RetireType {
    /// No type field, or an empty one.
    Empty,
    /// A number.
    Value(i64),
    /// Something that is not a number.
    Invalid,
}

/// What [`LineParser::parse_number_line`] read.
pub(crate) enum FromMasks<'a> {
    /// An `I`, `R`, `W` or `C` line.
    Numbers(Numbers),
    /// An `L` line.
    Label(Label<'a>),
    /// Another line, or a rarer form: not read.
    No,
}

/// Where the fields of a line are, and whether they were separated by TABs.
#[derive(Default)]
struct Fields<'a> {
    fields: [&'a [u8]; 4],
    count: usize,
    /// The label text as written: field 3 when the line has TABs, else the rest of the line
    /// after the type (Q19); may hold further TABs (Q9).
    rest: &'a [u8],
    tabbed: bool,
    /// Whether the line has more TAB-separated fields than the four fixed ones.
    extra_fields: bool,
}

impl<'a> Fields<'a> {
    /// Field `index`, if the line has it.
    #[inline]
    fn get(&self, index: usize) -> Option<&'a [u8]> {
        self.fields
            .get(index)
            .copied()
            .filter(|_| index < self.count)
    }
}

/// White space as JavaScript's `trim` sees it in ASCII (Konata trims numbers that way).
#[inline]
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c)
}

/// How many spaces `field` starts with, counted eight bytes at a time: writers that pad
/// numbers to a fixed width (Q1) put up to a dozen spaces before every number.
#[inline(always)]
fn leading_spaces(field: &[u8]) -> usize {
    const SPACES: u64 = 0x2020_2020_2020_2020;
    let mut at = 0;
    while let Some(chunk) = field.get(at..at + 8) {
        let other = u64::from_le_bytes(chunk.try_into().expect("8 bytes")) ^ SPACES;
        if other != 0 {
            return at + (other.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while field.get(at) == Some(&b' ') {
        at += 1;
    }
    at
}

#[inline]
pub(crate) fn trim(s: &[u8]) -> &[u8] {
    let mut s = &s[leading_spaces(s)..];
    while let [first, rest @ ..] = s {
        if !is_space(*first) {
            break;
        }
        s = rest;
    }
    while let [rest @ .., last] = s {
        if !is_space(*last) {
            break;
        }
        s = rest;
    }
    s
}

/// Parses a decimal integer with optional sign after trimming; `canonical` is false when the
/// text was not already plain (padding, `+`, leading zeros).
#[inline(always)]
pub(crate) fn parse_int(field: &[u8]) -> Option<(i64, bool)> {
    // Fast path: plain digits, the canonical form, or digits padded on the left with spaces.
    let padding = leading_spaces(field);
    let digits = &field[padding..];
    if !digits.is_empty() && digits.len() <= 18 {
        let mut value = 0i64;
        let mut plain = true;
        for &d in digits {
            let digit = d.wrapping_sub(b'0');
            if digit > 9 {
                plain = false;
                break;
            }
            value = value * 10 + i64::from(digit);
        }
        if plain {
            let canonical = padding == 0 && (digits.len() == 1 || digits[0] != b'0');
            return Some((value, canonical));
        }
    }
    let trimmed = trim(field);
    let (negative, digits) = match trimmed {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, trimmed),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut value: i64 = 0;
    for &d in digits {
        let digit = i64::from(d - b'0');
        value = value.checked_mul(10)?;
        value = if negative {
            value.checked_sub(digit)?
        } else {
            value.checked_add(digit)?
        };
    }
    let canonical = trimmed.len() == field.len()
        && trimmed[0] != b'+'
        && (digits.len() == 1 || digits[0] != b'0')
        && !(negative && value == 0);
    Some((value, canonical))
}

/// The line reader's view of one line: its number and what the repairs report.
pub(crate) struct LineParser {
    /// Label text rebuilt from several fields (Q9).
    scratch: Vec<u8>,
    /// Q1, Q19 and Q20 apply to nearly every line of some logs: once the diagnostics want no
    /// more examples of one, its reports are counted here, and handed over by
    /// [`settle`](Self::settle). These are those repairs ([`fast::Odd`] bits).
    counted: fast::Odd,
    /// The reports counted, by the set of repairs ([`fast::Odd`] bits) they were counted
    /// with: one increment a line, whichever of those repairs it needs.
    counts: [u64; 8],
    /// Whether to try the plain lines' reader first on the `S` and `E` lines of this block
    /// (see [`end_block`](Self::end_block)).
    plain_first: bool,
    /// The `S` and `E` lines of the block so far that the reader of every form read: how
    /// many in the high 32 bits, and in the low 32 those with no repair and under 16 bytes
    /// (near enough, the plain reader's). One number, so that a line adds to both with one
    /// addition: two counters took the compiler a dozen vector instructions a line.
    read_by_every_form: u64,
    /// The layouts of the `S` and `E` lines read lately, for [`read_stage_line`](
    /// Self::read_stage_line).
    stage_layouts: stage_line::StageLayouts,
}

impl LineParser {
    pub(crate) fn new() -> LineParser {
        LineParser {
            scratch: Vec::new(),
            counted: 0,
            counts: [0; 8],
            plain_first: true,
            read_by_every_form: 0,
            stage_layouts: stage_line::StageLayouts::default(),
        }
    }

    /// Whether to try the plain lines' reader first on the `S` and `E` lines of this block.
    #[inline(always)]
    pub(crate) fn plain_first(&self) -> bool {
        self.plain_first
    }

    /// Reads the `S` or `E` line of `len` bytes at the start of `window` (which goes on past
    /// the line's end: the bytes after it are not looked at), in every form the readers of
    /// masks take; `None` for any other line, and for the rare `S` and `E` lines the
    /// field-by-field readers take.
    #[inline(always)]
    pub(crate) fn read_stage_line(&mut self, window: &[u8; 32], len: usize) -> Option<StageLine> {
        self.stage_layouts.read(window, len)
    }

    /// Counts the `S` or `E` line of `len` bytes read as `stage` by the reader of every
    /// form, for [`end_block`](Self::end_block).
    #[inline(always)]
    pub(crate) fn read_by_every_form(&mut self, stage: &StageLine, len: usize) {
        // What the plain reader takes, near enough: no repair, under 16 bytes.
        let plain = (stage.odd == 0) & (len < 16);
        self.read_by_every_form += 1 << 32 | u64::from(plain);
    }

    /// The lines [`read_by_every_form`](Self::read_by_every_form) counted this block: those
    /// the plain reader would take, and the others.
    fn read_plain_and_other(&self) -> (u64, u64) {
        let plain = self.read_by_every_form & u64::from(u32::MAX);
        (plain, (self.read_by_every_form >> 32) - plain)
    }

    /// Decides, at the end of a block of `lines` lines, whether the `S` and `E` lines of the
    /// next go to the plain lines' reader first, as suits canonical logs, which write them
    /// all plain: not once a quarter of the lines are stage lines it cannot take, and again
    /// once most of those the reader of every form reads are plain. Logs that pad some lines
    /// and not others at random go straight to the reader of every form, which takes plain
    /// lines too: trying the plain reader first cost them a mispredicted branch about every
    /// other line. Decided once a block, the branch on it is always predicted; counted only
    /// on the way the plain lines do not take, it costs them nothing.
    pub(crate) fn end_block(&mut self, lines: u64) {
        let (plain, other) = self.read_plain_and_other();
        if self.plain_first {
            self.plain_first = other * 4 <= lines;
        } else if plain + other > 0 {
            self.plain_first = plain > other;
        }
        self.read_by_every_form = 0;
    }

    /// Hands `diag` the reports counted here; due before `diag`'s counts are read, with the
    /// `diag` the lines were parsed with.
    pub(crate) fn settle(&mut self, diag: &mut Diagnostics) {
        for (bit, rule) in [
            (fast::Q1, Rule::Q1),
            (fast::Q19, Rule::Q19),
            (fast::Q20, Rule::Q20),
        ] {
            let with_bit = self.counts.iter().enumerate();
            let count = with_bit
                .filter(|&(odd, _)| odd as fast::Odd & bit != 0)
                .map(|(_, count)| count)
                .sum();
            diag.count(rule, count);
        }
        self.counts = [0; 8];
    }

    /// Reports `rule` (the repair `bit`) at `lineno`, or only counts it once its examples
    /// are all taken.
    #[inline(always)]
    fn report_rule(
        &mut self,
        bit: fast::Odd,
        rule: Rule,
        lineno: u64,
        message: impl FnOnce() -> String,
        diag: &mut Diagnostics,
    ) {
        if self.counted & bit != 0 {
            self.counts[usize::from(bit)] += 1;
        } else {
            diag.report(rule, lineno, message);
            if diag.counts_only(rule) {
                self.counted |= bit;
            }
        }
    }

    /// The repairs of a command line read in one pass, in the order the field-by-field
    /// reader reports them (the first is the error under `--strict`).
    #[inline(always)]
    fn report_odd(&mut self, line: &[u8], odd: fast::Odd, lineno: u64, diag: &mut Diagnostics) {
        if odd & fast::Q19 != 0 {
            let message = || Q19_SPACES.to_owned();
            self.report_rule(fast::Q19, Rule::Q19, lineno, message, diag);
        }
        if odd & fast::Q20 != 0 {
            // The lane as the field-by-field reader shows it, found again only for the
            // examples.
            self.report_rule(fast::Q20, Rule::Q20, lineno, || odd_lane(line), diag);
        }
        if odd & fast::Q1 != 0 {
            let message = if line[0] == b'L' {
                Q1_LABEL
            } else {
                Q1_COMMAND
            };
            self.report_rule(fast::Q1, Rule::Q1, lineno, || message.to_owned(), diag);
        }
    }

    /// Reports the repairs of `stage`, read by [`read_stage_line`] from the `len` bytes at
    /// the start of `window`; `true` when a report went to `diag` (which a `--strict` run
    /// looks at), `false` when the repairs were only counted here, or there were none.
    #[inline(always)]
    pub(crate) fn report_stage_line(
        &mut self,
        window: &[u8; 32],
        len: usize,
        stage: &StageLine,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> bool {
        self.report_repairs(&window[..len], stage.odd, lineno, diag)
    }

    /// Reports the repairs `odd` of the command line `line`, as
    /// [`report_stage_line`](Self::report_stage_line) does.
    ///
    /// Counting takes no branch on which repairs the line needs: padded logs pad some lines
    /// and not others at random, and a branch on it was mispredicted.
    #[inline(always)]
    fn report_repairs(
        &mut self,
        line: &[u8],
        odd: fast::Odd,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> bool {
        if odd & !self.counted == 0 {
            self.counts[usize::from(odd & 7)] += 1;
            return false;
        }
        self.report_odd_out_of_line(line, odd, lineno, diag);
        true
    }

    /// [`report_odd`](Self::report_odd), out of the common lines' way.
    #[inline(never)]
    fn report_odd_out_of_line(
        &mut self,
        line: &[u8],
        odd: fast::Odd,
        lineno: u64,
        diag: &mut Diagnostics,
    ) {
        self.report_odd(line, odd, lineno, diag);
    }

    /// Reads the `I`, `R`, `W`, `C` or `L` line `line` (`window` holding its first 32 bytes
    /// and what follows them) from the masks of its bytes, as
    /// [`parse_into`](Self::parse_into) would read it, reports included: the numbers of an
    /// `I`, `R`, `W` or `C`; an `L`'s id, kind and text. [`FromMasks::No`] (nothing done)
    /// for other lines and the rare forms, which `parse_into` reads.
    #[inline(always)]
    pub(crate) fn parse_number_line<'a>(
        &mut self,
        window: &[u8; 32],
        line: &'a [u8],
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> FromMasks<'a> {
        let (read, odd) = match window[0] {
            b'L' => match number_line::read_label(window, line) {
                Some((label, odd)) => (FromMasks::Label(label), odd),
                None => return FromMasks::No,
            },
            b'C' => match number_line::read_cycle(window, line.len()) {
                Some((numbers, odd)) => (FromMasks::Numbers(numbers), odd),
                None => return FromMasks::No,
            },
            _ => match number_line::read(window, line.len()) {
                Some((numbers, odd)) => (FromMasks::Numbers(numbers), odd),
                None => return FromMasks::No,
            },
        };
        self.report_repairs(line, odd, lineno, diag);
        read
    }

    /// Reads `line` (without its line end). `lineno` is 1-based, for the reports.
    pub(crate) fn parse<'a>(
        &'a mut self,
        line: &'a [u8],
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Line<&'a [u8]> {
        let mut parsed = Line::Blank;
        self.parse_into(line, lineno, diag, &mut parsed);
        parsed
    }

    /// [`parse`](Self::parse) into `out`, where the caller reads it: on the common path,
    /// the line is never moved as a whole (see [`fast::parse_into`]).
    #[inline(always)]
    pub(crate) fn parse_into<'a>(
        &'a mut self,
        line: &'a [u8],
        lineno: u64,
        diag: &mut Diagnostics,
        out: &mut Line<&'a [u8]>,
    ) {
        let Some(&first) = line.first() else {
            *out = Line::Blank;
            return;
        };
        // Commands start with one of `C I L S E R W` right at the line start: test that before
        // anything slower.
        if !matches!(first, b'C' | b'I' | b'L' | b'S' | b'E' | b'R' | b'W' | b'K') {
            *out = classify_other(line);
            return;
        }
        // The common lines (TAB- or space-separated, numbers plain, padded, or written `+5`
        // or `007`) in one pass; anything else is read field by field.
        if let Some(odd) = fast::parse_into(line, out) {
            if odd != 0 {
                self.report_odd(line, odd, lineno, diag);
            }
            return;
        }
        *out = self.parse_slowly(first, line, lineno, diag);
    }

    /// [`parse`](Self::parse) of a line that starts with `first`, field by field.
    #[inline(never)]
    fn parse_slowly<'a>(
        &'a mut self,
        first: u8,
        line: &'a [u8],
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Line<&'a [u8]> {
        let slash = memchr(b'/', line).is_some();
        let whole = line;
        // Q3: a trailing ` // comment` after the fields of a command other than `L`.
        let line = if first != b'L' && slash {
            strip_trailing_comment(line, lineno, diag)
        } else {
            line
        };
        let mut f = Fields::default();
        split_into(line, &mut f);
        let name = if f.tabbed {
            f.fields[0]
        } else {
            trim(f.fields[0])
        };
        match name {
            b"C" | b"C=" | b"I" | b"L" | b"S" | b"E" | b"R" | b"W" => {}
            _ if name.starts_with(b"Kanata") => {
                let version = if f.count > 1 {
                    trim(f.fields[1])
                } else {
                    trim(&line[6..])
                };
                return Line::Header { version };
            }
            // Not a command, and not blank or a comment either (it starts with a letter,
            // which stripping a trailing comment leaves): other text, the whole line, a
            // trailing comment too.
            _ => return Line::Other(whole),
        }
        if !f.tabbed && f.count > 1 {
            diag.report(Rule::Q19, lineno, || Q19_SPACES.to_owned());
        }
        // Each arm builds its line where it is returned: a command built apart and then
        // moved costs a store-forwarding stall per line.
        let mut padded = false;
        let q1 = |diag: &mut Diagnostics, repaired: bool| {
            if repaired {
                diag.report(Rule::Q1, lineno, || Q1_COMMAND.to_owned());
            }
        };
        match name {
            b"C=" | b"C" => {
                let start = name == b"C=";
                let field = f.get(1).unwrap_or_default();
                let cycles = if !start && trim(field).is_empty() {
                    diag.report(Rule::Q4b, lineno, || {
                        "`C` without a number read as one cycle".to_owned()
                    });
                    1
                } else {
                    // Parsed once; only a number that failed is looked at again, to tell a
                    // cycle beyond 64 bits (fatal) from text that is no number (dropped).
                    match parse_int(field) {
                        Some((value, canonical)) => {
                            padded |= !canonical;
                            value
                        }
                        None if is_out_of_range(field) => {
                            return Line::CycleOutOfRange(trim(field));
                        }
                        None => {
                            let what = if start { "cycle" } else { "cycle count" };
                            int_field(&f, 1, lineno, diag, &mut padded, what);
                            return Line::Invalid;
                        }
                    }
                };
                q1(diag, padded || f.count > 2);
                Line::Command(if start {
                    Command::Start(cycles)
                } else {
                    Command::Cycle(cycles)
                })
            }
            b"I" => {
                let Some(id) = int_field(&f, 1, lineno, diag, &mut padded, "file id") else {
                    return Line::Invalid;
                };
                let sim_id = match f.get(2).map(parse_wide) {
                    Some(Some((value, canonical))) => {
                        padded |= !canonical;
                        SimId::from(value)
                    }
                    _ => {
                        int_field(&f, 2, lineno, diag, &mut padded, "simulator id");
                        return Line::Invalid;
                    }
                };
                let Some(thread) = int_field(&f, 3, lineno, diag, &mut padded, "thread id") else {
                    return Line::Invalid;
                };
                q1(diag, padded || f.extra_fields);
                Line::Command(Command::Insn { id, sim_id, thread })
            }
            b"L" => self.label(&f, lineno, diag),
            b"S" | b"E" => {
                let Some(id) = int_field(&f, 1, lineno, diag, &mut padded, "file id") else {
                    return Line::Invalid;
                };
                let Some(lane) = lane_field(&f, lineno, diag, &mut padded) else {
                    return Line::Invalid;
                };
                let Some(field) = f.get(3) else {
                    return Line::Invalid;
                };
                let stage = trim(field);
                if f.tabbed && stage.len() != field.len() {
                    padded = true;
                }
                if stage.is_empty() {
                    diag.report(Rule::Q1, lineno, || {
                        "stage command without a stage name dropped".to_owned()
                    });
                    return Line::Invalid;
                }
                q1(diag, padded || f.extra_fields);
                Line::Command(Command::Stage {
                    end: name == b"E",
                    id,
                    lane,
                    name: stage,
                })
            }
            b"R" => {
                let Some(id) = int_field(&f, 1, lineno, diag, &mut padded, "file id") else {
                    return Line::Invalid;
                };
                let retire_id = match f.get(2).map(parse_int) {
                    Some(Some((value, canonical))) => {
                        padded |= !canonical;
                        value
                    }
                    _ => {
                        diag.report(Rule::Q13, lineno, || {
                            "missing or invalid retire id read as 0".to_owned()
                        });
                        0
                    }
                };
                let kind = if let Some(written) = f.get(3) {
                    let field = trim(written);
                    padded |= field.len() != written.len();
                    if field.is_empty() {
                        RetireType::Empty
                    } else {
                        match parse_int(field) {
                            Some((value, canonical)) => {
                                padded |= !canonical;
                                RetireType::Value(value)
                            }
                            None => RetireType::Invalid,
                        }
                    }
                } else {
                    RetireType::Empty
                };
                q1(diag, padded || f.extra_fields);
                Line::Command(Command::Retire {
                    id,
                    retire_id,
                    kind,
                })
            }
            b"W" => {
                let Some(consumer) = int_field(&f, 1, lineno, diag, &mut padded, "consumer id")
                else {
                    return Line::Invalid;
                };
                let Some(producer) = int_field(&f, 2, lineno, diag, &mut padded, "producer id")
                else {
                    return Line::Invalid;
                };
                let Some(kind) = int_field(&f, 3, lineno, diag, &mut padded, "dependency type")
                else {
                    return Line::Invalid;
                };
                let Ok(kind) = u32::try_from(kind) else {
                    diag.report(Rule::Q12, lineno, || {
                        format!("dependency type {kind} is not a non-negative number; dropped")
                    });
                    return Line::Invalid;
                };
                q1(diag, padded || f.extra_fields);
                Line::Command(Command::Dep {
                    consumer,
                    producer,
                    kind,
                })
            }
            _ => unreachable!("command names are matched above"),
        }
    }

    fn label<'a>(
        &'a mut self,
        f: &Fields<'a>,
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Line<&'a [u8]> {
        let mut padded = false;
        let Some(id) = int_field(f, 1, lineno, diag, &mut padded, "file id") else {
            return Line::Invalid;
        };
        let Some(kind) = int_field(f, 2, lineno, diag, &mut padded, "label type") else {
            return Line::Invalid;
        };
        let kind = match u8::try_from(kind) {
            Ok(kind @ 0..=2) => kind,
            _ => {
                diag.report(Rule::Q12, lineno, || {
                    format!("label type {kind} is not 0, 1 or 2; dropped")
                });
                return Line::Invalid;
            }
        };
        let mut text = f.rest;
        if f.tabbed && memchr(b'\t', text).is_some() {
            // Q9: Konata keeps field 3 only; we keep every non-blank field, one space apart.
            self.scratch.clear();
            let parts = text.split(|&b| b == b'\t');
            let mut joined = 0;
            for part in parts.filter(|p| !trim(p).is_empty()) {
                if joined > 0 {
                    self.scratch.push(b' ');
                }
                self.scratch.extend_from_slice(part);
                joined += 1;
            }
            if joined > 1 {
                diag.report(Rule::Q9, lineno, || {
                    "TAB inside label text joined with a space".to_owned()
                });
            } else {
                padded = true;
            }
            text = &self.scratch;
        }
        if padded {
            diag.report(Rule::Q1, lineno, || Q1_LABEL.to_owned());
        }
        if text.is_empty() {
            diag.report(Rule::Q1, lineno, || "empty label dropped".to_owned());
            return Line::Invalid;
        }
        Line::Command(Command::Label { id, kind, text })
    }
}

/// Whether `line` is read as a command or a dropped command, never as other text
/// ([`Line::Other`], which may go on with a label, Q8): its first field is a command's name,
/// ended by a TAB. Looks at its first two bytes only.
#[inline(always)]
pub(crate) fn starts_a_command(line: &[u8]) -> bool {
    matches!(
        line,
        [b'C' | b'I' | b'L' | b'S' | b'E' | b'R' | b'W', b'\t', ..]
    )
}

/// A line that is not a command: blank, a comment, or other text.
fn classify_other(line: &[u8]) -> Line<&[u8]> {
    let trimmed = trim(line);
    if trimmed.is_empty() {
        Line::Blank
    } else if trimmed.starts_with(b"#") || trimmed.starts_with(b"//") {
        Line::Comment
    } else {
        Line::Other(line)
    }
}

/// The high bit of each byte of `word` that is a TAB (exact: no false positives).
#[inline(always)]
fn tab_mask(word: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let x = word ^ 0x0909_0909_0909_0909;
    !(((x & LOW7).wrapping_add(LOW7)) | x | LOW7)
}

/// Splits the fixed fields: on TABs if the line has any, else on runs of white space (Q19).
#[cfg(test)]
fn split(line: &[u8]) -> Fields<'_> {
    let mut f = Fields::default();
    split_into(line, &mut f);
    f
}

/// [`split`] into the caller's `f`, which must be [`Fields::default`]. (Fields stored one by
/// one into a value that is then moved would be read back wider than they were written: a
/// store-forwarding stall on every line.)
#[inline(always)]
fn split_into<'a>(line: &'a [u8], f: &mut Fields<'a>) {
    // One pass over the line finds the first four TABs and counts the rest, eight bytes at a
    // time: lines are short, and this beats both a byte loop and a `memchr` call per field.
    let mut tabs = [0usize; 4];
    let mut found = 0;
    let mut extra_tabs = 0;
    let mut record = |at: usize| {
        if found < 4 {
            tabs[found] = at;
            found += 1;
        } else {
            extra_tabs += 1;
        }
    };
    let mut words = line.chunks_exact(8);
    let mut base = 0;
    for word in &mut words {
        let mut tab_bytes = tab_mask(u64::from_le_bytes(word.try_into().expect("8 bytes")));
        while tab_bytes != 0 {
            record(base + (tab_bytes.trailing_zeros() / 8) as usize);
            tab_bytes &= tab_bytes - 1;
        }
        base += 8;
    }
    for (at, &b) in words.remainder().iter().enumerate() {
        if b == b'\t' {
            record(base + at);
        }
    }
    if found == 0 {
        *f = split_on_spaces(line);
        return;
    }
    f.count = 4;
    f.tabbed = true;
    f.extra_fields = found == 4 || extra_tabs > 0;
    let mut start = 0;
    for (field, &tab) in f.fields.iter_mut().zip(&tabs[..found]) {
        *field = &line[start..tab];
        start = tab + 1;
    }
    if found < 4 {
        f.fields[found] = &line[start..];
        f.count = found + 1;
        f.rest = &line[start..];
    } else {
        // Field 3 ends at the fourth TAB; the label text runs on to the end of the line
        // (further TABs are Q9's business).
        f.rest = &line[tabs[2] + 1..];
    }
}

/// Q19: splits a line without TABs on runs of white space.
fn split_on_spaces(line: &[u8]) -> Fields<'_> {
    let mut fields: [&[u8]; 4] = [&[]; 4];
    let mut count = 0;
    let mut rest: &[u8] = &[];
    let mut at = 0;
    while count < 3 {
        while at < line.len() && is_space(line[at]) {
            at += 1;
        }
        if at == line.len() {
            break;
        }
        let start = at;
        while at < line.len() && !is_space(line[at]) {
            at += 1;
        }
        fields[count] = &line[start..at];
        count += 1;
    }
    if count == 3 && at < line.len() {
        // The label is the rest of the line after the one separator that follows the type;
        // for other commands the fourth field is the next word.
        rest = &line[at + 1..];
        let trimmed = trim(rest);
        if !trimmed.is_empty() {
            fields[3] = trimmed;
            count = 4;
        }
    }
    Fields {
        fields,
        count,
        rest,
        tabbed: false,
        extra_fields: false,
    }
}

#[inline(always)]
fn int_field(
    f: &Fields<'_>,
    index: usize,
    lineno: u64,
    diag: &mut Diagnostics,
    padded: &mut bool,
    what: &'static str,
) -> Option<i64> {
    let field = f.get(index).unwrap_or_default();
    match parse_int(field) {
        Some((value, canonical)) => {
            *padded |= !canonical;
            Some(value)
        }
        None => {
            let shown = field.to_str_lossy().into_owned();
            diag.report(Rule::Q1, lineno, || {
                if shown.trim().is_empty() {
                    format!("missing {what}; command dropped")
                } else {
                    format!("{what} {shown:?} is not a number; command dropped")
                }
            });
            None
        }
    }
}

/// The Q20 report of a stage line whose lane field (a number) is not written plain, as
/// [`lane_field`] words it.
#[cold]
fn odd_lane(line: &[u8]) -> String {
    let mut f = Fields::default();
    split_into(line, &mut f);
    let shown = trim(f.get(2).unwrap_or_default());
    let lane = parse_int(shown).map_or(0, |(lane, _)| lane);
    lane_written_as(shown, lane)
}

/// Q20's report of a lane `shown` read as `lane`.
fn lane_written_as(shown: &[u8], lane: i64) -> String {
    format!("lane {:?} written as {lane}", shown.to_str_lossy())
}

/// Q20: a lane must be a non-negative decimal; `00` or `+1` is written plain. Padding
/// around it is Q1's (Konata trims it, so draws the same lane).
#[inline(always)]
fn lane_field(
    f: &Fields<'_>,
    lineno: u64,
    diag: &mut Diagnostics,
    padded: &mut bool,
) -> Option<u32> {
    let field = f.get(2).unwrap_or_default();
    let trimmed = trim(field);
    *padded |= trimmed.len() != field.len();
    match parse_int(trimmed).and_then(|(v, canonical)| Some((u32::try_from(v).ok()?, canonical))) {
        Some((lane, true)) => Some(lane),
        Some((lane, false)) => {
            diag.report(Rule::Q20, lineno, || {
                lane_written_as(trimmed, i64::from(lane))
            });
            Some(lane)
        }
        None => {
            let shown = field.to_str_lossy().into_owned();
            diag.report(Rule::Q20, lineno, || {
                format!("lane {shown:?} is not a non-negative number; command dropped")
            });
            None
        }
    }
}

/// The error for a cycle beyond 64 bits, written `cycle`.
pub(crate) fn cycle_out_of_range(cycle: &[u8]) -> String {
    format!(
        "cycle {:?} is outside the 64-bit range of cycles",
        cycle.to_str_lossy()
    )
}

/// Whether `field`, which [`parse_int`] refused, is a decimal integer too large for 64 bits
/// (rather than not a number).
fn is_out_of_range(field: &[u8]) -> bool {
    let trimmed = trim(field);
    let digits = trimmed
        .strip_prefix(b"-")
        .or_else(|| trimmed.strip_prefix(b"+"))
        .unwrap_or(trimmed);
    !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
}

/// Parses a simulator id: any value of 64 bits, signed or unsigned.
fn parse_wide(field: &[u8]) -> Option<(i128, bool)> {
    if let Some((value, canonical)) = parse_int(field) {
        return Some((i128::from(value), canonical));
    }
    let trimmed = trim(field);
    let digits = trimmed.strip_prefix(b"+").unwrap_or(trimmed);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    let canonical = digits.len() == field.len() && digits[0] != b'0';
    Some((i128::from(value), canonical))
}

/// Q3: ` // comment` after the fields of a non-label line: a `//` after white space.
fn strip_trailing_comment<'a>(line: &'a [u8], lineno: u64, diag: &mut Diagnostics) -> &'a [u8] {
    let mut from = 0;
    while let Some(found) = memchr::memmem::find(&line[from..], b"//") {
        let at = from + found;
        if at > 0 && is_space(line[at - 1]) {
            diag.report(Rule::Q3, lineno, || {
                "trailing `//` comment dropped".to_owned()
            });
            let mut end = at;
            while end > 0 && is_space(line[end - 1]) {
                end -= 1;
            }
            return &line[..end];
        }
        from = at + 2;
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Has `parser`'s reader of every form read `plain` stage lines the plain reader could
    /// have taken, and `other` it could not: some with a repair, some too long.
    fn read_by_every_form(parser: &mut LineParser, plain: u32, other: u32) {
        let stage = |odd| StageLine {
            end: false,
            id: 1,
            lane: 0,
            name_start: 5,
            name_end: 7,
            odd,
        };
        for _ in 0..plain {
            parser.read_by_every_form(&stage(0), 7);
        }
        for line in 0..other {
            match line % 2 {
                0 => parser.read_by_every_form(&stage(fast::Q1), 9),
                _ => parser.read_by_every_form(&stage(0), 16),
            }
        }
    }

    #[test]
    fn the_plain_stage_reader_is_tried_first_where_most_stage_lines_are_plain() {
        let mut parser = LineParser::new();
        assert!(parser.plain_first, "canonical logs are the common case");
        // A block of 1,000 lines, 200 of them stage lines the plain reader could not take:
        // still tried first; 300: not.
        read_by_every_form(&mut parser, 500, 200);
        assert_eq!(parser.read_plain_and_other(), (500, 200));
        parser.end_block(1_000);
        assert!(parser.plain_first);
        read_by_every_form(&mut parser, 0, 300);
        parser.end_block(1_000);
        assert!(!parser.plain_first);
        assert_eq!(parser.read_plain_and_other(), (0, 0));
        // Then tried again once most stage lines read are plain, and not for a block
        // without any.
        read_by_every_form(&mut parser, 40, 60);
        parser.end_block(1_000);
        assert!(!parser.plain_first);
        parser.end_block(1_000);
        assert!(!parser.plain_first);
        read_by_every_form(&mut parser, 60, 40);
        parser.end_block(1_000);
        assert!(parser.plain_first);
    }

    #[test]
    fn repairs_counted_by_their_set_are_handed_over_per_rule() {
        let mut parser = LineParser::new();
        let mut diag = Diagnostics::new(1, false);
        let window = *b"S\t 1\t00\tF                      ";
        // The first line of each set of repairs gives the examples (one each here); the
        // others are counted.
        for odd in [
            fast::Q1,
            fast::Q1 | fast::Q20,
            fast::Q19,
            fast::Q1,
            0,
            fast::Q19,
        ] {
            parser.report_repairs(&window[..9], odd, 7, &mut diag);
        }
        parser.settle(&mut diag);
        let count = |rule| diag.rules().get(&rule).map(|report| report.count);
        assert_eq!(
            (count(Rule::Q1), count(Rule::Q19), count(Rule::Q20)),
            (Some(3), Some(2), Some(1))
        );
    }

    fn parse(line: &str) -> (String, Vec<&'static str>) {
        let mut diag = Diagnostics::new(10, false);
        let mut parser = LineParser::new();
        let parsed = format!("{:?}", parser.parse(line.as_bytes(), 1, &mut diag));
        let rules = diag.rules().keys().map(|r| r.id()).collect();
        (parsed, rules)
    }

    /// The one-pass reader of common lines (`fast`) against the field-by-field reader, on
    /// lines made of the pieces real and sloppy logs are made of: the same line, the same
    /// reports, or the fast reader declines.
    #[test]
    fn common_lines_read_in_one_pass_as_field_by_field() {
        const PIECES: [&str; 40] = [
            "\t",
            "\t",
            "\t",
            "\t",
            " ",
            "  ",
            "0",
            "1",
            "7",
            "42",
            "007",
            "00",
            "+1",
            "-3",
            "123456789012345678",
            "1234567890123456789",
            "18446744073709551615",
            "X",
            "F",
            "stl",
            "Rn",
            " X ",
            "/",
            "//",
            " // c",
            "a/b",
            "\x0b",
            "\r",
            "0x10: add",
            "é",
            "48",
            "49",
            "2",
            "3",
            "4294967296",
            "",
            "\t\t",
            "          5",
            "5          ",
            "#",
        ];
        const HEADS: [&str; 10] = ["C", "C=", "I", "L", "S", "E", "R", "W", "K", "Cx"];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let (mut taken, mut taken_spaced, mut taken_q20, mut taken_sign) = (0, 0, 0, 0);
        for _ in 0..400_000 {
            let mut line = HEADS[next(HEADS.len())].to_owned();
            line.push('\t');
            for _ in 0..next(9) {
                if next(2) == 0 {
                    // A number as padding writers write it, or a stage name.
                    let (left, right) = (" ".repeat(next(12) / 4), " ".repeat(next(8) / 6));
                    let value = [3, 100_000][next(2)];
                    let value = next(value).to_string();
                    let value = if next(8) == 0 { "X".to_owned() } else { value };
                    line.push_str(&format!("{left}{value}{right}"));
                } else {
                    line.push_str(PIECES[next(PIECES.len())]);
                }
                if next(4) > 0 {
                    line.push('\t');
                }
            }
            if next(3) == 0 {
                // Q19: the same pieces, separated by runs of spaces.
                line = line.replace('\t', [" ", " ", "  ", "   "][next(4)]);
            }
            let bytes = line.as_bytes();
            let mut fast_diag = Diagnostics::new(10, false);
            let mut slow_diag = Diagnostics::new(10, false);
            let (mut fast_parser, mut slow_parser) = (LineParser::new(), LineParser::new());
            let fast = format!("{:?}", fast_parser.parse(bytes, 1, &mut fast_diag));
            let slow = format!(
                "{:?}",
                slow_parser.parse_slowly(bytes[0], bytes, 1, &mut slow_diag)
            );
            assert_eq!(fast, slow, "{line:?}");
            assert_eq!(
                format!("{fast_diag:?}"),
                format!("{slow_diag:?}"),
                "{line:?}"
            );
            match fast::parse_into(bytes, &mut Line::Blank) {
                Some(odd) if odd & fast::Q19 != 0 => taken_spaced += 1,
                Some(_) => taken += 1,
                None => continue,
            }
            taken_q20 += usize::from(fast_diag.rules().contains_key(&Rule::Q20));
            taken_sign += usize::from(line.contains("+1") || line.contains("007"));
        }
        // The pieces make common lines often enough for the comparison to mean something.
        assert!(taken > 25_000, "{taken}");
        assert!(taken_spaced > 10_000, "{taken_spaced}");
        // Lanes written `00` or `+1` (Q20), numbers written `+1` or `007` (Q1).
        assert!(taken_q20 > 500, "{taken_q20}");
        assert!(taken_sign > 1_000, "{taken_sign}");
    }

    #[test]
    fn q8_a_line_that_starts_a_command_is_never_other_text() {
        let mut rng = crate::output::testing::Rng(0x2545_f491_4f6c_dd1d);
        let mut next = |n: usize| rng.below(n as u64) as usize;
        let pieces: [&[u8]; 10] = [
            b"\t", b" ", b"1", b"-2", b"x", b"//", b"#", b"\r", b"=", b"",
        ];
        let mut parser = LineParser::new();
        let mut diag = Diagnostics::new(3, false);
        let mut commands = 0;
        for _ in 0..50_000 {
            let mut line = vec![b"CILSERW"[next(7)], b'\t'];
            for _ in 0..next(6) {
                line.extend_from_slice(pieces[next(10)]);
            }
            assert!(starts_a_command(&line));
            let parsed = parser.parse(&line, 1, &mut diag);
            assert!(
                !matches!(parsed, Line::Other(_)),
                "{:?}",
                line.escape_ascii().to_string()
            );
            commands += usize::from(matches!(parsed, Line::Command(_)));
        }
        assert!(commands > 1_000, "{commands} commands");
        for line in [&b"S \tF"[..], b"S", b"X\t1", b"s\t1\t0\tF", b"C=\t0"] {
            assert!(!starts_a_command(line), "{line:?}");
        }
    }

    #[test]
    fn canonical_lines_parse_without_reports() {
        for line in [
            "C=\t-1",
            "C\t3",
            "I\t0\t12\t1",
            "L\t0\t0\t  text kept as written ",
            "S\t0\t1\tstl",
            "E\t0\t0\tIssue Q",
            "R\t0\t5\t1",
            "W\t2\t1\t0",
        ] {
            let (parsed, rules) = parse(line);
            assert!(parsed.starts_with("Command("), "{line}: {parsed}");
            assert!(rules.is_empty(), "{line}: {rules:?}");
        }
    }

    #[test]
    fn q1_padded_numbers_and_trailing_blank_fields_are_trimmed_and_reported() {
        let (parsed, rules) = parse("I\t              0\t              0\t  0");
        assert_eq!(parsed, "Command(Insn { id: 0, sim_id: 0, thread: 0 })");
        assert_eq!(rules, ["Q1"]);
        let (parsed, rules) = parse("S\t0\t0\tF\t");
        assert!(parsed.contains("name: [70]"), "{parsed}");
        assert_eq!(rules, ["Q1"]);
        let (parsed, rules) = parse("L\t0\t0\t12000d918 iBC(r17)\t    ");
        assert!(parsed.contains("Label"), "{parsed}");
        assert_eq!(rules, ["Q1"]);
    }

    #[test]
    fn q1_empty_label_is_dropped() {
        assert_eq!(parse("L\t0\t0\t"), ("Invalid".to_owned(), vec!["Q1"]));
    }

    #[test]
    fn q3_comments_and_trailing_comments() {
        assert_eq!(parse("# note").0, "Comment");
        assert_eq!(parse("  // note").0, "Comment");
        assert_eq!(parse("").0, "Blank");
        assert_eq!(parse("Hello").0, format!("Other({:?})", b"Hello"));
        // Other text is the whole line, trailing comment and all (Q8 continues a label
        // with it).
        let sloppy = b"Sx 1 // c".to_vec();
        assert_eq!(parse("Sx 1 // c").0, format!("Other({sloppy:?})"));
        let (parsed, rules) = parse("S\t0\t0\tF // fetch");
        assert!(parsed.contains("name: [70]"), "{parsed}");
        assert_eq!(rules, ["Q3"]);
    }

    #[test]
    fn q4b_bare_cycle_is_one() {
        assert_eq!(parse("C"), ("Command(Cycle(1))".to_owned(), vec!["Q4b"]));
    }

    #[test]
    fn q9_tabs_inside_label_are_joined_with_a_space() {
        let mut diag = Diagnostics::new(10, false);
        let mut parser = LineParser::new();
        let line = parser.parse(b"L\t0\t1\tr1=5\tr2=6\t\t", 1, &mut diag);
        assert_eq!(
            line,
            Line::Command(Command::Label {
                id: 0,
                kind: 1,
                text: &b"r1=5 r2=6"[..]
            })
        );
        assert!(diag.rules().contains_key(&Rule::Q9));
    }

    #[test]
    fn q19_space_separated_fields() {
        let mut diag = Diagnostics::new(10, false);
        let mut parser = LineParser::new();
        let line = parser.parse(b"L 3 0 0x1000: add  x1, x2", 1, &mut diag);
        assert_eq!(
            line,
            Line::Command(Command::Label {
                id: 3,
                kind: 0,
                text: &b"0x1000: add  x1, x2"[..]
            })
        );
        assert!(diag.rules().contains_key(&Rule::Q19));
        let line = parser.parse(b"S 3 0 F", 1, &mut diag);
        assert!(matches!(
            line,
            Line::Command(Command::Stage { name: b"F", .. })
        ));
    }

    #[test]
    fn q20_lanes_written_oddly() {
        let (parsed, rules) = parse("S\t0\t00\tF");
        assert!(parsed.contains("lane: 0"), "{parsed}");
        assert_eq!(rules, ["Q20"]);
        let (parsed, rules) = parse("S\t0\t-1\tF");
        assert_eq!(parsed, "Invalid");
        assert_eq!(rules, ["Q20"]);
    }

    #[test]
    fn q2_header_variants() {
        assert_eq!(
            parse("Kanata\t0004").0,
            "Header { version: [48, 48, 48, 52] }"
        );
        assert_eq!(
            parse("Kanata 0004").0,
            "Header { version: [48, 48, 48, 52] }"
        );
        assert_eq!(
            parse("Kanata\t0004    ").0,
            "Header { version: [48, 48, 48, 52] }"
        );
    }

    #[test]
    fn simulator_ids_keep_every_64_bit_value_signed_or_unsigned() {
        for value in [i128::from(i64::MIN), -1, 0, 1, i128::from(u64::MAX)] {
            assert_eq!(SimId::from(value).get(), value);
            let line = format!("I\t0\t{value}\t0");
            assert_eq!(
                parse(&line).0,
                format!("Command(Insn {{ id: 0, sim_id: {value}, thread: 0 }})")
            );
        }
    }

    #[test]
    fn tabs_are_found_at_every_position_of_a_word() {
        for len in 0..24 {
            for at in 0..len {
                let mut line = vec![b'x'; len];
                line[at] = b'\t';
                if at + 1 < len {
                    line[at + 1] = 0x01; // a borrow must not flag the byte after a TAB
                }
                let f = split(&line);
                assert!(f.tabbed, "{len} {at}");
                assert_eq!(f.fields[0].len(), at, "{len} {at}");
            }
        }
        let f = split(b"S\t1\t0\tF\tx\ty");
        assert_eq!(f.fields, [&b"S"[..], b"1", b"0", b"F"]);
        assert!(f.extra_fields);
    }

    #[test]
    fn numbers_parse_plain_signed_and_reject_garbage() {
        assert_eq!(parse_int(b"42"), Some((42, true)));
        assert_eq!(parse_int(b"007"), Some((7, false)));
        assert_eq!(parse_int(b" +3 "), Some((3, false)));
        assert_eq!(parse_int(b"-12"), Some((-12, true)));
        assert_eq!(parse_int(b"9223372036854775808"), None);
        assert_eq!(parse_int(b"0x10"), None);
        assert_eq!(parse_int(b""), None);
    }
}
