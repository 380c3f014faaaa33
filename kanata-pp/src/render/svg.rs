//! A [`Drawing`] as SVG: one self-contained file (no external fonts, images or styles),
//! sized in pixels at Konata's zoom level 0, text as real `<text>`, the same bytes for the
//! same drawing.
//!
//! The geometry is Konata's (`src/core/konata_renderer.ts`, repository
//! `shioyadan/Konata`): a cycle is [`COLUMN_WIDTH`] = 32 pixels wide (`KONATA_OP_WIDTH`),
//! a row [`ROW_HEIGHT`] = 24 high (`KONATA_OP_HEIGHT`), a box leaves [`LANE_MARGIN`] = 2
//! pixels above and below (`KONATA_LANE_HEIGHT_MARGIN`), rectangles and lines sit half a
//! pixel off the grid (`PIXEL_ADJUST`), the stage name is centred in the box's first cycle
//! and every later cycle shows the cycles elapsed (`drawLane_`), and an arrow runs from 3/4
//! of the producer's cycle to 1/4 of the consumer's, at half the row's height, with a
//! head five times the arrow's weight (`drawDependency_`, `drawArrow_`).
//!
//! Elements carry what they stand for, so that tools and tests can read the picture back:
//! `<g class="op" data-row data-id [data-flushed]>` per instruction, in it
//! `<g class="stage" data-lane data-stage data-start data-end>` per box (cycles; a box cut
//! at the last column has `data-clipped="1"`), a `<rect class="flushed">` over each box of
//! a flushed instruction, and `<g class="arrow" data-producer data-consumer data-from
//! data-to>` per arrow (rows and cycles). Tooltips (`<title>`) hold the instruction's
//! details (its type-1 label) and each stage's notes (type-2 labels).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::{char_width, xml_escape, Drawing, StageColour};

/// Pixels per column.
pub const COLUMN_WIDTH: f64 = 32.0;
/// Pixels per row.
pub const ROW_HEIGHT: f64 = 24.0;
/// Pixels left free above and below a box.
pub const LANE_MARGIN: f64 = 2.0;
/// Konata's half-pixel offset of rectangles and lines.
pub const PIXEL_ADJUST: f64 = 0.5;
/// Height of the cycle ruler.
pub const RULER_HEIGHT: f64 = 20.0;
/// Height of a line of notes above the ruler.
pub const NOTE_HEIGHT: f64 = 18.0;
/// The left pane's margin (`labelPane.marginLeft`).
pub const LABEL_MARGIN: f64 = 5.0;
/// Characters of a label shown in the left pane (the rest is in its tooltip).
pub const LABEL_CHARS: usize = 60;

/// Where things are in the picture of a drawing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Geometry {
    /// The width of the left pane: the pipeline starts there.
    pub pipeline_left: f64,
    /// The top of the first row.
    pub pipeline_top: f64,
    /// Pixels per cycle (a column's width over its cycles).
    pub cycle_width: f64,
    /// The picture's width.
    pub width: f64,
    /// The picture's height.
    pub height: f64,
    /// The top of the legend.
    pub legend_top: f64,
    first_cycle: u64,
    char_width: f64,
}

impl Geometry {
    /// The layout of `drawing`.
    pub fn of(drawing: &Drawing) -> Geometry {
        let char_px = drawing.theme.font_size * 0.6;
        let label_chars = drawing
            .rows
            .iter()
            .map(|row| text_width(&row.label).min(LABEL_CHARS + 1))
            .max()
            .unwrap_or(0);
        let pipeline_left = pane_width(label_chars, drawing.theme.font_size);
        let pipeline_top = drawing.notes.len() as f64 * NOTE_HEIGHT + RULER_HEIGHT;
        let pipeline_width = drawing.columns as f64 * COLUMN_WIDTH;
        let notes_width = drawing
            .notes
            .iter()
            .map(|n| (text_width(n) as f64 * char_px + LABEL_MARGIN * 2.0).ceil())
            .fold(0.0, f64::max);
        let width = (pipeline_left + pipeline_width).max(notes_width).max(320.0);
        let legend_top = pipeline_top + drawing.rows.len() as f64 * ROW_HEIGHT;
        let legend_lines = legend_layout(drawing, width, char_px).1;
        Geometry {
            pipeline_left,
            pipeline_top,
            cycle_width: COLUMN_WIDTH / drawing.cycles_per_column as f64,
            width,
            height: legend_top + legend_lines as f64 * ROW_HEIGHT,
            legend_top,
            first_cycle: drawing.first_cycle,
            char_width: char_px,
        }
    }

    /// The x of a column's left edge (without the half-pixel offset).
    pub fn column_x(&self, column: u64) -> f64 {
        self.pipeline_left + column as f64 * COLUMN_WIDTH
    }

    /// The x of the start of a cycle (without the half-pixel offset).
    pub fn cycle_x(&self, cycle: u64) -> f64 {
        self.pipeline_left + (cycle as f64 - self.first_cycle as f64) * self.cycle_width
    }

    /// The y of a row's top (without the half-pixel offset).
    pub fn row_y(&self, row: usize) -> f64 {
        self.pipeline_top + row as f64 * ROW_HEIGHT
    }
}

/// The width of the left pane for labels of `label_chars` characters of the monospace font
/// at `font_size` (a character is 0.6 of the size wide).
pub(crate) fn pane_width(label_chars: usize, font_size: f64) -> f64 {
    (LABEL_MARGIN * 2.0 + label_chars as f64 * font_size * 0.6).ceil()
}

/// The columns a text takes, in characters of the monospace font.
fn text_width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

/// At most `chars` columns of `text`, with `…` when cut.
fn shorten(text: &str, chars: usize) -> String {
    if text_width(text) <= chars {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = char_width(c);
        if used + w + 1 > chars {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// A number as SVG writes it: at most two decimals, no trailing zeros.
fn num(value: f64) -> String {
    let rounded = (value * 100.0).round() / 100.0;
    let mut text = format!("{rounded:.2}");
    while text.ends_with('0') {
        text.pop();
    }
    if text.ends_with('.') {
        text.pop();
    }
    if text == "-0" {
        text = "0".to_owned();
    }
    text
}

/// The fill of a colour: `fill="#rrggbb"` with its opacity.
fn fill(colour: super::Colour) -> String {
    if colour.a == 255 {
        format!("fill=\"{}\"", colour.hex())
    } else {
        format!(
            "fill=\"{}\" fill-opacity=\"{}\"",
            colour.hex(),
            num(colour.opacity())
        )
    }
}

/// The legend's entries placed on lines: (x, line) each, and the number of lines.
fn legend_layout(drawing: &Drawing, width: f64, char_px: f64) -> (Vec<(f64, usize)>, usize) {
    let mut places = Vec::new();
    let (mut x, mut line) = (LABEL_MARGIN, 0);
    for entry in &drawing.legend {
        let text = legend_text(&entry.name, entry.lane);
        let w = 40.0 + text_width(&text) as f64 * char_px + 12.0;
        if x > LABEL_MARGIN && x + w > width {
            x = LABEL_MARGIN;
            line += 1;
        }
        places.push((x, line));
        x += w;
    }
    let lines = if drawing.legend.is_empty() {
        0
    } else {
        line + 1
    };
    (places, lines)
}

/// A legend entry's text: the name, and its lane when that is not the main lane.
fn legend_text(name: &str, lane: u64) -> String {
    if lane != 0 {
        format!("{name} (lane {lane})")
    } else {
        name.to_owned()
    }
}

/// What Konata draws of the pipeline at a zoom (`KonataRenderMetrics` in
/// `src/core/konata_renderer.ts`): below some heights of a box it leaves out the stage
/// names and cycle counts, then the borders (and the margins above and below a box) and the
/// arrows. A PNG drawn at a small [`--scale`](super::png::PngOptions::scale) looks as Konata
/// looks zoomed out as far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Detail {
    /// Stage names and the cycles elapsed, in the boxes (`canDrawText`).
    pub text: bool,
    /// Box borders, and the margins above and below a box (`canDrawFrame`).
    pub frames: bool,
    /// Dependency arrows (`canDrawDependency`).
    pub arrows: bool,
}

impl Detail {
    /// Everything: Konata at zoom level 0, the SVG's own size.
    pub const ALL: Detail = Detail {
        text: true,
        frames: true,
        arrows: true,
    };

    /// What Konata draws when a row is `zoom` times its 24 pixels high: a box's border
    /// when its height inside the margins passes `24 * 2^-2.5` pixels (Konata's default
    /// `stageBorderMinimumLaneHeight`), arrows at the same height
    /// (`dependencyArrowMinimumLaneHeight`), text past `24 * 2^-1.5`
    /// (`textLabelMinimumLaneHeight`). At zoom 1 and above: everything.
    pub fn at(zoom: f64) -> Detail {
        let border_minimum = ROW_HEIGHT * 2f64.powf(-2.5);
        let text_minimum = ROW_HEIGHT * 2f64.powf(-1.5);
        let frames = (ROW_HEIGHT - LANE_MARGIN * 2.0) * zoom > border_minimum;
        let content = if frames {
            (ROW_HEIGHT - LANE_MARGIN * 2.0) * zoom
        } else {
            ROW_HEIGHT * zoom
        };
        Detail {
            text: content > text_minimum,
            frames,
            arrows: content > border_minimum,
        }
    }
}

/// The SVG text of `drawing`, with everything drawn.
pub fn render(drawing: &Drawing) -> String {
    render_with(drawing, Detail::ALL)
}

/// The SVG text of `drawing` with the pipeline's `detail` (the PNG's at its scale). The
/// picture's size, the left pane, the ruler and the legend are those of [`render`].
pub fn render_with(drawing: &Drawing, detail: Detail) -> String {
    let theme = &drawing.theme;
    let g = Geometry::of(drawing);
    let mut out = String::with_capacity(4096 + drawing.rows.len() * 1024);
    let esc = |text: &str| {
        let mut s = String::new();
        xml_escape(text, &mut s);
        s
    };
    let text_dy = (ROW_HEIGHT - LANE_MARGIN * 2.0 - theme.font_size) / 2.0 + theme.font_size;

    let _ = writeln!(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         viewBox=\"0 0 {w} {h}\" font-family=\"{font}\" font-size=\"{size}\">",
        w = num(g.width),
        h = num(g.height),
        font = esc(theme.font_family),
        size = num(theme.font_size),
    );
    let _ = writeln!(
        out,
        "<title>{} instruction{}, cycles {}..{}</title>",
        drawing.rows.len(),
        if drawing.rows.len() == 1 { "" } else { "s" },
        drawing.first_cycle,
        drawing.end_cycle
    );

    // One gradient per two-colour stage colour, in the legend's order.
    let mut gradients: BTreeMap<StageColour, String> = BTreeMap::new();
    let mut defs = String::new();
    for entry in &drawing.legend {
        let c = entry.colour;
        if c.begin != c.end && !gradients.contains_key(&c) {
            let id = format!("c{}", gradients.len());
            let _ = writeln!(
                defs,
                "<linearGradient id=\"{id}\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">\
                 <stop offset=\"0\" stop-color=\"{}\"/><stop offset=\"1\" stop-color=\"{}\"/>\
                 </linearGradient>",
                c.begin.hex(),
                c.end.hex()
            );
            gradients.insert(c, id);
        }
    }
    let paint = |c: StageColour| match gradients.get(&c) {
        Some(id) => format!("fill=\"url(#{id})\""),
        None => fill(c.begin),
    };
    if !defs.is_empty() {
        let _ = write!(out, "<defs>\n{defs}</defs>\n");
    }

    // The panes.
    let _ = writeln!(
        out,
        "<rect class=\"background\" x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" {}/>",
        num(g.width),
        num(g.height),
        fill(theme.background)
    );
    let _ = writeln!(
        out,
        "<rect class=\"label-pane\" x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" {}/>",
        num(g.pipeline_left),
        num(g.legend_top),
        fill(theme.label_background)
    );

    // Notes.
    if !drawing.notes.is_empty() {
        let _ = writeln!(out, "<g class=\"notes\" {}>", fill(theme.label_font));
        for (i, note) in drawing.notes.iter().enumerate() {
            let _ = writeln!(
                out,
                "<text x=\"{}\" y=\"{}\">{}</text>",
                num(LABEL_MARGIN),
                num(i as f64 * NOTE_HEIGHT + 14.0),
                esc(note)
            );
        }
        let _ = writeln!(out, "</g>");
    }

    // The cycle ruler: a number wherever it fits, every 1, 2, 5, 10, 20, 50, … columns.
    let ruler_top = g.pipeline_top - RULER_HEIGHT;
    let digits = drawing
        .end_cycle
        .max(drawing.last_drawn_cycle)
        .to_string()
        .len() as f64;
    let need = (digits + 1.0) * g.char_width * 0.86;
    let mut step: u64 = 1;
    for candidate in [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000] {
        step = candidate;
        if candidate as f64 * COLUMN_WIDTH >= need {
            break;
        }
    }
    let _ = writeln!(
        out,
        "<g class=\"ruler\" font-size=\"12\" {}>",
        fill(theme.label_font)
    );
    let mut column = 0;
    while column < drawing.columns {
        let x = g.column_x(column) + PIXEL_ADJUST;
        let cycle = drawing.first_cycle + column * drawing.cycles_per_column;
        let _ = writeln!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"1\" height=\"6\"/><text x=\"{}\" y=\"{}\">{cycle}</text>",
            num(x),
            num(ruler_top + RULER_HEIGHT - 6.0),
            num(x + 2.0),
            num(ruler_top + 12.0),
        );
        column += step;
    }
    let _ = writeln!(out, "</g>");

    // Left pane labels (drawLabel_).
    let _ = writeln!(out, "<g class=\"labels\" {}>", fill(theme.label_font));
    for (r, row) in drawing.rows.iter().enumerate() {
        let mut tip = format!(
            "{}\n{}\nSerial ID:\t{}\nThread ID:\t{}\nRetire ID:\t{}",
            row.name, row.detail, row.sim_id, row.thread, row.retire_id
        );
        if row.flushed {
            tip.push_str("\n# This op is flushed.");
        }
        if !row.retired {
            tip.push_str("\n# No R: drawn up to the trace's last cycle + 1.");
        }
        let _ = writeln!(
            out,
            "<text class=\"label\" data-row=\"{r}\" x=\"{}\" y=\"{}\"><title>{}</title>{}</text>",
            num(LABEL_MARGIN),
            num(g.row_y(r) + text_dy),
            esc(&tip),
            esc(&shorten(&row.label, LABEL_CHARS)),
        );
    }
    let _ = writeln!(out, "</g>");

    // The pipeline (drawPipeline_, drawOp_, drawLane_).
    let pipeline_width = drawing.columns as f64 * COLUMN_WIDTH;
    let _ = writeln!(out, "<g class=\"pipeline\">");
    for r in (0..drawing.rows.len()).step_by(2) {
        let _ = writeln!(
            out,
            "<rect class=\"stripe\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {}/>",
            num(g.pipeline_left),
            num(g.row_y(r) + PIXEL_ADJUST),
            num(pipeline_width),
            num(ROW_HEIGHT),
            fill(theme.stripe)
        );
    }
    let char_px = theme.font_size / 2.0; // drawLane_: a character is half the font size
    for (r, row) in drawing.rows.iter().enumerate() {
        let _ = write!(
            out,
            "<g class=\"op\" data-row=\"{r}\" data-id=\"{}\"",
            row.id
        );
        if row.flushed {
            let _ = write!(out, " data-flushed=\"1\"");
        }
        let _ = writeln!(out, ">");
        let top = g.row_y(r) + PIXEL_ADJUST;
        let margin = if detail.frames { LANE_MARGIN } else { 0.0 };
        let rect_top = top + margin;
        let rect_height = ROW_HEIGHT - margin * 2.0;
        for b in &row.boxes {
            let left = g.column_x(b.start_column) + PIXEL_ADJUST;
            let width = ((b.end_column - b.start_column) as f64 * COLUMN_WIDTH).max(1.0);
            let _ = write!(
                out,
                "<g class=\"stage\" data-lane=\"{}\" data-stage=\"{}\" data-start=\"{}\" data-end=\"{}\"",
                b.lane,
                esc(&b.name),
                b.start,
                b.end
            );
            if b.clipped {
                let _ = write!(out, " data-clipped=\"1\"");
            }
            let mut tip = format!("{} [{}, {}): {} cycles", b.name, b.start, b.end, b.cycles());
            if b.clipped {
                let _ = write!(tip, ", drawn up to cycle {}", drawing.end_cycle);
            }
            for line in b.notes.split('\n').filter(|l| !l.is_empty()) {
                let _ = write!(tip, "\n{}: {line}", b.name);
            }
            let _ = write!(out, "><title>{}</title>", esc(&tip));
            let _ = write!(
                out,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {}",
                num(left),
                num(rect_top),
                num(width),
                num(rect_height),
                paint(b.colour),
            );
            if detail.frames {
                let _ = write!(
                    out,
                    " stroke=\"{}\" stroke-width=\"{}\"",
                    theme.border.hex(),
                    num(theme.border_weight)
                );
            }
            let _ = write!(out, "/>");
            if b.clipped {
                // A jagged right edge: the box goes on past the picture.
                let x = left + width;
                let _ = write!(
                    out,
                    "<path class=\"cut\" d=\"M{} {}l-4 5l4 5l-4 5l4 5\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>",
                    num(x),
                    num(rect_top),
                    theme.background.hex()
                );
            }
            // The name in the first cycle, the elapsed cycles in the others (one cycle a
            // column only), where they fit.
            if detail.text {
                let name_width = text_width(&b.name) as f64 * char_px;
                let text_top = top + text_dy;
                let _ = write!(out, "<g {}>", fill(theme.font));
                if name_width <= width {
                    let margin = ((COLUMN_WIDTH - name_width) / 2.0).max(0.0);
                    let _ = write!(
                        out,
                        "<text x=\"{}\" y=\"{}\">{}</text>",
                        num(g.column_x(b.start_column) + margin),
                        num(text_top),
                        esc(&b.name)
                    );
                }
                if drawing.cycles_per_column == 1 && b.start >= drawing.first_cycle {
                    let shown = b.end.min(drawing.end_cycle) - b.start;
                    for offset in 1..shown {
                        let label = offset.to_string();
                        let margin = ((COLUMN_WIDTH - label.len() as f64 * char_px) / 2.0).max(0.0);
                        let _ = write!(
                            out,
                            "<text x=\"{}\" y=\"{}\">{label}</text>",
                            num(g.column_x(b.start_column + offset) + margin),
                            num(text_top),
                        );
                    }
                }
                let _ = write!(out, "</g>");
            }
            if b.flushed {
                let _ = write!(
                    out,
                    "<rect class=\"flushed\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {}/>",
                    num(left),
                    num(rect_top),
                    num(width),
                    num(rect_height),
                    fill(theme.flushed)
                );
            }
            let _ = writeln!(out, "</g>");
        }
        let _ = writeln!(out, "</g>");
    }
    let _ = writeln!(out, "</g>");

    // Arrows (drawDependency_, drawArrow_ with INSIDE_LINE, Konata's default).
    let drawable: Vec<_> = drawing
        .arrows
        .iter()
        .filter(|a| {
            detail.arrows && a.from_cycle < drawing.end_cycle && a.to_cycle < drawing.end_cycle
        })
        .collect();
    if !drawable.is_empty() {
        let cycle = g.cycle_width;
        let _ = writeln!(
            out,
            "<g class=\"arrows\" stroke=\"{c}\" fill=\"{c}\" stroke-width=\"{}\">",
            num(theme.arrow_weight),
            c = theme.arrow.hex(),
        );
        for a in drawable {
            let start = (
                g.cycle_x(a.from_cycle) + cycle * 3.0 / 4.0 + PIXEL_ADJUST,
                g.row_y(a.producer_row) + ROW_HEIGHT / 2.0 + PIXEL_ADJUST,
            );
            let end = (
                g.cycle_x(a.to_cycle) + cycle / 4.0 + PIXEL_ADJUST,
                g.row_y(a.consumer_row) + ROW_HEIGHT / 2.0 + PIXEL_ADJUST,
            );
            let _ = write!(
                out,
                "<g class=\"arrow\" data-producer=\"{}\" data-consumer=\"{}\" data-from=\"{}\" data-to=\"{}\">\
                 <line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                a.producer_row,
                a.consumer_row,
                a.from_cycle,
                a.to_cycle,
                num(start.0),
                num(start.1),
                num(end.0),
                num(end.1)
            );
            let (vx, vy) = (end.0 - start.0, end.1 - start.1);
            let norm = vx.hypot(vy);
            if norm > 0.0 {
                let factor = theme.arrow_weight * 5.0 / norm;
                let (x, y) = (vx * factor, vy * factor);
                let shape = 0.8 * 0.5;
                let _ = write!(
                    out,
                    "<polygon stroke=\"none\" points=\"{},{} {},{} {},{}\"/>",
                    num(end.0),
                    num(end.1),
                    num(end.0 - x - y * shape),
                    num(end.1 - y + x * shape),
                    num(end.0 - x + y * shape),
                    num(end.1 - y - x * shape)
                );
            }
            let _ = writeln!(out, "</g>");
        }
        let _ = writeln!(out, "</g>");
    }

    // The legend.
    if !drawing.legend.is_empty() {
        let (places, _) = legend_layout(drawing, g.width, g.char_width);
        let _ = writeln!(out, "<g class=\"legend\">");
        for (entry, &(x, line)) in drawing.legend.iter().zip(&places) {
            let y = g.legend_top + line as f64 * ROW_HEIGHT;
            let _ = writeln!(
                out,
                "<g class=\"key\" data-lane=\"{}\" data-stage=\"{}\"><rect x=\"{}\" y=\"{}\" width=\"32\" height=\"{}\" {} stroke=\"{}\" stroke-width=\"{}\"/><text x=\"{}\" y=\"{}\" {}>{}</text></g>",
                entry.lane,
                esc(&entry.name),
                num(x + PIXEL_ADJUST),
                num(y + LANE_MARGIN + PIXEL_ADJUST),
                num(ROW_HEIGHT - LANE_MARGIN * 2.0),
                paint(entry.colour),
                theme.border.hex(),
                num(theme.border_weight),
                num(x + 40.0),
                num(y + text_dy),
                fill(theme.label_font),
                esc(&legend_text(&entry.name, entry.lane)),
            );
        }
        let _ = writeln!(out, "</g>");
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detail_follows_konatas_zoom() {
        assert_eq!(Detail::at(1.0), Detail::ALL);
        assert_eq!(Detail::at(0.5), Detail::ALL);
        let small = |text, frames, arrows| Detail {
            text,
            frames,
            arrows,
        };
        assert_eq!(Detail::at(0.4), small(false, true, true));
        // Without borders a box takes the whole row: arrows stay a little longer.
        assert_eq!(Detail::at(0.2), small(false, false, true));
        assert_eq!(Detail::at(0.15), small(false, false, false));
    }

    #[test]
    fn numbers() {
        assert_eq!(num(1.0), "1");
        assert_eq!(num(0.5), "0.5");
        assert_eq!(num(-0.001), "0");
        assert_eq!(num(2.125), "2.13");
    }

    #[test]
    fn shortening() {
        assert_eq!(shorten("abc", 3), "abc");
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("漢字漢字", 5), "漢字…");
    }
}
