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
//! # When the simulation is interrupted
//!
//! The trace is complete only after [`Writer::finish`] (or the writer's drop): it closes the
//! instructions still in flight (as [`LiveAtEnd`] says), writes the last cycle and ends the
//! compressed stream. A process that SIGINT or SIGTERM ends the default way leaves a cut
//! trace, and a cut `.zst` or `.gz` cannot be read to its end (kanata-pp refuses it; a cut
//! plain text it repairs). This crate installs no signal handler: that is the program's
//! choice. To get a complete trace of an interrupted run, the simulator's own handler only
//! sets a flag (`signal_hook::flag::register(SIGINT, stop.clone())` in Rust, a
//! `volatile sig_atomic_t` set by a `sigaction` handler in C), the simulation loop checks it
//! and leaves the way it leaves at the end of a run, and the normal shutdown path calls
//! `finish()`:
//!
//! ```
//! use std::sync::atomic::{AtomicBool, Ordering};
//! use std::sync::Arc;
//! use kanata_writer::{Lane, Writer};
//! # fn main() -> kanata_writer::Result<()> {
//! // Set by the simulator's SIGINT handler, which does nothing else.
//! let stop = Arc::new(AtomicBool::new(false));
//! let mut w = Writer::new(Vec::new());
//! let f = w.stage("F")?;
//! for cycle in 0..1_000_000u64 {
//!     if stop.load(Ordering::Relaxed) {
//!         break; // the in-flight instructions are closed by finish()
//!     }
//!     let insn = w.begin(cycle, 0)?;
//!     w.enter(insn, Lane::MAIN, f)?;
//!     w.advance(1)?;
//!     w.retire(insn)?;
//! #   if cycle == 10 { stop.store(true, Ordering::Relaxed); }
//! }
//! let finished = w.finish()?; // a complete, valid trace
//! # assert!(finished.output.starts_with(b"Kanata"));
//! # Ok(()) }
//! ```
//!
//! Never call `finish()` (or any method) from the signal handler itself: it allocates, takes
//! locks and joins the compression thread, none of which is safe in a handler. Note that
//! `std::process::exit` runs no destructor, so call `finish()` before it. SIGKILL cannot be
//! caught: the trace written so far is all there is.
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
