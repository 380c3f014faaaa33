//! The `kanata-pp` command: parses the command line, runs it, and owns the exit code: 0 when
//! every input converted, 1 when an input or I/O error stopped one (nothing is left behind),
//! 2 for usage errors. A closed output pipe (`kanata-pp … -o - | head`) is a normal end.

use std::process::ExitCode;

use clap::Parser;
use kanata_pp::cli::args::Cli;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match kanata_pp::cli::app::run(&cli) {
        Ok(outcome) if outcome.failed == 0 => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(err) if err.is_broken_pipe() => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("kanata-pp: {err}");
            ExitCode::from(err.exit_code() as u8)
        }
    }
}
