//! Holding back the output from the `R`s of the last cycles so that a label written after
//! its instruction's retirement can still be placed before the `R`.
//!
//! Simulators such as RSD learn an instruction's disassembly only after it retired, and
//! write the label late; Konata applies such a label with a warning. With a hold-back of N
//! cycles the writer remembers where each `R` line of the last N cycles starts, and keeps
//! the lines from the oldest of them on in its buffer, so that a late label can be spliced
//! in right before its `R`. Nothing is ever spliced anywhere else, so everything before that
//! `R` is handed over: a cycle with no `R` (one instruction's 100 MB of labels) holds
//! nothing back. Late labels are rare, so the splice (a move of at most N cycles of text)
//! costs nothing that matters; the common path pays only for a mark per `R`.

use std::collections::VecDeque;

/// Where the lines of recent cycles and recent retirements start in the output stream.
#[derive(Debug)]
pub(crate) struct Holdback {
    /// How many cycles back a late label may still be placed.
    pub(crate) cycles: u64,
    /// Every `R` still in the buffer, oldest first.
    retire_marks: VecDeque<RetireMark>,
}

/// An `R` line still in the buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RetireMark {
    pub(crate) insn: u64,
    /// Stream position where the `R` line starts.
    pub(crate) pos: u64,
    pub(crate) cycle: i64,
    /// Whether the instruction had entered a stage (a stage note needs one).
    pub(crate) entered: bool,
}

impl Holdback {
    pub(crate) fn new(cycles: u64) -> Holdback {
        Holdback {
            cycles,
            retire_marks: VecDeque::new(),
        }
    }

    pub(crate) fn mark_retire(&mut self, mark: RetireMark) {
        self.retire_marks.push_back(mark);
    }

    /// The stream position before which no late label can go at `cycle` or later: the start
    /// of the oldest `R` at most the window's cycles old, else `end`, the stream position of
    /// the buffer's end.
    pub(crate) fn releasable(&self, cycle: i64, end: u64) -> u64 {
        let cutoff = cycle.saturating_sub_unsigned(self.cycles);
        self.retire_marks
            .iter()
            .find(|m| m.cycle >= cutoff)
            .map_or(end, |m| m.pos)
    }

    /// Forgets the marks of lines before stream position `pos`, which were handed over.
    pub(crate) fn released(&mut self, pos: u64) {
        while self.retire_marks.front().is_some_and(|m| m.pos < pos) {
            self.retire_marks.pop_front();
        }
    }

    /// The `R` of `insn` if it is still held back and at most the window's cycles before
    /// `cycle`.
    pub(crate) fn find_retire(&self, insn: u64, cycle: i64) -> Option<RetireMark> {
        let mark = *self.retire_marks.iter().rev().find(|m| m.insn == insn)?;
        let age = cycle.checked_sub(mark.cycle)?;
        (u64::try_from(age).ok()? <= self.cycles).then_some(mark)
    }

    /// Forgets the `R` marks too old for a late label at `cycle` or later, for a writer that
    /// never spills (and so never calls [`released`](Self::released)).
    pub(crate) fn forget_too_old(&mut self, cycle: i64) {
        let cutoff = cycle.saturating_sub_unsigned(self.cycles);
        while self.retire_marks.front().is_some_and(|m| m.cycle < cutoff) {
            self.retire_marks.pop_front();
        }
    }

    /// `len` bytes were inserted at stream position `pos`: every line from there on moved.
    pub(crate) fn inserted(&mut self, pos: u64, len: u64) {
        for mark in self.retire_marks.iter_mut().rev() {
            if mark.pos < pos {
                break;
            }
            mark.pos += len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    fn mark(insn: u64, pos: u64, cycle: i64) -> RetireMark {
        RetireMark {
            insn,
            pos,
            cycle,
            entered: true,
        }
    }

    #[test]
    fn only_the_rs_a_late_label_may_reach_are_held() {
        let mut holdback = Holdback::new(10);
        assert_eq!(holdback.releasable(5, 1000), 1000, "no R: nothing held");
        holdback.mark_retire(mark(0, 100, 1));
        holdback.mark_retire(mark(1, 300, 8));
        assert_eq!(holdback.releasable(5, 1000), 100);
        // At cycle 15 the R of cycle 1 is out of reach.
        assert_eq!(holdback.releasable(15, 1000), 300);
        assert_eq!(holdback.releasable(30, 1000), 1000);
    }

    /// A sink that counts what it was handed.
    struct Counted(Arc<Mutex<usize>>);

    impl Write for Counted {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            *self.0.lock().unwrap() += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_huge_label_in_one_cycle_is_not_held_back() {
        let handed = Arc::new(Mutex::new(0));
        let mut w = crate::WriterBuilder::new()
            .late_labels(64)
            .from_writer(Counted(Arc::clone(&handed)))
            .unwrap();
        let i = w.begin(0, 0).unwrap();
        let text = "x".repeat(1000);
        for _ in 0..10_000 {
            w.label(i, crate::LabelKind::Detail, &text).unwrap();
        }
        // 10 MB written in one cycle, no R: all but the last buffer is handed over.
        assert!(
            *handed.lock().unwrap() > 9_000_000,
            "{}",
            handed.lock().unwrap()
        );
        w.retire(i).unwrap();
        w.finish().unwrap();
    }
}
