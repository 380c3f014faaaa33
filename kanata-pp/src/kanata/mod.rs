//! The Kanata input format: sloppy logs of any version in, canonical Kanata out.
//!
//! A line goes through three stages, one file each: [`parse`] reads one line into a command
//! with the repairs that need only that line (Q1–Q4b, Q9, Q13, Q19, Q20); [`read`] runs the
//! parsing on a reading thread ahead of the normalizer and hands parsed lines over in
//! batches; [`normalize`] keeps the state of the instructions and applies the rules that span
//! lines (Q2, Q4–Q8, Q10–Q16), writing through `kanata_writer`. [`ids`] decides which
//! instruction a file id names (Q11, Q12) and [`stage_names`] finds the writer's stage for
//! a stage name; both are shared with the RSD reader. [`scan`] finds bytes 16 and 64 at a
//! time, for the parser and the reader.

pub(crate) mod ids;
pub(crate) mod normalize;
pub(crate) mod parse;
pub(crate) mod read;
pub(crate) mod scan;
pub(crate) mod stage_names;
