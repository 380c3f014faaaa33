//! `kanata-pp diff OLD NEW` and its gates (`docs/analysis.md`, "Diff") on pairs of traces
//! whose differences are known.

mod common;

use std::io::Write;
use std::path::Path;

use common::{run_in, Run};
use kanata_writer::{LabelKind, Lane, Writer};
use serde_json::Value;

/// 100 instructions one after the other, F, X and Cm a cycle each (3 cycles an
/// instruction); every 10th (at 0x100) is a branch followed by a flushed instruction. With
/// `slower`, every 10th X takes 7 cycles and the instructions at 0x200 (every 10th, 5 after
/// the others) are branches followed by a flushed instruction too.
fn trace(slower: bool) -> Vec<u8> {
    let mut w = Writer::new(Vec::new());
    let f = w.stage("F").unwrap();
    let x = w.stage("X").unwrap();
    let cm = w.stage("Cm").unwrap();
    for i in 0..100u64 {
        let branch = i % 10 == 0 || (slower && i % 10 == 5);
        let pc = match i % 10 {
            0 => 0x100,
            5 => 0x200,
            _ => 0x1000 + 4 * i,
        };
        let insn = w.begin(2 * i, 0).unwrap();
        let text = if branch {
            "beq a0, a1, 8"
        } else {
            "addi a0, a0, 1"
        };
        w.label(insn, LabelKind::Name, &format!("0x{pc:x}: {text}"))
            .unwrap();
        w.enter(insn, Lane::MAIN, f).unwrap();
        w.advance(1).unwrap();
        w.enter(insn, Lane::MAIN, x).unwrap();
        w.advance(if slower && i % 10 == 3 { 7 } else { 1 })
            .unwrap();
        w.enter(insn, Lane::MAIN, cm).unwrap();
        let shadow = branch.then(|| {
            let shadow = w.begin(2 * i + 1, 0).unwrap();
            w.label(shadow, LabelKind::Name, "0x5000: addi a1, a1, 1")
                .unwrap();
            shadow
        });
        w.advance(1).unwrap();
        w.retire(insn).unwrap();
        if let Some(shadow) = shadow {
            w.flush(shadow).unwrap();
        }
    }
    w.finish().unwrap().output
}

fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("old.kanata"), trace(false)).unwrap();
    std::fs::write(dir.path().join("new.kanata"), trace(true)).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&trace(false)).unwrap();
    std::fs::write(dir.path().join("old.log.gz"), gz.finish().unwrap()).unwrap();
    dir
}

fn diff(dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["diff"];
    all.extend_from_slice(args);
    run_in(dir, &all, None)
}

#[test]
fn the_same_trace_changes_nothing() {
    let dir = folder();
    // Any two inputs kanata-pp reads: a gzip of the same trace is the same trace.
    let run = diff(
        dir.path(),
        &["old.kanata", "old.log.gz", "--fail-if", "ipc < -2%"],
    );
    run.assert_code(0);
    let out = String::from_utf8(run.stdout).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "old.kanata -> old.log.gz");
    assert!(lines[1].starts_with("  metric "), "{out}");
    // No metric changed, no hot spot moved: the header, then the gate.
    assert_eq!(lines[2], "");
    assert_eq!(
        lines[3],
        "  gate `ipc < -2%`: ok: ipc 0.3333 -> 0.3333 (+0.00 %)"
    );
    assert_eq!(lines.len(), 4, "{out}");
    assert_eq!(run.stderr, "");
}

#[test]
fn gates_trip_on_the_known_regression() {
    let dir = folder();
    // IPC: 100 retired in 300 cycles, then in 360: -16.67 %.
    let run = diff(
        dir.path(),
        &["old.kanata", "new.kanata", "--fail-if", "ipc < -2%"],
    );
    run.assert_code(1);
    assert_eq!(
        run.stderr,
        "kanata-pp: diff: gate `ipc < -2%` tripped: ipc 0.3333 -> 0.2778 (-16.67 %)\n"
    );
    diff(
        dir.path(),
        &["old.kanata", "new.kanata", "--fail-if", "ipc < -17%"],
    )
    .assert_code(0);
    // The other way round it is an improvement.
    diff(
        dir.path(),
        &["new.kanata", "old.kanata", "--fail-if", "ipc < -2%"],
    )
    .assert_code(0);
    // X's 99th percentile: 1 cycle, then 7.
    for (gate, code) in [
        ("stage.X.p99 > +5", 1),
        ("stage.X.p99 > 6", 0),
        ("stage.X.p99 >= 6", 1),
        ("stage.X.p99 <= 0", 0),
        ("stage.F.p99 > 0", 0),
    ] {
        let run = diff(dir.path(), &["old.kanata", "new.kanata", "--fail-if", gate]);
        run.assert_code(code);
        assert_eq!(run.stderr.is_empty(), code == 0, "{gate}: {}", run.stderr);
    }
    // Flush rate: 10 of 110 instructions, then 20 of 120: +83.33 %. Several gates: every
    // one that trips is reported, in order.
    let run = diff(
        dir.path(),
        &[
            "old.kanata",
            "new.kanata",
            "--fail-if",
            "flush_rate > +10%",
            "--fail-if",
            "instructions > 0",
            "--fail-if",
            "konata.numBrPredMiss > +9",
        ],
    );
    run.assert_code(1);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        lines,
        [
            "kanata-pp: diff: gate `flush_rate > +10%` tripped: flush_rate 0.0909 -> 0.1667 (+83.33 %)",
            "kanata-pp: diff: gate `instructions > 0` tripped: instructions 110 -> 120 (+10)",
            "kanata-pp: diff: gate `konata.numBrPredMiss > +9` tripped: konata.numBrPredMiss 10 -> 20 (+10)",
        ]
    );
}

#[test]
fn json_report() {
    let dir = folder();
    let run = diff(
        dir.path(),
        &[
            "old.kanata",
            "new.kanata",
            "--report",
            "json",
            "--fail-if",
            "ipc < -2%",
            "--fail-if",
            "cycles > +100",
        ],
    );
    run.assert_code(1);
    let out = String::from_utf8(run.stdout).unwrap();
    assert_eq!(out.lines().count(), 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    // The fields in their documented order.
    let at: Vec<usize> = [
        "type", "old", "new", "metrics", "hotspots", "gates", "failed",
    ]
    .iter()
    .map(|k| out.find(&format!("\"{k}\":")).unwrap())
    .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{out}");
    assert!(out.starts_with(r#"{"type":"diff","old":"old.kanata","new":"new.kanata","metrics":[{"name":"instructions","old":110,"new":120,"change":10,"relative":9.090909090909092},"#), "{out}");
    assert_eq!(v["type"], "diff");
    assert_eq!(v["failed"], true);
    let ipc = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "ipc")
        .unwrap();
    assert_eq!(ipc["old"].as_f64().unwrap(), 100.0 / 300.0);
    assert_eq!(ipc["new"].as_f64().unwrap(), 100.0 / 360.0);
    assert!((ipc["relative"].as_f64().unwrap() + 50.0 / 3.0).abs() < 1e-9);
    // Konata's rate of jump mispredictions is NaN in both (no jumps): null.
    let rate = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "konata.rateJumpPredMiss")
        .unwrap();
    assert!(rate["old"].is_null() && rate["change"].is_null());
    // The branch at 0x200 appeared with 10 flushes; 0x100 kept its rank and count.
    let flushes = v["hotspots"]["flushes"].as_array().unwrap();
    assert_eq!(flushes.len(), 1, "{flushes:?}");
    assert_eq!(flushes[0]["change"], "appeared");
    assert_eq!(flushes[0]["pc"], "0x200");
    assert_eq!(flushes[0]["new"], 10);
    assert_eq!(flushes[0]["new_rank"], 2);
    assert_eq!(
        v["gates"],
        serde_json::json!([
            {"gate": "ipc < -2%", "tripped": true, "reason": "ipc 0.3333 -> 0.2778 (-16.67 %)"},
            {"gate": "cycles > +100", "tripped": false, "reason": "cycles 300 -> 360 (+60)"}
        ])
    );
}

#[test]
fn usage_errors() {
    let dir = folder();
    let run = diff(
        dir.path(),
        &["old.kanata", "new.kanata", "--fail-if", "ipcc < 1"],
    );
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("neither trace has a metric `ipcc` (did you mean ipc?)"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty());
    let run = diff(
        dir.path(),
        &["old.kanata", "new.kanata", "--fail-if", "ipc = 1"],
    );
    run.assert_code(2);
    assert!(
        run.stderr.contains("a gate is METRIC OP CHANGE"),
        "{}",
        run.stderr
    );
    diff(dir.path(), &["old.kanata"]).assert_code(2);
    // An input that cannot be read: exit 1, no table.
    let run = diff(dir.path(), &["old.kanata", "missing.kanata"]);
    run.assert_code(1);
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("missing.kanata"), "{}", run.stderr);
}
