//! Measures the seekable `.kanata.zst` against one zstd frame, on a canonical trace:
//! compression time and size per frame size, the cost of scanning the text for the index,
//! and the time to open the index and read one frame. `kanata-pp/benches/seekable.sh` runs
//! it side by side, alternating, several rounds.
//!
//! ```text
//! cargo run --release -p kanata-pp --example seekable_bench -- compress TRACE.kanata zst|stream|FRAME_SIZE OUT
//! cargo run --release -p kanata-pp --example seekable_bench -- scan TRACE.kanata line|skim|filter
//! cargo run --release -p kanata-pp --example seekable_bench -- read FILE.kanata.zst
//! ```
//!
//! `compress` feeds the text in 128 KiB writes, as the writer's buffer does, to the one-frame
//! compressor of `kanata-writer` (`zst`, what a non-seekable `.kanata.zst` is), to zstd's own
//! streaming encoder (`stream`, one frame) or to `SeekableWriter` with frames of `FRAME_SIZE`
//! bytes (`1M`, `256K` work), at level 3.

use std::error::Error;
use std::fs::File;
use std::io::{BufRead, BufWriter, Read, Write};
use std::time::Instant;

use kanata_pp::input::seekable::Index;
use kanata_pp::output::canonical::LineParser;
use kanata_pp::output::seekable::SeekableWriter;
use kanata_writer::{CompressWriter, Compression};

fn size(arg: &str) -> Result<usize, Box<dyn Error>> {
    let (digits, unit) = match arg.as_bytes().last() {
        Some(b'K' | b'k') => (&arg[..arg.len() - 1], 1 << 10),
        Some(b'M' | b'm') => (&arg[..arg.len() - 1], 1 << 20),
        _ => (arg, 1),
    };
    Ok(digits.parse::<usize>()? * unit)
}

fn feed(input: &str, mut out: impl Write) -> Result<(), Box<dyn Error>> {
    let mut file = File::open(input)?;
    let mut buf = vec![0u8; 128 << 10];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        out.write_all(&buf[..n])?;
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let started = Instant::now();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["compress", input, "zst", output] => {
            let mut w = CompressWriter::new(
                BufWriter::new(File::create(output)?),
                Compression::Zstd,
                Some(3),
            )?;
            feed(input, &mut w)?;
            w.finish()?.flush()?;
            let len = std::fs::metadata(output)?.len();
            println!("zst\t{:.3} s\t{len} bytes", started.elapsed().as_secs_f64());
        }
        ["compress", input, "stream", output] => {
            // zstd's own streaming encoder (one frame, with a checksum), for comparison.
            let mut w = zstd::stream::Encoder::new(BufWriter::new(File::create(output)?), 3)?;
            w.include_checksum(true)?;
            feed(input, &mut w)?;
            w.finish()?.flush()?;
            let len = std::fs::metadata(output)?.len();
            println!(
                "stream\t{:.3} s\t{len} bytes",
                started.elapsed().as_secs_f64()
            );
        }
        ["compress", input, frame, output] => {
            let mut w = SeekableWriter::new(BufWriter::new(File::create(output)?), 3)?
                .with_frame_size(size(frame)?);
            feed(input, &mut w)?;
            w.finish()?.flush()?;
            let len = std::fs::metadata(output)?.len();
            println!(
                "seekable {frame}\t{:.3} s\t{len} bytes",
                started.elapsed().as_secs_f64()
            );
        }
        ["scan", input, how] => {
            // The cost of reading every line for the index: `line` (checked), `skim`, or
            // `filter` (skim the C, I and R lines only, as the writer does).
            let text = std::fs::read(input)?;
            let started = Instant::now();
            let mut parser = LineParser::new();
            let mut lines = 0u64;
            let mut at = 0;
            for lf in memchr::memchr_iter(b'\n', &text) {
                let line = &text[at..lf];
                at = lf + 1;
                lines += 1;
                match how {
                    "line" => {
                        parser.line(line)?;
                    }
                    "skim" => {
                        parser.skim(line)?;
                    }
                    _ => {
                        if lines <= 2 || matches!(line.first(), Some(b'C' | b'I' | b'R')) {
                            parser.skim(line)?;
                        }
                    }
                }
            }
            let secs = started.elapsed().as_secs_f64();
            println!(
                "scan {how}\t{secs:.3} s\t{:.0} MB/s\t{lines} lines",
                text.len() as f64 / secs / 1e6
            );
        }
        ["read", input] => {
            let mut file = File::open(input)?;
            let opened = Instant::now();
            let index = Index::open(&mut file)?.ok_or("no index")?;
            let open_ms = opened.elapsed().as_secs_f64() * 1e3;
            // One frame from the middle, then the frames around it: the cost of one frame.
            let frames = index.frames();
            let mut total = 0.0;
            let mut bytes = 0usize;
            let samples = 20.min(frames);
            for k in 0..samples {
                let frame = frames / 4 + k * (frames / 2 / samples.max(1));
                let file = File::open(input)?;
                let t = Instant::now();
                let mut reader = index.reader(file, frame);
                let n = reader.fill_buf()?.len();
                total += t.elapsed().as_secs_f64();
                bytes += n;
            }
            println!(
                "read\topen index {open_ms:.2} ms\t{frames} frames\tone frame {:.2} ms ({} KiB of text)",
                total / f64::from(samples) * 1e3,
                bytes / samples as usize / 1024
            );
        }
        _ => return Err("usage: see the example's docs".into()),
    }
    Ok(())
}
