//! Fuzz target `s3_request`: [`cowkit_s3::fuzzing::request`], one HTTP
//! request through the gateway's whole request path.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = cowkit_s3::fuzzing::request(data);
});
