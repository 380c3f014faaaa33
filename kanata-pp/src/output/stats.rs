//! Trace statistics, computed on the fly from the canonical Kanata text as it is written.
//!
//! [`StatsSink`] sits between a writer of canonical Kanata text (kanata-writer, hence every
//! conversion of kanata-pp) and the real output. It forwards every byte unchanged and reads
//! the stream on the way, so the statistics cost one pass over text that is already in cache.
//! When the stream ends, [`StatsSink::into_parts`] hands back the output and a [`TraceStats`]:
//! instruction, retire and flush counts, cycles and IPC (overall and per thread), and the
//! residency of every stage (segments, mean, exact median and 99th percentile).
//! [`TraceStats::write_table`] renders them for a terminal, [`TraceStats::write_json`] for a
//! CI job.
//!
//! The sink reads the uncompressed text: put it in front of any compressor.
//!
//! # What is measured
//!
//! - A stage *segment* is one stay of an instruction in a stage of a lane, from its `S` to
//!   whatever closes it: an `E` naming it, the next `S` in the same lane, or the
//!   instruction's `R` (so the compact form, which leaves implied `E`s out, gives the same
//!   numbers as the explicit one). Its *residency* is end cycle − start cycle; a segment that
//!   starts and ends in the same cycle has residency 0. Segments of flushed instructions
//!   count like the others. Segments still open at the end of the stream are not counted;
//!   [`StageStats::open`] reports how many there are.
//! - Cycles run from the `C=` line ([`TraceStats::first_cycle`]) to the time of the last line
//!   ([`TraceStats::last_cycle`]; canonical traces end with a `C` that keeps the input's last
//!   cycle).
//!
//! # Memory
//!
//! Memory is bounded by the instructions in flight, not by the length of the trace: the sink
//! keeps, per live instruction (keyed by its file id), its thread and its open stage per
//! lane with the cycle it started, and drops that state at the instruction's `R`. Per stage
//! it keeps a histogram of residencies (residency → count): residencies are small integers
//! and a stage has few distinct values, so the histogram stays small however many segments
//! it counts, and the median and percentiles read from it are exact. Residencies below 64
//! cycles are counted in a fixed array; longer ones in a map with one entry per distinct
//! value. A line is buffered only while it is split across two writes.
//!
//! # Reading
//!
//! The sink reads the text through the one reader of canonical Kanata,
//! [`LineParser::skim_stages`](crate::output::canonical::LineParser::skim_stages): the text is
//! trusted (it is the writer's own output), so of each line only what the statistics need is
//! read (the command, the ids, the thread, the lane and stage name, the type of an `R`) and
//! the time is kept by the reader; the other fields are not checked (`--check` checks the
//! input, and kanata-writer writes canonical text).
//!
//! # Robustness
//!
//! The sink never panics, whatever the bytes. [`TraceStats::ignored_lines`] counts the lines
//! it skips, 0 for the writer's canonical output:
//!
//! - lines the reader cannot skim: an unknown command or an empty line, an id, lane, thread
//!   or `C` step that is not a plain decimal (only a thread may have a `-`), a missing stage
//!   name or `R` type, a step that takes the cycle past `i64::MAX`, a header or `C=` line
//!   other than on lines 1 and 2;
//! - commands that do not apply: an `S` or `R` for an instruction that is not live, an `E`
//!   for a stage that is not open, a second `I` for a live id;
//! - lines longer than 4096 bytes, except `L` lines (of which only the id is read).
//!
//! Text that does not start with the header and the `C=` line (a piece of a trace) is read
//! as the body of a trace that starts at simulator cycle 0, from its first line that is not
//! one of them (a `C=` line without the header before it is skipped). A CR before a line's
//! LF is dropped with it.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;
use std::io::{self, Write};

use bstr::ByteSlice;
use serde::{Serialize, Serializer};

use crate::output::analysis::{Analysis, AnalysisOptions, Analyzer};
use crate::output::canonical::{LineParser, Position, StageSkim};

/// The longest line that is read (label lines excepted: only their start is read).
const MAX_LINE: usize = 4096;

/// Residencies below this many cycles are counted in an array, the others in a map.
const DENSE: usize = 64;

/// Statistics of one thread of the trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ThreadStats {
    /// Instructions of this thread (`I` lines).
    pub instructions: u64,
    /// Of those, retired (`R` with type 0).
    pub retired: u64,
    /// Of those, flushed (`R` with type 1).
    pub flushed: u64,
    /// Retired instructions of this thread per cycle of the whole trace
    /// ([`TraceStats::cycles`]); 0 when the trace spans no cycle.
    pub ipc: f64,
}

/// Residency statistics of one stage name in one lane.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct StageStats {
    /// Closed segments: stays in this stage that an `E`, the next `S` in the lane or the
    /// instruction's `R` ended.
    pub segments: u64,
    /// Segments still open at the end of the stream (not counted in the others).
    pub open: u64,
    /// Sum of the residencies of all segments, in cycles (saturating).
    pub total_cycles: u64,
    /// Mean residency in cycles; 0 without segments.
    pub mean: f64,
    /// Median residency in cycles, exact: the middle value, or the mean of the two middle
    /// values for an even number of segments; 0 without segments.
    pub median: f64,
    /// 99th percentile of the residency in cycles, exact (nearest rank): the smallest
    /// residency that at least 99 % of the segments do not exceed; 0 without segments.
    pub p99: u64,
    /// Longest residency in cycles; 0 without segments.
    pub max: u64,
    /// Every residency seen (cycles → number of segments), in ascending order (not in the
    /// JSON form).
    #[serde(skip)]
    pub histogram: BTreeMap<u64, u64>,
}

impl StageStats {
    /// The `p`-th percentile of the residency (nearest rank; `p` in 0..=100): the smallest
    /// residency that at least `p` % of the segments do not exceed; 0 without segments.
    ///
    /// ```
    /// # use kanata_pp::output::stats::StageStats;
    /// let mut stage = StageStats::default();
    /// stage.histogram.insert(1, 90);
    /// stage.histogram.insert(7, 10);
    /// assert_eq!(stage.percentile(50.0), 1);
    /// assert_eq!(stage.percentile(90.0), 1);
    /// assert_eq!(stage.percentile(91.0), 7);
    /// ```
    pub fn percentile(&self, p: f64) -> u64 {
        let total: u64 = self.histogram.values().sum();
        value_at_rank(self.histogram.iter().map(|(&v, &n)| (v, n)), rank(total, p)).unwrap_or(0)
    }
}

/// The 1-based nearest rank of the `p`-th percentile among `total` values (0 when empty).
fn rank(total: u64, p: f64) -> u64 {
    if total == 0 {
        return 0;
    }
    // p * total first: exact for integral p and any realistic total.
    let rank = (p.clamp(0.0, 100.0) * total as f64 / 100.0).ceil();
    (rank as u64).clamp(1, total)
}

/// The value of 1-based rank `rank` in ascending (value, count) pairs.
fn value_at_rank(pairs: impl Iterator<Item = (u64, u64)>, rank: u64) -> Option<u64> {
    let mut seen = 0u64;
    for (value, count) in pairs {
        seen = seen.saturating_add(count);
        if seen >= rank {
            return Some(value);
        }
    }
    None
}

/// What a canonical Kanata trace holds, as a CI job would track it.
///
/// Built by [`StatsSink`]; see the [module documentation](self) for what is measured. Its
/// JSON form ([`write_json`](Self::write_json)) has the fields in this order, `threads` and
/// `stages` as arrays of objects (a JSON key cannot be a thread number or a lane and name).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TraceStats {
    /// Lines read (every line, including the header and ignored ones).
    pub lines: u64,
    /// Lines that could not be read, or whose commands did not apply (see the
    /// [module documentation](self)); 0 for a canonical trace.
    pub ignored_lines: u64,
    /// Instructions (`I` lines).
    pub instructions: u64,
    /// Instructions retired (`R` with type 0; any type other than 1 counts as retired, as in
    /// Konata).
    pub retired: u64,
    /// Instructions flushed (`R` with type 1).
    pub flushed: u64,
    /// Instructions without `R` at the end of the stream.
    pub open_instructions: u64,
    /// The largest number of instructions live at once.
    pub max_in_flight: u64,
    /// The start cycle: the value of the `C=` line (0 without one).
    pub first_cycle: i64,
    /// The cycle of the end of the stream.
    pub last_cycle: i64,
    /// `last_cycle - first_cycle`.
    pub cycles: i64,
    /// `flushed / instructions`; 0 without instructions.
    pub flush_rate: f64,
    /// `retired / cycles`; 0 when the trace spans no cycle.
    pub ipc: f64,
    /// Per thread id.
    #[serde(serialize_with = "threads_json")]
    pub threads: BTreeMap<i64, ThreadStats>,
    /// Per stage, keyed by (lane, stage name).
    #[serde(serialize_with = "stages_json")]
    pub stages: BTreeMap<(u64, String), StageStats>,
    /// Konata's statistics, the classified counts and the hot spots, from a sink made with
    /// [`StatsSink::with_analysis`] (`kanata-pp --stats` makes one); in the JSON form its
    /// fields `konata`, `classified`, `hotspots`, `topdown` and `topdown_note` follow
    /// `stages` (`docs/analysis.md`).
    #[serde(flatten)]
    pub analysis: Option<Analysis>,
}

impl TraceStats {
    /// The statistics of stage `name` in `lane`, if the trace has it.
    pub fn stage(&self, lane: u64, name: &str) -> Option<&StageStats> {
        // A linear search avoids allocating a key; stage tables are short.
        self.stages
            .iter()
            .find(|((l, n), _)| *l == lane && n == name)
            .map(|(_, stats)| stats)
    }

    /// Writes the statistics as an aligned table for a terminal, under the heading `name`
    /// (usually the trace's file name): the totals (instructions, retired, flushed with the
    /// flush rate in %, open, cycles, IPC), one row per thread (instructions, retired,
    /// flushed, IPC) and one row per stage (lane, stage, segments, mean, median, p99, max,
    /// open).
    pub fn write_table(&self, out: &mut dyn Write, name: &str) -> io::Result<()> {
        writeln!(out, "{}", printable(name))?;
        let totals = [
            ("instructions", self.instructions.to_string(), String::new()),
            ("retired", self.retired.to_string(), String::new()),
            (
                "flushed",
                self.flushed.to_string(),
                format!("{:.2} %", self.flush_rate * 100.0),
            ),
            ("open", self.open_instructions.to_string(), String::new()),
            (
                "cycles",
                self.cycles.to_string(),
                format!("{} .. {}", self.first_cycle, self.last_cycle),
            ),
            ("IPC", format!("{:.3}", self.ipc), String::new()),
        ];
        let key_width = totals.iter().map(|t| t.0.len()).max().unwrap_or(0);
        let value_width = totals.iter().map(|t| t.1.len()).max().unwrap_or(0);
        for (key, value, note) in &totals {
            let line = format!("  {key:<key_width$}  {value:>value_width$}  {note}");
            writeln!(out, "{}", line.trim_end())?;
        }
        if !self.threads.is_empty() {
            writeln!(out)?;
            let rows: Vec<Vec<String>> = self
                .threads
                .iter()
                .map(|(thread, t)| {
                    vec![
                        thread.to_string(),
                        t.instructions.to_string(),
                        t.retired.to_string(),
                        t.flushed.to_string(),
                        format!("{:.3}", t.ipc),
                    ]
                })
                .collect();
            write_columns(
                out,
                &["thread", "instructions", "retired", "flushed", "IPC"],
                &[false; 5],
                &rows,
            )?;
        }
        if !self.stages.is_empty() {
            writeln!(out)?;
            let rows: Vec<Vec<String>> = self
                .stages
                .iter()
                .map(|((lane, stage), s)| {
                    vec![
                        lane.to_string(),
                        printable(stage),
                        s.segments.to_string(),
                        format!("{:.2}", s.mean),
                        format!("{:.1}", s.median),
                        s.p99.to_string(),
                        s.max.to_string(),
                        s.open.to_string(),
                    ]
                })
                .collect();
            let mut left = [false; 8];
            left[1] = true;
            write_columns(
                out,
                &[
                    "lane", "stage", "segments", "mean", "median", "p99", "max", "open",
                ],
                &left,
                &rows,
            )?;
        }
        if let Some(analysis) = &self.analysis {
            writeln!(out)?;
            crate::output::analysis::write_table(analysis, out)?;
        }
        Ok(())
    }

    /// Writes the statistics as one JSON object (UTF-8, ending with a newline). The field
    /// names are stable:
    ///
    /// - `lines`, `ignored_lines`: lines read; lines not understood or not applicable.
    /// - `instructions`, `retired`, `flushed`, `open_instructions`: instruction counts.
    /// - `max_in_flight`: the most instructions live at once.
    /// - `flush_rate`: `flushed / instructions` (a ratio, not a percentage).
    /// - `first_cycle`, `last_cycle`, `cycles`: the `C=` cycle, the last cycle, their
    ///   difference.
    /// - `ipc`: `retired / cycles`.
    /// - `threads`: an array, by ascending thread id, of objects with `thread`,
    ///   `instructions`, `retired`, `flushed`, `ipc` (the thread's retired instructions per
    ///   cycle of the whole trace).
    /// - `stages`: an array, by lane then stage name, of objects with `lane`, `stage`,
    ///   `segments`, `open`, `total_cycles`, `mean`, `median`, `p99`, `max` (residencies in
    ///   cycles; see [`StageStats`]).
    /// - `konata`, `classified`, `hotspots`, `topdown`, `topdown_note`: with
    ///   [`analysis`](Self::analysis) only (the sink of `kanata-pp --stats`): Konata's
    ///   statistics dialog, the same counts classified by mnemonic, the hot spots, the
    ///   top-down breakdown of the slots ([`crate::output::analysis`], `docs/analysis.md`).
    ///
    /// Counts and cycles are integers; rates, IPC, mean and median are numbers that may
    /// have a fraction. Ratios that would divide by zero are written as 0.
    ///
    /// ```
    /// # use kanata_pp::output::stats::TraceStats;
    /// let mut json = Vec::new();
    /// TraceStats::default().write_json(&mut json).unwrap();
    /// let json = String::from_utf8(json).unwrap();
    /// assert!(json.starts_with('{') && json.ends_with("}\n"));
    /// assert!(json.contains("\"flush_rate\":0,"));
    /// ```
    pub fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", self.to_json())
    }

    /// The statistics as one line of JSON, with the fields of [`write_json`](Self::write_json).
    pub fn to_json(&self) -> String {
        crate::json::to_line(self)
    }
}

/// `threads` as `[{"thread": 0, <ThreadStats>}, …]`.
fn threads_json<S: Serializer>(
    threads: &BTreeMap<i64, ThreadStats>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Row<'a> {
        thread: i64,
        #[serde(flatten)]
        stats: &'a ThreadStats,
    }
    serializer.collect_seq(threads.iter().map(|(&thread, stats)| Row { thread, stats }))
}

/// `stages` as `[{"lane": 0, "stage": "F", <StageStats>}, …]`.
fn stages_json<S: Serializer>(
    stages: &BTreeMap<(u64, String), StageStats>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Row<'a> {
        lane: u64,
        stage: &'a str,
        #[serde(flatten)]
        stats: &'a StageStats,
    }
    serializer.collect_seq(stages.iter().map(|((lane, stage), stats)| Row {
        lane: *lane,
        stage,
        stats,
    }))
}

/// `text` with control characters shown as `?`, so a table row stays one line.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// Writes `rows` under `header` in aligned columns, indented by two spaces; `left[i]` aligns
/// column `i` to the left, the others (numbers) to the right.
fn write_columns(
    out: &mut dyn Write,
    header: &[&str],
    left: &[bool],
    rows: &[Vec<String>],
) -> io::Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut line = String::new();
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    for row in std::iter::once(&header).chain(rows) {
        line.clear();
        for (i, (cell, &width)) in row.iter().zip(&widths).enumerate() {
            line.push_str("  ");
            if left.get(i).copied().unwrap_or(false) {
                line.push_str(&format!("{cell:<width$}"));
            } else {
                line.push_str(&format!("{cell:>width$}"));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

// ----- the sink -----

/// A [`Write`] that forwards canonical Kanata text to an inner writer and computes its
/// [`TraceStats`] on the way.
///
/// The text may arrive in chunks of any size, lines split across writes; only the bytes the
/// inner writer accepts are counted. After an error from the inner writer the statistics
/// are unspecified. It is [`Send`] and `'static` when `W` is, so it can be the output of a
/// kanata-writer writer that compresses on a background thread — as long as it receives
/// the text, not the compressed bytes.
///
/// ```
/// use std::io::Write;
/// use kanata_pp::output::stats::StatsSink;
///
/// let trace = "Kanata\t0004\nC=\t100\n\
///              I\t0\t0\t0\nS\t0\t0\tF\nI\t1\t1\t0\nS\t1\t0\tF\n\
///              C\t1\nE\t0\t0\tF\nS\t0\t0\tX\nE\t1\t0\tF\nS\t1\t0\tX\n\
///              C\t3\nE\t0\t0\tX\nR\t0\t0\t0\nE\t1\t0\tX\nR\t1\t0\t1\nC\t1\n";
/// let mut sink = StatsSink::new(Vec::new());
/// sink.write_all(trace.as_bytes())?;
/// let (output, stats) = sink.into_parts();
/// assert_eq!(output, trace.as_bytes()); // forwarded unchanged
/// assert_eq!((stats.instructions, stats.retired, stats.flushed), (2, 1, 1));
/// assert_eq!((stats.first_cycle, stats.last_cycle, stats.cycles), (100, 105, 5));
/// assert_eq!(stats.ipc, 0.2);
/// let execute = stats.stage(0, "X").unwrap();
/// assert_eq!((execute.segments, execute.median, execute.p99), (2, 3.0, 3));
///
/// let mut json = Vec::new();
/// stats.write_json(&mut json)?;
/// assert!(String::from_utf8(json).unwrap().contains("\"retired\":1,"));
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct StatsSink<W: Write> {
    inner: W,
    /// The start of a line split across writes (at most `MAX_LINE + 1` bytes of it).
    carry: Vec<u8>,
    state: State,
}

impl<W: Write> StatsSink<W> {
    /// A sink that forwards to `inner`.
    pub fn new(inner: W) -> StatsSink<W> {
        StatsSink {
            inner,
            carry: Vec::new(),
            state: State::default(),
        }
    }

    /// A sink that forwards to `inner` and also computes the [`Analysis`] of the text
    /// ([`TraceStats::analysis`]).
    pub fn with_analysis(inner: W, options: AnalysisOptions) -> StatsSink<W> {
        let mut sink = StatsSink::new(inner);
        sink.state.analyzer = Some(Box::new(Analyzer::new(options)));
        sink
    }

    /// The inner writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The inner writer; bytes written to it directly are not counted.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// The statistics of the complete lines seen so far (a line still split across writes
    /// is not included).
    pub fn stats(&self) -> TraceStats {
        self.state.snapshot()
    }

    /// Ends the stream and returns the inner writer (not flushed) and the statistics. A last
    /// line without its line feed is counted.
    pub fn into_parts(mut self) -> (W, TraceStats) {
        if !self.carry.is_empty() {
            self.state.line(&self.carry);
            self.carry.clear();
        }
        let stats = self.state.snapshot();
        (self.inner, stats)
    }

    /// Parses bytes that were written.
    fn feed(&mut self, mut data: &[u8]) {
        if !self.carry.is_empty() {
            match memchr::memchr(b'\n', data) {
                None => {
                    push_carry(&mut self.carry, data);
                    return;
                }
                Some(end) => {
                    push_carry(&mut self.carry, &data[..end]);
                    self.state.line(&self.carry);
                    self.carry.clear();
                    data = &data[end + 1..];
                }
            }
        }
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', data) {
            self.state.line(&data[start..end]);
            start = end + 1;
        }
        push_carry(&mut self.carry, &data[start..]);
    }
}

/// Keeps the start of a split line: enough to parse it, or to know it is too long.
fn push_carry(carry: &mut Vec<u8>, data: &[u8]) {
    let room = (MAX_LINE + 1).saturating_sub(carry.len());
    carry.extend_from_slice(&data[..data.len().min(room)]);
}

impl<W: Write> Write for StatsSink<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(buf)?;
        self.feed(&buf[..written.min(buf.len())]);
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

// ----- the state -----

/// File ids and stage names: a fast hash is what matters.
type Fx = BuildHasherDefault<crate::kanata::ids::IdHasher>;

/// A stage open in one lane of a live instruction.
#[derive(Clone, Copy, Debug)]
struct Open {
    lane: u64,
    stage: u32,
    /// Konata's cycle of its `S`.
    start: u64,
}

/// A live instruction.
#[derive(Debug)]
struct Live {
    thread: u32,
    opens: Vec<Open>,
}

/// Residency counts of one (lane, stage).
#[derive(Debug)]
struct StageAcc {
    lane: u64,
    name: String,
    segments: u64,
    total: u128,
    max: u64,
    dense: [u64; DENSE],
    sparse: BTreeMap<u64, u64>,
}

impl StageAcc {
    /// Counts a segment from cycle `start` to cycle `end` (`end >= start`: the reader's
    /// cycle never goes back).
    #[inline]
    fn record(&mut self, start: u64, end: u64) {
        let residency = end.saturating_sub(start);
        self.segments += 1;
        self.total += u128::from(residency);
        self.max = self.max.max(residency);
        if residency < DENSE as u64 {
            self.dense[residency as usize] += 1;
        } else {
            *self.sparse.entry(residency).or_insert(0) += 1;
        }
    }

    /// (residency, count) in ascending order.
    fn histogram(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.dense
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(v, &n)| (v as u64, n))
            .chain(self.sparse.iter().map(|(&v, &n)| (v, n)))
    }

    fn stats(&self, open: u64) -> StageStats {
        let n = self.segments;
        let (mean, median, p99) = if n == 0 {
            (0.0, 0.0, 0)
        } else {
            let low = value_at_rank(self.histogram(), n.div_ceil(2)).unwrap_or(0);
            let median = if n % 2 == 1 {
                low as f64
            } else {
                let high = value_at_rank(self.histogram(), n / 2 + 1).unwrap_or(0);
                (low as f64 + high as f64) / 2.0
            };
            // Nearest rank ceil(0.99 n), in integers.
            let rank = (u128::from(n) * 99).div_ceil(100) as u64;
            let p99 = value_at_rank(self.histogram(), rank.max(1)).unwrap_or(0);
            (self.total as f64 / n as f64, median, p99)
        };
        StageStats {
            segments: n,
            open,
            total_cycles: u64::try_from(self.total).unwrap_or(u64::MAX),
            mean,
            median,
            p99,
            max: self.max,
            histogram: self.histogram().collect(),
        }
    }
}

/// The stages of one lane by the raw bytes of their names (as the reader gives them).
type LaneStages = HashMap<Box<[u8]>, u32, Fx>;

/// The stages seen, interned per lane by the raw bytes of their names.
#[derive(Debug, Default)]
struct StageTable {
    /// Per lane seen, in the order first seen.
    lanes: Vec<(u64, LaneStages)>,
    by_name: BTreeMap<(u64, String), u32>,
    stages: Vec<StageAcc>,
}

impl StageTable {
    /// The index of stage `name` in `lane`, if it has been seen.
    #[inline]
    fn find(&self, lane: u64, name: &[u8]) -> Option<u32> {
        let (_, names) = self.lanes.iter().find(|(l, _)| *l == lane)?;
        names.get(name).copied()
    }

    /// The index of stage `name` in `lane`, added if new; `None` only when there are
    /// `u32::MAX` stages already.
    #[inline]
    fn intern(&mut self, lane: u64, name: &[u8]) -> Option<u32> {
        match self.find(lane, name) {
            Some(index) => Some(index),
            None => self.add(lane, name),
        }
    }

    #[cold]
    fn add(&mut self, lane: u64, raw: &[u8]) -> Option<u32> {
        let name = raw.to_str_lossy().into_owned();
        // Different bytes can decode to the same name (invalid UTF-8): one stage.
        let next = u32::try_from(self.stages.len()).ok()?;
        let index = *self.by_name.entry((lane, name.clone())).or_insert(next);
        if index == next {
            self.stages.push(StageAcc {
                lane,
                name,
                segments: 0,
                total: 0,
                max: 0,
                dense: [0; DENSE],
                sparse: BTreeMap::new(),
            });
        }
        let at = match self.lanes.iter().position(|(l, _)| *l == lane) {
            Some(at) => at,
            None => {
                self.lanes.push((lane, HashMap::default()));
                self.lanes.len() - 1
            }
        };
        self.lanes[at].1.insert(raw.into(), index);
        Some(index)
    }
}

/// Counts of one thread.
#[derive(Clone, Copy, Debug, Default)]
struct ThreadAcc {
    instructions: u64,
    retired: u64,
    flushed: u64,
}

/// Everything the sink keeps.
#[derive(Debug, Default)]
struct State {
    /// The reader of the canonical text: the time, and what each line says.
    parser: LineParser,
    lines: u64,
    ignored: u64,
    instructions: u64,
    retired: u64,
    flushed: u64,
    max_in_flight: u64,
    live: HashMap<u64, Live, Fx>,
    /// Emptied `opens` vectors of finished instructions, for reuse.
    pool: Vec<Vec<Open>>,
    table: StageTable,
    thread_index: HashMap<i64, u32, Fx>,
    threads: Vec<(i64, ThreadAcc)>,
    /// The analysis, when asked for.
    analyzer: Option<Box<Analyzer>>,
}

impl State {
    /// Reads one line (without its line feed).
    #[inline]
    fn line(&mut self, line: &[u8]) {
        self.lines += 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        // A longer line may have been cut (`push_carry`); the reader needs only the start of
        // an `L` line.
        let understood = if line.len() > MAX_LINE && !line.starts_with(b"L\t") {
            if let Some(analyzer) = &mut self.analyzer {
                analyzer.skipped();
            }
            false
        } else {
            self.apply(line).is_some()
        };
        if !understood {
            self.ignored += 1;
        }
    }

    /// Applies what `line` says; `None` if it cannot be read or does not apply. The
    /// analysis reads the same skim.
    #[inline]
    fn apply(&mut self, line: &[u8]) -> Option<()> {
        let skim = match self.parser.skim_stages(line) {
            Ok(skim) => Some(skim),
            // Text that does not start with the header and the `C=` line is read as if they
            // were there (`C=\t0`): this line is the first of the body.
            Err(_) if self.parser.start_cycle().is_none() => {
                self.parser = LineParser::resume(Position {
                    line: 2,
                    cycle: 0,
                    start_cycle: 0,
                });
                self.parser.skim_stages(line).ok()
            }
            Err(_) => None,
        };
        if let Some(analyzer) = &mut self.analyzer {
            match &skim {
                Some(skim) => analyzer.skimmed(line, skim, self.parser.cycle()),
                None => analyzer.skipped(),
            }
        }
        match skim? {
            StageSkim::StageStart { id, lane, name } => self.start(id, lane, name),
            StageSkim::StageEnd { id, lane, name } => self.end(id, lane, name),
            StageSkim::Insn { id, thread } => self.insn(id, thread),
            StageSkim::Retire { id, flushed } => self.retire(id, flushed),
            StageSkim::Header
            | StageSkim::Start(_)
            | StageSkim::Step
            | StageSkim::Label(_)
            | StageSkim::Dep { .. } => Some(()),
        }
    }

    #[inline]
    fn insn(&mut self, id: u64, thread: i64) -> Option<()> {
        let index = match self.thread_index.entry(thread) {
            Entry::Occupied(entry) => *entry.get(),
            Entry::Vacant(entry) => {
                let index = u32::try_from(self.threads.len()).ok()?;
                self.threads.push((thread, ThreadAcc::default()));
                *entry.insert(index)
            }
        };
        match self.live.entry(id) {
            Entry::Occupied(_) => return None,
            Entry::Vacant(entry) => {
                let opens = self.pool.pop().unwrap_or_default();
                entry.insert(Live {
                    thread: index,
                    opens,
                });
            }
        }
        self.instructions += 1;
        self.threads[index as usize].1.instructions += 1;
        self.max_in_flight = self.max_in_flight.max(self.live.len() as u64);
        Some(())
    }

    #[inline]
    fn start(&mut self, id: u64, lane: u64, name: &[u8]) -> Option<()> {
        let live = self.live.get_mut(&id)?;
        let stage = self.table.intern(lane, name)?;
        let now = self.parser.cycle();
        match live.opens.iter_mut().find(|open| open.lane == lane) {
            Some(open) => {
                self.table.stages[open.stage as usize].record(open.start, now);
                open.stage = stage;
                open.start = now;
            }
            None => live.opens.push(Open {
                lane,
                stage,
                start: now,
            }),
        }
        Some(())
    }

    #[inline]
    fn end(&mut self, id: u64, lane: u64, name: &[u8]) -> Option<()> {
        let live = self.live.get_mut(&id)?;
        let stage = self.table.find(lane, name)?;
        let at = live.opens.iter().position(|open| open.stage == stage)?;
        let open = live.opens.swap_remove(at);
        self.table.stages[stage as usize].record(open.start, self.parser.cycle());
        Some(())
    }

    #[inline]
    fn retire(&mut self, id: u64, flushed: bool) -> Option<()> {
        let mut live = self.live.remove(&id)?;
        let now = self.parser.cycle();
        for open in live.opens.drain(..) {
            self.table.stages[open.stage as usize].record(open.start, now);
        }
        self.pool.push(live.opens);
        let thread = &mut self.threads[live.thread as usize].1;
        if flushed {
            self.flushed += 1;
            thread.flushed += 1;
        } else {
            self.retired += 1;
            thread.retired += 1;
        }
        Some(())
    }

    fn snapshot(&self) -> TraceStats {
        let mut open = vec![0u64; self.table.stages.len()];
        for live in self.live.values() {
            for o in &live.opens {
                open[o.stage as usize] += 1;
            }
        }
        let first_cycle = self.parser.start_cycle().unwrap_or(0);
        // The reader keeps `first_cycle + cycles` within i64.
        let cycles = i64::try_from(self.parser.cycle()).unwrap_or(i64::MAX);
        let per_cycle = |n: u64| {
            if cycles > 0 {
                n as f64 / cycles as f64
            } else {
                0.0
            }
        };
        TraceStats {
            lines: self.lines,
            ignored_lines: self.ignored,
            instructions: self.instructions,
            retired: self.retired,
            flushed: self.flushed,
            open_instructions: self.live.len() as u64,
            max_in_flight: self.max_in_flight,
            flush_rate: if self.instructions > 0 {
                self.flushed as f64 / self.instructions as f64
            } else {
                0.0
            },
            first_cycle,
            last_cycle: first_cycle.saturating_add(cycles),
            cycles,
            ipc: per_cycle(self.retired),
            threads: self
                .threads
                .iter()
                .map(|&(thread, t)| {
                    let stats = ThreadStats {
                        instructions: t.instructions,
                        retired: t.retired,
                        flushed: t.flushed,
                        ipc: per_cycle(t.retired),
                    };
                    (thread, stats)
                })
                .collect(),
            stages: self
                .table
                .stages
                .iter()
                .zip(open)
                .map(|(acc, open)| ((acc.lane, acc.name.clone()), acc.stats(open)))
                .collect(),
            analysis: self.analyzer.as_ref().map(|a| a.snapshot()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `text` through a sink in one write.
    fn stats_of(text: &str) -> TraceStats {
        let mut sink = StatsSink::new(Vec::new());
        sink.write_all(text.as_bytes()).unwrap();
        let (out, stats) = sink.into_parts();
        assert_eq!(out, text.as_bytes());
        stats
    }

    /// Joins lines with LF, with a final LF; fields are separated by single spaces in the
    /// source for readability and turned into TABs here.
    fn trace(lines: &[&str]) -> String {
        let mut text = String::new();
        for line in lines {
            text.push_str(&line.split(' ').collect::<Vec<_>>().join("\t"));
            text.push('\n');
        }
        text
    }

    /// The compact form of an explicit canonical trace: every `E` that the next `S` in its
    /// lane or the `R` of its instruction (in the same cycle) implies is left out.
    fn compact(text: &str) -> String {
        let lines: Vec<&str> = text.lines().collect();
        let mut out = String::new();
        'lines: for (i, line) in lines.iter().enumerate() {
            let f: Vec<&str> = line.split('\t').collect();
            if f[0] == "E" {
                for later in &lines[i + 1..] {
                    let g: Vec<&str> = later.split('\t').collect();
                    match g[0] {
                        "C" => break,
                        "S" if g[1] == f[1] && g[2] == f[2] => continue 'lines,
                        "R" if g[1] == f[1] => continue 'lines,
                        _ => {}
                    }
                }
            }
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    /// Residencies: F 1,2,4,1; X 3,3,10 and one open; stl 2.
    fn hand_trace() -> String {
        trace(&[
            "Kanata 0004",
            "C= 10",
            "I 0 0 0",
            "L 0 0 0x1000: addi x1, x0, 5",
            "S 0 0 F",
            "I 1 1 0",
            "S 1 0 F",
            "C 1", // 11
            "E 0 0 F",
            "S 0 0 X",
            "C 1", // 12
            "E 1 0 F",
            "S 1 0 X",
            "S 1 1 stl",
            "C 2", // 14
            "E 0 0 X",
            "R 0 0 0",
            "E 1 1 stl",
            "W 1 0 0",
            "C 1", // 15
            "E 1 0 X",
            "R 1 0 1",
            "I 2 2 1",
            "S 2 0 F",
            "C 4", // 19
            "E 2 0 F",
            "S 2 0 X",
            "C 10", // 29
            "E 2 0 X",
            "R 2 1 0",
            "I 3 3 1",
            "S 3 0 F",
            "C 1", // 30
            "E 3 0 F",
            "S 3 0 X",
            "C 5", // 35
        ])
    }

    fn check_hand(stats: &TraceStats) {
        assert_eq!(stats.ignored_lines, 0);
        assert_eq!(stats.instructions, 4);
        assert_eq!(stats.retired, 2);
        assert_eq!(stats.flushed, 1);
        assert_eq!(stats.open_instructions, 1);
        assert_eq!(stats.max_in_flight, 2);
        assert_eq!(stats.flush_rate, 0.25);
        assert_eq!(
            (stats.first_cycle, stats.last_cycle, stats.cycles),
            (10, 35, 25)
        );
        assert_eq!(stats.ipc, 2.0 / 25.0);
        assert_eq!(stats.threads.len(), 2);
        let t0 = &stats.threads[&0];
        assert_eq!((t0.instructions, t0.retired, t0.flushed), (2, 1, 1));
        assert_eq!(t0.ipc, 1.0 / 25.0);
        let t1 = &stats.threads[&1];
        assert_eq!((t1.instructions, t1.retired, t1.flushed), (2, 1, 0));

        let f = stats.stage(0, "F").unwrap();
        assert_eq!((f.segments, f.open, f.total_cycles), (4, 0, 8));
        assert_eq!((f.mean, f.median, f.p99, f.max), (2.0, 1.5, 4, 4));
        assert_eq!(f.histogram, BTreeMap::from([(1, 2), (2, 1), (4, 1)]));
        let x = stats.stage(0, "X").unwrap();
        assert_eq!((x.segments, x.open, x.total_cycles), (3, 1, 16));
        assert_eq!((x.mean, x.median, x.p99, x.max), (16.0 / 3.0, 3.0, 10, 10));
        let stl = stats.stage(1, "stl").unwrap();
        assert_eq!((stl.segments, stl.open), (1, 0));
        assert_eq!((stl.mean, stl.median, stl.p99, stl.max), (2.0, 2.0, 2, 2));
        assert_eq!(stats.stages.len(), 3);
        assert!(stats.stage(0, "stl").is_none());
    }

    #[test]
    fn hand_written_residencies() {
        let text = hand_trace();
        let stats = stats_of(&text);
        assert_eq!(stats.lines, text.lines().count() as u64);
        check_hand(&stats);
    }

    #[test]
    fn compact_form_gives_the_same_numbers() {
        let text = hand_trace();
        let short = compact(&text);
        // The `E`s before `S X` and before `R` are gone; the stall's `E` stays.
        assert_eq!(
            text.lines().count() - short.lines().count(),
            7,
            "compact:\n{short}"
        );
        assert!(short.contains("E\t1\t1\tstl\n"));
        let stats = stats_of(&short);
        check_hand(&stats);
        assert_eq!(
            TraceStats { lines: 0, ..stats },
            TraceStats {
                lines: 0,
                ..stats_of(&text)
            }
        );
    }

    #[test]
    fn chunked_writes_give_the_same_result() {
        let text = hand_trace() + &compact(&generated(300, true));
        let whole = stats_of(&text);
        for size in [1, 2, 3, 5, 7, 13, 64, 4095] {
            let mut sink = StatsSink::new(Vec::new());
            for chunk in text.as_bytes().chunks(size) {
                sink.write_all(chunk).unwrap();
            }
            let (out, stats) = sink.into_parts();
            assert_eq!(out, text.as_bytes(), "chunk size {size}");
            assert_eq!(stats, whole, "chunk size {size}");
        }
        // A writer that accepts at most 3 bytes per call: only accepted bytes count.
        struct Trickle(Vec<u8>);
        impl Write for Trickle {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                let n = buf.len().min(3);
                self.0.extend_from_slice(&buf[..n]);
                Ok(n)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut sink = StatsSink::new(Trickle(Vec::new()));
        sink.write_all(text.as_bytes()).unwrap();
        sink.flush().unwrap();
        let (out, stats) = sink.into_parts();
        assert_eq!(out.0, text.as_bytes());
        assert_eq!(stats, whole);
    }

    #[test]
    fn snapshot_ignores_a_split_line_and_into_parts_takes_it() {
        let mut sink = StatsSink::new(Vec::new());
        sink.write_all(b"Kanata\t0004\nC=\t0\nI\t0\t0\t0\nS\t0\t0\tF\nC\t2\nR\t0\t0\t0")
            .unwrap();
        let before = sink.stats();
        assert_eq!((before.instructions, before.retired), (1, 0));
        assert_eq!(before.stage(0, "F").unwrap().open, 1);
        let (_, after) = sink.into_parts();
        assert_eq!((after.instructions, after.retired), (1, 1));
        let f = after.stage(0, "F").unwrap();
        assert_eq!((f.open, f.segments, f.p99), (0, 1, 2));
    }

    #[test]
    fn flush_and_retire_counts() {
        let stats = stats_of(&trace(&[
            "Kanata 0004",
            "C= 0",
            "I 0 0 0",
            "I 1 1 0",
            "I 2 2 0",
            "I 3 3 0",
            "I 4 4 0",
            "C 1",
            "R 0 0 0",
            "R 1 0 1",
            "R 2 1 0",
            "R 3 0 1",
            "R 4 0 1",
        ]));
        assert_eq!(
            (stats.instructions, stats.retired, stats.flushed),
            (5, 2, 3)
        );
        assert_eq!(stats.flush_rate, 0.6);
        assert_eq!(stats.open_instructions, 0);
        assert_eq!((stats.cycles, stats.ipc), (1, 2.0));
        assert!(stats.stages.is_empty());
    }

    #[test]
    fn per_thread_ipc() {
        let mut lines = vec!["Kanata\t0004".to_owned(), "C=\t1000".to_owned()];
        let mut id = 0;
        // 100 cycles; thread 0 retires 2 per cycle, thread 3 one every other cycle, thread -1
        // (a signed id) flushes one per cycle.
        for cycle in 0..100 {
            let mut retire = |thread: i64, kind: u8, lines: &mut Vec<String>| {
                lines.push(format!("I\t{id}\t{id}\t{thread}"));
                lines.push(format!("R\t{id}\t0\t{kind}"));
                id += 1;
            };
            retire(0, 0, &mut lines);
            retire(0, 0, &mut lines);
            if cycle % 2 == 0 {
                retire(3, 0, &mut lines);
            }
            retire(-1, 1, &mut lines);
            lines.push("C\t1".to_owned());
        }
        let text = lines.join("\n") + "\n";
        let stats = stats_of(&text);
        assert_eq!(stats.cycles, 100);
        assert_eq!(stats.retired, 250);
        assert_eq!(stats.ipc, 2.5);
        assert_eq!(
            stats.threads.keys().copied().collect::<Vec<_>>(),
            [-1, 0, 3]
        );
        assert_eq!(stats.threads[&0].ipc, 2.0);
        assert_eq!(stats.threads[&3].ipc, 0.5);
        assert_eq!(stats.threads[&-1].ipc, 0.0);
        assert_eq!(stats.threads[&-1].flushed, 100);
        assert_eq!(stats.threads[&3].instructions, 50);
    }

    #[test]
    fn open_instructions_at_the_end() {
        let stats = stats_of(&trace(&[
            "Kanata 0004",
            "C= 5",
            "I 0 0 0",
            "S 0 0 F",
            "I 1 1 0",
            "S 1 0 F",
            "C 3",
            "S 0 0 D", // F of 0 closed by S: 3 cycles
            "S 0 1 stl",
            "I 2 2 0",
            "S 2 0 F",
            "C 1",
            "E 2 0 F", // 1 cycle; instruction 2 stays live with nothing open
            "C 7",
        ]));
        assert_eq!(
            (stats.instructions, stats.retired, stats.flushed),
            (3, 0, 0)
        );
        assert_eq!(stats.open_instructions, 3);
        assert_eq!((stats.cycles, stats.ipc), (11, 0.0));
        let f = stats.stage(0, "F").unwrap();
        assert_eq!(
            (f.segments, f.open, f.mean, f.median, f.p99),
            (2, 1, 2.0, 2.0, 3)
        );
        let d = stats.stage(0, "D").unwrap();
        assert_eq!(
            (d.segments, d.open, d.mean, d.median, d.p99),
            (0, 1, 0.0, 0.0, 0)
        );
        assert_eq!(stats.stage(1, "stl").unwrap().open, 1);
    }

    /// Percentiles against a sorted list, with residencies on both sides of `DENSE`.
    #[test]
    fn percentiles_are_exact() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for n in [1usize, 2, 3, 4, 99, 100, 101, 200, 1000] {
            let mut text = String::from("Kanata\t0004\nC=\t0\n");
            let mut values = Vec::new();
            for id in 0..n {
                let residency = match next() % 4 {
                    0 => next() % 5,
                    1 => next() % 100,
                    2 => next() % 5000,
                    _ => 64,
                };
                values.push(residency);
                text.push_str(&format!("I\t{id}\t{id}\t0\nS\t{id}\t0\tX\n"));
                if residency > 0 {
                    text.push_str(&format!("C\t{residency}\n"));
                }
                text.push_str(&format!("E\t{id}\t0\tX\nR\t{id}\t{id}\t0\nC\t1\n"));
            }
            let stats = stats_of(&text);
            values.sort_unstable();
            let x = stats.stage(0, "X").unwrap();
            let median = if n % 2 == 1 {
                values[n / 2] as f64
            } else {
                (values[n / 2 - 1] + values[n / 2]) as f64 / 2.0
            };
            let p99 = values[(n * 99).div_ceil(100) - 1];
            let sum: u64 = values.iter().sum();
            assert_eq!(x.segments, n as u64);
            assert_eq!(x.total_cycles, sum);
            assert_eq!(x.mean, sum as f64 / n as f64);
            assert_eq!(x.median, median, "n = {n}");
            assert_eq!(x.p99, p99, "n = {n}");
            assert_eq!(x.max, *values.last().unwrap());
            assert_eq!(x.percentile(99.0), p99);
            assert_eq!(x.percentile(100.0), x.max);
            assert_eq!(x.percentile(0.0), values[0]);
            assert_eq!(x.histogram.values().sum::<u64>(), n as u64);
        }
    }

    /// A canonical trace of `n` instructions from a simple pipeline: two instructions enter
    /// per cycle and go through F, D, X, Cm, one cycle each; every third stalls in lane 1
    /// during D; every seventh is flushed. Calls `emit` with chunks of about 64 KiB.
    fn generate(n: u64, labels: bool, emit: &mut dyn FnMut(&[u8])) {
        const STAGES: [&[u8]; 4] = [b"F", b"D", b"X", b"Cm"];
        fn num(buf: &mut Vec<u8>, mut v: u64) {
            let mut digits = [0u8; 20];
            let mut at = digits.len();
            loop {
                at -= 1;
                digits[at] = b'0' + (v % 10) as u8;
                v /= 10;
                if v == 0 {
                    break;
                }
            }
            buf.extend_from_slice(&digits[at..]);
        }
        fn stage(buf: &mut Vec<u8>, cmd: u8, id: u64, lane: u64, name: &[u8]) {
            buf.extend_from_slice(&[cmd, b'\t']);
            num(buf, id);
            buf.push(b'\t');
            num(buf, lane);
            buf.push(b'\t');
            buf.extend_from_slice(name);
            buf.push(b'\n');
        }
        let mut buf = Vec::with_capacity(70_000);
        buf.extend_from_slice(b"Kanata\t0004\nC=\t0\n");
        let mut retire_id = 0;
        let cycles = n.div_ceil(2) + 4;
        for t in 0..cycles {
            if t > 0 {
                buf.extend_from_slice(b"C\t1\n");
            }
            for k in (1..=4u64).rev() {
                let Some(s) = t.checked_sub(k) else { continue };
                for id in [2 * s, 2 * s + 1] {
                    if id >= n {
                        continue;
                    }
                    stage(&mut buf, b'E', id, 0, STAGES[k as usize - 1]);
                    if k == 2 && id % 3 == 0 {
                        stage(&mut buf, b'E', id, 1, b"stl");
                    }
                    if k < 4 {
                        stage(&mut buf, b'S', id, 0, STAGES[k as usize]);
                        if k == 1 && id % 3 == 0 {
                            stage(&mut buf, b'S', id, 1, b"stl");
                        }
                    } else {
                        buf.extend_from_slice(b"R\t");
                        num(&mut buf, id);
                        if id % 7 == 6 {
                            buf.extend_from_slice(b"\t0\t1\n");
                        } else {
                            buf.push(b'\t');
                            num(&mut buf, retire_id);
                            buf.extend_from_slice(b"\t0\n");
                            retire_id += 1;
                        }
                    }
                }
            }
            for id in [2 * t, 2 * t + 1] {
                if id >= n {
                    continue;
                }
                buf.extend_from_slice(b"I\t");
                num(&mut buf, id);
                buf.push(b'\t');
                num(&mut buf, id);
                buf.extend_from_slice(if id % 2 == 0 { b"\t0\n" } else { b"\t1\n" });
                if labels {
                    buf.extend_from_slice(b"L\t");
                    num(&mut buf, id);
                    buf.extend_from_slice(b"\t0\t0x80001a2c: addi a0, a0, 1\n");
                }
                stage(&mut buf, b'S', id, 0, b"F");
            }
            if buf.len() >= 65_536 {
                emit(&buf);
                buf.clear();
            }
        }
        emit(&buf);
    }

    fn generated(n: u64, labels: bool) -> String {
        let mut out = Vec::new();
        generate(n, labels, &mut |chunk| out.extend_from_slice(chunk));
        String::from_utf8(out).unwrap()
    }

    fn check_generated(stats: &TraceStats, n: u64) {
        let flushed = n / 7;
        assert_eq!(stats.ignored_lines, 0);
        assert_eq!(stats.instructions, n);
        assert_eq!((stats.retired, stats.flushed), (n - flushed, flushed));
        assert_eq!(stats.open_instructions, 0);
        assert_eq!(stats.cycles as u64, n.div_ceil(2) + 3);
        for name in ["F", "D", "X", "Cm"] {
            let stage = stats.stage(0, name).unwrap();
            assert_eq!((stage.segments, stage.open), (n, 0));
            assert_eq!(
                (stage.mean, stage.median, stage.p99, stage.max),
                (1.0, 1.0, 1, 1)
            );
        }
        assert_eq!(stats.stage(1, "stl").unwrap().segments, n.div_ceil(3));
    }

    #[test]
    fn generated_trace_and_compact_form() {
        let text = generated(1000, false);
        check_generated(&stats_of(&text), 1000);
        check_generated(&stats_of(&compact(&text)), 1000);
    }

    /// A million instructions: the live state stays at the instructions in flight.
    #[test]
    fn memory_is_bounded_by_instructions_in_flight() {
        let n = 1_000_000;
        let mut sink = StatsSink::new(io::sink());
        let mut largest_live = 0;
        let mut largest_carry = 0;
        generate(n, false, &mut |chunk| {
            // Odd pieces, so lines get split.
            for piece in chunk.chunks(4093) {
                sink.write_all(piece).unwrap();
                largest_live = largest_live.max(sink.state.live.len());
                largest_carry = largest_carry.max(sink.carry.len());
            }
        });
        assert!(largest_live <= 10, "{largest_live} live");
        assert!(sink.state.live.capacity() < 64);
        assert!(sink.state.pool.len() <= 10);
        assert!(largest_carry < 64);
        assert_eq!(sink.state.table.stages.len(), 5);
        let (_, stats) = sink.into_parts();
        assert_eq!(stats.max_in_flight, 8);
        check_generated(&stats, n);
    }

    #[test]
    fn kanata_writer_output_explicit_and_compact() {
        use kanata_writer::{Lane, WriterBuilder};
        let mut results = Vec::new();
        for compact in [false, true] {
            let mut w = WriterBuilder::new()
                .compact(compact)
                .start_cycle(7)
                .from_writer(StatsSink::new(Vec::new()))
                .unwrap();
            let f = w.stage("F").unwrap();
            let x = w.stage("X").unwrap();
            let mut live = Vec::new();
            for cycle in 0..200u64 {
                let insn = w.begin(cycle, (cycle % 2) as u32).unwrap();
                w.enter(insn, Lane::MAIN, f).unwrap();
                live.push((insn, cycle));
                live.retain(|&(insn, born)| {
                    let age = cycle - born;
                    if age == 1 {
                        w.enter(insn, Lane::MAIN, x).unwrap();
                    }
                    if age == 1 && born % 4 == 0 {
                        w.stall_begin(insn).unwrap();
                    }
                    if age == 2 && born % 4 == 0 {
                        w.stall_end(insn).unwrap();
                    }
                    if age == 1 + born % 5 {
                        if born % 6 == 5 {
                            w.flush(insn).unwrap();
                        } else {
                            w.retire(insn).unwrap();
                        }
                        return false;
                    }
                    true
                });
                w.advance(1).unwrap();
            }
            let finished = w.finish().unwrap();
            let (text, stats) = finished.output.into_parts();
            assert_eq!(stats.ignored_lines, 0);
            assert_eq!(stats.instructions, finished.summary.instructions);
            assert_eq!(stats.retired, finished.summary.retired);
            assert_eq!(stats.flushed, finished.summary.flushed);
            assert_eq!(stats.open_instructions, finished.summary.left_open);
            assert_eq!(stats.first_cycle, 7);
            assert_eq!(stats.last_cycle, finished.summary.last_cycle);
            assert_eq!(stats.lines, finished.summary.lines);
            results.push((text.len(), TraceStats { lines: 0, ..stats }));
        }
        assert!(results[1].0 < results[0].0, "compact is shorter");
        assert_eq!(results[0].1, results[1].1);
        let x = results[0].1.stage(0, "X").unwrap();
        assert!(x.segments > 100 && x.open > 0);
    }

    #[test]
    fn unexpected_input_never_panics() {
        let junk = [
            "",
            "\r",
            "#comment",
            "C",
            "C\t",
            "C\t-",
            "C\tx",
            "C=\t99999999999999999999",
            "C\t-9223372036854775808",
            "C\t9223372036854775807",
            "C\t9223372036854775807",
            "I",
            "I\t",
            "I\t0",
            "I\t0\t0",
            "I\t-1\t0\t0",
            "I\t18446744073709551616\t0\t0",
            "S\t0\t0",
            "S\t5\t0\tF",
            "E\t0\t0\tF",
            "R\t0\t0",
            "R\t0\t0\t",
            "S\t\t\t",
            "S\t1\t00\tF",
            "S\t1\t-1\tF",
            "S\t1\t99999999999999999999\tF",
            "L",
            "W",
            "Kanata",
            "\u{feff}Kanata\t0004",
            "X\t1\t2",
            "S\t1\t0\t",
        ];
        let mut text = String::from("I\t1\t1\t0\n");
        for line in junk {
            text.push_str(line);
            text.push('\n');
        }
        let long_stage = "y".repeat(MAX_LINE);
        text.push_str(&format!("S\t1\t0\t{long_stage}\nL\t1\t0\t{long_stage}\n"));
        let stats = stats_of(&text);
        assert_eq!(stats.instructions, 1);
        assert!(stats.stages.is_empty());
        // Only the header-like lines, `L`, `W`, `I 1` and the numeric `C` lines are understood.
        assert!(stats.ignored_lines > 20);
        // Random bytes, in random chunks.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut bytes = Vec::new();
        for _ in 0..200_000 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let pick = (seed >> 33) as usize;
            let alphabet = b"SEICRLW=\t\t\t\n\n0123456789-Kx\r";
            bytes.push(alphabet[pick % alphabet.len()]);
        }
        let mut sink = StatsSink::new(io::sink());
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let n = ((seed >> 40) as usize % 97 + 1).min(rest.len());
            sink.write_all(&rest[..n]).unwrap();
            rest = &rest[n..];
        }
        let (_, stats) = sink.into_parts();
        let mut sink = Vec::new();
        stats.write_json(&mut sink).unwrap();
        stats.write_table(&mut sink, "junk").unwrap();
    }

    #[test]
    fn json_output() {
        let stats = stats_of(&hand_trace());
        let mut json = Vec::new();
        stats.write_json(&mut json).unwrap();
        let json = String::from_utf8(json).unwrap();
        let expected = r#"{"lines":36,"ignored_lines":0,"instructions":4,"retired":2,"flushed":1,"open_instructions":1,"max_in_flight":2,"first_cycle":10,"last_cycle":35,"cycles":25,"flush_rate":0.25,"ipc":0.08,"threads":[{"thread":0,"instructions":2,"retired":1,"flushed":1,"ipc":0.04},{"thread":1,"instructions":2,"retired":1,"flushed":0,"ipc":0.04}],"stages":[{"lane":0,"stage":"F","segments":4,"open":0,"total_cycles":8,"mean":2,"median":1.5,"p99":4,"max":4},{"lane":0,"stage":"X","segments":3,"open":1,"total_cycles":16,"mean":5.333333333333333,"median":3,"p99":10,"max":10},{"lane":1,"stage":"stl","segments":1,"open":0,"total_cycles":2,"mean":2,"median":2,"p99":2,"max":2}]}
"#;
        assert_eq!(json, expected);

        let mut empty = Vec::new();
        TraceStats::default().write_json(&mut empty).unwrap();
        let empty = String::from_utf8(empty).unwrap();
        assert!(
            empty.ends_with("\"threads\":[],\"stages\":[]}\n"),
            "{empty}"
        );
    }

    #[test]
    fn json_escapes_stage_names() {
        let text = "Kanata\t0004\nC=\t0\nI\t0\t0\t0\nS\t0\t0\ta\"b\\c\u{1}d\u{e9}\u{7f}\n\
                    C\t1\nR\t0\t0\t0\n";
        let stats = stats_of(text);
        let mut json = Vec::new();
        stats.write_json(&mut json).unwrap();
        let json = String::from_utf8(json).unwrap();
        assert!(
            json.contains("\"stage\":\"a\\\"b\\\\c\\u0001d\u{e9}\u{7f}\","),
            "{json}"
        );
        let mut table = Vec::new();
        stats.write_table(&mut table, "t").unwrap();
        assert!(String::from_utf8(table)
            .unwrap()
            .contains("a\"b\\c?d\u{e9}?"));
        // Invalid UTF-8 in a stage name becomes U+FFFD, as Konata decodes it.
        let mut sink = StatsSink::new(Vec::new());
        sink.write_all(b"I\t0\t0\t0\nS\t0\t0\t\xff\nC\t1\nR\t0\t0\t0\n")
            .unwrap();
        let (_, stats) = sink.into_parts();
        assert_eq!(stats.stage(0, "\u{fffd}").unwrap().segments, 1);
    }

    #[test]
    fn table_output() {
        let stats = stats_of(&hand_trace());
        let mut table = Vec::new();
        stats.write_table(&mut table, "hand.kanata").unwrap();
        let table = String::from_utf8(table).unwrap();
        let expected = "\
hand.kanata
  instructions      4
  retired           2
  flushed           1  25.00 %
  open              1
  cycles           25  10 .. 35
  IPC           0.080

  thread  instructions  retired  flushed    IPC
       0             2        1        1  0.040
       1             2        1        0  0.040

  lane  stage  segments  mean  median  p99  max  open
     0  F             4  2.00     1.5    4    4     0
     0  X             3  5.33     3.0   10   10     1
     1  stl           1  2.00     2.0    2    2     0
";
        assert_eq!(table, expected);
    }

    #[test]
    fn sink_is_send_and_static() {
        fn check<T: Send + 'static>() {}
        check::<StatsSink<Vec<u8>>>();
        check::<StatsSink<std::fs::File>>();
        check::<TraceStats>();
    }

    /// Throughput of the parser, in release:
    /// `cargo test --release -p kanata-pp --lib stats::tests::throughput -- --ignored
    /// --nocapture`.
    #[test]
    #[ignore]
    fn throughput() {
        for labels in [false, true] {
            let text = generated(2_000_000, labels);
            let mut best = f64::MAX;
            for _ in 0..5 {
                let started = std::time::Instant::now();
                let mut sink = StatsSink::new(io::sink());
                for chunk in text.as_bytes().chunks(64 * 1024) {
                    sink.write_all(chunk).unwrap();
                }
                let (_, stats) = sink.into_parts();
                best = best.min(started.elapsed().as_secs_f64());
                assert_eq!(stats.instructions, 2_000_000);
            }
            println!(
                "labels {labels}: {:.1} MB in {:.3} s: {:.0} MB/s, {:.0} Mlines/s",
                text.len() as f64 / 1e6,
                best,
                text.len() as f64 / 1e6 / best,
                text.lines().count() as f64 / 1e6 / best
            );
        }
    }
}
