//! What reads the canonical Kanata text a conversion writes, on its way to the sinks: the
//! statistics of [`stats`], computed on the fly as the text streams to the output file.
pub mod stats;
