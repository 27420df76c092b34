//! Fuzz target `cpio`: [`cowkit_archive::fuzzing::cpio`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cowkit_archive::fuzzing::cpio(data));
