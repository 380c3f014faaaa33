//! Konata's statistics dialog, ported: `GenericStats` and `X86Gem5Stats` of Konata's
//! `src/core/stats.ts` (Konata 1.1's `stats.js`), the classifiers of instruction kinds by
//! their left-pane label, and the attribution of flushes to the instruction before them.
//!
//! The numbers are Konata's own, quirks included (see `docs/analysis.md`):
//!
//! - `numFetchedOps` is Konata's `lastID`, the largest op id (one less than the number of
//!   instructions of a dense trace), `numCommittedOps` its `lastRID`, the largest retire id
//!   of a retired instruction (quirk rule Q14: retire ids are kept as the input wrote them),
//!   `numCycles` its `lastCycle`, the sum of the `C` steps (Konata ignores `C=`, Q5);
//! - `ipc` is `lastRID / lastCycle`;
//! - the ops are scanned in op-id order, ids `0 .. lastID` (the last op is not scanned), an
//!   id without an op is skipped;
//! - a rate or MPKI that divides by zero is NaN or infinite in Konata: it is `null` in JSON
//!   and written as Konata prints it (`NaN`, `Infinity`) in the table.
//!
//! The matchers below implement Konata's regular expressions exactly, over UTF-16 code units
//! as JavaScript runs them (`\s` is JavaScript's set of white space).

use serde::Serialize;

/// Konata gives up on the x86-gem5 classifier at the first op scanned with an id of at
/// least this one when no op up to it (itself included) matched its detection patterns, and
/// counts again with the generic one (Konata's `calculateStats`).
pub const X86_DETECT_LAST_ID: u64 = 1000;

/// The name Konata gives its generic classifier.
pub const GENERIC: &str = "GenericStats";
/// The name Konata gives its x86-gem5 classifier.
pub const X86_GEM5: &str = "X86_Gem5_Stats";

/// Kind bits of one instruction under one classifier.
pub(crate) const BRANCH: u8 = 1;
/// A jump, call or return.
pub(crate) const JUMP: u8 = 2;
/// A store.
pub(crate) const STORE: u8 = 4;

/// A code unit of a label as Konata's matchers read it: UTF-16, or a byte of a label that
/// is all ASCII (where the two are the same units).
pub(crate) trait Unit: Copy {
    /// The UTF-16 code unit.
    fn unit(self) -> u16;
}

impl Unit for u8 {
    #[inline]
    fn unit(self) -> u16 {
        u16::from(self)
    }
}

impl Unit for u16 {
    #[inline]
    fn unit(self) -> u16 {
        self
    }
}

/// Whether `c` is in JavaScript's `\s`.
#[inline]
fn js_space(c: u16) -> bool {
    matches!(
        c,
        0x09..=0x0d
            | 0x20
            | 0xa0
            | 0x1680
            | 0x2000..=0x200a
            | 0x2028
            | 0x2029
            | 0x202f
            | 0x205f
            | 0x3000
            | 0xfeff
    )
}

/// Whether `text[at..]` starts with `word` (ASCII, exact case).
#[inline]
fn starts<T: Unit>(text: &[T], at: usize, word: &[u8]) -> bool {
    text.len() >= at + word.len()
        && text[at..at + word.len()]
            .iter()
            .zip(word)
            .all(|(&a, &b)| a.unit() == u16::from(b))
}

/// Whether `text` contains `needle` (ASCII, exact case).
fn contains<T: Unit>(text: &[T], needle: &[u8]) -> bool {
    (0..text.len()).any(|i| starts(text, i, needle))
}

/// Whether `text[at..]` starts with `word`, ASCII letters compared without case.
fn starts_nocase<T: Unit>(text: &[T], at: usize, word: &[u8]) -> bool {
    text.len() >= at + word.len()
        && text[at..at + word.len()]
            .iter()
            .zip(word)
            .all(|(&a, &b)| u8::try_from(a.unit()).is_ok_and(|a| a.eq_ignore_ascii_case(&b)))
}

/// `:\s*WORD` at the colon `text[colon]`.
fn after_colon<T: Unit>(text: &[T], colon: usize, word: &[u8]) -> bool {
    let mut at = colon + 1;
    while at < text.len() && js_space(text[at].unit()) {
        at += 1;
    }
    starts(text, at, word)
}

/// `[^:]+:\s*WORD` matched from `from`: at least one code unit that is not `:`, the first `:`
/// after them, white space, then `word` (exact case).
fn colon_then<T: Unit>(text: &[T], from: usize, word: &[u8]) -> bool {
    let colon = u16::from(b':');
    let Some(offset) = text
        .get(from..)
        .and_then(|rest| rest.iter().position(|&c| c.unit() == colon))
    else {
        return false;
    };
    offset > 0 && after_colon(text, from + offset, word)
}

/// `[^:]+:\s*WORD` anywhere. The match of `[^:]+` ends right before its colon, so the pattern
/// matches where a colon that follows a unit other than `:` is followed by `\s*WORD`: one
/// pass over the colons.
fn any_colon_then<T: Unit>(text: &[T], word: &[u8]) -> bool {
    let colon = u16::from(b':');
    (1..text.len()).any(|c| {
        text[c].unit() == colon && text[c - 1].unit() != colon && after_colon(text, c, word)
    })
}

/// `A[^,]*,[^,]*A` for a three-unit pattern `A` that `at(text, i)` matches at `i`.
fn pair_across_comma<T: Unit>(text: &[T], at: impl Fn(&[T], usize) -> bool) -> bool {
    let comma = u16::from(b',');
    for i in 0..text.len() {
        if !at(text, i) {
            continue;
        }
        let Some(offset) = text[i + 3..].iter().position(|&c| c.unit() == comma) else {
            // No comma after this match: none after a later one either.
            return false;
        };
        let start = i + 3 + offset + 1;
        let end = text[start..]
            .iter()
            .position(|&c| c.unit() == comma)
            .map_or(text.len(), |o| start + o);
        if (start..end.saturating_sub(2)).any(|j| at(text, j)) {
            return true;
        }
    }
    false
}

#[inline]
fn in_set<T: Unit>(c: T, set: &[u8]) -> bool {
    in_set_unit(c.unit(), set)
}

#[inline]
fn in_set_unit(c: u16, set: &[u8]) -> bool {
    set.iter().any(|&s| u16::from(s) == c)
}

/// `[eErR][aAbBcCdD][xX]` at `i`.
fn x86_register<T: Unit>(text: &[T], i: usize) -> bool {
    text.len() >= i + 3
        && in_set(text[i], b"eErR")
        && in_set(text[i + 1], b"aAbBcCdD")
        && in_set(text[i + 2], b"xX")
}

/// `[xXyY][mM][mM]` at `i`.
fn x86_vector<T: Unit>(text: &[T], i: usize) -> bool {
    text.len() >= i + 3
        && in_set(text[i], b"xXyY")
        && in_set(text[i + 1], b"mM")
        && in_set(text[i + 2], b"mM")
}

/// Konata's generic classifier (`GenericStats.isBranch_`, `isJump_`, `isStore_`): the kind
/// bits of a label.
///
/// - branch: `/[\s][b][^\s]*[\s]*/`, white space then `b`;
/// - jump: `/[\s]([j])|(call)|(ret)[^\s]*[\s]*/`, white space then `j`, or `call` or `ret`
///   anywhere (the alternation binds loosest);
/// - store: `/[\s](st)|(sw)|(sh)|(sb)[^\s]*[\s]*/`, white space then `st`, or `sw`, `sh` or
///   `sb` anywhere.
pub(crate) fn generic_kinds<T: Unit>(label: &[T]) -> u8 {
    // One pass: every pattern starts at white space, `c`, `r` or `s`.
    let at = |i: usize| label.get(i).map_or(0, |c| c.unit());
    let mut kinds = 0;
    for i in 0..label.len() {
        let c = label[i].unit();
        if js_space(c) {
            match at(i + 1) {
                0x62 /* b */ => kinds |= BRANCH,
                0x6a /* j */ => kinds |= JUMP,
                0x73 /* s */ if at(i + 2) == u16::from(b't') => kinds |= STORE,
                _ => {}
            }
        } else if c == u16::from(b'c') {
            if starts(label, i, b"call") {
                kinds |= JUMP;
            }
        } else if c == u16::from(b'r') {
            if starts(label, i, b"ret") {
                kinds |= JUMP;
            }
        } else if c == u16::from(b's') && in_set_unit(at(i + 1), b"whb") {
            kinds |= STORE;
        }
        if kinds == BRANCH | JUMP | STORE {
            break;
        }
    }
    kinds
}

/// Konata's x86-gem5 classifier (`X86Gem5Stats.isBranch_`, `isJump_`, `isStore_`).
///
/// - branch: `/[\s]*[jJ][^mM][^:]+:\s*wrip/`;
/// - jump: `/([\s]*([jJ][mM])|([cC][aA][lL][lL])|([rR][eE][tT]))[^:]+:\s*wrip/`;
/// - store: `/[\s]*[^:]+:\s*st/`.
pub(crate) fn x86_kinds<T: Unit>(label: &[T]) -> u8 {
    let mut kinds = 0;
    // Both need `wrip`: most labels (every one but gem5 x86 micro-ops) are passed over in
    // one scan.
    if contains(label, b"wrip") {
        let m = |c: T| c.unit() == u16::from(b'm') || c.unit() == u16::from(b'M');
        let branch = (0..label.len()).any(|p| {
            in_set(label[p], b"jJ") && p + 1 < label.len() && !m(label[p + 1]) && {
                colon_then(label, p + 2, b"wrip")
            }
        });
        if branch {
            kinds |= BRANCH;
        }
        let jump = (0..label.len()).any(|p| {
            (starts_nocase(label, p, b"jm") && colon_then(label, p + 2, b"wrip"))
                || (starts_nocase(label, p, b"call") && colon_then(label, p + 4, b"wrip"))
                || (starts_nocase(label, p, b"ret") && colon_then(label, p + 3, b"wrip"))
        });
        if jump {
            kinds |= JUMP;
        }
    }
    if any_colon_then(label, b"st") {
        kinds |= STORE;
    }
    kinds
}

/// Konata's detection of an x86-gem5 trace (`X86Gem5Stats.update`): a label with two
/// general registers (`/[eErR][aAbBcCdD][xX][^,]*,[^,]*[eErR][aAbBcCdD][xX]/`) or two vector
/// registers (`/[xXyY][mM][mM][^,]*,[^,]*[xXyY][mM][mM]/`) around a comma.
pub(crate) fn x86_detects<T: Unit>(label: &[T]) -> bool {
    pair_across_comma(label, x86_register) || pair_across_comma(label, x86_vector)
}

/// The label as Konata matches it: Konata unescapes `\n` in labels when the instruction
/// ends, and JavaScript strings are UTF-16.
pub(crate) fn konata_text(label: &str) -> Vec<u16> {
    label.replace("\\n", "\n").encode_utf16().collect()
}

/// Which of Konata's classifiers still reads labels: both, while the trace's first ops
/// have not decided whether it is an x86-gem5 trace, then the one chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Classifier {
    /// Not decided yet: both classify, and the detection is matched.
    Undecided,
    /// The generic classifier (`GenericStats`).
    Generic,
    /// The x86-gem5 classifier (`X86_Gem5_Stats`).
    X86Gem5,
}

/// Konata's three answers for a label: its generic kinds, its x86-gem5 kinds and whether it
/// detects an x86-gem5 trace; what `classifier` does not need is not matched (0, false).
/// An ASCII label without `\n` is matched as it is (its bytes are its UTF-16 units); any
/// other is converted first.
pub(crate) fn konata_kinds(label: &str, classifier: Classifier) -> (u8, u8, bool) {
    fn kinds<T: Unit>(text: &[T], classifier: Classifier) -> (u8, u8, bool) {
        (
            match classifier {
                Classifier::X86Gem5 => 0,
                _ => generic_kinds(text),
            },
            match classifier {
                Classifier::Generic => 0,
                _ => x86_kinds(text),
            },
            classifier == Classifier::Undecided && x86_detects(text),
        )
    }
    if label.is_ascii() && memchr::memmem::find(label.as_bytes(), b"\\n").is_none() {
        kinds(label.as_bytes(), classifier)
    } else {
        kinds(&konata_text(label), classifier)
    }
}

/// The counters of one of Konata's classifiers, and its flush-attribution state
/// (`GenericStats.update`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Machine {
    pub(crate) num_flush: u64,
    pub(crate) num_flushed_ops: u64,
    pub(crate) num_br_flushed_ops: u64,
    pub(crate) num_jump_flushed_ops: u64,
    pub(crate) num_mem_flushed_ops: u64,
    pub(crate) num_fetched_br: u64,
    pub(crate) num_retired_br: u64,
    pub(crate) num_br_miss: u64,
    pub(crate) num_fetched_jump: u64,
    pub(crate) num_retired_jump: u64,
    pub(crate) num_jump_miss: u64,
    pub(crate) num_fetched_store: u64,
    pub(crate) num_retired_store: u64,
    pub(crate) num_mem_miss: u64,
    prev: u8,
    prev_flushed: bool,
    in_flush: u8,
}

impl Machine {
    /// One op, in op-id order: `flushed` (`R` type 1), `retired` (an `R` of another type),
    /// and its kind bits. Returns true when the op starts a run of flushes (Konata's
    /// `numFlush`).
    pub(crate) fn update(&mut self, flushed: bool, retired: bool, kinds: u8) -> bool {
        let mut starts = false;
        if flushed {
            if !self.prev_flushed {
                starts = true;
                self.num_flush += 1;
                if self.prev & BRANCH != 0 {
                    self.in_flush |= BRANCH;
                    self.num_br_miss += 1;
                }
                if self.prev & JUMP != 0 {
                    self.in_flush |= JUMP;
                    self.num_jump_miss += 1;
                }
                if self.prev & STORE != 0 {
                    self.in_flush |= STORE;
                    self.num_mem_miss += 1;
                }
            }
            self.num_flushed_ops += 1;
            if self.in_flush & BRANCH != 0 {
                self.num_br_flushed_ops += 1;
            } else if self.in_flush & JUMP != 0 {
                self.num_jump_flushed_ops += 1;
            } else if self.in_flush & STORE != 0 {
                self.num_mem_flushed_ops += 1;
            }
        } else {
            self.in_flush = 0;
        }
        self.prev_flushed = flushed;
        self.prev = kinds;
        if kinds & BRANCH != 0 {
            self.num_fetched_br += 1;
            self.num_retired_br += u64::from(retired);
        }
        if kinds & JUMP != 0 {
            self.num_fetched_jump += 1;
            self.num_retired_jump += u64::from(retired);
        }
        if kinds & STORE != 0 {
            self.num_fetched_store += 1;
            self.num_retired_store += u64::from(retired);
        }
        starts
    }

    /// Adds the counters of `other` (another thread's) to these.
    pub(crate) fn add(&mut self, other: &Machine) {
        self.num_flush += other.num_flush;
        self.num_flushed_ops += other.num_flushed_ops;
        self.num_br_flushed_ops += other.num_br_flushed_ops;
        self.num_jump_flushed_ops += other.num_jump_flushed_ops;
        self.num_mem_flushed_ops += other.num_mem_flushed_ops;
        self.num_fetched_br += other.num_fetched_br;
        self.num_retired_br += other.num_retired_br;
        self.num_br_miss += other.num_br_miss;
        self.num_fetched_jump += other.num_fetched_jump;
        self.num_retired_jump += other.num_retired_jump;
        self.num_jump_miss += other.num_jump_miss;
        self.num_fetched_store += other.num_fetched_store;
        self.num_retired_store += other.num_retired_store;
        self.num_mem_miss += other.num_mem_miss;
    }

    /// The values, with the three base values and the classifier's name given
    /// (`GenericStats.finish`): rates over retired instructions of the kind, MPKI over
    /// `committed`.
    pub(crate) fn values(
        &self,
        classifier: &'static str,
        fetched: f64,
        committed: f64,
        cycles: f64,
        ipc: f64,
    ) -> StatsValues {
        let n = |v: u64| v as f64;
        StatsValues {
            classifier,
            num_fetched_ops: fetched,
            num_committed_ops: committed,
            num_cycles: cycles,
            num_flush: n(self.num_flush),
            num_flushed_ops: n(self.num_flushed_ops),
            num_br_flushed_ops: n(self.num_br_flushed_ops),
            num_jump_flushed_ops: n(self.num_jump_flushed_ops),
            num_speculative_mem_flushed_ops: n(self.num_mem_flushed_ops),
            num_fetched_br: n(self.num_fetched_br),
            num_retired_br: n(self.num_retired_br),
            num_br_pred_miss: n(self.num_br_miss),
            rate_br_pred_miss: n(self.num_br_miss) / n(self.num_retired_br),
            mpki_br_pred: n(self.num_br_miss) / committed * 1000.0,
            num_fetched_jump: n(self.num_fetched_jump),
            num_retired_jump: n(self.num_retired_jump),
            num_jump_pred_miss: n(self.num_jump_miss),
            rate_jump_pred_miss: n(self.num_jump_miss) / n(self.num_retired_jump),
            mpki_jump_pred: n(self.num_jump_miss) / committed * 1000.0,
            num_fetched_store: n(self.num_fetched_store),
            num_retired_store: n(self.num_retired_store),
            num_speculative_mem_miss: n(self.num_mem_miss),
            rate_speculative_mem_miss: n(self.num_mem_miss) / n(self.num_retired_store),
            mpki_speculative_mem_miss: n(self.num_mem_miss) / committed * 1000.0,
            ipc,
        }
    }
}

/// The values of Konata's statistics dialog (its `StatsValues`), under their names in
/// Konata, in Konata's order, after the name of the classifier.
///
/// Every value is a number, as in Konata; the ones that divide by zero are NaN or infinite
/// (`null` in the JSON form). In the `"konata"` object they are Konata's values exactly
/// (see the [module documentation](self)); in the `"classified"` object the same fields
/// hold this project's counts ([`Classified`](super::Analysis::classified)).
///
/// Two sets of values are equal when every value is the same number, NaN included (a NaN
/// is a value of Konata's like any other: the same trace gives the same NaN).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct StatsValues {
    /// The classifier whose numbers these are: `"X86_Gem5_Stats"` or `"GenericStats"` for
    /// Konata's, `"mnemonic"` for this project's.
    pub classifier: &'static str,
    /// Konata: the largest op id (`lastID`); classified: the instructions.
    pub num_fetched_ops: f64,
    /// Konata: the largest retire id of a retired instruction (`lastRID`); classified: the
    /// retired instructions.
    pub num_committed_ops: f64,
    /// The cycles from the start of the file to its last cycle.
    pub num_cycles: f64,
    /// Runs of flushed instructions (a flushed instruction after one that is not).
    pub num_flush: f64,
    /// Flushed instructions.
    pub num_flushed_ops: f64,
    /// Flushed instructions in runs that follow a branch.
    pub num_br_flushed_ops: f64,
    /// Flushed instructions in runs that follow a jump (and no branch).
    pub num_jump_flushed_ops: f64,
    /// Flushed instructions in runs that follow a store (and no branch or jump).
    pub num_speculative_mem_flushed_ops: f64,
    /// Branches.
    pub num_fetched_br: f64,
    /// Branches that retired.
    pub num_retired_br: f64,
    /// Runs of flushes that follow a branch (mispredictions).
    pub num_br_pred_miss: f64,
    /// `numBrPredMiss / numRetiredBr`.
    pub rate_br_pred_miss: f64,
    /// `numBrPredMiss / numCommittedOps * 1000`.
    pub mpki_br_pred: f64,
    /// Jumps, calls and returns.
    pub num_fetched_jump: f64,
    /// Of those, retired.
    pub num_retired_jump: f64,
    /// Runs of flushes that follow a jump.
    pub num_jump_pred_miss: f64,
    /// `numJumpPredMiss / numRetiredJump`.
    pub rate_jump_pred_miss: f64,
    /// `numJumpPredMiss / numCommittedOps * 1000`.
    pub mpki_jump_pred: f64,
    /// Stores.
    pub num_fetched_store: f64,
    /// Stores that retired.
    pub num_retired_store: f64,
    /// Runs of flushes that follow a store (memory-order violations).
    pub num_speculative_mem_miss: f64,
    /// `numSpeculativeMemMiss / numRetiredStore`.
    pub rate_speculative_mem_miss: f64,
    /// `numSpeculativeMemMiss / numCommittedOps * 1000`.
    pub mpki_speculative_mem_miss: f64,
    /// Konata: `lastRID / lastCycle`; classified: retired instructions per cycle.
    pub ipc: f64,
}

impl PartialEq for StatsValues {
    fn eq(&self, other: &StatsValues) -> bool {
        self.classifier == other.classifier
            && self
                .fields()
                .iter()
                .zip(other.fields())
                .all(|((_, a), (_, b))| a.to_bits() == b.to_bits())
    }
}

impl StatsValues {
    /// The values as (Konata's name, value) in Konata's order, the classifier left out.
    pub fn fields(&self) -> [(&'static str, f64); 24] {
        [
            ("numFetchedOps", self.num_fetched_ops),
            ("numCommittedOps", self.num_committed_ops),
            ("numCycles", self.num_cycles),
            ("numFlush", self.num_flush),
            ("numFlushedOps", self.num_flushed_ops),
            ("numBrFlushedOps", self.num_br_flushed_ops),
            ("numJumpFlushedOps", self.num_jump_flushed_ops),
            (
                "numSpeculativeMemFlushedOps",
                self.num_speculative_mem_flushed_ops,
            ),
            ("numFetchedBr", self.num_fetched_br),
            ("numRetiredBr", self.num_retired_br),
            ("numBrPredMiss", self.num_br_pred_miss),
            ("rateBrPredMiss", self.rate_br_pred_miss),
            ("mpkiBrPred", self.mpki_br_pred),
            ("numFetchedJump", self.num_fetched_jump),
            ("numRetiredJump", self.num_retired_jump),
            ("numJumpPredMiss", self.num_jump_pred_miss),
            ("rateJumpPredMiss", self.rate_jump_pred_miss),
            ("mpkiJumpPred", self.mpki_jump_pred),
            ("numFetchedStore", self.num_fetched_store),
            ("numRetiredStore", self.num_retired_store),
            ("numSpeculativeMemMiss", self.num_speculative_mem_miss),
            ("rateSpeculativeMemMiss", self.rate_speculative_mem_miss),
            ("mpkiSpeculativeMemMiss", self.mpki_speculative_mem_miss),
            ("ipc", self.ipc),
        ]
    }
}

/// A number as JavaScript's `String(value)` writes the common cases: `NaN`, `Infinity`,
/// `-Infinity`, integers without a fraction, others as Rust writes them.
pub(crate) fn js_number(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
    } else {
        format!("{value}")
    }
}

/// The matchers as they were first written, over UTF-16 only and pattern by pattern: the
/// reference the faster ones are checked against.
#[cfg(test)]
mod reference {
    #![allow(clippy::all)]
    use super::{BRANCH, JUMP, STORE};

    /// Whether `c` is in JavaScript's `\s`.
    fn js_space(c: u16) -> bool {
        matches!(
            c,
            0x09..=0x0d
                | 0x20
                | 0xa0
                | 0x1680
                | 0x2000..=0x200a
                | 0x2028
                | 0x2029
                | 0x202f
                | 0x205f
                | 0x3000
                | 0xfeff
        )
    }

    /// Whether `text` contains `needle` (ASCII, exact case).
    fn contains(text: &[u16], needle: &[u8]) -> bool {
        text.windows(needle.len())
            .any(|w| w.iter().zip(needle).all(|(&a, &b)| a == u16::from(b)))
    }

    /// Whether `text` contains white space immediately followed by `next` (ASCII, exact case).
    fn space_then(text: &[u16], next: &[u8]) -> bool {
        (0..text.len()).any(|i| {
            js_space(text[i])
                && text.len() > i + next.len()
                && text[i + 1..=i + next.len()]
                    .iter()
                    .zip(next)
                    .all(|(&a, &b)| a == u16::from(b))
        })
    }

    /// Whether `text[at..]` starts with `word`, ASCII letters compared without case.
    fn starts_nocase(text: &[u16], at: usize, word: &[u8]) -> bool {
        text.len() >= at + word.len()
            && text[at..at + word.len()]
                .iter()
                .zip(word)
                .all(|(&a, &b)| u8::try_from(a).is_ok_and(|a| a.eq_ignore_ascii_case(&b)))
    }

    /// `[^:]+:\s*WORD` matched from `from`: at least one code unit that is not `:`, the first `:`
    /// after them, white space, then `word` (exact case).
    fn colon_then(text: &[u16], from: usize, word: &[u8]) -> bool {
        let colon = u16::from(b':');
        let Some(offset) = text
            .get(from..)
            .and_then(|rest| rest.iter().position(|&c| c == colon))
        else {
            return false;
        };
        if offset == 0 {
            return false;
        }
        let mut at = from + offset + 1;
        while at < text.len() && js_space(text[at]) {
            at += 1;
        }
        text.len() >= at + word.len()
            && text[at..at + word.len()]
                .iter()
                .zip(word)
                .all(|(&a, &b)| a == u16::from(b))
    }

    /// `A[^,]*,[^,]*A` for a three-unit pattern `A` that `at(text, i)` matches at `i`.
    fn pair_across_comma(text: &[u16], at: impl Fn(&[u16], usize) -> bool) -> bool {
        let comma = u16::from(b',');
        for i in 0..text.len() {
            if !at(text, i) {
                continue;
            }
            let Some(offset) = text[i + 3..].iter().position(|&c| c == comma) else {
                // No comma after this match: none after a later one either.
                return false;
            };
            let start = i + 3 + offset + 1;
            let end = text[start..]
                .iter()
                .position(|&c| c == comma)
                .map_or(text.len(), |o| start + o);
            if (start..end.saturating_sub(2)).any(|j| at(text, j)) {
                return true;
            }
        }
        false
    }

    fn in_set(c: u16, set: &[u8]) -> bool {
        set.iter().any(|&s| u16::from(s) == c)
    }

    /// `[eErR][aAbBcCdD][xX]` at `i`.
    fn x86_register(text: &[u16], i: usize) -> bool {
        text.len() >= i + 3
            && in_set(text[i], b"eErR")
            && in_set(text[i + 1], b"aAbBcCdD")
            && in_set(text[i + 2], b"xX")
    }

    /// `[xXyY][mM][mM]` at `i`.
    fn x86_vector(text: &[u16], i: usize) -> bool {
        text.len() >= i + 3
            && in_set(text[i], b"xXyY")
            && in_set(text[i + 1], b"mM")
            && in_set(text[i + 2], b"mM")
    }

    /// Konata's generic classifier (`GenericStats.isBranch_`, `isJump_`, `isStore_`): the kind
    /// bits of a label.
    ///
    /// - branch: `/[\s][b][^\s]*[\s]*/`, white space then `b`;
    /// - jump: `/[\s]([j])|(call)|(ret)[^\s]*[\s]*/`, white space then `j`, or `call` or `ret`
    ///   anywhere (the alternation binds loosest);
    /// - store: `/[\s](st)|(sw)|(sh)|(sb)[^\s]*[\s]*/`, white space then `st`, or `sw`, `sh` or
    ///   `sb` anywhere.
    pub(super) fn generic_kinds(label: &[u16]) -> u8 {
        let mut kinds = 0;
        if space_then(label, b"b") {
            kinds |= BRANCH;
        }
        if space_then(label, b"j") || contains(label, b"call") || contains(label, b"ret") {
            kinds |= JUMP;
        }
        if space_then(label, b"st")
            || contains(label, b"sw")
            || contains(label, b"sh")
            || contains(label, b"sb")
        {
            kinds |= STORE;
        }
        kinds
    }

    /// Konata's x86-gem5 classifier (`X86Gem5Stats.isBranch_`, `isJump_`, `isStore_`).
    ///
    /// - branch: `/[\s]*[jJ][^mM][^:]+:\s*wrip/`;
    /// - jump: `/([\s]*([jJ][mM])|([cC][aA][lL][lL])|([rR][eE][tT]))[^:]+:\s*wrip/`;
    /// - store: `/[\s]*[^:]+:\s*st/`.
    pub(super) fn x86_kinds(label: &[u16]) -> u8 {
        let mut kinds = 0;
        let m = |c: u16| c == u16::from(b'm') || c == u16::from(b'M');
        let branch = (0..label.len()).any(|p| {
            in_set(label[p], b"jJ") && p + 1 < label.len() && !m(label[p + 1]) && {
                colon_then(label, p + 2, b"wrip")
            }
        });
        if branch {
            kinds |= BRANCH;
        }
        let jump = (0..label.len()).any(|p| {
            (starts_nocase(label, p, b"jm") && colon_then(label, p + 2, b"wrip"))
                || (starts_nocase(label, p, b"call") && colon_then(label, p + 4, b"wrip"))
                || (starts_nocase(label, p, b"ret") && colon_then(label, p + 3, b"wrip"))
        });
        if jump {
            kinds |= JUMP;
        }
        if (0..label.len()).any(|p| colon_then(label, p, b"st")) {
            kinds |= STORE;
        }
        kinds
    }

    /// Konata's detection of an x86-gem5 trace (`X86Gem5Stats.update`): a label with two
    /// general registers (`/[eErR][aAbBcCdD][xX][^,]*,[^,]*[eErR][aAbBcCdD][xX]/`) or two vector
    /// registers (`/[xXyY][mM][mM][^,]*,[^,]*[xXyY][mM][mM]/`) around a comma.
    pub(super) fn x86_detects(label: &[u16]) -> bool {
        pair_across_comma(label, x86_register) || pair_across_comma(label, x86_vector)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(label: &str) -> (u8, u8, bool) {
        let text = konata_text(label);
        (generic_kinds(&text), x86_kinds(&text), x86_detects(&text))
    }

    /// Konata's own unit test of `GenericStats` (`test/stats.test.ts`), mirrored.
    #[test]
    fn konata_generic_test() {
        let mut m = Machine::default();
        let ops = [
            (" bne x1, x2 ", false),
            (" add x3, x4 ", true),
            (" add x5, x6 ", true),
            (" sw x1, 0(x2) ", false),
            (" add x7, x8 ", true),
        ];
        for (label, flushed) in ops {
            m.update(flushed, !flushed, generic_kinds(&konata_text(label)));
        }
        let v = m.values(GENERIC, 4.0, 2.0, 10.0, 0.2);
        assert_eq!(
            (v.num_fetched_ops, v.num_committed_ops, v.num_cycles),
            (4.0, 2.0, 10.0)
        );
        assert_eq!((v.num_flush, v.num_flushed_ops), (2.0, 3.0));
        assert_eq!((v.num_br_pred_miss, v.num_br_flushed_ops), (1.0, 2.0));
        assert_eq!(
            (
                v.num_speculative_mem_miss,
                v.num_speculative_mem_flushed_ops
            ),
            (1.0, 1.0)
        );
        assert_eq!(
            (v.rate_br_pred_miss, v.mpki_br_pred, v.ipc),
            (1.0, 500.0, 0.2)
        );
        assert!(v.rate_jump_pred_miss.is_nan());
    }

    /// Konata's own unit test of `X86Gem5Stats`, mirrored.
    #[test]
    fn konata_x86_test() {
        assert!(kinds("mov eax, ebx").2);
        assert_eq!(kinds("je target: wrip").1, BRANCH);
        assert_eq!(kinds("jmp target: wrip").1, JUMP);
        assert_eq!(kinds("store: st").1, STORE);
        assert!(!kinds("je target: wrip").2);
    }

    #[test]
    fn generic_patterns_as_javascript_reads_them() {
        // White space then `b`: a branch, wherever it is.
        assert_eq!(kinds("0x80000010: beq a0, a1, 8").0, BRANCH);
        assert_eq!(kinds("0x80000010: bgeu a0, a1, 8").0, BRANCH);
        assert_eq!(kinds("beq a0, a1, 8").0, 0, "no white space before the b");
        assert_eq!(kinds("0x1000: jal ra, begin").0, BRANCH | JUMP, "`, begin`");
        // `call` and `ret` anywhere, `j` after white space.
        assert_eq!(kinds("0x10: ecall").0, JUMP);
        assert_eq!(kinds("0x10: mret").0, JUMP);
        assert_eq!(kinds("0x10: jalr x0, 0(ra)").0, JUMP);
        // Stores: white space then `st`, or `sw`/`sh`/`sb` anywhere; not `sd`.
        assert_eq!(kinds("0x10: sd a0, 8(sp)").0, 0);
        assert_eq!(kinds("0x10: fsw f0, 0(a0)").0, STORE);
        assert_eq!(kinds("0x10: srai a0, a0, 3").0, 0);
        assert_eq!(kinds("0x10: sha256sum0 a0, a1").0, STORE);
        // `\s` is JavaScript's: a no-break space counts, and `\n` after unescaping.
        assert_eq!(kinds("x\u{a0}beq").0, BRANCH);
        assert_eq!(kinds("x\\nbeq").0, BRANCH);
        assert_eq!(
            kinds("x\u{85}beq").0,
            0,
            "U+0085 is not white space in JavaScript"
        );
    }

    #[test]
    fn x86_patterns() {
        // `[jJ][^mM][^:]+:` needs a unit between the second letter and the colon.
        assert_eq!(kinds("jn: wrip").1 & BRANCH, 0);
        assert_eq!(kinds("jne: wrip").1 & BRANCH, BRANCH);
        assert_eq!(kinds("jm x: wrip").1 & BRANCH, 0, "`[^mM]`");
        assert_eq!(kinds("JNZ_I : wrip t1, t2").1, BRANCH);
        assert_eq!(kinds("CALL_NEAR_I : wrip , t7, t1").1, JUMP);
        assert_eq!(kinds("RET_NEAR : wrip , t1, t2").1, JUMP);
        assert_eq!(kinds("MOV_M_R : st rax, DS:[rsp]").1, STORE);
        assert_eq!(kinds(": st").1, 0, "no unit before the colon");
        assert_eq!(kinds("a:: st").1, 0, "a colon right before the second one");
        assert_eq!(kinds("a: b: st").1, STORE);
        assert!(kinds("ADD_R_R : add rax, rax, rbx").2);
        assert!(kinds("MOVAPS xmm0, xmm1").2);
        assert!(!kinds("mov eax, 1, ebx").2, "a second comma in between");
        assert!(kinds("mov eax, ebx, 1").2);
        assert!(!kinds("add x1, x2").2);
    }

    #[test]
    fn numbers_as_konata_prints_them() {
        assert_eq!(js_number(f64::NAN), "NaN");
        assert_eq!(js_number(1.0 / 0.0), "Infinity");
        assert_eq!(js_number(-1.0 / 0.0), "-Infinity");
        assert_eq!(js_number(4.0), "4");
        assert_eq!(js_number(0.25), "0.25");
    }

    /// A small deterministic generator of labels made of the pieces the patterns look for.
    fn labels(n: usize) -> Vec<String> {
        const PIECES: &[&str] = &[
            " ", "  ", "\t", "\u{a0}", "\u{2003}", "\u{85}", ":", "::", ",", "j", "J", "m", "M",
            "jm", "JM", "call", "CALL", "ret", "RET", "wrip", "st", "sw", "sh", "sb", "b", "beq",
            "eax", "RBX", "xmm0", "YMM1", "\\n", "\\", "n", "0x10", "a", "é", "日本", "_I",
            "DS:[rsp]",
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        (0..n)
            .map(|_| {
                let len = (next() % 12) as usize;
                (0..len)
                    .map(|_| PIECES[(next() % PIECES.len() as u64) as usize])
                    .collect()
            })
            .collect()
    }

    /// The one-pass matchers and the ASCII fast path answer as the reference does.
    #[test]
    fn matchers_agree_with_the_reference() {
        let mut labels = labels(200_000);
        labels.extend(
            [
                "jne: wrip",
                "jn: wrip",
                "a:: st",
                "a: b: st",
                ": st",
                "x\\nbeq",
                "mov eax, ebx",
                "0x400078.0 : JNZ_I : wrip t1, t2",
                "0x80000010: beq a0, a1, 8",
            ]
            .map(str::to_owned),
        );
        for label in &labels {
            let text = konata_text(label);
            let want = (
                reference::generic_kinds(&text),
                reference::x86_kinds(&text),
                reference::x86_detects(&text),
            );
            assert_eq!(
                konata_kinds(label, Classifier::Undecided),
                want,
                "{label:?}"
            );
            assert_eq!(
                konata_kinds(label, Classifier::Generic),
                (want.0, 0, false),
                "{label:?}"
            );
            assert_eq!(
                konata_kinds(label, Classifier::X86Gem5),
                (0, want.1, false),
                "{label:?}"
            );
            assert_eq!(
                (generic_kinds(&text), x86_kinds(&text), x86_detects(&text)),
                want,
                "{label:?}"
            );
        }
    }
}
