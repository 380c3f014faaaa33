//! The gem5 O3PipeView reader (format forced to gem5), with the clean-ups and `strict` from the first byte.
#![no_main]

use kanata_pp::Format;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kanata_fuzz::check_conversion(data, Format::Gem5));
