//! The `kanata-pp` command line: the arguments ([`args`]), what a run does with them
//! ([`app`]), many inputs at once ([`batch`]), two traces compared ([`diff`]), the JSON reports ([`report`]) and what an
//! interrupted run does ([`interrupt`]).

pub mod app;
pub mod args;
pub mod batch;
pub mod diff;
pub mod interrupt;
pub mod report;
