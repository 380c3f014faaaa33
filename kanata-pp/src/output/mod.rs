//! What reads the canonical Kanata text a conversion writes, on its way to the sinks: the
//! window of [`window`], cut out of the text of the whole trace, the statistics of
//! [`stats`], computed on the fly as the text streams to the output file, with the
//! [`analysis`] they include (Konata's statistics, hot spots, top-down, and the diff of two
//! traces). [`canonical`] is
//! the one reader of canonical Kanata that windows, rendering and analysis read a canonical
//! trace back through.
pub mod analysis;
pub mod canonical;
/// The seekable, indexed `.kanata.zst`: independent zstd frames, our index, the seek table.
pub mod seekable;
pub mod segments;
pub mod stats;
#[cfg(test)]
pub(crate) mod testing;
pub mod window;
