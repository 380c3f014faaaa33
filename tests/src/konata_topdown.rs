//! Konata's top-down breakdown over the [`konata_model`](crate::konata_model): the reference
//! of the `topdown` object of `kanata-pp --stats` on traces short enough that kanata-pp's
//! warm-up covers them.
//!
//! Ground truth is Konata's `src/core/top_down_analysis.ts` (`buildTopDownData`,
//! `classifyTopDownSlots`, `observeOpStages`, `isLikelyControlFlowLabel`, for a trace that
//! finished loading) and `src/core/stage_structure_detector.ts`, ported as they are: two
//! passes over the ops in op-id order, a byte per slot. Konata's detector looks at every
//! lane; [`top_down`] reports the lane of the stage it found.

use std::collections::BTreeMap;

use crate::konata_model::{Insn, RetireKind, View};

/// What Konata's top-down analysis finds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KonataTopDown {
    /// The lane (its name) of the allocation stage.
    pub lane: String,
    /// The allocation stage.
    pub allocation_stage: String,
    /// Its width.
    pub width: u32,
    /// The execution stage.
    pub execution_stage: String,
    /// Slots: retiring, squashed, recovery bubbles, frontend bound, backend bound,
    /// unresolved (Konata's `TopDownSlotClass` order).
    pub counts: [u64; 6],
    /// `minimumRecoveryCycles`.
    pub min_recovery: Option<u64>,
    /// `recoveryWindowCount`.
    pub recovery_windows: i64,
    /// `cycleCount`.
    pub cycles: u64,
}

const RETIRING: u8 = 0;
const SQUASHED: u8 = 1;
const RECOVERY: u8 = 2;
const FRONTEND: u8 = 3;
const BACKEND: u8 = 4;

fn flushed(op: &Insn) -> bool {
    op.retired.is_some_and(|r| r.kind == RetireKind::Flushed)
}

fn retired(op: &Insn) -> bool {
    op.retired.is_some_and(|r| r.kind == RetireKind::Retired)
}

/// The stages of a lane as Konata holds them: (name, start, end with 0 → retired cycle).
fn stages<'a>(op: &'a Insn, lane: &str) -> Vec<(&'a str, i64, i64)> {
    op.lane(lane)
        .iter()
        .map(|s| {
            let end = if s.raw_end == 0 {
                op.retired_cycle
            } else {
                s.raw_end
            };
            (s.name.as_str(), s.start, end)
        })
        .collect()
}

#[derive(Default)]
struct State {
    width: u32,
    start_count: u64,
    last_op: i64,
    last_width_cycle: Option<i64>,
    starts_in_cycle: u32,
    last_start: Option<i64>,
    max_end: Option<i64>,
    retired_sample: bool,
    invalid: bool,
    exit_inverted: bool,
}

type Key = (String, String);

/// `isLikelyControlFlowLabel`.
fn control_flow(label: &str) -> bool {
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
    let wrip = regex::Regex::new(r"(?i)\bwrip\b").unwrap();
    if wrip.is_match(disassembly) {
        return regex::Regex::new(r"^(?:j|call|ret)")
            .unwrap()
            .is_match(&mnemonic);
    }
    let uncompressed = regex::Regex::new(r"^c[._]").unwrap().replace(&mnemonic, "");
    regex::Regex::new(r"^(?:j|jr|jal|jalr|call|ret)$").unwrap().is_match(&uncompressed)
        || regex::Regex::new(
            r"^(?:b|bl|blr|br|bx|bal|beq|bne|beqz|bnez|blt|bge|bltu|bgeu|bgez|bltz|blez|bgtz|cbz|cbnz|tbz|tbnz)(?:\..*)?$",
        )
        .unwrap()
        .is_match(&uncompressed)
}

/// Konata's top-down analysis of the trace `view` describes; `None` when Konata finds no
/// (unique) allocation stage.
pub fn top_down(view: &View) -> Option<KonataTopDown> {
    top_down_in(view, 0, u64::MAX)
}

/// The same, with the slots counted over cycles `[from, to)` only, as Konata's
/// `getTopDownBreakdown` counts a range (without sampling); `cycles` is then the number of
/// cycles of the range within the trace.
pub fn top_down_in(view: &View, from: u64, to: u64) -> Option<KonataTopDown> {
    // Pass 1: the stage structure detector.
    let mut states: BTreeMap<Key, State> = BTreeMap::new();
    let mut transitions: BTreeMap<(Key, Key), (u64, BTreeMap<i64, u64>)> = BTreeMap::new();
    let mut observed = 0i64;
    for op in &view.insns {
        if op.eof() || op.file_id > view.last_id {
            continue;
        }
        let index = observed;
        observed += 1;
        for lane in op.lanes.keys() {
            let mut stays: Vec<(&str, i64, i64)> = Vec::new();
            for (name, start, end) in stages(op, lane) {
                match stays.last_mut() {
                    Some(last) if last.0 == name => {
                        last.1 = last.1.min(start);
                        last.2 = last.2.max(end);
                    }
                    _ => stays.push((name, start, end)),
                }
            }
            for (k, &(name, start, end)) in stays.iter().enumerate() {
                let key = (lane.clone(), name.to_owned());
                let s = states.entry(key.clone()).or_insert_with(|| State {
                    last_op: -1,
                    ..State::default()
                });
                if s.last_op == index {
                    s.invalid |= retired(op) && !flushed(op);
                } else {
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
                    if retired(op) {
                        if end < start || s.last_start.is_some_and(|l| start < l) {
                            s.invalid = true;
                        }
                        if s.retired_sample && s.max_end.is_some_and(|m| end < m) {
                            s.exit_inverted = true;
                        }
                        s.last_start = Some(s.last_start.map_or(start, |l| l.max(start)));
                        s.max_end = Some(s.max_end.map_or(end, |m| m.max(end)));
                        s.retired_sample = true;
                    }
                }
                if let Some(&(next, next_start, _)) = stays.get(k + 1) {
                    let t = transitions
                        .entry((key, (lane.clone(), next.to_owned())))
                        .or_default();
                    t.0 += 1;
                    let latency = end.min(next_start) - start;
                    if latency >= 0 {
                        *t.1.entry(latency).or_insert(0) += 1;
                    }
                }
            }
        }
    }
    let mut candidates = states
        .iter()
        .filter(|(_, s)| !s.invalid && s.retired_sample && s.exit_inverted && s.width > 0);
    let (alloc, alloc_state) = candidates.next()?;
    if candidates.next().is_some() {
        return None;
    }
    let alloc = alloc.clone();
    // The most frequent transition out of the allocation stage (the first of a tie, in the
    // order Konata's map holds them: first seen; here by key, which the tests avoid).
    let execution = transitions
        .iter()
        .filter(|((from, _), _)| *from == alloc)
        .fold(
            None::<(&Key, u64)>,
            |best, ((_, to), (count, _))| match best {
                Some((_, c)) if c >= *count => best,
                _ => Some((to, *count)),
            },
        )?
        .0
        .clone();
    let completion: Vec<String> = transitions
        .iter()
        .filter(|((from, to), _)| *from == execution && to.0 == execution.0)
        .map(|((_, to), _)| to.1.clone())
        .collect();
    let admissions: BTreeMap<String, i64> = transitions
        .iter()
        .filter(|((from, to), (_, h))| *to == alloc && !h.is_empty() && from.0 == alloc.0)
        .map(|((from, _), (_, h))| {
            let mut best = (0, 0);
            for (&latency, &count) in h {
                if count > best.1 {
                    best = (latency, count);
                }
            }
            (from.1.clone(), best.0)
        })
        .collect();
    let width = alloc_state.width;

    // Pass 2: the slots.
    let cycles = view.last_cycle.max(1) as u64;
    let w = width as usize;
    let mut slots = vec![FRONTEND; cycles as usize * w];
    let mut empty = vec![FRONTEND; cycles as usize];
    let mut previous: BTreeMap<i64, i64> = BTreeMap::new();
    let mut pending: BTreeMap<i64, i64> = BTreeMap::new();
    let mut windows: Vec<(i64, i64)> = Vec::new();
    let mut histogram: BTreeMap<i64, u64> = BTreeMap::new();
    let mut window_count = 0i64;
    let mark = |cycles_: &mut [u8], start: i64, end: i64, class: u8| {
        let n = cycles_.len() as i64;
        let s = start.clamp(0, n);
        let e = end.clamp(s, n);
        for c in s..e {
            cycles_[c as usize] = class;
        }
    };
    for op in &view.insns {
        if op.eof() {
            continue;
        }
        let mut first_alloc: Option<i64> = None;
        let mut exec_seen = false;
        let mut completion_cycle: Option<i64> = None;
        let mut prev: Option<(&str, i64, i64)> = None;
        for (name, start, end) in stages(op, &alloc.0) {
            let changed = prev.is_none_or(|p| p.0 != name);
            if changed {
                if let Some((p, p_start, p_end)) = prev {
                    if name == alloc.1 {
                        if let Some(&typical) = admissions.get(p) {
                            mark(&mut empty, p_start + typical, p_end.min(start), BACKEND);
                        }
                    }
                }
                prev = Some((name, start, end));
            } else if let Some(p) = &mut prev {
                p.2 = p.2.max(end);
            }
            if name == alloc.1 {
                first_alloc = Some(first_alloc.map_or(start, |a| a.min(start)));
            }
            if execution.0 == alloc.0 && name == execution.1 {
                exec_seen = true;
            } else if exec_seen && completion_cycle.is_none() {
                if completion.iter().any(|c| c == name) {
                    completion_cycle = Some(start);
                }
                exec_seen = false;
            }
        }
        if let Some(a) = first_alloc {
            let first = a as usize * w;
            if a >= 0 && first + w <= slots.len() {
                if let Some(slot) = slots[first..first + w]
                    .iter_mut()
                    .find(|s| !matches!(**s, RETIRING | SQUASHED))
                {
                    *slot = if retired(op) { RETIRING } else { SQUASHED };
                }
            }
        }
        let tid = op.thread;
        let prev_start = previous.get(&tid).copied();
        if flushed(op) {
            if let Some(start) = prev_start {
                pending.insert(tid, start);
                window_count += 1;
            }
        } else if let Some(start) = pending.remove(&tid) {
            match first_alloc {
                Some(a) if retired(op) && a >= start => {
                    windows.push((start, a));
                    *histogram.entry(a - start).or_insert(0) += 1;
                }
                _ => window_count -= 1,
            }
        }
        previous.remove(&tid);
        if !flushed(op) && retired(op) && control_flow(&op.label_name) {
            if let (Some(a), Some(c)) = (first_alloc, completion_cycle) {
                if c > a {
                    previous.insert(tid, c);
                }
            }
        }
    }
    let min = histogram
        .iter()
        .filter(|(_, &n)| n >= 10)
        .map(|(&l, _)| l)
        .min();
    if let Some(m) = min {
        for &(start, end) in &windows {
            mark(&mut empty, start, end.min(start + m), RECOVERY);
        }
    }
    for (c, &class) in empty.iter().enumerate() {
        if class != FRONTEND {
            for slot in &mut slots[c * w..(c + 1) * w] {
                if !matches!(*slot, RETIRING | SQUASHED) && (class != BACKEND || *slot == FRONTEND)
                {
                    *slot = class;
                }
            }
        }
    }
    let mut counts = [0u64; 6];
    let (lo, hi) = (from.min(cycles), to.min(cycles));
    for &s in &slots[lo as usize * w..hi.max(lo) as usize * w] {
        counts[s as usize] += 1;
    }
    Some(KonataTopDown {
        lane: alloc.0,
        allocation_stage: alloc.1,
        width,
        execution_stage: execution.1,
        counts,
        min_recovery: min.map(|m| m as u64),
        recovery_windows: window_count,
        cycles: hi.max(lo) - lo,
    })
}
