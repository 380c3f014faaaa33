use std::io::Write;

use super::*;
use crate::output::canonical::{Dependency, Instruction, Instructions};
use crate::output::testing::{random_trace, Rng};

fn window(cycles: &str, insns: &str, threads: Option<&str>) -> Window {
    let mut w = Window::all();
    if !cycles.is_empty() {
        w.cycles = cycles.parse().unwrap();
    }
    if !insns.is_empty() {
        w.insns = insns.parse().unwrap();
    }
    w.threads = threads.map(|t| parse_threads(t).unwrap());
    w
}

/// The window of `text`, written in chunks of `chunk` bytes; skimming it as trusted text
/// gives the same bytes.
fn cut(text: &[u8], window: &Window, chunk: usize) -> Result<Finished<Vec<u8>>, Error> {
    let run = |trusted: bool| {
        let mut filter = WindowFilter::new(Vec::new(), window.clone(), usize::MAX);
        if trusted {
            filter = filter.trusted();
        }
        for part in text.chunks(chunk.max(1)) {
            filter.push(part)?;
        }
        filter.finish()
    };
    let checked = run(false)?;
    let skimmed = run(true).expect("canonical text skims as it reads");
    assert_eq!(checked.output, skimmed.output);
    Ok(checked)
}

fn read_all(text: &[u8]) -> Vec<Instruction> {
    Instructions::new(text)
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(text)))
}

/// What the window must hold: the instructions of the whole trace it keeps, renumbered,
/// with the dependencies on instructions it does not keep left out; and how many those are.
fn restricted(all: &[Instruction], window: &Window, start: i64) -> (Vec<Instruction>, u64) {
    let cycles = window.konata_cycles(start);
    let keeps = |insn: &Instruction| {
        window.insns.contains(insn.id)
            && window.keeps_thread(insn.thread)
            && cycles.end.is_none_or(|b| insn.begin < b)
            && cycles
                .start
                .is_none_or(|a| insn.end.is_none_or(|end| end >= a))
            && match (cycles.start, cycles.end) {
                (Some(a), Some(b)) => b > a,
                (_, Some(b)) => b > 0,
                _ => true,
            }
    };
    let kept: Vec<u64> = all.iter().filter(|i| keeps(i)).map(|i| i.id).collect();
    let mut dropped = 0;
    let out = all
        .iter()
        .filter(|i| keeps(i))
        .enumerate()
        .map(|(new, insn)| {
            let mut insn = insn.clone();
            insn.id = new as u64;
            insn.deps = insn
                .deps
                .iter()
                .filter_map(|d| match kept.binary_search(&d.producer) {
                    Ok(p) => Some(Dependency {
                        producer: p as u64,
                        kind: d.kind,
                    }),
                    Err(_) => {
                        dropped += 1;
                        None
                    }
                })
                .collect();
            insn
        })
        .collect();
    (out, dropped)
}

#[test]
fn window_ranges_read_as_documented() {
    let r: Bounds<u64> = "1_000..2k".parse().unwrap();
    assert_eq!((r.start, r.end), (Some(1000), Some(2000)));
    let r: Bounds<u64> = "12M..12.01M".parse().unwrap();
    assert_eq!((r.start, r.end), (Some(12_000_000), Some(12_010_000)));
    let r: Bounds<u64> = "1.5G..".parse().unwrap();
    assert_eq!((r.start, r.end), (Some(1_500_000_000), None));
    let r: Bounds<u64> = "..7".parse().unwrap();
    assert_eq!((r.start, r.end), (None, Some(7)));
    let r: Bounds<i64> = "-5k..-1".parse().unwrap();
    assert_eq!((r.start, r.end), (Some(-5000), Some(-1)));
    for (bad, why) in [
        ("5..5", "is empty"),
        ("9..3", "is empty"),
        ("..", "has no bounds"),
        ("12", "is not a range"),
        ("1.5..3", "not a whole number"),
        ("1.0001k..", "not a whole number"),
        ("_1..2", "between digits"),
        ("1__0..", "between digits"),
        ("0x10..", "expected digits"),
        ("-1..5", "cannot be negative"),
        ("1.k..", "after the point"),
        ("99999999999999999999..", "too large"),
    ] {
        let err = bad.parse::<Bounds<u64>>().unwrap_err().to_string();
        assert!(err.contains(why), "{bad}: {err}");
    }
    assert_eq!(parse_threads("2,0,2").unwrap(), vec![0, 2]);
    assert!(parse_threads("0,x")
        .unwrap_err()
        .to_string()
        .contains("`x`"));
}

#[test]
fn window_keeps_instructions_whole_with_the_cycles_of_the_trace() {
    // Instruction 0 lives over cycles 0..=6, 1 over 1..=2, 2 over 7..=9, 3 from 9 on.
    let text = b"Kanata\t0004\nC=\t100\nI\t0\t10\t0\nL\t0\t0\tadd\nS\t0\t0\tF\nC\t1\n\
                 I\t1\t11\t1\nS\t1\t0\tF\nW\t1\t0\t0\nC\t1\nE\t1\t0\tF\nR\t1\t0\t1\nC\t3\n\
                 E\t0\t0\tF\nS\t0\t0\tX\nL\t0\t2\tnote\nC\t1\nE\t0\t0\tX\nR\t0\t0\t0\n\
                 C\t1\nI\t2\t12\t0\nS\t2\t0\tX\nW\t2\t1\t0\nW\t2\t0\t0\nC\t2\nE\t2\t0\tX\nR\t2\t1\t0\n\
                 I\t3\t13\t1\nC\t4\n";
    assert_eq!(read_all(text).len(), 4);
    // [3, 10): 0 (ends at 6), 2 and 3 (never ends) are kept; 1 ended at 2.
    let got = cut(text, &window("3..10", "", None), 7).unwrap();
    assert_eq!(
        String::from_utf8(got.output).unwrap(),
        "Kanata\t0004\nC=\t100\nI\t0\t10\t0\nL\t0\t0\tadd\nS\t0\t0\tF\nC\t5\n\
         E\t0\t0\tF\nS\t0\t0\tX\nL\t0\t2\tnote\nC\t1\nE\t0\t0\tX\nR\t0\t0\t0\n\
         C\t1\nI\t1\t12\t0\nS\t1\t0\tX\nW\t1\t0\t0\nC\t2\nE\t1\t0\tX\nR\t1\t1\t0\n\
         I\t2\t13\t1\nC\t4\n"
    );
    assert_eq!(got.summary.instructions, 3);
    assert_eq!(got.summary.left_open, 1);
    assert_eq!(
        (got.summary.first_cycle, got.summary.last_cycle),
        (100, 113)
    );
    assert!(!got.stopped_early);
    // W 2 1: its producer (1) is outside the window.
    let w1 = &got.diagnostics.rules()[&Rule::W1];
    assert_eq!(w1.count, 1);
    assert_eq!(w1.examples[0].line, 23);

    // Threads: thread 1 alone is 1 and 3; 1's dependency on 0 goes.
    let got = cut(text, &window("", "", Some("1")), 3).unwrap();
    let insns = read_all(&got.output);
    assert_eq!(
        insns.iter().map(|i| i.sim_id).collect::<Vec<_>>(),
        vec![11, 13]
    );
    assert_eq!(got.diagnostics.rules()[&Rule::W1].count, 1);

    // Op ids [1, 3) stop at the R of 2, before instruction 3.
    let got = cut(text, &window("", "1..3", None), 1000).unwrap();
    assert!(got.stopped_early);
    let insns = read_all(&got.output);
    assert_eq!(
        insns
            .iter()
            .map(|i| (i.sim_id, i.begin, i.end))
            .collect::<Vec<_>>(),
        vec![(11, 1, Some(2)), (12, 7, Some(9))]
    );
    // The W 2 1 is between kept instructions: renumbered.
    assert_eq!(insns[1].deps[0].producer, 0);
}

#[test]
fn window_that_holds_nothing_is_a_valid_empty_trace() {
    let (text, all, start, last) = random_trace(3, None);
    let got = cut(&text, &window("", "100000..", None), 64).unwrap();
    let expected = format!("Kanata\t0004\nC=\t{start}\n");
    assert_eq!(String::from_utf8(got.output).unwrap(), expected);
    assert_eq!(got.summary.instructions, 0);
    // After the last cycle, only the instructions that never end are left.
    let open = all.iter().filter(|i| i.end.is_none()).count();
    assert!(open > 0);
    let got = cut(&text, &window(&format!("{}..", last + 5), "", None), 64).unwrap();
    assert_eq!(got.summary.instructions, open as u64);
    assert_eq!(got.summary.left_open, open as u64);
    // A simulator window that ends before the file starts.
    let mut w = Window::all();
    w.sim_cycles = Bounds {
        start: None,
        end: Some(start - 1),
    };
    let got = cut(&text, &w, 64).unwrap();
    assert_eq!(got.summary.instructions, 0);
    assert!(got.stopped_early);
}

#[test]
fn window_of_random_traces_is_the_trace_restricted() {
    let mut kept_total = 0;
    let mut early = 0;
    for seed in 0..400 {
        let (text, all, start, last) = random_trace(seed, None);
        let mut rng = Rng(seed + 77);
        for round in 0..6 {
            let mut w = Window::all();
            let pick = |rng: &mut Rng, n: u64| match rng.below(3) {
                0 => None,
                _ => Some(rng.below(n + 2)),
            };
            match rng.below(4) {
                0 => {
                    w.cycles = Bounds {
                        start: pick(&mut rng, last),
                        end: pick(&mut rng, last),
                    }
                }
                1 => {
                    let s = pick(&mut rng, last).map(|c| c as i64 + start - 1);
                    let e = pick(&mut rng, last).map(|c| c as i64 + start - 1);
                    w.sim_cycles = Bounds { start: s, end: e }
                }
                2 => {
                    w.insns = Bounds {
                        start: pick(&mut rng, all.len() as u64),
                        end: pick(&mut rng, all.len() as u64),
                    }
                }
                _ => {
                    w.threads = Some(vec![rng.below(4) as i64]);
                    w.cycles.start = pick(&mut rng, last);
                }
            }
            let chunk = 1 + rng.below(40) as usize;
            let got = cut(&text, &w, chunk)
                .unwrap_or_else(|e| panic!("seed {seed} round {round} {w:?}: {e}"));
            let (expected, dropped) = restricted(&all, &w, start);
            let out = read_all(&got.output);
            assert_eq!(out, expected, "seed {seed} round {round} {w:?}");
            let w1 = got
                .diagnostics
                .rules()
                .get(&Rule::W1)
                .map_or(0, |r| r.count);
            assert_eq!(w1, dropped, "seed {seed} round {round}");
            assert_eq!(got.summary.instructions, expected.len() as u64);
            // Cycles keep their numbers: the output starts as the input does.
            let mut insns = Instructions::new(&got.output[..]);
            for insn in insns.by_ref() {
                insn.unwrap();
            }
            assert_eq!(insns.start_cycle(), Some(start));
            if got.summary.left_open > 0 {
                assert_eq!(insns.last_cycle(), Some(last), "seed {seed} round {round}");
            }
            // The same window, in one piece, gives the same bytes.
            assert_eq!(cut(&text, &w, usize::MAX).unwrap().output, got.output);
            kept_total += expected.len();
            early += usize::from(got.stopped_early);
        }
    }
    assert!(kept_total > 2000, "{kept_total}");
    assert!(early > 100, "{early}");
}

#[test]
fn window_resumed_mid_file_gives_the_same_bytes() {
    // Start at every line where no instruction the window keeps has begun yet.
    for seed in 0..120 {
        let (text, all, start, last) = random_trace(seed, None);
        let w = window(&format!("{}..{}", last / 2, last / 2 + 3), "", None);
        let whole = cut(&text, &w, usize::MAX).unwrap();
        let cycles = w.konata_cycles(start);
        let first_kept = all
            .iter()
            .find(|i| {
                cycles.end.is_none_or(|b| i.begin < b)
                    && i.end.is_none_or(|e| e >= cycles.start.unwrap())
            })
            .map(|i| i.id);
        let mut parser = LineParser::new();
        let mut next_id = 0;
        let mut offset = 0;
        for line in text.split_inclusive(|&b| b == b'\n') {
            if parser.lines() >= 2 && first_kept.is_none_or(|k| next_id <= k) {
                let mut filter = WindowFilter::resume(
                    Vec::new(),
                    w.clone(),
                    usize::MAX,
                    parser.position(),
                    next_id,
                )
                .unwrap();
                filter.write_all(&text[offset..]).unwrap();
                let got = filter.finish().unwrap();
                assert_eq!(
                    got.output,
                    whole.output,
                    "seed {seed} at line {}",
                    parser.lines()
                );
            }
            offset += line.len();
            if let Some(event) = parser.line(&line[..line.len() - 1]).unwrap() {
                if let Command::Insn { .. } = event.command {
                    next_id += 1;
                }
            }
        }
    }
}

#[test]
fn window_errors_name_the_line() {
    let w = window("1..2", "", None);
    let err = cut(b"Kanata\t0004\nC=\t0\nI\t1\t0\t0\n", &w, 5).unwrap_err();
    assert_eq!(err.line(), Some(3));
    assert!(err.to_string().contains("expected instruction 0"), "{err}");
    let err = cut(b"Kanata\t0004\nC=\t0\nI\t0\t0\t0", &w, 5).unwrap_err();
    assert!(err.to_string().contains("does not end with LF"), "{err}");
    let err = cut(b"Kanata\t0004\nC=\t0\nX\n", &w, 5).unwrap_err();
    assert_eq!(err.line(), Some(3));
    let err = cut(b"", &w, 5).unwrap_err();
    assert!(err.to_string().contains("empty"), "{err}");
}
