//! Opening an object by name when another host may be replacing it: the
//! one place where a read of an object is tried again.
//!
//! On one local filesystem, a rename over a key is atomic to every reader:
//! an open by name gets the old file or the new one. Gateways of a fleet on
//! a shared filesystem (NFS, GlusterFS) each have their own client, which
//! may still hold the old file's handle when another host has renamed a new
//! file over the name: the server then answers `ESTALE` ("stale file
//! handle") to the open, to a `stat` or to a read, although the name is
//! there and names the new file. On GlusterFS a name being replaced can
//! also be missing for a moment (`ENOENT`) while its record is there.
//!
//! [`reopen`] runs one attempt (open by name, `fstat`, record, and for a
//! GET whose body is read whole, the read) and runs it again from the name
//! when it failed with `ESTALE` (up to [`STALE_TRIES`] attempts), or when
//! the attempt itself says the name was being replaced ([`Try::Again`]: the
//! file and its record disagree, or the file is missing while its record
//! is there; up to [`AGAIN_TRIES`] attempts, then the attempt's own
//! answer). A pause before each new attempt doubles from 1 ms, at most
//! 32 ms. Each attempt starts from the name, so what it answers is one
//! version, whole: the one it opened. An `ESTALE` that lasts through every
//! attempt is not a race; it stays the error it is (500).
//!
//! What is not tried again: a body that is streamed after its response
//! head went out (`body`, `sendfile`) stays on the descriptor it opened; an
//! error there ends the connection (the client sees a short body), never
//! bytes of another version.

use std::time::Duration;

use rustix::io::Errno;

use crate::error::{Error, Result};

/// Attempts in all while they fail with `ESTALE`.
pub const STALE_TRIES: u32 = 8;

/// Attempts in all while they answer [`Try::Again`].
pub const AGAIN_TRIES: u32 = 4;

/// What one attempt found.
#[derive(Debug)]
pub(crate) enum Try<T> {
    /// The answer.
    Done(T),
    /// The name was being replaced while it was read (the file and its
    /// record disagree, or the file is missing while its record is
    /// there): try again from the name; when no attempt is left, this is
    /// the answer.
    Again(Result<T>),
}

/// Whether `e` is a stale file handle (`ESTALE`).
pub(crate) fn is_stale(e: &Error) -> bool {
    match e {
        Error::Fs(fe) => cowkit_fs::error::errno_of(fe) == Some(Errno::STALE),
        _ => false,
    }
}

/// The pause before attempt `n` (the second is `n = 1`).
fn pause(n: u32) -> Duration {
    Duration::from_millis(1 << (n - 1).min(5))
}

/// Run `attempt` until it answers, as the module says; `what` names the
/// object in the log. Blocks (the pauses): call it on a blocking thread.
pub(crate) fn reopen<T>(
    what: impl Fn() -> String,
    mut attempt: impl FnMut() -> Result<Try<T>>,
) -> Result<T> {
    let (mut stale, mut again) = (0, 0);
    loop {
        match attempt() {
            Ok(Try::Done(t)) => return Ok(t),
            Ok(Try::Again(r)) => {
                again += 1;
                if again >= AGAIN_TRIES {
                    return r;
                }
            }
            Err(e) if is_stale(&e) => {
                stale += 1;
                if stale >= STALE_TRIES {
                    log::warn!(
                        "{}: still a stale file handle after {stale} opens by name",
                        what()
                    );
                    return Err(e);
                }
                log::info!("{}: {e}; opening it again by name", what());
            }
            Err(e) => return Err(e),
        }
        std::thread::sleep(pause(stale + again));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn estale() -> Error {
        crate::error::io("open", "/b/k", Errno::STALE)
    }

    #[test]
    fn estale_is_tried_again_then_answered() {
        let n = Cell::new(0);
        let r = reopen(String::new, || {
            n.set(n.get() + 1);
            if n.get() < 3 {
                Err(estale())
            } else {
                Ok(Try::Done(n.get()))
            }
        });
        assert_eq!(r.unwrap(), 3);
    }

    #[test]
    fn a_lasting_estale_is_bounded_and_stays_the_error() {
        let n = Cell::new(0);
        let r: Result<()> = reopen(String::new, || {
            n.set(n.get() + 1);
            Err(estale())
        });
        assert!(is_stale(&r.unwrap_err()));
        assert_eq!(n.get(), STALE_TRIES);
    }

    #[test]
    fn other_errors_are_answered_at_once() {
        let n = Cell::new(0);
        let r: Result<()> = reopen(String::new, || {
            n.set(n.get() + 1);
            Err(crate::error::io("open", "/b/k", Errno::IO))
        });
        assert!(!is_stale(&r.unwrap_err()));
        assert_eq!(n.get(), 1);
    }

    #[test]
    fn again_is_bounded_and_its_last_answer_stands() {
        let n = Cell::new(0);
        let r = reopen(String::new, || {
            n.set(n.get() + 1);
            Ok(Try::Again(Ok(n.get())))
        });
        assert_eq!(r.unwrap(), AGAIN_TRIES);
    }

    #[test]
    fn pauses_grow_and_are_capped() {
        assert_eq!(pause(1), Duration::from_millis(1));
        assert_eq!(pause(2), Duration::from_millis(2));
        assert_eq!(pause(6), Duration::from_millis(32));
        assert_eq!(pause(40), Duration::from_millis(32));
        let all: Duration = (1..STALE_TRIES + AGAIN_TRIES).map(pause).sum();
        assert!(all < Duration::from_millis(400), "{all:?}");
    }
}
