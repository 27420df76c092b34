//! Fuzz target `owners`: [`cowkit_install::owners::parse`] of any bytes
//! (the root's files are read as text, lossily).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = cowkit_install::owners::parse(&String::from_utf8_lossy(data));
});
