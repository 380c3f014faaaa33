//! The `kanata-pp` command line, driven as a user drives it: the real binary, real files in
//! a temporary directory, stdin and stdout. Exit codes (0 converted, 1 input or I/O error,
//! 2 usage error), nothing left behind by a failed run, output naming and compression,
//! `--check` and `--strict`, the repair report on stderr, determinism, and a closed pipe.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;
use common::{big_log, run_in, BIN};

/// A small canonical trace: converting it changes nothing and reports nothing.
const CANONICAL: &str = "Kanata\t0004\nC=\t0\nI\t0\t0\t0\nL\t0\t0\t0x1000: addi x1, x0, 5\n\
                         S\t0\t0\tF\nI\t1\t1\t0\nS\t1\t0\tF\nC\t1\nE\t0\t0\tF\nS\t0\t0\tX\n\
                         E\t1\t0\tF\nS\t1\t0\tX\nC\t1\nE\t0\t0\tX\nR\t0\t0\t0\nW\t1\t0\t0\n\
                         C\t1\nE\t1\t0\tX\nR\t1\t1\t0\n";

/// The same trace written sloppily: padding (Q1), a comment (Q3), `C 1` twice (Q4), no `E`.
const SLOPPY: &str = "Kanata\t0004\nC=\t0\nI\t  0\t  0\t  0\nL\t0\t0\t0x1000: addi x1, x0, 5\n\
                      S\t0\t0\tF\t\nI\t1\t1\t0\nS\t1\t0\tF\n# cycle 1\nC\t1\nS\t0\t0\tX\n\
                      S\t1\t0\tX\nC\t1\nR\t0\t0\t0\nW\t1\t0\t0\nC\t1\nR\t1\t1\t0\n";

/// A temporary directory holding `files`.
fn dir_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    dir
}

/// The names in `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn gzip(bytes: &[u8], level: u32) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("valid gzip");
    out
}

fn unzstd(bytes: &[u8]) -> Vec<u8> {
    zstd::decode_all(bytes).expect("valid zstd")
}

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../samples")
        .join(name)
}

// ----- the happy path -----

#[test]
fn sloppy_input_converts_to_the_canonical_trace_and_exits_0() {
    let dir = dir_with(&[("run.log", SLOPPY.as_bytes())]);
    run_in(dir.path(), &["run.log", "-o", "run.kanata"], None).assert_code(0);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("run.kanata")).unwrap(),
        CANONICAL
    );
    assert_eq!(entries(dir.path()), ["run.kanata", "run.log"]);
}

#[test]
fn a_successful_run_replaces_an_existing_output() {
    let dir = dir_with(&[("run.log", SLOPPY.as_bytes()), ("run.kanata", b"old\n")]);
    run_in(dir.path(), &["run.log", "-o", "run.kanata", "-q"], None).assert_code(0);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("run.kanata")).unwrap(),
        CANONICAL
    );
    assert_eq!(entries(dir.path()), ["run.kanata", "run.log"]);
}

#[test]
fn a_canonical_file_converts_to_the_same_bytes_with_nothing_on_stderr() {
    let dir = dir_with(&[("in.kanata", CANONICAL.as_bytes())]);
    let run = run_in(dir.path(), &["in.kanata", "-o", "out.kanata"], None);
    run.assert_code(0);
    assert_eq!(run.stderr, "", "a canonical input needs no repair");
    assert!(run.stdout.is_empty());
    assert_eq!(
        std::fs::read(dir.path().join("out.kanata")).unwrap(),
        CANONICAL.as_bytes()
    );
}

#[test]
fn the_committed_canonical_samples_convert_to_themselves() {
    for name in ["sloppy.kanata", "pipeline_sim.kanata"] {
        let path = sample(name);
        if !path.exists() {
            continue;
        }
        let original = std::fs::read(&path).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let run = run_in(dir.path(), &[path.to_str().unwrap(), "-o", "-"], None);
        run.assert_code(0);
        assert_eq!(run.stderr, "", "{name}");
        assert!(
            run.stdout == original,
            "{name} did not come back byte-identical"
        );
    }
}

// ----- exit codes: input errors (1) -----

/// Runs a conversion of `input` (named `name`) into `out.kanata` beside an existing
/// `out.kanata`; asserts exit 1, a message on stderr, no temporary file left behind and the
/// existing output untouched. Returns stderr.
#[track_caller]
fn assert_fails_cleanly(name: &str, input: &[u8], extra: &[&str]) -> String {
    let before = b"an older output, to be left as it is\n";
    let dir = dir_with(&[(name, input), ("out.kanata", before)]);
    let mut args = vec![name, "-o", "out.kanata"];
    args.extend_from_slice(extra);
    let run = run_in(dir.path(), &args, None);
    run.assert_code(1);
    assert!(run.stderr.starts_with("kanata-pp: "), "{}", run.stderr);
    assert!(run.stdout.is_empty());
    let mut want = vec![name.to_owned(), "out.kanata".to_owned()];
    want.sort();
    assert_eq!(
        entries(dir.path()),
        want,
        "a failed run leaves no temporary `.kanata-pp-*.tmp` file"
    );
    assert_eq!(
        std::fs::read(dir.path().join("out.kanata")).unwrap(),
        before,
        "a failed run leaves an existing output untouched"
    );
    // Without an existing output, none is created.
    let dir = dir_with(&[(name, input)]);
    run_in(dir.path(), &args, None).assert_code(1);
    assert_eq!(entries(dir.path()), [name]);
    run.stderr
}

#[test]
fn garbage_input_exits_1_and_leaves_nothing_behind() {
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let stderr = assert_fails_cleanly("garbage.bin", &garbage, &[]);
    assert!(stderr.contains("garbage.bin"), "{stderr}");
}

#[test]
fn a_file_that_is_not_kanata_exits_1() {
    let csv = b"cycle,pc,stage\n0,0x1000,F\n1,0x1000,D\n";
    let stderr = assert_fails_cleanly("trace.csv", csv, &[]);
    assert!(stderr.contains("not a Kanata log"), "{stderr}");
    // A header further down than the comments and blank lines allow is not one either.
    assert_fails_cleanly("late.log", b"hello\nKanata\t0004\n", &[]);
}

#[test]
fn empty_input_exits_1() {
    let stderr = assert_fails_cleanly("empty.log", b"", &[]);
    assert!(stderr.contains("empty"), "{stderr}");
    assert_fails_cleanly("blank.log", b"\n\n# only a comment\n", &[]);
    // Empty stdin too.
    let dir = tempfile::tempdir().unwrap();
    run_in(dir.path(), &["-", "-o", "out.kanata"], Some(b"")).assert_code(1);
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn a_truncated_gzip_input_exits_1() {
    // Cut early (the first bytes cannot even be read) and late (half the trace was read and
    // written to the temporary file before the stream ended).
    let gz = gzip(&big_log(20_000), 6);
    for cut in [gz.len() / 50, gz.len() / 2, gz.len() - 4] {
        assert_fails_cleanly("run.log.gz", &gz[..cut], &[]);
    }
}

#[test]
fn a_truncated_zstd_input_exits_1() {
    let zst = zstd::encode_all(&big_log(20_000)[..], 3).unwrap();
    for cut in [zst.len() / 50, zst.len() / 2, zst.len() - 4] {
        assert_fails_cleanly("run.log.zst", &zst[..cut], &[]);
    }
}

#[test]
fn time_going_backwards_exits_1_and_names_the_line() {
    let log = b"Kanata\t0004\nC=\t10\nI\t0\t0\t0\nC\t1\nC\t-1\nR\t0\t0\t0\n";
    let stderr = assert_fails_cleanly("back.log", log, &[]);
    assert!(stderr.contains("back.log:5:"), "{stderr}");
    // A mid-file `C=` before the current cycle.
    let log = b"Kanata\t0004\nC=\t10\nI\t0\t0\t0\nC\t5\nC=\t12\nR\t0\t0\t0\n";
    let stderr = assert_fails_cleanly("back.log", log, &[]);
    assert!(stderr.contains("back.log:5:"), "{stderr}");
    // Late in a large file, when much of the output is already written.
    let mut log = big_log(20_000);
    log.extend_from_slice(b"C\t-3\n");
    assert_fails_cleanly("back.log", &log, &[]);
}

#[test]
fn a_missing_input_or_output_directory_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    run_in(dir.path(), &["no-such.log", "-o", "out.kanata"], None).assert_code(1);
    let dir = dir_with(&[("run.log", SLOPPY.as_bytes())]);
    run_in(
        dir.path(),
        &["run.log", "-o", "no-such-dir/out.kanata"],
        None,
    )
    .assert_code(1);
    assert_eq!(entries(dir.path()), ["run.log"]);
}

#[test]
fn cycle_overflow_exits_1() {
    let log = b"Kanata\t0004\nC=\t0\nI\t0\t0\t0\nC\t9223372036854775807\nC\t1\nR\t0\t0\t0\n";
    let stderr = assert_fails_cleanly("long.log", log, &[]);
    assert!(stderr.contains("long.log:5:"), "{stderr}");
}

#[test]
fn a_directory_as_input_or_output_exits_1_and_leaves_nothing_behind() {
    let dir = dir_with(&[("run.log", SLOPPY.as_bytes())]);
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    run_in(dir.path(), &["sub", "-o", "out.kanata"], None).assert_code(1);
    // The whole conversion runs, then the rename onto a directory fails.
    run_in(dir.path(), &["run.log", "-o", "sub"], None).assert_code(1);
    assert_eq!(entries(dir.path()), ["run.log", "sub"]);
    assert!(entries(&dir.path().join("sub")).is_empty());
}

// ----- exit codes: usage errors (2) -----

#[test]
fn an_unknown_flag_or_a_missing_input_exits_2() {
    let dir = dir_with(&[("run.log", SLOPPY.as_bytes())]);
    run_in(dir.path(), &["run.log", "--no-such-flag"], None).assert_code(2);
    run_in(dir.path(), &[], None).assert_code(2);
    run_in(dir.path(), &["run.log", "--compress", "bzip2"], None).assert_code(2);
    run_in(dir.path(), &["run.log", "-q", "-v"], None).assert_code(2);
    assert_eq!(entries(dir.path()), ["run.log"]);
}

#[test]
fn compress_contradicting_the_output_extension_exits_2() {
    let dir = dir_with(&[("run.log", SLOPPY.as_bytes())]);
    for args in [
        ["run.log", "--compress", "zstd", "-o", "out.kanata.gz"],
        ["run.log", "--compress", "gzip", "-o", "out.kanata.zst"],
        ["run.log", "--compress", "none", "-o", "out.kanata.gz"],
        ["run.log", "--compress", "gzip", "-o", "out.kanata"],
    ] {
        let run = run_in(dir.path(), &args, None);
        run.assert_code(2);
        assert!(run.stderr.contains("extension"), "{}", run.stderr);
    }
    assert_eq!(entries(dir.path()), ["run.log"]);
}

#[test]
fn a_default_output_name_that_would_overwrite_the_input_exits_2() {
    let dir = dir_with(&[("x.kanata", SLOPPY.as_bytes())]);
    let run = run_in(dir.path(), &["x.kanata"], None);
    run.assert_code(2);
    assert!(run.stderr.contains("-o"), "{}", run.stderr);
    assert_eq!(entries(dir.path()), ["x.kanata"]);
    assert_eq!(
        std::fs::read(dir.path().join("x.kanata")).unwrap(),
        SLOPPY.as_bytes()
    );
}

#[test]
fn a_compression_level_out_of_range_is_a_usage_error() {
    // gzip levels are 0-9 and zstd levels at most 22: a level outside is a mistake on the
    // command line (exit 2), not a problem of the input (exit 1), and the message should
    // not blame the input file.
    let dir = dir_with(&[("run.log", SLOPPY.as_bytes())]);
    for args in [
        ["run.log", "-o", "out.kanata.gz", "--level", "10"],
        ["run.log", "-o", "out.kanata.zst", "--level", "99"],
    ] {
        let run = run_in(dir.path(), &args, None);
        assert_eq!(entries(dir.path()), ["run.log"]);
        run.assert_code(2);
        assert!(!run.stderr.contains("run.log"), "{}", run.stderr);
    }
}

// ----- stdin and stdout -----

#[test]
fn dash_o_dash_writes_the_trace_to_stdout() {
    let dir = dir_with(&[("run.log", SLOPPY.as_bytes())]);
    let run = run_in(dir.path(), &["run.log", "-o", "-", "-q"], None);
    run.assert_code(0);
    assert_eq!(run.stdout, CANONICAL.as_bytes());
    assert_eq!(entries(dir.path()), ["run.log"]);
}

#[test]
fn dash_reads_stdin_and_writes_stdout_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path(), &["-"], Some(SLOPPY.as_bytes()));
    run.assert_code(0);
    assert_eq!(run.stdout, CANONICAL.as_bytes());
    assert!(run.stderr.contains("<stdin>: Q1:"), "{}", run.stderr);
    // Compressed stdin is recognised too; output to a file.
    let run = run_in(
        dir.path(),
        &["-", "-o", "out.kanata"],
        Some(&gzip(SLOPPY.as_bytes(), 6)),
    );
    run.assert_code(0);
    assert_eq!(
        std::fs::read(dir.path().join("out.kanata")).unwrap(),
        CANONICAL.as_bytes()
    );
}

#[test]
fn compressed_input_is_recognised_by_its_magic_bytes_not_its_name() {
    let zst = zstd::encode_all(SLOPPY.as_bytes(), 3).unwrap();
    let dir = dir_with(&[
        ("gzip-named.txt", &gzip(SLOPPY.as_bytes(), 6)),
        ("zstd-named.log.gz", &zst),
        ("plain-named.log.zst", SLOPPY.as_bytes()),
    ]);
    for name in ["gzip-named.txt", "zstd-named.log.gz", "plain-named.log.zst"] {
        let run = run_in(dir.path(), &[name, "-o", "-", "-q"], None);
        run.assert_code(0);
        assert_eq!(run.stdout, CANONICAL.as_bytes(), "{name}");
    }
    // Several gzip members (pigz, concatenated files) are one stream.
    let (head, tail) = SLOPPY.split_at(SLOPPY.find("# cycle 1").unwrap());
    let mut members = gzip(head.as_bytes(), 6);
    members.extend_from_slice(&gzip(tail.as_bytes(), 1));
    let run = run_in(dir.path(), &["-", "-o", "-", "-q"], Some(&members));
    run.assert_code(0);
    assert_eq!(run.stdout, CANONICAL.as_bytes());
}

#[test]
fn a_closed_stdout_pipe_ends_the_run_with_exit_0() {
    // `kanata-pp big.log -o - | head -1`: the reader goes away after one line.
    let dir = dir_with(&[("big.log", &big_log(20_000))]);
    for compress in ["none", "gzip", "zstd"] {
        let mut child = Command::new(BIN)
            .args(["big.log", "-o", "-", "--compress", compress])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first = Vec::new();
        stdout.read_until(b'\n', &mut first).unwrap();
        assert!(!first.is_empty());
        drop(stdout);
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(
            status.success(),
            "--compress {compress}: {status}, stderr: {stderr}"
        );
        assert!(
            !stderr.contains("Broken pipe") && !stderr.contains("kanata-pp:"),
            "a closed pipe is a normal end, not an error: {stderr}"
        );
    }
}

// ----- output names and compression -----

#[test]
fn the_default_output_is_the_input_name_with_kanata_beside_it() {
    let dir = dir_with(&[("run.log.gz", &gzip(SLOPPY.as_bytes(), 6))]);
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::rename(
        dir.path().join("run.log.gz"),
        dir.path().join("sub/run.log.gz"),
    )
    .unwrap();
    // Run from the parent: the output goes beside the input, not into the working directory.
    run_in(dir.path(), &["sub/run.log.gz", "-q"], None).assert_code(0);
    assert_eq!(entries(dir.path()), ["sub"]);
    assert_eq!(
        entries(&dir.path().join("sub")),
        ["run.kanata", "run.log.gz"]
    );
    assert_eq!(
        std::fs::read(dir.path().join("sub/run.kanata")).unwrap(),
        CANONICAL.as_bytes(),
        "the default output is plain, whatever the input's compression"
    );
    // With --compress, the default name takes the compression's extension.
    run_in(dir.path(), &["sub/run.log.gz", "--compress", "zstd"], None).assert_code(0);
    let zst = std::fs::read(dir.path().join("sub/run.kanata.zst")).unwrap();
    assert_eq!(unzstd(&zst), CANONICAL.as_bytes());
    // An input without an extension.
    let dir = dir_with(&[("trace", SLOPPY.as_bytes())]);
    run_in(dir.path(), &["trace"], None).assert_code(0);
    assert_eq!(entries(dir.path()), ["trace", "trace.kanata"]);
}

#[test]
fn compression_follows_the_output_extension() {
    let dir = dir_with(&[("run.log", SLOPPY.as_bytes())]);
    run_in(
        dir.path(),
        &["run.log", "-o", "a.kanata.gz", "-o", "b.kanata.gz"],
        None,
    )
    .assert_code(2);
    run_in(dir.path(), &["run.log", "-o", "out.kanata.gz"], None).assert_code(0);
    run_in(dir.path(), &["run.log", "-o", "out.kanata.zst"], None).assert_code(0);
    run_in(dir.path(), &["run.log", "-o", "out.kanata"], None).assert_code(0);
    let gz = std::fs::read(dir.path().join("out.kanata.gz")).unwrap();
    let zst = std::fs::read(dir.path().join("out.kanata.zst")).unwrap();
    let plain = std::fs::read(dir.path().join("out.kanata")).unwrap();
    assert_eq!(&gz[..2], &[0x1f, 0x8b], "gzip magic");
    assert_eq!(&zst[..4], &[0x28, 0xb5, 0x2f, 0xfd], "zstd magic");
    assert_eq!(plain, CANONICAL.as_bytes());
    assert_eq!(gunzip(&gz), plain);
    assert_eq!(unzstd(&zst), plain);
    // --compress on stdout, where there is no extension.
    let run = run_in(
        dir.path(),
        &["run.log", "-o", "-", "--compress", "gzip"],
        None,
    );
    run.assert_code(0);
    assert_eq!(gunzip(&run.stdout), plain);
    // --compress agreeing with the extension is fine.
    run_in(
        dir.path(),
        &["run.log", "-o", "c.kanata.zst", "--compress", "zstd"],
        None,
    )
    .assert_code(0);
}

#[test]
fn level_changes_the_compressed_bytes_but_not_the_trace() {
    let log = big_log(5_000);
    let dir = dir_with(&[("big.log", &log)]);
    let mut texts = Vec::new();
    for (out, level) in [
        ("fast.kanata.gz", "1"),
        ("best.kanata.gz", "9"),
        ("fast.kanata.zst", "1"),
        ("best.kanata.zst", "19"),
    ] {
        run_in(dir.path(), &["big.log", "-o", out, "--level", level], None).assert_code(0);
        texts.push(std::fs::read(dir.path().join(out)).unwrap());
    }
    assert_ne!(texts[0], texts[1]);
    assert_ne!(texts[2], texts[3]);
    assert!(texts[1].len() < texts[0].len() && texts[3].len() < texts[2].len());
    assert_eq!(gunzip(&texts[0]), log);
    assert_eq!(gunzip(&texts[1]), log);
    assert_eq!(unzstd(&texts[2]), log);
    assert_eq!(unzstd(&texts[3]), log);
}

#[test]
fn the_same_input_gives_the_same_bytes_every_run() {
    let sloppy = std::fs::read(sample("sloppy.log")).unwrap();
    // Large enough for many output buffers and the background compressor's hand-offs, with
    // a padded field on every `I` line to repair.
    let big = String::from_utf8(big_log(20_000))
        .unwrap()
        .replace("\t0\nL", "\t 0\nL")
        .into_bytes();
    let dir = dir_with(&[("sloppy.log", &sloppy), ("big.log", &big)]);
    for input in ["sloppy.log", "big.log"] {
        for ext in ["kanata", "kanata.gz", "kanata.zst"] {
            let first = format!("first.{ext}");
            let second = format!("second.{ext}");
            run_in(dir.path(), &[input, "-o", &first, "-q"], None).assert_code(0);
            run_in(dir.path(), &[input, "-o", &second, "-q"], None).assert_code(0);
            let a = std::fs::read(dir.path().join(&first)).unwrap();
            let b = std::fs::read(dir.path().join(&second)).unwrap();
            assert!(a == b, "{input} -> .{ext}: two runs differ");
            // stdout gives the same bytes as a file.
            let run = run_in(
                dir.path(),
                &[input, "-o", "-", "-q", "--compress", compress_of(ext)],
                None,
            );
            assert!(
                run.stdout == a,
                "{input} -> .{ext}: stdout differs from the file"
            );
        }
    }
}

fn compress_of(ext: &str) -> &'static str {
    match ext {
        "kanata.gz" => "gzip",
        "kanata.zst" => "zstd",
        _ => "none",
    }
}

// ----- --check and --strict -----

#[test]
fn check_writes_nothing_and_exits_0_when_the_input_converts() {
    let dir = dir_with(&[("run.log", SLOPPY.as_bytes()), ("bad.log", b"hello\n")]);
    let run = run_in(dir.path(), &["--check", "run.log"], None);
    run.assert_code(0);
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("run.log: Q1:"), "{}", run.stderr);
    // Even with -o, nothing is written.
    run_in(
        dir.path(),
        &["--check", "run.log", "-o", "out.kanata"],
        None,
    )
    .assert_code(0);
    let run = run_in(dir.path(), &["--check", "bad.log"], None);
    run.assert_code(1);
    assert!(run.stdout.is_empty());
    assert_eq!(entries(dir.path()), ["bad.log", "run.log"]);
}

#[test]
fn strict_fails_on_any_repair_and_passes_a_canonical_input() {
    let dir = dir_with(&[
        ("run.log", SLOPPY.as_bytes()),
        ("good.kanata", CANONICAL.as_bytes()),
    ]);
    let run = run_in(
        dir.path(),
        &["run.log", "--strict", "-o", "out.kanata"],
        None,
    );
    run.assert_code(1);
    // The message names the first repair: rule and line.
    assert!(run.stderr.contains("run.log:3:"), "{}", run.stderr);
    assert!(run.stderr.contains("Q1"), "{}", run.stderr);
    assert_eq!(entries(dir.path()), ["good.kanata", "run.log"]);
    run_in(dir.path(), &["run.log", "--strict", "--check"], None).assert_code(1);

    let run = run_in(
        dir.path(),
        &["good.kanata", "--strict", "-o", "out.kanata"],
        None,
    );
    run.assert_code(0);
    assert_eq!(run.stderr, "");
    assert_eq!(
        std::fs::read(dir.path().join("out.kanata")).unwrap(),
        CANONICAL.as_bytes()
    );
    run_in(dir.path(), &["good.kanata", "--strict", "--check"], None).assert_code(0);
}

// ----- the report on stderr -----

/// The report's sections: (summary line, example lines).
fn sections(stderr: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in stderr.lines() {
        if let Some(example) = line.strip_prefix("  ") {
            out.last_mut()
                .expect("examples follow a summary line")
                .1
                .push(example.to_owned());
        } else {
            out.push((line.to_owned(), Vec::new()));
        }
    }
    out
}

/// The count at the end of a summary line: `… (35 lines)`.
fn count_of(summary: &str) -> usize {
    let open = summary.rfind('(').unwrap();
    summary[open + 1..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn the_report_has_a_line_per_rule_and_at_most_five_examples() {
    let path = sample("sloppy.log");
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path(), &[path.to_str().unwrap(), "--check"], None);
    run.assert_code(0);
    let name = path.to_str().unwrap();
    let sections = sections(&run.stderr);
    assert!(sections.len() >= 10, "{}", run.stderr);
    let mut more_seen = false;
    for (summary, examples) in &sections {
        // `<input>: Q3: blank, comment or unknown lines dropped (35 lines)`
        let rest = summary
            .strip_prefix(&format!("{name}: Q"))
            .unwrap_or_else(|| panic!("summary line {summary:?}"));
        assert!(rest.split(':').next().unwrap().len() <= 3, "{summary}");
        let count = count_of(summary);
        let shown: Vec<&String> = examples.iter().filter(|e| e.starts_with("line ")).collect();
        assert_eq!(shown.len(), count.min(5), "{summary}: {examples:?}");
        if count > 5 {
            more_seen = true;
            assert_eq!(
                examples.last().unwrap(),
                &format!("… and {} more (-v shows all)", count - 5)
            );
        } else {
            assert_eq!(examples.len(), count, "{summary}");
        }
    }
    assert!(
        more_seen,
        "sloppy.log has a rule with more than five repairs"
    );
}

#[test]
fn verbose_shows_every_example_and_a_summary() {
    let path = sample("sloppy.log");
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path(), &[path.to_str().unwrap(), "--check", "-v"], None);
    run.assert_code(0);
    assert!(
        !run.stderr.contains("more (-v shows all)"),
        "{}",
        run.stderr
    );
    let sections = sections(&run.stderr);
    let mut rules = 0;
    for (summary, examples) in &sections {
        if summary.contains(": Q") {
            rules += 1;
            assert_eq!(examples.len(), count_of(summary), "{summary}");
        }
    }
    assert!(rules >= 10);
    // The last line sums the run up.
    assert!(
        run.stderr
            .contains("7 instructions (4 retired, 2 flushed, 1 open)"),
        "{}",
        run.stderr
    );
}

#[test]
fn quiet_prints_nothing_on_success_but_still_prints_errors() {
    let dir = dir_with(&[("run.log", SLOPPY.as_bytes()), ("bad.log", b"hello\n")]);
    let run = run_in(dir.path(), &["run.log", "-o", "out.kanata", "-q"], None);
    run.assert_code(0);
    assert_eq!(run.stderr, "");
    assert!(run.stdout.is_empty());
    let run = run_in(dir.path(), &["bad.log", "-o", "bad.kanata", "-q"], None);
    run.assert_code(1);
    assert!(run.stderr.contains("bad.log"), "{}", run.stderr);
}

#[test]
fn help_shows_examples_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path(), &["--help"], None);
    run.assert_code(0);
    let help = String::from_utf8(run.stdout).unwrap();
    assert!(help.contains("Examples:"), "{help}");
    assert!(help.contains("kanata-pp run.log -o run.kanata"), "{help}");
    assert!(help.contains("kanata-pp - -o -"), "{help}");
    assert!(help.contains("Exit codes: 0"), "{help}");
    for flag in [
        "--check",
        "--strict",
        "--compress",
        "--level",
        "--late-window",
        "--renumber-retire",
        "--close-open",
        "--dedupe",
        "--stretch-zero",
        "--strip-prefix",
        "--compact",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
}

// ----- bugs found while writing these tests (kept as regression tests) -----

#[test]
fn q4b_a_bare_c_is_not_also_reported_as_space_separated() {
    // `C` alone has no separator at all; Q19 ("fields separated by spaces") does not apply.
    let dir = dir_with(&[(
        "bare.log",
        b"Kanata\t0004\nC=\t0\nI\t0\t0\t0\nC\nR\t0\t0\t0\n",
    )]);
    let run = run_in(dir.path(), &["bare.log", "--check"], None);
    run.assert_code(0);
    assert!(run.stderr.contains("bare.log: Q4b:"), "{}", run.stderr);
    assert!(!run.stderr.contains("Q19"), "{}", run.stderr);
}

#[test]
fn q3_a_trailing_comment_is_reported_once_under_q3() {
    // A trailing ` // comment` is Q3's; the blank before `//` is part of it, not Q1 padding.
    let dir = dir_with(&[(
        "comment.log",
        b"Kanata\t0004\nC=\t0\nI\t0\t0\t0\nS\t0\t0\tF // fetch\nC\t1\nR\t0\t0\t0 // retired\n",
    )]);
    let run = run_in(dir.path(), &["comment.log", "-o", "-"], None);
    run.assert_code(0);
    assert!(
        run.stderr
            .contains("comment.log: Q3: blank, comment or unknown lines dropped (2 lines)"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("Q1"), "{}", run.stderr);
}

#[test]
fn q18_strip_prefix_works_without_from_kanata() {
    // Every line carries the prefix, the header too: format detection must look past it.
    let log = b"konata_output: Kanata\t0004\nkonata_output: C=\t0\nkonata_output: I\t0\t0\t0\n\
                $display: hello\nkonata_output: S\t0\t0\tF\nkonata_output: C\t1\n\
                konata_output: R\t0\t0\t0\n";
    let dir = dir_with(&[("sim.out", log)]);
    let run = run_in(
        dir.path(),
        &["sim.out", "-o", "-", "--strip-prefix", "konata_output:"],
        None,
    );
    run.assert_code(0);
    assert_eq!(
        run.stdout,
        b"Kanata\t0004\nC=\t0\nI\t0\t0\t0\nS\t0\t0\tF\nC\t1\nE\t0\t0\tF\nR\t0\t0\t0\n"
    );
    assert!(run.stderr.contains("sim.out: Q18:"), "{}", run.stderr);
}

#[test]
fn q10_late_window_0_still_moves_a_label_written_in_the_cycle_of_its_r() {
    // `--late-window N` moves a label that comes up to N cycles after its `R`; a label in
    // the same cycle as its `R` (RSD's case) is 0 cycles after it, so N = 0 moves it too.
    // Today it is dropped with the message "more than 0 cycles after its `R`".
    let log = b"Kanata\t0004\nC=\t0\nI\t0\t0\t0\nS\t0\t0\tF\nC\t1\nR\t0\t0\t0\nL\t0\t0\tlate\n";
    let dir = dir_with(&[("late.log", log)]);
    let run = run_in(
        dir.path(),
        &["late.log", "-o", "-", "--late-window", "0"],
        None,
    );
    run.assert_code(0);
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "Kanata\t0004\nC=\t0\nI\t0\t0\t0\nS\t0\t0\tF\nC\t1\nE\t0\t0\tF\nL\t0\t0\tlate\nR\t0\t0\t0\n",
        "{}",
        run.stderr
    );
}

#[test]
fn q16_dedupe_keeps_a_stage_note_repeated_on_another_stage() {
    // A type-2 label is a note on the stage entered last: the same note on the next stage
    // is new information, not the label growing without bound that Q16 is about.
    let log = b"Kanata\t0004\nC=\t0\nI\t0\t0\t0\nS\t0\t0\tX\nL\t0\t2\tmiss\nC\t1\n\
                S\t0\t0\tM\nL\t0\t2\tmiss\nC\t1\nR\t0\t0\t0\n";
    let dir = dir_with(&[("notes.log", log)]);
    let run = run_in(dir.path(), &["notes.log", "-o", "-", "--dedupe"], None);
    run.assert_code(0);
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "Kanata\t0004\nC=\t0\nI\t0\t0\t0\nS\t0\t0\tX\nL\t0\t2\tmiss\nC\t1\nE\t0\t0\tX\n\
         S\t0\t0\tM\nL\t0\t2\tmiss\nC\t1\nE\t0\t0\tM\nR\t0\t0\t0\n",
        "{}",
        run.stderr
    );
}

#[test]
fn q3_a_trailing_comment_on_a_c_or_c_eq_line_keeps_the_cycle() {
    // Q3: a trailing ` // comment` after the fields of a non-`L` line is dropped and the
    // command kept. On `C` and `C=` the comment follows field 1, and today the whole command
    // is dropped as "not a number" (Q1), so the three cycles of `F` are lost.
    let log = b"Kanata\t0004\nC=\t0 // start\nI\t0\t0\t0\nS\t0\t0\tF\nC\t3 // three idle cycles\n\
                E\t0\t0\tF // done\nR\t0\t0\t0\n";
    let dir = dir_with(&[("c.log", log)]);
    let run = run_in(dir.path(), &["c.log", "-o", "-"], None);
    run.assert_code(0);
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "Kanata\t0004\nC=\t0\nI\t0\t0\t0\nS\t0\t0\tF\nC\t3\nE\t0\t0\tF\nR\t0\t0\t0\n",
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("c.log: Q3: blank, comment or unknown lines dropped (3 lines)"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("Q1"), "{}", run.stderr);
}

#[cfg(unix)]
#[test]
fn the_output_gets_the_permissions_of_a_newly_created_file() {
    // The temporary file is private (0600); the renamed output must not stay so.
    use std::os::unix::fs::PermissionsExt;
    let dir = dir_with(&[("run.log", SLOPPY.as_bytes())]);
    std::fs::File::create(dir.path().join("reference")).unwrap();
    run_in(dir.path(), &["run.log", "-o", "out.kanata.zst"], None).assert_code(0);
    let mode = |name: &str| {
        std::fs::metadata(dir.path().join(name))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("out.kanata.zst"), mode("reference"));
}

// ----- outputs that are not regular files -----

#[test]
fn dash_o_dev_null_writes_into_the_device_and_leaves_it_a_device() {
    use std::os::unix::fs::FileTypeExt;
    // A temporary file renamed over /dev/null would replace the device with a regular file
    // and break every later reader of /dev/null on the machine.
    let dir = dir_with(&[("run.log", SLOPPY.as_bytes())]);
    run_in(dir.path(), &["-q", "run.log", "-o", "/dev/null"], None).assert_code(0);
    let meta = std::fs::metadata("/dev/null").unwrap();
    assert!(
        meta.file_type().is_char_device(),
        "/dev/null is no longer a device"
    );
    assert_eq!(
        entries(dir.path()),
        ["run.log"],
        "no temporary file left beside it"
    );
}

#[test]
fn an_output_through_a_symbolic_link_replaces_the_file_and_keeps_the_link() {
    let dir = dir_with(&[("run.log", SLOPPY.as_bytes()), ("real.kanata", b"old")]);
    std::os::unix::fs::symlink("real.kanata", dir.path().join("out.kanata")).unwrap();
    run_in(dir.path(), &["-q", "run.log", "-o", "out.kanata"], None).assert_code(0);
    let link = std::fs::symlink_metadata(dir.path().join("out.kanata")).unwrap();
    assert!(link.file_type().is_symlink(), "the link is kept");
    let text = std::fs::read(dir.path().join("real.kanata")).unwrap();
    assert!(
        text.starts_with(b"Kanata\t0004\n"),
        "the file it names is written"
    );
}
