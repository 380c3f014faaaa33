//! The seekable, indexed `.kanata.zst` (issue 13, "Seekable, indexed .kanata.zst" and
//! "Tests"; the layout is `docs/seekable.md`), through the library:
//!
//! - a property test: random traces (several threads, dependencies on recent and on long
//!   gone instructions, flushes, instructions that never retire, a zero, positive or
//!   negative `C=` start), written by kanata-pp with `--seekable` and frames of 200 to 4,000
//!   bytes of text (so, many frames), and random windows of every kind (`--cycles`,
//!   `--sim-cycles`, `--insns`, `--threads`, combined, open ranges, windows past the end,
//!   windows that hold nothing). The window read through the index is byte for byte the
//!   window read from the start of the same file (`use_index = false`), the window of the
//!   non-seekable `.zst` and the window of the plain canonical text; the indexed run says it
//!   used the index exactly when the window has a first cycle or op id to seek to; and all
//!   are what Konata draws of the whole trace restricted to the kept instructions
//!   ([`restrict`]). The seekable file decodes (`zstd::decode_all`, every frame) to exactly
//!   the non-seekable text, and Konata loads it with zero warnings;
//! - damage: flipped bytes in the index and in the seek table, a file cut inside a data
//!   frame, inside the index and inside the seek table, the index and seek table of another
//!   file, a data frame whose checksum does not match. Never a panic, never wrong output;
//!   each case states which of the two allowed outcomes it has (the streaming result with a
//!   W2 report, or a conversion error that says what is wrong);
//! - reading stops early through the index: a window near the start or at the end of a
//!   large seekable file reads a small fraction of it (`Report::bytes_in`), where `--no-index`
//!   reads the file up to the window.
//!
//! The command line is tested in `kanata-pp/tests/seekable_cli.rs`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use kanata_pp::output::window::{Bounds, Window};
use kanata_pp::{convert, Destination, ErrorKind, Options, Report, Rule};
use kanata_tests::canonical::{assert_canonical, Options as Form};
use kanata_tests::konata_model::restrict;
use kanata_tests::{diff_views, load, load_file, Compare, Insn, View};
use kanata_writer::{DepKind, LabelKind, Lane, Writer, WriterBuilder};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

// ---------------------------------------------------------------------------------------
// Generated traces
// ---------------------------------------------------------------------------------------

/// A small xorshift generator: a seed gives the same trace on every run.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True one time in `n` (never when `n` is 0).
    fn one_in(&mut self, n: u64) -> bool {
        n != 0 && self.below(n) == 0
    }
}

/// How a generated trace looks.
#[derive(Clone, Copy, Debug)]
struct Shape {
    insns: u64,
    threads: u32,
    /// The `C=` start.
    start: i64,
    seed: u64,
    /// One instruction in this many never retires (0: none).
    open_one_in: u64,
    /// One instruction in this many lives long (a miss of 40 to 200 cycles).
    long_one_in: u64,
    /// Cycles with nothing fetched between bursts, now and then.
    idle: u64,
}

#[derive(Clone, Copy, Debug)]
enum Action {
    Enter(u32, usize),
    Leave(u32),
    Retire,
    Flush,
}

/// A canonical pipeline trace written by kanata-writer: up to two instructions fetched a
/// cycle over the threads, stages in lane 0 and stall segments in lane 1, dependencies of
/// both kinds on recent and on long gone instructions, labels with random addresses (so the
/// text does not compress to nothing), flushes, long lives, idle stretches, and instructions
/// still open at the end.
fn generate(shape: Shape) -> Vec<u8> {
    const STAGES: [&str; 6] = ["F", "D", "Issue Q", "X", "Xmiss", "C"];
    let mut rng = Rng::new(shape.seed);
    let mut builder = WriterBuilder::new();
    builder.start_cycle(shape.start);
    let mut w: Writer<Vec<u8>> = builder.from_writer(Vec::new()).expect("writer");
    let stages: Vec<_> = STAGES.iter().map(|s| w.stage(s).unwrap()).collect();
    let mut events: BTreeMap<u64, Vec<(usize, Action)>> = BTreeMap::new();
    let mut insns = Vec::new();
    let mut fetched = 0u64;
    let mut cycle = 0u64;
    let mut quiet_until = 0u64;
    loop {
        for (index, action) in events.remove(&cycle).unwrap_or_default() {
            let insn = insns[index];
            if !w.is_live(insn) {
                continue;
            }
            match action {
                Action::Enter(lane, stage) => w.enter(insn, Lane::new(lane), stages[stage]),
                Action::Leave(lane) => w.leave(insn, Lane::new(lane)),
                Action::Retire => w.retire(insn).map(drop),
                Action::Flush => w.flush(insn),
            }
            .expect("a valid writer call");
            if let Action::Enter(0, 3 | 4) = action {
                if index > 0 {
                    let back = if rng.one_in(5) {
                        1 + rng.below(index as u64)
                    } else {
                        1 + rng.below(4.min(index as u64))
                    };
                    let kind = if rng.one_in(4) {
                        DepKind::new(1)
                    } else {
                        DepKind::WAKE_UP
                    };
                    w.depend(insn, insns[index - back as usize], kind)
                        .expect("depend");
                }
            }
        }
        if fetched == shape.insns {
            if events.is_empty() {
                break;
            }
        } else if cycle >= quiet_until {
            if shape.idle > 0 && rng.one_in(40) {
                quiet_until = cycle + 1 + rng.below(shape.idle);
            }
            for _ in 0..1 + rng.below(2) {
                if fetched == shape.insns {
                    break;
                }
                let index = insns.len();
                let thread = (fetched + rng.below(2)) as u32 % shape.threads;
                let insn = w.begin(0x1000 + 3 * fetched, thread).unwrap();
                insns.push(insn);
                w.label_fmt(
                    insn,
                    LabelKind::Name,
                    format_args!(
                        "{:#x}: op{} x{}, {:#x}",
                        0x8000_0000u64 + 4 * fetched,
                        rng.below(9),
                        rng.below(31),
                        rng.next() >> 40
                    ),
                )
                .unwrap();
                if rng.one_in(4) {
                    w.label(insn, LabelKind::Detail, "reads x1\nwrites x2")
                        .unwrap();
                }
                w.enter(insn, Lane::MAIN, stages[0]).unwrap();
                let mut plan =
                    |at: u64, action| events.entry(at).or_default().push((index, action));
                let mut at = cycle + 1;
                plan(at, Action::Enter(0, 1));
                at += 1;
                plan(at, Action::Enter(0, 2));
                let wait = rng.below(4);
                if wait > 1 {
                    plan(at, Action::Enter(1, 0));
                    plan(at + wait, Action::Leave(1));
                }
                at += wait;
                let long = rng.one_in(shape.long_one_in);
                plan(at, Action::Enter(0, if long { 4 } else { 3 }));
                at += 1 + rng.below(2) + if long { 40 + rng.below(160) } else { 0 };
                plan(at, Action::Enter(0, 5));
                at += 1 + rng.below(3);
                if rng.one_in(shape.open_one_in) {
                    // Never retires: open at the end of the trace.
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
    w.advance(1 + rng.below(3)).unwrap();
    w.finish().expect("finish").output
}

// ---------------------------------------------------------------------------------------
// Conversions
// ---------------------------------------------------------------------------------------

/// One trace in the three forms a window is cut from.
struct Forms {
    /// The canonical text (`in.kanata`).
    plain: PathBuf,
    /// Seekable, indexed zstd (`seekable.kanata.zst`).
    seekable: PathBuf,
    /// One zstd frame (`stream.kanata.zst`).
    stream: PathBuf,
    text: Vec<u8>,
    view: View,
    start: i64,
}

/// Converts `input` whole to `output` (its extension picks the compression).
#[track_caller]
fn write_as(input: &Path, output: &Path, seekable: bool, frame_size: Option<usize>) -> Report {
    let mut options = Options::new(Destination::Path(output.to_path_buf()));
    options.seekable = seekable;
    options.frame_size = frame_size;
    convert(input, &options).unwrap_or_else(|err| panic!("{}: {err}", output.display()))
}

/// Writes `text` (canonical) as plain, seekable with frames of `frame_size` and one-frame
/// zstd into `dir`, and checks what the seekable file is: the same text as the one-frame
/// file (`zstd -d`, every frame), Konata loads it with zero warnings.
fn forms(text: &[u8], frame_size: usize, dir: &Path) -> Forms {
    let plain = dir.join("in.kanata");
    fs::write(&plain, text).unwrap();
    let seekable = dir.join("seekable.kanata.zst");
    let stream = dir.join("stream.kanata.zst");
    let report = write_as(&plain, &seekable, true, Some(frame_size));
    assert_eq!(
        report.diagnostics.total(),
        0,
        "a canonical trace needs no repair"
    );
    write_as(&plain, &stream, false, None);
    let seekable_bytes = fs::read(&seekable).unwrap();
    let stream_bytes = fs::read(&stream).unwrap();
    assert!(
        seekable_bytes != stream_bytes,
        "--seekable wrote what --no-seekable writes"
    );
    let decoded = zstd::decode_all(&seekable_bytes[..]).expect("zstd decodes the seekable file");
    assert!(
        decoded == zstd::decode_all(&stream_bytes[..]).unwrap(),
        "zstd -d of the seekable file is not the non-seekable file's text"
    );
    assert!(
        decoded == text,
        "zstd -d of the seekable file is not the text"
    );
    let view = load_file(&seekable).expect("Konata loads the seekable file");
    assert!(
        view.warnings.is_empty(),
        "Konata warns on the seekable file: {:?}",
        &view.warnings[..view.warnings.len().min(5)]
    );
    Forms {
        plain,
        seekable,
        stream,
        text: text.to_vec(),
        view,
        start: c_start(text),
    }
}

/// The value of the `C=` line (line 2).
fn c_start(text: &[u8]) -> i64 {
    let line = text.split(|&b| b == b'\n').nth(1).expect("a C= line");
    std::str::from_utf8(line)
        .unwrap()
        .strip_prefix("C=\t")
        .expect("line 2 is C=")
        .parse()
        .unwrap()
}

/// Cuts `window` out of `input` into `dir/<file>` (plain text); the report and the text,
/// or the error.
fn try_cut(
    input: &Path,
    window: &Window,
    use_index: bool,
    dir: &Path,
    file: &str,
) -> Result<(Report, Vec<u8>), kanata_pp::Error> {
    let out = dir.join(file);
    let _ = fs::remove_file(&out);
    let mut options = Options::new(Destination::Path(out.clone()));
    options.window = window.clone();
    options.use_index = use_index;
    let report = convert(input, &options)?;
    Ok((report, fs::read(&out).expect("the output exists")))
}

#[track_caller]
fn cut(input: &Path, window: &Window, use_index: bool, dir: &Path) -> (Report, Vec<u8>) {
    try_cut(input, window, use_index, dir, "window.kanata").unwrap_or_else(|err| {
        panic!(
            "{}: the window {window:?} (use_index {use_index}) failed: {err}",
            input.display()
        )
    })
}

fn count(report: &Report, rule: Rule) -> u64 {
    report.diagnostics.rules().get(&rule).map_or(0, |r| r.count)
}

/// A window, as the issue defines what it keeps; decided on the whole trace's view.
#[derive(Clone, Debug, Default)]
struct Spec {
    cycles: (Option<u64>, Option<u64>),
    sim_cycles: (Option<i64>, Option<i64>),
    insns: (Option<u64>, Option<u64>),
    threads: Option<Vec<i64>>,
}

impl Spec {
    /// Whether the window keeps `insn` of a trace whose `C=` start is `start`. `--sim-cycles`
    /// is `--cycles` shifted by the start (cycles before Konata's 0 are 0).
    fn keeps(&self, insn: &Insn, start: i64) -> bool {
        let to_konata = |sim: i64| (sim - start).max(0);
        let lower = [
            self.cycles.0.map(|a| a as i64),
            self.sim_cycles.0.map(to_konata),
        ];
        let upper = [
            self.cycles.1.map(|b| b as i64),
            self.sim_cycles.1.map(to_konata),
        ];
        let begins_before = upper.iter().flatten().all(|&b| insn.fetched_cycle < b);
        let ends_after = match insn.retired {
            None => true,
            Some(r) => lower.iter().flatten().all(|&a| r.cycle >= a),
        };
        let id = insn.file_id as u64;
        let in_ids = self.insns.0.is_none_or(|a| id >= a) && self.insns.1.is_none_or(|b| id < b);
        let in_threads = self
            .threads
            .as_ref()
            .is_none_or(|t| t.contains(&insn.thread));
        begins_before && ends_after && in_ids && in_threads
    }

    fn window(&self) -> Window {
        let mut window = Window::all();
        window.cycles = Bounds {
            start: self.cycles.0,
            end: self.cycles.1,
        };
        window.sim_cycles = Bounds {
            start: self.sim_cycles.0,
            end: self.sim_cycles.1,
        };
        window.insns = Bounds {
            start: self.insns.0,
            end: self.insns.1,
        };
        window.threads = self.threads.clone();
        window
    }

    /// Whether a seekable input is read through its index: a window with a first cycle or
    /// op id to seek to (a window open at its start reads from the file's start anyway).
    fn seeks(&self) -> bool {
        self.cycles.0.is_some() || self.sim_cycles.0.is_some() || self.insns.0.is_some()
    }
}

/// What compares a window's view with the restricted whole view (as in `pp_windows.rs`):
/// everything but the line numbers of `I` and the stage colours.
fn compare() -> Compare {
    Compare {
        ignore_lines: true,
        ignore_colors: true,
        max_reports: 20,
        ..Compare::default()
    }
}

/// Cuts `spec` out of the three forms of a trace and checks that every answer is the same
/// bytes, that only the seekable file's run with the index says it used it, and that the
/// window is what Konata draws of the whole trace restricted to the kept instructions.
/// Returns the window's text and the indexed run's report.
fn check_window(forms: &Forms, spec: &Spec, dir: &Path) -> (Vec<u8>, Report) {
    let window = spec.window();
    let (indexed, out) = cut(&forms.seekable, &window, true, dir);
    let (from_start, out_from_start) = cut(&forms.seekable, &window, false, dir);
    let (stream, out_stream) = cut(&forms.stream, &window, true, dir);
    let (plain, out_plain) = cut(&forms.plain, &window, true, dir);
    let show = |bytes: &[u8]| {
        let mut text = String::from_utf8_lossy(bytes).into_owned();
        text.truncate(2500);
        text
    };
    for (what, other) in [
        (
            "the seekable file read from the start (use_index = false)",
            &out_from_start,
        ),
        ("the non-seekable .zst", &out_stream),
        ("the plain canonical text", &out_plain),
    ] {
        assert!(
            *other == out,
            "{spec:?}: the window read through the index differs from the window of {what}\n\
             --- through the index:\n{}\n--- {what}:\n{}",
            show(&out),
            show(other)
        );
    }
    let report_of = |r: &Report| r.window.expect("a window report");
    assert_eq!(
        report_of(&indexed).indexed,
        spec.seeks(),
        "{spec:?}: read through the index exactly when the window has a start to seek to"
    );
    for (what, r) in [
        ("use_index = false", &from_start),
        ("non-seekable", &stream),
        ("plain", &plain),
    ] {
        assert!(!report_of(r).indexed, "{spec:?}: {what} says indexed");
    }
    for (what, r) in [
        ("use_index = false", &from_start),
        ("non-seekable", &stream),
        ("plain", &plain),
    ] {
        assert_eq!(
            count(&indexed, Rule::W1),
            count(r, Rule::W1),
            "{spec:?}: W1, {what}"
        );
        assert_eq!(indexed.summary, r.summary, "{spec:?}: summary, {what}");
    }
    assert_eq!(
        count(&indexed, Rule::W2),
        0,
        "{spec:?}: a sound index is W2"
    );
    assert_eq!(
        indexed.diagnostics.total(),
        count(&indexed, Rule::W1),
        "{spec:?}"
    );
    // What Konata draws.
    assert_canonical(&out, Form::STRICT);
    assert_eq!(
        c_start(&out),
        forms.start,
        "{spec:?}: the C= line is the trace's"
    );
    let view = load(&out);
    assert!(
        view.warnings.is_empty(),
        "{spec:?}: Konata warns: {:?}",
        &view.warnings[..view.warnings.len().min(5)]
    );
    let expected = restrict(&forms.view, |i| spec.keeps(i, forms.start));
    let diff = diff_views(&expected.view, &view, &compare());
    assert!(
        diff.is_empty(),
        "{spec:?}: the window is not the whole trace restricted to its {} kept instructions:\n\
         {}\n--- window:\n{}",
        expected.kept_ids.len(),
        diff.join("\n"),
        show(&out)
    );
    assert_eq!(
        count(&indexed, Rule::W1),
        expected.dropped_dependencies,
        "{spec:?}: W1 counts the dependencies on instructions not kept"
    );
    assert_eq!(indexed.summary.instructions, expected.kept_ids.len() as u64);
    (out, indexed)
}

// ---------------------------------------------------------------------------------------
// The property test
// ---------------------------------------------------------------------------------------

/// A window to draw, in fractions (per mille) of the trace's cycles and instructions, which
/// are known only once the trace is generated.
#[derive(Clone, Debug)]
struct Pick {
    kind: u8,
    a: u16,
    b: u16,
    threads: u8,
}

fn pick() -> impl Strategy<Value = Pick> {
    (0u8..14, 0u16..1000, 0u16..1000, any::<u8>()).prop_map(|(kind, a, b, threads)| Pick {
        kind,
        a,
        b,
        threads,
    })
}

impl Pick {
    /// The window for a trace of `last` cycles and `n` instructions over `threads` threads,
    /// starting at `start`.
    fn spec(&self, last: u64, n: u64, threads: u32, start: i64) -> Spec {
        let at = |x: u16| last * u64::from(x) / 1000;
        let id = |x: u16| n * u64::from(x) / 1000;
        let (a, b) = (at(self.a.min(self.b)), at(self.a.max(self.b)));
        let span = |a: u64, b: u64| (Some(a), Some(b.max(a + 1)));
        let list = {
            // A subset of the threads, now and then one that does not exist.
            let mut list: Vec<i64> = (0..threads as i64)
                .filter(|t| self.threads & (1 << t) != 0)
                .collect();
            if list.is_empty() {
                list.push(if self.threads & 0x80 != 0 { 7 } else { 0 });
            }
            list
        };
        let mut spec = Spec::default();
        match self.kind {
            0 => spec.cycles = span(a, b),
            1 => spec.cycles = (Some(a), None),
            2 => spec.cycles = (None, Some(b.max(1))),
            3 => spec.sim_cycles = (Some(a as i64 + start), Some(b.max(a + 1) as i64 + start)),
            4 => spec.insns = span(id(self.a.min(self.b)), id(self.a.max(self.b))),
            5 => spec.insns = (Some(id(self.a)), None),
            6 => spec.threads = Some(list),
            7 => {
                spec.cycles = span(a, b);
                spec.threads = Some(list);
            }
            8 => {
                spec.insns = span(id(self.a.min(self.b)), id(self.a.max(self.b)));
                spec.cycles = (Some(at(self.b) / 2), None);
            }
            // Past the end: only what never retires is kept.
            9 => spec.cycles = (Some(last + 1 + u64::from(self.a % 10)), None),
            // Op ids past the end: nothing.
            10 => spec.insns = (Some(n + u64::from(self.a % 5)), Some(n + 10)),
            // One cycle.
            11 => spec.cycles = span(a, a + 1),
            // Simulator cycles from before the start of the trace.
            12 => {
                spec.sim_cycles = (
                    Some(start - 1 - i64::from(self.a)),
                    Some(start + b as i64 + 1),
                );
                spec.threads = Some(list);
            }
            // Op ids from, and cycles until.
            _ => {
                spec.insns = (Some(id(self.a)), None);
                spec.cycles = (None, Some(b + 1));
            }
        }
        spec
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 28,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_window_read_through_the_index_is_the_window_read_from_the_start(
        seed in any::<u64>(),
        insns in 1u64..300,
        threads in 1u32..4,
        start in prop_oneof![Just(0i64), 1i64..1_000_000, -1_000_000i64..0],
        open_one_in in prop_oneof![Just(0u64), 15u64..200],
        long_one_in in prop_oneof![Just(0u64), 10u64..80],
        idle in prop_oneof![Just(0u64), 5u64..60],
        frame_size in 200usize..4000,
        picks in proptest::collection::vec(pick(), 3..7),
    ) {
        let shape = Shape { insns, threads, start, seed, open_one_in, long_one_in, idle };
        let text = generate(shape);
        let dir = tempfile::tempdir().unwrap();
        let forms = forms(&text, frame_size, dir.path());
        let last = forms.view.last_cycle.max(0) as u64;
        let n = forms.view.insns.len() as u64;
        for pick in &picks {
            let spec = pick.spec(last, n, threads, start);
            check_window(&forms, &spec, dir.path());
        }
    }
}

/// The property test's features on fixed traces, so that each is surely met: many frames,
/// an instruction open from the first frame to the end (every later frame's oldest live
/// frame is 0), long lives spanning frames, a negative start, windows that hold nothing.
#[test]
fn fixed_traces_and_windows_of_every_kind() {
    for (shape, frame_size) in [
        (
            Shape {
                insns: 400,
                threads: 3,
                start: 12_345,
                seed: 7,
                open_one_in: 0,
                long_one_in: 25,
                idle: 30,
            },
            300,
        ),
        (
            Shape {
                insns: 350,
                threads: 2,
                start: -4_000,
                seed: 8,
                open_one_in: 90,
                long_one_in: 40,
                idle: 0,
            },
            1000,
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let text = generate(shape);
        let forms = forms(&text, frame_size, dir.path());
        let frames = Layout::of(&fs::read(&forms.seekable).unwrap()).frames.len();
        assert!(frames > 20, "{shape:?}: only {frames} frames");
        let last = forms.view.last_cycle as u64;
        let n = forms.view.insns.len() as u64;
        let mut kinds_seen = 0;
        for kind in 0..14 {
            for (a, b) in [(0, 10), (450, 520), (100, 900)] {
                let pick = Pick {
                    kind,
                    a,
                    b,
                    threads: 0b101,
                };
                let spec = pick.spec(last, n, shape.threads, shape.start);
                let (out, _) = check_window(&forms, &spec, dir.path());
                kinds_seen += usize::from(out.len() < forms.text.len());
            }
        }
        assert!(
            kinds_seen > 30,
            "{shape:?}: most windows keep less than the trace"
        );
    }
}

// ---------------------------------------------------------------------------------------
// The layout of a seekable file (docs/seekable.md)
// ---------------------------------------------------------------------------------------

/// Where the parts of a seekable file are.
#[derive(Debug)]
struct Layout {
    /// Per data frame: its offset and compressed length.
    frames: Vec<(usize, usize)>,
    /// The index's skippable frame.
    index: std::ops::Range<usize>,
    /// The seek table's skippable frame (to the end of the file).
    seek_table: std::ops::Range<usize>,
}

fn le32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

impl Layout {
    fn of(file: &[u8]) -> Layout {
        let len = file.len();
        assert_eq!(
            le32(file, len - 4),
            0x8F92_EAB1,
            "the seek table's magic number"
        );
        let n = le32(file, len - 9) as usize;
        assert_eq!(
            file[len - 5] & 0x80,
            0,
            "no per-frame checksums in the seek table"
        );
        let table_len = 8 + 8 * n + 9;
        let table = len - table_len;
        assert_eq!(
            le32(file, table),
            0x184D_2A5E,
            "the seek table's skippable frame"
        );
        let index_len = 8 + 76 + 32 * n;
        let index = table - index_len;
        assert_eq!(
            le32(file, index),
            0x184D_2A5B,
            "the index's skippable frame"
        );
        assert_eq!(&file[index + 8..index + 16], b"KANATAIX");
        assert_eq!(
            le32(file, index + 24) as usize,
            n,
            "the index's frame count"
        );
        let mut frames = Vec::with_capacity(n);
        let mut offset = 0;
        for i in 0..n {
            let compressed = le32(file, table + 8 + 8 * i) as usize;
            frames.push((offset, compressed));
            offset += compressed;
        }
        assert_eq!(offset, index, "the frames end where the index starts");
        Layout {
            frames,
            index: index..table,
            seek_table: table..len,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Damage
// ---------------------------------------------------------------------------------------

/// A trace of many frames for the damage tests, its forms, and windows: one near the start
/// (stops early), one in the middle, one to the end (open, reads every frame after its
/// start).
struct Damage {
    dir: tempfile::TempDir,
    forms: Forms,
    bytes: Vec<u8>,
    layout: Layout,
    /// (name, window, the window's text read from the undamaged plain text, whether it
    /// reads to the end of the text).
    windows: Vec<(&'static str, Window, Vec<u8>, bool)>,
}

impl Damage {
    fn new() -> Damage {
        let dir = tempfile::tempdir().unwrap();
        let text = generate(Shape {
            insns: 500,
            threads: 2,
            start: 100,
            seed: 42,
            open_one_in: 0,
            long_one_in: 50,
            idle: 0,
        });
        let forms = forms(&text, 1000, dir.path());
        let bytes = fs::read(&forms.seekable).unwrap();
        let layout = Layout::of(&bytes);
        assert!(layout.frames.len() > 30, "{} frames", layout.frames.len());
        let last = forms.view.last_cycle as u64;
        let mut windows = Vec::new();
        for (name, a, b) in [
            ("near the start", last / 20, Some(last / 20 + 20)),
            ("in the middle", last / 2, Some(last / 2 + 30)),
            ("to the end", last * 3 / 4, None),
        ] {
            let mut window = Window::all();
            window.cycles = Bounds {
                start: Some(a),
                end: b,
            };
            let (report, expected) = cut(&forms.plain, &window, true, dir.path());
            assert!(!expected.is_empty());
            let to_end = !report.window.unwrap().stopped_early;
            assert_eq!(to_end, b.is_none(), "{name}: stops early unless open-ended");
            windows.push((name, window, expected, to_end));
        }
        Damage {
            dir,
            forms,
            bytes,
            layout,
            windows,
        }
    }

    /// Writes `damaged` as a `.kanata.zst` and cuts every window out of it through the
    /// index, then from the start; `outcome` says what each must give.
    #[track_caller]
    fn check(&self, what: &str, damaged: &[u8], outcome: impl Fn(&str, bool, bool) -> Outcome) {
        let path = self.dir.path().join("damaged.kanata.zst");
        fs::write(&path, damaged).unwrap();
        for (name, window, expected, to_end) in &self.windows {
            for use_index in [true, false] {
                let who = format!("{what}, window {name} (use_index {use_index})");
                let got = try_cut(
                    &path,
                    window,
                    use_index,
                    self.dir.path(),
                    "damaged-window.kanata",
                );
                match (outcome(name, *to_end, use_index), got) {
                    (Outcome::Streamed { w2 }, Ok((report, out))) => {
                        assert_same(&out, expected, &who);
                        assert!(
                            !report.window.unwrap().indexed,
                            "{who}: read through the index"
                        );
                        let expect_w2 = w2 && use_index;
                        assert_eq!(
                            count(&report, Rule::W2),
                            u64::from(expect_w2),
                            "{who}: W2 ({:?})",
                            report.diagnostics.rules().get(&Rule::W2)
                        );
                        if expect_w2 {
                            let message =
                                &report.diagnostics.rules()[&Rule::W2].examples[0].message;
                            assert!(
                                message.contains("seekable index")
                                    && message.contains("from the start"),
                                "{who}: the W2 note says what happened: {message}"
                            );
                        }
                    }
                    (Outcome::Indexed, Ok((report, out))) => {
                        assert_same(&out, expected, &who);
                        assert_eq!(
                            report.window.unwrap().indexed,
                            use_index,
                            "{who}: read through the index"
                        );
                        assert_eq!(count(&report, Rule::W2), 0, "{who}");
                    }
                    (Outcome::Fails(needle), Err(err)) => {
                        assert_eq!(err.kind(), ErrorKind::Input, "{who}: {err}");
                        let message = err.to_string();
                        assert!(
                            needle.iter().any(|n| message.contains(n)),
                            "{who}: the error says what is wrong ({needle:?}): {message}"
                        );
                        assert!(
                            !self.dir.path().join("damaged-window.kanata").exists(),
                            "{who}: an output was left behind"
                        );
                    }
                    (Outcome::FailsOrIndexed(needle), Err(err)) => {
                        assert_eq!(err.kind(), ErrorKind::Input, "{who}: {err}");
                        let message = err.to_string();
                        assert!(
                            needle.iter().any(|n| message.contains(n)),
                            "{who}: the error says what is wrong ({needle:?}): {message}"
                        );
                    }
                    (Outcome::FailsOrIndexed(_), Ok((report, out))) => {
                        assert_same(&out, expected, &who);
                        assert!(report.window.unwrap().indexed, "{who}");
                    }
                    (Outcome::FailsOrStreamed, Err(err)) => {
                        assert_eq!(err.kind(), ErrorKind::Input, "{who}: {err}");
                    }
                    (Outcome::FailsOrStreamed, Ok((_, out))) => {
                        assert_same(&out, expected, &who);
                    }
                    (expected_outcome, got) => panic!(
                        "{who}: expected {expected_outcome:?}, got {:?}",
                        got.map(|(r, out)| (
                            r.window,
                            r.diagnostics.rules().keys().copied().collect::<Vec<_>>(),
                            out == *expected
                        ))
                    ),
                }
            }
        }
        // Without a window, the whole trace: an error or the trace itself, never else.
        let whole = self.dir.path().join("damaged-whole.kanata");
        match convert(&path, &Options::new(Destination::Path(whole.clone()))) {
            Ok(_) => assert!(
                fs::read(&whole).unwrap() == self.forms.text,
                "{what}: the whole trace converts to something else"
            ),
            Err(err) => assert_eq!(err.kind(), ErrorKind::Input, "{what}: {err}"),
        }
    }
}

/// What a damaged file gives.
#[derive(Debug)]
enum Outcome {
    /// The index is not used: the window is the streaming result; with `w2`, the run
    /// through the index reports the damaged index under W2.
    Streamed { w2: bool },
    /// The index is used (only what it does not need was damaged): the right window.
    Indexed,
    /// The conversion fails with an input error whose message has one of these.
    Fails(&'static [&'static str]),
    /// The conversion fails as [`Outcome::Fails`] says, or the index is used and the
    /// window is right (when the index's start frame is after the damage).
    FailsOrIndexed(&'static [&'static str]),
    /// Either (a damage whose effect on zstd's decoder is not ours to say).
    FailsOrStreamed,
}

/// Messages of a zstd stream cut short or damaged, as kanata-pp reports them.
const TRUNCATED: &[&str] = &[
    "truncated",
    "incomplete",
    "unexpected end",
    "Unexpected end",
    "ends inside",
];

#[test]
fn a_damaged_index_is_reported_and_the_file_read_from_the_start() {
    let damage = Damage::new();
    let index = damage.layout.index.clone();
    // Every field of the index: the skippable frame's magic (still skippable: 0x5B -> 0x5A),
    // the tag, the version, the entry size, the frame count, the sizes' CRC, the totals,
    // the start cycle, lines, last cycle, instructions, entries (line, cycle, next_id,
    // oldest live frame, frame checksum), the checksum.
    let n = damage.layout.frames.len();
    let mut offsets = vec![0, 8, 16, 20, 24, 28, 32, 48, 64];
    for (frame, field) in [(1, 0), (n / 2, 8), (n / 2, 16), (n - 1, 24), (n / 2, 28)] {
        offsets.push(80 + 32 * frame + field);
    }
    offsets.push(80 + 32 * n);
    offsets.push(80 + 32 * n + 3);
    for at in offsets {
        let mut bytes = damage.bytes.clone();
        bytes[index.start + at] ^= 0x01;
        damage.check(&format!("index byte {at} flipped"), &bytes, |_, _, _| {
            Outcome::Streamed { w2: true }
        });
    }
    // The size field of the index's skippable frame: W2; zstd then skips the wrong number
    // of bytes, into the seek table, and fails when the reading gets there.
    let mut bytes = damage.bytes.clone();
    bytes[index.start + 4] ^= 0x01;
    damage.check("index size field", &bytes, |_, to_end, _| match to_end {
        true => Outcome::FailsOrStreamed,
        false => Outcome::Streamed { w2: true },
    });
}

#[test]
fn a_damaged_seek_table_is_reported_and_the_file_read_from_the_start() {
    let damage = Damage::new();
    let table = damage.layout.seek_table.clone();
    let len = damage.bytes.len();
    // A frame's compressed or decompressed size, the frame count: the index no longer
    // belongs to the table (or the table no longer fits the file): W2.
    for at in [
        table.start + 8,
        table.start + 8 + 4,
        table.start + 8 + 8 * 5,
        len - 9,
        len - 8,
    ] {
        let mut bytes = damage.bytes.clone();
        bytes[at] ^= 0x04;
        damage.check(
            &format!("seek table byte {} flipped", at - table.start),
            &bytes,
            |_, _, _| Outcome::Streamed { w2: true },
        );
    }
    // The descriptor byte (per-frame checksums announced): the table's size changes: W2.
    let mut bytes = damage.bytes.clone();
    bytes[len - 5] ^= 0x80;
    damage.check("seek table descriptor", &bytes, |_, _, _| {
        Outcome::Streamed { w2: true }
    });
    // The seek table's magic number: the file no longer says it is seekable, and is read as
    // any zstd file, with no note (nothing tells it from a plain one).
    let mut bytes = damage.bytes.clone();
    bytes[len - 1] ^= 0x01;
    damage.check("seek table magic", &bytes, |_, _, _| Outcome::Streamed {
        w2: false,
    });
}

#[test]
fn a_truncated_seekable_file_is_read_as_a_truncated_zstd_file() {
    let damage = Damage::new();
    let layout = &damage.layout;
    let (mid_offset, mid_len) = layout.frames[layout.frames.len() / 2];
    let (last_offset, last_len) = *layout.frames.last().unwrap();
    for (what, at) in [
        (
            "inside a data frame in the middle",
            mid_offset + mid_len / 2,
        ),
        ("inside the last data frame", last_offset + last_len / 2),
        ("at the end of the last data frame", layout.index.start),
        ("inside the index", layout.index.start + 40),
        ("inside the index's entries", layout.index.end - 30),
        ("at the start of the seek table", layout.seek_table.start),
        ("inside the seek table", layout.seek_table.start + 20),
        ("one byte short", damage.bytes.len() - 1),
    ] {
        let cut_bytes = &damage.bytes[..at];
        // The seek table is gone: not a seekable file, no W2; read as a zstd stream, it is
        // a truncated zstd file. A window that stops early, before the cut, is the window;
        // a window that reads to the end fails saying the input is truncated, except a cut
        // exactly at the end of a frame, the last data frame's or the index's (then the
        // text is whole and the zstd file valid).
        damage.check(&format!("cut {what}"), cut_bytes, |name, to_end, _| {
            let cut_in_text = at < layout.index.start;
            if at == layout.index.start || at == layout.seek_table.start {
                Outcome::Streamed { w2: false }
            } else if to_end {
                Outcome::Fails(TRUNCATED)
            } else if name == "in the middle" && cut_in_text {
                // The middle window's frames lie around the middle frame: the cut may come
                // before the window is complete.
                Outcome::FailsOrStreamed
            } else {
                Outcome::Streamed { w2: false }
            }
        });
    }
}

#[test]
fn the_index_and_seek_table_of_another_file_are_not_trusted() {
    let damage = Damage::new();
    let data_end = damage.layout.index.start;
    // Another trace, its own seekable file.
    let other_dir = tempfile::tempdir().unwrap();
    let other_text = generate(Shape {
        insns: 500,
        threads: 1,
        start: 0,
        seed: 43,
        open_one_in: 0,
        long_one_in: 0,
        idle: 0,
    });
    let other = forms(&other_text, 700, other_dir.path());
    let other_bytes = fs::read(&other.seekable).unwrap();
    let other_layout = Layout::of(&other_bytes);
    let other_trailer = &other_bytes[other_layout.index.start..];
    // Our frames, then the other file's index and seek table instead of ours: W2.
    let mut swapped = damage.bytes[..data_end].to_vec();
    swapped.extend_from_slice(other_trailer);
    damage.check(
        "the other file's index and seek table",
        &swapped,
        |_, _, _| Outcome::Streamed { w2: true },
    );
    // Our whole file, then the other file's index and seek table appended: W2.
    let mut appended = damage.bytes.clone();
    appended.extend_from_slice(other_trailer);
    damage.check(
        "the other file's index and seek table appended",
        &appended,
        |_, _, _| Outcome::Streamed { w2: true },
    );
    // The same text cut into other frames: its index and seek table on our frames: W2.
    let refr = damage.dir.path().join("reframed.kanata.zst");
    write_as(&damage.forms.plain, &refr, true, Some(999));
    let reframed = fs::read(&refr).unwrap();
    let reframed_layout = Layout::of(&reframed);
    assert_ne!(reframed_layout.frames, damage.layout.frames);
    let mut swapped = damage.bytes[..data_end].to_vec();
    swapped.extend_from_slice(&reframed[reframed_layout.index.start..]);
    damage.check(
        "the index of the same text in other frames",
        &swapped,
        |_, _, _| Outcome::Streamed { w2: true },
    );
}

/// An index copied from a file whose frames have exactly the sizes of ours but another text
/// (one cycle step of the first frame is `C 2` instead of `C 1`): the seek table is ours
/// byte for byte, so nothing in the sizes tells the index from ours, yet its cycles are
/// wrong by one from the first frame on. The window must still be right: either the index
/// is refused (W2, read from the start) or the output is the right one anyway.
#[test]
fn an_index_of_another_text_with_the_same_frame_sizes_never_makes_output_wrong() {
    let damage = Damage::new();
    let text = &damage.forms.text;
    let data_end = damage.layout.index.start;
    // Find a `C\t1` line in the first frame whose change to `C\t2` keeps every frame's
    // compressed size (deterministic: the same candidates are tried on every run).
    let frame0_text_len = {
        let (_, len) = damage.layout.frames[0];
        let frame = &damage.bytes[..len];
        zstd::decode_all(frame).unwrap().len()
    };
    let mut found = None;
    let mut at = 0;
    let mut tries = 0;
    while let Some(pos) = memfind(&text[at..frame0_text_len], b"\nC\t1\n") {
        let line = at + pos + 3;
        at = line;
        tries += 1;
        if tries > 40 {
            break;
        }
        let mut other = text.clone();
        other[line] = b'2';
        let path = damage.dir.path().join("in-other.kanata");
        fs::write(&path, &other).unwrap();
        let out = damage.dir.path().join("other.kanata.zst");
        write_as(&path, &out, true, Some(1000));
        let bytes = fs::read(&out).unwrap();
        let layout = Layout::of(&bytes);
        if layout.frames == damage.layout.frames
            && bytes[layout.seek_table.clone()] == damage.bytes[damage.layout.seek_table.clone()]
        {
            found = Some(bytes);
            break;
        }
    }
    let Some(other) = found else {
        eprintln!("note: no change of a cycle step kept every frame's size; test skipped");
        return;
    };
    let other_layout = Layout::of(&other);
    assert!(
        other[other_layout.index.clone()] != damage.bytes[damage.layout.index.clone()],
        "the other text's index differs"
    );
    let mut swapped = damage.bytes[..data_end].to_vec();
    swapped.extend_from_slice(&other[other_layout.index.start..]);
    damage.check(
        "the index of another text with the same frame sizes",
        &swapped,
        |_, _, _| Outcome::FailsOrStreamed,
    );
}

/// Asserts that a damaged file's window is the right one; shows the first difference.
#[track_caller]
fn assert_same(out: &[u8], expected: &[u8], who: &str) {
    if out == expected {
        return;
    }
    let (a, b) = (
        String::from_utf8_lossy(out),
        String::from_utf8_lossy(expected),
    );
    let line = a
        .lines()
        .zip(b.lines())
        .position(|(x, y)| x != y)
        .unwrap_or(a.lines().count().min(b.lines().count()));
    let near = |t: &str| {
        t.lines()
            .skip(line.saturating_sub(2))
            .take(5)
            .collect::<Vec<_>>()
            .join("\n")
    };
    panic!(
        "{who}: WRONG OUTPUT: {} bytes, expected {}; first difference at line {}:\n--- got:\n{}\n--- expected:\n{}",
        out.len(),
        expected.len(),
        line + 1,
        near(&a),
        near(&b)
    );
}

fn memfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The frame of a seekable file whose text holds the cycle step past Konata cycle `cycle`.
fn frame_of_cycle(bytes: &[u8], layout: &Layout, cycle: u64) -> usize {
    let mut at = 0u64;
    for (i, &(offset, len)) in layout.frames.iter().enumerate() {
        let text = zstd::decode_all(&bytes[offset..offset + len]).unwrap();
        for line in text.split(|&b| b == b'\n') {
            if let Some(step) = line.strip_prefix(b"C\t") {
                at += std::str::from_utf8(step).unwrap().parse::<u64>().unwrap();
                if at > cycle {
                    return i;
                }
            }
        }
    }
    panic!("no frame reaches cycle {cycle}");
}

#[test]
fn a_damaged_data_frame_is_an_error_naming_it() {
    let damage = Damage::new();
    let last = damage.forms.view.last_cycle as u64;
    // The frame where the middle window's cycles are: the middle window reads it, through
    // the index or from the start, and so does the open window from the start.
    let frame = frame_of_cycle(&damage.bytes, &damage.layout, last / 2 + 10);
    assert!(frame > 5, "frame {frame}");
    let (offset, len) = damage.layout.frames[frame];
    let name = format!("frame {frame}");
    let frame_name: &'static str = Box::leak(name.clone().into_boxed_str());
    let needles: &'static [&'static str] = Box::leak(
        vec![frame_name, "checksum", "Checksum", "corrupt", "Corrupt"].into_boxed_slice(),
    );
    for (what, at) in [
        ("a byte of the compressed data", offset + len / 2),
        ("the frame's checksum", offset + len - 2),
    ] {
        let mut bytes = damage.bytes.clone();
        bytes[at] ^= 0x10;
        damage.check(
            &format!("{what} of {name}"),
            &bytes,
            |window, _, use_index| match (window, use_index) {
                // Well before the frame: the early window never reads it.
                ("near the start", _) => Outcome::Indexed,
                // The middle window reads it, through the index too.
                ("in the middle", _) => Outcome::Fails(needles),
                // From the start, the open window reads it; through the index, it reads
                // from the frame of the oldest instruction live at its start, which may or
                // may not be before the damaged one.
                (_, false) => Outcome::Fails(needles),
                (_, true) => Outcome::FailsOrIndexed(needles),
            },
        );
    }
    // Through the index, the message names the frame.
    let mut bytes = damage.bytes.clone();
    bytes[offset + len / 2] ^= 0x10;
    let path = damage.dir.path().join("frame.kanata.zst");
    fs::write(&path, &bytes).unwrap();
    let mut window = Window::all();
    window.cycles = Bounds {
        start: Some(last / 2),
        end: Some(last / 2 + 30),
    };
    let err = try_cut(&path, &window, true, damage.dir.path(), "w.kanata").unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("frame {frame} of the seekable file is damaged")),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------
// Reading stops early
// ---------------------------------------------------------------------------------------

/// A window near the start of a large seekable file, or at its end, reads a small fraction
/// of it through the index; from the start (`use_index = false`) the whole file up to the
/// window.
#[test]
fn the_index_reads_only_the_frames_a_window_needs() {
    let dir = tempfile::tempdir().unwrap();
    let text = generate(Shape {
        insns: 24_000,
        threads: 2,
        start: -77,
        seed: 5,
        open_one_in: 0,
        long_one_in: 200,
        idle: 0,
    });
    assert!(text.len() > 2_500_000, "{} bytes of text", text.len());
    // (Not `forms`: the Konata model of the whole trace is what the other tests check, and
    // it is slow on megabytes in a debug build.)
    let plain = dir.path().join("in.kanata");
    fs::write(&plain, &text).unwrap();
    let seekable = dir.path().join("seekable.kanata.zst");
    let stream = dir.path().join("stream.kanata.zst");
    write_as(&plain, &seekable, true, Some(2000));
    write_as(&plain, &stream, false, None);
    let file_len = fs::metadata(&seekable).unwrap().len();
    let stream_len = fs::metadata(&stream).unwrap().len();
    let bytes = fs::read(&seekable).unwrap();
    let layout = Layout::of(&bytes);
    let frames = layout.frames.len() as u64;
    assert!(
        file_len > 800_000 && frames > 1000,
        "{file_len} bytes, {frames} frames"
    );
    let last: u64 = text
        .split(|&b| b == b'\n')
        .filter_map(|l| l.strip_prefix(b"C\t"))
        .map(|n| std::str::from_utf8(n).unwrap().parse::<u64>().unwrap())
        .sum();
    for (what, a, b) in [
        ("near the start", 200, Some(300)),
        ("in the middle", last / 2, Some(last / 2 + 100)),
        ("at the end", last - 100, None),
    ] {
        let mut window = Window::all();
        window.cycles = Bounds {
            start: Some(a),
            end: b,
        };
        let (indexed, out) = cut(&seekable, &window, true, dir.path());
        let (from_start, out_from_start) = cut(&seekable, &window, false, dir.path());
        assert!(
            insns_in(&out) > 50,
            "{what}: {} instructions",
            insns_in(&out)
        );
        assert!(out == out_from_start, "{what}: the indexed window differs");
        let report = indexed.window.unwrap();
        assert!(report.indexed, "{what}");
        assert!(
            indexed.bytes_in * 50 < file_len,
            "{what}: read {} of {file_len} bytes through the index",
            indexed.bytes_in
        );
        assert!(
            indexed.bytes_in > 0 && indexed.bytes_in <= 20 * 2000,
            "{what}: {} bytes through the index for a window of a few frames",
            indexed.bytes_in
        );
        assert!(
            report.instructions_read * 20 < 24_000,
            "{what}: {} instructions read",
            report.instructions_read
        );
        assert!(from_start.bytes_in >= indexed.bytes_in, "{what}");
        // From the start, the file up to the window: at least every frame before the one
        // where cycle A is.
        let (offset, _) = layout.frames[frame_of_cycle(&bytes, &layout, a)];
        assert!(
            from_start.bytes_in >= offset as u64,
            "{what}: from the start, read {} bytes, the window starts at byte {offset}",
            from_start.bytes_in
        );
        if what != "near the start" {
            assert!(
                offset as u64 * 3 > file_len,
                "{what}: the window is far into the file (byte {offset} of {file_len})"
            );
            let (streamed, _) = cut(&stream, &window, true, dir.path());
            assert!(
                streamed.bytes_in * 3 > stream_len,
                "{what}: the one-frame .zst, read {} of {stream_len} bytes",
                streamed.bytes_in
            );
        }
        if what == "at the end" {
            assert_eq!(
                from_start.bytes_in, file_len,
                "{what}: from the start, all of it"
            );
        }
    }
}

/// The `I` lines of a canonical text.
fn insns_in(text: &[u8]) -> usize {
    text.split(|&b| b == b'\n')
        .filter(|l| l.starts_with(b"I\t"))
        .count()
}

/// The indexed run and the streaming run of one window agree on everything the report
/// says of the window but the bytes read and `indexed`; `--stats` of a window is the same.
#[test]
fn stats_of_a_window_read_through_the_index_are_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let text = generate(Shape {
        insns: 700,
        threads: 3,
        start: 5,
        seed: 9,
        open_one_in: 0,
        long_one_in: 30,
        idle: 20,
    });
    let forms = forms(&text, 600, dir.path());
    let last = forms.view.last_cycle as u64;
    let mut window = Window::all();
    window.cycles = Bounds {
        start: Some(last / 3),
        end: Some(last / 3 + 40),
    };
    window.threads = Some(vec![0, 2]);
    let run = |input: &Path, use_index: bool| {
        let mut options = Options::new(Destination::Check);
        options.window = window.clone();
        options.use_index = use_index;
        options.stats = true;
        convert(input, &options).unwrap()
    };
    let indexed = run(&forms.seekable, true);
    assert!(indexed.window.unwrap().indexed);
    for other in [run(&forms.seekable, false), run(&forms.plain, true)] {
        assert!(!other.window.unwrap().indexed);
        assert_eq!(indexed.stats, other.stats);
        assert_eq!(indexed.summary, other.summary);
        assert_eq!(
            indexed.window.unwrap().stopped_early,
            other.window.unwrap().stopped_early
        );
    }
    assert!(indexed.stats.unwrap().instructions > 0);
}
