//! Throughput of kanata-writer, in events (calls on the writer) per second, against a naive
//! `writeln!` baseline and the `kiseki` crate, all replaying one pre-generated event stream
//! of 100,000 instructions (about 1.05 million events) from a model out-of-order core.
//!
//! `cargo bench -p kanata-writer --bench throughput`; the stream and the replays are in
//! `benches/common/mod.rs`, the side-by-side table in `benches/table.rs`. Each benchmark
//! times one whole run per iteration (writer built, stream replayed, `finish`) unless its
//! name ends in `/replay`, which times the replay loop alone: what a simulator thread pays
//! while it simulates, before `finish` waits for a background compressor to drain.

mod common;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};

use common::{spin_per_ns, Bench, Split, Variant};

/// Simulated work per instruction for the `paced` group, in nanoseconds.
const WORK_NS: f64 = 1000.0;

fn time(bench: &mut Bench, variant: Variant, iters: u64, pick: fn(&Split) -> Duration) -> Duration {
    (0..iters).map(|_| pick(&bench.run(variant))).sum()
}

fn throughput(c: &mut Criterion) {
    let mut bench = Bench::new(100_000);
    let (text_bytes, _) = bench.verify();
    let events = bench.events.len() as u64;
    eprintln!(
        "stream: {events} events, {:.1} MB of Kanata text; throughput below is in events",
        text_bytes as f64 / 1e6
    );

    let mut group = c.benchmark_group("replay");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Elements(events));
    for variant in Variant::ALL {
        group.bench_function(variant.name(), |b| {
            b.iter_custom(|iters| time(&mut bench, variant, iters, |s| s.total))
        });
        if variant.is_background() {
            group.bench_function(format!("{}/replay", variant.name()), |b| {
                b.iter_custom(|iters| time(&mut bench, variant, iters, |s| s.replay))
            });
        }
    }
    group.finish();

    // With a simulator that spends WORK_NS per instruction on its own work.
    bench.set_work((WORK_NS * spin_per_ns()) as u32);
    let mut group = c.benchmark_group("paced_1us_per_instruction");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Elements(events));
    for variant in [Variant::WorkOnly, Variant::Memory, Variant::ZstdBackground] {
        group.bench_function(variant.name(), |b| {
            b.iter_custom(|iters| time(&mut bench, variant, iters, |s| s.total))
        });
    }
    group.finish();
}

criterion_group!(benches, throughput);
criterion_main!(benches);
