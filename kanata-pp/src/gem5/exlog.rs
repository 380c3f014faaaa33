//! The other debug-flag lines of a gem5 trace ("ex-logs", spec §1.4 and §2.5): kept per
//! sequence number until that instruction's record consumes them.

use std::collections::{BTreeMap, VecDeque};
use std::sync::LazyLock;

use memchr::memmem::Finder;

/// One kept line: its tick (`None` when the first field is not a plain number, which
/// Konata reads as `NaN`) and where its text is in its entry's `text`.
#[derive(Clone, Copy, Debug)]
pub(super) struct ExLine {
    pub(super) tick: Option<u64>,
    start: usize,
    end: usize,
}

/// The lines kept for one sequence number, and the thread id one of them named. Their text
/// is in one string, emptied when they are all consumed, and entries are reused: keeping a
/// line allocates nothing once the buffers have grown.
#[derive(Debug, Default)]
pub(super) struct ExEntry {
    pub(super) lines: VecDeque<ExLine>,
    text: String,
    /// `[tid:N]` of the last kept line that also named the sequence number (`sn:`).
    pub(super) tid: Option<u32>,
}

impl ExEntry {
    /// Keeps a line.
    pub(super) fn push(&mut self, tick: Option<u64>, text: &str) {
        let start = self.text.len();
        self.text.push_str(text);
        self.lines.push_back(ExLine {
            tick,
            start,
            end: self.text.len(),
        });
    }

    /// The text of a line of this entry.
    pub(super) fn text(&self, line: ExLine) -> &str {
        &self.text[line.start..line.end]
    }

    /// Frees the text of the lines consumed once none is left.
    pub(super) fn forget_consumed(&mut self) {
        if self.lines.is_empty() {
            self.text.clear();
        }
    }

    fn clear(&mut self) {
        self.lines.clear();
        self.text.clear();
        self.tid = None;
    }
}

/// Entries kept for reuse, at most.
const SPARE_ENTRIES: usize = 64;

/// The ex-log lines not yet consumed, by sequence number.
#[derive(Debug, Default)]
pub(super) struct ExLogs {
    entries: BTreeMap<u64, ExEntry>,
    /// Entries no longer needed, to be filled again.
    spare: Vec<ExEntry>,
    /// The sequence number lines without `sn:` belong to (Konata's `parsingExLogLastGID_`).
    current: Option<u64>,
    /// Lines kept, for the high-water mark tests look at.
    kept: usize,
}

impl ExLogs {
    /// Reads one line that is not an O3PipeView record (§2.5): `sn:N` makes N the current
    /// sequence number; a line of an instruction already written (`seq <= written`) is
    /// ignored; a tick-prefixed line is kept for the current one, any other line ends it.
    pub(super) fn line(&mut self, text: &str, written: Option<u64>) {
        let named = serial_number(text);
        if let Some(seq) = named {
            self.current = Some(seq);
        }
        let Some(seq) = self.current else {
            return;
        };
        if written.is_some_and(|w| seq <= w) {
            return;
        }
        let first = memchr::memchr(b':', text.as_bytes()).map_or(text, |at| &text[..at]);
        if !tick_prefixed(first) {
            self.current = None;
            return;
        }
        let spare = &mut self.spare;
        let entry = self
            .entries
            .entry(seq)
            .or_insert_with(|| spare.pop().unwrap_or_default());
        if named.is_some() {
            if let Some(tid) = thread_id(text) {
                entry.tid = Some(tid);
            }
        }
        entry.push(parse_js_tick(first), text);
        self.kept += 1;
    }

    /// Whether anything is kept for `seq`.
    pub(super) fn holds(&self, seq: u64) -> bool {
        self.entries.contains_key(&seq)
    }

    /// The lines kept for `seq`, to be consumed by its record.
    pub(super) fn get_mut(&mut self, seq: u64) -> Option<&mut ExEntry> {
        self.entries.get_mut(&seq)
    }

    /// Removes what is kept for `seq` and every earlier sequence number (their records can
    /// no longer be written), returning the thread id `seq`'s lines named.
    pub(super) fn take_through(&mut self, seq: u64) -> Option<u32> {
        let mut tid = None;
        while let Some(entry) = self.entries.first_entry() {
            if *entry.key() > seq {
                break;
            }
            let (key, mut entry) = entry.remove_entry();
            self.kept -= entry.lines.len();
            if key == seq {
                tid = entry.tid;
            }
            if self.spare.len() < SPARE_ENTRIES {
                entry.clear();
                self.spare.push(entry);
            }
        }
        tid
    }

    /// Lines kept now.
    pub(super) fn kept(&self) -> usize {
        self.kept
    }

    /// A line consumed from an entry.
    pub(super) fn consumed(&mut self, n: usize) {
        self.kept -= n;
    }
}

/// `/sn:(\d+)/`: the first `sn:` followed by a digit.
pub(super) fn serial_number(text: &str) -> Option<u64> {
    static SN: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"sn:"));
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(at) = SN.find(&bytes[from..]) {
        let digits_at = from + at + 3;
        let digits = leading_digits(&bytes[digits_at..]);
        if digits > 0 {
            return text[digits_at..digits_at + digits].parse().ok();
        }
        from = from + at + 1;
    }
    None
}

/// `/\[tid:(\d+)\]/`.
fn thread_id(text: &str) -> Option<u32> {
    static TID: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"[tid:"));
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(at) = TID.find(&bytes[from..]) {
        let digits_at = from + at + 5;
        let digits = leading_digits(&bytes[digits_at..]);
        if digits > 0 && bytes.get(digits_at + digits) == Some(&b']') {
            return text[digits_at..digits_at + digits].parse().ok();
        }
        from = from + at + 1;
    }
    None
}

fn leading_digits(bytes: &[u8]) -> usize {
    bytes.iter().take_while(|b| b.is_ascii_digit()).count()
}

/// `/^\s*\d+/`.
fn tick_prefixed(field: &str) -> bool {
    field
        .trim_start()
        .as_bytes()
        .first()
        .is_some_and(u8::is_ascii_digit)
}

/// JavaScript `Number(field)` for a tick: a trimmed run of digits, else `None` (NaN).
fn parse_js_tick(field: &str) -> Option<u64> {
    let t = field.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// `/\(([^()]+)\) to physical reg (\d+) \(\d+\)/`: the register key `<class><phys>` a rename
/// line writes, as its two parts.
pub(super) fn destination_key(token: &str) -> Option<(&str, &str)> {
    const MID: &str = ") to physical reg ";
    static FINDER: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(MID));
    let mut from = 0;
    while let Some(at) = FINDER.find(&token.as_bytes()[from..]) {
        let close = from + at;
        let after = close + MID.len();
        from = close + 1;
        let Some(open) = memchr::memrchr2(b'(', b')', &token.as_bytes()[..close]) else {
            continue;
        };
        if token.as_bytes()[open] != b'(' || open + 1 == close {
            continue;
        }
        let class = &token[open + 1..close];
        let rest = &token.as_bytes()[after..];
        let phys = leading_digits(rest);
        if phys == 0 || !rest[phys..].starts_with(b" (") {
            continue;
        }
        let second = leading_digits(&rest[phys + 2..]);
        if second == 0 || rest.get(phys + 2 + second) != Some(&b')') {
            continue;
        }
        return Some((class, &token[after..after + phys]));
    }
    None
}

/// `/got phys reg (\d+) \(([^()]+)\)/`: the register key `<class><phys>` a rename line
/// reads (class `invalid` skipped), as its two parts.
pub(super) fn source_key(token: &str) -> Option<(&str, &str)> {
    const HEAD: &str = "got phys reg ";
    static FINDER: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(HEAD));
    let mut from = 0;
    while let Some(at) = FINDER.find(&token.as_bytes()[from..]) {
        let digits_at = from + at + HEAD.len();
        from = from + at + 1;
        let rest = &token.as_bytes()[digits_at..];
        let phys = leading_digits(rest);
        if phys == 0 || !rest[phys..].starts_with(b" (") {
            continue;
        }
        let class_at = phys + 2;
        let class_len = rest[class_at..]
            .iter()
            .take_while(|&&b| b != b'(' && b != b')')
            .count();
        if class_len == 0 || rest.get(class_at + class_len) != Some(&b')') {
            continue;
        }
        let class = &token[digits_at + class_at..digits_at + class_at + class_len];
        if class == "invalid" {
            return None;
        }
        return Some((class, &token[digits_at..digits_at + phys]));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_numbers_threads_and_register_keys_are_found_as_konatas_patterns_find_them() {
        assert_eq!(serial_number("x [sn:12] y [sn:13]"), Some(12));
        assert_eq!(serial_number("sn: 12 then sn:7"), Some(7));
        assert_eq!(serial_number("no number"), None);
        assert_eq!(thread_id("1500: a: [tid:3]: b [sn:1]"), Some(3));
        assert_eq!(
            destination_key(" Renaming arch reg 1 (IntRegClass) to physical reg 152 (152). [sn"),
            Some(("IntRegClass", "152"))
        );
        assert_eq!(
            destination_key(" Renaming arch reg 1 (condition_code) to physical reg 7 (7)."),
            Some(("condition_code", "7"))
        );
        assert_eq!(
            source_key(" Looking up IntRegClass arch reg 1, got phys reg 152 (IntRegClass) [sn"),
            Some(("IntRegClass", "152"))
        );
        assert_eq!(source_key("got phys reg 3 (invalid)"), None);
        assert_eq!(source_key("got phys reg x (IntRegClass)"), None);
    }

    #[test]
    fn lines_follow_the_last_serial_number_and_untimed_lines_end_it() {
        let mut logs = ExLogs::default();
        logs.line("100: cpu.rename: [tid:2] Processing [sn:5]", None);
        logs.line("101: cpu.rename: more", None);
        logs.line("not a tick line", None);
        logs.line("102: cpu.rename: orphan", None);
        let entry = logs.get_mut(5).unwrap();
        assert_eq!(entry.lines.len(), 2);
        assert_eq!(entry.tid, Some(2));
        assert_eq!(logs.kept(), 2);
        // Lines of written instructions are ignored.
        logs.line("103: x [sn:4]", Some(4));
        assert!(logs.get_mut(4).is_none());
        assert_eq!(logs.take_through(5), Some(2));
        assert_eq!(logs.kept(), 0);
    }
}
