//! Fuzz target `s3_chunked`: [`cowkit_s3::fuzzing::chunked`], the
//! aws-chunked framing watch, whole and cut into frames.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cowkit_s3::fuzzing::chunked(data));
