//! Windows on the command line (issue 13, "Windows" and "Tests"): `--cycles`, `--sim-cycles`,
//! `--insns`, `--threads` with the real binary. Ranges whose end is not after their start
//! and text that is not a range are usage errors (exit 2, nothing written, a message that
//! says what is accepted); `k`/`M`/`G` suffixes and `_` are accepted; a window that holds
//! nothing is an empty but valid trace; `--check`, `--stats`, `-d`/`-j` and `--report json`
//! work with windows; the same window gives the same bytes every time, compressed too.
//!
//! What a window keeps is checked against the Konata model in `tests/tests/pp_windows.rs`.

use std::fs;
use std::path::{Path, PathBuf};

use kanata_tests::canonical::{assert_canonical, Options as Form};
use kanata_tests::{decompress, load};
use serde_json::Value;

mod common;
use common::{big_log, run_in, Run};

/// `samples/pipeline_sim.kanata`: two threads, dependencies, 21 instructions open at the
/// end (46 cycles, 85 instructions).
fn pipeline_sim() -> Vec<u8> {
    fs::read(sample("pipeline_sim.kanata")).unwrap()
}

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../samples")
        .join(name)
}

/// A temporary folder holding `files`.
fn dir_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in files {
        fs::write(dir.path().join(name), bytes).unwrap();
    }
    dir
}

/// The names in a folder, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The `I` lines of a canonical text.
fn insns(text: &[u8]) -> usize {
    text.split(|&b| b == b'\n')
        .filter(|l| l.starts_with(b"I\t"))
        .count()
}

fn json(run: &Run) -> Vec<Value> {
    String::from_utf8(run.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: not JSON: {l}")))
        .collect()
}

/// Runs kanata-pp on `in.kanata` (the sample) in a fresh folder with `args` and returns the
/// run and the output `out.kanata`, if any.
fn window_run(args: &[&str]) -> (Run, Option<Vec<u8>>, tempfile::TempDir) {
    let dir = dir_with(&[("in.kanata", &pipeline_sim())]);
    let mut all = vec!["in.kanata", "-o", "out.kanata"];
    all.extend_from_slice(args);
    let run = run_in(dir.path(), &all, None);
    let out = fs::read(dir.path().join("out.kanata")).ok();
    (run, out, dir)
}

#[test]
fn an_end_not_after_the_start_is_a_usage_error_and_writes_nothing() {
    for option in ["--cycles", "--sim-cycles", "--insns"] {
        for range in ["5..5", "9..3", "0..0"] {
            let (run, out, dir) = window_run(&[option, range]);
            run.assert_code(2);
            assert!(out.is_none(), "{option} {range}: an output was written");
            assert_eq!(entries(dir.path()), ["in.kanata"], "{option} {range}");
            assert!(
                run.stderr.contains(range) && run.stderr.contains("B > A"),
                "{option} {range}: {}",
                run.stderr
            );
        }
    }
}

#[test]
fn text_that_is_not_a_range_exits_2_and_says_what_is_accepted() {
    for (option, value) in [
        ("--cycles", "abc"),
        ("--cycles", "10"),
        ("--cycles", ".."),
        ("--cycles", "1.5..3"),
        ("--cycles", "-3..5"),
        ("--insns", "1x..2"),
        ("--sim-cycles", "a..b"),
    ] {
        // `--cycles=-3..5`: clap reads a separate `-3..5` as an option of its own.
        let joined = format!("{option}={value}");
        let (run, out, _dir) = window_run(&[&joined]);
        run.assert_code(2);
        assert!(out.is_none(), "{option} {value}");
        assert!(
            run.stderr.contains(value) && run.stderr.contains(option),
            "{option} {value}: the message names the option and the value: {}",
            run.stderr
        );
    }
    let (run, _, _dir) = window_run(&["--cycles", "abc"]);
    for accepted in ["A..B", "A..", "..B", "`_`", "k, M or G"] {
        assert!(
            run.stderr.contains(accepted),
            "the message says what is accepted ({accepted}): {}",
            run.stderr
        );
    }
    // (Still a usage error when clap takes it for an option.)
    window_run(&["--cycles", "-3..5"]).0.assert_code(2);
    let (run, out, _dir) = window_run(&["--threads", "0,x"]);
    run.assert_code(2);
    assert!(out.is_none());
    assert!(run.stderr.contains("`0,2`"), "{}", run.stderr);
    // --help says what is accepted.
    let help = run_in(Path::new("."), &["--help"], None);
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(
        help.contains("12M..12.01M") && help.contains("`_`"),
        "{help}"
    );
}

#[test]
fn suffixes_and_separators_are_accepted() {
    let log = big_log(3000);
    let dir = dir_with(&[("in.kanata", &log)]);
    let run = |range: &str, option: &str, out: &str| {
        run_in(dir.path(), &["in.kanata", "-o", out, option, range], None).assert_code(0);
        fs::read(dir.path().join(out)).unwrap()
    };
    // `big_log` begins instruction i at cycle i and retires it at i + 1: 1,500..1,600 keeps
    // 1,499 (it ends at 1,500) to 1,599.
    let plain = run("1500..1600", "--cycles", "a.kanata");
    assert_eq!(insns(&plain), 101);
    assert!(run("1_500..1.6k", "--cycles", "b.kanata") == plain);
    assert!(run("1.5k..1_600", "--sim-cycles", "c.kanata") == plain);
    // Far past the end, in millions: accepted, and nothing is in it.
    let empty = run("12M..12.01M", "--cycles", "d.kanata");
    assert_eq!(empty, b"Kanata\t0004\nC=\t0\n");
    assert!(run("12_000_000..12_010_000", "--cycles", "e.kanata") == empty);
    // Simulator cycles may be negative; big_log starts at 0.
    assert!(run("-5..1_600", "--sim-cycles", "f.kanata") == run("..1600", "--cycles", "g.kanata"));
    assert_eq!(insns(&run("1G..", "--insns", "h.kanata")), 0);
}

/// `samples/pipeline_sim.kanata` ends with instructions open, which every window that begins
/// after them keeps; a window of one thread that is not there, or of op ids past the end,
/// holds nothing: exit 0 and a valid empty trace, the header and the input's `C=`.
#[test]
fn a_window_that_holds_nothing_is_a_valid_empty_trace_and_exits_0() {
    for args in [
        &["--threads", "5"][..],
        &["--insns", "85.."][..],
        &["--insns", "..10", "--cycles", "40.."][..],
    ] {
        let (run, out, _dir) = window_run(args);
        run.assert_code(0);
        let out = out.expect("an output");
        assert_eq!(out, b"Kanata\t0004\nC=\t0\n", "{args:?}");
        assert_canonical(&out, Form::STRICT);
        assert!(load(&out).warnings.is_empty());
    }
    // All retired, and the window after the last cycle.
    let log = big_log(10);
    let dir = dir_with(&[("in.kanata", &log)]);
    let run = run_in(
        dir.path(),
        &["in.kanata", "-o", "o.kanata", "--cycles", "100.."],
        None,
    );
    run.assert_code(0);
    assert_eq!(
        fs::read(dir.path().join("o.kanata")).unwrap(),
        b"Kanata\t0004\nC=\t0\n"
    );
}

/// Issue 13, "Tests": "windows that hold nothing (an empty but valid trace, and a note)".
#[test]
fn a_window_that_holds_nothing_says_so_on_stderr() {
    let (run, out, _dir) = window_run(&["--threads", "5"]);
    run.assert_code(0);
    assert_eq!(out.unwrap(), b"Kanata\t0004\nC=\t0\n");
    assert!(
        run.stderr.to_lowercase().contains("window"),
        "no note that the window holds no instruction; stderr: {:?}",
        run.stderr
    );
}

#[test]
fn check_with_a_window_validates_without_writing() {
    let dir = dir_with(&[("in.kanata", &pipeline_sim())]);
    let run = run_in(
        dir.path(),
        &["in.kanata", "--check", "--cycles", "10..20"],
        None,
    );
    run.assert_code(0);
    assert!(run.stdout.is_empty());
    assert_eq!(entries(dir.path()), ["in.kanata"]);
    // The window's repairs (W1) are reported as with an output.
    let written = run_in(
        dir.path(),
        &["in.kanata", "-o", "w.kanata", "--cycles", "10..20"],
        None,
    );
    written.assert_code(0);
    assert_eq!(run.stderr, written.stderr);
    assert!(run.stderr.contains("W1"), "{}", run.stderr);
    // And a bad window is still a usage error.
    run_in(
        dir.path(),
        &["in.kanata", "--check", "--cycles", "9..3"],
        None,
    )
    .assert_code(2);
}

/// `--stats` of a window is the statistics of the window's instructions: what `--stats`
/// says of the window's output converted on its own.
#[test]
fn stats_with_a_window_are_the_windows_statistics() {
    let dir = dir_with(&[("in.kanata", &pipeline_sim())]);
    for window in [
        &["--cycles", "10..20"][..],
        &["--threads", "1"][..],
        &["--insns", "30..60", "--threads", "0"][..],
    ] {
        let mut args = vec!["in.kanata", "-o", "w.kanata", "--stats"];
        args.extend_from_slice(window);
        let run = run_in(dir.path(), &args, None);
        run.assert_code(0);
        let out = fs::read(dir.path().join("w.kanata")).unwrap();
        let stats = String::from_utf8(run.stdout).unwrap();
        let count: usize = stats
            .lines()
            .find_map(|l| l.trim().strip_prefix("instructions"))
            .expect("an instructions line")
            .trim()
            .parse()
            .unwrap();
        assert_eq!(count, insns(&out), "{window:?}: {stats}");
        assert!(count < 85, "{window:?}: {stats}");
        let alone = run_in(
            dir.path(),
            &["w.kanata", "-o", "again.kanata", "--stats"],
            None,
        );
        alone.assert_code(0);
        let alone = String::from_utf8(alone.stdout).unwrap();
        // The first line names the input.
        let body = |s: &str| s.lines().skip(1).collect::<Vec<_>>().join("\n");
        assert_eq!(body(&stats), body(&alone), "{window:?}");
    }
}

#[test]
fn report_json_with_a_window_has_the_window_object() {
    let (run, out, _dir) = window_run(&["--cycles", "10..20", "--report", "json"]);
    run.assert_code(0);
    let out = out.unwrap();
    let objects = json(&run);
    let file = &objects[0];
    assert_eq!(file["type"], "file");
    assert_eq!(file["instructions"], insns(&out) as u64);
    assert_eq!(
        file["lines_out"],
        out.iter().filter(|&&b| b == b'\n').count() as u64
    );
    let window = file["window"].as_object().expect("a window object");
    assert_eq!(
        window.keys().collect::<Vec<_>>(),
        ["indexed", "instructions_read", "stopped_early"]
    );
    // A plain input has no index to read through.
    assert_eq!(window["indexed"], false);
    let read = window["instructions_read"].as_u64().unwrap();
    assert!(read >= insns(&out) as u64 && read < 85, "{window:?}");
    assert_eq!(window["stopped_early"], true);
    assert!(file["repairs"]["W1"].as_u64().unwrap() > 0, "{file}");
    // A window that reaches the end reads every instruction.
    let (run, _, _dir) = window_run(&["--cycles", "30..", "--report", "json"]);
    let file = &json(&run)[0];
    assert_eq!(file["window"]["instructions_read"], 85);
    assert_eq!(file["window"]["stopped_early"], false);
    // Without a window there is no window object.
    let (run, _, _dir) = window_run(&["--report", "json"]);
    assert!(json(&run)[0].get("window").is_none());
}

/// `-d OUTDIR -j 2` with a window over two inputs: each output is what a run on that input
/// alone writes, and `-j 1` writes the same bytes and the same reports.
#[test]
fn batches_with_a_window() {
    let sloppy = fs::read(sample("sloppy.log")).unwrap();
    let dir = dir_with(&[("a.kanata", &pipeline_sim()), ("b.log", &sloppy)]);
    let window = ["--cycles", "5..30", "--threads", "0,1"];
    let batch = |jobs: &str, out: &str| {
        let mut args = vec![
            "a.kanata", "b.log", "-d", out, "-j", jobs, "--report", "json",
        ];
        args.extend_from_slice(&window);
        let run = run_in(dir.path(), &args, None);
        run.assert_code(0);
        run
    };
    let two = batch("2", "two");
    assert_eq!(entries(&dir.path().join("two")), ["a.kanata", "b.kanata"]);
    for (input, output) in [("a.kanata", "a.kanata"), ("b.log", "b.kanata")] {
        let alone = format!("{output}.alone");
        let mut args = vec![input, "-o", alone.as_str()];
        args.extend_from_slice(&window);
        run_in(dir.path(), &args, None).assert_code(0);
        let alone = fs::read(dir.path().join(&alone)).unwrap();
        let batched = fs::read(dir.path().join("two").join(output)).unwrap();
        assert!(
            batched == alone,
            "{input}: the batch output differs from a run alone"
        );
        assert_canonical(&batched, Form::STRICT);
    }
    let one = batch("1", "one");
    let strip = |run: &Run| -> Vec<Value> {
        json(run)
            .into_iter()
            .map(|mut v| {
                let o = v.as_object_mut().unwrap();
                o.remove("seconds");
                if let Some(out) = o.get_mut("output") {
                    *out = Value::from(out.as_str().map(|s| s.replace("one/", "two/")));
                }
                v
            })
            .collect()
    };
    assert_eq!(strip(&one), strip(&two));
    for name in ["a.kanata", "b.kanata"] {
        assert!(
            fs::read(dir.path().join("one").join(name)).unwrap()
                == fs::read(dir.path().join("two").join(name)).unwrap(),
            "{name}: -j 1 and -j 2 differ"
        );
    }
    let objects = json(&two);
    assert!(
        objects[..2].iter().all(|o| o["window"].is_object()),
        "{objects:?}"
    );
}

/// The same window twice gives the same bytes, plain and `.kanata.zst`; the `.zst` holds the
/// plain text.
#[test]
fn the_same_window_twice_gives_the_same_bytes() {
    let dir = dir_with(&[("in.kanata", &pipeline_sim())]);
    let run = |out: &str| {
        run_in(
            dir.path(),
            &[
                "in.kanata",
                "-o",
                out,
                "--cycles",
                "8..25",
                "--threads",
                "1",
            ],
            None,
        )
        .assert_code(0);
        fs::read(dir.path().join(out)).unwrap()
    };
    let plain = run("a.kanata");
    assert!(insns(&plain) > 5);
    assert!(run("b.kanata") == plain);
    let zst = run("a.kanata.zst");
    assert!(run("b.kanata.zst") == zst);
    assert!(decompress(&zst).unwrap() == plain);
    // To stdout, the same text.
    let stdout = run_in(
        dir.path(),
        &[
            "in.kanata",
            "-o",
            "-",
            "--cycles",
            "8..25",
            "--threads",
            "1",
        ],
        None,
    );
    stdout.assert_code(0);
    assert!(stdout.stdout == plain);
}
