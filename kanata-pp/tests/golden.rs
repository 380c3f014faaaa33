//! Golden files: `samples/sloppy.log`, a hand-made log with one or more instances of every
//! quirk of the format spec's section 5, must convert to the committed
//! `samples/sloppy.kanata` byte for byte, with a report that names each quirk at its line.
//!
//! When a change to kanata-pp changes the output on purpose, regenerate the golden file with
//! `cargo run -p kanata-pp -- samples/sloppy.log -o samples/sloppy.kanata`, and review the
//! diff line by line against the spec before committing it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kanata_tests::canonical;

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples")
}

fn read_sample(name: &str) -> Vec<u8> {
    let path = samples().join(name);
    std::fs::read(&path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

/// Runs kanata-pp with `args`, from the workspace root so that reports name
/// `samples/sloppy.log` as the README shows.
fn kanata_pp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kanata-pp"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .expect("kanata-pp runs")
}

/// The first line where `got` and `want` differ, for a readable failure.
fn first_difference(got: &[u8], want: &[u8]) -> String {
    let got: Vec<&[u8]> = got.split(|&b| b == b'\n').collect();
    let want: Vec<&[u8]> = want.split(|&b| b == b'\n').collect();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        if g != w {
            return format!(
                "line {}: got {:?}, golden has {:?}",
                i + 1,
                String::from_utf8_lossy(g),
                String::from_utf8_lossy(w)
            );
        }
    }
    format!("{} lines, golden has {}", got.len(), want.len())
}

#[track_caller]
fn assert_golden(got: &[u8], golden: &str) {
    let want = read_sample(golden);
    assert!(
        got == want.as_slice(),
        "output differs from samples/{golden}: {}\nIf the change is intended, regenerate with \
         `cargo run -p kanata-pp -- samples/sloppy.log -o samples/sloppy.kanata` and review it",
        first_difference(got, &want)
    );
}

#[test]
fn sloppy_log_converts_to_the_committed_golden_file_byte_for_byte() {
    let out = kanata_pp(&["samples/sloppy.log", "-o", "-", "--no-progress"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_golden(&out.stdout, "sloppy.kanata");

    // Through a file (temporary file, then rename) the bytes are the same.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sloppy.kanata");
    let out = kanata_pp(&["samples/sloppy.log", "-o", path.to_str().unwrap(), "-q"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty());
    assert_golden(&std::fs::read(&path).unwrap(), "sloppy.kanata");
}

/// The 1-based number of the one line of `samples/sloppy.log` that reads `text` (CR LF or
/// LF line end).
fn line_of(log: &[u8], text: &str) -> u64 {
    let found: Vec<u64> = log
        .split(|&b| b == b'\n')
        .enumerate()
        .filter(|(_, line)| line.strip_suffix(b"\r").unwrap_or(line) == text.as_bytes())
        .map(|(i, _)| i as u64 + 1)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "{text:?} must be on exactly one line of sloppy.log"
    );
    found[0]
}

/// The number of the line right after the one comment line of `samples/sloppy.log` that
/// starts with `comment`.
fn line_after(log: &[u8], comment: &str) -> u64 {
    let found: Vec<u64> = log
        .split(|&b| b == b'\n')
        .enumerate()
        .filter(|(_, line)| line.starts_with(comment.as_bytes()))
        .map(|(i, _)| i as u64 + 2)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "{comment:?} must start exactly one line of sloppy.log"
    );
    found[0]
}

/// The report on stderr, as rule id → input lines named in its examples.
fn parse_report(stderr: &str) -> BTreeMap<String, BTreeSet<u64>> {
    let mut rules: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    let mut current = None;
    for line in stderr.lines() {
        if let Some(rest) = line.strip_prefix("samples/sloppy.log: Q") {
            let id = format!("Q{}", rest.split(':').next().unwrap());
            rules.entry(id.clone()).or_default();
            current = Some(id);
        } else if let Some(rest) = line.strip_prefix("  line ") {
            let number: u64 = rest.split(':').next().unwrap().parse().unwrap();
            rules
                .get_mut(current.as_ref().expect("an example follows its rule"))
                .unwrap()
                .insert(number);
        }
    }
    rules
}

#[test]
fn sloppy_log_report_names_each_quirk_at_its_line() {
    let log = read_sample("sloppy.log");
    let out = kanata_pp(&["samples/sloppy.log", "--check", "-v"]);
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    let report = parse_report(&stderr);

    // Every default rule is exercised; the opt-in clean-ups (Q14-Q18) report nothing.
    let rules: Vec<&str> = report.keys().map(String::as_str).collect();
    let mut want = vec![
        "Q1", "Q10", "Q11", "Q12", "Q13", "Q19", "Q2", "Q20", "Q3", "Q4", "Q4b", "Q5", "Q7", "Q8",
        "Q9",
    ];
    want.sort_unstable();
    assert_eq!(rules, want, "{stderr}");

    // The line under each `# Qn:` comment is reported under that rule.
    let expected = [
        ("Q2", ""),
        ("Q2", "Kanata 0004"),
        ("Q1", "C=\t100\t    "),
        ("Q1", "I\t   0\t   0\t  0"),
        ("Q1", "L\t0\t0\t0x1000: addi x1, x0, 5\t"),
        ("Q19", "L 3 0 0x100c: beq x3, x0, 0x1040"),
        ("Q3", "S\t0\t0\tX // ALU0"),
        ("Q20", "S\t2\t00\tD"),
        ("Q4b", "C"),
        ("Q4", "C\t0"),
        ("Q3", "R\t0\t0\t48"),
        ("Q13", "R\t0\t0\t48"),
        ("Q9", "L\t1\t1\tx2 = mem[0x2000]\tL1 miss, L2 hit"),
        ("Q5", "C=\t106"),
        ("Q7", "E\t2\t0\tIs"),
        ("Q8", "src x2 = 7, x1 = 5"),
        ("Q7", "# Q7: an `E` repeated"),
        ("Q12", "W\t4\t8\t0"),
        ("Q13", "R\t1\t1\t"),
        ("Q13", "R\t4\t0\t49"),
        (
            "Q3",
            "[sim] branch at 0x100c mispredicted, redirect to 0x1040",
        ),
        ("Q11", "I\t4\t6\t0"),
        ("Q12", "L\t4\t2\tpredicted taken"),
        ("Q12", "S\t9\t0\tF"),
        ("Q10", "L\t3\t1\tmispredicted, target 0x1040"),
        ("Q10", "E\t3\t0\tCm"),
    ];
    for (rule, text) in expected {
        let line = if text.is_empty() {
            // The blank line before the header.
            line_of(&log, "Kanata 0004") - 1
        } else if text.starts_with('#') {
            line_after(&log, text)
        } else {
            line_of(&log, text)
        };
        assert!(
            report.get(rule).is_some_and(|lines| lines.contains(&line)),
            "line {line} ({text:?}) should be reported under {rule}:\n{stderr}"
        );
    }

    // The summary line names the rule, what it did and how many lines, e.g.
    // `samples/sloppy.log: Q8: label continued over a raw line break (1 line)`.
    assert!(
        stderr.contains("samples/sloppy.log: Q8: label continued over a raw line break (1 line)"),
        "{stderr}"
    );
    // The comments are dropped: one Q3 example per `#` line after the header.
    let comments_after_header = log
        .split(|&b| b == b'\n')
        .skip(line_of(&log, "Kanata 0004") as usize)
        .filter(|line| line.starts_with(b"#"))
        .count();
    assert!(report["Q3"].len() > comments_after_header, "{stderr}");
}

#[test]
fn sloppy_golden_is_canonical_and_konata_draws_it_without_warnings() {
    let golden = read_sample("sloppy.kanata");
    let stats = canonical::check(&golden).unwrap_or_else(|violations| {
        panic!(
            "samples/sloppy.kanata is not canonical:\n{}",
            violations
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        )
    });
    assert_eq!(stats.start_cycle, 100);
    assert_eq!(
        stats.last_cycle, 114,
        "the final `C` keeps the input's last cycle"
    );
    assert_eq!(stats.instructions, 7, "id 4 is used twice (Q11)");
    assert_eq!((stats.retired, stats.flushed, stats.open_at_end), (4, 2, 1));

    let view = kanata_tests::load(&golden);
    assert!(view.warnings.is_empty(), "{:?}", view.warnings);
    // Q20: no lane "00"; the stall lane is lane 1.
    assert_eq!(view.lane_names, ["0", "1"]);
    // Q9: both parts of the label; Q8: both lines of the label.
    let insn = |id: i64| view.insn(id).unwrap();
    assert_eq!(insn(1).label_detail, "x2 = mem[0x2000] L1 miss, L2 hit");
    assert!(insn(2).label_detail.starts_with("dst x3 = 12"));
    assert!(insn(2).label_detail.ends_with("src x2 = 7, x1 = 5"));
    // Q19: the label is the rest of the line, inner spaces kept.
    assert_eq!(insn(3).label_name, "0x100c: beq x3, x0, 0x1040");
    // Q10: the late label, moved before the `R`.
    assert_eq!(insn(3).label_detail, "mispredicted, target 0x1040");
    // Q13: 48 is '0' (retired) and 49 is '1' (flushed); an empty type is retired.
    use kanata_tests::RetireKind::{Flushed, Retired};
    let kinds: Vec<Option<_>> = view
        .insns
        .iter()
        .map(|i| i.retired.map(|r| r.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            Some(Retired),
            Some(Retired),
            Some(Retired),
            Some(Retired),
            Some(Flushed),
            Some(Flushed),
            None
        ]
    );
    // Q11: the second id 4 is a new row, with its own label; Q15: it is drawn to the end.
    assert_eq!(insn(6).label_name, "0x1040: jal x0, 0x1000");
    assert!(insn(6).eof());
    // The wake-up arrows between X stages; the `W` with an unknown producer is gone (Q12).
    let arrows: Vec<(i64, i64)> = view
        .arrows
        .iter()
        .map(|a| (a.consumer, a.producer))
        .collect();
    assert_eq!(arrows, [(1, 0), (2, 1), (3, 2)]);
    // Q4b and Q5: bare `C` is a cycle, `C=` 106 a step of 2; Konata's time starts at 0.
    assert_eq!(insn(1).lane("0")[3].name, "X");
    assert_eq!(
        (insn(1).lane("0")[3].start, insn(1).lane("0")[3].end),
        (3, 6)
    );
    assert_eq!(
        (insn(1).lane("1")[0].start, insn(1).lane("1")[0].end),
        (4, 6)
    );
}

#[test]
fn the_golden_file_converts_to_itself_silently() {
    let out = kanata_pp(&["samples/sloppy.kanata", "-o", "-"]);
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "a canonical file needs no repair: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_golden(&out.stdout, "sloppy.kanata");
}

// ----- the examples in docs/ -----

/// A fenced code block of a doc page whose info string is `text <role> [flags…]`.
struct Example {
    doc: &'static str,
    /// Line of the opening fence, for messages.
    line: usize,
    role: String,
    flags: Vec<String>,
    /// The block's text with `→` read as TAB, `·` as a space and `␍` as CR.
    text: String,
}

/// The checked examples of `docs/<doc>`: blocks fenced as ```` ```text input ```` (a trace
/// body: the canonical header is put in front), `file` (a whole input file), `output FLAGS`
/// (kanata-pp's output for the last input, run with FLAGS; the header lines `Kanata→0004` and
/// `C=→0` may be left out), `report FLAGS` (its stderr), `error FLAGS` (its stderr when it
/// fails with exit 1), and `canonical` (a file that converts to itself with no report).
fn examples(doc: &'static str) -> Vec<Example> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs")
        .join(doc);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((at, line)) = lines.next() {
        let Some(info) = line.strip_prefix("```") else {
            continue;
        };
        let words: Vec<&str> = info.split_whitespace().collect();
        let mut body = String::new();
        for (_, line) in lines.by_ref() {
            if line.starts_with("```") {
                break;
            }
            body.push_str(line);
            body.push('\n');
        }
        let role = words.get(1).copied().unwrap_or("");
        if words.first() != Some(&"text")
            || !["input", "file", "output", "report", "error", "canonical"].contains(&role)
        {
            continue;
        }
        out.push(Example {
            doc,
            line: at + 1,
            role: role.to_owned(),
            flags: words[2..].iter().map(|w| (*w).to_owned()).collect(),
            text: body.replace('→', "\t").replace('·', " ").replace('␍', "\r"),
        });
    }
    out
}

/// Runs kanata-pp on `input` fed to stdin, with `flags`.
fn run_stdin(input: &[u8], flags: &[String]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_kanata-pp"))
        .args(["-", "-o", "-", "--no-progress"])
        .args(flags)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kanata-pp starts");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// `output` without the header lines that `expected` leaves out.
fn strip_header<'a>(output: &'a str, expected: &str, at: &str) -> &'a str {
    let mut rest = output;
    if !expected.starts_with("Kanata") {
        rest = rest
            .strip_prefix("Kanata\t0004\n")
            .unwrap_or_else(|| panic!("{at}: output without header: {output:?}"));
        if !expected.starts_with("C=") {
            rest = rest.strip_prefix("C=\t0\n").unwrap_or_else(|| {
                panic!("{at}: the output starts at another cycle than 0: show its `C=`\n{output}")
            });
        }
    }
    rest
}

#[test]
fn the_examples_in_the_docs_are_what_kanata_pp_does() {
    let mut checked = 0;
    for doc in ["canonical-form.md", "rules.md", "cleanups.md", "gem5.md"] {
        let mut input: Option<(usize, Vec<u8>)> = None;
        for example in examples(doc) {
            let at = format!("docs/{}:{}", example.doc, example.line);
            let text = example.text.as_str();
            match example.role.as_str() {
                "input" => {
                    let mut file = b"Kanata\t0004\nC=\t0\n".to_vec();
                    file.extend_from_slice(text.as_bytes());
                    input = Some((example.line, file));
                    continue;
                }
                "file" => {
                    input = Some((example.line, text.as_bytes().to_vec()));
                    continue;
                }
                "canonical" => {
                    let out = run_stdin(text.as_bytes(), &example.flags);
                    assert!(out.status.success(), "{at}: {:?}", out.status);
                    assert_eq!(String::from_utf8_lossy(&out.stdout), text, "{at}");
                    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{at}");
                    checked += 1;
                    continue;
                }
                _ => {}
            }
            let (from, file) = input
                .as_ref()
                .unwrap_or_else(|| panic!("{at}: an {} needs an input above", example.role));
            let at = format!("{at} (input at line {from})");
            let out = run_stdin(file, &example.flags);
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            match example.role.as_str() {
                "output" => {
                    assert!(out.status.success(), "{at}: {stderr}");
                    assert_eq!(strip_header(&stdout, text, &at), text, "{at}\n{stderr}");
                }
                "report" => {
                    assert!(out.status.success(), "{at}: {stderr}");
                    assert_eq!(stderr, text, "{at}");
                }
                "error" => {
                    assert_eq!(out.status.code(), Some(1), "{at}: {stderr}");
                    assert_eq!(stderr, text, "{at}");
                }
                _ => unreachable!(),
            }
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} examples checked");
}

#[test]
fn every_clean_up_flag_on_the_sloppy_log_gives_a_canonical_trace_konata_loads_silently() {
    let flag_sets: &[&[&str]] = &[
        &["--renumber-retire"],
        &["--close-open", "flush"],
        &["--close-open", "retire", "--renumber-retire"],
        &["--dedupe"],
        &["--stretch-zero"],
        &["--dedupe", "--stretch-zero"],
        &["--late-window", "0"],
        &["--compact"],
        &[
            "--renumber-retire",
            "--close-open",
            "retire",
            "--dedupe",
            "--stretch-zero",
            "--compact",
        ],
    ];
    for flags in flag_sets {
        let mut args = vec!["samples/sloppy.log", "-o", "-", "-q"];
        args.extend_from_slice(flags);
        let out = kanata_pp(&args);
        assert!(
            out.status.success(),
            "{flags:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let options = if flags.contains(&"--compact") {
            canonical::Options::COMPACT
        } else {
            canonical::Options::STRICT
        };
        if let Err(violations) = canonical::check_with(&out.stdout, options) {
            panic!("{flags:?}: {violations:?}");
        }
        let view = kanata_tests::load(&out.stdout);
        assert!(view.warnings.is_empty(), "{flags:?}: {:?}", view.warnings);
        // The output converts to itself with the same flags (normalizing is idempotent).
        // Not with --dedupe: it writes an explicit `E` at the end of its cycle, so a second
        // pass moves the `E` that the first put before a late label (drawn the same).
        if flags.contains(&"--dedupe") {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("once.kanata");
        std::fs::write(&path, &out.stdout).unwrap();
        let mut again = vec![path.to_str().unwrap(), "-o", "-", "-q"];
        again.extend_from_slice(flags);
        let twice = kanata_pp(&again);
        assert!(twice.status.success(), "{flags:?}");
        assert!(
            twice.stdout == out.stdout,
            "{flags:?}: a second pass changed the trace"
        );
    }
}
