//! Trace analysis for CI (`docs/analysis.md`): Konata's statistics dialog, the same counts
//! with a correct classification, the hot spots (the instruction addresses that cause the
//! most flushes, stall the longest, or take the longest through a range of stages) and a
//! top-down breakdown of the pipeline's slots ([`topdown`]).
//!
//! [`Analyzer`] reads the canonical Kanata text a line at a time, as the statistics of
//! [`StatsSink`](crate::output::stats::StatsSink) do (it is fed by that sink, from the same
//! stream), and [`Analyzer::snapshot`] gives the [`Analysis`]. [`diff`] compares the
//! statistics of two traces and evaluates the gates of `kanata-pp diff --fail-if`.
//!
//! # Order and memory
//!
//! Konata attributes a flush to the instruction before it in op-id order, while a trace
//! ends its instructions out of order. The analyzer keeps, per instruction in flight, its
//! thread, its name label (at most 4096 bytes are kept), its open stages and its lane-0
//! stages, and turns it at its `R` into a record (its kinds, its hot-spot key and a short
//! label, its lane-0 stages), which waits until every older instruction has ended. So memory is bounded by the instructions in flight
//! and by the records of younger instructions waiting for an older one (as
//! [`Instructions`](crate::output::canonical::Instructions) holds them), plus the hot-spot
//! tables: [`AnalysisOptions::capacity`] keys per table (see [`topn`]), three tables for
//! the whole trace and three per thread, and the top-down breakdown's warm-up and cycles in
//! flight (see [`topdown`]).

pub mod classify;
pub mod diff;
pub mod konata;
pub mod topdown;
pub mod topn;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::kanata::ids::IdMap;
use crate::output::canonical::{parse_i64, Command, LabelKind, LineParser, Position, StageSkim};
use classify::{cut, key_and_kinds, Key, MAX_KEY_TEXT};
use konata::{Classifier, Machine, StatsValues};
use topdown::{Breakdown, OpStages, TopDown, TopDownOptions};
use topn::{Counted, TopN};

/// The longest name label kept per instruction, in bytes (the rest is not read).
pub const MAX_LABEL: usize = 4096;

/// The most lane-0 segments kept per instruction for the top-down breakdown.
pub const MAX_SEGMENTS: usize = 4096;

/// The hot spots listed per table by default.
pub const DEFAULT_TOP: usize = 10;

/// The keys each hot-spot table holds by default.
pub const DEFAULT_CAPACITY: usize = 4096;

/// What the analysis computes beyond Konata's statistics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnalysisOptions {
    /// Hot spots listed per table (`--top`).
    pub top: usize,
    /// Keys each hot-spot table keeps (at least `top`): exact counts up to this many
    /// distinct addresses, Space-Saving beyond ([`topn`]).
    pub capacity: usize,
    /// The stage range whose latency ranks the third table (`--latency X..Cm`).
    pub latency: Option<StageRange>,
    /// The allocation stage and width of the top-down breakdown, when given.
    pub topdown: TopDownOptions,
}

impl Default for AnalysisOptions {
    fn default() -> AnalysisOptions {
        AnalysisOptions {
            top: DEFAULT_TOP,
            capacity: DEFAULT_CAPACITY,
            latency: None,
            topdown: TopDownOptions::default(),
        }
    }
}

/// A range of stages of lane 0, `FROM..TO`: the latency of an instruction is from the
/// cycle it first enters `FROM` to the cycle it last leaves `TO`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StageRange {
    /// The first stage.
    pub from: String,
    /// The last stage.
    pub to: String,
}

impl FromStr for StageRange {
    type Err = String;

    /// `X..Cm`: two stage names, neither empty.
    fn from_str(text: &str) -> Result<StageRange, String> {
        match text.split_once("..") {
            Some((from, to)) if !from.trim().is_empty() && !to.trim().is_empty() => {
                Ok(StageRange {
                    from: from.trim().to_owned(),
                    to: to.trim().to_owned(),
                })
            }
            _ => Err(format!(
                "`{text}`: a stage range is FROM..TO, two stage names (`X..Cm`)"
            )),
        }
    }
}

impl fmt::Display for StageRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.from, self.to)
    }
}

/// Everything the analysis finds in one trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Analysis {
    /// Konata's statistics dialog, Konata's numbers exactly ([`konata`]).
    pub konata: StatsValues,
    /// The same fields counted by this project: instructions, retired instructions and
    /// retired instructions per cycle for the three base values and IPC, flushes attributed
    /// to the older instruction of the same thread, kinds from the mnemonic
    /// ([`classify`]); classifier `"mnemonic"`.
    pub classified: StatsValues,
    /// The hot spots.
    pub hotspots: Hotspots,
    /// The top-down breakdown of the slots at the allocation stage ([`topdown`]); null when
    /// there is none, `topdown_note` says why.
    pub topdown: Option<TopDown>,
    /// Why there is no top-down breakdown (null when there is one).
    pub topdown_note: Option<String>,
}

/// The hot spots of a trace (see [`Analysis::hotspots`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Hotspots {
    /// Entries listed per table.
    pub top: usize,
    /// Keys each table keeps.
    pub capacity: usize,
    /// Whether every count is exact (no table ever dropped a key).
    pub exact: bool,
    /// The stage range of `latency`, if one was given.
    pub latency_stages: Option<StageRange>,
    /// Runs of flushes that could not be attributed (no older instruction in the thread).
    pub unattributed_flushes: u64,
    /// The instructions that cause the most runs of flushes.
    pub flushes: Vec<FlushSpot>,
    /// The instructions that stall longest in lane 1.
    pub stalls: Vec<CycleSpot>,
    /// The instructions that take longest through the stage range.
    pub latency: Vec<CycleSpot>,
    /// The same per thread, by ascending thread id.
    pub threads: Vec<ThreadSpots>,
}

/// The hot spots of one thread.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ThreadSpots {
    /// The thread id.
    pub thread: i64,
    /// As [`Hotspots::flushes`].
    pub flushes: Vec<FlushSpot>,
    /// As [`Hotspots::stalls`].
    pub stalls: Vec<CycleSpot>,
    /// As [`Hotspots::latency`].
    pub latency: Vec<CycleSpot>,
}

/// An instruction address that causes flushes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FlushSpot {
    /// The address (`"0x80001a2c"`), or null when the label has none.
    pub pc: Option<String>,
    /// The label of an instruction counted (the key itself when there is no address).
    pub label: String,
    /// Runs of flushes that follow an instruction of this address (its thread's next
    /// instructions flushed).
    pub flushes: u64,
    /// The instructions flushed in those runs.
    pub flushed_insns: u64,
    /// The longest of those runs.
    pub longest: u64,
    /// The count a replaced address left (0: `flushes` is exact; see [`topn`]).
    pub error: u64,
}

/// An instruction address that spends cycles: stalled in lane 1, or through a stage range.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CycleSpot {
    /// The address, or null.
    pub pc: Option<String>,
    /// The label of an instruction counted.
    pub label: String,
    /// The cycles summed over the instructions of this address.
    pub cycles: u64,
    /// The instructions counted.
    pub insns: u64,
    /// `cycles / insns`.
    pub mean: f64,
    /// The most cycles of one instruction.
    pub max: u64,
    /// The cycles a replaced address left (0: exact).
    pub error: u64,
}

fn pc_text(key: &Key) -> Option<String> {
    match key {
        Key::Pc(pc) => Some(format!("{pc:#x}")),
        Key::Text(_) => None,
    }
}

fn flush_spot(c: Counted<Key>) -> FlushSpot {
    FlushSpot {
        pc: pc_text(&c.key),
        label: c.label.into(),
        flushes: c.weight,
        flushed_insns: c.size,
        longest: c.max,
        error: c.error,
    }
}

fn cycle_spot(c: Counted<Key>) -> CycleSpot {
    CycleSpot {
        pc: pc_text(&c.key),
        label: c.label.into(),
        cycles: c.weight,
        insns: c.count,
        mean: if c.count > 0 {
            c.size as f64 / c.count as f64
        } else {
            0.0
        },
        max: c.max,
        error: c.error,
    }
}

/// Which ends of the stage range a stage name is.
const FROM: u8 = 1;
const TO: u8 = 2;

/// A live instruction.
#[derive(Debug)]
struct Live {
    thread: i64,
    label: String,
    stall: u64,
    /// (lane, range marks, start cycle) of each open stage.
    open: Vec<(u64, u8, u64)>,
    from_start: Option<u64>,
    to_end: Option<u64>,
    /// The cycle of its `I`.
    begin: u64,
    /// Lane-0 segments: (stage, start, end; 0 while open, as Konata holds it).
    segments: Vec<(u32, u64, u64)>,
}

/// An instruction that ended, waiting for the older ones.
#[derive(Clone, Debug)]
struct Done {
    thread: i64,
    flushed: bool,
    retired: bool,
    generic: u8,
    x86: u8,
    detects: bool,
    kinds: u8,
    key: Key,
    label: Box<str>,
    /// What the top-down breakdown reads; `None` for an instruction without `R`.
    stages: Option<OpStages>,
}

/// The three tables of hot spots.
#[derive(Clone, Debug)]
struct Tables {
    flushes: TopN<Key>,
    stalls: TopN<Key>,
    latency: TopN<Key>,
}

impl Tables {
    fn new(capacity: usize) -> Tables {
        Tables {
            flushes: TopN::new(capacity),
            stalls: TopN::new(capacity),
            latency: TopN::new(capacity),
        }
    }

    fn exact(&self) -> bool {
        self.flushes.exact() && self.stalls.exact() && self.latency.exact()
    }
}

/// A run of flushes in one thread.
#[derive(Clone, Debug)]
struct Run {
    cause: Option<(Key, Box<str>)>,
    len: u64,
}

/// The state of one thread in op-id order.
#[derive(Clone, Debug, Default)]
struct ThreadOrder {
    machine: Machine,
    prev: Option<(Key, Box<str>)>,
    run: Option<Run>,
}

/// What is computed in op-id order.
#[derive(Clone, Debug)]
struct Ordered {
    /// The op before the newest one: Konata does not scan the last op.
    pending: Option<(u64, bool, bool, u8, u8, bool)>,
    generic: Machine,
    x86: Machine,
    x86_detected: bool,
    x86_gave_up: bool,
    threads: BTreeMap<i64, ThreadOrder>,
    unattributed: u64,
    breakdown: Breakdown,
}

/// Adds a finished run of flushes to the tables.
fn commit(run: Run, all: &mut Tables, mine: &mut Tables, unattributed: &mut u64) {
    match run.cause {
        Some((key, label)) => {
            all.flushes.add(&key, &label, 1, run.len);
            mine.flushes.add(&key, &label, 1, run.len);
        }
        None => *unattributed += 1,
    }
}

impl Ordered {
    /// The classifiers whose answers a record made now may still be read for: once the
    /// detection is decided, the other classifier's counts are never read.
    fn classifier(&self) -> Classifier {
        if self.x86_detected {
            Classifier::X86Gem5
        } else if self.x86_gave_up {
            Classifier::Generic
        } else {
            Classifier::Undecided
        }
    }

    fn konata(&mut self, op: (u64, bool, bool, u8, u8, bool)) {
        let (id, flushed, retired, generic, x86, detects) = op;
        self.generic.update(flushed, retired, generic);
        self.x86.update(flushed, retired, x86);
        if !self.x86_detected && !self.x86_gave_up {
            if detects {
                self.x86_detected = true;
            } else if id >= konata::X86_DETECT_LAST_ID {
                self.x86_gave_up = true;
            }
        }
    }

    fn feed(
        &mut self,
        id: u64,
        mut done: Done,
        tables: &mut Tables,
        per_thread: &mut BTreeMap<i64, Tables>,
        capacity: usize,
        names: &[String],
    ) {
        if let Some(stages) = done.stages.take() {
            self.breakdown.observe(stages, names);
        }
        let op = (
            id,
            done.flushed,
            done.retired,
            done.generic,
            done.x86,
            done.detects,
        );
        if let Some(previous) = self.pending.replace(op) {
            self.konata(previous);
        }
        let thread = self.threads.entry(done.thread).or_default();
        let mine = per_thread
            .entry(done.thread)
            .or_insert_with(|| Tables::new(capacity));
        thread
            .machine
            .update(done.flushed, done.retired, done.kinds);
        if done.flushed {
            match &mut thread.run {
                Some(run) => run.len += 1,
                None => {
                    thread.run = Some(Run {
                        cause: thread.prev.take(),
                        len: 1,
                    })
                }
            }
        } else if let Some(run) = thread.run.take() {
            commit(run, tables, mine, &mut self.unattributed);
        }
        thread.prev = Some((done.key, done.label));
    }

    /// Ends the order: the runs still open are counted.
    fn finish(&mut self, tables: &mut Tables, per_thread: &mut BTreeMap<i64, Tables>) {
        for (thread, order) in &mut self.threads {
            if let (Some(run), Some(mine)) = (order.run.take(), per_thread.get_mut(thread)) {
                commit(run, tables, mine, &mut self.unattributed);
            }
        }
    }
}

/// Reads canonical Kanata text a line at a time and computes its [`Analysis`] (see the
/// [module documentation](self)). It never panics; lines it cannot read are skipped.
///
/// ```
/// use kanata_pp::analysis::{AnalysisOptions, Analyzer};
///
/// let trace = "Kanata\t0004\nC=\t0\n\
///              I\t0\t0\t0\nL\t0\t0\t0x10: beq a0, a1, 8\nI\t1\t1\t0\nL\t1\t0\t0x14: addi a0, a0, 1\n\
///              I\t2\t2\t0\nL\t2\t0\t0x18: ret\n\
///              C\t2\nR\t0\t0\t0\nR\t1\t0\t1\nR\t2\t1\t0\nC\t1\n";
/// let mut analyzer = Analyzer::new(AnalysisOptions::default());
/// for line in trace.lines() {
///     analyzer.line(line.as_bytes());
/// }
/// let analysis = analyzer.snapshot();
/// assert_eq!(analysis.konata.classifier, "GenericStats");
/// assert_eq!(analysis.konata.num_br_pred_miss, 1.0); // the flush follows the beq
/// assert_eq!(analysis.konata.num_fetched_ops, 2.0); // Konata's lastID
/// assert_eq!(analysis.classified.num_fetched_ops, 3.0); // instructions
/// assert_eq!(analysis.hotspots.flushes[0].pc.as_deref(), Some("0x10"));
/// ```
#[derive(Debug)]
pub struct Analyzer {
    options: AnalysisOptions,
    parser: LineParser,
    live: IdMap<u64, Live>,
    live_ids: BTreeSet<u64>,
    done: BTreeMap<u64, Done>,
    ordered: Ordered,
    tables: Tables,
    per_thread: BTreeMap<i64, Tables>,
    instructions: u64,
    retired: u64,
    max_id: Option<u64>,
    max_rid: Option<i64>,
    ignored: u64,
    /// Lane-0 stage names, by the index the segments use.
    stage_names: Vec<String>,
    stage_ids: IdMap<Box<[u8]>, u32>,
    /// Konata's cycle of the latest line.
    cycle: u64,
}

impl Analyzer {
    /// An analyzer of a whole trace.
    pub fn new(options: AnalysisOptions) -> Analyzer {
        let capacity = options.capacity.max(options.top).max(1);
        let breakdown = Breakdown::new(options.topdown.clone());
        Analyzer {
            options: AnalysisOptions {
                capacity,
                ..options
            },
            parser: LineParser::new(),
            live: IdMap::default(),
            live_ids: BTreeSet::new(),
            done: BTreeMap::new(),
            ordered: Ordered {
                pending: None,
                generic: Machine::default(),
                x86: Machine::default(),
                x86_detected: false,
                x86_gave_up: false,
                threads: BTreeMap::new(),
                unattributed: 0,
                breakdown,
            },
            tables: Tables::new(capacity),
            per_thread: BTreeMap::new(),
            instructions: 0,
            retired: 0,
            max_id: None,
            max_rid: None,
            ignored: 0,
            stage_names: Vec::new(),
            stage_ids: IdMap::default(),
            cycle: 0,
        }
    }

    /// Lines that could not be read or did not apply (0 for canonical text).
    pub fn ignored_lines(&self) -> u64 {
        self.ignored
    }

    /// Instructions begun and not yet in op-id order (in flight, or waiting for an older
    /// one): what the analyzer holds.
    pub fn held(&self) -> usize {
        self.live.len() + self.done.len()
    }

    /// Reads one line, without its line feed (a CR before it is dropped).
    pub fn line(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if self.apply(line).is_none() {
            self.ignored += 1;
        }
    }

    fn apply(&mut self, line: &[u8]) -> Option<()> {
        let line = if line.len() > MAX_LABEL {
            if !line.starts_with(b"L\t") {
                return None;
            }
            // Only the start of a long label is read: cut at a character boundary.
            let cut = &line[..MAX_LABEL];
            let valid = match std::str::from_utf8(cut) {
                Ok(_) => cut.len(),
                Err(err) => err.valid_up_to(),
            };
            &line[..valid]
        } else {
            line
        };
        let event = match self.parser.line(line) {
            Ok(event) => event,
            Err(_) if self.parser.start_cycle().is_none() => {
                // A piece of a trace: read as the body of one that starts at cycle 0.
                self.parser = LineParser::resume(Position {
                    line: 2,
                    cycle: 0,
                    start_cycle: 0,
                });
                self.parser.line(line).ok()?
            }
            Err(_) => return None,
        };
        let Some(event) = event else {
            return Some(());
        };
        self.cycle = event.cycle;
        match event.command {
            Command::Insn { id, thread, .. } => self.begin(id, thread),
            Command::Label { id, kind, text } => {
                let live = self.live.get_mut(&id)?;
                if kind == LabelKind::Name {
                    append_label(live, text);
                }
                Some(())
            }
            Command::StageStart { id, lane, name } => self.stage_start(id, lane, name.as_bytes()),
            Command::StageEnd { id, lane, .. } => self.stage_end(id, lane),
            Command::Retire {
                id,
                retire_id,
                flushed,
            } => self.retire(id, retire_id, flushed),
            Command::Start(_) | Command::Step(_) | Command::Dep { .. } => Some(()),
        }
    }

    /// Reads a line that [`StatsSink`](crate::output::stats::StatsSink)'s parser has
    /// skimmed (`skim`, at Konata's cycle `cycle`), so that the sink's text is parsed once.
    /// The sink reads canonical text it trusts: what this reads beyond the skim (a label's
    /// type and text, a retire id) is taken as the writer wrote it, and a line that is not
    /// canonical may be skipped where [`line`](Self::line) would read it, or the other way
    /// round.
    pub(crate) fn skimmed(&mut self, line: &[u8], skim: &StageSkim<'_>, cycle: u64) {
        self.cycle = cycle;
        let applied = match *skim {
            StageSkim::Insn { id, thread } => self.begin(id, thread),
            StageSkim::Label(id) => self.skimmed_label(id, line),
            StageSkim::StageStart { id, lane, name } => self.stage_start(id, lane, name),
            StageSkim::StageEnd { id, lane, .. } => self.stage_end(id, lane),
            StageSkim::Retire { id, flushed } => line
                .split(|&b| b == b'\t')
                .nth(2)
                .and_then(parse_i64)
                .and_then(|retire_id| self.retire(id, retire_id, flushed)),
            StageSkim::Header | StageSkim::Start(_) | StageSkim::Step | StageSkim::Dep { .. } => {
                Some(())
            }
        };
        if applied.is_none() {
            self.ignored += 1;
        }
    }

    /// Counts a line the sink could not read.
    pub(crate) fn skipped(&mut self) {
        self.ignored += 1;
    }

    /// `L→id→type→text` of a skimmed line: the name label's text is appended, cut as
    /// [`line`](Self::line) cuts a long line.
    fn skimmed_label(&mut self, id: u64, line: &[u8]) -> Option<()> {
        let live = self.live.get_mut(&id)?;
        let mut fields = line.splitn(4, |&b| b == b'\t');
        let (_, _, kind, text) = (
            fields.next()?,
            fields.next()?,
            fields.next()?,
            fields.next()?,
        );
        match kind {
            b"0" => {}
            b"1" | b"2" => return Some(()),
            _ => return None,
        }
        if live.label.len() >= MAX_LABEL {
            return Some(());
        }
        let text = if line.len() > MAX_LABEL {
            let prefix = line.len() - text.len();
            let cut = &text[..MAX_LABEL.saturating_sub(prefix).min(text.len())];
            match std::str::from_utf8(cut) {
                Ok(text) => text,
                Err(err) => std::str::from_utf8(&cut[..err.valid_up_to()]).ok()?,
            }
        } else {
            std::str::from_utf8(text).ok()?
        };
        if text.is_empty() || text.contains('\t') {
            return None;
        }
        append_label(live, text);
        Some(())
    }

    /// `I`: instruction `id` of `thread` begins.
    fn begin(&mut self, id: u64, thread: i64) -> Option<()> {
        if self.live.contains_key(&id) || self.done.contains_key(&id) {
            return None;
        }
        self.live.insert(
            id,
            Live {
                thread,
                label: String::new(),
                stall: 0,
                // Room for a typical instruction at once, not a growth per stage.
                open: Vec::with_capacity(2),
                from_start: None,
                to_end: None,
                begin: self.cycle,
                segments: Vec::with_capacity(8),
            },
        );
        self.live_ids.insert(id);
        self.instructions += 1;
        self.max_id = self.max_id.max(Some(id));
        Some(())
    }

    /// `S`: instruction `id` enters stage `name` of `lane`.
    fn stage_start(&mut self, id: u64, lane: u64, name: &[u8]) -> Option<()> {
        let now = self.cycle;
        let marks = self.marks(lane, name);
        let stage = if lane == 0 && self.live.contains_key(&id) {
            Some(self.stage_id(name)?)
        } else {
            None
        };
        let live = self.live.get_mut(&id)?;
        if let Some(stage) = stage {
            if let Some(last) = live.segments.last_mut().filter(|s| s.2 == 0) {
                last.2 = now;
            }
            if live.segments.len() < MAX_SEGMENTS {
                live.segments.push((stage, now, 0));
            }
        }
        if let Some(at) = live.open.iter().position(|o| o.0 == lane) {
            let open = live.open.swap_remove(at);
            close(live, open, now);
        }
        if marks & FROM != 0 && live.from_start.is_none() {
            live.from_start = Some(now);
        }
        live.open.push((lane, marks, now));
        Some(())
    }

    /// `E`: instruction `id` leaves its stage of `lane`.
    fn stage_end(&mut self, id: u64, lane: u64) -> Option<()> {
        let now = self.cycle;
        let live = self.live.get_mut(&id)?;
        if lane == 0 {
            if let Some(last) = live.segments.last_mut().filter(|s| s.2 == 0) {
                last.2 = now;
            }
        }
        let at = live.open.iter().position(|o| o.0 == lane)?;
        let open = live.open.swap_remove(at);
        close(live, open, now);
        Some(())
    }

    /// `R`: instruction `id` retires or is flushed.
    fn retire(&mut self, id: u64, retire_id: i64, flushed: bool) -> Option<()> {
        let now = self.cycle;
        let mut live = self.live.remove(&id)?;
        self.live_ids.remove(&id);
        for open in std::mem::take(&mut live.open) {
            close(&mut live, open, now);
        }
        if let Some(last) = live.segments.last_mut().filter(|s| s.2 == 0) {
            last.2 = now;
        }
        if !flushed {
            self.retired += 1;
            if retire_id >= 0 {
                self.max_rid = self.max_rid.max(Some(retire_id));
            }
        }
        let mut done = self.record(&live, Some(flushed));
        done.stages = Some(OpStages {
            thread: live.thread,
            flushed,
            retired: !flushed,
            control: topdown::likely_control_flow(&live.label),
            begin: live.begin,
            end: now,
            segments: std::mem::take(&mut live.segments),
        });
        let mine = self
            .per_thread
            .entry(live.thread)
            .or_insert_with(|| Tables::new(self.options.capacity));
        if live.stall > 0 {
            self.tables
                .stalls
                .add(&done.key, &done.label, live.stall, live.stall);
            mine.stalls
                .add(&done.key, &done.label, live.stall, live.stall);
        }
        if let (Some(start), Some(end)) = (live.from_start, live.to_end) {
            if end >= start {
                let cycles = end - start;
                self.tables
                    .latency
                    .add(&done.key, &done.label, cycles, cycles);
                mine.latency.add(&done.key, &done.label, cycles, cycles);
            }
        }
        let oldest = self.live_ids.first().is_none_or(|&oldest| oldest > id);
        if oldest && self.done.is_empty() {
            // Retired in order, the common case: nothing waits, nothing to hold.
            self.feed(id, done);
        } else {
            self.done.insert(id, done);
            self.drain();
        }
        Some(())
    }

    /// The index of lane-0 stage `name` (`None` for a name that is not UTF-8, and past
    /// `u32::MAX` names).
    fn stage_id(&mut self, name: &[u8]) -> Option<u32> {
        if let Some(&id) = self.stage_ids.get(name) {
            return Some(id);
        }
        let text = std::str::from_utf8(name).ok()?;
        let id = u32::try_from(self.stage_names.len()).ok()?;
        self.stage_names.push(text.to_owned());
        self.stage_ids.insert(name.into(), id);
        Some(id)
    }

    /// The range marks of stage `name` in `lane`.
    fn marks(&self, lane: u64, name: &[u8]) -> u8 {
        match &self.options.latency {
            Some(range) if lane == 0 => {
                (u8::from(range.from.as_bytes() == name) * FROM)
                    | (u8::from(range.to.as_bytes() == name) * TO)
            }
            _ => 0,
        }
    }

    /// The record of an instruction that ended (`Some(flushed)`) or reached the end of the
    /// trace (`None`).
    fn record(&self, live: &Live, end: Option<bool>) -> Done {
        let (generic, x86, detects) = konata::konata_kinds(&live.label, self.ordered.classifier());
        let (key, kinds) = key_and_kinds(&live.label);
        Done {
            thread: live.thread,
            flushed: end == Some(true),
            retired: end == Some(false),
            generic,
            x86,
            detects,
            kinds,
            key,
            label: cut(live.label.trim(), MAX_KEY_TEXT).into(),
            stages: None,
        }
    }

    /// Feeds one record to what is computed in op-id order.
    fn feed(&mut self, id: u64, done: Done) {
        self.ordered.feed(
            id,
            done,
            &mut self.tables,
            &mut self.per_thread,
            self.options.capacity,
            &self.stage_names,
        );
    }

    /// Feeds the records that no older instruction holds back.
    fn drain(&mut self) {
        while let Some(entry) = self.done.first_entry() {
            if self
                .live_ids
                .first()
                .is_some_and(|&oldest| oldest < *entry.key())
            {
                break;
            }
            let (id, done) = entry.remove_entry();
            self.feed(id, done);
        }
    }

    /// The analysis of the complete lines read so far: the instructions still in flight
    /// count as Konata counts them at the end of a file (neither retired nor flushed).
    pub fn snapshot(&self) -> Analysis {
        let mut ordered = self.ordered.clone();
        let mut tables = self.tables.clone();
        let mut per_thread = self.per_thread.clone();
        let mut rest: Vec<(u64, Done)> = self
            .done
            .iter()
            .map(|(&id, done)| (id, done.clone()))
            .collect();
        rest.extend(
            self.live
                .iter()
                .map(|(&id, live)| (id, self.record(live, None))),
        );
        rest.sort_unstable_by_key(|(id, _)| *id);
        for (id, done) in rest {
            ordered.feed(
                id,
                done,
                &mut tables,
                &mut per_thread,
                self.options.capacity,
                &self.stage_names,
            );
        }
        ordered.finish(&mut tables, &mut per_thread);

        let cycles = self.cycle as f64;
        let last_id = self.max_id.map_or(-1.0, |id| id as f64);
        let last_rid = self.max_rid.map_or(-1.0, |rid| rid as f64);
        let x86 = ordered.x86_detected;
        let (machine, name) = if x86 {
            (&ordered.x86, konata::X86_GEM5)
        } else {
            (&ordered.generic, konata::GENERIC)
        };
        let konata = machine.values(name, last_id, last_rid, cycles, last_rid / cycles);

        let mut sum = Machine::default();
        for order in ordered.threads.values() {
            sum.add(&order.machine);
        }
        let retired = self.retired as f64;
        let classified = sum.values(
            "mnemonic",
            self.instructions as f64,
            retired,
            cycles,
            retired / cycles,
        );

        let top = self.options.top;
        let latency_of = |t: &Tables| -> Vec<CycleSpot> {
            if self.options.latency.is_none() {
                return Vec::new();
            }
            t.latency.top(top).into_iter().map(cycle_spot).collect()
        };
        let hotspots = Hotspots {
            top,
            capacity: self.options.capacity,
            exact: tables.exact() && per_thread.values().all(Tables::exact),
            latency_stages: self.options.latency.clone(),
            unattributed_flushes: ordered.unattributed,
            flushes: tables
                .flushes
                .top(top)
                .into_iter()
                .map(flush_spot)
                .collect(),
            stalls: tables.stalls.top(top).into_iter().map(cycle_spot).collect(),
            latency: latency_of(&tables),
            threads: per_thread
                .iter()
                .map(|(&thread, t)| ThreadSpots {
                    thread,
                    flushes: t.flushes.top(top).into_iter().map(flush_spot).collect(),
                    stalls: t.stalls.top(top).into_iter().map(cycle_spot).collect(),
                    latency: latency_of(t),
                })
                .collect(),
        };
        let (topdown, topdown_note) = match ordered.breakdown.finish(self.cycle, &self.stage_names)
        {
            Ok(t) => (Some(t), None),
            Err(why) => (None, Some(why)),
        };
        Analysis {
            konata,
            classified,
            hotspots,
            topdown,
            topdown_note,
        }
    }
}

/// Closes an open stage of `live` at cycle `now`.
/// Appends name-label text, as far as [`MAX_LABEL`] bytes.
fn append_label(live: &mut Live, text: &str) {
    if live.label.len() < MAX_LABEL {
        let room = MAX_LABEL - live.label.len();
        live.label.push_str(cut(text, room));
    }
}

fn close(live: &mut Live, (lane, marks, start): (u64, u8, u64), now: u64) {
    if lane == 1 {
        live.stall = live.stall.saturating_add(now.saturating_sub(start));
    }
    if marks & TO != 0 {
        live.to_end = Some(now);
    }
}

/// Text with control characters shown as `?` (a table row stays one line).
pub(crate) fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// Writes the analysis as tables for a terminal: Konata's dialog and the classified counts
/// side by side, then the hot spots.
pub fn write_table(analysis: &Analysis, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    writeln!(
        out,
        "  Konata statistics ({}) and classified (by mnemonic):",
        analysis.konata.classifier
    )?;
    let width = 28;
    for ((name, konata), (_, classified)) in analysis
        .konata
        .fields()
        .into_iter()
        .zip(analysis.classified.fields())
    {
        writeln!(
            out,
            "    {name:<width$}  {:>20}  {:>20}",
            konata::js_number(konata),
            konata::js_number(classified)
        )?;
    }
    writeln!(out)?;
    match (&analysis.topdown, &analysis.topdown_note) {
        (Some(t), _) => {
            let pct = |n: u64| {
                if t.slots > 0 {
                    n as f64 * 100.0 / t.slots as f64
                } else {
                    0.0
                }
            };
            writeln!(
                out,
                "  top-down: {} slots, {} cycles x {} at {} ({}):",
                t.slots,
                t.cycles,
                t.allocation_width,
                printable(&t.allocation_stage),
                if t.detected { "found" } else { "given" }
            )?;
            for (name, n) in [
                ("retiring", t.retiring),
                ("squashed", t.squashed),
                ("recovery bubbles", t.recovery_bubbles),
                ("backend bound", t.backend_bound),
                ("frontend bound", t.frontend_bound),
            ] {
                writeln!(out, "    {name:<16}  {n:>12}  {:>6.2} %", pct(n))?;
            }
        }
        (None, Some(why)) => writeln!(out, "  top-down: none: {}", printable(why))?,
        (None, None) => {}
    }
    let h = &analysis.hotspots;
    let note = if h.exact {
        "exact"
    } else {
        "Space-Saving: see error"
    };
    writeln!(out)?;
    writeln!(out, "  hot spots (top {}, {note}):", h.top)?;
    write_spots(out, "flushes caused", &h.flushes, &h.stalls, &h.latency, h)?;
    for thread in &h.threads {
        if h.threads.len() > 1 {
            writeln!(out, "  thread {}:", thread.thread)?;
            write_spots(
                out,
                "flushes caused",
                &thread.flushes,
                &thread.stalls,
                &thread.latency,
                h,
            )?;
        }
    }
    Ok(())
}

fn write_spots(
    out: &mut dyn std::io::Write,
    title: &str,
    flushes: &[FlushSpot],
    stalls: &[CycleSpot],
    latency: &[CycleSpot],
    h: &Hotspots,
) -> std::io::Result<()> {
    if !flushes.is_empty() {
        writeln!(out, "    {title}: flushes  flushed  longest  instruction")?;
        for f in flushes {
            writeln!(
                out,
                "      {:>7}  {:>7}  {:>7}  {}{}",
                f.flushes,
                f.flushed_insns,
                f.longest,
                spot_name(&f.pc, &f.label),
                if f.error > 0 {
                    format!(" (±{})", f.error)
                } else {
                    String::new()
                }
            )?;
        }
    }
    write_cycles(out, "stalled (lane 1)", stalls)?;
    if let Some(range) = &h.latency_stages {
        write_cycles(out, &format!("latency {range}"), latency)?;
    }
    Ok(())
}

/// The name of a hot spot in a table: its address and its label.
fn spot_name(pc: &Option<String>, label: &str) -> String {
    let label = if label.is_empty() {
        "(no label)".to_owned()
    } else {
        printable(cut(label, 40))
    };
    match pc {
        Some(pc) => format!("{pc:<12} {label}"),
        None => label,
    }
}

fn write_cycles(
    out: &mut dyn std::io::Write,
    title: &str,
    spots: &[CycleSpot],
) -> std::io::Result<()> {
    if spots.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "    {title}: cycles  insns    mean    max  instruction"
    )?;
    for s in spots {
        writeln!(
            out,
            "      {:>7}  {:>5}  {:>6.2}  {:>5}  {}{}",
            s.cycles,
            s.insns,
            s.mean,
            s.max,
            spot_name(&s.pc, &s.label),
            if s.error > 0 {
                format!(" (±{})", s.error)
            } else {
                String::new()
            }
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analyse(text: &str) -> Analysis {
        analyse_with(text, TopDownOptions::default())
    }

    fn analyse_with(text: &str, topdown: TopDownOptions) -> Analysis {
        let mut a = Analyzer::new(AnalysisOptions {
            latency: Some("F..X".parse().unwrap()),
            topdown,
            ..AnalysisOptions::default()
        });
        for line in text.split('\n') {
            a.line(line.as_bytes());
        }
        a.snapshot()
    }

    /// Junk, huge steps and odd orders: no panic, and memory stays bounded.
    #[test]
    fn unexpected_input_never_panics() {
        let text = "Kanata\t0004\nC=\t0\nI\t0\t0\t0\nS\t0\t0\tF\nI\t1\t1\t0\nS\t1\t0\tF\n\
                    C\t9223372036854775000\nS\t1\t0\tQ\nE\t1\t0\tQ\nS\t0\t0\tQ\nR\t1\t0\t0\n\
                    R\t0\t0\t1\nL\t7\t0\tx\nS\t9\t0\tF\nR\t0\t0\t0\nI\t0\t0\t0\nW\t0\t0\t0\n\
                    junk\n\tS\nR\t\t\t\nC\t99999999999999999999\n";
        let a = analyse(text);
        // The second `I 0` (after its `R`) begins another instruction.
        assert_eq!(a.classified.num_fetched_ops, 3.0);
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut junk = String::new();
        for _ in 0..100_000 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let alphabet = b"SEICRLW=\t\t\t\n\n0123456789-Kx\r:FQ b";
            junk.push(alphabet[(seed >> 33) as usize % alphabet.len()] as char);
        }
        let a = analyse(&junk);
        let _ = crate::json::to_line(&a);
        write_table(&a, &mut Vec::new()).unwrap();
    }

    /// A `C` step of a billion cycles while instructions are in flight: the cycles held stay
    /// bounded, the totals count every cycle.
    #[test]
    fn a_huge_gap_is_folded() {
        let mut text = String::from("Kanata\t0004\nC=\t0\n");
        let mut cycles = 0;
        for i in 0..40u64 {
            text.push_str(&format!(
                "I\t{i}\t{i}\t0\nS\t{i}\t0\tF\nC\t1\nS\t{i}\t0\tQ\nC\t{}\nS\t{i}\t0\tX\n",
                1 + i % 3
            ));
            cycles += 2 + i % 3;
            if i == 20 {
                text.push_str("C\t1000000000\n");
                cycles += 1_000_000_000;
            }
        }
        for i in 0..40u64 {
            text.push_str(&format!("R\t{i}\t{i}\t0\n"));
        }
        text.push_str("C\t1\n");
        cycles += 1;
        let a = analyse_with(
            &text,
            TopDownOptions {
                alloc_stage: Some("Q".into()),
                alloc_width: Some(1),
                ..TopDownOptions::default()
            },
        );
        let t = a.topdown.expect("a breakdown");
        assert_eq!(t.cycles, cycles);
        assert_eq!(t.slots, cycles);
        assert_eq!((t.retiring, t.overflow), (40, 0));
        assert_eq!(t.retiring + t.frontend_bound + t.backend_bound, t.slots);
    }
}
