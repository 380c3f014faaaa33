//! Side-by-side runner: every variant of the throughput benchmark in one process, in
//! interleaved rounds, printed as one Markdown table of ns/event with ratios.
//!
//! `cargo bench -p kanata-writer --bench table` (`KANATA_BENCH_ROUNDS=n` for more rounds).
//! On a shared, noisy machine the ratios are steadier than the absolute figures: each round
//! runs every variant once, in a rotating order, and a ratio is the median over rounds of
//! the ratio within a round. Without `--bench` (as under `cargo test --benches`) it runs one
//! small round only, as a smoke test.

mod common;

use common::{spin_per_ns, stats, Bench, Split, Variant};

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
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
    let instructions = if full { 100_000 } else { 2_000 };
    let mut bench = Bench::new(instructions);
    // For a profiler: `KANATA_BENCH_ONLY=kanata_writer/memory` runs that variant alone.
    if let Ok(only) = std::env::var("KANATA_BENCH_ONLY") {
        let variant = Variant::ALL
            .into_iter()
            .find(|v| v.name() == only)
            .expect("KANATA_BENCH_ONLY names a variant");
        let runs: Vec<f64> = (0..rounds.max(1) * 10)
            .map(|_| bench.run(variant).total.as_secs_f64() * 1e9 / bench.events.len() as f64)
            .collect();
        println!(
            "{only}: {:.2} ns/event (median of {})",
            median(runs.clone()),
            runs.len()
        );
        return;
    }
    let (text_bytes, kiseki_bytes) = bench.verify();
    let s = stats(&bench.events);
    // `KANATA_BENCH_DUMP=trace.kanata` writes the stream's Kanata text, to look at it or to
    // time a compressor on it (`zstd -b1 -e5 trace.kanata`).
    if let Ok(path) = std::env::var("KANATA_BENCH_DUMP") {
        bench.run(Variant::Memory);
        std::fs::write(&path, bench.output()).expect("KANATA_BENCH_DUMP is writable");
    }
    let events = s.events as f64;
    println!(
        "stream: {} events, {} instructions ({} flushed, {:.1}%), {} cycles ({} `Advance`), \
         {} labels, {} stage entries, {} stalls, {} dependencies; {:.1} MB of Kanata text \
         ({:.1} bytes/event; kiseki {:.1} MB)",
        s.events,
        s.instructions,
        s.flushed,
        100.0 * s.flushed as f64 / s.instructions as f64,
        s.cycles,
        s.advances,
        s.labels,
        s.enters,
        s.stalls,
        s.depends,
        text_bytes as f64 / 1e6,
        text_bytes as f64 / events,
        kiseki_bytes as f64 / 1e6,
    );

    let all = Variant::ALL;
    let mut runs: Vec<Vec<Split>> = vec![Vec::new(); all.len()];
    for variant in all {
        bench.run(variant); // warm-up
    }
    for round in 0..rounds {
        for k in 0..all.len() {
            let at = (k + round) % all.len();
            runs[at].push(bench.run(all[at]));
        }
    }
    let index = |v: Variant| all.iter().position(|&x| x == v).unwrap();
    let ns = |d: std::time::Duration| d.as_secs_f64() * 1e9 / events;
    // Median over rounds of the ratio of `a` to `b` within each round.
    let ratio = |a: &[Split], b: &[Split], pick: fn(&Split) -> std::time::Duration| {
        median(
            a.iter()
                .zip(b)
                .map(|(a, b)| pick(a).as_secs_f64() / pick(b).as_secs_f64())
                .collect(),
        )
    };
    let total = |s: &Split| s.total;
    let naive = &runs[index(Variant::NaiveMemory)];
    let kiseki = &runs[index(Variant::Kiseki)];
    let memory = &runs[index(Variant::Memory)];

    println!("\n{rounds} rounds; medians. ns/event and Mevents/s: whole run on the calling thread (writer built, replay, finish).");
    println!("\"replay\": the replay loop alone. Ratios: within each round, then the median.\n");
    println!("| variant | ns/event | best ns/event | Mevents/s | replay ns/event | vs naive (time) | kiseki / this | output MB |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (at, variant) in all.iter().enumerate() {
        let r = &runs[at];
        let t = median(r.iter().map(|s| ns(s.total)).collect());
        let replay = median(r.iter().map(|s| ns(s.replay)).collect());
        let best = r.iter().map(|s| ns(s.total)).fold(f64::INFINITY, f64::min);
        println!(
            "| {} | {:.2} | {:.2} | {:.1} | {:.2} | {:.2}x | {:.2}x | {:.2} |",
            variant.name(),
            t,
            best,
            1e3 / t,
            replay,
            ratio(r, naive, total),
            ratio(kiseki, r, total),
            r[0].bytes as f64 / 1e6,
        );
    }

    let memory_ns = median(memory.iter().map(|s| ns(s.total)).collect());
    let memory_best = memory
        .iter()
        .map(|s| ns(s.total))
        .fold(f64::INFINITY, f64::min);
    let speedup = ratio(kiseki, memory, total);
    let zstd_bg = &runs[index(Variant::ZstdBackground)];
    let bg_total = ratio(zstd_bg, memory, total);
    // The background replay loop against the whole plain-memory run.
    let bg_replay = median(
        zstd_bg
            .iter()
            .zip(memory)
            .map(|(z, m)| z.replay.as_secs_f64() / m.total.as_secs_f64())
            .collect(),
    );
    let paced_ratios = paced(&mut bench, rounds.min(5), events, s.instructions as f64);

    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    println!("\ngoals:");
    println!(
        "- >= 3x kiseki's throughput (memory): {speedup:.2}x, {}",
        verdict(speedup >= 3.0)
    );
    println!(
        "- < 10 ns/event to memory: {memory_ns:.2} ns (best run {memory_best:.2} ns), {}",
        verdict(memory_ns < 10.0)
    );
    println!(
        "- background zstd < 1.2x plain memory on the calling thread: replay loop {bg_replay:.2}x \
         ({}), with finish (waits for the compressor) {bg_total:.2}x ({})",
        verdict(bg_replay < 1.2),
        verdict(bg_total < 1.2)
    );
    for (work_ns, ratio) in paced_ratios {
        println!(
            "  with {work_ns} ns of simulation per instruction: {ratio:.2}x ({})",
            verdict(ratio < 1.2)
        );
    }
}

/// The background compressor only has to keep up with the simulator, which does more than
/// write its trace: the same comparison with `spin` standing in for the simulation work.
/// Returns, per amount of work, the zstd-background / memory ratio.
fn paced(bench: &mut Bench, rounds: usize, events: f64, instructions: f64) -> Vec<(f64, f64)> {
    let mut zstd_ratios = Vec::new();
    let per_ns = spin_per_ns();
    let variants = [
        Variant::WorkOnly,
        Variant::Memory,
        Variant::ZstdInline,
        Variant::ZstdBackground,
        Variant::GzipBackground,
    ];
    println!("\nwith simulated work per instruction (a spin loop before each `begin`), {rounds} rounds:\n");
    println!("| work/instruction | variant | ns/instruction | writer ns/event (above work) | vs memory (time) |");
    println!("|---:|---|---:|---:|---:|");
    for work_ns in [250.0, 500.0, 1000.0] {
        bench.set_work((work_ns * per_ns) as u32);
        let mut runs: Vec<Vec<Split>> = vec![Vec::new(); variants.len()];
        for variant in variants {
            bench.run(variant); // warm-up
        }
        for round in 0..rounds {
            for k in 0..variants.len() {
                let at = (k + round) % variants.len();
                runs[at].push(bench.run(variants[at]));
            }
        }
        let secs = |r: &[Split]| median(r.iter().map(|s| s.total.as_secs_f64()).collect());
        let work = secs(&runs[0]);
        for (at, variant) in variants.iter().enumerate() {
            let ratio = median(
                runs[at]
                    .iter()
                    .zip(&runs[1])
                    .map(|(a, m)| a.total.as_secs_f64() / m.total.as_secs_f64())
                    .collect(),
            );
            let t = secs(&runs[at]);
            if *variant == Variant::ZstdBackground {
                zstd_ratios.push((work_ns, ratio));
            }
            println!(
                "| {work_ns} ns | {} | {:.0} | {:.2} | {:.2}x |",
                variant.name(),
                t * 1e9 / instructions,
                (t - work) * 1e9 / events,
                ratio
            );
        }
    }
    bench.set_work(0);
    zstd_ratios
}
