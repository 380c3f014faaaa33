//! A small out-of-order pipeline model that writes its trace through `kanata_writer`.
//!
//! ```text
//! cargo run --release -p kanata-writer --example pipeline_sim -- --insns 200 -o sim.kanata.zst
//! ```
//!
//! Options: `--insns N` (stop once N instructions have retired; default 200), `-o FILE`
//! (default `pipeline_sim.kanata`; a `.gz` or `.zst` name is compressed), `--seed S`
//! (default 1), `--level L` (compression level), `--background` (compress on another
//! thread). The same options always give the same bytes.
//!
//! The core is a toy two-thread (SMT) out-of-order machine running a made-up RV32-like
//! program. Each cycle one thread fetches up to two instructions (`F`); they go in order
//! through decode (`D`), rename (`R`) and dispatch into an issue queue shared by both threads
//! (`DS`), then out of order through execute (`X`, three cycles for `mul`), memory (`M`, ten
//! cycles on a data-cache miss) and writeback (`W`), and wait in `C` until they retire in
//! order from their thread's reorder buffer. Branches are predicted at fetch and resolved in
//! `X`; a misprediction flushes every younger instruction of its thread, which then fetches
//! again from the correct path.
//!
//! What the trace shows, and the writer call behind it:
//! - each instruction's name (`0x80000010: add x3, x1, x2`): [`LabelKind::Name`];
//! - its stages in lane 0: [`Writer::enter`] (the writer closes the previous stage itself);
//! - stalls in lane 1: [`Writer::stall_begin`] / [`Writer::stall_end`], while an instruction
//!   waits in the issue queue for its operands and while a load waits for a cache miss;
//! - the unit, operand values and result on mouse-over: [`LabelKind::Detail`];
//! - `D$ miss` and `mispredict` notes on the `M` and `X` stages: [`LabelKind::StageNote`];
//! - wake-up arrows from a producer's `X` to its consumer's `X`: [`Writer::depend`];
//! - retirement and flushes: [`Writer::retire`] and [`Writer::flush`].

use std::collections::VecDeque;
use std::error::Error;
use std::fmt;
use std::path::PathBuf;

use kanata_writer::{DepKind, InsnId, LabelKind, Lane, LiveAtEnd, Stage, Writer, WriterBuilder};

/// Instructions fetched per cycle, all from one thread.
const FETCH_WIDTH: usize = 2;
/// Reorder-buffer entries per thread; an instruction holds one from fetch to retirement.
const ROB_SIZE: usize = 32;
/// Issue-queue (`DS`) entries, shared by both threads.
const IQ_SIZE: usize = 16;
/// Instructions each thread may retire per cycle.
const RETIRE_WIDTH: usize = 2;
const MUL_LATENCY: u64 = 3;
const MISS_LATENCY: u64 = 10;
/// How often the branch predictor is wrong, in percent.
const MISPREDICT_PERCENT: u64 = 5;
/// A direct-mapped data cache of 64 lines of 64 bytes, shared by both threads, in front of an
/// 8 KiB data region: loads hit often, but miss often enough to be seen.
const DCACHE_LINES: u32 = 64;
const DATA_BASE: u32 = 0x1000_0000;
const DATA_MASK: u32 = 0x1ffc;

/// Instructions in each thread's loop.
const BODY: i32 = 64;

fn code_base(thread: usize) -> u32 {
    0x8000_0000 + 0x0010_0000 * thread as u32
}

/// Where an instruction is in lane 0; the discriminant indexes [`STAGE_NAMES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pipe {
    Fetch,
    Decode,
    Rename,
    Dispatch,
    Execute,
    Memory,
    Writeback,
    Commit,
}

/// Stage names as Konata shows them. Execute is `X`: Konata draws dependency arrows only
/// between stages whose names contain an uppercase X.
const STAGE_NAMES: [&str; 8] = ["F", "D", "R", "DS", "X", "M", "W", "C"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Add,
    Addi,
    Mul,
    Lw,
    Sw,
    Bltu,
    J,
}

/// One instruction of the toy ISA: registers x0..x7, where x0 reads as zero (so `rd` 0 means
/// no destination and a source x0 never waits for a producer). For `bltu` and `j`, `imm` is
/// the offset of the target. (`j` is always predicted right: the BTB knows it.)
#[derive(Clone, Copy, Debug)]
struct Op {
    kind: Kind,
    rd: usize,
    rs: [usize; 2],
    imm: i32,
}

impl Op {
    /// The program: each thread runs a loop of `BODY` instructions, a fixed pseudo-random
    /// function of the PC (so a refetch after a flush finds the same instructions at the
    /// same addresses), whose last instruction jumps back to the first. Its conditional
    /// branches skip forward, depending on the data, which keeps changing through the loads.
    fn at(seed: u64, thread: usize, pc: u32) -> Op {
        let slot = (pc - code_base(thread)) as i32 / 4;
        let h = mix(seed ^ ((thread as u64) << 40) ^ u64::from(pc));
        let rd = 1 + (h >> 8) as usize % 7;
        let (rs1, rs2) = ((h >> 12) as usize % 8, (h >> 16) as usize % 8);
        let imm = ((h >> 20) % 32) as i32 * 4;
        let skip = (2 + ((h >> 28) % 8) as i32).min(BODY - 1 - slot); // 2..=9, not past the `j`
        let (kind, rd, rs, imm) = match h % 100 {
            _ if slot == BODY - 1 => (Kind::J, 0, [0, 0], -4 * slot),
            0..30 => (Kind::Add, rd, [rs1, rs2], 0),
            30..45 => (Kind::Addi, rd, [rs1, 0], imm - 64),
            45..55 => (Kind::Mul, rd, [rs1, rs2], 0),
            55..72 => (Kind::Lw, rd, [rs1, 0], imm),
            72..84 => (Kind::Sw, 0, [rs1, rs2], imm),
            _ => (Kind::Bltu, 0, [rs1, rs2], 4 * skip),
        };
        Op { kind, rd, rs, imm }
    }
}

/// An instruction's name in Konata's left pane: `0x80000010: add x3, x1, x2`.
#[derive(Clone, Copy)]
struct Disasm(u32, Op);

impl fmt::Display for Disasm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Disasm(pc, op) = *self;
        let (rd, [rs1, rs2], imm) = (op.rd, op.rs, op.imm);
        let target = pc.wrapping_add_signed(imm);
        write!(f, "{pc:#010x}: ")?;
        match op.kind {
            Kind::Add => write!(f, "add x{rd}, x{rs1}, x{rs2}"),
            Kind::Addi => write!(f, "addi x{rd}, x{rs1}, {imm}"),
            Kind::Mul => write!(f, "mul x{rd}, x{rs1}, x{rs2}"),
            Kind::Lw => write!(f, "lw x{rd}, {imm}(x{rs1})"),
            Kind::Sw => write!(f, "sw x{rs2}, {imm}(x{rs1})"),
            Kind::Bltu => write!(f, "bltu x{rs1}, x{rs2}, {target:#x}"),
            Kind::J => write!(f, "j {target:#x}"),
        }
    }
}

/// An in-flight writer of a register, as the rename table remembers it.
#[derive(Clone, Copy, Debug)]
struct Producer {
    seq: u64,
    id: InsnId,
}

/// One instruction in a reorder buffer.
#[derive(Debug)]
struct Insn {
    /// The writer's handle, and the simulator's own global age (smaller is older).
    id: InsnId,
    seq: u64,
    pc: u32,
    op: Op,
    pipe: Pipe,
    /// The earliest cycle at which it may leave `pipe`: every stage lasts at least a cycle,
    /// since Konata does not show a stage that starts and ends in the same cycle.
    until: u64,
    /// The in-flight producers of its operands, found at rename.
    producers: [Option<Producer>; 2],
    /// When its result can be forwarded to a consumer's `X` (`u64::MAX` until known).
    ready_at: u64,
    /// Values come from a functional model that runs at fetch; the timing model decides when
    /// they would be available. `addr` is a load's or store's address.
    vals: [u32; 2],
    result: u32,
    addr: u32,
    /// For a branch: where it really goes, whether fetch went elsewhere, and the registers
    /// to restore when it flushes the wrong path.
    next_pc: u32,
    mispredicted: bool,
    checkpoint: [u32; 8],
    /// A stall is open in lane 1.
    stalled: bool,
}

impl Insn {
    fn as_producer(&self) -> Producer {
        Producer {
            seq: self.seq,
            id: self.id,
        }
    }
}

/// One hardware thread: its fetch state, rename table and reorder buffer.
struct Thread {
    pc: u32,
    /// Registers as the functional model sees them at fetch: wrong-path instructions update
    /// them too, until the mispredicted branch restores its checkpoint.
    regs: [u32; 8],
    /// The youngest renamed, unretired writer of each register.
    rename: [Option<Producer>; 8],
    rob: VecDeque<Insn>,
    /// Fetch resumes at this cycle after a redirect.
    fetch_from: u64,
}

impl Thread {
    fn count(&self, pipe: Pipe) -> usize {
        self.rob.iter().filter(|i| i.pipe == pipe).count()
    }
}

struct Sim {
    w: Writer<std::fs::File>,
    stages: [Stage; 8],
    threads: [Thread; 2],
    rng: XorShift,
    seed: u64,
    next_seq: u64,
    retired: u64,
    /// The line address held by each cache line.
    dcache: [Option<u32>; DCACHE_LINES as usize],
    now: u64,
}

impl Sim {
    fn new(mut w: Writer<std::fs::File>, seed: u64) -> kanata_writer::Result<Sim> {
        // Stage names are checked and interned once; the handles are cheap to pass around.
        let mut stages = [Stage::STALL; 8];
        for (stage, name) in stages.iter_mut().zip(STAGE_NAMES) {
            *stage = w.stage(name)?;
        }
        let thread = |t: usize| Thread {
            pc: code_base(t),
            regs: std::array::from_fn(|r| {
                if r == 0 {
                    0
                } else {
                    mix(seed + (8 * t + r) as u64) as u32
                }
            }),
            rename: [None; 8],
            rob: VecDeque::new(),
            fetch_from: 0,
        };
        let threads = [thread(0), thread(1)];
        let dcache = [None; DCACHE_LINES as usize];
        Ok(Sim {
            w,
            stages,
            threads,
            rng: XorShift::new(seed),
            seed,
            next_seq: 0,
            retired: 0,
            dcache,
            now: 0,
        })
    }

    /// Runs until `limit` instructions have retired. Within a cycle, retirement comes first,
    /// then every other instruction from the oldest to the youngest, then fetch: as with
    /// latches, an instruction leaving a stage makes room for a younger one in the same cycle,
    /// a producer's `X` has closed before its consumer's `X` opens, and a flush never meets
    /// an instruction that entered its stage in the same cycle.
    fn run(&mut self, limit: u64) -> Result<(), Box<dyn Error>> {
        while self.retired < limit {
            if self.now > limit.saturating_mul(100).saturating_add(1_000) {
                return Err("the model stopped making progress".into());
            }
            // Nothing is written for a cycle in which nothing happens.
            self.w.set_cycle(self.now)?;
            self.retire(limit)?;
            if self.retired == limit {
                break;
            }
            self.advance()?;
            self.fetch()?;
            self.now += 1;
        }
        Ok(())
    }

    /// Moves instruction `i` of thread `t` to `pipe` for at least `cycles` cycles.
    fn go(&mut self, t: usize, i: usize, pipe: Pipe, cycles: u64) -> kanata_writer::Result<()> {
        let insn = &mut self.threads[t].rob[i];
        insn.pipe = pipe;
        insn.until = self.now + cycles;
        self.w
            .enter(insn.id, Lane::MAIN, self.stages[pipe as usize])
    }

    /// In-order retirement from the head of each reorder buffer.
    fn retire(&mut self, limit: u64) -> kanata_writer::Result<()> {
        let first = (self.now % 2) as usize; // alternate which thread goes first
        for t in [first, 1 - first] {
            let th = &mut self.threads[t];
            for _ in 0..RETIRE_WIDTH {
                let done = |i: &Insn| i.pipe == Pipe::Commit && i.until <= self.now;
                if self.retired == limit || !th.rob.front().is_some_and(done) {
                    break;
                }
                let Some(insn) = th.rob.pop_front() else {
                    break;
                };
                // Later readers of the register now find its value in the register file.
                if th.rename[insn.op.rd].is_some_and(|p| p.seq == insn.seq) {
                    th.rename[insn.op.rd] = None;
                }
                self.w.retire(insn.id)?;
                self.retired += 1;
            }
        }
        Ok(())
    }

    /// One cycle of every instruction already fetched, oldest first.
    fn advance(&mut self) -> kanata_writer::Result<()> {
        let mut order: Vec<(u64, usize)> = (0..2)
            .flat_map(|t| self.threads[t].rob.iter().map(move |i| (i.seq, t)))
            .collect();
        order.sort_unstable();
        // Functional units free this cycle: two ALUs (which also run branches), a pipelined
        // multiplier, and one load/store unit.
        let mut units = [2, 1, 1];
        for (seq, t) in order {
            // A mispredicted branch earlier in this cycle may have flushed it.
            let Ok(i) = self.threads[t].rob.binary_search_by_key(&seq, |i| i.seq) else {
                continue;
            };
            let (th, insn) = (&self.threads[t], &self.threads[t].rob[i]);
            let (id, pipe, stalled) = (insn.id, insn.pipe, insn.stalled);
            if insn.until > self.now {
                continue;
            }
            match pipe {
                // The front end is in order and holds one fetch group per stage and thread;
                // a full issue queue backs it up.
                Pipe::Fetch if th.count(Pipe::Decode) < FETCH_WIDTH => {
                    self.go(t, i, Pipe::Decode, 1)?
                }
                Pipe::Decode if th.count(Pipe::Rename) < FETCH_WIDTH => {
                    self.rename(t, i);
                    self.go(t, i, Pipe::Rename, 1)?;
                }
                Pipe::Rename if self.queued() < IQ_SIZE => {
                    self.go(t, i, Pipe::Dispatch, 1)?;
                }
                Pipe::Dispatch => self.issue(t, i, &mut units)?,
                Pipe::Execute => self.execute_done(t, i)?,
                Pipe::Memory => {
                    if stalled {
                        self.threads[t].rob[i].stalled = false;
                        self.w.stall_end(id)?;
                    }
                    self.go(t, i, Pipe::Writeback, 1)?;
                }
                Pipe::Writeback => {
                    self.go(t, i, Pipe::Commit, 1)?;
                    // Appends to the detail written at issue; `\n` is a line break in Konata.
                    let effect = Effect(&self.threads[t].rob[i]);
                    self.w
                        .label_fmt(id, LabelKind::Detail, format_args!("\n{effect}"))?;
                }
                _ => {} // `C` waits for `retire`; a full next stage holds the front end
            }
        }
        Ok(())
    }

    /// Instructions in the shared issue queue.
    fn queued(&self) -> usize {
        self.threads.iter().map(|th| th.count(Pipe::Dispatch)).sum()
    }

    /// Rename: find the producers of the sources, then become the producer of the dest.
    fn rename(&mut self, t: usize, i: usize) {
        let th = &mut self.threads[t];
        let insn = &mut th.rob[i];
        insn.producers = insn.op.rs.map(|r| th.rename[r]);
        if insn.op.rd != 0 {
            th.rename[insn.op.rd] = Some(insn.as_producer());
        }
    }

    /// Issue from the queue to `X` once every operand can be forwarded and a unit is free.
    fn issue(&mut self, t: usize, i: usize, units: &mut [u32; 3]) -> kanata_writer::Result<()> {
        let (now, th) = (self.now, &self.threads[t]);
        let insn = &th.rob[i];
        // A producer no longer in the ROB has retired: its value is in the register file.
        let ready = insn.producers.iter().flatten().all(|p| {
            th.rob
                .binary_search_by_key(&p.seq, |i| i.seq)
                .map_or(true, |j| th.rob[j].ready_at <= now)
        });
        let (id, op, stalled) = (insn.id, insn.op, insn.stalled);
        if ready == stalled {
            // Waiting for an operand is a stall: lane 1 shows it for as long as it lasts.
            self.threads[t].rob[i].stalled = !ready;
            if ready {
                self.w.stall_end(id)?
            } else {
                self.w.stall_begin(id)?
            }
        }
        let (unit, latency) = match op.kind {
            Kind::Mul => (1, MUL_LATENCY),
            Kind::Lw | Kind::Sw => (2, 1),
            _ => (0, 1),
        };
        if !ready || units[unit] == 0 {
            return Ok(()); // try again next cycle
        }
        let name = match unit {
            0 if units[0] == 2 => "ALU0",
            0 => "ALU1",
            1 => "MUL",
            _ => "LSU",
        };
        units[unit] -= 1;
        self.go(t, i, Pipe::Execute, latency)?;
        let insn = &mut self.threads[t].rob[i];
        if !matches!(op.kind, Kind::Lw) {
            insn.ready_at = now + latency; // a load's depends on the cache
        }
        // The consumer woke up on these producers. Both pass through `X`, so Konata draws an
        // arrow from the end of the producer's `X` to the start of this one.
        for p in insn.producers.into_iter().flatten() {
            self.w.depend(id, p.id, DepKind::WAKE_UP)?;
        }
        let operands = Operands(op, insn.vals);
        self.w
            .label_fmt(id, LabelKind::Detail, format_args!("{name}{operands}"))
    }

    /// Leaving `X`: loads and stores go on to the data cache, and branches resolve.
    fn execute_done(&mut self, t: usize, i: usize) -> kanata_writer::Result<()> {
        let insn = &self.threads[t].rob[i];
        let (id, kind, addr, mispredicted) = (insn.id, insn.op.kind, insn.addr, insn.mispredicted);
        if kind == Kind::Lw || kind == Kind::Sw {
            let line = addr / 64;
            let slot = &mut self.dcache[(line % DCACHE_LINES) as usize];
            // A miss fills the line. A store that misses waits in the store buffer, not in
            // the pipeline.
            let hit = *slot == Some(line);
            *slot = Some(line);
            let stall = !hit && kind == Kind::Lw;
            self.go(t, i, Pipe::Memory, if stall { MISS_LATENCY } else { 1 })?;
            if !hit {
                // A note goes on the stage entered last, so it is written before the stall.
                self.w.label(id, LabelKind::StageNote, "D$ miss")?;
            }
            if stall {
                self.w.stall_begin(id)?;
            }
            let insn = &mut self.threads[t].rob[i];
            insn.stalled = stall;
            insn.ready_at = insn.until;
            return Ok(());
        }
        if mispredicted {
            self.flush_younger(t, i)?;
        }
        self.go(t, i, Pipe::Writeback, 1)
    }

    /// A mispredicted branch flushes every younger instruction of its thread and sends fetch
    /// down the correct path. The other thread carries on.
    fn flush_younger(&mut self, t: usize, i: usize) -> kanata_writer::Result<()> {
        let th = &mut self.threads[t];
        let squashed = th.rob.split_off(i + 1);
        let branch = &th.rob[i];
        self.w.label_fmt(
            branch.id,
            LabelKind::StageNote,
            format_args!("mispredict: flushed {}", squashed.len()),
        )?;
        (th.regs, th.pc, th.fetch_from) = (branch.checkpoint, branch.next_pc, self.now + 1);
        for insn in squashed {
            // Closes what it has open in every lane (stage and stall), then writes `R … 1`.
            self.w.flush(insn.id)?;
        }
        // Rebuild the rename table from the survivors (all renamed: they are older than the
        // branch), oldest first.
        th.rename = [None; 8];
        for insn in th.rob.iter().filter(|insn| insn.op.rd != 0) {
            th.rename[insn.op.rd] = Some(insn.as_producer());
        }
        Ok(())
    }

    /// One thread fetches a group per cycle, the threads taking turns; when the one whose
    /// turn it is cannot fetch (ROB full, redirect bubble, `F` still busy), the other may.
    fn fetch(&mut self) -> kanata_writer::Result<()> {
        let first = (self.now % 2) as usize;
        let Some(t) = [first, 1 - first].into_iter().find(|&t| {
            let th = &self.threads[t];
            th.fetch_from <= self.now && th.rob.len() < ROB_SIZE && th.count(Pipe::Fetch) == 0
        }) else {
            return Ok(());
        };
        for _ in 0..FETCH_WIDTH.min(ROB_SIZE - self.threads[t].rob.len()) {
            let th = &mut self.threads[t];
            let (pc, op) = (th.pc, Op::at(self.seed, t, th.pc));
            // The functional model: execute now, in program order, on the fetch-time registers.
            let vals = op.rs.map(|r| th.regs[r]);
            let addr = DATA_BASE | (vals[0].wrapping_add_signed(op.imm) & DATA_MASK);
            let result = match op.kind {
                Kind::Add => vals[0].wrapping_add(vals[1]),
                Kind::Addi => vals[0].wrapping_add_signed(op.imm),
                Kind::Mul => vals[0].wrapping_mul(vals[1]),
                Kind::Lw => mix(u64::from(addr)) as u32, // memory holds a fixed pattern
                Kind::Sw => vals[1],
                Kind::Bltu | Kind::J => 0,
            };
            if op.rd != 0 {
                th.regs[op.rd] = result;
            }
            // The predictor is modelled by its accuracy: it is wrong MISPREDICT_PERCENT% of
            // the time, and then fetch goes the other way (down the wrong path).
            let taken = op.kind == Kind::J || (op.kind == Kind::Bltu && vals[0] < vals[1]);
            let mispredicted = op.kind == Kind::Bltu && self.rng.percent(MISPREDICT_PERCENT);
            let step = |taken: bool| pc.wrapping_add_signed(if taken { op.imm } else { 4 });
            let (next_pc, predicted_taken) = (step(taken), taken != mispredicted);
            th.pc = step(predicted_taken);
            let seq = self.next_seq;
            self.next_seq += 1;
            let id = self.w.begin(seq, t as u32)?;
            // `label_fmt` formats straight into the writer's buffer: no String per call.
            self.w
                .label_fmt(id, LabelKind::Name, format_args!("{}", Disasm(pc, op)))?;
            self.w
                .enter(id, Lane::MAIN, self.stages[Pipe::Fetch as usize])?;
            let th = &mut self.threads[t];
            let checkpoint = th.regs;
            th.rob.push_back(Insn {
                id,
                seq,
                pc,
                op,
                pipe: Pipe::Fetch,
                until: self.now + 1,
                producers: [None; 2],
                ready_at: u64::MAX,
                vals,
                result,
                addr,
                next_pc,
                mispredicted,
                checkpoint,
                stalled: false,
            });
            if predicted_taken {
                break; // a taken branch ends the fetch group
            }
        }
        Ok(())
    }
}

/// The source operands and their values, ` reads x1=0x5, x2=0x7` (x0 left out).
struct Operands(Op, [u32; 2]);

impl fmt::Display for Operands {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let used = self.0.rs.into_iter().zip(self.1).filter(|&(r, _)| r != 0);
        for (n, (r, v)) in used.enumerate() {
            let sep = if n == 0 { " reads" } else { "," };
            write!(f, "{sep} x{r}={v:#x}")?;
        }
        Ok(())
    }
}

/// What an instruction did, as written to its detail at writeback.
struct Effect<'a>(&'a Insn);

impl fmt::Display for Effect<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let insn = self.0;
        match insn.op.kind {
            Kind::Sw => write!(f, "mem[{:#x}] <- {:#x}", insn.addr, insn.result),
            Kind::Bltu | Kind::J if insn.next_pc == insn.pc.wrapping_add(4) => {
                f.write_str("not taken")
            }
            Kind::Bltu | Kind::J => write!(f, "taken to {:#x}", insn.next_pc),
            Kind::Lw => write!(
                f,
                "x{} <- {:#x} from {:#x}",
                insn.op.rd, insn.result, insn.addr
            ),
            _ => write!(f, "x{} <- {:#x}", insn.op.rd, insn.result),
        }
    }
}

/// splitmix64's finalizer: a good 64-bit hash for the program and the data.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// xorshift64: small, deterministic, and enough to decide mispredictions.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> XorShift {
        XorShift(mix(seed) | 1) // never zero
    }

    fn percent(&mut self, p: u64) -> bool {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % 100 < p
    }
}

const USAGE: &str =
    "usage: pipeline_sim [--insns N] [-o FILE] [--seed S] [--level L] [--background]";

fn main() -> Result<(), Box<dyn Error>> {
    let (mut insns, mut output, mut seed, mut level, mut background) =
        (200, PathBuf::from("pipeline_sim.kanata"), 1, None, false);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--background" => background = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            "--insns" | "--seed" | "--level" | "-o" | "--output" => {
                let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
                let bad = |err: &dyn fmt::Display| format!("{flag} {value:?}: {err}");
                match flag.as_str() {
                    "--insns" => insns = value.parse::<u64>().map_err(|e| bad(&e))?,
                    "--seed" => seed = value.parse::<u64>().map_err(|e| bad(&e))?,
                    "--level" => level = Some(value.parse::<i32>().map_err(|e| bad(&e))?),
                    _ => output = PathBuf::from(value),
                }
            }
            _ => return Err(format!("unknown option {flag:?} (see --help)").into()),
        }
    }

    let mut builder = WriterBuilder::new();
    // When the run stops, the instructions still in flight have not retired, but they were
    // not squashed either: leave them open (the default), and Konata draws them as in flight
    // up to the last cycle. `LiveAtEnd::Flush` would paint them as wrong-path work.
    builder
        .background(background)
        .live_at_end(LiveAtEnd::LeaveOpen);
    if let Some(level) = level {
        builder.level(level);
    }
    let writer = builder.from_path(&output)?; // `.gz` and `.zst` compress, by extension
    let mut sim = Sim::new(writer, seed)?;
    sim.run(insns)?;
    let s = sim.w.finish()?.summary;
    let on_disk = std::fs::metadata(&output)?.len();
    let (path, cycles) = (output.display(), s.last_cycle + 1);
    eprintln!(
        "{path}: {} instructions ({} retired, {} flushed, {} in flight), {cycles} cycles, \
         {} bytes ({on_disk} on disk)",
        s.instructions, s.retired, s.flushed, s.left_open, s.text_bytes
    );
    Ok(())
}
