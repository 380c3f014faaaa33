//! kanata-pp on RSD raw logs: the corpus (`shared/corpus/rsd/`, described in its
//! `SOURCES.md`) holds synthetic `RSD_Kanata` raw logs and, beside each, the Kanata that RSD's
//! own Python KanataConverter (HEAD 7b65f6b) wrote for it.
//!
//! For every raw log, kanata-pp's output must be canonical, load in Konata with zero
//! warnings, and be drawn as Konata draws the reference. [`Compare::drawn`] leaves out:
//!
//! * file ids (rows are compared in order; kanata-pp's ids happen to be RSD's too),
//! * the line numbers of `I` (the outputs have different lines: kanata-pp writes no empty
//!   `C` lines and moves late labels),
//! * warnings (the reference has some, from labels written after their `R`; ours has none,
//!   which is asserted separately).
//!
//! Everything else Konata draws is compared: instruction count, simulator ids, labels, every
//! stage box with its notes, retire kind, cycle and retire id, the last cycle and the stage
//! colours. Nothing else needs to be ignored.
//!
//! The corpus lives outside this repository; when it is absent the tests print a note and
//! pass.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use kanata_pp::{convert, Destination, Options, Report, Rule};
use kanata_tests::{diff_views, load, Compare, RetireKind, View};

fn corpus() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/rsd");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("note: {} is absent; RSD corpus test skipped", dir.display());
        None
    }
}

/// The raw logs of the corpus, each with its reference output.
fn corpus_pairs(dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let mut pairs: Vec<(PathBuf, PathBuf)> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_owned();
            let stem = name.strip_suffix(".raw.log")?;
            Some((p.clone(), dir.join(format!("{stem}.rsd-converter.kanata"))))
        })
        .collect();
    pairs.sort();
    pairs
}

/// Converts `input` (detected as RSD) to a file and checks what holds for every output:
/// canonical, zero Konata warnings, unchanged by a second conversion as Kanata.
#[track_caller]
fn convert_checked(input: &Path) -> (Report, Vec<u8>, View) {
    let tmp = tempfile::tempdir().unwrap();
    let mut options = Options::new(Destination::Check);
    options.max_examples = usize::MAX;
    kanata_tests::conversion::convert_checked(input, options, tmp.path(), "rsd")
}

#[test]
fn every_corpus_log_is_drawn_as_rsds_converter_output_is_drawn() {
    let Some(dir) = corpus() else { return };
    let pairs = corpus_pairs(&dir);
    assert!(pairs.len() >= 3, "{pairs:?}");
    for (raw, reference) in &pairs {
        let name = raw.file_name().unwrap().to_string_lossy().into_owned();
        let (report, _, ours) = convert_checked(raw);
        assert_eq!(
            report.diagnostics.total(),
            0,
            "{name}: {:?}",
            report.diagnostics.rules()
        );
        let reference = fs::read(reference).unwrap();
        let expected = load(&reference);
        // The reference's warnings are all labels written after their op's `R` (which ours
        // moves before it).
        let lines: Vec<&[u8]> = reference.split(|&b| b == b'\n').collect();
        assert!(!expected.warnings.is_empty(), "{name}");
        for warning in &expected.warnings {
            assert!(
                warning.message.starts_with("Command appears after op")
                    && lines[warning.line - 1].starts_with(b"L\t"),
                "{name}: {warning:?}"
            );
        }
        let diffs = diff_views(&expected, &ours, &Compare::drawn());
        assert!(
            diffs.is_empty(),
            "{name}: Konata draws the output unlike RSD's converter output:\n{}",
            diffs.join("\n")
        );
    }
}

#[test]
fn corpus_facts_from_sources_md() {
    let Some(dir) = corpus() else { return };
    // ops / retired / flushed as SOURCES.md lists them.
    for (stem, ops, retired, flushed) in [
        ("gen-seed1", 736, 401, 304),
        ("gen-seed2-wrap", 2084, 1501, 568),
        ("gen-seed3-nofunc", 571, 400, 141),
    ] {
        let (report, _, view) = convert_checked(&dir.join(format!("{stem}.raw.log")));
        assert_eq!(view.insns.len(), ops, "{stem}");
        let count = |kind| {
            view.insns
                .iter()
                .filter(|i| i.retired.map(|r| r.kind) == Some(kind))
                .count()
        };
        assert_eq!(count(RetireKind::Retired), retired, "{stem}");
        assert_eq!(count(RetireKind::Flushed), flushed, "{stem}");
        assert_eq!(report.summary.retired, retired as u64, "{stem}");
        assert_eq!(report.summary.flushed, flushed as u64, "{stem}");
    }
    // The wrapping log unwraps the 10-bit serial: simulator ids (gids) keep growing past
    // 4 × 1024.
    let (_, _, view) = convert_checked(&dir.join("gen-seed2-wrap.raw.log"));
    let gids: Vec<i64> = view.insns.iter().map(|i| i.sim_id).collect();
    assert!(gids.windows(2).all(|w| w[0] < w[1]));
    assert!(*gids.last().unwrap() > 4096);
    assert_eq!(view.insns[0].label_name, "00001000: jal zero, 0x10");
    assert!(view.insns[0].label_detail.starts_with("(g:4,c0)\n"));
}

#[test]
fn compressed_and_forced_inputs_give_the_same_output() {
    let Some(dir) = corpus() else { return };
    let raw_path = dir.join("gen-seed3-nofunc.raw.log");
    let raw = fs::read(&raw_path).unwrap();
    let (_, plain, _) = convert_checked(&raw_path);
    let tmp = tempfile::tempdir().unwrap();
    let gz = tmp.path().join("log.gz");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(&raw).unwrap();
    fs::write(&gz, encoder.finish().unwrap()).unwrap();
    let zst = tmp.path().join("log.zst");
    fs::write(&zst, zstd::encode_all(&raw[..], 1).unwrap()).unwrap();
    for input in [&gz, &zst] {
        let (report, output, _) = convert_checked(input);
        assert!(output == plain, "{}", input.display());
        assert_eq!(report.diagnostics.total(), 0);
    }
    // `--from rsd` on a log that has lost its header: reported, converted the same.
    let headless = tmp.path().join("headless.log");
    let text = String::from_utf8(raw).unwrap();
    fs::write(&headless, text.split_once('\n').unwrap().1).unwrap();
    let out = tmp.path().join("out.kanata");
    let mut options = Options::new(Destination::Path(out.clone()));
    options.from = Some(kanata_pp::Format::Rsd);
    let report = convert(&headless, &options).unwrap();
    assert_eq!(report.diagnostics.rules()[&Rule::R1].count, 1);
    assert!(fs::read(&out).unwrap() == plain);
}
