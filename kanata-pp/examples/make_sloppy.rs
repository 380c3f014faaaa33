//! Writes a large, deterministic, sloppy Kanata log for benchmarks: the quirks real
//! simulators produce, at the rates they produce them.
//!
//! ```text
//! cargo run --release -p kanata-pp --example make_sloppy -- --mb 150 -o /tmp/sloppy.log
//! ```
//!
//! The log models an out-of-order core fetching two instructions a cycle through eight stages,
//! written the way the MIT 6.1920 and ChampSim writers do it: numbers padded to a fixed width
//! (Q1), no `E` lines (Q6), one `C 1` per cycle with an occasional `C 0` (Q4), trailing TABs
//! (Q1), comment lines (Q3), `R` types written as `'0'`/`'1'` (Q13), labels that arrive one
//! cycle after their `R` (Q10), and a stall lane.

use std::error::Error;
use std::io::Write;

mod common;
use common::{Rng, SizedOutput};

const STAGES: [&str; 8] = ["F", "D", "Rn", "Ds", "X", "M", "W", "Cm"];

struct InFlight {
    id: u64,
    stage: usize,
    /// Cycles left in the current stage.
    left: u32,
    /// Whether a stall (lane 1) is open.
    stalled: bool,
}

fn main() -> Result<(), Box<dyn Error>> {
    let SizedOutput {
        limit,
        path: output,
        mut out,
    } = SizedOutput::from_args()?;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    writeln!(out, "Kanata\t0004\t")?;
    writeln!(out, "# written by make_sloppy: a benchmark input")?;
    writeln!(out, "C=\t{:>8}\t", 0)?;
    let mut live: Vec<InFlight> = Vec::new();
    let mut late_labels: Vec<u64> = Vec::new();
    let (mut next_id, mut retire_id, mut cycle) = (0u64, 0u64, 0u64);
    while out.written < limit {
        // Labels that come one cycle after their instruction retired.
        for id in late_labels.drain(..) {
            writeln!(out, "L\t{id:>10}\t1\tcommitted")?;
        }
        for _ in 0..2 {
            let id = next_id;
            next_id += 1;
            writeln!(out, "I\t{id:>10}\t{:>10}\t{:>3}", id * 4, id % 2)?;
            writeln!(
                out,
                "L\t{id:>10}\t0\t{:08x}: addi x{}, x{}, {}",
                0x8000_0000 + id * 4,
                id % 32,
                (id + 3) % 32,
                id % 100
            )?;
            writeln!(out, "S\t{id:>10}\t{:>10}\tF\t", 0)?;
            live.push(InFlight {
                id,
                stage: 0,
                left: 1,
                stalled: false,
            });
        }
        let mut still = Vec::with_capacity(live.len());
        for mut insn in live.drain(..) {
            insn.left -= 1;
            if insn.left > 0 {
                still.push(insn);
                continue;
            }
            if insn.stage + 1 == STAGES.len() {
                let id = insn.id;
                if rng.chance(5) {
                    writeln!(out, "R\t{id:>10}\t{:>10}\t{:>3}", 0, 49)?;
                } else {
                    writeln!(out, "R\t{id:>10}\t{retire_id:>10}\t{:>3}", 48)?;
                    retire_id += 1;
                    if rng.chance(3) {
                        late_labels.push(id);
                    }
                }
                continue;
            }
            if insn.stalled {
                writeln!(out, "E\t{:>10}\t{:>10}\tstl", insn.id, 1)?;
                insn.stalled = false;
            }
            insn.stage += 1;
            let stage = STAGES[insn.stage];
            writeln!(out, "S\t{:>10}\t{:>10}\t{stage}\t", insn.id, 0)?;
            if stage == "X" {
                writeln!(
                    out,
                    "L\t{:>10}\t1\tr{} = 0x{:x}",
                    insn.id,
                    insn.id % 32,
                    insn.id * 7
                )?;
            }
            insn.left = if stage == "M" && rng.chance(8) {
                writeln!(out, "S\t{:>10}\t{:>10}\tstl\t", insn.id, 1)?;
                writeln!(out, "L\t{:>10}\t2\tD$ miss", insn.id)?;
                insn.stalled = true;
                12
            } else if rng.chance(10) {
                3
            } else {
                1
            };
            still.push(insn);
        }
        live = still;
        cycle += 1;
        if cycle % 1000 == 0 {
            writeln!(out, "// cycle {cycle}")?;
            writeln!(out, "C\t0")?;
        }
        writeln!(out, "C\t{:>10}", 1)?;
    }
    out.inner.flush()?;
    eprintln!(
        "{output}: {} bytes, {next_id} instructions, {cycle} cycles",
        out.written
    );
    Ok(())
}
