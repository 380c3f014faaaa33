//! The `kanata-pp` binary on RSD raw logs: detected from the `RSD_Kanata` header, read from
//! files (plain, gzip, zstd) and stdin, `--from rsd`, `--rsd-disasm`, and a line RSD's
//! converter would stop on reported with its number while the conversion goes on.

use std::io::Write;

mod common;
use common::run_in as run;

/// A short raw log as RSD's dumper writes it: a store fetched, decoded and committed, and a
/// younger op flushed in decode in the cycle its `L` comes (so its label follows its flush).
const RAW: &str = include_str!("../../samples/rsd_raw.log");

#[test]
fn rsd_logs_are_detected_in_every_input_form_and_give_the_same_trace() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    std::fs::write(path.join("RSD.log"), RAW).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(RAW.as_bytes()).unwrap();
    std::fs::write(path.join("RSD.log.gz"), gz.finish().unwrap()).unwrap();
    std::fs::write(
        path.join("RSD.log.zst"),
        zstd::encode_all(RAW.as_bytes(), 1).unwrap(),
    )
    .unwrap();

    let plain = run(path, &["RSD.log", "-o", "-"], None);
    assert_eq!(plain.code, Some(0), "{}", plain.stderr);
    assert!(plain.stderr.is_empty(), "{}", plain.stderr);
    let text = String::from_utf8(plain.stdout.clone()).unwrap();
    assert!(
        text.starts_with("Kanata\t0004\nC=\t-1\nC\t1\nI\t0\t4\t0\n"),
        "{text}"
    );
    assert!(
        text.contains("L\t0\t0\t00001024: sw a2, 0x0(sp)\n"),
        "{text}"
    );
    // The flushed op's label, written after its `R` by RSD's converter, comes before it.
    assert!(
        text.contains("L\t1\t0\t00001028: add a3, a3, a2\nR\t1\t0\t1\n"),
        "{text}"
    );
    assert!(text.ends_with("E\t0\t0\tCm\nR\t0\t0\t0\n"), "{text}");

    for args in [
        &["RSD.log.gz", "-o", "-"][..],
        &["RSD.log.zst", "-o", "-"],
        &["-", "-o", "-"],
        &["--from", "rsd", "-", "-o", "-"],
    ] {
        let again = run(path, args, Some(RAW.as_bytes()));
        assert_eq!(again.code, Some(0), "{args:?}: {}", again.stderr);
        assert!(again.stdout == plain.stdout, "{args:?}");
    }
    // The default output name, beside the input.
    assert_eq!(run(path, &["-q", "RSD.log"], None).code, Some(0));
    assert!(std::fs::read(path.join("RSD.kanata")).unwrap() == plain.stdout);
}

#[test]
fn rsd_disasm_2021_writes_stores_as_konatas_rsd_sample_does() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["--rsd-disasm", "2021", "-", "-o", "-"],
        Some(RAW.as_bytes()),
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("L\t0\t0\t00001024: sw a2, sp, 0x0\n"),
        "{text}"
    );
}

#[test]
fn a_line_rsds_converter_stops_on_is_reported_and_the_rest_converted() {
    let dir = tempfile::tempdir().unwrap();
    let raw = RAW.replace(
        "C\t          1\n#\tcycle:3\n",
        "C\t          1\n#\tcycle:3\nS\t1\t1\t0\t0\t1\t4\t\n",
    );
    let out = run(dir.path(), &["-", "-o", "-"], Some(raw.as_bytes()));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("R1:"), "{}", out.stderr);
    assert!(
        out.stderr.contains("line 22: micro-op index 4"),
        "{}",
        out.stderr
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.ends_with("E\t0\t0\tCm\nR\t0\t0\t0\n"), "{text}");
    // `--strict` makes it an error.
    let strict = run(
        dir.path(),
        &["--strict", "-", "-o", "-"],
        Some(raw.as_bytes()),
    );
    assert_eq!(strict.code, Some(1), "{}", strict.stderr);
}
