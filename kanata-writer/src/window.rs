//! The region of interest: which instructions a long simulation traces.
//!
//! The window opens once its start conditions hold (enough instructions retired, the start
//! cycle reached) and closes once either end condition holds (enough traced retirements, the
//! end cycle reached). An instruction is traced when it *begins* while the window is open,
//! and then to the end of its life, even past the window's close: the output never holds
//! half an instruction. Instructions that began before the window opened are not traced at
//! all, so the first traced instructions appear with their whole history.

use std::ops::Range;

/// Which part of a run to trace. The default traces everything.
///
/// ```
/// use kanata_writer::Window;
/// // Skip the warm-up, then trace 10,000 retirements.
/// let roi = Window::default().skip_retired(1_000_000).retired_limit(10_000);
/// // Or trace what begins between two cycles.
/// let roi = Window::default().cycles(5_000..6_000);
/// # let _ = roi;
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    skip_retired: u64,
    retired_limit: Option<u64>,
    cycles: Option<Range<u64>>,
}

impl Window {
    /// Opens the window only after `n` instructions have retired (traced or not).
    pub fn skip_retired(mut self, n: u64) -> Window {
        self.skip_retired = n;
        self
    }

    /// Closes the window after `n` traced instructions have retired.
    pub fn retired_limit(mut self, n: u64) -> Window {
        self.retired_limit = Some(n);
        self
    }

    /// Traces only instructions that begin at a cycle in `range`.
    pub fn cycles(mut self, range: Range<u64>) -> Window {
        self.cycles = Some(range);
        self
    }
}

/// Where a run is with respect to its window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    Before,
    Open,
    /// Closed at the cycle given; traced instructions still live drain to their end.
    After {
        closed_at: i64,
    },
}

/// The window and the counts that move it.
#[derive(Debug)]
pub(crate) struct WindowState {
    window: Window,
    pub(crate) phase: Phase,
    /// Retirements seen while the window had not opened.
    retired_before: u64,
}

impl WindowState {
    pub(crate) fn new(window: Window) -> WindowState {
        WindowState {
            window,
            phase: Phase::Before,
            retired_before: 0,
        }
    }

    /// Whether the window would open (or has opened) at `cycle`.
    fn start_reached(&self, cycle: i64) -> bool {
        let cycle_reached = match &self.window.cycles {
            None => true,
            Some(range) => u64::try_from(cycle).is_ok_and(|c| c >= range.start),
        };
        self.retired_before >= self.window.skip_retired && cycle_reached
    }

    /// Moves the phase for the current cycle and traced retirements; returns true when the
    /// window has just opened.
    pub(crate) fn update(&mut self, cycle: i64, traced_retired: u64) -> bool {
        let mut opened = false;
        if self.phase == Phase::Before && self.start_reached(cycle) {
            self.phase = Phase::Open;
            opened = true;
        }
        if self.phase == Phase::Open {
            let cycle_end = self
                .window
                .cycles
                .as_ref()
                .is_some_and(|r| u64::try_from(cycle).is_ok_and(|c| c >= r.end));
            let retire_end = self
                .window
                .retired_limit
                .is_some_and(|n| traced_retired >= n);
            if cycle_end || retire_end {
                self.phase = Phase::After { closed_at: cycle };
            }
        }
        opened
    }

    /// Whether an end condition is set, so that the open window may still close.
    pub(crate) fn can_close(&self) -> bool {
        self.window.retired_limit.is_some() || self.window.cycles.is_some()
    }

    /// Counts a retirement of an instruction that is not traced.
    pub(crate) fn count_untraced_retirement(&mut self) {
        if self.phase == Phase::Before {
            self.retired_before += 1;
        }
    }
}
