//! The command line of pictures (issue 14): `-o fig.svg`, `--to text`, the limits.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn kanata_pp(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kanata-pp"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("kanata-pp runs")
}

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples")
}

fn sample(name: &str) -> String {
    samples().join(name).display().to_string()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn svg_and_text_of_the_sample_are_the_golden_pictures() {
    let dir = tempfile::tempdir().unwrap();
    // No window: the first 100 instructions, as the golden files were drawn.
    let run = kanata_pp(
        dir.path(),
        &[&sample("pipeline_sim.kanata"), "-o", "fig.svg"],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(
        std::fs::read(dir.path().join("fig.svg")).unwrap(),
        std::fs::read(samples().join("pipeline_sim.svg")).unwrap()
    );
    assert_eq!(
        entries(dir.path()),
        ["fig.svg"],
        "no temporary file is left"
    );
    // Text to stdout: not a terminal, so no colours and 120 columns, the library's defaults.
    let run = kanata_pp(
        dir.path(),
        &[&sample("pipeline_sim.kanata"), "--to", "text"],
    );
    assert!(run.status.success());
    let mut options = kanata_pp::Options::new(kanata_pp::Destination::Check);
    options.window.insns = "0..100".parse().unwrap();
    let drawing = kanata_pp::render::draw_trace(
        &samples().join("pipeline_sim.kanata"),
        &options,
        &kanata_pp::render::DrawOptions::default(),
    )
    .unwrap();
    let text = kanata_pp::render::text::render(&drawing, &Default::default());
    assert_eq!(String::from_utf8(run.stdout).unwrap(), text);
    // `.txt` is text.
    let run = kanata_pp(
        dir.path(),
        &[&sample("pipeline_sim.kanata"), "-o", "view.txt"],
    );
    assert!(run.status.success());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("view.txt")).unwrap(),
        text
    );
    // `-o -` is stdout.
    let run = kanata_pp(
        dir.path(),
        &[&sample("pipeline_sim.kanata"), "--to", "svg", "-o", "-"],
    );
    assert_eq!(
        run.stdout,
        std::fs::read(samples().join("pipeline_sim.svg")).unwrap()
    );
}

#[test]
fn png_of_the_sample_is_the_readmes_picture() {
    let dir = tempfile::tempdir().unwrap();
    // The command of samples/README.md and of the README.
    let run = kanata_pp(
        dir.path(),
        &[
            &sample("pipeline_sim.kanata"),
            "--insns",
            "36..66",
            "-o",
            "fig.png",
        ],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let golden = std::fs::read(samples().join("pipeline_sim.png")).unwrap();
    assert!(std::fs::read(dir.path().join("fig.png")).unwrap() == golden);
    assert_eq!(
        entries(dir.path()),
        ["fig.png"],
        "no temporary file is left"
    );
    // `--to png` to a pipe; `--scale 2` doubles both sides.
    let run = kanata_pp(
        dir.path(),
        &[
            &sample("pipeline_sim.kanata"),
            "--insns",
            "36..66",
            "--to",
            "png",
            "--scale",
            "2",
        ],
    );
    assert!(run.status.success());
    let side = |png: &[u8], at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    assert!(run.stdout.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert_eq!(side(&run.stdout, 16), side(&golden, 16) * 2);
    assert_eq!(side(&run.stdout, 20), side(&golden, 20) * 2);
}

#[test]
fn a_window_is_drawn_from_any_input() {
    let dir = tempfile::tempdir().unwrap();
    // A sloppy log: converted on the way, the window drawn.
    let run = kanata_pp(
        dir.path(),
        &[&sample("sloppy.log"), "--cycles", "0..10", "-o", "w.svg"],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let svg = std::fs::read_to_string(dir.path().join("w.svg")).unwrap();
    assert!(svg.starts_with("<?xml") && svg.trim_end().ends_with("</svg>"));
    let run = kanata_pp(
        dir.path(),
        &[
            &sample("sloppy.log"),
            "--cycles",
            "0..10",
            "--to",
            "text",
            "--color",
            "always",
        ],
    );
    assert!(run.status.success());
    assert!(
        String::from_utf8_lossy(&run.stdout).contains("\x1b["),
        "ANSI colours asked for"
    );
}

#[test]
fn pictures_that_cannot_be_drawn_are_usage_errors_with_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let input = sample("pipeline_sim.kanata");
    for (args, says) in [
        // The sample's 85 instructions at 16 times their size: 33,344 pixels high.
        (
            vec![
                input.as_str(),
                "-o",
                "fig.png",
                "--insns",
                "0..2000",
                "--scale",
                "16",
            ],
            "fits, or draw more --cycles-per-column",
        ),
        (
            vec![input.as_str(), "-o", "fig.png", "--scale", "0"],
            "a scale is a number",
        ),
        (
            vec![input.as_str(), "-o", "fig.svg", "--max-insns", "10"],
            "--max-insns",
        ),
        (
            vec![input.as_str(), input.as_str(), "-d", "out", "--to", "svg"],
            "one input",
        ),
        (
            vec![input.as_str(), "--to", "text", "--cycles-per-column", "0"],
            "0",
        ),
    ] {
        let run = kanata_pp(dir.path(), &args);
        assert_eq!(run.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(
            entries(dir.path()).is_empty(),
            "{args:?} wrote {:?}",
            entries(dir.path())
        );
    }
}
