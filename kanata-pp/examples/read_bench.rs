//! Measures the reader of canonical Kanata, the layer under `trace::open`, rendering and
//! Python's `kanata_trace.read`: how long one pass over a plain canonical trace takes with
//! [`CanonicalReader`] (every line parsed and checked) and with [`Instructions`] (the same,
//! assembled into whole instructions) and with [`kanata_pp::trace::open`] (what rendering and
//! Python read through: on a canonical file, `Instructions` on a thread of its own) and with
//! [`SegmentReader`] (the stage segments as columns, what Python's `table()` reads a whole
//! canonical file through: on two threads, `segments`, or on one, `segments1`).
//!
//! ```text
//! cargo run --release -p kanata-pp --example read_bench -- lines|insns|trace|segments|segments1 TRACE.kanata
//! ```
//!
//! It prints the pass's seconds, the lines or instructions and the rate.

use std::error::Error;
use std::fs::File;
use std::io::BufReader;
use std::time::Instant;

use kanata_pp::output::canonical::{CanonicalReader, Instructions};
use kanata_pp::output::segments::SegmentReader;

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [what, path] = &args[..] else {
        return Err("usage: read_bench lines|insns|trace|segments|segments1 TRACE.kanata".into());
    };
    let input = BufReader::with_capacity(1 << 16, File::open(path)?);
    let started = Instant::now();
    let (count, unit) = match what.as_str() {
        "lines" => {
            let mut reader = CanonicalReader::new(input);
            while reader.next_command()?.is_some() {}
            (reader.lines(), "lines")
        }
        "insns" => {
            let mut count = 0u64;
            let mut segments = 0u64;
            for insn in Instructions::new(input) {
                count += 1;
                segments += insn?.stages.len() as u64;
            }
            eprintln!("{segments} segments");
            (count, "instructions")
        }
        "trace" => {
            let options = kanata_pp::Options::new(kanata_pp::Destination::Check);
            let mut count = 0u64;
            let mut trace = kanata_pp::trace::open(path.as_ref(), &options)?;
            for insn in trace.by_ref() {
                insn?;
                count += 1;
            }
            let report = trace.finish()?;
            eprintln!("{} repairs", report.diagnostics.total());
            (count, "instructions")
        }
        "segments" => {
            let columns = SegmentReader::new(input).read_all_on_two_threads()?;
            (columns.len() as u64, "segments")
        }
        "segments1" => {
            let columns = SegmentReader::new(input).read_all()?;
            (columns.len() as u64, "segments")
        }
        _ => {
            return Err(format!(
                "unknown pass `{what}`: lines, insns, trace, segments or segments1"
            )
            .into())
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{seconds:.3} s, {count} {unit}, {:.2} M {unit}/s",
        count as f64 / seconds / 1e6
    );
    Ok(())
}
