//! The `kanata-pp` command: parses the command line, runs it, and owns the exit code: 0 when
//! every input converted, 1 when an input or I/O error stopped one (nothing is left behind),
//! 2 for usage errors. `kanata-pp diff OLD NEW` (`kanata_pp::cli::diff`) exits with 1 when a
//! gate of `--fail-if` trips. A closed output pipe (`kanata-pp … -o - | head`) is a normal end.
//! SIGINT, SIGTERM and SIGHUP remove every temporary file, leave every output as it was and
//! exit with 130, 143 and 129 after one line on stderr (`kanata_pp::cli::interrupt`).

use std::process::ExitCode;

use clap::Parser;
use kanata_pp::cli::args::Cli;
use kanata_pp::cli::diff::DiffCli;
use kanata_pp::cli::interrupt;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // `kanata-pp diff OLD NEW`: an input named `diff` is given as `./diff`.
    if args.get(1).is_some_and(|arg| arg == "diff") {
        let cli = DiffCli::parse_from(args[..1].iter().chain(&args[2..]));
        interrupt::install();
        let result = kanata_pp::cli::diff::run(&cli);
        interrupt::stop_if_interrupted();
        return match result {
            Ok(false) => ExitCode::SUCCESS,
            Ok(true) => ExitCode::from(1),
            Err(err) if err.is_broken_pipe() => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("kanata-pp: {err}");
                ExitCode::from(err.exit_code() as u8)
            }
        };
    }
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
