//! Property tests of `kanata-writer`: random call sequences, valid or with misuse mixed in,
//! always give a canonical trace (checked by the independent [`canonical`] checker) and
//! exactly the text a small reference model of the writer predicts; a misused call fails
//! with a misuse error, writes nothing and leaves the writer usable; compressed output
//! decompresses to the plain text and is deterministic; a [`Window`] traces a contiguous
//! run of instructions, each exactly as the unwindowed trace has it.

use std::collections::BTreeMap;
use std::io::Read;

use kanata_tests::canonical::{self, Options};
use kanata_writer::{
    Compression, DepKind, ErrorKind, InsnId, LabelKind, Lane, Stage, Window, Writer, WriterBuilder,
};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::FileFailurePersistence;

/// Valid stage names, some of them sharing a lane with `stl` and some with an `X`.
const GOOD_STAGES: &[&str] = &[
    "F",
    "D",
    "X",
    "EX",
    "Xmiss",
    "Issue Q",
    "メモリ",
    "stl",
    "a.b",
    // The longest name the writer pre-renders a line tail for, and one byte more.
    "twenty-eight bytes: it fits.",
    "twenty-nine: no tail for me..",
];
/// Names `Writer::stage` must refuse.
const BAD_STAGES: &[&str] = &[
    "",
    " F",
    "F ",
    "a\tb",
    "a\nb",
    "a\rb",
    "\u{3000}X",
    "X\u{a0}",
];

/// One call on the writer. Instructions are picked at run time among those the sequence has
/// begun, so that every generated sequence can be run.
#[derive(Clone, Debug)]
enum Op {
    Advance(u64),
    /// `set_cycle(current + delta)`; a negative delta is misuse.
    SetCycle(i64),
    Begin {
        sim: u64,
        thread: u32,
    },
    Label {
        insn: Index,
        kind: u8,
        text: String,
    },
    LabelFmt {
        insn: Index,
        kind: u8,
        n: i32,
        text: String,
    },
    /// `stage` indexes `GOOD_STAGES` then `BAD_STAGES`.
    Enter {
        insn: Index,
        lane: u32,
        stage: usize,
    },
    Leave {
        insn: Index,
        lane: u32,
    },
    StallBegin(Index),
    StallEnd(Index),
    Retire(Index),
    Flush(Index),
    Depend {
        consumer: Index,
        producer: Index,
        kind: u32,
    },
}

fn label_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("\n".to_owned()),
        Just("\r".to_owned()),
        Just("\t".to_owned()),
        Just("\r\n".to_owned()),
        Just("\\n literal".to_owned()),
        "[ a-c\t\r\n]{0,8}",
        // Around the writer's fast-path limit for label text.
        "[a-z]{250,260}",
        "[\\PC\t\r\n]{0,12}",
        any::<String>().prop_map(|s| s.chars().take(16).collect()),
    ]
}

fn op(misuse: bool) -> impl Strategy<Value = Op> {
    let stages = if misuse {
        GOOD_STAGES.len() + BAD_STAGES.len()
    } else {
        GOOD_STAGES.len()
    };
    let back = if misuse { -3i64 } else { 0 };
    prop_oneof![
        3 => (0u64..3).prop_map(Op::Advance),
        1 => (back..5).prop_map(Op::SetCycle),
        4 => (any::<u64>(), 0u32..2).prop_map(|(sim, thread)| Op::Begin { sim, thread }),
        3 => (any::<Index>(), 0u8..3, label_text())
            .prop_map(|(insn, kind, text)| Op::Label { insn, kind, text }),
        1 => (any::<Index>(), 0u8..3, any::<i32>(), label_text())
            .prop_map(|(insn, kind, n, text)| Op::LabelFmt { insn, kind, n, text }),
        5 => (any::<Index>(), prop_oneof![8 => 0u32..3, 1 => 9u32..12], 0..stages)
            .prop_map(|(insn, lane, stage)| Op::Enter { insn, lane, stage }),
        2 => (any::<Index>(), prop_oneof![8 => 0u32..3, 1 => 9u32..12])
            .prop_map(|(insn, lane)| Op::Leave { insn, lane }),
        1 => any::<Index>().prop_map(Op::StallBegin),
        1 => any::<Index>().prop_map(Op::StallEnd),
        2 => any::<Index>().prop_map(Op::Retire),
        1 => any::<Index>().prop_map(Op::Flush),
        2 => (any::<Index>(), any::<Index>(), prop_oneof![Just(0u32), 1u32..9])
            .prop_map(|(consumer, producer, kind)| Op::Depend { consumer, producer, kind }),
    ]
}

fn ops(misuse: bool) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(misuse), 0..200)
}

fn label_kind(kind: u8) -> LabelKind {
    match kind {
        0 => LabelKind::Name,
        1 => LabelKind::Detail,
        _ => LabelKind::StageNote,
    }
}

fn stage_name(index: usize) -> &'static str {
    GOOD_STAGES
        .get(index)
        .copied()
        .unwrap_or_else(|| BAD_STAGES[index - GOOD_STAGES.len()])
}

/// The label text as the writer must escape it: LF → `\n`, CR dropped, TAB → space.
fn escape(text: &str) -> String {
    text.replace('\r', "")
        .replace('\n', "\\n")
        .replace('\t', " ")
}

/// What a misused call must fail with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Misuse {
    TimeWentBack,
    NotLive,
    NoOpenStage,
    NoteBeforeStage,
    ProducerNotOlder,
    InvalidStageName,
}

fn misuse_of(kind: &ErrorKind) -> Option<Misuse> {
    Some(match kind {
        ErrorKind::TimeWentBack { .. } => Misuse::TimeWentBack,
        ErrorKind::NotLive { .. } => Misuse::NotLive,
        ErrorKind::NoOpenStage { .. } => Misuse::NoOpenStage,
        ErrorKind::NoteBeforeStage { .. } => Misuse::NoteBeforeStage,
        ErrorKind::ProducerNotOlder { .. } => Misuse::ProducerNotOlder,
        ErrorKind::InvalidStageName { .. } => Misuse::InvalidStageName,
        _ => return None,
    })
}

#[derive(Debug, Default)]
struct ModelInsn {
    live: bool,
    entered: bool,
    open: BTreeMap<u32, String>,
    /// Once ended: the index of its `R` line and the cycle of it.
    end: Option<(usize, i64)>,
}

/// A reference model of the writer (no window): liveness, open stages, and the exact lines.
#[derive(Debug)]
struct Model {
    compact: bool,
    /// `WriterBuilder::late_labels`.
    late: u64,
    cycle: i64,
    written: i64,
    insns: Vec<ModelInsn>,
    next_retire_id: u64,
    retired: u64,
    flushed: u64,
    lines: Vec<String>,
}

impl Model {
    fn new(setup: &Setup) -> Model {
        Model {
            compact: setup.compact,
            late: setup.late,
            cycle: setup.start,
            written: setup.start,
            insns: Vec::new(),
            next_retire_id: 0,
            retired: 0,
            flushed: 0,
            lines: vec!["Kanata\t0004".into(), format!("C=\t{}", setup.start)],
        }
    }

    fn text(&self) -> String {
        self.lines.iter().map(|l| format!("{l}\n")).collect()
    }

    fn push(&mut self, line: String) {
        self.lines.push(line);
    }

    fn sync(&mut self) {
        if self.cycle != self.written {
            self.push(format!("C\t{}", self.cycle - self.written));
            self.written = self.cycle;
        }
    }

    fn live(&self, id: usize) -> Result<&ModelInsn, Misuse> {
        let insn = &self.insns[id];
        if insn.live {
            Ok(insn)
        } else {
            Err(Misuse::NotLive)
        }
    }

    fn set_cycle(&mut self, to: i64) -> Result<(), Misuse> {
        if to < self.cycle {
            return Err(Misuse::TimeWentBack);
        }
        self.cycle = to;
        Ok(())
    }

    fn begin(&mut self, sim: u64, thread: u32) {
        self.sync();
        let id = self.insns.len();
        self.push(format!("I\t{id}\t{sim}\t{thread}"));
        self.insns.push(ModelInsn {
            live: true,
            ..ModelInsn::default()
        });
    }

    fn label(&mut self, id: usize, kind: u8, text: &str) -> Result<(), Misuse> {
        let insn = &self.insns[id];
        // A late label: accepted up to `late` cycles after the end, placed before the `R`.
        let late_at = match insn.end {
            Some((at, cycle)) if self.late > 0 && self.cycle - cycle <= self.late as i64 => {
                Some(at)
            }
            Some(_) => return Err(Misuse::NotLive),
            None => None,
        };
        if kind == 2 && !insn.entered {
            return Err(Misuse::NoteBeforeStage);
        }
        let text = escape(text);
        if text.is_empty() {
            return Ok(());
        }
        let line = format!("L\t{id}\t{kind}\t{text}");
        match late_at {
            None => {
                self.sync();
                self.push(line);
            }
            Some(at) => {
                self.lines.insert(at, line);
                for insn in &mut self.insns {
                    if let Some((r, _)) = &mut insn.end {
                        if *r >= at {
                            *r += 1;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn enter(&mut self, id: usize, lane: u32, stage: &str) -> Result<(), Misuse> {
        self.live(id)?;
        if BAD_STAGES.contains(&stage) {
            return Err(Misuse::InvalidStageName);
        }
        self.sync();
        let insn = &mut self.insns[id];
        insn.entered = true;
        let previous = insn.open.insert(lane, stage.to_owned());
        if let (Some(previous), false) = (previous, self.compact) {
            self.push(format!("E\t{id}\t{lane}\t{previous}"));
        }
        self.push(format!("S\t{id}\t{lane}\t{stage}"));
        Ok(())
    }

    fn leave(&mut self, id: usize, lane: u32) -> Result<(), Misuse> {
        self.live(id)?;
        let Some(stage) = self.insns[id].open.remove(&lane) else {
            return Err(Misuse::NoOpenStage);
        };
        self.sync();
        self.push(format!("E\t{id}\t{lane}\t{stage}"));
        Ok(())
    }

    fn end(&mut self, id: usize, flushed: bool) -> Result<Option<u64>, Misuse> {
        self.live(id)?;
        self.sync();
        let open = std::mem::take(&mut self.insns[id].open);
        if !self.compact {
            for (lane, stage) in open {
                self.push(format!("E\t{id}\t{lane}\t{stage}"));
            }
        }
        let insn = &mut self.insns[id];
        insn.live = false;
        insn.end = Some((self.lines.len(), self.cycle));
        if flushed {
            self.flushed += 1;
            self.push(format!("R\t{id}\t0\t1"));
            Ok(None)
        } else {
            let rid = self.next_retire_id;
            self.next_retire_id += 1;
            self.retired += 1;
            self.push(format!("R\t{id}\t{rid}\t0"));
            Ok(Some(rid))
        }
    }

    fn depend(&mut self, consumer: usize, producer: usize, kind: u32) -> Result<(), Misuse> {
        self.live(consumer)?;
        if producer >= consumer {
            return Err(Misuse::ProducerNotOlder);
        }
        self.sync();
        self.push(format!("W\t{consumer}\t{producer}\t{kind}"));
        Ok(())
    }

    fn live_ids(&self) -> Vec<usize> {
        (0..self.insns.len())
            .filter(|&id| self.insns[id].live)
            .collect()
    }
}

/// What the model expects of a call, and what the writer returned (`None` when the
/// call cannot fail).
type Step = (Result<(), Misuse>, Option<kanata_writer::Result<()>>);

/// Picks an instruction: among the live ones when `valid`, else among all begun so far.
fn pick(model: &Model, index: &Index, valid: bool) -> Option<usize> {
    pick_any(model, index, !valid)
}

/// Picks among all instructions begun so far when `any`, else among the live ones.
fn pick_any(model: &Model, index: &Index, any: bool) -> Option<usize> {
    if !any {
        let live = model.live_ids();
        (!live.is_empty()).then(|| live[index.index(live.len())])
    } else {
        (!model.insns.is_empty()).then(|| index.index(model.insns.len()))
    }
}

/// Runs `ops` on `w` and the model side by side. With `valid`, calls the model says are
/// misuse are skipped; without, they are made and must fail with that misuse, write nothing
/// and leave the writer usable. With `windowed` (and `valid`), the writer has a window: the
/// model still picks the calls, which must all succeed, but ids and liveness are not
/// compared. Returns how many misused calls were made.
fn run<W: std::io::Write>(
    w: &mut Writer<W>,
    model: &mut Model,
    ids: &mut Vec<InsnId>,
    ops: &[Op],
    valid: bool,
    windowed: bool,
) -> usize {
    let mut misused = 0;
    for (step, op) in ops.iter().enumerate() {
        // What the model says, and what the writer did.
        let (expected, got): Step = match op {
            Op::Advance(n) => {
                model.cycle += *n as i64;
                (Ok(()), Some(w.advance(*n)))
            }
            Op::SetCycle(delta) => {
                // `set_cycle` takes an absolute, non-negative cycle.
                // Forward to a negative cycle (from a negative start) cannot be asked; going
                // back below 0 asks for cycle 0.
                let to = model.cycle + delta;
                if to < 0 && *delta >= 0 {
                    continue;
                }
                let to = to.max(0);
                let expected = model.set_cycle(to);
                if valid && expected.is_err() {
                    continue;
                }
                (expected, Some(w.set_cycle(to as u64)))
            }
            Op::Begin { sim, thread } => {
                model.begin(*sim, *thread);
                let id = w.begin(*sim, *thread).expect("begin");
                if !windowed {
                    assert_eq!(id.file_id(), Some(ids.len() as u64), "dense ids");
                }
                ids.push(id);
                (Ok(()), None)
            }
            Op::Label { insn, kind, text } => {
                let Some(id) = pick_any(model, insn, !valid || model.late > 0) else {
                    continue;
                };
                let expected = model.label(id, *kind, text);
                if valid && expected.is_err() {
                    continue;
                }
                (expected, Some(w.label(ids[id], label_kind(*kind), text)))
            }
            Op::LabelFmt {
                insn,
                kind,
                n,
                text,
            } => {
                let Some(id) = pick_any(model, insn, !valid || model.late > 0) else {
                    continue;
                };
                let formatted = format!("{n}:{text}|{n:x}");
                let expected = model.label(id, *kind, &formatted);
                if valid && expected.is_err() {
                    continue;
                }
                let args = format_args!("{n}:{text}|{n:x}");
                (
                    expected,
                    Some(w.label_fmt(ids[id], label_kind(*kind), args)),
                )
            }
            Op::Enter { insn, lane, stage } => {
                let Some(id) = pick(model, insn, valid) else {
                    continue;
                };
                let name = stage_name(*stage);
                let expected = model.enter(id, *lane, name);
                if valid && expected.is_err() {
                    continue;
                }
                // A dead instruction is refused whatever the stage; a bad name is refused by
                // `stage` before `enter` is called.
                let got = match w.stage(name) {
                    Ok(stage) => w.enter(ids[id], Lane::new(*lane), stage),
                    Err(err) if expected == Err(Misuse::NotLive) => {
                        assert!(matches!(err.kind(), ErrorKind::InvalidStageName { .. }));
                        w.enter(ids[id], Lane::MAIN, Stage::STALL)
                    }
                    Err(err) => Err(err),
                };
                (expected, Some(got))
            }
            Op::Leave { insn, lane } => {
                let Some(id) = pick(model, insn, valid) else {
                    continue;
                };
                let expected = model.leave(id, *lane);
                if valid && expected.is_err() {
                    continue;
                }
                (expected, Some(w.leave(ids[id], Lane::new(*lane))))
            }
            Op::StallBegin(insn) => {
                let Some(id) = pick(model, insn, valid) else {
                    continue;
                };
                let expected = model.enter(id, 1, "stl");
                if valid && expected.is_err() {
                    continue;
                }
                (expected, Some(w.stall_begin(ids[id])))
            }
            Op::StallEnd(insn) => {
                let Some(id) = pick(model, insn, valid) else {
                    continue;
                };
                let expected = model.leave(id, 1);
                if valid && expected.is_err() {
                    continue;
                }
                (expected, Some(w.stall_end(ids[id])))
            }
            Op::Retire(insn) => {
                let Some(id) = pick(model, insn, valid) else {
                    continue;
                };
                let expected = model.end(id, false);
                if valid && expected.is_err() {
                    continue;
                }
                let got = w.retire(ids[id]);
                if let (Ok(rid), Ok(got_rid), false) = (&expected, &got, windowed) {
                    assert_eq!(rid, got_rid, "retire id of step {step}");
                }
                (expected.map(drop), Some(got.map(drop)))
            }
            Op::Flush(insn) => {
                let Some(id) = pick(model, insn, valid) else {
                    continue;
                };
                let expected = model.end(id, true);
                if valid && expected.is_err() {
                    continue;
                }
                (expected.map(drop), Some(w.flush(ids[id])))
            }
            Op::Depend {
                consumer,
                producer,
                kind,
            } => {
                let Some(consumer) = pick(model, consumer, valid) else {
                    continue;
                };
                let producer = if valid {
                    if consumer == 0 {
                        continue;
                    }
                    producer.index(consumer)
                } else {
                    producer.index(model.insns.len())
                };
                let expected = model.depend(consumer, producer, *kind);
                if valid && expected.is_err() {
                    continue;
                }
                let got = w.depend(ids[consumer], ids[producer], DepKind::new(*kind));
                (expected, Some(got))
            }
        };
        if let Some(got) = got {
            match (expected, got) {
                (Ok(()), Ok(())) => {}
                (Err(misuse), Err(err)) => {
                    misused += 1;
                    assert!(
                        err.is_misuse(),
                        "step {step} {op:?}: {err:?} is not a misuse"
                    );
                    assert_eq!(
                        misuse_of(err.kind()),
                        Some(misuse),
                        "step {step} {op:?}: wrong error {err:?}"
                    );
                }
                (expected, got) => {
                    panic!("step {step} {op:?}: model says {expected:?}, writer says {got:?}")
                }
            }
        }
        assert_eq!(w.cycle(), model.cycle, "cycle after step {step} {op:?}");
    }
    if !windowed {
        for (id, insn) in model.insns.iter().enumerate() {
            assert_eq!(w.is_live(ids[id]), insn.live, "liveness of {id}");
        }
    }
    misused
}

/// How a writer is built for a run.
#[derive(Clone, Debug, Default)]
struct Setup {
    compact: bool,
    start: i64,
    /// `WriterBuilder::late_labels`.
    late: u64,
    /// A 1 KiB buffer (many spills) instead of the default.
    small_buffer: bool,
    window: Option<Window>,
    compression: Compression,
    background: bool,
    /// `WriterBuilder::discard`.
    discard: bool,
}

impl Setup {
    fn builder(&self) -> WriterBuilder {
        let mut builder = WriterBuilder::new();
        builder
            .compact(self.compact)
            .start_cycle(self.start)
            .compression(self.compression)
            .background(self.background)
            .discard(self.discard);
        // The model's `late == 0` means "no hold-back" (the builder's default).
        if self.late > 0 {
            builder.late_labels(self.late);
        }
        if self.small_buffer {
            builder.buffer_size(1024);
        }
        if let Some(window) = &self.window {
            builder.window(window.clone());
        }
        builder
    }
}

/// What a run gave.
struct Outcome {
    /// The output bytes (compressed if the setup says so).
    output: Vec<u8>,
    summary: kanata_writer::Summary,
    model: Model,
    ids: Vec<InsnId>,
    misused: usize,
}

/// Runs `ops` (valid ones only when `valid`) on a writer built from `setup`.
fn run_setup(ops: &[Op], valid: bool, setup: &Setup) -> Outcome {
    let mut w = setup.builder().from_writer(Vec::new()).expect("writer");
    let mut model = Model::new(setup);
    let mut ids = Vec::new();
    let misused = run(
        &mut w,
        &mut model,
        &mut ids,
        ops,
        valid,
        setup.window.is_some(),
    );
    let finished = w.finish().expect("finish");
    model.sync();
    Outcome {
        output: finished.output,
        summary: finished.summary,
        model,
        ids,
        misused,
    }
}

/// The checks common to every unwindowed plain run: canonical, exactly the model's text, the
/// summary matches the checker's stats, retire ids serial.
fn check_outcome(outcome: &Outcome, compact: bool) {
    let text = &outcome.output;
    let options = if compact {
        Options::COMPACT
    } else {
        Options::STRICT
    };
    let stats = canonical::assert_canonical(text, options);
    if compact {
        // Compact output differs from the explicit form only by the implied `E`s.
        if let Err(violations) = canonical::check(text) {
            assert!(violations.iter().all(|v| v.rule == "4.5"), "{violations:?}");
        }
    }
    assert_eq!(
        String::from_utf8_lossy(text),
        outcome.model.text(),
        "writer output differs from the model"
    );
    assert_summary(&outcome.summary, &stats, text);
    assert_eq!(outcome.summary.retired, outcome.model.retired);
    assert_eq!(outcome.summary.flushed, outcome.model.flushed);
    assert_serial(&stats);
}

fn assert_serial(stats: &canonical::Stats) {
    let serial: Vec<i128> = (0..i128::from(stats.retired)).collect();
    assert_eq!(stats.retire_ids, serial, "retire ids serial from 0");
}

fn assert_summary(summary: &kanata_writer::Summary, stats: &canonical::Stats, text: &[u8]) {
    assert_eq!(summary.instructions, stats.instructions, "instructions");
    assert_eq!(summary.retired, stats.retired, "retired");
    assert_eq!(summary.flushed, stats.flushed, "flushed");
    assert_eq!(summary.left_open, stats.open_at_end, "left open");
    assert_eq!(summary.last_cycle, stats.last_cycle, "last cycle");
    assert_eq!(summary.text_bytes, text.len() as u64, "text bytes");
}

/// A decompressor of whole outputs.
type Decompress = fn(&[u8]) -> Vec<u8>;

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("gunzip");
    out
}

fn unzstd(bytes: &[u8]) -> Vec<u8> {
    zstd::stream::decode_all(bytes).expect("unzstd")
}

/// Splits a trace into each instruction's commands, with the absolute cycle of each and the
/// instruction's own id left out (retire ids too, since a window renumbers them); `W` lines
/// keep the producer, shifted by `-offset`.
fn per_insn(text: &[u8], offset: u64) -> BTreeMap<u64, Vec<(i64, String)>> {
    let text = std::str::from_utf8(text).unwrap();
    let mut cycle = 0i64;
    let mut out: BTreeMap<u64, Vec<(i64, String)>> = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        match fields[0] {
            "Kanata" => {}
            "C=" => cycle = fields[1].parse().unwrap(),
            "C" => cycle += fields[1].parse::<i64>().unwrap(),
            cmd => {
                let id: u64 = fields[1].parse().unwrap();
                let rest = match cmd {
                    "R" => format!("R {}", fields[3]),
                    "W" => {
                        let producer: u64 = fields[2].parse().unwrap();
                        format!("W {} {}", producer.wrapping_sub(offset), fields[3])
                    }
                    "I" => format!("I {}", fields[2..].join(" ")),
                    _ => format!("{cmd} {}", fields[2..].join("\t")),
                };
                out.entry(id).or_default().push((cycle, rest));
            }
        }
    }
    out
}

fn window() -> impl Strategy<Value = Window> {
    (
        0u64..4,
        prop::option::of(0u64..8),
        prop::option::of((0u64..30, 0u64..30)),
    )
        .prop_map(|(skip, limit, cycles)| {
            let mut window = Window::default().skip_retired(skip);
            if let Some(limit) = limit {
                window = window.retired_limit(limit);
            }
            if let Some((a, len)) = cycles {
                window = window.cycles(a..a + len);
            }
            window
        })
}

fn late() -> impl Strategy<Value = u64> {
    prop_oneof![2 => Just(0u64), 1 => 1u64..4, 1 => Just(64u64)]
}

/// Where proptest keeps the seeds of failures: `tests/proptest-regressions/`.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/writer_properties.txt",
        ))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Valid calls always give the model's exact, canonical text, in both forms, from any
    /// non-negative start cycle, with or without late labels and with small buffers; the
    /// summary matches the checker's stats.
    #[test]
    fn valid_sequences_give_canonical_output(
        ops in ops(false),
        compact in any::<bool>(),
        start in prop_oneof![Just(0i64), 0i64..5, Just(1i64 << 40)],
        late in late(),
        small_buffer in any::<bool>(),
    ) {
        let setup = Setup { compact, start, late, small_buffer, ..Setup::default() };
        check_outcome(&run_setup(&ops, true, &setup), compact);
    }

    /// The same from a negative start cycle (RSD starts at `C=\t-1`): instructions begun
    /// before cycle 0 are traced and the header says the start cycle.
    ///
    /// (Was a writer bug: the default window did not open before cycle 0.)
    #[test]
    fn valid_sequences_from_a_negative_start_give_canonical_output(
        ops in ops(false),
        compact in any::<bool>(),
        start in -5i64..0,
    ) {
        let setup = Setup { compact, start, ..Setup::default() };
        check_outcome(&run_setup(&ops, true, &setup), compact);
    }

    /// Misused calls fail with exactly the misuse the model predicts (and only they fail),
    /// write nothing, and leave the writer going: the output is still canonical and exactly
    /// the model's text. Late labels within the hold-back are not misuse; older ones are.
    #[test]
    fn misuse_is_refused_and_leaves_the_output_canonical(
        ops in ops(true),
        compact in any::<bool>(),
        late in late(),
        small_buffer in any::<bool>(),
    ) {
        let setup = Setup { compact, late, small_buffer, ..Setup::default() };
        let outcome = run_setup(&ops, false, &setup);
        check_outcome(&outcome, compact);
        prop_assert!(outcome.misused <= ops.len());
    }

    /// With a window, every call of a valid sequence succeeds, the traced instructions are a
    /// contiguous run of those begun, each written exactly as the unwindowed trace writes it
    /// (same commands at the same cycles), and the output is canonical.
    #[test]
    fn a_window_traces_whole_instructions_exactly(
        ops in ops(false),
        window in window(),
    ) {
        let full = run_setup(&ops, true, &Setup::default()).output;
        let setup = Setup { window: Some(window), ..Setup::default() };
        let outcome = run_setup(&ops, true, &setup);
        let (text, ids) = (&outcome.output, &outcome.ids);
        let stats = canonical::assert_canonical(text, Options::STRICT);
        assert_summary(&outcome.summary, &stats, text);
        assert_serial(&stats);
        let traced: Vec<usize> = (0..ids.len()).filter(|&i| ids[i].is_traced()).collect();
        if let (Some(&first), Some(&last)) = (traced.first(), traced.last()) {
            prop_assert_eq!(traced.len(), last - first + 1, "traced run not contiguous");
            for (offset, &i) in traced.iter().enumerate() {
                prop_assert_eq!(ids[i].file_id(), Some(offset as u64));
            }
            let want = per_insn(&full, 0);
            let got = per_insn(text, 0);
            for &i in &traced {
                let mut expected = want.get(&(i as u64)).cloned().unwrap_or_default();
                // Arrows from instructions before the window are dropped; the others name the
                // producer by its id in the windowed file.
                expected.retain(|(_, cmd)| {
                    !cmd.starts_with("W ")
                        || cmd.split(' ').nth(1).unwrap().parse::<usize>().unwrap() >= first
                });
                for (_, cmd) in expected.iter_mut() {
                    if let Some(rest) = cmd.strip_prefix("W ") {
                        let mut parts = rest.split(' ');
                        let producer: usize = parts.next().unwrap().parse().unwrap();
                        *cmd = format!("W {} {}", producer - first, parts.next().unwrap());
                    }
                }
                let got = got.get(&((i - first) as u64)).cloned().unwrap_or_default();
                prop_assert_eq!(got, expected, "instruction {} (file id {})", i, i - first);
            }
        } else {
            prop_assert_eq!(stats.instructions, 0);
        }
    }
}

/// Runs `ops` with `setup` and again with `discard` on: the discarding run must make the same
/// calls fail with the same misuse (both runs are checked against the model), mint the same
/// ids and retire ids, give the same summary but for `text_bytes` (0), and write nothing.
fn check_discard_matches(ops: &[Op], valid: bool, setup: &Setup) {
    let kept = run_setup(ops, valid, setup);
    let discarded = run_setup(
        ops,
        valid,
        &Setup {
            discard: true,
            ..setup.clone()
        },
    );
    assert!(
        discarded.output.is_empty(),
        "a discarding writer wrote output"
    );
    assert_eq!(discarded.ids, kept.ids, "ids");
    assert_eq!(discarded.misused, kept.misused, "misused calls");
    assert_eq!(discarded.summary.text_bytes, 0, "text bytes");
    if setup.compression == Compression::None {
        let lines = kept.output.iter().filter(|&&b| b == b'\n').count() as u64;
        assert_eq!(kept.summary.lines, lines, "lines written");
    }
    let mut summary = kept.summary;
    summary.text_bytes = 0;
    assert_eq!(discarded.summary, summary, "summary");
}

proptest! {
    #![proptest_config(config(128))]

    /// A discarding writer checks every call as the writing one does, with misuse mixed in,
    /// late labels, either form, any compression: same errors, ids, retire ids and counts.
    #[test]
    fn discard_checks_everything_and_writes_nothing(
        ops in ops(true),
        compact in any::<bool>(),
        start in prop_oneof![Just(0i64), -3i64..5],
        late in late(),
        small_buffer in any::<bool>(),
        compression in prop_oneof![
            3 => Just(Compression::None),
            1 => Just(Compression::Gzip),
            1 => Just(Compression::Zstd),
        ],
        background in any::<bool>(),
    ) {
        let setup = Setup {
            compact, start, late, small_buffer, compression, background, ..Setup::default()
        };
        check_discard_matches(&ops, false, &setup);
    }

    /// The same with a window: the same instructions are traced, with the same ids.
    #[test]
    fn discard_with_a_window_traces_the_same_instructions(
        ops in ops(false),
        window in window(),
        late in late(),
    ) {
        let setup = Setup { window: Some(window), late, ..Setup::default() };
        check_discard_matches(&ops, true, &setup);
    }
}

proptest! {
    #![proptest_config(config(48))]

    /// gzip and zstd output, inline or on a background thread, with late labels held back
    /// or not, decompresses to the plain text and is the same bytes every time. (That the
    /// buffer size changes nothing either is `writer_api::buffer_size_changes_no_output_byte`.)
    #[test]
    fn compressed_output_is_the_plain_text_and_deterministic(
        ops in ops(false),
        zstd in any::<bool>(),
        late in late(),
        small_buffer in any::<bool>(),
    ) {
        let plain_setup = Setup { late, ..Setup::default() };
        let plain = run_setup(&ops, true, &plain_setup).output;
        let (compression, decompress): (Compression, Decompress) = if zstd {
            (Compression::Zstd, unzstd)
        } else {
            (Compression::Gzip, gunzip)
        };
        let setup = Setup { late, small_buffer, compression, ..Setup::default() };
        let first = run_setup(&ops, true, &setup).output;
        prop_assert_eq!(decompress(&first), plain);
        prop_assert!(first == run_setup(&ops, true, &setup).output, "second run differs");
        let background = Setup { background: true, ..setup };
        prop_assert!(first == run_setup(&ops, true, &background).output, "background differs");
    }
}
