//! kanata-pp: turns the Kanata logs real simulators write into canonical Kanata files that
//! Konata draws exactly as the simulator meant, with zero warnings.

pub mod app;
pub mod batch;
pub mod cli;
pub mod convert;
pub mod detect;
pub mod diag;
pub mod error;
pub mod gem5;
pub mod input;
pub mod rsd;
pub mod rv32_disasm;
pub mod stats;

mod ids;
mod json;
mod kanata_parse;
mod kanata_read;
mod normalize;
mod progress;
mod stage_names;

pub use convert::{convert, Destination, Options, Report};
pub use detect::Format;
pub use diag::{Diagnostics, Rule};
pub use error::{Error, ErrorKind};
pub use gem5::Gem5Options;
pub use normalize::{CloseOpen, Repairs};
pub use rsd::RsdOptions;
pub use stats::{StageStats, StatsSink, ThreadStats, TraceStats};
