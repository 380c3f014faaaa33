//! The C API's cost per event against the Rust API's, on the event stream of kanata-writer's
//! throughput benchmark (`kanata-writer/benches/common/mod.rs`, included here: 100,000
//! instructions from a model out-of-order core, about 1.05 million calls).
//!
//! `cargo bench -p kanata-writer-capi --bench abi` times the stream through the Rust API
//! (`Writer::new(Vec)`, the `kanata_writer/memory` variant of the throughput benchmark), then
//! writes it to an events file, builds `bench/bench.c` with the system's C compiler (`$CC`,
//! else `gcc`) at `-O2` against the `libkanata_writer.a` of this build, and times the same
//! calls through the C API (a callback into a growing buffer). The two outputs must be the
//! same bytes. Rounds alternate between the two sides; the figures are medians.
//! `KANATA_BENCH_ROUNDS=n` sets the number of rounds (default 9). Without `--bench` (as
//! under `cargo test --benches`) it runs a small stream once, as a smoke test.

// `common/mod.rs` names the Rust crate `kanata_writer`, which in this package is the C API's
// library: give it the Rust crate under that name.
extern crate kw as kanata_writer;

#[path = "../../benches/common/mod.rs"]
mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Bench, Event, Variant, STAGES, TEXTS};

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// The stream as `bench.c` reads it: texts, stage names, 12-byte events, the expected output.
fn write_events(path: &Path, events: &[Event], instructions: u64, output: &[u8]) {
    let mut f = Vec::with_capacity(64 + events.len() * 12);
    f.extend_from_slice(b"KWEVENTS");
    f.extend_from_slice(&(TEXTS.len() as u32).to_le_bytes());
    f.extend_from_slice(&(STAGES.len() as u32).to_le_bytes());
    for text in TEXTS.iter().chain(STAGES.iter()) {
        f.extend_from_slice(&(text.len() as u32).to_le_bytes());
        f.extend_from_slice(text.as_bytes());
    }
    f.extend_from_slice(&(events.len() as u64).to_le_bytes());
    f.extend_from_slice(&instructions.to_le_bytes());
    f.extend_from_slice(&(output.len() as u64).to_le_bytes());
    f.extend_from_slice(&fnv1a(output).to_le_bytes());
    for event in events {
        let (tag, small, text, a, b): (u8, u8, u16, u32, u32) = match *event {
            Event::Advance(n) => (0, 0, 0, n, 0),
            Event::Begin { sim } => (1, 0, 0, sim, 0),
            Event::Label { insn, kind, text } => (2, kind, text, insn, 0),
            Event::Enter { insn, stage, .. } => (3, stage, 0, insn, 0),
            Event::Leave { insn, .. } => (4, 0, 0, insn, 0),
            Event::StallBegin(insn) => (5, 0, 0, insn, 0),
            Event::StallEnd(insn) => (6, 0, 0, insn, 0),
            Event::Retire { insn, .. } => (7, 0, 0, insn, 0),
            Event::Flush { insn, .. } => (8, 0, 0, insn, 0),
            Event::Depend { consumer, producer } => (9, 0, 0, consumer, producer),
        };
        f.extend_from_slice(&[tag, small]);
        f.extend_from_slice(&text.to_le_bytes());
        f.extend_from_slice(&a.to_le_bytes());
        f.extend_from_slice(&b.to_le_bytes());
    }
    std::fs::File::create(path)
        .and_then(|mut file| file.write_all(&f))
        .expect("write the events file");
}

/// Builds `bench/bench.c` against this build's static library; `None` without a compiler.
fn build_c_bench(dir: &Path) -> Option<PathBuf> {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = std::env::current_exe().expect("the bench executable");
    let deps = exe.parent().expect("its folder");
    let lib = [deps, deps.parent().unwrap_or(deps)]
        .iter()
        .map(|d| d.join("libkanata_writer.a"))
        .find(|p| p.is_file())
        .expect("libkanata_writer.a beside the bench executable");
    let cc = std::env::var("CC").unwrap_or_else(|_| "gcc".into());
    let out = dir.join("bench_c");
    let status = Command::new(&cc)
        .args(["-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(crate_dir.join("include"))
        .arg(crate_dir.join("bench/bench.c"))
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&out)
        .status();
    match status {
        Ok(s) if s.success() => Some(out),
        Ok(s) => panic!("{cc} bench/bench.c failed: {s}"),
        Err(err) => {
            eprintln!("note: no C compiler `{cc}` ({err}): the C side is skipped");
            None
        }
    }
}

/// One run of the C bench: (name, replay ns/event, total ns/event) per variant.
fn run_c(exe: &Path, events: &Path, rounds: usize) -> Vec<(String, f64, f64)> {
    let out = Command::new(exe)
        .arg(events)
        .arg(rounds.to_string())
        .output()
        .expect("run the C bench");
    assert!(
        out.status.success(),
        "the C bench failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let field = |line: &str, key: &str| -> f64 {
        line.split_whitespace()
            .find_map(|f| f.strip_prefix(key))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in {line:?}"))
    };
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let name = line
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string();
            (name, field(line, "replay="), field(line, "total="))
        })
        .collect()
}

fn main() {
    let full = std::env::args().any(|arg| arg == "--bench");
    let rounds: usize = match std::env::var("KANATA_BENCH_ROUNDS") {
        Ok(n) => n
            .parse::<usize>()
            .expect("KANATA_BENCH_ROUNDS is a number")
            .max(1),
        Err(_) if full => 9,
        Err(_) => 1,
    };
    let mut bench = Bench::new(if full { 100_000 } else { 2_000 });
    let stats = common::stats(&bench.events);
    let per_event = |d: std::time::Duration| d.as_secs_f64() * 1e9 / stats.events as f64;

    bench.run(Variant::Memory);
    let output = bench.output().to_vec();
    let dir = tempfile::tempdir().expect("a temporary directory");
    // `KANATA_BENCH_EVENTS=events.bin` keeps the events file, to run `bench.c` by hand (under
    // a profiler, say).
    let events_path = std::env::var_os("KANATA_BENCH_EVENTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.path().join("events.bin"));
    write_events(&events_path, &bench.events, stats.instructions, &output);
    let c_bench = build_c_bench(dir.path());

    let mut rust = (Vec::new(), Vec::new());
    let mut c: Vec<(String, Vec<f64>, Vec<f64>)> = Vec::new();
    for _ in 0..rounds {
        let split = bench.run(Variant::Memory);
        assert!(bench.output() == output, "the Rust API wrote other bytes");
        rust.0.push(per_event(split.replay));
        rust.1.push(per_event(split.total));
        if let Some(exe) = &c_bench {
            for (i, (name, replay, total)) in run_c(exe, &events_path, 3).into_iter().enumerate() {
                if c.len() <= i {
                    c.push((name, Vec::new(), Vec::new()));
                }
                c[i].1.push(replay);
                c[i].2.push(total);
            }
        }
    }

    println!(
        "stream: {} events ({} instructions), {:.1} MB of Kanata text; {rounds} rounds, medians",
        stats.events,
        stats.instructions,
        output.len() as f64 / 1e6
    );
    println!();
    println!("| variant | replay ns/event | total ns/event | total vs Rust API |");
    println!("|---|---:|---:|---:|");
    let (rust_replay, rust_total) = (median(rust.0), median(rust.1));
    println!("| rust_api/memory | {rust_replay:.2} | {rust_total:.2} | 1.00x |");
    for (name, replay, total) in c {
        let (replay, total) = (median(replay), median(total));
        println!(
            "| {name} | {replay:.2} | {total:.2} | {:.2}x |",
            total / rust_total
        );
    }
}
