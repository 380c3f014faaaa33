//! What the command-line tests share: running the real binary, and a large canonical log.
// Each test file uses some of these.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_kanata-pp");

/// What one run of the binary did.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
    #[track_caller]
    pub fn assert_code(&self, code: i32) -> &Run {
        assert_eq!(self.code, Some(code), "exit code; stderr:\n{}", self.stderr);
        self
    }
}

/// Runs kanata-pp in `dir` with `args`, feeding `stdin` (nothing when `None`).
pub fn run_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Run {
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
    // Feed stdin from another thread, so that a large output cannot dead-lock the pipes.
    let feeder = stdin.map(|bytes| {
        let bytes = bytes.to_vec();
        let mut pipe = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        })
    });
    let output = child.wait_with_output().expect("kanata-pp runs");
    if let Some(feeder) = feeder {
        feeder.join().unwrap();
    }
    Run {
        code: output.status.code(),
        stdout: output.stdout,
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

/// A canonical trace of `n` instructions (about 90 bytes each), large enough to span many
/// output buffers and pipe buffers.
pub fn big_log(n: usize) -> Vec<u8> {
    let mut text = String::from("Kanata\t0004\nC=\t0\n");
    for i in 0..n {
        text.push_str(&format!(
            "I\t{i}\t{i}\t0\nL\t{i}\t0\t0x{:x}: addi x1, x1, 1\nS\t{i}\t0\tF\nC\t1\nE\t{i}\t0\tF\nR\t{i}\t{i}\t0\n",
            0x1000 + 4 * i
        ));
    }
    text.into_bytes()
}
