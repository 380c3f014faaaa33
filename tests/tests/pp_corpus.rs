//! kanata-pp on the corpus of real Kanata logs (`shared/corpus/kanata/`, described file by
//! file in its `SOURCES.md`).
//!
//! For every file: the output is canonical, Konata loads it with zero warnings and draws it
//! exactly as it draws the input, converting the output again gives the same bytes, and the
//! facts `SOURCES.md` states about the file hold for the converted trace. Then, for all files
//! at once: two conversions are byte-identical, and `.gz` and `.zst` output decompresses to
//! the plain output.
//!
//! The corpus lives outside this repository; when it is absent the tests print a note and
//! pass.

use std::fs;
use std::path::{Path, PathBuf};

use kanata_pp::{convert, Destination, Options, Report, Rule};
use kanata_tests::canonical::{self, Stats};
use kanata_tests::{decompress, diff_views, load, Compare, RetireKind, View};

/// The gem5 O3PipeView trace of the corpus: not Kanata.
const GEM5_INPUT: &str = "shioyadan__Konata__gem5-basic.txt";

const SAMPLE_1: &str = "shioyadan__Konata__kanata-sample-1.log";
const SAMPLE_2: &str = "shioyadan__Konata__kanata-sample-2.log.gz";
const BASIC: &str = "shioyadan__Konata__kanata-basic.txt";
const JASMINE: &str = "jasmine2000__6.1920-Final-Project__output.log";
const PIPELINED: &str = "anacambag__6192_Final_Project__pipelined.log";
const BROKEN: &str = "anacambag__6192_Final_Project__broken.log.gz";

/// The files with a test of their own below.
const KNOWN: [&str; 6] = [SAMPLE_1, SAMPLE_2, BASIC, JASMINE, PIPELINED, BROKEN];

/// The corpus folder, or `None` (with a note) when it is not there.
fn corpus() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/kanata");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("note: {} is absent; corpus test skipped", dir.display());
        None
    }
}

/// Every Kanata log of the corpus (not SOURCES.md, not the gem5 trace), by name.
fn corpus_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("read the corpus folder")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "SOURCES.md" && n != GEM5_INPUT && !n.starts_with('.'))
        .collect();
    names.sort();
    names
}

/// Converts `input` into `out` with the options `tweak` sets; returns the report and the
/// output, decompressed.
#[track_caller]
fn convert_to(input: &Path, out: &Path, tweak: impl FnOnce(&mut Options)) -> (Report, Vec<u8>) {
    let mut options = Options::new(Destination::Path(out.to_path_buf()));
    options.max_examples = usize::MAX;
    tweak(&mut options);
    let report = match convert(input, &options) {
        Ok(report) => report,
        Err(err) => panic!("{}: conversion failed: {err}", input.display()),
    };
    let raw = fs::read(out).expect("the output exists");
    (report, decompress(&raw).expect("decompress the output"))
}

/// One corpus file, converted and checked.
struct Converted {
    report: Report,
    output: Vec<u8>,
    stats: Stats,
    input_view: View,
    view: View,
}

impl Converted {
    /// The distinct input lines `rule` was reported at.
    fn lines(&self, rule: Rule) -> Vec<u64> {
        let mut lines: Vec<u64> = self
            .report
            .diagnostics
            .rules()
            .get(&rule)
            .map(|r| r.examples.iter().map(|e| e.line).collect())
            .unwrap_or_default();
        lines.dedup();
        lines
    }

    fn count(&self, rule: Rule) -> u64 {
        self.report
            .diagnostics
            .rules()
            .get(&rule)
            .map_or(0, |r| r.count)
    }

    fn rules(&self) -> Vec<Rule> {
        self.report.diagnostics.rules().keys().copied().collect()
    }

    fn text(&self) -> &str {
        std::str::from_utf8(&self.output).expect("UTF-8 output")
    }
}

/// Converts the corpus file `name` with the options `tweak` sets and checks what holds for
/// every file: canonical output, zero Konata warnings, drawn like the input (unless
/// `same_drawing` is false: a clean-up was asked for), and converting the output again gives
/// the same bytes with no repair.
#[track_caller]
fn check(
    dir: &Path,
    name: &str,
    same_drawing: bool,
    tweak: impl FnOnce(&mut Options),
) -> Converted {
    let input = dir.join(name);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out.kanata");
    let (report, output) = convert_to(&input, &out, tweak);

    let stats = match canonical::check(&output) {
        Ok(stats) => stats,
        Err(violations) => panic!(
            "{name}: output not canonical: {:?}",
            &violations[..violations.len().min(10)]
        ),
    };
    let view = load(&output);
    assert!(
        view.warnings.is_empty(),
        "{name}: Konata warns on the output: {:?}",
        &view.warnings[..view.warnings.len().min(10)]
    );
    let raw_input = decompress(&fs::read(&input).unwrap()).unwrap();
    let input_view = load(&raw_input);
    if same_drawing {
        let diffs = diff_views(&input_view, &view, &Compare::drawn());
        assert!(
            diffs.is_empty(),
            "{name}: Konata draws the output unlike the input:\n{}",
            diffs.join("\n")
        );
    }

    // Idempotence: the output is canonical, so it comes back unchanged and unrepaired.
    let again = tmp.path().join("again.kanata");
    let (report_again, output_again) = convert_to(&out, &again, |_| {});
    assert!(
        output_again == output,
        "{name}: converting the output again changed it"
    );
    assert_eq!(
        report_again.diagnostics.total(),
        0,
        "{name}: converting the output again repaired: {:?}",
        report_again.diagnostics.rules()
    );

    // The summary agrees with the independent checker.
    let summary = &report.summary;
    assert_eq!(summary.instructions, stats.instructions, "{name}");
    assert_eq!(summary.retired, stats.retired, "{name}");
    assert_eq!(summary.flushed, stats.flushed, "{name}");
    assert_eq!(summary.left_open, stats.open_at_end, "{name}");
    assert_eq!(summary.last_cycle, stats.last_cycle, "{name}");

    Converted {
        report,
        output,
        stats,
        input_view,
        view,
    }
}

// ---------------------------------------------------------------------------------------
// Each file and its facts (SOURCES.md)
// ---------------------------------------------------------------------------------------

#[test]
fn sample_1_trailing_blanks_and_header_are_repaired() {
    let Some(dir) = corpus() else { return };
    let c = check(&dir, SAMPLE_1, true, |_| {});
    assert_eq!(c.report.lines_in, 15);
    assert_eq!(c.stats.instructions, 2);
    assert_eq!(
        (c.stats.retired, c.stats.flushed, c.stats.open_at_end),
        (1, 1, 0)
    );
    assert_eq!(c.stats.start_cycle, 216);
    // Trailing TAB plus spaces on every line after the header.
    assert_eq!(c.lines(Rule::Q1), (2..=15).collect::<Vec<u64>>());
    // Header `Kanata\t0004    `.
    assert_eq!(c.lines(Rule::Q2), vec![1]);
    assert!(c.text().contains("L\t0\t0\t12000d918 iBC(r17)\n"));
    assert!(c.text().contains("L\t1\t0\t12000d91c r4 = iALU(r3, r2)\n"));
    // No final newline (Q3: "no final newline … drop and count").
    assert_eq!(c.lines(Rule::Q3), vec![15]);
    assert_eq!(c.rules(), vec![Rule::Q1, Rule::Q2, Rule::Q3]);
}

#[test]
fn sample_2_rsd_log_keeps_its_instructions_and_moves_34_late_labels() {
    let Some(dir) = corpus() else { return };
    let c = check(&dir, SAMPLE_2, true, |_| {});
    assert_eq!(c.report.lines_in, 160_572);
    // 4,041 `I`, 4,000 `R`, 41 open at the end.
    assert_eq!(c.stats.instructions, 4_041);
    assert_eq!(c.stats.retired + c.stats.flushed, 4_000);
    assert_eq!(c.stats.open_at_end, 41);
    assert_eq!(c.view.insns.iter().filter(|i| i.eof()).count(), 41);
    // `C=\t-1` kept.
    assert_eq!(c.stats.start_cycle, -1);
    assert!(c.text().starts_with("Kanata\t0004\nC=\t-1\n"));
    // 34 `L` lines after their op's `R`, moved before it; nothing else repaired.
    assert_eq!(c.count(Rule::Q10), 34);
    assert_eq!(c.rules(), vec![Rule::Q10]);
    // Every flush keeps retire id 0; every label kept.
    assert!(c
        .view
        .insns
        .iter()
        .filter_map(|i| i.retired)
        .filter(|r| r.kind == RetireKind::Flushed)
        .all(|r| r.retire_id == 0));
    assert_eq!(c.stats.labels, 44_601);
    // Stall stages in lane 1.
    assert_eq!(
        c.text()
            .lines()
            .filter(|l| l.starts_with("S\t") && l.split('\t').nth(2) == Some("1"))
            .count(),
        642
    );
}

#[test]
fn kanata_basic_fixture_moves_its_late_label_and_keeps_w_type_7() {
    let Some(dir) = corpus() else { return };
    let c = check(&dir, BASIC, true, |_| {});
    assert_eq!(c.report.lines_in, 22);
    assert_eq!(c.stats.instructions, 2);
    assert_eq!((c.stats.retired, c.stats.flushed), (1, 1));
    assert_eq!(c.stats.start_cycle, 100);
    // The `L` after `R` (line 22, a cycle later) is moved before its `R`.
    assert_eq!(c.lines(Rule::Q10), vec![22]);
    assert_eq!(c.rules(), vec![Rule::Q10]);
    assert!(c.text().contains("L\t0\t1\t; post-retire detail\n"));
    assert_eq!(
        c.view.insns[0].label_detail,
        "producer detail; post-retire detail"
    );
    // `W` with type 7, `\n` escapes, `C 2`.
    assert!(c.text().contains("W\t1\t0\t7\n"));
    assert!(c.text().contains("L\t0\t0\tproducer\\nname\n"));
    assert!(c.text().contains("L\t0\t2\texecute\\nlabel\n"));
    assert!(c.text().contains("\nC\t2\n"));
    assert_eq!(c.view.insns[0].label_name, "producer\nname");
    assert_eq!(c.view.insns[1].lane("1")[0].name, "stl");
}

#[test]
fn jasmine_bluespec_log_padding_is_trimmed_and_implicit_ends_made_explicit() {
    let Some(dir) = corpus() else { return };
    let c = check(&dir, JASMINE, true, |_| {});
    assert_eq!(c.report.lines_in, 5_864);
    // 404 `I`, 401 `R` of which 90 flushes, 3 open.
    assert_eq!(c.stats.instructions, 404);
    assert_eq!(c.stats.retired + c.stats.flushed, 401);
    assert_eq!(c.stats.flushed, 90);
    assert_eq!(c.stats.open_at_end, 3);
    assert_eq!(c.stats.start_cycle, 1);
    // Every number is space-padded: Q1, and nothing else is repaired (the lanes are padded
    // numbers too, not lanes written `00` or `+1`).
    assert!(c.count(Rule::Q1) > 0);
    // No `E` in the input; every stage closed explicitly in the output.
    let input = fs::read(dir.join(JASMINE)).unwrap();
    assert!(!input.split(|&b| b == b'\n').any(|l| l.starts_with(b"E\t")));
    assert!(c.stats.stage_ends > 0);
    // The type-0 fragments are appended with no separator, as written.
    assert!(c
        .view
        .insns
        .iter()
        .any(|i| i.label_name.contains("decoding")));
    // One `C 1` per cycle: no two `C` lines in a row (checked canonical) and the same last cycle.
    assert_eq!(c.view.last_cycle, c.input_view.last_cycle);
    assert_eq!(c.rules(), vec![Rule::Q1]);
}

#[test]
fn pipelined_log_keeps_trailing_spaces_of_labels_and_open_instructions() {
    let Some(dir) = corpus() else { return };
    let c = check(&dir, PIPELINED, true, |_| {});
    assert_eq!(c.report.lines_in, 1_116);
    assert_eq!(c.stats.open_at_end, 5);
    assert_eq!(c.stats.start_cycle, 1);
    assert!(c.text().contains("L\t0\t0\t0x00000000: \n"));
    assert!(c.text().contains("L\t3\t0\t0x0000000c: \n"));
    assert_eq!(c.rules(), vec![Rule::Q1]);
}

#[test]
fn broken_log_deadlock_keeps_its_9999_cycles() {
    let Some(dir) = corpus() else { return };
    let c = check(&dir, BROKEN, true, |_| {});
    assert_eq!(c.report.lines_in, 49_762);
    // 9,999 cycles, each its own `C\t1`, merged: Konata's timeline is as long.
    assert_eq!(c.view.last_cycle, 9_999);
    assert_eq!(c.stats.last_cycle - c.stats.start_cycle, 9_999);
    // 59 `I`, 54 `R`: 5 never retired.
    assert_eq!(c.stats.instructions, 59);
    assert_eq!(c.stats.open_at_end, 5);
    // Without `--dedupe`, the 9,789 segments of `D` stay.
    let row = c
        .view
        .insns
        .iter()
        .find(|i| i.lane("0").iter().filter(|s| s.name == "D").count() > 9_000)
        .expect("the op that re-enters D every cycle");
    assert_eq!(
        row.lane("0").iter().filter(|s| s.name == "D").count(),
        9_789
    );
    assert_eq!(c.rules(), vec![Rule::Q1]);
}

#[test]
fn broken_log_with_dedupe_merges_the_repeated_stage_and_labels() {
    let Some(dir) = corpus() else { return };
    let plain = check(&dir, BROKEN, true, |_| {});
    let c = check(&dir, BROKEN, false, |o| o.repairs.dedupe = true);
    assert_eq!(c.view.last_cycle, 9_999);
    assert_eq!(c.stats.instructions, 59);
    assert_eq!(c.stats.open_at_end, 5);
    // The op that re-entered `D` 9,789 times has one `D` box, as long as all of them.
    let pos = plain
        .view
        .insns
        .iter()
        .position(|i| i.lane("0").iter().filter(|s| s.name == "D").count() > 9_000)
        .expect("the op that re-enters D every cycle");
    let before: Vec<_> = plain.view.insns[pos]
        .lane("0")
        .iter()
        .filter(|s| s.name == "D")
        .collect();
    let after: Vec<_> = c.view.insns[pos]
        .lane("0")
        .iter()
        .filter(|s| s.name == "D")
        .collect();
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0].start, before[0].start);
    assert_eq!(after[0].end, before.last().unwrap().end);
    // 9,788 `S D` merged and 9,788 repeats of `WRITEBACK 2` dropped at least.
    assert!(c.count(Rule::Q16) >= 2 * 9_788, "{}", c.count(Rule::Q16));
    assert!(c
        .view
        .insns
        .iter()
        .all(|i| i.label_name.matches("WRITEBACK 2").count() <= 1));
    assert!(c.stats.stage_starts < plain.stats.stage_starts / 10);
    assert!(c.output.len() < plain.output.len());
    // Everything else is drawn alike: same instructions, same cycles, same marks.
    let cmp = Compare {
        ignore_colors: true,
        ..Compare::drawn()
    };
    let diffs = diff_views(&plain.view, &c.view, &cmp);
    assert!(
        diffs
            .iter()
            .all(|d| d.contains("label") || d.contains("stages")),
        "{diffs:?}"
    );
}

/// A file added to the corpus without a test of its own still gets the checks every file
/// gets.
#[test]
fn every_other_corpus_file_converts_cleanly() {
    let Some(dir) = corpus() else { return };
    let names = corpus_files(&dir);
    for known in KNOWN {
        assert!(
            names.iter().any(|n| n == known),
            "{known} missing from the corpus"
        );
    }
    for name in names.iter().filter(|n| !KNOWN.contains(&n.as_str())) {
        eprintln!("checking {name} (no test of its own)");
        check(&dir, name, true, |_| {});
    }
}

// ---------------------------------------------------------------------------------------
// Determinism and compression (§4.9)
// ---------------------------------------------------------------------------------------

/// Converts `name` twice to each of plain, `.gz` and `.zst` output: the two conversions give
/// the same bytes, and the compressed outputs decompress to the plain output.
fn check_deterministic(dir: &Path, name: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let input = dir.join(name);
    let plain = |file: &str| convert_to(&input, &tmp.path().join(file), |_| {}).1;
    let first = plain("a.kanata");
    let second = plain("b.kanata");
    assert!(first == second, "{name}: two conversions differ");
    for ext in ["gz", "zst"] {
        let (a, b) = (format!("a.kanata.{ext}"), format!("b.kanata.{ext}"));
        let text = plain(&a);
        assert!(
            text == first,
            "{name}: .{ext} output decompresses to other bytes"
        );
        plain(&b);
        let (raw_a, raw_b) = (
            fs::read(tmp.path().join(&a)).unwrap(),
            fs::read(tmp.path().join(&b)).unwrap(),
        );
        let magic: &[u8] = if ext == "gz" {
            &[0x1f, 0x8b]
        } else {
            &[0x28, 0xb5, 0x2f, 0xfd]
        };
        assert!(
            raw_a.starts_with(magic),
            "{name}: .{ext} output is not {ext}"
        );
        assert!(raw_a == raw_b, "{name}: two .{ext} conversions differ");
    }
}

#[test]
fn sample_2_conversions_are_deterministic_and_compressed_output_holds_the_plain_bytes() {
    let Some(dir) = corpus() else { return };
    check_deterministic(&dir, SAMPLE_2);
}

#[test]
fn conversions_are_deterministic_and_compressed_output_holds_the_plain_bytes() {
    let Some(dir) = corpus() else { return };
    for name in corpus_files(&dir).iter().filter(|n| *n != SAMPLE_2) {
        check_deterministic(&dir, name);
    }
}
