//! The writer API (`WriterBuilder`, `Writer`) driven by arbitrary call sequences: every
//! sequence either finishes with canonical output (read back by the canonical reader, with
//! the counts of the summary) or fails with an error; never a panic, never invalid bytes.
#![no_main]

use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(result) = kanata_fuzz::write_trace(&mut u) else {
        return;
    };
    match result {
        Ok(finished) => {
            let counts = kanata_fuzz::assert_canonical(&finished.output);
            let summary = finished.summary;
            assert_eq!(counts.instructions, summary.instructions, "instructions");
            assert_eq!(counts.flushed, summary.flushed, "flushed");
            assert_eq!(counts.retired, summary.retired, "retired");
            assert_eq!(counts.open, summary.left_open, "left open");
            assert_eq!(
                finished.output.len() as u64,
                summary.text_bytes,
                "text bytes"
            );
        }
        Err(message) => assert!(!message.is_empty(), "an error without a message"),
    }
});
