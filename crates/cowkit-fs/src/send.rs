//! `sendfile(2)`: file bytes into a socket without passing through user
//! memory (the socket takes references to the page-cache pages).

use std::os::fd::AsFd;

use rustix::io::Errno;

/// Send up to `count` bytes of `file` from `*offset` into `out` (a socket),
/// advancing `*offset` by what was sent. `Ok(0)` with `count > 0` means
/// the file ends at `*offset`. A non-blocking `out` that is full answers
/// `Errno::AGAIN`; an interrupted call is retried here.
pub fn send_file<Out: AsFd, In: AsFd>(
    out: Out,
    file: In,
    offset: &mut u64,
    count: usize,
) -> rustix::io::Result<usize> {
    loop {
        match rustix::fs::sendfile(&out, &file, Some(offset), count) {
            Err(Errno::INTR) => continue,
            r => return r,
        }
    }
}
