//! Drawing a window of a trace the way Konata draws it: a [`Drawing`] (the model: rows,
//! columns, stage boxes, arrows, colours) computed from a window's [`Instruction`]s, and two
//! renderers of it, [`svg`] (a self-contained SVG picture) and [`text`] (a timeline for the
//! terminal, a letter per stage as gem5's `o3-pipeview.py` prints).
//!
//! ```
//! use kanata_pp::output::canonical::Instructions;
//! use kanata_pp::render::{self, DrawOptions};
//!
//! let text = "Kanata\t0004\nC=\t0\nI\t0\t0\t0\nL\t0\t0\tadd\nS\t0\t0\tF\nC\t1\nE\t0\t0\tF\n\
//!             S\t0\t0\tX\nC\t2\nE\t0\t0\tX\nR\t0\t0\t0\n";
//! let insns = Instructions::new(text.as_bytes()).collect::<Result<Vec<_>, _>>()?;
//! let drawing = render::Drawing::new(insns, 3, &DrawOptions::default())?;
//! assert_eq!(drawing.rows[0].boxes[1].name, "X");
//! assert_eq!((drawing.rows[0].boxes[1].start_column, drawing.rows[0].boxes[1].end_column), (1, 3));
//! let svg = render::svg::render(&drawing);
//! assert!(svg.starts_with("<?xml"));
//! let view = render::text::render(&drawing, &render::text::TextOptions::default());
//! assert!(view.contains("FXX"));
//! # Ok::<(), kanata_pp::Error>(())
//! ```
//!
//! # What is drawn, and where each rule comes from
//!
//! Konata's sources (repository `shioyadan/Konata`) are the reference; the test-only model
//! of what Konata draws (`tests/src/konata_model.rs`) is checked against the drawing.
//!
//! - One row per instruction, in op-id order; the left pane shows Konata's label
//!   `id: s<sim id> (t<thread>: r<retire id>): <type-0 label>` (`formatOpLabel`,
//!   `src/core/konata_renderer.ts`).
//! - One box per stage segment longer than zero cycles, from its start cycle to its end;
//!   a stage still open at the end of the file, or one Konata regards as open (it ended in
//!   cycle 0, Konata's marker for "open"), reaches the instruction's end, which for an
//!   instruction without `R` is the trace's last cycle + 1 (`drawLane_`, and
//!   `OnikiriParser.finish_` in `src/core/onikiri_parser.ts`). An instruction whose end is
//!   its beginning draws nothing (`drawOp_`).
//! - Every lane is drawn in the same row, lanes in the sorted order of their names, so the
//!   stall lane (1) lies over the main lane (0) (`drawOp_` with `splitLanes` off, Konata's
//!   default).
//! - Colours: [`Theme`] (`theme/light/style.json`, `theme/dark/style.json`) and [`Scheme`]
//!   (`getStageColor_`); a flushed instruction's boxes are covered with
//!   `flushedRegionColor` (`drawLane_`); every other row has the stripe overlay
//!   (`drawPipeline_`).
//! - Arrows (`drawDependency_`, and `OnikiriParser`'s `prodCycle`/`consCycle`): from the
//!   producer's last close of a stage whose name contains an uppercase `X`, minus one cycle
//!   (an `R` whose lane's last stage is such a stage counts as that close, at the `R`), to
//!   the start of the consumer's last such stage; only when both exist and the producer is
//!   drawn.
//!
//! # Size
//!
//! More than [`DrawOptions::max_insns`] instructions is an error of kind
//! [`ErrorKind::Usage`] that says how many and what to do (`--max-insns`, a smaller
//! window). The cycles are cut at [`DrawOptions::max_columns`] columns of
//! [`DrawOptions::cycles_per_column`] cycles: a longer life is drawn up to there, the boxes
//! it cuts are marked [`StageBox::clipped`], and [`Drawing::notes`] says so. An empty window is
//! a drawing without rows and with a note.

pub mod png;
pub mod svg;
pub mod text;
mod theme;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::convert::Options;
use crate::error::{Error, ErrorKind};
use crate::output::canonical::Instruction;

pub use theme::{Colour, Scheme, StageColour, StageTone, Theme, ThemeName};

/// How to draw.
#[derive(Clone, Debug, PartialEq)]
pub struct DrawOptions {
    /// The theme: `--theme`.
    pub theme: ThemeName,
    /// The colour scheme (Konata's default: [`Scheme::Auto`]).
    pub scheme: Scheme,
    /// Dependency arrows (`--no-arrows` turns them off).
    pub arrows: bool,
    /// The most instructions drawn (`--max-insns`); more is an error.
    pub max_insns: usize,
    /// Cycles per column (`--cycles-per-column`), at least 1.
    pub cycles_per_column: u64,
    /// The most columns: cycles past them are cut, and the drawing says so.
    pub max_columns: u64,
}

/// [`DrawOptions::max_insns`] by default.
pub const DEFAULT_MAX_INSNS: usize = 2_000;
/// [`DrawOptions::max_columns`] by default: 64,000 pixels of SVG at Konata's 32 a cycle.
pub const DEFAULT_MAX_COLUMNS: u64 = 2_000;

impl Default for DrawOptions {
    fn default() -> DrawOptions {
        DrawOptions {
            theme: ThemeName::Light,
            scheme: Scheme::Auto,
            arrows: true,
            max_insns: DEFAULT_MAX_INSNS,
            cycles_per_column: 1,
            max_columns: DEFAULT_MAX_COLUMNS,
        }
    }
}

/// What is drawn: computed once, rendered as SVG or text.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawing {
    /// The theme's colours.
    pub theme: Theme,
    /// One row per instruction, in op-id order.
    pub rows: Vec<Row>,
    /// The cycle of the first column.
    pub first_cycle: u64,
    /// The cycles a column stands for (at least 1).
    pub cycles_per_column: u64,
    /// How many columns are drawn.
    pub columns: u64,
    /// The first cycle past the last column: `first_cycle + columns * cycles_per_column`.
    pub end_cycle: u64,
    /// The end of the latest life in the window: more than `end_cycle` when the columns
    /// were cut.
    pub last_drawn_cycle: u64,
    /// The trace's last cycle, as given.
    pub trace_last_cycle: u64,
    /// The dependency arrows Konata draws between the rows (empty when turned off).
    pub arrows: Vec<Arrow>,
    /// The stage names drawn, per lane, with their colour and letter.
    pub legend: Vec<LegendEntry>,
    /// What the picture must say: an empty window, cut columns.
    pub notes: Vec<String>,
}

/// One instruction's row.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The op id (Konata's row).
    pub id: u64,
    /// The simulator's id.
    pub sim_id: i128,
    /// The thread.
    pub thread: i64,
    /// The retire id, -1 without `R` (as Konata shows it).
    pub retire_id: i64,
    /// Flushed (`R` type 1): its boxes are shaded.
    pub flushed: bool,
    /// The type-0 label, Konata's `\n` escape turned into a line break.
    pub name: String,
    /// The type-1 label, likewise.
    pub detail: String,
    /// Konata's left-pane text: `id: s<sim id> (t<thread>: r<retire id>): <name>` (one
    /// line: a line break of the name is a space).
    pub label: String,
    /// The `I` cycle.
    pub begin: u64,
    /// Where the drawing of the instruction ends (Konata's `retiredCycle`): its `R`, or the
    /// trace's last cycle + 1 without one.
    pub end: u64,
    /// Whether it had an `R`.
    pub retired: bool,
    /// The boxes, lanes in Konata's drawing order (later ones over earlier ones).
    pub boxes: Vec<StageBox>,
}

/// One stage segment's box.
#[derive(Clone, Debug, PartialEq)]
pub struct StageBox {
    /// The lane.
    pub lane: u64,
    /// The stage name.
    pub name: String,
    /// Konata's start cycle.
    pub start: u64,
    /// Konata's end cycle as drawn (exclusive).
    pub end: u64,
    /// The first column (from `first_cycle`).
    pub start_column: u64,
    /// The column past the last (at most [`Drawing::columns`]).
    pub end_column: u64,
    /// The box goes on past the last column.
    pub clipped: bool,
    /// Top and bottom colours.
    pub colour: StageColour,
    /// The type-2 labels of the stage, `\n` escapes turned into line breaks.
    pub notes: String,
    /// Its instruction was flushed: shaded.
    pub flushed: bool,
}

impl StageBox {
    /// The cycles of the box.
    pub fn cycles(&self) -> u64 {
        self.end - self.start
    }
}

/// A dependency arrow, as Konata draws it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrow {
    /// The producer's row (index into [`Drawing::rows`]).
    pub producer_row: usize,
    /// The consumer's row.
    pub consumer_row: usize,
    /// The dependency type.
    pub kind: u64,
    /// The arrow's start: the producer's `X` stage end minus one cycle.
    pub from_cycle: u64,
    /// The arrow's end: the start of the consumer's `X` stage.
    pub to_cycle: u64,
}

/// A stage name of the legend.
#[derive(Clone, Debug, PartialEq)]
pub struct LegendEntry {
    /// The lane.
    pub lane: u64,
    /// The stage name.
    pub name: String,
    /// Its colour.
    pub colour: StageColour,
    /// Its letter in the text view.
    pub letter: char,
}

impl Drawing {
    /// The drawing of `insns` (a window's instructions, in op-id order, as
    /// [`trace::open`](crate::trace::open) gives them) of a trace whose last cycle is
    /// `last_cycle` (Konata draws an instruction without `R` up to it + 1).
    ///
    /// # Errors
    /// More than `options.max_insns` instructions: an error of kind [`ErrorKind::Usage`]
    /// that says how many there are and what to do.
    pub fn new(
        insns: impl IntoIterator<Item = Instruction>,
        last_cycle: u64,
        options: &DrawOptions,
    ) -> Result<Drawing, Error> {
        let mut kept = Vec::new();
        let mut count: u64 = 0;
        for insn in insns {
            count += 1;
            if kept.len() < options.max_insns {
                kept.push(insn);
            }
        }
        if count > options.max_insns as u64 {
            return Err(too_many(count.to_string(), options.max_insns));
        }
        Ok(layout(kept, last_cycle, options))
    }
}

/// Reads the window `options.window` of `input` (any input [`trace::open`] reads) and draws
/// it. Reading stops once more than `draw.max_insns` instructions have been met.
///
/// # Errors
/// The input's errors, and too many instructions ([`Drawing::new`]).
///
/// [`trace::open`]: crate::trace::open
pub fn draw_trace(input: &Path, options: &Options, draw: &DrawOptions) -> Result<Drawing, Error> {
    let mut trace = crate::trace::open(input, options)?;
    let mut insns = Vec::new();
    for insn in trace.by_ref() {
        let insn = insn?;
        if insns.len() == draw.max_insns {
            // Count on a little, to say how many, without reading a huge window through.
            let mut more: u64 = 1;
            let mut all_counted = true;
            for next in trace.by_ref() {
                next?;
                more += 1;
                if more >= COUNT_ON {
                    all_counted = false;
                    break;
                }
            }
            let total = draw.max_insns as u64 + more;
            let count = if all_counted {
                total.to_string()
            } else {
                format!("more than {total}")
            };
            drop(trace);
            return Err(too_many(count, draw.max_insns));
        }
        insns.push(insn);
    }
    let last_cycle = trace.last_cycle().unwrap_or(0);
    trace.finish()?;
    Drawing::new(insns, last_cycle, draw)
}

/// How many instructions past the limit [`draw_trace`] counts before it gives up counting.
const COUNT_ON: u64 = 1_000_000;

fn too_many(count: String, max: usize) -> Error {
    Error::new(
        ErrorKind::Usage,
        format!(
            "the window holds {count} instructions, more than the {max} a picture is drawn \
             for: choose a smaller window (--insns A..B, --cycles A..B, --threads) or raise \
             the limit with --max-insns N"
        ),
    )
}

/// Konata's `\n` escape (two characters) as a line break (`unescapeLabels_`).
fn unescape(text: &str) -> String {
    text.replace("\\n", "\n")
}

/// What Konata's parser keeps of an instruction that the drawing needs: its stages' drawn
/// ends, their levels, and its `prodCycle` and `consCycle`.
struct Konata {
    /// The drawn end of each segment (Konata's `endCycle`, 0 replaced by `retiredCycle`).
    ends: Vec<u64>,
    /// The lane level when each segment started (`Lane.level` at its `S`).
    levels: Vec<u32>,
    prod_cycle: Option<u64>,
    cons_cycle: Option<u64>,
}

/// Replays `OnikiriParser` (`src/core/onikiri_parser.ts`) on one instruction's segments.
fn konata_view(insn: &Instruction, retired_cycle: u64) -> Konata {
    let n = insn.stages.len();
    let mut ends = vec![retired_cycle; n];
    let mut levels = vec![0; n];
    // A candidate for prodCycle: (the cycle of the close, prodCycle).
    let mut prod: Option<(u64, Option<u64>)> = None;
    let mut set_prod = |at: u64, close: u64| {
        // close - 1, where -1 is Konata's "none".
        let value = close.checked_sub(1);
        if prod.is_none_or(|(when, _)| at >= when) {
            prod = Some((at, value));
        }
    };
    let mut by_lane: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, segment) in insn.stages.iter().enumerate() {
        by_lane.entry(segment.lane).or_default().push(i);
    }
    for indices in by_lane.values() {
        let mut level = 0;
        for (k, &i) in indices.iter().enumerate() {
            let segment = &insn.stages[i];
            levels[i] = level;
            let next_start = indices.get(k + 1).map(|&j| insn.stages[j].start);
            let has_x = segment.name.contains('X');
            match segment.end {
                // Ended in cycle 0: Konata's "open". The next S of the lane closes it, unless
                // that S is in cycle 0 too; else it is drawn up to the end.
                Some(0) => match next_start {
                    Some(start) if start > 0 => {
                        ends[i] = start;
                        if start > segment.start {
                            level += 1;
                        }
                        if has_x {
                            set_prod(start, start);
                        }
                    }
                    _ => {}
                },
                Some(end) => {
                    ends[i] = end;
                    if end != segment.start {
                        level += 1;
                    }
                    if has_x {
                        set_prod(end, end);
                    }
                }
                None => {}
            }
        }
        // R: the last stage of every lane with an X sets prodCycle, closed or not.
        if let (Some(end), Some(&last)) = (insn.end, indices.last()) {
            if insn.stages[last].name.contains('X') {
                set_prod(end, end);
            }
        }
    }
    let cons_cycle = insn
        .stages
        .iter()
        .rev()
        .find(|s| s.name.contains('X'))
        .map(|s| s.start);
    Konata {
        ends,
        levels,
        prod_cycle: prod.and_then(|(_, value)| value),
        cons_cycle,
    }
}

fn layout(mut insns: Vec<Instruction>, last_cycle: u64, options: &DrawOptions) -> Drawing {
    let theme = Theme::new(options.theme);
    insns.sort_by_key(|insn| insn.id);
    let retired_cycle = last_cycle.saturating_add(1);
    let views: Vec<Konata> = insns
        .iter()
        .map(|insn| konata_view(insn, insn.end.unwrap_or(retired_cycle)))
        .collect();

    // StageLevelMap (src/core/model.ts): per lane and name, the smallest level it started
    // at; lanes by sorted name.
    let mut appearance: BTreeMap<(u64, &str), u32> = BTreeMap::new();
    let mut first_seen: Vec<(u64, &str)> = Vec::new();
    for (insn, view) in insns.iter().zip(&views) {
        for (segment, &level) in insn.stages.iter().zip(&view.levels) {
            let key = (segment.lane, segment.name.as_str());
            match appearance.get_mut(&key) {
                Some(min) => *min = (*min).min(level),
                None => {
                    appearance.insert(key, level);
                    first_seen.push(key);
                }
            }
        }
    }
    let mut lane_names: Vec<String> = appearance
        .keys()
        .map(|(lane, _)| lane.to_string())
        .collect();
    lane_names.sort();
    lane_names.dedup();
    let lane_position = |lane: u64| {
        let name = lane.to_string();
        lane_names.iter().position(|n| *n == name).unwrap_or(0)
    };
    let colour_of = |lane: u64, name: &str| {
        let level = appearance.get(&(lane, name)).copied().unwrap_or(0);
        theme.stage_colour(options.scheme, lane, lane_position(lane), name, level)
    };

    // The cycles.
    let per = options.cycles_per_column.max(1);
    let first_cycle = insns.iter().map(|i| i.begin).min().unwrap_or(0);
    let mut last_drawn = first_cycle;
    for (insn, view) in insns.iter().zip(&views) {
        last_drawn = last_drawn.max(insn.end.unwrap_or(retired_cycle));
        last_drawn = last_drawn.max(view.ends.iter().copied().max().unwrap_or(0));
    }
    let needed = (last_drawn - first_cycle).div_ceil(per);
    let columns = needed.min(options.max_columns.max(1));
    let end_cycle = first_cycle.saturating_add(columns.saturating_mul(per));
    let mut notes = Vec::new();
    if insns.is_empty() {
        notes.push("the window holds no instructions".to_owned());
    }
    if needed > columns {
        notes.push(format!(
            "cycles {first_cycle}..{last_drawn} need {needed} columns of {per} cycle{s}: \
             drawn up to cycle {end_cycle} ({columns} columns); cut boxes end in a jagged \
             edge (more cycles per column, or a smaller window, show the rest)",
            s = if per == 1 { "" } else { "s" },
        ));
    }
    let column_of = |cycle: u64| ((cycle.max(first_cycle) - first_cycle) / per).min(columns);
    let column_after = |cycle: u64| {
        (cycle.max(first_cycle) - first_cycle)
            .div_ceil(per)
            .min(columns)
    };

    let mut rows = Vec::with_capacity(insns.len());
    for (insn, view) in insns.iter().zip(&views) {
        let end = insn.end.unwrap_or(retired_cycle);
        let flushed = insn.retire.is_some_and(|r| r.flushed);
        let retire_id = insn.retire.map_or(-1, |r| r.retire_id);
        let name = unescape(&insn.name);
        let label = format!(
            "{}: s{} (t{}: r{}): {}",
            insn.id,
            insn.sim_id,
            insn.thread,
            retire_id,
            name.replace('\n', " ")
        );
        let mut boxes = Vec::new();
        // drawOp_: nothing when retiredCycle === fetchedCycle.
        if end != insn.begin {
            let mut order: Vec<usize> = (0..insn.stages.len()).collect();
            // Lanes in the sorted order of their names, segments in the order of their S.
            order.sort_by_key(|&i| lane_position(insn.stages[i].lane));
            for i in order {
                let segment = &insn.stages[i];
                let seg_end = view.ends[i];
                // drawLane_: a stage that ends where it starts is not drawn.
                if seg_end <= segment.start {
                    continue;
                }
                let start_column = column_of(segment.start);
                let end_column = column_after(seg_end);
                if segment.start >= end_cycle || end_column <= start_column {
                    continue;
                }
                boxes.push(StageBox {
                    lane: segment.lane,
                    name: segment.name.to_string(),
                    start: segment.start,
                    end: seg_end,
                    start_column,
                    end_column,
                    clipped: seg_end > end_cycle,
                    colour: colour_of(segment.lane, &segment.name),
                    notes: unescape(&segment.notes),
                    flushed,
                });
            }
        }
        rows.push(Row {
            id: insn.id,
            sim_id: insn.sim_id,
            thread: insn.thread,
            retire_id,
            flushed,
            detail: unescape(&insn.detail),
            name,
            label,
            begin: insn.begin,
            end,
            retired: insn.end.is_some(),
            boxes,
        });
    }

    let mut arrows = Vec::new();
    if options.arrows {
        let row_of: HashMap<u64, usize> = insns
            .iter()
            .enumerate()
            .map(|(row, insn)| (insn.id, row))
            .collect();
        for (consumer_row, (insn, view)) in insns.iter().zip(&views).enumerate() {
            let Some(to_cycle) = view.cons_cycle else {
                continue;
            };
            for dep in &insn.deps {
                let Some(&producer_row) = row_of.get(&dep.producer) else {
                    continue;
                };
                let Some(from_cycle) = views[producer_row].prod_cycle else {
                    continue;
                };
                arrows.push(Arrow {
                    producer_row,
                    consumer_row,
                    kind: dep.kind,
                    from_cycle,
                    to_cycle,
                });
            }
        }
    }

    let legend = legend(&first_seen, &appearance, colour_of);
    Drawing {
        theme,
        rows,
        first_cycle,
        cycles_per_column: per,
        columns,
        end_cycle,
        last_drawn_cycle: last_drawn,
        trace_last_cycle: last_cycle,
        arrows,
        legend,
        notes,
    }
}

/// The legend: lanes in order, names by their appearance level, then first seen; a letter
/// each, the name's own first letter when it is free.
fn legend(
    first_seen: &[(u64, &str)],
    appearance: &BTreeMap<(u64, &str), u32>,
    colour_of: impl Fn(u64, &str) -> StageColour,
) -> Vec<LegendEntry> {
    let mut keys: Vec<(usize, &(u64, &str))> = first_seen.iter().enumerate().collect();
    keys.sort_by_key(|&(seen, key)| (key.0, appearance.get(key).copied().unwrap_or(0), seen));
    let mut taken: Vec<char> = Vec::new();
    let mut legend = Vec::new();
    for (_, &(lane, name)) in keys {
        let pool = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        let letter = name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .chain(
                name.chars()
                    .filter(char::is_ascii_alphanumeric)
                    .flat_map(|c| [c.to_ascii_uppercase(), c.to_ascii_lowercase()]),
            )
            .chain(pool.chars())
            .find(|c| !taken.contains(c))
            .unwrap_or('?');
        if letter != '?' {
            taken.push(letter);
        }
        legend.push(LegendEntry {
            lane,
            name: name.to_owned(),
            colour: colour_of(lane, name),
            letter,
        });
    }
    legend
}

/// Replaces the characters XML 1.0 cannot hold (most C0 controls, U+FFFE, U+FFFF) by
/// U+FFFD, and escapes `&`, `<`, `>`, `"` and `'`.
pub(crate) fn xml_escape(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' => out.push(c),
            '\r' => out.push_str("&#13;"),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
}

/// The columns a character takes in a terminal: 0 for controls and combining marks, 2 for
/// the wide ranges of East Asian scripts and emoji, else 1 (an approximation of UAX #11
/// that is enough to keep the text view's columns straight).
pub(crate) fn char_width(c: char) -> usize {
    let u = c as u32;
    if u < 0x20 || (0x7f..0xa0).contains(&u) {
        return 0;
    }
    if matches!(u, 0x0300..=0x036f | 0x1ab0..=0x1aff | 0x1dc0..=0x1dff | 0x20d0..=0x20ff
        | 0xfe00..=0xfe0f | 0xfe20..=0xfe2f | 0x200b..=0x200f)
    {
        return 0;
    }
    if matches!(u, 0x1100..=0x115f | 0x2e80..=0x303e | 0x3041..=0x33ff | 0x3400..=0x4dbf
        | 0x4e00..=0x9fff | 0xa000..=0xa4cf | 0xac00..=0xd7a3 | 0xf900..=0xfaff
        | 0xfe30..=0xfe4f | 0xff00..=0xff60 | 0xffe0..=0xffe6 | 0x1f300..=0x1f64f
        | 0x1f900..=0x1f9ff | 0x20000..=0x2fffd | 0x30000..=0x3fffd)
    {
        return 2;
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::canonical::{Dependency, Retirement, Segment};

    fn seg(lane: u64, name: &str, start: u64, end: Option<u64>) -> Segment {
        Segment {
            lane,
            name: name.into(),
            start,
            end,
            notes: String::new(),
        }
    }

    fn insn(id: u64, begin: u64, end: Option<u64>, stages: Vec<Segment>) -> Instruction {
        Instruction {
            id,
            sim_id: i128::from(id),
            thread: 0,
            begin,
            end,
            retire: end.map(|_| Retirement {
                retire_id: id as i64,
                flushed: false,
            }),
            name: format!("op{id}"),
            detail: String::new(),
            stages,
            deps: Vec::new(),
        }
    }

    #[test]
    fn arrows_follow_konatas_x_rule() {
        let producer = insn(
            0,
            0,
            Some(6),
            vec![
                seg(0, "F", 0, Some(1)),
                seg(0, "EX", 1, Some(3)),
                seg(0, "C", 3, Some(6)),
            ],
        );
        let mut consumer = insn(
            1,
            0,
            Some(7),
            vec![
                seg(0, "F", 0, Some(2)),
                seg(0, "X", 3, Some(5)),
                seg(0, "C", 5, Some(7)),
            ],
        );
        consumer.deps.push(Dependency {
            producer: 0,
            kind: 0,
        });
        let drawing = Drawing::new([producer, consumer], 7, &DrawOptions::default()).unwrap();
        assert_eq!(
            drawing.arrows,
            [Arrow {
                producer_row: 0,
                consumer_row: 1,
                kind: 0,
                from_cycle: 2,
                to_cycle: 3
            }]
        );
        // A lowercase x is no X stage; a last X stage moves prodCycle to the R.
        let p = insn(0, 0, Some(9), vec![seg(0, "X", 0, Some(2))]);
        let mut c = insn(1, 0, Some(9), vec![seg(0, "ex", 3, Some(5))]);
        c.deps.push(Dependency {
            producer: 0,
            kind: 0,
        });
        let mut c2 = insn(2, 0, Some(9), vec![seg(0, "X", 4, Some(5))]);
        c2.deps.push(Dependency {
            producer: 0,
            kind: 0,
        });
        let drawing = Drawing::new([p, c, c2], 9, &DrawOptions::default()).unwrap();
        assert_eq!(drawing.arrows.len(), 1);
        assert_eq!(
            (drawing.arrows[0].from_cycle, drawing.arrows[0].to_cycle),
            (8, 4)
        );
    }

    #[test]
    fn open_lives_reach_the_last_cycle_and_are_capped() {
        let long = insn(
            0,
            0,
            None,
            vec![seg(0, "F", 0, Some(1)), seg(0, "X", 1, None)],
        );
        let options = DrawOptions {
            max_columns: 100,
            ..DrawOptions::default()
        };
        let drawing = Drawing::new([long], 999_999, &options).unwrap();
        assert_eq!(drawing.rows[0].end, 1_000_000);
        assert_eq!(drawing.columns, 100);
        let x = &drawing.rows[0].boxes[1];
        assert_eq!(
            (x.start, x.end, x.end_column, x.clipped),
            (1, 1_000_000, 100, true)
        );
        assert!(
            drawing.notes[0].contains("drawn up to cycle 100"),
            "{:?}",
            drawing.notes
        );
    }

    #[test]
    fn too_many_says_how_many_and_what_to_do() {
        let insns = (0..5).map(|id| insn(id, id, Some(id + 1), vec![]));
        let options = DrawOptions {
            max_insns: 3,
            ..DrawOptions::default()
        };
        let error = Drawing::new(insns, 5, &options).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Usage);
        let text = error.to_string();
        assert!(text.contains("holds 5 instructions"), "{text}");
        assert!(
            text.contains("--max-insns") && text.contains("--insns"),
            "{text}"
        );
    }

    #[test]
    fn levels_are_konatas_appearance() {
        let a = insn(
            0,
            0,
            Some(4),
            vec![
                seg(0, "F", 0, Some(1)),
                seg(0, "D", 1, Some(1)),
                seg(0, "X", 1, Some(4)),
            ],
        );
        let drawing = Drawing::new([a], 4, &DrawOptions::default()).unwrap();
        let theme = Theme::new(ThemeName::Light);
        // D lasted no cycle: X starts at level 1, like D.
        let x = drawing.legend.iter().find(|e| e.name == "X").unwrap();
        assert_eq!(x.colour, theme.stage_colour(Scheme::Auto, 0, 0, "X", 1));
        assert_eq!(drawing.rows[0].boxes.len(), 2, "D is not drawn");
    }

    #[test]
    fn widths() {
        assert_eq!(char_width('a'), 1);
        assert_eq!(char_width('漢'), 2);
        assert_eq!(char_width('\u{301}'), 0);
    }
}
