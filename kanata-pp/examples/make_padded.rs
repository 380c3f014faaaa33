//! Writes a large, deterministic, sloppy Kanata log for benchmarks in which most lines are
//! padded: the quirks of spec §5 that cost a reader per line, on almost every line.
//!
//! ```text
//! cargo run --release -p kanata-pp --example make_padded -- --mb 150 -o /tmp/padded.log
//! ```
//!
//! The log models a superscalar out-of-order core (3-wide fetch and commit, a 64-entry
//! reorder buffer) running a loop, through seven stages `IF ID RN DS IS EX WB`, with
//! dependency arrows (`W`) written at issue, explicit `E` lines for `EX` and for the stall
//! lane, D-cache misses that stall a load in lane 1, branch mispredictions that flush the
//! younger instructions, and I-cache misses that starve the pipeline. Its writer is careless in
//! the ways of spec §5, on most lines rather than on a few:
//!
//! - Q1: numbers, lanes and stage names padded with spaces on the left, on the right or on
//!   both sides, with widths that differ between kinds of line; trailing TABs, trailing spaces
//!   and empty trailing fields (`S\t    17\t 0\tEX\t\t`);
//! - numbers in odd formats that §4.10 still reads: leading zeros (`0007`) and a `+` sign;
//! - Q4: one `C 1` per cycle, several in a row while the pipeline is idle, a `C 0` between
//!   the phases of some cycles, and `C n` with a larger n when an idle stretch is skipped;
//! - Q5: a first `C=`, then absolute `C=` lines mid-file, every 100 cycles and for some
//!   skipped stretches; time only moves forward;
//! - Q19: about a quarter of the lines separated by spaces instead of TABs, labels with
//!   spaces in their text among them (`L 12 0 0x80001008: add a5, a5, a4`);
//! - Q20: lanes written `00`, `+0`, `01` or `+1` on some `S` and `E` lines.
//!
//! File ids are dense from 0, retire ids serial over retired instructions (flushes have 0),
//! every instruction has a PC and disassembly label (`L id 0`) and about half a detail label
//! (`L id 1`). kanata-pp converts it without an error: every quirk is a repair. About 260
//! bytes of input per instruction.

use std::collections::VecDeque;
use std::error::Error;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};

mod common;
use common::{Counting, Rng, SizedOutput};

const STAGES: [&str; 7] = ["IF", "ID", "RN", "DS", "IS", "EX", "WB"];
const IS: usize = 4;
const EX: usize = 5;
const WB: usize = 6;
const WIDTH: usize = 3;
const ROB: usize = 64;
/// The cycle the log starts at (its first `C=`).
const START: u64 = 1_000_000;

#[derive(Clone, Copy, PartialEq)]
enum Class {
    Alu,
    Mul,
    Load,
    Store,
    Branch,
}

/// The loop the core runs: disassembly and class, four bytes apart from `BASE`.
const PROGRAM: [(&str, Class); 18] = [
    ("lw a5, 0(a0)", Class::Load),
    ("lw a4, 4(a0)", Class::Load),
    ("add a5, a5, a4", Class::Alu),
    ("slli a3, a5, 2", Class::Alu),
    ("mul a2, a3, a6", Class::Mul),
    ("sw a2, 0(a1)", Class::Store),
    ("addi a0, a0, 8", Class::Alu),
    ("addi a1, a1, 4", Class::Alu),
    ("andi a7, a5, 15", Class::Alu),
    ("beqz a7, 0x80001034", Class::Branch),
    ("xor t0, t0, a5", Class::Alu),
    ("srli t1, t0, 3", Class::Alu),
    ("sub t2, t1, a3", Class::Alu),
    ("ld t3, 16(sp)", Class::Load),
    ("or t4, t3, t2", Class::Alu),
    ("sd t4, 24(sp)", Class::Store),
    ("addi s1, s1, -1", Class::Alu),
    ("bnez s1, 0x80001000", Class::Branch),
];
const BASE: u64 = 0x8000_1000;

struct Insn {
    id: u64,
    /// Index in `PROGRAM`.
    at: usize,
    stage: usize,
    /// Cycles left in the current stage (0 in `WB`: waiting to commit).
    left: u64,
    /// Whether a stall (lane 1) is open.
    stalled: bool,
    /// A branch whose prediction was wrong: it flushes the younger ones when it leaves `EX`.
    mispredicted: bool,
}

/// One field of a command, before the writer's formatting.
#[derive(Clone, Copy)]
enum F<'a> {
    Num(u64),
    Lane(u64),
    Name(&'a str),
}

/// Field widths of each kind of line, as the simulator's format strings give them.
const W_I: &[usize] = &[8, 12, 3];
const W_L: &[usize] = &[7, 2];
const W_S: &[usize] = &[7, 2, 3];
const W_E: &[usize] = &[5, 3, 4];
const W_R: &[usize] = &[10, 10, 2];
const W_W: &[usize] = &[6, 6, 1];
const W_C: &[usize] = &[3];
const W_CEQ: &[usize] = &[10];

/// Formats commands the way a careless writer does, and counts what it writes.
struct Writer {
    out: Counting<BufWriter<File>>,
    rng: Rng,
    line: String,
}

impl Writer {
    /// Writes command `cmd` with `fields` (at most `widths.len()` of them padded to those
    /// widths) and, for `L`, the label `text`. The layout is picked per line.
    fn cmd(
        &mut self,
        cmd: &str,
        fields: &[F],
        widths: &[usize],
        text: Option<&str>,
    ) -> std::io::Result<()> {
        let line = &mut self.line;
        line.clear();
        line.push_str(cmd);
        let layout = self.rng.below(100);
        if layout < 25 {
            // Q19: separated by spaces, either single or `%Nd`-aligned after one space.
            let aligned = self.rng.chance(50);
            for (&field, &width) in fields.iter().zip(widths) {
                line.push(' ');
                let width = if aligned { width } else { 0 };
                push_field(line, &mut self.rng, field, width, Align::Left);
            }
            match text {
                Some(text) => {
                    line.push(' ');
                    line.push_str(text);
                }
                None if self.rng.chance(20) => line.push_str("  "),
                None => {}
            }
        } else {
            let align = match layout {
                25..=36 => Align::None,
                37..=66 => Align::Left,
                67..=84 => Align::Right,
                _ => Align::Both,
            };
            for (&field, &width) in fields.iter().zip(widths) {
                line.push('\t');
                push_field(line, &mut self.rng, field, width, align);
            }
            match text {
                Some(text) => {
                    line.push('\t');
                    line.push_str(text);
                }
                None => line.push_str(match self.rng.below(100) {
                    0..=24 => "\t",
                    25..=32 => "\t\t",
                    33..=44 => "  ",
                    45..=49 => "\t ",
                    _ => "",
                }),
            }
        }
        line.push('\n');
        self.out.write_all(line.as_bytes())
    }

    /// `C n`, with `C=` (`absolute`) when asked.
    fn advance(&mut self, n: u64, absolute: Option<u64>) -> std::io::Result<()> {
        match absolute {
            Some(cycle) => self.cmd("C=", &[F::Num(cycle)], W_CEQ, None),
            None => self.cmd("C", &[F::Num(n)], W_C, None),
        }
    }
}

#[derive(Clone, Copy)]
enum Align {
    None,
    Left,
    Right,
    Both,
}

/// Appends one field: padded as `align` says to `width`, a number sometimes with leading
/// zeros or a `+`, a lane sometimes written `00`, `+0`, `01` or `+1` (Q20).
fn push_field(line: &mut String, rng: &mut Rng, field: F, width: usize, align: Align) {
    let mut text = String::new();
    let text: &str = match field {
        F::Num(v) => {
            match rng.below(100) {
                0..=3 => {
                    let _ = write!(text, "{v:0w$}", w = width.max(digits(v) + 2));
                }
                4..=5 => {
                    let _ = write!(text, "+{v}");
                }
                _ => {
                    let _ = write!(text, "{v}");
                }
            }
            &text
        }
        F::Lane(lane) => match (lane, rng.below(100)) {
            (0, 0..=5) => "00",
            (0, 6..=9) => "+0",
            (0, _) => "0",
            (1, 0..=9) => "+1",
            (1, 10..=14) => "01",
            (_, _) => {
                let _ = write!(text, "{lane}");
                &text
            }
        },
        F::Name(name) => name,
    };
    let _ = match align {
        Align::None => write!(line, "{text}"),
        Align::Left => write!(line, "{text:>width$}"),
        Align::Right => write!(line, "{text:<width$}"),
        Align::Both => write!(line, " {text} "),
    };
}

fn digits(v: u64) -> usize {
    v.checked_ilog10().map_or(1, |d| d as usize + 1)
}

fn main() -> Result<(), Box<dyn Error>> {
    let SizedOutput {
        limit,
        path: output,
        out,
    } = SizedOutput::from_args()?;
    let mut w = Writer {
        out,
        rng: Rng(0x2545_f491_4f6c_dd1d),
        line: String::new(),
    };
    writeln!(w.out, "Kanata\t0004")?;
    w.advance(0, Some(START))?;
    let mut rob: VecDeque<Insn> = VecDeque::new();
    let (mut next_id, mut retire_id, mut cycle) = (0u64, 0u64, START);
    // Fetch: the next instruction's index in `PROGRAM`, the first cycle it may fetch, and
    // whether it fetches down a mispredicted path.
    let (mut pc, mut fetch_at, mut wrong_path) = (0usize, START, false);
    let mut label = String::new();
    while w.out.written < limit {
        // Commit, in order, up to WIDTH a cycle.
        let mut committed = 0;
        while committed < WIDTH
            && rob
                .front()
                .is_some_and(|i| i.stage == WB && i.left == 0 && !i.stalled)
        {
            let insn = rob.pop_front().expect("a head");
            w.cmd(
                "R",
                &[F::Num(insn.id), F::Num(retire_id), F::Num(0)],
                W_R,
                None,
            )?;
            retire_id += 1;
            committed += 1;
        }
        // A second phase of the cycle, written after a `C 0`.
        if w.rng.chance(15) {
            w.advance(0, None)?;
        }
        // Advance the rest, oldest first; a mispredicted branch leaving EX flushes the
        // younger ones.
        let mut flush_after = None;
        for (at, insn) in rob.iter_mut().enumerate() {
            if insn.left > 0 {
                insn.left -= 1;
            }
            if insn.left > 0 || insn.stage == WB {
                continue;
            }
            let id = insn.id;
            if insn.stage == EX {
                if insn.stalled {
                    w.cmd("E", &[F::Num(id), F::Lane(1), F::Name("stl")], W_E, None)?;
                    insn.stalled = false;
                }
                w.cmd("E", &[F::Num(id), F::Lane(0), F::Name("EX")], W_E, None)?;
                if insn.mispredicted {
                    flush_after = Some(at);
                }
            }
            insn.stage += 1;
            let stage = STAGES[insn.stage];
            w.cmd("S", &[F::Num(id), F::Lane(0), F::Name(stage)], W_S, None)?;
            let class = PROGRAM[insn.at].1;
            insn.left = match insn.stage {
                IS => {
                    // Dependency arrows from up to two older producers.
                    for _ in 0..w.rng.below(3) {
                        let back = 1 + w.rng.below(6);
                        if back <= id {
                            w.cmd("W", &[F::Num(id), F::Num(id - back), F::Num(0)], W_W, None)?;
                        }
                    }
                    1 + w.rng.below(3)
                }
                EX => {
                    if w.rng.chance(50) {
                        label.clear();
                        match class {
                            Class::Load | Class::Store => {
                                let _ = write!(label, "agu0 addr=0x{:016x}", 0x7ffe_0000 + id * 8);
                            }
                            Class::Mul => {
                                let _ = write!(label, "mul0 r=0x{:016x}", id * 37);
                            }
                            _ => {
                                let _ = write!(label, "alu{} r=0x{:016x}", id % 3, id * 7);
                            }
                        }
                        w.cmd("L", &[F::Num(id), F::Num(1)], W_L, Some(&label))?;
                    }
                    match class {
                        Class::Load if w.rng.chance(6) => {
                            w.cmd("S", &[F::Num(id), F::Lane(1), F::Name("stl")], W_S, None)?;
                            w.cmd("L", &[F::Num(id), F::Num(2)], W_L, Some("D$ miss"))?;
                            insn.stalled = true;
                            12 + w.rng.below(30)
                        }
                        Class::Load => 2,
                        Class::Mul => 3,
                        _ => 1,
                    }
                }
                WB => 1,
                _ => 1 + u64::from(w.rng.chance(5)),
            };
        }
        if let Some(at) = flush_after {
            let branch = &rob[at];
            pc = (branch.at + 1) % PROGRAM.len();
            fetch_at = cycle + 3;
            wrong_path = false;
            for insn in rob.drain(at + 1..) {
                w.cmd("R", &[F::Num(insn.id), F::Num(0), F::Num(1)], W_R, None)?;
            }
        }
        // Fetch up to WIDTH, unless the reorder buffer is full or the I-cache missed.
        if cycle >= fetch_at && rob.len() + WIDTH <= ROB {
            if w.rng.below(1000) < 4 {
                // An I-cache miss; a few go all the way to memory.
                fetch_at = cycle
                    + if w.rng.chance(25) {
                        150 + w.rng.below(200)
                    } else {
                        10 + w.rng.below(30)
                    };
            } else {
                for _ in 0..WIDTH {
                    let id = next_id;
                    next_id += 1;
                    w.cmd(
                        "I",
                        &[F::Num(id), F::Num(7_000_000 + id), F::Num(0)],
                        W_I,
                        None,
                    )?;
                    label.clear();
                    let _ = write!(label, "0x{:08x}: {}", BASE + 4 * pc as u64, PROGRAM[pc].0);
                    w.cmd("L", &[F::Num(id), F::Num(0)], W_L, Some(&label))?;
                    w.cmd("S", &[F::Num(id), F::Lane(0), F::Name("IF")], W_S, None)?;
                    let branch = PROGRAM[pc].1 == Class::Branch;
                    let mispredicted = branch && !wrong_path && w.rng.chance(5);
                    wrong_path |= mispredicted;
                    rob.push_back(Insn {
                        id,
                        at: pc,
                        stage: 0,
                        left: 1,
                        stalled: false,
                        mispredicted,
                    });
                    pc = (pc + 1) % PROGRAM.len();
                    if branch {
                        // A taken branch ends the fetch group.
                        break;
                    }
                }
            }
        }
        // Time moves on: one `C 1` a cycle (several in a row while nothing happens), a `C=`
        // every 100 cycles, and an idle stretch skipped in one `C n` or `C=`.
        if rob.is_empty() && fetch_at > cycle + 8 {
            let skip = fetch_at - cycle - 2;
            cycle += skip;
            let absolute = w.rng.chance(50).then_some(cycle);
            w.advance(skip, absolute)?;
        } else {
            cycle += 1;
            let absolute = (cycle % 100 == 0).then_some(cycle);
            w.advance(1, absolute)?;
        }
    }
    w.out.inner.flush()?;
    eprintln!(
        "{output}: {} bytes, {next_id} instructions, {} cycles",
        w.out.written,
        cycle - START
    );
    Ok(())
}
