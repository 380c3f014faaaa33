//! Writes a large, deterministic gem5 O3PipeView trace for benchmarks.
//!
//! ```text
//! cargo run --release -p kanata-pp --example make_gem5 -- --mb 200 -o /tmp/gem5.out
//! cargo run --release -p kanata-pp --example make_gem5 -- --mb 200 --ex-logs -o /tmp/gem5-all.out
//! ```
//!
//! The trace models a 4-wide out-of-order core at 2 GHz (500 ticks per cycle) as gem5 prints
//! it with `--debug-flags=O3PipeView`: one 7-line record per instruction, printed when the
//! instruction is destroyed, so out of sequence-number order (shuffled in blocks of 64);
//! about one instruction in twenty squashed (`retire:0`, later stages 0); store completions
//! after the retirement, not clock aligned. With `--ex-logs`, each instruction also gets the
//! `Rename` lines of `--debug-flags=O3PipeView,Rename` (for `--deps`).

use std::error::Error;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};

mod common;
use common::Rng;

const TPC: u64 = 500;
const MNEMONICS: [&str; 6] = [
    "addi a0, a0, 1",
    "ld a5, 8(sp)",
    "sd a5, 16(sp)",
    "bne a0, a1, -12",
    "mul a2, a3, a4",
    "c.mv a1, a5",
];

fn record(rng: &mut Rng, seq: u64, last_retire: &mut u64, ex_logs: bool, out: &mut String) {
    let fetch = 1000 + seq / 4;
    let decode = fetch + 1 + rng.below(2);
    let rename = decode + 1;
    let dispatch = rename + 1;
    let issue = dispatch + rng.below(6);
    let complete = issue + 1 + rng.below(4);
    let pc = 0x1_0000 + (seq % 4096) * 4;
    let mnemonic = MNEMONICS[(seq % 6) as usize];
    if rng.below(20) == 0 {
        let _ = writeln!(
            out,
            "O3PipeView:fetch:{}:0x{pc:08x}:0:{seq}:{mnemonic}\nO3PipeView:decode:{}\n\
             O3PipeView:rename:0\nO3PipeView:dispatch:0\nO3PipeView:issue:0\n\
             O3PipeView:complete:0\nO3PipeView:retire:0:store:0",
            fetch * TPC,
            decode * TPC
        );
        return;
    }
    let retire = (*last_retire).max(complete + 1 + rng.below(3));
    *last_retire = retire;
    if ex_logs {
        let reg = seq % 96;
        let _ = writeln!(
            out,
            "{t:>9}: system.cpu.rename: [tid:0] [sn:{seq}] Looking up integer arch reg 10, got \
             phys reg {} (integer)\n\
             {t:>9}: system.cpu.rename: [tid:0] [sn:{seq}] Renaming arch reg 10 (integer) to \
             physical reg {reg} ({reg}).",
            (seq + 95) % 96,
            t = rename * TPC,
        );
    }
    let store = if mnemonic.starts_with("sd") {
        (retire + 2 + rng.below(20)) * TPC + 1
    } else {
        0
    };
    let _ = writeln!(
        out,
        "O3PipeView:fetch:{}:0x{pc:08x}:0:{seq}:{mnemonic}\nO3PipeView:decode:{}\n\
         O3PipeView:rename:{}\nO3PipeView:dispatch:{}\nO3PipeView:issue:{}\n\
         O3PipeView:complete:{}\nO3PipeView:retire:{}:store:{store}",
        fetch * TPC,
        decode * TPC,
        rename * TPC,
        dispatch * TPC,
        issue * TPC,
        complete * TPC,
        retire * TPC
    );
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut mb = 100u64;
    let mut output = None;
    let mut ex_logs = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--mb" => mb = args.next().ok_or("--mb N")?.parse()?,
            "-o" => output = Some(args.next().ok_or("-o PATH")?),
            "--ex-logs" => ex_logs = true,
            _ => return Err(format!("unknown argument {arg}").into()),
        }
    }
    let path = output.ok_or("give the output with -o")?;
    let mut out = BufWriter::with_capacity(1 << 20, File::create(&path)?);
    let target = mb << 20;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut written, mut seq, mut last_retire) = (0u64, 1u64, 0u64);
    let mut block: Vec<String> = Vec::with_capacity(64);
    while written < target {
        for _ in 0..64 {
            let mut text = String::with_capacity(320);
            record(&mut rng, seq, &mut last_retire, ex_logs, &mut text);
            block.push(text);
            seq += 1;
        }
        for i in (1..block.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            block.swap(i, j);
        }
        for text in block.drain(..) {
            out.write_all(text.as_bytes())?;
            written += text.len() as u64;
        }
    }
    out.flush()?;
    eprintln!("{path}: {} instructions, {written} bytes", seq - 1);
    Ok(())
}
