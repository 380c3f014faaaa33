//! The JSON reports of `--report json`: one object per input, then a summary, one per line.
//! The fields and their order are those `docs/in-ci.md` documents (a test pins them); a
//! failed input has the same keys as a converted one, `null` where there is no value, so
//! that tools read every object alike.

use std::path::Path;

use serde::{Serialize, Serializer};

use crate::convert::{compression_name, Report, WindowReport};
use crate::diag::Diagnostics;
use crate::error::Error;
use crate::json;
use crate::output::stats::TraceStats;

/// The object of one input.
#[derive(Serialize, Default)]
struct FileReport<'a> {
    r#type: &'static str,
    input: String,
    output: Option<String>,
    format: Option<&'static str>,
    input_compression: Option<&'static str>,
    output_compression: Option<&'static str>,
    status: &'static str,
    error: Option<String>,
    error_line: Option<u64>,
    instructions: Option<u64>,
    retired: Option<u64>,
    flushed: Option<u64>,
    open: Option<u64>,
    first_cycle: Option<i64>,
    last_cycle: Option<i64>,
    repairs_total: Option<u64>,
    repairs: Option<RepairCounts<'a>>,
    bytes_in: Option<u64>,
    bytes_out: Option<u64>,
    lines_in: Option<u64>,
    lines_out: Option<u64>,
    seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    window: Option<WindowReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stats: Option<&'a TraceStats>,
}

/// Repairs by rule id, in the order of the rules.
struct RepairCounts<'a>(&'a Diagnostics);

impl Serialize for RepairCounts<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(
            self.0
                .rules()
                .into_iter()
                .map(|(rule, report)| (rule.id(), report.count)),
        )
    }
}

/// The JSON object of one input, as one line without its line end.
pub fn file_json(input: &Path, result: &Result<Report, Error>) -> String {
    let input = input.display().to_string();
    let object = match result {
        Ok(report) => {
            let s = &report.summary;
            FileReport {
                r#type: "file",
                input,
                output: report.output.as_ref().map(|p| p.display().to_string()),
                format: Some(report.format.name()),
                input_compression: Some(report.input_compression.name()),
                output_compression: Some(compression_name(report.output_compression)),
                status: "ok",
                error: None,
                error_line: None,
                instructions: Some(s.instructions),
                retired: Some(s.retired),
                flushed: Some(s.flushed),
                open: Some(s.left_open),
                first_cycle: Some(s.first_cycle),
                last_cycle: Some(s.last_cycle),
                repairs_total: Some(report.diagnostics.total()),
                repairs: Some(RepairCounts(&report.diagnostics)),
                bytes_in: Some(report.bytes_in),
                bytes_out: Some(report.bytes_out),
                lines_in: Some(report.lines_in),
                lines_out: Some(s.lines),
                seconds: Some(report.seconds),
                window: report.window,
                stats: report.stats.as_ref(),
            }
        }
        Err(err) => FileReport {
            r#type: "file",
            input,
            status: "failed",
            error: Some(err.to_string()),
            error_line: err.line(),
            ..FileReport::default()
        },
    };
    json::to_line(&object)
}

/// The summary object that ends a report: sums over every input.
#[derive(Serialize, Default)]
pub(crate) struct SummaryReport {
    r#type: &'static str,
    pub(crate) inputs: u64,
    pub(crate) converted: u64,
    pub(crate) failed: u64,
    pub(crate) repairs_total: u64,
    pub(crate) bytes_in: u64,
    pub(crate) bytes_out: u64,
    pub(crate) seconds: f64,
}

impl SummaryReport {
    /// The sums over `results`.
    pub(crate) fn of(results: &[Result<Report, Error>]) -> SummaryReport {
        let failed = results.iter().filter(|r| r.is_err()).count() as u64;
        let mut summary = SummaryReport {
            r#type: "summary",
            inputs: results.len() as u64,
            converted: results.len() as u64 - failed,
            failed,
            ..SummaryReport::default()
        };
        for report in results.iter().flatten() {
            summary.repairs_total += report.diagnostics.total();
            summary.bytes_in += report.bytes_in;
            summary.bytes_out += report.bytes_out;
            summary.seconds += report.seconds;
        }
        summary
    }

    /// The summary as one line without its line end.
    pub(crate) fn json(&self) -> String {
        json::to_line(self)
    }
}
