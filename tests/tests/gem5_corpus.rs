//! kanata-pp on gem5 O3PipeView traces: the corpus (`shared/corpus/gem5/`, described in its
//! `SOURCES.md`) and synthetic traces.
//!
//! [`konata_gem5`] below is a small model of Konata's *gem5* loader, written from section 2
//! of `shared/spec/gem5-o3pipeview.md` (the model in `kanata_tests` is of Konata's *Kanata*
//! parser). For every trace: the Kanata output is canonical, Konata loads it with zero
//! warnings, and what it draws equals what the gem5 loader draws for the raw trace, up to
//! the residue spec §2.7 lists (applied to the model's view by [`residue`], one documented
//! adjustment each). Converting the output again as Kanata changes nothing.
//!
//! The corpus lives outside this repository; when it is absent those tests print a note and
//! pass.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use kanata_pp::{convert, Destination, Gem5Options, Options, Report, Rule};
use kanata_tests::{decompress, diff_views, Compare, RetireKind, View};

/// The heavy tests run one at a time, so that the peak memory one of them measures is its
/// own.
static HEAVY: Mutex<()> = Mutex::new(());

fn corpus() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/gem5");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "note: {} is absent; gem5 corpus test skipped",
            dir.display()
        );
        None
    }
}

fn corpus_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name != "SOURCES.md" && !name.starts_with('.')
        })
        .collect();
    files.sort();
    files
}

fn gem5_options(out: &Path, deps: bool) -> Options {
    let mut options = Options::new(Destination::Path(out.to_path_buf()));
    options.max_examples = usize::MAX;
    options.gem5 = Gem5Options::default();
    options.gem5.deps = deps;
    options
}

/// Converts `input` (detected as gem5) and checks what holds for every output.
#[track_caller]
fn convert_checked(input: &Path, deps: bool) -> (Report, Vec<u8>, View) {
    let tmp = tempfile::tempdir().unwrap();
    let options = gem5_options(&tmp.path().join("out.kanata"), deps);
    kanata_tests::conversion::convert_checked(input, options, tmp.path(), "gem5")
}

/// Compares what Konata draws for the output with what its gem5 loader draws for the input.
#[track_caller]
fn assert_drawn_like_konata(name: &str, raw: &[u8], view: &View, deps: bool) {
    let expected = residue(konata_gem5::load(raw), deps);
    let mut got = view.clone();
    if deps {
        // The `--deps` lane (X, then x) is ours: compare its arrows, not its boxes.
        for insn in &mut got.insns {
            insn.lanes.remove("1");
            insn.lane_levels.remove("1");
        }
        got.lane_names.retain(|l| l != "1");
        got.stage_levels.remove("1");
    }
    let compare = Compare {
        ignore_file_ids: true,
        ignore_lines: true,
        ignore_warnings: true,
        ignore_dependencies: true,
        ..Compare::default()
    };
    let diffs = diff_views(&expected, &got, &compare);
    assert!(
        diffs.is_empty(),
        "{name}: Konata draws the output unlike the gem5 trace:\n{}",
        diffs.join("\n")
    );
    if deps {
        assert_eq!(got.arrows.len(), expected.arrows.len(), "{name}");
    }
}

/// The residual differences of spec §2.7, applied to the gem5 loader's view.
fn residue(model: konata_gem5::Model, deps: bool) -> View {
    let mut view = model.view;
    for (i, insn) in view.insns.iter_mut().enumerate() {
        // `R` comes one cycle after the retire (or flush) cycle, so that `Rt` (or the flushed
        // instruction's last stage) is drawn one cycle wide; a flushed instruction that only
        // fetched already got that cycle from Konata.
        if !model.fetch_only_flush[i] {
            insn.retired_cycle += 1;
            if let Some(r) = insn.retired.as_mut() {
                r.cycle += 1;
            }
        }
        // A flushed instruction's zero-length stages other than the last stay zero-length
        // (Konata widens them to overlap the next stage, which covers the same cell).
        if let Some(stages) = insn.lanes.get_mut("0") {
            let last = stages.len().saturating_sub(1);
            for (j, stage) in stages.iter_mut().enumerate() {
                if j != last && model.widened[i][j] {
                    stage.raw_end = stage.start;
                }
            }
        }
        // Konata draws a stage whose end is cycle 0 up to the instruction's end.
        for stages in insn.lanes.values_mut() {
            for stage in stages {
                stage.end = if stage.raw_end == 0 {
                    insn.retired_cycle
                } else {
                    stage.raw_end
                };
            }
        }
        if !deps {
            // Without `--deps` there are no X stages: no arrows, no producer/consumer cycles.
            insn.cons_cycle = None;
            insn.prod_cycle = None;
            insn.producers.clear();
            insn.consumers.clear();
        }
    }
    view.last_cycle += 1;
    if !deps {
        view.arrows.clear();
    }
    view
}

// ---------------------------------------------------------------------------------------
// The corpus
// ---------------------------------------------------------------------------------------

#[test]
fn every_corpus_trace_is_drawn_as_konatas_gem5_loader_draws_it() {
    let Some(dir) = corpus() else { return };
    let files = corpus_files(&dir);
    assert!(files.len() >= 11, "{files:?}");
    for input in &files {
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        let raw = decompress(&fs::read(input).unwrap()).unwrap();
        for deps in [false, true] {
            let (report, _, view) = convert_checked(input, deps);
            assert_eq!(
                report.diagnostics.total(),
                0,
                "{name}: {:?}",
                report.diagnostics.rules()
            );
            assert_drawn_like_konata(&name, &raw, &view, deps);
        }
    }
}

#[test]
fn uscope_reference_trace_facts() {
    let Some(dir) = corpus() else { return };
    let input = dir.join("ProteusLab__uScope__reference.out");
    let (report, output, view) = convert_checked(&input, false);
    // 198 instructions in 1386 lines, some squashed, 2 GHz.
    assert_eq!(report.lines_in, 1386);
    assert_eq!(view.insns.len(), 198);
    let flushed = view
        .insns
        .iter()
        .filter(|i| i.retired.map(|r| r.kind) == Some(RetireKind::Flushed))
        .count();
    assert!(flushed > 0);
    // Dense ids, gem5 sequence numbers as simulator ids, in order.
    let sims: Vec<i64> = view.insns.iter().map(|i| i.sim_id).collect();
    assert!(sims.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(view.insns[0].label_name, "0x00010144: auipc a0, 1:IntAlu");
    // Unaligned store completions stay in the detail label only.
    let text = String::from_utf8(output).unwrap();
    assert!(text.contains("Store Tick: 249001"));
}

#[test]
fn konata_basic_fixture_matches_konatas_own_expectations() {
    let Some(dir) = corpus() else { return };
    let (_, _, view) = convert_checked(&dir.join("shioyadan__Konata__gem5-basic.txt"), false);
    let insn = &view.insns[0];
    assert_eq!(insn.sim_id, 10);
    assert_eq!(insn.label_name, "0x00001000:  add r1, r2");
    let boxes: Vec<(&str, i64, i64)> = insn
        .lane("0")
        .iter()
        .map(|s| (s.name.as_str(), s.start, s.end))
        .collect();
    assert_eq!(
        boxes,
        vec![
            ("F", 0, 1),
            ("Dc", 1, 2),
            ("Rn", 2, 3),
            ("Ds", 3, 4),
            ("Is", 4, 5),
            ("Cm", 5, 6),
            ("Rt", 6, 7)
        ]
    );
}

#[test]
fn rename_dependency_arrows_with_deps() {
    let Some(dir) = corpus() else { return };
    for name in [
        "shioyadan__Konata__testcase__rename-dependency.log",
        "shioyadan__Konata__testcase__underscore-register.log",
    ] {
        let (_, _, view) = convert_checked(&dir.join(name), true);
        assert_eq!(view.arrows.len(), 1, "{name}");
        let (_, _, plain) = convert_checked(&dir.join(name), false);
        assert!(plain.arrows.is_empty(), "{name}");
    }
}

// ---------------------------------------------------------------------------------------
// Synthetic traces
// ---------------------------------------------------------------------------------------

/// A synthetic gem5 trace, line by line: 4-wide fetch at 2 GHz, in-order commit, about one
/// instruction in twenty squashed, `Rename` lines (with `--deps` arrows), a few MemDepUnit
/// completions, records printed shuffled in blocks of 64 (at most 63 places late).
struct Synth {
    n: u64,
    rng: u64,
}

impl Synth {
    fn new(n: u64, seed: u64) -> Synth {
        Synth {
            n,
            rng: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
        }
    }

    fn next(&mut self, bound: u64) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) % bound
    }

    fn record(&mut self, seq: u64, last_retire: &mut u64, out: &mut String) {
        const TPC: u64 = 500;
        use std::fmt::Write as _;
        let fetch = 100 + seq / 4;
        let decode = fetch + 1 + self.next(2);
        let rename = decode + 1;
        let dispatch = rename + 1;
        let issue = dispatch + self.next(4);
        let complete = issue + 1 + self.next(3);
        let pc = 0x1000 + seq * 4;
        if self.next(20) == 0 {
            let _ = writeln!(
                out,
                "O3PipeView:fetch:{}:0x{pc:08x}:0:{seq}:bne a{}, a1, 8\n\
                 O3PipeView:decode:{}\nO3PipeView:rename:0\nO3PipeView:dispatch:0\n\
                 O3PipeView:issue:0\nO3PipeView:complete:0\nO3PipeView:retire:0:store:0",
                fetch * TPC,
                seq % 8,
                decode * TPC
            );
            return;
        }
        let retire = (*last_retire).max(complete + 1 + self.next(2));
        *last_retire = retire;
        let reg = seq % 32;
        let _ = writeln!(
            out,
            "{t}: system.cpu.rename: [tid:0] Looking up integer arch reg 1, got phys reg {} \
             (integer) [sn:{seq}]\n\
             {t}: system.cpu.rename: [tid:0] Renaming arch reg 1 (integer) to physical reg \
             {reg} ({reg}). [sn:{seq}]",
            (seq + 31) % 32,
            t = rename * TPC,
        );
        if self.next(10) == 0 && retire > complete + 1 {
            let _ = writeln!(
                out,
                "{}: system.cpu.memDep0: Completed mem instruction PC (0x{pc:x}) [sn:{seq}].",
                (complete + 1) * TPC
            );
        }
        let _ = writeln!(
            out,
            "O3PipeView:fetch:{}:0x{pc:08x}:0:{seq}:ld a{}, 8(a1)\nO3PipeView:decode:{}\n\
             O3PipeView:rename:{}\nO3PipeView:dispatch:{}\nO3PipeView:issue:{}\n\
             O3PipeView:complete:{}\nO3PipeView:retire:{}:store:0",
            fetch * TPC,
            seq % 8,
            decode * TPC,
            rename * TPC,
            dispatch * TPC,
            issue * TPC,
            complete * TPC,
            retire * TPC
        );
    }

    /// Writes the whole trace to `out`.
    fn write_to(mut self, out: &mut impl Write) {
        let mut last_retire = 0;
        let mut block: Vec<String> = Vec::with_capacity(64);
        let mut seq = 1;
        while seq <= self.n {
            let mut text = String::new();
            self.record(seq, &mut last_retire, &mut text);
            block.push(text);
            seq += 1;
            if block.len() == 64 || seq > self.n {
                for i in (1..block.len()).rev() {
                    let j = self.next(i as u64 + 1) as usize;
                    block.swap(i, j);
                }
                for text in block.drain(..) {
                    out.write_all(text.as_bytes()).unwrap();
                }
            }
        }
    }
}

#[test]
fn a_synthetic_trace_is_drawn_as_konatas_gem5_loader_draws_it() {
    let _heavy = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    // 20,000 instructions: Konata detects the clock at line 16,486 and drains at that line
    // and at the end; the records are out of order, with squashes, Mc stages and arrows.
    let mut raw = Vec::new();
    Synth::new(20_000, 5).write_to(&mut raw);
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("synthetic.out");
    fs::write(&input, &raw).unwrap();
    for deps in [false, true] {
        let (report, _, view) = convert_checked(&input, deps);
        assert_eq!(
            report.diagnostics.total(),
            0,
            "{:?}",
            report.diagnostics.rules()
        );
        assert_eq!(view.insns.len(), 20_000);
        assert_drawn_like_konata("synthetic", &raw, &view, deps);
        if deps {
            assert!(view.arrows.len() > 5_000, "{}", view.arrows.len());
        }
    }
}

/// The peak resident memory of this process since the last reset, in KiB (Linux), after
/// resetting it if `reset`.
fn peak_rss_kib(reset: bool) -> Option<u64> {
    if reset {
        fs::write("/proc/self/clear_refs", "5").ok()?;
    }
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Converts `n` synthetic instructions, streamed through a zstd file, with `--check` (no
/// output kept), and returns the report and the peak memory growth in KiB.
fn stream_synthetic(n: u64) -> (Report, u64, Option<u64>) {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("big.out.zst");
    let file = fs::File::create(&input).unwrap();
    let mut encoder = zstd::stream::write::Encoder::new(file, 1).unwrap();
    let mut counting = Counting {
        inner: &mut encoder,
        bytes: 0,
    };
    Synth::new(n, 9).write_to(&mut counting);
    let text_bytes = counting.bytes;
    encoder.finish().unwrap();
    let before = peak_rss_kib(true);
    let mut options = Options::new(Destination::Check);
    options.gem5.deps = true;
    let report = convert(&input, &options).unwrap();
    let growth = before
        .zip(peak_rss_kib(false))
        .map(|(before, after)| after.saturating_sub(before));
    (report, text_bytes, growth)
}

struct Counting<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[test]
fn two_hundred_thousand_instructions_stream_in_bounded_memory() {
    let _heavy = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let (report, text_bytes, growth) = stream_synthetic(200_000);
    assert_eq!(report.summary.instructions, 200_000);
    assert_eq!(
        report.diagnostics.total(),
        0,
        "{:?}",
        report.diagnostics.rules()
    );
    eprintln!(
        "200k instructions, {} MB of text: peak memory grew by {:?} KiB",
        text_bytes >> 20,
        growth
    );
    if let Some(growth) = growth {
        // The window (16,384 records, about 2 KB each with their debug lines) and the
        // buffers, not the 80 MB of the trace (holding every record would take 400 MB).
        assert!(growth < 96 * 1024, "peak memory grew by {growth} KiB");
    }
}

#[test]
#[ignore = "five million instructions: minutes in a debug build"]
fn five_million_instructions_stream_in_bounded_memory() {
    let _heavy = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let (report, text_bytes, growth) = stream_synthetic(5_000_000);
    assert_eq!(report.summary.instructions, 5_000_000);
    assert_eq!(
        report.diagnostics.total(),
        0,
        "{:?}",
        report.diagnostics.rules()
    );
    eprintln!(
        "5M instructions, {} MB of text: peak memory grew by {:?} KiB",
        text_bytes >> 20,
        growth
    );
    if let Some(growth) = growth {
        // The same bound as for 200,000: the window, not the 2 GB of the trace.
        assert!(growth < 96 * 1024, "peak memory grew by {growth} KiB");
    }
}

#[test]
fn late_and_duplicate_records_are_reported_with_their_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("late.out");
    let record = |seq: u64, at: u64| {
        let t = |k: u64| (at + k) * 1000;
        format!(
            "O3PipeView:fetch:{}:0x10:0:{seq}: nop\nO3PipeView:decode:{}\n\
             O3PipeView:retire:{}:store:0\n",
            t(0),
            t(1),
            t(2)
        )
    };
    let mut text = String::new();
    for seq in 2..=6 {
        text.push_str(&record(seq, seq));
    }
    text.push_str(&record(1, 1)); // line 16: too late for a window of 2
    text.push_str(&record(6, 6)); // line 19: 6 again (written already)
    fs::write(&input, text).unwrap();
    let out = tmp.path().join("late.kanata");
    let mut options = gem5_options(&out, false);
    options.gem5.window = 2;
    let report = convert(&input, &options).unwrap();
    let lines = |rule| -> Vec<u64> {
        report.diagnostics.rules()[&rule]
            .examples
            .iter()
            .map(|e| e.line)
            .collect()
    };
    assert_eq!(lines(Rule::G1), vec![16]);
    assert_eq!(lines(Rule::G2), vec![19]);
    assert_eq!(report.summary.instructions, 6);
}

/// A model of Konata's gem5 loader (`gem5_o3_pipe_view_parser.ts`), from section 2 of the
/// spec, producing the same [`View`] the Kanata model produces.
mod konata_gem5 {
    use std::collections::{BTreeMap, HashMap};

    use kanata_tests::{
        Arrow, Dependency, Insn, RetireKind, RetireState, StageBox, StageLevel, View,
    };

    #[allow(unused_imports)]
    use super::residue;

    const BUFFERED_SIZE: usize = 16_384;

    #[derive(Clone, Debug, Default)]
    struct Stage {
        name: &'static str,
        start: f64,
        /// 0 while open (raw ticks are never 0 once set).
        end: f64,
        labels: String,
        widened: bool,
    }

    #[derive(Clone, Debug, Default)]
    struct Op {
        id: i64,
        gid: u64,
        tid: i64,
        explicit_tid: Option<i64>,
        line: usize,
        fetched: f64,
        retired_cycle: f64,
        bumped: bool,
        flush: bool,
        retired: bool,
        rid: i64,
        name: String,
        detail: String,
        stages: Vec<Stage>,
        last_stage: Option<usize>,
        level: u32,
        cons: f64,
        prod: f64,
        srcs: Vec<String>,
        dsts: Vec<String>,
        prods: Vec<(i64, f64)>,
        conses: Vec<(i64, f64)>,
    }

    #[derive(Default)]
    struct ExLog {
        lines: Vec<String>,
        tid: Option<i64>,
    }

    #[derive(Default)]
    struct Loader {
        line: usize,
        timer: i64,
        is_gem5: bool,
        current_seq: Option<u64>,
        current_tick: f64,
        parsing: BTreeMap<u64, Op>,
        reordered: BTreeMap<i64, Op>,
        reordered_last_id: i64,
        store: BTreeMap<i64, Op>,
        last_id: i64,
        last_rid: i64,
        last_gid: i64,
        last_not_flushed_id: i64,
        current_cycle: f64,
        ex: HashMap<u64, ExLog>,
        ex_last_gid: Option<u64>,
        deps: HashMap<String, i64>,
        levels: Vec<(String, u32)>,
        tpc: f64,
        cycle_begin: f64,
        gid_begin: i64,
    }

    /// What the loader draws, and what [`residue`](super::residue) needs to know about it.
    pub struct Model {
        pub view: View,
        /// Per instruction in row order: a flushed instruction that only fetched, which
        /// Konata drew one cycle longer.
        pub fetch_only_flush: Vec<bool>,
        /// Per instruction and lane-0 stage: a flushed zero-length stage Konata widened.
        pub widened: Vec<Vec<bool>>,
    }

    pub fn load(raw: &[u8]) -> Model {
        let text = String::from_utf8_lossy(raw);
        let mut lines: Vec<&str> = text.split('\n').collect();
        if lines.last() == Some(&"") {
            lines.pop();
        }
        let mut l = Loader {
            line: 1,
            timer: 100,
            reordered_last_id: -1,
            last_id: -1,
            last_rid: -1,
            last_gid: -1,
            last_not_flushed_id: -1,
            tpc: -1.0,
            cycle_begin: -1.0,
            gid_begin: -1,
            ..Loader::default()
        };
        for line in lines {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let args: Vec<&str> = line.split(':').collect();
            if args[0] == "O3PipeView" {
                l.is_gem5 = true;
                l.command(&args);
            } else {
                l.ex_log(line, &args);
            }
            l.line += 1;
            l.timer -= 1;
            if l.timer < 0 {
                l.timer = 16_384;
                if l.is_gem5 {
                    l.drain(false);
                }
            }
        }
        l.drain(true);
        l.view()
    }

    fn num(text: Option<&&str>) -> f64 {
        text.map(|t| t.trim())
            .filter(|t| !t.is_empty())
            .and_then(|t| t.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    }

    impl Loader {
        fn op(&mut self) -> &mut Op {
            let seq = self.current_seq.expect("a current op");
            self.parsing
                .get_mut(&seq)
                .expect("the current op is parsing")
        }

        fn command(&mut self, args: &[&str]) {
            let tick = num(args.get(2));
            match args[1] {
                "fetch" => {
                    let seq = num(args.get(5)) as u64;
                    let mut op = Op {
                        id: -1,
                        gid: seq,
                        line: self.line,
                        fetched: tick,
                        name: format!("{}: {}", args[3], args[6..].join(":")),
                        detail: format!("Fetched Tick: {tick}\nMicro PC: {}", args[4]),
                        cons: -1.0,
                        prod: -1.0,
                        ..Op::default()
                    };
                    self.current_seq = Some(seq);
                    self.current_tick = tick;
                    if tick != 0.0 {
                        self.start(&mut op, "F", tick);
                    }
                    self.parsing.insert(seq, op);
                }
                "thread" => {
                    let tid = num(args.get(3)) as i64;
                    self.op().explicit_tid = Some(tid);
                }
                "decode" | "rename" | "dispatch" | "issue" | "complete" => {
                    let name = match args[1] {
                        "decode" => "Dc",
                        "rename" => "Rn",
                        "dispatch" => "Ds",
                        "issue" => "Is",
                        _ => "Cm",
                    };
                    let seq = self.current_seq.unwrap();
                    let mut op = self.parsing.remove(&seq).unwrap();
                    self.consume(&mut op, Some(tick), tick);
                    if tick != 0.0 {
                        let mut t = tick;
                        if t < self.current_tick {
                            op.detail.push_str(&format!(
                                "\nOut-of-order {} Tick: {t} (normalized to {})",
                                args[1], self.current_tick
                            ));
                            t = self.current_tick;
                        }
                        close_last(&mut op, t);
                        self.start(&mut op, name, t);
                        if name == "Cm" {
                            op.cons = t;
                            op.prod = t;
                        }
                        self.current_tick = t;
                    }
                    self.parsing.insert(seq, op);
                }
                "retire" => {
                    let seq = self.current_seq.unwrap();
                    let mut op = self.parsing.remove(&seq).unwrap();
                    let cutoff = if tick == 0.0 { self.current_tick } else { tick };
                    self.consume(&mut op, None, cutoff);
                    let flush = tick == 0.0;
                    let at = if flush { self.current_tick } else { tick };
                    op.detail.push_str(&format!("\nRetired Tick: {tick}"));
                    let mut i = 3;
                    while args.get(i) == Some(&"store") {
                        op.detail
                            .push_str(&format!("\nStore Tick: {}", num(args.get(i + 1))));
                        i += 2;
                    }
                    op.retired_cycle = at;
                    for s in 0..op.stages.len() {
                        if op.stages[s].end == 0.0 {
                            op.stages[s].end = at;
                            if op.stages[s].start != at {
                                op.level += 1;
                            }
                        }
                    }
                    if !flush {
                        self.start(&mut op, "Rt", at);
                        let last = op.stages.len() - 1;
                        op.stages[last].end = at;
                    }
                    op.flush = flush;
                    op.retired = !flush;
                    op.name = op.name.replace("\\n", "\n");
                    op.detail = op.detail.replace("\\n", "\n");
                    for s in &mut op.stages {
                        s.labels = s.labels.replace("\\n", "\n");
                    }
                    self.parsing.insert(seq, op);
                }
                _ => {}
            }
        }

        fn start(&mut self, op: &mut Op, name: &'static str, tick: f64) {
            op.stages.push(Stage {
                name,
                start: tick,
                ..Stage::default()
            });
            op.last_stage = Some(op.stages.len() - 1);
            let level = op.level;
            match self.levels.iter_mut().find(|(n, _)| n == name) {
                Some(entry) => entry.1 = entry.1.min(level),
                None => self.levels.push((name.to_owned(), level)),
            }
        }

        fn ex_log(&mut self, line: &str, args: &[&str]) {
            let named = sn(line);
            if let Some(seq) = named {
                self.ex_last_gid = Some(seq);
            }
            let Some(seq) = self.ex_last_gid else { return };
            if (seq as i64) <= self.last_gid {
                return;
            }
            let first = args[0].trim_start();
            if first.starts_with(|c: char| c.is_ascii_digit()) {
                let entry = self.ex.entry(seq).or_default();
                entry.lines.push(line.to_owned());
                if named.is_some() {
                    if let Some(tid) = tid(line) {
                        entry.tid = Some(tid);
                    }
                }
            } else {
                self.ex_last_gid = None;
            }
        }

        fn consume(&mut self, op: &mut Op, range: Option<f64>, mc_cutoff: f64) {
            let Some(mut entry) = self.ex.remove(&op.gid) else {
                return;
            };
            while !entry.lines.is_empty() {
                let line = entry.lines[0].clone();
                let args: Vec<&str> = line.split(':').collect();
                let tick = num(args.first());
                if let Some(range) = range {
                    if tick >= range {
                        break;
                    }
                }
                let arg = |i: usize| args.get(i).copied().unwrap_or("");
                if arg(1) == " user" {
                    op.detail.push_str(&format!("\n {line}"));
                } else if arg(1) == " global" && arg(2) == " RegFile" {
                    op.detail.push_str(&format!("\n {}", arg(3)));
                } else if arg(1).contains(".memDep") && arg(2).contains(" Completed mem") {
                    op.detail.push_str(&format!("\n Memory Complete: {line}"));
                    if self.current_tick <= tick && tick < mc_cutoff {
                        close_last(op, tick);
                        self.start(op, "Mc", tick);
                        self.current_tick = tick;
                    }
                } else if arg(1).contains(".rename") {
                    for token in &args[2..] {
                        if !token.contains(" Renaming") && !token.contains("Looking") {
                            continue;
                        }
                        op.detail.push_str(&format!("\n {token}"));
                        if let Some((class, phys)) = capture_dst(token) {
                            op.dsts.push(format!("{class}{phys}"));
                        }
                        if let Some((phys, class)) = capture_src(token) {
                            if class != "invalid" {
                                op.srcs.push(format!("{class}{phys}"));
                            }
                        }
                    }
                } else if arg(1).contains(".iew.lsq.thread")
                    && (arg(2).contains(" Read called") || arg(2).contains("Doing write"))
                {
                    let end = args.len().min(7);
                    op.detail
                        .push_str(&format!("\n {}", args[2.min(end)..end].join(":")));
                }
                if let Some(s) = op.last_stage {
                    let labels = &mut op.stages[s].labels;
                    if !labels.is_empty() {
                        labels.push('\n');
                    }
                    labels.push_str(&line);
                }
                entry.lines.remove(0);
            }
            self.ex.insert(op.gid, entry);
        }

        fn detect(&mut self, force: bool) {
            if self.tpc != -1.0 {
                return;
            }
            let mut ticks: Vec<f64> = Vec::new();
            let mut min_seq: Option<u64> = None;
            for (&seq, op) in &self.parsing {
                if !op.flush && !op.retired {
                    break;
                }
                ticks.push(op.fetched);
                ticks.push(op.retired_cycle);
                for s in &op.stages {
                    ticks.push(s.start);
                    ticks.push(s.end);
                }
                min_seq = Some(min_seq.map_or(seq, |m: u64| m.min(seq)));
            }
            ticks.sort_by(f64::total_cmp);
            ticks.dedup();
            if !force && ticks.len() < 1024 {
                return;
            }
            let Some(min_seq) = min_seq else { return };
            if ticks.len() < 2 {
                return;
            }
            let min_delta = ticks
                .windows(2)
                .map(|w| w[1] - w[0])
                .fold(f64::INFINITY, f64::min);
            self.tpc = min_delta;
            self.cycle_begin = ticks[0] / min_delta;
            self.gid_begin = min_seq as i64;
        }

        fn drain(&mut self, force: bool) {
            self.detect(force);
            if self.tpc == -1.0 {
                return;
            }
            let mut count = self.parsing.len() as i64 - BUFFERED_SIZE as i64;
            if !force && count < 0 {
                return;
            }
            let seqs: Vec<u64> = self.parsing.keys().copied().collect();
            for seq in seqs {
                let op = &self.parsing[&seq];
                if !force && !op.flush && !op.retired {
                    continue;
                }
                if !force && count <= 0 {
                    break;
                }
                count -= 1;
                let mut op = self.parsing.remove(&seq).unwrap();
                self.to_cycles(&mut op);
                let id = seq as i64 - self.gid_begin;
                self.reordered.insert(id, op);
                self.reordered_last_id = self.reordered_last_id.max(id);
            }
            for id in self.last_id + 1..=self.reordered_last_id {
                let Some(mut op) = self.reordered.remove(&id) else {
                    continue;
                };
                op.id = id;
                self.last_id = id;
                self.last_gid = op.gid as i64;
                self.current_cycle = self.current_cycle.max(op.retired_cycle);
                if !op.flush {
                    op.rid = self.last_rid + 1;
                    self.last_rid = op.rid;
                    self.last_not_flushed_id = id;
                } else {
                    op.rid = self.last_rid + id - self.last_not_flushed_id;
                }
                let entry = self.ex.remove(&op.gid);
                op.tid = op.explicit_tid.or(entry.and_then(|e| e.tid)).unwrap_or(0);
                for src in op.srcs.clone() {
                    if let Some(&producer) = self.deps.get(&src) {
                        let prod = self.store[&producer].prod;
                        if prod < op.cons {
                            op.prods.push((producer, op.prod));
                            let cons = op.cons;
                            self.store
                                .get_mut(&producer)
                                .unwrap()
                                .conses
                                .push((id, cons));
                        }
                    }
                }
                for dst in op.dsts.clone() {
                    self.deps.insert(dst, id);
                }
                self.store.insert(id, op);
            }
        }

        fn to_cycles(&self, op: &mut Op) {
            let c = |t: f64| t / self.tpc - self.cycle_begin;
            op.fetched = c(op.fetched);
            op.retired_cycle = c(op.retired_cycle);
            if op.flush && op.fetched == op.retired_cycle {
                op.retired_cycle += 1.0;
                op.bumped = true;
            }
            if op.prod != -1.0 {
                op.prod = c(op.prod);
            }
            if op.cons != -1.0 {
                op.cons = c(op.cons);
            }
            for s in &mut op.stages {
                s.start = c(s.start);
                s.end = c(s.end);
                if (op.flush || s.name == "Rt") && s.start == s.end {
                    s.end += 1.0;
                    s.widened = op.flush;
                }
            }
        }

        fn view(self) -> Model {
            let mut insns = Vec::new();
            let mut fetch_only_flush = Vec::new();
            let mut widened = Vec::new();
            let mut arrows = Vec::new();
            for op in self.store.values() {
                if op.cons != -1.0 {
                    for &(producer, _) in &op.prods {
                        let p = &self.store[&producer];
                        if p.prod != -1.0 {
                            arrows.push(Arrow {
                                consumer: op.id,
                                producer,
                                kind: 0,
                                from_cycle: p.prod as i64,
                                to_cycle: op.cons as i64,
                            });
                        }
                    }
                }
                let retired_cycle = op.retired_cycle as i64;
                fetch_only_flush.push(op.bumped);
                widened.push(op.stages.iter().map(|s| s.widened).collect());
                let stages = op
                    .stages
                    .iter()
                    .map(|s| StageBox {
                        name: s.name.to_owned(),
                        start: s.start as i64,
                        end: s.end as i64,
                        raw_end: s.end as i64,
                        notes: s.labels.clone(),
                    })
                    .collect();
                insns.push(Insn {
                    file_id: op.id,
                    sim_id: op.gid as i64,
                    thread: op.tid,
                    line: op.line,
                    fetched_cycle: op.fetched as i64,
                    retired_cycle,
                    retired: Some(RetireState {
                        kind: if op.flush {
                            RetireKind::Flushed
                        } else {
                            RetireKind::Retired
                        },
                        retire_id: op.rid,
                        cycle: retired_cycle,
                    }),
                    label_name: op.name.clone(),
                    label_detail: op.detail.clone(),
                    lanes: BTreeMap::from([("0".to_owned(), stages)]),
                    lane_levels: BTreeMap::from([("0".to_owned(), op.level)]),
                    producers: op
                        .prods
                        .iter()
                        .map(|&(other, cycle)| Dependency {
                            other,
                            kind: 0,
                            cycle: cycle as i64,
                        })
                        .collect(),
                    consumers: op
                        .conses
                        .iter()
                        .map(|&(other, cycle)| Dependency {
                            other,
                            kind: 0,
                            cycle: cycle as i64,
                        })
                        .collect(),
                    cons_cycle: (op.cons != -1.0).then_some(op.cons as i64),
                    prod_cycle: (op.prod != -1.0).then_some(op.prod as i64),
                });
            }
            let stage_levels = BTreeMap::from([(
                "0".to_owned(),
                self.levels
                    .iter()
                    .enumerate()
                    .map(|(i, (name, level))| StageLevel {
                        name: name.clone(),
                        appearance: *level,
                        unique: i as u32,
                    })
                    .collect(),
            )]);
            let view = View {
                last_cycle: self.current_cycle as i64,
                op_count: insns.len(),
                last_id: self.last_id,
                last_rid: self.last_rid,
                insns,
                warnings: Vec::new(),
                arrows,
                lane_names: vec!["0".to_owned()],
                stage_levels,
                undrawn: Vec::new(),
                inexact_lines: Vec::new(),
            };
            Model {
                view,
                fetch_only_flush,
                widened,
            }
        }
    }

    fn close_last(op: &mut Op, tick: f64) {
        if let Some(s) = op.last_stage {
            op.stages[s].end = tick;
            if op.stages[s].start != tick {
                op.level += 1;
            }
        }
    }

    fn digits(s: &str) -> usize {
        s.bytes().take_while(u8::is_ascii_digit).count()
    }

    fn sn(line: &str) -> Option<u64> {
        let mut rest = line;
        while let Some(at) = rest.find("sn:") {
            let after = &rest[at + 3..];
            let n = digits(after);
            if n > 0 {
                return after[..n].parse().ok();
            }
            rest = &rest[at + 1..];
        }
        None
    }

    fn tid(line: &str) -> Option<i64> {
        let at = line.find("[tid:")?;
        let after = &line[at + 5..];
        let n = digits(after);
        (n > 0 && after[n..].starts_with(']')).then(|| after[..n].parse().ok())?
    }

    /// `/\(([^()]+)\) to physical reg (\d+) \(\d+\)/`
    fn capture_dst(token: &str) -> Option<(String, String)> {
        let at = token.find(") to physical reg ")?;
        let open = token[..at].rfind('(')?;
        let class = &token[open + 1..at];
        if class.is_empty() || class.contains(')') {
            return None;
        }
        let after = &token[at + ") to physical reg ".len()..];
        let n = digits(after);
        let rest = after[n..].strip_prefix(" (")?;
        let m = digits(rest);
        (n > 0 && m > 0 && rest[m..].starts_with(')'))
            .then(|| (class.to_owned(), after[..n].to_owned()))
    }

    /// `/got phys reg (\d+) \(([^()]+)\)/`
    fn capture_src(token: &str) -> Option<(String, String)> {
        let at = token.find("got phys reg ")?;
        let after = &token[at + "got phys reg ".len()..];
        let n = digits(after);
        let rest = after[n..].strip_prefix(" (")?;
        let close = rest.find(')')?;
        let class = &rest[..close];
        (n > 0 && !class.is_empty() && !class.contains('('))
            .then(|| (after[..n].to_owned(), class.to_owned()))
    }
}
