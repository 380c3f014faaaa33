//! Round trips through the seekable writer and the index reader, on random traces.

use std::collections::BTreeSet;
use std::io::{Read, Seek, SeekFrom, Write};

use kanata_writer::{InsnId, LabelKind, Lane, Stage, WriterBuilder};

use super::*;
use crate::output::canonical::{Command, Instructions};
use crate::output::seekable::{SeekableWriter, DEFAULT_FRAME_SIZE};

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random canonical trace: instructions with lives of random length (some very long, some
/// never ending), labels, stalls, flushes.
fn random_trace(seed: u64, insns: u64) -> Vec<u8> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut w = WriterBuilder::new()
        .start_cycle(rng.below(2001) as i64 - 1000)
        .compact(rng.below(2) == 1)
        .from_writer(Vec::new())
        .unwrap();
    let stages: Vec<Stage> = ["F", "D", "X", "Mem", "Cm"]
        .iter()
        .map(|n| w.stage(n).unwrap())
        .collect();
    // (instruction, the cycle it ends at, or never)
    let mut live: Vec<(InsnId, Option<u64>)> = Vec::new();
    let mut cycle = 0u64;
    let mut begun = 0;
    while begun < insns || !live.is_empty() {
        if begun < insns {
            for _ in 0..rng.below(4) {
                let insn = w.begin(rng.below(1 << 20), rng.below(3) as u32).unwrap();
                begun += 1;
                w.label(insn, LabelKind::Name, "0x1000: addi x1, x2, 3")
                    .unwrap();
                w.enter(insn, Lane::MAIN, stages[0]).unwrap();
                let life = match rng.below(50) {
                    0 => None,
                    1 => Some(cycle + 200 + rng.below(400)),
                    _ => Some(cycle + rng.below(12)),
                };
                live.push((insn, life));
            }
        }
        let mut i = 0;
        while i < live.len() {
            let (insn, end) = live[i];
            match end {
                Some(end) if end <= cycle => {
                    if rng.below(5) == 0 {
                        w.flush(insn).unwrap();
                    } else {
                        w.retire(insn).unwrap();
                    }
                    live.swap_remove(i);
                    continue;
                }
                _ => {
                    if rng.below(3) == 0 {
                        let stage = stages[1 + rng.below(4) as usize];
                        w.enter(insn, Lane::MAIN, stage).unwrap();
                    }
                    if rng.below(9) == 0 {
                        w.label(insn, LabelKind::StageNote, "note").unwrap();
                    }
                }
            }
            i += 1;
        }
        if begun >= insns && live.iter().all(|(_, end)| end.is_none()) {
            break;
        }
        let step = 1 + rng.below(3) * rng.below(3);
        w.advance(step).unwrap();
        cycle += step;
    }
    w.advance(1 + rng.below(5)).unwrap();
    w.finish().unwrap().output
}

/// `text` written seekable with frames of `frame_size`, in random chunks.
fn seekable(text: &[u8], frame_size: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed | 1);
    let mut w = SeekableWriter::new(Vec::new(), 3)
        .unwrap()
        .with_frame_size(frame_size);
    let mut at = 0;
    while at < text.len() {
        let n = (1 + rng.below(3000) as usize).min(text.len() - at);
        w.write_all(&text[at..at + n]).unwrap();
        at += n;
    }
    w.finish().unwrap()
}

fn file_of(bytes: &[u8]) -> File {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(bytes).unwrap();
    file
}

fn open(bytes: &[u8]) -> Result<Option<Index>, IndexError> {
    Index::open(&mut file_of(bytes))
}

/// Every event of a reader: (line, cycle, sim cycle, command).
fn events<R: BufRead>(mut reader: CanonicalReader<R>) -> Vec<(u64, u64, i64, String)> {
    let mut all = Vec::new();
    while let Some(e) = reader.next_command().unwrap() {
        all.push((e.line, e.cycle, e.sim_cycle, format!("{:?}", e.command)));
    }
    all
}

/// The byte offset of the start of line `line + 1` (after `line` lines).
fn offset_of_line(text: &[u8], line: u64) -> usize {
    if line == 0 {
        return 0;
    }
    memchr::memchr_iter(b'\n', text)
        .nth(line as usize - 1)
        .unwrap()
        + 1
}

#[test]
fn seekable_round_trips_and_answers_windows() {
    for seed in 0..24u64 {
        let text = random_trace(seed, 50 + seed * 40);
        let frame_size = [64, 200, 1000, 5000][seed as usize % 4];
        let file = seekable(&text, frame_size, seed);
        // zstd reads it as the text, and so does zeekstd.
        assert_eq!(zstd::decode_all(&file[..]).unwrap(), text, "seed {seed}");
        let mut decoded = Vec::new();
        zeekstd::Decoder::new(zeekstd::BytesWrapper::new(&file))
            .unwrap()
            .read_to_end(&mut decoded)
            .unwrap();
        assert_eq!(decoded, text, "seed {seed}");
        // The same bytes whatever the writes.
        assert_eq!(seekable(&text, frame_size, seed + 1000), file);

        let index = open(&file).unwrap().expect("an index");
        let insns: Vec<_> = Instructions::new(&text[..])
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(index.instructions(), insns.len() as u64);
        let all = events(CanonicalReader::new(&text[..]));
        assert_eq!(index.start_cycle(), text_start_cycle(&text));
        assert_eq!(index.end().line, all.last().unwrap().0);
        assert_eq!(index.end().cycle, all.last().unwrap().1);
        assert!(index.frames() > 1 || text.len() < frame_size, "seed {seed}");

        let last_cycle = index.end().cycle;
        let mut rng = Rng(seed + 7);
        for round in 0..40 {
            let cycles_from = (round % 3 != 0).then(|| rng.below(last_cycle + 3));
            let insns_from = (round % 4 == 1).then(|| rng.below(insns.len() as u64 + 2));
            let start = index.start_for(cycles_from, insns_from);
            let entry = index.frame_start(start.frame).unwrap();
            assert_eq!(start, entry);
            // The text from the frame on is the suffix of the text.
            let mut suffix = Vec::new();
            index
                .reader(file_of(&file), start.frame)
                .read_to_end(&mut suffix)
                .unwrap();
            let at = offset_of_line(&text, start.position.line);
            assert_eq!(suffix, &text[at..], "seed {seed}, {start:?}");
            // Reading on from there gives the very events of a whole read.
            let got = events(index.canonical_reader(file_of(&file), &start));
            let first = all.partition_point(|e| e.0 <= start.position.line);
            assert_eq!(got, &all[first..], "seed {seed}, {start:?}");
            // The op ids from the frame on start at `next_id`, and every instruction of
            // the window has its I line there.
            let ids: BTreeSet<u64> = got
                .iter()
                .filter(|e| e.3.starts_with("Insn"))
                .map(|e| insn_id(&e.3))
                .collect();
            if let Some(&id) = ids.first() {
                assert_eq!(id, start.next_id);
            }
            for insn in &insns {
                let by_cycle = cycles_from.is_none_or(|a| insn.end.is_none_or(|end| end >= a));
                let by_id = insns_from.is_none_or(|b| insn.id >= b);
                if by_cycle && by_id {
                    assert!(
                        ids.contains(&insn.id),
                        "seed {seed}: insn {} ({}..{:?}) not read from {start:?} for {cycles_from:?} {insns_from:?}",
                        insn.id,
                        insn.begin,
                        insn.end
                    );
                }
            }
        }
    }
}

fn insn_id(debug: &str) -> u64 {
    let rest = debug.strip_prefix("Insn { id: ").unwrap();
    rest[..rest.find(',').unwrap()].parse().unwrap()
}

fn text_start_cycle(text: &[u8]) -> i64 {
    let mut reader = CanonicalReader::new(text);
    match reader.next_command().unwrap().unwrap().command {
        Command::Start(start) => start,
        other => panic!("{other:?}"),
    }
}

/// The index is as small as it can be: a window that starts after everything retired
/// starts at the frame itself.
#[test]
fn seekable_start_is_the_frame_when_nothing_is_live() {
    let mut text = String::from("Kanata\t0004\nC=\t5\n");
    for id in 0..200 {
        text +=
            &format!("I\t{id}\t{id}\t0\nS\t{id}\t0\tF\nC\t1\nE\t{id}\t0\tF\nR\t{id}\t{id}\t0\n");
    }
    let file = seekable(text.as_bytes(), 100, 1);
    let index = open(&file).unwrap().unwrap();
    assert_eq!(index.start_cycle(), 5);
    assert!(index.frames() > 20);
    for f in 1..index.frames() {
        let start = index.frame_start(f).unwrap();
        // Each frame holds whole instructions or parts: never more than one frame back.
        let back = index.start_for(Some(start.position.cycle + 1), None);
        assert!(back.frame + 1 >= f, "{f}: {back:?}");
    }
    assert_eq!(index.start_for(None, None).frame, 0);
    assert_eq!(index.start_for(Some(0), Some(0)).frame, 0);
    let late = index.start_for(Some(1_000_000), None);
    // The last frame, or the one before it when the last starts inside an instruction.
    assert!(late.frame + 2 >= index.frames(), "{late:?}");
    let by_id = index.start_for(None, Some(150));
    assert!(by_id.next_id <= 150);
    assert!(index.frame_start(by_id.frame + 1).unwrap().next_id > 150);
}

/// An instruction that never retires holds every later frame's start at its own frame.
#[test]
fn seekable_open_instruction_holds_the_start_back() {
    let mut text = String::from("Kanata\t0004\nC=\t0\nI\t0\t0\t0\nS\t0\t0\tF\n");
    for id in 1..300 {
        text += &format!("I\t{id}\t{id}\t0\nC\t1\nR\t{id}\t{id}\t0\n");
    }
    let file = seekable(text.as_bytes(), 128, 2);
    let index = open(&file).unwrap().unwrap();
    assert!(index.frames() > 10);
    assert_eq!(index.start_for(Some(250), None).frame, 0);
    // By op id alone, no need to go back.
    assert!(index.start_for(None, Some(250)).frame > 5);
}

#[test]
fn seekable_empty_trace() {
    let text = b"Kanata\t0004\nC=\t-3\n";
    let file = seekable(text, DEFAULT_FRAME_SIZE, 3);
    assert_eq!(zstd::decode_all(&file[..]).unwrap(), text);
    let index = open(&file).unwrap().unwrap();
    assert_eq!(
        (index.frames(), index.start_cycle(), index.instructions()),
        (1, -3, 0)
    );
    let start = index.start_for(Some(10), Some(10));
    assert_eq!(start.frame, 0);
    let got = events(index.canonical_reader(file_of(&file), &start));
    assert_eq!(got.len(), 1);
    // Text that ends exactly at a cut: no empty frame.
    let file = seekable(text, text.len(), 3);
    let index = open(&file).unwrap().unwrap();
    assert_eq!(index.frames(), 1);
    assert_eq!(zstd::decode_all(&file[..]).unwrap(), text);
}

#[test]
fn seekable_writer_refuses_text_that_is_not_canonical() {
    let mut w = SeekableWriter::new(Vec::new(), 3).unwrap();
    assert!(w.write_all(b"Kanata\t0004\nC=\t0\nR\t0\t0\t0\n").is_err());
    assert!(w.write_all(b"I\t0\t0\t0\n").is_err());
    let mut w = SeekableWriter::new(Vec::new(), 3).unwrap();
    w.write_all(b"Kanata\t0004\nC=\t0\nI\t0\t0").unwrap();
    assert!(w.finish().is_err());
    assert!(SeekableWriter::new(Vec::new(), 1000).is_err());
}

#[test]
fn plain_zstd_and_plain_text_have_no_index() {
    let text = random_trace(5, 100);
    assert!(open(&zstd::encode_all(&text[..], 3).unwrap())
        .unwrap()
        .is_none());
    assert!(open(&text).unwrap().is_none());
    assert!(open(b"").unwrap().is_none());
    assert!(open(b"abc").unwrap().is_none());
    // A seekable file without our index (zeekstd's own encoder).
    let mut out = Vec::new();
    {
        let mut encoder = zeekstd::Encoder::new(&mut out).unwrap();
        encoder.write_all(&text).unwrap();
        encoder.finish().unwrap();
    }
    assert!(open(&out).unwrap().is_none());
}

/// Where the index frame is in `file`: its start and end.
fn index_range(file: &[u8]) -> (usize, usize) {
    let frames = u32::from_le_bytes(file[file.len() - 9..file.len() - 5].try_into().unwrap());
    let end = file.len() - (frames as usize * 8 + 17);
    let start = end - (8 + 76 + 32 * frames as usize);
    assert_eq!(&file[start..start + 4], &0x184D_2A5Bu32.to_le_bytes());
    (start, end)
}

#[test]
fn damaged_index_is_an_error_never_a_wrong_index() {
    let text = random_trace(9, 150);
    let file = seekable(&text, 300, 9);
    let (start, end) = index_range(&file);
    let mut handle = file_of(&file);
    for at in start..end {
        for bit in [0x01u8, 0x80] {
            let mut damaged = file.clone();
            damaged[at] ^= bit;
            handle.seek(SeekFrom::Start(at as u64)).unwrap();
            handle.write_all(&damaged[at..at + 1]).unwrap();
            let result = Index::open(&mut handle);
            assert!(
                result.is_err(),
                "byte {} of the index: {result:?}",
                at - start
            );
            handle.seek(SeekFrom::Start(at as u64)).unwrap();
            handle.write_all(&file[at..at + 1]).unwrap();
        }
    }
    assert!(Index::open(&mut handle).unwrap().is_some());
    // The seek table: an error, or no index at all (its magic number gone), never an index.
    for at in end..file.len() {
        let mut damaged = file.clone();
        damaged[at] ^= 0x10;
        match open(&damaged) {
            Ok(Some(index)) => panic!("seek table byte {}: read {index:?}", at - end),
            Ok(None) => assert!(at >= file.len() - 4, "seek table byte {}", at - end),
            Err(_) => {}
        }
    }
    let message = open(&{
        let mut d = file.clone();
        d[start + 30] ^= 1;
        d
    })
    .unwrap_err()
    .to_string();
    assert!(message.contains("checksum"), "{message}");
}

#[test]
fn truncated_file_has_no_index() {
    let text = random_trace(11, 200);
    let file = seekable(&text, 400, 11);
    for cut in (1..file.len())
        .step_by(37)
        .chain([file.len() - 1, file.len() - 20])
    {
        let cut_file = &file[..cut];
        match open(cut_file) {
            Ok(Some(_)) => panic!("cut at {cut}: an index"),
            // Read as plain zstd, which fails (or stops short of the text).
            Ok(None) => {
                if let Ok(decoded) = zstd::decode_all(cut_file) {
                    assert!(decoded.len() <= text.len());
                }
            }
            Err(_) => {}
        }
    }
}

#[test]
fn index_of_another_file_is_refused() {
    let a = seekable(&random_trace(20, 300), 500, 1);
    let b = seekable(&random_trace(21, 300), 500, 2);
    let (a_start, _) = index_range(&a);
    let (b_start, _) = index_range(&b);
    // A's frames with B's index and seek table.
    let mut mixed = a[..a_start].to_vec();
    mixed.extend_from_slice(&b[b_start..]);
    assert!(open(&mixed).is_err());
    // A's frames and seek table with B's index in between (same frame count or not).
    let (a_s, a_e) = index_range(&a);
    let (b_s, b_e) = index_range(&b);
    let mut mixed = a[..a_s].to_vec();
    mixed.extend_from_slice(&b[b_s..b_e]);
    mixed.extend_from_slice(&a[a_e..]);
    assert!(open(&mixed).is_err());
    // B's index and seek table appended to all of A.
    let mut appended = a.clone();
    appended.extend_from_slice(&b[b_start..]);
    assert!(open(&appended).is_err());
    // The same text cut into frames of another size: same data, other seek table.
    let text = random_trace(22, 300);
    let c = seekable(&text, 500, 1);
    let d = seekable(&text, 700, 1);
    let (c_s, c_e) = index_range(&c);
    let (d_s, d_e) = index_range(&d);
    let mut mixed = c[..c_s].to_vec();
    mixed.extend_from_slice(&d[d_s..d_e]);
    mixed.extend_from_slice(&c[c_e..]);
    assert!(open(&mixed).is_err());
}

#[test]
fn damaged_frame_is_an_io_error_naming_it() {
    let text = random_trace(30, 300);
    let file = seekable(&text, 2000, 3);
    let index = open(&file).unwrap().unwrap();
    assert!(index.frames() > 3);
    let at = index.spans[2].offset as usize + index.spans[2].compressed as usize / 2;
    let mut damaged = file.clone();
    damaged[at] ^= 0x40;
    let mut out = Vec::new();
    let err = index
        .reader(file_of(&damaged), 1)
        .read_to_end(&mut out)
        .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("frame 2"), "{err}");
    // The frames before it read.
    assert!(out.len() >= index.spans[1].decompressed as usize);
    // The frame's checksum is checked, the last frame's too.
    let last = index.frames() as usize - 1;
    let end = (index.spans[last].offset + u64::from(index.spans[last].compressed)) as usize;
    let mut damaged = file.clone();
    damaged[end - 1] ^= 1;
    let err = index
        .reader(file_of(&damaged), last as u32)
        .read_to_end(&mut Vec::new())
        .unwrap_err();
    assert!(err.to_string().contains(&format!("frame {last}")), "{err}");
}

#[test]
fn reading_stops_early_decompresses_little() {
    let text = random_trace(31, 400);
    let file = seekable(&text, 1000, 3);
    let index = open(&file).unwrap().unwrap();
    let mut reader = index.reader(file_of(&file), 0);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert_eq!(line, "Kanata\t0004\n");
    assert_eq!(reader.next, 1);
    assert!(index
        .reader(file_of(&file), index.frames() + 5)
        .fill_buf()
        .unwrap()
        .is_empty());
}

#[test]
fn zstd_command_line_tool_reads_the_output() {
    let Ok(version) = std::process::Command::new("zstd").arg("--version").output() else {
        eprintln!("note: no `zstd` binary, the command-line check is skipped");
        return;
    };
    assert!(version.status.success());
    let text = random_trace(40, 400);
    let file = seekable(&text, 700, 4);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.kanata.zst");
    std::fs::write(&path, &file).unwrap();
    let decoded = std::process::Command::new("zstd")
        .args(["-d", "-c", "-q"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        decoded.status.success(),
        "{}",
        String::from_utf8_lossy(&decoded.stderr)
    );
    assert_eq!(decoded.stdout, text);
    let listed = std::process::Command::new("zstd")
        .arg("-l")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let list = String::from_utf8_lossy(&listed.stdout);
    let frames = open(&file).unwrap().unwrap().frames();
    // zstd counts the data frames and the two skippable ones (index, seek table).
    assert!(list.contains(&format!("{}", frames + 2)), "{list}");
    assert!(list.contains("XXH64"), "{list}");
}
