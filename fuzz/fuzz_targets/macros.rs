//! Fuzz target `macros`: [`cowkit_rpmdb::fuzzing::macros`] of any bytes
//! (a root's rpm macro file, read lossily): every plain definition is
//! expanded within the expander's bounds; an expansion past
//! `MAX_RESULT` bytes is a crash, as is running out of memory or time.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    cowkit_rpmdb::fuzzing::macros(data);
});
