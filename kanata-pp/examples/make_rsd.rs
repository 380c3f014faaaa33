//! Writes a large, deterministic RSD raw log (`RSD_Kanata`) for benchmarks and tests.
//!
//! ```text
//! cargo run --release -p kanata-pp --example make_rsd -- --mb 200 -o /tmp/rsd.raw.log
//! cargo run --release -p kanata-pp --example make_rsd -- --cycles 5000 --seed 3 --nofunc -o x.log
//! ```
//!
//! The log is what RSD's dumper writes (`shared/spec/rsd-raw.md` §1) for a toy 2-wide core
//! running a small loop: every cycle `C`, `#\tcycle:N`, then one `S` line per valid slot in
//! the dumper's order (Np, F, Pd, Dc, the `L` lines of the decode slots, Rn, Ds, Sc, Is, Rr,
//! X, Mt, Ma, Rw, commit), with the 10-bit serial wrapping. It exercises what RSD's converter
//! reads from the snapshots: i-cache stalls in F and back-end stalls in Rn (which back up the
//! front end), 3-cycle divides, a decode redirect at each `jal` (the younger slot flushed in
//! Dc in the same cycle, so its label comes after its flush), X-stage mispredictions of the
//! loop branch (younger ops flushed in their registers, the dispatched ones again through the
//! commit stage's `Wc` walk, wrong-path fetches flushed straight from Np), and ops still in
//! flight at the end. `--nofunc` leaves out the comments only functional-simulation builds
//! write.

use std::collections::BTreeMap;
use std::error::Error;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};

mod common;
use common::Rng;

/// Raw stage ids.
const NP: u8 = 0;
const F: u8 = 1;
const PD: u8 = 2;
const DC: u8 = 3;
const RN: u8 = 4;
const DS: u8 = 5;
const SC: u8 = 6;
const IS: u8 = 7;
const RR: u8 = 8;
const X: u8 = 9;
const MA: u8 = 10;
const MT: u8 = 11;
const RW: u8 = 12;
const WC: u8 = 13;
const CM: u8 = 14;

/// The order of a stage's lines within a cycle (the dumper writes Mt before Ma, and the
/// decode slots' `L` lines right after Dc).
fn rank(stage: u8) -> u8 {
    match stage {
        NP..=DC => stage * 2,
        MA => 2 * MT,
        MT => 2 * MA,
        _ => stage * 2,
    }
}
const L_RANK: u8 = DC * 2 + 1;

/// The loop the core runs (the words RSD's own test programs are made of).
const PROGRAM: [(u32, u32); 15] = [
    (0x1000, 0x0100_006f), // jal zero, 0x10
    (0x1004, 0x0000_0013),
    (0x1008, 0x0000_0013),
    (0x100c, 0x0000_0013),
    (0x1010, 0x8002_0137), // lui sp, 0x80020000
    (0x1014, 0x0000_0513), // addi a0, zero, 0
    (0x1018, 0x00c0_0593), // addi a1, zero, 12
    (0x101c, 0x0001_2603), // lw a2, 0(sp)
    (0x1020, 0x0016_0613), // addi a2, a2, 1
    (0x1024, 0x00c1_2023), // sw a2, 0(sp)
    (0x1028, 0x00c6_86b3), // add a3, a3, a2
    (0x102c, 0x02b6_c733), // div a4, a3, a1
    (0x1030, 0x0015_0513), // addi a0, a0, 1
    (0x1034, 0xfeb5_14e3), // bne a0, a1, -24
    (0x1038, 0xfddf_f06f), // jal zero, -36
];

fn word(pc: u32) -> u32 {
    PROGRAM
        .iter()
        .find(|&&(at, _)| at == pc)
        .map_or(0x0000_0013, |&(_, w)| w)
}

/// Where execution goes after `pc`, given whether a branch there is taken.
fn next_pc(pc: u32, taken: bool) -> u32 {
    match pc {
        0x1000 => 0x1010,
        0x1034 if taken => 0x101c,
        0x1038 => 0x1014,
        pc if pc >= 0x103c => 0x1000,
        pc => pc + 4,
    }
}

/// The entry cycles of one fetch group's front-end stages (F, Pd, Dc, Rn, Ds).
#[derive(Clone, Copy, Default)]
struct Front {
    f: u64,
    pd: u64,
    dc: u64,
    rn: u64,
    ds: u64,
}

/// A pending flush: ops fetched no later than `last_np` are on the wrong path.
#[derive(Clone, Copy)]
struct Flush {
    /// The cycle of the younger ops' clear lines.
    at: u64,
    last_np: u64,
    /// The F cycle of the group of a decode redirect, whose younger op is flushed in the
    /// redirect's own cycle.
    same_group: Option<u64>,
    /// Through the commit stage's walk too (an X-stage misprediction).
    walk: bool,
    /// Where fetch restarts.
    pc: u32,
}

struct Gen {
    rng: Rng,
    func: bool,
    /// Lines by cycle: (rank, op sequence number, text).
    lines: BTreeMap<u64, Vec<(u8, u64, String)>>,
    seq: u64,
    sid: u64,
    pc: u32,
    /// The loop counter (a0): the loop branch falls through when it reaches 12.
    a0: u32,
    prev: Front,
    fetch_at: u64,
    commit_cycle: u64,
    commit_used: u32,
    flush: Option<Flush>,
    phys: u64,
}

impl Gen {
    fn new(seed: u64, func: bool) -> Gen {
        Gen {
            rng: Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
            func,
            lines: BTreeMap::new(),
            seq: 0,
            sid: 1,
            pc: 0x1000,
            a0: 0,
            prev: Front::default(),
            fetch_at: 0,
            commit_cycle: 0,
            commit_used: 0,
            flush: None,
            phys: 32,
        }
    }

    /// The next commit-stage slot at or after `ready` (two per cycle, in order).
    fn commit_slot(&mut self, ready: u64) -> u64 {
        if ready > self.commit_cycle {
            self.commit_cycle = ready;
            self.commit_used = 0;
        }
        if self.commit_used == 2 {
            self.commit_cycle += 1;
            self.commit_used = 0;
        }
        self.commit_used += 1;
        self.commit_cycle
    }

    fn line(&mut self, cycle: u64, rank: u8, seq: u64, text: String) {
        self.lines.entry(cycle).or_default().push((rank, seq, text));
    }

    fn stage(&mut self, cycle: u64, stage: u8, seq: u64, sid: u64, bits: (u8, u8), comment: &str) {
        let text = format!(
            "S\t{stage}\t1\t{}\t{}\t{sid}\t0\t{comment}\n",
            bits.0, bits.1
        );
        self.line(cycle, rank(stage), seq, text);
    }

    /// Generates the next fetch group (two ops). Returns its Np cycle.
    fn group(&mut self) -> u64 {
        // Fetch restarts after a flush once the wrong path is exhausted.
        let mut f = (self.fetch_at + 1).max(self.prev.pd);
        if let Some(flush) = self.flush {
            if f - 1 > flush.last_np {
                self.flush = None;
                self.pc = flush.pc;
                self.prev = Front::default();
                f = flush.at + 1;
            }
        }
        let mut front = Front {
            f,
            ..Front::default()
        };
        let miss = if self.rng.below(40) == 0 {
            3 + self.rng.below(6)
        } else {
            0
        };
        front.pd = (front.f + 1 + miss).max(self.prev.dc);
        front.dc = (front.pd + 1).max(self.prev.rn);
        front.rn = (front.dc + 1).max(self.prev.ds);
        let backend_full = if self.rng.below(30) == 0 {
            1 + self.rng.below(4)
        } else {
            0
        };
        front.ds = (front.rn + 1 + backend_full).max(self.prev.ds + 1);
        self.prev = front;
        self.fetch_at = front.f;
        let np = front.f - 1;
        self.op(front, miss);
        self.op(front, miss);
        np
    }

    fn op(&mut self, front: Front, miss: u64) {
        let seq = self.seq;
        self.seq += 1;
        let sid = self.sid;
        self.sid = (self.sid + 1) % 1024;
        let pc = self.pc;
        let insn = word(pc);
        let wrong = self.flush.is_some();
        // The loop branch is predicted taken; it falls through when the counter reaches 12,
        // and a wrong-path instance leaves the counter alone.
        let mut taken = true;
        let mut mispredict = false;
        if pc == 0x1030 && !wrong {
            self.a0 = (self.a0 + 1) % 13;
        }
        if pc == 0x1034 && !wrong {
            taken = self.a0 != 12;
            mispredict = !taken;
        }
        // A jump is only recognised in decode: the fetch goes on sequentially until then.
        let redirect = matches!(pc, 0x1000 | 0x1038) && !wrong;
        self.pc = if redirect { pc + 4 } else { next_pc(pc, true) };

        // Where this op is cut short by an older op's flush.
        let cut = self.flush.map(|f| {
            if f.same_group == Some(front.f) {
                (f.at - 1, f.walk)
            } else {
                (f.at, f.walk)
            }
        });

        let np = front.f - 1;
        let sc = front.ds + 1;
        let is = sc + 1 + self.rng.below(4);
        let rr = is + 1;
        let x = rr + 1;
        let x_len = if pc == 0x102c { 3 } else { 1 };
        let load = pc == 0x101c;
        let (mt, ma, rw) = if load {
            (x + 1, x + 2, x + 3)
        } else {
            (0, 0, x + x_len)
        };
        let mut segments: Vec<(u8, u64, u64, bool)> = vec![
            (NP, np, np + 1, false),
            (F, front.f, front.pd, true),
            (PD, front.pd, front.dc, true),
            (DC, front.dc, front.rn, true),
            (RN, front.rn, front.ds, true),
            (DS, front.ds, sc, false),
            (SC, sc, is, false),
            (IS, is, rr, false),
            (RR, rr, x, false),
            (X, x, x + x_len, false),
        ];
        if load {
            segments.push((MT, mt, ma, false));
            segments.push((MA, ma, rw, false));
        }
        segments.push((RW, rw, rw + 1, false));

        let end = cut.map_or(u64::MAX, |(at, _)| at);
        let func = self.func;
        for &(stage, from, to, stalls) in &segments {
            for cycle in from..to.min(end.saturating_add(1)) {
                let last = cycle + 1 == to;
                let flushed = cycle == end;
                let stall = stalls && !last && !flushed;
                let mut comment = String::new();
                match stage {
                    F if stall && miss > 0 => comment.push_str("i-cache-miss\\n"),
                    PD if func => {
                        let _ = write!(comment, "optype:0b{:b} ALU-code:0b0\\n", insn & 3);
                    }
                    DC if redirect && last => comment.push_str("Br-pred-miss-id\\n"),
                    DS if func && !flushed => {
                        self.phys = (self.phys + 1) % 64;
                        let _ = write!(
                            comment,
                            "map: r{}(p{}),  = r0(p0), \\nprev: p{}\\nAL alloc: {} \\nIQ alloc: {} ",
                            (insn >> 7) & 31,
                            self.phys,
                            (self.phys + 7) % 64,
                            seq % 64,
                            seq % 16
                        );
                    }
                    X if func && !flushed => {
                        let _ = write!(
                            comment,
                            "\\nd:0x{:x} = fu(a:0x{:x}, b:0x1), alu:0b0, op:0b0",
                            seq.wrapping_mul(7),
                            seq
                        );
                        if mispredict && last {
                            comment.push_str("\\nBr-pred-miss-ex");
                        }
                    }
                    X if mispredict && last => comment.push_str("\\nBr-pred-miss-ex"),
                    MT if func && !flushed => {
                        let _ = write!(comment, "\\n = load([#0x{:08x}])", 0x8002_0000u32);
                    }
                    _ => {}
                }
                self.stage(
                    cycle,
                    stage,
                    seq,
                    sid,
                    (u8::from(stall), u8::from(flushed)),
                    &comment,
                );
                if stage == DC {
                    self.line(
                        cycle,
                        L_RANK,
                        seq,
                        format!("L\t{sid}\t0\t{pc:08x}\t{insn:08x}\n"),
                    );
                }
            }
            if to > end {
                break;
            }
        }
        match cut {
            Some((at, walk)) => {
                // A dispatched op is flushed again by the commit stage's walk.
                if walk && front.ds < at {
                    let wc = self.commit_slot(at);
                    let comment = if func { "\\nrelease: p3, " } else { "" };
                    self.stage(wc, WC, seq, sid, (0, 1), comment);
                }
            }
            None => {
                let cm = self.commit_slot(rw + 1);
                let comment = if func {
                    format!("\\nrelease: p{}, ", seq % 64)
                } else {
                    String::new()
                };
                self.stage(cm, CM, seq, sid, (0, 0), &comment);
            }
        }

        if wrong {
            return;
        }
        if redirect {
            let dc_last = front.rn - 1;
            self.flush = Some(Flush {
                at: dc_last + 1,
                last_np: dc_last,
                same_group: Some(front.f),
                walk: false,
                pc: next_pc(pc, true),
            });
        } else if mispredict || (pc == 0x1034 && self.rng.below(16) == 0) {
            // A misprediction the other way would need a different wrong path; the same
            // stream is refetched instead, which reads the same in the log.
            let x_last = x + x_len - 1;
            self.flush = Some(Flush {
                at: x_last + 1,
                last_np: x_last,
                same_group: None,
                walk: true,
                pc: next_pc(pc, taken),
            });
        }
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut mb: Option<u64> = None;
    let mut cycles: Option<u64> = None;
    let mut seed = 1;
    let mut func = true;
    let mut output: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--mb" => mb = Some(args.next().ok_or("--mb N")?.parse()?),
            "--cycles" => cycles = Some(args.next().ok_or("--cycles N")?.parse()?),
            "--seed" => seed = args.next().ok_or("--seed N")?.parse()?,
            "--nofunc" => func = false,
            "-o" => output = Some(args.next().ok_or("-o PATH")?),
            _ => return Err(format!("unknown argument {arg}").into()),
        }
    }
    let limit_bytes = mb.map(|mb| mb << 20);
    let limit_cycles = cycles.unwrap_or(if mb.is_some() { u64::MAX } else { 10_000 });
    let mut out: Box<dyn Write> = match &output {
        Some(path) if path != "-" => {
            Box::new(BufWriter::with_capacity(1 << 20, File::create(path)?))
        }
        _ => Box::new(BufWriter::new(std::io::stdout().lock())),
    };
    let header = "RSD_Kanata\t0000\n#\tS:\n#\tstage_id\tvalid\tstall\tclear\tiid\tmid\n#\tL:\n\
                  #\tiid\tmid\tpc\tcode\n";
    out.write_all(header.as_bytes())?;
    let mut written = header.len() as u64;
    let mut gen = Gen::new(seed, func);
    let mut cycle = 0u64;
    'run: loop {
        let np = gen.group();
        // Every cycle before the next group's Np is complete.
        while cycle < np {
            if cycle >= limit_cycles || limit_bytes.is_some_and(|limit| written >= limit) {
                break 'run;
            }
            let mut text = format!("C\t{:>11}\n#\tcycle:{cycle}\n", 1);
            if let Some(mut lines) = gen.lines.remove(&cycle) {
                lines.sort_by_key(|&(rank, seq, _)| (rank, seq));
                for (_, _, line) in lines {
                    text.push_str(&line);
                }
            }
            out.write_all(text.as_bytes())?;
            written += text.len() as u64;
            cycle += 1;
        }
    }
    out.flush()?;
    Ok(())
}
