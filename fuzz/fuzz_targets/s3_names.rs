//! Fuzz target `s3_names`: [`cowkit_s3::fuzzing::names`], bucket and key
//! validation of any string.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cowkit_s3::fuzzing::names(data));
