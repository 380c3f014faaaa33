//! kanata-pp: turns the Kanata logs real simulators write into canonical Kanata files that
//! Konata draws exactly as the simulator meant, with zero warnings.
//!
//! # Where things are
//!
//! The folders follow the way the data goes (`docs/architecture.md` says more):
//!
//! - [`input`]: opening a path or stdin, decompressing gzip or zstd, detecting the format,
//!   the progress bar over the bytes read.
//! - one folder per input format: `kanata` (the parser, the two-thread reader, the
//!   normalizer and the id and stage-name helpers: the quirk rules Q1–Q20), [`gem5`]
//!   (O3PipeView and its dialects, with the reorder window) and [`rsd`] (RSD's raw logs and
//!   their RV32 disassembler).
//! - [`convert`](mod@convert): one conversion, tying an input, a format's reader and the writer together,
//!   with the temporary file renamed into place at the end.
//! - [`output`]: what reads the canonical text on its way out (the window, the statistics)
//!   and the one reader of canonical Kanata ([`output::canonical`]).
//! - [`trace`]: any input read back as the instructions of a window, for rendering and
//!   the Python bindings.
//! - [`render`]: a window drawn as Konata draws it, as SVG or as text for the terminal.
//! - [`analysis`] (in `output/`, re-exported): Konata's statistics, hot spots, the top-down
//!   breakdown and the diff of two traces' statistics, for CI (`docs/analysis.md`).
//! - [`cli`]: the command line, batches and the JSON reports.
//!
//! [`diag`] (the repairs, by rule) and [`error`] are shared by all of them.

pub mod cli;
pub mod convert;
pub mod diag;
pub mod error;
/// The fuzz targets' entry point (`fuzz/`); not part of the API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod gem5;
pub mod input;
mod json;
mod kanata;
pub mod output;
pub mod render;
pub mod rsd;
pub mod trace;

pub use convert::{convert, Destination, Options, Report, WindowReport};
pub use diag::{Diagnostics, Rule};
pub use error::{Error, ErrorKind};
pub use gem5::Gem5Options;
pub use input::detect::Format;
pub use kanata::normalize::{CloseOpen, Repairs};
pub use output::analysis;
pub use output::stats::{StageStats, StatsSink, ThreadStats, TraceStats};
pub use rsd::RsdOptions;
