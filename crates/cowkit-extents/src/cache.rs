//! A cache of extents files, shared by builds: one file per package,
//! named by the SHA-256 of its main header (rpm's `%{SHA256HEADER}`,
//! verified against the signature header when the package is read), so a
//! package downloaded again under another name, or by another build, is
//! found without transcoding.
//!
//! Layout: `DIR/rpme/<first two hex digits>/<digest>.rpme`. Entries are
//! written by the transcoder's atomic commit (complete or absent, never
//! half-written, under concurrent writers of the same package: the same
//! content either way). An entry is only used after
//! [`crate::open::ExtentsFile::open`] checked it and its header digest is
//! the name it is stored under; a damaged entry is reported and can be
//! replaced.

use std::path::{Path, PathBuf};

use crate::open::ExtentsFile;
use crate::Error;

/// A cache directory.
#[derive(Clone, Debug)]
pub struct Cache {
    dir: PathBuf,
}

/// What a lookup found.
#[derive(Debug)]
pub enum Lookup {
    /// A checked entry.
    Hit(PathBuf),
    /// No entry.
    Miss(PathBuf),
    /// An entry that fails its checks (the path, and why): transcode again
    /// over it.
    Damaged(PathBuf, Error),
}

impl Cache {
    /// The cache at `dir` (created on first store).
    pub fn new(dir: &Path) -> Cache {
        Cache {
            dir: dir.to_path_buf(),
        }
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the entry for the header digest `digest` (lower-case hex)
    /// lives; its parent directory is created.
    pub fn path_for(&self, digest: &str) -> std::io::Result<PathBuf> {
        if digest.len() < 3 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("`{digest}` is not a hex digest"),
            ));
        }
        let dir = self.dir.join("rpme").join(&digest[..2]);
        std::fs::create_dir_all(&dir)?;
        Ok(dir.join(format!("{digest}.rpme")))
    }

    /// The entry for `digest`, checked.
    pub fn lookup(&self, digest: &str) -> std::io::Result<Lookup> {
        let path = self.path_for(digest)?;
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lookup::Miss(path)),
            Err(e) => return Err(e),
        };
        Ok(match ExtentsFile::open(file, &path) {
            Ok(x) if x.package().header_digest() == digest => Lookup::Hit(path),
            Ok(x) => {
                let found = x.package().header_digest().to_string();
                Lookup::Damaged(
                    path,
                    Error::Corrupt(format!(
                        "it holds the package with header digest {found}, not {digest}"
                    )),
                )
            }
            Err(e) => Lookup::Damaged(path, e),
        })
    }
}
