//! `kanata-pp diff OLD NEW`: the statistics of two traces compared, with the gates of
//! `--fail-if` that fail a CI job on a regression ([`crate::output::analysis::diff`],
//! `docs/analysis.md`).

use std::io::{self, Write};
use std::path::PathBuf;

use clap::Parser;

use crate::cli::args::FromArg;
use crate::convert::{convert, Destination, Options};
use crate::error::{Error, ErrorKind};
use crate::input::detect::Format;
use crate::output::analysis::diff::{diff, Gate};
use crate::output::analysis::{AnalysisOptions, StageRange, DEFAULT_TOP};
use crate::output::stats::TraceStats;

const EXAMPLES: &str = "\
Examples:
  kanata-pp diff main.kanata.zst pr.kanata.zst
  kanata-pp diff main.log pr.log --fail-if 'ipc < -2%' --fail-if 'flush_rate > +10%'
  kanata-pp diff old.out new.out --fail-if 'stage.Is.p99 > +5' --report json

A gate is METRIC OP CHANGE: OP is < <= > >=, CHANGE a number with an optional sign,
and % for a change relative to OLD. It trips when NEW - OLD compares true.
Metrics: instructions retired flushed cycles flush_rate ipc max_in_flight,
thread.T.ipc, stage.NAME.mean|median|p99|max|segments, konata.FIELD,
classified.FIELD (docs/analysis.md).

Exit codes: 0 no gate tripped, 1 a gate tripped or an input failed, 2 usage error.";

/// Compare the statistics of two traces (any inputs kanata-pp reads) and fail on a
/// regression.
#[derive(Debug, Parser)]
#[command(name = "kanata-pp diff", bin_name = "kanata-pp diff", version, after_help = EXAMPLES)]
pub struct DiffCli {
    /// The baseline trace (the main branch's).
    #[arg(value_name = "OLD")]
    pub old: PathBuf,

    /// The trace to judge (the pull request's).
    #[arg(value_name = "NEW")]
    pub new: PathBuf,

    /// Exit with 1 when this gate trips, the reason on stderr (`ipc < -2%`); may be given
    /// several times.
    #[arg(long = "fail-if", value_name = "GATE")]
    pub fail_if: Vec<Gate>,

    /// `human` (tables on stdout) or `json` (one object on stdout).
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "human")]
    pub report: DiffReport,

    /// Show every metric in the table, not only the ones that changed.
    #[arg(long)]
    pub all: bool,

    /// The hot spots compared per table.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_TOP)]
    pub top: usize,

    /// Compare the latency hot spots of this stage range (`X..Cm`).
    #[arg(long, value_name = "FROM..TO")]
    pub latency: Option<StageRange>,

    /// The allocation stage of the top-down breakdown (found when not given).
    #[arg(long, value_name = "STAGE")]
    pub alloc_stage: Option<String>,

    /// The slots per cycle of the top-down breakdown.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub alloc_width: Option<u32>,

    /// The inputs' format; detected from the content when not given.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub from: Option<FromArg>,
}

/// `kanata-pp diff --report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffReport {
    /// Tables on stdout.
    Human,
    /// One JSON object on stdout.
    Json,
}

/// The statistics of one input.
fn stats_of(cli: &DiffCli, input: &std::path::Path) -> Result<TraceStats, Error> {
    let mut options = Options::new(Destination::Check);
    options.stats = true;
    options.analysis = AnalysisOptions {
        top: cli.top,
        latency: cli.latency.clone(),
        topdown: crate::output::analysis::topdown::TopDownOptions {
            alloc_stage: cli.alloc_stage.clone(),
            alloc_width: cli.alloc_width,
            ..crate::output::analysis::topdown::TopDownOptions::default()
        },
        ..AnalysisOptions::default()
    };
    options.from = cli.from.map(|f| match f {
        FromArg::Kanata => Format::Kanata,
        FromArg::Gem5 => Format::Gem5,
        FromArg::Rsd => Format::Rsd,
    });
    let report = convert(input, &options)?;
    report
        .stats
        .ok_or_else(|| Error::new(ErrorKind::Io, "the conversion gave no statistics"))
}

/// Runs `kanata-pp diff`: `Ok(true)` when a gate tripped (each one's reason is on stderr).
///
/// # Errors
/// An input that cannot be read or converted; a gate on a metric neither trace has (a
/// usage error).
pub fn run(cli: &DiffCli) -> Result<bool, Error> {
    if cli.old.as_os_str() == "-" && cli.new.as_os_str() == "-" {
        return Err(Error::new(
            ErrorKind::Usage,
            "stdin (`-`) can only be one of the two inputs",
        ));
    }
    let old = stats_of(cli, &cli.old)?;
    let new = stats_of(cli, &cli.new)?;
    let name = |p: &PathBuf| {
        if p.as_os_str() == "-" {
            "<stdin>".to_owned()
        } else {
            p.display().to_string()
        }
    };
    let (old_name, new_name) = (name(&cli.old), name(&cli.new));
    let result = diff(&old_name, &old, &new_name, &new, &cli.fail_if)
        .map_err(|msg| Error::new(ErrorKind::Usage, msg))?;
    crate::cli::interrupt::stop_if_interrupted();
    let mut stdout = io::stdout().lock();
    match cli.report {
        DiffReport::Json => writeln!(stdout, "{}", result.to_json())?,
        DiffReport::Human => result.write_table(&mut stdout, cli.all)?,
    }
    stdout.flush()?;
    for gate in result.gates.iter().filter(|g| g.tripped) {
        eprintln!(
            "kanata-pp: diff: gate `{}` tripped: {}",
            gate.gate, gate.reason
        );
    }
    Ok(result.failed)
}
