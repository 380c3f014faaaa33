//! The SystemVerilog DPI-C package (`dpi/`), built with Verilator against the
//! `libkanata_writer.a` cargo built for this very test run (as `tests/c_examples.rs` does):
//!
//! - `dpi/example`: `make` builds the example core and its testbench into a temporary folder
//!   and runs it; its trace must be canonical, load in Konata without a warning and show the
//!   load-use stall, the branch's flushes and the dependency arrows (checked on the Konata
//!   model, not on bytes), and be the same compressed on a background thread;
//! - `dpi/tests/api_tb.sv`: every call and error path of the package, the exact trace it
//!   writes (a refused call writes nothing), and `KANATA_FATAL`'s `$fatal` leaving a complete
//!   trace.
//!
//! - `dpi/kanata_dpi.c` compiles without a warning as C99 and as C++ (commercial simulators
//!   compile a DPI C file as C, Verilator as C++).
//!
//! Each Verilator test skips, with a note, when `verilator` (or `$VERILATOR`) or `make` cannot be run,
//! unless `KANATA_REQUIRE_VERILATOR` is set: CI installs Verilator and sets it (`.ci/run`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kanata_tests::{canonical, RetireKind, View};

fn dpi_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("dpi")
}

/// The `libkanata_writer.a` of this run: in `target/<profile>/deps`, beside this test, or in
/// `target/<profile>`.
fn static_lib() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let deps = exe.parent().expect("the test executable's folder");
    for dir in [deps, deps.parent().unwrap_or(deps)] {
        let lib = dir.join("libkanata_writer.a");
        if lib.is_file() {
            return lib;
        }
    }
    panic!(
        "libkanata_writer.a is neither in {} nor beside it: cargo builds it with this test \
         because the library has the rlib, staticlib and cdylib crate types",
        deps.display()
    );
}

/// `verilator` (or `$VERILATOR`), or `None` with a note when it or `make` cannot be run. With
/// `KANATA_REQUIRE_VERILATOR` set (CI sets it) a missing tool fails the test instead.
fn verilator() -> Option<String> {
    let verilator = std::env::var("VERILATOR").unwrap_or_else(|_| "verilator".to_string());
    for tool in [verilator.as_str(), "make"] {
        match Command::new(tool).arg("--version").output() {
            Ok(out) if out.status.success() => {}
            _ => {
                if std::env::var_os("KANATA_REQUIRE_VERILATOR").is_some() {
                    panic!("`{tool}` cannot be run, and KANATA_REQUIRE_VERILATOR is set");
                }
                eprintln!(
                    "note: skipping the DPI-C tests: `{tool}` cannot be run (install Verilator, \
                     e.g. `apt-get install verilator`, or set VERILATOR)"
                );
                return None;
            }
        }
    }
    Some(verilator)
}

fn assert_success(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `make -C dpi/<dir>` with the build in `obj` and this run's library.
fn make(verilator: &str, dir: &str, obj: &Path, vars: &[String]) -> Output {
    let out = Command::new("make")
        .arg("-C")
        .arg(dpi_dir().join(dir))
        .arg(format!("VERILATOR={verilator}"))
        .arg(format!("OBJ_DIR={}", obj.display()))
        .arg(format!("KANATA_LIB={}", static_lib().display()))
        .args(vars)
        .output()
        .expect("run make");
    assert_success(&format!("make -C dpi/{dir}"), &out);
    out
}

fn text_of(path: &Path) -> Vec<u8> {
    let raw = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    kanata_tests::decompress(&raw).unwrap()
}

fn load_clean(text: &[u8]) -> View {
    let view = kanata_tests::load(text);
    assert!(
        view.warnings.is_empty(),
        "Konata warns: {:?}",
        view.warnings
    );
    view
}

/// The one instruction box of `stage` in the main lane.
fn main_box<'a>(view: &'a View, id: i64, stage: &str) -> &'a kanata_tests::StageBox {
    let insn = view.insn(id).unwrap();
    let boxes: Vec<_> = insn.lane("0").iter().filter(|b| b.name == stage).collect();
    assert_eq!(
        boxes.len(),
        1,
        "instruction {id} has one {stage}: {:?}",
        insn.lanes
    );
    boxes[0]
}

fn label_starts(view: &View, id: i64, prefix: &str) -> bool {
    view.insn(id).unwrap().label_name.starts_with(prefix)
}

#[test]
fn example_core_trace_shows_the_stall_the_flush_and_the_arrows() {
    let Some(verilator) = verilator() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let obj = dir.path().join("obj");
    let plain = dir.path().join("pipeline.kanata");
    let out = make(
        &verilator,
        "example",
        &obj,
        &[format!("TRACE={}", plain.display())],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("tb: halted: 25 retired, 17 flushed, mem[8] = 10"),
        "{stdout}"
    );

    // The same run compressed on the background thread: the same text.
    let zst = dir.path().join("pipeline.kanata.zst");
    let run = Command::new(obj.join("Vtb"))
        .arg(format!("+trace={}", zst.display()))
        .arg("+background")
        .output()
        .unwrap();
    assert_success("Vtb +background", &run);
    let text = std::fs::read(&plain).unwrap();
    assert_eq!(
        &std::fs::read(&zst).unwrap()[..4],
        &[0x28, 0xb5, 0x2f, 0xfd]
    );
    assert!(text_of(&zst) == text, "the .zst trace is not the plain one");

    let stats = canonical::check(&text).unwrap_or_else(|v| panic!("not canonical: {v:?}"));
    assert_eq!(
        (
            stats.instructions,
            stats.retired,
            stats.flushed,
            stats.open_at_end
        ),
        (42, 25, 17, 0)
    );
    let view = load_clean(&text);
    assert_eq!(view.insns.len(), 42);

    // Retirements in order, serial retire ids, ids as the tracer gave them.
    let mut next_rid = 0;
    for insn in &view.insns {
        assert_eq!(insn.sim_id, insn.file_id, "the sim id is the fetch order");
        assert_eq!(insn.thread, 0);
        let r = insn.retired.expect("every instruction ends");
        if r.kind == RetireKind::Retired {
            assert_eq!(r.retire_id, next_rid);
            next_rid += 1;
            let names: Vec<_> = insn.lane("0").iter().map(|b| b.name.as_str()).collect();
            assert_eq!(names, ["F", "D", "X", "M", "W"], "{}", insn.label_name);
            assert!(insn.lane("0").iter().all(|b| b.visible()));
        }
    }

    // Two instructions enter F in the same cycle (the fetch is two wide).
    assert_eq!(main_box(&view, 0, "F").start, main_box(&view, 1, "F").start);

    // The load-use stall: each `add r3, r3, r4` right after `lw r4` stalls in D for the one
    // cycle the load is in X, and enters X when the load is in W.
    let adds: Vec<i64> = view
        .insns
        .iter()
        .filter(|i| i.label_name.starts_with("04: add r3, r3, r4"))
        .map(|i| i.file_id)
        .collect();
    assert_eq!(adds.len(), 4, "the loop runs four times");
    for &add in &adds {
        let lw = add - 1;
        assert!(label_starts(&view, lw, "03: lw r4, 0(r1)"));
        let stalls = view.insn(add).unwrap().visible_boxes("1");
        assert_eq!(stalls.len(), 1, "instruction {add} stalls once");
        let (stall, d) = (stalls[0], main_box(&view, add, "D"));
        assert_eq!(stall.name, "stl");
        assert_eq!(stall.len(), 1);
        assert!(
            d.start <= stall.start && stall.end <= d.end,
            "stl lies over D"
        );
        assert_eq!(
            main_box(&view, lw, "X").start,
            stall.start,
            "while the lw is in X"
        );
        assert_eq!(
            main_box(&view, add, "X").start,
            main_box(&view, lw, "W").start
        );
        // The add waits for the load: the arrow from its X to the add's X.
        assert!(
            view.arrows
                .iter()
                .any(|a| a.producer == lw && a.consumer == add),
            "an arrow from lw {lw} to add {add}: {:?}",
            view.arrows
        );
    }

    // The branch: taken three times, each flushing everything fetched after it, in the cycle
    // after its X; the first instruction after the flushed ones is the loop's lw again.
    let bnes: Vec<i64> = view
        .insns
        .iter()
        .filter(|i| i.label_name.starts_with("07: bne r2, r0, -4"))
        .map(|i| i.file_id)
        .collect();
    assert_eq!(bnes.len(), 4);
    for (n, &bne) in bnes.iter().enumerate() {
        let x = main_box(&view, bne, "X");
        let taken = n < 3;
        assert_eq!(
            x.notes,
            if taken { "taken to 03" } else { "not taken" },
            "the stage note on bne {bne}'s X"
        );
        // The addi r2 just before it produces the operand it compares.
        assert!(view
            .arrows
            .iter()
            .any(|a| a.producer == bne - 1 && a.consumer == bne));
        let mut next = bne + 1;
        if taken {
            while let Some(insn) = view.insn(next) {
                let r = insn.retired.unwrap();
                if r.kind != RetireKind::Flushed {
                    break;
                }
                assert_eq!(r.cycle, x.end, "flushed {next} when bne {bne} leaves X");
                assert!(insn.fetched_cycle < x.end);
                next += 1;
            }
            let flushed = next - bne - 1;
            assert!(flushed >= 2, "bne {bne} flushes what was fetched after it");
            assert!(label_starts(&view, next, "03: lw r4, 0(r1)"));
            // Fetched at the target in the cycle after the flush.
            assert_eq!(view.insn(next).unwrap().fetched_cycle, x.end + 1);
        } else {
            assert!(label_starts(&view, next, "08: sw r3, 8(r0)"));
            assert_eq!(
                view.insn(next).unwrap().retired.unwrap().kind,
                RetireKind::Retired
            );
        }
    }

    // The three label kinds: a detail on what W writes, notes on X.
    let last_add = view.insn(*adds.last().unwrap()).unwrap();
    assert_eq!(last_add.label_detail, "r3 = 10");
    let sw = view
        .insns
        .iter()
        .find(|i| {
            i.label_name.starts_with("08: sw") && i.retired.unwrap().kind == RetireKind::Retired
        })
        .unwrap();
    assert_eq!(main_box(&view, sw.file_id, "X").notes, "address 8");
}

/// What api_tb.sv writes: every refused call in it wrote nothing.
const API_TRACE: &str = "Kanata\t0004\nC=\t0\n\
I\t0\t18364758544493064720\t3\nL\t0\t0\t0x80: lw r1, 0(r2)\nL\t0\t1\tline1\\nline2\n\
S\t0\t0\tF\nL\t0\t2\tin F\n\
C\t1\nI\t1\t1\t0\nS\t1\t0\tF\nE\t0\t0\tF\nS\t0\t0\tX\nS\t1\t1\tstl\n\
C\t2\nE\t1\t1\tstl\nE\t1\t0\tF\nS\t1\t0\tX\nW\t1\t0\t0\nE\t0\t0\tX\nR\t0\t0\t0\n\
C\t1\nI\t2\t2\t1\nS\t2\t0\tF\nE\t2\t0\tF\nR\t2\t0\t1\nE\t1\t0\tX\nR\t1\t1\t0\n\
C\t2\n";

/// The second writer of api_tb.sv: compact, `stl` (KANATA_STAGE_STALL) in the main lane, its one
/// instruction left open at the end.
const API_SECOND_TRACE: &str = "Kanata\t0004\nC=\t0\nI\t0\t9\t0\nS\t0\t0\tstl\n";

/// The writer opened with KANATA_FATAL, ended before the $fatal.
const API_FATAL_TRACE: &str = "Kanata\t0004\nC=\t0\nI\t0\t1\t0\nR\t0\t0\t0\n";

#[test]
fn api_testbench() {
    let Some(verilator) = verilator() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let obj = dir.path().join("obj");
    make(&verilator, "tests", &obj, &[]);
    let sim = obj.join("Vapi_tb");
    let trace = dir.path().join("api.kanata");

    let out = Command::new(&sim)
        .arg(format!("+trace={}", trace.display()))
        .output()
        .unwrap();
    assert_success("Vapi_tb", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
    assert!(!stdout.contains("FAIL"), "{stdout}");

    let text = std::fs::read(&trace).unwrap();
    assert_eq!(String::from_utf8_lossy(&text), API_TRACE);
    canonical::check(&text).unwrap_or_else(|v| panic!("not canonical: {v:?}"));
    let view = load_clean(&text);
    // (The 64-bit sim id 0xFEDC_BA98_7654_3210 is in API_TRACE; Konata holds it as a double.)
    assert_eq!(view.insn(0).unwrap().thread, 3);
    assert_eq!(view.arrows.len(), 1);

    let second = text_of(&dir.path().join("api.kanata.zst"));
    assert_eq!(String::from_utf8_lossy(&second), API_SECOND_TRACE);
    canonical::check_with(&second, canonical::Options::COMPACT)
        .unwrap_or_else(|v| panic!("not canonical: {v:?}"));

    // KANATA_FATAL: the misuse ends the simulation with the message, after the trace ended.
    let fatal = dir.path().join("fatal.kanata");
    let out = Command::new(&sim)
        .arg(format!("+trace={}", trace.display()))
        .arg(format!("+fatal={}", fatal.display()))
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "$fatal fails the run: {all}");
    assert!(all.contains("fatal writer: retired 0"), "{all}");
    assert!(
        all.contains("kanata: kanata_label: "),
        "the message names the call: {all}"
    );
    assert!(!all.contains("unreachable"), "{all}");
    let text = std::fs::read(&fatal).unwrap();
    assert_eq!(String::from_utf8_lossy(&text), API_FATAL_TRACE);
    canonical::check(&text).unwrap_or_else(|v| panic!("not canonical: {v:?}"));
}

/// The C side compiles cleanly as C99 (what commercial simulators compile a DPI C file as) and
/// as C++ (Verilator), with warnings as errors. Skips, with a note, without `cc` (or `$CC`).
#[test]
fn glue_compiles_as_c99_and_as_cpp() {
    let dir = tempfile::tempdir().unwrap();
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    for (var, default, args) in [
        ("CC", "cc", &["-std=c99", "-Wpedantic"][..]),
        ("CXX", "c++", &["-std=c++11", "-x", "c++"][..]),
    ] {
        let cc = std::env::var(var).unwrap_or_else(|_| default.to_string());
        if !Command::new(&cc)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            eprintln!("note: skipping: no compiler `{cc}` (set {var} to use another)");
            continue;
        }
        let out = Command::new(&cc)
            .args(args)
            .args(["-Wall", "-Wextra", "-Werror", "-O2", "-c", "-I"])
            .arg(&include)
            .arg(dpi_dir().join("kanata_dpi.c"))
            .arg("-o")
            .arg(dir.path().join("kanata_dpi.o"))
            .output()
            .expect("run the compiler");
        assert_success(&format!("{cc} kanata_dpi.c"), &out);
    }
}
