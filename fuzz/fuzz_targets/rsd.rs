//! The RSD raw-log reader (format forced to rsd), with the clean-ups and `strict` from the first byte.
#![no_main]

use kanata_pp::Format;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kanata_fuzz::check_conversion(data, Format::Rsd));
