//! A [`Drawing`] as PNG: the picture [`svg`] writes, rendered by resvg with the
//! font that ships with kanata-pp, so that the PNG shows exactly what the SVG shows and has
//! the same pixels (and bytes) on every machine.
//!
//! # Why resvg
//!
//! resvg (with usvg and tiny-skia) is a pure-Rust SVG renderer: no cairo, no system
//! libraries, no fontconfig. It draws the SVG of the drawing itself, so the two pictures
//! cannot drift apart, and it is deterministic: the same SVG, fonts and scale give the same
//! pixels. Its font database is given one font and nothing else:
//! [`FONT_FAMILY`] (DejaVu Sans Mono 2.37, in `kanata-pp/assets/fonts/` with its licence),
//! which is also the first name of the SVG's font list, so that a browser that has it draws
//! the SVG as the PNG. It covers Latin, Greek, Cyrillic and most symbols; characters it has
//! no glyph for (CJK, emoji) are left out of the PNG (the SVG keeps them as text, and a
//! browser draws them with its own fonts).
//!
//! # Scale
//!
//! [`PngOptions::scale`] is Konata's zoom: a picture drawn at a small scale leaves out what
//! Konata leaves out at that zoom ([`svg::Detail::at`]): the stage names and cycle counts
//! below 0.43 (a row of about 10 pixels, where they could not be read), the borders (and the
//! margins of the boxes) below 0.22, the arrows below 0.18.
//!
//! # Size
//!
//! A picture is at most [`MAX_PIXELS`] pixels and [`MAX_SIDE`] pixels a side, at the asked
//! [`PngOptions::scale`]; a larger one is a usage error that says how large it would be and
//! which scale fits ([`check_size`]), so a large window never allocates gigabytes.
//!
//! The PNG is 8-bit RGB (the picture is opaque), without metadata (no time, no text
//! chunks), compressed with the `png` crate's balanced DEFLATE (a third the size of its fastest, at a few milliseconds a megapixel): its bytes depend only on the
//! drawing and the scale.

use std::io::Write;
use std::sync::{Arc, OnceLock};

use resvg::{tiny_skia, usvg};

use super::svg::{self, Geometry};
use super::Drawing;
use crate::error::{Error, ErrorKind};

/// The font the PNG is drawn with: DejaVu Sans Mono (Bitstream Vera licence,
/// `kanata-pp/assets/fonts/LICENSE-DejaVu.txt`).
pub const FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSansMono.ttf");

/// The family name of [`FONT`], first in the SVG's font list.
pub const FONT_FAMILY: &str = "DejaVu Sans Mono";

/// The most pixels a PNG has: 64 million (256 MB while it is drawn).
pub const MAX_PIXELS: u64 = 64_000_000;

/// The most pixels a PNG has on a side (what browsers and image viewers show).
pub const MAX_SIDE: u64 = 32_767;

/// How to draw a PNG.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PngOptions {
    /// Pixels of the PNG per pixel of the SVG (`--scale`): 2 for a high-DPI screen or print,
    /// 0.5 for an overview. More than 0.
    pub scale: f64,
}

impl Default for PngOptions {
    fn default() -> PngOptions {
        PngOptions { scale: 1.0 }
    }
}

/// The width and height in pixels of `drawing`'s PNG at `scale`.
pub fn size(drawing: &Drawing, scale: f64) -> (u64, u64) {
    scaled(&Geometry::of(drawing), scale)
}

fn scaled(g: &Geometry, scale: f64) -> (u64, u64) {
    (
        (g.width * scale).ceil().max(1.0) as u64,
        (g.height * scale).ceil().max(1.0) as u64,
    )
}

/// Whether `drawing` can be drawn as a PNG at `scale`.
///
/// # Errors
/// A usage error that says the size, the limit, and the scale that fits.
pub fn check_size(drawing: &Drawing, scale: f64) -> Result<(), Error> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(Error::new(
            ErrorKind::Usage,
            format!("--scale {scale}: a scale is a number more than 0"),
        ));
    }
    let geometry = Geometry::of(drawing);
    let fits = |scale: f64| {
        let (width, height) = scaled(&geometry, scale);
        width * height <= MAX_PIXELS && width <= MAX_SIDE && height <= MAX_SIDE
    };
    if fits(scale) {
        return Ok(());
    }
    let (width, height) = scaled(&geometry, scale);
    let (w1, h1) = scaled(&geometry, 1.0);
    let by_area = (MAX_PIXELS as f64 / (w1 as f64 * h1 as f64)).sqrt();
    let by_side = MAX_SIDE as f64 / w1.max(h1) as f64;
    // Two decimals, rounded down until the sides' rounding up fits too.
    let mut suggestion = (by_area.min(by_side) * 100.0).floor() / 100.0;
    while suggestion >= 0.01 && !fits(suggestion) {
        suggestion = ((suggestion - 0.01) * 100.0).round() / 100.0;
    }
    let advice = if suggestion >= 0.01 {
        format!("--scale {suggestion} fits, or ")
    } else {
        String::new()
    };
    Err(Error::new(
        ErrorKind::Usage,
        format!(
            "the PNG would be {width}x{height} pixels ({:.1} million) at scale {scale}; \
             the most is {} million pixels and {MAX_SIDE} a side: {advice}draw more \
             --cycles-per-column or a smaller window (an .svg has no such limit)",
            (width * height) as f64 / 1e6,
            MAX_PIXELS / 1_000_000,
        ),
    ))
}

/// The PNG bytes of `drawing`.
///
/// # Errors
/// [`check_size`]'s usage error for a picture too large; an I/O error if the SVG does
/// not render (a bug: the SVG is ours).
pub fn render(drawing: &Drawing, options: &PngOptions) -> Result<Vec<u8>, Error> {
    check_size(drawing, options.scale)?;
    let svg_text = svg::render_with(drawing, svg::Detail::at(options.scale));
    let tree = usvg::Tree::from_str(&svg_text, &usvg_options()).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("internal error drawing the PNG: {e}"),
        )
    })?;
    let (width, height) = size(drawing, options.scale);
    let mut pixmap = tiny_skia::Pixmap::new(width as u32, height as u32).ok_or_else(|| {
        Error::new(
            ErrorKind::Io,
            format!("no {width}x{height} picture could be made"),
        )
    })?;
    let scale = options.scale as f32;
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    encode(&pixmap)
}

/// The options of usvg: one font, for every family name.
fn usvg_options() -> usvg::Options<'static> {
    static FONTS: OnceLock<Arc<usvg::fontdb::Database>> = OnceLock::new();
    let fonts = FONTS.get_or_init(|| {
        let mut db = usvg::fontdb::Database::new();
        db.load_font_data(FONT.to_vec());
        // The SVG names Konata's fonts after ours; none of them is in the database, and
        // `monospace` ends the list.
        db.set_monospace_family(FONT_FAMILY);
        db.set_sans_serif_family(FONT_FAMILY);
        db.set_serif_family(FONT_FAMILY);
        Arc::new(db)
    });
    usvg::Options {
        font_family: FONT_FAMILY.to_owned(),
        fontdb: Arc::clone(fonts),
        ..usvg::Options::default()
    }
}

/// The most columns of cycles a PNG at `scale` has room for on a side of [`MAX_SIDE`]
/// pixels, beside the widest left pane: what [`DrawOptions::max_columns`] should be for a
/// PNG, so that one long life is cut (and says so) instead of being too wide to draw.
///
/// [`DrawOptions::max_columns`]: super::DrawOptions::max_columns
pub fn max_columns(scale: f64) -> u64 {
    let font_size = super::Theme::new(super::ThemeName::Light).font_size;
    let pane = svg::pane_width(svg::LABEL_CHARS + 1, font_size);
    ((MAX_SIDE as f64 / scale - pane) / svg::COLUMN_WIDTH)
        .floor()
        .max(1.0) as u64
}

/// An opaque pixmap as an 8-bit RGB PNG, a row at a time (no second copy of the picture).
fn encode(pixmap: &tiny_skia::Pixmap) -> Result<Vec<u8>, Error> {
    let failed = |e: std::io::Error| Error::new(ErrorKind::Io, format!("writing the PNG: {e}"));
    let failed_png =
        |e: png::EncodingError| Error::new(ErrorKind::Io, format!("writing the PNG: {e}"));
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, pixmap.width(), pixmap.height());
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Balanced);
    let mut writer = encoder.write_header().map_err(failed_png)?;
    let mut stream = writer.stream_writer().map_err(failed_png)?;
    let mut row = Vec::with_capacity(pixmap.width() as usize * 3);
    for pixels in pixmap.data().chunks_exact(pixmap.width() as usize * 4) {
        row.clear();
        row.extend(
            pixels
                .chunks_exact(4)
                .flat_map(|pixel| [pixel[0], pixel[1], pixel[2]]),
        );
        stream.write_all(&row).map_err(failed)?;
    }
    stream.finish().map_err(failed_png)?;
    writer.finish().map_err(failed_png)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::canonical::Instructions;
    use crate::render::DrawOptions;

    fn drawing(text: &str) -> Drawing {
        let insns = Instructions::new(text.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let last = insns.iter().filter_map(|i| i.end).max().unwrap_or(0);
        Drawing::new(insns, last, &DrawOptions::default()).unwrap()
    }

    const ONE: &str = "Kanata\t0004\nC=\t0\nI\t0\t0\t0\nL\t0\t0\tadd\nS\t0\t0\tF\nC\t1\n\
                       E\t0\t0\tF\nS\t0\t0\tX\nC\t2\nE\t0\t0\tX\nR\t0\t0\t0\n";

    #[test]
    fn same_bytes_every_time_and_scaled() {
        let d = drawing(ONE);
        let one = render(&d, &PngOptions::default()).unwrap();
        assert_eq!(one, render(&d, &PngOptions::default()).unwrap());
        assert!(one.starts_with(b"\x89PNG\r\n\x1a\n"));
        let (w, h) = size(&d, 2.0);
        let two = render(&d, &PngOptions { scale: 2.0 }).unwrap();
        // IHDR: width and height, big-endian, after the 8-byte signature and 8 bytes of
        // chunk length and type.
        assert_eq!(
            u32::from_be_bytes(two[16..20].try_into().unwrap()) as u64,
            w
        );
        assert_eq!(
            u32::from_be_bytes(two[20..24].try_into().unwrap()) as u64,
            h
        );
        assert_eq!(size(&d, 1.0), (w.div_ceil(2), h.div_ceil(2)));
    }

    #[test]
    fn too_large_says_which_scale_fits() {
        let d = drawing(ONE);
        let (w, h) = size(&d, 1.0);
        let scale = ((MAX_PIXELS * 4) as f64 / (w * h) as f64).sqrt();
        let e = check_size(&d, scale).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Usage);
        let message = e.to_string();
        assert!(message.contains("million"), "{message}");
        let fits: f64 = message
            .split("--scale ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no scale in {message}"));
        check_size(&d, fits).unwrap();
        assert!(
            fits > scale / 2.0 - 0.02 && fits <= scale / 2.0 + 0.01,
            "{fits}"
        );
        assert_eq!(check_size(&d, 0.0).unwrap_err().kind(), ErrorKind::Usage);
        assert_eq!(
            check_size(&d, f64::NAN).unwrap_err().kind(),
            ErrorKind::Usage
        );
    }
}
