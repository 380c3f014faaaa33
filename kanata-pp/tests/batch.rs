//! `kanata-pp` with many inputs, driven as a user drives it: `-d OUTDIR` names each output
//! after its input, clashing names and other misuse are usage errors found before any work,
//! `-j` never changes a byte of output or of the reports, one failing input neither stops the
//! others nor leaves a file, the summary line on stderr and the `--report json` objects agree
//! with the files on disk, and `--check` validates many inputs without writing. Also the
//! `build.rs` example of `docs/in-ci.md`, compiled and run here.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

mod common;
use common::{big_log, BIN};

/// A canonical trace with known counts: starts at cycle 5, ends at cycle 9; id 0 retires,
/// id 1 is flushed, id 2 is left open. 18 lines.
const KNOWN: &str = "Kanata\t0004\nC=\t5\nI\t0\t0\t0\nL\t0\t0\tinsn0\nS\t0\t0\tF\nI\t1\t1\t0\n\
                     S\t1\t0\tF\nI\t2\t2\t0\nS\t2\t0\tF\nC\t1\nE\t0\t0\tF\nS\t0\t0\tX\nC\t2\n\
                     E\t0\t0\tX\nR\t0\t0\t0\nE\t1\t0\tF\nR\t1\t0\t1\nC\t1\n";

/// `KNOWN` with its three `I` lines space-padded: three Q1 repairs and nothing else; it
/// converts to `KNOWN`.
const PADDED: &str = "Kanata\t0004\nC=\t5\nI\t  0\t0\t0\nL\t0\t0\tinsn0\nS\t0\t0\tF\nI\t 1\t1\t0\n\
                      S\t1\t0\tF\nI\t2\t 2\t0\nS\t2\t0\tF\nC\t1\nE\t0\t0\tF\nS\t0\t0\tX\nC\t2\n\
                      E\t0\t0\tX\nR\t0\t0\t0\nE\t1\t0\tF\nR\t1\t0\t1\nC\t1\n";

/// Time going back at line 5.
const BACKWARDS: &str = "Kanata\t0004\nC=\t10\nI\t0\t0\t0\nC\t1\nC\t-1\nR\t0\t0\t0\n";

/// The keys of a converted input's object, in order (`docs/in-ci.md` documents each).
const FILE_KEYS: [&str; 22] = [
    "type",
    "input",
    "output",
    "format",
    "input_compression",
    "output_compression",
    "status",
    "error",
    "error_line",
    "instructions",
    "retired",
    "flushed",
    "open",
    "first_cycle",
    "last_cycle",
    "repairs_total",
    "repairs",
    "bytes_in",
    "bytes_out",
    "lines_in",
    "lines_out",
    "seconds",
];

/// A failed input has the same keys, the counts null.
const FAILED_KEYS: [&str; 22] = FILE_KEYS;

/// The keys of the summary object, in order.
const SUMMARY_KEYS: [&str; 8] = [
    "type",
    "inputs",
    "converted",
    "failed",
    "repairs_total",
    "bytes_in",
    "bytes_out",
    "seconds",
];

// ----- helpers -----

/// What one run of the binary did.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    #[track_caller]
    fn assert_code(&self, code: i32) -> &Run {
        assert_eq!(
            self.code,
            Some(code),
            "exit code; stdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }

    /// The JSON objects on stdout, one a line; every line must parse.
    #[track_caller]
    fn json(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|line| {
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: not JSON: {line}"))
            })
            .collect()
    }

    /// The last line of stderr, parsed as the batch summary: converted, failed, repairs,
    /// bytes in, bytes out.
    #[track_caller]
    fn summary_line(&self) -> [u64; 5] {
        let last = self.stderr.lines().last().unwrap_or("");
        let rest = last
            .strip_prefix("kanata-pp: ")
            .unwrap_or_else(|| panic!("no summary line at the end of stderr:\n{}", self.stderr));
        let words = ["converted", "failed", "repairs", "bytes in", "bytes out"];
        let parts: Vec<&str> = rest.split(", ").collect();
        assert_eq!(parts.len(), words.len(), "summary line: {last}");
        let mut numbers = [0; 5];
        for ((part, word), number) in parts.iter().zip(words).zip(&mut numbers) {
            let (n, w) = part.split_once(' ').expect("`N word`");
            assert_eq!(w, word, "summary line: {last}");
            *number = n.parse().expect("a number");
        }
        numbers
    }
}

/// Runs kanata-pp in `dir` with `args`, with no stdin.
fn run_in(dir: &Path, args: &[&str]) -> Run {
    let output = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("kanata-pp runs");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

/// Writes `bytes` at `dir/name`, creating folders on the way.
fn put(dir: &Path, name: &str, bytes: &[u8]) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// Every file under `dir`, as paths relative to it with `/`, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap();
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    if dir.exists() {
        walk(dir, dir, &mut out);
    }
    out.sort();
    out
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    files_under(dir)
        .into_iter()
        .map(|name| {
            let bytes = std::fs::read(dir.join(&name)).unwrap();
            (name, bytes)
        })
        .collect()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// `bytes` decompressed according to their magic bytes (as kanata-pp reads them).
fn decompress(bytes: &[u8]) -> Vec<u8> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(bytes)
            .read_to_end(&mut out)
            .expect("valid gzip");
        out
    } else if bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        zstd::decode_all(bytes).expect("valid zstd")
    } else {
        bytes.to_vec()
    }
}

/// Lines of a text, counting an unterminated last line.
fn line_count(text: &[u8]) -> u64 {
    let newlines = text.iter().filter(|&&b| b == b'\n').count() as u64;
    newlines + u64::from(!text.is_empty() && !text.ends_with(b"\n"))
}

fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .len()
}

fn sample(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../samples")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One input of the test folder.
struct Input {
    /// Its path, relative to the folder, as given on the command line.
    path: &'static str,
    /// Its output's name in OUTDIR, without the compression suffix; `None` when it fails.
    stem: Option<&'static str>,
    /// `input_compression` in the report.
    compression: &'static str,
    /// What it converts to (plain); empty for failing inputs.
    expected: Vec<u8>,
}

/// Writes good and bad inputs of every kind into `dir`, in the order they are given on the
/// command line: a large one first, so that later ones finish before it with `-j 4`.
fn inputs(dir: &Path) -> Vec<Input> {
    let sloppy = sample("sloppy.log");
    let sloppy_kanata = sample("sloppy.kanata");
    let pipeline = sample("pipeline_sim.kanata");
    let big = big_log(8_000);
    let truncated_gz = gzip(&big_log(5_000));
    let truncated_zst = zstd::encode_all(&big_log(5_000)[..], 3).unwrap();
    let mut garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    garbage[100] = 0;

    let list = vec![
        ("big.log", Some("big"), "none", big.clone(), big.clone()),
        (
            "truncated.log.gz",
            None,
            "",
            truncated_gz[..truncated_gz.len() / 2].to_vec(),
            vec![],
        ),
        (
            "sloppy.log",
            Some("sloppy"),
            "none",
            sloppy.clone(),
            sloppy_kanata.clone(),
        ),
        ("garbage.bin", None, "", garbage, vec![]),
        (
            "copies/pipeline.kanata",
            Some("pipeline"),
            "none",
            pipeline.clone(),
            pipeline.clone(),
        ),
        ("empty.log", None, "", vec![], vec![]),
        // gzip content behind a name that says zstd: recognised by its magic bytes.
        (
            "copies/disguised.log.zst",
            Some("disguised"),
            "gzip",
            gzip(&sloppy),
            sloppy_kanata.clone(),
        ),
        (
            "notes.txt",
            None,
            "",
            b"cycle,pc,stage\n0,0x1000,F\n1,0x1000,D\n".to_vec(),
            vec![],
        ),
        (
            "copies/pipe-again.trace.zst",
            Some("pipe-again"),
            "zstd",
            zstd::encode_all(&pipeline[..], 3).unwrap(),
            pipeline,
        ),
        (
            "cut.log.zst",
            None,
            "",
            truncated_zst[..truncated_zst.len() / 2].to_vec(),
            vec![],
        ),
        (
            "known.log",
            Some("known"),
            "none",
            KNOWN.as_bytes().to_vec(),
            KNOWN.as_bytes().to_vec(),
        ),
        ("back.log", None, "", BACKWARDS.as_bytes().to_vec(), vec![]),
        (
            "padded.txt.gz",
            Some("padded"),
            "gzip",
            gzip(PADDED.as_bytes()),
            KNOWN.as_bytes().to_vec(),
        ),
    ];
    list.into_iter()
        .map(|(path, stem, compression, bytes, expected)| {
            put(dir, path, &bytes);
            Input {
                path,
                stem,
                compression,
                expected,
            }
        })
        .collect()
}

fn suffix(compress: &str) -> &'static str {
    match compress {
        "gzip" => ".gz",
        "zstd" => ".zst",
        _ => "",
    }
}

/// The files `-d out --compress compress` should leave in `out`.
fn expected_outputs(inputs: &[Input], compress: &str) -> Vec<String> {
    let mut names: Vec<String> = inputs
        .iter()
        .filter_map(|i| i.stem)
        .map(|stem| format!("{stem}.kanata{}", suffix(compress)))
        .collect();
    names.sort();
    names
}

fn paths(inputs: &[Input]) -> Vec<&str> {
    inputs.iter().map(|i| i.path).collect()
}

/// A JSON object's keys, in order (serde_json keeps them sorted unless told otherwise, so
/// the order is read from the text).
fn keys_in_order(line: &str) -> Vec<String> {
    let object: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
    let mut keys: Vec<(usize, String)> = object
        .keys()
        .map(|k| {
            let at = line
                .find(&format!("\"{k}\":"))
                .unwrap_or_else(|| panic!("key {k} in {line}"));
            (at, k.clone())
        })
        .collect();
    keys.sort();
    keys.into_iter().map(|(_, k)| k).collect()
}

fn uint(object: &Value, key: &str) -> u64 {
    object[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not an unsigned integer in {object}"))
}

/// The report with the wall times taken out, which alone may differ between runs.
fn without_seconds(objects: &[Value]) -> Vec<Value> {
    objects
        .iter()
        .map(|o| {
            let mut o = o.clone();
            o.as_object_mut().unwrap().remove("seconds");
            o
        })
        .collect()
}

// ----- outputs, naming and determinism -----

#[test]
fn each_input_gets_outdir_name_kanata_and_the_bytes_do_not_depend_on_j() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = inputs(dir.path());
    let args = paths(&inputs);
    for compress in ["none", "gzip", "zstd"] {
        let mut runs = Vec::new();
        for jobs in ["1", "4", ""] {
            let out = format!("out-{compress}-j{jobs}");
            let mut argv = vec!["-d", &out, "--compress", compress];
            if !jobs.is_empty() {
                argv.extend(["-j", jobs]);
            }
            argv.extend(&args);
            let run = run_in(dir.path(), &argv);
            run.assert_code(1);
            assert!(run.stdout.is_empty(), "{}", run.stdout);
            let files = snapshot(&dir.path().join(&out));
            assert_eq!(
                files.keys().cloned().collect::<Vec<_>>(),
                expected_outputs(&inputs, compress),
                "-j {jobs:?} --compress {compress}: one output per good input, no temporary \
                 file, nothing for a failed input"
            );
            for input in &inputs {
                let Some(stem) = input.stem else { continue };
                let name = format!("{stem}.kanata{}", suffix(compress));
                let bytes = &files[&name];
                match compress {
                    "gzip" => assert!(bytes.starts_with(&[0x1f, 0x8b]), "{name} is gzip"),
                    "zstd" => assert!(bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]), "{name}"),
                    _ => {}
                }
                assert!(
                    decompress(bytes) == input.expected,
                    "{out}/{name}: not the canonical conversion of {}",
                    input.path
                );
            }
            runs.push((jobs, files, run.stderr));
        }
        let (_, first_files, first_stderr) = &runs[0];
        for (jobs, files, stderr) in &runs[1..] {
            for (name, bytes) in first_files {
                assert!(
                    files[name] == *bytes,
                    "--compress {compress}: {name} differs between -j 1 and -j {jobs:?}"
                );
            }
            assert_eq!(
                stderr, first_stderr,
                "--compress {compress}: the stderr report differs between -j 1 and -j {jobs:?}"
            );
        }
    }
}

#[test]
fn two_inputs_with_the_same_output_are_a_usage_error_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let sloppy = sample("sloppy.log");
    put(dir.path(), "a/run.log", &sloppy);
    put(dir.path(), "b/run.log.gz", &gzip(&sloppy));
    put(dir.path(), "b/run.txt", &sloppy);
    put(dir.path(), "other.log", &sloppy);
    put(dir.path(), "existing/keep.txt", b"keep\n");
    let before = snapshot(dir.path());
    for argv in [
        &["-d", "out", "other.log", "a/run.log", "b/run.log.gz"][..],
        &["-d", "out", "a/run.log", "b/run.txt", "other.log"],
        &[
            "-d",
            "out",
            "--compress",
            "zstd",
            "a/run.log",
            "b/run.log.gz",
        ],
        &["-d", "out", "-j", "1", "a/run.log", "a/run.log"],
        &["-d", "existing", "other.log", "a/run.log", "b/run.txt"],
        &[
            "-d",
            "existing",
            "--report",
            "json",
            "a/run.log",
            "b/run.txt",
        ],
    ] {
        let run = run_in(dir.path(), argv);
        run.assert_code(2);
        assert!(
            run.stderr.contains("run"),
            "names the clash: {}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "{argv:?}: {}", run.stdout);
        assert!(
            snapshot(dir.path()) == before,
            "{argv:?}: nothing is written (no OUTDIR, no output) when two outputs clash"
        );
        assert!(!dir.path().join("out").exists(), "{argv:?} created OUTDIR");
    }
}

#[test]
fn misuse_with_several_inputs_is_a_usage_error_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sloppy = sample("sloppy.log");
    put(dir.path(), "a.log", &sloppy);
    put(dir.path(), "b.log", &sloppy);
    put(dir.path(), "c.kanata", KNOWN.as_bytes());
    put(dir.path(), "d.kanata.gz", &gzip(KNOWN.as_bytes()));
    let absolute = dir.path().to_str().unwrap().to_owned();
    let before = snapshot(dir.path());
    for argv in [
        // -o takes one input.
        &["a.log", "b.log", "-o", "out.kanata"][..],
        &["--check", "a.log", "b.log", "-o", "out.kanata"],
        // Several inputs need -d (or --check).
        &["a.log", "b.log"],
        &["--report", "json", "a.log", "b.log"],
        // stdin cannot be one of several inputs.
        &["-d", "out", "a.log", "-"],
        &["-d", "out", "-", "a.log"],
        &["--check", "a.log", "-"],
        // An output that would overwrite its input.
        &["-d", ".", "a.log", "c.kanata"],
        &["-d", absolute.as_str(), "c.kanata"],
        &["-d", "./", "--compress", "gzip", "a.log", "d.kanata.gz"],
        &["-d", "copies/..", "a.log", "c.kanata"],
    ] {
        put(dir.path(), "copies/keep", b"");
        let run = run_in(dir.path(), argv);
        std::fs::remove_dir_all(dir.path().join("copies")).unwrap();
        assert_eq!(run.code, Some(2), "{argv:?}: {}", run.stderr);
        assert!(run.stderr.starts_with("kanata-pp: "), "{}", run.stderr);
        assert!(run.stdout.is_empty(), "{argv:?}: {}", run.stdout);
        assert!(
            snapshot(dir.path()) == before,
            "{argv:?}: a usage error writes nothing"
        );
        assert!(!dir.path().join("out").exists(), "{argv:?} created OUTDIR");
    }
}

#[test]
fn an_outdir_through_a_folder_not_made_yet_cannot_overwrite_an_input() {
    // `-d new/..` is the input's own folder, but `new` does not exist when the outputs are
    // planned, so the paths cannot be resolved then: the input must not be replaced by its
    // own conversion all the same.
    let dir = tempfile::tempdir().unwrap();
    let sloppy = sample("sloppy.log");
    put(dir.path(), "a.log", &sloppy);
    put(dir.path(), "c.kanata", &sloppy);
    for argv in [
        &["-d", "new/..", "a.log", "c.kanata"][..],
        &["-d", "new/..", "c.kanata"],
    ] {
        let run = run_in(dir.path(), argv);
        assert!(
            std::fs::read(dir.path().join("c.kanata")).unwrap() == sloppy,
            "{argv:?}: the input c.kanata was overwritten by its own output (exit {:?})",
            run.code
        );
        assert_eq!(run.code, Some(2), "{argv:?}: {}", run.stderr);
        assert!(files_under(dir.path()).iter().all(|f| f != "a.kanata"));
    }
}

#[test]
fn a_compression_level_out_of_range_is_a_usage_error_in_a_batch_too() {
    // As with one input (tests/cli.rs): a bad --level is a mistake on the command line, exit
    // 2 before any work, not one failure per input (exit 1) with OUTDIR created.
    let dir = tempfile::tempdir().unwrap();
    let sloppy = sample("sloppy.log");
    put(dir.path(), "a.log", &sloppy);
    put(dir.path(), "b.log", &sloppy);
    for argv in [
        &[
            "-d",
            "out",
            "--compress",
            "zstd",
            "--level",
            "99",
            "a.log",
            "b.log",
        ][..],
        &["-d", "out", "--compress", "gzip", "--level", "10", "a.log"],
        &[
            "-d",
            "out",
            "--compress",
            "gzip",
            "--level",
            "10",
            "--report",
            "json",
            "a.log",
            "b.log",
        ],
    ] {
        let run = run_in(dir.path(), argv);
        assert_eq!(run.code, Some(2), "{argv:?}: {}", run.stderr);
        assert!(
            !dir.path().join("out").exists(),
            "{argv:?}: OUTDIR created for a usage error"
        );
    }
}

// ----- failures -----

#[test]
fn failing_inputs_do_not_stop_the_others_and_leave_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = inputs(dir.path());
    // Outputs of an earlier run: a failing input leaves its one as it was.
    put(dir.path(), "out/notes.kanata", b"an older output\n");
    put(dir.path(), "out/back.kanata", b"an older output\n");
    put(dir.path(), "a-folder/x", b"");
    let mut argv = vec!["-d", "out", "-j", "4"];
    argv.extend(paths(&inputs));
    argv.extend(["missing.log", "a-folder"]);
    let run = run_in(dir.path(), &argv);
    run.assert_code(1);
    let mut want = expected_outputs(&inputs, "none");
    want.extend(["back.kanata".to_owned(), "notes.kanata".to_owned()]);
    want.sort();
    assert_eq!(files_under(&dir.path().join("out")), want);
    for name in ["notes.kanata", "back.kanata"] {
        assert_eq!(
            std::fs::read(dir.path().join("out").join(name)).unwrap(),
            b"an older output\n"
        );
    }
    for input in inputs.iter().filter(|i| i.stem.is_none()) {
        assert!(
            run.stderr
                .lines()
                .any(|l| l.starts_with(&format!("kanata-pp: {}", input.path))),
            "an error line for {}: {}",
            input.path,
            run.stderr
        );
    }
    assert!(run.stderr.contains("back.log:5:"), "{}", run.stderr);
    let failed = inputs.iter().filter(|i| i.stem.is_none()).count() as u64 + 2;
    let converted = inputs.iter().filter(|i| i.stem.is_some()).count() as u64;
    let [c, f, ..] = run.summary_line();
    assert_eq!((c, f), (converted, failed), "{}", run.stderr);

    // All good: exit 0.
    let mut argv = vec!["-d", "out2", "-q"];
    argv.extend(inputs.iter().filter(|i| i.stem.is_some()).map(|i| i.path));
    run_in(dir.path(), &argv).assert_code(0);
    assert_eq!(
        files_under(&dir.path().join("out2")),
        expected_outputs(&inputs, "none")
    );
    // All bad: exit 1, OUTDIR empty.
    let mut argv = vec!["-d", "out3"];
    argv.extend(inputs.iter().filter(|i| i.stem.is_none()).map(|i| i.path));
    let run = run_in(dir.path(), &argv);
    run.assert_code(1);
    assert!(files_under(&dir.path().join("out3")).is_empty());
    let [c, f, r, bi, bo] = run.summary_line();
    assert_eq!([c, f, r, bi, bo], [0, failed - 2, 0, 0, 0]);
}

#[test]
fn the_summary_line_matches_the_files_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = inputs(dir.path());
    let mut argv = vec!["-d", "out", "--compress", "gzip", "-j", "3"];
    argv.extend(paths(&inputs));
    let run = run_in(dir.path(), &argv);
    run.assert_code(1);
    let [converted, failed, repairs, bytes_in, bytes_out] = run.summary_line();
    let good: Vec<&Input> = inputs.iter().filter(|i| i.stem.is_some()).collect();
    assert_eq!(converted, good.len() as u64);
    assert_eq!(failed, (inputs.len() - good.len()) as u64);
    let want_in: u64 = good
        .iter()
        .map(|i| file_size(&dir.path().join(i.path)))
        .sum();
    assert_eq!(bytes_in, want_in, "bytes in: the good inputs' sizes");
    let want_out: u64 = files_under(&dir.path().join("out"))
        .iter()
        .map(|name| file_size(&dir.path().join("out").join(name)))
        .sum();
    assert_eq!(bytes_out, want_out, "bytes out: the outputs' sizes");
    // The repairs are those the JSON report counts.
    let mut argv = vec!["--check", "--report", "json"];
    argv.extend(paths(&inputs));
    let json = run_in(dir.path(), &argv).json();
    let summary = json.last().unwrap();
    assert_eq!(repairs, uint(summary, "repairs_total"));
    assert!(repairs >= 65 + 3, "sloppy.log twice and padded.txt.gz");
}

// ----- --report json -----

#[test]
fn the_json_report_describes_every_input_as_the_files_on_disk_show() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = inputs(dir.path());
    let mut argv = vec![
        "-d",
        "out",
        "--compress",
        "zstd",
        "-j",
        "4",
        "--report",
        "json",
    ];
    argv.extend(paths(&inputs));
    let run = run_in(dir.path(), &argv);
    run.assert_code(1);
    assert!(
        !run.stderr.contains("converted"),
        "with --report json the summary is the last JSON object, not a stderr line: {}",
        run.stderr
    );
    let lines: Vec<&str> = run.stdout.lines().collect();
    let objects = run.json();
    assert_eq!(
        objects.len(),
        inputs.len() + 1,
        "one object per input, then a summary"
    );

    let (mut bytes_in, mut bytes_out, mut repairs, mut converted) = (0, 0, 0, 0);
    for ((input, object), line) in inputs.iter().zip(&objects).zip(&lines) {
        let what = input.path;
        assert_eq!(object["type"], "file", "{line}");
        assert_eq!(object["input"], input.path, "in input order: {line}");
        let input_path = dir.path().join(input.path);
        let Some(stem) = input.stem else {
            assert_eq!(keys_in_order(line), FAILED_KEYS, "{line}");
            assert_eq!(object["status"], "failed", "{line}");
            for key in [
                "output",
                "format",
                "input_compression",
                "output_compression",
            ] {
                assert!(object[key].is_null(), "{what}: {key}: {line}");
            }
            let error = object["error"].as_str().expect("error is a string");
            assert!(error.contains(input.path), "{what}: {error}");
            assert!(
                object["error_line"].is_null() || object["error_line"].is_u64(),
                "{line}"
            );
            continue;
        };
        converted += 1;
        assert_eq!(keys_in_order(line), FILE_KEYS, "{line}");
        assert_eq!(object["status"], "ok", "{line}");
        assert!(object["error"].is_null() && object["error_line"].is_null());
        let output = object["output"].as_str().expect("output is a string");
        assert_eq!(
            Path::new(output),
            Path::new("out").join(format!("{stem}.kanata.zst")),
            "{line}"
        );
        let output_path = dir.path().join(output);
        assert!(output_path.is_file(), "{what}: {output} exists");
        assert_eq!(object["format"], "kanata", "{line}");
        assert_eq!(object["input_compression"], input.compression, "{line}");
        assert_eq!(object["output_compression"], "zstd", "{line}");
        assert_eq!(uint(object, "bytes_in"), file_size(&input_path), "{line}");
        assert_eq!(uint(object, "bytes_out"), file_size(&output_path), "{line}");
        let text_in = decompress(&std::fs::read(&input_path).unwrap());
        let text_out = decompress(&std::fs::read(&output_path).unwrap());
        assert_eq!(uint(object, "lines_in"), line_count(&text_in), "{line}");
        assert_eq!(uint(object, "lines_out"), line_count(&text_out), "{line}");
        let seconds = object["seconds"].as_f64().expect("seconds is a number");
        assert!(seconds >= 0.0, "{line}");
        let rules = object["repairs"].as_object().expect("repairs is an object");
        let sum: u64 = rules.values().map(|v| v.as_u64().unwrap()).sum();
        assert!(rules.values().all(|v| v.as_u64() > Some(0)), "{line}");
        assert_eq!(uint(object, "repairs_total"), sum, "{line}");
        let n = uint(object, "instructions");
        assert_eq!(
            uint(object, "retired") + uint(object, "flushed") + uint(object, "open"),
            n,
            "{line}"
        );
        assert!(
            uint(object, "first_cycle") <= uint(object, "last_cycle"),
            "{line}"
        );
        bytes_in += uint(object, "bytes_in");
        bytes_out += uint(object, "bytes_out");
        repairs += sum;
    }
    let by_input = |path: &str| &objects[inputs.iter().position(|i| i.path == path).unwrap()];
    // Known counts.
    for path in ["known.log", "padded.txt.gz"] {
        let o = by_input(path);
        let counts = [
            "instructions",
            "retired",
            "flushed",
            "open",
            "first_cycle",
            "last_cycle",
            "lines_in",
            "lines_out",
        ]
        .map(|k| uint(o, k));
        assert_eq!(counts, [3, 1, 1, 1, 5, 9, 18, 18], "{path}: {o}");
    }
    assert_eq!(by_input("known.log")["repairs"], serde_json::json!({}));
    assert_eq!(
        by_input("padded.txt.gz")["repairs"],
        serde_json::json!({"Q1": 3}),
        "one Q1 repair per padded line"
    );
    assert_eq!(uint(by_input("big.log"), "instructions"), 8_000);
    assert_eq!(uint(by_input("big.log"), "retired"), 8_000);
    for path in ["sloppy.log", "copies/disguised.log.zst"] {
        let o = by_input(path);
        assert_eq!(uint(o, "lines_in"), 116, "{path}");
        assert!(uint(o, "repairs_total") > 0 && o["repairs"]["Q1"].as_u64() > Some(0));
    }
    assert_eq!(by_input("back.log")["error_line"], 5);
    assert!(by_input("empty.log")["error"]
        .as_str()
        .unwrap()
        .contains("empty"));

    let summary = objects.last().unwrap();
    assert_eq!(keys_in_order(lines.last().unwrap()), SUMMARY_KEYS);
    assert_eq!(summary["type"], "summary");
    assert_eq!(uint(summary, "inputs"), inputs.len() as u64);
    assert_eq!(uint(summary, "converted"), converted);
    assert_eq!(uint(summary, "failed"), inputs.len() as u64 - converted);
    assert_eq!(uint(summary, "bytes_in"), bytes_in);
    assert_eq!(uint(summary, "bytes_out"), bytes_out);
    assert_eq!(uint(summary, "repairs_total"), repairs);
    assert!(summary["seconds"].as_f64().unwrap() >= 0.0);
}

#[test]
fn the_json_report_is_in_input_order_whatever_j() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = inputs(dir.path());
    let mut forward = paths(&inputs);
    let mut reports = Vec::new();
    for order in 0..2 {
        if order == 1 {
            forward.reverse();
        }
        let mut per_order = Vec::new();
        for jobs in ["1", "4"] {
            let out = format!("out-{order}-{jobs}");
            let mut argv = vec!["-d", &out, "-j", jobs, "--report", "json"];
            argv.extend(&forward);
            let run = run_in(dir.path(), &argv);
            run.assert_code(1);
            let objects = run.json();
            let named: Vec<&str> = objects[..objects.len() - 1]
                .iter()
                .map(|o| o["input"].as_str().unwrap())
                .collect();
            assert_eq!(named, forward, "-j {jobs}");
            // Apart from the output folder's name, only the times may differ.
            let text = serde_json::to_string(&without_seconds(&objects)).unwrap();
            per_order.push(text.replace(&out, "OUT"));
        }
        assert_eq!(
            per_order[0], per_order[1],
            "-j 1 and -j 4 report differently"
        );
        reports.push(per_order.remove(0));
    }
    assert_ne!(reports[0], reports[1]);
}

#[cfg(unix)]
#[test]
fn input_names_are_escaped_in_the_json_report() {
    let dir = tempfile::tempdir().unwrap();
    let name = "we\"ird\\name\tx.log";
    put(dir.path(), name, KNOWN.as_bytes());
    put(dir.path(), "plain.log", KNOWN.as_bytes());
    let run = run_in(
        dir.path(),
        &["-d", "out", "--report", "json", name, "plain.log"],
    );
    run.assert_code(0);
    let objects = run.json();
    assert_eq!(objects[0]["input"], name);
    let output = objects[0]["output"].as_str().unwrap();
    assert!(dir.path().join(output).is_file(), "{output}");
    assert_eq!(
        std::fs::read(dir.path().join("out/we\"ird\\name\tx.kanata")).unwrap(),
        KNOWN.as_bytes()
    );
}

// ----- --check with many inputs -----

#[test]
fn check_validates_many_inputs_reports_the_same_way_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = inputs(dir.path());
    let before = snapshot(dir.path());
    let mut argv = vec!["--check", "--report", "json", "-j", "4"];
    argv.extend(paths(&inputs));
    let run = run_in(dir.path(), &argv);
    run.assert_code(1);
    assert!(snapshot(dir.path()) == before, "--check writes nothing");
    let lines: Vec<&str> = run.stdout.lines().collect();
    let objects = run.json();
    assert_eq!(objects.len(), inputs.len() + 1);
    for ((input, object), line) in inputs.iter().zip(&objects).zip(&lines) {
        assert_eq!(object["input"], input.path);
        if input.stem.is_none() {
            assert_eq!(object["status"], "failed", "{line}");
            assert_eq!(keys_in_order(line), FAILED_KEYS);
            continue;
        }
        assert_eq!(keys_in_order(line), FILE_KEYS);
        assert_eq!(object["status"], "ok", "{line}");
        assert!(object["output"].is_null(), "nothing written: {line}");
        assert_eq!(uint(object, "bytes_out"), 0, "{line}");
        assert_eq!(object["input_compression"], input.compression, "{line}");
        assert_eq!(
            uint(object, "bytes_in"),
            file_size(&dir.path().join(input.path))
        );
        assert_eq!(
            uint(object, "lines_out"),
            line_count(&input.expected),
            "the lines the output would have: {line}"
        );
    }
    let summary = objects.last().unwrap();
    let good = inputs.iter().filter(|i| i.stem.is_some()).count() as u64;
    assert_eq!(
        [
            uint(summary, "inputs"),
            uint(summary, "converted"),
            uint(summary, "failed"),
            uint(summary, "bytes_out"),
        ],
        [inputs.len() as u64, good, inputs.len() as u64 - good, 0]
    );

    // Human report: a summary line; with -d too, still nothing written (no OUTDIR).
    let mut argv = vec!["--check", "-d", "out", "-q"];
    argv.extend(paths(&inputs));
    run_in(dir.path(), &argv).assert_code(1);
    assert!(snapshot(dir.path()) == before, "--check -d writes nothing");
    let mut argv = vec!["--check"];
    argv.extend(inputs.iter().filter(|i| i.stem.is_some()).map(|i| i.path));
    let run = run_in(dir.path(), &argv);
    run.assert_code(0);
    let [c, f, ..] = run.summary_line();
    assert_eq!((c, f), (good, 0));
    assert!(snapshot(dir.path()) == before);
}

// ----- the build.rs example of docs/in-ci.md -----

// BEGIN build.rs example (docs/in-ci.md holds this function verbatim)
/// Converts `input` into `OUT_DIR/<name>.kanata.zst` (zstd, from the extension). A trace
/// that does not convert fails the build; repairs become warnings.
fn convert_trace(input: &Path, out_dir: &Path) -> PathBuf {
    println!("cargo:rerun-if-changed={}", input.display());
    let name = input
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(|name| name.split('.').next())
        .expect("a UTF-8 file name");
    let out = out_dir.join(format!("{name}.kanata.zst"));
    let options = kanata_pp::Options::new(kanata_pp::Destination::Path(out.clone()));
    match kanata_pp::convert(input, &options) {
        Ok(report) if report.diagnostics.total() > 0 => println!(
            "cargo:warning={}: {} repairs (kanata-pp -v lists them)",
            input.display(),
            report.diagnostics.total()
        ),
        Ok(_) => {}
        Err(err) => panic!("{err}"),
    }
    out
}
// END build.rs example

#[test]
fn the_build_rs_example_of_docs_in_ci_converts_and_fails_the_build_on_a_bad_trace() {
    let dir = tempfile::tempdir().unwrap();
    put(
        dir.path(),
        "traces/run.log.gz",
        &gzip(&sample("sloppy.log")),
    );
    put(dir.path(), "traces/bad.log", b"hello\n");
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = convert_trace(&dir.path().join("traces/run.log.gz"), &out_dir);
    assert_eq!(out, out_dir.join("run.kanata.zst"));
    let bytes = std::fs::read(&out).unwrap();
    assert!(bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]), "zstd");
    assert!(decompress(&bytes) == sample("sloppy.kanata"));
    let bad = dir.path().join("traces/bad.log");
    let panicked = std::panic::catch_unwind(|| convert_trace(&bad, &out_dir));
    assert!(panicked.is_err(), "a bad trace fails the build");
    assert_eq!(files_under(&out_dir), ["run.kanata.zst"]);

    // The documentation shows this very function.
    let source = include_str!("batch.rs");
    let begin = source.find("// BEGIN build.rs example").unwrap();
    let begin = begin + source[begin..].find('\n').unwrap() + 1;
    let end = source.find("// END build.rs example").unwrap();
    let function = &source[begin..end];
    let docs_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/in-ci.md");
    let docs = std::fs::read_to_string(&docs_path).unwrap();
    assert!(
        docs.contains(function),
        "{} does not show convert_trace as tests/batch.rs compiles it",
        docs_path.display()
    );
}
