//! The checks every conversion's output must pass, shared by the corpus tests of each input
//! format.

use std::fs;
use std::path::Path;

use kanata_pp::{convert, Destination, Options, Report};

use crate::{canonical, load, View};

/// Converts `input` with `options` into `dir/out.kanata`, expecting `format` to be detected,
/// and checks what holds for every output kanata-pp writes: the canonical form, zero Konata
/// warnings, and a second conversion (as Kanata) that changes nothing. Returns the report, the
/// output's bytes and what Konata draws for them.
#[track_caller]
pub fn convert_checked(
    input: &Path,
    mut options: Options,
    dir: &Path,
    format: &str,
) -> (Report, Vec<u8>, View) {
    let out = dir.join("out.kanata");
    options.destination = Destination::Path(out.clone());
    let report = match convert(input, &options) {
        Ok(report) => report,
        Err(err) => panic!("{}: conversion failed: {err}", input.display()),
    };
    assert_eq!(report.format.name(), format, "{}", input.display());
    let output = fs::read(&out).expect("the output exists");
    if let Err(violations) = canonical::check(&output) {
        panic!(
            "{}: output not canonical: {:?}",
            input.display(),
            &violations[..violations.len().min(10)]
        );
    }
    let view = load(&output);
    assert!(
        view.warnings.is_empty(),
        "{}: Konata warns: {:?}",
        input.display(),
        &view.warnings[..view.warnings.len().min(10)]
    );
    let again = dir.join("again.kanata");
    let report_again = convert(&out, &Options::new(Destination::Path(again.clone())))
        .expect("the output converts again");
    assert_eq!(report_again.diagnostics.total(), 0, "{}", input.display());
    assert!(
        fs::read(&again).expect("the second output exists") == output,
        "{}: converting the output again changed it",
        input.display()
    );
    (report, output, view)
}
