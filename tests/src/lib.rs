//! Cross-crate tests for the kanata workspace, and the test-only model of what the
//! Konata viewer draws for a Kanata log.
//!
//! [`konata_model`] parses a Kanata log exactly the way Konata's current parser does
//! (warts included) and returns a [`konata_model::View`]: the instructions, stage boxes,
//! retire/flush marks and dependency arrows that Konata would draw, plus the warnings it
//! would print. Tests use [`konata_model::diff_views`] to check that a file written by
//! `kanata-writer` or normalized by `kanata-pp` looks to Konata exactly like its input.

pub mod canonical;
pub mod conversion;
pub mod konata_model;
pub mod konata_stats;
pub mod konata_topdown;

pub use konata_model::{
    decompress, diff_views, load, load_file, try_load, Arrow, Compare, Dependency, Insn, LoadError,
    RetireKind, RetireState, StageBox, StageLevel, UndrawnOp, View, Warning,
};
