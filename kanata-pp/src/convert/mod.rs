//! One conversion, callable from Rust: read an input, normalize it, write the output through
//! a temporary file that is renamed into place only when everything succeeded.

pub(crate) mod converter;
mod paths;

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;

use kanata_writer::{CompressWriter, Compression, Finished, Summary, WriterBuilder};

use crate::diag::Diagnostics;
use crate::diag::Rule;
use crate::error::{Error, ErrorKind};
use crate::gem5::Gem5Options;
use crate::input::detect::{self, Format};
use crate::input::progress::Progress;
use crate::input::seekable::{Index, Start};
use crate::input::{self, InputCompression, Lines};
use crate::kanata::normalize::{KanataNormalizer, Repairs};
use crate::kanata::read::Sharing;
use crate::output::analysis::AnalysisOptions;
use crate::output::seekable::SeekableWriter;
use crate::output::stats::{StatsSink, TraceStats};
use crate::output::window::{self, Window, WindowFilter};
use crate::rsd::RsdOptions;

use converter::Converter;
pub use paths::{abandon_outputs, default_output, output_stem, Abandoned};
pub(crate) use paths::{is_same_file, write_output};
use paths::{is_special_file, temp_beside};

/// Where the converted trace goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    /// A file, written beside it under a temporary name and renamed at the end.
    Path(PathBuf),
    /// Standard output.
    Stdout,
    /// Nowhere: validate only (`--check`).
    Check,
}

/// How to convert.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// The input format; `None` detects it.
    pub from: Option<Format>,
    /// Where the output goes.
    pub destination: Destination,
    /// Output compression; `None` takes it from the output's extension.
    pub compression: Option<Compression>,
    /// Compression level; `None` for the default (gzip 6, zstd 3).
    pub level: Option<i32>,
    /// The repairs and clean-ups of Kanata input.
    pub repairs: Repairs,
    /// How gem5 O3PipeView input is read.
    pub gem5: Gem5Options,
    /// How RSD raw logs are read.
    pub rsd: RsdOptions,
    /// Any repair is an error.
    pub strict: bool,
    /// Examples kept per rule in the diagnostics (`usize::MAX` for all).
    pub max_examples: usize,
    /// Show a progress bar (only ever drawn on a terminal).
    pub progress: bool,
    /// Compute the trace's statistics ([`Report::stats`]): of the window, with a window.
    pub stats: bool,
    /// What the analysis in the statistics computes (hot spots, `--latency`): see
    /// [`crate::output::analysis`].
    pub analysis: AnalysisOptions,
    /// The instructions to keep (`--cycles`, `--sim-cycles`, `--insns`, `--threads`); the
    /// default keeps every one. See [`crate::output::window`].
    pub window: Window,
    /// Write zstd output in the seekable format, with an index (`--seekable`; see
    /// [`crate::output::seekable`]). Off by default: one zstd frame.
    pub seekable: bool,
    /// Read a window of a seekable input through its index (the default); `false` reads
    /// it from the start (`--no-index`).
    pub use_index: bool,
    /// The text a frame of seekable output holds at least; `None` for
    /// [`DEFAULT_FRAME_SIZE`](crate::output::seekable::DEFAULT_FRAME_SIZE).
    pub frame_size: Option<usize>,
    /// The bars of a batch, drawn together.
    pub(crate) progress_group: Option<indicatif::MultiProgress>,
}

impl Options {
    /// Convert to `destination` with the default repairs.
    pub fn new(destination: Destination) -> Options {
        Options {
            from: None,
            destination,
            compression: None,
            level: None,
            repairs: Repairs::default(),
            gem5: Gem5Options::default(),
            rsd: RsdOptions::default(),
            strict: false,
            max_examples: 5,
            progress: false,
            stats: false,
            analysis: AnalysisOptions::default(),
            window: Window::all(),
            seekable: false,
            use_index: true,
            frame_size: None,
            progress_group: None,
        }
    }
}

/// What a conversion did.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Report {
    /// The input as named.
    pub input: String,
    /// The output path, if written to a file.
    pub output: Option<PathBuf>,
    /// The input format.
    pub format: Format,
    /// The input's compression.
    pub input_compression: InputCompression,
    /// The output's compression.
    pub output_compression: Compression,
    /// What the written trace holds (with a window: the window).
    pub summary: Summary,
    /// Every repair, by rule.
    pub diagnostics: Diagnostics,
    /// Bytes of input, as stored (compressed).
    pub bytes_in: u64,
    /// Lines of input text.
    pub lines_in: u64,
    /// Bytes written (compressed), 0 for `--check`.
    pub bytes_out: u64,
    /// Wall time.
    pub seconds: f64,
    /// The trace's statistics, when asked for.
    pub stats: Option<TraceStats>,
    /// What cutting the window did, when a window was asked for.
    pub window: Option<WindowReport>,
}

/// What cutting a window did ([`Report::window`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct WindowReport {
    /// Instructions of the whole trace read, kept or not.
    pub instructions_read: u64,
    /// Whether reading stopped before the end of the input, because nothing later could be
    /// in the window.
    pub stopped_early: bool,
    /// Whether the window was read through the input's seekable index (only the frames it
    /// needs).
    pub indexed: bool,
}

/// Checks a compression level before any work: out of range is a usage error.
pub fn check_level(compression: Compression, level: Option<i32>) -> Result<(), Error> {
    compression
        .check_level(level.unwrap_or(compression.default_level()))
        .map_err(|err| Error::new(ErrorKind::Usage, err.to_string()))
}

/// Checks that `--seekable` comes with zstd output, before any work: the seekable format is
/// zstd's.
pub fn check_seekable(compression: Compression, seekable: bool) -> Result<(), Error> {
    if seekable && compression != Compression::Zstd {
        return Err(Error::new(
            ErrorKind::Usage,
            "--seekable needs zstd output (a .zst output or --compress zstd)",
        ));
    }
    Ok(())
}

/// The output compression: the option, else the output's extension; an extension that
/// contradicts the option is a usage error, because Konata opens files by extension.
pub(crate) fn output_compression(options: &Options) -> Result<Compression, Error> {
    let from_name = match &options.destination {
        Destination::Path(path) => Some(Compression::from_path(path)),
        _ => None,
    };
    match (options.compression, from_name) {
        (Some(asked), Some(named)) if asked != named => Err(Error::new(
            ErrorKind::Usage,
            format!(
                "--compress {} contradicts the output's extension; Konata opens files by \
                 extension (.gz, .zst)",
                compression_name(asked)
            ),
        )),
        (Some(asked), _) => Ok(asked),
        (None, Some(named)) => Ok(named),
        (None, None) => Ok(Compression::None),
    }
}

/// `none`, `gzip` or `zstd`.
pub fn compression_name(compression: Compression) -> &'static str {
    match compression {
        Compression::None => "none",
        Compression::Gzip => "gzip",
        Compression::Zstd => "zstd",
    }
}

/// Converts `input` (a path, or `-` for stdin) as `options` say.
pub fn convert(input: &Path, options: &Options) -> Result<Report, Error> {
    convert_named(input, options, None)
}

/// Converts `input` as `options` say into `text`, uncompressed, whatever the destination:
/// how the [`trace`](crate::trace) reader gets the canonical text of a window.
pub(crate) fn convert_into(
    input: &Path,
    options: &Options,
    text: Box<dyn Write + Send>,
) -> Result<Report, Error> {
    convert_named(input, options, Some(text))
}

fn convert_named(
    input: &Path,
    options: &Options,
    text: Option<Box<dyn Write + Send>>,
) -> Result<Report, Error> {
    let name = if input.as_os_str() == "-" {
        "<stdin>".to_owned()
    } else {
        input.display().to_string()
    };
    convert_inner(input, &name, options, text).map_err(|err| match err.kind() {
        // A usage error is about the command line, not the input.
        ErrorKind::Usage => err,
        _ => err.with_file(&name),
    })
}

fn convert_inner(
    input: &Path,
    name: &str,
    options: &Options,
    text: Option<Box<dyn Write + Send>>,
) -> Result<Report, Error> {
    let started = Instant::now();
    let compression = output_compression(options)?;
    check_level(compression, options.level)?;
    if options.destination != Destination::Check {
        check_seekable(compression, options.seekable)?;
    }
    let mut builder = WriterBuilder::new();
    builder.compression(compression);
    if let Some(level) = options.level {
        builder.level(level);
    }
    if let Destination::Path(output) = &options.destination {
        if is_same_file(output, input) {
            return Err(Error::new(
                ErrorKind::Usage,
                format!("the output {} is the input", output.display()),
            ));
        }
    }
    let opened = input::open(input)
        .map_err(|err| Error::new(ErrorKind::Io, format!("cannot read: {err}")))?;
    let format = match (options.from, &options.repairs.strip_prefix) {
        (Some(format), _) => format,
        (None, None) => detect::detect(&opened.head)?,
        // Q18: the trace is the lines with the prefix; the rest is other output.
        (None, Some(prefix)) => detect::detect(&detect::strip_prefix(&opened.head, prefix))?,
    };
    let mut diag = Diagnostics::new(options.max_examples, options.strict);
    let mut progress = Progress::new(
        options.progress,
        opened.raw_len,
        name,
        options.progress_group.as_ref(),
    );
    let raw_read = opened.raw_read.clone();
    progress.follow(raw_read.clone());
    let input_compression = opened.compression;

    let text_given = text.is_some();
    // Where the text goes, and the temporary file that becomes the output at the end.
    let (sink, compression, temp): (Box<dyn Write + Send>, _, _) =
        match (text, &options.destination) {
            (Some(text), _) => {
                builder.compression(Compression::None);
                (text, Compression::None, None)
            }
            (None, Destination::Check) => {
                // Nothing to write: the writer checks every call and formats nothing, unless
                // `--stats` or a window, which read the text.
                builder
                    .compression(Compression::None)
                    .discard(!options.stats && !options.window.is_restricted());
                (Box::new(io::sink()), Compression::None, None)
            }
            (None, Destination::Stdout) => {
                if compression != Compression::None && io::IsTerminal::is_terminal(&io::stdout()) {
                    return Err(Error::new(
                        ErrorKind::Usage,
                        "refusing to write compressed data to a terminal",
                    ));
                }
                (Box::new(io::stdout()), compression, None)
            }
            // A device or a pipe (`-o /dev/null`, a FIFO) is written in place: a temporary file
            // renamed over it would replace the device itself with a regular file.
            (None, Destination::Path(path)) if is_special_file(path) => {
                let file = fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(|err| {
                        Error::new(
                            ErrorKind::Io,
                            format!("cannot write {}: {err}", path.display()),
                        )
                    })?;
                (Box::new(file), compression, None)
            }
            (None, Destination::Path(path)) => {
                let (temp, target) = temp_beside(path)?;
                (Box::new(temp.reopen()?), compression, Some((temp, target)))
            }
        };
    // With `--stats` the statistics are computed on the background thread too, beside the
    // conversion (the analysis costs about what the conversion does).
    if options.destination != Destination::Check || text_given || options.stats {
        builder.background(true);
    }
    // On any error `temp` is dropped, which deletes it: no partial output, and an existing
    // file at the output path stays as it was.
    let indexed = match may_use_index(input, format, input_compression, options) {
        true => open_index(input, options, &raw_read, &mut diag),
        false => None,
    };
    if indexed.is_some() {
        // Only the frames read count.
        raw_read.store(0, Ordering::Relaxed);
    }
    let (summary, lines_in, stats, window) = run_to(
        format,
        opened.reader,
        builder,
        sink,
        compression,
        options,
        &mut diag,
        &progress,
        indexed,
    )?;
    let bytes_out = match temp {
        Some((temp, target)) => {
            let len = temp.as_file().metadata().map(|m| m.len()).unwrap_or(0);
            temp.persist(&target).map_err(|err| {
                Error::new(
                    ErrorKind::Io,
                    format!("cannot write {}: {}", target.display(), err.error),
                )
            })?;
            len
        }
        None => 0,
    };
    let output = match &options.destination {
        Destination::Path(path) => Some(path.clone()),
        _ => None,
    };
    progress.finish();
    Ok(Report {
        input: name.to_owned(),
        output,
        format,
        input_compression,
        output_compression: compression,
        summary,
        diagnostics: diag,
        bytes_in: raw_read.load(std::sync::atomic::Ordering::Relaxed),
        lines_in,
        bytes_out,
        seconds: started.elapsed().as_secs_f64(),
        stats,
        window,
    })
}

/// What [`run_to`] gives: the summary of the output, the lines read, the statistics and what
/// the window did.
type RunOutcome = (Summary, u64, Option<TraceStats>, Option<WindowReport>);

/// A seekable input with its index, for a window read through the index, and the counter
/// of the bytes read that the report and the progress bar show.
type Indexed = (Index, fs::File, Arc<AtomicU64>);

/// Runs the conversion into `output`; with `--stats`, the statistics are taken from the
/// uncompressed text on its way to the compressor, on the writer's background thread.
#[allow(clippy::too_many_arguments)]
fn run_to<O: Write + Send + 'static>(
    format: Format,
    reader: Box<dyn io::Read + Send>,
    mut builder: WriterBuilder,
    output: O,
    compression: Compression,
    options: &Options,
    diag: &mut Diagnostics,
    progress: &Progress,
    indexed: Option<Indexed>,
) -> Result<RunOutcome, Error> {
    if options.window.is_restricted() {
        let out = window_output(output, compression, options)?;
        if let Some((index, file, bytes_read)) = indexed {
            return run_indexed(&index, file, &bytes_read, out, options, diag, progress);
        }
        return run_window(format, reader, builder, out, options, diag, progress);
    }
    let seekable = seekable_output(compression, options);
    if !options.stats && !seekable {
        let (finished, lines) = run(
            format,
            reader,
            builder,
            output,
            compression,
            options,
            diag,
            progress,
        )?;
        return Ok((finished.summary, lines, None, None));
    }
    // The text goes out uncompressed, to be counted or cut into frames on the way.
    builder.compression(Compression::None);
    let compressed = Compressed::new(output, compression, options)?;
    if !options.stats {
        let (finished, lines) = run(
            format,
            reader,
            builder,
            compressed,
            compression,
            options,
            diag,
            progress,
        )?;
        finished.output.finish()?.flush()?;
        return Ok((finished.summary, lines, None, None));
    }
    let sink = StatsSink::with_analysis(compressed, options.analysis.clone());
    let (finished, lines) = run(
        format,
        reader,
        builder,
        sink,
        compression,
        options,
        diag,
        progress,
    )?;
    let summary = finished.summary;
    let (compressed, stats) = finished.output.into_parts();
    compressed.finish()?.flush()?;
    Ok((summary, lines, Some(stats), None))
}

/// Whether the output is written in the seekable format: `--seekable` with zstd output.
fn seekable_output(compression: Compression, options: &Options) -> bool {
    options.seekable && compression == Compression::Zstd
}

/// The compressor of text the writer hands over uncompressed: one stream, or the frames of
/// the seekable format.
// One per conversion, made once: the sizes of the variants do not matter.
#[allow(clippy::large_enum_variant)]
enum Compressed<O: Write> {
    Stream(CompressWriter<O>),
    Seekable(SeekableWriter<O>),
}

impl<O: Write> Compressed<O> {
    fn new(output: O, compression: Compression, options: &Options) -> Result<Self, Error> {
        Ok(match seekable_output(compression, options) {
            true => {
                let level = options.level.unwrap_or(compression.default_level());
                let mut writer = SeekableWriter::new(output, level)?;
                if let Some(bytes) = options.frame_size {
                    writer = writer.with_frame_size(bytes);
                }
                Compressed::Seekable(writer)
            }
            false => Compressed::Stream(CompressWriter::new(output, compression, options.level)?),
        })
    }

    /// Ends the compressed stream (the seekable format's index and seek table) and gives the
    /// output back.
    fn finish(self) -> io::Result<O> {
        match self {
            Compressed::Stream(out) => out.finish(),
            Compressed::Seekable(out) => out.finish(),
        }
    }
}

impl<O: Write> Write for Compressed<O> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Compressed::Stream(out) => out.write(buf),
            Compressed::Seekable(out) => out.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Compressed::Stream(out) => out.write_all(buf),
            Compressed::Seekable(out) => out.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Compressed::Stream(out) => out.flush(),
            Compressed::Seekable(out) => out.flush(),
        }
    }
}

/// Where the text of a window goes: the compressor, through the statistics with `--stats`.
// One per conversion, made once: the sizes of the variants do not matter.
#[allow(clippy::large_enum_variant)]
enum WindowOutput<O: Write> {
    Plain(Compressed<O>),
    Stats(StatsSink<Compressed<O>>),
}

impl<O: Write> Write for WindowOutput<O> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            WindowOutput::Plain(out) => out.write(buf),
            WindowOutput::Stats(out) => out.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            WindowOutput::Plain(out) => out.write_all(buf),
            WindowOutput::Stats(out) => out.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            WindowOutput::Plain(out) => out.flush(),
            WindowOutput::Stats(out) => out.flush(),
        }
    }
}

impl<O: Write> WindowOutput<O> {
    /// Ends the compressed stream; the statistics, with `--stats`.
    fn finish(self) -> Result<Option<TraceStats>, Error> {
        let (compressed, stats) = match self {
            WindowOutput::Plain(out) => (out, None),
            WindowOutput::Stats(out) => {
                let (out, stats) = out.into_parts();
                (out, Some(stats))
            }
        };
        compressed.finish()?.flush()?;
        Ok(stats)
    }
}

/// The output of a window: the filter writes a line at a time, hence the buffer.
type WindowSink<O> = io::BufWriter<WindowOutput<O>>;

fn window_output<O: Write>(
    output: O,
    compression: Compression,
    options: &Options,
) -> Result<WindowSink<O>, Error> {
    let compressed = Compressed::new(output, compression, options)?;
    let out = match options.stats {
        true => WindowOutput::Stats(StatsSink::with_analysis(
            compressed,
            options.analysis.clone(),
        )),
        false => WindowOutput::Plain(compressed),
    };
    Ok(io::BufWriter::with_capacity(1 << 16, out))
}

/// Ends a window's output and gathers what it did.
fn finish_window<O: Write>(
    finished: window::Finished<WindowSink<O>>,
    lines_in: u64,
    indexed: bool,
    diag: &mut Diagnostics,
) -> Result<RunOutcome, Error> {
    diag.merge(finished.diagnostics);
    let stats = finished
        .output
        .into_inner()
        .map_err(|err| Error::from(err.into_error()))?
        .finish()?;
    let report = WindowReport {
        instructions_read: finished.instructions_read,
        stopped_early: finished.stopped_early,
        indexed,
    };
    Ok((finished.summary, lines_in, stats, Some(report)))
}

/// The writer's end of a window filter that the conversion takes back even when the
/// writer is dropped on the way (reading stopped early): the filter is shared, and taken out
/// of the slot at the end.
struct SharedFilter<W>(Arc<Mutex<Option<WindowFilter<W>>>>);

impl<W: Write> Write for SharedFilter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut slot = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match slot.as_mut() {
            Some(filter) => filter.write(buf),
            None => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The input, until the window is complete: then reading fails, which stops every format's
/// reader where it is, without the repairs of an end of input that is not one. It counts the
/// lines it passes on, since a reader that fails does not say how many it read.
struct UntilDone {
    input: Box<dyn io::Read + Send>,
    done: Arc<AtomicBool>,
    lines: Arc<AtomicU64>,
}

impl io::Read for UntilDone {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done.load(Ordering::Relaxed) {
            return Err(io::Error::other("the window is complete"));
        }
        let n = self.input.read(buf)?;
        let lines = memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        self.lines.fetch_add(lines, Ordering::Relaxed);
        Ok(n)
    }
}

/// Runs the conversion through a [`WindowFilter`] into `out`: the writer writes the whole
/// trace's canonical text, the filter keeps the window's, which is compressed (and counted
/// with `--stats`). Reading stops when the filter says nothing later is needed.
fn run_window<O: Write + Send + 'static>(
    format: Format,
    reader: Box<dyn io::Read + Send>,
    mut builder: WriterBuilder,
    out: WindowSink<O>,
    options: &Options,
    diag: &mut Diagnostics,
    progress: &Progress,
) -> Result<RunOutcome, Error> {
    builder.compression(Compression::None);
    let filter = WindowFilter::new(out, options.window.clone(), options.max_examples).trusted();
    let done = filter.done_flag();
    let slot = Arc::new(Mutex::new(Some(filter)));
    let lines = Arc::new(AtomicU64::new(0));
    let reader = Box::new(UntilDone {
        input: reader,
        done: Arc::clone(&done),
        lines: Arc::clone(&lines),
    });
    let sink = SharedFilter(Arc::clone(&slot));
    let result = run(
        format,
        reader,
        builder,
        sink,
        Compression::None,
        options,
        diag,
        progress,
    );
    let lines_in = match result {
        Ok((_, lines)) => lines,
        // Whatever stopped the reading after the window was complete is past the window.
        Err(_) if done.load(Ordering::Relaxed) => lines.load(Ordering::Relaxed),
        Err(error) => return Err(error),
    };
    let filter = slot
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .take()
        .ok_or_else(|| Error::new(ErrorKind::Io, "the window's output was lost"))?;
    finish_window(filter.finish()?, lines_in, false, diag)
}

/// Whether a window of this input may be read through a seekable index: a canonical zstd
/// file, whose conversion is the file itself (no clean-up that changes canonical text), and
/// a window with a first cycle or op id to seek to.
fn may_use_index(
    input: &Path,
    format: Format,
    compression: InputCompression,
    options: &Options,
) -> bool {
    let repairs = &options.repairs;
    let window = &options.window;
    options.use_index
        && input.as_os_str() != "-"
        && format == Format::Kanata
        && compression == InputCompression::Zstd
        && (window.cycles.start.is_some()
            || window.sim_cycles.start.is_some()
            || window.insns.start.is_some())
        && repairs.keep_canonical_text()
}

/// The index of a seekable input, if it has a sound one; a damaged one is reported (W2) and
/// the input read from the start.
fn open_index(
    input: &Path,
    options: &Options,
    bytes_read: &Arc<AtomicU64>,
    diag: &mut Diagnostics,
) -> Option<Indexed> {
    let mut file = fs::File::open(input).ok()?;
    let checked = Index::open(&mut file).and_then(|index| match index {
        Some(index) => {
            // The frames up to the window's start frame must be the ones the index describes.
            let start = window_start(&index, &options.window);
            index.check_frames(&mut file, start.frame)?;
            Ok(Some(index))
        }
        None => Ok(None),
    });
    match checked {
        Ok(Some(index)) => Some((index, file, Arc::clone(bytes_read))),
        Ok(None) => None,
        Err(error) => {
            diag.report(Rule::W2, 0, || {
                format!("{error}: read from the start instead")
            });
            None
        }
    }
}

/// The frame of a seekable file a window is read from.
fn window_start(index: &Index, window: &Window) -> Start {
    let cycles = window.konata_cycles(index.start_cycle());
    index.start_for(cycles.start, window.insns.start)
}

/// Cuts the window out of a seekable file, reading only the frames it needs: from the frame
/// the index names for the window's first cycle and op id, until the window is complete.
fn run_indexed<O: Write>(
    index: &Index,
    file: fs::File,
    bytes_read: &AtomicU64,
    out: WindowSink<O>,
    options: &Options,
    diag: &mut Diagnostics,
    progress: &Progress,
) -> Result<RunOutcome, Error> {
    let window = options.window.clone();
    let start = window_start(index, &window);
    let filter = match start.frame {
        0 => WindowFilter::new(out, window, options.max_examples),
        _ => WindowFilter::resume(
            out,
            window,
            options.max_examples,
            start.position,
            start.next_id,
        )?,
    };
    // The index is kanata-pp's and binds itself to the frames, whose checksums hold: the
    // text is the one kanata-pp wrote, canonical.
    let mut filter = filter.trusted();
    let mut text = index.reader(file, start.frame);
    let mut lines = start.position.line;
    // Frames are decompressed on a thread of their own while the filter reads the last one.
    let (frames, decompressed) = mpsc::sync_channel::<io::Result<Vec<u8>>>(2);
    let (spent, spent_frames) = mpsc::channel::<Vec<u8>>();
    std::thread::scope(|scope| {
        let decoder = scope.spawn(move || loop {
            while let Ok(buffer) = spent_frames.try_recv() {
                text.give_back(buffer);
            }
            let next = text.next_text();
            bytes_read.store(text.bytes_read(), Ordering::Relaxed);
            let last = !matches!(next, Ok(Some(_)));
            // A send fails when the filter stopped reading: so does this thread.
            let stopped = match next.transpose() {
                Some(frame) => frames.send(frame).is_err(),
                None => true,
            };
            if stopped || last {
                break;
            }
        });
        // Owned by the loop, so that leaving it early (the window complete, an error)
        // drops the receiver and stops the thread.
        let feed = || {
            for frame in decompressed {
                let frame = frame.map_err(|err| Error::new(ErrorKind::Input, err.to_string()))?;
                lines += memchr::memchr_iter(b'\n', &frame).count() as u64;
                filter.push(&frame).map_err(|err| match err.kind() {
                    ErrorKind::Input => Error::new(
                        ErrorKind::Input,
                        format!(
                        "{err} (read through the seekable index; --no-index reads from the start)"
                    ),
                    ),
                    _ => err,
                })?;
                progress.update();
                let _ = spent.send(frame);
                if filter.is_done() {
                    break;
                }
            }
            Ok::<(), Error>(())
        };
        let fed = feed();
        // Joined here rather than by the scope, which waits for the closure only, not for
        // the thread's thread-locals (see `kanata/read.rs`).
        let _ = decoder.join();
        fed
    })?;
    finish_window(filter.finish()?, lines, true, diag)
}

/// Reads every line of `reader` into the normalizer for `format`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run<W: Write + Send + 'static>(
    format: Format,
    reader: Box<dyn io::Read + Send>,
    builder: WriterBuilder,
    output: W,
    compression: Compression,
    options: &Options,
    diag: &mut Diagnostics,
    progress: &Progress,
) -> Result<(Finished<W>, u64), Error> {
    let mut builder = builder;
    // §4.5: every format's output may leave the implied `E`s out.
    builder.compact(options.repairs.compact);
    let mut converter: Box<dyn Converter<W>> = match format {
        Format::Kanata => {
            let normalizer = KanataNormalizer::new(builder, output, options.repairs.clone());
            let prefix = options.repairs.strip_prefix.clone();
            let sharing = Sharing::for_output(compression != Compression::None);
            return crate::kanata::read::run(reader, normalizer, prefix, diag, progress, sharing);
        }
        Format::Gem5 => {
            let options = options.gem5.clone();
            return crate::gem5::run(reader, builder, output, options, diag, progress);
        }
        Format::Rsd => Box::new(crate::rsd::RsdConverter::new(
            builder,
            output,
            options.rsd.clone(),
            &options.repairs,
        )?),
    };
    let mut lines = Lines::new(reader);
    loop {
        let (number, _, line) = match lines.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(err) => {
                return Err(Error::at_line(
                    lines.number + 1,
                    format!("cannot read the input: {err}"),
                ))
            }
        };
        converter.line(line, number, diag)?;
        if let Some(error) = crate::diag::strict_error(diag) {
            return Err(error);
        }
        if number % 65_536 == 0 {
            progress.update();
        }
    }
    let finished = converter.finish(diag)?;
    if let Some(error) = crate::diag::strict_error(diag) {
        return Err(error);
    }
    Ok((finished, lines.number))
}
