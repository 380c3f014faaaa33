//! The `kanata-pp` command line: the arguments ([`args`]), what a run does with them
//! ([`app`]), many inputs at once ([`batch`]) and the JSON reports ([`report`]).

pub mod app;
pub mod args;
pub mod batch;
pub mod report;
