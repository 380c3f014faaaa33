//! A [`Drawing`] as text for a terminal or a CI log: a row per instruction with Konata's
//! label, then one character per column (a cycle, or [`Drawing::cycles_per_column`]
//! cycles), a letter per stage as gem5's `util/o3-pipeview.py` prints one per pipeline
//! event, `.` where the instruction is in flight outside any stage, and a legend.
//!
//! A column shows the stage drawn on top in it, as Konata overlays the lanes: the stall
//! lane over the main lane, a later stage over an earlier one. A row that goes on past the
//! last column ends in `>`; a flushed row ends in `flushed`. ANSI colours (24-bit, the
//! theme's stage colours as backgrounds) only when asked for; labels never carry control
//! characters to the terminal (they are shown as U+FFFD).

use std::fmt::Write;

use super::{char_width, Drawing, StageColour};
use crate::render::Colour;

/// How to print.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextOptions {
    /// The most characters a line takes (`--width`); columns past it are cut, and the
    /// view says so.
    pub width: usize,
    /// ANSI colours (`--color`).
    pub color: bool,
    /// The characters of the label column (shortened when the width is small).
    pub label_width: usize,
}

impl Default for TextOptions {
    fn default() -> TextOptions {
        TextOptions {
            width: 120,
            color: false,
            label_width: 32,
        }
    }
}

/// Where the columns of a text view are: the first character of the timeline and how many
/// columns it shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextLayout {
    /// Characters (terminal columns) before the timeline: the label and a space.
    pub timeline_start: usize,
    /// Columns of the timeline.
    pub columns: u64,
    /// The label's width.
    pub label_width: usize,
}

impl TextLayout {
    /// The layout of `drawing` within `options`.
    pub fn of(drawing: &Drawing, options: &TextOptions) -> TextLayout {
        // Keep at least 20 columns of timeline, shortening the label first.
        let label_width = options
            .label_width
            .min(options.width.saturating_sub(21))
            .max(8);
        let room = options.width.saturating_sub(label_width + 2).max(1) as u64;
        TextLayout {
            timeline_start: label_width + 1,
            columns: drawing.columns.min(room),
            label_width,
        }
    }
}

/// The text view of `drawing`.
pub fn render(drawing: &Drawing, options: &TextOptions) -> String {
    let layout = TextLayout::of(drawing, options);
    let per = drawing.cycles_per_column;
    let shown_end = drawing.first_cycle + layout.columns * per;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} instruction{}, cycles {}..{}, {} cycle{} per column",
        drawing.rows.len(),
        if drawing.rows.len() == 1 { "" } else { "s" },
        drawing.first_cycle,
        shown_end,
        per,
        if per == 1 { "" } else { "s" },
    );
    for note in &drawing.notes {
        let _ = writeln!(out, "note: {note}");
    }
    if layout.columns < drawing.columns {
        let _ = writeln!(
            out,
            "note: {} columns drawn, cut at cycle {shown_end} to fit {} characters \
             (--width, --cycles-per-column show more)",
            layout.columns, options.width
        );
    }
    if drawing.rows.is_empty() {
        return out;
    }

    // The ruler: cycle numbers every 10 columns, ticks every 5.
    let pad = " ".repeat(layout.timeline_start);
    let mut numbers = String::new();
    let mut ticks = String::new();
    let mut at = 0usize;
    for column in 0..layout.columns {
        let c = column as usize;
        ticks.push(if c % 10 == 0 {
            '|'
        } else if c % 5 == 0 {
            '+'
        } else {
            '-'
        });
        if c % 10 == 0 && c >= at {
            let label = (drawing.first_cycle + column * per).to_string();
            if c + label.len() <= layout.columns as usize {
                while numbers.len() < c {
                    numbers.push(' ');
                }
                numbers.push_str(&label);
                at = c + label.len() + 1;
            }
        }
    }
    let _ = writeln!(out, "{pad}{numbers}");
    let _ = writeln!(out, "{pad}{ticks}");

    for row in &drawing.rows {
        let label = fit(&row.label, layout.label_width);
        out.push_str(&label);
        out.push(' ');
        let mut current: Option<Colour> = None;
        for column in 0..layout.columns {
            let cell = drawing_cell(drawing, row, column);
            let (ch, colour) = match cell {
                Cell::Stage(letter, colour) => (letter, Some(colour)),
                Cell::Flight => ('.', None),
                Cell::Outside => (' ', None),
            };
            if options.color {
                let colour = colour.map(|c| {
                    let mid = mix(c);
                    if row.flushed {
                        over(mid, drawing.theme.flushed)
                    } else {
                        mid
                    }
                });
                if colour != current {
                    match colour {
                        Some(bg) => {
                            let fg = if luminance(bg) > 140.0 { 0 } else { 255 };
                            let _ = write!(
                                out,
                                "\x1b[0;48;2;{};{};{};38;2;{fg};{fg};{fg}m",
                                bg.r, bg.g, bg.b
                            );
                        }
                        None => out.push_str("\x1b[0m"),
                    }
                    current = colour;
                }
            }
            out.push(ch);
        }
        if options.color && current.is_some() {
            out.push_str("\x1b[0m");
        }
        if row.end > shown_end {
            out.push('>');
        }
        if row.flushed {
            out.push_str(" flushed");
        }
        // No trailing spaces.
        let trimmed = out.trim_end_matches(' ').len();
        out.truncate(trimmed);
        out.push('\n');
    }

    // The legend, wrapped at the width.
    let mut items: Vec<String> = drawing
        .legend
        .iter()
        .map(|e| {
            let name = clean(&e.name);
            if e.lane != 0 {
                format!("{}={} (lane {})", e.letter, name, e.lane)
            } else {
                format!("{}={}", e.letter, name)
            }
        })
        .collect();
    items.push(".=in flight".to_owned());
    let mut line = String::from("legend:");
    for item in items {
        if text_width(&line) + 1 + text_width(&item) > options.width && line != "legend:" {
            let _ = writeln!(out, "{line}");
            line = String::from("       ");
        }
        line.push(' ');
        line.push_str(&item);
    }
    let _ = writeln!(out, "{line}");
    out
}

/// What one column of a row shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cell {
    /// A stage's letter and colour.
    Stage(char, StageColour),
    /// In flight, in no stage.
    Flight,
    /// Outside the instruction's life.
    Outside,
}

/// The cell of `row` at `column`: the last box drawn over it, else whether the instruction
/// lives there.
pub fn drawing_cell(drawing: &Drawing, row: &super::Row, column: u64) -> Cell {
    if let Some(b) = row
        .boxes
        .iter()
        .rev()
        .find(|b| b.start_column <= column && column < b.end_column)
    {
        let letter = drawing
            .legend
            .iter()
            .find(|e| e.lane == b.lane && e.name == b.name)
            .map_or('?', |e| e.letter);
        return Cell::Stage(letter, b.colour);
    }
    let per = drawing.cycles_per_column;
    let from = drawing.first_cycle + column * per;
    let to = from + per;
    if row.begin < to && row.end > from && row.end != row.begin {
        Cell::Flight
    } else {
        Cell::Outside
    }
}

fn text_width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

/// Control characters shown as U+FFFD.
fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

/// `text` shortened or padded to exactly `width` terminal columns.
fn fit(text: &str, width: usize) -> String {
    let text = clean(text);
    let mut out = String::new();
    let mut used = 0;
    let full = text_width(&text) <= width;
    for c in text.chars() {
        let w = char_width(c);
        let limit = if full { width } else { width - 1 };
        if used + w > limit {
            break;
        }
        used += w;
        out.push(c);
    }
    if !full {
        out.push('…');
        used += 1;
    }
    while used < width {
        out.push(' ');
        used += 1;
    }
    out
}

/// The middle of a box's gradient.
fn mix(c: StageColour) -> Colour {
    let m = |a: u8, b: u8| ((u16::from(a) + u16::from(b)) / 2) as u8;
    Colour::rgb(
        m(c.begin.r, c.end.r),
        m(c.begin.g, c.end.g),
        m(c.begin.b, c.end.b),
    )
}

/// `top` (with its alpha) over the opaque `base`.
fn over(base: Colour, top: Colour) -> Colour {
    let a = f64::from(top.a) / 255.0;
    let m = |b: u8, t: u8| (f64::from(b) * (1.0 - a) + f64::from(t) * a).round() as u8;
    Colour::rgb(m(base.r, top.r), m(base.g, top.g), m(base.b, top.b))
}

fn luminance(c: Colour) -> f64 {
    0.299 * f64::from(c.r) + 0.587 * f64::from(c.g) + 0.114 * f64::from(c.b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitting() {
        assert_eq!(fit("abc", 5), "abc  ");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("漢字", 4), "漢字");
        assert_eq!(fit("a\u{1b}[31m", 6), "a\u{fffd}[31m");
    }
}
