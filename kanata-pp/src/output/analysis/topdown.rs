//! A top-down breakdown of the pipeline's slots at its allocation stage, after Konata's
//! newest analysis (`src/core/top_down_analysis.ts` with `stage_structure_detector.ts`),
//! streaming and in bounded memory (`docs/analysis.md`, "Top-down").
//!
//! Every cycle has `width` slots at the allocation stage. An instruction that enters the
//! stage takes a slot in the cycle it first enters it: *retiring* if it retires, *squashed*
//! if it is flushed. An empty slot is a *recovery bubble* in a cycle between the resolution
//! of a control-flow instruction whose younger instructions were flushed and the allocation
//! of the next correct instruction (at most the shortest such latency seen at least 10
//! times), *backend bound* in a cycle where an instruction waited to enter the allocation
//! stage longer than the usual latency of the stage before it, and *frontend bound*
//! otherwise.
//!
//! Konata runs over the whole trace twice (to find the stage structure, then to classify)
//! and holds a byte per slot, giving up beyond 4 Mi cycles. Here the structure is found from
//! the first [`WARMUP`] instructions (or given: `--alloc-stage`, `--alloc-width`), those are
//! held and then classified, and the rest is classified as it streams: a cycle is folded into
//! the totals as soon as no instruction still to come can touch it, so memory is the warm-up,
//! plus a few bytes per cycle spanned by the instructions in flight.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use super::classify::lower;

/// Instructions (in op-id order) from which the stage structure is found.
pub const WARMUP: usize = 16_384;

/// A recovery latency must be seen this many times to bound the bubbles (Konata's
/// `MIN_SUPPORTED_RECOVERY_SAMPLE_COUNT`).
const MIN_RECOVERY_SAMPLES: u64 = 10;

/// The most cycles held at once: a cycle further from the oldest one held makes the oldest
/// ones be added to the totals first (whatever later instructions would have said of them).
const MAX_CYCLES_HELD: u64 = 1 << 20;

/// Recovery windows held while no latency has been seen [`MIN_RECOVERY_SAMPLES`] times.
const MAX_DEFERRED: usize = 1024;

/// The allocation stage and width, when given rather than found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopDownOptions {
    /// The allocation stage, in lane 0 (`--alloc-stage`).
    pub alloc_stage: Option<String>,
    /// Slots per cycle (`--alloc-width`).
    pub alloc_width: Option<u32>,
    /// The instructions the structure is found from ([`WARMUP`] by default; at least 1).
    pub warmup: usize,
    /// Count the slots of the cycles from this one on (Konata's cycles; a window's start).
    pub from_cycle: Option<u64>,
    /// Count the slots of the cycles before this one (a window's end).
    pub to_cycle: Option<u64>,
    /// Count from the cycle the first instruction begins (the default), not from cycle 0 as
    /// Konata does: the cycles before it are idle, or, in a window, not the window's.
    pub from_first_insn: bool,
}

impl Default for TopDownOptions {
    fn default() -> TopDownOptions {
        TopDownOptions {
            alloc_stage: None,
            alloc_width: None,
            warmup: WARMUP,
            from_cycle: None,
            to_cycle: None,
            from_first_insn: true,
        }
    }
}

/// The breakdown of a trace's slots.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TopDown {
    /// The allocation stage (lane 0).
    pub allocation_stage: String,
    /// Slots per cycle.
    pub allocation_width: u32,
    /// Whether stage and width were found from the trace (false: given).
    pub detected: bool,
    /// The stage that most often follows the allocation stage (its completion, the start of
    /// the stage after it, is where a branch resolves), null when none does.
    pub execution_stage: Option<String>,
    /// The first cycle counted: the one the first instruction begins.
    pub from_cycle: u64,
    /// The cycle after the last one counted: the last cycle of the trace.
    pub to_cycle: u64,
    /// Cycles counted: `to_cycle − from_cycle`.
    pub cycles: u64,
    /// `cycles × allocation_width`.
    pub slots: u64,
    /// Slots of instructions that retired.
    pub retiring: u64,
    /// Slots of instructions that were flushed.
    pub squashed: u64,
    /// Empty slots after a misprediction resolved.
    pub recovery_bubbles: u64,
    /// Empty slots while an instruction waited to enter the allocation stage.
    pub backend_bound: u64,
    /// The other empty slots: nothing reached the allocation stage.
    pub frontend_bound: u64,
    /// Allocations that got no slot: every slot of their cycle was taken (a given width
    /// too small, or a wider cycle after the warm-up), or they are at the last cycle.
    pub overflow: u64,
    /// The bound on recovery bubbles in cycles (null: no latency seen 10 times in the
    /// warm-up, so no slot is a recovery bubble).
    pub min_recovery_cycles: Option<u64>,
    /// Flush runs after a control-flow instruction whose next correct instruction was
    /// allocated.
    pub recovery_windows: u64,
}

/// What the breakdown needs of one instruction, in op-id order.
#[derive(Clone, Debug)]
pub(crate) struct OpStages {
    pub(crate) thread: i64,
    pub(crate) flushed: bool,
    pub(crate) retired: bool,
    /// Konata's `isLikelyControlFlowLabel` of its label.
    pub(crate) control: bool,
    /// The cycle of its `I`.
    pub(crate) begin: u64,
    /// The cycle of its `R`.
    pub(crate) end: u64,
    /// Its lane-0 segments: (stage, start, end as Konata holds it: 0 while open).
    pub(crate) segments: Vec<(u32, u64, u64)>,
}

/// Konata's `isLikelyControlFlowLabel`: the mnemonic after the label's first colon. `label`
/// is the label as the trace writes it (Konata unescapes `\n` when the instruction ends).
pub(crate) fn likely_control_flow(label: &str) -> bool {
    let label = if memchr::memmem::find(label.as_bytes(), b"\\n").is_some() {
        Cow::Owned(label.replace("\\n", "\n"))
    } else {
        Cow::Borrowed(label)
    };
    let disassembly = match label.find(':') {
        Some(at) => &label[at + 1..],
        None => &label,
    }
    .trim();
    let word = disassembly.split_whitespace().next().unwrap_or("");
    // Read once per instruction: an ASCII mnemonic is lower-cased on the stack.
    let mut buf = [0; 32];
    let mnemonic = if word.is_ascii() {
        lower(word, &mut buf)
    } else {
        Cow::Owned(word.to_lowercase())
    };
    // The word split is Unicode-aware and slow: only a text that holds `wrip` at all (in
    // any ASCII case) can have it as a word.
    let has_wrip = disassembly
        .as_bytes()
        .windows(4)
        .any(|w| w.eq_ignore_ascii_case(b"wrip"))
        && disassembly
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|w| w.eq_ignore_ascii_case("wrip"));
    if has_wrip {
        return mnemonic.starts_with('j')
            || mnemonic.starts_with("call")
            || mnemonic.starts_with("ret");
    }
    let m = mnemonic
        .strip_prefix("c.")
        .or_else(|| mnemonic.strip_prefix("c_"))
        .unwrap_or(&mnemonic);
    let base = m.split_once('.').map_or(m, |(b, _)| b);
    matches!(m, "j" | "jr" | "jal" | "jalr" | "call" | "ret")
        || matches!(
            base,
            "b" | "bl"
                | "blr"
                | "br"
                | "bx"
                | "bal"
                | "beq"
                | "bne"
                | "beqz"
                | "bnez"
                | "blt"
                | "bge"
                | "bltu"
                | "bgeu"
                | "bgez"
                | "bltz"
                | "blez"
                | "bgtz"
                | "cbz"
                | "cbnz"
                | "tbz"
                | "tbnz"
        )
}

/// Konata's `StageStructureDetector`, over lane 0.
#[derive(Clone, Debug, Default)]
struct Detector {
    states: BTreeMap<u32, StageState>,
    /// (from, to) → (count, latency histogram).
    transitions: BTreeMap<(u32, u32), (u64, BTreeMap<u64, u64>)>,
    observed: u64,
}

#[derive(Clone, Debug)]
struct StageState {
    width: u32,
    start_count: u64,
    last_op: u64,
    last_width_cycle: Option<u64>,
    starts_in_cycle: u32,
    last_start: Option<u64>,
    max_end: Option<u64>,
    retired_sample: bool,
    invalid: bool,
    exit_inverted: bool,
}

impl Default for StageState {
    fn default() -> StageState {
        StageState {
            width: 0,
            start_count: 0,
            last_op: u64::MAX,
            last_width_cycle: None,
            starts_in_cycle: 0,
            last_start: None,
            max_end: None,
            retired_sample: false,
            invalid: false,
            exit_inverted: false,
        }
    }
}

/// The stage structure: allocation stage and width, execution stage, completion stages,
/// admission stages with their usual latency.
#[derive(Clone, Debug)]
struct Structure {
    alloc: u32,
    width: u32,
    detected: bool,
    execution: Option<u32>,
    completion: Vec<u32>,
    admissions: BTreeMap<u32, u64>,
}

/// Consecutive segments of one stage merged: (stage, start, end).
fn merged(op: &OpStages) -> Vec<(u32, u64, u64)> {
    let mut out: Vec<(u32, u64, u64)> = Vec::new();
    for &(stage, start, end) in &op.segments {
        let end = if end == 0 { op.end } else { end };
        match out.last_mut() {
            Some(last) if last.0 == stage => {
                last.1 = last.1.min(start);
                last.2 = last.2.max(end);
            }
            _ => out.push((stage, start, end)),
        }
    }
    out
}

fn mode(histogram: &BTreeMap<u64, u64>) -> u64 {
    let mut best = (0, 0);
    for (&latency, &count) in histogram {
        if count > best.1 {
            best = (latency, count);
        }
    }
    best.0
}

impl Detector {
    fn observe(&mut self, op: &OpStages) {
        let index = self.observed;
        self.observed += 1;
        let stays = merged(op);
        for (k, &(stage, start, end)) in stays.iter().enumerate() {
            self.stage(op, index, stage, start, end);
            if let Some(&(next, next_start, _)) = stays.get(k + 1) {
                let t = self.transitions.entry((stage, next)).or_default();
                t.0 += 1;
                let latency = end.min(next_start).checked_sub(start);
                if let Some(latency) = latency {
                    *t.1.entry(latency).or_insert(0) += 1;
                }
            }
        }
    }

    fn stage(&mut self, op: &OpStages, index: u64, stage: u32, start: u64, end: u64) {
        let s = self.states.entry(stage).or_default();
        if s.last_op == index {
            s.invalid |= op.retired;
            return;
        }
        s.last_op = index;
        s.start_count += 1;
        match s.last_width_cycle {
            Some(last) if start < last => s.invalid = true,
            Some(last) if start == last => {
                s.starts_in_cycle += 1;
                s.width = s.width.max(s.starts_in_cycle);
            }
            _ => {
                s.last_width_cycle = Some(start);
                s.starts_in_cycle = 1;
                s.width = s.width.max(1);
            }
        }
        if !op.retired {
            return;
        }
        if end < start || s.last_start.is_some_and(|last| start < last) {
            s.invalid = true;
        }
        if s.retired_sample && s.max_end.is_some_and(|max| end < max) {
            s.exit_inverted = true;
        }
        s.last_start = Some(s.last_start.map_or(start, |l| l.max(start)));
        s.max_end = Some(s.max_end.map_or(end, |m| m.max(end)));
        s.retired_sample = true;
    }

    /// Konata's `finish`, or the given stage and width.
    fn finish(&self, given: Option<u32>, width: Option<u32>) -> Result<Structure, String> {
        let (alloc, detected) = match given {
            Some(stage) => (stage, false),
            None => {
                let mut found = None;
                for (&stage, s) in &self.states {
                    if s.invalid || !s.retired_sample || !s.exit_inverted || s.width == 0 {
                        continue;
                    }
                    if found.is_some() {
                        return Err("more than one stage looks like the allocation stage: give \
                                    --alloc-stage"
                            .into());
                    }
                    found = Some(stage);
                }
                match found {
                    Some(stage) => (stage, true),
                    None => {
                        return Err(
                            "no stage looks like the allocation stage (entered in order, \
                                    left out of order): give --alloc-stage"
                                .into(),
                        )
                    }
                }
            }
        };
        let width = width
            .or_else(|| self.states.get(&alloc).map(|s| s.width))
            .filter(|&w| w > 0)
            .unwrap_or(1);
        let execution = self
            .transitions
            .iter()
            .filter(|((from, _), _)| *from == alloc)
            .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.0 .1.cmp(&a.0 .1)))
            .map(|((_, to), _)| *to);
        let mut completion: Vec<(u64, u32)> = self
            .transitions
            .iter()
            .filter(|((from, _), _)| Some(*from) == execution)
            .map(|((_, to), (count, _))| (*count, *to))
            .collect();
        completion.sort_by_key(|c| std::cmp::Reverse(c.0));
        let admissions = self
            .transitions
            .iter()
            .filter(|((_, to), (_, h))| *to == alloc && !h.is_empty())
            .map(|((from, _), (_, h))| (*from, mode(h)))
            .collect();
        Ok(Structure {
            alloc,
            width,
            detected,
            execution,
            completion: completion.into_iter().map(|(_, s)| s).collect(),
            admissions,
        })
    }
}

/// One cycle not yet folded into the totals.
#[derive(Clone, Copy, Debug, Default)]
struct Cycle {
    allocated: u32,
    retiring: u32,
    backend: bool,
    recovery: bool,
}

/// The classification, streaming.
#[derive(Clone, Debug)]
struct Classifier {
    s: Structure,
    min_recovery: Option<u64>,
    /// Cycles from `base` on.
    ring: VecDeque<Cycle>,
    base: u64,
    previous_start: BTreeMap<i64, u64>,
    pending: BTreeMap<i64, u64>,
    histogram: BTreeMap<u64, u64>,
    /// Windows seen before the bound was known: marked once it is.
    deferred: VecDeque<(u64, u64)>,
    windows: u64,
    retiring: u64,
    squashed: u64,
    overflow: u64,
    recovery: u64,
    backend: u64,
    frontend: u64,
    folded: u64,
    /// The cycles counted: from `from` (or the first instruction's `I` with `from_first`)
    /// to `to`.
    from: u64,
    to: u64,
    from_first: bool,
    first_begin: Option<u64>,
}

impl Classifier {
    fn new(s: Structure, min_recovery: Option<u64>, options: &TopDownOptions) -> Classifier {
        Classifier {
            s,
            min_recovery,
            ring: VecDeque::new(),
            base: 0,
            previous_start: BTreeMap::new(),
            pending: BTreeMap::new(),
            histogram: BTreeMap::new(),
            deferred: VecDeque::new(),
            windows: 0,
            retiring: 0,
            squashed: 0,
            overflow: 0,
            recovery: 0,
            backend: 0,
            frontend: 0,
            folded: 0,
            from: options.from_cycle.unwrap_or(0),
            to: options.to_cycle.unwrap_or(u64::MAX),
            from_first: options.from_first_insn,
            first_begin: None,
        }
    }

    /// The first cycle counted.
    fn lo(&self) -> u64 {
        if self.from_first {
            self.from.max(self.first_begin.unwrap_or(0))
        } else {
            self.from
        }
    }

    fn cycle(&mut self, c: u64) -> Option<&mut Cycle> {
        if c.checked_sub(self.base)? >= MAX_CYCLES_HELD {
            self.fold(c - MAX_CYCLES_HELD + 1);
        }
        let at = usize::try_from(c.checked_sub(self.base)?).ok()?;
        if at >= self.ring.len() {
            self.ring.resize(at + 1, Cycle::default());
        }
        self.ring.get_mut(at)
    }

    fn mark(&mut self, start: u64, end: u64, recovery: bool) {
        // Cycles further back than the most held would be added to the totals at once.
        let start = start
            .max(self.base)
            .max(end.saturating_sub(MAX_CYCLES_HELD));
        for c in start..end {
            if let Some(cycle) = self.cycle(c) {
                if recovery {
                    cycle.recovery = true;
                } else {
                    cycle.backend = true;
                }
            }
        }
    }

    fn observe(&mut self, op: &OpStages) {
        self.first_begin.get_or_insert(op.begin);
        let s = &self.s;
        let mut alloc: Option<u64> = None;
        let mut exec_seen = false;
        let mut completion: Option<u64> = None;
        let mut previous: Option<(u32, u64, u64)> = None;
        let mut stalls = Vec::new();
        for &(stage, start, end) in &op.segments {
            let end = if end == 0 { op.end } else { end };
            let changed = previous.is_none_or(|p| p.0 != stage);
            if changed {
                if let Some((prev, prev_start, prev_end)) = previous {
                    if stage == s.alloc {
                        if let Some(&typical) = s.admissions.get(&prev) {
                            stalls.push((prev_start.saturating_add(typical), prev_end.min(start)));
                        }
                    }
                }
                previous = Some((stage, start, end));
            } else if let Some(p) = &mut previous {
                p.2 = p.2.max(end);
            }
            if stage == s.alloc {
                alloc = Some(alloc.map_or(start, |a| a.min(start)));
            }
            if Some(stage) == s.execution {
                exec_seen = true;
            } else if exec_seen && completion.is_none() {
                if s.completion.contains(&stage) {
                    completion = Some(start);
                }
                exec_seen = false;
            }
        }
        for (start, end) in stalls {
            self.mark(start, end, false);
        }
        if let Some(a) = alloc {
            let width = self.s.width;
            let flushed = op.flushed;
            match self.cycle(a) {
                Some(cycle) if cycle.allocated < width => {
                    cycle.allocated += 1;
                    cycle.retiring += u32::from(!flushed);
                }
                _ => self.overflow += 1,
            }
        }
        let previous_start = self.previous_start.remove(&op.thread);
        if op.flushed {
            if let Some(start) = previous_start {
                self.pending.insert(op.thread, start);
                self.windows += 1;
            }
        } else if let Some(start) = self.pending.remove(&op.thread) {
            match alloc {
                Some(a) if op.retired && a >= start => self.window(start, a),
                _ => self.windows -= 1,
            }
        }
        if !op.flushed && op.retired && op.control {
            if let (Some(a), Some(c)) = (alloc, completion) {
                if c > a {
                    self.previous_start.insert(op.thread, c);
                }
            }
        }
        // No later instruction touches a cycle before its `I` or before a recovery window
        // still open.
        let floor = self
            .pending
            .values()
            .chain(self.previous_start.values())
            .chain(self.deferred.front().map(|w| &w.0))
            .copied()
            .fold(op.begin, u64::min);
        self.fold(floor);
    }

    /// A recovery window from the resolution at `start` to the next correct allocation at
    /// `end`: its bubbles last at most the bound, the shortest latency seen
    /// [`MIN_RECOVERY_SAMPLES`] times so far.
    fn window(&mut self, start: u64, end: u64) {
        let latency = end - start;
        let count = self.histogram.entry(latency).or_insert(0);
        *count += 1;
        if *count == MIN_RECOVERY_SAMPLES && self.min_recovery.is_none_or(|m| latency < m) {
            self.min_recovery = Some(latency);
            for (s, e) in std::mem::take(&mut self.deferred) {
                self.mark(s, e.min(s.saturating_add(latency)), true);
            }
        }
        match self.min_recovery {
            Some(m) => self.mark(start, end.min(start.saturating_add(m)), true),
            None => {
                self.deferred.push_back((start, end));
                if self.deferred.len() > MAX_DEFERRED {
                    self.deferred.pop_front();
                }
            }
        }
    }

    /// Folds the cycles before `floor` into the totals.
    fn fold(&mut self, floor: u64) {
        while self.base < floor {
            let cycle = self.ring.pop_front().unwrap_or_default();
            if (self.lo()..self.to).contains(&self.base) {
                self.fold_one(cycle);
            }
            self.base += 1;
            if self.ring.is_empty() && self.base < floor {
                // Cycles nothing touched: all their slots are frontend bound.
                let n = floor.min(self.to).saturating_sub(self.base.max(self.lo()));
                self.frontend = self
                    .frontend
                    .saturating_add(n.saturating_mul(u64::from(self.s.width)));
                self.folded = self.folded.saturating_add(n);
                self.base = floor;
            }
        }
    }

    fn fold_one(&mut self, cycle: Cycle) {
        self.retiring += u64::from(cycle.retiring);
        self.squashed += u64::from(cycle.allocated - cycle.retiring);
        let empty = u64::from(self.s.width.saturating_sub(cycle.allocated));
        if cycle.recovery {
            self.recovery += empty;
        } else if cycle.backend {
            self.backend += empty;
        } else {
            self.frontend += empty;
        }
        self.folded += 1;
    }

    /// The breakdown over cycles `0 .. cycles`.
    fn finish(mut self, cycles: u64, names: &[String]) -> TopDown {
        // Konata drops allocations at or after the last cycle (no slot there).
        let keep = cycles.saturating_sub(self.base);
        while self.ring.len() as u64 > keep {
            if let Some(cycle) = self.ring.pop_back() {
                self.overflow += u64::from(cycle.allocated);
            }
        }
        let end = cycles.max(self.base);
        self.fold(end);
        let name = |id: u32| names.get(id as usize).cloned().unwrap_or_default();
        let width = u64::from(self.s.width);
        let to = self.to.min(end);
        TopDown {
            from_cycle: self.lo().min(to),
            to_cycle: to,
            allocation_stage: name(self.s.alloc),
            allocation_width: self.s.width,
            detected: self.s.detected,
            execution_stage: self.s.execution.map(name),
            cycles: self.folded,
            slots: self.folded.saturating_mul(width),
            retiring: self.retiring,
            squashed: self.squashed,
            recovery_bubbles: self.recovery,
            backend_bound: self.backend,
            frontend_bound: self.frontend,
            overflow: self.overflow,
            min_recovery_cycles: self.min_recovery,
            recovery_windows: self.windows,
        }
    }
}

/// The smallest recovery latency seen at least [`MIN_RECOVERY_SAMPLES`] times.
fn supported_minimum(histogram: &BTreeMap<u64, u64>) -> Option<u64> {
    histogram
        .iter()
        .find(|(_, &count)| count >= MIN_RECOVERY_SAMPLES)
        .map(|(&latency, _)| latency)
}

/// The breakdown, fed instructions in op-id order.
#[derive(Clone, Debug)]
pub(crate) struct Breakdown {
    options: TopDownOptions,
    warmup: Vec<OpStages>,
    detector: Detector,
    state: State,
}

#[derive(Clone, Debug)]
enum State {
    Warming,
    Running(Box<Classifier>),
    Failed(String),
}

impl Breakdown {
    pub(crate) fn new(options: TopDownOptions) -> Breakdown {
        Breakdown {
            options,
            warmup: Vec::new(),
            detector: Detector::default(),
            state: State::Warming,
        }
    }

    /// One instruction that ended, in op-id order (instructions still in flight at the end
    /// are not given: Konata skips them too).
    pub(crate) fn observe(&mut self, op: OpStages, names: &[String]) {
        match &mut self.state {
            State::Warming => {
                self.detector.observe(&op);
                self.warmup.push(op);
                if self.warmup.len() >= self.options.warmup.max(1) {
                    self.start(names);
                }
            }
            State::Running(classifier) => classifier.observe(&op),
            State::Failed(_) => {}
        }
    }

    /// Ends the warm-up: the structure, the recovery bound, then the held instructions.
    fn start(&mut self, names: &[String]) {
        let given = match &self.options.alloc_stage {
            Some(name) => match names.iter().position(|n| n == name) {
                Some(id) => Some(id as u32),
                None => {
                    self.state = State::Failed(format!(
                        "--alloc-stage {name}: the trace has no stage {name} in lane 0"
                    ));
                    self.warmup = Vec::new();
                    return;
                }
            },
            None => None,
        };
        let structure = match self.detector.finish(given, self.options.alloc_width) {
            Ok(s) => s,
            Err(why) => {
                self.state = State::Failed(why);
                self.warmup = Vec::new();
                return;
            }
        };
        let mut dry = Classifier::new(structure.clone(), None, &self.options);
        for op in &self.warmup {
            dry.observe(op);
        }
        let min = supported_minimum(&dry.histogram);
        let mut classifier = Classifier::new(structure, min, &self.options);
        for op in std::mem::take(&mut self.warmup) {
            classifier.observe(&op);
        }
        self.state = State::Running(Box::new(classifier));
    }

    /// The breakdown over the trace's `cycles`, or why there is none.
    pub(crate) fn finish(&self, cycles: u64, names: &[String]) -> Result<TopDown, String> {
        let mut this = self.clone();
        if matches!(this.state, State::Warming) {
            if this.warmup.is_empty() {
                return Err("no instruction ended".into());
            }
            this.start(names);
        }
        match this.state {
            State::Running(classifier) => Ok(classifier.finish(cycles.max(1), names)),
            State::Failed(why) => Err(why),
            State::Warming => Err("no instruction ended".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first implementation, over the label as Konata holds it, which
    /// [`likely_control_flow`] must agree with.
    fn reference(label: &str) -> bool {
        let disassembly = match label.find(':') {
            Some(at) => &label[at + 1..],
            None => label,
        }
        .trim();
        let mnemonic = disassembly
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_lowercase();
        let has_wrip = disassembly
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|w| w.eq_ignore_ascii_case("wrip"));
        if has_wrip {
            return mnemonic.starts_with('j')
                || mnemonic.starts_with("call")
                || mnemonic.starts_with("ret");
        }
        let m = mnemonic
            .strip_prefix("c.")
            .or_else(|| mnemonic.strip_prefix("c_"))
            .unwrap_or(&mnemonic);
        const JUMPS: &[&str] = &["j", "jr", "jal", "jalr", "call", "ret"];
        const BRANCHES: &[&str] = &[
            "b", "bl", "blr", "br", "bx", "bal", "beq", "bne", "beqz", "bnez", "blt", "bge",
            "bltu", "bgeu", "bgez", "bltz", "blez", "bgtz", "cbz", "cbnz", "tbz", "tbnz",
        ];
        let base = m.split_once('.').map_or(m, |(b, _)| b);
        JUMPS.contains(&m) || BRANCHES.contains(&base)
    }

    #[test]
    fn control_flow_agrees_with_the_reference() {
        let words = [
            "0x10:",
            ":",
            "BEQ",
            "beq",
            "c.j",
            "C_J",
            "JNZ_I",
            "Jmp",
            "CALL_NEAR_I",
            "RET",
            "wrip",
            "WRIP",
            "wripx",
            "wrIp",
            "t_wrip",
            "éwrip",
            "b.ne",
            "bgt",
            "addi",
            "é",
            "É",
            "İ",
            "Bİ",
            "\\n",
            "\\nret",
            "\\n:",
            "a0,",
            " ",
            "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJ",
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..100_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let mut label = String::new();
            for i in 0..(seed % 6) as usize {
                label.push_str(words[(seed >> (8 + 8 * i)) as usize % words.len()]);
                label.push(if (seed >> (50 + i)) & 1 == 0 {
                    ' '
                } else {
                    ':'
                });
            }
            let konata = label.replace("\\n", "\n");
            assert_eq!(likely_control_flow(&label), reference(&konata), "{label:?}");
        }
    }

    #[test]
    fn konata_control_flow_labels() {
        for label in [
            "0x10: beq a0, a1, 8",
            "0x10: c.j 0x20",
            "0x10: jalr x0, 0(ra)",
            "0x10: b.ne 0x40",
            "0x10: ret",
            "0x400078.2 : JNZ_I : wrip , t1, t2",
        ] {
            assert!(likely_control_flow(label), "{label}");
        }
        for label in [
            "0x10: addi a0, a0, 1",
            "0x10: bgt a0, a1, 8",
            "0x10: sd a0, 8(sp)",
            "0x400078.0 : MOV_R_I : limm rax, 0x3c",
            "0x400078.2 : ADD_R_R : wrip , t1, t2",
        ] {
            assert!(!likely_control_flow(label), "{label}");
        }
    }

    /// A long stream: after the warm-up nothing is held but the cycles in flight.
    #[test]
    fn memory_is_bounded_after_the_warm_up() {
        let mut b = Breakdown::new(TopDownOptions::default());
        let names: Vec<String> = ["F", "Q", "X"].iter().map(|s| s.to_string()).collect();
        let mut largest_ring = 0;
        for i in 0..200_000u64 {
            // Two a cycle; Q entered in order, left after 1 to 4 cycles (out of order).
            let begin = i / 2;
            let q = begin + 1;
            let x = q + 1 + (i * 7919) % 4;
            let op = OpStages {
                thread: 0,
                flushed: false,
                retired: true,
                control: false,
                begin,
                end: x + 1,
                segments: vec![(0, begin, q), (1, q, x), (2, x, x + 1)],
            };
            b.observe(op, &names);
            if let State::Running(c) = &b.state {
                largest_ring = largest_ring.max(c.ring.len());
            }
        }
        assert!(b.warmup.is_empty());
        assert!(largest_ring < 16, "{largest_ring} cycles held");
        let t = b.finish(100_004, &names).unwrap();
        assert_eq!((t.allocation_stage.as_str(), t.allocation_width), ("Q", 2));
        assert_eq!(t.execution_stage.as_deref(), Some("X"));
        assert_eq!(t.retiring, 200_000);
        assert_eq!(
            t.slots,
            t.retiring + t.frontend_bound + t.backend_bound + t.recovery_bubbles + t.squashed
        );
        assert_eq!(t.cycles, 100_004);
    }
}
