//! Fuzz target `erofs`: [`cowkit_store::fuzzing::erofs`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cowkit_store::fuzzing::erofs(data));
