//! Tests of the RSD converter on small raw logs, one behaviour of RSD's converter each
//! (`shared/spec/rsd-raw.md` §2), and of the cases where it crashes (§4).

use super::*;

/// One `S` line: stage, stall, clear, serial, comment.
fn s(stage: u8, stall: u8, clear: u8, sid: u32, comment: &str) -> String {
    format!("S\t{stage}\t1\t{stall}\t{clear}\t{sid}\t0\t{comment}")
}

/// One `L` line: serial, pc, instruction word.
fn l(sid: u32, pc: u32, insn: u32) -> String {
    format!("L\t{sid}\t0\t{pc:08x}\t{insn:08x}")
}

/// A raw log: the dumper's header and comments, then each cycle's lines after its `C`.
fn log(cycles: &[Vec<String>]) -> String {
    let mut text = String::from(
        "RSD_Kanata\t0000\n#\tS:\n#\tstage_id\tvalid\tstall\tclear\tiid\tmid\n#\tL:\n\
         #\tiid\tmid\tpc\tcode\n",
    );
    for (cycle, lines) in cycles.iter().enumerate() {
        text.push_str(&format!("C\t{:>11}\n#\tcycle:{cycle}\n", 1));
        for line in lines {
            text.push_str(line);
            text.push('\n');
        }
    }
    text
}

fn converter(options: RsdOptions) -> Box<RsdConverter<Vec<u8>>> {
    Box::new(
        RsdConverter::new(
            WriterBuilder::new(),
            Vec::new(),
            options,
            &Repairs::default(),
        )
        .unwrap(),
    )
}

fn convert_with(raw: &str, options: RsdOptions) -> (String, Diagnostics) {
    let mut diag = Diagnostics::new(usize::MAX, false);
    let mut converter = converter(options);
    for (n, line) in raw.split('\n').enumerate() {
        converter
            .line(line.as_bytes(), n as u64 + 1, &mut diag)
            .unwrap();
    }
    let output = converter.finish(&mut diag).unwrap().output;
    (String::from_utf8(output).unwrap(), diag)
}

fn convert(raw: &str) -> (String, Diagnostics) {
    convert_with(raw, RsdOptions::default())
}

/// The output without its header, as `|`-separated lines (TABs as spaces), for compact
/// expectations.
fn body(text: &str) -> String {
    text.strip_prefix("Kanata\t0004\nC=\t-1\n")
        .unwrap()
        .trim_end()
        .replace('\t', " ")
        .replace('\n', " | ")
}

fn count(diag: &Diagnostics, rule: Rule) -> u64 {
    diag.rules().get(&rule).map_or(0, |r| r.count)
}

fn messages(diag: &Diagnostics, rule: Rule) -> Vec<(u64, String)> {
    diag.rules().get(&rule).map_or_else(Vec::new, |r| {
        r.examples
            .iter()
            .map(|e| (e.line, e.message.clone()))
            .collect()
    })
}

#[test]
fn an_op_through_the_pipeline_retires_one_cycle_after_commit() {
    let raw = log(&[
        vec![s(0, 0, 0, 1, "")],
        vec![s(1, 0, 0, 1, "")],
        vec![
            s(3, 0, 0, 1, "Br-pred-miss-id\\n"),
            l(1, 0x1000, 0x0100_006f),
        ],
        vec![s(14, 0, 0, 1, "")],
    ]);
    let (text, diag) = convert(&raw);
    assert_eq!(diag.total(), 0);
    assert_eq!(
        body(&text),
        "C 1 | I 0 4 0 | L 0 1 (g:4,c0)\\n | S 0 0 Np | C 1 | E 0 0 Np | S 0 0 F | C 1 | \
         E 0 0 F | S 0 0 Dc | L 0 1 Br-pred-miss-id\\n | L 0 2 Br-pred-miss-id\\n | \
         L 0 0 00001000: jal zero, 0x10 | C 1 | E 0 0 Dc | S 0 0 Cm | C 1 | E 0 0 Cm | \
         R 0 0 0"
    );
}

#[test]
fn a_stall_opens_stl_before_the_stage_and_ends_with_a_restart_of_the_stage() {
    let raw = log(&[
        vec![s(0, 0, 0, 1, "")],
        vec![s(1, 1, 0, 1, "i-cache-miss\\n")],
        vec![s(1, 1, 0, 1, "i-cache-miss\\n")],
        vec![s(1, 0, 0, 1, "")],
        vec![s(2, 0, 0, 1, "optype:0b0\\n")],
    ]);
    let (text, _) = convert(&raw);
    // STALL_BEGIN is queued before the stage change (order b, then c), and the end of a
    // stall restarts the stage so that the new line's comment is shown.
    assert_eq!(
        body(&text),
        "C 1 | I 0 4 0 | L 0 1 (g:4,c0)\\n | S 0 0 Np | C 1 | S 0 1 stl | E 0 0 Np | \
         S 0 0 F | L 0 1 i-cache-miss\\n | L 0 2 i-cache-miss\\n | C 2 | E 0 1 stl | E 0 0 F | \
         S 0 0 F | C 1 | E 0 0 F | S 0 0 Pd | L 0 1 optype:0b0\\n | L 0 2 optype:0b0\\n"
    );
}

#[test]
fn a_fetch_flushed_straight_from_np_never_appears() {
    let raw = log(&[
        vec![s(0, 0, 0, 1, ""), s(0, 0, 0, 2, "")],
        vec![s(1, 0, 0, 1, ""), s(1, 0, 1, 2, "")],
        vec![s(2, 0, 0, 1, "")],
    ]);
    let (text, diag) = convert(&raw);
    assert_eq!(diag.total(), 0);
    assert!(!text.contains("\t8\t0\n"), "{text}");
    assert_eq!(text.matches("\nI\t").count(), 1);
}

#[test]
fn a_decode_flush_writes_rid_0_and_its_label_moves_before_the_r() {
    let raw = log(&[
        vec![s(0, 0, 0, 1, ""), s(0, 0, 0, 2, "")],
        vec![s(1, 0, 0, 1, ""), s(1, 0, 0, 2, "")],
        vec![
            s(3, 0, 0, 1, "Br-pred-miss-id\\n"),
            s(3, 0, 1, 2, ""),
            l(1, 0x1000, 0x0100_006f),
            l(2, 0x1004, 0x13),
        ],
    ]);
    let (text, diag) = convert(&raw);
    assert_eq!(diag.total(), 0);
    // RSD's converter writes `R 1 0 1` and then `L 1 0 …`; Konata applies the label anyway.
    assert!(text.contains(
        "E\t1\t0\tDc\nL\t1\t0\t00001004: addi zero, zero, 0x0\nR\t1\t0\t1\nL\t0\t0\t00001000"
    ));
}

#[test]
fn events_are_held_back_three_cycles() {
    let mut converter = converter(RsdOptions::default());
    let mut diag = Diagnostics::new(5, false);
    let raw = log(&[
        vec![s(0, 0, 0, 1, "")],
        vec![s(1, 0, 0, 1, "")],
        vec![s(2, 0, 0, 1, "")],
        vec![s(3, 0, 0, 1, "")],
        vec![s(4, 0, 0, 1, "")],
    ]);
    for (n, line) in raw.lines().enumerate() {
        converter
            .line(line.as_bytes(), n as u64 + 1, &mut diag)
            .unwrap();
    }
    // At cycle 4, cycles 0 and 1 are written; 2, 3 and 4 wait.
    assert_eq!(
        converter.pending.keys().copied().collect::<Vec<_>>(),
        [2, 3, 4]
    );
    assert_eq!(converter.out_cycle, 1);
}

#[test]
fn the_10_bit_serial_is_unwrapped_around_the_largest_retired_gid() {
    let mut converter = converter(RsdOptions::default());
    assert_eq!(converter.gid(5, 0), 20);
    // Serials above 768 before anything retired get negative gids (RSD's quirk).
    assert_eq!(converter.gid(1000, 0), 4000 - 4096);
    converter.max_retired = 4000;
    assert_eq!(converter.gid(1000, 1), 4001);
    assert_eq!(converter.gid(5, 0), 4096 + 20);
    converter.max_retired = 4096 + 20;
    assert_eq!(converter.gid(1020, 0), 4080);
    assert_eq!(converter.gid(6, 3), 4096 + 27);
}

#[test]
fn negative_gids_are_written_as_simulator_ids() {
    let raw = log(&[vec![s(0, 0, 0, 1000, "")], vec![s(1, 0, 0, 1000, "")]]);
    let (text, _) = convert(&raw);
    assert!(
        text.contains("I\t0\t-96\t0\nL\t0\t1\t(g:-96,c0)\\n\n"),
        "{text}"
    );
}

#[test]
fn a_retirement_of_a_gid_multiple_of_64_drops_older_ops_and_their_queued_events() {
    // Op 16 (gid 64) retires at cycle 2 (its R is queued at 3); op 15 (gid 60), older, is
    // still in F and moves to Pd at cycle 4, but RSD's garbage collection dropped it at the
    // release of cycle 3.
    let raw = log(&[
        vec![s(0, 0, 0, 15, ""), s(0, 0, 0, 16, "")],
        vec![s(1, 0, 0, 15, ""), s(1, 0, 0, 16, "")],
        vec![s(1, 0, 0, 15, ""), s(14, 0, 0, 16, "")],
        vec![s(1, 0, 0, 15, "")],
        vec![s(2, 0, 0, 15, "")],
        vec![s(3, 0, 0, 15, "")],
        vec![],
        vec![],
        vec![],
    ]);
    let (text, diag) = convert(&raw);
    // RSD's converter warns at each line of op 15 after op 16 retired.
    assert_eq!(count(&diag, Rule::R3), 3, "{:?}", diag.rules());
    assert_eq!(diag.total(), 3);
    assert!(text.contains("R\t1\t0\t0\n"));
    // Op 15 is left in F, open, as RSD's converter leaves it.
    assert!(!text.contains("S\t0\t0\tPd"), "{text}");
    assert!(!text.contains("R\t0\t"), "{text}");
}

#[test]
fn retire_ids_are_serial_over_retirements_and_flushes_get_0() {
    let raw = log(&[
        vec![s(0, 0, 0, 1, ""), s(0, 0, 0, 2, "")],
        vec![s(1, 0, 0, 1, ""), s(1, 0, 0, 2, "")],
        vec![s(14, 0, 0, 1, ""), s(1, 0, 1, 2, "")],
        vec![s(0, 0, 0, 3, "")],
        vec![s(1, 0, 0, 3, "")],
        vec![s(14, 0, 0, 3, "")],
    ]);
    let (text, _) = convert(&raw);
    assert!(text.contains("R\t1\t0\t1\n"), "{text}");
    assert!(text.contains("R\t0\t0\t0\n"), "{text}");
    assert!(text.contains("R\t2\t1\t0\n"), "{text}");
}

#[test]
fn the_older_disassembler_writes_stores_as_rsd_did_before_2023() {
    let raw = log(&[
        vec![s(0, 0, 0, 1, "")],
        vec![s(3, 0, 0, 1, ""), l(1, 0x1024, 0x00c1_2023)],
    ]);
    let (text, _) = convert(&raw);
    assert!(text.contains("00001024: sw a2, 0x0(sp)"), "{text}");
    let older = RsdOptions {
        disasm: Syntax::Before2023,
    };
    let (text, _) = convert_with(&raw, older);
    assert!(text.contains("00001024: sw a2, sp, 0x0"), "{text}");
}

#[test]
fn the_first_l_of_an_op_gives_its_label_and_later_ones_are_ignored() {
    let raw = log(&[
        vec![s(3, 1, 0, 1, ""), l(1, 0x1000, 0x13)],
        vec![s(3, 0, 0, 1, ""), l(1, 0x1000, 0x6f)],
    ]);
    let (text, _) = convert(&raw);
    assert_eq!(text.matches("\nL\t0\t0\t").count(), 1);
    assert!(text.contains("L\t0\t0\t00001000: addi zero, zero, 0x0\n"));
}

// ----- the cases where RSD's converter stops or crashes (rsd-raw.md §4) -----

#[test]
fn an_l_for_an_op_not_in_flight_is_reported_and_skipped() {
    let raw = log(&[vec![s(0, 0, 0, 1, "")], vec![l(7, 0x1000, 0x13)]]);
    let (text, diag) = convert(&raw);
    assert_eq!(count(&diag, Rule::R2), 1);
    assert_eq!(messages(&diag, Rule::R2)[0].0, 11);
    assert!(!text.contains("\nL\t0\t0\t"));
}

#[test]
fn a_flush_of_an_op_never_seen_is_reported_and_drawn_in_its_stage() {
    let raw = log(&[vec![s(0, 0, 0, 1, "")], vec![s(9, 0, 1, 5, "")]]);
    let (text, diag) = convert(&raw);
    assert_eq!(count(&diag, Rule::R2), 1);
    assert!(
        text.contains("I\t1\t20\t0\nL\t1\t1\t(g:20,c0)\\n\nS\t1\t0\tX\nE\t1\t0\tX\nR\t1\t0\t1\n")
    );
}

#[test]
fn malformed_lines_are_reported_and_conversion_goes_on() {
    let mut raw = log(&[vec![s(0, 0, 0, 1, "")], vec![s(1, 0, 0, 1, "")]]);
    for line in [
        "#comment",                 // `#` must be a field of its own
        "X\t1",                     // unknown command
        "S\t1\t1\t0",               // too few fields
        "S\t1\ty\t0\t0\t1\t0\t",    // valid not a number
        "S\t1\t1\t0\t0\tone\t0\t",  // serial not a number
        "S\t15\t1\t0\t0\t1\t0\t",   // stage beyond Cm
        "S\t1\t1\t0\t0\t1\t4\t",    // mid 4: RSD_ParserError
        "S\t1\t1\t0\t0\t1024\t0\t", // serial beyond 10 bits
        "L\t1\t0\t00001000",        // no instruction word
        "C",                        // no delta
    ] {
        raw.push_str(line);
        raw.push('\n');
    }
    raw.push_str(&format!("{}\n", s(2, 0, 0, 1, "")));
    raw.push_str("S\t1\tx\t0\t0\t1\t0\t\nS\t1\t0\t0\t0\t1\t0\t\n");
    let (text, diag) = convert(&raw);
    assert_eq!(
        count(&diag, Rule::R1),
        10,
        "{:?}",
        messages(&diag, Rule::R1)
    );
    assert_eq!(diag.total(), 10);
    // The line after them is converted; invalid slots (`x`, 0) are not lines to convert.
    assert!(text.contains("S\t0\t0\tPd"), "{text}");
}

#[test]
fn a_missing_or_odd_header_is_reported() {
    let raw = log(&[vec![s(0, 0, 0, 1, "")]]);
    let (_, diag) = convert(&raw.replace("RSD_Kanata\t0000", "RSD_Kanata\t0001"));
    assert_eq!(count(&diag, Rule::R1), 1);
    let headless = raw.split_once('\n').unwrap().1;
    let (text, diag) = convert(headless);
    assert_eq!(count(&diag, Rule::R1), 1);
    assert!(text.contains("S\t0\t0\tNp"));
    let (_, diag) = convert(&format!("\u{feff}{raw}"));
    assert_eq!(diag.total(), 0);
}

#[test]
fn an_s_line_without_its_comment_field_is_read_with_an_empty_comment() {
    let raw = log(&[
        vec![s(0, 0, 0, 1, "")],
        vec!["S\t1\t1\t0\t0\t1\t0".to_owned()],
    ]);
    let (text, diag) = convert(&raw);
    assert_eq!(count(&diag, Rule::R2), 1);
    assert!(text.contains("S\t0\t0\tF\n"));
}

#[test]
fn invalid_utf8_is_replaced_and_reported() {
    let raw = log(&[vec![s(0, 0, 0, 1, "caf\u{e9}")]]);
    let mut bytes = raw.into_bytes();
    let at = bytes
        .windows(2)
        .position(|w| w == "\u{e9}".as_bytes())
        .unwrap();
    bytes[at] = 0xff;
    bytes.remove(at + 1);
    let mut diag = Diagnostics::new(5, false);
    let mut converter = converter(RsdOptions::default());
    for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
        converter.line(line, n as u64 + 1, &mut diag).unwrap();
    }
    let text = String::from_utf8(converter.finish(&mut diag).unwrap().output).unwrap();
    assert_eq!(count(&diag, Rule::R2), 1);
    assert!(text.contains("L\t0\t1\tcaf\u{fffd}\n"));
}

#[test]
fn the_floating_point_word_rsds_disassembler_fails_on_is_reported() {
    let raw = log(&[vec![s(3, 0, 0, 1, ""), l(1, 0x2000, 0x2020_b1d3)]]);
    let (text, diag) = convert(&raw);
    assert_eq!(count(&diag, Rule::R2), 1);
    assert!(text.contains("L\t0\t0\t00002000: Unknownft3, ft1, ft2\n"));
}

#[test]
fn a_retirement_of_an_op_already_collected_is_reported() {
    // Ops 17 (gid 68) and 16 (gid 64) commit in the same cycle, 17 first.
    let raw = log(&[
        vec![s(0, 0, 0, 16, ""), s(0, 0, 0, 17, "")],
        vec![s(1, 0, 0, 17, ""), s(1, 0, 0, 16, "")],
        vec![s(14, 0, 0, 17, ""), s(14, 0, 0, 16, "")],
    ]);
    let (text, diag) = convert(&raw);
    // Committing out of order is warned about (R3), but gid 68's retirement comes first,
    // and 64's collects nothing older that is still queued.
    assert_eq!(count(&diag, Rule::R3), 1);
    assert_eq!(count(&diag, Rule::R2), 0);
    assert_eq!(text.matches("\nR\t").count(), 2);
    // The other order: 64 retires first and collects 60, whose retirement follows.
    let raw = log(&[
        vec![s(0, 0, 0, 15, ""), s(0, 0, 0, 16, "")],
        vec![s(1, 0, 0, 15, ""), s(1, 0, 0, 16, "")],
        vec![s(14, 0, 0, 16, ""), s(14, 0, 0, 15, "")],
    ]);
    let (text, diag) = convert(&raw);
    assert_eq!(count(&diag, Rule::R2), 1, "{:?}", diag.rules());
    assert_eq!(count(&diag, Rule::R3), 1, "{:?}", diag.rules());
    assert_eq!(text.matches("\nR\t").count(), 1);
}

// ----- what RSD's converter warns about, and what Konata would apply after the end -----

#[test]
fn an_op_dumped_again_after_its_flush_is_reported_and_what_follows_its_r_dropped() {
    let raw = log(&[
        vec![s(0, 0, 0, 1, "")],
        vec![s(1, 0, 0, 1, "")],
        vec![s(2, 0, 1, 1, "")],
        vec![s(2, 0, 1, 1, "")],
        vec![s(3, 0, 0, 1, "")],
        vec![],
        vec![],
        vec![],
    ]);
    let (text, diag) = convert(&raw);
    assert_eq!(count(&diag, Rule::R3), 1, "{:?}", diag.rules());
    // `E Pd` and `S Dc` after `R 0 0 1`: Konata would apply them.
    assert_eq!(count(&diag, Rule::R4), 2, "{:?}", messages(&diag, Rule::R4));
    assert!(text.ends_with("R\t0\t0\t1\nC\t2\n"), "{text}");
}

#[test]
fn an_op_deleted_by_an_np_flush_and_seen_again_is_defined_twice() {
    let raw = log(&[
        vec![s(0, 0, 0, 1, "")],
        vec![s(0, 0, 0, 1, "")],
        vec![s(0, 0, 0, 1, "")],
        vec![s(0, 0, 0, 1, "")],
        vec![s(1, 0, 1, 1, "")],
        vec![s(1, 0, 0, 1, "")],
    ]);
    let (text, diag) = convert(&raw);
    assert_eq!(count(&diag, Rule::R3), 1, "{:?}", diag.rules());
    // One instruction, whose detail label is written twice (RSD writes a second `I`, which
    // Konata ignores, and the label, which it appends).
    assert_eq!(text.matches("\nI\t").count(), 1);
    assert_eq!(text.matches("L\t0\t1\t(g:4,c0)\\n\n").count(), 2);
}

#[test]
fn an_e_of_a_stage_closed_cycles_ago_is_dropped_but_one_of_the_same_cycle_is_not() {
    let mut converter = converter(RsdOptions::default());
    let mut diag = Diagnostics::new(5, false);
    let event = |kind, stage| Event {
        gid: 4,
        line: 1,
        kind,
        stage,
        text: (0, 0),
    };
    converter.on_cycle(0).unwrap();
    for (kind, stage) in [(Kind::Init, 1), (Kind::StageBegin, 1)] {
        converter
            .on_event(&event(kind, stage), "", &mut diag)
            .unwrap();
    }
    converter.on_cycle(1).unwrap();
    for (kind, stage) in [
        (Kind::StageEnd, 1),
        (Kind::StageBegin, 2),
        (Kind::StageEnd, 1),
    ] {
        converter
            .on_event(&event(kind, stage), "", &mut diag)
            .unwrap();
    }
    assert_eq!(diag.total(), 0);
    // An `E` of a stage never entered is ignored by Konata too.
    converter
        .on_event(&event(Kind::StageEnd, 9), "", &mut diag)
        .unwrap();
    assert_eq!(diag.total(), 0);
    converter.on_cycle(2).unwrap();
    converter
        .on_event(&event(Kind::StageEnd, 1), "", &mut diag)
        .unwrap();
    assert_eq!(count(&diag, Rule::R4), 1);
    let text = String::from_utf8(converter.finish(&mut diag).unwrap().output).unwrap();
    assert_eq!(
        body(&text),
        "C 1 | I 0 4 0 | L 0 1 (g:4,c0)\\n | S 0 0 F | C 1 | E 0 0 F | S 0 0 Pd | C 1"
    );
}

#[test]
fn a_label_later_than_the_window_is_reported_and_dropped() {
    let mut raw = log(&[
        vec![s(0, 0, 0, 1, "")],
        vec![s(1, 0, 0, 1, "")],
        vec![s(3, 0, 1, 1, "")],
    ]);
    // 70 idle cycles, then the op's first `L` (after its flush, 71 cycles late).
    for cycle in 3..73 {
        raw.push_str(&format!("C\t1\n#\tcycle:{cycle}\n"));
    }
    raw.push_str(&l(1, 0x1000, 0x13));
    let (text, diag) = convert(&raw);
    assert!(
        messages(&diag, Rule::R4)
            .iter()
            .any(|(_, m)| m.contains("--late-window")),
        "{:?}",
        diag.rules()
    );
    assert!(!text.contains("\nL\t0\t0\t"));
}

// ----- memory -----

/// A long run in which RSD's own garbage collection never runs: every op with a serial
/// multiple of 16 (a gid multiple of 64) is flushed, never retired, and flushed ops stay in
/// RSD's map. The sweep keeps the maps bounded anyway.
#[test]
fn memory_stays_bounded_when_rsds_garbage_collection_never_runs() {
    let mut converter = converter(RsdOptions::default());
    let mut diag = Diagnostics::new(5, false);
    let mut lineno = 0;
    let mut feed = |converter: &mut RsdConverter<Vec<u8>>, line: String| {
        lineno += 1;
        converter.line(line.as_bytes(), lineno, &mut diag).unwrap();
    };
    feed(&mut converter, "RSD_Kanata\t0000".to_owned());
    let mut peak = 0;
    for cycle in 0..60_000u32 {
        feed(&mut converter, "C\t1".to_owned());
        // Op n is in Np at cycle n, F at n + 1, and commits (or is flushed) at n + 2.
        let sid = |n: u32| (n + 1) % 1024;
        feed(&mut converter, s(0, 0, 0, sid(cycle), ""));
        if cycle >= 1 {
            feed(&mut converter, s(1, 0, 0, sid(cycle - 1), ""));
        }
        if cycle >= 2 {
            let op = cycle - 2;
            let line = if sid(op) % 16 == 0 {
                s(13, 0, 1, sid(op), "")
            } else {
                s(14, 0, 0, sid(op), "")
            };
            feed(&mut converter, line);
        }
        peak = peak.max(converter.ops.len() + converter.out_ops.len());
        assert!(converter.pending.len() <= 5);
        assert!(converter.flushed.len() <= 2);
    }
    assert!(peak < 3 * SWEEP_MIN, "{peak}");
    let finished = converter.finish(&mut diag).unwrap();
    assert_eq!(diag.total(), 0, "{:?}", diag.rules());
    assert!(finished.summary.retired > 50_000);
    assert!(finished.summary.flushed > 3_000);
}
