//! The SVG in a real browser (issue 14): headless Chromium's screenshot of the SVG against
//! kanata-pp's PNG of the same drawing. The two renderings of one drawing must agree, within
//! [`MEAN_DIFFERENCE`] and [`DIFFERENT_PIXELS`] (anti-aliasing and glyph hinting differ
//! between Skia-in-Chromium and tiny-skia; boxes, colours, positions and arrows do not).
//!
//! The browser is `$KANATA_CHROMIUM`, else `chromium`, `chromium-browser` or
//! `google-chrome` on the `PATH`. Without one the test says so and passes, unless
//! `KANATA_REQUIRE_BROWSER=1` (as `.ci/run` sets it, after installing Debian's `chromium`
//! and `fonts-dejavu-core`), where a missing browser fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use kanata_pp::render::png::PngOptions;
use kanata_pp::render::{self, DrawOptions, ThemeName};
use kanata_pp::{Destination, Options};

/// The most the mean of every channel's absolute difference may be, over the picture.
const MEAN_DIFFERENCE: f64 = 3.0;
/// The most pixels, as a fraction of the picture, that may differ by more than 64 in a
/// channel (the edges of glyphs and of arrow lines).
const DIFFERENT_PIXELS: f64 = 0.02;

fn browser() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("KANATA_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// An RGB picture.
struct Picture {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

fn decode(bytes: &[u8]) -> Picture {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().expect("a PNG");
    let mut data = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut data).unwrap();
    data.truncate(info.buffer_size());
    let channels = info.color_type.samples();
    let rgb = match channels {
        3 => data,
        // Opaque screenshots come as RGBA.
        4 => data
            .chunks_exact(4)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect(),
        n => panic!("{n} channels"),
    };
    Picture {
        width: info.width as usize,
        height: info.height as usize,
        rgb,
    }
}

fn screenshot(browser: &Path, svg: &Path, width: usize, height: usize) -> Picture {
    let profile = tempfile::tempdir().unwrap();
    let shot = profile.path().join("shot.png");
    let run = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", svg.display()))
        .output()
        .expect("the browser runs");
    assert!(
        shot.exists(),
        "no screenshot: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    decode(&std::fs::read(&shot).unwrap())
}

#[test]
fn browser_draws_the_svg_as_the_png() {
    let Some(browser) = browser() else {
        assert!(
            std::env::var_os("KANATA_REQUIRE_BROWSER").is_none(),
            "KANATA_REQUIRE_BROWSER is set and no Chromium was found"
        );
        eprintln!("no Chromium on this machine: the SVG is not checked in a browser");
        return;
    };
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/pipeline_sim.kanata");
    let dir = tempfile::tempdir().unwrap();
    for (theme, window) in [(ThemeName::Light, "0..30"), (ThemeName::Dark, "40..85")] {
        let mut options = Options::new(Destination::Check);
        options.window.insns = window.parse().unwrap();
        let draw = DrawOptions {
            theme,
            ..DrawOptions::default()
        };
        let drawing = render::draw_trace(&input, &options, &draw).unwrap();
        let svg = dir.path().join(format!("{theme:?}.svg"));
        std::fs::write(&svg, render::svg::render(&drawing)).unwrap();
        let png = decode(&render::png::render(&drawing, &PngOptions::default()).unwrap());
        let shot = screenshot(&browser, &svg, png.width, png.height);
        assert_eq!((shot.width, shot.height), (png.width, png.height));
        let total: u64 = shot
            .rgb
            .iter()
            .zip(&png.rgb)
            .map(|(&a, &b)| a.abs_diff(b) as u64)
            .sum();
        let mean = total as f64 / png.rgb.len() as f64;
        let different = shot
            .rgb
            .chunks_exact(3)
            .zip(png.rgb.chunks_exact(3))
            .filter(|(a, b)| a.iter().zip(b.iter()).any(|(&x, &y)| x.abs_diff(y) > 64))
            .count() as f64
            / (png.width * png.height) as f64;
        eprintln!(
            "{theme:?} {window}: mean difference {mean:.3}, {:.3} % of pixels differ",
            different * 100.0
        );
        assert!(mean <= MEAN_DIFFERENCE, "{theme:?}: mean difference {mean}");
        assert!(
            different <= DIFFERENT_PIXELS,
            "{theme:?}: {different} of the pixels differ"
        );
    }
}
