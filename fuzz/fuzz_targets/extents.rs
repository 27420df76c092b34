//! Fuzz target `extents`: [`cowkit_extents::fuzzing::extents`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cowkit_extents::fuzzing::extents(data));
