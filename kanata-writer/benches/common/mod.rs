//! What both benchmark targets share: the event stream, and one replay of it per writer.
//!
//! The stream is generated once, deterministically, by a small cycle-by-cycle model of an
//! out-of-order core (4-wide fetch and retire, six stages, a 96-entry window, variable
//! execute latency, stalls, wake-up dependencies and branch mispredictions that flush the
//! younger instructions). Every replay walks the same `&[Event]` and makes the calls a
//! simulator would make on its writer; one event is one call on `kanata_writer::Writer`.
//!
//! The events carry what a writer without state needs (the stage an `Enter` closes, the
//! stages open at `Retire`/`Flush`), so that the naive baseline and kiseki can write the same
//! canonical lines as kanata-writer without tracking anything: the output of the naive
//! replay is checked to be byte-identical to kanata-writer's (see [`Bench::verify`]).

// Each benchmark target uses its own part of this module.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use kanata_writer::{Compression, DepKind, InsnId, LabelKind, Lane, Stage, Writer, WriterBuilder};

/// Stage names, lane 0, in pipeline order.
pub const STAGES: [&str; 6] = ["F", "Dc", "Rn", "Is", "X", "Cm"];
const ISSUE: u8 = 3;
const EXEC: u8 = 4;
const COMMIT: u8 = 5;
/// "No stage" in [`Event::Enter::prev`] and [`Event::Flush::open`].
pub const NONE: u8 = u8::MAX;

/// Label texts: 32 disassembly lines (type 0), 16 register details (type 1), 4 stage notes
/// (type 2).
pub const TEXTS: [&str; 52] = [
    "0x80001a00: addi a0, a0, 1",
    "0x80001a04: lw a1, 8(sp)",
    "0x80001a08: add a2, a0, a1",
    "0x80001a0c: sw a2, 16(sp)",
    "0x80001a10: bne a2, a3, 0x80001a00",
    "0x80001a14: slli t0, a2, 3",
    "0x80001a18: ld t1, 0(t0)",
    "0x80001a1c: mul t2, t1, a0",
    "0x80001a20: fadd.d ft0, ft1, ft2",
    "0x80001a24: auipc ra, 0x2",
    "0x80001a28: jalr ra, 1352(ra)",
    "0x80001a2c: xor s0, s0, t2",
    "0x80001a30: andi s1, s0, 255",
    "0x80001a34: beq s1, zero, 0x80001a50",
    "0x80001a38: lui a5, 0x10010",
    "0x80001a3c: sd a5, 24(sp)",
    "0x80001a40: addi sp, sp, -32",
    "0x80001a44: or a4, a4, a5",
    "0x80001a48: srai a3, a4, 2",
    "0x80001a4c: lbu a6, 0(a0)",
    "0x80001a50: sub a7, a6, a3",
    "0x80001a54: div t3, a7, a1",
    "0x80001a58: fld fa0, 8(a0)",
    "0x80001a5c: fmul.d fa1, fa0, fa0",
    "0x80001a60: csrr t4, mcycle",
    "0x80001a64: amoadd.w t5, t4, (a0)",
    "0x80001a68: sltu t6, t5, t4",
    "0x80001a6c: blt t6, zero, 0x80001a00",
    "0x80001a70: mv a0, s0",
    "0x80001a74: ret",
    "0x80001a78: nop",
    "0x80001a7c: ecall",
    "a0 = 0x0000000080001a28",
    "a1 = 0x0000000000000007",
    "a2 = 0x000000008000fa30",
    "t0 = 0x0000000000000040",
    "t1 = 0xffffffffffffffff",
    "t2 = 0x0000000000001000",
    "s0 = 0x00000000deadbeef",
    "s1 = 0x00000000000000ef",
    "a5 = 0x0000000010010000",
    "sp = 0x000000008001ffe0",
    "a4 = 0x0000000010010001",
    "a3 = 0x0000000004004000",
    "a6 = 0x0000000000000041",
    "a7 = 0xfffffffffbffc041",
    "fa0 = 1.5",
    "fa1 = 2.25",
    "L1D hit",
    "L1D miss",
    "ALU port 1",
    "MUL port 0",
];
const DETAILS: std::ops::Range<u16> = 32..48;
const NOTES: std::ops::Range<u16> = 48..52;

/// One call on the writer, as a simulator makes it. Lane 0 unless said otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Time moves forward `n` cycles (always followed by another event).
    Advance(u32),
    /// A new instruction, with the simulator's id (thread 0).
    Begin {
        /// The simulator's own id.
        sim: u32,
    },
    /// A label: `kind` 0, 1 or 2 and an index into [`TEXTS`].
    Label {
        /// Index of the instruction (= its file id).
        insn: u32,
        /// Label type 0, 1 or 2.
        kind: u8,
        /// Index into [`TEXTS`].
        text: u16,
    },
    /// Enter `stage` in lane 0; `prev` is the stage that this closes, or [`NONE`].
    Enter {
        /// Index of the instruction.
        insn: u32,
        /// Index into [`STAGES`].
        stage: u8,
        /// The stage open in lane 0 before, or [`NONE`].
        prev: u8,
    },
    /// Leave `stage`, the open stage of lane 0.
    Leave {
        /// Index of the instruction.
        insn: u32,
        /// Index into [`STAGES`].
        stage: u8,
    },
    /// `stl` opens in lane 1.
    StallBegin(u32),
    /// `stl` closes in lane 1.
    StallEnd(u32),
    /// Retirement; `open` is the stage still open in lane 0 (the writer closes it).
    Retire {
        /// Index of the instruction.
        insn: u32,
        /// The stage open in lane 0, or [`NONE`].
        open: u8,
    },
    /// Flush; `open` is the stage still open in lane 0, `stalled` whether lane 1 is open.
    Flush {
        /// Index of the instruction.
        insn: u32,
        /// The stage open in lane 0, or [`NONE`].
        open: u8,
        /// Whether `stl` is open in lane 1.
        stalled: bool,
    },
    /// A wake-up arrow from an older producer.
    Depend {
        /// Index of the consumer.
        consumer: u32,
        /// Index of the producer (older).
        producer: u32,
    },
}

/// splitmix64: small, fast and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True with probability `per_mille` / 1000.
    fn chance(&mut self, per_mille: u64) -> bool {
        self.next() % 1000 < per_mille
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// An instruction in flight in the model.
struct InFlight {
    idx: u32,
    /// Open stage in lane 0, or [`NONE`] between `X` and `Cm` after a `Leave`.
    stage: u8,
    /// Cycles left in the current stage (or in the gap).
    left: u32,
    /// Stall cycles left; `stl` is open in lane 1 while > 0.
    stall: u32,
    done: bool,
    mispredict: bool,
}

/// Builds the stream; each event goes after the `Advance` that brings time to its cycle.
struct Gen {
    rng: Rng,
    events: Vec<Event>,
    idle: u32,
}

impl Gen {
    fn push(&mut self, event: Event) {
        if self.idle > 0 {
            self.events.push(Event::Advance(self.idle));
            self.idle = 0;
        }
        self.events.push(event);
    }

    fn enter(&mut self, f: &mut InFlight, stage: u8) {
        self.push(Event::Enter {
            insn: f.idx,
            stage,
            prev: f.stage,
        });
        f.stage = stage;
        f.left = 1;
        match stage {
            ISSUE if self.rng.chance(120) => {
                self.push(Event::StallBegin(f.idx));
                f.stall = 1 + self.rng.below(5) as u32;
            }
            EXEC => {
                f.left = match self.rng.below(100) {
                    0..70 => 1,
                    70..88 => 3,
                    88..98 => 4,
                    _ => 24,
                };
                if f.idx > 0 && self.rng.chance(350) {
                    let back = 1 + self.rng.below(u64::from(f.idx.min(12))) as u32;
                    self.push(Event::Depend {
                        consumer: f.idx,
                        producer: f.idx - back,
                    });
                }
                if self.rng.chance(150) {
                    let text = NOTES.start + self.rng.below(NOTES.len() as u64) as u16;
                    self.push(Event::Label {
                        insn: f.idx,
                        kind: 2,
                        text,
                    });
                }
            }
            COMMIT if self.rng.chance(500) => {
                let text = DETAILS.start + self.rng.below(DETAILS.len() as u64) as u16;
                self.push(Event::Label {
                    insn: f.idx,
                    kind: 1,
                    text,
                });
            }
            _ => {}
        }
    }

    /// One cycle of `f`; true when it is a mispredicted branch that resolves now.
    fn step(&mut self, f: &mut InFlight) -> bool {
        if f.done {
            return false;
        }
        if f.stall > 0 {
            f.stall -= 1;
            if f.stall > 0 {
                return false;
            }
            self.push(Event::StallEnd(f.idx));
        }
        if f.left > 1 {
            f.left -= 1;
            return false;
        }
        match f.stage {
            NONE => self.enter(f, COMMIT),
            COMMIT => f.done = true,
            EXEC => {
                if self.rng.chance(100) {
                    self.push(Event::Leave {
                        insn: f.idx,
                        stage: EXEC,
                    });
                    f.stage = NONE;
                    f.left = 1 + self.rng.below(2) as u32;
                } else {
                    self.enter(f, COMMIT);
                }
                return f.mispredict;
            }
            stage => self.enter(f, stage + 1),
        }
        false
    }
}

/// The stream for `instructions` instructions (retired or flushed; all end).
pub fn generate(instructions: u32, seed: u64) -> Vec<Event> {
    let mut gen = Gen {
        rng: Rng(seed),
        events: Vec::with_capacity(instructions as usize * 12),
        idle: 0,
    };
    let mut window: VecDeque<InFlight> = VecDeque::new();
    let (mut fetched, mut fetch_blocked) = (0u32, 0u32);
    while fetched < instructions || !window.is_empty() {
        // Retire up to 4 finished instructions, oldest first.
        for _ in 0..4 {
            match window.front() {
                Some(f) if f.done => {
                    gen.push(Event::Retire {
                        insn: f.idx,
                        open: f.stage,
                    });
                    window.pop_front();
                }
                _ => break,
            }
        }
        // Move every instruction on; a mispredicted branch flushes everything younger.
        let mut flush_from = None;
        for (at, f) in window.iter_mut().enumerate() {
            if gen.step(f) {
                flush_from = Some(at + 1);
                break;
            }
        }
        if let Some(from) = flush_from {
            for f in window.drain(from..) {
                gen.push(Event::Flush {
                    insn: f.idx,
                    open: f.stage,
                    stalled: f.stall > 0,
                });
            }
            fetch_blocked = 2;
        }
        // Fetch up to 4.
        if fetch_blocked > 0 {
            fetch_blocked -= 1;
        } else {
            for _ in 0..4 {
                if fetched == instructions || window.len() >= 96 {
                    break;
                }
                let idx = fetched;
                fetched += 1;
                gen.push(Event::Begin { sim: idx });
                gen.push(Event::Label {
                    insn: idx,
                    kind: 0,
                    text: (idx % 32) as u16,
                });
                let mut f = InFlight {
                    idx,
                    stage: NONE,
                    left: 0,
                    stall: 0,
                    done: false,
                    mispredict: gen.rng.chance(2),
                };
                gen.enter(&mut f, 0);
                window.push_back(f);
            }
        }
        gen.idle += 1;
    }
    gen.events
}

/// Counts of the stream, for the reports.
#[derive(Debug, Default)]
pub struct Stats {
    /// Events (= calls on kanata-writer).
    pub events: u64,
    /// Instructions.
    pub instructions: u64,
    /// Flushed instructions.
    pub flushed: u64,
    /// Cycles.
    pub cycles: u64,
    /// `Advance` events.
    pub advances: u64,
    /// Labels.
    pub labels: u64,
    /// Stage entries.
    pub enters: u64,
    /// Stalls.
    pub stalls: u64,
    /// Dependencies.
    pub depends: u64,
}

/// Counts the events of `events`.
pub fn stats(events: &[Event]) -> Stats {
    let mut s = Stats {
        events: events.len() as u64,
        ..Stats::default()
    };
    for event in events {
        match *event {
            Event::Advance(n) => {
                s.advances += 1;
                s.cycles += u64::from(n);
            }
            Event::Begin { .. } => s.instructions += 1,
            Event::Label { .. } => s.labels += 1,
            Event::Enter { .. } => s.enters += 1,
            Event::StallBegin(_) => s.stalls += 1,
            Event::Flush { .. } => s.flushed += 1,
            Event::Depend { .. } => s.depends += 1,
            _ => {}
        }
    }
    s
}

// ----- the replays -----

/// kanata-writer: every event is one call; handles are kept by the simulator (`ids`).
fn replay_kanata<W: Write>(
    w: &mut Writer<W>,
    ids: &mut Vec<InsnId>,
    events: &[Event],
    work: u32,
) -> kanata_writer::Result<()> {
    let mut stages = [Stage::STALL; 6];
    for (handle, name) in stages.iter_mut().zip(STAGES) {
        *handle = w.stage(name)?;
    }
    const KINDS: [LabelKind; 3] = [LabelKind::Name, LabelKind::Detail, LabelKind::StageNote];
    ids.clear();
    for event in events {
        match *event {
            Event::Advance(n) => w.advance(u64::from(n))?,
            Event::Begin { sim } => {
                if work > 0 {
                    spin(work);
                }
                ids.push(w.begin(u64::from(sim), 0)?)
            }
            Event::Label { insn, kind, text } => w.label(
                ids[insn as usize],
                KINDS[kind as usize],
                TEXTS[text as usize],
            )?,
            Event::Enter { insn, stage, .. } => {
                w.enter(ids[insn as usize], Lane::MAIN, stages[stage as usize])?
            }
            Event::Leave { insn, .. } => w.leave(ids[insn as usize], Lane::MAIN)?,
            Event::StallBegin(insn) => w.stall_begin(ids[insn as usize])?,
            Event::StallEnd(insn) => w.stall_end(ids[insn as usize])?,
            Event::Retire { insn, .. } => drop(w.retire(ids[insn as usize])?),
            Event::Flush { insn, .. } => w.flush(ids[insn as usize])?,
            Event::Depend { consumer, producer } => w.depend(
                ids[consumer as usize],
                ids[producer as usize],
                DepKind::WAKE_UP,
            )?,
        }
    }
    Ok(())
}

/// The naive baseline: one `writeln!` per line, ids and retire ids counted by hand, no
/// checks, no escaping. Writes the same bytes as kanata-writer.
fn replay_naive<O: Write>(out: &mut O, events: &[Event]) -> io::Result<()> {
    writeln!(out, "Kanata\t0004")?;
    writeln!(out, "C=\t0")?;
    let (mut next_id, mut next_retire) = (0u32, 0u64);
    for event in events {
        match *event {
            Event::Advance(n) => writeln!(out, "C\t{n}")?,
            Event::Begin { sim } => {
                writeln!(out, "I\t{next_id}\t{sim}\t0")?;
                next_id += 1;
            }
            Event::Label { insn, kind, text } => {
                writeln!(out, "L\t{insn}\t{kind}\t{}", TEXTS[text as usize])?
            }
            Event::Enter { insn, stage, prev } => {
                if prev != NONE {
                    writeln!(out, "E\t{insn}\t0\t{}", STAGES[prev as usize])?;
                }
                writeln!(out, "S\t{insn}\t0\t{}", STAGES[stage as usize])?;
            }
            Event::Leave { insn, stage } => {
                writeln!(out, "E\t{insn}\t0\t{}", STAGES[stage as usize])?
            }
            Event::StallBegin(insn) => writeln!(out, "S\t{insn}\t1\tstl")?,
            Event::StallEnd(insn) => writeln!(out, "E\t{insn}\t1\tstl")?,
            Event::Retire { insn, open } => {
                if open != NONE {
                    writeln!(out, "E\t{insn}\t0\t{}", STAGES[open as usize])?;
                }
                writeln!(out, "R\t{insn}\t{next_retire}\t0")?;
                next_retire += 1;
            }
            Event::Flush {
                insn,
                open,
                stalled,
            } => {
                if open != NONE {
                    writeln!(out, "E\t{insn}\t0\t{}", STAGES[open as usize])?;
                }
                if stalled {
                    writeln!(out, "E\t{insn}\t1\tstl")?;
                }
                writeln!(out, "R\t{insn}\t0\t1")?;
            }
            Event::Depend { consumer, producer } => writeln!(out, "W\t{consumer}\t{producer}\t0")?,
        }
    }
    Ok(())
}

/// kiseki with its defaults: lifecycle validation and label/stage sanitizing on.
pub struct KisekiChecked;

impl kiseki::Config for KisekiChecked {
    type Output = Vec<u8>;
    type Stage = &'static str;
}

/// kiseki with both checks compiled away (`VALIDATE = false`, `SANITIZE = false`).
pub struct KisekiUnchecked;

impl kiseki::Config for KisekiUnchecked {
    type Output = Vec<u8>;
    type Stage = &'static str;
    const VALIDATE: bool = false;
    const SANITIZE: bool = false;
}

/// kiseki: it has no automatic `E`, no stall helper and no type-2 label, so an `Enter` is
/// `end` + `stage`, a stall is `stage`/`end` in lane 1 with `"stl"`, a stage note is a
/// `Level::Hover` label, and the `E` lines before `R` are explicit `end` calls. Its `flush`
/// writes the current retire counter where kanata-writer writes 0.
fn replay_kiseki<C>(
    t: &mut kiseki::Trace<C>,
    ids: &mut Vec<kiseki::Id>,
    events: &[Event],
) -> kiseki::Result
where
    C: kiseki::Config<Output = Vec<u8>, Stage = &'static str>,
{
    use kiseki::Level;
    const LEVELS: [Level; 3] = [Level::Pane, Level::Hover, Level::Hover];
    ids.clear();
    for event in events {
        match *event {
            Event::Advance(n) => t.advance(n)?,
            Event::Begin { sim } => ids.push(t.start(sim, 0)?),
            Event::Label { insn, kind, text } => t.label(
                ids[insn as usize],
                TEXTS[text as usize],
                LEVELS[kind as usize],
            )?,
            Event::Enter { insn, stage, prev } => {
                let id = ids[insn as usize];
                if prev != NONE {
                    t.end(id, 0, &STAGES[prev as usize])?;
                }
                t.stage(id, 0, &STAGES[stage as usize], false)?;
            }
            Event::Leave { insn, stage } => {
                t.end(ids[insn as usize], 0, &STAGES[stage as usize])?
            }
            Event::StallBegin(insn) => t.stage(ids[insn as usize], 1, &"stl", false)?,
            Event::StallEnd(insn) => t.end(ids[insn as usize], 1, &"stl")?,
            Event::Retire { insn, open } => {
                let id = ids[insn as usize];
                if open != NONE {
                    t.end(id, 0, &STAGES[open as usize])?;
                }
                t.retire(id)?;
            }
            Event::Flush {
                insn,
                open,
                stalled,
            } => {
                let id = ids[insn as usize];
                if open != NONE {
                    t.end(id, 0, &STAGES[open as usize])?;
                }
                if stalled {
                    t.end(id, 1, &"stl")?;
                }
                t.flush(id)?;
            }
            Event::Depend { consumer, producer } => {
                t.wake(ids[consumer as usize], ids[producer as usize])?
            }
        }
    }
    Ok(())
}

/// Stands in for the simulator's own work: `iterations` dependent multiply-adds.
#[inline(never)]
pub fn spin(iterations: u32) -> u64 {
    let mut x = 1u64;
    for _ in 0..iterations {
        x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
    }
    x
}

/// Iterations of [`spin`] per nanosecond on this machine (best of a few tries).
pub fn spin_per_ns() -> f64 {
    (0..5)
        .map(|_| {
            let t = Instant::now();
            spin(2_000_000);
            2_000_000.0 / t.elapsed().as_nanos() as f64
        })
        .fold(0.0, f64::max)
}

/// The simulator's work alone: the stream walked, [`spin`] per instruction, nothing written.
fn replay_work_only(events: &[Event], work: u32) {
    for event in events {
        if let Event::Begin { .. } = std::hint::black_box(event) {
            spin(work);
        }
    }
}

// ----- variants -----

/// One way of writing the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// `writeln!` per line into a `Vec<u8>`.
    NaiveMemory,
    /// `writeln!` per line into a `BufWriter<File>`.
    NaiveFile,
    /// kiseki (checks on) into a `Vec<u8>`.
    Kiseki,
    /// kiseki (checks off) into a `Vec<u8>`.
    KisekiUnchecked,
    /// kanata-writer, `Writer::new(Vec<u8>)`.
    Memory,
    /// kanata-writer, `WriterBuilder::from_path` to a plain file.
    File,
    /// kanata-writer, gzip level 6 on the calling thread, into a `Vec<u8>`.
    GzipInline,
    /// kanata-writer, gzip level 6 on a background thread, into a `Vec<u8>`.
    GzipBackground,
    /// kanata-writer, zstd level 3 on the calling thread, into a `Vec<u8>`.
    ZstdInline,
    /// kanata-writer, zstd level 3 on a background thread, into a `Vec<u8>`.
    ZstdBackground,
    /// No writer: only the simulated work (see [`Bench::set_work`]).
    WorkOnly,
}

impl Variant {
    /// Every variant, in report order.
    pub const ALL: [Variant; 10] = [
        Variant::NaiveMemory,
        Variant::NaiveFile,
        Variant::Kiseki,
        Variant::KisekiUnchecked,
        Variant::Memory,
        Variant::File,
        Variant::GzipInline,
        Variant::GzipBackground,
        Variant::ZstdInline,
        Variant::ZstdBackground,
    ];

    /// The benchmark name.
    pub fn name(self) -> &'static str {
        match self {
            Variant::NaiveMemory => "naive_writeln/memory",
            Variant::NaiveFile => "naive_writeln/file",
            Variant::Kiseki => "kiseki/memory",
            Variant::KisekiUnchecked => "kiseki_unchecked/memory",
            Variant::Memory => "kanata_writer/memory",
            Variant::File => "kanata_writer/file",
            Variant::GzipInline => "kanata_writer/gzip_inline",
            Variant::GzipBackground => "kanata_writer/gzip_background",
            Variant::ZstdInline => "kanata_writer/zstd_inline",
            Variant::ZstdBackground => "kanata_writer/zstd_background",
            Variant::WorkOnly => "work_only",
        }
    }

    /// Whether a second thread compresses (so the replay loop and the total differ most).
    pub fn is_background(self) -> bool {
        matches!(self, Variant::GzipBackground | Variant::ZstdBackground)
    }
}

/// The times of one run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Split {
    /// The replay loop alone: the calls a simulator thread makes while it simulates.
    pub replay: Duration,
    /// Everything on the calling thread: building the writer, the replay, and `finish` (which
    /// for a background writer waits for the compressor to drain).
    pub total: Duration,
    /// Bytes of output (compressed size when compressed).
    pub bytes: usize,
}

/// The stream and reusable buffers; one run of a variant at a time.
pub struct Bench {
    /// The stream.
    pub events: Vec<Event>,
    /// Output buffer, reused so that page faults of a fresh allocation are not timed.
    out: Vec<u8>,
    kw_ids: Vec<InsnId>,
    ks_ids: Vec<kiseki::Id>,
    dir: tempfile::TempDir,
    /// [`spin`] iterations per instruction, in kanata-writer replays and [`Variant::WorkOnly`].
    work: u32,
}

impl Bench {
    /// A bench over `instructions` instructions of the stream with seed 1.
    pub fn new(instructions: u32) -> Bench {
        let events = generate(instructions, 1);
        let mut bench = Bench {
            events,
            out: Vec::new(),
            kw_ids: Vec::with_capacity(instructions as usize),
            ks_ids: Vec::with_capacity(instructions as usize),
            dir: tempfile::tempdir().expect("a temporary directory"),
            work: 0,
        };
        // Size the output buffer once, with room for the largest output (kiseki's).
        bench.run(Variant::Kiseki);
        bench.out.reserve(bench.out.len() / 4);
        bench
    }

    /// From now on kanata-writer replays (and [`Variant::WorkOnly`]) do `iterations` of
    /// [`spin`] per instruction, as a simulator that spends that long simulating it.
    pub fn set_work(&mut self, iterations: u32) {
        self.work = iterations;
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Runs `variant` once over the stream.
    pub fn run(&mut self, variant: Variant) -> Split {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        let events = &self.events[..];
        let work = self.work;
        let start = Instant::now();
        let (replay, bytes, out) = match variant {
            Variant::WorkOnly => {
                let t = Instant::now();
                replay_work_only(events, work);
                (t.elapsed(), 0, out)
            }
            Variant::NaiveMemory => {
                let t = Instant::now();
                replay_naive(&mut out, events).expect("naive replay");
                (t.elapsed(), out.len(), out)
            }
            Variant::NaiveFile => {
                let mut file = BufWriter::new(File::create(self.path("naive.kanata")).unwrap());
                let t = Instant::now();
                replay_naive(&mut file, events).expect("naive replay");
                let replay = t.elapsed();
                let file = file.into_inner().expect("flush");
                let bytes = file.metadata().map_or(0, |m| m.len() as usize);
                (replay, bytes, out)
            }
            Variant::Kiseki => {
                let mut trace = kiseki::Trace::<KisekiChecked>::new(0, out).unwrap();
                let t = Instant::now();
                replay_kiseki(&mut trace, &mut self.ks_ids, events).expect("kiseki replay");
                let replay = t.elapsed();
                let out = trace.finish().expect("kiseki finish");
                (replay, out.len(), out)
            }
            Variant::KisekiUnchecked => {
                let mut trace = kiseki::Trace::<KisekiUnchecked>::new(0, out).unwrap();
                let t = Instant::now();
                replay_kiseki(&mut trace, &mut self.ks_ids, events).expect("kiseki replay");
                let replay = t.elapsed();
                let out = trace.finish().expect("kiseki finish");
                (replay, out.len(), out)
            }
            Variant::Memory => {
                let mut w = Writer::new(out);
                let replay = time_kanata(&mut w, &mut self.kw_ids, events, work);
                let out = w.finish().expect("finish").output;
                (replay, out.len(), out)
            }
            Variant::File => {
                let mut w = WriterBuilder::new()
                    .from_path(self.path("trace.kanata"))
                    .expect("create");
                let replay = time_kanata(&mut w, &mut self.kw_ids, events, work);
                let file = w.finish().expect("finish").output;
                let bytes = file.metadata().map_or(0, |m| m.len() as usize);
                (replay, bytes, out)
            }
            Variant::GzipInline
            | Variant::GzipBackground
            | Variant::ZstdInline
            | Variant::ZstdBackground => {
                let compression = match variant {
                    Variant::GzipInline | Variant::GzipBackground => Compression::Gzip,
                    _ => Compression::Zstd,
                };
                let mut w = WriterBuilder::new()
                    .compression(compression)
                    .background(variant.is_background())
                    .from_writer(out)
                    .expect("writer");
                let replay = time_kanata(&mut w, &mut self.kw_ids, events, work);
                let out = w.finish().expect("finish").output;
                (replay, out.len(), out)
            }
        };
        let total = start.elapsed();
        self.out = out;
        Split {
            replay,
            total,
            bytes,
        }
    }

    /// The output of the last run that wrote to memory.
    pub fn output(&self) -> &[u8] {
        &self.out
    }

    /// Checks that every variant writes what it should: the naive baseline the very bytes of
    /// kanata-writer, the compressed variants those bytes once decompressed, the file
    /// variants those bytes on disk. Returns (text bytes, kiseki bytes).
    pub fn verify(&mut self) -> (usize, usize) {
        self.run(Variant::Memory);
        let text = self.out.clone();
        self.run(Variant::NaiveMemory);
        assert!(self.out == text, "the naive baseline writes other bytes");
        for variant in [Variant::GzipInline, Variant::GzipBackground] {
            self.run(variant);
            let mut plain = Vec::new();
            io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&self.out[..]), &mut plain)
                .unwrap();
            assert!(plain == text, "{variant:?}");
        }
        for variant in [Variant::ZstdInline, Variant::ZstdBackground] {
            self.run(variant);
            assert!(
                zstd::decode_all(&self.out[..]).unwrap() == text,
                "{variant:?}"
            );
        }
        self.run(Variant::File);
        assert!(std::fs::read(self.path("trace.kanata")).unwrap() == text);
        self.run(Variant::NaiveFile);
        assert!(std::fs::read(self.path("naive.kanata")).unwrap() == text);
        self.run(Variant::KisekiUnchecked);
        let unchecked = self.out.clone();
        self.run(Variant::Kiseki);
        assert!(self.out == unchecked);
        // kiseki differs only where it cannot say the same: stage notes are type 1, and a
        // flush carries the retire counter.
        let same_lines = text
            .split(|&b| b == b'\n')
            .zip(self.out.split(|&b| b == b'\n'))
            .filter(|(a, b)| a == b)
            .count();
        let lines = text.split(|&b| b == b'\n').count();
        let differing = stats(&self.events).flushed as usize + notes(&self.events);
        assert_eq!(lines, self.out.split(|&b| b == b'\n').count());
        assert!(lines - same_lines <= differing, "kiseki lines that differ");
        (text.len(), self.out.len())
    }
}

fn notes(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::Label { kind: 2, .. }))
        .count()
}

/// Times the replay loop of kanata-writer.
fn time_kanata<W: Write>(
    w: &mut Writer<W>,
    ids: &mut Vec<InsnId>,
    events: &[Event],
    work: u32,
) -> Duration {
    let t = Instant::now();
    replay_kanata(w, ids, events, work).expect("kanata-writer replay");
    t.elapsed()
}
