//! An interrupted run leaves nothing behind: SIGINT, SIGTERM and SIGHUP sent at random moments
//! to the real binary (one conversion, a batch with two jobs, stdin input, stdout output into
//! a pipe, `--check`, a seekable output, a window) leave no temporary file, every output that
//! existed byte for byte as it was, the conventional exit status and one line on stderr.
//! SIGKILL leaves one temporary file that a later run ignores, and two runs writing the same
//! output leave one of the two outputs whole.
//!
//! The moments are random: `KANATA_SIGNAL_SEED=N` repeats a failing run's (its seed is in the
//! failure message). The signals are sent with the `kill` command.
#![cfg(unix)]

mod common;

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use common::{big_log, BIN};

const SIGNALS: [(&str, i32); 3] = [("INT", 2), ("TERM", 15), ("HUP", 1)];
/// Runs of each scenario per signal.
const ROUNDS: usize = 2;
/// What an output holds before a run that must leave it alone.
const BEFORE: &[u8] = b"an earlier output\n";

/// The inputs, made once for the whole test binary.
struct Fixture {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    /// `big.kanata`, about 20 MB of canonical Kanata.
    big: PathBuf,
    /// Its conversion to `.zst`, run alone.
    reference: Vec<u8>,
    /// How long that conversion took.
    full: Duration,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.kanata");
        let out = dir.path().join("reference.kanata.zst");
        // Signals are sent up to 45 % into the fastest of three runs (a run timed while the
        // machine was busy would let a later, quicker one finish before its signal), and no
        // sooner than 100 ms in: the log grows until a run takes 0.4 s, which an
        // optimised build reaches only with a larger log than a debug one.
        let mut instructions = 220_000;
        let full = loop {
            fs::write(&big, big_log(instructions)).unwrap();
            let mut full = Duration::MAX;
            for _ in 0..3 {
                let start = Instant::now();
                let status = Command::new(BIN)
                    .arg(&big)
                    .arg("-o")
                    .arg(&out)
                    .status()
                    .unwrap();
                full = full.min(start.elapsed());
                assert!(status.success());
            }
            if full >= Duration::from_millis(400) || instructions >= 8 * 220_000 {
                break full;
            }
            instructions *= 2;
        };
        for name in ["a.kanata", "b.kanata", "c.kanata"] {
            fs::hard_link(&big, dir.path().join(name))
                .or_else(|_| fs::copy(&big, dir.path().join(name)).map(drop))
                .unwrap();
        }
        let reference = fs::read(&out).unwrap();
        fs::remove_file(&out).unwrap();
        Fixture {
            dir: dir.path().to_owned(),
            _dir: dir,
            big,
            reference,
            full,
        }
    })
}

/// A small random number generator (xorshift), seeded from `KANATA_SIGNAL_SEED` or the clock.
struct Rng(u64);

impl Rng {
    fn new() -> (Rng, u64) {
        let seed = std::env::var("KANATA_SIGNAL_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap();
                now.as_nanos() as u64 ^ u64::from(std::process::id())
            });
        (Rng(seed | 1), seed)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A moment well inside a conversion: after the handler is installed, long before the
    /// output is renamed into place.
    fn delay(&mut self, full: Duration) -> Duration {
        let low = 100u64;
        let high = (full.as_millis() as u64 * 45 / 100).max(low + 40);
        Duration::from_millis(low + self.next() % (high - low))
    }
}

fn kill(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .expect("the kill command runs");
    assert!(status.success(), "kill -{signal} failed");
}

/// The temporary files kanata-pp left in `dir`.
fn temporaries(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".kanata-pp-") || name.ends_with(".tmp"))
        .collect()
}

/// What an interrupted run ended with.
struct Ended {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: String,
}

/// Starts kanata-pp in `dir` with `args` (stdin from `stdin`, fed by a thread, when given),
/// sends `signal` after `delay` and waits for it to end.
fn interrupt(
    dir: &Path,
    args: &[&str],
    stdin: Option<&Path>,
    signal: &str,
    delay: Duration,
) -> Ended {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kanata-pp starts");
    let feeder = stdin.map(|path| {
        let mut pipe = child.stdin.take().unwrap();
        let mut file = fs::File::open(path).unwrap();
        // Ends with a broken pipe when the process exits.
        thread::spawn(move || {
            let _ = std::io::copy(&mut file, &mut pipe);
        })
    });
    // The pipes are read as the run goes, so that a full pipe never holds it up.
    let mut out = child.stdout.take().unwrap();
    let stdout = thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = out.read_to_end(&mut bytes);
        bytes
    });
    let mut err = child.stderr.take().unwrap();
    let stderr = thread::spawn(move || {
        let mut text = String::new();
        let _ = err.read_to_string(&mut text);
        text
    });
    thread::sleep(delay);
    kill(&child, signal);
    let status = child.wait().unwrap();
    if let Some(feeder) = feeder {
        feeder.join().unwrap();
    }
    Ended {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Runs a scenario `ROUNDS` times with each signal, in a fresh folder each time: `prepare`
/// makes the folder's files, `args` the command line, `check` looks at the outputs after.
fn scenario(
    name: &str,
    prepare: impl Fn(&Path),
    args: impl Fn(&Path) -> Vec<String>,
    stdin: Option<&Path>,
    check: impl Fn(&Path, &Ended, &str),
) {
    let fixture = fixture();
    let (mut rng, seed) = Rng::new();
    for (signal, number) in SIGNALS {
        for round in 0..ROUNDS {
            let dir = tempfile::tempdir().unwrap();
            prepare(dir.path());
            let args = args(dir.path());
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let delay = rng.delay(fixture.full);
            let ended = interrupt(dir.path(), &args, stdin, signal, delay);
            let what = format!(
                "{name}, SIG{signal} after {delay:?} (round {round}, KANATA_SIGNAL_SEED={seed}, \
                 a whole run takes {:?}), stderr:\n{}",
                fixture.full, ended.stderr
            );
            assert_eq!(
                ended.status.code(),
                Some(128 + number),
                "exit status: {what}"
            );
            assert_eq!(
                ended.stderr,
                format!("kanata-pp: interrupted (SIG{signal})\n"),
                "stderr: {what}"
            );
            for folder in walk(dir.path()) {
                assert_eq!(temporaries(&folder), Vec::<String>::new(), "{what}");
            }
            check(dir.path(), &ended, &what);
        }
    }
}

/// `dir` and the folders in it.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut folders = vec![dir.to_owned()];
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            folders.extend(walk(&path));
        }
    }
    folders
}

fn path_arg(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

#[test]
fn one_conversion_to_zst() {
    let big = path_arg(&fixture().big);
    scenario(
        "one conversion",
        |dir| fs::write(dir.join("out.kanata.zst"), BEFORE).unwrap(),
        |_| vec![big.clone(), "-o".into(), "out.kanata.zst".into()],
        None,
        |dir, ended, what| {
            assert_eq!(
                fs::read(dir.join("out.kanata.zst")).unwrap(),
                BEFORE,
                "{what}"
            );
            assert!(ended.stdout.is_empty(), "stdout: {what}");
        },
    );
}

#[test]
fn a_new_output_is_not_made() {
    let big = path_arg(&fixture().big);
    scenario(
        "a seekable output where there was none",
        |_| {},
        |_| {
            vec![
                big.clone(),
                "--seekable".into(),
                "-o".into(),
                "new.kanata.zst".into(),
            ]
        },
        None,
        |dir, _, what| assert!(!dir.join("new.kanata.zst").exists(), "{what}"),
    );
}

#[test]
fn batch_with_two_jobs() {
    let fixture = fixture();
    let inputs: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|name| path_arg(&fixture.dir.join(format!("{name}.kanata"))))
        .collect();
    scenario(
        "a batch, -j 2",
        |dir| {
            fs::create_dir(dir.join("out")).unwrap();
            for name in ["a", "b", "c"] {
                fs::write(dir.join(format!("out/{name}.kanata.zst")), BEFORE).unwrap();
            }
        },
        |_| {
            let mut args = inputs.clone();
            args.extend(["-d", "out", "-j", "2", "--compress", "zstd"].map(String::from));
            args
        },
        None,
        |dir, ended, what| {
            for name in ["a", "b", "c"] {
                let output = fs::read(dir.join(format!("out/{name}.kanata.zst"))).unwrap();
                // A job that ended before the signal has its whole output; no other changed.
                assert!(
                    output == BEFORE || output == fixture.reference,
                    "out/{name}.kanata.zst is neither as it was nor complete: {what}"
                );
            }
            assert!(ended.stdout.is_empty(), "stdout: {what}");
        },
    );
}

#[test]
fn stdin_input() {
    let fixture = fixture();
    scenario(
        "stdin input",
        |dir| fs::write(dir.join("out.kanata.zst"), BEFORE).unwrap(),
        |_| vec!["-".into(), "-o".into(), "out.kanata.zst".into()],
        Some(&fixture.big),
        |dir, _, what| {
            assert_eq!(
                fs::read(dir.join("out.kanata.zst")).unwrap(),
                BEFORE,
                "{what}"
            );
        },
    );
}

#[test]
fn stdout_output_into_a_pipe() {
    let fixture = fixture();
    let big = path_arg(&fixture.big);
    scenario(
        "stdout into a pipe",
        |_| {},
        |_| {
            vec![
                big.clone(),
                "-o".into(),
                "-".into(),
                "--compress".into(),
                "zstd".into(),
            ]
        },
        None,
        |dir, ended, what| {
            // Some of the stream went out, never all of it, and no file was made.
            assert!(ended.stdout.len() < fixture.reference.len(), "{what}");
            assert_eq!(fs::read_dir(dir).unwrap().count(), 0, "{what}");
        },
    );
}

#[test]
fn check_stats_and_a_window_print_no_report() {
    let big = path_arg(&fixture().big);
    scenario(
        "--check --stats --cycles",
        |_| {},
        |_| {
            vec![
                big.clone(),
                "--check".into(),
                "--stats".into(),
                "--cycles".into(),
                "1000..".into(),
            ]
        },
        None,
        |_, ended, what| assert!(ended.stdout.is_empty(), "stdout: {what}"),
    );
}

/// A signal ignored when kanata-pp starts (`nohup`, `trap '' HUP`) stays ignored.
#[test]
fn an_ignored_signal_stays_ignored() {
    let fixture = fixture();
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new("sh")
        .args(["-c", "trap '' HUP; exec \"$0\" \"$1\" -o out.kanata.zst"])
        .arg(BIN)
        .arg(&fixture.big)
        .current_dir(dir.path())
        .spawn()
        .unwrap();
    thread::sleep(fixture.full / 4);
    kill(&child, "HUP");
    assert!(child.wait().unwrap().success());
    assert_eq!(
        fs::read(dir.path().join("out.kanata.zst")).unwrap(),
        fixture.reference
    );
    assert_eq!(temporaries(dir.path()), Vec::<String>::new());
}

/// SIGKILL cannot be caught: it leaves one temporary file and the target as it was, and a
/// later run makes its output whole and leaves that file alone.
#[test]
fn sigkill_leaves_one_temporary_file_that_a_later_run_ignores() {
    let fixture = fixture();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.kanata.zst");
    fs::write(&out, BEFORE).unwrap();
    let child = Command::new(BIN)
        .arg(&fixture.big)
        .arg("-o")
        .arg(&out)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    thread::sleep(fixture.full / 4);
    let mut child = child;
    kill(&child, "KILL");
    child.wait().unwrap();
    let left = temporaries(dir.path());
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(fs::read(&out).unwrap(), BEFORE);
    let status = Command::new(BIN)
        .arg(&fixture.big)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(fs::read(&out).unwrap(), fixture.reference);
    assert_eq!(temporaries(dir.path()), left);
}

/// Two runs writing the same output at once leave one of the two outputs, whole, and no
/// temporary file.
#[test]
fn two_runs_one_output() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.kanata");
    let second = dir.path().join("second.kanata");
    fs::write(&first, big_log(30_000)).unwrap();
    // Another trace: one more instruction.
    fs::write(&second, big_log(30_001)).unwrap();
    let alone = |input: &Path, name: &str| {
        let out = dir.path().join(name);
        let status = Command::new(BIN)
            .arg(input)
            .arg("-o")
            .arg(&out)
            .status()
            .unwrap();
        assert!(status.success());
        fs::read(out).unwrap()
    };
    let expected = [
        alone(&first, "first.kanata.zst"),
        alone(&second, "second.kanata.zst"),
    ];
    assert_ne!(expected[0], expected[1]);
    let out = dir.path().join("out").join("same.kanata.zst");
    fs::create_dir(dir.path().join("out")).unwrap();
    for round in 0..4 {
        let children: Vec<Child> = [&first, &second]
            .iter()
            .map(|input| {
                Command::new(BIN)
                    .arg(input)
                    .arg("-o")
                    .arg(&out)
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut child in children {
            assert!(child.wait().unwrap().success(), "round {round}");
        }
        let output = fs::read(&out).unwrap();
        assert!(
            expected.contains(&output),
            "round {round}: the output is neither run's ({} bytes)",
            output.len()
        );
        assert_eq!(temporaries(&dir.path().join("out")), Vec::<String>::new());
    }
}
