//! The `kanata-pp` command: parses the command line, runs the conversion, prints the repairs
//! and owns the exit code (0 ok, 1 input or I/O error, 2 usage error).

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use kanata_pp::cli::Cli;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = cli
        .options()
        .and_then(|options| kanata_pp::convert(&cli.input, &options));
    match result {
        Ok(report) => {
            if !cli.quiet {
                let mut stderr = std::io::stderr().lock();
                let _ = report.diagnostics.write_summary(&mut stderr, &report.input);
                if cli.verbose {
                    let s = &report.summary;
                    let _ = writeln!(
                        stderr,
                        "{}: {} instructions ({} retired, {} flushed, {} open), {} lines in, {} bytes out, {:.2} s",
                        report.input, s.instructions, s.retired, s.flushed, s.left_open,
                        report.lines_in, report.bytes_out, report.seconds
                    );
                }
            }
            ExitCode::SUCCESS
        }
        Err(err) if err.is_broken_pipe() => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("kanata-pp: {err}");
            ExitCode::from(err.exit_code() as u8)
        }
    }
}
