//! `--verify`: re-hash installed regular files against the header.

use std::io::Read;

use cowkit_archive::files::{FileList, Kind};
use cowkit_fs::IoError;

use crate::tree::{Place, Target};
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
