//! The seekable, indexed `.kanata.zst` on the command line (issue 13, "Seekable, indexed
//! .kanata.zst"), with the real binary: `--seekable` needs zstd output and contradicts
//! `--no-seekable`, `--frame-size` needs `--seekable` and a size of at least one byte (usage
//! errors, exit 2, nothing written); a window of a seekable file is read through its index
//! (`--report json`: `window.indexed`), `--no-index` reads it from the start and writes the
//! same bytes; seekable output is deterministic, alone and in `-d`/`-j` batches; the `zstd`
//! tool decodes it to the plain text; `--stats` of it is `--stats` of the plain text.
//!
//! What the index answers is checked against the Konata model, and damaged files, in
//! `tests/tests/pp_seekable.rs`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use kanata_tests::canonical::{assert_canonical, Options as Form};
use serde_json::Value;

mod common;
use common::{big_log, run_in, Run};

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../samples")
        .join(name)
}

/// A temporary folder holding `in.kanata` (a canonical log of 3,000 instructions, about
/// 270 kB) and `sim.kanata` (the pipeline sample: two threads, instructions open at the end).
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("in.kanata"), big_log(3000)).unwrap();
    fs::copy(sample("pipeline_sim.kanata"), dir.path().join("sim.kanata")).unwrap();
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

fn json(run: &Run) -> Vec<Value> {
    String::from_utf8(run.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: not JSON: {l}")))
        .collect()
}

#[track_caller]
fn ok(dir: &Path, args: &[&str]) -> Run {
    let run = run_in(dir, args, None);
    run.assert_code(0);
    run
}

/// Writes `input` seekable with frames of `frame_size` to `output` in `dir`; its bytes.
#[track_caller]
fn seekable(dir: &Path, input: &str, output: &str, frame_size: &str) -> Vec<u8> {
    ok(
        dir,
        &[
            input,
            "-o",
            output,
            "--seekable",
            "--frame-size",
            frame_size,
        ],
    );
    fs::read(dir.join(output)).unwrap()
}

/// The number of frames a file holds, as the seek table at its end says (0 when it has
/// none: the last 4 bytes are not the seekable format's magic number).
fn seek_table_frames(bytes: &[u8]) -> u32 {
    let len = bytes.len();
    let le32 = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    match len >= 9 && le32(len - 4) == 0x8F92_EAB1 {
        true => le32(len - 9),
        false => 0,
    }
}

#[test]
fn seekable_output_needs_zstd_and_is_a_usage_error_otherwise() {
    let dir = folder();
    for args in [
        &["in.kanata", "-o", "out.kanata", "--seekable"][..],
        &["in.kanata", "-o", "out.kanata.gz", "--seekable"][..],
        &[
            "in.kanata",
            "-o",
            "out.gz",
            "--compress",
            "gzip",
            "--seekable",
        ][..],
        &[
            "in.kanata",
            "-o",
            "out.kanata",
            "--compress",
            "none",
            "--seekable",
        ][..],
    ] {
        let run = run_in(dir.path(), args, None);
        run.assert_code(2);
        assert!(
            run.stderr.contains("--seekable") && run.stderr.contains("zstd"),
            "{args:?}: the message says --seekable needs zstd: {}",
            run.stderr
        );
        assert_eq!(
            entries(dir.path()),
            ["in.kanata", "sim.kanata"],
            "{args:?}: something was written"
        );
    }
    // To standard output, uncompressed: the same error, nothing on stdout.
    let run = run_in(dir.path(), &["in.kanata", "-o", "-", "--seekable"], None);
    run.assert_code(2);
    assert!(
        run.stdout.is_empty(),
        "{} bytes on stdout",
        run.stdout.len()
    );
}

/// A batch whose outputs are plain `.kanata` (`-d` without `--compress zstd`): the same
/// usage error as a single run, found before any work (as a bad `--level` is), exit 2.
#[test]
fn a_batch_with_seekable_and_plain_outputs_is_a_usage_error() {
    let dir = folder();
    let run = run_in(
        dir.path(),
        &["in.kanata", "sim.kanata", "-d", "outs", "--seekable"],
        None,
    );
    let outs = dir.path().join("outs");
    assert!(
        !outs.exists() || entries(&outs).is_empty(),
        "a batch wrote {:?}",
        entries(&outs)
    );
    assert!(
        run.stderr.contains("--seekable needs zstd"),
        "{}",
        run.stderr
    );
    run.assert_code(2);
}

#[test]
fn seekable_and_no_seekable_together_is_a_usage_error() {
    let dir = folder();
    let run = run_in(
        dir.path(),
        &[
            "in.kanata",
            "-o",
            "o.kanata.zst",
            "--seekable",
            "--no-seekable",
        ],
        None,
    );
    run.assert_code(2);
    assert!(
        run.stderr.contains("--seekable") && run.stderr.contains("--no-seekable"),
        "{}",
        run.stderr
    );
    assert_eq!(entries(dir.path()), ["in.kanata", "sim.kanata"]);
}

#[test]
fn frame_size_needs_seekable_and_at_least_one_byte() {
    let dir = folder();
    for args in [
        &["--frame-size", "4k"][..],
        &["--seekable", "--frame-size", "0"][..],
        &["--seekable", "--frame-size", "abc"][..],
        &["--seekable", "--frame-size=-5"][..],
        &["--seekable", "--frame-size", "1.5"][..],
        &["--seekable", "--frame-size", "100G"][..],
    ] {
        let mut all = vec!["in.kanata", "-o", "o.kanata.zst"];
        all.extend_from_slice(args);
        let run = run_in(dir.path(), &all, None);
        run.assert_code(2);
        assert!(
            run.stderr.contains("frame-size") || run.stderr.contains("frame"),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(
            entries(dir.path()),
            ["in.kanata", "sim.kanata"],
            "{args:?}: something was written"
        );
    }
    // Sizes that are fine: with a suffix, with `_`, one byte.
    for size in ["4k", "1_000", "1", "1M"] {
        let bytes = seekable(dir.path(), "in.kanata", "o.kanata.zst", size);
        assert!(seek_table_frames(&bytes) >= 1, "--frame-size {size}");
    }
}

/// `--frame-size` with `--no-seekable` (one frame: there is no frame size to give) is the
/// same usage error as `--frame-size` alone.
#[test]
fn frame_size_with_no_seekable_is_a_usage_error() {
    let dir = folder();
    let run = run_in(
        dir.path(),
        &[
            "in.kanata",
            "-o",
            "o.kanata.zst",
            "--no-seekable",
            "--frame-size",
            "4k",
        ],
        None,
    );
    run.assert_code(2);
    assert_eq!(entries(dir.path()), ["in.kanata", "sim.kanata"]);
}

#[test]
fn a_window_of_a_seekable_file_is_read_through_its_index_and_no_index_gives_the_same_bytes() {
    let dir = folder();
    let bytes = seekable(dir.path(), "in.kanata", "s.kanata.zst", "2k");
    let frames = seek_table_frames(&bytes);
    assert!(frames > 50, "{frames} frames");
    for window in [
        &["--cycles", "2000..2100"][..],
        &["--cycles", "2990.."][..],
        &["--insns", "1500..1510"][..],
        &["--sim-cycles", "100..200", "--threads", "0"][..],
    ] {
        let cut = |input: &str, output: &str, extra: &[&str]| {
            let mut args = vec![input, "-o", output, "--report", "json"];
            args.extend_from_slice(window);
            args.extend_from_slice(extra);
            let run = ok(dir.path(), &args);
            let file = json(&run).remove(0);
            assert_eq!(file["type"], "file", "{file}");
            (file, fs::read(dir.path().join(output)).unwrap())
        };
        let (indexed, out) = cut("s.kanata.zst", "w1.kanata", &[]);
        assert_eq!(indexed["window"]["indexed"], true, "{window:?}: {indexed}");
        let (from_start, out_from_start) = cut("s.kanata.zst", "w2.kanata", &["--no-index"]);
        assert_eq!(
            from_start["window"]["indexed"], false,
            "{window:?}: {from_start}"
        );
        let (plain, out_plain) = cut("in.kanata", "w3.kanata", &[]);
        assert_eq!(plain["window"]["indexed"], false, "{window:?}: {plain}");
        assert!(out == out_from_start, "{window:?}: --no-index differs");
        assert!(
            out == out_plain,
            "{window:?}: the plain input's window differs"
        );
        assert!(!out.is_empty());
        assert_canonical(&out, Form::STRICT);
        for key in ["instructions", "retired", "lines_out", "last_cycle"] {
            assert_eq!(indexed[key], from_start[key], "{window:?}: {key}");
            assert_eq!(indexed[key], plain[key], "{window:?}: {key}");
        }
        // Through the index, a few frames are read, not the file.
        let read = indexed["bytes_in"].as_u64().expect("bytes_in");
        assert!(
            read > 0 && read * 10 < bytes.len() as u64,
            "{window:?}: read {read} of {} bytes through the index",
            bytes.len()
        );
    }
    // A window open at its start has nothing to seek to: read from the start.
    let run = ok(
        dir.path(),
        &[
            "s.kanata.zst",
            "-o",
            "w.kanata",
            "--cycles",
            "..10",
            "--report",
            "json",
        ],
    );
    assert_eq!(json(&run)[0]["window"]["indexed"], false);
    // Written to a `.kanata.zst` or to stdout, the same window.
    let run = ok(
        dir.path(),
        &[
            "s.kanata.zst",
            "-o",
            "w.kanata.zst",
            "--cycles",
            "2000..2100",
        ],
    );
    drop(run);
    let zst = fs::read(dir.path().join("w.kanata.zst")).unwrap();
    let stdout = ok(
        dir.path(),
        &["s.kanata.zst", "-o", "-", "--cycles", "2000..2100"],
    );
    assert!(zstd::decode_all(&zst[..]).unwrap() == stdout.stdout);
    // And a seekable window of a seekable file.
    ok(
        dir.path(),
        &[
            "s.kanata.zst",
            "-o",
            "ws.kanata.zst",
            "--cycles",
            "2000..2100",
            "--seekable",
            "--frame-size",
            "1k",
        ],
    );
    let ws = fs::read(dir.path().join("ws.kanata.zst")).unwrap();
    assert!(seek_table_frames(&ws) > 1);
    assert!(zstd::decode_all(&ws[..]).unwrap() == stdout.stdout);
}

#[test]
fn seekable_output_is_deterministic_alone_and_in_batches() {
    let dir = folder();
    for input in ["in.kanata", "sim.kanata"] {
        let a = seekable(dir.path(), input, "a.kanata.zst", "3k");
        let b = seekable(dir.path(), input, "b.kanata.zst", "3k");
        assert!(a == b, "{input}: two runs differ");
        // The same text from a seekable input (a canonical Kanata input gives itself back).
        let c = seekable(dir.path(), "a.kanata.zst", "c.kanata.zst", "3k");
        assert!(
            a == c,
            "{input}: converting the seekable output again changed it"
        );
        // Through stdin.
        let stdin = fs::read(dir.path().join(input)).unwrap();
        let run = run_in(
            dir.path(),
            &[
                "-",
                "-o",
                "d.kanata.zst",
                "--seekable",
                "--frame-size",
                "3k",
            ],
            Some(&stdin),
        );
        run.assert_code(0);
        assert!(
            fs::read(dir.path().join("d.kanata.zst")).unwrap() == a,
            "{input}: from stdin"
        );
        // The default frame size, and --no-seekable (one frame, what no flag writes).
        ok(dir.path(), &[input, "-o", "e.kanata.zst", "--seekable"]);
        ok(dir.path(), &[input, "-o", "e2.kanata.zst", "--seekable"]);
        let e = fs::read(dir.path().join("e.kanata.zst")).unwrap();
        assert!(e == fs::read(dir.path().join("e2.kanata.zst")).unwrap());
        assert!(seek_table_frames(&e) >= 1);
        ok(dir.path(), &[input, "-o", "f.kanata.zst", "--no-seekable"]);
        ok(dir.path(), &[input, "-o", "g.kanata.zst"]);
        let f = fs::read(dir.path().join("f.kanata.zst")).unwrap();
        assert_eq!(
            seek_table_frames(&f),
            0,
            "{input}: --no-seekable has a seek table"
        );
        assert!(f == fs::read(dir.path().join("g.kanata.zst")).unwrap());
        assert!(zstd::decode_all(&f[..]).unwrap() == zstd::decode_all(&a[..]).unwrap());
    }
    // `-d` with `-j 2` and `-j 1`: each output is the run alone.
    let batch = |jobs: &str, out: &str| {
        ok(
            dir.path(),
            &[
                "in.kanata",
                "sim.kanata",
                "-d",
                out,
                "-j",
                jobs,
                "--compress",
                "zstd",
                "--seekable",
                "--frame-size",
                "3k",
            ],
        );
    };
    batch("2", "two");
    batch("1", "one");
    assert_eq!(
        entries(&dir.path().join("two")),
        ["in.kanata.zst", "sim.kanata.zst"]
    );
    for (input, name) in [
        ("in.kanata", "in.kanata.zst"),
        ("sim.kanata", "sim.kanata.zst"),
    ] {
        let alone = seekable(dir.path(), input, "alone.kanata.zst", "3k");
        let two = fs::read(dir.path().join("two").join(name)).unwrap();
        let one = fs::read(dir.path().join("one").join(name)).unwrap();
        assert!(two == alone, "{input}: -j 2 differs from a run alone");
        assert!(one == alone, "{input}: -j 1 differs from a run alone");
        assert!(
            seek_table_frames(&two) > 1,
            "{input}: the batch output is seekable"
        );
    }
}

/// Whether the `zstd` command-line tool is there.
fn zstd_tool() -> bool {
    match Command::new("zstd").arg("--version").output() {
        Ok(out) => out.status.success(),
        Err(_) => {
            eprintln!("note: the zstd command-line tool is not installed; test skipped");
            false
        }
    }
}

#[test]
fn the_zstd_tool_decodes_a_seekable_file_to_the_plain_text() {
    if !zstd_tool() {
        return;
    }
    let dir = folder();
    for input in ["in.kanata", "sim.kanata"] {
        seekable(dir.path(), input, "s.kanata.zst", "1k");
        ok(dir.path(), &[input, "-o", "plain.kanata"]);
        let plain = fs::read(dir.path().join("plain.kanata")).unwrap();
        let decoded = Command::new("zstd")
            .args(["-d", "-c", "-q", "s.kanata.zst"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            decoded.status.success(),
            "{input}: zstd -d fails: {}",
            String::from_utf8_lossy(&decoded.stderr)
        );
        assert!(
            decoded.stdout == plain,
            "{input}: zstd -d is not the plain text"
        );
        let test = Command::new("zstd")
            .args(["-t", "-q", "s.kanata.zst"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            test.status.success(),
            "{input}: zstd -t: {}",
            String::from_utf8_lossy(&test.stderr)
        );
    }
}

#[test]
fn stats_of_a_seekable_file_are_the_stats_of_the_plain_text() {
    let dir = folder();
    let body = |s: &[u8]| {
        // The first line names the input.
        String::from_utf8(s.to_vec())
            .unwrap()
            .lines()
            .skip(1)
            .collect::<Vec<_>>()
            .join("\n")
    };
    for input in ["in.kanata", "sim.kanata"] {
        seekable(dir.path(), input, "s.kanata.zst", "1k");
        for window in [
            &[][..],
            &["--cycles", "20..40"][..],
            &["--insns", "10..", "--threads", "1"][..],
        ] {
            let stats = |file: &str, extra: &[&str]| {
                let mut args = vec![file, "--stats"];
                args.extend_from_slice(window);
                args.extend_from_slice(extra);
                let run = ok(dir.path(), &args);
                body(&run.stdout)
            };
            let plain = stats(input, &[]);
            assert!(
                plain.contains("instructions"),
                "{input} {window:?}: {plain}"
            );
            assert_eq!(stats("s.kanata.zst", &[]), plain, "{input} {window:?}");
            assert_eq!(
                stats("s.kanata.zst", &["--no-index"]),
                plain,
                "{input} {window:?}: --no-index"
            );
        }
    }
}
