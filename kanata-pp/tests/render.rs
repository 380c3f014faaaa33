//! The drawing of a window (`kanata_pp::render`) against the test-only model of what Konata
//! draws (`kanata_tests::konata_model`): the SVG parsed as XML, the text view read by its
//! columns, hostile windows, and the golden pictures of the shipped sample.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kanata_pp::output::canonical::{Dependency, Instruction, Retirement, Segment};
use kanata_pp::output::window::Window;
use kanata_pp::render::png::PngOptions;
use kanata_pp::render::svg::{Geometry, COLUMN_WIDTH, LANE_MARGIN, PIXEL_ADJUST, ROW_HEIGHT};
use kanata_pp::render::text::TextOptions;
use kanata_pp::render::{self, Colour, DrawOptions, Drawing, StageColour, Theme, ThemeName};
use kanata_pp::{Destination, ErrorKind, Options};
use kanata_tests::konata_model::{self, RetireKind, View};

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../samples")
        .join(name)
}

/// The options of the window `--insns 0..100`.
fn first_100() -> Options {
    let mut options = Options::new(Destination::Check);
    options.window = Window::all();
    options.window.insns = "0..100".parse().unwrap();
    options
}

/// The window's canonical text, as kanata-pp writes it, and Konata's view of it.
fn window_view(input: &Path, options: &Options) -> View {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("window.kanata");
    let mut options = options.clone();
    options.destination = Destination::Path(out.clone());
    kanata_pp::convert(input, &options).unwrap();
    konata_model::load(&std::fs::read(out).unwrap())
}

fn parse_num(node: roxmltree::Node<'_, '_>, name: &str) -> f64 {
    node.attribute(name)
        .unwrap_or_else(|| panic!("no {name} on {node:?}"))
        .parse()
        .unwrap()
}

fn class<'a, 'input>(node: &roxmltree::Node<'a, 'input>, class: &str) -> bool {
    node.attribute("class") == Some(class)
}

/// The colours a `fill` paints: a gradient's two stops, or a flat colour.
fn paint(doc: &roxmltree::Document<'_>, fill: &str) -> (String, String) {
    if let Some(id) = fill.strip_prefix("url(#").and_then(|s| s.strip_suffix(')')) {
        let gradient = doc
            .descendants()
            .find(|n| n.attribute("id") == Some(id))
            .expect("the gradient is defined");
        let stops: Vec<String> = gradient
            .children()
            .filter(|n| n.has_tag_name("stop"))
            .map(|n| n.attribute("stop-color").unwrap().to_owned())
            .collect();
        assert_eq!(stops.len(), 2);
        (stops[0].clone(), stops[1].clone())
    } else {
        (fill.to_owned(), fill.to_owned())
    }
}

/// Konata's colour for a stage (`getStageColor_`, scheme Auto), from the model's levels.
fn expected_colour(view: &View, theme: &Theme, lane: &str, name: &str) -> StageColour {
    let level = view.stage_levels[lane]
        .iter()
        .find(|l| l.name == name)
        .unwrap()
        .appearance;
    let mut lanes: Vec<&String> = view.stage_levels.keys().collect();
    lanes.sort();
    let position = lanes.iter().position(|l| *l == lane).unwrap();
    theme.stage_colour(
        render::Scheme::Auto,
        lane.parse().unwrap(),
        position,
        name,
        level,
    )
}

/// Every box, shading and arrow of the SVG against Konata's view.
fn check_svg_against_model(drawing: &Drawing, svg: &str, view: &View) {
    let doc = roxmltree::Document::parse(svg).expect("the SVG is XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    let geometry = Geometry::of(drawing);
    assert_eq!(parse_num(root, "width"), geometry.width);
    assert_eq!(parse_num(root, "height"), geometry.height);
    let pane = doc.descendants().find(|n| class(n, "label-pane")).unwrap();
    assert_eq!(parse_num(pane, "width"), geometry.pipeline_left);
    let first = drawing.first_cycle as i64;
    let theme = &drawing.theme;

    let ops: BTreeMap<usize, roxmltree::Node<'_, '_>> = doc
        .descendants()
        .filter(|n| class(n, "op"))
        .map(|n| (n.attribute("data-row").unwrap().parse().unwrap(), n))
        .collect();
    assert_eq!(ops.len(), view.insns.len());
    let mut boxes = 0;
    for insn in &view.insns {
        let row = insn.file_id as usize;
        let op = ops[&row];
        assert_eq!(
            op.attribute("data-id"),
            Some(insn.file_id.to_string().as_str())
        );
        let flushed = insn.retired.is_some_and(|r| r.kind == RetireKind::Flushed);
        assert_eq!(op.attribute("data-flushed").is_some(), flushed, "op {row}");
        // Konata's boxes: lanes in sorted order, then in the order of their S.
        let expected: Vec<(String, &konata_model::StageBox)> = insn
            .lanes
            .keys()
            .flat_map(|lane| {
                insn.visible_boxes(lane)
                    .into_iter()
                    .map(move |b| (lane.clone(), b))
            })
            .collect();
        let stages: Vec<_> = op.children().filter(|n| class(n, "stage")).collect();
        assert_eq!(stages.len(), expected.len(), "boxes of op {row}");
        for (stage, (lane, b)) in stages.iter().zip(&expected) {
            let what = format!("op {row} lane {lane} stage {} at {}", b.name, b.start);
            assert_eq!(stage.attribute("data-lane"), Some(lane.as_str()), "{what}");
            assert_eq!(
                stage.attribute("data-stage"),
                Some(b.name.as_str()),
                "{what}"
            );
            assert_eq!(parse_num(*stage, "data-start") as i64, b.start, "{what}");
            assert_eq!(parse_num(*stage, "data-end") as i64, b.end, "{what}");
            let rects: Vec<_> = stage
                .children()
                .filter(|n| n.has_tag_name("rect"))
                .collect();
            let rect = rects[0];
            let x = geometry.pipeline_left + (b.start - first) as f64 * COLUMN_WIDTH + PIXEL_ADJUST;
            let y = geometry.pipeline_top + row as f64 * ROW_HEIGHT + PIXEL_ADJUST + LANE_MARGIN;
            assert_eq!(parse_num(rect, "x"), x, "{what}");
            assert_eq!(parse_num(rect, "y"), y, "{what}");
            assert_eq!(
                parse_num(rect, "width"),
                (b.end - b.start) as f64 * COLUMN_WIDTH,
                "{what}"
            );
            assert_eq!(parse_num(rect, "height"), ROW_HEIGHT - 2.0 * LANE_MARGIN);
            let colour = expected_colour(view, theme, lane, &b.name);
            assert_eq!(
                paint(&doc, rect.attribute("fill").unwrap()),
                (colour.begin.hex(), colour.end.hex()),
                "{what}"
            );
            let shade = stage.children().find(|n| class(n, "flushed"));
            assert_eq!(shade.is_some(), flushed, "{what}");
            if let Some(shade) = shade {
                assert_eq!(parse_num(shade, "x"), x);
                assert_eq!(parse_num(shade, "width"), parse_num(rect, "width"));
                assert_eq!(shade.attribute("fill"), Some(theme.flushed.hex().as_str()));
                assert!((parse_num(shade, "fill-opacity") - theme.flushed.opacity()).abs() < 0.01);
            }
            // The name, when it fits, is text in the box.
            let texts: Vec<String> = stage
                .descendants()
                .filter(|n| n.has_tag_name("text"))
                .map(|n| n.text().unwrap_or("").to_owned())
                .collect();
            if b.name.len() as f64 * 7.0 <= parse_num(rect, "width") {
                assert_eq!(texts[0], b.name, "{what}");
            }
            // The notes are in the tooltip.
            let title = stage
                .children()
                .find(|n| n.has_tag_name("title"))
                .unwrap()
                .text()
                .unwrap();
            for line in b.notes.split('\n').filter(|l| !l.is_empty()) {
                assert!(title.contains(line), "{what}: {title:?} lacks {line:?}");
            }
            boxes += 1;
        }
    }
    assert!(boxes > 0);

    // Every other row is striped.
    let stripes = doc.descendants().filter(|n| class(n, "stripe")).count();
    assert_eq!(stripes, view.insns.len().div_ceil(2));

    // Arrows: the ones the model says, between the cycles it says.
    let mut got: Vec<(i64, i64, i64, i64)> = doc
        .descendants()
        .filter(|n| class(n, "arrow"))
        .map(|n| {
            let line = n.children().find(|c| c.has_tag_name("line")).unwrap();
            let (p, c) = (
                parse_num(n, "data-producer") as i64,
                parse_num(n, "data-consumer") as i64,
            );
            let (from, to) = (
                parse_num(n, "data-from") as i64,
                parse_num(n, "data-to") as i64,
            );
            let x1 = geometry.pipeline_left
                + (from - first) as f64 * COLUMN_WIDTH
                + COLUMN_WIDTH * 0.75
                + PIXEL_ADJUST;
            let x2 = geometry.pipeline_left
                + (to - first) as f64 * COLUMN_WIDTH
                + COLUMN_WIDTH * 0.25
                + PIXEL_ADJUST;
            let y = |row: i64| geometry.pipeline_top + row as f64 * ROW_HEIGHT + 12.5;
            assert_eq!(parse_num(line, "x1"), x1);
            assert_eq!(parse_num(line, "x2"), x2);
            assert_eq!(parse_num(line, "y1"), y(p));
            assert_eq!(parse_num(line, "y2"), y(c));
            (c, p, from, to)
        })
        .collect();
    let mut expected: Vec<(i64, i64, i64, i64)> = view
        .arrows
        .iter()
        .map(|a| (a.consumer, a.producer, a.from_cycle, a.to_cycle))
        .collect();
    got.sort_unstable();
    expected.sort_unstable();
    assert_eq!(got, expected);
}

/// Reads the text view back: the legend's letters, and every row's columns against the
/// model (the top box at each cycle, `.` in flight, blank outside).
fn check_text_against_model(drawing: &Drawing, text: &str, view: &View) {
    let lines: Vec<&str> = text.lines().collect();
    let legend_at = lines.iter().position(|l| l.starts_with("legend:")).unwrap();
    let mut letters: BTreeMap<String, char> = BTreeMap::new();
    for line in &lines[legend_at..] {
        for item in line.trim_start_matches("legend:").split_whitespace() {
            if let Some((letter, name)) = item.split_once('=') {
                if letter != "." {
                    letters.insert(name.to_owned(), letter.chars().next().unwrap());
                }
            }
        }
    }
    let layout = render::text::TextLayout::of(drawing, &golden_text_options());
    let rows = &lines[legend_at - view.insns.len()..legend_at];
    let first = drawing.first_cycle as i64;
    for (insn, line) in view.insns.iter().zip(rows) {
        let cells: Vec<char> = line.chars().skip(layout.timeline_start).collect();
        for column in 0..layout.columns as i64 {
            let cycle = first + column;
            let mut expected =
                if insn.has_body() && insn.fetched_cycle <= cycle && cycle < insn.retired_cycle {
                    '.'
                } else {
                    ' '
                };
            for lane in insn.lanes.keys() {
                for b in insn.visible_boxes(lane) {
                    if b.start <= cycle && cycle < b.end {
                        expected = letters[&b.name];
                    }
                }
            }
            let got = cells.get(column as usize).copied().unwrap_or(' ');
            assert_eq!(got, expected, "op {} cycle {cycle}: {line:?}", insn.file_id);
        }
        let flushed = insn.retired.is_some_and(|r| r.kind == RetireKind::Flushed);
        assert_eq!(line.ends_with(" flushed"), flushed, "{line:?}");
    }
}

/// A decoded PNG: width, height and RGB bytes.
struct Pixels {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

impl Pixels {
    fn decode(png_bytes: &[u8]) -> Pixels {
        let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
        decoder.set_transformations(png::Transformations::IDENTITY);
        let mut reader = decoder.read_info().expect("a PNG");
        let mut rgb = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut rgb).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb, "8-bit RGB");
        assert_eq!(info.bit_depth, png::BitDepth::Eight);
        Pixels {
            width: info.width as usize,
            height: info.height as usize,
            rgb,
        }
    }

    /// The pixel whose area holds the point (x, y).
    fn at(&self, x: f64, y: f64) -> [u8; 3] {
        let (x, y) = (x.floor() as usize, y.floor() as usize);
        assert!(x < self.width && y < self.height, "({x}, {y}) is outside");
        let i = (y * self.width + x) * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }
}

fn mix(under: [f64; 3], over: Colour) -> [f64; 3] {
    let a = over.a as f64 / 255.0;
    [
        under[0] * (1.0 - a) + over.r as f64 * a,
        under[1] * (1.0 - a) + over.g as f64 * a,
        under[2] * (1.0 - a) + over.b as f64 * a,
    ]
}

fn close(got: [u8; 3], want: [f64; 3], tolerance: f64) -> bool {
    got.iter()
        .zip(want)
        .all(|(&g, w)| (g as f64 - w).abs() <= tolerance)
}

/// Reads the PNG of `drawing` back at computed places: in every cycle of every box Konata
/// draws, the pixel just below the box's top edge (above the text) has the box's gradient
/// colour there, the colour of the top lane's box where lanes overlap, shaded when the
/// instruction was flushed. The drawing has no arrows (they cross boxes); the arrows are
/// checked by [`check_png_arrows`].
fn check_png_against_model(drawing: &Drawing, png_bytes: &[u8], view: &View, scale: f64) {
    assert!(drawing.arrows.is_empty());
    let pixels = Pixels::decode(png_bytes);
    let geometry = Geometry::of(drawing);
    assert_eq!(pixels.width as f64, (geometry.width * scale).ceil());
    assert_eq!(pixels.height as f64, (geometry.height * scale).ceil());
    let first = drawing.first_cycle as i64;
    let rect_height = ROW_HEIGHT - 2.0 * LANE_MARGIN;
    // Two pixels of the SVG below the box's top edge: under its 1-pixel border, above the
    // glyphs (the text's baseline is 17 pixels below the row's top).
    let inside = 2.0;
    let mut checked = 0;
    for insn in &view.insns {
        let row = insn.file_id as usize;
        let flushed = insn.retired.is_some_and(|r| r.kind == RetireKind::Flushed);
        let rect_top = geometry.pipeline_top + row as f64 * ROW_HEIGHT + PIXEL_ADJUST + LANE_MARGIN;
        let y = ((rect_top + inside) * scale).floor() + 0.5;
        let t = (y / scale - rect_top) / rect_height;
        // The box on top at each cycle: later lanes over earlier ones, later boxes over
        // earlier ones.
        let mut top: BTreeMap<i64, (String, String)> = BTreeMap::new();
        for lane in insn.lanes.keys() {
            for b in insn.visible_boxes(lane) {
                for cycle in b.start..b.end.min(drawing.end_cycle as i64) {
                    top.insert(cycle, (lane.clone(), b.name.clone()));
                }
            }
        }
        for (cycle, (lane, name)) in &top {
            let x = geometry.pipeline_left + (cycle - first) as f64 * COLUMN_WIDTH + 16.0;
            let colour = expected_colour(view, &drawing.theme, lane, name);
            let (b, e) = (colour.begin, colour.end);
            let lerp = |from: u8, to: u8| from as f64 + (to as f64 - from as f64) * t;
            let mut want = [lerp(b.r, e.r), lerp(b.g, e.g), lerp(b.b, e.b)];
            if flushed {
                want = mix(want, drawing.theme.flushed);
            }
            let got = pixels.at(x * scale, y);
            assert!(
                close(got, want, 4.0),
                "op {row} cycle {cycle} ({lane}, {name}) at scale {scale}: {got:?}, not {want:?}"
            );
            checked += 1;
        }
    }
    assert!(checked > 0);
}

/// The arrows of the PNG: the pixels a drawing with arrows changes against the same
/// drawing without are along the arrows the model says (within the head's size of one of
/// their lines), and every such arrow changes the pixels around its middle.
fn check_png_arrows(drawing: &Drawing, with: &[u8], without: &[u8], view: &View) {
    let (with, without) = (Pixels::decode(with), Pixels::decode(without));
    let geometry = Geometry::of(drawing);
    let first = drawing.first_cycle as i64;
    let lines: Vec<((f64, f64), (f64, f64))> = view
        .arrows
        .iter()
        .map(|a| {
            let y = |row: i64| geometry.pipeline_top + row as f64 * ROW_HEIGHT + 12.5;
            (
                (
                    geometry.pipeline_left + (a.from_cycle - first) as f64 * COLUMN_WIDTH + 24.5,
                    y(a.producer),
                ),
                (
                    geometry.pipeline_left + (a.to_cycle - first) as f64 * COLUMN_WIDTH + 8.5,
                    y(a.consumer),
                ),
            )
        })
        .collect();
    assert!(!lines.is_empty());
    let distance = |(px, py): (f64, f64), ((x1, y1), (x2, y2)): ((f64, f64), (f64, f64))| {
        let (vx, vy) = (x2 - x1, y2 - y1);
        let length = vx * vx + vy * vy;
        let t = if length == 0.0 {
            0.0
        } else {
            (((px - x1) * vx + (py - y1) * vy) / length).clamp(0.0, 1.0)
        };
        (px - x1 - t * vx).hypot(py - y1 - t * vy)
    };
    for y in 0..with.height {
        for x in 0..with.width {
            let i = (y * with.width + x) * 3;
            if with.rgb[i..i + 3] != without.rgb[i..i + 3] {
                let centre = (x as f64 + 0.5, y as f64 + 0.5);
                assert!(
                    lines.iter().any(|&line| distance(centre, line) <= 4.5),
                    "pixel ({x}, {y}) changed by no arrow"
                );
            }
        }
    }
    for &((x1, y1), (x2, y2)) in &lines {
        let (mx, my) = ((x1 + x2) / 2.0, (y1 + y2) / 2.0);
        let changed = (-1..=1).any(|dy| {
            (-1..=1).any(|dx| {
                let (x, y) = ((mx + dx as f64) as usize, (my + dy as f64) as usize);
                let i = (y * with.width + x) * 3;
                with.rgb[i..i + 3] != without.rgb[i..i + 3]
            })
        });
        assert!(changed, "no arrow drawn around ({mx}, {my})");
    }
}

/// The text view's options of the golden file and of the model check.
fn golden_text_options() -> TextOptions {
    TextOptions {
        width: 200,
        label_width: 48,
        ..TextOptions::default()
    }
}

#[test]
fn sample_svg_and_text_are_what_konata_draws() {
    let input = sample("pipeline_sim.kanata");
    let options = first_100();
    let drawing = render::draw_trace(&input, &options, &DrawOptions::default()).unwrap();
    let view = window_view(&input, &options);
    assert!(!view.arrows.is_empty(), "the sample has arrows");
    assert!(view
        .insns
        .iter()
        .any(|i| i.retired.is_some_and(|r| r.kind == RetireKind::Flushed)));
    let svg = render::svg::render(&drawing);
    check_svg_against_model(&drawing, &svg, &view);
    let text = render::text::render(&drawing, &golden_text_options());
    check_text_against_model(&drawing, &text, &view);

    // The dark theme: the same boxes in its colours.
    let dark = DrawOptions {
        theme: ThemeName::Dark,
        ..DrawOptions::default()
    };
    let drawing = render::draw_trace(&input, &options, &dark).unwrap();
    check_svg_against_model(&drawing, &render::svg::render(&drawing), &view);
}

#[test]
fn sample_png_is_what_konata_draws_at_every_scale() {
    let input = sample("pipeline_sim.kanata");
    let mut options = first_100();
    options.window.insns = "0..40".parse().unwrap();
    let view = window_view(&input, &options);
    for theme in [ThemeName::Light, ThemeName::Dark] {
        let no_arrows = DrawOptions {
            theme,
            arrows: false,
            ..DrawOptions::default()
        };
        let drawing = render::draw_trace(&input, &options, &no_arrows).unwrap();
        for scale in [1.0, 2.0, 0.5] {
            let png = render::png::render(&drawing, &PngOptions { scale }).unwrap();
            check_png_against_model(&drawing, &png, &view, scale);
        }
        let without = render::png::render(&drawing, &PngOptions::default()).unwrap();
        let arrows = DrawOptions {
            theme,
            ..DrawOptions::default()
        };
        let drawing = render::draw_trace(&input, &options, &arrows).unwrap();
        let with = render::png::render(&drawing, &PngOptions::default()).unwrap();
        check_png_arrows(&drawing, &with, &without, &view);
    }
}

#[test]
fn golden_pictures_of_the_sample() {
    let input = sample("pipeline_sim.kanata");
    let drawing = render::draw_trace(&input, &first_100(), &DrawOptions::default()).unwrap();
    let svg = render::svg::render(&drawing);
    let text = render::text::render(&drawing, &golden_text_options());
    assert_eq!(svg, render::svg::render(&drawing), "deterministic");
    let (svg_path, text_path) = (sample("pipeline_sim.svg"), sample("pipeline_sim.txt"));
    if std::env::var_os("KANATA_BLESS").is_some() {
        std::fs::write(&svg_path, &svg).unwrap();
        std::fs::write(&text_path, &text).unwrap();
    }
    let want_svg = std::fs::read_to_string(&svg_path).expect("samples/pipeline_sim.svg");
    let want_text = std::fs::read_to_string(&text_path).expect("samples/pipeline_sim.txt");
    assert!(
        svg == want_svg,
        "samples/pipeline_sim.svg changed: regenerate it (samples/README.md)"
    );
    assert!(
        text == want_text,
        "samples/pipeline_sim.txt changed: regenerate it (samples/README.md)"
    );

    // The README's picture: 30 instructions around a mispredicted branch, as a PNG.
    let mut options = first_100();
    options.window.insns = "36..66".parse().unwrap();
    let drawing = render::draw_trace(&input, &options, &DrawOptions::default()).unwrap();
    let png = render::png::render(&drawing, &PngOptions::default()).unwrap();
    assert_eq!(
        png,
        render::png::render(&drawing, &PngOptions::default()).unwrap(),
        "deterministic"
    );
    let png_path = sample("pipeline_sim.png");
    if std::env::var_os("KANATA_BLESS").is_some() {
        std::fs::write(&png_path, &png).unwrap();
    }
    let want_png = std::fs::read(&png_path).expect("samples/pipeline_sim.png");
    assert!(
        png == want_png,
        "samples/pipeline_sim.png changed: regenerate it (samples/README.md)"
    );
}

fn seg(lane: u64, name: &str, start: u64, end: Option<u64>, notes: &str) -> Segment {
    Segment {
        lane,
        name: name.into(),
        start,
        end,
        notes: notes.to_owned(),
    }
}

fn insn(id: u64, begin: u64, end: Option<u64>, stages: Vec<Segment>) -> Instruction {
    Instruction {
        id,
        sim_id: i128::from(id * 10),
        thread: 0,
        begin,
        end,
        retire: end.map(|_| Retirement {
            retire_id: id as i64,
            flushed: false,
        }),
        name: format!("op {id}"),
        detail: String::new(),
        stages,
        deps: Vec::new(),
    }
}

#[test]
fn empty_window_is_a_valid_picture_with_a_note() {
    let drawing = Drawing::new([], 0, &DrawOptions::default()).unwrap();
    let svg = render::svg::render(&drawing);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
    assert!(texts.iter().any(|t| t.contains("no instructions")), "{svg}");
    assert!(parse_num(doc.root_element(), "width") > 0.0);
    let text = render::text::render(&drawing, &TextOptions::default());
    assert!(
        text.contains("0 instructions") && text.contains("no instructions"),
        "{text}"
    );

    // An empty window of a real trace, through the reader.
    let mut options = Options::new(Destination::Check);
    options.window = Window::all();
    options.window.insns = "1000..2000".parse().unwrap();
    let drawing = render::draw_trace(
        &sample("pipeline_sim.kanata"),
        &options,
        &DrawOptions::default(),
    )
    .unwrap();
    assert!(drawing.rows.is_empty());
    // The PNG of it: the SVG's size, the note drawn (ink in its line at the top).
    let png = render::png::render(&drawing, &PngOptions::default()).unwrap();
    let pixels = Pixels::decode(&png);
    let (w, h) = render::png::size(&drawing, 1.0);
    assert_eq!((pixels.width as u64, pixels.height as u64), (w, h));
    let background = pixels.at(1.0, 1.0);
    let inked = (0..pixels.width)
        .flat_map(|x| (2..16).map(move |y| (x, y)))
        .filter(|&(x, y)| pixels.at(x as f64, y as f64) != background)
        .count();
    assert!(inked > 50, "the note is drawn: {inked} pixels");
}

#[test]
fn a_million_cycle_life_is_capped_and_says_so() {
    let mut long = insn(
        0,
        0,
        None,
        vec![seg(0, "F", 0, Some(1), ""), seg(0, "X", 1, None, "miss")],
    );
    long.name = "ld x1, 0(x2)".to_owned();
    let short = insn(
        1,
        1,
        Some(4),
        vec![seg(0, "F", 1, Some(2), ""), seg(0, "X", 2, Some(4), "")],
    );
    let drawing = Drawing::new([long, short], 999_999, &DrawOptions::default()).unwrap();
    assert_eq!(drawing.columns, render::DEFAULT_MAX_COLUMNS);
    assert_eq!(drawing.last_drawn_cycle, 1_000_000);
    assert!(drawing
        .notes
        .iter()
        .any(|n| n.contains("drawn up to cycle 2000")));
    let svg = render::svg::render(&drawing);
    assert!(svg.len() < 400_000, "{} bytes", svg.len());
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let x = doc
        .descendants()
        .find(|n| n.attribute("data-stage") == Some("X"))
        .unwrap();
    assert_eq!(x.attribute("data-clipped"), Some("1"));
    assert_eq!(x.attribute("data-end"), Some("1000000"));
    let width = parse_num(doc.root_element(), "width");
    assert!(width <= Geometry::of(&drawing).pipeline_left + 2000.0 * COLUMN_WIDTH);
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
    assert!(texts.iter().any(|t| t.contains("drawn up to cycle 2000")));

    let text = render::text::render(&drawing, &TextOptions::default());
    assert!(
        text.lines()
            .all(|l| l.chars().count() <= 120 || l.starts_with("note:")),
        "{text}"
    );
    let row = text.lines().find(|l| l.starts_with("0: s0")).unwrap();
    assert!(row.ends_with("XXX>"), "{row}");

    // Compressed instead: 1000 cycles a column.
    let options = DrawOptions {
        cycles_per_column: 1000,
        ..DrawOptions::default()
    };
    let long = insn(0, 0, None, vec![seg(0, "X", 0, None, "")]);
    let drawing = Drawing::new([long], 999_999, &options).unwrap();
    assert_eq!(drawing.columns, 1000);
    assert!(drawing.notes.is_empty());
    let b = &drawing.rows[0].boxes[0];
    assert_eq!((b.start_column, b.end_column, b.clipped), (0, 1000, false));

    // A PNG is cut at the columns it has room for, and says so too.
    let long = insn(0, 0, None, vec![seg(0, "X", 0, None, "")]);
    for scale in [1.0, 2.0] {
        let options = DrawOptions {
            max_columns: render::png::max_columns(scale),
            ..DrawOptions::default()
        };
        let drawing = Drawing::new([long.clone()], 999_999, &options).unwrap();
        assert!(drawing
            .notes
            .iter()
            .any(|n| n.contains("drawn up to cycle")));
        let png = render::png::render(&drawing, &PngOptions { scale }).unwrap();
        let pixels = Pixels::decode(&png);
        assert!(
            pixels.width as u64 <= render::png::MAX_SIDE,
            "{}",
            pixels.width
        );
        assert!(
            pixels.width as u64 >= render::png::MAX_SIDE * 9 / 10,
            "{}",
            pixels.width
        );
    }
}

#[test]
fn markup_and_non_ascii_labels_are_escaped_and_drawn() {
    let label = "<b>&amp; \"quoted\" 'single' ]]> 漢字 é \u{1}";
    let mut a = insn(
        0,
        0,
        Some(5),
        vec![
            seg(0, "F<", 0, Some(2), "note <&>\nline2 \"q\""),
            seg(0, "X&", 2, Some(4), "ü"),
            seg(1, "stl", 2, Some(3), ""),
        ],
    );
    a.name = label.to_owned();
    a.detail = "r1=<0x10> & 'x'".to_owned();
    a.retire = Some(Retirement {
        retire_id: 0,
        flushed: true,
    });
    let mut b = insn(1, 1, Some(6), vec![seg(0, "X&", 4, Some(6), "")]);
    b.deps.push(Dependency {
        producer: 0,
        kind: 0,
    });
    let drawing = Drawing::new([a, b], 6, &DrawOptions::default()).unwrap();
    let svg = render::svg::render(&drawing);
    let doc = roxmltree::Document::parse(&svg).expect("escaped");
    let label_node = doc.descendants().find(|n| class(n, "label")).unwrap();
    let shown: String = label_node
        .children()
        .filter(|n| n.is_text())
        .map(|n| n.text().unwrap())
        .collect();
    assert_eq!(
        shown,
        format!("0: s0 (t0: r0): {}", label.replace('\u{1}', "\u{fffd}"))
    );
    let tip = label_node
        .children()
        .find(|n| n.has_tag_name("title"))
        .unwrap()
        .text()
        .unwrap();
    assert!(
        tip.contains("r1=<0x10> & 'x'") && tip.contains("flushed"),
        "{tip}"
    );
    let f = doc
        .descendants()
        .find(|n| n.attribute("data-stage") == Some("F<"))
        .unwrap();
    let f_tip = f
        .children()
        .find(|n| n.has_tag_name("title"))
        .unwrap()
        .text()
        .unwrap();
    assert!(f_tip.contains("F<: note <&>\nF<: line2 \"q\""), "{f_tip}");
    // The stall lane is drawn over the main lane, in the stall colour.
    let op = doc.descendants().find(|n| class(n, "op")).unwrap();
    let lanes: Vec<&str> = op
        .children()
        .filter(|n| class(n, "stage"))
        .map(|n| n.attribute("data-lane").unwrap())
        .collect();
    assert_eq!(lanes, ["0", "0", "1"]);
    let stall = op.children().rfind(|n| class(n, "stage")).unwrap();
    let rect = stall.children().find(|n| n.has_tag_name("rect")).unwrap();
    assert_eq!(rect.attribute("fill"), Some("#aaaaaa"));
    assert_eq!(doc.descendants().filter(|n| class(n, "arrow")).count(), 1);

    let wide = TextOptions {
        width: 160,
        label_width: 80,
        ..TextOptions::default()
    };
    let text = render::text::render(&drawing, &wide);
    assert!(
        text.contains("漢字 é \u{fffd}") && !text.contains('\u{1}'),
        "{text}"
    );
    let colored = render::text::render(
        &drawing,
        &TextOptions {
            color: true,
            ..TextOptions::default()
        },
    );
    assert!(colored.contains("\x1b[0;48;2;"));
    assert!(!text.contains('\x1b'));

    // The PNG draws the shipped font's glyphs of non-ASCII labels (Latin, Greek, Cyrillic,
    // symbols): each one changes the pixels of a label that is a space instead.
    let png_of = |name: &str| {
        let mut one = insn(0, 0, Some(2), vec![seg(0, "X", 0, Some(2), "")]);
        one.name = name.to_owned();
        let drawing = Drawing::new([one], 2, &DrawOptions::default()).unwrap();
        Pixels::decode(&render::png::render(&drawing, &PngOptions::default()).unwrap()).rgb
    };
    let blank = png_of(" ");
    for c in ["é", "ü", "Ω", "λ", "Ж", "→", "€"] {
        let drawn = png_of(c);
        assert_eq!(drawn.len(), blank.len());
        let inked = drawn.iter().zip(&blank).filter(|(a, b)| a != b).count();
        assert!(inked >= 10, "{c}: {inked} channels drawn");
    }
}

#[test]
fn too_many_instructions_is_a_usage_error_that_says_what_to_do() {
    let options = DrawOptions {
        max_insns: 10,
        ..DrawOptions::default()
    };
    let error =
        render::draw_trace(&sample("pipeline_sim.kanata"), &first_100(), &options).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Usage);
    let message = error.to_string();
    assert!(message.contains("85 instructions"), "{message}");
    assert!(
        message.contains("--max-insns") && message.contains("--insns"),
        "{message}"
    );
}

#[test]
fn no_arrows_when_turned_off() {
    let options = DrawOptions {
        arrows: false,
        ..DrawOptions::default()
    };
    let drawing =
        render::draw_trace(&sample("pipeline_sim.kanata"), &first_100(), &options).unwrap();
    assert!(drawing.arrows.is_empty());
    assert!(!render::svg::render(&drawing).contains("class=\"arrow\""));
    let _ = Colour::rgb(0, 0, 0);
}

#[test]
fn small_scales_leave_out_what_konata_leaves_out_zoomed_out() {
    let input = sample("pipeline_sim.kanata");
    let drawing = render::draw_trace(&input, &first_100(), &DrawOptions::default()).unwrap();
    let count = |svg: &str, what: &dyn Fn(&roxmltree::Node<'_, '_>) -> bool| {
        roxmltree::Document::parse(svg)
            .unwrap()
            .descendants()
            .filter(|n| what(n))
            .count()
    };
    let stage_texts = |n: &roxmltree::Node<'_, '_>| {
        n.has_tag_name("text") && n.ancestors().any(|a| class(&a, "stage"))
    };
    let bordered = |n: &roxmltree::Node<'_, '_>| {
        n.has_tag_name("rect")
            && n.attribute("stroke").is_some()
            && n.parent().is_some_and(|p| class(&p, "stage"))
    };
    let arrows = |n: &roxmltree::Node<'_, '_>| class(n, "arrow");
    let full = render::svg::render(&drawing);
    let boxes = count(&full, &|n| class(n, "stage"));
    assert!(count(&full, &stage_texts) > 0 && count(&full, &arrows) > 0);
    assert_eq!(count(&full, &bordered), boxes);
    // 0.4: about 10 pixels a row, too small to read; borders and arrows stay.
    let svg = render::svg::render_with(&drawing, render::svg::Detail::at(0.4));
    assert_eq!(count(&svg, &stage_texts), 0);
    assert_eq!(count(&svg, &bordered), boxes);
    assert_eq!(count(&svg, &arrows), count(&full, &arrows));
    // 0.15: the boxes alone, a row high.
    let svg = render::svg::render_with(&drawing, render::svg::Detail::at(0.15));
    assert_eq!(count(&svg, &|n| class(n, "stage")), boxes);
    assert_eq!(count(&svg, &bordered) + count(&svg, &arrows), 0);
    let rect = roxmltree::Document::parse(&svg)
        .unwrap()
        .descendants()
        .find(|n| n.has_tag_name("rect") && n.parent().is_some_and(|p| class(&p, "stage")))
        .map(|n| parse_num(n, "height"))
        .unwrap();
    assert_eq!(rect, ROW_HEIGHT);
    // The PNG at a small scale is drawn from that SVG.
    let png = render::png::render(&drawing, &PngOptions { scale: 0.15 }).unwrap();
    let pixels = Pixels::decode(&png);
    let (w, h) = render::png::size(&drawing, 0.15);
    assert_eq!((pixels.width as u64, pixels.height as u64), (w, h));
}
