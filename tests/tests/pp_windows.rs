//! Windows (`--cycles`, `--sim-cycles`, `--insns`, `--threads`; issue 13, "Windows"),
//! checked against the test-only Konata model on the public corpus (sloppy Kanata logs, `.gz`
//! among them, gem5 O3PipeView traces, RSD raw logs), the samples and generated traces.
//!
//! For every trace the whole trace is converted once (no window) and its Konata view taken.
//! Then for each window the input is converted again with the window, and:
//!
//! - the output is canonical (spec §4, checked by `kanata_tests::canonical`) and Konata
//!   loads it with zero warnings (§3: the point of every conversion);
//! - it keeps the whole trace's `C=` line (§4.1) and its cycle steps, so every cycle number
//!   Konata shows (counted from the file start, §3: "`C=` is ignored") and every simulator
//!   cycle is the one of the whole trace;
//! - Konata's view of it equals the whole trace's view restricted to the kept instructions
//!   ([`restrict`], computed here from the whole view alone, never from the window's text),
//!   up to the renumbering of op ids, which must be dense from 0 in the whole trace's order
//!   (§4.4): same labels, stage boxes per lane with their cycles, threads, simulator ids,
//!   retire ids and cycles, flushes (§4.7), `W` relations and the arrows Konata draws
//!   between kept instructions (§3: between `X` stages), the same last cycle (a kept
//!   instruction without `R` is drawn up to the last cycle + 1, §3, so then the window ends
//!   at the input's last cycle);
//! - the dependencies dropped because their producer is not kept are exactly the ones
//!   reported under rule W1;
//! - the report's summary counts the window, and `Report::window` says how many
//!   instructions were read (all of them unless reading stopped early);
//! - cutting the same window out of the whole trace's canonical conversion gives the same
//!   bytes (the window depends on nothing but the canonical text).
//!
//! An instruction is kept by `--cycles A..B` when it begins (its `I`) before `B` and ends
//! (its `R`) at `A` or later, or never ends; by `--insns A..B` when its op id in the whole
//! conversion is in `[A, B)`; by `--threads` when its thread is listed; given together, when
//! all hold. `--sim-cycles` is `--cycles` shifted by the `C=` start, and must give the same
//! bytes.
//!
//! Then: conversion options that change the whole trace (gem5 `--deps`, `--close-open`,
//! `--renumber-retire`), early stop on a large generated trace, compressed inputs, windows
//! that hold nothing, and determinism (§4.9, plain, `.gz` and `.kanata.zst`). The command
//! line is tested in `kanata-pp/tests/windows_cli.rs`.
//!
//! The corpus lives outside this repository; when it is absent those tests print a note and
//! pass.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use kanata_pp::output::window::{Bounds, Window};
use kanata_pp::{convert, CloseOpen, Destination, Options, Report, Rule};
use kanata_tests::canonical::{assert_canonical, Options as Form};
use kanata_tests::konata_model::{restrict, Restricted};
use kanata_tests::{decompress, diff_views, load, Compare, Insn, RetireKind, View};
use kanata_writer::{DepKind, LabelKind, Lane, Stage, Writer, WriterBuilder};

// ---------------------------------------------------------------------------------------
// Where the traces come from
// ---------------------------------------------------------------------------------------

/// A folder of the shared corpus, or `None` (with a note) when it is not there.
fn corpus(kind: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/corpus")
        .join(kind);
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("note: {} is absent; corpus test skipped", dir.display());
        None
    }
}

/// The files of a corpus folder that `wanted` accepts, sorted.
fn files(dir: &Path, wanted: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .expect("read the corpus folder")
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            !name.starts_with('.') && name != "SOURCES.md" && wanted(&name)
        })
        .collect();
    paths.sort();
    paths
}

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../samples")
        .join(name)
}

/// A small xorshift generator: the generated traces are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// True one time in `n`.
    fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// How a generated trace looks.
#[derive(Clone, Copy, Debug)]
struct Shape {
    /// Instructions to fetch.
    insns: u64,
    /// Hardware threads (instructions are fetched round-robin-ish over them).
    threads: u32,
    /// The `C=` start.
    start: i64,
    seed: u64,
    /// Instructions (by fetch order) that never retire: open at the end of the trace.
    never_retire: &'static [u64],
    /// One instruction in this many lives long (a cache miss of 150 cycles).
    long_every: u64,
}

/// What one scheduled event does.
#[derive(Clone, Copy, Debug)]
enum Action {
    Enter(u32, usize),
    Leave(u32),
    Retire,
    Flush,
    Note,
}

/// A generated SMT pipeline trace (canonical, written by kanata-writer): a front end
/// fetching up to two instructions a cycle over the threads, stages F, D, Issue Q, X or
/// Xmiss, M, C in lane 0 and stall segments in lane 1; dependencies on recent and on long
/// gone instructions (both kinds), labels of every kind, flushes, long-lived misses, and
/// the instructions of [`Shape::never_retire`] still open at the end.
fn generated(shape: Shape) -> Generated {
    const STAGES: [&str; 7] = ["F", "D", "Issue Q", "X", "Xmiss", "M", "C"];
    let mut rng = Rng(shape.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut builder = WriterBuilder::new();
    builder.start_cycle(shape.start);
    let mut w: Writer<Vec<u8>> = builder.from_writer(Vec::new()).expect("writer");
    let stages: Vec<Stage> = STAGES.iter().map(|s| w.stage(s).unwrap()).collect();
    // Events by cycle (relative to the trace start): (instruction index, action).
    let mut events: std::collections::BTreeMap<u64, Vec<(usize, Action)>> = Default::default();
    let mut insns = Vec::new();
    let mut lives: Vec<(u64, Option<u64>)> = Vec::new();
    let mut fetched = 0u64;
    let mut cycle = 0u64;
    loop {
        // Everything due now, in the order it was scheduled.
        for (index, action) in events.remove(&cycle).unwrap_or_default() {
            let insn = insns[index];
            if !w.is_live(insn) {
                continue;
            }
            if let Action::Retire | Action::Flush = action {
                lives[index].1 = Some(cycle);
            }
            match action {
                Action::Enter(lane, stage) => w.enter(insn, Lane::new(lane), stages[stage]),
                Action::Leave(lane) => w.leave(insn, Lane::new(lane)),
                Action::Retire => w.retire(insn).map(drop),
                Action::Flush => w.flush(insn),
                Action::Note => w.label(insn, LabelKind::StageNote, "D$ miss\nline fill"),
            }
            .expect("a valid writer call");
            if let Action::Enter(0, stage) = action {
                if STAGES[stage].starts_with('X') && index > 0 {
                    // Wake-ups from a recent producer, and now and then one long gone.
                    let back = if rng.one_in(5) {
                        1 + rng.below(index as u64)
                    } else {
                        1 + rng.below(4.min(index as u64))
                    };
                    let producer = insns[index - back as usize];
                    let kind = if rng.one_in(4) {
                        DepKind::new(1)
                    } else {
                        DepKind::WAKE_UP
                    };
                    w.depend(insn, producer, kind).expect("depend");
                    if rng.one_in(3) {
                        let producer = insns[index - 1 - rng.below(index as u64) as usize];
                        w.depend(insn, producer, DepKind::WAKE_UP).expect("depend");
                    }
                }
            }
        }
        if fetched == shape.insns {
            if events.is_empty() {
                break;
            }
        } else {
            for _ in 0..1 + rng.below(2) {
                if fetched == shape.insns {
                    break;
                }
                let index = insns.len();
                let thread = (fetched + rng.below(2)) as u32 % shape.threads;
                let sim = 0x1000 + 7 * fetched;
                let insn = w.begin(sim, thread).unwrap();
                insns.push(insn);
                lives.push((cycle, None));
                w.label_fmt(
                    insn,
                    LabelKind::Name,
                    format_args!(
                        "{:#x}: op{} x{}",
                        0x8000_0000u64 + 4 * fetched,
                        fetched % 9,
                        fetched % 31
                    ),
                )
                .unwrap();
                if rng.one_in(3) {
                    w.label(insn, LabelKind::Detail, "reads x1=0x0\nwrites x2")
                        .unwrap();
                }
                w.enter(insn, Lane::MAIN, stages[0]).unwrap();
                let mut at = cycle + 1;
                let mut plan =
                    |at: u64, action| events.entry(at).or_default().push((index, action));
                plan(at, Action::Enter(0, 1));
                at += 1;
                plan(at, Action::Enter(0, 2));
                let wait = rng.below(4);
                if wait > 1 {
                    plan(at, Action::Enter(1, 0));
                    plan(at + wait, Action::Leave(1));
                }
                at += wait;
                let long = rng.one_in(shape.long_every);
                let miss = long || rng.one_in(6);
                plan(at, Action::Enter(0, if miss { 4 } else { 3 }));
                at += 1 + rng.below(2);
                if miss {
                    plan(at, Action::Enter(0, 5));
                    plan(at, Action::Note);
                    at += if long { 150 } else { 6 };
                }
                plan(at, Action::Enter(0, 6));
                at += 1 + rng.below(3);
                if shape.never_retire.contains(&fetched) {
                    // Stays in C until the end of the trace.
                } else if rng.one_in(12) {
                    plan(at, Action::Flush);
                } else {
                    plan(at, Action::Retire);
                }
                fetched += 1;
            }
        }
        w.advance(1).unwrap();
        cycle += 1;
    }
    w.advance(2).unwrap();
    Generated {
        text: w.finish().expect("finish").output,
        lives,
        last_cycle: cycle + 2,
    }
}

/// A generated trace, and what the generator knows of it.
struct Generated {
    text: Vec<u8>,
    /// Each instruction's Konata cycles of `I` and of `R` (none when it never retires).
    lives: Vec<(u64, Option<u64>)>,
    /// The Konata cycle of the last line.
    last_cycle: u64,
}

impl Generated {
    /// How many instructions `--cycles a..b` keeps (the rule, on the generator's
    /// own record).
    fn kept_by_cycles(&self, a: u64, b: u64) -> u64 {
        self.lives
            .iter()
            .filter(|(begin, end)| *begin < b && end.is_none_or(|end| end >= a))
            .count() as u64
    }
}

/// The generated traces the model checks run on: three threads from a positive start, one
/// thread from a negative start with instructions open at the end.
fn generated_small() -> Vec<(String, Vec<u8>)> {
    vec![
        (
            "generated-smt".to_owned(),
            generated(Shape {
                insns: 300,
                threads: 3,
                start: 1000,
                seed: 1,
                never_retire: &[],
                long_every: 60,
            })
            .text,
        ),
        (
            "generated-open".to_owned(),
            generated(Shape {
                insns: 200,
                threads: 1,
                start: -50,
                seed: 2,
                never_retire: &[40, 199],
                long_every: 40,
            })
            .text,
        ),
    ]
}

// ---------------------------------------------------------------------------------------
// The whole trace and its windows
// ---------------------------------------------------------------------------------------

/// One input, converted whole.
struct Whole {
    name: String,
    input: PathBuf,
    /// The format kanata-pp must detect.
    format: &'static str,
    /// The canonical conversion of the whole trace, written to a file.
    canonical: PathBuf,
    /// What Konata draws for it.
    view: View,
    /// Its `C=` start.
    start: i64,
    /// The conversion options of the whole trace and of its windows.
    tweak: fn(&mut Options),
    /// Whether its canonical text is large (over 400 kB): it gets fewer windows.
    large: bool,
}

impl Whole {
    /// Converts `input` whole into `dir` (checked as every conversion is: canonical, zero
    /// warnings, unchanged by a second conversion).
    fn new(input: &Path, format: &'static str, dir: &Path) -> Whole {
        Whole::with(input, format, dir, |_| {})
    }

    /// [`Whole::new`] with the conversion options `tweak` sets (for the whole trace and
    /// each of its windows).
    fn with(input: &Path, format: &'static str, dir: &Path, tweak: fn(&mut Options)) -> Whole {
        let mut options = Options::new(Destination::Check);
        tweak(&mut options);
        let (_, text, view) =
            kanata_tests::conversion::convert_checked(input, options, dir, format);
        let canonical = dir.join("whole.kanata");
        fs::write(&canonical, &text).unwrap();
        let start = c_start(&text);
        let large = text.len() > 400_000;
        Whole {
            name: input.file_name().unwrap().to_string_lossy().into_owned(),
            input: input.to_path_buf(),
            format,
            canonical,
            view,
            start,
            tweak,
            large,
        }
    }

    fn threads(&self) -> Vec<i64> {
        let set: BTreeSet<i64> = self.view.insns.iter().map(|i| i.thread).collect();
        set.into_iter().collect()
    }
}

/// The value of the `C=` line (line 2).
fn c_start(text: &[u8]) -> i64 {
    let line = text.split(|&b| b == b'\n').nth(1).expect("a C= line");
    let line = std::str::from_utf8(line).unwrap();
    line.strip_prefix("C=\t")
        .expect("line 2 is C=")
        .parse()
        .unwrap()
}

/// Which instructions a window keeps, as the issue defines it, decided on the whole trace's
/// view; and the same window as kanata-pp's option.
#[derive(Clone, Debug, Default)]
struct Spec {
    /// `--cycles`, in Konata's cycles.
    cycles: (Option<u64>, Option<u64>),
    /// `--insns`: op ids of the whole conversion.
    insns: (Option<u64>, Option<u64>),
    /// `--threads`.
    threads: Option<Vec<i64>>,
}

impl Spec {
    fn cycles(a: Option<u64>, b: Option<u64>) -> Spec {
        Spec {
            cycles: (a, b),
            ..Spec::default()
        }
    }

    fn insns(a: Option<u64>, b: Option<u64>) -> Spec {
        Spec {
            insns: (a, b),
            ..Spec::default()
        }
    }

    fn threads(threads: &[i64]) -> Spec {
        Spec {
            threads: Some(threads.to_vec()),
            ..Spec::default()
        }
    }

    /// Whether the window keeps `insn` (an instruction of the whole view).
    fn keeps(&self, insn: &Insn) -> bool {
        let (a, b) = self.cycles;
        let begins_before_b = b.is_none_or(|b| insn.fetched_cycle < b as i64);
        let ends_at_a_or_later = match insn.retired {
            None => true,
            Some(retire) => a.is_none_or(|a| retire.cycle >= a as i64),
        };
        let (first, end) = self.insns;
        let id = insn.file_id as u64;
        let in_ids = first.is_none_or(|f| id >= f) && end.is_none_or(|e| id < e);
        let in_threads = self
            .threads
            .as_ref()
            .is_none_or(|list| list.contains(&insn.thread));
        begins_before_b && ends_at_a_or_later && in_ids && in_threads
    }

    /// The window as `--cycles`, `--insns` and `--threads`.
    fn window(&self) -> Window {
        let mut window = Window::all();
        window.cycles = Bounds {
            start: self.cycles.0,
            end: self.cycles.1,
        };
        window.insns = Bounds {
            start: self.insns.0,
            end: self.insns.1,
        };
        window.threads = self.threads.clone().map(|mut t| {
            t.sort_unstable();
            t
        });
        window
    }

    /// The same window with its cycles as `--sim-cycles` (shifted by the `C=` start).
    fn sim_window(&self, start: i64) -> Window {
        let mut window = self.window();
        window.cycles = Bounds::all();
        window.sim_cycles = Bounds {
            start: self.cycles.0.map(|a| a as i64 + start),
            end: self.cycles.1.map(|b| b as i64 + start),
        };
        window
    }
}

/// Converts `input` with `window` into `dir/<file>`; returns the report and the output,
/// decompressed.
#[track_caller]
fn cut(input: &Path, window: Window, dir: &Path, file: &str) -> (Report, Vec<u8>) {
    cut_with(input, |_| {}, window, dir, file)
}

/// [`cut`] with the conversion options `tweak` sets.
#[track_caller]
fn cut_with(
    input: &Path,
    tweak: fn(&mut Options),
    window: Window,
    dir: &Path,
    file: &str,
) -> (Report, Vec<u8>) {
    let out = dir.join(file);
    let mut options = Options::new(Destination::Path(out.clone()));
    tweak(&mut options);
    options.window = window;
    let report = match convert(input, &options) {
        Ok(report) => report,
        Err(err) => panic!(
            "{}: conversion with a window failed: {err}",
            input.display()
        ),
    };
    let raw = fs::read(&out).expect("the output exists");
    (report, decompress(&raw).expect("decompress"))
}

fn count(report: &Report, rule: Rule) -> u64 {
    report.diagnostics.rules().get(&rule).map_or(0, |r| r.count)
}

/// What compares a window's view with the restricted whole view: everything Konata draws
/// but the line numbers of `I` (the window has fewer lines) and the stage colours (see
/// [`restrict`]: Konata's colour level of a stage name depends on every instruction
/// loaded). File ids are compared as they are: the restriction renumbers densely in order.
fn compare() -> Compare {
    Compare {
        ignore_lines: true,
        ignore_colors: true,
        max_reports: 20,
        ..Compare::default()
    }
}

/// Cuts the window `spec` (as `window`) out of `whole` and checks everything the module
/// docs list; returns the window's text and the restriction.
#[track_caller]
fn check_window(
    whole: &Whole,
    what: &str,
    spec: &Spec,
    window: Window,
    dir: &Path,
    again_from_canonical: bool,
) -> (Vec<u8>, Restricted, Report) {
    let who = format!("{}, {what} ({window:?})", whole.name);
    let (report, out) = cut_with(
        &whole.input,
        whole.tweak,
        window.clone(),
        dir,
        "window.kanata",
    );
    assert_eq!(report.format.name(), whole.format, "{who}");
    let stats = assert_canonical(&out, Form::STRICT);
    assert_eq!(
        c_start(&out),
        whole.start,
        "{who}: the C= line is the whole trace's"
    );
    let view = load(&out);
    assert!(
        view.warnings.is_empty(),
        "{who}: Konata warns: {:?}",
        &view.warnings[..view.warnings.len().min(5)]
    );
    let expected = restrict(&whole.view, |i| spec.keeps(i));
    let diff = diff_views(&expected.view, &view, &compare());
    if !diff.is_empty() {
        let mut text = String::from_utf8_lossy(&out).into_owned();
        text.truncate(3000);
        panic!(
            "{who}: the window is not the whole trace restricted to {} kept instructions \
             (first view: expected; second: the window):\n{}\n--- window output (start):\n{text}",
            expected.kept_ids.len(),
            diff.join("\n")
        );
    }
    assert_eq!(
        count(&report, Rule::W1),
        expected.dropped_dependencies,
        "{who}: W1 counts the dependencies on instructions not kept"
    );
    // The report counts the window.
    assert_eq!(report.summary.first_cycle, whole.start, "{who}");
    assert_eq!(
        report.summary.last_cycle,
        whole.start + view.last_cycle,
        "{who}: the summary's last cycle"
    );
    let kept = expected.kept_ids.len() as u64;
    assert_eq!(report.summary.instructions, kept, "{who}");
    assert_eq!(stats.instructions, kept, "{who}");
    let retired = expected
        .view
        .insns
        .iter()
        .filter(|i| i.retired.is_some_and(|r| r.kind == RetireKind::Retired))
        .count() as u64;
    let open = expected.view.insns.iter().filter(|i| i.eof()).count() as u64;
    assert_eq!(report.summary.retired, retired, "{who}");
    assert_eq!(report.summary.left_open, open, "{who}");
    assert_eq!(
        report.summary.flushed,
        kept - retired - open,
        "{who}: flushed"
    );
    let read = report.window.expect("a window report").instructions_read;
    let total = whole.view.insns.len() as u64;
    assert!(read <= total, "{who}: read {read} of {total}");
    assert!(
        read >= expected.kept_ids.last().map_or(0, |&id| id as u64 + 1),
        "{who}: read {read}, but kept op id {:?}",
        expected.kept_ids.last()
    );
    if !report.window.unwrap().stopped_early {
        assert_eq!(
            read, total,
            "{who}: read to the end, so every instruction was read"
        );
    }
    if again_from_canonical {
        let (_, again) = cut(&whole.canonical, window, dir, "again.kanata");
        assert!(
            again == out,
            "{who}: the window cut from the whole trace's canonical conversion differs"
        );
    }
    (out, expected, report)
}

/// One window to check on a trace.
struct Case {
    what: String,
    spec: Spec,
    /// Also as `--sim-cycles`, which must give the same bytes.
    as_sim_cycles: bool,
    /// Also cut out of the whole trace's canonical conversion, which must give the same
    /// bytes.
    from_canonical: bool,
}

/// The windows of every kind for a trace: cycles in the middle, at the start, open-ended
/// both ways, past the end, one cycle; op ids; threads (when there are several); combined.
/// The `--sim-cycles` and canonical-input variants run on a few of them (each conversion
/// costs, and they are about the option, not the trace).
fn windows_of(whole: &Whole) -> Vec<Case> {
    let last = whole.view.last_cycle.max(0) as u64;
    let n = whole.view.insns.len() as u64;
    let at = |num: u64, den: u64| last * num / den;
    let case = |what: &str, spec: Spec, as_sim_cycles: bool, from_canonical: bool| Case {
        what: what.to_owned(),
        spec,
        as_sim_cycles,
        from_canonical,
    };
    let middle = (Some(at(2, 5)), Some(at(3, 5).max(at(2, 5) + 1)));
    // Combined: the middle half of the ids, and the cycles up to the fetch of the middle
    // one, so that both bounds cut.
    let fetch_of_middle = whole
        .view
        .insns
        .get(n as usize / 2)
        .map_or(1, |i| i.fetched_cycle as u64 + 1);
    let mut list = vec![
        case(
            "middle cycles",
            Spec::cycles(middle.0, middle.1),
            true,
            true,
        ),
        case(
            "first cycles",
            Spec::cycles(Some(0), Some(at(1, 8).max(1))),
            false,
            false,
        ),
        case(
            "..B",
            Spec::cycles(None, Some(at(1, 4).max(1))),
            true,
            false,
        ),
        case("A..", Spec::cycles(Some(at(3, 4)), None), true, false),
        case(
            "past the end",
            Spec::cycles(Some(last + 5), None),
            false,
            false,
        ),
        case(
            "one cycle",
            Spec::cycles(Some(at(1, 2)), Some(at(1, 2) + 1)),
            false,
            false,
        ),
        case(
            "middle ids",
            Spec::insns(Some(n / 3), Some((2 * n / 3).max(n / 3 + 1))),
            false,
            true,
        ),
        case("first ids", Spec::insns(None, Some(3)), false, false),
        case(
            "last ids",
            Spec::insns(Some(n.saturating_sub(2)), None),
            false,
            false,
        ),
        case(
            "ids and cycles",
            Spec {
                cycles: (None, Some(fetch_of_middle)),
                insns: (Some(n / 4), Some((3 * n / 4).max(n / 4 + 1))),
                threads: None,
            },
            true,
            false,
        ),
    ];
    if whole.large {
        // Debug builds convert about 5 MB/s: of a large trace, the windows that differ most.
        let keep = ["middle cycles", "A..", "first ids", "ids and cycles"];
        list.retain(|c| keep.contains(&c.what.as_str()));
    }
    let threads = whole.threads();
    if threads.len() > 1 {
        for (k, &t) in threads.iter().enumerate() {
            list.push(case(
                &format!("thread {t}"),
                Spec::threads(&[t]),
                false,
                k == 0,
            ));
        }
        list.push(case(
            "all threads but the first",
            Spec::threads(&threads[1..]),
            false,
            false,
        ));
        list.push(case(
            "middle cycles of the last thread",
            Spec {
                cycles: middle,
                insns: (None, None),
                threads: Some(vec![threads[threads.len() - 1]]),
            },
            true,
            true,
        ));
    }
    list
}

/// Checks every window of [`windows_of`] on `input`. Returns a line for the test's output.
fn check_all_windows(input: &Path, format: &'static str) -> String {
    check_all_windows_with(input, format, |_| {})
}

/// [`check_all_windows`] with the conversion options `tweak` sets.
fn check_all_windows_with(input: &Path, format: &'static str, tweak: fn(&mut Options)) -> String {
    let dir = tempfile::tempdir().unwrap();
    let whole = Whole::with(input, format, dir.path(), tweak);
    let mut kept = Vec::new();
    let mut dropped = 0;
    let mut early = 0;
    for case in windows_of(&whole) {
        let (out, restricted, report) = check_window(
            &whole,
            &case.what,
            &case.spec,
            case.spec.window(),
            dir.path(),
            case.from_canonical,
        );
        kept.push(restricted.kept_ids.len());
        dropped += restricted.dropped_dependencies;
        early += usize::from(report.window.unwrap().stopped_early);
        if case.as_sim_cycles {
            // The same bytes, so the same checks hold.
            let window = case.spec.sim_window(whole.start);
            let (report, sim) = cut_with(
                &whole.input,
                whole.tweak,
                window.clone(),
                dir.path(),
                "sim.kanata",
            );
            assert!(
                sim == out,
                "{}: {}: --sim-cycles shifted by C= {} ({window:?}) is not the same bytes as \
                 --cycles",
                whole.name,
                case.what,
                whole.start
            );
            assert_eq!(count(&report, Rule::W1), restricted.dropped_dependencies);
        }
    }
    format!(
        "{}: {} insns, C= {}, kept per window {kept:?}, {dropped} dependencies dropped, \
         {early} windows stopped early",
        whole.name,
        whole.view.insns.len(),
        whole.start
    )
}

// ---------------------------------------------------------------------------------------
// The model checks, by input format
// ---------------------------------------------------------------------------------------

/// Konata's 3 MB sample (4,041 instructions, 41 open at the end): a test of its own, so that
/// it runs beside the other logs.
const SAMPLE_2: &str = "shioyadan__Konata__kanata-sample-2.log.gz";

#[test]
fn windows_of_the_kanata_corpus_are_the_whole_trace_restricted() {
    let Some(dir) = corpus("kanata") else { return };
    let inputs = files(&dir, |name| {
        name != "shioyadan__Konata__gem5-basic.txt" && name != SAMPLE_2
    });
    assert!(inputs.len() >= 5, "{inputs:?}");
    assert!(inputs
        .iter()
        .any(|p| p.extension().is_some_and(|e| e == "gz")));
    for input in &inputs {
        eprintln!("{}", check_all_windows(input, "kanata"));
    }
}

#[test]
fn windows_of_konatas_large_sample_are_the_whole_trace_restricted() {
    let Some(dir) = corpus("kanata") else { return };
    eprintln!("{}", check_all_windows(&dir.join(SAMPLE_2), "kanata"));
}

#[test]
fn windows_of_the_gem5_corpus_are_the_whole_trace_restricted() {
    let Some(dir) = corpus("gem5") else { return };
    let inputs = files(&dir, |_| true);
    assert!(inputs.len() >= 10, "{inputs:?}");
    for input in &inputs {
        eprintln!("{}", check_all_windows(input, "gem5"));
    }
}

#[test]
fn windows_of_the_rsd_corpus_are_the_whole_trace_restricted() {
    let Some(dir) = corpus("rsd") else { return };
    let inputs = files(&dir, |name| name.ends_with(".raw.log"));
    assert!(inputs.len() >= 3, "{inputs:?}");
    for input in &inputs {
        eprintln!("{}", check_all_windows(input, "rsd"));
    }
}

#[test]
fn windows_of_the_samples_are_the_whole_trace_restricted() {
    for (name, format) in [
        ("pipeline_sim.kanata", "kanata"),
        ("sloppy.kanata", "kanata"),
        ("sloppy.log", "kanata"),
        ("rsd_raw.log", "rsd"),
    ] {
        eprintln!("{}", check_all_windows(&sample(name), format));
    }
}

#[test]
fn windows_of_generated_traces_are_the_whole_trace_restricted() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in generated_small() {
        let input = dir.path().join(format!("{name}.kanata"));
        fs::write(&input, &text).unwrap();
        eprintln!("{}", check_all_windows(&input, "kanata"));
    }
}

/// Windows of conversions with options that change the whole trace: the window is the
/// window of *that* whole trace. gem5's `--deps` (dependencies from the rename lines, so W1
/// on gem5 input), `--close-open` (the open instructions of a sloppy log flushed or retired
/// at the last cycle: they end there, so windows before the end no longer keep them),
/// `--renumber-retire`.
#[test]
fn windows_with_conversion_options_are_the_whole_trace_restricted() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, open) = &generated_small()[1];
    let generated_open = tmp.path().join("generated-open.kanata");
    fs::write(&generated_open, open).unwrap();
    type Case = (PathBuf, &'static str, fn(&mut Options));
    let cases: [Case; 4] = [
        (generated_open.clone(), "kanata", |o| {
            o.repairs.close_open = Some(CloseOpen::Flush)
        }),
        (generated_open, "kanata", |o| {
            o.repairs.close_open = Some(CloseOpen::Retire);
            o.repairs.renumber_retire = true;
        }),
        (sample("sloppy.log"), "kanata", |o| {
            o.repairs.close_open = Some(CloseOpen::Retire)
        }),
        (sample("pipeline_sim.kanata"), "kanata", |o| {
            o.repairs.close_open = Some(CloseOpen::Flush)
        }),
    ];
    for (input, format, tweak) in cases {
        eprintln!("{}", check_all_windows_with(&input, format, tweak));
    }
    let Some(dir) = corpus("gem5") else { return };
    for name in [
        "ProteusLab__uScope__reference.out",
        "shioyadan__Konata__testcase__rename-dependency.log",
        "shioyadan__Konata__testcase__underscore-register.log",
    ] {
        let line = check_all_windows_with(&dir.join(name), "gem5", |o| o.gem5.deps = true);
        eprintln!("{line}");
    }
}

/// The gem5 `thread-ids` testcase has three threads (explicit, inferred from `[tid:N]`,
/// default 0): each one alone, and two together, keep exactly that thread's instructions
/// with their thread ids.
#[test]
fn threads_of_the_gem5_thread_ids_testcase() {
    let Some(dir) = corpus("gem5") else { return };
    let input = dir.join("shioyadan__Konata__testcase__thread-ids.log");
    let tmp = tempfile::tempdir().unwrap();
    let whole = Whole::new(&input, "gem5", tmp.path());
    let threads = whole.threads();
    assert_eq!(threads.len(), 3, "{threads:?}");
    for list in [
        vec![threads[0]],
        vec![threads[1]],
        vec![threads[2]],
        vec![threads[0], threads[2]],
    ] {
        let spec = Spec::threads(&list);
        let (_, restricted, _) =
            check_window(&whole, "threads", &spec, spec.window(), tmp.path(), true);
        assert_eq!(restricted.kept_ids.len(), list.len(), "{list:?}");
        assert!(restricted
            .view
            .insns
            .iter()
            .all(|i| list.contains(&i.thread)));
    }
    // A thread that is not there: an empty trace.
    let spec = Spec::threads(&[99]);
    let (out, restricted, _) =
        check_window(&whole, "no thread", &spec, spec.window(), tmp.path(), false);
    assert!(restricted.kept_ids.is_empty());
    assert_eq!(
        out,
        format!("Kanata\t0004\nC=\t{}\n", whole.start).into_bytes()
    );
}

/// The helper itself, on a hand-made trace: renumbering, dropped dependencies and arrows,
/// the last cycle.
#[test]
fn restrict_renumbers_and_drops_what_is_not_kept() {
    let whole = load(
        b"Kanata\t0004\nC=\t0\nI\t0\t10\t0\nS\t0\t0\tX\nI\t1\t11\t1\nS\t1\t0\tF\nC\t1\n\
          E\t0\t0\tX\nR\t0\t0\t0\nI\t2\t12\t0\nS\t2\t0\tX\nW\t2\t0\t0\nW\t2\t1\t0\nC\t1\n\
          E\t2\t0\tX\nR\t2\t1\t0\nC\t3\n",
    );
    let r = restrict(&whole, |i| i.file_id != 0);
    assert_eq!(r.kept_ids, [1, 2]);
    assert_eq!(r.dropped_dependencies, 1);
    assert!(r.view.arrows.is_empty(), "{:?}", r.view.arrows);
    assert_eq!(r.view.insns[1].producers.len(), 1);
    assert_eq!(r.view.insns[1].producers[0].other, 0);
    // Instruction 1 never retires: the window reaches the last cycle.
    assert_eq!(r.view.last_cycle, whole.last_cycle);
    let r = restrict(&whole, |i| i.file_id != 1);
    assert_eq!(r.view.arrows.len(), 1);
    assert_eq!(
        (r.view.arrows[0].consumer, r.view.arrows[0].producer),
        (1, 0)
    );
    assert_eq!(r.view.last_cycle, 2);
    assert_eq!(restrict(&whole, |_| false).view.last_cycle, 0);
}

// ---------------------------------------------------------------------------------------
// Early stop (issue 13: "Reading stops as soon as nothing later can be in the window")
// ---------------------------------------------------------------------------------------

fn line_count(text: &[u8]) -> u64 {
    text.iter().filter(|&&b| b == b'\n').count() as u64
}

/// Cuts `a..b` out of the generated trace at `input` and checks the output against the
/// generator's own record (canonical, zero warnings, the instructions the rule
/// keeps); returns the report and the output's canonical statistics.
#[track_caller]
fn cut_generated(
    trace: &Generated,
    input: &Path,
    a: u64,
    b: Option<u64>,
    dir: &Path,
) -> (Report, kanata_tests::canonical::Stats) {
    let (report, out) = cut(input, Spec::cycles(Some(a), b).window(), dir, "cut.kanata");
    let stats = assert_canonical(&out, Form::STRICT);
    assert!(load(&out).warnings.is_empty());
    let kept = trace.kept_by_cycles(a, b.unwrap_or(u64::MAX));
    assert!(kept > 0);
    assert_eq!(stats.instructions, kept, "cycles {a}..{b:?}");
    (report, stats)
}

/// A large generated trace (about 15 MB, 60,000 instructions): a window near its start is
/// decided after a few hundred instructions and stops reading, while the input is still
/// being read ahead (kanata-pp reads blocks of 1 MB on a thread of its own, a few in flight,
/// so `lines_in` runs some MB ahead of the window, but no further). On a smaller one (3 MB)
/// with an instruction that never retires: a window at its end reads all of it; a window
/// near its start keeps the open instruction (it begins before the window and never ends),
/// so it reads to the end and its output ends at the input's last cycle (issue 13: "Reading
/// stops as soon as nothing later can be in the window"; "the longest life of an instruction
/// ... open instructions" bound it).
#[test]
fn early_stop_on_a_large_trace() {
    let dir = tempfile::tempdir().unwrap();
    let shape = Shape {
        insns: 60_000,
        threads: 2,
        start: 0,
        seed: 3,
        never_retire: &[],
        long_every: 2000,
    };
    let trace = generated(shape);
    assert!(trace.text.len() > 14_000_000, "{} bytes", trace.text.len());
    let lines = line_count(&trace.text);
    let input = dir.path().join("big.kanata");
    fs::write(&input, &trace.text).unwrap();

    // Near the start: cycles, then op ids.
    let (report, _) = cut_generated(&trace, &input, 100, Some(200), dir.path());
    let window = report.window.unwrap();
    assert!(window.stopped_early, "{window:?}");
    assert!(
        window.instructions_read < 1000,
        "read {window:?} of {} instructions for cycles 100..200",
        shape.insns
    );
    assert!(
        report.lines_in < lines / 2,
        "read {} of {lines} lines for cycles 100..200 of {}",
        report.lines_in,
        trace.last_cycle
    );
    let (report, out) = cut(
        &input,
        Spec::insns(Some(10), Some(50)).window(),
        dir.path(),
        "ids.kanata",
    );
    assert_eq!(assert_canonical(&out, Form::STRICT).instructions, 40);
    let window = report.window.unwrap();
    assert!(
        window.stopped_early && window.instructions_read < 1000,
        "{window:?}"
    );
    assert!(
        report.lines_in < lines / 2,
        "{} of {lines}",
        report.lines_in
    );

    let open = generated(Shape {
        insns: 12_000,
        never_retire: &[50],
        ..shape
    });
    assert_eq!(open.lives[50].1, None);
    let lines = line_count(&open.text);
    let input = dir.path().join("open.kanata");
    fs::write(&input, &open.text).unwrap();
    let last_cycle = shape.start + open.last_cycle as i64;

    // At the end: reads everything.
    let (report, stats) = cut_generated(&open, &input, open.last_cycle - 100, None, dir.path());
    let window = report.window.unwrap();
    assert!(!window.stopped_early, "{window:?}");
    assert_eq!(report.lines_in, lines);
    assert_eq!(window.instructions_read, 12_000);
    assert_eq!(stats.last_cycle, last_cycle);

    // Near the start, with the open instruction 50 in it.
    let (report, stats) = cut_generated(&open, &input, 100, Some(200), dir.path());
    let window = report.window.unwrap();
    assert!(!window.stopped_early, "{window:?}");
    assert_eq!(report.lines_in, lines);
    assert_eq!(window.instructions_read, 12_000);
    assert_eq!(stats.open_at_end, 1);
    assert_eq!(
        stats.last_cycle, last_cycle,
        "the output ends at the input's last cycle"
    );
}

// ---------------------------------------------------------------------------------------
// Windows that hold nothing, determinism
// ---------------------------------------------------------------------------------------

/// A window with no instruction in it is an empty but valid trace: the header and the
/// whole trace's `C=` line, which Konata loads without a warning.
#[test]
fn a_window_that_holds_nothing_is_a_valid_empty_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (_, text) = &generated_small()[0];
    let input = dir.path().join("in.kanata");
    fs::write(&input, text).unwrap();
    let view = load(text);
    let empty = format!("Kanata\t0004\nC=\t{}\n", c_start(text)).into_bytes();
    let n = view.insns.len() as u64;
    for (what, window) in [
        (
            "cycles past the end",
            Spec::cycles(Some(view.last_cycle as u64 + 10), None).window(),
        ),
        (
            "ids past the end",
            Spec::insns(Some(n + 5), Some(n + 10)).window(),
        ),
        ("a thread not there", Spec::threads(&[7]).window()),
        (
            "disjoint ids and cycles",
            Spec {
                cycles: (Some(view.last_cycle as u64 / 2), None),
                insns: (None, Some(1)),
                threads: None,
            }
            .window(),
        ),
    ] {
        let (report, out) = cut(&input, window, dir.path(), "empty.kanata");
        assert_eq!(out, empty, "{what}");
        assert_canonical(&out, Form::STRICT);
        assert!(load(&out).warnings.is_empty());
        assert_eq!(report.summary.instructions, 0, "{what}");
        assert_eq!(count(&report, Rule::W1), 0, "{what}");
    }
}

/// The same window twice gives the same bytes, plain and `.kanata.zst` (whose text is the
/// plain output).
#[test]
fn windows_are_deterministic_also_compressed() {
    let dir = tempfile::tempdir().unwrap();
    let (_, text) = &generated_small()[0];
    let input = dir.path().join("in.kanata");
    fs::write(&input, text).unwrap();
    let last = load(text).last_cycle as u64;
    let spec = Spec {
        cycles: (Some(last / 3), Some(last / 2)),
        insns: (None, None),
        threads: Some(vec![0, 2]),
    };
    let run = |file: &str| {
        let out = dir.path().join(file);
        let mut options = Options::new(Destination::Path(out.clone()));
        options.window = spec.window();
        convert(&input, &options).expect("convert");
        fs::read(out).unwrap()
    };
    let plain = run("a.kanata");
    assert!(plain.len() > 1000, "{} bytes", plain.len());
    assert!(run("b.kanata") == plain);
    let zst = run("a.kanata.zst");
    assert!(zst.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]));
    assert!(run("b.kanata.zst") == zst, "two .kanata.zst outputs differ");
    assert!(decompress(&zst).unwrap() == plain);
    let gz = run("a.kanata.gz");
    assert!(run("b.kanata.gz") == gz, "two .kanata.gz outputs differ");
    assert!(decompress(&gz).unwrap() == plain);
    eprintln!("{} bytes plain, {} zst", plain.len(), zst.len());
}

/// A window of a `.gz` or `.zst` input is the window of the plain input, whether reading
/// stops early (near the start) or goes to the end.
#[test]
fn windows_of_compressed_inputs_are_the_same_bytes() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let trace = generated(Shape {
        insns: 3000,
        threads: 2,
        start: 7,
        seed: 4,
        never_retire: &[],
        long_every: 500,
    });
    let plain = dir.path().join("in.kanata");
    fs::write(&plain, &trace.text).unwrap();
    let gz = dir.path().join("in.kanata.gz");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(&trace.text).unwrap();
    fs::write(&gz, encoder.finish().unwrap()).unwrap();
    let zst = dir.path().join("in.kanata.zst");
    fs::write(&zst, zstd::encode_all(&trace.text[..], 1).unwrap()).unwrap();
    let last = trace.last_cycle;
    for spec in [
        Spec::cycles(Some(20), Some(60)),
        Spec::cycles(Some(last / 2), None),
        Spec::insns(Some(100), Some(130)),
    ] {
        let (report, expected) = cut(&plain, spec.window(), dir.path(), "plain.kanata");
        let window = report.window.unwrap();
        assert_eq!(
            window.stopped_early,
            spec.cycles.1.is_some() || spec.insns.1.is_some(),
            "{spec:?}"
        );
        for input in [&gz, &zst] {
            let (compressed, out) = cut(input, spec.window(), dir.path(), "compressed.kanata");
            assert!(out == expected, "{}: {spec:?}", input.display());
            assert_eq!(compressed.window.unwrap(), window, "{}", input.display());
            assert_eq!(count(&compressed, Rule::W1), count(&report, Rule::W1));
        }
    }
}
