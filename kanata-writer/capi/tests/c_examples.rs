//! The C and C++ sides, built with the system's compilers against the libraries cargo built
//! for this very test run, then run:
//!
//! - `examples/example.c` and `examples/example.cpp` must write `examples/example.kanata`
//!   byte for byte (to stdout, to a file, and compressed), and that trace must be canonical
//!   and load in Konata without a warning;
//! - `tests/c/api_test.c` and `tests/cpp/wrapper_test.cpp` check the API from C and C++.
//!
//! The package's library has the `rlib` crate type, so cargo builds it (with its `staticlib`
//! and `cdylib` outputs, into the same `deps` folder as this test) before it builds any
//! integration test: the archive linked here is always the one of the current sources. Each
//! test skips, with a note, when `gcc`/`g++` (or `$CC`/`$CXX`) cannot be run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The folder of the capi crate.
fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The folder with this run's `libkanata_writer.a` and `.so`: `target/<profile>/deps`, where
/// this test executable is, or `target/<profile>` as a fallback.
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let deps = exe.parent().expect("the test executable's folder");
    for dir in [deps, deps.parent().unwrap_or(deps)] {
        if dir.join("libkanata_writer.a").is_file() {
            return dir.to_path_buf();
        }
    }
    panic!(
        "libkanata_writer.a is neither in {} nor beside it: cargo builds it with this test \
         because the library has the rlib, staticlib and cdylib crate types",
        deps.display()
    );
}

/// The C or C++ compiler, or `None` (with a note) when there is none to run.
fn compiler(var: &str, default: &str) -> Option<String> {
    let cc = std::env::var(var).unwrap_or_else(|_| default.to_string());
    match Command::new(&cc).arg("--version").output() {
        Ok(out) if out.status.success() => Some(cc),
        _ => {
            eprintln!("note: skipping: no C/C++ compiler `{cc}` (set {var} to use another)");
            None
        }
    }
}

/// The system libraries the Rust standard library needs on Linux (the README's link line;
/// `rustc --print native-static-libs` lists more, which glibc 2.34 and later fold into libc).
const SYSTEM_LIBS: &[&str] = &["-lpthread", "-ldl", "-lm"];

/// Compiles and links `source` against the static library into `out`.
fn build(cc: &str, std: &str, source: &Path, out: &Path) {
    let lib = lib_dir().join("libkanata_writer.a");
    let result = Command::new(cc)
        .arg(std)
        .args(["-Wall", "-Wextra", "-Wpedantic", "-Werror", "-O1", "-I"])
        .arg(crate_dir().join("include"))
        .arg(source)
        .arg(&lib)
        .args(SYSTEM_LIBS)
        .arg("-o")
        .arg(out)
        .output()
        .expect("run the compiler");
    assert_success(&format!("{cc} {}", source.display()), &result);
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

fn run(exe: &Path, args: &[&Path]) -> Vec<u8> {
    let out = Command::new(exe)
        .args(args)
        .output()
        .expect("run the example");
    assert_success(&exe.display().to_string(), &out);
    out.stdout
}

fn golden() -> Vec<u8> {
    std::fs::read(crate_dir().join("examples/example.kanata")).expect("examples/example.kanata")
}

fn assert_golden(what: &str, got: &[u8]) {
    let expected = golden();
    if got != expected {
        panic!(
            "{what} is not examples/example.kanata:\n--- got\n{}\n--- expected\n{}",
            String::from_utf8_lossy(got),
            String::from_utf8_lossy(&expected)
        );
    }
}

/// Builds an example and checks every way it writes the trace.
fn example_writes_the_golden_trace(cc: &str, std: &str, source: &str) {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("example");
    build(cc, std, &crate_dir().join(source), &exe);
    assert_golden(&format!("{source} to stdout"), &run(&exe, &[]));
    let plain = dir.path().join("trace.kanata");
    run(&exe, &[&plain]);
    assert_golden(
        &format!("{source} to a file"),
        &std::fs::read(&plain).unwrap(),
    );
    let zst = dir.path().join("trace.kanata.zst");
    run(&exe, &[&zst]);
    let raw = std::fs::read(&zst).unwrap();
    assert_eq!(
        &raw[..4],
        &[0x28, 0xb5, 0x2f, 0xfd],
        "zstd from the extension"
    );
    let text = kanata_tests::decompress(&raw).unwrap();
    assert_golden(&format!("{source} to a .zst file"), &text);
}

#[test]
fn the_golden_trace_is_canonical_and_konata_loads_it_cleanly() {
    let text = golden();
    let stats = kanata_tests::canonical::check(&text)
        .unwrap_or_else(|violations| panic!("not canonical: {violations:?}"));
    assert_eq!(stats.instructions, 4);
    let view = kanata_tests::load(&text);
    assert!(view.warnings.is_empty(), "{:?}", view.warnings);
    assert_eq!(view.arrows.len(), 2, "the two wake-up arrows are drawn");
}

#[test]
fn c_example() {
    if let Some(cc) = compiler("CC", "gcc") {
        example_writes_the_golden_trace(&cc, "-std=c99", "examples/example.c");
    }
}

#[test]
fn cpp_example() {
    if let Some(cxx) = compiler("CXX", "g++") {
        example_writes_the_golden_trace(&cxx, "-std=c++17", "examples/example.cpp");
    }
}

/// Builds and runs a test program that prints `N passed, 0 failed`.
fn test_program(cc: &str, std: &str, source: &str) {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("test");
    build(cc, std, &crate_dir().join(source), &exe);
    let stdout = String::from_utf8(run(&exe, &[])).unwrap();
    assert!(stdout.trim_end().ends_with(" passed, 0 failed"), "{stdout}");
}

#[test]
fn c_api_test() {
    if let Some(cc) = compiler("CC", "gcc") {
        test_program(&cc, "-std=c99", "tests/c/api_test.c");
    }
}

#[test]
fn cpp_wrapper_test() {
    if let Some(cxx) = compiler("CXX", "g++") {
        test_program(&cxx, "-std=c++17", "tests/cpp/wrapper_test.cpp");
    }
}

#[test]
fn shared_library() {
    let Some(cc) = compiler("CC", "gcc") else {
        return;
    };
    let lib = lib_dir();
    if !lib.join("libkanata_writer.so").is_file() {
        eprintln!(
            "note: skipping: no libkanata_writer.so in {}",
            lib.display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("test");
    let result = Command::new(&cc)
        .args(["-std=c99", "-Wall", "-Werror", "-I"])
        .arg(crate_dir().join("include"))
        .arg(crate_dir().join("tests/c/api_test.c"))
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lkanata_writer", "-o"])
        .arg(&exe)
        .output()
        .expect("run the compiler");
    assert_success("linking against libkanata_writer.so", &result);
    let stdout = String::from_utf8(run(&exe, &[])).unwrap();
    assert!(stdout.trim_end().ends_with(" passed, 0 failed"), "{stdout}");
}
