//! Fuzz target `rpm_header`: [`cowkit_archive::fuzzing::rpm_header`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cowkit_archive::fuzzing::rpm_header(data));
