//! `--verify`: re-hash installed regular files against the header.
//!
//! From an extents file, each file is hashed in its unnamed temporary,
//! before it gets its name ([`check_new`]): a file that does not match
//! its header digest is never named, and the install fails. From an
//! `.rpm`, the payload reader has already checked each file as it
//! streamed past; `--verify` then re-reads what was installed
//! ([`verify`]).

use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use cowkit_archive::files::{DigestAlgo, FileInfo, FileList, Kind};
use cowkit_fs::IoError;

use crate::target::{Place, Target};
use crate::{Error, Result};

/// Re-hash every installed regular file; returns how many were checked.
pub(crate) fn verify(
    target: &Target<'_>,
    files: &FileList,
    places: &[Option<Place>],
) -> Result<u64> {
    let mut bad = Vec::new();
    let mut checked = 0;
    let mut buf = vec![0u8; 256 * 1024];
    for (f, p) in files.files.iter().zip(places) {
        let Some(p) = p else { continue };
        if f.kind != Kind::Regular {
            continue;
        }
        let path = target.display(p);
        let fd = target.root.open_read(&p.rel)?;
        let mut file = std::fs::File::from(fd);
        let mut h = files.algo.hasher();
        let mut size = 0u64;
        loop {
            let n = file
                .read(&mut buf)
                .map_err(|source| Error::from(IoError::new("read", path.clone(), source)))?;
            if n == 0 {
                break;
            }
            size += n as u64;
            h.update(&buf[..n]);
        }
        let ok = match &f.digest {
            Some(d) => h.finish() == *d,
            None => size == 0,
        };
        if !ok || size != f.size {
            bad.push(path);
        }
        checked += 1;
    }
    match bad.first() {
        None => Ok(checked),
        Some(first) => Err(Error::VerifyFailed {
            count: bad.len(),
            first: first.clone(),
        }),
    }
}

/// Hash the new file `file` (shown as `path`), not yet named, against
/// `f`'s header digest and size.
pub(crate) fn check_new(
    file: &std::fs::File,
    path: &Path,
    f: &FileInfo,
    algo: DigestAlgo,
) -> Result<()> {
    let mut h = algo.hasher();
    let mut buf = vec![0u8; (256 * 1024).min(f.size as usize).max(1)];
    let mut at = 0u64;
    loop {
        let n = file
            .read_at(&mut buf, at)
            .map_err(|source| Error::from(IoError::new("read", path.to_path_buf(), source)))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        at += n as u64;
    }
    let ok = match &f.digest {
        Some(d) => at == f.size && h.finish() == *d,
        None => at == 0 && f.size == 0,
    };
    if ok {
        Ok(())
    } else {
        Err(Error::DigestMismatch {
            path: path.to_path_buf(),
        })
    }
}
