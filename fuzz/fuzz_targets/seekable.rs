//! The seekable index (`input::seekable::Index::open`) on arbitrary bytes, and on a valid
//! seekable file (written by `SeekableWriter` from samples/pipeline_sim.kanata) with bytes
//! flipped and the end cut where the fuzzer says: never a panic; `Err`, or an index whose
//! every read ends in text or an error.
#![no_main]

use std::fs::File;
use std::io::{Read, Write};
use std::sync::OnceLock;

use kanata_pp::input::seekable::Index;
use kanata_pp::output::seekable::SeekableWriter;
use libfuzzer_sys::arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;

const TRACE: &[u8] = include_bytes!("../../samples/pipeline_sim.kanata");

/// Text read through an index at most (the frames' sizes are the index's word).
const LIMIT: usize = 16 << 20;

/// The sample trace as a seekable file of about ten frames.
fn valid() -> &'static [u8] {
    static FILE: OnceLock<Vec<u8>> = OnceLock::new();
    FILE.get_or_init(|| {
        let mut writer = SeekableWriter::new(Vec::new(), 1)
            .unwrap()
            .with_frame_size(2048);
        writer.write_all(TRACE).unwrap();
        writer.finish().unwrap()
    })
}

fn temp_file(bytes: &[u8]) -> File {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(bytes).unwrap();
    file
}

/// Reads everything the index offers; gives the text from frame 0 if it all reads.
fn exercise(index: &Index, file: &File, u: &mut Unstructured<'_>) -> Option<Vec<u8>> {
    let frames = index.frames();
    let _ = (index.start_cycle(), index.instructions(), index.end());
    for frame in 0..=frames.min(64) {
        let _ = index.frame_start(frame);
    }
    let _ = index.frame_start(u32::MAX);
    let cycles = Option::<u64>::arbitrary(u).unwrap_or(None);
    let insns = Option::<u64>::arbitrary(u).unwrap_or(None);
    let start = index.start_for(cycles, insns);
    assert!(
        start.frame == 0 || start.frame < frames,
        "a start past the frames"
    );
    let last = u32::arbitrary(u).unwrap_or(0) % (frames.max(1) + 1);
    let _ = index.check_frames(&mut file.try_clone().unwrap(), last);

    // The canonical reader from the start the window would take.
    let mut reader = index.canonical_reader(file.try_clone().unwrap(), &start);
    for _ in 0..LIMIT / 4 {
        match reader.next_command() {
            Ok(Some(_)) => {}
            _ => break,
        }
    }

    // The frames' text from a frame, whole.
    let from = u32::arbitrary(u).unwrap_or(0) % (frames.max(1) + 1);
    let mut frames_read = index.reader(file.try_clone().unwrap(), from);
    let mut total = 0;
    while let Ok(Some(text)) = frames_read.next_text() {
        total += text.len();
        if total > LIMIT {
            break;
        }
        frames_read.give_back(text);
    }
    // And as one stream from frame 0.
    let mut text = Vec::new();
    let stream = index.reader(file.try_clone().unwrap(), 0);
    match stream.take(LIMIT as u64).read_to_end(&mut text) {
        Ok(_) => Some(text),
        Err(err) => {
            assert!(!err.to_string().is_empty());
            None
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(mode) = u8::arbitrary(&mut u) else {
        return;
    };
    let (bytes, pristine) = if mode & 1 == 0 {
        (u.bytes(u.len() / 2).unwrap_or_default().to_vec(), false)
    } else {
        let mut bytes = valid().to_vec();
        let mut flipped = false;
        for _ in 0..(mode >> 1) % 8 {
            let (Ok(at), Ok(xor)) = (u16::arbitrary(&mut u), u8::arbitrary(&mut u)) else {
                break;
            };
            // Mostly near the end, where the seek table and the index are.
            let at = match at & 1 {
                0 => bytes.len() - 1 - usize::from(at >> 1) % bytes.len(),
                _ => usize::from(at >> 1) % bytes.len(),
            };
            bytes[at] ^= xor;
            flipped |= xor != 0;
        }
        if mode & 0x80 != 0 {
            let cut = usize::from(u16::arbitrary(&mut u).unwrap_or(0)) % bytes.len();
            bytes.truncate(bytes.len() - cut);
            flipped |= cut != 0;
        }
        (bytes, !flipped)
    };
    let mut file = temp_file(&bytes);
    match Index::open(&mut file) {
        Ok(Some(index)) => {
            let text = exercise(&index, &file, &mut u);
            if pristine {
                assert!(
                    text.as_deref() == Some(TRACE),
                    "the valid file reads back changed"
                );
            }
        }
        Ok(None) => assert!(!pristine, "the valid file has no index"),
        Err(err) => {
            assert!(!pristine, "the valid file's index is refused: {err}");
            assert!(!err.message().is_empty());
        }
    }
});
