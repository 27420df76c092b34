//! The digest cache: fingerprints of source files are computed once.
//!
//! `STORE/digests` records, for each file the store has hashed, the key
//! `(device, inode, size, mtime, ctime)` (times in ns) and the SHA-256 of
//! its content. A later import of a file whose `fstat` gives the same key
//! takes the digest from here and reads nothing if the store has the
//! object. Writing the content changes mtime and ctime; `touch -m` back
//! to an old mtime still changes ctime, which no user call can set; a
//! file replaced by another gets a new inode or a new ctime.
//!
//! Why in the store and not as an xattr on the source: setting an xattr
//! changes the file's ctime, so a record keyed by ctime could never match
//! its own file, and sources may be read-only, shared, or watched by
//! backups that would see every file change.
//!
//! A file whose ctime is within 2 s of the moment its hashing began is
//! not recorded: on a kernel with coarse timestamps a write in the same
//! tick could leave the key unchanged (git's "racily clean" problem).
//!
//! Records are 96 bytes, appended with one `write` on an `O_APPEND` file
//! (so concurrent importers do not interleave), each closed by 16 bytes
//! of its own SHA-256: a torn or damaged record is skipped, never
//! trusted. [`crate::Store::gc`] rewrites the file with the latest record
//! of each key whose object still exists.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use cowkit_fs::IoError;
use sha2::{Digest, Sha256};

use crate::Result;

const RECORD: usize = 96;
const BODY: usize = 80;

/// What identifies one version of a source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, u32),
    ctime: (i64, u32),
}

impl Key {
    /// The key of a file from its `fstat`.
    pub fn of(st: &rustix::fs::Stat) -> Key {
        Key {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size as u64,
            mtime: (st.st_mtime, st.st_mtime_nsec as u32),
            ctime: (st.st_ctime, st.st_ctime_nsec as u32),
        }
    }

    /// Whether the file changed less than 2 s before `since` (seconds
    /// since the epoch): too recent to record.
    pub fn is_racy(&self, since: i64) -> bool {
        self.ctime.0 + 2 > since
    }

    fn encode(&self, digest: &[u8; 32]) -> [u8; RECORD] {
        let mut r = [0u8; RECORD];
        r[0..8].copy_from_slice(&self.dev.to_le_bytes());
        r[8..16].copy_from_slice(&self.ino.to_le_bytes());
        r[16..24].copy_from_slice(&self.size.to_le_bytes());
        r[24..32].copy_from_slice(&self.mtime.0.to_le_bytes());
        r[32..36].copy_from_slice(&self.mtime.1.to_le_bytes());
        r[36..44].copy_from_slice(&self.ctime.0.to_le_bytes());
        r[44..48].copy_from_slice(&self.ctime.1.to_le_bytes());
        r[48..BODY].copy_from_slice(digest);
        let check = Sha256::digest(&r[..BODY]);
        r[BODY..].copy_from_slice(&check[..RECORD - BODY]);
        r
    }

    fn decode(r: &[u8]) -> Option<(Key, [u8; 32])> {
        let check = Sha256::digest(&r[..BODY]);
        if r[BODY..RECORD] != check[..RECORD - BODY] {
            return None;
        }
        let u64_at = |i: usize| u64::from_le_bytes(r[i..i + 8].try_into().expect("8"));
        let u32_at = |i: usize| u32::from_le_bytes(r[i..i + 4].try_into().expect("4"));
        Some((
            Key {
                dev: u64_at(0),
                ino: u64_at(8),
                size: u64_at(16),
                mtime: (u64_at(24) as i64, u32_at(32)),
                ctime: (u64_at(36) as i64, u32_at(44)),
            },
            r[48..BODY].try_into().expect("32"),
        ))
    }
}

/// The cache of one store.
#[derive(Debug)]
pub struct Cache {
    path: PathBuf,
    map: Mutex<Option<HashMap<Key, [u8; 32]>>>,
}

impl Cache {
    /// The cache kept at `path` (read on first use).
    pub fn new(path: &Path) -> Cache {
        Cache {
            path: path.to_path_buf(),
            map: Mutex::new(None),
        }
    }

    fn load(path: &Path) -> Result<HashMap<Key, [u8; 32]>> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(IoError::new("read", path.to_path_buf(), e).into()),
        };
        // Past a damaged or torn record, find the next good one byte by
        // byte (a 128-bit check makes a false match out of the question).
        let mut map = HashMap::new();
        let mut i = 0;
        while i + RECORD <= bytes.len() {
            match Key::decode(&bytes[i..i + RECORD]) {
                Some((k, d)) => {
                    map.insert(k, d);
                    i += RECORD;
                }
                None => i += 1,
            }
        }
        Ok(map)
    }

    /// The recorded digest of `key`.
    pub fn get(&self, key: &Key) -> Result<Option<[u8; 32]>> {
        let mut m = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if m.is_none() {
            *m = Some(Self::load(&self.path)?);
        }
        Ok(m.as_ref().and_then(|m| m.get(key).copied()))
    }

    /// Record `digest` for `key`.
    pub fn put(&self, key: Key, digest: [u8; 32]) -> Result<()> {
        let rec = key.encode(&digest);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o644)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&self.path)
            .map_err(|e| IoError::new("open", self.path.clone(), e))?;
        f.write_all(&rec)
            .map_err(|e| IoError::new("append to", self.path.clone(), e))?;
        let mut m = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = m.as_mut() {
            m.insert(key, digest);
        }
        Ok(())
    }

    /// Rewrite the cache with the latest record of each key whose digest
    /// `keep` accepts (the store is held exclusively). Returns the records
    /// kept.
    pub fn compact(&self, dir: &Path, keep: impl Fn(&[u8; 32]) -> bool) -> Result<u64> {
        let map = Self::load(&self.path)?;
        let mut out = Vec::with_capacity(map.len() * RECORD);
        let mut n = 0;
        for (k, d) in &map {
            if keep(d) {
                out.extend_from_slice(&k.encode(d));
                n += 1;
            }
        }
        let dir_fd = cowkit_fs::dir::open_dir(rustix::fs::CWD, dir, dir)?;
        let mut new =
            cowkit_fs::dir::NewFile::anonymous(std::os::fd::AsFd::as_fd(&dir_fd), dir, 0o644)?;
        new.write_all(&out)?;
        let name = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("digests");
        let _: File = new.commit(std::os::fd::AsFd::as_fd(&dir_fd), name, &self.path)?;
        *self.map.lock().unwrap_or_else(|e| e.into_inner()) = None;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ino: u64) -> Key {
        Key {
            dev: 7,
            ino,
            size: 3,
            mtime: (1, 2),
            ctime: (3, 4),
        }
    }

    #[test]
    fn records_round_trip_and_damage_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("digests");
        let c = Cache::new(&path);
        assert_eq!(c.get(&key(1)).unwrap(), None);
        c.put(key(1), [1; 32]).unwrap();
        c.put(key(2), [2; 32]).unwrap();
        c.put(key(1), [3; 32]).unwrap();
        let fresh = Cache::new(&path);
        assert_eq!(fresh.get(&key(1)).unwrap(), Some([3; 32]), "latest wins");
        assert_eq!(fresh.get(&key(2)).unwrap(), Some([2; 32]));
        // Flip a digest byte of the second record: it is not trusted.
        let mut b = std::fs::read(&path).unwrap();
        b[RECORD + 50] ^= 1;
        b.extend_from_slice(&[9; 40]); // a torn tail
        std::fs::write(&path, &b).unwrap();
        // Records appended after the torn one are found again.
        Cache::new(&path).put(key(4), [4; 32]).unwrap();
        let damaged = Cache::new(&path);
        assert_eq!(damaged.get(&key(4)).unwrap(), Some([4; 32]));
        assert_eq!(damaged.get(&key(2)).unwrap(), None);
        assert_eq!(damaged.get(&key(1)).unwrap(), Some([3; 32]));
        // Compaction keeps what is asked for, once per key.
        assert_eq!(damaged.compact(dir.path(), |d| d[0] == 3).unwrap(), 1);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), RECORD as u64);
        assert_eq!(Cache::new(&path).get(&key(1)).unwrap(), Some([3; 32]));
    }
}
