//! Compressed-input detection: `input::from_reader` (gzip, zstd or plain by the magic bytes)
//! and `input::detect::detect` on arbitrary bytes, and on those bytes compressed.
#![no_main]

use std::io::{Cursor, Read, Write};

use kanata_pp::input::{self, detect, InputCompression};
use libfuzzer_sys::fuzz_target;

/// What is read of a decompressed input at most: a few KB of zstd can claim gigabytes.
const LIMIT: u64 = 64 << 20;

/// The input opened from `raw`, and its text (up to `LIMIT`) if it reads to the end.
fn open(raw: &[u8]) -> Option<(input::Input, Result<Vec<u8>, std::io::Error>)> {
    let mut opened = input::from_reader(Box::new(Cursor::new(raw.to_vec())), None).ok()?;
    let mut text = Vec::new();
    let read = (&mut opened.reader)
        .take(LIMIT)
        .read_to_end(&mut text)
        .map(|_| text);
    Some((opened, read))
}

fuzz_target!(|data: &[u8]| {
    // Detection never panics, on the raw bytes and on a head with a prefix stripped.
    let _ = detect::detect(data);
    if let Some((&n, rest)) = data.split_first() {
        let (prefix, head) = rest.split_at(usize::from(n % 4).min(rest.len()));
        let _ = detect::detect(&detect::strip_prefix(head, prefix));
    }

    // Arbitrary bytes: the compression follows the magic bytes; the head is the text's start.
    if let Some((opened, text)) = open(data) {
        let expected = if data.starts_with(&[0x1f, 0x8b]) {
            InputCompression::Gzip
        } else if data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            InputCompression::Zstd
        } else {
            InputCompression::None
        };
        assert_eq!(opened.compression, expected);
        assert!(opened.head.len() <= 4096);
        if let Ok(text) = text {
            assert!(
                text.starts_with(&opened.head),
                "the head is not the start of the text"
            );
            if expected == InputCompression::None {
                assert!(text == data, "plain input read back changed");
            }
        }
    } else {
        // Opening fails only on a compressed input (a bad gzip or zstd header).
        assert!(data.starts_with(&[0x1f, 0x8b]) || data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]));
    }

    // The same bytes compressed read back as themselves, whatever they are.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(data).unwrap();
    let gz = gz.finish().unwrap();
    let zst = zstd::encode_all(data, 1).unwrap();
    for (raw, kind) in [(gz, InputCompression::Gzip), (zst, InputCompression::Zstd)] {
        let (opened, text) = open(&raw).expect("a compressed input opens");
        assert_eq!(opened.compression, kind);
        assert!(text.expect("it reads") == data, "decompressed text differs");
        assert!(opened.head == data[..data.len().min(4096)]);
    }
});
