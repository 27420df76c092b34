//! The entry point of the fuzz target `erofs` in `fuzz/` (run with `cargo
//! +nightly fuzz`), also called by the stable smoke test that replays the
//! committed corpus (`tests/fuzz_corpus.rs`). It takes arbitrary bytes
//! and must return without panicking, aborting, hanging or allocating
//! without bound, whatever they hold.

use std::io::Write;
use std::path::Path;

use crate::erofs::Reader;

/// The EROFS reader on `data`: from memory (the root, then every object
/// reference, which walks the whole tree), then from a file (a memfd,
/// read with `pread` as `store fsck`, `gc` and `image mount` read images).
pub fn erofs(data: &[u8]) {
    if let Ok(r) = Reader::new(data) {
        let _ = r.root();
        let _ = r.objects();
    }
    let Ok(fd) = rustix::fs::memfd_create("cowkit-fuzz", rustix::fs::MemfdFlags::CLOEXEC) else {
        return;
    };
    let mut file = std::fs::File::from(fd);
    if file.write_all(data).is_err() {
        return;
    }
    if let Ok(r) = Reader::from_file(file, Path::new("fuzz.erofs")) {
        let _ = r.walk();
    }
}
