//! The rules of spec section 2 and the dialects, one test each: each converts a small trace
//! and looks at what Konata would draw for the output (the Kanata model of `kanata-tests`).

use std::collections::{BTreeMap, BTreeSet};

use kanata_tests::{canonical, load, Insn, RetireKind, View};
use kanata_writer::WriterBuilder;

use super::*;

/// The output of converting `input`, and the diagnostics.
struct Run {
    text: String,
    diag: Diagnostics,
}

impl Run {
    fn view(&self) -> View {
        let view = load(self.text.as_bytes());
        assert!(
            view.warnings.is_empty(),
            "Konata warns: {:?}\n{}",
            view.warnings,
            self.text
        );
        view
    }

    fn count(&self, rule: Rule) -> u64 {
        self.diag.rules().get(&rule).map_or(0, |r| r.count)
    }

    fn lines(&self, rule: Rule) -> Vec<u64> {
        self.diag
            .rules()
            .get(&rule)
            .map(|r| r.examples.iter().map(|e| e.line).collect())
            .unwrap_or_default()
    }

    fn rules(&self) -> Vec<Rule> {
        self.diag.rules().keys().copied().collect()
    }
}

fn convert_with(input: &str, options: Gem5Options) -> Run {
    convert_bytes(input.as_bytes(), options)
}

/// [`convert_with`] for input that need not be UTF-8.
fn convert_bytes(input: &[u8], options: Gem5Options) -> Run {
    let mut converter = Gem5Converter::new(WriterBuilder::new(), Vec::new(), options).unwrap();
    let mut diag = Diagnostics::new(usize::MAX, false);
    let mut lines: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
    if lines.last() == Some(&&b""[..]) {
        lines.pop();
    }
    for (i, line) in lines.into_iter().enumerate() {
        converter.line(line, i as u64 + 1, &mut diag).unwrap();
    }
    let finished = Box::new(converter).finish(&mut diag).unwrap();
    let text = String::from_utf8(finished.output).unwrap();
    if let Err(violations) = canonical::check(text.as_bytes()) {
        panic!("not canonical: {violations:?}\n{text}");
    }
    Run { text, diag }
}

fn convert(input: &str) -> Run {
    convert_with(input, Gem5Options::default())
}

fn deps() -> Gem5Options {
    Gem5Options {
        deps: true,
        ..Gem5Options::default()
    }
}

/// A record: `fetch` at `ticks[0]`, then decode, rename, dispatch, issue, complete, retire,
/// and `:store:0`.
fn record(seq: u64, ticks: [u64; 7]) -> String {
    let [f, d, n, p, i, c, r] = ticks;
    format!(
        "O3PipeView:fetch:{f}:0x{:08x}:0:{seq}:addi a0, a0, 1\nO3PipeView:decode:{d}\n\
         O3PipeView:rename:{n}\nO3PipeView:dispatch:{p}\nO3PipeView:issue:{i}\n\
         O3PipeView:complete:{c}\nO3PipeView:retire:{r}:store:0\n",
        0x1000 + 4 * seq
    )
}

/// A retired record with one stage per cycle of 1000 ticks from cycle `at`.
fn simple(seq: u64, at: u64) -> String {
    let t = |k: u64| (at + k) * 1000;
    record(seq, [t(0), t(1), t(2), t(3), t(4), t(5), t(6)])
}

/// Lane-0 boxes as (name, start, end).
fn boxes(insn: &Insn) -> Vec<(&str, i64, i64)> {
    insn.lane("0")
        .iter()
        .map(|s| (s.name.as_str(), s.start, s.end))
        .collect()
}

fn retire(insn: &Insn) -> Option<(RetireKind, i64, i64)> {
    insn.retired.map(|r| (r.kind, r.cycle, r.retire_id))
}

// ----- 2.1 detection -----

#[test]
fn s2_1_only_lines_with_the_marker_are_records() {
    let input = format!(
        "gem5 Simulator System\n**** REAL SIMULATION ****\n{}",
        simple(1, 1)
    );
    let run = convert(&input);
    let view = run.view();
    assert_eq!(view.insns.len(), 1);
    assert!(run.rules().is_empty());
}

#[test]
fn s2_1_input_without_records_is_an_error() {
    let mut converter =
        Gem5Converter::new(WriterBuilder::new(), Vec::new(), Gem5Options::default()).unwrap();
    let mut diag = Diagnostics::new(5, false);
    converter.line(b"hello", 1, &mut diag).unwrap();
    let err = Box::new(converter).finish(&mut diag).unwrap_err();
    assert!(err.message().contains("no O3PipeView record"), "{err}");
}

#[test]
fn s2_1_konata_gives_up_after_20000_lines_without_a_record() {
    let mut converter =
        Gem5Converter::new(WriterBuilder::new(), Vec::new(), Gem5Options::default()).unwrap();
    let mut diag = Diagnostics::new(5, false);
    for n in 1..=GIVING_UP_LINE {
        converter.line(b"other output", n, &mut diag).unwrap();
    }
    let err = converter
        .line(b"other output", GIVING_UP_LINE + 1, &mut diag)
        .unwrap_err();
    assert_eq!(err.line(), Some(GIVING_UP_LINE + 1));
}

// ----- 2.2 the per-record state machine -----

#[test]
fn s2_2_label_is_the_pc_and_the_whole_disassembly_colons_included() {
    let input = "O3PipeView:fetch:78500:0x00010144:0:1:auipc a0, 1:IntAlu\n\
                 O3PipeView:decode:79000\nO3PipeView:retire:79500:store:0\n\
                 O3PipeView:fetch:79000:0x00400000:1:2:  MOV_R_M : ld rax, DS:[rsp]\n\
                 O3PipeView:retire:80000:store:0\n";
    let view = convert(input).view();
    assert_eq!(view.insns[0].label_name, "0x00010144: auipc a0, 1:IntAlu");
    assert_eq!(
        view.insns[1].label_name,
        "0x00400000:   MOV_R_M : ld rax, DS:[rsp]"
    );
}

#[test]
fn s2_2_detail_carries_fetch_tick_micro_pc_retire_and_store_ticks() {
    let input = "O3PipeView:fetch:1000:0x10:3:10: store\nO3PipeView:decode:2000\n\
                 O3PipeView:complete:3000\nO3PipeView:retire:4000:store:5001\n";
    let view = convert(input).view();
    assert_eq!(
        view.insns[0].label_detail,
        "Fetched Tick: 1000\nMicro PC: 3\nRetired Tick: 4000\nStore Tick: 5001"
    );
}

#[test]
fn s2_2_a_stage_tick_of_zero_leaves_the_previous_stage_open() {
    // retired-nop: issue and complete never happened, Ds runs up to the retirement.
    let input = "O3PipeView:fetch:1000:0x10:0:10: nop\nO3PipeView:decode:2000\n\
                 O3PipeView:rename:3000\nO3PipeView:dispatch:4000\nO3PipeView:issue:0\n\
                 O3PipeView:complete:0\nO3PipeView:retire:5000:store:0\n";
    let view = convert(input).view();
    let insn = &view.insns[0];
    assert_eq!(
        boxes(insn),
        vec![
            ("F", 0, 1),
            ("Dc", 1, 2),
            ("Rn", 2, 3),
            ("Ds", 3, 4),
            ("Rt", 4, 5)
        ]
    );
    assert_eq!(retire(insn), Some((RetireKind::Retired, 5, 0)));
}

#[test]
fn s2_2_a_tick_before_the_current_one_is_normalized_and_noted() {
    // replayed-stage: issue 9000 after complete 5000; the complete is normalized to 9000.
    let input = "O3PipeView:fetch:1000:0x10:0:10: replayed-load\nO3PipeView:decode:2000\n\
                 O3PipeView:rename:3000\nO3PipeView:dispatch:4000\nO3PipeView:issue:9000\n\
                 O3PipeView:complete:5000\nO3PipeView:retire:0:store:0\n";
    let view = convert(input).view();
    let insn = &view.insns[0];
    assert!(insn
        .label_detail
        .contains("\nOut-of-order complete Tick: 5000 (normalized to 9000)"));
    assert_eq!(
        boxes(insn),
        vec![
            ("F", 0, 1),
            ("Dc", 1, 2),
            ("Rn", 2, 3),
            ("Ds", 3, 8),
            ("Is", 8, 8),
            ("Cm", 8, 9)
        ]
    );
}

#[test]
fn s2_2_a_retirement_adds_rt_one_cycle_wide_at_the_retire_tick() {
    let view = convert(&simple(10, 1)).view();
    let insn = &view.insns[0];
    assert_eq!(boxes(insn).last(), Some(&("Rt", 6, 7)));
    assert_eq!(retire(insn), Some((RetireKind::Retired, 7, 0)));
    assert_eq!(insn.sim_id, 10);
    assert_eq!(view.last_cycle, 7);
}

#[test]
fn s2_2_a_squashed_record_is_flushed_at_its_last_stage() {
    let input = format!(
        "{}O3PipeView:fetch:3000:0x20:0:2: bne\nO3PipeView:decode:4000\n\
         O3PipeView:rename:5000\nO3PipeView:dispatch:0\nO3PipeView:issue:0\n\
         O3PipeView:complete:0\nO3PipeView:retire:0:store:0\n",
        simple(1, 1)
    );
    let view = convert(&input).view();
    let insn = &view.insns[1];
    assert_eq!(boxes(insn), vec![("F", 2, 3), ("Dc", 3, 4), ("Rn", 4, 5)]);
    assert_eq!(retire(insn), Some((RetireKind::Flushed, 5, 1)));
    assert!(insn
        .label_detail
        .ends_with("\nRetired Tick: 0\nStore Tick: 0"));
}

#[test]
fn s2_2_an_explicit_thread_record_sets_the_thread_id() {
    let input = "O3PipeView:fetch:1000:0x10:0:10: explicit-thread\n\
                 O3PipeView:thread:1000:2\nO3PipeView:decode:2000\nO3PipeView:retire:3000\n";
    let view = convert(input).view();
    assert_eq!(view.insns[0].thread, 2);
}

#[test]
fn s2_2_a_stage_line_without_a_fetch_line_is_reported_and_dropped() {
    let input = format!("O3PipeView:decode:2000\n{}", simple(1, 1));
    let run = convert(&input);
    assert_eq!(run.lines(Rule::G5), vec![1]);
    assert_eq!(run.view().insns.len(), 1);
}

#[test]
fn s2_2_malformed_and_unknown_lines_are_reported() {
    let input = format!(
        "O3PipeView:fetch:x:0x10:0:1: bad\nO3PipeView:decode:2000\n{}\
         O3PipeView:fetch:9000:0x14:0:3: ok\nO3PipeView:address:9000\n\
         O3PipeView:decode:abc\nO3PipeView:retire:10000\n",
        simple(2, 1)
    );
    let run = convert(&input);
    // The malformed fetch drops its record (its decode line silently with it).
    assert_eq!(run.lines(Rule::G5), vec![1, 11, 12]);
    let view = run.view();
    assert_eq!(
        view.insns.iter().map(|i| i.sim_id).collect::<Vec<_>>(),
        vec![2, 3]
    );
}

// ----- 2.3 ticks to cycles -----

#[test]
fn s2_3_the_clock_is_the_smallest_difference_between_ticks() {
    // 2 GHz: 500 ticks per cycle, counted from the first tick.
    let input = "O3PipeView:fetch:78500:0x10:0:1: a\nO3PipeView:decode:79000\n\
                 O3PipeView:rename:80500\nO3PipeView:retire:82000:store:0\n";
    let view = convert(input).view();
    assert_eq!(
        boxes(&view.insns[0]),
        vec![("F", 0, 1), ("Dc", 1, 4), ("Rn", 4, 7), ("Rt", 7, 8)]
    );
    assert!(view.insns[0].fetched_cycle == 0);
}

#[test]
fn s2_3_store_ticks_do_not_count_for_the_clock() {
    let input = "O3PipeView:fetch:1000:0x10:0:1: sw\nO3PipeView:decode:2000\n\
                 O3PipeView:retire:3000:store:3001\n";
    let run = convert(input);
    assert!(run.rules().is_empty(), "{:?}", run.rules());
    assert_eq!(
        boxes(&run.view().insns[0]),
        vec![("F", 0, 1), ("Dc", 1, 2), ("Rt", 2, 3)]
    );
}

#[test]
fn s2_3_ticks_per_cycle_can_be_given_and_ticks_between_edges_are_reported() {
    let input = "O3PipeView:fetch:1000:0x10:0:1: a\nO3PipeView:decode:1500\n\
                 O3PipeView:retire:3000\n";
    // Detected: 500 ticks per cycle.
    let view = convert(input).view();
    assert_eq!(
        boxes(&view.insns[0]),
        vec![("F", 0, 1), ("Dc", 1, 4), ("Rt", 4, 5)]
    );
    // Given: 1000; decode at 1500 lies between two edges and is rounded down, reported.
    let run = convert_with(
        input,
        Gem5Options {
            ticks_per_cycle: Some(1000),
            ..Gem5Options::default()
        },
    );
    assert_eq!(run.lines(Rule::G3), vec![1]);
    // F is empty, in the first cycle of the file, where Konata draws an empty stage as
    // never closed (up to the retirement): as its gem5 loader draws it too.
    assert_eq!(
        boxes(&run.view().insns[0]),
        vec![("F", 0, 3), ("Dc", 0, 2), ("Rt", 2, 3)]
    );
}

#[test]
fn s2_3_a_flushed_record_that_only_fetched_is_drawn_one_cycle() {
    let input = format!(
        "{}O3PipeView:fetch:2000:0x20:0:2: dead\nO3PipeView:decode:0\n\
         O3PipeView:rename:0\nO3PipeView:retire:0:store:0\n",
        simple(1, 1)
    );
    let view = convert(&input).view();
    let insn = &view.insns[1];
    assert_eq!(boxes(insn), vec![("F", 1, 2)]);
    assert_eq!(insn.retired_cycle, 2);
}

#[test]
fn s2_3_a_flushed_records_zero_length_stages_stay_zero_length() {
    // dispatch == issue in a flushed record: Konata widens Ds over Is; the canonical output
    // keeps Ds empty and Is covers the cell (spec 2.6).
    let input = format!(
        "{}O3PipeView:fetch:2000:0x20:0:2: x\nO3PipeView:decode:3000\n\
         O3PipeView:rename:4000\nO3PipeView:dispatch:5000\nO3PipeView:issue:5000\n\
         O3PipeView:complete:6000\nO3PipeView:retire:0:store:0\n",
        simple(1, 1)
    );
    let view = convert(&input).view();
    assert_eq!(
        boxes(&view.insns[1]),
        vec![
            ("F", 1, 2),
            ("Dc", 2, 3),
            ("Rn", 3, 4),
            ("Ds", 4, 4),
            ("Is", 4, 5),
            ("Cm", 5, 6)
        ]
    );
}

#[test]
fn s2_3_the_clock_is_detected_when_konata_detects_it() {
    // Enough records for 1024 distinct ticks before line 16,486 (Konata's second drain),
    // all 1000 ticks apart; a later record has a tick 500 after an edge. Konata has its
    // clock by then, so that tick is between edges (and reported), not a finer clock.
    let mut input = String::new();
    let mut seq = 0;
    while seq * 7 < 16_486 {
        seq += 1;
        input.push_str(&simple(seq, seq));
    }
    let late = seq + 1;
    input.push_str(&format!(
        "O3PipeView:fetch:{0}:0x10:0:{late}: a\nO3PipeView:decode:{1}\nO3PipeView:retire:{2}\n",
        (late + 1) * 1000,
        (late + 1) * 1000 + 500,
        (late + 3) * 1000,
    ));
    let run = convert(&input);
    assert_eq!(run.count(Rule::G3), 1);
    let view = run.view();
    let last = view.insns.last().unwrap();
    assert_eq!(last.fetched_cycle + 2, boxes(last)[2].1);
}

// ----- 2.4 reordering, ids, retire ids -----

#[test]
fn s2_4_records_are_written_in_sequence_order_with_dense_ids_and_gem5_sim_ids() {
    // out-of-order corpus case: 12, 10, then 11 flushed.
    let input = "O3PipeView:fetch:1000:0x12:0:12: op 12\nO3PipeView:decode:2000\n\
                 O3PipeView:retire:3000\nO3PipeView:fetch:1000:0x10:0:10: op 10\n\
                 O3PipeView:decode:2000\nO3PipeView:retire:3000\n\
                 O3PipeView:fetch:1000:0x11:0:11: op 11\nO3PipeView:decode:2000\n\
                 O3PipeView:rename:0\nO3PipeView:retire:0\n";
    let view = convert(input).view();
    let ids: Vec<(i64, i64)> = view.insns.iter().map(|i| (i.file_id, i.sim_id)).collect();
    assert_eq!(ids, vec![(0, 10), (1, 11), (2, 12)]);
    assert_eq!(retire(&view.insns[0]), Some((RetireKind::Retired, 3, 0)));
    // Konata's dummy retire id of a flushed op: last rid + its distance to the last retired.
    assert_eq!(retire(&view.insns[1]), Some((RetireKind::Flushed, 2, 1)));
    assert_eq!(retire(&view.insns[2]), Some((RetireKind::Retired, 3, 1)));
}

#[test]
fn s2_4_missing_sequence_numbers_leave_no_empty_rows() {
    let input = format!("{}{}", simple(100, 1), simple(250, 2));
    let view = convert(&input).view();
    assert_eq!(view.last_id, 1);
    assert_eq!(view.insns[1].sim_id, 250);
}

#[test]
fn s2_4_flushed_retire_ids_count_the_sequence_numbers_between() {
    // 1 retired (rid 0), 4 flushed (rid 0 + 4 - 1 = 3), 5 retired (rid 1).
    let squashed = "O3PipeView:fetch:3000:0x20:0:4: x\nO3PipeView:decode:0\n\
                    O3PipeView:retire:0:store:0\n";
    let input = format!("{}{squashed}{}", simple(1, 1), simple(5, 3));
    let view = convert(&input).view();
    let rids: Vec<i64> = view.insns.iter().map(|i| retire(i).unwrap().2).collect();
    assert_eq!(rids, vec![0, 3, 1]);
}

#[test]
fn s2_4_a_record_later_than_the_window_is_reported_and_dropped() {
    let mut input = String::new();
    for seq in 2..=6 {
        input.push_str(&simple(seq, seq));
    }
    input.push_str(&simple(1, 1));
    let run = convert_with(
        &input,
        Gem5Options {
            window: 2,
            ..Gem5Options::default()
        },
    );
    assert_eq!(run.lines(Rule::G1), vec![36]);
    assert!(run.diag.rules()[&Rule::G1].examples[0]
        .message
        .contains("--window 2"));
    assert_eq!(run.view().insns.len(), 5);
    // With the default window it is placed.
    assert_eq!(convert(&input).view().insns[0].sim_id, 1);
}

#[test]
fn s2_4_duplicate_sequence_numbers_are_reported_and_both_kept() {
    let input = format!("{}{}", simple(7, 1), simple(7, 1));
    let run = convert(&input);
    assert_eq!(run.lines(Rule::G2), vec![8]);
    let view = run.view();
    assert_eq!(view.insns.len(), 2);
    assert!(view.insns.iter().all(|i| i.sim_id == 7));
}

#[test]
fn s2_4_the_thread_id_comes_from_a_tid_line_naming_the_instruction() {
    // thread-ids corpus case: explicit thread, [tid:N] with sn:, default 0.
    let input = "O3PipeView:fetch:1000:0x10:0:10: explicit-thread\n\
                 O3PipeView:thread:1000:2\n\
                 1500: system.cpu.rename: [tid:1]: Processing instruction [sn:10]\n\
                 O3PipeView:decode:2000\nO3PipeView:retire:3000\n\
                 O3PipeView:fetch:4000:0x11:0:11: inferred-thread\n\
                 4500: system.cpu.rename: [tid:3]: Processing instruction [sn:11]\n\
                 O3PipeView:decode:5000\nO3PipeView:retire:6000\n\
                 O3PipeView:fetch:7000:0x12:0:12: legacy-thread\nO3PipeView:decode:8000\n\
                 O3PipeView:retire:9000\n";
    let view = convert(input).view();
    let threads: Vec<i64> = view.insns.iter().map(|i| i.thread).collect();
    assert_eq!(threads, vec![2, 3, 0]);
}

// ----- 2.5 the other debug lines -----

#[test]
fn s2_5_rename_lines_go_to_the_detail_and_to_the_stage_open_at_the_time() {
    let input = "O3PipeView:fetch:1000:0x10:0:10: producer\n\
        1500: system.cpu.rename: [tid:0]: Renaming arch reg 1 (IntRegClass) to physical reg 152 (152). [sn:10]\n\
        O3PipeView:decode:2000\nO3PipeView:complete:3000\nO3PipeView:retire:4000\n";
    let view = convert(input).view();
    let insn = &view.insns[0];
    assert_eq!(
        insn.label_detail,
        "Fetched Tick: 1000\nMicro PC: 0\n  Renaming arch reg 1 (IntRegClass) to physical \
         reg 152 (152). [sn\nRetired Tick: 4000"
    );
    assert!(insn.lane("0")[0].notes.contains("Renaming arch reg 1"));
    assert!(view.arrows.is_empty(), "no arrows without --deps");
}

#[test]
fn s2_5_a_memory_completion_before_the_retirement_starts_mc() {
    let input = "6000: system.cpu.memDep0: Completed mem instruction [sn:10].\n\
                 O3PipeView:fetch:1000:0x10:0:10: load\nO3PipeView:decode:3000\n\
                 O3PipeView:complete:5000\nO3PipeView:retire:7000:store:0\n";
    let view = convert(input).view();
    let insn = &view.insns[0];
    assert_eq!(
        boxes(insn),
        vec![
            ("F", 0, 2),
            ("Dc", 2, 4),
            ("Cm", 4, 5),
            ("Mc", 5, 6),
            ("Rt", 6, 7)
        ]
    );
    assert_eq!(
        insn.lane("0")[3].notes,
        "6000: system.cpu.memDep0: Completed mem instruction [sn:10]."
    );
    assert!(insn
        .label_detail
        .contains("\n Memory Complete: 6000: system.cpu.memDep0"));
}

#[test]
fn s2_5_a_memory_completion_at_or_after_the_retirement_adds_no_stage() {
    let input = "4000: system.cpu.memDep0: Completed mem instruction [sn:10].\n\
                 9000: system.cpu.memDep0: Completed mem instruction [sn:11].\n\
                 O3PipeView:fetch:1000:0x10:0:10: equal-retire\nO3PipeView:decode:2000\n\
                 O3PipeView:complete:3000\nO3PipeView:retire:4000:store:0\n\
                 O3PipeView:fetch:5000:0x11:0:11: after-retire\nO3PipeView:decode:6000\n\
                 O3PipeView:complete:7000\nO3PipeView:retire:8000:store:0\n";
    let view = convert(input).view();
    for insn in &view.insns {
        assert!(boxes(insn).iter().all(|b| b.0 != "Mc"), "{:?}", boxes(insn));
        assert!(insn.label_detail.contains("Memory Complete"));
    }
}

#[test]
fn s2_5_memory_completions_are_consumed_in_file_order() {
    // unordered-memory-complete: 9000 then 6000; the first blocks the second until the
    // retirement, when neither is between complete and retire any more.
    let input = "9000: system.cpu.memDep0: Completed mem instruction [sn:10].\n\
                 6000: system.cpu.memDep0: Completed mem instruction [sn:10].\n\
                 O3PipeView:fetch:1000:0x10:0:10: load\nO3PipeView:decode:3000\n\
                 O3PipeView:complete:7000\nO3PipeView:retire:8000:store:0\n";
    let view = convert(input).view();
    assert!(boxes(&view.insns[0]).iter().all(|b| b.0 != "Mc"));
}

#[test]
fn s2_5_lsq_user_and_regfile_lines_are_shown_in_the_detail() {
    let input = "O3PipeView:fetch:1000:0x10:0:10: ld\n\
        1100: system.cpu.iew.lsq.thread0: Read called, load idx: 2, store idx: -1, storeHead: 9 addr: 0x77ecc [sn:10]\n\
        1200: global: RegFile: Setting int register 125 to 0x4af000\n\
        1300: user: hello\n\
        O3PipeView:decode:2000\nO3PipeView:retire:3000\n";
    let view = convert(input).view();
    assert_eq!(
        view.insns[0].label_detail,
        "Fetched Tick: 1000\nMicro PC: 0\n  Read called, load idx: 2, store idx: -1, \
         storeHead: 9 addr: 0x77ecc [sn\n  Setting int register 125 to 0x4af000\n \
         1300: user: hello\nRetired Tick: 3000"
    );
}

#[test]
fn s2_5_a_line_without_a_tick_ends_the_current_sequence_number() {
    let input = "O3PipeView:fetch:1000:0x10:0:10: a\n\
                 1100: system.cpu.iew.lsq.thread0: Read called, x [sn:10]\n\
                 untimed line\n\
                 1200: global: RegFile: Setting int register 1 to 0x1\n\
                 O3PipeView:decode:2000\nO3PipeView:retire:3000\n";
    let view = convert(input).view();
    assert!(!view.insns[0].label_detail.contains("Setting"));
    assert!(view.insns[0].label_detail.contains("Read called"));
}

#[test]
fn s2_5_deps_draws_konatas_arrows_between_complete_stages() {
    let input = "O3PipeView:fetch:1000:0x10:0:10: producer\n\
        1500: system.cpu.rename: [tid:0]: Renaming arch reg 1 (IntRegClass) to physical reg 152 (152). [sn:10]\n\
        O3PipeView:decode:2000\nO3PipeView:complete:3000\nO3PipeView:retire:4000\n\
        O3PipeView:fetch:5000:0x11:0:11: consumer\n\
        5500: system.cpu.rename: [tid:0]: Looking up IntRegClass arch reg 1, got phys reg 152 (IntRegClass) [sn:11]\n\
        O3PipeView:decode:6000\nO3PipeView:complete:7000\nO3PipeView:retire:8000\n";
    let view = convert_with(input, deps()).view();
    assert_eq!(view.arrows.len(), 1);
    let arrow = view.arrows[0];
    // From the producer's Cm start to the consumer's Cm start, as Konata draws them.
    assert_eq!((arrow.producer, arrow.consumer), (0, 1));
    assert_eq!((arrow.from_cycle, arrow.to_cycle), (2, 6));
    // The X stage overlays Cm's first cycle in lane 1.
    let lane1: Vec<_> = view.insns[1]
        .lane("1")
        .iter()
        .map(|s| (s.name.as_str(), s.start, s.end))
        .collect();
    assert_eq!(lane1, vec![("X", 6, 7), ("x", 7, 7)]);
}

#[test]
fn s2_5_deps_class_names_with_underscores() {
    let input = "O3PipeView:fetch:1000:0x10:0:10: producer\n\
        1500: system.cpu.rename: [tid:0]: Renaming arch reg 1 (condition_code) to physical reg 152 (152). [sn:10]\n\
        O3PipeView:decode:2000\nO3PipeView:complete:3000\nO3PipeView:retire:4000:store:0\n\
        O3PipeView:fetch:5000:0x11:0:11: consumer\n\
        5500: system.cpu.rename: [tid:0]: Looking up condition_code arch reg 1, got phys reg 152 (condition_code) [sn:11]\n\
        O3PipeView:decode:6000\nO3PipeView:complete:7000\nO3PipeView:retire:8000:store:0\n";
    assert_eq!(convert_with(input, deps()).view().arrows.len(), 1);
}

// ----- 2.8 streaming -----

#[test]
fn s2_8_instructions_overlapping_in_time_are_interleaved_in_time_order() {
    // Records arrive out of order; their lifetimes overlap; a small window forces writing
    // before the end.
    let mut input = String::new();
    for seq in [2u64, 1, 4, 3, 6, 5, 8, 7] {
        let t = |k: u64| (seq + k) * 1000;
        input.push_str(&record(seq, [t(0), t(1), t(2), t(3), t(5), t(6), t(9)]));
    }
    let run = convert_with(
        &input,
        Gem5Options {
            window: 2,
            ..Gem5Options::default()
        },
    );
    assert!(run.rules().is_empty(), "{:?}", run.rules());
    let view = run.view();
    let fetched: Vec<i64> = view.insns.iter().map(|i| i.fetched_cycle).collect();
    assert_eq!(fetched, (0..8).collect::<Vec<_>>());
    for insn in &view.insns {
        assert_eq!(boxes(insn).len(), 7);
    }
}

#[test]
fn s2_8_an_instruction_fetched_before_what_is_written_is_reported() {
    // Sequence numbers grow but the fetch tick goes back: it cannot be placed any more.
    let mut input = String::new();
    for seq in 1..=4 {
        input.push_str(&simple(seq, 10 + seq));
    }
    input.push_str(&simple(5, 1));
    let run = convert_with(
        &input,
        Gem5Options {
            window: 0,
            ..Gem5Options::default()
        },
    );
    assert_eq!(run.lines(Rule::G1), vec![29]);
    assert_eq!(run.view().insns.len(), 4);
}

#[test]
fn s2_8_memory_is_bounded_by_the_window_not_the_trace() {
    let n = 200_000;
    let window = 4096;
    let mut converter = Gem5Converter::new(
        WriterBuilder::new(),
        std::io::sink(),
        Gem5Options {
            window,
            deps: true,
            ..Gem5Options::default()
        },
    )
    .unwrap();
    let mut diag = Diagnostics::new(5, false);
    let mut lineno = 0;
    synth::Synth::new(n, 7).for_each_line(|line| {
        lineno += 1;
        converter.line(line.as_bytes(), lineno, &mut diag).unwrap();
    });
    let high = converter.high_water();
    let finished = Box::new(converter).finish(&mut diag).unwrap();
    assert_eq!(finished.summary.instructions, n);
    assert!(diag.rules().is_empty(), "{:?}", diag.rules());
    assert!(high.waiting <= window + 1, "{high:?}");
    assert!(high.in_flight < 1000, "{high:?}");
    assert!(high.ex_lines < 1000, "{high:?}");
}

#[test]
#[ignore = "three million instructions: minutes in a debug build (20 s in release)"]
fn s2_8_memory_is_bounded_for_millions_of_instructions() {
    let n = 3_000_000;
    let mut converter = Gem5Converter::new(
        WriterBuilder::new(),
        std::io::sink(),
        Gem5Options::default(),
    )
    .unwrap();
    let mut diag = Diagnostics::new(5, false);
    let mut lineno = 0;
    synth::Synth::new(n, 11).for_each_line(|line| {
        lineno += 1;
        converter.line(line.as_bytes(), lineno, &mut diag).unwrap();
    });
    let high = converter.high_water();
    let finished = Box::new(converter).finish(&mut diag).unwrap();
    assert_eq!(finished.summary.instructions, n);
    assert!(high.waiting <= 16_385, "{high:?}");
    assert!(high.in_flight < 1000, "{high:?}");
}

#[test]
fn s2_8_synthetic_trace_converts_like_its_records_say() {
    let mut input = String::new();
    synth::Synth::new(2000, 3).for_each_line(|line| {
        input.push_str(line);
        input.push('\n');
    });
    let run = convert_with(
        &input,
        Gem5Options {
            window: 300,
            deps: true,
            ..Gem5Options::default()
        },
    );
    assert!(run.rules().is_empty(), "{:?}", run.diag.rules());
    let view = run.view();
    assert_eq!(view.insns.len(), 2000);
    let sims: Vec<i64> = view.insns.iter().map(|i| i.sim_id).collect();
    assert!(sims.windows(2).all(|w| w[0] < w[1]));
    assert!(!view.arrows.is_empty());
}

// ----- 2.9 edge cases -----

#[test]
fn s2_9_a_fetch_tick_of_zero_opens_no_f_stage() {
    let input = "O3PipeView:fetch:0:0x10:0:1: first\nO3PipeView:decode:1000\n\
                 O3PipeView:retire:2000\n";
    let view = convert(input).view();
    assert_eq!(boxes(&view.insns[0]), vec![("Dc", 1, 2), ("Rt", 2, 3)]);
}

#[test]
fn s2_9_a_record_truncated_at_the_end_is_reported_and_left_open() {
    let input = format!(
        "{}O3PipeView:fetch:2000:0x14:0:2: cut\nO3PipeView:decode:3000\n",
        simple(1, 1)
    );
    let run = convert(&input);
    assert_eq!(run.lines(Rule::G4), vec![8]);
    let view = run.view();
    assert_eq!(view.insns.len(), 2);
    assert!(view.insns[1].eof());
    assert!(!view.insns[1].label_detail.contains("Retired"));
}

#[test]
fn s2_9_a_record_cut_short_by_the_next_one_is_reported_and_left_open() {
    let input = format!(
        "O3PipeView:fetch:1000:0x14:0:1: cut\nO3PipeView:decode:2000\n{}",
        simple(2, 2)
    );
    let run = convert(&input);
    assert_eq!(run.lines(Rule::G4), vec![1]);
    let view = run.view();
    assert!(view.insns[0].eof());
    assert!(!view.insns[1].eof());
}

#[test]
fn s2_9_a_retirement_before_the_last_stage_is_moved_to_it() {
    let input = "O3PipeView:fetch:1000:0x10:0:1: a\nO3PipeView:decode:5000\n\
                 O3PipeView:retire:3000\n";
    let run = convert(input);
    assert_eq!(run.lines(Rule::G6), vec![1]);
    assert_eq!(
        boxes(&run.view().insns[0]),
        vec![("F", 0, 2), ("Dc", 2, 2), ("Rt", 2, 3)]
    );
}

#[test]
fn s2_9_tabs_in_the_disassembly_become_spaces() {
    let input = "O3PipeView:fetch:1000:0x10:0:1:add\tr1, r2\nO3PipeView:retire:2000\n";
    assert_eq!(
        convert(input).view().insns[0].label_name,
        "0x10: add r1, r2"
    );
}

// ----- dialects -----

#[test]
fn dialect_a_prefix_before_the_marker_is_ignored() {
    let plain = simple(1, 1) + &simple(2, 2);
    let prefixed: String = plain
        .lines()
        .map(|l| format!("[core0 @ 12] {l}\n"))
        .collect();
    assert_eq!(convert(&prefixed).text, convert(&plain).text);
}

#[test]
fn dialect_spaces_after_the_colons_are_allowed() {
    let spaced = "O3PipeView:fetch: 1000: 0x00001004: 0: 1:addi a0, a0, 1\n\
                  O3PipeView:decode: 2000\nO3PipeView:rename: 3000\n\
                  O3PipeView: dispatch: 4000\nO3PipeView:issue: 5000\n\
                  O3PipeView:complete: 6000\nO3PipeView:retire: 7000: store: 0\n";
    assert_eq!(convert(spaced).text, convert(&simple(1, 1)).text);
}

#[test]
fn dialect_old_retire_lines_without_store() {
    let view = convert(
        "O3PipeView:fetch:1000:0x00001000:0:10: add r1, r2\nO3PipeView:decode:2000\n\
         O3PipeView:rename:3000\nO3PipeView:dispatch:4000\nO3PipeView:issue:5000\n\
         O3PipeView:complete:6000\nO3PipeView:retire:7000\n",
    )
    .view();
    let insn = &view.insns[0];
    assert_eq!(
        insn.label_detail,
        "Fetched Tick: 1000\nMicro PC: 0\nRetired Tick: 7000"
    );
    assert_eq!(view.last_cycle, 7);
}

#[test]
fn dialect_a_byte_order_mark_is_ignored() {
    let plain = simple(1, 1);
    let marked = format!("\u{feff}{plain}");
    assert_eq!(convert(&marked).text, convert(&plain).text);
}

/// BOOM's event stream for the instructions of `gem5_records` below.
const BOOM: &str = "\
1; O3PipeView:fetch:1000:0x80000000:0:1:addi a0, a0, 1
2; O3PipeView:fetch:1000:0x80000004:0:2:sw a0, 0(sp)
3; O3PipeView:fetch:1000:0x80000008:0:3:bne a0, a1, 8
4; O3PipeView:fetch:1000:0x8000000c:0:4:add a2, a2, a2
1; O3PipeView:decode:2000
1; O3PipeView:rename: 0
1; O3PipeView:dispatch: 0
2; O3PipeView:decode:2000
2; O3PipeView:rename: 0
2; O3PipeView:dispatch: 0
3; O3PipeView:decode:3000
3; O3PipeView:rename: 0
3; O3PipeView:dispatch: 0
1; O3PipeView:dispatch: 3000
2; O3PipeView:dispatch: 3000
1; O3PipeView:issue: 4000
2; O3PipeView:issue: 4000
3; O3PipeView:dispatch: 4000
1; O3PipeView:complete:5000
2; O3PipeView:issue: 5000
2; O3PipeView:complete:6000
1; O3PipeView:retire:6000:store: 0
3; O3PipeView:issue: 6000
2; O3PipeView:retire:7000:store: 0
3; O3PipeView:complete:7000
5; O3PipeView:fetch:8000:0x80000010:0:5:ret
3; O3PipeView:retire:8000:store: 0
2; store-comp: 9000
5; O3PipeView:decode:9000
5; O3PipeView:complete:10000
5; O3PipeView:retire:11000:store: 0
6; O3PipeView:fetch:11000:0x80000014:0:6:nop
";

#[test]
fn dialect_boom_event_stream_is_grouped_by_sequence_number() {
    // The same instructions as gem5 records (what BOOM's pipeview-helper makes of them,
    // without its squashing of same-cycle stages): 2 re-issued, 4 squashed (5 retired
    // after it without it), 6 still in flight at the end.
    let gem5_records = "\
O3PipeView:fetch:1000:0x80000000:0:1:addi a0, a0, 1
O3PipeView:decode:2000
O3PipeView:rename:0
O3PipeView:dispatch:3000
O3PipeView:issue:4000
O3PipeView:complete:5000
O3PipeView:retire:6000:store:0
O3PipeView:fetch:1000:0x80000004:0:2:sw a0, 0(sp)
O3PipeView:decode:2000
O3PipeView:rename:0
O3PipeView:dispatch:3000
O3PipeView:issue:5000
O3PipeView:complete:6000
O3PipeView:retire:7000:store:9000
O3PipeView:fetch:1000:0x80000008:0:3:bne a0, a1, 8
O3PipeView:decode:3000
O3PipeView:rename:0
O3PipeView:dispatch:4000
O3PipeView:issue:6000
O3PipeView:complete:7000
O3PipeView:retire:8000:store:0
O3PipeView:fetch:1000:0x8000000c:0:4:add a2, a2, a2
O3PipeView:retire:0
O3PipeView:fetch:8000:0x80000010:0:5:ret
O3PipeView:decode:9000
O3PipeView:complete:10000
O3PipeView:retire:11000:store:0
O3PipeView:fetch:11000:0x80000014:0:6:nop
";
    let boom = convert(BOOM);
    let records = convert(gem5_records);
    assert_eq!(boom.text, records.text);
    assert_eq!(boom.lines(Rule::G4), vec![32]);
    let view = boom.view();
    assert_eq!(
        retire(&view.insns[3]).map(|r| r.0),
        Some(RetireKind::Flushed)
    );
    assert!(view.insns[1].label_detail.ends_with("Store Tick: 9000"));
    assert_eq!(boxes(&view.insns[1])[3], ("Is", 4, 5));
    assert!(view.insns[5].eof());
}

#[test]
fn dialect_boom_orphan_and_late_events_are_reported() {
    let input = format!("{BOOM}7; O3PipeView:decode:9000\n1; store-comp: 9500\n");
    let run = convert_with(
        &input,
        Gem5Options {
            window: 0,
            ..Gem5Options::default()
        },
    );
    assert_eq!(run.lines(Rule::G5), vec![33]);
    // With no window, instruction 2 is written at its retirement: its store completion
    // comes too late, as does the one of instruction 1.
    assert_eq!(run.lines(Rule::G1), vec![28, 34]);
}

/// A synthetic gem5 trace, generated line by line: 4-wide fetch, in-order commit, some
/// squashed instructions, records printed shuffled in blocks of 64 (bounded lateness), and
/// `Rename` lines for the dependency arrows.
pub(crate) mod synth {
    /// The generator.
    pub(crate) struct Synth {
        n: u64,
        rng: u64,
    }

    impl Synth {
        pub(crate) fn new(n: u64, seed: u64) -> Synth {
            Synth {
                n,
                rng: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
            }
        }

        fn next(&mut self, bound: u64) -> u64 {
            // xorshift64*
            self.rng ^= self.rng >> 12;
            self.rng ^= self.rng << 25;
            self.rng ^= self.rng >> 27;
            (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) % bound
        }

        /// Calls `f` with every line of the trace.
        pub(crate) fn for_each_line(mut self, mut f: impl FnMut(&str)) {
            const TPC: u64 = 500;
            let mut buffer: Vec<String> = Vec::new();
            let mut last_retire = 0;
            let mut line = String::new();
            let mut seq = 1;
            while seq <= self.n || !buffer.is_empty() {
                if seq <= self.n {
                    let fetch = 100 + seq / 4;
                    let decode = fetch + 1 + self.next(2);
                    let rename = decode + 1;
                    let dispatch = rename + 1;
                    let issue = dispatch + self.next(4);
                    let complete = issue + 1 + self.next(3);
                    let squashed = self.next(20) == 0;
                    let text = if squashed {
                        format!(
                            "O3PipeView:fetch:{}:0x{:08x}:0:{seq}:bne a{}, a1, 8\n\
                             O3PipeView:decode:{}\nO3PipeView:rename:0\n\
                             O3PipeView:dispatch:0\nO3PipeView:issue:0\n\
                             O3PipeView:complete:0\nO3PipeView:retire:0:store:0",
                            fetch * TPC,
                            0x1000 + seq * 4,
                            seq % 8,
                            decode * TPC
                        )
                    } else {
                        let retire = last_retire.max(complete + 1);
                        last_retire = retire;
                        let reg = seq % 32;
                        format!(
                            "{}: system.cpu.rename: [tid:0]: Looking up integer arch reg 1, got phys reg {} (integer) [sn:{seq}]\n\
                             {}: system.cpu.rename: [tid:0]: Renaming arch reg 1 (integer) to physical reg {reg} ({reg}). [sn:{seq}]\n\
                             O3PipeView:fetch:{}:0x{:08x}:0:{seq}:addi a{}, a1, 8\n\
                             O3PipeView:decode:{}\nO3PipeView:rename:{}\n\
                             O3PipeView:dispatch:{}\nO3PipeView:issue:{}\n\
                             O3PipeView:complete:{}\nO3PipeView:retire:{}:store:0",
                            rename * TPC,
                            (seq + 31) % 32,
                            rename * TPC,
                            fetch * TPC,
                            0x1000 + seq * 4,
                            seq % 8,
                            decode * TPC,
                            rename * TPC,
                            dispatch * TPC,
                            issue * TPC,
                            complete * TPC,
                            retire * TPC
                        )
                    };
                    buffer.push(text);
                    seq += 1;
                }
                if buffer.len() >= 64 || seq > self.n {
                    // Shuffle each block of 64: records come at most 63 places late.
                    for i in (1..buffer.len()).rev() {
                        let j = self.next(i as u64 + 1) as usize;
                        buffer.swap(i, j);
                    }
                    for text in buffer.drain(..) {
                        for l in text.split('\n') {
                            line.clear();
                            line.push_str(l);
                            f(&line);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn synthetic_traces_are_deterministic() {
    let collect = |seed| {
        let mut lines = BTreeMap::new();
        let mut n = 0;
        synth::Synth::new(50, seed).for_each_line(|l| {
            n += 1;
            lines.insert(n, l.to_owned());
        });
        lines
    };
    assert_eq!(collect(1), collect(1));
    assert_ne!(collect(1), collect(2));
}

#[test]
fn the_fast_record_path_leaves_every_unusual_field_to_the_general_one() {
    use read::leading_number;
    assert_eq!(leading_number(b"0"), Some((0, &b""[..])));
    assert_eq!(
        leading_number(b"9999999999999999999:x"),
        Some((9_999_999_999_999_999_999, &b":x"[..]))
    );
    // Twenty digits may overflow: the general path decides.
    assert_eq!(leading_number(b"18446744073709551615"), None);
    assert_eq!(number("18446744073709551615"), Some(u64::MAX));
    assert_eq!(leading_number(b" 1"), None);
    assert_eq!(leading_number(b""), None);
    // Lines the fast parse leaves to the general one, which reads them as Konata does.
    for body in [
        &b"decode:12x"[..],
        b"decode: 12",
        b"decodeX:12",
        b"fetch:100:0x10:0:",
        b"fetch:100:0x10 :0:7:nop",
        b"fetch:100:0x10:0:7x:nop",
        b"retire:5:",
        b"retire:5:store:7:8",
        b"retire:5:store:",
        b"issue:",
        b"frobnicate:5",
    ] {
        assert_eq!(
            read::FastLine::parse(body),
            None,
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    assert_eq!(
        read::FastLine::parse(b"fetch:100:0x10:0:7:ld a0: 8(sp)"),
        Some(read::FastLine::Fetch {
            tick: 100,
            address: "0x10",
            upc: "0",
            seq: 7,
            disassembly: "ld a0: 8(sp)"
        })
    );
    assert_eq!(
        read::FastLine::parse(b"retire:5:store:7"),
        Some(read::FastLine::Retire {
            tick: 5,
            store: Some(7)
        })
    );
    assert_eq!(
        read::FastLine::parse(b"dispatch:9:ignored"),
        Some(read::FastLine::Stage {
            command: "dispatch",
            name: StageName::Ds,
            tick: 9
        })
    );
    assert_eq!(untrimmed_ascii("0x10"), Some("0x10"));
    assert_eq!(untrimmed_ascii("0x10\x0b"), None);
    assert_eq!(untrimmed_ascii("0x1\u{a0}"), None);
    for value in [0, 7, 10, 1_000, u64::MAX] {
        let mut text = String::new();
        record::push_decimal(&mut text, value);
        assert_eq!(text, value.to_string());
    }
}

/// The threaded path (`run`: lines read and records packed on the reading thread) against
/// reading line after line here: the same output and the same reports, on a trace with
/// every way a record can leave the reading thread's packed path (debug lines naming it, a
/// `thread` line, truncated records, records late for the window, duplicates, records cut by
/// a batch's end, unusual lines, the clock not yet known).
#[test]
fn records_packed_by_the_reading_thread_convert_as_read_line_by_line() {
    let mut input = String::new();
    // Debug lines name every record that retires, not the squashed ones.
    synth::Synth::new(3_000, 7).for_each_line(|line| {
        input.push_str(line);
        input.push('\n');
    });
    let mut seq = 3_001;
    let mut at = 1_000;
    let end = input.len() + 700_000;
    while input.len() < end {
        let t = |k: u64| (at + k) * 1000;
        let text = match seq % 97 {
            0 => format!(
                "O3PipeView:fetch:{}:0x20:0:{seq}:nop\nO3PipeView:decode:{}\n",
                t(0),
                t(1)
            ),
            1 => simple(seq, at).replacen('\n', &format!("\nO3PipeView:thread:{}:2\n", t(0)), 1),
            2 => simple(seq - 60, at),
            3 => simple(seq - 1, at),
            4 => format!(
                "O3PipeView:fetch:{}:0x20:0:{seq}:nop\nO3PipeView:frobnicate:1\n",
                t(0)
            ),
            5 => record(seq, [t(0), t(1) + 250, t(2), t(3), t(4), t(5), t(6)]),
            // Replaced by a byte that is not UTF-8 below.
            6 => simple(seq, at).replacen("addi", "add\u{1}", 1),
            _ => simple(seq, at),
        };
        input.push_str(&text);
        seq += 1;
        at += 1;
    }
    let input: Vec<u8> = input
        .into_bytes()
        .into_iter()
        .map(|b| if b == 1 { 0xff } else { b })
        .collect();
    let mut seen = BTreeSet::new();
    for options in [
        Gem5Options::default(),
        Gem5Options {
            window: 40,
            ..Gem5Options::default()
        },
        Gem5Options {
            ticks_per_cycle: Some(1_000),
            ..Gem5Options::default()
        },
        deps(),
    ] {
        let one_by_one = convert_bytes(&input, options.clone());
        let mut diag = Diagnostics::new(usize::MAX, false);
        let progress = Progress::new(false, None, "test", None);
        let (finished, lines) = super::run(
            Box::new(std::io::Cursor::new(input.clone())),
            WriterBuilder::new(),
            Vec::new(),
            options.clone(),
            &mut diag,
            &progress,
        )
        .unwrap();
        assert_eq!(lines, input.split(|&b| b == b'\n').count() as u64 - 1);
        let text = String::from_utf8(finished.output).unwrap();
        assert!(text == one_by_one.text, "{options:?}: the outputs differ");
        let reports = |diag: &Diagnostics| format!("{:?}", diag.rules());
        assert_eq!(reports(&diag), reports(&one_by_one.diag), "{options:?}");
        seen.extend(one_by_one.rules());
    }
    for rule in [Rule::G1, Rule::G2, Rule::G3, Rule::G4, Rule::G5] {
        assert!(seen.contains(&rule), "{rule:?} never reported");
    }
}

/// The fast parse of the reading thread, on lines made from pieces of record lines: whatever
/// it accepts, the general path (which reads a line as Konata does) reads the same way.
#[test]
fn the_fast_parse_agrees_with_the_general_one_on_every_line_it_accepts() {
    let pieces: [&[u8]; 24] = [
        b"fetch",
        b"decode",
        b"dispatch",
        b"rename",
        b"retire",
        b"issue",
        b"complete",
        b"store",
        b":",
        b":",
        b":",
        b"12",
        b"0",
        b"007",
        b"99999999999999999999",
        b"0x1f",
        b" ",
        b"\t",
        b"add a0, a1",
        b"\xc3\xa9",
        b"\xff",
        b"x",
        b"thread",
        b"",
    ];
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = |bound: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % bound as u64) as usize
    };
    let templates: [&[&[u8]]; 5] = [
        &[
            b"fetch",
            b":",
            b"12",
            b":",
            b"0x1f",
            b":",
            b"0",
            b":",
            b"007",
            b":",
            b"add a0, a1",
        ],
        &[b"decode", b":", b"12"],
        &[b"dispatch", b":", b"0"],
        &[b"retire", b":", b"12", b":", b"store", b":", b"007"],
        &[b"retire", b":", b"12"],
    ];
    let mut accepted = 0;
    for _ in 0..200_000 {
        // A record line, changed in a few places: a piece replaced, one put in, one left out.
        let mut line: Vec<&[u8]> = templates[next(templates.len())].to_vec();
        for _ in 0..next(3) {
            let at = next(line.len() + 1);
            match next(3) {
                0 if at < line.len() => line[at] = pieces[next(pieces.len())],
                1 => line.insert(at, pieces[next(pieces.len())]),
                _ if at < line.len() => {
                    line.remove(at);
                }
                _ => {}
            }
        }
        let body = line.concat();
        let Some(fast) = read::FastLine::parse(&body) else {
            continue;
        };
        accepted += 1;
        // As the general path reads a line (a stage line is accepted whatever follows its
        // tick, which nobody reads).
        let text = &*String::from_utf8_lossy(&body);
        let mut fields = text.split(':');
        let command = fields.next().unwrap_or("").trim();
        let tick = fields.clone().next().and_then(number);
        match fast {
            read::FastLine::Fetch {
                tick,
                address,
                upc,
                seq,
                disassembly,
            } => {
                let general = FetchLine::parse(text).expect("the general path reads it");
                assert_eq!(command, "fetch", "{text}");
                assert_eq!(
                    (tick, address, upc, seq, disassembly),
                    (
                        general.tick,
                        general.address,
                        general.upc,
                        general.seq,
                        general.disassembly
                    ),
                    "{text}"
                );
            }
            read::FastLine::Stage {
                command: fast_command,
                name,
                tick: fast_tick,
            } => {
                assert_eq!(command, fast_command, "{text}");
                assert_eq!(StageName::of_command(command), Some(name), "{text}");
                assert_eq!(tick, Some(fast_tick), "{text}");
            }
            read::FastLine::Retire {
                tick: fast_tick,
                store,
            } => {
                assert_eq!(command, "retire", "{text}");
                assert_eq!(tick, Some(fast_tick), "{text}");
                fields.next();
                assert_eq!(
                    store_ticks(fields),
                    store.into_iter().collect::<Vec<_>>(),
                    "{text}"
                );
            }
        }
    }
    assert!(accepted > 20_000, "only {accepted} lines accepted");
}
