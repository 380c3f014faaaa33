//! The command line: clap's definition of every option, and how it maps onto [`Options`].

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use kanata_writer::Compression;

use crate::convert::{Destination, Options};
use crate::gem5::Gem5Options;
use crate::input::detect::Format;
use crate::kanata::normalize::{CloseOpen, Repairs};
use crate::output::window::{parse_threads, Bounds, RangeError, Window};
use crate::rsd::disasm::Syntax;

const EXAMPLES: &str = "\
Examples:
  kanata-pp run.log -o run.kanata            normalize a sloppy Kanata log
  kanata-pp run.log -o run.kanata.zst        ... and compress it (zstd, from the extension)
  kanata-pp run.log.gz                       writes run.kanata beside the input
  kanata-pp trace.out -o trace.kanata.zst    convert a gem5 O3PipeView trace
  kanata-pp RSD.log -o RSD.kanata            convert an RSD raw log (RSD_Kanata)
  kanata-pp --check run.log                  validate only: exit 0 if it converts
  zcat run.log.gz | kanata-pp - -o - | less  stdin to stdout
  kanata-pp -d out/ -j 4 --compress zstd traces/*.log
                                             convert a folder: out/<name>.kanata.zst
  kanata-pp --check --report json traces/*   validate many, one JSON object per input
  kanata-pp trace.out -o big.kanata.zst --seekable
                                             indexed, seekable zstd: windows read fast
  kanata-pp big.kanata.zst --cycles 12M..12.01M -o slow.kanata
                                             cut 10,000 cycles out of a huge trace
  kanata-pp diff main.kanata pr.kanata --fail-if 'ipc < -2%'
                                             compare two traces, exit 1 on a regression

Exit codes: 0 converted, 1 input or I/O error (no output is left behind), 2 usage error.
Repair rules (Q1-Q20) are described in docs/rules.md.";

/// Normalize Kanata pipeline traces (and convert gem5 O3PipeView traces) into canonical,
/// optionally compressed .kanata files that Konata draws with zero warnings.
#[derive(Debug, Parser)]
#[command(name = "kanata-pp", version, after_help = EXAMPLES)]
pub struct Cli {
    /// The input traces: paths, or `-` for stdin. Plain, gzip or zstd (recognised by content).
    #[arg(
        value_name = "INPUT",
        required_unless_present_any = ["generate_completions", "generate_man"]
    )]
    pub inputs: Vec<PathBuf>,

    /// Output path, or `-` for stdout. Default: the input's name with `.kanata`. One input only.
    #[arg(short, long, value_name = "PATH", conflicts_with = "out_dir")]
    pub output: Option<PathBuf>,

    /// Write each input's output to `OUTDIR/<name>.kanata[.gz|.zst]` (several inputs).
    #[arg(short = 'd', long = "out-dir", value_name = "OUTDIR")]
    pub out_dir: Option<PathBuf>,

    /// Conversions to run at once (default: the number of cores).
    #[arg(short, long, value_name = "N")]
    pub jobs: Option<usize>,

    /// How to report: `human` (repairs on stderr) or `json` (one object per input on stdout,
    /// then a summary object).
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "human")]
    pub report: ReportArg,

    /// Input format; detected from the content when not given.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub from: Option<FromArg>,

    /// Output compression. Default: from the output's extension (.gz, .zst), else none.
    #[arg(long, value_enum, value_name = "KIND")]
    pub compress: Option<CompressArg>,

    /// Compression level (gzip 0-9, default 6; zstd 1-22, default 3).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub level: Option<i32>,

    /// Read and validate without writing; exit 0 when the input converts.
    #[arg(long)]
    pub check: bool,

    /// Print the trace's statistics (instructions, flush rate, IPC per thread, stage
    /// residencies): a table, or JSON with `--report json`. Writes no trace unless -o or -d.
    #[arg(long)]
    pub stats: bool,

    /// With --stats: the hot spots listed per table (flushes caused, lane-1 stalls,
    /// --latency), by instruction address (docs/analysis.md).
    #[arg(long, value_name = "N", default_value_t = crate::output::analysis::DEFAULT_TOP, help_heading = "Analysis")]
    pub top: usize,

    /// With --stats: rank instructions by their latency from the first stage to the end of
    /// the second (lane 0), e.g. `X..Cm`.
    #[arg(long, value_name = "FROM..TO", help_heading = "Analysis")]
    pub latency: Option<crate::output::analysis::StageRange>,

    /// With --stats: the allocation stage (lane 0) of the top-down breakdown of the slots;
    /// found from the trace when not given.
    #[arg(long, value_name = "STAGE", help_heading = "Analysis")]
    pub alloc_stage: Option<String>,

    /// With --stats: the slots per cycle of the top-down breakdown; the most instructions
    /// that enter the allocation stage in one cycle when not given.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = "Analysis")]
    pub alloc_width: Option<u32>,

    /// Treat any repair as an error.
    #[arg(long)]
    pub strict: bool,

    /// Show every repaired line, not only the first few of each rule.
    #[arg(short, long)]
    pub verbose: bool,

    /// Print nothing but errors.
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Never draw a progress bar (it is only ever drawn on a terminal).
    #[arg(long)]
    pub no_progress: bool,

    /// Q10: move a label that comes up to N cycles after its instruction's `R` before it.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub late_window: u64,

    /// Q14: renumber retire ids serially over retired instructions.
    #[arg(long)]
    pub renumber_retire: bool,

    /// Q15: close instructions still open at the end (with a flush or a retirement).
    #[arg(long, value_enum, value_name = "HOW")]
    pub close_open: Option<CloseOpenArg>,

    /// Q16: drop repeated identical labels and merge back-to-back segments of a stage.
    #[arg(long)]
    pub dedupe: bool,

    /// Q17: stretch zero-length stages (invisible in Konata) to one cycle.
    #[arg(long)]
    pub stretch_zero: bool,

    /// Q18: keep only the lines that start with PREFIX (and remove it).
    #[arg(long, value_name = "PREFIX")]
    pub strip_prefix: Option<String>,

    /// gem5: how many records may wait to be placed in order (default 16384, as Konata).
    /// Smaller is faster (about 1.2x at 2048); a record later than that is reported (G1).
    #[arg(long, value_name = "N", default_value_t = 16_384)]
    pub window: usize,

    /// gem5: ticks per cycle (detected from the trace when not given).
    #[arg(long, value_name = "N")]
    pub ticks_per_cycle: Option<u64>,

    /// gem5: draw dependency arrows from `Rename` debug lines.
    #[arg(long)]
    pub deps: bool,

    /// RSD: the disassembler whose text the left-pane labels reproduce: `head` (RSD's
    /// current one), or `2021` (before 2023-02: stores as `sw rs2, rs1, IMM`, no RV32F, as
    /// in Konata's RSD sample).
    #[arg(long, value_enum, value_name = "VERSION", default_value = "head")]
    pub rsd_disasm: RsdDisasmArg,

    /// Print a completion script for SHELL (bash, zsh, fish, elvish, powershell) and exit.
    #[arg(long, value_name = "SHELL", hide = true, exclusive = true)]
    pub generate_completions: Option<Shell>,

    /// Print the man page (roff) and exit.
    #[arg(long, hide = true, exclusive = true)]
    pub generate_man: bool,

    /// Leave out the `E` lines Konata implies (drawn the same, smaller files).
    #[arg(long)]
    pub compact: bool,

    /// Write zstd output in the seekable format, with an index of cycles and op ids: a
    /// window of it is then read without reading the rest (see docs/seekable.md). Needs zstd
    /// output. Not the default: some zstd decoders stop after the first frame.
    #[arg(long, conflicts_with = "no_seekable")]
    pub seekable: bool,

    /// Write zstd output as one frame (the default).
    #[arg(long)]
    pub no_seekable: bool,

    /// With --seekable: the text each frame holds at least (default 1M); smaller frames make
    /// a window cheaper to reach, and the index larger.
    #[arg(long, value_name = "BYTES", value_parser = parse_frame_size, requires = "seekable")]
    pub frame_size: Option<usize>,

    /// Read a window of a seekable input from the start, not through its index.
    #[arg(long, help_heading = "Windows")]
    pub no_index: bool,

    /// Keep only the instructions whose life overlaps Konata's cycles [A, B), counted from
    /// the start of the file as Konata shows them: `A..B`, `A..` or `..B`; numbers may use
    /// `_` between digits and a k, M or G suffix (`12M..12.01M`). A kept instruction is kept
    /// whole; cycles, retire ids and simulator ids keep their values.
    #[arg(long, value_name = "A..B", value_parser = parse_unsigned_range, help_heading = "Windows")]
    pub cycles: Option<Bounds<u64>>,

    /// The same window in the simulator's cycles (the trace's `C=` start plus the steps);
    /// negative numbers are allowed.
    #[arg(
        long,
        value_name = "A..B",
        value_parser = parse_signed_range,
        allow_hyphen_values = true,
        help_heading = "Windows"
    )]
    pub sim_cycles: Option<Bounds<i64>>,

    /// Keep the instructions with op ids [A, B) in the conversion of the whole trace
    /// (Konata's op ids, the ones its `j` jumps to).
    #[arg(long, value_name = "A..B", value_parser = parse_unsigned_range, help_heading = "Windows")]
    pub insns: Option<Bounds<u64>>,

    /// Draw the window instead of converting it: `svg` (a self-contained picture), `png` (the
    /// same picture as pixels) or `text` (a timeline, a letter per stage). Default: from the
    /// output's extension (`.svg`, `.png`, `.txt`). Without a window, the first 100 instructions are drawn. See docs/render.md.
    #[arg(long, value_enum, value_name = "FORMAT", help_heading = "Pictures")]
    pub to: Option<PictureArg>,

    /// The colours of a picture: Konata's `light` or `dark` theme.
    #[arg(
        long,
        value_enum,
        value_name = "THEME",
        default_value = "light",
        help_heading = "Pictures"
    )]
    pub theme: ThemeArg,

    /// The most instructions a picture draws; a larger window is a usage error that says how
    /// large it is.
    #[arg(long, value_name = "N", default_value_t = crate::render::DEFAULT_MAX_INSNS, help_heading = "Pictures")]
    pub max_insns: usize,

    /// Cycles per column of a picture (1: one column a cycle).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        value_parser = clap::value_parser!(u64).range(1..),
        help_heading = "Pictures"
    )]
    pub cycles_per_column: u64,

    /// The width of a text picture in characters (default: $COLUMNS on a terminal, else 120).
    #[arg(long, value_name = "N", help_heading = "Pictures")]
    pub width: Option<usize>,

    /// ANSI colours in a text picture: `auto` (on a terminal), `always` or `never`.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        default_value = "auto",
        help_heading = "Pictures"
    )]
    pub color: ColorArg,

    /// Draw no dependency arrows.
    #[arg(long, help_heading = "Pictures")]
    pub no_arrows: bool,

    /// Pixels of a PNG per pixel of the SVG: 2 for high-DPI screens and print, 0.5 for an
    /// overview of a large window.
    #[arg(
        long,
        value_name = "S",
        default_value_t = 1.0,
        value_parser = parse_scale,
        help_heading = "Pictures"
    )]
    pub scale: f64,

    /// Keep only the instructions of these thread ids (`0,2`).
    #[arg(
        long,
        value_name = "LIST",
        value_parser = parse_thread_list,
        allow_hyphen_values = true,
        help_heading = "Windows"
    )]
    pub threads: Option<ThreadList>,
}

/// `--to`: what a picture is drawn as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PictureArg {
    /// A self-contained SVG picture.
    Svg,
    /// The SVG picture rendered as a PNG, with the font kanata-pp ships.
    Png,
    /// A text timeline for the terminal.
    Text,
}

/// `--theme`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ThemeArg {
    /// Konata's light theme.
    Light,
    /// Konata's dark theme.
    Dark,
}

/// `--color`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorArg {
    /// On a terminal only.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// `--threads`: the thread ids, sorted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadList(pub Vec<i64>);

fn parse_unsigned_range(text: &str) -> Result<Bounds<u64>, RangeError> {
    text.parse()
}

fn parse_signed_range(text: &str) -> Result<Bounds<i64>, RangeError> {
    text.parse()
}

fn parse_frame_size(text: &str) -> Result<usize, RangeError> {
    let bytes = crate::output::window::parse_count(text)?;
    match usize::try_from(bytes) {
        Ok(bytes) if (1..=crate::output::seekable::MAX_FRAME_SIZE).contains(&bytes) => Ok(bytes),
        _ => Err(RangeError::new(format!(
            "`{text}`: a frame holds 1 byte to {} bytes",
            crate::output::seekable::MAX_FRAME_SIZE
        ))),
    }
}

fn parse_scale(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        // Beyond 16 a pixel of the SVG is a block; below 1/100 nothing is left to see.
        Ok(scale) if (0.01..=16.0).contains(&scale) => Ok(scale),
        _ => Err(format!("`{text}`: a scale is a number from 0.01 to 16")),
    }
}

fn parse_thread_list(text: &str) -> Result<ThreadList, RangeError> {
    parse_threads(text).map(ThreadList)
}

/// The shells `--generate-completions` writes for.
pub use clap_complete::Shell;

/// `--report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportArg {
    /// Repairs and errors on stderr, for people.
    Human,
    /// One JSON object per input on stdout, then a summary object.
    Json,
}

/// `--from`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FromArg {
    /// A Kanata log.
    Kanata,
    /// A gem5 O3PipeView trace.
    Gem5,
    /// An RSD raw `RSD_Kanata` log.
    Rsd,
}

/// `--rsd-disasm`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RsdDisasmArg {
    /// RSD's current disassembler.
    Head,
    /// The disassembler before 2023-02-06.
    #[value(name = "2021")]
    Before2023,
}

/// `--compress`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompressArg {
    /// Plain text.
    None,
    /// gzip (.gz).
    Gzip,
    /// zstd (.zst).
    Zstd,
}

/// `--close-open`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CloseOpenArg {
    /// Flush them at the last cycle.
    Flush,
    /// Retire them at the last cycle.
    Retire,
}

impl Cli {
    /// The output compression asked for with `--compress`.
    pub fn compression(&self) -> Option<Compression> {
        self.compress.map(|c| match c {
            CompressArg::None => Compression::None,
            CompressArg::Gzip => Compression::Gzip,
            CompressArg::Zstd => Compression::Zstd,
        })
    }

    /// The picture this command line asks for: `--to`, else the output's extension (`.svg`,
    /// `.png`, `.txt`); `None` to convert.
    ///
    /// # Errors
    /// A usage error for a PNG to a terminal.
    pub fn picture(&self) -> Result<Option<PictureArg>, crate::Error> {
        let to_stdout = self.output.as_deref().is_none_or(|p| p.as_os_str() == "-");
        if self.to == Some(PictureArg::Png) && to_stdout && std::io::stdout().is_terminal() {
            return Err(crate::Error::new(
                crate::ErrorKind::Usage,
                "a PNG is not written to a terminal: give -o PATH.png, or redirect stdout",
            ));
        }
        if self.to.is_some() {
            return Ok(self.to);
        }
        let extension = self
            .output
            .as_deref()
            .and_then(|path| path.extension())
            .and_then(|ext| ext.to_str())
            .map(str::to_ascii_lowercase);
        match extension.as_deref() {
            Some("svg") => Ok(Some(PictureArg::Svg)),
            Some("txt") => Ok(Some(PictureArg::Text)),
            Some("png") => Ok(Some(PictureArg::Png)),
            _ => Ok(None),
        }
    }

    /// The window `--cycles`, `--sim-cycles`, `--insns` and `--threads` ask for.
    pub fn window(&self) -> Window {
        let mut window = Window::all();
        window.cycles = self.cycles.unwrap_or_default();
        window.sim_cycles = self.sim_cycles.unwrap_or_default();
        window.insns = self.insns.unwrap_or_default();
        window.threads = self.threads.as_ref().map(|t| t.0.clone());
        window
    }

    /// The options this command line asks for, with the destination of a single input.
    pub fn options(&self) -> Result<Options, crate::Error> {
        let compression = self.compression();
        let single = &self.inputs[0];
        let stats_only = self.stats && self.output.is_none() && self.out_dir.is_none();
        // A picture is written by the drawing, not by a conversion.
        let drawing = matches!(self.picture(), Ok(Some(_)));
        let destination = if drawing
            || self.check
            || stats_only
            || self.out_dir.is_some()
            || self.inputs.len() > 1
        {
            // Batch jobs get their own destinations.
            Destination::Check
        } else {
            match &self.output {
                Some(path) if path.as_os_str() == "-" => Destination::Stdout,
                Some(path) => Destination::Path(path.clone()),
                None if single.as_os_str() == "-" => Destination::Stdout,
                None => Destination::Path(crate::convert::default_output(
                    single,
                    compression.unwrap_or_default(),
                )?),
            }
        };
        let mut options = Options::new(destination);
        options.from = self.from.map(|f| match f {
            FromArg::Kanata => Format::Kanata,
            FromArg::Gem5 => Format::Gem5,
            FromArg::Rsd => Format::Rsd,
        });
        options.compression = compression;
        options.level = self.level;
        options.strict = self.strict;
        options.stats = self.stats;
        options.analysis = crate::output::analysis::AnalysisOptions {
            top: self.top,
            latency: self.latency.clone(),
            topdown: crate::output::analysis::topdown::TopDownOptions {
                alloc_stage: self.alloc_stage.clone(),
                alloc_width: self.alloc_width,
                ..crate::output::analysis::topdown::TopDownOptions::default()
            },
            ..crate::output::analysis::AnalysisOptions::default()
        };
        options.max_examples = if self.verbose { usize::MAX } else { 5 };
        options.progress = !self.no_progress && !self.quiet;
        options.gem5 = Gem5Options {
            window: self.window,
            ticks_per_cycle: self.ticks_per_cycle,
            deps: self.deps,
        };
        options.rsd.disasm = match self.rsd_disasm {
            RsdDisasmArg::Head => Syntax::Head,
            RsdDisasmArg::Before2023 => Syntax::Before2023,
        };
        options.repairs = Repairs {
            late_window: self.late_window,
            renumber_retire: self.renumber_retire,
            close_open: self.close_open.map(|c| match c {
                CloseOpenArg::Flush => CloseOpen::Flush,
                CloseOpenArg::Retire => CloseOpen::Retire,
            }),
            dedupe: self.dedupe,
            stretch_zero: self.stretch_zero,
            strip_prefix: self.strip_prefix.as_ref().map(|p| p.as_bytes().to_vec()),
            compact: self.compact,
        };
        options.window = self.window();
        options.seekable = self.seekable && !self.no_seekable;
        if self.frame_size.is_some() && !options.seekable {
            return Err(crate::Error::new(
                crate::ErrorKind::Usage,
                "--frame-size sets the frames of --seekable output: give --seekable too",
            ));
        }
        options.frame_size = self.frame_size;
        options.use_index = !self.no_index;
        Ok(options)
    }
}
