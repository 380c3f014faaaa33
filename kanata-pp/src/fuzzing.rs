//! The entry point of the fuzz targets (`fuzz/`), compiled only with the `fuzzing` feature:
//! one conversion of bytes in memory, without the files [`convert`](crate::convert) needs.
//!
//! [`convert_bytes`] runs what `convert()` runs for an input without a window and with
//! uncompressed output to a sink it is given (it calls `convert/mod.rs`'s `run` itself):
//! the input opened and decompressed by [`input::from_reader`], the format detected (or
//! forced), the format's reader into the writer. The readers are the same; only the file
//! handling (the temporary file, the rename) is left out. A test below checks that both give
//! the same bytes on the samples.

use std::io::Cursor;

use kanata_writer::{Compression, WriterBuilder};

use crate::diag::Diagnostics;
use crate::error::{Error, ErrorKind};
use crate::input::progress::Progress;
use crate::input::{self, detect};
use crate::{Format, Options};

/// Converts `bytes` (plain, gzip or zstd) as `options` say (its window, destination,
/// compression and seekable settings are ignored) and gives the canonical text, the format
/// read and the repairs made.
pub fn convert_bytes(
    bytes: &[u8],
    options: &Options,
) -> Result<(Vec<u8>, Format, Diagnostics), Error> {
    let opened = input::from_reader(Box::new(Cursor::new(bytes.to_vec())), None)
        .map_err(|err| Error::new(ErrorKind::Io, format!("cannot read: {err}")))?;
    let format = match (options.from, &options.repairs.strip_prefix) {
        (Some(format), _) => format,
        (None, None) => detect::detect(&opened.head)?,
        (None, Some(prefix)) => detect::detect(&detect::strip_prefix(&opened.head, prefix))?,
    };
    let mut diag = Diagnostics::new(options.max_examples, options.strict);
    let progress = Progress::new(false, None, "<fuzz>", None);
    let mut builder = WriterBuilder::new();
    builder.compression(Compression::None).background(true);
    // The conversion's own dispatch, so that the fuzzed path is the converter's.
    let (finished, _) = crate::convert::run(
        format,
        opened.reader,
        builder,
        Vec::new(),
        Compression::None,
        options,
        &mut diag,
        &progress,
    )?;
    Ok((finished.output, format, diag))
}

/// Whether the canonical reader's one-pass reading of common lines agrees with its checked
/// parser on `line` (one line after line 2, without its LF): it declines the line, or reads
/// exactly what the checked parser reads.
/// The reading of a line in a block (`parse_common_at`, what `CanonicalReader::read_each`
/// reads with) agrees with `parse_common` on it too.
pub fn common_line_agrees(line: &[u8]) -> bool {
    use crate::output::canonical::{parse_checked, parse_common, parse_common_at};
    let common = parse_common(line);
    let in_block = line.contains(&b'\n') || {
        let mut block = line.to_vec();
        block.push(b'\n');
        parse_common_at(&block, 0) == common.map(|command| (command, block.len()))
    };
    in_block && common.is_none_or(|common| parse_checked(line, 3).ok() == Some(common))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::convert_bytes;
    use crate::{convert, CloseOpen, Destination, Options};

    /// `convert_bytes` gives what `convert()` writes, on every sample and with every repair.
    #[test]
    fn same_as_convert() {
        let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples");
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "pipeline_sim.kanata",
            "sloppy.kanata",
            "sloppy.log",
            "rsd_raw.log",
        ] {
            let input = samples.join(name);
            let bytes = std::fs::read(&input).unwrap();
            for all in [false, true] {
                let out = dir.path().join("out.kanata");
                let mut options = Options::new(Destination::Path(out.clone()));
                if all {
                    options.repairs.renumber_retire = true;
                    options.repairs.close_open = Some(CloseOpen::Flush);
                    options.repairs.dedupe = true;
                    options.repairs.stretch_zero = true;
                    options.repairs.compact = true;
                }
                let via_file = convert(&input, &options).map(|_| std::fs::read(&out).unwrap());
                let in_memory = convert_bytes(&bytes, &options).map(|(text, _, _)| text);
                match (via_file, in_memory) {
                    (Ok(a), Ok(b)) => assert!(a == b, "{name}: the outputs differ"),
                    (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{name}"),
                    (a, b) => panic!("{name}: {:?} vs {:?}", a.is_ok(), b.is_ok()),
                }
            }
        }
    }
}
