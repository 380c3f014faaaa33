//! What the `kanata-pp` command does with a parsed command line: one conversion or a batch,
//! and the reports on stderr (for people) or stdout (JSON, for tools). `main` only maps the
//! outcome to an exit code.

use std::io::{self, Write};
use std::path::PathBuf;

use std::io::IsTerminal;

use crate::cli::args::{Cli, ColorArg, PictureArg, ReportArg, ThemeArg};
use crate::cli::batch::{self, Job};
use crate::cli::interrupt::stop_if_interrupted;
use crate::cli::report::{file_json, SummaryReport};
use crate::convert::{convert, Destination, Options, Report};
use crate::error::{Error, ErrorKind};
use crate::output::window::Bounds;
use crate::render::png::PngOptions;
use crate::render::text::TextOptions;
use crate::render::{self, DrawOptions, ThemeName};

/// What a run ended with: how many inputs failed, or a usage error.
#[derive(Debug)]
pub struct Outcome {
    /// Inputs that could not be converted.
    pub failed: usize,
    /// Inputs in all.
    pub inputs: usize,
}

/// Runs the command line. `Err` is a usage error (or a single input's error), reported by
/// the caller; batch failures are reported here and counted in the outcome.
pub fn run(cli: &Cli) -> Result<Outcome, Error> {
    if let Some(shell) = cli.generate_completions {
        let mut command = <Cli as clap::CommandFactory>::command();
        clap_complete::generate(shell, &mut command, "kanata-pp", &mut io::stdout());
        return Ok(Outcome {
            failed: 0,
            inputs: 0,
        });
    }
    if cli.generate_man {
        let command = <Cli as clap::CommandFactory>::command();
        clap_mangen::Man::new(command).render(&mut io::stdout())?;
        return Ok(Outcome {
            failed: 0,
            inputs: 0,
        });
    }
    let options = cli.options()?;
    if let Some(picture) = cli.picture()? {
        return draw(cli, options, picture);
    }
    let batch = cli.out_dir.is_some() || cli.inputs.len() > 1;
    if cli.output.is_some() && cli.inputs.len() > 1 {
        return Err(Error::new(
            ErrorKind::Usage,
            "-o takes one input; use -d OUTDIR for several",
        ));
    }
    if batch && !cli.check && cli.out_dir.is_none() {
        return Err(Error::new(
            ErrorKind::Usage,
            "several inputs need -d OUTDIR (or --check)",
        ));
    }
    if cli.inputs.iter().filter(|i| i.as_os_str() == "-").count() > usize::from(!batch) {
        return Err(Error::new(
            ErrorKind::Usage,
            "stdin (`-`) can only be read as the one input",
        ));
    }
    let json = cli.report == ReportArg::Json;
    if json && options.destination == Destination::Stdout {
        return Err(Error::new(
            ErrorKind::Usage,
            "--report json writes to stdout: give the output with -o",
        ));
    }
    if !batch {
        let input = &cli.inputs[0];
        let result = convert(input, &options);
        // No report of an interrupted run: the signal's line is all it prints.
        stop_if_interrupted();
        if json {
            print_json(std::slice::from_ref(input), std::slice::from_ref(&result));
        } else if let Ok(report) = &result {
            print_human(cli, report);
        }
        return result.map(|_| Outcome {
            failed: 0,
            inputs: 1,
        });
    }

    let out_dir = if cli.check {
        None
    } else {
        cli.out_dir.as_deref()
    };
    let compression = cli.compression().unwrap_or_default();
    crate::convert::check_level(compression, cli.level)?;
    if out_dir.is_some() {
        crate::convert::check_seekable(compression, options.seekable)?;
    }
    let jobs: Vec<Job> = batch::plan(&cli.inputs, out_dir, compression)?;
    if let Some(dir) = out_dir {
        std::fs::create_dir_all(dir).map_err(|err| {
            Error::new(
                ErrorKind::Io,
                format!("cannot create {}: {err}", dir.display()),
            )
        })?;
    }
    let threads = cli
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let mut batch_options = options.clone();
    batch_options.compression = Some(compression);
    let mut done = |index: usize, result: &Result<Report, Error>| {
        stop_if_interrupted();
        if json {
            let _ = writeln!(io::stdout(), "{}", file_json(&cli.inputs[index], result));
        } else {
            match result {
                Ok(report) => print_human(cli, report),
                Err(err) => eprintln!("kanata-pp: {err}"),
            }
        }
    };
    let results = batch::run(&jobs, &batch_options, threads, &mut done);
    stop_if_interrupted();
    let failed = results.iter().filter(|r| r.is_err()).count();
    let totals = SummaryReport::of(&results);
    if json {
        let _ = writeln!(io::stdout(), "{}", totals.json());
    } else if !cli.quiet {
        eprintln!(
            "kanata-pp: {} converted, {failed} failed, {} repairs, {} bytes in, {} bytes out",
            results.len() - failed,
            totals.repairs_total,
            totals.bytes_in,
            totals.bytes_out
        );
    }
    Ok(Outcome {
        failed,
        inputs: results.len(),
    })
}

/// The statistics of one conversion on stdout (they are what was asked for), and its
/// repairs on stderr unless `-q`.
fn print_human(cli: &Cli, report: &Report) {
    if let Some(stats) = &report.stats {
        let _ = stats.write_table(&mut io::stdout(), &report.input);
    }
    if cli.quiet {
        return;
    }
    let mut stderr = io::stderr().lock();
    let _ = report.diagnostics.write_summary(&mut stderr, &report.input);
    if let Some(window) = &report.window {
        if report.summary.instructions == 0 {
            let _ = writeln!(
                stderr,
                "{}: note: the window holds no instruction (of {} read): the output is an \
                 empty trace",
                report.input, window.instructions_read
            );
        } else if cli.verbose {
            let _ = writeln!(
                stderr,
                "{}: window: {} of {} instructions read kept{}",
                report.input,
                report.summary.instructions,
                window.instructions_read,
                if window.stopped_early {
                    ", reading stopped early"
                } else {
                    ""
                }
            );
        }
    }
    if cli.verbose {
        let s = &report.summary;
        let _ = writeln!(
            stderr,
            "{}: {} instructions ({} retired, {} flushed, {} open), {} lines in, {} lines out, \
             {} bytes out, {:.2} s",
            report.input,
            s.instructions,
            s.retired,
            s.flushed,
            s.left_open,
            report.lines_in,
            s.lines,
            report.bytes_out,
            report.seconds
        );
    }
}

/// Draws the window of the one input as a picture, to `-o PATH` (whole or not at all) or to
/// stdout.
fn draw(cli: &Cli, mut options: Options, picture: PictureArg) -> Result<Outcome, Error> {
    if cli.inputs.len() != 1 || cli.out_dir.is_some() {
        return Err(Error::new(
            ErrorKind::Usage,
            "a picture is drawn from one input, to -o PATH or to stdout",
        ));
    }
    if !options.window.is_restricted() {
        options.window.insns = Bounds {
            start: Some(0),
            end: Some(100),
        };
    }
    let draw = DrawOptions {
        theme: match cli.theme {
            ThemeArg::Light => ThemeName::Light,
            ThemeArg::Dark => ThemeName::Dark,
        },
        arrows: !cli.no_arrows,
        max_insns: cli.max_insns,
        cycles_per_column: cli.cycles_per_column,
        max_columns: match picture {
            PictureArg::Png => render::png::max_columns(cli.scale).min(render::DEFAULT_MAX_COLUMNS),
            _ => render::DEFAULT_MAX_COLUMNS,
        },
        ..DrawOptions::default()
    };
    let input = &cli.inputs[0];
    let drawing = render::draw_trace(input, &options, &draw)?;
    let path = cli.output.as_deref().filter(|path| path.as_os_str() != "-");
    let terminal = path.is_none() && io::stdout().is_terminal();
    let bytes = match picture {
        PictureArg::Svg => render::svg::render(&drawing).into_bytes(),
        PictureArg::Png => render::png::render(&drawing, &PngOptions { scale: cli.scale })?,
        PictureArg::Text => {
            let width = cli.width.unwrap_or_else(|| {
                std::env::var("COLUMNS")
                    .ok()
                    .and_then(|columns| columns.parse().ok())
                    .filter(|_| terminal)
                    .unwrap_or(120)
            });
            let color = match cli.color {
                ColorArg::Always => true,
                ColorArg::Never => false,
                ColorArg::Auto => terminal,
            };
            let text = TextOptions {
                width,
                color,
                ..TextOptions::default()
            };
            render::text::render(&drawing, &text).into_bytes()
        }
    };
    stop_if_interrupted();
    match path {
        Some(path) => crate::convert::write_output(path, &bytes)?,
        None => {
            let mut stdout = io::stdout().lock();
            stdout.write_all(&bytes)?;
            stdout.flush()?;
        }
    }
    Ok(Outcome {
        failed: 0,
        inputs: 1,
    })
}

fn print_json(inputs: &[PathBuf], results: &[Result<Report, Error>]) {
    let mut stdout = io::stdout().lock();
    for (input, result) in inputs.iter().zip(results) {
        let _ = writeln!(stdout, "{}", file_json(input, result));
    }
    let _ = writeln!(stdout, "{}", SummaryReport::of(results).json());
}
