//! Fuzz target `payload`: [`cowkit_archive::fuzzing::payload`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cowkit_archive::fuzzing::payload(data));
