//! Damaged input never panics kanata-pp (DEVELOPERS.md: bad input gets a clear error, never a
//! panic, and no half-written output). Logs of each kind kanata-pp reads (a sloppy Kanata log,
//! a canonical one, a gem5 O3PipeView trace, an RSD raw log) are damaged at random: bytes
//! changed to the ones the formats care about, lines deleted, repeated, swapped or cut, the
//! file truncated, and converted with random clean-up flags, `--strict`, `--deps` and
//! `--ticks-per-cycle`.
//! Whatever the damage, the conversion either succeeds with a canonical output that Konata
//! loads without a warning, or fails with an error and leaves no file.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};

use kanata_pp::{convert, CloseOpen, Destination, Options, Repairs};
use kanata_tests::canonical::{self, Options as Form};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

fn sample(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../samples")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A gem5 trace with what its reader handles: a squash, a store, a memory completion, a
/// thread line, records out of order and a `Rename` debug line.
const GEM5: &str = "\
O3PipeView:fetch:1000:0x00001000:0:1:addi a0, a0, 1
O3PipeView:decode:1500
O3PipeView:rename:2000
O3PipeView:dispatch:2500
O3PipeView:issue:3000
O3PipeView:complete:3500
O3PipeView:retire:4000:store:0
O3PipeView:fetch:1500:0x00001008:0:3:bne a0, a1, -8
O3PipeView:decode:2000
O3PipeView:rename:0
O3PipeView:dispatch:0
O3PipeView:issue:0
O3PipeView:complete:0
O3PipeView:retire:0:store:0
O3PipeView:fetch:1000:0x00001004:0:2:sd a0, 8(sp)
O3PipeView:thread:1
O3PipeView:decode:1500
O3PipeView:rename:2000
5000: system.cpu.rename: [tid:0] [sn:2] Renaming arch reg 10 (IntRegClass) to physical reg 42 (IntRegClass)
O3PipeView:dispatch:2500
O3PipeView:issue:3000
O3PipeView:complete:3500
5500: system.cpu.memDep0: Completed mem instruction PC:(0x1004=>0x1008).(0=>1) [sn:2]
O3PipeView:retire:4500:store:5000
O3PipeView:fetch:2000:0x0000100c:0:4:c.mv a1, a5
O3PipeView:decode:2500
O3PipeView:rename:3000
O3PipeView:dispatch:3500
O3PipeView:issue:4000
O3PipeView:complete:4500
O3PipeView:retire:5000:store:0
";

/// One piece of damage.
#[derive(Clone, Debug)]
enum Damage {
    /// The byte at this fraction of the file becomes this one.
    SetByte(f64, u8),
    /// The line at this fraction is deleted, repeated, or swapped with the next.
    DeleteLine(f64),
    RepeatLine(f64),
    SwapLines(f64),
    /// The file ends at this fraction (possibly inside a line).
    Truncate(f64),
}

/// Bytes the formats give a meaning to, and a few they do not expect.
const BYTES: &[u8] = b"\t\n\r :/-+09CIEFLRSW=#x\0\xff\xc3";

fn damage() -> impl Strategy<Value = Damage> {
    let at = 0.0..1.0f64;
    prop_oneof![
        4 => (at.clone(), prop::sample::select(BYTES)).prop_map(|(at, b)| Damage::SetByte(at, b)),
        2 => at.clone().prop_map(Damage::DeleteLine),
        2 => at.clone().prop_map(Damage::RepeatLine),
        2 => at.clone().prop_map(Damage::SwapLines),
        1 => at.prop_map(Damage::Truncate),
    ]
}

fn apply(input: &[u8], damages: &[Damage]) -> Vec<u8> {
    let mut bytes = input.to_vec();
    for damage in damages {
        let index = |at: f64, len: usize| ((at * len as f64) as usize).min(len.saturating_sub(1));
        match *damage {
            Damage::SetByte(at, byte) => {
                if !bytes.is_empty() {
                    let i = index(at, bytes.len());
                    bytes[i] = byte;
                }
            }
            Damage::Truncate(at) => bytes.truncate(index(at, bytes.len() + 1)),
            Damage::DeleteLine(at) | Damage::RepeatLine(at) | Damage::SwapLines(at) => {
                let mut lines: Vec<Vec<u8>> = bytes
                    .split_inclusive(|&b| b == b'\n')
                    .map(<[u8]>::to_vec)
                    .collect();
                if lines.is_empty() {
                    continue;
                }
                let i = index(at, lines.len());
                match damage {
                    Damage::DeleteLine(_) => {
                        lines.remove(i);
                    }
                    Damage::RepeatLine(_) => {
                        let line = lines[i].clone();
                        lines.insert(i, line);
                    }
                    _ => {
                        if i + 1 < lines.len() {
                            lines.swap(i, i + 1);
                        }
                    }
                }
                bytes = lines.concat();
            }
        }
    }
    bytes
}

/// Set when any thread panics; the reading and writing threads' panics would otherwise only
/// be printed.
static PANICKED: AtomicBool = AtomicBool::new(false);

/// One conversion at a time, so that a panic is told to the case that caused it (the tests
/// run on parallel threads).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn watch_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICKED.store(true, Ordering::SeqCst);
            previous(info);
        }));
    });
}

/// The settings a conversion may run with: the clean-up flags, `--strict` and `--deps`.
#[derive(Clone, Debug)]
struct Settings {
    late_window: u64,
    renumber_retire: bool,
    close_open: Option<CloseOpen>,
    dedupe: bool,
    stretch_zero: bool,
    compact: bool,
    strict: bool,
    deps: bool,
    /// gem5: `--ticks-per-cycle 500` (the clock known from the first record, so that the
    /// records wait packed), else detected.
    clock_given: bool,
}

fn settings() -> impl Strategy<Value = Settings> {
    let close_open = prop_oneof![
        Just(None),
        Just(Some(CloseOpen::Flush)),
        Just(Some(CloseOpen::Retire))
    ];
    (
        prop::sample::select(&[0u64, 1, 64][..]),
        any::<bool>(),
        close_open,
        any::<[bool; 6]>(),
    )
        .prop_map(
            |(
                late_window,
                renumber_retire,
                close_open,
                [dedupe, stretch_zero, compact, strict, deps, clock_given],
            )| {
                Settings {
                    late_window,
                    renumber_retire,
                    close_open,
                    dedupe,
                    stretch_zero,
                    compact,
                    strict,
                    deps,
                    clock_given,
                }
            },
        )
}

/// Converts `input` with `settings`; fails the case on a panic, on an output that is not
/// canonical, or on a failure that leaves a file behind.
fn check_conversion(input: &[u8], settings: &Settings) -> Result<(), TestCaseError> {
    watch_panics();
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("in.log");
    std::fs::write(&path, input).expect("write input");
    let out = dir.path().join("out.kanata");
    let mut options = Options::new(Destination::Path(out.clone()));
    let mut repairs = Repairs::default();
    repairs.late_window = settings.late_window;
    repairs.renumber_retire = settings.renumber_retire;
    repairs.close_open = settings.close_open;
    repairs.dedupe = settings.dedupe;
    repairs.stretch_zero = settings.stretch_zero;
    repairs.compact = settings.compact;
    options.repairs = repairs;
    options.strict = settings.strict;
    options.gem5.deps = settings.deps;
    options.gem5.ticks_per_cycle = settings.clock_given.then_some(500);
    let result = std::panic::catch_unwind(|| convert(&path, &options));
    prop_assert!(
        !PANICKED.swap(false, Ordering::SeqCst) && result.is_ok(),
        "kanata-pp panicked on:\n{}",
        String::from_utf8_lossy(input)
    );
    match result.expect("checked above") {
        Ok(_) => {
            let text = std::fs::read(&out).expect("a successful conversion writes its output");
            // kanata-pp keeps its input's simulator ids, negative ones too.
            let form = Form {
                negative_ids: true,
                compact: settings.compact,
            };
            if let Err(violations) = canonical::check_with(&text, form) {
                return Err(TestCaseError::fail(format!(
                    "the output is not canonical: {violations:?}\n--- input:\n{}\n--- output:\n{}",
                    String::from_utf8_lossy(input),
                    String::from_utf8_lossy(&text)
                )));
            }
        }
        Err(err) => {
            let left: Vec<_> = std::fs::read_dir(dir.path())
                .expect("temp dir")
                .map(|e| e.expect("entry").file_name())
                .filter(|name| name != "in.log")
                .collect();
            prop_assert!(left.is_empty(), "failed ({err}) but left {left:?} behind");
            prop_assert!(!err.to_string().is_empty());
        }
    }
    Ok(())
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 150,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_damaged_sloppy_kanata_log_converts_or_fails_cleanly(
        damages in prop::collection::vec(damage(), 1..8),
        settings in settings(),
    ) {
        check_conversion(&apply(&sample("sloppy.log"), &damages), &settings)?;
    }

    #[test]
    fn a_damaged_canonical_kanata_log_converts_or_fails_cleanly(
        damages in prop::collection::vec(damage(), 1..8),
        settings in settings(),
    ) {
        check_conversion(&apply(&sample("pipeline_sim.kanata"), &damages), &settings)?;
    }

    #[test]
    fn a_damaged_gem5_trace_converts_or_fails_cleanly(
        damages in prop::collection::vec(damage(), 1..8),
        settings in settings(),
    ) {
        check_conversion(&apply(GEM5.as_bytes(), &damages), &settings)?;
    }

    #[test]
    fn a_damaged_rsd_log_converts_or_fails_cleanly(
        damages in prop::collection::vec(damage(), 1..8),
        settings in settings(),
    ) {
        check_conversion(&apply(&sample("rsd_raw.log"), &damages), &settings)?;
    }
}
