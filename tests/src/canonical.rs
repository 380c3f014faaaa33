//! An independent, strict checker of the canonical form of a Kanata trace (§4 of
//! `shared/spec/kanata-format.md`).
//!
//! Everything `kanata-writer` writes (and everything `kanata-pp` normalizes) must pass
//! [`check`] byte for byte. The checker shares no code with either crate: it reads the text
//! line by line, keeps its own model of which instructions are live and which stage each of
//! their lanes has open, and reports every line that breaks a rule as a [`Violation`] naming
//! the rule (`"4.3"`, ...). A text that passes yields [`Stats`], which tests compare with the
//! writer's own summary.
//!
//! The rules checked, by section of the spec:
//!
//! - 4.1: line 1 is `Kanata\t0004`, line 2 `C=\t<start cycle>`; no other `C=` line.
//! - 4.2: valid UTF-8, LF line ends and a final LF, no CR; exactly one TAB between fields
//!   (no empty field, no extra field); numbers in plain decimal (no padding, no leading zero,
//!   no `+`, no `-0`; a `-` only in `C=`, or also in sim ids, threads and retire ids with
//!   [`Options::negative_ids`]); lanes plain decimals; stage names non-empty, without TAB
//!   and without white space at either end (white space as Rust's `char::is_whitespace` or
//!   JavaScript's `String.prototype.trim`, which Konata uses, understands it).
//! - 4.3: `C` n ≥ 1, never two `C` lines in a row (so a `C` is followed by a command, or is
//!   the one final line that keeps the last cycle).
//! - 4.4: file ids dense and sequential from 0 in order of `I`; every command except a `W`
//!   producer names a live instruction (after its `I`, before its `R`); a `W` producer has
//!   already appeared and is older than the consumer.
//! - 4.5: every stage is closed by an explicit `E` before the next `S` of its lane and before
//!   `R`; an `E` names the stage open in its lane. [`Options::compact`] allows the implied
//!   `E`s (before `S` and before `R`) to be left out.
//! - 4.6: `L` type 0, 1 or 2; text non-empty, without TAB, CR or LF; type 2 only after the
//!   instruction's first `S`.
//! - 4.7: `R` type 0 or 1.
//! - 4.8: nothing else: no blank line, no unknown command.
//! - 4.10: absolute cycles stay within signed 64 bits.

use std::collections::BTreeMap;
use std::fmt;

/// How strict [`check_with`] is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Accept the compact form: the `E` that Konata implies before the next `S` of a lane,
    /// and before `R`, may be left out. An `E` that is written must still name the open stage.
    pub compact: bool,
    /// Accept negative sim ids, threads and retire ids (the spec calls the sim id "any
    /// integer"; `kanata-pp` keeps its input's ids, through `Writer::begin_signed` and
    /// `Writer::retire_as`). Off: only `C=` may have a `-`.
    pub negative_ids: bool,
}

impl Options {
    /// The default, explicit form: every stage closed by an `E`, no negative number but `C=`.
    pub const STRICT: Options = Options {
        compact: false,
        negative_ids: false,
    };
    /// The compact form: implied `E`s may be left out.
    pub const COMPACT: Options = Options {
        compact: true,
        negative_ids: false,
    };
}

/// One broken rule, at one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// 1-based line number (the line the problem was found on).
    pub line: usize,
    /// The rule of §4 broken, such as `"4.3"`.
    pub rule: &'static str,
    /// What is wrong, for a human.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}: rule {}: {}",
            self.line, self.rule, self.message
        )
    }
}

/// What a canonical trace holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Instructions (`I` lines).
    pub instructions: u64,
    /// Instructions retired (`R … 0`).
    pub retired: u64,
    /// Instructions flushed (`R … 1`).
    pub flushed: u64,
    /// Instructions with no `R` at the end of the file.
    pub open_at_end: u64,
    /// Lines in the file, the header included.
    pub lines: u64,
    /// The `C=` value.
    pub start_cycle: i64,
    /// The cycle of the last line (start cycle plus every `C`).
    pub last_cycle: i64,
    /// `C` lines.
    pub cycle_lines: u64,
    /// `L` lines.
    pub labels: u64,
    /// `S` lines.
    pub stage_starts: u64,
    /// `E` lines.
    pub stage_ends: u64,
    /// `W` lines.
    pub dependencies: u64,
    /// The retire ids of `R … 0` lines, in file order (wide enough for any `u64` or `i64`).
    pub retire_ids: Vec<i128>,
}

/// Checks `text` against the canonical form, explicit `E`s required.
pub fn check(text: &[u8]) -> Result<Stats, Vec<Violation>> {
    check_with(text, Options::STRICT)
}

/// Checks `text` against the canonical form with `options`.
pub fn check_with(text: &[u8], options: Options) -> Result<Stats, Vec<Violation>> {
    let mut checker = Checker::new(options);
    checker.run(text);
    if checker.violations.is_empty() {
        Ok(checker.stats)
    } else {
        Err(checker.violations)
    }
}

/// Checks `text` and panics with the violations (and the lines around the first) if it is
/// not canonical; returns the stats otherwise. For tests.
#[track_caller]
pub fn assert_canonical(text: &[u8], options: Options) -> Stats {
    match check_with(text, options) {
        Ok(stats) => stats,
        Err(violations) => {
            let shown: Vec<String> = violations.iter().take(20).map(|v| v.to_string()).collect();
            let first = violations[0].line;
            let context: Vec<String> = text
                .split(|&b| b == b'\n')
                .enumerate()
                .skip(first.saturating_sub(6))
                .take(10)
                .map(|(i, line)| format!("{:>6} | {:?}", i + 1, String::from_utf8_lossy(line)))
                .collect();
            panic!(
                "not canonical ({} violations):\n{}\naround line {first}:\n{}",
                violations.len(),
                shown.join("\n"),
                context.join("\n")
            );
        }
    }
}

/// What the checker knows of one instruction.
#[derive(Debug)]
enum Insn {
    Live {
        /// The stage open in each lane (lanes keyed by their text, as Konata keys them).
        open: BTreeMap<String, String>,
        /// Whether it has had an `S` (a type-2 label needs one).
        entered: bool,
    },
    Ended,
}

struct Checker {
    options: Options,
    violations: Vec<Violation>,
    stats: Stats,
    insns: Vec<Insn>,
    /// The absolute cycle, as a wide integer so that overflow can be reported.
    cycle: i128,
    /// Whether the previous line was a `C`.
    previous_was_c: bool,
    line: usize,
}

/// White space as Konata's `trim()` (JavaScript) or Rust's `trim()` sees it.
fn is_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

/// A plain non-negative decimal: digits only, no leading zero (except `0` itself), fits u64.
fn plain_u64(field: &str) -> Result<u64, String> {
    if field.is_empty() {
        return Err("empty number".into());
    }
    if !field.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{field:?} is not a plain decimal"));
    }
    if field.len() > 1 && field.starts_with('0') {
        return Err(format!("{field:?} has a leading zero"));
    }
    field
        .parse::<u64>()
        .map_err(|_| format!("{field:?} does not fit in 64 bits"))
}

/// A plain signed decimal: an optional `-` then a plain decimal, no `-0`, fits i64.
fn plain_i64(field: &str) -> Result<i64, String> {
    let (negative, digits) = match field.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, field),
    };
    let magnitude = plain_u64(digits)?;
    if negative && magnitude == 0 {
        return Err("\"-0\" is not plain".into());
    }
    let value = if negative {
        -(magnitude as i128)
    } else {
        magnitude as i128
    };
    i64::try_from(value).map_err(|_| format!("{field:?} does not fit in signed 64 bits"))
}

impl Checker {
    fn new(options: Options) -> Checker {
        Checker {
            options,
            violations: Vec::new(),
            stats: Stats::default(),
            insns: Vec::new(),
            cycle: 0,
            previous_was_c: false,
            line: 0,
        }
    }

    fn report(&mut self, rule: &'static str, message: impl Into<String>) {
        self.violations.push(Violation {
            line: self.line,
            rule,
            message: message.into(),
        });
    }

    fn run(&mut self, text: &[u8]) {
        if text.is_empty() {
            self.line = 1;
            self.report("4.1", "empty file: no header");
            return;
        }
        let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
        if text.last() == Some(&b'\n') {
            lines.pop(); // the empty piece after the final LF
        }
        let unterminated = text.last() != Some(&b'\n');
        let count = lines.len();
        for (index, raw) in lines.into_iter().enumerate() {
            self.line = index + 1;
            if unterminated && index + 1 == count {
                self.report("4.2", "the last line has no final LF");
            }
            self.line_bytes(raw);
        }
        self.stats.lines = count as u64;
        if count < 2 {
            self.line = count + 1;
            self.report("4.1", "no `C=` line after the header");
        }
        self.stats.open_at_end = self
            .insns
            .iter()
            .filter(|insn| matches!(insn, Insn::Live { .. }))
            .count() as u64;
        self.stats.last_cycle = i64::try_from(self.cycle).unwrap_or(i64::MAX);
    }

    fn line_bytes(&mut self, raw: &[u8]) {
        let mut raw = raw;
        if let Some(stripped) = raw.strip_suffix(b"\r") {
            self.report("4.2", "CR before the line feed (CRLF line end)");
            raw = stripped;
        }
        let text = match std::str::from_utf8(raw) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(err) => {
                self.report("4.2", format!("invalid UTF-8: {err}"));
                String::from_utf8_lossy(raw)
            }
        };
        if text.contains('\r') && !text.starts_with("L\t") {
            self.report("4.2", "CR inside the line");
        }
        match self.line {
            1 => {
                if text != "Kanata\t0004" {
                    self.report(
                        "4.1",
                        format!("line 1 must be \"Kanata\\t0004\", found {text:?}"),
                    );
                }
            }
            2 if text.starts_with("C=") => self.start_cycle(&text),
            2 => {
                self.report("4.1", "line 2 must be the `C=` line");
                self.command(&text);
            }
            _ => self.command(&text),
        }
    }

    fn start_cycle(&mut self, text: &str) {
        let fields: Vec<&str> = text.split('\t').collect();
        if fields.len() != 2 || fields[0] != "C=" {
            self.report(
                "4.1",
                format!("line 2 must be `C=` TAB <cycle>, found {text:?}"),
            );
            return;
        }
        match plain_i64(fields[1]) {
            Ok(start) => {
                self.stats.start_cycle = start;
                self.cycle = i128::from(start);
            }
            Err(why) => self.report("4.2", format!("start cycle: {why}")),
        }
    }

    /// Checks that `fields` has exactly `n` fields, none of them empty.
    fn shape(&mut self, fields: &[&str], n: usize) -> bool {
        if fields.len() != n {
            self.report(
                "4.2",
                format!("`{}` takes {} fields, found {}", fields[0], n, fields.len()),
            );
            return false;
        }
        if fields.iter().any(|f| f.is_empty()) {
            self.report(
                "4.2",
                format!("`{}` has an empty field (two TABs in a row?)", fields[0]),
            );
            return false;
        }
        true
    }

    fn number(&mut self, what: &str, field: &str) -> Option<u64> {
        match plain_u64(field) {
            Ok(n) => Some(n),
            Err(why) => {
                self.report("4.2", format!("{what}: {why}"));
                None
            }
        }
    }

    /// A sim id, thread or retire id: a plain decimal, negative only with
    /// [`Options::negative_ids`].
    fn id_number(&mut self, what: &str, field: &str) -> Option<i128> {
        if self.options.negative_ids && field.starts_with('-') {
            match plain_i64(field) {
                Ok(n) => Some(i128::from(n)),
                Err(why) => {
                    self.report("4.2", format!("{what}: {why}"));
                    None
                }
            }
        } else {
            self.number(what, field).map(i128::from)
        }
    }

    fn lane(&mut self, field: &str) -> Option<String> {
        self.number("lane", field).map(|_| field.to_owned())
    }

    fn stage_name(&mut self, field: &str) -> Option<String> {
        if field.is_empty() {
            self.report("4.2", "empty stage name");
            None
        } else if field.starts_with(is_space) || field.ends_with(is_space) {
            self.report(
                "4.2",
                format!("stage name {field:?} has white space at an end"),
            );
            None
        } else {
            Some(field.to_owned())
        }
    }

    /// The instruction a command names, if it is live; reports it otherwise.
    fn live(&mut self, command: &str, id: u64) -> Option<&mut Insn> {
        let declared = self.insns.len() as u64;
        match self.insns.get(id as usize) {
            None => {
                self.report(
                    "4.4",
                    format!("`{command}` names instruction {id}, which has not appeared (next id is {declared})"),
                );
                None
            }
            Some(Insn::Ended) => {
                self.report(
                    "4.4",
                    format!("`{command}` names instruction {id} after its `R`"),
                );
                None
            }
            Some(Insn::Live { .. }) => self.insns.get_mut(id as usize),
        }
    }

    fn command(&mut self, text: &str) {
        let fields: Vec<&str> = text.split('\t').collect();
        let was_c = std::mem::replace(&mut self.previous_was_c, false);
        match fields[0] {
            "" if fields.len() == 1 => self.report("4.8", "blank line"),
            "C=" => self.report("4.1", "`C=` anywhere but line 2"),
            "C" => {
                self.previous_was_c = true;
                self.stats.cycle_lines += 1;
                if was_c {
                    self.report("4.3", "two `C` lines in a row");
                }
                if !self.shape(&fields, 2) {
                    return;
                }
                let Some(n) = self.number("cycle count", fields[1]) else {
                    return;
                };
                if n == 0 {
                    self.report("4.3", "`C 0`");
                }
                self.cycle += i128::from(n);
                if i64::try_from(self.cycle).is_err() {
                    self.report("4.10", "the absolute cycle passes the signed 64-bit range");
                }
            }
            "I" => self.insn(&fields),
            "L" => self.label(&fields),
            "S" => self.stage_start(&fields),
            "E" => self.stage_end(&fields),
            "R" => self.end_of_life(&fields),
            "W" => self.dependency(&fields),
            other => self.report("4.8", format!("unknown command {other:?}")),
        }
    }

    fn insn(&mut self, fields: &[&str]) {
        let next = self.insns.len() as u64;
        self.insns.push(Insn::Live {
            open: BTreeMap::new(),
            entered: false,
        });
        self.stats.instructions += 1;
        if !self.shape(fields, 4) {
            return;
        }
        if let Some(id) = self.number("file id", fields[1]) {
            if id != next {
                self.report(
                    "4.4",
                    format!("`I` declares file id {id}, the next dense id is {next}"),
                );
            }
        }
        self.id_number("sim id", fields[2]);
        self.id_number("thread", fields[3]);
    }

    fn label(&mut self, fields: &[&str]) {
        self.stats.labels += 1;
        if fields.len() < 4 {
            self.report("4.2", format!("`L` takes 4 fields, found {}", fields.len()));
            return;
        }
        if fields.len() > 4 {
            self.report("4.6", "label text contains a TAB");
        }
        let text = fields[3..].join("\t");
        if fields[1].is_empty() || fields[2].is_empty() {
            self.report("4.2", "`L` has an empty field");
            return;
        }
        if text.is_empty() {
            self.report("4.6", "empty label text");
        }
        if text.contains('\r') {
            self.report("4.6", "label text contains a CR");
        }
        let kind = self.number("label type", fields[2]);
        if let Some(kind) = kind {
            if kind > 2 {
                self.report("4.6", format!("label type {kind} (must be 0, 1 or 2)"));
            }
        }
        let Some(id) = self.number("file id", fields[1]) else {
            return;
        };
        let Some(Insn::Live { entered, .. }) = self.live("L", id) else {
            return;
        };
        if kind == Some(2) && !*entered {
            self.report(
                "4.6",
                format!("type-2 label for instruction {id} before its first `S`"),
            );
        }
    }

    fn stage_start(&mut self, fields: &[&str]) {
        self.stats.stage_starts += 1;
        if !self.shape(fields, 4) {
            return;
        }
        let id = self.number("file id", fields[1]);
        let lane = self.lane(fields[2]);
        let name = self.stage_name(fields[3]);
        let (Some(id), Some(lane), Some(name)) = (id, lane, name) else {
            return;
        };
        let compact = self.options.compact;
        let Some(Insn::Live { open, entered }) = self.live("S", id) else {
            return;
        };
        *entered = true;
        if let Some(previous) = open.insert(lane.clone(), name) {
            if !compact {
                self.report(
                    "4.5",
                    format!("`S` in lane {lane} of instruction {id} while stage {previous:?} is open (no explicit `E`)"),
                );
            }
        }
    }

    fn stage_end(&mut self, fields: &[&str]) {
        self.stats.stage_ends += 1;
        if !self.shape(fields, 4) {
            return;
        }
        let id = self.number("file id", fields[1]);
        let lane = self.lane(fields[2]);
        let name = self.stage_name(fields[3]);
        let (Some(id), Some(lane), Some(name)) = (id, lane, name) else {
            return;
        };
        let Some(Insn::Live { open, .. }) = self.live("E", id) else {
            return;
        };
        match open.get(&lane) {
            Some(current) if *current == name => {
                open.remove(&lane);
            }
            Some(current) => {
                let message = format!(
                    "`E` of stage {name:?} in lane {lane} of instruction {id}, but the open stage is {current:?}"
                );
                self.report("4.5", message);
            }
            None => self.report(
                "4.5",
                format!("`E` of stage {name:?} in lane {lane} of instruction {id}, which has no open stage"),
            ),
        }
    }

    fn end_of_life(&mut self, fields: &[&str]) {
        if !self.shape(fields, 4) {
            return;
        }
        let id = self.number("file id", fields[1]);
        let retire_id = self.id_number("retire id", fields[2]);
        let kind = self.number("retire type", fields[3]);
        if let Some(kind) = kind {
            if kind > 1 {
                self.report("4.7", format!("retire type {kind} (must be 0 or 1)"));
            }
        }
        let Some(id) = id else { return };
        let compact = self.options.compact;
        let Some(insn) = self.live("R", id) else {
            return;
        };
        let Insn::Live { open, .. } = std::mem::replace(insn, Insn::Ended) else {
            return;
        };
        match kind {
            Some(1) => self.stats.flushed += 1,
            Some(0) => {
                self.stats.retired += 1;
                if let Some(retire_id) = retire_id {
                    self.stats.retire_ids.push(retire_id);
                }
            }
            _ => {}
        }
        if !compact && !open.is_empty() {
            let open: Vec<String> = open
                .iter()
                .map(|(lane, stage)| format!("{stage:?} in lane {lane}"))
                .collect();
            self.report(
                "4.5",
                format!(
                    "`R` of instruction {id} with stages still open: {}",
                    open.join(", ")
                ),
            );
        }
    }

    fn dependency(&mut self, fields: &[&str]) {
        self.stats.dependencies += 1;
        if !self.shape(fields, 4) {
            return;
        }
        let consumer = self.number("consumer id", fields[1]);
        let producer = self.number("producer id", fields[2]);
        self.number("dependency type", fields[3]);
        let (Some(consumer), Some(producer)) = (consumer, producer) else {
            return;
        };
        let appeared = self.insns.len() as u64;
        if self.live("W", consumer).is_none() {
            return;
        }
        if producer >= appeared {
            self.report("4.4", format!("`W` producer {producer} has not appeared"));
        } else if producer >= consumer {
            self.report(
                "4.4",
                format!("`W` producer {producer} is not older than its consumer {consumer}"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "Kanata\t0004\nC=\t0\n";

    /// A small trace that uses every command, in the explicit form.
    const GOOD: &str = "Kanata\t0004\nC=\t-3\n\
        I\t0\t100\t0\nL\t0\t0\t0x1000: lw a0, 0(sp)\nS\t0\t0\tF\n\
        C\t1\nI\t1\t101\t1\nS\t1\t0\tF\nE\t0\t0\tF\nS\t0\t0\tX\nL\t0\t2\t hit \\n L1 \n\
        C\t2\nS\t1\t1\tstl\nW\t1\t0\t0\nE\t0\t0\tX\nR\t0\t0\t0\n\
        C\t1\nE\t1\t1\tstl\nE\t1\t0\tF\nS\t1\t0\tIssue Q\nS\t1\t12\tメモリ\nE\t1\t0\tIssue Q\nE\t1\t12\tメモリ\nR\t1\t0\t1\n\
        I\t2\t18446744073709551615\t0\nC\t5\n";

    fn violations(text: &str, options: Options) -> Vec<Violation> {
        check_with(text.as_bytes(), options).expect_err("should not be canonical")
    }

    /// Asserts that `text` breaks exactly `rule` (and nothing else) on `line`.
    #[track_caller]
    fn breaks(text: &str, rule: &str, line: usize) {
        let found = violations(text, Options::STRICT);
        assert!(
            found.iter().all(|v| v.rule == rule && v.line == line),
            "expected only rule {rule} at line {line}, found {found:#?}"
        );
    }

    fn with_body(body: &str) -> String {
        format!("{HEAD}{body}")
    }

    #[test]
    fn a_trace_using_every_command_is_canonical() {
        let stats = check(GOOD.as_bytes()).unwrap();
        assert_eq!(
            stats,
            Stats {
                instructions: 3,
                retired: 1,
                flushed: 1,
                open_at_end: 1,
                lines: 26,
                start_cycle: -3,
                last_cycle: 6,
                cycle_lines: 4,
                labels: 2,
                stage_starts: 6,
                stage_ends: 6,
                dependencies: 1,
                retire_ids: vec![0],
            }
        );
    }

    #[test]
    fn the_header_alone_is_canonical() {
        let stats = check(HEAD.as_bytes()).unwrap();
        assert_eq!(stats.lines, 2);
        assert_eq!(stats.last_cycle, 0);
    }

    #[test]
    fn one_final_c_is_allowed() {
        let stats = check(with_body("C\t7\n").as_bytes()).unwrap();
        assert_eq!(stats.last_cycle, 7);
        check(with_body("I\t0\t0\t0\nC\t3\n").as_bytes()).unwrap();
    }

    #[test]
    fn header_rules_4_1() {
        breaks("Kanata 0004\nC=\t0\n", "4.1", 1);
        breaks("Kanata\t0004\t\nC=\t0\n", "4.1", 1);
        breaks("Kanata\t0003\nC=\t0\n", "4.1", 1);
        breaks("Kanata\t0004\n", "4.1", 2);
        breaks("Kanata\t0004\nC=\t0\t\n", "4.1", 2);
        breaks("Kanata\t0004\nC=\t0\nC=\t5\n", "4.1", 3);
        breaks("\u{feff}Kanata\t0004\nC=\t0\n", "4.1", 1);
        let found = violations("", Options::STRICT);
        assert_eq!(found[0].rule, "4.1");
        // A command on line 2 is reported, and still checked as a command.
        let found = violations("Kanata\t0004\nI\t0\t0\t0\nI\t0\t0\t0\n", Options::STRICT);
        assert_eq!(
            found.iter().map(|v| (v.line, v.rule)).collect::<Vec<_>>(),
            vec![(2, "4.1"), (3, "4.4")]
        );
    }

    #[test]
    fn line_rules_4_2() {
        // No final LF.
        breaks(&with_body("I\t0\t0\t0"), "4.2", 3);
        // CRLF.
        breaks("Kanata\t0004\nC=\t0\r\n", "4.2", 2);
        // CR in a non-label line.
        breaks(&with_body("I\t0\t0\r\t0\n"), "4.2", 3);
        // Invalid UTF-8.
        let mut bad = with_body("I\t0\t0\t0\nL\t0\t0\tx").into_bytes();
        bad.extend_from_slice(b"\xff\n");
        let found = check(&bad).unwrap_err();
        assert_eq!((found[0].line, found[0].rule), (4, "4.2"));
        assert_eq!(found.len(), 1);
        // Two TABs, a trailing TAB, a missing field.
        breaks(&with_body("I\t0\t\t0\t0\n"), "4.2", 3);
        breaks(&with_body("I\t0\t0\t0\t\n"), "4.2", 3);
        breaks(&with_body("I\t0\t0\n"), "4.2", 3);
        // Numbers: padding, leading zero, plus, minus, not a number.
        breaks(&with_body("I\t 0\t0\t0\n"), "4.2", 3);
        breaks(&with_body("I\t0\t07\t0\n"), "4.2", 3);
        breaks(&with_body("I\t0\t+7\t0\n"), "4.2", 3);
        breaks(&with_body("I\t0\t-7\t0\n"), "4.2", 3);
        breaks(&with_body("I\t0\t0x10\t0\n"), "4.2", 3);
        breaks(&with_body("I\t0\t18446744073709551616\t0\n"), "4.2", 3);
        breaks("Kanata\t0004\nC=\t+1\n", "4.2", 2);
        breaks("Kanata\t0004\nC=\t-0\n", "4.2", 2);
        breaks("Kanata\t0004\nC=\t007\n", "4.2", 2);
        check(b"Kanata\t0004\nC=\t-9223372036854775808\n").unwrap();
        // Lanes are plain decimals.
        breaks(&with_body("I\t0\t0\t0\nS\t0\t00\tF\n"), "4.2", 4);
        breaks(&with_body("I\t0\t0\t0\nS\t0\t+1\tF\n"), "4.2", 4);
        breaks(&with_body("I\t0\t0\t0\nS\t0\tmain\tF\n"), "4.2", 4);
        // Stage names: no white space at either end (Rust's or JavaScript's trim).
        breaks(&with_body("I\t0\t0\t0\nS\t0\t0\t F\n"), "4.2", 4);
        breaks(&with_body("I\t0\t0\t0\nS\t0\t0\tF \n"), "4.2", 4);
        breaks(&with_body("I\t0\t0\t0\nS\t0\t0\t\u{3000}F\n"), "4.2", 4);
        breaks(&with_body("I\t0\t0\t0\nS\t0\t0\t\u{feff}F\n"), "4.2", 4);
        breaks(&with_body("I\t0\t0\t0\nS\t0\t0\t\n"), "4.2", 4);
        check(with_body("I\t0\t0\t0\nS\t0\t0\tIssue Q\nE\t0\t0\tIssue Q\n").as_bytes()).unwrap();
    }

    #[test]
    fn cycle_rules_4_3() {
        breaks(&with_body("C\t0\nI\t0\t0\t0\n"), "4.3", 3);
        breaks(&with_body("C\t1\nC\t1\nI\t0\t0\t0\n"), "4.3", 4);
        breaks(&with_body("I\t0\t0\t0\nC\t1\nC\t2\n"), "4.3", 5);
        // A C right after the header, before a command, is fine.
        check(with_body("C\t4\nI\t0\t0\t0\n").as_bytes()).unwrap();
        // A negative or bare C is not a plain number.
        breaks(&with_body("C\t-1\nI\t0\t0\t0\n"), "4.2", 3);
        breaks(&with_body("C\nI\t0\t0\t0\n"), "4.2", 3);
    }

    #[test]
    fn cycle_range_4_10() {
        breaks(
            "Kanata\t0004\nC=\t9223372036854775800\nC\t8\nI\t0\t0\t0\n",
            "4.10",
            3,
        );
        let stats = check(b"Kanata\t0004\nC=\t-5\nC\t9223372036854775812\nI\t0\t0\t0\n").unwrap();
        assert_eq!(stats.last_cycle, i64::MAX);
    }

    #[test]
    fn id_rules_4_4() {
        // Ids dense and sequential from 0.
        breaks(&with_body("I\t1\t0\t0\n"), "4.4", 3);
        breaks(&with_body("I\t0\t0\t0\nI\t0\t0\t0\n"), "4.4", 4);
        breaks(&with_body("I\t0\t0\t0\nI\t2\t0\t0\n"), "4.4", 4);
        // Commands name live instructions.
        breaks(&with_body("L\t0\t0\tx\n"), "4.4", 3);
        breaks(&with_body("I\t0\t0\t0\nS\t1\t0\tF\n"), "4.4", 4);
        breaks(
            &with_body("I\t0\t0\t0\nR\t0\t0\t0\nL\t0\t0\tlate\n"),
            "4.4",
            5,
        );
        breaks(&with_body("I\t0\t0\t0\nR\t0\t0\t0\nR\t0\t1\t0\n"), "4.4", 5);
        breaks(&with_body("I\t0\t0\t0\nR\t0\t0\t1\nS\t0\t0\tF\n"), "4.4", 5);
        breaks(&with_body("I\t0\t0\t0\nR\t0\t0\t1\nE\t0\t0\tF\n"), "4.4", 5);
        // W: the consumer is live, the producer appeared and is older.
        breaks(
            &with_body("I\t0\t0\t0\nI\t1\t0\t0\nR\t1\t0\t0\nW\t1\t0\t0\n"),
            "4.4",
            6,
        );
        breaks(&with_body("I\t0\t0\t0\nI\t1\t0\t0\nW\t0\t1\t0\n"), "4.4", 5);
        breaks(&with_body("I\t0\t0\t0\nW\t0\t0\t0\n"), "4.4", 4);
        breaks(&with_body("I\t0\t0\t0\nW\t0\t5\t0\n"), "4.4", 4);
        // A finished producer is fine.
        check(with_body("I\t0\t0\t0\nI\t1\t0\t0\nR\t0\t0\t0\nW\t1\t0\t0\n").as_bytes()).unwrap();
    }

    #[test]
    fn stage_rules_4_5() {
        // S while the lane has an open stage.
        let text = with_body("I\t0\t0\t0\nS\t0\t0\tF\nC\t1\nS\t0\t0\tD\n");
        breaks(&text, "4.5", 6);
        check_with(text.as_bytes(), Options::COMPACT).unwrap();
        // R while stages are open.
        let text = with_body("I\t0\t0\t0\nS\t0\t0\tF\nS\t0\t1\tstl\nR\t0\t0\t0\n");
        breaks(&text, "4.5", 6);
        check_with(text.as_bytes(), Options::COMPACT).unwrap();
        // E with nothing open, E of another stage, E twice: wrong even in compact mode.
        for (text, line) in [
            (with_body("I\t0\t0\t0\nE\t0\t0\tF\n"), 4),
            (with_body("I\t0\t0\t0\nS\t0\t0\tF\nE\t0\t0\tD\n"), 5),
            (
                with_body("I\t0\t0\t0\nS\t0\t0\tF\nE\t0\t0\tF\nE\t0\t0\tF\n"),
                6,
            ),
            (with_body("I\t0\t0\t0\nS\t0\t0\tF\nE\t0\t1\tF\n"), 5),
        ] {
            breaks(&text, "4.5", line);
            let found = violations(&text, Options::COMPACT);
            assert!(found.iter().all(|v| v.rule == "4.5"), "{found:?}");
        }
        // Different lanes are independent.
        check(
            with_body("I\t0\t0\t0\nS\t0\t0\tF\nS\t0\t1\tstl\nE\t0\t1\tstl\nE\t0\t0\tF\n")
                .as_bytes(),
        )
        .unwrap();
        // Stages left open at the end of the file (no R) are fine.
        check(with_body("I\t0\t0\t0\nS\t0\t0\tF\nC\t3\n").as_bytes()).unwrap();
    }

    #[test]
    fn label_rules_4_6() {
        breaks(&with_body("I\t0\t0\t0\nL\t0\t3\tx\n"), "4.6", 4);
        breaks(&with_body("I\t0\t0\t0\nL\t0\t0\t\n"), "4.6", 4);
        breaks(&with_body("I\t0\t0\t0\nL\t0\t0\ta\tb\n"), "4.6", 4);
        breaks(&with_body("I\t0\t0\t0\nL\t0\t0\ta\rb\n"), "4.6", 4);
        breaks(&with_body("I\t0\t0\t0\nL\t0\t2\tnote\n"), "4.6", 4);
        // After the first S, a type-2 label is fine even once the stage is closed.
        check(with_body("I\t0\t0\t0\nS\t0\t0\tF\nE\t0\t0\tF\nL\t0\t2\tnote\n").as_bytes()).unwrap();
        // Text is kept as written: spaces at either end, a literal backslash-n, unicode.
        check(with_body("I\t0\t0\t0\nL\t0\t1\t  a \\n b  \nL\t0\t0\t é 日本 \n").as_bytes())
            .unwrap();
    }

    #[test]
    fn retire_rules_4_7() {
        breaks(&with_body("I\t0\t0\t0\nR\t0\t0\t2\n"), "4.7", 4);
        breaks(&with_body("I\t0\t0\t0\nR\t0\t0\t49\n"), "4.7", 4);
        breaks(&with_body("I\t0\t0\t0\nR\t0\t0\n"), "4.2", 4);
    }

    #[test]
    fn nothing_else_4_8() {
        breaks(&with_body("I\t0\t0\t0\n\nC\t1\n"), "4.8", 4);
        breaks(&with_body("# comment\n"), "4.8", 3);
        breaks(&with_body("X\t0\n"), "4.8", 3);
        breaks(&with_body("i\t0\t0\t0\n"), "4.8", 3);
    }

    #[test]
    fn negative_ids_need_the_option() {
        let text = with_body("I\t0\t-5\t-1\nR\t0\t-3\t0\n");
        let found = violations(&text, Options::STRICT);
        assert_eq!(
            found.iter().map(|v| (v.line, v.rule)).collect::<Vec<_>>(),
            vec![(3, "4.2"), (3, "4.2"), (4, "4.2")]
        );
        let options = Options {
            negative_ids: true,
            ..Options::STRICT
        };
        let stats = check_with(text.as_bytes(), options).unwrap();
        assert_eq!(stats.retire_ids, vec![-3]);
        // Still plain: no -0, no padding; never on file ids, lanes or types.
        for bad in [
            "I\t0\t-0\t0\n",
            "I\t0\t-05\t0\n",
            "I\t-0\t5\t0\n",
            "I\t0\t5\t0\nS\t0\t-1\tF\n",
            "I\t0\t5\t0\nR\t0\t0\t-1\n",
            "I\t0\t5\t0\nL\t0\t-1\tx\n",
        ] {
            let found = check_with(with_body(bad).as_bytes(), options).unwrap_err();
            assert!(found.iter().all(|v| v.rule == "4.2"), "{bad:?}: {found:?}");
        }
    }

    #[test]
    fn stats_count_the_retire_ids_in_order() {
        let text =
            with_body("I\t0\t0\t0\nI\t1\t0\t0\nI\t2\t0\t0\nR\t1\t0\t0\nR\t0\t0\t1\nR\t2\t1\t0\n");
        let stats = check(text.as_bytes()).unwrap();
        assert_eq!(stats.retire_ids, vec![0, 1]);
        assert_eq!((stats.retired, stats.flushed, stats.open_at_end), (2, 1, 0));
    }
}
