//! The analysis of `--stats` (`docs/analysis.md`): Konata's statistics against Konata's own
//! algorithm (the test-only reference `kanata_tests::konata_stats` over the model of what
//! Konata reads) on the corpus and on generated traces, hot spots on traces whose answer is
//! known, and the JSON fields pinned.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};

use kanata_pp::analysis::{Analysis, AnalysisOptions, Analyzer, StageRange};
use kanata_pp::{convert, Destination, Options, StatsSink};
use kanata_tests::konata_model;
use kanata_tests::konata_stats::konata_stats;
use kanata_tests::konata_topdown;
use kanata_writer::{InsnId as Insn, LabelKind, Lane, Writer, WriterBuilder};

/// The corpus, when this checkout has it beside the workspace.
fn corpus() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus");
    dir.is_dir().then_some(dir)
}

/// Whether two of Konata's numbers are the same (NaN is NaN).
fn same(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// Asserts that `analysis.konata` is what Konata computes for `text`.
#[track_caller]
fn check_against_konata(analysis: &Analysis, text: &[u8], what: &str) {
    let view = konata_model::load(text);
    let (name, expected) = konata_stats(&view);
    let ours = &analysis.konata;
    assert_eq!(ours.classifier, name, "{what}: classifier");
    for ((field, value), (konata_field, konata_value)) in ours.fields().iter().zip(&expected) {
        assert_eq!(field, konata_field, "{what}: field order");
        assert!(
            same(*value, *konata_value),
            "{what}: {field}: kanata-pp {value}, Konata {konata_value}"
        );
    }
}

/// Runs `text` through a sink with the analysis.
fn analyse(text: &[u8], options: AnalysisOptions) -> Analysis {
    let mut sink = StatsSink::with_analysis(Vec::new(), options);
    sink.write_all(text).unwrap();
    let (_, stats) = sink.into_parts();
    stats.analysis.unwrap()
}

/// Konata's numbers on every trace of the corpus: converted by kanata-pp, the `"konata"`
/// object of `--stats` is what Konata's statistics dialog shows for the converted file
/// (which Konata draws as the input, the quirks repaired: Q1–Q20).
#[test]
fn konata_statistics_match_konata_on_the_corpus() {
    let Some(corpus) = corpus() else {
        eprintln!("no corpus: skipped");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    let mut x86 = 0;
    let mut topdown = 0;
    for sub in ["kanata", "gem5", "rsd"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(corpus.join(sub))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| !p.ends_with("SOURCES.md"))
            .collect();
        files.sort();
        for input in files {
            let out = dir.path().join("out.kanata");
            let mut options = Options::new(Destination::Path(out.clone()));
            options.stats = true;
            let Ok(report) = convert(&input, &options) else {
                continue;
            };
            let text = std::fs::read(&out).unwrap();
            let analysis = report.stats.unwrap().analysis.unwrap();
            check_against_konata(&analysis, &text, &input.display().to_string());
            topdown += usize::from(check_topdown_against_konata(
                &analysis,
                &text,
                &input.display().to_string(),
            ));
            x86 += usize::from(analysis.konata.classifier == "X86_Gem5_Stats");
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked} corpus traces checked");
    assert!(topdown >= 8, "{topdown} top-down breakdowns compared");
    assert_eq!(x86, 0, "the corpus has no x86-gem5 trace");
}

/// Asserts that `analysis.topdown` is Konata's top-down breakdown of `text` when Konata
/// finds its allocation stage in lane 0; returns whether it compared.
#[track_caller]
fn check_topdown_against_konata(analysis: &Analysis, text: &[u8], what: &str) -> bool {
    let view = konata_model::load(text);
    let (from, to) = analysis
        .topdown
        .as_ref()
        .map_or((0, u64::MAX), |t| (t.from_cycle, t.to_cycle));
    let Some(k) = konata_topdown::top_down_in(&view, from, to) else {
        return false;
    };
    if k.lane != "0" {
        return false;
    }
    let t = analysis
        .topdown
        .as_ref()
        .unwrap_or_else(|| panic!("{what}: no top-down: {:?}", analysis.topdown_note));
    assert_eq!(
        (
            t.allocation_stage.as_str(),
            t.allocation_width,
            t.execution_stage.as_deref()
        ),
        (
            k.allocation_stage.as_str(),
            k.width,
            Some(k.execution_stage.as_str())
        ),
        "{what}: structure"
    );
    assert_eq!(
        [
            t.retiring,
            t.squashed,
            t.recovery_bubbles,
            t.frontend_bound,
            t.backend_bound
        ],
        k.counts[..5],
        "{what}: slots"
    );
    assert_eq!(k.counts[5], 0, "{what}: no unresolved slot once loaded");
    assert_eq!(
        (t.cycles, t.slots),
        (k.cycles, k.cycles * u64::from(k.width)),
        "{what}"
    );
    assert_eq!(
        t.min_recovery_cycles, k.min_recovery,
        "{what}: recovery bound"
    );
    assert_eq!(
        t.recovery_windows as i64, k.recovery_windows,
        "{what}: windows"
    );
    true
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

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const RISCV: &[&str] = &[
    "addi a0, a0, 1",
    "beq a0, a1, 8",
    "bgeu a2, a3, -16",
    "jal ra, begin",
    "jalr x0, 0(ra)",
    "ret",
    "ecall",
    "sd a0, 8(sp)",
    "sw a1, 0(a2)",
    "lw a1, 0(a2)",
    "sub a5, s7, a5",
    "csrrs t0, mstatus, zero",
];

const X86: &[&str] = &[
    "MOV_R_I : limm rax, 0x3c",
    "ADD_R_R : add rdx, t1, t2",
    "JNZ_I : wrip , t1, t2",
    "JMP_I : wrip , t1, t2",
    "CALL_NEAR_I : st t1, SS:[rsp]",
    "CALL_NEAR_I : wrip , t7, t1",
    "RET_NEAR : wrip , t1, t2",
    "MOV_M_R : st rbx, DS:[rsp + 0x8]",
];

/// A generated out-of-order trace: two threads, instructions that end out of order, runs
/// of flushes after some of them, stalls, some instructions still in flight at the end;
/// labels from `pool` with an address, and from id `detect` on a label with two x86
/// registers (Konata's x86-gem5 detection) when given.
fn generated(seed: u64, n: u64, pool: &[&str], detect: Option<u64>) -> Vec<u8> {
    let mut rng = Rng(seed | 1);
    let mut w = Writer::new(Vec::new());
    let stages = [
        w.stage("F").unwrap(),
        w.stage("X").unwrap(),
        w.stage("Cm").unwrap(),
    ];
    // (insn, age at which it ends, flushed, stage index)
    let mut live: Vec<(Insn, u64, bool, usize)> = Vec::new();
    let mut flushing = 0;
    let mut begun = 0;
    for id in 0..n {
        let thread = (rng.below(3) == 0) as u32;
        let insn = w.begin(id, thread).unwrap();
        let label = if detect.is_some_and(|d| id >= d) {
            "ADD_R_R : add eax, eax, ebx".to_owned()
        } else {
            format!(
                "0x{:x}: {}",
                0x1000 + 4 * rng.below(64),
                pool[rng.below(pool.len() as u64) as usize]
            )
        };
        w.label(insn, LabelKind::Name, &label).unwrap();
        w.enter(insn, Lane::MAIN, stages[0]).unwrap();
        let flushed = if flushing > 0 {
            flushing -= 1;
            true
        } else {
            if rng.below(9) == 0 {
                flushing = 1 + rng.below(4);
            }
            false
        };
        live.push((insn, 1 + rng.below(12), flushed, 0));
        begun += 1;
        // At most two instructions begin in a cycle.
        if begun == 2 || rng.below(2) == 0 {
            begun = 0;
            w.advance(1).unwrap();
            let mut keep = Vec::new();
            for (insn, left, flushed, stage) in live.drain(..) {
                if left <= 1 && rng.below(50) > 0 {
                    if flushed {
                        w.flush(insn).unwrap();
                    } else {
                        w.retire(insn).unwrap();
                    }
                    continue;
                }
                let mut stage = stage;
                if stage < 2 && rng.below(3) == 0 {
                    stage += 1;
                    w.enter(insn, Lane::MAIN, stages[stage]).unwrap();
                    if rng.below(5) == 0 {
                        w.stall_begin(insn).unwrap();
                    }
                }
                keep.push((insn, left.saturating_sub(1), flushed, stage));
            }
            live = keep;
        }
    }
    w.advance(3).unwrap();
    w.finish().unwrap().output
}

/// Konata's numbers on generated traces, generic ones and x86-gem5 ones (Q15: instructions
/// still in flight at the end count as neither retired nor flushed, as in Konata).
#[test]
fn konata_statistics_match_konata_on_generated_traces() {
    for seed in 1..=12 {
        let text = generated(seed, 3000, RISCV, None);
        let analysis = analyse(&text, AnalysisOptions::default());
        let k = &analysis.konata;
        assert!(
            k.num_br_pred_miss > 0.0
                && k.num_jump_pred_miss > 0.0
                && k.num_speculative_mem_miss > 0.0
        );
        check_against_konata(&analysis, &text, "riscv");
        let text = generated(seed, 1500, X86, Some(0));
        let analysis = analyse(&text, AnalysisOptions::default());
        assert_eq!(analysis.konata.classifier, "X86_Gem5_Stats");
        check_against_konata(&analysis, &text, "x86");
    }
    // The x86-gem5 detection must come by op id 1,000: at 1,000 it does, at 1,001 it is
    // too late and Konata counts with the generic classifier.
    for (detect, name) in [
        (999, "X86_Gem5_Stats"),
        (1000, "X86_Gem5_Stats"),
        (1001, "GenericStats"),
    ] {
        let text = generated(7, 1300, X86, Some(detect));
        let analysis = analyse(&text, AnalysisOptions::default());
        assert_eq!(analysis.konata.classifier, name, "detected at {detect}");
        check_against_konata(&analysis, &text, "x86 detection");
    }
}

/// Past the warm-up the breakdown streams, and still gives Konata's numbers when the trace
/// keeps the structure of its start.
#[test]
fn topdown_streams_past_the_warm_up() {
    let n = kanata_pp::analysis::topdown::WARMUP as u64 + 8000;
    let text = generated(5, n, RISCV, None);
    let analysis = analyse(&text, AnalysisOptions::default());
    assert!(check_topdown_against_konata(&analysis, &text, "long"));
    let t = analysis.topdown.unwrap();
    // Given instead of found: the same stage and width give the same numbers; a width of 1
    // leaves allocations without a slot.
    let given = |stage: &str, width: Option<u32>| {
        analyse(
            &text,
            AnalysisOptions {
                topdown: kanata_pp::analysis::topdown::TopDownOptions {
                    alloc_stage: Some(stage.to_owned()),
                    alloc_width: width,
                    ..Default::default()
                },
                ..AnalysisOptions::default()
            },
        )
    };
    let same = given(&t.allocation_stage, Some(t.allocation_width))
        .topdown
        .unwrap();
    assert!(!same.detected);
    assert_eq!(
        (same.retiring, same.frontend_bound),
        (t.retiring, t.frontend_bound)
    );
    let narrow = given(&t.allocation_stage, Some(1)).topdown.unwrap();
    assert_eq!(narrow.slots, narrow.cycles);
    assert!(narrow.overflow > 0);
    let none = given("Nope", None);
    assert!(none.topdown.is_none());
    assert_eq!(
        none.topdown_note.as_deref(),
        Some("--alloc-stage Nope: the trace has no stage Nope in lane 0")
    );
}

/// The streaming path on real out-of-order traces: with a warm-up of 1,000 instructions,
/// RSD's traces (recovery bubbles, backend-bound cycles) still give Konata's numbers.
#[test]
fn topdown_streams_on_the_corpus() {
    let Some(corpus) = corpus() else {
        eprintln!("no corpus: skipped");
        return;
    };
    for name in ["gen-seed2-wrap.raw.log", "gen-seed1.raw.log"] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.kanata");
        let mut options = Options::new(Destination::Path(out.clone()));
        options.stats = true;
        options.analysis.topdown.warmup = 300;
        let report = convert(&corpus.join("rsd").join(name), &options).unwrap();
        let analysis = report.stats.unwrap().analysis.unwrap();
        let text = std::fs::read(&out).unwrap();
        assert!(check_topdown_against_konata(&analysis, &text, name));
        let t = analysis.topdown.unwrap();
        assert!(t.recovery_bubbles > 0 && t.backend_bound > 0, "{t:?}");
    }
}

/// The breakdown counts from the cycle the first instruction begins to the last: a window's
/// (whose cycles keep their numbers) is its own, not diluted by the cycles before it, and is
/// the breakdown of the window's file; Konata's breakdown of that file over the same range
/// is the same.
#[test]
fn topdown_of_a_window_counts_its_cycles() {
    let Some(corpus) = corpus() else {
        eprintln!("no corpus: skipped");
        return;
    };
    let input = corpus.join("rsd/gen-seed2-wrap.raw.log");
    let dir = tempfile::tempdir().unwrap();
    for window in [&["--cycles", "300..900"][..], &["--insns", "500..1500"][..]] {
        let mut args = vec!["--stats", "--report", "json", "-o", "w.kanata"];
        args.extend_from_slice(window);
        args.push(input.to_str().unwrap());
        let run = common::run_in(dir.path(), &args, None);
        run.assert_code(0);
        let line = String::from_utf8(run.stdout).unwrap();
        let v: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
        let t = &v["stats"]["topdown"];
        let (from, to) = (
            t["from_cycle"].as_u64().unwrap(),
            t["to_cycle"].as_u64().unwrap(),
        );
        let text = std::fs::read(dir.path().join("w.kanata")).unwrap();
        let view = konata_model::load(&text);
        assert_eq!(from, view.insns[0].fetched_cycle as u64, "{window:?}");
        assert!(from > 250, "{window:?}: {from}");
        assert_eq!(to, view.last_cycle as u64);
        let k = konata_topdown::top_down_in(&view, from, to).expect("Konata's breakdown");
        assert_eq!(k.lane, "0");
        let ours: Vec<u64> = [
            "retiring",
            "squashed",
            "recovery_bubbles",
            "frontend_bound",
            "backend_bound",
        ]
        .iter()
        .map(|f| t[*f].as_u64().unwrap())
        .collect();
        assert_eq!(ours, k.counts[..5], "{window:?}");
        assert_eq!(t["cycles"].as_u64().unwrap(), to - from);
        assert_eq!(
            t["slots"].as_u64().unwrap(),
            (to - from) * t["allocation_width"].as_u64().unwrap()
        );
    }
}

/// The same numbers whatever the chunks the text arrives in, and through the compact form.
#[test]
fn analysis_does_not_depend_on_chunks() {
    let text = generated(3, 2000, RISCV, None);
    let options = AnalysisOptions {
        latency: Some("F..Cm".parse().unwrap()),
        ..AnalysisOptions::default()
    };
    let whole = analyse(&text, options.clone());
    for size in [1, 7, 4096] {
        let mut sink = StatsSink::with_analysis(Vec::new(), options.clone());
        for chunk in text.chunks(size) {
            sink.write_all(chunk).unwrap();
        }
        let (_, stats) = sink.into_parts();
        let analysis = stats.analysis.unwrap();
        assert_eq!(
            format!("{:?}", analysis),
            format!("{whole:?}"),
            "chunk size {size}"
        );
    }
}

/// The sink reads its text once, for its statistics and the analysis together; a lone
/// [`Analyzer`] parses each line itself. On canonical text both give the same analysis:
/// generated traces (generic and x86-gem5, a latency range) and the converted corpus.
#[test]
fn the_sink_and_a_lone_analyzer_agree() {
    let options = AnalysisOptions {
        latency: Some("F..Cm".parse().unwrap()),
        ..AnalysisOptions::default()
    };
    let mut traces = vec![
        generated(5, 3000, RISCV, None),
        generated(6, 1500, X86, Some(0)),
        generated(7, 1300, X86, Some(1001)),
    ];
    let dir = tempfile::tempdir().unwrap();
    if let Some(corpus) = corpus() {
        for sub in ["kanata", "gem5", "rsd"] {
            let mut files: Vec<PathBuf> = std::fs::read_dir(corpus.join(sub))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| !p.ends_with("SOURCES.md"))
                .collect();
            files.sort();
            for input in files {
                let out = dir.path().join("out.kanata");
                if convert(&input, &Options::new(Destination::Path(out.clone()))).is_ok() {
                    traces.push(std::fs::read(&out).unwrap());
                }
            }
        }
    }
    for text in &traces {
        let mut analyzer = Analyzer::new(options.clone());
        for line in text.strip_suffix(b"\n").unwrap().split(|&b| b == b'\n') {
            analyzer.line(line);
        }
        assert_eq!(analyzer.ignored_lines(), 0);
        assert_eq!(
            format!("{:?}", analyse(text, options.clone())),
            format!("{:?}", analyzer.snapshot())
        );
    }
    assert!(traces.len() > 3 || corpus().is_none());
}

/// Begins an instruction of a thread with a label.
type Begin<'a> = dyn FnMut(&mut Writer<Vec<u8>>, u32, &str) -> Insn + 'a;

/// A trace whose hot spots are known: in thread 0 the branch at 0x100 is followed by runs of
/// 3 flushed instructions five times, the one at 0x200 by runs of 2 twice; in thread 1 (its
/// instructions interleaved with thread 0's) the jump at 0x900 by one run of 4. The load at
/// 0x300 stalls 7 cycles in lane 1 four times, the one at 0x304 once for 2; the store at
/// 0x400 takes 10 cycles from X to the end of Cm three times.
fn known_trace() -> Vec<u8> {
    let mut w = WriterBuilder::new()
        .start_cycle(100)
        .from_writer(Vec::new())
        .unwrap();
    let f = w.stage("F").unwrap();
    let x = w.stage("X").unwrap();
    let cm = w.stage("Cm").unwrap();
    let mut id = 0u64;
    let mut begin = |w: &mut Writer<Vec<u8>>, thread: u32, label: &str| {
        let insn = w.begin(id, thread).unwrap();
        id += 1;
        w.label(insn, LabelKind::Name, label).unwrap();
        w.enter(insn, Lane::MAIN, f).unwrap();
        insn
    };
    let run =
        |w: &mut Writer<Vec<u8>>, begin: &mut Begin, thread: u32, cause: &str, flushed: usize| {
            let head = begin(w, thread, cause);
            // A thread-1 instruction between the cause and its flushed ones: attribution is
            // per thread.
            let other = begin(w, 1 - thread, "0x7000: addi a0, a0, 1");
            let shadow: Vec<Insn> = (0..flushed)
                .map(|k| {
                    begin(
                        w,
                        thread,
                        &format!("0x{:x}: addi a1, a1, 1", 0x5000 + 4 * k),
                    )
                })
                .collect();
            w.advance(1).unwrap();
            w.retire(head).unwrap();
            w.retire(other).unwrap();
            for insn in shadow {
                w.flush(insn).unwrap();
            }
        };
    for _ in 0..5 {
        run(&mut w, &mut begin, 0, "0x100: beq a0, a1, 8", 3);
    }
    for _ in 0..2 {
        run(&mut w, &mut begin, 0, "0x200: bne a0, a1, 8", 2);
    }
    run(&mut w, &mut begin, 1, "0x900: jal ra, 0x40", 4);
    for stall in [7, 7, 7, 7, 2] {
        let pc = if stall == 7 {
            "0x300: lw a0, 0(a1)"
        } else {
            "0x304: lw a0, 4(a1)"
        };
        let insn = begin(&mut w, 0, pc);
        w.stall_begin(insn).unwrap();
        w.advance(stall).unwrap();
        w.stall_end(insn).unwrap();
        w.advance(1).unwrap();
        w.retire(insn).unwrap();
    }
    for _ in 0..3 {
        let insn = begin(&mut w, 0, "0x400: sd a0, 0(sp)");
        w.advance(2).unwrap();
        w.enter(insn, Lane::MAIN, x).unwrap();
        w.advance(4).unwrap();
        w.enter(insn, Lane::MAIN, cm).unwrap();
        w.advance(6).unwrap();
        w.retire(insn).unwrap();
    }
    w.advance(1).unwrap();
    w.finish().unwrap().output
}

#[test]
fn hot_spots_of_a_known_trace() {
    let text = known_trace();
    let options = AnalysisOptions {
        top: 3,
        latency: Some(StageRange {
            from: "X".into(),
            to: "Cm".into(),
        }),
        ..AnalysisOptions::default()
    };
    let analysis = analyse(&text, options);
    let h = &analysis.hotspots;
    assert!(h.exact);
    assert_eq!(h.unattributed_flushes, 0);
    let flushes: Vec<_> = h
        .flushes
        .iter()
        .map(|s| {
            (
                s.pc.as_deref().unwrap(),
                s.flushes,
                s.flushed_insns,
                s.longest,
                s.error,
            )
        })
        .collect();
    assert_eq!(
        flushes,
        [
            ("0x100", 5, 15, 3, 0),
            ("0x200", 2, 4, 2, 0),
            ("0x900", 1, 4, 4, 0)
        ]
    );
    assert_eq!(h.flushes[0].label, "0x100: beq a0, a1, 8");
    let stalls: Vec<_> = h
        .stalls
        .iter()
        .map(|s| (s.pc.as_deref().unwrap(), s.cycles, s.insns, s.max))
        .collect();
    assert_eq!(stalls, [("0x300", 28, 4, 7), ("0x304", 2, 1, 2)]);
    let top = &h.latency[0];
    assert_eq!(
        (top.pc.as_deref(), top.cycles, top.insns, top.mean, top.max),
        (Some("0x400"), 30, 3, 10.0, 10)
    );
    // Per thread: thread 1's run belongs to its jump, not to thread 0's instructions.
    assert_eq!(h.threads.len(), 2);
    let t1 = &h.threads[1];
    assert_eq!(t1.thread, 1);
    assert_eq!(t1.flushes.len(), 1);
    assert_eq!(t1.flushes[0].pc.as_deref(), Some("0x900"));
    assert_eq!(h.threads[0].flushes.len(), 2);
    // Konata attributes by op id across threads: every run follows the other thread's
    // `addi`, so Konata sees no misprediction; the classified counts see all eight.
    assert_eq!(analysis.konata.num_jump_pred_miss, 0.0);
    assert_eq!(analysis.konata.num_br_pred_miss, 0.0);
    assert_eq!(analysis.classified.num_jump_pred_miss, 1.0);
    assert_eq!(analysis.classified.num_br_pred_miss, 7.0);
    check_against_konata(&analysis, &text, "known");
}

/// With fewer keys kept than the trace has addresses, the heavy address is still found and
/// the result says its counts are bounds.
#[test]
fn hot_spots_stay_bounded() {
    let mut w = Writer::new(Vec::new());
    for i in 0..5000u64 {
        let pc = if i % 10 == 0 { 0x100 } else { 0x10000 + 4 * i };
        let head = w.begin(2 * i, 0).unwrap();
        w.label(head, LabelKind::Name, &format!("0x{pc:x}: beq a0, a1, 8"))
            .unwrap();
        let shadow = w.begin(2 * i + 1, 0).unwrap();
        w.advance(1).unwrap();
        w.retire(head).unwrap();
        w.flush(shadow).unwrap();
    }
    let text = w.finish().unwrap().output;
    let analysis = analyse(
        &text,
        AnalysisOptions {
            top: 1,
            capacity: 64,
            ..AnalysisOptions::default()
        },
    );
    let h = &analysis.hotspots;
    assert!(!h.exact);
    assert_eq!(h.flushes[0].pc.as_deref(), Some("0x100"));
    let spot = &h.flushes[0];
    assert!(spot.flushes >= 500 && spot.flushes - spot.error <= 500);
}

/// The JSON fields of `--stats --report json`, pinned.
#[test]
fn json_fields_are_pinned() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("known.kanata"), known_trace()).unwrap();
    let run = common::run_in(
        dir.path(),
        &[
            "--stats",
            "--report",
            "json",
            "--top",
            "2",
            "--latency",
            "X..Cm",
            "known.kanata",
        ],
        None,
    );
    run.assert_code(0);
    let out = String::from_utf8(run.stdout).unwrap();
    let line = out.lines().next().unwrap();
    // 47 instructions, retire ids 0..=23, 80 cycles: Konata's base values are 46, 23, 80
    // and its IPC 23 / 80; its `rateSpeculativeMemMiss` is 0 / 0 (NaN): null.
    let konata = r#""konata":{"classifier":"GenericStats","numFetchedOps":46,"numCommittedOps":23,"numCycles":80,"numFlush":8,"numFlushedOps":23,"numBrFlushedOps":0,"numJumpFlushedOps":0,"numSpeculativeMemFlushedOps":0,"numFetchedBr":7,"numRetiredBr":7,"numBrPredMiss":0,"rateBrPredMiss":0,"mpkiBrPred":0,"numFetchedJump":1,"numRetiredJump":1,"numJumpPredMiss":0,"rateJumpPredMiss":0,"mpkiJumpPred":0,"numFetchedStore":0,"numRetiredStore":0,"numSpeculativeMemMiss":0,"rateSpeculativeMemMiss":null,"mpkiSpeculativeMemMiss":0,"ipc":0.2875}"#;
    assert!(line.contains(konata), "{line}");
    let classified = r#""classified":{"classifier":"mnemonic","numFetchedOps":47,"numCommittedOps":24,"numCycles":80,"numFlush":8,"numFlushedOps":23,"numBrFlushedOps":19,"numJumpFlushedOps":4,"numSpeculativeMemFlushedOps":0,"numFetchedBr":7,"numRetiredBr":7,"numBrPredMiss":7,"rateBrPredMiss":1,"mpkiBrPred":291.6666666666667,"numFetchedJump":1,"numRetiredJump":1,"numJumpPredMiss":1,"rateJumpPredMiss":1,"mpkiJumpPred":41.666666666666664,"numFetchedStore":3,"numRetiredStore":3,"numSpeculativeMemMiss":0,"rateSpeculativeMemMiss":0,"mpkiSpeculativeMemMiss":0,"ipc":0.3}"#;
    assert!(line.contains(classified), "{line}");
    let hotspots = r#""hotspots":{"top":2,"capacity":4096,"exact":true,"latency_stages":{"from":"X","to":"Cm"},"unattributed_flushes":0,"flushes":[{"pc":"0x100","label":"0x100: beq a0, a1, 8","flushes":5,"flushed_insns":15,"longest":3,"error":0},{"pc":"0x200","label":"0x200: bne a0, a1, 8","flushes":2,"flushed_insns":4,"longest":2,"error":0}],"stalls":[{"pc":"0x300","label":"0x300: lw a0, 0(a1)","cycles":28,"insns":4,"mean":7,"max":7,"error":0},{"pc":"0x304","label":"0x304: lw a0, 4(a1)","cycles":2,"insns":1,"mean":2,"max":2,"error":0}],"latency":[{"pc":"0x400","label":"0x400: sd a0, 0(sp)","cycles":30,"insns":3,"mean":10,"max":10,"error":0}"#;
    assert!(line.contains(hotspots), "{line}");
    assert!(
        line.contains(r#""threads":[{"thread":0,"flushes":[{"pc":"0x100""#),
        "{line}"
    );
    // Every instruction leaves F in order: no stage looks like an allocation queue.
    assert!(
        line.ends_with(r#""topdown":null,"topdown_note":"no stage looks like the allocation stage (entered in order, left out of order): give --alloc-stage"}}"#),
        "{line}"
    );
    // Given: X, one slot a cycle, 80 cycles; the three stores enter X, nothing waits.
    let run = common::run_in(
        dir.path(),
        &[
            "--stats",
            "--report",
            "json",
            "--alloc-stage",
            "X",
            "--alloc-width",
            "1",
            "known.kanata",
        ],
        None,
    );
    run.assert_code(0);
    let out = String::from_utf8(run.stdout).unwrap();
    assert!(
        out.contains(r#""topdown":{"allocation_stage":"X","allocation_width":1,"detected":false,"execution_stage":"Cm","from_cycle":0,"to_cycle":80,"cycles":80,"slots":80,"retiring":3,"squashed":0,"recovery_bubbles":0,"backend_bound":0,"frontend_bound":77,"overflow":0,"min_recovery_cycles":null,"recovery_windows":0},"topdown_note":null}}"#),
        "{out}"
    );
}

/// The table of `--stats` shows both columns and the hot spots.
#[test]
fn table_shows_the_analysis() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("known.kanata"), known_trace()).unwrap();
    let run = common::run_in(dir.path(), &["--stats", "known.kanata"], None);
    run.assert_code(0);
    let out = String::from_utf8(run.stdout).unwrap();
    assert!(
        out.contains("Konata statistics (GenericStats) and classified (by mnemonic):"),
        "{out}"
    );
    assert!(out.contains("    numBrPredMiss"), "{out}");
    assert!(out.contains("  hot spots (top 10, exact):"), "{out}");
    assert!(out.contains("0x100        0x100: beq a0, a1, 8"), "{out}");
    assert!(out.contains("  thread 1:"), "{out}");
    let bad = common::run_in(
        dir.path(),
        &["--stats", "--latency", "X", "known.kanata"],
        None,
    );
    bad.assert_code(2);
    assert!(
        bad.stderr.contains("a stage range is FROM..TO"),
        "{}",
        bad.stderr
    );
}
