//! kanata-pp, rule by rule: one or more tests per quirk rule of §5 of the format spec
//! (`shared/spec/kanata-format.md`), each named for its rule, plus the errors, `--strict` and
//! the optional clean-ups.
//!
//! Every test writes a small log to a temporary directory, converts it with
//! [`kanata_pp::convert`] into a file, and checks:
//!
//! - the output is canonical (§4, the independent checker in `kanata_tests::canonical`);
//! - Konata loads the output with zero warnings (`kanata_tests::konata_model`);
//! - for a rule whose Konata column says **same**, Konata draws the output exactly like the
//!   input; for **fixed**, the intended difference: the output is drawn like a hand-repaired
//!   log, and unlike what Konata makes of the raw input;
//! - the diagnostics name the rule and the input lines it applied to (and no other rule);
//! - an error names its line, leaves no output file, and leaves an existing one untouched.
//!
//! The lines of every input are numbered in comments (`// 5`) where a test names them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use kanata_pp::{convert, CloseOpen, Destination, Error, ErrorKind, Format, Options, Report, Rule};
use kanata_tests::canonical::{self, Options as Form, Stats};
use kanata_tests::{diff_views, load, try_load, Compare, Insn, LoadError, RetireKind, View};
use kanata_writer::{LabelKind, Lane, Writer};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// A log from its lines, each ended by LF.
fn log(lines: &[&str]) -> Vec<u8> {
    let mut text = lines.join("\n");
    text.push('\n');
    text.into_bytes()
}

/// One successful conversion.
struct Run {
    input: Vec<u8>,
    output: Vec<u8>,
    report: Report,
    /// Konata's view of the output.
    view: View,
}

/// The options of every test: into `out`, every example kept.
fn options_into(out: &Path) -> Options {
    let mut options = Options::new(Destination::Path(out.to_path_buf()));
    options.max_examples = usize::MAX;
    options
}

/// Converts `input` with the options `tweak` sets, and checks what every output must be:
/// canonical (compact when asked) and loaded by Konata with zero warnings.
#[track_caller]
fn pp_with(input: &[u8], tweak: impl FnOnce(&mut Options)) -> Run {
    let dir = tempfile::tempdir().expect("temp dir");
    let in_path = dir.path().join("in.log");
    fs::write(&in_path, input).expect("write input");
    let out = dir.path().join("out.kanata");
    let mut options = options_into(&out);
    tweak(&mut options);
    let report = match convert(&in_path, &options) {
        Ok(report) => report,
        Err(err) => panic!(
            "conversion failed: {err}\n--- input:\n{}",
            String::from_utf8_lossy(input)
        ),
    };
    let output = fs::read(&out).expect("the output file exists");
    let form = if options.repairs.compact {
        Form::COMPACT
    } else {
        Form::STRICT
    };
    if let Err(violations) = canonical::check_with(&output, form) {
        panic!(
            "output not canonical: {violations:?}\n--- output:\n{}",
            String::from_utf8_lossy(&output)
        );
    }
    let view = load(&output);
    assert!(
        view.warnings.is_empty(),
        "Konata warns on the output: {:?}\n--- output:\n{}",
        view.warnings,
        String::from_utf8_lossy(&output)
    );
    Run {
        input: input.to_vec(),
        output,
        report,
        view,
    }
}

/// Converts `input` with the default options.
#[track_caller]
fn pp(input: &[u8]) -> Run {
    pp_with(input, |_| {})
}

impl Run {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.output).into_owned()
    }

    fn stats(&self) -> Stats {
        canonical::check(&self.output)
            .or_else(|_| canonical::check_with(&self.output, Form::COMPACT))
            .expect("checked canonical")
    }

    /// Konata's view of the input.
    fn input_view(&self) -> View {
        load(&self.input)
    }

    /// The distinct input lines `rule` was reported at, in order.
    fn lines(&self, rule: Rule) -> Vec<u64> {
        rule_lines(&self.report, rule)
    }

    /// How many repairs `rule` counted.
    fn count(&self, rule: Rule) -> u64 {
        self.report
            .diagnostics
            .rules()
            .get(&rule)
            .map_or(0, |r| r.count)
    }

    /// The diagnostics are exactly these rules, each at exactly these input lines.
    #[track_caller]
    fn assert_rules(&self, expected: &[(Rule, &[u64])]) {
        let want: BTreeMap<Rule, Vec<u64>> =
            expected.iter().map(|(r, l)| (*r, l.to_vec())).collect();
        let got: BTreeMap<Rule, Vec<u64>> = self
            .report
            .diagnostics
            .rules()
            .keys()
            .map(|&r| (r, self.lines(r)))
            .collect();
        assert_eq!(
            got,
            want,
            "diagnostics (rule -> input lines) differ; messages: {:#?}\n--- input:\n{}",
            self.report.diagnostics.rules(),
            String::from_utf8_lossy(&self.input)
        );
    }

    /// Konata draws the output exactly like the input (rules marked **same**).
    #[track_caller]
    fn assert_drawn_like_input(&self) {
        let diffs = diff_views(&self.input_view(), &self.view, &Compare::drawn());
        assert!(
            diffs.is_empty(),
            "Konata draws the output unlike the input:\n{}\n--- input:\n{}\n--- output:\n{}",
            diffs.join("\n"),
            String::from_utf8_lossy(&self.input),
            self.text()
        );
    }

    /// Konata draws the output exactly like `expected`, a hand-repaired log (rules marked
    /// **fixed**).
    #[track_caller]
    fn assert_drawn_like(&self, expected: &[u8]) {
        let want = load(expected);
        assert!(want.warnings.is_empty(), "the expected log is not clean");
        let diffs = diff_views(&want, &self.view, &Compare::drawn());
        assert!(
            diffs.is_empty(),
            "Konata draws the output unlike the repaired log:\n{}\n--- expected:\n{}\n--- output:\n{}",
            diffs.join("\n"),
            String::from_utf8_lossy(expected),
            self.text()
        );
    }

    /// Konata draws the raw input differently from the output (the point of a **fixed** rule).
    #[track_caller]
    fn assert_input_drawn_differently(&self) {
        let diffs = diff_views(&self.input_view(), &self.view, &Compare::drawn());
        assert!(
            !diffs.is_empty(),
            "expected Konata to draw the raw input differently\n--- output:\n{}",
            self.text()
        );
    }
}

/// The distinct input lines `rule` was reported at, in order.
fn rule_lines(report: &Report, rule: Rule) -> Vec<u64> {
    let lines: BTreeSet<u64> = report
        .diagnostics
        .rules()
        .get(&rule)
        .map(|r| r.examples.iter().map(|e| e.line).collect())
        .unwrap_or_default();
    lines.into_iter().collect()
}

/// `input` without the lines numbered (1-based) in `drop`.
fn without_lines(input: &[u8], drop: &[usize]) -> Vec<u8> {
    let text = String::from_utf8(input.to_vec()).expect("UTF-8 input");
    text.lines()
        .enumerate()
        .filter(|(i, _)| !drop.contains(&(i + 1)))
        .map(|(_, l)| format!("{l}\n"))
        .collect::<String>()
        .into_bytes()
}

/// The boxes of every lane of `insn`: (name, start, end) as drawn.
fn boxes(insn: &Insn) -> BTreeMap<String, Vec<(String, i64, i64)>> {
    insn.lanes
        .iter()
        .map(|(lane, list)| {
            (
                lane.clone(),
                list.iter()
                    .map(|s| (s.name.clone(), s.start, s.end))
                    .collect(),
            )
        })
        .collect()
}

/// The boxes of lane `lane` of the instruction in row `row`.
fn lane_boxes(view: &View, row: usize, lane: &str) -> Vec<(String, i64, i64)> {
    boxes(&view.insns[row]).remove(lane).unwrap_or_default()
}

/// A conversion that must fail: checks that it leaves no output file (and no temporary file)
/// behind, that an existing output file stays untouched, and returns the error.
#[track_caller]
fn pp_err_with(input: &[u8], tweak: impl Fn(&mut Options)) -> Error {
    let dir = tempfile::tempdir().expect("temp dir");
    let in_path = dir.path().join("in.log");
    fs::write(&in_path, input).expect("write input");
    let out = dir.path().join("out.kanata");
    let mut options = options_into(&out);
    tweak(&mut options);

    // No output file yet: none afterwards, and nothing else left in the directory.
    let err = match convert(&in_path, &options) {
        Ok(report) => panic!(
            "expected an error, got {:?}\n--- output:\n{}",
            report.summary,
            String::from_utf8_lossy(&fs::read(&out).unwrap_or_default())
        ),
        Err(err) => err,
    };
    assert!(!out.exists(), "a failed conversion left {}", out.display());
    let left: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "in.log")
        .collect();
    assert!(left.is_empty(), "a failed conversion left {left:?}");

    // An existing output file: untouched.
    let precious = b"precious earlier output\n";
    fs::write(&out, precious).unwrap();
    let again = convert(&in_path, &options).expect_err("the same input fails again");
    assert_eq!(again.line(), err.line());
    assert_eq!(
        fs::read(&out).unwrap(),
        precious,
        "a failed conversion changed the existing output"
    );
    err
}

#[track_caller]
fn pp_err(input: &[u8]) -> Error {
    pp_err_with(input, |_| {})
}

/// A canonical trace written by kanata-writer, with labels, stalls, a flush, a late label,
/// a dependency and an instruction open at the end.
fn canonical_trace() -> Vec<u8> {
    let mut builder = kanata_writer::WriterBuilder::new();
    builder.late_labels(8).start_cycle(-1);
    let mut w = builder.from_writer(Vec::new()).unwrap();
    let (f, d, x) = (
        w.stage("F").unwrap(),
        w.stage("D").unwrap(),
        w.stage("X").unwrap(),
    );
    let a = w.begin(0x1000, 0).unwrap();
    w.label(a, LabelKind::Name, "0x1000: lw a0, 0(sp)").unwrap();
    w.enter(a, Lane::MAIN, f).unwrap();
    w.advance(1).unwrap();
    let b = w.begin(0x1004, 0).unwrap();
    w.enter(b, Lane::MAIN, f).unwrap();
    w.enter(a, Lane::MAIN, d).unwrap();
    w.label(a, LabelKind::StageNote, "decoded\nfast").unwrap();
    w.advance(1).unwrap();
    w.enter(a, Lane::MAIN, x).unwrap();
    w.enter(b, Lane::MAIN, d).unwrap();
    w.stall_begin(b).unwrap();
    w.advance(2).unwrap();
    w.retire(a).unwrap();
    w.stall_end(b).unwrap();
    w.enter(b, Lane::MAIN, x).unwrap();
    w.depend(b, a, kanata_writer::DepKind::WAKE_UP).unwrap();
    w.advance(1).unwrap();
    w.flush(b).unwrap();
    let c = w.begin(0x1008, 1).unwrap();
    w.enter(c, Lane::MAIN, f).unwrap();
    w.advance(1).unwrap();
    w.label(a, LabelKind::Detail, "a0 = 5").unwrap();
    w.advance(3).unwrap();
    w.finish().unwrap().output
}

// ---------------------------------------------------------------------------------------
// Q1: padding, trailing blanks, empty fields, empty labels (same)
// ---------------------------------------------------------------------------------------

#[test]
fn q1_padded_numbers_are_trimmed() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t 0",                                   // 2
        "I\t              0\t              0\t  0", // 3
        "S\t 0\t0\tF",                              // 4
        "C\t  1",                                   // 5
        "S\t0\t 0\tX",                              // 6
        "I\t1\t+7\t0",                              // 7
        "S\t01\t0\tF",                              // 8
        "W\t 1\t0\t 0",                             // 9
        "C\t1",                                     // 10
        "R\t0\t  0\t 0",                            // 11
        "R\t 1\t0\t1",                              // 12
    ]);
    let run = pp(&input);
    run.assert_drawn_like_input();
    assert_eq!(
        run.text(),
        String::from_utf8(log(&[
            "Kanata\t0004",
            "C=\t0",
            "I\t0\t0\t0",
            "S\t0\t0\tF",
            "C\t1",
            "E\t0\t0\tF",
            "S\t0\t0\tX",
            "I\t1\t7\t0",
            "S\t1\t0\tF",
            "W\t1\t0\t0",
            "C\t1",
            "E\t0\t0\tX",
            "R\t0\t0\t0",
            "E\t1\t0\tF",
            "R\t1\t0\t1",
        ]))
        .unwrap()
    );
    run.assert_rules(&[(Rule::Q1, &[2, 3, 4, 5, 6, 7, 8, 9, 11, 12])]);
}

#[test]
fn q1_trailing_tabs_spaces_and_empty_fields_are_dropped() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t216\t        ",  // 2
        "I\t0\t0\t0\t",       // 3
        "S\t0\t0\tF\t",       // 4
        "S\t0\t1\t stl \t\t", // 5
        "C\t1\t",             // 6
        "E\t0\t1\tstl  ",     // 7
        "S\t0\t0\tX",
        "C\t1",
        "R\t0\t0\t0\t\t", // 10
    ]);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q1, &[2, 3, 4, 5, 6, 7, 10])]);
    run.assert_drawn_like_input();
    assert!(run
        .text()
        .starts_with("Kanata\t0004\nC=\t216\nI\t0\t0\t0\nS\t0\t0\tF\n"));
    assert!(run.text().contains("S\t0\t1\tstl\n"));
}

#[test]
fn q1_label_text_is_never_trimmed() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "L\t0\t0\t0x00000000: ", // 4: trailing space separates fragments
        "L\t0\t0\t  addi x1 ",   // 5
        "L\t0\t1\t\\n r1 = 5  ", // 6
        "S\t0\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_rules(&[]);
    run.assert_drawn_like_input();
    assert!(run
        .text()
        .contains("L\t0\t0\t0x00000000: \nL\t0\t0\t  addi x1 \n"));
    assert!(run.text().contains("L\t0\t1\t\\n r1 = 5  \n"));
    assert_eq!(run.view.insns[0].label_name, "0x00000000:   addi x1 ");
}

#[test]
fn q1_blank_field_after_the_label_is_dropped() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "L\t0\t0\t12000d918 iBC(r17)\t    ", // 4
        "S\t0\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q1, &[4])]);
    run.assert_drawn_like_input();
    assert!(run.text().contains("L\t0\t0\t12000d918 iBC(r17)\n"));
}

#[test]
fn q1_empty_label_is_dropped() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "L\t0\t0\t", // 4
        "L\t0\t0\tadd",
        "S\t0\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q1, &[4])]);
    run.assert_drawn_like_input();
    assert_eq!(run.stats().labels, 1);
}

// ---------------------------------------------------------------------------------------
// Q2: header variants (same)
// ---------------------------------------------------------------------------------------

/// The body every Q2 test puts after its header.
const Q2_BODY: [&str; 6] = [
    "C=\t3",
    "I\t0\t0\t0",
    "L\t0\t0\tnop",
    "S\t0\t0\tF",
    "C\t1",
    "R\t0\t0\t0",
];

const Q2_OUTPUT: &str =
    "Kanata\t0004\nC=\t3\nI\t0\t0\t0\nL\t0\t0\tnop\nS\t0\t0\tF\nC\t1\nE\t0\t0\tF\nR\t0\t0\t0\n";

#[test]
fn q2_header_written_with_a_space_or_trailing_blanks_is_accepted() {
    for header in [
        "Kanata 0004",
        "Kanata\t0004\t",
        "Kanata\t0004    ",
        "Kanata  0004",
    ] {
        let mut lines = vec![header];
        lines.extend(Q2_BODY);
        let run = pp(&log(&lines));
        run.assert_rules(&[(Rule::Q2, &[1])]);
        run.assert_drawn_like_input();
        assert_eq!(run.text(), Q2_OUTPUT, "header {header:?}");
    }
}

#[test]
fn q2_byte_order_mark_before_the_header_is_dropped() {
    let mut input = b"\xef\xbb\xbf".to_vec();
    let mut lines = vec!["Kanata\t0004"];
    lines.extend(Q2_BODY);
    input.extend(log(&lines));
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q2, &[1])]);
    run.assert_drawn_like_input();
    assert_eq!(run.text(), Q2_OUTPUT);
}

#[test]
fn q2_blank_and_comment_lines_before_the_header_are_dropped() {
    let mut lines = vec![
        "",
        "# written by sim v1.2",
        "// trace begins",
        "   ",
        "Kanata\t0004",
    ];
    lines.extend(Q2_BODY);
    let input = log(&lines);
    // Konata refuses the raw file: its line 1 does not start with `Kanata`.
    assert_eq!(try_load(&input).unwrap_err(), LoadError::NotKanata);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q2, &[1, 2, 3, 4])]);
    // Drawn like the log without those lines.
    run.assert_drawn_like(&log(&lines[4..]));
    assert_eq!(run.text(), Q2_OUTPUT);
}

#[test]
fn q2_other_version_is_reported_and_written_as_4() {
    for header in ["Kanata\t0003", "Kanata\t0000", "Kanata\t0010"] {
        let mut lines = vec![header];
        lines.extend(Q2_BODY);
        let run = pp(&log(&lines));
        run.assert_rules(&[(Rule::Q2, &[1])]);
        run.assert_drawn_like_input();
        assert_eq!(run.text(), Q2_OUTPUT, "header {header:?}");
    }
}

#[test]
fn q2_legacy_log_without_header_gets_one() {
    let input = log(&Q2_BODY);
    assert_eq!(try_load(&input).unwrap_err(), LoadError::NotKanata);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q2, &[1])]);
    let mut with_header = b"Kanata\t0004\n".to_vec();
    with_header.extend(&input);
    run.assert_drawn_like(&with_header);
    assert_eq!(run.text(), Q2_OUTPUT);
}

#[test]
fn q2_second_header_is_dropped() {
    let mut lines = vec!["Kanata\t0004"];
    lines.extend(Q2_BODY);
    lines.insert(3, "Kanata\t0004"); // 4
    let run = pp(&log(&lines));
    run.assert_rules(&[(Rule::Q2, &[4])]);
    run.assert_drawn_like_input();
    assert_eq!(run.text(), Q2_OUTPUT);
}

// ---------------------------------------------------------------------------------------
// Q3: CR LF, no final newline, blank lines, comments (same); trailing comments
// ---------------------------------------------------------------------------------------

#[test]
fn q3_crlf_line_ends_and_a_missing_final_newline_are_repaired() {
    let input = b"Kanata\t0004\r\nC=\t0\r\nI\t0\t0\t0\r\nS\t0\t0\tF\r\nC\t2\r\nR\t0\t0\t0".to_vec();
    let run = pp(&input);
    run.assert_drawn_like_input();
    assert_eq!(
        run.text(),
        "Kanata\t0004\nC=\t0\nI\t0\t0\t0\nS\t0\t0\tF\nC\t2\nE\t0\t0\tF\nR\t0\t0\t0\n"
    );
    // CR LF on lines 1-5, no final newline on line 6: both "drop and count".
    run.assert_rules(&[(Rule::Q3, &[1, 2, 3, 4, 5, 6])]);
}

#[test]
fn q3_blank_and_comment_lines_are_dropped() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "",          // 3
        "# cycle 0", // 4
        "I\t0\t0\t0",
        "   ",      // 6
        "// fetch", // 7
        "\t",       // 8
        "S\t0\t0\tF",
        "  # indented", // 10
        "C\t1",
        "R\t0\t0\t0",
        "", // 13
    ]);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q3, &[3, 4, 6, 7, 8, 10, 13])]);
    run.assert_drawn_like_input();
    assert_eq!(
        run.text(),
        "Kanata\t0004\nC=\t0\nI\t0\t0\t0\nS\t0\t0\tF\nC\t1\nE\t0\t0\tF\nR\t0\t0\t0\n"
    );
}

#[test]
fn q3_unknown_commands_are_dropped() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "X\t0\t0\t0",          // 4
        "Stall\t0",            // 5
        "retire 0 at cycle 1", // 6
        "S\t0\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q3, &[4, 5, 6])]);
    run.assert_drawn_like_input();
}

#[test]
fn q3_trailing_comment_after_a_stage_or_an_r_type_is_dropped() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tF // fetch", // 4
        "C\t1",
        "E\t0\t0\tF  // done", // 6
        "S\t0\t0\tX",
        "C\t1",
        "R\t0\t0\t1 // squashed", // 9
    ]);
    let run = pp(&input);
    run.assert_input_drawn_differently();
    run.assert_drawn_like(&log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t1",
        "E\t0\t0\tF",
        "S\t0\t0\tX",
        "C\t1",
        "R\t0\t0\t1",
    ]));
    // Konata names the raw stage `F // fetch` and reads the type as NaN: retired.
    let raw = run.input_view();
    assert_eq!(raw.insns[0].lane("0")[0].name, "F // fetch");
    assert_eq!(run.view.insns[0].retired.unwrap().kind, RetireKind::Flushed);
    // Only the comment was wrong on those lines: Q3, not Q1.
    run.assert_rules(&[(Rule::Q3, &[4, 6, 9])]);
}

#[test]
fn q3_trailing_comment_after_a_cycle_is_dropped() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0 // start", // 2
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t1 // one cycle", // 5
        "S\t0\t0\tX",
        "C\t2  // two", // 7
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_input_drawn_differently();
    run.assert_drawn_like(&log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t1",
        "S\t0\t0\tX",
        "C\t2",
        "R\t0\t0\t0",
    ]));
    assert_eq!(run.stats().last_cycle, 3);
    run.assert_rules(&[(Rule::Q3, &[2, 5, 7])]);
}

// ---------------------------------------------------------------------------------------
// Q4, Q4b: cycle steps
// ---------------------------------------------------------------------------------------

#[test]
fn q4_cycle_steps_are_merged_and_c0_dropped() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t1",
        "C\t1",
        "C\t0", // 7
        "C\t1",
        "S\t0\t0\tX",
        "C\t0", // 10
        "C\t1",
        "R\t0\t0\t0",
        "C\t1",
        "C\t1",
    ]);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q4, &[7, 10])]);
    run.assert_drawn_like_input();
    assert_eq!(
        run.text(),
        "Kanata\t0004\nC=\t0\nI\t0\t0\t0\nS\t0\t0\tF\nC\t3\nE\t0\t0\tF\nS\t0\t0\tX\nC\t1\n\
         E\t0\t0\tX\nR\t0\t0\t0\nC\t2\n"
    );
}

#[test]
fn q4b_bare_c_is_one_cycle() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C", // 5
        "S\t0\t0\tD",
        "C\t ", // 7
        "S\t0\t0\tX",
        "C\t1",
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_input_drawn_differently();
    run.assert_drawn_like(&log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t1",
        "S\t0\t0\tD",
        "C\t1",
        "S\t0\t0\tX",
        "C\t1",
        "R\t0\t0\t0",
    ]));
    // Konata does not advance on a bare `C`: X starts at 0 there.
    assert_eq!(lane_boxes(&run.input_view(), 0, "0")[2].1, 0);
    assert_eq!(lane_boxes(&run.view, 0, "0")[2], ("X".into(), 2, 3));
    run.assert_rules(&[(Rule::Q4b, &[5, 7])]);
}

// ---------------------------------------------------------------------------------------
// Q5: the start cycle (fixed: Konata ignores every `C=`)
// ---------------------------------------------------------------------------------------

#[test]
fn q5_negative_start_is_kept() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t-1",
        "C\t1",
        "I\t0\t4\t0",
        "S\t0\t0\tNp",
        "C\t1",
        "E\t0\t0\tNp",
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_rules(&[]);
    run.assert_drawn_like_input();
    assert_eq!(run.output, input, "a canonical log comes back unchanged");
    assert_eq!(run.stats().start_cycle, -1);
}

#[test]
fn q5_late_start_commands_before_it_are_at_cycle_0() {
    let input = log(&[
        "Kanata\t0004",
        "I\t0\t0\t0", // 2: before any `C=`
        "S\t0\t0\tF",
        "C=\t10", // 4: acts as a later `C=`
        "S\t0\t0\tX",
        "C\t1",
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_input_drawn_differently();
    run.assert_rules(&[(Rule::Q5, &[2, 4])]);
    let expected = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t10",
        "E\t0\t0\tF",
        "S\t0\t0\tX",
        "C\t1",
        "E\t0\t0\tX",
        "R\t0\t0\t0",
    ]);
    assert_eq!(run.text(), String::from_utf8(expected).unwrap());
    // Konata loses the jump in the raw log: X starts at 0, F is invisible.
    assert_eq!(lane_boxes(&run.input_view(), 0, "0")[1], ("X".into(), 0, 1));
    assert_eq!(lane_boxes(&run.view, 0, "0")[1], ("X".into(), 10, 11));
}

#[test]
fn q5_repeated_start_mid_file_is_kept_as_a_cycle_step() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t100",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t2",
        "C=\t110", // 6
        "S\t0\t0\tX",
        "C\t1",
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_input_drawn_differently();
    run.assert_rules(&[(Rule::Q5, &[6])]);
    run.assert_drawn_like(&log(&[
        "Kanata\t0004",
        "C=\t100",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t2",
        "C\t8",
        "S\t0\t0\tX",
        "C\t1",
        "R\t0\t0\t0",
    ]));
    assert!(run.text().contains("S\t0\t0\tF\nC\t10\nE\t0\t0\tF\n"));
    assert_eq!(run.stats().start_cycle, 100);
    assert_eq!(run.stats().last_cycle, 111);
    assert_eq!(lane_boxes(&run.input_view(), 0, "0")[1].1, 2);
    assert_eq!(lane_boxes(&run.view, 0, "0")[1].1, 10);
}

#[test]
fn q5_absent_start_begins_at_cycle_0() {
    let input = log(&[
        "Kanata\t0004",
        "I\t0\t0\t0", // 2
        "S\t0\t0\tF",
        "C\t3",
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q5, &[2])]);
    run.assert_drawn_like_input();
    assert!(run.text().starts_with("Kanata\t0004\nC=\t0\nI\t0\t0\t0\n"));
}

#[test]
fn q5_start_going_back_is_an_error_naming_the_line() {
    let err = pp_err(&log(&[
        "Kanata\t0004",
        "C=\t100",
        "I\t0\t0\t0",
        "C\t5",
        "S\t0\t0\tF",
        "C=\t50", // 6
        "R\t0\t0\t0",
    ]));
    assert_eq!(err.kind(), ErrorKind::Input);
    assert_eq!(err.line(), Some(6), "{err}");
}

// ---------------------------------------------------------------------------------------
// Q6: no `E` at all (same)
// ---------------------------------------------------------------------------------------

#[test]
fn q6_implicit_ends_are_made_explicit() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t1",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t1",
        "S\t0\t0\tD",
        "S\t0\t1\tstl",
        "C\t1",
        "S\t0\t0\tX",
        "C\t1",
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_rules(&[]);
    run.assert_drawn_like_input();
    assert_eq!(
        run.text(),
        "Kanata\t0004\nC=\t1\nI\t0\t0\t0\nS\t0\t0\tF\nC\t1\nE\t0\t0\tF\nS\t0\t0\tD\n\
         S\t0\t1\tstl\nC\t1\nE\t0\t0\tD\nS\t0\t0\tX\nC\t1\nE\t0\t0\tX\nE\t0\t1\tstl\nR\t0\t0\t0\n"
    );
}

// ---------------------------------------------------------------------------------------
// Q7: `E` for a stage that is not open (fixed)
// ---------------------------------------------------------------------------------------

#[test]
fn q7_e_repeated_every_stalled_cycle_is_dropped() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t1",
        "E\t0\t0\tF",
        "C\t1",
        "E\t0\t0\tF", // 8
        "C\t1",
        "E\t0\t0\tF", // 10
        "S\t0\t0\tX",
        "C\t1",
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_input_drawn_differently();
    run.assert_rules(&[(Rule::Q7, &[8, 10])]);
    // The stage keeps its first end; Konata moved it to the last `E`.
    assert_eq!(lane_boxes(&run.input_view(), 0, "0")[0], ("F".into(), 0, 3));
    assert_eq!(lane_boxes(&run.view, 0, "0")[0], ("F".into(), 0, 1));
    // The input without lines 8 and 10.
    let repaired = without_lines(&input, &[8, 10]);
    run.assert_drawn_like(&repaired);
}

#[test]
fn q7_e_for_a_stage_that_is_not_the_open_one_is_dropped() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t1",
        "S\t0\t0\tD",
        "C\t1",
        "E\t0\t0\tF",   // 8: F was closed by `S D`
        "E\t0\t0\tX",   // 9: never entered
        "E\t0\t1\tstl", // 10: nothing ever in lane 1
        "S\t0\t0\tX",
        "C\t1",
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_input_drawn_differently();
    run.assert_rules(&[(Rule::Q7, &[8, 9, 10])]);
    assert_eq!(lane_boxes(&run.input_view(), 0, "0")[0], ("F".into(), 0, 2));
    assert_eq!(
        lane_boxes(&run.view, 0, "0"),
        vec![("F".into(), 0, 1), ("D".into(), 1, 2), ("X".into(), 2, 3)]
    );
}

#[test]
fn q7_e_after_s_next_in_the_same_cycle_is_dropped() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t1",
        "S\t0\t0\tD",
        "E\t0\t0\tF", // 7
        "C\t1",
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q7, &[7])]);
    // The boxes are the same; only the colour depth Konata gives the raw log can differ.
    let cmp = Compare {
        ignore_colors: true,
        ..Compare::drawn()
    };
    assert_eq!(
        diff_views(&run.input_view(), &run.view, &cmp),
        Vec::<String>::new()
    );
    run.assert_drawn_like(&log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t1",
        "S\t0\t0\tD",
        "C\t1",
        "R\t0\t0\t0",
    ]));
}

// ---------------------------------------------------------------------------------------
// Q8: a raw line break inside a label (fixed: Konata drops the second half)
// ---------------------------------------------------------------------------------------

#[test]
fn q8_raw_line_break_continues_the_label() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "L\t0\t0\t12000d918 stq r1",
        "L\t0\t1\tretire: r1 = 5", // 5
        "r2 = 6",                  // 6
        "  r3 = 7 ",               // 7
        "S\t0\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_input_drawn_differently();
    run.assert_rules(&[(Rule::Q8, &[6, 7])]);
    assert!(
        run.text()
            .contains("L\t0\t1\tretire: r1 = 5\\nr2 = 6\\n  r3 = 7 \n"),
        "{}",
        run.text()
    );
    assert_eq!(run.input_view().insns[0].label_detail, "retire: r1 = 5");
    assert_eq!(
        run.view.insns[0].label_detail,
        "retire: r1 = 5\nr2 = 6\n  r3 = 7 "
    );
    run.assert_drawn_like(&log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "L\t0\t0\t12000d918 stq r1",
        "L\t0\t1\tretire: r1 = 5\\nr2 = 6\\n  r3 = 7 ",
        "S\t0\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
    ]));
}

#[test]
fn q8_blank_or_comment_line_ends_the_label() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "L\t0\t1\tr1 = 5",
        "",       // 5: ends the label
        "r2 = 6", // 6: nothing to continue: unknown
        "L\t0\t0\tadd",
        "# note", // 8
        "more",   // 9
        "S\t0\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q3, &[5, 6, 8, 9])]);
    run.assert_drawn_like_input();
    assert_eq!(run.view.insns[0].label_detail, "r1 = 5");
    assert_eq!(run.view.insns[0].label_name, "add");
}

// ---------------------------------------------------------------------------------------
// Q9: TAB inside label text (fixed: Konata keeps field 3 only)
// ---------------------------------------------------------------------------------------

#[test]
fn q9_tab_inside_label_is_joined_with_a_space() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "L\t0\t1\tr1=5\tr2=6\t\tr3=7", // 4
        "L\t0\t0\tadd",
        "S\t0\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_input_drawn_differently();
    run.assert_rules(&[(Rule::Q9, &[4])]);
    assert!(run.text().contains("L\t0\t1\tr1=5 r2=6 r3=7\n"));
    assert_eq!(run.input_view().insns[0].label_detail, "r1=5");
    assert_eq!(run.view.insns[0].label_detail, "r1=5 r2=6 r3=7");
}

// ---------------------------------------------------------------------------------------
// Q10: commands after the instruction's `R`
// ---------------------------------------------------------------------------------------

#[test]
fn q10_label_after_r_within_the_window_is_moved_before_it() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
        "L\t0\t0\t00001004: jal zero, 0x0", // 7: same cycle (RSD)
        "L\t0\t2\tlate note",               // 8
        "C\t1",
        "I\t1\t0\t0",
        "S\t1\t0\tF",
        "C\t1",
        "R\t1\t1\t1",
        "C\t1",
        "L\t1\t0\tone cycle later", // 15: Konata's fixture
        "L\t1\t1\tdetail",          // 16
    ]);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q10, &[7, 8, 15, 16])]);
    run.assert_drawn_like_input();
    let text = run.text();
    assert!(
        text.contains(
            "L\t0\t0\t00001004: jal zero, 0x0\nL\t0\t2\tlate note\nE\t0\t0\tF\nR\t0\t0\t0\n"
        ) || text.contains(
            "E\t0\t0\tF\nL\t0\t0\t00001004: jal zero, 0x0\nL\t0\t2\tlate note\nR\t0\t0\t0\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("L\t1\t0\tone cycle later\nL\t1\t1\tdetail\nR\t1\t1\t1\nC\t1\n"),
        "{text}"
    );
}

/// Konata unescapes `\n` at `R` only, so a label it applies after the `R` keeps the two
/// characters; moved before the `R`, the escape shows as the line break the writer meant
/// (§2). The only difference Konata draws is that label.
#[test]
fn q10_moved_label_with_a_line_break_escape_shows_the_line_break() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
        "L\t0\t1\tr1 = 5\\nr2 = 6", // 7
    ]);
    let run = pp(&input);
    assert_eq!(run.input_view().insns[0].label_detail, "r1 = 5\\nr2 = 6");
    assert_eq!(run.view.insns[0].label_detail, "r1 = 5\nr2 = 6");
    let diffs = diff_views(&run.input_view(), &run.view, &Compare::drawn());
    assert_eq!(diffs.len(), 1, "{diffs:?}");
    assert!(diffs[0].contains("detail label"), "{diffs:?}");
    run.assert_rules(&[(Rule::Q10, &[7])]);
}

#[test]
fn q10_label_beyond_the_late_window_is_dropped() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "I\t1\t0\t0",
        "S\t0\t0\tF",
        "S\t1\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
        "C\t1",
        "R\t1\t1\t0",
        "C\t2",
        "L\t1\t0\ttwo cycles late",   // 12: within a window of 2
        "L\t0\t0\tthree cycles late", // 13: beyond
        "C\t1",
    ]);
    let run = pp_with(&input, |o| o.repairs.late_window = 2);
    run.assert_rules(&[(Rule::Q10, &[12, 13])]);
    assert_eq!(run.view.insns[0].label_name, "");
    assert_eq!(run.view.insns[1].label_name, "two cycles late");
    assert_eq!(run.input_view().insns[0].label_name, "three cycles late");
    assert!(!run.text().contains("three cycles late"));
}

#[test]
fn q10_default_late_window_is_64_cycles() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
        "C\t64",
        "L\t0\t0\t64 cycles late", // 8: moved
        "I\t1\t0\t0",
        "S\t1\t0\tF",
        "C\t1",
        "R\t1\t1\t0",
        "C\t65",
        "L\t1\t0\t65 cycles late", // 14: dropped
    ]);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q10, &[8, 14])]);
    assert_eq!(run.view.insns[0].label_name, "64 cycles late");
    assert_eq!(run.view.insns[1].label_name, "");
    assert_eq!(run.stats().last_cycle, 131);
}

#[test]
fn q10_stage_dependency_and_second_r_after_r_are_dropped() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "I\t1\t0\t0",
        "S\t0\t0\tX",
        "S\t1\t0\tF",
        "C\t1",
        "R\t1\t0\t1", // 8: flushed
        "S\t1\t0\tD", // 9
        "E\t1\t0\tD", // 10
        "W\t1\t0\t0", // 11
        "R\t1\t0\t0", // 12
        "C\t1",
        "S\t1\t0\tX", // 14: a cycle later, still dropped
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_input_drawn_differently();
    run.assert_rules(&[(Rule::Q10, &[9, 10, 11, 12, 14])]);
    let insn = &run.view.insns[1];
    assert_eq!(insn.retired.unwrap().kind, RetireKind::Flushed);
    assert_eq!(insn.retired.unwrap().cycle, 1);
    assert_eq!(lane_boxes(&run.view, 1, "0"), vec![("F".into(), 0, 1)]);
    assert!(insn.producers.is_empty());
    // Konata applies them: the raw instruction ends up retired, with more stages.
    assert_eq!(
        run.input_view().insns[1].retired.unwrap().kind,
        RetireKind::Retired
    );
}

// ---------------------------------------------------------------------------------------
// Q11: file ids used again (fixed: Konata ignores the second `I`)
// ---------------------------------------------------------------------------------------

#[test]
fn q11_reused_id_starts_a_new_instruction() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t10\t0",
        "S\t0\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
        "I\t0\t11\t0", // 7: id 0 used again
        "L\t0\t0\tsecond",
        "S\t0\t0\tF",
        "C\t1",
        "R\t0\t1\t0",
    ]);
    let run = pp(&input);
    run.assert_input_drawn_differently();
    run.assert_rules(&[(Rule::Q11, &[7])]);
    assert_eq!(run.input_view().insns.len(), 1, "Konata shows one");
    assert_eq!(run.view.insns.len(), 2);
    run.assert_drawn_like(&log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t10\t0",
        "S\t0\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
        "I\t1\t11\t0",
        "L\t1\t0\tsecond",
        "S\t1\t0\tF",
        "C\t1",
        "R\t1\t1\t0",
    ]));
}

#[test]
fn q11_i_for_live_id_flushes_the_old_one() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t10\t0",
        "S\t0\t0\tF",
        "C\t1",
        "I\t0\t11\t0", // 6: id 0 still live (a micro-op)
        "S\t0\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_input_drawn_differently();
    run.assert_rules(&[(Rule::Q11, &[6])]);
    assert!(
        run.text().contains("E\t0\t0\tF\nR\t0\t0\t1\nI\t1\t11\t0\n"),
        "{}",
        run.text()
    );
    assert_eq!(run.input_view().insns.len(), 1);
    run.assert_drawn_like(&log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t10\t0",
        "S\t0\t0\tF",
        "C\t1",
        "R\t0\t0\t1",
        "I\t1\t11\t0",
        "S\t1\t0\tF",
        "C\t1",
        "R\t1\t0\t0",
    ]));
}

#[test]
fn q11_dependency_producer_is_the_live_or_latest_instruction_with_that_id() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0", // file id 0
        "S\t0\t0\tX",
        "C\t1",
        "R\t0\t0\t0",
        "I\t0\t1\t0", // 7: file id 1
        "S\t0\t0\tX",
        "I\t1\t2\t0", // file id 2
        "S\t1\t0\tX",
        "W\t1\t0\t0", // 11: producer is the live id 0, file id 1
        "C\t1",
        "R\t0\t1\t0",
        "I\t2\t3\t0", // file id 3
        "S\t2\t0\tX",
        "W\t2\t0\t0", // 16: id 0 finished twice: the latest, file id 1
        "C\t1",
        "R\t1\t2\t0",
        "R\t2\t3\t0",
    ]);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q11, &[7])]);
    run.assert_drawn_like(&log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tX",
        "C\t1",
        "R\t0\t0\t0",
        "I\t1\t1\t0",
        "S\t1\t0\tX",
        "I\t2\t2\t0",
        "S\t2\t0\tX",
        "W\t2\t1\t0",
        "C\t1",
        "R\t1\t1\t0",
        "I\t3\t3\t0",
        "S\t3\t0\tX",
        "W\t3\t1\t0",
        "C\t1",
        "R\t2\t2\t0",
        "R\t3\t3\t0",
    ]));
    assert!(run.text().contains("W\t2\t1\t0\n") && run.text().contains("W\t3\t1\t0\n"));
}

// ---------------------------------------------------------------------------------------
// Q12: unknown ids and undrawable dependencies
// ---------------------------------------------------------------------------------------

#[test]
fn q12_commands_for_an_undeclared_id_are_dropped() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "L\t9\t0\tghost", // 4
        "S\t9\t0\tF",     // 5
        "S\t0\t0\tF",
        "C\t1",
        "E\t9\t0\tF", // 8
        "W\t9\t0\t0", // 9
        "R\t9\t0\t0", // 10
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q12, &[4, 5, 8, 9, 10])]);
    run.assert_drawn_like_input();
    assert_eq!(run.stats().instructions, 1);
}

#[test]
fn q12_dependency_on_a_producer_never_seen_or_not_older_is_dropped() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "I\t1\t0\t0",
        "S\t0\t0\tX",
        "S\t1\t0\tX",
        "W\t0\t1\t0", // 7: producer younger
        "W\t1\t7\t0", // 8: never appeared
        "W\t1\t1\t0", // 9: itself
        "W\t1\t0\t0", // fine
        "C\t1",
        "R\t0\t0\t0",
        "R\t1\t1\t0",
    ]);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q12, &[7, 8, 9])]);
    assert_eq!(run.stats().dependencies, 1);
    run.assert_drawn_like(&log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "I\t1\t0\t0",
        "S\t0\t0\tX",
        "S\t1\t0\tX",
        "W\t1\t0\t0",
        "C\t1",
        "R\t0\t0\t0",
        "R\t1\t1\t0",
    ]));
}

#[test]
fn q12_stage_note_before_any_stage_is_dropped() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "L\t0\t2\tnote", // 4
        "S\t0\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q12, &[4])]);
    run.assert_drawn_like_input();
}

// ---------------------------------------------------------------------------------------
// Q13: `R` type and retire id (fixed)
// ---------------------------------------------------------------------------------------

#[test]
fn q13_empty_r_type_is_read_as_retired() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "I\t1\t0\t0",
        "I\t2\t0\t0",
        "S\t0\t0\tF",
        "S\t1\t0\tF",
        "S\t2\t0\tF",
        "C\t1",
        "R\t0\t0\t",  // 10: empty type
        "R\t1\t1",    // 11: no type field
        "R\t2\t2\tx", // 12: not a number
        "C\t1",
    ]);
    let run = pp(&input);
    run.assert_input_drawn_differently();
    run.assert_rules(&[(Rule::Q13, &[10, 11, 12])]);
    // Konata drops those `R`s: drawn open to the end.
    assert!(run.input_view().insns.iter().all(|i| i.eof()));
    run.assert_drawn_like(&log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "I\t1\t0\t0",
        "I\t2\t0\t0",
        "S\t0\t0\tF",
        "S\t1\t0\tF",
        "S\t2\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
        "R\t1\t1\t0",
        "R\t2\t2\t0",
        "C\t1",
    ]));
}

#[test]
fn q13_r_types_48_49_decided_by_first_typed_r() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "I\t1\t0\t0",
        "I\t2\t0\t0",
        "S\t0\t0\tF",
        "S\t1\t0\tF",
        "S\t2\t0\tF",
        "C\t1",
        "R\t0\t0\t48", // 10: '0'
        "R\t1\t0\t49", // 11: '1'
        "R\t2\t1\t48", // 12
    ]);
    let run = pp(&input);
    run.assert_input_drawn_differently();
    run.assert_rules(&[(Rule::Q13, &[10, 11, 12])]);
    let kinds: Vec<RetireKind> = run
        .view
        .insns
        .iter()
        .map(|i| i.retired.unwrap().kind)
        .collect();
    assert_eq!(
        kinds,
        [
            RetireKind::Retired,
            RetireKind::Flushed,
            RetireKind::Retired
        ]
    );
    // Konata sees 49 as "not 1": retired.
    assert_eq!(
        run.input_view().insns[1].retired.unwrap().kind,
        RetireKind::Retired
    );
    assert!(run.text().contains("R\t1\t0\t1\n"));
}

#[test]
fn q13_48_49_after_a_plain_first_type_mean_retire() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "I\t1\t0\t0",
        "S\t0\t0\tF",
        "S\t1\t0\tF",
        "C\t1",
        "R\t0\t0\t1",  // the first typed `R` decides: plain 0/1
        "R\t1\t0\t49", // 9: another value: retired
    ]);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q13, &[9])]);
    run.assert_drawn_like_input();
    assert_eq!(run.view.insns[1].retired.unwrap().kind, RetireKind::Retired);
}

#[test]
fn q13_other_type_values_mean_retire() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "I\t1\t0\t0",
        "I\t2\t0\t0",
        "S\t0\t0\tF",
        "S\t1\t0\tF",
        "S\t2\t0\tF",
        "C\t1",
        "R\t0\t0\t2",  // 10
        "R\t1\t1\t7",  // 11
        "R\t2\t2\t-1", // 12
    ]);
    let run = pp(&input);
    run.assert_rules(&[(Rule::Q13, &[10, 11, 12])]);
    run.assert_drawn_like_input();
    assert!(run
        .view
        .insns
        .iter()
        .all(|i| i.retired.unwrap().kind == RetireKind::Retired));
}

#[test]
fn q13_missing_or_invalid_retire_id_becomes_0() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "I\t1\t0\t0",
        "S\t0\t0\tF",
        "S\t1\t0\tF",
        "C\t1",
        "R\t0\t\t0",  // 8: empty retire id
        "R\t1\tx\t1", // 9: not a number
    ]);
    let run = pp(&input);
    run.assert_input_drawn_differently();
    run.assert_rules(&[(Rule::Q13, &[8, 9])]);
    assert!(run.text().contains("R\t0\t0\t0\n") && run.text().contains("R\t1\t0\t1\n"));
    // Konata drops both `R`s.
    assert!(run.input_view().insns.iter().all(|i| i.eof()));
    run.assert_drawn_like(&log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "I\t1\t0\t0",
        "S\t0\t0\tF",
        "S\t1\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
        "R\t1\t0\t1",
    ]));
}

// ---------------------------------------------------------------------------------------
// Q14: retire ids not serial (same; renumbered on request)
// ---------------------------------------------------------------------------------------

/// Retire ids as RSD and Bluespec write them: flushes with 0, retirements with the file id.
fn q14_input() -> Vec<u8> {
    log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "I\t1\t0\t0",
        "I\t2\t0\t0",
        "I\t3\t0\t0",
        "S\t0\t0\tF",
        "S\t1\t0\tF",
        "S\t2\t0\tF",
        "S\t3\t0\tF",
        "C\t1",
        "R\t0\t0\t0", // 12
        "R\t1\t0\t1", // 13: flush
        "R\t2\t2\t0", // 14
        "R\t3\t3\t0", // 15
    ])
}

#[test]
fn q14_retire_ids_are_kept_by_default() {
    let run = pp(&q14_input());
    run.assert_rules(&[]);
    run.assert_drawn_like_input();
    assert_eq!(run.stats().retire_ids, vec![0, 2, 3]);
}

#[test]
fn q14_renumber_retire_makes_retire_ids_serial() {
    let run = pp_with(&q14_input(), |o| o.repairs.renumber_retire = true);
    run.assert_rules(&[(Rule::Q14, &[14, 15])]);
    assert_eq!(run.stats().retire_ids, vec![0, 1, 2]);
    let cmp = Compare {
        ignore_retire_ids: true,
        ..Compare::drawn()
    };
    assert_eq!(
        diff_views(&run.input_view(), &run.view, &cmp),
        Vec::<String>::new()
    );
    assert!(run.text().contains("R\t1\t0\t1\n"));
}

// ---------------------------------------------------------------------------------------
// Q15: instructions never retired (same; closed on request)
// ---------------------------------------------------------------------------------------

fn q15_input() -> Vec<u8> {
    log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "I\t1\t0\t0",
        "I\t2\t0\t0",
        "S\t0\t0\tF",
        "S\t1\t0\tF",
        "S\t2\t0\tF",
        "C\t1",
        "S\t1\t0\tX",
        "S\t2\t1\tstl",
        "C\t2",
        "R\t0\t5\t0",
        "C\t1",
        "S\t2\t0\tD",
        "C\t3",
    ])
}

#[test]
fn q15_open_instructions_are_kept_by_default() {
    let run = pp(&q15_input());
    run.assert_rules(&[]);
    run.assert_drawn_like_input();
    assert_eq!(run.stats().open_at_end, 2);
    assert_eq!(run.report.summary.left_open, 2);
    assert!(run.text().ends_with("S\t2\t0\tD\nC\t3\n"));
}

/// Checks a Q15 conversion: every box is drawn as in the input, and the open instructions
/// got the mark `kind` one cycle after the last one, with the retire ids `ids`.
#[track_caller]
fn check_closed(run: &Run, kind: RetireKind, ids: &[i64]) {
    let raw = run.input_view();
    assert_eq!(raw.insns.len(), run.view.insns.len());
    let mut closed = Vec::new();
    for (a, b) in raw.insns.iter().zip(&run.view.insns) {
        assert_eq!(boxes(a), boxes(b), "boxes of insn {}", a.file_id);
        assert_eq!(
            a.retired_cycle, b.retired_cycle,
            "insn {} drawn to",
            a.file_id
        );
        if a.eof() {
            let mark = b.retired.expect("closed");
            assert_eq!(mark.kind, kind);
            assert_eq!(mark.cycle, raw.last_cycle + 1);
            closed.push(mark.retire_id);
        } else {
            assert_eq!(a.retired, b.retired);
        }
    }
    assert_eq!(closed, ids);
    assert_eq!(run.stats().open_at_end, 0);
    assert_eq!(run.lines(Rule::Q15), vec![0]);
    assert_eq!(run.count(Rule::Q15), 2);
    assert_eq!(run.report.diagnostics.rules().len(), 1);
}

#[test]
fn q15_close_open_flush_draws_the_same_boxes_with_a_flush_mark() {
    let run = pp_with(&q15_input(), |o| {
        o.repairs.close_open = Some(CloseOpen::Flush)
    });
    check_closed(&run, RetireKind::Flushed, &[0, 0]);
}

#[test]
fn q15_close_open_retire_draws_the_same_boxes_with_retire_ids_after_the_last() {
    let run = pp_with(&q15_input(), |o| {
        o.repairs.close_open = Some(CloseOpen::Retire)
    });
    check_closed(&run, RetireKind::Retired, &[6, 7]);
}

// ---------------------------------------------------------------------------------------
// Q16: repeated labels and stage segments (same unless asked)
// ---------------------------------------------------------------------------------------

fn q16_input() -> Vec<u8> {
    log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "L\t0\t0\tPC 00000000",
        "S\t0\t0\tF",
        "C\t1",
        "L\t0\t0\tPC 00000000", // 7: same as the previous type-0 label
        "L\t0\t1\tPC 00000000", // another type: kept
        "S\t0\t0\tD",
        "C\t1",
        "L\t0\t0\tPC 00000000", // 11
        "S\t0\t0\tD",           // 12: D is open
        "C\t1",
        "S\t0\t0\tD", // 14
        "L\t0\t0\tdecoding",
        "C\t1",
        "L\t0\t0\tPC 00000000", // differs from the previous one: kept
        "S\t0\t0\tX",
        "C\t1",
        "R\t0\t0\t0",
    ])
}

#[test]
fn q16_without_dedupe_repeats_are_kept() {
    let run = pp(&q16_input());
    run.assert_rules(&[]);
    run.assert_drawn_like_input();
}

#[test]
fn q16_dedupe_drops_a_repeated_identical_label() {
    let run = pp_with(&q16_input(), |o| o.repairs.dedupe = true);
    assert_eq!(run.lines(Rule::Q16), vec![7, 11, 12, 14]);
    assert_eq!(
        run.view.insns[0].label_name,
        "PC 00000000decodingPC 00000000"
    );
    assert_eq!(run.view.insns[0].label_detail, "PC 00000000");
    assert_eq!(
        run.input_view().insns[0].label_name,
        "PC 00000000PC 00000000PC 00000000decodingPC 00000000"
    );
}

#[test]
fn q16_dedupe_merges_s_of_the_stage_already_open() {
    let run = pp_with(&q16_input(), |o| o.repairs.dedupe = true);
    run.assert_rules(&[(Rule::Q16, &[7, 11, 12, 14])]);
    assert_eq!(
        lane_boxes(&run.view, 0, "0"),
        vec![("F".into(), 0, 1), ("D".into(), 1, 4), ("X".into(), 4, 5)]
    );
    assert_eq!(
        lane_boxes(&run.input_view(), 0, "0"),
        vec![
            ("F".into(), 0, 1),
            ("D".into(), 1, 2),
            ("D".into(), 2, 3),
            ("D".into(), 3, 4),
            ("X".into(), 4, 5)
        ]
    );
}

#[test]
fn q16_dedupe_merges_e_then_s_of_the_same_stage_in_one_cycle() {
    // The pattern of RSD's converter: an explicit `E` before every `S`, even of the same stage.
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t1",
        "E\t0\t0\tF", // 6
        "S\t0\t0\tF", // 7
        "C\t1",
        "E\t0\t0\tF", // 9
        "S\t0\t0\tF", // 10
        "C\t1",
        "E\t0\t0\tF",
        "S\t0\t0\tX",
        "C\t1",
        "E\t0\t0\tX",
        "R\t0\t0\t0",
    ]);
    let plain = pp(&input);
    plain.assert_rules(&[]);
    plain.assert_drawn_like_input();

    let run = pp_with(&input, |o| o.repairs.dedupe = true);
    assert_eq!(
        lane_boxes(&run.view, 0, "0"),
        vec![("F".into(), 0, 3), ("X".into(), 3, 4)]
    );
    // One report per merge, at its `E` or its `S`.
    let lines = run.lines(Rule::Q16);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        [6, 7].contains(&lines[0]) && [9, 10].contains(&lines[1]),
        "{lines:?}"
    );
    assert_eq!(run.report.diagnostics.rules().len(), 1);
}

// ---------------------------------------------------------------------------------------
// Q17: zero-length stages (same unless asked)
// ---------------------------------------------------------------------------------------

fn q17_input() -> Vec<u8> {
    log(&[
        "Kanata\t0004",
        "C=\t0",
        "C\t1", // away from Konata's cycle 0, where a stage closed is reopened
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "R\t0\t0\t1", // 6: flushed in its fetch cycle
        "I\t1\t0\t0",
        "S\t1\t0\tF",
        "S\t1\t0\tD", // 9: F lasts zero cycles
        "C\t2",
        "R\t1\t0\t0",
        "C\t1",
    ])
}

#[test]
fn q17_zero_length_stages_are_kept_by_default() {
    let run = pp(&q17_input());
    run.assert_rules(&[]);
    run.assert_drawn_like_input();
    assert!(run.view.insns[0].visible_boxes("0").is_empty());
}

#[test]
fn q17_stretch_zero_makes_a_zero_length_stage_one_cycle_long() {
    let run = pp_with(&q17_input(), |o| o.repairs.stretch_zero = true);
    // Konata does not paint them in the raw log.
    let raw = run.input_view();
    assert!(raw.insns[0].visible_boxes("0").is_empty());
    assert_eq!(raw.insns[1].visible_boxes("0").len(), 1);
    // Stretched: visible, one cycle long, from where they started.
    for row in [0, 1] {
        let f = &run.view.insns[row].lane("0")[0];
        assert_eq!(f.name, "F");
        assert_eq!(f.start, 1, "row {row}");
        assert_eq!(f.len(), 1, "row {row}");
        assert!(run.view.insns[row].has_body());
    }
    assert_eq!(run.view.insns[0].retired.unwrap().kind, RetireKind::Flushed);
    let d = &run.view.insns[1].lane("0")[1];
    assert_eq!(d.name, "D");
    assert!(d.visible());
    assert_eq!(run.lines(Rule::Q17), vec![6, 9]);
}

// ---------------------------------------------------------------------------------------
// Q18: a prefix on every line (fixed when asked)
// ---------------------------------------------------------------------------------------

fn q18_input() -> Vec<u8> {
    log(&[
        "konata_output: Kanata\t0004",
        "konata_output: C=\t0",
        "[sim] cycle 0: fetch 0x80000000", // 3
        "konata_output: I\t0\t0\t0",
        "konata_output: L\t0\t0\t80000000: addi",
        "konata_output: S\t0\t0\tF",
        "konata_output: C\t1",
        "Warning: something else", // 8
        "konata_output: R\t0\t0\t0",
    ])
}

const Q18_OUTPUT: &str =
    "Kanata\t0004\nC=\t0\nI\t0\t0\t0\nL\t0\t0\t80000000: addi\nS\t0\t0\tF\nC\t1\nE\t0\t0\tF\nR\t0\t0\t0\n";

#[test]
fn q18_strip_prefix_keeps_only_prefixed_lines() {
    let run = pp_with(&q18_input(), |o| {
        o.from = Some(Format::Kanata);
        o.repairs.strip_prefix = Some(b"konata_output:".to_vec());
    });
    run.assert_rules(&[(Rule::Q18, &[3, 8])]);
    assert_eq!(run.text(), Q18_OUTPUT);
}

#[test]
fn q18_strip_prefix_works_without_naming_the_format() {
    // What `kanata-pp --strip-prefix konata_output: sim.out` does: the format is detected.
    let mut input = log(&["Simulation starting (seed 1)"]);
    input.extend(q18_input());
    let run = pp_with(&input, |o| {
        o.repairs.strip_prefix = Some(b"konata_output:".to_vec());
    });
    run.assert_rules(&[(Rule::Q18, &[1, 4, 9])]);
    assert_eq!(run.text(), Q18_OUTPUT);
}

// ---------------------------------------------------------------------------------------
// Q19: fields separated by spaces (fixed)
// ---------------------------------------------------------------------------------------

#[test]
fn q19_space_separated_fields_are_accepted() {
    let input = log(&[
        "Kanata 0004",               // 1: Q2
        "C= 0",                      // 2
        "I 0 0 0",                   // 3
        "L 0 0 0x1000: add  x1, x2", // 4
        "L 0 1  r1 = 5",             // 5: one separator, then the label
        "S 0 0 F",                   // 6
        "C 1",                       // 7
        "S  0  0  X",                // 8
        "W\t0\t0\t0",                // not Q19 (and dropped: Q12)
        "C 1",                       // 10
        "R 0 0 0",                   // 11
    ]);
    let run = pp(&input);
    run.assert_input_drawn_differently();
    run.assert_rules(&[
        (Rule::Q2, &[1]),
        (Rule::Q12, &[9]),
        (Rule::Q19, &[2, 3, 4, 5, 6, 7, 8, 10, 11]),
    ]);
    assert!(run.input_view().insns.is_empty(), "Konata reads none of it");
    run.assert_drawn_like(&log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "L\t0\t0\t0x1000: add  x1, x2",
        "L\t0\t1\t r1 = 5",
        "S\t0\t0\tF",
        "C\t1",
        "S\t0\t0\tX",
        "C\t1",
        "R\t0\t0\t0",
    ]));
    assert!(run
        .text()
        .contains("L\t0\t0\t0x1000: add  x1, x2\nL\t0\t1\t r1 = 5\n"));
}

// ---------------------------------------------------------------------------------------
// Q20: lanes written oddly (fixed)
// ---------------------------------------------------------------------------------------

#[test]
fn q20_lane_written_00_or_plus_1_is_written_plain() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t00\tF", // 4
        "C\t1",
        "S\t0\t+1\tstl", // 6
        "S\t0\t0\tD",
        "C\t1",
        "E\t0\t01\tstl", // 9
        "E\t0\t 0\tD",   // 10: padding is Q1
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_input_drawn_differently();
    let raw = run.input_view();
    assert!(raw.insns[0].lanes.contains_key("00") && raw.insns[0].lanes.contains_key("+1"));
    run.assert_drawn_like(&log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t1",
        "S\t0\t1\tstl",
        "S\t0\t0\tD",
        "C\t1",
        "E\t0\t1\tstl",
        "E\t0\t0\tD",
        "R\t0\t0\t0",
    ]));
    run.assert_rules(&[(Rule::Q1, &[10]), (Rule::Q20, &[4, 6, 9])]);
}

#[test]
fn q20_stage_with_a_lane_that_is_not_a_number_is_dropped() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "S\t0\tx\tstl",  // 5
        "S\t0\t-1\tstl", // 6
        "S\t0\t\tstl",   // 7
        "C\t1",
        "E\t0\tx\tstl", // 9
        "R\t0\t0\t0",
    ]);
    let run = pp(&input);
    run.assert_input_drawn_differently();
    run.assert_rules(&[(Rule::Q20, &[5, 6, 7, 9])]);
    assert_eq!(run.view.insns[0].lanes.len(), 1);
    run.assert_drawn_like(&log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "S\t0\t0\tF",
        "C\t1",
        "R\t0\t0\t0",
    ]));
}

// ---------------------------------------------------------------------------------------
// §4.2: invalid UTF-8 becomes U+FFFD, as Konata decodes it
// ---------------------------------------------------------------------------------------

#[test]
fn invalid_utf8_becomes_replacement_characters() {
    let mut input = log(&["Kanata\t0004", "C=\t0", "I\t0\t0\t0"]);
    input.extend_from_slice(b"L\t0\t0\tab\xffcd\xc3\n");
    input.extend_from_slice(b"S\t0\t0\tF\xfe\n");
    input.extend(log(&["C\t1", "R\t0\t0\t0"]));
    let run = pp(&input);
    run.assert_drawn_like_input();
    assert!(
        run.text().contains("L\t0\t0\tab\u{fffd}cd\u{fffd}\n"),
        "{}",
        run.text()
    );
    assert!(
        run.text().contains("S\t0\t0\tF\u{fffd}\n"),
        "{}",
        run.text()
    );
}

// ---------------------------------------------------------------------------------------
// §4.5: compact output
// ---------------------------------------------------------------------------------------

#[test]
fn compact_output_is_canonical_and_drawn_like_the_explicit_one() {
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "I\t1\t0\t0",
        "S\t0\t0\tF",
        "S\t1\t0\tF",
        "C\t1",
        "S\t0\t0\tD",
        "S\t0\t1\tstl",
        "S\t1\t0\tD",
        "C\t1",
        "E\t0\t1\tstl",
        "S\t0\t0\tX",
        "S\t1\t0\tX",
        "W\t1\t0\t0",
        "C\t2",
        "R\t0\t0\t0",
        "C\t1",
        "R\t1\t1\t1",
    ]);
    let explicit = pp(&input);
    let compact = pp_with(&input, |o| o.repairs.compact = true);
    compact.assert_rules(&[]);
    assert!(compact.output.len() < explicit.output.len());
    assert!(
        canonical::check(&compact.output).is_err(),
        "compact leaves `E`s out"
    );
    assert_eq!(
        diff_views(&explicit.view, &compact.view, &Compare::drawn()),
        Vec::<String>::new()
    );
    compact.assert_drawn_like_input();
}

// ---------------------------------------------------------------------------------------
// Errors: the line named, no output left behind
// ---------------------------------------------------------------------------------------

#[test]
fn error_negative_c_names_the_line() {
    let err = pp_err(&log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "C\t5",
        "C\t-3", // 5
        "R\t0\t0\t0",
    ]));
    assert_eq!(err.kind(), ErrorKind::Input);
    assert_eq!(err.line(), Some(5), "{err}");
}

#[test]
fn error_cycle_overflow_names_the_line() {
    let err = pp_err(&log(&[
        "Kanata\t0004",
        "C=\t9223372036854775800",
        "I\t0\t0\t0",
        "C\t5",
        "C\t5", // 5: past i64::MAX
        "R\t0\t0\t0",
    ]));
    assert_eq!(err.kind(), ErrorKind::Input);
    assert_eq!(err.line(), Some(5), "{err}");
}

#[test]
fn error_cycle_number_beyond_64_bits_names_the_line() {
    // Digits only, so a number by §4.10's syntax, but outside the signed 64-bit range.
    let err = pp_err(&log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "C\t99999999999999999999", // 4
        "R\t0\t0\t0",
    ]));
    assert_eq!(err.line(), Some(4), "{err}");
    let err = pp_err(&log(&[
        "Kanata\t0004",
        "C=\t-9223372036854775809", // 2
        "I\t0\t0\t0",
    ]));
    assert_eq!(err.line(), Some(2), "{err}");
}

#[test]
fn error_binary_data_in_the_body_names_the_line() {
    let mut input = log(&["Kanata\t0004", "C=\t0", "I\t0\t0\t0"]);
    input.extend_from_slice(b"\x00\x01\x02\x03\xff\xfe garbage\n"); // 4
    input.extend(log(&["R\t0\t0\t0"]));
    let err = pp_err(&input);
    assert_eq!(err.kind(), ErrorKind::Input);
    assert_eq!(err.line(), Some(4), "{err}");
}

#[test]
fn error_binary_file_names_line_1() {
    let mut input = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR".to_vec();
    input.extend(std::iter::repeat_n(0u8, 64));
    let err = pp_err(&input);
    assert_eq!(err.kind(), ErrorKind::Input);
    assert_eq!(err.line(), Some(1), "{err}");
}

#[test]
fn error_first_line_that_is_not_kanata_names_line_1() {
    for input in [
        log(&["hello world", "I\t0\t0\t0"]),
        log(&["I\t0\t0\t0", "S\t0\t0\tF"]),
        log(&["Konata\t0004", "C=\t0"]),
    ] {
        let err = pp_err(&input);
        assert_eq!(err.kind(), ErrorKind::Input);
        assert_eq!(err.line(), Some(1), "{err}");
    }
}

#[test]
fn error_empty_input() {
    for input in [&b""[..], b"\n\n", b"# only a comment\n"] {
        let err = pp_err(input);
        assert_eq!(err.kind(), ErrorKind::Input, "{input:?}: {err}");
    }
}

// ---------------------------------------------------------------------------------------
// --strict
// ---------------------------------------------------------------------------------------

#[test]
fn strict_turns_any_repair_into_an_error_naming_its_line() {
    let cases: [(Vec<u8>, u64); 4] = [
        (
            log(&["Kanata\t0004", "C=\t0", "I\t0\t0\t0", "S\t 0\t0\tF", "C\t1"]),
            4,
        ),
        (
            log(&["Kanata\t0004", "C=\t0", "I\t0\t0\t0", "", "S\t0\t0\tF"]),
            4,
        ),
        (log(&["Kanata 0004", "C=\t0", "I\t0\t0\t0"]), 1),
        (
            log(&[
                "Kanata\t0004",
                "C=\t0",
                "I\t0\t0\t0",
                "R\t0\t0\t0",
                "L\t0\t0\tx",
                "C\t1",
            ]),
            5,
        ),
    ];
    for (input, line) in cases {
        let err = pp_err_with(&input, |o| o.strict = true);
        assert_eq!(err.kind(), ErrorKind::Strict, "{err}");
        assert_eq!(err.line(), Some(line), "{err}");
    }
}

#[test]
fn strict_error_for_a_repair_found_at_the_end_names_its_line() {
    // The late label is the last line: it is only placed (and reported) when the input ends.
    let input = log(&[
        "Kanata\t0004",
        "C=\t0",
        "I\t0\t0\t0",
        "R\t0\t0\t0",
        "L\t0\t0\tx",
    ]);
    let err = pp_err_with(&input, |o| o.strict = true);
    assert_eq!(err.kind(), ErrorKind::Strict, "{err}");
    assert_eq!(err.line(), Some(5), "{err}");
}

#[test]
fn strict_accepts_a_canonical_input_unchanged() {
    let input = canonical_trace();
    canonical::check(&input).expect("the writer's trace is canonical");
    let run = pp_with(&input, |o| o.strict = true);
    run.assert_rules(&[]);
    assert_eq!(run.output, input);
}

#[test]
fn strict_refuses_an_instruction_open_at_the_end_only_when_closing_is_asked() {
    // Leaving it open is the default, not a repair; closing it is one.
    let input = log(&["Kanata\t0004", "C=\t0", "I\t0\t0\t0", "S\t0\t0\tF", "C\t1"]);
    let run = pp_with(&input, |o| o.strict = true);
    assert_eq!(run.output, input);
    let err = pp_err_with(&input, |o| {
        o.strict = true;
        o.repairs.close_open = Some(CloseOpen::Flush);
    });
    assert_eq!(err.kind(), ErrorKind::Strict, "{err}");
}

// ---------------------------------------------------------------------------------------
// A trace kanata-writer writes goes through unchanged (the rules do not misfire)
// ---------------------------------------------------------------------------------------

#[test]
fn writer_trace_passes_through_with_no_repairs() {
    let input = canonical_trace();
    let run = pp(&input);
    run.assert_rules(&[]);
    assert_eq!(run.text(), String::from_utf8(input).unwrap());
    run.assert_drawn_like_input();
}

#[test]
fn writer_trace_from_a_simple_run_passes_through() {
    let mut w = Writer::new(Vec::new());
    let f = w.stage("F").unwrap();
    let a = w.begin(1, 0).unwrap();
    w.enter(a, Lane::MAIN, f).unwrap();
    w.advance(2).unwrap();
    w.retire(a).unwrap();
    let input = w.finish().unwrap().output;
    let run = pp(&input);
    run.assert_rules(&[]);
    assert_eq!(run.output, input);
}
