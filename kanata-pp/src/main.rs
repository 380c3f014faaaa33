//! The `kanata-pp` command: parses the command line, runs it, and owns the exit code: 0 when
//! every input converted, 1 when an input or I/O error stopped one (nothing is left behind),
//! 2 for usage errors. A closed output pipe (`kanata-pp … -o - | head`) is a normal end.
//! SIGINT, SIGTERM and SIGHUP remove every temporary file, leave every output as it was and
//! exit with 130, 143 and 129 after one line on stderr (`kanata_pp::cli::interrupt`).

use std::process::ExitCode;

use clap::Parser;
use kanata_pp::cli::args::Cli;
use kanata_pp::cli::interrupt;

fn main() -> ExitCode {
    let cli = Cli::parse();
    interrupt::install();
    let result = kanata_pp::cli::app::run(&cli);
    // An interrupted run ends with the signal's status, not with this one.
    interrupt::stop_if_interrupted();
    match result {
        Ok(outcome) if outcome.failed == 0 => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(err) if err.is_broken_pipe() => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("kanata-pp: {err}");
            ExitCode::from(err.exit_code() as u8)
        }
    }
}
