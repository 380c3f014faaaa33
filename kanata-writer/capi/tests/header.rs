//! The committed header, `include/kanata_writer.h`, is what cbindgen makes of `src/lib.rs`
//! with `cbindgen.toml`: this test fails when it is out of date.
//!
//! To regenerate it: `KW_UPDATE_HEADER=1 cargo test -p kanata-writer-capi --test header`.

use std::path::Path;

#[test]
fn committed_header_is_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen generates the header");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let path = dir.join("include/kanata_writer.h");
    if std::env::var_os("KW_UPDATE_HEADER").is_some() {
        std::fs::write(&path, &generated).expect("write the header");
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    if committed != generated {
        let committed = String::from_utf8_lossy(&committed);
        let generated = String::from_utf8_lossy(&generated);
        let first = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(committed.lines().count().min(generated.lines().count()));
        panic!(
            "include/kanata_writer.h is out of date (first difference at line {}): regenerate it \
             with `KW_UPDATE_HEADER=1 cargo test -p kanata-writer-capi --test header` and commit \
             it.\n--- committed\n{}\n--- generated\n{}",
            first + 1,
            committed
                .lines()
                .skip(first)
                .take(5)
                .collect::<Vec<_>>()
                .join("\n"),
            generated
                .lines()
                .skip(first)
                .take(5)
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
}
