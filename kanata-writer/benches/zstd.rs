//! The writer's zstd encoder (`CompressWriter`, a ring of windows fed to zstd's buffer-less
//! interface) against the zstd crate's streaming encoder, on the same text, side by side:
//!
//! ```sh
//! KANATA_ZSTD_TEXT=/tmp/kanata-pp-bench/normalized.kanata cargo bench -p kanata-writer --bench zstd
//! ```
//!
//! Without `KANATA_ZSTD_TEXT` it compresses a generated trace of about 64 MB. Both encoders
//! get the text in 128 KiB writes, at level 3 with a checksum, into memory; rounds alternate
//! between them and the medians are printed with the compressed sizes.

use std::io::Write;
use std::time::Instant;

use kanata_writer::{CompressWriter, Compression};

fn generated(len: usize) -> Vec<u8> {
    let mut text = b"Kanata\t0004\nC=\t0\n".to_vec();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut id = 0u64;
    while text.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let stage = ["F", "Dc", "Rn", "Is", "X", "Cm"][(state % 6) as usize];
        let line = match state % 7 {
            0 => format!(
                "I\t{id}\t{id}\t0\nL\t{id}\t0\t{:08x}: addi x1, x2, {}\n",
                state >> 32,
                state % 97
            ),
            1 => format!("R\t{}\t{}\t0\nC\t1\n", id.saturating_sub(40), id / 2),
            _ => format!("S\t{}\t0\t{stage}\n", id.saturating_sub(state % 40)),
        };
        text.extend_from_slice(line.as_bytes());
        id += u64::from(state % 7 == 0);
    }
    text
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let full = std::env::args().any(|arg| arg == "--bench");
    let text = match std::env::var("KANATA_ZSTD_TEXT") {
        Ok(path) => std::fs::read(&path).expect("KANATA_ZSTD_TEXT is a readable file"),
        Err(_) => generated(if full { 64 << 20 } else { 1 << 20 }),
    };
    let rounds = if full { 9 } else { 1 };
    let ring = || {
        let mut w = CompressWriter::new(Vec::new(), Compression::Zstd, Some(3)).unwrap();
        for piece in text.chunks(128 * 1024) {
            w.write_all(piece).unwrap();
        }
        w.finish().unwrap()
    };
    let stream = || {
        let mut w = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
        w.include_checksum(true).unwrap();
        for piece in text.chunks(128 * 1024) {
            w.write_all(piece).unwrap();
        }
        w.finish().unwrap()
    };
    let (mut ring_ms, mut stream_ms) = (Vec::new(), Vec::new());
    let (mut ring_len, mut stream_len) = (0, 0);
    for _ in 0..rounds {
        let start = Instant::now();
        ring_len = ring().len();
        ring_ms.push(start.elapsed().as_secs_f64() * 1e3);
        let start = Instant::now();
        stream_len = stream().len();
        stream_ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let (ring_ms, stream_ms) = (median(ring_ms), median(stream_ms));
    println!("{} bytes of text, {rounds} rounds, medians:", text.len());
    println!("| encoder | ms | MB/s | compressed bytes |\n|---|---:|---:|---:|");
    for (name, ms, len) in [
        ("CompressWriter (ring)", ring_ms, ring_len),
        ("zstd::stream::Encoder", stream_ms, stream_len),
    ] {
        println!(
            "| {name} | {ms:.1} | {:.0} | {len} |",
            text.len() as f64 / ms / 1e3
        );
    }
    println!("ring / stream time: {:.3}x", ring_ms / stream_ms);
}
