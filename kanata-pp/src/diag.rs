//! Diagnostics: every line kanata-pp repaired, moved or dropped, grouped by the rule of the
//! format spec that applied (Q1–Q20, see `docs/rules.md`), counted, with the first few
//! examples of each (all of them when verbose).

use std::fmt;
use std::ops::Index;

use bstr::ByteSlice;

use crate::error::{Error, ErrorKind};

/// A rule of the quirk catalogue (§5 of the format spec), as diagnostics name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// Q1: padded numbers, trailing blanks and empty fields; empty labels.
    Q1,
    /// Q2: header variants, other versions, legacy header-less logs.
    Q2,
    /// Q3: blank lines, comments, unknown commands, trailing `//` comments.
    Q3,
    /// Q4: `C 0`.
    Q4,
    /// Q4b: a bare `C` with no number.
    Q4b,
    /// Q5: a late, repeated or mid-file `C=`.
    Q5,
    /// Q7: an `E` for a stage that is not the open one of its lane.
    Q7,
    /// Q8: a raw line break inside label text.
    Q8,
    /// Q9: a TAB inside label text.
    Q9,
    /// Q10: a command after the instruction's `R`.
    Q10,
    /// Q11: a file id used again.
    Q11,
    /// Q12: a command for an id never declared; a dependency that cannot be drawn.
    Q12,
    /// Q13: an `R` with an empty, `'0'`/`'1'`-as-number or other type, or no retire id.
    Q13,
    /// Q14: retire ids renumbered (`--renumber-retire`).
    Q14,
    /// Q15: instructions still open at the end closed (`--close-open`).
    Q15,
    /// Q16: repeated labels dropped, back-to-back segments merged (`--dedupe`).
    Q16,
    /// Q17: zero-length stages stretched to one cycle (`--stretch-zero`).
    Q17,
    /// Q18: lines without the prefix skipped (`--strip-prefix`).
    Q18,
    /// Q19: fields separated by spaces instead of TABs.
    Q19,
    /// Q20: a lane written other than as a plain decimal.
    Q20,
    /// G1 (gem5): a record that comes too late to be placed (its sequence number or fetch
    /// cycle is before what was already written; `--window`), dropped.
    G1,
    /// G2 (gem5): a sequence number used twice (several CPUs in one trace), both kept.
    G2,
    /// G3 (gem5): a tick between two clock edges, rounded down to its cycle.
    G3,
    /// G4 (gem5): a record without its retire line (truncated), left open.
    G4,
    /// G5 (gem5): a malformed, unknown or orphan O3PipeView line, dropped.
    G5,
    /// G6 (gem5): a retire tick before the last stage, retired at that stage instead.
    G6,
    /// G7 (gem5): ticks per cycle not detectable, 1 assumed.
    G7,
    /// R1 (RSD): a raw line RSD's converter cannot read (it stops or crashes there): an
    /// unknown command, a missing field, a number that is not one, a stage, serial or
    /// micro-op index out of range, a missing or unknown header. Skipped.
    R1,
    /// R2 (RSD): a well-formed raw line RSD's converter crashes on (an `L` for an op not in
    /// flight, a flush of an op never seen, a retire of an op it already dropped, an `S` line
    /// without its comment field, invalid UTF-8, a floating-point word its disassembler fails
    /// on). Converted where there is something to convert, else skipped.
    R2,
    /// R3 (RSD): what RSD's converter warns about (an op dumped after it retired or was
    /// flushed, a gid defined twice, an event for a gid it no longer knows), converted as it
    /// converts it.
    R3,
    /// R4 (RSD): a command RSD's converter writes that Konata would apply after the
    /// instruction's `R` (a stage, an `E`, a second `R`, a label beyond `--late-window`) or
    /// use to stretch a stage closed earlier. Dropped: drawn without it.
    R4,
    /// W1 (windows): a dependency whose producer is not in the window (`--cycles`,
    /// `--insns`, `--threads`), dropped.
    W1,
    /// W2 (windows): the seekable index of the input is damaged or belongs to another file;
    /// ignored, the input is read from the start.
    W2,
}

impl Rule {
    /// How many rules there are.
    const COUNT: usize = Rule::W2 as usize + 1;

    /// The id diagnostics print, as in the spec and `docs/rules.md`.
    pub fn id(self) -> &'static str {
        match self {
            Rule::Q1 => "Q1",
            Rule::Q2 => "Q2",
            Rule::Q3 => "Q3",
            Rule::Q4 => "Q4",
            Rule::Q4b => "Q4b",
            Rule::Q5 => "Q5",
            Rule::Q7 => "Q7",
            Rule::Q8 => "Q8",
            Rule::Q9 => "Q9",
            Rule::Q10 => "Q10",
            Rule::Q11 => "Q11",
            Rule::Q12 => "Q12",
            Rule::Q13 => "Q13",
            Rule::Q14 => "Q14",
            Rule::Q15 => "Q15",
            Rule::Q16 => "Q16",
            Rule::Q17 => "Q17",
            Rule::Q18 => "Q18",
            Rule::Q19 => "Q19",
            Rule::Q20 => "Q20",
            Rule::G1 => "G1",
            Rule::G2 => "G2",
            Rule::G3 => "G3",
            Rule::G4 => "G4",
            Rule::G5 => "G5",
            Rule::G6 => "G6",
            Rule::G7 => "G7",
            Rule::R1 => "R1",
            Rule::R2 => "R2",
            Rule::R3 => "R3",
            Rule::R4 => "R4",
            Rule::W1 => "W1",
            Rule::W2 => "W2",
        }
    }

    /// What the rule does, in the words of the summary line.
    pub fn summary(self) -> &'static str {
        match self {
            Rule::Q1 => "padded numbers, trailing blank fields or empty labels",
            Rule::Q2 => "header repaired",
            Rule::Q3 => "blank, comment or unknown lines dropped",
            Rule::Q4 => "`C 0` lines dropped",
            Rule::Q4b => "bare `C` read as one cycle",
            Rule::Q5 => "late or mid-file `C=` turned into a cycle step",
            Rule::Q7 => "`E` for a stage that is not open dropped",
            Rule::Q8 => "label continued over a raw line break",
            Rule::Q9 => "TAB inside label text joined with a space",
            Rule::Q10 => "command after the instruction's `R`",
            Rule::Q11 => "file id used again",
            Rule::Q12 => "command for an undeclared instruction or undrawable dependency dropped",
            Rule::Q13 => "`R` type or retire id repaired",
            Rule::Q14 => "retire ids renumbered",
            Rule::Q15 => "instructions open at the end closed",
            Rule::Q16 => "repeated labels or stage segments merged",
            Rule::Q17 => "zero-length stages stretched to one cycle",
            Rule::Q18 => "lines without the prefix skipped",
            Rule::Q19 => "fields separated by spaces",
            Rule::Q20 => "lane written other than as a plain decimal",
            Rule::G1 => "gem5 records too late to be placed dropped (--window)",
            Rule::G2 => "gem5 sequence numbers used twice (several CPUs?), both kept",
            Rule::G3 => "gem5 ticks between clock edges rounded down to their cycle",
            Rule::G4 => "gem5 records without a retire line left open",
            Rule::G5 => "malformed, unknown or orphan O3PipeView lines dropped",
            Rule::G6 => "gem5 retire ticks before the last stage moved to it",
            Rule::G7 => "gem5 ticks per cycle not detectable, 1 assumed",
            Rule::R1 => "RSD lines RSD's converter cannot read skipped",
            Rule::R2 => "RSD lines RSD's converter crashes on, converted or skipped",
            Rule::R3 => "RSD lines RSD's converter warns about, converted as it does",
            Rule::R4 => "commands Konata would apply after the end or to an earlier stage dropped",
            Rule::W1 => "dependencies on instructions outside the window dropped",
            Rule::W2 => "seekable index damaged, ignored: read from the start",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// One reported line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Example {
    /// The input line number (1-based); 0 for the end of the input.
    pub line: u64,
    /// What was done.
    pub message: String,
}

/// The repairs of one rule.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleReport {
    /// How many lines the rule applied to.
    pub count: u64,
    /// The first examples (all of them when verbose).
    pub examples: Vec<Example>,
}

/// The reports of one conversion by rule, in rule order: a map from [`Rule`] to
/// [`RuleReport`] with the read methods of a `BTreeMap`.
///
/// A report is found by indexing with its rule rather than by searching, because the
/// parser reports on most lines of a sloppy log.
///
/// ```
/// use kanata_pp::{Diagnostics, Rule};
/// let mut diag = Diagnostics::new(5, false);
/// diag.report(Rule::Q3, 7, || "comment dropped".to_owned());
/// let rules = diag.rules();
/// assert_eq!(rules.len(), 1);
/// assert_eq!(rules[&Rule::Q3].examples[0].line, 7);
/// assert!(rules.get(&Rule::Q1).is_none());
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RuleReports {
    /// The reports, sorted by rule.
    entries: Vec<(Rule, RuleReport)>,
    /// 1 + the position in `entries` of each rule's report; 0 for none. Empty until the
    /// first report.
    slots: Vec<u8>,
}

impl RuleReports {
    /// The report of `rule`, made empty if it has none yet.
    #[inline]
    fn entry(&mut self, rule: Rule) -> &mut RuleReport {
        match self.slots.get(rule as usize) {
            Some(&slot) if slot > 0 => &mut self.entries[usize::from(slot) - 1].1,
            _ => self.insert(rule),
        }
    }

    #[cold]
    fn insert(&mut self, rule: Rule) -> &mut RuleReport {
        let at = self.entries.partition_point(|(r, _)| *r < rule);
        self.entries.insert(at, (rule, RuleReport::default()));
        self.slots = vec![0; Rule::COUNT];
        for (position, (r, _)) in self.entries.iter().enumerate() {
            self.slots[*r as usize] = (position + 1) as u8;
        }
        &mut self.entries[at].1
    }

    /// The report of `rule`, if it applied.
    pub fn get(&self, rule: &Rule) -> Option<&RuleReport> {
        match self.slots.get(*rule as usize) {
            Some(&slot) if slot > 0 => Some(&self.entries[usize::from(slot) - 1].1),
            _ => None,
        }
    }

    /// Whether `rule` applied.
    pub fn contains_key(&self, rule: &Rule) -> bool {
        self.get(rule).is_some()
    }

    /// How many rules applied.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no rule applied.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The rules that applied, in order.
    pub fn keys(&self) -> impl Iterator<Item = &Rule> + '_ {
        self.entries.iter().map(|(rule, _)| rule)
    }

    /// The reports, in rule order.
    pub fn values(&self) -> impl Iterator<Item = &RuleReport> + '_ {
        self.entries.iter().map(|(_, report)| report)
    }

    /// Each rule that applied with its report, in rule order.
    pub fn iter(&self) -> impl Iterator<Item = (&Rule, &RuleReport)> + '_ {
        self.entries.iter().map(|(rule, report)| (rule, report))
    }
}

impl fmt::Debug for RuleReports {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Index<&Rule> for RuleReports {
    type Output = RuleReport;

    /// # Panics
    /// When `rule` did not apply.
    fn index(&self, rule: &Rule) -> &RuleReport {
        self.get(rule)
            .unwrap_or_else(|| panic!("no report for rule {rule}"))
    }
}

impl<'a> IntoIterator for &'a RuleReports {
    type Item = (&'a Rule, &'a RuleReport);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (Rule, RuleReport)>,
        fn(&'a (Rule, RuleReport)) -> (&'a Rule, &'a RuleReport),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(rule, report)| (rule, report))
    }
}

/// Every repair of one conversion, grouped by rule.
#[derive(Clone, Debug, Default)]
pub struct Diagnostics {
    rules: RuleReports,
    max_examples: usize,
    strict: bool,
    first_strict: Option<(Rule, Example)>,
}

impl Diagnostics {
    /// Keeps `max_examples` examples per rule (`usize::MAX` for all); with `strict`, the first
    /// repair is remembered as an error.
    pub fn new(max_examples: usize, strict: bool) -> Diagnostics {
        Diagnostics {
            rules: RuleReports::default(),
            max_examples,
            strict,
            first_strict: None,
        }
    }

    /// Records that `rule` applied at `line`; `message` is formatted only if kept.
    #[inline]
    pub fn report(&mut self, rule: Rule, line: u64, message: impl FnOnce() -> String) {
        let entry = self.rules.entry(rule);
        entry.count += 1;
        let keep = entry.examples.len() < self.max_examples;
        if keep || (self.strict && self.first_strict.is_none()) {
            let example = Example {
                line,
                message: message(),
            };
            if self.strict && self.first_strict.is_none() {
                self.first_strict = Some((rule, example.clone()));
            }
            if keep {
                entry.examples.push(example);
            }
        }
    }

    /// Whether a report of `rule` made now would only add to its count: its examples are all
    /// taken and no `--strict` violation waits for one. Once true, true for good (examples are
    /// only added), so a hot loop may count such reports itself and hand them over with
    /// [`count`](Self::count).
    pub(crate) fn counts_only(&self, rule: Rule) -> bool {
        (!self.strict || self.first_strict.is_some())
            && self
                .rules
                .get(&rule)
                .is_some_and(|report| report.examples.len() >= self.max_examples)
    }

    /// Adds `n` reports of `rule` made while [`counts_only`](Self::counts_only) held.
    pub(crate) fn count(&mut self, rule: Rule, n: u64) {
        if n > 0 {
            self.rules.entry(rule).count += n;
        }
    }

    /// Empty diagnostics with the same settings.
    pub(crate) fn empty_like(&self) -> Diagnostics {
        Diagnostics::new(self.max_examples, self.strict)
    }

    /// Adds the repairs of `other`, found on other lines of the same input: counts add, the
    /// examples kept are the first by line, and so is the `--strict` violation.
    pub(crate) fn merge(&mut self, other: Diagnostics) {
        // Line 0 is "at the end": after every numbered line.
        let order = |e: &Example| if e.line == 0 { u64::MAX } else { e.line };
        for (rule, report) in other.rules.entries {
            let entry = self.rules.entry(rule);
            entry.count += report.count;
            let mine = std::mem::take(&mut entry.examples);
            // `other` read each line first (it parses), so its examples of a line come first.
            entry.examples = report.examples;
            entry.examples.extend(mine);
            entry.examples.sort_by_key(order);
            entry.examples.truncate(self.max_examples);
        }
        self.first_strict = match (self.first_strict.take(), other.first_strict) {
            (Some(a), Some(b)) => Some(if order(&b.1) <= order(&a.1) { b } else { a }),
            (a, b) => a.or(b),
        };
    }

    /// The first repair, when strict.
    pub fn strict_violation(&self) -> Option<&(Rule, Example)> {
        self.first_strict.as_ref()
    }

    /// The reports, by rule.
    pub fn rules(&self) -> &RuleReports {
        &self.rules
    }

    /// How many repairs in all.
    pub fn total(&self) -> u64 {
        self.rules.values().map(|r| r.count).sum()
    }

    /// Writes one summary line per rule and its examples, for humans.
    pub fn write_summary(&self, out: &mut dyn std::io::Write, input: &str) -> std::io::Result<()> {
        for (rule, report) in &self.rules {
            writeln!(
                out,
                "{input}: {rule}: {} ({} line{})",
                rule.summary(),
                report.count,
                if report.count == 1 { "" } else { "s" }
            )?;
            for example in &report.examples {
                if example.line == 0 {
                    writeln!(out, "  at end: {}", example.message)?;
                } else {
                    writeln!(out, "  line {}: {}", example.line, example.message)?;
                }
            }
            let hidden = report.count - report.examples.len() as u64;
            if hidden > 0 {
                writeln!(out, "  … and {hidden} more (-v shows all)")?;
            }
        }
        Ok(())
    }
}

/// The start of an input line (60 characters at most, invalid UTF-8 shown as U+FFFD), for
/// messages.
pub(crate) fn shorten(line: &[u8]) -> String {
    let text = line.to_str_lossy();
    match text.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.into_owned(),
    }
}

/// The `--strict` error for the first repair, if there was one.
pub(crate) fn strict_error(diag: &Diagnostics) -> Option<Error> {
    let (rule, example) = diag.strict_violation()?;
    let error = Error::new(
        ErrorKind::Strict,
        format!("--strict: {rule}: {}", example.message),
    );
    Some(match example.line {
        0 => error,
        line => error.with_line(line),
    })
}
