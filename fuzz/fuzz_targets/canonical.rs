//! The reader of canonical Kanata on arbitrary bytes: `LineParser` at its three depths
//! (`line`, `skim`, `skim_stages`), `CanonicalReader` and `Instructions`, and the one-pass
//! reading of common lines against the checked parser; `read_each` against `next_command`;
//! `SegmentReader`'s columns against
//! the segments of `Instructions`.
#![no_main]

use kanata_pp::output::canonical::{CanonicalReader, Instructions, LineParser};
use kanata_pp::output::segments::SegmentReader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The three depths, a line at a time. What `line` accepts (every field checked) the
    // lighter ones accept too, and all three keep the same count of lines and cycles.
    let mut full = LineParser::new();
    let mut skim = LineParser::new();
    let mut stages = LineParser::new();
    let mut all_lines = true;
    let body = data.strip_suffix(b"\n").unwrap_or(data);
    let lines = body
        .split(|&b| b == b'\n')
        .take(if data.is_empty() { 0 } else { usize::MAX });
    for line in lines {
        assert!(
            kanata_pp::fuzzing::common_line_agrees(line),
            "the common-line reading disagrees with the checked parser"
        );
        let checked = full.line(line).map(|_| ());
        let skimmed = skim.skim(line).map(|_| ());
        let staged = stages.skim_stages(line).map(|_| ());
        if checked.is_ok() {
            assert!(
                skimmed.is_ok(),
                "line accepts, skim does not: {:?}",
                skimmed.err()
            );
            assert!(
                staged.is_ok(),
                "line accepts, skim_stages does not: {:?}",
                staged.err()
            );
            assert_eq!(full.cycle(), skim.cycle());
            assert_eq!(full.cycle(), stages.cycle());
            assert_eq!(full.lines(), skim.lines());
            assert_eq!(full.lines(), stages.lines());
        } else {
            all_lines = false;
            break;
        }
    }
    let _ = full.finish();

    // The reader of whole lines stops at the first error.
    let mut reader = CanonicalReader::new(data);
    let mut read_all = false;
    for _ in 0..=data.len() + 1 {
        match reader.next_command() {
            Ok(Some(_)) => {}
            Ok(None) => {
                read_all = true;
                break;
            }
            Err(err) => {
                assert!(!err.to_string().is_empty());
                break;
            }
        }
    }
    if read_all {
        assert!(
            all_lines,
            "the reader accepts what the line parser does not"
        );
    }

    // Reading a buffer at a time (`read_each`, stopped now and then) gives the events and
    // the first error of reading a line at a time, over a small buffer and a whole one.
    let mut one_by_one = Vec::new();
    let mut reader = CanonicalReader::new(data);
    for _ in 0..=data.len() + 1 {
        match reader.next_command() {
            Ok(Some(event)) => one_by_one.push(format!("{event:?}")),
            Ok(None) => break,
            Err(err) => {
                one_by_one.push(err.to_string());
                break;
            }
        }
    }
    for capacity in [5, 1 << 16] {
        let mut reader = CanonicalReader::new(std::io::BufReader::with_capacity(capacity, data));
        let mut each = Vec::new();
        for _ in 0..=data.len() + 1 {
            match reader.read_each(|event| {
                each.push(format!("{event:?}"));
                Ok(each.len() % 5 != 0)
            }) {
                Ok(true) => {}
                Ok(false) => break,
                Err(err) => {
                    each.push(err.to_string());
                    break;
                }
            }
        }
        assert_eq!(each, one_by_one, "read_each differs from next_command");
    }

    // Whole instructions: at most one per `I` line, then the end (after an error too).
    let mut insns = Instructions::new(data);
    let mut whole = true;
    let mut yielded = 0usize;
    let mut segments = Vec::new();
    let mut first_error = None;
    for insn in insns.by_ref() {
        match insn {
            Ok(insn) => {
                yielded += 1;
                for s in insn.stages {
                    segments.push((
                        insn.id,
                        insn.thread,
                        s.lane,
                        s.name.to_string(),
                        s.start,
                        s.end,
                        s.notes,
                    ));
                }
            }
            Err(err) => {
                whole = false;
                first_error.get_or_insert(err.to_string());
            }
        }
        assert!(
            yielded <= data.len() / 2 + 1,
            "more instructions than lines"
        );
    }
    assert!(insns.next().is_none());

    // The columns: the same rows, or the same first error; on two threads, the same as on
    // one.
    let one = SegmentReader::new(data).read_all();
    let two = SegmentReader::new(std::io::BufReader::with_capacity(16, data))
        .read_all_on_two_threads();
    match (&one, &two) {
        (Ok(one), Ok(two)) => assert_eq!(one, two, "two threads give other rows"),
        (Err(one), Err(two)) => assert_eq!(one.to_string(), two.to_string()),
        _ => panic!("two threads differ from one: {one:?} against {two:?}"),
    }
    match one {
        Ok(c) => {
            assert!(whole, "SegmentReader accepts what Instructions does not");
            let rows: Vec<_> = (0..c.len())
                .map(|r| {
                    (
                        c.id[r],
                        c.thread[r],
                        c.lane[r],
                        c.stage_names[c.stage[r] as usize].clone(),
                        c.start[r],
                        c.end_of(r),
                        c.notes_of(r).to_owned(),
                    )
                })
                .collect();
            assert_eq!(
                rows, segments,
                "SegmentReader's rows are not Instructions' segments"
            );
        }
        Err(err) => assert_eq!(Some(err.to_string()), first_error, "a different error"),
    }
    if whole {
        assert!(
            read_all,
            "Instructions accepts what CanonicalReader does not"
        );
    }
});
