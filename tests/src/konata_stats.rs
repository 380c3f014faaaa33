//! Konata's statistics dialog over the [`konata_model`](crate::konata_model): the reference
//! that `kanata-pp --stats` (its `"konata"` object) is tested against.
//!
//! Ground truth is Konata's source, read for this reference: `src/core/stats.ts`
//! (`GenericStats`, `X86Gem5Stats`, `createStats`: the x86-gem5 classifier first, then the
//! generic one) and Konata 1.1's `stats.js`, with Konata's test `test/stats.test.ts` for the
//! driver (`calculateStats`): the ops are scanned by op id from 0 to `lastID` exclusive,
//! missing ids are skipped, and the x86-gem5 candidate is given up when no op up to id
//! 1,000 matched its detection patterns.
//!
//! Unlike kanata-pp's port (hand-written matchers over UTF-16), this reference runs Konata's
//! regular expressions verbatim with the `regex` crate, `\s` replaced by JavaScript's set of
//! white space, over the model's labels; the two agree on every text without characters
//! outside the Basic Multilingual Plane.

use regex::Regex;

use crate::konata_model::{Insn, RetireKind, View};

/// The op id up to which the x86-gem5 classifier must have detected its trace.
pub const X86_DETECT_LAST_ID: i64 = 1000;

/// JavaScript's `\s`.
const JS_SPACE: &str = r"[\t\n\x0B\x0C\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}]";

fn js(pattern: &str) -> Regex {
    let pattern = pattern.replace("[\\s]", JS_SPACE).replace("\\s", JS_SPACE);
    Regex::new(&pattern).expect("Konata's pattern")
}

/// One of Konata's classifiers: its name, its patterns and its state.
struct Classifier {
    name: &'static str,
    branch: Regex,
    jump: Regex,
    store: Regex,
    detect: Vec<Regex>,
    detected: bool,
    v: Counters,
    prev_br: bool,
    prev_jump: bool,
    prev_store: bool,
    prev_flushed: bool,
    in_br: bool,
    in_jump: bool,
    in_mem: bool,
}

#[derive(Default)]
struct Counters {
    num_flush: f64,
    num_flushed_ops: f64,
    num_br_flushed_ops: f64,
    num_jump_flushed_ops: f64,
    num_mem_flushed_ops: f64,
    num_fetched_br: f64,
    num_retired_br: f64,
    num_br_miss: f64,
    num_fetched_jump: f64,
    num_retired_jump: f64,
    num_jump_miss: f64,
    num_fetched_store: f64,
    num_retired_store: f64,
    num_mem_miss: f64,
}

impl Classifier {
    fn generic() -> Classifier {
        Classifier::with(
            "GenericStats",
            [
                r"[\s][b][^\s]*[\s]*",
                r"[\s]([j])|(call)|(ret)[^\s]*[\s]*",
                r"[\s](st)|(sw)|(sh)|(sb)[^\s]*[\s]*",
            ],
            &[],
        )
    }

    fn x86_gem5() -> Classifier {
        Classifier::with(
            "X86_Gem5_Stats",
            [
                r"[\s]*[jJ][^mM][^:]+:\s*wrip",
                r"([\s]*([jJ][mM])|([cC][aA][lL][lL])|([rR][eE][tT]))[^:]+:\s*wrip",
                r"[\s]*[^:]+:\s*st",
            ],
            &[
                r"[eErR][aAbBcCdD][xX][^,]*,[^,]*[eErR][aAbBcCdD][xX]",
                r"[xXyY][mM][mM][^,]*,[^,]*[xXyY][mM][mM]",
            ],
        )
    }

    fn with(name: &'static str, kinds: [&str; 3], detect: &[&str]) -> Classifier {
        Classifier {
            name,
            branch: js(kinds[0]),
            jump: js(kinds[1]),
            store: js(kinds[2]),
            detected: detect.is_empty(),
            detect: detect.iter().map(|p| js(p)).collect(),
            v: Counters::default(),
            prev_br: false,
            prev_jump: false,
            prev_store: false,
            prev_flushed: false,
            in_br: false,
            in_jump: false,
            in_mem: false,
        }
    }

    /// `GenericStats.update` (and `X86Gem5Stats.update`'s detection after it).
    fn update(&mut self, op: &Insn) {
        let flush = op.retired.is_some_and(|r| r.kind == RetireKind::Flushed);
        let retired = op.retired.is_some_and(|r| r.kind == RetireKind::Retired);
        let label = op.label_name.as_str();
        let s = &mut self.v;
        if flush {
            if !self.prev_flushed {
                s.num_flush += 1.0;
                if self.prev_br {
                    self.in_br = true;
                    s.num_br_miss += 1.0;
                }
                if self.prev_jump {
                    self.in_jump = true;
                    s.num_jump_miss += 1.0;
                }
                if self.prev_store {
                    self.in_mem = true;
                    s.num_mem_miss += 1.0;
                }
            }
            s.num_flushed_ops += 1.0;
            if self.in_br {
                s.num_br_flushed_ops += 1.0;
            } else if self.in_jump {
                s.num_jump_flushed_ops += 1.0;
            } else if self.in_mem {
                s.num_mem_flushed_ops += 1.0;
            }
        } else {
            self.in_br = false;
            self.in_jump = false;
            self.in_mem = false;
        }
        self.prev_flushed = flush;
        self.prev_br = self.branch.is_match(label);
        if self.prev_br {
            s.num_fetched_br += 1.0;
            if retired {
                s.num_retired_br += 1.0;
            }
        }
        self.prev_jump = self.jump.is_match(label);
        if self.prev_jump {
            s.num_fetched_jump += 1.0;
            if retired {
                s.num_retired_jump += 1.0;
            }
        }
        self.prev_store = self.store.is_match(label);
        if self.prev_store {
            s.num_fetched_store += 1.0;
            if retired {
                s.num_retired_store += 1.0;
            }
        }
        if !self.detected && self.detect.iter().any(|d| d.is_match(label)) {
            self.detected = true;
        }
    }
}

/// Konata's statistics of the trace `view` describes: the accepted classifier's name and
/// the values of `StatsValues`, by Konata's names, in Konata's order.
pub fn konata_stats(view: &View) -> (&'static str, Vec<(&'static str, f64)>) {
    let last_id = view.last_id as f64;
    let last_rid = view.last_rid as f64;
    let last_cycle = view.last_cycle as f64;
    for mut c in [Classifier::x86_gem5(), Classifier::generic()] {
        let mut gave_up = false;
        for id in 0..view.last_id.max(0) {
            let Some(op) = view.insn(id) else { continue };
            c.update(op);
            if !c.detected && id >= X86_DETECT_LAST_ID {
                gave_up = true;
                break;
            }
        }
        if gave_up || !c.detected {
            continue;
        }
        let s = &c.v;
        return (
            c.name,
            vec![
                ("numFetchedOps", last_id),
                ("numCommittedOps", last_rid),
                ("numCycles", last_cycle),
                ("numFlush", s.num_flush),
                ("numFlushedOps", s.num_flushed_ops),
                ("numBrFlushedOps", s.num_br_flushed_ops),
                ("numJumpFlushedOps", s.num_jump_flushed_ops),
                ("numSpeculativeMemFlushedOps", s.num_mem_flushed_ops),
                ("numFetchedBr", s.num_fetched_br),
                ("numRetiredBr", s.num_retired_br),
                ("numBrPredMiss", s.num_br_miss),
                ("rateBrPredMiss", s.num_br_miss / s.num_retired_br),
                ("mpkiBrPred", s.num_br_miss / last_rid * 1000.0),
                ("numFetchedJump", s.num_fetched_jump),
                ("numRetiredJump", s.num_retired_jump),
                ("numJumpPredMiss", s.num_jump_miss),
                ("rateJumpPredMiss", s.num_jump_miss / s.num_retired_jump),
                ("mpkiJumpPred", s.num_jump_miss / last_rid * 1000.0),
                ("numFetchedStore", s.num_fetched_store),
                ("numRetiredStore", s.num_retired_store),
                ("numSpeculativeMemMiss", s.num_mem_miss),
                (
                    "rateSpeculativeMemMiss",
                    s.num_mem_miss / s.num_retired_store,
                ),
                ("mpkiSpeculativeMemMiss", s.num_mem_miss / last_rid * 1000.0),
                ("ipc", last_rid / last_cycle),
            ],
        );
    }
    unreachable!("the generic classifier always accepts")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Konata's test "calculateStats preserves detector fallback and legacy ID bounds":
    /// the x86 candidate is given up after id 1,000, the last op is not scanned, the
    /// missing ids are skipped (the flush at 1,002 follows the branch at 0).
    #[test]
    fn konata_calculate_stats_test() {
        let text = "Kanata\t0004\nC=\t0\nI\t0\t0\t0\nL\t0\t0\t bne x1, x2 \n\
                    I\t1002\t1\t0\nL\t1002\t0\t add x3, x4 \nI\t1003\t2\t0\n\
                    L\t1003\t0\t bne skipped-last-op \nC\t10\nR\t0\t0\t0\nR\t1002\t0\t1\n\
                    R\t1003\t1\t0\n";
        let view = crate::konata_model::load(text.as_bytes());
        let (name, values) = konata_stats(&view);
        assert_eq!(name, "GenericStats");
        let get = |n: &str| values.iter().find(|(k, _)| *k == n).unwrap().1;
        assert_eq!(get("numFetchedBr"), 1.0);
        assert_eq!(get("numFlush"), 1.0);
        assert_eq!(get("numBrPredMiss"), 1.0);
        assert_eq!(get("numFetchedOps"), 1003.0);
    }
}
