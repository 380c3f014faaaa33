//! Write Kanata pipeline traces, the format the [Konata] viewer draws, from a simulator.
//!
//! A [`Writer`] takes typed calls (time, instructions, labels, stages, retire and flush,
//! dependencies) and writes the canonical form of the format: every line valid, every stage
//! closed explicitly, cycle lines only where time moved and a command follows, label text
//! escaped. It mints the instruction ids and the retire ids itself, so a trace written
//! through it cannot refer to an instruction that does not exist, and a call that would make
//! the trace invalid is refused with an [`Error`] before anything is written.
//!
//! ```
//! use kanata_writer::{DepKind, LabelKind, Lane, Writer};
//! # fn main() -> kanata_writer::Result<()> {
//! let mut w = Writer::new(Vec::new());
//! let (f, x) = (w.stage("F")?, w.stage("X")?);
//! let load = w.begin(100, 0)?;
//! w.label(load, LabelKind::Name, "0x80000000: lw a0, 0(sp)")?;
//! w.enter(load, Lane::MAIN, f)?;
//! w.advance(1)?;
//! let add = w.begin(101, 0)?;
//! w.enter(add, Lane::MAIN, f)?;
//! w.enter(load, Lane::MAIN, x)?;
//! w.advance(1)?;
//! w.stall_begin(add)?;              // waits for the load
//! w.depend(add, load, DepKind::WAKE_UP)?;
//! w.retire(load)?;
//! w.advance(1)?;
//! w.stall_end(add)?;
//! w.enter(add, Lane::MAIN, x)?;
//! w.advance(1)?;
//! w.flush(add)?;                    // squashed
//! let trace = w.finish()?.output;
//! assert!(trace.starts_with(b"Kanata\t0004\nC=\t0\n"));
//! # Ok(()) }
//! ```
//!
//! Write to a file with [`WriterBuilder::from_path`]: `.gz` and `.zst` names are compressed,
//! optionally on a background thread ([`WriterBuilder::background`]), and a [`Window`]
//! limits tracing to a region of interest.
//!
//! [Konata]: https://github.com/shioyadan/Konata

mod encode;
mod error;
mod holdback;
mod live;
mod sink;
mod stage;
mod window;
mod writer;
mod zstd_ring;

pub use error::{Error, ErrorKind, Result};
pub use sink::{CompressWriter, Compression};
pub use stage::{Lane, Stage};
pub use window::Window;
pub use writer::{DepKind, Finished, InsnId, LabelKind, LiveAtEnd, Summary, Writer, WriterBuilder};

/// The README's example, compiled as a doc test so that it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
mod readme {}
